//! The message types, grouped by direction: [`DaemonEvent`] (daemon → subscribers),
//! [`Request`] (client → assistant) and [`AssistantEvent`] (assistant → clients).
//!
//! Optional fields are always written (as `null`) so the shape of a line never depends on
//! its values, and are read leniently (absent = `null`), so older peers can add them later.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ErrorMsg;

/// A type that travels as one tagged JSON object per line.
pub trait Message: Serialize + serde::de::DeserializeOwned {
    /// Every `type` tag this message family knows, for telling `unknown_type` apart from
    /// `bad_message`.
    const TYPES: &'static [&'static str];

    /// This message's `type` tag.
    fn kind(&self) -> &'static str;
}

/// Declares a message family once: each variant with its wire `type`, from which the enum
/// (tagged by `type`), [`Message::TYPES`] and `kind()` are all made, so a new message is
/// one line here and cannot be missing from either list.
macro_rules! family {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident
                $( ( $ty:ty ) )?
                $( { $( $(#[$fmeta:meta])* $field:ident : $fty:ty ),* $(,)? } )?
                = $wire:literal
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "type")]
        pub enum $name {
            $(
                $(#[$vmeta])*
                #[serde(rename = $wire)]
                $variant $( ($ty) )? $( { $( $(#[$fmeta])* $field: $fty ),* } )?,
            )*
        }

        impl $name {
            /// The wire `type` of this message.
            pub fn kind(&self) -> &'static str {
                match self {
                    $( Self::$variant { .. } => $wire, )*
                }
            }
        }

        impl Message for $name {
            const TYPES: &'static [&'static str] = &[$($wire),*];

            fn kind(&self) -> &'static str {
                $name::kind(self)
            }
        }
    };
}

/// Sent first on every connection, by both ends of the control socket and by the daemon.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub protocol_version: u32,
    /// Who is speaking: `stt-daemon`, `stt-assistant`, `stt-ctl`, `stt-tui`, ….
    pub peer: String,
    /// The peer's package version, for messages.
    pub version: String,
}

impl Hello {
    /// A hello for this build of `peer`.
    pub fn new(peer: &str) -> Self {
        Self {
            protocol_version: crate::PROTOCOL_VERSION,
            peer: peer.to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }

    /// Checks the other side's hello against ours; the error says what to do.
    pub fn check(&self, ours: &str) -> Result<(), ErrorMsg> {
        let theirs = self.protocol_version;
        let mine = crate::PROTOCOL_VERSION;
        if theirs == mine {
            return Ok(());
        }
        let (older, newer) = if theirs < mine { (&*self.peer, ours) } else { (ours, &*self.peer) };
        Err(ErrorMsg::new(
            crate::ErrorCode::VersionMismatch,
            format!(
                "{peer} speaks protocol v{theirs}, this {ours} speaks v{mine}: {older} is older \
                 than {newer}; install both from the same build and restart them \
                 (`stt-daemon up` restarts the daemon and the assistant)",
                peer = self.peer,
            ),
        ))
    }
}

// ---------------------------------------------------------------------------------------
// Pieces shared by several messages.

/// Speech opened at `start` seconds of audio time (seconds since the input began).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpeechStart {
    pub seg_id: u64,
    pub start: f64,
}

/// Speech closed at `end` seconds of audio time; the segment is queued for transcription.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpeechStop {
    pub seg_id: u64,
    pub end: f64,
}

/// How sure speaker identification is about a transcript's speaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpeakerStatus {
    Matched,
    Uncertain,
    /// Speaker identification is off or the segment was too short to embed.
    #[default]
    None,
    /// Not identified; also what a status this build does not know (from a newer daemon)
    /// reads as.
    #[serde(other)]
    Unknown,
}

/// The words of one segment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transcript {
    pub seg_id: u64,
    pub text: String,
    /// Language code whisper used or detected (`en`, `de`, …).
    pub language: String,
    /// Audio time in seconds.
    pub start: f64,
    pub end: f64,
    /// `end - start`, in seconds.
    pub duration: f64,
    #[serde(default)]
    pub speaker_id: Option<String>,
    #[serde(default)]
    pub speaker_status: SpeakerStatus,
    /// The speaker's name when the speaker is named (from the assistant: matched and named by
    /// the roster or a `speaker_name`); `None` when no one knows who spoke.
    #[serde(default)]
    pub speaker: Option<String>,
    #[serde(default)]
    pub speaker_score: Option<f32>,
}

/// The words of a segment still being spoken, from one pass of the live transcriber: the
/// first `committed_len` characters are words two passes in a row agreed on (they stay, in
/// later partials, unless the final transcript says otherwise); the rest may still change.
/// The segment's `transcript` replaces all of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TranscriptPartial {
    pub seg_id: u64,
    pub text: String,
    /// Characters (Unicode scalar values) of `text` that are committed.
    pub committed_len: usize,
}

impl TranscriptPartial {
    /// The committed words and the tentative tail, split where `committed_len` says (a
    /// length past the end or inside a character is taken as the whole text).
    pub fn split(&self) -> (&str, &str) {
        let at =
            self.text.char_indices().nth(self.committed_len).map_or(self.text.len(), |(i, _)| i);
        self.text.split_at(at)
    }
}

/// How loud the microphone is while a segment is open: one figure per [`Levels::FRAME_MS`]
/// of audio, in dB below full scale, the last frame ending `end` seconds into the stream.
/// About every 100 ms. The assistant holds them against what its voice was playing then, to
/// tell a person speaking over the voice from the voice heard back. Not relayed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Levels {
    pub seg_id: u64,
    pub end: f64,
    pub db: Vec<f32>,
}

