//! A spoken turn without a key (`[wake]`): the wake phrase arms a command, the turn's end runs
//! it, a spoken yes or no answers a tool call waiting for one, and for a little while after the
//! answer the next command needs no name.
//!
//! Plain data and pure functions, which [`crate::core::Core`] drives: what [`Stage`] a spoken
//! turn is at, when it gives up waiting ([`Stage::deadline`]), the wake phrase taken off the
//! words it was said with ([`without_phrase`]), and a yes or a no read from what was said
//! ([`answer`]). Silence is never a yes: a call nobody answers times out as it does at the
//! keyboard, denied.

use std::time::{Duration, Instant};

/// How a spoken turn goes (`[wake]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flow {
    /// The wake phrase's words (lowercase, no punctuation), to take off the command's first
    /// words: "hey jarvis what time is it" runs "what time is it".
    pub phrase: Vec<String>,
    /// How long after the name words may take to come before it gives up.
    pub wait: Duration,
    /// After the answer, how long the next command needs no name; zero: none.
    pub follow_up: Duration,
    /// Only this named speaker's spoken commands run; `None`: anyone's.
    pub only: Option<String>,
    /// The phrase starts a chat, not a command.
    pub chat: bool,
}

impl Flow {
    /// The flow for the phrase `phrase` (as said: "Hey Jarvis").
    pub fn new(phrase: &str, wait: Duration, follow_up: Duration) -> Self {
        Self { phrase: words(phrase), wait, follow_up, only: None, chat: false }
    }

    /// The phrase starts a chat (left after `follow_up` of quiet after a reply).
    pub fn chat(mut self, chat: bool) -> Self {
        self.chat = chat;
        self
    }

    /// Only `name`'s spoken commands run.
    pub fn only(mut self, name: &str) -> Self {
        self.only = Some(name.trim().to_owned()).filter(|n| !n.is_empty());
        self
    }

    /// Whether a turn said by `speaker` (a named speaker, or `None`: not known by name) may run.
    pub fn may_run(&self, speaker: Option<&str>) -> bool {
        self.only
            .as_deref()
            .is_none_or(|only| speaker.is_some_and(|s| s.eq_ignore_ascii_case(only)))
    }
}

/// Where a spoken turn is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Armed by the name at `since`; `strip`: the phrase is still to be taken off the first
    /// words heard.
    Named { since: Instant, strip: bool },
    /// The command runs; a tool call may wait for a spoken yes or no.
    Running,
    /// The answer was given: the next command needs no name until `until`.
    FollowUp { until: Instant },
}

impl Stage {
    /// When it gives up waiting for words, as `flow` says.
    pub fn deadline(self, flow: &Flow) -> Option<Instant> {
        match self {
            Stage::Named { since, .. } => Some(since + flow.wait),
            Stage::Running => None,
            Stage::FollowUp { until } => Some(until),
        }
    }
}

/// Words that end a follow-up without running anything.
const ENOUGH: [&str; 8] =
    ["stop", "cancel", "never mind", "nevermind", "nothing", "that's all", "thats all", "no"];

/// Words taken for a yes to a tool call waiting for one.
const YES: [&str; 10] =
    ["yes", "yeah", "yep", "sure", "ok", "okay", "do it", "go ahead", "confirm", "please do"];

/// Words taken for a no.
const NO: [&str; 9] =
    ["no", "nope", "don't", "do not", "cancel", "stop", "deny", "never mind", "wait"];

/// `text` as lowercase words without punctuation ("Hey, Jarvis!" → ["hey", "jarvis"]; "okay"
/// is "ok", as whisper writes either).
pub fn words(text: &str) -> Vec<String> {
    text.split_whitespace()
        .map(|w| {
            let w: String = w.chars().filter(|c| c.is_alphanumeric() || *c == '\'').collect();
            let w = w.to_lowercase();
            if w == "okay" { "ok".to_owned() } else { w }
        })
        .filter(|w| !w.is_empty())
        .collect()
}

/// Whether `heard` is `word` as whisper writes a name now and then: the same, or one letter
/// off in a word of four letters or more ("jervis" for "jarvis").
fn sounds_like(heard: &str, word: &str) -> bool {
    if heard == word {
        return true;
    }
    let (a, b): (Vec<char>, Vec<char>) = (heard.chars().collect(), word.chars().collect());
    if b.len() < 4 || a.len().abs_diff(b.len()) > 1 {
        return false;
    }
    // One substitution, insertion or deletion at most.
    let (mut i, mut j, mut edits) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        if a[i] == b[j] {
            i += 1;
            j += 1;
            continue;
        }
        edits += 1;
        if edits > 1 {
            return false;
        }
        match a.len().cmp(&b.len()) {
            std::cmp::Ordering::Greater => i += 1,
            std::cmp::Ordering::Less => j += 1,
            std::cmp::Ordering::Equal => {
                i += 1;
                j += 1;
            }
        }
    }
    edits + (a.len() - i) + (b.len() - j) <= 1
}

