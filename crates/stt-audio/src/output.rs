//! Audio out, for the voice: mono samples played on an output device through cpal.
//!
//! [`Playback::open`] starts a stream on the device (its own default format and rate) that
//! plays whatever is queued and silence when nothing is. [`Playback::queue`] adds samples at
//! [`Playback::rate`]; [`Playback::stop`] drops what is queued, so the device falls silent
//! within one of its buffers. The owner of a `Playback` keeps it on one thread: a cpal stream
//! is not `Send` on every platform.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use cpal::traits::{DeviceTrait, HostTrait, StreamTrait};

use crate::AudioError;

/// How long building the stream may take.
const BUILD_TIMEOUT: Duration = Duration::from_secs(5);

/// What the device callback and the owner share.
#[derive(Debug, Default)]
struct Shared {
    /// Mono samples still to play, at the device's rate.
    queue: Mutex<VecDeque<f32>>,
    /// The first stream error.
    failure: Mutex<Option<String>>,
    failed: AtomicBool,
    /// The last stop of something playing, and how long the device took to fall silent.
    stop: Mutex<Stop>,
    /// How far ahead of playing the device asked for its last buffer, in microseconds.
    lead_us: AtomicU64,
}

#[derive(Debug, Default)]
struct Stop {
    /// When a stop dropped samples, until the next buffer is filled.
    asked: Option<Instant>,
    /// From that stop to the device playing the silence that followed: until the next
    /// buffer, plus how far ahead of playing the device asks for it.
    silent_after: Option<Duration>,
}

impl Shared {
    fn queue(&self) -> std::sync::MutexGuard<'_, VecDeque<f32>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn stop(&self) {
        let mut queue = self.queue();
        if !queue.is_empty() {
            let mut stop = self.stop.lock().unwrap_or_else(PoisonError::into_inner);
            *stop = Stop { asked: Some(Instant::now()), silent_after: None };
        }
        queue.clear();
    }
}

/// An output stream on a device, playing what is queued.
pub struct Playback {
    shared: Arc<Shared>,
    _stream: cpal::Stream,
    rate: u32,
    described: String,
}

impl std::fmt::Debug for Playback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Playback").field("device", &self.described).finish_non_exhaustive()
    }
}

impl Playback {
    /// Opens `device` (its id or name, as `aplay -L` or `stt-daemon devices` would show an
    /// output's; `None`: the system's default output) and starts playing silence.
    pub fn open(device: Option<&str>) -> Result<Playback, AudioError> {
        let host = crate::mic::host()?;
        let device = match device {
            None => host.default_output_device().ok_or_else(|| AudioError::Device {
                context: "no default output device".to_owned(),
                message: "the system has no speakers or headphones stt can use (set \
                          [voice].device, or write speech to a file with `stt-ctl say --wav`)"
                    .to_owned(),
            })?,
            Some(wanted) => find_output(&host, wanted)?,
        };
        let label = device.id().map(|id| id.id().to_owned()).unwrap_or_else(|_| "(output)".into());
        let error = |message: String| AudioError::Device {
            context: format!("cannot play on '{label}'"),
            message,
        };
        let config = device.default_output_config().map_err(|e| error(e.to_string()))?;
        let channels = usize::from(config.channels().max(1));
        let shared = Arc::new(Shared::default());
        let feed = Arc::clone(&shared);
        let on_data = move |data: &mut cpal::Data, info: &cpal::OutputCallbackInfo| {
            silent_from(&feed, info);
            fill(&feed, data, channels);
        };
        let failing = Arc::clone(&shared);
        let on_error = move |e: cpal::Error| {
            if matches!(e.kind(), cpal::ErrorKind::Xrun) {
                return; // an underrun: a click, not a failure
            }
            let mut failure = failing.failure.lock().unwrap_or_else(PoisonError::into_inner);
            failure.get_or_insert(e.to_string());
            failing.failed.store(true, Ordering::SeqCst);
        };
        let stream = device
            .build_output_stream_raw(
                config.config(),
                config.sample_format(),
                on_data,
                on_error,
                Some(BUILD_TIMEOUT),
            )
            .map_err(|e| error(e.to_string()))?;
        stream.play().map_err(|e| error(e.to_string()))?;
        let described = format!(
            "{label} ({} Hz, {} channel(s), {})",
            config.sample_rate(),
            config.channels(),
            config.sample_format()
        );
        Ok(Playback { shared, _stream: stream, rate: config.sample_rate(), described })
    }

