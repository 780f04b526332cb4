//! The voice lane: replies spoken as they stream, a sentence at a time (`[voice].enabled`).
//!
//! A lane like the others: its own thread, started with the assistant, a handle ([`Voice`])
//! and a report enum ([`Report`]). The thread loads the voice and opens the output when
//! replies are first to be spoken ([`Voice::load`]), so start-up never waits for it and a
//! voice never turned on costs no model and no device; after [`Report::Off`] the next
//! `load` tries again. The owner hands it text as
//! the reply's sentences complete ([`Voice::say`]); the thread synthesizes each and queues it
//! on the output, so the next sentence is synthesized while the one before plays.
//! [`Voice::stop`] (the owner's interrupt: `chat-stop`, `command-cancel`, `clear`) drops what
//! is queued and silences the device at once, from the owner's thread.
//!
//! The output is the default device (or `[voice].device`), or with `device = "wav:PATH"` a
//! WAV file the speech is appended to: for machines without speakers, and for tests.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use stt_audio::Resampler;
use stt_audio::output::{Playback, Stopper};

use crate::lane::{self, Jobs, Queue, Sink, State, Thread};

/// Where the speech goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// An output device: its id or name, or `None` for the system's default.
    Device(Option<String>),
    /// A WAV file (16-bit, the voice's rate), written anew at start and appended to.
    Wav(PathBuf),
}

impl Output {
    /// `[voice].device`: empty for the default device, `wav:PATH` for a file, else a device.
    pub fn parse(device: &str) -> Self {
        match device.trim() {
            "" => Self::Device(None),
            d => match d.strip_prefix("wav:") {
                Some(path) => Self::Wav(PathBuf::from(path)),
                None => Self::Device(Some(d.to_owned())),
            },
        }
    }
}

/// What the lane needs.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The Piper voice's `.onnx` (its `.onnx.json` beside it); espeak-ng's own voice speaks
    /// when it cannot be loaded.
    pub model: PathBuf,
    /// The ONNX Runtime library.
    pub runtime: PathBuf,
    pub output: Output,
    /// Whether replies are spoken from the start (`[voice].enabled`; the voice toggle
    /// changes it while the assistant runs).
    pub enabled: bool,
}

/// What the lane tells the owner.
#[derive(Debug)]
pub enum Report {
    /// Ready: the voice is loaded and the output open. Off: the voice cannot speak (no
    /// espeak-ng, no device): why, with the fix.
    State(State<Loaded>),
    /// A piece is queued on the device to play from `from` to `to` (as near as the lane
    /// knows): what the microphone may hear of it, for [`crate::echo`]. Not for a file.
    /// `levels`: its loudness every 20 ms ([`crate::talk::levels`]).
    Playing { text: String, from: Instant, to: Instant, levels: Vec<f32> },
    /// Saying one piece failed (the lane goes on with the next).
    Failed { why: String },
}

/// The voice loaded and where it plays.
#[derive(Debug)]
pub struct Loaded {
    pub voice: String,
    pub output: String,
    /// Why espeak-ng's own voice speaks instead of the Piper voice, with the fix (told once,
    /// with the first reply spoken).
    pub fallback: Option<String>,
}

/// What the lane is asked to do.
#[derive(Debug)]
enum Job {
    /// Load the voice and open the output, unless done already.
    Load,
    Piece(Piece),
    /// The short sound that says a spoken turn listens.
    Earcon,
}

/// A piece of a reply to say, and the interrupt count when it was asked for; or, with
/// `ahead`, one to synthesize now and keep for when it is said ([`Voice::prepare`]).
#[derive(Debug)]
struct Piece {
    epoch: u64,
    text: String,
    ahead: bool,
}

/// The handle the owner keeps.
#[derive(Debug, Clone)]
pub struct Voice {
    jobs: Jobs<Job>,
    /// Bumped by every [`Voice::stop`]: a job of an older count is dropped.
    epoch: Arc<AtomicU64>,
    /// The device's stopper, once it is open.
    stopper: Arc<Mutex<Option<Stopper>>>,
}

