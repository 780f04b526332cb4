//! Speaker embeddings: a segment of speech in, one unit-length 192-dim vector out, so that
//! the cosine of two vectors ([`cosine`]) says how alike two voices sound, whatever was said.
//!
//! The model is 3D-Speaker's CAM++ as ONNX, which `scripts/fetch-speaker-model` builds and
//! installs as `<models>/campplus/campplus.onnx` (its input is the [`fbank`] features minus
//! their mean over time, `feats` `[batch, frames, 80]`; its output `embedding` `[batch, 192]`,
//! not normalised). It runs in ONNX Runtime through `ort`, loaded at run time
//! from the library `scripts/fetch-models` installs, exactly as `stt-embed` loads it.
//!
//! A segment is embedded whole up to [`WINDOW_S`] seconds; a longer one in windows of that
//! length, [`HOP_S`] apart, whose unit-length embeddings are averaged and normalised again
//! (each window's features minus their own mean, as the model saw its training clips).
//! Under [`MIN_SPEECH_S`] there is too little voice to say whose it is, and
//! [`Embedder::embed`] gives `None`.
//!
//! [`Embedder`] is the whole engine: [`Embedder::load`], then [`Embedder::embed`]. Embedding
//! is blocking CPU work (about 13 ms per second of speech on one thread): run it on a thread
//! of its own, not on the transcription worker. Errors are [`EmbedError`]s, each naming the
//! path at fault and the fix.

use std::fmt;
use std::path::{Path, PathBuf};

use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::TensorRef;
use stt_onnx::RuntimeError;
use thiserror::Error;

use crate::fbank::{self, FRAME_SHIFT, Fbank, Frame, NUM_BINS, SAMPLE_RATE};

/// Length of every vector [`Embedder::embed`] returns.
pub const DIM: usize = 192;

/// The model's directory inside the models directory.
pub const DIR_NAME: &str = "campplus";

/// The model's file inside [`DIR_NAME`].
pub const MODEL_FILE: &str = "campplus.onnx";

/// The least speech [`Embedder::embed`] embeds, in seconds (8000 samples, 48 frames): below
/// it, it gives `None`. It is the floor of what the model can tell voices apart by: measured
/// on stretches of eight espeak-ng voices (`tests/embed.rs` prints the table), 6 of 338
/// stretches of 0.5 s came out closer to another voice than to their own, none of 1 s or more.
/// Above this floor the daemon's `[speakers].min_segment_s` (1 s by default) decides which
/// utterances are worth identifying.
pub const MIN_SPEECH_S: f32 = 0.5;

/// The longest segment embedded in one piece, and the length of each window of a longer one,
/// in seconds (400 frames).
///
/// Why 4 s, measured on espeak-ng voices (eight voices, stretches of their speech against the
/// embedding of 21 s of it; `tests/embed.rs` prints the same table for its voices): the
/// longer a stretch, the closer it comes to its voice, steeply up to 2 s and then slowly
/// (mean cosine 0.60 at 0.5 s, 0.77 at 1 s, 0.88 at 2 s, 0.91 at 3 s, 0.94 at 4 s, 0.95 at
/// 5 s and at 6 s), and the lead of its worst stretch over the nearest other voice widens
/// with it (0.04 at 1 s, 0.15 at 3 s, 0.19 at 4 s, 0.23 at 6 s). 4 s is where that levels off,
/// and it keeps the 3 to 4 s sentences of spoken commands whole: cut into two 3 s windows
/// instead, the worst same-voice pair's lead over the nearest other voice fell from 0.07 to
/// 0.04. Longer windows would gain little and blur a change of speaker inside a segment.
pub const WINDOW_S: f32 = 4.0;

/// How far apart the windows of a long segment start, in seconds: a whole window, so each
/// stretch of speech is embedded once (but for the overlap of the last window, which ends
/// at the end). Overlapping windows gained nothing measurable: over 12 s, windows 2 s apart
/// came to a cosine of 0.988 to 0.997 with the embedding of the 12 s taken whole, windows
/// 4 s apart to 0.992 to 0.998, and both scored the same against the voice's sentences, but
/// half-overlapping windows cost twice the time (24.7 against 13.1 ms per second of speech,
/// one thread).
pub const HOP_S: f32 = 4.0;

