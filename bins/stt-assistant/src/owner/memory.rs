//! The owner's memory surface: `stt-ctl memory` requests. Memory answers on its own thread;
//! the answer comes back through the loop (like a slow slash command), which audits what
//! was forgotten and replies.

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use tokio::sync::oneshot;

use stt_memory::{Hit, Item, ItemId, Kind, Stats, Target};
use stt_proto::{AssistantEvent, ErrorCode, ErrorMsg, MemoryEntry, MemoryRequest, SideEffect};
use stt_tools::ActionRecord;

use super::{Helped, Owner};
use crate::kind::{JobKind, Need};
use crate::llm::{End, Work};
use crate::memory::{DreamRules, Memory, Refusal, Reply, TreeShown, tools};
use crate::recur::Recurring;

/// The memory lane (none: memory is off) and the dreams it is due.
#[derive(Debug)]
pub(super) struct Side {
    pub(super) lane: Option<Memory>,
    pub(super) dreams: Dreams,
}

/// A `memory` request memory has answered.
#[derive(Debug)]
pub struct MemoryDone {
    pub request: MemoryRequest,
    pub answer: Reply<Shown>,
}

/// What a `memory` request shows: text for a person, and the entries it lists.
#[derive(Debug, Clone, PartialEq)]
pub struct Shown {
    text: String,
    entries: Vec<MemoryEntry>,
}

impl Shown {
    fn text(text: String) -> Self {
        Shown { text, entries: Vec::new() }
    }
}

/// Memory answering a request, in the form it is shown.
type Answering = Pin<Box<dyn Future<Output = Reply<Shown>> + Send>>;

impl Owner {
    /// Carries out a `memory` request; its reply goes to `reply` when memory has answered.
    pub(super) fn memory_request(
        &mut self,
        request: MemoryRequest,
        reply: oneshot::Sender<AssistantEvent>,
    ) {
        let Some(memory) = self.memory.lane.clone() else {
            return refuse(
                reply,
                ErrorCode::MemoryOff,
                "memory is off: set [memory].enabled = true in the config and restart the \
                 assistant"
                    .into(),
            );
        };
        if request == MemoryRequest::Dream {
            return self.dream_asked(reply);
        }
        let answering = match answering(memory, &request) {
            Ok(answering) => answering,
            Err(why) => return refuse(reply, ErrorCode::BadMessage, why),
        };
        self.help(async move {
            let answer = answering.await;
            Helped::MemoryDone { reply, done: MemoryDone { request, answer } }
        });
    }

    /// `task`: the planner's tasks, which memory's database keeps. A malformed request is
    /// refused at once; the answer is sent from the helper that waits for memory.
    pub(super) fn task_request(
        &mut self,
        request: stt_proto::TaskRequest,
        reply: oneshot::Sender<AssistantEvent>,
    ) {
        let Some(memory) = self.memory.lane.clone() else {
            return refuse(
                reply,
                ErrorCode::MemoryOff,
                "the planner keeps its tasks in memory, which is off: set [memory].enabled = \
                 true in the config and restart the assistant"
                    .into(),
            );
        };
        if let Err(why) = task_request_is_whole(&request) {
            return refuse(reply, ErrorCode::BadMessage, why);
        }
        self.help(async move {
            let event = match memory.plans(request).await {
                Ok(answer) => AssistantEvent::TaskOutput {
                    text: answer.text,
                    tasks: answer.tasks,
                    next: answer.next,
                },
                Err(Refusal::Missing(why)) => {
                    AssistantEvent::Error(ErrorMsg::new(ErrorCode::NotFound, why))
                }
                Err(Refusal::Off(why)) => {
                    AssistantEvent::Error(ErrorMsg::new(ErrorCode::MemoryOff, why))
                }
                Err(Refusal::Failed(why)) => {
                    AssistantEvent::Error(ErrorMsg::new(ErrorCode::Memory, why))
                }
            };
            let _ = reply.send(event);
            Helped::Nothing
        });
    }

