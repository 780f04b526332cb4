//! The assistant: subscribes to the daemon, owns all state, serves the control socket.
//!
//! Modules, in reading order: [`core`] (modes, the two-press command flow, readiness,
//! speakers: pure rules, no I/O), [`queue`] (the inference queue in front of the one model
//! worker), [`exec`] (running a command through the tool loop, and chat turns). This file
//! wires them to the daemon link, the control socket and the heartbeat.
//!
//! Not built yet: telling the daemon a speaker's new name (it is validated and audited),
//! the triage lane and long-term memory.

pub mod core;
pub mod exec;
pub mod names;
pub mod queue;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use stt_bus::{BoundSocket, ConnInfo, ControlServer, Handler, Link, Publisher, Subscription};
use stt_config::Config;
use stt_proto::{Ack, AssistantEvent, AssistantHeartbeat, ErrorCode, ErrorMsg, Request, Status};

use crate::core::{Core, Effect, Outside};
use crate::exec::{Executor, Settings};
use crate::queue::{InferenceQueue, Job};

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
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let mut terminate = stt_app::signals::Terminate::catch()?;
        let socket = BoundSocket::bind(&socket_path, "stt-assistant")?;
        let publisher = Publisher::default();
        let assistant = Arc::new(Assistant::new(&config, publisher.clone())?);
        tracing::info!(
            socket = %socket_path.display(),
            llm = if config.llm.enabled { config.llm.endpoint.as_str() } else { "disabled" },
            "serving control requests"
        );
        let shutdown = CancellationToken::new();
        let probe_every = Duration::from_secs(config.llm.probe_interval_s);
        let server = ControlServer::new(Arc::clone(&assistant), publisher.clone())
            .with_viewer_counter(Arc::clone(&assistant.viewers));
        let tasks = [
            tokio::spawn(follow_daemon(Arc::clone(&assistant), daemon_path, shutdown.clone())),
            tokio::spawn(heartbeats(Arc::clone(&assistant), shutdown.clone())),
            tokio::spawn(worker(Arc::clone(&assistant), shutdown.clone())),
            tokio::spawn(probes(Arc::clone(&assistant), probe_every, shutdown.clone())),
            tokio::spawn(server.serve(socket, shutdown.clone())),
        ];
        terminate.recv().await;
        tracing::info!("shutting down");
        shutdown.cancel();
        for task in tasks {
            let _ = task.await;
        }
        Ok(())
    })
}

/// The assistant's state and its answers to requests.
#[derive(Debug)]
pub struct Assistant {
    core: Mutex<Core>,
    queue: InferenceQueue,
    exec: Executor,
    publisher: Publisher,
    llm_enabled: bool,
    llm_endpoint: String,
    /// Connections subscribed as viewers, counted by the control server.
    viewers: Arc<AtomicUsize>,
    /// Where the names given with `speaker_name` are kept.
    names_file: PathBuf,
}

impl Assistant {
    pub fn new(config: &Config, publisher: Publisher) -> anyhow::Result<Self> {
        let a = &config.assistant;
        let client = if config.llm.enabled {
            let api_key = Some(config.llm.api_key_env.trim())
                .filter(|name| !name.is_empty())
                .and_then(std::env::var_os)
                .map(|key| key.to_string_lossy().into_owned());
            Some(stt_llm::Client::new(stt_llm::Endpoint {
                url: config.llm.endpoint.clone(),
                model: config.llm.model.clone(),
                api_key,
                connect_timeout: Duration::from_secs(config.llm.connect_timeout_s),
                idle_timeout: Duration::from_secs(config.llm.request_timeout_s),
            })?)
        } else {
            None
        };
        let registry =
            stt_tools::Registry::new(&config.tools.command).map_err(anyhow::Error::msg)?;
        let audit = if a.audit {
            Some(stt_tools::AuditLog::new(stt_config::dirs::data_dir()?.join("audit")))
        } else {
            None
        };
        let settings = Settings {
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
        };
        let names_file = stt_config::dirs::data_dir()?.join(names::FILE);
        let core = Core::new(a.require_viewer, Duration::from_millis(a.stt_stale_after_ms))
            .with_names(names::load(&names_file));
        Ok(Self {
            core: Mutex::new(core),
            names_file,
            queue: InferenceQueue::new(a.inference_queue_size as usize),
            exec: Executor::new(client, registry, publisher.clone(), audit, settings),
            publisher,
            llm_enabled: config.llm.enabled,
            llm_endpoint: config.llm.endpoint.clone(),
            viewers: Arc::default(),
        })
    }

    fn core(&self) -> MutexGuard<'_, Core> {
        self.core.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn viewer_count(&self) -> u32 {
        u32::try_from(self.viewers.load(Ordering::SeqCst)).unwrap_or(u32::MAX)
    }

