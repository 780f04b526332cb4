//! The microphone's loudness while a segment is open ([`stt_proto::Levels`]): what the
//! assistant needs to tell a person speaking over its voice from the voice heard back.
//!
//! The VAD thread feeds every chunk of audio to a [`Meter`]; it keeps 20 ms frames in step
//! with the stream (a chunk may end mid-frame), and hands out the frames of the open segment
//! five at a time (every 100 ms), with where in the stream the last one ends.

use stt_proto::Levels;

/// Samples in one frame: 20 ms at 16 kHz.
const FRAME: usize = (stt_vad::SAMPLE_RATE / 1000 * Levels::FRAME_MS) as usize;
/// Frames in one event.
const PER_EVENT: usize = 5;
/// The quietest figure sent, in dB (digital silence).
const FLOOR_DB: f32 = -100.0;

/// 20 ms loudness frames of a 16 kHz stream.
#[derive(Debug, Default)]
pub struct Meter {
    /// Sum of squares and count of the frame being filled.
    power: f64,
    filled: usize,
    /// Samples seen since the stream began.
    samples: u64,
    /// Whole frames not yet sent, oldest first.
    pending: Vec<f32>,
}

impl Meter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next `samples` of the stream; `open` is the segment open after them, if
    /// any. Returns an event's worth of frames once there are five (frames while no segment
    /// is open are dropped).
    pub fn push(&mut self, samples: &[f32], open: Option<u64>) -> Option<Levels> {
        for &x in samples {
            self.power += f64::from(x) * f64::from(x);
            self.filled += 1;
            if self.filled == FRAME {
                let mean = self.power / FRAME as f64;
                #[allow(clippy::cast_possible_truncation)]
                let db = if mean > 0.0 { (10.0 * mean.log10()) as f32 } else { FLOOR_DB };
                self.pending.push((db.max(FLOOR_DB) * 10.0).round() / 10.0);
                self.power = 0.0;
                self.filled = 0;
            }
        }
        self.samples += samples.len() as u64;
        let Some(seg_id) = open else {
            self.pending.clear();
            return None;
        };
        if self.pending.len() < PER_EVENT {
            return None;
        }
        let end = (self.samples - self.filled as u64) as f64 / f64::from(stt_vad::SAMPLE_RATE);
        Some(Levels { seg_id, end, db: std::mem::take(&mut self.pending) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_keep_step_with_the_stream_and_only_an_open_segment_is_sent() {
        let mut meter = Meter::new();
        // 50 ms of silence with no segment open: nothing, and nothing kept.
        assert_eq!(meter.push(&[0.0; 800], None), None);
        // A full-scale square wave is 0 dB; a tenth of it, -20 dB. The silence left half a
        // frame (40–60 ms) that the next chunk fills: 70 ms, four frames.
        let loud: Vec<f32> = (0..1120).map(|i| if i % 2 == 0 { 1.0 } else { -1.0 }).collect();
        assert_eq!(meter.push(&loud, Some(3)), None, "four frames");
        let soft: Vec<f32> = (0..640).map(|i| if i % 2 == 0 { 0.1 } else { -0.1 }).collect();
        let levels = meter.push(&soft, Some(3)).expect("six frames");
        assert_eq!(levels.seg_id, 3);
        assert_eq!(levels.db, vec![-3.0, 0.0, 0.0, 0.0, -20.0, -20.0], "half silence first");
        assert!((levels.end - 0.16).abs() < 1e-9, "{levels:?}");
        // Half a frame is kept for the next chunk; digital silence is -100.
        assert_eq!(meter.push(&[0.0; 1760], Some(3)).map(|l| l.db), Some(vec![-100.0; 5]));
        assert_eq!(meter.push(&[0.0; 160], Some(3)), None, "the half frame left: one more");
    }
}
