//! Audio input (and the one output, for the voice): everything that turns a microphone, a WAV file or raw PCM into 16 kHz mono
//! `f32` samples for speech detection and transcription.
//!
//! # Using it
//!
//! 1. Make a [`Sink`] and its receiver: `let (sink, rx) = Sink::channel(64);` (a bounded
//!    [`std::sync::mpsc::sync_channel`] of [`AudioEvent`]s).
//! 2. `let input = stt_audio::start(source, sink, stop.clone())?;` opens the [`Source`] and
//!    runs it on a thread of its own. Errors that can be seen at once come back here: a file
//!    that is missing or not a WAV file, an unknown microphone name (the message lists the
//!    devices there are).
//! 3. Receive from `rx`: first `State(Capturing)`, then `Samples` chunks of
//!    [`CHUNK_SAMPLES`] samples (32 ms at [`SAMPLE_RATE`]; only the last chunk of a file may
//!    be shorter), and `State(Ended)` when a file or stream is over. A microphone never ends
//!    by itself: when it fails or vanishes it reports `State(Retrying { error, next_attempt })`,
//!    reopens with capped exponential backoff (0.5 s doubling to 10 s) and reports `Capturing`
//!    again.
//! 4. Stop with [`StopFlag::stop`] or [`InputHandle::stop_and_join`]; dropping the
//!    [`InputHandle`] does the same. [`InputHandle::join`] instead waits for a file to end and
//!    returns the error that ended it early, if any (such an error is also logged, and
//!    `Ended` is still sent).
//!
//! # Two send policies
//!
//! The sink's channel is bounded, and what happens when it is full depends on the source:
//! - **files and raw PCM** wait for room (back-pressure): nothing is ever dropped, and
//!   [`Pace::Fast`] feeds exactly as fast as the consumer takes chunks;
//! - **the microphone** never blocks the audio callback: a chunk that does not fit is dropped
//!   and counted ([`InputHandle::dropped_chunks`]), with a `warn!` at most every 5 s.
//!
//! # Modules, in reading order
//!
//! - [`resample`]: the streaming band-limited [`Resampler`] (also useful to tests elsewhere).
//! - `convert`: interleaved frames of any sample type to 16 kHz mono chunks.
//! - `sink`: [`Sink`], [`StopFlag`] and the two send policies.
//! - `file`: WAV files ([`read_wav_16k_mono`] for a whole file) and raw PCM from a reader.
//! - `mic`: the microphone through cpal, device listing, retries.
//! - [`output`]: audio out through cpal ([`output::Playback`]), for the voice.

mod convert;
mod file;
mod mic;
pub mod output;
pub mod resample;
mod sink;
#[cfg(test)]
mod testing;

pub use file::{read_wav_16k_mono, wav_bytes};
pub use mic::{DeviceInfo, list_input_devices};
pub use resample::Resampler;
pub use sink::{Sink, StopFlag};

use std::fmt;
use std::io::Read;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// The sample rate of everything this crate produces, in Hz.
pub const SAMPLE_RATE: u32 = 16_000;

/// Samples in each [`AudioEvent::Samples`] chunk (32 ms at 16 kHz); only the last chunk
/// before [`InputState::Ended`] may be shorter.
pub const CHUNK_SAMPLES: usize = 512;

/// Where audio comes from.
pub enum Source {
    /// A capture device through cpal: by name (its id such as `hw:CARD=1,DEV=0`, or its
    /// description, as [`list_input_devices`] shows them), or the system default.
    Microphone { device: Option<String> },
    /// A WAV file: 8/16/24/32-bit integer or 32-bit float, any rate, any channel count.
    Wav { path: PathBuf, pace: Pace },
    /// Headerless PCM from a reader (usually stdin), interleaved if `channels > 1`;
    /// `name` (e.g. "stdin") is what messages call it.
    Pcm { reader: Box<dyn Read + Send>, format: PcmFormat, rate: u32, channels: u16, name: String },
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Microphone { device } => {
                f.debug_struct("Microphone").field("device", device).finish()
            }
            Self::Wav { path, pace } => {
                f.debug_struct("Wav").field("path", path).field("pace", pace).finish()
            }
            Self::Pcm { format, rate, channels, name, .. } => f
                .debug_struct("Pcm")
                .field("name", name)
                .field("format", format)
                .field("rate", rate)
                .field("channels", channels)
                .finish_non_exhaustive(),
        }
    }
}

/// How fast a file is fed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pace {
    /// As a microphone would deliver it: each chunk leaves when its last sample would have
    /// been recorded, on an absolute monotonic schedule, so waiting never adds up to drift.
    #[default]
    RealTime,
    /// As fast as the consumer takes it.
    Fast,
}

/// Sample encoding of raw PCM. All are little-endian; `u8` is unsigned with 128 as silence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PcmFormat {
    S16Le,
    S32Le,
    F32Le,
    U8,
}

impl PcmFormat {
    /// Every format, as [`FromStr`] spells them.
    pub const ALL: [PcmFormat; 4] = [Self::S16Le, Self::S32Le, Self::F32Le, Self::U8];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::S16Le => "s16le",
            Self::S32Le => "s32le",
            Self::F32Le => "f32le",
            Self::U8 => "u8",
        }
    }

    /// Bytes per sample of one channel.
    pub fn bytes_per_sample(self) -> usize {
        match self {
            Self::S16Le => 2,
            Self::S32Le | Self::F32Le => 4,
            Self::U8 => 1,
        }
    }
}

