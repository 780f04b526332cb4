//! A dream: memory's consolidation, run on the LLM lane while nobody needs the model.
//!
//! The seed's ReAct loop, one pending conversation at a time: each round shows the model one
//! conversation (and the items it may touch, so it corrects rather than repeats) and lets it
//! call memory's dream tools until it answers without a call. The round's session is then
//! marked processed (if the model did not), so a dream cancelled midway resumes where it
//! stopped: the loop cancels it the moment someone speaks, arms a command or sends chat, at
//! the job's next await (a tool call in flight on the memory thread finishes as one
//! transaction). At the end every item decays by the days elapsed and the dream's log closes.
//!
//! Small rounds keep it within a small local model's reach: one conversation, seven short
//! tool schemas, a few hundred tokens of instructions.

use stt_llm::{Message, Request, ToolSpec};

use super::{Lane, Report, complete};
use crate::lane::Sink;
use crate::memory::{Answer, Ask, tools as memory_tools};

const PROMPT: &str = "You maintain the long-term memory of a voice assistant while the user is \
    away. You are shown one past conversation. Save what will still matter later, with tools: \
    create_knowledge for each lasting fact, preference, decision or plan about the user or \
    their world (a short name such as \"sister's city\" and one sentence; if it corrects an \
    item already remembered, give that item's id as supersedes); record_episode for one \
    sentence on what happened, if it mattered; update_profile for who the user is. Save \
    nothing for small talk, greetings or commands that were simply run. If you cannot call \
    tools, write each fact on a line of its own as FACT topic: sentence (the topic of an item \
    already remembered when the fact corrects it). When you are done, answer \"done\".";

/// Facts a model wrote as text, one `FACT topic: sentence` line each (what the prompt asks
/// of a model that cannot call tools: small ones write these more reliably than calls), as
/// `create_knowledge` calls; `step` makes their ids unique.
fn fact_lines(content: &str, step: u32) -> Vec<stt_llm::ToolCall> {
    content
        .lines()
        .filter_map(|line| {
            let line = line.trim().trim_start_matches(['-', '*', ' ']);
            let rest =
                line.get(..4).filter(|p| p.eq_ignore_ascii_case("fact")).map(|_| &line[4..])?;
            let (topic, fact) = rest.trim_start_matches([':', ' ']).split_once(':')?;
            // The prompt's own word copied back is no topic; the fact is kept without one.
            let topic = Some(topic.trim()).filter(|t| !t.eq_ignore_ascii_case("topic"));
            let mut fact = fact.trim();
            // Who said it, copied from the log line, is not part of the fact.
            for who in ["typed:", "typing:", "user:"] {
                if fact.get(..who.len()).is_some_and(|p| p.eq_ignore_ascii_case(who)) {
                    fact = fact[who.len()..].trim();
                }
            }
            (!fact.is_empty() && !fact.eq_ignore_ascii_case("sentence"))
                .then_some((topic.unwrap_or_default(), fact))
        })
        .enumerate()
        .map(|(i, (topic, fact))| stt_llm::ToolCall {
            id: format!("fact-{step}-{i}"),
            name: "create_knowledge".into(),
            arguments: serde_json::json!({"name": topic, "body": fact}),
        })
        .collect()
}

/// The last word of a round that wrote nothing: the same conversation, no tools, facts as
/// lines (what a small model manages when calls fail it).
const EXTRACT: &str = "Extract facts the user states about themselves or their family. Output \
    one line per fact in the form 'FACT topic: sentence', using the user's own words. Reuse \
    the topic of an already remembered fact when the conversation corrects it. Output nothing \
    else.";