impl Voice {
    /// How many pieces wait to be said, for `status`.
    pub fn gauge(&self) -> lane::Gauge {
        self.jobs.gauge()
    }

    /// Loads the voice and opens the output, if not yet: [`Report::State`] says how it went.
    pub fn load(&self) {
        self.jobs.send(Job::Load);
    }

    /// Says `text` after what is queued.
    pub fn say(&self, text: &str) {
        if text.trim().is_empty() {
            return;
        }
        let piece =
            Piece { epoch: self.epoch.load(Ordering::SeqCst), text: text.to_owned(), ahead: false };
        self.jobs.send(Job::Piece(piece));
    }

    /// Synthesizes `text` now, to be played at once when [`say`](Self::say) asks for the
    /// same words: an answer known before it is due (a command's, while its last words are
    /// still being transcribed). Plays nothing; one such text is kept, the latest.
    pub fn prepare(&self, text: &str) {
        if text.trim().is_empty() {
            return;
        }
        let piece =
            Piece { epoch: self.epoch.load(Ordering::SeqCst), text: text.to_owned(), ahead: true };
        self.jobs.send(Job::Piece(piece));
    }

    /// Plays the short sound that says it listens (the wake phrase was heard), after what is
    /// queued.
    pub fn earcon(&self) {
        self.jobs.send(Job::Earcon);
    }

    /// Stops speaking now: what plays falls silent and nothing queued is said.
    pub fn stop(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
        if let Some(stopper) = self.stopper.lock().unwrap_or_else(PoisonError::into_inner).as_ref()
        {
            stopper.stop();
        }
    }
}

/// Starts the lane's thread.
pub fn spawn(settings: Settings, reports: Sink<Report>) -> std::io::Result<(Voice, Thread)> {
    let (epoch, stopper) = (Arc::<AtomicU64>::default(), Arc::<Mutex<_>>::default());
    let (ours, theirs) = ((Arc::clone(&epoch), Arc::clone(&stopper)), (epoch, stopper));
    let (jobs, thread) = lane::start("voice", move |rx| {
        run(&settings, &rx, &theirs.0, &theirs.1, &reports);
    })?;
    Ok((Voice { jobs, epoch: ours.0, stopper: ours.1 }, thread))
}

/// Where the lane's audio goes once open.
enum Out {
    Device(Playback),
    Wav(stt_voice::WavOut),
}

impl Out {
    /// How long queued audio waits before it is heard: the device's lead, none for a file.
    fn latency(&self) -> Duration {
        match self {
            Out::Device(playback) => playback.latency(),
            Out::Wav(_) => Duration::ZERO,
        }
    }
}

fn run(
    settings: &Settings,
    jobs: &Queue<Job>,
    epoch: &AtomicU64,
    stopper: &Mutex<Option<Stopper>>,
    reports: &Sink<Report>,
) {
    // Idle until asked to load: pieces before then are not said (the owner sends none).
    while let Ok(job) = jobs.recv() {
        if !matches!(job, Job::Load) {
            continue;
        }
        match load(settings, stopper) {
            Ok((voice, out, loaded)) => {
                reports.send(Report::State(State::Ready(loaded)));
                return speak(voice, out, settings, jobs, epoch, stopper, reports);
            }
            // Told; the next `load` tries again.
            Err(why) => {
                let why = format!("the voice is off: {why}");
                reports.send(Report::State(State::Off { why }));
            }
        }
    }
}

/// Loads the voice and opens the output: them, and the report that says so.
fn load(
    settings: &Settings,
    stopper: &Mutex<Option<Stopper>>,
) -> Result<(stt_voice::Speaker, Out, Loaded), String> {
    let (voice, fallback) =
        stt_voice::Speaker::load(&settings.model, &settings.runtime, 2, stt_voice::ESPEAK)
            .map_err(|e| e.to_string())?;
    let (out, described) = open(&settings.output, voice.sample_rate())?;
    if let Out::Device(playback) = &out {
        *stopper.lock().unwrap_or_else(PoisonError::into_inner) = Some(playback.stopper());
    }
    let fallback = fallback.map(|why| format!("espeak-ng speaks the replies: {why}"));
    let loaded = Loaded { voice: voice.name(), output: described, fallback };
    Ok((voice, out, loaded))
}

