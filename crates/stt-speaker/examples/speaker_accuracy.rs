//! How well the speaker embeddings tell people apart, and what the roster makes of it: the
//! "Speaker identification: accuracy" section of `docs/PERFORMANCE.md`. Run it through
//! `scripts/bench-speakers`:
//!
//! ```text
//! cargo run --release -p stt-speaker --example speaker_accuracy -- [--write docs/PERFORMANCE.md]
//! ```
//!
//! The material is of two kinds, reported apart and together:
//!
//! - **espeak-ng**: the eight voices of `tests/embed.rs`, each at 140 and 175 words a minute
//!   (one speaker: the same voice at two speeds), saying eight short spoken commands, with
//!   0.3 s of silence before and after (a voice-activity segment's pre-roll and tail). Made
//!   with the test kit (sox in repeatable mode), cached under the system's temporary
//!   directory.
//! - **real**: the recordings `scripts/fetch-speech` installs (the whole set), in the order of
//!   their speaker label and id. A speaker with two clips or more is a target; the clips of a
//!   speaker with one are impostors only.
//!
//! Utterances of less than `[speakers].min_segment_s` (1 s) of speech are skipped, as the
//! daemon skips them (one row shows the real clips with them). Every pair of utterances is
//! scored by the cosine of their embeddings: the score distributions of same-speaker and
//! other-speaker pairs, the equal error rate, and false accepts and rejects at a few
//! thresholds. Then sessions through the real [`Roster`] (a fresh one in a temporary
//! directory each, `confirm_s` 10, `max_speakers` 32): every group of 2, 3 and 4 target
//! speakers of one kind, their utterances in turn (A B A B …, A B C A B C …; a speaker whose
//! utterances ran out drops out), once starting with each member, under each candidate pair of
//! (match, uncertain) thresholds. And the time an embedding takes, on one thread.
//!
//! The model and ONNX Runtime are found where the daemon finds them (`$STT_MODELS_DIR`, else
//! `<data_dir>/models`), the recordings where `scripts/fetch-speech` puts them
//! (`$STT_SPEECH_DIR`, else `$XDG_CACHE_HOME/stt/speech`, else `~/.cache/stt/speech`).

#![allow(clippy::print_stdout, clippy::print_stderr, reason = "a command-line report")]

use std::collections::{BTreeMap, BTreeSet};
use std::error::Error;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use stt_speaker::embed::{self, Embedder, cosine};
use stt_speaker::fbank::SAMPLE_RATE;
use stt_speaker::roster::{Roster, Rules, Status};
use stt_testkit::speech::{Line, Part, Speech};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const START: &str = "<!-- bench-speakers:start -->";
const END: &str = "<!-- bench-speakers:end -->";

/// Eight voices the model tells apart.
const VOICES: [&str; 8] = stt_testkit::speech::SPEAKER_VOICES;

/// Words a minute: each voice at both is one speaker.
const RATES: [u32; 2] = [140, 175];

/// Spoken commands of 1.5 to 3.5 s.
const SENTENCES: [&str; 8] = [
    "Open the calendar for tomorrow.",
    "What is the weather like today?",
    "Set a timer for ten minutes.",
    "Remind me to call my sister tonight.",
    "Turn off the lights in the kitchen.",
    "Play some quiet music while I read.",
    "How long does it take to get to the station?",
    "Add milk and bread to the shopping list.",
];

/// Silence before and after each espeak-ng sentence, in seconds.
const AROUND_S: f64 = 0.3;

/// The daemon's default `[speakers].min_segment_s`.
const MIN_SEGMENT_S: f64 = 1.0;

/// Thresholds at which false accepts and rejects are counted.
const THRESHOLDS: [f32; 7] = [0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75];

/// The daemon's default (match, uncertain) thresholds (`[speakers]`), chosen from this
/// benchmark; the first candidate is the one they replaced.
const DEFAULT: (f32, f32) = (0.65, 0.45);

/// Candidate (match, uncertain) thresholds run through the roster.
const CANDIDATES: [(f32, f32); 9] = [
    (0.7, 0.55),
    (0.5, 0.4),
    (0.55, 0.45),
    (0.6, 0.45),
    (0.6, 0.5),
    (0.65, 0.45),
    (0.65, 0.5),
    (0.7, 0.45),
    (0.75, 0.6),
];

