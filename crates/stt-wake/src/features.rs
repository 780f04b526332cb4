//! Audio to speech embeddings, as openWakeWord computes them (`AudioFeatures` in its
//! `utils.py`), for every phrase to be recognised by.
//!
//! Audio comes in steps of [`STEP`] samples (80 ms at 16 kHz). Each step goes through the mel
//! spectrogram model (`melspectrogram.onnx`: samples at 16-bit scale in, one 32-bin frame per
//! 160 samples over 512 out), together with the last 480 samples of the step before, so that
//! its 8 frames follow on from the last step's; the first step has no step before it and
//! gives 5. Each frame is rescaled `x / 10 + 2`, as openWakeWord does to bring the model's
//! output near Google's original. The last 76 frames (0.76 s) then go through the embedding
//! model (`embedding_model.onnx`), which gives one [`Embedding`] per step.
//!
//! Before the first step the frames are 76 rows of ones, as openWakeWord starts them, so the
//! first embeddings of a stream are the ones it computes. (openWakeWord also starts its
//! embedding history with embeddings of 4 s of random noise, which only its scores of the
//! first 15 steps see; here a head scores nothing until the stream has 16 embeddings of its
//! own, see [`crate::head`].)

use std::collections::VecDeque;
use std::fmt;
use std::path::{Path, PathBuf};

use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::TensorRef;

use crate::WakeError;

/// The sample rate every model here takes.
pub const SAMPLE_RATE: u32 = 16_000;

/// Samples per step: 80 ms, one embedding each.
pub const STEP: usize = 1280;

/// Values in one embedding.
pub const DIM: usize = 96;

/// One step's embedding: the 0.76 s of audio up to the end of that step.
pub type Embedding = [f32; DIM];

/// How many embeddings a stream keeps at least (9.6 s, as openWakeWord keeps): enough for any
/// head and any enrolled phrase.
pub const HISTORY: usize = 120;

/// The mel spectrogram model's file in the wake directory.
pub const MEL_FILE: &str = "melspectrogram.onnx";

/// The embedding model's file in the wake directory.
pub const EMBEDDING_FILE: &str = "embedding_model.onnx";

/// Bins in one mel frame.
const MEL_BINS: usize = 32;

/// Samples between the starts of two mel frames.
const MEL_HOP: usize = 160;

/// Samples one mel frame spans.
const MEL_SPAN: usize = 512;

/// Samples of the step before that a step's mel frames need: with frames of 512 samples every
/// 160, a step's 8 frames start 3 hops before it.
const CONTEXT: usize = 3 * MEL_HOP;

/// Mel frames in one embedding's window (0.76 s).
const WINDOW: usize = 76;

/// Samples at 16-bit scale per unit of the [-1, 1] samples [`Features::push`] takes.
const SCALE: f32 = 32768.0;

type MelFrame = [f32; MEL_BINS];

/// The two feature models, loaded and ready, and one stream of audio going through them.
/// `Send`, so it can live on a worker thread; every call takes `&mut self`, because an `ort`
/// session runs one call at a time.
pub struct Features {
    models: Models,
    stream: Stream,
}

impl fmt::Debug for Features {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Features")
            .field("steps", &self.stream.steps)
            .field("embeddings", &self.stream.history.len())
            .finish_non_exhaustive()
    }
}

impl Features {
    /// Loads `melspectrogram.onnx` and `embedding_model.onnx` from `<models_dir>/wake`, where
    /// `scripts/fetch-wake` installs them, with the ONNX Runtime library `scripts/fetch-models`
    /// installs in `models_dir` (or `$ORT_DYLIB_PATH`), on one thread.
    pub fn load(models_dir: &Path) -> Result<Features, WakeError> {
        let dir = crate::wake_dir(models_dir);
        Self::load_from(&dir, &stt_onnx::runtime_library(models_dir))
    }

    /// [`Features::load`] from the models in `dir` with ONNX Runtime from `runtime`.
    pub fn load_from(dir: &Path, runtime: &Path) -> Result<Features, WakeError> {
        let mel_path = dir.join(MEL_FILE);
        let embedding_path = dir.join(EMBEDDING_FILE);
        for path in [&mel_path, &embedding_path] {
            if !path.is_file() {
                return Err(WakeError::FeaturesMissing { path: path.clone() });
            }
        }
        let mel = session(&mel_path, runtime)?;
        check_io(&mel, &mel_path, "input", "output")?;
        let embedding = session(&embedding_path, runtime)?;
        check_io(&embedding, &embedding_path, "input_1", "conv2d_19")?;
        let mut features = Features {
            models: Models { mel, embedding, mel_path, embedding_path, window: Vec::new() },
            stream: Stream::new(),
        };
        // One clip now: it checks the outputs' shapes (a model of another size fails here,
        // not at the first wake word) and warms ONNX Runtime up.
        let warm_up: Vec<f32> = (0..3 * STEP).map(|i| (i as f32 * 0.05).sin() * 0.1).collect();
        features.embed_clip(&warm_up)?;
        Ok(features)
    }

