//! Subscription CLIs as providers: one process per turn, the prompt on stdin, the reply
//! streamed from stdout in each tool's own format, and the tool's session id kept as the
//! [`crate::Resume`] handle so the next turn carries on the same conversation.
//!
//! NOT BUILT YET: a stub with the interface the rest of the crate uses.

use std::path::PathBuf;
use std::time::Duration;

use crate::LlmError;
use crate::conversation::{Reply, Request};

/// Which CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cli {
    Claude,
    Codex,
    Gemini,
    Opencode,
}

impl Cli {
    /// The program's name, looked up on `PATH`.
    pub fn program(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Codex => "codex",
            Self::Gemini => "gemini",
            Self::Opencode => "opencode",
        }
    }
}

/// A client for one CLI.
#[derive(Debug, Clone)]
pub struct Client {
    cli: Cli,
    /// The program to run: `cli.program()` looked up on `PATH`, or a path.
    program: PathBuf,
    model: String,
    idle_timeout: Duration,
}

impl Client {
    /// A client that runs `program` (a name looked up on `PATH`, or a path) as `cli`, asking
    /// for `model` (empty: the CLI's default). `idle_timeout` is the longest silence allowed
    /// before the first output and between pieces of it.
    pub fn new(cli: Cli, program: impl Into<PathBuf>, model: &str, idle_timeout: Duration) -> Self {
        Self { cli, program: program.into(), model: model.to_owned(), idle_timeout }
    }

    pub fn cli(&self) -> Cli {
        self.cli
    }

    pub fn program(&self) -> &str {
        self.program.to_str().unwrap_or(self.cli.program())
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    pub async fn probe(&self) -> Result<(), LlmError> {
        Err(LlmError::NotInstalled { program: self.program().to_owned() })
    }

    pub async fn models(&self) -> Result<Vec<String>, LlmError> {
        Ok(Vec::new())
    }

    pub async fn complete(
        &self,
        _request: &Request<'_>,
        _on_text: impl FnMut(&str),
    ) -> Result<Reply, LlmError> {
        let _ = self.idle_timeout;
        Err(LlmError::NotInstalled { program: self.program().to_owned() })
    }
}
