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
//!
//! [`tools`] holds the tools that reach memory; they run here, on this thread, like every
//! other use of the store.

pub mod tools;
pub mod tree;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use stt_embed::Embedder;
use stt_memory::tree::{Fields, NodeId, TreeContext, TreeJob, TreeRules};
use stt_memory::{
    HintGate, Hit, Item, ItemFilter, ItemId, Kind, MemoryError, Query, Role, SessionId,
    SessionKind, Stats, Store, Target, Turn,
};

pub use tools::{Called, Limits};

use crate::lane::Sink;

/// Where memory lives and what embeds.
#[derive(Debug, Clone)]
pub struct Settings {
    pub db: PathBuf,
    /// The embedding model's directory and the ONNX Runtime library; `None`: words only.
    pub embedder: Option<(PathBuf, PathBuf)>,
    /// What the recall tools return.
    pub limits: Limits,
    /// Offer associative hints.
    pub hints: bool,
    /// Keep chat in the memory tree, with these sizes; `None`: `[memory].tree` is off.
    pub tree: Option<stt_memory::tree::TreeRules>,
}

impl Settings {
    /// Settings for `db`, words only, with the config's defaults otherwise.
    pub fn new(db: PathBuf) -> Self {
        let d = stt_config::MemoryConfig::default();
        Settings {
            db,
            embedder: None,
            limits: Limits { top_k: d.recall_top_k as usize, min_score: d.recall_min_score as f32 },
            hints: d.hints,
            tree: tree_rules(&d),
        }
    }
}

/// The memory tree's sizes from `[memory]` (checked when the config was read); `None` when
/// `tree` is off.
pub fn tree_rules(m: &stt_config::MemoryConfig) -> Option<stt_memory::tree::TreeRules> {
    m.tree.then_some(stt_memory::tree::TreeRules {
        raw_max: m.tree_raw_max as usize,
        compress: m.tree_compress as usize,
        fanout_max: m.tree_fanout_max as usize,
    })
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
    /// Speech in idle mode (`[memory].capture_ambient`), one stretch of it.
    Ambient(u64),
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
    /// What a job's prompt gets from memory for `text`, said in `episode` by `speaker`.
    Context {
        text: String,
        episode: Option<Episode>,
        speaker: Option<String>,
    },
    /// Run a memory tool (see [`tools`]).
    Tool {
        name: String,
        args: serde_json::Value,
    },
    /// Write every item as Markdown files under the directory.
    Export(PathBuf),
    /// Read Markdown files from the directory back in.
    Import(PathBuf),
    /// The latest dreams, newest first.
    Dreams(usize),
    /// Whether a dream is due: `quiet` since the last activity, against the thresholds.
    DreamDue {
        quiet: Duration,
        rules: DreamRules,
    },
    /// Starts a dream (`trigger`: idle, overdue, asked): the sessions it is to read.
    DreamStart {
        trigger: String,
    },
    /// A round of the dream: one pending session to read, as the model is shown it.
    DreamRound(SessionId),
    /// The active knowledge item nearest to a new one, written before it: what the new one
    /// may correct.
    Rival(ItemId),
    /// `new` corrects `old`: archive `old` with a link.
    Supersede {
        new: ItemId,
        old: ItemId,
    },
    /// A round is over: the session is marked processed (if the model did not).
    DreamRoundDone(SessionId),
    /// The dream in progress ends (`done`, `interrupted`, `failed`); a finished one decays
    /// every item first.
    DreamEnd {
        status: String,
        note: String,
    },
    /// What the chat's model is given of the conversation (`[memory].tree`).
    TreeContext,
    /// The tree's next summary to write, if one is due.
    TreeDue,
    /// The summary of a job [`Ask::TreeDue`] gave.
    TreeWrite {
        job: TreeJob,
        summary: String,
        fields: Fields,
    },
    /// A new conversation: the buffer leaves the context, to be summarized.
    TreeClose,
    /// The tree as a person or the model reads it: its top nodes, or node `Some(id)`.
    TreeShow(Option<NodeId>),
}

/// When a dream starts on its own (`[memory]`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DreamRules {
    /// Quiet needed; zero: never on its own.
    pub idle: Duration,
    /// Since the last dream after which one starts with less quiet.
    pub max_interval: Duration,
    /// Pending sessions needed.
    pub min_sessions: usize,
    /// Whether a dream starts on its own when the model in use is the local one.
    pub on_local_model: bool,
}

