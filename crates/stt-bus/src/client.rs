//! The client side: connecting with errors that say what to do, one-shot requests, and
//! subscriptions that survive the other side restarting.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::BytesMut;
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::time::Instant;
use tokio_util::codec::FramedRead;

use stt_proto::{
    AssistantEvent, DaemonEvent, ErrorCode, ErrorMsg, Frame, Hello, Message, NdjsonCodec,
    ProtoError, Request, encode_line, parse,
};

use crate::BusError;

/// A service one can connect to, and how a person starts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Service {
    pub name: &'static str,
    pub start: &'static str,
}

impl Service {
    pub const DAEMON: Self = Self { name: "stt-daemon", start: "stt-daemon up" };
    pub const ASSISTANT: Self = Self { name: "stt-assistant", start: "stt-daemon up" };
}

/// Connects to `path`, turning the usual failures into errors that name the fix.
pub async fn connect_stream(path: &Path, service: Service) -> Result<UnixStream, BusError> {
    UnixStream::connect(path).await.map_err(|e| connect_error(path, service, e))
}

fn connect_error(path: &Path, service: Service, e: std::io::Error) -> BusError {
    use std::io::ErrorKind::*;
    match e.kind() {
        NotFound | ConnectionRefused => BusError::NotRunning {
            service: service.name.to_owned(),
            path: path.to_owned(),
            start: service.start.to_owned(),
        },
        PermissionDenied => BusError::PermissionDenied { path: path.to_owned() },
        _ => BusError::io("cannot connect to", path, e),
    }
}

/// An open connection that has exchanged hellos.
#[derive(Debug)]
pub struct Connection {
    frames: FramedRead<OwnedReadHalf, NdjsonCodec>,
    write: OwnedWriteHalf,
    /// The server's hello.
    pub hello: Hello,
    service: Service,
    /// Message types skipped because their fields did not parse, each warned about once.
    skipped: Skipped,
}

impl Connection {
    /// Connects, sends our hello (as `peer`), and reads and checks the server's.
    pub async fn open(path: &Path, service: Service, peer: &str) -> Result<Self, BusError> {
        let stream = connect_stream(path, service).await?;
        let (read, mut write) = stream.into_split();
        let mut frames = FramedRead::new(read, NdjsonCodec::default());
        if service != Service::DAEMON {
            let hello = encode_line(&Request::Hello(Hello::new(peer)));
            write.write_all(&hello).await.map_err(|e| BusError::io("cannot write to", path, e))?;
        }
        let hello = read_hello(&mut frames, service, peer).await?;
        if service != Service::DAEMON {
            read_hello_ack(&mut frames, service).await?;
        }
        Ok(Self { frames, write, hello, service, skipped: Skipped::default() })
    }

    /// Sends one request.
    pub async fn send(&mut self, request: &Request) -> Result<(), BusError> {
        self.send_raw(&encode_line(request)).await
    }

    /// Sends bytes as they are (tests use this to send malformed lines).
    pub async fn send_raw(&mut self, bytes: &[u8]) -> Result<(), BusError> {
        self.write.write_all(bytes).await.map_err(|_| self.closed())
    }

    /// The next message, skipping types this build does not know, messages of known types
    /// whose fields it cannot read (a newer peer's; one warning per type) and lines over the
    /// limit; `None` when the server closed the connection.
    pub async fn recv<M: Message>(&mut self) -> Result<Option<M>, BusError> {
        recv_from(&mut self.frames, &mut self.skipped).await
    }

    fn closed(&self) -> BusError {
        BusError::Closed { service: self.service.name.to_owned() }
    }
}

/// The message types a reader skipped because their fields did not parse.
#[derive(Debug, Default)]
struct Skipped(std::collections::BTreeSet<String>);

impl Skipped {
    /// Skips a message of a type this build knows but cannot read, with a warning the first
    /// time for each type: a newer peer's new value (`"audio":"muted"`, say) must not cut
    /// the link, which would then reconnect and fail on the next such message forever.
    fn skip(&mut self, kind: &str, error: &ProtoError) {
        if self.0.insert(kind.to_owned()) {
            tracing::warn!(
                "skipping '{kind}' messages this build cannot read ({error}); the peer is \
                 probably newer: update stt (warned once per type)"
            );
        }
    }
}

