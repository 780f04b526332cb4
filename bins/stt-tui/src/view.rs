//! Drawing: [`view`] turns a `&State` into a frame and never changes it.
//!
//! The screen, top to bottom: a header (connection, mode, STT health, the LLM), the
//! transcripts pane, the conversation / command output pane (its first row the chat
//! session: provider, model, endpoint, tokens), a panel shown only when there is something
//! to answer, a command buffer to see or a line to type (the buffer, its editor, the chat
//! line, a tool call waiting for confirmation, the "clear?" question), and a footer of the
//! keys that work now. With `[triage]` on, the triage panel (the last window's signals as
//! bars, and what the model extracted) stands to the right of the two panes. The layout and the wrapped rows of each pane are public so that
//! [`update`](crate::update::update) scrolls by exactly what is on screen.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use stt_proto::{ChatRole, ChatSession, Mode, TokenUsage, TranscriptPartial, Triage};

use crate::keymap::{self, Situation};
use crate::state::{Connection, Entry, Input, Pane, Pending, Scroll, State, TranscriptLine};
use crate::wrap::{char_width, wrap};

/// Rows of the header, borders included.
const HEADER_ROWS: u16 = 5;
/// The most rows of text the bottom panel grows to.
const PANEL_MAX_ROWS: usize = 3;
/// Continuation rows of a wrapped line start this far in.
const INDENT: usize = 2;
/// The triage panel's width, borders included: a third of the screen, within these.
const TRIAGE_COLUMNS: (u16, u16) = (30, 44);

/// Where each part of the screen goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    /// Connection, mode, STT, LLM.
    pub header: Rect,
    /// The transcripts pane, borders included.
    pub transcripts: Rect,
    /// The conversation / command output pane, borders included.
    pub conversation: Rect,
    /// The bottom panel, when one is shown.
    pub panel: Option<Rect>,
    /// The triage panel, when shown.
    pub triage: Option<Rect>,
    /// Key hints.
    pub footer: Rect,
}

impl Areas {
    /// A pane's area, borders included.
    pub fn pane(&self, pane: Pane) -> Rect {
        match pane {
            Pane::Transcripts => self.transcripts,
            Pane::Conversation => self.conversation,
        }
    }
}

/// Lays out `area` for `state`.
pub fn areas(state: &State, area: Rect) -> Areas {
    let panel_rows = panel(state).map_or(0, |p| {
        let inner = usize::from(area.width.saturating_sub(2));
        let rows = if p.is_line() { 1 } else { p.rows(inner).len() };
        u16::try_from(rows.clamp(1, PANEL_MAX_ROWS)).unwrap_or(1) + 2
    });
    let [header, body, panel_area, footer] = Layout::vertical([
        Constraint::Length(HEADER_ROWS),
        Constraint::Min(0),
        Constraint::Length(panel_rows),
        Constraint::Length(1),
    ])
    .areas(area);
    let (body, triage) = if state.shows_triage() {
        let width = (body.width / 3).clamp(TRIAGE_COLUMNS.0, TRIAGE_COLUMNS.1);
        let [panes, triage] =
            Layout::horizontal([Constraint::Min(0), Constraint::Length(width)]).areas(body);
        (panes, Some(triage))
    } else {
        (body, None)
    };
    let [transcripts, conversation] =
        Layout::vertical([Constraint::Fill(2), Constraint::Fill(3)]).areas(body);
    Areas {
        header,
        transcripts,
        conversation,
        panel: (panel_rows > 0).then_some(panel_area),
        triage,
        footer,
    }
}

/// Where a pane's scrolling text goes: inside its borders, below the conversation's session
/// row when it has one.
fn pane_body(state: &State, pane: Pane, rect: Rect) -> Rect {
    let inner = inner(rect);
    if pane == Pane::Conversation && state.session.is_some() {
        let [_, body] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(inner);
        body
    } else {
        inner
    }
}

/// A pane's text, wrapped to its width, and the rows it has for it.
pub fn pane_rows(state: &State, pane: Pane) -> (Vec<Line<'static>>, usize) {
    let inner = pane_body(state, pane, areas(state, state.area).pane(pane));
    let width = usize::from(inner.width);
    let lines = match pane {
        Pane::Transcripts => transcript_lines(state),
        Pane::Conversation => conversation_lines(state),
    };
    let rows = lines.iter().flat_map(|line| wrap(line, width, INDENT)).collect();
    (rows, usize::from(inner.height))
}

