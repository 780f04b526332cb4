//! A command through the tool loop: the model calls tools until it answers without a call or
//! the iteration limit is reached. A tool that needs confirmation waits for a person's yes or
//! no (through the loop, which knows who is waiting); every call is reported and audited.

use std::time::Instant;

use tokio::sync::oneshot;

use stt_llm::{Finish, Message, Provider, Reply, Request, ToolCall as Call, ToolSpec};
use stt_proto::{AssistantEvent, ErrorCode, SideEffect, ToolCall, ToolResult};
use stt_tools::ActionRecord;
use stt_tools::registry::Outcome;

use super::{
    JobEnv, Report, SLOT_COMMAND, SLOT_OTHER, complete, error, no_client, recall, sentences,
};
use crate::lane::Sink;
use crate::memory::{self, Episode, Tool as MemoryTool, tools as memory_tools};
use crate::tool::{Named, is};
use crate::wake;
use stt_tools::Builtin;

/// Commands sample greedily, whatever `[llm].temperature` says (that is chat's): a command
/// wants the likeliest call, and the same words should do the same thing every time. At 0.2
/// the 1.5B model answered "What time is it?" about one time in eight with a time it made up
/// instead of calling `get_datetime`.
const COMMAND_TEMPERATURE: f64 = 0.0;

/// Runs `text` (typed over, when `edited`) through the tool loop.
pub async fn run(env: &JobEnv, text: &str, edited: bool, episode: Episode, out: &Sink<Report>) {
    let Some(client) = &env.client else { return no_client(env, out) };
    if !client.supports_tools() {
        // The loop refuses such a command before it is queued; this guards a switch since.
        return error(
            out,
            ErrorCode::NoExecutor,
            "the provider in use is chat-only: commands need one with tool calls (`/providers`)",
        );
    }
    let settings = &env.settings;
    let said = super::Said { line: text, words: text, speaker: None };
    let prompt = recall(env, &settings.command_system_prompt, said, episode, true, out).await;
    let planner = crate::memory::plans::asks_about_plans(text);
    let tools = tools(env, prompt.memory_tools, prompt.ends, planner, text);
    // The time goes with the words, not in the system prompt: the prefix the server keeps
    // (system prompt and tools) stays the same from one command to the next.
    // Only when its words are about time: the line changes every minute, and with it what a
    // small model writes (the 1.5B model's answer to "what should I do next on my tasks"
    // went from the first item to "Mark plan done." with the line in).
    let mut words = prompt.text.clone();
    let tasks = if planner { open_tasks(env).await } else { Vec::new() };
    if !tasks.is_empty() {
        let shown: Vec<String> =
            tasks.iter().map(|(id, title)| format!("[{id}] {title}")).collect();
        words = format!("(Tasks: {}.)\n\n{words}", shown.join("; "));
    }
    if about_time(text) {
        words = format!("{}\n\n{words}", now_line(chrono::Local::now()));
    }
    let system = with_tail(&prompt.system, !tools.is_empty());
    let mut messages = vec![Message::system(&system), Message::user(&words)];
    // The calls that ran, as (tool, result), for a report.
    let mut ran: Vec<(String, String)> = Vec::new();
    // Intentions this command added (it may not end them too).
    let mut added: Vec<i64> = Vec::new();
    // The nodes of the memory tree explored so far (going down to another is progress).
    let mut explored: Vec<serde_json::Value> = Vec::new();
    // Every call that ran, with whether it went well.
    let mut tried: Vec<(Call, bool)> = Vec::new();
    // Whether the model was told once that a call of its was not run.
    let mut retried = false;
    // Whether the next request asks for the call in [`WRITTEN_WHOLE`]'s words.
    let mut reworded = false;
    // Whether every call that ran went well (then "I cannot do it" denies what was done).
    let mut all_ok = true;
    // The first call whose result is outside content (a page, a file): from then on the
    // requests hold words stt did not write nor the user say, so a call that can reach the
    // network or change the desktop waits for the user's yes (`run_call`).
    let mut outside: Option<String> = None;
    for _ in 0..settings.max_tool_iterations.max(1) {
        // Once a tool has run, what comes is the answer (or one more short call): capped, so
        // a model that rambles after its result costs a few seconds, not half a minute.
        let cap = if ran.is_empty() { Cap::Reply } else { Cap::Answer };
        // Once, after an empty call: the same request with the other way of asking for the
        // call, in the other slot (its system prompt would push the command prefix out).
        let worded = reworded.then(|| {
            let mut again = messages.clone();
            again[0] = Message::system(format!("{} {WRITTEN_WHOLE}", prompt.system));
            again
        });
        reworded = false;
        let request = Request {
            messages: worded.as_deref().unwrap_or(&messages),
            tools: &tools,
            stream: settings.stream,
            max_tokens: cap.tokens(settings),
            temperature: COMMAND_TEMPERATURE,
            resume: None,
            slot: Some(if worded.is_some() { SLOT_OTHER } else { SLOT_COMMAND }),
        };
        // The first reply may be the answer itself ("The capital of France is Paris."):
        // streamed as chat's is, once it is plainly words and not a call written as text.
        // Only when no tool is offered: words beside offered tools may be a call described
        // instead of made, asked again below, which the voice must not have begun to say.
        let mut shown = Shown::new(ran.is_empty() && tools.is_empty() && settings.stream);
        let streamed = |piece: &str| {
            if let Some(text) = shown.piece(piece) {
                out.send(Report::Reply { text, partial: true, stopped: false });
            }
        };
        let reply = match complete(env, client, &request, out, streamed).await {
            Ok(reply) => reply,
            Err(e) => return error(out, ErrorCode::LlmError, env.explain(&e)),
        };
        let found = calls_of(env, &reply, &tools);
        for refused in &found.refused {
            tracing::info!(tool = %refused.name, "{}", refused.reason);
        }
        let mut calls = batch(found.calls);
        if let Some(only) = empty_call_of(&reply.content, &tools).filter(|_| calls.is_empty()) {
            // An empty call (`<tools></tools>`) where one tool is offered and it needs
            // nothing: that tool is the one meant ("what should I do next", offered
            // `get_next_actions`).
            tracing::info!(tool = %only, "an empty call, of the one tool offered");
            let arguments = serde_json::json!({});
            calls.push(Call { id: "call_0".into(), name: only.to_owned(), arguments });
        }
        if calls.is_empty() && !found.refused.is_empty() && !ran.is_empty() {
            // A tool has run and the model answers with a call it did not finish (the 1.5B
            // model began a `list_dir` after `read_file` and ran into the answer's cap): the
            // outcome of what ran is what is left to say, asked for in words.
            return report(env, client, text, &ran, out).await;
        }
        if calls.is_empty() && !found.refused.is_empty() {
            // A call it did not write whole, or with arguments the tool does not take: run
            // nothing, say why, and let it try again, once.
            let reasons: Vec<&str> = found.refused.iter().map(|r| r.reason.as_str()).collect();
            if retried {
                return error(
                    out,
                    ErrorCode::ToolError,
                    format!("the model's call could not be run: {}", reasons.join("; ")),
                );
            }
            retried = true;
            messages.push(Message::assistant(&reply.content));
            messages.push(Message::user(format!("{}. {CALL_AGAIN}", reasons.join("; "))));
            continue;
        }
        if calls.is_empty() && ran.is_empty() && !found.unknown.is_empty() {
            // A call written for a tool that does not exist ("book a table for two tonight",
            // offered none, got `{"name": "book_table", …}`): nothing ran, and the user is
            // told so in words, not shown the JSON.
            tracing::info!(invented = ?found.unknown, "the model called a tool that does not exist");
            let said = "I can't do that: no tool of mine does it.".to_owned();
            out.send(Report::Reply { text: said, partial: false, stopped: false });
            return;
        }
        if calls.is_empty()
            && ran.is_empty()
            && !retried
            && !tools.is_empty()
            && markup(&reply.content)
        {
            // An empty call (`<tools></tools>`) where several tools are offered: asked again,
            // once, in other words, which the 1.5B model answered with the call ("help me
            // learn Rust in two weeks: make a task…" got `create_task`). Told "do it" after
            // its empty reply instead, it wrote the same again.
            tracing::info!(answer = %reply.content, "an empty call: asked again in other words");
            retried = true;
            reworded = true;
            continue;
        }
        if calls.is_empty()
            && ran.is_empty()
            && !retried
            && !tools.is_empty()
            && let Some(how) = describes_a_call(&reply.content, &tools)
        {
            // It told the user how to call a tool it was offered instead of calling it ("To
            // list your tasks, you can call the `list_tasks` function…"), or wrote an empty
            // call (`<tools></tools>`, the 1.5B model's answer to "what time is it" at
            // times): asked once to do it, or to answer in words.
            tracing::info!(%how, answer = %reply.content, "a call described, not made");
            retried = true;
            messages.push(Message::assistant(&reply.content));
            messages.push(Message::user(DO_IT));
            continue;
        }
        if calls.is_empty() {
            // The 1.5B model at times answers with the tool results it was given, markup and
            // all ("<tool_response> task 1 made: …"), or with the start of a call cut off by
            // the cap ("<tools>"): that is no answer to say; the outcome is asked for in words
            // instead.
            if !ran.is_empty() && markup(&reply.content) {
                return report(env, client, text, &ran, out).await;
            }
            if retried && (reply.content.contains(CALL_AGAIN) || reply.content.contains(DO_IT)) {
                // Asked again, it said back what it was told ("The call was cut off before it
                // ended. Call the tool again…"): that is no answer to show.
                tracing::info!(answer = %reply.content, "the model repeated what it was told");
                return error(
                    out,
                    ErrorCode::ToolError,
                    "the model could not make the call: say it another way",
                );
            }
            if ran.is_empty() && markup(&reply.content) {
                // Asked once already, and still no call in it: never the markup as the answer.
                tracing::info!(answer = %reply.content, "no call in the model's markup");
                let said =
                    "I could not tell which of my tools you meant: say it another way.".to_owned();
                out.send(Report::Reply { text: said, partial: false, stopped: false });
                return;
            }
            if !ran.is_empty() && refuses(&reply.content) && all_ok {
                tracing::info!(answer = %reply.content, "an answer that denies what was done is not shown");
                let done: Vec<String> =
                    ran.iter().map(|(tool, result)| format!("{tool}: {result}")).collect();
                let said = format!("Done. {}", done.join("; "));
                out.send(Report::Reply { text: said, partial: false, stopped: false });
                return;
            }
            if ran.is_empty() && promises(&reply.content) {
                // "Turn the volume up" → "Sure, I can help you with that.": no tool does it
                // and none ran, so nothing will happen; the person is told so.
                tracing::info!(answer = %reply.content, "a promise with nothing done is not kept");
                let said = "I can't do that: no tool of mine does it.".to_owned();
                out.send(Report::Reply { text: said, partial: false, stopped: false });
                return;
            }
            return answer(&reply, cap, out);
        }
        // Calling again a tool whose result is already in view is a loop (small local
        // models do it instead of answering): run nothing more, ask for the outcome. Going
        // down the memory tree to a node not seen yet is not.
        // A call that failed, made again with other arguments, is a correction, not a loop
        // (the 1.5B model fixed a due date `create_task` refused).
        let again = |call: &stt_llm::ToolCall| {
            let tried = tried.iter().any(|(made, ok): &(Call, bool)| {
                made.name == call.name && (*ok || made.arguments == call.arguments)
            });
            tried
                && (!is(&call.name, MemoryTool::ExploreTree) || explored.contains(&call.arguments))
        };
        if calls.iter().any(again) {
            return report(env, client, text, &ran, out).await;
        }
        explored.extend(
            calls
                .iter()
                .filter(|c| is(&c.name, MemoryTool::ExploreTree))
                .map(|c| c.arguments.clone()),
        );
        messages.push(Message::calls(calls.clone()));
        let mut round = Vec::new();
        let mut hinted = false;
        for mut call in calls {
            let now = chrono::Local::now().naive_local();
            dated_as_said(&mut call, text, now);
            timed_as_said(&mut call, text, now);
            zoned_as_said(&mut call, text, now);
            worded_as_said(&mut call, text, now);
            task_as_said(&mut call, text, &tasks);
            task_dated_as_said(&mut call, text);
            let asked = Asked { text, edited, by: By::Model, outside: outside.as_deref() };
            let outcome = run_call(env, &call, asked, &mut added, out).await;
            if outcome.ok() && outside.is_none() && Named::of(&call.name).brings_outside() {
                outside = Some(format!("{}({})", call.name, call.arguments));
            }
            round.push((call.clone(), outcome.ok()));
            tried.push((call.clone(), outcome.ok()));
            all_ok &= outcome.ok();
            let result =
                after_tool(env, &call.name, outcome.result().to_owned(), episode, out).await;
            hinted |= result != outcome.result();
            ran.push((call.name.clone(), result.clone()));
            messages.push(Message::tool(call.id.clone(), result));
        }
        // A timer set, a reminder or a task kept: the answer is the intent's own, at once;
        // no second request, and no "I cannot do it" after it was done. A result that
        // brought a memory up (`after_tool`) is the model's to word, so the answer tells it.
        let said = (!hinted).then(|| templated(&round, text, chrono::Local::now().naive_local()));
        if let Some(said) = said.flatten() {
            out.send(Report::Reply { text: said, partial: false, stopped: false });
            return;
        }
    }
    error(
        out,
        ErrorCode::ToolError,
        format!(
            "stopped after {} rounds of tool calls without an answer ([assistant].max_tool_iterations)",
            settings.max_tool_iterations
        ),
    );
}

