//! Keys and events as actions in, requests and screen state out: the keymap, the edit and
//! clear dialogues, the chat line, tool confirmations, scrolling, streaming, refreshes, and
//! the event loop itself driven through its channel, with its redraws paced while a reply
//! streams.

mod support;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{
    KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use std::time::Duration;
use stt_proto::Request;
use stt_tui::action::{Action, Effect};
use stt_tui::app::run_loop;
use stt_tui::state::{Entry, Input, Options, State};
use stt_tui::update::{EXECUTE_WAIT_MS, STATUS_EVERY_TICKS};

use support::*;
use tokio::sync::mpsc;

fn armed() -> (State, Vec<Effect>) {
    let mut actions = connected();
    actions.extend([
        event(r#"{"type":"mode","mode":"command_armed"}"#),
        event(r#"{"type":"command_text","text":"what time is it","edited":false}"#),
    ]);
    after(actions)
}

const CALL_WAITING: &str = r#"{"type":"tool_call","call_id":"call_3","tool":"open_url","args":{"url":"https://example.org"},"side_effect":"external","requires_confirmation":true,"awaiting_confirmation":true}"#;

#[test]
fn a_arms_a_command() {
    let (mut state, _) = after(connected());
    assert_eq!(feed(&mut state, [key('a')]), [Effect::Send(Request::CommandStart)]);
}

#[test]
fn enter_executes_esc_cancels_and_t_toggles_chat() {
    let (mut state, _) = armed();
    assert_eq!(
        feed(&mut state, [press(KeyCode::Enter)]),
        [Effect::Send(Request::CommandExecute { wait_ms: Some(EXECUTE_WAIT_MS) })],
        "Enter lets the assistant wait for the last words"
    );
    assert_eq!(feed(&mut state, [press(KeyCode::Esc)]), [Effect::Send(Request::CommandCancel)]);
    // A running command can be stopped too; in idle, Esc asks for nothing.
    feed(&mut state, [event(r#"{"type":"mode","mode":"executing"}"#)]);
    assert_eq!(feed(&mut state, [press(KeyCode::Esc)]), [Effect::Send(Request::CommandCancel)]);
    feed(&mut state, [event(r#"{"type":"mode","mode":"idle"}"#)]);
    assert_eq!(feed(&mut state, [press(KeyCode::Esc)]), []);
    assert_eq!(feed(&mut state, [key('t')]), [Effect::Send(Request::ChatToggle)]);
}

#[test]
fn esc_when_nothing_is_armed_sends_nothing() {
    let (mut state, _) = after(connected());
    assert_eq!(feed(&mut state, [press(KeyCode::Esc)]), []);
}

#[test]
fn e_then_typing_then_enter_sends_the_edited_text() {
    let (mut state, _) = armed();
    let mut keys = vec![key('e'), press(KeyCode::Home)];
    keys.extend(typing("so "));
    keys.extend([press(KeyCode::End), press(KeyCode::Backspace), press(KeyCode::Backspace)]);
    keys.extend(typing("now"));
    assert_eq!(feed(&mut state, keys), [], "nothing is sent while typing");
    assert!(matches!(state.input, Input::Editing(_)));
    assert_eq!(
        feed(&mut state, [press(KeyCode::Enter)]),
        [Effect::Send(Request::CommandEdit { text: "so what time is now".into() })]
    );
    assert_eq!(state.input, Input::Normal);
}

#[test]
fn keys_while_editing_are_text_not_commands() {
    let (mut state, _) = armed();
    let effects = feed(&mut state, [key('e'), key(' '), key('q'), key('a'), key('c'), key('t')]);
    assert_eq!(effects, [], "q, a, c and t are typed, not obeyed");
    let Input::Editing(editor) = &state.input else { panic!("{:?}", state.input) };
    assert_eq!(editor.text(), "what time is it qact");
}

#[test]
fn esc_during_an_edit_abandons_it() {
    let (mut state, _) = armed();
    let mut keys = vec![key('e')];
    keys.extend(typing(" in Tokyo"));
    keys.push(press(KeyCode::Esc));
    assert_eq!(feed(&mut state, keys), [], "neither an edit nor a cancel is sent");
    assert_eq!(state.input, Input::Normal);
    assert_eq!(state.buffer, "what time is it");
    // The next Esc, outside the editor, cancels the command.
    assert_eq!(feed(&mut state, [press(KeyCode::Esc)]), [Effect::Send(Request::CommandCancel)]);
}

#[test]
fn e_without_an_armed_command_says_so_and_edits_nothing() {
    let (mut state, _) = after(connected());
    assert_eq!(feed(&mut state, [key('e')]), []);
    assert_eq!(state.input, Input::Normal);
    assert!(matches!(state.entries.back(), Some(Entry::Notice(n)) if n.contains("arm a command")));
}

#[test]
fn an_edit_ends_when_the_command_is_no_longer_armed() {
    let (mut state, _) = armed();
    feed(&mut state, [key('e'), key('x')]);
    feed(&mut state, [event(r#"{"type":"mode","mode":"idle"}"#)]);
    assert_eq!(state.input, Input::Normal);
    assert_eq!(
        feed(&mut state, [press(KeyCode::Enter)]),
        [Effect::Send(Request::CommandExecute { wait_ms: Some(EXECUTE_WAIT_MS) })]
    );
}

#[test]
fn a_paste_goes_into_the_editor_and_nowhere_else() {
    let (mut state, _) = armed();
    assert_eq!(feed(&mut state, [Action::Paste("quit all".into())]), []);
    assert_eq!(state.input, Input::Normal);
    feed(&mut state, [key('e'), Action::Paste(" now\nplease".into())]);
    let Input::Editing(editor) = &state.input else { panic!("{:?}", state.input) };
    assert_eq!(editor.text(), "what time is it now please");
}

#[test]
fn c_then_n_does_not_clear() {
    let (mut state, _) = after(connected());
    assert_eq!(feed(&mut state, [key('c')]), []);
    assert_eq!(state.input, Input::ConfirmClear);
    assert!(screen(&state).contains("Clear the conversation and the assistant's chat history?"));
    assert_eq!(feed(&mut state, [key('x'), key('a')]), [], "other keys wait for the answer");
    assert_eq!(feed(&mut state, [key('n')]), []);
    assert_eq!(state.input, Input::Normal);
    assert_eq!(feed(&mut state, [key('c'), press(KeyCode::Esc)]), []);
}

#[test]
fn c_then_y_sends_clear_and_the_cleared_event_empties_the_pane() {
    let (mut state, _) = after(connected());
    feed(&mut state, [event(r#"{"type":"error","code":"llm_error","message":"gone"}"#)]);
    assert_eq!(feed(&mut state, [key('c'), key('y')]), [Effect::Send(Request::Clear)]);
    feed(&mut state, [event(r#"{"type":"cleared"}"#)]);
    assert_eq!(state.entries, [Entry::Notice("conversation cleared".into())]);
    assert_eq!(state.transcripts.len(), 2, "transcripts are not cleared");
}

#[test]
fn y_and_n_answer_the_tool_call_that_waits() {
    let (mut state, _) = after(connected());
    assert_eq!(feed(&mut state, [key('y'), key('n')]), [], "nothing waits yet");
    feed(&mut state, [event(CALL_WAITING)]);
    assert_eq!(
        feed(&mut state, [key('y')]),
        [Effect::Send(Request::Confirm { call_id: Some("call_3".into()) })]
    );
    assert_eq!(
        feed(&mut state, [key('n')]),
        [Effect::Send(Request::Deny { call_id: Some("call_3".into()) })]
    );
    feed(
        &mut state,
        [event(
            r#"{"type":"tool_result","call_id":"call_3","tool":"open_url","ok":false,"result":"the user did not allow this action","latency_ms":0}"#,
        )],
    );
    assert!(state.pending.is_empty(), "the result ends the wait");
    assert_eq!(feed(&mut state, [key('y')]), []);
    let screen = screen(&state);
    assert!(screen.contains("← open_url failed: the user did not allow this action"), "{screen}");
}

#[test]
fn nothing_pending_stops_asking() {
    let (mut state, _) = after(connected());
    feed(&mut state, [event(CALL_WAITING)]);
    feed(
        &mut state,
        [reply(
            Request::Confirm { call_id: Some("call_3".into()) },
            r#"{"type":"error","code":"nothing_pending","message":"nothing waits for confirmation"}"#,
        )],
    );
    assert!(state.pending.is_empty());
    assert!(screen(&state).contains("error (nothing_pending): nothing waits for confirmation"));
}

#[test]
fn a_request_that_cannot_be_sent_is_an_error_line() {
    let (mut state, _) = after(connected());
    feed(
        &mut state,
        [Action::Reply {
            request: Request::CommandStart,
            outcome: Err("stt-assistant did not answer within 3s".into()),
        }],
    );
    assert!(
        screen(&state).contains("error: cannot send command_start: stt-assistant did not answer")
    );
    // A failed status refresh adds nothing: the header already shows the link.
    let before = state.entries.len();
    feed(&mut state, [Action::Reply { request: Request::Status, outcome: Err("down".into()) }]);
    assert_eq!(state.entries.len(), before);
}

#[test]
fn q_and_ctrl_c_quit() {
    let (mut state, _) = after(connected());
    assert_eq!(feed(&mut state, [key('q')]), [Effect::Quit]);
    let ctrl_c = Action::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert_eq!(feed(&mut state, [ctrl_c.clone()]), [Effect::Quit]);
    feed(&mut state, [key('a'), event(r#"{"type":"mode","mode":"command_armed"}"#), key('e')]);
    assert_eq!(feed(&mut state, [ctrl_c]), [Effect::Quit], "even while editing");
}

fn said(n: usize) -> Action {
    event(&format!(
        r#"{{"type":"chat_message","id":{n},"role":"note","speaker":null,"text":"line {n}","partial":false}}"#
    ))
}

#[test]
fn scrolling_up_holds_the_view_and_end_follows_again() {
    let (mut state, _) = after(connected());
    feed(&mut state, (1..=40).map(said));
    assert!(state.conversation_scroll.sticks());
    assert!(screen(&state).contains("line 40"));

    feed(&mut state, [press(KeyCode::PageUp)]);
    assert!(!state.conversation_scroll.sticks(), "scrolled up");
    let held = screen(&state);
    assert!(!held.contains("line 40"), "{held}");
    assert!(held.contains("scrolled up: End follows"), "{held}");
    feed(&mut state, (41..=45).map(said));
    assert_eq!(screen(&state), held, "new lines do not move a view scrolled up");

    feed(&mut state, [press(KeyCode::End)]);
    assert!(state.conversation_scroll.sticks());
    let followed = screen(&state);
    assert!(followed.contains("line 45"), "{followed}");
    feed(&mut state, [said(46)]);
    assert!(screen(&state).contains("line 46"), "stuck to the bottom again");

    feed(&mut state, [press(KeyCode::Home)]);
    assert!(screen(&state).contains("note: line 1 "), "the top");
    feed(&mut state, (0..20).map(|_| press(KeyCode::PageDown)));
    assert!(state.conversation_scroll.sticks(), "paging down to the bottom sticks again");
}

#[test]
fn tab_moves_scrolling_to_the_transcripts() {
    let (mut state, _) = after(connected());
    for n in 0..30 {
        feed(
            &mut state,
            [event(&format!(
                r#"{{"type":"transcript","seg_id":{n},"text":"utterance {n}","language":"en","start":0,"end":1,"duration":1,"speaker_id":null,"speaker_status":"none","speaker":null,"speaker_score":null}}"#
            ))],
        );
    }
    feed(&mut state, [press(KeyCode::Tab), press(KeyCode::Up)]);
    assert!(!state.transcripts_scroll.sticks());
    assert!(state.conversation_scroll.sticks());
    assert!(!screen(&state).contains("utterance 29"));
}

fn mouse(kind: MouseEventKind, column: u16, row: u16) -> Action {
    Action::Mouse(MouseEvent { kind, column, row, modifiers: KeyModifiers::NONE })
}

#[test]
fn the_wheel_scrolls_the_pane_under_the_pointer_and_a_click_focuses_it() {
    let (mut state, _) = after(connected());
    feed(&mut state, (1..=40).map(said));
    let transcripts_row = 7; // inside the transcripts pane, below the header
    let conversation_row = 20;

    feed(&mut state, [mouse(MouseEventKind::ScrollUp, 10, conversation_row)]);
    assert!(!state.conversation_scroll.sticks(), "the conversation scrolled");
    assert!(!screen(&state).contains("line 40"));
    feed(&mut state, [mouse(MouseEventKind::ScrollDown, 10, conversation_row)]);
    assert!(state.conversation_scroll.sticks(), "and back to the bottom, following again");

    feed(&mut state, [mouse(MouseEventKind::Down(MouseButton::Left), 10, transcripts_row)]);
    assert_eq!(state.focus, stt_tui::state::Pane::Transcripts);
    feed(&mut state, [mouse(MouseEventKind::Down(MouseButton::Left), 10, conversation_row)]);
    assert_eq!(state.focus, stt_tui::state::Pane::Conversation);
}

#[test]
fn max_lines_keeps_the_newest() {
    let options = Options { max_lines: 3, ..Options::default() };
    let (mut state, _) = after_with(options, connected());
    feed(&mut state, (1..=5).map(said));
    let kept: Vec<_> = state
        .entries
        .iter()
        .map(|e| match e {
            Entry::Chat { text, .. } => text.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(kept, ["line 3", "line 4", "line 5"]);
}

#[test]
fn a_streamed_reply_grows_in_place_and_the_final_text_replaces_it() {
    let (mut state, _) = after(connected());
    let piece = |text: &str, partial: bool| {
        event(&format!(
            r#"{{"type":"chat_message","id":5,"role":"assistant","speaker":null,"text":"{text}","partial":{partial}}}"#
        ))
    };
    feed(&mut state, [piece("Why", true), piece(" did", true)]);
    assert!(screen(&state).contains("assistant: Why did …"));
    feed(&mut state, [piece("Why did the chicken cross the road?", false)]);
    let screen = screen(&state);
    assert!(screen.contains("assistant: Why did the chicken cross the road? "), "{screen}");
    assert!(!screen.contains('…'), "no longer streaming: {screen}");
    assert_eq!(state.entries.len(), 1);
}

#[test]
fn the_link_reads_the_state_when_it_comes_up_and_refreshes_it_on_ticks() {
    let mut state = State::new(SOCKET, Options::default());
    assert_eq!(feed(&mut state, [link_up()]), [Effect::Send(Request::Status)]);
    let ticks = feed(&mut state, (0..STATUS_EVERY_TICKS * 2).map(|_| Action::Tick));
    assert_eq!(sent(&ticks), [Request::Status, Request::Status]);

    feed(&mut state, [Action::LinkDown("stt-assistant closed the connection".into())]);
    let ticks = feed(&mut state, (0..STATUS_EVERY_TICKS * 2).map(|_| Action::Tick));
    assert_eq!(ticks, [], "no refresh while down");
    assert_eq!(feed(&mut state, [link_up()]), [Effect::Send(Request::Status)]);
    assert!(matches!(state.entries.back(), Some(Entry::Notice(n)) if n.contains("reconnected")));
}

#[test]
fn a_change_of_stt_health_asks_why() {
    let (mut state, _) = after(connected());
    let beat = |healthy: bool| {
        event(&format!(
            r#"{{"type":"heartbeat","seq":3,"mode":"idle","stt_healthy":{healthy},"daemon_backlog":0,"inference_queue":0,"inference_busy":false}}"#
        ))
    };
    assert_eq!(feed(&mut state, [beat(true)]), []);
    assert_eq!(feed(&mut state, [beat(false)]), [Effect::Send(Request::Status)]);
    feed(
        &mut state,
        [reply(
            Request::Status,
            &STATUS_IDLE.replace(r#""stt_healthy":true"#, r#""stt_healthy":false"#).replace(
                r#""stt_detail":"""#,
                r#""stt_detail":"no heartbeat from stt-daemon for 4.2 s""#,
            ),
        )],
    );
    assert!(screen(&state).contains("STT down: no heartbeat from stt-daemon for 4.2 s"));
}

#[tokio::test]
async fn the_event_loop_runs_on_a_channel_of_actions_until_q() {
    let (tx, mut rx) = mpsc::channel(64);
    let mut actions = vec![Action::Resize { width: WIDTH, height: HEIGHT }];
    actions.extend(connected());
    actions.extend([key('a'), key('q'), key('t')]);
    for action in actions {
        tx.send(action).await.unwrap();
    }
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).unwrap();
    let mut state = State::new(SOCKET, Options::default());
    let mut effects = Vec::new();
    run_loop(&mut terminal, &mut state, &mut rx, |e| effects.push(e)).await.unwrap();
    assert_eq!(
        effects,
        [Effect::Send(Request::Status), Effect::Send(Request::CommandStart)],
        "q ends the loop; the t after it is never applied"
    );
    assert_eq!(rx.try_recv().ok(), Some(key('t')));
}

#[tokio::test]
async fn the_event_loop_draws_what_arrived_and_ends_when_the_senders_are_gone() {
    let (tx, mut rx) = mpsc::channel(64);
    tx.send(Action::Resize { width: WIDTH, height: HEIGHT }).await.unwrap();
    for action in connected() {
        tx.send(action).await.unwrap();
    }
    drop(tx);
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).unwrap();
    let mut state = State::new(SOCKET, Options::default());
    run_loop(&mut terminal, &mut state, &mut rx, |_| {}).await.unwrap();
    let shown = text_of(terminal.backend().buffer());
    assert!(shown.contains("[de] Unknown (1.2s): wie spät ist es"), "{shown}");
    assert!(shown.contains("● connected"), "{shown}");
}

// ---------------------------------------------------------------------------------------
// The chat line.

/// Connected, in chat mode (as a typed turn from idle leaves the assistant).
fn chatting() -> (State, Vec<Effect>) {
    let mut actions = connected();
    actions.push(event(r#"{"type":"mode","mode":"chat"}"#));
    after(actions)
}

fn line_text(state: &State) -> String {
    match &state.input {
        Input::Chatting(editor) => editor.text(),
        other => panic!("the chat line is not open: {other:?}"),
    }
}

#[test]
fn i_opens_the_chat_line_and_enter_sends_a_turn_keeping_the_line_open() {
    let (mut state, _) = after(connected());
    assert_eq!(feed(&mut state, [key('i')]), []);
    assert_eq!(line_text(&state), "");
    assert_eq!(
        feed(&mut state, typing("what is the capital of Peru?")),
        [],
        "typing sends nothing"
    );
    assert_eq!(
        feed(&mut state, [press(KeyCode::Enter)]),
        [Effect::Send(Request::ChatSend { text: "what is the capital of Peru?".into() })]
    );
    assert_eq!(line_text(&state), "", "emptied for the next message, still open");
}

#[test]
fn an_empty_line_sends_nothing() {
    let (mut state, _) = after(connected());
    assert_eq!(feed(&mut state, [key('i'), press(KeyCode::Enter)]), []);
    assert_eq!(feed(&mut state, [key(' '), key(' '), press(KeyCode::Enter)]), []);
    assert_eq!(line_text(&state), "  ", "nothing sent, nothing lost");
}

#[test]
fn a_slash_line_is_a_chat_command() {
    let (mut state, _) = after(connected());
    let mut keys = vec![key('i')];
    keys.extend(typing("/providers"));
    keys.push(press(KeyCode::Enter));
    assert_eq!(
        feed(&mut state, keys),
        [Effect::Send(Request::ChatCommand { line: "/providers".into() })]
    );
    // `/` opens the line with the slash typed.
    assert_eq!(feed(&mut state, [press(KeyCode::Esc), key('/')]), []);
    assert_eq!(line_text(&state), "/");
    let mut keys = typing("model qwen2.5:7b");
    keys.push(press(KeyCode::Enter));
    assert_eq!(
        feed(&mut state, keys),
        [Effect::Send(Request::ChatCommand { line: "/model qwen2.5:7b".into() })]
    );
}

#[test]
fn keys_on_the_chat_line_are_text_not_commands() {
    let (mut state, _) = after(connected());
    let effects = feed(&mut state, [key('i'), key('q'), key('a'), key('t'), key('c'), key('y')]);
    assert_eq!(effects, [], "q, a, t, c and y are typed, not obeyed");
    feed(
        &mut state,
        [press(KeyCode::Home), key('>'), press(KeyCode::End), press(KeyCode::Backspace)],
    );
    feed(&mut state, [Action::Paste(" ok\nthen".into())]);
    assert_eq!(line_text(&state), ">qatc ok then");
}

#[test]
fn esc_closes_the_chat_line_and_cancels_nothing() {
    let mut actions = connected();
    actions.push(event(r#"{"type":"mode","mode":"command_armed"}"#));
    let (mut state, _) = after(actions);
    let mut keys = vec![key('i')];
    keys.extend(typing("never mind"));
    keys.push(press(KeyCode::Esc));
    assert_eq!(feed(&mut state, keys), [], "the armed command is not cancelled");
    assert_eq!(state.input, Input::Normal);
    assert_eq!(feed(&mut state, [press(KeyCode::Esc)]), [Effect::Send(Request::CommandCancel)]);
}

#[test]
fn enter_on_the_chat_line_stops_a_streaming_reply_instead_of_sending() {
    let (mut state, _) = chatting();
    feed(&mut state, [key('i'), piece(5, "Once upon")]);
    feed(&mut state, typing("and then?"));
    assert_eq!(
        feed(&mut state, [press(KeyCode::Enter)]),
        [Effect::Send(Request::ChatStop)],
        "never a turn queued behind a streaming reply"
    );
    assert_eq!(line_text(&state), "and then?", "the line waits for the reply to end");
    feed(&mut state, [chat(5, "assistant", "Once upon", false, true)]);
    assert_eq!(
        feed(&mut state, [press(KeyCode::Enter)]),
        [Effect::Send(Request::ChatSend { text: "and then?".into() })]
    );
}

#[test]
fn enter_on_the_chat_screen_stops_a_streaming_reply() {
    let (mut state, _) = chatting();
    feed(&mut state, [piece(5, "Why did")]);
    assert_eq!(feed(&mut state, [press(KeyCode::Enter)]), [Effect::Send(Request::ChatStop)]);
    assert!(screen(&state).contains("Enter stop the reply"), "the footer says so");
    feed(&mut state, [chat(5, "assistant", "Why did", false, true)]);
    assert_eq!(
        feed(&mut state, [press(KeyCode::Enter)]),
        [Effect::Send(Request::CommandExecute { wait_ms: Some(EXECUTE_WAIT_MS) })],
        "no reply streams: Enter is itself again"
    );
}

#[test]
fn enter_executes_an_armed_command_even_while_a_reply_streams() {
    let (mut state, _) = armed();
    feed(&mut state, [piece(5, "Why did")]);
    assert_eq!(
        feed(&mut state, [press(KeyCode::Enter)]),
        [Effect::Send(Request::CommandExecute { wait_ms: Some(EXECUTE_WAIT_MS) })]
    );
}

#[test]
fn nothing_to_stop_or_a_lost_link_ends_the_stream() {
    let (mut state, _) = chatting();
    feed(&mut state, [piece(5, "Why did")]);
    feed(
        &mut state,
        [reply(
            Request::ChatStop,
            r#"{"type":"error","code":"nothing_pending","message":"no reply is streaming"}"#,
        )],
    );
    assert!(!state.reply_streaming(), "the assistant says nothing streams");
    assert!(screen(&state).contains("error (nothing_pending): no reply is streaming"));

    feed(&mut state, [piece(6, "Because")]);
    feed(&mut state, [Action::LinkDown("stt-assistant closed the connection".into())]);
    assert!(!state.reply_streaming(), "the rest of the reply went with the link");
}

#[test]
fn a_slash_command_shows_its_note_once_and_its_error_as_an_error_line() {
    let (mut state, _) = chatting();
    let providers = Request::ChatCommand { line: "/providers".into() };
    let output = "llamacpp  http  live  qwen2.5  127.0.0.1:9931";
    feed(
        &mut state,
        [
            chat(7, "note", output, false, false),
            reply(providers, &serde_json::json!({"type":"chat_output","text":output}).to_string()),
        ],
    );
    assert_eq!(screen(&state).matches("llamacpp  http").count(), 1, "the note, not the reply too");

    feed(
        &mut state,
        [reply(
            Request::ChatCommand { line: "/frobnicate".into() },
            r#"{"type":"error","code":"bad_message","message":"no command /frobnicate; /help lists them"}"#,
        )],
    );
    assert!(
        screen(&state).contains("error (bad_message): no command /frobnicate; /help lists them")
    );
}

#[test]
fn the_session_comes_from_chat_session_events_and_from_status() {
    let (mut state, _) = after(connected());
    assert_eq!(state.session, None, "a status without chat says nothing of it");
    feed(&mut state, [event(SESSION)]);
    assert_eq!(state.session.as_ref().map(|s| s.turns), Some(2));
    let with_chat = STATUS_IDLE.replace(
        r#""version":"0.1.0""#,
        r#""version":"0.1.0","chat":{"provider":"ollama","model":"qwen2.5:7b","endpoint":"127.0.0.1:11434","loading":true,"turns":0,"last":null,"total":{"prompt":0,"completion":0,"cached":0}}"#,
    );
    feed(&mut state, [reply(Request::Status, &with_chat)]);
    let session = state.session.clone().expect("status.chat");
    assert_eq!((session.provider.as_deref(), session.loading), (Some("ollama"), true));
}

#[test]
fn the_session_row_stays_put_while_the_pane_scrolls() {
    let (mut state, _) = after(connected());
    feed(&mut state, [event(SESSION)]);
    feed(&mut state, (1..=40).map(said));
    let followed = screen(&state);
    assert!(followed.contains("line 40"), "the row takes no line from the bottom: {followed}");
    feed(&mut state, [press(KeyCode::Home)]);
    let top = screen(&state);
    assert!(top.contains("│llamacpp · qwen2.5"), "{top}");
    assert!(top.contains("note: line 1 "), "the first line under it: {top}");
    feed(&mut state, (0..20).map(|_| press(KeyCode::PageDown)));
    assert!(state.conversation_scroll.sticks(), "paging down reaches the bottom again");
}

#[test]
fn the_chat_line_says_how_to_answer_a_tool_call_that_waits() {
    let (mut state, _) = chatting();
    feed(&mut state, [key('i'), event(CALL_WAITING)]);
    let shown = screen(&state);
    assert!(shown.contains("a tool call waits for you: Esc, then y allows or n denies"), "{shown}");
    assert_eq!(feed(&mut state, [key('y')]), [], "y is typed on the line");
    assert_eq!(
        feed(&mut state, [press(KeyCode::Esc), key('y')]),
        [Effect::Send(Request::Confirm { call_id: Some("call_3".into()) })]
    );
}

// ---------------------------------------------------------------------------------------
// Redraws while a reply streams (paused time: the clock moves only when every task waits).

/// Runs the loop on a fresh 100x30 screen, connected and in chat mode, while a script sends
/// each action after its wait in milliseconds (from the one before); returns the screen as
/// last drawn and the frames drawn in all.
async fn run_script(script: Vec<(u64, Action)>) -> anyhow::Result<(String, usize)> {
    let (tx, mut rx) = mpsc::channel(stt_tui::app::ACTION_QUEUE);
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).unwrap();
    let mut state = State::new(SOCKET, Options::default());
    let mut setup = vec![Action::Resize { width: WIDTH, height: HEIGHT }];
    setup.extend(connected());
    setup.push(event(r#"{"type":"mode","mode":"chat"}"#));
    let producer = async move {
        for (wait_ms, action) in setup.into_iter().map(|a| (0, a)).chain(script) {
            if wait_ms > 0 {
                tokio::time::sleep(Duration::from_millis(wait_ms)).await;
            }
            if tx.send(action).await.is_err() {
                return; // The loop has ended.
            }
        }
    };
    let (outcome, ()) =
        tokio::join!(run_loop(&mut terminal, &mut state, &mut rx, |_| {}), producer);
    outcome?;
    let frames = terminal.get_frame().count();
    Ok((text_of(terminal.backend().buffer()), frames))
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_streamed_tokens_redraws_about_eight_times_a_second() {
    // A thousand tokens over one second, then quit (which draws nothing more).
    let mut script: Vec<_> = (0..1000).map(|n| (1, piece(5, &format!("t{n} ")))).collect();
    script.push((1, Action::Quit));
    let (shown, frames) = run_script(script).await.unwrap();
    // The first draw and the connected screen, then one frame per 125 ms of tokens.
    assert!(frames <= 2 + 9, "{frames} frames for one second of tokens");
    assert!(frames >= 2 + 7, "only {frames} frames: streamed text must still move");
    assert!(shown.contains(" t990 t991 t992"), "the last frame shows the newest: {shown}");
}

#[tokio::test(start_paused = true)]
async fn a_held_back_piece_is_drawn_when_its_frame_is_due_though_nothing_else_comes() {
    // The first piece after a quiet second draws at once; the next waits for its frame.
    let burst = || vec![(1000, piece(5, "Why did")), (10, piece(5, " the chicken"))];
    let mut early = burst();
    early.push((40, Action::Quit));
    let (shown, _) = run_script(early).await.unwrap();
    assert!(shown.contains("assistant: Why did …"), "the first piece is drawn: {shown}");
    assert!(!shown.contains("the chicken"), "50 ms on, the second is still held back: {shown}");

    let mut late = burst();
    late.push((200, Action::Quit));
    let (shown, _) = run_script(late).await.unwrap();
    assert!(shown.contains("assistant: Why did the chicken …"), "drawn at its frame: {shown}");
}

#[tokio::test(start_paused = true)]
async fn a_key_or_the_end_of_a_reply_draws_at_once_while_tokens_stream() {
    let script = vec![
        (1000, piece(5, "Why did")),
        (10, piece(5, " the chicken")),
        (10, key('i')),
        (10, Action::Quit),
    ];
    let (shown, _) = run_script(script).await.unwrap();
    assert!(shown.contains("chat: Enter stops the reply"), "the key is drawn at once: {shown}");
    assert!(shown.contains("assistant: Why did the chicken …"), "with what streamed: {shown}");

    let script = vec![
        (1000, piece(5, "Why did")),
        (10, chat(5, "assistant", "Why did the chicken cross the road?", false, false)),
        (10, Action::Quit),
    ];
    let (shown, _) = run_script(script).await.unwrap();
    assert!(shown.contains("assistant: Why did the chicken cross the road?"), "{shown}");
}

#[test]
fn w_asks_what_to_do_next_and_shows_it_line_by_line() {
    let (mut state, _) = after(connected());
    let next = Request::Task(stt_proto::TaskRequest::Next { limit: None });
    assert_eq!(feed(&mut state, [key('w')]), [Effect::Send(next.clone())]);
    let answer = r#"{"type":"task_output","text":"item 3: Write a small CLI (task 1 Learn Rust), on 2026-12-14\ntask 2: Paint the fence","tasks":[],"next":[]}"#;
    feed(&mut state, [reply(next, answer)]);
    let shown: Vec<&Entry> = state.entries.iter().rev().take(3).collect();
    assert_eq!(
        shown,
        [
            &Entry::Notice("  task 2: Paint the fence".into()),
            &Entry::Notice("  item 3: Write a small CLI (task 1 Learn Rust), on 2026-12-14".into()),
            &Entry::Notice("what to do next (stt-ctl task next):".into()),
        ]
    );
}
