//! The stt configuration: one TOML file read by every process, and the directories they share.
//!
//! The file is `$XDG_CONFIG_HOME/stt/config.toml` (else `~/.config/stt/config.toml`), or the
//! path given with `--config`. Its sections are `[daemon]`, `[assistant]`, `[llm]`, `[triage]`,
//! `[speakers]`, `[voice]`, `[wake]`, `[memory]`, `[planner]`, `[dictate]`, `[tui]` and `[tools]`; every key has a default, so a
//! missing file or a partial one is fine. [`DEFAULT_CONFIG_TOML`] is the complete file with
//! every key documented (`stt-ctl config-default` prints it), and a test keeps it equal to
//! [`Config::default`]. `[llm.providers.ID]` tables (one per model provider) are the only
//! keys that are not in it, since they are optional and named by the user.
//!
//! Loading is strict: an unknown key, a value of the wrong type, or a value that cannot work
//! (a zero-sized queue, a reply budget larger than the context window) is a [`ConfigError`]
//! that names the file, the line, the key and the fix.
//!
//! ```
//! # use std::path::Path;
//! let cfg = stt_config::Config::parse("[llm]\nenabled = false\n", Path::new("config.toml"))?;
//! assert!(!cfg.llm.enabled);
//! assert_eq!(cfg.assistant.max_tokens, 512);
//! # Ok::<(), stt_config::ConfigError>(())
//! ```
//!
//! Modules, in reading order:
//! - `sections`: [`Config`] and one struct per section, with their defaults.
//! - `parse`: text to [`Config`]; maps serde's byte spans to key paths and lines.
//! - `validate`: the checks beyond types.
//! - [`dirs`]: the config file, data and runtime directories, and the socket paths.
//! - [`vocabulary`]: the user's words for whisper, from `[daemon].vocabulary` and the
//!   vocabulary file that `stt-ctl vocabulary` writes.
//! - `error`: [`ConfigError`].
//!
//! # Invariants
//!
//! Tests prove `default.toml` parses to `Config::default()` and has exactly the keys of the
//! structs, each with a comment, so a key cannot be added without its documentation. An API
//! key is best kept out of the file (`key = "env:NAME"`); a key written in a file others can
//! read gets a warning ([`literal_key_warning`]), and no error message quotes one. Sections
//! whose feature is not built yet refuse `enabled = true` rather than ignore it.

use std::path::Path;

pub mod dirs;
mod error;
mod key;
mod parse;
mod sections;
mod validate;
pub mod vocabulary;

pub use dirs::Env;
pub use error::ConfigError;
pub use sections::{
    AsrBackend, AssistantConfig, Config, DEFAULT_CHAT_SYSTEM_PROMPT, DEFAULT_COMMAND_SYSTEM_PROMPT,
    DEFAULT_COMPACTION_SYSTEM_PROMPT, DaemonConfig, DictateConfig, DictateMethod, EndOfTurn,
    IntentsConfig, LLM_PROVIDERS, LlmConfig, LlmProviderConfig, MemoryConfig, PlannerConfig,
    RemoteFallback, SideEffect, SpeakersConfig, ToolCommand, ToolsConfig, TriageConfig, TuiConfig,
    VadEngine, VoiceConfig, WakeConfig,
};

/// The complete default config file, every key present with a comment above it saying what it
/// does, its unit and its allowed values. Parsing it gives exactly [`Config::default`].
pub const DEFAULT_CONFIG_TOML: &str = include_str!("default.toml");

impl Config {
    /// Parses and validates the text of a config file; `origin` is the path named in errors.
    ///
    /// Pure: reads nothing but `text`.
    pub fn parse(text: &str, origin: &Path) -> Result<Self, ConfigError> {
        parse::parse(text, origin)
    }

    /// Loads the config file: `explicit` (from `--config`) if given, else the default location.
    ///
    /// A missing file at the default location means all defaults; a missing file named
    /// explicitly is an error, since the user asked for that file.
    pub fn load(explicit: Option<&Path>) -> Result<Self, ConfigError> {
        Self::load_with(explicit, &Env::from_process())
    }

