//! Whisper's known failures on silence and noise, caught before they reach anyone.
//!
//! Fed audio without speech, whisper tends to produce captions from its training data
//! ("Thank you.", "Thanks for watching!", "[BLANK_AUDIO]", "(music)") or to loop on one
//! phrase. Annotations in brackets are never speech and are always removed. A stock phrase
//! is dropped only when whisper itself doubts there was speech (its no-speech probability)
//! or the audio is very quiet, so a person who really says "thank you" is still heard; a
//! lone "you" or filler ("hmm", "oh") is dropped always.
//! A phrase repeated three or more times in a row is kept once.
//!
//! Whisper also runs away on real speech: a short command comes out with its words over and
//! over ("10 of close 10 of close 10 of close 10 10" for "ten of clubs"), or a single digit
//! twice. [`runaway`] says when a decoded text cannot be what was said (more words than its
//! speech can hold, a phrase that repeats, or decoding that never reached its end), so the
//! transcriber can decode again with a wider window; [`bound`] is the last resort that keeps
//! a text within what its speech can hold.

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
    "the end",
];

/// Texts dropped whenever they are all a segment holds, doubt or not: whisper writes them for
/// music, a hum or a held tone with no doubt at all (tiny.en's no-speech probability was
/// 0.00002 for "You" on an organ chord), and nobody tells their desktop just "you" or "hmm".
const NEVER_ALONE: &[&str] = &["you", "so", "oh", "hmm", "mm", "uh", "um"];

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
    if doubtful && is_stock_phrase(text) || NEVER_ALONE.contains(&normalize(text).as_str()) {
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

/// Words a second no person keeps up: the fastest real speech in the benchmark set is 5.8
/// ("I have a thousand thoughts about that thing" in 1.37 s; docs/PERFORMANCE.md).
const WORDS_PER_SECOND: f64 = 6.0;

/// Words a segment's edges may add beyond its measured speech (a first or last syllable the
/// voice detector scored low).
const EDGE_WORDS: usize = 2;

/// Periods, in words, that [`runaway`] looks for repeats of.
const MAX_PERIOD: usize = 8;

/// The most words `speech_s` seconds of speech can hold.
pub fn word_capacity(speech_s: f64) -> usize {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let words = (speech_s.max(0.0) * WORDS_PER_SECOND).floor() as usize;
    words + EDGE_WORDS
}

/// Why a decoded text cannot be taken as what was said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runaway {
    /// More words than the speech can hold.
    TooManyWords { words: usize, capacity: usize },
    /// A phrase of `period` words followed by itself (in full, or for at least three words):
    /// "5 5", "4. Queen of Cloves 4. Queen of". People do say "no, no", so this only asks for
    /// a second opinion; it never cuts a text by itself.
    Repeats { period: usize },
    /// Decoding stopped at its token limit rather than at the end of the text.
    NoEnd,
}

/// Whether `text`, decoded from `speech_s` seconds of speech, looks like whisper running away
/// rather than what was said; `ended` is whether decoding reached its end-of-text token.
pub fn runaway(text: &str, speech_s: f64, ended: bool) -> Option<Runaway> {
    let words = words(text);
    let capacity = word_capacity(speech_s);
    if words.len() > capacity {
        return Some(Runaway::TooManyWords { words: words.len(), capacity });
    }
    if let Some(period) = repeat_period(&words) {
        return Some(Runaway::Repeats { period });
    }
    (!ended && !words.is_empty()).then_some(Runaway::NoEnd)
}

/// The shortest period at which `words` repeats itself: a phrase of `period` words followed
/// at once by itself in full, or by its first three words or more at the very end of the text
/// (a loop cut off). An echo further apart ("ask not what your country can do for you, ask
/// what you can do for your country") is how people talk.
fn repeat_period(words: &[String]) -> Option<usize> {
    (1..=MAX_PERIOD).find(|&period| {
        let mut run = 0;
        for j in 0..words.len().saturating_sub(period) {
            run = if words[j] == words[j + period] { run + 1 } else { 0 };
            let at_end = j + period + 1 == words.len();
            if run >= period || (at_end && run >= period.min(3)) {
                return true;
            }
        }
        false
    })
}

/// `text` cut down to what `speech_s` seconds of speech can hold: unchanged when it fits;
/// otherwise every phrase said twice or more in a row is kept once, and if that is still too
/// long, only the first [`word_capacity`] words stay.
pub fn bound(text: &str, speech_s: f64) -> String {
    let capacity = word_capacity(speech_s);
    if words(text).len() <= capacity {
        return text.to_owned();
    }
    let collapsed = collapse_runs(text, 2);
    let kept: Vec<&str> = collapsed.split_whitespace().take(capacity).collect();
    kept.join(" ")
}

/// The words of `text` as [`runaway`] compares them (case and punctuation aside).
fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(normalize).filter(|w| !w.is_empty()).collect()
}

