//! The tools the model may call: built-in ones and the commands people define in the config.
//!
//! Each tool has a JSON schema for its arguments, a side-effect class and whether it needs
//! the person's confirmation. Running a tool never goes through a shell: a configured
//! command is an argv template whose `{param}` placeholders are filled one element at a
//! time, so an argument can never become a second command.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use tokio::io::AsyncWriteExt;

use stt_config::{ToolCommand, ToolsConfig};

use crate::context::{self, Roots};
use crate::screen::{self, Screen};
use stt_intent::zone;
use stt_proto::SideEffect;

/// How long a tool's program may run before it is stopped.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(10);

/// What the model is told about a tool, and how it is classed.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: Value,
    pub side_effect: SideEffect,
    pub requires_confirmation: bool,
}

crate::tools! {
    /// A tool stt has built in. The document, web and screen tools ([`Builtin::CONTEXT`])
    /// are there only when the config allows them.
    pub enum Builtin {
        GetDatetime = "get_datetime",
        SetTimer = "set_timer",
        Notify = "notify",
        ClipboardCopy = "clipboard_copy",
        OpenUrl = "open_url",
        ListDir = "list_dir",
        ReadFile = "read_file",
        FetchWeb = "fetch_web",
        WebSearch = "web_search",
        CaptureScreen = "capture_screen",
    }
}

/// What a tool does when run.
#[derive(Debug, Clone, PartialEq)]
enum Action {
    Builtin(Builtin),
    Command(ToolCommand),
}

/// The result of running a tool.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Finished: `result` is what the model is told (and the audit log records).
    Done { ok: bool, result: String },
    /// A timer to fire after `after`, with `label`; the caller schedules it and reports
    /// `result` now.
    Timer { after: Duration, label: String, result: String },
}

impl Outcome {
    fn done(ok: bool, result: impl Into<String>) -> Self {
        Self::Done { ok, result: result.into() }
    }

    pub fn ok(&self) -> bool {
        match self {
            Self::Done { ok, .. } => *ok,
            Self::Timer { .. } => true,
        }
    }

    pub fn result(&self) -> &str {
        match self {
            Self::Done { result, .. } | Self::Timer { result, .. } => result,
        }
    }
}

/// Every tool the assistant offers.
#[derive(Debug, Clone)]
pub struct Registry {
    tools: Vec<(ToolSpec, Action)>,
    /// Where `list_dir` and `read_file` may read.
    roots: Roots,
    /// `web_search`'s endpoint.
    search_url: String,
    /// `capture_screen`'s reader.
    screen: Option<Screen>,
}

impl Registry {
    /// The built-in tools plus `commands` from the config. A command named like a built-in
    /// is refused, with the name.
    pub fn new(commands: &[ToolCommand]) -> Result<Self, String> {
        let tools = Builtin::ALL
            .iter()
            .filter(|tool| !Builtin::CONTEXT.contains(tool))
            .map(|tool| (tool.spec(), Action::Builtin(*tool)))
            .collect();
        let mut registry =
            Self { tools, roots: Roots::new(&[]), search_url: String::new(), screen: None };
        for command in commands {
            if Builtin::named(&command.name).is_some() {
                return Err(format!(
                    "[[tools.command]] '{}' has the name of a built-in tool; choose another name",
                    command.name
                ));
            }
            registry.tools.push((command_spec(command), Action::Command(command.clone())));
        }
        Ok(registry)
    }

