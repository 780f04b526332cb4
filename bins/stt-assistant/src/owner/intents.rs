//! The owner's side of commands answered without the model ([`crate::intents`]): an armed
//! command whose words a template takes whole runs here at `command_execute`, not in the
//! model's queue, so it needs no model, waits behind no job and stops none.
//!
//! What the loop holds (timers, the voice, dictation, do not disturb) is done in the loop at
//! once; what goes through a tool (a timer set, a reminder or task kept, a configured tool)
//! runs in a helper task with the model path's own [`llm::command::run_call`] (confirmation,
//! `tool_call`/`tool_result`, the audit log), reporting as [`Input::Local`] in order, its
//! answer last. Either way the answer is the intent's template, said in the conversation
//! (and aloud with the voice on), after a note that says no model answered; the audit log
//! writes `"by": "local"`.

use std::time::Instant;

use serde_json::json;
use stt_proto::{AssistantEvent, ChatMessage, ChatRole, ErrorCode, Request, SideEffect};
use stt_tools::ActionRecord;

use super::{Helped, Input, Owner, wake};
use crate::intents::{self, Action, Can, Decided, Local};
use crate::lane::Sink;
use crate::llm::command::{Asked, By, run_call};
use crate::llm::{End, JobEnv, Report};
use crate::memory::Episode;

/// The loop's part: the intents, and the command running here.
#[derive(Debug, Default)]
pub(super) struct Side {
    /// `None` when `[intents].enabled` is false.
    local: Option<Local>,
    running: Option<Running>,
}

impl Side {
    pub(super) fn new(local: Option<Local>) -> Self {
        Self { local, running: None }
    }
}

/// A command running here.
#[derive(Debug)]
struct Running {
    job: u64,
    text: String,
    edited: bool,
    intent: String,
    started: Instant,
    /// Dictation goes on once the command is over (it starts from idle only).
    dictate_after: bool,
}

impl Owner {
    /// What `text` asks for, when it is answered here.
    pub(super) fn decided_here(&self, text: &str) -> Option<Decided> {
        let local = self.intents.local.as_ref()?;
        let can = Can { memory: self.memory.lane.is_some(), wake: self.wake.is_some() };
        local.decide(text, self.clock.local_now().naive_local(), can)
    }

    /// `intent_test`: what `text` would do as a command, without running it.
    pub(super) fn intent_test(&self, text: &str) -> AssistantEvent {
        let Some(local) = self.intents.local.as_ref() else {
            let text = "the model: commands without the model are off ([intents].enabled)".into();
            return AssistantEvent::IntentOutput { text, intent: None };
        };
        let local_now = self.clock.local_now().naive_local();
        let can = Can { memory: self.memory.lane.is_some(), wake: self.wake.is_some() };
        let Some(decided) = local.decide(text, local_now, can) else {
            let why = local.why_not(text, local_now);
            return AssistantEvent::IntentOutput {
                text: format!("the model: {why}"),
                intent: None,
            };
        };
        let said = format!(
            "{} (template: {})\naction: {}",
            decided.intent,
            decided.template,
            intents::describe(&decided.action, local_now)
        );
        AssistantEvent::IntentOutput { text: said, intent: Some(decided.intent) }
    }

    /// A spoken command's words so far, its last segment's final still to come: when a
    /// template takes them whole and its answer is known before it runs, the voice
    /// synthesizes it now, to say at once when the final comes and the command runs (the
    /// words the final brings are decided again; other words are synthesized then).
    pub(super) fn foresee(&mut self, partial: &str) {
        let (Some(voice), true) = (&self.voice.lane, self.voice.on) else { return };
        let (buffer, edited) = self.core.buffer();
        if self.core.mode() != stt_proto::Mode::CommandArmed || edited || partial.trim().is_empty()
        {
            return;
        }
        let text = format!("{buffer} {}", partial.trim());
        if let Some(answer) = self.decided_here(text.trim()).and_then(|d| self.foreseen(&d)) {
            voice.prepare(&answer);
        }
    }

