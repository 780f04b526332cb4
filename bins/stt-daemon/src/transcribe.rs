//! `stt-daemon transcribe FILE.wav`: the transcript of a file on stdout, one line per
//! segment, through the same VAD, segmentation and filters as the running daemon.

use std::io::Write;
use std::path::Path;

use stt_asr::Whisper;
use stt_config::Config;
use stt_vad::SegEvent;

use crate::{Cli, settings};

pub fn run(config: &Config, cli: &Cli, file: &Path) -> anyhow::Result<()> {
    let audio = stt_audio::read_wav_16k_mono(file)?;
    let mut segmenter = settings::segmenter(config)?;
    let mut whisper = Whisper::load(settings::asr(config, cli)?)?;
    let mut events = segmenter.push(&audio);
    events.extend(segmenter.finish());
    let mut out = std::io::stdout().lock();
    for event in events {
        let SegEvent::End { samples, too_short: false, .. } = event else {
            continue;
        };
        if let Some(text) = whisper.transcribe(&samples)?.text {
            writeln!(out, "{text}")?;
        }
    }
    Ok(())
}