/// [`MIN_SPEECH_S`] in samples.
const MIN_SAMPLES: usize = (MIN_SPEECH_S * SAMPLE_RATE as f32) as usize;

/// [`WINDOW_S`] in feature frames.
const WINDOW_FRAMES: usize = (WINDOW_S * SAMPLE_RATE as f32) as usize / FRAME_SHIFT;

/// [`HOP_S`] in feature frames.
const HOP_FRAMES: usize = (HOP_S * SAMPLE_RATE as f32) as usize / FRAME_SHIFT;

/// Windows run through the model together, so that a long segment takes a few runs rather
/// than one per window; 8 windows of 4 s (32 s of speech) are 1 MB of input.
const MAX_BATCH: usize = 8;

/// `<models_dir>/campplus/campplus.onnx`, where `scripts/fetch-speaker-model` installs the
/// model.
pub fn default_path(models_dir: &Path) -> PathBuf {
    models_dir.join(DIR_NAME).join(MODEL_FILE)
}

/// The cosine similarity of two vectors from [`Embedder::embed`]: their dot product, since
/// both have unit length. Near 1 for the same voice. Vectors of different lengths are
/// compared over the shorter.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// What went wrong, with the path at fault and what to do about it.
#[derive(Debug, Error)]
pub enum EmbedError {
    /// The model file is not there.
    #[error("no speaker-embedding model at '{path}': run scripts/fetch-speaker-model")]
    ModelMissing { path: PathBuf },
    /// ONNX Runtime could not be had.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// ONNX Runtime refused the model file.
    #[error(
        "ONNX Runtime cannot load the speaker-embedding model '{path}': {source}: run \
         scripts/fetch-speaker-model --force to build it again"
    )]
    Model {
        path: PathBuf,
        #[source]
        source: ort::Error,
    },
    /// The model loads but is not CAM++ with the inputs and outputs stt feeds and reads.
    #[error(
        "'{path}' is not the speaker-embedding model stt expects ({why}): run \
         scripts/fetch-speaker-model --force to build CAM++ again"
    )]
    WrongModel { path: PathBuf, why: String },
    /// ONNX Runtime failed while running the model.
    #[error("ONNX Runtime failed to embed a voice: {0}")]
    Run(#[from] ort::Error),
}

/// CAM++ loaded and ready: the ONNX Runtime session, the feature extractor and the buffers a
/// segment goes through, kept from one call to the next. `Send`, so it can live on a worker
/// thread; [`Embedder::embed`] takes `&mut self` for the buffers and because an `ort` session
/// runs one call at a time.
pub struct Embedder {
    session: Session,
    fbank: Fbank,
    /// The features of the whole segment.
    frames: Vec<Frame>,
    /// The model's input: a batch of windows, each with its own mean taken away.
    batch: Vec<Frame>,
    /// The sum of the windows' unit-length embeddings.
    sum: [f32; DIM],
}

impl fmt::Debug for Embedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Embedder")
            .field("dim", &DIM)
            .field("window_s", &WINDOW_S)
            .field("hop_s", &HOP_S)
            .finish_non_exhaustive()
    }
}

impl Embedder {
    /// Loads the model from `model` (see [`default_path`]) with ONNX Runtime from `runtime`
    /// (the `.so` path; `stt_embed::runtime_library` says which), on one thread: the daemon's
    /// transcription owns the other core.
    ///
    /// ONNX Runtime is loaded once per process: a later `load` with another `runtime` uses
    /// the library loaded first.
    pub fn load(model: &Path, runtime: &Path) -> Result<Embedder, EmbedError> {
        Self::load_with_threads(model, runtime, 1)
    }

