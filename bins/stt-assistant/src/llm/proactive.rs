//! A proactive turn: the assistant woke up on its own ([`crate::wake`]) and looks at what is
//! due. With nothing in the planner or memory's intentions it asks the model nothing; else
//! the model, given the time, the next actions and the open intentions, writes a short
//! reminder (or `NOTHING` when none is worth an interruption) and may call `heartbeat` to
//! choose when it looks again. The reminder goes to the loop as [`Report::Reminder`]: it is
//! shown in the conversation and, with the voice on, spoken.

use serde_json::Value;
use stt_llm::{Message, Request, ToolSpec};
use stt_memory::Kind;
use stt_proto::{AssistantEvent, ToolCall, ToolResult};

use super::{JobEnv, Report, SLOT_OTHER, complete};
use crate::lane::Sink;
use crate::memory::tools::intention_line;
use crate::wake;

/// What the model is told it is doing.
const SYSTEM: &str = "You are a voice assistant on the user's desktop, speaking up on your \
    own: nobody asked you anything.";

/// What it is asked when something is due today or overdue: whether to remind is decided
/// here (a small model, offered a way out, took it even for a task due today).
const REMIND: &str = "Remind the user of what is due now, in one or two short sentences as \
    you would say them aloud, plain words only.";

/// What it is asked when nothing is due yet.
const MAYBE: &str = "Nothing is due today. If something below is still worth a word now, say \
    it in one short sentence as you would say it aloud; otherwise answer with only the word \
    NOTHING. You may call heartbeat to choose when you look again.";

/// The reminder's length, in tokens.
const MAX_TOKENS: u32 = 120;

/// Open intentions listed at most.
const INTENTIONS: usize = 5;

/// What the job is given: the local time as the loop's clock reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wakeup {
    /// "Monday 7 December 2026, 10:30".
    pub now: String,
    /// "2026-12-07".
    pub today: String,
}

/// Runs one proactive turn.
pub async fn run(env: &JobEnv, wakeup: &Wakeup, out: &Sink<Report>) {
    let Some(memory) = &env.memory else { return };
    let Some(client) = &env.client else { return };
    let next = match memory.plans(stt_proto::TaskRequest::Next { limit: Some(5) }).await {
        Ok(answer) => answer.next,
        Err(refusal) => {
            tracing::warn!("a proactive turn could not read the planner: {}", refusal.why());
            Vec::new()
        }
    };
    let is_due = |a: &stt_proto::NextAction| {
        a.overdue || a.day.as_deref().is_some_and(|d| d <= wakeup.today.as_str())
    };
    let (due_now, later): (Vec<_>, Vec<_>) = next.iter().partition(|a| is_due(a));
    let intentions: Vec<String> = match memory.list(Some(Kind::Intention), false, INTENTIONS).await
    {
        Ok(items) => items.iter().map(intention_line).collect(),
        Err(_) => Vec::new(),
    };
    if next.is_empty() && intentions.is_empty() {
        tracing::info!("a proactive turn found nothing due: the model is not asked");
        return;
    }
    let mut due = format!("It is {}.\n", wakeup.now);
    if !due_now.is_empty() {
        due.push_str(&format!("Due now:\n{}\n", lines(&due_now)));
    }
    if !later.is_empty() {
        due.push_str(&format!("Coming up:\n{}\n", lines(&later)));
    }
    if !intentions.is_empty() {
        due.push_str(&format!("Open intentions:\n{}\n", intentions.join("\n")));
    }
    due.push('\n');
    let ask = if due_now.is_empty() { MAYBE } else { REMIND };
    due.push_str(ask);
    // With something due, only the reminder is asked for: offered a tool, the small model
    // called it and wrote no reminder, twice in a row. With nothing due yet it may choose
    // when to look again instead.
    let tools: Vec<ToolSpec> = Some(wake::spec(HEARTBEAT))
        .into_iter()
        .filter(|_| due_now.is_empty())
        .map(|s| ToolSpec { name: s.name, description: s.description, parameters: s.parameters })
        .collect();
    let mut messages = vec![Message::system(SYSTEM), Message::user(due)];
    // At most two requests: a reply that only calls heartbeat gets one more for its words.
    for round in 0..2 {
        let offered: &[ToolSpec] = if round == 0 { &tools } else { &[] };
        let request = Request {
            messages: &messages,
            tools: offered,
            stream: false,
            max_tokens: MAX_TOKENS,
            temperature: 0.0,
            resume: None,
            slot: Some(SLOT_OTHER),
        };
        let reply = match complete(env, client, &request, out, |_| {}).await {
            Ok(reply) => reply,
            Err(e) => {
                tracing::warn!("a proactive turn failed: {}", env.explain(&e));
                return;
            }
        };
        let calls = if reply.tool_calls.is_empty() {
            let schema = offered.first().map(|t| &t.parameters);
            stt_llm::find_calls(&reply.content, |name| schema.filter(|_| name == HEARTBEAT.name()))
                .calls
        } else {
            reply.tool_calls.clone()
        };
        let mut results = Vec::new();
        for call in calls.iter().filter(|c| c.name == HEARTBEAT.name()).take(1) {
            results.push(heartbeat(&call.id, &call.arguments, out));
        }
        let words = without_calls(&reply.content);
        if !words.is_empty() || results.is_empty() {
            if !is_nothing(&words) {
                out.send(Report::Reminder(words));
            }
            return;
        }
        messages.push(Message::calls(calls));
        for (id, result) in results {
            messages.push(Message::tool(id, result));
        }
        messages.push(Message::user(ask));
    }
}

