//! The microphone through cpal: finding the device, choosing its format, capturing without
//! ever blocking the audio callback, and reopening with capped backoff when it fails.
//!
//! A supervisor thread owns the cpal stream. The data callback converts and `try_send`s;
//! the error callback records a fatal error and wakes the supervisor, which drops the stream,
//! reports `Retrying` and opens the device again after the backoff. The supervisor also
//! wakes every second to notice a stream that went silent and to report dropped chunks.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use cpal::traits::{DeviceTrait, HostTrait, StreamTrait};

use crate::convert::Converter;
use crate::sink::{Sink, StopFlag, TrySend, Wake};
use crate::{AudioError, AudioEvent, CHUNK_SAMPLES, InputState, SAMPLE_RATE, Stats};

/// The first wait before reopening a failed device; it doubles up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_millis(500);
const RETRY_MAX: Duration = Duration::from_secs(10);
/// A stream that ran this long before failing was healthy: the backoff starts over.
const HEALTHY_AFTER: Duration = Duration::from_secs(10);
/// How often the supervisor checks on a running stream.
const WATCH_EVERY: Duration = Duration::from_secs(1);
/// A running stream that delivers nothing for this long is treated as failed.
const STALL_AFTER: Duration = Duration::from_secs(5);
/// Dropped chunks are reported at most this often.
const DROP_WARN_EVERY: Duration = Duration::from_secs(5);
/// How long cpal may take to set a stream up.
const BUILD_TIMEOUT: Duration = Duration::from_secs(5);

/// An audio input device, for `stt-daemon devices`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// What to configure to use this device: cpal's id for it (for ALSA the PCM name, such
    /// as `default` or `hw:CARD=1,DEV=0`).
    pub id: String,
    /// Its description, for people (also accepted as a name, first match wins).
    pub name: String,
    /// Whether it is what the microphone uses when no device is configured.
    pub is_default: bool,
    /// What it can capture ("1–2 channels, 8000–48000 Hz, f32/i16"), or why it could not
    /// be asked (it is busy, or not there).
    pub formats: String,
}

impl fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let default = if self.is_default { " (default)" } else { "" };
        write!(f, "{}{default}: {} [{}]", self.id, self.name, self.formats)
    }
}

/// Every audio input device, the default one first. Opens each device briefly to ask what
/// it supports. On a machine without sound cards the list may be empty, or hold only ALSA's
/// virtual devices (whose formats then say they cannot be opened).
pub fn list_input_devices() -> Result<Vec<DeviceInfo>, AudioError> {
    let host = host()?;
    let default = host.default_input_device();
    let default_id = default.as_ref().and_then(device_id);
    let mut devices: Vec<cpal::Device> = host
        .input_devices()
        .map_err(|e| device_error("listing audio input devices", &e))?
        .collect();
    if let Some(default) = default {
        match devices.iter().position(|d| device_id(d) == default_id) {
            Some(at) => devices[..=at].rotate_right(1),
            None => devices.insert(0, default),
        }
    }
    Ok(devices
        .iter()
        .map(|device| {
            let id = device_id(device).unwrap_or_default();
            DeviceInfo {
                name: device_name(device),
                is_default: default_id.as_ref() == Some(&id),
                formats: formats_summary(device),
                id,
            }
        })
        .collect())
}

/// Checks at start that a configured device name exists, so that a typo is an error with
/// the list of names rather than an endless retry. When the devices cannot be listed at all
/// the supervisor reports that instead, by retrying.
pub(crate) fn check_device_name(name: Option<&str>) -> Result<(), AudioError> {
    let Some(name) = name else { return Ok(()) };
    let Ok(host) = host() else { return Ok(()) };
    match find_device(&host, name) {
        Ok(Some(_)) | Err(_) => Ok(()),
        Ok(None) => {
            let mut available: Vec<String> = host
                .input_devices()
                .map(|devices| {
                    devices
                        .map(|d| {
                            format!("'{}' ({})", device_id(&d).unwrap_or_default(), device_name(&d))
                        })
                        .collect()
                })
                .unwrap_or_default();
            if let Some(default) = host.default_input_device().and_then(|d| device_id(&d)) {
                let listed = format!("'{default}' ");
                if !available.iter().any(|a| a.starts_with(&listed)) {
                    available.insert(0, format!("'{default}' (the system default)"));
                }
            }
            Err(AudioError::UnknownDevice { name: name.to_owned(), available })
        }
    }
}

