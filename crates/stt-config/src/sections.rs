//! One struct per section of `config.toml`, each with the defaults that `default.toml` documents.
//!
//! Every struct is `#[serde(default)]`, so a file may name only the keys it changes, and
//! `#[serde(deny_unknown_fields)]`, so a misspelt key is an error instead of a silent default.
//! Paths are `PathBuf`s where an empty path means "the default location"; toml has no null,
//! so `Option` is avoided.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The whole configuration file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// `[daemon]`: audio capture, voice activity detection, transcription.
    pub daemon: DaemonConfig,
    /// `[assistant]`: modes, the tool loop, chat and its compaction.
    pub assistant: AssistantConfig,
    /// `[llm]`: the model provider and how to talk to it.
    pub llm: LlmConfig,
    /// `[triage]`: the optional speech classifier panel.
    pub triage: TriageConfig,
    /// `[speakers]`: optional per-utterance speaker identification.
    pub speakers: SpeakersConfig,
    /// `[voice]`: the voice replies are spoken in.
    pub voice: VoiceConfig,
    /// `[wake]`: a spoken turn without a key, started by a wake phrase.
    pub wake: WakeConfig,
    /// `[memory]`: long-term memory.
    pub memory: MemoryConfig,
    /// `[planner]`: tasks, plans and the assistant speaking up on its own.
    pub planner: PlannerConfig,
    /// `[dictate]`: what is said, typed into the focused window.
    pub dictate: DictateConfig,
    /// `[intents]`: the commands answered without the model.
    pub intents: IntentsConfig,
    /// `[tui]`: the terminal viewer.
    pub tui: TuiConfig,
    /// `[tools]`: commands the model may run.
    pub tools: ToolsConfig,
}

/// `[daemon]`: audio capture, voice activity detection and whisper transcription.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DaemonConfig {
    /// Event socket path; empty means `<runtime_dir>/stt-daemon.sock`.
    pub socket: PathBuf,
    /// Input device name; empty means the system's default input device.
    pub device: String,
    /// Whisper GGML model: a path, or a file name looked up in `<data_dir>/models`.
    pub model: PathBuf,
    /// Spoken language code (`"en"`, `"de"`, ...), or `"auto"` to detect it per segment.
    pub language: String,
    /// CPU threads whisper may use.
    pub threads: u32,
    /// Beam search width; 0 means greedy decoding.
    pub beam_size: u32,
    /// Whisper encoder window in frames (50 per second of audio); 0 sizes it to each segment.
    pub audio_ctx: u32,
    /// whisper.cpp's flash attention: less memory on long segments, lower accuracy.
    pub flash_attention: bool,
    /// The voice activity detector that finds speech.
    pub vad: VadEngine,
    /// Silero VAD model (ONNX): a path, or a file name looked up in `<data_dir>/models`.
    pub vad_model: PathBuf,
    /// Speech probability above which a frame counts as speech (0..1, exclusive).
    pub vad_threshold: f64,
    /// Noise gate: the classifier runs only on audio this many dB above the noise floor (and
    /// for 1.5 s after); 0 runs it on every frame.
    pub vad_gate_db: f32,
    /// Audio kept from before speech onset, in milliseconds.
    pub vad_pre_roll_ms: u32,
    /// Speech must last this long, in milliseconds, before a segment opens.
    pub vad_onset_ms: u32,
    /// Silence that closes a segment, in milliseconds.
    pub vad_hangover_ms: u32,
    /// What ends a turn before the hangover has run out.
    pub end_of_turn: EndOfTurn,
    /// With `end_of_turn = "text"` or `"prosody"`: the pause, in milliseconds, at which whisper reads what
    /// was said so far to judge whether it is finished.
    pub end_of_turn_pause_ms: u32,
    /// Segments shorter than this, in milliseconds, are dropped untranscribed.
    pub vad_min_speech_ms: u32,
    /// Longer speech is cut into segments of at most this many seconds.
    pub vad_max_segment_s: u32,
    /// Segments that may wait for transcription before the oldest is dropped.
    pub transcribe_queue_size: u32,
    /// Interval between heartbeat events, in milliseconds.
    pub heartbeat_interval_ms: u64,
    /// Live partial transcripts while speech is open.
    pub partials: bool,
    /// Audio between two partial passes over an open segment, in milliseconds.
    pub partial_interval_ms: u32,
    /// Words whisper is told to expect (names, jargon), beside those in
    /// `<data_dir>/vocabulary.txt` (`stt-ctl vocabulary add`).
    pub vocabulary: Vec<String>,
    /// Where finals are transcribed: here, or on a server (audio leaves the machine).
    pub asr: AsrBackend,
    /// The remote server's transcriptions URL (`…/v1/audio/transcriptions`).
    pub remote_url: String,
    /// The remote server's key: `env:NAME`, or empty for none.
    pub remote_key: String,
    /// The `model` the remote server is asked for (`whisper-1` for OpenAI); empty: none.
    pub remote_model: String,
    /// What transcribes a segment the remote server failed: the local model, or nothing.
    pub remote_fallback: RemoteFallback,
    /// How long the remote server may take for one segment, in milliseconds.
    pub remote_timeout_ms: u64,
}

