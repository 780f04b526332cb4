//! Subscription CLIs as providers: one process per turn, the prompt on stdin, the reply
//! streamed from stdout in each tool's own format, and the tool's session id kept as the
//! [`crate::Resume`] handle so the next turn carries on the same conversation.
//!
//! Modules, in reading order: `stream` (the turn every format folds into), `process` (one
//! turn's process, and short commands), then one per CLI with its argv, its stream format
//! and the words it fails with: `claude`, `codex`, `gemini`, `opencode`.
//!
//! # Invariants
//!
//! - The person's words never go in argv, which any user of the machine can read in `ps`:
//!   the prompt (and the system prompt) go to the child's stdin, which is then closed; argv
//!   holds flags, the model and the session id.
//! - A turn without a handle sends the system prompt, the earlier turns as a short
//!   transcript and the newest question; a turn with one sends only the question. A CLI that
//!   refuses the handle (the session is gone, or the flag unknown) gets the turn again
//!   without it.
//! - Dropping a turn's future kills the CLI and its children: that is how Stop works.
//! - Prompts and replies are never logged: argv, exit statuses and event types are.
//!
//! `max_tokens` and `temperature` are not passed on: the CLIs choose. CLIs run their own
//! agents, not the assistant's tools, so replies never carry tool calls.

mod claude;
mod codex;
mod gemini;
mod opencode;
mod process;
mod stream;

use std::path::PathBuf;
use std::time::Duration;

use crate::LlmError;
use crate::conversation::{Finish, Message, Reply, Request, Resume, Role};
use process::Finished;
use stream::Format;

/// The longest a probe's auth check (`claude auth status`) may take.
const AUTH_CHECK: Duration = Duration::from_secs(5);

/// A fresh turn's transcript of earlier turns keeps at most this many messages…
const TRANSCRIPT_MESSAGES: usize = 24;
/// …and at most this many bytes of them, newest first.
const TRANSCRIPT_BYTES: usize = 32 * 1024;

/// Which CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cli {
    Claude,
    Codex,
    Gemini,
    Opencode,
}

impl Cli {
    pub const ALL: [Self; 4] = [Self::Claude, Self::Codex, Self::Gemini, Self::Opencode];

