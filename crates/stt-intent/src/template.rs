//! Sentence templates: words, `(a|b)` alternatives, `[optional words]`, `{slot}` and
//! `{slot:kind}`. A template is expanded once, at load, into every sequence of words and
//! slots it allows; its words go through [`crate::words`] as speech does.

use crate::slot::Kind;
use crate::words::words;

/// One piece of an expanded template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// A word, as [`crate::words::Word::key`].
    Word(String),
    /// A slot: its name and the kind of value it takes.
    Slot(String, Kind),
}

/// A template cannot expand to more sequences than this: a typo of nested groups would
/// otherwise cost memory and time at every match.
pub const MAX_EXPANSIONS: usize = 4096;

/// What is wrong with a template.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("template \"{template}\": {why}")]
pub struct TemplateError {
    pub template: String,
    pub why: String,
}

/// Every sequence `template` allows.
pub fn expand(template: &str) -> Result<Vec<Vec<Piece>>, TemplateError> {
    let fail = |why: String| TemplateError { template: template.to_owned(), why };
    let mut parser = Parser { chars: template.chars().collect(), at: 0 };
    let seqs = parser.sequence(None).map_err(fail)?;
    if parser.at < parser.chars.len() {
        return Err(fail(format!("unexpected '{}'", parser.chars[parser.at])));
    }
    let seqs: Vec<Vec<Piece>> = seqs.into_iter().filter(|s| !s.is_empty()).collect();
    if seqs.is_empty() {
        return Err(fail("it has no words".into()));
    }
    Ok(seqs)
}

struct Parser {
    chars: Vec<char>,
    at: usize,
}

impl Parser {
    /// Pieces until `end` (or the end of the template); `|` ends one alternative.
    fn sequence(&mut self, end: Option<char>) -> Result<Vec<Vec<Piece>>, String> {
        let mut alternatives: Vec<Vec<Vec<Piece>>> = Vec::new();
        let mut current: Vec<Vec<Piece>> = vec![Vec::new()];
        let mut text = String::new();
        loop {
            let c = self.chars.get(self.at).copied();
            match c {
                None => {
                    if let Some(end) = end {
                        return Err(format!("'{end}' is missing"));
                    }
                    break;
                }
                Some(c) if Some(c) == end => {
                    self.at += 1;
                    break;
                }
                Some('|') if end.is_some() => {
                    self.at += 1;
                    current = then(current, literal(&std::mem::take(&mut text)))?;
                    alternatives.push(std::mem::replace(&mut current, vec![Vec::new()]));
                }
                Some(open @ ('(' | '[')) => {
                    self.at += 1;
                    current = then(current, literal(&std::mem::take(&mut text)))?;
                    let close = if open == '(' { ')' } else { ']' };
                    let mut inner = self.sequence(Some(close))?;
                    if open == '[' {
                        inner.push(Vec::new());
                    }
                    current = then(current, inner)?;
                }
                Some('{') => {
                    self.at += 1;
                    current = then(current, literal(&std::mem::take(&mut text)))?;
                    let slot = self.slot()?;
                    current = then(current, vec![vec![slot]])?;
                }
                Some(c @ (')' | ']' | '}' | '|')) => return Err(format!("unexpected '{c}'")),
                Some(c) => {
                    self.at += 1;
                    text.push(c);
                }
            }
        }
        current = then(current, literal(&text))?;
        alternatives.push(current);
        let all: Vec<Vec<Piece>> = alternatives.into_iter().flatten().collect();
        if all.len() > MAX_EXPANSIONS {
            return Err(format!("it allows more than {MAX_EXPANSIONS} sentences: split it"));
        }
        Ok(all)
    }

    fn slot(&mut self) -> Result<Piece, String> {
        let start = self.at;
        while self.chars.get(self.at).is_some_and(|&c| c != '}') {
            self.at += 1;
        }
        if self.at == self.chars.len() {
            return Err("'}' is missing".into());
        }
        let inside: String = self.chars[start..self.at].iter().collect();
        self.at += 1;
        let (name, kind) = match inside.split_once(':') {
            Some((name, kind)) => {
                let kind = Kind::parse(kind.trim()).ok_or_else(|| {
                    format!("slot {{{inside}}}: no kind '{}' ({})", kind.trim(), Kind::NAMES)
                })?;
                (name.trim(), kind)
            }
            None => (inside.trim(), Kind::of_name(inside.trim())),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("slot {{{inside}}}: a name is letters, digits and _"));
        }
        Ok(Piece::Slot(name.to_owned(), kind))
    }
}

/// The words of `text` as one sequence.
fn literal(text: &str) -> Vec<Vec<Piece>> {
    vec![words(text).into_iter().map(|w| Piece::Word(w.key)).collect()]
}

/// Every sequence of `before` followed by every one of `after`.
fn then(before: Vec<Vec<Piece>>, after: Vec<Vec<Piece>>) -> Result<Vec<Vec<Piece>>, String> {
    if before.len().saturating_mul(after.len()) > MAX_EXPANSIONS {
        return Err(format!("it allows more than {MAX_EXPANSIONS} sentences: split it"));
    }
    Ok(before
        .iter()
        .flat_map(|b| after.iter().map(move |a| b.iter().chain(a).cloned().collect()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(template: &str) -> Vec<String> {
        let mut shown: Vec<String> = expand(template)
            .unwrap_or_else(|e| panic!("{e}"))
            .iter()
            .map(|seq| {
                seq.iter()
                    .map(|p| match p {
                        Piece::Word(w) => w.clone(),
                        Piece::Slot(name, kind) => format!("{{{name}:{}}}", kind.name()),
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        shown.sort();
        shown
    }

    #[test]
    fn alternatives_options_and_slots_expand() {
        assert_eq!(shown("what time is it"), ["what time is it"]);
        assert_eq!(shown("what's the time [now]"), ["what is the time", "what is the time now"]);
        assert_eq!(shown("(set|start) a timer"), ["set a timer", "start a timer"]);
        assert_eq!(
            shown("set a timer for {duration} [(called|named) {label}]"),
            [
                "set a timer for {duration:duration}",
                "set a timer for {duration:duration} called {label:text}",
                "set a timer for {duration:duration} named {label:text}",
            ]
        );
        assert_eq!(shown("[a|the] {n:number}"), ["a {n:number}", "the {n:number}", "{n:number}"]);
        assert_eq!(
            shown("(turn|switch) (on|off)"),
            ["switch off", "switch on", "turn off", "turn on"]
        );
        assert_eq!(shown("in ten minutes"), ["in 10 minutes"]);
    }

    #[test]
    fn a_broken_template_says_what_is_wrong() {
        let why = |t: &str| expand(t).err().map(|e| e.why).unwrap_or_default();
        assert_eq!(why("(set|start a timer"), "')' is missing");
        assert_eq!(why("set] a timer"), "unexpected ']'");
        assert_eq!(why("{label"), "'}' is missing");
        assert!(why("{when:someday}").starts_with("slot {when:someday}: no kind 'someday'"));
        assert_eq!(why("{bad name}"), "slot {bad name}: a name is letters, digits and _");
        assert_eq!(why("[]"), "it has no words");
        assert!(
            why("(a|b|c|d) (a|b|c|d) (a|b|c|d) (a|b|c|d) (a|b|c|d) (a|b|c|d) (a|b|c)")
                .contains("more than")
        );
    }
}