/// The one tool a wake-up turn is offered: when to look again.
const HEARTBEAT: wake::Tool = wake::Tool::Heartbeat;
/// Next actions one a line: what, of which task, when.
fn lines(actions: &[&stt_proto::NextAction]) -> String {
    actions
        .iter()
        .map(|a| {
            let of =
                if a.text == a.task_title { String::new() } else { format!(" ({})", a.task_title) };
            let when = match (&a.day, a.overdue) {
                (Some(day), true) => format!(", overdue since {day}"),
                (Some(day), false) => format!(", on {day}"),
                (None, _) => String::new(),
            };
            format!("- {}{of}{when}", a.text)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs a `heartbeat` call: the loop is asked for the wake-up, viewers see the call.
fn heartbeat(id: &str, args: &Value, out: &Sink<Report>) -> (String, String) {
    out.send(Report::Publish(AssistantEvent::ToolCall(ToolCall {
        call_id: id.to_owned(),
        tool: HEARTBEAT.name().into(),
        args: args.clone(),
        side_effect: stt_proto::SideEffect::Local,
        requires_confirmation: false,
        awaiting_confirmation: false,
        outside: None,
    })));
    let (ok, result) = match wake::ask(HEARTBEAT, args) {
        Ok(asked) => {
            out.send(Report::Wake(asked));
            (true, wake::told(asked))
        }
        Err(why) => (false, why),
    };
    out.send(Report::Publish(AssistantEvent::ToolResult(ToolResult {
        call_id: id.to_owned(),
        tool: HEARTBEAT.name().into(),
        ok,
        result: result.clone(),
        latency_ms: 0,
    })));
    (id.to_owned(), result)
}

/// The words of a reply without a call written into it as JSON.
fn without_calls(content: &str) -> String {
    let text = match (content.find('{'), content.rfind('}')) {
        (Some(from), Some(to)) if from < to && content[from..=to].contains(HEARTBEAT.name()) => {
            format!("{} {}", &content[..from], &content[to + 1..])
        }
        _ => content.to_owned(),
    };
    // What is left of a code fence the call was written in.
    text.split_whitespace().filter(|w| !w.starts_with("```")).collect::<Vec<_>>().join(" ")
}

/// Whether the model said there is nothing worth saying.
fn is_nothing(words: &str) -> bool {
    let bare: String = words.chars().filter(char::is_ascii_alphabetic).collect();
    bare.is_empty() || bare.eq_ignore_ascii_case("nothing")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_and_calls_written_as_text_are_not_a_reminder() {
        assert!(is_nothing("NOTHING."));
        assert!(is_nothing(" nothing "));
        assert!(!is_nothing("Nothing is due, but your passport renewal is tomorrow."));
        assert_eq!(
            without_calls(
                "Time for Rust chapter 3. {\"name\": \"heartbeat\", \"arguments\": {\"minutes\": 60}}"
            ),
            "Time for Rust chapter 3."
        );
        assert_eq!(without_calls("Read {this} now"), "Read {this} now");
        let fenced = "```json\n{\"name\": \"heartbeat\", \"arguments\": {\"minutes\": 10}}\n```";
        assert_eq!(without_calls(fenced), "");
    }
}
