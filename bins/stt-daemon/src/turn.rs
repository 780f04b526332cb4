//! The end of a turn: the VAD thread asks whisper to read each pause, and may end the turn
//! on its answer.
//!
//! When a pause in the open segment's speech has lasted the segment's tail (the audio its
//! `End` will carry if nobody speaks again), the VAD thread offers whisper that audio as a
//! [`Pass::Pause`](stt_asr::Pass::Pause), decoded as the final would be. So with the fixed
//! hangover (`[daemon].end_of_turn = "hangover"`) the final is ready when the hangover runs
//! out. With `"text"` or `"prosody"` the tail is [`READ_AHEAD_MS`] short of
//! `end_of_turn_pause_ms`, and the whisper thread sends back a [`Verdict`] on each pass: what
//! its text says of the turn ([`stt_asr::turn::shape`]). When that ends the turn and no speech
//! came since, the VAD thread ends it once the pause has lasted `end_of_turn_pause_ms`
//! ([`stt_vad::Segmenter::end_turn`]) and the pass is the final; when it does not, the
//! hangover closes the segment with the same audio, and the pass is the final then.
//!
//! `"text"` trusts a sentence whisper closed with a mark it was sure of. `"prosody"` (the
//! default) also hears the voice where it stopped ([`stt_vad::pitch::final_pitch`], read by
//! the VAD thread as it offers the pass): a person who pauses mid-sentence holds the pitch
//! level or lets it rise, and whisper often writes the first half of such a sentence as a
//! whole one ("What time is it?"). There a sentence ends the turn only where the voice fell,
//! but whisper may be less sure of its mark, or (with a plainer fall) leave it off.
//!
//! A file read as fast as whisper goes (`--fast`) has no clock to race: the VAD thread waits
//! for each verdict before reading on, so a turn ends where whisper would have ended it had it
//! been instant (the most a pause can be cut short; a live daemon reads on while whisper
//! works, and speech that resumes meanwhile keeps the turn open).

use std::cell::Cell;
use std::sync::mpsc::Receiver;

use stt_asr::turn::Shape;
use stt_config::EndOfTurn;
use stt_vad::Growing;

/// How long before the end of a turn whisper reads the pause, in milliseconds: about what a
/// pass over a spoken sentence of a few seconds takes on two cores, so the verdict is in when
/// the pause has lasted `end_of_turn_pause_ms`. (At 150 ms the verdict on sentences of 5 s
/// and more came 50–100 ms after the 300 ms pause: docs/PERFORMANCE.md, "The end of a
/// turn".)
pub const READ_AHEAD_MS: u32 = 200;

/// The pause at which whisper reads the text so far (the segment's tail) for an
/// `end_of_turn_pause_ms` of `end_pause_ms`: [`READ_AHEAD_MS`] before it, but never less
/// than 100 ms (word-final consonants need it) nor more than the 300 ms tail of the fixed
/// hangover.
pub fn read_at_ms(end_pause_ms: u32) -> u32 {
    end_pause_ms.saturating_sub(READ_AHEAD_MS).clamp(100, stt_vad::segmenter::TAIL_MS)
}

/// What whisper made of a pause pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    pub seg_id: u64,
    /// The audio it read: the segment's first `len` samples.
    pub len: usize,
    /// What its text says of the turn.
    pub shape: Shape,
}

/// The VAD thread's side: whether pauses are read, and when a verdict ends a turn.
#[derive(Debug)]
pub struct Turn {
    policy: EndOfTurn,
    /// The pause that ends a finished turn, in samples.
    end_pause: usize,
    /// Whether the VAD thread waits for each verdict (`--fast`).
    wait: bool,
    /// A verdict that the open segment's text is finished, until its pause has lasted
    /// `end_pause` (or speech resumes, or the segment closes).
    ending: Cell<Option<Verdict>>,
    /// With `"prosody"`: the voice at the end of the last pause offered (`seg_id`, `len`, its
    /// pitch against the seconds before in semitones: `None` when it could not be read).
    pitch: Cell<Option<(u64, usize, Option<f32>)>>,
    verdicts: Receiver<Verdict>,
}