impl Levels {
    /// The audio each figure covers, in milliseconds.
    pub const FRAME_MS: u32 = 20;
}

/// All of a segment's events have been published.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SegmentDone {
    pub seg_id: u64,
}

/// Whether a speaker in the roster is still provisional.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpeakerState {
    Provisional,
    Confirmed,
    /// A state this build does not know (from a newer daemon); shown as it is.
    #[serde(other)]
    Unknown,
}

/// One entry of the speaker roster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Speaker {
    pub id: String,
    #[serde(default)]
    pub name: Option<String>,
    pub status: SpeakerState,
    /// Seconds of speech attributed so far.
    pub cumulative_s: f64,
    #[serde(default)]
    pub sample_path: Option<String>,
    /// RFC 3339 time of creation.
    pub created_at: String,
}

/// The whole speaker roster, sent on mint, confirm, rename and prune (not on every adapt).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Speakers {
    pub speakers: Vec<Speaker>,
}

// ---------------------------------------------------------------------------------------
// Daemon → subscribers.

/// What the audio input is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AudioState {
    /// Audio is flowing.
    Capturing,
    /// The device failed or vanished; the daemon is retrying with backoff.
    Retrying,
    /// A file or stdin input reached its end.
    Ended,
    /// No input is open.
    Idle,
    /// A state this build does not know (from a newer daemon, `muted` say).
    #[serde(other)]
    Unknown,
}

/// Sent by the daemon every second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DaemonHeartbeat {
    pub seq: u64,
    pub uptime_s: f64,
    /// Closed segments waiting for transcription.
    pub backlog: u32,
    pub stt_healthy: bool,
    pub audio: AudioState,
    /// The whisper model's file name (`remote HOST (fallback FILE)` with a remote server).
    pub model: String,
    /// Where finals are sent to be transcribed (`host:port`), or `null`: this machine.
    #[serde(default)]
    pub remote: Option<String>,
    /// The wake phrase listened for (`[wake]`), or `null` while wake is off.
    #[serde(default)]
    pub wake: Option<String>,
}

/// The wake phrase was heard (`[wake]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Wake {
    /// The phrase heard: a wake model's name (`hey_jarvis`), or `enrolled` for the user's own.
    pub phrase: String,
    /// How sure the detector is, from 0 to 1 (it fired at its threshold or above).
    pub score: f32,
    /// Seconds into the stream where the phrase ended.
    pub at: f64,
}

family! {
    /// Everything the daemon publishes.
    pub enum DaemonEvent {
        Hello(Hello) = "hello",
        SpeechStart(SpeechStart) = "speech_start",
        SpeechStop(SpeechStop) = "speech_stop",
        TranscriptPartial(TranscriptPartial) = "transcript_partial",
        Transcript(Transcript) = "transcript",
        SegmentDone(SegmentDone) = "segment_done",
        Levels(Levels) = "levels",
        Speakers(Speakers) = "speakers",
        Wake(Wake) = "wake",
        Heartbeat(DaemonHeartbeat) = "heartbeat",
        Error(ErrorMsg) = "error",
    }
}