    /// [`Embedder::load`] with `threads` for ONNX Runtime's work inside one run (at least 1).
    pub fn load_with_threads(
        model: &Path,
        runtime: &Path,
        threads: usize,
    ) -> Result<Embedder, EmbedError> {
        if !model.is_file() {
            return Err(EmbedError::ModelMissing { path: model.to_owned() });
        }
        let environment = stt_onnx::environment(runtime)?;
        let threads = threads.max(1);
        let session = Session::builder(&environment)
            .and_then(|b| {
                let b = b.with_intra_threads(threads)?.with_inter_threads(1)?;
                // Every optimisation: on one thread this float model ran about 20% faster than
                // at stt-embed's Level1 (examples/voice_speed.rs, 21.5 s of speech: 510 against
                // 636 ms, in half-overlapping windows).
                let b = b.with_optimization_level(GraphOptimizationLevel::All)?;
                // Spinning keeps idle pool threads busy-waiting for the next piece of work,
                // which would take cores from whisper between runs.
                Ok(if threads > 1 { b.with_intra_op_spinning(false)? } else { b })
            })
            .and_then(|mut b| b.commit_from_file(model))
            .map_err(|source| EmbedError::Model { path: model.to_owned(), source })?;

        let wrong = |why: String| EmbedError::WrongModel { path: model.to_owned(), why };
        let inputs: Vec<&str> = session.inputs().iter().map(|i| i.name()).collect();
        if inputs != ["feats"] {
            return Err(wrong(format!("its inputs are {inputs:?}, not [\"feats\"]")));
        }
        let outputs: Vec<&str> = session.outputs().iter().map(|o| o.name()).collect();
        if !outputs.contains(&"embedding") {
            return Err(wrong(format!("no output 'embedding'; its outputs are {outputs:?}")));
        }

        let mut embedder = Embedder {
            session,
            fbank: Fbank::new(),
            frames: Vec::new(),
            batch: Vec::new(),
            sum: [0.0; DIM],
        };
        // One run now: it checks the output's shape (a model of another width fails here,
        // not at the first comparison) and warms ONNX Runtime up.
        let warm_up: Vec<f32> = (0..MIN_SAMPLES).map(|i| (i as f32 * 0.05).sin() * 0.1).collect();
        embedder.embed(&warm_up).map_err(|e| wrong(e.to_string()))?;
        Ok(embedder)
    }

    /// The embedding of `samples` (16 kHz mono speech, in [-1, 1]): a unit-length [`DIM`]-long
    /// vector, or `None` for less than [`MIN_SPEECH_S`] of audio. Up to [`WINDOW_S`] is
    /// embedded whole; longer audio in windows of [`WINDOW_S`], [`HOP_S`] apart, the last one
    /// ending at the end, their embeddings normalised, averaged and normalised again.
    ///
    /// The samples are taken to be speech (a voice-activity segment): silence and noise get an
    /// embedding too, and it says nothing about a voice. Blocking: run it off the
    /// transcription worker. Allocates only the returned vector once its buffers have grown
    /// to the longest segment seen.
    pub fn embed(&mut self, samples: &[f32]) -> Result<Option<Vec<f32>>, EmbedError> {
        if samples.len() < MIN_SAMPLES {
            return Ok(None);
        }
        self.fbank.compute_into(samples, &mut self.frames);
        let total = self.frames.len();
        let window = total.min(WINDOW_FRAMES);
        let count = window_count(total, window);

        self.sum.fill(0.0);
        for first in (0..count).step_by(MAX_BATCH) {
            let rows = MAX_BATCH.min(count - first);
            self.batch.clear();
            for index in first..first + rows {
                let start = window_start(index, total, window);
                let from = self.batch.len();
                self.batch.extend_from_slice(&self.frames[start..start + window]);
                fbank::subtract_mean(&mut self.batch[from..]);
            }
            run(&mut self.session, &self.batch, rows, window, &mut self.sum)?;
        }
        Ok(Some(normalised(&self.sum)))
    }
}

/// How many windows of `window` frames cover `total` frames when they start every
/// [`HOP_FRAMES`] and the last ends at the last frame: one for `total` up to `window`.
fn window_count(total: usize, window: usize) -> usize {
    total.saturating_sub(window).div_ceil(HOP_FRAMES) + 1
}

/// Where window `index` of [`window_count`] starts: every [`HOP_FRAMES`] from the first frame,
/// but the last ends at the last frame.
fn window_start(index: usize, total: usize, window: usize) -> usize {
    (index * HOP_FRAMES).min(total.saturating_sub(window))
}

