//! Commands without the model: what a person said, matched against sentence templates of
//! known intents ("what time is it", "set a timer for {duration}", "remind me to {text}
//! {time}"), with the values of typed slots read from the words.
//!
//! Precision comes first. A template matches a whole sentence, never part of one ("what time
//! does the bakery close" is no "what time is it"); a typed slot matches only words that
//! read whole as its kind (a duration, a moment to come); and when two intents, or two
//! readings of one, disagree about what was meant, nothing is decided: the sentence is the
//! model's ([`Decision::Unsure`]). Among readings of one intent, the one whose free-text
//! slots take the fewest words wins ("remind me to call the plumber tomorrow at nine": the
//! text is "call the plumber", the time "tomorrow at nine").
//!
//! In reading order: [`words`] (speech and templates as keys to match), [`template`] (the
//! template syntax, expanded at load), [`slot`], [`when`] and [`zone`] (the kinds of slot
//! and reading them), then [`Intents`] (a set of intents, from the built-in file [`BUILTIN`] and the
//! user's, and [`Intents::decide`]).

pub mod slot;
pub mod template;
pub mod when;
pub mod words;
pub mod zone;

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use serde::Deserialize;

pub use slot::{Kind, Value};
use template::Piece;
use words::Word;

/// The built-in intents' sentences and answers (`intents/en.toml`).
pub const BUILTIN: &str = include_str!("../intents/en.toml");

/// What is wrong with a file of intents.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntentsError {
    #[error("{origin}: {why}")]
    File { origin: String, why: String },
    #[error("{origin}: intent '{intent}': {source}")]
    Template { origin: String, intent: String, source: template::TemplateError },
}

/// One intent: its name, its sentences expanded, and the answer it is given.
#[derive(Debug, Clone)]
struct Intent {
    name: String,
    /// Each expanded sequence, with the template it came from.
    sentences: Vec<(usize, Vec<Piece>)>,
    templates: Vec<String>,
    answer: Option<String>,
}

/// A set of intents.
#[derive(Debug, Clone, Default)]
pub struct Intents {
    intents: Vec<Intent>,
}

/// A file of intents, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    intent: Vec<FileIntent>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileIntent {
    name: String,
    #[serde(default)]
    sentences: Vec<String>,
    #[serde(default)]
    answer: Option<String>,
}

/// What was said, matched.
#[derive(Debug, Clone, PartialEq)]
pub struct Match {
    pub intent: String,
    /// Each slot's value, by name.
    pub slots: BTreeMap<String, Value>,
    /// The template that matched, as written.
    pub template: String,
}

impl Match {
    /// Slot `name` as text, if it is a text slot that was filled.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.slots.get(name).and_then(Value::as_text)
    }
}

/// What [`Intents::decide`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// One intent, read one way.
    Matched(Match),
    /// No template matches: the model's.
    NoMatch,
    /// Templates of two intents match, or one reads two ways: the model's.
    Unsure(Vec<Match>),
}

impl Intents {
    /// The built-in intents.
    pub fn builtin() -> Result<Self, IntentsError> {
        Self::parse(BUILTIN, "the built-in intents")
    }