/// `[daemon].asr`: where speech is transcribed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AsrBackend {
    /// whisper on this machine.
    #[default]
    Local,
    /// An OpenAI-compatible `/v1/audio/transcriptions` server (`remote_url`).
    Remote,
}

/// `[daemon].remote_fallback`: what happens to a segment the remote server failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RemoteFallback {
    /// The local model transcribes it (loaded at start, so it is ready).
    #[default]
    Local,
    /// It is lost, with an error saying why.
    None,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        Self {
            socket: PathBuf::new(),
            device: String::new(),
            model: PathBuf::from("ggml-tiny.en-q8_0.bin"),
            language: "en".to_owned(),
            threads: 2,
            beam_size: 0,
            audio_ctx: 0,
            flash_attention: false,
            vad: VadEngine::Silero,
            vad_model: PathBuf::from("silero_vad.onnx"),
            vad_threshold: 0.5,
            vad_gate_db: 6.0,
            vad_pre_roll_ms: 300,
            vad_onset_ms: 64,
            vad_hangover_ms: 500,
            end_of_turn: EndOfTurn::Prosody,
            end_of_turn_pause_ms: 300,
            vad_min_speech_ms: 150,
            vad_max_segment_s: 20,
            transcribe_queue_size: 8,
            heartbeat_interval_ms: 1000,
            partials: true,
            partial_interval_ms: 500,
            vocabulary: Vec::new(),
            asr: AsrBackend::Local,
            remote_url: String::new(),
            remote_key: String::new(),
            remote_model: String::new(),
            remote_fallback: RemoteFallback::Local,
            remote_timeout_ms: 1500,
        }
    }
}

/// `[daemon].end_of_turn`: when a segment closes. Either way whisper decodes the segment
/// during the pause, so its transcript is ready when it closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EndOfTurn {
    /// After `vad_hangover_ms` of silence, whatever was said.
    Hangover,
    /// After `end_of_turn_pause_ms` when the text so far ends a sentence (and does not end
    /// on a word such as "and" or "the"); otherwise after the hangover.
    Text,
    /// After `end_of_turn_pause_ms` when the text so far reads as a sentence and the voice
    /// fell where it stopped (a statement's final fall; a person pausing mid-sentence holds
    /// the pitch or lets it rise); otherwise after the hangover. The default.
    Prosody,
}

/// `[daemon].vad`: which classifier scores each frame of audio as speech or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VadEngine {
    /// The Silero VAD network (plain Rust): accurate in noise; reads `vad_model` (installed
    /// by `scripts/fetch-models`).
    Silero,
    /// earshot: pure Rust with its weights built in, nothing to install; takes loud noise
    /// for speech more often.
    Earshot,
}

/// The default system prompt for chat mode.
pub const DEFAULT_CHAT_SYSTEM_PROMPT: &str = "You are a voice assistant on the user's Linux \
desktop. Each user message is prefixed with who said it: the speaker's name, or \"Unknown\", \
for transcribed speech, which may contain recognition mistakes; \"Typed\" for words typed at \
the keyboard. Answer briefly and plainly: replies are read on a small panel.";

