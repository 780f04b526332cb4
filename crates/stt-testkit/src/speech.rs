//! Test speech, made at test time and never committed: sentences spoken by espeak-ng in
//! several voices, joined with silence (or noise) by sox into a WAV file or raw PCM at any
//! rate and channel count; and the word error rate of a transcript against what was said.
//!
//! Every part and every clip is cached in a directory by a key made of everything that goes
//! into it (text, voice, lengths, format, the espeak-ng version), so tests running in parallel
//! share the files and a clip is made once per build directory.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// One sentence and the espeak-ng voice that says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Line {
    pub text: &'static str,
    pub voice: &'static str,
}

/// A piece of a clip.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Part {
    /// A sentence, as espeak-ng says it.
    Say(Line),
    /// A sentence at `wpm` words a minute (espeak-ng's `-s`; it speaks 175 by default).
    SayAt { line: Line, wpm: u32 },
    /// Digital silence, in seconds.
    Silence(f64),
    /// Noise from sox `synth` (`pinknoise`, `whitenoise`, `brownnoise`), in seconds, scaled
    /// by `amplitude` (sox `vol`, 0 to 1).
    Noise { kind: &'static str, seconds: f64, amplitude: f64 },
    /// A held chord of sine tones at `hz` with a 5 Hz tremolo, like an organ, in seconds,
    /// scaled by `amplitude`: music the voice detector takes for speech, and whisper for
    /// "You".
    Chord { hz: [u32; 3], seconds: f64, amplitude: f64 },
}

impl Hash for Part {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match *self {
            Self::Say(line) => ("say", line).hash(state),
            Self::SayAt { line, wpm } => ("say_at", line, wpm).hash(state),
            Self::Silence(s) => ("silence", s.to_bits()).hash(state),
            Self::Noise { kind, seconds, amplitude } => {
                ("noise", kind, seconds.to_bits(), amplitude.to_bits()).hash(state);
            }
            Self::Chord { hz, seconds, amplitude } => {
                ("chord", hz, seconds.to_bits(), amplitude.to_bits()).hash(state);
            }
        }
    }
}

/// How a clip is written: 16-bit signed PCM at `rate` Hz with `channels` channels, as a WAV
/// file or as raw little-endian samples (what `stt-daemon --input - --format s16le` reads).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Format {
    pub rate: u32,
    pub channels: u16,
    pub raw: bool,
}

impl Format {
    pub const fn wav(rate: u32, channels: u16) -> Self {
        Self { rate, channels, raw: false }
    }

    pub const fn raw(rate: u32, channels: u16) -> Self {
        Self { rate, channels, raw: true }
    }
}

/// The rate every part is rendered at before a clip is joined: espeak-ng's own.
const PART_RATE: u32 = 22_050;

/// Silence before the first sentence, between sentences and after the last, in seconds:
/// well over the VAD's hangover, so each sentence is a segment of its own.
/// Eight espeak-ng voices the speaker model tells apart (scripts/check-campplus.py's): the
/// speaker-embedding tests and the accuracy benchmark (stt-speaker) speak with them. An
/// accent alone is one voice to the model, so each has a variant too; espeak-ng 1.51 ignores
/// a variant on "en-gb" (`en-gb+f2` is `en-gb`), so the variants go on other accents.
pub const SPEAKER_VOICES: [&str; 8] = [
    "en-us+m3",
    "en+f3",
    "en-gb-scotland+m7",
    "en-029+f2",
    "en-gb-x-rp+klatt",
    "en-us-nyc+whisper",
    "en-gb-x-gbclan+grandma",
    "en-gb-x-gbcwmd+m1",
];

/// One sentence for each triage category, as the triage tests speak them: the classifier's
/// test and the cross-process one (`tests/it/triage.rs`). Ordered from the one the classifier
/// is least sure of to the surest, so that spoken in this order each leads its window (a
/// window's older utterances fade, `DECAY` in the assistant's `triage::window`).
pub const TRIAGE_LINES: [(&str, &str); 6] = [
    ("request", "Please send the quarterly report to Maria."),
    ("question", "What time does the library open tomorrow?"),
    ("problem", "My laptop keeps crashing whenever I open the browser."),
    ("decision", "We decided to hold the team dinner at the Italian place."),
    ("task", "I need to renew my car insurance before the end of the month."),
    ("urgency", "Hurry, the kitchen is on fire!"),
];

pub const LEAD_S: f64 = 0.6;
pub const GAP_S: f64 = 1.2;
pub const TAIL_S: f64 = 1.0;

