//! `stt-daemon wyoming`: the recogniser as a Wyoming ASR service, for Home Assistant's voice
//! pipeline (README, "Home Assistant").
//!
//! Per connection: `describe` is answered with `info` (one ASR program, `stt`, with the
//! loaded whisper model); `transcribe` (optional: its `language` is noted), `audio-start`,
//! `audio-chunk`s and `audio-stop` are answered with one `transcript`. Home Assistant
//! finds the end of speech itself, so the audio of one request is one segment: converted to
//! 16 kHz mono and handed to the one whisper worker (`stt_asr::Worker`, as in the daemon:
//! the same model, vocabulary and filters), at most [`WAITING`] requests waiting; more are
//! refused with an `error` event saying so. `ping` is answered with `pong`; other events are
//! ignored, as the protocol asks. A request that cannot be served gets an `error` event and
//! the connection stays; a frame that cannot be read ends the connection.
//!
//! Wake (`detect`): `detect` (its `names`, or every phrase there is), then audio, is answered
//! with a `detection` (`name`, `timestamp` in ms from the audio's start) the moment a phrase
//! is heard, or `not-detected` at `audio-stop`: openWakeWord's heads installed with
//! `scripts/fetch-wake --head NAME`, and the phrase enrolled with `stt-daemon wake-enroll`
//! ([`crate::wake`]), each connection with a detector of its own. Speech (`synthesize`): its
//! `text` is answered with `audio-start`, `audio-chunk`s and `audio-stop` in the configured
//! Piper voice (`[voice].model`; espeak-ng's own when it is missing), loaded at the first.
//!
//! At most [`CONNECTIONS`] clients are served at once: one more is sent an `error` event
//! saying so and closed. A client that goes quiet for `--quiet-s` (60 s; mid-frame or
//! between events) is sent an `error` and closed, so a stalled one cannot hold a place for ever. A failed `accept` (out
//! of file descriptors, say) is logged and the service goes on accepting. At shutdown every
//! connection is ended.
//!
//! It binds to the loopback address unless `--listen` names another: anyone who can reach
//! the port can have their audio transcribed and read what is said.

pub mod wire;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::Context as _;
use serde_json::json;
use stt_asr::{Done, Job, QueuePolicy, Submitted, Worker};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::vocabulary::Vocabulary;
use crate::{Cli, settings};
use wire::Event;

/// Requests that may wait for the worker at once; one more is refused.
pub const WAITING: usize = 4;

/// Clients served at once; one more is refused with an `error` event. Home Assistant opens
/// one connection per pipeline run.
pub const CONNECTIONS: usize = 16;

/// How long the service waits before accepting again after `accept` failed (so a lack of
/// file descriptors is not a busy loop).
const ACCEPT_BACKOFF: std::time::Duration = std::time::Duration::from_millis(100);

/// The longest audio one request may send (Home Assistant sends one command at a time).
const MAX_AUDIO_S: usize = 30;

/// Where to listen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl Listen {
    /// `tcp://HOST:PORT` (an IP address) or `unix://PATH`.
    pub fn parse(uri: &str) -> anyhow::Result<Self> {
        if let Some(addr) = uri.strip_prefix("tcp://") {
            let addr = addr.parse().with_context(|| {
                format!("'{uri}' is not tcp://ADDRESS:PORT with an IP address, e.g. tcp://127.0.0.1:10300")
            })?;
            return Ok(Self::Tcp(addr));
        }
        if let Some(path) = uri.strip_prefix("unix://").filter(|p| !p.is_empty()) {
            return Ok(Self::Unix(PathBuf::from(path)));
        }
        anyhow::bail!(
            "'{uri}' is not a place to listen: write tcp://127.0.0.1:10300 or unix:///path/to/socket"
        )
    }
}

/// Runs the service until SIGINT or SIGTERM.
pub fn run(
    config: &stt_config::Config,
    cli: &Cli,
    listen: &str,
    quiet: std::time::Duration,
) -> anyhow::Result<()> {
    let listen = Listen::parse(listen)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let mut terminate = stt_app::signals::Terminate::catch()?;
        let shutdown = CancellationToken::new();
        let service = Service::start(config, cli)?;
        let served = serve(listen, service, quiet, shutdown.clone());
        tokio::select! {
            result = served => result,
            () = terminate.recv() => {
                shutdown.cancel();
                tracing::info!("stopping");
                Ok(())
            }
        }
    })
}

