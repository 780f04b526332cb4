//! Keeping a conversation within the model's window. At `compaction_trigger_ratio` of the
//! budget, the oldest turns (all but the last `compaction_keep_turns`) are summarized by the
//! model, in chunks folded into one rolling summary. If summarizing fails, the oldest turns are
//! dropped in blocks of `trim_block_turns` instead. Either way a note tells viewers why the
//! context changed, and no request ever exceeds the budget.

use stt_llm::{Finish, Message, Provider, Request, Role};

use super::{Chat, JobEnv, Report, SLOT_OTHER, Settings, complete, estimate_tokens, sentences};
use crate::lane::Sink;

/// Keeps the next request made of `chat` within the budget, as the module says.
pub async fn compact(env: &JobEnv, client: &Provider, chat: &mut Chat, out: &Sink<Report>) {
    let settings = &env.settings;
    let system = settings.chat_system_prompt.clone();
    let budget = settings.prompt_budget as usize;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]
    let trigger = (budget as f64 * settings.compaction_trigger_ratio) as usize;
    if chat.tokens(&system) < trigger {
        return;
    }
    let keep = (settings.compaction_keep_turns as usize).min(chat.turns.len().saturating_sub(1));
    let evicted: Vec<Message> = chat.turns[..chat.turns.len() - keep].to_vec();
    match summarize(env, client, chat.summary.as_deref(), &evicted, out).await {
        Ok(summary) => {
            chat.summary = Some(summary);
            chat.turns.drain(..evicted.len());
            out.send(Report::Note(format!(
                "context compacted: {} older turns summarized",
                evicted.len()
            )));
        }
        Err(why) => {
            tracing::warn!("summarizing failed: {why}");
            let dropped = trim(settings, chat, &system, trigger);
            out.send(Report::Note(format!(
                "context trimmed: {dropped} oldest turns dropped (summarizing failed: {why})"
            )));
        }
    }
    // Whatever happened above, the request must fit.
    let dropped = trim(settings, chat, &system, budget);
    if dropped > 0 {
        out.send(Report::Note(format!(
            "context trimmed: {dropped} oldest turns dropped to fit the model's window"
        )));
    }
}

/// Drops the oldest turns of this request until it fits the budget (the memory tree's
/// conversation: its own summaries take the dropped turns out of the context soon after).
pub fn fit(settings: &Settings, chat: &mut Chat, system: &str, out: &Sink<Report>) {
    let dropped = trim(settings, chat, system, settings.prompt_budget as usize);
    if dropped > 0 {
        out.send(Report::Note(format!(
            "context trimmed: {dropped} oldest messages left this request to fit the model's \
             window (the memory tree keeps them, and summarizes them next)"
        )));
    }
}

/// Folds `evicted` into `previous` in chunks that each fit the budget.
async fn summarize(
    env: &JobEnv,
    client: &Provider,
    previous: Option<&str>,
    evicted: &[Message],
    out: &Sink<Report>,
) -> Result<String, String> {
    let settings = &env.settings;
    if evicted.is_empty() {
        return Err("nothing old enough to summarize".into());
    }
    let prompt = &settings.compaction_system_prompt;
    let room = (settings.prompt_budget as usize)
        .saturating_sub(estimate_tokens(prompt) + settings.compaction_max_tokens as usize)
        .max(64);
    let mut summary = previous.map(str::to_owned);
    let mut chunk: Vec<&Message> = Vec::new();
    let mut chunks: Vec<Vec<&Message>> = Vec::new();
    let mut size = 0;
    for turn in evicted {
        let tokens = estimate_tokens(&turn.content);
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
            text.push_str(&format!("{who}: {}\n", &turn.content));
        }
        let messages = [Message::system(prompt), Message::user(text)];
        let request = Request {
            messages: &messages,
            tools: &[],
            stream: false,
            max_tokens: settings.compaction_max_tokens,
            temperature: 0.0,
            resume: None,
            slot: Some(SLOT_OTHER),
        };
        let reply =
            complete(env, client, &request, out, |_| {}).await.map_err(|e| e.to_string())?;
        // Cut off: its whole sentences before any repeat (a small model loops) still sum up.
        let text = if reply.finish == Some(Finish::Length) {
            sentences::before_the_loop(&reply.content).ok_or(
                "the summary was cut off by [assistant].compaction_max_tokens before one whole \
                 sentence",
            )?
        } else {
            reply.content
        };
        let text = text.trim();
        if text.is_empty() {
            return Err("the summary came back empty".into());
        }
        summary = Some(text.to_owned());
    }
    summary.ok_or_else(|| "no summary".into())
}

/// Drops the oldest turns, `trim_block_turns` at a time, until the request is under
/// `limit` tokens (the newest turn always stays); returns how many were dropped.
fn trim(settings: &Settings, chat: &mut Chat, system: &str, limit: usize) -> usize {
    let block = settings.trim_block_turns.max(1) as usize;
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
