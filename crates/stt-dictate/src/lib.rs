//! Dictation: what a person says, typed into the window that has the focus.
//!
//! Two halves, each usable alone:
//!
//! - [`Phrases`] (pure): each final transcript of a dictation becomes [`Edit`]s: the words as
//!   typed text, with the spoken commands of [`SPOKEN`] done ("new line", "comma", "full
//!   stop", "scratch that", …), a capital where a sentence begins and one space between
//!   phrases. It remembers what it typed, so "scratch that" can take back the last phrase.
//! - [`Typist`] (blocking: it runs programs): carries an [`Edit`] out with what the desktop
//!   session has, found at run time ([`Method`]): `wtype`, `ydotool`, `dotool` or the
//!   clipboard on Wayland, `xdotool` or the clipboard on X11. A method that fails is left
//!   for the next; when none works, the error names what to install for this session.
//!
//! Nothing here logs what is typed: a log line says how many characters, never which.

mod phrases;
mod typist;

pub use phrases::{Edit, Phrases, SPOKEN, Spoken, replay};
pub use typist::{Method, Session, TypeError, Typist, TypistSettings};