    /// The answer a command decided here will have, when it can be known before it runs:
    /// the time, the date, a timer set, a reminder or task kept (their templates, as they
    /// are said once done).
    fn foreseen(&self, decided: &Decided) -> Option<String> {
        let local = self.intents.local.as_ref()?;
        let local_now = self.clock.local_now().naive_local();
        let said = |values: &[(&str, &str)]| local.answer(&decided.intent, values);
        Some(match &decided.action {
            Action::Time => said(&[("time", &intents::clock(local_now))]),
            Action::TimeIn { zone } => {
                let there = self.clock.local_now().with_timezone(zone).naive_local();
                said(&[("time", &intents::clock(there)), ("place", &stt_intent::zone::city(*zone))])
            }
            Action::Date => said(&[("date", &intents::day(local_now))]),
            Action::TimerSet { seconds, label } => {
                said(&[("duration", &intents::duration(*seconds)), ("label", label)])
            }
            Action::ReminderAdd { text, due } => {
                said(&[("text", text), ("when", &intents::when(*due, local_now))])
            }
            Action::TaskAdd { title } => said(&[("title", title)]),
            _ => return None,
        })
    }

    /// Whether the armed command would be answered here.
    pub(super) fn armed_here(&self) -> bool {
        self.core.mode() == stt_proto::Mode::CommandArmed
            && self.decided_here(self.core.buffer().0).is_some()
    }

    /// Runs a command decided here (the core is executing it).
    pub(super) fn run_here(&mut self, decided: Decided, text: String, edited: bool) {
        let job = self.job_id();
        let span = tracing::info_span!("job", job);
        let _entered = span.enter();
        tracing::info!(intent = %decided.intent, template = %decided.template, "answered without the model");
        self.answered();
        // "Forget what I just said" is not kept either.
        let forgets = decided.action == Action::ForgetLast;
        if !forgets {
            self.remember(Episode::Command(job), stt_memory::Role::User, None, &text);
        }
        self.note(format!("answered here, without the model ({})", decided.intent));
        self.intents.running = Some(Running {
            job,
            text,
            edited,
            intent: decided.intent.clone(),
            started: self.clock.now(),
            dictate_after: false,
        });
        let local_now = self.clock.local_now().naive_local();
        let answer = |owner: &Self, values: &[(&str, &str)]| {
            owner
                .intents
                .local
                .as_ref()
                .map(|l| l.answer(&decided.intent, values))
                .unwrap_or_default()
        };
        match decided.action {
            Action::Time | Action::Date | Action::TimeIn { .. } => {
                let said = self.foreseen(&decided).unwrap_or_default();
                let args = match decided.action {
                    Action::TimeIn { zone } => json!({"zone": zone.name()}),
                    _ => json!({}),
                };
                self.done_here(
                    said,
                    stt_tools::Builtin::GetDatetime.name(),
                    args,
                    SideEffect::ReadOnly,
                    true,
                );
            }
            Action::TimerList => {
                let said = answer(self, &[("timers", &self.timers_said(None))]);
                self.done_here(said, "timer_list", json!({}), SideEffect::ReadOnly, true);
            }
            Action::TimerCancel { label } => {
                let (ok, cancelled) = self.cancel_timers(label.as_deref(), false);
                let said = answer(self, &[("cancelled", &cancelled)]);
                self.done_here(
                    said,
                    "timer_cancel",
                    json!({"label": label}),
                    SideEffect::Local,
                    ok,
                );
            }
            Action::TimerCancelAll => {
                let (ok, cancelled) = self.cancel_timers(None, true);
                let said = answer(self, &[("cancelled", &cancelled)]);
                self.done_here(said, "timer_cancel", json!({"all": true}), SideEffect::Local, ok);
            }
            Action::Voice(on) => {
                let result = match (on, self.voice.on) {
                    (true, true) | (false, false) => Ok(()),
                    (true, false) => self.voice_on(),
                    (false, true) => {
                        self.hush();
                        self.voice.on = false;
                        Ok(())
                    }
                };
                let (ok, said) = match result {
                    Ok(()) => (true, answer(self, &[])),
                    Err(why) => (false, why),
                };
                let tool = if on { "voice_on" } else { "voice_off" };
                self.done_here(said, tool, json!({}), SideEffect::Local, ok);
            }
            Action::Dictate(true) => {
                if let Some(running) = self.intents.running.as_mut() {
                    running.dictate_after = true;
                }
                let said = answer(self, &[]);
                self.done_here(said, "dictate_on", json!({}), SideEffect::Local, true);
            }
            Action::Dictate(false) => {
                // A command cannot be armed while dictating: there is nothing to stop.
                let said = "Dictation is not on.".to_owned();
                self.done_here(said, "dictate_off", json!({}), SideEffect::Local, true);
            }
            Action::Quiet { minutes } => {
                self.wake_asked(crate::wake::Asked::Quiet(minutes));
                let until = self.wake.as_ref().and_then(wake::Side::quiet_until);
                let said = match until {
                    Some(until) if minutes > 0 => {
                        let until = intents::when(until.naive_local(), local_now);
                        answer(self, &[("until", until.as_str())])
                    }
                    _ => answer(self, &[]),
                };
                self.done_here(
                    said,
                    "set_do_not_disturb",
                    json!({"minutes": minutes}),
                    SideEffect::Local,
                    true,
                );
            }
            action => self.run_in_helper(job, action, decided.intent),
        }
    }