/// Says each piece sent, until the handle is dropped.
fn speak(
    mut voice: stt_voice::Speaker,
    mut out: Out,
    settings: &Settings,
    jobs: &Queue<Job>,
    epoch: &AtomicU64,
    stopper: &Mutex<Option<Stopper>>,
    reports: &Sink<Report>,
) {
    let rate = voice.sample_rate();
    let mut queued = Queued::default();
    // What was synthesized ahead, and its audio.
    let mut ready: Option<(String, Vec<f32>)> = None;
    for job in jobs {
        // Loaded already.
        let job = match job {
            Job::Piece(job) => job,
            Job::Earcon => {
                // No words: nothing the microphone hears of it can be taken for a reply.
                if let Err(why) = play(&mut out, &settings.output, stopper, &earcon(rate), rate) {
                    reports.send(Report::Failed { why });
                }
                continue;
            }
            Job::Load => continue,
        };
        if job.ahead {
            if ready.as_ref().is_none_or(|(text, _)| *text != job.text) {
                // A failure is told when the words are said, if they are.
                ready = voice.synthesize(&job.text).ok().map(|audio| (job.text, audio));
                tracing::debug!(ready = ready.is_some(), "voice: synthesized ahead");
            }
            continue;
        }
        if job.epoch != epoch.load(Ordering::SeqCst) {
            continue;
        }
        let ahead = ready.take_if(|(text, _)| *text == job.text).map(|(_, audio)| audio);
        let prepared = ahead.is_some();
        let audio = match ahead.map_or_else(|| voice.synthesize(&job.text), Ok) {
            Ok(audio) => audio,
            Err(e) => {
                reports.send(Report::Failed { why: format!("the voice could not say it: {e}") });
                continue;
            }
        };
        // Stopped while it was being synthesized: not said.
        if job.epoch != epoch.load(Ordering::SeqCst) || audio.is_empty() {
            continue;
        }
        match play(&mut out, &settings.output, stopper, &audio, rate) {
            Ok(opened) => {
                let long = Duration::from_secs_f64(audio.len() as f64 / f64::from(rate));
                let (from, to) =
                    queued.place(Instant::now() + out.latency(), job.epoch, opened, long);
                // The length only: what is said is not logged.
                tracing::debug!(
                    bytes = job.text.len(),
                    samples = audio.len(),
                    prepared,
                    "voice: said"
                );
                // A file is heard by no microphone: only a device's sound can come back.
                if matches!(out, Out::Device(_)) {
                    let levels = crate::talk::levels(&audio, rate);
                    reports.send(Report::Playing { text: job.text, from, to, levels });
                }
            }
            Err(why) => reports.send(Report::Failed { why }),
        }
    }
    if let Out::Wav(wav) = out {
        let _ = wav.finish();
    }
}

/// The earcon at `rate`: two short rising tones (660 Hz, then 990 Hz), 0.17 s in all, with
/// soft edges so neither clicks.
fn earcon(rate: u32) -> Vec<f32> {
    let rate_f = f64::from(rate);
    let tone = |hz: f64, secs: f64| -> Vec<f32> {
        let n = (secs * rate_f) as usize;
        let edge = (0.005 * rate_f) as usize;
        (0..n)
            .map(|i| {
                let fade = (i.min(n - 1 - i) as f64 / edge as f64).min(1.0);
                let t = i as f64 / rate_f;
                (0.25 * fade * (std::f64::consts::TAU * hz * t).sin()) as f32
            })
            .collect()
    };
    let mut sound = tone(660.0, 0.07);
    sound.extend(std::iter::repeat_n(0.0, (0.01 * rate_f) as usize));
    sound.extend(tone(990.0, 0.09));
    sound
}

