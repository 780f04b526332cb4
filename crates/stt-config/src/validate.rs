//! Checks beyond types: values that parse but cannot work (a zero-sized queue, a ratio above 1,
//! a reply budget larger than the context window, a tool without a program).
//!
//! Only the obvious mistakes are caught; each message quotes the value and says what to set.

use std::collections::BTreeSet;

use crate::key::KeyPath;
use crate::sections::{
    AsrBackend, AssistantConfig, Config, DaemonConfig, DictateConfig, EndOfTurn, LLM_PROVIDERS,
    LlmConfig, MemoryConfig, PlannerConfig, SideEffect, SpeakersConfig, ToolsConfig, TriageConfig,
    TuiConfig, VadEngine, VoiceConfig, WakeConfig, is_identifier,
};

/// The first problem found: the key to blame, other keys involved (used to find a line when
/// the blamed key is not in the file), and the message.
#[derive(Debug)]
pub(crate) struct Problem {
    pub(crate) key: KeyPath,
    pub(crate) also: Vec<KeyPath>,
    pub(crate) message: String,
}

type Checked = Result<(), Problem>;

fn problem(key: KeyPath, message: String) -> Problem {
    Problem { key, also: Vec::new(), message }
}

/// Checks every section of `config`.
pub(crate) fn check(config: &Config) -> Checked {
    daemon(&config.daemon)?;
    assistant(&config.assistant)?;
    llm(&config.llm)?;
    triage(&config.triage)?;
    speakers(&config.speakers)?;
    voice(&config.voice)?;
    wake(&config.wake)?;
    memory(&config.memory)?;
    planner(&config.planner)?;
    dictate(&config.dictate)?;
    tui(&config.tui)?;
    tools(&config.tools)?;
    Ok(())
}

/// `value` must be at least 1.
fn positive(section: &str, key: &str, value: u64, default: u64) -> Checked {
    if value == 0 {
        return Err(problem(
            KeyPath::new(section, key),
            format!("0 cannot work: set it to 1 or more (default {default})"),
        ));
    }
    Ok(())
}

/// `value` must lie in `low..=high`, excluding `low` when `low_open` (NaN never does).
fn fraction(section: &str, key: &str, value: f64, low_open: bool, default: f64) -> Checked {
    let ok = if low_open { value > 0.0 && value <= 1.0 } else { (0.0..=1.0).contains(&value) };
    if !ok {
        let range = if low_open { "above 0 and at most 1" } else { "between 0 and 1" };
        return Err(problem(
            KeyPath::new(section, key),
            format!("{value} is out of range: set a value {range} (default {default})"),
        ));
    }
    Ok(())
}

