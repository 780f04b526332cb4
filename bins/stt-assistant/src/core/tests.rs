//! The core's rules, as tables and short scripts of events and requests.

use stt_proto::{
    AudioState, ErrorCode, Request, SegmentDone, Speaker, SpeakerState, SpeechStart, SpeechStop,
};

use super::*;

const OUT: Outside = Outside {
    viewers: 0,
    llm_enabled: true,
    queue_has_room: true,
    model_loading: false,
    here: false,
};

fn beat(healthy: bool) -> DaemonEvent {
    DaemonEvent::Heartbeat(DaemonHeartbeat {
        seq: 1,
        uptime_s: 1.0,
        backlog: 2,
        stt_healthy: healthy,
        audio: AudioState::Capturing,
        model: "m".into(),
        remote: None,
        wake: None,
    })
}

fn transcript(seg_id: u64, text: &str) -> DaemonEvent {
    DaemonEvent::Transcript(Transcript {
        seg_id,
        text: text.into(),
        language: "en".into(),
        start: 0.0,
        end: 1.0,
        duration: 1.0,
        speaker_id: None,
        speaker_status: SpeakerStatus::None,
        speaker: None,
        speaker_score: None,
    })
}

/// A core connected to a healthy daemon.
fn ready() -> (Core, Instant) {
    let now = Instant::now();
    let mut core = Core::new(false, Duration::from_secs(3));
    core.daemon_link(true);
    core.daemon_event(beat(true), now);
    (core, now)
}

/// One utterance, spoken and transcribed.
fn say(core: &mut Core, now: Instant, seg_id: u64, text: &str) -> Vec<Effect> {
    let mut effects =
        core.daemon_event(DaemonEvent::SpeechStart(SpeechStart { seg_id, start: 0.0 }), now);
    effects
        .extend(core.daemon_event(DaemonEvent::SpeechStop(SpeechStop { seg_id, end: 1.0 }), now));
    effects.extend(core.daemon_event(transcript(seg_id, text), now));
    effects.extend(core.daemon_event(DaemonEvent::SegmentDone(SegmentDone { seg_id }), now));
    effects
}

#[track_caller]
fn check(
    core: &mut Core,
    now: Instant,
    request: Request,
    outside: Outside,
    code: Option<ErrorCode>,
    needle: &str,
) -> Vec<Effect> {
    let (reply, effects) = core.request(&request, now, outside);
    match (reply, code) {
        (AssistantEvent::Ack(ack), None) => assert_eq!(ack.command, request.kind()),
        (AssistantEvent::Error(e), Some(code)) => {
            assert_eq!(e.code, code, "{}", e.message);
            assert!(e.message.contains(needle), "{:?} lacks {needle:?}", e.message);
            assert!(effects.is_empty(), "a refused request changes nothing: {effects:?}");
        }
        (other, _) => panic!("{request:?}: unexpected reply {other:?}"),
    }
    effects
}

#[test]
fn the_two_press_flow_fills_the_buffer_and_executes_it() {
    let (mut core, now) = ready();
    let effects = check(&mut core, now, Request::CommandStart, OUT, None, "");
    assert!(effects.contains(&Effect::Publish(AssistantEvent::Mode { mode: Mode::CommandArmed })));
    say(&mut core, now, 1, "what time");
    let effects = say(&mut core, now, 2, " is it ");
    assert!(effects.contains(&Effect::Publish(AssistantEvent::CommandText {
        text: "what time is it".into(),
        edited: false
    })));
    let effects = check(&mut core, now, Request::CommandExecute { wait_ms: None }, OUT, None, "");
    assert_eq!(core.mode(), Mode::Executing);
    assert!(effects.contains(&Effect::Execute {
        text: "what time is it".into(),
        edited: false,
        segs: vec![1, 2]
    }));
    // Transcripts while executing do not touch the command.
    say(&mut core, now, 3, "never mind");
    core.execution_finished(Instant::now());
    assert_eq!(core.mode(), Mode::Idle);
    assert_eq!(core.buffer(), ("", false));
}

fn partial(seg_id: u64, text: &str, committed_len: usize) -> DaemonEvent {
    DaemonEvent::TranscriptPartial(TranscriptPartial { seg_id, text: text.into(), committed_len })
}

