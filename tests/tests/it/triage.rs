//! Triage through the real binaries: espeak-ng speaks a sentence of each category, the daemon
//! transcribes it at real time, the assistant settles each into a turn, and its triage lane
//! (MiniLM and the trained head) puts that category on top; a sentence whose confidence
//! reaches the threshold gets content from the scripted model, and `stt-tui --dump` shows it
//! all. Off by default: without `[triage]`, no triage event.

use std::path::Path;

use stt_proto::{AssistantEvent, Triage, TriageStage};
use stt_testkit::llm_server::Script;
use stt_testkit::speech::{Format, Line, Part, Speech, TRIAGE_LINES};
use stt_testkit::viewer::{events, reattached, scripted_model, watch, watch_attached};
use stt_testkit::{DEADLINE, Sandbox, expect_within};

fn speech() -> Speech {
    Speech::new(Path::new(env!("CARGO_TARGET_TMPDIR")).join("speech"))
}

fn triages(seen: &stt_testkit::viewer::Seen) -> Vec<Triage> {
    events(seen)
        .into_iter()
        .filter_map(|e| match e {
            AssistantEvent::Triage(t) => Some(t),
            _ => None,
        })
        .collect()
}

/// The sentences, 2 s apart: a turn each.
fn clip() -> String {
    let mut parts = vec![Part::Silence(0.6)];
    for (_, text) in TRIAGE_LINES {
        parts.push(Part::Say(Line { text, voice: "en-us" }));
        parts.push(Part::Silence(2.0));
    }
    speech().clip(&parts, Format::wav(16_000, 1)).to_string_lossy().into_owned()
}

const CONTENT: &str = r#"{"tasks": [{"what": "renew the car insurance", "who": null, "when": "the end of the month"}], "dates": ["the end of the month"], "people": [], "decision": null}"#;

#[test]
fn each_category_spoken_leads_its_window_and_a_sure_one_gets_content() {
    let _turn = crate::one_at_a_time();
    let sandbox = Sandbox::new();
    let llm = scripted_model(&sandbox, "[triage]\nenabled = true\n");
    llm.respond_with(|request| {
        let system = request["messages"][0]["content"].as_str().unwrap_or_default();
        if system.contains("write down what it holds") {
            Script::Text(CONTENT.into())
        } else {
            Script::Text("Okay.".into())
        }
    });
    let assistant = sandbox.spawn_with_env("stt-assistant", &[], &[("STT_LOG", "debug")]);
    let seen = watch_attached(&sandbox, DEADLINE);
    let (_dump, dumped) = sandbox.spawn_with_stdout("stt-tui", &["--dump", "0"]);
    expect_within("the classifier trained", DEADLINE, || {
        let log = assistant.log();
        if log.contains("triage: the classifier is trained") { Ok(()) } else { Err(log) }
    });
    let clip = clip();
    let daemon =
        sandbox.spawn("stt-daemon", &["--input", &clip, "--stay", "--wait-for-subscriber"]);

    let signals = expect_within("a window's signals for every sentence", DEADLINE, || {
        let signals: Vec<Triage> =
            triages(&seen).into_iter().filter(|t| t.stage == TriageStage::Signals).collect();
        if signals.len() >= TRIAGE_LINES.len() {
            Ok(signals)
        } else {
            Err(format!("{signals:?}\n{}\n{}", daemon.log(), assistant.log()))
        }
    });
    let transcripts: Vec<String> = events(&seen)
        .into_iter()
        .filter_map(|e| match e {
            AssistantEvent::Transcript(t) => Some(t.text),
            _ => None,
        })
        .collect();
    for ((category, said), window) in TRIAGE_LINES.iter().zip(&signals) {
        let top = window
            .signals
            .iter()
            .max_by(|a, b| a.confidence.total_cmp(&b.confidence))
            .map(|s| s.category.as_str());
        assert_eq!(top, Some(*category), "{said:?} (heard: {transcripts:?}): {:?}", window.signals);
    }

    // The surest sentences escalate; the model's answer arrives as their content stage.
    let content = expect_within("content from the model", DEADLINE, || {
        triages(&seen)
            .into_iter()
            .find(|t| t.stage == TriageStage::Content)
            .ok_or_else(|| assistant.log())
    });
    let found = content.content.as_ref().unwrap_or_else(|| panic!("{content:?}"));
    assert_eq!(found.tasks[0].what, "renew the car insurance");
    assert!(signals.iter().any(|s| s.id == content.id && s.signals == content.signals));
    let asked = llm.requests().into_iter().find(|r| {
        r["messages"][0]["content"].as_str().is_some_and(|s| s.contains("write down what it holds"))
    });
    // The model read the window: the transcripts, oldest first, numbered.
    let asked = asked.expect("an extraction request")["messages"][1]["content"].clone();
    let asked = asked.as_str().unwrap();
    let listed: Vec<&str> = asked
        .lines()
        .filter_map(|l| l.split_once(". ").filter(|(n, _)| n.parse::<u32>().is_ok()))
        .map(|(_, text)| text)
        .collect();
    assert!(!listed.is_empty() && listed.len() <= 6, "{asked}");
    assert_eq!(listed, transcripts[..listed.len()], "{asked}");

    // `stt-tui --dump` shows them like any other event.
    expect_within("the dump shows triage", DEADLINE, || {
        let dump = std::fs::read_to_string(&dumped).unwrap_or_default();
        if dump.contains(r#""type":"triage""#) && dump.contains(r#""stage":"content""#) {
            Ok(())
        } else {
            Err(dump)
        }
    });
}

