//! The assistant: subscribes to the daemon, owns all state, serves the control socket.
//!
//! Modules, in reading order: [`core`] (modes, the two-press command flow, readiness, the
//! calls waiting for a yes or no, speakers: pure rules, no I/O), [`kind`] (what a model job
//! is for, and each kind's row), [`queue`] (the inference queue in front of the one model
//! worker) and [`timers`], plain data; [`owner`] (the one task that owns that state and its
//! loop); the lanes that report to it: [`llm`] (commands through the tool loop, chat turns,
//! compaction, the tree's summaries, dreams, triage's extraction, the wake-up turn),
//! [`memory`] (long-term memory on a thread of its own), [`voice`] (replies spoken as they
//! stream; [`echo`] tells its words coming back through the microphone from a person's),
//! [`triage`] (what was just said, classified on a thread of its own), [`dictate`] (words
//! typed into the focused window) and [`writer`] (the writes that block); [`intents`]
//! (commands answered without the model) and [`wake`] (when the assistant speaks up on its
//! own). Beside them, small and plain: [`lane`] (how a lane's reports reach the loop),
//! [`ids`] (the one id allocator), [`tool`] (the tool a model's call names), [`clock`] (the one clock, given to the owner: the loop's
//! time and the local time read from it), [`recur`] (work started again and again, one at a time),
//! [`settle`] (when a turn is over), [`spoken`] (a turn the wake phrase started: the phrase
//! off its words, a spoken yes or no, the listening after an answer), [`turn`] (a chat turn
//! as kept), [`talk`] (a person
//! speaking over the voice), [`slash`] (chat's slash commands), [`session`] (the chat session
//! kept across restarts) and [`names`] (speaker names kept across restarts). This file turns
//! the config into [`Settings`] and [`serve`]s them.
//!
//! The daemon takes no input, so names given to speakers, and forgets and merges of them,
//! reach it as files the [`writer`] keeps ([`stt_proto::speaker_files`]).
//!
//! # Invariants
//!
//! One model call at a time. Execute is refused unless no speech is open, every closed
//! segment's `segment_done` has arrived and STT is healthy (and, with `require_viewer`, a viewer
//! is attached); the refusal names the condition. Command and chat modes never overlap. Only
//! the owner's loop changes state and only it publishes. Ids on the wire come from one
//! allocator seeded from the clock, so a restarted assistant never reuses an id a TUI shows.
//! The only locks and atomics in the crate are the control server's viewer counter, the voice
//! lane's interrupt count and device stopper (so that a stop silences the device from the
//! owner's thread at once), and what the standard channels hold.

pub mod clock;
pub mod core;
pub mod dictate;
pub mod echo;
pub mod ids;
pub mod intents;
pub mod kind;
pub mod lane;
pub mod llm;
pub mod memory;
pub mod names;
pub mod owner;
pub mod queue;
pub mod recur;
pub mod session;
pub mod settle;
pub mod slash;
pub mod spoken;
pub mod talk;
pub mod timers;
pub mod tool;
pub mod triage;
pub mod turn;
pub mod voice;
pub mod wake;
pub mod writer;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use stt_bus::{BoundSocket, ControlServer, Publisher};
use stt_config::Config;
use stt_config::dirs::Env;

use crate::core::Core;
use crate::ids::Ids;
use crate::lane::Sink;
use crate::owner::{Front, Input, Owner, Parts};
use crate::queue::InferenceQueue;

/// Turn transcripts into actions and conversation; serve the control socket.
///
/// Follows stt-daemon's events; `stt-ctl command-start`, speaking, then `stt-ctl
/// command-execute` runs what was said through the model and its tools.
#[derive(Debug, clap::Parser)]
#[command(name = "stt-assistant", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub common: stt_app::CommonArgs,

    /// Control socket to serve instead of the configured one
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,

    /// Daemon event socket to follow instead of the configured one
    #[arg(long, value_name = "PATH")]
    pub daemon_socket: Option<PathBuf>,
}

