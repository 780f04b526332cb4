//! The memory lane: long-term memory (`stt_memory::Store`) and the text embedder on a thread
//! of their own, so the loop never waits on SQLite or a model.
//!
//! The loop captures what was said ([`Memory::turn`], [`Memory::close`]) without waiting,
//! and asks questions, one typed method each ([`Memory::context`], [`Memory::stats`], …):
//! each carries its own reply slot, so what comes back is what was asked for, or a
//! [`Refusal`] that says why not.
//! Between jobs (a batch every 200 ms at most) the thread embeds what has no vector yet, so
//! recall by meaning catches up in the background. It reports to the loop only what a person should
//! hear of: that memory is ready (and whether recall by meaning is on), or that it went off
//! for this session (the database could not be opened, or the disk failed under it): chat
//! and commands go on without it.
//!
//! This file is the handle ([`Memory`]) and what crosses to the loop; [`thread`] is the
//! thread that owns the store (and builds a prompt's context), [`tool`] names the tools that
//! reach memory, [`tools`] runs memory's (on that thread, like every other use of the store),
//! [`plans`] the planner's, [`tree`] the memory tree's, [`called`] and [`clock`] small helpers.

pub mod called;
pub mod clock;
pub mod plans;
pub mod thread;
pub mod tool;
pub mod tools;
pub mod tree;

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::oneshot;

use stt_memory::tree::{Fields, NodeId, TreeContext, TreeJob};
use stt_memory::{
    Hit, Item, ItemFilter, ItemId, Kind, MemoryError, Query, Role, SessionId, Stats, Store,
};

pub use called::Called;
pub use thread::spawn;
use thread::{Lane, State, context, dream_due, item, rival, round_text};
pub use tool::Tool;
pub use tools::Limits;

use crate::lane::{Jobs, Sink};

/// Where memory lives and what embeds.
#[derive(Debug, Clone)]
pub struct Settings {
    pub db: PathBuf,
    /// The embedding model and ONNX Runtime; `None`: words only.
    pub embedder: Option<stt_embed::Files>,
    /// What the recall tools return.
    pub limits: Limits,
    /// Offer associative hints.
    pub hints: bool,
    /// Keep chat in the memory tree, with these sizes; `None`: `[memory].tree` is off.
    pub tree: Option<stt_memory::tree::TreeRules>,
    /// `[memory].capture_ambient`: keep what is said in idle mode too.
    pub capture_ambient: bool,
    /// When dreams start on their own, and how long one may go on.
    pub dreams: DreamRules,
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
            capture_ambient: d.capture_ambient,
            dreams: dream_rules(&d),
        }
    }
}