    /// The program's name, looked up on `PATH`.
    pub fn program(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Codex => "codex",
            Self::Gemini => "gemini",
            Self::Opencode => "opencode",
        }
    }

    /// The models offered when the CLI has no live list (opencode has one: see
    /// [`Client::models`]). Any other name the CLI accepts works too: the CLI checks it.
    pub fn default_models(self) -> &'static [&'static str] {
        match self {
            Self::Claude => claude::MODELS,
            Self::Codex => codex::MODELS,
            Self::Gemini => gemini::MODELS,
            Self::Opencode => &[],
        }
    }

    /// The arguments of one turn: flags, the model (empty: the CLI's default) and the session
    /// to carry on. Never the prompt.
    fn args(self, model: &str, resume: Option<&str>) -> Vec<String> {
        match self {
            Self::Claude => claude::args(model, resume),
            Self::Codex => codex::args(model, resume),
            Self::Gemini => gemini::args(model, resume),
            Self::Opencode => opencode::args(model, resume),
        }
    }

    /// What the CLI's child needs in its environment beyond ours.
    fn env(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Self::Gemini => gemini::ENV,
            Self::Claude | Self::Codex | Self::Opencode => &[],
        }
    }

    fn format(self) -> Box<dyn Format> {
        match self {
            Self::Claude => Box::<claude::Stream>::default(),
            Self::Codex => Box::new(codex::Stream),
            Self::Gemini => Box::new(gemini::Stream),
            Self::Opencode => Box::new(opencode::Stream),
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
    /// Where turns run; `None`: wherever the assistant runs.
    workdir: Option<PathBuf>,
}

impl Client {
    /// A client that runs `program` (a name looked up on `PATH`, or a path) as `cli`, asking
    /// for `model` (empty: the CLI's default). `idle_timeout` is the longest silence allowed
    /// before the first output and between pieces of it.
    pub fn new(cli: Cli, program: impl Into<PathBuf>, model: &str, idle_timeout: Duration) -> Self {
        Self { cli, program: program.into(), model: model.to_owned(), idle_timeout, workdir: None }
    }

    /// Runs every turn in `dir` (made, 0700, when missing). The CLIs keep their sessions by
    /// the folder they ran in (claude finds a session only from there), and read what lies
    /// in it (a CLAUDE.md, a git checkout): one fixed private folder keeps resume working
    /// wherever the assistant was started, and keeps the user's files out of the turn.
    pub fn with_workdir(mut self, dir: PathBuf) -> Self {
        self.workdir = Some(dir);
        self
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

    /// Whether the CLI is installed: the program is an executable on `PATH` (or at its
    /// path). Claude and codex are also asked whether they are signed in (`claude auth
    /// status`, `codex login status`: local checks, no network, at most 5 s); an
    /// answer that is not a clear "signed out" counts as present, and a send that finds it
    /// signed out says so then. Gemini and opencode have no such check.
    pub async fn probe(&self) -> Result<(), LlmError> {
        let Some(path) = stt_os::find_on_path(&self.program) else {
            return Err(LlmError::NotInstalled { program: self.program().to_owned() });
        };
        let (args, signed_out): (&[&str], fn(&process::Output) -> bool) = match self.cli {
            Cli::Claude => (claude::AUTH_STATUS, claude::signed_out),
            Cli::Codex => (codex::AUTH_STATUS, codex::signed_out),
            Cli::Gemini | Cli::Opencode => return Ok(()),
        };
        let limit = AUTH_CHECK.min(self.idle_timeout);
        match process::output(&path, self.program(), args, limit).await {
            Ok(out) if signed_out(&out) => Err(LlmError::NotLoggedIn {
                program: self.program().to_owned(),
                why: format!("`{} {}` says not signed in", self.cli.program(), args.join(" ")),
            }),
            _ => Ok(()),
        }
    }

    /// The models to offer: opencode's live list (`opencode models`); for the others, the
    /// shipped [`Cli::default_models`]. A name not listed is still sent as it is.
    pub async fn models(&self) -> Result<Vec<String>, LlmError> {
        if self.cli != Cli::Opencode {
            return Ok(self.cli.default_models().iter().map(|&m| m.to_owned()).collect());
        }
        let args = opencode::MODELS_COMMAND;
        let out = process::output(&self.program, self.program(), args, self.idle_timeout).await?;
        if !out.status.success() {
            return Err(LlmError::Cli {
                program: self.program().to_owned(),
                why: exit_why(out.status, "", out.stderr.trim()),
                partial: String::new(),
            });
        }
        Ok(opencode::models(&out.stdout))
    }

    /// Runs one turn. With `request.stream`, `on_text` is called with each piece of text as
    /// the CLI prints it (a whole message, for CLIs that print no smaller pieces); otherwise
    /// once with the whole reply. `request.resume` carries on the CLI's session; the reply's
    /// `resume` is where to carry on from next. Dropping the future kills the CLI.
    pub async fn complete(
        &self,
        request: &Request<'_>,
        mut on_text: impl FnMut(&str),
    ) -> Result<Reply, LlmError> {
        let resume = request.resume.map(|r| r.0.as_str()).filter(|id| !id.is_empty());
        let stream = request.stream;
        let mut piece = |text: &str| {
            if stream {
                on_text(text);
            }
        };
        let mut result = self.turn(request.messages, resume, &mut piece).await;
        if let Err(e) = &result
            && resume.is_some()
            && let Some(sign) = resume_refused(e)
        {
            // Never the prompt or the reply: only what the CLI's refusal matched.
            tracing::warn!(
                cli = self.cli.program(),
                refusal = sign,
                "the CLI refused the session to resume; sending the turn again without it, \
                 with the conversation so far"
            );
            result = self.turn(request.messages, None, &mut piece).await;
        }
        let reply = result?;
        if !stream && !reply.content.is_empty() {
            on_text(&reply.content);
        }
        Ok(reply)
    }

    /// One process: the turn sent, its stream read, its end turned into a reply or an error.
    async fn turn<F: FnMut(&str)>(
        &self,
        messages: &[Message],
        resume: Option<&str>,
        on_text: &mut F,
    ) -> Result<Reply, LlmError> {
        let (args, input) = self.invocation(messages, resume)?;
        tracing::debug!(program = self.program(), ?args, "starting a CLI turn");
        let mut format = self.cli.format();
        if let Some(dir) = &self.workdir {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(|e| {
                LlmError::Cli {
                    program: self.program().to_owned(),
                    why: format!("cannot make its working folder {}: {e}", dir.display()),
                    partial: String::new(),
                }
            })?;
        }
        let finished = process::run_turn(
            &self.program,
            self.program(),
            self.workdir.as_deref(),
            &args,
            self.cli.env(),
            &input,
            self.idle_timeout,
            format.as_mut(),
            on_text,
        )
        .await?;
        tracing::debug!(program = self.program(), status = %finished.status, "the CLI turn ended");
        self.reply(finished, format.needs_final_event(), resume)
    }

    /// The argv and the stdin of one turn.
    fn invocation(
        &self,
        messages: &[Message],
        resume: Option<&str>,
    ) -> Result<(Vec<String>, String), LlmError> {
        let input = stdin_text(messages, resume.is_some()).ok_or_else(|| LlmError::Cli {
            program: self.program().to_owned(),
            why: "there is nothing to send: the conversation has no user message".to_owned(),
            partial: String::new(),
        })?;
        Ok((self.cli.args(&self.model, resume), input))
    }

    /// How the turn ended, as the caller sees it.
    fn reply(
        &self,
        finished: Finished,
        needs_final_event: bool,
        resumed: Option<&str>,
    ) -> Result<Reply, LlmError> {
        let Finished { turn, status, stderr } = finished;
        let program = self.program().to_owned();
        if !status.success() || turn.error.is_some() {
            let said = turn.error.as_deref().or(turn.note.as_deref()).unwrap_or_default();
            if let Some(why) = signed_out(said).or_else(|| signed_out(&stderr)) {
                return Err(LlmError::NotLoggedIn { program, why });
            }
            if status.code().is_none() && !turn.content.is_empty() {
                return Err(LlmError::Interrupted {
                    partial: turn.content,
                    why: format!("{} was {}", self.cli.program(), exit_words(status)),
                });
            }
            return Err(LlmError::Cli {
                program,
                why: exit_why(status, said, &stderr),
                partial: turn.content,
            });
        }
        if !turn.done && (needs_final_event || turn.content.is_empty()) {
            if turn.content.is_empty() {
                let why = exit_why(status, "it ended without an answer", &stderr);
                return Err(LlmError::Cli { program, why, partial: String::new() });
            }
            return Err(LlmError::Interrupted {
                partial: turn.content,
                why: format!("{} ended before its final event", self.cli.program()),
            });
        }
        // The id the stream named is the one to keep (a CLI may carry a resumed session on
        // under a new id, as claude has); a stream that names none carries on the one it
        // resumed.
        let session = turn
            .session
            .or_else(|| resumed.map(str::to_owned))
            .or_else(|| (self.cli == Cli::Gemini).then(|| gemini::LATEST.to_owned()));
        Ok(Reply {
            content: turn.content,
            tool_calls: Vec::new(),
            finish: Some(Finish::Stop),
            usage: turn.usage,
            resume: session.map(Resume),
        })
    }
}

/// What a turn writes to the CLI's stdin. Carrying on a session: the newest user message
/// alone. Starting one: the system prompt, the earlier turns as a transcript, then the newest
/// user message. `None` without a user message.
fn stdin_text(messages: &[Message], resuming: bool) -> Option<String> {
    let last = messages.iter().rposition(|m| m.role == Role::User)?;
    let question = messages[last].content.trim();
    if resuming {
        return Some(question.to_owned());
    }
    let mut text = String::new();
    for system in messages.iter().filter(|m| m.role == Role::System) {
        let system = system.content.trim();
        if !system.is_empty() {
            text.push_str(system);
            text.push_str("\n\n");
        }
    }
    let earlier = transcript(&messages[..last]);
    if !earlier.is_empty() {
        text.push_str("The conversation so far:\n\n");
        text.push_str(&earlier);
        text.push_str("The user now says:\n\n");
    }
    text.push_str(question);
    Some(text)
}

/// The user's and the assistant's messages as `User: …` / `Assistant: …` paragraphs, the
/// newest [`TRANSCRIPT_MESSAGES`] within [`TRANSCRIPT_BYTES`].
fn transcript(messages: &[Message]) -> String {
    let mut kept = Vec::new();
    let mut bytes = 0;
    let said = messages.iter().rev().filter(|m| !m.content.trim().is_empty());
    let mut left_out = false;
    for message in said {
        let who = match message.role {
            Role::User => "User",
            Role::Assistant => "Assistant",
            Role::System | Role::Tool => continue,
        };
        let paragraph = format!("{who}: {}\n\n", message.content.trim());
        if kept.len() == TRANSCRIPT_MESSAGES || bytes + paragraph.len() > TRANSCRIPT_BYTES {
            left_out = true;
            break;
        }
        bytes += paragraph.len();
        kept.push(paragraph);
    }
    let mut text = if left_out { "(earlier turns left out)\n\n".to_owned() } else { String::new() };
    text.extend(kept.into_iter().rev());
    text
}

/// What CLIs say when they are not signed in, lowercase.
const SIGNED_OUT: &[&str] = &[
    "not logged in",
    "not signed in",
    "please run /login",
    "please log in",
    "log in again",
    "sign in again",
    "invalid api key",
    "oauth token has expired",
    "missing bearer",
    "401 unauthorized",
    "please set an auth method",
    "providerautherror",
];

/// The line of `text` that says the CLI is not signed in, if one does (at most 200
/// characters of it).
fn signed_out(text: &str) -> Option<String> {
    let line = text.lines().find(|line| {
        let line = line.to_lowercase();
        SIGNED_OUT.iter().any(|sign| line.contains(sign))
    })?;
    Some(line.trim().chars().take(200).collect())
}

/// What CLIs say when a session to resume is gone, or the flag is unknown, lowercase.
const RESUME_REFUSED: &[&str] = &[
    "no conversation found",
    "no saved session",
    "no rollout found",
    "missing rollout",
    "session not found",
    "invalid session identifier",
    "unknown option",
    "unknown argument",
    "unexpected argument",
    "unrecognized option",
];

/// Whether `error` is a CLI refusing the session to resume before it said anything: the
/// sign it matched.
fn resume_refused(error: &LlmError) -> Option<&'static str> {
    let LlmError::Cli { why, partial, .. } = error else { return None };
    if !partial.is_empty() {
        return None;
    }
    let why = why.to_lowercase();
    RESUME_REFUSED.iter().copied().find(|sign| why.contains(sign))
}

/// "exit status 1", "killed by signal 9".
fn exit_words(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => "ended".to_owned(),
    }
}