const CONFIRM_S: f64 = 10.0;
const MAX_SPEAKERS: usize = 32;

/// Speakers in one session.
const GROUP_SIZES: [usize; 3] = [2, 3, 4];

/// One utterance and its embedding.
struct Utterance {
    speaker: String,
    /// What it is: the clip's id, or the voice, rate and sentence.
    label: String,
    samples: Vec<f32>,
    speech_s: f64,
    embedding: Vec<f32>,
}

/// One kind of material: its utterances of at least [`MIN_SEGMENT_S`], and the others.
struct Material {
    name: &'static str,
    kept: Vec<Utterance>,
    short: Vec<Utterance>,
}

impl Material {
    /// The target speakers (two utterances or more), each with its utterances in the order
    /// made.
    fn targets(&self) -> Vec<(&str, Vec<&Utterance>)> {
        let mut by: BTreeMap<&str, Vec<&Utterance>> = BTreeMap::new();
        for u in &self.kept {
            by.entry(u.speaker.as_str()).or_default().push(u);
        }
        by.into_iter().filter(|(_, us)| us.len() >= 2).collect()
    }
}

/// The time embeddings took, per second of audio, summed over utterances.
#[derive(Default)]
struct Timing {
    utterances: usize,
    wall_ms_per_s: f64,
    cpu_ms_per_s: f64,
    audio_s: f64,
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let write = match args.as_slice() {
        [] => None,
        [flag, path] if flag == "--write" => Some(PathBuf::from(path)),
        _ => return Err("usage: speaker_accuracy [--write docs/PERFORMANCE.md]".into()),
    };
    let started = Instant::now();
    let models = stt_testkit::models_dir();
    let mut embedder =
        Embedder::load(&embed::default_path(&models), &stt_embed::runtime_library(&models))?;
    let mut timing = Timing::default();

    eprintln!("speaker_accuracy: making and embedding the espeak-ng speech");
    let espeak = espeak_material(&mut embedder, &mut timing)?;
    eprintln!("speaker_accuracy: embedding the real recordings");
    let real = real_material(&mut embedder, &mut timing)?;
    eprintln!("speaker_accuracy: running the roster sessions");
    let scratch = scratch_dir();
    let mut sessions = Vec::new();
    for material in [&espeak, &real] {
        sessions.push(run_sessions(material, &scratch)?);
    }
    let report = report(&espeak, &real, &sessions, &timing, started.elapsed().as_secs_f64());
    println!("{report}");
    if let Some(path) = write {
        stt_testkit::perf::write_section(&path, START, END, &report)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        eprintln!("speaker_accuracy: wrote its section of {}", path.display());
    }
    Ok(())
}

/// Embeds `samples`, timing it; `None` when too short to embed.
fn embed_timed(
    embedder: &mut Embedder,
    samples: &[f32],
    timing: &mut Timing,
) -> Result<Option<Vec<f32>>> {
    let seconds = samples.len() as f64 / f64::from(SAMPLE_RATE);
    let (cpu, wall) = (thread_cpu(), Instant::now());
    let embedding = embedder.embed(samples)?;
    let (wall, cpu) = (wall.elapsed().as_secs_f64(), thread_cpu() - cpu);
    if embedding.is_some() {
        timing.utterances += 1;
        timing.wall_ms_per_s += wall * 1000.0 / seconds;
        timing.cpu_ms_per_s += cpu * 1000.0 / seconds;
        timing.audio_s += seconds;
    }
    Ok(embedding)
}

