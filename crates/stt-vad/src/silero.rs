//! [`Silero`]: the Silero VAD network (v5/v6 ONNX) run by ONNX Runtime through `ort`.
//!
//! ONNX Runtime is a shared library loaded when the first classifier is made, from a path
//! (`scripts/fetch-models` installs `libonnxruntime.so.<version>` next to `silero_vad.onnx`);
//! nothing of it is linked at build time. The model runs exactly as Silero's own `OnnxWrapper`
//! runs it: 512-sample frames at 16 kHz, each with the last 64 samples of the previous frame
//! prepended, the recurrent state carried from frame to frame.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use ort::environment::Environment;
use ort::session::Session;
use ort::value::TensorRef;

use crate::silero_rs::Window;
use crate::{SAMPLE_RATE, SpeechProb, VadError};

/// The variable that names the ONNX Runtime library; it wins over any configured path (as it
/// does for `ort` itself).
pub const RUNTIME_ENV: &str = "ORT_DYLIB_PATH";

/// The file name prefix of the ONNX Runtime library looked for next to the model.
const RUNTIME_PREFIX: &str = "libonnxruntime.so";

/// The Silero VAD: a small convolutional + LSTM network, 32 ms frames, about 0.1 ms of CPU per
/// frame on one thread.
pub struct Silero {
    session: Session,
    window: Window,
    /// The LSTM state, `[2, 1, 128]`, carried from frame to frame.
    state: Vec<f32>,
    /// Whether the last frame failed to run (so a persistent failure is logged once).
    failing: bool,
}

impl Silero {
    /// 512 samples: 32 ms at 16 kHz, the frame the model is trained on.
    pub const FRAME_LEN: usize = 512;
    /// Samples of the previous frame prepended to each one.
    pub const CONTEXT: usize = 64;
    /// Elements of the recurrent state, `[2, 1, 128]`.
    const STATE_LEN: usize = 2 * 128;

    /// Loads the model at `model` into a session on one thread. ONNX Runtime comes from
    /// `$ORT_DYLIB_PATH` if set, else `runtime`, else the newest `libonnxruntime.so*` in the
    /// model's directory; the first library loaded serves the whole process.
    pub fn load(model: &Path, runtime: Option<&Path>) -> Result<Self, VadError> {
        if !model.is_file() {
            return Err(VadError::NoModel { path: model.to_owned() });
        }
        let env_var = std::env::var_os(RUNTIME_ENV).map(PathBuf::from);
        let runtime = runtime_library(model, runtime, env_var.as_deref())?;
        let environment = environment(&runtime)?;
        let bad_model = |reason: String| VadError::BadModel { path: model.to_owned(), reason };
        let session = Session::builder(&environment)
            .and_then(|b| Ok(b.with_intra_threads(1)?.with_inter_threads(1)?))
            .and_then(|mut b| b.commit_from_file(model))
            .map_err(|e| bad_model(e.to_string()))?;
        check_signature(&session).map_err(bad_model)?;
        tracing::debug!(model = %model.display(), runtime = %runtime.path.display(), "Silero VAD loaded");
        Ok(Self {
            session,
            window: Window::new(),
            state: vec![0.0; Self::STATE_LEN],
            failing: false,
        })
    }

    /// One frame through the network: the speech probability, and the new state in `state`.
    fn run(&mut self, frame: &[f32]) -> Result<f32, ort::Error> {
        let input = &self.window.push(frame)[..];
        let sr = [i64::from(SAMPLE_RATE)];
        let outputs = self.session.run(ort::inputs![
            TensorRef::from_array_view(([1, input.len()], input))?,
            TensorRef::from_array_view(([2, 1, 128], &self.state[..]))?,
            TensorRef::from_array_view(((), &sr[..]))?,
        ])?;
        let (_, prob) = outputs[0].try_extract_tensor::<f32>()?;
        let (_, state) = outputs[1].try_extract_tensor::<f32>()?;
        let prob = prob.first().copied().unwrap_or(0.0);
        if state.len() != self.state.len() || !state.iter().all(|s| s.is_finite()) {
            return Err(ort::Error::new("the model returned a state of the wrong size, or NaN"));
        }
        self.state.copy_from_slice(state);
        Ok(if prob.is_finite() { prob.clamp(0.0, 1.0) } else { 0.0 })
    }
}

impl std::fmt::Debug for Silero {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Silero").finish_non_exhaustive()
    }
}

impl SpeechProb for Silero {
    fn frame_len(&self) -> usize {
        Self::FRAME_LEN
    }

    fn prob(&mut self, frame: &[f32]) -> f32 {
        match self.run(frame) {
            Ok(p) => {
                self.failing = false;
                p
            }
            Err(e) => {
                // Not expected once the session has loaded; the stream goes on as non-speech
                // from a fresh state rather than stopping the daemon.
                if !self.failing {
                    tracing::warn!("Silero VAD failed on a frame, scoring it as non-speech: {e}");
                }
                self.failing = true;
                self.state.fill(0.0);
                0.0
            }
        }
    }

    fn reset(&mut self) {
        self.window.reset();
        self.state.fill(0.0);
    }
}

/// The ONNX Runtime library to load, and where its path came from (for error messages).
#[derive(Debug, Clone, PartialEq)]
struct Runtime {
    path: PathBuf,
    /// [`RUNTIME_ENV`], `configured`, or `found next to the model`.
    from: &'static str,
}

