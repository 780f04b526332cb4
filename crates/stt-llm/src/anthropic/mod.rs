//! Anthropic's messages API (`POST /v1/messages`), streamed as server-sent events, with
//! tool calls as `tool_use` content blocks.
//!
//! NOT BUILT YET: a stub with the interface the rest of the crate uses.

use crate::conversation::{Reply, Request};
use crate::{Endpoint, LlmError};

/// A client for one messages endpoint (`Endpoint::url` is the full `…/v1/messages` URL).
#[derive(Debug, Clone)]
pub struct Client {
    endpoint: Endpoint,
}

impl Client {
    pub fn new(endpoint: Endpoint) -> Result<Self, LlmError> {
        Ok(Self { endpoint })
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    pub async fn probe(&self) -> Result<(), LlmError> {
        Err(self.not_built())
    }

    pub async fn models(&self) -> Result<Vec<String>, LlmError> {
        Err(self.not_built())
    }

    pub async fn complete(
        &self,
        _request: &Request<'_>,
        _on_text: impl FnMut(&str),
    ) -> Result<Reply, LlmError> {
        Err(self.not_built())
    }

    fn not_built(&self) -> LlmError {
        LlmError::Malformed { url: self.endpoint.url.clone(), why: "not built yet".into() }
    }
}