fn command_texts(effects: &[Effect]) -> Vec<&str> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Publish(AssistantEvent::CommandText { text, .. }) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn an_armed_command_grows_with_the_words_being_spoken_and_keeps_only_finals() {
    let (mut core, now) = ready();
    check(&mut core, now, Request::CommandStart, OUT, None, "");
    say(&mut core, now, 1, "what time");
    // Relayed as they come, and shown after the command's words.
    let effects = core.daemon_event(partial(2, "is", 0), now);
    assert_eq!(
        effects[0],
        Effect::Publish(AssistantEvent::TranscriptPartial(TranscriptPartial {
            seg_id: 2,
            text: "is".into(),
            committed_len: 0
        }))
    );
    assert_eq!(command_texts(&effects), ["what time is"]);
    let effects = core.daemon_event(partial(2, "is it in", 5), now);
    assert_eq!(command_texts(&effects), ["what time is it in"]);
    assert_eq!(core.buffer(), ("what time", false), "the buffer waits for the final");
    // The final replaces the partial words.
    let effects = core.daemon_event(transcript(2, "is it"), now);
    assert_eq!(command_texts(&effects), ["what time is it"]);
    let effects = core.daemon_event(DaemonEvent::SegmentDone(SegmentDone { seg_id: 2 }), now);
    assert!(command_texts(&effects).is_empty(), "{effects:?}");
    // A segment whose final heard nothing real: its partial words go when it is done.
    core.daemon_event(partial(3, "uh", 0), now);
    let effects = core.daemon_event(DaemonEvent::SegmentDone(SegmentDone { seg_id: 3 }), now);
    assert_eq!(command_texts(&effects), ["what time is it"]);
    // Not armed: relayed only.
    check(&mut core, now, Request::CommandCancel, OUT, None, "");
    let effects = core.daemon_event(partial(4, "hello", 0), now);
    assert_eq!(effects.len(), 1, "{effects:?}");
    assert!(command_texts(&effects).is_empty());
}

#[test]
fn cancel_while_executing_stops_the_command_and_idles_once_it_has_stopped() {
    let (mut core, now) = ready();
    check(&mut core, now, Request::CommandStart, OUT, None, "");
    say(&mut core, now, 1, "delete my files");
    check(&mut core, now, Request::CommandExecute { wait_ms: None }, OUT, None, "");
    let effects = check(&mut core, now, Request::CommandCancel, OUT, None, "");
    assert_eq!(effects, [Effect::CancelCommand]);
    assert_eq!(core.mode(), Mode::Executing, "running until the job says it stopped");
    let effects = core.execution_finished(Instant::now());
    assert_eq!(effects, [Effect::Publish(AssistantEvent::Mode { mode: Mode::Idle })]);
    check(
        &mut core,
        now,
        Request::CommandCancel,
        OUT,
        Some(ErrorCode::WrongMode),
        "no command armed or running",
    );
}

#[test]
fn confirm_and_deny_answer_the_call_waiting_and_only_it() {
    let (mut core, now) = ready();
    let confirm = |id: Option<&str>| Request::Confirm { call_id: id.map(str::to_owned) };
    let deny = |id: Option<&str>| Request::Deny { call_id: id.map(str::to_owned) };
    let none = ErrorCode::NothingPending;
    check(&mut core, now, confirm(None), OUT, Some(none), "no tool call is waiting");

    core.confirmation_requested("call_1");
    check(&mut core, now, deny(Some("call_9")), OUT, Some(none), "no tool call 'call_9'");
    let effects = check(&mut core, now, confirm(None), OUT, None, "");
    assert_eq!(effects, [Effect::Answer { call_id: "call_1".into(), allow: true }]);
    check(&mut core, now, confirm(None), OUT, Some(none), "no tool call is waiting");

    core.confirmation_requested("call_2");
    core.confirmation_requested("call_3");
    let two = ErrorCode::BadMessage;
    check(&mut core, now, deny(None), OUT, Some(two), "2 tool calls are waiting");
    let effects = check(&mut core, now, deny(Some("call_3")), OUT, None, "");
    assert_eq!(effects, [Effect::Answer { call_id: "call_3".into(), allow: false }]);
    assert_eq!(core.awaiting(), ["call_2"]);
    // A call that timed out waits no more.
    core.confirmation_over("call_2");
    check(&mut core, now, confirm(Some("call_2")), OUT, Some(none), "'call_2'");
    // Nor do the calls of a command that ended.
    core.confirmation_requested("call_4");
    core.execution_finished(Instant::now());
    assert!(core.awaiting().is_empty());
}

#[test]
fn an_edit_freezes_the_buffer() {
    let (mut core, now) = ready();
    check(&mut core, now, Request::CommandStart, OUT, None, "");
    say(&mut core, now, 1, "what dime is it");
    check(&mut core, now, Request::CommandEdit { text: "what time is it".into() }, OUT, None, "");
    say(&mut core, now, 2, "ignored");
    assert_eq!(core.buffer(), ("what time is it", true));
    let effects = check(&mut core, now, Request::CommandExecute { wait_ms: None }, OUT, None, "");
    assert!(effects.contains(&Effect::Execute {
        text: "what time is it".into(),
        edited: true,
        segs: vec![1]
    }));
}

