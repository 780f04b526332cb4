//! Audio out, for the voice: mono samples played on an output device through cpal.
//!
//! [`Playback::open`] starts a stream on the device (its own default format and rate) that
//! plays whatever is queued and silence when nothing is. [`Playback::queue`] adds samples at
//! [`Playback::rate`]; [`Playback::stop`] drops what is queued, so the device falls silent
//! within one of its buffers. The owner of a `Playback` keeps it on one thread: a cpal stream
//! is not `Send` on every platform.
//!
//! The device's callback runs on a real-time thread and never waits there: the samples reach
//! it through a lock-free ring ([`rtrb`]), a stop through a counter of the samples it is to
//! drop, and what it measures goes out through atomics (or a lock it only tries).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use cpal::traits::{DeviceTrait, HostTrait, StreamTrait};

use crate::AudioError;

/// How long building the stream may take.
const BUILD_TIMEOUT: Duration = Duration::from_secs(5);

/// The ring holds this much audio; [`Playback::queue`] waits for room beyond it.
const RING_SECONDS: usize = 10;

/// How long [`Playback::queue`] waits for a device that plays nothing before it gives up.
const STALLED: Duration = Duration::from_secs(5);

/// A stream that reported an error and has asked for no buffer for this long is dead (a
/// device unplugged, its sound server gone); one that asks again was not.
pub const DEAD_AFTER: Duration = Duration::from_millis(300);

/// What the device callback and the owner share.
#[derive(Debug, Default)]
struct Shared {
    /// Samples put in the ring so far.
    written: AtomicU64,
    /// Samples the device has taken from the ring so far (played or dropped).
    taken: AtomicU64,
    /// Every sample written before this count is dropped unplayed: the last stop.
    drop_to: AtomicU64,
    /// Stops so far: a [`Playback::queue`] under way puts no more after one.
    stops: AtomicU64,
    /// Buffers the device played late (an underrun: a click).
    underruns: AtomicU64,
    /// The first stream error since the stream last proved alive: what it said, when, and
    /// how many buffers the device had asked for by then.
    failure: Mutex<Option<(String, Instant, u64)>>,
    failed: AtomicBool,
    /// Buffers the device has asked for so far: a stream that goes on asking is alive,
    /// whatever error it reported (ALSA's PulseAudio plugin reports I/O errors now and then
    /// and plays on).
    callbacks: AtomicU64,
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
    fn stop(&self) {
        // Ordered before the counts are read: a queue under way sees it and puts no more.
        self.stops.fetch_add(1, Ordering::SeqCst);
        let written = self.written.load(Ordering::SeqCst);
        if written > self.taken.load(Ordering::SeqCst) {
            let mut stop = self.stop.lock().unwrap_or_else(PoisonError::into_inner);
            *stop = Stop { asked: Some(Instant::now()), silent_after: None };
        }
        self.drop_to.fetch_max(written, Ordering::SeqCst);
    }
}

