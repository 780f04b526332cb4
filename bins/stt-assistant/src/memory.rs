//! The memory lane: long-term memory (`stt_memory::Store`) and the text embedder on a thread
//! of their own, so the loop never waits on SQLite or a model.
//!
//! The loop captures what was said ([`Memory::turn`], [`Memory::close`]) without waiting,
//! and asks questions ([`Memory::ask`]) whose answers come back on a one-shot channel.
//! Between jobs (a batch every 200 ms at most) the thread embeds what has no vector yet, so
//! recall by meaning catches up in the background. It reports to the loop only what a person should
//! hear of: that memory is ready (and whether recall by meaning is on), or that it went off
//! for this session (the database could not be opened, or the disk failed under it): chat
//! and commands go on without it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use stt_embed::Embedder;
use stt_memory::{
    Hit, Item, ItemFilter, ItemId, Kind, MemoryError, Query, Role, SessionId, SessionKind, Stats,
    Store, Turn,
};

use crate::lane::Sink;

/// Where memory lives and what embeds.
#[derive(Debug, Clone)]
pub struct Settings {
    pub db: PathBuf,
    /// The embedding model's directory and the ONNX Runtime library; `None`: words only.
    pub embedder: Option<(PathBuf, PathBuf)>,
}

/// What the lane tells the loop.
#[derive(Debug, Clone, PartialEq)]
pub enum Report {
    /// The store is open. `meaning`: recall by meaning is on, or why not.
    Ready { stats: Stats, meaning: Result<(), String> },
    /// Memory is off until the assistant restarts, and why (with the fix).
    Off { why: String },
}

/// Which conversation an entry belongs to, as the loop names it: a chat (its session id) or
/// one command (its number).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Episode {
    Chat(u64),
    Command(u64),
}

/// A question for memory.
#[derive(Debug, Clone, PartialEq)]
pub enum Ask {
    /// Items and log entries for a text, best first.
    Search {
        text: String,
        limit: usize,
    },
    /// Items, newest first.
    List {
        kind: Option<Kind>,
        archived: bool,
        limit: usize,
    },
    Show(ItemId),
    Forget(ItemId),
    ForgetAll,
    Stats,
}

/// Memory's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Hits(Vec<Hit>),
    Items(Vec<Item>),
    Item(Box<Item>),
    Stats(Stats),
    /// Done; what to tell the person.
    Done(String),
    /// Not done; why, worded for a person.
    Failed(String),
}

enum Job {
    Turn { episode: Episode, role: Role, speaker: Option<String>, mode: String, text: String },
    Close(Episode),
    Ask(Ask, oneshot::Sender<Answer>),
}

/// The loop's handle on the memory thread; cheap to clone (jobs share one queue).
#[derive(Debug, Clone)]
pub struct Memory {
    tx: mpsc::Sender<Job>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Job::Turn { episode, role, .. } => write!(f, "Turn({episode:?}, {role:?})"),
            Job::Close(e) => write!(f, "Close({e:?})"),
            Job::Ask(ask, _) => write!(f, "Ask({ask:?})"),
        }
    }
}

impl Memory {
    /// Writes one entry of a conversation (opening its session on the first).
    pub fn turn(
        &self,
        episode: Episode,
        role: Role,
        speaker: Option<&str>,
        mode: &str,
        text: &str,
    ) {
        self.send(Job::Turn {
            episode,
            role,
            speaker: speaker.map(str::to_owned),
            mode: mode.to_owned(),
            text: text.to_owned(),
        });
    }

    /// Ends a conversation: its session waits for a dream.
    pub fn close(&self, episode: Episode) {
        self.send(Job::Close(episode));
    }

    /// Asks memory; the answer comes when the thread gets to it.
    pub async fn ask(&self, ask: Ask) -> Answer {
        let (tx, rx) = oneshot::channel();
        self.send(Job::Ask(ask, tx));
        rx.await.unwrap_or_else(|_| Answer::Failed("memory stopped".into()))
    }

