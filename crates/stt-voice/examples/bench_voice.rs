//! The voice's speed, for the "The voice" section of `docs/PERFORMANCE.md`. Run it through
//! `scripts/bench-voice` (release build; `--write` rewrites the section):
//!
//! cargo run --release -p stt-voice --example bench_voice -- [--write docs/PERFORMANCE.md]
//!
//! For one and two ONNX Runtime threads, with nothing else running: each of [`SENTENCES`]
//! (4 to 12 words, what a reply's first sentence is) synthesized after a warm-up, timing the
//! phonemes (espeak-ng) and the whole sentence. A Piper voice gives a sentence's audio all at
//! once, so the time to synthesize a sentence is the time to its first audio. Then a long
//! reply read sentence by sentence as a player would: a gap is where the next sentence is not
//! ready when the one playing ends. Last, the default output device stopped mid-sentence:
//! how soon it plays silence.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::cast_precision_loss,
    reason = "a benchmark: it prints its report, and its counts are small"
)]

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use stt_testkit::perf::{self, Stats};
use stt_voice::{ESPEAK, Voice};

const START: &str = "<!-- bench-voice:start -->";

/// How many times the output is stopped mid-sentence.
const STOPS: usize = 20;
const END: &str = "<!-- bench-voice:end -->";

/// First sentences of replies, 4 to 12 words.
const SENTENCES: [&str; 16] = [
    "The kettle is on.",
    "I set a timer for five minutes.",
    "It is ten past four in the afternoon.",
    "Your meeting with the design team is on Thursday.",
    "It is raining in Lisbon, so bring an umbrella.",
    "I could not find a file called notes.",
    "The capital of Peru is Lima, on the Pacific coast.",
    "Your sister called this morning and will call again.",
    "There are twelve days left until the end of the month.",
    "I moved the dentist to Friday at half past nine.",
    "The build failed because a test timed out on the server.",
    "Sure, I will remind you to water the plants tomorrow morning.",
    "The printer on the second floor is out of paper again.",
    "You have three new emails, one of them from your manager.",
    "Spiders have eight legs.",
    "That song is by a band from Manchester.",
];

/// A long reply, read sentence by sentence.
const LONG: &str = "Here is the plan for tomorrow. You start with the design review at nine, \
                    in the big room. After lunch there is a call with the supplier about the \
                    delayed parts. At four you wanted time to write the quarterly report. I \
                    also set a reminder to buy milk on the way home.";

