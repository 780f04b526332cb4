//! The microphone hearing the assistant's own voice.
//!
//! Through speakers, the daemon hears every spoken reply and transcribes it like anyone else.
//! The assistant knows what it said and when ([`Echo::played`], from the voice lane), so a
//! segment heard while it spoke can be told apart: its words are the reply's words
//! ([`judge`]). Such a segment is echo: not a user turn, and no reason to stop talking. Words
//! that are not the reply's, two in a row (or a short segment of nothing but other words),
//! are a person talking over it: a barge-in, and those words are the person's turn.
//!
//! Times are the assistant's own clock: when the voice lane queued each piece, and when
//! the daemon's events arrived. Echo reaches the microphone late (the output's buffer, the
//! input's, the VAD), so each comparison looks [`LAG`] around the words' time.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How far around a segment's time the voice's words count: the output and input buffers,
/// the VAD's onset and the bus, with room to spare.
pub const LAG: Duration = Duration::from_millis(1500);

/// A speech start this soon after a piece began playing may be its echo's onset: it waits for
/// words before it counts as a person.
pub const ONSET: Duration = Duration::from_millis(900);

/// The fewest of the voice's words after a person's that are taken for its echo and cut.
const TAIL: usize = 4;

/// How long what was said is kept: longer than any segment that could overlap it.
const KEEP: Duration = Duration::from_secs(120);

/// One piece the voice played, as words, and when.
#[derive(Debug, Clone)]
struct Said {
    words: Vec<String>,
    from: Instant,
    to: Instant,
}

/// The longest the onset window grows to: past it, a person who starts speaking as a
/// sentence begins would wait too long to be heard.
const MAX_ONSET: Duration = Duration::from_millis(2500);

/// What the voice said lately, and when.
#[derive(Debug)]
pub struct Echo {
    said: VecDeque<Said>,
    /// How soon after a piece begins a speech start may be its echo's: [`ONSET`], or half
    /// again the latest echo seen start later ([`Echo::echo_began`]).
    onset: Duration,
}

impl Default for Echo {
    fn default() -> Self {
        Self { said: VecDeque::new(), onset: ONSET }
    }
}

impl Echo {
    /// A segment whose speech started `delay` after a piece began was that piece's echo:
    /// speech starting that late into a piece waits for words from now on (a device with
    /// deep buffers, a slow sound server). Returns whether the window grew.
    pub fn echo_began(&mut self, delay: Duration) -> bool {
        let wanted = (delay * 3 / 2).min(MAX_ONSET);
        let grew = wanted > self.onset;
        self.onset = self.onset.max(wanted);
        grew
    }

    /// The voice plays `text` from `from` to `to`.
    pub fn played(&mut self, text: &str, from: Instant, to: Instant) {
        while self.said.front().is_some_and(|s| to.saturating_duration_since(s.to) > KEEP) {
            self.said.pop_front();
        }
        self.said.push_back(Said { words: words(text), from, to });
    }

    /// The voice fell silent at `at`: what was queued after it was never heard.
    pub fn hushed(&mut self, at: Instant) {
        self.said.retain(|s| s.from < at);
        for said in &mut self.said {
            said.to = said.to.min(at);
        }
    }

    /// Whether the voice is audible at `at`: a piece plays, or its echo may still be arriving.
    pub fn audible(&self, at: Instant) -> bool {
        self.said.iter().any(|s| s.from <= at && at <= s.to + LAG)
    }

    /// Whether a piece began playing within [`ONSET`] (or the window echo taught,
    /// [`Echo::echo_began`]) before `at`: speech starting then may be that piece's echo.
    pub fn onset_near(&self, at: Instant) -> bool {
        self.since_onset(at).is_some_and(|since| since <= self.onset)
    }

    /// How long before `at` the latest piece began playing.
    pub fn since_onset(&self, at: Instant) -> Option<Duration> {
        self.said.iter().filter(|s| s.from <= at).map(|s| at.duration_since(s.from)).min()
    }

    /// The words the voice said between `from` and `to`, widened by [`LAG`].
    pub fn words_between(&self, from: Instant, to: Instant) -> Vec<&str> {
        let from = from.checked_sub(LAG).unwrap_or(from);
        self.said
            .iter()
            .filter(|s| s.from <= to && from <= s.to + LAG)
            .flat_map(|s| s.words.iter().map(String::as_str))
            .collect()
    }
}

/// Whether the voice said `phrase` (its words in a row, lowercase) in `said`: the wake phrase
/// heard then is its own ("…ask hey jarvis…" in a reply), not a person calling it.
pub fn says(said: &[&str], phrase: &[String]) -> bool {
    !phrase.is_empty()
        && said
            .windows(phrase.len())
            .any(|run| run.iter().zip(phrase).all(|(s, p)| same_word(s, p)))
}