/// Everything the assistant takes from the config and the environment, resolved.
#[derive(Debug, Clone)]
pub struct Settings {
    pub require_viewer: bool,
    pub stt_stale_after: Duration,
    /// Quiet after a `speech_stop` before a turn settles (`[assistant].settle_ms`).
    pub settle: Duration,
    pub inference_queue_size: usize,
    /// The providers and how to reach them; `None` when `[llm].enabled` is false.
    pub llm: Option<stt_llm::registry::Settings>,
    /// How often to check which providers are there (only at start when zero).
    pub probe_every: Duration,
    pub lane: llm::Settings,
    pub tools: stt_config::ToolsConfig,
    /// Where the models are (the screen tool's OCR, ONNX Runtime).
    pub models: PathBuf,
    /// Where audit records go; `None` when `[assistant].audit` is off.
    pub audit_dir: Option<PathBuf>,
    /// Where speaker names are kept (the daemon reads them too).
    pub names_file: PathBuf,
    /// Where forgets and merges of speakers are written for the daemon.
    pub edits_file: PathBuf,
    /// Where the chat session is kept.
    pub session_file: PathBuf,
    /// Where the timers are kept.
    pub timers_file: PathBuf,
    /// How long a chat session lives without a turn.
    pub session_ttl: Duration,
    /// Where `/export` writes when given no path.
    pub export_dir: PathBuf,
    /// Long-term memory; `None` when `[memory].enabled` is false.
    pub memory: Option<memory::Settings>,
    /// The voice replies are spoken in, and whether they are at start.
    pub voice: voice::Settings,
    /// The triage lane; `None` when `[triage].enabled` is false.
    pub triage: Option<triage::Settings>,
    /// The assistant speaking up on its own (`[planner]`); `None` when `proactive` is off or
    /// memory (where the planner keeps its tasks) is.
    pub wake: Option<wake::Settings>,
    /// The local time the loop goes by (a test sets its own).
    pub clock: clock::Clock,
    /// How dictation types (`[dictate]`), and the desktop session it types into.
    pub dictate: stt_dictate::TypistSettings,
    /// The commands answered without the model (`[intents]`); `None` when they are off.
    pub intents: Option<intents::Local>,
    /// How a turn started by the wake phrase goes; `None` when `[wake]` is off.
    pub spoken: Option<spoken::Flow>,
}

impl Settings {
    /// The settings `config` gives, with files under the XDG directories `env` names
    /// (`Env::from_process()`: the process's own; a test gives temporary ones).
    pub fn from_config(config: &Config, env: &Env) -> anyhow::Result<Self> {
        let a = &config.assistant;
        let data = stt_config::dirs::data_dir_with(env)?;
        let state = stt_config::dirs::state_dir_with(env)?;
        let llm = config.llm.enabled.then(|| stt_llm::registry::Settings {
            cli_workdir: Some(state.join("cli")),
            local_key: stt_config::dirs::llama_key_file_with(env).ok(),
            ..registry_settings(&config.llm)
        });
        Ok(Self {
            require_viewer: a.require_viewer,
            stt_stale_after: Duration::from_millis(a.stt_stale_after_ms),
            settle: Duration::from_millis(a.settle_ms),
            inference_queue_size: a.inference_queue_size as usize,
            llm,
            probe_every: Duration::from_secs(config.llm.probe_interval_s),
            lane: llm::Settings {
                command_system_prompt: a.command_system_prompt.clone(),
                chat_system_prompt: a.chat_system_prompt.clone(),
                max_tool_iterations: a.max_tool_iterations,
                confirmation_timeout: Duration::from_secs(a.confirmation_timeout_s),
                max_tokens: a.max_tokens,
                command_answer_max_tokens: a.command_answer_max_tokens,
                temperature: config.llm.temperature,
                stream: config.llm.stream,
                prompt_budget: a.prompt_budget(),
                compaction_trigger_ratio: a.compaction_trigger_ratio,
                compaction_keep_turns: a.compaction_keep_turns,
                compaction_max_tokens: a.compaction_max_tokens,
                compaction_system_prompt: a.compaction_system_prompt.clone(),
                trim_block_turns: a.trim_block_turns,
                proactive: config.planner.proactive && config.memory.enabled,
            },
            tools: config.tools.clone(),
            models: stt_config::dirs::models_dir_with(env)?,
            audit_dir: a.audit.then(|| data.join("audit")),
            names_file: data.join(names::FILE),
            edits_file: data.join(stt_proto::speaker_files::EDITS_FILE),
            session_file: state.join(session::FILE),
            timers_file: state.join(timers::FILE),
            session_ttl: Duration::from_secs(u64::from(a.chat_session_ttl_hours) * 3600),
            export_dir: data.join("exports"),
            memory: memory_settings(config, env)?,
            voice: voice::Settings {
                model: stt_config::dirs::model_path_with(&config.voice.model, env)?,
                runtime: stt_voice::runtime_library(&stt_config::dirs::models_dir_with(env)?),
                output: voice::Output::parse(&config.voice.device),
                enabled: config.voice.enabled,
            },
            triage: triage_settings(config, env)?,
            wake: (config.planner.proactive && config.memory.enabled).then(|| wake::Settings {
                // Checked when the config was loaded.
                hours: config.planner.dnd_minutes().ok().flatten().map(wake::Hours::new),
                file: state.join(wake::FILE),
            }),
            clock: clock::Clock::System,
            dictate: dictate_settings(&config.dictate, env),
            intents: intents_settings(config, env)?,
            spoken: config.wake.enabled.then(|| {
                spoken::Flow::new(
                    &config.wake.said(),
                    Duration::from_secs_f64(config.wake.words_wait_s),
                    Duration::from_secs_f64(config.wake.follow_up_s),
                )
                .only(&config.wake.only_speaker)
                .chat(config.wake.action == "chat")
            }),
        })
    }
}

