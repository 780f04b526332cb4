//! Commands answered without the model (`[intents]`), through the real daemon and assistant:
//! one test per family of intents, each checking the action was done (a timer in `status`,
//! a reminder and a task in memory, the voice and dictation switched, a configured tool's
//! program run) and that the scripted model was never asked; and a lookalike that the model
//! answers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use stt_proto::{AssistantEvent, ChatRole};
use stt_testkit::llm_server::Script;
use stt_testkit::viewer::{Stack, events, start_stack, status, typed_answer};
use stt_testkit::{DEADLINE, Sandbox, expect_within};

/// Runs `text` as a typed command and returns its answer.
fn answer(stack: &Stack, text: &str) -> String {
    typed_answer(&stack.sandbox, &stack.seen, text, DEADLINE)
}

/// Whether the scripted model was asked about `text`.
fn model_asked(stack: &Stack, text: &str) -> bool {
    stack.llm.requests().iter().any(|r| r.to_string().contains(text))
}

/// The audit log's records, oldest first.
fn audited(sandbox: &Sandbox) -> Vec<Value> {
    let dir = sandbox.root().join("data/stt/audit");
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        lines.extend(text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()));
    }
    lines
}

/// The audit log's records once one of `tool` is in (written off the loop, a record may land
/// a moment after its answer).
fn audited_with(sandbox: &Sandbox, tool: &str) -> Vec<Value> {
    expect_within(&format!("a {tool} record in the audit log"), DEADLINE, || {
        let records = audited(sandbox);
        if records.iter().any(|r| r["tool"] == tool) {
            Ok(records)
        } else {
            Err(format!("{records:?}"))
        }
    })
}

fn ctl_json(sandbox: &Sandbox, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = sandbox.run("stt-ctl", &all);
    assert_eq!(out.code, Some(0), "{out:?}");
    serde_json::from_str(&out.stdout).unwrap()
}

#[test]
fn the_time_the_date_and_timers_need_no_model() {
    let stack = start_stack("");
    let asked = ["what time is it", "What's the date today?"];
    let time = answer(&stack, asked[0]);
    // The clock may turn a minute between the answer and this look.
    let now = chrono::Local::now();
    let minute_ago = now - chrono::TimeDelta::minutes(1);
    let expected = [now, minute_ago].map(|t| format!("It's {}.", t.format("%H:%M")));
    assert!(expected.contains(&time), "{time:?}, not one of {expected:?}");
    let date = answer(&stack, asked[1]);
    assert_eq!(date, format!("Today is {}.", now.format("%A %-d %B %Y")));
    // Another place's time, from its zone (the model, asked this, gave the local time).
    let tokyo = answer(&stack, "what time is it in Tokyo");
    let there = |t: chrono::DateTime<chrono::Local>| {
        t.with_timezone(&stt_intent::zone::Tz::Asia__Tokyo)
            .format("It's %H:%M in Tokyo.")
            .to_string()
    };
    assert!(
        [there(now), there(minute_ago), there(chrono::Local::now())].contains(&tokyo),
        "{tokyo:?}"
    );

    let set = answer(&stack, "set a timer for ten minutes for the pasta");
    assert_eq!(set, "Timer set for 10 minutes: pasta.");
    let timers = status(&stack.sandbox)["timers"].clone();
    assert_eq!(timers.as_array().map(Vec::len), Some(1), "{timers}");
    assert_eq!(timers[0]["label"], "pasta");
    let left = timers[0]["remaining_s"].as_f64().unwrap();
    assert!((590.0..=600.0).contains(&left), "{left}");
    let listed = answer(&stack, "how much time is left on the pasta timer");
    assert!(listed.starts_with("One timer: pasta, "), "{listed}");
    assert_eq!(answer(&stack, "cancel the pasta timer"), "Timer cancelled.");
    assert_eq!(status(&stack.sandbox)["timers"], serde_json::json!([]));
    assert_eq!(answer(&stack, "cancel the timer"), "No timers are running.");

    for text in asked.iter().chain(&["set a timer for ten minutes", "Tokyo"]) {
        assert!(!model_asked(&stack, text), "the model was asked {text:?}");
    }
    // The conversation and the audit log say the model did not answer.
    let notes: Vec<String> = events(&stack.seen)
        .iter()
        .filter_map(|e| match e {
            AssistantEvent::ChatMessage(m) if m.role == ChatRole::Note => Some(m.text.clone()),
            _ => None,
        })
        .collect();
    assert!(notes.iter().any(|n| n == "answered here, without the model (timer_set)"), "{notes:?}");
    let records = audited_with(&stack.sandbox, "timer_cancel");
    let timer = records.iter().find(|r| r["tool"] == "set_timer").expect("set_timer is audited");
    assert_eq!(timer["by"], "local", "{timer}");
    assert_eq!(timer["args"]["minutes"], 10.0, "{timer}");
    assert!(
        records.iter().any(|r| r["tool"] == "get_datetime" && r["by"] == "local"),
        "{records:?}"
    );
}