#[test]
fn triage_is_off_by_default() {
    let _turn = crate::one_at_a_time();
    let sandbox = Sandbox::new();
    let _llm = scripted_model(&sandbox, "");
    let assistant = sandbox.spawn_with_env("stt-assistant", &[], &[("STT_LOG", "debug")]);
    let seen = watch_attached(&sandbox, DEADLINE);
    let clip = speech().clip(
        &[
            Part::Silence(0.6),
            Part::Say(Line { text: TRIAGE_LINES[5].1, voice: "en-us" }),
            Part::Silence(1.0),
        ],
        Format::wav(16_000, 1),
    );
    let clip = clip.to_string_lossy().into_owned();
    let _daemon = sandbox
        .spawn("stt-daemon", &["--input", &clip, "--fast", "--stay", "--wait-for-subscriber"]);
    expect_within("the turn settles", DEADLINE, || {
        let ended = events(&seen).iter().any(|e| matches!(e, AssistantEvent::TurnEnded(_)));
        if ended { Ok(()) } else { Err(assistant.log()) }
    });
    assert!(triages(&seen).is_empty());
    assert!(!assistant.log().contains("triage"), "{}", assistant.log());
}

/// A sure sentence spoken through the real daemon, extracted by the real local model
/// (llama-server with the installed default model, found by itself): the content stage
/// arrives with what was said in it.
#[test]
fn a_sure_sentence_gets_content_from_the_real_local_model() {
    use stt_testkit::llama::Server;
    let _turn = crate::one_at_a_time();
    let sandbox = Sandbox::new();
    let server = Server::start(sandbox.root());
    crate::real_model::autodetect_with(&sandbox, &server, "[triage]\nenabled = true\n");
    let assistant = sandbox.spawn_with_env("stt-assistant", &[], &[("STT_LOG", "debug")]);
    let seen = watch_attached(&sandbox, DEADLINE);
    let said = "I need to renew my car insurance before the end of the month.";
    let clip = speech().clip(
        &[Part::Silence(0.6), Part::Say(Line { text: said, voice: "en-us" }), Part::Silence(1.0)],
        Format::wav(16_000, 1),
    );
    let clip = clip.to_string_lossy().into_owned();
    let _daemon = sandbox
        .spawn("stt-daemon", &["--input", &clip, "--fast", "--stay", "--wait-for-subscriber"]);
    let content =
        expect_within("content from the real model", crate::real_model::MODEL_DEADLINE, || {
            triages(&seen)
                .into_iter()
                .find(|t| t.stage == TriageStage::Content)
                .ok_or_else(|| format!("{:?}\n{}", triages(&seen), assistant.log()))
        });
    eprintln!("the real model extracted: {content:?}");
    let found =
        content.content.unwrap_or_else(|| panic!("{:?}\n{}", content.error, assistant.log()));
    let text = serde_json::to_string(&found).unwrap().to_lowercase();
    assert!(text.contains("insurance") || text.contains("month"), "{text}");
}