/// The default system prompt for command mode.
pub const DEFAULT_COMMAND_SYSTEM_PROMPT: &str = "You are the voice assistant on the user's \
Linux desktop. The user's words are transcribed speech and may contain recognition mistakes. \
Speak to the user as you, in one or two short sentences, and never claim to have done what no \
tool did. You do not know the date or the time: call get_datetime for them.";

/// The default system prompt for summarising old chat turns.
pub const DEFAULT_COMPACTION_SYSTEM_PROMPT: &str = "Summarise the conversation so far for your \
own later use. Keep names, facts, decisions, open questions and anything the user asked you to \
remember; drop small talk. If an earlier summary is included, fold it in. Write plain prose, a \
few short paragraphs at most.";

/// `[assistant]`: modes, the tool loop, chat and compaction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AssistantConfig {
    /// Control socket path; empty means `<runtime_dir>/stt-assistant.sock`.
    pub socket: PathBuf,
    /// Refuse to execute commands unless a TUI viewer is attached.
    pub require_viewer: bool,
    /// LLM jobs (chat turns, commands, summaries) that may wait for the single worker.
    pub inference_queue_size: u32,
    /// Model round trips one command may take before it is stopped.
    pub max_tool_iterations: u32,
    /// Seconds to wait for the user to confirm a tool call before it is refused.
    pub confirmation_timeout_s: u64,
    /// Append every action to `<data_dir>/audit/YYYY-MM-DD.jsonl`.
    pub audit: bool,
    /// System prompt for chat mode.
    pub chat_system_prompt: String,
    /// System prompt for command mode.
    pub command_system_prompt: String,
    /// The model's context window, in tokens.
    pub max_context_tokens: u32,
    /// Longest reply requested from the model, in tokens.
    pub max_tokens: u32,
    /// Longest answer of a command once its tools have run (one or two spoken sentences),
    /// in tokens; an answer cut there ends at its last whole sentence.
    pub command_answer_max_tokens: u32,
    /// Tokens kept free for estimation error when budgeting the prompt.
    pub compaction_safety_margin: u32,
    /// Compact when the prompt reaches this fraction of the budget (0 exclusive .. 1).
    pub compaction_trigger_ratio: f64,
    /// Most recent chat turns that compaction keeps verbatim.
    pub compaction_keep_turns: u32,
    /// Longest summary requested from the model, in tokens.
    pub compaction_max_tokens: u32,
    /// System prompt for the summariser.
    pub compaction_system_prompt: String,
    /// Turns deleted at a time when summarising fails.
    pub trim_block_turns: u32,
    /// Transcription counts as unhealthy after this long without a daemon heartbeat, in ms.
    pub stt_stale_after_ms: u64,
    /// Hours a chat session is kept without a turn before the next one starts afresh.
    pub chat_session_ttl_hours: u32,
    /// Quiet after the daemon's `speech_stop` before a turn settles, in ms: speech that
    /// starts again sooner belongs to the same turn.
    pub settle_ms: u64,
}

impl Default for AssistantConfig {
    fn default() -> Self {
        Self {
            socket: PathBuf::new(),
            require_viewer: false,
            inference_queue_size: 8,
            max_tool_iterations: 5,
            confirmation_timeout_s: 30,
            audit: true,
            chat_system_prompt: DEFAULT_CHAT_SYSTEM_PROMPT.to_owned(),
            command_system_prompt: DEFAULT_COMMAND_SYSTEM_PROMPT.to_owned(),
            max_context_tokens: 4096,
            max_tokens: 512,
            command_answer_max_tokens: 64,
            compaction_safety_margin: 256,
            compaction_trigger_ratio: 0.8,
            compaction_keep_turns: 4,
            compaction_max_tokens: 256,
            compaction_system_prompt: DEFAULT_COMPACTION_SYSTEM_PROMPT.to_owned(),
            trim_block_turns: 2,
            stt_stale_after_ms: 3000,
            chat_session_ttl_hours: 6,
            settle_ms: 600,
        }
    }
}

