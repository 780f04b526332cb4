//! Long-term memory across real processes: the assistant keeps what was said in its SQLite
//! file (0600) under the sandbox's data directory, `stt-ctl memory` reads, searches, exports,
//! imports and forgets it (forgetting audited), and, against the real local model, a fact
//! told in chat comes back in a new conversation after a restart, and a dream is stopped by
//! speech and resumes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stderr,
    reason = "tests, which print what the real model said"
)]

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::{Value, json};
use stt_proto::{AssistantEvent, ChatRole};
use stt_testkit::llama::Server;
use stt_testkit::llm_server::Script;
use stt_testkit::viewer::{Seen, events, reattached, scripted_model, speak, watch_attached};
use stt_testkit::{DEADLINE, Output, Proc, Sandbox, expect_within};

/// For the real model: several requests on one thread of a machine that may be busy.
const MODEL_DEADLINE: Duration = Duration::from_secs(300);

fn ctl(sandbox: &Sandbox, args: &[&str]) -> Output {
    let mut all = vec!["--timeout-ms", "20000"];
    all.extend_from_slice(args);
    sandbox.run("stt-ctl", &all)
}

/// `stt-ctl --json memory …`, which must succeed; the reply as JSON.
fn memory(sandbox: &Sandbox, args: &[&str]) -> Value {
    let mut all = vec!["--json", "memory"];
    all.extend_from_slice(args);
    let out = ctl(sandbox, &all);
    assert_eq!(out.code, Some(0), "stt-ctl memory {args:?}: {out:?}");
    serde_json::from_str(&out.stdout).unwrap()
}

/// `memory stats` once `done` holds of its text.
fn stats_until(sandbox: &Sandbox, what: &str, deadline: Duration, done: impl Fn(&str) -> bool) {
    expect_within(what, deadline, || {
        let text = memory(sandbox, &["stats"])["text"].as_str().unwrap().to_owned();
        if done(&text) { Ok(()) } else { Err(text) }
    });
}

/// The number before `label` in a stats line ("3 conversations (1 waiting …").
fn count(stats: &str, label: &str) -> u64 {
    let at = stats.find(label).unwrap_or_else(|| panic!("no {label} in {stats}"));
    stats[..at].split_whitespace().last().unwrap().trim_start_matches('(').parse().unwrap()
}

/// The model's whole answer after event `after` (an error answer fails the test).
pub fn chat_answer(seen: &Seen, after: usize, assistant: &Proc) -> String {
    expect_within("the model answers", MODEL_DEADLINE, || {
        let events = events(seen);
        events
            .iter()
            .skip(after)
            .find_map(|e| match e {
                AssistantEvent::ChatMessage(m) if m.role == ChatRole::Assistant && !m.partial => {
                    Some(m.text.clone())
                }
                AssistantEvent::ChatMessage(m) if m.role == ChatRole::Error => {
                    panic!("{}\n{}", m.text, assistant.log())
                }
                _ => None,
            })
            .ok_or_else(|| format!("{events:?}"))
    })
}

fn notes(seen: &Seen) -> Vec<String> {
    events(seen)
        .into_iter()
        .filter_map(|e| match e {
            AssistantEvent::ChatMessage(m) if m.role == ChatRole::Note => Some(m.text),
            _ => None,
        })
        .collect()
}