/// The first host that can be had. Unlike `cpal::default_host`, never panics (it does when
/// ALSA cannot read its configuration, e.g. a broken `~/.asoundrc`).
pub(crate) fn host() -> Result<cpal::Host, AudioError> {
    let mut last = None;
    for id in cpal::available_hosts() {
        match cpal::host_from_id(id) {
            Ok(host) => return Ok(host),
            Err(e) => last = Some(e),
        }
    }
    Err(match last {
        Some(e) => device_error("no audio system is available", &e),
        None => AudioError::Device {
            context: "no audio system is available".to_owned(),
            message: "this build of cpal knows no audio host for this platform".to_owned(),
        },
    })
}

fn device_error(context: &str, error: &cpal::Error) -> AudioError {
    AudioError::Device { context: context.to_owned(), message: error.to_string() }
}

fn device_id(device: &cpal::Device) -> Option<String> {
    device.id().ok().map(|id| id.id().to_owned())
}

fn device_name(device: &cpal::Device) -> String {
    match device.description() {
        Ok(description) => description.name().to_owned(),
        Err(_) => device_id(device).unwrap_or_else(|| "(unknown)".to_owned()),
    }
}

/// The device whose id, or else whose name, is `wanted`.
fn find_device(host: &cpal::Host, wanted: &str) -> Result<Option<cpal::Device>, cpal::Error> {
    let default = host.default_input_device();
    if let Some(default) = default.filter(|d| device_id(d).as_deref() == Some(wanted)) {
        return Ok(Some(default));
    }
    let devices: Vec<cpal::Device> = host.input_devices()?.collect();
    let by_id = devices.iter().position(|d| device_id(d).as_deref() == Some(wanted));
    let by_name = || devices.iter().position(|d| device_name(d) == wanted);
    Ok(by_id.or_else(by_name).map(|at| devices[at].clone()))
}

fn formats_summary(device: &cpal::Device) -> String {
    let ranges: Vec<cpal::SupportedStreamConfigRange> = match device.supported_input_configs() {
        Ok(ranges) => ranges.filter(|r| !r.sample_format().is_dsd()).collect(),
        Err(e) => return format!("cannot be opened now: {e}"),
    };
    let (Some(min_ch), Some(max_ch)) =
        (ranges.iter().map(|r| r.channels()).min(), ranges.iter().map(|r| r.channels()).max())
    else {
        return "no input format stt can use".to_owned();
    };
    let min_rate = ranges.iter().map(|r| r.min_sample_rate()).min().unwrap_or(0);
    let max_rate = ranges.iter().map(|r| r.max_sample_rate()).max().unwrap_or(0);
    let channels = match (min_ch, max_ch) {
        (1, 1) => "1 channel".to_owned(),
        (a, b) if a == b => format!("{a} channels"),
        (a, b) => format!("{a}–{b} channels"),
    };
    let rates = if max_rate == u32::MAX {
        "any rate".to_owned()
    } else if min_rate == max_rate {
        format!("{min_rate} Hz")
    } else {
        format!("{min_rate}–{max_rate} Hz")
    };
    let mut formats: Vec<cpal::SampleFormat> = ranges.iter().map(|r| r.sample_format()).collect();
    formats.sort_by_key(|f| std::cmp::Reverse(format_rank(*f)));
    formats.dedup();
    let formats: Vec<String> = formats.iter().map(ToString::to_string).collect();
    format!("{channels}, {rates}, {}", formats.join("/"))
}

/// Preference among sample formats: float, then the widest integers.
fn format_rank(format: cpal::SampleFormat) -> u8 {
    use cpal::SampleFormat as F;
    match format {
        F::F32 => 12,
        F::F64 => 11,
        F::I32 => 10,
        F::I24 => 9,
        F::I16 => 8,
        F::U32 => 7,
        F::U24 => 6,
        F::U16 => 5,
        F::I64 => 4,
        F::U64 => 3,
        F::I8 => 2,
        F::U8 => 1,
        _ => 0,
    }
}

/// The device's own default format when it is one we can read; otherwise its best other
/// one. Capturing at the device's native rate and resampling here keeps the quality in our
/// hands (ALSA's own rate plugin interpolates linearly).
fn pick_config(device: &cpal::Device) -> Result<cpal::SupportedStreamConfig, String> {
    let default = device.default_input_config().ok();
    if let Some(config) = default.filter(|c| format_rank(c.sample_format()) > 0) {
        return Ok(config);
    }
    let ranges = device.supported_input_configs().map_err(|e| e.to_string())?;
    ranges
        .filter(|r| format_rank(r.sample_format()) > 0)
        .max_by(|a, b| a.cmp_default_heuristics(b))
        .map(|r| r.try_with_standard_sample_rate().unwrap_or_else(|| r.with_max_sample_rate()))
        .ok_or_else(|| "it offers no sample format stt can read".to_owned())
}