impl AssistantConfig {
    /// Tokens the prompt may use: `max_context_tokens - max_tokens - compaction_safety_margin`.
    ///
    /// Validation guarantees this is positive for a parsed config; it saturates at 0 for a
    /// hand-built one.
    pub fn prompt_budget(&self) -> u32 {
        self.max_context_tokens
            .saturating_sub(self.max_tokens)
            .saturating_sub(self.compaction_safety_margin)
    }
}

/// The providers `[llm].provider`, `priority` and `[llm.providers.ID]` may name (the
/// registry's ids in stt-llm; a test in stt-assistant keeps the two lists equal).
pub const LLM_PROVIDERS: [&str; 11] = [
    "claude",
    "codex",
    "gemini",
    "opencode",
    "zai",
    "openai",
    "anthropic-api",
    "ollama",
    "lmstudio",
    "llamacpp",
    "custom",
];

/// `[llm]`: which model provider to use, and how to talk to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    /// Use a model at all; when false, commands report that no executor is configured.
    pub enabled: bool,
    /// The provider to use (one of [`LLM_PROVIDERS`]); empty chooses automatically.
    pub provider: String,
    /// Chat URL of `provider` (an OpenAI-compatible chat-completions URL without one: the
    /// `custom` provider); empty uses the provider's default.
    pub endpoint: String,
    /// Model asked for; empty uses the provider's default (or the server's loaded model).
    pub model: String,
    /// The API key: `env:NAME` (read from that variable) or the key itself; empty uses the
    /// provider's usual variable (`OPENAI_API_KEY`, …).
    pub key: String,
    /// Providers automatic choice tries first, in this order.
    pub priority: Vec<String>,
    /// Retry a turn whose provider failed before its first word on the next live provider.
    pub failover: bool,
    /// Seconds to wait for the connection to open.
    pub connect_timeout_s: u64,
    /// Seconds one request may wait for the reply to start, or for its next piece.
    pub request_timeout_s: u64,
    /// Seconds between checks of which providers are there (for `status` and viewers); 0
    /// checks only at start and when asked (`/providers`).
    pub probe_interval_s: u64,
    /// Ask for a streamed reply.
    pub stream: bool,
    /// Sampling temperature of chat replies, 0 to 2 (commands, summaries and dreams sample
    /// greedily).
    pub temperature: f64,
    /// `stt-daemon up` starts llama-server with the installed local model when the config
    /// names no provider or endpoint and nothing answers on `local_port`.
    pub local_server: bool,
    /// The GGUF model it serves: a path, or a file name looked up in `<data_dir>/models`.
    pub local_model: PathBuf,
    /// The loopback port it listens on.
    pub local_port: u16,
    /// The llama-server program; empty means the one `scripts/fetch-llm` builds, else
    /// `llama-server` on `PATH`.
    pub local_server_program: PathBuf,
    /// `[llm.providers.ID]`: settings of one provider, by id.
    pub providers: BTreeMap<String, LlmProviderConfig>,
}

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            provider: String::new(),
            endpoint: String::new(),
            model: String::new(),
            key: String::new(),
            priority: Vec::new(),
            failover: false,
            connect_timeout_s: 5,
            request_timeout_s: 120,
            probe_interval_s: 30,
            stream: true,
            temperature: 0.2,
            local_server: true,
            local_model: PathBuf::from("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
            local_port: 9931,
            local_server_program: PathBuf::new(),
            providers: BTreeMap::new(),
        }
    }
}

/// `[llm.providers.ID]`: one provider's settings; empty values keep its defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmProviderConfig {
    /// Its chat URL (HTTP providers) or program (CLI providers).
    pub endpoint: String,
    /// `env:NAME` or the key itself.
    pub key: String,
    /// The model asked for.
    pub model: String,
    /// The models `/models` lists, instead of the provider's own list.
    pub models: Vec<String>,
}

