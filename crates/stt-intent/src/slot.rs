//! The kinds of value a slot takes, and reading one from the words that fill it.

use chrono::{NaiveDate, NaiveDateTime};

use crate::when;
use crate::words::{Word, said};

/// What a slot takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A number: digits or words ("ten", "1.5").
    Number,
    /// A length of time: "ten minutes", "an hour and a half", "90 seconds".
    Duration,
    /// A moment to come: "at nine", "tomorrow at 9 am", "in 10 minutes", "on Friday".
    Time,
    /// A day: "today", "tomorrow", "on Friday", "December 12th".
    Date,
    /// Another place's time zone: a city a zone is named after ("Tokyo", "New York") or
    /// a zone's name ([`crate::zone::find`]).
    Zone,
    /// Any words, as said.
    Text,
}

impl Kind {
    /// The kinds' names, for an error.
    pub const NAMES: &str = "number, duration, time, date, zone or text";

    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "number" => Self::Number,
            "duration" => Self::Duration,
            "time" => Self::Time,
            "date" => Self::Date,
            "zone" => Self::Zone,
            "text" => Self::Text,
            _ => return None,
        })
    }

    /// The kind a slot written without one takes: its name when that names a kind, else text.
    pub fn of_name(name: &str) -> Self {
        Self::parse(name).unwrap_or(Self::Text)
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Number => "number",
            Self::Duration => "duration",
            Self::Time => "time",
            Self::Date => "date",
            Self::Zone => "zone",
            Self::Text => "text",
        }
    }
}

/// A slot's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Number(f64),
    /// Seconds.
    Duration(f64),
    /// A local date and time to come.
    Time(NaiveDateTime),
    Date(NaiveDate),
    Zone(chrono_tz::Tz),
    Text(String),
}

/// Words that are no text alone: a text slot of only these ("set a timer": the label "a")
/// reads nothing.
const FILLER: [&str; 14] =
    ["a", "an", "the", "my", "your", "this", "that", "it", "me", "some", "to", "for", "and", "of"];

/// Longest run of words a typed slot (not text) reads.
const TYPED_WORDS: usize = 8;
/// Longest run of words a text slot takes.
pub const TEXT_WORDS: usize = 16;

impl Value {
    /// Reads `words` whole as a value of `kind`, at local time `now`; `None` when they are
    /// not one.
    pub fn read(kind: Kind, words: &[Word], now: NaiveDateTime) -> Option<Self> {
        if words.is_empty() || (kind != Kind::Text && words.len() > TYPED_WORDS) {
            return None;
        }
        let keys: Vec<&str> = words.iter().map(|w| w.key.as_str()).collect();
        match kind {
            Kind::Number => when::number(&keys).map(Value::Number),
            Kind::Duration => when::duration(&keys).map(Value::Duration),
            Kind::Time => when::moment(&keys, now).map(Value::Time),
            Kind::Date => when::date(&keys, now.date()).map(Value::Date),
            Kind::Zone => crate::zone::find(&said(words)).map(Value::Zone),
            Kind::Text => {
                let text = said(words);
                let meaningful = keys.iter().any(|k| !FILLER.contains(k));
                (words.len() <= TEXT_WORDS && meaningful && !text.is_empty())
                    .then_some(Value::Text(text))
            }
        }
    }

    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(t) => Some(t),
            _ => None,
        }
    }
}