/// The first row shown of a pane holding `rows` rows in `height`, scrolled to `scroll`.
pub fn first_row(scroll: Scroll, rows: usize, height: usize) -> usize {
    let bottom = rows.saturating_sub(height);
    scroll.top.map_or(bottom, |top| top.min(bottom))
}

/// Where the terminal's cursor goes: in the line being edited (the command or the chat
/// line), else hidden.
pub fn cursor(state: &State, area: Rect) -> Option<Position> {
    let editor = state.input.editor()?;
    let field = inner(areas(state, area).panel?);
    let start = edit_window(editor.chars(), editor.cursor(), usize::from(field.width));
    let before: usize = editor.chars()[start..editor.cursor()].iter().map(|c| char_width(*c)).sum();
    let x = field.x.saturating_add(u16::try_from(before).unwrap_or(u16::MAX));
    Some(Position::new(x.min(field.right().saturating_sub(1)), field.y))
}

/// Draws the whole screen.
pub fn view(state: &State, frame: &mut Frame<'_>) {
    let area = frame.area();
    let parts = areas(state, area);
    frame.render_widget(header(state, parts.header), parts.header);
    for pane in [Pane::Transcripts, Pane::Conversation] {
        draw_pane(state, pane, parts.pane(pane), frame);
    }
    if let (Some(rect), Some(panel)) = (parts.panel, panel(state)) {
        draw_panel(state, &panel, rect, frame);
    }
    if let Some(rect) = parts.triage {
        let block = Block::bordered().title(" triage ").border_style(dim());
        let width = usize::from(block.inner(rect).width);
        let rows: Vec<Line<'static>> = triage_lines(state.triage.as_ref(), width)
            .iter()
            .flat_map(|line| wrap(line, width, INDENT))
            .collect();
        frame.render_widget(Paragraph::new(rows).block(block), rect);
    }
    frame.render_widget(Paragraph::new(footer(state)), parts.footer);
    if let Some(position) = cursor(state, area) {
        frame.set_cursor_position(position);
    }
}

fn inner(rect: Rect) -> Rect {
    Block::bordered().inner(rect)
}

fn dim() -> Style {
    Style::new().fg(Color::DarkGray)
}

/// A speaker's name in bold green, or `Unknown` in bold red.
fn speaker_span(name: Option<&str>) -> Span<'static> {
    match name {
        Some(name) => Span::styled(name.to_owned(), Style::new().green().bold()),
        None => Span::styled("Unknown", Style::new().red().bold()),
    }
}

// ---------------------------------------------------------------------------------------
// Header.

fn header(state: &State, area: Rect) -> Paragraph<'static> {
    let connection = match &state.connection {
        Connection::Connecting => Line::from(vec![
            Span::styled("connecting", Style::new().yellow().bold()),
            Span::raw(format!(" to {} …", state.socket)),
        ]),
        Connection::Up { peer } => {
            let mut spans = vec![
                Span::styled("● connected", Style::new().green().bold()),
                Span::raw(format!(" to {peer} as a viewer")),
            ];
            if let Some(n) = state.viewers {
                let s = if n == 1 { "" } else { "s" };
                spans.push(Span::styled(format!(" ({n} viewer{s} attached)"), dim()));
            }
            Line::from(spans)
        }
        Connection::Down { .. } => Line::from(vec![
            Span::styled("✗ disconnected, retrying", Style::new().red().bold()),
            Span::styled(" (reconnects on its own; q quits)", dim()),
        ]),
    };
    if let Connection::Down { why } = &state.connection {
        // What the mode, STT and the LLM were is stale now; why the link is down matters.
        let width = usize::from(inner(area).width);
        let mut lines = vec![connection];
        lines.extend(
            wrap(&Line::from(Span::styled(why.clone(), Style::new().red())), width, 0)
                .into_iter()
                .take(usize::from(HEADER_ROWS) - 3),
        );
        return Paragraph::new(lines).block(Block::bordered().title(" stt ").border_style(dim()));
    }
    let mut status = vec![Span::styled("mode ", dim())];
    status.push(mode_badge(state.mode));
    status.push(Span::styled("   STT ", dim()));
    match state.stt_healthy {
        Some(true) => status.push(Span::styled("ok", Style::new().green())),
        Some(false) => {
            status.push(Span::styled("down", Style::new().red().bold()));
            if !state.stt_detail.is_empty() {
                status.push(Span::styled(format!(": {}", state.stt_detail), Style::new().red()));
            }
        }
        None => status.push(Span::styled("?", dim())),
    }
    if let Some(host) = &state.stt_remote {
        // Audio leaves the machine ([daemon].asr = "remote"): never unsaid.
        status.push(Span::styled(format!("   audio → {host}"), Style::new().yellow().bold()));
    }
    if let Some(phrase) = &state.wake {
        // Listening for the wake phrase: what it is, and how sure the last one heard was.
        status.push(Span::styled(format!("   wake: {phrase}"), Style::new().green()));
        if let Some((_, score)) = &state.last_wake {
            status.push(Span::styled(format!(" (last heard {score:.2})"), dim()));
        }
    }
    if state.voice {
        // Replies are said aloud: `v` silences them.
        status.push(Span::styled("   voice on", Style::new().green()));
    }
    if let Some(seg) = state.speaking {
        status.push(Span::styled(format!("   ● speech open (segment {seg})"), Style::new().cyan()));
    }
    Paragraph::new(vec![connection, Line::from(status), llm_line(state)])
        .block(Block::bordered().title(" stt ").border_style(dim()))
}

