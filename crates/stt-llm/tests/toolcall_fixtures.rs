//! Tool calls as small local models write them in their text: each fixture under
//! `tests/fixtures/toolcalls/` is one reply exactly as the model wrote it, and the table says
//! which calls `find_calls` runs and which it refuses, and why.

use std::path::PathBuf;

use serde_json::{Value, json};
use stt_llm::find_calls;

/// The built-in tools' schemas, as stt-tools declares them.
fn schemas() -> Vec<(&'static str, Value)> {
    vec![
        ("get_datetime", json!({"type": "object", "properties": {}})),
        (
            "set_timer",
            json!({"type": "object", "properties": {
                "minutes": {"type": "number", "description": "Minutes from now (may be fractional)"},
                "label": {"type": "string", "description": "What the reminder says"}
            }, "required": ["minutes"]}),
        ),
        (
            "notify",
            json!({"type": "object", "properties": {
                "title": {"type": "string"},
                "body": {"type": "string"}
            }, "required": ["title"]}),
        ),
        (
            "clipboard_copy",
            json!({"type": "object", "properties": {"text": {"type": "string"}},
                "required": ["text"]}),
        ),
        (
            "open_url",
            json!({"type": "object", "properties": {
                "url": {"type": "string", "description": "An http, https or mailto URL"}
            }, "required": ["url"]}),
        ),
    ]
}

/// What one fixture must give: the calls run (tool, arguments) and the calls refused (tool,
/// part of the reason), each in the order written.
struct Case {
    fixture: &'static str,
    calls: Vec<(&'static str, Value)>,
    refused: Vec<(&'static str, &'static str)>,
}

fn case(
    fixture: &'static str,
    calls: Vec<(&'static str, Value)>,
    refused: Vec<(&'static str, &'static str)>,
) -> Case {
    Case { fixture, calls, refused }
}

const CUT_OFF: &str = "was not run: the call was cut off before it ended";

fn cases() -> Vec<Case> {
    let tea = json!({"minutes": 5, "label": "tea"});
    let pasta = json!({"minutes": 10, "label": "pasta"});
    vec![
        case("bare", vec![("get_datetime", json!({}))], vec![]),
        case(
            "prose_around",
            vec![("set_timer", json!({"minutes": 15, "label": "laundry"}))],
            vec![],
        ),
        case("fenced_json", vec![("set_timer", tea.clone())], vec![]),
        case(
            "fenced_plain",
            vec![("open_url", json!({"url": "https://www.rust-lang.org"}))],
            vec![],
        ),
        case("tools_tag", vec![("set_timer", tea.clone())], vec![]),
        case("tool_call_tag", vec![("get_datetime", json!({}))], vec![]),
        case(
            "two_tool_call_tags",
            vec![("get_datetime", json!({})), ("set_timer", pasta.clone())],
            vec![],
        ),
        case("double_braces", vec![("get_datetime", json!({}))], vec![]),
        case("double_braces_everywhere", vec![("set_timer", pasta)], vec![]),
        case(
            "list",
            vec![("get_datetime", json!({})), ("set_timer", json!({"minutes": 1}))],
            vec![],
        ),
        case(
            "tool_calls_wrapper",
            vec![("open_url", json!({"url": "https://example.org"}))],
            vec![],
        ),
        case("function_object", vec![("set_timer", json!({"minutes": 3}))], vec![]),
        case(
            "string_with_fence",
            vec![("clipboard_copy", json!({"text": "```rust\nfn main() {}\n```"}))],
            vec![],
        ),
        case("one_brace_short", vec![("open_url", json!({"url": "https://example.org"}))], vec![]),
        case("one_brace_short_in_tag", vec![("set_timer", tea)], vec![]),
        // The schema echoed as the arguments is dropped: get_datetime needs none, set_timer
        // needs its minutes.
        case("schema_echo", vec![("get_datetime", json!({}))], vec![]),
        case(
            "signature_echo",
            vec![],
            vec![("set_timer", "set_timer was not run: 'minutes' is required")],
        ),
        case("cut_in_string", vec![], vec![("open_url", CUT_OFF)]),
        case("cut_in_number", vec![], vec![("set_timer", CUT_OFF)]),
        case("cut_after_comma", vec![], vec![("set_timer", CUT_OFF)]),
        case("cut_before_tag", vec![], vec![("set_timer", CUT_OFF)]),
        case("whole_then_cut", vec![("get_datetime", json!({}))], vec![("notify", CUT_OFF)]),
        case(
            "missing_required",
            vec![],
            vec![("set_timer", "set_timer was not run: 'minutes' is required")],
        ),
        case(
            "wrong_type",
            vec![],
            vec![("set_timer", r#"set_timer was not run: 'minutes' must be a number, not "five""#)],
        ),
        case(
            "arguments_not_json",
            vec![],
            vec![("set_timer", "the arguments must be a JSON object, not \"5 minutes\"")],
        ),
        case("unknown_tool", vec![], vec![]),
        case("chatty_json", vec![], vec![]),
    ]
}

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/toolcalls")
}

#[test]
fn every_fixture_gives_exactly_its_calls_and_refusals() {
    let schemas = schemas();
    let schema_of = |name: &str| schemas.iter().find(|(n, _)| *n == name).map(|(_, s)| s);
    let mut wrong = Vec::new();
    for case in cases() {
        let path = fixtures().join(format!("{}.txt", case.fixture));
        let content = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let found = find_calls(&content, schema_of);

        let calls: Vec<(&str, &Value)> =
            found.calls.iter().map(|c| (c.name.as_str(), &c.arguments)).collect();
        let expected: Vec<(&str, &Value)> = case.calls.iter().map(|(n, a)| (*n, a)).collect();
        let ids: Vec<String> = found.calls.iter().map(|c| c.id.clone()).collect();
        let expected_ids: Vec<String> =
            (0..found.calls.len()).map(|n| format!("call_{n}")).collect();
        let names: Vec<&str> = found.refused.iter().map(|r| r.name.as_str()).collect();
        let expected_names: Vec<&str> = case.refused.iter().map(|(n, _)| *n).collect();
        let reasons_fit = found.refused.len() == case.refused.len()
            && found.refused.iter().zip(&case.refused).all(|(refused, (name, why))| {
                refused.reason.starts_with(&format!("{name} was not run: "))
                    && refused.reason.contains(why)
            });
        if calls != expected || ids != expected_ids || names != expected_names || !reasons_fit {
            wrong.push(format!(
                "{}: ran {calls:?} ({ids:?}), refused {:?}; expected to run {expected:?}, \
                 refuse {:?}",
                case.fixture, found.refused, case.refused
            ));
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

/// A fixture left out of the table would test nothing.
#[test]
fn every_fixture_is_in_the_table() {
    let cases = cases();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let stem = name.strip_suffix(".txt").unwrap_or(&name);
        if !cases.iter().any(|case| case.fixture == stem) {
            missing.push(name);
        }
    }
    assert!(missing.is_empty(), "fixtures not in the table: {missing:?}");
}
