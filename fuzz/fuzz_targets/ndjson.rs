//! The NDJSON framing on any byte stream, cut into reads at the points the input chooses:
//! never a panic, no frame holds a newline or more than the limit, and the bytes of whole
//! lines come out in order.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use stt_proto::{Frame, NdjsonCodec};
use tokio_util::codec::Decoder;

const LIMIT: usize = 64;

fuzz_target!(|input: (Vec<u8>, Vec<u8>)| {
    let (stream, cuts) = input;
    let mut codec = NdjsonCodec::new(LIMIT);
    let mut buf = BytesMut::new();
    let mut at: usize = 0;
    let mut lines: Vec<Vec<u8>> = Vec::new();
    let check = |frame: Frame, lines: &mut Vec<Vec<u8>>| match frame {
        Frame::Line(line) => {
            assert!(!line.contains(&b'\n'), "a frame holds a newline");
            assert!(line.len() <= LIMIT, "a frame is over the limit");
            lines.push(line.to_vec());
        }
        Frame::TooLong { len } => assert!(len > LIMIT, "a line of {len} bytes called too long"),
    };
    for cut in cuts.iter().map(|&c| usize::from(c) + 1).chain(std::iter::once(usize::MAX)) {
        let end = at.saturating_add(cut).min(stream.len());
        buf.extend_from_slice(&stream[at..end]);
        at = end;
        while let Ok(Some(frame)) = codec.decode(&mut buf) {
            check(frame, &mut lines);
        }
        if at == stream.len() {
            break;
        }
    }
    while let Ok(Some(frame)) = codec.decode_eof(&mut buf) {
        check(frame, &mut lines);
    }
    // The lines that came out are exactly the stream's lines that are not blank and within
    // the limit, in order: `\r\n` counts as a newline, a last line without one counts too.
    let mut expected: Vec<Vec<u8>> = Vec::new();
    let mut segments: Vec<&[u8]> = stream.split(|&b| b == b'\n').collect();
    let last = segments.pop().unwrap_or_default();
    for segment in segments {
        let line = segment.strip_suffix(b"\r").unwrap_or(segment);
        if line.len() <= LIMIT && !line.iter().all(u8::is_ascii_whitespace) {
            expected.push(line.to_vec());
        }
    }
    if last.len() <= LIMIT && !last.iter().all(u8::is_ascii_whitespace) {
        expected.push(last.to_vec());
    }
    assert_eq!(lines, expected, "the lines that came out are not the stream's");
});