#[test]
fn execute_waits_for_readiness_and_says_which_condition_failed() {
    let (mut core, now) = ready();
    check(&mut core, now, Request::CommandStart, OUT, None, "");
    say(&mut core, now, 1, "open the door");

    core.daemon_event(DaemonEvent::SpeechStart(SpeechStart { seg_id: 2, start: 5.0 }), now);
    check(
        &mut core,
        now,
        Request::CommandExecute { wait_ms: None },
        OUT,
        Some(ErrorCode::NotReady),
        "speech is still open (segment 2)",
    );
    core.daemon_event(DaemonEvent::SpeechStop(SpeechStop { seg_id: 2, end: 6.0 }), now);
    check(
        &mut core,
        now,
        Request::CommandExecute { wait_ms: None },
        OUT,
        Some(ErrorCode::NotReady),
        "segment 2 is still being transcribed",
    );
    core.daemon_event(DaemonEvent::SegmentDone(SegmentDone { seg_id: 2 }), now);

    let later = now + Duration::from_secs(4);
    check(
        &mut core,
        later,
        Request::CommandExecute { wait_ms: None },
        OUT,
        Some(ErrorCode::NotReady),
        "no heartbeat from stt-daemon for 4.0 s",
    );
    core.daemon_event(beat(false), later);
    check(
        &mut core,
        later,
        Request::CommandExecute { wait_ms: None },
        OUT,
        Some(ErrorCode::NotReady),
        "not running",
    );
    core.daemon_event(beat(true), later);

    let mut strict = Core::new(true, Duration::from_secs(3));
    strict.daemon_link(true);
    strict.daemon_event(beat(true), now);
    check(&mut strict, now, Request::CommandStart, OUT, None, "");
    say(&mut strict, now, 1, "open the door");
    check(
        &mut strict,
        now,
        Request::CommandExecute { wait_ms: None },
        OUT,
        Some(ErrorCode::NotReady),
        "require_viewer",
    );
    check(
        &mut strict,
        now,
        Request::CommandExecute { wait_ms: None },
        Outside { viewers: 1, ..OUT },
        None,
        "",
    );

    check(
        &mut core,
        later,
        Request::CommandExecute { wait_ms: None },
        Outside { llm_enabled: false, ..OUT },
        Some(ErrorCode::NoExecutor),
        "no executor configured",
    );
    check(
        &mut core,
        later,
        Request::CommandExecute { wait_ms: None },
        Outside { model_loading: true, ..OUT },
        Some(ErrorCode::NotReady),
        "still loading",
    );
    check(
        &mut core,
        later,
        Request::CommandExecute { wait_ms: None },
        Outside { queue_has_room: false, ..OUT },
        Some(ErrorCode::Busy),
        "busy",
    );
    check(&mut core, later, Request::CommandExecute { wait_ms: None }, OUT, None, "");
}

#[test]
fn a_lost_daemon_link_is_not_ready() {
    let (mut core, now) = ready();
    check(&mut core, now, Request::CommandStart, OUT, None, "");
    say(&mut core, now, 1, "lights off");
    core.daemon_link(false);
    check(
        &mut core,
        now,
        Request::CommandExecute { wait_ms: None },
        OUT,
        Some(ErrorCode::NotReady),
        "not connected to stt-daemon",
    );
}

