//! Tool calls, however the model writes them.
//!
//! A proper endpoint returns `tool_calls`. Small local models often write the call as JSON in
//! the reply's text instead: bare (`{"name": "get_datetime", "arguments": {}}`) or with prose
//! around it, in a Markdown fence (```` ```json ```` or a plain ```` ``` ````), wrapped in
//! `<tool_call>…</tool_call>` (Qwen's format) or `<tools>…</tools>`, in template-style double
//! braces (`{{…}}`), as a list, in a `{"tool_calls": […]}` wrapper, as
//! `{"function": {"name", "arguments"}}`, or with `"arguments"` as a JSON string.
//!
//! [`find_calls`] finds those for the tools that exist, so a chatty reply that merely contains
//! JSON is not mistaken for a call, and runs none it only half understood: a call to a known
//! tool whose arguments do not fit the tool's schema ([`check_arguments`]), or whose text was
//! cut off, is [`Refused`] with a reason worded for the model, so it can call again. A call
//! cut off right after a complete value, only closing brackets missing (Qwen2.5-Coder 0.5B
//! writes one brace short), is whole once they are added; one cut inside a string or a
//! number, or after a key, a colon or a comma, may have lost part of what it meant.
//!
//! [`calls_in_content`] is the schema-less way in: every whole call to a tool it knows, whose
//! arguments are an object.

use serde_json::{Map, Value};

use crate::conversation::ToolCall;

/// What [`find_calls`] made of a reply's text.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Found {
    /// The calls to run, in the order written, with distinct ids `call_0`, `call_1`, ….
    pub calls: Vec<ToolCall>,
    /// The calls to known tools that were not run, in the order written: the model is told
    /// why, so it can call again.
    pub refused: Vec<Refused>,
    /// The names of tools that do not exist that the text calls, in the order written (a
    /// small model offered no tool for "book a table" wrote `{"name": "book_table", …}`).
    pub unknown: Vec<String>,
}

/// A call to a known tool that was not run because it was not wholly understood.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    /// The tool the model called.
    pub name: String,
    /// Why, worded for the model: "set_timer was not run: 'minutes' is required".
    pub reason: String,
}

/// The tool calls written as JSON in `content`. `schema_of(name)` is the JSON schema of a
/// tool's arguments (its `parameters`), or `None` when there is no such tool: JSON naming
/// one is not a call. A call to a known tool is run only if it is whole and its arguments
/// pass [`check_arguments`]; otherwise it is refused, with the reason.
pub fn find_calls<'s>(content: &str, schema_of: impl Fn(&str) -> Option<&'s Value>) -> Found {
    find_calls_among(content, schema_of, &[])
}

/// [`find_calls`], where `offered` are the tools (name and schema) the request offered: a
/// call that names another tool, with arguments that tool does not take but exactly one
/// offered tool does, is a call of that one, misnamed (offered only `update_task_status`
/// for "drop the Spanish goal", the 1.5B model wrote `add_intention` with
/// `{"task_id": 1, "status": "dropped"}`).
pub fn find_calls_among<'s>(
    content: &str,
    schema_of: impl Fn(&str) -> Option<&'s Value>,
    offered: &[(&str, &Value)],
) -> Found {
    let mut found = Found::default();
    for mut written in written_calls(content) {
        let fits = |schema: &Value| {
            let arguments = without_schema_words(schema, written.arguments.clone());
            let takes = arguments.as_object().is_some_and(|a| !a.is_empty());
            takes && check_arguments(schema, &arguments).is_ok()
        };
        let named = schema_of(&written.name);
        let elsewhere = !offered.iter().any(|(name, _)| *name == written.name);
        if elsewhere && !named.is_some_and(fits) && !written.cut_off {
            let meant: Vec<&str> =
                offered.iter().filter(|(_, schema)| fits(schema)).map(|(name, _)| *name).collect();
            if let [meant] = meant.as_slice() {
                written.name = (*meant).to_owned();
            }
        }
        let Some(schema) = schema_of(&written.name) else {
            found.unknown.push(written.name);
            continue;
        };
        let arguments = without_schema_words(schema, written.arguments);
        // A tool that takes nothing runs with nothing: the 1.5B model called
        // `get_next_actions` with `{"tasks": ["Buy milk."]}`, twice, after being told.
        let takes_none = schema
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(serde_json::Map::is_empty);
        let arguments =
            if takes_none && arguments.is_object() { Value::Object(Map::new()) } else { arguments };
        let checked = if written.cut_off {
            Err("the call was cut off before it ended".to_owned())
        } else {
            check_arguments(schema, &arguments)
        };
        match checked {
            Ok(()) => found.calls.push(ToolCall {
                id: format!("call_{}", found.calls.len()),
                name: written.name,
                arguments,
            }),
            Err(why) => found.refused.push(Refused {
                reason: format!("{} was not run: {why}", written.name),
                name: written.name,
            }),
        }
    }
    found
}

