//! Recordings of real people with their reference transcripts, installed by
//! `scripts/fetch-speech --subset test` (never committed): the short commands that made
//! whisper loop where espeak-ng's voices never did.

use std::path::{Path, PathBuf};
use std::process::Command;

/// One recording and what was said in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Clip {
    pub id: String,
    pub speaker: String,
    /// The reference transcript, as its source gives it.
    pub text: String,
    /// 16 kHz mono 16-bit WAV.
    pub file: PathBuf,
    /// Seconds of speech in it.
    pub speech_s: f64,
}

/// The test subset, read from its manifest; a missing one names the script that installs it.
pub fn test_set() -> Vec<Clip> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let dir = var("STT_SPEECH_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("stt/speech")))
        .or_else(|| var("HOME").map(|h| h.join(".cache/stt/speech")))
        .unwrap_or_default()
        .join("test");
    let manifest = dir.join("manifest.json");
    let text = std::fs::read_to_string(&manifest).unwrap_or_else(|e| {
        panic!(
            "no real-speech test set at {}: {e}; run scripts/fetch-speech --subset test",
            manifest.display()
        )
    });
    let entries: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "{} is not a manifest ({e}): rerun scripts/fetch-speech --subset test --force",
            manifest.display()
        )
    });
    let field = |e: &serde_json::Value, key: &str| -> String {
        e[key]
            .as_str()
            .unwrap_or_else(|| panic!("{}: an entry without {key}", manifest.display()))
            .to_owned()
    };
    entries
        .iter()
        .map(|e| Clip {
            id: field(e, "id"),
            speaker: field(e, "speaker"),
            text: field(e, "text"),
            file: dir.join(field(e, "file")),
            speech_s: e["speech_s"].as_f64().unwrap_or(0.0),
        })
        .collect()
}

/// Writes `clips` one after another into one 16 kHz mono WAV at `out`, each with `around_s`
/// seconds of digital silence before and after it (what a live daemon hears around a command),
/// and returns where each clip starts and ends in it, in seconds.
pub fn session(clips: &[Clip], around_s: f64, out: &Path) -> Vec<(f64, f64)> {
    let silence = out.with_extension("silence.wav");
    sox(Command::new("sox")
        .args(["-n", "-r", "16000", "-c", "1", "-b", "16"])
        .arg(&silence)
        .args(["trim", "0", &around_s.to_string()]));
    let mut cmd = Command::new("sox");
    let mut spans = Vec::with_capacity(clips.len());
    let mut at = 0.0;
    for clip in clips {
        let len = seconds_of(&clip.file);
        spans.push((at, at + 2.0 * around_s + len));
        at += 2.0 * around_s + len;
        cmd.arg(&silence).arg(&clip.file).arg(&silence);
    }
    sox(cmd.arg(out));
    spans
}

/// The length of a WAV file in seconds, from its header (16-bit mono PCM).
fn seconds_of(path: &Path) -> f64 {
    let bytes =
        std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut at = 12;
    while at + 8 <= bytes.len() {
        let len = u32::from_le_bytes([bytes[at + 4], bytes[at + 5], bytes[at + 6], bytes[at + 7]]);
        if &bytes[at..at + 4] == b"data" {
            return f64::from(len) / 2.0 / 16_000.0;
        }
        at += 8 + len as usize + (len as usize & 1);
    }
    panic!("{} has no data chunk", path.display())
}

fn sox(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run sox ({e}): apt-get install sox"));
    assert!(out.status.success(), "sox failed: {}", String::from_utf8_lossy(&out.stderr));
}

/// The words of `text` for scoring: lower case, no punctuation, and the numbers people say
/// in short commands spelled as words ("10" is "ten").
pub fn spoken_words(text: &str) -> Vec<String> {
    const NUMBERS: [&str; 21] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
    ];
    crate::speech::words(text)
        .into_iter()
        .map(|w| match w.parse::<usize>() {
            Ok(n) if n < NUMBERS.len() => NUMBERS[n].to_owned(),
            _ => w,
        })
        .collect()
}

/// Word error rate over [`spoken_words`]: whisper writing "10" for "ten" is no error.
pub fn spoken_wer(reference: &str, hypothesis: &str) -> f64 {
    crate::speech::error_rate(&spoken_words(reference), &spoken_words(hypothesis))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_words() {
        assert_eq!(spoken_words("10 of clubs."), ["ten", "of", "clubs"]);
        assert_eq!(spoken_words("5, 5"), ["five", "five"]);
        assert_eq!(spoken_words("In 1999"), ["in", "1999"]);
        assert!(spoken_wer("at ten, five times", "At 10, 5 times.") < 1e-9);
        assert!((spoken_wer("at ten", "at 11") - 0.5).abs() < 1e-9);
    }
}
