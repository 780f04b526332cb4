//! The planner through `stt-ctl task` and the real assistant: a person makes, reads, works
//! through and finishes tasks without the model, the rows survive a restart, and what is
//! malformed is refused naming the fix.

#![allow(clippy::unwrap_used, reason = "a test: a failure should panic")]

use serde_json::Value;
use stt_testkit::viewer::watch_attached;
use stt_testkit::{DEADLINE, Output, Sandbox};

fn ctl(sandbox: &Sandbox, args: &[&str]) -> Output {
    let mut all = vec!["--timeout-ms", "20000"];
    all.extend_from_slice(args);
    sandbox.run("stt-ctl", &all)
}

/// `stt-ctl --json task …`, which must succeed; the reply as JSON.
fn task(sandbox: &Sandbox, args: &[&str]) -> Value {
    let mut all = vec!["--json", "task"];
    all.extend_from_slice(args);
    let out = ctl(sandbox, &all);
    assert_eq!(out.code, Some(0), "stt-ctl task {args:?}: {out:?}");
    serde_json::from_str(&out.stdout).unwrap()
}

#[test]
fn a_person_manages_tasks_with_stt_ctl_and_they_outlive_the_assistant() {
    let sandbox = Sandbox::new();
    let _llm = stt_testkit::viewer::scripted_model(&sandbox, "");
    let mut assistant = sandbox.spawn("stt-assistant", &[]);
    let _seen = watch_attached(&sandbox, DEADLINE);

    let added = task(
        &sandbox,
        &["add", "Renew", "the", "passport", "--due", "2000-01-01", "--priority", "1"],
    );
    assert_eq!(added["type"], "task_output", "{added}");
    let id = added["tasks"][0]["id"].as_i64().unwrap();
    assert_eq!(added["tasks"][0]["title"], "Renew the passport");
    task(&sandbox, &["add", "Paint the fence"]);

    let next = task(&sandbox, &["next"]);
    assert_eq!(next["next"][0]["text"], "Renew the passport", "{next}");
    assert_eq!(next["next"][0]["overdue"], true, "{next}");
    let plain = ctl(&sandbox, &["task", "next"]);
    assert!(
        plain
            .stdout
            .starts_with(&format!("task {id}: Renew the passport, overdue since 2000-01-01")),
        "{plain:?}"
    );

    assert_eq!(task(&sandbox, &["done", &id.to_string()])["tasks"][0]["status"], "done");
    let open = task(&sandbox, &["list", "--status", "open"]);
    let titles: Vec<&str> =
        open["tasks"].as_array().unwrap().iter().map(|t| t["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["Paint the fence"]);

    // Refused, naming the fix; nothing written.
    for (args, needle) in [
        (&["add", "x", "--due", "next week"][..], "YYYY-MM-DD"),
        (&["add", "x", "--priority", "7"][..], "1 (the highest) to 5"),
        (&["show", "999"][..], "no task 999"),
        (&["done", "999", "--item"][..], "no plan item 999"),
    ] {
        let out = ctl(&sandbox, &[&["task"][..], args].concat());
        assert_eq!(out.code, Some(1), "{args:?}: {out:?}");
        assert!(out.stdout.contains(needle) || out.stderr.contains(needle), "{args:?}: {out:?}");
    }

    // Kept: a new assistant reads the same tasks.
    assistant.signal_and_wait(nix::sys::signal::Signal::SIGKILL);
    let _assistant = sandbox.spawn("stt-assistant", &[]);
    stt_testkit::viewer::reattached(&sandbox, DEADLINE);
    let all = task(&sandbox, &["list"]);
    assert_eq!(all["tasks"].as_array().unwrap().len(), 2, "{all}");
}

/// Runs `text` as a typed command and waits until the flow is back to idle.
fn command(sandbox: &Sandbox, text: &str) {
    for args in [&["command-start"][..], &["command-edit", "--text", text]] {
        let out = ctl(sandbox, args);
        assert_eq!(out.code, Some(0), "{out:?}");
    }
    stt_testkit::expect_within("execute is accepted", DEADLINE, || {
        let out = ctl(sandbox, &["command-execute"]);
        if out.code == Some(0) { Ok(()) } else { Err(format!("{out:?}")) }
    });
    stt_testkit::expect_within("the command is over", crate::real_model::MODEL_DEADLINE, || {
        let out = ctl(sandbox, &["--json", "status"]);
        let status: Value =
            serde_json::from_str(&out.stdout).map_err(|e| format!("{e}: {out:?}"))?;
        if status["mode"] == "idle" && status["inference_busy"] == false {
            Ok(())
        } else {
            Err(out.stdout)
        }
    });
}

/// The tool calls and the assistant's answers viewers saw so far.
fn calls_and_answers(seen: &stt_testkit::viewer::Seen) -> (Vec<String>, Vec<String>) {
    let events = stt_testkit::viewer::events(seen);
    let calls = events
        .iter()
        .filter_map(stt_testkit::viewer::tool_call)
        .map(|c| format!("{} {}", c.tool, c.args))
        .collect();
    let answers = events
        .iter()
        .filter_map(|e| match e {
            stt_proto::AssistantEvent::ChatMessage(m)
                if m.role == stt_proto::ChatRole::Assistant && !m.partial =>
            {
                Some(m.text.clone())
            }
            _ => None,
        })
        .collect();
    (calls, answers)
}

/// The installed local model, asked by typed commands: "help me learn Rust in two weeks"
/// makes a task broken into dated items; "what should I do next" reads them back (its
/// call, and the first item in its answer); checking an item off (as a person does) makes
/// the task active.
#[test]
fn the_local_model_makes_a_task_breaks_it_into_dated_items_and_says_what_is_next() {
    use stt_testkit::llama::Server;
    let _turn = crate::one_at_a_time();
    let sandbox = Sandbox::new();
    let server = Server::start(sandbox.root());
    let more = "[assistant]\nmax_tool_iterations = 6\n";
    crate::real_model::autodetect_with(&sandbox, &server, more);
    let assistant =
        sandbox.spawn_with_env("stt-assistant", &[], &[("STT_LOG", "debug,stt_llm=trace")]);
    let seen = watch_attached(&sandbox, DEADLINE);
    // No microphone: the daemon only has to be there for a command to run.
    let _daemon = sandbox.spawn("stt-daemon", &[]);

    // The prompt says the time, so the 1.5B model's reply changes with the minute: at some it
    // writes an empty call, or loops over reads. Each command gets a second try, as a person
    // would say it again; a second miss fails.
    let plan = "Help me learn Rust in two weeks: make a task and break it down into a plan with \
                dated daily items.";
    let planned_task = |sandbox: &Sandbox| {
        let all = task(sandbox, &["list"]);
        let found = all["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| !t["phases"].as_array().unwrap().is_empty())
            .cloned();
        (all, found)
    };
    command(&sandbox, plan);
    let (mut all, mut planned) = planned_task(&sandbox);
    if planned.is_none() {
        eprintln!("no plan at the first try: said again");
        command(&sandbox, plan);
        (all, planned) = planned_task(&sandbox);
    }
    let Some(planned) = planned else { panic!("no task with a plan: {all}\n{}", assistant.log()) };
    eprintln!("the local model planned: {planned}");
    let today = chrono::Local::now().format("%Y-%m-%d").to_string();
    let items: Vec<&Value> = planned["phases"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["items"].as_array().unwrap())
        .collect();
    // A plan of dated items: how many the 1.5B model writes varies with its prompt, which
    // now says the time (two to four in the runs seen).
    assert!(items.len() >= 2, "{planned}");
    let days: Vec<&str> = items.iter().map(|i| i["day"].as_str().unwrap()).collect();
    assert!(days.iter().all(|d| *d >= today.as_str()), "{days:?}");
    assert!(days.windows(2).all(|w| w[0] <= w[1]), "{days:?}");

    command(&sandbox, "What should I do next on my tasks?");
    let (mut calls, mut answers) = calls_and_answers(&seen);
    if answers.is_empty() {
        eprintln!("no answer at the first try ({calls:?}): asked again");
        command(&sandbox, "What should I do next on my tasks?");
        (calls, answers) = calls_and_answers(&seen);
    }
    eprintln!("its calls: {calls:#?}\nits answers: {answers:#?}");
    assert!(
        calls.iter().any(|c| c.starts_with("get_next_actions")
            || c.starts_with("list_tasks")
            || c.starts_with("get_task")),
        "{calls:?}"
    );
    let first = items[0]["text"].as_str().unwrap().to_lowercase();
    let answer = answers.last().cloned().unwrap_or_default().to_lowercase();
    let shared = first.split_whitespace().filter(|w| w.len() > 3).any(|w| answer.contains(w));
    assert!(shared, "the answer {answer:?} names nothing of the first item {first:?}");

    let first_id = items[0]["id"].as_i64().unwrap().to_string();
    task(&sandbox, &["done", &first_id, "--item"]);
    let id = planned["id"].as_i64().unwrap().to_string();
    let shown = task(&sandbox, &["show", &id]);
    assert_eq!(shown["tasks"][0]["status"], "active", "{shown}");
    let next = task(&sandbox, &["next"]);
    assert_ne!(next["next"][0]["item"], items[0]["id"], "{next}");
}

/// The installed local model reads a note under `[tools].document_roots` and a page from a
/// local web server, and answers from what they say.
#[test]
fn the_local_model_answers_from_a_local_file_and_a_local_web_page() {
    use stt_testkit::llama::Server;
    let _turn = crate::one_at_a_time();
    let sandbox = Sandbox::new();
    let server = Server::start(sandbox.root());
    let docs = sandbox.root().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(docs.join("shopping.md"), "# Shopping\n- eggs\n- flour\n- lemons\n").unwrap();
    let page = b"<html><body><h1>Trains</h1><p>The 8:15 to Leeds leaves from platform 4.</p></body></html>";
    let web = stt_testkit::web::WebServer::start(vec![("/trains", "text/html", page.to_vec())]);
    let more = format!("[tools]\ndocument_roots = [\"{}\"]\n", docs.display());
    crate::real_model::autodetect_with(&sandbox, &server, &more);
    let assistant =
        sandbox.spawn_with_env("stt-assistant", &[], &[("STT_LOG", "debug,stt_llm=trace")]);
    let seen = watch_attached(&sandbox, DEADLINE);
    let _daemon = sandbox.spawn("stt-daemon", &[]);

    command(&sandbox, "Read my notes file shopping.md and tell me what to buy.");
    let (calls, answers) = calls_and_answers(&seen);
    eprintln!("its calls: {calls:#?}\nits answers: {answers:#?}");
    let read = calls.iter().position(|c| c.starts_with("read_file"));
    let Some(read) = read else { panic!("no read_file: {calls:?}") };
    // What it read reaches the user: in its answer, or in what it did next (the 1.5B model
    // sends the list as a notification, which this sandbox has no notify-send to show).
    let answer = answers.last().cloned().unwrap_or_default();
    let after = format!("{answer} {}", calls[read + 1..].join(" ")).to_lowercase();
    assert!(
        ["eggs", "flour", "lemons"].iter().any(|w| after.contains(w)),
        "{after}\n{}",
        assistant.log()
    );

    command(
        &sandbox,
        &format!(
            "Fetch the web page {}/trains and tell me which platform the Leeds train leaves from.",
            web.url()
        ),
    );
    let (calls, answers) = calls_and_answers(&seen);
    eprintln!("its calls: {calls:#?}\nits answers: {answers:#?}");
    assert!(calls.iter().any(|c| c.starts_with("fetch_web")), "{calls:?}\n{}", assistant.log());
    assert_eq!(web.asked(), ["/trains"]);
    let answer = answers.last().cloned().unwrap_or_default().to_lowercase();
    assert!(answer.contains('4') || answer.contains("four"), "{answer}");
}