/// The parts of a clip that says `lines`, one after another, with silence around each.
pub fn spoken(lines: &[Line]) -> Vec<Part> {
    let mut parts = vec![Part::Silence(LEAD_S)];
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            parts.push(Part::Silence(GAP_S));
        }
        parts.push(Part::Say(*line));
    }
    parts.push(Part::Silence(TAIL_S));
    parts
}

/// Makes and caches clips in one directory.
#[derive(Debug, Clone)]
pub struct Speech {
    dir: PathBuf,
}

impl Speech {
    /// Clips cached in `dir` (created if missing).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        Self { dir }
    }

    /// A clip of `parts` in `format`. Raw PCM is the WAV clip of the same rate and channels
    /// without its header, so the two hold the same samples (a test compares their transcripts).
    pub fn clip(&self, parts: &[Part], format: Format) -> PathBuf {
        let ext = if format.raw { "raw" } else { "wav" };
        let path = self.dir.join(format!("clip-{:016x}.{ext}", key(&(parts, format))));
        if path.is_file() {
            return path;
        }
        let tmp = temporary(&path);
        let mut sox = sox();
        if format.raw {
            let wav = self.clip(parts, Format { raw: false, ..format });
            sox.arg(wav).args(["-t", "raw", "-L", "-e", "signed-integer", "-b", "16"]);
        } else {
            let inputs: Vec<PathBuf> = parts.iter().map(|part| self.part(part)).collect();
            sox.args(&inputs).args(["-b", "16", "-e", "signed-integer"]);
            sox.arg("-r").arg(format.rate.to_string()).arg("-c").arg(format.channels.to_string());
        }
        sox.arg(&tmp);
        run(&mut sox);
        publish(&tmp, &path);
        path
    }

    /// The samples of a clip of `parts` at 16 kHz mono, in [-1, 1).
    pub fn samples(&self, parts: &[Part]) -> Vec<f32> {
        let path = self.clip(parts, Format::raw(16_000, 1));
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        bytes
            .chunks_exact(2)
            .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0)
            .collect()
    }

    /// A WAV file of one part at espeak-ng's rate, mono.
    fn part(&self, part: &Part) -> PathBuf {
        let path = self.dir.join(format!("part-{:016x}.wav", key(part)));
        if path.is_file() {
            return path;
        }
        let tmp = temporary(&path);
        let rate = PART_RATE.to_string();
        match *part {
            Part::Say(line) | Part::SayAt { line, .. } => {
                let spoken = temporary(&path.with_extension("espeak.wav"));
                let mut espeak = Command::new("espeak-ng");
                if let Part::SayAt { wpm, .. } = *part {
                    espeak.arg("-s").arg(wpm.to_string());
                }
                run(espeak.arg("-v").arg(line.voice).arg("-w").arg(&spoken).arg(line.text));
                // espeak-ng writes 22.05 kHz for its own voices; make sure, so parts join.
                run(sox().arg(&spoken).args(["-b", "16", "-c", "1", "-r", &rate]).arg(&tmp));
                let _ = std::fs::remove_file(&spoken);
            }
            Part::Silence(seconds) => {
                run(sox().args(["-n", "-b", "16", "-c", "1", "-r", &rate]).arg(&tmp).args([
                    "trim",
                    "0",
                    &seconds.to_string(),
                ]));
            }
            Part::Noise { kind, seconds, amplitude } => {
                run(sox().args(["-n", "-b", "16", "-c", "1", "-r", &rate]).arg(&tmp).args([
                    "synth",
                    &seconds.to_string(),
                    kind,
                    "vol",
                    &amplitude.to_string(),
                ]));
            }
            Part::Chord { hz: [a, b, c], seconds, amplitude } => {
                let (a, b, c) = (a.to_string(), b.to_string(), c.to_string());
                run(sox().args(["-n", "-b", "16", "-c", "1", "-r", &rate]).arg(&tmp).args([
                    "synth",
                    &seconds.to_string(),
                    "sine",
                    &a,
                    "sine",
                    &b,
                    "sine",
                    &c,
                    "tremolo",
                    "5",
                    "40",
                    "vol",
                    &amplitude.to_string(),
                ]));
            }
        }
        publish(&tmp, &path);
        path
    }
}

/// sox in repeatable mode: its dither and noise come from a fixed seed, so a clip holds the
/// same samples on every machine and in every run (by default sox seeds them from the clock,
/// and two clips of the same speech differed by their dither).
fn sox() -> Command {
    let mut sox = Command::new("sox");
    sox.arg("-R");
    sox
}