/// What of a command's first reply is streamed to viewers (and the voice): nothing until its
/// first letter shows it is words; then every piece, until one looks like the start of a call
/// written as text (`{`, `<`, a code fence). Its whole text still comes as the answer, which
/// replaces what was streamed.
#[derive(Debug)]
struct Shown {
    /// Text held back until it can be told apart from a call.
    held: String,
    state: Gate,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gate {
    Undecided,
    Open,
    Shut,
}

impl Shown {
    fn new(stream: bool) -> Self {
        Self { held: String::new(), state: if stream { Gate::Undecided } else { Gate::Shut } }
    }

    /// What of `piece` to show now, if anything.
    fn piece(&mut self, piece: &str) -> Option<String> {
        let call = |text: &str| text.contains(['{', '<', '`', '[']);
        match self.state {
            Gate::Shut => None,
            Gate::Open if call(piece) => {
                self.state = Gate::Shut;
                None
            }
            Gate::Open => Some(piece.to_owned()),
            Gate::Undecided => {
                self.held.push_str(piece);
                let first = self.held.trim_start().chars().next()?;
                if first.is_alphanumeric() && !call(&self.held) {
                    self.state = Gate::Open;
                    Some(std::mem::take(&mut self.held))
                } else {
                    self.state = Gate::Shut;
                    None
                }
            }
        }
    }
}

/// The open tasks, (id, title), for a command about plans: shown before its words, since
/// without them the 1.5B model guessed ids ("make the insurance task my top priority" → task
/// 1, the milk). None without memory. At most [`TASKS_SHOWN`], most urgent first.
async fn open_tasks(env: &JobEnv) -> Vec<(i64, String)> {
    let Some(memory) = env.memory.as_ref() else { return Vec::new() };
    let list = stt_proto::TaskRequest::List { status: None };
    let tasks = memory.plans(list).await.map(|answer| answer.tasks).unwrap_or_default();
    tasks
        .into_iter()
        .filter(|t| t.status == "open" || t.status == "active")
        .take(TASKS_SHOWN)
        .map(|t| (t.id, t.title))
        .collect()
}

/// A new task's due date as the command's words give it: none when they name no time (the
/// 1.5B model gave "add a task to buy milk" a due date of 2023-04-15), and a date, not a
/// date and a time ("2026-12-31 09:00", which the tool refuses), when they do.
fn task_dated_as_said(call: &mut Call, text: &str) {
    if !is(&call.name, MemoryTool::CreateTask) {
        return;
    }
    let Some(due) = call.arguments.get("due").and_then(serde_json::Value::as_str) else { return };
    let wrote = due.to_owned();
    if !about_time(text) {
        call.arguments.as_object_mut().map(|args| args.remove("due"));
    } else if let Some((day, _)) = due.split_once([' ', 'T']) {
        call.arguments["due"] = serde_json::json!(day);
    } else {
        return;
    }
    tracing::info!(%wrote, said = %call.arguments, "the task is dated as the command said");
}

/// The task a planner call is about, as the command's words name it: the one open task whose
/// title shares a word with them ("push the insurance task back" → "Renew car insurance"),
/// and "top" or "highest" priority as 1 (the 1.5B model gave task 1 and priority 5 for
/// "make the insurance task my top priority"). Words that name no task, or two, leave the
/// call as the model wrote it.
fn task_as_said(call: &mut Call, text: &str, tasks: &[(i64, String)]) {
    if call.arguments.get("task_id").is_none() {
        return;
    }
    let said = stt_memory::text::content_words(text);
    let named: Vec<i64> = tasks
        .iter()
        .filter(|(_, title)| {
            stt_memory::text::content_words(title).iter().any(|w| w != "task" && said.contains(w))
        })
        .map(|(id, _)| *id)
        .collect();
    let wrote = call.arguments.clone();
    if let [id] = named[..] {
        call.arguments["task_id"] = serde_json::json!(id);
    }
    if is(&call.name, MemoryTool::Prioritize) {
        let words: Vec<String> = stt_memory::text::words(text).collect();
        let has = |list: &[&str]| words.iter().any(|w| list.contains(&w.as_str()));
        if has(&["top", "highest", "first", "most"]) {
            call.arguments["priority"] = serde_json::json!(1);
        } else if has(&["lowest", "bottom", "least"]) {
            call.arguments["priority"] = serde_json::json!(5);
        }
    }
    if is(&call.name, MemoryTool::Reschedule) && call.arguments.get("shift_days").is_some() {
        // "Push it back by one week": the 1.5B model wrote `shift_days` 7 and a due date a
        // week from today beside it, which the tool takes first.
        let words: Vec<String> = stt_memory::text::words(text).collect();
        let shifts = ["back", "forward", "by", "later", "postpone", "delay", "push"];
        if words.iter().any(|w| shifts.contains(&w.as_str())) {
            call.arguments.as_object_mut().map(|args| args.remove("due"));
        }
    }
    if is(&call.name, MemoryTool::UpdateTaskStatus)
        && let Some(status) = status_said(text)
    {
        // "Drop the Spanish goal": the 1.5B model wrote "done".
        call.arguments["status"] = serde_json::json!(status);
    }
    if call.arguments != wrote {
        tracing::info!(%wrote, said = %call.arguments, "the task is the one the command named");
    }
}

/// The status a command's words give a task, when they name one only: dropped ("drop",
/// "abandon", "give up"), done ("done", "finished"), active ("start", "working on") or open
/// ("reopen").
fn status_said(text: &str) -> Option<&'static str> {
    let words: Vec<String> = stt_memory::text::words(text).collect();
    let has = |list: &[&str]| words.iter().any(|w| list.contains(&w.as_str()));
    let named: Vec<&'static str> = [
        ("dropped", &["drop", "dropped", "abandon", "abandoned", "cancel", "remove", "delete"][..]),
        ("done", &["done", "finished", "finish", "completed", "complete", "did"][..]),
        ("active", &["start", "started", "starting", "working", "resume", "active"][..]),
        ("open", &["reopen", "reopened"][..]),
    ]
    .into_iter()
    .filter(|(_, list)| has(list))
    .map(|(status, _)| status)
    .collect();
    match named[..] {
        [one] => Some(one),
        _ if words.windows(2).any(|w| w == ["give", "up"]) => Some("dropped"),
        _ => None,
    }
}

