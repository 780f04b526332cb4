//! The daemon: a dumb, reliable publisher. Audio in (microphone, WAV file, or raw PCM on
//! stdin), speech found by the VAD, transcribed by whisper on one worker thread, events out
//! on a publish-only socket. It never takes input from that socket.
//!
//! Modules, in reading order: [`cli`] (flags and subcommands), [`settings`] (config →
//! the library crates' settings), [`pipeline`] (the threads and what each publishes),
//! [`transcribe`] (the one-shot `stt-daemon transcribe FILE.wav`).

pub mod cli;
pub mod pipeline;
pub mod settings;
pub mod transcribe;

pub use cli::{Cli, Command};

use anyhow::Context;

/// Runs what the command line asks for.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    let config = cli.common.load_config()?;
    match &cli.command {
        Some(Command::Devices) => devices(),
        Some(Command::Transcribe { file }) => transcribe::run(&config, &cli, file),
        Some(Command::Up { .. }) => anyhow::bail!(
            "`stt-daemon up` (the supervisor) is not built yet: start `stt-daemon` and \
             `stt-assistant` in two terminals, or run scripts/run"
        ),
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
