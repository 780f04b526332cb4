//! The logic of `stt-ctl`: one control verb per call, for scripts and global hotkeys.
//!
//! [`Cli`] is the command line; [`Verb`] the verbs: every [`Request`] the assistant takes,
//! its name, arguments and help declared on the request itself (stt-proto's `cli` feature),
//! and the few verbs done here; [`run`] connects, sends, prints the reply, and returns the exit code:
//! 0 accepted, 1 the assistant answered with an error, 2 usage, 3 cannot connect.
//! Some verbs do a little more on this side: `speaker-merge` asks the roster afterwards to
//! print the name of the speaker that stays, `speaker-play` asks the roster and plays the
//! speaker's sample here ([`play`]), `say` speaks with the configured voice here
//! ([`say`]), `vocabulary` edits the vocabulary file here ([`vocabulary`]), and `watch`
//! follows the assistant for a status bar ([`watch`]).
//!
//! It stays fast: a single-threaded runtime, and no work beyond reading the config (for a
//! socket override) and one connect-send-receive.

pub mod play;
pub mod say;
pub mod vocabulary;
pub mod watch;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{CommandFactory, Parser, Subcommand};

use stt_bus::BusError;
use stt_proto::{AssistantEvent, MemoryRequest, Request, Speakers, Status};

/// Exit status: the assistant accepted the request.
pub const EXIT_OK: u8 = 0;
/// Exit status: the assistant answered with an error (or `speaker-play` could not play).
pub const EXIT_REFUSED: u8 = 1;
/// Exit status: bad usage (unknown verb, missing argument, bad config).
pub const EXIT_USAGE: u8 = 2;
/// Exit status: the assistant could not be reached.
pub const EXIT_UNREACHABLE: u8 = 3;

/// Send one control verb to stt-assistant.
///
/// Exit status: 0 accepted, 1 the assistant answered with an error (or speaker-play could
/// not play), 2 usage, 3 cannot connect.
#[derive(Debug, Parser)]
#[command(name = "stt-ctl", version, about, long_about = None)]
pub struct Cli {
    /// Print the assistant's reply as its raw JSON line
    #[arg(long, global = true)]
    pub json: bool,

    /// Control socket to use instead of the configured one
    #[arg(long, value_name = "PATH", global = true)]
    pub socket: Option<PathBuf>,

    /// Config file to read instead of $XDG_CONFIG_HOME/stt/config.toml
    #[arg(long, value_name = "PATH", global = true)]
    pub config: Option<PathBuf>,

    /// Give up waiting for the reply after this many milliseconds
    #[arg(long, value_name = "MS", default_value_t = 3000, global = true)]
    pub timeout_ms: u64,

    #[command(subcommand)]
    pub verb: Verb,
}