fn llm_line(state: &State) -> Line<'static> {
    let mut llm = vec![Span::styled("LLM ", dim())];
    match &state.llm {
        None => llm.push(Span::styled("?", dim())),
        Some(l) if !l.enabled => {
            llm.push(Span::styled("off ([llm].enabled = false)", dim()));
        }
        Some(l) => {
            llm.push(Span::raw(l.endpoint.clone()));
            llm.push(match l.reachable {
                Some(true) => Span::styled(" reachable", Style::new().green()),
                Some(false) => Span::styled(" unreachable", Style::new().red().bold()),
                None => Span::styled(" not probed yet", dim()),
            });
        }
    }
    if state.is_up() && state.inference_busy {
        llm.push(Span::styled(" · busy", Style::new().yellow()));
    }
    Line::from(llm)
}

fn mode_badge(mode: Mode) -> Span<'static> {
    match mode {
        Mode::Idle => Span::styled("idle", Style::new().bold()),
        Mode::CommandArmed => Span::styled("COMMAND ARMED", Style::new().yellow().bold()),
        Mode::Executing => Span::styled("EXECUTING", Style::new().magenta().bold()),
        Mode::Chat => Span::styled("CHAT", Style::new().cyan().bold()),
        Mode::Dictate => Span::styled("DICTATING", Style::new().green().bold()),
    }
}

// ---------------------------------------------------------------------------------------
// Panes.

fn draw_pane(state: &State, pane: Pane, rect: Rect, frame: &mut Frame<'_>) {
    let (rows, height) = pane_rows(state, pane);
    let scroll = state.scroll(pane);
    let top = first_row(scroll, rows.len(), height);
    let shown: Vec<Line<'static>> = rows.into_iter().skip(top).take(height).collect();
    if let (Pane::Conversation, Some(session)) = (pane, &state.session) {
        let area = inner(rect);
        let row = Rect { height: area.height.min(1), ..area };
        frame.render_widget(Paragraph::new(session_line(session)), row);
    }
    let body = pane_body(state, pane, rect);
    let mut block = Block::bordered().title(pane_title(state, pane));
    if state.focus == pane {
        block = block.border_style(Style::new().cyan());
    }
    if !scroll.sticks() {
        block = block.title_top(
            Line::from(Span::styled(" scrolled up: End follows ", Style::new().yellow()))
                .right_aligned(),
        );
    }
    frame.render_widget(block, rect);
    frame.render_widget(Paragraph::new(shown), body);
}