    /// The device's rate: what [`Playback::queue`] takes.
    pub fn rate(&self) -> u32 {
        self.rate
    }

    /// The device, its rate, channels and format, for logs.
    pub fn describe(&self) -> &str {
        &self.described
    }

    /// Plays `samples` (mono, at [`Playback::rate`]) after what is queued.
    pub fn queue(&self, samples: &[f32]) {
        self.shared.queue().extend(samples);
    }

    /// Drops everything queued: the device plays silence from its next buffer.
    pub fn stop(&self) {
        self.shared.stop();
    }

    /// How long a sample queued now waits for the device before it is heard, at least: how
    /// far ahead of playing the device asked for its last buffer (what it queued before comes
    /// on top).
    pub fn latency(&self) -> Duration {
        Duration::from_micros(self.shared.lead_us.load(Ordering::Relaxed))
    }

    /// How long after the last stop of something playing the device fell silent: the wait
    /// for its next buffer plus its own latency, as the device tells it. `None` until that
    /// buffer has been asked for.
    pub fn silenced_after(&self) -> Option<Duration> {
        self.shared.stop.lock().unwrap_or_else(PoisonError::into_inner).silent_after
    }

    /// A handle that stops this playback from another thread.
    pub fn stopper(&self) -> Stopper {
        Stopper(Arc::clone(&self.shared))
    }

    /// The stream's first error, once it has failed (a device unplugged, say).
    pub fn failure(&self) -> Option<String> {
        if !self.shared.failed.load(Ordering::SeqCst) {
            return None;
        }
        self.shared.failure.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// Stops a [`Playback`] from any thread ([`Playback::stopper`]).
#[derive(Debug, Clone)]
pub struct Stopper(Arc<Shared>);

impl Stopper {
    /// As [`Playback::stop`].
    pub fn stop(&self) {
        self.0.stop();
    }
}

/// The first buffer after a stop: when its silence will be heard. Never waits in the device's
/// callback: a stop being written just now is measured at the next buffer.
fn silent_from(shared: &Shared, info: &cpal::OutputCallbackInfo) {
    let times = info.timestamp();
    let ahead = times.playback.duration_since(times.callback);
    let micros = u64::try_from(ahead.as_micros()).unwrap_or(u64::MAX);
    shared.lead_us.store(micros, Ordering::Relaxed);
    let Ok(mut stop) = shared.stop.try_lock() else { return };
    if let Some(asked) = stop.asked.take() {
        stop.silent_after = Some(asked.elapsed() + ahead);
    }
}

/// One device buffer: queued samples (each to every channel), then silence.
fn fill(shared: &Shared, data: &mut cpal::Data, channels: usize) {
    use cpal::{Sample, SampleFormat as F};
    let mut queue = shared.queue();
    macro_rules! fill {
        ($t:ty) => {
            if let Some(out) = data.as_slice_mut::<$t>() {
                for frame in out.chunks_mut(channels) {
                    let x = queue.pop_front().unwrap_or(0.0);
                    frame.fill(<$t as Sample>::from_sample(x));
                }
            }
        };
    }
    match data.sample_format() {
        F::F32 => fill!(f32),
        F::F64 => fill!(f64),
        F::I16 => fill!(i16),
        F::I32 => fill!(i32),
        F::U16 => fill!(u16),
        F::U32 => fill!(u32),
        F::I8 => fill!(i8),
        F::U8 => fill!(u8),
        // A format stt cannot write (24-bit, DSD): nothing is played.
        _ => {}
    }
}

/// The output device whose id, or else whose name, is `wanted`.
fn find_output(host: &cpal::Host, wanted: &str) -> Result<cpal::Device, AudioError> {
    let devices: Vec<cpal::Device> = host
        .output_devices()
        .map_err(|e| AudioError::Device {
            context: "cannot list the output devices".to_owned(),
            message: e.to_string(),
        })?
        .collect();
    let id = |d: &cpal::Device| d.id().ok().map(|id| id.id().to_owned());
    let name = |d: &cpal::Device| d.description().ok().map(|d| d.name().to_owned());
    devices
        .iter()
        .find(|d| id(d).as_deref() == Some(wanted))
        .or_else(|| devices.iter().find(|d| name(d).as_deref() == Some(wanted)))
        .cloned()
        .ok_or_else(|| AudioError::UnknownDevice {
            name: wanted.to_owned(),
            available: devices
                .iter()
                .map(|d| {
                    format!("'{}' ({})", id(d).unwrap_or_default(), name(d).unwrap_or_default())
                })
                .collect(),
        })
}
