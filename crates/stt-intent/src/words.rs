//! What was said as words to match: lower case, punctuation gone, contractions spelled out
//! ("what's" → "what is"), numbers as digits ("twenty five" → `25`, "fifth" → `5th`), digits
//! and units apart ("9am" → `9 am`). Templates go through the same function, so a template
//! written either way matches speech written either way.
//!
//! Each [`Word`] keeps what was said alongside its key, so a free-text slot gives back the
//! words as the person said them ("call Mum", not "call mum").

/// One word of a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// What templates match against.
    pub key: String,
    /// The words as said (empty for the second half of a contraction spelled out).
    pub said: String,
}

impl Word {
    fn new(key: impl Into<String>, said: impl Into<String>) -> Self {
        Self { key: key.into(), said: said.into() }
    }
}

/// `text` as words.
pub fn words(text: &str) -> Vec<Word> {
    let mut out = Vec::new();
    for raw in split(text) {
        for (key, said) in spell_out(&raw) {
            out.push(Word::new(key, said));
        }
    }
    numbers(out)
}

/// The keys of `words`, joined by spaces: how a sentence reads to the matcher.
pub fn keys(words: &[Word]) -> String {
    words.iter().map(|w| w.key.as_str()).collect::<Vec<_>>().join(" ")
}

/// The words as said, joined by spaces.
pub fn said(words: &[Word]) -> String {
    words.iter().map(|w| w.said.as_str()).filter(|s| !s.is_empty()).collect::<Vec<_>>().join(" ")
}

/// Raw words, in their original case: letters, digits and apostrophes, with `:` and `.`
/// kept between digits (10:30, 1.5). "a.m." and "p.m." become one word each.
fn split(text: &str) -> Vec<String> {
    let text = text.replace(['\u{2019}', '\u{2018}', '`'], "'");
    let text =
        ["a.m.", "a. m.", "A.M.", "A. M."].iter().fold(text, |t, from| t.replace(from, " am "));
    let text =
        ["p.m.", "p. m.", "P.M.", "P. M."].iter().fold(text, |t, from| t.replace(from, " pm "));
    let chars: Vec<char> = text.chars().collect();
    let mut words = Vec::new();
    let mut word = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let between_digits = i > 0
            && chars[i - 1].is_ascii_digit()
            && chars.get(i + 1).is_some_and(char::is_ascii_digit);
        let inside =
            c == '\'' && !word.is_empty() && chars.get(i + 1).is_some_and(|n| n.is_alphabetic());
        if c.is_alphanumeric() || inside || ((c == ':' || c == '.') && between_digits) {
            word.push(c);
        } else if !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words.into_iter().flat_map(|w| digits_apart(&w)).collect()
}

/// "9am" → ["9", "am"], "10min" → ["10", "min"]; ordinals ("5th") stay whole.
fn digits_apart(word: &str) -> Vec<String> {
    let split = word.find(|c: char| c.is_alphabetic()).filter(|&at| at > 0);
    match split {
        Some(at) if word[..at].chars().all(|c| c.is_ascii_digit() || c == ':' || c == '.') => {
            let rest = &word[at..];
            if ["st", "nd", "rd", "th"].contains(&rest.to_lowercase().as_str()) {
                vec![word.to_owned()]
            } else {
                vec![word[..at].to_owned(), rest.to_owned()]
            }
        }
        _ => vec![word.to_owned()],
    }
}

/// A raw word as (key, said) pairs: lower case, a contraction spelled out.
fn spell_out(raw: &str) -> Vec<(String, String)> {
    let lower = raw.to_lowercase();
    const WHOLE: [(&str, &str); 12] = [
        ("can't", "can not"),
        ("cannot", "can not"),
        ("won't", "will not"),
        ("let's", "let us"),
        ("i'm", "i am"),
        ("o'clock", "o'clock"),
        ("ain't", "is not"),
        ("shan't", "shall not"),
        ("y'all", "you all"),
        ("gonna", "going to"),
        ("wanna", "want to"),
        ("gotta", "got to"),
    ];
    const ENDS: [(&str, &str); 6] = [
        ("n't", "not"),
        ("'s", "is"),
        ("'re", "are"),
        ("'ll", "will"),
        ("'ve", "have"),
        ("'d", "would"),
    ];
    let pieces: Vec<String> =
        if let Some((_, full)) = WHOLE.iter().find(|(short, _)| *short == lower) {
            full.split(' ').map(str::to_owned).collect()
        } else if let Some((end, full)) =
            ENDS.iter().find(|(end, _)| lower.ends_with(end) && lower.len() > end.len())
        {
            let stem = &lower[..lower.len() - end.len()];
            // "'s" after a name is a possessive as often as "is": only the words where it is
            // "is" are spelled out (what's, it's, that's, …).
            let is_is =
                ["what", "it", "that", "there", "here", "who", "where", "how", "when", "he", "she"];
            if *end == "'s" && !is_is.contains(&stem) {
                vec![lower.clone()]
            } else {
                vec![stem.to_owned(), (*full).to_owned()]
            }
        } else {
            vec![lower]
        };
    pieces
        .into_iter()
        .enumerate()
        .map(|(i, key)| (key, if i == 0 { raw.to_owned() } else { String::new() }))
        .collect()
}

const UNITS: [&str; 20] = [
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
];
const TENS: [&str; 8] =
    ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"];