impl DaemonEvent {
    /// The segment this event is about, for the events that are about one (not
    /// [`Levels`]: the microphone's loudness is no part of what the segment said).
    pub fn seg_id(&self) -> Option<u64> {
        match self {
            Self::SpeechStart(e) => Some(e.seg_id),
            Self::SpeechStop(e) => Some(e.seg_id),
            Self::TranscriptPartial(e) => Some(e.seg_id),
            Self::Transcript(e) => Some(e.seg_id),
            Self::SegmentDone(e) => Some(e.seg_id),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Client → assistant.

family! {
    /// Every request a client can send on the control socket. With the `cli` feature it is
    /// also `stt-ctl`'s command line: each verb's name (the variant's, in kebab case), its
    /// arguments and its help are declared here, once; a doc comment's first paragraph is
    /// what `stt-ctl --help` lists, the rest what the verb's own `--help` adds.
    #[cfg_attr(feature = "cli", derive(clap::Subcommand))]
    pub enum Request {
        #[cfg_attr(feature = "cli", command(skip))]
        Hello(Hello) = "hello",
        /// Turn this connection into an event stream too. `viewer: true` marks a watcher for
        /// the `require_viewer` gate.
        #[cfg_attr(feature = "cli", command(skip))]
        Subscribe {
            #[serde(default)]
            viewer: bool,
        } = "subscribe",
        /// Arm command mode: what you say next becomes the command
        CommandStart = "command_start",
        /// Run the armed command (refused until the last words are transcribed, unless --wait)
        ///
        /// With a wait (`wait_ms` on the wire) the assistant holds the request until the flow
        /// is ready (the last words transcribed) or that many milliseconds have passed, then
        /// runs or refuses it.
        CommandExecute {
            /// Let the assistant hold the request until your last words are transcribed, for
            /// up to MS milliseconds (3000 when given without a value), then run or refuse
            /// it: what a push-to-talk key wants, as it comes up the moment you stop speaking
            #[serde(default)]
            #[cfg_attr(feature = "cli", arg(
                long = "wait",
                value_name = "MS",
                num_args = 0..=1,
                require_equals = true,
                default_missing_value = "3000"
            ))]
            wait_ms: Option<u64>,
        } = "command_execute",
        /// Drop the armed command
        CommandCancel = "command_cancel",
        /// Replace the command buffer with TEXT and freeze it
        CommandEdit {
            /// The corrected command
            #[cfg_attr(feature = "cli", arg(long))]
            text: String,
        } = "command_edit",
        /// Enter or leave chat mode
        ChatToggle = "chat_toggle",
        /// Start dictating: what you say is typed into the window that has the focus
        ///
        /// From idle only: each final transcript is typed.
        DictateStart = "dictate_start",
        /// Stop dictating
        DictateStop = "dictate_stop",
        /// Start dictating, or stop (for one hotkey)
        DictateToggle = "dictate_toggle",
        /// Wipe the conversation and the LLM history (the mode stays)
        Clear = "clear",
        /// Show mode, STT health, LLM endpoint, queue, viewers and the command buffer
        Status = "status",
        /// List known speakers
        SpeakerList = "speaker_list",
        /// Give speaker ID the name NAME
        SpeakerName {
            /// Speaker id, as `speaker-list` shows it (spk_0001)
            #[cfg_attr(feature = "cli", arg(value_name = "ID"))]
            speaker_id: String,
            /// The name to show
            name: String,
        } = "speaker_name",
        /// Forget speaker ID: its name, voice print and sample (if they speak again, they come
        /// back as a new speaker)
        ///
        /// The name goes at once; the voice print and sample once the daemon reads the edit.
        SpeakerForget {
            /// Speaker id, as `speaker-list` shows it
            #[cfg_attr(feature = "cli", arg(value_name = "ID"))]
            speaker_id: String,
        } = "speaker_forget",
        /// Merge speaker ID into INTO, one person heard as two: INTO keeps its id and takes
        /// ID's speech (and its name, when INTO has none); ID goes
        SpeakerMerge {
            /// The speaker that goes
            #[cfg_attr(feature = "cli", arg(value_name = "ID"))]
            speaker_id: String,
            /// The speaker that stays
            into: String,
        } = "speaker_merge",
        /// Allow the tool call waiting for confirmation
        Confirm {
            /// Which call, when more than one waits
            #[serde(default)]
            #[cfg_attr(feature = "cli", arg(long))]
            call_id: Option<String>,
        } = "confirm",
        /// Refuse the tool call waiting for confirmation
        Deny {
            /// Which call, when more than one waits
            #[serde(default)]
            #[cfg_attr(feature = "cli", arg(long))]
            call_id: Option<String>,
        } = "deny",
        /// Cancel a timer before it fires (`status` lists them with their ids)
        TimerCancel {
            /// The timer's id
            #[cfg_attr(feature = "cli", arg(value_name = "ID"))]
            timer_id: u64,
        } = "timer_cancel",
        /// Send a typed chat turn (from idle it enters chat mode); the answer streams to
        /// viewers
        ///
        /// Like a spoken turn in chat mode.
        #[cfg_attr(feature = "cli", command(mut_arg(WORDS, |arg| arg
            .help("What to say; several words are joined with spaces"))))]
        ChatSend {
            #[cfg_attr(feature = "cli", command(flatten))]
            text: Words,
        } = "chat_send",
        /// Run a chat slash command: /providers, /provider ID, /models, /model NAME, /new,
        /// /system TEXT, /export [PATH], /help
        ///
        /// Answered with `chat_output`.
        #[cfg_attr(feature = "cli", command(mut_arg(WORDS, |arg| arg
            .value_name("LINE")
            .allow_hyphen_values(true)
            .help("The command, e.g. \"/providers\" or /model qwen2.5:7b"))))]
        ChatCommand {
            #[cfg_attr(feature = "cli", command(flatten))]
            line: Words,
        } = "chat_command",
        /// Stop the chat reply that is streaming (what arrived is kept)
        ///
        /// What arrived is kept as the turn, flagged `stopped`.
        ChatStop = "chat_stop",
        /// Read, search, forget, export or import long-term memory, or run a dream
        /// (docs/MEMORY.md)
        ///
        /// Answered with `memory_output`.
        #[cfg_attr(feature = "cli", command(subcommand))]
        Memory(MemoryRequest) = "memory",
        /// The planner's tasks: list, show, add, finish, and what to do next (kept in
        /// memory's database; docs/PLANNER.md)
        ///
        /// Answered with `task_output`.
        #[cfg_attr(feature = "cli", command(subcommand))]
        Task(TaskRequest) = "task",
        /// The commands answered without the model ([intents]; README, "Commands without
        /// the model")
        ///
        /// Answered with `intent_output`.
        #[cfg_attr(feature = "cli", command(subcommand))]
        Intents(IntentsRequest) = "intents",
        /// Spoken replies on or off ([voice].enabled is where they start; docs/VOICE.md)
        ///
        /// Answered with `status`, whose `voice` says which.
        VoiceToggle = "voice_toggle",
    }
}

/// Free text, typed as it is said: on the wire one string; on `stt-ctl`'s command line the
/// words after the verb, joined with spaces (`stt-ctl chat-send hello there` needs no
/// quotes).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Words(pub String);

/// The id of [`Words`]' argument on the command line, for a verb that renames it
/// (`mut_arg`).
pub const WORDS: &str = "words";