    fn send(&self, job: Job) {
        if self.tx.send(job).is_err() {
            tracing::error!("the memory thread is gone");
        }
    }
}

/// How often the thread embeds a batch in the background (when there is anything to embed).
const IDLE: Duration = Duration::from_millis(200);
/// Texts embedded per background batch.
const BATCH: usize = 16;

/// Starts the memory thread. It opens the store and the embedder itself (a slow disk or model
/// never holds up the assistant's start) and reports `Ready` or `Off`.
pub fn spawn(settings: Settings, reports: Sink<Report>) -> std::io::Result<Memory> {
    let (tx, rx) = mpsc::channel::<Job>();
    std::thread::Builder::new().name("stt-memory".to_owned()).spawn(move || {
        let mut lane = Lane::open(&settings, &reports);
        let mut embedded = Instant::now();
        loop {
            match rx.recv_timeout(IDLE) {
                Ok(job) => lane.run(job, &reports),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            // A batch every IDLE at most, between jobs too: a steady stream of them (a long
            // chat, a viewer polling) must not starve recall by meaning.
            if embedded.elapsed() >= IDLE {
                lane.embed_some(&reports);
                embedded = Instant::now();
            }
        }
        if let Some(store) = lane.store.as_mut() {
            // Sessions still open are closed, so a dream reads them next time.
            if let Err(e) = store.close_open_sessions() {
                tracing::warn!("memory: cannot close the open sessions: {e}");
            }
        }
    })?;
    Ok(Memory { tx })
}

/// What the thread owns.
struct Lane {
    store: Option<Store>,
    off: String,
    embedder: Option<Embedder>,
    sessions: HashMap<Episode, SessionId>,
}

impl Lane {
    fn open(settings: &Settings, reports: &Sink<Report>) -> Lane {
        let mut lane =
            Lane { store: None, off: String::new(), embedder: None, sessions: HashMap::new() };
        let mut store = match Store::open(&settings.db) {
            Ok(store) => store,
            Err(e) => {
                lane.off = format!("memory is off: {e}");
                tracing::warn!("{}", lane.off);
                reports.send(Report::Off { why: lane.off.clone() });
                return lane;
            }
        };
        // Sessions a crash left open wait for a dream like any other.
        if let Err(e) = store.close_open_sessions() {
            tracing::warn!("memory: cannot close the sessions left open: {e}");
        }
        let meaning = match &settings.embedder {
            None => Err("no embedding model is configured ([memory].embedding_model)".to_owned()),
            Some((dir, runtime)) => match Embedder::load(dir, runtime) {
                Ok(embedder) => {
                    let model = embedder.model_id().to_owned();
                    lane.embedder = Some(embedder);
                    store.use_embeddings(&model, stt_embed::DIM).map_err(|e| e.to_string())
                }
                Err(e) => Err(e.to_string()),
            },
        };
        if let Err(why) = &meaning {
            tracing::info!("memory recalls by words only: {why}");
        }
        match store.stats() {
            Ok(stats) => reports.send(Report::Ready { stats, meaning }),
            Err(e) => {
                lane.turn_off(&e, reports);
                return lane;
            }
        }
        lane.store = Some(store);
        lane
    }

    /// Memory goes off for the session after a fault of the disk; anything else is only
    /// logged (one bad write is not a reason to stop remembering).
    fn fault(&mut self, e: &MemoryError, reports: &Sink<Report>) {
        if e.is_unavailable() {
            self.turn_off(e, reports);
        } else {
            tracing::warn!("memory: {e}");
        }
    }

    fn turn_off(&mut self, e: &MemoryError, reports: &Sink<Report>) {
        self.off = format!(
            "memory is off until the assistant restarts: {e} (chat and commands go on without it)"
        );
        tracing::warn!("{}", self.off);
        self.store = None;
        reports.send(Report::Off { why: self.off.clone() });
    }

    fn run(&mut self, job: Job, reports: &Sink<Report>) {
        match job {
            Job::Turn { episode, role, speaker, mode, text } => {
                let Some(store) = self.store.as_mut() else { return };
                let session = match self.sessions.get(&episode) {
                    Some(s) => Ok(*s),
                    None => {
                        let (kind, label) = match episode {
                            Episode::Chat(_) => (SessionKind::Chat, "chat"),
                            Episode::Command(_) => (SessionKind::Command, "command"),
                        };
                        store.open_session(kind, Some(label), None).inspect(|s| {
                            self.sessions.insert(episode, *s);
                        })
                    }
                };
                let turn = Turn {
                    speaker: speaker.as_deref(),
                    mode: Some(&mode),
                    ..Turn::new(role, &text)
                };
                if let Err(e) = session.and_then(|s| store.append(s, &turn)) {
                    self.fault(&e, reports);
                }
            }
            Job::Close(episode) => {
                let Some(session) = self.sessions.remove(&episode) else { return };
                let Some(store) = self.store.as_mut() else { return };
                if let Err(e) = store.close_session(session) {
                    self.fault(&e, reports);
                }
            }
            Job::Ask(ask, reply) => {
                let answer = self.answer(ask, reports);
                // The asker may have gone (a cancelled job); nothing to do then.
                let _ = reply.send(answer);
            }
        }
    }

    fn answer(&mut self, ask: Ask, reports: &Sink<Report>) -> Answer {
        let vector = match &ask {
            Ask::Search { text, .. } => self.embed_one(text),
            _ => None,
        };
        let Some(store) = self.store.as_mut() else { return Answer::Failed(self.off.clone()) };
        let result = match ask {
            Ask::Search { text, limit } => store
                .recall(&Query { vector: vector.as_deref(), limit, ..Query::new(&text) })
                .map(Answer::Hits),
            Ask::List { kind, archived, limit } => store
                .items(&ItemFilter { kind, archived, limit: Some(limit), ..ItemFilter::default() })
                .map(Answer::Items),
            Ask::Show(id) => store.item(id).map(|item| Answer::Item(Box::new(item))),
            Ask::Forget(id) => store.forget(id).map(|found| match found {
                true => Answer::Done(format!("forgot item {}", id.0)),
                false => Answer::Failed(format!(
                    "memory has no item {}: `stt-ctl memory list` shows the ids",
                    id.0
                )),
            }),
            Ask::ForgetAll => {
                self.sessions.clear();
                store.forget_all().map(|()| Answer::Done("forgot everything memory held".into()))
            }
            Ask::Stats => store.stats().map(Answer::Stats),
        };
        result.unwrap_or_else(|e| {
            let answer = Answer::Failed(e.to_string());
            self.fault(&e, reports);
            answer
        })
    }

    fn embed_one(&mut self, text: &str) -> Option<Vec<f32>> {
        let embedder = self.embedder.as_mut()?;
        match embedder.embed(&[text]) {
            Ok(mut v) => v.pop(),
            Err(e) => {
                tracing::warn!("memory: cannot embed a query: {e}");
                None
            }
        }
    }

    /// Embeds one batch of what has no vector yet.
    fn embed_some(&mut self, reports: &Sink<Report>) {
        let (Some(store), Some(embedder)) = (self.store.as_mut(), self.embedder.as_mut()) else {
            return;
        };
        let missing = match store.missing_vectors(BATCH) {
            Ok(m) if m.is_empty() => return,
            Ok(m) => m,
            Err(e) => return self.fault(&e, reports),
        };
        let texts: Vec<&str> = missing.iter().map(|(_, t)| t.as_str()).collect();
        match embedder.embed(&texts) {
            Ok(vectors) => {
                let batch: Vec<_> = missing.iter().map(|(t, _)| *t).zip(vectors).collect();
                if let Err(e) = store.put_vectors(&batch) {
                    self.fault(&e, reports);
                }
            }
            Err(e) => {
                tracing::warn!("memory: embedding failed, recall goes on by words: {e}");
                self.embedder = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    fn reports() -> (Sink<Report>, Arc<Mutex<Vec<Report>>>) {
        let seen: Arc<Mutex<Vec<Report>>> = Arc::default();
        let keep = Arc::clone(&seen);
        (Sink::new(move |r| keep.lock().unwrap().push(r)), seen)
    }

    #[tokio::test]
    async fn turns_are_kept_and_found_by_words() {
        let dir = tempfile::tempdir().unwrap();
        let (sink, seen) = reports();
        let memory =
            spawn(Settings { db: dir.path().join("memory.sqlite"), embedder: None }, sink).unwrap();
        memory.turn(Episode::Chat(1), Role::User, Some("Typed"), "chat", "my bike is the red one");
        memory.turn(Episode::Chat(1), Role::Assistant, None, "chat", "Noted: a red bike.");
        memory.close(Episode::Chat(1));
        let Answer::Hits(hits) = memory.ask(Ask::Search { text: "bike".into(), limit: 5 }).await
        else {
            panic!("no hits")
        };
        assert_eq!(hits.len(), 2);
        assert!(hits.iter().any(|h| h.text == "Typed: my bike is the red one"), "{hits:?}");
        let Answer::Stats(stats) = memory.ask(Ask::Stats).await else { panic!() };
        assert_eq!((stats.log_entries, stats.pending_sessions), (2, 1));
        let first = seen.lock().unwrap()[0].clone();
        assert!(matches!(first, Report::Ready { meaning: Err(_), .. }), "{first:?}");
    }

    /// With the installed embedder (scripts/fetch-models), what was said is embedded in the
    /// background, and a question with no word in common finds it by meaning.
    #[tokio::test]
    async fn vectors_are_made_while_idle_and_meaning_finds_a_paraphrase() {
        let dir = tempfile::tempdir().unwrap();
        let models = stt_testkit::models_dir();
        let embedder = (stt_embed::default_dir(&models), stt_embed::runtime_library(&models));
        let (sink, seen) = reports();
        let db = dir.path().join("memory.sqlite");
        let memory = spawn(Settings { db, embedder: Some(embedder) }, sink).unwrap();
        memory.turn(
            Episode::Chat(1),
            Role::User,
            Some("Typed"),
            "chat",
            "My sister lives in Lisbon.",
        );
        memory.turn(
            Episode::Chat(1),
            Role::User,
            Some("Typed"),
            "chat",
            "The printer is out of toner.",
        );
        memory.close(Episode::Chat(1));
        let mut stats = None;
        for _ in 0..300 {
            let Answer::Stats(s) = memory.ask(Ask::Stats).await else { panic!() };
            if s.vectors == 2 {
                stats = Some(s);
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let ready = seen.lock().unwrap()[0].clone();
        assert!(matches!(ready, Report::Ready { meaning: Ok(()), .. }), "{ready:?}");
        let stats = stats.expect("the two entries were not embedded within 30 s");
        assert_eq!(stats.embedding_model.as_deref(), Some(stt_embed::MODEL_ID));
        let ask = Ask::Search { text: "Which city is my sibling in?".into(), limit: 1 };
        let Answer::Hits(hits) = memory.ask(ask).await else { panic!() };
        assert_eq!(hits[0].text, "Typed: My sister lives in Lisbon.", "{hits:?}");
        assert!(hits[0].meaning > 0.3, "{hits:?}");
    }

    #[tokio::test]
    async fn a_foreign_file_turns_memory_off_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("notes.txt");
        std::fs::write(&db, "not a database").unwrap();
        let (sink, seen) = reports();
        let memory = spawn(Settings { db: db.clone(), embedder: None }, sink).unwrap();
        let Answer::Failed(why) = memory.ask(Ask::Stats).await else { panic!() };
        assert!(why.contains("notes.txt") && why.contains("[memory].db"), "{why}");
        assert!(matches!(&seen.lock().unwrap()[0], Report::Off { .. }));
        assert_eq!(std::fs::read_to_string(&db).unwrap(), "not a database");
        // Capture while off is dropped quietly; the thread answers on.
        memory.turn(Episode::Command(3), Role::User, None, "command", "open the door");
        assert!(matches!(memory.ask(Ask::Stats).await, Answer::Failed(_)));
    }
}
