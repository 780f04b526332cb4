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
use crate::{Endpoint, LlmError, sse};

/// A client for one endpoint.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    endpoint: Endpoint,
}

impl Client {
    pub fn new(endpoint: Endpoint) -> Result<Self, LlmError> {
        let http = reqwest::Client::builder()
            .connect_timeout(endpoint.connect_timeout)
            .build()
            .map_err(|e| LlmError::Unreachable { url: endpoint.url.clone(), why: e.to_string() })?;
        Ok(Self { http, endpoint })
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Whether the server at the endpoint answers at all: a `GET` of the models route next to
    /// the chat route (`…/v1/models`, which llama-server, ollama and OpenAI serve). Any HTTP
    /// answer counts, even an error status: the server is up, and a real request will say
    /// what it dislikes. Takes at most the connect timeout.
    pub async fn probe(&self) -> Result<(), LlmError> {
        let url = models_url(&self.endpoint.url);
        let mut builder = self.http.get(&url).timeout(self.endpoint.connect_timeout);
        if let Some(key) = &self.endpoint.api_key {
            builder = builder.bearer_auth(key.expose());
        }
        builder.send().await.map(drop).map_err(|e| match self.send_error(&e) {
            LlmError::Unreachable { url, .. } if e.is_timeout() => LlmError::Unreachable {
                url,
                why: format!("no answer within {} s", self.endpoint.connect_timeout.as_secs()),
            },
            other => other,
        })
    }

    /// The models the server offers (`GET …/models`: OpenAI's `data[].id`, which
    /// llama-server, LM Studio, vLLM and ollama's `/v1` all serve).
    pub async fn models(&self) -> Result<Vec<String>, LlmError> {
        let url = models_url(&self.endpoint.url);
        let mut builder = self.http.get(&url);
        if let Some(key) = &self.endpoint.api_key {
            builder = builder.bearer_auth(key.expose());
        }
        let response = self.within(builder.send()).await?.map_err(|e| self.send_error(&e))?;
        let status = response.status();
        let text = self.within(response.text()).await?.map_err(|e| self.send_error(&e))?;
        if !status.is_success() {
            return Err(LlmError::Status {
                url,
                status: status.as_u16(),
                body: text.trim().chars().take(200).collect(),
            });
        }
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
        let url = &self.endpoint.url;
        let body = wire::Request::new(&self.endpoint.model, request);
        let json = serde_json::to_vec(&body)
            .map_err(|e| LlmError::Malformed { url: url.clone(), why: e.to_string() })?;
        let mut builder = self
            .http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", if request.stream { "text/event-stream" } else { "application/json" })
            .body(json);
        if let Some(key) = &self.endpoint.api_key {
            builder = builder.bearer_auth(key.expose());
        }
        let retry = builder.try_clone();
        let response = match (self.within(builder.send()).await?, retry) {
            // A kept-alive connection the server had closed (llama-server closes one after a
            // streamed reply): the request never reached it, so send it again, once, on a
            // new connection.
            (Err(e), Some(retry)) if stale_connection(&e) => {
                tracing::debug!("the kept-alive connection was closed; sending again");
                self.within(retry.send()).await?.map_err(|e| self.send_error(&e))?
            }
            (outcome, _) => outcome.map_err(|e| self.send_error(&e))?,
        };
        let status = response.status();
        if !status.is_success() {
            let text = self.within(response.text()).await?.unwrap_or_default();
            return Err(LlmError::Status {
                url: url.clone(),
                status: status.as_u16(),
                body: text.trim().chars().take(200).collect(),
            });
        }
        let mut response = response;
        let mut reply = ReplyBuilder::new();
        if !request.stream {
            let text = self.within(response.text()).await?.map_err(|e| self.send_error(&e))?;
            let parsed: Response = serde_json::from_str(&text)
                .map_err(|e| LlmError::Malformed { url: url.clone(), why: e.to_string() })?;
            on_text(&reply.add(&parsed));
            return Ok(reply.finish());
        }
        let mut decoder = sse::Decoder::new();
        let mut done = false;
        while !done {
            let chunk = match self.within(response.chunk()).await {
                Ok(Ok(Some(chunk))) => chunk,
                Ok(Ok(None)) => break,
                Ok(Err(e)) => {
                    return Err(LlmError::Interrupted {
                        partial: reply.finish().content,
                        why: e.to_string(),
                    });
                }
                Err(timeout) => {
                    return Err(LlmError::Interrupted {
                        partial: reply.finish().content,
                        why: timeout.to_string(),
                    });
                }
            };
            for event in decoder.push(&chunk) {
                done |= self.event(event, &mut reply, &mut on_text)?;
            }
        }
        for event in decoder.finish() {
            done |= self.event(event, &mut reply, &mut on_text)?;
        }
        let reply = reply.finish();
        if !done && reply.finish.is_none() {
            return Err(LlmError::Interrupted {
                partial: reply.content,
                why: "the connection closed before the reply was finished".into(),
            });
        }
        Ok(reply)
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
                        url: self.endpoint.url.clone(),
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

    async fn within<T>(&self, future: impl std::future::Future<Output = T>) -> Result<T, LlmError> {
        tokio::time::timeout(self.endpoint.idle_timeout, future).await.map_err(|_| {
            LlmError::Timeout {
                url: self.endpoint.url.clone(),
                seconds: self.endpoint.idle_timeout.as_secs(),
            }
        })
    }

    fn send_error(&self, e: &reqwest::Error) -> LlmError {
        let url = self.endpoint.url.clone();
        if url.starts_with("https://") && !cfg!(feature = "https") {
            return LlmError::NoTls { url };
        }
        let mut why = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(inner) = source {
            why = inner.to_string();
            source = inner.source();
        }
        LlmError::Unreachable { url, why }
    }
}

/// Whether `e` is a pooled connection the server had closed before the request was read
/// (hyper's "connection closed before message completed").
fn stale_connection(e: &reqwest::Error) -> bool {
    let mut source: Option<&dyn std::error::Error> = Some(e);
    while let Some(inner) = source {
        if inner.to_string().contains("connection closed before message completed") {
            return true;
        }
        source = inner.source();
    }
    false
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
