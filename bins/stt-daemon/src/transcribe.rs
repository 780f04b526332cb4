//! `stt-daemon transcribe FILE.wav`: the transcript of a file on stdout, one line per
//! segment, through the same VAD, segmentation and filters as the running daemon.
//!
//! The file is read as a stream, as the daemon reads `--input`: each segment is printed as
//! soon as whisper has it, and memory does not grow with the file's length. Three stages run
//! at once, as in the daemon: the reader (decoding and resampling), the voice detector on a
//! thread of its own, which finds the first segments while the model is still loading, and
//! whisper on this thread; bounded channels between them keep each at most a little ahead.

use std::io::Write;
use std::path::Path;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use anyhow::Context as _;
use stt_asr::Whisper;
use stt_audio::{AudioEvent, InputState, Pace, Sink, Source, StopFlag};
use stt_config::Config;
use stt_vad::SegEvent;

use crate::settings::VadSegmenter;
use crate::{Cli, settings};

/// Chunks of 32 ms the reader may get ahead of the segmenter.
const READ_AHEAD_CHUNKS: usize = 64;

/// Closed segments the segmenter may get ahead of whisper (each at most `max_segment_s`).
const SEGMENTS_AHEAD: usize = 4;

/// One closed segment for whisper: its audio and the seconds of speech in it.
type Segment = (Vec<f32>, f64);

pub fn run(config: &Config, cli: &Cli, file: &Path) -> anyhow::Result<()> {
    // The file first: an unreadable one is reported before the model is loaded.
    let (sink, chunks) = Sink::channel(READ_AHEAD_CHUNKS);
    let source = Source::Wav { path: file.to_owned(), pace: Pace::Fast };
    let input = stt_audio::start(source, sink, StopFlag::new())?;
    let segmenter = settings::segmenter(config)?;
    let (segments_tx, segments) = sync_channel(SEGMENTS_AHEAD);
    let vad = std::thread::Builder::new()
        .name("stt-vad".to_owned())
        .spawn(move || segment(segmenter, &chunks, &segments_tx))
        .context("cannot start the voice detector's thread")?;

    let mut whisper = Whisper::load(settings::asr(config, cli)?)?;
    whisper.set_vocabulary(&crate::vocabulary::Vocabulary::new(config).current())?;
    let mut out = std::io::stdout().lock();
    transcribe(&mut whisper, &segments, &mut out)?;
    // The segmenter is done once its channel has closed; the reader has then ended too
    // (after `Ended` or a read error part way through the file, which `join` returns).
    let _ = vad.join();
    input.join()?;
    Ok(())
}

/// Whisper's side: every segment, in order, printed as soon as it is transcribed.
fn transcribe(
    whisper: &mut Whisper,
    segments: &Receiver<Segment>,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    for (samples, speech_s) in segments {
        if let Some(text) = whisper.transcribe(&samples, speech_s)?.text {
            writeln!(out, "{text}")?;
        }
    }
    Ok(())
}

/// The segmenter's thread: audio in until the input ends, closed segments out. Returns early
/// when whisper has stopped taking them (an error, reported by the main thread).
fn segment(
    mut segmenter: VadSegmenter,
    chunks: &Receiver<AudioEvent>,
    segments: &SyncSender<Segment>,
) {
    let send = |events: Vec<SegEvent>| {
        events.into_iter().all(|event| match event {
            SegEvent::End { samples, speech_s, too_short: false, .. } => {
                segments.send((samples, speech_s)).is_ok()
            }
            _ => true,
        })
    };
    // The channel closes when the reader is done, after `Ended` or a read error.
    for event in chunks {
        match event {
            AudioEvent::Samples(chunk) => {
                if !send(segmenter.push(&chunk)) {
                    return;
                }
            }
            AudioEvent::State(InputState::Ended) => break,
            AudioEvent::State(_) => {}
        }
    }
    send(segmenter.finish());
}
