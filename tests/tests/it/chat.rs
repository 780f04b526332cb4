//! The chat surface across real processes: typed turns through `stt-ctl chat-send`, slash
//! commands, stopping a reply, the session surviving a restart, a failure row of the
//! provider registry each (real local HTTP servers that fail in that way, a missing or
//! signed-out CLI), and CLI providers carrying a conversation through their resume handles.
//! The model is the scripted server (or fake CLIs); no daemon is needed for chat.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;
use stt_proto::{AssistantEvent, ChatMessage, ChatRole};
use stt_testkit::fake_cli::{self, Behaviour};
use stt_testkit::llm_server::{LlmServer, Script};
use stt_testkit::viewer::{Seen, answered, events, reattached, status, watch_attached};
use stt_testkit::{DEADLINE, Output, Proc, Sandbox, expect_within};

/// The keyed APIs' usual variables, emptied so that a developer's own keys never make a
/// provider live in a test.
const NO_KEYS: [(&str, &str); 3] =
    [("OPENAI_API_KEY", ""), ("ANTHROPIC_API_KEY", ""), ("ZAI_API_KEY", "")];

/// A port nothing listens on.
fn dead_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Local servers and CLIs pointed where nothing answers, so only what a test configures is
/// there, whatever runs on the machine.
fn nothing_else(dead: u16) -> String {
    let url = format!("http://127.0.0.1:{dead}/v1/chat/completions");
    format!(
        "local_port = {dead}\n\
         [llm.providers.ollama]\nendpoint = \"{url}\"\n\
         [llm.providers.lmstudio]\nendpoint = \"{url}\"\n\
         [llm.providers.llamacpp]\nendpoint = \"{url}\"\n"
    )
}

fn write_config(sandbox: &Sandbox, llm: &str) {
    let dead = dead_port();
    let config = format!("[llm]\n{llm}\n{}", nothing_else(dead));
    std::fs::write(sandbox.config_file(), config).unwrap();
}

/// Starts the assistant with `path` as its PATH (the fakes' directory first, where given),
/// no API keys but `env`, logging at debug; waits for a viewer to be attached.
fn assistant(sandbox: &Sandbox, path: Option<&Path>, env: &[(&str, &str)]) -> (Proc, Seen) {
    let proc = start_assistant(sandbox, path, env);
    let seen = watch_attached(sandbox, DEADLINE);
    (proc, seen)
}

/// Stops `old` and starts another assistant as [`assistant`] does; the viewer `seen` comes
/// back to it by itself (as the TUI does), and is attached when this returns.
fn restart(sandbox: &Sandbox, mut old: Proc, path: Option<&Path>) -> Proc {
    old.signal_and_wait(nix::sys::signal::Signal::SIGTERM);
    let new = start_assistant(sandbox, path, &[]);
    reattached(sandbox, DEADLINE);
    new
}

fn start_assistant(sandbox: &Sandbox, path: Option<&Path>, env: &[(&str, &str)]) -> Proc {
    let path = match path {
        Some(dir) => format!("{}:/usr/bin:/bin", dir.display()),
        None => "/usr/bin:/bin".to_owned(),
    };
    let mut all: Vec<(&str, &str)> = NO_KEYS.to_vec();
    all.push(("PATH", &path));
    all.push(("STT_LOG", "debug"));
    all.extend_from_slice(env);
    sandbox.spawn_with_env("stt-assistant", &[], &all)
}

fn ctl(sandbox: &Sandbox, args: &[&str]) -> Output {
    sandbox.run("stt-ctl", args)
}

fn send(sandbox: &Sandbox, text: &str) {
    let out = ctl(sandbox, &["chat-send", text]);
    assert_eq!(out.code, Some(0), "{out:?}");
}

fn messages(seen: &Seen) -> Vec<ChatMessage> {
    events(seen)
        .into_iter()
        .filter_map(|e| match e {
            AssistantEvent::ChatMessage(m) => Some(m),
            _ => None,
        })
        .collect()
}

/// Waits for a chat line of `role` containing every one of `needles`.
fn line_with(seen: &Seen, role: ChatRole, needles: &[&str]) -> ChatMessage {
    expect_within(&format!("a {role:?} line with {needles:?}"), DEADLINE, || {
        let all = messages(seen);
        all.iter()
            .find(|m| m.role == role && !m.partial && needles.iter().all(|n| m.text.contains(n)))
            .cloned()
            .ok_or_else(|| format!("{all:#?}"))
    })
}