/// Runs one batch of `rows` windows of `len` frames each and adds each row's embedding,
/// normalised, to `sum`.
fn run(
    session: &mut Session,
    batch: &[Frame],
    rows: usize,
    len: usize,
    sum: &mut [f32],
) -> Result<(), EmbedError> {
    let shape = [rows, len, NUM_BINS];
    let outputs = session.run(ort::inputs![
        "feats" => TensorRef::from_array_view((shape, batch.as_flattened()))?,
    ])?;
    let (out_shape, embeddings) = outputs["embedding"].try_extract_tensor::<f32>()?;
    if out_shape[..] != [rows as i64, DIM as i64] {
        return Err(ort::Error::new(format!(
            "output 'embedding' has shape {out_shape:?}, expected [{rows}, {DIM}]"
        ))
        .into());
    }
    for row in embeddings.chunks_exact(DIM) {
        let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
        for (s, x) in sum.iter_mut().zip(row) {
            *s += x / norm;
        }
    }
    Ok(())
}

/// `v` scaled to unit length (zeros stay zeros rather than turning to NaN).
fn normalised(v: &[f32]) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter().map(|x| x / norm).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test: a failure should panic")]

    use super::*;

    fn load_error(model: &Path, runtime: &Path) -> String {
        match Embedder::load(model, runtime) {
            Ok(_) => panic!("{} loaded", model.display()),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn an_embedder_can_move_to_a_worker_thread() {
        // Sync too: an error must convert into anyhow's, and an embedder may sit in a Mutex.
        fn thread_safe<T: Send + Sync>() {}
        thread_safe::<Embedder>();
        thread_safe::<EmbedError>();
    }

    #[test]
    fn the_model_lives_in_its_own_folder_of_the_models_directory() {
        let models = Path::new("/data/stt/models");
        assert_eq!(default_path(models), Path::new("/data/stt/models/campplus/campplus.onnx"));
    }

    #[test]
    fn a_missing_model_is_named_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let model = default_path(dir.path());
        let msg = load_error(&model, &dir.path().join("libonnxruntime.so.1.31.1"));
        assert_eq!(
            msg,
            format!(
                "no speaker-embedding model at '{}': run scripts/fetch-speaker-model",
                model.display()
            )
        );
    }

    #[test]
    fn a_missing_runtime_library_is_named_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join(MODEL_FILE);
        std::fs::write(&model, "").unwrap();
        let runtime = dir.path().join("lib").join("libonnxruntime.so.1.31.1");
        let msg = load_error(&model, &runtime);
        assert!(msg.starts_with(&format!("no ONNX Runtime library at '{}'", runtime.display())));
        assert!(msg.contains("run scripts/fetch-models"), "{msg}");
    }

    #[test]
    fn constants_agree_with_the_features() {
        assert_eq!(MIN_SAMPLES, 8000);
        assert_eq!(fbank::num_frames(MIN_SAMPLES), 48);
        assert_eq!(WINDOW_FRAMES, 400);
        assert_eq!(HOP_FRAMES, 400);
    }

    #[test]
    fn windows_cover_every_frame_and_the_last_ends_at_the_end() {
        fn check(total: usize, expected: &[usize]) {
            let window = total.min(WINDOW_FRAMES);
            let count = window_count(total, window);
            let starts: Vec<usize> = (0..count).map(|i| window_start(i, total, window)).collect();
            assert_eq!(starts, expected, "{total} frames");
            let last = starts.last().unwrap();
            assert_eq!(last + window, total, "{total} frames: the last window ends early");
        }
        check(48, &[0]);
        check(399, &[0]);
        check(400, &[0]);
        check(401, &[0, 1]);
        check(800, &[0, 400]);
        check(801, &[0, 400, 401]);
        check(1200, &[0, 400, 800]);
        // 12 s of audio.
        check(1198, &[0, 400, 798]);
    }

    #[test]
    fn normalising_scales_to_unit_length_and_keeps_zeros() {
        let v = normalised(&[3.0, 4.0]);
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6, "{v:?}");
        assert_eq!(normalised(&[0.0; 3]), [0.0; 3]);
    }

    #[test]
    fn cosine_is_the_dot_product() {
        assert_eq!(cosine(&[0.6, 0.8], &[0.6, 0.8]), 1.0);
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 1.0]), 0.0);
        assert_eq!(cosine(&[1.0, 0.0], &[-1.0, 0.0]), -1.0);
        assert_eq!(cosine(&[], &[]), 0.0);
    }
}