/// The intents `[intents]` asks for: the built-in ones, the user's file and the configured
/// tools' sentences; `None` when they are off. A file that does not read is an error that
/// names it and its fix.
fn intents_settings(config: &Config, env: &Env) -> anyhow::Result<Option<intents::Local>> {
    let i = &config.intents;
    if !i.enabled {
        return Ok(None);
    }
    let file = if i.file.as_os_str().is_empty() {
        stt_config::dirs::config_file_with(env)?.with_file_name(intents::FILE)
    } else {
        i.file.clone()
    };
    intents::Local::load(&file, &config.tools.command).map(Some).map_err(anyhow::Error::msg)
}

/// How dictation types, from `[dictate]` and the session `env` names.
fn dictate_settings(d: &stt_config::DictateConfig, env: &Env) -> stt_dictate::TypistSettings {
    use stt_config::DictateMethod as M;
    use stt_dictate::Method;
    let method = match d.method {
        M::Auto => None,
        M::Wtype => Some(Method::Wtype),
        M::Ydotool => Some(Method::Ydotool),
        M::Dotool => Some(Method::Dotool),
        M::Xdotool => Some(Method::Xdotool),
        M::Clipboard => Some(Method::Clipboard),
    };
    stt_dictate::TypistSettings {
        method,
        paste_key: d.paste_key.trim().to_owned(),
        session: stt_dictate::Session::from_env(
            env.var("WAYLAND_DISPLAY").as_deref(),
            env.var("DISPLAY").as_deref(),
        ),
        path: env.var("PATH"),
    }
}

/// The triage lane's settings from `[triage]`; `None` when it is off.
fn triage_settings(config: &Config, env: &Env) -> anyhow::Result<Option<triage::Settings>> {
    let t = &config.triage;
    if !t.enabled {
        return Ok(None);
    }
    let own_examples = if t.examples.as_os_str().is_empty() {
        let config_file = stt_config::dirs::config_file_with(env)?;
        config_file.with_file_name(triage::OWN_EXAMPLES)
    } else {
        t.examples.clone()
    };
    let models = stt_config::dirs::models_dir_with(env)?;
    Ok(Some(triage::Settings {
        window: t.window as usize,
        embedder: stt_embed::Files {
            model: stt_config::dirs::model_path_with(&t.model, env)?,
            runtime: stt_embed::runtime_library(&models),
        },
        own_examples,
        #[allow(clippy::cast_possible_truncation, reason = "a fraction")]
        escalate: t.escalate_threshold as f32,
    }))
}

/// The memory lane's settings from `[memory]`; `None` when it is off.
fn memory_settings(config: &Config, env: &Env) -> anyhow::Result<Option<memory::Settings>> {
    let m = &config.memory;
    if !m.enabled {
        return Ok(None);
    }
    let embedder = if m.embedding_model.as_os_str().is_empty() {
        None
    } else {
        let models = stt_config::dirs::models_dir_with(env)?;
        Some(stt_embed::Files {
            model: stt_config::dirs::model_path_with(&m.embedding_model, env)?,
            runtime: stt_embed::runtime_library(&models),
        })
    };
    Ok(Some(memory::Settings {
        db: stt_config::dirs::memory_db_with(config, env)?,
        embedder,
        limits: memory::Limits {
            top_k: m.recall_top_k as usize,
            min_score: m.recall_min_score as f32,
        },
        hints: m.hints,
        tree: memory::tree_rules(m),
        capture_ambient: m.capture_ambient,
        dreams: memory::dream_rules(m),
    }))
}

