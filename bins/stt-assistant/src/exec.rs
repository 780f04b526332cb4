//! Running jobs against the model: a command through the tool loop, a chat turn streamed
//! back. Everything a person should see goes out as events; every action is audited.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::oneshot;

use stt_bus::Publisher;
use stt_llm::toolcall::{self, Call};
use stt_llm::wire::{
    FinishReason, FunctionCall, Message, Request, Role, Tool, ToolCall as WireCall,
};
use stt_llm::{Client, LlmError};
use stt_proto::{AssistantEvent, ChatMessage, ChatRole, ErrorCode, ErrorMsg, ToolCall, ToolResult};
use stt_tools::registry::Outcome;
use stt_tools::{ActionRecord, AuditLog, Registry};

/// Tool calls waiting for a person's yes or no, by call id.
#[derive(Debug, Default)]
pub struct Pending {
    waiting: Mutex<HashMap<String, oneshot::Sender<bool>>>,
}

impl Pending {
    fn wait(&self, call_id: &str) -> oneshot::Receiver<bool> {
        let (tx, rx) = oneshot::channel();
        self.lock().insert(call_id.to_owned(), tx);
        rx
    }

    fn forget(&self, call_id: &str) {
        self.lock().remove(call_id);
    }

    /// Answers `call_id`, or the only call waiting.
    pub fn answer(&self, call_id: Option<&str>, allow: bool) -> Result<(), ErrorMsg> {
        let mut waiting = self.lock();
        let id = match call_id {
            Some(id) => id.to_owned(),
            None => match waiting.len() {
                0 => return Err(nothing_pending()),
                1 => waiting.keys().next().cloned().unwrap_or_default(),
                n => {
                    return Err(ErrorMsg::new(
                        ErrorCode::BadMessage,
                        format!("{n} tool calls are waiting: name one with --call-id"),
                    ));
                }
            },
        };
        let Some(tx) = waiting.remove(&id) else {
            return Err(ErrorMsg::new(
                ErrorCode::NothingPending,
                format!("no tool call '{id}' is waiting for confirmation"),
            ));
        };
        let _ = tx.send(allow);
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<bool>>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn nothing_pending() -> ErrorMsg {
    ErrorMsg::new(ErrorCode::NothingPending, "no tool call is waiting for confirmation")
}

/// What running jobs needs.
#[derive(Debug)]
pub struct Executor {
    pub client: Option<Client>,
    pub registry: Registry,
    pub publisher: Publisher,
    pub audit: Option<Mutex<AuditLog>>,
    pub pending: Pending,
    pub settings: Settings,
    /// The conversation, in memory only.
    pub chat: Mutex<Chat>,
    /// Bumped by every `clear`.
    clears: AtomicU64,
    /// Whether the model answered the last request; `None` before the first.
    pub reachable: Mutex<Option<bool>>,
    chat_ids: AtomicU64,
}

/// The `[assistant]` settings the executor uses.
#[derive(Debug, Clone)]
pub struct Settings {
    pub command_system_prompt: String,
    pub chat_system_prompt: String,
    pub max_tool_iterations: u32,
    pub confirmation_timeout: Duration,
    pub max_tokens: u32,
    pub temperature: f64,
    /// Token budget for a chat request: `max_context_tokens - max_tokens - margin`.
    pub prompt_budget: u32,
    /// Compact when a request reaches this share of the budget.
    pub compaction_trigger_ratio: f64,
    /// Turns kept verbatim by a compaction.
    pub compaction_keep_turns: u32,
    pub compaction_max_tokens: u32,
    pub compaction_system_prompt: String,
    /// Turns dropped at a time when summarizing fails.
    pub trim_block_turns: u32,
}

/// The chat conversation: a rolling summary of what was compacted, and the turns since.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Chat {
    pub summary: Option<String>,
    pub turns: Vec<Message>,
}

impl Chat {
    /// The messages of a request: the system prompt, the summary as a second system message
    /// (so the prefix stays stable between compactions), then the turns.
    pub fn messages(&self, system: &str) -> Vec<Message> {
        let mut messages = vec![Message::system(system)];
        if let Some(summary) = &self.summary {
            messages
                .push(Message::system(format!("Summary of the conversation so far:\n{summary}")));
        }
        messages.extend(self.turns.iter().cloned());
        messages
    }