    /// Memory answered a `memory` request: `forget` is audited, and the reply goes out.
    pub(super) fn memory_done(&mut self, reply: oneshot::Sender<AssistantEvent>, done: MemoryDone) {
        let MemoryDone { request, answer } = done;
        if let MemoryRequest::Forget { id, all } = &request {
            let (ok, result) = match &answer {
                Ok(shown) => (true, shown.text.clone()),
                Err(refusal) => (false, refusal.why().to_owned()),
            };
            tracing::info!(?id, all, ok, "memory forget");
            self.writer.audit_action(ActionRecord {
                ts: stt_tools::audit::timestamp(self.clock.local_now()),
                mode: "control".into(),
                text: String::new(),
                edited: false,
                tool: "memory_forget".into(),
                args: serde_json::json!({"id": id, "all": all}),
                side_effect: SideEffect::Destructive,
                requires_confirmation: false,
                confirmed: None,
                ok,
                result,
                latency_ms: 0,
                by: "person".into(),
                outside: None,
            });
        }
        let mut answer = answer;
        if matches!(request, MemoryRequest::Dreams { .. })
            && let Ok(Shown { text, .. }) = &mut answer
            && !dreams_on_its_own(&self.memory.dreams.rules, self.active())
        {
            *text = format!("{DREAMS_OFF}\n{text}");
        }
        let _ = reply.send(reply_of(answer));
    }
}

/// Why a `task` request cannot be what a person meant, if it cannot: a title, a date and a
/// priority the planner takes.
fn task_request_is_whole(request: &stt_proto::TaskRequest) -> Result<(), String> {
    if let stt_proto::TaskRequest::Add { title, due, priority, .. } = request {
        if title.trim().is_empty() {
            return Err("a task needs a title".into());
        }
        if let Some(due) = due.as_deref().filter(|d| !d.trim().is_empty()) {
            stt_memory::planner::check_date(due.trim()).map_err(|e| e.to_string())?;
        }
        if let Some(p) = priority.filter(|p| !stt_memory::planner::PRIORITIES.contains(p)) {
            return Err(format!("priority {p}: give 1 (the highest) to 5 (the lowest)"));
        }
    }
    Ok(())
}

/// Answers a request with an error (a client that hung up has no reply to read).
fn refuse(reply: oneshot::Sender<AssistantEvent>, code: ErrorCode, message: String) {
    let _ = reply.send(AssistantEvent::Error(ErrorMsg::new(code, message)));
}

/// What `memory dreams` says first while dreams do not start on their own.
const DREAMS_OFF: &str = "automatic dreams are off while the local model answers (on it they \
    lowered recall: docs/MEMORY.md); `stt-ctl memory dream` runs one now, and \
    [memory].dream_on_local_model = true turns them on";

/// Memory answering `request` (`dream` aside), or why the request is malformed.
fn answering(memory: Memory, request: &MemoryRequest) -> Result<Answering, String> {
    let text = |reply: Reply<String>| reply.map(Shown::text);
    Ok(match request.clone() {
        MemoryRequest::List { kind, archived, limit } => {
            let kind = match kind.as_deref() {
                None | Some("" | "all") => None,
                Some(name) => Some(Kind::parse(name).ok_or_else(|| {
                    format!("memory has no kind '{name}': knowledge, episode, intention or profile")
                })?),
            };
            let limit = limit.unwrap_or(50) as usize;
            Box::pin(
                async move { memory.list(kind, archived, limit).await.map(|i| items_shown(&i)) },
            )
        }
        MemoryRequest::Show { id } => Box::pin(async move {
            memory
                .show(ItemId(id))
                .await
                .map(|item| Shown { text: describe_item(&item), entries: vec![item_entry(&item)] })
        }),
        MemoryRequest::Search { text, limit } => {
            if text.trim().is_empty() {
                return Err("give something to search for".into());
            }
            let limit = limit.unwrap_or(10) as usize;
            Box::pin(async move { memory.search(text.0, limit).await.map(|h| hits_shown(&h)) })
        }
        MemoryRequest::Forget { id: Some(id), all: false } => {
            Box::pin(async move { text(memory.forget(ItemId(id)).await) })
        }
        MemoryRequest::Forget { id: None, all: true } => {
            Box::pin(async move { text(memory.forget_all().await) })
        }
        MemoryRequest::Forget { .. } => {
            return Err("forget takes an item id or `all`, one of the two".into());
        }
        MemoryRequest::Export { dir } => {
            let dir = absolute(&dir)?;
            Box::pin(async move { text(memory.export(dir).await) })
        }
        MemoryRequest::Import { dir } => {
            let dir = absolute(&dir)?;
            Box::pin(async move { text(memory.import(dir).await) })
        }
        MemoryRequest::Dreams { limit } => {
            let limit = limit.unwrap_or(5) as usize;
            Box::pin(async move { text(memory.dreams(limit).await) })
        }
        MemoryRequest::Stats => {
            Box::pin(async move { memory.stats().await.map(|s| stats_shown(&s)) })
        }
        MemoryRequest::Tree { node } => Box::pin(async move {
            memory.tree_show(node.map(stt_memory::tree::NodeId)).await.map(tree_shown)
        }),
        MemoryRequest::Dream => unreachable!("a dream is the loop's"),
    })
}