    /// The intents of a file's `text`; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self, IntentsError> {
        let file: File = toml::from_str(text)
            .map_err(|e| IntentsError::File { origin: origin.to_owned(), why: e.to_string() })?;
        let mut intents = Self::default();
        for given in file.intent {
            intents.add(&given.name, &given.sentences, given.answer.as_deref(), origin)?;
        }
        Ok(intents)
    }

    /// Adds `sentences` to intent `name` (made when it is new), and sets its `answer` when
    /// one is given.
    pub fn add(
        &mut self,
        name: &str,
        sentences: &[String],
        answer: Option<&str>,
        origin: &str,
    ) -> Result<(), IntentsError> {
        let name = name.trim();
        if name.is_empty() {
            return Err(IntentsError::File {
                origin: origin.to_owned(),
                why: "an intent without a name".into(),
            });
        }
        let at = match self.intents.iter().position(|i| i.name == name) {
            Some(at) => at,
            None => {
                self.intents.push(Intent {
                    name: name.to_owned(),
                    sentences: Vec::new(),
                    templates: Vec::new(),
                    answer: None,
                });
                self.intents.len() - 1
            }
        };
        let intent = &mut self.intents[at];
        for sentence in sentences {
            let expanded = template::expand(sentence).map_err(|source| IntentsError::Template {
                origin: origin.to_owned(),
                intent: name.to_owned(),
                source,
            })?;
            let index = intent.templates.len();
            intent.templates.push(sentence.clone());
            intent.sentences.extend(expanded.into_iter().map(|seq| (index, seq)));
        }
        if let Some(answer) = answer {
            intent.answer = Some(answer.to_owned());
        }
        Ok(())
    }

    /// Everything in `other` added to these: its sentences to intents of the same name, its
    /// answers in place of theirs.
    pub fn extend(&mut self, other: Self) {
        for intent in other.intents {
            match self.intents.iter_mut().find(|i| i.name == intent.name) {
                Some(mine) => {
                    let offset = mine.templates.len();
                    mine.templates.extend(intent.templates);
                    mine.sentences
                        .extend(intent.sentences.into_iter().map(|(i, seq)| (i + offset, seq)));
                    if intent.answer.is_some() {
                        mine.answer = intent.answer;
                    }
                }
                None => self.intents.push(intent),
            }
        }
    }

    /// The intents' names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.intents.iter().map(|i| i.name.as_str())
    }

    /// The answer intent `name` is given, as its file writes it.
    pub fn answer(&self, name: &str) -> Option<&str> {
        self.intents.iter().find(|i| i.name == name)?.answer.as_deref()
    }

    /// The slots intent `name`'s templates use, with their kinds.
    pub fn slots(&self, name: &str) -> BTreeMap<String, Kind> {
        let mut slots = BTreeMap::new();
        for intent in self.intents.iter().filter(|i| i.name == name) {
            for (_, seq) in &intent.sentences {
                for piece in seq {
                    if let Piece::Slot(name, kind) = piece {
                        slots.insert(name.clone(), *kind);
                    }
                }
            }
        }
        slots
    }

    /// What `text` asks for, read at local time `now`.
    pub fn decide(&self, text: &str, now: NaiveDateTime) -> Decision {
        let words = words::words(text);
        let words = courteous(&words);
        if words.is_empty() {
            return Decision::NoMatch;
        }
        let mut found: Vec<Match> = Vec::new();
        for intent in &self.intents {
            let mut best: Vec<Reading> = Vec::new();
            for (template, seq) in &intent.sentences {
                if let Some(Piece::Word(first)) = seq.first()
                    && *first != words[0].key
                {
                    continue;
                }
                let mut readings = Vec::new();
                read(seq, words, now, None, &mut BTreeMap::new(), 0, &mut readings);
                for (slots, text_words) in readings {
                    best.push(Reading { slots, text_words, template: *template });
                }
            }
            let Some(fewest) = best.iter().map(|r| r.text_words).min() else { continue };
            for reading in best.into_iter().filter(|r| r.text_words == fewest) {
                if !found.iter().any(|m| m.intent == intent.name && m.slots == reading.slots) {
                    found.push(Match {
                        intent: intent.name.clone(),
                        slots: reading.slots,
                        template: intent.templates[reading.template].clone(),
                    });
                }
            }
        }
        match found.len() {
            0 => Decision::NoMatch,
            1 => Decision::Matched(found.remove(0)),
            _ => Decision::Unsure(found),
        }
    }
}

/// Said before a command, and dropped before matching ("hey, could you please …").
const BEFORE: [&[&str]; 16] = [
    &["please"],
    &["hey"],
    &["ok"],
    &["okay"],
    &["so"],
    &["um"],
    &["uh"],
    &["hi"],
    &["oh"],
    &["and"],
    &["can", "you"],
    &["could", "you"],
    &["would", "you"],
    &["will", "you"],
    &["i", "want", "you", "to"],
    &["i", "need", "you", "to"],
];

/// Said after a command, and dropped before matching.
const AFTER: [&[&str]; 5] =
    [&["please"], &["thanks"], &["thank", "you"], &["now", "please"], &["ok"]];

/// `words` without the courtesies around the command.
fn courteous(words: &[Word]) -> &[Word] {
    let starts = |words: &[Word], phrase: &[&str]| {
        words.len() > phrase.len() && phrase.iter().zip(words).all(|(p, w)| w.key == *p)
    };
    let ends = |words: &[Word], phrase: &[&str]| {
        words.len() > phrase.len()
            && phrase.iter().rev().zip(words.iter().rev()).all(|(p, w)| w.key == *p)
    };
    let mut words = words;
    while let Some(phrase) = BEFORE.iter().find(|p| starts(words, p)) {
        words = &words[phrase.len()..];
    }
    while let Some(phrase) = AFTER.iter().find(|p| ends(words, p)) {
        words = &words[..words.len() - phrase.len()];
    }
    words
}

/// The moment to come that `text` names, read at local time `now`: the longest run of its
/// words that reads as one ("remind me to call the plumber tomorrow at nine" → tomorrow
/// 09:00), when every run that long reads the same; `None` when it names none, or two.
pub fn moment_in(text: &str, now: NaiveDateTime) -> Option<NaiveDateTime> {
    let words = words::words(text);
    let keys: Vec<&str> = words.iter().map(|w| w.key.as_str()).collect();
    for len in (1..=keys.len().min(8)).rev() {
        let found: Vec<NaiveDateTime> =
            keys.windows(len).filter_map(|run| when::moment(run, now)).collect();
        if let Some(first) = found.first() {
            return found.iter().all(|m| m == first).then_some(*first);
        }
    }
    None
}

