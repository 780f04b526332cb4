//! Transcribes a 16 kHz mono 16-bit WAV whole, with no VAD: `cargo run -p stt-asr --example
//! transcribe_raw -- MODEL FILE.wav [audio_ctx]`. For checking the model and measuring the
//! encoder window against accuracy.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let model = args.get(1).expect("usage: MODEL FILE.wav [audio_ctx]");
    let wav = args.get(2).expect("usage: MODEL FILE.wav [audio_ctx]");
    let audio_ctx = args.get(3).map_or(0, |s| s.parse().expect("audio_ctx"));
    let bytes = std::fs::read(wav).expect("read wav");
    // A canonical 44-byte header from sox; enough for a developer example.
    let samples: Vec<f32> = bytes[44..]
        .chunks_exact(2)
        .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0)
        .collect();
    let mut whisper = stt_asr::Whisper::load(stt_asr::AsrConfig {
        model: model.into(),
        audio_ctx,
        ..stt_asr::AsrConfig::default()
    })
    .expect("load");
    for _ in 0..3 {
        let t = std::time::Instant::now();
        let out =
            whisper.transcribe(&samples, stt_asr::whisper::seconds(&samples)).expect("transcribe");
        println!("{:?} in {:?} ({:?})", out.text, t.elapsed(), out.raw);
    }
}
