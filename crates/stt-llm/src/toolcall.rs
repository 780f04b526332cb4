//! Tool calls, however the model writes them.
//!
//! A proper endpoint returns `tool_calls`. Small local models often write the call as JSON in
//! the reply's text instead: bare (`{"name": "get_datetime", "arguments": {}}`), in a
//! Markdown fence, wrapped in `<tool_call>…</tool_call>` (Qwen's format), as a list, or in
//! one of the other shapes below. [`calls_in_content`] finds those, but only for tools that
//! exist, so a chatty reply that merely contains JSON is not mistaken for a call.

use serde_json::{Map, Value};

use crate::conversation::ToolCall;

/// Tool calls written as JSON in `content`, for tools `known` accepts.
pub fn calls_in_content(content: &str, known: impl Fn(&str) -> bool) -> Vec<ToolCall> {
    let mut calls = Vec::new();
    for value in json_values(content) {
        collect(&value, &known, &mut calls);
    }
    for (n, call) in calls.iter_mut().enumerate() {
        call.id = format!("call_{n}");
    }
    calls
}

/// Every top-level JSON object or array in `text`, in order, skipping what is not JSON.
fn json_values(text: &str) -> Vec<Value> {
    let mut values = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(['{', '[']) {
        let candidate = &rest[start..];
        let mut stream = serde_json::Deserializer::from_str(candidate).into_iter::<Value>();
        match stream.next() {
            Some(Ok(value)) => {
                let used = stream.byte_offset();
                values.push(value);
                rest = &candidate[used..];
            }
            // The text ends inside this value: small models often stop before the last
            // closing brace. Close what is open and take it if that makes it whole.
            Some(Err(e)) if e.is_eof() => match closed(candidate) {
                Some(value) => {
                    values.push(value);
                    break;
                }
                None => rest = &candidate[1..],
            },
            _ => rest = &candidate[1..],
        }
    }
    values
}

/// `text` (a JSON value cut off at its end) with its open strings, objects and arrays
/// closed, if that parses.
fn closed(text: &str) -> Option<Value> {
    let mut open = Vec::new();
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        match (in_string, c) {
            (true, _) if escaped => escaped = false,
            (true, '\\') => escaped = true,
            (true, '"') => in_string = false,
            (true, _) => {}
            (false, '"') => in_string = true,
            (false, '{') => open.push('}'),
            (false, '[') => open.push(']'),
            (false, '}' | ']') => {
                open.pop();
            }
            (false, _) => {}
        }
    }
    let mut text = text.trim_end().to_owned();
    if in_string {
        text.push('"');
    }
    text.extend(open.iter().rev());
    serde_json::from_str(&text).ok()
}

fn collect(value: &Value, known: &impl Fn(&str) -> bool, calls: &mut Vec<ToolCall>) {
    match value {
        Value::Array(items) => {
            for item in items {
                collect(item, known, calls);
            }
        }
        Value::Object(object) => {
            if let Some(list) = object.get("tool_calls") {
                collect(list, known, calls);
                return;
            }
            if let Some(call) = as_call(object)
                && known(&call.name)
            {
                calls.push(call);
            }
        }
        _ => {}
    }
}

/// Reads one call from the shapes models use:
/// `{"name", "arguments"|"parameters"|"args"|"input"}`, `{"tool"|"function": "name", …}`,
/// and `{"function": {"name", "arguments"}}` (with or without `"type": "function"`).
fn as_call(object: &Map<String, Value>) -> Option<ToolCall> {
    if let Some(Value::Object(function)) = object.get("function") {
        return as_call(function);
    }
    let name = ["name", "tool", "function", "tool_name"]
        .iter()
        .find_map(|key| object.get(*key).and_then(Value::as_str))?
        .trim()
        .to_owned();
    let args = ["arguments", "parameters", "args", "input"].iter().find_map(|key| object.get(*key));
    let arguments = match args {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(value) => arguments(value)?,
    };
    Some(ToolCall { id: String::new(), name, arguments })
}

