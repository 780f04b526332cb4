//! The daemon: a dumb, reliable publisher. Audio in (microphone, WAV file, or raw PCM on
//! stdin), speech found by the VAD, transcribed by whisper on one worker thread, events out
//! on a publish-only socket. It never takes input from that socket.
//!
//! Modules, in reading order: [`cli`] (flags and subcommands), [`settings`] (config →
//! the library crates' settings), [`pipeline`] (the threads and what each publishes),
//! [`live`] (when partial passes run and what of them is published), [`turn`] (reading the
//! pauses: a final ready when the segment closes, and a turn ended sooner when the text
//! says it is finished), [`vocabulary`] (the words whisper is told to expect),
//! [`transcribe`] (the one-shot `stt-daemon transcribe FILE.wav`), [`up`] (the supervisor
//! that runs the daemon, the assistant and the TUI as children), [`speakers`] (who said each
//! segment, beside its transcription), [`wake`] (listening for the wake phrase, and
//! enrolling one's own), [`levels`] (the microphone's loudness while a segment is open) and
//! [`wyoming`] (the recogniser, the wake phrase and the voice as Wyoming services).
//!
//! # Invariants
//!
//! The socket is bound before anything expensive, so a second daemon fails fast. Every closed
//! segment gets exactly one `segment_done`, after its `speech_stop` and after its `transcript` if
//! it has one; its `transcript_partial`s come before its `transcript`. A file input waits for room in whisper's queue; the microphone drops the oldest
//! waiting segment, and the daemon publishes that it did.

pub mod cli;
pub mod levels;
pub mod live;
pub mod pipeline;
pub mod settings;
pub mod speakers;
pub mod transcribe;
pub mod turn;
pub mod up;
pub mod vocabulary;
pub mod wake;
pub mod wyoming;

pub use cli::{Cli, Command, UpArgs};

use anyhow::Context;

/// Runs what the command line asks for.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    let config = cli.common.load_config()?;
    match &cli.command {
        Some(Command::Devices) => devices(),
        Some(Command::Transcribe { file }) => transcribe::run(&config, &cli, file),
        Some(Command::WakeEnroll { clips }) => {
            let said = wake::enroll(clips)?;
            std::io::Write::write_all(&mut std::io::stdout(), format!("{said}\n").as_bytes())
                .context("cannot write to stdout")
        }
        Some(Command::Wyoming { listen, quiet_s }) => {
            wyoming::run(&config, &cli, listen, std::time::Duration::from_secs(*quiet_s))
        }
        Some(Command::Up(up)) => {
            let misplaced = cli.daemon_flags_given();
            if !misplaced.is_empty() {
                anyhow::bail!(
                    "{} before `up` would be ignored: put `up`'s flags after it, as in \
                     `stt-daemon up --input talk.wav` (`stt-daemon up --help` lists them)",
                    misplaced.join(", ")
                );
            }
            up::run(&config, &cli.common, up)
        }
        None => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .context("cannot start the async runtime")?;
            runtime.block_on(pipeline::serve(config, cli))
        }
    }
}

fn devices() -> anyhow::Result<()> {
    use std::io::Write;
    let devices = stt_audio::list_input_devices()?;
    let mut out = std::io::stdout().lock();
    if devices.is_empty() {
        writeln!(out, "no audio input devices (is a sound card or USB microphone attached?)")?;
    }
    for device in devices {
        writeln!(out, "{device}")?;
    }
    Ok(())
}
