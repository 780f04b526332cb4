//! The reference for [`stt_vad::Silero`]: the same `silero_vad.onnx` run by ONNX Runtime (the
//! engine Silero ships for), exactly as Silero's own `OnnxWrapper` runs it: 512-sample frames,
//! each with the last 64 samples of the previous frame before it, the recurrent state carried
//! over. Tests and examples only; the daemon runs the plain-Rust network.
//!
//! ONNX Runtime is a shared library loaded at run time: `$ORT_DYLIB_PATH`, else the newest
//! `libonnxruntime.so*` next to the model (`scripts/fetch-models` puts it
//! there).

#![allow(clippy::expect_used, reason = "a reference for tests: a failure should panic")]

use std::path::{Path, PathBuf};

use ort::session::Session;
use ort::value::TensorRef;

/// Silero in ONNX Runtime, frame by frame.
pub struct OrtSilero {
    session: Session,
    /// The previous frame's last 64 samples, then the frame.
    window: [f32; 576],
    /// The LSTM state, `[2, 1, 128]`.
    state: Vec<f32>,
}

impl OrtSilero {
    /// Loads `model`; `Err` says what is missing (the library, most often).
    pub fn load(model: &Path) -> Result<Self, String> {
        let library = library(model)?;
        let environment = ort::init_from(&library)
            .map_err(|e| format!("cannot load {}: {e}", library.display()))?
            .with_name("stt-vad-reference")
            .with_telemetry(false)
            .build()
            .map_err(|e| format!("cannot start ONNX Runtime: {e}"))?;
        let session = Session::builder(&environment)
            .and_then(|b| Ok(b.with_intra_threads(1)?.with_inter_threads(1)?))
            .and_then(|mut b| b.commit_from_file(model))
            .map_err(|e| format!("ONNX Runtime cannot load {}: {e}", model.display()))?;
        Ok(Self { session, window: [0.0; 576], state: vec![0.0; 256] })
    }

    /// The speech probability of one 512-sample frame.
    fn run(&mut self, frame: &[f32]) -> f32 {
        self.window.copy_within(512.., 0);
        for (dst, &src) in self.window[64..].iter_mut().zip(frame) {
            *dst = if src.is_finite() { src.clamp(-1.0, 1.0) } else { 0.0 };
        }
        let sr = [16_000_i64];
        let input = &self.window[..];
        let outputs = self
            .session
            .run(ort::inputs![
                TensorRef::from_array_view(([1, input.len()], input)).expect("input"),
                TensorRef::from_array_view(([2, 1, 128], &self.state[..])).expect("state"),
                TensorRef::from_array_view(((), &sr[..])).expect("sr"),
            ])
            .expect("ONNX Runtime runs the frame");
        let (_, prob) = outputs[0].try_extract_tensor::<f32>().expect("output");
        let (_, state) = outputs[1].try_extract_tensor::<f32>().expect("stateN");
        let prob = prob[0];
        self.state.copy_from_slice(state);
        prob
    }
}

impl stt_vad::SpeechProb for OrtSilero {
    fn frame_len(&self) -> usize {
        512
    }

    fn prob(&mut self, frame: &[f32]) -> f32 {
        self.run(frame)
    }

    fn reset(&mut self) {
        self.window.fill(0.0);
        self.state.fill(0.0);
    }
}

/// `$ORT_DYLIB_PATH`, else the newest `libonnxruntime.so*` in the model's directory.
fn library(model: &Path) -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("ORT_DYLIB_PATH").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let dir = model.parent().unwrap_or(Path::new("."));
    let newest = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let version = name.strip_prefix("libonnxruntime.so")?;
            let version: Option<Vec<u64>> = if version.is_empty() {
                Some(vec![u64::MAX])
            } else {
                version.strip_prefix('.')?.split('.').map(|n| n.parse().ok()).collect()
            };
            Some((version?, name))
        })
        .max();
    newest.map(|(_, name)| dir.join(name)).ok_or_else(|| {
        format!(
            "no ONNX Runtime library (libonnxruntime.so*) in {}: run \
             scripts/fetch-models",
            dir.display()
        )
    })
}
