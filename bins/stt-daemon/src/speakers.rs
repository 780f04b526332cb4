//! The speaker lane: who said each segment, beside its transcription rather than in its way.
//!
//! ```text
//! vad thread ──Work──▶ speaker thread ──▶ Results ◀── whisper thread (takes its seg's)
//!  (preview at a pause,  embed (CAM++), roster,          publishes the transcript
//!   final at speech end) `speakers` on a change          with who spoke
//! ```
//!
//! The embedding (about 14 ms per second of speech on one thread) is started *before* the
//! segment ends: once its speech has paused for the segment's tail (300 ms), the vad thread
//! knows exactly what the segment will hold unless speech resumes ([`stt_vad::Settled`]) and
//! hands it over ([`Lane::preview`]); the embedding then runs during the rest of the VAD's
//! hangover, while the machine is otherwise idle, rather than beside whisper, whose threads
//! it would slow (measured: run at the segment's end on 2 cores, it added 40 ms to the median
//! speech_stop → transcript). At the end ([`Lane::submit`]) the preview's embedding is used
//! when the segment is what was previewed, and the roster decides (microseconds); a segment
//! whose speech resumed, or that was never previewed, is embedded then. The whisper thread
//! waits for the speaker at most [`WAIT`]: a transcript is never held back longer (it goes
//! out with `speaker_status: none`, and a warning says the lane was late). The roster lives
//! on the speaker thread alone, so nothing is shared but the results.
//!
//! Names and edits reach the roster through the files the assistant writes
//! (`stt_proto::speaker_files`): the speaker thread checks them whenever it is idle for
//! [`POLL`] and before each segment, reading a file only when its modification time or
//! length changed. A `speakers` event goes out on mint, confirm, prune, rename, forget and
//! merge, never on an adapt.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use stt_bus::Publisher;
use stt_config::Config;
use stt_proto::speaker_files::{EDITS_FILE, NAMES_FILE, SpeakerEditOp, SpeakerEdits};
use stt_proto::{DaemonEvent, ErrorCode, ErrorMsg, Speaker, SpeakerState, SpeakerStatus, Speakers};
use stt_speaker::embed::Embedder;
use stt_speaker::roster::{self, Roster, Rules, State, Status};

/// The longest a transcript waits for its speaker once transcribed.
pub const WAIT: Duration = Duration::from_millis(20);

/// How often an idle lane looks at the names and edits files.
const POLL: Duration = Duration::from_millis(250);

/// Segments that may wait for the lane; beyond, a segment is not identified (its transcript
/// says `none`) rather than the vad thread waiting.
const QUEUE: usize = 16;

/// Results kept for segments whose transcript never came to take them (dropped, silent).
const KEPT: u64 = 64;

/// Who spoke one segment, as its transcript carries it.
#[derive(Debug, Clone, PartialEq)]
pub struct Who {
    pub id: Option<String>,
    pub status: SpeakerStatus,
    pub name: Option<String>,
    pub score: Option<f32>,
}

impl Who {
    pub const NONE: Who = Who { id: None, status: SpeakerStatus::None, name: None, score: None };
}

/// What the lane is given.
#[derive(Debug)]
enum Work {
    /// The open segment as it will close unless speech resumes: embed it now.
    Preview { seg_id: u64, samples: Vec<f32> },
    /// The segment closed: who spoke it.
    Final { seg_id: u64, samples: Vec<f32>, speech_s: f64 },
}

/// The lane's side the vad and whisper threads hold.
#[derive(Debug, Clone)]
pub struct Lane {
    tx: SyncSender<Work>,
    results: Arc<Results>,
    min_segment_s: f64,
}

#[derive(Debug, Default)]
struct Results {
    done: Mutex<HashMap<u64, Who>>,
    ready: Condvar,
}