fn daemon(c: &DaemonConfig) -> Checked {
    let d = DaemonConfig::default();
    if c.model.as_os_str().is_empty() {
        return Err(problem(
            KeyPath::new("daemon", "model"),
            format!("is empty: name a whisper GGML model file, e.g. \"{}\"", d.model.display()),
        ));
    }
    if c.language.trim().is_empty() {
        return Err(problem(
            KeyPath::new("daemon", "language"),
            "is empty: set a language code such as \"en\", or \"auto\" to detect it".to_owned(),
        ));
    }
    positive("daemon", "threads", c.threads.into(), d.threads.into())?;
    if c.asr == AsrBackend::Remote {
        let url = c.remote_url.trim();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(Problem {
                key: KeyPath::new("daemon", "remote_url"),
                also: vec![KeyPath::new("daemon", "asr")],
                message: format!(
                    "\"{url}\" is not an http:// or https:// URL, and asr = \"remote\" needs one: set the server's transcriptions URL, e.g. \"http://10.0.0.5:8080/v1/audio/transcriptions\", or asr = \"local\""
                ),
            });
        }
    }
    key(&KeyPath::new("daemon", "remote_key"), &c.remote_key)?;
    if c.remote_timeout_ms < 100 {
        return Err(problem(
            KeyPath::new("daemon", "remote_timeout_ms"),
            format!(
                "{} ms is too short for any server: set 100 or more (default {})",
                c.remote_timeout_ms, d.remote_timeout_ms
            ),
        ));
    }
    if c.vad == VadEngine::Silero && c.vad_model.as_os_str().is_empty() {
        return Err(problem(
            KeyPath::new("daemon", "vad_model"),
            format!(
                "is empty: name the Silero VAD model file, e.g. \"{}\", or set vad = \"earshot\"",
                d.vad_model.display()
            ),
        ));
    }
    if !(c.vad_threshold > 0.0 && c.vad_threshold < 1.0) {
        return Err(problem(
            KeyPath::new("daemon", "vad_threshold"),
            format!(
                "{} is out of range: set a probability above 0 and below 1 (default {})",
                c.vad_threshold, d.vad_threshold
            ),
        ));
    }
    if !(c.vad_gate_db >= 0.0 && c.vad_gate_db <= 40.0) {
        return Err(problem(
            KeyPath::new("daemon", "vad_gate_db"),
            format!(
                "{} is out of range: set 0 (no gate) to 40 dB above the noise floor (default {})",
                c.vad_gate_db, d.vad_gate_db
            ),
        ));
    }
    positive(
        "daemon",
        "vad_max_segment_s",
        c.vad_max_segment_s.into(),
        d.vad_max_segment_s.into(),
    )?;
    if u64::from(c.vad_min_speech_ms) >= u64::from(c.vad_max_segment_s) * 1000 {
        return Err(Problem {
            key: KeyPath::new("daemon", "vad_min_speech_ms"),
            also: vec![KeyPath::new("daemon", "vad_max_segment_s")],
            message: format!(
                "{} ms is not shorter than vad_max_segment_s ({} s), so every segment would be \
                 dropped: lower vad_min_speech_ms or raise vad_max_segment_s",
                c.vad_min_speech_ms, c.vad_max_segment_s
            ),
        });
    }
    positive(
        "daemon",
        "transcribe_queue_size",
        c.transcribe_queue_size.into(),
        d.transcribe_queue_size.into(),
    )?;
    positive("daemon", "heartbeat_interval_ms", c.heartbeat_interval_ms, d.heartbeat_interval_ms)?;
    if c.end_of_turn != EndOfTurn::Hangover
        && (c.end_of_turn_pause_ms < 100 || c.end_of_turn_pause_ms >= c.vad_hangover_ms)
    {
        return Err(Problem {
            key: KeyPath::new("daemon", "end_of_turn_pause_ms"),
            also: vec![KeyPath::new("daemon", "vad_hangover_ms")],
            message: format!(
                "{} ms must be at least 100 (whisper needs a moment of silence to read) and                  shorter than vad_hangover_ms ({} ms), which ends the turn anyway; default {},                  or end_of_turn = \"hangover\"",
                c.end_of_turn_pause_ms, c.vad_hangover_ms, d.end_of_turn_pause_ms
            ),
        });
    }
    if c.partial_interval_ms < 100 {
        return Err(problem(
            KeyPath::new("daemon", "partial_interval_ms"),
            format!(
                "{} ms is too short: a partial pass takes about 100 ms of whisper; set at least \
                 100 (default {}), or partials = false",
                c.partial_interval_ms, d.partial_interval_ms
            ),
        ));
    }
    if let Some(word) = c.vocabulary.iter().find(|w| w.trim().is_empty() || w.contains('\n')) {
        return Err(problem(
            KeyPath::new("daemon", "vocabulary"),
            format!("holds {word:?}: each entry is a word or a short phrase on one line"),
        ));
    }
    Ok(())
}

/// The longest `[assistant].settle_ms`.
const MAX_SETTLE_MS: u64 = 10_000;

