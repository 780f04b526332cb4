//! The audit log: every executed or refused action, one JSON line each, appended and flushed
//! as it happens.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Local, NaiveDate, SecondsFormat};
use serde::Serialize;
use serde_json::Value;

use stt_proto::SideEffect;

/// One tool call, run or refused: exactly the fields of the audit record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ActionRecord {
    /// RFC 3339 local time with offset.
    pub ts: String,
    /// `"command"` (the two-press flow).
    pub mode: String,
    /// The command text the model saw.
    pub text: String,
    /// Whether the person edited the transcript before executing.
    pub edited: bool,
    pub tool: String,
    pub args: Value,
    pub side_effect: SideEffect,
    pub requires_confirmation: bool,
    /// `null` when no confirmation was needed; otherwise whether the person allowed it.
    pub confirmed: Option<bool>,
    pub ok: bool,
    pub result: String,
    pub latency_ms: u64,
    /// Who chose the action: `"model"` (the tool loop), `"local"` (a sentence template,
    /// `[intents]`, without the model) or `"person"` (a control request).
    pub by: String,
    /// The outside content in the request the call came from (the call that brought it),
    /// when that is why it waited for a yes; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outside: Option<String>,
}

/// Naming, forgetting or merging a speaker.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpeakerRecord {
    pub ts: String,
    /// Always `"speaker"`.
    pub mode: String,
    /// `"name"`, `"forget"` or `"merge"`.
    pub action: String,
    pub speaker_id: String,
    /// The name given (`name` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The speaker `speaker_id` was merged into, which stays (`merge` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub into: Option<String>,
}

impl SpeakerRecord {
    pub fn name(speaker_id: &str, name: &str, at: DateTime<Local>) -> Self {
        Self { name: Some(name.into()), ..Self::new("name", speaker_id, at) }
    }

    pub fn forget(speaker_id: &str, at: DateTime<Local>) -> Self {
        Self::new("forget", speaker_id, at)
    }

    pub fn merge(speaker_id: &str, into: &str, at: DateTime<Local>) -> Self {
        Self { into: Some(into.into()), ..Self::new("merge", speaker_id, at) }
    }

    fn new(action: &str, speaker_id: &str, at: DateTime<Local>) -> Self {
        Self {
            ts: timestamp(at),
            mode: "speaker".into(),
            action: action.into(),
            speaker_id: speaker_id.into(),
            name: None,
            into: None,
        }
    }
}

/// Dictation turned on or off. What was typed is never written: only how much.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DictationRecord {
    pub ts: String,
    /// Always `"dictate"`.
    pub mode: String,
    /// `"on"` or `"off"`.
    pub action: String,
    /// Phrases said while it was on (`off` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phrases: Option<u64>,
    /// Characters typed while it was on (`off` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chars: Option<u64>,
}

impl DictationRecord {
    pub fn on(at: DateTime<Local>) -> Self {
        Self {
            ts: timestamp(at),
            mode: "dictate".into(),
            action: "on".into(),
            phrases: None,
            chars: None,
        }
    }

    pub fn off(phrases: u64, chars: u64, at: DateTime<Local>) -> Self {
        Self { action: "off".into(), phrases: Some(phrases), chars: Some(chars), ..Self::on(at) }
    }
}

/// The time as the audit log writes it.
pub fn timestamp(at: DateTime<Local>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, false)
}

/// Appends records to the day's file.
#[derive(Debug)]
pub struct AuditLog {
    dir: PathBuf,
    open: Option<(NaiveDate, File)>,
}

