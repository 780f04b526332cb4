//! The recording proxy between the lanes and the model's server: one request per connection,
//! each response timed as it arrives and kept whole.

use std::io::{Read as _, Write as _};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::output::Output;

/// A request the proxy forwarded, and the response as it came.
#[derive(Debug)]
pub struct Exchange {
    /// When the proxy had the whole request.
    pub sent: Instant,
    pub request: Value,
    pub raw: Vec<u8>,
    /// When each read of the response ended, and how many bytes there were by then.
    pub reads: Vec<(Instant, usize)>,
    pub done: Instant,
}

/// A recording HTTP proxy in front of the model's server: every request of the lanes goes
/// through it, one per connection (`Connection: close` both ways), so that each response is
/// timed as it arrives and kept whole.
#[derive(Debug)]
pub struct Proxy {
    /// The chat completions URL to give the lanes.
    pub url: String,
    pub log: Arc<Mutex<Vec<Exchange>>>,
    /// Connections being served.
    open: Arc<AtomicUsize>,
}

pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Proxy {
    /// A proxy for `upstream`, an `http://` chat completions URL.
    pub fn start(upstream: &str) -> Self {
        let rest = upstream
            .strip_prefix("http://")
            .unwrap_or_else(|| panic!("the proxy takes http:// URLs, not {upstream}"));
        let (authority, path) =
            rest.split_once('/').map_or((rest, String::new()), |(a, p)| (a, format!("/{p}")));
        let authority =
            if authority.contains(':') { authority.to_owned() } else { format!("{authority}:80") };
        let listener = TcpListener::bind("127.0.0.1:0")
            .unwrap_or_else(|e| panic!("cannot listen on loopback: {e}"));
        let port = listener.local_addr().map_or(0, |a| a.port());
        let log: Arc<Mutex<Vec<Exchange>>> = Arc::default();
        let open = Arc::new(AtomicUsize::new(0));
        let (accept_log, accept_open) = (Arc::clone(&log), Arc::clone(&open));
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                accept_open.fetch_add(1, Ordering::SeqCst);
                let (log, open, authority) =
                    (Arc::clone(&accept_log), Arc::clone(&accept_open), authority.clone());
                std::thread::spawn(move || {
                    if let Some(exchange) = forward(client, &authority) {
                        lock(&log).push(exchange);
                    }
                    open.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        Self { url: format!("http://127.0.0.1:{port}{path}"), log, open }
    }

    /// What the model sent back since the last call, request by request, once every
    /// connection is over.
    pub fn take(&self) -> Vec<Output> {
        let idle = stt_testkit::wait_until(Duration::from_secs(60), || {
            (self.open.load(Ordering::SeqCst) == 0).then_some(())
        });
        if idle.is_none() {
            eprintln!("bench-llm: a request through the proxy is still open after 60 s");
        }
        let mut exchanges = std::mem::take(&mut *lock(&self.log));
        exchanges.sort_by_key(|e| e.sent);
        exchanges.iter().map(Output::of).collect()
    }
}

pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The value of the header `name` in an HTTP head.
pub fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines()
        .skip(1)
        .filter_map(|line| line.split_once(':'))
        .find(|(key, _)| key.trim().eq_ignore_ascii_case(name))
        .map(|(_, value)| value.trim())
}

/// Reads one request: its head and body.
fn read_request(client: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    let head_end = loop {
        if let Some(at) = find(&data, b"\r\n\r\n") {
            break at + 4;
        }
        let n = client.read(&mut buf).ok().filter(|&n| n > 0)?;
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let length: usize = header(&head, "content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
    while data.len() < head_end + length {
        let n = client.read(&mut buf).ok().filter(|&n| n > 0)?;
        data.extend_from_slice(&buf[..n]);
    }
    Some((head, data[head_end..].to_vec()))
}

/// The request's head for `authority`: one request on the connection, no compression.
fn rewrite_head(head: &str, authority: &str) -> String {
    let mut lines = head.split("\r\n").filter(|l| !l.is_empty());
    let mut out = format!("{}\r\n", lines.next().unwrap_or_default());
    for line in lines {
        let name = line.split(':').next().unwrap_or_default().trim().to_ascii_lowercase();
        if !["host", "connection", "keep-alive", "accept-encoding"].contains(&name.as_str()) {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str(&format!("Host: {authority}\r\nConnection: close\r\n\r\n"));
    out
}

/// A chunked body decoded, and whether its last chunk came.
pub fn dechunk(body: &[u8]) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        let Some(line) = find(&body[at..], b"\r\n") else { return (out, false) };
        let size = String::from_utf8_lossy(&body[at..at + line]);
        let Ok(size) = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16)
        else {
            return (out, false);
        };
        at += line + 2;
        if size == 0 {
            return (out, true);
        }
        if body.len() < at + size {
            out.extend_from_slice(&body[at..]);
            return (out, false);
        }
        out.extend_from_slice(&body[at..at + size]);
        at += size + 2;
        if at > body.len() {
            return (out, false);
        }
    }
}

/// Whether a response has come whole.
fn response_complete(raw: &[u8]) -> bool {
    let Some(head_end) = find(raw, b"\r\n\r\n").map(|at| at + 4) else { return false };
    let head = String::from_utf8_lossy(&raw[..head_end]);
    if header(&head, "transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        return dechunk(&raw[head_end..]).1;
    }
    header(&head, "content-length")
        .and_then(|v| v.parse::<usize>().ok())
        .is_some_and(|length| raw.len() - head_end >= length)
}

/// Forwards one request from `client` to `authority` and the response back, as it comes.
fn forward(mut client: TcpStream, authority: &str) -> Option<Exchange> {
    let _ = client.set_read_timeout(Some(Duration::from_secs(30)));
    let (head, body) = read_request(&mut client)?;
    let sent = Instant::now();
    let mut upstream = TcpStream::connect(authority).ok()?;
    let _ = upstream.set_read_timeout(Some(Duration::from_secs(900)));
    upstream.write_all(rewrite_head(&head, authority).as_bytes()).ok()?;
    upstream.write_all(&body).ok()?;
    let (mut raw, mut reads) = (Vec::new(), Vec::new());
    let mut buf = vec![0u8; 1 << 16];
    while let Ok(n) = upstream.read(&mut buf) {
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
        reads.push((Instant::now(), raw.len()));
        if client.write_all(&buf[..n]).is_err() || response_complete(&raw) {
            break;
        }
    }
    let _ = client.shutdown(Shutdown::Both);
    let request = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(Exchange { sent, request, raw, reads, done: Instant::now() })
}