fn assistant(c: &AssistantConfig) -> Checked {
    let d = AssistantConfig::default();
    positive(
        "assistant",
        "inference_queue_size",
        c.inference_queue_size.into(),
        d.inference_queue_size.into(),
    )?;
    positive(
        "assistant",
        "max_tool_iterations",
        c.max_tool_iterations.into(),
        d.max_tool_iterations.into(),
    )?;
    positive(
        "assistant",
        "confirmation_timeout_s",
        c.confirmation_timeout_s,
        d.confirmation_timeout_s,
    )?;
    positive("assistant", "max_tokens", c.max_tokens.into(), d.max_tokens.into())?;
    positive(
        "assistant",
        "command_answer_max_tokens",
        c.command_answer_max_tokens.into(),
        d.command_answer_max_tokens.into(),
    )?;
    if c.command_answer_max_tokens > c.max_tokens {
        return Err(Problem {
            key: KeyPath::new("assistant", "command_answer_max_tokens"),
            also: vec![KeyPath::new("assistant", "max_tokens")],
            message: format!(
                "command_answer_max_tokens ({}) is more than max_tokens ({}): lower it, or raise \
                 max_tokens",
                c.command_answer_max_tokens, c.max_tokens
            ),
        });
    }
    let reserved = u64::from(c.max_tokens) + u64::from(c.compaction_safety_margin);
    if reserved >= u64::from(c.max_context_tokens) {
        return Err(Problem {
            key: KeyPath::new("assistant", "max_tokens"),
            also: vec![
                KeyPath::new("assistant", "max_context_tokens"),
                KeyPath::new("assistant", "compaction_safety_margin"),
            ],
            message: format!(
                "max_tokens ({}) + compaction_safety_margin ({}) leaves no room for the prompt in \
                 max_context_tokens ({}): lower max_tokens or raise max_context_tokens to the \
                 model's real context size",
                c.max_tokens, c.compaction_safety_margin, c.max_context_tokens
            ),
        });
    }
    fraction(
        "assistant",
        "compaction_trigger_ratio",
        c.compaction_trigger_ratio,
        true,
        d.compaction_trigger_ratio,
    )?;
    positive(
        "assistant",
        "compaction_max_tokens",
        c.compaction_max_tokens.into(),
        d.compaction_max_tokens.into(),
    )?;
    positive(
        "assistant",
        "trim_block_turns",
        c.trim_block_turns.into(),
        d.trim_block_turns.into(),
    )?;
    positive("assistant", "stt_stale_after_ms", c.stt_stale_after_ms, d.stt_stale_after_ms)?;
    if c.settle_ms > MAX_SETTLE_MS {
        return Err(problem(
            KeyPath::new("assistant", "settle_ms"),
            format!(
                "is {}: at most {MAX_SETTLE_MS} (a turn waiting longer for more words would look \
                 lost); the default is {}",
                c.settle_ms, d.settle_ms
            ),
        ));
    }
    positive(
        "assistant",
        "chat_session_ttl_hours",
        c.chat_session_ttl_hours.into(),
        d.chat_session_ttl_hours.into(),
    )
}

fn llm(c: &LlmConfig) -> Checked {
    let d = LlmConfig::default();
    let here = |key: &str| KeyPath::new("llm", key);
    if !c.provider.is_empty() {
        known_provider(&here("provider"), &c.provider)?;
    }
    let cli = matches!(c.provider.as_str(), "claude" | "codex" | "gemini" | "opencode");
    endpoint(&here("endpoint"), &c.endpoint, cli)?;
    key(&here("key"), &c.key)?;
    for (index, id) in c.priority.iter().enumerate() {
        known_provider(&here("priority").index(index), id)?;
    }
    for (id, p) in &c.providers {
        let table = here("providers").key(id);
        known_provider(&table, id)?;
        let cli = matches!(id.as_str(), "claude" | "codex" | "gemini" | "opencode");
        endpoint(&table.key("endpoint"), &p.endpoint, cli)?;
        key(&table.key("key"), &p.key)?;
    }
    positive("llm", "local_port", c.local_port.into(), d.local_port.into())?;
    positive("llm", "connect_timeout_s", c.connect_timeout_s, d.connect_timeout_s)?;
    positive("llm", "request_timeout_s", c.request_timeout_s, d.request_timeout_s)?;
    if !(0.0..=2.0).contains(&c.temperature) {
        return Err(problem(
            here("temperature"),
            format!(
                "{} is out of range: set a value from 0 to 2 (default {})",
                c.temperature, d.temperature
            ),
        ));
    }
    Ok(())
}

/// `id` must be a provider stt knows.
fn known_provider(at: &KeyPath, id: &str) -> Checked {
    if LLM_PROVIDERS.contains(&id) {
        return Ok(());
    }
    Err(problem(
        at.clone(),
        format!("\"{id}\" is not a provider stt knows: use one of {}", LLM_PROVIDERS.join(", ")),
    ))
}

/// An endpoint is empty, an http(s) URL, or for a CLI provider its program.
fn endpoint(at: &KeyPath, value: &str, cli: bool) -> Checked {
    if value.is_empty() || cli || value.starts_with("http://") || value.starts_with("https://") {
        return Ok(());
    }
    Err(problem(
        at.clone(),
        format!(
            "\"{value}\" is not an http:// or https:// URL: set the full chat URL, e.g. \
             \"http://localhost:11434/v1/chat/completions\", or \"\" for the provider's default"
        ),
    ))
}

/// A key is `env:NAME`, or the key itself. The value is never quoted: it may be a key.
fn key(at: &KeyPath, value: &str) -> Checked {
    match value.trim().strip_prefix("env:") {
        Some(name) if !is_identifier(name.trim()) => Err(problem(
            at.clone(),
            "names no variable after env: — write env:NAME, e.g. \"env:OPENAI_API_KEY\"".to_owned(),
        )),
        _ => Ok(()),
    }
}

