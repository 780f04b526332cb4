//! Text to the phoneme ids a Piper voice reads: espeak-ng's IPA for each clause, the clause's
//! punctuation put back (espeak-ng drops it, and the voice was trained to pause and lilt on
//! it), then each code point's id from the voice's map.
//!
//! espeak-ng is GPL: it runs as a program (`espeak-ng -q --ipa -v VOICE`, the text on its
//! standard input), never linked.

use std::collections::HashMap;

use unicode_normalization::UnicodeNormalization;

use crate::VoiceError;

/// The marks that end a clause, and that Piper's voices have ids for.
const MARKS: [char; 6] = ['.', ',', '!', '?', ';', ':'];

/// The clauses of `text`, each with the mark that ends it (if any): split after a mark that
/// is followed by white space or the end, as espeak-ng splits them. Empty clauses are left
/// out.
pub fn clauses(text: &str) -> Vec<(String, Option<char>)> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let ends = MARKS.contains(&c) && chars.peek().is_none_or(|n| n.is_whitespace());
        if ends {
            let clause = current.trim().trim_end_matches(MARKS);
            if clause.chars().any(char::is_alphanumeric) {
                out.push((clause.to_owned(), Some(c)));
            }
            current.clear();
        } else {
            current.push(c);
        }
    }
    let clause = current.trim();
    if clause.chars().any(char::is_alphanumeric) {
        out.push((clause.to_owned(), None));
    }
    out
}

/// The sentences of `text`: its clauses grouped up to each one that ends in `.`, `!` or `?`
/// (and the last), each rebuilt as text ("Hello, world." stays one sentence).
pub fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for (clause, mark) in clauses(text) {
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(&clause);
        current.extend(mark);
        if matches!(mark, Some('.' | '!' | '?') | None) {
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The phonemes of `text` as a Piper voice reads them: each clause's IPA from espeak-ng
/// (`espeak` the program, `voice` its voice, e.g. "en-us"), its mark after it and a space
/// between clauses, in Unicode NFD.
pub fn phonemize(espeak: &str, voice: &str, text: &str) -> Result<String, VoiceError> {
    let mut out = String::new();
    for (clause, mark) in clauses(text) {
        let ipa = ipa(espeak, voice, &clause)?;
        if ipa.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&ipa);
        out.extend(mark);
    }
    Ok(out.nfd().collect())
}

/// espeak-ng's IPA for one clause: its lines (espeak-ng may split a clause further) joined
/// by spaces.
fn ipa(espeak: &str, voice: &str, clause: &str) -> Result<String, VoiceError> {
    let stdout = crate::espeak::run(espeak, &["-q", "--ipa", "-v", voice], clause)?;
    let stdout = String::from_utf8_lossy(&stdout);
    Ok(stdout.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// The ids of `phonemes` in `map` (a Piper voice's `phoneme_id_map`), as Piper frames them:
/// the start `^`, then each code point's ids followed by the pad `_`, then the end `$`. Code
/// points the voice has no id for are left out.
pub fn ids(phonemes: &str, map: &HashMap<String, Vec<i64>>) -> Vec<i64> {
    let get = |s: &str| map.get(s).map(Vec::as_slice).unwrap_or_default();
    let pad = get("_");
    let mut out = Vec::with_capacity(phonemes.len() * 2 + 3);
    out.extend_from_slice(get("^"));
    out.extend_from_slice(pad);
    let mut buf = [0u8; 4];
    for c in phonemes.chars() {
        if let Some(id) = map.get(c.encode_utf8(&mut buf) as &str) {
            out.extend_from_slice(id);
            out.extend_from_slice(pad);
        }
    }
    out.extend_from_slice(get("$"));
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test: a failure should panic")]

    use super::*;

    #[test]
    fn a_text_splits_into_clauses_at_the_marks_espeak_splits_at() {
        assert_eq!(
            clauses("Hello, world. How are you today? Fine; thanks!"),
            vec![
                ("Hello".into(), Some(',')),
                ("world".into(), Some('.')),
                ("How are you today".into(), Some('?')),
                ("Fine".into(), Some(';')),
                ("thanks".into(), Some('!')),
            ]
        );
        assert_eq!(clauses("It costs 3.50 now"), vec![("It costs 3.50 now".into(), None)]);
        assert_eq!(clauses("  ... , !"), Vec::<(String, Option<char>)>::new());
        assert_eq!(
            clauses("Wait... what"),
            vec![("Wait".into(), Some('.')), ("what".into(), None)]
        );
    }

    #[test]
    fn a_text_splits_into_sentences_at_full_stops_and_question_and_exclamation_marks() {
        assert_eq!(
            sentences("Hello, world. How are you? Fine; thanks! And you"),
            vec!["Hello, world.", "How are you?", "Fine; thanks!", "And you"]
        );
        assert_eq!(sentences("Wait,"), vec!["Wait,"]);
        assert!(sentences(" . ").is_empty());
    }

    #[test]
    fn ids_are_framed_and_padded_and_unknown_code_points_left_out() {
        let map: HashMap<String, Vec<i64>> = [("_", 0), ("^", 1), ("$", 2), ("a", 14), ("b", 15)]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), vec![v]))
            .collect();
        assert_eq!(ids("ab", &map), vec![1, 0, 14, 0, 15, 0, 2]);
        assert_eq!(ids("aXb", &map), vec![1, 0, 14, 0, 15, 0, 2]);
        assert_eq!(ids("", &map), vec![1, 0, 2]);
    }

    #[test]
    fn espeak_gives_each_clause_its_ipa_and_the_marks_come_back() {
        if std::process::Command::new("espeak-ng").arg("--version").output().is_err() {
            assert!(std::env::var_os("STT_TEST_STRICT").is_none(), "espeak-ng is not installed");
            return;
        }
        let phonemes =
            phonemize("espeak-ng", "en-us", "Hello, world. -v is not an option!").unwrap();
        // "həlˈoʊ, wˈɜːld. …!" in NFD: the marks espeak-ng drops are back.
        assert!(phonemes.starts_with("həlˈoʊ, wˈɜːld. "), "{phonemes}");
        assert!(phonemes.ends_with('!'), "{phonemes}");
        assert!(!phonemes.contains("-v"), "the text was read, not taken for an option: {phonemes}");
    }

    #[test]
    fn a_missing_espeak_is_named() {
        let e = phonemize("/nonexistent/espeak-ng", "en-us", "Hello.").unwrap_err();
        assert!(e.to_string().contains("/nonexistent/espeak-ng"), "{e}");
    }
}