impl Turn {
    pub fn new(
        policy: EndOfTurn,
        end_pause_ms: u32,
        fast: bool,
        verdicts: Receiver<Verdict>,
    ) -> Self {
        let end_pause = end_pause_ms as usize * 16;
        Self {
            policy,
            end_pause,
            wait: fast,
            ending: Cell::new(None),
            pitch: Cell::new(None),
            verdicts,
        }
    }

    /// A pause pass over the first `len` samples of `seg_id` (`samples`) is about to be
    /// offered: with `"prosody"`, reads whether the voice fell where it stopped.
    pub fn voice(&self, seg_id: u64, len: usize, samples: &[f32]) {
        if self.policy == EndOfTurn::Prosody {
            let pitch = stt_vad::pitch::final_pitch(samples);
            tracing::debug!(seg_id, len, ?pitch, "the voice where it paused");
            self.pitch.set(Some((seg_id, len, pitch)));
        }
    }

    /// Whether pauses are read at all. Not for a file read fast with the fixed hangover:
    /// nobody is waiting for its finals, and the VAD thread is past the pause before whisper
    /// could read it.
    pub fn active(&self) -> bool {
        !(self.wait && self.policy == EndOfTurn::Hangover)
    }

    /// A pass over the first `len` samples of `seg_id` was taken: with `--fast`, waits for
    /// its verdict.
    pub fn taken(&self, seg_id: u64, len: usize) {
        if !self.wait {
            return;
        }
        // The worker answers every pass it runs; it drops a waiting one only when it shuts
        // down, and then the channel closes.
        if let Some(v) = self.verdicts.iter().find(|v| v.seg_id == seg_id && v.len == len) {
            self.note(v);
        }
    }

