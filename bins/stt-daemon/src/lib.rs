//! The daemon: a dumb, reliable publisher. Audio in, speech found and transcribed, events
//! out on a publish-only socket; it never takes input from that socket.
//!
//! Built so far: the socket (one instance per user, 0600, removed on exit) and the
//! heartbeat. Audio capture, the VAD and whisper are not built yet, and every heartbeat
//! says so (`stt_healthy: false`, `audio: "idle"`), so no subscriber mistakes this daemon
//! for one that listens.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use stt_bus::{BoundSocket, Publisher};
use stt_proto::{AudioState, DaemonEvent, DaemonHeartbeat, Hello};

/// Transcribe speech and publish it to subscribers on a Unix socket.
///
/// Not built yet: audio capture, speech detection and transcription. For now the daemon
/// serves its socket and publishes heartbeats that say speech recognition is not running.
#[derive(Debug, clap::Parser)]
#[command(name = "stt-daemon", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub common: stt_app::CommonArgs,

    /// Event socket to serve instead of the configured one
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
}

/// Runs the daemon until SIGINT or SIGTERM.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    let config = cli.common.load_config()?;
    let socket_path = match cli.socket {
        Some(path) => path,
        None => stt_config::dirs::daemon_socket(&config)?,
    };
    let model = config.daemon.model.file_name().map_or_else(
        || config.daemon.model.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let socket = BoundSocket::bind(&socket_path, "stt-daemon")?;
        tracing::info!(socket = %socket_path.display(), "serving events");
        tracing::warn!(
            "audio capture and transcription are not built yet: this daemon only publishes \
             heartbeats, with stt_healthy=false"
        );
        let shutdown = CancellationToken::new();
        let publisher = Publisher::default();
        let heartbeat = tokio::spawn(heartbeats(
            publisher.clone(),
            Duration::from_millis(config.daemon.heartbeat_interval_ms),
            model,
            shutdown.clone(),
        ));
        let server = tokio::spawn(stt_bus::publish_server::serve(
            socket,
            publisher,
            Hello::new("stt-daemon"),
            shutdown.clone(),
        ));
        stt_app::signals::terminated().await?;
        tracing::info!("shutting down");
        shutdown.cancel();
        let _ = heartbeat.await;
        let _ = server.await;
        Ok(())
    })
}

async fn heartbeats(
    publisher: Publisher,
    every: Duration,
    model: String,
    shutdown: CancellationToken,
) {
    let started = Instant::now();
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for seq in 1.. {
        tokio::select! {
            () = shutdown.cancelled() => break,
            _ = tick.tick() => {}
        }
        publisher.publish(&DaemonEvent::Heartbeat(DaemonHeartbeat {
            seq,
            uptime_s: started.elapsed().as_secs_f64(),
            backlog: 0,
            stt_healthy: false,
            audio: AudioState::Idle,
            model: model.clone(),
        }));
    }
}