fn turns_ended(effects: &[Effect]) -> Vec<TurnEnded> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Publish(AssistantEvent::TurnEnded(t)) => Some(t.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn chat_sends_one_message_per_settled_turn_and_every_mode_hears_turns_end() {
    let (core, t0) = ready();
    let mut core = core.with_settle(Duration::from_millis(600));
    let at = |ms| t0 + Duration::from_millis(ms);
    // Idle: the turn ends, nothing goes to the model.
    let effects = say(&mut core, at(0), 1, "The oven is still on.");
    assert!(turns_ended(&effects).is_empty(), "not yet settled");
    let effects = core.turn_due(at(600));
    assert_eq!(turns_ended(&effects)[0].text, "The oven is still on.");
    assert!(!effects.iter().any(|e| matches!(e, Effect::ChatTurn(_))));

    check(&mut core, at(700), Request::ChatToggle, OUT, None, "");
    say(&mut core, at(1000), 2, "Remind me to call Ana,");
    assert_eq!(core.turn_deadline(), Some(at(1600)));
    let effects = say(&mut core, at(1400), 3, "after lunch tomorrow.");
    assert!(!effects.iter().any(|e| matches!(e, Effect::ChatTurn(_))), "{effects:?}");
    assert!(core.turn_due(at(1999)).is_empty());
    let effects = core.turn_due(at(2000));
    assert_eq!(turns_ended(&effects)[0].seg_ids, [2, 3]);
    assert!(effects.contains(&Effect::ChatTurn(ChatTurn {
        speaker: crate::turn::Speaker::Unknown,
        words: "Remind me to call Ana, after lunch tomorrow.".into(),
        segs: vec![2, 3]
    })));

    // `clear` forgets what was being said; a lost daemon settles it at once.
    say(&mut core, at(3000), 4, "forget this");
    check(&mut core, at(3100), Request::Clear, OUT, None, "");
    assert!(core.turn_due(at(9000)).is_empty());
    say(&mut core, at(9000), 5, "half a");
    let effects = core.daemon_lost();
    assert_eq!(turns_ended(&effects)[0].text, "half a");
}

#[test]
fn dictation_types_each_final_and_excludes_commands_and_chat() {
    let (mut core, now) = ready();
    let effects = check(&mut core, now, Request::DictateToggle, OUT, None, "");
    assert!(effects.contains(&Effect::Dictation { on: true }), "{effects:?}");
    assert_eq!(core.mode(), Mode::Dictate);
    // Asked again: already on, nothing starts twice.
    let effects = check(&mut core, now, Request::DictateStart, OUT, None, "");
    assert!(effects.is_empty(), "{effects:?}");

    // Partials are shown, never typed; each final is typed, an empty one not.
    let effects = core.daemon_event(partial(1, "buy milk and", 0), now);
    assert!(!effects.iter().any(|e| matches!(e, Effect::Dictate(_))), "{effects:?}");
    let effects = say(&mut core, now, 1, " Buy milk and eggs. ");
    assert!(effects.contains(&Effect::Dictate("Buy milk and eggs.".into())), "{effects:?}");
    let effects = say(&mut core, now, 2, "");
    assert!(!effects.iter().any(|e| matches!(e, Effect::Dictate(_))), "{effects:?}");
    // Nothing goes to the model while dictating.
    let effects = core.turn_due(now + Duration::from_secs(60));
    assert!(!effects.iter().any(|e| matches!(e, Effect::ChatTurn(_))), "{effects:?}");

    for request in
        [Request::CommandStart, Request::ChatToggle, Request::ChatSend { text: "hi".into() }]
    {
        check(&mut core, now, request, OUT, Some(ErrorCode::WrongMode), "dictate-stop");
    }
    let effects = check(&mut core, now, Request::DictateToggle, OUT, None, "");
    assert!(effects.contains(&Effect::Dictation { on: false }), "{effects:?}");
    assert_eq!(core.mode(), Mode::Idle);
    check(&mut core, now, Request::DictateStop, OUT, Some(ErrorCode::WrongMode), "not on");
    let effects = say(&mut core, now, 3, "Not for the window.");
    assert!(!effects.iter().any(|e| matches!(e, Effect::Dictate(_))), "{effects:?}");

    // From chat or a command, dictation waits until they are left.
    check(&mut core, now, Request::ChatToggle, OUT, None, "");
    check(&mut core, now, Request::DictateStart, OUT, Some(ErrorCode::WrongMode), "chat");
    check(&mut core, now, Request::ChatToggle, OUT, None, "");
    check(&mut core, now, Request::CommandStart, OUT, None, "");
    check(&mut core, now, Request::DictateToggle, OUT, Some(ErrorCode::WrongMode), "command");
}

#[test]
fn command_and_chat_exclude_each_other() {
    let (mut core, now) = ready();
    check(&mut core, now, Request::ChatToggle, OUT, None, "");
    assert_eq!(core.mode(), Mode::Chat);
    check(
        &mut core,
        now,
        Request::CommandStart,
        OUT,
        Some(ErrorCode::WrongMode),
        "chat mode is on",
    );
    let effects = say(&mut core, now, 1, "tell me a joke");
    assert!(effects.contains(&Effect::ChatTurn(ChatTurn {
        speaker: crate::turn::Speaker::Unknown,
        words: "tell me a joke".into(),
        segs: vec![1]
    })));
    let effects = check(&mut core, now, Request::ChatToggle, OUT, None, "");
    assert!(effects.contains(&Effect::DropQueuedChat));
    check(&mut core, now, Request::CommandStart, OUT, None, "");
    check(
        &mut core,
        now,
        Request::ChatToggle,
        OUT,
        Some(ErrorCode::WrongMode),
        "cancel or finish it first",
    );
    check(&mut core, now, Request::CommandCancel, OUT, None, "");
    assert_eq!(core.mode(), Mode::Idle);
    check(
        &mut core,
        now,
        Request::CommandExecute { wait_ms: None },
        OUT,
        Some(ErrorCode::WrongMode),
        "arm a command first",
    );
    check(
        &mut core,
        now,
        Request::CommandEdit { text: "x".into() },
        OUT,
        Some(ErrorCode::WrongMode),
        "arm a command first",
    );
}

#[test]
fn an_empty_command_is_refused() {
    let (mut core, now) = ready();
    check(&mut core, now, Request::CommandStart, OUT, None, "");
    check(
        &mut core,
        now,
        Request::CommandExecute { wait_ms: None },
        OUT,
        Some(ErrorCode::BadMessage),
        "the command is empty",
    );
}

#[test]
fn clear_keeps_the_mode() {
    let (mut core, now) = ready();
    check(&mut core, now, Request::ChatToggle, OUT, None, "");
    let effects = check(&mut core, now, Request::Clear, OUT, None, "");
    assert_eq!(effects, vec![Effect::ClearHistory, Effect::Publish(AssistantEvent::Cleared {})]);
    assert_eq!(core.mode(), Mode::Chat);
}

#[test]
fn speakers_are_resolved_named_or_unknown_and_validated() {
    let (mut core, now) = ready();
    let roster = Speakers {
        speakers: vec![Speaker {
            id: "spk_0001".into(),
            name: Some("Efren".into()),
            status: SpeakerState::Confirmed,
            cumulative_s: 10.0,
            sample_path: None,
            created_at: "2026-11-30T09:00:00Z".into(),
        }],
    };
    core.daemon_event(DaemonEvent::Speakers(roster), now);
    let DaemonEvent::Transcript(mut t) = transcript(1, "hi") else { unreachable!() };
    t.speaker_id = Some("spk_0001".into());
    t.speaker_status = SpeakerStatus::Matched;
    assert_eq!(core.speaker_name(&t).as_deref(), Some("Efren"));
    t.speaker_status = SpeakerStatus::Uncertain;
    assert_eq!(core.speaker_name(&t), None);
    t.speaker_id = Some("spk_0002".into());
    t.speaker_status = SpeakerStatus::Matched;
    assert_eq!(core.speaker_name(&t), None);

    check(
        &mut core,
        now,
        Request::SpeakerName { speaker_id: "spk_0009".into(), name: "X".into() },
        OUT,
        Some(ErrorCode::UnknownSpeaker),
        "spk_0009",
    );
    check(
        &mut core,
        now,
        Request::SpeakerName { speaker_id: "spk_0001".into(), name: "  ".into() },
        OUT,
        Some(ErrorCode::BadMessage),
        "empty",
    );
    let effects = check(
        &mut core,
        now,
        Request::SpeakerName { speaker_id: "spk_0001".into(), name: "Ef".into() },
        OUT,
        None,
        "",
    );
    let Some(Effect::Publish(AssistantEvent::Speakers(renamed))) = effects.get(1) else {
        panic!("{effects:?}")
    };
    assert_eq!(renamed.speakers[0].name.as_deref(), Some("Ef"), "viewers get the new name");
    assert_eq!(
        effects[0],
        Effect::NameSpeaker { speaker_id: "spk_0001".into(), name: "Ef".into() }
    );
    t.speaker_id = Some("spk_0001".into());
    assert_eq!(core.speaker_name(&t).as_deref(), Some("Ef"), "transcripts show it at once");

    // The daemon's next roster does not know the name; the given one still wins, and it
    // outlives the process (the assistant saves `names()` and starts `with_names`).
    let mut unnamed = core.roster().clone();
    unnamed.speakers[0].name = None;
    core.daemon_event(DaemonEvent::Speakers(unnamed.clone()), now);
    assert_eq!(core.speaker_name(&t).as_deref(), Some("Ef"));
    let mut next = ready().0.with_names(core.names().clone());
    next.daemon_event(DaemonEvent::Speakers(unnamed), now);
    assert_eq!(next.speaker_name(&t).as_deref(), Some("Ef"));
}

/// A core that has the daemon's roster of `speakers` (id, name).
fn with_roster(speakers: &[(&str, Option<&str>)]) -> (Core, Instant) {
    let (mut core, now) = ready();
    let speakers = speakers
        .iter()
        .map(|(id, name)| Speaker {
            id: (*id).into(),
            name: name.map(Into::into),
            status: SpeakerState::Confirmed,
            cumulative_s: 10.0,
            sample_path: None,
            created_at: "2026-11-30T09:00:00Z".into(),
        })
        .collect();
    core.daemon_event(DaemonEvent::Speakers(Speakers { speakers }), now);
    (core, now)
}

/// The ids and names of the roster an effect publishes.
fn published(effects: &[Effect]) -> Vec<(String, Option<String>)> {
    let Some(Effect::Publish(AssistantEvent::Speakers(roster))) = effects.last() else {
        panic!("no roster published: {effects:?}")
    };
    roster.speakers.iter().map(|s| (s.id.clone(), s.name.clone())).collect()
}

fn pair(id: &str, name: Option<&str>) -> (String, Option<String>) {
    (id.into(), name.map(Into::into))
}

#[test]
fn forget_and_merge_are_refused_for_ids_not_in_the_roster_and_bad_ids() {
    let (mut core, now) = with_roster(&[("spk_0001", Some("Ana")), ("spk_0002", None)]);
    let forget = |id: &str| Request::SpeakerForget { speaker_id: id.into() };
    let merge =
        |id: &str, into: &str| Request::SpeakerMerge { speaker_id: id.into(), into: into.into() };
    for (request, code, needle) in [
        (forget("spk_0009"), ErrorCode::UnknownSpeaker, "no speaker 'spk_0009'"),
        (forget(""), ErrorCode::BadMessage, "empty"),
        (merge("spk_0009", "spk_0001"), ErrorCode::UnknownSpeaker, "'spk_0009'"),
        (merge("spk_0002", "spk_0009"), ErrorCode::UnknownSpeaker, "'spk_0009'"),
        (merge("spk_0001", "spk_0001"), ErrorCode::BadMessage, "into itself"),
        (merge("", "spk_0001"), ErrorCode::BadMessage, "empty"),
        (merge("spk_0001", " "), ErrorCode::BadMessage, "empty"),
    ] {
        check(&mut core, now, request, OUT, Some(code), needle);
    }
    let unknown = core.request(&forget("spk_0009"), now, OUT).0;
    let AssistantEvent::Error(e) = unknown else { panic!("{unknown:?}") };
    assert!(e.message.contains("`stt-ctl speaker-list`"), "names the fix: {e:?}");
    assert_eq!(core.roster().speakers.len(), 2, "nothing changed");
}

#[test]
fn forgetting_drops_the_speaker_and_its_name_until_the_daemon_has_too() {
    let (mut core, now) = with_roster(&[("spk_0001", None), ("spk_0003", None)]);
    check(
        &mut core,
        now,
        Request::SpeakerName { speaker_id: "spk_0003".into(), name: "Bo".into() },
        OUT,
        None,
        "",
    );
    let effects = check(
        &mut core,
        now,
        Request::SpeakerForget { speaker_id: "spk_0003".into() },
        OUT,
        None,
        "",
    );
    assert_eq!(effects[0], Effect::ForgetSpeaker { speaker_id: "spk_0003".into() });
    assert_eq!(published(&effects), [pair("spk_0001", None)], "viewers see it go at once");
    assert!(core.names().is_empty(), "its name goes with it: {:?}", core.names());

    // A roster the daemon sent before it read the edit does not bring it back…
    let before = with_roster(&[("spk_0001", None), ("spk_0003", None), ("spk_0005", None)]);
    let stale = before.0.roster().clone();
    let effects = core.daemon_event(DaemonEvent::Speakers(stale.clone()), now);
    assert_eq!(published(&effects), [pair("spk_0001", None), pair("spk_0005", None)]);
    // …and once the daemon's roster is without it, nothing more is held back.
    let mut applied = stale;
    applied.speakers.retain(|s| s.id != "spk_0003");
    core.daemon_event(DaemonEvent::Speakers(applied), now);
    assert!(core.gone.is_empty(), "{:?}", core.gone);
}

#[test]
fn merging_moves_the_name_only_to_an_unnamed_speaker() {
    // Ana's name goes to the unnamed speaker that stays.
    let (mut core, now) = with_roster(&[("spk_0001", None), ("spk_0004", None)]);
    core.names.insert("spk_0004".into(), "Ana".into());
    core.roster = core.named(core.roster.clone());
    let effects = check(
        &mut core,
        now,
        Request::SpeakerMerge { speaker_id: "spk_0004".into(), into: "spk_0001".into() },
        OUT,
        None,
        "",
    );
    assert_eq!(
        effects[0],
        Effect::MergeSpeaker { speaker_id: "spk_0004".into(), into: "spk_0001".into() }
    );
    assert_eq!(published(&effects), [pair("spk_0001", Some("Ana"))]);
    assert_eq!(core.names(), &BTreeMap::from([("spk_0001".into(), "Ana".into())]));

    // A speaker that has a name keeps it; the other's goes.
    let (mut core, now) =
        with_roster(&[("spk_0001", Some("Efren")), ("spk_0002", None), ("spk_0004", None)]);
    for (id, name) in [("spk_0001", "Ef"), ("spk_0004", "Ana")] {
        let name = Request::SpeakerName { speaker_id: id.into(), name: name.into() };
        check(&mut core, now, name, OUT, None, "");
    }
    let effects = check(
        &mut core,
        now,
        Request::SpeakerMerge { speaker_id: "spk_0004".into(), into: "spk_0001".into() },
        OUT,
        None,
        "",
    );
    assert_eq!(published(&effects), [pair("spk_0001", Some("Ef")), pair("spk_0002", None)]);
    assert_eq!(core.names(), &BTreeMap::from([("spk_0001".into(), "Ef".into())]));

    // A name the daemon's roster carries counts as a name (it came from the names file).
    let (mut core, now) = with_roster(&[("spk_0001", Some("Efren")), ("spk_0004", None)]);
    let effects = check(
        &mut core,
        now,
        Request::SpeakerMerge { speaker_id: "spk_0001".into(), into: "spk_0004".into() },
        OUT,
        None,
        "",
    );
    assert_eq!(published(&effects), [pair("spk_0004", Some("Efren"))]);
}

/// A ready core that takes spoken turns: the name "hey jarvis", eight seconds for words after
/// it, five of listening after an answer.
fn hands_free() -> (Core, Instant) {
    let (core, now) = ready();
    let flow = Flow::new("Hey Jarvis", Duration::from_secs(8), Duration::from_secs(5));
    (core.with_wake(flow), now)
}

fn wake(core: &mut Core, now: Instant) -> Vec<Effect> {
    let heard = stt_proto::Wake { phrase: "hey_jarvis".into(), score: 0.9, at: 1.0 };
    core.daemon_event(DaemonEvent::Wake(heard), now)
}

/// What the owner does with [`Effect::RunSpoken`]: execute, as Enter would.
#[track_caller]
fn run_spoken(core: &mut Core, now: Instant, effects: &[Effect], text: &str) {
    assert!(effects.contains(&Effect::RunSpoken), "{effects:?}");
    let effects = check(core, now, Request::CommandExecute { wait_ms: None }, OUT, None, "");
    let ran = effects.iter().any(|e| matches!(e, Effect::Execute { text: t, .. } if t == text));
    assert!(ran, "{text:?} not run: {effects:?}");
}

#[test]
fn the_name_arms_a_command_that_runs_when_the_turn_ends_then_listens_a_while() {
    let (mut core, now) = hands_free();
    let effects = wake(&mut core, now);
    assert_eq!(core.mode(), Mode::CommandArmed);
    assert!(effects.contains(&Effect::Earcon), "{effects:?}");
    // Relayed, for the viewers (the TUI shows how sure it was).
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::Publish(AssistantEvent::Wake(w)) if w.score == 0.9))
    );
    // Said in the same breath as the name: the name is not part of the command.
    let effects = say(&mut core, now, 1, "Hey Jarvis, what time is it?");
    assert_eq!(core.buffer(), ("what time is it?", false));
    run_spoken(&mut core, now, &effects, "what time is it?");
    assert_eq!(core.spoken(), Some(Stage::Running));

    // Answered: the next command needs no name for five seconds.
    let answered = now + Duration::from_secs(2);
    core.execution_finished(answered);
    assert_eq!(core.mode(), Mode::CommandArmed);
    let until = answered + Duration::from_secs(5);
    assert_eq!(core.spoken(), Some(Stage::FollowUp { until }));
    let effects = say(&mut core, answered, 2, "And in Tokyo?");
    run_spoken(&mut core, answered, &effects, "And in Tokyo?");

    // "Stop" in the listening after the answer ends it; nothing runs.
    let again = answered + Duration::from_secs(3);
    core.execution_finished(again);
    let effects = say(&mut core, again, 3, "Stop, thanks.");
    assert!(!effects.contains(&Effect::RunSpoken), "{effects:?}");
    assert_eq!(core.mode(), Mode::Idle);
    assert_eq!(core.spoken(), None);
}

