//! Measures the VAD classifiers on the clips `scripts/measure-vad.py` builds, and writes the
//! "Voice activity detection" section of `docs/PERFORMANCE.md`. Run it through
//! `scripts/measure-vad`, which builds the clips and Silero's probabilities first:
//!
//! ```text
//! cargo run --release -p stt-vad --example measure_vad -- WORK_DIR [--write docs/PERFORMANCE.md]
//! ```
//!
//! Both classifiers run here: earshot, and Silero through this crate's [`Silero`] (plain Rust,
//! the model that `scripts/fetch-models` installs, found where the daemon finds it).
//! The probabilities Silero's own Python wrapper gave (`WORK_DIR/silero/`, one per 512-sample
//! chunk) are the reference the Rust ones are checked against. Both go through the same code:
//! the raw boundaries use the segmenter's onset, hangover and hysteresis without pre-roll or
//! tail, and the segments are the real [`Segmenter`] fed the recorded probabilities.

#![allow(clippy::print_stdout, clippy::print_stderr, reason = "a command-line report")]

use std::error::Error;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use stt_vad::segmenter::HYSTERESIS;
use stt_vad::{Earshot, Gated, SAMPLE_RATE, SegEvent, Segmenter, Silero, SpeechProb, VadConfig};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const START: &str = "<!-- vad:start -->";
const END: &str = "<!-- vad:end -->";

/// The daemon's default `[daemon].vad_gate_db`.
const GATE_DB: f32 = 6.0;

struct Clip {
    name: String,
    speech: bool,
    condition: String,
    /// Ground truth: where the espeak audio is non-silent, in samples.
    spans: Vec<(u64, u64)>,
    audio: Vec<f32>,
}

struct Vad {
    name: &'static str,
    short: &'static str,
    frame_len: usize,
    /// One probability per frame, per clip.
    probs: Vec<Vec<f32>>,
    /// CPU seconds per second of audio, one thread: all clips, and the noise-only ones.
    cpu: f64,
    cpu_noise: f64,
}

/// Replays recorded probabilities.
struct Replay<'a> {
    probs: &'a [f32],
    next: usize,
    frame_len: usize,
}

impl SpeechProb for Replay<'_> {
    fn frame_len(&self) -> usize {
        self.frame_len
    }
    fn prob(&mut self, _frame: &[f32]) -> f32 {
        let p = self.probs.get(self.next).copied().unwrap_or(0.0);
        self.next += 1;
        p
    }
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (work, write) = match args.as_slice() {
        [work] => (PathBuf::from(work), None),
        [work, flag, path] if flag == "--write" => (PathBuf::from(work), Some(PathBuf::from(path))),
        _ => return Err("usage: measure_vad WORK_DIR [--write docs/PERFORMANCE.md]".into()),
    };
    let clips = load_clips(&work)?;
    let audio_s: f64 = clips.iter().map(|c| c.audio.len() as f64).sum::<f64>() / 16_000.0;
    eprintln!("measure_vad: {} clips, {audio_s:.0} s of audio", clips.len());
    let e = earshot(&clips);
    let g = gated(&clips, &e);
    let s = silero(&clips)?;
    let check = agreement(&work, &clips, &s)?;
    let sg = silero_gated(&clips)?;
    let vads = [e, g, s, sg];
    let report = report(&clips, &vads, audio_s, &check);
    println!("{report}");
    if let Some(path) = write {
        stt_testkit::perf::write_section(&path, START, END, &report)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        eprintln!("measure_vad: wrote its section of {}", path.display());
    }
    Ok(())
}

fn load_clips(work: &Path) -> Result<Vec<Clip>> {
    let truth = std::fs::read_to_string(work.join("truth.tsv")).map_err(|e| {
        format!("{}: {e}: run scripts/measure-vad", work.join("truth.tsv").display())
    })?;
    let mut clips = Vec::new();
    for line in truth.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let [name, kind, condition, spans] = f[..] else {
            return Err(format!("bad truth line {line:?}").into());
        };
        let spans = spans
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|s| {
                let (a, b) = s.split_once(':').ok_or("bad span")?;
                Ok((a.parse()?, b.parse()?))
            })
            .collect::<Result<Vec<(u64, u64)>>>()?;
        let mut wav = hound::WavReader::open(work.join("clips").join(format!("{name}.wav")))?;
        let audio = wav
            .samples::<i16>()
            .map(|s| s.map(|s| f32::from(s) / 32768.0))
            .collect::<std::result::Result<_, _>>()?;
        clips.push(Clip {
            name: name.to_owned(),
            speech: kind == "speech",
            condition: condition.to_owned(),
            spans,
            audio,
        });
    }
    Ok(clips)
}

