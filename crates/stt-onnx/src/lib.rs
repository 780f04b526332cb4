//! ONNX Runtime, loaded once per process for every model stt runs in it (the text embedder
//! in `stt-embed`, the voice embedder in `stt-speaker`): `ort` loads one library per process
//! and refuses a second environment, so every model shares the first, whichever crate made
//! it. The one stt crate the engines may import: the process has one runtime, so one place
//! holds it.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ort::environment::Environment;
use thiserror::Error;

/// The ONNX Runtime library `scripts/fetch-models` installs in the models directory.
pub const RUNTIME_FILE: &str = "libonnxruntime.so.1.31.1";

/// The ONNX Runtime library to load: `$ORT_DYLIB_PATH` when set (the variable `ort` itself
/// reads, for a library installed elsewhere), else `<models_dir>/libonnxruntime.so.1.31.1`.
pub fn runtime_library(models_dir: &Path) -> PathBuf {
    match std::env::var_os("ORT_DYLIB_PATH").filter(|p| !p.is_empty()) {
        Some(path) => PathBuf::from(path),
        None => models_dir.join(RUNTIME_FILE),
    }
}

/// Why ONNX Runtime could not be had, with the path at fault and the fix.
#[derive(Debug, Error)]
pub enum RuntimeError {
    /// The library is not there.
    #[error(
        "no ONNX Runtime library at '{path}': run scripts/fetch-models (or set ORT_DYLIB_PATH to \
         a libonnxruntime.so of 1.24 or newer)"
    )]
    Missing { path: PathBuf },
    /// The library is older than the ONNX Runtime API stt is built for.
    #[error(
        "ONNX Runtime at '{path}' is version {version}, older than the 1.24 stt needs: run \
         scripts/fetch-models (it installs 1.31.1), or point ORT_DYLIB_PATH at a newer library"
    )]
    TooOld { path: PathBuf, version: String },
    /// The library is there but cannot be loaded (not a library, wrong architecture, not
    /// ONNX Runtime), or the runtime cannot start.
    #[error(
        "cannot load ONNX Runtime from '{path}': {message}: run scripts/fetch-models --force, or \
         point ORT_DYLIB_PATH at a libonnxruntime.so of 1.24 or newer"
    )]
    Load { path: PathBuf, message: String },
}

/// The process's environment; `None` until a load succeeds, so a failed load (a missing
/// library, say) can be retried.
static ENVIRONMENT: Mutex<Option<Environment>> = Mutex::new(None);

/// Whether the library at `runtime` is there (a bare file name is left to the dynamic
/// loader's search): checked before anything slower, so that a wrong path is named first.
pub fn check(runtime: &Path) -> Result<(), RuntimeError> {
    let bare = runtime.parent().is_none_or(|p| p.as_os_str().is_empty());
    if bare || runtime.is_file() {
        Ok(())
    } else {
        Err(RuntimeError::Missing { path: runtime.to_owned() })
    }
}

/// The process's ONNX Runtime environment, loading the library from `runtime` the first time
/// (a later call with another path gets the library loaded first). A path that is not there
/// is refused even then ([`check`]), so that a wrong path is noticed whichever load comes
/// first.
pub fn environment(runtime: &Path) -> Result<Environment, RuntimeError> {
    check(runtime)?;
    let mut slot = ENVIRONMENT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(environment) = slot.as_ref() {
        return Ok(environment.clone());
    }
    let builder = ort::init_from(runtime).map_err(|e| match e {
        ort::LoadDynamicError::BadVersion { version_str, path } => {
            RuntimeError::TooOld { path, version: version_str }
        }
        other => RuntimeError::Load { path: runtime.to_owned(), message: other.to_string() },
    })?;
    let environment = builder
        .with_name("stt")
        .with_telemetry(false)
        .build()
        .map_err(|e| RuntimeError::Load { path: runtime.to_owned(), message: e.to_string() })?;
    *slot = Some(environment.clone());
    Ok(environment)
}