/// Open tasks a command about plans is shown at most.
const TASKS_SHOWN: usize = 10;

/// What a command's words start with: the local date, time and time zone, so that "tomorrow
/// at nine" or "in an hour" can be worked out. Without it the 1.5B model dated a reminder
/// "2023-04-12 09:00" and told the time as 12:34 at 03:34.
pub fn now_line(now: chrono::DateTime<chrono::Local>) -> String {
    format!(
        "(Now: {}, {}, time zone UTC{}.)",
        now.format("%A %-d %B %Y"),
        now.format("%H:%M"),
        now.format("%:z")
    )
}

/// Whether a command's words are about time: a day, a date, an hour, a length of time, a
/// reminder or a timer.
pub fn about_time(text: &str) -> bool {
    const WORDS: [&str; 17] = [
        "time", "date", "day", "week", "month", "year", "when", "remind", "reminder", "timer",
        "clock", "now", "schedule", "due", "deadline", "calendar", "weekday",
    ];
    stt_intent::words::words(text).iter().any(|w| {
        let key = w.key.trim_end_matches('s');
        WORDS.contains(&key) || stt_intent::when::of_time(&w.key)
    })
}

/// Has the model read the command prefix, the system prompt and the user's own tools every
/// command starts with, into its command slot: one request with an empty turn and
/// `max_tokens` 1. The next command then has only its own words (and the tools they call
/// for) to read. Returns what the request cost.
pub async fn warm(env: &JobEnv, client: &Provider) -> Result<stt_llm::Usage, stt_llm::LlmError> {
    let (messages, tools) = warm_prompt(env);
    let request = Request {
        messages: &messages,
        tools: &tools,
        stream: false,
        max_tokens: 1,
        temperature: COMMAND_TEMPERATURE,
        resume: None,
        slot: Some(SLOT_COMMAND),
    };
    client.complete(&request, |_| {}).await.map(|reply| reply.usage.unwrap_or_default())
}

/// The warm-up request's messages and tools: the prefix every command shares.
fn warm_prompt(env: &JobEnv) -> ([Message; 2], Vec<ToolSpec>) {
    let tools = tools(env, false, false, false, "");
    let system = with_tail(&env.settings.command_system_prompt, !tools.is_empty());
    ([Message::system(system), Message::user("")], tools)
}

/// What ends a command's system prompt when it is offered tools: the 1.5B model explained
/// how to call a tool ("you can use the `read_file` function…") in one command of five
/// unless told to answer with the call alone. So told, it writes an empty call
/// (`<tools></tools>`) at times, for "what day is it today" or "what should I do next": the
/// one tool offered runs then ([`empty_call_of`]). Told instead to reply with "that tool's
/// call, written whole", it stopped after `create_task` where it had gone on to plan.
pub const WITH_TOOLS: &str = "When a tool provided does what the user asks, reply with only the \
    call of that tool. When the user asks a question no tool answers, answer it from what you \
    know.";

/// What ends it, once, after an empty call: the same model, told this, wrote the call
/// where "only the call" got `<tools></tools>`; told this every time, it stopped after
/// `create_task` where it had gone on to plan.
pub const WRITTEN_WHOLE: &str = "When a tool provided does what the user asks, reply with that \
    tool's call, written whole. When the user asks a question no tool answers, answer it from \
    what you know.";

/// What ends it when none is: told to answer with calls, the same model made one up for
/// "what is the capital of France" ("get_capital").
pub const WITHOUT_TOOLS: &str = "No tool is provided for these words: answer a question from \
    what you know; when the user asks for an action, say that you cannot do it.";

/// The configured command system prompt, then [`WITH_TOOLS`] or [`WITHOUT_TOOLS`]: the
/// configured part is the prefix every command shares (the server keeps it), the end a few
/// tokens read again when it changes.
fn with_tail(system: &str, tools: bool) -> String {
    format!("{system} {}", if tools { WITH_TOOLS } else { WITHOUT_TOOLS })
}

/// How the command prefix came into the command slot.
#[derive(Debug, Clone, PartialEq)]
pub enum Warmed {
    /// Restored from the file saved after an earlier warm-up: `tokens` of it.
    Restored { tokens: u64 },
    /// Read by the model ([`warm`]); `saved`: written out for the next start.
    Read { usage: stt_llm::Usage, saved: bool },
}

/// [`warm`], with the slot's state kept across restarts: llama-server (started by `up` with
/// `--slot-save-path dir`) restores the command prefix from the file an earlier warm-up
/// saved, in milliseconds instead of the seconds of reading it; else it reads it and saves
/// it. The file's name is a hash of the model (its path, size and shape, as the server
/// lists it) and of the prefix (system prompt and tools): another model or another prompt
/// never gets a state that is not its own. Older files in `dir` are removed; the new one is
/// made 0600. Any other server, or one without the directory: [`warm`] alone.
pub async fn warm_saved(
    env: &JobEnv,
    client: &Provider,
    dir: Option<&std::path::Path>,
) -> Result<Warmed, stt_llm::LlmError> {
    use stt_llm::openai::SlotAction;
    let read = |usage, saved| Warmed::Read { usage, saved };
    // The directory is there when `up` started the server with it: any other server is
    // asked for nothing more than the warm-up.
    let (Provider::OpenAi(server), Some(dir)) = (client, dir.filter(|d| d.is_dir())) else {
        return warm(env, client).await.map(|usage| read(usage, false));
    };
    let model = match server.model_identity().await {
        Ok(model) => model,
        Err(e) => {
            tracing::debug!("no model identity to key a saved prompt by: {e}");
            return warm(env, client).await.map(|usage| read(usage, false));
        }
    };
    let (messages, tools) = warm_prompt(env);
    let file = saved_prompt_name(&model, &messages[0].content, &tools);
    if dir.join(&file).is_file() {
        match server.slot(SLOT_COMMAND, SlotAction::Restore, &file).await {
            Ok(tokens) => return Ok(Warmed::Restored { tokens }),
            Err(e) => tracing::info!("the saved command prompt was not restored: {e}"),
        }
    }
    let usage = warm(env, client).await?;
    let saved = match server.slot(SLOT_COMMAND, SlotAction::Save, &file).await {
        Ok(_) => {
            keep_only(dir, &file);
            true
        }
        Err(e) => {
            tracing::debug!("the command prompt was not saved: {e}");
            false
        }
    };
    Ok(read(usage, saved))
}

