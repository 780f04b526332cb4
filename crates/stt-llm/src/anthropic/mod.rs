//! Anthropic's messages API (`POST /v1/messages`), streamed as server-sent events, with
//! tool calls as `tool_use` content blocks: one request at a time, with every failure turned
//! into a message that names the fix.
//!
//! - [`wire`]: the request and response bodies, and how the provider-neutral conversation
//!   becomes one (the system prompt lifted out, tool results merged into the user's turns).
//! - [`stream`]: folding streamed events (text, tool-use input fragments, usage) into one
//!   reply.
//!
//! Neither the key nor the request body is ever logged: prompts are private.

pub mod stream;
pub mod wire;

use stream::{ReplyBuilder, Step};

use crate::conversation::{Reply, Request};
use crate::http::{Ended, Http};
use crate::{Endpoint, LlmError, sse};

/// A client for one messages endpoint (`Endpoint::url` is the full `…/v1/messages` URL;
/// an empty `Endpoint::model` asks for [`wire::DEFAULT_MODEL`]).
#[derive(Debug, Clone)]
pub struct Client {
    http: Http,
}

impl Client {
    pub fn new(endpoint: Endpoint) -> Result<Self, LlmError> {
        Http::new(endpoint).map(|http| Self { http })
    }

    pub fn endpoint(&self) -> &Endpoint {
        self.http.endpoint()
    }

    /// Whether the API answers at all: a `GET` of the models route beside the messages route
    /// (`…/v1/models`); a bad key's 401 counts as an answer.
    pub async fn probe(&self) -> Result<(), LlmError> {
        let url = models_url(&self.endpoint().url);
        self.http.probe(self.headers(self.http.get(&url))).await
    }

    /// The models the API offers (`GET …/v1/models`, `data[].id`), up to the 1000 one page
    /// holds.
    pub async fn models(&self) -> Result<Vec<String>, LlmError> {
        let url = models_url(&self.endpoint().url);
        // One page holds 20 unless asked for more (the `query` helper is a reqwest feature
        // this crate does without).
        let builder = self.headers(self.http.get(&format!("{url}?limit=1000")));
        let response = self.http.send(&url, builder).await?;
        let text = self.http.text(response).await?;
        let list: wire::ModelList = serde_json::from_str(&text)
            .map_err(|e| LlmError::Malformed { url: url.clone(), why: e.to_string() })?;
        Ok(list.data.into_iter().map(|m| m.id).collect())
    }

    /// Sends one request. With `request.stream`, `on_text` is called with each piece of
    /// text as it arrives; either way the whole reply is returned.
    pub async fn complete(
        &self,
        request: &Request<'_>,
        mut on_text: impl FnMut(&str),
    ) -> Result<Reply, LlmError> {
        let url = &self.endpoint().url;
        let body = wire::Request::new(&self.endpoint().model, request);
        let json = serde_json::to_vec(&body)
            .map_err(|e| LlmError::Malformed { url: url.clone(), why: e.to_string() })?;
        let builder = self.headers(self.http.post_json(json, request.stream));
        let response = self.http.send(url, builder).await?;
        let mut reply = ReplyBuilder::new();
        if !request.stream {
            let text = self.http.text(response).await?;
            let parsed: wire::Response = serde_json::from_str(&text)
                .map_err(|e| LlmError::Malformed { url: url.clone(), why: e.to_string() })?;
            let added = reply.whole(parsed);
            if !added.is_empty() {
                on_text(&added);
            }
            return Ok(reply.finish());
        }
        let ended =
            self.http.events(response, |event| self.event(event, &mut reply, &mut on_text)).await?;
        match ended {
            Ended::ByEvent => Ok(reply.finish()),
            // Unlike an OpenAI stream, a stop reason is no proof of the end here: only
            // `message_stop` is.
            Ended::Closed => Err(interrupted(
                &reply,
                "the connection closed before the reply was finished".into(),
            )),
            Ended::Broke(why) => Err(interrupted(&reply, why)),
        }
    }

    /// Folds one SSE event into the reply; true at `message_stop`.
    fn event(
        &self,
        event: sse::Event,
        reply: &mut ReplyBuilder,
        on_text: &mut impl FnMut(&str),
    ) -> Result<bool, LlmError> {
        // The event's kind is also in its `event:` line, but the data's own `type` says the
        // same, so the decoder's data is enough. `[DONE]` is OpenAI's and means nothing here.
        let sse::Event::Data(data) = event else { return Ok(false) };
        let parsed: wire::StreamEvent =
            serde_json::from_str(&data).map_err(|e| LlmError::Malformed {
                url: self.endpoint().url.clone(),
                why: format!("{e} in {}", data.chars().take(120).collect::<String>()),
            })?;
        match reply.event(parsed) {
            Step::Text(added) => {
                if !added.is_empty() {
                    on_text(&added);
                }
                Ok(false)
            }
            Step::Done => Ok(true),
            Step::Failed(why) => Err(interrupted(reply, why)),
        }
    }

    /// The headers every request carries: the key (when there is one) and the API version.
    fn headers(&self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let builder = builder.header("anthropic-version", wire::API_VERSION);
        match &self.endpoint().api_key {
            Some(key) => builder.header("x-api-key", key.expose()),
            None => builder,
        }
    }
}

fn interrupted(reply: &ReplyBuilder, why: String) -> LlmError {
    LlmError::Interrupted { partial: reply.content().to_owned(), why }
}

/// The models route beside a messages URL: `…/v1/messages` → `…/v1/models`; any other URL
/// gets `/models` beside its last path segment, as for OpenAI's.
pub(crate) fn models_url(messages_url: &str) -> String {
    let base = messages_url.split(['?', '#']).next().unwrap_or(messages_url).trim_end_matches('/');
    match base.strip_suffix("/messages") {
        Some(root) => format!("{root}/models"),
        None => crate::openai::models_url(messages_url),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_models_route_sits_beside_the_messages_route() {
        let cases = [
            ("https://api.anthropic.com/v1/messages", "https://api.anthropic.com/v1/models"),
            ("http://127.0.0.1:9931/v1/messages/", "http://127.0.0.1:9931/v1/models"),
            (
                "https://proxy.example.com/anthropic/v1/messages?beta=true",
                "https://proxy.example.com/anthropic/v1/models",
            ),
            ("http://host:8080/v1/chat", "http://host:8080/v1/models"),
        ];
        for (messages, models) in cases {
            assert_eq!(models_url(messages), models, "{messages}");
        }
    }
}
