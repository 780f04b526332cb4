//! What each phrase of a dictation becomes as typed text.
//!
//! Whisper writes a phrase as a sentence of its own ("Buy milk, new line, eggs."): a
//! capital, its own commas and a full stop at the end. The rules, in order:
//!
//! 1. The words of [`SPOKEN`] are commands, not text: matched whatever the case and
//!    whisper's punctuation around them, and that punctuation goes with them.
//! 2. A spoken mark (`,` `.` `?` `!`) replaces whatever mark whisper ended the text before it
//!    with, also at the end of the phrase typed before (one backspace over what dictation
//!    itself typed).
//! 3. A spoken line break drops a comma whisper put before it.
//! 4. "scratch that" takes back the words said before it in the same phrase, or, said first,
//!    the whole phrase typed before (backspaces over it); said again, the one before that.
//! 5. A sentence begins with a capital: the first word typed, and a word after `.` `?` `!` or
//!    a line break. Whisper's capital on a phrase that goes on with a sentence (after a
//!    spoken comma, say) is taken off when the word is one that is never a name ("and",
//!    "the", …).
//! 6. Phrases are one space apart; none after a line break, none before a mark.

/// A spoken command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spoken {
    NewLine,
    NewParagraph,
    FullStop,
    Comma,
    QuestionMark,
    ExclamationMark,
    /// Take back the last phrase (or the words before it in this one).
    ScratchThat,
}

/// The spoken commands, as said. README's "Dictation" lists the same table.
pub const SPOKEN: &[(&str, Spoken)] = &[
    ("new line", Spoken::NewLine),
    ("new paragraph", Spoken::NewParagraph),
    ("full stop", Spoken::FullStop),
    ("comma", Spoken::Comma),
    ("question mark", Spoken::QuestionMark),
    ("exclamation mark", Spoken::ExclamationMark),
    ("exclamation point", Spoken::ExclamationMark),
    ("scratch that", Spoken::ScratchThat),
];

/// What to do in the focused window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// Type this text.
    Type(String),
    /// Press backspace this many times (characters dictation typed itself).
    Erase(usize),
}

/// What a text field holds after `phrases` are dictated into it in turn, from empty (tests
/// and documentation: the rules at a glance).
pub fn replay(phrases: &[&str]) -> String {
    let mut dictation = Phrases::default();
    let mut shown: Vec<char> = Vec::new();
    for said in phrases {
        for edit in dictation.phrase(said) {
            match edit {
                Edit::Type(text) => shown.extend(text.chars()),
                // Never more than dictation typed.
                Edit::Erase(n) => shown.truncate(shown.len().saturating_sub(n)),
            }
        }
    }
    shown.into_iter().collect()
}

/// How the text typed so far ends, for the next word's capital and space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tail {
    /// Nothing typed yet, or a line break: a capital, no space.
    Start,
    /// After `.`, `?` or `!`: a capital and a space.
    Sentence,
    /// Inside a sentence: a space, no capital.
    Mid,
}

/// A phrase typed: its text (with its leading space) and how the text before it ended.
#[derive(Debug, Clone)]
struct Typed {
    text: String,
    before: Tail,
}

/// Phrases kept for "scratch that", at most.
const KEPT: usize = 64;

/// Whisper's punctuation that a spoken mark replaces.
const MARKS: &[char] = &['.', ',', ';', ':', '!', '?'];

/// Words never capitalised inside a sentence, so whisper's capital at a phrase's start can
/// go when the phrase goes on with a sentence. Names are never in it.
const LOWER: &[&str] = &[
    "a", "about", "after", "also", "an", "and", "are", "as", "at", "be", "because", "been",
    "before", "but", "by", "can", "could", "did", "do", "for", "from", "had", "has", "have", "he",
    "her", "his", "how", "if", "in", "into", "is", "it", "its", "may", "maybe", "me", "my", "no",
    "not", "of", "on", "or", "our", "she", "so", "some", "than", "that", "the", "their", "them",
    "then", "there", "they", "this", "to", "too", "until", "up", "us", "was", "we", "were", "what",
    "when", "where", "which", "while", "who", "why", "will", "with", "would", "yes", "yet", "you",
    "your",
];

