//! `--dump N`: every event of the assistant as one JSON line, for pipes and scripts.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use stt_bus::{Link, Subscription};
use stt_proto::encode_line;

/// Prints events as JSON lines until `seconds` pass (0 = until SIGINT/SIGTERM).
pub async fn dump(socket: PathBuf, seconds: u64) -> anyhow::Result<()> {
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
                crate::trace_event(&event);
                out.write_all(&encode_line(&event))?;
                out.flush()?;
            }
            Link::Up(hello) => tracing::info!("connected to {} {}", hello.peer, hello.version),
            Link::Down(why) => tracing::warn!("{why}; retrying"),
        }
    }
}
