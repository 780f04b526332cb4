//! The assistant: subscribes to the daemon, owns all state, serves the control socket.
//!
//! Built so far: the daemon link (reconnecting, with STT health from its heartbeats), the
//! control socket with `status` and subscriptions, and heartbeats to subscribers. Not built
//! yet: modes, the command flow, chat, the LLM, tools, speakers and the audit log; those
//! requests are answered with `error{code:"not_implemented"}` saying so.

pub mod core;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use stt_bus::{BoundSocket, ConnInfo, ControlServer, Handler, Link, Publisher, Subscription};
use stt_config::Config;
use stt_proto::{
    AssistantEvent, AssistantHeartbeat, DaemonEvent, DaemonHeartbeat, ErrorCode, ErrorMsg, Mode,
    Request, Status,
};

/// Turn transcripts into actions and conversation; serve the control socket.
///
/// Not built yet: modes, commands, chat, the LLM, tools and speakers. For now the assistant
/// follows the daemon, reports STT health in `stt-ctl status`, and says plainly that the
/// other requests are not available.
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
        tracing::info!(socket = %socket_path.display(), "serving control requests");
        tracing::warn!(
            "modes, commands, chat, the LLM, tools and speakers are not built yet: only status \
             and subscriptions are served"
        );
        let shutdown = CancellationToken::new();
        let publisher = Publisher::default();
        let stale_after = Duration::from_millis(config.assistant.stt_stale_after_ms);
        let assistant = Arc::new(Assistant::new(config, stale_after));
        let server = ControlServer::new(Arc::clone(&assistant), publisher.clone())
            .with_viewer_counter(Arc::clone(&assistant.viewers));
        let tasks = [
            tokio::spawn(follow_daemon(Arc::clone(&assistant), daemon_path, shutdown.clone())),
            tokio::spawn(heartbeats(Arc::clone(&assistant), publisher, shutdown.clone())),
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
    config: Config,
    stale_after: Duration,
    state: Mutex<State>,
    /// Connections subscribed as viewers, counted by the control server.
    viewers: Arc<AtomicUsize>,
}

#[derive(Debug, Default)]
struct State {
    mode: Mode,
    daemon_connected: bool,
    last_heartbeat: Option<(Instant, DaemonHeartbeat)>,
}

impl Assistant {
    pub fn new(config: Config, stale_after: Duration) -> Self {
        Self { config, stale_after, state: Mutex::default(), viewers: Arc::default() }
    }

    fn viewer_count(&self) -> u32 {
        let count = self.viewers.load(Ordering::SeqCst);
        u32::try_from(count).unwrap_or(u32::MAX)
    }

    /// Whether speech recognition is usable, and if not, why (for a person).
    fn stt_health(&self, now: Instant) -> (bool, String) {
        let state = lock(&self.state);
        stt_health(&state, now, self.stale_after)
    }

    fn status(&self) -> Status {
        let (stt_healthy, stt_detail) = self.stt_health(Instant::now());
        let mode = lock(&self.state).mode;
        Status {
            mode,
            stt_healthy,
            stt_detail,
            llm_enabled: self.config.llm.enabled,
            llm_endpoint: self.config.llm.endpoint.clone(),
            llm_reachable: None,
            inference_queue: 0,
            inference_busy: false,
            viewers: self.viewer_count(),
            command_buffer: String::new(),
            command_edited: false,
            version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }
}

fn stt_health(state: &State, now: Instant, stale_after: Duration) -> (bool, String) {
    if !state.daemon_connected {
        return (false, "not connected to stt-daemon (start it with `stt-daemon up`)".to_owned());
    }
    let Some((at, beat)) = &state.last_heartbeat else {
        return (false, "no heartbeat from stt-daemon yet".to_owned());
    };
    let age = now.saturating_duration_since(*at);
    if age >= stale_after {
        return (false, format!("no heartbeat from stt-daemon for {:.1} s", age.as_secs_f64()));
    }
    if !beat.stt_healthy {
        return (
            false,
            format!(
                "stt-daemon reports speech recognition is not running (audio: {})",
                audio_name(beat.audio)
            ),
        );
    }
    (true, String::new())
}

fn audio_name(audio: stt_proto::AudioState) -> &'static str {
    match audio {
        stt_proto::AudioState::Capturing => "capturing",
        stt_proto::AudioState::Retrying => "retrying",
        stt_proto::AudioState::Ended => "ended",
        stt_proto::AudioState::Idle => "idle",
    }
}