/// The chat session in one row: who answers (`llamacpp · qwen2.5 · 127.0.0.1:9931`),
/// whether it is still loading its model, and what the last turn and the session cost.
fn session_line(session: &ChatSession) -> Line<'static> {
    let gap = || Span::raw("   ");
    let dot = || Span::styled(" · ", dim());
    let mut spans = match &session.provider {
        Some(provider) => vec![Span::styled(provider.clone(), Style::new().cyan().bold())],
        None => vec![Span::styled("no model provider", Style::new().yellow())],
    };
    for part in [&session.model, &session.endpoint] {
        if !part.is_empty() {
            spans.extend([dot(), Span::raw(part.clone())]);
        }
    }
    if session.loading {
        spans.extend([gap(), Span::styled("loading model", Style::new().yellow().bold())]);
    }
    let mut usage = Vec::new();
    if let Some(last) = session.last {
        let mut text = format!("last {}", tokens(last));
        if last.cached > 0 {
            text.push_str(&format!(" ({} cached)", last.cached));
        }
        usage.push(text);
    }
    if session.total != TokenUsage::default() {
        usage.push(format!("total {}", tokens(session.total)));
    }
    if !usage.is_empty() {
        spans.extend([gap(), Span::styled(usage.join(" · "), dim())]);
    }
    Line::from(spans)
}

/// Prompt tokens up, completion tokens down: `412↑ 38↓`.
fn tokens(usage: TokenUsage) -> String {
    format!("{}↑ {}↓", usage.prompt, usage.completion)
}

fn pane_title(state: &State, pane: Pane) -> Line<'static> {
    match pane {
        Pane::Transcripts => Line::from(vec![
            Span::raw(" transcripts "),
            Span::styled(format!("[seg {}]", state.backlog), counter(state.backlog > 0)),
            Span::raw(" "),
        ]),
        Pane::Conversation => {
            let mut text = format!("[inf {}", state.inference_queue);
            if state.inference_busy {
                text.push_str(" · busy");
            }
            text.push(']');
            let active = state.inference_queue > 0 || state.inference_busy;
            Line::from(vec![
                Span::raw(" conversation / command output "),
                Span::styled(text, counter(active)),
                Span::raw(" "),
            ])
        }
    }
}

fn counter(active: bool) -> Style {
    if active { Style::new().yellow().bold() } else { Style::new() }
}

fn transcript_lines(state: &State) -> Vec<Line<'static>> {
    if state.transcripts.is_empty() && state.live.is_none() {
        return vec![Line::from(Span::styled("nothing heard yet", dim()))];
    }
    let timestamps = state.options.show_timestamps;
    let mut lines: Vec<Line<'static>> =
        state.transcripts.iter().map(|t| transcript_line(t, timestamps)).collect();
    if let Some(live) = &state.live {
        lines.push(live_line(live));
    }
    lines
}

/// The open line: the words being spoken, those that may still change dimmed.
fn live_line(live: &TranscriptPartial) -> Line<'static> {
    let (committed, tail) = live.split();
    Line::from(vec![
        Span::styled("… ", Style::new().cyan()),
        Span::raw(committed.to_owned()),
        Span::styled(tail.to_owned(), dim().italic()),
    ])
}

fn transcript_line(t: &TranscriptLine, timestamps: bool) -> Line<'static> {
    let mut spans = Vec::with_capacity(6);
    if timestamps {
        spans.push(Span::styled(format!("{} ", audio_time(t.start)), dim()));
    }
    spans.extend([
        Span::styled(format!("[{}] ", t.language), dim()),
        speaker_span(t.speaker.as_deref()),
        Span::styled(format!(" ({:.1}s)", t.duration), dim()),
        Span::raw(": "),
        Span::raw(t.text.clone()),
    ]);
    Line::from(spans)
}

/// Audio time as `m:ss`, or `h:mm:ss` from an hour on.
fn audio_time(seconds: f64) -> String {
    // Whole seconds; `as` saturates, and a time is never negative nor huge anyway.
    let total = seconds.max(0.0) as u64;
    let (h, m, s) = (total / 3600, total / 60 % 60, total % 60);
    if h > 0 { format!("{h}:{m:02}:{s:02}") } else { format!("{m}:{s:02}") }
}

fn conversation_lines(state: &State) -> Vec<Line<'static>> {
    if state.entries.is_empty() {
        return vec![Line::from(Span::styled(
            "nothing yet: a arms a command, t starts a chat",
            dim(),
        ))];
    }
    state.entries.iter().map(|entry| entry_line(state, entry)).collect()
}