#[test]
fn the_name_alone_waits_for_words_then_gives_up_saying_so() {
    let (mut core, now) = hands_free();
    wake(&mut core, now);
    // A pause after the name: the words come in the next turn.
    let effects = say(&mut core, now, 1, "Hey, Jarvis.");
    assert!(!effects.contains(&Effect::RunSpoken), "{effects:?}");
    assert_eq!(core.buffer(), ("", false));
    let effects = say(&mut core, now + Duration::from_secs(2), 2, "Set a timer for ten minutes.");
    run_spoken(&mut core, now, &effects, "Set a timer for ten minutes.");

    // The name, then nothing: after the wait, idle, and told why.
    let (mut core, now) = hands_free();
    wake(&mut core, now);
    assert_eq!(core.turn_deadline(), Some(now + Duration::from_secs(8)));
    assert!(core.turn_due(now + Duration::from_secs(7)).is_empty());
    let effects = core.turn_due(now + Duration::from_secs(8));
    assert_eq!(core.mode(), Mode::Idle);
    let told = effects.iter().any(|e| {
        matches!(e, Effect::Publish(AssistantEvent::ChatMessage(m))
            if m.role == ChatRole::Note && m.text.starts_with("Heard the name, then nothing"))
    });
    assert!(told, "{effects:?}");

    // The listening after an answer ends quietly.
    let (mut core, now) = hands_free();
    wake(&mut core, now);
    let effects = say(&mut core, now, 1, "hey jarvis what's the date");
    run_spoken(&mut core, now, &effects, "what's the date");
    core.execution_finished(now);
    let effects = core.turn_due(now + Duration::from_secs(5));
    assert_eq!(core.mode(), Mode::Idle);
    assert!(!effects.iter().any(|e| matches!(e, Effect::Publish(AssistantEvent::ChatMessage(_)))));
}