fn absolute(dir: &str) -> Result<std::path::PathBuf, String> {
    let path = std::path::PathBuf::from(dir);
    if path.is_absolute() {
        Ok(path)
    } else {
        Err(format!("'{dir}' is not an absolute path (stt-ctl makes it one)"))
    }
}

/// Memory's answer as the reply on the wire: what it shows, or an error whose code says
/// which refusal it is.
fn reply_of(answer: Reply<Shown>) -> AssistantEvent {
    match answer {
        Ok(Shown { text, entries }) => AssistantEvent::MemoryOutput { text, entries },
        Err(Refusal::Missing(why)) => {
            AssistantEvent::Error(ErrorMsg::new(ErrorCode::NotFound, why))
        }
        Err(Refusal::Off(why)) => AssistantEvent::Error(ErrorMsg::new(ErrorCode::MemoryOff, why)),
        Err(Refusal::Failed(why)) => AssistantEvent::Error(ErrorMsg::new(ErrorCode::Memory, why)),
    }
}

fn hits_shown(hits: &[Hit]) -> Shown {
    if hits.is_empty() {
        return Shown::text("nothing in memory matches".into());
    }
    let text = hits
        .iter()
        .map(|h| format!("{:.2} {}", h.score, tools::hit_line(h).trim_start_matches("- ")))
        .collect::<Vec<_>>()
        .join("\n");
    Shown { text, entries: hits.iter().map(hit_entry).collect() }
}

fn items_shown(items: &[Item]) -> Shown {
    if items.is_empty() {
        return Shown::text("memory holds no items yet".into());
    }
    let text = items.iter().map(tools::item_line).collect::<Vec<_>>().join("\n");
    Shown { text, entries: items.iter().map(item_entry).collect() }
}

fn stats_shown(s: &Stats) -> Shown {
    Shown::text(format!(
        "{} conversations ({} waiting for a dream), {} lines, {} items ({} archived), {} \
         vectors{}",
        s.sessions,
        s.pending_sessions,
        s.log_entries,
        s.active_items,
        s.archived_items,
        s.vectors,
        s.embedding_model.as_ref().map(|m| format!(" ({m})")).unwrap_or_default()
    ))
}

fn tree_shown(shown: TreeShown) -> Shown {
    let entries = shown
        .nodes
        .iter()
        .map(|n| MemoryEntry {
            target: "node".into(),
            id: n.id.0,
            kind: format!("level {}", n.level),
            text: n.summary.clone(),
            at: n.started,
            score: None,
            archived: false,
        })
        .collect();
    Shown { text: shown.text, entries }
}

fn hit_entry(hit: &Hit) -> MemoryEntry {
    let (target, id) = match hit.target {
        Target::Item(id) => ("item", id.0),
        Target::Log(id) => ("log", id.0),
    };
    MemoryEntry {
        target: target.into(),
        id,
        kind: hit.kind.map_or("said", Kind::as_str).into(),
        text: hit.text.clone(),
        at: hit.at,
        score: Some(hit.score),
        archived: false,
    }
}

fn item_entry(item: &Item) -> MemoryEntry {
    MemoryEntry {
        target: "item".into(),
        id: item.id.0,
        kind: item.kind.as_str().into(),
        text: item.text(),
        at: item.created,
        score: None,
        archived: !item.active,
    }
}

