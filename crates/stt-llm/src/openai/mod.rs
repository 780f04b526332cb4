//! OpenAI-compatible chat completions (llama.cpp's `llama-server`, ollama's `/v1`, or any
//! other): one request at a time, streamed or not, with every failure turned into a message
//! that names the fix.
//!
//! - [`wire`]: the request and response bodies of `/v1/chat/completions`, and how the
//!   provider-neutral conversation becomes one.
//! - [`stream`]: folding streamed deltas (text and tool-call fragments) into one reply.

pub mod stream;
pub mod wire;

use stream::ReplyBuilder;
use wire::Response;

use crate::conversation::{Reply, Request};
use crate::http::{Ended, Http};
use crate::{Endpoint, LlmError, sse};

/// What [`Client::slot`] does with a slot's prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotAction {
    Save,
    Restore,
}

/// A client for one endpoint.
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

    /// Adds the key, when there is one, as a bearer token.
    fn auth(&self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.endpoint().api_key {
            Some(key) => builder.bearer_auth(key.expose()),
            None => builder,
        }
    }

    /// Whether the server at the endpoint answers at all: a `GET` of the models route next to
    /// the chat route (`…/v1/models`, which llama-server, ollama and OpenAI serve).
    pub async fn probe(&self) -> Result<(), LlmError> {
        let url = models_url(&self.endpoint().url);
        self.http.probe(self.auth(self.http.get(&url))).await
    }

    /// The models the server offers (`GET …/models`: OpenAI's `data[].id`, which
    /// llama-server, LM Studio, vLLM and ollama's `/v1` all serve).
    pub async fn models(&self) -> Result<Vec<String>, LlmError> {
        let url = models_url(&self.endpoint().url);
        let response = self.http.send(&url, self.auth(self.http.get(&url))).await?;
        let text = self.http.text(response).await?;
        let list: wire::ModelList = serde_json::from_str(&text)
            .map_err(|e| LlmError::Malformed { url: url.clone(), why: e.to_string() })?;
        Ok(list.data.into_iter().map(|m| m.id).collect())
    }

    /// What tells the model a server serves from any other: llama-server's first model,
    /// its id (the GGUF's path) and `meta` (size, parameters, vocabulary), as one line; other
    /// servers' first model id. For a key of saved state that must never be restored into
    /// another model.
    pub async fn model_identity(&self) -> Result<String, LlmError> {
        let url = models_url(&self.endpoint().url);
        let response = self.http.send(&url, self.auth(self.http.get(&url))).await?;
        let text = self.http.text(response).await?;
        let list: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| LlmError::Malformed { url: url.clone(), why: e.to_string() })?;
        let first = &list["data"][0];
        match first["id"].as_str() {
            Some(id) => Ok(format!("{id} {}", first["meta"])),
            None => Err(LlmError::Malformed { url, why: "no model listed".into() }),
        }
    }

    /// llama-server's `POST /slots/{slot}?action=save|restore` of `file` (a name in the
    /// directory its `--slot-save-path` gives): the prompt a slot holds, written out or read
    /// back. Returns the tokens saved or restored. A server started without that directory,
    /// or any other server, answers with an error status.
    pub async fn slot(&self, slot: u32, action: SlotAction, file: &str) -> Result<u64, LlmError> {
        let root = models_url(&self.endpoint().url);
        let root = root.trim_end_matches("/models").trim_end_matches("/v1");
        let (name, field) = match action {
            SlotAction::Save => ("save", "n_saved"),
            SlotAction::Restore => ("restore", "n_restored"),
        };
        let url = format!("{root}/slots/{slot}?action={name}");
        let body = serde_json::to_vec(&serde_json::json!({ "filename": file }))
            .map_err(|e| LlmError::Malformed { url: url.clone(), why: e.to_string() })?;
        let response = self.http.send(&url, self.auth(self.http.post_to(&url, body))).await?;
        let text = self.http.text(response).await?;
        let answer: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| LlmError::Malformed { url: url.clone(), why: e.to_string() })?;
        answer[field]
            .as_u64()
            .ok_or_else(|| LlmError::Malformed { url, why: format!("no {field} in the answer") })
    }

    /// Sends one request. With `request.stream`, `on_text` is called with each piece of
    /// text as it arrives; either way the whole reply is returned.
    pub async fn complete(
        &self,
        request: &Request<'_>,
        mut on_text: impl FnMut(&str),
    ) -> Result<Reply, LlmError> {
        let url = &self.endpoint().url;
        let body = wire::Request::new(&self.endpoint().model, request, self.endpoint().slots);
        let json = serde_json::to_vec(&body)
            .map_err(|e| LlmError::Malformed { url: url.clone(), why: e.to_string() })?;
        // What the model is asked and answers, word for word, only at trace level
        // (`STT_LOG=stt_llm=trace`): for tuning prompts; it holds what people said.
        tracing::trace!(body = %String::from_utf8_lossy(&json), "request");
        let builder = self.auth(self.http.post_json(json, request.stream));
        let response = self.http.send(url, builder).await?;
        let mut reply = ReplyBuilder::new();
        if !request.stream {
            let text = self.http.text(response).await?;
            let parsed: Response = serde_json::from_str(&text)
                .map_err(|e| LlmError::Malformed { url: url.clone(), why: e.to_string() })?;
            on_text(&reply.add(&parsed));
            let reply = reply.finish();
            tracing::trace!(content = %reply.content, calls = ?reply.tool_calls, "reply");
            return Ok(reply);
        }
        let ended =
            self.http.events(response, |event| self.event(event, &mut reply, &mut on_text)).await?;
        let reply = reply.finish();
        tracing::trace!(content = %reply.content, calls = ?reply.tool_calls, "reply");
        let why = match ended {
            Ended::ByEvent => return Ok(reply),
            // A finish reason is as good as `[DONE]`: some servers close without the latter.
            Ended::Closed if reply.finish.is_some() => return Ok(reply),
            Ended::Closed => "the connection closed before the reply was finished".to_owned(),
            Ended::Broke(why) => why,
        };
        Err(LlmError::Interrupted { partial: reply.content, why })
    }

    /// Folds one SSE event into the reply; true at `[DONE]`.
    fn event(
        &self,
        event: sse::Event,
        reply: &mut ReplyBuilder,
        on_text: &mut impl FnMut(&str),
    ) -> Result<bool, LlmError> {
        match event {
            sse::Event::Done => Ok(true),
            sse::Event::Data(data) => {
                let chunk: Response =
                    serde_json::from_str(&data).map_err(|e| LlmError::Malformed {
                        url: self.endpoint().url.clone(),
                        why: format!("{e} in {}", data.chars().take(120).collect::<String>()),
                    })?;
                let added = reply.add(&chunk);
                if !added.is_empty() {
                    on_text(&added);
                }
                Ok(false)
            }
        }
    }
}

/// The models route beside a chat-completions URL: `…/chat/completions` → `…/models`; any
/// other URL gets `/models` after its last path segment's parent.
pub(crate) fn models_url(chat_url: &str) -> String {
    let base = chat_url.split(['?', '#']).next().unwrap_or(chat_url).trim_end_matches('/');
    match base.strip_suffix("/chat/completions") {
        Some(root) => format!("{root}/models"),
        None => match base.rsplit_once('/') {
            Some((parent, _)) if parent.contains("://") && parent.len() > "https://".len() => {
                format!("{parent}/models")
            }
            _ => format!("{base}/models"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_models_route_sits_beside_the_chat_route() {
        let cases = [
            ("http://localhost:9931/v1/chat/completions", "http://localhost:9931/v1/models"),
            ("http://localhost:11434/v1/chat/completions/", "http://localhost:11434/v1/models"),
            (
                "https://api.example.com/v1/chat/completions?x=1",
                "https://api.example.com/v1/models",
            ),
            ("http://host:8080/v1/completions", "http://host:8080/v1/models"),
            ("http://host:8080", "http://host:8080/models"),
        ];
        for (chat, models) in cases {
            assert_eq!(models_url(chat), models, "{chat}");
        }
    }
}