fn espeak_material(embedder: &mut Embedder, timing: &mut Timing) -> Result<Material> {
    let speech = Speech::new(std::env::temp_dir().join("stt-speaker-speech"));
    let mut kept = Vec::new();
    let mut short = Vec::new();
    for voice in VOICES {
        // Sentence i at one speed, then again at the other: the same sentence never twice
        // in a row, and both speeds all through a session.
        for pass in 0..RATES.len() {
            for (i, &text) in SENTENCES.iter().enumerate() {
                let wpm = RATES[(i + pass) % RATES.len()];
                let line = Line { text, voice };
                let parts =
                    [Part::Silence(AROUND_S), Part::SayAt { line, wpm }, Part::Silence(AROUND_S)];
                let samples = speech.samples(&parts);
                let speech_s = voiced_s(&samples);
                let Some(embedding) = embed_timed(embedder, &samples, timing)? else {
                    return Err(format!("{voice} at {wpm}: \"{text}\" is too short").into());
                };
                let u = Utterance {
                    speaker: voice.to_owned(),
                    label: format!("{voice} {wpm} wpm \"{text}\""),
                    samples,
                    speech_s,
                    embedding,
                };
                if speech_s >= MIN_SEGMENT_S { kept.push(u) } else { short.push(u) }
            }
        }
    }
    Ok(Material { name: "espeak-ng", kept, short })
}

/// Seconds from the first to the last sample that is not silence (|x| ≥ 0.001).
fn voiced_s(samples: &[f32]) -> f64 {
    let loud = |x: &&f32| x.abs() >= 0.001;
    let first = samples.iter().position(|x| loud(&x)).unwrap_or(0);
    let last = samples.iter().rposition(|x| loud(&x)).unwrap_or(0);
    last.saturating_sub(first) as f64 / f64::from(SAMPLE_RATE)
}

fn speech_dir() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("STT_SPEECH_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("stt/speech")))
        .or_else(|| var("HOME").map(|h| h.join(".cache/stt/speech")))
        .unwrap_or_default()
        .join("real")
}

fn real_material(embedder: &mut Embedder, timing: &mut Timing) -> Result<Material> {
    let dir = speech_dir();
    let manifest = dir.join("manifest.json");
    let text = std::fs::read_to_string(&manifest).map_err(|e| {
        format!("no real speech at {}: {e}; run scripts/fetch-speech", manifest.display())
    })?;
    let entries: Vec<serde_json::Value> = serde_json::from_str(&text)
        .map_err(|e| format!("{}: {e}: rerun scripts/fetch-speech --force", manifest.display()))?;
    let mut clips = Vec::new();
    for e in &entries {
        let field = |key: &str| {
            e[key].as_str().map(str::to_owned).ok_or_else(|| {
                format!(
                    "{}: an entry without {key}: rerun scripts/fetch-speech",
                    manifest.display()
                )
            })
        };
        let speech_s = e["speech_s"].as_f64().ok_or("an entry without speech_s")?;
        clips.push((field("speaker")?, field("id")?, dir.join(field("file")?), speech_s));
    }
    clips.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let mut kept = Vec::new();
    let mut short = Vec::new();
    for (speaker, id, file, speech_s) in clips {
        let samples = read_wav(&file)?;
        // Too short to embed at all (under 0.5 s): not even in the "with short" row.
        let Some(embedding) = embed_timed(embedder, &samples, timing)? else { continue };
        let u = Utterance { speaker, label: id, samples, speech_s, embedding };
        if speech_s >= MIN_SEGMENT_S { kept.push(u) } else { short.push(u) }
    }
    Ok(Material { name: "real", kept, short })
}

/// The samples of a 16 kHz mono 16-bit WAV file.
fn read_wav(path: &Path) -> Result<Vec<f32>> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let bad = |why: &str| format!("{}: {why}: rerun scripts/fetch-speech --force", path.display());
    if bytes.len() < 12 || &bytes[..4] != b"RIFF" || &bytes[8..12] != b"WAVE" {
        return Err(bad("not a WAV file").into());
    }
    let u16_at = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]);
    let u32_at =
        |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let mut at = 12;
    let mut format = None;
    while at + 8 <= bytes.len() {
        let len = u32_at(at + 4) as usize;
        let body = at + 8;
        match &bytes[at..at + 4] {
            b"fmt " if len >= 16 && body + 16 <= bytes.len() => {
                format = Some((u16_at(body + 2), u32_at(body + 4), u16_at(body + 14)));
            }
            b"data" => {
                if format != Some((1, SAMPLE_RATE, 16)) {
                    return Err(bad(&format!(
                        "(channels, rate, bits) {format:?}, not 16 kHz mono 16-bit"
                    ))
                    .into());
                }
                let end = bytes.len().min(body + len);
                return Ok(bytes[body..end]
                    .chunks_exact(2)
                    .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0)
                    .collect());
            }
            _ => {}
        }
        at = body + len + (len & 1);
    }
    Err(bad("no data chunk").into())
}