/// One item whole, for `memory show`.
fn describe_item(item: &Item) -> String {
    let mut lines = vec![
        format!(
            "item {} · {}{}",
            item.id.0,
            item.kind.as_str(),
            if item.subtype.is_empty() { String::new() } else { format!(" ({})", item.subtype) }
        ),
        item.text(),
        format!(
            "score {:.2} · stability {:.1} · made {} · last used {}",
            item.score,
            item.stability,
            crate::memory::clock::when(item.created),
            crate::memory::clock::when(item.last_used)
        ),
    ];
    if !item.subject.is_empty() {
        lines.push(format!("about: {}", item.subject));
    }
    if let Some(cue) = &item.cue {
        lines.push(format!("cue: {cue}"));
    }
    if let Some(due) = item.due {
        lines.push(format!("due: {}", crate::memory::clock::when(due)));
    }
    if let Some(state) = &item.state {
        lines.push(format!("state: {state}"));
    }
    if !item.active {
        lines.push(format!("archived: {}", item.archived_why.as_deref().unwrap_or("yes")));
    }
    if !item.provenance.is_empty() {
        let from: Vec<String> = item.provenance.iter().map(|l| format!("L{}", l.0)).collect();
        lines.push(format!("from log lines: {}", from.join(", ")));
    }
    for (other, kind) in &item.links {
        lines.push(format!("{kind}: item {}", other.0));
    }
    lines.join("\n")
}

/// Dreams: when one starts on its own.
#[derive(Debug)]
pub struct Dreams {
    rules: DreamRules,
    /// The check whether one is due: one on its way at most.
    check: Recurring,
    /// When someone last spoke, asked or was answered.
    last_activity: Instant,
    /// Heartbeats since the last check.
    beats: u32,
}

/// Whether a dream may start on its own with `provider` in use: not on the local model
/// unless `[memory].dream_on_local_model` says so (its dreams lowered recall on LoCoMo).
fn dreams_on_its_own(rules: &DreamRules, provider: Option<stt_llm::registry::Id>) -> bool {
    rules.on_local_model || provider != Some(stt_llm::registry::Id::LlamaCpp)
}

/// Heartbeats (seconds) between checks whether a dream is due.
const CHECK_EVERY: u32 = 30;

/// The quiet stopped background work waits for before it goes on.
pub(super) const RESUME_QUIET: std::time::Duration = std::time::Duration::from_secs(30);

impl Dreams {
    pub fn new(rules: DreamRules, now: Instant) -> Self {
        Dreams { rules, check: Recurring::default(), last_activity: now, beats: 0 }
    }
}

impl Owner {
    /// Someone spoke, asked or was answered: the quiet a dream waits for starts over.
    pub(super) fn activity(&mut self) {
        self.memory.dreams.last_activity = self.clock.now();
    }

    /// Someone needs the model (`need`): the running job stops if its kind's row yields to
    /// it (a summary or a dream: what it wrote stays, and it is wanted again when it has
    /// stopped). The one way background work is stopped for a person; the quiet starts over
    /// too. A barge-in ([`Need::BargeIn`]) also silences the voice and stops the chat reply
    /// it was saying, kept as far as it came, as `chat_stop` does (a command's result is
    /// only silenced: what it did is done).
    pub(super) fn interrupt(&mut self, need: Need) {
        self.activity();
        if need == Need::BargeIn {
            self.hush();
            if let Some(running) = self.jobs.running.as_mut().filter(|r| r.handle.is(JobKind::Chat))
            {
                tracing::info!(job = running.job, "the person spoke over the reply: it stops");
                running.stopped = true;
                running.handle.cancel();
            }
        }
        if let Some(running) = self
            .jobs
            .running
            .as_mut()
            .filter(|r| !r.preempted && r.handle.kind.rule().yields_to(need))
        {
            let (kind, why) = (running.handle.kind.name(), need.name());
            tracing::info!(job = running.job, kind, why, "someone needs the model: the job stops");
            running.preempted = true;
            running.handle.cancel();
        }
    }

    /// Whether things are quiet enough for background work a person stopped to go on
    /// ([`Resumes::AfterQuiet`]): nobody in a command or chat, and no activity for
    /// [`RESUME_QUIET`].
    ///
    /// [`Resumes::AfterQuiet`]: crate::kind::Resumes::AfterQuiet
    pub(super) fn quiet(&self) -> bool {
        self.core.mode() == stt_proto::Mode::Idle
            && self.clock.now().saturating_duration_since(self.memory.dreams.last_activity)
                >= RESUME_QUIET
    }