/// `command-<hash>.bin`: FNV-1a (64 bits, written out here for a name that stays the same
/// from one build to the next) of the model and the prefix.
fn saved_prompt_name(model: &str, system: &str, tools: &[ToolSpec]) -> String {
    let tools = serde_json::to_string(
        &tools.iter().map(|t| (&t.name, &t.description, &t.parameters)).collect::<Vec<_>>(),
    )
    .unwrap_or_default();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in [model, "\0", system, "\0", &tools].iter().flat_map(|part| part.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("command-{hash:016x}.bin")
}

/// Makes `file` in `dir` its owner's only and removes the other saved command prompts (of
/// another model or prompt: never restored again).
fn keep_only(dir: &std::path::Path, file: &str) {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(file);
    if let Err(e) = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)) {
        tracing::debug!("{}: {e}", path.display());
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name != file && name.starts_with("command-") && name.ends_with(".bin") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The tools a command is offered: the user's own (`[[tools.command]]`) always, first; then
/// those its words call for ([`stt_tools::offer`]): the built-in ones, memory's when it is on
/// and `memory` ([`memory::called_for`]; those that end an intention when `ends`), the
/// planner's when it is on and `planner`. Every schema costs a small model's
/// attention and seconds of reading; "what is the capital of France" is offered none. The
/// order is fixed, so that what the server keeps of one command's prompt serves the next:
/// the system prompt and the user's tools always, and as much of the rest as is the same.
fn tools(env: &JobEnv, memory: bool, ends: bool, planner: bool, text: &str) -> Vec<ToolSpec> {
    let tree = env.memory.as_ref().is_some_and(crate::memory::Memory::tree);
    let ending = [MemoryTool::CompleteIntention, MemoryTool::CancelIntention];
    // "Mark the milk task as done" ends a task, not a reminder: offered both, the 1.5B model
    // cancelled reminder 1.
    let ends = ends && !(planner && crate::memory::plans::names_a_task(text));
    // "Show a notification saying backup done" ends no reminder: the word is the
    // notification's (offered both, the 1.5B model completed reminder 1 beside the notify
    // call). Words that call for a built-in tool end one only when they say "reminder".
    let for_a_tool = env.tools.specs().any(|spec| {
        !stt_tools::offer::always(&spec.name) && stt_tools::offer::asked_for(&spec.name, text)
    });
    let ends =
        ends && (!for_a_tool || crate::memory::called_for(MemoryTool::AddIntention, text, false));
    let offered = MemoryTool::ASSISTANT.into_iter().filter(|tool| {
        let called = if ending.contains(tool) {
            ends
        } else {
            crate::memory::called_for(*tool, text, false)
        };
        memory && called && (tree || *tool != MemoryTool::ExploreTree)
    });
    let plans = MemoryTool::PLANNER
        .into_iter()
        .filter(|tool| planner && crate::memory::plans::called_for(*tool, text));
    let offered: Vec<MemoryTool> = offered.chain(plans).collect();
    let memory = env.memory.as_ref().map(|_| memory_tools::specs(&offered));
    let wakes: Vec<_> = wake::Tool::ALL
        .iter()
        .filter(|tool| planner && env.settings.proactive && wake::called_for(**tool, text))
        .map(|tool| wake::spec(*tool))
        .collect();
    let own = env.tools.specs().filter(|spec| stt_tools::offer::always(&spec.name));
    let built_in = env.tools.specs().filter(|spec| {
        !stt_tools::offer::always(&spec.name) && stt_tools::offer::asked_for(&spec.name, text)
    });
    own.chain(built_in)
        .chain(memory.iter().flatten())
        .chain(&wakes)
        .map(|spec| ToolSpec {
            name: spec.name.clone(),
            description: spec.description.clone(),
            parameters: spec.parameters.clone(),
        })
        .collect()
}

/// The spec of the tool `name`, from the registry or memory's.
fn spec_of(env: &JobEnv, name: &str) -> Option<stt_tools::registry::ToolSpec> {
    if let Some(spec) = env.tools.get(name) {
        return Some(spec.clone());
    }
    match Named::of(name) {
        Named::Wake(tool) if env.settings.proactive => Some(wake::spec(tool)),
        Named::Memory(tool)
            if env.memory.is_some() && MemoryTool::commands().any(|t| t == tool) =>
        {
            Some(memory_tools::spec(tool))
        }
        _ => None,
    }
}

/// The token limit of a command's request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cap {
    /// Before any tool ran: `[assistant].max_tokens` (the reply may be a call, or a whole
    /// answer when no tool is needed).
    Reply,
    /// After: `[assistant].command_answer_max_tokens`, one or two spoken sentences.
    Answer,
}

impl Cap {
    fn tokens(self, settings: &super::Settings) -> u32 {
        match self {
            Self::Reply => settings.max_tokens,
            Self::Answer => settings.command_answer_max_tokens.min(settings.max_tokens),
        }
    }
}

/// Reports a reply without calls as the command's answer. One cut off by
/// [`Cap::Answer`] ends at its last whole sentence (or with "…" when it has none): the
/// outcome is in the first sentence or two, and nobody needs an error for the rest. One cut
/// off by `max_tokens` is reported as cut off.
fn answer(reply: &Reply, cap: Cap, out: &Sink<Report>) {
    let cut = reply.finish == Some(Finish::Length);
    let answer = reply.content.trim();
    let answer = match cap {
        Cap::Answer if cut => {
            tracing::debug!(
                "the answer reached [assistant].command_answer_max_tokens: kept to its last \
                 whole sentence"
            );
            sentences::whole_sentences(answer)
        }
        _ => {
            if cut {
                error(
                    out,
                    ErrorCode::Truncated,
                    "the model's answer was cut off by [assistant].max_tokens",
                );
            }
            answer.to_owned()
        }
    };
    if !answer.is_empty() {
        out.send(Report::Reply { text: answer, partial: false, stopped: false });
    }
}

/// Asks the model, without tools, for the outcome of the calls that ran, in words. The
/// results go in as plain text: with the calls in the conversation, a small model keeps
/// writing calls.
async fn report(
    env: &JobEnv,
    client: &Provider,
    text: &str,
    ran: &[(String, String)],
    out: &Sink<Report>,
) {
    let mut prompt = format!("Command: {text}\nResults:\n");
    for (tool, result) in ran {
        prompt.push_str(&format!("{tool} → {result}\n"));
    }
    prompt.push_str(
        "\nNow tell the user the outcome in one or two short spoken sentences, as the results \
         say it: a result that says something was not done means it was not done. Plain words \
         only, no JSON, no tool calls.",
    );
    let messages = [Message::system(&env.settings.command_system_prompt), Message::user(prompt)];
    let request = Request {
        messages: &messages,
        tools: &[],
        stream: env.settings.stream,
        max_tokens: Cap::Answer.tokens(&env.settings),
        temperature: COMMAND_TEMPERATURE,
        resume: None,
        // Not the command slot: without the tools this prompt would push the command
        // prefix out of its cache.
        slot: Some(SLOT_OTHER),
    };
    match complete(env, client, &request, out, |_| {}).await {
        Ok(reply) => answer(&reply, Cap::Answer, out),
        Err(e) => error(out, ErrorCode::LlmError, env.explain(&e)),
    }
}

/// A tool's result with what memory associates with it (a hint, an intention its words
/// cue), as after a person's turn; memory's own tools bring nothing more.
async fn after_tool(
    env: &JobEnv,
    tool: &str,
    result: String,
    episode: Episode,
    out: &Sink<Report>,
) -> String {
    let Some(memory) = env.memory.as_ref().filter(|_| !Named::of(tool).is_memory()) else {
        return result;
    };
    match memory.context(result.clone(), Some(episode), None).await {
        Ok(context) if !context.reminders.is_empty() => {
            out.send(Report::Hinted(context.notes));
            format!("{result}\n(Memory: {})", context.reminders.join("; "))
        }
        _ => result,
    }
}

/// Calls one reply may run: each tool once (a small model may write the same call a dozen
/// times in one reply, with ids counting up), at most [`MAX_CALLS`]. A call that reads a
/// document, a page or the screen runs without the others beside it: they were written
/// before anything was read (the 1.5B model read a shopping list and, in the same reply, sent
/// a notification of items it made up), and the model writes them again once it has read.
fn batch(calls: Vec<Call>) -> Vec<Call> {
    let reads = |c: &Call| matches!(Named::of(&c.name), Named::Builtin(tool) if Builtin::CONTEXT.contains(&tool));
    let calls: Vec<Call> = if calls.iter().any(reads) {
        let (kept, dropped): (Vec<Call>, Vec<Call>) = calls.into_iter().partition(reads);
        for call in dropped {
            tracing::debug!(tool = %call.name, "a call written beside a read is dropped");
        }
        kept
    } else {
        calls
    };
    let mut kept: Vec<Call> = Vec::new();
    for call in calls {
        if kept.len() == MAX_CALLS {
            tracing::warn!(
                "the model asked for more than {MAX_CALLS} calls at once; the rest are dropped"
            );
            break;
        }
        if kept.iter().any(|k| k.name == call.name) {
            tracing::debug!(tool = %call.name, "a second call of the same tool in one reply is dropped");
            continue;
        }
        kept.push(call);
    }
    kept
}

