//! Text helpers: the normal form used to find duplicates, the FTS5 query built from free
//! text, cue matching, and dates in words (so "in May" finds a turn said in May).

use crate::Seconds;

/// Words that say nothing about what a text is about. Dropped from search queries: an `OR`
/// of "the" matches every row, which is slow and ranks nothing.
const STOPWORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
    "s",
    "t",
    "d",
    "ll",
    "m",
    "re",
    "ve",
    "don",
    "didn",
    "doesn",
    "isn",
    "wasn",
    "aren",
    "weren",
    "won",
    "wouldn",
    "couldn",
    "shouldn",
    "let",
    "us",
    "also",
    "get",
    "got",
    "like",
    "really",
    "yeah",
    "oh",
    "hey",
    "ok",
    "okay",
    "kind",
    "sort",
    "lot",
    "much",
    "many",
    "one",
    "thing",
    "things",
    "know",
    "think",
    "going",
    "go",
    "well",
    "way",
    "make",
    "made",
];

fn is_stopword(word: &str) -> bool {
    STOPWORDS.contains(&word)
}

/// The words of a text, lowercased; letters and digits only.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase)
}

/// The words of a text that carry its content: lowercased, without stopwords and stray
/// letters (the "s" of "user's").
pub fn content_words(text: &str) -> std::collections::BTreeSet<String> {
    words(text)
        .filter(|w| !is_stopword(w) && (w.chars().count() > 1 || w.chars().all(char::is_numeric)))
        .collect()
}

/// The names and numbers of a text, lowercased: its capitalised words and those with a
/// digit, stopwords aside (what a fact takes from what was said: "Lisbon", "7", "Ana").
pub fn names_and_numbers(text: &str) -> std::collections::BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.starts_with(char::is_uppercase) || w.contains(|c: char| c.is_ascii_digit()))
        .map(str::to_lowercase)
        .filter(|w| !is_stopword(w))
        .collect()
}

/// The normal form two texts share when they say the same thing in the same words: lowercase
/// words joined by single spaces (case, punctuation and spacing do not make a new fact).
pub fn normalise(text: &str) -> String {
    words(text).collect::<Vec<_>>().join(" ")
}

/// The FTS5 query for free text: its content words, each quoted (so no word is read as FTS5
/// syntax), joined by OR; `None` when nothing is left to search for.
pub fn fts_query(text: &str) -> Option<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in words(text) {
        if is_stopword(&word) || terms.contains(&word) {
            continue;
        }
        terms.push(word);
        if terms.len() == 32 {
            break;
        }
    }
    if terms.is_empty() {
        return None;
    }
    Some(terms.iter().map(|t| format!("\"{t}\"")).collect::<Vec<_>>().join(" OR "))
}

/// Whether a cue ("the dentist", "when I mention Paris") was spoken in `text`: every content
/// word of the cue appears in the text, a plural `s` either side allowed.
pub fn cue_matches(cue: &str, text: &str) -> bool {
    let spoken: Vec<String> = words(text).collect();
    let stem = |w: &str| w.strip_suffix('s').unwrap_or(w).to_owned();
    let mut wanted = words(cue).filter(|w| !is_stopword(w) && w != "mention" && w != "say");
    let first = wanted.next();
    let Some(first) = first else { return false };
    std::iter::once(first).chain(wanted).all(|w| spoken.iter().any(|s| stem(s) == stem(&w)))
}

/// A Unix time as a UTC date and time (the epoch for one out of chrono's range).
fn utc(at: Seconds) -> chrono::NaiveDateTime {
    #[allow(clippy::cast_possible_truncation, reason = "whole seconds of a date")]
    let secs = at.floor() as i64;
    chrono::DateTime::from_timestamp(secs, 0).unwrap_or_default().naive_utc()
}

/// "8 May 2023": a date as people say it, for search and for the model to read.
pub fn date_words(at: Seconds) -> String {
    utc(at).format("%-d %B %Y").to_string()
}

/// "2023-05-08 13:56": a time for people to read in listings.
pub fn date_time(at: Seconds) -> String {
    utc(at).format("%Y-%m-%d %H:%M").to_string()
}

/// Parses `date_time`'s form back (and a bare `YYYY-MM-DD`, seconds, a `T` and a `Z`), for
/// imported files.
pub fn parse_date_time(text: &str) -> Option<Seconds> {
    let text = text.trim().trim_matches('"').trim_end_matches('Z');
    let (date, time) = text.split_once([' ', 'T']).unwrap_or((text, "00:00"));
    let date = chrono::NaiveDate::parse_from_str(date, "%Y-%m-%d").ok()?;
    let time = chrono::NaiveTime::parse_from_str(time, "%H:%M:%S%.f")
        .or_else(|_| chrono::NaiveTime::parse_from_str(time, "%H:%M"))
        .ok()?;
    #[allow(clippy::cast_precision_loss, reason = "seconds since 1970 fit a double exactly")]
    Some(date.and_time(time).and_utc().timestamp() as Seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_form_ignores_case_punctuation_and_spacing() {
        assert_eq!(normalise("My  favourite colour is Green."), "my favourite colour is green");
        assert_eq!(
            normalise("my favourite colour is green"),
            normalise("My favourite colour is green!")
        );
        assert_ne!(normalise("favourite colour is green"), normalise("favourite colour is blue"));
    }

    #[test]
    fn names_numbers_and_content_words() {
        let names: Vec<String> =
            names_and_numbers("The user's sister Ana lives in Lisbon, flat 4B.")
                .into_iter()
                .collect();
        assert_eq!(names, ["4b", "ana", "lisbon"]);
        let words: Vec<String> = content_words("The user's son is 7.").into_iter().collect();
        assert_eq!(words, ["7", "son", "user"]);
    }

    #[test]
    fn queries_keep_content_words_quoted() {
        assert_eq!(
            fts_query("What is the name of Caroline's dog?").as_deref(),
            Some("\"name\" OR \"caroline\" OR \"dog\"")
        );
        assert_eq!(fts_query("what is it?"), None);
        // FTS5 syntax in the text is only ever a word.
        assert_eq!(fts_query("NEAR(a b) \"x\" AND").as_deref(), Some("\"near\" OR \"b\" OR \"x\""));
    }

    #[test]
    fn cues_match_their_words_anywhere() {
        assert!(cue_matches("the dentist", "I have to call the Dentists today"));
        assert!(cue_matches("when I mention Paris", "we fly to paris in June"));
        assert!(!cue_matches("dentist", "the doctor called"));
        assert!(!cue_matches("the", "the doctor called"));
    }

    #[test]
    fn dates_round_trip() {
        for (at, words) in [(0.0, "1 January 1970"), (1_683_554_160.0, "8 May 2023")] {
            assert_eq!(date_words(at), words);
            let back = parse_date_time(&date_time(at)).unwrap();
            assert!((back - at).abs() < 60.0, "{at} -> {} -> {back}", date_time(at));
        }
        assert_eq!(date_time(951_782_400.0), "2000-02-29 00:00");
        assert_eq!(parse_date_time("2000-02-29"), Some(951_782_400.0));
        assert_eq!(parse_date_time("2000-13-01"), None);
        assert_eq!(parse_date_time("soon"), None);
    }
}