/// When dreams start on their own, from `[memory]`.
pub fn dream_rules(m: &stt_config::MemoryConfig) -> DreamRules {
    DreamRules {
        idle: Duration::from_secs(m.dream_idle_s),
        max_interval: Duration::from_secs(m.dream_max_interval_h * 3600),
        min_sessions: m.dream_min_sessions as usize,
        on_local_model: m.dream_on_local_model,
        max_steps: m.dream_max_steps,
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

/// What the lane tells the loop: ready, the store open; or off until the assistant restarts,
/// and why (with the fix).
pub type Report = crate::lane::State<Opened>;

/// The store, opened: what it holds, and whether recall by meaning is on (or why not).
#[derive(Debug, Clone, PartialEq)]
pub struct Opened {
    pub stats: Stats,
    pub meaning: Result<(), String>,
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
    /// Model requests one dream may make.
    pub max_steps: u32,
}

impl DreamRules {
    /// Memory is off: no dream, ever.
    pub const OFF: DreamRules = DreamRules {
        idle: Duration::ZERO,
        max_interval: Duration::ZERO,
        min_sessions: usize::MAX,
        on_local_model: false,
        max_steps: 0,
    };
}

/// Whether a command's words (`text`) call for memory's tool `tool` (`open`: an intention is
/// open): a reminder's words for adding one (and for ending one, while one is open), words
/// about what was said before for recall, "dream" for a dream now.
pub fn called_for(tool: Tool, text: &str, open: bool) -> bool {
    const REMINDING: [&str; 5] = ["remind", "reminder", "reminders", "intention", "intentions"];
    const ENDING: [&str; 7] = ["done", "did", "finished", "cancel", "drop", "delete", "remove"];
    const RECALLING: [&str; 17] = [
        "remember",
        "remembered",
        "recall",
        "earlier",
        "before",
        "previously",
        "last",
        "told",
        "said",
        "mentioned",
        "mention",
        "forgot",
        "memory",
        "memories",
        "again",
        "talked",
        "discussed",
    ];
    let words: Vec<String> = stt_memory::text::words(text).collect();
    let any = |list: &[&str]| words.iter().any(|w| list.contains(&w.as_str()));
    match tool {
        Tool::AddIntention => any(&REMINDING),
        Tool::CompleteIntention | Tool::CancelIntention => {
            open && (any(&REMINDING) || any(&ENDING))
        }
        // "Tell" alone is no question about the past ("tell me a joke").
        Tool::Recall | Tool::SearchRecent | Tool::ExploreTree => {
            any(&RECALLING) || words.windows(3).any(|w| w == ["i", "tell", "you"])
        }
        Tool::DreamNow => any(&["dream"]),
        // The planner's have their own words (`plans::called_for`); a dream's are a dream's.
        _ => false,
    }
}

/// Whether a command's words call for any of memory's tools ([`called_for`]).
pub fn asks_about_memory(text: &str, open: bool) -> bool {
    Tool::ASSISTANT.into_iter().any(|tool| called_for(tool, text, open))
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

/// Why memory did not do what was asked, worded for a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Memory is off (or the tree is); why, with the fix.
    Off(String),
    /// What was asked for is not there (an id memory does not hold).
    Missing(String),
    /// A read or write failed.
    Failed(String),
}

impl Refusal {
    /// Why, for a person or the model.
    pub fn why(&self) -> &str {
        match self {
            Refusal::Off(why) | Refusal::Missing(why) | Refusal::Failed(why) => why,
        }
    }

    pub fn into_why(self) -> String {
        match self {
            Refusal::Off(why) | Refusal::Missing(why) | Refusal::Failed(why) => why,
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.why())
    }
}

/// Memory's answer to one question: what was asked for, or why not.
pub type Reply<T> = Result<T, Refusal>;

/// How a question failed on the thread: refused (answered as such), or the store failed
/// (answered as [`Refusal::Failed`], and memory goes off if the disk did).
#[derive(Debug)]
pub enum Fault {
    Refused(Refusal),
    Store(MemoryError),
}

impl From<MemoryError> for Fault {
    fn from(e: MemoryError) -> Self {
        Fault::Store(e)
    }
}

impl From<Refusal> for Fault {
    fn from(r: Refusal) -> Self {
        Fault::Refused(r)
    }
}

/// A dream round's text for the model: what memory holds that the conversation may
/// correct, then the conversation; and what the user said in it, alone (for writing facts
/// as lines, where a small model copies whatever facts it is shown).
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    pub text: String,
    pub conversation: String,
}

/// The item a new one may correct, and both texts.
#[derive(Debug, Clone, PartialEq)]
pub struct Rival {
    pub old: ItemId,
    pub was: String,
    pub now: String,
}

/// The tree shown: text for a person or the model, and the nodes it lists.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeShown {
    pub text: String,
    pub nodes: Vec<stt_memory::tree::Node>,
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
    /// A question: run on the thread with the store, its answer sent to its own slot.
    Call(Call),
    /// End the thread: close the open sessions, let go of the store and the embedder, then
    /// say so.
    Stop(oneshot::Sender<()>),
}

/// A question, as the thread runs it.
type Call = Box<dyn FnOnce(&mut Lane, &Sink<Report>) + Send>;

/// The loop's handle on the memory thread; cheap to clone (jobs share one queue).
#[derive(Debug, Clone)]
pub struct Memory {
    tx: Jobs<Job>,
    tree: bool,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Job::Turn { episode, role, .. } => write!(f, "Turn({episode:?}, {role:?})"),
            Job::Close(e) => write!(f, "Close({e:?})"),
            Job::Call(_) => write!(f, "Call"),
            Job::Stop(_) => write!(f, "Stop"),
        }
    }
}