const ORDINAL_UNITS: [&str; 20] = [
    "zeroth",
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
];
const ORDINAL_TENS: [&str; 8] = [
    "twentieth",
    "thirtieth",
    "fortieth",
    "fiftieth",
    "sixtieth",
    "seventieth",
    "eightieth",
    "ninetieth",
];

/// What one number word is worth, and whether it is an ordinal.
fn number_word(key: &str) -> Option<(Part, bool)> {
    if let Some(n) = UNITS.iter().position(|w| *w == key) {
        return Some((Part::Unit(n as u64), false));
    }
    if let Some(n) = TENS.iter().position(|w| *w == key) {
        return Some((Part::Tens(20 + 10 * n as u64), false));
    }
    // "second" is a unit of time far more often than an ordinal: only as "the second".
    if let Some(n) = ORDINAL_UNITS.iter().position(|w| *w == key).filter(|&n| n != 2) {
        return Some((Part::Unit(n as u64), true));
    }
    if let Some(n) = ORDINAL_TENS.iter().position(|w| *w == key) {
        return Some((Part::Tens(20 + 10 * n as u64), true));
    }
    (key == "hundred").then_some((Part::Hundred, false))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Unit(u64),
    Tens(u64),
    Hundred,
}

/// Runs of number words become one word of digits: "twenty five" → 25, "one hundred and
/// five" → 105, "twenty first" → 21st. Two numbers side by side stay two ("nine thirty" →
/// 9 30, a time).
fn numbers(words: Vec<Word>) -> Vec<Word> {
    let mut out: Vec<Word> = Vec::with_capacity(words.len());
    let mut i = 0;
    while i < words.len() {
        let Some((first, ordinal)) = number_word(&words[i].key) else {
            out.push(words[i].clone());
            i += 1;
            continue;
        };
        let mut value;
        let mut ordinal = ordinal;
        let mut end = i + 1;
        match first {
            Part::Hundred => {
                out.push(words[i].clone());
                i += 1;
                continue;
            }
            Part::Unit(n) => {
                value = n;
                // "one hundred [and] twenty five"
                if !ordinal && n > 0 && words.get(end).is_some_and(|w| w.key == "hundred") {
                    value = n * 100;
                    end += 1;
                    let and = usize::from(words.get(end).is_some_and(|w| w.key == "and"));
                    if let Some((rest, o, used)) = below_hundred(&words[end + and..]) {
                        value += rest;
                        ordinal = o;
                        end += and + used;
                    }
                }
            }
            Part::Tens(n) => {
                value = n;
                if !ordinal
                    && let Some((Part::Unit(u), o)) =
                        words.get(end).and_then(|w| number_word(&w.key))
                    && (1..10).contains(&u)
                {
                    value += u;
                    ordinal = o;
                    end += 1;
                }
            }
        }
        let said = said(&words[i..end]);
        let key = if ordinal { format!("{value}{}", suffix(value)) } else { value.to_string() };
        out.push(Word::new(key, said));
        i = end;
    }
    out
}

/// A number below a hundred at the start of `words`: (value, ordinal, words used).
fn below_hundred(words: &[Word]) -> Option<(u64, bool, usize)> {
    match number_word(&words.first()?.key)? {
        (Part::Unit(n), o) => Some((n, o, 1)),
        (Part::Tens(n), true) => Some((n, true, 1)),
        (Part::Tens(n), false) => match words.get(1).and_then(|w| number_word(&w.key)) {
            Some((Part::Unit(u), o)) if (1..10).contains(&u) => Some((n + u, o, 2)),
            _ => Some((n, false, 1)),
        },
        (Part::Hundred, _) => None,
    }
}

/// The English ordinal suffix of `n`.
pub fn suffix(n: u64) -> &'static str {
    match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expected: &str) {
        assert_eq!(keys(&words(text)), expected, "{text:?}");
    }

    #[test]
    fn sentences_read_as_keys() {
        check("What's the time?", "what is the time");
        check("Set a 10-minute timer.", "set a 10 minute timer");
        check("Remind me at 9am, please!", "remind me at 9 am please");
        check("at 10:30 p.m.", "at 10:30 pm");
        check("It’s 5 o'clock", "it is 5 o'clock");
        check("Don't disturb me", "do not disturb me");
        check("I can't", "i can not");
        check("the plumber's van", "the plumber's van");
        check("for 1.5 hours", "for 1.5 hours");
        check("on the 5th", "on the 5th");
        check("  ", "");
        check("'quoted'", "quoted");
    }

    #[test]
    fn number_words_become_digits() {
        check("twenty five minutes", "25 minutes");
        check("twenty-five minutes", "25 minutes");
        check("nine thirty", "9 30");
        check("one hundred and five", "105");
        check("a hundred", "a hundred");
        check("the twenty first", "the 21st");
        check("the fifth of may", "the 5th of may");
        check("one second", "1 second");
        check("ten and a half minutes", "10 and a half minutes");
        check("zero", "0");
    }

    #[test]
    fn what_was_said_is_kept_beside_the_key() {
        let w = words("Call Mum at twenty five past Nine");
        assert_eq!(said(&w[..2]), "Call Mum");
        assert_eq!(w[3].key, "25");
        assert_eq!(w[3].said, "twenty five");
        let w = words("What's up");
        assert_eq!(said(&w), "What's up");
    }
}