fn entry_line(state: &State, entry: &Entry) -> Line<'static> {
    match entry {
        Entry::Chat { role: ChatRole::User, speaker, text, .. } => Line::from(vec![
            speaker_span(speaker.as_deref()),
            Span::raw(": "),
            Span::raw(text.clone()),
        ]),
        Entry::Chat { role: ChatRole::Assistant, text, streaming, stopped, .. } => {
            let mut spans = vec![
                Span::styled("assistant", Style::new().cyan().bold()),
                Span::raw(": "),
                Span::raw(text.clone()),
            ];
            if *streaming {
                spans.push(Span::styled(" …", dim()));
            }
            if *stopped {
                spans.push(Span::styled(" ⚠ stopped", Style::new().yellow().bold()));
            }
            Line::from(spans)
        }
        Entry::Chat { role: ChatRole::Error, text, .. } => Line::from(vec![
            Span::styled("error: ", Style::new().red().bold()),
            Span::styled(text.clone(), Style::new().red()),
        ]),
        // A role from a newer assistant is shown like a note.
        Entry::Chat { role: ChatRole::Note | ChatRole::Unknown, text, .. } => Line::from(vec![
            Span::styled("note: ", dim()),
            Span::styled(text.clone(), dim().add_modifier(Modifier::ITALIC)),
        ]),
        Entry::Command { text, edited } => Line::from(vec![
            Span::styled("command", Style::new().yellow().bold()),
            Span::styled(if *edited { " (edited)" } else { "" }, dim()),
            Span::raw(": "),
            Span::raw(text.clone()),
        ]),
        Entry::ToolCall { call_id, tool, args, side_effect, .. } => {
            let mut spans = vec![
                Span::styled("→ ", Style::new().magenta()),
                Span::styled(tool.clone(), Style::new().bold()),
                Span::raw(format!(" {args}")),
                Span::styled(format!(" [{side_effect}]"), dim()),
            ];
            if state.pending.iter().any(|p| &p.call_id == call_id) {
                spans.push(Span::styled(
                    " waiting for you: y allows, n denies",
                    Style::new().yellow().bold(),
                ));
            }
            Line::from(spans)
        }
        Entry::ToolResult { tool, ok, result, latency_ms } => {
            let (arrow, verdict) = if *ok {
                (Span::styled("← ", Style::new().green()), Span::raw(": "))
            } else {
                (
                    Span::styled("← ", Style::new().red()),
                    Span::styled(" failed: ", Style::new().red()),
                )
            };
            Line::from(vec![
                arrow,
                Span::styled(tool.clone(), Style::new().bold()),
                verdict,
                Span::raw(result.clone()),
                Span::styled(format!(" ({latency_ms} ms)"), dim()),
            ])
        }
        Entry::Error { code, message } => {
            let head = match code {
                Some(code) => format!("error ({code}): "),
                None => "error: ".to_owned(),
            };
            Line::from(vec![
                Span::styled(head, Style::new().red().bold()),
                Span::styled(message.clone(), Style::new().red()),
            ])
        }
        Entry::Notice(text) => Line::from(Span::styled(format!("· {text}"), Style::new().yellow())),
    }
}

// ---------------------------------------------------------------------------------------
// The bottom panel.

/// What the bottom panel shows, most urgent first.
enum Panel<'a> {
    ConfirmClear,
    Editing,
    Chatting,
    Confirm(&'a Pending),
    Buffer,
}

fn panel(state: &State) -> Option<Panel<'_>> {
    match &state.input {
        Input::ConfirmClear => return Some(Panel::ConfirmClear),
        Input::Editing(_) => return Some(Panel::Editing),
        Input::Chatting(_) => return Some(Panel::Chatting),
        Input::Normal => {}
    }
    if let Some(pending) = state.pending.first() {
        return Some(Panel::Confirm(pending));
    }
    (state.mode == Mode::CommandArmed && state.is_up()).then_some(Panel::Buffer)
}