    /// Adds 16 kHz mono `samples` in [-1, 1] to the stream and gives the embeddings of the
    /// steps they complete, oldest first (none until a step of [`STEP`] samples is whole; a
    /// part step waits for the next call). They are also the end of [`Features::history`].
    pub fn push(&mut self, samples: &[f32]) -> Result<&[Embedding], WakeError> {
        self.push_scaled(samples.iter().map(|s| s * SCALE))
    }

    /// [`Features::push`] for 16-bit samples.
    pub fn push_i16(&mut self, samples: &[i16]) -> Result<&[Embedding], WakeError> {
        self.push_scaled(samples.iter().map(|&s| f32::from(s)))
    }

    /// [`Features::push`] for samples at 16-bit scale, the scale the mel model takes.
    fn push_scaled(
        &mut self,
        samples: impl Iterator<Item = f32>,
    ) -> Result<&[Embedding], WakeError> {
        self.stream.trim();
        let before = self.stream.history.len();
        self.stream.audio.extend(samples);
        self.models.run_steps(&mut self.stream)?;
        Ok(&self.stream.history[before..])
    }

    /// The stream's embeddings, oldest first: at least the last [`HISTORY`] of them (all of
    /// them before that), and every one the last push gave.
    pub fn history(&self) -> &[Embedding] {
        &self.stream.history
    }

    /// How many steps the stream has completed since it started (or was [`reset`]): the step
    /// that gave the last embedding ends at sample `steps() * STEP`.
    ///
    /// [`reset`]: Features::reset
    pub fn steps(&self) -> u64 {
        self.stream.steps
    }

    /// Starts the stream again, as if no audio had come: for a gap in the audio, so that
    /// what comes after it is not joined to what came before.
    pub fn reset(&mut self) {
        self.stream = Stream::new();
    }

    /// The embeddings of a whole recording (16 kHz mono, in [-1, 1]) as a stream of its own
    /// gives them, oldest first: one per whole step, the part step at the end left out. The
    /// live stream is not touched.
    pub fn embed_clip(&mut self, samples: &[f32]) -> Result<Vec<Embedding>, WakeError> {
        let mut stream = Stream::new();
        stream.audio.extend(samples.iter().map(|s| s * SCALE));
        self.models.run_steps(&mut stream)?;
        Ok(stream.history)
    }
}

/// One stream's state between steps.
struct Stream {
    /// Samples at 16-bit scale: the last [`CONTEXT`] of the step before (none before the
    /// first step), then those of the steps to come.
    audio: Vec<f32>,
    /// The last [`WINDOW`] mel frames.
    mel: VecDeque<MelFrame>,
    /// The embeddings so far, oldest first; trimmed to [`HISTORY`] when it has grown to twice
    /// that, so that trimming is rare and the history stays one slice.
    history: Vec<Embedding>,
    /// Steps completed.
    steps: u64,
}

impl Stream {
    fn new() -> Stream {
        Stream {
            audio: Vec::with_capacity(CONTEXT + 2 * STEP),
            mel: std::iter::repeat_n([1.0; MEL_BINS], WINDOW).collect(),
            history: Vec::new(),
            steps: 0,
        }
    }

    /// Samples of the step before that the next step's mel frames need.
    fn context(&self) -> usize {
        if self.steps == 0 { 0 } else { CONTEXT }
    }

    fn trim(&mut self) {
        if self.history.len() >= 2 * HISTORY {
            self.history.drain(..self.history.len() - HISTORY);
        }
    }
}

/// The two sessions, and the embedding model's input, kept from one step to the next.
struct Models {
    mel: Session,
    embedding: Session,
    mel_path: PathBuf,
    embedding_path: PathBuf,
    window: Vec<f32>,
}

impl Models {
    /// Runs every step `stream` holds the whole of.
    fn run_steps(&mut self, stream: &mut Stream) -> Result<(), WakeError> {
        while stream.audio.len() >= stream.context() + STEP {
            let input = stream.context() + STEP;
            self.mel_frames(&stream.audio[..input], &mut stream.mel)?;
            stream.history.push(self.embed(&stream.mel)?);
            stream.audio.drain(..input - CONTEXT);
            stream.steps += 1;
        }
        Ok(())
    }

