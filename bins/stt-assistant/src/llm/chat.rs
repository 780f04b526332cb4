//! A chat turn: the conversation kept within the window ([`super::compact`]), the turn sent,
//! the answer streamed back as pieces of the job's reply line. The conversation the turn
//! leaves goes back to the loop, which keeps it unless a `clear` came in the meantime.

use stt_llm::{Finish, LlmError, Message, Request};
use stt_proto::ErrorCode;

use super::{Chat, Lane, Report, compact, complete, error, no_client};
use crate::lane::Sink;

/// Sends `text` (already prefixed with the speaker) after `conversation`.
pub async fn turn(lane: &Lane, text: &str, mut conversation: Chat, out: &Sink<Report>) {
    let Some(client) = &lane.client else { return no_client(lane, out) };
    let settings = &lane.settings;
    conversation.turns.push(Message::user(text));
    compact::compact(lane, client, &mut conversation, out).await;
    out.send(Report::Conversation(conversation.clone()));
    let messages = conversation.messages(&settings.chat_system_prompt);
    let request = Request {
        messages: &messages,
        tools: &[],
        stream: true,
        max_tokens: settings.max_tokens,
        temperature: settings.temperature,
        resume: None,
    };
    let stream = |piece: &str| out.send(Report::Reply { text: piece.to_owned(), partial: true });
    let (answer, truncated) = match complete(lane, client, &request, out, stream).await {
        Ok(reply) => (reply.content, reply.finish == Some(Finish::Length)),
        Err(LlmError::Interrupted { partial, why }) => {
            error(
                out,
                ErrorCode::LlmError,
                format!("the model's reply stopped mid-answer ({why})"),
            );
            (partial, false)
        }
        Err(e) => return error(out, ErrorCode::LlmError, lane.explain(&e)),
    };
    out.send(Report::Reply { text: answer.clone(), partial: false });
    if truncated {
        error(out, ErrorCode::Truncated, "the answer was cut off by [assistant].max_tokens");
    }
    if !answer.trim().is_empty() {
        conversation.turns.push(Message::assistant(answer));
        out.send(Report::Conversation(conversation));
    }
}
