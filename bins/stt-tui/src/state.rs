//! Everything the screen shows, as plain data. [`update`](crate::update::update) is the
//! only code that changes it; [`view`](crate::view::view) only reads it.

use std::collections::VecDeque;

use ratatui::layout::Rect;
use stt_proto::{ChatRole, ChatSession, Mode, SideEffect, TranscriptPartial};

/// The `[tui]` settings the screen follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Capture the mouse: the wheel scrolls the pane under the pointer and a click focuses
    /// it (Shift-drag still selects text in most terminals).
    pub mouse: bool,
    /// Show each transcript's audio time (since the daemon's input began).
    pub show_timestamps: bool,
    /// Lines kept per pane; older ones are dropped.
    pub max_lines: usize,
    /// `[triage].enabled`: the triage panel may be shown (hidden, and its key idle, when
    /// off).
    pub triage: bool,
}

impl From<&stt_config::TuiConfig> for Options {
    fn from(tui: &stt_config::TuiConfig) -> Self {
        Self {
            mouse: tui.mouse,
            show_timestamps: tui.show_timestamps,
            max_lines: usize::try_from(tui.max_lines).unwrap_or(usize::MAX).max(1),
            triage: false,
        }
    }
}

impl Options {
    /// The options `config` gives: `[tui]`, and whether `[triage]` is on.
    pub fn of(config: &stt_config::Config) -> Self {
        Self { triage: config.triage.enabled, ..Self::from(&config.tui) }
    }
}

impl Default for Options {
    /// The config file's defaults.
    fn default() -> Self {
        Self::from(&stt_config::TuiConfig::default())
    }
}

/// The subscription to the assistant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Connection {
    /// Not connected yet since start.
    Connecting,
    /// Subscribed as a viewer.
    Up {
        /// The assistant's name and version, from its hello.
        peer: String,
    },
    /// Lost (or never made); the subscription retries on its own.
    Down {
        /// Why, as the bus worded it.
        why: String,
    },
}

/// What the last `status` reply said about the LLM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Llm {
    /// `[llm].enabled`.
    pub enabled: bool,
    /// The chat completions URL.
    pub endpoint: String,
    /// Whether the endpoint answered its last probe; `None` before the first probe.
    pub reachable: Option<bool>,
}

/// One utterance in the transcripts pane.
#[derive(Debug, Clone, PartialEq)]
pub struct TranscriptLine {
    /// The segment's id.
    pub seg_id: u64,
    /// Audio time of its start, in seconds since the daemon's input began.
    pub start: f64,
    /// Language code (`en`).
    pub language: String,
    /// The speaker's name as the assistant resolved it (shown bold green); `None` when no
    /// one knows who spoke (shown as `Unknown`, bold red).
    pub speaker: Option<String>,
    /// Seconds of speech.
    pub duration: f64,
    /// What was said.
    pub text: String,
}

/// One entry of the conversation / command output pane.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// A chat line; a streamed reply grows in place under its `id`.
    Chat {
        /// The assistant's id for the message.
        id: u64,
        /// Who it belongs to.
        role: ChatRole,
        /// The speaker's name for a user turn; `None` when unknown.
        speaker: Option<String>,
        /// The text so far.
        text: String,
        /// Whether more pieces are still to come.
        streaming: bool,
        /// The reply was stopped (`chat_stop`) or cut off before it was finished.
        stopped: bool,
    },
    /// A command started executing.
    Command {
        /// The command buffer that was executed.
        text: String,
        /// Whether it was edited by hand.
        edited: bool,
    },
    /// The model asked for a tool.
    ToolCall {
        /// The call's id, matching its result and any confirm/deny.
        call_id: String,
        /// The tool's name.
        tool: String,
        /// The arguments as compact JSON.
        args: String,
        /// What running it can do.
        side_effect: SideEffect,
        /// Whether policy required a person to allow it.
        requires_confirmation: bool,
    },
    /// A tool ran or was refused.
    ToolResult {
        /// The tool's name.
        tool: String,
        /// Whether it succeeded.
        ok: bool,
        /// Its output, or why it failed.
        result: String,
        /// How long it took.
        latency_ms: u64,
    },
    /// An error from the assistant (an event, or the reply refusing one of our requests), or
    /// a request that could not be sent.
    Error {
        /// The wire code (`not_ready`), or `None` when the request never got an answer.
        code: Option<String>,
        /// The message, for a person.
        message: String,
    },
    /// A line from the TUI itself (reconnected, cleared, a key that does nothing now).
    Notice(String),
}

/// A tool call waiting for `y` (confirm) or `n` (deny).
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    /// The call's id.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// The arguments as compact JSON.
    pub args: String,
    /// What running it can do.
    pub side_effect: SideEffect,
    /// The outside content read before it (a page, a file), when that is why it waits.
    pub outside: Option<String>,
}

/// A line of text being edited, with a cursor: the command editor's and the chat line's.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Editor {
    chars: Vec<char>,
    cursor: usize,
}