    /// The mel frames of `samples`, rescaled and added to `mel`, which keeps its last
    /// [`WINDOW`].
    fn mel_frames(
        &mut self,
        samples: &[f32],
        mel: &mut VecDeque<MelFrame>,
    ) -> Result<(), WakeError> {
        let expected = (samples.len() - MEL_SPAN) / MEL_HOP + 1;
        let outputs = self
            .mel
            .run(ort::inputs![TensorRef::from_array_view(([1, samples.len()], samples))?])?;
        let (shape, values) = outputs[0].try_extract_tensor::<f32>()?;
        if shape[..] != [1, 1, expected as i64, MEL_BINS as i64] {
            return Err(WakeError::WrongModel {
                path: self.mel_path.clone(),
                why: format!(
                    "{} samples gave output of shape {shape:?}, not [1, 1, {expected}, {MEL_BINS}]",
                    samples.len()
                ),
            });
        }
        for frame in values.chunks_exact(MEL_BINS) {
            let mut row = [0.0; MEL_BINS];
            for (r, x) in row.iter_mut().zip(frame) {
                *r = x / 10.0 + 2.0;
            }
            if mel.len() == WINDOW {
                mel.pop_front();
            }
            mel.push_back(row);
        }
        Ok(())
    }

    /// The embedding of the [`WINDOW`] mel frames in `mel`.
    fn embed(&mut self, mel: &VecDeque<MelFrame>) -> Result<Embedding, WakeError> {
        self.window.clear();
        self.window.extend(mel.iter().flatten());
        let outputs = self.embedding.run(ort::inputs![TensorRef::from_array_view((
            [1, WINDOW, MEL_BINS, 1],
            self.window.as_slice()
        ))?])?;
        let (shape, values) = outputs[0].try_extract_tensor::<f32>()?;
        if shape[..] != [1, 1, 1, DIM as i64] {
            return Err(WakeError::WrongModel {
                path: self.embedding_path.clone(),
                why: format!("its output has shape {shape:?}, not [1, 1, 1, {DIM}]"),
            });
        }
        let mut embedding = [0.0; DIM];
        embedding.copy_from_slice(values);
        Ok(embedding)
    }
}

/// A session for the model at `path`, on one thread with every optimisation (as
/// openWakeWord's Python runs it: ONNX Runtime's default).
pub(crate) fn session(path: &Path, runtime: &Path) -> Result<Session, WakeError> {
    let environment = stt_onnx::environment(runtime)?;
    Session::builder(&environment)
        .and_then(|b| {
            Ok(b.with_intra_threads(1)?
                .with_inter_threads(1)?
                .with_optimization_level(GraphOptimizationLevel::All)?)
        })
        .and_then(|mut b| b.commit_from_file(path))
        .map_err(|source| WakeError::Model { path: path.to_owned(), source })
}

/// Whether `session` has the one input and the one output named.
fn check_io(session: &Session, path: &Path, input: &str, output: &str) -> Result<(), WakeError> {
    let inputs: Vec<&str> = session.inputs().iter().map(|i| i.name()).collect();
    let outputs: Vec<&str> = session.outputs().iter().map(|o| o.name()).collect();
    if inputs != [input] || outputs != [output] {
        return Err(WakeError::WrongModel {
            path: path.to_owned(),
            why: format!(
                "its inputs are {inputs:?} and outputs {outputs:?}, not [{input:?}] and [{output:?}]"
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test: a failure should panic")]

    use super::*;

    #[test]
    fn a_step_after_the_first_gives_the_eight_frames_that_follow_on() {
        // Frames of 512 samples every 160: the first step alone gives 5, a later one with
        // the 480 samples before it gives 8, which start where the last step's stopped.
        let frames = |samples: usize| (samples - MEL_SPAN) / MEL_HOP + 1;
        assert_eq!(frames(STEP), 5);
        assert_eq!(frames(CONTEXT + STEP), 8);
        assert_eq!(STEP / MEL_HOP, 8);
        // The first step's frames start at 0, 160, .., 640; the next step's input starts
        // at STEP - CONTEXT = 800, the frame after 640.
        assert_eq!(STEP - CONTEXT, 5 * MEL_HOP);
    }

    #[test]
    fn a_missing_model_is_named_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let err = Features::load(dir.path()).unwrap_err().to_string();
        let path = dir.path().join("wake").join(MEL_FILE);
        assert_eq!(
            err,
            format!("no wake-word feature model at '{}': run scripts/fetch-wake", path.display())
        );
    }

    #[test]
    fn a_missing_runtime_library_is_named_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        for file in [MEL_FILE, EMBEDDING_FILE] {
            std::fs::write(dir.path().join(file), "").unwrap();
        }
        let runtime = dir.path().join("lib").join("libonnxruntime.so.1.31.1");
        let err = Features::load_from(dir.path(), &runtime).unwrap_err().to_string();
        assert!(err.starts_with(&format!("no ONNX Runtime library at '{}'", runtime.display())));
        assert!(err.contains("run scripts/fetch-models"), "{err}");
    }

    #[test]
    fn features_can_move_to_a_worker_thread() {
        fn send<T: Send>() {}
        fn thread_safe<T: Send + Sync>() {}
        send::<Features>();
        thread_safe::<WakeError>();
    }
}
