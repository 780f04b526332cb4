//! The wake lane (`[wake]`): the wake-word detector ([`stt_wake`]) on every chunk of the
//! daemon's audio, on a thread of its own, publishing `wake` when the phrase is heard; and
//! `stt-daemon wake-enroll`, which makes the user's own phrase from their recordings.
//!
//! ```text
//! vad thread ──(first sample, chunk)──▶ wake thread ──▶ wake {phrase, score, at}
//! ```
//!
//! The vad thread never waits for it ([`Lane::hear`]): a lane more than [`QUEUE`] chunks
//! behind (2 s of audio) skips what does not fit and says so once; `at` still counts every
//! sample the daemon heard, skipped or not, so it is on the same clock as the segments.
//!
//! A lane that cannot listen (a model missing, no phrase enrolled) is no reason to stop the
//! daemon: it runs without wake, says why with the fix ([`Lane::start`]'s error), and its
//! heartbeat says `wake: null`.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::Context;
use stt_bus::Publisher;
use stt_config::Config;
use stt_proto::{DaemonEvent, ErrorCode, ErrorMsg, Wake};
use stt_wake::{Detector, Enrolled, Features, Head};

/// Chunks (32 ms each) that may wait for the lane: 2 s.
const QUEUE: usize = 64;

/// Where an enrolled phrase is kept, in the data directory.
pub const ENROLLED_FILE: &str = "wake/enrolled.json";

/// The phrase name an enrolled phrase is heard as.
pub const ENROLLED: &str = "enrolled";

/// The wake lane's handle, which the vad thread feeds.
#[derive(Debug)]
pub struct Lane {
    tx: SyncSender<(u64, Vec<f32>)>,
    /// Samples the daemon has heard, for the next chunk's place in the stream.
    heard: Mutex<u64>,
    phrase: String,
    /// Whether the lane has said it fell behind.
    told: std::sync::atomic::AtomicBool,
    publisher: Publisher,
}

impl Lane {
    /// The lane `[wake]` asks for, listening: `None` when wake is off; an error naming the
    /// fix when it is on and cannot listen.
    pub fn start(config: &Config, publisher: &Publisher) -> anyhow::Result<Option<Arc<Lane>>> {
        let c = &config.wake;
        if !c.enabled {
            return Ok(None);
        }
        let models = stt_config::dirs::models_dir()?;
        let mut detector = Detector::new(
            Features::load(&models).context("[wake].enabled = true, but it cannot listen")?,
        );
        let threshold = (c.threshold > 0.0).then_some(c.threshold as f32);
        if c.phrase == ENROLLED {
            let path = stt_config::dirs::data_dir()?.join(ENROLLED_FILE);
            let enrolled = load_enrolled(&path)?;
            let enrolled = match threshold {
                // An enrolled phrase's threshold is a distance: the score is one less it.
                Some(score) => enrolled.with_threshold(1.0 - score),
                None => enrolled,
            };
            detector.add_enrolled(ENROLLED, enrolled);
        } else {
            let head = Head::installed(&models, &c.phrase)
                .context("[wake].enabled = true, but it cannot listen")?;
            detector.add_head(c.phrase.clone(), head, threshold.unwrap_or(0.5));
        }
        detector.set_refractory_s(c.refractory_ms as f32 / 1000.0);
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
        let phrase = c.phrase.clone();
        let lane = Arc::new(Lane {
            tx,
            heard: Mutex::new(0),
            phrase: phrase.clone(),
            told: std::sync::atomic::AtomicBool::new(false),
            publisher: publisher.clone(),
        });
        let publisher = publisher.clone();
        std::thread::Builder::new()
            .name("wake".into())
            .spawn(move || listen(detector, &rx, &publisher))
            .context("cannot start the wake thread")?;
        tracing::info!(phrase, "listening for the wake phrase");
        Ok(Some(lane))
    }

    /// The phrase listened for, as the heartbeat names it.
    pub fn phrase(&self) -> &str {
        &self.phrase
    }