    /// The built-in tools, the document, web and screen tools `config` allows (OCR's models
    /// and ONNX Runtime under `models`), and its commands.
    pub fn configured(config: &ToolsConfig, models: &std::path::Path) -> Result<Self, String> {
        let mut registry = Self::new(&config.command)?;
        registry.roots = Roots::new(&config.document_roots);
        registry.search_url = config.search_url.trim().to_owned();
        if config.screen {
            registry.screen =
                Some(Screen::new(models.to_owned(), stt_onnx::runtime_library(models)));
        }
        let mut more = vec![Builtin::ListDir, Builtin::ReadFile];
        more.extend(config.web.then_some(Builtin::FetchWeb));
        more.extend((!registry.search_url.is_empty()).then_some(Builtin::WebSearch));
        more.extend(config.screen.then_some(Builtin::CaptureScreen));
        registry.tools.extend(more.into_iter().map(|tool| (tool.spec(), Action::Builtin(tool))));
        Ok(registry)
    }

    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.iter().map(|(spec, _)| spec)
    }

    pub fn get(&self, name: &str) -> Option<&ToolSpec> {
        self.specs().find(|spec| spec.name == name)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Checks `args` against the tool's schema and runs it.
    pub async fn run(&self, name: &str, args: &Value) -> Outcome {
        let Some((spec, action)) = self.tools.iter().find(|(spec, _)| spec.name == name) else {
            return Outcome::done(false, format!("there is no tool named '{name}'"));
        };
        if let Err(why) = check_args(&spec.parameters, args) {
            return Outcome::done(false, format!("bad arguments for {name}: {why}"));
        }
        match action {
            Action::Builtin(tool) => self.run_builtin(*tool, args).await,
            Action::Command(command) => {
                let values: BTreeMap<String, String> = args
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| {
                        (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                    })
                    .collect();
                match command.render_argv(&values) {
                    Ok(argv) => {
                        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
                        run_argv(&argv, None).await
                    }
                    Err(missing) => Outcome::done(false, format!("missing argument '{missing}'")),
                }
            }
        }
    }
}

impl Registry {
    async fn run_builtin(&self, tool: Builtin, args: &Value) -> Outcome {
        match tool {
            Builtin::GetDatetime => match args["zone"].as_str().map(str::trim) {
                None | Some("") => Outcome::done(true, now_text(chrono::Local::now())),
                Some(place) => match zone::find(place) {
                    Some(tz) => Outcome::done(true, zone::time_in(tz, chrono::Utc::now())),
                    None => Outcome::done(
                        false,
                        format!(
                            "no time zone is named after '{place}': give a city a zone is named \
                             after (Tokyo, New York) or a zone's name (Europe/Paris), or tell \
                             the user you do not know that place's time"
                        ),
                    ),
                },
            },
            Builtin::SetTimer => set_timer(args),
            Builtin::Notify => {
                let title = str_arg(args, "title");
                let body = str_arg(args, "body");
                run_argv(&["notify-send", "--app-name=stt", &title, &body], None).await
            }
            Builtin::ClipboardCopy => copy_to_clipboard(&str_arg(args, "text")).await,
            Builtin::ListDir => {
                let (roots, path) = (self.roots.clone(), str_arg(args, "path"));
                blocking(move || context::list_dir(&roots, &path)).await
            }
            Builtin::ReadFile => {
                let (roots, path) = (self.roots.clone(), str_arg(args, "path"));
                let offset =
                    args["offset"].as_u64().map_or(0, |o| usize::try_from(o).unwrap_or(usize::MAX));
                blocking(move || context::read_file(&roots, &path, offset)).await
            }
            Builtin::FetchWeb => done(context::fetch_web(&str_arg(args, "url")).await),
            Builtin::WebSearch => {
                done(context::web_search(&self.search_url, &str_arg(args, "query")).await)
            }
            Builtin::CaptureScreen => {
                let Some(reader) = &self.screen else {
                    return Outcome::done(false, "reading the screen is off ([tools].screen)");
                };
                let window = args["window"].as_bool().unwrap_or(false);
                let path = std::env::var_os("PATH").unwrap_or_default();
                done(reader.capture(window, screen::Session::current(), &path).await)
            }
            Builtin::OpenUrl => {
                let url = str_arg(args, "url");
                if !["http://", "https://", "mailto:"].iter().any(|s| url.starts_with(s)) {
                    return Outcome::done(
                        false,
                        format!("refusing to open '{url}': only http, https and mailto links"),
                    );
                }
                run_argv(&["xdg-open", &url], None).await
            }
        }
    }
}

impl Builtin {
    /// The document and web tools ([`context`]) and the screen's, offered to a command
    /// whose words call for them ([`crate::offer::asked_for`]): what they read comes first,
    /// so a call written beside one of them waits for what it reads.
    pub const CONTEXT: [Builtin; 5] =
        [Self::ListDir, Self::ReadFile, Self::FetchWeb, Self::WebSearch, Self::CaptureScreen];