/// CPU time of the calling thread, in seconds (ONNX Runtime runs on it with one thread).
fn thread_cpu() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|ns| ns.parse::<f64>().ok()))
        .map_or(f64::NAN, |ns| ns / 1e9)
}

// --- pairs ----------------------------------------------------------------------------------

/// Scores of every pair of `utterances`: same speaker, other speaker.
struct Scores {
    same: Vec<f32>,
    other: Vec<f32>,
}

/// A pair of utterances and its score.
struct Pair<'a> {
    score: f32,
    a: &'a Utterance,
    b: &'a Utterance,
}

fn pairs<'a>(utterances: &[&'a Utterance]) -> Vec<Pair<'a>> {
    let mut out = Vec::new();
    for (i, a) in utterances.iter().enumerate() {
        for b in &utterances[i + 1..] {
            out.push(Pair { score: cosine(&a.embedding, &b.embedding), a, b });
        }
    }
    out
}

fn scores(pairs: &[Pair<'_>]) -> Scores {
    let mut s = Scores { same: Vec::new(), other: Vec::new() };
    for p in pairs {
        if p.a.speaker == p.b.speaker { s.same.push(p.score) } else { s.other.push(p.score) }
    }
    s.same.sort_by(f32::total_cmp);
    s.other.sort_by(f32::total_cmp);
    s
}

/// The `q` quantile of sorted `v`, interpolated linearly.
fn quantile(v: &[f32], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let at = q * (v.len() - 1) as f64;
    let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
    let frac = at - lo as f64;
    f64::from(v[lo]) * (1.0 - frac) + f64::from(v[hi]) * frac
}

/// False-accept rate (other-speaker pairs at or above `t`) and false-reject rate
/// (same-speaker pairs below it): the roster matches at `score >= threshold`.
fn rates(s: &Scores, t: f32) -> (usize, usize) {
    let fa = s.other.len() - s.other.partition_point(|&x| x < t);
    let fr = s.same.partition_point(|&x| x < t);
    (fa, fr)
}

/// The equal error rate and the threshold it falls at: over every score as a threshold, the
/// one where the false-accept and false-reject rates are nearest, and their mean there.
fn eer(s: &Scores) -> (f64, f32) {
    let mut best = (f64::MAX, f64::NAN, f32::NAN);
    for &t in s.same.iter().chain(&s.other) {
        let (fa, fr) = rates(s, t);
        let far = fa as f64 / s.other.len().max(1) as f64;
        let frr = fr as f64 / s.same.len().max(1) as f64;
        let gap = (far - frr).abs();
        if gap < best.0 || (gap == best.0 && t < best.2) {
            best = (gap, (far + frr) / 2.0, t);
        }
    }
    (best.1, best.2)
}

// --- sessions -------------------------------------------------------------------------------

/// What the roster did over sessions of one size under one candidate pair.
#[derive(Default, Clone)]
struct Tally {
    sessions: usize,
    /// Sessions in which some id was given to two speakers.
    merged: usize,
    utterances: usize,
    /// Utterances matched or minted under their speaker's majority id.
    own: usize,
    uncertain: usize,
    /// Utterances matched to an id minted for another speaker.
    wrong: usize,
    /// (session, speaker) pairs.
    speakers: usize,
    /// Speakers whose matched and minted utterances all had one id, theirs alone.
    one_id: usize,
    /// Ids minted on the speakers' utterances.
    minted: usize,
    most_minted: usize,
}

/// Per candidate pair and group size.
type SessionTable = Vec<((f32, f32), usize, Tally)>;

fn scratch_dir() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() { shm.to_owned() } else { std::env::temp_dir() }
}

