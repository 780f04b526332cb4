//! Turning the text of `config.toml` into a [`Config`], with errors that point at a line.
//!
//! The text is parsed twice: once into toml's spanned document tree, which knows where every key
//! and value sits, and once through serde into [`Config`]. A serde error carries only a byte
//! span, so the spanned tree is searched for the key whose span holds it; that gives both the
//! dotted key path and the line for the message.

use std::ops::Range;
use std::path::Path;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::error::ConfigError;
use crate::key::{KeyPath, Seg};
use crate::sections::Config;
use crate::validate;

/// Parses and validates `text`, naming `origin` in errors.
pub(crate) fn parse(text: &str, origin: &Path) -> Result<Config, ConfigError> {
    let doc = DeTable::parse(text).map_err(|e| syntax_error(&e, text, origin))?;
    let config: Config =
        toml::from_str(text).map_err(|e| serde_error(&e, text, doc.get_ref(), origin))?;
    validate::check(&config).map_err(|problem| {
        let line = std::iter::once(&problem.key)
            .chain(&problem.also)
            .find_map(|key| locate(doc.get_ref(), key))
            .map(|span| line_of(text, span.start));
        ConfigError::Invalid {
            path: origin.to_owned(),
            line,
            key: problem.key.to_string(),
            message: problem.message,
        }
    })?;
    Ok(config)
}

/// 1-based line number of byte offset `pos`.
fn line_of(text: &str, pos: usize) -> usize {
    let end = pos.min(text.len());
    text.as_bytes()[..end].iter().filter(|&&b| b == b'\n').count() + 1
}

/// Maps a TOML syntax error to an error naming the line, and the key when the parser got far
/// enough to know it (a duplicate key, say).
fn syntax_error(err: &toml::de::Error, text: &str, origin: &Path) -> ConfigError {
    let path = origin.to_owned();
    let message = err.message().trim_end().to_owned();
    let Some(span) = err.span() else {
        return ConfigError::Syntax { path, line: None, message };
    };
    let line = Some(line_of(text, span.start));
    if message == "duplicate key" {
        // The span is the repeated key as written; the recovered tree holds only the first.
        let written = text.get(span).unwrap_or_default();
        let message = format!(
            "duplicate key '{written}': a key may appear once per table, so \
                               remove or merge the repeat"
        );
        return ConfigError::Syntax { path, line, message };
    }
    let (partial, _) = DeTable::parse_recoverable(text);
    let key = key_at(partial.get_ref(), &span);
    if key.0.is_empty() {
        return ConfigError::Syntax { path, line, message };
    }
    ConfigError::BadValue { path, line, key: key.to_string(), message }
}

/// Maps a serde error from deserializing [`Config`] to an error naming the key and line.
fn serde_error(err: &toml::de::Error, text: &str, doc: &DeTable<'_>, origin: &Path) -> ConfigError {
    let path = origin.to_owned();
    let message = err.message().trim_end();
    let Some(span) = err.span() else {
        return ConfigError::Syntax { path, line: None, message: message.to_owned() };
    };
    let line = Some(line_of(text, span.start));
    let key = key_at(doc, &span);
    if key.0.is_empty() {
        return ConfigError::Syntax { path, line, message: message.to_owned() };
    }

    if let Some(rest) = message.strip_prefix("unknown field `") {
        let (written, rest) = rest.split_once('`').unwrap_or((rest, ""));
        let expected = backticked(rest);
        let suggestion = closest(written, &expected).map(str::to_owned);
        let expected =
            if expected.is_empty() { "no keys here".to_owned() } else { expected.join(", ") };
        return ConfigError::UnknownKey { path, line, key: key.to_string(), expected, suggestion };
    }

    let mut key = key;
    let message = match message.strip_prefix("missing field `").and_then(|m| m.split_once('`')) {
        Some((field, _)) => {
            key = key.key(field);
            "required key is missing".to_owned()
        }
        // "expected struct DaemonConfig" names a Rust type the user never sees.
        None => match message.split_once(", expected struct ") {
            Some((head, _)) => format!("{head}, expected a table"),
            None => message.to_owned(),
        },
    };
    ConfigError::BadValue { path, line, key: key.to_string(), message }
}

