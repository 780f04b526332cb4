//! The owner's job lifecycle: the next job from the queue starts (when the providers let
//! it; the loop asks once per turn), its reports are taken in (published, remembered, kept
//! for the session), and its end makes way for the next. What differs by kind is asked of
//! its row ([`JobKind::rule`]), of the work itself, or of one exhaustive match at the end of
//! [`Owner::finished`].

use tokio::sync::oneshot;

use stt_proto::{AssistantEvent, ChatMessage, ChatRole, ErrorCode};

use super::providers::Go;
use super::{Input, Owner, Running};
use crate::kind::{JobKind, Resumes};
use crate::llm::{self, End, JobEnv, Report, Work};
use crate::memory::Episode;
use crate::queue::{InferenceQueue, Job};
use crate::session::Tokens;

/// The model jobs the owner keeps: the queue, what a job is started with, the one running,
/// and the requests waiting for a kind to start.
#[derive(Debug)]
pub(super) struct Side {
    pub(super) queue: InferenceQueue,
    pub(super) env: JobEnv,
    pub(super) running: Option<Running>,
    /// The id the next job gets.
    pub(super) next: u64,
    /// Bumped by every `clear`: what a chat job of an older epoch reports is dropped.
    pub(super) epoch: u64,
    /// Requests waiting for a job of a kind to start (`memory dream`), and what they are
    /// answered then.
    pub(super) starts: Vec<(JobKind, oneshot::Sender<AssistantEvent>, AssistantEvent)>,
}

impl Owner {
    /// Starts the next queued job, unless one is running or the providers say to wait (no
    /// probe has chosen one yet: the first comes within a fraction of a second of the start;
    /// a server still loading its model would refuse the job).
    pub(super) fn start_next(&mut self) {
        if self.jobs.running.is_some() {
            return;
        }
        if self.registry.is_some() {
            let (active, has_client) = (self.active(), self.jobs.env.client.is_some());
            match self.providers.go(active, has_client, self.jobs.queue.depth() > 0) {
                Go::Start => {}
                Go::Wait => return,
                Go::ProbeFirst => return self.probe_now(),
            }
        }
        // Background work a person stopped goes on as its row says: at once, or once
        // things are quiet again.
        let quiet = self.quiet();
        let may = |job: &Job| match job {
            Job::Background { work, resumed: true } => {
                work.kind().rule().resumes == Resumes::AtOnce || quiet
            }
            _ => true,
        };
        let Some(job) = self.jobs.queue.start_next(may) else { return };
        let id = self.job_id();
        self.jobs.env.fallback = self.fallback(job.kind().rule().tools);
        // A chat turn's words, as sent, for the session's display turns.
        let (work, segs, question) = match job {
            Job::Command { text, edited, segs } => {
                let episode = Episode::Command(id);
                self.remember(episode, stt_memory::Role::User, None, &text);
                (Work::Command { text, edited, episode }, segs, String::new())
            }
            Job::Chat(turn) => {
                let episode = self.chat_episode();
                self.remember(episode, stt_memory::Role::User, turn.speaker.name(), &turn.words);
                let (segs, line) = (turn.segs.clone(), turn.line());
                (self.chat_work(turn), segs, line)
            }
            Job::Background { work, .. } => (work, vec![], String::new()),
        };
        self.launch(id, work, &segs, question);
    }

    /// The next job's id: the one place ids are given.
    pub(super) fn job_id(&mut self) -> u64 {
        let id = self.jobs.next;
        self.jobs.next += 1;
        id
    }

    /// Starts job `id` doing `work` (said in segments `segs`; `question`: a chat turn's
    /// words). Whoever waits for a job of its kind to start is told.
    pub(super) fn launch(&mut self, id: u64, work: Work, segs: &[u64], question: String) {
        // Everything the job logs names it; this names its segments.
        let span = tracing::info_span!("job", job = id);
        span.in_scope(|| {
            for seg_id in segs {
                tracing::debug!(seg_id, "job for segment");
            }
        });
        let kind = work.kind();
        for (_, reply, said) in
            self.jobs.starts.extract_if(.., |(waits_for, ..)| *waits_for == kind)
        {
            let _ = reply.send(said);
        }
        // Background work a person stops is wanted again, as it was.
        let again =
            (!kind.rule().person && kind.rule().resumes != Resumes::Never).then(|| work.clone());
        self.jobs.env.chat_system.clone_from(&self.chat.session.system);
        let out = crate::lane::Sink::to(&self.inputs, move |report| Input::Llm { job: id, report });
        let handle = llm::spawn(&self.jobs.env, work, self.jobs.epoch, span.clone(), out);
        span.in_scope(|| tracing::debug!(kind = handle.kind.name(), "job started"));
        self.jobs.running = Some(Running {
            job: id,
            handle,
            reply_id: None,
            question,
            answer: String::new(),
            stopped: false,
            cut: false,
            again,
            preempted: false,
            started: self.clock.now(),
            tokens: None,
            spoken: 0,
        });
    }