#[test]
fn stt_ctl_reads_searches_exports_imports_and_forgets_what_memory_holds() {
    let sandbox = Sandbox::new();
    let llm = scripted_model(&sandbox, "");
    // A daemon with no microphone: its speech recognition is up, so commands may run.
    let _daemon = sandbox.spawn("stt-daemon", &[]);
    let mut assistant = sandbox.spawn("stt-assistant", &[]);
    let seen = watch_attached(&sandbox, DEADLINE);

    // An intention through the tool a command calls: an item to list, show, export.
    llm.push(Script::ToolCalls(vec![(
        "add_intention".into(),
        json!({"text": "ask how the dentist went", "cue": "dentist"}),
    )]));
    llm.push(Script::Text("I will.".into()));
    assert_eq!(ctl(&sandbox, &["command-start"]).code, Some(0));
    let edit = ctl(&sandbox, &["command-edit", "--text", "remind me about the dentist"]);
    assert_eq!(edit.code, Some(0), "{edit:?}");
    expect_within("the command runs", DEADLINE, || {
        let out = ctl(&sandbox, &["command-execute"]);
        if out.code == Some(0) { Ok(()) } else { Err(format!("{out:?}")) }
    });
    let listed = expect_within("the intention is listed", DEADLINE, || {
        let listed = memory(&sandbox, &["list", "--kind", "intention"]);
        let n = listed["entries"].as_array().unwrap().len();
        if n == 1 { Ok(listed) } else { Err(listed.to_string()) }
    });
    let id = listed["entries"][0]["id"].as_i64().unwrap().to_string();
    let shown = memory(&sandbox, &["show", &id]);
    assert!(shown["text"].as_str().unwrap().contains("cue: dentist"), "{shown}");

    llm.push(Script::Text("Noted: Lisbon.".into()));
    let before = events(&seen).len();
    assert_eq!(ctl(&sandbox, &["chat-send", "My sister lives in Lisbon."]).code, Some(0));
    chat_answer(&seen, before, &assistant);
    // The command (its words, the call, the result, the answer) and the chat turn.
    stats_until(&sandbox, "every line kept", DEADLINE, |s| count(s, "lines") == 6);

    let db = sandbox.root().join("data/stt/memory.sqlite");
    assert_eq!(std::fs::metadata(&db).unwrap().permissions().mode() & 0o777, 0o600);
    let found = memory(&sandbox, &["search", "sister"]);
    let entries = found["entries"].as_array().unwrap();
    assert_eq!(entries[0]["target"], "log", "{found}");
    assert!(entries[0]["text"].as_str().unwrap().contains("My sister lives in Lisbon."), "{found}");

    let export = sandbox.root().join("export");
    let out = memory(&sandbox, &["export", export.to_str().unwrap()]);
    assert!(out["text"].as_str().unwrap().starts_with("wrote 1 items"), "{out}");
    let files: Vec<String> = walk(&export);
    let item = files.iter().find(|f| f.contains("kind: intention")).expect("the item's file");
    assert!(item.starts_with("---\n") && item.contains("cue: dentist"), "{item}");
    assert!(item.contains("ask how the dentist went"), "{item}");
    // The conversations are there too, the command with its tool call.
    assert!(files.iter().any(|f| f.contains("kind: command") && f.contains("add_intention(")));

    let forgot = memory(&sandbox, &["forget", &id]);
    assert_eq!(forgot["text"], format!("forgot item {id}"));
    let out = ctl(&sandbox, &["memory", "show", &id]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains("memory has no item"), "{out:?}");
    assert!(out.stderr.contains("(not_found)"), "its own code: {out:?}");
    let audit = std::fs::read_dir(sandbox.root().join("data/stt/audit")).unwrap();
    let audit: String =
        audit.map(|f| std::fs::read_to_string(f.unwrap().path()).unwrap()).collect();
    assert!(
        audit.contains("\"tool\":\"memory_forget\"") && audit.contains(&format!("\"id\":{id}")),
        "{audit}"
    );

    // Import brings it back from the files, a second import changes nothing.
    let out = memory(&sandbox, &["import", export.to_str().unwrap()]);
    assert!(out["text"].as_str().unwrap().contains("1 new"), "{out}");
    let out = memory(&sandbox, &["import", export.to_str().unwrap()]);
    assert!(out["text"].as_str().unwrap().contains("0 new"), "{out}");
    assert_eq!(memory(&sandbox, &["list"])["entries"].as_array().unwrap().len(), 1);

    // Forgetting everything leaves nothing to find, after a restart too.
    memory(&sandbox, &["forget", "--all"]);
    assert!(memory(&sandbox, &["search", "sister"])["entries"].as_array().unwrap().is_empty());
    assert!(assistant.signal_and_wait(Signal::SIGTERM).success());
    let _assistant = sandbox.spawn("stt-assistant", &[]);
    expect_within("the assistant is back", DEADLINE, || {
        let out = ctl(&sandbox, &["memory", "stats"]);
        if out.code == Some(0) { Ok(out.stdout) } else { Err(format!("{out:?}")) }
    });
    let stats = memory(&sandbox, &["stats"]);
    assert!(stats["text"].as_str().unwrap().starts_with("0 conversations"), "{stats}");

    // Bad input is answered with the fix.
    let out = ctl(&sandbox, &["memory", "list", "--kind", "gossip"]);
    assert_eq!(out.code, Some(1));
    assert!(out.stderr.contains("knowledge, episode, intention or profile"), "{out:?}");
}

/// Every file under `dir`, read.
fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(std::fs::read_to_string(&path).unwrap());
        }
    }
    out
}

/// The sandbox's config: the real model on `server`, nothing else found, `more` after.
fn real_model(sandbox: &Sandbox, server: &Server, more: &str) {
    let dead = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dead = format!("http://127.0.0.1:{dead}/v1/chat/completions");
    let mut config = format!("[llm]\nlocal_port = {}\nrequest_timeout_s = 240\n", server.port);
    for id in ["ollama", "lmstudio"] {
        config.push_str(&format!("[llm.providers.{id}]\nendpoint = \"{dead}\"\n"));
    }
    config.push_str(more);
    std::fs::write(sandbox.config_file(), config).unwrap();
}

#[test]
fn a_fact_told_in_chat_comes_back_in_a_new_conversation_after_a_restart() {
    let sandbox = Sandbox::new();
    let server = Server::start(sandbox.root());
    // Dreams allowed on the local model, but none on its own (idle 0): `memory dreams`
    // says only that none has run.
    real_model(&sandbox, &server, "[memory]\ndream_idle_s = 0\ndream_on_local_model = true\n");
    let mut assistant = sandbox.spawn("stt-assistant", &[]);
    let seen = watch_attached(&sandbox, DEADLINE);
    let dreams = memory(&sandbox, &["dreams"]);
    assert_eq!(dreams["text"], "no dream has run yet", "{dreams}");
    assert_eq!(ctl(&sandbox, &["chat-send", "My sister Ana lives in Lisbon."]).code, Some(0));
    let first = chat_answer(&seen, 0, &assistant);
    eprintln!("first answer: {first:?}");
    // Kept and embedded before the restart.
    stats_until(&sandbox, "the turn embedded", DEADLINE, |s| count(s, "vectors") >= 2);
    assert!(assistant.signal_and_wait(Signal::SIGTERM).success());

    let assistant = sandbox.spawn("stt-assistant", &[]);
    reattached(&sandbox, DEADLINE);
    expect_within("the assistant is back", DEADLINE, || {
        let out = ctl(&sandbox, &["chat-command", "/new"]);
        if out.code == Some(0) { Ok(()) } else { Err(format!("{out:?}")) }
    });
    let before = events(&seen).len();
    assert_eq!(
        ctl(&sandbox, &["chat-send", "In which city does my sister Ana live?"]).code,
        Some(0)
    );
    let answer = chat_answer(&seen, before, &assistant);
    eprintln!("answer in the new conversation: {answer:?}");
    let hinted: Vec<String> =
        notes(&seen).into_iter().filter(|n| n.starts_with("memory: reminded the model")).collect();
    assert!(hinted.iter().any(|n| n.contains("Lisbon")), "no hint: {:?}", notes(&seen));
    assert!(answer.to_lowercase().contains("lisbon"), "the answer did not use the fact: {answer}");
}