/// Keeps one copy of a run of three or more identical consecutive phrases (sentences, or
/// word n-grams of up to eight words).
fn collapse_repeats(text: &str) -> String {
    collapse_runs(text, 3)
}

/// Keeps one copy of a run of `min_reps` or more identical consecutive phrases of up to
/// [`MAX_PERIOD`] words, the shortest phrase first ("1 1 1 1" is "1", not "1 1").
fn collapse_runs(text: &str, min_reps: usize) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let key = |w: &str| normalize(w);
    let mut out: Vec<&str> = Vec::with_capacity(words.len());
    let mut i = 0;
    'outer: while i < words.len() {
        for n in 1..=MAX_PERIOD {
            if i + min_reps * n > words.len() {
                continue;
            }
            let same = |a: usize, b: usize| (0..n).all(|k| key(words[a + k]) == key(words[b + k]));
            if (1..min_reps).all(|r| same(i, i + r * n)) {
                let mut reps = min_reps;
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
    fn a_lone_you_or_filler_is_dropped_even_when_whisper_is_sure() {
        for alone in ["You", " you.", "So.", "Oh!", "Hmm...", "Um,"] {
            check(alone, 0.0, 0.1, None);
        }
        // In a sentence they are words like any other.
        check("You too.", 0.0, 0.1, Some("You too."));
        check("So what?", 0.0, 0.1, Some("So what?"));
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
    fn runaway_decoding_is_told_from_what_people_say() {
        // What tiny.en made of real short commands, with the speech's length.
        let loops = [
            ("10 of close 10 of close 10 of close 10 10", 1.08),
            ("4. Queen of Cloves 4. Queen of", 1.90),
            ("5 5", 0.38),
            ("1 1 1 1 1 1 1 1 1", 0.62),
            ("Montreal? M- M- M- M- M- M- forced, forced, a liner.", 3.60),
            ("What time is it? What time is it?", 0.85),
        ];
        for (text, speech_s) in loops {
            assert!(runaway(text, speech_s, true).is_some(), "{text:?} in {speech_s} s");
        }
        let said = [
            ("Ten of clubs.", 1.08),
            ("I have a thousand thoughts about that thing.", 1.37),
            ("Eight of spades, four of clubs, seven of hearts.", 3.29),
            ("Stop the music.", 0.96),
            ("", 0.5),
        ];
        for (text, speech_s) in said {
            assert_eq!(runaway(text, speech_s, true), None, "{text:?} in {speech_s} s");
        }
    }

    #[test]
    fn each_reason_is_named() {
        assert_eq!(
            runaway("one two three four five six seven", 0.5, true),
            Some(Runaway::TooManyWords { words: 7, capacity: 5 })
        );
        assert_eq!(runaway("No, no.", 1.0, true), Some(Runaway::Repeats { period: 1 }));
        assert_eq!(
            runaway("a b c d a b c", 3.0, true),
            Some(Runaway::Repeats { period: 4 }),
            "a repeat cut short by the token limit"
        );
        assert_eq!(runaway("a b c d a b", 3.0, true), None, "two words again is not enough");
        assert_eq!(runaway("a b c d a b c e", 3.0, true), None, "an echo, not a loop");
        let jfk = "And so my fellow Americans, ask not what your country can do for you, ask what \
                   you can do for your country.";
        assert_eq!(runaway(jfk, 10.9, true), None);
        assert_eq!(runaway("Turn on the", 3.0, false), Some(Runaway::NoEnd));
        assert_eq!(runaway("", 3.0, false), None);
    }

    #[test]
    fn the_capacity_grows_with_the_speech() {
        assert_eq!(word_capacity(0.0), 2);
        assert_eq!(word_capacity(1.0), 8);
        assert_eq!(word_capacity(-1.0), 2);
        assert_eq!(word_capacity(2.5), 17);
    }

    #[test]
    fn a_bounded_text_never_says_more_than_its_speech_holds() {
        // Fits: unchanged, repeats and all (a person may say "five five").
        assert_eq!(bound("5, 5.", 1.14), "5, 5.");
        // Too long: repeats kept once, then cut to the capacity.
        assert_eq!(bound("10 of close 10 of close 10 of close 10 10", 1.08), "10 of close 10");
        assert_eq!(bound("1 1 1 1 1 1 1 1 1", 0.3), "1");
        let long = "a b c d e f g h i j k l";
        assert_eq!(bound(long, 0.5), "a b c d e");
        for (text, s) in [("10 of close 10 of close 10 of close 10 10", 1.08), (long, 0.5)] {
            assert!(words(&bound(text, s)).len() <= word_capacity(s));
        }
    }

    #[test]
    fn rms_of_a_full_scale_square_is_one() {
        assert!((rms(&[1.0, -1.0, 1.0, -1.0]) - 1.0).abs() < 1e-6);
        assert_eq!(rms(&[]), 0.0);
    }
}