/// CPU time of the calling thread, in seconds (from the scheduler: exact, and blind to
/// whatever else the machine is running).
fn thread_cpu() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|ns| ns.parse::<f64>().ok()))
        .map_or(f64::NAN, |ns| ns / 1e9)
}

/// Runs `vad` over every clip (reset between clips): the probabilities, and CPU seconds per
/// second of audio.
fn run_vad(clips: &[Clip], vad: &mut dyn SpeechProb) -> (Vec<Vec<f32>>, f64, f64) {
    let mut probs = Vec::new();
    let (mut busy, mut busy_noise) = (0.0, 0.0);
    for clip in clips {
        vad.reset();
        let t = thread_cpu();
        let p: Vec<f32> =
            clip.audio.chunks_exact(vad.frame_len()).map(|frame| vad.prob(frame)).collect();
        let cpu = thread_cpu() - t;
        busy += cpu;
        if !clip.speech {
            busy_noise += cpu;
        }
        probs.push(p);
    }
    let seconds = |noise_only: bool| {
        let n = clips.iter().filter(|c| !noise_only || !c.speech);
        n.map(|c| c.audio.len() as f64).sum::<f64>() / 16_000.0
    };
    (probs, busy / seconds(false), busy_noise / seconds(true))
}

fn earshot(clips: &[Clip]) -> Vad {
    let (probs, cpu, cpu_noise) = run_vad(clips, &mut Earshot::new());
    Vad {
        name: "earshot 1.2.2",
        short: "earshot",
        frame_len: Earshot::FRAME_LEN,
        probs,
        cpu,
        cpu_noise,
    }
}

/// Earshot's probability scaled down where the frame's energy is within `GATE_DB` of a
/// running noise floor (follows the energy down at once, rises `GATE_RISE_DB_S`): the cheap
/// pure-Rust fix tried for earshot's false positives on noise.
fn gated(clips: &[Clip], e: &Vad) -> Vad {
    const GATE_DB: f32 = 6.0;
    const GATE_RISE_DB_S: f32 = 0.5;
    let rise = GATE_RISE_DB_S * Earshot::FRAME_LEN as f32 / 16_000.0;
    let probs = clips
        .iter()
        .zip(&e.probs)
        .map(|(clip, probs)| {
            let mut floor = f32::INFINITY;
            clip.audio
                .chunks_exact(Earshot::FRAME_LEN)
                .zip(probs)
                .map(|(f, &p)| {
                    let power = f.iter().map(|x| x * x).sum::<f32>() / f.len() as f32;
                    let db = 10.0 * (power + 1e-10).log10();
                    floor = if db < floor { db } else { floor + rise };
                    p * ((db - floor) / GATE_DB).clamp(0.0, 1.0)
                })
                .collect()
        })
        .collect();
    Vad {
        name: "earshot + noise gate",
        short: "earshot + gate",
        frame_len: Earshot::FRAME_LEN,
        probs,
        cpu: e.cpu,
        cpu_noise: e.cpu_noise,
    }
}

fn silero(clips: &[Clip]) -> Result<Vad> {
    let model = stt_config::dirs::model_path(Path::new("silero_vad.onnx"))?;
    let mut vad = Silero::load(&model)?;
    let (probs, cpu, cpu_noise) = run_vad(clips, &mut vad);
    Ok(Vad {
        name: "Silero 6.2.3 (`stt_vad::Silero`, plain Rust)",
        short: "Silero",
        frame_len: Silero::FRAME_LEN,
        probs,
        cpu,
        cpu_noise,
    })
}