/// Arguments as an object: an object, or a string holding one (the OpenAI form). An empty
/// string means no arguments.
pub(crate) fn arguments(value: &Value) -> Option<Value> {
    match value {
        Value::Object(_) => Some(value.clone()),
        Value::String(text) if text.trim().is_empty() => Some(Value::Object(Map::new())),
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(inner @ Value::Object(_)) => Some(inner),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn known(name: &str) -> bool {
        matches!(name, "get_datetime" | "set_timer" | "open_url")
    }

    #[track_caller]
    fn check(content: &str, expected: &[(&str, Value)]) {
        let got: Vec<(String, Value)> =
            calls_in_content(content, known).into_iter().map(|c| (c.name, c.arguments)).collect();
        let expected: Vec<(String, Value)> =
            expected.iter().map(|(n, a)| ((*n).to_owned(), a.clone())).collect();
        assert_eq!(got, expected, "{content:?}");
    }

    #[test]
    fn every_shape_small_models_write_is_found() {
        check(r#"{"name": "get_datetime", "arguments": {}}"#, &[("get_datetime", json!({}))]);
        check(
            "```json\n{\"name\": \"set_timer\", \"arguments\": {\"minutes\": 5}}\n```",
            &[("set_timer", json!({"minutes": 5}))],
        );
        check(
            "<tool_call>\n{\"name\": \"set_timer\", \"arguments\": {\"minutes\": 10, \"label\": \"tea\"}}\n</tool_call>",
            &[("set_timer", json!({"minutes": 10, "label": "tea"}))],
        );
        check(
            r#"{"type": "function", "function": {"name": "open_url", "arguments": "{\"url\": \"https://example.org\"}"}}"#,
            &[("open_url", json!({"url": "https://example.org"}))],
        );
        check(r#"{"tool": "get_datetime", "args": null}"#, &[("get_datetime", json!({}))]);
        check(r#"{"name": "get_datetime", "parameters": {}}"#, &[("get_datetime", json!({}))]);
        check(r#"{"name": "get_datetime"}"#, &[("get_datetime", json!({}))]);
        check(
            r#"Sure! {"tool_calls": [{"function": {"name": "get_datetime", "arguments": ""}}]} Done."#,
            &[("get_datetime", json!({}))],
        );
        check(
            r#"[{"name": "get_datetime", "arguments": {}}, {"name": "set_timer", "arguments": {"minutes": 1}}]"#,
            &[("get_datetime", json!({})), ("set_timer", json!({"minutes": 1}))],
        );
    }

    #[test]
    fn a_call_cut_off_before_its_last_braces_is_found() {
        // What Qwen2.5-Coder-0.5B writes for "what time is it": one closing brace short.
        check(
            r#"{"name": "get_datetime", "arguments": {"type": "object", "properties": {"type": "string"}}"#,
            &[("get_datetime", json!({"type": "object", "properties": {"type": "string"}}))],
        );
        check(
            "<tool_call>\n{\"name\": \"set_timer\", \"arguments\": {\"minutes\": 5, \"label\": \"te",
            &[("set_timer", json!({"minutes": 5, "label": "te"}))],
        );
        check(
            r#"{"name": "get_datetime"} {"name": "set_timer", "arguments": {"minutes": 2"#,
            &[("get_datetime", json!({})), ("set_timer", json!({"minutes": 2}))],
        );
        // Cut off where no closing makes it whole: nothing.
        check(r#"{"name": "set_timer", "arguments": {"minutes":"#, &[]);
    }

    #[test]
    fn json_that_is_not_a_call_to_a_known_tool_is_left_alone() {
        check("It is 3 pm.", &[]);
        check(r#"{"name": "rm_rf", "arguments": {}}"#, &[]);
        check(r#"The config is {"volume": 3}."#, &[]);
        check(r#"{"name": "set_timer", "arguments": "not json"}"#, &[]);
        check("{ broken json", &[]);
    }

    #[test]
    fn calls_get_distinct_ids() {
        let calls = calls_in_content(
            r#"<tool_call>{"name":"get_datetime"}</tool_call><tool_call>{"name":"get_datetime"}</tool_call>"#,
            known,
        );
        let ids: Vec<_> = calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["call_0", "call_1"]);
    }
}