    /// The running command's answer, its audit record, and its end.
    fn done_here(
        &mut self,
        said: String,
        tool: &str,
        args: serde_json::Value,
        side_effect: SideEffect,
        ok: bool,
    ) {
        let Some(running) = self.intents.running.as_ref() else { return };
        let latency_ms =
            u64::try_from(self.clock.now().saturating_duration_since(running.started).as_millis())
                .unwrap_or(u64::MAX);
        self.writer.audit_action(ActionRecord {
            ts: stt_tools::audit::timestamp(self.clock.local_now()),
            mode: "command".into(),
            text: running.text.clone(),
            edited: running.edited,
            tool: tool.to_owned(),
            args,
            side_effect,
            requires_confirmation: false,
            confirmed: None,
            ok,
            result: said.clone(),
            latency_ms,
            by: By::Local.name().into(),
            outside: None,
        });
        self.reply_here(said);
        self.finished_here();
    }

    /// The answer, in the conversation, aloud with the voice on, and in memory.
    fn reply_here(&mut self, said: String) {
        let Some(running) = self.intents.running.as_ref() else { return };
        if said.trim().is_empty() {
            return;
        }
        if running.intent != "forget_last" {
            self.remember(Episode::Command(running.job), stt_memory::Role::Assistant, None, &said);
        }
        if self.voice.on
            && let Some(voice) = &self.voice.lane
        {
            voice.say(&said);
            if let Some(why) = self.voice.fallback.take() {
                self.error(ErrorCode::Internal, why);
            }
        }
        let id = self.core.next_id();
        self.publish(&AssistantEvent::ChatMessage(ChatMessage {
            id,
            role: ChatRole::Assistant,
            speaker: None,
            text: said,
            partial: false,
            stopped: false,
        }));
    }

    /// The command run here is over: back to idle, and dictation on if it asked for it.
    fn finished_here(&mut self) {
        let Some(running) = self.intents.running.take() else { return };
        tracing::debug!(job = running.job, intent = %running.intent, "answered here: over");
        if let Some(memory) = &self.memory.lane {
            memory.close(Episode::Command(running.job));
        }
        let effects = self.core.execution_finished(self.clock.now());
        self.apply(effects);
        if running.dictate_after
            && let AssistantEvent::Error(e) = self.request(&Request::DictateStart)
        {
            self.error(e.code, e.message);
        }
    }

    /// Runs what goes through a tool or memory in a helper, reporting as [`Input::Local`].
    fn run_in_helper(&mut self, job: u64, action: Action, intent: String) {
        let Some(running) = self.intents.running.as_ref() else { return };
        let (text, edited) = (running.text.clone(), running.edited);
        let out = crate::lane::Sink::to(&self.inputs, move |report| Input::Local { job, report });
        let env = self.jobs.env.clone();
        let conversation = self.chat.conversation.clone();
        let local = self.intents.local.clone();
        let at = self.clock.local_now();
        let today = at.date_naive().to_string();
        self.help(async move {
            let said = |values: &[(&str, &str)]| {
                local.as_ref().map(|l| l.answer(&intent, values)).unwrap_or_default()
            };
            let here = Here { text: &text, edited, at, today: &today, conversation };
            let answer = run_action(&env, action, &here, &said, &out).await;
            out.send(Report::Reply { text: answer, partial: false, stopped: false });
            out.send(Report::Finished(End::Done));
            Helped::Nothing
        });
    }