/// The worker, and who waits for which job.
struct Service {
    worker: Worker,
    waiting: Arc<Mutex<HashMap<u64, oneshot::Sender<Done>>>>,
    next: AtomicU64,
    vocabulary: Mutex<Vocabulary>,
    model: String,
    language: String,
    /// Where the wake models are, and the phrases there are to listen for.
    models: PathBuf,
    phrases: Vec<String>,
    /// The enrolled phrase's file.
    enrolled: PathBuf,
    /// The voice, once a `synthesize` has asked for it; its model file.
    voice: tokio::sync::Mutex<Option<stt_voice::Speaker>>,
    voice_model: PathBuf,
}

impl Service {
    fn start(config: &stt_config::Config, cli: &Cli) -> anyhow::Result<Arc<Self>> {
        let asr = settings::asr(config, cli)?;
        let language = asr.language.clone();
        let waiting: Arc<Mutex<HashMap<u64, oneshot::Sender<Done>>>> = Arc::default();
        let answers = Arc::clone(&waiting);
        let worker = Worker::spawn(asr, WAITING, move |done| {
            let slot = answers.lock().unwrap_or_else(PoisonError::into_inner).remove(&done.seg_id);
            if let Some(slot) = slot {
                // The client may have gone; then no one reads it.
                let _ = slot.send(done);
            }
        })?;
        let model = worker.model_name().to_owned();
        let models = stt_config::dirs::models_dir()?;
        let enrolled = stt_config::dirs::data_dir()?.join(crate::wake::ENROLLED_FILE);
        let phrases = phrases(&models, &enrolled);
        Ok(Arc::new(Self {
            worker,
            waiting,
            next: AtomicU64::new(1),
            vocabulary: Mutex::new(Vocabulary::new(config)),
            model,
            language,
            models,
            phrases,
            enrolled,
            voice: tokio::sync::Mutex::new(None),
            voice_model: stt_config::dirs::model_path(&config.voice.model)?,
        }))
    }

    /// A detector for `names` (every phrase there is when empty), or why there is none.
    async fn detector(&self, names: Vec<String>) -> Result<stt_wake::Detector, String> {
        let names = if names.is_empty() { self.phrases.clone() } else { names };
        let (models, enrolled) = (self.models.clone(), self.enrolled.clone());
        tokio::task::spawn_blocking(move || {
            let features = stt_wake::Features::load(&models).map_err(|e| e.to_string())?;
            let mut detector = stt_wake::Detector::new(features);
            if names.is_empty() {
                return Err("no wake phrase is here: install one with `scripts/fetch-wake \
                            --head hey_jarvis`, or enrol your own with `stt-daemon wake-enroll`"
                    .to_owned());
            }
            for name in names {
                if name == crate::wake::ENROLLED {
                    let json = std::fs::read_to_string(&enrolled)
                        .map_err(|e| format!("no enrolled phrase ({}): {e}", enrolled.display()))?;
                    let phrase = stt_wake::Enrolled::from_json(&json).map_err(|e| e.to_string())?;
                    detector.add_enrolled(name, phrase);
                } else {
                    let head =
                        stt_wake::Head::installed(&models, &name).map_err(|e| e.to_string())?;
                    detector.add_head(name, head, stt_wake::detector::DEFAULT_THRESHOLD);
                }
            }
            Ok(detector)
        })
        .await
        .map_err(|e| format!("the wake detector could not start: {e}"))?
    }

