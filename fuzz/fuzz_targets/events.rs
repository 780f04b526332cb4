//! The event decoders (what the assistant reads from the daemon, what viewers read from the
//! assistant) on any line: never a panic, and what parses survives a round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stt_proto::{AssistantEvent, DaemonEvent, encode_line, parse};

fuzz_target!(|line: &[u8]| {
    if let Ok(event) = parse::<DaemonEvent>(line) {
        let again = encode_line(&event);
        assert_eq!(parse::<DaemonEvent>(&again[..again.len() - 1]).as_ref(), Ok(&event));
    }
    if let Ok(event) = parse::<AssistantEvent>(line) {
        let again = encode_line(&event);
        assert_eq!(parse::<AssistantEvent>(&again[..again.len() - 1]).as_ref(), Ok(&event));
    }
});
