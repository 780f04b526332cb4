//! docs/PROTOCOL.md must match the code: every ```json line in the three message sections
//! parses as a message of its section's family and re-encodes to the same JSON, every type of
//! each family has a `### `type`` subsection with at least one example, and the error code
//! table lists every `ErrorCode`.

// Test helpers outside #[test] functions may panic: a panic is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use stt_proto::{AssistantEvent, DaemonEvent, ErrorCode, Message, Request, encode_line, parse};

const DOC_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/PROTOCOL.md");

const DAEMON: &str = "Daemon → subscribers";
const CLIENT: &str = "Client → assistant";
const ASSISTANT: &str = "Assistant → clients";
const ERRORS: &str = "Error codes";

/// One message family as the doc presents it.
#[derive(Debug, Default)]
struct Family {
    /// Line numbers of the section's `## ` headings (exactly one expected).
    headings: Vec<usize>,
    /// `### ` subsection type → line number of its heading.
    subsections: BTreeMap<String, usize>,
    /// Message type → line numbers of its examples.
    examples: BTreeMap<String, Vec<usize>>,
}

/// Parses `line` as an `M` and checks it re-encodes to the same JSON value; returns its type.
fn check_line<M: Message>(line: &str) -> Result<String, String> {
    let original: Value =
        serde_json::from_str(line).map_err(|e| format!("not a JSON value: {e}"))?;
    let kind = original
        .get("type")
        .and_then(Value::as_str)
        .ok_or("not a JSON object with a string \"type\"")?
        .to_owned();
    let msg = parse::<M>(line.as_bytes()).map_err(|e| format!("does not parse: {e}"))?;
    let encoded = encode_line(&msg);
    let reencoded: Value = serde_json::from_slice(&encoded)
        .map_err(|e| format!("re-encoding is not JSON ({e}): {encoded:?}"))?;
    if reencoded != original {
        return Err(format!(
            "re-encodes differently (a field missing, extra, or of another JSON number type?)\n    \
             doc:     {line}\n    encoded: {}",
            String::from_utf8_lossy(&encoded).trim_end()
        ));
    }
    Ok(kind)
}

fn family_section(section: &str) -> Option<usize> {
    [DAEMON, CLIENT, ASSISTANT].iter().position(|s| *s == section)
}