    fn status(&self) -> Status {
        let core = self.core();
        let (stt_healthy, stt_detail) = core.stt_health(Instant::now());
        let (buffer, edited) = core.buffer();
        Status {
            mode: core.mode(),
            stt_healthy,
            stt_detail,
            llm_enabled: self.llm_enabled,
            llm_endpoint: self.llm_endpoint.clone(),
            llm_reachable: *self.exec.reachable.lock().unwrap_or_else(PoisonError::into_inner),
            inference_queue: self.queue.depth(),
            inference_busy: self.queue.busy(),
            viewers: self.viewer_count(),
            command_buffer: buffer.to_owned(),
            command_edited: edited,
            version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }

    /// Carries out what the core decided.
    fn apply(&self, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::Publish(event) => {
                    self.publisher.publish(&event);
                }
                Effect::Execute { text, edited } => {
                    if self.queue.push_command(text, edited).is_err() {
                        // Lost a race for the last slot: report it and stand down.
                        self.publish_error(
                            ErrorCode::Busy,
                            "the model is busy: the inference queue is full",
                        );
                        let effects = self.core().execution_finished();
                        self.apply(effects);
                    }
                }
                Effect::ChatTurn { text } => {
                    if let Some(Job::Chat { text: dropped }) = self.queue.push_chat(text) {
                        self.publish_error(
                            ErrorCode::Busy,
                            format!("the model is behind: dropped the chat turn \"{dropped}\""),
                        );
                    }
                }
                Effect::DropQueuedChat => {
                    self.queue.drop_chat();
                }
                Effect::ClearHistory => self.exec.clear(),
                Effect::NameSpeaker { speaker_id, name } => {
                    self.exec.audit_speaker(&speaker_id, &name);
                    let names = self.core().names().clone();
                    if let Err(e) = names::save(&self.names_file, &names) {
                        self.publish_error(
                            ErrorCode::Internal,
                            format!(
                                "{speaker_id} is named {name} until the assistant restarts: \
                                 cannot save it to {}: {e}",
                                self.names_file.display()
                            ),
                        );
                    }
                }
            }
        }
    }

    fn publish_error(&self, code: ErrorCode, message: impl Into<String>) {
        self.publisher.publish(&AssistantEvent::Error(ErrorMsg::new(code, message)));
    }
}

impl Handler for Assistant {
    async fn handle(&self, _conn: &ConnInfo, request: Request) -> AssistantEvent {
        match &request {
            Request::Status => return AssistantEvent::Status(self.status()),
            Request::SpeakerList => {
                return AssistantEvent::SpeakerList(self.core().roster().clone());
            }
            Request::Confirm { call_id } | Request::Deny { call_id } => {
                let allow = matches!(request, Request::Confirm { .. });
                return match self.exec.pending.answer(call_id.as_deref(), allow) {
                    Ok(()) => AssistantEvent::Ack(Ack { command: request.kind().into(), ok: true }),
                    Err(e) => AssistantEvent::Error(e),
                };
            }
            _ => {}
        }
        let outside = Outside {
            viewers: self.viewer_count(),
            llm_enabled: self.llm_enabled,
            queue_has_room: self.queue.has_room(),
        };
        let (reply, effects) = self.core().request(&request, Instant::now(), outside);
        if let AssistantEvent::Error(ErrorMsg { code: ErrorCode::Busy, .. }) = &reply {
            self.queue.drop_oldest_chat();
        }
        self.apply(effects);
        reply
    }
}

/// Follows the daemon's events, reconnecting whenever it goes away.
async fn follow_daemon(assistant: Arc<Assistant>, path: PathBuf, shutdown: CancellationToken) {
    let mut link = Subscription::daemon(path, "stt-assistant");
    loop {
        let next = tokio::select! {
            () = shutdown.cancelled() => break,
            next = link.next() => next,
        };
        let effects = match next {
            Link::Up(_) => {
                tracing::info!("connected to stt-daemon");
                assistant.core().daemon_link(true);
                continue;
            }
            Link::Down(why) => {
                tracing::warn!("stt-daemon link down: {why}; retrying");
                assistant.core().daemon_link(false);
                continue;
            }
            Link::Event(event) => assistant.core().daemon_event(event, Instant::now()),
        };
        assistant.apply(effects);
    }
}

/// The one inference worker: jobs one at a time, in queue order.
async fn worker(assistant: Arc<Assistant>, shutdown: CancellationToken) {
    loop {
        let job = tokio::select! {
            () = shutdown.cancelled() => break,
            job = assistant.queue.next() => job,
        };
        match job {
            Job::Command { text, edited } => {
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = assistant.exec.run_command(&text, edited) => {}
                }
                let effects = assistant.core().execution_finished();
                assistant.apply(effects);
            }
            Job::Chat { text } => {
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = assistant.exec.run_chat(&text) => {}
                }
            }
        }
        assistant.queue.done();
    }
}

/// Checks that the LLM endpoint answers: at start, then every `every` (never when zero, or
/// without a model).
async fn probes(assistant: Arc<Assistant>, every: Duration, shutdown: CancellationToken) {
    if every.is_zero() {
        return;
    }
    let mut ticker = stt_app::Ticker::new(every, shutdown.clone());
    while ticker.tick().await {
        tokio::select! {
            () = shutdown.cancelled() => break,
            () = assistant.exec.probe() => {}
        }
    }
}

/// Tells subscribers how things stand, about once a second.
async fn heartbeats(assistant: Arc<Assistant>, shutdown: CancellationToken) {
    let mut ticker = stt_app::Ticker::new(Duration::from_secs(1), shutdown);
    let mut seq = 0;
    while ticker.tick().await {
        seq += 1;
        let (mode, stt_healthy, daemon_backlog) = {
            let core = assistant.core();
            (core.mode(), core.stt_health(Instant::now()).0, core.daemon_backlog())
        };
        assistant.publisher.publish(&AssistantEvent::Heartbeat(AssistantHeartbeat {
            seq,
            mode,
            stt_healthy,
            daemon_backlog,
            inference_queue: assistant.queue.depth(),
            inference_busy: assistant.queue.busy(),
        }));
    }
}
