//! The two closed vocabularies of the screen: [`Action`], everything that can happen to it
//! (a key, an event from the assistant, the link going up or down, a request's reply, a
//! tick), and [`Effect`], everything [`update`](crate::update::update) may ask the outside
//! world to do in return.

use ratatui::crossterm::event::{KeyEvent, MouseEvent};
use stt_proto::{AssistantEvent, Hello, Request};

/// One input to [`update`](crate::update::update). The event loop merges every source
/// into one channel of these, so tests drive the screen without a terminal.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// A key was pressed.
    Key(KeyEvent),
    /// The mouse scrolled or clicked (only when `[tui].mouse` captures it).
    Mouse(MouseEvent),
    /// Text was pasted (bracketed paste): typed into the command while editing, ignored
    /// otherwise so a paste can never fire a key binding.
    Paste(String),
    /// The terminal is now this size (also sent once at start).
    Resize {
        /// Columns.
        width: u16,
        /// Rows.
        height: u16,
    },
    /// The subscription to the assistant is up; its hello.
    LinkUp(Hello),
    /// The subscription is down and retrying; why.
    LinkDown(String),
    /// An event from the assistant's subscription.
    Event(AssistantEvent),
    /// The outcome of a one-shot request: the assistant's direct reply (which may be an
    /// `error`), or why no reply came (the assistant is not running, say).
    Reply {
        /// The request that was sent.
        request: Request,
        /// Its reply, or the connection error as a message.
        outcome: Result<AssistantEvent, String>,
    },
    /// About once a second: periodic refreshes.
    Tick,
    /// Leave now (a signal, or the terminal went away).
    Quit,
}

/// What [`update`](crate::update::update) asks the event loop to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Send this request on a one-shot connection of its own; its reply comes back as
    /// [`Action::Reply`]. Never awaited by the loop.
    Send(Request),
    /// Restore the terminal and exit.
    Quit,
}
