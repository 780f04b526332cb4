//! The SSE parser on any byte stream, in two reads split where the input says: never a
//! panic, and the same events whether it comes in one read or two.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stt_llm::sse::Decoder;

fuzz_target!(|input: (u16, &[u8])| {
    let (split, bytes) = input;
    let split = usize::from(split).min(bytes.len());
    let mut whole = Decoder::new();
    let mut one = whole.push(bytes);
    one.extend(whole.finish());
    let mut parts = Decoder::new();
    let mut two = parts.push(&bytes[..split]);
    two.extend(parts.push(&bytes[split..]));
    two.extend(parts.finish());
    assert_eq!(one, two, "the events depend on where the reads fall");
});
