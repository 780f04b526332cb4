//! NDJSON framing with a line limit that never costs the connection.
//!
//! [`NdjsonCodec`] splits a byte stream into lines. A line longer than the limit is not
//! buffered: its bytes are dropped as they arrive and, once its newline comes, it is reported
//! as [`Frame::TooLong`] so the reader can answer `too_long` and carry on with the next line.
//! Memory per connection is therefore bounded by the limit, whatever the peer sends.

use bytes::{Bytes, BytesMut};
use tokio_util::codec::Decoder;

/// One unit read off a socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A line without its `\n` (and without a `\r` before it).
    Line(Bytes),
    /// A line of `len` bytes, over the limit, that was discarded.
    TooLong { len: usize },
}

/// Splits a byte stream into [`Frame`]s. Blank lines are skipped.
#[derive(Debug, Clone)]
pub struct NdjsonCodec {
    max_len: usize,
    /// Bytes of the current line already searched for a newline.
    scanned: usize,
    /// `Some(n)` while discarding an over-long line of which `n` bytes were dropped so far.
    discarding: Option<usize>,
}

impl NdjsonCodec {
    /// A codec that accepts lines of at most `max_len` bytes.
    pub fn new(max_len: usize) -> Self {
        Self { max_len, scanned: 0, discarding: None }
    }

    pub fn max_len(&self) -> usize {
        self.max_len
    }
}

impl Default for NdjsonCodec {
    fn default() -> Self {
        Self::new(crate::MAX_LINE_BYTES)
    }
}

impl Decoder for NdjsonCodec {
    type Item = Frame;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, std::io::Error> {
        loop {
            if let Some(dropped) = self.discarding {
                match memchr(b'\n', buf) {
                    Some(i) => {
                        let _ = buf.split_to(i + 1);
                        self.discarding = None;
                        return Ok(Some(Frame::TooLong { len: dropped + i }));
                    }
                    None => {
                        self.discarding = Some(dropped + buf.len());
                        buf.clear();
                        return Ok(None);
                    }
                }
            }
            let Some(offset) = memchr(b'\n', &buf[self.scanned..]) else {
                // One byte of slack: a line of exactly the limit may still have its `\r`.
                if buf.len() > self.max_len + 1 {
                    self.discarding = Some(buf.len());
                    self.scanned = 0;
                    buf.clear();
                } else {
                    self.scanned = buf.len();
                }
                return Ok(None);
            };
            let end = self.scanned + offset;
            self.scanned = 0;
            let mut line = buf.split_to(end + 1);
            line.truncate(end);
            if line.last() == Some(&b'\r') {
                line.truncate(end - 1);
            }
            if line.len() > self.max_len {
                return Ok(Some(Frame::TooLong { len: line.len() }));
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Ok(Some(Frame::Line(line.freeze())));
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, std::io::Error> {
        if let Some(frame) = self.decode(buf)? {
            return Ok(Some(frame));
        }
        // A last line without a newline still counts: a peer may write and close.
        if let Some(dropped) = self.discarding.take() {
            return Ok(Some(Frame::TooLong { len: dropped }));
        }
        self.scanned = 0;
        if buf.is_empty() || buf.iter().all(u8::is_ascii_whitespace) {
            buf.clear();
            return Ok(None);
        }
        let line = buf.split().freeze();
        if line.len() > self.max_len {
            return Ok(Some(Frame::TooLong { len: line.len() }));
        }
        Ok(Some(Frame::Line(line)))
    }
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&b| b == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Feeds `input` to a codec in the given chunk sizes and collects every frame.
    fn frames(max_len: usize, input: &[u8], chunks: &[usize]) -> Vec<Frame> {
        let mut codec = NdjsonCodec::new(max_len);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        let mut rest = input;
        let mut sizes = chunks.iter().copied().cycle();
        while !rest.is_empty() {
            let n = sizes.next().unwrap_or(rest.len()).clamp(1, rest.len());
            buf.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            while let Some(frame) = codec.decode(&mut buf).expect("decode never fails") {
                out.push(frame);
            }
            assert!(buf.len() <= max_len + n + 1, "buffer grew past the limit: {}", buf.len());
        }
        while let Some(frame) = codec.decode_eof(&mut buf).expect("decode_eof never fails") {
            out.push(frame);
        }
        out
    }

    fn line(s: &str) -> Frame {
        Frame::Line(Bytes::copy_from_slice(s.as_bytes()))
    }

    #[test]
    fn splits_lines_and_skips_blank_ones() {
        let got = frames(100, b"{\"a\":1}\n\n  \r\n{\"b\":2}\r\nlast", &[3]);
        assert_eq!(got, vec![line("{\"a\":1}"), line("{\"b\":2}"), line("last")]);
    }

    #[test]
    fn a_long_line_is_reported_and_the_next_one_still_arrives() {
        let mut input = vec![b'x'; 50];
        input.extend_from_slice(b"\nok\n");
        for chunk in [1, 7, 16, 1000] {
            let got = frames(16, &input, &[chunk]);
            assert_eq!(got, vec![Frame::TooLong { len: 50 }, line("ok")], "chunk {chunk}");
        }
    }

    #[test]
    fn a_line_of_exactly_the_limit_is_accepted() {
        let got = frames(4, b"abcd\nabcde\n", &[100]);
        assert_eq!(got, vec![line("abcd"), Frame::TooLong { len: 5 }]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Random bytes in random chunks: never panics, never buffers past the limit, and
        /// every frame is either a line within the limit or a too-long report.
        #[test]
        fn random_bytes_never_panic(
            input in proptest::collection::vec(any::<u8>(), 0..4096),
            chunks in proptest::collection::vec(1usize..300, 1..8),
            max_len in 1usize..256,
        ) {
            for frame in frames(max_len, &input, &chunks) {
                match frame {
                    Frame::Line(l) => {
                        prop_assert!(l.len() <= max_len);
                        prop_assert!(!l.contains(&b'\n'));
                    }
                    Frame::TooLong { len } => prop_assert!(len > max_len),
                }
            }
        }

        /// Lines joined with newlines come back unchanged, however the reads are split.
        #[test]
        fn lines_survive_any_split(
            lines in proptest::collection::vec("[a-z{}\":0-9 ]{1,40}", 0..30),
            chunks in proptest::collection::vec(1usize..64, 1..8),
        ) {
            let wanted: Vec<_> =
                lines.iter().filter(|l| !l.trim().is_empty()).map(|l| line(l)).collect();
            let input = lines.join("\n");
            prop_assert_eq!(frames(64, input.as_bytes(), &chunks), wanted);
        }

        /// Whatever bytes a line holds, parsing it yields a message or a coded error.
        #[test]
        fn parsing_random_lines_never_panics(input in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = crate::parse::<crate::Request>(&input);
            let _ = crate::parse::<crate::AssistantEvent>(&input);
            let _ = crate::parse::<crate::DaemonEvent>(&input);
        }
    }
}