async fn recv_from<M: Message>(
    frames: &mut FramedRead<OwnedReadHalf, NdjsonCodec>,
    skipped: &mut Skipped,
) -> Result<Option<M>, BusError> {
    loop {
        let line = match frames.next().await {
            None | Some(Err(_)) => return Ok(None),
            Some(Ok(Frame::TooLong { len })) => {
                tracing::warn!(len, "skipped an over-long line from the server");
                continue;
            }
            Some(Ok(Frame::Line(line))) => line,
        };
        match parse::<M>(&line) {
            Ok(msg) => return Ok(Some(msg)),
            Err(e) if e.is_unknown_type() => {
                tracing::debug!("skipped a message of a newer protocol: {e}");
            }
            Err(e) => match e.bad_fields_of() {
                Some(kind) => skipped.skip(kind, &e),
                None => return Err(BusError::Protocol(e.0)),
            },
        }
    }
}

async fn read_hello(
    frames: &mut FramedRead<OwnedReadHalf, NdjsonCodec>,
    service: Service,
    peer: &str,
) -> Result<Hello, BusError> {
    let closed = || BusError::Closed { service: service.name.to_owned() };
    // Both families tag the hello alike; parse leniently so a mismatched version still
    // yields its hello rather than a parse error.
    let hello = if service == Service::DAEMON {
        match recv_from::<DaemonEvent>(frames, &mut Skipped::default()).await?.ok_or_else(closed)? {
            DaemonEvent::Hello(h) => h,
            other => return Err(unexpected_first(service, &other)),
        }
    } else {
        match recv_from::<AssistantEvent>(frames, &mut Skipped::default())
            .await?
            .ok_or_else(closed)?
        {
            AssistantEvent::Hello(h) => h,
            AssistantEvent::Error(e) => return Err(BusError::Protocol(e)),
            other => return Err(unexpected_first(service, &other)),
        }
    };
    hello.check(peer).map_err(BusError::Protocol)?;
    Ok(hello)
}

/// Reads the assistant's answer to our hello: an `ack`, or the error saying why not.
async fn read_hello_ack(
    frames: &mut FramedRead<OwnedReadHalf, NdjsonCodec>,
    service: Service,
) -> Result<(), BusError> {
    loop {
        match recv_from::<AssistantEvent>(frames, &mut Skipped::default()).await? {
            Some(AssistantEvent::Ack(ack)) if ack.command == "hello" => return Ok(()),
            Some(AssistantEvent::Error(e)) => return Err(BusError::Protocol(e)),
            Some(_) => {}
            None => return Err(BusError::Closed { service: service.name.to_owned() }),
        }
    }
}

fn unexpected_first(service: Service, got: &dyn std::fmt::Debug) -> BusError {
    BusError::Protocol(ErrorMsg::new(
        ErrorCode::BadMessage,
        format!("{} did not start with a hello (got {got:?}); is it an stt socket?", service.name),
    ))
}

/// A direct reply, parsed and as it came off the wire (newline included).
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub event: AssistantEvent,
    pub line: bytes::Bytes,
}

/// One request, one reply: connect, send our hello and the request in one write, and
/// return the first direct reply. The reply may be an `error` from the assistant; errors
/// of the connection itself are `Err`.
pub async fn request(
    path: &Path,
    peer: &str,
    request: &Request,
    timeout: Duration,
) -> Result<Reply, BusError> {
    let service = Service::ASSISTANT;
    let exchange = async {
        let stream = connect_stream(path, service).await?;
        let (read, mut write) = stream.into_split();
        let mut out = BytesMut::with_capacity(160);
        out.extend_from_slice(&encode_line(&Request::Hello(Hello::new(peer))));
        out.extend_from_slice(&encode_line(request));
        // A server that refuses us (another protocol version) may close before our write
        // lands; its hello, already sent, says why, so read it before blaming the write.
        let written = write.write_all(&out).await;
        let mut frames = FramedRead::new(read, NdjsonCodec::default());
        read_hello(&mut frames, service, peer).await?;
        written.map_err(|e| BusError::io("cannot write to", path, e))?;
        read_hello_ack(&mut frames, service).await?;
        loop {
            let line = match frames.next().await {
                None | Some(Err(_)) => {
                    return Err(BusError::Closed { service: service.name.to_owned() });
                }
                Some(Ok(Frame::TooLong { .. })) => continue,
                Some(Ok(Frame::Line(line))) => line,
            };
            match parse::<AssistantEvent>(&line) {
                Ok(event) if event.is_reply() => {
                    let mut raw = BytesMut::from(&line[..]);
                    raw.extend_from_slice(b"\n");
                    return Ok(Reply { event, line: raw.freeze() });
                }
                Ok(_) => {}
                Err(e) if e.is_unknown_type() => {}
                // An event of a newer peer's (not our reply): not ours to read.
                Err(e) if e.bad_fields_of().is_some_and(|k| !AssistantEvent::is_reply_type(k)) => {}
                Err(e) => return Err(BusError::Protocol(e.0)),
            }
        }
    };
    tokio::time::timeout(timeout, exchange).await.unwrap_or_else(|_| {
        Err(BusError::Timeout { service: service.name.to_owned(), path: path.to_owned(), timeout })
    })
}