    /// What the model is told about this tool, and how it is classed.
    pub fn spec(self) -> ToolSpec {
        let object = |properties: Value| json!({"type": "object", "properties": properties});
        let with = |properties: Value, required: &[&str]| json!({"type": "object", "properties": properties, "required": required});
        let (description, parameters, side_effect, requires_confirmation) = match self {
            // Worded as an action the model takes: worded as a noun phrase ("The current
            // local date, time, …"), the 1.5B model wrote it out as its answer, with a
            // made-up date, instead of calling it (docs/PERFORMANCE.md, bench-llm).
            Self::GetDatetime => (
                "Look up today's date, the current local time and the weekday. You cannot know \
                 them without calling this.",
                object(json!({
                    "zone": {"type": "string", "description": "Only for another place's time: its city or time zone, e.g. Tokyo"}
                })),
                SideEffect::ReadOnly,
                false,
            ),
            Self::SetTimer => (
                "Start a timer or reminder that notifies the user when it ends.",
                with(
                    json!({
                        "minutes": {"type": "number", "description": "Minutes from now (may be fractional)"},
                        "label": {"type": "string", "description": "What the reminder says"}
                    }),
                    &["minutes"],
                ),
                SideEffect::Local,
                false,
            ),
            Self::Notify => (
                "Show a desktop notification.",
                with(json!({"title": {"type": "string"}, "body": {"type": "string"}}), &["title"]),
                SideEffect::Local,
                false,
            ),
            Self::ClipboardCopy => (
                "Copy text to the clipboard.",
                with(json!({"text": {"type": "string"}}), &["text"]),
                SideEffect::Local,
                false,
            ),
            Self::OpenUrl => (
                "Open a web page or mail link in the user's browser.",
                with(
                    json!({"url": {"type": "string", "description": "An http, https or mailto URL"}}),
                    &["url"],
                ),
                SideEffect::External,
                true,
            ),
            Self::ListDir => (
                "List the files and folders in one of the user's document folders.",
                object(json!({
                    "path": {"type": "string", "description": "The folder, e.g. \"notes\"; empty for the first document folder"}
                })),
                SideEffect::ReadOnly,
                false,
            ),
            Self::ReadFile => (
                "Read one of the user's documents (text, Markdown, PDF or DOCX) from their document folders.",
                with(
                    json!({
                        "path": {"type": "string", "description": "The file, e.g. \"notes/shopping.md\""},
                        "offset": {"type": "integer", "description": "Character to start from, to read on in a long file"}
                    }),
                    &["path"],
                ),
                SideEffect::ReadOnly,
                false,
            ),
            Self::FetchWeb => (
                "Read the text of the web page at a URL, to answer what the page says.",
                with(
                    json!({"url": {"type": "string", "description": "An http or https URL"}}),
                    &["url"],
                ),
                SideEffect::External,
                false,
            ),
            Self::CaptureScreen => (
                "Read the text on the user's screen, or in the window they are using.",
                object(json!({
                    "window": {"type": "boolean", "description": "true for the focused window only"}
                })),
                SideEffect::ReadOnly,
                false,
            ),
            Self::WebSearch => (
                "Search the web; returns the first results with their links.",
                with(
                    json!({"query": {"type": "string", "description": "What to search for"}}),
                    &["query"],
                ),
                SideEffect::External,
                false,
            ),
        };
        ToolSpec {
            name: self.name().to_owned(),
            description: description.to_owned(),
            parameters,
            side_effect,
            requires_confirmation,
        }
    }
}

/// A context tool's outcome.
fn done(result: Result<String, String>) -> Outcome {
    match result {
        Ok(text) => Outcome::done(true, text),
        Err(why) => Outcome::done(false, why),
    }
}

/// Runs file work off the async threads.
async fn blocking(work: impl FnOnce() -> Result<String, String> + Send + 'static) -> Outcome {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => done(result),
        Err(e) => Outcome::done(false, format!("reading failed: {e}")),
    }
}

fn command_spec(command: &ToolCommand) -> ToolSpec {
    let mut properties = Map::new();
    for (name, description) in &command.parameters {
        properties.insert(name.clone(), json!({"type": "string", "description": description}));
    }
    let required: Vec<&String> = command.parameters.keys().collect();
    ToolSpec {
        name: command.name.clone(),
        description: command.description.clone(),
        parameters: json!({"type": "object", "properties": properties, "required": required}),
        side_effect: command.side_effect,
        requires_confirmation: command.requires_confirmation,
    }
}