impl Results {
    fn put(&self, seg_id: u64, who: Who) {
        let mut done = self.done.lock().unwrap_or_else(PoisonError::into_inner);
        done.insert(seg_id, who);
        done.retain(|id, _| id + KEPT > seg_id);
        self.ready.notify_all();
    }
}

impl Lane {
    /// Loads the model and the roster and starts the speaker thread; `None` when `[speakers]`
    /// is off. A missing or broken model is an error that names the fix: the daemon does not
    /// start without what it was told to do. What was wrong with the roster's files comes
    /// back as warnings (logged here), for the caller to publish once someone listens.
    pub fn start(
        config: &Config,
        publisher: &Publisher,
    ) -> anyhow::Result<(Option<Lane>, Vec<String>)> {
        let c = &config.speakers;
        if !c.enabled {
            return Ok((None, Vec::new()));
        }
        let model = stt_config::dirs::model_path(&c.model)?;
        let runtime = stt_onnx::runtime_library(&stt_config::dirs::models_dir()?);
        let embedder = Embedder::load(&model, &runtime)
            .with_context(|| "[speakers].enabled = true, but the speaker model cannot be used")?;
        let data = stt_config::dirs::data_dir()?;
        let rules = Rules {
            match_threshold: c.match_threshold as f32,
            uncertain_threshold: c.uncertain_threshold as f32,
            confirm_s: c.confirm_s,
            max_speakers: c.max_speakers as usize,
        };
        let dir = data.join("speakers");
        let mut roster = Roster::open(&dir, rules)?;
        let warnings: Vec<String> = std::mem::take(&mut roster.warnings)
            .into_iter()
            .map(|w| format!("speaker roster: {w}"))
            .collect();
        for warning in &warnings {
            tracing::warn!("{warning}");
        }
        tracing::info!(
            model = %model.display(),
            roster = %dir.display(),
            speakers = roster.speakers().len(),
            "speaker identification on"
        );
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
        let results = Arc::new(Results::default());
        let mut worker = Worker {
            embedder,
            roster,
            names: Watched::new(data.join(NAMES_FILE)),
            preview: None,
            data: data.clone(),
            edits: Watched::new(data.join(EDITS_FILE)),
            results: Arc::clone(&results),
            publisher: publisher.clone(),
        };
        // Names and edits made while the daemon was down count from the start; the roster is
        // retained, so every subscriber, whenever it comes, is sent it after the hello.
        worker.check_files(true);
        worker.announce();
        std::thread::Builder::new()
            .name("speakers".into())
            .spawn(move || worker.run(&rx))
            .context("cannot start the speaker thread")?;
        Ok((Some(Lane { tx, results, min_segment_s: c.min_segment_s }), warnings))
    }

    /// Hands the lane the open segment `seg_id` as it will close unless speech resumes
    /// (from the vad thread, at a pause): it is embedded at once. Dropped when too short or
    /// when the lane is busy.
    pub fn preview(&self, seg_id: u64, samples: Vec<f32>, speech_s: f64) {
        if speech_s >= self.min_segment_s {
            let _ = self.tx.try_send(Work::Preview { seg_id, samples });
        }
    }