    /// Estimated tokens of the request these messages make.
    pub fn tokens(&self, system: &str) -> usize {
        self.messages(system)
            .iter()
            .map(|m| estimate_tokens(m.content.as_deref().unwrap_or("")))
            .sum()
    }
}

impl Executor {
    pub fn new(
        client: Option<Client>,
        registry: Registry,
        publisher: Publisher,
        audit: Option<AuditLog>,
        settings: Settings,
    ) -> Self {
        Self {
            client,
            registry,
            publisher,
            audit: audit.map(Mutex::new),
            pending: Pending::default(),
            settings,
            chat: Mutex::default(),
            clears: AtomicU64::new(0),
            reachable: Mutex::default(),
            // Chat ids from the executor live in their own range, apart from the core's.
            chat_ids: AtomicU64::new(1 << 32),
        }
    }

    fn publish(&self, event: AssistantEvent) {
        self.publisher.publish(&event);
    }

    fn error(&self, code: ErrorCode, message: impl Into<String>) {
        let message = message.into();
        tracing::warn!("{message}");
        self.publish(AssistantEvent::Error(ErrorMsg::new(code, message)));
    }

    fn tools(&self) -> Vec<Tool> {
        self.registry
            .specs()
            .map(|spec| Tool::function(&spec.name, &spec.description, spec.parameters.clone()))
            .collect()
    }

    async fn complete(
        &self,
        client: &Client,
        request: &Request<'_>,
        on_text: impl FnMut(&str),
    ) -> Result<stt_llm::Reply, LlmError> {
        let outcome = client.complete(request, on_text).await;
        let reachable = !matches!(
            outcome,
            Err(LlmError::Unreachable { .. } | LlmError::Timeout { .. } | LlmError::NoTls { .. })
        );
        // The request reports its own failure to viewers; only the state changes here.
        self.set_reachable(reachable);
        outcome
    }

    /// Records whether the endpoint answered; the previous value.
    fn set_reachable(&self, reachable: bool) -> Option<bool> {
        self.reachable.lock().unwrap_or_else(PoisonError::into_inner).replace(reachable)
    }

    /// Checks that the endpoint answers (see [`Client::probe`]). A change is logged, and
    /// becoming unreachable is reported to viewers with the fix, once per change; the first
    /// probe reports only a failure.
    pub async fn probe(&self) {
        let Some(client) = &self.client else { return };
        let outcome = client.probe().await;
        let before = self.set_reachable(outcome.is_ok());
        match (before, outcome) {
            (Some(true) | None, Err(e)) => self.error(ErrorCode::LlmError, e.to_string()),
            (Some(false), Ok(())) => {
                tracing::info!(endpoint = %client.endpoint().url, "the model answers again");
            }
            (None, Ok(())) => {
                tracing::debug!(endpoint = %client.endpoint().url, "the model answers");
            }
            _ => {}
        }
    }

    /// Runs a command through the tool loop until the model answers without a call or the
    /// iteration limit is reached.
    pub async fn run_command(&self, text: &str, edited: bool) {
        let Some(client) = &self.client else {
            self.error(ErrorCode::NoExecutor, "no executor configured: [llm].enabled is false");
            return;
        };
        let tools = self.tools();
        let mut messages =
            vec![Message::system(&self.settings.command_system_prompt), Message::user(text)];
        // The calls that ran, as (tool, result), for a report.
        let mut ran: Vec<(String, String)> = Vec::new();
        for _ in 0..self.settings.max_tool_iterations.max(1) {
            let request = Request {
                model: "",
                messages: &messages,
                tools: &tools,
                stream: false,
                max_tokens: self.settings.max_tokens,
                temperature: self.settings.temperature,
            };
            let reply = match self.complete(client, &request, |_| {}).await {
                Ok(reply) => reply,
                Err(e) => return self.error(ErrorCode::LlmError, e.to_string()),
            };
            let calls = self.calls_of(&reply);
            if calls.is_empty() {
                return self.answer(&reply);
            }
            // Calling again a tool whose result is already in view is a loop (small local
            // models do it instead of answering): run nothing more, ask for the outcome.
            if calls.iter().any(|call| ran.iter().any(|(tool, _)| *tool == call.name)) {
                return self.report(client, text, &ran).await;
            }
            messages.push(Message {
                role: Role::Assistant,
                content: None,
                tool_calls: calls
                    .iter()
                    .map(|call| WireCall {
                        id: call.id.clone(),
                        kind: "function".into(),
                        function: FunctionCall {
                            name: call.name.clone(),
                            arguments: call.arguments.to_string(),
                        },
                    })
                    .collect(),
                tool_call_id: None,
            });
            for call in calls {
                let result = self.run_call(&call, text, edited).await;
                ran.push((call.name.clone(), result.clone()));
                messages.push(Message::tool(call.id.clone(), result));
            }
        }
        self.error(
            ErrorCode::ToolError,
            format!(
                "stopped after {} rounds of tool calls without an answer ([assistant].max_tool_iterations)",
                self.settings.max_tool_iterations
            ),
        );
    }