/// How clips are made; a change to it must change every cache key.
const RECIPE: u32 = 2;

/// A cache key for `value`, including the espeak-ng version (a new one speaks differently).
fn key(value: &impl Hash) -> u64 {
    let mut hasher = DefaultHasher::new();
    RECIPE.hash(&mut hasher);
    espeak_version().hash(&mut hasher);
    value.hash(&mut hasher);
    hasher.finish()
}

fn espeak_version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| {
        let out = Command::new("espeak-ng").arg("--version").output().unwrap_or_else(|e| {
            panic!(
                "cannot run espeak-ng ({e}): the tests make their speech with it; run scripts/setup"
            )
        });
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    })
}

/// A name beside `path` that no other thread or process uses, to write to and then rename.
/// It keeps the extension, which tells sox the file type.
fn temporary(path: &Path) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let part = |p: Option<&std::ffi::OsStr>| p.map(|s| s.to_string_lossy().into_owned());
    let (stem, ext) = (part(path.file_stem()).unwrap_or_default(), part(path.extension()));
    let ext = ext.unwrap_or_default();
    path.with_file_name(format!(".{stem}.{}.{n}.tmp.{ext}", std::process::id()))
}

/// Moves a finished file into place in one step, so a reader never sees half of it.
fn publish(tmp: &Path, path: &Path) {
    std::fs::rename(tmp, path)
        .unwrap_or_else(|e| panic!("cannot move {} to {}: {e}", tmp.display(), path.display()));
}

fn run(cmd: &mut Command) {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let out = cmd.output().unwrap_or_else(|e| {
        panic!("cannot run {program} ({e}): the tests make their speech with espeak-ng and sox; run scripts/setup")
    });
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The words of `text` as WER counts them: lowercase, hyphens as spaces, punctuation gone.
pub fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .replace('-', " ")
        .split_whitespace()
        .map(|w| w.chars().filter(|c| c.is_alphanumeric()).collect::<String>())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Word-level edit distance: substitutions, deletions and insertions that turn `reference`
/// into `hypothesis`.
pub fn word_errors(reference: &[String], hypothesis: &[String]) -> usize {
    let mut row: Vec<usize> = (0..=hypothesis.len()).collect();
    for (i, r) in reference.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, h) in hypothesis.iter().enumerate() {
            let substitute = diagonal + usize::from(r != h);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[hypothesis.len()]
}

/// Word error rate of `hypothesis` against `reference`: word errors over reference words.
pub fn wer(reference: &str, hypothesis: &str) -> f64 {
    error_rate(&words(reference), &words(hypothesis))
}

/// Word errors over reference words.
pub fn error_rate(reference: &[String], hypothesis: &[String]) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let rate = word_errors(reference, hypothesis) as f64 / reference.len().max(1) as f64;
    rate
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_words(text: &str, expected: &[&str]) {
        assert_eq!(words(text), expected, "words of {text:?}");
    }

    #[test]
    fn words_are_lowercase_without_punctuation_and_split_at_hyphens() {
        check_words("Turn on the kitchen lights.", &["turn", "on", "the", "kitchen", "lights"]);
        check_words(
            "What's the weather like today?",
            &["whats", "the", "weather", "like", "today"],
        );
        check_words("a well-known  co-op, ok!", &["a", "well", "known", "co", "op", "ok"]);
        check_words(" ... - ", &[]);
    }

    fn check_wer(reference: &str, hypothesis: &str, expected: f64) {
        let got = wer(reference, hypothesis);
        assert!((got - expected).abs() < 1e-9, "wer({reference:?}, {hypothesis:?}) = {got}");
    }

    #[test]
    fn wer_counts_substitutions_deletions_and_insertions() {
        check_wer("turn on the lights", "Turn on the lights.", 0.0);
        check_wer("turn on the lights", "turn off the lights", 0.25);
        check_wer("turn on the lights", "turn the lights", 0.25);
        check_wer("turn on the lights", "turn on all the lights now", 0.5);
        check_wer("turn on the lights", "", 1.0);
        check_wer("a b", "c d e f", 2.0);
        check_wer("", "", 0.0);
    }

    #[test]
    fn the_parts_of_spoken_lines_have_silence_around_each() {
        let a = Line { text: "a", voice: "en-us" };
        let b = Line { text: "b", voice: "en-gb" };
        assert_eq!(
            spoken(&[a, b]),
            [
                Part::Silence(LEAD_S),
                Part::Say(a),
                Part::Silence(GAP_S),
                Part::Say(b),
                Part::Silence(TAIL_S)
            ]
        );
    }
}