    /// Hands the lane a closed segment (from the vad thread, before whisper gets it). Too
    /// short a segment, or a full queue, is settled at once as `none`.
    pub fn submit(&self, seg_id: u64, samples: &[f32], speech_s: f64) {
        if speech_s < self.min_segment_s {
            return self.results.put(seg_id, Who::NONE);
        }
        let work = Work::Final { seg_id, samples: samples.to_vec(), speech_s };
        match self.tx.try_send(work) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                tracing::warn!(
                    seg_id,
                    "the speaker lane is {QUEUE} segments behind: not identified"
                );
                self.results.put(seg_id, Who::NONE);
            }
            Err(TrySendError::Disconnected(_)) => self.results.put(seg_id, Who::NONE),
        }
    }

    /// Who spoke `seg_id`: waits for it at most [`WAIT`] (from the whisper thread, with the
    /// transcript in hand). Late is `none`.
    pub fn take(&self, seg_id: u64) -> Who {
        let deadline = Instant::now() + WAIT;
        let mut done = self.results.done.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(who) = done.remove(&seg_id) {
                return who;
            }
            let now = Instant::now();
            if now >= deadline {
                tracing::warn!(
                    seg_id,
                    "the speaker lane was late: transcript sent without its speaker"
                );
                return Who::NONE;
            }
            done = self
                .results
                .ready
                .wait_timeout(done, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

/// The speaker thread's state.
struct Worker {
    embedder: Embedder,
    roster: Roster,
    names: Watched,
    edits: Watched,
    /// The last preview's segment, length and embedding (`None`: too little to embed).
    preview: Option<(u64, usize, Option<Vec<f32>>)>,
    /// The data directory, which sample paths are given relative to.
    data: PathBuf,
    results: Arc<Results>,
    publisher: Publisher,
}

impl Worker {
    fn run(&mut self, rx: &Receiver<Work>) {
        loop {
            match rx.recv_timeout(POLL) {
                Ok(Work::Preview { seg_id, samples }) => {
                    let started = Instant::now();
                    let embedding = self.embed(seg_id, &samples);
                    tracing::debug!(seg_id, embed_ms = ms(started), "speaker embedded at a pause");
                    self.preview = Some((seg_id, samples.len(), embedding));
                }
                Ok(Work::Final { seg_id, samples, speech_s }) => {
                    self.check_files(false);
                    let who = self.identify(seg_id, &samples, speech_s);
                    self.results.put(seg_id, who);
                    // The disk after the answer: a transcript never waits on an fsync.
                    if let Err(e) = self.roster.persist(&samples) {
                        publish_error(&self.publisher, e.to_string());
                    }
                }
                Err(RecvTimeoutError::Timeout) => self.check_files(false),
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    /// `samples`' embedding; `None` for too little audio, or when the model failed (said).
    fn embed(&mut self, seg_id: u64, samples: &[f32]) -> Option<Vec<f32>> {
        match self.embedder.embed(samples) {
            Ok(embedding) => embedding,
            Err(e) => {
                publish_error(&self.publisher, format!("segment {seg_id}: {e}"));
                None
            }
        }
    }

    fn identify(&mut self, seg_id: u64, samples: &[f32], speech_s: f64) -> Who {
        let started = Instant::now();
        let previewed = match self.preview.take() {
            Some((id, len, embedding)) if id == seg_id && len == samples.len() => Some(embedding),
            _ => None,
        };
        let early = previewed.is_some();
        let embedding = match previewed {
            Some(embedding) => embedding,
            None => self.embed(seg_id, samples),
        };
        let Some(embedding) = embedding else { return Who::NONE };
        // The embedding's time when it was made here (0 when the preview had it).
        let embed_ms = if early { 0.0 } else { ms(started) };
        let at = now_rfc3339();
        let found = self.roster.identify(&embedding, speech_s, &at);
        tracing::debug!(
            seg_id,
            speaker = %found.id,
            status = ?found.status,
            score = ?found.score,
            early,
            embed_ms,
            "speaker identified"
        );
        for id in &found.pruned {
            tracing::info!(
                "speaker {id} pruned: the least heard unnamed speaker, beyond [speakers].max_speakers"
            );
        }
        if found.changed {
            self.announce();
        }
        let status = match found.status {
            Status::Matched => SpeakerStatus::Matched,
            Status::Uncertain => SpeakerStatus::Uncertain,
            Status::Unknown => SpeakerStatus::Unknown,
        };
        Who { id: Some(found.id), status, name: found.name, score: found.score }
    }

    /// Applies names and edits whose files changed (all of them when `force`), announcing
    /// the roster when that changed it.
    fn check_files(&mut self, force: bool) {
        let mut changed = false;
        if let Some(edits) = self.edits.changed(force).and_then(|b| self.parse_edits(&b)) {
            let applied = self.roster.edits_applied();
            for edit in edits.after(applied) {
                let (what, result) = match &edit.op {
                    SpeakerEditOp::Forget { speaker_id } => {
                        (format!("forgot {speaker_id}"), self.roster.forget(speaker_id, edit.seq))
                    }
                    SpeakerEditOp::Merge { speaker_id, into } => (
                        format!("merged {speaker_id} into {into}"),
                        self.roster.merge(speaker_id, into, edit.seq),
                    ),
                };
                match result {
                    Ok(true) => {
                        tracing::info!("speaker roster: {what}");
                        changed = true;
                    }
                    Ok(false) => tracing::info!("speaker roster: {what}: no such speaker here"),
                    Err(e) => publish_error(&self.publisher, e.to_string()),
                }
            }
        }
        if let Some(bytes) = self.names.changed(force) {
            match serde_json::from_slice::<BTreeMap<String, String>>(&bytes) {
                Ok(names) => match self.roster.set_names(&names) {
                    Ok(renamed) => changed |= renamed,
                    Err(e) => publish_error(&self.publisher, e.to_string()),
                },
                Err(e) => tracing::warn!(
                    "ignoring the speaker names in {}: {e}",
                    self.names.path.display()
                ),
            }
        }
        if changed {
            self.announce();
        }
    }

    fn parse_edits(&self, bytes: &[u8]) -> Option<SpeakerEdits> {
        serde_json::from_slice(bytes)
            .map_err(|e| {
                tracing::warn!("ignoring the speaker edits in {}: {e}", self.edits.path.display());
            })
            .ok()
    }

    /// Publishes the roster, retained for later subscribers.
    fn announce(&self) {
        let event = DaemonEvent::Speakers(speakers(self.roster.speakers(), &self.data));
        self.publisher.publish_retained("speakers", &event);
    }
}

/// The roster as the `speakers` event carries it: samples relative to `data`, the data
/// directory (absolute when elsewhere).
pub fn speakers<'a>(list: impl Iterator<Item = &'a roster::Speaker>, data: &Path) -> Speakers {
    Speakers {
        speakers: list
            .map(|s| Speaker {
                id: s.id.clone(),
                name: s.name.clone(),
                status: match s.status {
                    State::Provisional => SpeakerState::Provisional,
                    State::Confirmed => SpeakerState::Confirmed,
                },
                cumulative_s: (s.cumulative_s * 100.0).round() / 100.0,
                sample_path: s
                    .sample_path
                    .as_ref()
                    .map(|p| p.strip_prefix(data).unwrap_or(p).display().to_string()),
                created_at: s.created_at.clone(),
            })
            .collect(),
    }
}

/// A file read again only when its modification time or length changed.
struct Watched {
    path: PathBuf,
    seen: Option<(SystemTime, u64)>,
}

impl Watched {
    fn new(path: PathBuf) -> Self {
        Watched { path, seen: None }
    }

    /// The file's bytes when it changed since the last call (or always, when `force`);
    /// `None` when unchanged or missing.
    fn changed(&mut self, force: bool) -> Option<Vec<u8>> {
        let meta = std::fs::metadata(&self.path).ok()?;
        let stamp = (meta.modified().ok()?, meta.len());
        if !force && self.seen == Some(stamp) {
            return None;
        }
        self.seen = Some(stamp);
        read(&self.path)
    }
}

fn read(path: &Path) -> Option<Vec<u8>> {
    std::fs::read(path).map_err(|e| tracing::warn!("cannot read {}: {e}", path.display())).ok()
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

fn now_rfc3339() -> String {
    chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
}

fn publish_error(publisher: &Publisher, message: String) {
    tracing::warn!("{message}");
    publisher.publish(&DaemonEvent::Error(ErrorMsg::new(ErrorCode::Speaker, message)));
}