/// When what is queued on the output ends, and the interrupt count it was queued under.
#[derive(Debug, Default)]
struct Queued {
    until: Option<Instant>,
    epoch: u64,
}

impl Queued {
    /// When a piece `long` queued under `epoch` plays: no sooner than `now` (the device's own
    /// lead added), and after what is queued before it, unless a stop (a new epoch) or a
    /// device opened again emptied the queue: the earlier pieces play no more.
    fn place(
        &mut self,
        now: Instant,
        epoch: u64,
        opened: Opened,
        long: Duration,
    ) -> (Instant, Instant) {
        let behind = self.until.filter(|_| self.epoch == epoch && opened == Opened::Same);
        let from = behind.map_or(now, |until| until.max(now));
        let to = from + long;
        (self.until, self.epoch) = (Some(to), epoch);
        (from, to)
    }
}

/// Opens the output for speech at `rate`: it, and what it is, for the log.
fn open(output: &Output, rate: u32) -> Result<(Out, String), String> {
    match output {
        Output::Device(name) => {
            let playback = Playback::open(name.as_deref()).map_err(|e| e.to_string())?;
            let described = playback.describe().to_owned();
            Ok((Out::Device(playback), described))
        }
        Output::Wav(path) => {
            let wav = stt_voice::WavOut::create(path, rate)
                .map_err(|e| format!("cannot write '{}': {e}", path.display()))?;
            Ok((Out::Wav(wav), format!("the file {}", path.display())))
        }
    }
}

/// Queues `audio` (at the voice's `rate`) on the device, resampled to its rate, or appends it
/// to the file (whose header is brought up to date, so the file is whole after each piece).
/// A device whose stream failed (unplugged, its sound server restarted) is opened again
/// first, and its new stopper handed to the owner's side: then [`Opened::Again`], and what was
/// queued on the old stream is gone.
fn play(
    out: &mut Out,
    output: &Output,
    stopper: &Mutex<Option<Stopper>>,
    audio: &[f32],
    rate: u32,
) -> Result<Opened, String> {
    match out {
        Out::Device(playback) => {
            let mut opened = Opened::Same;
            if let Some(why) = playback.failure() {
                tracing::warn!("the output device failed ({why}): opening it again");
                let Output::Device(name) = output else {
                    return Err(format!("the output device failed: {why}"));
                };
                *playback = Playback::open(name.as_deref())
                    .map_err(|e| format!("the output device failed ({why}) and {e}"))?;
                *stopper.lock().unwrap_or_else(PoisonError::into_inner) = Some(playback.stopper());
                opened = Opened::Again;
            }
            if playback.rate() == rate {
                playback.queue(audio).map_err(|e| e.to_string())?;
            } else {
                let mut resampler =
                    Resampler::new(rate, playback.rate()).map_err(|e| e.to_string())?;
                let mut samples = resampler.process(audio);
                samples.extend(resampler.flush());
                playback.queue(&samples).map_err(|e| e.to_string())?;
            }
            Ok(opened)
        }
        Out::Wav(wav) => wav
            .append(audio)
            .map(|()| Opened::Same)
            .map_err(|e| format!("cannot write the voice's file: {e}")),
    }
}

/// Whether [`play`] queued a piece on the stream it had, or on one it opened again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opened {
    Same,
    Again,
}