fn triage(c: &TriageConfig) -> Checked {
    let d = TriageConfig::default();
    positive("triage", "window", c.window.into(), d.window.into())?;
    if c.enabled && c.model.as_os_str().is_empty() {
        return Err(problem(
            KeyPath::new("triage", "model"),
            format!(
                "is empty while triage is enabled: name the sentence-embedding model, e.g. \"{}\"",
                d.model.display()
            ),
        ));
    }
    fraction("triage", "escalate_threshold", c.escalate_threshold, true, d.escalate_threshold)
}

fn voice(c: &VoiceConfig) -> Checked {
    if c.model.as_os_str().is_empty() {
        return Err(problem(
            KeyPath::new("voice", "model"),
            format!(
                "is empty: name a Piper voice, e.g. \"{}\"",
                VoiceConfig::default().model.display()
            ),
        ));
    }
    Ok(())
}

fn wake(c: &WakeConfig) -> Checked {
    let d = WakeConfig::default();
    let phrase = c.phrase.trim();
    let named = phrase.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-');
    if phrase.is_empty() || !named {
        return Err(problem(
            KeyPath::new("wake", "phrase"),
            format!(
                "{:?} is not a phrase: set \"enrolled\" (your own) or a head's name, e.g. \
                 \"hey_jarvis\" (letters, digits, _ and -)",
                c.phrase
            ),
        ));
    }
    fraction("wake", "threshold", c.threshold, false, d.threshold)?;
    if !matches!(c.action.as_str(), "command" | "chat") {
        return Err(problem(
            KeyPath::new("wake", "action"),
            format!("{:?} is not an action: set \"command\" or \"chat\"", c.action),
        ));
    }
    for (key, value, default) in [
        ("words_wait_s", c.words_wait_s, d.words_wait_s),
        ("follow_up_s", c.follow_up_s, d.follow_up_s),
    ] {
        if !(0.0..=600.0).contains(&value) {
            return Err(problem(
                KeyPath::new("wake", key),
                format!("{value} is out of range: set 0 to 600 seconds (default {default})"),
            ));
        }
    }
    Ok(())
}

fn speakers(c: &SpeakersConfig) -> Checked {
    let d = SpeakersConfig::default();
    if c.enabled && c.model.as_os_str().is_empty() {
        return Err(problem(
            KeyPath::new("speakers", "model"),
            format!(
                "is empty while speakers are enabled: name the embedding model, e.g. \"{}\"",
                d.model.display()
            ),
        ));
    }
    fraction("speakers", "match_threshold", c.match_threshold, true, d.match_threshold)?;
    fraction(
        "speakers",
        "uncertain_threshold",
        c.uncertain_threshold,
        true,
        d.uncertain_threshold,
    )?;
    if c.uncertain_threshold > c.match_threshold {
        return Err(Problem {
            key: KeyPath::new("speakers", "uncertain_threshold"),
            also: vec![KeyPath::new("speakers", "match_threshold")],
            message: format!(
                "{} is above match_threshold ({}): the uncertain band lies below a match, so set \
                 uncertain_threshold no higher than match_threshold",
                c.uncertain_threshold, c.match_threshold
            ),
        });
    }
    for (key, value, default) in [
        ("min_segment_s", c.min_segment_s, d.min_segment_s),
        ("confirm_s", c.confirm_s, d.confirm_s),
    ] {
        if !(value >= 0.0 && value.is_finite()) {
            return Err(problem(
                KeyPath::new("speakers", key),
                format!("{value} is not a duration: set 0 or more seconds (default {default})"),
            ));
        }
    }
    positive("speakers", "max_speakers", c.max_speakers.into(), d.max_speakers.into())
}

fn memory(c: &MemoryConfig) -> Checked {
    let d = MemoryConfig::default();
    positive("memory", "recall_top_k", c.recall_top_k.into(), d.recall_top_k.into())?;
    fraction("memory", "recall_min_score", c.recall_min_score, false, d.recall_min_score)?;
    positive("memory", "dream_max_interval_h", c.dream_max_interval_h, d.dream_max_interval_h)?;
    positive(
        "memory",
        "dream_min_sessions",
        c.dream_min_sessions.into(),
        d.dream_min_sessions.into(),
    )?;
    positive("memory", "dream_max_steps", c.dream_max_steps.into(), d.dream_max_steps.into())?;
    if c.tree_compress == 0 || c.tree_compress >= c.tree_raw_max {
        return Err(problem(
            KeyPath::new("memory", "tree_compress"),
            format!(
                "{} must be at least 1 and less than tree_raw_max ({}), so the buffer keeps \
                 some messages (default {} of {})",
                c.tree_compress, c.tree_raw_max, d.tree_compress, d.tree_raw_max
            ),
        ));
    }
    if c.tree_fanout_max < 4 {
        return Err(problem(
            KeyPath::new("memory", "tree_fanout_max"),
            format!(
                "{} cannot build a tree: set 4 or more (default {})",
                c.tree_fanout_max, d.tree_fanout_max
            ),
        ));
    }
    Ok(())
}