/// The verbs: every request the assistant takes, declared with its arguments and help on
/// the request itself ([`Request`], clap derive), and the few verbs done on this side.
#[derive(Debug, Clone, PartialEq, Subcommand)]
pub enum Verb {
    #[command(flatten)]
    Request(Request),
    /// Play speaker ID's voice sample (with pw-play, paplay or aplay), to hear who it is
    SpeakerPlay {
        /// Speaker id, as `speaker-list` shows it
        id: String,
        /// Print the sample's path instead of playing it
        #[arg(long)]
        print: bool,
    },
    /// The words whisper should expect (names, jargon it misspells): list, add or remove
    /// them; the running daemon takes a change from its next segment
    Vocabulary {
        #[command(subcommand)]
        verb: VocabularyVerb,
    },
    /// Speak TEXT with the configured voice ([voice].model), or write it to a WAV file
    Say {
        /// What to say; several words are joined with spaces
        #[arg(required = true, num_args = 1.., value_name = "TEXT")]
        text: Vec<String>,
        /// Write the speech to this WAV file (16-bit, the voice's rate) instead of playing it
        #[arg(long, value_name = "FILE")]
        wav: Option<PathBuf>,
    },
    /// Follow the assistant for a status bar: one line per change (idle, listening, thinking,
    /// speaking, dictating, wake off; off while it cannot be reached); runs until killed
    Watch {
        /// plain: the state alone (i3blocks, polybar); waybar: its JSON, with the last words
        /// heard as the tooltip
        #[arg(long, value_enum, default_value = "plain")]
        format: watch::Format,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    Completions { shell: clap_complete::Shell },
    /// Print the default config file, every key documented
    ConfigDefault,
}

/// What `stt-ctl vocabulary` does.
#[derive(Debug, Clone, PartialEq, Subcommand)]
pub enum VocabularyVerb {
    /// Show the vocabulary: `[daemon].vocabulary`, then the vocabulary file's
    List,
    /// Add terms to the vocabulary file, each a word or a short phrase (quote a phrase)
    Add {
        #[arg(required = true, num_args = 1.., value_name = "TERM")]
        terms: Vec<String>,
    },
    /// Remove a term from the vocabulary file
    Remove { term: String },
}

impl Verb {
    /// The request this verb sends, or `None` for verbs that are not one request: answered
    /// here (`completions`, `config-default`) or done here (`speaker-play`, `say`,
    /// `vocabulary`).
    pub fn request(&self) -> Option<Request> {
        let Self::Request(request) = self else { return None };
        // The assistant may run elsewhere in the file system's eyes (another cwd): it gets
        // absolute directories.
        let absolute = |dir: &str| {
            std::path::absolute(dir).map_or_else(|_| dir.to_owned(), |d| d.display().to_string())
        };
        Some(match request {
            Request::Memory(MemoryRequest::Export { dir }) => {
                Request::Memory(MemoryRequest::Export { dir: absolute(dir) })
            }
            Request::Memory(MemoryRequest::Import { dir }) => {
                Request::Memory(MemoryRequest::Import { dir: absolute(dir) })
            }
            other => other.clone(),
        })
    }
}

/// Parses the command line and runs it.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { EXIT_USAGE } else { EXIT_OK });
        }
    };
    ExitCode::from(run(&cli, &mut std::io::stdout().lock(), &mut std::io::stderr().lock()))
}

/// Runs `cli`, writing the reply to `out` and problems to `err`; returns the exit status.
pub fn run(cli: &Cli, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    if let Verb::SpeakerPlay { id, print } = &cli.verb {
        return play::run(cli, id, *print, out, err);
    }
    if let Verb::Vocabulary { verb } = &cli.verb {
        return vocabulary::run(cli, verb, out, err);
    }
    if let Verb::Say { text, wav } = &cli.verb {
        return say::run(cli, &text.join(" "), wav.as_deref(), out, err);
    }
    if let Verb::Watch { format } = &cli.verb {
        let socket = match socket_path(cli) {
            Ok(path) => path,
            Err(e) => {
                let _ = writeln!(err, "stt-ctl: {e}");
                return EXIT_USAGE;
            }
        };
        // It ends only when the bar stops reading.
        let _ = watch::run(&socket, *format, out);
        return EXIT_OK;
    }
    let Some(request) = cli.verb.request() else {
        return local(&cli.verb, out);
    };
    // A held request's reply comes after its wait: the timeout starts after it.
    let held = match &request {
        Request::CommandExecute { wait_ms: Some(ms) } => *ms,
        // Writing or reading a whole memory, or waiting for a dream to start, takes a while.
        Request::Memory(
            MemoryRequest::Export { .. }
            | MemoryRequest::Import { .. }
            | MemoryRequest::Forget { .. }
            | MemoryRequest::Dream,
        ) => 30_000,
        _ => 0,
    };
    let reply = match ask(cli, &request, held, err) {
        Ok(reply) => reply,
        Err(code) => return code,
    };
    let refused = matches!(reply.event, AssistantEvent::Error(_));
    let printed = if cli.json {
        out.write_all(&reply.line)
    } else if let AssistantEvent::Error(e) = &reply.event {
        writeln!(err, "stt-ctl: {} ({})", e.message, e.code)
    } else {
        out.write_all(describe_for(cli, &reply.event).as_bytes())
    };
    // stdout closed: the reply arrived all the same, so the exit status stands.
    let _ = printed;
    if refused { EXIT_REFUSED } else { EXIT_OK }
}

