//! Whisper's known failures on silence and noise, caught before they reach anyone.
//!
//! Fed audio without speech, whisper tends to produce captions from its training data
//! ("Thank you.", "Thanks for watching!", "[BLANK_AUDIO]", "(music)") or to loop on one
//! phrase. Annotations in brackets are never speech and are always removed. A stock phrase
//! is dropped only when whisper itself doubts there was speech (its no-speech probability)
//! or the audio is very quiet, so a person who really says "thank you" is still heard.
//! A phrase repeated three or more times in a row is kept once. A text that is one phrase said
//! exactly twice is [`said_twice`]: the transcriber decodes it again with the full window.

/// Phrases whisper produces from silence and noise, compared without case and punctuation.
const STOCK_PHRASES: &[&str] = &[
    "thank you",
    "thank you very much",
    "thanks for watching",
    "thank you for watching",
    "thanks for listening",
    "thank you for listening",
    "please subscribe",
    "subscribe to my channel",
    "bye",
    "you",
    "so",
    "oh",
    "hmm",
    "the end",
];

/// No-speech probability above which a stock phrase is taken for a hallucination.
const DOUBTFUL_NO_SPEECH: f32 = 0.2;

/// RMS level under which the audio counts as near-silent (about -46 dBFS).
const QUIET_RMS: f32 = 0.005;

/// What whisper said about a segment, and how sure it was that there was speech.
#[derive(Debug, Clone, PartialEq)]
pub struct Heard<'a> {
    pub text: &'a str,
    /// Whisper's no-speech probability for the segment (0 when unknown).
    pub no_speech_prob: f32,
    /// RMS level of the segment's audio.
    pub rms: f32,
}

/// The text to publish, or `None` when there is nothing real to say.
pub fn clean(heard: &Heard<'_>) -> Option<String> {
    let text = collapse_repeats(&strip_annotations(heard.text));
    let text = text.trim();
    if !text.chars().any(char::is_alphanumeric) {
        return None;
    }
    let doubtful = heard.no_speech_prob >= DOUBTFUL_NO_SPEECH || heard.rms < QUIET_RMS;
    if doubtful && is_stock_phrase(text) {
        return None;
    }
    Some(text.to_owned())
}

/// Root-mean-square level of `samples`.
pub fn rms(samples: &[f32]) -> f32 {
    if samples.is_empty() {
        return 0.0;
    }
    let sum: f64 = samples.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
    #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
    let mean = (sum / samples.len() as f64) as f32;
    mean.sqrt()
}

/// Removes `[...]`, `(...)`, `*...*` and `♪` annotations.
fn strip_annotations(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut closing: Option<char> = None;
    for c in text.chars() {
        match closing {
            Some(end) if c == end => closing = None,
            Some(_) => {}
            None => match c {
                '[' => closing = Some(']'),
                '(' => closing = Some(')'),
                '*' => closing = Some('*'),
                '♪' | '♫' => {}
                _ => out.push(c),
            },
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn normalize(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric() || c.is_whitespace() || *c == '\'')
        .collect::<String>()
        .to_lowercase()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn is_stock_phrase(text: &str) -> bool {
    let norm = normalize(text);
    STOCK_PHRASES.contains(&norm.as_str())
}

/// Whether the whole of `text` is one phrase of two or more words, said twice in a row
/// (case and punctuation aside): what whisper produces from a short window on some short
/// sentences, and what a person rarely says.
pub fn said_twice(text: &str) -> bool {
    let words: Vec<String> = text.split_whitespace().map(normalize).collect();
    let words: Vec<&str> = words.iter().map(String::as_str).filter(|w| !w.is_empty()).collect();
    let half = words.len() / 2;
    words.len().is_multiple_of(2) && half >= 2 && words[..half] == words[half..]
}

/// Keeps one copy of a run of three or more identical consecutive phrases (sentences, or
/// word n-grams of up to eight words).
fn collapse_repeats(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let key = |w: &str| normalize(w);
    let mut out: Vec<&str> = Vec::with_capacity(words.len());
    let mut i = 0;
    'outer: while i < words.len() {
        for n in (1..=8).rev() {
            if i + 3 * n > words.len() {
                continue;
            }
            let same = |a: usize, b: usize| (0..n).all(|k| key(words[a + k]) == key(words[b + k]));
            if same(i, i + n) && same(i, i + 2 * n) {
                let mut reps = 3;
                while i + (reps + 1) * n <= words.len() && same(i, i + reps * n) {
                    reps += 1;
                }
                out.extend_from_slice(&words[i..i + n]);
                i += reps * n;
                continue 'outer;
            }
        }
        out.push(words[i]);
        i += 1;
    }
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(text: &str, no_speech_prob: f32, rms: f32, expected: Option<&str>) {
        let got = clean(&Heard { text, no_speech_prob, rms });
        assert_eq!(got.as_deref(), expected, "{text:?} (p={no_speech_prob}, rms={rms})");
    }

    #[test]
    fn annotations_and_empty_output_are_dropped() {
        check("[BLANK_AUDIO]", 0.0, 0.1, None);
        check(" (music) ", 0.0, 0.1, None);
        check("♪ ♪", 0.0, 0.1, None);
        check("*laughs*", 0.0, 0.1, None);
        check(" ... ", 0.0, 0.1, None);
        check("", 0.0, 0.1, None);
        check("[Music] Turn on the lights.", 0.0, 0.1, Some("Turn on the lights."));
    }

    #[test]
    fn stock_phrases_are_dropped_only_when_whisper_doubts_the_speech() {
        check("Thank you.", 0.6, 0.1, None);
        check(" Thanks for watching!", 0.3, 0.1, None);
        check("Thank you.", 0.01, 0.001, None);
        // Someone really said it: confident and audible.
        check("Thank you.", 0.01, 0.1, Some("Thank you."));
        // Doubtful, but not a stock phrase: kept.
        check("Open the door.", 0.6, 0.1, Some("Open the door."));
    }

    #[test]
    fn loops_are_collapsed() {
        check("the the the the the", 0.0, 0.1, Some("the"));
        check(
            "I'm going home. I'm going home. I'm going home. I'm going home.",
            0.0,
            0.1,
            Some("I'm going home."),
        );
        check("very very good", 0.0, 0.1, Some("very very good"));
        check("one two one two one two three", 0.0, 0.1, Some("one two three"));
    }

    #[test]
    fn a_sentence_said_twice_is_noticed() {
        assert!(said_twice("What time is it? What time is it?"));
        assert!(said_twice(" what time is it what time, is it "));
        assert!(!said_twice("What time is it?"));
        assert!(!said_twice("No, no."), "one word twice is how people talk");
        assert!(!said_twice("What time is it? What time was it?"));
        assert!(!said_twice("a b c a b"));
        assert!(!said_twice(""));
    }

    #[test]
    fn rms_of_a_full_scale_square_is_one() {
        assert!((rms(&[1.0, -1.0, 1.0, -1.0]) - 1.0).abs() < 1e-6);
        assert_eq!(rms(&[]), 0.0);
    }
}