impl fmt::Display for PcmFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PcmFormat {
    type Err = AudioError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|format| format.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| AudioError::UnknownPcmFormat(s.to_owned()))
    }
}

/// What an input sends.
#[derive(Debug, Clone, PartialEq)]
pub enum AudioEvent {
    /// 16 kHz mono samples in about [-1, 1], [`CHUNK_SAMPLES`] at a time.
    Samples(Vec<f32>),
    State(InputState),
}

/// Where an input stands; sent when it changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputState {
    /// Audio is flowing (sent first by every source, and again after a successful retry).
    Capturing,
    /// The microphone failed or could not be opened; it is tried again after `next_attempt`.
    Retrying { error: String, next_attempt: Duration },
    /// A file or stream is over (also after a read error); nothing follows. Not sent when the
    /// input is stopped.
    Ended,
}

/// Everything that can go wrong, worded for the person who has to fix it.
#[derive(Debug, thiserror::Error)]
pub enum AudioError {
    #[error("cannot open '{path}': {cause}")]
    Open { path: PathBuf, cause: std::io::Error },

    #[error("'{path}' is not a WAV file ({reason})")]
    NotWav { path: PathBuf, reason: String },

    #[error("'{path}' is not a usable WAV file: {reason}")]
    BadWav { path: PathBuf, reason: String },

    #[error("reading {what}: {cause}")]
    Read { what: String, cause: std::io::Error },

    #[error(
        "unknown PCM format '{0}': expected one of {valid}",
        valid = PcmFormat::ALL.map(PcmFormat::as_str).join(", ")
    )]
    UnknownPcmFormat(String),

    #[error("{0}")]
    InvalidInput(String),

    #[error("{}", unknown_device_message(.name, .available))]
    UnknownDevice { name: String, available: Vec<String> },

    #[error("{context}: {message}")]
    Device { context: String, message: String },

    #[error("cannot start the audio thread: {0}")]
    Thread(std::io::Error),

    #[error("the audio input thread panicked")]
    Panicked,
}

fn unknown_device_message(name: &str, available: &[String]) -> String {
    let listed = if available.is_empty() {
        "this machine has no audio input devices".to_owned()
    } else {
        format!("the input devices are {}", available.join(", "))
    };
    format!(
        "no audio input device named '{name}': {listed} (`stt-daemon devices` lists them with \
         their formats); set the name in [daemon] of the config, or leave it out for the default"
    )
}

/// Counters an input thread shares with its handle.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub(crate) dropped_chunks: AtomicU64,
}

/// Opens `source` and runs it on a thread of its own, sending [`AudioEvent`]s into `sink`
/// until it ends or `stop` is raised. See the [crate docs](crate) for the order of events and
/// the send policies.
pub fn start(source: Source, sink: Sink, stop: StopFlag) -> Result<InputHandle, AudioError> {
    let stats = Arc::new(Stats::default());
    let thread = match source {
        Source::Wav { path, pace } => {
            let wav = file::WavInput::open(&path)?;
            spawn("stt-audio-wav", {
                let stop = stop.clone();
                move || file::run_wav(wav, pace, sink, stop)
            })?
        }
        Source::Pcm { reader, format, rate, channels, name } => {
            let spec = file::PcmSpec { format, rate, channels, name };
            spec.validate()?;
            spawn("stt-audio-pcm", {
                let stop = stop.clone();
                move || file::run_pcm(reader, spec, sink, stop)
            })?
        }
        Source::Microphone { device } => {
            mic::check_device_name(device.as_deref())?;
            spawn("stt-audio-mic", {
                let (stop, stats) = (stop.clone(), stats.clone());
                move || mic::run(device, sink, stop, stats)
            })?
        }
    };
    Ok(InputHandle { thread: Some(thread), stop, stats })
}

fn spawn(
    name: &str,
    body: impl FnOnce() -> Result<(), AudioError> + Send + 'static,
) -> Result<JoinHandle<Result<(), AudioError>>, AudioError> {
    std::thread::Builder::new().name(name.to_owned()).spawn(body).map_err(AudioError::Thread)
}

/// A running input. Dropping it stops the input and waits for its thread.
#[derive(Debug)]
pub struct InputHandle {
    thread: Option<JoinHandle<Result<(), AudioError>>>,
    stop: StopFlag,
    stats: Arc<Stats>,
}

impl InputHandle {
    /// Raises the stop flag (the one given to [`start`], shared with whoever else holds it)
    /// and waits for the thread; it notices within about 100 ms, even while blocked on a slow
    /// consumer or a silent stdin.
    pub fn stop_and_join(mut self) -> Result<(), AudioError> {
        self.stop.stop();
        self.wait()
    }

    /// Waits for the input to end by itself (a file at its end), or for a stop from elsewhere.
    /// The error is what ended a file or stream early (a read error).
    pub fn join(mut self) -> Result<(), AudioError> {
        self.wait()
    }

    /// Whether the thread has finished.
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Microphone chunks dropped so far because the sink was full.
    pub fn dropped_chunks(&self) -> u64 {
        self.stats.dropped_chunks.load(Ordering::Relaxed)
    }

    fn wait(&mut self) -> Result<(), AudioError> {
        match self.thread.take() {
            None => Ok(()),
            Some(thread) => thread.join().unwrap_or(Err(AudioError::Panicked)),
        }
    }
}

impl Drop for InputHandle {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.stop.stop();
            // Errors were logged where they happened.
            let _ = self.wait();
        }
    }
}
