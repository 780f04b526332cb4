//! `stt-daemon transcribe FILE.wav`: the transcript of a file on stdout, one line per
//! segment, through the same VAD, segmentation and filters as the running daemon.
//!
//! The file is read as a stream, as the daemon reads `--input`: each segment is printed as
//! soon as whisper has it, and memory does not grow with the file's length.

use std::io::Write;
use std::path::Path;

use stt_asr::Whisper;
use stt_audio::{AudioEvent, InputState, Pace, Sink, Source, StopFlag};
use stt_config::Config;
use stt_vad::SegEvent;

use crate::{Cli, settings};

/// Chunks of 32 ms the reader may get ahead of the segmenter.
const READ_AHEAD_CHUNKS: usize = 64;

pub fn run(config: &Config, cli: &Cli, file: &Path) -> anyhow::Result<()> {
    // The file first: an unreadable one is reported before the model is loaded.
    let (sink, chunks) = Sink::channel(READ_AHEAD_CHUNKS);
    let source = Source::Wav { path: file.to_owned(), pace: Pace::Fast };
    let input = stt_audio::start(source, sink, StopFlag::new())?;
    let mut segmenter = settings::segmenter(config)?;
    let mut whisper = Whisper::load(settings::asr(config, cli)?)?;

    let mut out = std::io::stdout().lock();
    let mut say = |event: SegEvent| -> anyhow::Result<()> {
        if let SegEvent::End { samples, speech_s, too_short: false, .. } = event
            && let Some(text) = whisper.transcribe(&samples, speech_s)?.text
        {
            writeln!(out, "{text}")?;
        }
        Ok(())
    };
    // The channel closes when the reader is done, after `Ended` or a read error.
    for event in chunks {
        match event {
            AudioEvent::Samples(chunk) => {
                segmenter.push(&chunk).into_iter().try_for_each(&mut say)?;
            }
            AudioEvent::State(InputState::Ended) => break,
            AudioEvent::State(_) => {}
        }
    }
    segmenter.finish().into_iter().try_for_each(&mut say)?;
    // A read error part way through the file.
    input.join()?;
    Ok(())
}