impl Editor {
    /// Starts editing `text` with the cursor at its end.
    pub fn new(text: &str) -> Self {
        let chars: Vec<char> = text.chars().collect();
        let cursor = chars.len();
        Self { chars, cursor }
    }

    /// The text.
    pub fn text(&self) -> String {
        self.chars.iter().collect()
    }

    /// The characters.
    pub fn chars(&self) -> &[char] {
        &self.chars
    }

    /// The cursor, as a character index (`0..=len`).
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// Inserts `c` before the cursor.
    pub fn insert(&mut self, c: char) {
        self.chars.insert(self.cursor, c);
        self.cursor += 1;
    }

    /// Deletes the character before the cursor.
    pub fn backspace(&mut self) {
        if self.cursor > 0 {
            self.cursor -= 1;
            self.chars.remove(self.cursor);
        }
    }

    /// Deletes the character under the cursor.
    pub fn delete(&mut self) {
        if self.cursor < self.chars.len() {
            self.chars.remove(self.cursor);
        }
    }

    /// Moves the cursor one character left.
    pub fn left(&mut self) {
        self.cursor = self.cursor.saturating_sub(1);
    }

    /// Moves the cursor one character right.
    pub fn right(&mut self) {
        self.cursor = (self.cursor + 1).min(self.chars.len());
    }

    /// Moves the cursor to the start.
    pub fn home(&mut self) {
        self.cursor = 0;
    }

    /// Moves the cursor to the end.
    pub fn end(&mut self) {
        self.cursor = self.chars.len();
    }

    /// Deletes everything before the cursor.
    pub fn kill_to_start(&mut self) {
        self.chars.drain(..self.cursor);
        self.cursor = 0;
    }

    /// Deletes everything from the cursor on.
    pub fn kill_to_end(&mut self) {
        self.chars.truncate(self.cursor);
    }
}

/// What keys mean right now.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Input {
    /// The key bindings of the footer.
    #[default]
    Normal,
    /// Keys edit the command buffer; Enter sends it, Esc abandons it.
    Editing(Editor),
    /// Keys edit the chat line; Enter sends it (or stops the reply that streams) and
    /// leaves the line open for the next, Esc closes it.
    Chatting(Editor),
    /// `c` was pressed: `y` clears, `n` or Esc does not.
    ConfirmClear,
}

impl Input {
    /// The line being edited, if keys edit one.
    pub fn editor(&self) -> Option<&Editor> {
        match self {
            Self::Editing(editor) | Self::Chatting(editor) => Some(editor),
            Self::Normal | Self::ConfirmClear => None,
        }
    }

    /// The line being edited, to change.
    pub fn editor_mut(&mut self) -> Option<&mut Editor> {
        match self {
            Self::Editing(editor) | Self::Chatting(editor) => Some(editor),
            Self::Normal | Self::ConfirmClear => None,
        }
    }
}

/// A scrollable pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pane {
    /// The transcripts pane.
    Transcripts,
    /// The conversation / command output pane.
    #[default]
    Conversation,
}

/// Where a pane is scrolled to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Scroll {
    /// The first row shown; `None` sticks to the bottom, following new lines.
    pub top: Option<usize>,
}

impl Scroll {
    /// Whether the pane follows new lines.
    pub fn sticks(self) -> bool {
        self.top.is_none()
    }
}

/// The whole screen's data.
#[derive(Debug, Clone, PartialEq)]
pub struct State {
    /// The `[tui]` settings.
    pub options: Options,
    /// The control socket, for the "connecting" line.
    pub socket: String,
    /// The terminal's area.
    pub area: Rect,
    /// The subscription.
    pub connection: Connection,
    /// The assistant's mode.
    pub mode: Mode,
    /// Whether STT is healthy; `None` until the assistant says.
    pub stt_healthy: Option<bool>,
    /// Why STT is unhealthy (from `status`); empty when unknown or healthy.
    pub stt_detail: String,
    /// The LLM, once a `status` reply said.
    pub llm: Option<Llm>,
    /// The chat session (provider, model, endpoint, tokens), from `chat_session` events and
    /// `status`; `None` until one said (or from an assistant that predates it).
    pub session: Option<ChatSession>,
    /// Viewers attached, from the last `status`.
    pub viewers: Option<u32>,
    /// Whether replies are spoken (`status.voice`), from the last `status`.
    pub voice: bool,
    /// The daemon's transcription backlog (`[seg N]`).
    pub backlog: u32,
    /// Where the daemon sends audio to be transcribed (`host:port`); `None`: this machine.
    pub stt_remote: Option<String>,
    /// The wake phrase the daemon listens for; `None`: wake is off.
    pub wake: Option<String>,
    /// The last wake phrase heard, and its score.
    pub last_wake: Option<(String, f32)>,
    /// Inference jobs waiting (`[inf N]`).
    pub inference_queue: u32,
    /// Whether an inference job runs (`· busy`).
    pub inference_busy: bool,
    /// The command buffer.
    pub buffer: String,
    /// Whether the buffer was edited by hand (and so is frozen).
    pub buffer_edited: bool,
    /// The segment whose speech is open, if any.
    pub speaking: Option<u64>,
    /// The words of a segment still being transcribed (the last `transcript_partial`), shown
    /// on an open line under the transcripts until its final comes.
    pub live: Option<TranscriptPartial>,
    /// The transcripts pane, oldest first.
    pub transcripts: VecDeque<TranscriptLine>,
    /// The conversation / command output pane, oldest first.
    pub entries: VecDeque<Entry>,
    /// Tool calls waiting for a person, oldest first.
    pub pending: Vec<Pending>,
    /// What keys mean now.
    pub input: Input,
    /// The pane that scroll keys move.
    pub focus: Pane,
    /// The transcripts pane's scroll.
    pub transcripts_scroll: Scroll,
    /// The conversation pane's scroll.
    pub conversation_scroll: Scroll,
    /// Ticks seen, for periodic refreshes.
    pub ticks: u64,
    /// The last `triage` event: its signals and, once the model answered, its content. Kept
    /// across modes; `clear` empties it.
    pub triage: Option<stt_proto::Triage>,
    /// Whether the triage panel is shown (with `options.triage`; its key toggles it).
    pub triage_shown: bool,
}

