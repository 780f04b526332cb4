//! The assistant's control socket: requests in, one reply each, and events out to the
//! connections that subscribed.
//!
//! The server does the protocol work (hello, framing, line limit, parse errors, subscribe)
//! and hands every other request to a [`Handler`]. A bad line gets a coded error and the
//! connection stays usable; a per-connection failure never reaches the accept loop.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use futures_util::StreamExt;
use tokio::net::UnixStream;
use tokio::sync::broadcast;
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use stt_proto::{
    Ack, AssistantEvent, ErrorCode, ErrorMsg, Frame, Hello, NdjsonCodec, Request, encode_line,
    parse, reply_line, request_id,
};

use crate::publisher::{Batch, Forward, deliver, next_batch, write_within};
use crate::{BoundSocket, Publisher};

/// What the server knows about one connection.
#[derive(Debug, Clone, Default)]
pub struct ConnInfo {
    /// Unique per server, in order of arrival.
    pub id: u64,
    /// The `peer` of the client's hello, if it sent one (`stt-ctl`, `stt-tui`, …).
    pub peer: Option<String>,
    /// Subscribed with `viewer: true`.
    pub viewer: bool,
}

/// Answers requests. `hello` and `subscribe` never reach it.
pub trait Handler: Send + Sync + 'static {
    /// Handles one request and returns its direct reply: `ack`, `status`, `speaker_list`,
    /// or `error`. Events caused by the request go out through the [`Publisher`].
    fn handle(
        &self,
        conn: &ConnInfo,
        request: Request,
    ) -> impl Future<Output = AssistantEvent> + Send;
}

/// The control socket server.
#[derive(Debug)]
pub struct ControlServer<H> {
    handler: Arc<H>,
    publisher: Publisher,
    viewers: Arc<AtomicUsize>,
    max_line: usize,
    name: String,
}

impl<H: Handler> ControlServer<H> {
    /// A server that answers with `handler` and streams `publisher`'s events to subscribers.
    pub fn new(handler: Arc<H>, publisher: Publisher) -> Self {
        Self {
            handler,
            publisher,
            viewers: Arc::default(),
            max_line: stt_proto::MAX_LINE_BYTES,
            name: "stt-assistant".to_owned(),
        }
    }

    /// Sets the longest accepted request line.
    pub fn with_max_line(mut self, max_line: usize) -> Self {
        self.max_line = max_line;
        self
    }

    /// Counts viewers in `viewers` (shared with whoever needs the count) instead of a
    /// counter of its own.
    pub fn with_viewer_counter(mut self, viewers: Arc<AtomicUsize>) -> Self {
        self.viewers = viewers;
        self
    }

    /// The number of connections subscribed as viewers, kept current by the server.
    pub fn viewers(&self) -> Arc<AtomicUsize> {
        Arc::clone(&self.viewers)
    }

    /// Serves `socket` until `shutdown` is cancelled, then waits for its connections to end.
    pub async fn serve(self, socket: BoundSocket, shutdown: CancellationToken) {
        let this = Arc::new(self);
        let tracker = TaskTracker::new();
        let mut next_id = 0u64;
        loop {
            let stream = tokio::select! {
                () = shutdown.cancelled() => break,
                stream = socket.accept() => stream,
            };
            next_id += 1;
            let conn = ConnInfo { id: next_id, ..ConnInfo::default() };
            let this = Arc::clone(&this);
            let shutdown = shutdown.clone();
            tracker.spawn(async move {
                let viewer = this.connection(stream, conn, shutdown).await;
                if viewer {
                    this.viewers.fetch_sub(1, Ordering::SeqCst);
                }
            });
        }
        tracker.close();
        tracker.wait().await;
    }

    /// Runs one connection; returns whether it had registered as a viewer.
    async fn connection(
        &self,
        stream: UnixStream,
        mut conn: ConnInfo,
        shutdown: CancellationToken,
    ) -> bool {
        let (read, mut write) = stream.into_split();
        let mut frames = FramedRead::new(read, NdjsonCodec::new(self.max_line));
        let hello = encode_line(&AssistantEvent::Hello(Hello::new(&self.name)));
        if write_within(&mut write, &hello).await.is_err() {
            return false;
        }
        let mut events: Option<broadcast::Receiver<Bytes>> = None;
        let mut buf = Vec::new();
        loop {
            enum Next {
                Frame(Option<std::io::Result<Frame>>),
                Batch(Batch),
            }
            let next = tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                frame = frames.next() => Next::Frame(frame),
                batch = maybe_batch(events.as_mut(), &mut buf) => Next::Batch(batch),
            };
            let line = match next {
                // A write to a peer that stopped reading may stall for the stall timeout;
                // shutdown must not wait that long (as in the publish server).
                Next::Batch(batch) => {
                    let sent = tokio::select! {
                        () = shutdown.cancelled() => break,
                        sent = deliver(&mut write, &buf, batch) => sent,
                    };
                    match sent {
                        Forward::Sent => continue,
                        Forward::Stop => break,
                    }
                }
                Next::Frame(None | Some(Err(_))) => break,
                Next::Frame(Some(Ok(Frame::TooLong { len }))) => Err(ErrorMsg::new(
                    ErrorCode::TooLong,
                    format!(
                        "a line of {len} bytes is over the {}-byte limit and was discarded",
                        self.max_line
                    ),
                )),
                Next::Frame(Some(Ok(Frame::Line(line)))) => Ok(line),
            };
            // The reply names the request's `id`, when it has one (a line too long to read
            // has none).
            let (id, reply) = match line {
                Err(error) => (None, AssistantEvent::Error(error)),
                Ok(line) => {
                    let id = request_id(&line);
                    let reply = match parse::<Request>(&line) {
                        Err(e) => AssistantEvent::Error(e.0),
                        Ok(Request::Hello(theirs)) => match theirs.check(&self.name) {
                            Ok(()) => {
                                conn.peer = Some(theirs.peer);
                                AssistantEvent::Ack(Ack { command: "hello".into(), ok: true })
                            }
                            Err(e) => {
                                let refusal = reply_line(&AssistantEvent::Error(e), id.as_ref());
                                let _ = write_within(&mut write, &refusal).await;
                                break;
                            }
                        },
                        Ok(Request::Subscribe { viewer }) => {
                            if events.is_none() {
                                events = Some(self.publisher.subscribe());
                            }
                            if viewer && !conn.viewer {
                                conn.viewer = true;
                                self.viewers.fetch_add(1, Ordering::SeqCst);
                            }
                            AssistantEvent::Ack(Ack { command: "subscribe".into(), ok: true })
                        }
                        Ok(request) => self.handler.handle(&conn, request).await,
                    };
                    (id, reply)
                }
            };
            let reply = reply_line(&reply, id.as_ref());
            let written = tokio::select! {
                () = shutdown.cancelled() => break,
                written = write_within(&mut write, &reply) => written,
            };
            if written.is_err() {
                break;
            }
        }
        conn.viewer
    }
}

async fn maybe_batch(events: Option<&mut broadcast::Receiver<Bytes>>, buf: &mut Vec<u8>) -> Batch {
    match events {
        Some(rx) => next_batch(rx, buf).await,
        None => std::future::pending().await,
    }
}