/// Where the next piece of a streaming reply ends: after its last whole sentence (one that
/// [`closes`] with white space after it) at or past byte `from` of `text`; `None` while no
/// sentence has ended there. A mark at the very end may yet be "3." of "3.5", so it waits.
///
/// [`closes`]: crate::llm::sentences::closes
pub fn sentence_end(text: &str, from: usize) -> Option<usize> {
    let rest = text.get(from..)?;
    rest.char_indices()
        .rev()
        .map(|(i, c)| (from + i, c))
        .find(|&(i, c)| i + c.len_utf8() < text.len() && crate::llm::sentences::closes(text, i, c))
        .map(|(i, c)| i + c.len_utf8())
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    /// A piece plays after those queued before it, unless a stop or a device opened again (it
    /// failed: unplugged, or its sound server lost it) emptied the queue: then it plays now,
    /// and the echo it makes is looked for now, not seconds later.
    #[test]
    fn a_piece_plays_after_the_queue_unless_a_stop_or_a_new_device_emptied_it() {
        let start = Instant::now();
        let secs = Duration::from_secs;
        let mut queued = Queued::default();
        assert_eq!(queued.place(start, 1, Opened::Same, secs(3)), (start, start + secs(3)));
        let at = start + secs(1);
        assert_eq!(queued.place(at, 1, Opened::Same, secs(2)), (start + secs(3), start + secs(5)));
        assert_eq!(queued.place(at, 1, Opened::Again, secs(2)), (at, at + secs(2)));
        assert_eq!(queued.place(at, 2, Opened::Same, secs(1)), (at, at + secs(1)));
        // Past the end of the queue, a piece plays when it is queued.
        let later = start + secs(10);
        assert_eq!(queued.place(later, 2, Opened::Same, secs(1)), (later, later + secs(1)));
    }

    #[test]
    fn the_device_setting_names_a_device_a_file_or_the_default() {
        assert_eq!(Output::parse(""), Output::Device(None));
        assert_eq!(Output::parse(" hw:1 "), Output::Device(Some("hw:1".into())));
        assert_eq!(Output::parse("wav:/tmp/said.wav"), Output::Wav("/tmp/said.wav".into()));
    }

    /// The lane loads nothing until asked, says why it cannot, and tries again when asked
    /// again (here: the WAV file's folder is made in between). espeak-ng's own voice speaks:
    /// there is no Piper model at the path given.
    #[test]
    fn the_voice_loads_when_asked_and_tries_again_after_it_could_not() {
        let dir = tempfile::tempdir().unwrap();
        let wav = dir.path().join("later/said.wav");
        let settings = Settings {
            model: dir.path().join("no-voice.onnx"),
            runtime: dir.path().join("no-runtime.so"),
            output: Output::Wav(wav.clone()),
            enabled: false,
        };
        let (tx, rx) = mpsc::channel();
        let (voice, thread) = spawn(settings, Sink::new(move |r| tx.send(r).unwrap())).unwrap();
        let next = || rx.recv_timeout(Duration::from_secs(60)).unwrap();
        // Not on yet: nothing is said, nothing is opened.
        voice.say("Not said.");
        voice.load();
        let Report::State(State::Off { why }) = next() else { panic!("the folder is missing") };
        assert!(why.contains("said.wav"), "{why}");
        assert!(!wav.exists());
        std::fs::create_dir(dir.path().join("later")).unwrap();
        voice.load();
        let ready = next();
        let is_ready = matches!(&ready, Report::State(State::Ready(l)) if l.fallback.is_some());
        assert!(is_ready, "{ready:?}");
        voice.say("Said.");
        drop(voice);
        thread.join();
        let said = std::fs::metadata(&wav).unwrap().len();
        assert!(said > 44, "the piece after the load is said: {said} bytes");
    }

    #[test]
    fn a_streaming_reply_is_cut_after_its_last_whole_sentence() {
        assert_eq!(sentence_end("Lima is the capital", 0), None);
        assert_eq!(sentence_end("Lima is the capital.", 0), None, "it may be 3.5 yet");
        assert_eq!(sentence_end("Lima is the capital. It is", 0), Some(20));
        assert_eq!(sentence_end("One. Two! Three? Fo", 0), Some(16));
        assert_eq!(sentence_end("One. Two! Three? Fo", 16), None, "nothing new ended");
        assert_eq!(sentence_end("It costs 3.50 now. Yes", 0), Some(18));
        assert_eq!(sentence_end("short", 9), None);
    }
}