    /// `text` in the configured voice: its samples and their rate.
    async fn speak(&self, text: String) -> Result<(Vec<f32>, u32), String> {
        // One at a time: the voice is kept here between requests, and lent to a blocking
        // thread for each.
        let mut slot = self.voice.lock().await;
        let (model, runtime) = (self.voice_model.clone(), stt_voice::runtime_library(&self.models));
        let kept = slot.take();
        let (speaker, said) = tokio::task::spawn_blocking(move || {
            let mut speaker = match kept {
                Some(speaker) => speaker,
                None => {
                    let (speaker, fallback) =
                        stt_voice::Speaker::load(&model, &runtime, 2, stt_voice::ESPEAK)
                            .map_err(|e| format!("no voice: {e}"))?;
                    if let Some(why) = fallback {
                        tracing::warn!("espeak-ng speaks instead: {why}");
                    }
                    speaker
                }
            };
            let rate = speaker.sample_rate();
            let said = speaker.synthesize(&text).map(|samples| (samples, rate));
            Ok::<_, String>((speaker, said))
        })
        .await
        .map_err(|e| format!("the voice could not start: {e}"))??;
        *slot = Some(speaker);
        said.map_err(|e| format!("the voice could not say it: {e}"))
    }

    /// What `describe` is answered with.
    fn info(&self) -> Event {
        let languages: Vec<&str> = match self.language.as_str() {
            "auto" => vec![],
            language => vec![language],
        };
        Event::new(
            "info",
            json!({
                "asr": [{
                    "name": "stt",
                    "description": "stt: whisper.cpp on this machine, with stt's filters and vocabulary",
                    "attribution": { "name": "stt", "url": "https://example.invalid/stt" },
                    "installed": true,
                    "version": env!("CARGO_PKG_VERSION"),
                    "supports_transcript_streaming": false,
                    "requires_external_vad": true,
                    "models": [{
                        "name": self.model,
                        "description": format!("whisper {}", self.model),
                        "attribution": { "name": "OpenAI Whisper, whisper.cpp", "url": "https://github.com/ggml-org/whisper.cpp" },
                        "installed": true,
                        "version": null,
                        "languages": languages,
                    }],
                }],
                "tts": [{
                    "name": "stt-voice",
                    "description": "stt's voice: Piper on this machine",
                    "attribution": { "name": "Piper", "url": "https://github.com/OHF-Voice/piper1-gpl" },
                    "installed": true,
                    "version": env!("CARGO_PKG_VERSION"),
                    "supports_synthesize_streaming": false,
                    "voices": [{
                        "name": self.voice_model.file_stem().map(|s| s.to_string_lossy().into_owned()),
                        "description": "the voice in [voice].model",
                        "attribution": { "name": "Piper", "url": "https://github.com/OHF-Voice/piper1-gpl" },
                        "installed": true,
                        "version": null,
                        "languages": ["en"],
                    }],
                }],
                "wake": if self.phrases.is_empty() { json!([]) } else { json!([{
                    "name": "stt-wake",
                    "description": "openWakeWord's pipeline on this machine, and your own phrase",
                    "attribution": { "name": "openWakeWord", "url": "https://github.com/dscripka/openWakeWord" },
                    "installed": true,
                    "version": env!("CARGO_PKG_VERSION"),
                    "models": self.phrases.iter().map(|name| json!({
                        "name": name,
                        "description": name.replace('_', " "),
                        "phrase": (name != crate::wake::ENROLLED).then(|| name.replace('_', " ")),
                        "attribution": { "name": "openWakeWord", "url": "https://github.com/dscripka/openWakeWord" },
                        "installed": true,
                        "version": null,
                        "languages": ["en"],
                    })).collect::<Vec<_>>(),
                }]) },
                "handle": [], "intent": [], "mic": [], "snd": [],
            }),
        )
    }