impl std::ops::Deref for Words {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Words {
    fn from(text: &str) -> Self {
        Self(text.to_owned())
    }
}

impl From<String> for Words {
    fn from(text: String) -> Self {
        Self(text)
    }
}

impl std::fmt::Display for Words {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What an `intents` request asks of the commands answered without the model, by its
/// `verb`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Subcommand))]
#[serde(tag = "verb", rename_all = "snake_case")]
pub enum IntentsRequest {
    /// Say what a command would do without the model (runs nothing): the intent, the
    /// template that takes it, the action and the answer; or that the model would take it
    #[cfg_attr(feature = "cli", command(mut_arg(WORDS, |arg| arg
        .value_name("SENTENCE")
        .help("The command's words"))))]
    Test {
        #[cfg_attr(feature = "cli", command(flatten))]
        text: Words,
    },
}

/// What a `task` request asks of the planner, by its `verb`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Subcommand))]
#[serde(tag = "verb", rename_all = "snake_case")]
pub enum TaskRequest {
    /// List the tasks, most urgent first
    List {
        /// Only those at this status: open, active, done or dropped
        #[serde(default)]
        #[cfg_attr(feature = "cli", arg(long))]
        status: Option<String>,
    },
    /// One task with its plan (its phases and dated items)
    Show { id: i64 },
    /// Make a task
    #[cfg_attr(feature = "cli", command(mut_arg(WORDS, |arg| arg
        .value_name("TITLE")
        .help("What it is; several words are joined with spaces"))))]
    Add {
        #[cfg_attr(feature = "cli", command(flatten))]
        title: Words,
        /// The goal behind it
        #[serde(default)]
        #[cfg_attr(feature = "cli", arg(long))]
        goal: Option<String>,
        /// When it is due, YYYY-MM-DD
        #[serde(default)]
        #[cfg_attr(feature = "cli", arg(long, value_name = "DATE"))]
        due: Option<String>,
        /// 1 (the highest) to 5; 3 when not given
        #[serde(default)]
        #[cfg_attr(feature = "cli", arg(long, value_name = "N"))]
        priority: Option<u8>,
    },
    /// Mark task ID done (its whole plan with it); with --item, check off plan item ID
    ///
    /// An item's phase, then its task, finish with their last item.
    Done {
        id: i64,
        /// ID is a plan item (as `task show` lists them), not a task
        #[serde(default)]
        #[cfg_attr(feature = "cli", arg(long))]
        item: bool,
    },
    /// What to do next, most urgent first: overdue, today, within three days, later
    Next {
        /// How many at most (8 when not given)
        #[serde(default)]
        #[cfg_attr(feature = "cli", arg(long))]
        limit: Option<u32>,
    },
}

impl TaskRequest {
    /// The verb as the wire names it.
    pub fn verb(&self) -> &'static str {
        match self {
            Self::List { .. } => "list",
            Self::Show { .. } => "show",
            Self::Add { .. } => "add",
            Self::Done { .. } => "done",
            Self::Next { .. } => "next",
        }
    }
}

/// A plan item in a `task_output`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanItem {
    pub id: i64,
    /// `YYYY-MM-DD`.
    pub day: String,
    pub text: String,
    pub done: bool,
}

/// A phase of a plan in a `task_output`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanPhase {
    pub title: String,
    pub done: bool,
    pub items: Vec<PlanItem>,
}

/// A task in a `task_output`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskEntry {
    pub id: i64,
    pub title: String,
    #[serde(default)]
    pub goal: String,
    /// open, active, done or dropped.
    pub status: String,
    pub priority: u8,
    #[serde(default)]
    pub due: Option<String>,
    /// The plan, phase by phase (empty for a task not broken down).
    #[serde(default)]
    pub phases: Vec<PlanPhase>,
}

/// Something to do next, in a `task_output`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextAction {
    pub task: i64,
    pub task_title: String,
    /// The plan item; `null` for a task with no plan left to do.
    #[serde(default)]
    pub item: Option<i64>,
    pub text: String,
    /// The item's day, or the task's due date.
    #[serde(default)]
    pub day: Option<String>,
    pub priority: u8,
    pub overdue: bool,
}

/// What a `memory` request asks, by its `verb`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Subcommand))]
#[serde(tag = "verb", rename_all = "snake_case")]
pub enum MemoryRequest {
    /// List what memory holds, newest first
    List {
        /// Only this kind: knowledge, episode, intention or profile
        #[serde(default)]
        #[cfg_attr(feature = "cli", arg(long))]
        kind: Option<String>,
        /// Archived items too (decayed, corrected, done)
        #[serde(default)]
        #[cfg_attr(feature = "cli", arg(long))]
        archived: bool,
        /// At most this many (default 50)
        #[serde(default)]
        #[cfg_attr(feature = "cli", arg(long))]
        limit: Option<u32>,
    },
    /// Show one item whole: text, score, where it came from, what it corrected
    Show {
        /// The item's id, as `list` shows it
        id: i64,
    },
    /// Search items and past conversations for TEXT, best first
    #[cfg_attr(feature = "cli", command(mut_arg(WORDS, |arg| arg
        .help("What to look for; several words are joined with spaces"))))]
    Search {
        #[cfg_attr(feature = "cli", command(flatten))]
        text: Words,
        /// At most this many (default 10)
        #[serde(default)]
        #[cfg_attr(feature = "cli", arg(long))]
        limit: Option<u32>,
    },
    /// Delete one item, or with --all everything memory holds (audited; not undoable)
    ///
    /// Search rows and vectors go with them.
    #[cfg_attr(feature = "cli", command(group(
        clap::ArgGroup::new("what").required(true).args(["id", "all"])
    )))]
    Forget {
        /// The item's id, as `list` shows it
        #[serde(default)]
        id: Option<i64>,
        /// Every conversation, item and dream
        #[serde(default)]
        #[cfg_attr(feature = "cli", arg(long))]
        all: bool,
    },
    /// Write memory as Markdown files (YAML front matter) under DIR
    ///
    /// On the wire `dir` is absolute: `stt-ctl` makes it so.
    Export {
        #[cfg_attr(feature = "cli", arg(value_name = "DIR"))]
        dir: String,
    },
    /// Read Markdown files from DIR back into memory (unknown keys are kept)
    ///
    /// On the wire `dir` is absolute: `stt-ctl` makes it so.
    Import {
        #[cfg_attr(feature = "cli", arg(value_name = "DIR"))]
        dir: String,
    },
    /// Consolidate memory now (a dream), instead of waiting for a quiet moment
    Dream,
    /// Show the latest dreams and what each did
    Dreams {
        /// At most this many (default 5)
        #[serde(default)]
        #[cfg_attr(feature = "cli", arg(long))]
        limit: Option<u32>,
    },
    /// How much memory holds
    Stats,
    /// The memory tree of the chat's summaries: the top ones, or node NODE (its summary,
    /// what it learnt of you, its children or its messages)
    Tree {
        /// A node's id, as `memory tree` lists them
        #[serde(default)]
        node: Option<i64>,
    },
}