fn session_file(sandbox: &Sandbox) -> PathBuf {
    sandbox.root().join("state/stt/chat-session.json")
}

#[test]
fn a_typed_turn_is_answered_kept_privately_and_carried_on_after_a_restart() {
    let sandbox = Sandbox::new();
    let llm = LlmServer::start();
    write_config(&sandbox, &format!("endpoint = \"{}\"", llm.url()));
    let (first, seen) = assistant(&sandbox, None, &[]);
    llm.push(Script::Text("Lima is the capital.".into()));
    send(&sandbox, "what is the capital of Peru");
    answered(&seen, "Lima is the capital.", DEADLINE);
    let user = line_with(&seen, ChatRole::User, &["what is the capital of Peru"]);
    assert_eq!(user.speaker.as_deref(), Some("Typed"), "typed, not an unknown speaker");
    assert_eq!(status(&sandbox)["mode"], "chat", "a typed turn from idle enters chat mode");
    expect_within("the session is saved, for its owner only", DEADLINE, || {
        let text = std::fs::read_to_string(session_file(&sandbox)).map_err(|e| e.to_string())?;
        if text.contains("Lima is the capital.") { Ok(()) } else { Err(text) }
    });
    let mode = std::fs::metadata(session_file(&sandbox)).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(!first.log().contains("capital of Peru"), "the prompt is not logged (debug level)");

    let _second = restart(&sandbox, first, None);
    llm.push(Script::Text("About ten million people.".into()));
    send(&sandbox, "and how many live there");
    answered(&seen, "About ten million people.", DEADLINE);
    let request = llm.requests().last().cloned().unwrap();
    let said: Vec<&str> = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(said.contains(&"Typed: what is the capital of Peru"), "{said:?}");
    assert!(said.contains(&"Lima is the capital."), "the restarted assistant carried on: {said:?}");
    let chat = &status(&sandbox)["chat"];
    assert_eq!(chat["turns"], 2, "{chat}");
    assert_eq!(chat["provider"], "custom", "{chat}");
}

#[test]
fn slash_commands_work_with_no_provider_and_a_turn_says_how_to_get_one() {
    let sandbox = Sandbox::new();
    write_config(&sandbox, "");
    let (_assistant, seen) = assistant(&sandbox, None, &[]);

    let help = ctl(&sandbox, &["chat-command", "/help"]);
    assert_eq!(help.code, Some(0), "{help:?}");
    assert!(help.stdout.contains("/providers") && help.stdout.contains("/export"), "{help:?}");

    let table = ctl(&sandbox, &["chat-command", "/providers"]);
    assert_eq!(table.code, Some(0), "{table:?}");
    let row = |id: &str| {
        table
            .stdout
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(id))
            .unwrap_or("")
            .to_owned()
    };
    assert!(row("claude").contains("not-installed"), "{}", table.stdout);
    assert!(row("openai").contains("needs-key"), "{}", table.stdout);
    assert!(row("ollama").contains("down"), "{}", table.stdout);
    // Every viewer sees the output too.
    line_with(&seen, ChatRole::Note, &["anthropic-api", "needs-key"]);

    send(&sandbox, "hello");
    let error = line_with(&seen, ChatRole::Error, &["No model is available"]);
    for needle in ["claude", "ollama", "scripts/fetch-llm", "OPENAI_API_KEY"] {
        assert!(error.text.contains(needle), "{needle} in {}", error.text);
    }

    let bad = ctl(&sandbox, &["chat-command", "/provider", "chatgpt"]);
    assert_ne!(bad.code, Some(0), "{bad:?}");
    assert!(bad.stderr.contains("not a provider stt knows"), "{bad:?}");
    let system = ctl(&sandbox, &["chat-command", "/system", "Answer in French."]);
    assert_eq!(system.code, Some(0), "{system:?}");
    let new = ctl(&sandbox, &["chat-command", "/new"]);
    assert_eq!(new.code, Some(0), "{new:?}");
}

