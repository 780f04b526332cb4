//! The chat session, kept across restarts in `$XDG_STATE_HOME/stt/chat-session.json` (0600
//! in a 0700 directory, written whole and renamed, so a crash never leaves half a file).
//!
//! It holds what a conversation needs to go on: the provider and model it runs on, the
//! provider's resume handle (a CLI's session id), the conversation sent with each turn (the
//! compaction summary and the messages since, at most [`MAX_MESSAGES`] and [`MAX_BYTES`] on
//! disk), the turns a person sees (at most [`MAX_TURNS`]), the system prompt set with
//! `/system`, and the tokens the turns cost. A session untouched for longer than its time to
//! live is gone: the next turn starts afresh. A file that does not parse is moved aside to
//! `chat-session.json.broken` and a fresh session starts, with a note.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use stt_llm::{Message, Role};

use crate::llm::Chat;

/// The file's name in the state directory.
pub const FILE: &str = "chat-session.json";
/// Messages kept on disk (the summary aside); the oldest go first.
pub const MAX_MESSAGES: usize = 24;
/// Bytes of message text kept on disk.
pub const MAX_BYTES: usize = 32 * 1024;
/// Turns kept for display.
pub const MAX_TURNS: usize = 20;
const VERSION: u32 = 1;

/// Tokens a turn (or a session) cost, as the provider counts them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    pub prompt: u64,
    pub completion: u64,
    /// Prompt tokens served from the provider's cache.
    pub cached: u64,
}

impl Tokens {
    pub fn of(usage: stt_llm::Usage) -> Self {
        Self {
            prompt: usage.prompt_tokens.into(),
            completion: usage.completion_tokens.into(),
            cached: usage.cached_tokens.into(),
        }
    }

    pub fn add(&mut self, other: Self) {
        self.prompt += other.prompt;
        self.completion += other.completion;
        self.cached += other.cached;
    }
}

/// One message of the conversation sent to the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stored {
    /// `user` or `assistant`.
    pub role: String,
    pub content: String,
}

/// A turn as a person saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    pub q: String,
    pub a: String,
    /// From sending to the end of the answer.
    pub ms: u64,
    pub provider: String,
    /// Stopped by a person, or cut off, before the answer was finished.
    #[serde(default)]
    pub stopped: bool,
    #[serde(default)]
    pub tokens: Option<Tokens>,
}

/// The whole file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    pub v: u32,
    /// The provider the conversation runs on; `None` until the first turn.
    pub provider: Option<String>,
    /// The model asked for; empty: the provider's.
    #[serde(default)]
    pub model: String,
    /// The provider's handle on its own copy of the conversation (CLI providers).
    #[serde(default)]
    pub handle: Option<String>,
    /// The system prompt `/system` set; `None`: the config's.
    #[serde(default)]
    pub system: Option<String>,
    /// What compaction summarised of older turns.
    #[serde(default)]
    pub summary: Option<String>,
    #[serde(default)]
    pub messages: Vec<Stored>,
    #[serde(default)]
    pub turns: Vec<Turn>,
    /// Tokens of every turn of the session.
    #[serde(default)]
    pub tokens: Tokens,
    /// Seconds since the Unix epoch.
    pub created: u64,
    pub touched: u64,
}

impl Session {
    /// An empty session, as of `now` (seconds since the epoch).
    pub fn new(now: u64) -> Self {
        Self {
            v: VERSION,
            provider: None,
            model: String::new(),
            handle: None,
            system: None,
            summary: None,
            messages: Vec::new(),
            turns: Vec::new(),
            tokens: Tokens::default(),
            created: now,
            touched: now,
        }
    }

    /// Whether it has been left alone longer than `ttl` at `now`.
    pub fn expired(&self, now: u64, ttl: Duration) -> bool {
        now.saturating_sub(self.touched) > ttl.as_secs()
    }

    /// The conversation to send with the next turn.
    pub fn chat(&self) -> Chat {
        let turns = self
            .messages
            .iter()
            .map(|m| match m.role.as_str() {
                "assistant" => Message::assistant(&m.content),
                _ => Message::user(&m.content),
            })
            .collect();
        Chat { summary: self.summary.clone(), turns }
    }

    /// Keeps `chat` as the conversation, within the caps on disk.
    pub fn set_chat(&mut self, chat: &Chat) {
        self.summary.clone_from(&chat.summary);
        self.messages = chat
            .turns
            .iter()
            .filter(|m| matches!(m.role, Role::User | Role::Assistant))
            .map(|m| Stored {
                role: if m.role == Role::Assistant { "assistant" } else { "user" }.to_owned(),
                content: m.content.clone(),
            })
            .collect();
        cap_messages(&mut self.messages);
    }

    /// Adds a finished turn for display (and its tokens to the session's).
    pub fn push_turn(&mut self, turn: Turn) {
        if let Some(tokens) = turn.tokens {
            self.tokens.add(tokens);
        }
        self.turns.push(turn);
        let extra = self.turns.len().saturating_sub(MAX_TURNS);
        self.turns.drain(..extra);
    }

    /// The conversation moves to another provider: it cannot read the old one's handle or
    /// be trusted with context it was not part of, so both go; what a person saw stays.
    pub fn switch_provider(&mut self, provider: &str, model: &str) {
        self.provider = Some(provider.to_owned());
        model.clone_into(&mut self.model);
        self.handle = None;
        self.summary = None;
        self.messages.clear();
    }
}

/// Drops the oldest messages (a user message with the answer after it) until at most
/// [`MAX_MESSAGES`] and [`MAX_BYTES`] remain.
fn cap_messages(messages: &mut Vec<Stored>) {
    let bytes = |m: &[Stored]| m.iter().map(|s| s.content.len()).sum::<usize>();
    while !messages.is_empty() && (messages.len() > MAX_MESSAGES || bytes(messages) > MAX_BYTES) {
        let pair = if messages.len() > 1 && messages[1].role == "assistant" { 2 } else { 1 };
        messages.drain(..pair);
    }
}

