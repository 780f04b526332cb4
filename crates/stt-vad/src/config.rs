//! The segmenter's thresholds.

use crate::VadError;

/// How the [`Segmenter`](crate::Segmenter) decides where speech starts and ends. The daemon
/// fills it from the `[daemon]` `vad_*` config keys; `Default` is the set measured in
/// `docs/PERFORMANCE.md`, which the config file's defaults should carry too.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VadConfig {
    /// Speech probability at or above which a frame counts as speech (above 0, below 1).
    /// Once a segment is open, frames stay speech down to `threshold - 0.15` (hysteresis).
    pub threshold: f64,
    /// Audio kept from before the first speech frame, in milliseconds, so that a soft first
    /// syllable the classifier scored low is not cut.
    pub pre_roll_ms: u32,
    /// Consecutive speech this long opens a segment, in milliseconds; shorter bursts
    /// (clicks, taps) do not.
    pub onset_ms: u32,
    /// Non-speech this long closes a segment, in milliseconds; shorter pauses stay inside it.
    pub hangover_ms: u32,
    /// Audio kept after the last speech frame when a segment closes, in milliseconds (at most
    /// `hangover_ms`): word-final consonants and releases the classifier scores low. A pause
    /// this long settles the segment ([`Segmenter::take_settled`](crate::Segmenter::take_settled)).
    pub tail_ms: u32,
    /// A segment whose speech (first to last speech frame) is shorter than this, in
    /// milliseconds, is flagged `too_short`: speech was heard but is not worth transcribing.
    pub min_speech_ms: u32,
    /// No segment is longer than this, in seconds, pre-roll and tail included: longer speech
    /// is split at the quietest point of the segment's last seconds.
    pub max_segment_s: u32,
}

impl Default for VadConfig {
    fn default() -> Self {
        Self {
            threshold: 0.5,
            pre_roll_ms: 300,
            onset_ms: 64,
            hangover_ms: 500,
            tail_ms: crate::segmenter::TAIL_MS,
            min_speech_ms: 150,
            max_segment_s: 20,
        }
    }
}

impl VadConfig {
    /// Checks that the values can work together; the error names the key to change.
    pub fn validate(&self) -> Result<(), VadError> {
        if !(self.threshold > 0.0 && self.threshold < 1.0) {
            return Err(VadError::Threshold(self.threshold));
        }
        if self.max_segment_s < 1 {
            return Err(VadError::MaxSegment(self.max_segment_s));
        }
        let max_ms = u64::from(self.max_segment_s) * 1000;
        if u64::from(self.min_speech_ms) >= max_ms {
            return Err(VadError::MinSpeech {
                min_speech_ms: self.min_speech_ms,
                max_segment_s: self.max_segment_s,
            });
        }
        let total_ms = u64::from(self.pre_roll_ms) + u64::from(self.onset_ms);
        if total_ms * 2 > max_ms {
            return Err(VadError::PreRoll { total_ms, max_segment_s: self.max_segment_s });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(cfg: VadConfig, expected: Result<(), &str>) {
        match (cfg.validate(), expected) {
            (Ok(()), Ok(())) => {}
            (Err(e), Err(want)) => {
                let msg = e.to_string();
                assert!(msg.contains(want), "{cfg:?}: error {msg:?} lacks {want:?}");
            }
            (got, want) => panic!("{cfg:?}: got {got:?}, expected {want:?}"),
        }
    }

    #[test]
    fn validation_names_the_key_to_change() {
        let d = VadConfig::default();
        check(d, Ok(()));
        check(VadConfig { threshold: 0.0, ..d }, Err("vad_threshold is 0"));
        check(VadConfig { threshold: 1.0, ..d }, Err("vad_threshold is 1"));
        check(VadConfig { threshold: f64::NAN, ..d }, Err("vad_threshold"));
        check(VadConfig { max_segment_s: 0, ..d }, Err("vad_max_segment_s is 0"));
        check(VadConfig { max_segment_s: 1, min_speech_ms: 1000, ..d }, Err("vad_min_speech_ms"));
        check(VadConfig { max_segment_s: 1, min_speech_ms: 999, ..d }, Ok(()));
        check(VadConfig { max_segment_s: 1, pre_roll_ms: 450, onset_ms: 64, ..d }, Err("(514 ms)"));
        check(
            VadConfig { onset_ms: 0, hangover_ms: 0, pre_roll_ms: 0, min_speech_ms: 0, ..d },
            Ok(()),
        );
    }
}