/// What a segment heard while the voice spoke was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// The voice's own words (or nothing at all).
    Echo,
    /// A person: their words, the voice's own cut from the start and end.
    Person(String),
}

/// Whether `heard` is the voice's `said` words coming back, or a person's. A word counts as
/// the voice's when one of `said` is it, give or take one letter in a long word (whisper
/// mishears a little); the person's part runs from the first run of two words that are not
/// the voice's to the last word that is not, or from the start and to the end when fewer than
/// [`TAIL`] words come before or after. A `whole` segment of one or two words, none
/// the voice's, is a person too ("stop", "wait a"); the first words of one still growing
/// are not yet ("You're" for "Your meeting …").
pub fn judge(heard: &str, said: &[&str], whole: bool) -> Heard {
    let original: Vec<&str> = heard.split_whitespace().collect();
    let theirs: Vec<bool> =
        original.iter().map(|w| !said.iter().any(|s| same_word(&normal(w), s))).collect();
    let short = whole && original.len() <= 2 && theirs.iter().all(|&t| t);
    let first_run = theirs.windows(2).position(|pair| pair[0] && pair[1]);
    let start = match (first_run, short) {
        // The voice's words before theirs are cut only when there are a few, as after them.
        (Some(start), _) if start >= TAIL => start,
        (Some(_), _) | (None, true) => 0,
        (None, false) => return Heard::Echo,
    };
    let Some(mut end) = theirs.iter().rposition(|&t| t) else { return Heard::Echo };
    // The voice's words after theirs are cut only when there are a few: a person's question
    // may well end in a word the voice said ("… in Tokyo").
    if original.len() - 1 - end < TAIL {
        end = original.len() - 1;
    }
    // The voice going on after them, whisper mishearing a word of it now and then ("I cut
    // off the lights" for "I turned off"), is the voice's too: a stretch of twice [`TAIL`]
    // words or more (a question may end in a few of the voice's words, "… in the kitchen")
    // that begins with one of the voice's, has no two in a row that are not, and at most one
    // in five that is not.
    if let Some(voice) = (start + 1..original.len()).filter(|&k| !theirs[k]).find(|&k| {
        let rest = &theirs[k..];
        let odd = rest.iter().filter(|&&t| t).count();
        rest.len() >= 2 * TAIL && 5 * odd <= rest.len() && !rest.windows(2).any(|p| p[0] && p[1])
    }) {
        end = end.min(voice - 1);
    }
    Heard::Person(original[start..=end].join(" "))
}

/// Whether `words` sound like some stretch of `said` that whisper misheard: their consonants
/// ([`skeleton`]) are within one edit in three of the consonants of a stretch of `said` ("said
/// at time or" of "I set a timer for", "taken a burrow up" of "take an umbrella"). Words
/// with fewer than four consonants say too little to tell, and do not.
pub fn sounds_said(words: &str, said: &[&str]) -> bool {
    let query = skeleton(words.split_whitespace());
    let text = skeleton(said.iter().copied());
    tellable(&query) && 3 * nearest(&query, &text) <= query.len()
}

/// Whether `words` have enough sound in them to tell whether they sound like the voice: four
/// consonants or more. "taken a" at the end of a partial's agreed words may yet be "taken a
/// burrow up", which is.
pub fn enough_to_tell(words: &str) -> bool {
    tellable(&skeleton(words.split_whitespace()))
}

fn tellable(skeleton: &[u8]) -> bool {
    skeleton.len() >= 4
}

/// A rough sound of words: their consonants, lower case, a doubled one once, the letters
/// that sound alike as one (c, q → k; z → s; v → f; ph → f), and h, w, y (often silent, or
/// vowels) left out.
fn skeleton<'a>(words: impl Iterator<Item = &'a str>) -> Vec<u8> {
    let mut out: Vec<u8> = Vec::new();
    for word in words {
        let word = normal(word).replace("ph", "f").replace("gh", "");
        for c in word.bytes() {
            let c = match c {
                b'c' | b'q' => b'k',
                b'z' => b's',
                b'v' => b'f',
                b'a' | b'e' | b'i' | b'o' | b'u' | b'h' | b'w' | b'y' | b'\'' => continue,
                c if c.is_ascii_lowercase() => c,
                _ => continue,
            };
            if out.last() != Some(&c) {
                out.push(c);
            }
        }
    }
    out
}