/// Words of JSON Schema itself, which a small model echoes from the tool list as its
/// arguments (Qwen2.5-Coder-0.5B calls `get_datetime` with `{"type": "object", "properties":
/// …}` every time). They carry nothing the person said.
const SCHEMA_WORDS: [&str; 8] = [
    "type",
    "properties",
    "required",
    "description",
    "items",
    "additionalProperties",
    "title",
    "$schema",
];

/// `arguments` without the [`SCHEMA_WORDS`] the tool does not take as parameters: an echoed
/// schema is dropped, so a call to a tool that needs nothing runs, and one that needs
/// something is refused for what is missing.
fn without_schema_words(schema: &Value, arguments: Value) -> Value {
    let Value::Object(mut object) = arguments else { return arguments };
    let properties = schema.get("properties").and_then(Value::as_object);
    object.retain(|key, _| {
        !SCHEMA_WORDS.contains(&key.as_str()) || properties.is_some_and(|p| p.contains_key(key))
    });
    Value::Object(object)
}

/// Tool calls written as JSON in `content`, for tools `known` accepts: every whole call whose
/// arguments are an object, unchecked against any schema. A cut-off call is left out.
pub fn calls_in_content(content: &str, known: impl Fn(&str) -> bool) -> Vec<ToolCall> {
    written_calls(content)
        .into_iter()
        .filter(|written| !written.cut_off && written.arguments.is_object() && known(&written.name))
        .enumerate()
        .map(|(n, written)| ToolCall {
            id: format!("call_{n}"),
            name: written.name,
            arguments: written.arguments,
        })
        .collect()
}

/// Whether `args` fit `schema`, a tool's JSON schema of its arguments: an object, with every
/// `required` key, each value of its property's `type` (`string`, `number`, `integer` (5.0
/// counts), `boolean`, `array`, `object`, `null`, or a list of these) and in its `enum` if it
/// has one, and no key the `properties` do not name unless `additionalProperties` allows
/// them. The error names the key and what was expected, for the model to read.
pub fn check_arguments(schema: &Value, args: &Value) -> Result<(), String> {
    let Some(object) = args.as_object() else {
        return Err(format!("the arguments must be a JSON object, not {args}"));
    };
    let properties = schema.get("properties").and_then(Value::as_object);
    let others_allowed =
        matches!(schema.get("additionalProperties"), Some(Value::Bool(true) | Value::Object(_)));
    if !others_allowed {
        let mut unknown: Vec<&str> = object
            .keys()
            .filter(|key| !properties.is_some_and(|known| known.contains_key(*key)))
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            unknown.sort_unstable();
            let mut takes: Vec<&str> =
                properties.into_iter().flatten().map(|(k, _)| k.as_str()).collect();
            takes.sort_unstable();
            let takes = if takes.is_empty() {
                "it takes none".to_owned()
            } else {
                format!("it takes {}", quoted(&takes))
            };
            return Err(match unknown.as_slice() {
                [key] => format!("'{key}' is not a parameter of this tool ({takes})"),
                _ => format!("{} are not parameters of this tool ({takes})", quoted(&unknown)),
            });
        }
    }
    let required = schema.get("required").and_then(Value::as_array);
    for key in required.into_iter().flatten().filter_map(Value::as_str) {
        if !object.contains_key(key) {
            return Err(format!("'{key}' is required"));
        }
    }
    let mut given: Vec<(&String, &Value)> = object.iter().collect();
    given.sort_unstable_by_key(|(key, _)| *key);
    for (key, value) in given {
        if let Some(property) = properties.and_then(|known| known.get(key)) {
            check_value(key, property, value)?;
        }
    }
    Ok(())
}