/// What the callbacks of one stream tell the supervisor.
#[derive(Debug, Default)]
struct Shared {
    /// The first fatal stream error.
    failure: Mutex<Option<String>>,
    failed: AtomicBool,
    /// Frames delivered so far, to notice a stream that went silent.
    frames: AtomicU64,
    /// Set once `Capturing` is sent. The stream is only started after that, but some
    /// backends start it on their own when it is built: audio before this is discarded, so
    /// that no chunk ever arrives before the state that announces it.
    announced: AtomicBool,
    receiver_gone: AtomicBool,
}

impl Shared {
    fn fail(&self, error: String) {
        let mut failure = self.failure.lock().unwrap_or_else(PoisonError::into_inner);
        failure.get_or_insert(error);
        self.failed.store(true, Ordering::SeqCst);
    }

    fn take_failure(&self) -> String {
        let mut failure = self.failure.lock().unwrap_or_else(PoisonError::into_inner);
        failure.take().unwrap_or_else(|| "the audio stream failed".to_owned())
    }
}

/// Opens the device and builds its stream, not yet started; the error says what went wrong,
/// for `Retrying`.
fn open(
    device: Option<&str>,
    sink: &Sink,
    stats: &Arc<Stats>,
    shared: &Arc<Shared>,
    stop: &StopFlag,
) -> Result<(cpal::Stream, String), String> {
    let host = host().map_err(|e| e.to_string())?;
    let device = match device {
        Some(name) => find_device(&host, name)
            .map_err(|e| format!("listing audio input devices: {e}"))?
            .ok_or_else(|| format!("the input device '{name}' is not there (unplugged?)"))?,
        None => host
            .default_input_device()
            .ok_or_else(|| "there is no default audio input device".to_owned())?,
    };
    let label = format!("'{}'", device_id(&device).unwrap_or_else(|| device_name(&device)));
    let config = pick_config(&device).map_err(|e| format!("{label}: {e}"))?;
    let mut conv = Converter::new(config.channels(), config.sample_rate())
        .map_err(|e| format!("{label}: {e}"))?;
    let channels = usize::from(config.channels());

    let on_data = {
        let (sink, stats, shared) = (sink.clone(), stats.clone(), shared.clone());
        move |data: &cpal::Data, _: &cpal::InputCallbackInfo| {
            shared.frames.fetch_add((data.len() / channels) as u64, Ordering::Relaxed);
            if !shared.announced.load(Ordering::Acquire) {
                return;
            }
            push_data(&mut conv, data);
            while let Some(chunk) = conv.next_chunk() {
                match sink.try_send(AudioEvent::Samples(chunk)) {
                    TrySend::Sent => {}
                    TrySend::Full => {
                        stats.dropped_chunks.fetch_add(1, Ordering::Relaxed);
                    }
                    TrySend::Disconnected => shared.receiver_gone.store(true, Ordering::Relaxed),
                }
            }
        }
    };
    let on_error = {
        let (shared, stop) = (shared.clone(), stop.clone());
        move |error: cpal::Error| match error.kind() {
            cpal::ErrorKind::Xrun => tracing::debug!("audio input overrun: some audio was lost"),
            cpal::ErrorKind::DeviceChanged | cpal::ErrorKind::RealtimeDenied => {
                tracing::debug!("audio input: {error}");
            }
            _ => {
                shared.fail(error.to_string());
                stop.notify();
            }
        }
    };
    let stream = device
        .build_input_stream_raw(
            config.config(),
            config.sample_format(),
            on_data,
            on_error,
            Some(BUILD_TIMEOUT),
        )
        .map_err(|e| format!("{label}: cannot open it for capture: {e}"))?;
    let described = format!(
        "{label} ({} Hz, {} channel(s), {})",
        config.sample_rate(),
        config.channels(),
        config.sample_format()
    );
    Ok((stream, described))
}

