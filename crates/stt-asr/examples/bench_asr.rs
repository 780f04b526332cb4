//! Times `Whisper::transcribe` on whole clips with several encoder windows, for
//! `scripts/bench-asr`:
//!
//! ```text
//! cargo run --release -p stt-asr --example bench_asr -- MODEL [--threads N] [--reps N]
//!     [--settings full,auto,0,32,128] [--pad-ms N] [--flash-attention] CLIP.wav...
//! ```
//!
//! Settings: `full` is the fixed 30 s window (`audio_ctx` 1500), `auto` is what the daemon
//! ships (`audio_ctx` 0: the segment's frames plus `AUDIO_CTX_MARGIN`), a number `M` is a
//! fixed window of the clip's frames plus `M`, and `M:F` the same but at least `F` frames.
//! `--pad-ms N` appends N ms of silence to every clip first (to try longer tails);
//! `--flash-attention` runs every setting with whisper.cpp's flash attention. Clips are 16 kHz mono 16-bit PCM WAV files.
//! For every clip and setting it prints one JSON line: the window, the time of each
//! repetition (after one untimed warm-up on a freshly loaded model) and the text. Clips are
//! the outer loop and settings the inner one, so background load hits every setting alike.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;
use std::time::Instant;

use stt_asr::whisper::{SAMPLE_RATE, audio_ctx_for_samples};
use stt_asr::{AsrConfig, Whisper};

/// What `Whisper::transcribe` pads a short segment to (1.1 s); the window follows the padded
/// length.
const MIN_SAMPLES: usize = SAMPLE_RATE * 11 / 10;
const FULL: i32 = 1500;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Setting {
    Full,
    Auto,
    /// Frames beyond the clip's own, and the least window.
    Margin(i32, i32),
}

impl Setting {
    fn parse(s: &str) -> Self {
        match s {
            "full" => Self::Full,
            "auto" => Self::Auto,
            n => {
                let bad = "a setting is full, auto, a margin M or M:FLOOR in frames";
                let (m, floor) = n.split_once(':').unwrap_or((n, "0"));
                Self::Margin(m.parse().expect(bad), floor.parse().expect(bad))
            }
        }
    }

    fn name(self) -> String {
        match self {
            Self::Full => "full".into(),
            Self::Auto => "auto".into(),
            Self::Margin(m, 0) => format!("+{m}"),
            Self::Margin(m, floor) => format!("+{m}:{floor}"),
        }
    }
}

/// Encoder frames of `n` samples after padding, without any margin.
fn frames(n: usize) -> i32 {
    let n = n.max(MIN_SAMPLES);
    i32::try_from(n.div_ceil(SAMPLE_RATE / 50)).unwrap()
}

/// The `audio_ctx` config value to load with, and the window the clip will actually get.
fn window(setting: Setting, n: usize) -> (u32, i32) {
    match setting {
        Setting::Full => (1500, FULL),
        Setting::Auto => (0, audio_ctx_for_samples(n.max(MIN_SAMPLES))),
        Setting::Margin(m, floor) => {
            let w = (frames(n) + m).max(floor).min(FULL);
            (u32::try_from(w).unwrap(), w)
        }
    }
}

fn read_wav(path: &str) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    assert!(
        bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WAVE",
        "{path}: not WAV"
    );
    let mut at = 12;
    let mut format_ok = false;
    while at + 8 <= bytes.len() {
        let id = &bytes[at..at + 4];
        let len = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
        let body = &bytes[at + 8..(at + 8 + len).min(bytes.len())];
        if id == b"fmt " {
            let u16_at = |i: usize| u16::from_le_bytes([body[i], body[i + 1]]);
            let rate = u32::from_le_bytes(body[4..8].try_into().unwrap());
            format_ok = u16_at(0) == 1 && u16_at(2) == 1 && rate == 16_000 && u16_at(14) == 16;
        } else if id == b"data" {
            assert!(format_ok, "{path}: expected 16 kHz mono 16-bit PCM");
            return body
                .chunks_exact(2)
                .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0)
                .collect();
        }
        at += 8 + len + (len & 1);
    }
    panic!("{path}: no data chunk");
}

fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => write!(out, "\\u{:04x}", u32::from(c)).unwrap(),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn main() {
    let mut args = std::env::args().skip(1);
    let model =
        args.next().expect("usage: MODEL [--threads N] [--reps N] [--settings LIST] CLIP.wav...");
    let (mut threads, mut reps, mut pad_ms) = (2u32, 3usize, 0usize);
    let mut flash_attention = false;
    let mut settings = vec![Setting::Full, Setting::Auto];
    let mut clips = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--threads" => threads = args.next().expect("--threads N").parse().expect("threads"),
            "--reps" => reps = args.next().expect("--reps N").parse().expect("reps"),
            "--pad-ms" => pad_ms = args.next().expect("--pad-ms N").parse().expect("pad-ms"),
            "--flash-attention" => flash_attention = true,
            "--settings" => {
                settings =
                    args.next().expect("--settings LIST").split(',').map(Setting::parse).collect();
            }
            _ => clips.push(arg),
        }
    }

    let load = |audio_ctx: u32| {
        let t = Instant::now();
        let w = Whisper::load(AsrConfig {
            model: model.clone().into(),
            threads,
            audio_ctx,
            flash_attention,
            ..AsrConfig::default()
        })
        .expect("load the model");
        (w, t.elapsed())
    };
    // `full` and `auto` stay loaded; a fixed window is reloaded when it changes.
    let (mut full, mut auto) = (None::<Whisper>, None::<Whisper>);
    let mut fixed: Option<(u32, Whisper)> = None;

    for clip in &clips {
        let mut samples = read_wav(clip);
        samples.resize(samples.len() + pad_ms * SAMPLE_RATE / 1000, 0.0);
        #[allow(clippy::cast_precision_loss)]
        let seconds = samples.len() as f64 / SAMPLE_RATE as f64;
        for &setting in &settings {
            let (config_ctx, ctx) = window(setting, samples.len());
            let mut load_ms = None;
            let whisper = match setting {
                Setting::Full => full.get_or_insert_with(|| {
                    let (w, took) = load(config_ctx);
                    load_ms = Some(took);
                    w
                }),
                Setting::Auto => auto.get_or_insert_with(|| {
                    let (w, took) = load(config_ctx);
                    load_ms = Some(took);
                    w
                }),
                Setting::Margin(..) => {
                    if fixed.as_ref().is_none_or(|(c, _)| *c != config_ctx) {
                        drop(fixed.take()); // free the old one first
                        let (w, took) = load(config_ctx);
                        load_ms = Some(took);
                        fixed = Some((config_ctx, w));
                    }
                    &mut fixed.as_mut().unwrap().1
                }
            };
            if load_ms.is_some() {
                let _ = whisper.transcribe(&samples, seconds).expect("warm-up");
            }
            let mut times = Vec::with_capacity(reps);
            let mut last = None;
            for _ in 0..reps {
                let t = Instant::now();
                let out = whisper.transcribe(&samples, seconds).expect("transcribe");
                times.push(t.elapsed().as_secs_f64() * 1000.0);
                last = Some(out);
            }
            let out = last.expect("at least one repetition");
            let times: Vec<String> = times.iter().map(|t| format!("{t:.2}")).collect();
            println!(
                "{{\"clip\":{},\"seconds\":{seconds:.4},\"setting\":{},\"audio_ctx\":{ctx},\
                 \"frames\":{},\"threads\":{threads},\"times_ms\":[{}],\"load_ms\":{},\
                 \"text\":{},\"raw\":{}}}",
                json_str(clip),
                json_str(&setting.name()),
                frames(samples.len()),
                times.join(","),
                load_ms.map_or("null".into(), |d| format!("{:.1}", d.as_secs_f64() * 1000.0)),
                out.text.as_deref().map_or("null".into(), json_str),
                json_str(&out.raw),
            );
        }
    }
}