/// `[triage]`: the optional, display-only speech classifier.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TriageConfig {
    /// Run the classifier.
    pub enabled: bool,
    /// Utterances classified together on each settled turn.
    pub window: u32,
    /// The sentence-embedding model the classifier reads utterances with: a directory path,
    /// or a name looked up in `<data_dir>/models`.
    pub model: PathBuf,
    /// The user's own labelled examples, trained on beside the built-in ones; empty means
    /// `<config dir>/triage-examples.tsv` (used when it is there).
    pub examples: PathBuf,
    /// A signal confidence at or above this asks the LLM for a structured extraction (0 exclusive .. 1).
    pub escalate_threshold: f64,
}

impl Default for TriageConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            window: 6,
            model: PathBuf::from("minilm-l6-v2"),
            examples: PathBuf::new(),
            escalate_threshold: 0.6,
        }
    }
}

/// `[planner]`: the assistant speaking up on its own (its heartbeat) and the hours it may not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlannerConfig {
    /// The model may schedule its own wake-ups (the `heartbeat` tool) and speak up then.
    pub proactive: bool,
    /// Do-not-disturb hours, local time, `"HH:MM-HH:MM"` (may span midnight); empty: none.
    pub dnd: String,
}

impl Default for PlannerConfig {
    fn default() -> Self {
        Self { proactive: true, dnd: "22:00-08:00".into() }
    }
}

impl PlannerConfig {
    /// The do-not-disturb hours as minutes after midnight, `(from, to)`; `None` when there are
    /// none. `from == to` is refused: it is unclear whether that means all day or never.
    pub fn dnd_minutes(&self) -> Result<Option<(u16, u16)>, String> {
        let text = self.dnd.trim();
        if text.is_empty() {
            return Ok(None);
        }
        let bad = || {
            format!(
                "\"{text}\" is not a span of hours: write \"HH:MM-HH:MM\", e.g. \"22:00-08:00\", or \"\" for none"
            )
        };
        let (from, to) = text.split_once('-').ok_or_else(bad)?;
        let minute = |hm: &str| -> Option<u16> {
            let (h, m) = hm.trim().split_once(':')?;
            let (h, m): (u16, u16) = (h.parse().ok()?, m.parse().ok()?);
            (h < 24 && m < 60 && m_digits(hm)).then_some(h * 60 + m)
        };
        let (from, to) = (minute(from).ok_or_else(bad)?, minute(to).ok_or_else(bad)?);
        if from == to {
            return Err(format!(
                "\"{text}\" starts and ends at the same minute: give a span, or \"\" for none"
            ));
        }
        Ok(Some((from, to)))
    }
}

/// Whether the minutes of `"HH:MM"` are written with two digits.
fn m_digits(hm: &str) -> bool {
    hm.trim().rsplit(':').next().is_some_and(|m| m.len() == 2)
}

/// `[speakers]`: optional per-utterance speaker identification in the daemon.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SpeakersConfig {
    /// Identify speakers.
    pub enabled: bool,
    /// Speaker-embedding model: a path, or a file name looked up in `<data_dir>/models`.
    pub model: PathBuf,
    /// Cosine similarity at or above which a segment matches a known speaker (0 exclusive .. 1).
    pub match_threshold: f64,
    /// Similarity at or above which, below `match_threshold`, the match is "uncertain".
    pub uncertain_threshold: f64,
    /// Segments shorter than this many seconds are not identified.
    pub min_segment_s: f64,
    /// Seconds of speech after which a provisional speaker is confirmed.
    pub confirm_s: f64,
    /// Most speakers remembered; the least heard unnamed one is pruned beyond that.
    pub max_speakers: u32,
}

impl Default for SpeakersConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            model: PathBuf::from("campplus/campplus.onnx"),
            // From docs/PERFORMANCE.md, "Speaker identification: accuracy" (scripts/bench-speakers).
            match_threshold: 0.65,
            uncertain_threshold: 0.45,
            min_segment_s: 1.0,
            confirm_s: 10.0,
            max_speakers: 32,
        }
    }
}

/// `[voice]`: the voice stt speaks with: spoken replies, and `stt-ctl say`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VoiceConfig {
    /// Speak chat replies and command results aloud.
    pub enabled: bool,
    /// Piper voice (ONNX, its `.onnx.json` beside it): a path, or a file name looked up in
    /// `<data_dir>/models`.
    pub model: PathBuf,
    /// Output device id or name; empty means the system's default output device;
    /// `wav:PATH` writes the speech to that WAV file instead.
    pub device: String,
}

