//! A spoken turn without a key (`[wake]`), through the real daemon (openWakeWord's "hey
//! jarvis" head on real audio, whisper) and the real assistant, with the scripted model: the
//! name and a question said in one breath arm a command, it runs when the turn ends with no
//! key pressed, the name is not part of what the model is asked, and after the answer the
//! assistant listens a while for the next command without the name, then stops.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use stt_proto::{AssistantEvent, Mode};
use stt_testkit::llm_server::Script;
use stt_testkit::viewer::{answered, events, scripted_model, speak, watch_attached};
use stt_testkit::{DEADLINE, expect_within};

#[test]
fn the_name_and_a_question_in_one_breath_run_without_a_key_then_it_listens_a_while() {
    let head = stt_testkit::models_dir().join("wake/hey_jarvis.onnx");
    if !head.is_file() {
        assert!(
            std::env::var_os("STT_TEST_STRICT").is_none(),
            "no wake head: run scripts/fetch-wake --head hey_jarvis"
        );
        return;
    }
    let _turn = crate::one_at_a_time();
    let sandbox = stt_testkit::Sandbox::new();
    let llm = scripted_model(
        &sandbox,
        "[wake]\nenabled = true\nphrase = \"hey_jarvis\"\nfollow_up_s = 2.0\n",
    );
    llm.push(Script::Text("The library opens at nine.".into()));
    let _assistant = sandbox.spawn("stt-assistant", &[]);
    let seen = watch_attached(&sandbox, DEADLINE);
    let wav = speak(sandbox.root(), "asked", "hey jarvis, what time does the library open?");
    let wav = wav.to_string_lossy().into_owned();
    // At real time, as a room is heard; played once the assistant follows the daemon.
    let _daemon =
        sandbox.spawn("stt-daemon", &["--input", &wav, "--stay", "--wait-for-subscriber"]);

    let seen_then = answered(&seen, "The library opens at nine.", DEADLINE);
    let requests = llm.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    let asked = requests[0]["messages"].to_string().to_lowercase();
    assert!(asked.contains("library open"), "{asked}");
    assert!(!asked.contains("jarvis"), "the name went to the model: {asked}");
    // No key: armed by the name, run by the end of the turn.
    let modes: Vec<Mode> = seen_then
        .iter()
        .filter_map(|e| match e {
            AssistantEvent::Mode { mode } => Some(*mode),
            _ => None,
        })
        .collect();
    assert_eq!(modes[..2], [Mode::CommandArmed, Mode::Executing], "{seen_then:?}");

    // After the answer, listening for a follow-up without the name; then idle again.
    expect_within("listening after the answer, then idle", DEADLINE, || {
        let modes: Vec<Mode> = events(&seen)
            .iter()
            .filter_map(|e| match e {
                AssistantEvent::Mode { mode } => Some(*mode),
                _ => None,
            })
            .collect();
        let want = [Mode::CommandArmed, Mode::Executing, Mode::CommandArmed, Mode::Idle];
        if modes.ends_with(&want) { Ok(()) } else { Err(format!("{modes:?}")) }
    });
}
