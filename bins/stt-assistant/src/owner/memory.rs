//! The owner's memory surface: `stt-ctl memory` requests. Memory answers on its own thread;
//! the answer comes back through the loop (like a slow slash command), which audits what
//! was forgotten and replies.

use std::time::Instant;

use tokio::sync::oneshot;

use stt_memory::{Hit, Item, ItemId, Kind, Target};
use stt_proto::{AssistantEvent, ErrorCode, ErrorMsg, MemoryEntry, MemoryRequest, SideEffect};
use stt_tools::ActionRecord;

use super::{Helped, Owner, now};
use crate::llm::{End, Work};
use crate::memory::{Answer, Ask, DreamRules, tools};
use crate::queue::{Job, JobKind};

/// A `memory` request memory has answered.
#[derive(Debug)]
pub struct MemoryDone {
    pub request: MemoryRequest,
    pub answer: Answer,
}

impl Owner {
    /// Carries out a `memory` request; its reply goes to `reply` when memory has answered.
    pub(super) fn memory_request(
        &mut self,
        request: MemoryRequest,
        reply: oneshot::Sender<AssistantEvent>,
    ) {
        let refuse = |reply: oneshot::Sender<AssistantEvent>, code, message: String| {
            let _ = reply.send(AssistantEvent::Error(ErrorMsg::new(code, message)));
        };
        let Some(memory) = self.memory.clone() else {
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
        let ask = match ask_of(&request) {
            Ok(ask) => ask,
            Err(why) => return refuse(reply, ErrorCode::BadMessage, why),
        };
        self.help(async move {
            let answer = memory.ask(ask).await;
            Helped::MemoryDone { reply, done: MemoryDone { request, answer } }
        });
    }

    /// Memory answered a `memory` request: `forget` is audited, and the reply goes out.
    pub(super) fn memory_done(&mut self, reply: oneshot::Sender<AssistantEvent>, done: MemoryDone) {
        let MemoryDone { request, answer } = done;
        if let MemoryRequest::Forget { id, all } = &request {
            let (ok, result) = match &answer {
                Answer::Done(text) => (true, text.clone()),
                Answer::Failed(text) | Answer::Missing(text) | Answer::Off(text) => {
                    (false, text.clone())
                }
                other => (false, format!("{other:?}")),
            };
            tracing::info!(?id, all, ok, "memory forget");
            self.writer.audit_action(ActionRecord {
                ts: stt_tools::audit::timestamp(chrono::Local::now()),
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
            });
        }
        let mut answer = answer;
        if matches!(request, MemoryRequest::Dreams { .. })
            && let Answer::Done(text) = &mut answer
            && !dreams_on_its_own(&self.dreams.rules, self.active())
        {
            *text = format!("{DREAMS_OFF}\n{text}");
        }
        let _ = reply.send(reply_of(answer));
    }
}

/// What `memory dreams` says first while dreams do not start on their own.
const DREAMS_OFF: &str = "automatic dreams are off while the local model answers (on it they \
    lowered recall: docs/MEMORY.md); `stt-ctl memory dream` runs one now, and \
    [memory].dream_on_local_model = true turns them on";

/// What memory is asked for a request (`dream` aside).
fn ask_of(request: &MemoryRequest) -> Result<Ask, String> {
    Ok(match request {
        MemoryRequest::List { kind, archived, limit } => {
            let kind = match kind.as_deref() {
                None | Some("" | "all") => None,
                Some(name) => Some(Kind::parse(name).ok_or_else(|| {
                    format!("memory has no kind '{name}': knowledge, episode, intention or profile")
                })?),
            };
            Ask::List { kind, archived: *archived, limit: limit.unwrap_or(50) as usize }
        }
        MemoryRequest::Show { id } => Ask::Show(ItemId(*id)),
        MemoryRequest::Search { text, limit } => {
            if text.trim().is_empty() {
                return Err("give something to search for".into());
            }
            Ask::Search { text: text.clone(), limit: limit.unwrap_or(10) as usize }
        }
        MemoryRequest::Forget { id: Some(id), all: false } => Ask::Forget(ItemId(*id)),
        MemoryRequest::Forget { id: None, all: true } => Ask::ForgetAll,
        MemoryRequest::Forget { .. } => {
            return Err("forget takes an item id or `all`, one of the two".into());
        }
        MemoryRequest::Export { dir } => Ask::Export(absolute(dir)?),
        MemoryRequest::Import { dir } => Ask::Import(absolute(dir)?),
        MemoryRequest::Dreams { limit } => Ask::Dreams(limit.unwrap_or(5) as usize),
        MemoryRequest::Stats => Ask::Stats,
        MemoryRequest::Tree { node } => Ask::TreeShow(node.map(stt_memory::tree::NodeId)),
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

/// Memory's answer as the reply on the wire.
fn reply_of(answer: Answer) -> AssistantEvent {
    let output =
        |text: String, entries: Vec<MemoryEntry>| AssistantEvent::MemoryOutput { text, entries };
    match answer {
        Answer::Hits(hits) if hits.is_empty() => output("nothing in memory matches".into(), vec![]),
        Answer::Hits(hits) => {
            let text = hits
                .iter()
                .map(|h| format!("{:.2} {}", h.score, tools::hit_line(h).trim_start_matches("- ")))
                .collect::<Vec<_>>()
                .join("\n");
            output(text, hits.iter().map(hit_entry).collect())
        }
        Answer::Items(items) if items.is_empty() => {
            output("memory holds no items yet".into(), vec![])
        }
        Answer::Items(items) => {
            let text = items.iter().map(tools::item_line).collect::<Vec<_>>().join("\n");
            output(text, items.iter().map(item_entry).collect())
        }
        Answer::Item(item) => output(describe_item(&item), vec![item_entry(&item)]),
        Answer::Stats(s) => output(
            format!(
                "{} conversations ({} waiting for a dream), {} lines, {} items ({} archived), \
                 {} vectors{}",
                s.sessions,
                s.pending_sessions,
                s.log_entries,
                s.active_items,
                s.archived_items,
                s.vectors,
                s.embedding_model.map(|m| format!(" ({m})")).unwrap_or_default()
            ),
            vec![],
        ),
        Answer::Done(text) | Answer::Called(crate::memory::Called { result: text, .. }) => {
            output(text, vec![])
        }
        Answer::TreeShown { text, nodes } => {
            let entries = nodes
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
            output(text, entries)
        }
        Answer::Context(_)
        | Answer::Tree(_)
        | Answer::TreeDue(_)
        | Answer::DreamDue(_)
        | Answer::DreamStarted { .. }
        | Answer::Round { .. }
        | Answer::Rival { .. } => output(String::new(), vec![]),
        Answer::Missing(why) => AssistantEvent::Error(ErrorMsg::new(ErrorCode::NotFound, why)),
        Answer::Off(why) => AssistantEvent::Error(ErrorMsg::new(ErrorCode::MemoryOff, why)),
        Answer::Failed(why) => AssistantEvent::Error(ErrorMsg::new(ErrorCode::Memory, why)),
    }
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
            tools::when(item.created),
            tools::when(item.last_used)
        ),
    ];
    if !item.subject.is_empty() {
        lines.push(format!("about: {}", item.subject));
    }
    if let Some(cue) = &item.cue {
        lines.push(format!("cue: {cue}"));
    }
    if let Some(due) = item.due {
        lines.push(format!("due: {}", tools::when(due)));
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

/// Dreams: when one starts on its own, one asked for, and who waits for it to start.
#[derive(Debug)]
pub struct Dreams {
    rules: DreamRules,
    max_steps: u32,
    /// `memory dream` requests waiting for the dream to start.
    waiting: Vec<oneshot::Sender<AssistantEvent>>,
    /// A check whether one is due is on its way.
    checking: bool,
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

impl Dreams {
    pub fn new(rules: DreamRules, max_steps: u32, now: Instant) -> Self {
        Dreams {
            rules,
            max_steps,
            waiting: Vec::new(),
            checking: false,
            last_activity: now,
            beats: 0,
        }
    }
}

impl Owner {
    /// Someone spoke, asked or was answered: the quiet a dream waits for starts over.
    pub(super) fn activity(&mut self) {
        self.dreams.last_activity = now();
    }

    /// Someone needs the model (`why`): the running job stops if its kind yields to a person
    /// (a dream: what it wrote stays, and it goes on later). The one way background work is
    /// stopped for a person; the quiet starts over too.
    pub(super) fn interrupt(&mut self, why: &str) {
        self.activity();
        if let Some(running) = self.running.as_ref().filter(|r| r.handle.kind.rule().yields) {
            let kind = running.handle.kind.name();
            tracing::info!(job = running.job, kind, why, "someone needs the model: the job stops");
            running.handle.cancel();
        }
    }

    /// `memory dream`: a dream starts as soon as the model is free; the reply says when.
    fn dream_asked(&mut self, reply: oneshot::Sender<AssistantEvent>) {
        if self.running.as_ref().is_some_and(|r| r.handle.is(JobKind::Dream)) {
            let _ = reply.send(AssistantEvent::MemoryOutput {
                text: "a dream is already running (`stt-ctl memory dreams` shows its log)".into(),
                entries: vec![],
            });
            return;
        }
        if self.env.client.is_none() {
            let _ = reply.send(AssistantEvent::Error(ErrorMsg::new(
                ErrorCode::NoExecutor,
                format!("a dream needs the model: {}", self.env.missing),
            )));
            return;
        }
        self.queue.want(Job::Dream { trigger: "asked".into() });
        self.dreams.waiting.push(reply);
        self.start_next();
    }

    /// Now and then, when everything is quiet, asks memory whether a dream is due.
    pub(super) fn maybe_dream(&mut self) {
        self.dreams.beats += 1;
        if self.dreams.beats < CHECK_EVERY || self.dreams.checking {
            return;
        }
        self.dreams.beats = 0;
        let Some(memory) = self.memory.clone() else { return };
        if !self.idle_for_dream() {
            return;
        }
        self.dreams.checking = true;
        let quiet = now().saturating_duration_since(self.dreams.last_activity);
        let ask = Ask::DreamDue { quiet, rules: self.dreams.rules };
        self.help(async move {
            let due = match memory.ask(ask).await {
                Answer::DreamDue(due) => due,
                _ => None,
            };
            Helped::DreamDue(due)
        });
    }

    /// Whether nothing needs the model: no job, none queued, nobody in a command or chat;
    /// and the model in use may dream on its own.
    fn idle_for_dream(&self) -> bool {
        self.running.is_none()
            && self.queue.depth() == 0
            && self.core.mode() == stt_proto::Mode::Idle
            && self.env.client.as_ref().is_some_and(stt_llm::Provider::supports_tools)
            && dreams_on_its_own(&self.dreams.rules, self.active())
    }

    /// Memory said whether a dream is due.
    pub(super) fn dream_due(&mut self, trigger: Option<String>) {
        self.dreams.checking = false;
        if let Some(trigger) = trigger.filter(|_| self.idle_for_dream()) {
            tracing::info!(%trigger, "a dream is due");
            self.queue.want(Job::Dream { trigger });
            self.start_next();
        }
    }

    /// The memory tree may want a summary (its buffer grew or was closed): a job looks once
    /// the model is free.
    pub(super) fn tree_may_be_due(&mut self) {
        if self.memory.as_ref().is_some_and(crate::memory::Memory::tree) {
            self.queue.want(Job::Tree);
        }
    }

    /// The work of the dream starting now (`trigger`: why); whoever asked for it is told.
    pub(super) fn dream_work(&mut self, trigger: String) -> Work {
        for reply in self.dreams.waiting.drain(..) {
            let _ = reply.send(AssistantEvent::MemoryOutput {
                text: format!(
                    "a dream started ({trigger}); `stt-ctl memory dreams` shows what it did"
                ),
                entries: vec![],
            });
        }
        Work::Dream { trigger, max_steps: self.dreams.max_steps }
    }

    /// The dream job ended: one that did not finish is recorded as interrupted (what it
    /// processed stays processed; the rest waits for the next).
    pub(super) fn dream_over(&mut self, end: End) {
        if end == End::Done {
            return;
        }
        let Some(memory) = self.memory.clone() else { return };
        let status = if end == End::Cancelled { "interrupted" } else { "failed" };
        self.note(format!("memory: the dream was {status}; it goes on later"));
        self.help(async move {
            memory.ask(Ask::DreamEnd { status: status.into(), note: String::new() }).await;
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