#[test]
fn reminders_and_the_planner_need_no_model() {
    let stack = start_stack("");
    let said = answer(&stack, "Remind me to call the plumber tomorrow at nine.");
    assert_eq!(said, "I'll remind you to call the plumber tomorrow at 09:00.");
    let tomorrow = chrono::Local::now().date_naive().succ_opt().unwrap();
    let kept = ctl_json(&stack.sandbox, &["memory", "list", "--kind", "intention"]);
    let text = kept["text"].as_str().unwrap_or_default().to_owned();
    assert!(text.contains("call the plumber"), "{kept}");
    assert!(text.contains(&format!("{tomorrow} 09:00")), "{kept}");
    let listed = answer(&stack, "what reminders do I have");
    assert!(listed.contains(&format!("call the plumber ({tomorrow} 09:00)")), "{listed}");

    assert_eq!(answer(&stack, "add buy milk to my list"), "Added to your list: buy milk.");
    assert_eq!(answer(&stack, "what's next"), "Next: buy milk.");
    assert_eq!(answer(&stack, "mark buy milk as done"), "Done: buy milk.");
    let tasks = ctl_json(&stack.sandbox, &["task", "list"]);
    assert_eq!(tasks["tasks"][0]["title"], "buy milk", "{tasks}");
    assert_eq!(tasks["tasks"][0]["status"], "done", "{tasks}");
    assert_eq!(
        answer(&stack, "mark walk the dog as done"),
        "There is no open task called \"walk the dog\" on your list."
    );
    for text in ["call the plumber", "buy milk", "walk the dog"] {
        assert!(!model_asked(&stack, text), "the model was asked about {text:?}");
    }
}

#[test]
fn the_voice_dictation_and_do_not_disturb_are_switched_by_sentence() {
    let sandbox_wav = tempfile::tempdir().unwrap();
    let wav = sandbox_wav.path().join("voice.wav");
    let stack = start_stack(&format!("[voice]\ndevice = \"wav:{}\"\n", wav.display()));
    assert_eq!(status(&stack.sandbox)["voice"], false);
    assert_eq!(answer(&stack, "turn on the voice"), "Voice on.");
    assert_eq!(status(&stack.sandbox)["voice"], true);
    assert_eq!(answer(&stack, "voice off"), "Voice off.");
    assert_eq!(status(&stack.sandbox)["voice"], false);

    let asked = chrono::Local::now();
    let quiet = answer(&stack, "do not disturb for 30 minutes");
    // Said at the minute it was asked or the next; today, or tomorrow just before midnight.
    let expected: Vec<String> = [0, 1]
        .map(|late| asked + chrono::TimeDelta::minutes(30 + late))
        .iter()
        .map(|until| {
            let day = if until.date_naive() == asked.date_naive() { "today" } else { "tomorrow" };
            format!("Quiet until {day} at {}: no reminders until then.", until.format("%H:%M"))
        })
        .collect();
    assert!(expected.contains(&quiet), "{quiet:?}, not one of {expected:?}");
    assert_eq!(
        answer(&stack, "turn off do not disturb"),
        "Do not disturb is off: reminders may come again."
    );

    let on = answer(&stack, "start dictation");
    assert!(on.starts_with("Dictation on"), "{on}");
    expect_within("dictation is on once the command is over", DEADLINE, || {
        let s = status(&stack.sandbox);
        if s["mode"] == "dictate" { Ok(()) } else { Err(s.to_string()) }
    });
    assert_eq!(stack.sandbox.run("stt-ctl", &["dictate-stop"]).code, Some(0));
    for text in ["turn on the voice", "do not disturb", "start dictation"] {
        assert!(!model_asked(&stack, text), "the model was asked {text:?}");
    }
}