/// Who said a chat turn, from its "Name: words" form (`None` when nobody knows).
pub fn speaker_of(text: &str) -> Option<&str> {
    let (who, _) = text.split_once(": ")?;
    (!who.is_empty() && who.len() <= 64 && who != "Unknown" && !who.contains('\n')).then_some(who)
}

/// Whether a command's words ask about what was said before or for a reminder (then it is
/// offered memory's tools).
pub fn asks_about_memory(text: &str) -> bool {
    const WORDS: [&str; 22] = [
        "remember",
        "remembered",
        "remind",
        "reminder",
        "reminders",
        "recall",
        "earlier",
        "before",
        "previously",
        "last",
        "told",
        "said",
        "mentioned",
        "mention",
        "forget",
        "forgot",
        "memory",
        "memories",
        "dream",
        "intention",
        "intentions",
        "again",
    ];
    stt_memory::text::words(text).any(|w| WORDS.contains(&w.as_str()))
}

/// A chat turn's words without the "Name: " the model is given.
pub fn words_of(text: &str) -> &str {
    match speaker_of(text) {
        Some(who) => &text[who.len() + 2..],
        None => text.strip_prefix("Unknown: ").unwrap_or(text),
    }
}

/// What a job's prompt gets from memory.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Context {
    /// Sections for the end of the system prompt: who the assistant, the user and the speaker
    /// are, and the open intentions, in a stable order (the prompt's prefix changes only when
    /// they do, so the server's cache holds).
    pub sections: String,
    /// Lines for this turn only: intentions due now or cued by its words, then hints.
    pub reminders: Vec<String>,
    /// What viewers are told of them: a note per intention brought back and per hint.
    pub notes: Vec<String>,
    /// How many intentions are open.
    pub intentions: usize,
}

/// Memory's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Hits(Vec<Hit>),
    Items(Vec<Item>),
    Item(Box<Item>),
    Stats(Stats),
    Context(Context),
    Called(Called),
    /// A dream is due, with its trigger; `None`: not now.
    DreamDue(Option<String>),
    /// A dream started: its id and the pending sessions, oldest first.
    DreamStarted {
        id: i64,
        sessions: Vec<SessionId>,
    },
    /// A round's text for the model: what memory holds that the conversation may correct,
    /// then the conversation; and what the user said in it, alone (for writing facts as
    /// lines, where a small model copies whatever facts it is shown).
    Round {
        text: String,
        conversation: String,
    },
    /// The item a new one may correct, and both texts.
    Rival {
        old: ItemId,
        was: String,
        now: String,
    },
    /// The tree's context (the chat's conversation).
    Tree(TreeContext),
    /// The tree's next job; `None`: nothing is due.
    TreeDue(Option<TreeJob>),
    /// The tree shown: text for a person or the model, and the nodes it lists.
    TreeShown {
        text: String,
        nodes: Vec<stt_memory::tree::Node>,
    },
    /// Done; what to tell the person.
    Done(String),
    /// Memory is off (or the tree is); why, with the fix.
    Off(String),
    /// Not done; why, worded for a person.
    Failed(String),
    /// What was asked for is not there (an id memory does not hold).
    Missing(String),
}

fn no_item(id: ItemId) -> String {
    format!("memory has no item {}: `stt-ctl memory list` shows the ids", id.0)
}

enum Job {
    Turn {
        episode: Episode,
        role: Role,
        speaker: Option<String>,
        mode: String,
        text: String,
    },
    Close(Episode),
    Ask(Ask, oneshot::Sender<Answer>),
    /// End the thread: close the open sessions, let go of the store and the embedder, then
    /// say so.
    Stop(oneshot::Sender<()>),
}

/// The loop's handle on the memory thread; cheap to clone (jobs share one queue).
#[derive(Debug, Clone)]
pub struct Memory {
    tx: mpsc::Sender<Job>,
    tree: bool,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Job::Turn { episode, role, .. } => write!(f, "Turn({episode:?}, {role:?})"),
            Job::Close(e) => write!(f, "Close({e:?})"),
            Job::Ask(ask, _) => write!(f, "Ask({ask:?})"),
            Job::Stop(_) => write!(f, "Stop"),
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

    /// Whether chat lives in the memory tree (`[memory].tree`).
    pub fn tree(&self) -> bool {
        self.tree
    }