/// One dictation's phrases: what each final transcript becomes as [`Edit`]s, and what was
/// typed (for "scratch that"). Start a new one for each dictation.
#[derive(Debug)]
pub struct Phrases {
    typed: Vec<Typed>,
    tail: Tail,
}

impl Default for Phrases {
    fn default() -> Self {
        Self { typed: Vec::new(), tail: Tail::Start }
    }
}

impl Phrases {
    /// The edits that type `said`, one final transcript. Empty when there is nothing to do.
    pub fn phrase(&mut self, said: &str) -> Vec<Edit> {
        let words: Vec<&str> = said.split_whitespace().collect();
        let start = self.tail;
        let mut erase = 0;
        let mut out = String::new();
        let mut tail = start;
        let mut i = 0;
        while i < words.len() {
            let Some((n, spoken)) = command(&words[i..]) else {
                let word = cased(words[i], tail);
                if !out.is_empty() && !out.ends_with('\n') {
                    out.push(' ');
                }
                out.push_str(&word);
                tail = if word.ends_with(['.', '?', '!']) { Tail::Sentence } else { Tail::Mid };
                i += 1;
                continue;
            };
            i += n;
            match spoken {
                Spoken::ScratchThat => {
                    if out.is_empty() {
                        if let Some(last) = self.typed.pop() {
                            erase += last.text.chars().count();
                            tail = last.before;
                            self.tail = last.before;
                        }
                    } else {
                        out.clear();
                        tail = self.tail;
                    }
                }
                Spoken::NewLine | Spoken::NewParagraph => {
                    let trimmed = out.trim_end_matches(',').len();
                    out.truncate(trimmed);
                    out.push_str(if spoken == Spoken::NewLine { "\n" } else { "\n\n" });
                    tail = Tail::Start;
                }
                Spoken::FullStop
                | Spoken::Comma
                | Spoken::QuestionMark
                | Spoken::ExclamationMark => {
                    let mark = match spoken {
                        Spoken::FullStop => '.',
                        Spoken::Comma => ',',
                        Spoken::QuestionMark => '?',
                        _ => '!',
                    };
                    if out.trim().is_empty() {
                        out.clear();
                        // The mark ends the phrase typed before: whisper's own mark there goes.
                        if let Some(last) = self.typed.last_mut()
                            && last.text.ends_with(MARKS)
                        {
                            last.text.pop();
                            erase += 1;
                        }
                    } else {
                        let trimmed = out.trim_end_matches(MARKS).len();
                        out.truncate(trimmed);
                    }
                    out.push(mark);
                    tail = if mark == ',' { Tail::Mid } else { Tail::Sentence };
                }
            }
        }
        let mut edits = Vec::with_capacity(2);
        if erase > 0 {
            edits.push(Edit::Erase(erase));
        }
        if !out.is_empty() {
            // A mark that begins a phrase sits on the text before it.
            let lead = !out.starts_with(MARKS) && !out.starts_with('\n');
            let before = self.tail;
            if lead && before != Tail::Start && !self.typed.is_empty() {
                out.insert(0, ' ');
            }
            edits.push(Edit::Type(out.clone()));
            if out.starts_with(MARKS)
                && let Some(last) = self.typed.last_mut()
            {
                // One phrase with the one it ends, for "scratch that".
                last.text.push_str(&out);
            } else {
                self.typed.push(Typed { text: out, before });
                if self.typed.len() > KEPT {
                    self.typed.remove(0);
                }
            }
            self.tail = tail;
        }
        edits
    }
}

/// The spoken command the words begin with, and how many words it takes.
fn command(words: &[&str]) -> Option<(usize, Spoken)> {
    SPOKEN.iter().find_map(|&(said, spoken)| {
        let n = said.split(' ').count();
        let matches = words.len() >= n
            && said.split(' ').zip(words).all(|(want, word)| core(word).eq_ignore_ascii_case(want));
        matches.then_some((n, spoken))
    })
}

/// A word without the punctuation around it.
fn core(word: &str) -> &str {
    word.trim_matches(|c: char| MARKS.contains(&c) || matches!(c, '"' | '\'' | '-'))
}