    /// A report of the command running here.
    pub(super) fn on_local(&mut self, job: u64, report: Report) {
        if self.intents.running.as_ref().is_none_or(|r| r.job != job) {
            tracing::debug!("a report from a command that is over: {report:?}");
            return;
        }
        match report {
            Report::Publish(event) => {
                let line = match &event {
                    AssistantEvent::ToolCall(call) => Some(format!("{}({})", call.tool, call.args)),
                    AssistantEvent::ToolResult(r) => Some(format!("{} → {}", r.tool, r.result)),
                    _ => None,
                };
                if let Some(line) = line {
                    self.remember(Episode::Command(job), stt_memory::Role::Tool, None, &line);
                }
                self.publish(&event);
            }
            Report::Reply { text, .. } => self.reply_here(text),
            report @ (Report::Confirm { .. }
            | Report::ConfirmOver { .. }
            | Report::Timer { .. }
            | Report::Audit(_)) => self.tool_report(report),
            Report::Wake(asked) => self.wake_asked(asked),
            Report::Note(text) => self.note(text),
            // What was forgotten was the chat's last exchange.
            Report::Conversation(chat) => {
                self.chat.session.set_chat(&chat);
                self.save_session();
                self.chat.conversation = chat;
            }
            Report::Finished(_) => self.finished_here(),
            _ => {}
        }
    }

    /// The timers, as said: "2 timers: pasta, 3 minutes left; tea, 50 seconds left."
    fn timers_said(&self, label: Option<&str>) -> String {
        let timers = self.timers.list(self.clock.now());
        let timers: Vec<_> =
            timers.iter().filter(|t| label.is_none_or(|l| same(&t.label, l))).collect();
        let one = |t: &stt_proto::TimerInfo| {
            let left = intents::duration(t.remaining_s.max(1.0));
            if t.label.is_empty() || t.label == "timer" {
                format!("{left} left")
            } else {
                format!("{}, {left} left", t.label)
            }
        };
        match timers.as_slice() {
            [] if label.is_some() => "No timer like that is running.".into(),
            [] => "No timers are running.".into(),
            [t] => format!("One timer: {}.", one(t)),
            many => format!(
                "{} timers: {}.",
                many.len(),
                many.iter().map(|t| one(t)).collect::<Vec<_>>().join("; ")
            ),
        }
    }

    /// Cancels the timer with `label` (or the only one), or every timer with `all`; (ok, as said).
    fn cancel_timers(&mut self, label: Option<&str>, all: bool) -> (bool, String) {
        let timers = self.timers.list(self.clock.now());
        let chosen: Vec<u64> = timers
            .iter()
            .filter(|t| all || label.is_none_or(|l| same(&t.label, l)))
            .map(|t| t.id)
            .collect();
        match (chosen.len(), all) {
            (0, _) if timers.is_empty() => (true, "No timers are running.".into()),
            (0, _) => (false, format!("No timer like that is running. {}", self.timers_said(None))),
            (n, false) if n > 1 => (false, format!("Which one? {}", self.timers_said(None))),
            (n, _) => {
                for id in &chosen {
                    self.timers.cancel(*id);
                }
                self.save_timers();
                tracing::info!(timers = n, "timers cancelled");
                (
                    true,
                    if n == 1 {
                        "Timer cancelled.".into()
                    } else {
                        format!("{n} timers cancelled.")
                    },
                )
            }
        }
    }
}

/// Whether a timer's `label` is what a person called it (`said`): the same words as the
/// templates read them (numbers as digits, no punctuation), an article or "timer" aside.
fn same(label: &str, said: &str) -> bool {
    let words = |s: &str| -> Vec<String> {
        stt_intent::words::words(s)
            .into_iter()
            .map(|w| w.key)
            .filter(|k| !["the", "a", "my", "timer"].contains(&k.as_str()))
            .collect()
    };
    !words(said).is_empty() && words(label) == words(said)
}

/// What a command run here was said with, and when.
struct Here<'a> {
    text: &'a str,
    edited: bool,
    /// The local time the command was run at (the owner's clock).
    at: chrono::DateTime<chrono::Local>,
    today: &'a str,
    /// The chat conversation as the command found it.
    conversation: crate::llm::Chat,
}