impl MemoryRequest {
    /// The verb as the wire names it.
    pub fn verb(&self) -> &'static str {
        match self {
            Self::List { .. } => "list",
            Self::Show { .. } => "show",
            Self::Search { .. } => "search",
            Self::Forget { .. } => "forget",
            Self::Export { .. } => "export",
            Self::Import { .. } => "import",
            Self::Dream => "dream",
            Self::Dreams { .. } => "dreams",
            Self::Stats => "stats",
            Self::Tree { .. } => "tree",
        }
    }
}

/// One thing memory holds, as `memory_output` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryEntry {
    /// `item`, `log` for a line of a conversation, or `node` for a node of the memory tree.
    pub target: String,
    pub id: i64,
    /// Items: knowledge, episode, intention or profile; log lines: who spoke (user,
    /// assistant, tool, ambient).
    pub kind: String,
    pub text: String,
    /// When it was made or said, seconds since the Unix epoch.
    pub at: f64,
    /// How well it matched a search.
    #[serde(default)]
    pub score: Option<f32>,
    /// Archived (decayed, corrected, done); kept, not recalled.
    #[serde(default)]
    pub archived: bool,
}

// ---------------------------------------------------------------------------------------
// Assistant → clients.

/// The assistant's modes. Command, chat and dictation are mutually exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Listening; nothing goes to the model.
    #[default]
    Idle,
    /// The next complete turns become the command buffer.
    CommandArmed,
    /// A command is running through the tool loop.
    Executing,
    /// Every completed turn goes to the model, without tools.
    Chat,
    /// Every final transcript is typed into the focused window; nothing goes to the model.
    Dictate,
}

impl Request {
    /// What a person is told when the assistant takes this request (`stt-ctl` prints it):
    /// every request says it, a new one too.
    pub fn acknowledgement(&self) -> &'static str {
        match self {
            Request::Hello(_) => "hello",
            Request::Subscribe { .. } => "subscribed",
            Request::CommandStart => "armed: speak the command, then run `stt-ctl command-execute`",
            Request::CommandExecute { .. } => "executing the command",
            Request::CommandCancel => "command cancelled",
            Request::CommandEdit { .. } => "command buffer replaced",
            Request::ChatToggle => "chat mode toggled",
            Request::DictateStart => "dictating: what you say is typed into the focused window",
            Request::DictateStop => "dictation stopped",
            Request::DictateToggle => "dictation toggled",
            Request::Clear => "conversation cleared",
            Request::Status => "status",
            Request::SpeakerList => "speakers",
            Request::SpeakerName { .. } => "speaker named",
            Request::SpeakerForget { .. } => "speaker forgotten",
            Request::SpeakerMerge { .. } => "speakers merged",
            Request::Confirm { .. } => "confirmed",
            Request::Deny { .. } => "denied",
            Request::TimerCancel { .. } => "timer cancelled",
            Request::ChatSend { .. } => "sent: the answer streams to viewers (`stt-tui`)",
            Request::ChatCommand { .. } => "done",
            Request::ChatStop => "reply stopped",
            Request::Memory(_) => "done",
            Request::VoiceToggle => "voice toggled",
            Request::Task(_) => "done",
            Request::Intents(_) => "tested",
        }
    }
}

/// Why a request is refused in a mode, with the fix ([`Mode::admits`]).
pub mod refusals {
    pub const RUNNING: &str = "a command is running; wait for it to finish";
    pub const IN_CHAT: &str = "chat mode is on; leave it first (`stt-ctl chat-toggle`)";
    pub const DICTATING: &str = "dictation is on; stop it first (`stt-ctl dictate-stop`)";
    pub const COMMAND_ON: &str = "a command is armed or running; cancel or finish it first";
    pub const NOTHING_TO_EDIT: &str =
        "nothing to edit: arm a command first (`stt-ctl command-start`)";
    pub const NOTHING_TO_EXECUTE: &str =
        "nothing to execute: arm a command first (`stt-ctl command-start`)";
    pub const NOTHING_TO_CANCEL: &str = "no command armed or running to cancel";
    pub const NOT_DICTATING: &str = "dictation is not on";
}

