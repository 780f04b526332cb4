//! The config file's `[daemon]` section turned into the library crates' settings.

use stt_asr::AsrConfig;
use stt_config::{Config, EndOfTurn, VadEngine};
use stt_vad::{Earshot, Gated, Segmenter, Silero, SpeechProb, VadConfig};

use crate::Cli;

/// Whisper's settings, with the model path resolved (`--model` wins over the config).
/// The remote transcription server, when `[daemon].asr = "remote"`; its key read from the
/// variable `remote_key` names (unset: an error naming it).
pub fn remote(config: &Config) -> anyhow::Result<Option<stt_asr::remote::RemoteConfig>> {
    let d = &config.daemon;
    if d.asr != stt_config::AsrBackend::Remote {
        return Ok(None);
    }
    let key = match d.remote_key.trim() {
        "" => None,
        key => match key.strip_prefix("env:") {
            Some(name) => Some(std::env::var(name.trim()).map_err(|_| {
                anyhow::anyhow!(
                    "[daemon].remote_key names the variable {name}, which is not set: export it (the server's key), or set remote_key = \"\""
                )
            })?),
            None => Some(key.to_owned()),
        },
    };
    Ok(Some(stt_asr::remote::RemoteConfig {
        url: d.remote_url.trim().to_owned(),
        key,
        model: d.remote_model.trim().to_owned(),
        language: d.language.clone(),
        timeout: std::time::Duration::from_millis(d.remote_timeout_ms),
    }))
}

pub fn asr(config: &Config, cli: &Cli) -> anyhow::Result<AsrConfig> {
    let d = &config.daemon;
    let configured = cli.source.model.as_deref().unwrap_or(&d.model);
    Ok(AsrConfig {
        model: stt_config::dirs::model_path(configured)?,
        language: d.language.clone(),
        threads: d.threads,
        beam_size: d.beam_size,
        audio_ctx: d.audio_ctx,
        flash_attention: d.flash_attention,
    })
}

/// The segmenter the daemon runs, with whichever classifier `[daemon].vad` names.
pub type VadSegmenter = Segmenter<Box<dyn SpeechProb + Send>>;

/// The segmenter, its classifier loaded now, so that a missing or broken Silero model is
/// reported at start, with the fix.
pub fn segmenter(config: &Config) -> anyhow::Result<VadSegmenter> {
    let d = &config.daemon;
    let prob: Box<dyn SpeechProb + Send> = match d.vad {
        VadEngine::Silero => {
            let model = stt_config::dirs::model_path(&d.vad_model)?;
            Box::new(Gated::new(Silero::load(&model)?, d.vad_gate_db))
        }
        // Earshot is cheap enough to run on every frame, and a gate makes it clip words in
        // white noise (docs/PERFORMANCE.md, "Voice activity detection").
        VadEngine::Earshot => Box::new(Earshot::new()),
    };
    tracing::debug!(vad = ?d.vad, "voice activity detector ready");
    Ok(Segmenter::with_prob(vad(config)?, prob)?)
}

/// The segmenter's thresholds.
fn vad(config: &Config) -> anyhow::Result<VadConfig> {
    let d = &config.daemon;
    let vad = VadConfig {
        threshold: d.vad_threshold,
        pre_roll_ms: d.vad_pre_roll_ms,
        onset_ms: d.vad_onset_ms,
        hangover_ms: d.vad_hangover_ms,
        // The pause whose text is read is the segment's tail: the audio it closes with, at
        // the end of the turn or after the hangover, is the audio whisper read (crate::turn).
        tail_ms: match d.end_of_turn {
            EndOfTurn::Text | EndOfTurn::Prosody => crate::turn::read_at_ms(d.end_of_turn_pause_ms),
            EndOfTurn::Hangover => stt_vad::segmenter::TAIL_MS,
        },
        min_speech_ms: d.vad_min_speech_ms,
        max_segment_s: d.vad_max_segment_s,
    };
    vad.validate()?;
    Ok(vad)
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use clap::Parser;

    use super::*;

    #[test]
    fn whisper_gets_every_key_of_the_daemon_section() {
        let text = "[daemon]\nmodel = \"/models/x.bin\"\nlanguage = \"de\"\nthreads = 3\n\
                    beam_size = 5\naudio_ctx = 700\nflash_attention = true\n";
        let config = Config::parse(text, Path::new("test.toml")).unwrap();
        let cli = Cli::parse_from(["stt-daemon"]);
        let expected = AsrConfig {
            model: PathBuf::from("/models/x.bin"),
            language: "de".into(),
            threads: 3,
            beam_size: 5,
            audio_ctx: 700,
            flash_attention: true,
        };
        assert_eq!(asr(&config, &cli).unwrap(), expected);
        // --model wins over the config.
        let cli = Cli::parse_from(["stt-daemon", "--model", "/elsewhere/y.bin"]);
        assert_eq!(asr(&config, &cli).unwrap().model, PathBuf::from("/elsewhere/y.bin"));
    }
}
