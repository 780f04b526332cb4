//! Live partial transcripts: when the VAD thread offers whisper a pass over the open segment,
//! and what the whisper thread publishes of each pass.
//!
//! A pass is offered once the segment has grown by `[daemon].partial_interval_ms` of audio
//! since the last one was taken, and only when none is waiting or running (so partials never
//! take whisper back to back) and the segment holds some speech. The worker takes it only
//! when no final waits ([`stt_asr::worker`]). Each pass's text goes through the segment's
//! [`Agreement`]; a partial is published when what it shows changed, never after the
//! segment's final.

use stt_asr::agreement::{Agreement, Shown};
use stt_proto::TranscriptPartial;

/// Speech a segment must hold before its first partial pass: less is rarely a whole word.
const MIN_SPEECH_S: f64 = 0.3;

/// When the VAD thread offers the next partial pass (audio lengths in samples).
#[derive(Debug)]
pub struct Schedule {
    interval: usize,
    /// Offer when the open segment holds at least this much audio.
    next_at: usize,
}

impl Schedule {
    pub fn new(interval_ms: u32) -> Self {
        let interval = interval_ms as usize * 16;
        Self { interval, next_at: interval }
    }

    /// A new segment opened.
    pub fn opened(&mut self) {
        self.next_at = self.interval;
    }

    /// Whether a pass over `len` samples holding `speech_s` of speech is due, given whether
    /// one is still waiting or running.
    pub fn due(&self, len: usize, speech_s: f64, pending: bool) -> bool {
        !pending && len >= self.next_at && speech_s >= MIN_SPEECH_S
    }

    /// The worker took a pass over `len` samples.
    pub fn taken(&mut self, len: usize) {
        self.next_at = len + self.interval;
    }
}

/// What the whisper thread publishes of partial passes.
#[derive(Debug, Default)]
pub struct Live {
    /// The segment the agreement is about, and what was last published of it.
    seg_id: u64,
    agreement: Agreement,
    shown: Option<Shown>,
    /// The last segment whose final was reported: no partial of it or before may follow.
    finished: u64,
}

impl Live {
    /// A partial pass over `seg_id` heard `text` (`None`: nothing real, which changes
    /// nothing). Returns the partial to publish, if what is shown changed.
    pub fn partial(&mut self, seg_id: u64, text: Option<&str>) -> Option<TranscriptPartial> {
        if seg_id <= self.finished {
            return None;
        }
        if seg_id != self.seg_id {
            *self = Self { seg_id, finished: self.finished, ..Self::default() };
        }
        // A pass that heard nothing real (a runaway, a hallucination) is not one of the two
        // that must agree: the next pass is compared with the one before it.
        let shown = self.agreement.pass(text?);
        if shown.text.is_empty() || self.shown.as_ref() == Some(&shown) {
            return None;
        }
        self.shown = Some(shown.clone());
        Some(TranscriptPartial { seg_id, text: shown.text, committed_len: shown.committed_len })
    }

    /// The final of `seg_id` was reported.
    pub fn finished(&mut self, seg_id: u64) {
        self.finished = self.finished.max(seg_id);
        if seg_id >= self.seg_id {
            *self = Self { finished: self.finished, ..Self::default() };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_is_due_every_interval_of_audio_once_the_last_is_done() {
        let mut s = Schedule::new(500);
        assert!(!s.due(7_999, 0.5, false), "not before the first interval");
        assert!(!s.due(8_000, 0.2, false), "not before some speech");
        assert!(s.due(8_000, 0.5, false));
        assert!(!s.due(8_000, 0.5, true), "not while one is pending");
        s.taken(8_500);
        assert!(!s.due(16_000, 1.0, false));
        assert!(s.due(16_500, 1.0, false));
        s.opened();
        assert!(s.due(8_000, 0.5, false), "a new segment starts over");
    }

    #[test]
    fn a_pass_that_heard_nothing_real_does_not_break_the_agreement() {
        let mut live = Live::default();
        live.partial(1, Some("Open the"));
        // A runaway between two passes that agree: they still commit.
        assert!(live.partial(1, None).is_none());
        let p = live.partial(1, Some("Open the calendar")).unwrap();
        assert_eq!((p.text.as_str(), p.committed_len), ("Open the calendar", 8));
    }

    #[test]
    fn partials_show_what_changed_and_none_comes_after_the_final() {
        let mut live = Live::default();
        let p = live.partial(3, Some("Turn the")).unwrap();
        assert_eq!((p.text.as_str(), p.committed_len), ("Turn the", 0));
        let p = live.partial(3, Some("Turn the kitchen")).unwrap();
        assert_eq!((p.text.as_str(), p.committed_len), ("Turn the kitchen", 8));
        // The same again (a pass over a pause): nothing new to show.
        assert!(live.partial(3, Some("Turn the kitchen")).is_some_and(|p| p.committed_len == 16));
        assert!(live.partial(3, Some("Turn the kitchen")).is_none());
        // Nothing real heard shows nothing.
        assert!(live.partial(4, None).is_none());
        assert!(live.partial(4, Some("")).is_none());
        live.finished(3);
        assert!(live.partial(3, Some("Turn the kitchen lights")).is_none(), "after its final");
        // The next segment starts afresh.
        let p = live.partial(4, Some("Thanks")).unwrap();
        assert_eq!((p.seg_id, p.committed_len), (4, 0));
        live.finished(4);
        assert!(live.partial(4, Some("Thanks a lot")).is_none());
    }
}