/// The fewest edits (a letter changed, added or dropped) that make `query` some stretch of
/// `text` (Sellers' approximate search).
fn nearest(query: &[u8], text: &[u8]) -> usize {
    // Column by column over `text`: the cost of `query[..i]` ending at this point of `text`.
    let mut column: Vec<usize> = (0..=query.len()).collect();
    let mut best = query.len();
    for &t in text {
        let mut diagonal = column[0];
        column[0] = 0; // a stretch may start anywhere
        for i in 1..=query.len() {
            let next = (diagonal + usize::from(query[i - 1] != t))
                .min(column[i] + 1)
                .min(column[i - 1] + 1);
            diagonal = column[i];
            column[i] = next;
        }
        best = best.min(column[query.len()]);
    }
    best
}

/// A word as compared: lower case, letters, digits and inner apostrophes.
fn normal(word: &str) -> String {
    word.chars()
        .filter(|c| c.is_alphanumeric() || *c == '\'')
        .flat_map(char::to_lowercase)
        .collect::<String>()
        .trim_matches('\'')
        .to_owned()
}

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(normal).filter(|w| !w.is_empty()).collect()
}

/// Equal, or both of 5 letters or more and one edit apart (a letter changed, added or
/// dropped). An empty word (punctuation alone) is anyone's.
fn same_word(a: &str, b: &str) -> bool {
    if a.is_empty() || a == b {
        return true;
    }
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len().min(b.len()) < 5 || a.len().abs_diff(b.len()) > 1 {
        return false;
    }
    let (short, long) = if a.len() <= b.len() { (&a, &b) } else { (&b, &a) };
    let Some(at) = short.iter().zip(long.iter()).position(|(x, y)| x != y) else {
        return true; // one is the other with a letter added at the end
    };
    if short.len() == long.len() {
        short[at + 1..] == long[at + 1..]
    } else {
        short[at..] == long[at + 1..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wake phrase in the voice's own words is its echo, in a row and as whisper writes
    /// it; apart, or not said at all, it is not.
    #[test]
    fn the_voice_says_the_wake_phrase_only_when_its_words_hold_it_in_a_row() {
        let phrase: Vec<String> = ["hey", "jarvis"].map(String::from).to_vec();
        let said = words("You can ask, hey Jarvis, what is next.");
        let said: Vec<&str> = said.iter().map(String::as_str).collect();
        assert!(says(&said, &phrase));
        let apart = ["hey", "there", "jarvis"];
        assert!(!says(&apart, &phrase));
        assert!(!says(&["the", "kettle", "is", "on"], &phrase));
        assert!(!says(&["hey", "jarvis"], &[]));
    }

    const SAID: &str = "The kettle is on, and the tea will be ready soon. I also turned off \
                        the lights in the kitchen.";

    fn said() -> Vec<String> {
        words(SAID)
    }

    fn judged(heard: &str) -> Heard {
        let said = said();
        judge(heard, &said.iter().map(String::as_str).collect::<Vec<_>>(), true)
    }

    #[test]
    fn the_voices_own_words_are_echo_even_a_little_misheard() {
        assert_eq!(judged("The kettle is on and the tea will be ready soon."), Heard::Echo);
        assert_eq!(judged("I also turned off the light in the kitchens."), Heard::Echo);
        // One word whisper got wrong is not a person.
        assert_eq!(judged("The kettle is on and the sea will be ready soon."), Heard::Echo);
        assert_eq!(judged(""), Heard::Echo);
        assert_eq!(judged("..."), Heard::Echo);
    }

    #[test]
    fn a_person_over_the_voice_is_heard_without_the_voices_words() {
        assert_eq!(
            judged("The kettle is on and what time is it in Tokyo?"),
            Heard::Person("what time is it in Tokyo?".into())
        );
        // A word or two of theirs the voice also said, before the rest, stay theirs.
        assert_eq!(
            judged("What I didn't know I had"),
            Heard::Person("What I didn't know I had".into())
        );
        assert_eq!(judged("Stop."), Heard::Person("Stop.".into()));
        assert_eq!(judged("Wait, please"), Heard::Person("Wait, please".into()));
        // The first words of a segment still growing are not enough.
        let said = said();
        let said: Vec<&str> = said.iter().map(String::as_str).collect();
        assert_eq!(judge("Stop.", &said, false), Heard::Echo);
        assert_eq!(judge("You're", &["your", "meeting"], false), Heard::Echo);
        assert_eq!(judge("Stop it now", &said, false), Heard::Person("Stop it now".into()));
        // Their words with one of the voice's inside stay whole.
        assert_eq!(
            judged("Play some music in the bedroom now"),
            Heard::Person("Play some music in the bedroom now".into())
        );
        // The voice's words after theirs are cut, when they are a few.
        assert_eq!(
            judged("what about tomorrow the tea will be"),
            Heard::Person("what about tomorrow".into())
        );
        assert_eq!(
            judged("what time is it in the kitchen"),
            Heard::Person("what time is it in the kitchen".into())
        );
        // The voice went on after them, a word of it misheard: cut all the same.
        assert_eq!(
            judged("What time is it in Tokyo right now? I cut off the lights in the kitchen."),
            Heard::Person("What time is it in Tokyo right now?".into())
        );
    }

    #[test]
    fn words_that_sound_like_the_voice_misheard_are_told_from_a_question() {
        let said = |text: &str| words(text);
        let check = |heard: &str, text: &str| {
            let s = said(text);
            sounds_said(heard, &s.iter().map(String::as_str).collect::<Vec<_>>())
        };
        // Seen in the room test: whisper mishearing the voice.
        assert!(check("said at time or for", "I set a timer for the pasta."));
        assert!(check("taken a burrow up.", "It is raining outside, so take an umbrella."));
        assert!(check("You're meeting with the design.", "Your meeting with the design team."));
        assert!(check("taken a bralo.", "It is raining outside, so take an umbrella."));
        // Too little to tell yet: the rest of a growing segment decides.
        assert!(!enough_to_tell("taken a"));
        assert!(enough_to_tell("taken a bralo"));
        // A person's question is not near anything the voice said.
        for text in REPLIES {
            assert!(!check("What time is it in Tokyo right now?", text), "{text}");
            assert!(!check("Play some music in the bedroom", text), "{text}");
            assert!(!check("Stop.", text), "too short to tell");
        }
        assert_eq!(skeleton(["Photograph", "whizz", "checks"].into_iter()), b"ftgrfsks");
        assert_eq!(nearest(b"abc", b"xxabcxx"), 0);
        assert_eq!(nearest(b"abd", b"xxabcxx"), 1);
        assert_eq!(nearest(b"abc", b""), 3);
    }

    /// The replies of the room test (tests/it/room.rs), and more like them.
    const REPLIES: [&str; 7] = [
        "The kettle is on, and the tea will be ready soon. I turned off the lights in the kitchen.",
        "Your meeting with the design team moved to Thursday morning. Bring the new drawings.",
        "It is raining outside, so take an umbrella. The bus leaves from the corner.",
        "I set a timer for the pasta. The sauce needs another stir before it is done.",
        "The library closes early today. Your books are due back at the end of the week.",
        "It is noon in Tokyo, answer three.",
        "Here is the plan for tomorrow. You start with the design review at nine, in the big room.",
    ];

    #[test]
    fn a_word_is_the_same_give_or_take_one_letter_when_long() {
        assert!(same_word("kitchen", "kitchens"));
        assert!(same_word("lights", "light"));
        assert!(same_word("turned", "turner"));
        assert!(!same_word("tea", "sea"), "short words must match exactly");
        assert!(!same_word("kitchen", "chicken"));
        assert_eq!(normal("Tokyo?"), "tokyo");
        assert_eq!(normal("'don't'"), "don't");
    }

    #[test]
    fn what_was_said_is_found_by_when_and_a_hush_cuts_it() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut echo = Echo::default();
        echo.played("One two three.", t0, t0 + s(2));
        echo.played("Four five six.", t0 + s(2), t0 + s(4));
        echo.played("Seven eight nine.", t0 + s(10), t0 + s(12));
        assert!(echo.audible(t0 + s(1)) && echo.audible(t0 + s(5)), "the tail of the echo");
        assert!(!echo.audible(t0 + s(7)));
        assert!(echo.onset_near(t0 + Duration::from_millis(2500)));
        assert!(!echo.onset_near(t0 + Duration::from_millis(3500)));
        assert_eq!(
            echo.words_between(t0 + s(3), t0 + s(4)),
            ["one", "two", "three", "four", "five", "six"]
        );
        assert_eq!(echo.words_between(t0 + s(11), t0 + s(11)), ["seven", "eight", "nine"]);

        // Echo that started 1.2 s into a piece widens the window to 1.8 s, never past 2.5 s.
        let late = t0 + s(2) + Duration::from_millis(1500);
        assert!(!echo.onset_near(late));
        assert!(echo.echo_began(Duration::from_millis(1200)));
        assert!(echo.onset_near(late));
        assert!(!echo.echo_began(Duration::from_millis(500)), "it never shrinks");
        assert!(echo.echo_began(s(9)));
        assert!(!echo.onset_near(t0 + s(2) + Duration::from_millis(2600)));

        echo.hushed(t0 + s(3));
        assert!(!echo.audible(t0 + s(10)), "the last piece was never played");
        assert!(!echo.audible(t0 + s(5)), "the hush cut the second short");
        assert!(echo.words_between(t0 + s(11), t0 + s(12)).is_empty());
    }
}
