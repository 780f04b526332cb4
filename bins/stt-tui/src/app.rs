//! The event loop, and the tasks that feed it.
//!
//! [`run_loop`] draws, waits for the next [`Action`] on one channel, runs
//! [`update`](crate::update::update), hands each [`Effect`] to its caller, and draws
//! again. It knows nothing of terminals or sockets, so tests drive it with a `TestBackend`
//! and a channel.
//!
//! Redraws are paced: keys and every other event draw at once, but the pieces of a
//! streaming reply ([`Pace::Stream`]) draw at most once per [`STREAM_FRAME`] (about eight
//! times a second) however fast the tokens come; what arrived in between is drawn when
//! that frame is due, even if nothing else comes. [`should_draw`] is the rule.
//!
//! [`run`] is the real program: it feeds that channel from four tasks (terminal input, the
//! viewer subscription with its reconnects, a one-second tick, and SIGINT/SIGTERM/SIGHUP)
//! and carries out [`Effect::Send`] by spawning a one-shot request whose reply comes back
//! as [`Action::Reply`], so a slow or absent assistant never blocks a key press.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use futures_util::StreamExt;
use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::crossterm::event::{Event, EventStream, MouseButton, MouseEventKind};
use stt_bus::{Link, Subscription};
use stt_proto::{AssistantEvent, Request};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::action::{Action, Effect};
use crate::state::{Options, State};
use crate::terminal::Screen;
use crate::update::update;
use crate::view::view;

/// How many actions may wait for the loop; the sources wait when it is full.
pub const ACTION_QUEUE: usize = 256;
/// How long a request may take before its failure is shown.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);
/// How often [`Action::Tick`] comes.
pub const TICK: Duration = Duration::from_secs(1);
/// At most this many actions are applied between two draws, so a flood of events still
/// lets the screen move.
const BATCH: usize = 64;
/// The least time between two draws for the pieces of a streaming reply: at most about
/// eight redraws a second, however fast the tokens come.
pub const STREAM_FRAME: Duration = Duration::from_millis(125);

/// How soon what an action changed must be on screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Pace {
    /// A piece of a streaming reply: it can wait for the next frame ([`STREAM_FRAME`]).
    Stream,
    /// Anything else (a key, the end of a reply, any other event): at once.
    Now,
}

impl Pace {
    /// How soon `action` must be drawn.
    pub fn of(action: &Action) -> Self {
        match action {
            Action::Event(AssistantEvent::ChatMessage(message)) if message.partial => Self::Stream,
            _ => Self::Now,
        }
    }
}

/// Whether the loop draws at `now` what it applied since its draw at `last_draw`, the most
/// urgent of which was of `pace`: yes for [`Pace::Now`]; for [`Pace::Stream`] only once a
/// [`STREAM_FRAME`] has passed (until then the loop waits for that frame).
pub fn should_draw(now: Instant, last_draw: Instant, pace: Pace) -> bool {
    pace == Pace::Now || now.saturating_duration_since(last_draw) >= STREAM_FRAME
}

/// Draws `state`, then applies actions from `actions` until an [`Effect::Quit`] or until
/// every sender is gone, redrawing after each batch as [`should_draw`] says; what it holds
/// back is drawn once its [`STREAM_FRAME`] is due. Every other effect goes to `perform`.
pub async fn run_loop<B>(
    terminal: &mut Terminal<B>,
    state: &mut State,
    actions: &mut mpsc::Receiver<Action>,
    mut perform: impl FnMut(Effect),
) -> anyhow::Result<()>
where
    B: Backend,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let mut draw = |state: &State| -> anyhow::Result<Instant> {
        terminal.draw(|frame| view(state, frame)).context("cannot draw on the terminal")?;
        Ok(Instant::now())
    };
    let mut last_draw = draw(state)?;
    // Applied but not drawn yet (pieces of a streaming reply waiting for their frame).
    let mut behind = false;
    loop {
        let received = if behind {
            tokio::select! {
                biased;
                action = actions.recv() => action,
                () = tokio::time::sleep_until(last_draw + STREAM_FRAME) => {
                    last_draw = draw(state)?;
                    behind = false;
                    continue;
                }
            }
        } else {
            actions.recv().await
        };
        let Some(first) = received else { return Ok(()) };
        let mut next = Some(first);
        let mut applied = 0;
        let mut pace = Pace::Stream;
        while let Some(action) = next {
            pace = pace.max(Pace::of(&action));
            for effect in update(state, action) {
                match effect {
                    Effect::Quit => return Ok(()),
                    other => perform(other),
                }
            }
            applied += 1;
            next = if applied < BATCH { actions.try_recv().ok() } else { None };
        }
        if should_draw(Instant::now(), last_draw, pace) {
            last_draw = draw(state)?;
            behind = false;
        } else {
            behind = true;
        }
    }
}

