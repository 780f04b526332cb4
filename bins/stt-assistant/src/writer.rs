//! The writes that block (the speaker names file, the speaker edits file and the chat session,
//! each saved whole with an fsync; audit appends; deleting the session on `/new`)
//! on a thread of their own, in the order they were asked for, so the assistant's loop never
//! waits on a disk. A failure comes back to the loop as a [`Failed`] report, which it
//! publishes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use stt_proto::speaker_files::{SpeakerEditOp, SpeakerEdits};
use stt_tools::{ActionRecord, AuditLog, DictationRecord, SpeakerRecord};

use crate::lane::{self, Jobs, Sink, Thread};
use crate::names;
use crate::session::{self, Session};

/// One write.
#[derive(Debug)]
enum Write {
    Names(BTreeMap<String, String>),
    Edit(SpeakerEditOp),
    Session(PathBuf, Box<Session>),
    ForgetSession(PathBuf),
    Action(Box<ActionRecord>),
    Speaker(SpeakerRecord),
    Dictation(DictationRecord),
    Wake(PathBuf, crate::wake::Saved),
}

/// A write that failed, worded for a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failed {
    pub message: String,
}

/// The loop's handle on the writer thread. Dropping it lets the thread finish what was asked
/// and end; [`Writer::close`] also waits for that.
#[derive(Debug)]
pub struct Writer {
    tx: Jobs<Write>,
    thread: Thread,
}

impl Writer {
    /// Lets the thread finish every write asked for, and waits for it (blocking).
    pub fn close(self) {
        drop(self.tx);
        self.thread.join();
    }

    /// How many writes wait for the thread, for `status`.
    pub fn gauge(&self) -> lane::Gauge {
        self.tx.gauge()
    }

    /// Saves `names` to the names file, replacing it.
    pub fn save_names(&self, names: BTreeMap<String, String>) {
        self.send(Write::Names(names));
    }

    /// Appends `op` to the speaker edits file, for the daemon to apply.
    pub fn edit_speakers(&self, op: SpeakerEditOp) {
        self.send(Write::Edit(op));
    }

    /// Saves the chat session at `path`, replacing the file.
    pub fn save_session(&self, path: PathBuf, session: Session) {
        self.send(Write::Session(path, Box::new(session)));
    }

    /// Deletes the chat session file at `path`.
    pub fn forget_session(&self, path: PathBuf) {
        self.send(Write::ForgetSession(path));
    }

    /// Saves the next wake-up and the quiet asked for at `path`, replacing the file.
    pub fn save_wake(&self, path: PathBuf, saved: crate::wake::Saved) {
        self.send(Write::Wake(path, saved));
    }

    /// Appends a tool call's record to the audit log (when it is on).
    pub fn audit_action(&self, record: ActionRecord) {
        self.send(Write::Action(Box::new(record)));
    }

    /// Appends a speaker's new name to the audit log (when it is on).
    pub fn audit_speaker(&self, record: SpeakerRecord) {
        self.send(Write::Speaker(record));
    }

    /// Appends dictation turned on or off to the audit log (when it is on).
    pub fn audit_dictation(&self, record: DictationRecord) {
        self.send(Write::Dictation(record));
    }

    fn send(&self, write: Write) {
        if !self.tx.send(write) {
            tracing::error!("the writer thread is gone; a write was lost");
        }
    }
}

/// Where the speaker files are: names given, and edits for the daemon
/// ([`stt_proto::speaker_files`]).
#[derive(Debug, Clone)]
pub struct SpeakerFiles {
    pub names: PathBuf,
    pub edits: PathBuf,
}

/// Starts the writer thread: speaker names and edits to `speakers`, audit records to `audit`
/// (none: not kept); failures to `failed`.
pub fn spawn(
    speakers: SpeakerFiles,
    mut audit: Option<AuditLog>,
    failed: Sink<Failed>,
) -> std::io::Result<Writer> {
    let (tx, thread) = lane::start("stt-writer", move |rx: lane::Queue<Write>| {
        for write in &rx {
            let now = chrono::Local::now();
            let outcome = match (&write, audit.as_mut()) {
                (Write::Names(names), _) => names::save(&speakers.names, names).map_err(|e| {
                    format!(
                        "speaker names are kept until the assistant restarts: cannot save them \
                         to {}: {e}",
                        speakers.names.display()
                    )
                }),
                (Write::Edit(op), _) => append_edit(&speakers.edits, op.clone(), now).map_err(|e| {
                    let (verb, id) = match op {
                        SpeakerEditOp::Forget { speaker_id } => ("forget", speaker_id),
                        SpeakerEditOp::Merge { speaker_id, .. } => ("merge", speaker_id),
                    };
                    format!(
                        "stt-daemon was not told to {verb} {id}: cannot write {}: {e}; once that \
                         is fixed, restart the assistant and run `stt-ctl speaker-{verb}` again",
                        speakers.edits.display()
                    )
                }),
                (Write::Session(path, session), _) => session::save(path, session).map_err(|e| {
                    format!(
                        "the conversation is kept until the assistant restarts: cannot \
                             save it to {}: {e}",
                        path.display()
                    )
                }),
                (Write::ForgetSession(path), _) => session::remove(path).map_err(|e| {
                    format!("cannot delete the saved conversation {}: {e}", path.display())
                }),
                (Write::Wake(path, saved), _) => serde_json::to_vec_pretty(saved)
                    .map_err(std::io::Error::other)
                    .and_then(|json| names::write_private(path, &json))
                    .map_err(|e| {
                        format!(
                            "the next wake-up is kept until the assistant restarts: cannot save \
                             it to {}: {e}",
                            path.display()
                        )
                    }),
                (Write::Action(record), Some(log)) => log.append(record, now).map_err(|e| {
                    format!("cannot write the audit log in '{}': {e}", log.dir().display())
                }),
                (Write::Speaker(record), Some(log)) => log.append(record, now).map_err(|e| {
                    format!("cannot write the audit log in '{}': {e}", log.dir().display())
                }),
                (Write::Dictation(record), Some(log)) => log.append(record, now).map_err(|e| {
                    format!("cannot write the audit log in '{}': {e}", log.dir().display())
                }),
                (Write::Action(_) | Write::Speaker(_) | Write::Dictation(_), None) => Ok(()),
            };
            if let Err(message) = outcome {
                tracing::warn!("{message}");
                failed.send(Failed { message });
            }
        }
    })?;
    Ok(Writer { tx, thread })
}

