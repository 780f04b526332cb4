//! What every stt binary does at start and at exit, so each `main.rs` stays a few lines:
//! the flags they share ([`CommonArgs`]), logging to stderr filtered by `STT_LOG`
//! ([`init_logging`]), loading the config ([`CommonArgs::load_config`]), and turning an
//! error into a message and an exit code ([`exit_with`]).
//! [`signals`]: SIGINT and SIGTERM, the signals that end a process.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use stt_config::Config;

/// The environment variable holding the log filter (`info`, `debug`, `stt_bus=trace`, …).
pub const LOG_ENV: &str = "STT_LOG";

/// Flags every long-running stt binary takes.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CommonArgs {
    /// Config file to read instead of $XDG_CONFIG_HOME/stt/config.toml
    #[arg(long, value_name = "PATH", global = true)]
    pub config: Option<PathBuf>,
}

impl CommonArgs {
    /// Loads the config named by `--config`, or the default file, or the defaults.
    pub fn load_config(&self) -> anyhow::Result<Config> {
        Ok(Config::load(self.config.as_deref())?)
    }
}

/// Sets up `tracing` for the process: to stderr, at `info` unless `STT_LOG` says otherwise,
/// with colour only when stderr is a terminal. A bad `STT_LOG` falls back to `info` and
/// says so.
pub fn init_logging(default_level: &str) {
    use tracing_subscriber::EnvFilter;
    let (filter, complaint) = match std::env::var(LOG_ENV) {
        Ok(spec) if !spec.trim().is_empty() => match EnvFilter::try_new(&spec) {
            Ok(filter) => (filter, None),
            Err(e) => (
                EnvFilter::new(default_level),
                Some(format!("ignoring {LOG_ENV}='{spec}': {e}; using '{default_level}'")),
            ),
        },
        // whisper.cpp reports every detail of loading a model at info.
        _ => (EnvFilter::new(format!("{default_level},whisper_rs=warn")), None),
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .init();
    if let Some(complaint) = complaint {
        tracing::warn!("{complaint}");
    }
}

/// Maps the outcome of a binary's `run` to its exit status: errors are printed as
/// `<name>: error: <message>: <cause>…` and exit 1; a closed stdout (`| head`) exits 0.
pub fn exit_with(name: &str, result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            #[allow(clippy::print_stderr)]
            {
                eprintln!("{name}: error: {err:#}");
            }
            ExitCode::FAILURE
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Work done every so often until the process shuts down: heartbeats, checks.
#[derive(Debug)]
pub struct Ticker {
    interval: tokio::time::Interval,
    shutdown: tokio_util::sync::CancellationToken,
}

impl Ticker {
    /// Ticks every `period`, the first at once; a tick that comes late is delayed, not
    /// bunched with the next. Must be made inside a tokio runtime; `period` must not be zero.
    pub fn new(period: std::time::Duration, shutdown: tokio_util::sync::CancellationToken) -> Self {
        let mut interval = tokio::time::interval(period);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Self { interval, shutdown }
    }

    /// Waits for the next tick: `true` then, `false` once shutdown is asked for.
    pub async fn tick(&mut self) -> bool {
        tokio::select! {
            () = self.shutdown.cancelled() => false,
            _ = self.interval.tick() => true,
        }
    }
}

/// Unix signals that end a process.
pub mod signals {
    use tokio::signal::unix::{Signal, SignalKind, signal};

    /// SIGINT and SIGTERM, caught from the moment this is made (so a signal that arrives
    /// while a model is still loading ends the process cleanly, not by default action).
    #[derive(Debug)]
    pub struct Terminate {
        interrupt: Signal,
        terminate: Signal,
    }

    impl Terminate {
        /// Starts catching both signals. Must run inside a tokio runtime.
        pub fn catch() -> std::io::Result<Self> {
            Ok(Self {
                interrupt: signal(SignalKind::interrupt())?,
                terminate: signal(SignalKind::terminate())?,
            })
        }

        /// Resolves on the first SIGINT or SIGTERM caught since [`Terminate::catch`].
        pub async fn recv(&mut self) {
            tokio::select! {
                _ = self.interrupt.recv() => {}
                _ = self.terminate.recv() => {}
            }
        }
    }

    /// Resolves on the first SIGINT or SIGTERM from now on.
    pub async fn terminated() -> std::io::Result<()> {
        Terminate::catch()?.recv().await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio_util::sync::CancellationToken;

    use super::Ticker;

    #[tokio::test(start_paused = true)]
    async fn a_ticker_ticks_at_once_then_every_period_until_shutdown() {
        let shutdown = CancellationToken::new();
        let mut ticker = Ticker::new(Duration::from_secs(1), shutdown.clone());
        let start = tokio::time::Instant::now();
        assert!(ticker.tick().await);
        assert_eq!(start.elapsed(), Duration::ZERO);
        assert!(ticker.tick().await);
        assert_eq!(start.elapsed(), Duration::from_secs(1));
        shutdown.cancel();
        assert!(!ticker.tick().await);
    }
}