impl AuditLog {
    /// A log in `dir` (usually `<data_dir>/audit`), created 0700 on first write.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into(), open: None }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends one record, stamped at `at`, to that day's file.
    pub fn append(&mut self, record: &impl Serialize, at: DateTime<Local>) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(record).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let day = at.date_naive();
        let file = match &mut self.open {
            Some((open_day, file)) if *open_day == day => file,
            _ => {
                let file = self.open_day(day)?;
                &mut self.open.insert((day, file)).1
            }
        };
        // One write per record: a crash leaves whole lines only. A write cut short (the disk
        // full) is taken back, so the next record starts its own line.
        let before = file.metadata()?.len();
        let written = file.write_all(&line).and_then(|()| file.flush());
        if written.is_err() {
            let _ = file.set_len(before);
        }
        written
    }

    fn open_day(&self, day: NaiveDate) -> std::io::Result<File> {
        DirBuilder::new().recursive(true).mode(0o700).create(&self.dir)?;
        let path = self.dir.join(format!("{}.jsonl", day.format("%Y-%m-%d")));
        OpenOptions::new().create(true).append(true).mode(0o600).open(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use std::os::unix::fs::PermissionsExt;

    fn record(at: DateTime<Local>) -> ActionRecord {
        ActionRecord {
            ts: timestamp(at),
            mode: "command".into(),
            text: "what time is it".into(),
            edited: false,
            tool: "get_datetime".into(),
            args: serde_json::json!({}),
            side_effect: SideEffect::ReadOnly,
            requires_confirmation: false,
            confirmed: None,
            ok: true,
            result: "2026-11-30T12:00:00+01:00".into(),
            latency_ms: 412,
            by: "model".into(),
            outside: None,
        }
    }

    #[test]
    fn records_are_lines_with_exactly_the_audit_fields() {
        let dir = tempfile::tempdir().unwrap();
        let at = Local.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap();
        let mut log = AuditLog::new(dir.path().join("audit"));
        log.append(&record(at), at).unwrap();
        log.append(&SpeakerRecord::name("spk_0001", "Efren", at), at).unwrap();

        let text = std::fs::read_to_string(dir.path().join("audit/2026-11-30.jsonl")).unwrap();
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 2);
        let keys: Vec<&str> = lines[0].as_object().unwrap().keys().map(String::as_str).collect();
        let mut expected = [
            "ts",
            "mode",
            "text",
            "edited",
            "tool",
            "args",
            "side_effect",
            "requires_confirmation",
            "confirmed",
            "ok",
            "result",
            "latency_ms",
            "by",
        ];
        let mut keys_sorted = keys.clone();
        keys_sorted.sort_unstable();
        expected.sort_unstable();
        assert_eq!(keys_sorted, expected);
        assert_eq!(lines[0]["confirmed"], Value::Null);
        assert_eq!(lines[0]["side_effect"], "read_only");
        assert_eq!(
            lines[1],
            serde_json::json!({"ts": timestamp(at), "mode": "speaker", "action": "name", "speaker_id": "spk_0001", "name": "Efren"})
        );
    }

    #[test]
    fn speaker_records_carry_only_the_fields_of_their_action() {
        let at = Local.with_ymd_and_hms(2026, 12, 3, 10, 0, 0).unwrap();
        let line = |record: &SpeakerRecord| serde_json::to_value(record).unwrap();
        let ts = timestamp(at);
        assert_eq!(
            line(&SpeakerRecord::forget("spk_0003", at)),
            serde_json::json!({"ts": ts, "mode": "speaker", "action": "forget", "speaker_id": "spk_0003"})
        );
        assert_eq!(
            line(&SpeakerRecord::merge("spk_0004", "spk_0001", at)),
            serde_json::json!({"ts": ts, "mode": "speaker", "action": "merge", "speaker_id": "spk_0004", "into": "spk_0001"})
        );
    }

    #[test]
    fn the_log_is_private_and_rolls_over_at_midnight() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = AuditLog::new(dir.path().join("audit"));
        let day1 = Local.with_ymd_and_hms(2026, 11, 30, 23, 59, 59).unwrap();
        let day2 = Local.with_ymd_and_hms(2026, 12, 1, 0, 0, 1).unwrap();
        log.append(&record(day1), day1).unwrap();
        log.append(&record(day2), day2).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir.path().join("audit")), 0o700);
        for day in ["2026-11-30", "2026-12-01"] {
            let file = dir.path().join(format!("audit/{day}.jsonl"));
            assert_eq!(mode(&file), 0o600);
            assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), 1);
        }
    }
}
