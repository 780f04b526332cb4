//! What becomes of the children's output: split into lines, the last few kept for a
//! give-up message ([`Ring`]), and each written, prefixed with the child's name, to stderr,
//! a log file, or nowhere ([`Output`]).

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::Context;
use tokio::io::{AsyncRead, AsyncReadExt};

/// Lines kept from each child's stderr for the message that gives up on it.
pub const RING_LINES: usize = 20;

/// The longest line passed on whole; a longer one is cut into pieces of this many bytes.
pub const MAX_LINE: usize = 8 * 1024;

/// Where prefixed lines go.
#[derive(Debug)]
enum Sink {
    Stderr,
    File(File),
}

/// The one place every child's lines, and `up`'s own, are written to; a line is written
/// whole, so lines of different children never interleave.
#[derive(Debug)]
pub struct Output {
    sink: Mutex<Sink>,
    /// The log file, when lines go to one.
    path: Option<std::path::PathBuf>,
}

/// A log file longer than this is moved aside (`…​.1`) when `up` starts.
pub const MAX_LOG_BYTES: u64 = 8 << 20;

impl Output {
    /// Lines to `up`'s stderr.
    pub fn stderr() -> Self {
        Self { sink: Mutex::new(Sink::Stderr), path: None }
    }

    /// Lines appended to `path` (created 0600 if missing, its directory 0700); a file over
    /// [`MAX_LOG_BYTES`] is first moved aside to `path.1`, replacing an older one.
    pub fn file(path: &Path) -> anyhow::Result<Self> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .with_context(|| format!("cannot create '{}' for the log", dir.display()))?;
        }
        if std::fs::metadata(path).is_ok_and(|m| m.len() > MAX_LOG_BYTES) {
            let mut aside = path.as_os_str().to_owned();
            aside.push(".1");
            std::fs::rename(path, &aside)
                .with_context(|| format!("cannot move the long log '{}' aside", path.display()))?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)
            .with_context(|| format!("cannot open the log file '{}'", path.display()))?;
        Ok(Self { sink: Mutex::new(Sink::File(file)), path: Some(path.to_owned()) })
    }

    /// The log file, when lines go to one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Writes `[name] line`. A failed write is dropped: logs must never stop the supervisor.
    pub fn line(&self, name: &str, line: &str) {
        let text = prefixed(name, line);
        let mut sink = self.sink.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = match &mut *sink {
            Sink::Stderr => std::io::stderr().lock().write_all(text.as_bytes()),
            Sink::File(file) => file.write_all(text.as_bytes()),
        };
    }
}

/// `[name] line\n`.
pub fn prefixed(name: &str, line: &str) -> String {
    format!("[{name}] {line}\n")
}

/// Splits a byte stream into lines: `\n` ends a line (a `\r` before it is dropped), invalid
/// UTF-8 is replaced, and a line longer than the limit is passed on in pieces.
#[derive(Debug)]
pub struct LineSplitter {
    pending: Vec<u8>,
    max: usize,
}

impl Default for LineSplitter {
    fn default() -> Self {
        Self::new(MAX_LINE)
    }
}

impl LineSplitter {
    /// A splitter that passes on at most `max` bytes per line (at least 1).
    pub fn new(max: usize) -> Self {
        Self { pending: Vec::new(), max: max.max(1) }
    }

    /// The lines `bytes` completes.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut lines = Vec::new();
        for &byte in bytes {
            if byte == b'\n' {
                lines.push(self.take());
            } else {
                self.pending.push(byte);
                if self.pending.len() >= self.max {
                    lines.push(self.take());
                }
            }
        }
        lines
    }

    /// The last line, if the stream ended without a newline.
    pub fn finish(&mut self) -> Option<String> {
        (!self.pending.is_empty()).then(|| self.take())
    }

    fn take(&mut self) -> String {
        if self.pending.last() == Some(&b'\r') {
            self.pending.pop();
        }
        let line = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        line
    }
}

/// The last lines a child wrote.
#[derive(Debug, Clone)]
pub struct Ring {
    lines: VecDeque<String>,
    cap: usize,
}

impl Default for Ring {
    fn default() -> Self {
        Self::new(RING_LINES)
    }
}