    /// Transcribes one request's audio (16 kHz mono).
    async fn transcribe(&self, samples: Vec<f32>) -> Result<String, (String, &'static str)> {
        if self.worker.backlog() >= WAITING {
            return Err((
                format!(
                    "stt is busy: {WAITING} requests are waiting for whisper; try again in a moment"
                ),
                "busy",
            ));
        }
        let seg_id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner).insert(seg_id, tx);
        #[allow(clippy::cast_precision_loss, reason = "seconds of audio")]
        let seconds = samples.len() as f64 / 16_000.0;
        let vocabulary = self.vocabulary.lock().unwrap_or_else(PoisonError::into_inner).current();
        let job = Job { seg_id, start: 0.0, end: seconds, samples, speech_s: seconds, vocabulary };
        match self.worker.submit(job, QueuePolicy::DropOldest) {
            Submitted::Queued => {}
            // Two requests raced for the last place: the older one is told to try again.
            Submitted::DroppedOldest(old) => {
                self.waiting.lock().unwrap_or_else(PoisonError::into_inner).remove(&old);
            }
            Submitted::Closed => {
                self.waiting.lock().unwrap_or_else(PoisonError::into_inner).remove(&seg_id);
                return Err((
                    "the whisper worker has stopped: restart stt-daemon wyoming".into(),
                    "stt",
                ));
            }
        }
        let done = rx.await.map_err(|_| {
            ("the request was dropped: too many waited for whisper; try again".to_owned(), "busy")
        })?;
        match done.outcome {
            Ok(transcription) => Ok(transcription.text.unwrap_or_default()),
            Err(e) => Err((format!("whisper failed: {e}"), "stt")),
        }
    }
}

async fn serve(
    listen: Listen,
    service: Arc<Service>,
    quiet: std::time::Duration,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let mut clients = Clients::new(quiet);
    match listen {
        Listen::Tcp(addr) => {
            let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| {
                format!("cannot listen on tcp://{addr}: is another service on that port?")
            })?;
            let bound = listener.local_addr()?;
            if !bound.ip().is_loopback() {
                tracing::warn!(
                    "listening on {bound}, not only this machine: anyone who can reach it can send audio to transcribe"
                );
            }
            tracing::info!(model = %service.model, "answering Wyoming on tcp://{bound}");
            loop {
                let accepted = tokio::select! {
                    accepted = listener.accept() => accepted,
                    () = shutdown.cancelled() => break,
                };
                match accepted {
                    Ok((stream, peer)) => {
                        let _ = stream.set_nodelay(true);
                        let (read, write) = stream.into_split();
                        clients.serve(read, write, &service, peer.to_string());
                    }
                    Err(e) => accept_failed(&e).await,
                }
            }
        }
        Listen::Unix(path) => {
            if path.exists() {
                anyhow::bail!("'{}' exists: remove it, or listen somewhere else", path.display());
            }
            let listener = tokio::net::UnixListener::bind(&path)
                .with_context(|| format!("cannot listen on unix://{}", path.display()))?;
            tracing::info!(model = %service.model, "answering Wyoming on unix://{}", path.display());
            loop {
                let accepted = tokio::select! {
                    accepted = listener.accept() => accepted,
                    () = shutdown.cancelled() => break,
                };
                match accepted {
                    Ok((stream, _)) => {
                        let (read, write) = stream.into_split();
                        clients.serve(read, write, &service, "unix".into());
                    }
                    Err(e) => accept_failed(&e).await,
                }
            }
            let _ = std::fs::remove_file(&path);
        }
    }
    clients.end().await;
    Ok(())
}

/// A failed `accept` is logged, and accepting goes on after a moment.
async fn accept_failed(e: &std::io::Error) {
    tracing::warn!("a Wyoming connection could not be accepted: {e}; accepting again");
    tokio::time::sleep(ACCEPT_BACKOFF).await;
}

/// The connections being served: at most [`CONNECTIONS`], each holding a place, all ended
/// at shutdown.
struct Clients {
    places: Arc<tokio::sync::Semaphore>,
    tasks: tokio::task::JoinSet<()>,
    /// How long a client may send nothing.
    quiet: std::time::Duration,
}

impl Clients {
    fn new(quiet: std::time::Duration) -> Self {
        Self {
            places: Arc::new(tokio::sync::Semaphore::new(CONNECTIONS)),
            tasks: tokio::task::JoinSet::new(),
            quiet,
        }
    }