    /// Asks memory without waiting for the answer.
    pub fn tell(&self, ask: Ask) {
        let (tx, _) = oneshot::channel();
        self.send(Job::Ask(ask, tx));
    }

    /// Asks memory; the answer comes when the thread gets to it.
    pub async fn ask(&self, ask: Ask) -> Answer {
        let (tx, rx) = oneshot::channel();
        self.send(Job::Ask(ask, tx));
        rx.await.unwrap_or_else(|_| Answer::Failed("memory stopped".into()))
    }

    /// Ends the thread and waits until it has closed the open sessions and dropped the store
    /// and the embedder: ONNX Runtime must not be torn down by the process's exit while its
    /// session is still in use on this thread.
    pub async fn stop(&self) {
        let (tx, rx) = oneshot::channel();
        self.send(Job::Stop(tx));
        // Gone already: nothing to wait for.
        let _ = rx.await;
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
    let tree = settings.tree.is_some();
    std::thread::Builder::new().name("stt-memory".to_owned()).spawn(move || {
        let mut lane = Lane::open(&settings, &reports);
        let mut embedded = Instant::now();
        let stopped = loop {
            match rx.recv_timeout(IDLE) {
                Ok(Job::Stop(done)) => break Some(done),
                Ok(job) => lane.run(job, &reports),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break None,
            }
            // A batch every IDLE at most, between jobs too: a steady stream of them (a long
            // chat, a viewer polling) must not starve recall by meaning.
            if embedded.elapsed() >= IDLE {
                lane.embed_some(&reports);
                embedded = Instant::now();
            }
        };
        if let Some(store) = lane.store.as_mut() {
            // Sessions still open are closed, so a dream reads them next time.
            if let Err(e) = store.close_open_sessions() {
                tracing::warn!("memory: cannot close the open sessions: {e}");
            }
        }
        drop(lane);
        if let Some(done) = stopped {
            let _ = done.send(());
        }
    })?;
    Ok(Memory { tx, tree })
}

/// What the thread owns.
struct Lane {
    store: Option<Store>,
    off: String,
    embedder: Option<Embedder>,
    sessions: HashMap<Episode, SessionId>,
    /// What each episode has been hinted already (never twice in one conversation).
    hinted: HashMap<Episode, HashSet<Target>>,
    limits: Limits,
    hints: bool,
    tree: Option<TreeRules>,
    /// The dream in progress (its id) and the session its round reads.
    dream: Option<(i64, Option<SessionId>)>,
    /// Names and numbers of the remembered items the dream's round showed that its
    /// conversation never says: a fact that uses one was copied from the list, not learnt.
    shown_only: BTreeSet<String>,
}

impl Lane {
    fn open(settings: &Settings, reports: &Sink<Report>) -> Lane {
        let mut lane = Lane {
            store: None,
            off: String::new(),
            embedder: None,
            sessions: HashMap::new(),
            hinted: HashMap::new(),
            limits: settings.limits,
            hints: settings.hints,
            tree: settings.tree,
            dream: None,
            shown_only: BTreeSet::new(),
        };
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
                            Episode::Ambient(_) => (SessionKind::Ambient, "ambient"),
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
                let mut written = session.and_then(|s| store.append(s, &turn)).map(|_| ());
                // Chat lives in the tree too: its words and the answers, as they were said.
                if written.is_ok()
                    && self.tree.is_some()
                    && matches!(episode, Episode::Chat(_))
                    && matches!(role, Role::User | Role::Assistant)
                {
                    written = store.tree_push(role, speaker.as_deref(), &text).map(|_| ());
                }
                if let Err(e) = written {
                    self.fault(&e, reports);
                }
            }
            Job::Close(episode) => {
                self.hinted.remove(&episode);
                let Some(session) = self.sessions.remove(&episode) else { return };
                let Some(store) = self.store.as_mut() else { return };
                if let Err(e) = store.close_session(session) {
                    self.fault(&e, reports);
                }
            }
            // The thread's loop takes it before this.
            Job::Stop(_) => {}
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
            Ask::Rival(id) => {
                let body = self.store.as_ref().and_then(|s| s.item(*id).ok()).map(|i| i.body);
                body.and_then(|body| self.embed_one(&body))
            }
            Ask::Context { text, .. } if self.hints => self.embed_one(text),
            Ask::Tool { args, .. } => match args.get("query").and_then(|q| q.as_str()) {
                Some(query) if !query.trim().is_empty() => self.embed_one(query),
                _ => None,
            },
            _ => None,
        };
        let Some(store) = self.store.as_mut() else { return Answer::Off(self.off.clone()) };
        let result = match ask {
            Ask::Search { text, limit } => store
                .recall(&Query { vector: vector.as_deref(), limit, ..Query::new(&text) })
                .map(Answer::Hits),
            Ask::List { kind, archived, limit } => store
                .items(&ItemFilter { kind, archived, limit: Some(limit), ..ItemFilter::default() })
                .map(Answer::Items),
            Ask::Show(id) => match store.item(id) {
                Err(MemoryError::NotFound { .. }) => Ok(Answer::Missing(no_item(id))),
                found => found.map(|item| Answer::Item(Box::new(item))),
            },
            Ask::Forget(id) => store.forget(id).map(|found| match found {
                true => Answer::Done(format!("forgot item {}", id.0)),
                false => Answer::Missing(no_item(id)),
            }),
            Ask::ForgetAll => {
                self.sessions.clear();
                self.hinted.clear();
                store.forget_all().map(|()| Answer::Done("forgot everything memory held".into()))
            }
            Ask::Stats => store.stats().map(Answer::Stats),
            Ask::Context { text, episode, speaker } => {
                let session = episode.and_then(|e| self.sessions.get(&e).copied());
                let seen = self.hinted.entry(episode.unwrap_or(Episode::Chat(0))).or_default();
                let hints = if self.hints { vector.as_deref() } else { None };
                context(store, &text, hints, session, speaker.as_deref(), seen, self.tree.is_some())
                    .map(Answer::Context)
            }
            Ask::Tool { name, args } => {
                // In a dream, what the model writes cites the session it reads unless it
                // names the lines itself.
                let round = self.dream.and_then(|(_, session)| session);
                let sources = match round {
                    Some(session) => store
                        .session_log(session)
                        .map(|log| {
                            log.into_iter()
                                .filter(|e| e.role == Role::User)
                                .map(|e| (e.id, e.text))
                                .collect()
                        })
                        .unwrap_or_default(),
                    None => Vec::new(),
                };
                let call = tools::Call {
                    name: &name,
                    args: &args,
                    vector: vector.as_deref(),
                    limits: self.limits,
                    now: store.now(),
                    sources,
                    shown_only: &self.shown_only,
                    tree: self.tree.is_some(),
                };
                let called = tools::call(store, &call);
                if let (Some((dream, _)), Ok(called)) = (self.dream, &called)
                    && !tools::is_recall(&name)
                {
                    let line = format!("{name}: {}", called.result);
                    if let Err(e) = store.dream_note(dream, &line) {
                        tracing::warn!("memory: cannot write the dream log: {e}");
                    }
                }
                called.map(Answer::Called)
            }
            Ask::DreamDue { quiet, rules } => dream_due(store, quiet, rules).map(Answer::DreamDue),
            Ask::DreamStart { trigger } => {
                if let Some((id, _)) = self.dream.take() {
                    // One left behind by a job that never ended it (a crash of the lane).
                    let _ = store.dream_end(id, "interrupted");
                }
                tools::pending(store).and_then(|pending| {
                    let id = store.dream_start(&trigger)?;
                    self.dream = Some((id, None));
                    let sessions: Vec<SessionId> = pending.iter().map(|s| s.id).collect();
                    store.dream_note(
                        id,
                        &format!("{} conversations to consolidate", sessions.len()),
                    )?;
                    Ok(Answer::DreamStarted { id, sessions })
                })
            }
            Ask::DreamRound(session) => {
                if let Some((_, round)) = self.dream.as_mut() {
                    *round = Some(session);
                }
                round_text(store, session, self.limits).map(|(text, conversation, shown_only)| {
                    self.shown_only = shown_only;
                    Answer::Round { text, conversation }
                })
            }
            Ask::Rival(id) => rival(store, id, vector.as_deref(), self.limits),
            Ask::Supersede { new, old } => store.supersede(new, old).map(|done| {
                let line = format!("item {} replaces item {} (kept archived)", new.0, old.0);
                if let (true, Some((dream, _))) = (done, self.dream)
                    && let Err(e) = store.dream_note(dream, &format!("correction: {line}"))
                {
                    tracing::warn!("memory: cannot write the dream log: {e}");
                }
                match done {
                    true => Answer::Done(line),
                    false => Answer::Missing(format!("item {} is no longer active", old.0)),
                }
            }),
            Ask::DreamRoundDone(session) => {
                if let Some((_, round)) = self.dream.as_mut() {
                    *round = None;
                }
                self.shown_only.clear();
                let pending = store
                    .session(session)
                    .map(|s| s.status == stt_memory::SessionStatus::Pending)
                    .unwrap_or(false);
                let marked = if pending { store.mark_processed(session) } else { Ok(()) };
                marked.map(|()| Answer::Done(format!("session {} is processed", session.0)))
            }
            Ask::DreamEnd { status, note } => match self.dream.take() {
                None => Ok(Answer::Done("no dream was running".into())),
                Some((id, _)) => {
                    let decayed = if status == "done" { Some(store.decay_all()) } else { None };
                    let result = (|| {
                        if let Some(decayed) = decayed {
                            let d = decayed?;
                            store.dream_note(
                                id,
                                &format!(
                                    "decay: {} items aged, {} archived",
                                    d.decayed, d.archived
                                ),
                            )?;
                        }
                        if !note.trim().is_empty() {
                            store.dream_note(id, note.trim())?;
                        }
                        store.dream_end(id, &status)
                    })();
                    result.map(|()| Answer::Done(format!("dream {id} {status}")))
                }
            },
            Ask::Export(dir) => store.export(&dir).map(|n| {
                Answer::Done(format!(
                    "wrote {} items, {} conversations and {} dreams to {} (Markdown with YAML \
                     front matter)",
                    n.items,
                    n.sessions,
                    n.dreams,
                    dir.display()
                ))
            }),
            Ask::Import(dir) => store.import(&dir).map(|n| {
                Answer::Done(format!(
                    "read {} items from {}: {} new, {} updated, {} already known",
                    n.items,
                    dir.display(),
                    n.items - n.updated - n.merged,
                    n.updated,
                    n.merged
                ))
            }),
            Ask::TreeContext
            | Ask::TreeDue
            | Ask::TreeWrite { .. }
            | Ask::TreeClose
            | Ask::TreeShow(_)
                if self.tree.is_none() =>
            {
                Ok(Answer::Off(tree::OFF.into()))
            }
            Ask::TreeContext => store.tree_context().map(Answer::Tree),
            Ask::TreeDue => match self.tree {
                Some(rules) => store.tree_due(&rules).map(Answer::TreeDue),
                None => Ok(Answer::Off(tree::OFF.into())),
            },
            Ask::TreeWrite { job, summary, fields } => tree::write(store, &job, &summary, &fields),
            Ask::TreeClose => store
                .tree_close()
                .map(|n| Answer::Done(format!("{n} messages left the context, to be summarized"))),
            Ask::TreeShow(node) => tree::show(store, node),
            Ask::Dreams(limit) => store.dreams(limit).map(|dreams| {
                if dreams.is_empty() {
                    return Answer::Done("no dream has run yet".into());
                }
                let text = dreams
                    .iter()
                    .map(|d| {
                        format!(
                            "dream {} at {} ({}, {}): {}",
                            d.id,
                            tools::when(d.started),
                            d.trigger,
                            d.status,
                            d.text.trim()
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                Answer::Done(text)
            }),
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

/// Whether a dream is due now: enough sessions wait, and either it has been quiet for
/// `rules.idle` or the last dream is older than `rules.max_interval`.
fn dream_due(
    store: &Store,
    quiet: Duration,
    rules: DreamRules,
) -> stt_memory::Result<Option<String>> {
    if rules.idle.is_zero() {
        return Ok(None);
    }
    let pending = tools::pending(store)?.len();
    if pending < rules.min_sessions.max(1) {
        return Ok(None);
    }
    if quiet >= rules.idle {
        return Ok(Some("idle".into()));
    }
    let since = store.last_dream()?.map(|at| store.now() - at);
    let overdue = since.is_none_or(|s| s >= rules.max_interval.as_secs_f64());
    // Overdue still waits for a moment's quiet: never in the middle of a conversation.
    Ok((overdue && quiet >= Duration::from_secs(60)).then(|| "overdue".into()))
}

/// A dream round as the model reads it: items the conversation may touch (to correct
/// rather than repeat), then the conversation.
/// The active knowledge item, older than `id`, that recall puts nearest to it (at least
/// `limits.min_score`); `Missing` when there is none.
fn rival(
    store: &Store,
    id: ItemId,
    vector: Option<&[f32]>,
    limits: Limits,
) -> stt_memory::Result<Answer> {
    let item = match store.item(id) {
        Err(MemoryError::NotFound { .. }) => return Ok(Answer::Missing(no_item(id))),
        found => found?,
    };
    let now = note(&item);
    let query = Query { vector, limit: 5, log: false, ..Query::new(&now) };
    for hit in store.recall(&query)? {
        let Target::Item(other) = hit.target else { continue };
        if other.0 >= id.0 || hit.score < limits.min_score || hit.kind != Some(Kind::Knowledge) {
            continue;
        }
        let was = note(&store.item(other)?);
        return Ok(Answer::Rival { old: other, was, now });
    }
    Ok(Answer::Missing(format!("nothing item {} may correct", id.0)))
}

/// An item as a note the model can rewrite: its body, or its name and body when the body
/// alone says too little to stand as one (the 1.5B model saved "sister's city" with the body
/// "Lisbon"; rewritten as "Porto", no word of the old note was left to show it was the same).
fn note(item: &stt_memory::Item) -> String {
    let name = item.name.trim();
    if name.is_empty() || stt_memory::text::content_words(&item.body).len() >= 3 {
        item.body.clone()
    } else {
        format!("{name}: {}", item.body)
    }
}

/// A dream round's text: the items the session may correct, then the session; the user's
/// lines of the session alone; and the names and numbers of those items the session never
/// says.
fn round_text(
    store: &Store,
    session: SessionId,
    limits: Limits,
) -> stt_memory::Result<(String, String, BTreeSet<String>)> {
    let log = store.session_log(session)?;
    let said: String = log
        .iter()
        .filter(|e| e.role == Role::User)
        .map(|e| e.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let query = Query { limit: limits.top_k.max(5), log: false, ..Query::new(&said) };
    let known = store.recall(&query)?;
    let mut text = String::new();
    let mut shown = BTreeSet::new();
    if !known.is_empty() {
        text.push_str("Already remembered (ids to correct or archive):\n");
        for hit in &known {
            if let Target::Item(id) = hit.target {
                text.push_str(&format!("- [{}] {}\n", id.0, hit.text));
                shown.extend(stt_memory::text::names_and_numbers(&hit.text));
            }
        }
        text.push('\n');
    }
    text.push_str(&tools::session_text(&log).result);
    // What the user said, alone: a small model asked for the user's facts takes them from
    // the assistant's lines too (an answer that recalled "Lisbon" to a user saying "Porto").
    let theirs: Vec<_> = log.iter().filter(|e| e.role == Role::User).cloned().collect();
    let conversation = tools::session_text(&theirs).result;
    // Who spoke counts as said: "Caroline" in a fact comes from her lines' speaker.
    let speakers = log.iter().filter_map(|e| e.speaker.as_deref()).collect::<Vec<_>>().join(" ");
    let said = stt_memory::text::content_words(&format!("{said} {speakers}"));
    shown.retain(|w| !said.contains(w));
    Ok((text, conversation, shown))
}

/// What a prompt gets from memory for `text` (see [`Context`]). `hint_vector`: the text's
/// embedding when hints are on; `seen`: what this conversation was hinted already.
fn context(
    store: &mut Store,
    text: &str,
    hint_vector: Option<&[f32]>,
    session: Option<SessionId>,
    speaker: Option<&str>,
    seen: &mut HashSet<Target>,
    tree: bool,
) -> stt_memory::Result<Context> {
    let mut sections = String::new();
    let mut profile = |title: &str, subject: &str| -> stt_memory::Result<()> {
        if let Some(item) = store.profile(subject)? {
            sections.push_str(&format!("## {title}\n{}\n\n", item.body.trim()));
        }
        Ok(())
    };
    profile("About you (the assistant)", "assistant")?;
    profile("About the user", "user")?;
    if let Some(name) = speaker.filter(|s| !matches!(*s, "Typed" | "Unknown" | "user")) {
        profile(&format!("About {name}"), &name.to_lowercase())?;
    }
    // What the conversation itself taught (the memory tree's newest fields).
    if tree && let Some(learnt) = tree::learnt(store)? {
        sections.push_str(&learnt);
    }
    let intentions = tools::intention_lines(store)?;
    if !intentions.is_empty() {
        sections.push_str("## Open intentions (things to do or say later; ids for the tools)\n");
        sections.push_str(&intentions.join("\n"));
        sections.push_str("\n\n");
    }
    let mut reminders = Vec::new();
    let mut notes = Vec::new();
    let open = store.intentions(text, store.now())?;
    // Each intention comes back once per conversation, like a hint.
    let fresh = |item: &&Item| !seen.contains(&Target::Item(item.id));
    let due: Vec<&Item> = open.due.iter().filter(fresh).collect();
    let cued: Vec<&Item> = open.cued.iter().filter(fresh).collect();
    for item in due.iter().chain(&cued) {
        seen.insert(Target::Item(item.id));
    }
    for item in &due {
        reminders.push(format!("Due now: {} (intention {})", item.body, item.id.0));
        notes.push(format!("memory: intention {} is due: {}", item.id.0, item.body));
    }
    for item in &cued {
        let cue = item.cue.as_deref().unwrap_or_default();
        reminders.push(format!(
            "\"{cue}\" came up: you meant to {} (intention {})",
            item.body, item.id.0
        ));
        notes.push(format!(
            "memory: \"{cue}\" came up, which brings back intention {}: {}",
            item.id.0, item.body
        ));
    }
    let mut hints = Vec::new();
    let found = store.hints(text, hint_vector, session, seen, &HintGate::default())?;
    let mut used = Vec::new();
    for hit in &found {
        seen.insert(hit.target);
        if let Target::Item(id) = hit.target {
            used.push(id);
        }
        hints.push(format!("{} ({})", hit.text, tools::when(hit.at)));
    }
    if !used.is_empty() {
        store.reinforce(&used)?;
    }
    // What was said before it left the context, word for word: hints skip the session being
    // spoken in, and a summary may have dropped the very number asked for.
    if tree {
        for message in store.tree_recall(text, 3)? {
            let line = tree::recalled_line(&message);
            reminders.push(format!("Earlier ({}), {line}", tools::when(message.at)));
            notes.push(format!("memory: brought back what was said earlier: {line}"));
        }
    }
    reminders.extend(hints.iter().map(|h| format!("From memory: {h}")));
    notes.extend(hints.iter().map(|h| format!("memory: reminded the model that {h}")));
    let open_count = intentions.len();
    Ok(Context {
        sections: sections.trim_end().to_owned(),
        reminders,
        notes,
        intentions: open_count,
    })
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
        let memory = spawn(Settings::new(dir.path().join("memory.sqlite")), sink).unwrap();
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
        let memory =
            spawn(Settings { embedder: Some(embedder), ..Settings::new(db) }, sink).unwrap();
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
    async fn stop_closes_the_open_sessions_and_ends_the_thread() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("memory.sqlite");
        let memory = spawn(Settings::new(db.clone()), Sink::new(|_| {})).unwrap();
        memory.turn(Episode::Chat(1), Role::User, None, "chat", "still talking");
        memory.stop().await;
        // Gone: a question is answered as such, not left hanging.
        assert_eq!(memory.ask(Ask::Stats).await, Answer::Failed("memory stopped".into()));
        let store = Store::open(&db).unwrap();
        assert_eq!(store.stats().unwrap().pending_sessions, 1);
    }

    #[tokio::test]
    async fn a_foreign_file_turns_memory_off_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("notes.txt");
        std::fs::write(&db, "not a database").unwrap();
        let (sink, seen) = reports();
        let memory = spawn(Settings::new(db.clone()), sink).unwrap();
        let Answer::Off(why) = memory.ask(Ask::Stats).await else { panic!() };
        assert!(why.contains("notes.txt") && why.contains("[memory].db"), "{why}");
        assert!(matches!(&seen.lock().unwrap()[0], Report::Off { .. }));
        assert_eq!(std::fs::read_to_string(&db).unwrap(), "not a database");
        // Capture while off is dropped quietly; the thread answers on.
        memory.turn(Episode::Command(3), Role::User, None, "command", "open the door");
        assert!(matches!(memory.ask(Ask::Stats).await, Answer::Off(_)));
    }
}