    /// [`Config::load`], finding the default location in `env`.
    pub fn load_with(explicit: Option<&Path>, env: &Env) -> Result<Self, ConfigError> {
        let path = match explicit {
            Some(path) => path.to_owned(),
            None => dirs::config_file_with(env)?,
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => Self::parse(&text, &path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match explicit {
                Some(_) => Err(ConfigError::NotFound { path }),
                None => Ok(Self::default()),
            },
            Err(source) => Err(ConfigError::Read { path, source }),
        }
    }
}

/// A warning when `config` holds an API key itself (not `env:NAME`) and the file at `path`
/// can be read by other users: it names the file and the fix.
pub fn literal_key_warning(config: &Config, path: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let literal = |key: &str| !key.trim().is_empty() && !key.trim().starts_with("env:");
    let holds_key =
        literal(&config.llm.key) || config.llm.providers.values().any(|p| literal(&p.key));
    let mode = std::fs::metadata(path).ok()?.permissions().mode();
    (holds_key && mode & 0o044 != 0).then(|| {
        format!(
            "{} holds an API key and other users can read it (mode {:o}): run `chmod 600 {}`, \
             or better, put the key in an environment variable and write key = \"env:NAME\"",
            path.display(),
            mode & 0o777,
            path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::PathBuf;

    use super::*;

    /// Parses `input` as `config.toml` and asserts the error contains every `expected` piece.
    fn check(input: &str, expected: &[&str]) {
        let err = match Config::parse(input, Path::new("config.toml")) {
            Ok(_) => panic!("expected an error containing {expected:?} for:\n{input}"),
            Err(e) => e.to_string(),
        };
        for piece in expected {
            assert!(err.contains(piece), "error {err:?} lacks {piece:?} for:\n{input}");
        }
    }

    fn parse_ok(input: &str) -> Config {
        Config::parse(input, Path::new("config.toml"))
            .unwrap_or_else(|e| panic!("expected {input:?} to parse, got: {e}"))
    }

    #[test]
    fn default_file_parses_to_the_default_config() {
        assert_eq!(parse_ok(DEFAULT_CONFIG_TOML), Config::default());
    }

    /// Every dotted path to a non-table value.
    fn leaf_keys(prefix: &str, value: &toml::Value, out: &mut BTreeSet<String>) {
        match value {
            toml::Value::Table(table) => {
                for (k, v) in table {
                    let path = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                    leaf_keys(&path, v, out);
                }
            }
            _ => {
                out.insert(prefix.to_owned());
            }
        }
    }

    #[test]
    fn default_file_documents_exactly_the_config_keys() {
        let mut in_file = BTreeSet::new();
        leaf_keys("", &toml::from_str(DEFAULT_CONFIG_TOML).unwrap(), &mut in_file);
        let mut in_struct = BTreeSet::new();
        leaf_keys("", &toml::Value::try_from(Config::default()).unwrap(), &mut in_struct);
        assert_eq!(in_file, in_struct);
    }

    #[test]
    fn every_key_in_the_default_file_has_a_comment_above_it() {
        let mut previous = "";
        let mut in_string = false;
        for (i, line) in DEFAULT_CONFIG_TOML.lines().enumerate() {
            let starts_key = !in_string
                && !line.starts_with('#')
                && !line.starts_with('[')
                && line.contains(" = ");
            if starts_key {
                assert!(previous.starts_with("# "), "line {}: {line:?} has no comment", i + 1);
            }
            if line.matches("\"\"\"").count() % 2 == 1 {
                in_string = !in_string;
            }
            previous = line;
        }
    }

    /// The example `[[tools.command]]` in the default file: lines between the markers with the
    /// leading "# " removed (comment lines inside it keep their own "#").
    fn tools_example() -> String {
        let start = DEFAULT_CONFIG_TOML.find("# BEGIN EXAMPLE\n").unwrap();
        let end = DEFAULT_CONFIG_TOML.find("# END EXAMPLE").unwrap();
        DEFAULT_CONFIG_TOML[start..end]
            .lines()
            .skip(1)
            .map(|line| line.strip_prefix("# ").unwrap_or(line))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn default_file_tools_example_parses_and_names_every_tool_key() {
        let cfg = parse_ok(&tools_example());
        let [tool] = cfg.tools.command.as_slice() else { panic!("one tool expected") };
        assert_eq!(tool.name, "notify");
        assert_eq!(tool.side_effect, SideEffect::Local);

        let value = toml::Value::try_from(tool.clone()).unwrap();
        let example = toml::from_str::<toml::Table>(&tools_example()).unwrap();
        let written = example["tools"]["command"][0].as_table().unwrap();
        let expected: BTreeSet<_> = value.as_table().unwrap().keys().collect();
        assert_eq!(written.keys().collect::<BTreeSet<_>>(), expected);
    }

    #[test]
    fn partial_files_keep_other_defaults() {
        let cfg = parse_ok("[assistant]\nrequire_viewer = true\n\n[tui]\nmax_lines = 10\n");
        let mut expected = Config::default();
        expected.assistant.require_viewer = true;
        expected.tui.max_lines = 10;
        assert_eq!(cfg, expected);
        assert_eq!(parse_ok(""), Config::default());
    }

    #[test]
    fn valid_configs_parse() {
        let table = [
            "[daemon]\nlanguage = \"auto\"\nbeam_size = 5\nsocket = \"/run/x.sock\"\n",
            "[daemon]\nvad = \"earshot\"\nvad_model = \"\"\n",
            "[daemon]\nvad_model = \"~/vad.onnx\"\n",
            "assistant.max_context_tokens = 8192\nassistant.max_tokens = 2048\n",
            "[assistant]\ncompaction_trigger_ratio = 1.0\ncompaction_keep_turns = 0\n",
            "[llm]\nenabled = false\nendpoint = \"\"\n",
            "[llm]\nkey = \"env:OPENAI_API_KEY\"\ntemperature = 0\n",
            "[llm]\nprovider = \"ollama\"\npriority = [\"claude\", \"llamacpp\"]\nfailover = true\n",
            "[llm.providers.ollama]\nendpoint = \"http://gpu:11434/v1/chat/completions\"\nmodel = \"qwen2.5\"\n\
             [llm.providers.claude]\nendpoint = \"/opt/claude/bin/claude\"\nmodels = [\"opus\"]\n",
            "[speakers]\nenabled = false\nmatch_threshold = 0.8\nuncertain_threshold = 0.8\n",
            "[memory]\ndb = \"~/mem.sqlite\"\nrecall_min_score = 0\n",
            "[[tools.command]]\nname = \"wipe_notes\"\ndescription = \"Delete all notes.\"\n\
             argv = [\"rm\", \"-r\", \"/home/u/notes\"]\nside_effect = \"destructive\"\n\
             requires_confirmation = true\n",
            "[[tools.command]]\nname = \"a\"\ndescription = \"x\"\nargv = [\"awk\", \"{print $1}\"]\n\
             side_effect = \"read_only\"\n",
        ];
        for input in table {
            parse_ok(input);
        }
    }

    #[test]
    fn every_feature_is_built_and_may_be_turned_on() {
        parse_ok("[triage]\nenabled = true\n");
        parse_ok("[speakers]\nenabled = true\n");
        parse_ok("[voice]\nenabled = true\n");
        check("[triage]\nenabled = true\nmodel = \"\"\n", &[":3:", "triage.model", "minilm-l6-v2"]);
    }

    #[test]
    fn do_not_disturb_hours_are_a_span_of_local_times() {
        let dnd = |text: &str| PlannerConfig { dnd: text.into(), ..PlannerConfig::default() };
        assert_eq!(PlannerConfig::default().dnd_minutes(), Ok(Some((22 * 60, 8 * 60))));
        assert_eq!(dnd(" 13:05 - 14:30 ").dnd_minutes(), Ok(Some((785, 870))));
        assert_eq!(dnd("").dnd_minutes(), Ok(None));
        for bad in ["22-08", "24:00-08:00", "22:60-08:00", "22:00", "22:0-08:00", "nine-five"] {
            let why = dnd(bad).dnd_minutes().unwrap_err();
            assert!(why.contains("HH:MM-HH:MM"), "{bad}: {why}");
        }
        assert!(dnd("08:00-08:00").dnd_minutes().unwrap_err().contains("same minute"));
        check("[planner]\ndnd = \"10pm-8am\"\n", &[":2:", "planner.dnd", "22:00-08:00"]);
    }

    #[test]
    fn remote_speech_recognition_needs_a_url_and_a_key_by_name() {
        let cfg = parse_ok(
            "[daemon]\nasr = \"remote\"\nremote_url = \"http://10.0.0.5:8080/v1/audio/transcriptions\"\nremote_key = \"env:STT_ASR_KEY\"\n",
        );
        assert_eq!(cfg.daemon.asr, AsrBackend::Remote);
        assert_eq!(cfg.daemon.remote_fallback, RemoteFallback::Local);
        check("[daemon]\nasr = \"remote\"\n", &["daemon.remote_url", "transcriptions URL"]);
        check("[daemon]\nremote_key = \"env:\"\n", &[":2:", "daemon.remote_key", "env:NAME"]);
        check("[daemon]\nremote_timeout_ms = 5\n", &[":2:", "100 or more"]);
    }

    #[test]
    fn dictation_takes_a_method_and_a_paste_key() {
        let cfg = parse_ok("[dictate]\nmethod = \"clipboard\"\npaste_key = \"ctrl+shift+v\"\n");
        assert_eq!(cfg.dictate.method, DictateMethod::Clipboard);
        check("[dictate]\nmethod = \"keyboard\"\n", &[":2:", "dictate.method", "wtype"]);
        check("[dictate]\npaste_key = \"hyper+v\"\n", &[":2:", "dictate.paste_key", "ctrl+v"]);
    }

    #[test]
    fn unknown_keys_name_the_key_the_line_and_the_choices() {
        check(
            "# comment\n\n[assistant]\nmax_tokens = 100\nrequir_viewer = true\n",
            &[
                "config.toml:5:",
                "unknown key 'assistant.requir_viewer'",
                "did you mean 'require_viewer'?",
                "expected one of: socket, require_viewer,",
            ],
        );
        check("[asistant]\n", &["config.toml:1:", "unknown key 'asistant'", "'assistant'"]);
        check("[llm]\ntimeout_s = 3\n", &["config.toml:2:", "unknown key 'llm.timeout_s'"]);
        check("tui = { mouse = true, colour = 1 }\n", &["config.toml:1:", "'tui.colour'"]);
        check(
            "[[tools.command]]\nname = \"a\"\ndescription = \"d\"\nargv = [\"x\"]\n\
             side_effect = \"local\"\nconfirm = true\n",
            &["config.toml:6:", "unknown key 'tools.command[0].confirm'"],
        );
    }

    #[test]
    fn wrong_types_name_the_key_and_the_line() {
        check(
            "[llm]\nendpoint = \"http://x\"\nrequest_timeout_s = \"x\"\n",
            &["config.toml:3:", "key 'llm.request_timeout_s'", "invalid type: string \"x\""],
        );
        check("[daemon]\nthreads = -1\n", &["config.toml:2:", "key 'daemon.threads'"]);
        check("[tui]\nmouse = \"yes\"\n", &["config.toml:2:", "key 'tui.mouse'", "bool"]);
        check("daemon = 3\n", &["config.toml:1:", "key 'daemon'", "expected a table"]);
        check("[daemon]\nvad_threshold = \"high\"\n", &[":2:", "daemon.vad_threshold"]);
        check("[daemon]\nvad = \"webrtc\"\n", &[":2:", "daemon.vad", "silero", "earshot"]);
        check(
            "[[tools.command]]\nname = \"a\"\ndescription = \"d\"\nargv = \"x\"\nside_effect = \"local\"\n",
            &["config.toml:4:", "key 'tools.command[0].argv'", "sequence"],
        );
        check(
            "[[tools.command]]\nname = \"a\"\ndescription = \"d\"\nargv = [\"x\"]\nside_effect = \"risky\"\n",
            &["config.toml:5:", "tools.command[0].side_effect", "read_only", "destructive"],
        );
        check(
            "[[tools.command]]\nname = \"a\"\ndescription = \"d\"\nside_effect = \"local\"\n",
            &["config.toml:1:", "key 'tools.command[0].argv'", "required key is missing"],
        );
    }

    #[test]
    fn syntax_errors_name_the_line() {
        check("[daemon]\nthreads = \n", &["config.toml:2:", "key 'daemon.threads'", "quoted"]);
        check("[daemon]\n[daemon]\n", &["config.toml:2:", "duplicate key 'daemon'"]);
        check("[daemon\n", &["config.toml:1:", "unclosed table"]);
        check("[tools]\ncommand = []\n[[tools.command]]\n", &[":3:", "duplicate key 'command'"]);
        check("[tui]\nmouse = true\nmouse = false\n", &["config.toml:3:", "duplicate key 'mouse'"]);
    }

    #[test]
    fn nonsense_values_name_the_key_and_the_fix() {
        check(
            "[assistant]\ninference_queue_size = 0\n",
            &["config.toml:2:", "key 'assistant.inference_queue_size'", "1 or more", "default 8"],
        );
        check(
            "[assistant]\n\ncompaction_trigger_ratio = 1.5\n",
            &["config.toml:3:", "assistant.compaction_trigger_ratio", "1.5", "at most 1"],
        );
        check(
            "[assistant]\ncompaction_trigger_ratio = 0.0\n",
            &["compaction_trigger_ratio", "above 0"],
        );
        check(
            "[assistant]\ncompaction_trigger_ratio = nan\n",
            &["compaction_trigger_ratio", "NaN"],
        );
        check(
            "[assistant]\nmax_tokens = 4000\n",
            &[
                "config.toml:2:",
                "key 'assistant.max_tokens'",
                "max_context_tokens (4096)",
                "lower max_tokens",
            ],
        );
        // The blamed key is not in the file, so the line comes from the one that is.
        check(
            "[assistant]\n# small model\nmax_context_tokens = 512\n",
            &["config.toml:3:", "key 'assistant.max_tokens'", "max_context_tokens (512)"],
        );
        check("[daemon]\nthreads = 0\n", &[":2:", "daemon.threads"]);
        check("[daemon]\nvad_threshold = 1.0\n", &[":2:", "daemon.vad_threshold", "below 1"]);
        check("[daemon]\nvad_gate_db = -3.0\n", &[":2:", "daemon.vad_gate_db", "0 (no gate)"]);
        check("[daemon]\nmodel = \"\"\n", &[":2:", "daemon.model", "ggml-tiny.en-q8_0.bin"]);
        check("[daemon]\nvad_model = \"\"\n", &[":2:", "daemon.vad_model", "silero_vad.onnx"]);
        check("[daemon]\nlanguage = \" \"\n", &[":2:", "daemon.language", "\"auto\""]);
        check(
            "[daemon]\nvad_max_segment_s = 1\nvad_min_speech_ms = 1000\n",
            &[":3:", "daemon.vad_min_speech_ms", "raise vad_max_segment_s"],
        );
        check("[daemon]\ntranscribe_queue_size = 0\n", &["daemon.transcribe_queue_size"]);
        check("[daemon]\nheartbeat_interval_ms = 0\n", &["daemon.heartbeat_interval_ms"]);
        check(
            "[daemon]\npartial_interval_ms = 50\n",
            &["daemon.partial_interval_ms", "partials = false"],
        );
        check("[daemon]\nvocabulary = [\"Efren\", \" \"]\n", &["daemon.vocabulary", "\" \""]);
        check(
            "[daemon]\nend_of_turn_pause_ms = 500\n",
            &["daemon.end_of_turn_pause_ms", "vad_hangover_ms (500 ms)", "\"hangover\""],
        );
        check("[daemon]\nend_of_turn_pause_ms = 50\n", &["daemon.end_of_turn_pause_ms"]);
        check("[daemon]\nend_of_turn = \"model\"\n", &["daemon.end_of_turn", "hangover"]);
        check("[assistant]\nmax_tool_iterations = 0\n", &["assistant.max_tool_iterations"]);
        check("[assistant]\ntrim_block_turns = 0\n", &["assistant.trim_block_turns"]);
        check(
            "[llm]\nendpoint = \"localhost:9931\"\n",
            &[":2:", "llm.endpoint", "\"localhost:9931\"", "http://"],
        );
        check("[llm]\nrequest_timeout_s = 0\n", &[":2:", "llm.request_timeout_s"]);
        check("[llm]\ntemperature = 3.0\n", &[":2:", "llm.temperature", "0 to 2"]);
        check("[triage]\nwindow = 0\n", &[":2:", "triage.window"]);
        check("[voice]\nmodel = \"\"\n", &[":2:", "voice.model", "piper/en_US-joe-medium.onnx"]);
        check("[triage]\nescalate_threshold = 0\n", &[":2:", "triage.escalate_threshold"]);
        check(
            "[speakers]\nmatch_threshold = 0.6\nuncertain_threshold = 0.7\n",
            &[":3:", "speakers.uncertain_threshold", "no higher than match_threshold"],
        );
        check("[speakers]\nmin_segment_s = -1.0\n", &[":2:", "speakers.min_segment_s"]);
        check("[wake]\nphrase = \"hey jarvis\"\n", &[":2:", "wake.phrase", "enrolled"]);
        check("[wake]\nthreshold = 1.5\n", &[":2:", "wake.threshold"]);
        check("[wake]\naction = \"talk\"\n", &[":2:", "wake.action", "\"chat\""]);
        check("[wake]\nfollow_up_s = -1.0\n", &[":2:", "wake.follow_up_s"]);
        check("[speakers]\nconfirm_s = nan\n", &[":2:", "speakers.confirm_s"]);
        check("[memory]\ntree_fanout_max = 3\n", &[":2:", "memory.tree_fanout_max", "4 or more"]);
        check(
            "[memory]\ntree_raw_max = 6\ntree_compress = 6\n",
            &[":3:", "memory.tree_compress", "less than tree_raw_max (6)"],
        );
        check("[memory]\nrecall_min_score = 2.0\n", &[":2:", "memory.recall_min_score"]);
        check("[tui]\nmax_lines = 0\n", &[":2:", "tui.max_lines"]);
    }

    #[test]
    fn keys_and_providers_are_checked_without_quoting_a_key() {
        let input = "[llm]\nkey = \"env:sk-abc123secret\"\n";
        check(input, &[":2:", "llm.key", "env:NAME"]);
        let err = Config::parse(input, Path::new("c")).unwrap_err().to_string();
        assert!(!err.contains("sk-abc123secret"), "{err}");
        check("[llm]\nprovider = \"chatgpt\"\n", &[":2:", "llm.provider", "ollama"]);
        check("[llm]\npriority = [\"ollama\", \"x\"]\n", &[":2:", "llm.priority[1]", "claude"]);
        check(
            "[llm.providers.olama]\nmodel = \"m\"\n",
            &["llm.providers.olama", "not a provider stt knows"],
        );
        check(
            "[llm.providers.ollama]\nendpoint = \"localhost:11434\"\n",
            &[":2:", "llm.providers.ollama.endpoint", "http://"],
        );
    }

    #[test]
    fn a_literal_key_in_a_file_others_can_read_is_warned_about() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let text = "[llm]\nkey = \"sk-literal\"\n";
        std::fs::write(&path, text).unwrap();
        let config = Config::parse(text, &path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let warning = literal_key_warning(&config, &path).unwrap();
        assert!(warning.contains(&path.display().to_string()), "{warning}");
        assert!(warning.contains("chmod 600") && warning.contains("env:NAME"), "{warning}");
        assert!(!warning.contains("sk-literal"), "{warning}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(literal_key_warning(&config, &path), None);
        let by_env = Config::parse("[llm]\nkey = \"env:K\"\n", &path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(literal_key_warning(&by_env, &path), None);
    }

    #[test]
    fn bad_tools_name_the_entry_and_the_fix() {
        let tool = |name: &str, argv: &str, extra: &str| {
            format!(
                "[[tools.command]]\nname = \"ok\"\ndescription = \"d\"\nargv = [\"x\"]\nside_effect = \"local\"\n\n\
                 [[tools.command]]\nname = \"{name}\"\ndescription = \"d\"\nargv = {argv}\n\
                 side_effect = \"local\"\n{extra}"
            )
        };
        check(&tool("", "[\"x\"]", ""), &["config.toml:8:", "tools.command[1].name", "1 to 64"]);
        check(&tool("a b", "[\"x\"]", ""), &[":8:", "tools.command[1].name", "\"a b\""]);
        check(&tool("ok", "[\"x\"]", ""), &[":8:", "tools.command[1].name", "earlier tool"]);
        check(&tool("t", "[]", ""), &[":10:", "tools.command[1].argv", "no program"]);
        check(&tool("t", "[\"\"]", ""), &[":10:", "tools.command[1].argv", "no program"]);
        check(
            &tool("t", "[\"say\", \"{text}\"]", ""),
            &[":10:", "tools.command[1].argv", "{text}", "parameters.text"],
        );
        check(
            &tool("t", "[\"x\"]", "parameters = { \"a b\" = \"d\" }\n"),
            &[":12:", "tools.command[1].parameters.\"a b\"", "not a parameter name"],
        );
        check(
            &tool("t", "[\"x\"]", "description = \"again\"\n"),
            &[":12:", "duplicate key 'description'"],
        );
        check(
            "[[tools.command]]\nname = \"t\"\ndescription = \" \"\nargv = [\"x\"]\nside_effect = \"local\"\n",
            &[":3:", "tools.command[0].description", "no description"],
        );
        check(
            "[[tools.command]]\nname = \"rm\"\ndescription = \"d\"\nargv = [\"rm\"]\nside_effect = \"destructive\"\n",
            &[":5:", "tools.command[0].requires_confirmation", "requires_confirmation = true"],
        );
    }

    #[test]
    fn load_reads_the_default_location_or_the_named_file() {
        let tmp = tempfile::tempdir().unwrap();
        let env = Env::from_vars([("XDG_CONFIG_HOME", tmp.path())]);

        // Nothing at the default location: defaults.
        assert_eq!(Config::load_with(None, &env).unwrap(), Config::default());

        let default_file = tmp.path().join("stt/config.toml");
        std::fs::create_dir_all(default_file.parent().unwrap()).unwrap();
        std::fs::write(&default_file, "[tui]\nmouse = false\n").unwrap();
        assert!(!Config::load_with(None, &env).unwrap().tui.mouse);

        let named = tmp.path().join("other.toml");
        std::fs::write(&named, "[tui]\nmax_lines = 7\n").unwrap();
        let cfg = Config::load_with(Some(&named), &env).unwrap();
        assert!(cfg.tui.mouse, "the named file replaces the default one, not merges with it");
        assert_eq!(cfg.tui.max_lines, 7);

        std::fs::write(&named, "[tui]\nmax_line = 7\n").unwrap();
        let err = Config::load_with(Some(&named), &env).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("{}:2: unknown key 'tui.max_line'", named.display())),
            "{err}"
        );
    }

    #[test]
    fn load_of_a_missing_named_file_is_an_error_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        let missing: PathBuf = tmp.path().join("nope.toml");
        let err = Config::load_with(Some(&missing), &Env::from_vars([("HOME", "/h")])).unwrap_err();
        assert!(matches!(err, ConfigError::NotFound { .. }));
        let err = err.to_string();
        assert!(err.contains(&format!("'{}' does not exist", missing.display())), "{err}");
        assert!(err.contains("stt-ctl config-default"), "{err}");
    }

    #[test]
    fn load_of_an_unreadable_path_is_a_read_error() {
        let tmp = tempfile::tempdir().unwrap();
        let err =
            Config::load_with(Some(tmp.path()), &Env::from_vars([("HOME", "/h")])).unwrap_err();
        assert!(matches!(err, ConfigError::Read { .. }), "{err:?}");
        assert!(err.to_string().contains(&tmp.path().display().to_string()));
    }

    #[test]
    fn prompt_budget_is_what_is_left_after_the_reply() {
        assert_eq!(Config::default().assistant.prompt_budget(), 4096 - 512 - 256);
    }
}