impl Ring {
    /// A ring of at most `cap` lines.
    pub fn new(cap: usize) -> Self {
        Self { lines: VecDeque::with_capacity(cap), cap }
    }

    /// Keeps `line`, forgetting the oldest when full.
    pub fn push(&mut self, line: String) {
        if self.cap == 0 {
            return;
        }
        if self.lines.len() == self.cap {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
    }

    /// The lines kept, oldest first.
    pub fn lines(&self) -> Vec<String> {
        self.lines.iter().cloned().collect()
    }
}

/// A ring shared between the task that fills it and the supervisor that reads it.
pub type SharedRing = Arc<Mutex<Ring>>;

/// Reads `from` until it closes, keeping each line in `ring` and writing it to `output` as
/// `[name] line`.
pub async fn forward(
    mut from: impl AsyncRead + Unpin,
    name: &'static str,
    ring: SharedRing,
    output: Arc<Output>,
) {
    let mut splitter = LineSplitter::default();
    let mut buf = vec![0u8; 4096];
    let keep = |lines: Vec<String>| {
        for line in lines {
            output.line(name, &line);
            ring.lock().unwrap_or_else(PoisonError::into_inner).push(line);
        }
    };
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => keep(splitter.push(&buf[..n])),
        }
    }
    keep(splitter.finish().into_iter().collect());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_split_across_chunks_and_the_last_one_is_kept() {
        let mut s = LineSplitter::new(100);
        assert_eq!(s.push(b"first li"), Vec::<String>::new());
        assert_eq!(s.push(b"ne\r\nsecond\n\nthi"), ["first line", "second", ""]);
        assert_eq!(s.push(b"rd"), Vec::<String>::new());
        assert_eq!(s.finish(), Some("third".to_owned()));
        assert_eq!(s.finish(), None);
    }

    #[test]
    fn an_over_long_line_comes_in_pieces_and_bad_utf8_is_replaced() {
        let mut s = LineSplitter::new(4);
        assert_eq!(s.push(b"abcdefghij\n"), ["abcd", "efgh", "ij"]);
        assert_eq!(s.push(b"\xffok\n"), ["\u{fffd}ok"]);
    }

    #[test]
    fn the_ring_keeps_the_last_lines_in_order() {
        let mut ring = Ring::new(3);
        for i in 0..5 {
            ring.push(format!("line {i}"));
        }
        assert_eq!(ring.lines(), ["line 2", "line 3", "line 4"]);
        let mut none = Ring::new(0);
        none.push("x".into());
        assert!(none.lines().is_empty());
    }

    #[test]
    fn lines_are_prefixed_with_the_name() {
        assert_eq!(prefixed("daemon", "serving events"), "[daemon] serving events\n");
    }

    #[test]
    fn a_log_file_gets_prefixed_lines_appended() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("up.log");
        std::fs::write(&path, "before\n").unwrap();
        let output = Output::file(&path).unwrap();
        output.line("assistant", "ready");
        output.line("up", "stopping");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "before\n[assistant] ready\n[up] stopping\n"
        );
    }

    #[test]
    fn a_log_in_a_new_directory_is_private_and_a_long_one_is_moved_aside() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state").join("stt").join("up.log");
        let output = Output::file(&path).unwrap();
        assert_eq!(output.path(), Some(path.as_path()));
        output.line("up", "first run");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        drop(output);

        let long = vec![b'x'; usize::try_from(MAX_LOG_BYTES).unwrap() + 1];
        std::fs::write(&path, &long).unwrap();
        Output::file(&path).unwrap().line("up", "second run");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "[up] second run\n");
        assert_eq!(
            std::fs::metadata(path.with_extension("log.1")).unwrap().len(),
            long.len() as u64
        );
    }

    #[tokio::test]
    async fn forward_writes_every_line_and_keeps_the_last_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let output = Arc::new(Output::file(&path).unwrap());
        let ring = SharedRing::default();
        let input: &[u8] = b"one\ntwo\nthree";
        forward(input, "daemon", Arc::clone(&ring), output).await;
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "[daemon] one\n[daemon] two\n[daemon] three\n"
        );
        assert_eq!(ring.lock().unwrap().lines(), ["one", "two", "three"]);
    }
}