    /// Serves a new connection, or tells it there is no place and closes it.
    fn serve<R, W>(&mut self, read: R, mut write: W, service: &Arc<Service>, peer: String)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        // Finished connections are collected as new ones come.
        while self.tasks.try_join_next().is_some() {}
        let service = Arc::clone(service);
        let quiet = self.quiet;
        match Arc::clone(&self.places).try_acquire_owned() {
            Ok(place) => {
                self.tasks.spawn(async move {
                    connection(read, write, service, peer, quiet).await;
                    drop(place);
                });
            }
            Err(_) => {
                tracing::warn!(%peer, "a Wyoming client was refused: {CONNECTIONS} are connected");
                let refused = error(
                    &format!(
                        "stt is serving {CONNECTIONS} connections, its most: close one and try again"
                    ),
                    "busy",
                );
                self.tasks.spawn(async move {
                    let _ = send(&mut write, &refused).await;
                });
            }
        }
    }

    /// Ends every connection.
    async fn end(mut self) {
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
    }
}

/// The audio of the request under way.
#[derive(Debug)]
struct Audio {
    rate: u32,
    width: u16,
    channels: u16,
    samples: Vec<f32>,
    resampler: Option<stt_audio::Resampler>,
}

impl Audio {
    fn start(event: &Event) -> Result<Self, String> {
        let field =
            |key: &str| event.int(key).ok_or_else(|| format!("audio-start without \"{key}\""));
        let rate = u32::try_from(field("rate")?).unwrap_or(0);
        let width = u16::try_from(field("width")?).unwrap_or(0);
        let channels = u16::try_from(field("channels")?).unwrap_or(0);
        if !(8_000..=192_000).contains(&rate)
            || !matches!(width, 1 | 2 | 4)
            || !(1..=8).contains(&channels)
        {
            return Err(format!(
                "audio of {rate} Hz, {width} bytes a sample, {channels} channels cannot be read: send 16000 Hz, width 2, 1 channel"
            ));
        }
        let resampler = if rate == 16_000 {
            None
        } else {
            Some(stt_audio::Resampler::to_16k(rate).map_err(|e| e.to_string())?)
        };
        Ok(Self { rate, width, channels, samples: Vec::new(), resampler })
    }

    /// Takes the samples so far (a stream listened to, not kept).
    fn drain(&mut self) -> Vec<f32> {
        std::mem::take(&mut self.samples)
    }

    /// Adds a chunk's samples; an error when the request has grown too long.
    fn chunk(&mut self, payload: &[u8]) -> Result<(), String> {
        let width = usize::from(self.width);
        let frame = width * usize::from(self.channels);
        let mono: Vec<f32> = payload
            .chunks_exact(frame)
            .map(|frame| {
                let sum: f32 = frame.chunks_exact(width).map(sample).sum();
                sum / f32::from(self.channels)
            })
            .collect();
        match &mut self.resampler {
            Some(resampler) => resampler.process_into(&mono, &mut self.samples),
            None => self.samples.extend_from_slice(&mono),
        }
        if self.samples.len() > MAX_AUDIO_S * 16_000 {
            return Err(format!(
                "over {MAX_AUDIO_S} s of audio in one request ({} Hz): send one command at a time",
                self.rate
            ));
        }
        Ok(())
    }

    fn finish(mut self) -> Vec<f32> {
        if let Some(resampler) = &mut self.resampler {
            resampler.flush_into(&mut self.samples);
        }
        self.samples
    }
}

/// One little-endian sample as -1.0..1.0.
fn sample(bytes: &[u8]) -> f32 {
    match *bytes {
        [b] => (f32::from(b) - 128.0) / 128.0,
        [a, b] => f32::from(i16::from_le_bytes([a, b])) / 32_768.0,
        #[allow(clippy::cast_precision_loss, reason = "a sample")]
        [a, b, c, d] => i32::from_le_bytes([a, b, c, d]) as f32 / 2_147_483_648.0,
        _ => 0.0,
    }
}