#[test]
fn a_dream_on_the_real_model_is_stopped_by_speech_and_resumes() {
    let sandbox = Sandbox::new();
    let server = Server::start(sandbox.root());
    // No dream on its own: this test says when.
    real_model(&sandbox, &server, "[memory]\ndream_idle_s = 0\ndream_max_steps = 6\n");
    let assistant = sandbox.spawn("stt-assistant", &[]);
    let seen = watch_attached(&sandbox, DEADLINE);
    for (turn, text) in ["I started learning the cello last week.", "My favourite colour is green."]
        .iter()
        .enumerate()
    {
        let before = events(&seen).len();
        assert_eq!(ctl(&sandbox, &["chat-send", text]).code, Some(0));
        chat_answer(&seen, before, &assistant);
        // Each its own conversation, waiting for a dream.
        assert_eq!(ctl(&sandbox, &["chat-command", "/new"]).code, Some(0), "turn {turn}");
    }
    stats_until(&sandbox, "two conversations wait", DEADLINE, |s| s.contains("(2 waiting"));

    let started = memory(&sandbox, &["dream"]);
    assert!(started["text"].as_str().unwrap().starts_with("a dream started"), "{started}");
    // Someone speaks (the daemon comes up with speech in its input) while the model works.
    let wav = speak(sandbox.root(), "speech", "hello there, what a nice day");
    let wav = wav.to_string_lossy().into_owned();
    let _daemon = sandbox
        .spawn("stt-daemon", &["--input", &wav, "--fast", "--stay", "--wait-for-subscriber"]);
    expect_within("the dream stops", MODEL_DEADLINE, || {
        let notes = notes(&seen);
        if notes.iter().any(|n| n == "memory: the dream was interrupted; it goes on later") {
            Ok(())
        } else {
            Err(format!("{notes:?}\n{}", assistant.log()))
        }
    });
    let dreams = memory(&sandbox, &["dreams"])["text"].as_str().unwrap().to_owned();
    assert!(dreams.contains("(asked, interrupted)"), "{dreams}");
    // On the local model, dreams start only when asked (`[memory].dream_on_local_model`).
    assert!(
        dreams.starts_with("automatic dreams are off while the local model answers"),
        "{dreams}"
    );

    // Asked again, it goes on from where it stopped and finishes.
    memory(&sandbox, &["dream"]);
    expect_within("the dream finishes", MODEL_DEADLINE, || {
        let notes = notes(&seen);
        if notes.iter().any(|n| n.starts_with("memory: dreamt")) {
            Ok(())
        } else {
            Err(format!("{notes:?}"))
        }
    });
    let dreams = memory(&sandbox, &["dreams"])["text"].as_str().unwrap().to_owned();
    eprintln!("{dreams}");
    assert!(dreams.contains("(asked, done)"), "{dreams}");
    // It went on: the conversation it was reading is read now.
    let stats = stats_now(&sandbox);
    assert!(count(&stats, "waiting") < 2, "the resumed dream read nothing: {stats}");
    // A dream ends after `dream_max_steps` requests, and a model that corrects itself twice
    // spends them on one conversation (seen in CI): what is left waits for the next dream,
    // which reads it.
    for n in 2..=3 {
        if count(&stats_now(&sandbox), "waiting") == 0 {
            break;
        }
        dream_now(&sandbox, &seen, &assistant, n);
    }
    stats_until(&sandbox, "nothing waits", DEADLINE, |s| s.contains("(0 waiting"));
}

fn stats_now(sandbox: &Sandbox) -> String {
    memory(sandbox, &["stats"])["text"].as_str().unwrap().to_owned()
}

/// Says `text` in a chat of its own, waits for the answer, and leaves the conversation to a
/// dream.
fn tell(sandbox: &Sandbox, seen: &Seen, assistant: &Proc, text: &str) {
    let before = events(seen).len();
    assert_eq!(ctl(sandbox, &["chat-send", text]).code, Some(0));
    chat_answer(seen, before, assistant);
    assert_eq!(ctl(sandbox, &["chat-command", "/new"]).code, Some(0));
}

/// Asks for a dream and waits until it is over: the `n`th "dreamt" note.
fn dream_now(sandbox: &Sandbox, seen: &Seen, assistant: &Proc, n: usize) {
    stats_until(sandbox, "a conversation waits", DEADLINE, |s| !s.contains("(0 waiting"));
    memory(sandbox, &["dream"]);
    expect_within("the dream finishes", MODEL_DEADLINE, || {
        let notes = notes(seen);
        if let Some(failed) = notes.iter().find(|n| n.starts_with("memory: the dream failed")) {
            panic!("{failed}\n{}", assistant.log());
        }
        let done = notes.iter().filter(|n| n.starts_with("memory: dreamt")).count();
        if done >= n { Ok(()) } else { Err(format!("{notes:?}")) }
    });
}