/// Whether `value`, given for `key`, has the `type` and is in the `enum` its `property`
/// schema declares.
fn check_value(key: &str, property: &Value, value: &Value) -> Result<(), String> {
    let kinds: Vec<&str> = match property.get("type") {
        Some(Value::String(kind)) => vec![kind.as_str()],
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !kinds.is_empty() && !kinds.iter().any(|kind| is_a(kind, value)) {
        let kinds: Vec<String> = kinds.iter().map(|kind| a(kind)).collect();
        return Err(format!("'{key}' must be {}, not {value}", kinds.join(" or ")));
    }
    if let Some(Value::Array(allowed)) = property.get("enum")
        && !allowed.contains(value)
    {
        let allowed: Vec<String> = allowed.iter().map(Value::to_string).collect();
        return Err(format!("'{key}' must be one of {}, not {value}", allowed.join(", ")));
    }
    Ok(())
}

/// Whether `value` is of the JSON-schema type `kind`. A type this does not know passes: it
/// is the schema's to explain, not the model's.
fn is_a(kind: &str, value: &Value) -> bool {
    match kind {
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|n| n.fract() == 0.0)
        }
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    }
}

/// A JSON-schema type named in a sentence: "a string", "an integer", "null".
fn a(kind: &str) -> String {
    match kind.chars().next() {
        _ if kind == "null" => kind.to_owned(),
        Some('a' | 'e' | 'i' | 'o' | 'u') => format!("an {kind}"),
        _ => format!("a {kind}"),
    }
}

/// `keys` quoted and listed: `'label', 'minutes'`.
fn quoted(keys: &[&str]) -> String {
    keys.iter().map(|key| format!("'{key}'")).collect::<Vec<_>>().join(", ")
}

/// A call as the text wrote it, before anyone asks whether its tool exists.
struct Written {
    name: String,
    /// Decoded from a string if the model wrote one; left as written if that fails.
    arguments: Value,
    /// The text ended (or a closing tag or fence came) before the call did.
    cut_off: bool,
}

/// Every call-shaped object in `content`, in order.
fn written_calls(content: &str) -> Vec<Written> {
    let mut calls = Vec::new();
    for piece in json_values(content) {
        collect(&piece.value, piece.open, &mut calls);
    }
    calls
}

/// A JSON value found in the text.
struct Piece {
    value: Value,
    /// How many of its containers were still open where it was cut off: the value itself,
    /// its last element, that one's last element, and so on. 0 when it is whole.
    open: usize,
}

/// Where a call written inside a tag or a fence ends at the latest: a call cut off before
/// one of these is cut off there, even if more text follows.
const ENDS: [&str; 5] = ["</tool_call>", "</tools>", "```", "<tool_call>", "<tools>"];

