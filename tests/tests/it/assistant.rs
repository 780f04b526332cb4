//! The assistant across real processes: the daemon transcribes a spoken command from a
//! WAV, `stt-ctl` arms and executes it, the (scripted) model calls a tool, subscribers see
//! it, and the audit log records it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::{Value, json};
use stt_proto::AssistantEvent;
use stt_testkit::llm_server::Script;
use stt_testkit::viewer::{
    SpokenCommand, Stack, events, scripted_model, spoken_command, start_stack, status, tool_call,
    tool_result, watch_attached,
};
use stt_testkit::{Sandbox, expect_within};

use stt_testkit::DEADLINE;

#[test]
fn a_spoken_command_runs_a_tool_and_is_audited() {
    let sandbox = Sandbox::new();
    // The model's path: "what time is it" is answered without it by default.
    let llm = scripted_model(&sandbox, "request_timeout_s = 20\n[intents]\nenabled = false\n");
    llm.push(Script::ToolCalls(vec![("get_datetime".into(), json!({}))]));
    let SpokenCommand { assistant, seen, daemon: _daemon, .. } =
        spoken_command(&sandbox, "what time is it", DEADLINE);
    // Once the clock is read, the answer is the time template's, not the model's words.
    let told = |m: &stt_proto::ChatMessage| m.text.starts_with("It's ") && m.text.contains(':');

    let events = expect_within(
        "the tool call, its result and the answer reach the viewer",
        DEADLINE,
        || {
            let events = events(&seen);
            let answered =
                events.iter().any(|e| matches!(e, AssistantEvent::ChatMessage(m) if told(m)));
            if answered { Ok(events) } else { Err(format!("{events:?}\n{}", assistant.log())) }
        },
    );
    let call = events.iter().find_map(tool_call).expect("a tool_call event");
    assert_eq!(call.tool, "get_datetime");
    assert!(!call.awaiting_confirmation);
    let result = events.iter().find_map(tool_result).expect("a tool_result event");
    assert!(result.ok, "{result:?}");
    assert_eq!(result.call_id, call.call_id);
    let modes: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AssistantEvent::Mode { mode } => Some(mode.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(modes, ["command_armed", "executing", "idle"]);

    // The model saw the spoken command and the tools; the answer needed no second request.
    let requests = llm.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    let user = requests[0]["messages"][1]["content"].as_str().unwrap().to_lowercase();
    assert!(user.contains("what time is it"), "{user}");
    assert!(
        requests[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["function"]["name"] == "get_datetime")
    );

    // One audit line, with exactly the seed's fields and who chose the action (written off the assistant's loop, so
    // it may land a moment after the answer).
    let audit_dir = sandbox.root().join("data/stt/audit");
    let lines = expect_within("the audit line", DEADLINE, || {
        let lines = audit_lines(&sandbox);
        if lines.is_empty() { Err("no audit line yet".to_owned()) } else { Ok(lines) }
    });
    let files: Vec<_> = std::fs::read_dir(&audit_dir).unwrap().collect();
    assert_eq!(files.len(), 1, "one day's file in {}", audit_dir.display());
    assert_eq!(lines.len(), 1, "{lines:?}");
    let record = &lines[0];
    let mut keys: Vec<&str> = record.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "args",
            "by",
            "confirmed",
            "edited",
            "latency_ms",
            "mode",
            "ok",
            "requires_confirmation",
            "result",
            "side_effect",
            "text",
            "tool",
            "ts"
        ]
    );
    assert_eq!(record["tool"], "get_datetime");
    assert_eq!(record["by"], "model");
    assert_eq!(record["mode"], "command");
    assert_eq!(record["edited"], false);
    assert_eq!(record["ok"], true);
    assert_eq!(record["side_effect"], "read_only");
    assert!(record["text"].as_str().unwrap().to_lowercase().contains("what time is it"));
}

