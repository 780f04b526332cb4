//! [`update`]: the one function that changes the [`State`], returning the [`Effect`]s the
//! event loop carries out. It does no I/O, so every key and every event can be tested as
//! plain data in, plain data out.
//!
//! What each key asks for is in [`crate::keymap`], the one table of keys; [`keys`] says
//! what each command does in the state it finds.

use ratatui::crossterm::event::{
    KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use ratatui::layout::Position;
use stt_proto::{AssistantEvent, ChatMessage, ErrorCode, ErrorMsg, Hello, Mode, Request, Status};

use crate::action::{Action, Effect};
use crate::keymap::{self, Command, Context, Step};
use crate::state::{Connection, Editor, Entry, Input, Llm, Pane, Pending, State, TranscriptLine};
use crate::view::{areas, first_row, pane_rows};

/// Every this many ticks (about seconds) a `status` request refreshes the header: STT's
/// detail, the LLM's reachability, the viewer count.
pub const STATUS_EVERY_TICKS: u64 = 5;

/// Applies `action` to `state` and says what must happen outside.
pub fn update(state: &mut State, action: Action) -> Vec<Effect> {
    match action {
        Action::Key(key) => keys(state, key),
        Action::Mouse(mouse) => mouse_event(state, mouse),
        Action::Paste(text) => {
            if let Some(editor) = state.input.editor_mut() {
                for c in text.chars() {
                    editor.insert(if c.is_control() { ' ' } else { c });
                }
            }
            vec![]
        }
        Action::Resize { width, height } => {
            state.area = ratatui::layout::Rect::new(0, 0, width, height);
            vec![]
        }
        Action::LinkUp(hello) => link_up(state, &hello),
        Action::LinkDown(why) => {
            if state.is_up() {
                state.push_entry(Entry::Notice(
                    "lost the assistant; reconnecting on its own".into(),
                ));
            }
            state.connection = Connection::Down { why };
            // The rest of a streaming reply went with the link: Enter must not keep stopping it.
            state.end_streaming();
            state.stt_healthy = None;
            state.speaking = None;
            state.backlog = 0;
            state.inference_queue = 0;
            state.inference_busy = false;
            vec![]
        }
        Action::Event(event) => assistant_event(state, event),
        Action::Reply { request, outcome } => reply(state, &request, outcome),
        Action::Tick => {
            state.ticks += 1;
            if state.is_up() && state.ticks.is_multiple_of(STATUS_EVERY_TICKS) {
                vec![Effect::Send(Request::Status)]
            } else {
                vec![]
            }
        }
        Action::Quit => vec![Effect::Quit],
    }
}

fn link_up(state: &mut State, hello: &Hello) -> Vec<Effect> {
    if matches!(state.connection, Connection::Down { .. }) {
        state.push_entry(Entry::Notice(format!("reconnected to {} {}", hello.peer, hello.version)));
    }
    state.connection = Connection::Up { peer: format!("{} {}", hello.peer, hello.version) };
    // A subscription does not replay the state: read it.
    vec![Effect::Send(Request::Status)]
}

// ---------------------------------------------------------------------------------------
// Keys.

/// How long Enter lets the assistant wait for the last words before it runs or refuses the
/// command (`command_execute {wait_ms}`): Enter often comes the moment speech stops.
pub const EXECUTE_WAIT_MS: u64 = 3000;

/// What a key does, given what keys mean now ([`Input`]).
pub fn keys(state: &mut State, key: KeyEvent) -> Vec<Effect> {
    if key.kind == KeyEventKind::Release {
        return vec![];
    }
    let context = Context::of(&state.input);
    let Some(command) = keymap::lookup(context, &key) else {
        if let Some(editor) = state.input.editor_mut() {
            let plain = !key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
            if let (KeyCode::Char(c), true) = (key.code, plain) {
                editor.insert(c);
            }
        }
        return vec![];
    };
    let send = |request| vec![Effect::Send(request)];
    if let Some(editor) = state.input.editor_mut() {
        match command {
            Command::Left => editor.left(),
            Command::Right => editor.right(),
            Command::LineStart => editor.home(),
            Command::LineEnd => editor.end(),
            Command::CutBefore => editor.kill_to_start(),
            Command::CutAfter => editor.kill_to_end(),
            Command::Backspace => editor.backspace(),
            Command::Delete => editor.delete(),
            _ => {}
        }
    }
    match command {
        Command::Quit => vec![Effect::Quit],
        Command::Arm => send(Request::CommandStart),
        // Never a turn queued behind a streaming reply: Enter stops it first.
        Command::Execute if state.enter_stops_reply() => send(Request::ChatStop),
        Command::Execute => send(Request::CommandExecute { wait_ms: Some(EXECUTE_WAIT_MS) }),
        // Only an armed or running command can be cancelled; a reflexive Esc elsewhere is no
        // error.
        Command::Cancel if matches!(state.mode, Mode::CommandArmed | Mode::Executing) => {
            send(Request::CommandCancel)
        }
        Command::Cancel => vec![],
        Command::Edit => {
            if state.mode == Mode::CommandArmed {
                state.input = Input::Editing(Editor::new(&state.buffer));
            } else {
                state.push_entry(Entry::Notice(
                    "nothing to edit: press a to arm a command first".into(),
                ));
            }
            vec![]
        }
        Command::ToggleChat => send(Request::ChatToggle),
        Command::ToggleDictate => send(Request::DictateToggle),
        Command::ToggleVoice => send(Request::VoiceToggle),
        Command::NextActions => send(Request::Task(stt_proto::TaskRequest::Next { limit: None })),
        Command::ToggleTriage => {
            if state.options.triage {
                state.triage_shown = !state.triage_shown;
            } else {
                state.push_entry(Entry::Notice(
                    "triage is off: set [triage] enabled = true (docs/TRIAGE.md)".into(),
                ));
            }
            vec![]
        }
        Command::OpenChat => {
            state.input = Input::Chatting(Editor::default());
            vec![]
        }
        Command::OpenChatCommand => {
            state.input = Input::Chatting(Editor::new("/"));
            vec![]
        }
        Command::SendChat => send_chat(state),
        Command::CloseChat => {
            state.input = Input::Normal;
            vec![]
        }
        Command::AskClear => {
            state.input = Input::ConfirmClear;
            vec![]
        }
        Command::Allow | Command::Deny => match state.pending.first() {
            Some(pending) => {
                let call_id = Some(pending.call_id.clone());
                send(if command == Command::Allow {
                    Request::Confirm { call_id }
                } else {
                    Request::Deny { call_id }
                })
            }
            None => vec![],
        },
        Command::SwitchPane => {
            state.focus = match state.focus {
                Pane::Transcripts => Pane::Conversation,
                Pane::Conversation => Pane::Transcripts,
            };
            vec![]
        }
        Command::Scroll(step) => scroll(state, step),
        Command::SendEdit => match std::mem::take(&mut state.input) {
            Input::Editing(editor) => send(Request::CommandEdit { text: editor.text() }),
            other => {
                state.input = other;
                vec![]
            }
        },
        Command::AbandonEdit | Command::KeepAll => {
            state.input = Input::Normal;
            vec![]
        }
        Command::Clear => {
            state.input = Input::Normal;
            send(Request::Clear)
        }
        Command::Left
        | Command::Right
        | Command::LineStart
        | Command::LineEnd
        | Command::CutBefore
        | Command::CutAfter
        | Command::Backspace
        | Command::Delete => vec![],
    }
}

/// Enter on the chat line: stops the reply that streams, else sends the line (a `/` line as
/// a slash command) and empties it for the next; an empty line sends nothing.
fn send_chat(state: &mut State) -> Vec<Effect> {
    if state.enter_stops_reply() {
        return vec![Effect::Send(Request::ChatStop)];
    }
    let Input::Chatting(editor) = &mut state.input else { return vec![] };
    let text = editor.text();
    let line = text.trim();
    if line.is_empty() {
        return vec![];
    }
    let request = if line.starts_with('/') {
        Request::ChatCommand { line: line.into() }
    } else {
        Request::ChatSend { text: line.into() }
    };
    *editor = Editor::default();
    vec![Effect::Send(request)]
}

/// Rows one turn of the mouse wheel scrolls.
const WHEEL_ROWS: usize = 3;

/// The wheel scrolls the pane under the pointer; a click focuses it.
fn mouse_event(state: &mut State, mouse: MouseEvent) -> Vec<Effect> {
    let at = Position::new(mouse.column, mouse.row);
    let parts = areas(state, state.area);
    let under = [Pane::Transcripts, Pane::Conversation]
        .into_iter()
        .find(|pane| parts.pane(*pane).contains(at));
    match mouse.kind {
        MouseEventKind::ScrollUp | MouseEventKind::ScrollDown => {
            let pane = under.unwrap_or(state.focus);
            let step = if mouse.kind == MouseEventKind::ScrollUp {
                Step::Up(WHEEL_ROWS)
            } else {
                Step::Down(WHEEL_ROWS)
            };
            scroll_pane(state, pane, step)
        }
        MouseEventKind::Down(MouseButton::Left) => {
            if let Some(pane) = under {
                state.focus = pane;
            }
            vec![]
        }
        _ => vec![],
    }
}

/// Scrolls the focused pane.
fn scroll(state: &mut State, step: Step) -> Vec<Effect> {
    scroll_pane(state, state.focus, step)
}

/// Scrolls `pane`. Reaching the bottom sticks to it again, so new lines are followed;
/// anywhere above leaves the view where the person put it.
fn scroll_pane(state: &mut State, pane: Pane, step: Step) -> Vec<Effect> {
    let (rows, height) = pane_rows(state, pane);
    let rows = rows.len();
    let bottom = rows.saturating_sub(height);
    let now = first_row(state.scroll(pane), rows, height);
    let page = height.saturating_sub(1).max(1);
    let to = match step {
        Step::PageUp => now.saturating_sub(page),
        Step::PageDown => now.saturating_add(page),
        Step::Up(n) => now.saturating_sub(n),
        Step::Down(n) => now.saturating_add(n),
        Step::Top => 0,
        Step::Bottom => bottom,
    };
    state.scroll_mut(pane).top = (to < bottom).then_some(to);
    vec![]
}

// ---------------------------------------------------------------------------------------
// The assistant.

fn assistant_event(state: &mut State, event: AssistantEvent) -> Vec<Effect> {
    match event {
        AssistantEvent::Wake(wake) => state.last_wake = Some((wake.phrase, wake.score)),
        AssistantEvent::Mode { mode } => set_mode(state, mode),
        AssistantEvent::CommandText { text, edited } => {
            state.buffer = text;
            state.buffer_edited = edited;
        }
        AssistantEvent::Transcript(t) => {
            // An empty final is the assistant's own voice heard back (or nothing real): no
            // line, but the segment is over.
            if !t.text.trim().is_empty() {
                state.push_transcript(TranscriptLine {
                    seg_id: t.seg_id,
                    start: t.start,
                    language: t.language,
                    speaker: t.speaker,
                    duration: t.duration,
                    text: t.text.trim().to_owned(),
                });
            }
            if state.speaking == Some(t.seg_id) {
                state.speaking = None;
            }
            if state.live.as_ref().is_some_and(|live| live.seg_id <= t.seg_id) {
                state.live = None;
            }
        }
        AssistantEvent::TranscriptPartial(partial) => state.live = Some(partial),
        AssistantEvent::SpeechStart(start) => {
            state.speaking = Some(start.seg_id);
            // An earlier segment's words that no final replaced: it heard nothing real.
            if state.live.as_ref().is_some_and(|live| live.seg_id < start.seg_id) {
                state.live = None;
            }
        }
        AssistantEvent::SpeechStop(stop) => {
            if state.speaking == Some(stop.seg_id) {
                state.speaking = None;
            }
        }
        // Its words are on screen already, line by line; triage shows what it makes of it.
        AssistantEvent::TurnEnded(_) => {}
        // The content stage of an older window than the one shown is old news.
        AssistantEvent::Triage(triage) => {
            if state.triage.as_ref().is_none_or(|shown| shown.id <= triage.id) {
                state.triage = Some(triage);
            }
        }
        AssistantEvent::ToolCall(call) => {
            let args = compact(&call.args);
            if call.awaiting_confirmation {
                state.pending.push(Pending {
                    call_id: call.call_id.clone(),
                    tool: call.tool.clone(),
                    args: args.clone(),
                    side_effect: call.side_effect,
                    outside: call.outside.clone(),
                });
            }
            state.push_entry(Entry::ToolCall {
                call_id: call.call_id,
                tool: call.tool,
                args,
                side_effect: call.side_effect,
                requires_confirmation: call.requires_confirmation,
            });
        }
        AssistantEvent::ToolResult(result) => {
            state.pending.retain(|p| p.call_id != result.call_id);
            state.push_entry(Entry::ToolResult {
                tool: result.tool,
                ok: result.ok,
                result: result.result,
                latency_ms: result.latency_ms,
            });
        }
        AssistantEvent::ChatMessage(message) => chat(state, message),
        AssistantEvent::ChatSession(session) => state.session = Some(session),
        AssistantEvent::Cleared {} => {
            state.triage = None;
            state.entries.clear();
            state.conversation_scroll.top = None;
            state.push_entry(Entry::Notice("conversation cleared".into()));
        }
        AssistantEvent::Heartbeat(beat) => {
            set_mode(state, beat.mode);
            let mut effects = vec![];
            if state.stt_healthy.is_some_and(|was| was != beat.stt_healthy) {
                // Health changed: read why (or that it is fine again).
                effects.push(Effect::Send(Request::Status));
            }
            if beat.stt_healthy {
                state.stt_detail.clear();
            }
            state.stt_healthy = Some(beat.stt_healthy);
            state.backlog = beat.daemon_backlog;
            state.stt_remote = beat.stt_remote;
            state.wake = beat.wake;
            state.inference_queue = beat.inference_queue;
            state.inference_busy = beat.inference_busy;
            return effects;
        }
        AssistantEvent::Status(status) => apply_status(state, status),
        AssistantEvent::Error(error) => push_error(state, error),
        AssistantEvent::Hello(_)
        | AssistantEvent::Ack(_)
        | AssistantEvent::Speakers(_)
        | AssistantEvent::SpeakerList(_)
        | AssistantEvent::ChatOutput { .. }
        | AssistantEvent::MemoryOutput { .. }
        | AssistantEvent::TaskOutput { .. }
        | AssistantEvent::IntentOutput { .. } => {}
    }
    vec![]
}

fn set_mode(state: &mut State, mode: Mode) {
    let was = state.mode;
    if was == mode {
        return;
    }
    state.mode = mode;
    if mode == Mode::Executing {
        state
            .push_entry(Entry::Command { text: state.buffer.clone(), edited: state.buffer_edited });
    }
    if mode != Mode::CommandArmed {
        // The buffer is gone (executed, cancelled): an edit of it has nothing to replace.
        if matches!(state.input, Input::Editing(_)) {
            state.input = Input::Normal;
            state
                .push_entry(Entry::Notice("edit abandoned: the command is no longer armed".into()));
        }
    }
    if matches!(mode, Mode::Idle | Mode::Chat) {
        state.buffer.clear();
        state.buffer_edited = false;
    }
}

fn chat(state: &mut State, message: ChatMessage) {
    let found = state.entries.iter_mut().rev().find_map(|entry| match entry {
        Entry::Chat { id, text, streaming, stopped, .. } if *id == message.id => {
            Some((text, streaming, stopped))
        }
        _ => None,
    });
    match found {
        Some((text, streaming, stopped)) => {
            if message.partial {
                text.push_str(&message.text);
            } else {
                *text = message.text;
            }
            *streaming = message.partial;
            *stopped = message.stopped;
        }
        None => state.push_entry(Entry::Chat {
            id: message.id,
            role: message.role,
            speaker: message.speaker,
            text: message.text,
            streaming: message.partial,
            stopped: message.stopped,
        }),
    }
}

fn apply_status(state: &mut State, status: Status) {
    state.buffer = status.command_buffer;
    state.buffer_edited = status.command_edited;
    set_mode(state, status.mode);
    state.stt_healthy = Some(status.stt_healthy);
    state.stt_detail = status.stt_detail;
    state.llm = Some(Llm {
        enabled: status.llm_enabled,
        endpoint: status.llm_endpoint,
        reachable: status.llm_reachable,
    });
    state.inference_queue = status.inference_queue;
    state.inference_busy = status.inference_busy;
    state.viewers = Some(status.viewers);
    state.voice = status.voice;
    state.session = status.chat.map(|chat| *chat);
}

fn push_error(state: &mut State, error: ErrorMsg) {
    state.push_entry(Entry::Error { code: Some(error.code.to_string()), message: error.message });
}

fn reply(
    state: &mut State,
    request: &Request,
    outcome: Result<AssistantEvent, String>,
) -> Vec<Effect> {
    match outcome {
        Ok(AssistantEvent::Status(status)) => apply_status(state, status),
        Ok(AssistantEvent::Error(error)) => {
            if error.code == ErrorCode::NothingPending {
                match request {
                    // The call timed out or was answered elsewhere: stop asking.
                    Request::Confirm { call_id: Some(id) }
                    | Request::Deny { call_id: Some(id) } => {
                        state.pending.retain(|p| &p.call_id != id);
                    }
                    // No reply streams, whatever arrived of it: Enter sends again.
                    Request::ChatStop => state.end_streaming(),
                    _ => {}
                }
            }
            push_error(state, error);
        }
        // What to do next, asked with its key: a line each.
        Ok(AssistantEvent::TaskOutput { text, .. }) => {
            state.push_entry(Entry::Notice("what to do next (stt-ctl task next):".into()));
            for line in text.lines() {
                state.push_entry(Entry::Notice(format!("  {line}")));
            }
        }
        // A slash command's `chat_output` comes to every viewer as a `note` chat message too:
        // that one is shown, this one would be a second copy.
        Ok(_) => {}
        // The header already says the assistant is away; a failed refresh adds nothing.
        Err(_) if *request == Request::Status => {}
        Err(why) => state.push_entry(Entry::Error {
            code: None,
            message: format!("cannot send {}: {why}", request.kind()),
        }),
    }
    vec![]
}

fn compact(args: &serde_json::Value) -> String {
    serde_json::to_string(args).unwrap_or_else(|_| args.to_string())
}