/// Sends `request` (its reply may take `held` ms more than `--timeout-ms`) and returns the
/// direct reply; a failure to get one is written to `err` and comes back as the exit status.
fn ask(cli: &Cli, request: &Request, held: u64, err: &mut dyn Write) -> Result<stt_bus::Reply, u8> {
    let socket = match socket_path(cli) {
        Ok(path) => path,
        Err(e) => {
            let _ = writeln!(err, "stt-ctl: {e}");
            return Err(EXIT_USAGE);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            let _ = writeln!(err, "stt-ctl: cannot start: {e}");
            return Err(EXIT_UNREACHABLE);
        }
    };
    let timeout = Duration::from_millis(cli.timeout_ms.saturating_add(held));
    runtime.block_on(stt_bus::request(&socket, "stt-ctl", request, timeout)).map_err(|e| {
        let _ = writeln!(err, "stt-ctl: {e}");
        match e {
            BusError::Protocol(_) => EXIT_REFUSED,
            _ => EXIT_UNREACHABLE,
        }
    })
}

/// The roster as the assistant has it.
fn roster(cli: &Cli, err: &mut dyn Write) -> Result<stt_bus::Reply, u8> {
    ask(cli, &Request::SpeakerList, 0, err)
}

/// [`describe`], with what only the verb knows: which speakers an ack is about.
fn describe_for(cli: &Cli, event: &AssistantEvent) -> String {
    if let (Verb::Request(Request::VoiceToggle), AssistantEvent::Status(status)) =
        (&cli.verb, event)
    {
        return format!("voice {}\n", if status.voice { "on" } else { "off" });
    }
    let AssistantEvent::Ack(_) = event else { return describe(event) };
    let said = cli.verb.request().map_or("done", |request| request.acknowledgement());
    match &cli.verb {
        Verb::Request(Request::SpeakerForget { speaker_id: id }) => {
            format!("{id} forgotten: stt-daemon deletes its voice print and sample\n")
        }
        Verb::Request(Request::SpeakerMerge { speaker_id: id, into }) => {
            // Only to show the name the speaker that stays has now: the merge is done, so a
            // roster that does not come leaves the name out, not an error.
            let name = roster(cli, &mut std::io::sink()).ok().and_then(|reply| match reply.event {
                AssistantEvent::SpeakerList(list) => {
                    list.speakers.into_iter().find(|s| s.id == *into).and_then(|s| s.name)
                }
                _ => None,
            });
            match name {
                Some(name) => format!("{id} merged into {into} ({name})\n"),
                None => format!("{id} merged into {into}\n"),
            }
        }
        _ => format!("{said}\n"),
    }
}

fn local(verb: &Verb, out: &mut dyn Write) -> u8 {
    match verb {
        Verb::Completions { shell } => {
            clap_complete::generate(*shell, &mut Cli::command(), "stt-ctl", out);
        }
        Verb::ConfigDefault => {
            let _ = out.write_all(stt_config::DEFAULT_CONFIG_TOML.as_bytes());
        }
        _ => {}
    }
    EXIT_OK
}

fn socket_path(cli: &Cli) -> Result<PathBuf, stt_config::ConfigError> {
    if let Some(path) = &cli.socket {
        return Ok(path.clone());
    }
    let config = stt_config::Config::load(cli.config.as_deref())?;
    stt_config::dirs::assistant_socket(&config)
}

/// A reply as a person reads it, newline included.
pub fn describe(event: &AssistantEvent) -> String {
    match event {
        // What an ack means is the request's (`describe_for`); alone, it says which it was.
        AssistantEvent::Ack(ack) => format!("{}: done\n", ack.command),
        AssistantEvent::Status(status) => describe_status(status),
        AssistantEvent::SpeakerList(list) => describe_speakers(list),
        AssistantEvent::Error(e) => format!("error: {} ({})\n", e.message, e.code),
        AssistantEvent::ChatOutput { text }
        | AssistantEvent::IntentOutput { text, .. }
        | AssistantEvent::MemoryOutput { text, .. }
        | AssistantEvent::TaskOutput { text, .. } => format!("{text}\n"),
        other => format!("{other:?}\n"),
    }
}