impl Mode {
    /// Whether `request` may be made in this mode, or why not (with the fix): the one table
    /// of which verbs each mode takes (command, chat and dictation exclude each other). Every
    /// request is named, so a new one says where it may be made.
    pub fn admits(self, request: &Request) -> Result<(), &'static str> {
        use Mode::{Chat, CommandArmed, Dictate, Executing, Idle};
        use refusals::*;
        let refused = match request {
            Request::CommandStart => match self {
                Idle | CommandArmed => None,
                Executing => Some(RUNNING),
                Chat => Some(IN_CHAT),
                Dictate => Some(DICTATING),
            },
            Request::CommandEdit { .. } => (self != CommandArmed).then_some(NOTHING_TO_EDIT),
            Request::CommandExecute { .. } => (self != CommandArmed).then_some(NOTHING_TO_EXECUTE),
            Request::CommandCancel => {
                matches!(self, Idle | Chat | Dictate).then_some(NOTHING_TO_CANCEL)
            }
            Request::ChatToggle | Request::ChatSend { .. } => match self {
                Idle | Chat => None,
                CommandArmed | Executing => Some(COMMAND_ON),
                Dictate => Some(DICTATING),
            },
            Request::DictateStart | Request::DictateToggle => match self {
                Idle | Dictate => None,
                Chat => Some(IN_CHAT),
                CommandArmed | Executing => Some(COMMAND_ON),
            },
            Request::DictateStop => (self != Dictate).then_some(NOT_DICTATING),
            Request::Hello(_)
            | Request::Subscribe { .. }
            | Request::Clear
            | Request::Status
            | Request::SpeakerList
            | Request::SpeakerName { .. }
            | Request::SpeakerForget { .. }
            | Request::SpeakerMerge { .. }
            | Request::Confirm { .. }
            | Request::Deny { .. }
            | Request::TimerCancel { .. }
            | Request::ChatCommand { .. }
            | Request::ChatStop
            | Request::Memory(_)
            | Request::VoiceToggle
            | Request::Task(_)
            | Request::Intents(_) => None,
        };
        refused.map_or(Ok(()), Err)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::CommandArmed => "command_armed",
            Self::Executing => "executing",
            Self::Chat => "chat",
            Self::Dictate => "dictate",
        }
    }
}

/// What running a tool can do to the world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SideEffect {
    /// Only reads (the time, a file).
    ReadOnly,
    /// Changes something on this desktop that is easily undone (a notification, the
    /// clipboard, a timer).
    Local,
    /// Reaches outside the machine or starts another program (open a URL).
    External,
    /// Hard to undo.
    Destructive,
}

impl SideEffect {
    /// The name used on the wire, in the config file and in the audit log.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read_only",
            Self::Local => "local",
            Self::External => "external",
            Self::Destructive => "destructive",
        }
    }
}

impl std::fmt::Display for SideEffect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who a chat line belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChatRole {
    User,
    Assistant,
    /// Shown to people only, never sent to the model (why the context changed, say).
    Note,
    /// Something failed, in words that name the fix; shown to people only.
    Error,
    /// A role this build does not know (from a newer assistant); shown like a note.
    #[serde(other)]
    Unknown,
}

/// The model asked for a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub call_id: String,
    pub tool: String,
    pub args: Value,
    pub side_effect: SideEffect,
    pub requires_confirmation: bool,
    /// True when the tool waits for a `confirm` or `deny` before it runs.
    pub awaiting_confirmation: bool,
    /// The outside content in the request this call came from (the call that brought it:
    /// `fetch_web({"url":…})`), when that is why it waits for a yes: the call may be the
    /// page's, not the user's. `null` otherwise.
    #[serde(default)]
    pub outside: Option<String>,
}

/// A tool ran (or was refused).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    pub call_id: String,
    pub tool: String,
    pub ok: bool,
    pub result: String,
    pub latency_ms: u64,
}

/// A chat line. Streaming replies arrive as several messages with the same `id`: those with
/// `partial: true` carry the next piece of text to append; the last has `partial: false`
/// and the whole text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub id: u64,
    pub role: ChatRole,
    /// For user turns, the speaker's name as in [`Transcript::speaker`]; `None` when unknown.
    #[serde(default)]
    pub speaker: Option<String>,
    pub text: String,
    #[serde(default)]
    pub partial: bool,
    /// The reply was stopped (by a person, or a dropped connection) before it was finished;
    /// `text` is what had arrived.
    #[serde(default)]
    pub stopped: bool,
}

/// A settled turn: speech stopped and none started again within `[assistant].settle_ms`.
/// `text` is the words of its segments in order, joined by a space; segments that held no
/// words (a cough, the voice's own words heard back) are in `seg_ids` but not in `text`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnEnded {
    pub seg_ids: Vec<u64>,
    pub text: String,
    /// The speaker's name when every segment with words was matched to that named speaker;
    /// `None` when unknown or mixed.
    #[serde(default)]
    pub speaker: Option<String>,
}

/// One category's confidence in a [`Triage`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TriageSignal {
    pub category: String,
    /// 0 to 1.
    pub confidence: f32,
}

/// Which stage of a window's triage an event carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TriageStage {
    /// The classifier's confidences, always first.
    Signals,
    /// The model's extraction (or why it failed), over the same signals.
    Content,
    /// A stage this build does not know (from a newer assistant).
    #[serde(other)]
    Unknown,
}

