//! Compares [`Silero`] (plain Rust) with the same model in ONNX Runtime (the reference of
//! `tests/common/onnx_runtime.rs`): probabilities, CPU per
//! frame and resident memory. Each classifier is measured in its own process, because ONNX
//! Runtime's memory stays once it is loaded:
//!
//! ```text
//! cargo build --release -p stt-vad --example silero_compare
//! target/release/examples/silero_compare rs     # memory and CPU of the pure-Rust one
//! target/release/examples/silero_compare ort    # the same for ONNX Runtime
//! target/release/examples/silero_compare diff   # both, frame by frame
//! ```
//!
//! The model (and ONNX Runtime next to it) are found where the daemon finds them; a path
//! after the mode overrides the model. The audio is the test mixture of `tests/common`
//! (espeak-ng speech, noise, tones; about 4 300 frames). CPU is the thread's own, from the
//! scheduler: "back to back" runs every frame in a loop, "paced" sleeps 32 ms between frames
//! as a live microphone does, so caches go cold between calls.

#![allow(clippy::print_stdout, clippy::print_stderr, reason = "a command-line report")]

#[path = "../tests/common/mod.rs"]
mod common;

use std::error::Error;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::onnx_runtime::OrtSilero;
use stt_vad::{Silero, SpeechProb};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// Frames in the paced run: about 10 s.
const PACED_FRAMES: usize = 300;

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_default();
    let model = match args.next() {
        Some(path) => PathBuf::from(path),
        None => stt_config::dirs::model_path(Path::new("silero_vad.onnx"))?,
    };
    match mode.as_str() {
        "rs" => measure("pure Rust (stt_vad::Silero)", &model, |m| Ok(Box::new(Silero::load(m)?))),
        "ort" => measure("ONNX Runtime", &model, |m| Ok(Box::new(OrtSilero::load(m)?))),
        "diff" => diff(&model),
        _ => Err("usage: silero_compare rs|ort|diff [MODEL]".into()),
    }
}

type Load = fn(&Path) -> Result<Box<dyn SpeechProb>>;

fn measure(name: &str, model: &Path, load: Load) -> Result<()> {
    let (audio, _) = common::mixture();
    let before = memory();
    let mut vad = load(model)?;
    let loaded = memory();
    println!("{name}");
    println!("  RSS before load:  {before}");
    println!("  RSS after load:   {loaded}");

    // Back to back, twice: the first pass warms caches and lazy initialisation.
    let frames: Vec<&[f32]> = audio.chunks_exact(vad.frame_len()).collect();
    let mut per_frame = f64::INFINITY;
    for _ in 0..2 {
        vad.reset();
        let t = thread_cpu();
        for frame in &frames {
            std::hint::black_box(vad.prob(frame));
        }
        per_frame = per_frame.min((thread_cpu() - t) / frames.len() as f64);
    }
    println!(
        "  back to back:     {:.1} µs CPU per 32 ms frame ({} frames; {:.2}% of a core live)",
        per_frame * 1e6,
        frames.len(),
        per_frame / 0.032 * 100.0
    );

    // Paced as a live stream: the call alone (wall time: the scheduler's CPU clock only moves
    // at ticks and switches, too coarse for one call), and the whole thread's CPU with its
    // wake-ups.
    vad.reset();
    let (mut in_calls, start) = (0.0, thread_cpu());
    for frame in frames.iter().take(PACED_FRAMES) {
        std::thread::sleep(Duration::from_millis(32));
        let t = Instant::now();
        std::hint::black_box(vad.prob(frame));
        in_calls += t.elapsed().as_secs_f64();
    }
    let total = thread_cpu() - start;
    let n = PACED_FRAMES.min(frames.len()) as f64;
    println!(
        "  paced (32 ms):    {:.1} µs per frame in the call (wall), {:.1} µs thread CPU per \
         frame with the sleep and wake-up ({n} frames)",
        in_calls / n * 1e6,
        total / n * 1e6
    );
    println!("  RSS after run:    {}", memory());
    Ok(())
}

fn diff(model: &Path) -> Result<()> {
    let (audio, real) = common::mixture();
    let mut ours = Silero::load(model)?;
    let mut reference = OrtSilero::load(model)?;
    let (mut max, mut at, mut sum, mut flips, mut speech) = (0.0f32, 0, 0.0f64, 0, 0);
    let frames = audio.chunks_exact(Silero::FRAME_LEN);
    let n = frames.len();
    for (i, frame) in frames.enumerate() {
        let (a, b) = (ours.prob(frame), reference.prob(frame));
        let d = (a - b).abs();
        sum += f64::from(d);
        if d > max {
            (max, at) = (d, i);
        }
        flips += usize::from((a >= 0.5) != (b >= 0.5));
        speech += usize::from(b >= 0.5);
    }
    println!(
        "{n} frames ({speech} speech by ONNX Runtime{}): max |diff| {max:.2e} (frame {at}), \
         mean {:.2e}, decisions at 0.5 that differ: {flips}",
        if real { "" } else { "; no espeak-ng, synthetic voices" },
        sum / n as f64
    );
    Ok(())
}

/// CPU time of the calling thread, in seconds.
fn thread_cpu() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|ns| ns.parse::<f64>().ok()))
        .map_or(f64::NAN, |ns| ns / 1e9)
}

/// `VmRSS` and `RssAnon` (heap and other private memory) of this process.
fn memory() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().strip_suffix("kB"))
            .and_then(|kb| kb.trim().parse::<f64>().ok())
            .map_or_else(|| "?".to_owned(), |kb| format!("{:.1} MB", kb / 1024.0))
    };
    format!("VmRSS {}, RssAnon {}", field("VmRSS:"), field("RssAnon:"))
}
