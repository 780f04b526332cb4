//! The Wyoming protocol's framing (Home Assistant's voice pipeline; the `wyoming` Python
//! package is its reference): each event is a JSON header line, `{"type": …, "data": {…},
//! "data_length": N, "payload_length": M, "version": …}`, then `data_length` bytes of JSON
//! merged into `data` (writers since 1.5 put the data there rather than in the line), then
//! `payload_length` bytes of payload (audio).

use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt};

/// The protocol version written in each header (the reference package's, which this
/// follows).
pub const VERSION: &str = "1.10.2";

/// A header line longer than this is refused (a real one is a few hundred bytes).
const MAX_HEADER: usize = 64 * 1024;
/// Extra data longer than this is refused.
const MAX_DATA: usize = 1024 * 1024;
/// A payload longer than this is refused (an audio chunk is a few kilobytes).
const MAX_PAYLOAD: usize = 4 * 1024 * 1024;

/// One event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub kind: String,
    pub data: Map<String, Value>,
    pub payload: Vec<u8>,
}

impl Event {
    pub fn new(kind: &str, data: Value) -> Self {
        let data = match data {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        Self { kind: kind.to_owned(), data, payload: Vec::new() }
    }

    /// The bytes on the wire: the header line, the data, the payload.
    pub fn encode(&self) -> Vec<u8> {
        let data = if self.data.is_empty() {
            Vec::new()
        } else {
            serde_json::to_vec(&self.data).unwrap_or_default()
        };
        let mut header = json!({ "type": self.kind, "version": VERSION });
        if !data.is_empty() {
            header["data_length"] = json!(data.len());
        }
        if !self.payload.is_empty() {
            header["payload_length"] = json!(self.payload.len());
        }
        let mut out = serde_json::to_vec(&header).unwrap_or_default();
        out.push(b'\n');
        out.extend_from_slice(&data);
        out.extend_from_slice(&self.payload);
        out
    }

    /// An integer field of `data`.
    pub fn int(&self, key: &str) -> Option<u64> {
        self.data.get(key).and_then(Value::as_u64)
    }
}

/// Why an event could not be read. The connection cannot go on after any of them: the
/// framing is lost.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("the connection failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("a header line over {MAX_HEADER} bytes")]
    HeaderTooLong,
    #[error("a header that is not a JSON object with a string \"type\": {0}")]
    BadHeader(String),
    #[error("{what} of {len} bytes is over the limit of {max}")]
    TooLong { what: &'static str, len: usize, max: usize },
    #[error("the event's data is not a JSON object: {0}")]
    BadData(String),
}

/// Reads the next event; `None` at the end of the stream.
pub async fn read(reader: &mut (impl AsyncBufRead + Unpin)) -> Result<Option<Event>, WireError> {
    let mut line = Vec::new();
    loop {
        let n = (&mut *reader).take((MAX_HEADER + 1) as u64).read_until(b'\n', &mut line).await?;
        if n == 0 {
            return Ok(None);
        }
        if line.len() > MAX_HEADER {
            return Err(WireError::HeaderTooLong);
        }
        if line.iter().any(|b| !b.is_ascii_whitespace()) {
            break;
        }
        // A blank line between events: skipped.
        line.clear();
    }
    let header: Value =
        serde_json::from_slice(&line).map_err(|e| WireError::BadHeader(e.to_string()))?;
    let kind = header
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| WireError::BadHeader(String::from_utf8_lossy(&line).trim().to_owned()))?
        .to_owned();
    let mut data = match header.get("data") {
        Some(Value::Object(map)) => map.clone(),
        _ => Map::new(),
    };
    let length = |key: &str| header.get(key).and_then(Value::as_u64).unwrap_or(0);
    let data_length = usize::try_from(length("data_length")).unwrap_or(usize::MAX);
    if data_length > MAX_DATA {
        return Err(WireError::TooLong { what: "data", len: data_length, max: MAX_DATA });
    }
    if data_length > 0 {
        let mut bytes = vec![0; data_length];
        reader.read_exact(&mut bytes).await?;
        match serde_json::from_slice(&bytes) {
            Ok(Value::Object(more)) => data.extend(more),
            Ok(other) => return Err(WireError::BadData(other.to_string())),
            Err(e) => return Err(WireError::BadData(e.to_string())),
        }
    }
    let payload_length = usize::try_from(length("payload_length")).unwrap_or(usize::MAX);
    if payload_length > MAX_PAYLOAD {
        return Err(WireError::TooLong {
            what: "a payload",
            len: payload_length,
            max: MAX_PAYLOAD,
        });
    }
    let mut payload = vec![0; payload_length];
    reader.read_exact(&mut payload).await?;
    Ok(Some(Event { kind, data, payload }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test: a failure should panic")]

    use super::*;

    async fn read_all(bytes: &[u8]) -> Vec<Result<Option<Event>, String>> {
        let mut reader = tokio::io::BufReader::new(bytes);
        let mut out = Vec::new();
        loop {
            let event = read(&mut reader).await.map_err(|e| e.to_string());
            let end = !matches!(event, Ok(Some(_)));
            out.push(event);
            if end {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn events_round_trip_with_data_and_payload_after_the_line() {
        let mut chunk =
            Event::new("audio-chunk", json!({"rate": 16000, "width": 2, "channels": 1}));
        chunk.payload = vec![1, 2, 3, 4];
        let describe = Event::new("describe", Value::Null);
        let mut bytes = describe.encode();
        bytes.extend(chunk.encode());
        let line =
            String::from_utf8_lossy(&bytes[..bytes.iter().position(|&b| b == b'\n').unwrap()])
                .into_owned();
        assert_eq!(line, format!(r#"{{"type":"describe","version":"{VERSION}"}}"#));
        let events = read_all(&bytes).await;
        assert_eq!(events, [Ok(Some(describe)), Ok(Some(chunk)), Ok(None)]);
    }

    #[tokio::test]
    async fn data_in_the_line_is_read_as_older_writers_send_it() {
        let bytes = b"{\"type\":\"transcribe\",\"data\":{\"language\":\"en\"}}\n\n{\"type\":\"audio-stop\"}\n";
        let events = read_all(bytes).await;
        let Ok(Some(first)) = &events[0] else { panic!("{events:?}") };
        assert_eq!(first.data["language"], "en");
        assert!(matches!(&events[1], Ok(Some(e)) if e.kind == "audio-stop"));
    }

    #[tokio::test]
    async fn bad_frames_are_refused_saying_why() {
        let cases: [(&[u8], &str); 4] = [
            (b"not json\n", "not a JSON object"),
            (b"{\"data\":{}}\n", "string \"type\""),
            (b"{\"type\":\"x\",\"payload_length\":99999999}\n", "over the limit"),
            (b"{\"type\":\"x\",\"data_length\":2}\n[]", "not a JSON object"),
        ];
        for (bytes, says) in cases {
            let events = read_all(bytes).await;
            let Err(why) = &events[0] else { panic!("{events:?}") };
            assert!(why.contains(says), "{why}");
        }
        let long = vec![b'a'; MAX_HEADER + 10];
        assert!(matches!(&read_all(&long).await[0], Err(e) if e.contains("header line over")));
    }
}