#[test]
fn a_local_server_started_after_the_assistant_answers_the_next_turn_warmed_up() {
    // llama-server's port has nothing yet; no periodic probe, so only the turn looks again.
    let sandbox = Sandbox::new();
    let (port, dead) = (dead_port(), dead_port());
    let url = |port: u16| format!("http://127.0.0.1:{port}/v1/chat/completions");
    let config = format!(
        "[llm]\nprobe_interval_s = 0\nlocal_port = {dead}\n\
         [llm.providers.ollama]\nendpoint = \"{}\"\n\
         [llm.providers.lmstudio]\nendpoint = \"{}\"\n\
         [llm.providers.llamacpp]\nendpoint = \"{}\"\n",
        url(dead),
        url(dead),
        url(port)
    );
    std::fs::write(sandbox.config_file(), config).unwrap();
    let (_assistant, seen) = assistant(&sandbox, None, &[]);
    expect_within("the first probe found no model", DEADLINE, || {
        match status(&sandbox)["llm_reachable"].as_bool() {
            Some(false) => Ok(()),
            other => Err(format!("llm_reachable {other:?}")),
        }
    });

    // A person starts llama-server, and types at once.
    let server = LlmServer::start_on(port);
    server.push(Script::Text("OK".into()));
    server.push(Script::Text("Hello from the server you just started.".into()));
    send(&sandbox, "hello");
    line_with(&seen, ChatRole::Assistant, &["Hello from the server you just started."]);
    assert!(
        messages(&seen).iter().all(|m| !m.text.contains("No model is available")),
        "{:?}",
        messages(&seen)
    );
    // The first request read the command prefix into the command slot, before the turn.
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(
        (requests[0]["max_tokens"].as_u64(), requests[0]["id_slot"].as_u64()),
        (Some(1), Some(0))
    );
    // The prefix every command shares: the command system prompt and the user's own tools
    // (none here); the built-in ones come with the words that call for them.
    assert!(requests[0]["tools"].as_array().is_none_or(Vec::is_empty), "{}", requests[0]);
    let system = requests[0]["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(system.starts_with("You are the voice assistant"), "{}", requests[0]);
    assert_eq!(requests[1]["id_slot"], 1, "chat runs in the other slot");
}

#[test]
fn stop_keeps_the_partial_answer_and_frees_the_model_at_once() {
    let sandbox = Sandbox::new();
    let llm = LlmServer::start();
    write_config(&sandbox, &format!("endpoint = \"{}\"", llm.url()));
    let (_assistant, seen) = assistant(&sandbox, None, &[]);
    llm.push(Script::Stall("Once upon a time".into()));
    send(&sandbox, "tell me a long story");
    expect_within("the answer starts", DEADLINE, || {
        let text: String = messages(&seen)
            .iter()
            .filter(|m| m.role == ChatRole::Assistant && m.partial)
            .map(|m| m.text.as_str())
            .collect();
        if text == "Once upon a time" { Ok(()) } else { Err(text) }
    });
    let asked = std::time::Instant::now();
    let out = ctl(&sandbox, &["chat-stop"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let stopped = line_with(&seen, ChatRole::Assistant, &["Once upon a time"]);
    assert!(stopped.stopped, "{stopped:?}");
    // Measured, not asserted: from running `stt-ctl chat-stop` (a process start included) to
    // the stopped line at the viewer, and to the queue free again.
    let at = seen.lock().unwrap().iter().find_map(|(at, e)| match e {
        AssistantEvent::ChatMessage(m) if m.stopped => Some(*at),
        _ => None,
    });
    let free = expect_within("the model is free", DEADLINE, || {
        let s = status(&sandbox);
        if s["inference_busy"] == false {
            Ok(std::time::Instant::now())
        } else {
            Err(s.to_string())
        }
    });
    eprintln!(
        "chat-stop -> stopped line: {} ms; -> status says free: {} ms",
        at.map_or(0, |at| at.saturating_duration_since(asked).as_millis()),
        free.saturating_duration_since(asked).as_millis()
    );
    expect_within("the model's connection is dropped", DEADLINE, || {
        if llm.disconnects() == 1 { Ok(()) } else { Err(llm.disconnects().to_string()) }
    });
    let again = ctl(&sandbox, &["chat-stop"]);
    assert!(again.stderr.contains("no reply is streaming"), "{again:?}");

    llm.push(Script::Text("The end.".into()));
    send(&sandbox, "finish it");
    answered(&seen, "The end.", DEADLINE);
    let request = llm.requests().last().cloned().unwrap();
    assert!(request.to_string().contains("Once upon a time"), "the stopped answer is the turn");
}

#[test]
fn a_dead_endpoint_is_named_with_the_fix() {
    let sandbox = Sandbox::new();
    let dead = dead_port();
    write_config(&sandbox, &format!("endpoint = \"http://127.0.0.1:{dead}/v1/chat/completions\""));
    let (_assistant, seen) = assistant(&sandbox, None, &[]);
    send(&sandbox, "hello");
    line_with(&seen, ChatRole::Error, &[&format!("127.0.0.1:{dead}"), "[llm].endpoint"]);
}

#[test]
fn a_refused_key_names_the_variable_and_the_key_never_reaches_the_log() {
    let sandbox = Sandbox::new();
    let llm = LlmServer::start();
    write_config(&sandbox, &format!("provider = \"openai\"\nendpoint = \"{}\"", llm.url()));
    let (assistant, seen) =
        assistant(&sandbox, None, &[("OPENAI_API_KEY", "sk-test-do-not-log-4242")]);
    llm.push(Script::Status(401, "Incorrect API key provided".into()));
    send(&sandbox, "my secret plans");
    line_with(&seen, ChatRole::Error, &["401", "Incorrect API key provided", "set OPENAI_API_KEY"]);
    let sent = llm.received().into_iter().find(|r| r.method == "POST").unwrap();
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test-do-not-log-4242"));
    let log = assistant.log();
    assert!(!log.contains("sk-test-do-not-log"), "the key is in the log:\n{log}");
    assert!(!log.contains("my secret plans"), "the prompt is in the log:\n{log}");
}

#[test]
fn rate_limits_and_server_errors_quote_the_first_200_characters() {
    let sandbox = Sandbox::new();
    let llm = LlmServer::start();
    write_config(&sandbox, &format!("endpoint = \"{}\"", llm.url()));
    let (_assistant, seen) = assistant(&sandbox, None, &[]);
    let body = format!("slow down {}", "x".repeat(300));
    llm.push(Script::Status(429, body));
    send(&sandbox, "one");
    let error = line_with(&seen, ChatRole::Error, &["429", "slow down", "rate limited"]);
    assert!(!error.text.contains(&"x".repeat(250)), "at most 200 characters: {}", error.text);
    llm.push(Script::Status(503, "the model is warming up".into()));
    send(&sandbox, "two");
    line_with(&seen, ChatRole::Error, &["503", "the model is warming up", "try again"]);
}

#[test]
fn a_disconnect_mid_answer_keeps_the_partial_answer_flagged() {
    let sandbox = Sandbox::new();
    let llm = LlmServer::start();
    write_config(&sandbox, &format!("endpoint = \"{}\"", llm.url()));
    let (_assistant, seen) = assistant(&sandbox, None, &[]);
    llm.push(Script::DropMidStream("Half of an answer".into()));
    send(&sandbox, "tell me");
    line_with(&seen, ChatRole::Error, &["stopped mid-answer", "partial answer is kept"]);
    let kept = line_with(&seen, ChatRole::Assistant, &["Half of an answer"]);
    assert!(kept.stopped, "{kept:?}");
}

#[test]
fn an_unknown_model_says_where_the_list_is() {
    let sandbox = Sandbox::new();
    let llm = LlmServer::start();
    write_config(&sandbox, &format!("endpoint = \"{}\"\nmodel = \"qwen9\"", llm.url()));
    let (_assistant, seen) = assistant(&sandbox, None, &[]);
    llm.push(Script::Status(404, "model 'qwen9' not found".into()));
    send(&sandbox, "hi");
    line_with(&seen, ChatRole::Error, &["has no model 'qwen9'", "/models"]);
}

#[test]
fn a_missing_cli_says_how_to_install_it() {
    let sandbox = Sandbox::new();
    write_config(&sandbox, "provider = \"claude\"");
    let empty = sandbox.root().join("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    let (_assistant, seen) = assistant(&sandbox, Some(&empty), &[]);
    send(&sandbox, "hi");
    line_with(&seen, ChatRole::Error, &["claude", "not installed", "claude auth login"]);
}

#[test]
fn a_signed_out_cli_says_how_to_sign_in() {
    let sandbox = Sandbox::new();
    write_config(&sandbox, "provider = \"claude\"");
    let bin = sandbox.root().join("fake-bin");
    std::fs::create_dir_all(&bin).unwrap();
    fake_cli::install(&bin, "claude", Behaviour::NotLoggedIn);
    let (_assistant, seen) = assistant(&sandbox, Some(&bin), &[]);
    send(&sandbox, "hi");
    line_with(&seen, ChatRole::Error, &["not signed in", "claude auth login", "/provider claude"]);
}

#[test]
fn fake_claude_and_codex_carry_a_conversation_through_their_resume_handles() {
    for (cli, flag) in [("claude", "--resume"), ("codex", "resume")] {
        let sandbox = Sandbox::new();
        write_config(&sandbox, &format!("provider = \"{cli}\""));
        let bin = sandbox.root().join("fake-bin");
        std::fs::create_dir_all(&bin).unwrap();
        let fake = fake_cli::install(&bin, cli, Behaviour::Normal);
        let (first, seen) = assistant(&sandbox, Some(&bin), &[]);
        send(&sandbox, "my name is Ana");
        line_with(&seen, ChatRole::Assistant, &["You said: Typed: my name is Ana"]);
        // A restart in between: the handle is in the session file.
        let _second = restart(&sandbox, first, Some(&bin));
        send(&sandbox, "what is my name");
        line_with(&seen, ChatRole::Assistant, &["Earlier you said: Typed: my name is Ana"]);
        let calls = fake.calls();
        assert_eq!(calls.len(), 2, "{cli}: {calls:?}");
        assert!(calls[1].argv.iter().any(|a| a == flag), "{cli} resumed: {:?}", calls[1].argv);
        let workdir = sandbox.root().join("state/stt/cli");
        for call in &calls {
            assert!(
                !call.argv.iter().any(|a| a.contains("name")),
                "{cli}: the words went in argv: {:?}",
                call.argv
            );
            assert_eq!(Path::new(&call.cwd), workdir, "{cli}: turns run in stt's own folder");
        }
        assert_eq!(status(&sandbox)["chat"]["provider"], cli);
    }
}

#[test]
fn a_chat_only_provider_refuses_a_command_naming_one_that_can() {
    let sandbox = Sandbox::new();
    let llm = LlmServer::start();
    // claude is chosen; the scripted server stands in for a live ollama.
    let dead = dead_port();
    let config = format!(
        "[llm]\nprovider = \"claude\"\nlocal_port = {dead}\n\
         [llm.providers.ollama]\nendpoint = \"{}\"\n\
         [llm.providers.lmstudio]\nendpoint = \"http://127.0.0.1:{dead}/v1/chat/completions\"\n\
         [llm.providers.llamacpp]\nendpoint = \"http://127.0.0.1:{dead}/v1/chat/completions\"\n",
        llm.url()
    );
    std::fs::write(sandbox.config_file(), config).unwrap();
    let bin = sandbox.root().join("fake-bin");
    std::fs::create_dir_all(&bin).unwrap();
    fake_cli::install(&bin, "claude", Behaviour::Normal);
    let (_assistant, _seen) = assistant(&sandbox, Some(&bin), &[]);
    expect_within("the providers are probed", DEADLINE, || {
        let s: Value = status(&sandbox);
        if s["llm_provider"] == "claude" { Ok(()) } else { Err(s.to_string()) }
    });
    assert_eq!(ctl(&sandbox, &["command-start"]).code, Some(0));
    assert_eq!(
        ctl(&sandbox, &["command-edit", "--text", "what time is it on the moon"]).code,
        Some(0)
    );
    // No daemon: the refusal for the provider comes before readiness.
    let out = ctl(&sandbox, &["command-execute"]);
    assert_ne!(out.code, Some(0), "{out:?}");
    assert!(out.stderr.contains("claude is a chat provider"), "{out:?}");
    assert!(out.stderr.contains("/provider ollama"), "{out:?}");
}

#[test]
fn models_are_listed_and_chosen_providers_switched_and_the_conversation_exported() {
    let sandbox = Sandbox::new();
    let llm = LlmServer::start();
    let other = LlmServer::start();
    let dead = dead_port();
    let config = format!(
        "[llm]\nendpoint = \"{}\"\nlocal_port = {dead}\n\
         [llm.providers.ollama]\nendpoint = \"{}\"\n\
         [llm.providers.lmstudio]\nendpoint = \"http://127.0.0.1:{dead}/v1/chat/completions\"\n\
         [llm.providers.llamacpp]\nendpoint = \"http://127.0.0.1:{dead}/v1/chat/completions\"\n",
        llm.url(),
        other.url()
    );
    std::fs::write(sandbox.config_file(), config).unwrap();
    let (_assistant, seen) = assistant(&sandbox, None, &[]);

    let models = ctl(&sandbox, &["chat-command", "/models"]);
    assert_eq!(models.code, Some(0), "{models:?}");
    assert!(models.stdout.contains("scripted"), "the server's live list: {models:?}");
    let chosen = ctl(&sandbox, &["chat-command", "/model", "scripted-large"]);
    assert_eq!(chosen.code, Some(0), "{chosen:?}");
    llm.push(Script::Text("First answer.".into()));
    send(&sandbox, "first question");
    answered(&seen, "First answer.", DEADLINE);
    assert_eq!(llm.requests().last().unwrap()["model"], "scripted-large");

    // The memory tree asks the new provider for a summary of the old context (the summary,
    // not the turns, is what it is given of them), as soon as the switch is made: scripted
    // before it, or the summary fails and a word-for-word extract takes its place.
    other.respond_with(|request| {
        let last = request["messages"].as_array().unwrap().last().unwrap()["content"].clone();
        if last.as_str().unwrap_or_default().starts_with("[Memory upkeep") {
            Script::Text("SUMMARY: Something was asked.".into())
        } else {
            Script::Text("Second answer.".into())
        }
    });
    let switched = ctl(&sandbox, &["chat-command", "/provider", "ollama"]);
    assert_eq!(switched.code, Some(0), "{switched:?}");
    assert!(switched.stdout.contains("now using ollama"), "{switched:?}");
    send(&sandbox, "second question");
    answered(&seen, "Second answer.", DEADLINE);
    let sent = other
        .requests()
        .into_iter()
        .find(|r| {
            let last = r["messages"].as_array().unwrap().last().unwrap()["content"].clone();
            last.as_str().is_some_and(|t| t.contains("second question"))
        })
        .unwrap()
        .to_string();
    assert!(!sent.contains("first question"), "the new provider starts without the old context");
    assert_eq!(status(&sandbox)["chat"]["provider"], "ollama");
    assert_eq!(status(&sandbox)["chat"]["turns"], 2, "the turns shown stay");

    let path = sandbox.root().join("talk.md");
    let export = ctl(&sandbox, &["chat-command", "/export", path.to_str().unwrap()]);
    assert_eq!(export.code, Some(0), "{export:?}");
    let text = std::fs::read_to_string(&path).unwrap();
    for needle in ["first question", "First answer.", "second question", "Second answer."] {
        assert!(text.contains(needle), "{needle} in {text}");
    }
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);

    assert_eq!(ctl(&sandbox, &["chat-command", "/new"]).code, Some(0));
    expect_within("/new deletes the saved conversation", DEADLINE, || {
        if session_file(&sandbox).exists() { Err("still there".to_owned()) } else { Ok(()) }
    });
}

#[test]
fn a_key_written_in_a_config_file_others_can_read_is_warned_about_at_start() {
    let sandbox = Sandbox::new();
    write_config(&sandbox, "provider = \"openai\"\nkey = \"sk-written-in-the-file\"");
    std::fs::set_permissions(sandbox.config_file(), std::fs::Permissions::from_mode(0o644))
        .unwrap();
    let (assistant, _seen) = assistant(&sandbox, None, &[]);
    let log = expect_within("the warning", DEADLINE, || {
        let log = assistant.log();
        if log.contains("chmod 600") { Ok(log) } else { Err(log) }
    });
    assert!(log.contains(&sandbox.config_file().display().to_string()), "names the file: {log}");
    assert!(log.contains("env:NAME"), "{log}");
    assert!(!log.contains("sk-written-in-the-file"), "the key is in the log: {log}");
}