/// The session at `path` as of `now`, and a note for people when it could not be kept (it
/// expired, or the file was damaged and moved aside).
pub fn load(path: &Path, now: u64, ttl: Duration) -> (Session, Option<String>) {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (Session::new(now), None),
        Err(e) => {
            let note = format!("could not read the chat session in {}: {e}", path.display());
            return (Session::new(now), Some(note));
        }
    };
    match serde_json::from_slice::<Session>(&bytes) {
        Ok(session) if session.expired(now, ttl) => {
            let hours = ttl.as_secs() / 3600;
            (
                Session::new(now),
                Some(format!("the last conversation ended over {hours} h ago; a new one starts")),
            )
        }
        Ok(session) => (session, None),
        Err(e) => {
            let aside = broken_path(path);
            let moved = std::fs::rename(path, &aside);
            let note = match moved {
                Ok(()) => format!(
                    "the chat session file was damaged ({e}); it is kept as {} and a new \
                     conversation starts",
                    aside.display()
                ),
                Err(m) => format!(
                    "the chat session file {} was damaged ({e}) and could not be moved aside \
                     ({m}); a new conversation starts",
                    path.display()
                ),
            };
            (Session::new(now), Some(note))
        }
    }
}

fn broken_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(".broken");
    path.with_file_name(name)
}

/// Saves `session` at `path`, replacing the file atomically.
pub fn save(path: &Path, session: &Session) -> std::io::Result<()> {
    let json = serde_json::to_vec_pretty(session).map_err(std::io::Error::other)?;
    crate::names::write_private(path, &json)
}

/// Removes the session file (`/new`): nothing of the conversation stays on disk.
pub fn remove(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    const TTL: Duration = Duration::from_secs(6 * 3600);

    fn turn(q: &str) -> Turn {
        Turn {
            q: q.into(),
            a: "a".into(),
            ms: 5,
            provider: "llamacpp".into(),
            stopped: false,
            tokens: Some(Tokens { prompt: 10, completion: 2, cached: 4 }),
        }
    }

    #[test]
    fn a_session_survives_a_round_trip_privately() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stt").join(FILE);
        let (mut session, note) = load(&path, 1000, TTL);
        assert_eq!((session.clone(), note), (Session::new(1000), None));
        session.provider = Some("claude".into());
        session.handle = Some("sess-1".into());
        session.set_chat(&Chat {
            summary: Some("earlier".into()),
            turns: vec![Message::user("hi"), Message::assistant("hello")],
        });
        session.push_turn(turn("hi"));
        save(&path, &session).unwrap();
        let (back, note) = load(&path, 2000, TTL);
        assert_eq!(note, None);
        assert_eq!(back, session);
        assert_eq!(back.chat().turns, [Message::user("hi"), Message::assistant("hello")]);
        assert_eq!(back.tokens, Tokens { prompt: 10, completion: 2, cached: 4 });
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn an_old_session_is_gone_and_a_damaged_one_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        save(&path, &Session::new(0)).unwrap();
        let (session, note) = load(&path, TTL.as_secs() + 1, TTL);
        assert_eq!(session, Session::new(TTL.as_secs() + 1));
        assert!(note.unwrap().contains("6 h"));

        std::fs::write(&path, b"{\"v\":1,").unwrap();
        let (session, note) = load(&path, 5, TTL);
        assert_eq!(session, Session::new(5));
        let note = note.unwrap();
        assert!(note.contains("chat-session.json.broken"), "{note}");
        assert_eq!(
            std::fs::read(dir.path().join("chat-session.json.broken")).unwrap(),
            b"{\"v\":1,"
        );
        assert!(!path.exists());
    }

    #[test]
    fn messages_are_capped_oldest_pair_first_and_turns_at_twenty() {
        let mut session = Session::new(0);
        let turns: Vec<Message> = (0..20)
            .flat_map(|i| [Message::user(format!("q{i}")), Message::assistant(format!("a{i}"))])
            .collect();
        session.set_chat(&Chat { summary: Some("s".into()), turns });
        assert_eq!(session.messages.len(), MAX_MESSAGES);
        assert_eq!(session.messages[0].content, "q8");
        assert_eq!(session.summary.as_deref(), Some("s"));

        let big = "x".repeat(10 * 1024);
        let turns = (0..3).flat_map(|_| [Message::user(&big), Message::assistant(&big)]).collect();
        session.set_chat(&Chat { summary: None, turns });
        assert_eq!(session.messages.len(), 2, "three pairs of 20 KB: one fits in 32 KB");

        for i in 0..25 {
            session.push_turn(turn(&format!("t{i}")));
        }
        assert_eq!(session.turns.len(), MAX_TURNS);
        assert_eq!(session.turns[0].q, "t5");
        assert_eq!(session.tokens.prompt, 250, "every turn's tokens count");
    }

    #[test]
    fn switching_provider_keeps_what_was_seen_and_forgets_the_context() {
        let mut session = Session::new(0);
        session.provider = Some("claude".into());
        session.handle = Some("h".into());
        session.set_chat(&Chat { summary: Some("s".into()), turns: vec![Message::user("q")] });
        session.push_turn(turn("q"));
        session.switch_provider("ollama", "qwen2.5");
        assert_eq!(session.provider.as_deref(), Some("ollama"));
        assert_eq!(session.model, "qwen2.5");
        assert_eq!((session.handle.clone(), session.summary.clone()), (None, None));
        assert!(session.messages.is_empty());
        assert_eq!(session.turns.len(), 1);
    }
}