/// Calls one reply may run.
const MAX_CALLS: usize = 4;

/// The answer a round of calls gets without asking the model again: when each call ran well
/// and is a timer set or a reminder kept, the answers their intents give
/// (`stt_intent::BUILTIN`).
fn templated(round: &[(Call, bool)], text: &str, now: chrono::NaiveDateTime) -> Option<String> {
    static BUILTIN: std::sync::OnceLock<Option<stt_intent::Intents>> = std::sync::OnceLock::new();
    let intents = BUILTIN.get_or_init(|| stt_intent::Intents::builtin().ok()).as_ref()?;
    if round.is_empty() {
        return None;
    }
    let mut said = Vec::new();
    for (call, ok) in round {
        if !ok {
            return None;
        }
        let arg = |key: &str| call.arguments[key].as_str().unwrap_or_default().trim().to_owned();
        let (intent, values): (&str, Vec<(&str, String)>) = match Named::of(&call.name) {
            // The clock read for words the time or date templates take whole ("what's the
            // time"); any other question of time ("how long until Friday") is the model's.
            Named::Builtin(Builtin::GetDatetime) => match intents.decide(text, now) {
                stt_intent::Decision::Matched(m) if m.intent == "get_time" => {
                    ("get_time", vec![("time", crate::intents::clock(now))])
                }
                stt_intent::Decision::Matched(m) if m.intent == "get_date" => {
                    ("get_date", vec![("date", crate::intents::day(now))])
                }
                stt_intent::Decision::Matched(m) if m.intent == "get_time_in" => {
                    let Some(stt_intent::Value::Zone(zone)) = m.slots.get("place") else {
                        return None;
                    };
                    let there = chrono::Local::now().with_timezone(zone).naive_local();
                    (
                        "get_time_in",
                        vec![
                            ("time", crate::intents::clock(there)),
                            ("place", stt_intent::zone::city(*zone)),
                        ],
                    )
                }
                _ => return None,
            },
            Named::Builtin(Builtin::SetTimer) => {
                let seconds = call.arguments["minutes"].as_f64()? * 60.0;
                let label = arg("label");
                // A label that only says it is a timer, or its length, says nothing.
                let says = !label.is_empty()
                    && !["timer", "reminder"].contains(&label.to_lowercase().as_str())
                    && !label.chars().next().is_some_and(|c| c.is_ascii_digit());
                let label = if says { label } else { String::new() };
                (
                    "timer_set",
                    vec![("duration", crate::intents::duration(seconds)), ("label", label)],
                )
            }
            Named::Memory(MemoryTool::AddIntention) => {
                let due =
                    chrono::NaiveDateTime::parse_from_str(&arg("due"), "%Y-%m-%d %H:%M").ok()?;
                (
                    "reminder_add",
                    vec![("text", to_do(&arg("text"))), ("when", crate::intents::when(due, now))],
                )
            }
            // A task made is often planned next (break_down_task): the model goes on.
            _ => return None,
        };
        let values: Vec<(&str, &str)> = values.iter().map(|(k, v)| (*k, v.as_str())).collect();
        if values.iter().any(|(k, v)| v.is_empty() && *k != "label") {
            return None;
        }
        said.push(stt_intent::fill(intents.answer(intent)?, &values));
    }
    Some(said.join(" "))
}

/// What a reminder is for, as "I'll remind you to …" goes on: the model may write it as the
/// person said it ("I need to check the oven.", the 1.5B model), which would read "I'll remind
/// you to I need to check the oven.".
fn to_do(text: &str) -> String {
    let text = text.trim().trim_end_matches(['.', '!']);
    let lower = text.to_lowercase();
    let said = ["i need to ", "i have to ", "i must ", "i should ", "i want to ", "to "]
        .iter()
        .find(|p| lower.starts_with(*p))
        .and_then(|p| text.get(p.len()..))
        .unwrap_or(text);
    said.trim().to_owned()
}

/// A reminder's due time as the command's own words give it: a small model gets "tomorrow at
/// nine" wrong (the 1.5B model wrote today 09:00, or 2023-04-12), while the words name one
/// moment that stt reads itself (`stt_intent::moment_in`). A due time the words do not name
/// is left as the model wrote it (`add_intention` refuses one passed or a year away).
fn dated_as_said(call: &mut Call, text: &str, now: chrono::NaiveDateTime) {
    let dated = call.arguments["due"].as_str().is_some()
        || call.arguments["due_in_minutes"].as_f64().is_some();
    if !is(&call.name, MemoryTool::AddIntention) || !dated {
        return;
    }
    let Some(said) = stt_intent::moment_in(text, now) else { return };
    let said = said.format("%Y-%m-%d %H:%M").to_string();
    // Minutes from now, beside the due time, would win over it: the words' time is the one.
    let minutes = call.arguments.as_object_mut().and_then(|args| args.remove("due_in_minutes"));
    if call.arguments["due"].as_str() != Some(said.as_str()) || minutes.is_some() {
        tracing::info!(wrote = %call.arguments["due"], ?minutes, said = %said, "the reminder is dated as the command said");
        call.arguments["due"] = serde_json::Value::String(said);
    }
}

/// The place whose time a `get_datetime` call asks for, as the command's words name it: the
/// zone of the city they name ("what time is it in Tokyo"; the 1.5B model called it with no
/// zone and gave the local time as Tokyo's), and none when they name none (a zone the model
/// added by itself is dropped: the words ask for the local time).
fn zoned_as_said(call: &mut Call, text: &str, now: chrono::NaiveDateTime) {
    if !is(&call.name, Builtin::GetDatetime) {
        return;
    }
    let said = read_as_said(text, now).and_then(|m| match m.slots.get("place") {
        Some(stt_intent::Value::Zone(zone)) => Some(*zone),
        _ => None,
    });
    let wrote = call.arguments.get("zone").cloned();
    let named = |zone: &stt_intent::zone::Tz| {
        let lower = text.to_lowercase();
        lower.contains(&stt_intent::zone::city(*zone).to_lowercase())
            || lower.contains(&zone.name().to_lowercase())
    };
    let zone = said
        .or_else(|| wrote.as_ref().and_then(|w| stt_intent::zone::find(w.as_str()?)).filter(named));
    match (zone, call.arguments.as_object_mut()) {
        (Some(zone), Some(args)) => {
            args.insert("zone".into(), serde_json::json!(zone.name()));
        }
        (None, Some(args)) => {
            args.remove("zone");
        }
        _ => return,
    }
    if call.arguments.get("zone") != wrote.as_ref() {
        tracing::info!(?wrote, said = %call.arguments, "the time asked for is the place the command named");
    }
}

/// How the built-in sentences read `text`, when one reads it whole and only one way.
fn read_as_said(text: &str, now: chrono::NaiveDateTime) -> Option<stt_intent::Match> {
    static BUILTIN: std::sync::OnceLock<Option<stt_intent::Intents>> = std::sync::OnceLock::new();
    let intents = BUILTIN.get_or_init(|| stt_intent::Intents::builtin().ok()).as_ref()?;
    match intents.decide(text, now) {
        stt_intent::Decision::Matched(said) => Some(said),
        _ => None,
    }
}

/// What a reminder is to say, as the command's words say it, when a reminder sentence reads
/// them whole: the 1.5B model wrote "I need to take the laundry out.", and the answer said
/// "I'll remind you to I need to take the laundry out."
fn worded_as_said(call: &mut Call, text: &str, now: chrono::NaiveDateTime) {
    if !is(&call.name, MemoryTool::AddIntention) {
        return;
    }
    let Some(said) = read_as_said(text, now).filter(|m| m.intent == "reminder_add") else { return };
    if let Some(what) = said.text("text")
        && call.arguments["text"].as_str() != Some(what)
    {
        tracing::info!(wrote = %call.arguments["text"], said = %what, "the reminder says what the command said");
        call.arguments["text"] = serde_json::Value::String(what.to_owned());
    }
}

/// A timer's length and label as the command's words give them, when the built-in timer or
/// reminder sentences read them whole ("set a timer for 20 minutes for the pasta", "remind me
/// in twenty minutes to check the oven"): the 1.5B model wrote 30 minutes for "a thirty
/// second timer", 1 for "one hour", and left the pasta out. Words no sentence reads leave
/// the call as the model wrote it.
fn timed_as_said(call: &mut Call, text: &str, now: chrono::NaiveDateTime) {
    if !is(&call.name, Builtin::SetTimer) {
        return;
    }
    let Some(said) = read_as_said(text, now) else { return };
    let (seconds, label) =
        match (said.intent.as_str(), said.slots.get("duration"), said.slots.get("time")) {
            ("timer_set", Some(stt_intent::slot::Value::Duration(seconds)), _) => {
                (*seconds, said.text("label"))
            }
            ("reminder_add", _, Some(stt_intent::slot::Value::Time(due))) => {
                ((*due - now).num_seconds() as f64, said.text("text"))
            }
            _ => return,
        };
    let minutes = (seconds / 60.0 * 100.0).round() / 100.0;
    let wrote = call.arguments.clone();
    if call.arguments["minutes"].as_f64().is_none_or(|m| (m - minutes).abs() > 0.01) {
        call.arguments["minutes"] = serde_json::json!(minutes);
    }
    let unlabelled = call.arguments["label"].as_str().is_none_or(|l| l.trim().is_empty());
    if let (true, Some(label)) = (unlabelled, label) {
        call.arguments["label"] = serde_json::Value::String(label.to_owned());
    }
    if call.arguments != wrote {
        tracing::info!(%wrote, said = %call.arguments, "the timer is set as the command said");
    }
}

