//! The assistant: subscribes to the daemon, owns all state, serves the control socket.
//!
//! Modules, in reading order: [`core`] (modes, the two-press command flow, readiness, the
//! calls waiting for a yes or no, speakers: pure rules, no I/O), [`queue`] (the inference
//! queue in front of the one model worker) and [`timers`], plain data; [`owner`] (the one
//! task that owns that state and its loop); the lanes that report to it: [`llm`] (commands
//! through the tool loop, chat turns, compaction) and [`writer`] (the writes that block).
//! This file turns the config into [`Settings`] and [`serve`]s them.
//!
//! Not built yet: telling the daemon a speaker's new name (it is validated and audited),
//! the triage lane and long-term memory.
//!
//! # Invariants
//!
//! One model call at a time. Execute is refused unless no speech is open, every closed
//! segment's `segment_done` has arrived and STT is healthy (and, with `require_viewer`, a viewer
//! is attached); the refusal names the condition. Command and chat modes never overlap. Only
//! the owner's loop changes state and only it publishes. Ids on the wire come from one
//! allocator seeded from the clock, so a restarted assistant never reuses an id a TUI shows.
//! The only locks and atomics in the crate are the control server's viewer counter and what the
//! standard channels hold.

pub mod core;
pub mod ids;
pub mod lane;
pub mod llm;
pub mod names;
pub mod owner;
pub mod queue;
pub mod timers;
pub mod writer;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use stt_bus::{BoundSocket, ControlServer, Publisher};
use stt_config::Config;

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
    pub inference_queue_size: usize,
    /// The model's endpoint; `None` when `[llm].enabled` is false.
    pub llm: Option<stt_llm::Endpoint>,
    /// The configured endpoint URL, shown in `status` even when disabled.
    pub llm_endpoint: String,
    /// How often to check that the model answers (never when zero).
    pub probe_every: Duration,
    pub lane: llm::Settings,
    pub tools: Vec<stt_config::ToolCommand>,
    /// Where audit records go; `None` when `[assistant].audit` is off.
    pub audit_dir: Option<PathBuf>,
    /// Where speaker names are kept.
    pub names_file: PathBuf,
}

impl Settings {
    /// The settings `config` gives, with files under the XDG data directory.
    pub fn from_config(config: &Config) -> anyhow::Result<Self> {
        let a = &config.assistant;
        let data = stt_config::dirs::data_dir()?;
        let llm = config.llm.enabled.then(|| stt_llm::Endpoint {
            url: config.llm.endpoint.clone(),
            model: config.llm.model.clone(),
            api_key: Some(config.llm.api_key_env.trim())
                .filter(|name| !name.is_empty())
                .and_then(std::env::var_os)
                .map(|key| stt_llm::Secret::new(key.to_string_lossy())),
            connect_timeout: Duration::from_secs(config.llm.connect_timeout_s),
            idle_timeout: Duration::from_secs(config.llm.request_timeout_s),
        });
        Ok(Self {
            require_viewer: a.require_viewer,
            stt_stale_after: Duration::from_millis(a.stt_stale_after_ms),
            inference_queue_size: a.inference_queue_size as usize,
            llm,
            llm_endpoint: config.llm.endpoint.clone(),
            probe_every: Duration::from_secs(config.llm.probe_interval_s),
            lane: llm::Settings {
                command_system_prompt: a.command_system_prompt.clone(),
                chat_system_prompt: a.chat_system_prompt.clone(),
                max_tool_iterations: a.max_tool_iterations,
                confirmation_timeout: Duration::from_secs(a.confirmation_timeout_s),
                max_tokens: a.max_tokens,
                temperature: config.llm.temperature,
                prompt_budget: a.prompt_budget(),
                compaction_trigger_ratio: a.compaction_trigger_ratio,
                compaction_keep_turns: a.compaction_keep_turns,
                compaction_max_tokens: a.compaction_max_tokens,
                compaction_system_prompt: a.compaction_system_prompt.clone(),
                trim_block_turns: a.trim_block_turns,
            },
            tools: config.tools.command.clone(),
            audit_dir: a.audit.then(|| data.join("audit")),
            names_file: data.join(names::FILE),
        })
    }
}

/// Runs the assistant until SIGINT or SIGTERM.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    let config = cli.common.load_config()?;
    let socket_path = match cli.socket {
        Some(path) => path,
        None => stt_config::dirs::assistant_socket(&config)?,
    };
    let daemon_path = match cli.daemon_socket {
        Some(path) => path,
        None => stt_config::dirs::daemon_socket(&config)?,
    };
    let settings = Settings::from_config(&config)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let mut terminate = stt_app::signals::Terminate::catch()?;
        let socket = BoundSocket::bind(&socket_path, "stt-assistant")?;
        tracing::info!(
            socket = %socket_path.display(),
            llm = settings.llm.as_ref().map_or("disabled", |e| e.url.as_str()),
            "serving control requests"
        );
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
    let publisher = Publisher::default();
    let client = settings.llm.clone().map(stt_llm::Provider::new).transpose()?;
    let registry = stt_tools::Registry::new(&settings.tools).map_err(anyhow::Error::msg)?;
    let writer = writer::spawn(
        settings.names_file.clone(),
        settings.audit_dir.clone().map(stt_tools::AuditLog::new),
        sink(&inputs_tx, Input::Written),
    )
    .context("cannot start the writer thread")?;
    let core = Core::new(settings.require_viewer, settings.stt_stale_after)
        .with_names(names::load(&settings.names_file))
        .with_ids(Ids::from_clock());
    let server = ControlServer::new(Arc::new(Front::new(inputs_tx.clone())), publisher.clone());
    let owner = Owner::new(
        Parts {
            core,
            queue: InferenceQueue::new(settings.inference_queue_size),
            lane: llm::Lane {
                client: client.clone(),
                registry: Arc::new(registry),
                settings: Arc::new(settings.lane.clone()),
            },
            writer,
            publisher,
            viewers: server.viewers(),
            llm_enabled: settings.llm.is_some(),
            llm_endpoint: settings.llm_endpoint.clone(),
        },
        inputs_tx.clone(),
    );
    let mut tasks = vec![
        tokio::spawn(owner.run(inputs, daemon, shutdown.clone())),
        tokio::spawn(server.serve(socket, shutdown.clone())),
    ];
    if let Some(client) = client.filter(|_| !settings.probe_every.is_zero()) {
        let out = sink(&inputs_tx, Input::Probe);
        tasks.push(tokio::spawn(owner::probes(
            client,
            settings.probe_every,
            out,
            shutdown.clone(),
        )));
    }
    drop(inputs_tx);
    for task in tasks {
        task.await.context("an assistant task panicked")?;
    }
    Ok(())
}

/// A lane's sink into the loop's input channel, each report wrapped by `wrap`.
fn sink<R: 'static>(inputs: &mpsc::UnboundedSender<Input>, wrap: fn(R) -> Input) -> Sink<R> {
    let inputs = inputs.clone();
    Sink::new(move |report| {
        // Gone only when the loop has ended, and then nobody listens.
        let _ = inputs.send(wrap(report));
    })
}
