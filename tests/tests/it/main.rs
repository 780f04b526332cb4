//! The cross-process tests, one test binary with a module per area (ripgrep's layout): each
//! spawns the real binaries (`cargo build --workspace --bins` first, as `scripts/check`
//! does) in a sandbox of temporary XDG directories. One binary links whisper, ONNX Runtime,
//! SQLite, the assistant and the TUI once, where thirteen binaries linked them thirteen times
//! (docs/TESTING.md has the figures).
//!
//! Run one area with its module's name as the filter: `cargo test -p stt-tests --test it
//! memory::`.

mod assistant;
mod chat;
mod ctl;
mod daemon;
mod dictate;
mod hands_free;
mod intents;
mod layers;
mod local_model;
mod memory;
mod planner;
mod processes;
mod providers;
mod real_model;
mod remote_asr;
mod room;
mod speakers;
mod supervisor;
mod triage;
mod tui_tmux;
mod turns;
mod voice;
mod wyoming;

/// Whisper takes every core it is given: tests that run it take turns, so that each one's
/// deadline measures its own work.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