/// A task an extraction found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriageTask {
    pub what: String,
    /// Who is to do it, when said.
    #[serde(default)]
    pub who: Option<String>,
    /// By when, as said ("Friday", "after lunch").
    #[serde(default)]
    pub when: Option<String>,
}

/// What an extraction found in a window.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriageContent {
    #[serde(default)]
    pub tasks: Vec<TriageTask>,
    /// Dates and times mentioned, as said.
    #[serde(default)]
    pub dates: Vec<String>,
    /// People mentioned.
    #[serde(default)]
    pub people: Vec<String>,
    /// What was decided, when something was.
    #[serde(default)]
    pub decision: Option<String>,
}

/// What triage made of the last utterances when a turn settled (display only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Triage {
    /// The window's id: its `content` stage carries the same.
    pub id: u64,
    pub stage: TriageStage,
    /// The settled turn that asked.
    pub seg_ids: Vec<u64>,
    /// A confidence per category, in the classifier's order.
    pub signals: Vec<TriageSignal>,
    /// The `content` stage's extraction.
    #[serde(default)]
    pub content: Option<TriageContent>,
    /// The `content` stage's failure, naming the fix.
    #[serde(default)]
    pub error: Option<String>,
}

/// Tokens a turn or a session cost, as the provider counts them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    pub prompt: u64,
    pub completion: u64,
    /// Prompt tokens served from the provider's cache (counted in `prompt` too).
    pub cached: u64,
}

/// The chat session as a viewer shows it: which model answers, where, and what it cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatSession {
    /// The provider in use (`llamacpp`, `claude`, …); `null` when none is.
    #[serde(default)]
    pub provider: Option<String>,
    /// The model asked for; empty when the provider chooses.
    #[serde(default)]
    pub model: String,
    /// `host:port` of an HTTP provider, or a CLI's program name.
    #[serde(default)]
    pub endpoint: String,
    /// Whether the provider's server is still loading its model.
    #[serde(default)]
    pub loading: bool,
    /// Turns of the conversation so far.
    #[serde(default)]
    pub turns: u32,
    /// What the last turn cost; `null` before the first (or when the provider did not say).
    #[serde(default)]
    pub last: Option<TokenUsage>,
    /// What every turn of the session cost.
    #[serde(default)]
    pub total: TokenUsage,
}

/// Sent by the assistant about once a second; drives the TUI's counters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssistantHeartbeat {
    pub seq: u64,
    pub mode: Mode,
    pub stt_healthy: bool,
    /// The daemon's transcription backlog (`[seg N]`).
    pub daemon_backlog: u32,
    /// Inference jobs waiting (`[inf N]`).
    pub inference_queue: u32,
    /// Whether an inference job is running (`· busy`).
    pub inference_busy: bool,
    /// Where the daemon sends audio to be transcribed (`host:port`), or `null`: nowhere,
    /// it stays on this machine.
    #[serde(default)]
    pub stt_remote: Option<String>,
    /// The wake phrase the daemon listens for, or `null` while wake is off.
    #[serde(default)]
    pub wake: Option<String>,
    /// Whether the voice is speaking (or its last words may still be heard).
    #[serde(default)]
    pub speaking: bool,
}

/// The reply to `status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Status {
    pub mode: Mode,
    pub stt_healthy: bool,
    /// Why STT is unhealthy, for a person; empty when healthy.
    #[serde(default)]
    pub stt_detail: String,
    pub llm_enabled: bool,
    /// Where model requests go: the provider's chat URL or CLI program; empty before one
    /// is chosen.
    pub llm_endpoint: String,
    /// Whether the provider answered its last probe; `null` before the first probe.
    #[serde(default)]
    pub llm_reachable: Option<bool>,
    /// The provider in use (`llamacpp`, `ollama`, `claude`, …); `null` when none is.
    #[serde(default)]
    pub llm_provider: Option<String>,
    /// The model asked for; empty when the provider chooses.
    #[serde(default)]
    pub llm_model: String,
    pub inference_queue: u32,
    pub inference_busy: bool,
    pub viewers: u32,
    pub command_buffer: String,
    pub command_edited: bool,
    pub version: String,
    /// Timers set by the `set_timer` tool that have not fired yet, soonest first.
    #[serde(default)]
    pub timers: Vec<TimerInfo>,
    /// The chat session; `null` from an assistant that predates it. (Boxed: it would
    /// double the size of every event.)
    #[serde(default)]
    pub chat: Option<Box<ChatSession>>,
    /// Whether replies are spoken (`voice_toggle`); `false` from an assistant that predates
    /// the voice.
    #[serde(default)]
    pub voice: bool,
    /// The assistant's lanes (memory, the writer, the voice, triage, dictation): each one's
    /// state and the jobs waiting for it; `[]` from an assistant that predates them.
    #[serde(default)]
    pub lanes: Vec<LaneStatus>,
}

/// One of the assistant's lanes, in `status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaneStatus {
    /// `memory`, `writer`, `voice`, `triage` or `dictation`.
    pub name: String,
    pub state: LaneState,
    /// Why it is off, for a person; `null` otherwise.
    #[serde(default)]
    pub why: Option<String>,
    /// Jobs sent to it and not yet taken.
    pub queued: u32,
}

/// What a lane last said of itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LaneState {
    /// Running, and not yet ready: loading, or waiting to be needed (the voice loads when
    /// first turned on).
    Started,
    Ready,
    /// It cannot work; `why` says why.
    Off,
}