/// `answer` with each `{name}` replaced by its value in `values`; a `[…]` part is left out
/// when a value it names is empty or missing. Braces that name no value stay as written.
pub fn fill(answer: &str, values: &[(&str, &str)]) -> String {
    let value = |name: &str| values.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
    let put = |part: &str| -> Option<String> {
        let mut out = String::new();
        let mut rest = part;
        let mut all = true;
        while let Some(open) = rest.find('{') {
            let Some(close) = rest[open..].find('}').map(|c| open + c) else { break };
            out.push_str(&rest[..open]);
            let name = &rest[open + 1..close];
            match value(name) {
                Some(v) if !v.is_empty() => out.push_str(v),
                Some(_) => all = false,
                None if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => all = false,
                None => out.push_str(&rest[open..=close]),
            }
            rest = &rest[close + 1..];
        }
        out.push_str(rest);
        all.then_some(out)
    };
    let mut out = String::new();
    let mut rest = answer;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find(']').map(|c| open + c) else { break };
        out.push_str(&put(&rest[..open]).unwrap_or_else(|| blanked(&rest[..open], &value)));
        out.push_str(&put(&rest[open + 1..close]).unwrap_or_default());
        rest = &rest[close + 1..];
    }
    out.push_str(&put(rest).unwrap_or_else(|| blanked(rest, &value)));
    out
}

/// `part` with every value it names put in, empty ones as nothing.
fn blanked<'a>(part: &str, value: &impl Fn(&str) -> Option<&'a str>) -> String {
    let mut out = String::new();
    let mut rest = part;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|c| open + c) else { break };
        out.push_str(&rest[..open]);
        out.push_str(value(&rest[open + 1..close]).unwrap_or_default());
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// One way a sequence reads what was said.
#[derive(Debug)]
struct Reading {
    slots: BTreeMap<String, Value>,
    /// Words taken by free-text slots.
    text_words: usize,
    template: usize,
}

/// Every way `seq` reads all of `words`, as (slots, words taken by text slots); `before`:
/// the kind of the slot just before, when a slot was.
fn read(
    seq: &[Piece],
    words: &[Word],
    now: NaiveDateTime,
    before: Option<Kind>,
    slots: &mut BTreeMap<String, Value>,
    text_words: usize,
    out: &mut Vec<(BTreeMap<String, Value>, usize)>,
) {
    let Some((piece, rest)) = seq.split_first() else {
        if words.is_empty() {
            out.push((slots.clone(), text_words));
        }
        return;
    };
    match piece {
        Piece::Word(key) => {
            if words.first().is_some_and(|w| w.key == *key) {
                read(rest, &words[1..], now, None, slots, text_words, out);
            }
        }
        Piece::Slot(name, kind) => {
            // The words the rest of the sequence needs at least.
            let needed = rest.iter().filter(|p| matches!(p, Piece::Word(_))).count();
            let most = words.len().saturating_sub(needed);
            let after = match rest.first() {
                Some(Piece::Slot(_, kind)) => Some(*kind),
                _ => None,
            };
            for take in 1..=most {
                let taken = &words[..take];
                if *kind == Kind::Text && !text_beside(taken, before, after) {
                    continue;
                }
                let Some(value) = Value::read(*kind, taken, now) else { continue };
                let taken = if *kind == Kind::Text { take } else { 0 };
                let earlier = slots.insert(name.clone(), value);
                read(rest, &words[take..], now, Some(*kind), slots, text_words + taken, out);
                match earlier {
                    Some(earlier) => slots.insert(name.clone(), earlier),
                    None => slots.remove(name),
                };
            }
        }
    }
}

/// Whether a text slot's `words` may stand next to the typed slots `before` and `after` it:
/// not when a word of time, or a preposition that belongs to the time, sits at the edge they
/// share. "remind me to call the plumber yesterday at nine" is no reminder at nine to "call
/// the plumber yesterday", nor to "call the plumber yesterday at".
fn text_beside(words: &[Word], before: Option<Kind>, after: Option<Kind>) -> bool {
    let timed = |kind: Option<Kind>| {
        matches!(kind, Some(Kind::Time | Kind::Date | Kind::Duration | Kind::Number))
    };
    let of_time = |word: Option<&Word>| {
        word.is_some_and(|w| {
            when::of_time(&w.key) || ["at", "on", "in", "by"].contains(&w.key.as_str())
        })
    };
    !(timed(before) && of_time(words.first()) || timed(after) && of_time(words.last()))
}

#[cfg(test)]
mod tests;