/// `text` without the wake `phrase` it begins with: the first words up to the phrase's last
/// word (heard as [`sounds_like`] it, within the phrase's length and one more), when each of
/// them is one of the phrase's (the very word, when only part of the phrase is there) and at
/// least half the phrase's words are ("Hey, Jarvis.
/// What time is it?" → "What time is it?"; "Jarvis, what time is it" too). Text that does not
/// begin with the phrase ("Tell Jarvis hello") is kept as it is.
pub fn without_phrase(text: &str, phrase: &[String]) -> String {
    let Some(last) = phrase.last() else { return text.trim().to_owned() };
    let said: Vec<&str> = text.split_whitespace().collect();
    let plain: Vec<String> = said.iter().map(|w| words(w).concat()).collect();
    let reach = (phrase.len() + 1).min(plain.len());
    let Some(end) = (0..reach).find(|&i| sounds_like(&plain[i], last)) else {
        return text.trim().to_owned();
    };
    // Part of the phrase ("Jarvis, …" for "hey jarvis") only as its very words: "Computers
    // are fun" does not begin with "OK computer".
    let whole = end + 1 >= phrase.len();
    let named = |w: &String| phrase.iter().any(|p| if whole { sounds_like(w, p) } else { w == p });
    if !plain[..=end].iter().all(named) || (end + 1) * 2 < phrase.len() {
        return text.trim().to_owned();
    }
    let rest = said[end + 1..].join(" ");
    // "What" after "Jarvis," keeps its capital; a comma or dash left in front goes.
    rest.trim_start_matches(|c: char| c == ',' || c == '-' || c == '.' || c.is_whitespace())
        .to_owned()
}

/// Whether `said` is `phrase`, whole or as its first words ("no thank you" is "no").
fn begins_with(said: &[String], phrase: &str) -> bool {
    let phrase = words(phrase);
    said.len() >= phrase.len() && said[..phrase.len()] == phrase[..]
}

/// Words of thanks after a "stop" that leave it a "stop".
const THANKS: [&str; 4] = ["thanks", "thank", "you", "please"];

/// Whether what was said in a follow-up ends it: "stop", "never mind", "that's all, thanks";
/// the whole of it ("stop the timer" is a command).
pub fn is_enough(text: &str) -> bool {
    let mut said = words(text);
    while said.last().is_some_and(|w| THANKS.contains(&w.as_str())) {
        said.pop();
    }
    ENOUGH.iter().any(|p| words(p) == said)
}

/// A spoken answer to a tool call waiting for one: `Some(true)` for a yes, `Some(false)` for
/// a no, `None` for anything else (a short answer only: "yes, but first…" is not read as one).
pub fn answer(text: &str) -> Option<bool> {
    let said = words(text);
    if said.is_empty() || said.len() > 4 {
        return None;
    }
    // A no first: "no, don't do it" holds both.
    if NO.iter().any(|p| begins_with(&said, p)) {
        return Some(false);
    }
    YES.iter().any(|p| begins_with(&said, p)).then_some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phrase(text: &str) -> Vec<String> {
        words(text)
    }

    /// The name as whisper writes it, with the command said in the same breath, and text that
    /// only looks like it.
    #[test]
    fn the_phrase_is_taken_off_the_words_it_was_said_with() {
        let jarvis = phrase("Hey Jarvis");
        for (heard, command) in [
            ("Hey Jarvis, what time is it?", "what time is it?"),
            ("Hey, Jarvis. What time is it?", "What time is it?"),
            ("hey jervis set a timer for ten minutes", "set a timer for ten minutes"),
            ("Jarvis, what's the weather?", "what's the weather?"),
            ("Hey Jarvis.", ""),
            ("Hey Jarvis", ""),
            // Not the phrase: kept whole.
            ("What time is it?", "What time is it?"),
            ("Hey, what time is it?", "Hey, what time is it?"),
            ("Tell Jarvis hello", "Tell Jarvis hello"),
        ] {
            assert_eq!(without_phrase(heard, &jarvis), command, "{heard}");
        }
        let computer = phrase("OK computer");
        assert_eq!(without_phrase("Okay, computer, stop the timer", &computer), "stop the timer");
        assert_eq!(without_phrase("Computers are fun", &computer), "Computers are fun");
        assert_eq!(without_phrase(" words ", &[]), "words");
    }

    #[test]
    fn a_short_yes_or_no_answers_and_anything_else_does_not() {
        for yes in ["Yes.", "yeah", "Yes, please.", "OK", "Go ahead.", "do it"] {
            assert_eq!(answer(yes), Some(true), "{yes}");
        }
        for no in ["No.", "no thanks", "Don't.", "Cancel", "Stop!", "never mind", "No, yes"] {
            assert_eq!(answer(no), Some(false), "{no}");
        }
        for neither in ["", "maybe", "yes but first tell me what it does", "what time is it"] {
            assert_eq!(answer(neither), None, "{neither}");
        }
    }

    #[test]
    fn a_follow_up_ends_with_stop_or_never_mind() {
        for enough in ["Stop.", "Never mind.", "That's all, thanks.", "cancel", "No thanks."] {
            assert!(is_enough(enough), "{enough}");
        }
        for more in ["stop the timer", "what about tomorrow", "cancel the pasta timer", "thanks"] {
            assert!(!is_enough(more), "{more}");
        }
    }

    #[test]
    fn each_stage_gives_up_when_the_flow_says() {
        let now = Instant::now();
        let flow = Flow::new("hey jarvis", Duration::from_secs(8), Duration::from_secs(5));
        assert_eq!(flow.phrase, ["hey", "jarvis"]);
        let named = Stage::Named { since: now, strip: true };
        assert_eq!(named.deadline(&flow), Some(now + Duration::from_secs(8)));
        assert_eq!(Stage::Running.deadline(&flow), None);
        let until = now + Duration::from_secs(5);
        assert_eq!(Stage::FollowUp { until }.deadline(&flow), Some(until));
    }
}
