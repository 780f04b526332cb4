//! The viewer and controller of the assistant, and its headless event dump.
//!
//! `stt-tui` subscribes to the assistant as a viewer and shows its transcripts, the
//! conversation and command output (with the chat session's model and token counts), the
//! command buffer and the queue counters; keys send the control requests `stt-ctl` sends,
//! and a chat line sends typed turns and slash commands. `--dump N` prints every event as one JSON line
//! instead, for pipes and scripts.
//!
//! Modules, in reading order (the Elm architecture: state, actions, update, view):
//! - [`state`]: everything the screen shows, as data.
//! - [`action`]: [`action::Action`], all that can happen (keys, assistant events, the link
//!   going up and down, request replies, ticks), and [`action::Effect`], all that
//!   [`update::update`] may ask for in return (send a request, quit).
//! - [`keymap`]: every key, in one table that drives the dispatch, the footer and `--help`.
//! - [`update`]: the rules; pure, returns effects.
//! - [`view`]: draws a `&State`, never changes it; [`wrap`] wraps its lines.
//! - [`app`]: the event loop over one channel of actions, and the tasks that feed it.
//! - [`terminal`]: raw mode and the alternate screen, restored on exit and on panic.
//! - [`dump`]: `--dump N`.
//!
//! # Invariants
//!
//! The view never mutates and the update does no I/O. Requests go on one-shot connections of
//! their own, their replies coming back as actions: the UI never waits on the assistant, and a
//! refusal is shown as a red line with the assistant's message. A pane scrolled up stays put
//! while lines arrive; reaching its bottom follows again. The terminal is restored on exit, on
//! SIGINT/SIGTERM/SIGHUP and from the panic hook before the message prints; logs never go onto
//! the screen.

pub mod action;
pub mod app;
pub mod dump;
pub mod keymap;
pub mod state;
pub mod terminal;
pub mod update;
pub mod view;
pub mod wrap;

use std::io::IsTerminal;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::Context;

/// Watch and control the stt assistant.
///
/// The screen, top to bottom:
///   header               connection, mode, STT health, the LLM endpoint and whether
///                        it answers
///   transcripts [seg N]  each utterance: [language] speaker (length): text; a named
///                        speaker in green, Unknown in red; N = the daemon's backlog
///   conversation / command output [inf N · busy]
///                        first the chat session: provider · model · endpoint,
///                        "loading model", tokens of the last turn (↑ prompt,
///                        ↓ completion) and the session; then chat turns (replies grow
///                        as they stream, "⚠ stopped" if cut short), the command run,
///                        tool calls (→) and results (←), notes, errors in red;
///                        N = LLM jobs waiting, busy while one runs
///   a panel              the command buffer while armed, its editor, the chat line
///                        (i), a tool call waiting for y/n, or the clear question
///   footer               the keys that work now
///
/// Selecting text: with [tui].mouse = true (the default) the screen takes mouse events,
/// so hold Shift while dragging to select and copy with your terminal. With
/// [tui].mouse = false the mouse is left to the terminal.
///
/// Settings ([tui] in the config file): mouse, show_timestamps (each transcript's audio
/// time), max_lines (kept per pane), log_file.
///
/// When the assistant goes away the header says "disconnected, retrying" and the screen
/// reconnects by itself. Logs never draw over the screen: they go to [tui].log_file, or
/// to stderr only when stderr is not the terminal (stt-tui 2>tui.log); STT_LOG sets the
/// level.
///
/// --dump N prints the assistant's events as JSON lines (one per event) for N seconds
/// instead, for pipes and scripts; it needs no terminal.
#[derive(Debug, clap::Parser)]
#[command(name = "stt-tui", version, verbatim_doc_comment, after_help = keymap::help())]
pub struct Cli {
    #[command(flatten)]
    pub common: stt_app::CommonArgs,

    /// Print every event as one JSON line for SECONDS seconds (0 = until interrupted), then
    /// exit
    #[arg(long, value_name = "SECONDS")]
    pub dump: Option<u64>,

    /// Control socket to connect to instead of the configured one
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
}

/// Logs (at debug) the segment a transcript came from, so one grep for `seg_id=N` finds the
/// TUI's part of an utterance as it finds the daemon's and the assistant's.
fn trace_event(event: &stt_proto::AssistantEvent) {
    if let stt_proto::AssistantEvent::Transcript(t) = event {
        tracing::debug!(seg_id = t.seg_id, "transcript received");
    }
}

/// Runs the TUI (or the dump).
pub fn run(cli: Cli) -> anyhow::Result<()> {
    let config = cli.common.load_config()?;
    let socket = match cli.socket {
        Some(path) => path,
        None => stt_config::dirs::assistant_socket(&config)?,
    };
    if cli.dump.is_none() && !std::io::stdout().is_terminal() {
        anyhow::bail!("stt-tui needs a terminal; use --dump N for a pipe");
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    match cli.dump {
        Some(seconds) => {
            stt_app::init_logging("warn");
            runtime.block_on(dump::dump(socket, seconds))
        }
        None => {
            init_screen_logging(&config.tui.log_file)?;
            runtime.block_on(app::run(socket, state::Options::of(&config)))
        }
    }
}

/// Logging for the screen, which must never log onto the terminal it draws on: to
/// `[tui].log_file` if set (at `STT_LOG`, default `info`), else to stderr only when that
/// is not the terminal, else nowhere.
fn init_screen_logging(log_file: &Path) -> anyhow::Result<()> {
    if log_file.as_os_str().is_empty() {
        if !std::io::stderr().is_terminal() {
            stt_app::init_logging("warn");
        }
        return Ok(());
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(log_file)
        .with_context(|| {
            format!("cannot open [tui].log_file '{}' for writing", log_file.display())
        })?;
    let filter = std::env::var(stt_app::LOG_ENV)
        .ok()
        .and_then(|spec| tracing_subscriber::EnvFilter::try_new(spec).ok())
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::sync::Mutex::new(file))
        .with_ansi(false)
        .init();
    Ok(())
}