/// Converts whatever sample type the device delivers.
fn push_data(conv: &mut Converter, data: &cpal::Data) {
    use cpal::{I24, Sample as _, SampleFormat as F, U24};
    macro_rules! push {
        ($t:ty) => {
            if let Some(samples) = data.as_slice::<$t>() {
                conv.push(samples, |s| s.to_sample::<f32>());
            }
        };
    }
    match data.sample_format() {
        F::F32 => push!(f32),
        F::F64 => push!(f64),
        F::I8 => push!(i8),
        F::I16 => push!(i16),
        F::I24 => push!(I24),
        F::I32 => push!(i32),
        F::I64 => push!(i64),
        F::U8 => push!(u8),
        F::U16 => push!(u16),
        F::U24 => push!(U24),
        F::U32 => push!(u32),
        F::U64 => push!(u64),
        // Never chosen by `pick_config`.
        _ => {}
    }
}

/// How watching a running stream ended.
enum Watched {
    /// Stopped, or the receiver is gone: the input is over.
    Over,
    Failed(String),
}

/// Waits on a running stream until it fails, stalls, or the input is stopped; meanwhile
/// reports dropped chunks.
fn watch(shared: &Shared, stats: &Stats, stop: &StopFlag) -> Watched {
    let mut frames_seen = 0;
    let mut last_progress = Instant::now();
    let mut dropped_seen = stats.dropped_chunks.load(Ordering::Relaxed);
    let mut last_drop_warning: Option<Instant> = None;
    loop {
        let woken = || shared.failed.load(Ordering::SeqCst);
        match stop.wait_until(Instant::now() + WATCH_EVERY, woken) {
            Wake::Stopped => return Watched::Over,
            Wake::Woken => {
                // The system's words for it ("snd_pcm_poll_descriptors_revents failed") say
                // little to a person: what happened first, then them.
                let why = shared.take_failure();
                return Watched::Failed(format!(
                    "the microphone stopped: it was unplugged, or the sound server lost it ({why})"
                ));
            }
            Wake::TimedOut => {}
        }
        if shared.receiver_gone.load(Ordering::Relaxed) {
            return Watched::Over;
        }
        let frames = shared.frames.load(Ordering::Relaxed);
        if frames != frames_seen {
            frames_seen = frames;
            last_progress = Instant::now();
        } else if last_progress.elapsed() >= STALL_AFTER {
            return Watched::Failed(format!(
                "the device delivered no audio for {} s",
                STALL_AFTER.as_secs()
            ));
        }
        let dropped = stats.dropped_chunks.load(Ordering::Relaxed);
        if dropped > dropped_seen
            && last_drop_warning.is_none_or(|at| at.elapsed() >= DROP_WARN_EVERY)
        {
            let lost = dropped - dropped_seen;
            let ms = lost * CHUNK_SAMPLES as u64 * 1000 / u64::from(SAMPLE_RATE);
            tracing::warn!(
                "microphone: dropped {lost} chunks ({ms} ms of audio): speech processing is not \
                 keeping up"
            );
            dropped_seen = dropped;
            last_drop_warning = Some(Instant::now());
        }
    }
}

/// The microphone's supervisor thread: open, watch, and on failure report `Retrying` and
/// reopen after a backoff, until stopped or the receiver is gone. Never gives up by itself.
pub(crate) fn run(
    device: Option<String>,
    sink: Sink,
    stop: StopFlag,
    stats: Arc<Stats>,
) -> Result<(), AudioError> {
    let mut delay = RETRY_FIRST;
    let mut last_error: Option<String> = None;
    loop {
        if stop.is_stopped() {
            return Ok(());
        }
        let shared = Arc::new(Shared::default());
        let error = match open(device.as_deref(), &sink, &stats, &shared, &stop) {
            Ok((stream, described)) => {
                tracing::info!("capturing audio from {described}");
                let started = Instant::now();
                if sink.send_waiting(AudioEvent::State(InputState::Capturing), &stop).is_err() {
                    return Ok(());
                }
                shared.announced.store(true, Ordering::Release);
                let watched = match stream.play() {
                    Ok(()) => watch(&shared, &stats, &stop),
                    Err(e) => Watched::Failed(format!("{described}: cannot start capturing: {e}")),
                };
                drop(stream);
                match watched {
                    Watched::Over => return Ok(()),
                    Watched::Failed(error) => {
                        if started.elapsed() >= HEALTHY_AFTER {
                            delay = RETRY_FIRST;
                        }
                        error
                    }
                }
            }
            Err(error) => error,
        };
        if last_error.as_ref() == Some(&error) {
            tracing::debug!("audio input: {error}; retrying in {delay:?}");
        } else {
            tracing::warn!("audio input: {error}; retrying in {delay:?}");
        }
        let retrying = InputState::Retrying { error: error.clone(), next_attempt: delay };
        if sink.send_waiting(AudioEvent::State(retrying), &stop).is_err() {
            return Ok(());
        }
        last_error = Some(error);
        if stop.sleep(delay) == Wake::Stopped {
            return Ok(());
        }
        delay = (delay * 2).min(RETRY_MAX);
    }
}