fn run_sessions(material: &Material, scratch: &Path) -> Result<SessionTable> {
    let targets = material.targets();
    let mut table = Vec::new();
    for &(match_threshold, uncertain_threshold) in &CANDIDATES {
        let rules = Rules {
            match_threshold,
            uncertain_threshold,
            confirm_s: CONFIRM_S,
            max_speakers: MAX_SPEAKERS,
        };
        for size in GROUP_SIZES {
            let mut tally = Tally::default();
            for group in combinations(targets.len(), size) {
                for first in 0..size {
                    let members: Vec<&[&Utterance]> = (0..size)
                        .map(|k| targets[group[(first + k) % size]].1.as_slice())
                        .collect();
                    session(&members, &rules, scratch, &mut tally)?;
                }
            }
            table.push(((match_threshold, uncertain_threshold), size, tally));
        }
    }
    Ok(table)
}

/// Every `k`-subset of `0..n`, in lexicographic order.
fn combinations(n: usize, k: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut pick: Vec<usize> = (0..k).collect();
    if k > n {
        return out;
    }
    loop {
        out.push(pick.clone());
        let Some(i) = (0..k).rev().find(|&i| pick[i] < n - k + i) else { return out };
        pick[i] += 1;
        for j in i + 1..k {
            pick[j] = pick[j - 1] + 1;
        }
    }
}

/// One session: `members`' utterances in turn, into a fresh roster.
fn session(
    members: &[&[&Utterance]],
    rules: &Rules,
    scratch: &Path,
    tally: &mut Tally,
) -> Result<()> {
    let dir = tempfile::Builder::new().prefix("stt-speaker-accuracy.").tempdir_in(scratch)?;
    let mut roster = Roster::open(&dir.path().join("speakers"), rules.clone())?;
    // Per member: (status, id) of each utterance.
    let mut heard: Vec<Vec<(Status, String)>> = vec![Vec::new(); members.len()];
    // Who each id was minted for.
    let mut owner: BTreeMap<String, usize> = BTreeMap::new();
    let rounds = members.iter().map(|m| m.len()).max().unwrap_or(0);
    for round in 0..rounds {
        for (m, utterances) in members.iter().enumerate() {
            let Some(u) = utterances.get(round) else { continue };
            let found = roster.identify(&u.embedding, u.speech_s, "2026-12-03T10:00:00Z");
            roster.persist(&u.samples)?;
            if found.status == Status::Unknown {
                owner.insert(found.id.clone(), m);
            }
            heard[m].push((found.status, found.id));
        }
    }
    tally.sessions += 1;
    let mut ids_of: Vec<BTreeSet<&str>> = vec![BTreeSet::new(); members.len()];
    for (m, results) in heard.iter().enumerate() {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        let mut minted = 0;
        for (status, id) in results {
            tally.utterances += 1;
            match status {
                Status::Uncertain => tally.uncertain += 1,
                Status::Unknown => {
                    minted += 1;
                    *counts.entry(id).or_default() += 1;
                }
                Status::Matched => {
                    *counts.entry(id).or_default() += 1;
                    if owner.get(id) != Some(&m) {
                        tally.wrong += 1;
                    }
                }
            }
        }
        tally.own += counts.values().copied().max().unwrap_or(0);
        tally.minted += minted;
        tally.most_minted = tally.most_minted.max(minted);
        tally.speakers += 1;
        ids_of[m] = counts.keys().copied().collect();
    }
    let shared =
        |m: usize, id: &str| ids_of.iter().enumerate().any(|(o, ids)| o != m && ids.contains(id));
    let mut merged = false;
    for (m, ids) in ids_of.iter().enumerate() {
        let alone = ids.iter().all(|id| !shared(m, id));
        merged |= !alone;
        if ids.len() == 1 && alone {
            tally.one_id += 1;
        }
    }
    tally.merged += usize::from(merged);
    Ok(())
}

// --- the report -----------------------------------------------------------------------------

