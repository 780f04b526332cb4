//! The memory thread: it opens the store and the embedder itself, runs each job the handle
//! ([`Memory`]) sends in turn, embeds what has no vector yet between them, and builds what a
//! prompt gets from memory ([`context`]).

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use stt_embed::Embedder;
use stt_memory::tree::TreeRules;
use stt_memory::{
    HintGate, Item, ItemId, Kind, MemoryError, Query, Role, SessionId, SessionKind, Store, Target,
    Turn,
};

use super::{
    Called, Context, DreamRules, Episode, Fault, Job, Limits, Memory, Refusal, Reply, Report,
    Rival, Settings, clock, no_item, tools, tree,
};
use crate::lane::{self, Sink, Thread};

/// How often the thread embeds a batch in the background (when there is anything to embed).
const IDLE: Duration = Duration::from_millis(200);
/// Texts embedded per background batch.
const BATCH: usize = 16;

/// Starts the memory thread. It opens the store and the embedder itself (a slow disk or model
/// never holds up the assistant's start) and reports `Ready` or `Off`.
pub fn spawn(settings: Settings, reports: Sink<Report>) -> std::io::Result<(Memory, Thread)> {
    let tree = settings.tree.is_some();
    let (tx, thread) = lane::start("stt-memory", move |rx: lane::Queue<Job>| {
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
            // chat, a viewer polling) must not starve recall by meaning. While the disk is
            // full, what waits is tried again as often.
            if embedded.elapsed() >= IDLE {
                lane.retry_waiting(&reports);
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
    Ok((Memory { tx, tree }, thread))
}

/// What the thread owns: the store (`None` while memory is off, and why) and the rest.
pub(super) struct Lane {
    pub(super) store: Option<Store>,
    pub(super) off: String,
    pub(super) state: State,
    /// Whether recall by meaning is on, or why not (said again when writes resume).
    meaning: Result<(), String>,
    /// While the disk is full: why, and the turns and closes that wait for room, oldest
    /// first (written in order once a write works again).
    full: Option<String>,
    waiting: VecDeque<Job>,
    /// Writing what waited (a failure then is no news).
    retrying: bool,
    db: std::path::PathBuf,
}

/// Free space below which writes that waited for room are not tried yet.
const ROOM: u64 = 1 << 20;

/// Turns kept while the disk is full; past this the oldest go (told in the log).
const WAITING_MAX: usize = 10_000;

/// What the thread keeps beside the store.
pub(super) struct State {
    pub(super) embedder: Option<Embedder>,
    pub(super) sessions: HashMap<Episode, SessionId>,
    /// What each episode has been hinted already (never twice in one conversation).
    pub(super) hinted: HashMap<Episode, HashSet<Target>>,
    pub(super) limits: Limits,
    pub(super) hints: bool,
    pub(super) tree: Option<TreeRules>,
    /// The dream in progress (its id) and the session its round reads.
    pub(super) dream: Option<(i64, Option<SessionId>)>,
    /// Names and numbers of the remembered items the dream's round showed that its
    /// conversation never says: a fact that uses one was copied from the list, not learnt.
    pub(super) shown_only: BTreeSet<String>,
}

impl Lane {
    pub(super) fn open(settings: &Settings, reports: &Sink<Report>) -> Lane {
        let mut lane = Lane {
            store: None,
            off: String::new(),
            meaning: Ok(()),
            full: None,
            waiting: VecDeque::new(),
            retrying: false,
            db: settings.db.clone(),
            state: State {
                embedder: None,
                sessions: HashMap::new(),
                hinted: HashMap::new(),
                limits: settings.limits,
                hints: settings.hints,
                tree: settings.tree,
                dream: None,
                shown_only: BTreeSet::new(),
            },
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
            Some(files) => match files.load() {
                Ok(embedder) => {
                    let model = embedder.model_id().to_owned();
                    lane.state.embedder = Some(embedder);
                    store.use_embeddings(&model, stt_embed::DIM).map_err(|e| e.to_string())
                }
                Err(e) => Err(e.to_string()),
            },
        };
        if let Err(why) = &meaning {
            tracing::info!("memory recalls by words only: {why}");
        }
        lane.meaning = meaning.clone();
        match store.stats() {
            Ok(stats) => reports.send(Report::Ready(super::Opened { stats, meaning })),
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
    pub(super) fn fault(&mut self, e: &MemoryError, reports: &Sink<Report>) {
        if e.is_full() {
            if self.full.is_none() {
                let why = format!(
                    "memory cannot write, the disk is full: {e}. Free some space: what is said \
                     meanwhile is kept and written once there is room"
                );
                tracing::warn!("{why}");
                reports.send(Report::Off { why: why.clone() });
                self.full = Some(why);
            }
        } else if e.is_unavailable() {
            self.turn_off(e, reports);
        } else {
            tracing::warn!("memory: {e}");
        }
    }

    pub(super) fn turn_off(&mut self, e: &MemoryError, reports: &Sink<Report>) {
        self.off = format!(
            "memory is off until the assistant restarts: {e} (chat and commands go on without it)"
        );
        tracing::warn!("{}", self.off);
        self.store = None;
        reports.send(Report::Off { why: self.off.clone() });
    }

    /// While the disk is full: writes what waits, in order, until a write fails again or
    /// none is left; then says memory is ready again.
    pub(super) fn retry_waiting(&mut self, reports: &Sink<Report>) {
        if self.full.is_none() {
            return;
        }
        // Tried once there is room again (a write in a full disk changes nothing).
        let dir = self.db.parent().unwrap_or(&self.db);
        if stt_os::free_bytes(dir).is_ok_and(|free| free < ROOM) {
            return;
        }
        let held = std::mem::take(&mut self.waiting);
        let count = held.len();
        // Each written as if new; one that fails again goes back on the list, first.
        self.retrying = true;
        let mut jobs = held.into_iter();
        for job in jobs.by_ref() {
            self.run(job, reports);
            if !self.waiting.is_empty() {
                break;
            }
        }
        self.retrying = false;
        if !self.waiting.is_empty() {
            self.waiting.extend(jobs);
            return;
        }
        self.full = None;
        let Some(store) = self.store.as_ref() else { return };
        tracing::info!(written = count, "memory writes again: the turns that waited are written");
        match store.stats() {
            Ok(stats) => {
                let meaning = self.meaning.clone();
                reports.send(Report::Ready(super::Opened { stats, meaning }));
            }
            Err(e) => tracing::warn!("memory: {e}"),
        }
    }

    /// Keeps `job` for when there is room.
    fn wait(&mut self, job: Job) {
        if self.waiting.len() >= WAITING_MAX {
            self.waiting.pop_front();
            tracing::warn!(
                "memory: the disk is still full; the oldest turn kept for it is dropped"
            );
        }
        self.waiting.push_back(job);
    }

    pub(super) fn run(&mut self, job: Job, reports: &Sink<Report>) {
        let held = self.full.is_some() && !self.retrying;
        if held && matches!(job, Job::Turn { .. } | Job::Close(_)) {
            return self.wait(job);
        }
        match job {
            Job::Turn { episode, role, speaker, mode, text } => {
                let Some(store) = self.store.as_mut() else { return };
                let state = &mut self.state;
                let session = match state.sessions.get(&episode) {
                    Some(s) => Ok(*s),
                    None => {
                        let (kind, label) = match episode {
                            Episode::Chat(_) => (SessionKind::Chat, "chat"),
                            Episode::Command(_) => (SessionKind::Command, "command"),
                            Episode::Ambient(_) => (SessionKind::Ambient, "ambient"),
                        };
                        store.open_session(kind, Some(label), None).inspect(|s| {
                            state.sessions.insert(episode, *s);
                        })
                    }
                };
                let turn = Turn {
                    speaker: speaker.as_deref(),
                    mode: Some(&mode),
                    ..Turn::new(role, &text)
                };
                let mut written = session.and_then(|s| store.append(s, &turn)).map(|_| ());
                if let Err(e) = &written
                    && e.is_full()
                {
                    // Nothing was written: the whole turn waits for room.
                    self.fault(e, reports);
                    return self.wait(Job::Turn { episode, role, speaker, mode, text });
                }
                // Chat lives in the tree too: its words and the answers, as they were said.
                if written.is_ok()
                    && state.tree.is_some()
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
                let Some(session) = self.state.sessions.get(&episode).copied() else {
                    self.state.hinted.remove(&episode);
                    return;
                };
                let Some(store) = self.store.as_mut() else { return };
                match store.close_session(session) {
                    Ok(_) => {
                        self.state.hinted.remove(&episode);
                        self.state.sessions.remove(&episode);
                    }
                    Err(e) if e.is_full() => {
                        self.fault(&e, reports);
                        self.wait(Job::Close(episode));
                    }
                    Err(e) => {
                        self.state.sessions.remove(&episode);
                        self.fault(&e, reports);
                    }
                }
            }
            // The thread's loop takes it before this.
            Job::Stop(_) => {}
            Job::Call(call) => call(self, reports),
        }
    }

    /// Runs a question with the store; a fault of the store is answered as
    /// [`Refusal::Failed`] (and turns memory off if the disk failed).
    pub(super) fn answer<T>(
        &mut self,
        f: impl FnOnce(&mut Store, &mut State) -> Result<T, Fault>,
        reports: &Sink<Report>,
    ) -> Reply<T> {
        let Some(store) = self.store.as_mut() else { return Err(Refusal::Off(self.off.clone())) };
        match f(store, &mut self.state) {
            Ok(answer) => Ok(answer),
            Err(Fault::Refused(refusal)) => Err(refusal),
            Err(Fault::Store(e)) => {
                let why = e.to_string();
                self.fault(&e, reports);
                Err(Refusal::Failed(why))
            }
        }
    }

    /// Embeds one batch of what has no vector yet.
    pub(super) fn embed_some(&mut self, reports: &Sink<Report>) {
        if self.full.is_some() {
            // Its vectors could not be written either.
            return;
        }
        let (Some(store), Some(embedder)) = (self.store.as_mut(), self.state.embedder.as_mut())
        else {
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
                self.state.embedder = None;
            }
        }
    }
}

impl State {
    pub(super) fn embed_one(&mut self, text: &str) -> Option<Vec<f32>> {
        let embedder = self.embedder.as_mut()?;
        match embedder.embed(&[text]) {
            Ok(mut v) => v.pop(),
            Err(e) => {
                tracing::warn!("memory: cannot embed a query: {e}");
                None
            }
        }
    }

    /// The tree's sizes, or why not: the tree is off.
    pub(super) fn tree_on(&self) -> Result<TreeRules, Fault> {
        self.tree.ok_or_else(|| Refusal::Off(tree::OFF.into()).into())
    }

    /// Runs memory tool `tool` with `args`.
    pub(super) fn tool(
        &mut self,
        store: &mut Store,
        tool: tools::Tool,
        args: &serde_json::Value,
    ) -> Result<Called, Fault> {
        let vector = match args.get("query").and_then(|q| q.as_str()) {
            Some(query) if !query.trim().is_empty() => self.embed_one(query),
            _ => None,
        };
        // In a dream, what the model writes cites the session it reads unless it names the
        // lines itself.
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
            tool,
            args,
            vector: vector.as_deref(),
            limits: self.limits,
            now: store.now(),
            sources,
            shown_only: &self.shown_only,
            tree: self.tree.is_some(),
            today: clock::local_date(store.now()),
        };
        let called = tools::call(store, &call)?;
        if let Some((dream, _)) = self.dream
            && !tool.reads_only()
        {
            let line = format!("{tool}: {}", called.result);
            if let Err(e) = store.dream_note(dream, &line) {
                tracing::warn!("memory: cannot write the dream log: {e}");
            }
        }
        Ok(called)
    }
}

/// Item `id`, or why not.
pub(super) fn item(store: &Store, id: ItemId) -> Result<Item, Fault> {
    match store.item(id) {
        Err(MemoryError::NotFound { .. }) => Err(Refusal::Missing(no_item(id)).into()),
        found => Ok(found?),
    }
}

/// Whether a dream is due now: enough sessions wait, and either it has been quiet for
/// `rules.idle` or the last dream is older than `rules.max_interval`.
pub(super) fn dream_due(
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
pub(super) fn rival(
    store: &Store,
    id: ItemId,
    vector: Option<&[f32]>,
    limits: Limits,
) -> Result<Rival, Fault> {
    let item = item(store, id)?;
    let now = note(&item);
    let query = Query { vector, limit: 5, log: false, ..Query::new(&now) };
    for hit in store.recall(&query)? {
        let Target::Item(other) = hit.target else { continue };
        if other.0 >= id.0 || hit.score < limits.min_score || hit.kind != Some(Kind::Knowledge) {
            continue;
        }
        let was = note(&store.item(other)?);
        return Ok(Rival { old: other, was, now });
    }
    Err(Refusal::Missing(format!("nothing item {} may correct", id.0)).into())
}

/// An item as a note the model can rewrite: its body, or its name and body when the body
/// alone says too little to stand as one (the 1.5B model saved "sister's city" with the body
/// "Lisbon"; rewritten as "Porto", no word of the old note was left to show it was the same).
pub(super) fn note(item: &stt_memory::Item) -> String {
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
pub(super) fn round_text(
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
pub(super) fn context(
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
        hints.push(format!("{} ({})", hit.text, clock::when(hit.at)));
    }
    if !used.is_empty() {
        store.reinforce(&used)?;
    }
    // What was said before it left the context, word for word: hints skip the session being
    // spoken in, and a summary may have dropped the very number asked for.
    if tree {
        for message in store.tree_recall(text, 3)? {
            let line = tree::recalled_line(&message);
            reminders.push(format!("Earlier ({}), {line}", clock::when(message.at)));
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
