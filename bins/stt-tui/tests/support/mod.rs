//! What the screen and key tests share: actions built from wire lines, feeding them
//! through `update`, and drawing a state on a fixed-size `TestBackend`.

#![allow(dead_code)]

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use stt_proto::{AssistantEvent, Hello, Request};
use stt_tui::action::{Action, Effect};
use stt_tui::state::{Options, State};
use stt_tui::update::update;
use stt_tui::view::{cursor, view};

/// The terminal size of every snapshot.
pub const WIDTH: u16 = 100;
pub const HEIGHT: u16 = 30;

pub const SOCKET: &str = "/run/user/1000/stt-assistant.sock";

/// A key press of a character.
pub fn key(c: char) -> Action {
    Action::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

/// A key press of a non-character key.
pub fn press(code: KeyCode) -> Action {
    Action::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

/// Typing `text`, one key per character.
pub fn typing(text: &str) -> Vec<Action> {
    text.chars().map(key).collect()
}

/// An assistant event, from its wire line.
pub fn event(line: &str) -> Action {
    Action::Event(parse(line))
}

/// A reply to `request`, from its wire line.
pub fn reply(request: Request, line: &str) -> Action {
    Action::Reply { request, outcome: Ok(parse(line)) }
}

fn parse(line: &str) -> AssistantEvent {
    stt_proto::parse::<AssistantEvent>(line.as_bytes()).unwrap_or_else(|e| panic!("{line}: {e}"))
}

/// A `chat_message` event: `role` as on the wire (`user`, `assistant`, `note`, `error`).
pub fn chat(id: u64, role: &str, text: &str, partial: bool, stopped: bool) -> Action {
    let line = serde_json::json!({
        "type": "chat_message",
        "id": id,
        "role": role,
        "speaker": null,
        "text": text,
        "partial": partial,
        "stopped": stopped,
    });
    event(&line.to_string())
}

/// A piece of the streaming assistant reply `id`.
pub fn piece(id: u64, text: &str) -> Action {
    chat(id, "assistant", text, true, false)
}

/// The chat session the protocol's example shows: llamacpp on 127.0.0.1:9931, two turns.
pub const SESSION: &str = r#"{"type":"chat_session","provider":"llamacpp","model":"qwen2.5","endpoint":"127.0.0.1:9931","loading":false,"turns":2,"last":{"prompt":412,"completion":38,"cached":380},"total":{"prompt":790,"completion":71,"cached":380}}"#;

/// The subscription coming up.
pub fn link_up() -> Action {
    Action::LinkUp(Hello {
        protocol_version: 1,
        peer: "stt-assistant".into(),
        version: "0.1.0".into(),
    })
}

pub const STATUS_IDLE: &str = r#"{"type":"status","mode":"idle","stt_healthy":true,"stt_detail":"","llm_enabled":true,"llm_endpoint":"http://localhost:9931/v1/chat/completions","llm_reachable":true,"inference_queue":0,"inference_busy":false,"viewers":1,"command_buffer":"","command_edited":false,"version":"0.1.0"}"#;

pub const HEARTBEAT_IDLE: &str = r#"{"type":"heartbeat","seq":1,"mode":"idle","stt_healthy":true,"daemon_backlog":0,"inference_queue":0,"inference_busy":false}"#;

pub const TRANSCRIPT_EFREN: &str = r#"{"type":"transcript","seg_id":1,"text":" turn on the lights","language":"en","start":1.0,"end":2.5,"duration":1.5,"speaker_id":"spk_0001","speaker_status":"matched","speaker":"Efren","speaker_score":0.87}"#;

pub const TRANSCRIPT_UNKNOWN: &str = r#"{"type":"transcript","seg_id":2,"text":"wie spät ist es","language":"de","start":3.0,"end":4.25,"duration":1.25,"speaker_id":"spk_0002","speaker_status":"unknown","speaker":null,"speaker_score":0.41}"#;

/// A state of the snapshot size, with the default `[tui]` settings, after `actions`, and
/// every effect they asked for.
pub fn after(actions: impl IntoIterator<Item = Action>) -> (State, Vec<Effect>) {
    after_with(Options::default(), actions)
}

/// [`after`], with other `[tui]` settings.
pub fn after_with(
    options: Options,
    actions: impl IntoIterator<Item = Action>,
) -> (State, Vec<Effect>) {
    let mut state = State::new(SOCKET, options);
    let effects = feed(&mut state, [Action::Resize { width: WIDTH, height: HEIGHT }]);
    assert!(effects.is_empty());
    let effects = feed(&mut state, actions);
    (state, effects)
}

/// Applies `actions` in order; returns the effects they asked for.
pub fn feed(state: &mut State, actions: impl IntoIterator<Item = Action>) -> Vec<Effect> {
    actions.into_iter().flat_map(|action| update(state, action)).collect()
}

/// Connected, with the header read, two utterances heard and a heartbeat.
pub fn connected() -> Vec<Action> {
    vec![
        link_up(),
        reply(Request::Status, STATUS_IDLE),
        event(HEARTBEAT_IDLE),
        event(TRANSCRIPT_EFREN),
        event(TRANSCRIPT_UNKNOWN),
    ]
}

/// Draws `state` and returns the buffer.
pub fn draw(state: &State) -> Buffer {
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).unwrap();
    terminal.draw(|frame| view(state, frame)).unwrap();
    terminal.backend().buffer().clone()
}

/// The screen as text (trailing blanks trimmed), then where the cursor is.
pub fn screen(state: &State) -> String {
    let buffer = draw(state);
    let mut out = text_of(&buffer);
    let area = ratatui::layout::Rect::new(0, 0, WIDTH, HEIGHT);
    match cursor(state, area) {
        Some(p) => out.push_str(&format!("cursor: column {}, row {}\n", p.x, p.y)),
        None => out.push_str("cursor: hidden\n"),
    }
    out
}

/// The buffer's rows as text, trailing blanks trimmed.
pub fn text_of(buffer: &Buffer) -> String {
    let mut out = String::new();
    for y in 0..buffer.area.height {
        let mut row = String::new();
        let mut skip = 0;
        for x in 0..buffer.area.width {
            let cell = &buffer[(x, y)];
            if skip > 0 {
                skip -= 1;
                continue;
            }
            row.push_str(cell.symbol());
            skip = unicode_width::UnicodeWidthStr::width(cell.symbol()).saturating_sub(1);
        }
        out.push_str(row.trim_end());
        out.push('\n');
    }
    out
}

/// Where `needle` first starts on screen, as (column, row).
pub fn find(buffer: &Buffer, needle: &str) -> Option<(u16, u16)> {
    for y in 0..buffer.area.height {
        for x in 0..buffer.area.width {
            let mut s = String::new();
            for sym in (x..buffer.area.width).map(|x| buffer[(x, y)].symbol()) {
                s.push_str(sym);
                if s.len() >= needle.len() {
                    break;
                }
            }
            if s.starts_with(needle) {
                return Some((x, y));
            }
        }
    }
    None
}

/// The requests among `effects`.
pub fn sent(effects: &[Effect]) -> Vec<Request> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Send(r) => Some(r.clone()),
            Effect::Quit => None,
        })
        .collect()
}