/// The registry's settings from `[llm]`: `[llm.providers.ID]` tables, with the top-level
/// `endpoint`, `key` and `model` written over those of the provider `[llm].provider` names
/// (or `custom`, when it names none).
pub fn registry_settings(llm: &stt_config::LlmConfig) -> stt_llm::registry::Settings {
    use stt_llm::registry::{Id, KeyRef, Override, Settings};
    // The config checked every id against the same list.
    let id = |name: &str| Id::parse(name);
    let mut overrides: std::collections::HashMap<Id, Override> = llm
        .providers
        .iter()
        .filter_map(|(name, p)| {
            let o = Override {
                endpoint: p.endpoint.trim().to_owned(),
                key: KeyRef::parse(&p.key),
                model: p.model.trim().to_owned(),
                models: p.models.clone(),
            };
            Some((id(name)?, o))
        })
        .collect();
    let provider = id(&llm.provider);
    let target = overrides.entry(provider.unwrap_or(Id::Custom)).or_default();
    if !llm.endpoint.trim().is_empty() {
        target.endpoint = llm.endpoint.trim().to_owned();
    }
    if let Some(key) = KeyRef::parse(&llm.key) {
        target.key = Some(key);
    }
    if !llm.model.trim().is_empty() {
        target.model = llm.model.trim().to_owned();
    }
    Settings {
        provider,
        overrides,
        priority: llm.priority.iter().filter_map(|name| id(name)).collect(),
        failover: llm.failover,
        // The server `stt-daemon up` runs, wherever the config puts it.
        local_urls: vec![format!("http://127.0.0.1:{}/v1/chat/completions", llm.local_port)],
        local_key: None,
        connect_timeout: Duration::from_secs(llm.connect_timeout_s),
        idle_timeout: Duration::from_secs(llm.request_timeout_s),
        path: None,
        cli_workdir: None,
    }
}

/// Runs the assistant until SIGINT or SIGTERM.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    let config = cli.common.load_config()?;
    let config_path = match &cli.common.config {
        Some(path) => Some(path.clone()),
        None => stt_config::dirs::config_file().ok(),
    };
    if let Some(warning) =
        config_path.and_then(|path| stt_config::literal_key_warning(&config, &path))
    {
        tracing::warn!("{warning}");
    }
    let socket_path = match cli.socket {
        Some(path) => path,
        None => stt_config::dirs::assistant_socket(&config)?,
    };
    let daemon_path = match cli.daemon_socket {
        Some(path) => path,
        None => stt_config::dirs::daemon_socket(&config)?,
    };
    let settings = Settings::from_config(&config, &Env::from_process())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let mut terminate = stt_app::signals::Terminate::catch()?;
        let socket = BoundSocket::bind(&socket_path, "stt-assistant")?;
        let llm = match &settings.llm {
            None => "disabled".to_owned(),
            Some(llm) => llm.provider.map_or("chosen automatically".to_owned(), |p| p.to_string()),
        };
        tracing::info!(socket = %socket_path.display(), %llm, "serving control requests");
        let shutdown = CancellationToken::new();
        let served = tokio::spawn(serve(socket, daemon_path, settings, shutdown.clone()));
        terminate.recv().await;
        tracing::info!("shutting down");
        shutdown.cancel();
        served.await.context("the assistant's tasks failed")?
    })
}

