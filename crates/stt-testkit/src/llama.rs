//! The real local model the tests use: llama.cpp's `llama-server` and the small GGUF that
//! `scripts/fetch-llm` (run by `scripts/setup`) installs. A test that needs them fails with
//! the fix when they are missing.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::models_dir;

/// The GGUF `scripts/fetch-llm` assembles into the models directory.
pub const MODEL: &str = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";

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