/// A failure in the CLI's words: what its stream said, else the end of its stderr, with the
/// exit status.
fn exit_why(status: std::process::ExitStatus, said: &str, stderr: &str) -> String {
    let exit = exit_words(status);
    match (said.trim(), stderr.trim()) {
        ("", "") => exit,
        ("", stderr) => format!("{exit}: {stderr}"),
        (said, _) => format!("{said} ({exit})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "the orchid password is 7731";

    fn conversation() -> Vec<Message> {
        vec![
            Message::system("You are a voice assistant. Be brief."),
            Message::user("What is the capital of France?"),
            Message::assistant("Paris."),
            Message::tool("call-1", "tool output never goes to a CLI"),
            Message::user(SECRET),
        ]
    }

    #[test]
    fn the_prompt_goes_to_stdin_and_never_to_argv() {
        let messages = conversation();
        for cli in Cli::ALL {
            for (model, resume) in [("", None), ("some-model", None), ("m", Some("sess-42"))] {
                let client = Client::new(cli, cli.program(), model, Duration::from_secs(5));
                let (args, input) = client.invocation(&messages, resume).unwrap();
                let argv = args.join(" ");
                for words in [SECRET, "orchid", "capital", "voice assistant", "Paris"] {
                    assert!(!argv.contains(words), "{cli:?}: {words:?} in argv {argv}");
                }
                assert!(input.contains(SECRET), "{cli:?}: the question is on stdin");
                if !model.is_empty() {
                    assert!(args.iter().any(|a| a == model), "{cli:?}: model in {argv}");
                }
                if let Some(id) = resume {
                    assert!(args.iter().any(|a| a == id), "{cli:?}: session in {argv}");
                }
            }
        }
    }

    #[test]
    fn a_fresh_turn_sends_the_system_prompt_and_the_conversation_so_far() {
        let input = stdin_text(&conversation(), false).unwrap();
        assert_eq!(
            input,
            "You are a voice assistant. Be brief.\n\n\
             The conversation so far:\n\n\
             User: What is the capital of France?\n\n\
             Assistant: Paris.\n\n\
             The user now says:\n\n\
             the orchid password is 7731"
        );
        let first = stdin_text(&[Message::system("Be brief."), Message::user("Hi")], false);
        assert_eq!(first.as_deref(), Some("Be brief.\n\nHi"));
    }

    #[test]
    fn a_resumed_turn_sends_the_newest_question_only() {
        assert_eq!(stdin_text(&conversation(), true).as_deref(), Some(SECRET));
        assert_eq!(stdin_text(&[Message::system("only this")], true), None);
    }

    #[test]
    fn a_long_conversation_keeps_its_newest_turns() {
        let mut messages: Vec<Message> =
            (0..40).map(|i| Message::user(format!("question {i}"))).collect();
        messages.push(Message::user("last"));
        let text = transcript(&messages[..40]);
        assert!(text.starts_with("(earlier turns left out)"), "{text}");
        assert!(text.contains("question 39") && text.contains("question 16"), "{text}");
        assert!(!text.contains("question 15"), "{text}");
        let long = "x".repeat(20 * 1024);
        let text = transcript(&[Message::user(long.clone()), Message::user(long)]);
        assert_eq!(text.matches("User: ").count(), 1);
    }

    #[test]
    fn signed_out_words_are_found_in_each_clis_phrasing() {
        let cases = [
            ("Invalid API key · Please run /login", true),
            ("Not logged in · Please run /login", true),
            (
                "unexpected status 401 Unauthorized: Missing bearer or basic authentication in header",
                true,
            ),
            ("Please set an Auth method in your /home/u/.gemini/settings.json or …", true),
            ("ProviderAuthError: invalid x-api-key", true),
            ("No conversation found with session ID: 42", false),
            ("rate limited, try again later", false),
        ];
        for (text, expected) in cases {
            assert_eq!(signed_out(text).is_some(), expected, "{text}");
        }
        assert_eq!(signed_out("warming up\nNot logged in\n").as_deref(), Some("Not logged in"));
    }

    #[test]
    fn a_refused_session_is_told_from_other_failures() {
        let cli = |why: &str, partial: &str| LlmError::Cli {
            program: "claude".into(),
            why: why.into(),
            partial: partial.into(),
        };
        let refused = [
            "exit status 1: No conversation found with session ID: 9f",
            "exit status 1: Error: thread/resume: thread/resume failed: no rollout found for thread id 01",
            "exit status 1: ERROR: No saved session found with ID 01",
            "exit status 42: Error resuming session: Invalid session identifier \"x\".",
            "exit status 1: Error: Session not found",
            "exit status 2: error: unexpected argument '--resume' found",
        ];
        for why in refused {
            assert!(resume_refused(&cli(why, "")).is_some(), "{why}");
        }
        assert!(resume_refused(&cli(refused[0], "half an answer")).is_none());
        assert!(resume_refused(&cli("exit status 1: out of quota", "")).is_none());
        assert!(resume_refused(&LlmError::NotInstalled { program: "claude".into() }).is_none());
    }

    #[test]
    fn every_cli_offers_models() {
        for cli in [Cli::Claude, Cli::Codex, Cli::Gemini] {
            assert!(!cli.default_models().is_empty(), "{cli:?}");
        }
        assert_eq!(Cli::Claude.default_models(), ["sonnet", "opus", "haiku"]);
    }
}
