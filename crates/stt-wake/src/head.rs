//! An openWakeWord head: a small classifier trained for one phrase, which takes the last
//! [`Head::frames`] embeddings (16 for every head `scripts/fetch-wake` installs: 1.28 s of
//! steps, each embedding 0.76 s of audio, so about 2 s in all) and gives a score in [0, 1]
//! that the phrase has just been said. openWakeWord's own threshold is 0.5.
//!
//! A head scores nothing until the stream has as many embeddings as it takes: openWakeWord
//! pads its history at start with embeddings of random noise instead (and then zeroes its
//! first 5 scores), which nothing could reproduce and which says nothing about the audio.

use std::fmt;
use std::path::{Path, PathBuf};

use ort::session::Session;
use ort::value::TensorRef;

use crate::WakeError;
use crate::features::{DIM, Embedding};

/// `<models_dir>/wake/<name>.onnx`, where `scripts/fetch-wake --head <name>` installs the
/// head for `name` (`hey_jarvis`, `alexa`, `hey_mycroft`, `hey_rhasspy`).
pub fn path(models_dir: &Path, name: &str) -> PathBuf {
    crate::wake_dir(models_dir).join(format!("{name}.onnx"))
}

/// A head, loaded and ready. `Send`, so it can live on a worker thread.
pub struct Head {
    session: Session,
    path: PathBuf,
    frames: usize,
    input: Vec<f32>,
}

impl fmt::Debug for Head {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Head")
            .field("path", &self.path)
            .field("frames", &self.frames)
            .finish_non_exhaustive()
    }
}

impl Head {
    /// Loads the head `scripts/fetch-wake --head <name>` installs in `models_dir`, with the
    /// ONNX Runtime library `scripts/fetch-models` installs there (or `$ORT_DYLIB_PATH`).
    pub fn installed(models_dir: &Path, name: &str) -> Result<Head, WakeError> {
        Self::load(&path(models_dir, name), &stt_onnx::runtime_library(models_dir))
    }

    /// Loads the head at `path` with ONNX Runtime from `runtime`, on one thread. A head is an
    /// ONNX model with one input of shape `[1, frames, 96]` and one output of shape `[1, 1]`.
    pub fn load(path: &Path, runtime: &Path) -> Result<Head, WakeError> {
        if !path.is_file() {
            let name = path.file_stem().map(|s| s.to_string_lossy().into_owned());
            let name = name.unwrap_or_else(|| "NAME".to_owned());
            return Err(WakeError::HeadMissing { path: path.to_owned(), name });
        }
        let session = crate::features::session(path, runtime)?;
        let wrong = |why: String| WakeError::WrongModel { path: path.to_owned(), why };
        let [input] = session.inputs() else {
            return Err(wrong(format!("{} inputs, not one", session.inputs().len())));
        };
        let shape = input.dtype().tensor_shape().map(|s| s.to_vec());
        let frames = match shape.as_deref() {
            Some(&[1, frames, dim]) if frames > 0 && dim == DIM as i64 => frames as usize,
            _ => return Err(wrong(format!("its input has shape {shape:?}, not [1, frames, 96]"))),
        };
        let [output] = session.outputs() else {
            return Err(wrong(format!("{} outputs, not one", session.outputs().len())));
        };
        let shape = output.dtype().tensor_shape().map(|s| s.to_vec());
        if shape.as_deref() != Some(&[1, 1]) {
            return Err(wrong(format!("its output has shape {shape:?}, not [1, 1]: one score")));
        }
        Ok(Head { session, path: path.to_owned(), frames, input: Vec::new() })
    }

    /// How many embeddings the head scores at once.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// The score of the last [`Head::frames`] embeddings of `history` (oldest first), in
    /// [0, 1]; `None` while `history` is shorter than that.
    pub fn score(&mut self, history: &[Embedding]) -> Result<Option<f32>, WakeError> {
        let Some(first) = history.len().checked_sub(self.frames) else { return Ok(None) };
        self.input.clear();
        self.input.extend(history[first..].iter().flatten());
        let outputs = self.session.run(ort::inputs![TensorRef::from_array_view((
            [1, self.frames, DIM],
            self.input.as_slice()
        ))?])?;
        let (_, values) = outputs[0].try_extract_tensor::<f32>()?;
        Ok(values.first().copied())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test: a failure should panic")]

    use super::*;

    #[test]
    fn a_head_is_installed_under_its_name() {
        let models = Path::new("/data/stt/models");
        assert_eq!(path(models, "hey_jarvis"), Path::new("/data/stt/models/wake/hey_jarvis.onnx"));
    }

    #[test]
    fn a_missing_head_is_named_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let err = Head::installed(dir.path(), "alexa").unwrap_err().to_string();
        let path = dir.path().join("wake/alexa.onnx");
        assert_eq!(
            err,
            format!(
                "no wake-word head at '{}': run scripts/fetch-wake --head alexa",
                path.display()
            )
        );
    }
}