/// Runs `action` through its tool or memory; returns the answer.
async fn run_action(
    env: &JobEnv,
    action: Action,
    here: &Here<'_>,
    said: &impl Fn(&[(&str, &str)]) -> String,
    out: &Sink<Report>,
) -> String {
    let Here { text, edited, at, today, .. } = *here;
    let now = at.naive_local();
    let call = |name: &str, args: serde_json::Value| stt_llm::ToolCall {
        id: format!("local_{name}"),
        name: name.to_owned(),
        arguments: args,
    };
    let mut added = Vec::new();
    let mut run = async |c: stt_llm::ToolCall| {
        let asked = Asked { text, edited, by: By::Local, outside: None };
        run_call(env, &c, asked, &mut added, out).await
    };
    match action {
        Action::TimerSet { seconds, label } => {
            let label_or =
                if label.is_empty() { intents::duration(seconds) } else { label.clone() };
            let outcome = run(call(
                stt_tools::Builtin::SetTimer.name(),
                json!({"minutes": seconds / 60.0, "label": label_or}),
            ))
            .await;
            if !outcome.ok() {
                return outcome.result().to_owned();
            }
            said(&[("duration", &intents::duration(seconds)), ("label", &label)])
        }
        Action::ReminderAdd { text: what, due } => {
            let args = json!({"text": what, "due": due.format("%Y-%m-%d %H:%M").to_string()});
            let outcome = run(call(crate::memory::Tool::AddIntention.name(), args)).await;
            if !outcome.ok() {
                return outcome.result().to_owned();
            }
            // It is said when it is due, too, while the assistant runs.
            let wait = (due - now).num_seconds();
            if (1..=24 * 3600).contains(&wait) {
                out.send(Report::Timer {
                    after: std::time::Duration::from_secs(wait.unsigned_abs()),
                    label: what.clone(),
                });
            }
            said(&[("text", &what), ("when", &intents::when(due, now))])
        }
        Action::TaskAdd { title } => {
            let outcome =
                run(call(crate::memory::Tool::CreateTask.name(), json!({"title": title}))).await;
            if !outcome.ok() {
                return outcome.result().to_owned();
            }
            said(&[("title", &title)])
        }
        Action::Tool { name, args, answered } => {
            let outcome = run(call(&name, args.clone())).await;
            let result = outcome.result().trim();
            // A program that printed nothing: the registry says how long it took.
            let silent = result.starts_with("done in ") && result.ends_with(" ms");
            let output = if silent { "" } else { result };
            if !outcome.ok() {
                return format!("That did not work: {result}");
            }
            if answered {
                let values: Vec<(String, String)> = args
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                    .chain([("result".to_owned(), output.to_owned())])
                    .collect();
                let values: Vec<(&str, &str)> =
                    values.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                return said(&values);
            }
            if output.is_empty() { "Done.".into() } else { output.to_owned() }
        }
        Action::PlanNext => match env.memory.as_ref() {
            Some(memory) => match memory
                .plans(stt_proto::TaskRequest::Next { limit: Some(3) })
                .await
            {
                Ok(answer) if answer.next.is_empty() => "Nothing to do: your list is empty.".into(),
                Ok(answer) => {
                    let items: Vec<String> = answer
                        .next
                        .iter()
                        .map(|a| match (&a.day, a.overdue) {
                            (Some(day), true) => format!("{} (overdue since {day})", a.text),
                            (Some(day), false) if day == today => format!("{} (today)", a.text),
                            (Some(day), false) => format!("{} (on {day})", a.text),
                            (None, _) => a.text.clone(),
                        })
                        .collect();
                    said(&[("next", &format!("Next: {}.", items.join("; then ")))])
                }
                Err(refusal) => refusal.into_why(),
            },
            None => "Memory is off ([memory].enabled): there is no list.".into(),
        },
        Action::TaskDone { title } => match env.memory.as_ref() {
            Some(memory) => {
                let open = memory.plans(stt_proto::TaskRequest::List { status: None }).await;
                let tasks = match open {
                    Ok(answer) => answer.tasks,
                    Err(refusal) => return refusal.into_why(),
                };
                let open: Vec<_> =
                    tasks.iter().filter(|t| t.status == "open" || t.status == "active").collect();
                let found: Vec<_> = open.iter().filter(|t| same(&t.title, &title)).collect();
                match found.as_slice() {
                    [task] => match memory
                        .plans(stt_proto::TaskRequest::Done { id: task.id, item: false })
                        .await
                    {
                        Ok(_) => said(&[("title", &task.title)]),
                        Err(refusal) => refusal.into_why(),
                    },
                    [] => format!("There is no open task called \"{title}\" on your list."),
                    _ => format!(
                        "Several open tasks are called \"{title}\": say which with `stt-ctl task done ID`."
                    ),
                }
            }
            None => "Memory is off ([memory].enabled): there is no list.".into(),
        },
        Action::ReminderList => match env.memory.as_ref() {
            Some(memory) => match memory.list(Some(stt_memory::Kind::Intention), false, 20).await {
                Ok(items) => {
                    let open: Vec<String> = items
                        .iter()
                        .filter(|i| i.state.as_deref().is_none_or(|s| s == "open"))
                        .map(|i| match i.due {
                            Some(due) => {
                                format!("{} ({})", i.body, crate::memory::clock::when(due))
                            }
                            None => i.body.clone(),
                        })
                        .collect();
                    let reminders = if open.is_empty() {
                        "You have no reminders.".to_owned()
                    } else {
                        format!("Your reminders: {}.", open.join("; "))
                    };
                    said(&[("reminders", &reminders)])
                }
                Err(refusal) => refusal.into_why(),
            },
            None => "Memory is off ([memory].enabled): there are no reminders.".into(),
        },
        Action::ForgetLast => forget_last(env, here, said, out).await,
        // Done in the loop ([`Owner::run_here`]).
        Action::Time
        | Action::TimeIn { .. }
        | Action::Date
        | Action::TimerList
        | Action::TimerCancel { .. }
        | Action::TimerCancelAll
        | Action::Voice(_)
        | Action::Dictate(_)
        | Action::Quiet { .. } => String::new(),
    }
}