impl Default for VoiceConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            model: PathBuf::from("piper/en_US-joe-medium.onnx"),
            device: String::new(),
        }
    }
}

/// `[wake]`: listening for a wake phrase (in the daemon), and the spoken turn it starts (in the
/// assistant): armed without a key, run when the turn ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WakeConfig {
    /// Listen for the phrase.
    pub enabled: bool,
    /// `"enrolled"` (the user's own phrase, enrolled from their recordings), or the name of an
    /// openWakeWord head installed with `scripts/fetch-wake --head NAME` (`hey_jarvis`,
    /// `alexa`, `hey_mycroft`, `hey_rhasspy`).
    pub phrase: String,
    /// The phrase as words, taken off the command said in the same breath ("hey jarvis what
    /// time is it" runs "what time is it"); empty: a head's name read as words
    /// (`hey_jarvis` → "hey jarvis"), nothing for an enrolled phrase.
    pub said: String,
    /// Score at or above which the phrase counts (0 .. 1); 0: the phrase's own (a head's 0.5,
    /// an enrolled phrase's from its recordings).
    pub threshold: f64,
    /// After the phrase is heard, how long before it can be heard again, in milliseconds.
    pub refractory_ms: u64,
    /// What the phrase starts: `"command"` (run when the turn ends, as Enter would) or
    /// `"chat"` (a conversation, left after `follow_up_s` of quiet after a reply).
    pub action: String,
    /// How long after the phrase the command's words may take to begin, in seconds.
    pub words_wait_s: f64,
    /// After the answer, how long the next command needs no phrase, in seconds; 0: never.
    pub follow_up_s: f64,
    /// Only this named speaker's commands run after the phrase (`[speakers]` must be on and
    /// the speaker named with `stt-ctl speaker-name`); empty: anyone's.
    pub only_speaker: String,
}

impl Default for WakeConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            phrase: "enrolled".into(),
            said: String::new(),
            threshold: 0.0,
            refractory_ms: 2000,
            action: "command".into(),
            words_wait_s: 8.0,
            follow_up_s: 5.0,
            only_speaker: String::new(),
        }
    }
}

impl WakeConfig {
    /// The phrase as words: [`WakeConfig::said`], else a head's name read as words.
    pub fn said(&self) -> String {
        match (self.said.trim(), self.phrase.as_str()) {
            ("", "enrolled") => String::new(),
            ("", head) => head.replace(['_', '-'], " "),
            (said, _) => said.to_owned(),
        }
    }
}

/// `[memory]`: long-term memory, kept locally in one SQLite file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// Keep long-term memory: conversations are logged and consolidated, and recalled later.
    pub enabled: bool,
    /// SQLite database path; empty means `<data_dir>/memory.sqlite`.
    pub db: PathBuf,
    /// Also keep what is said in idle mode (speech nobody addressed to the assistant).
    pub capture_ambient: bool,
    /// Embedding model for recall by meaning (a directory path, or a name under
    /// `<data_dir>/models`); empty means keyword recall only (and no hints).
    pub embedding_model: PathBuf,
    /// Most memories a recall tool returns.
    pub recall_top_k: u32,
    /// Memories scoring below this are not returned by the recall tools (0 .. 1).
    pub recall_min_score: f64,
    /// Offer associative hints (a memory that clearly matches what was just said).
    pub hints: bool,
    /// Seconds of quiet before a dream (consolidation) may start; 0 never dreams on its own.
    pub dream_idle_s: u64,
    /// Hours after the last dream at which one starts even without the quiet.
    pub dream_max_interval_h: u64,
    /// Sessions waiting to be consolidated before a dream starts on its own.
    pub dream_min_sessions: u32,
    /// Rounds of tool calls one dream may take.
    pub dream_max_steps: u32,
    /// Dream on its own (`dream_idle_s`, `dream_max_interval_h`) when the model in use is the
    /// local one (llama-server); `stt-ctl memory dream` runs one either way. Off by default:
    /// on LoCoMo the local model's dreams lower recall (docs/MEMORY.md).
    pub dream_on_local_model: bool,
    /// Keep chat in the memory tree: the conversation's context is its summaries and raw
    /// buffer (and survives a restart), in place of `[assistant]` compaction.
    pub tree: bool,
    /// Raw chat messages the tree's buffer holds before its oldest are summarized.
    pub tree_raw_max: u32,
    /// How many of the oldest buffered messages one summary takes.
    pub tree_compress: u32,
    /// Summaries a level of the tree holds before its oldest half is merged into one above.
    pub tree_fanout_max: u32,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            db: PathBuf::new(),
            capture_ambient: false,
            embedding_model: PathBuf::from("minilm-l6-v2"),
            recall_top_k: 5,
            recall_min_score: 0.25,
            hints: true,
            dream_idle_s: 600,
            dream_max_interval_h: 24,
            dream_min_sessions: 2,
            dream_max_steps: 40,
            dream_on_local_model: false,
            tree: true,
            tree_raw_max: 60,
            tree_compress: 40,
            tree_fanout_max: 8,
        }
    }
}