/// Runs a dream (`trigger`: why it started) of at most `max_steps` model requests.
pub async fn run(lane: &Lane, trigger: &str, max_steps: u32, out: &Sink<Report>) {
    let Some(memory) = &lane.memory else { return };
    let Some(client) = &lane.client else {
        return out.send(Report::Note(format!("memory: no dream: {}", lane.missing)));
    };
    if !client.supports_tools() {
        return out.send(Report::Note(
            "memory: no dream: the provider in use does not call tools (`/providers`)".into(),
        ));
    }
    let sessions = match memory.ask(Ask::DreamStart { trigger: trigger.to_owned() }).await {
        Answer::DreamStarted { sessions, .. } => sessions,
        other => return tracing::warn!("memory could not start a dream: {other:?}"),
    };
    tracing::info!(trigger, sessions = sessions.len(), "dream started");
    let tools: Vec<ToolSpec> = memory_tools::specs(&memory_tools::DREAM_ROUND)
        .into_iter()
        .map(|s| ToolSpec { name: s.name, description: s.description, parameters: s.parameters })
        .collect();
    let mut steps = 0;
    let mut changes = 0;
    let mut read = 0;
    'sessions: for session in sessions {
        let Answer::Round(text) = memory.ask(Ask::DreamRound(session)).await else {
            continue;
        };
        let mut messages = vec![Message::system(PROMPT), Message::user(text.clone())];
        let mut seen: Vec<String> = Vec::new();
        let written = changes;
        // `write_dream_log` closes the round (small models call it early and often).
        let mut round_over = false;
        loop {
            if steps >= max_steps {
                break 'sessions;
            }
            steps += 1;
            let request = Request {
                messages: &messages,
                tools: &tools,
                stream: false,
                max_tokens: lane.settings.max_tokens,
                temperature: lane.settings.temperature,
                resume: None,
            };
            let reply = match complete(lane, client, &request, out, |_| {}).await {
                Ok(reply) => reply,
                Err(e) => {
                    let why = lane.explain(&e);
                    let end = Ask::DreamEnd { status: "failed".into(), note: why.clone() };
                    memory.ask(end).await;
                    return out.send(Report::Note(format!("memory: the dream failed: {why}")));
                }
            };
            tracing::debug!(content = %reply.content, calls = ?reply.tool_calls, "dream reply");
            let mut calls = reply.tool_calls.clone();
            if calls.is_empty() {
                calls = stt_llm::calls_in_content(&reply.content, memory_tools::is_memory_tool);
            }
            if calls.is_empty() {
                calls = fact_lines(&reply.content, steps);
            }
            // The same call again is a loop (small models do it): this round is over.
            let keys: Vec<String> =
                calls.iter().map(|c| format!("{}{}", c.name, c.arguments)).collect();
            if calls.is_empty() || keys.iter().any(|k| seen.contains(k)) {
                break;
            }
            seen.extend(keys);
            messages.push(Message::calls(calls.clone()));
            for call in calls {
                if call.name == "write_dream_log" {
                    round_over = true;
                }
                let ask = Ask::Tool { name: call.name.clone(), args: call.arguments.clone() };
                let result = match memory.ask(ask).await {
                    Answer::Called(called) => {
                        if called.ok && !memory_tools::is_recall(&call.name) {
                            changes += 1;
                        }
                        called.result
                    }
                    Answer::Failed(why) => why,
                    other => format!("{other:?}"),
                };
                messages.push(Message::tool(call.id.clone(), result));
            }
            if round_over {
                break;
            }
        }
        if changes == written && steps < max_steps {
            steps += 1;
            let messages = [Message::system(EXTRACT), Message::user(text)];
            let request = Request {
                messages: &messages,
                tools: &[],
                stream: false,
                max_tokens: lane.settings.max_tokens,
                temperature: lane.settings.temperature,
                resume: None,
            };
            if let Ok(reply) = complete(lane, client, &request, out, |_| {}).await {
                tracing::debug!(content = %reply.content, "dream extraction");
                for call in fact_lines(&reply.content, steps) {
                    let ask = Ask::Tool { name: call.name, args: call.arguments };
                    if let Answer::Called(called) = memory.ask(ask).await
                        && called.ok
                    {
                        changes += 1;
                    }
                }
            }
        }
        memory.ask(Ask::DreamRoundDone(session)).await;
        read += 1;
    }
    let note = format!("{read} conversations read, {changes} changes, {steps} requests");
    memory.ask(Ask::DreamEnd { status: "done".into(), note: note.clone() }).await;
    tracing::info!("dream done: {note}");
    out.send(Report::Note(format!("memory: dreamt ({note})")));
}
