//! The viewer and controller of the assistant, and its headless event dump.
//!
//! Built so far: `--dump N`, which subscribes to the assistant and prints every event as
//! one JSON line, reconnecting when the assistant restarts. The interactive screen is not
//! built yet.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use stt_bus::{Link, Subscription};
use stt_proto::encode_line;

/// Watch and control the stt assistant.
///
/// Not built yet: the interactive screen. `--dump N` prints the assistant's events as JSON
/// lines (one per event) for N seconds, for pipes and scripts.
#[derive(Debug, clap::Parser)]
#[command(name = "stt-tui", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub common: stt_app::CommonArgs,

    /// Print every event as one JSON line for SECONDS seconds (0 = until interrupted), then
    /// exit
    #[arg(long, value_name = "SECONDS")]
    pub dump: Option<u64>,

    /// Control socket to connect to instead of the configured one
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
}

/// Runs the TUI (or the dump).
pub fn run(cli: Cli) -> anyhow::Result<()> {
    let config = cli.common.load_config()?;
    let socket = match cli.socket {
        Some(path) => path,
        None => stt_config::dirs::assistant_socket(&config)?,
    };
    let Some(seconds) = cli.dump else {
        anyhow::bail!(
            "the interactive screen is not built yet; `stt-tui --dump 0` prints the assistant's \
             events as JSON lines until interrupted"
        );
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(dump(socket, seconds))
}

/// Prints events as JSON lines until `seconds` pass (0 = until SIGINT/SIGTERM).
async fn dump(socket: PathBuf, seconds: u64) -> anyhow::Result<()> {
    let mut link = Subscription::assistant(socket, "stt-tui", false);
    let until = async {
        if seconds == 0 {
            std::future::pending::<()>().await;
        }
        tokio::time::sleep(Duration::from_secs(seconds)).await;
    };
    tokio::pin!(until);
    let terminated = stt_app::signals::terminated();
    tokio::pin!(terminated);
    let mut out = std::io::stdout().lock();
    loop {
        let next = tokio::select! {
            () = &mut until => return Ok(()),
            _ = &mut terminated => return Ok(()),
            next = link.next() => next,
        };
        match next {
            Link::Event(event) => {
                out.write_all(&encode_line(&event))?;
                out.flush()?;
            }
            Link::Up(hello) => tracing::info!("connected to {} {}", hello.peer, hello.version),
            Link::Down(why) => tracing::warn!("{why}; retrying"),
        }
    }
}