/// Serves one connection until it closes or sends what cannot be read.
async fn connection(
    read: impl AsyncRead + Unpin,
    mut write: impl AsyncWrite + Unpin,
    service: Arc<Service>,
    peer: String,
    quiet: std::time::Duration,
) {
    let mut reader = BufReader::new(read);
    let mut audio: Option<Audio> = None;
    let mut language: Option<String> = None;
    // After `detect`: the audio is listened to for a phrase, not transcribed.
    let mut detecting: Option<Detecting> = None;
    loop {
        let Ok(read) = tokio::time::timeout(quiet, wire::read(&mut reader)).await else {
            tracing::info!(%peer, "a Wyoming client sent nothing for {quiet:?}: closed");
            let why = format!("nothing came for {} s: the connection is closed", quiet.as_secs());
            let _ = send(&mut write, &error(&why, "timeout")).await;
            return;
        };
        let event = match read {
            Ok(Some(event)) => event,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(%peer, "a Wyoming client sent what cannot be read: {e}");
                let _ =
                    send(&mut write, &error(&format!("cannot read that: {e}"), "bad_event")).await;
                return;
            }
        };
        let reply = match event.kind.as_str() {
            "describe" => Some(service.info()),
            "ping" => Some(Event::new("pong", json!({ "text": event.data.get("text") }))),
            "transcribe" => {
                language = event.data.get("language").and_then(|v| v.as_str()).map(str::to_owned);
                detecting = None;
                None
            }
            "detect" => {
                let names: Vec<String> = event
                    .data
                    .get("names")
                    .and_then(|v| v.as_array())
                    .map(|names| {
                        names.iter().filter_map(|n| n.as_str().map(str::to_owned)).collect()
                    })
                    .unwrap_or_default();
                match service.detector(names).await {
                    Ok(detector) => {
                        detecting = Some(Detecting { detector, heard: false, at: 0 });
                        None
                    }
                    Err(why) => Some(error(&why, "wake")),
                }
            }
            "synthesize" => {
                let text = event.data.get("text").and_then(|v| v.as_str()).unwrap_or_default();
                match service.speak(text.to_owned()).await {
                    Ok((samples, rate)) => {
                        if speak(&mut write, &samples, rate).await.is_err() {
                            return;
                        }
                        tracing::info!(%peer, chars = text.len(), "said a text");
                        None
                    }
                    Err(why) => Some(error(&why, "tts")),
                }
            }
            "audio-start" => match Audio::start(&event) {
                Ok(started) => {
                    audio = Some(started);
                    None
                }
                Err(why) => Some(error(&why, "bad_audio")),
            },
            "audio-chunk" if detecting.is_some() => match (audio.as_mut(), detecting.as_mut()) {
                (Some(a), Some(d)) => {
                    let _ = a.chunk(&event.payload);
                    d.hear(&a.drain())
                }
                _ => Some(error("audio-chunk before audio-start", "bad_audio")),
            },
            "audio-stop" if detecting.is_some() => {
                audio = None;
                let heard = detecting.take().is_some_and(|d| d.heard);
                (!heard).then(|| Event::new("not-detected", json!({})))
            }
            "audio-chunk" => match audio.as_mut() {
                None => Some(error("audio-chunk before audio-start", "bad_audio")),
                Some(a) => a.chunk(&event.payload).err().map(|why| {
                    audio = None;
                    error(&why, "too_long")
                }),
            },
            "audio-stop" => match audio.take() {
                None => Some(error("audio-stop before audio-start", "bad_audio")),
                Some(a) => {
                    let samples = a.finish();
                    let heard = samples.len();
                    let reply = match service.transcribe(samples).await {
                        Ok(text) => {
                            tracing::info!(%peer, samples = heard, chars = text.len(), "transcribed a request");
                            let language =
                                language.take().unwrap_or_else(|| service.language.clone());
                            Event::new("transcript", json!({ "text": text, "language": language }))
                        }
                        Err((why, code)) => error(&why, code),
                    };
                    Some(reply)
                }
            },
            other => {
                tracing::debug!(%peer, kind = other, "ignored a Wyoming event");
                None
            }
        };
        if let Some(reply) = reply
            && send(&mut write, &reply).await.is_err()
        {
            return;
        }
    }
}

/// A connection listening for a wake phrase: its detector, whether one was heard, and the
/// samples heard so far (the timestamps).
struct Detecting {
    detector: stt_wake::Detector,
    heard: bool,
    at: u64,
}