/// Whether an answer says the command could not be done.
fn refuses(answer: &str) -> bool {
    let lower = answer.to_lowercase();
    [
        "i cannot",
        "i can't",
        "i can not",
        "i'm unable",
        "i am unable",
        "i'm not able",
        "i am not able",
        "unable to",
    ]
    .iter()
    .any(|p| lower.contains(p))
}

/// Whether an answer only agrees to act ("Sure, I can help you with that."): nothing in it
/// but assent and a promise to do it. Said with no tool run, it is a promise nothing keeps.
fn promises(answer: &str) -> bool {
    const ASSENT: [&str; 8] =
        ["sure", "okay", "ok", "of course", "certainly", "absolutely", "no problem", "yes"];
    const ACT: [&str; 7] = [
        "i can help you with that",
        "i can help with that",
        "i can do that",
        "i'll do that",
        "i will do that",
        "i'll take care of it",
        "i will take care of it",
    ];
    let lower: String = answer
        .to_lowercase()
        .chars()
        .map(|c| if c.is_alphanumeric() || c == '\'' { c } else { ' ' })
        .collect();
    let words = lower.split_whitespace().collect::<Vec<_>>().join(" ");
    let (mut rest, mut acts) = (words.as_str(), false);
    while let Some((phrase, act)) = ASSENT
        .iter()
        .map(|p| (*p, false))
        .chain(ACT.iter().map(|p| (*p, true)))
        .find(|(p, _)| rest == *p || rest.starts_with(&format!("{p} ")))
    {
        rest = rest[phrase.len()..].trim_start();
        acts |= act;
    }
    acts && rest.is_empty()
}

/// The tool an empty call means: the reply is markup with no call in it, one tool is
/// offered, and it requires no argument.
fn empty_call_of<'t>(content: &str, tools: &'t [ToolSpec]) -> Option<&'t str> {
    let [only] = tools else { return None };
    let required = only.parameters["required"].as_array().is_some_and(|r| !r.is_empty());
    (markup(content) && !content.contains('{') && !required).then_some(only.name.as_str())
}

/// What a command is told, after why, when its call was not run.
const CALL_AGAIN: &str = "Call the tool again with arguments it takes, or answer in words.";

/// What a command is told when it described a call instead of making one.
pub const DO_IT: &str = "Do not explain how to call a tool: reply with only the call of the tool \
    that does what I asked, or, if none does, answer me in words.";

/// How a reply that made no call describes one instead: markup with no call in it
/// (`<tools></tools>`), or an offered tool named by its name (`list_tasks`) or by its words
/// with at most one word between them ("create a task", "mark plan done").
fn describes_a_call<'t>(content: &str, tools: &'t [ToolSpec]) -> Option<&'t str> {
    if markup(content) {
        return Some("markup with no call in it");
    }
    let lower = content.to_lowercase();
    let words: Vec<&str> =
        lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let says = |name: &str| {
        let parts: Vec<&str> = name.split('_').collect();
        (0..words.len()).any(|start| {
            let mut at = start;
            parts.iter().enumerate().all(|(n, part)| {
                let window = if n == 0 { 1 } else { 2 };
                let found = (at..(at + window).min(words.len())).find(|&i| words[i] == *part);
                found.map(|i| at = i + 1).is_some()
            })
        })
    };
    tools
        .iter()
        .map(|tool| tool.name.as_str())
        // Names of one word ("notify", "reschedule") are words a plain answer uses too.
        .filter(|name| name.contains('_'))
        .find(|name| lower.contains(name) || says(name))
}

/// Whether a reply after a tool's result is markup, not words: the results echoed back in
/// the chat template's tags, or a call begun as text (`<tools>`, `{"name": …`, a code fence).
fn markup(content: &str) -> bool {
    content.trim_start().starts_with(['<', '{', '[', '`'])
}

/// The calls in a reply: the provider's, or else JSON calls in the text, those it did not
/// write whole or with arguments its tool takes refused (never run).
fn calls_of(env: &JobEnv, reply: &Reply, offered: &[ToolSpec]) -> stt_llm::Found {
    if !reply.tool_calls.is_empty() {
        return stt_llm::Found { calls: reply.tool_calls.clone(), ..Default::default() };
    }
    let tools: Vec<MemoryTool> = MemoryTool::commands().collect();
    let memory = env.memory.as_ref().map(|_| memory_tools::specs(&tools));
    let wakes: Vec<_> = wake::Tool::ALL
        .iter()
        .filter(|_| env.settings.proactive)
        .map(|tool| wake::spec(*tool))
        .collect();
    let specs: Vec<_> = env.tools.specs().chain(memory.iter().flatten()).chain(&wakes).collect();
    let schema_of = |name: &str| specs.iter().find(|s| s.name == name).map(|s| &s.parameters);
    let offered: Vec<(&str, &serde_json::Value)> =
        offered.iter().map(|s| (s.name.as_str(), &s.parameters)).collect();
    stt_llm::find_calls_among(&reply.content, schema_of, &offered)
}

/// Runs one of memory's tools (`dream_now` asks the loop for a dream). `added`: the
/// intentions this command added, which it may not end in the same breath (a small model
/// adds one, then "completes" it at once).
async fn run_memory_tool(
    env: &JobEnv,
    tool: MemoryTool,
    call: &Call,
    added: &mut Vec<i64>,
    out: &Sink<Report>,
) -> Outcome {
    let Some(memory) = &env.memory else {
        return Outcome::Done { ok: false, result: "memory is off ([memory].enabled)".into() };
    };
    let ends = [MemoryTool::CompleteIntention, MemoryTool::CancelIntention];
    if ends.contains(&tool)
        && let Some(id) = call.arguments.get("id").and_then(serde_json::Value::as_i64)
        && added.contains(&id)
    {
        return Outcome::Done {
            ok: false,
            result: format!("intention {id} was just added: it stays open until it is done"),
        };
    }
    // A plan the model did not write itself is written by a request of its own.
    if tool == MemoryTool::BreakDownTask && call.arguments.get("phases").is_none() {
        let (ok, result) = super::plan::break_down(env, memory, &call.arguments, out).await;
        return Outcome::Done { ok, result };
    }
    if tool == MemoryTool::DreamNow {
        out.send(Report::DreamNow);
        return Outcome::Done {
            ok: true,
            result: "a dream starts once this command is over".into(),
        };
    }
    match memory.tool(tool, call.arguments.clone()).await {
        Ok(memory::Called { ok, result, .. }) => {
            if ok && tool == MemoryTool::AddIntention {
                let id = result.strip_prefix("intention ").and_then(|r| r.split(' ').next());
                added.extend(id.and_then(|id| id.parse::<i64>().ok()));
            }
            Outcome::Done { ok, result }
        }
        Err(refusal) => Outcome::Done { ok: false, result: refusal.into_why() },
    }
}

/// Who wrote a call: the model, or a sentence template (`crate::intents`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    Model,
    Local,
}

impl By {
    /// As the audit log writes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Model => "model",
            Self::Local => "local",
        }
    }
}

/// What a call answers: the command's words (and whether they were edited), who wrote the
/// call, and the outside content in the request it came from, if any (the first call that
/// brought some, as `tool(arguments)`).
#[derive(Debug, Clone, Copy)]
pub struct Asked<'a> {
    pub text: &'a str,
    pub edited: bool,
    pub by: By,
    pub outside: Option<&'a str>,
}