/// How long a subscription's connect, hello and subscribe may take before it is retried.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Capped exponential backoff.
#[derive(Debug, Clone)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    pub fn new(initial: Duration, max: Duration) -> Self {
        Self { initial, max, next: initial }
    }

    /// The delay before the next attempt; each call doubles it, up to the cap.
    pub fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = (self.next * 2).min(self.max);
        delay
    }

    /// Back to the initial delay, after a success.
    pub fn reset(&mut self) {
        self.next = self.initial;
    }
}

impl Default for Backoff {
    /// 100 ms, doubling to at most 2 s: a restarted service is picked up within 2 s.
    fn default() -> Self {
        Self::new(Duration::from_millis(100), Duration::from_secs(2))
    }
}

/// What a long-lived subscription sees.
#[derive(Debug, Clone, PartialEq)]
pub enum Link<M> {
    /// (Re)connected; the server's hello.
    Up(Hello),
    Event(M),
    /// Lost the connection, or could not make it; retrying in the background. Said once
    /// per outage, with the reason.
    Down(String),
}

/// A connection attempt under way, kept across cancelled [`Subscription::next`] calls.
type Attempt = std::pin::Pin<Box<dyn Future<Output = Result<Connection, BusError>> + Send>>;

/// A subscription that reconnects with capped backoff whenever the server goes away.
/// [`Subscription::next`] is cancel-safe, so it can sit in a `select!` loop: a connection
/// attempt that a cancelled call began is resumed by the next call, never begun again (an
/// abandoned attempt left the server a half-open subscriber until its next event).
pub struct Subscription<M> {
    path: PathBuf,
    service: Service,
    peer: String,
    subscribe: Option<Request>,
    backoff: Backoff,
    conn: Option<Connection>,
    attempt: Option<Attempt>,
    retry_at: Option<Instant>,
    down_said: bool,
    _family: std::marker::PhantomData<fn() -> M>,
}

impl<M> std::fmt::Debug for Subscription<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("path", &self.path)
            .field("service", &self.service)
            .field("up", &self.conn.is_some())
            .field("connecting", &self.attempt.is_some())
            .finish_non_exhaustive()
    }
}

impl Subscription<DaemonEvent> {
    /// Follows the daemon's event socket.
    pub fn daemon(path: impl Into<PathBuf>, peer: &str) -> Self {
        Self::new(path.into(), Service::DAEMON, peer, None)
    }
}

impl Subscription<AssistantEvent> {
    /// Subscribes to the assistant's events, as a viewer or not.
    pub fn assistant(path: impl Into<PathBuf>, peer: &str, viewer: bool) -> Self {
        Self::new(path.into(), Service::ASSISTANT, peer, Some(Request::Subscribe { viewer }))
    }
}

impl<M: Message> Subscription<M> {
    fn new(path: PathBuf, service: Service, peer: &str, subscribe: Option<Request>) -> Self {
        Self {
            path,
            service,
            peer: peer.to_owned(),
            subscribe,
            backoff: Backoff::default(),
            conn: None,
            attempt: None,
            retry_at: None,
            down_said: false,
            _family: std::marker::PhantomData,
        }
    }

    pub fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// Whether a connection is up right now.
    pub fn is_up(&self) -> bool {
        self.conn.is_some()
    }

    /// Sends a request on the live connection (a TUI's key press, say).
    pub async fn send(&mut self, request: &Request) -> Result<(), BusError> {
        match &mut self.conn {
            Some(conn) => conn.send(request).await,
            None => Err(BusError::Closed { service: self.service.name.to_owned() }),
        }
    }