/// `[tui]`: the terminal viewer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TuiConfig {
    /// Capture the mouse (hold Shift to select text in the terminal anyway).
    pub mouse: bool,
    /// Show the time of each transcript line.
    pub show_timestamps: bool,
    /// Lines of scrollback kept per pane.
    pub max_lines: u32,
    /// Write the TUI's own log here; empty writes no log.
    pub log_file: PathBuf,
}

impl Default for TuiConfig {
    fn default() -> Self {
        Self { mouse: true, show_timestamps: true, max_lines: 5000, log_file: PathBuf::new() }
    }
}

/// `[dictate].method`: how dictated text gets into the focused window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DictateMethod {
    /// What the session has, found at run time: `wtype`, `ydotool`, `dotool`, then the
    /// clipboard on Wayland; `xdotool`, then the clipboard on X11.
    #[default]
    Auto,
    Wtype,
    Ydotool,
    Dotool,
    Xdotool,
    /// `wl-copy` or `xclip`/`xsel`, then `paste_key`; the old clipboard put back.
    Clipboard,
}

/// `[dictate]`: dictation into the focused window (`stt-ctl dictate-start`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DictateConfig {
    /// How text is typed.
    pub method: DictateMethod,
    /// The key the clipboard method pastes with: `ctrl+v`, `ctrl+shift+v` (terminals),
    /// `shift+Insert`.
    pub paste_key: String,
}

impl Default for DictateConfig {
    fn default() -> Self {
        Self { method: DictateMethod::Auto, paste_key: "ctrl+v".into() }
    }
}

/// `[intents]`: commands answered without the model, by sentence templates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IntentsConfig {
    /// Whether a command that matches a template is answered without the model.
    pub enabled: bool,
    /// The user's file of intents; empty means `intents.toml` beside the config file. A
    /// missing file is no error.
    pub file: PathBuf,
}

impl Default for IntentsConfig {
    fn default() -> Self {
        Self { enabled: true, file: PathBuf::new() }
    }
}

/// `[tools]`: commands the model may run in command mode, and what else it may read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolsConfig {
    /// `[[tools.command]]` entries.
    pub command: Vec<ToolCommand>,
    /// Folders the model may list and read (`list_dir`, `read_file`); empty: none.
    pub document_roots: Vec<PathBuf>,
    /// The model may fetch a web page's text (`fetch_web`).
    pub web: bool,
    /// A SearXNG-style search endpoint for `web_search`; empty: no web search.
    pub search_url: String,
    /// The model may read the screen's text (`capture_screen`: a screenshot, then OCR).
    pub screen: bool,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            command: Vec::new(),
            document_roots: Vec::new(),
            web: true,
            search_url: String::new(),
            screen: false,
        }
    }
}

