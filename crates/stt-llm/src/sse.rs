//! Server-sent events: the framing of a streamed chat completion.
//!
//! Bytes arrive in arbitrary pieces; an event is one or more `data:` lines ended by a blank
//! line. Comments (`:` lines) and other fields are ignored. `data: [DONE]` ends the stream.

/// One complete event's data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Data(String),
    /// `data: [DONE]`.
    Done,
}

/// Turns pieces of a byte stream into [`Event`]s.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: Vec<u8>,
    data: Option<String>,
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; returns the events they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Event> {
        self.buf.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
            let mut line: Vec<u8> = self.buf.drain(..=end).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line = String::from_utf8_lossy(&line);
            self.line(&line, &mut events);
        }
        events
    }

    /// The end of the byte stream: an event not closed by a blank line still counts.
    pub fn finish(&mut self) -> Vec<Event> {
        let mut events = Vec::new();
        if !self.buf.is_empty() {
            let rest = String::from_utf8_lossy(&std::mem::take(&mut self.buf)).into_owned();
            self.line(rest.trim_end_matches('\r'), &mut events);
        }
        self.line("", &mut events);
        events
    }

    fn line(&mut self, line: &str, events: &mut Vec<Event>) {
        if line.is_empty() {
            if let Some(data) = self.data.take() {
                events.push(if data.trim() == "[DONE]" { Event::Done } else { Event::Data(data) });
            }
            return;
        }
        if let Some(value) = line.strip_prefix("data:") {
            let value = value.strip_prefix(' ').unwrap_or(value);
            match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            }
        }
        // `event:`, `id:`, `retry:` and `:` comments carry nothing we use.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(pieces: &[&[u8]]) -> Vec<Event> {
        let mut decoder = Decoder::new();
        let mut events: Vec<Event> = pieces.iter().flat_map(|p| decoder.push(p)).collect();
        events.extend(decoder.finish());
        events
    }

    #[test]
    fn events_survive_any_split() {
        let stream =
            b"data: {\"a\":1}\n\n: keep-alive\n\ndata: {\"b\":\r\ndata: 2}\r\n\r\ndata: [DONE]\n\n";
        let expected =
            vec![Event::Data("{\"a\":1}".into()), Event::Data("{\"b\":\n2}".into()), Event::Done];
        assert_eq!(decode(&[stream]), expected);
        for size in [1, 2, 3, 7] {
            let pieces: Vec<&[u8]> = stream.chunks(size).collect();
            assert_eq!(decode(&pieces), expected, "chunks of {size}");
        }
    }

    #[test]
    fn a_last_event_without_its_blank_line_still_counts() {
        assert_eq!(decode(&[b"data: x"]), vec![Event::Data("x".into())]);
        assert_eq!(decode(&[b"event: ping\n\n"]), vec![]);
    }
}