/// `word` with the capital its place calls for.
fn cased(word: &str, tail: Tail) -> String {
    let mut chars = word.chars();
    let Some(first) = chars.next() else { return String::new() };
    let rest = chars.as_str();
    match tail {
        Tail::Start | Tail::Sentence => first.to_uppercase().chain(rest.chars()).collect(),
        Tail::Mid
            if first.is_uppercase()
                && LOWER.contains(&core(word).to_lowercase().as_str())
                && !rest.chars().any(char::is_uppercase) =>
        {
            first.to_lowercase().chain(rest.chars()).collect()
        }
        Tail::Mid => word.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phrases_are_typed_one_space_apart_as_whisper_wrote_them() {
        assert_eq!(replay(&["Hello there."]), "Hello there.");
        assert_eq!(
            replay(&["I went to the shop.", "It was closed."]),
            "I went to the shop. It was closed."
        );
        assert_eq!(replay(&["", "  "]), "");
    }

    #[test]
    fn spoken_marks_replace_whispers_own() {
        assert_eq!(replay(&["Buy milk, comma, eggs, full stop."]), "Buy milk, eggs.");
        assert_eq!(replay(&["Is it raining question mark"]), "Is it raining?");
        assert_eq!(replay(&["What a day. Exclamation mark."]), "What a day!");
        assert_eq!(replay(&["Stop. Exclamation point!"]), "Stop!");
        // Said alone, the mark ends the phrase before, whose full stop goes.
        assert_eq!(replay(&["Dear John.", "Comma."]), "Dear John,");
    }

    #[test]
    fn a_sentence_begins_with_a_capital_and_goes_on_without_one() {
        assert_eq!(replay(&["hello full stop how are you"]), "Hello. How are you");
        // After a spoken comma whisper's capital on "And" goes; a name keeps its own.
        assert_eq!(replay(&["I bought bread comma", "And milk."]), "I bought bread, and milk.");
        assert_eq!(replay(&["Thanks comma", "Efren."]), "Thanks, Efren.");
        assert_eq!(replay(&["i think so"]), "I think so");
    }

    #[test]
    fn line_breaks_start_a_line_with_a_capital_and_no_space() {
        assert_eq!(
            replay(&["Shopping list, new line, eggs, new line, flour."]),
            "Shopping list\nEggs\nFlour."
        );
        assert_eq!(
            replay(&["Dear Sam,", "new paragraph", "thanks for the letter."]),
            "Dear Sam,\n\nThanks for the letter."
        );
        assert_eq!(replay(&["New line."]), "\n");
    }

    #[test]
    fn scratch_that_takes_back_the_last_phrase_or_the_words_before_it() {
        assert_eq!(replay(&["Send it today.", "Scratch that."]), "");
        assert_eq!(
            replay(&["Hello.", "Send it today.", "Scratch that.", "Send it tomorrow."]),
            "Hello. Send it tomorrow."
        );
        assert_eq!(replay(&["Buy eggs, scratch that, buy milk."]), "Buy milk.");
        assert_eq!(replay(&["One.", "Two.", "Scratch that.", "Scratch that.", "Three."]), "Three.");
        // Nothing to take back: nothing happens.
        assert_eq!(replay(&["Scratch that."]), "");
        // A mark said alone belongs to the phrase it ends: both go.
        assert_eq!(replay(&["Yes.", "Dear John.", "Comma.", "Scratch that."]), "Yes.");
    }

    #[test]
    fn commands_are_words_not_parts_of_words() {
        assert_eq!(replay(&["The comma is missing."]), "The, is missing.");
        assert_eq!(replay(&["The commas are fine."]), "The commas are fine.");
        assert_eq!(replay(&["A new-line character."]), "A new-line character.");
    }

    #[test]
    fn erases_count_characters_not_bytes() {
        let mut dictation = Phrases::default();
        assert_eq!(dictation.phrase("Ça va, Zoë?"), [Edit::Type("Ça va, Zoë?".into())]);
        assert_eq!(dictation.phrase("Scratch that."), [Edit::Erase(11)]);
    }
}
