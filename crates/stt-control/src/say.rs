//! `stt-ctl say TEXT [--wav FILE]`: the configured voice (`[voice].model`) speaking TEXT, or
//! espeak-ng's own voice, with a warning that names the fix, when that cannot be loaded.
//!
//! Done here, without the assistant: load the voice, synthesize, then write the WAV file or
//! play it with the first player on `PATH` ([`crate::play::PLAYERS`]). Scripts use it, and so
//! do tests on machines without a sound card (`--wav`).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::json;
use stt_voice::{ESPEAK, Speaker};

use crate::{Cli, EXIT_OK, EXIT_REFUSED, EXIT_USAGE};

/// Speaks `text` (or writes it to `wav`); returns the exit status.
pub fn run(
    cli: &Cli,
    text: &str,
    wav: Option<&Path>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let located = stt_config::Config::load(cli.config.as_deref()).and_then(|config| {
        Ok((stt_config::dirs::model_path(&config.voice.model)?, stt_config::dirs::models_dir()?))
    });
    let (model, models) = match located {
        Ok(paths) => paths,
        Err(e) => {
            let _ = writeln!(err, "stt-ctl: {e}");
            return EXIT_USAGE;
        }
    };
    let started = Instant::now();
    let spoken = Speaker::load(&model, &stt_voice::runtime_library(&models), 2, ESPEAK).and_then(
        |(mut voice, fallback)| {
            if let Some(why) = fallback {
                let _ = writeln!(err, "stt-ctl: espeak-ng speaks instead: {why}");
            }
            Ok((voice.synthesize(text)?, voice.sample_rate()))
        },
    );
    let (samples, rate) = match spoken {
        Ok(spoken) => spoken,
        Err(e) => {
            let _ = writeln!(err, "stt-ctl: {e}");
            return EXIT_REFUSED;
        }
    };
    let took_ms = started.elapsed().as_millis();
    if samples.is_empty() {
        let _ = writeln!(err, "stt-ctl: nothing to say in {text:?}: give it words");
        return EXIT_USAGE;
    }
    let seconds = samples.len() as f64 / f64::from(rate);
    match wav {
        Some(path) => {
            if let Err(e) = stt_voice::write_wav(path, &samples, rate) {
                let _ = writeln!(err, "stt-ctl: cannot write '{}': {e}", path.display());
                return EXIT_REFUSED;
            }
            let _ = if cli.json {
                writeln!(
                    out,
                    "{}",
                    json!({"wav": path, "seconds": seconds, "sample_rate": rate, "took_ms": took_ms})
                )
            } else {
                writeln!(out, "wrote {} ({seconds:.1} s of speech)", path.display())
            };
            EXIT_OK
        }
        None => play(&samples, rate, out, err),
    }
}

/// Plays `samples` through the first player on `PATH`, from a private temporary WAV file.
fn play(samples: &[f32], rate: u32, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let path_var = std::env::var_os("PATH");
    let Some((player, args)) = crate::play::find_player(path_var.as_deref()) else {
        let _ = writeln!(
            err,
            "stt-ctl: no audio player found (pw-play, paplay or aplay): install pipewire-bin, \
             pulseaudio-utils or alsa-utils, or write a file with --wav FILE"
        );
        return EXIT_REFUSED;
    };
    let dir = match stt_config::dirs::runtime_dir() {
        Ok(dir) => dir,
        Err(e) => {
            let _ = writeln!(err, "stt-ctl: {e}");
            return EXIT_USAGE;
        }
    };
    let path = dir.join(format!("stt-ctl-say-{}.wav", std::process::id()));
    if let Err(e) = stt_voice::write_wav(&path, samples, rate) {
        let _ = writeln!(err, "stt-ctl: cannot write '{}': {e}", path.display());
        return EXIT_REFUSED;
    }
    let status = Command::new(&player).args(args).arg(&path).stdin(Stdio::null()).status();
    let _ = std::fs::remove_file(&path);
    let name = player.display();
    match status {
        Ok(s) if s.success() => {
            let _ = writeln!(out, "said it ({name})");
            EXIT_OK
        }
        Ok(s) => {
            let _ = writeln!(err, "stt-ctl: {name} failed ({s}): is there an output device?");
            EXIT_REFUSED
        }
        Err(e) => {
            let _ = writeln!(err, "stt-ctl: cannot run {name}: {e}");
            EXIT_REFUSED
        }
    }
}