/// A timer waiting to fire, in `status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimerInfo {
    /// Unique across the assistant's restarts; the `chat_message` it fires as has this id.
    pub id: u64,
    pub label: String,
    /// Seconds until it fires.
    pub remaining_s: f64,
}

/// A request was accepted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ack {
    /// The request's `type`.
    pub command: String,
    pub ok: bool,
}

family! {
    /// Everything the assistant sends to clients: events for subscribers and direct replies.
    pub enum AssistantEvent {
        Hello(Hello) = "hello",
        Mode { mode: Mode } = "mode",
        /// The command buffer changed.
        CommandText { text: String, edited: bool } = "command_text",
        Transcript(Transcript) = "transcript",
        /// The daemon's `transcript_partial`, relayed.
        TranscriptPartial(TranscriptPartial) = "transcript_partial",
        SpeechStart(SpeechStart) = "speech_start",
        SpeechStop(SpeechStop) = "speech_stop",
        /// A turn settled (see [`TurnEnded`]); in any mode.
        TurnEnded(TurnEnded) = "turn_ended",
        /// Triage's signals for the last utterances, then what the model extracted.
        Triage(Triage) = "triage",
        ToolCall(ToolCall) = "tool_call",
        ToolResult(ToolResult) = "tool_result",
        /// The daemon's `wake`, relayed: the phrase was heard.
        Wake(Wake) = "wake",
        ChatMessage(ChatMessage) = "chat_message",
        Speakers(Speakers) = "speakers",
        /// The conversation and the LLM history were wiped.
        Cleared {} = "cleared",
        Heartbeat(AssistantHeartbeat) = "heartbeat",
        Error(ErrorMsg) = "error",
        Ack(Ack) = "ack",
        Status(Status) = "status",
        SpeakerList(Speakers) = "speaker_list",
        /// The chat session changed: another provider or model, a finished turn, `/new`.
        ChatSession(ChatSession) = "chat_session",
        /// The reply to `chat_command`: its output, for a person.
        ChatOutput { text: String } = "chat_output",
        /// The reply to `memory`: what it found or did, for a person, and the entries it
        /// lists (empty for verbs that list none).
        MemoryOutput {
            text: String,
            #[serde(default)]
            entries: Vec<MemoryEntry>,
        } = "memory_output",
        /// The reply to `intents` `test`: what the command would do, for a person; `intent`
        /// names the intent that takes it, `null` when the model would.
        IntentOutput {
            text: String,
            #[serde(default)]
            intent: Option<String>,
        } = "intent_output",
        /// The reply to `task`: what it found or did, for a person, and the tasks or next
        /// actions it lists.
        TaskOutput {
            text: String,
            #[serde(default)]
            tasks: Vec<TaskEntry>,
            #[serde(default)]
            next: Vec<NextAction>,
        } = "task_output",
    }
}

impl AssistantEvent {
    /// Whether this is a direct reply to a request rather than a broadcast event.
    pub fn is_reply(&self) -> bool {
        matches!(
            self,
            Self::Ack(_)
                | Self::Status(_)
                | Self::SpeakerList(_)
                | Self::Error(_)
                | Self::ChatOutput { .. }
                | Self::MemoryOutput { .. }
                | Self::TaskOutput { .. }
                | Self::IntentOutput { .. }
        )
    }

    /// Whether messages of wire type `kind` are direct replies (see [`Self::is_reply`]).
    pub fn is_reply_type(kind: &str) -> bool {
        matches!(
            kind,
            "ack"
                | "status"
                | "speaker_list"
                | "error"
                | "chat_output"
                | "memory_output"
                | "task_output"
                | "intent_output"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which requests each mode takes, as a person reads the table: a row a request, a
    /// column a mode (idle, command armed, executing, chat, dictate), `+` taken.
    #[test]
    fn each_mode_takes_its_requests() {
        use Mode::{Chat, CommandArmed, Dictate, Executing, Idle};
        let modes = [Idle, CommandArmed, Executing, Chat, Dictate];
        let table: Vec<(&str, String)> = [
            Request::CommandStart,
            Request::CommandEdit { text: "x".into() },
            Request::CommandExecute { wait_ms: None },
            Request::CommandCancel,
            Request::ChatToggle,
            Request::ChatSend { text: "x".into() },
            Request::DictateStart,
            Request::DictateToggle,
            Request::DictateStop,
            Request::Clear,
            Request::Status,
        ]
        .iter()
        .map(|request| {
            let row = modes.map(|m| if m.admits(request).is_ok() { '+' } else { '.' });
            (request.kind(), row.iter().collect())
        })
        .collect();
        let expected = [
            ("command_start", "++..."),
            ("command_edit", ".+..."),
            ("command_execute", ".+..."),
            ("command_cancel", ".++.."),
            ("chat_toggle", "+..+."),
            ("chat_send", "+..+."),
            ("dictate_start", "+...+"),
            ("dictate_toggle", "+...+"),
            ("dictate_stop", "....+"),
            ("clear", "+++++"),
            ("status", "+++++"),
        ];
        let expected: Vec<(&str, String)> =
            expected.iter().map(|(k, row)| (*k, (*row).to_owned())).collect();
        assert_eq!(table, expected);
        // A refusal says how to get to a mode that takes it.
        assert_eq!(Chat.admits(&Request::CommandStart), Err(refusals::IN_CHAT));
        assert_eq!(Dictate.admits(&Request::ChatToggle), Err(refusals::DICTATING));
    }
}