/// Runs one call (after confirmation when the tool needs it, or when it can reach the network
/// or change the desktop and outside content is in the request); returns its outcome, whose
/// result is what the model is told.
pub async fn run_call(
    env: &JobEnv,
    call: &Call,
    asked: Asked<'_>,
    added: &mut Vec<i64>,
    out: &Sink<Report>,
) -> Outcome {
    let Asked { text, edited, by, outside } = asked;
    let Some(spec) = spec_of(env, &call.name) else {
        let result = format!("there is no tool named '{}'", call.name);
        out.send(Report::Publish(AssistantEvent::ToolResult(ToolResult {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            ok: false,
            result: result.clone(),
            latency_ms: 0,
        })));
        return Outcome::Done { ok: false, result };
    };
    // Words stt did not write nor the user say are in the request: a call that can reach the
    // network or change the desktop may be theirs, not the user's, so the user says yes to it
    // first, shown the call whole (the exact URL, the exact words).
    let outside = outside.filter(|_| spec.side_effect != SideEffect::ReadOnly);
    let asks_yes = spec.requires_confirmation || outside.is_some();
    out.send(Report::Publish(AssistantEvent::ToolCall(ToolCall {
        call_id: call.id.clone(),
        tool: call.name.clone(),
        args: call.arguments.clone(),
        side_effect: spec.side_effect,
        requires_confirmation: spec.requires_confirmation,
        awaiting_confirmation: asks_yes,
        outside: outside.map(str::to_owned),
    })));
    let started = Instant::now();
    let confirmed = if asks_yes {
        let (answer, answered) = oneshot::channel();
        out.send(Report::Confirm { call_id: call.id.clone(), answer });
        let allowed = matches!(
            tokio::time::timeout(env.settings.confirmation_timeout, answered).await,
            Ok(Ok(true))
        );
        out.send(Report::ConfirmOver { call_id: call.id.clone() });
        Some(allowed)
    } else {
        None
    };
    let outcome = if confirmed == Some(false) {
        Outcome::Done { ok: false, result: "the user did not allow this action".into() }
    } else {
        match Named::of(&call.name) {
            Named::Builtin(_) | Named::Other => env.tools.run(&call.name, &call.arguments).await,
            Named::Wake(tool) => match wake::ask(tool, &call.arguments) {
                Ok(asked) => {
                    out.send(Report::Wake(asked));
                    Outcome::Done { ok: true, result: wake::told(asked) }
                }
                Err(why) => Outcome::Done { ok: false, result: why },
            },
            Named::Memory(tool) => run_memory_tool(env, tool, call, added, out).await,
        }
    };
    if let Outcome::Timer { after, label, .. } = &outcome {
        out.send(Report::Timer { after: *after, label: label.clone() });
    }
    let latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    out.send(Report::Publish(AssistantEvent::ToolResult(ToolResult {
        call_id: call.id.clone(),
        tool: call.name.clone(),
        ok: outcome.ok(),
        result: outcome.result().to_owned(),
        latency_ms,
    })));
    out.send(Report::Audit(Box::new(ActionRecord {
        ts: stt_tools::audit::timestamp(chrono::Local::now()),
        mode: "command".into(),
        text: text.to_owned(),
        edited,
        tool: call.name.clone(),
        args: call.arguments.clone(),
        side_effect: spec.side_effect,
        requires_confirmation: asks_yes,
        confirmed,
        ok: outcome.ok(),
        result: outcome.result().to_owned(),
        latency_ms,
        by: by.name().into(),
        outside: outside.map(str::to_owned),
    })));
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, n: u32) -> Call {
        Call { id: format!("call_{n}"), name: name.into(), arguments: serde_json::json!({}) }
    }

    #[test]
    fn a_reply_runs_each_tool_once_and_a_read_alone() {
        let names = |calls: Vec<Call>| calls.into_iter().map(|c| c.name).collect::<Vec<_>>();
        let twice = vec![call("set_timer", 0), call("set_timer", 1), call("notify", 2)];
        assert_eq!(names(batch(twice)), ["set_timer", "notify"]);
        let planned = vec![call("create_task", 0), call("break_down_task", 1)];
        assert_eq!(names(batch(planned)), ["create_task", "break_down_task"]);
        let read_then_made_up = vec![call("read_file", 0), call("notify", 1)];
        assert_eq!(names(batch(read_then_made_up)), ["read_file"]);
        let many: Vec<Call> =
            ["a", "b", "c", "d", "e"].iter().enumerate().map(|(i, n)| call(n, i as u32)).collect();
        assert_eq!(batch(many).len(), MAX_CALLS);
    }

    #[test]
    fn a_first_reply_in_words_is_streamed_and_a_call_written_as_text_is_not() {
        let shown = |pieces: &[&str]| {
            let mut gate = Shown::new(true);
            pieces.iter().filter_map(|p| gate.piece(p)).collect::<String>()
        };
        assert_eq!(
            shown(&[" ", "The capital", " of France", " is Paris."]),
            " The capital of France is Paris."
        );
        assert_eq!(shown(&["{\"name\"", ": \"set_timer\"}"]), "");
        assert_eq!(shown(&["<tool_call>", "{}"]), "");
        assert_eq!(shown(&["```json", "{}"]), "");
        // Words, then a call: what came before the call only.
        assert_eq!(shown(&["Sure.", " {\"name\": 1}", " more"]), "Sure.");
        assert_eq!(Shown::new(false).piece("Paris"), None);
    }

    #[test]
    fn a_saved_prompt_is_named_by_its_model_and_prefix_alone() {
        let tool = |name: &str| ToolSpec {
            name: name.into(),
            description: "Turn the lights on.".into(),
            parameters: serde_json::json!({"type": "object"}),
        };
        let name = saved_prompt_name("q.gguf 1", "You run commands.", &[tool("lights")]);
        assert_eq!(name, saved_prompt_name("q.gguf 1", "You run commands.", &[tool("lights")]));
        assert!(name.starts_with("command-") && name.ends_with(".bin") && name.len() == 28);
        for other in [
            saved_prompt_name("q.gguf 2", "You run commands.", &[tool("lights")]),
            saved_prompt_name("q.gguf 1", "You run commands!", &[tool("lights")]),
            saved_prompt_name("q.gguf 1", "You run commands.", &[tool("lamp")]),
            saved_prompt_name("q.gguf 1", "You run commands.", &[]),
        ] {
            assert_ne!(name, other);
        }
    }

    #[test]
    fn the_words_of_a_command_start_with_the_time_it_is_now() {
        use chrono::TimeZone;
        let at = chrono::Local.with_ymd_and_hms(2026, 12, 7, 3, 34, 0).single();
        let line = at.map(now_line).unwrap_or_default();
        assert!(line.starts_with("(Now: Monday 7 December 2026, 03:34, time zone UTC"), "{line}");
    }

    #[test]
    fn a_timer_set_or_a_reminder_kept_is_answered_from_its_template() {
        use chrono::NaiveDate;
        let now = NaiveDate::from_ymd_opt(2026, 12, 7)
            .and_then(|d| d.and_hms_opt(3, 34, 0))
            .unwrap_or_default();
        let with = |name: &str, args: serde_json::Value| Call {
            id: "c".into(),
            name: name.into(),
            arguments: args,
        };
        let timer = with("set_timer", serde_json::json!({"minutes": 10, "label": "timer"}));
        assert_eq!(
            templated(&[(timer.clone(), true)], "set a timer for ten minutes", now).as_deref(),
            Some("Timer set for 10 minutes.")
        );
        assert_eq!(
            templated(&[(timer.clone(), false)], "set a timer", now),
            None,
            "a call that failed"
        );
        let reminder = with(
            "add_intention",
            serde_json::json!({"text": "call the plumber", "due": "2026-12-08 09:00"}),
        );
        assert_eq!(
            templated(&[(reminder, true)], "remind me", now).as_deref(),
            Some("I'll remind you to call the plumber tomorrow at 09:00.")
        );
        let said = with(
            "add_intention",
            serde_json::json!({"text": "I need to check the oven.", "due": "2026-12-07 13:00"}),
        );
        assert_eq!(
            templated(&[(said, true)], "remind me", now).as_deref(),
            Some("I'll remind you to check the oven today at 13:00.")
        );
        let task = with("create_task", serde_json::json!({"title": "buy milk"}));
        assert_eq!(
            templated(&[(task, true)], "buy milk", now),
            None,
            "a task made is often planned next"
        );
        let read = with("get_datetime", serde_json::json!({}));
        let asked = |text: &str| templated(&[(read.clone(), true)], text, now);
        assert_eq!(asked("what's the time").as_deref(), Some("It's 03:34."));
        assert_eq!(
            asked("what is the date today").as_deref(),
            Some("Today is Monday 7 December 2026.")
        );
        assert_eq!(asked("how many days until Christmas"), None, "a question the clock only helps");
        assert_eq!(
            templated(&[(timer, true), (read, true)], "set a timer and say when it ends", now),
            None,
            "a read needs words"
        );
        assert!(refuses("I cannot do it."));
        assert!(!refuses("Your timer is set."));
        assert!(promises("Sure, I can help you with that."));
        assert!(promises("Of course! I'll do that."));
        assert!(!promises("Sure."), "assent alone promises nothing");
        assert!(!promises("Sure, I can help you with that: open the mixer."), "it says how");
        assert!(!promises("Paris."));
    }

    #[test]
    fn only_words_about_time_get_the_time() {
        for text in [
            "what time is it",
            "Remind me to call Sam tomorrow at nine",
            "set a timer for ten minutes",
            "help me learn Rust in two weeks",
            "what day is it",
        ] {
            assert!(about_time(text), "{text}");
        }
        for text in [
            "What should I do next on my tasks?",
            "what is the capital of France",
            "open example dot org",
        ] {
            assert!(!about_time(text), "{text}");
        }
    }

    #[test]
    fn a_reminder_is_dated_as_the_command_said_it() {
        use chrono::NaiveDate;
        let now = NaiveDate::from_ymd_opt(2026, 12, 7)
            .and_then(|d| d.and_hms_opt(6, 5, 0))
            .unwrap_or_default();
        let mut call = Call {
            id: "c".into(),
            name: "add_intention".into(),
            arguments: serde_json::json!({"text": "call the plumber", "due": "2026-12-07 09:00"}),
        };
        dated_as_said(&mut call, "remind me to call the plumber tomorrow at nine", now);
        assert_eq!(call.arguments["due"], "2026-12-08 09:00");
        let mut undated = call.clone();
        undated.arguments["due"] = "2026-12-09 10:00".into();
        dated_as_said(&mut undated, "remind me to call the plumber", now);
        assert_eq!(undated.arguments["due"], "2026-12-09 10:00", "the words name no time");
    }

    #[test]
    fn the_time_is_asked_for_the_place_the_command_names() {
        use chrono::NaiveDate;
        let now = NaiveDate::from_ymd_opt(2026, 12, 7)
            .and_then(|d| d.and_hms_opt(17, 53, 0))
            .unwrap_or_default();
        let zoned = |args: serde_json::Value, text: &str| {
            let mut call = Call { id: "c".into(), name: "get_datetime".into(), arguments: args };
            zoned_as_said(&mut call, text, now);
            call.arguments
        };
        use serde_json::json;
        // The 1.5B model called it with no zone.
        assert_eq!(zoned(json!({}), "What time is it in Tokyo?"), json!({"zone": "Asia/Tokyo"}));
        assert_eq!(
            zoned(json!({"zone": "Tokyo"}), "how late is it over in tokyo"),
            json!({"zone": "Asia/Tokyo"})
        );
        // A zone the words do not name is the model's own: dropped.
        assert_eq!(zoned(json!({"zone": "UTC"}), "What time is it?"), json!({}));
        assert_eq!(zoned(json!({"zone": "Narnia"}), "what time is it in Narnia"), json!({}));
    }

    #[test]
    fn a_timer_is_set_as_the_command_said_it() {
        use chrono::NaiveDate;
        let now = NaiveDate::from_ymd_opt(2026, 12, 7)
            .and_then(|d| d.and_hms_opt(6, 5, 0))
            .unwrap_or_default();
        let timer = |args: serde_json::Value, text: &str| {
            let mut call = Call { id: "c".into(), name: "set_timer".into(), arguments: args };
            timed_as_said(&mut call, text, now);
            call.arguments
        };
        assert_eq!(
            timer(serde_json::json!({"minutes": 30}), "Start a thirty second timer for the tea."),
            serde_json::json!({"minutes": 0.5, "label": "tea"})
        );
        assert_eq!(
            timer(serde_json::json!({"minutes": 1}), "Set a timer for one hour."),
            serde_json::json!({"minutes": 60.0})
        );
        assert_eq!(
            timer(serde_json::json!({"minutes": 20}), "Set a timer for 20 minutes for the pasta."),
            serde_json::json!({"minutes": 20, "label": "pasta"})
        );
        assert_eq!(
            timer(
                serde_json::json!({"minutes": 20}),
                "Remind me in twenty minutes to check the oven."
            ),
            serde_json::json!({"minutes": 20, "label": "check the oven"})
        );
        // A label the model gave is kept; words no sentence reads leave the call alone.
        assert_eq!(
            timer(
                serde_json::json!({"minutes": 5, "label": "Tea"}),
                "Set a timer for five minutes for the tea."
            ),
            serde_json::json!({"minutes": 5, "label": "Tea"})
        );
        assert_eq!(
            timer(serde_json::json!({"minutes": 7}), "Ping me when the tea is ready."),
            serde_json::json!({"minutes": 7})
        );
    }

    #[test]
    fn a_planner_call_is_about_the_task_the_words_name() {
        let tasks = [(1, "Buy milk".to_owned()), (2, "Renew car insurance".to_owned())];
        let call = |name: &str, args: serde_json::Value, text: &str| {
            let mut call = Call { id: "c".into(), name: name.into(), arguments: args };
            task_as_said(&mut call, text, &tasks);
            task_dated_as_said(&mut call, text);
            call.arguments
        };
        assert_eq!(
            call(
                "prioritize",
                serde_json::json!({"task_id": 1, "priority": 5}),
                "Make the insurance task my top priority."
            ),
            serde_json::json!({"task_id": 2, "priority": 1})
        );
        assert_eq!(
            call(
                "reschedule",
                serde_json::json!({"task_id": 1, "shift_days": 7}),
                "Push the insurance task back by one week."
            ),
            serde_json::json!({"task_id": 2, "shift_days": 7})
        );
        // No task named, or a call that names none: as written.
        assert_eq!(
            call(
                "update_task_status",
                serde_json::json!({"task_id": 2, "status": "done"}),
                "Mark that task as done."
            ),
            serde_json::json!({"task_id": 2, "status": "done"})
        );
        assert_eq!(
            call("create_task", serde_json::json!({"title": "milk"}), "Add a task to buy milk."),
            serde_json::json!({"title": "milk"})
        );
        // The status the words give: the 1.5B model wrote "done" for a goal dropped.
        let tasks = [(3, "Learn Spanish".to_owned())];
        let mut dropped = Call {
            id: "c".into(),
            name: "update_task_status".into(),
            arguments: serde_json::json!({"task_id": 3, "status": "done"}),
        };
        task_as_said(&mut dropped, "Drop the Spanish goal.", &tasks);
        assert_eq!(dropped.arguments, serde_json::json!({"task_id": 3, "status": "dropped"}));
        assert_eq!(status_said("I gave up on it, give up the Spanish goal"), Some("dropped"));
        assert_eq!(status_said("I started the report and finished the slides"), None);
    }

    #[test]
    fn minutes_beside_a_due_time_give_way_to_the_time_the_words_say() {
        use chrono::NaiveDate;
        let now = NaiveDate::from_ymd_opt(2026, 12, 7)
            .and_then(|d| d.and_hms_opt(7, 59, 0))
            .unwrap_or_default();
        let mut call = Call {
            id: "c".into(),
            name: "add_intention".into(),
            arguments: serde_json::json!({"text": "laundry", "due": "2026-12-07 09:59", "due_in_minutes": 720}),
        };
        dated_as_said(&mut call, "Remind me in two hours to take the laundry out.", now);
        assert_eq!(
            call.arguments,
            serde_json::json!({"text": "laundry", "due": "2026-12-07 09:59"})
        );
        worded_as_said(&mut call, "Remind me in two hours to take the laundry out.", now);
        assert_eq!(call.arguments["text"], "take the laundry out");
    }

    #[test]
    fn a_call_described_in_words_or_empty_markup_is_told_from_an_answer() {
        let spec = |name: &str| ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: serde_json::json!({}),
        };
        let tools = [spec("create_task"), spec("list_tasks"), spec("notify")];
        let described = |text: &str| describes_a_call(text, &tools);
        assert_eq!(described("<tools></tools>"), Some("markup with no call in it"));
        assert_eq!(described("You can call `list_tasks` to see them."), Some("list_tasks"));
        assert_eq!(
            described("To learn Spanish, you can create a task with the title…"),
            Some("create_task")
        );
        assert_eq!(described("Your tasks are listed below."), None);
        assert_eq!(described("I will notify you when it is done."), None);
        assert_eq!(described("The capital of France is Paris."), None);
    }

    #[test]
    fn a_new_task_is_dated_only_when_its_words_name_a_time() {
        let dated = |args: serde_json::Value, text: &str| {
            let mut call = Call { id: "c".into(), name: "create_task".into(), arguments: args };
            task_dated_as_said(&mut call, text);
            call.arguments
        };
        assert_eq!(
            dated(
                serde_json::json!({"title": "Buy milk", "due": "2023-04-15"}),
                "Add a task to buy milk."
            ),
            serde_json::json!({"title": "Buy milk"})
        );
        assert_eq!(
            dated(
                serde_json::json!({"title": "Renew car insurance", "due": "2026-12-31 09:00"}),
                "Create a task to renew the car insurance before the end of the month."
            ),
            serde_json::json!({"title": "Renew car insurance", "due": "2026-12-31"})
        );
    }

    #[test]
    fn results_echoed_in_template_markup_are_no_answer() {
        assert!(markup("<tool_response>\ntask 1 made: Rust\n</tool_response>"));
        assert!(markup("  <tool_call>{}</tool_call>"));
        assert!(markup("<tools>\n{\"name\": \"list_dir\", \"arguments\": {\"pa"));
        assert!(!markup("Your plan is ready."));
        assert!(!markup("It says <tool_response> in the log."));
    }
}