#[test]
fn a_spoken_yes_or_no_answers_the_call_waiting_and_other_words_do_not() {
    for (said, answer) in [("Yes, please.", Some(true)), ("No.", Some(false)), ("hmm", None)] {
        let (mut core, now) = hands_free();
        wake(&mut core, now);
        let effects = say(&mut core, now, 1, "hey jarvis delete the file");
        run_spoken(&mut core, now, &effects, "delete the file");
        core.confirmation_requested("call-1");
        let effects = say(&mut core, now, 2, said);
        let answered = effects.iter().find_map(|e| match e {
            Effect::Answer { call_id, allow } if call_id == "call-1" => Some(*allow),
            _ => None,
        });
        assert_eq!(answered, answer, "{said}");
        assert_eq!(core.awaiting().is_empty(), answer.is_some(), "{said}");
    }
    // At the keyboard, words are never an answer.
    let (mut core, now) = ready();
    check(&mut core, now, Request::CommandStart, OUT, None, "");
    say(&mut core, now, 1, "delete the file");
    check(&mut core, now, Request::CommandExecute { wait_ms: None }, OUT, None, "");
    core.confirmation_requested("call-1");
    let effects = say(&mut core, now, 2, "yes");
    assert!(!effects.iter().any(|e| matches!(e, Effect::Answer { .. })), "{effects:?}");
}