/// The checks of a JSON schema our tools use: an object, required keys present, and the
/// declared types of the properties given.
fn check_args(schema: &Value, args: &Value) -> Result<(), String> {
    let Some(object) = args.as_object() else {
        return Err("expected an object of arguments".into());
    };
    for key in schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        if !object.contains_key(key) {
            return Err(format!("'{key}' is required"));
        }
    }
    for (key, value) in object {
        let Some(kind) = schema["properties"][key]["type"].as_str() else {
            continue;
        };
        let fits = match kind {
            "string" => value.is_string(),
            "number" => value.is_number(),
            // A whole number written as a float (5.0) is an integer, as in JSON Schema.
            "integer" => value.as_f64().is_some_and(|n| n.fract() == 0.0),
            "boolean" => value.is_boolean(),
            _ => true,
        };
        if !fits {
            return Err(format!("'{key}' must be a {kind}, not {value}"));
        }
    }
    Ok(())
}

fn str_arg(args: &Value, key: &str) -> String {
    args[key].as_str().unwrap_or_default().to_owned()
}

/// The time as `get_datetime` reports it: the user's own, said to be so (asked the time in
/// Tokyo, the 1.5B model called it without a zone and gave the local time as Tokyo's).
pub fn now_text(now: chrono::DateTime<chrono::Local>) -> String {
    now.format("%A %-d %B %Y, %H:%M:%S, the user's local time (%:z)").to_string()
}

fn set_timer(args: &Value) -> Outcome {
    let minutes = args["minutes"].as_f64().unwrap_or(0.0);
    if !(minutes > 0.0 && minutes <= 24.0 * 60.0) {
        return Outcome::done(false, format!("minutes must be between 0 and 1440, not {minutes}"));
    }
    let label =
        args["label"].as_str().filter(|l| !l.trim().is_empty()).unwrap_or("Timer").to_owned();
    let after = Duration::from_secs_f64(minutes * 60.0);
    let result = format!("timer '{label}' set for {minutes} minute(s)");
    Outcome::Timer { after, label, result }
}

async fn copy_to_clipboard(text: &str) -> Outcome {
    let wayland = std::env::var_os("WAYLAND_DISPLAY").is_some();
    let candidates: &[&[&str]] = if wayland {
        &[&["wl-copy"], &["xclip", "-selection", "clipboard"]]
    } else {
        &[&["xclip", "-selection", "clipboard"], &["xsel", "--clipboard", "--input"], &["wl-copy"]]
    };
    for argv in candidates {
        match run_argv(argv, Some(text)).await {
            Outcome::Done { ok: false, result } if result.starts_with("not installed") => {}
            Outcome::Done { ok: true, .. } => {
                return Outcome::done(true, "copied to the clipboard");
            }
            other => return other,
        }
    }
    Outcome::done(false, "not installed: no clipboard tool (install wl-clipboard or xclip)")
}

/// Runs a program (no shell) with an optional stdin, within [`RUN_TIMEOUT`].
async fn run_argv(argv: &[&str], stdin: Option<&str>) -> Outcome {
    let Some((program, args)) = argv.split_first() else {
        return Outcome::done(false, "empty command");
    };
    let started = Instant::now();
    let child = tokio::process::Command::new(program)
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Outcome::done(false, format!("not installed: '{program}' is not on PATH"));
        }
        Err(e) => return Outcome::done(false, format!("cannot run '{program}': {e}")),
    };
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        let _ = pipe.write_all(text.as_bytes()).await;
    }
    match tokio::time::timeout(RUN_TIMEOUT, child.wait_with_output()).await {
        Err(_) => Outcome::done(
            false,
            format!("'{program}' did not finish within {RUN_TIMEOUT:?}; stopped"),
        ),
        Ok(Err(e)) => Outcome::done(false, format!("'{program}' failed: {e}")),
        Ok(Ok(output)) => {
            let stdout = tail(&String::from_utf8_lossy(&output.stdout));
            let stderr = tail(&String::from_utf8_lossy(&output.stderr));
            if output.status.success() {
                let text = if stdout.is_empty() {
                    format!("done in {} ms", started.elapsed().as_millis())
                } else {
                    stdout
                };
                Outcome::done(true, text)
            } else {
                Outcome::done(false, format!("'{program}' exited with {}: {stderr}", output.status))
            }
        }
    }
}

