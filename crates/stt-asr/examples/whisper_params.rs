//! whisper-rs called directly with the daemon's decoding parameters, except the ones under
//! test: timestamp tokens on or off, and the encoder-window margin. For deciding those two
//! in `crates/stt-asr/src/whisper.rs`, whose `transcribe` this mirrors (as of the 256-frame
//! margin and the token cap); `bench_asr` times the shipped code itself.
//!
//! ```text
//! cargo run --release -p stt-asr --example whisper_params -- MODEL ts:192,nots:256 CLIP.wav...
//! ```
//!
//! Each setting is `ts:M` (timestamps on) or `nots:M` (off) with a margin of M frames past
//! the clip. Clips are 16 kHz mono 16-bit PCM WAV. One JSON line per clip and setting.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::cast_possible_truncation, clippy::cast_precision_loss, clippy::cast_sign_loss)]

use whisper_rs::{FullParams, SamplingStrategy, WhisperContext, WhisperContextParameters};

const RATE: usize = 16_000;

fn read_wav(path: &str) -> Vec<f32> {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    let mut at = 12;
    while at + 8 <= b.len() {
        let len = u32::from_le_bytes(b[at + 4..at + 8].try_into().unwrap()) as usize;
        if &b[at..at + 4] == b"data" {
            return b[at + 8..(at + 8 + len).min(b.len())]
                .chunks_exact(2)
                .map(|x| f32::from(i16::from_le_bytes([x[0], x[1]])) / 32768.0)
                .collect();
        }
        at += 8 + len + (len & 1);
    }
    panic!("{path}: no data chunk");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    assert!(args.len() >= 4, "usage: MODEL ts:M,nots:M,... CLIP.wav...");
    whisper_rs::install_logging_hooks(); // whisper.cpp's own log goes nowhere
    let ctx = WhisperContext::new_with_params(&args[1], WhisperContextParameters::default())
        .expect("load the model");
    let mut state = ctx.create_state().expect("whisper state");
    let settings: Vec<(bool, i32)> = args[2]
        .split(',')
        .map(|s| {
            let (ts, m) = s.split_once(':').expect("a setting is ts:M or nots:M");
            (ts == "ts", m.parse().expect("a margin in frames"))
        })
        .collect();
    for clip in &args[3..] {
        let mut samples = read_wav(clip);
        // As `Whisper::transcribe`: whisper.cpp ignores less than a second.
        samples.resize(samples.len().max(RATE * 11 / 10), 0.0);
        let seconds = samples.len() as f64 / RATE as f64;
        let frames = (seconds * 50.0).ceil() as i32;
        for &(timestamps, margin) in &settings {
            let mut p = FullParams::new(SamplingStrategy::Greedy { best_of: 1 });
            p.set_n_threads(2);
            p.set_language(Some("en"));
            p.set_detect_language(false);
            p.set_no_context(true);
            p.set_single_segment(true);
            p.set_no_timestamps(!timestamps);
            p.set_suppress_blank(true);
            p.set_suppress_nst(true);
            p.set_temperature(0.0);
            p.set_temperature_inc(0.0);
            p.set_print_special(false);
            p.set_print_progress(false);
            p.set_print_realtime(false);
            p.set_print_timestamps(false);
            p.set_audio_ctx((frames + margin).min(1500));
            p.set_max_tokens((seconds * 8.0).ceil() as i32 + 16);
            let t = std::time::Instant::now();
            state.full(p, &samples).expect("transcribe");
            let ms = t.elapsed().as_secs_f64() * 1000.0;
            let text: String = state.as_iter().filter_map(|s| s.to_str_lossy().ok()).collect();
            let name = format!("{}:{margin}", if timestamps { "ts" } else { "nots" });
            println!(
                "{{\"clip\":{clip:?},\"setting\":{name:?},\"audio_ctx\":{},\"frames\":{frames},\
                 \"times_ms\":[{ms:.1}],\"text\":{:?}}}",
                (frames + margin).min(1500),
                text.trim()
            );
        }
    }
}