    /// `memory dream`: a dream starts as soon as the model is free; the reply says when.
    fn dream_asked(&mut self, reply: oneshot::Sender<AssistantEvent>) {
        if self.jobs.running.as_ref().is_some_and(|r| r.handle.is(JobKind::Dream)) {
            let _ = reply.send(AssistantEvent::MemoryOutput {
                text: "a dream is already running (`stt-ctl memory dreams` shows its log)".into(),
                entries: vec![],
            });
            return;
        }
        if self.jobs.env.client.is_none() {
            let _ = reply.send(AssistantEvent::Error(ErrorMsg::new(
                ErrorCode::NoExecutor,
                format!("a dream needs the model: {}", self.jobs.env.missing),
            )));
            return;
        }
        self.want_dream("asked");
        let started = AssistantEvent::MemoryOutput {
            text: "a dream started; `stt-ctl memory dreams` shows what it did".into(),
            entries: vec![],
        };
        self.jobs.starts.push((JobKind::Dream, reply, started));
    }

    /// Now and then, when everything is quiet, asks memory whether a dream is due.
    pub(super) fn maybe_dream(&mut self) {
        self.memory.dreams.beats += 1;
        if self.memory.dreams.beats < CHECK_EVERY || self.memory.dreams.check.running() {
            return;
        }
        self.memory.dreams.beats = 0;
        let Some(memory) = self.memory.lane.clone() else { return };
        if !self.idle_for_dream() {
            return;
        }
        self.memory.dreams.check.start();
        let quiet = self.clock.now().saturating_duration_since(self.memory.dreams.last_activity);
        let rules = self.memory.dreams.rules;
        self.help(async move {
            let due = memory.dream_due(quiet, rules).await.ok().flatten();
            Helped::DreamDue(due)
        });
    }

    /// Whether nothing needs the model: no job, none queued, nobody in a command or chat;
    /// and the model in use may dream on its own.
    fn idle_for_dream(&self) -> bool {
        self.jobs.running.is_none()
            && self.jobs.queue.depth() == 0
            && self.core.mode() == stt_proto::Mode::Idle
            && self.jobs.env.client.as_ref().is_some_and(stt_llm::Provider::supports_tools)
            && dreams_on_its_own(&self.memory.dreams.rules, self.active())
    }

    /// Memory said whether a dream is due.
    pub(super) fn dream_due(&mut self, trigger: Option<String>) {
        self.memory.dreams.check.done();
        if let Some(trigger) = trigger.filter(|_| self.idle_for_dream()) {
            tracing::info!(%trigger, "a dream is due");
            self.want_dream(&trigger);
        }
    }

    /// The memory tree may want a summary (its buffer grew or was closed): a job looks once
    /// the model is free.
    pub(super) fn tree_may_be_due(&mut self) {
        if self.memory.lane.as_ref().is_some_and(crate::memory::Memory::tree) {
            self.jobs.queue.want(Work::Tree);
        }
    }

    /// A dream is wanted (`trigger`: why).
    pub(super) fn want_dream(&mut self, trigger: &str) {
        let max_steps = self.memory.dreams.rules.max_steps;
        self.jobs.queue.want(Work::Dream { trigger: trigger.to_owned(), max_steps });
    }

    /// The dream job ended: one that did not finish is recorded as interrupted (what it
    /// processed stays processed; the rest waits for the next).
    pub(super) fn dream_over(&mut self, end: End) {
        if end == End::Done {
            return;
        }
        let Some(memory) = self.memory.lane.clone() else { return };
        let status = if end == End::Cancelled { "interrupted" } else { "failed" };
        self.note(format!("memory: the dream was {status}; it goes on later"));
        self.help(async move {
            let _ = memory.dream_end(status.into(), String::new()).await;
            Helped::Nothing
        });
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use stt_llm::registry::Id;

    use super::*;

    #[test]
    fn the_local_model_dreams_on_its_own_only_when_the_config_says_so() {
        let rules = |on_local_model| DreamRules {
            idle: Duration::from_secs(600),
            max_interval: Duration::from_secs(3600),
            min_sessions: 2,
            on_local_model,
            max_steps: 10,
        };
        for (on_local, provider, dreams) in [
            (false, Some(Id::LlamaCpp), false),
            (true, Some(Id::LlamaCpp), true),
            (false, Some(Id::Ollama), true),
            (false, Some(Id::OpenAi), true),
            (false, None, true),
        ] {
            assert_eq!(dreams_on_its_own(&rules(on_local), provider), dreams, "{provider:?}");
        }
    }
}