    /// Publishes a reply without calls as the command's answer.
    fn answer(&self, reply: &stt_llm::Reply) {
        if reply.finish_reason == Some(FinishReason::Length) {
            self.error(
                ErrorCode::Truncated,
                "the model's answer was cut off by [assistant].max_tokens",
            );
        }
        let answer = reply.content.trim();
        if !answer.is_empty() {
            self.publish(AssistantEvent::ChatMessage(ChatMessage {
                id: self.chat_ids.fetch_add(1, Ordering::Relaxed),
                role: ChatRole::Assistant,
                speaker: None,
                text: answer.to_owned(),
                partial: false,
            }));
        }
    }

    /// Asks the model, without tools, for the outcome of the calls that ran, in words. The
    /// results go in as plain text: with the calls in the conversation, a small model keeps
    /// writing calls.
    async fn report(&self, client: &Client, text: &str, ran: &[(String, String)]) {
        let mut prompt = format!("Command: {text}\nResults:\n");
        for (tool, result) in ran {
            prompt.push_str(&format!("{tool} → {result}\n"));
        }
        prompt.push_str(
            "\nNow tell the user the outcome in one or two short spoken sentences. Plain words \
             only, no JSON, no tool calls.",
        );
        let messages =
            [Message::system(&self.settings.command_system_prompt), Message::user(prompt)];
        let request = Request {
            model: "",
            messages: &messages,
            tools: &[],
            stream: false,
            max_tokens: self.settings.max_tokens,
            temperature: self.settings.temperature,
        };
        match self.complete(client, &request, |_| {}).await {
            Ok(reply) => self.answer(&reply),
            Err(e) => self.error(ErrorCode::LlmError, e.to_string()),
        }
    }

    /// The calls in a reply: `tool_calls`, or else JSON calls in the text.
    fn calls_of(&self, reply: &stt_llm::Reply) -> Vec<Call> {
        if !reply.tool_calls.is_empty() {
            return toolcall::from_api(&reply.tool_calls)
                .into_iter()
                .map(|call| match call {
                    Ok(call) => call,
                    Err((raw, why)) => {
                        tracing::warn!("tool call {}: {why}", raw.function.name);
                        Call { id: raw.id, name: raw.function.name, arguments: Value::Null }
                    }
                })
                .collect();
        }
        toolcall::calls_in_content(&reply.content, |name| self.registry.contains(name))
    }

    /// Runs one call (after confirmation when the tool needs it); returns what the model is
    /// told.
    async fn run_call(&self, call: &Call, text: &str, edited: bool) -> String {
        let Some(spec) = self.registry.get(&call.name).cloned() else {
            let result = format!("there is no tool named '{}'", call.name);
            self.publish(AssistantEvent::ToolResult(ToolResult {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                ok: false,
                result: result.clone(),
                latency_ms: 0,
            }));
            return result;
        };
        self.publish(AssistantEvent::ToolCall(ToolCall {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            args: call.arguments.clone(),
            side_effect: spec.side_effect,
            requires_confirmation: spec.requires_confirmation,
            awaiting_confirmation: spec.requires_confirmation,
        }));
        let started = Instant::now();
        let confirmed = if spec.requires_confirmation {
            let answer = self.pending.wait(&call.id);
            let allowed = matches!(
                tokio::time::timeout(self.settings.confirmation_timeout, answer).await,
                Ok(Ok(true))
            );
            self.pending.forget(&call.id);
            Some(allowed)
        } else {
            None
        };
        let outcome = if confirmed == Some(false) {
            Outcome::Done { ok: false, result: "the user did not allow this action".into() }
        } else {
            self.registry.run(&call.name, &call.arguments).await
        };
        if let Outcome::Timer { after, label, .. } = &outcome {
            self.schedule_timer(*after, label.clone());
        }
        let latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.publish(AssistantEvent::ToolResult(ToolResult {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            ok: outcome.ok(),
            result: outcome.result().to_owned(),
            latency_ms,
        }));
        self.audit(ActionRecord {
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
        });
        outcome.result().to_owned()
    }

