//! A chat turn: the conversation kept within the window ([`super::compact`], or the memory
//! tree's summaries: [`super::tree`]), the turn sent,
//! the answer streamed back as pieces of the job's reply line. The conversation the turn
//! leaves goes back to the loop, which keeps it unless a `clear` came in the meantime.

use stt_llm::{Finish, Message, Request, Resume};
use stt_proto::ErrorCode;

use super::{Chat, JobEnv, Report, SLOT_OTHER, compact, complete, error};
use crate::lane::Sink;

/// What a turn sends.
#[derive(Debug, Clone, Copy)]
pub struct Turn<'a> {
    /// The words, already prefixed with who said them.
    pub text: &'a str,
    pub system: &'a str,
    /// The provider's handle on its own copy of the conversation (CLI providers).
    pub resume: Option<&'a str>,
}

/// Sends a turn after `conversation`. Failures land in the conversation pane as text that
/// names the fix; an answer cut off mid-stream is kept, flagged as stopped.
pub async fn turn(env: &JobEnv, turn: Turn<'_>, mut conversation: Chat, out: &Sink<Report>) {
    let Some(client) = &env.client else {
        return out.send(Report::Failed(env.missing.clone()));
    };
    let settings = &env.settings;
    // With the memory tree, the conversation is the tree's, kept within the window by its
    // summaries (written after the turn); this request only has to fit.
    match super::tree::conversation(env).await {
        Some(tree) => {
            conversation = tree;
            conversation.turns.push(Message::user(turn.text));
            compact::fit(settings, &mut conversation, turn.system, out);
        }
        None => {
            conversation.turns.push(Message::user(turn.text));
            compact::compact(env, client, &mut conversation, out).await;
        }
    }
    out.send(Report::Conversation(conversation.clone()));
    let messages = conversation.messages(turn.system);
    let resume = turn.resume.map(|handle| Resume(handle.to_owned()));
    let request = Request {
        messages: &messages,
        tools: &[],
        stream: settings.stream,
        max_tokens: settings.max_tokens,
        temperature: settings.temperature,
        resume: resume.as_ref(),
        slot: Some(SLOT_OTHER),
    };
    let stream = |piece: &str| {
        out.send(Report::Reply { text: piece.to_owned(), partial: true, stopped: false });
    };
    let (answer, truncated, stopped) = match complete(env, client, &request, out, stream).await {
        Ok(reply) => {
            if let Some(usage) = reply.usage {
                out.send(Report::Usage(usage));
            }
            if let Some(Resume(handle)) = reply.resume {
                out.send(Report::Resume(handle));
            }
            (reply.content, reply.finish == Some(Finish::Length), false)
        }
        Err(e) if !e.partial().is_empty() => {
            out.send(Report::Failed(env.explain(&e)));
            (e.partial().to_owned(), false, true)
        }
        Err(e) => return out.send(Report::Failed(env.explain(&e))),
    };
    out.send(Report::Reply { text: answer.clone(), partial: false, stopped });
    if truncated {
        error(out, ErrorCode::Truncated, "the answer was cut off by [assistant].max_tokens");
    }
    if !answer.trim().is_empty() {
        conversation.turns.push(Message::assistant(answer));
        out.send(Report::Conversation(conversation));
    }
}