    /// After each chunk of audio: where the open segment (`grown`, `None` when none is
    /// open) ends its turn now, if it does: a verdict said its text is finished, no speech
    /// came since, and the pause has lasted `end_of_turn_pause_ms`.
    pub fn ended(&self, open: Option<(u64, &Growing<'_>)>) -> Option<usize> {
        for v in self.verdicts.try_iter() {
            self.note(v);
        }
        let ending = self.ending.get()?;
        let Some((_, grown)) = open.filter(|(id, g)| {
            *id == ending.seg_id && g.speech_len <= ending.len && ending.len <= g.samples.len()
        }) else {
            // Closed, or speaking again: the turn goes on.
            self.ending.set(None);
            return None;
        };
        if grown.pause_len() < self.end_pause {
            return None;
        }
        self.ending.set(None);
        Some(ending.len)
    }

    fn note(&self, v: Verdict) {
        let ends = match self.policy {
            EndOfTurn::Hangover => return,
            EndOfTurn::Text => v.shape == Shape::Finished,
            // Where the voice fell, whisper may be less sure of its mark; without any mark,
            // the voice must fall plainly. A voice the tracker cannot follow (a word or two,
            // a whisper) and a pass whose voice was not read end nothing early.
            EndOfTurn::Prosody => match self.pitch.get() {
                Some((seg_id, len, Some(st))) if (seg_id, len) == (v.seg_id, v.len) => {
                    match v.shape {
                        Shape::Finished | Shape::Unsure => st <= stt_vad::pitch::FALL_ST,
                        Shape::Unmarked => st <= stt_vad::pitch::CLEAR_FALL_ST,
                        Shape::Open => false,
                    }
                }
                _ => false,
            },
        };
        if ends {
            self.ending.set(Some(v));
        } else if self.ending.get().is_some_and(|e| e.seg_id == v.seg_id) {
            self.ending.set(None);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    fn grown(samples: &[f32], speech_len: usize) -> Growing<'_> {
        Growing { start_s: 0.0, samples, speech_s: 1.0, speech_len }
    }

    #[test]
    fn the_pause_is_read_ahead_of_the_end_of_the_turn() {
        assert_eq!(read_at_ms(400), 200);
        assert_eq!(read_at_ms(350), 150);
        assert_eq!(read_at_ms(300), 100);
        assert_eq!(read_at_ms(200), 100, "never under 100 ms");
        assert_eq!(read_at_ms(700), 300, "never over the fixed hangover's tail");
    }

    #[test]
    fn pauses_are_read_unless_no_one_waits_for_the_final() {
        for (policy, fast, active) in [
            (EndOfTurn::Text, false, true),
            (EndOfTurn::Text, true, true),
            (EndOfTurn::Hangover, false, true),
            (EndOfTurn::Hangover, true, false),
        ] {
            let (_tx, rx) = mpsc::channel();
            assert_eq!(Turn::new(policy, 300, fast, rx).active(), active, "{policy:?}, {fast}");
        }
    }

    #[test]
    fn a_finished_text_ends_the_turn_once_the_pause_lasts_and_not_if_speech_resumes() {
        let (tx, rx) = mpsc::channel();
        let turn = Turn::new(EndOfTurn::Text, 300, false, rx);
        let audio = vec![0.0; 32_000];
        // Speech up to 16 000; whisper read the pause at 150 ms (18 400).
        assert_eq!(turn.ended(Some((1, &grown(&audio[..18_400], 16_000)))), None, "no verdict");
        tx.send(Verdict { seg_id: 1, len: 18_400, shape: Shape::Finished }).unwrap();
        assert_eq!(turn.ended(Some((1, &grown(&audio[..19_000], 16_000)))), None, "187 ms");
        assert_eq!(turn.ended(Some((1, &grown(&audio[..20_800], 16_000)))), Some(18_400));
        assert_eq!(turn.ended(Some((1, &grown(&audio[..21_000], 16_000)))), None, "once");
        // Speech resumes before the pause has lasted: the verdict is dropped.
        tx.send(Verdict { seg_id: 2, len: 18_400, shape: Shape::Finished }).unwrap();
        assert_eq!(turn.ended(Some((2, &grown(&audio[..19_000], 16_000)))), None);
        assert_eq!(turn.ended(Some((2, &grown(&audio[..19_500], 19_500)))), None, "speaking");
        assert_eq!(turn.ended(Some((2, &grown(&audio[..30_000], 19_500)))), None, "dropped");
        // An unfinished text, another segment's verdict, or a closed segment: no end.
        tx.send(Verdict { seg_id: 3, len: 18_400, shape: Shape::Open }).unwrap();
        assert_eq!(turn.ended(Some((3, &grown(&audio[..25_000], 16_000)))), None);
        tx.send(Verdict { seg_id: 3, len: 18_400, shape: Shape::Finished }).unwrap();
        assert_eq!(turn.ended(Some((4, &grown(&audio[..25_000], 16_000)))), None);
        tx.send(Verdict { seg_id: 4, len: 18_400, shape: Shape::Finished }).unwrap();
        assert_eq!(turn.ended(None), None);
        assert_eq!(turn.ended(Some((4, &grown(&audio[..25_000], 16_000)))), None, "was closed");
        // With the fixed hangover, no verdict ends a turn.
        let (tx, rx) = mpsc::channel();
        let fixed = Turn::new(EndOfTurn::Hangover, 300, false, rx);
        tx.send(Verdict { seg_id: 1, len: 18_400, shape: Shape::Finished }).unwrap();
        assert_eq!(fixed.ended(Some((1, &grown(&audio[..25_000], 16_000)))), None);
    }

    /// A buzz at `hz` falling by `fall` semitones over its last 300 ms, then 150 ms of
    /// silence (where whisper reads the pause).
    fn voice(hz: f32, fall: f32) -> Vec<f32> {
        let (n, end) = (24_000, 4_800);
        let mut phase = 0.0f32;
        let mut x: Vec<f32> = (0..n)
            .map(|i| {
                let f = if i < n - end {
                    hz
                } else {
                    hz * 2f32.powf(fall / 12.0 * (i + end - n) as f32 / end as f32)
                };
                phase += std::f32::consts::TAU * f / 16_000.0;
                (1..=5).map(|h| (phase * h as f32).sin() / h as f32).sum::<f32>() * 0.2
            })
            .collect();
        x.extend(vec![0.0; 2_400]);
        x
    }

    #[test]
    fn with_prosody_a_finished_text_ends_the_turn_only_where_the_voice_fell() {
        let (tx, rx) = mpsc::channel();
        let turn = Turn::new(EndOfTurn::Prosody, 300, false, rx);
        let (fell, level) = (voice(180.0, -5.0), voice(180.0, 0.0));
        let len = fell.len();
        let later = vec![0.0; len + 2_400];
        // The voice fell and the text is finished: the turn ends at 300 ms of pause.
        turn.voice(1, len, &fell);
        tx.send(Verdict { seg_id: 1, len, shape: Shape::Finished }).unwrap();
        assert_eq!(turn.ended(Some((1, &grown(&later, 24_000)))), Some(len));
        // Held level (a pause mid-sentence): the text alone does not end it.
        turn.voice(2, len, &level);
        tx.send(Verdict { seg_id: 2, len, shape: Shape::Finished }).unwrap();
        assert_eq!(turn.ended(Some((2, &grown(&later, 24_000)))), None);
        // The voice fell but the text goes on.
        turn.voice(3, len, &fell);
        tx.send(Verdict { seg_id: 3, len, shape: Shape::Open }).unwrap();
        assert_eq!(turn.ended(Some((3, &grown(&later, 24_000)))), None);
        // The voice fell and whisper was less sure of its full stop: the fall is enough.
        turn.voice(5, len, &fell);
        tx.send(Verdict { seg_id: 5, len, shape: Shape::Unsure }).unwrap();
        assert_eq!(turn.ended(Some((5, &grown(&later, 24_000)))), Some(len));
        // No mark at all: the voice must fall plainly (-5 semitones does, -3 does not).
        turn.voice(6, len, &fell);
        tx.send(Verdict { seg_id: 6, len, shape: Shape::Unmarked }).unwrap();
        assert_eq!(turn.ended(Some((6, &grown(&later, 24_000)))), Some(len));
        turn.voice(7, len, &voice(180.0, -3.0));
        tx.send(Verdict { seg_id: 7, len, shape: Shape::Unmarked }).unwrap();
        assert_eq!(turn.ended(Some((7, &grown(&later, 24_000)))), None);
        turn.voice(8, len, &voice(180.0, -3.0));
        tx.send(Verdict { seg_id: 8, len, shape: Shape::Finished }).unwrap();
        assert_eq!(turn.ended(Some((8, &grown(&later, 24_000)))), Some(len));
        // A voice that cannot be read (silence here) ends nothing early, however sure the
        // text.
        turn.voice(9, len, &vec![0.0; len]);
        tx.send(Verdict { seg_id: 9, len, shape: Shape::Finished }).unwrap();
        assert_eq!(turn.ended(Some((9, &grown(&later, 24_000)))), None);
        // A verdict on a pass whose voice was not read (another length) ends nothing.
        turn.voice(4, len, &fell);
        tx.send(Verdict { seg_id: 4, len: len - 160, shape: Shape::Finished }).unwrap();
        assert_eq!(turn.ended(Some((4, &grown(&later, 24_000)))), None);
        // The text policy does not read the voice.
        let (tx, rx) = mpsc::channel();
        let text = Turn::new(EndOfTurn::Text, 300, false, rx);
        text.voice(1, len, &level);
        tx.send(Verdict { seg_id: 1, len, shape: Shape::Finished }).unwrap();
        assert_eq!(text.ended(Some((1, &grown(&later, 24_000)))), Some(len));
    }

    #[test]
    fn a_fast_file_waits_for_the_verdict_on_its_pass() {
        let (tx, rx) = mpsc::channel();
        let turn = Turn::new(EndOfTurn::Text, 300, true, rx);
        let whisper = std::thread::spawn(move || {
            tx.send(Verdict { seg_id: 1, len: 50, shape: Shape::Open }).unwrap();
            tx.send(Verdict { seg_id: 1, len: 18_400, shape: Shape::Finished }).unwrap();
        });
        turn.taken(1, 18_400);
        assert_eq!(turn.ending.get().map(|v| v.len), Some(18_400), "its own verdict, noted");
        whisper.join().unwrap();
        turn.taken(1, 30_000);
        assert_eq!(turn.ending.get().map(|v| v.len), Some(18_400), "whisper gone: no wait");
    }
}