/// Silero behind the daemon's noise gate ([`Gated`], at the default margin): what the daemon
/// runs by default.
fn silero_gated(clips: &[Clip]) -> Result<Vad> {
    let model = stt_config::dirs::model_path(Path::new("silero_vad.onnx"))?;
    let mut vad = Gated::new(Silero::load(&model)?, GATE_DB);
    let (probs, cpu, cpu_noise) = run_vad(clips, &mut vad);
    let (ran, skipped) = vad.counts();
    eprintln!("measure_vad: the gate skipped {skipped} of {} Silero frames", ran + skipped);
    Ok(Vad {
        name: "Silero behind the noise gate (`Gated`, 6 dB): the daemon's default",
        short: "Silero + gate",
        frame_len: Silero::FRAME_LEN,
        probs,
        cpu,
        cpu_noise,
    })
}

/// How far the Rust probabilities are from those of Silero's Python wrapper on the same
/// clips, and that wrapper's CPU time, as a sentence for the report.
fn agreement(work: &Path, clips: &[Clip], rust: &Vad) -> Result<String> {
    let (mut frames, mut worst, mut flips) = (0usize, 0f32, 0usize);
    for (clip, ours) in clips.iter().zip(&rust.probs) {
        let bytes = std::fs::read(work.join("silero").join(format!("{}.f32", clip.name)))?;
        let theirs: Vec<f32> =
            bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        if theirs.len() != ours.len() {
            return Err(format!(
                "{}: {} Python frames, {} here",
                clip.name,
                theirs.len(),
                ours.len()
            )
            .into());
        }
        for (a, b) in ours.iter().zip(&theirs) {
            worst = worst.max((a - b).abs());
            flips += usize::from((*a >= 0.5) != (*b >= 0.5));
        }
        frames += ours.len();
    }
    let timing = std::fs::read_to_string(work.join("silero.tsv"))?;
    let (cpu, audio) = timing.trim().split_once('\t').ok_or("bad silero.tsv")?;
    let python_ms = cpu.parse::<f64>()? / audio.parse::<f64>()? * 1000.0;
    let how_close = if worst == 0.0 {
        "exactly, bit for bit".to_owned()
    } else {
        format!("to within {worst:.1e} ({flips} frames on the other side of 0.5)")
    };
    Ok(format!(
        "Silero's probabilities here match those of its own Python wrapper (onnxruntime \
         1.31.1 from PyPI) on all {frames} frames {how_close}; that wrapper took \
         {python_ms:.2} ms of wall time per second of audio inside `InferenceSession.run`."
    ))
}

/// Speech spans from probabilities, with the segmenter's onset, hangover and hysteresis but
/// no pre-roll and no tail: where the classifier itself puts speech.
fn raw_spans(probs: &[f32], frame_len: usize, cfg: &VadConfig) -> Vec<(u64, u64)> {
    let (on, off) = thresholds(cfg.threshold);
    let onset = (u64::from(cfg.onset_ms) * 16).div_ceil(frame_len as u64).max(1);
    let hangover = u64::from(cfg.hangover_ms) * 16;
    let fl = frame_len as u64;
    let mut spans = Vec::new();
    let (mut run, mut run_start, mut open) = (0, 0, None);
    for (k, &p) in probs.iter().enumerate() {
        let (fs, fe) = (k as u64 * fl, (k as u64 + 1) * fl);
        match open {
            Some((s, e)) => {
                if p >= off {
                    open = Some((s, fe));
                } else if fe - e >= hangover {
                    spans.push((s, e));
                    open = None;
                }
            }
            None if p >= on => {
                if run == 0 {
                    run_start = fs;
                }
                run += 1;
                if run >= onset {
                    open = Some((run_start, fe));
                    run = 0;
                }
            }
            None => run = 0,
        }
    }
    spans.extend(open);
    spans
}

fn thresholds(threshold: f64) -> (f32, f32) {
    (threshold as f32, (threshold - HYSTERESIS).max(threshold / 2.0) as f32)
}

/// The real segmenter on recorded probabilities: (start, end, too_short) in samples.
fn segments(clip: &Clip, vad: &Vad, k: usize, cfg: &VadConfig) -> Result<Vec<(u64, u64, bool)>> {
    let replay = Replay { probs: &vad.probs[k], next: 0, frame_len: vad.frame_len };
    let mut seg = Segmenter::with_prob(*cfg, replay)?;
    let mut events = seg.push(&clip.audio);
    events.extend(seg.finish());
    let at = |s: f64| (s * f64::from(SAMPLE_RATE)).round() as u64;
    Ok(events
        .into_iter()
        .filter_map(|e| match e {
            SegEvent::End { start_s, end_s, too_short, .. } => {
                Some((at(start_s), at(end_s), too_short))
            }
            SegEvent::Start { .. } => None,
        })
        .collect())
}

