//! [`Gated`]: skip the classifier on frames that are only the room's steady noise.
//!
//! A microphone left open spends nearly all its time on background noise, and running a
//! network on every 32 ms frame of it is most of the daemon's idle CPU. The gate tracks the
//! noise floor (the frame energy, followed down at once and up slowly) and runs the classifier
//! only while the energy is at least `margin_db` above it, or was within the last
//! [`Gated::HOLD_MS`]. Frames it skips score 0.
//!
//! A stream starts with the gate open for the hold, while the floor is learned: audio that
//! begins mid-sentence is scored from its first frame.
//!
//! Speech always rises well above the floor at its onset, so nothing spoken is skipped there;
//! the hold keeps the classifier running through the pauses inside an utterance and its
//! hangover, so segment ends are scored exactly as without the gate. When the gate opens after
//! a skipped stretch, the classifier first runs over the [`Gated::WARM_FRAMES`] frames before
//! the opening one, so its input context is the audio just before the speech. Its recurrent
//! state is kept: it last ran on the same room noise through the hold, which is what it would
//! hold had it run all along (a fresh state instead scores the first syllables lower, moving
//! the segment's start and, with it, what whisper hears). `docs/PERFORMANCE.md`
//! ("Voice activity detection") measures the gate against the classifier alone.

use crate::{SAMPLE_RATE, SpeechProb};

/// A classifier behind a noise gate; see the [module docs](self).
#[derive(Debug)]
pub struct Gated<P> {
    inner: P,
    /// Decibels above the noise floor at which a frame opens the gate.
    margin_db: f32,
    /// How far the floor may rise per frame, in dB.
    rise_db: f32,
    /// The noise floor in dB (frame mean power); `None` before the first frame.
    floor_db: Option<f32>,
    /// Frames the classifier still runs for after the last frame above the margin.
    hold: u32,
    hold_frames: u32,
    /// The last frames seen while the gate was shut, oldest first, back to back (at most
    /// `WARM_FRAMES` of `frame_len` samples). One buffer, reused: nothing is allocated per
    /// frame.
    recent: Vec<f32>,
    /// Whether the classifier skipped the previous frame (its stream is broken).
    shut: bool,
    /// Frames scored and frames skipped since creation, for the daemon's figures.
    ran: u64,
    skipped: u64,
}

impl<P: SpeechProb> Gated<P> {
    /// After the last frame above the margin, the classifier keeps running this long:
    /// longer than any hangover worth configuring, and than the pauses inside a sentence.
    pub const HOLD_MS: u32 = 1500;
    /// Skipped frames replayed into a fresh classifier when the gate opens.
    pub const WARM_FRAMES: usize = 3;
    /// The floor rises at most this fast while the energy stays above it, in dB per second
    /// (so a fan switched on is learned within seconds, and speech never is).
    pub const RISE_DB_PER_S: f32 = 1.0;

    /// `inner` behind a gate that opens `margin_db` above the noise floor. A `margin_db` of 0
    /// or less never shuts the gate (the classifier runs on every frame).
    pub fn new(inner: P, margin_db: f32) -> Self {
        let frame_ms = inner.frame_len() as f32 * 1000.0 / SAMPLE_RATE as f32;
        let hold_frames = (Self::HOLD_MS as f32 / frame_ms).ceil() as u32;
        Self {
            margin_db,
            rise_db: Self::RISE_DB_PER_S * frame_ms / 1000.0,
            floor_db: None,
            hold: hold_frames,
            hold_frames,
            recent: Vec::with_capacity(Self::WARM_FRAMES * inner.frame_len()),
            shut: true,
            ran: 0,
            skipped: 0,
            inner,
        }
    }

    /// Frames the classifier ran on, and frames the gate skipped.
    pub fn counts(&self) -> (u64, u64) {
        (self.ran, self.skipped)
    }

    /// The gated classifier.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// Whether `frame` opens the gate, updating the noise floor.
    fn loud(&mut self, frame: &[f32]) -> bool {
        let db = power_db(frame);
        if !db.is_finite() {
            return false;
        }
        let floor = match self.floor_db {
            Some(f) if db >= f => f + self.rise_db.min(db - f),
            _ => db,
        };
        self.floor_db = Some(floor);
        db >= floor + self.margin_db
    }
}

impl<P: SpeechProb> SpeechProb for Gated<P> {
    fn frame_len(&self) -> usize {
        self.inner.frame_len()
    }

    fn prob(&mut self, frame: &[f32]) -> f32 {
        if self.margin_db <= 0.0 {
            self.ran += 1;
            return self.inner.prob(frame);
        }
        if self.loud(frame) {
            self.hold = self.hold_frames;
        }
        if self.hold == 0 {
            let len = self.inner.frame_len();
            if self.recent.len() >= Self::WARM_FRAMES * len {
                self.recent.drain(..len);
            }
            self.recent.extend(frame.iter().copied().chain(std::iter::repeat(0.0)).take(len));
            self.shut = true;
            self.skipped += 1;
            return 0.0;
        }
        self.hold -= 1;
        if self.shut {
            self.shut = false;
            for warm in self.recent.chunks_exact(self.inner.frame_len()) {
                self.inner.prob(warm);
                self.ran += 1;
            }
            self.recent.clear();
        }
        self.ran += 1;
        self.inner.prob(frame)
    }

