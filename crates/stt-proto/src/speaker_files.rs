//! The two files through which the assistant tells the daemon about its speakers.
//!
//! The daemon owns the speaker roster (the voice prints) but takes no input on its socket, so
//! what people decide about speakers travels the other way as files the assistant writes and
//! the daemon reads, both in the data directory (`$XDG_DATA_HOME/stt/`), 0600, each written
//! whole to a temporary file and renamed over the old one:
//!
//! - [`NAMES_FILE`]: the names given with `speaker_name`, a JSON object from speaker id to
//!   name (`{"spk_0001": "Efren"}`). The daemon carries them in its `speakers` events and
//!   never prunes a named speaker.
//! - [`EDITS_FILE`]: what `speaker_forget` and `speaker_merge` asked for ([`SpeakerEdits`]),
//!   newest last, each with a sequence number that only grows. The daemon applies those
//!   newer than the last it applied (which it keeps with its roster) and ignores the rest,
//!   so an edit is applied once, also when the daemon was not running when it was made.

use serde::{Deserialize, Serialize};

/// The names file's name in the data directory.
pub const NAMES_FILE: &str = "speaker-names.json";

/// The edits file's name in the data directory.
pub const EDITS_FILE: &str = "speaker-edits.json";

/// How many edits the edits file keeps (the oldest go first): a daemon that missed more than
/// this many misses the oldest of them.
pub const EDITS_KEPT: usize = 256;

/// The edits file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpeakerEdits {
    pub edits: Vec<SpeakerEdit>,
}

/// One edit of the roster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpeakerEdit {
    /// Greater than every earlier edit's: the writer takes the larger of the last one + 1 and
    /// the time in milliseconds since the Unix epoch, so it keeps growing even when the file
    /// is deleted.
    pub seq: u64,
    /// RFC 3339 time the edit was asked for.
    pub at: String,
    #[serde(flatten)]
    pub op: SpeakerEditOp,
}

/// What an edit does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum SpeakerEditOp {
    /// Remove the speaker, its voice print and its sample.
    Forget { speaker_id: String },
    /// `speaker_id` and `into` are one person: `speaker_id`'s speech and voice print go to
    /// `into`, and `speaker_id` is removed.
    Merge { speaker_id: String, into: String },
}

impl SpeakerEdits {
    /// Appends `op` with the next sequence number (see [`SpeakerEdit::seq`]), dropping the
    /// oldest edits beyond [`EDITS_KEPT`]; returns the number given.
    pub fn push(&mut self, op: SpeakerEditOp, at: String, now_ms: u64) -> u64 {
        let next = self.edits.iter().map(|e| e.seq + 1).max().unwrap_or(0).max(now_ms);
        self.edits.push(SpeakerEdit { seq: next, at, op });
        let extra = self.edits.len().saturating_sub(EDITS_KEPT);
        self.edits.drain(..extra);
        next
    }

    /// The edits after `applied`, in order.
    pub fn after(&self, applied: u64) -> impl Iterator<Item = &SpeakerEdit> {
        self.edits.iter().filter(move |e| e.seq > applied)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forget(id: &str) -> SpeakerEditOp {
        SpeakerEditOp::Forget { speaker_id: id.into() }
    }

    #[test]
    fn sequence_numbers_only_grow_even_when_the_clock_goes_back() {
        let mut edits = SpeakerEdits::default();
        assert_eq!(edits.push(forget("spk_0001"), "t".into(), 1000), 1000);
        assert_eq!(edits.push(forget("spk_0002"), "t".into(), 500), 1001, "clock went back");
        assert_eq!(edits.push(forget("spk_0003"), "t".into(), 5000), 5000);
        let after: Vec<u64> = edits.after(1000).map(|e| e.seq).collect();
        assert_eq!(after, [1001, 5000]);
    }

    #[test]
    fn only_the_newest_edits_are_kept() {
        let mut edits = SpeakerEdits::default();
        for n in 0..(EDITS_KEPT as u64 + 10) {
            edits.push(forget(&format!("spk_{n:04}")), "t".into(), n);
        }
        assert_eq!(edits.edits.len(), EDITS_KEPT);
        assert_eq!(edits.edits[0].seq, 10);
    }

    #[test]
    fn the_file_reads_as_documented() {
        let text = r#"{"edits":[
            {"seq":1,"at":"2026-12-03T10:00:00.000+00:00","op":"forget","speaker_id":"spk_0002"},
            {"seq":2,"at":"2026-12-03T10:01:00.000+00:00","op":"merge","speaker_id":"spk_0004","into":"spk_0001"}
        ]}"#;
        let edits: SpeakerEdits = serde_json::from_str(text).unwrap();
        assert_eq!(edits.edits[0].op, forget("spk_0002"));
        assert_eq!(
            edits.edits[1].op,
            SpeakerEditOp::Merge { speaker_id: "spk_0004".into(), into: "spk_0001".into() }
        );
        let back = serde_json::to_string(&edits.edits[1]).unwrap();
        assert_eq!(
            back,
            r#"{"seq":2,"at":"2026-12-03T10:01:00.000+00:00","op":"merge","speaker_id":"spk_0004","into":"spk_0001"}"#
        );
    }
}