fn dictate(c: &DictateConfig) -> Checked {
    let key = c.paste_key.trim();
    let parts: Vec<&str> = key.split('+').map(str::trim).collect();
    let (last, mods) = parts.split_last().unwrap_or((&"", &[]));
    let known = ["ctrl", "shift", "alt", "super"];
    if last.is_empty() || mods.iter().any(|m| !known.contains(&m.to_lowercase().as_str())) {
        return Err(problem(
            KeyPath::new("dictate", "paste_key"),
            format!(
                "\"{key}\" is not a key to press: write modifiers (ctrl, shift, alt, super) and a key joined by +, e.g. \"ctrl+v\", \"ctrl+shift+v\" or \"shift+Insert\""
            ),
        ));
    }
    Ok(())
}

fn planner(c: &PlannerConfig) -> Checked {
    c.dnd_minutes().map(|_| ()).map_err(|why| problem(KeyPath::new("planner", "dnd"), why))
}

fn tui(c: &TuiConfig) -> Checked {
    positive("tui", "max_lines", c.max_lines.into(), TuiConfig::default().max_lines.into())
}

fn tools(c: &ToolsConfig) -> Checked {
    let url = c.search_url.trim();
    if !(url.is_empty() || url.starts_with("http://") || url.starts_with("https://")) {
        return Err(problem(
            KeyPath::new("tools", "search_url"),
            format!(
                "\"{url}\" is not an http:// or https:// URL: give the search endpoint, e.g. \"http://127.0.0.1:8888/search\", or \"\" for none"
            ),
        ));
    }
    let mut names = BTreeSet::new();
    for (i, tool) in c.command.iter().enumerate() {
        let at = KeyPath::new("tools", "command").index(i);
        let valid_name = !tool.name.is_empty()
            && tool.name.len() <= 64
            && tool.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid_name {
            return Err(problem(
                at.key("name"),
                format!(
                    "{:?} is not a tool name: use 1 to 64 ASCII letters, digits, '_' or '-'",
                    tool.name
                ),
            ));
        }
        if !names.insert(tool.name.as_str()) {
            return Err(problem(
                at.key("name"),
                format!("\"{}\" names an earlier tool too: give each tool its own name", tool.name),
            ));
        }
        if tool.description.trim().is_empty() {
            return Err(problem(
                at.key("description"),
                format!(
                    "tool \"{}\" has no description: say what it does, since the model picks \
                     tools by their description",
                    tool.name
                ),
            ));
        }
        if tool.argv.first().is_none_or(|program| program.is_empty()) {
            return Err(problem(
                at.key("argv"),
                format!(
                    "tool \"{}\" has no program: set argv to the program and its arguments, \
                     e.g. [\"notify-send\", \"{{text}}\"]",
                    tool.name
                ),
            ));
        }
        if let Some(param) = tool.parameters.keys().find(|p| !is_identifier(p)) {
            return Err(problem(
                at.key("parameters").key(param),
                format!(
                    "{param:?} is not a parameter name: use ASCII letters, digits and '_', not \
                     starting with a digit"
                ),
            ));
        }
        if let Some(name) = tool.placeholders().find(|p| !tool.parameters.contains_key(*p)) {
            return Err(problem(
                at.key("argv"),
                format!(
                    "tool \"{}\" uses {{{name}}} but declares no parameter '{name}': add \
                     parameters.{name} = \"what it is\", or remove the placeholder",
                    tool.name
                ),
            ));
        }
        if tool.side_effect == SideEffect::Destructive && !tool.requires_confirmation {
            return Err(Problem {
                key: at.key("requires_confirmation"),
                also: vec![at.key("side_effect"), at],
                message: format!(
                    "tool \"{}\" is destructive, so a misheard word could run it: set \
                     requires_confirmation = true",
                    tool.name
                ),
            });
        }
    }
    Ok(())
}