/// 10 runs in a row passed on the 1.5B model under load (2026-12-04, `for i in $(seq 10); do
/// cargo test -p stt-tests --test memory a_correction_on_the_real_model; done`, each beside
/// `scripts/bench-tree --real` on the same cores), once the link was looked for on whichever
/// Porto item replaced the fact: a profile the dream also wrote ("about sister: … Porto now")
/// can rank first, and it carries no link.
#[test]
fn a_correction_on_the_real_model_replaces_the_fact_and_keeps_the_old_one_archived() {
    let sandbox = Sandbox::new();
    let server = Server::start(sandbox.root());
    real_model(&sandbox, &server, "[memory]\ndream_idle_s = 0\n");
    // What the model wrote in each round is in the log a failure prints.
    let log = [("STT_LOG", "info,stt_assistant::llm::dream=debug")];
    let assistant = sandbox.spawn_with_env("stt-assistant", &[], &log);
    let seen = watch_attached(&sandbox, DEADLINE);
    tell(&sandbox, &seen, &assistant, "My sister Ana lives in Lisbon.");
    dream_now(&sandbox, &seen, &assistant, 1);
    let items = memory(&sandbox, &["list"])["text"].as_str().unwrap().to_owned();
    eprintln!("after the first dream:\n{items}");
    assert!(items.contains("Lisbon"), "the fact was not kept: {items}");

    tell(&sandbox, &seen, &assistant, "My sister Ana lives in Porto now.");
    dream_now(&sandbox, &seen, &assistant, 2);
    let dreams = memory(&sandbox, &["dreams"])["text"].as_str().unwrap().to_owned();
    eprintln!("{dreams}\n{}", assistant.log());
    let found = memory(&sandbox, &["search", "where does my sister Ana live"]);
    let items: Vec<&Value> =
        found["entries"].as_array().unwrap().iter().filter(|e| e["target"] == "item").collect();
    eprintln!("{}", found["text"]);
    assert!(!items.is_empty(), "{found}");
    let text = |e: &Value| e["text"].as_str().unwrap_or_default().to_owned();
    assert!(text(items[0]).contains("Porto"), "the correction comes first: {found}");
    assert!(items.iter().all(|e| !text(e).contains("Lisbon")), "Lisbon is out of recall: {found}");
    // A correction says what it replaced, and the old one is kept, archived, with a link.
    // (The dream may also have noted the new city in a second item of its own: the link is
    // on the one that replaced the fact, whichever comes first.)
    assert!(found["text"].as_str().unwrap().contains("(corrects an earlier"), "{found}");
    let shown: Vec<String> = items
        .iter()
        .map(|e| memory(&sandbox, &["show", &e["id"].to_string()])["text"].as_str().unwrap().into())
        .collect();
    let (shown, old) = shown
        .iter()
        .find_map(|s| Some((s, s.lines().find_map(|l| l.strip_prefix("supersedes: item "))?)))
        .unwrap_or_else(|| panic!("no link to the old fact: {shown:?}"));
    assert!(shown.contains("Porto"), "{shown}");
    let old = memory(&sandbox, &["show", old])["text"].as_str().unwrap().to_owned();
    eprintln!("{shown}\n{old}");
    assert!(old.contains("Lisbon") && old.contains("archived: superseded"), "{old}");
}

#[test]
fn an_intention_comes_back_when_its_cue_is_spoken() {
    let sandbox = Sandbox::new();
    let server = Server::start(sandbox.root());
    real_model(&sandbox, &server, "");
    // The intention as a person writes it in memory's files (what `memory export` gives).
    let files = sandbox.root().join("mine");
    std::fs::create_dir_all(files.join("intentions")).unwrap();
    std::fs::write(
        files.join("intentions/dentist.md"),
        "---\nkind: intention\ncue: dentist\n---\nAsk whether the new appointment is booked.\n",
    )
    .unwrap();
    let assistant = sandbox.spawn("stt-assistant", &[]);
    let seen = watch_attached(&sandbox, DEADLINE);
    let imported = memory(&sandbox, &["import", files.to_str().unwrap()]);
    assert!(imported["text"].as_str().unwrap().contains("1 new"), "{imported}");
    assert_eq!(ctl(&sandbox, &["chat-toggle"]).code, Some(0));

    let wav = speak(sandbox.root(), "cue", "I was at the dentist this morning.");
    let wav = wav.to_string_lossy().into_owned();
    let daemon = sandbox
        .spawn("stt-daemon", &["--input", &wav, "--fast", "--stay", "--wait-for-subscriber"]);
    let note = expect_within("the intention comes back", MODEL_DEADLINE, || {
        notes(&seen)
            .into_iter()
            .find(|n| n.starts_with("memory: \"dentist\" came up"))
            .ok_or_else(|| format!("{:?}\n{}\n{}", notes(&seen), daemon.log(), assistant.log()))
    });
    assert!(note.ends_with("Ask whether the new appointment is booked."), "{note}");
    let answer = chat_answer(&seen, 0, &assistant);
    eprintln!("the model, reminded: {answer:?}");
}

