//! The real local model the tests use: llama.cpp's `llama-server` and the small GGUF that
//! `scripts/fetch-llm` (run by `scripts/setup`) installs. A test that needs them fails with
//! the fix when they are missing.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::models_dir;

/// The GGUF `scripts/fetch-llm` assembles into the models directory.
pub const MODEL: &str = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf";

/// Where `scripts/fetch-llm` caches llama-server (`STT_LLAMA_SERVER` overrides it), as seen
/// by this test process.
pub fn server_program() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let path = var("STT_LLAMA_SERVER").unwrap_or_else(|| {
        var("XDG_CACHE_HOME")
            .or_else(|| var("HOME").map(|h| h.join(".cache")))
            .unwrap_or_default()
            .join("stt/llama/llama-server")
    });
    assert!(
        path.is_file(),
        "no llama-server at {}: run scripts/fetch-llm (scripts/setup runs it)",
        path.display()
    );
    path
}

/// The installed model.
pub fn model() -> PathBuf {
    let path = models_dir().join(MODEL);
    assert!(
        path.is_file(),
        "no {MODEL} in {}: run scripts/fetch-llm (scripts/setup runs it)",
        path.parent().unwrap_or(Path::new("")).display()
    );
    path
}

/// The status code of `GET /health` on `127.0.0.1:port` (503 while the model loads, 200
/// once it is ready), if something answers.
pub fn health(port: u16) -> Option<u16> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream
        .write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut head = [0u8; 64];
    let n = stream.read(&mut head).ok()?;
    let line = String::from_utf8_lossy(&head[..n]).into_owned();
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A running llama-server, killed when dropped.
#[derive(Debug)]
pub struct Server {
    child: Child,
    pub port: u16,
    log: PathBuf,
}

impl Server {
    /// Starts the installed model on a free port (its log in `dir`) and waits until it is
    /// ready.
    pub fn start(dir: &Path) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or_else(|e| panic!("no free port: {e}"));
        Self::start_on(dir, port)
    }

    /// [`Server::start`] on `port` (one a server that died had), appending to its log.
    #[allow(clippy::print_stderr, reason = "how long it took, for the test's output")]
    pub fn start_on(dir: &Path, port: u16) -> Self {
        let log = dir.join("llama-server.log");
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap_or_else(|e| panic!("{}: {e}", log.display()));
        let child = Command::new(server_program())
            .arg("-m")
            .arg(model())
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            // Two slots of 4096 tokens as `stt-daemon up` runs it (commands keep their own
            // prompt cache), on one thread: the tests share a 2-core machine.
            .args(["-t", "1", "-c", "8192", "-np", "2", "--jinja"])
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap_or_else(|e| panic!("{e}")))
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start llama-server: {e}; run scripts/fetch-llm"));
        let mut server = Self { child, port, log };
        let started = Instant::now();
        crate::expect_within(
            "llama-server answers GET /health with 200",
            Duration::from_secs(60),
            || {
                if let Ok(Some(status)) = server.child.try_wait() {
                    panic!("llama-server exited ({status}); its log:\n{}", server.log());
                }
                match health(server.port) {
                    Some(200) => Ok(()),
                    other => Err(format!("{other:?}")),
                }
            },
        );
        eprintln!("llama-server ready in {:.1} s", started.elapsed().as_secs_f64());
        server
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