fn report(
    espeak: &Material,
    real: &Material,
    sessions: &[SessionTable],
    timing: &Timing,
    took_s: f64,
) -> String {
    let mut out = String::new();
    let w = &mut out;
    let e_utts: Vec<&Utterance> = espeak.kept.iter().collect();
    let r_utts: Vec<&Utterance> = real.kept.iter().collect();
    let r_all: Vec<&Utterance> = real.kept.iter().chain(&real.short).collect();
    let both: Vec<&Utterance> = e_utts.iter().chain(&r_utts).copied().collect();
    let (e_pairs, r_pairs, r_all_pairs, both_pairs) =
        (pairs(&e_utts), pairs(&r_utts), pairs(&r_all), pairs(&both));
    let sets = [
        ("espeak-ng", scores(&e_pairs)),
        ("real", scores(&r_pairs)),
        ("combined", scores(&both_pairs)),
    ];
    let r_all_scores = scores(&r_all_pairs);
    let targets_of = |m: &Material| m.targets().len();
    let real_speakers: BTreeSet<&str> = r_utts.iter().map(|u| u.speaker.as_str()).collect();

    let _ = writeln!(w, "{START}");
    let _ = writeln!(w, "## Speaker identification: accuracy (`scripts/bench-speakers`)\n");
    let _ = writeln!(
        w,
        "Measured {} on {}, release build, in {took_s:.0} s. Reproduce with \
         `scripts/bench-speakers` (it runs `cargo run --release -p stt-speaker --example \
         speaker_accuracy`; `--write` rewrites this section); the benchmark is \
         `crates/stt-speaker/examples/speaker_accuracy.rs`. It needs espeak-ng, sox, the model \
         `scripts/fetch-speaker-model` installs and the recordings `scripts/fetch-speech` \
         installs.\n",
        stt_testkit::perf::today(),
        stt_testkit::perf::machine()
    );
    let _ = writeln!(
        w,
        "**Material.** *espeak-ng*: {} voices (those of `tests/embed.rs`), each at {} and {} \
         words a minute (one speaker: the same voice at two speeds), saying {} spoken commands \
         (\"{}\", \"{}\", …), with {AROUND_S} s of silence around each: {} utterances of {:.1} \
         to {:.1} s of speech. *real*: the {} recordings of `scripts/fetch-speech`, {} of them \
         with at least {MIN_SEGMENT_S} s of speech (the daemon's `min_segment_s`; the others \
         are left out but in one row), of {} speaker labels: {} targets (two clips or more, \
         {} clips) and the rest impostors only (one clip each). A label is a source's speaker, \
         not a proven person: two labels may be one voice. *combined* is both sets together, \
         every pair. {} of a voice's {} same-speaker pairs are one sentence at both speeds.\n",
        VOICES.len(),
        RATES[0],
        RATES[1],
        SENTENCES.len(),
        SENTENCES[0].trim_end_matches('.'),
        SENTENCES[1].trim_end_matches('?'),
        espeak.kept.len(),
        min_speech(&e_utts),
        max_speech(&e_utts),
        real.kept.len() + real.short.len(),
        real.kept.len(),
        real_speakers.len(),
        targets_of(real),
        real.targets().iter().map(|(_, us)| us.len()).sum::<usize>(),
        SENTENCES.len(),
        {
            let n = SENTENCES.len() * RATES.len();
            n * (n - 1) / 2
        },
    );

    let _ = writeln!(w, "### Cosine of every pair of utterances\n");
    let _ = writeln!(w, "| set | pairs | count | min | p5 | p25 | p50 | p75 | p95 | max |");
    let _ = writeln!(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (name, s) in &sets {
        for (kind, v) in [("same speaker", &s.same), ("other speaker", &s.other)] {
            let _ = write!(w, "| {name} | {kind} | {} ", v.len());
            for q in [0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0] {
                let _ = write!(w, "| {:.3} ", quantile(v, q));
            }
            let _ = writeln!(w, "|");
        }
    }

    let _ = writeln!(w, "\n### Equal error rate\n");
    let _ = writeln!(w, "| set | EER | at threshold | same / other-speaker pairs |");
    let _ = writeln!(w, "|---|---:|---:|---:|");
    for (name, s) in sets.iter().map(|(n, s)| (n.to_string(), s)).chain([(
        format!("real, with the {} clips under {MIN_SEGMENT_S} s", real.short.len()),
        &r_all_scores,
    )]) {
        let (rate, t) = eer(s);
        // Apart entirely: every threshold between the two sets is an EER of 0.
        let at = match (s.other.last(), s.same.first()) {
            (Some(&hi), Some(&lo)) if hi < lo => format!("above {hi:.3}, up to {lo:.3}"),
            _ => format!("{t:.3}"),
        };
        let _ = writeln!(
            w,
            "| {name} | {:.1}% | {at} | {} / {} |",
            rate * 100.0,
            s.same.len(),
            s.other.len()
        );
    }

    let _ = writeln!(w, "\n### False accepts and false rejects by threshold\n");
    let _ = writeln!(
        w,
        "A false accept is an other-speaker pair scoring at or above the threshold (two people \
         taken for one), a false reject a same-speaker pair below it.\n"
    );
    let _ = write!(w, "| threshold ");
    for (name, _) in &sets {
        let _ = write!(w, "| {name} false accepts | {name} false rejects ");
    }
    let _ = writeln!(w, "|\n|---:{}|", "|---:|---:".repeat(sets.len()));
    for t in THRESHOLDS {
        let _ = write!(w, "| {t:.2} ");
        for (_, s) in &sets {
            let (fa, fr) = rates(s, t);
            let _ = write!(w, "| {} | {} ", percent(fa, s.other.len()), percent(fr, s.same.len()));
        }
        let _ = writeln!(w, "|");
    }

    let _ = writeln!(w, "\n### The hardest pairs of real speech\n");
    let _ = writeln!(w, "| kind | score | utterance | utterance |");
    let _ = writeln!(w, "|---|---:|---|---|");
    let mut hard: Vec<&Pair<'_>> = r_pairs.iter().filter(|p| p.a.speaker != p.b.speaker).collect();
    hard.sort_by(|a, b| b.score.total_cmp(&a.score));
    for p in hard.iter().take(5) {
        let _ = writeln!(
            w,
            "| other speaker, highest | {:.3} | {} | {} |",
            p.score,
            who(p.a),
            who(p.b)
        );
    }
    let mut hard: Vec<&Pair<'_>> = r_pairs.iter().filter(|p| p.a.speaker == p.b.speaker).collect();
    hard.sort_by(|a, b| a.score.total_cmp(&b.score));
    for p in hard.iter().take(5) {
        let _ =
            writeln!(w, "| same speaker, lowest | {:.3} | {} | {} |", p.score, who(p.a), who(p.b));
    }

    let most_alike = |pairs: &[Pair<'_>]| -> String {
        let alike = alike(pairs);
        let top: Vec<String> =
            alike.iter().take(3).map(|(a, b, mean)| format!("{a} and {b} {mean:.3}")).collect();
        top.join(", ")
    };
    let _ = writeln!(
        w,
        "\nThe speakers most alike, by the mean cosine of their pairs of utterances: espeak-ng {}; \
         real {}.",
        most_alike(&e_pairs),
        most_alike(&r_pairs)
    );
    let _ = writeln!(w, "\n### Sessions through the roster\n");
    let _ = writeln!(
        w,
        "Each group of 2, 3 and 4 target speakers of one set ({} espeak-ng voices, {} real \
         speakers), their utterances in turn (A B A B …; a speaker whose \
         utterances ran out drops out), into a fresh `Roster` (confirm_s {CONFIRM_S}, \
         max_speakers {MAX_SPEAKERS}), once starting with each member. *own id*: utterances \
         matched or minted under their speaker's most frequent id; *one id*: speakers whose \
         utterances all got one id, given to nobody else; *ids minted*: new ids per speaker, \
         mean and most over all sessions (1 is right); *wrong id*: utterances matched to an id minted for another \
         speaker (the error that puts a name and memories on the wrong person); *merged*: \
         sessions where two speakers shared an id; *uncertain*: utterances between the two \
         thresholds, shown as unknown. Each cell gives the figure for 2 / 3 / 4 speakers.\n",
        targets_of(espeak),
        targets_of(real),
    );
    for (material, table) in [espeak, real].iter().zip(sessions) {
        let sizes = |f: &dyn Fn(&Tally) -> String| -> String {
            let cells: Vec<String> =
                table.iter().take(GROUP_SIZES.len()).map(|(_, _, t)| f(t)).collect();
            cells.join(", ")
        };
        let _ = writeln!(
            w,
            "**{}** ({} sessions; {} utterances)\n",
            material.name,
            sizes(&|t| t.sessions.to_string()),
            sizes(&|t| t.utterances.to_string()),
        );
        let _ = writeln!(
            w,
            "| match / uncertain | own id | one id | ids minted per speaker | wrong id | merged \
             | uncertain |"
        );
        let _ = writeln!(w, "|---|---:|---:|---:|---:|---:|---:|");
        for row in table.chunks(GROUP_SIZES.len()) {
            let ((m, u), _, _) = row[0];
            let default = if (m, u) == DEFAULT { " (default)" } else { "" };
            let cells = |f: &dyn Fn(&Tally) -> String| -> String {
                row.iter().map(|(_, _, t)| f(t)).collect::<Vec<_>>().join(" / ")
            };
            let most = row.iter().map(|(_, _, t)| t.most_minted).max().unwrap_or(0);
            let _ = writeln!(
                w,
                "| {m:.2} / {u:.2}{default} | {} | {} | {} (most {most}) | {} | {} | {} |",
                cells(&|t| share(t.own, t.utterances)),
                cells(&|t| share(t.one_id, t.speakers)),
                cells(&|t| format!("{:.2}", t.minted as f64 / t.speakers.max(1) as f64)),
                cells(&|t| share(t.wrong, t.utterances)),
                cells(&|t| share(t.merged, t.sessions)),
                cells(&|t| share(t.uncertain, t.utterances)),
            );
        }
        let _ = writeln!(w);
    }

    let _ = writeln!(w, "### Embedding time\n");
    let n = timing.utterances.max(1) as f64;
    let _ = writeln!(
        w,
        "One thread: {:.1} ms per second of speech (the mean over {} utterances, {:.0} s in all, \
         of each one's time over its length, the silence around the espeak-ng sentences \
         included; {:.1} ms of the thread's CPU time).\n",
        timing.wall_ms_per_s / n,
        timing.utterances,
        timing.audio_s,
        timing.cpu_ms_per_s / n,
    );
    let _ = writeln!(w, "{END}");
    out
}

/// Pairs of speakers by the mean score of their other-speaker pairs, highest first.
fn alike(pairs: &[Pair<'_>]) -> Vec<(String, String, f64)> {
    let mut sums: BTreeMap<(&str, &str), (f64, usize)> = BTreeMap::new();
    for p in pairs.iter().filter(|p| p.a.speaker != p.b.speaker) {
        let (a, b) = (p.a.speaker.as_str(), p.b.speaker.as_str());
        let key = if a < b { (a, b) } else { (b, a) };
        let sum = sums.entry(key).or_default();
        *sum = (sum.0 + f64::from(p.score), sum.1 + 1);
    }
    let mut out: Vec<(String, String, f64)> = sums
        .into_iter()
        .map(|((a, b), (sum, n))| (a.to_owned(), b.to_owned(), sum / n as f64))
        .collect();
    out.sort_by(|x, y| y.2.total_cmp(&x.2));
    out
}

fn who(u: &Utterance) -> String {
    format!("{} ({}, {:.1} s)", u.speaker, u.label, u.speech_s)
}

/// `n` of `of` as a percentage, without the count.
fn share(n: usize, of: usize) -> String {
    if of == 0 {
        return "–".to_owned();
    }
    format!("{:.1}%", n as f64 * 100.0 / of as f64)
}

fn percent(n: usize, of: usize) -> String {
    if of == 0 {
        return "–".to_owned();
    }
    let p = n as f64 * 100.0 / of as f64;
    if n == 0 { "0".to_owned() } else { format!("{p:.1}% ({n})") }
}

fn min_speech(utts: &[&Utterance]) -> f64 {
    utts.iter().map(|u| u.speech_s).fold(f64::MAX, f64::min)
}

fn max_speech(utts: &[&Utterance]) -> f64 {
    utts.iter().map(|u| u.speech_s).fold(f64::MIN, f64::max)
}