/// The viewer's panel across a restart of the assistant: windows heard by a first run, then
/// by a second, each run's events folded into one TUI state as the TUI folds them. The
/// second run's window must take the panel: its id is above every id the first run gave
/// (one allocator, seeded from the clock), where ids counted from 1 again would be at or
/// below the one shown, and the panel would keep the old window.
#[test]
fn after_the_assistant_restarts_the_triage_panel_shows_its_new_windows() {
    use stt_tui::action::Action;
    use stt_tui::state::{Options, State};
    use stt_tui::update::update;

    let _turn = crate::one_at_a_time();
    let sandbox = Sandbox::new();
    let llm = scripted_model(&sandbox, "[triage]\nenabled = true\n");
    llm.respond_with(|_| Script::Text("{}".into()));
    let socket = sandbox.assistant_socket().to_string_lossy().into_owned();
    let mut panel = State::new(socket, Options::default());
    let mut shown = Vec::new();
    // One viewer for both runs, as the TUI is: it connects to each assistant by itself (a
    // new viewer per run would make two on the second, as the old one comes back too).
    let seen = watch(sandbox.assistant_socket());
    for lines in [&TRIAGE_LINES[..2], &TRIAGE_LINES[2..3]] {
        let mut assistant = sandbox.spawn("stt-assistant", &[]);
        reattached(&sandbox, DEADLINE);
        // Only this run's events: the first run's are folded into the panel already.
        let before = events(&seen).len();
        expect_within("the classifier trained", DEADLINE, || {
            let log = assistant.log();
            if log.contains("triage: the classifier is trained") { Ok(()) } else { Err(log) }
        });
        let mut parts = vec![Part::Silence(0.6)];
        for (_, text) in lines {
            parts.extend([Part::Say(Line { text, voice: "en-us" }), Part::Silence(2.0)]);
        }
        let clip = speech().clip(&parts, Format::wav(16_000, 1));
        let clip = clip.to_string_lossy();
        let mut daemon = sandbox.spawn("stt-daemon", &["--input", &clip, "--wait-for-subscriber"]);
        // At least one window: on a busy machine two sentences may settle as one turn. The
        // events are read once, so the panel and the ids come from the same moment.
        let (windows, seen_now) = expect_within("a window's signals", DEADLINE, || {
            let now = events(&seen).split_off(before);
            let ids: Vec<u64> = now
                .iter()
                .filter_map(|e| match e {
                    AssistantEvent::Triage(t) if t.stage == TriageStage::Signals => Some(t.id),
                    _ => None,
                })
                .collect();
            if ids.is_empty() { Err(assistant.log()) } else { Ok((ids, now)) }
        });
        for event in seen_now {
            update(&mut panel, Action::Event(event));
        }
        shown.push((windows.clone(), panel.triage.as_ref().map(|t| t.id)));
        let last = windows.iter().max().copied();
        assert_eq!(panel.triage.as_ref().map(|t| t.id), last, "the panel, run by run: {shown:?}");
        daemon.signal_and_wait(nix::sys::signal::Signal::SIGTERM);
        assistant.signal_and_wait(nix::sys::signal::Signal::SIGTERM);
        update(&mut panel, Action::LinkDown("the assistant stopped".into()));
    }
    let (first, second) = (&shown[0].0, &shown[1].0);
    assert!(second.iter().min() > first.iter().max(), "ids across the restart: {shown:?}");
}