impl State {
    /// The screen before anything happened, for a TUI connecting to `socket`.
    pub fn new(socket: impl Into<String>, options: Options) -> Self {
        Self {
            options,
            socket: socket.into(),
            area: Rect::default(),
            connection: Connection::Connecting,
            mode: Mode::Idle,
            stt_healthy: None,
            stt_detail: String::new(),
            llm: None,
            session: None,
            viewers: None,
            voice: false,
            backlog: 0,
            stt_remote: None,
            wake: None,
            last_wake: None,
            inference_queue: 0,
            inference_busy: false,
            buffer: String::new(),
            buffer_edited: false,
            speaking: None,
            live: None,
            transcripts: VecDeque::new(),
            entries: VecDeque::new(),
            pending: Vec::new(),
            input: Input::Normal,
            focus: Pane::Conversation,
            transcripts_scroll: Scroll::default(),
            conversation_scroll: Scroll::default(),
            ticks: 0,
            triage: None,
            triage_shown: true,
        }
    }

    /// Whether the triage panel is on screen.
    pub fn shows_triage(&self) -> bool {
        self.options.triage && self.triage_shown
    }

    /// Whether the subscription is up.
    pub fn is_up(&self) -> bool {
        matches!(self.connection, Connection::Up { .. })
    }

    /// Whether a reply is streaming in: a chat message whose last piece has not come.
    pub fn reply_streaming(&self) -> bool {
        self.entries.iter().any(|entry| matches!(entry, Entry::Chat { streaming: true, .. }))
    }

    /// Whether Enter stops the streaming reply (`chat_stop`) rather than send anything: on
    /// the chat line whenever a reply streams, and on the screen unless a command is armed
    /// or running (where Enter executes it).
    pub fn enter_stops_reply(&self) -> bool {
        let line = matches!(self.input, Input::Chatting(_));
        let command = matches!(self.mode, Mode::CommandArmed | Mode::Executing);
        self.reply_streaming() && (line || !command)
    }

    /// Ends every streaming reply where it is: nothing more of it will come.
    pub fn end_streaming(&mut self) {
        for entry in &mut self.entries {
            if let Entry::Chat { streaming, .. } = entry {
                *streaming = false;
            }
        }
    }

    /// Adds an entry to the conversation pane, dropping the oldest past the limit.
    pub fn push_entry(&mut self, entry: Entry) {
        if self.entries.len() >= self.options.max_lines {
            self.entries.pop_front();
        }
        self.entries.push_back(entry);
    }

    /// Adds a line to the transcripts pane, dropping the oldest past the limit.
    pub fn push_transcript(&mut self, line: TranscriptLine) {
        if self.transcripts.len() >= self.options.max_lines {
            self.transcripts.pop_front();
        }
        self.transcripts.push_back(line);
    }

    /// A pane's scroll.
    pub fn scroll(&self, pane: Pane) -> Scroll {
        match pane {
            Pane::Transcripts => self.transcripts_scroll,
            Pane::Conversation => self.conversation_scroll,
        }
    }

    /// A pane's scroll, to change.
    pub fn scroll_mut(&mut self, pane: Pane) -> &mut Scroll {
        match pane {
            Pane::Transcripts => &mut self.transcripts_scroll,
            Pane::Conversation => &mut self.conversation_scroll,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_editor_edits_at_its_cursor() {
        let mut e = Editor::new("what time");
        assert_eq!(e.cursor(), 9);
        e.home();
        e.insert('>');
        e.end();
        e.backspace();
        e.left();
        e.left();
        e.delete();
        assert_eq!(e.text(), ">what tm");
        assert_eq!(e.cursor(), 7);
        e.kill_to_end();
        assert_eq!(e.text(), ">what t");
        e.left();
        e.kill_to_start();
        assert_eq!((e.text().as_str(), e.cursor()), ("t", 0));
        e.backspace();
        e.left();
        assert_eq!((e.text().as_str(), e.cursor()), ("t", 0));
        e.right();
        e.right();
        assert_eq!(e.cursor(), 1);
    }
}