impl Panel<'_> {
    /// Whether the panel is a line being edited (one row, with the cursor).
    fn is_line(&self) -> bool {
        matches!(self, Self::Editing | Self::Chatting)
    }

    fn title(&self, state: &State) -> Line<'static> {
        let text = match self {
            Self::ConfirmClear => " clear ".to_owned(),
            Self::Editing => " edit the command: Enter sends it, Esc abandons the edit ".to_owned(),
            // y and n are typed here: say how to answer a tool call that waits.
            Self::Chatting if !state.pending.is_empty() => {
                " chat: a tool call waits for you: Esc, then y allows or n denies ".to_owned()
            }
            Self::Chatting if state.enter_stops_reply() => {
                " chat: Enter stops the reply, Esc closes the line ".to_owned()
            }
            Self::Chatting => {
                " chat: Enter sends, /help lists the slash commands, Esc closes the line "
                    .to_owned()
            }
            Self::Confirm(_) => " confirm a tool call ".to_owned(),
            Self::Buffer if state.buffer_edited => " command buffer (edited) ".to_owned(),
            Self::Buffer => " command buffer ".to_owned(),
        };
        Line::from(text)
    }

    fn style(&self) -> Style {
        match self {
            Self::ConfirmClear | Self::Confirm(_) => Style::new().yellow(),
            Self::Editing | Self::Chatting => Style::new().cyan(),
            Self::Buffer => Style::new(),
        }
    }

    /// The panel's text wrapped to `width` (not used for a line being edited).
    fn rows(&self, width: usize) -> Vec<Line<'static>> {
        let line = match self {
            Self::ConfirmClear => Line::from(vec![
                Span::raw("Clear the conversation and the assistant's chat history?  "),
                Span::styled("y", Style::new().bold()),
                Span::raw(" clear  "),
                Span::styled("n", Style::new().bold()),
                Span::raw(" keep"),
            ]),
            Self::Confirm(p) => {
                let mut spans = vec![
                    Span::raw("Allow "),
                    Span::styled(p.tool.clone(), Style::new().bold()),
                    Span::raw(format!(" {} ", p.args)),
                    Span::styled(format!("[{}]", p.side_effect), dim()),
                    Span::raw("?  "),
                    Span::styled("y", Style::new().bold()),
                    Span::raw(" allow  "),
                    Span::styled("n", Style::new().bold()),
                    Span::raw(" deny"),
                ];
                if let Some(read) = &p.outside {
                    // The page may have asked for it: the person is told what was read.
                    let why =
                        format!("  (asked after reading {read}: allow only what you asked for)");
                    spans.push(Span::styled(why, Style::new().yellow()));
                }
                Line::from(spans)
            }
            Self::Editing | Self::Chatting | Self::Buffer => Line::default(),
        };
        wrap(&line, width, INDENT)
    }
}

fn draw_panel(state: &State, panel: &Panel<'_>, rect: Rect, frame: &mut Frame<'_>) {
    let block = Block::bordered().title(panel.title(state)).border_style(panel.style());
    let field = block.inner(rect);
    let width = usize::from(field.width);
    let rows = match panel {
        Panel::Editing | Panel::Chatting => {
            let Some(editor) = state.input.editor() else { return };
            let start = edit_window(editor.chars(), editor.cursor(), width);
            let text: String = editor.chars()[start..].iter().collect();
            vec![Line::from(text)]
        }
        Panel::Buffer if state.buffer.is_empty() => {
            vec![Line::from(Span::styled("listening: what you say now becomes the command", dim()))]
        }
        Panel::Buffer => wrap(&Line::from(state.buffer.clone()), width, 0),
        Panel::ConfirmClear | Panel::Confirm(_) => panel.rows(width),
    };
    // A buffer longer than the panel shows its end: the words just spoken.
    let skip = rows.len().saturating_sub(usize::from(field.height));
    let shown: Vec<Line<'static>> = rows.into_iter().skip(skip).collect();
    frame.render_widget(Paragraph::new(shown).block(block), rect);
}

/// The first character shown in an edit field `width` columns wide, so that the cursor
/// (which needs a column of its own at the end) is always in view.
fn edit_window(chars: &[char], cursor: usize, width: usize) -> usize {
    let room = width.saturating_sub(1);
    let mut start = cursor;
    let mut used = 0;
    while start > 0 && used + char_width(chars[start - 1]) <= room {
        start -= 1;
        used += char_width(chars[start]);
    }
    // Show as much as fits when the whole text does.
    let total: usize = chars.iter().map(|c| char_width(*c)).sum();
    if total < width { 0 } else { start }
}

// ---------------------------------------------------------------------------------------
// Triage.