/// The last 500 characters of a program's output, trimmed.
fn tail(text: &str) -> String {
    let text = text.trim();
    let skip = text.chars().count().saturating_sub(500);
    text.chars().skip(skip).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn an_integer_is_any_whole_number_as_the_call_parser_takes_it() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
        for (n, fits) in
            [(json!(5), true), (json!(5.0), true), (json!(5.5), false), (json!("5"), false)]
        {
            assert_eq!(check_args(&schema, &json!({"n": n})).is_ok(), fits, "{n}");
        }
    }

    fn command(name: &str, argv: &[&str], params: &[(&str, &str)]) -> ToolCommand {
        ToolCommand {
            name: name.into(),
            description: format!("{name} tool"),
            argv: argv.iter().map(|s| (*s).to_owned()).collect(),
            side_effect: SideEffect::Local,
            requires_confirmation: false,
            parameters: params.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            sentences: Vec::new(),
        }
    }

    #[tokio::test]
    async fn get_datetime_reports_the_local_time() {
        let registry = Registry::new(&[]).unwrap();
        let out = registry.run("get_datetime", &json!({})).await;
        assert!(out.ok(), "{out:?}");
        let at = chrono::Local.with_ymd_and_hms(2026, 11, 30, 9, 5, 0).unwrap();
        assert!(
            now_text(at).starts_with("Monday 30 November 2026, 09:05:00, the user's local time (")
        );
    }

    #[tokio::test]
    async fn get_datetime_reports_another_places_time_or_says_it_knows_no_such_place() {
        let registry = Registry::new(&[]).unwrap();
        let there = registry.run("get_datetime", &json!({"zone": "Tokyo"})).await;
        assert!(there.ok() && there.result().ends_with(" in Asia/Tokyo (+09:00)"), "{there:?}");
        let nowhere = registry.run("get_datetime", &json!({"zone": "Narnia"})).await;
        assert!(!nowhere.ok() && nowhere.result().contains("'Narnia'"), "{nowhere:?}");
    }

    #[tokio::test]
    async fn arguments_are_checked_against_the_schema() {
        let registry = Registry::new(&[]).unwrap();
        let out = registry.run("set_timer", &json!({})).await;
        assert_eq!(out, Outcome::done(false, "bad arguments for set_timer: 'minutes' is required"));
        let out = registry.run("set_timer", &json!({"minutes": "five"})).await;
        assert!(out.result().contains("'minutes' must be a number"), "{out:?}");
        let out = registry.run("set_timer", &json!({"minutes": 1.5, "label": "tea"})).await;
        assert_eq!(
            out,
            Outcome::Timer {
                after: Duration::from_secs(90),
                label: "tea".into(),
                result: "timer 'tea' set for 1.5 minute(s)".into()
            }
        );
        let out = registry.run("nope", &json!({})).await;
        assert_eq!(out, Outcome::done(false, "there is no tool named 'nope'"));
    }

    #[tokio::test]
    async fn configured_commands_run_without_a_shell() {
        let echo = command("say", &["echo", "you said: {text}"], &[("text", "what to say")]);
        let registry = Registry::new(&[echo]).unwrap();
        let spec = registry.get("say").unwrap();
        assert_eq!(spec.parameters["required"], json!(["text"]));
        // Shell syntax in an argument stays one literal argument.
        let out = registry.run("say", &json!({"text": "hi; rm -rf / $(reboot)"})).await;
        assert_eq!(out, Outcome::done(true, "you said: hi; rm -rf / $(reboot)"));
    }

    #[tokio::test]
    async fn failing_and_missing_programs_are_reported() {
        let fail = command("fail", &["sh", "-c", "echo broken >&2; exit 3"], &[]);
        let missing = command("missing", &["no-such-program-stt"], &[]);
        let registry = Registry::new(&[fail, missing]).unwrap();
        let out = registry.run("fail", &json!({})).await;
        assert!(!out.ok());
        assert!(
            out.result().contains("exit status: 3") && out.result().contains("broken"),
            "{out:?}"
        );
        let out = registry.run("missing", &json!({})).await;
        assert_eq!(
            out,
            Outcome::done(false, "not installed: 'no-such-program-stt' is not on PATH")
        );
    }

    #[tokio::test]
    async fn open_url_needs_confirmation_and_refuses_other_schemes() {
        let registry = Registry::new(&[]).unwrap();
        assert!(registry.get("open_url").unwrap().requires_confirmation);
        let out = registry.run("open_url", &json!({"url": "file:///etc/passwd"})).await;
        assert!(!out.ok() && out.result().contains("only http, https and mailto"), "{out:?}");
    }

    #[test]
    fn a_command_may_not_shadow_a_builtin() {
        let err = Registry::new(&[command("get_datetime", &["date"], &[])]).unwrap_err();
        assert!(err.contains("'get_datetime' has the name of a built-in tool"), "{err}");
    }
}
