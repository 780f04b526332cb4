//! Fan-out of events to any number of subscribers.
//!
//! Each event is serialized once and shared. Every subscriber reads from its own position in
//! a bounded ring (a tokio `broadcast` channel), so the publisher never waits for anyone: a
//! subscriber that falls a whole ring behind is told `lagged` and disconnected, and it
//! costs the others nothing.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use serde::Serialize;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::broadcast;

use stt_proto::{ErrorCode, ErrorMsg, encode_line, error_line};

/// The default number of events a subscriber may fall behind before it is dropped.
pub const DEFAULT_QUEUE_LEN: usize = 1024;

/// How many queued events go out in one write.
const MAX_BATCH: usize = 64;

/// Publishes events to every current subscriber. Cloning gives another handle to the same
/// stream.
///
/// An event published *retained* ([`Publisher::publish_retained`]) is also kept, the newest
/// per key, for subscribers that connect later: the publish server hands them these right
/// after its hello (the daemon's speaker roster, which is sent only when it changes).
#[derive(Debug, Clone)]
pub struct Publisher {
    tx: broadcast::Sender<Bytes>,
    retained: Arc<Mutex<BTreeMap<&'static str, Bytes>>>,
}

impl Publisher {
    /// A publisher whose subscribers may each fall `queue_len` events behind.
    pub fn new(queue_len: usize) -> Self {
        let (tx, _) = broadcast::channel(queue_len.max(1));
        Self { tx, retained: Arc::default() }
    }

    /// Publishes one message; returns how many subscribers will receive it.
    pub fn publish<M: Serialize + ?Sized>(&self, msg: &M) -> usize {
        self.publish_line(encode_line(msg))
    }

    /// Publishes an already encoded line (with its newline).
    pub fn publish_line(&self, line: Bytes) -> usize {
        self.tx.send(line).unwrap_or(0)
    }

    /// Publishes `msg` and keeps it as the newest under `key`, for every later subscriber
    /// ([`Publisher::retained`]).
    pub fn publish_retained<M: Serialize + ?Sized>(&self, key: &'static str, msg: &M) -> usize {
        let line = encode_line(msg);
        // Kept and sent under one lock: a subscriber that takes the retained lines after
        // subscribing gets each one at least once (twice at worst), never none.
        let mut retained = self.retained.lock().unwrap_or_else(PoisonError::into_inner);
        retained.insert(key, line.clone());
        self.tx.send(line).unwrap_or(0)
    }

    /// The retained lines, one per key: what a subscriber that just subscribed is sent
    /// first.
    pub fn retained(&self) -> Vec<Bytes> {
        self.retained.lock().unwrap_or_else(PoisonError::into_inner).values().cloned().collect()
    }

    /// A new subscriber's queue; it sees every event published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Bytes> {
        self.tx.subscribe()
    }

    /// How many subscribers are attached.
    pub fn subscribers(&self) -> usize {
        self.tx.receiver_count()
    }
}

impl Default for Publisher {
    fn default() -> Self {
        Self::new(DEFAULT_QUEUE_LEN)
    }
}

/// What [`next_batch`] gathered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Batch {
    /// `buf` holds one or more lines to write.
    Ready,
    /// The publisher is gone; `buf` is empty.
    Closed,
    /// The subscriber fell this many events behind; `buf` holds what came before the gap.
    Lagged(u64),
}

/// How delivering a batch went.
#[derive(Debug)]
pub(crate) enum Forward {
    /// The batch went out; carry on.
    Sent,
    /// Stop serving this subscriber: the publisher is gone, it lagged, or writing failed
    /// or stalled.
    Stop,
}

/// Waits for the next events on `rx` and gathers up to a batch of them into `buf`.
///
/// Cancel-safe: the only await is `recv`, and nothing is taken off the queue until it
/// completes, so this can sit in a `select!` next to other sources.
pub(crate) async fn next_batch(rx: &mut broadcast::Receiver<Bytes>, buf: &mut Vec<u8>) -> Batch {
    buf.clear();
    match rx.recv().await {
        Ok(line) => buf.extend_from_slice(&line),
        Err(broadcast::error::RecvError::Closed) => return Batch::Closed,
        Err(broadcast::error::RecvError::Lagged(n)) => return Batch::Lagged(n),
    }
    for _ in 1..MAX_BATCH {
        match rx.try_recv() {
            Ok(line) => buf.extend_from_slice(&line),
            Err(broadcast::error::TryRecvError::Lagged(n)) => return Batch::Lagged(n),
            Err(_) => break,
        }
    }
    Batch::Ready
}

/// Writes a gathered batch to `out`; after a gap, sends the final `lagged` error.
pub(crate) async fn deliver<W: AsyncWrite + Unpin>(
    out: &mut W,
    buf: &[u8],
    batch: Batch,
) -> Forward {
    if batch == Batch::Closed {
        return Forward::Stop;
    }
    if !buf.is_empty()
        && let Err(e) = write_within(out, buf).await
    {
        tracing::debug!("subscriber gone: {e}");
        return Forward::Stop;
    }
    match batch {
        Batch::Lagged(missed) => {
            send_lagged(out, missed).await;
            Forward::Stop
        }
        _ => Forward::Sent,
    }
}

async fn send_lagged<W: AsyncWrite + Unpin>(out: &mut W, missed: u64) {
    tracing::warn!(missed, "dropping a subscriber that fell behind");
    let line = error_line(ErrorMsg::new(
        ErrorCode::Lagged,
        format!(
            "this subscriber fell {missed} events behind and is disconnected; reconnect, and read \
             events as they arrive"
        ),
    ));
    // The peer is slow, maybe stuck: try once, briefly.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), out.write_all(&line)).await;
    let _ = out.flush().await;
}

/// Writes all of `bytes`, failing if the peer does not take them within the stall timeout.
pub(crate) async fn write_within<W: AsyncWrite + Unpin>(
    out: &mut W,
    bytes: &[u8],
) -> std::io::Result<()> {
    match tokio::time::timeout(crate::WRITE_STALL_TIMEOUT, out.write_all(bytes)).await {
        Ok(result) => result,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "the peer stopped reading; giving up on it",
        )),
    }
}