#[derive(Default)]
struct Tally {
    utterances: usize,
    /// Raw boundaries, signed ms: start (positive = late), end (negative = early).
    start_err: Vec<f64>,
    end_err: Vec<f64>,
    missed: usize,
    /// Shortest speech the classifier found in an utterance, ms.
    min_detected: f64,
    /// Longest stretch under the stay-in-speech threshold inside an utterance, ms.
    max_gap: f64,
    segments: usize,
    clipped: usize,
    split: usize,
    false_segments: usize,
    false_short: usize,
    /// Smallest margin of a containing segment before / after its utterance, ms.
    min_before: f64,
    min_after: f64,
    // Noise-only clips.
    noise_s: f64,
    speech_frames: usize,
    frames: usize,
}

fn ms(samples: u64) -> f64 {
    samples as f64 / 16.0
}

fn tally(clips: &[&Clip], vad: &Vad, index: &[usize], cfg: &VadConfig) -> Result<Tally> {
    let mut t = Tally {
        min_before: f64::INFINITY,
        min_after: f64::INFINITY,
        min_detected: f64::INFINITY,
        ..Tally::default()
    };
    let (on, off) = thresholds(cfg.threshold);
    let fl = vad.frame_len as u64;
    for (clip, &k) in clips.iter().zip(index) {
        let probs = &vad.probs[k];
        let raw = raw_spans(probs, vad.frame_len, cfg);
        let segs = segments(clip, vad, k, cfg)?;
        if !clip.speech {
            t.noise_s += clip.audio.len() as f64 / 16_000.0;
            t.frames += probs.len();
            t.speech_frames += probs.iter().filter(|&&p| p >= on).count();
        }
        for &(a, b) in &clip.spans {
            t.utterances += 1;
            let hit: Vec<_> = raw.iter().filter(|&&(s, e)| s < b && e > a).collect();
            match (hit.first(), hit.last()) {
                (Some(first), Some(last)) => {
                    t.start_err.push(ms(first.0) - ms(a));
                    t.end_err.push(ms(last.1) - ms(b));
                    t.min_detected = t.min_detected.min(ms(last.1 - first.0));
                }
                _ => t.missed += 1,
            }
            let mut gap = 0;
            let mut longest = 0;
            for (i, &p) in probs.iter().enumerate() {
                let (fs, fe) = (i as u64 * fl, (i as u64 + 1) * fl);
                if fs < a || fe > b {
                    continue;
                }
                gap = if p < off { gap + 1 } else { 0 };
                longest = longest.max(gap);
            }
            t.max_gap = t.max_gap.max(ms(longest * fl));
            let touching = segs.iter().filter(|&&(s, e, _)| s < b && e > a).count();
            if touching > 1 {
                t.split += 1;
            }
            match segs.iter().find(|&&(s, e, short)| !short && s <= a && e >= b) {
                Some(&(s, e, _)) => {
                    t.min_before = t.min_before.min(ms(a - s));
                    t.min_after = t.min_after.min(ms(e - b));
                }
                None => t.clipped += 1,
            }
        }
        t.segments += segs.iter().filter(|s| !s.2).count();
        for &(s, e, short) in &segs {
            if clip.spans.iter().all(|&(a, b)| s >= b || e <= a) {
                if short {
                    t.false_short += 1;
                } else {
                    t.false_segments += 1;
                }
            }
        }
    }
    Ok(t)
}

fn median(v: &[f64]) -> f64 {
    quantile(v, 0.5)
}

fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn abs(v: &[f64]) -> Vec<f64> {
    v.iter().map(|x| x.abs()).collect()
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

/// The clips of each condition, in first-seen order.
fn conditions(clips: &[Clip], speech: bool) -> Vec<(String, Vec<usize>)> {
    let mut out: Vec<(String, Vec<usize>)> = Vec::new();
    for (k, clip) in clips.iter().enumerate().filter(|(_, c)| c.speech == speech) {
        match out.iter_mut().find(|(c, _)| *c == clip.condition) {
            Some((_, ks)) => ks.push(k),
            None => out.push((clip.condition.clone(), vec![k])),
        }
    }
    out
}

fn pick<'a>(clips: &'a [Clip], index: &[usize]) -> Vec<&'a Clip> {
    index.iter().map(|&k| &clips[k]).collect()
}