#[test]
fn a_key_takes_over_and_the_name_is_heard_only_when_it_may_start_something() {
    // Editing the words or cancelling ends the spoken turn: no run by itself.
    let (mut core, now) = hands_free();
    wake(&mut core, now);
    let edit = Request::CommandEdit { text: "what time is it in Lima".into() };
    check(&mut core, now, edit, OUT, None, "");
    let effects = say(&mut core, now, 1, "hey jarvis what time is it");
    assert!(!effects.contains(&Effect::RunSpoken), "{effects:?}");
    assert_eq!(core.spoken(), None);
    let (mut core, now) = hands_free();
    wake(&mut core, now);
    check(&mut core, now, Request::CommandCancel, OUT, None, "");
    assert_eq!((core.mode(), core.spoken()), (Mode::Idle, None));

    // Not while a command runs, in chat, or dictating; and not at all without `[wake]`.
    let (mut core, now) = hands_free();
    check(&mut core, now, Request::ChatToggle, OUT, None, "");
    assert!(!wake(&mut core, now).contains(&Effect::Earcon));
    assert_eq!(core.mode(), Mode::Chat);
    let (mut core, now) = hands_free();
    check(&mut core, now, Request::CommandStart, OUT, None, "");
    say(&mut core, now, 1, "what time is it");
    check(&mut core, now, Request::CommandExecute { wait_ms: None }, OUT, None, "");
    assert!(!wake(&mut core, now).contains(&Effect::Earcon));
    assert_eq!(core.mode(), Mode::Executing);
    let (mut core, now) = ready();
    assert!(!wake(&mut core, now).contains(&Effect::Earcon));
    assert_eq!(core.mode(), Mode::Idle);
}