    /// A chunk of the daemon's audio, as the vad thread has it; never waits.
    pub fn hear(&self, samples: &[f32]) {
        let first = {
            let mut heard = self.heard.lock().unwrap_or_else(PoisonError::into_inner);
            let first = *heard;
            *heard += samples.len() as u64;
            first
        };
        match self.tx.try_send((first, samples.to_vec())) {
            Ok(()) | Err(TrySendError::Disconnected(_)) => {}
            Err(TrySendError::Full(_)) => {
                if !self.told.swap(true, std::sync::atomic::Ordering::SeqCst) {
                    let message = "the wake lane fell behind the audio (the machine is busy): \
                                   the phrase may be missed until it catches up";
                    tracing::warn!("{message}");
                    self.publisher
                        .publish(&DaemonEvent::Error(ErrorMsg::new(ErrorCode::Wake, message)));
                }
            }
        }
    }
}

/// The wake thread: chunks in, `wake` out, until the vad thread is gone.
fn listen(mut detector: Detector, chunks: &Receiver<(u64, Vec<f32>)>, publisher: &Publisher) {
    // Where the next chunk begins in the stream, and the samples skipped so far: the detector
    // counts only those it was given.
    let (mut next, mut skipped) = (0u64, 0u64);
    for (first, samples) in chunks {
        skipped += first.saturating_sub(next);
        next = first + samples.len() as u64;
        match detector.push(&samples) {
            Ok(detections) => {
                for heard in detections {
                    let at = (heard.at_sample + skipped) as f64 / f64::from(stt_wake::SAMPLE_RATE);
                    tracing::info!(
                        phrase = heard.phrase,
                        score = heard.score,
                        at,
                        "wake phrase heard"
                    );
                    publisher.publish(&DaemonEvent::Wake(Wake {
                        phrase: heard.phrase,
                        score: heard.score,
                        at,
                    }));
                }
            }
            Err(e) => {
                let message = format!("the wake lane stopped: {e}");
                tracing::error!("{message}");
                publisher.publish(&DaemonEvent::Error(ErrorMsg::new(ErrorCode::Wake, message)));
                return;
            }
        }
    }
}

/// The enrolled phrase kept at `path`, or why there is none, with the fix.
fn load_enrolled(path: &Path) -> anyhow::Result<Enrolled> {
    let json = match std::fs::read_to_string(path) {
        Ok(json) => json,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => anyhow::bail!(
            "[wake].phrase = \"enrolled\", but no phrase is enrolled ({} is not there): record \
             yourself saying it 3 to 5 times and run `stt-daemon wake-enroll --said \"hey \
             computer\" one.wav two.wav three.wav`, or set [wake].phrase to an installed head \
             (`scripts/fetch-wake --head hey_jarvis`)",
            path.display()
        ),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    Enrolled::from_json(&json).with_context(|| format!("{} is damaged", path.display()))
}

/// `stt-daemon wake-enroll`: the phrase in `clips` (3 to 5 recordings of the user saying it),
/// kept in the data directory for `[wake].phrase = "enrolled"`. Returns what to tell them.
pub fn enroll(clips: &[PathBuf]) -> anyhow::Result<String> {
    let models = stt_config::dirs::models_dir()?;
    let mut features = Features::load(&models).context("cannot enrol the wake phrase")?;
    let audio: Vec<Vec<f32>> =
        clips.iter().map(|path| read_clip(path)).collect::<Result<_, _>>()?;
    let enrolled = Enrolled::from_clips(&mut features, &audio)?;
    let path = stt_config::dirs::data_dir()?.join(ENROLLED_FILE);
    stt_os::write_private(&path, enrolled.to_json().as_bytes())
        .with_context(|| format!("cannot keep the phrase in {}", path.display()))?;
    Ok(format!(
        "enrolled the wake phrase from {} recordings into {} (threshold {:.3}): set [wake] \
         enabled = true and phrase = \"enrolled\", and [wake].said to its words",
        clips.len(),
        path.display(),
        enrolled.threshold()
    ))
}

/// A recording's samples, 16 kHz mono, as the daemon would hear it.
fn read_clip(path: &Path) -> anyhow::Result<Vec<f32>> {
    let (sink, chunks) = stt_audio::Sink::channel(64);
    let source = stt_audio::Source::Wav { path: path.to_owned(), pace: stt_audio::Pace::Fast };
    let input = stt_audio::start(source, sink, stt_audio::StopFlag::new())
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut samples = Vec::new();
    for event in &chunks {
        match event {
            stt_audio::AudioEvent::Samples(chunk) => samples.extend(chunk),
            stt_audio::AudioEvent::State(stt_audio::InputState::Ended) => break,
            stt_audio::AudioEvent::State(_) => {}
        }
    }
    drop(chunks);
    let _ = input.stop_and_join();
    Ok(samples)
}