/// Appends `op` to the edits file at `path`: the file as it is (none yet: no edits; one that
/// does not parse is reported and replaced, since the sequence numbers go on growing without
/// it), the edit with the next number, written whole (0600).
fn append_edit(
    path: &Path,
    op: SpeakerEditOp,
    now: chrono::DateTime<chrono::Local>,
) -> std::io::Result<()> {
    let mut edits = match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice::<SpeakerEdits>(&bytes).unwrap_or_else(|e| {
            tracing::warn!("starting a new {}: the old one does not parse: {e}", path.display());
            SpeakerEdits::default()
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => SpeakerEdits::default(),
        Err(e) => return Err(e),
    };
    let now_ms = u64::try_from(now.timestamp_millis()).unwrap_or(0);
    let seq = edits.push(op, stt_tools::audit::timestamp(now), now_ms);
    let json = serde_json::to_vec_pretty(&edits).map_err(std::io::Error::other)?;
    names::write_private(path, &json)?;
    tracing::info!(seq, "speaker edit written to {}", path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[test]
    fn writes_land_in_order_and_a_failure_comes_back_worded() {
        let dir = tempfile::tempdir().unwrap();
        let failures: Arc<Mutex<Vec<Failed>>> = Arc::default();
        let seen = Arc::clone(&failures);
        // The names file's directory is a file: saving must fail, and say where.
        let blocker = dir.path().join("blocker");
        std::fs::write(&blocker, b"").unwrap();
        let writer = spawn(
            SpeakerFiles {
                names: blocker.join(names::FILE),
                edits: dir.path().join(stt_proto::speaker_files::EDITS_FILE),
            },
            Some(AuditLog::new(dir.path().join("audit"))),
            Sink::new(move |f| seen.lock().unwrap().push(f)),
        )
        .unwrap();
        writer.audit_speaker(SpeakerRecord::name("spk_0001", "Efren", chrono::Local::now()));
        writer.audit_speaker(SpeakerRecord::name("spk_0002", "Ana", chrono::Local::now()));
        writer.save_names(BTreeMap::from([("spk_0001".into(), "Efren".into())]));
        writer.close();
        let failed = failures.lock().unwrap().clone();
        assert_eq!(failed.len(), 1, "{failed:?}");
        assert!(failed[0].message.contains("blocker"), "{failed:?}");
        let day = std::fs::read_dir(dir.path().join("audit")).unwrap().next().unwrap().unwrap();
        let text = std::fs::read_to_string(day.path()).unwrap();
        let ids: Vec<&str> = text.lines().filter_map(|l| l.split("spk_").nth(1)).collect();
        assert_eq!(ids.len(), 2);
        assert!(ids[0].starts_with("0001") && ids[1].starts_with("0002"), "{text}");
    }

    #[test]
    fn edits_are_appended_privately_numbered_and_survive_a_damaged_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stt").join(stt_proto::speaker_files::EDITS_FILE);
        let forget = SpeakerEditOp::Forget { speaker_id: "spk_0003".into() };
        let merge = SpeakerEditOp::Merge { speaker_id: "spk_0004".into(), into: "spk_0001".into() };
        let read =
            || -> SpeakerEdits { serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap() };
        append_edit(&path, forget.clone(), chrono::Local::now()).unwrap();
        append_edit(&path, merge.clone(), chrono::Local::now()).unwrap();
        let edits = read();
        let ops: Vec<_> = edits.edits.iter().map(|e| e.op.clone()).collect();
        assert_eq!(ops, [forget.clone(), merge]);
        assert!(edits.edits[1].seq > edits.edits[0].seq, "{edits:?}");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);

        std::fs::write(&path, b"{half a fi").unwrap();
        append_edit(&path, forget.clone(), chrono::Local::now()).unwrap();
        let fresh = read();
        assert_eq!(fresh.edits.len(), 1, "a new file: {fresh:?}");
        assert_eq!(fresh.edits[0].op, forget);
    }
}