/// `[wake].only_speaker`: a spoken command runs only in that named voice; another's, or one
/// not known by name, is dropped and the assistant is idle again.
#[test]
fn only_the_named_speakers_spoken_command_runs() {
    let spoken_by = |core: &mut Core, now: Instant, seg_id: u64, text: &str, who: Option<&str>| {
        let mut said =
            core.daemon_event(DaemonEvent::SpeechStart(SpeechStart { seg_id, start: 0.0 }), now);
        said.extend(
            core.daemon_event(DaemonEvent::SpeechStop(SpeechStop { seg_id, end: 1.0 }), now),
        );
        let DaemonEvent::Transcript(mut t) = transcript(seg_id, text) else { unreachable!() };
        if let Some(name) = who {
            t.speaker_status = SpeakerStatus::Matched;
            t.speaker = Some(name.into());
        }
        said.extend(core.daemon_event(DaemonEvent::Transcript(t), now));
        said.extend(core.daemon_event(DaemonEvent::SegmentDone(SegmentDone { seg_id }), now));
        said
    };
    for (who, runs) in
        [(Some("Efren"), true), (Some("efren"), true), (Some("Ana"), false), (None, false)]
    {
        let (core, now) = ready();
        let flow = Flow::new("hey jarvis", Duration::from_secs(8), Duration::ZERO).only("Efren");
        let mut core = core.with_wake(flow);
        wake(&mut core, now);
        let effects = spoken_by(&mut core, now, 1, "hey jarvis what time is it", who);
        assert_eq!(effects.contains(&Effect::RunSpoken), runs, "{who:?}");
        assert_eq!(core.mode(), if runs { Mode::CommandArmed } else { Mode::Idle }, "{who:?}");
    }
}

/// `[wake].action = "chat"`: the name starts a conversation; the name is not part of the
/// first turn; after a reply it listens a while for more, and ends when nothing comes.
#[test]
fn the_name_can_start_a_chat_that_ends_after_a_quiet_follow_up() {
    let (core, now) = ready();
    let flow = Flow::new("hey jarvis", Duration::from_secs(8), Duration::from_secs(5)).chat(true);
    let mut core = core.with_wake(flow);
    let effects = wake(&mut core, now);
    assert_eq!(core.mode(), Mode::Chat);
    assert!(effects.contains(&Effect::Earcon));
    let effects = say(&mut core, now, 1, "Hey Jarvis, tell me about the moon.");
    let sent: Vec<&ChatTurn> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::ChatTurn(turn) => Some(turn),
            _ => None,
        })
        .collect();
    assert_eq!(sent.len(), 1, "{effects:?}");
    assert_eq!(sent[0].words, "tell me about the moon.");
    // Waiting for the reply: no deadline, however long it takes.
    assert_eq!(core.spoken(), Some(Stage::Running));
    assert!(core.turn_due(now + Duration::from_secs(60)).is_empty());
    // Replied: more comes within the follow-up, so it goes on; then quiet, and it ends.
    let replied = now + Duration::from_secs(61);
    core.chat_answered(replied);
    let effects = say(&mut core, replied + Duration::from_secs(2), 2, "And the sun?");
    assert!(effects.iter().any(|e| matches!(e, Effect::ChatTurn(t) if t.words == "And the sun?")));
    let again = replied + Duration::from_secs(10);
    core.chat_answered(again);
    assert_eq!(core.mode(), Mode::Chat);
    let effects = core.turn_due(again + Duration::from_secs(5));
    assert_eq!(core.mode(), Mode::Idle);
    assert!(effects.contains(&Effect::DropQueuedChat), "{effects:?}");
    // A chat toggled by a key is not ended by the follow-up.
    check(&mut core, again, Request::ChatToggle, OUT, None, "");
    core.chat_answered(again);
    assert!(core.turn_due(again + Duration::from_secs(60)).is_empty());
    assert_eq!(core.mode(), Mode::Chat);
}