    fn audit(&self, record: ActionRecord) {
        if let Some(log) = &self.audit {
            let mut log = log.lock().unwrap_or_else(PoisonError::into_inner);
            if let Err(e) = log.append(&record, chrono::Local::now()) {
                self.error(
                    ErrorCode::Internal,
                    format!("cannot write the audit log in '{}': {e}", log.dir().display()),
                );
            }
        }
    }

    /// Audits a speaker's new name.
    pub fn audit_speaker(&self, speaker_id: &str, name: &str) {
        if let Some(log) = &self.audit {
            let record = stt_tools::SpeakerRecord::name(speaker_id, name, chrono::Local::now());
            let mut log = log.lock().unwrap_or_else(PoisonError::into_inner);
            if let Err(e) = log.append(&record, chrono::Local::now()) {
                tracing::warn!("cannot write the audit log: {e}");
            }
        }
    }

    fn schedule_timer(&self, after: Duration, label: String) {
        let publisher = self.publisher.clone();
        let id = self.chat_ids.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            publisher.publish(&AssistantEvent::ChatMessage(ChatMessage {
                id,
                role: ChatRole::Note,
                speaker: None,
                text: format!("⏰ {label}"),
                partial: false,
            }));
            let _ = tokio::process::Command::new("notify-send")
                .args(["--app-name=stt", "Timer", &label])
                .status()
                .await;
        });
    }

    /// Sends one chat turn and streams the answer to viewers.
    pub async fn run_chat(&self, text: &str) {
        let Some(client) = &self.client else {
            self.error(ErrorCode::NoExecutor, "no executor configured: [llm].enabled is false");
            return;
        };
        // A `clear` while this turn runs wins: nothing of the turn is stored after it.
        let epoch = self.clears.load(Ordering::SeqCst);
        let mut chat = self.chat.lock().unwrap_or_else(PoisonError::into_inner).clone();
        chat.turns.push(Message::user(text));
        self.compact(client, &mut chat).await;
        let messages = chat.messages(&self.settings.chat_system_prompt);
        if self.clears.load(Ordering::SeqCst) == epoch {
            *self.chat.lock().unwrap_or_else(PoisonError::into_inner) = chat;
        }
        let id = self.chat_ids.fetch_add(1, Ordering::Relaxed);
        let request = Request {
            model: "",
            messages: &messages,
            tools: &[],
            stream: true,
            max_tokens: self.settings.max_tokens,
            temperature: self.settings.temperature,
        };
        let publisher = self.publisher.clone();
        let stream = |piece: &str| {
            publisher.publish(&AssistantEvent::ChatMessage(ChatMessage {
                id,
                role: ChatRole::Assistant,
                speaker: None,
                text: piece.to_owned(),
                partial: true,
            }));
        };
        let (answer, truncated) = match self.complete(client, &request, stream).await {
            Ok(reply) => (reply.content, reply.finish_reason == Some(FinishReason::Length)),
            Err(LlmError::Interrupted { partial, why }) => {
                self.error(
                    ErrorCode::LlmError,
                    format!("the model's reply stopped mid-answer ({why})"),
                );
                (partial, false)
            }
            Err(e) => {
                self.error(ErrorCode::LlmError, e.to_string());
                return;
            }
        };
        self.publish(AssistantEvent::ChatMessage(ChatMessage {
            id,
            role: ChatRole::Assistant,
            speaker: None,
            text: answer.clone(),
            partial: false,
        }));
        if truncated {
            self.error(ErrorCode::Truncated, "the answer was cut off by [assistant].max_tokens");
        }
        if !answer.trim().is_empty() && self.clears.load(Ordering::SeqCst) == epoch {
            self.chat
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .turns
                .push(Message::assistant(answer));
        }
    }

    /// Keeps the next request within the budget. At `compaction_trigger_ratio` of it, the
    /// oldest turns (all but the last `compaction_keep_turns`) are summarized by the model,
    /// in chunks folded into one rolling summary. If summarizing fails, the oldest turns are
    /// dropped in blocks of `trim_block_turns` instead. Either way a note tells viewers why
    /// the context changed, and no request ever exceeds the budget.
    pub async fn compact(&self, client: &Client, chat: &mut Chat) {
        let system = self.settings.chat_system_prompt.clone();
        let budget = self.settings.prompt_budget as usize;
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let trigger = (budget as f64 * self.settings.compaction_trigger_ratio) as usize;
        if chat.tokens(&system) < trigger {
            return;
        }
        let keep =
            (self.settings.compaction_keep_turns as usize).min(chat.turns.len().saturating_sub(1));
        let evicted: Vec<Message> = chat.turns[..chat.turns.len() - keep].to_vec();
        match self.summarize(client, chat.summary.as_deref(), &evicted).await {
            Ok(summary) => {
                chat.summary = Some(summary);
                chat.turns.drain(..evicted.len());
                self.note(format!("context compacted: {} older turns summarized", evicted.len()));
            }
            Err(why) => {
                tracing::warn!("summarizing failed: {why}");
                let dropped = self.trim(chat, &system, trigger);
                self.note(format!(
                    "context trimmed: {dropped} oldest turns dropped (summarizing failed: {why})"
                ));
            }
        }
        // Whatever happened above, the request must fit.
        let dropped = self.trim(chat, &system, budget);
        if dropped > 0 {
            self.note(format!(
                "context trimmed: {dropped} oldest turns dropped to fit the model's window"
            ));
        }
    }

    /// Folds `evicted` into `previous` in chunks that each fit the budget.
    async fn summarize(
        &self,
        client: &Client,
        previous: Option<&str>,
        evicted: &[Message],
    ) -> Result<String, String> {
        if evicted.is_empty() {
            return Err("nothing old enough to summarize".into());
        }
        let prompt = &self.settings.compaction_system_prompt;
        let room = (self.settings.prompt_budget as usize)
            .saturating_sub(estimate_tokens(prompt) + self.settings.compaction_max_tokens as usize)
            .max(64);
        let mut summary = previous.map(str::to_owned);
        let mut chunk: Vec<&Message> = Vec::new();
        let mut chunks: Vec<Vec<&Message>> = Vec::new();
        let mut size = 0;
        for turn in evicted {
            let tokens = estimate_tokens(turn.content.as_deref().unwrap_or(""));
            if !chunk.is_empty() && size + tokens > room / 2 {
                chunks.push(std::mem::take(&mut chunk));
                size = 0;
            }
            chunk.push(turn);
            size += tokens;
        }
        chunks.push(chunk);
        for chunk in chunks {
            let mut text = String::new();
            if let Some(summary) = &summary {
                text.push_str(&format!("Summary so far:\n{summary}\n\n"));
            }
            text.push_str("Conversation to add to it:\n");
            for turn in chunk {
                let who = if turn.role == Role::Assistant { "Assistant" } else { "User" };
                text.push_str(&format!("{who}: {}\n", turn.content.as_deref().unwrap_or("")));
            }
            let messages = [Message::system(prompt), Message::user(text)];
            let request = Request {
                model: "",
                messages: &messages,
                tools: &[],
                stream: false,
                max_tokens: self.settings.compaction_max_tokens,
                temperature: 0.0,
            };
            let reply = self.complete(client, &request, |_| {}).await.map_err(|e| e.to_string())?;
            if reply.finish_reason == Some(FinishReason::Length) {
                return Err("the summary was cut off by [assistant].compaction_max_tokens".into());
            }
            let text = reply.content.trim();
            if text.is_empty() {
                return Err("the summary came back empty".into());
            }
            summary = Some(text.to_owned());
        }
        summary.ok_or_else(|| "no summary".into())
    }

    /// Drops the oldest turns, `trim_block_turns` at a time, until the request is under
    /// `limit` tokens (the newest turn always stays); returns how many were dropped.
    fn trim(&self, chat: &mut Chat, system: &str, limit: usize) -> usize {
        let block = self.settings.trim_block_turns.max(1) as usize;
        let mut dropped = 0;
        while chat.turns.len() > 1 && chat.tokens(system) > limit {
            let n = block.min(chat.turns.len() - 1);
            chat.turns.drain(..n);
            dropped += n;
        }
        if chat.tokens(system) > limit && chat.summary.take().is_some() {
            tracing::warn!("dropped the summary to fit the model's window");
        }
        dropped
    }

    fn note(&self, text: String) {
        self.publish(AssistantEvent::ChatMessage(ChatMessage {
            id: self.chat_ids.fetch_add(1, Ordering::Relaxed),
            role: ChatRole::Note,
            speaker: None,
            text,
            partial: false,
        }));
    }

    /// Forgets the conversation.
    pub fn clear(&self) {
        self.clears.fetch_add(1, Ordering::SeqCst);
        *self.chat.lock().unwrap_or_else(PoisonError::into_inner) = Chat::default();
    }
}

/// A rough token count: about four characters per token, plus a few per message.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4) + 4
}