impl Memory {
    /// How many jobs wait for the thread, for `status`.
    pub fn gauge(&self) -> crate::lane::Gauge {
        self.tx.gauge()
    }

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

    /// Sends `f` to run on the thread with the store; its answer comes on the returned
    /// slot. With memory off, `f` does not run and the answer is [`Refusal::Off`].
    fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Store, &mut State) -> Result<T, Fault> + Send + 'static,
    ) -> oneshot::Receiver<Reply<T>> {
        let (tx, rx) = oneshot::channel();
        self.send(Job::Call(Box::new(move |lane: &mut Lane, reports: &Sink<Report>| {
            // The asker may have gone (a cancelled job); nothing to do then.
            let _ = tx.send(lane.answer(f, reports));
        })));
        rx
    }

    /// [`Self::call`], waiting for the answer.
    async fn ask<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Store, &mut State) -> Result<T, Fault> + Send + 'static,
    ) -> Reply<T> {
        self.call(f).await.unwrap_or_else(|_| Err(Refusal::Failed("memory stopped".into())))
    }

    /// Items and log entries for `text`, best first.
    pub async fn search(&self, text: String, limit: usize) -> Reply<Vec<Hit>> {
        self.ask(move |store, state| {
            let vector = state.embed_one(&text);
            Ok(store.recall(&Query { vector: vector.as_deref(), limit, ..Query::new(&text) })?)
        })
        .await
    }

    /// A `task` request answered against the planner's tables (`stt-ctl task`).
    pub async fn plans(&self, request: stt_proto::TaskRequest) -> Reply<plans::Answer> {
        self.ask(move |store, _| {
            let today = clock::local_date(store.now());
            plans::answer(store, &request, &today).map_err(|e| match e {
                Ok(why) => Refusal::Missing(why).into(),
                Err(fault) => fault.into(),
            })
        })
        .await
    }

    /// Items, newest first: of one kind or all, archived ones too or not.
    pub async fn list(&self, kind: Option<Kind>, archived: bool, limit: usize) -> Reply<Vec<Item>> {
        self.ask(move |store, _| {
            let filter = ItemFilter { kind, archived, limit: Some(limit), ..ItemFilter::default() };
            Ok(store.items(&filter)?)
        })
        .await
    }

    /// One item, whole.
    pub async fn show(&self, id: ItemId) -> Reply<Item> {
        self.ask(move |store, _| item(store, id)).await
    }

    /// Deletes one item: what to tell the person.
    pub async fn forget(&self, id: ItemId) -> Reply<String> {
        self.ask(move |store, _| match store.forget(id)? {
            true => Ok(format!("forgot item {}", id.0)),
            false => Err(Refusal::Missing(no_item(id)).into()),
        })
        .await
    }

    /// Deletes what the person said last, and what followed it ("forget what I just said");
    /// its words, or `None` when nothing was said.
    pub async fn forget_last(&self) -> Reply<Option<String>> {
        self.ask(|store, _| Ok(store.forget_last_said()?)).await
    }

    /// Deletes everything memory holds.
    pub async fn forget_all(&self) -> Reply<String> {
        self.ask(|store, state| {
            state.sessions.clear();
            state.hinted.clear();
            store.forget_all()?;
            Ok("forgot everything memory held".into())
        })
        .await
    }

    pub async fn stats(&self) -> Reply<Stats> {
        self.ask(|store, _| Ok(store.stats()?)).await
    }

    /// What a job's prompt gets from memory for `text`, said in `episode` by `speaker`.
    pub async fn context(
        &self,
        text: String,
        episode: Option<Episode>,
        speaker: Option<String>,
    ) -> Reply<Context> {
        self.ask(move |store, state| {
            let vector = if state.hints { state.embed_one(&text) } else { None };
            let session = episode.and_then(|e| state.sessions.get(&e).copied());
            let seen = state.hinted.entry(episode.unwrap_or(Episode::Chat(0))).or_default();
            let tree = state.tree.is_some();
            Ok(context(store, &text, vector.as_deref(), session, speaker.as_deref(), seen, tree)?)
        })
        .await
    }

    /// Runs memory tool `tool` (see [`tools`]).
    pub async fn tool(&self, tool: Tool, args: serde_json::Value) -> Reply<Called> {
        self.ask(move |store, state| state.tool(store, tool, &args)).await
    }

    /// Writes every item as Markdown files under `dir`: what to tell the person.
    pub async fn export(&self, dir: PathBuf) -> Reply<String> {
        self.ask(move |store, _| {
            let n = store.export(&dir)?;
            Ok(format!(
                "wrote {} items, {} conversations and {} dreams to {} (Markdown with YAML front \
                 matter)",
                n.items,
                n.sessions,
                n.dreams,
                dir.display()
            ))
        })
        .await
    }

    /// Reads Markdown files from `dir` back in: what to tell the person.
    pub async fn import(&self, dir: PathBuf) -> Reply<String> {
        self.ask(move |store, _| {
            let n = store.import(&dir)?;
            Ok(format!(
                "read {} items from {}: {} new, {} updated, {} already known",
                n.items,
                dir.display(),
                n.items - n.updated - n.merged,
                n.updated,
                n.merged
            ))
        })
        .await
    }

    /// The latest dreams, newest first, one line each.
    pub async fn dreams(&self, limit: usize) -> Reply<String> {
        self.ask(move |store, _| {
            let dreams = store.dreams(limit)?;
            if dreams.is_empty() {
                return Ok("no dream has run yet".into());
            }
            let lines: Vec<String> = dreams
                .iter()
                .map(|d| {
                    format!(
                        "dream {} at {} ({}, {}): {}",
                        d.id,
                        clock::when(d.started),
                        d.trigger,
                        d.status,
                        d.text.trim()
                    )
                })
                .collect();
            Ok(lines.join("\n"))
        })
        .await
    }

    /// Whether a dream is due, `quiet` since the last activity, and why (its trigger).
    pub async fn dream_due(&self, quiet: Duration, rules: DreamRules) -> Reply<Option<String>> {
        self.ask(move |store, _| Ok(dream_due(store, quiet, rules)?)).await
    }

    /// Starts a dream (`trigger`: idle, overdue, asked): the sessions it is to read, oldest
    /// first.
    pub async fn dream_start(&self, trigger: String) -> Reply<Vec<SessionId>> {
        self.ask(move |store, state| {
            if let Some((id, _)) = state.dream.take() {
                // One left behind by a job that never ended it (a crash of the lane).
                let _ = store.dream_end(id, "interrupted");
            }
            let pending = tools::pending(store)?;
            let id = store.dream_start(&trigger)?;
            state.dream = Some((id, None));
            let sessions: Vec<SessionId> = pending.iter().map(|s| s.id).collect();
            store.dream_note(id, &format!("{} conversations to consolidate", sessions.len()))?;
            Ok(sessions)
        })
        .await
    }

    /// A round of the dream: one pending session to read, as the model is shown it.
    pub async fn dream_round(&self, session: SessionId) -> Reply<Round> {
        self.ask(move |store, state| {
            if let Some((_, round)) = state.dream.as_mut() {
                *round = Some(session);
            }
            let (text, conversation, shown_only) = round_text(store, session, state.limits)?;
            state.shown_only = shown_only;
            Ok(Round { text, conversation })
        })
        .await
    }

    /// The active knowledge item nearest to a new one, written before it: what the new one
    /// may correct (`Missing` when there is none).
    pub async fn rival(&self, id: ItemId) -> Reply<Rival> {
        self.ask(move |store, state| {
            let body = store.item(id).ok().map(|i| i.body);
            let vector = body.and_then(|body| state.embed_one(&body));
            rival(store, id, vector.as_deref(), state.limits)
        })
        .await
    }

    /// `new` corrects `old`: `old` is archived with a link.
    pub async fn supersede(&self, new: ItemId, old: ItemId) -> Reply<String> {
        self.ask(move |store, state| {
            if !store.supersede(new, old)? {
                return Err(Refusal::Missing(format!("item {} is no longer active", old.0)).into());
            }
            let line = format!("item {} replaces item {} (kept archived)", new.0, old.0);
            if let Some((dream, _)) = state.dream
                && let Err(e) = store.dream_note(dream, &format!("correction: {line}"))
            {
                tracing::warn!("memory: cannot write the dream log: {e}");
            }
            Ok(line)
        })
        .await
    }

    /// A round is over: its session is marked processed (if the model did not).
    pub async fn dream_round_done(&self, session: SessionId) -> Reply<String> {
        self.ask(move |store, state| {
            if let Some((_, round)) = state.dream.as_mut() {
                *round = None;
            }
            state.shown_only.clear();
            let pending = store
                .session(session)
                .map(|s| s.status == stt_memory::SessionStatus::Pending)
                .unwrap_or(false);
            if pending {
                store.mark_processed(session)?;
            }
            Ok(format!("session {} is processed", session.0))
        })
        .await
    }

    /// The dream in progress ends (`done`, `interrupted`, `failed`); a finished one decays
    /// every item first.
    pub async fn dream_end(&self, status: String, note: String) -> Reply<String> {
        self.ask(move |store, state| {
            let Some((id, _)) = state.dream.take() else {
                return Ok("no dream was running".into());
            };
            if status == "done" {
                let d = store.decay_all()?;
                let line = format!("decay: {} items aged, {} archived", d.decayed, d.archived);
                store.dream_note(id, &line)?;
            }
            if !note.trim().is_empty() {
                store.dream_note(id, note.trim())?;
            }
            store.dream_end(id, &status)?;
            Ok(format!("dream {id} {status}"))
        })
        .await
    }

    /// What the chat's model is given of the conversation (`[memory].tree`).
    pub async fn tree_context(&self) -> Reply<TreeContext> {
        self.ask(|store, state| {
            state.tree_on()?;
            Ok(store.tree_context()?)
        })
        .await
    }

    /// The tree's next summary to write; `None`: nothing is due.
    pub async fn tree_due(&self) -> Reply<Option<TreeJob>> {
        self.ask(|store, state| {
            let rules = state.tree_on()?;
            Ok(store.tree_due(&rules)?)
        })
        .await
    }

    /// Writes the summary of a job [`Self::tree_due`] gave: the node it made.
    pub async fn tree_write(&self, job: TreeJob, summary: String, fields: Fields) -> Reply<String> {
        self.ask(move |store, state| {
            state.tree_on()?;
            tree::write(store, &job, &summary, &fields)
        })
        .await
    }

    /// A new conversation: the tree's buffer leaves the context, to be summarized. Not
    /// waited for (the next question sees it done).
    pub fn tree_close(&self) {
        drop(self.call(|store, state| {
            state.tree_on()?;
            let n = store.tree_close()?;
            Ok(format!("{n} messages left the context, to be summarized"))
        }));
    }

    /// The tree as a person or the model reads it: its top nodes, or node `Some(id)`.
    pub async fn tree_show(&self, node: Option<NodeId>) -> Reply<TreeShown> {
        self.ask(move |store, state| {
            state.tree_on()?;
            tree::show(store, node)
        })
        .await
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
        if !self.tx.send(job) {
            tracing::error!("the memory thread is gone");
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

    #[test]
    fn a_command_is_offered_the_memory_tools_its_words_call_for() {
        let offered = |text: &str, open: bool| -> Vec<Tool> {
            Tool::ASSISTANT.into_iter().filter(|tool| called_for(*tool, text, open)).collect()
        };
        let recall = [Tool::Recall, Tool::SearchRecent, Tool::ExploreTree];
        assert_eq!(offered("What is the capital of France?", true), Vec::<Tool>::new());
        assert_eq!(offered("Tell me a joke.", false), Vec::<Tool>::new());
        assert_eq!(offered("What did I tell you about my sister?", false), recall);
        assert_eq!(offered("Do you remember where my sister lives?", false), recall);
        assert_eq!(offered("Remind me to call mum tomorrow.", false), [Tool::AddIntention]);
        assert_eq!(
            offered("Cancel the reminder about mum.", true),
            [Tool::AddIntention, Tool::CompleteIntention, Tool::CancelIntention]
        );
        assert_eq!(offered("I'm done with the plants.", false), Vec::<Tool>::new());
        assert_eq!(
            offered("I'm done with the plants.", true),
            [Tool::CompleteIntention, Tool::CancelIntention]
        );
        assert_eq!(offered("Dream now.", false), [Tool::DreamNow]);
    }

    #[tokio::test]
    async fn turns_are_kept_and_found_by_words() {
        let dir = tempfile::tempdir().unwrap();
        let (sink, seen) = reports();
        let memory = spawn(Settings::new(dir.path().join("memory.sqlite")), sink).unwrap().0;
        memory.turn(Episode::Chat(1), Role::User, Some("Typed"), "chat", "my bike is the red one");
        memory.turn(Episode::Chat(1), Role::Assistant, None, "chat", "Noted: a red bike.");
        memory.close(Episode::Chat(1));
        let hits = memory.search("bike".into(), 5).await.unwrap();
        assert_eq!(hits.len(), 2);
        assert!(hits.iter().any(|h| h.text == "Typed: my bike is the red one"), "{hits:?}");
        let stats = memory.stats().await.unwrap();
        assert_eq!((stats.log_entries, stats.pending_sessions), (2, 1));
        let first = seen.lock().unwrap()[0].clone();
        assert!(matches!(&first, Report::Ready(Opened { meaning: Err(_), .. })), "{first:?}");
    }

    /// With the installed embedder (scripts/fetch-models), what was said is embedded in the
    /// background, and a question with no word in common finds it by meaning.
    #[tokio::test]
    async fn vectors_are_made_while_idle_and_meaning_finds_a_paraphrase() {
        let dir = tempfile::tempdir().unwrap();
        let models = stt_testkit::models_dir();
        let embedder = stt_embed::Files::under(&models);
        let (sink, seen) = reports();
        let db = dir.path().join("memory.sqlite");
        let memory =
            spawn(Settings { embedder: Some(embedder), ..Settings::new(db) }, sink).unwrap().0;
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
            let s = memory.stats().await.unwrap();
            if s.vectors == 2 {
                stats = Some(s);
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let ready = seen.lock().unwrap()[0].clone();
        assert!(matches!(&ready, Report::Ready(Opened { meaning: Ok(()), .. })), "{ready:?}");
        let stats = stats.expect("the two entries were not embedded within 30 s");
        assert_eq!(stats.embedding_model.as_deref(), Some(stt_embed::MODEL_ID));
        let hits = memory.search("Which city is my sibling in?".into(), 1).await.unwrap();
        assert_eq!(hits[0].text, "Typed: My sister lives in Lisbon.", "{hits:?}");
        assert!(hits[0].meaning > 0.3, "{hits:?}");
    }

    #[tokio::test]
    async fn stop_closes_the_open_sessions_and_ends_the_thread() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("memory.sqlite");
        let memory = spawn(Settings::new(db.clone()), Sink::new(|_| {})).unwrap().0;
        memory.turn(Episode::Chat(1), Role::User, None, "chat", "still talking");
        memory.stop().await;
        // Gone: a question is answered as such, not left hanging.
        assert_eq!(memory.stats().await, Err(Refusal::Failed("memory stopped".into())));
        let store = Store::open(&db).unwrap();
        assert_eq!(store.stats().unwrap().pending_sessions, 1);
    }

    #[tokio::test]
    async fn a_foreign_file_turns_memory_off_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("notes.txt");
        std::fs::write(&db, "not a database").unwrap();
        let (sink, seen) = reports();
        let memory = spawn(Settings::new(db.clone()), sink).unwrap().0;
        let Err(Refusal::Off(why)) = memory.stats().await else { panic!() };
        assert!(why.contains("notes.txt") && why.contains("[memory].db"), "{why}");
        assert!(matches!(&seen.lock().unwrap()[0], Report::Off { .. }));
        assert_eq!(std::fs::read_to_string(&db).unwrap(), "not a database");
        // Capture while off is dropped quietly; the thread answers on.
        memory.turn(Episode::Command(3), Role::User, None, "command", "open the door");
        assert!(matches!(memory.stats().await, Err(Refusal::Off(_))));
    }
}