    fn reset(&mut self) {
        self.inner.reset();
        self.floor_db = None;
        self.hold = self.hold_frames;
        self.recent.clear();
        self.shut = true;
    }
}

/// Mean power of `frame` in dB relative to full scale (−100 for digital silence).
fn power_db(frame: &[f32]) -> f32 {
    let power = frame.iter().map(|x| x * x).sum::<f32>() / frame.len().max(1) as f32;
    10.0 * (power + 1e-10).log10()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scores a frame as its peak amplitude and records every frame it is run on.
    #[derive(Default)]
    struct Probe {
        seen: Vec<f32>,
        resets: usize,
    }

    impl SpeechProb for Probe {
        fn frame_len(&self) -> usize {
            512
        }
        fn prob(&mut self, frame: &[f32]) -> f32 {
            self.seen.push(frame[0]);
            frame.iter().fold(0.0, |m, x| m.max(x.abs()))
        }
        fn reset(&mut self) {
            self.resets += 1;
        }
    }

    /// A frame of a constant level (its first sample made `tag` to tell frames apart).
    fn frame(level: f32, tag: f32) -> Vec<f32> {
        let mut f = vec![level; 512];
        f[0] = tag;
        f
    }

    /// A tag for the `k`th quiet frame that leaves its energy as it was.
    fn tag(k: usize) -> f32 {
        0.001 + k as f32 * 1e-7
    }

    const HOLD: usize = 47; // ceil(1500 / 32)

    #[test]
    fn steady_noise_is_skipped_after_the_hold() {
        let mut g = Gated::new(Probe::default(), 6.0);
        for _ in 0..500 {
            g.prob(&frame(0.001, 0.001));
        }
        assert_eq!(g.counts(), (HOLD as u64, 500 - HOLD as u64), "only the opening hold runs");
        assert_eq!(g.prob(&frame(0.001, 0.001)), 0.0, "a skipped frame scores 0");
    }

    #[test]
    fn a_loud_frame_opens_the_gate_with_the_frames_before_it_replayed() {
        let mut g = Gated::new(Probe::default(), 6.0);
        for k in 0..HOLD + 10 {
            g.prob(&frame(0.001, tag(k)));
        }
        let before = g.inner().seen.len();
        let p = g.prob(&frame(0.1, 0.5));
        assert_eq!(p, 0.5, "the opening frame is scored by the classifier");
        let probe = g.inner();
        assert_eq!(probe.resets, 0, "the classifier's stream goes on: no reset");
        let tags = [tag(HOLD + 7), tag(HOLD + 8), tag(HOLD + 9), 0.5];
        assert_eq!(probe.seen[before..], tags, "the last 3 quiet frames warm it up");
    }

    #[test]
    fn the_classifier_keeps_running_through_the_hold_then_stops() {
        let mut g = Gated::new(Probe::default(), 6.0);
        for _ in 0..HOLD + 20 {
            g.prob(&frame(0.001, 0.0));
        }
        let opening = g.counts().0;
        g.prob(&frame(0.1, 0.0));
        for _ in 0..HOLD - 1 {
            g.prob(&frame(0.001, 0.0));
        }
        let (ran, _) = g.counts();
        g.prob(&frame(0.001, 0.0));
        g.prob(&frame(0.001, 0.0));
        assert_eq!(g.counts().0, ran, "after the hold, quiet frames are skipped again");
        assert_eq!(ran - opening, 3 + HOLD as u64, "warm-up, the loud frame and the hold");
    }

    #[test]
    fn a_louder_steady_noise_is_learned_and_then_skipped() {
        let mut g = Gated::new(Probe::default(), 6.0);
        for _ in 0..50 {
            g.prob(&frame(0.001, 0.0));
        }
        // 20 dB louder from now on: the floor climbs 1 dB/s, so within ~20 s (625 frames)
        // plus the hold the gate shuts again.
        for _ in 0..700 {
            g.prob(&frame(0.01, 0.0));
        }
        let (ran, _) = g.counts();
        for _ in 0..100 {
            g.prob(&frame(0.01, 0.0));
        }
        assert_eq!(g.counts().0, ran);
    }

    #[test]
    fn a_stream_that_starts_with_speech_is_scored_from_its_first_frame() {
        let mut g = Gated::new(Probe::default(), 6.0);
        assert_eq!(g.prob(&frame(0.1, 0.25)), 0.25);
        g.reset();
        assert_eq!(g.prob(&frame(0.1, 0.5)), 0.5, "and again after a reset");
    }

    #[test]
    fn zero_margin_runs_every_frame() {
        let mut g = Gated::new(Probe::default(), 0.0);
        for _ in 0..100 {
            g.prob(&frame(0.0, 0.0));
        }
        assert_eq!(g.counts(), (100, 0));
    }

    #[test]
    fn digital_silence_and_nan_do_not_break_the_floor() {
        let mut g = Gated::new(Probe::default(), 6.0);
        g.prob(&vec![0.0; 512]);
        g.prob(&vec![f32::NAN; 512]);
        assert!(g.prob(&frame(0.1, 0.3)) > 0.0, "speech after silence opens the gate");
    }
}
