//! Keys and events as actions in, requests and screen state out: the keymap, the edit and
//! clear dialogues, tool confirmations, scrolling, streaming, refreshes, and the event loop
//! itself driven through its channel.

mod support;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{
    KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
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
