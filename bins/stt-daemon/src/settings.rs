//! The config file's `[daemon]` section turned into the library crates' settings.

use stt_asr::AsrConfig;
use stt_config::Config;
use stt_vad::VadConfig;

use crate::Cli;

/// Whisper's settings, with the model path resolved (`--model` wins over the config).
pub fn asr(config: &Config, cli: &Cli) -> anyhow::Result<AsrConfig> {
    let d = &config.daemon;
    let configured = cli.model.as_deref().unwrap_or(&d.model);
    Ok(AsrConfig {
        model: stt_config::dirs::model_path(configured)?,
        language: d.language.clone(),
        threads: d.threads,
        beam_size: d.beam_size,
        audio_ctx: d.audio_ctx,
    })
}

/// The segmenter's settings.
pub fn vad(config: &Config) -> anyhow::Result<VadConfig> {
    let d = &config.daemon;
    let vad = VadConfig {
        threshold: d.vad_threshold,
        pre_roll_ms: d.vad_pre_roll_ms,
        onset_ms: d.vad_onset_ms,
        hangover_ms: d.vad_hangover_ms,
        min_speech_ms: d.vad_min_speech_ms,
        max_segment_s: d.vad_max_segment_s,
    };
    vad.validate()?;
    Ok(vad)
}