/// The triage panel's lines, `width` columns wide: a bar for each signal (the strongest in
/// bold), then what the model extracted, or why it could not.
fn triage_lines(triage: Option<&Triage>, width: usize) -> Vec<Line<'static>> {
    let Some(triage) = triage else {
        return vec![Line::from(Span::styled(
            "what is said is sorted here when a turn ends",
            dim(),
        ))];
    };
    let name_width = triage.signals.iter().map(|s| s.category.chars().count()).max().unwrap_or(0);
    // "name " + bar + " 100%"
    let bar_width = width.saturating_sub(name_width + 6).max(1);
    let top = triage
        .signals
        .iter()
        .max_by(|a, b| a.confidence.total_cmp(&b.confidence))
        .map(|s| s.category.clone());
    let mut lines: Vec<Line<'static>> = triage
        .signals
        .iter()
        .map(|s| {
            let confidence = s.confidence.clamp(0.0, 1.0);
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss,
                reason = "a bar a few dozen cells long"
            )]
            let filled = ((confidence * bar_width as f32).round() as usize).min(bar_width);
            let style =
                if top.as_ref() == Some(&s.category) { Style::new().bold() } else { Style::new() };
            Line::from(vec![
                Span::styled(format!("{:<name_width$} ", s.category), style),
                Span::styled("█".repeat(filled), style.fg(Color::Cyan)),
                Span::styled("·".repeat(bar_width - filled), dim()),
                Span::styled(format!(" {:>3.0}%", confidence * 100.0), style),
            ])
        })
        .collect();
    if let Some(error) = &triage.error {
        lines.push(Line::default());
        lines.push(Line::from(Span::styled(
            format!("extraction failed: {error}"),
            Style::new().fg(Color::Red),
        )));
    }
    let Some(content) = &triage.content else { return lines };
    lines.push(Line::default());
    let label = |name: &str| Span::styled(format!("{name}: "), Style::new().bold());
    for task in &content.tasks {
        let mut text = task.what.clone();
        let about: Vec<&str> =
            [task.who.as_deref(), task.when.as_deref()].into_iter().flatten().collect();
        if !about.is_empty() {
            text.push_str(&format!(" ({})", about.join(", ")));
        }
        lines.push(Line::from(vec![label("task"), Span::raw(text)]));
    }
    for (name, list) in [("people", &content.people), ("dates", &content.dates)] {
        if !list.is_empty() {
            lines.push(Line::from(vec![label(name), Span::raw(list.join(", "))]));
        }
    }
    if let Some(decision) = &content.decision {
        lines.push(Line::from(vec![label("decision"), Span::raw(decision.clone())]));
    }
    if content.tasks.is_empty()
        && content.people.is_empty()
        && content.dates.is_empty()
        && content.decision.is_none()
    {
        lines.push(Line::from(Span::styled("the model found nothing to note", dim())));
    }
    lines
}

// ---------------------------------------------------------------------------------------
// Footer.

fn footer(state: &State) -> Line<'static> {
    let keys = keymap::footer(Situation::of(state));
    let mut spans = Vec::new();
    if !state.is_up() {
        spans.push(Span::styled(" not connected ", Style::new().red().bold()));
    }
    for (key, what) in keys {
        spans.push(Span::styled(format!(" {key}"), Style::new().bold()));
        spans.push(Span::styled(format!(" {what} "), dim()));
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audio_times_read_as_minutes_or_hours() {
        let check = |s: f64, expected: &str| assert_eq!(audio_time(s), expected, "{s}");
        check(0.0, "0:00");
        check(-1.0, "0:00");
        check(12.48, "0:12");
        check(61.0, "1:01");
        check(3599.9, "59:59");
        check(3600.0, "1:00:00");
        check(36_061.0, "10:01:01");
    }

    #[test]
    fn the_edit_window_keeps_the_cursor_in_view() {
        let chars: Vec<char> = "abcdefghij".chars().collect();
        assert_eq!(edit_window(&chars, 10, 20), 0, "it all fits");
        assert_eq!(edit_window(&chars, 10, 5), 6, "the end, and a column for the cursor");
        assert_eq!(edit_window(&chars, 3, 5), 0);
        assert_eq!(edit_window(&chars, 7, 5), 3);
    }

    #[test]
    fn a_scrolled_pane_stays_where_it_was_and_a_stuck_one_follows() {
        assert_eq!(first_row(Scroll { top: None }, 50, 10), 40);
        assert_eq!(first_row(Scroll { top: Some(5) }, 50, 10), 5);
        assert_eq!(first_row(Scroll { top: Some(45) }, 50, 10), 40);
        assert_eq!(first_row(Scroll { top: None }, 3, 10), 0);
    }
}