/// Speech nobody addressed to the assistant (idle mode) is kept only when the config asks.
#[test]
fn idle_speech_is_kept_only_with_capture_ambient() {
    for capture in [false, true] {
        let sandbox = Sandbox::new();
        let _llm = scripted_model(&sandbox, &format!("[memory]\ncapture_ambient = {capture}\n"));
        let _assistant = sandbox.spawn("stt-assistant", &[]);
        let seen = watch_attached(&sandbox, DEADLINE);
        let wav = speak(sandbox.root(), "ambient", "the blue van is parked outside");
        let wav = wav.to_string_lossy().into_owned();
        let _daemon = sandbox
            .spawn("stt-daemon", &["--input", &wav, "--fast", "--stay", "--wait-for-subscriber"]);
        expect_within("the words are transcribed", DEADLINE, || {
            let heard = events(&seen).iter().any(|e| matches!(e, AssistantEvent::Transcript(_)));
            if heard { Ok(()) } else { Err(format!("{:?}", events(&seen))) }
        });
        let found = || memory(&sandbox, &["search", "blue van parked"])["entries"].clone();
        if capture {
            let entries = expect_within("the words are kept", DEADLINE, || {
                let entries = found();
                if entries.as_array().unwrap().is_empty() {
                    Err(entries.to_string())
                } else {
                    Ok(entries)
                }
            });
            assert_eq!(entries[0]["kind"], "said", "{entries}");
            // Whisper may hear "van" as "man": the rest of the line is enough.
            let text = entries[0]["text"].as_str().unwrap().to_lowercase();
            assert!(text.starts_with("ambient: ") && text.contains("parked outside"), "{entries}");
        } else {
            assert!(found().as_array().unwrap().is_empty(), "kept without capture_ambient");
            let stats = memory(&sandbox, &["stats"]);
            assert!(stats["text"].as_str().unwrap().starts_with("0 conversations"), "{stats}");
        }
    }
}