#[test]
fn protocol_doc_matches_the_code() {
    let doc =
        std::fs::read_to_string(DOC_PATH).unwrap_or_else(|e| panic!("cannot read {DOC_PATH}: {e}"));

    let mut failures: Vec<String> = Vec::new();
    let mut families: [Family; 3] = Default::default();
    let mut error_headings = Vec::new();
    let mut error_table: BTreeMap<String, usize> = BTreeMap::new();

    let mut section = String::new();
    let mut subsection: Option<String> = None;
    // Some((language, line of the opening fence)) while inside a fence.
    let mut fence: Option<(String, usize)> = None;

    for (index, raw) in doc.lines().enumerate() {
        let n = index + 1;
        let line = raw.trim();

        if let Some((lang, _)) = &fence {
            if line.starts_with("```") {
                if line != "```" {
                    failures.push(format!("line {n}: a closing fence must be a bare ```"));
                }
                fence = None;
            } else if lang == "json" && !line.is_empty() {
                let Some(f) = family_section(&section) else {
                    // Reported at the opening fence.
                    continue;
                };
                let result = match f {
                    0 => check_line::<DaemonEvent>(line),
                    1 => check_line::<Request>(line),
                    _ => check_line::<AssistantEvent>(line),
                };
                match result {
                    Ok(kind) => {
                        if let Some(sub) = subsection.as_ref().filter(|sub| **sub != kind) {
                            failures.push(format!(
                                "line {n}: a '{kind}' example under '### `{sub}`' in '## {section}'"
                            ));
                        }
                        families[f].examples.entry(kind).or_default().push(n);
                    }
                    Err(e) => failures.push(format!("line {n} ('## {section}'): {e}")),
                }
            }
            continue;
        }

        if let Some(lang) = line.strip_prefix("```") {
            let lang = lang.trim().to_owned();
            if lang.to_ascii_lowercase().contains("json") && lang != "json" {
                failures.push(format!(
                    "line {n}: fence language '{lang}': write ```json so the examples are checked"
                ));
            }
            if lang == "json" && family_section(&section).is_none() {
                failures.push(format!(
                    "line {n}: a ```json block in '## {section}'; json examples belong in \
                     '## {DAEMON}', '## {CLIENT}' or '## {ASSISTANT}' (use ```text elsewhere)"
                ));
            }
            fence = Some((lang, n));
            continue;
        }

        if let Some(title) = raw.strip_prefix("## ") {
            section = title.trim().to_owned();
            subsection = None;
            match family_section(&section) {
                Some(f) => families[f].headings.push(n),
                None if section == ERRORS => error_headings.push(n),
                None => {}
            }
        } else if let Some(title) = raw.strip_prefix("### ") {
            let name = title.trim().trim_matches('`').to_owned();
            subsection = None;
            if let Some(f) = family_section(&section) {
                if let Some(first) = families[f].subsections.insert(name.clone(), n) {
                    failures.push(format!(
                        "line {n}: a second '### `{name}`' in '## {section}' (first at line {first})"
                    ));
                }
                subsection = Some(name);
            }
        } else if section == ERRORS {
            // A table row: | `code` | when | what to do |
            let code = line.strip_prefix("| `").and_then(|cell| cell.split_once('`'));
            if let Some((code, _)) = code
                && let Some(first) = error_table.insert(code.to_owned(), n)
            {
                failures.push(format!(
                    "line {n}: error code `{code}` listed twice (first at line {first})"
                ));
            }
        }
    }
    if let Some((_, opened)) = fence {
        failures.push(format!("line {opened}: this fence is never closed"));
    }

    let types: [&[&str]; 3] = [DaemonEvent::TYPES, Request::TYPES, AssistantEvent::TYPES];
    for (f, name) in [DAEMON, CLIENT, ASSISTANT].iter().enumerate() {
        let family = &families[f];
        match family.headings.as_slice() {
            [_] => {}
            [] => {
                failures.push(format!("the doc has no '## {name}' section"));
                continue;
            }
            many => failures.push(format!("'## {name}' appears more than once, at lines {many:?}")),
        }
        let known: BTreeSet<&str> = types[f].iter().copied().collect();
        for kind in &known {
            if !family.subsections.contains_key(*kind) {
                failures.push(format!("'## {name}' has no '### `{kind}`' subsection"));
            }
            if !family.examples.contains_key(*kind) {
                failures.push(format!("'## {name}' has no ```json example of '{kind}'"));
            }
        }
        for (sub, line) in &family.subsections {
            if !known.contains(sub.as_str()) {
                failures.push(format!(
                    "line {line}: '### `{sub}`' in '## {name}' is not a type of that family \
                     (known: {})",
                    types[f].join(", ")
                ));
            }
        }
    }

    match error_headings.as_slice() {
        [_] => {}
        [] => failures.push(format!("the doc has no '## {ERRORS}' section")),
        many => failures.push(format!("'## {ERRORS}' appears more than once, at lines {many:?}")),
    }
    let codes: BTreeSet<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    for code in &codes {
        if !error_table.contains_key(*code) {
            failures.push(format!("the '## {ERRORS}' table has no row for `{code}`"));
        }
    }
    for (code, line) in &error_table {
        if !codes.contains(code.as_str()) {
            failures.push(format!("line {line}: `{code}` is not an ErrorCode"));
        }
    }

    assert!(
        failures.is_empty(),
        "docs/PROTOCOL.md disagrees with stt-proto ({} problems):\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

#[test]
fn error_code_names_round_trip() {
    for &code in ErrorCode::ALL {
        let json = serde_json::to_string(&code).expect("an ErrorCode serializes");
        assert_eq!(json, format!("\"{}\"", code.as_str()));
        let back: ErrorCode = serde_json::from_str(&json).expect("an ErrorCode deserializes");
        assert_eq!(back, code);
    }
}