fn report(clips: &[Clip], vads: &[Vad], audio_s: f64, check: &str) -> String {
    match try_report(clips, vads, audio_s, check) {
        Ok(s) => s,
        Err(e) => format!("measure_vad failed: {e}"),
    }
}

fn try_report(clips: &[Clip], vads: &[Vad], audio_s: f64, check: &str) -> Result<String> {
    let cfg = VadConfig::default();
    let speech = conditions(clips, true);
    let noise = conditions(clips, false);
    let all_speech: Vec<usize> = speech.iter().flat_map(|(_, k)| k.clone()).collect();
    let all_noise: Vec<usize> = noise.iter().flat_map(|(_, k)| k.clone()).collect();
    let utterances: usize = all_speech.iter().map(|&k| clips[k].spans.len()).sum();
    let shortest = all_speech
        .iter()
        .flat_map(|&k| clips[k].spans.iter().map(|&(a, b)| ms(b - a)))
        .fold(f64::INFINITY, f64::min);
    let noise_s: f64 = all_noise.iter().map(|&k| clips[k].audio.len() as f64).sum::<f64>() / 16e3;
    let mut s = String::new();
    let o = &mut s;
    writeln!(o, "{START}")?;
    writeln!(o, "## Voice activity detection (`scripts/measure-vad`)\n")?;
    writeln!(
        o,
        "Measured {} on {}, release build. Reproduce with `scripts/measure-vad` (about a \
         minute; it needs espeak-ng, sox and python3, the model and library that \
         `scripts/fetch-models` installs, and installs Silero and onnxruntime from PyPI into a \
         throwaway venv under /tmp for the reference run): `scripts/measure-vad.py` builds the \
         clips and runs Silero's Python wrapper as the reference, then \
         `crates/stt-vad/examples/measure_vad.rs` runs earshot and Silero (`stt_vad::Silero`, \
         as the daemon does), scores both and rewrites this section.\n",
        stt_testkit::perf::today(),
        stt_testkit::perf::machine()
    )?;
    writeln!(
        o,
        "**Clips** ({audio_s:.0} s in all): {} speech clips, each five espeak-ng sentences \
         (from \"Stop.\" and \"Yes.\" to 15-word questions, some starting or ending in \
         fricatives and plosives) in one voice (en-us, en-gb, en-us+f3, en+m7) at one rate \
         (140, 165, 190 wpm), with 1–2.5 s of silence between: {utterances} utterances \
         ({shortest:.0} ms the shortest), each in {} conditions (clean; 20 dB quieter; pink noise at 20, 10 and 5 dB SNR over \
         the speech's RMS; white noise at 10 dB); and {} noise-only clips of 60 s \
         ({noise_s:.0} s). Ground truth is where espeak's audio is non-silent (|x| ≥ 0.001), \
         known from how each clip was assembled. Everything is 16 kHz, 16-bit.\n",
        all_speech.len() / speech.len().max(1),
        speech.len(),
        noise.len(),
    )?;
    writeln!(
        o,
        "**Method.** Both classifiers feed the same code. *Raw boundaries* are where the \
         classifier alone puts speech: the segmenter's onset ({} ms), hangover ({} ms) and \
         hysteresis (stay in speech down to threshold − {HYSTERESIS}) at threshold {}, \
         without pre-roll or tail; start error is positive when late, end error negative when \
         early. *Segments* are the real `Segmenter` with the defaults (`VadConfig::default()`: \
         pre-roll {} ms, tail {} ms, minimum speech {} ms, maximum {} s) fed the recorded \
         probabilities: a word is *clipped* when its utterance is not wholly inside one \
         transcribed segment; *false* segments overlap no utterance (or are all noise). \
         Silero runs as its own wrapper does (512-sample chunks, 64 samples of context, \
         state carried over, one thread), earshot on 256-sample frames. {check} *earshot + gate* is earshot \
         with a noise gate, tried as a pure-Rust fix for its false positives: a frame's \
         probability is scaled down when its energy is within 6 dB of a running noise floor \
         (which follows the energy down at once and rises 0.5 dB/s). *Silero + gate* is what \
         the daemon runs: `stt_vad::Gated` in front of Silero skips the network on frames \
         less than {GATE_DB} dB above a noise floor (down at once, up 1 dB/s), keeps it running \
         1.5 s after the last louder frame, and on opening first runs it over the 3 frames before \
         (state kept; each clip starts with the gate open).\n",
        cfg.onset_ms,
        cfg.hangover_ms,
        cfg.threshold,
        cfg.pre_roll_ms,
        cfg.tail_ms.min(cfg.hangover_ms),
        cfg.min_speech_ms,
        cfg.max_segment_s,
    )?;

    writeln!(o, "### Boundaries and segments on speech, threshold {}\n", cfg.threshold)?;
    writeln!(
        o,
        "| condition | VAD | start err median / p90 abs / latest ms | end err median / p90 abs / \
         earliest ms | longest in-utterance gap ms | shortest utterance found ms | missed | segments | clipped | split | \
         false | closest edge before / after ms |"
    )?;
    writeln!(o, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")?;
    let mut rows = speech;
    rows.push(("**all**".to_owned(), all_speech.clone()));
    for (condition, index) in &rows {
        for vad in vads {
            let t = tally(&pick(clips, index), vad, index, &cfg)?;
            writeln!(
                o,
                "| {condition} | {} | {:+.0} / {:.0} / {:+.0} | {:+.0} / {:.0} / {:+.0} | {:.0} | \
                 {:.0} | {} | {} | {} | {} | {} | {:.0} / {:.0} |",
                vad.short,
                median(&t.start_err),
                quantile(&abs(&t.start_err), 0.9),
                max(&t.start_err),
                median(&t.end_err),
                quantile(&abs(&t.end_err), 0.9),
                min(&t.end_err),
                t.max_gap,
                t.min_detected,
                t.missed,
                t.segments,
                t.clipped,
                t.split,
                t.false_segments + t.false_short,
                t.min_before,
                t.min_after,
            )?;
        }
    }

    writeln!(o, "\n### Noise only, threshold {}\n", cfg.threshold)?;
    writeln!(
        o,
        "| noise (60 s) | VAD | frames ≥ threshold | segments opened | of which transcribed \
         (not too short) |"
    )?;
    writeln!(o, "|---|---|---:|---:|---:|")?;
    for (condition, index) in &noise {
        for vad in vads {
            let t = tally(&pick(clips, index), vad, index, &cfg)?;
            writeln!(
                o,
                "| {condition} | {} | {:.1}% | {} | {} |",
                vad.short,
                100.0 * t.speech_frames as f64 / t.frames.max(1) as f64,
                t.false_segments + t.false_short,
                t.false_segments,
            )?;
        }
    }

    writeln!(o, "\n### One key at a time (all speech clips; all noise-only clips)\n")?;
    writeln!(
        o,
        "Each cell: words clipped / utterances split / false segments on the speech clips / \
         segments opened on noise-only clips (of which transcribed). Bold is the default.\n"
    )?;
    write!(o, "| setting |")?;
    for vad in vads {
        write!(o, " {} |", vad.short)?;
    }
    writeln!(o, "\n|---|{}", "---:|".repeat(vads.len()))?;
    for (label, c) in sweeps(&cfg) {
        let label = if c == cfg { format!("**{label}**") } else { label };
        write!(o, "| {label} |")?;
        for vad in vads {
            let t = tally(&pick(clips, &all_speech), vad, &all_speech, &c)?;
            let n = tally(&pick(clips, &all_noise), vad, &all_noise, &c)?;
            write!(
                o,
                " {} / {} / {} / {} ({}) |",
                t.clipped,
                t.split,
                t.false_segments + t.false_short,
                n.false_segments + n.false_short,
                n.false_segments,
            )?;
        }
        writeln!(o)?;
    }

    if let Some(silero) = vads.iter().find(|v| v.short == "Silero") {
        thresholds_table(o, clips, silero, &cfg, &all_speech, &all_noise)?;
    }

    writeln!(o, "\n### CPU\n")?;
    writeln!(
        o,
        "| VAD | CPU per second of audio, all clips (one thread) | … noise-only clips | frame |"
    )?;
    writeln!(o, "|---|---:|---:|---:|")?;
    for vad in vads.iter().filter(|v| v.short != "earshot + gate") {
        writeln!(
            o,
            "| {} | {:.2} ms | {:.2} ms | {} ms |",
            vad.name,
            vad.cpu * 1000.0,
            vad.cpu_noise * 1000.0,
            vad.frame_len * 1000 / SAMPLE_RATE as usize
        )?;
    }
    writeln!(
        o,
        "\nBoth are timed in this process around `SpeechProb::prob`, frame by frame as the \
         daemon calls it, with the thread's CPU time (`/proc/thread-self/schedstat`, so other \
         load on the machine does not count); Silero runs on the calling thread."
    )?;
    writeln!(o, "\n{}", conclusion())?;
    writeln!(o, "{END}")?;
    Ok(s)
}

/// Silero at thresholds across the whole range: where its flat region ends on each side,
/// and what the threshold does to the boundaries inside it.
fn thresholds_table(
    o: &mut String,
    clips: &[Clip],
    vad: &Vad,
    cfg: &VadConfig,
    all_speech: &[usize],
    all_noise: &[usize],
) -> Result<()> {
    writeln!(o, "\n### Silero's threshold (all speech clips; all noise-only clips)\n")?;
    writeln!(
        o,
        "Errors as in the first table (raw boundaries, ms); *margin* is the closest a \
         transcribed segment's edge comes to its utterance, before / after; *noise frames* are \
         the noise-only clips' frames at or above the threshold. Bold is the default.\n"
    )?;
    writeln!(
        o,
        "| threshold | clipped / split / false / opened on noise | start err median / p90 abs \
         / latest | end err median / p90 abs / earliest | margin before / after | noise frames \
         ≥ threshold |"
    )?;
    writeln!(o, "|---|---:|---:|---:|---:|---:|")?;
    for threshold in [0.1, 0.2, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9] {
        let c = VadConfig { threshold, ..*cfg };
        let t = tally(&pick(clips, all_speech), vad, all_speech, &c)?;
        let n = tally(&pick(clips, all_noise), vad, all_noise, &c)?;
        let label = if c == *cfg { format!("**{threshold}**") } else { format!("{threshold}") };
        writeln!(
            o,
            "| {label} | {} / {} / {} / {} | {:+.0} / {:.0} / {:+.0} | {:+.0} / {:.0} / {:+.0} | \
             {:.0} / {:.0} | {:.2}% |",
            t.clipped,
            t.split,
            t.false_segments + t.false_short,
            n.false_segments + n.false_short,
            median(&t.start_err),
            quantile(&abs(&t.start_err), 0.9),
            max(&t.start_err),
            median(&t.end_err),
            quantile(&abs(&t.end_err), 0.9),
            min(&t.end_err),
            t.min_before,
            t.min_after,
            100.0 * n.speech_frames as f64 / n.frames.max(1) as f64,
        )?;
    }
    Ok(())
}

/// Each key at a few values, the others at their defaults.
fn sweeps(cfg: &VadConfig) -> Vec<(String, VadConfig)> {
    let mut out = Vec::new();
    for threshold in [0.3, 0.4, 0.5, 0.6, 0.7] {
        out.push((format!("threshold {threshold}"), VadConfig { threshold, ..*cfg }));
    }
    for onset_ms in [16, 32, 64, 128, 192] {
        out.push((format!("onset_ms {onset_ms}"), VadConfig { onset_ms, ..*cfg }));
    }
    for hangover_ms in [200, 300, 400, 500, 700] {
        out.push((format!("hangover_ms {hangover_ms}"), VadConfig { hangover_ms, ..*cfg }));
    }
    for min_speech_ms in [100, 150, 200, 250, 300] {
        out.push((format!("min_speech_ms {min_speech_ms}"), VadConfig { min_speech_ms, ..*cfg }));
    }
    for pre_roll_ms in [100, 200, 300] {
        out.push((format!("pre_roll_ms {pre_roll_ms}"), VadConfig { pre_roll_ms, ..*cfg }));
    }
    out
}

/// The choice and the defaults, in words; the tables above are what they rest on.
fn conclusion() -> &'static str {
    include_str!("measure_vad_conclusion.md")
}