/// Another program holding the memory file's write lock turns memory off for the session,
/// with a message that says so; chat goes on.
#[test]
fn a_locked_database_turns_memory_off_and_chat_goes_on() {
    let sandbox = Sandbox::new();
    let llm = scripted_model(&sandbox, "");
    llm.push(Script::Text("First answer.".into()));
    llm.push(Script::Text("Second answer.".into()));
    let assistant = sandbox.spawn("stt-assistant", &[]);
    let seen = watch_attached(&sandbox, DEADLINE);
    assert_eq!(ctl(&sandbox, &["chat-send", "first"]).code, Some(0));
    chat_answer(&seen, 0, &assistant);
    stats_until(&sandbox, "the turn kept", DEADLINE, |s| count(s, "lines") == 2);

    let db = sandbox.root().join("data/stt/memory.sqlite");
    let lock = rusqlite::Connection::open(&db).unwrap();
    lock.execute_batch(
        "BEGIN EXCLUSIVE; INSERT INTO dreams(started, status, trigger) VALUES (0, 'x', 'x');",
    )
    .unwrap();
    let before = events(&seen).len();
    assert_eq!(ctl(&sandbox, &["chat-send", "second"]).code, Some(0));
    assert_eq!(chat_answer(&seen, before, &assistant), "Second answer.");
    let off = expect_within("memory says it is off", DEADLINE, || {
        events(&seen)
            .into_iter()
            .find_map(|e| match e {
                AssistantEvent::Error(e) if e.message.starts_with("memory is off") => {
                    Some(e.message)
                }
                _ => None,
            })
            .ok_or_else(|| format!("{:?}", events(&seen)))
    });
    assert!(off.contains("chat and commands go on without it"), "{off}");
    drop(lock);
    let out = ctl(&sandbox, &["memory", "stats"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains("memory is off until the assistant restarts"), "{out:?}");
    assert!(out.stderr.contains("(memory_off)"), "its own code: {out:?}");
}

/// The disk under the data directory fills (a 4 MiB tmpfs mounted there in a mount
/// namespace of the assistant's own, filled from outside through `/proc/PID/root`): a turn
/// said meanwhile is answered, memory says it cannot write and why, `status` shows it off
/// with that reason; once the filler is gone the turn that waited is written, memory says it
/// writes again, and the database passes SQLite's integrity check.
#[test]
fn a_full_disk_holds_memory_writes_until_there_is_room_and_loses_none() {
    let probe = std::process::Command::new("unshare")
        .args(["-rm", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /tmp"])
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        assert!(
            std::env::var_os("STT_TEST_STRICT").is_none(),
            "`unshare -rm` with a tmpfs mount is needed (util-linux, and user namespaces)"
        );
        eprintln!("skipped: no user namespace with a tmpfs mount here");
        return;
    }
    let sandbox = Sandbox::new();
    let llm = scripted_model(&sandbox, "");
    llm.push(Script::Text("First answer.".into()));
    llm.push(Script::Text("Second answer.".into()));
    // A command while the disk is full: a timer set (its file in the state directory, its
    // record in the audit log), answered from its template.
    llm.push(Script::ToolCalls(vec![(
        "set_timer".into(),
        json!({"minutes": 30, "label": "bread"}),
    )]));
    llm.push(Script::Text("Third answer.".into()));
    let (data, state) = (sandbox.root().join("data"), sandbox.root().join("state"));
    std::fs::create_dir_all(&state).unwrap();
    // The data directory (memory, the audit log) and the state directory (the chat session,
    // the timers) each on a small disk of its own.
    let mount = "mount -t tmpfs -o size=4m,mode=0700 tmpfs \"$XDG_DATA_HOME\" && \
                 mount -t tmpfs -o size=1m,mode=0700 tmpfs \"$XDG_STATE_HOME\" && exec \"$0\"";
    // A command needs speech recognition up, as a person's does.
    let _daemon = sandbox.spawn("stt-daemon", &[]);
    let bin = stt_testkit::bin("stt-assistant");
    let unshare = std::path::Path::new("unshare");
    let assistant = sandbox.spawn_program(
        "stt-assistant",
        unshare,
        &["-rm", "sh", "-c", mount, bin.to_str().unwrap()],
    );
    // The assistant's view of its data and state directories: the tmpfs disks.
    let inside =
        std::path::PathBuf::from(format!("/proc/{}/root{}", assistant.pid(), data.display()));
    let inside_state =
        std::path::PathBuf::from(format!("/proc/{}/root{}", assistant.pid(), state.display()));
    let seen = watch_attached(&sandbox, DEADLINE);
    assert_eq!(ctl(&sandbox, &["chat-send", "first"]).code, Some(0));
    chat_answer(&seen, 0, &assistant);
    stats_until(&sandbox, "the turn kept", DEADLINE, |s| count(s, "lines") == 2);

    // Fill both: write until each disk says no.
    let fill = |dir: &std::path::Path| {
        let filler = dir.join("filler");
        let mut file = std::fs::File::create(&filler).unwrap();
        let block = vec![0_u8; 16 * 1024];
        let full = loop {
            if let Err(e) = std::io::Write::write_all(&mut file, &block) {
                break e;
            }
        };
        assert_eq!(full.raw_os_error(), Some(28), "{full}");
        filler
    };
    let fillers = [fill(&inside), fill(&inside_state)];
    let before = events(&seen).len();
    assert_eq!(ctl(&sandbox, &["chat-send", "said while the disk was full"]).code, Some(0));
    assert_eq!(chat_answer(&seen, before, &assistant), "Second answer.", "chat goes on");
    assert_eq!(ctl(&sandbox, &["chat-toggle"]).code, Some(0));
    let answer = stt_testkit::viewer::typed_answer(&sandbox, &seen, "set a timer", DEADLINE);
    assert!(answer.contains("30 minutes"), "the command goes on: {answer}");
    // The session waits (and the timers and the audit record behind it): said once.
    let waits = expect_within("the writes wait for room", DEADLINE, || {
        events(&seen)
            .into_iter()
            .skip(before)
            .find_map(|e| match e {
                AssistantEvent::Error(e)
                    if e.message.contains("the disk is full")
                        && !e.message.starts_with("memory") =>
                {
                    Some(e.message)
                }
                _ => None,
            })
            .ok_or_else(|| format!("{:?}", events(&seen)))
    });
    assert!(
        waits.starts_with(
            "the conversation is kept until the assistant restarts: cannot save it to"
        ) && waits.contains("Free some space: it is written as soon as there is room"),
        "{waits}"
    );
    let why = expect_within("memory says the disk is full", DEADLINE, || {
        events(&seen)
            .into_iter()
            .skip(before)
            .find_map(|e| match e {
                AssistantEvent::Error(e) if e.message.starts_with("memory cannot write") => {
                    Some(e.message)
                }
                _ => None,
            })
            .ok_or_else(|| format!("{:?}", events(&seen)))
    });
    assert!(why.contains("disk is full") && why.contains("Free some space"), "{why}");
    let lanes = stt_testkit::viewer::status(&sandbox)["lanes"].clone();
    let memory_lane =
        lanes.as_array().unwrap().iter().find(|l| l["name"] == "memory").unwrap().clone();
    assert_eq!(memory_lane["state"], "off", "{lanes}");
    // Reads still answer while writes wait.
    assert_eq!(ctl(&sandbox, &["memory", "stats"]).code, Some(0));

    // Room again: what waited is written, and memory and the writer say so.
    for filler in &fillers {
        std::fs::remove_file(filler).unwrap();
    }
    expect_within("the files that waited are written", DEADLINE, || {
        events(&seen)
            .into_iter()
            .skip(before)
            .find(|e| matches!(e, AssistantEvent::ChatMessage(m) if m.role == ChatRole::Note && m.text.starts_with("Saved again")))
            .ok_or_else(|| format!("{:?}", events(&seen)))
    });
    let read = |path: std::path::PathBuf| -> Value {
        serde_json::from_slice(&std::fs::read(&path).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let session = read(inside_state.join("stt/chat-session.json"));
    assert!(session.to_string().contains("said while the disk was full"), "{session}");
    assert_eq!(read(inside_state.join("stt/timers.json"))["timers"][0]["label"], "bread");
    let audit = std::fs::read_dir(inside.join("stt/audit")).unwrap().next().unwrap().unwrap();
    let lines = std::fs::read_to_string(audit.path()).unwrap();
    let records: Vec<Value> = lines.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(records.iter().any(|r| r["tool"] == "set_timer"), "{lines}");
    expect_within("memory writes again", DEADLINE, || {
        events(&seen)
            .into_iter()
            .skip(before)
            .find(|e| matches!(e, AssistantEvent::ChatMessage(m) if m.role == ChatRole::Note && m.text.starts_with("Memory writes again")))
            .ok_or_else(|| format!("{:?}", events(&seen)))
    });
    // Both chat turns, and the command's question, its tool call and result, and answer.
    stats_until(&sandbox, "the turns that waited are kept", DEADLINE, |s| count(s, "lines") == 8);
    let found = memory(&sandbox, &["search", "disk was full"]);
    assert!(found.to_string().contains("said while the disk was full"), "{found}");
    let before = events(&seen).len();
    assert_eq!(ctl(&sandbox, &["chat-send", "third"]).code, Some(0));
    chat_answer(&seen, before, &assistant);
    stats_until(&sandbox, "the next turn kept", DEADLINE, |s| count(s, "lines") == 10);
    // SQLite opens no path under /proc/PID/root: a copy of the files, taken while nothing
    // is being written, is checked.
    let copy = sandbox.root().join("copy");
    std::fs::create_dir(&copy).unwrap();
    for file in ["memory.sqlite", "memory.sqlite-wal"] {
        let from = inside.join("stt").join(file);
        if from.exists() {
            std::fs::copy(from, copy.join(file)).unwrap();
        }
    }
    let db = rusqlite::Connection::open(copy.join("memory.sqlite")).unwrap();
    let check: String = db.query_row("PRAGMA integrity_check", [], |row| row.get(0)).unwrap();
    assert_eq!(check, "ok");
}

/// The memory tree end to end with a small tree (`tree_raw_max = 6`, `tree_compress = 4`):
/// 40 typed chat turns build level-0 nodes and merged level-1 ones, `stt-ctl memory tree`
/// shows them down to the messages, and after a restart the tree, the buffer and what the
/// next turn is sent are as they were.
#[test]
fn forty_chat_turns_build_the_memory_tree_and_a_restart_keeps_it_exactly() {
    let sandbox = Sandbox::new();
    let llm = scripted_model(&sandbox, "[memory]\ntree_raw_max = 6\ntree_compress = 4\n");
    let summaries = std::sync::atomic::AtomicUsize::new(0);
    llm.respond_with(move |request| {
        let messages = request["messages"].as_array().unwrap();
        let last = messages.last().unwrap()["content"].as_str().unwrap_or_default();
        if last.starts_with("[Memory upkeep") {
            let n = summaries.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            return Script::Text(format!("SUMMARY: Summary {n} of the facts.\nGOALS: Learn."));
        }
        let fact = last.rsplit("fact ").next().unwrap_or_default().trim_end_matches('.');
        Script::Text(format!("Answer {fact}."))
    });
    let mut assistant = sandbox.spawn("stt-assistant", &[]);
    let seen = watch_attached(&sandbox, DEADLINE);
    for n in 1..=40 {
        let before = events(&seen).len();
        assert_eq!(ctl(&sandbox, &["chat-send", &format!("Remember fact {n}.")]).code, Some(0));
        assert_eq!(chat_answer(&seen, before, &assistant), format!("Answer {n}."));
    }
    // 80 messages: 19 compressions of 4 leave 4 in the buffer; 3 merges of 4 of them.
    let tree = expect_within("the tree settles", DEADLINE, || {
        let tree = memory(&sandbox, &["tree"]);
        let text = tree["text"].as_str().unwrap();
        if text.starts_with(
            "The memory tree: 80 messages, 4 of them in the buffer; nodes per level: 19, 3.",
        ) {
            Ok(tree)
        } else {
            Err(text.to_owned())
        }
    });
    let entries = tree["entries"].as_array().unwrap().clone();
    let levels: Vec<&str> = entries.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(levels, [vec!["level 1"; 3], vec!["level 0"; 7]].concat(), "{tree}");
    let merged = memory(&sandbox, &["tree", &entries[0]["id"].to_string()]);
    let text = merged["text"].as_str().unwrap();
    assert_eq!(text.matches("\n- node ").count(), 4, "{text}");
    assert!(text.contains("Goals: Learn."), "{text}");
    let child = &merged["entries"][1]["id"];
    let leaf = memory(&sandbox, &["tree", &child.to_string()]);
    let leaf = leaf["text"].as_str().unwrap();
    assert!(
        leaf.contains("Messages:\n[1] User: Remember fact 1.\n[2] Assistant: Answer 1."),
        "{leaf}"
    );
    let notes = notes(&seen);
    assert!(notes.iter().any(|n| n.starts_with("context compacted: messages 1–4")), "{notes:?}");

    assert!(assistant.signal_and_wait(Signal::SIGTERM).success());
    let assistant = sandbox.spawn("stt-assistant", &[]);
    reattached(&sandbox, DEADLINE);
    assert_eq!(memory(&sandbox, &["tree"]), tree, "the tree after a restart");
    let before = events(&seen).len();
    assert_eq!(ctl(&sandbox, &["chat-send", "Remember fact 41."]).code, Some(0));
    assert_eq!(chat_answer(&seen, before, &assistant), "Answer 41.");
    let sent = llm
        .requests()
        .into_iter()
        .find(|r| {
            let last = r["messages"].as_array().unwrap().last().unwrap()["content"].clone();
            last.as_str().is_some_and(|t| t.ends_with("Remember fact 41."))
        })
        .unwrap();
    let messages: Vec<String> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    // The summaries in the context, then the buffer as it was, then the turn.
    assert!(messages[1].contains("Summary") && !messages[1].contains("fact 1."), "{messages:?}");
    let tail: Vec<&str> = messages[messages.len() - 5..].iter().map(String::as_str).collect();
    assert_eq!(
        tail[..4],
        ["Typed: Remember fact 39.", "Answer 39.", "Typed: Remember fact 40.", "Answer 40."],
        "{messages:?}"
    );
    assert!(tail[4].ends_with("Remember fact 41."), "{messages:?}");
}

/// The memory tree on the real local model: three chat turns with a small tree, and the
/// fourth message's arrival makes the oldest four into a summary the model writes with the
/// later turns in view. What it wrote is printed (how often it records the final decision is
/// a figure in docs/MEMORY.md, not a gate).
#[test]
fn the_real_model_summarizes_the_oldest_chat_turns_into_the_memory_tree() {
    let sandbox = Sandbox::new();
    let server = Server::start(sandbox.root());
    real_model(&sandbox, &server, "[memory]\ntree_raw_max = 6\ntree_compress = 4\n");
    let assistant = sandbox.spawn("stt-assistant", &[]);
    let seen = watch_attached(&sandbox, DEADLINE);
    for said in [
        "We will take the train to Porto on Friday.",
        "My sister Ana lives in Porto.",
        "Change of plan: we drive to Porto instead of taking the train.",
    ] {
        let before = events(&seen).len();
        assert_eq!(ctl(&sandbox, &["chat-send", said]).code, Some(0));
        eprintln!("{said} → {:?}", chat_answer(&seen, before, &assistant));
    }
    let note = expect_within("the summary is written", MODEL_DEADLINE, || {
        notes(&seen)
            .into_iter()
            .find(|n| n.contains("messages 1–4"))
            .ok_or_else(|| format!("{:?}", notes(&seen)))
    });
    let tree = memory(&sandbox, &["tree"]);
    eprintln!("{note}\n{}", tree["text"]);
    let nodes = tree["entries"].as_array().unwrap();
    assert_eq!(nodes.len(), 1, "{tree}");
    assert!(!nodes[0]["text"].as_str().unwrap().trim().is_empty(), "{tree}");
    // Either way the stretch left the context and is kept word for word.
    let node = memory(&sandbox, &["tree", &nodes[0]["id"].to_string()]);
    let text = node["text"].as_str().unwrap();
    assert!(text.contains("[1] User: We will take the train to Porto on Friday."), "{text}");
    assert!(
        note.starts_with("context compacted: messages 1–4") || note.starts_with("context trimmed"),
        "{note}"
    );
}

/// The memory tree's summaries give way to chat: a turn sent while three summaries are due (a
/// new conversation closed twelve messages) stops the one running, which is written again
/// after the turn, then the other two.
#[test]
fn a_chat_turn_stops_a_tree_summary_which_is_written_after_it() {
    let sandbox = Sandbox::new();
    let llm = scripted_model(&sandbox, "[memory]\ntree_raw_max = 20\ntree_compress = 4\n");
    // The first summary is answered only once the next turn has been sent (by then nobody
    // waits for it: the turn stopped it).
    let queued = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let waits = std::sync::Arc::clone(&queued);
    llm.respond_with(move |request| {
        let last = request["messages"].as_array().unwrap().last().unwrap()["content"].clone();
        if last.as_str().unwrap_or_default().starts_with("[Memory upkeep") {
            let deadline = std::time::Instant::now() + DEADLINE;
            while !waits.load(std::sync::atomic::Ordering::SeqCst) {
                assert!(std::time::Instant::now() < deadline, "the turn never came");
                std::thread::sleep(Duration::from_millis(5));
            }
            Script::Text("SUMMARY: Some small talk.".into())
        } else {
            Script::Text("Fine.".into())
        }
    });
    let assistant = sandbox.spawn("stt-assistant", &[]);
    let seen = watch_attached(&sandbox, DEADLINE);
    for n in 1..=6 {
        let before = events(&seen).len();
        assert_eq!(ctl(&sandbox, &["chat-send", &format!("small talk {n}")]).code, Some(0));
        chat_answer(&seen, before, &assistant);
    }
    let sent_before = llm.requests().len();
    assert_eq!(ctl(&sandbox, &["chat-command", "/new"]).code, Some(0));
    let before = events(&seen).len();
    assert_eq!(ctl(&sandbox, &["chat-send", "a new topic"]).code, Some(0));
    queued.store(true, std::sync::atomic::Ordering::SeqCst);
    chat_answer(&seen, before, &assistant);
    expect_within("the tree settles", DEADLINE, || {
        let text = memory(&sandbox, &["tree"])["text"].as_str().unwrap().to_owned();
        if text.contains("nodes per level: 3.") { Ok(()) } else { Err(text) }
    });
    let kinds: Vec<&str> = llm.requests()[sent_before..]
        .iter()
        .map(|r| {
            let last = r["messages"].as_array().unwrap().last().unwrap()["content"].clone();
            if last.as_str().unwrap_or_default().starts_with("[Memory upkeep") {
                "summary"
            } else {
                "chat"
            }
        })
        .collect();
    // The summary the turn stopped may have sent its request already, or not yet.
    let after = kinds.strip_prefix(&["summary"][..]).unwrap_or(&kinds);
    assert_eq!(after, ["chat", "summary", "summary", "summary"], "{kinds:?}");
}
