//! Turning a line into a message, and a message into a line.
//!
//! Each way a line can be wrong earns its own [`ErrorCode`], so the peer's reply says what
//! was wrong: not UTF-8 or not JSON → `bad_json`; JSON without a string `type`, or with
//! the wrong fields → `bad_message`; a `type` this build does not know → `unknown_type`.

use bytes::Bytes;
use serde::Serialize;

use crate::error::{ErrorCode, ErrorMsg};
use crate::messages::Message;

/// Why a line is not a message; for a known type whose fields did not parse, which type.
#[derive(Debug, Clone, PartialEq)]
pub struct ProtoError(pub ErrorMsg, Option<String>);

impl ProtoError {
    fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self(ErrorMsg::new(code, message), None)
    }

    /// The type of a message this build knows but whose fields did not parse: a newer peer's
    /// new field value, say. Readers of events skip these (warning once per type), since
    /// failing on them would cut a link over one message.
    pub fn bad_fields_of(&self) -> Option<&str> {
        self.1.as_deref()
    }

    pub fn code(&self) -> ErrorCode {
        self.0.code
    }

    /// A well-formed message of a type this build does not know: readers of events skip
    /// these, since they come from a newer peer.
    pub fn is_unknown_type(&self) -> bool {
        self.0.code == ErrorCode::UnknownType
    }
}

impl std::fmt::Display for ProtoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for ProtoError {}

/// Parses one line (without its newline) as a message of family `M`.
pub fn parse<M: Message>(line: &[u8]) -> Result<M, ProtoError> {
    // The fast path: a valid message parses directly.
    let err = match serde_json::from_slice::<M>(line) {
        Ok(msg) => return Ok(msg),
        Err(err) => err,
    };
    Err(classify::<M>(line, &err))
}

fn classify<M: Message>(line: &[u8], err: &serde_json::Error) -> ProtoError {
    if let Err(utf8) = std::str::from_utf8(line) {
        return ProtoError::new(
            ErrorCode::BadJson,
            format!("the line is not UTF-8 (bad byte at offset {})", utf8.valid_up_to()),
        );
    }
    let value = match serde_json::from_slice::<serde_json::Value>(line) {
        Ok(value) => value,
        Err(json) => {
            return ProtoError::new(ErrorCode::BadJson, format!("the line is not JSON: {json}"));
        }
    };
    let Some(object) = value.as_object() else {
        return ProtoError::new(
            ErrorCode::BadMessage,
            "expected a JSON object like {\"type\":\"status\"}",
        );
    };
    let Some(kind) = object.get("type").and_then(|t| t.as_str()) else {
        return ProtoError::new(
            ErrorCode::BadMessage,
            "the object has no string \"type\" field, e.g. {\"type\":\"status\"}",
        );
    };
    if !M::TYPES.contains(&kind) {
        return ProtoError::new(
            ErrorCode::UnknownType,
            format!(
                "unknown message type '{kind}' (protocol v{}; known types: {})",
                crate::PROTOCOL_VERSION,
                M::TYPES.join(", ")
            ),
        );
    }
    let mut error = ProtoError::new(ErrorCode::BadMessage, format!("bad '{kind}' message: {err}"));
    error.1 = Some(kind.to_owned());
    error
}

/// Serializes a message as one NDJSON line, newline included.
pub fn encode_line<M: Serialize + ?Sized>(msg: &M) -> Bytes {
    let mut buf = Vec::with_capacity(128);
    // Serializing our own types cannot fail: every map key is a string and no type has a
    // fallible Serialize impl. Write an `internal` error rather than panic if that changes.
    if serde_json::to_writer(&mut buf, msg).is_err() {
        buf.clear();
        buf.extend_from_slice(
            br#"{"type":"error","code":"internal","message":"a message could not be serialized"}"#,
        );
    }
    buf.push(b'\n');
    Bytes::from(buf)
}

/// The envelope field a request may carry so a client can tell its reply from an event.
pub const REQUEST_ID: &str = "id";

/// The envelope field of a reply to a request that had an [`REQUEST_ID`]: the same value.
pub const IN_REPLY_TO: &str = "in_reply_to";

/// The `id` a request line carries, if any (any JSON value; clients use a number or a
/// string). It is read even from a line that is not a valid request, so its error can say
/// which request it answers.
pub fn request_id(line: &[u8]) -> Option<serde_json::Value> {
    #[derive(serde::Deserialize)]
    struct Envelope {
        #[serde(default)]
        id: Option<serde_json::Value>,
    }
    serde_json::from_slice::<Envelope>(line).ok()?.id.filter(|id| !id.is_null())
}

/// The line of the direct reply `event`, with `in_reply_to` set to `id` when the request
/// had one.
pub fn reply_line<M: Serialize>(event: &M, id: Option<&serde_json::Value>) -> Bytes {
    let line = encode_line(event);
    let Some(id) = id else { return line };
    // The field goes last, so the line keeps its order (`type` first): `{…}\n` → `{…,"in_reply_to":ID}\n`.
    let Some(body) = line.strip_suffix(b"}\n") else { return line };
    let mut out = Vec::with_capacity(line.len() + 32);
    out.extend_from_slice(body);
    if body.len() > 1 {
        out.push(b',');
    }
    out.extend_from_slice(format!("\"{IN_REPLY_TO}\":").as_bytes());
    if serde_json::to_writer(&mut out, id).is_err() {
        return line;
    }
    out.extend_from_slice(b"}\n");
    Bytes::from(out)
}

