//! The socket bus every stt process talks over.
//!
//! Modules, in reading order:
//! - [`socket`]: binding a Unix socket that only we can use: created 0600 with no window
//!   where it is wider, one instance per path (a live socket means "already running", a
//!   stale one is replaced), peers of another uid refused, the file removed on drop.
//! - [`publisher`]: fan-out of events to subscribers, each with a bounded queue; one that
//!   falls behind is dropped with a final `lagged` error and never slows the others.
//! - [`publish_server`]: the daemon's publish-only socket.
//! - [`control`]: the assistant's request/response + subscription socket.
//! - [`client`]: connecting with errors that say what to do, one-shot requests (stt-ctl)
//!   and long-lived subscriptions that reconnect with capped backoff.
//!
//! # Invariants
//!
//! The publish-only socket never parses what a subscriber sends (it reads only to notice the
//! peer left). The publisher never waits for a subscriber: one that falls a ring behind gets a
//! final `error{code:"lagged"}` and is disconnected; one whose writes stall for 10 s is dropped.
//! Every request on the control socket gets exactly one reply, in order. Event batches are
//! written only outside `select!`, so a cancelled branch never leaves half a line on the wire.

pub mod client;
pub mod control;
pub mod publish_server;
pub mod publisher;
pub mod socket;

pub use client::{Backoff, Connection, Link, Reply, Service, Subscription, request};
pub use control::{ConnInfo, ControlServer, Handler};
pub use publisher::Publisher;
pub use socket::{BoundSocket, peer_is_us};

use std::path::PathBuf;
use std::time::Duration;

/// How long a write to one peer may stall before that peer is given up on.
pub const WRITE_STALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Everything that can go wrong on the bus, worded for the person who has to fix it.
#[derive(Debug, thiserror::Error)]
pub enum BusError {
    #[error("{service} is already running (its socket '{path}' answers); stop it first, or use it")]
    AlreadyRunning { service: String, path: PathBuf },

    #[error("{service} is not running (nothing listens on '{path}'): start it with `{start}`")]
    NotRunning { service: String, path: PathBuf, start: String },

    #[error(
        "permission denied on '{path}': it belongs to another user or has the wrong mode; \
             remove it or set STT_RUNTIME_DIR to a directory of your own"
    )]
    PermissionDenied { path: PathBuf },

    #[error("refusing to replace '{path}': it exists and is not a socket; move it away")]
    NotASocket { path: PathBuf },

    #[error("{service} did not answer within {timeout:?} on '{path}'")]
    Timeout { service: String, path: PathBuf, timeout: Duration },

    #[error("{service} closed the connection before replying")]
    Closed { service: String },

    #[error("{0}")]
    Protocol(stt_proto::ErrorMsg),

    #[error("{context} '{path}': {source}")]
    Io {
        context: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl BusError {
    fn io(context: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io { context, path: path.into(), source }
    }
}
