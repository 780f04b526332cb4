//! Speech probability per frame.

/// A frame classifier: how likely one frame of 16 kHz mono audio is speech.
///
/// The [`Segmenter`](crate::Segmenter) calls [`prob`](Self::prob) on every consecutive frame
/// of the stream, in order, so an implementation may keep state (a recurrent network does).
pub trait SpeechProb {
    /// Samples per frame, at 16 kHz. Constant for the life of the classifier.
    fn frame_len(&self) -> usize;

    /// The probability, in `[0, 1]`, that `frame` (exactly [`frame_len`](Self::frame_len)
    /// samples in `[-1, 1]`) is speech.
    fn prob(&mut self, frame: &[f32]) -> f32;

    /// Forgets the stream so far (the next frame starts a new one). Stateless classifiers
    /// need not implement it.
    fn reset(&mut self) {}
}

impl<P: SpeechProb + ?Sized> SpeechProb for Box<P> {
    fn frame_len(&self) -> usize {
        (**self).frame_len()
    }

    fn prob(&mut self, frame: &[f32]) -> f32 {
        (**self).prob(frame)
    }

    fn reset(&mut self) {
        (**self).reset();
    }
}

/// The `earshot` VAD: a small recurrent network over mel features, 16 ms frames, about 8 KiB
/// of state, its weights in the crate.
pub struct Earshot {
    // Boxed: the detector holds ~8 KiB of arrays, too much to move around on the stack.
    detector: Box<earshot::Detector>,
    frame: [f32; Self::FRAME_LEN],
}

impl Earshot {
    /// 256 samples: 16 ms at 16 kHz.
    pub const FRAME_LEN: usize = 256;

    pub fn new() -> Self {
        Self { detector: earshot::Detector::default_boxed(), frame: [0.0; Self::FRAME_LEN] }
    }
}

impl Default for Earshot {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Earshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Earshot").finish_non_exhaustive()
    }
}

impl SpeechProb for Earshot {
    fn frame_len(&self) -> usize {
        Self::FRAME_LEN
    }

    fn prob(&mut self, frame: &[f32]) -> f32 {
        // earshot asserts (in debug builds) that samples are within [-1, 1]; a clipping or
        // broken input device must not bring the daemon down, so sanitise first.
        for (dst, &src) in self.frame.iter_mut().zip(frame) {
            *dst = if src.is_finite() { src.clamp(-1.0, 1.0) } else { 0.0 };
        }
        let n = frame.len().min(Self::FRAME_LEN);
        self.frame[n..].fill(0.0);
        self.detector.predict_f32(&self.frame).clamp(0.0, 1.0)
    }

    fn reset(&mut self) {
        self.detector.reset();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earshot_survives_out_of_range_and_non_finite_samples() {
        let mut vad = Earshot::new();
        let mut frame = vec![0.0f32; Earshot::FRAME_LEN];
        frame[0] = 3.0;
        frame[1] = -7.5;
        frame[2] = f32::NAN;
        frame[3] = f32::INFINITY;
        for _ in 0..5 {
            let p = vad.prob(&frame);
            assert!((0.0..=1.0).contains(&p), "{p}");
        }
    }

    #[test]
    fn earshot_scores_digital_silence_as_non_speech() {
        // About 0.2: well under the threshold, and under the threshold less the hysteresis.
        let mut vad = Earshot::new();
        let silence = [0.0f32; Earshot::FRAME_LEN];
        for _ in 0..50 {
            let p = vad.prob(&silence);
            assert!(p < 0.3, "{p}");
        }
    }
}
