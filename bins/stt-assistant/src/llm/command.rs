//! A command through the tool loop: the model calls tools until it answers without a call or
//! the iteration limit is reached. A tool that needs confirmation waits for a person's yes or
//! no (through the loop, which knows who is waiting); every call is reported and audited.

use std::time::Instant;

use tokio::sync::oneshot;

use stt_llm::{Finish, Message, Provider, Reply, Request, ToolCall as Call, ToolSpec};
use stt_proto::{AssistantEvent, ErrorCode, ToolCall, ToolResult};
use stt_tools::ActionRecord;
use stt_tools::registry::Outcome;

use super::{Lane, Report, complete, error, no_client};
use crate::lane::Sink;

/// Runs `text` (typed over, when `edited`) through the tool loop.
pub async fn run(lane: &Lane, text: &str, edited: bool, out: &Sink<Report>) {
    let Some(client) = &lane.client else { return no_client(lane, out) };
    if !client.supports_tools() {
        // The loop refuses such a command before it is queued; this guards a switch since.
        return error(
            out,
            ErrorCode::NoExecutor,
            "the provider in use is chat-only: commands need one with tool calls (`/providers`)",
        );
    }
    let settings = &lane.settings;
    let tools = tools(lane);
    let mut messages = vec![Message::system(&settings.command_system_prompt), Message::user(text)];
    // The calls that ran, as (tool, result), for a report.
    let mut ran: Vec<(String, String)> = Vec::new();
    for _ in 0..settings.max_tool_iterations.max(1) {
        let request = Request {
            messages: &messages,
            tools: &tools,
            stream: settings.stream,
            max_tokens: settings.max_tokens,
            temperature: settings.temperature,
            resume: None,
        };
        let reply = match complete(lane, client, &request, out, |_| {}).await {
            Ok(reply) => reply,
            Err(e) => return error(out, ErrorCode::LlmError, lane.explain(&e)),
        };
        let calls = calls_of(lane, &reply);
        if calls.is_empty() {
            return answer(&reply, out);
        }
        // Calling again a tool whose result is already in view is a loop (small local
        // models do it instead of answering): run nothing more, ask for the outcome.
        if calls.iter().any(|call| ran.iter().any(|(tool, _)| *tool == call.name)) {
            return report(lane, client, text, &ran, out).await;
        }
        messages.push(Message::calls(calls.clone()));
        for call in calls {
            let result = run_call(lane, &call, text, edited, out).await;
            ran.push((call.name.clone(), result.clone()));
            messages.push(Message::tool(call.id.clone(), result));
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

fn tools(lane: &Lane) -> Vec<ToolSpec> {
    lane.registry
        .specs()
        .map(|spec| ToolSpec {
            name: spec.name.clone(),
            description: spec.description.clone(),
            parameters: spec.parameters.clone(),
        })
        .collect()
}

/// Reports a reply without calls as the command's answer.
fn answer(reply: &Reply, out: &Sink<Report>) {
    if reply.finish == Some(Finish::Length) {
        error(
            out,
            ErrorCode::Truncated,
            "the model's answer was cut off by [assistant].max_tokens",
        );
    }
    let answer = reply.content.trim();
    if !answer.is_empty() {
        out.send(Report::Reply { text: answer.to_owned(), partial: false, stopped: false });
    }
}

/// Asks the model, without tools, for the outcome of the calls that ran, in words. The
/// results go in as plain text: with the calls in the conversation, a small model keeps
/// writing calls.
async fn report(
    lane: &Lane,
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
        "\nNow tell the user the outcome in one or two short spoken sentences. Plain words \
         only, no JSON, no tool calls.",
    );
    let messages = [Message::system(&lane.settings.command_system_prompt), Message::user(prompt)];
    let request = Request {
        messages: &messages,
        tools: &[],
        stream: lane.settings.stream,
        max_tokens: lane.settings.max_tokens,
        temperature: lane.settings.temperature,
        resume: None,
    };
    match complete(lane, client, &request, out, |_| {}).await {
        Ok(reply) => answer(&reply, out),
        Err(e) => error(out, ErrorCode::LlmError, lane.explain(&e)),
    }
}

/// The calls in a reply: the provider's, or else JSON calls in the text.
fn calls_of(lane: &Lane, reply: &Reply) -> Vec<Call> {
    if !reply.tool_calls.is_empty() {
        return reply.tool_calls.clone();
    }
    stt_llm::calls_in_content(&reply.content, |name| lane.registry.contains(name))
}

/// Runs one call (after confirmation when the tool needs it); returns what the model is told.
async fn run_call(
    lane: &Lane,
    call: &Call,
    text: &str,
    edited: bool,
    out: &Sink<Report>,
) -> String {
    let Some(spec) = lane.registry.get(&call.name).cloned() else {
        let result = format!("there is no tool named '{}'", call.name);
        out.send(Report::Publish(AssistantEvent::ToolResult(ToolResult {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            ok: false,
            result: result.clone(),
            latency_ms: 0,
        })));
        return result;
    };
    out.send(Report::Publish(AssistantEvent::ToolCall(ToolCall {
        call_id: call.id.clone(),
        tool: call.name.clone(),
        args: call.arguments.clone(),
        side_effect: spec.side_effect,
        requires_confirmation: spec.requires_confirmation,
        awaiting_confirmation: spec.requires_confirmation,
    })));
    let started = Instant::now();
    let confirmed = if spec.requires_confirmation {
        let (answer, answered) = oneshot::channel();
        out.send(Report::Confirm { call_id: call.id.clone(), answer });
        let allowed = matches!(
            tokio::time::timeout(lane.settings.confirmation_timeout, answered).await,
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
        lane.registry.run(&call.name, &call.arguments).await
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
        requires_confirmation: spec.requires_confirmation,
        confirmed,
        ok: outcome.ok(),
        result: outcome.result().to_owned(),
        latency_ms,
    })));
    outcome.result().to_owned()
}
