//! The writes that block (the speaker names file, the speaker edits file and the chat session,
//! each saved whole with an fsync; audit appends; deleting the session on `/new`)
//! on a thread of their own, in the order they were asked for, so the assistant's loop never
//! waits on a disk. A failure comes back to the loop as a [`Report`], which it publishes; on
//! a full disk the writes wait, in order, until there is room ([`spawn`]).

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

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
    Timers(PathBuf, crate::timers::Saved),
}

/// What the writer tells the loop, worded for a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// A write failed, and is dropped.
    Failed { message: String },
    /// The disk is full: this write, and those after it, wait for room.
    Full { message: String },
    /// Room again: every write that waited is written.
    Room,
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

    /// Saves the timers waiting at `path`, replacing the file.
    pub fn save_timers(&self, path: PathBuf, saved: crate::timers::Saved) {
        self.send(Write::Timers(path, saved));
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

/// How often writes that wait for room are tried again.
const RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// The most writes that wait for room; past it the oldest are dropped (said in the log).
const MAX_WAITING: usize = 10_000;

/// Starts the writer thread: speaker names and edits to `speakers`, audit records to `audit`
/// (none: not kept); what goes wrong to `reports`.
///
/// A write that fails because the disk is full waits, with every write after it, in the order
/// asked (a later save of the same file replaces a waiting one); they are tried again every
/// [`RETRY`], and the loop is told once when they wait and once when they are written. Any
/// other failure is told, and that write dropped.
pub fn spawn(
    speakers: SpeakerFiles,
    mut audit: Option<AuditLog>,
    reports: Sink<Report>,
) -> std::io::Result<Writer> {
    let (tx, thread) = lane::start("stt-writer", move |rx: lane::Queue<Write>| {
        let mut waiting: VecDeque<(Write, chrono::DateTime<chrono::Local>)> = VecDeque::new();
        let mut full = false;
        loop {
            let next = if waiting.is_empty() {
                match rx.recv() {
                    Ok(write) => Some(write),
                    // Asked for nothing more, and nothing waits: done.
                    Err(mpsc::RecvError) => break,
                }
            } else {
                match rx.recv_timeout(RETRY) {
                    Ok(write) => Some(write),
                    Err(mpsc::RecvTimeoutError::Timeout) => None,
                    Err(mpsc::RecvTimeoutError::Disconnected) => {
                        tracing::error!(
                            writes = waiting.len(),
                            "the assistant stops while the disk is full: these writes are lost"
                        );
                        break;
                    }
                }
            };
            if let Some(write) = next {
                if let Some(target) = write.replaces() {
                    waiting.retain(|(w, _)| w.replaces() != Some(target));
                }
                waiting.push_back((write, chrono::Local::now()));
                if waiting.len() > MAX_WAITING {
                    waiting.pop_front();
                    tracing::warn!("the disk is still full: the oldest waiting write is dropped");
                }
            }
            while let Some((write, at)) = waiting.front() {
                match write.run(&speakers, audit.as_mut(), *at) {
                    Ok(()) => {
                        waiting.pop_front();
                    }
                    Err((what, e)) if is_full(&e) => {
                        if !full {
                            full = true;
                            let message = format!(
                                "{what}: the disk is full ({e}). Free some space: it is written \
                                 as soon as there is room, with what comes after it"
                            );
                            tracing::warn!("{message}");
                            reports.send(Report::Full { message });
                        }
                        break;
                    }
                    Err((what, e)) => {
                        waiting.pop_front();
                        let message = format!("{what}: {e}");
                        tracing::warn!("{message}");
                        reports.send(Report::Failed { message });
                    }
                }
            }
            if full && waiting.is_empty() {
                full = false;
                tracing::info!("the disk has room again: every waiting write is written");
                reports.send(Report::Room);
            }
        }
    })?;
    Ok(Writer { tx, thread })
}

/// Whether `e` says the disk is full (or the user's quota spent): the same write works once
/// there is room.
fn is_full(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(28 | 122))
}

impl Write {
    /// The file a write replaces whole: a later one of it makes a waiting one needless.
    fn replaces(&self) -> Option<&Path> {
        match self {
            Write::Session(path, _) | Write::ForgetSession(path) => Some(path),
            Write::Wake(path, _) | Write::Timers(path, _) => Some(path),
            // The names file's path is the writer's own: one target.
            Write::Names(_) => Some(Path::new("names")),
            Write::Edit(_) | Write::Action(_) | Write::Speaker(_) | Write::Dictation(_) => None,
        }
    }

    /// Does the write, asked for at `at`; on failure, what could not be done (for a person)
    /// and why.
    fn run(
        &self,
        speakers: &SpeakerFiles,
        audit: Option<&mut AuditLog>,
        at: chrono::DateTime<chrono::Local>,
    ) -> Result<(), (String, std::io::Error)> {
        let audit_failed =
            |log: &AuditLog| format!("cannot write the audit log in '{}'", log.dir().display());
        match (self, audit) {
            (Write::Names(names), _) => names::save(&speakers.names, names).map_err(|e| {
                let what = format!(
                    "speaker names are kept until the assistant restarts: cannot save them to {}",
                    speakers.names.display()
                );
                (what, e)
            }),
            (Write::Edit(op), _) => append_edit(&speakers.edits, op.clone(), at).map_err(|e| {
                let (verb, id) = match op {
                    SpeakerEditOp::Forget { speaker_id } => ("forget", speaker_id),
                    SpeakerEditOp::Merge { speaker_id, .. } => ("merge", speaker_id),
                };
                let what = format!(
                    "stt-daemon was not told to {verb} {id}: cannot write {}; once that is \
                     fixed, restart the assistant and run `stt-ctl speaker-{verb}` again",
                    speakers.edits.display()
                );
                (what, e)
            }),
            (Write::Session(path, session), _) => session::save(path, session).map_err(|e| {
                let what = format!(
                    "the conversation is kept until the assistant restarts: cannot save it to {}",
                    path.display()
                );
                (what, e)
            }),
            (Write::ForgetSession(path), _) => session::remove(path).map_err(|e| {
                (format!("cannot delete the saved conversation {}", path.display()), e)
            }),
            (Write::Wake(path, saved), _) => save_json(path, saved).map_err(|e| {
                let what = format!(
                    "the next wake-up is kept until the assistant restarts: cannot save it to {}",
                    path.display()
                );
                (what, e)
            }),
            (Write::Timers(path, saved), _) => save_json(path, saved).map_err(|e| {
                let what = format!(
                    "the timers are kept until the assistant restarts: cannot save them to {}",
                    path.display()
                );
                (what, e)
            }),
            (Write::Action(record), Some(log)) => {
                log.append(record, at).map_err(|e| (audit_failed(log), e))
            }
            (Write::Speaker(record), Some(log)) => {
                log.append(record, at).map_err(|e| (audit_failed(log), e))
            }
            (Write::Dictation(record), Some(log)) => {
                log.append(record, at).map_err(|e| (audit_failed(log), e))
            }
            (Write::Action(_) | Write::Speaker(_) | Write::Dictation(_), None) => Ok(()),
        }
    }
}

/// Writes `value` as JSON to `path`, privately, whole.
fn save_json(path: &Path, value: &impl serde::Serialize) -> std::io::Result<()> {
    let json = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
    names::write_private(path, &json)
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
        let failures: Arc<Mutex<Vec<Report>>> = Arc::default();
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
        let Report::Failed { message } = &failed[0] else { panic!("{failed:?}") };
        assert!(message.contains("blocker"), "{failed:?}");
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