/// The words between backticks in serde's "expected one of `a`, `b`" lists.
fn backticked(s: &str) -> Vec<&str> {
    s.split('`').skip(1).step_by(2).collect()
}

/// The candidate closest to `written`, if it is a plausible typo of it.
fn closest<'a>(written: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let limit = (written.chars().count() / 3).max(2);
    candidates
        .iter()
        .map(|c| (strsim::levenshtein(written, c), *c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// The key path whose key or value span best matches `span`: an exact match first, then the
/// smallest span holding its start, then the deepest.
fn key_at(doc: &DeTable<'_>, span: &Range<usize>) -> KeyPath {
    /// Exact match, then shorter span (reversed so that greater is better), then depth.
    type Score = (bool, std::cmp::Reverse<usize>, usize);
    let mut best: Option<(Score, KeyPath)> = None;
    let mut consider = |candidate: &Range<usize>, path: &KeyPath| {
        let holds = candidate.start <= span.start
            && (span.start < candidate.end || candidate.start == candidate.end);
        if !holds {
            return;
        }
        let score =
            (candidate == span, std::cmp::Reverse(candidate.end - candidate.start), path.0.len());
        if best.as_ref().is_none_or(|(b, _)| score >= *b) {
            best = Some((score, path.clone()));
        }
    };
    walk_table(doc, &KeyPath::default(), &mut consider);
    best.map(|(_, path)| path).unwrap_or_default()
}

fn walk_table(table: &DeTable<'_>, at: &KeyPath, visit: &mut impl FnMut(&Range<usize>, &KeyPath)) {
    for (key, value) in table {
        let path = at.key(key.get_ref());
        visit(&key.span(), &path);
        walk_value(value, &path, visit);
    }
}

fn walk_value(
    value: &Spanned<DeValue<'_>>,
    at: &KeyPath,
    visit: &mut impl FnMut(&Range<usize>, &KeyPath),
) {
    visit(&value.span(), at);
    match value.get_ref() {
        DeValue::Table(table) => walk_table(table, at, visit),
        DeValue::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk_value(item, &at.index(i), visit);
            }
        }
        _ => {}
    }
}

/// The span of the value at `path`, if the document sets it.
fn locate(doc: &DeTable<'_>, path: &KeyPath) -> Option<Range<usize>> {
    let mut segs = path.0.iter();
    let Some(Seg::Key(first)) = segs.next() else { return None };
    let mut value = doc.iter().find(|(k, _)| k.get_ref() == first).map(|(_, v)| v)?;
    for seg in segs {
        value = match (seg, value.get_ref()) {
            (Seg::Key(key), DeValue::Table(table)) => {
                table.iter().find(|(k, _)| k.get_ref() == key).map(|(_, v)| v)?
            }
            (Seg::Index(index), DeValue::Array(items)) => items.get(*index)?,
            _ => return None,
        };
    }
    Some(value.span())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_path_display_quotes_keys_that_are_not_bare() {
        let path = KeyPath::new("tools", "command").index(2).key("parameters").key("a.b");
        assert_eq!(path.to_string(), r#"tools.command[2].parameters."a.b""#);
    }

    #[test]
    fn closest_ignores_far_candidates() {
        assert_eq!(closest("requir_viewer", &["socket", "require_viewer"]), Some("require_viewer"));
        assert_eq!(closest("colour", &["socket", "audit"]), None);
    }

    #[test]
    fn line_of_counts_newlines_before_the_offset() {
        assert_eq!(line_of("a\nb\nc", 0), 1);
        assert_eq!(line_of("a\nb\nc", 2), 2);
        assert_eq!(line_of("a\nb\nc", 99), 3);
    }
}