/// The line of an `error` message; its shape is the same in every direction.
pub fn error_line(err: ErrorMsg) -> Bytes {
    encode_line(&crate::messages::AssistantEvent::Error(err))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::{AssistantEvent, Request};

    #[track_caller]
    fn check(line: &str, code: ErrorCode, needle: &str) {
        let err = parse::<Request>(line.as_bytes()).expect_err(line);
        assert_eq!(err.code(), code, "{line}: {err}");
        assert!(err.0.message.contains(needle), "{line}: {:?} lacks {needle:?}", err.0.message);
    }

    #[test]
    fn each_kind_of_bad_line_gets_its_code() {
        check("{", ErrorCode::BadJson, "not JSON");
        check("not json", ErrorCode::BadJson, "not JSON");
        check("[1,2]", ErrorCode::BadMessage, "JSON object");
        check("{}", ErrorCode::BadMessage, "\"type\"");
        check(r#"{"type":5}"#, ErrorCode::BadMessage, "\"type\"");
        check(r#"{"type":"fly"}"#, ErrorCode::UnknownType, "'fly'");
        check(r#"{"type":"command_edit"}"#, ErrorCode::BadMessage, "missing field `text`");
        check(r#"{"type":"command_edit","text":3}"#, ErrorCode::BadMessage, "invalid type");
        check(r#"{"type":"speaker_name","name":"A"}"#, ErrorCode::BadMessage, "speaker_id");
        check(r#"{"type":"speaker_merge","speaker_id":"spk_4"}"#, ErrorCode::BadMessage, "`into`");
    }

    #[test]
    fn a_reply_carries_the_id_of_its_request() {
        use crate::error::{ErrorCode, ErrorMsg};
        assert_eq!(request_id(br#"{"type":"status","id":7}"#), Some(serde_json::json!(7)));
        assert_eq!(request_id(br#"{"type":"fly","id":"a"}"#), Some(serde_json::json!("a")));
        assert_eq!(request_id(br#"{"type":"status","id":null}"#), None);
        assert_eq!(request_id(br#"{"type":"status"}"#), None);
        assert_eq!(request_id(b"not json"), None);
        let error = AssistantEvent::Error(ErrorMsg::new(ErrorCode::UnknownType, "m"));
        assert_eq!(
            &reply_line(&error, Some(&serde_json::json!(7)))[..],
            &br#"{"type":"error","code":"unknown_type","message":"m","in_reply_to":7}
"#[..]
        );
        assert_eq!(reply_line(&error, None), encode_line(&error));
        // A request with an id parses as without it.
        assert_eq!(parse::<Request>(br#"{"type":"status","id":7}"#), Ok(Request::Status));
    }

    #[test]
    fn invalid_utf8_is_bad_json() {
        let err = parse::<Request>(b"{\"type\":\"status\xff\"}").expect_err("not utf-8");
        assert_eq!(err.code(), ErrorCode::BadJson);
        assert!(err.0.message.contains("UTF-8"));
    }

    #[test]
    fn a_known_type_with_fields_that_do_not_parse_says_which_type() {
        let err = parse::<AssistantEvent>(br#"{"type":"mode","mode":"dreaming"}"#).unwrap_err();
        assert_eq!(err.code(), ErrorCode::BadMessage);
        assert_eq!(err.bad_fields_of(), Some("mode"));
        let err = parse::<AssistantEvent>(br#"{"type":"hologram"}"#).unwrap_err();
        assert_eq!(err.bad_fields_of(), None);
    }

    #[test]
    fn display_only_values_from_a_newer_peer_read_as_unknown() {
        use crate::messages::{AudioState, ChatRole, DaemonEvent};
        let beat = br#"{"type":"heartbeat","seq":1,"uptime_s":1.0,"backlog":0,"stt_healthy":true,"audio":"muted","model":"m"}"#;
        match parse::<DaemonEvent>(beat) {
            Ok(DaemonEvent::Heartbeat(beat)) => assert_eq!(beat.audio, AudioState::Unknown),
            other => panic!("{other:?}"),
        }
        let line = br#"{"type":"chat_message","id":1,"role":"narrator","speaker":null,"text":"hi","partial":false}"#;
        match parse::<AssistantEvent>(line) {
            Ok(AssistantEvent::ChatMessage(m)) => assert_eq!(m.role, ChatRole::Unknown),
            other => panic!("{other:?}"),
        }
        // Modes and side effects stay closed: a typo there must stay an error.
        assert!(parse::<AssistantEvent>(br#"{"type":"mode","mode":"dreaming"}"#).is_err());
    }

    #[test]
    fn unknown_types_are_recognisable_for_readers_to_skip() {
        let err = parse::<AssistantEvent>(br#"{"type":"hologram","x":1}"#).expect_err("unknown");
        assert!(err.is_unknown_type());
    }

    #[test]
    fn extra_fields_from_newer_peers_are_ignored() {
        let req = parse::<Request>(br#"{"type":"command_edit","text":"hi","new_field":[1]}"#);
        assert_eq!(req, Ok(Request::CommandEdit { text: "hi".into() }));
        let req = parse::<Request>(br#"{"type":"status","since":"v2"}"#);
        assert_eq!(req, Ok(Request::Status));
    }

    #[test]
    fn encoded_lines_end_in_exactly_one_newline() {
        let line = encode_line(&Request::CommandEdit { text: "a\nb".into() });
        assert_eq!(&line[..], b"{\"type\":\"command_edit\",\"text\":\"a\\nb\"}\n");
    }
}