#[cfg(test)]
mod tests {
    //! The capture path is tested for real through ALSA's `file` plugin: a `~/.asoundrc` in a
    //! temporary HOME makes the default device read a raw file we wrote. alsa-lib reads that
    //! config once per process, so each such test re-runs this test binary as a child with
    //! HOME set, running only the `child_*` test of the same name; a `child_*` test does
    //! nothing unless it is that child.

    use std::path::Path;
    use std::sync::mpsc::Receiver;

    use super::*;
    use crate::testing::{interleave, sine, tone_amplitude};
    use crate::{InputHandle, Source, start};

    const CHILD: &str = "STT_AUDIO_ALSA_CHILD";

    fn is_child() -> bool {
        std::env::var_os(CHILD).is_some()
    }

    /// Runs `child_<name>` in a child process with a temporary HOME whose `.asoundrc` makes
    /// the default capture device read `<HOME>/in.raw`.
    fn run_in_child(name: &str) {
        let home = tempfile::tempdir().expect("temp dir");
        let infile = home.path().join("in.raw");
        let asoundrc = format!(
            "pcm.!default {{ type file; slave.pcm \"null\"; file \"/dev/null\"; \
             infile \"{}\"; format \"raw\" }}\n",
            infile.display()
        );
        std::fs::write(home.path().join(".asoundrc"), asoundrc).expect("write .asoundrc");
        let module = module_path!().split_once("::").map_or("", |(_, rest)| rest);
        let test = format!("{module}::child_{name}");
        stt_testkit::reexec::run_child(
            &test,
            &[("HOME", home.path().as_os_str()), (CHILD, std::ffi::OsStr::new("1"))],
        );
    }

    fn infile() -> std::path::PathBuf {
        let home = std::env::var_os("HOME").expect("HOME");
        Path::new(&home).join("in.raw")
    }

    fn start_mic(device: Option<&str>, capacity: usize) -> (InputHandle, Receiver<AudioEvent>) {
        let (sink, rx) = Sink::channel(capacity);
        let source = Source::Microphone { device: device.map(str::to_owned) };
        (start(source, sink, StopFlag::new()).expect("start"), rx)
    }

    fn next_event(rx: &Receiver<AudioEvent>) -> AudioEvent {
        rx.recv_timeout(Duration::from_secs(20)).expect("an event within 20 s")
    }

    #[test]
    fn capture_through_alsa_reads_the_device_audio_exactly() {
        run_in_child("capture");
    }

    #[test]
    #[ignore = "half of a test: its parent runs it in a child process"]
    fn child_capture() {
        if !is_child() {
            return;
        }
        // Whatever format the capture will choose (stereo 48 kHz f32 from this plugin), write
        // half a second of it: a different tone in each channel. The plugin opens its input
        // file even to say what it supports, so that file must exist first.
        std::fs::write(infile(), b"").expect("create the input file");
        let host = host().expect("host");
        let device = host.default_input_device().expect("default device");
        let config = pick_config(&device).expect("a config");
        assert_eq!(config.sample_format(), cpal::SampleFormat::F32, "{config:?}");
        let (rate, channels) = (config.sample_rate(), config.channels());
        let tones: Vec<Vec<f32>> = (0..channels)
            .map(|c| sine(rate, 440.0 * f64::from(c + 1), 0.5, rate as usize / 2))
            .collect();
        let frames = interleave(&tones);
        let bytes: Vec<u8> = frames.iter().flat_map(|s| s.to_le_bytes()).collect();
        std::fs::write(infile(), bytes).expect("write the input file");

        // What the same conversion makes of it, before the end of the file comes into play.
        let mut conv = Converter::new(channels, rate).expect("converter");
        conv.push(&frames, |s| s);
        let mut expected = Vec::new();
        while let Some(chunk) = conv.next_chunk() {
            expected.extend(chunk);
        }
        assert!(expected.len() > 6_000, "{} samples", expected.len());
        let level = tone_amplitude(&expected[500..], SAMPLE_RATE, 440.0);
        assert!((level - 0.5 / f64::from(channels)).abs() < 0.01, "440 Hz at {level}");

        // The plugin delivers as fast as it is read, so the channel must hold the whole file.
        let (input, rx) = start_mic(None, 256);
        assert_eq!(next_event(&rx), AudioEvent::State(InputState::Capturing));
        let mut captured = Vec::new();
        while captured.len() < expected.len() {
            match next_event(&rx) {
                AudioEvent::Samples(chunk) => captured.extend(chunk),
                other => panic!("unexpected {other:?}"),
            }
        }
        input.stop_and_join().expect("stopped cleanly");
        let mismatch = captured.iter().zip(&expected).position(|(a, b)| a != b);
        assert_eq!(mismatch, None, "captured audio differs from the file's from this sample on");
    }