impl Handler for Assistant {
    async fn handle(&self, _conn: &ConnInfo, request: Request) -> AssistantEvent {
        match request {
            Request::Status => AssistantEvent::Status(self.status()),
            other => AssistantEvent::Error(ErrorMsg::new(
                ErrorCode::NotImplemented,
                format!(
                    "stt-assistant cannot do '{}' yet: modes, commands, chat, tools and speakers \
                     are not built in this version (status works)",
                    other.kind()
                ),
            )),
        }
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
        let mut state = lock(&assistant.state);
        match next {
            Link::Up(_) => {
                tracing::info!("connected to stt-daemon");
                state.daemon_connected = true;
            }
            Link::Down(why) => {
                tracing::warn!("stt-daemon link down: {why}; retrying");
                state.daemon_connected = false;
                state.last_heartbeat = None;
            }
            Link::Event(DaemonEvent::Heartbeat(beat)) => {
                state.last_heartbeat = Some((Instant::now(), beat));
            }
            Link::Event(_) => {}
        }
    }
}

/// Tells subscribers how things stand, about once a second.
async fn heartbeats(assistant: Arc<Assistant>, publisher: Publisher, shutdown: CancellationToken) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for seq in 1.. {
        tokio::select! {
            () = shutdown.cancelled() => break,
            _ = tick.tick() => {}
        }
        let (stt_healthy, _) = assistant.stt_health(Instant::now());
        let (mode, daemon_backlog) = {
            let state = lock(&assistant.state);
            (state.mode, state.last_heartbeat.as_ref().map_or(0, |(_, beat)| beat.backlog))
        };
        publisher.publish(&AssistantEvent::Heartbeat(AssistantHeartbeat {
            seq,
            mode,
            stt_healthy,
            daemon_backlog,
            inference_queue: 0,
            inference_busy: false,
        }));
    }
}

/// Locks a mutex, carrying on with the data if a panicking thread poisoned it: every
/// critical section here leaves the state consistent.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use stt_proto::AudioState;

    fn beat(healthy: bool) -> DaemonHeartbeat {
        DaemonHeartbeat {
            seq: 1,
            uptime_s: 1.0,
            backlog: 0,
            stt_healthy: healthy,
            audio: AudioState::Capturing,
            model: "m".into(),
        }
    }

    #[track_caller]
    fn check(state: &State, age_ms: u64, healthy: bool, detail: &str) {
        let at = state.last_heartbeat.as_ref().map_or_else(Instant::now, |(at, _)| *at);
        let now = at + Duration::from_millis(age_ms);
        let (got, why) = stt_health(state, now, Duration::from_secs(3));
        assert_eq!(got, healthy, "{why}");
        assert!(why.contains(detail), "{why:?} lacks {detail:?}");
    }

    #[test]
    fn stt_is_healthy_only_when_connected_recent_and_reported_healthy() {
        let mut state = State::default();
        check(&state, 0, false, "not connected");
        state.daemon_connected = true;
        check(&state, 0, false, "no heartbeat");
        state.last_heartbeat = Some((Instant::now(), beat(true)));
        check(&state, 100, true, "");
        check(&state, 2999, true, "");
        check(&state, 3000, false, "for 3.0 s");
        state.last_heartbeat = Some((Instant::now(), beat(false)));
        check(&state, 100, false, "not running (audio: capturing)");
    }
}