/// Which ONNX Runtime library [`Silero::load`] uses: `env_var` (the value of
/// `$ORT_DYLIB_PATH`) when set, else `configured`, else the newest `libonnxruntime.so*` in the
/// model's directory. Checks that the file exists.
fn runtime_library(
    model: &Path,
    configured: Option<&Path>,
    env_var: Option<&Path>,
) -> Result<Runtime, VadError> {
    let chosen = match (env_var.filter(|p| !p.as_os_str().is_empty()), configured) {
        (Some(path), _) => Runtime { path: path.to_owned(), from: RUNTIME_ENV },
        (None, Some(path)) => Runtime { path: path.to_owned(), from: "configured" },
        (None, None) => {
            let dir =
                model.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            let path =
                newest_runtime(dir).ok_or_else(|| VadError::NoRuntime { dir: dir.to_owned() })?;
            Runtime { path, from: "found next to the model" }
        }
    };
    if !chosen.path.is_file() {
        return Err(VadError::Runtime {
            path: chosen.path,
            from: chosen.from,
            reason: "no such file".to_owned(),
        });
    }
    Ok(chosen)
}

/// `libonnxruntime.so` in `dir`, else the `libonnxruntime.so.X.Y.Z` with the highest version.
fn newest_runtime(dir: &Path) -> Option<PathBuf> {
    let entries = std::fs::read_dir(dir).ok()?;
    entries
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let rest = name.strip_prefix(RUNTIME_PREFIX)?;
            let version = if rest.is_empty() {
                vec![u64::MAX]
            } else {
                let digits = rest.strip_prefix('.')?;
                digits.split('.').map(|n| n.parse().ok()).collect::<Option<Vec<u64>>>()?
            };
            Some((version, name))
        })
        .max()
        .map(|(_, name)| dir.join(name))
}

/// The ONNX Runtime environment of this process. `ort` allows one per process, and loads one
/// library per process: the first caller's library serves every later one.
fn environment(runtime: &Runtime) -> Result<Environment, VadError> {
    static ENV: Mutex<Option<(PathBuf, Environment)>> = Mutex::new(None);
    let mut env = ENV.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((loaded, environment)) = env.as_ref() {
        if *loaded != runtime.path {
            tracing::debug!(
                loaded = %loaded.display(),
                asked = %runtime.path.display(),
                "ONNX Runtime is already loaded: using it"
            );
        }
        return Ok(environment.clone());
    }
    let failed = |reason: String| VadError::Runtime {
        path: runtime.path.clone(),
        from: runtime.from,
        reason,
    };
    let environment = ort::init_from(&runtime.path)
        .map_err(|e| failed(e.to_string()))?
        .with_name("stt-vad")
        // Microsoft's builds can send usage telemetry (on Windows); audio stays private, and
        // so does how it is processed.
        .with_telemetry(false)
        .build()
        .map_err(|e| failed(e.to_string()))?;
    *env = Some((runtime.path.clone(), environment.clone()));
    Ok(environment)
}

/// The model must be a Silero v5/v6 16 kHz model: inputs `input`, `state`, `sr` and outputs
/// `output`, `stateN`, in that order.
fn check_signature(session: &Session) -> Result<(), String> {
    let names = |outlets: &[ort::value::Outlet]| -> Vec<String> {
        outlets.iter().map(|o| o.name().to_owned()).collect()
    };
    let (inputs, outputs) = (names(session.inputs()), names(session.outputs()));
    if inputs != ["input", "state", "sr"] || outputs.len() != 2 {
        return Err(format!(
            "it has inputs {inputs:?} and outputs {outputs:?}, where Silero v5/v6 has inputs \
             [\"input\", \"state\", \"sr\"] and two outputs"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runtime_library_is_found_by_variable_then_configuration_then_next_to_the_model() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let model = d.join("silero_vad.onnx");
        let touch = |name: &str| {
            std::fs::write(d.join(name), b"").unwrap();
            d.join(name)
        };
        // Nothing there.
        let err = runtime_library(&model, None, None).unwrap_err();
        assert!(err.to_string().contains("run scripts/fetch-models"), "{err}");
        assert_eq!(err, VadError::NoRuntime { dir: d.to_owned() });

        // The highest version, not the providers library or a stray name.
        touch("libonnxruntime_providers_shared.so");
        touch("libonnxruntime.so.1.9.0");
        touch("libonnxruntime.so.bak");
        let newest = touch("libonnxruntime.so.1.31.1");
        let found = runtime_library(&model, None, None).unwrap();
        assert_eq!(found, Runtime { path: newest.clone(), from: "found next to the model" });
        // A plain libonnxruntime.so (a link the user made) wins.
        let plain = touch("libonnxruntime.so");
        assert_eq!(runtime_library(&model, None, None).unwrap().path, plain);

        // A configured path, and the variable over it; an empty variable counts as unset.
        let other = touch("custom.so");
        assert_eq!(runtime_library(&model, Some(&other), None).unwrap().path, other);
        assert_eq!(runtime_library(&model, Some(&other), Some(Path::new(""))).unwrap().path, other);
        let via_env = runtime_library(&model, Some(&other), Some(&newest)).unwrap();
        assert_eq!(via_env, Runtime { path: newest, from: RUNTIME_ENV });

        // Missing files are named, with where the name came from.
        let missing = d.join("nope.so");
        let err = runtime_library(&model, Some(&missing), None).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with(&format!("cannot load ONNX Runtime from '{}'", missing.display())));
        assert!(msg.contains("no such file") && msg.contains("vad = \"earshot\""), "{msg}");
        let err = runtime_library(&model, None, Some(&missing)).unwrap_err();
        assert!(err.to_string().contains("', named by $ORT_DYLIB_PATH (no such file)"), "{err}");
    }

    #[test]
    fn a_missing_model_says_to_fetch_it() {
        let err = Silero::load(Path::new("/nonexistent/silero_vad.onnx"), None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no Silero VAD model at '/nonexistent/silero_vad.onnx': run scripts/fetch-models \
             (or set [daemon].vad = \"earshot\")"
        );
    }
}