    #[test]
    fn an_unopenable_device_is_retried_with_backoff_until_it_opens() {
        run_in_child("retry");
    }

    #[test]
    #[ignore = "half of a test: its parent runs it in a child process"]
    fn child_retry() {
        if !is_child() {
            return;
        }
        // No input file yet: the default device cannot be opened.
        let (input, rx) = start_mic(None, 256);
        let mut waits = Vec::new();
        for _ in 0..2 {
            match next_event(&rx) {
                AudioEvent::State(InputState::Retrying { error, next_attempt }) => {
                    assert!(!error.is_empty());
                    waits.push(next_attempt);
                }
                other => panic!("expected Retrying, got {other:?}"),
            }
        }
        assert_eq!(waits, [RETRY_FIRST, RETRY_FIRST * 2]);
        std::fs::write(infile(), vec![0u8; 48_000 * 8]).expect("write the input file");
        loop {
            match next_event(&rx) {
                AudioEvent::State(InputState::Capturing) => break,
                AudioEvent::State(InputState::Retrying { .. }) => {}
                other => panic!("unexpected {other:?}"),
            }
        }
        assert!(matches!(next_event(&rx), AudioEvent::Samples(_)));
        input.stop_and_join().expect("stopped cleanly");
    }

    #[test]
    fn an_unknown_device_name_is_refused_with_the_list_of_devices() {
        run_in_child("unknown_device");
    }

    #[test]
    #[ignore = "half of a test: its parent runs it in a child process"]
    fn child_unknown_device() {
        if !is_child() {
            return;
        }
        std::fs::write(infile(), b"").expect("create the input file");
        let (sink, _rx) = Sink::channel(1);
        let source = Source::Microphone { device: Some("Blue Yeti 7".to_owned()) };
        let error = start(source, sink, StopFlag::new()).expect_err("unknown").to_string();
        for part in [
            "no audio input device named 'Blue Yeti 7'",
            "'default'",
            "'null'",
            "`stt-daemon devices`",
        ] {
            assert!(error.contains(part), "{error:?} should contain {part:?}");
        }
        // Known names pass the check, by id or by description.
        let devices = list_input_devices().expect("devices");
        let null = devices.iter().find(|d| d.id == "null").expect("the null device is listed");
        for name in ["default", "null", null.name.as_str()] {
            check_device_name(Some(name)).expect(name);
        }
        let default = devices.first().expect("a default device");
        assert!(default.is_default && default.id == "default", "{devices:?}");
        assert!(default.formats.contains("f32"), "{}", default.formats);
    }

    #[test]
    fn chunks_that_do_not_fit_are_dropped_and_counted() {
        run_in_child("drops");
    }

    #[test]
    #[ignore = "half of a test: its parent runs it in a child process"]
    fn child_drops() {
        if !is_child() {
            return;
        }
        std::fs::write(infile(), vec![0u8; 48_000 * 8]).expect("write the input file");
        // Nobody reads: after `Capturing` takes the one slot, every chunk is dropped.
        let (input, rx) = start_mic(None, 1);
        let deadline = Instant::now() + Duration::from_secs(20);
        while input.dropped_chunks() < 10 {
            assert!(Instant::now() < deadline, "no chunk was dropped");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(next_event(&rx), AudioEvent::State(InputState::Capturing));
        input.stop_and_join().expect("stopped cleanly");
    }

    #[test]
    fn listing_devices_never_panics() {
        // Whatever this machine has (no sound card, here), this is an answer, not a crash.
        match list_input_devices() {
            Ok(devices) => {
                for device in devices {
                    assert!(!device.id.is_empty(), "{device:?}");
                }
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
}