fn describe_status(s: &Status) -> String {
    let stt = if s.stt_healthy {
        "healthy".to_owned()
    } else if s.stt_detail.is_empty() {
        "unhealthy".to_owned()
    } else {
        format!("unhealthy: {}", s.stt_detail)
    };
    let llm = if !s.llm_enabled {
        "disabled (no executor configured)".to_owned()
    } else {
        let state = match s.llm_reachable {
            Some(true) => "answering",
            Some(false) => "not answering",
            None => "not probed yet",
        };
        match &s.llm_provider {
            None => format!("no provider chosen ({state})"),
            Some(provider) => {
                let model = if s.llm_model.is_empty() {
                    String::new()
                } else {
                    format!(" · {}", s.llm_model)
                };
                format!("{provider}{model} · {} ({state})", s.llm_endpoint)
            }
        }
    };
    let buffer = match (s.command_buffer.is_empty(), s.command_edited) {
        (true, _) => "(empty)".to_owned(),
        (false, false) => format!("\"{}\"", s.command_buffer),
        (false, true) => format!("\"{}\" (edited)", s.command_buffer),
    };
    let mut timers = String::new();
    for t in &s.timers {
        timers.push_str(&format!(
            "timer:      {} in {:.0} s (id {})\n",
            t.label, t.remaining_s, t.id
        ));
    }
    let chat = match &s.chat {
        Some(c) if c.turns > 0 => format!(
            "chat:       {} turns · tokens {} in ({} cached), {} out\n",
            c.turns, c.total.prompt, c.total.cached, c.total.completion
        ),
        _ => String::new(),
    };
    format!(
        "mode:       {}\nstt:        {stt}\nllm:        {llm}\n{chat}inference:  {} queued{}\nviewers:    {}\ncommand:    {buffer}\n{timers}voice:      {}\n{}version:    {}\n",
        s.mode.as_str(),
        s.inference_queue,
        if s.inference_busy { ", busy" } else { "" },
        s.viewers,
        if s.voice { "on" } else { "off" },
        describe_lanes(&s.lanes),
        s.version,
    )
}

/// The lanes on one line, each with its state and what waits for it; then why each lane that
/// is off is off, a line each.
fn describe_lanes(lanes: &[stt_proto::LaneStatus]) -> String {
    if lanes.is_empty() {
        return String::new();
    }
    let each: Vec<String> = lanes
        .iter()
        .map(|lane| {
            let state = match lane.state {
                stt_proto::LaneState::Started => "started",
                stt_proto::LaneState::Ready => "ready",
                stt_proto::LaneState::Off => "off",
            };
            match lane.queued {
                0 => format!("{} {state}", lane.name),
                n => format!("{} {state} ({n} queued)", lane.name),
            }
        })
        .collect();
    let mut out = format!("lanes:      {}\n", each.join(" · "));
    for lane in lanes {
        if let Some(why) = &lane.why {
            out.push_str(&format!("off:        {}: {why}\n", lane.name));
        }
    }
    out
}