#[test]
fn without_an_llm_execute_says_no_executor_configured() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.config_file(), "[llm]\nenabled = false\n").unwrap();
    let _assistant = sandbox.spawn("stt-assistant", &[]);
    expect_within("the assistant answers", DEADLINE, || {
        let out = sandbox.run("stt-ctl", &["status"]);
        if out.code == Some(0) { Ok(()) } else { Err(format!("{out:?}")) }
    });
    let out = sandbox.run("stt-ctl", &["command-start"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let out = sandbox.run("stt-ctl", &["command-edit", "--text", "what time is it on the moon"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    // No daemon: STT is not healthy, and that is what execute says first.
    let out = sandbox.run("stt-ctl", &["command-execute"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains("not ready") && out.stderr.contains("not connected to stt-daemon"),
        "{}",
        out.stderr
    );
}

#[test]
fn status_says_whether_the_model_answers_and_viewers_hear_when_it_stops() {
    let sandbox = Sandbox::new();
    let llm = scripted_model(&sandbox, "probe_interval_s = 1\n");
    let assistant =
        sandbox.spawn_with_env("stt-assistant", &[], &[("STT_LOG", "info,stt_assistant=debug")]);
    let seen = watch_attached(&sandbox, DEADLINE);
    expect_within("status says the model answers", DEADLINE, || {
        let s = status(&sandbox);
        if s["llm_reachable"] == true { Ok(()) } else { Err(format!("{s}")) }
    });
    assert!(llm.probes() >= 1);
    assert!(llm.requests().is_empty(), "a probe is not a chat request");
    assert!(
        !events(&seen).iter().any(|e| matches!(e, AssistantEvent::Error(_))),
        "no error while the model answers"
    );

    drop(llm); // the server goes away; its port refuses connections
    expect_within("status says the model does not answer", DEADLINE, || {
        let s = status(&sandbox);
        if s["llm_reachable"] == false { Ok(()) } else { Err(format!("{s}")) }
    });
    expect_within("viewers are told, with the fix", DEADLINE, || {
        let errors: Vec<_> = events(&seen)
            .into_iter()
            .filter_map(|e| match e {
                AssistantEvent::Error(e) => Some(e),
                _ => None,
            })
            .collect();
        match errors.as_slice() {
            [e] if e.code == stt_proto::ErrorCode::LlmError
                && e.message.contains("custom: nothing answers at 127.0.0.1:")
                && e.message.contains("start the server at [llm].endpoint") =>
            {
                Ok(())
            }
            _ => Err(format!("{errors:?}")),
        }
    });
    // Later probes that fail the same way add nothing: one message per change. Wait for two
    // of them (the assistant's debug log says each), then count.
    expect_within("two more probes that fail", DEADLINE, || {
        let log = assistant.log();
        let later = log.matches("probe: the model still does not answer").count();
        if later >= 2 { Ok(()) } else { Err(log) }
    });
    let errors = events(&seen).iter().filter(|e| matches!(e, AssistantEvent::Error(_))).count();
    assert_eq!(errors, 1);
}

/// Arms, edits and executes `command` through `stt-ctl`, against a running daemon.
fn run_edited_command(sandbox: &Sandbox, command: &str) {
    let out = sandbox.run("stt-ctl", &["command-start"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let out = sandbox.run("stt-ctl", &["command-edit", "--text", command]);
    assert_eq!(out.code, Some(0), "{out:?}");
    expect_within("execute is accepted", DEADLINE, || {
        let out = sandbox.run("stt-ctl", &["command-execute"]);
        if out.code == Some(0) { Ok(()) } else { Err(format!("{out:?}")) }
    });
}

fn audit_lines(sandbox: &Sandbox) -> Vec<Value> {
    let dir = sandbox.root().join("data/stt/audit");
    let Ok(entries) = std::fs::read_dir(&dir) else { return vec![] };
    entries
        .flatten()
        .flat_map(|e| {
            std::fs::read_to_string(e.path())
                .unwrap_or_default()
                .lines()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .map(|l| serde_json::from_str(&l).unwrap())
        .collect()
}

#[test]
fn a_tool_that_needs_confirmation_waits_for_yes_or_no_and_times_out_as_no() {
    // Every field bound: what is not would be dropped (and its process stopped) right here.
    let Stack { sandbox, llm, seen, daemon: _daemon, assistant: _assistant } =
        start_stack("\n[assistant]\nconfirmation_timeout_s = 2\n");
    let out = sandbox.run("stt-ctl", &["deny"]);
    assert_eq!(out.code, Some(1));
    assert!(out.stderr.contains("(nothing_pending)"), "{}", out.stderr);

    let open =
        || Script::ToolCalls(vec![("open_url".into(), json!({"url": "https://example.org"}))]);
    for (answer, confirmed) in [(Some("deny"), false), (None, false), (Some("confirm"), true)] {
        let before = events(&seen).len();
        llm.push(open());
        llm.push(Script::Text("Done.".into()));
        run_edited_command(&sandbox, "open example dot org");
        let call = expect_within("the call waits for confirmation", DEADLINE, || {
            let events = events(&seen)[before..].to_vec();
            events.iter().find_map(tool_call).ok_or_else(|| format!("{events:?}"))
        });
        assert!(call.requires_confirmation && call.awaiting_confirmation, "{call:?}");
        if let Some(verb) = answer {
            let out = sandbox.run("stt-ctl", &[verb, "--call-id", &call.call_id]);
            assert_eq!(out.code, Some(0), "{verb}: {out:?}");
        }
        let result = expect_within("the result", DEADLINE, || {
            let events = events(&seen)[before..].to_vec();
            events.iter().find_map(tool_result).ok_or_else(|| format!("{events:?}"))
        });
        if !confirmed {
            assert!(
                !result.ok && result.result.contains("did not allow"),
                "{answer:?}: {result:?}"
            );
        }
        expect_within("back to idle", DEADLINE, || {
            let s = status(&sandbox);
            if s["mode"] == "idle" { Ok(()) } else { Err(format!("{s}")) }
        });
    }
    let records = expect_within("three audit lines", DEADLINE, || {
        let records = audit_lines(&sandbox);
        if records.len() >= 3 { Ok(records) } else { Err(format!("{records:?}")) }
    });
    let confirmed: Vec<&Value> = records.iter().map(|r| &r["confirmed"]).collect();
    assert_eq!(confirmed, [&json!(false), &json!(false), &json!(true)], "{records:?}");
    assert!(
        records
            .iter()
            .all(|r| r["requires_confirmation"] == true && r["side_effect"] == "external")
    );
}

#[test]
fn cancel_stops_a_running_command_before_its_tool_runs() {
    let Stack { sandbox, llm, assistant, seen, daemon: _daemon } = start_stack("");
    // The call waits for a yes or no (for a minute, by default): the command is running.
    llm.push(Script::ToolCalls(vec![("open_url".into(), json!({"url": "https://example.org"}))]));
    run_edited_command(&sandbox, "open example dot org");
    let call = expect_within("the call waits for confirmation", DEADLINE, || {
        events(&seen).iter().find_map(tool_call).ok_or_else(|| format!("{:?}", events(&seen)))
    });
    assert!(call.awaiting_confirmation, "{call:?}");
    assert_eq!(status(&sandbox)["mode"], "executing");

    let out = sandbox.run("stt-ctl", &["command-cancel"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    expect_within("back to idle, with a note", DEADLINE, || {
        let cancelled = events(&seen)
            .iter()
            .any(|e| matches!(e, AssistantEvent::ChatMessage(m) if m.text == "command cancelled"));
        let s = status(&sandbox);
        if cancelled && s["mode"] == "idle" { Ok(()) } else { Err(format!("{s}")) }
    });
    // The call is no longer waiting, it never ran, and the model was not asked again.
    let out = sandbox.run("stt-ctl", &["confirm", "--call-id", &call.call_id]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains("(nothing_pending)"), "{}", out.stderr);
    assert!(!events(&seen).iter().any(|e| tool_result(e).is_some()), "{:?}", events(&seen));
    assert_eq!(llm.requests().len(), 1);
    assert!(audit_lines(&sandbox).is_empty(), "nothing ran, nothing audited");

    // The next command runs as ever.
    llm.push(Script::Text("Hello again.".into()));
    run_edited_command(&sandbox, "say hello");
    expect_within("the next command's answer", DEADLINE, || {
        let answered = events(&seen)
            .iter()
            .any(|e| matches!(e, AssistantEvent::ChatMessage(m) if m.text == "Hello again."));
        if answered { Ok(()) } else { Err(assistant.log()) }
    });
}

#[test]
fn after_a_restart_new_replies_get_new_ids_and_the_tui_keeps_the_old_lines() {
    let Stack { sandbox, llm, assistant: mut first, seen, daemon: _daemon } = start_stack("");
    llm.push(Script::Text("The first answer.".into()));
    run_edited_command(&sandbox, "say one thing");
    stt_testkit::viewer::answered(&seen, "The first answer.", DEADLINE);

    // As the supervisor does when the assistant dies: a new one, the viewer reconnecting.
    first.signal_and_wait(nix::sys::signal::Signal::SIGKILL);
    let _second = sandbox.spawn("stt-assistant", &[]);
    expect_within("the viewer is back", DEADLINE, || {
        let s = status(&sandbox);
        if s["viewers"] == 1 { Ok(()) } else { Err(format!("{s}")) }
    });
    llm.push(Script::Text("The second answer.".into()));
    run_edited_command(&sandbox, "say another thing");
    stt_testkit::viewer::answered(&seen, "The second answer.", DEADLINE);

    let events = events(&seen);
    // Each line once: a streamed answer's pieces share the id of the line they build.
    let ids: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            AssistantEvent::ChatMessage(m) if !m.partial => Some(m.id),
            _ => None,
        })
        .collect();
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "an id was used twice: {ids:?}");
    // What a TUI that stayed up shows: both answers, each on its own line.
    let mut tui = stt_tui::state::State::new("stt-assistant.sock", Default::default());
    for event in events {
        stt_tui::update::update(&mut tui, stt_tui::action::Action::Event(event));
    }
    let lines: Vec<&str> = tui
        .entries
        .iter()
        .filter_map(|entry| match entry {
            stt_tui::state::Entry::Chat { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(lines, ["The first answer.", "The second answer."]);
}

#[test]
fn timers_are_listed_in_status_cancelled_on_request_and_fire_as_a_note() {
    let Stack { sandbox, llm, seen, daemon: _daemon, assistant: _assistant } = start_stack("");
    let set = |minutes: f64, label: &str| {
        llm.push(Script::ToolCalls(vec![(
            "set_timer".into(),
            json!({"minutes": minutes, "label": label}),
        )]));
        // The timer set, the answer is its template's: no second request.
        run_edited_command(&sandbox, "set a timer");
        expect_within("back to idle", DEADLINE, || {
            let s = status(&sandbox);
            if s["mode"] == "idle" { Ok(()) } else { Err(format!("{s}")) }
        });
    };
    set(30.0, "tea");
    let timers = status(&sandbox)["timers"].clone();
    assert_eq!(timers.as_array().map(Vec::len), Some(1), "{timers}");
    assert_eq!(timers[0]["label"], "tea");
    let remaining = timers[0]["remaining_s"].as_f64().unwrap();
    assert!(remaining > 1700.0 && remaining <= 1800.0, "{remaining}");
    let id = timers[0]["id"].as_u64().unwrap().to_string();
    let out = sandbox.run("stt-ctl", &["timer-cancel", &id]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(status(&sandbox)["timers"], json!([]));
    let out = sandbox.run("stt-ctl", &["timer-cancel", &id]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains("(nothing_pending)"), "{}", out.stderr);

    // A short one fires: a note under the timer's id, and it leaves the list.
    set(0.02, "oven");
    let id = status(&sandbox)["timers"][0]["id"].as_u64();
    expect_within("the timer fires", DEADLINE, || {
        let fired = events(&seen).iter().find_map(|e| match e {
            AssistantEvent::ChatMessage(m) if m.text == "⏰ oven" => Some(m.id),
            _ => None,
        });
        match fired {
            Some(fired) if Some(fired) == id || id.is_none() => Ok(()),
            other => Err(format!("{other:?} for timer {id:?}")),
        }
    });
    assert_eq!(status(&sandbox)["timers"], json!([]));
    assert!(
        !events(&seen)
            .iter()
            .any(|e| matches!(e, AssistantEvent::ChatMessage(m) if m.text.contains("⏰ tea")))
    );
}

/// Timers are kept across a crash: one still ahead waits as long as it had left, and one whose
/// time came while no assistant ran fires as soon as one is back, saying when it was due.
#[test]
fn timers_outlive_an_assistant_killed_and_fire_late_saying_so() {
    let Stack { sandbox, llm, seen, daemon: _daemon, assistant: mut first } = start_stack("");
    for (minutes, label) in [(30.0, "tea"), (0.1, "oven")] {
        llm.push(Script::ToolCalls(vec![(
            "set_timer".into(),
            json!({"minutes": minutes, "label": label}),
        )]));
        run_edited_command(&sandbox, "set a timer");
        expect_within("back to idle", DEADLINE, || {
            let s = status(&sandbox);
            if s["mode"] == "idle" { Ok(()) } else { Err(format!("{s}")) }
        });
    }
    // Both kept (the writer thread saves them a moment after they are set).
    let file = sandbox.root().join("state/stt/timers.json");
    let kept = expect_within("both timers kept", DEADLINE, || {
        let kept: Value = std::fs::read(&file)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        if kept["timers"].as_array().map(Vec::len) == Some(2) {
            Ok(kept)
        } else {
            Err(format!("{kept}"))
        }
    });
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(kept["timers"][0]["label"], "oven", "{kept}");
    let oven: chrono::DateTime<chrono::Local> =
        kept["timers"][0]["at"].as_str().unwrap().parse().unwrap();
    first.signal_and_wait(nix::sys::signal::Signal::SIGKILL);

    // Down until well past the oven's time (`stt_assistant::timers::LATE`).
    expect_within("the oven's time long past", Duration::from_secs(60), || {
        let past = chrono::Local::now() - oven;
        if past > chrono::TimeDelta::seconds(12) { Ok(()) } else { Err(format!("{past}")) }
    });
    let _second = sandbox.spawn("stt-assistant", &[]);
    let said =
        format!("⏰ oven (due at {}; the assistant was not running then)", oven.format("%H:%M"));
    expect_within("the missed timer fires once the assistant is back", DEADLINE, || {
        let fired = events(&seen)
            .iter()
            .any(|e| matches!(e, AssistantEvent::ChatMessage(m) if m.text == said));
        if fired { Ok(()) } else { Err(format!("{said:?} not in {:#?}", events(&seen))) }
    });
    let timers = status(&sandbox)["timers"].clone();
    assert_eq!(timers.as_array().map(Vec::len), Some(1), "{timers}");
    assert_eq!(timers[0]["label"], "tea");
    let remaining = timers[0]["remaining_s"].as_f64().unwrap();
    assert!(remaining > 1600.0 && remaining < 1800.0, "{remaining}");
}

#[test]
fn execute_with_wait_is_held_until_the_last_words_are_transcribed() {
    let sandbox = Sandbox::new();
    let llm = scripted_model(&sandbox, "");
    llm.push(Script::Text("It is noon.".into()));
    let wav = stt_testkit::viewer::speak(
        sandbox.root(),
        "long",
        "please turn on the kitchen lights and then tell me what time it is in Tokyo",
    );
    let _assistant = sandbox.spawn("stt-assistant", &[]);
    let seen = watch_attached(&sandbox, DEADLINE);
    for args in [&["command-start"][..], &["command-edit", "--text", "what time is it on the moon"]]
    {
        let out = sandbox.run("stt-ctl", args);
        assert_eq!(out.code, Some(0), "{out:?}");
    }
    // At real time, so the speech is open for a few seconds.
    let wav_arg = wav.to_string_lossy().into_owned();
    let daemon =
        sandbox.spawn("stt-daemon", &["--input", &wav_arg, "--stay", "--wait-for-subscriber"]);
    expect_within("speech starts", DEADLINE, || {
        let started = events(&seen).iter().any(|e| matches!(e, AssistantEvent::SpeechStart(_)));
        if started { Ok(()) } else { Err(daemon.log()) }
    });
    let out = sandbox.run("stt-ctl", &["command-execute"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains("(not_ready)"), "{}", out.stderr);
    // Held for 0.2 s, then refused with the reason.
    let out = sandbox.run("stt-ctl", &["command-execute", "--wait=200"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains("(not_ready)"), "{}", out.stderr);
    // Held until the segment is done, then run.
    let out = sandbox.run("stt-ctl", &["command-execute", "--wait=60000"]);
    assert_eq!(out.code, Some(0), "{out:?}\n{}", daemon.log());
    // The viewer's stream may trail the ack a little: wait for the answer, then look at the
    // order the events came in.
    let events = stt_testkit::viewer::answered(&seen, "It is noon.", DEADLINE);
    let at = |what: &dyn Fn(&AssistantEvent) -> bool| events.iter().position(what);
    let stopped = at(&|e| matches!(e, AssistantEvent::SpeechStop(_))).expect("speech_stop");
    let executing =
        at(&|e| matches!(e, AssistantEvent::Mode { mode } if mode.as_str() == "executing"));
    assert!(executing.is_some_and(|x| x > stopped), "{events:?}");
}

/// Whether `line` carries `key=value` as a whole field (`seg_id=1` is not in `seg_id=12`).
fn has_field(line: &str, key: &str, value: u64) -> bool {
    let pattern = format!("{key}={value}");
    line.match_indices(&pattern).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + pattern.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && !after.is_some_and(|c| c.is_ascii_digit())
    })
}

#[test]
fn one_grep_follows_an_utterance_through_daemon_assistant_and_tui() {
    let sandbox = Sandbox::new();
    // A job of the model's: "what time is it" is answered without it by default.
    let llm = scripted_model(&sandbox, "[intents]\nenabled = false\n");
    llm.push(Script::Text("It is noon.".into()));
    let debug = [("STT_LOG", "debug")];
    let assistant = sandbox.spawn_with_env("stt-assistant", &[], &debug);
    let seen = watch_attached(&sandbox, DEADLINE);
    let tui = sandbox.spawn_with_env("stt-tui", &["--dump", "0"], &debug);
    expect_within("the TUI's dump connects", DEADLINE, || {
        let log = tui.log();
        if log.contains("connected to stt-assistant") { Ok(()) } else { Err(log) }
    });
    let out = sandbox.run("stt-ctl", &["command-start"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let wav = stt_testkit::viewer::speak(sandbox.root(), "command", "what time is it");
    let wav_arg = wav.to_string_lossy().into_owned();
    let daemon = sandbox.spawn_with_env(
        "stt-daemon",
        &["--input", &wav_arg, "--fast", "--stay", "--wait-for-subscriber"],
        &debug,
    );
    let seg_id = expect_within("a transcript", DEADLINE, || {
        events(&seen)
            .iter()
            .find_map(|e| match e {
                AssistantEvent::Transcript(t) => Some(t.seg_id),
                _ => None,
            })
            .ok_or_else(|| daemon.log())
    });
    let out = sandbox.run("stt-ctl", &["command-execute", "--wait"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    stt_testkit::viewer::answered(&seen, "It is noon.", DEADLINE);

    let grep = |log: &str, key: &str, value: u64| -> Vec<String> {
        log.lines().filter(|l| has_field(l, key, value)).map(str::to_owned).collect()
    };
    let has = |lines: &[String], what: &str| lines.iter().any(|l| l.contains(what));
    let in_daemon = grep(&daemon.log(), "seg_id", seg_id);
    for what in ["speech started", "speech stopped", "transcribed"] {
        assert!(has(&in_daemon, what), "the daemon's {what:?} for seg_id={seg_id}: {in_daemon:#?}");
    }
    let assistant_log = assistant.log();
    let in_assistant = grep(&assistant_log, "seg_id", seg_id);
    assert!(has(&in_assistant, "from the daemon"), "{in_assistant:#?}");
    let job = in_assistant
        .iter()
        .find(|l| l.contains("job for segment"))
        .and_then(|l| l.split("job{job=").nth(1))
        .and_then(|rest| rest.split('}').next())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no job names seg_id={seg_id}: {assistant_log}"));
    let of_job = grep(&assistant_log, "job", job);
    for what in ["job started", "job over"] {
        assert!(has(&of_job, what), "the assistant's {what:?} for job={job}: {of_job:#?}");
    }
    let in_tui = grep(&tui.log(), "seg_id", seg_id);
    assert!(has(&in_tui, "transcript received"), "{}", tui.log());
}

#[test]
fn the_dump_prints_the_words_while_they_are_spoken_then_the_final() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.config_file(), "[llm]\nenabled = false\nlocal_server = false\n")
        .unwrap();
    let _assistant = sandbox.spawn("stt-assistant", &[]);
    let (dump, out) = sandbox.spawn_with_stdout("stt-tui", &["--dump", "0"]);
    let lines = || std::fs::read_to_string(&out).unwrap_or_default();
    expect_within("the dump prints the assistant's heartbeat", DEADLINE, || {
        if lines().contains("\"type\":\"heartbeat\"") { Ok(()) } else { Err(dump.log()) }
    });
    // At real time, as a microphone gives it: partials while the sentence is spoken.
    let wav = stt_testkit::viewer::speak(
        sandbox.root(),
        "long",
        "please remind me to call my sister tomorrow about the trip",
    );
    let wav_arg = wav.to_string_lossy().into_owned();
    let daemon =
        sandbox.spawn("stt-daemon", &["--input", &wav_arg, "--stay", "--wait-for-subscriber"]);
    let events: Vec<Value> = expect_within("the final in the dump", DEADLINE, || {
        let text = lines();
        if text.contains("\"type\":\"transcript\"") {
            Ok(text.lines().map(|l| serde_json::from_str(l).unwrap()).collect())
        } else {
            Err(format!("{text}\n{}", daemon.log()))
        }
    });
    let kind = |e: &Value| e["type"].as_str().unwrap_or_default().to_owned();
    let first_partial = events.iter().position(|e| kind(e) == "transcript_partial");
    let final_at = events.iter().position(|e| kind(e) == "transcript").unwrap();
    // Whisper is idle when the sentence starts, so its first pass comes before the final.
    let first_partial =
        first_partial.unwrap_or_else(|| panic!("no transcript_partial in the dump: {events:#?}"));
    assert!(first_partial < final_at, "{events:#?}");
    let partial = &events[first_partial];
    let text = partial["text"].as_str().unwrap();
    let committed = usize::try_from(partial["committed_len"].as_u64().unwrap()).unwrap();
    assert!(!text.is_empty() && committed <= text.len(), "{partial}");
    assert_eq!(partial["seg_id"], events[final_at]["seg_id"], "{events:#?}");
}

/// `stt-ctl watch`, as a status bar runs it: a line per change, from the real assistant's
/// events; `off` while it is gone, and back by itself when it returns.
#[test]
fn watch_prints_a_line_per_state_and_follows_the_assistant_across_a_restart() {
    let Stack { sandbox, seen: _seen, daemon: _daemon, assistant: mut first, llm: _llm } =
        start_stack("");
    let (mut watch, out) = sandbox.spawn_with_stdout("stt-ctl", &["watch"]);
    let lines = || std::fs::read_to_string(&out).unwrap_or_default();
    let wait_last = |what: &str| {
        expect_within(&format!("watch prints {what:?}"), DEADLINE, || {
            let lines = lines();
            if lines.lines().last() == Some(what) { Ok(()) } else { Err(lines) }
        });
    };
    // Idle, and no wake phrase listened for.
    wait_last("wake off");
    let out_of = |args: &[&str]| assert_eq!(sandbox.run("stt-ctl", args).code, Some(0));
    out_of(&["command-start"]);
    wait_last("listening");
    out_of(&["command-cancel"]);
    wait_last("wake off");
    first.signal_and_wait(nix::sys::signal::Signal::SIGKILL);
    wait_last("off");
    let _second = sandbox.spawn("stt-assistant", &[]);
    wait_last("wake off");
    assert!(watch.is_running(), "watch ended: {}", watch.log());
    // One line per change: never the same twice in a row.
    let all = lines();
    let printed: Vec<&str> = all.lines().collect();
    assert!(printed.windows(2).all(|w| w[0] != w[1]), "{printed:?}");
}