/// An output stream on a device, playing what is queued.
pub struct Playback {
    shared: Arc<Shared>,
    /// The ring's writing end; the device's callback holds the other.
    queue: Queue,
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
        Self::open_with(device, RING_SECONDS as f64)
    }

    /// As [`Playback::open`], with a ring of `seconds` of audio.
    fn open_with(device: Option<&str>, seconds: f64) -> Result<Playback, AudioError> {
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
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "seconds of audio"
        )]
        let capacity = (f64::from(config.sample_rate()) * seconds).ceil() as usize;
        let (queue, mut feed) = ring(&shared, capacity, seconds);
        let on_data = move |data: &mut cpal::Data, info: &cpal::OutputCallbackInfo| {
            feed.shared.callbacks.fetch_add(1, Ordering::Relaxed);
            silent_from(&feed.shared, info);
            fill(&mut feed, data, channels);
        };
        let failing = Arc::clone(&shared);
        let on_error = move |e: cpal::Error| {
            if matches!(e.kind(), cpal::ErrorKind::Xrun) {
                // An underrun: a click, not a failure.
                failing.underruns.fetch_add(1, Ordering::Relaxed);
                return;
            }
            let mut failure = failing.failure.lock().unwrap_or_else(PoisonError::into_inner);
            let asked = failing.callbacks.load(Ordering::Relaxed);
            failure.get_or_insert((e.to_string(), Instant::now(), asked));
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
        Ok(Playback { shared, queue, _stream: stream, rate: config.sample_rate(), described })
    }

    /// The device's rate: what [`Playback::queue`] takes.
    pub fn rate(&self) -> u32 {
        self.rate
    }

    /// The device, its rate, channels and format, for logs.
    pub fn describe(&self) -> &str {
        &self.described
    }

    /// Plays `samples` (mono, at [`Playback::rate`]) after what is queued. Waits while the
    /// ring is full (it holds [`RING_SECONDS`] of audio), and puts no more once a stop comes
    /// meanwhile; a device that takes nothing for [`STALLED`] is an error.
    pub fn queue(&mut self, samples: &[f32]) -> Result<(), AudioError> {
        self.queue.put(samples).map_err(|message| AudioError::Device {
            context: format!("cannot play on {}", self.described),
            message,
        })
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

    /// Buffers the device has played late so far (each an underrun: a click).
    pub fn underruns(&self) -> u64 {
        self.shared.underruns.load(Ordering::Relaxed)
    }

    /// The stream's error, once it has failed (a device unplugged, say): it reported one,
    /// and has asked for no buffer in the [`DEAD_AFTER`] since. One that goes on asking was
    /// a passing error: forgotten (logged), and the stream plays on.
    pub fn failure(&self) -> Option<String> {
        if !self.shared.failed.load(Ordering::SeqCst) {
            return None;
        }
        let mut failure = self.shared.failure.lock().unwrap_or_else(PoisonError::into_inner);
        let (why, at, asked) = failure.clone()?;
        if self.shared.callbacks.load(Ordering::Relaxed) > asked {
            tracing::debug!("the output stream reported {why:?} and plays on");
            *failure = None;
            self.shared.failed.store(false, Ordering::SeqCst);
            return None;
        }
        (at.elapsed() >= DEAD_AFTER).then_some(why)
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

/// The ring between the owner and the device: its writing end and its reading end, `capacity`
/// samples (`seconds` of audio).
fn ring(shared: &Arc<Shared>, capacity: usize, seconds: f64) -> (Queue, Feed) {
    let (ring, queued) = rtrb::RingBuffer::new(capacity);
    let tenth = Duration::from_secs_f64(seconds / 10.0);
    (Queue { ring, shared: Arc::clone(shared), tenth }, Feed { queued, shared: Arc::clone(shared) })
}

/// The owner's end of the ring.
struct Queue {
    ring: rtrb::Producer<f32>,
    shared: Arc<Shared>,
    /// A tenth of the ring's length in time: how long a full ring is left to play.
    tenth: Duration,
}

impl Queue {
    /// [`Playback::queue`]; `Err` says why the device took nothing.
    fn put(&mut self, samples: &[f32]) -> Result<(), String> {
        let stops = self.shared.stops.load(Ordering::SeqCst);
        let mut rest = samples;
        let mut waited = (Instant::now(), self.shared.taken.load(Ordering::SeqCst));
        while !rest.is_empty() {
            if self.shared.stops.load(Ordering::SeqCst) != stops
                || self.shared.failed.load(Ordering::SeqCst)
            {
                return Ok(());
            }
            let room = self.ring.slots().min(rest.len());
            if room == 0 {
                let taken = self.shared.taken.load(Ordering::SeqCst);
                if taken != waited.1 {
                    waited = (Instant::now(), taken);
                } else if waited.0.elapsed() > STALLED {
                    return Err(format!(
                        "the device took nothing for {} s (is its sound server paused?)",
                        STALLED.as_secs()
                    ));
                }
                // A tenth of the ring plays meanwhile: room for the next piece, long before
                // the device could drain the rest.
                std::thread::sleep(self.tenth);
                continue;
            }
            let (now, later) = rest.split_at(room);
            if let Ok(chunk) = self.ring.write_chunk_uninit(room) {
                chunk.fill_from_iter(now.iter().copied());
            }
            let written = self.shared.written.fetch_add(room as u64, Ordering::SeqCst);
            if self.shared.stops.load(Ordering::SeqCst) != stops {
                // A stop came while this piece went in: it goes too.
                self.shared.drop_to.fetch_max(written + room as u64, Ordering::SeqCst);
                return Ok(());
            }
            rest = later;
        }
        Ok(())
    }
}

/// The device's end of the ring, in its real-time callback: it never waits.
struct Feed {
    queued: rtrb::Consumer<f32>,
    shared: Arc<Shared>,
}

impl Feed {
    /// One buffer of `frames`: what a stop dropped goes first, unplayed; then each queued
    /// sample goes to `play` with its frame's index, and silence (0.0) once none is left.
    fn buffer(&mut self, frames: usize, mut play: impl FnMut(usize, f32)) {
        let shared = &self.shared;
        let mut taken = shared.taken.load(Ordering::SeqCst);
        let dropped = shared.drop_to.load(Ordering::SeqCst).saturating_sub(taken);
        let dropped = usize::try_from(dropped).unwrap_or(usize::MAX).min(self.queued.slots());
        if let Ok(chunk) = self.queued.read_chunk(dropped) {
            chunk.commit_all();
            taken += dropped as u64;
        }
        for frame in 0..frames {
            let x = self.queued.pop().map_or(0.0, |x| {
                taken += 1;
                x
            });
            play(frame, x);
        }
        shared.taken.store(taken, Ordering::SeqCst);
    }
}

/// One device buffer, each sample to every channel ([`Feed::buffer`]).
fn fill(feed: &mut Feed, data: &mut cpal::Data, channels: usize) {
    use cpal::{Sample, SampleFormat as F};
    macro_rules! fill {
        ($t:ty) => {
            if let Some(out) = data.as_slice_mut::<$t>() {
                let frames = out.len() / channels;
                feed.buffer(frames, |i, x| {
                    out[i * channels..(i + 1) * channels].fill(<$t as Sample>::from_sample(x));
                });
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

#[cfg(test)]
mod tests {
    //! The ring on its own, with this test as the device; then the whole path through ALSA's
    //! `file` plugin, as capture is tested (`mic.rs`): a `~/.asoundrc` in a temporary HOME
    //! makes the default device write what it plays to a raw file. (ALSA's `null` device under
    //! it takes samples as fast as they come, not at a sound card's pace: no test here can
    //! starve a paced device.)

    use std::path::{Path, PathBuf};

    use stt_testkit::DEADLINE;

    use super::*;

    const CHILD: &str = "STT_AUDIO_ALSA_CHILD";

    /// `len` samples rising from `from` by `step`: values no other piece has, so where each
    /// one landed in what was played can be read back.
    fn ramp(from: f32, step: f32, len: usize) -> Vec<f32> {
        (0..len).map(|i| from + step * i as f32).collect()
    }

    /// Asserts that `piece` was played whole and in order in `played`.
    fn played_whole(played: &[f32], piece: &[f32], what: &str) {
        let start = played.iter().position(|x| *x == piece[0]);
        let start = start.unwrap_or_else(|| panic!("{what} was not played"));
        let played = &played[start..];
        let differs = piece.iter().zip(played).position(|(a, b)| a != b);
        let differs = differs.or((played.len() < piece.len()).then_some(played.len()));
        let at = differs.unwrap_or_default();
        let seen = played.get(at..(at + 8).min(played.len())).unwrap_or_default();
        assert_eq!(differs, None, "{what}: from this sample on, {seen:?} was played");
    }

    /// The device's side, as a sound card pulls: one buffer of `frames`.
    fn pull(feed: &mut Feed, frames: usize, played: &mut Vec<f32>) {
        let mut buffer = vec![0.0; frames];
        feed.buffer(frames, |i, x| buffer[i] = x);
        played.extend(buffer);
    }

    #[test]
    fn the_ring_plays_each_piece_whole_and_a_stop_drops_what_came_before_it_only() {
        let shared = Arc::new(Shared::default());
        // A ring of 1000 samples; a piece of 3000 waits for room twice.
        let (mut queue, mut feed) = ring(&shared, 1000, 0.01);
        let first = ramp(0.1, 1e-6, 3000);
        let cut = ramp(-0.9, 1e-6, 3000);
        let after = ramp(0.6, 1e-6, 500);
        let owner = {
            let (first, cut, after) = (first.clone(), cut.clone(), after.clone());
            std::thread::spawn(move || {
                queue.put(&first).expect("the first piece");
                // The device stops it once a little of it has played (below).
                queue.put(&cut).expect("the piece a stop cuts");
                queue.put(&after).expect("the piece after the stop");
            })
        };
        let mut played = Vec::new();
        let mut stopped = false;
        let all = (first.len() + cut.len() + after.len()) as u64;
        stt_testkit::expect_within("the device takes every piece", DEADLINE, || {
            let written = shared.written.load(Ordering::SeqCst);
            let taken = shared.taken.load(Ordering::SeqCst);
            // A device never ahead of what was written: each buffer is there whole.
            if written >= taken + 250 || (owner.is_finished() && written > taken) {
                pull(&mut feed, 250, &mut played);
            }
            if !stopped && shared.taken.load(Ordering::SeqCst) >= first.len() as u64 + 500 {
                shared.stop();
                stopped = true;
            }
            let done = owner.is_finished() && shared.taken.load(Ordering::SeqCst) >= written;
            let past = written >= all - cut.len() as u64;
            if done && past { Ok(()) } else { Err(format!("{taken} of {written} taken")) }
        });
        owner.join().expect("the owner's side");
        played_whole(&played, &first, "the first piece");
        let heard = played.iter().filter(|x| (-0.9..-0.8).contains(*x)).count();
        assert_eq!(heard, 500, "of the cut piece, what played before the stop and no more");
        played_whole(&played, &after, "the piece after the stop");
    }

    #[test]
    fn a_device_that_takes_nothing_is_an_error_not_a_wait_for_ever() {
        let shared = Arc::new(Shared::default());
        let (mut queue, _feed) = ring(&shared, 100, 0.001);
        let started = Instant::now();
        let why = queue.put(&[0.5; 200]).expect_err("nothing took the samples");
        assert!(why.contains("took nothing"), "{why}");
        assert!(started.elapsed() >= STALLED);
    }

    fn played() -> PathBuf {
        Path::new(&std::env::var_os("HOME").expect("HOME")).join("out.raw")
    }

    #[test]
    fn playback_through_alsa_plays_what_is_queued_whole() {
        let home = tempfile::tempdir().expect("temp dir");
        let asoundrc = format!(
            "pcm.!default {{ type file; slave.pcm \"null\"; file \"{}\"; format \"raw\" }}\n",
            home.path().join("out.raw").display()
        );
        std::fs::write(home.path().join(".asoundrc"), asoundrc).expect("write .asoundrc");
        let module = module_path!().split_once("::").map_or("", |(_, rest)| rest);
        stt_testkit::reexec::run_child(
            &format!("{module}::child_playback"),
            &[("HOME", home.path().as_os_str()), (CHILD, std::ffi::OsStr::new("1"))],
        );
    }

    #[test]
    #[ignore = "half of a test: its parent runs it in a child process"]
    fn child_playback() {
        if std::env::var_os(CHILD).is_none() {
            return;
        }
        let host = crate::mic::host().expect("host");
        let device = host.default_output_device().expect("the default output");
        let config = device.default_output_config().expect("its config");
        assert_eq!(config.sample_format(), cpal::SampleFormat::F32, "{config:?}");
        let channels = usize::from(config.channels());
        let mut playback = Playback::open(None).expect("the default output opens");
        let piece = ramp(0.1, 1e-6, playback.rate() as usize / 2);
        playback.queue(&piece).expect("the piece is queued");
        let last = piece[piece.len() - 1];
        let left = stt_testkit::expect_within("the piece in the file", DEADLINE, || {
            let bytes = std::fs::read(played()).unwrap_or_default();
            let left: Vec<f32> = bytes
                .chunks_exact(4 * channels)
                .map(|frame| f32::from_le_bytes([frame[0], frame[1], frame[2], frame[3]]))
                .collect();
            if left.contains(&last) { Ok(left) } else { Err(format!("{} frames", left.len())) }
        });
        assert!(playback.failure().is_none(), "{:?}", playback.failure());
        assert_eq!(playback.underruns(), 0, "the device played late");
        played_whole(&left, &piece, "the piece");
    }
}