/// Forgets what the person said last, and the chat's last exchange when that was it; the
/// forget is audited (what was forgotten is not written there).
async fn forget_last(
    env: &JobEnv,
    here: &Here<'_>,
    said: &impl Fn(&[(&str, &str)]) -> String,
    out: &Sink<Report>,
) -> String {
    let Some(memory) = env.memory.as_ref() else {
        return "Memory is off ([memory].enabled): nothing was kept.".into();
    };
    let started = std::time::Instant::now();
    let forgot = memory.forget_last().await;
    let (ok, answer) = match &forgot {
        Ok(Some(words)) => (true, said(&[("forgotten", &format!("Forgotten: \"{words}\"."))])),
        Ok(None) => (true, said(&[("forgotten", "There is nothing to forget.")])),
        Err(refusal) => (false, refusal.why().to_owned()),
    };
    if let Ok(Some(words)) = &forgot {
        let turns = &here.conversation.turns;
        let last_user = turns.iter().rposition(|m| m.role == stt_llm::Role::User);
        if let Some(at) = last_user.filter(|&at| turns[at].content.trim() == words.trim()) {
            let mut chat = here.conversation.clone();
            chat.turns.truncate(at);
            out.send(Report::Conversation(chat));
        }
    }
    out.send(Report::Audit(Box::new(ActionRecord {
        ts: stt_tools::audit::timestamp(here.at),
        mode: "command".into(),
        text: here.text.to_owned(),
        edited: here.edited,
        tool: "forget_last".into(),
        args: json!({}),
        side_effect: SideEffect::Destructive,
        requires_confirmation: false,
        confirmed: None,
        ok,
        result: if ok { "forgot the last thing said".into() } else { answer.clone() },
        latency_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        by: By::Local.name().into(),
        outside: None,
    })));
    answer
}

#[cfg(test)]
mod tests {
    use super::same;

    #[test]
    fn a_timer_is_known_by_its_words_without_articles() {
        assert!(same("pasta", "the pasta"));
        assert!(same("Pasta timer", "pasta"));
        assert!(!same("pasta", "tea"));
        assert!(!same("10 minutes", "the"));
        assert!(same("10 minutes", "ten minutes"), "numbers as the templates read them");
    }
}