impl Detecting {
    /// 16 kHz samples of the stream: a `detection` when a phrase is heard in them.
    fn hear(&mut self, samples: &[f32]) -> Option<Event> {
        self.at += samples.len() as u64;
        match self.detector.push(samples) {
            Ok(heard) => heard.into_iter().next().map(|heard| {
                self.heard = true;
                let ms = heard.at_sample * 1000 / u64::from(stt_wake::SAMPLE_RATE);
                Event::new("detection", json!({ "name": heard.phrase, "timestamp": ms }))
            }),
            Err(e) => Some(error(&format!("the wake detector failed: {e}"), "wake")),
        }
    }
}

/// The phrases there are: the heads installed beside the feature models, and `enrolled` when a
/// phrase is enrolled.
fn phrases(models: &std::path::Path, enrolled: &std::path::Path) -> Vec<String> {
    let features = [stt_wake::features::MEL_FILE, stt_wake::features::EMBEDDING_FILE];
    let mut names: Vec<String> = std::fs::read_dir(stt_wake::wake_dir(models))
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|file| !features.contains(&file.as_str()))
        .filter_map(|file| file.strip_suffix(".onnx").map(str::to_owned))
        .collect();
    names.sort();
    if enrolled.is_file() {
        names.push(crate::wake::ENROLLED.to_owned());
    }
    names
}

/// Sends `samples` at `rate` as one audio stream: `audio-start`, 16-bit chunks, `audio-stop`.
async fn speak(
    write: &mut (impl AsyncWrite + Unpin),
    samples: &[f32],
    rate: u32,
) -> std::io::Result<()> {
    let format = json!({ "rate": rate, "width": 2, "channels": 1 });
    send(write, &Event::new("audio-start", format.clone())).await?;
    for chunk in samples.chunks(1024) {
        let payload: Vec<u8> = chunk
            .iter()
            .flat_map(|s| ((s.clamp(-1.0, 1.0) * 32_767.0) as i16).to_le_bytes())
            .collect();
        send(write, &Event { payload, ..Event::new("audio-chunk", format.clone()) }).await?;
    }
    send(write, &Event::new("audio-stop", json!({}))).await
}

fn error(text: &str, code: &str) -> Event {
    Event::new("error", json!({ "text": text, "code": code }))
}

async fn send(write: &mut (impl AsyncWrite + Unpin), event: &Event) -> std::io::Result<()> {
    write.write_all(&event.encode()).await?;
    write.flush().await
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test: a failure should panic")]

    use super::*;

    #[test]
    fn listen_takes_tcp_or_unix_and_says_what_else() {
        assert_eq!(
            Listen::parse("tcp://127.0.0.1:10300").unwrap(),
            Listen::Tcp("127.0.0.1:10300".parse().unwrap())
        );
        assert_eq!(
            Listen::parse("unix:///run/stt.sock").unwrap(),
            Listen::Unix("/run/stt.sock".into())
        );
        for bad in ["127.0.0.1:10300", "tcp://localhost:10300", "unix://", "http://x"] {
            let why = Listen::parse(bad).unwrap_err().to_string();
            assert!(why.contains("tcp://127.0.0.1:10300"), "{bad}: {why}");
        }
    }

    #[test]
    fn audio_in_any_common_shape_becomes_16k_mono() {
        let start = |rate: u32, width: u16, channels: u16| {
            Audio::start(&Event::new(
                "audio-start",
                json!({"rate": rate, "width": width, "channels": channels}),
            ))
        };
        // One second of stereo 16-bit at 48 kHz, left full scale, right silent: a half.
        let mut stereo = start(48_000, 2, 2).unwrap();
        let frame = [i16::MAX.to_le_bytes(), 0_i16.to_le_bytes()].concat();
        stereo.chunk(&frame.repeat(48_000)).unwrap();
        let samples = stereo.finish();
        assert!((15_900..=16_100).contains(&samples.len()), "{}", samples.len());
        assert!((samples[8_000] - 0.5).abs() < 0.01, "{}", samples[8_000]);
        assert!(start(16_000, 3, 1).unwrap_err().contains("send 16000 Hz, width 2, 1 channel"));
        let mut long = start(16_000, 2, 1).unwrap();
        let why = long.chunk(&vec![0; 2 * 16_000 * (MAX_AUDIO_S + 1)]).unwrap_err();
        assert!(why.contains("one command at a time"), "{why}");
    }
}