/// Runs the interactive screen against the assistant at `socket` until `q`.
pub async fn run(socket: PathBuf, options: Options) -> anyhow::Result<()> {
    let (tx, mut rx) = mpsc::channel(ACTION_QUEUE);
    let mut state = State::new(socket.display().to_string(), options);
    let mut screen = Screen::enter(options.mouse).context("cannot set up the terminal")?;
    let size = screen.terminal.size().context("cannot read the terminal's size")?;
    update(&mut state, Action::Resize { width: size.width, height: size.height });

    let sources = [
        tokio::spawn(terminal_input(tx.clone())),
        tokio::spawn(subscription(socket.clone(), tx.clone())),
        tokio::spawn(ticks(tx.clone())),
        tokio::spawn(signals(tx.clone())),
    ];
    let perform = |effect| {
        if let Effect::Send(request) = effect {
            tokio::spawn(send(socket.clone(), request, tx.clone()));
        }
    };
    let outcome = run_loop(&mut screen.terminal, &mut state, &mut rx, perform).await;
    for source in sources {
        source.abort();
    }
    drop(screen);
    outcome
}

/// Sends one request on a connection of its own and feeds back its reply.
async fn send(socket: PathBuf, request: Request, tx: mpsc::Sender<Action>) {
    let outcome = stt_bus::request(&socket, "stt-tui", &request, REQUEST_TIMEOUT)
        .await
        .map(|reply| reply.event)
        .map_err(|e| e.to_string());
    match &outcome {
        Ok(reply) => tracing::debug!(request = request.kind(), ?reply, "reply"),
        Err(why) => tracing::warn!(request = request.kind(), "no reply: {why}"),
    }
    let _ = tx.send(Action::Reply { request, outcome }).await;
}

/// Keys, pastes, resizes and mouse wheel and clicks from the terminal. A terminal that cannot be read any more
/// (it was closed) ends the program.
async fn terminal_input(tx: mpsc::Sender<Action>) {
    let mut events = EventStream::new();
    while let Some(event) = events.next().await {
        let action = match event {
            Ok(Event::Key(key)) => Action::Key(key),
            Ok(Event::Paste(text)) => Action::Paste(text),
            Ok(Event::Resize(width, height)) => Action::Resize { width, height },
            // Only what the screen acts on: capture reports every move of the pointer too.
            Ok(Event::Mouse(mouse))
                if matches!(
                    mouse.kind,
                    MouseEventKind::ScrollUp
                        | MouseEventKind::ScrollDown
                        | MouseEventKind::Down(MouseButton::Left)
                ) =>
            {
                Action::Mouse(mouse)
            }
            Ok(_) => continue,
            Err(e) => {
                tracing::warn!("cannot read the terminal: {e}");
                break;
            }
        };
        if tx.send(action).await.is_err() {
            return;
        }
    }
    let _ = tx.send(Action::Quit).await;
}

/// The viewer subscription: events, and the link going down and up again.
async fn subscription(socket: PathBuf, tx: mpsc::Sender<Action>) {
    let mut link = Subscription::assistant(socket, "stt-tui", true);
    loop {
        let action = match link.next().await {
            Link::Up(hello) => {
                tracing::info!("subscribed to {} {} as a viewer", hello.peer, hello.version);
                Action::LinkUp(hello)
            }
            Link::Event(event) => {
                crate::trace_event(&event);
                Action::Event(event)
            }
            Link::Down(why) => {
                tracing::warn!("{why}; retrying");
                Action::LinkDown(why)
            }
        };
        if tx.send(action).await.is_err() {
            return;
        }
    }
}

async fn ticks(tx: mpsc::Sender<Action>) {
    let mut interval = tokio::time::interval(TICK);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        interval.tick().await;
        if tx.send(Action::Tick).await.is_err() {
            return;
        }
    }
}

/// SIGINT, SIGTERM and SIGHUP (the terminal went away) end the program cleanly.
async fn signals(tx: mpsc::Sender<Action>) {
    use tokio::signal::unix::{SignalKind, signal};
    let (terminate, hangup) =
        match (stt_app::signals::Terminate::catch(), signal(SignalKind::hangup())) {
            (Ok(terminate), Ok(hangup)) => (terminate, hangup),
            (Err(e), _) | (_, Err(e)) => {
                tracing::warn!("cannot catch signals: {e}");
                return;
            }
        };
    let (mut terminate, mut hangup) = (terminate, hangup);
    tokio::select! {
        () = terminate.recv() => {}
        _ = hangup.recv() => {}
    }
    let _ = tx.send(Action::Quit).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_pieces_wait_for_their_frame_and_everything_else_draws_at_once() {
        let drawn = Instant::now();
        let check = |after_ms: u64, pace: Pace, expected: bool| {
            let now = drawn + Duration::from_millis(after_ms);
            assert_eq!(should_draw(now, drawn, pace), expected, "{after_ms} ms, {pace:?}");
        };
        check(0, Pace::Now, true);
        check(1, Pace::Now, true);
        check(0, Pace::Stream, false);
        check(124, Pace::Stream, false);
        check(125, Pace::Stream, true);
        check(400, Pace::Stream, true);
    }

    #[test]
    fn only_the_pieces_of_a_streaming_reply_are_paced() {
        let piece = |partial: bool| {
            Action::Event(AssistantEvent::ChatMessage(stt_proto::ChatMessage {
                id: 5,
                role: stt_proto::ChatRole::Assistant,
                speaker: None,
                text: "Why".into(),
                partial,
                stopped: false,
            }))
        };
        assert_eq!(Pace::of(&piece(true)), Pace::Stream);
        assert_eq!(Pace::of(&piece(false)), Pace::Now, "the whole reply shows at once");
        assert_eq!(Pace::of(&Action::Tick), Pace::Now);
        assert_eq!(Pace::of(&Action::Paste("x".into())), Pace::Now);
    }
}