/// Serves `socket` and follows the daemon at `daemon` until `shutdown`: the owner's loop,
/// the control server in front of it and the probes beside it.
pub async fn serve(
    socket: BoundSocket,
    daemon: PathBuf,
    settings: Settings,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let (inputs_tx, inputs) = mpsc::unbounded_channel::<Input>();
    let (requests_tx, requests) = mpsc::channel(owner::REQUESTS_WAITING);
    let publisher = Publisher::default();
    let registry = settings.llm.clone().map(stt_llm::registry::Registry::new);
    let tools = stt_tools::Registry::configured(&settings.tools, &settings.models)
        .map_err(anyhow::Error::msg)?;
    // The registry refuses a command named like a built-in tool; memory's and the wake-ups'
    // are the assistant's.
    let taken =
        |name: &str| matches!(tool::Named::of(name), tool::Named::Memory(_) | tool::Named::Wake(_));
    if let Some(name) = tools.specs().map(|s| s.name.as_str()).find(|n| taken(n)) {
        anyhow::bail!(
            "[[tools.command]] '{name}' has the name of one of memory's tools; choose another name"
        );
    }
    let (memory, memory_thread) = match settings.memory.clone() {
        Some(settings) => {
            let (memory, thread) = memory::spawn(settings, Sink::to(&inputs_tx, Input::Memory))
                .context("cannot start the memory thread")?;
            (Some(memory), Some(thread))
        }
        None => (None, None),
    };
    let writer = writer::spawn(
        writer::SpeakerFiles {
            names: settings.names_file.clone(),
            edits: settings.edits_file.clone(),
        },
        settings.audit_dir.clone().map(stt_tools::AuditLog::new),
        Sink::to(&inputs_tx, Input::Written),
    )
    .context("cannot start the writer thread")?;
    let mut core = Core::new(settings.require_viewer, settings.stt_stale_after)
        .with_settle(settings.settle)
        .with_names(names::load(&settings.names_file))
        .with_ids(Ids::from_clock());
    if let Some(flow) = settings.spoken.clone() {
        core = core.with_wake(flow);
    }
    let server = ControlServer::new(Arc::new(Front::new(requests_tx)), publisher.clone());
    let owner = Owner::new(
        Parts {
            core,
            queue: InferenceQueue::new(settings.inference_queue_size),
            env: llm::JobEnv {
                client: None,
                fallback: None,
                missing: if registry.is_some() {
                    "no model provider is chosen yet".to_owned()
                } else {
                    "no executor configured: [llm].enabled is false".to_owned()
                },
                providers: None,
                tools: Arc::new(tools),
                settings: Arc::new(settings.lane.clone()),
                memory: memory.clone(),
                chat_system: None,
            },
            writer,
            publisher,
            viewers: server.viewers(),
            registry: registry.clone(),
            session_file: settings.session_file.clone(),
            timers_file: settings.timers_file.clone(),
            session_ttl: settings.session_ttl,
            export_dir: settings.export_dir.clone(),
            memory: settings.memory.clone(),
            voice: settings.voice.clone(),
            triage: settings.triage.clone(),
            wake: settings.wake.clone(),
            clock: settings.clock,
            dictate: settings.dictate.clone(),
            intents: settings.intents.clone(),
        },
        inputs_tx.clone(),
    );
    let mut tasks = vec![
        tokio::spawn(owner.run(requests, inputs, daemon, shutdown.clone())),
        tokio::spawn(server.serve(socket, shutdown.clone())),
    ];
    if let Some(registry) = registry {
        let out = Sink::to(&inputs_tx, Input::Providers);
        tasks.push(tokio::spawn(owner::probes(
            registry,
            settings.probe_every,
            out,
            shutdown.clone(),
        )));
    }
    drop(inputs_tx);
    for task in tasks {
        task.await.context("an assistant task panicked")?;
    }
    // Memory stops last, once nothing can ask it anything more.
    if let Some(memory) = memory {
        memory.stop().await;
    }
    if let Some(thread) = memory_thread {
        tokio::task::spawn_blocking(|| thread.join()).await.context("joining the memory thread")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use stt_llm::registry::{Id, KeyRef};

    use super::*;

    #[test]
    fn the_config_knows_exactly_the_registrys_providers() {
        let registry: Vec<&str> = Id::ALL.iter().map(|id| id.as_str()).collect();
        assert_eq!(registry, stt_config::LLM_PROVIDERS);
    }

    #[test]
    fn top_level_llm_keys_belong_to_the_named_provider_or_custom() {
        let parse = |text: &str| {
            let config = Config::parse(text, std::path::Path::new("c")).unwrap();
            registry_settings(&config.llm)
        };
        let s = parse(
            "[llm]\nendpoint = \"http://h:1/v1/chat/completions\"\nmodel = \"m\"\n\
             [llm.providers.ollama]\nmodel = \"qwen\"\n",
        );
        assert_eq!(s.provider, None);
        assert_eq!(s.overrides[&Id::Custom].endpoint, "http://h:1/v1/chat/completions");
        assert_eq!(s.overrides[&Id::Custom].model, "m");
        assert_eq!(s.overrides[&Id::Ollama].model, "qwen");

        let s = parse(
            "[llm]\nprovider = \"openai\"\nkey = \"env:WORK_KEY\"\npriority = [\"ollama\"]\n\
             [llm.providers.openai]\nmodel = \"gpt-4o\"\n",
        );
        assert_eq!(s.provider, Some(Id::OpenAi));
        assert_eq!(s.overrides[&Id::OpenAi].key, Some(KeyRef::Env("WORK_KEY".into())));
        assert_eq!(s.overrides[&Id::OpenAi].model, "gpt-4o");
        assert_eq!(s.priority, [Id::Ollama]);
        assert!(!s.overrides.contains_key(&Id::Custom));
    }
}
