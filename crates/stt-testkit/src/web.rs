//! A web server for the tests of the web tools: fixed pages on a free local port, served
//! from a thread of its own (any runtime, or none), one connection at a time.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// One page: its path, content type and body.
pub type Page = (&'static str, &'static str, Vec<u8>);

/// The server; it stops with the test process.
#[derive(Debug, Clone)]
pub struct WebServer {
    base: String,
    asked: Arc<Mutex<Vec<String>>>,
}

impl WebServer {
    /// Serves `pages` (404 for any other path) on a free port of 127.0.0.1.
    pub fn start(pages: Vec<Page>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .unwrap_or_else(|e| panic!("a free local port for the web server: {e}"));
        let addr =
            listener.local_addr().unwrap_or_else(|e| panic!("the web server's address: {e}"));
        let base = format!("http://{addr}");
        let asked = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&asked);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let mut reader = BufReader::new(match conn.try_clone() {
                    Ok(c) => c,
                    Err(_) => continue,
                });
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    continue;
                }
                // The rest of the head, up to its empty line.
                let mut header = String::new();
                while reader.read_line(&mut header).is_ok_and(|n| n > 0) && header.trim() != "" {
                    header.clear();
                }
                let target = line.split(' ').nth(1).unwrap_or("").to_owned();
                if let Ok(mut seen) = seen.lock() {
                    seen.push(target.clone());
                }
                let path = target.split('?').next().unwrap_or("");
                let (status, kind, body) = match pages.iter().find(|(p, ..)| *p == path) {
                    Some((_, kind, body)) => ("200 OK", *kind, body.clone()),
                    None => ("404 Not Found", "text/plain", b"no such page".to_vec()),
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n",
                    body.len()
                );
                let _ = conn.write_all(head.as_bytes()).and_then(|()| conn.write_all(&body));
            }
        });
        Self { base, asked }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.base
    }

    /// The request targets (path and query) asked for so far, in order.
    pub fn asked(&self) -> Vec<String> {
        self.asked.lock().map(|a| a.clone()).unwrap_or_default()
    }
}