#[test]
fn a_configured_tool_runs_from_its_own_sentence_and_a_lookalike_reaches_the_model() {
    let marks = tempfile::tempdir().unwrap();
    let tool = format!(
        "[[tools.command]]\nname = \"lights\"\ndescription = \"Turn on a room's lights\"\n\
         argv = [\"mkdir\", \"-p\", \"{}/lights-{{room}}\"]\nside_effect = \"local\"\n\
         parameters = {{ room = \"The room\" }}\nsentences = [\"turn on the {{room}} lights\"]\n",
        marks.path().display()
    );
    let stack = start_stack(&tool);
    let said = answer(&stack, "Turn on the kitchen lights.");
    assert_eq!(said, "Done.");
    assert!(marks.path().join("lights-kitchen").is_dir(), "the tool ran");
    let call = events(&stack.seen).into_iter().find_map(|e| match e {
        AssistantEvent::ToolCall(c) if c.tool == "lights" => Some(c),
        _ => None,
    });
    assert_eq!(call.map(|c| c.args), Some(serde_json::json!({"room": "kitchen"})));

    // What a template does not take whole is the model's.
    stack.llm.push(Script::Text("The bakery closes at six.".into()));
    let said = answer(&stack, "what time does the bakery close");
    assert_eq!(said, "The bakery closes at six.");
    assert!(model_asked(&stack, "what time does the bakery close"));
    assert!(!model_asked(&stack, "kitchen lights"));

    // `stt-ctl intents test` says what a sentence would do, and runs nothing.
    let out = stack.sandbox.run("stt-ctl", &["intents", "test", "set a timer for 5 minutes"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(out.stdout.starts_with("timer_set (template: "), "{out:?}");
    assert!(out.stdout.contains("action: set a timer for 5 minutes"), "{out:?}");
    let out = stack.sandbox.run("stt-ctl", &["intents", "test", "what time does the bakery close"]);
    assert!(out.stdout.starts_with("the model: no template takes"), "{out:?}");
    assert_eq!(status(&stack.sandbox)["timers"], serde_json::json!([]));
}

#[test]
fn forget_what_i_just_said_deletes_the_last_turn_from_memory_and_the_chat() {
    let stack = start_stack("");
    stack.llm.push(Script::Text("Noted.".into()));
    let out = stack.sandbox.run("stt-ctl", &["chat-send", "my pin is zanzibar4471"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    stt_testkit::viewer::answered(&stack.seen, "Noted.", DEADLINE);
    let found = |word: &str| ctl_json(&stack.sandbox, &["memory", "search", word]);
    expect_within("the turn is in memory", DEADLINE, || {
        let hits = found("zanzibar4471");
        if hits["entries"].as_array().is_some_and(|e| !e.is_empty()) {
            Ok(())
        } else {
            Err(hits.to_string())
        }
    });
    assert_eq!(stack.sandbox.run("stt-ctl", &["chat-toggle"]).code, Some(0));

    let said = answer(&stack, "forget what I just said");
    assert_eq!(said, "Forgotten: \"my pin is zanzibar4471\".");
    assert_eq!(found("zanzibar4471")["entries"], serde_json::json!([]));
    assert_eq!(found("forget")["entries"], serde_json::json!([]), "the command is not kept either");
    // Gone from the chat the model is given next, and from the audit log's words.
    stack.llm.push(Script::Text("Hello.".into()));
    let out = stack.sandbox.run("stt-ctl", &["chat-send", "hello"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    stt_testkit::viewer::answered(&stack.seen, "Hello.", DEADLINE);
    let last = stack.llm.requests().last().cloned().unwrap_or_default();
    assert!(!last.to_string().contains("zanzibar4471"), "{last}");
    let record = audited_with(&stack.sandbox, "forget_last")
        .into_iter()
        .find(|r| r["tool"] == "forget_last");
    let record = record.expect("the forget is audited");
    assert_eq!(record["by"], "local");
    assert!(!record.to_string().contains("zanzibar4471"), "{record}");
}

#[test]
fn a_tool_that_needs_confirmation_asks_first_when_its_sentence_runs_it() {
    let marks = tempfile::tempdir().unwrap();
    let tool = format!(
        "[[tools.command]]\nname = \"wipe\"\ndescription = \"Make a mark\"\n\
         argv = [\"mkdir\", \"-p\", \"{}/mark-{{what}}\"]\nside_effect = \"destructive\"\n\
         requires_confirmation = true\nparameters = {{ what = \"What\" }}\n\
         sentences = [\"wipe the {{what}}\"]\n",
        marks.path().display()
    );
    let stack = start_stack(&tool);
    let calls = |stack: &Stack| -> Vec<stt_proto::ToolCall> {
        events(&stack.seen)
            .into_iter()
            .filter_map(|e| match e {
                AssistantEvent::ToolCall(c) if c.awaiting_confirmation => Some(c),
                _ => None,
            })
            .collect()
    };
    // The call this command makes: one more than before it ran (the last one seen may be
    // the previous command's, already answered).
    let waiting = |stack: &Stack, before: usize| {
        expect_within("the call waits for a yes or no", DEADLINE, || {
            calls(stack).get(before).cloned().ok_or_else(|| format!("{:?}", events(&stack.seen)))
        })
    };
    for (what, verb, runs) in [("board", "deny", false), ("desk", "confirm", true)] {
        for args in
            [&["command-start"][..], &["command-edit", "--text", &format!("wipe the {what}")]]
        {
            assert_eq!(stack.sandbox.run("stt-ctl", args).code, Some(0));
        }
        let before = calls(&stack).len();
        assert_eq!(
            stack.sandbox.run("stt-ctl", &["command-execute", "--wait=20000"]).code,
            Some(0)
        );
        let call = waiting(&stack, before);
        assert_eq!(call.tool, "wipe");
        assert!(!marks.path().join(format!("mark-{what}")).exists(), "ran before a yes");
        assert_eq!(stack.sandbox.run("stt-ctl", &[verb]).code, Some(0));
        expect_within("idle again", DEADLINE, || {
            let s = status(&stack.sandbox);
            if s["mode"] == "idle" { Ok(()) } else { Err(s.to_string()) }
        });
        assert_eq!(marks.path().join(format!("mark-{what}")).is_dir(), runs, "{verb}");
    }
    // The audit is written off the loop: it may land a moment after the answer.
    let records = expect_within("both calls audited", DEADLINE, || {
        let records = audited(&stack.sandbox);
        if records.len() == 2 { Ok(records) } else { Err(format!("{records:?}")) }
    });
    let confirmed: Vec<&Value> = records.iter().map(|r| &r["confirmed"]).collect();
    assert_eq!(confirmed, [&Value::Bool(false), &Value::Bool(true)], "{records:?}");
    assert!(!model_asked(&stack, "wipe"));
}