/// Every top-level JSON object or array in `text`, in order, skipping what is not JSON.
fn json_values(text: &str) -> Vec<Piece> {
    let mut values = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(['{', '[']) {
        let candidate = &rest[start..];
        match read(candidate) {
            Read::Whole(value, used) => {
                values.push(Piece { value, open: 0 });
                rest = &candidate[used..];
            }
            // The text ends inside this value.
            Read::Cut(piece) => {
                values.push(piece);
                break;
            }
            // Not JSON to the end of the text, but perhaps up to a closing tag or fence:
            // `<tool_call>{"name": "get_datetime", "arguments": {}</tool_call>`.
            Read::NotJson => {
                let end = ENDS.iter().filter_map(|end| candidate[1..].find(end)).min();
                let window = end.map(|end| end + 1).map(|end| (end, read(&candidate[..end])));
                match window {
                    Some((end, Read::Cut(piece))) => {
                        values.push(piece);
                        rest = &candidate[end..];
                    }
                    _ => rest = &candidate[1..],
                }
            }
        }
    }
    values
}

/// What the text at a `{` or `[` holds.
enum Read {
    /// A whole value, and the bytes of the text it took.
    Whole(Value, usize),
    /// A value the text ends inside.
    Cut(Piece),
    NotJson,
}

/// Reads the JSON value `text` starts with, a template-style `{{…}}` as `{…}`.
fn read(text: &str) -> Read {
    if text.starts_with("{{") {
        let (single, used) = undoubled(text);
        return match read_json(&single) {
            Read::Whole(value, _) => Read::Whole(value, used),
            other => other,
        };
    }
    read_json(text)
}

fn read_json(text: &str) -> Read {
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    match stream.next() {
        Some(Ok(value)) => Read::Whole(value, stream.byte_offset()),
        Some(Err(e)) if e.is_eof() => closed(text).map_or(Read::NotJson, Read::Cut),
        _ => Read::NotJson,
    }
}

/// The value `text` starts with, written in double braces (`{{"name": "get_datetime",
/// "arguments": {}}}`), in single ones; and how many bytes of `text` it took. A brace opened
/// double closes double; single braces inside stay as they are.
fn undoubled(text: &str) -> (String, usize) {
    let bytes = text.as_bytes();
    let mut single = Vec::with_capacity(bytes.len());
    // Each brace open, and whether it was written double.
    let mut open: Vec<bool> = Vec::new();
    let (mut in_string, mut escaped) = (false, false);
    let mut at = 0;
    while let Some(&c) = bytes.get(at) {
        let double = bytes.get(at + 1) == Some(&c);
        single.push(c);
        at += 1;
        if in_string {
            match c {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'{' => {
                open.push(double);
                at += usize::from(double);
            }
            b'}' => {
                at += usize::from(open.pop() == Some(true) && double);
                if open.is_empty() {
                    break;
                }
            }
            _ => {}
        }
    }
    (String::from_utf8_lossy(&single).into_owned(), at)
}

/// A JSON value cut off at the end of `text`. When the text ends right after a complete
/// value (a `}`, a `]` or a value string's closing quote), only closing brackets are missing:
/// the value is whole once they are added. Otherwise it is what the text held up to its last
/// complete value, with the containers left open counted.
fn closed(text: &str) -> Option<Piece> {
    let text = text.trim_end();
    // The closing brackets of the containers open.
    let mut open: Vec<char> = Vec::new();
    // The last place the value could end: there, the closing brackets it needs, and whether
    // that place is right after a complete value.
    let mut last: Option<(usize, Vec<char>, bool)> = None;
    let (mut in_string, mut escaped, mut is_key, mut key_next) = (false, false, false, false);
    for (at, c) in text.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => {
                    in_string = false;
                    if !is_key {
                        last = Some((at + 1, open.clone(), true));
                    }
                }
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                (in_string, is_key, key_next) = (true, key_next, false);
            }
            '{' | '[' => {
                open.push(if c == '{' { '}' } else { ']' });
                key_next = c == '{';
                last = Some((at + 1, open.clone(), false));
            }
            '}' | ']' => {
                open.pop();
                key_next = false;
                last = Some((at + 1, open.clone(), true));
            }
            ',' => {
                key_next = open.last() == Some(&'}');
                last = Some((at, open.clone(), false));
            }
            _ => {}
        }
    }
    let (end, closers, complete) = last?;
    let mut json = text[..end].to_owned();
    json.extend(closers.iter().rev());
    let value = serde_json::from_str(&json).ok()?;
    let whole = complete && end == text.len();
    Some(Piece { value, open: if whole { 0 } else { closers.len() } })
}