struct Run {
    threads: usize,
    /// Milliseconds to each sentence's audio, and to its phonemes alone.
    first_audio: Vec<f64>,
    phonemes: Vec<f64>,
    /// Seconds synthesizing, seconds of audio.
    synth_s: f64,
    audio_s: f64,
    /// The long reply: its sentences' audio lengths and synthesis times, in seconds.
    long: Vec<(f64, f64)>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let write = match args.as_slice() {
        [] => None,
        [flag, path] if flag == "--write" => Some(PathBuf::from(path)),
        _ => return Err("usage: bench_voice [--write docs/PERFORMANCE.md]".into()),
    };
    let models = stt_testkit::models_dir();
    let model = stt_voice::default_path(&models);
    let runtime = stt_voice::runtime_library(&models);
    let mut runs = Vec::new();
    for threads in [1, 2] {
        eprintln!("bench-voice: {threads} thread(s)");
        let mut voice = Voice::load(&model, &runtime, threads, ESPEAK)?;
        voice.sentence("Warming up the voice.")?;
        let rate = f64::from(voice.sample_rate());
        let mut run = Run {
            threads,
            first_audio: Vec::new(),
            phonemes: Vec::new(),
            synth_s: 0.0,
            audio_s: 0.0,
            long: Vec::new(),
        };
        for sentence in SENTENCES {
            let started = Instant::now();
            voice.ids(sentence)?;
            run.phonemes.push(started.elapsed().as_secs_f64() * 1000.0);
            let started = Instant::now();
            let audio = voice.sentence(sentence)?;
            let took = started.elapsed().as_secs_f64();
            run.first_audio.push(took * 1000.0);
            run.synth_s += took;
            run.audio_s += audio.len() as f64 / rate;
        }
        for sentence in stt_voice::phonemes::sentences(LONG) {
            let started = Instant::now();
            let audio = voice.sentence(&sentence)?;
            run.long.push((audio.len() as f64 / rate, started.elapsed().as_secs_f64()));
        }
        runs.push(run);
    }
    let stops = stop_to_silence();
    let report = report(&runs, &model, &stops);
    print!("{report}");
    if let Some(path) = write {
        perf::write_section(&path, START, END, &report)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

/// Stopping the default output device mid-sentence, [`STOPS`] times: from each stop to the
/// device playing silence, in ms, as it tells ([`stt_audio::output::Playback::silenced_after`]),
/// and what the device is; `Err` when there is no output device.
fn stop_to_silence() -> Result<(Vec<f64>, String), String> {
    let mut playback = stt_audio::output::Playback::open(None).map_err(|e| e.to_string())?;
    eprintln!("bench-voice: stopping {} {STOPS} times", playback.describe());
    let rate = playback.rate() as f32;
    // A second of a 220 Hz tone at a quiet level, stopped half way.
    let tone: Vec<f32> = (0..playback.rate())
        .map(|i| 0.1 * (2.0 * std::f32::consts::PI * 220.0 * i as f32 / rate).sin())
        .collect();
    // The stream's first second or two wait for the device to start draining (PulseAudio
    // reported 0.85 s of lead at a first stop 1.1 s in, 30 ms after): the voice lane opens
    // the device once, at start, long before the first reply, so that is not a stop's cost.
    playback.queue(&tone[..tone.len() / 4]).map_err(|e| e.to_string())?;
    std::thread::sleep(Duration::from_secs(3));
    let mut silent = Vec::new();
    for _ in 0..STOPS {
        playback.queue(&tone).map_err(|e| e.to_string())?;
        std::thread::sleep(Duration::from_millis(500));
        playback.stop();
        let asked = Instant::now();
        while asked.elapsed() < Duration::from_secs(2) {
            if let Some(after) = playback.silenced_after() {
                silent.push(after.as_secs_f64() * 1000.0);
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    Ok((silent, playback.describe().to_owned()))
}

/// The longest wait between two sentences of the long reply when the next one is synthesized
/// while the one before plays (the first is synthesized before anything plays), in ms.
fn longest_gap(long: &[(f64, f64)]) -> f64 {
    let mut gap: f64 = 0.0;
    let mut ready = 0.0; // when the synthesizer is free, s from the start
    let mut playing_until = 0.0;
    for &(audio, synth) in long {
        ready += synth;
        // It plays once it is ready and the one before has ended.
        let starts = if playing_until == 0.0 { ready } else { ready.max(playing_until) };
        if playing_until > 0.0 {
            gap = gap.max(starts - playing_until);
        }
        playing_until = starts + audio;
    }
    gap * 1000.0
}

fn report(
    runs: &[Run],
    model: &std::path::Path,
    stops: &Result<(Vec<f64>, String), String>,
) -> String {
    let mut w = String::new();
    let _ = writeln!(w, "{START}");
    let _ = writeln!(w, "## The voice (`scripts/bench-voice`)\n");
    let _ = writeln!(
        w,
        "Measured {} on {}, release build, the Piper voice `{}` in ONNX Runtime, espeak-ng {} for \
         its phonemes, nothing else running. Reproduce with `scripts/bench-voice` (`cargo run \
         --release -p stt-voice --example bench_voice`; `--write` rewrites this section).\n",
        perf::today(),
        perf::machine(),
        model.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        espeak_version(),
    );
    let _ = writeln!(
        w,
        "**First sentences**: {} sentences of 4 to 12 words, each synthesized alone after a \
         warm-up. A Piper voice gives a sentence's audio all at once, so its synthesis time is \
         the time to its first audio. *Phonemes*: espeak-ng's part (a process per clause). \
         **Long reply**: {} sentences read one by one, the next synthesized while the one before \
         would play; a gap is the wait for it after that one ends.\n",
        SENTENCES.len(),
        stt_voice::phonemes::sentences(LONG).len(),
    );
    let _ = writeln!(
        w,
        "| ONNX Runtime threads | first audio, median | p95 | max | phonemes, median | real-time factor | long reply: longest gap |"
    );
    let _ = writeln!(w, "|---:|---:|---:|---:|---:|---:|---:|");
    for run in runs {
        let first = Stats::of(run.first_audio.clone());
        let phonemes = Stats::of(run.phonemes.clone());
        let _ = writeln!(
            w,
            "| {} | {:.0} ms | {:.0} ms | {:.0} ms | {:.0} ms | {:.2} | {:.0} ms |",
            run.threads,
            first.p50,
            first.p95,
            first.max,
            phonemes.p50,
            run.synth_s / run.audio_s,
            longest_gap(&run.long),
        );
    }
    let two = runs.iter().find(|r| r.threads == 2).or(runs.first());
    if let Some(run) = two {
        let first = Stats::of(run.first_audio.clone());
        let rtf = run.synth_s / run.audio_s;
        let gap = longest_gap(&run.long);
        let met = |ok: bool| if ok { "met" } else { "not met" };
        let _ = writeln!(
            w,
            "\n**Targets** (issue 27, {} threads): first sentence → its first audio ≤ 300 ms: \
             **{}** (max {:.0} ms); real-time factor ≤ 0.3: **{}** ({rtf:.2}); no gap over 150 ms \
             between queued sentences: **{}** ({gap:.0} ms).",
            run.threads,
            met(first.max <= 300.0),
            first.max,
            met(rtf <= 0.3),
            met(gap <= 150.0),
        );
    }
    match stops {
        Ok((silent, device)) if !silent.is_empty() => {
            let stats = Stats::of(silent.clone());
            let _ = writeln!(
                w,
                "\n**Stop → silence** ({} stops of a tone half way through, on `{device}`): \
                 median {:.0} ms, p95 {:.0} ms, max {:.0} ms: the wait for the device's next \
                 buffer plus how far ahead of playing it asks for one, as it reports them \
                 (cpal's callback and playback times). Target ≤ 100 ms: **{}**.",
                silent.len(),
                stats.p50,
                stats.p95,
                stats.max,
                if stats.p50 <= 100.0 { "met" } else { "not met" },
            );
        }
        Ok(_) => {
            let _ = writeln!(w, "\n**Stop → silence**: the device never reported its buffers.");
        }
        Err(why) => {
            let _ = writeln!(w, "\n**Stop → silence**: not measured, no output device ({why}).");
        }
    }
    let _ = writeln!(w, "{END}");
    w
}

fn espeak_version() -> String {
    std::process::Command::new(ESPEAK)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|v| v.split_whitespace().nth(3).map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}
