//! The control socket's decoder on any line: never a panic; a line that parses re-encodes to
//! a line that parses to the same request; the reply names the line's `id` when it has one.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stt_proto::{AssistantEvent, ErrorMsg, Request, encode_line, parse, reply_line, request_id};

fuzz_target!(|line: &[u8]| {
    let id = request_id(line);
    match parse::<Request>(line) {
        Ok(request) => {
            let again = encode_line(&request);
            let back = parse::<Request>(&again[..again.len() - 1]);
            assert_eq!(back.as_ref(), Ok(&request), "{request:?} does not survive a round trip");
        }
        Err(e) => {
            let reply = reply_line(&AssistantEvent::Error(ErrorMsg::clone(&e.0)), id.as_ref());
            let parsed = parse::<AssistantEvent>(&reply[..reply.len() - 1]);
            assert!(parsed.is_ok(), "the error reply does not parse: {reply:?}");
        }
    }
});