/// The calls in `value`, a list, a `{"tool_calls": […]}` wrapper or a call. `open`: how many
/// containers along its last elements were cut off (see [`Piece`]); a call among them is.
fn collect(value: &Value, open: usize, calls: &mut Vec<Written>) {
    match value {
        Value::Array(items) => {
            let last = items.len().saturating_sub(1);
            for (n, item) in items.iter().enumerate() {
                collect(item, if n == last { open.saturating_sub(1) } else { 0 }, calls);
            }
        }
        Value::Object(object) => {
            // Whether the list was still open is not known (an object's keys are not kept in
            // order): counted as if it was, which may refuse a whole call but never runs a
            // cut one.
            if let Some(list) = object.get("tool_calls") {
                collect(list, open.saturating_sub(1), calls);
                return;
            }
            if let Some(mut call) = as_call(object) {
                call.cut_off = open > 0;
                calls.push(call);
            }
        }
        _ => {}
    }
}

/// Reads one call from the shapes models use:
/// `{"name", "arguments"|"parameters"|"args"|"input"}`, `{"tool"|"function": "name", …}`,
/// and `{"function": {"name", "arguments"}}` (with or without `"type": "function"`).
fn as_call(object: &Map<String, Value>) -> Option<Written> {
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
        Some(value) => arguments(value).unwrap_or_else(|| value.clone()),
    };
    Some(Written { name, arguments, cut_off: false })
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

    /// The schemas of `known`'s tools, as stt-tools declares them.
    fn schema_of(name: &str) -> Option<&'static Value> {
        static SCHEMAS: std::sync::LazyLock<[(&str, Value); 3]> = std::sync::LazyLock::new(|| {
            [
                ("get_datetime", json!({"type": "object", "properties": {}})),
                (
                    "set_timer",
                    json!({"type": "object", "properties": {
                        "minutes": {"type": "number"}, "label": {"type": "string"}
                    }, "required": ["minutes"]}),
                ),
                (
                    "open_url",
                    json!({"type": "object", "properties": {"url": {"type": "string"}},
                        "required": ["url"]}),
                ),
            ]
        });
        SCHEMAS.iter().find(|(n, _)| *n == name).map(|(_, schema)| schema)
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
    fn a_call_misnamed_is_a_call_of_the_one_offered_tool_its_arguments_fit() {
        let offered = |names: &[&'static str]| -> Vec<(&'static str, &'static Value)> {
            names.iter().map(|n| (*n, schema_of(n).unwrap())).collect()
        };
        let names =
            |found: &Found| -> Vec<String> { found.calls.iter().map(|c| c.name.clone()).collect() };
        // Offered `set_timer` alone, it wrote `open_url` with a timer's arguments.
        let written = r#"{"name": "open_url", "arguments": {"minutes": 10}}"#;
        let found = find_calls_among(written, schema_of, &offered(&["set_timer"]));
        assert_eq!(names(&found), ["set_timer"]);
        assert_eq!(found.calls[0].arguments, json!({"minutes": 10}));
        // Not offered it, the same call is refused as before.
        let found = find_calls_among(written, schema_of, &offered(&["get_datetime"]));
        assert_eq!((names(&found).len(), found.refused.len()), (0, 1));
        // A call that fits the tool it names runs as written, offered or not.
        let right = r#"{"name": "open_url", "arguments": {"url": "https://example.org"}}"#;
        let found = find_calls_among(right, schema_of, &offered(&["set_timer"]));
        assert_eq!(names(&found), ["open_url"]);
        // An invented name with arguments of the offered tool: that tool.
        let invented = r#"{"name": "start_timer", "arguments": {"minutes": 5}}"#;
        let found = find_calls_among(invented, schema_of, &offered(&["set_timer", "open_url"]));
        assert_eq!((names(&found), found.unknown.len()), (vec!["set_timer".to_owned()], 0));
        // Nothing said in the arguments says nothing of which tool.
        let empty = r#"{"name": "start_timer", "arguments": {}}"#;
        let found = find_calls_among(empty, schema_of, &offered(&["get_datetime"]));
        assert_eq!(found.unknown, ["start_timer"]);
    }

    /// What `find_calls` makes of `content`: the calls' names and arguments, and the refusals'
    /// reasons.
    #[track_caller]
    fn find(content: &str) -> (Vec<(String, Value)>, Vec<String>) {
        let found = find_calls(content, schema_of);
        for refused in &found.refused {
            assert!(refused.reason.starts_with(&format!("{} was not run: ", refused.name)));
        }
        (
            found.calls.into_iter().map(|c| (c.name, c.arguments)).collect(),
            found.refused.into_iter().map(|r| r.reason).collect(),
        )
    }

    const CUT_OFF: &str = "was not run: the call was cut off before it ended";

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
        check(
            "<tools>\n{\"name\": \"set_timer\", \"arguments\": {\"minutes\": 5}}\n</tools>",
            &[("set_timer", json!({"minutes": 5}))],
        );
    }

    #[test]
    fn double_braces_are_read_as_single_ones() {
        check(r#"{{"name": "get_datetime", "arguments": {}}}"#, &[("get_datetime", json!({}))]);
        check(
            r#"{{"name": "set_timer", "arguments": {{"minutes": 3}}}}"#,
            &[("set_timer", json!({"minutes": 3}))],
        );
        // Braces inside strings are text, doubled or not.
        check(
            r#"{{"name": "set_timer", "arguments": {"minutes": 3, "label": "{{x}}"}}}"#,
            &[("set_timer", json!({"minutes": 3, "label": "{{x}}"}))],
        );
        // Doubled to open, single to close.
        check(
            r#"{{"name": "set_timer", "arguments": {"minutes": 3}} and then"#,
            &[("set_timer", json!({"minutes": 3}))],
        );
        assert_eq!(undoubled(r#"{{"a": {}}} rest"#), (r#"{"a": {}}"#.to_owned(), 11));
    }

    #[test]
    fn a_call_cut_off_right_after_a_complete_value_is_made_whole() {
        // What Qwen2.5-Coder-0.5B writes for "what time is it": one closing brace short, with
        // the schema for arguments. Whole; the echoed schema is no argument, and get_datetime
        // needs none.
        let echo = r#"{"name": "get_datetime", "arguments": {"type": "object", "properties": {"type": "string"}}"#;
        check(
            echo,
            &[("get_datetime", json!({"type": "object", "properties": {"type": "string"}}))],
        );
        assert_eq!(find(echo), (vec![("get_datetime".to_owned(), json!({}))], vec![]));
        check(
            r#"{"name": "set_timer", "arguments": {"minutes": 5, "label": "tea""#,
            &[("set_timer", json!({"minutes": 5, "label": "tea"}))],
        );
        // Short of its brace before the closing tag: the tag ends it.
        let tagged = "<tool_call>\n{\"name\": \"open_url\", \"arguments\": {\"url\": \
                      \"https://example.org\"}\n</tool_call>\n\
                      <tool_call>\n{\"name\": \"get_datetime\"}\n</tool_call>";
        check(
            tagged,
            &[("open_url", json!({"url": "https://example.org"})), ("get_datetime", json!({}))],
        );
        assert_eq!(find(tagged).1, Vec::<String>::new());
    }

    #[test]
    fn a_call_cut_off_mid_value_is_refused() {
        for cut in [
            // Inside a string: "te" may have been "tea".
            "<tool_call>\n{\"name\": \"set_timer\", \"arguments\": {\"minutes\": 5, \"label\": \"te",
            // After a number: 2 may have been 25.
            r#"{"name": "set_timer", "arguments": {"minutes": 2"#,
            r#"{"name": "set_timer", "arguments": {"minutes": 2.5e"#,
            // After a literal, a key, a colon, a comma.
            r#"{"name": "set_timer", "arguments": {"minutes": 5, "label": nul"#,
            r#"{"name": "set_timer", "arguments": {"minutes""#,
            r#"{"name": "set_timer", "arguments": {"minutes":"#,
            r#"{"name": "set_timer", "arguments": {"minutes": 5,   "#,
            r#"{"name": "set_timer", "arguments": "#,
            r#"{"name": "set_timer", "#,
            // Before a closing tag, the same.
            "<tool_call>{\"name\": \"set_timer\", \"arguments\": {\"minutes\": 2</tool_call>",
            // In a list, or a wrapper.
            r#"[{"name": "set_timer", "arguments": {"minutes": 2"#,
            r#"{"tool_calls": [{"function": {"name": "set_timer", "arguments": {"minutes": 2"#,
        ] {
            check(cut, &[]);
            assert_eq!(find(cut), (vec![], vec![format!("set_timer {CUT_OFF}")]), "{cut:?}");
        }
        // The name itself cut off: no tool to name, so no call.
        let nameless = r#"{"name": "set_ti"#;
        assert_eq!(find(nameless), (vec![], vec![]));
    }

    #[test]
    fn whole_calls_before_a_cut_one_are_found() {
        for content in [
            r#"{"name": "get_datetime"} {"name": "set_timer", "arguments": {"minutes": 2"#,
            r#"[{"name": "get_datetime"}, {"name": "set_timer", "arguments": {"minutes": 2"#,
            r#"{"tool_calls": [{"name": "get_datetime"}, {"name": "set_timer", "arguments": {"minutes": 2"#,
        ] {
            check(content, &[("get_datetime", json!({}))]);
            assert_eq!(
                find(content),
                (
                    vec![("get_datetime".to_owned(), json!({}))],
                    vec![format!("set_timer {CUT_OFF}")]
                ),
                "{content:?}"
            );
        }
        // Cut after the comma that ends the list's whole first call.
        let content = r#"[{"name": "get_datetime"}, "#;
        assert_eq!(find(content), (vec![("get_datetime".to_owned(), json!({}))], vec![]));
    }

    #[test]
    fn a_known_call_that_does_not_fit_its_schema_is_refused_with_the_reason() {
        let cases = [
            (
                r#"{"name": "set_timer", "arguments": {}}"#,
                "set_timer was not run: 'minutes' is required",
            ),
            (
                r#"{"name": "set_timer", "arguments": {"minutes": "five"}}"#,
                r#"set_timer was not run: 'minutes' must be a number, not "five""#,
            ),
            (
                r#"{"name": "set_timer", "arguments": {"minute": 5}}"#,
                "set_timer was not run: 'minute' is not a parameter of this tool (it takes \
                 'label', 'minutes')",
            ),
            (
                r#"{"name": "set_timer", "arguments": "five minutes"}"#,
                r#"set_timer was not run: the arguments must be a JSON object, not "five minutes""#,
            ),
            (
                r#"{"name": "open_url", "arguments": ["https://example.org"]}"#,
                r#"open_url was not run: the arguments must be a JSON object, not ["https://example.org"]"#,
            ),
        ];
        for (content, reason) in cases {
            assert_eq!(find(content), (vec![], vec![reason.to_owned()]), "{content:?}");
        }
    }

    #[test]
    fn json_that_is_not_a_call_to_a_known_tool_is_left_alone() {
        for content in [
            "It is 3 pm.",
            r#"{"name": "rm_rf", "arguments": {}}"#,
            r#"{"name": "rm_rf", "arguments": {"path": "/"#,
            r#"The config is {"volume": 3}."#,
            "{ broken json",
            "{{ template }} and [1, 2",
        ] {
            check(content, &[]);
            assert_eq!(find(content), (vec![], vec![]), "{content:?}");
        }
        check(r#"{"name": "set_timer", "arguments": "not json"}"#, &[]);
        // A tool that does not exist is named as such, never run.
        let found = find_calls(r#"{"name": "book_table", "arguments": {"people": 2}}"#, schema_of);
        assert_eq!((found.calls.len(), found.unknown), (0, vec!["book_table".to_owned()]));
    }

    #[test]
    fn a_tool_that_takes_nothing_runs_with_nothing_whatever_it_is_given() {
        let content = r#"{"name": "get_datetime", "arguments": {"tasks": ["Buy milk."]}}"#;
        assert_eq!(find(content), (vec![("get_datetime".to_owned(), json!({}))], vec![]));
    }

    #[test]
    fn calls_get_distinct_ids() {
        let content = r#"<tool_call>{"name":"get_datetime"}</tool_call>"#.repeat(2);
        let ids: Vec<_> = calls_in_content(&content, known).into_iter().map(|c| c.id).collect();
        assert_eq!(ids, ["call_0", "call_1"]);
        let content =
            r#"[{"name": "set_timer"}, {"name":"get_datetime"}, {"name":"get_datetime"}]"#;
        let ids: Vec<_> = find_calls(content, schema_of).calls.into_iter().map(|c| c.id).collect();
        assert_eq!(ids, ["call_0", "call_1"]);
    }

    #[test]
    fn arguments_are_checked_against_every_rule_of_the_schema() {
        let schema = json!({"type": "object", "properties": {
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "loud": {"type": "boolean"},
            "tags": {"type": "array"},
            "extra": {"type": "object"},
            "note": {"type": ["string", "null"]},
            "kind": {"type": "string", "enum": ["fact", "pitfall"]},
            "free": {}
        }, "required": ["count"]});
        let ok = |args: Value| assert_eq!(check_arguments(&schema, &args), Ok(()), "{args}");
        let bad = |args: Value, why: &str| {
            assert_eq!(check_arguments(&schema, &args), Err(why.to_owned()), "{args}");
        };
        ok(json!({"count": 5}));
        ok(json!({"count": 5.0, "ratio": 1, "loud": true, "tags": [], "extra": {}}));
        ok(json!({"count": 1, "note": null, "kind": "pitfall", "free": [1, "x"]}));
        bad(json!(null), "the arguments must be a JSON object, not null");
        bad(json!({}), "'count' is required");
        bad(json!({"count": 5.5}), "'count' must be an integer, not 5.5");
        bad(json!({"count": "5"}), r#"'count' must be an integer, not "5""#);
        bad(json!({"count": 1, "ratio": "1"}), r#"'ratio' must be a number, not "1""#);
        bad(json!({"count": 1, "loud": "yes"}), r#"'loud' must be a boolean, not "yes""#);
        bad(json!({"count": 1, "tags": "a"}), r#"'tags' must be an array, not "a""#);
        bad(json!({"count": 1, "extra": []}), "'extra' must be an object, not []");
        bad(json!({"count": 1, "note": 3}), "'note' must be a string or null, not 3");
        bad(
            json!({"count": 1, "kind": "note"}),
            r#"'kind' must be one of "fact", "pitfall", not "note""#,
        );
        bad(
            json!({"count": 1, "colour": "red"}),
            "'colour' is not a parameter of this tool (it takes 'count', 'extra', 'free', \
             'kind', 'loud', 'note', 'ratio', 'tags')",
        );
        let open = json!({"type": "object", "properties": {"a": {"type": "string"}},
            "additionalProperties": true});
        assert_eq!(check_arguments(&open, &json!({"a": "x", "b": 1})), Ok(()));
        assert_eq!(
            check_arguments(&open, &json!({"a": 1})),
            Err("'a' must be a string, not 1".to_owned())
        );
        let closed = json!({"type": "object", "properties": {}, "additionalProperties": false});
        assert_eq!(
            check_arguments(&closed, &json!({"b": 1})),
            Err("'b' is not a parameter of this tool (it takes none)".to_owned())
        );
    }
}
