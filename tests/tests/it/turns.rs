//! Settled turns through the real binaries: the daemon reads espeak-ng speech at real time,
//! the assistant gathers its segments into turns (`turn_ended`), and chat sends the model one
//! message per turn.

use std::path::Path;

use stt_proto::{AssistantEvent, TurnEnded};
use stt_testkit::llm_server::Script;
use stt_testkit::speech::{Format, Line, Part, Speech};
use stt_testkit::viewer::{events, scripted_model, user_messages, watch_attached};
use stt_testkit::{DEADLINE, Sandbox, expect_within};

fn speech() -> Speech {
    Speech::new(Path::new(env!("CARGO_TARGET_TMPDIR")).join("speech"))
}

fn line(text: &'static str) -> Part {
    Part::Say(Line { text, voice: "en-us" })
}

fn turns(seen: &stt_testkit::viewer::Seen) -> Vec<TurnEnded> {
    events(seen)
        .into_iter()
        .filter_map(|e| match e {
            AssistantEvent::TurnEnded(t) => Some(t),
            _ => None,
        })
        .collect()
}

/// Two sentences 400 ms apart are one turn, though the daemon cuts them into two segments
/// (its hangover here is 300 ms, so that it does); 1.5 s later a third is a turn of its own.
/// In chat mode the model gets one message for each.
#[test]
fn a_short_pause_is_one_turn_and_a_long_one_makes_two() {
    let _turn = crate::one_at_a_time();
    let sandbox = Sandbox::new();
    let llm = scripted_model(
        &sandbox,
        "[daemon]\nend_of_turn = \"hangover\"\nvad_hangover_ms = 300\n[assistant]\nsettle_ms = 600\n",
    );
    llm.respond_with(|_| Script::Text("Noted.".into()));
    let assistant = sandbox.spawn_with_env("stt-assistant", &[], &[("STT_LOG", "debug")]);
    let seen = watch_attached(&sandbox, DEADLINE);
    assert_eq!(sandbox.run("stt-ctl", &["chat-toggle"]).code, Some(0));
    let clip = speech().clip(
        &[
            Part::Silence(0.6),
            line("Remind me to call Anna."),
            Part::Silence(0.4),
            line("Make it after lunch tomorrow."),
            Part::Silence(1.5),
            line("What is the weather like?"),
            Part::Silence(1.5),
        ],
        Format::wav(16_000, 1),
    );
    let clip = clip.to_string_lossy().into_owned();
    // At real time: live, the wall clock decides when a turn has settled.
    let daemon =
        sandbox.spawn("stt-daemon", &["--input", &clip, "--stay", "--wait-for-subscriber"]);

    let turns = expect_within("two turns", DEADLINE, || {
        let turns = turns(&seen);
        if turns.len() >= 2 {
            Ok(turns)
        } else {
            Err(format!("{turns:?}\n{}\n{}", daemon.log(), assistant.log()))
        }
    });
    let text = |t: &TurnEnded| t.text.to_lowercase();
    assert_eq!(turns.len(), 2, "{turns:?}");
    assert_eq!(turns[0].seg_ids.len(), 2, "the daemon cut the first turn in two: {turns:?}");
    assert!(text(&turns[0]).contains("call") && text(&turns[0]).contains("lunch"), "{turns:?}");
    assert!(text(&turns[1]).contains("weather") && !text(&turns[1]).contains("lunch"));

    // One chat message from the person, and one request to the model, per turn.
    let asked = expect_within("both turns answered", DEADLINE, || {
        let asked = user_messages(&seen);
        if asked.len() >= 2 && llm.requests().len() >= 2 { Ok(asked) } else { Err(asked.join("|")) }
    });
    assert_eq!(asked, [turns[0].text.clone(), turns[1].text.clone()]);
    assert_eq!(llm.requests().len(), 2, "{:?}", llm.requests());
}
