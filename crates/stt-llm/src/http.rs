//! What the HTTP providers ([`crate::openai`], [`crate::anthropic`]) share: one client per
//! endpoint with its connect timeout, the idle timeout on every wait, sending a request
//! again on a kept-alive connection the server had closed, and failures worded alike.

use std::future::Future;

use crate::{Endpoint, LlmError, sse};

/// How a streamed reply's events ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ended {
    /// An event said the reply is over (`[DONE]`, `message_stop`).
    ByEvent,
    /// The stream ended with no such event.
    Closed,
    /// The stream broke off, or fell silent past the idle timeout: why.
    Broke(String),
}

/// A client for one endpoint.
#[derive(Debug, Clone)]
pub(crate) struct Http {
    client: reqwest::Client,
    endpoint: Endpoint,
}

impl Http {
    pub(crate) fn new(endpoint: Endpoint) -> Result<Self, LlmError> {
        let client =
            reqwest::Client::builder().connect_timeout(endpoint.connect_timeout).build().map_err(
                |e| LlmError::Unreachable { url: endpoint.url.clone(), why: e.to_string() },
            )?;
        Ok(Self { client, endpoint })
    }

    pub(crate) fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    pub(crate) fn get(&self, url: &str) -> reqwest::RequestBuilder {
        self.client.get(url)
    }

    /// A `POST` of `body` (JSON) to the endpoint, asking for a stream or a whole answer.
    pub(crate) fn post_json(&self, body: Vec<u8>, stream: bool) -> reqwest::RequestBuilder {
        self.client
            .post(&self.endpoint.url)
            .header("content-type", "application/json")
            .header("accept", if stream { "text/event-stream" } else { "application/json" })
            .body(body)
    }

    /// A `POST` of `body` (JSON) to `url`, for a whole answer.
    pub(crate) fn post_to(&self, url: &str, body: Vec<u8>) -> reqwest::RequestBuilder {
        self.client
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(body)
    }

    /// Whether the server answers `request` at all: any HTTP answer counts, even an error
    /// status (the server is up, and a real request will say what it dislikes). Takes at
    /// most the connect timeout.
    pub(crate) async fn probe(&self, request: reqwest::RequestBuilder) -> Result<(), LlmError> {
        let timeout = self.endpoint.connect_timeout;
        request.timeout(timeout).send().await.map(drop).map_err(|e| match self.send_error(&e) {
            LlmError::Unreachable { url, .. } if e.is_timeout() => LlmError::Unreachable {
                url,
                why: format!("no answer within {} s", timeout.as_secs()),
            },
            other => other,
        })
    }

    /// Sends `request` and returns the response if its status is a success; an error status
    /// is [`LlmError::Status`] with the start of the body, naming `url`. A kept-alive
    /// connection the server had closed (llama-server closes one after a streamed reply)
    /// never got the request, so it is sent again, once, on a new connection.
    pub(crate) async fn send(
        &self,
        url: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, LlmError> {
        let retry = request.try_clone();
        let response = match (self.within(request.send()).await?, retry) {
            (Err(e), Some(retry)) if stale_connection(&e) => {
                tracing::debug!("the kept-alive connection was closed; sending again");
                self.within(retry.send()).await?.map_err(|e| self.send_error(&e))?
            }
            (outcome, _) => outcome.map_err(|e| self.send_error(&e))?,
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let text = self.within(response.text()).await?.unwrap_or_default();
        Err(LlmError::Status { url: url.to_owned(), status: status.as_u16(), body: head(&text) })
    }

    /// Reads the server-sent events of a streamed `response`, each folded by `event` (true:
    /// the reply is over), until one says so or the stream ends or breaks. An error `event`
    /// returns stops the reading and is returned.
    pub(crate) async fn events(
        &self,
        mut response: reqwest::Response,
        mut event: impl FnMut(sse::Event) -> Result<bool, LlmError>,
    ) -> Result<Ended, LlmError> {
        let mut decoder = sse::Decoder::new();
        loop {
            let chunk = match self.within(response.chunk()).await {
                Ok(Ok(Some(chunk))) => chunk,
                Ok(Ok(None)) => break,
                Ok(Err(e)) => return Ok(Ended::Broke(e.to_string())),
                Err(timeout) => return Ok(Ended::Broke(timeout.to_string())),
            };
            for parsed in decoder.push(&chunk) {
                if event(parsed)? {
                    return Ok(Ended::ByEvent);
                }
            }
        }
        for parsed in decoder.finish() {
            if event(parsed)? {
                return Ok(Ended::ByEvent);
            }
        }
        Ok(Ended::Closed)
    }

    /// The whole body of `response`.
    pub(crate) async fn text(&self, response: reqwest::Response) -> Result<String, LlmError> {
        self.within(response.text()).await?.map_err(|e| self.send_error(&e))
    }

    /// Waits for `future` at most the idle timeout.
    pub(crate) async fn within<T>(&self, future: impl Future<Output = T>) -> Result<T, LlmError> {
        tokio::time::timeout(self.endpoint.idle_timeout, future).await.map_err(|_| {
            LlmError::Timeout {
                url: self.endpoint.url.clone(),
                seconds: self.endpoint.idle_timeout.as_secs(),
            }
        })
    }

    /// A failed send, as a person needs it: the innermost cause says what happened
    /// ("connection refused"); the outer ones only that a request failed.
    pub(crate) fn send_error(&self, e: &reqwest::Error) -> LlmError {
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

/// The first 200 characters of an error body, as [`LlmError::Status`] carries it.
pub(crate) fn head(text: &str) -> String {
    text.trim().chars().take(200).collect()
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