fn describe_speakers(list: &Speakers) -> String {
    if list.speakers.is_empty() {
        return "no speakers yet\n".to_owned();
    }
    let mut text = String::new();
    for spk in &list.speakers {
        let status = match spk.status {
            stt_proto::SpeakerState::Provisional => "provisional",
            stt_proto::SpeakerState::Confirmed => "confirmed",
            stt_proto::SpeakerState::Unknown => "(newer state)",
        };
        text.push_str(&format!(
            "{}  {:<20} {:<11} {:>7.1} s  since {}\n",
            spk.id,
            spk.name.as_deref().unwrap_or("(unnamed)"),
            status,
            spk.cumulative_s,
            spk.created_at,
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use stt_proto::{IntentsRequest, TaskRequest};

    use super::*;

    #[track_caller]
    fn check(args: &[&str], expected: Option<Request>) {
        let cli = Cli::try_parse_from(std::iter::once("stt-ctl").chain(args.iter().copied()))
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        assert_eq!(cli.verb.request(), expected, "{args:?}");
    }

    #[test]
    fn status_shows_each_lane_and_why_one_is_off() {
        use stt_proto::{LaneState, LaneStatus};
        let lane = |name: &str, state, why: Option<&str>, queued| LaneStatus {
            name: name.into(),
            state,
            why: why.map(str::to_owned),
            queued,
        };
        let shown = describe_lanes(&[
            lane("memory", LaneState::Ready, None, 0),
            lane("writer", LaneState::Ready, None, 3),
            lane("voice", LaneState::Off, Some("no output device: plug one in"), 0),
            lane("dictation", LaneState::Started, None, 0),
        ]);
        assert_eq!(
            shown,
            "lanes:      memory ready · writer ready (3 queued) · voice off · dictation started\n\
             off:        voice: no output device: plug one in\n"
        );
        assert_eq!(describe_lanes(&[]), "", "an older assistant lists none");
    }

    #[test]
    fn every_request_a_client_can_send_has_a_verb() {
        use clap::CommandFactory;
        use stt_proto::Message;
        // One way to call each verb; a new verb fails here until it is listed.
        let calls: &[&[&str]] = &[
            &["command-start"],
            &["command-execute"],
            &["command-cancel"],
            &["command-edit", "--text", "x"],
            &["chat-toggle"],
            &["dictate-start"],
            &["dictate-stop"],
            &["dictate-toggle"],
            &["clear"],
            &["status"],
            &["speaker-list"],
            &["speaker-name", "spk_0001", "Ana"],
            &["speaker-forget", "spk_0003"],
            &["speaker-merge", "spk_0004", "spk_0001"],
            &["confirm"],
            &["deny"],
            &["timer-cancel", "1"],
            &["chat-send", "hello"],
            &["chat-command", "/providers"],
            &["chat-stop"],
            &["memory", "stats"],
            &["task", "next"],
            &["intents", "test", "what time is it"],
            &["voice-toggle"],
            &["speaker-play", "spk_0001"],
            &["vocabulary", "list"],
            &["say", "hello"],
            &["watch"],
            &["completions", "bash"],
            &["config-default"],
        ];
        let verbs: Vec<String> =
            Cli::command().get_subcommands().map(|c| c.get_name().to_owned()).collect();
        let listed: Vec<String> = calls.iter().map(|c| c[0].to_owned()).collect();
        assert_eq!(verbs, listed, "list every verb in `calls`");
        let mut sent: Vec<&str> = calls
            .iter()
            .filter_map(|args| {
                let cli =
                    Cli::try_parse_from(std::iter::once("stt-ctl").chain(args.iter().copied()))
                        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
                cli.verb.request().map(|r| r.kind())
            })
            .collect();
        sent.sort_unstable();
        // `hello` and `subscribe` belong to a connection, not to a verb.
        let mut requests: Vec<&str> = Request::TYPES
            .iter()
            .copied()
            .filter(|t| !matches!(*t, "hello" | "subscribe"))
            .collect();
        requests.sort_unstable();
        assert_eq!(sent, requests, "every request type needs a verb in stt-ctl");
    }

    #[test]
    fn every_verb_becomes_its_one_request() {
        check(&["command-start"], Some(Request::CommandStart));
        check(&["command-execute"], Some(Request::CommandExecute { wait_ms: None }));
        check(
            &["command-execute", "--wait"],
            Some(Request::CommandExecute { wait_ms: Some(3000) }),
        );
        check(
            &["command-execute", "--wait=800"],
            Some(Request::CommandExecute { wait_ms: Some(800) }),
        );
        check(&["command-cancel"], Some(Request::CommandCancel));
        check(
            &["command-edit", "--text", "open the door"],
            Some(Request::CommandEdit { text: "open the door".into() }),
        );
        check(&["chat-toggle"], Some(Request::ChatToggle));
        check(&["dictate-toggle"], Some(Request::DictateToggle));
        check(&["clear"], Some(Request::Clear));
        check(
            &["chat-send", "what", "time is it"],
            Some(Request::ChatSend { text: "what time is it".into() }),
        );
        check(
            &["chat-command", "/model", "qwen2.5:7b"],
            Some(Request::ChatCommand { line: "/model qwen2.5:7b".into() }),
        );
        check(&["chat-stop"], Some(Request::ChatStop));
        check(&["status"], Some(Request::Status));
        check(&["speaker-list"], Some(Request::SpeakerList));
        check(
            &["speaker-name", "spk_0001", "Efren"],
            Some(Request::SpeakerName { speaker_id: "spk_0001".into(), name: "Efren".into() }),
        );
        check(
            &["speaker-forget", "spk_0003"],
            Some(Request::SpeakerForget { speaker_id: "spk_0003".into() }),
        );
        check(
            &["speaker-merge", "spk_0004", "spk_0001"],
            Some(Request::SpeakerMerge { speaker_id: "spk_0004".into(), into: "spk_0001".into() }),
        );
        // Asks the roster, then plays here: not one request.
        check(&["speaker-play", "spk_0001"], None);
        check(&["speaker-play", "spk_0001", "--print"], None);
        check(&["confirm"], Some(Request::Confirm { call_id: None }));
        check(&["deny", "--call-id", "c1"], Some(Request::Deny { call_id: Some("c1".into()) }));
        check(&["timer-cancel", "42"], Some(Request::TimerCancel { timer_id: 42 }));
        check(
            &["intents", "test", "what", "time is it"],
            Some(Request::Intents(IntentsRequest::Test { text: "what time is it".into() })),
        );
        check(&["completions", "bash"], None);
        check(&["config-default"], None);
    }

    #[test]
    fn every_task_verb_becomes_its_request() {
        let task = |t| Some(Request::Task(t));
        check(&["task", "list"], task(TaskRequest::List { status: None }));
        check(
            &["task", "list", "--status", "open"],
            task(TaskRequest::List { status: Some("open".into()) }),
        );
        check(&["task", "show", "4"], task(TaskRequest::Show { id: 4 }));
        check(
            &["task", "add", "Learn", "Rust", "--due", "2026-12-20", "--priority", "2"],
            task(TaskRequest::Add {
                title: "Learn Rust".into(),
                goal: None,
                due: Some("2026-12-20".into()),
                priority: Some(2),
            }),
        );
        check(&["task", "done", "4"], task(TaskRequest::Done { id: 4, item: false }));
        check(&["task", "done", "9", "--item"], task(TaskRequest::Done { id: 9, item: true }));
        check(&["task", "next"], task(TaskRequest::Next { limit: None }));
    }

    #[test]
    fn every_memory_verb_becomes_its_request() {
        let memory = |m| Some(Request::Memory(m));
        check(
            &["memory", "list", "--kind", "intention"],
            memory(MemoryRequest::List {
                kind: Some("intention".into()),
                archived: false,
                limit: None,
            }),
        );
        check(&["memory", "show", "12"], memory(MemoryRequest::Show { id: 12 }));
        check(
            &["memory", "search", "my", "sister", "--limit", "3"],
            memory(MemoryRequest::Search { text: "my sister".into(), limit: Some(3) }),
        );
        check(
            &["memory", "forget", "12"],
            memory(MemoryRequest::Forget { id: Some(12), all: false }),
        );
        check(
            &["memory", "forget", "--all"],
            memory(MemoryRequest::Forget { id: None, all: true }),
        );
        check(
            &["memory", "export", "/tmp/m"],
            memory(MemoryRequest::Export { dir: "/tmp/m".into() }),
        );
        let here = std::env::current_dir().unwrap().join("m").display().to_string();
        check(&["memory", "import", "m"], memory(MemoryRequest::Import { dir: here }));
        check(&["memory", "dream"], memory(MemoryRequest::Dream));
        check(&["memory", "dreams"], memory(MemoryRequest::Dreams { limit: None }));
        check(&["memory", "tree"], memory(MemoryRequest::Tree { node: None }));
        check(&["memory", "tree", "7"], memory(MemoryRequest::Tree { node: Some(7) }));
        check(&["memory", "stats"], memory(MemoryRequest::Stats));
    }

    #[test]
    fn usage_errors_are_rejected() {
        for args in [
            &["fly"][..],
            &["command-edit"],
            &["speaker-name", "spk_1"],
            &["speaker-forget"],
            &["speaker-merge", "spk_1"],
            &["speaker-play"],
            &[],
            &["memory"],
            &["memory", "forget"],
            &["memory", "forget", "3", "--all"],
            &["memory", "show", "x"],
        ] {
            let argv = std::iter::once("stt-ctl").chain(args.iter().copied());
            assert!(Cli::try_parse_from(argv).is_err(), "{args:?} should not parse");
        }
    }

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