    /// The next thing that happens on the link.
    pub async fn next(&mut self) -> Link<M> {
        loop {
            if let Some(conn) = &mut self.conn {
                match conn.recv::<M>().await {
                    Ok(Some(event)) => return Link::Event(event),
                    outcome => {
                        self.conn = None;
                        self.down_said = true;
                        self.retry_at = Some(Instant::now() + self.backoff.next_delay());
                        let why = match outcome {
                            Err(e) => e.to_string(),
                            _ => format!("{} closed the connection", self.service.name),
                        };
                        return Link::Down(why);
                    }
                }
            }
            if self.attempt.is_none()
                && let Some(at) = self.retry_at
            {
                tokio::time::sleep_until(at).await;
            }
            let attempt = self.attempt.get_or_insert_with(|| {
                Box::pin(connect(
                    self.path.clone(),
                    self.service,
                    self.peer.clone(),
                    self.subscribe.clone(),
                ))
            });
            let outcome = attempt.await;
            self.attempt = None;
            match outcome {
                Ok(conn) => {
                    let hello = conn.hello.clone();
                    self.conn = Some(conn);
                    self.backoff.reset();
                    self.retry_at = None;
                    self.down_said = false;
                    return Link::Up(hello);
                }
                Err(e) => {
                    self.retry_at = Some(Instant::now() + self.backoff.next_delay());
                    if !self.down_said {
                        self.down_said = true;
                        return Link::Down(e.to_string());
                    }
                }
            }
        }
    }
}

/// Connects and, for the assistant, subscribes; `Up` is only reported once the
/// subscription is acknowledged, so no event published after `Up` is missed.
async fn connect(
    path: PathBuf,
    service: Service,
    peer: String,
    subscribe: Option<Request>,
) -> Result<Connection, BusError> {
    let attempt = async {
        let mut conn = Connection::open(&path, service, &peer).await?;
        if let Some(subscribe) = &subscribe {
            conn.send(subscribe).await?;
            loop {
                match conn.recv::<AssistantEvent>().await? {
                    Some(AssistantEvent::Ack(ack)) if ack.command == subscribe.kind() => break,
                    Some(AssistantEvent::Error(e)) => return Err(BusError::Protocol(e)),
                    Some(_) => {}
                    None => return Err(conn.closed()),
                }
            }
        }
        Ok(conn)
    };
    let timeout = CONNECT_TIMEOUT;
    tokio::time::timeout(timeout, attempt).await.unwrap_or_else(|_| {
        Err(BusError::Timeout { service: service.name.to_owned(), path: path.clone(), timeout })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_its_cap_and_resets() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(500));
        let delays: Vec<_> = (0..5).map(|_| b.next_delay().as_millis()).collect();
        assert_eq!(delays, [100, 200, 400, 500, 500]);
        b.reset();
        assert_eq!(b.next_delay(), Duration::from_millis(100));
    }

    #[tokio::test]
    async fn nothing_listening_says_how_to_start_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stt-assistant.sock");
        let err =
            request(&path, "test", &Request::Status, Duration::from_secs(1)).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "stt-assistant is not running (nothing listens on '{}'): start it with `stt-daemon up`",
                path.display()
            )
        );
    }

    #[tokio::test]
    async fn a_cancelled_next_resumes_its_connection_attempt() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stt-daemon.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        listener.set_nonblocking(true).unwrap();
        let mut sub = Subscription::daemon(&path, "test");
        // Nobody answers yet: each call is cancelled while it waits for the hello, as a
        // `select!` that another branch wins cancels it.
        for _ in 0..5 {
            let cancelled = tokio::time::timeout(Duration::from_millis(20), sub.next()).await;
            assert!(cancelled.is_err(), "{cancelled:?}");
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut server = loop {
            match listener.accept() {
                Ok((stream, _)) => break stream,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    assert!(std::time::Instant::now() < deadline, "no connection came");
                    tokio::task::yield_now().await;
                }
                Err(e) => panic!("{e}"),
            }
        };
        server.write_all(&encode_line(&DaemonEvent::Hello(Hello::new("stt-daemon")))).unwrap();
        let up = tokio::time::timeout(Duration::from_secs(10), sub.next()).await.unwrap();
        assert!(matches!(up, Link::Up(_)), "{up:?}");
        // The five cancelled calls made one connection between them, not five.
        let more = listener.accept().map(|_| ()).map_err(|e| e.kind());
        assert_eq!(more, Err(std::io::ErrorKind::WouldBlock));
    }
}