/// One `[[tools.command]]`: a program the model may run, without a shell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCommand {
    /// The tool's name as the model sees it: letters, digits, `_` and `-`, at most 64.
    pub name: String,
    /// What the tool does; the model chooses tools by this.
    pub description: String,
    /// Program and arguments; `{param}` in an element is replaced by that argument's value.
    pub argv: Vec<String>,
    /// What running it can change; recorded in the audit log.
    pub side_effect: SideEffect,
    /// Ask the user before running it. Required for `destructive` tools.
    #[serde(default)]
    pub requires_confirmation: bool,
    /// Parameter name to description; every `{param}` in `argv` must be listed.
    #[serde(default)]
    pub parameters: BTreeMap<String, String>,
    /// Sentence templates that run the tool without the model (`[intents]`); their slots
    /// are the parameters.
    #[serde(default)]
    pub sentences: Vec<String>,
}

impl ToolCommand {
    /// `argv` with every `{param}` replaced by its value in `args`; the error is the name of a
    /// parameter that `args` lacks.
    ///
    /// Each element stays one argument whatever the value holds: no shell is involved. Braces
    /// that do not enclose a parameter name (`{}`, `{print $1}`) are kept as they are.
    pub fn render_argv(&self, args: &BTreeMap<String, String>) -> Result<Vec<String>, String> {
        self.argv
            .iter()
            .map(|arg| {
                let mut out = String::with_capacity(arg.len());
                let mut rest = arg.as_str();
                while let Some((before, name, after)) = next_placeholder(rest) {
                    let value = args.get(name).ok_or_else(|| name.to_owned())?;
                    out.push_str(before);
                    out.push_str(value);
                    rest = after;
                }
                out.push_str(rest);
                Ok(out)
            })
            .collect()
    }

    /// The parameter names that `argv` refers to, in order of appearance, with repeats.
    pub fn placeholders(&self) -> impl Iterator<Item = &str> {
        self.argv.iter().flat_map(|arg| {
            std::iter::successors(next_placeholder(arg), |(_, _, after)| next_placeholder(after))
                .map(|(_, name, _)| name)
        })
    }
}

/// Whether `name` may be a parameter name: ASCII letters, digits and `_`, not starting with a digit.
pub(crate) fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Splits `s` at its first `{identifier}`: (text before, identifier, text after).
fn next_placeholder(s: &str) -> Option<(&str, &str, &str)> {
    let mut from = 0;
    while let Some(open) = s[from..].find('{').map(|i| i + from) {
        let after_open = &s[open + 1..];
        if let Some(close) = after_open.find('}') {
            let name = &after_open[..close];
            if is_identifier(name) {
                return Some((&s[..open], name, &after_open[close + 1..]));
            }
        }
        from = open + 1;
    }
    None
}

/// What running a tool can do to the world; the wire protocol's type, shared.
pub use stt_proto::SideEffect;

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(argv: &[&str]) -> ToolCommand {
        ToolCommand {
            name: "t".to_owned(),
            description: "d".to_owned(),
            argv: argv.iter().map(|s| (*s).to_owned()).collect(),
            side_effect: SideEffect::ReadOnly,
            requires_confirmation: false,
            parameters: BTreeMap::new(),
            sentences: Vec::new(),
        }
    }

    #[test]
    fn render_argv_substitutes_whole_and_embedded_placeholders() {
        let t = tool(&["echo", "{msg}", "--level={level}%", "{}", "{print $1}", "{msg}{msg}"]);
        let args: BTreeMap<String, String> =
            [("msg", "a b; rm -rf ~"), ("level", "40")].map(|(k, v)| (k.into(), v.into())).into();
        assert_eq!(
            t.render_argv(&args).unwrap(),
            [
                "echo",
                "a b; rm -rf ~",
                "--level=40%",
                "{}",
                "{print $1}",
                "a b; rm -rf ~a b; rm -rf ~"
            ]
        );
    }

    #[test]
    fn render_argv_names_the_missing_argument() {
        let t = tool(&["say", "{text}"]);
        assert_eq!(t.render_argv(&BTreeMap::new()).unwrap_err(), "text");
    }

    #[test]
    fn placeholders_lists_names_in_order() {
        let t = tool(&["x", "{a}-{b}", "{ c }", "{a}", "{{d}}"]);
        assert_eq!(t.placeholders().collect::<Vec<_>>(), ["a", "b", "a", "d"]);
    }
}