    pub(super) fn on_report(&mut self, job: u64, report: Report) {
        let Some(running) = self.jobs.running.as_ref().filter(|r| r.job == job) else {
            tracing::debug!("a report from a job that is over: {report:?}");
            return;
        };
        let current = running.handle.epoch == self.jobs.epoch;
        // A `clear` came after this chat turn started: nothing of it is shown or kept.
        let stale = running.handle.is(JobKind::Chat) && !current;
        let command = running.handle.is(JobKind::Command);
        match &report {
            Report::Publish(AssistantEvent::ToolCall(call)) if command => {
                let line = format!("{}({})", call.tool, call.args);
                self.remember(Episode::Command(job), stt_memory::Role::Tool, None, &line);
            }
            // What recall found is in memory already: only the call is kept.
            Report::Publish(AssistantEvent::ToolResult(result))
                if command
                    && !matches!(crate::tool::Named::of(&result.tool),
                        crate::tool::Named::Memory(tool) if tool.reads_only()) =>
            {
                let line = format!("{} → {}", result.tool, result.result);
                self.remember(Episode::Command(job), stt_memory::Role::Tool, None, &line);
            }
            Report::Reply { text, partial: false, .. } if command && !text.trim().is_empty() => {
                self.remember(Episode::Command(job), stt_memory::Role::Assistant, None, text);
            }
            _ => {}
        }
        match report {
            Report::Publish(event) if !stale => self.publish(&event),
            Report::Reply { text, partial, stopped } if !stale => {
                if let Some(running) = self.jobs.running.as_mut() {
                    if partial {
                        running.answer.push_str(&text);
                    } else {
                        running.answer.clone_from(&text);
                    }
                    running.cut |= stopped;
                }
                if !stopped {
                    self.speak_answer(!partial);
                }
                let id = self.reply_id();
                self.publish(&AssistantEvent::ChatMessage(ChatMessage {
                    id,
                    role: ChatRole::Assistant,
                    speaker: None,
                    text,
                    partial,
                    stopped,
                }));
            }
            Report::Note(text) if !stale => self.note(text),
            Report::Failed(text) if !stale => self.chat_error(text),
            Report::Publish(_) | Report::Reply { .. } | Report::Note(_) | Report::Failed(_) => {}
            Report::Usage(usage) => {
                if let Some(running) = self.jobs.running.as_mut() {
                    let mut tokens = running.tokens.unwrap_or_default();
                    tokens.add(Tokens::of(usage));
                    running.tokens = Some(tokens);
                }
            }
            Report::Resume(handle) => {
                if current {
                    self.chat.session.handle = Some(handle);
                }
            }
            Report::Reachable(reachable) => self.providers.answered(reachable),
            report @ (Report::Confirm { .. }
            | Report::ConfirmOver { .. }
            | Report::Timer { .. }
            | Report::Audit(_)) => self.tool_report(report),
            Report::Hinted(notes) if !stale => {
                for note in notes {
                    self.note(note);
                }
            }
            Report::Hinted(_) => {}
            Report::DreamNow => self.want_dream("asked"),
            Report::Wake(asked) => self.wake_asked(asked),
            Report::Reminder(text) if current => self.reminder(text),
            Report::Reminder(_) => {}
            Report::TreeMore(true) => self.tree_may_be_due(),
            Report::TreeMore(false) => {}
            Report::Extracted(window, outcome) => self.triage_extracted(*window, outcome),
            Report::Conversation(chat) => {
                if current {
                    self.chat.session.set_chat(&chat);
                    self.save_session();
                    self.chat.conversation = chat;
                }
            }
            Report::Finished(end) => self.finished(end),
        }
    }

    /// What a tool's run asks of the loop, whoever wrote the call (the model, or a template):
    /// a yes or no to wait for, a timer, an audit record.
    pub(super) fn tool_report(&mut self, report: Report) {
        match report {
            Report::Confirm { call_id, answer } => {
                self.core.confirmation_requested(&call_id);
                self.waiting.answers.insert(call_id, answer);
            }
            Report::ConfirmOver { call_id } => {
                self.core.confirmation_over(&call_id);
                self.waiting.answers.remove(&call_id);
            }
            Report::Timer { after, label } => {
                let id = self.core.next_id();
                tracing::info!(id, %label, seconds = after.as_secs_f64(), "timer set");
                let (now, local) = (self.clock.now(), self.clock.local_now());
                self.timers.add(id, label, now + after, local + after);
                self.save_timers();
            }
            Report::Audit(record) => self.writer.audit_action(*record),
            other => tracing::debug!("not a tool's report: {other:?}"),
        }
    }

    /// The id of the running job's reply line, given on its first piece.
    pub(super) fn reply_id(&mut self) -> u64 {
        let Some(running) = self.jobs.running.as_mut() else { return self.core.next_id() };
        *running.reply_id.get_or_insert_with(|| self.core.next_id())
    }

    /// The running job is over: the next one starts.
    pub(super) fn finished(&mut self, end: End) {
        let Some(running) = self.jobs.running.take() else { return };
        self.jobs.queue.done();
        // Whatever it still waited for is moot.
        for call_id in std::mem::take(&mut self.waiting.answers).into_keys() {
            self.core.confirmation_over(&call_id);
        }
        tracing::debug!(?end, "job over");
        let kind = running.handle.kind;
        if kind.rule().person {
            self.activity();
        }
        // Background work a person stopped goes on later.
        if running.preempted
            && end == End::Cancelled
            && let Some(work) = running.again.clone()
        {
            self.jobs.queue.want_again(work);
        }
        if end == End::Panicked {
            self.error(
                ErrorCode::Internal,
                "the job failed on a bug in stt-assistant (see its log); the next one runs",
            );
        }
        // What each kind leaves to do once it is over: every kind says, even "nothing".
        match kind {
            JobKind::Command => {
                if end == End::Cancelled {
                    self.note("command cancelled".into());
                }
                if let Some(memory) = &self.memory.lane {
                    memory.close(Episode::Command(running.job));
                }
                let effects = self.core.execution_finished(self.clock.now());
                self.apply(effects);
            }
            JobKind::Chat if running.handle.epoch == self.jobs.epoch => {
                self.chat_finished(&running, end);
            }
            // A chat turn of a conversation since cleared: nothing of it is kept.
            JobKind::Chat => {}
            JobKind::Dream => self.dream_over(end),
            JobKind::Proactive | JobKind::Tree | JobKind::Triage => {}
        }
    }
}
