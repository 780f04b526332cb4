//! The running daemon: four threads of work and what each publishes.
//!
//! ```text
//! audio thread ──AudioEvent──▶ vad thread ──Job──▶ whisper thread
//!  (stt-audio)   (bounded)     speech_start   │      transcript_partial (open segments)
//!                              speech_stop    │      transcript (with its speaker)
//!                                             │      segment_done
//!                              error{audio}   │      error{stt}
//!                                             └─Segment─▶ speaker thread (when on)
//!                                                        speakers, error{speaker}
//! async runtime: the publish socket, heartbeats, signals, and the end of a file
//! ```
//!
//! Ordering: a segment's `speech_start` and `speech_stop` are published by the vad thread
//! before its job is queued, and its `transcript` and `segment_done` by the whisper thread
//! after, so subscribers always see them in that order. Every closed segment ends with a
//! `segment_done`: transcribed, too short to transcribe, dropped because transcription fell
//! behind (with an `error` saying so), or failed (with an `error`).
//!
//! Live partials (`[daemon].partials`): while a segment is open the vad thread offers the
//! whisper worker a pass over it so far ([`crate::live::Schedule`]); the worker runs it only
//! when no closed segment waits, and the whisper thread publishes what two passes agree on
//! ([`crate::live::Live`]). A segment's partials all come before its `transcript`.
//!
//! Pauses (`[daemon].end_of_turn`): at a pause the vad thread offers whisper the segment so
//! far, decoded as a final; the whisper thread answers each such pass with a
//! [`crate::turn::Verdict`] on a channel back, and the vad thread may end the turn there. A
//! segment that closes with exactly the audio of a pause pass has its final at once.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use stt_asr::turn::Shape;
use stt_asr::{Done, Job, Offered, Pass, QueuePolicy, Submitted, Worker};
use stt_audio::{AudioEvent, InputState, Pace, Sink, Source, StopFlag};
use stt_bus::{BoundSocket, Publisher};
use stt_config::Config;
use stt_proto::{
    AudioState, DaemonEvent, DaemonHeartbeat, ErrorCode, ErrorMsg, Hello, SegmentDone, SpeechStart,
    SpeechStop, Transcript,
};

use crate::live::{Live, Schedule};
use crate::turn::{Turn, Verdict};
use crate::vocabulary::Vocabulary;
use stt_vad::SegEvent;

use crate::settings::VadSegmenter;
use crate::speakers::{Lane, Who};
use crate::{Cli, settings};

/// Audio chunks (32 ms each) that may wait between the audio thread and the VAD.
const AUDIO_QUEUE: usize = 64;

/// Runs the daemon until SIGINT/SIGTERM, or until a file input has ended and every segment
/// is published (unless `--stay`).
pub async fn serve(config: Config, cli: Cli) -> anyhow::Result<()> {
    let mut terminate = stt_app::signals::Terminate::catch()?;
    // Caught before the socket answers, so `up`'s SIGUSR1 can never find the default action
    // (which would end the process).
    let mut release = if cli.hold_input {
        let usr1 = tokio::signal::unix::SignalKind::user_defined1();
        Some(tokio::signal::unix::signal(usr1).context("cannot catch SIGUSR1")?)
    } else {
        None
    };
    let socket_path = match &cli.socket {
        Some(path) => path.clone(),
        None => stt_config::dirs::daemon_socket(&config)?,
    };
    let asr = settings::asr(&config, &cli)?;
    let (source, policy) = source(&config, &cli)?;

    // Bind first: a second daemon must fail before it loads a model or opens a microphone.
    let socket = BoundSocket::bind(&socket_path, "stt-daemon")?;
    let publisher = Publisher::default();
    let segmenter = settings::segmenter(&config)?;

    let (speakers, roster_warnings) = crate::speakers::Lane::start(&config, &publisher)?;
    // Without the phrase the rest still works: said, not fatal.
    let mut wake_warning = None;
    let wake = crate::wake::Lane::start(&config, &publisher).unwrap_or_else(|e| {
        let why = format!("{e:#}; the daemon runs without wake");
        tracing::warn!("{why}");
        wake_warning = Some(why);
        None
    });
    // A file fed as fast as whisper goes has no one waiting for its words as they are said.
    let partials = (config.daemon.partials && !cli.source.fast)
        .then(|| Schedule::new(config.daemon.partial_interval_ms));
    let (verdicts, verdicts_rx) = std::sync::mpsc::channel();
    let remote = settings::remote(&config)?;
    let remote_host = remote.as_ref().map(|r| stt_asr::remote::host(&r.url));
    let worker = {
        let (publisher, speakers) = (publisher.clone(), speakers.clone());
        let mut whisper = Whispered { live: partials.is_some().then(Live::default), verdicts };
        let on_done = move |done| whisper.publish(&publisher, done, speakers.as_ref());
        let capacity = config.daemon.transcribe_queue_size as usize;
        match remote {
            None => Worker::spawn(asr, capacity, on_done)?,
            Some(remote) => {
                let fallback = config.daemon.remote_fallback == stt_config::RemoteFallback::Local;
                tracing::warn!(
                    server = remote.url,
                    fallback,
                    "[daemon].asr = \"remote\": each segment's audio is sent to the server"
                );
                // The client blocks: it is made (and lives) on the worker's thread.
                let load = move || {
                    let remote = stt_asr::remote::Remote::new(remote)
                        .map_err(|e| stt_asr::AsrError::Remote(e.to_string()))?;
                    let local = if fallback { Some(stt_asr::Whisper::load(asr)?) } else { None };
                    Ok(stt_asr::remote::Hybrid::new(remote, local))
                };
                Worker::spawn_with(load, capacity, on_done)?
            }
        }
    };
    let turn = Turn::new(
        config.daemon.end_of_turn,
        config.daemon.end_of_turn_pause_ms,
        cli.source.fast,
        verdicts_rx,
    );
    let worker = Arc::new(worker);
    let heart = Arc::new(Heart::new(
        worker.model_name().to_owned(),
        remote_host,
        wake.as_ref().map(|w| w.phrase().to_owned()),
    ));
    tracing::info!(
        socket = %socket_path.display(),
        model = worker.model_name(),
        input = ?source,
        "serving events"
    );

    let shutdown = CancellationToken::new();
    let server = tokio::spawn(stt_bus::publish_server::serve(
        socket,
        publisher.clone(),
        Hello::new("stt-daemon"),
        shutdown.clone(),
    ));
    // Heartbeats start before the input opens, so a held daemon still shows it is alive.
    let heartbeat = tokio::spawn(heartbeats(
        Arc::clone(&heart),
        Arc::clone(&worker),
        publisher.clone(),
        Duration::from_millis(config.daemon.heartbeat_interval_ms),
        shutdown.clone(),
    ));
    let open = tokio::select! {
        () = terminate.recv() => false,
        () = wait_to_open(release.as_mut(), cli.wait_for_subscriber, &publisher) => true,
    };
    if !open {
        tracing::info!("shutting down before the input opened");
        let idle = Arc::clone(&worker);
        let _ = tokio::task::spawn_blocking(move || idle.finish()).await;
        shutdown.cancel();
        let _ = heartbeat.await;
        let _ = server.await;
        return Ok(());
    }

    // Said once someone may be listening (`--wait-for-subscriber`), as well as in the log.
    for warning in roster_warnings {
        publisher.publish(&DaemonEvent::Error(ErrorMsg::new(ErrorCode::Speaker, warning)));
    }
    if let Some(why) = wake_warning {
        publisher.publish(&DaemonEvent::Error(ErrorMsg::new(ErrorCode::Wake, why)));
    }

    let stop = StopFlag::new();
    let (sink, audio_rx) = Sink::channel(AUDIO_QUEUE);
    let input = stt_audio::start(source, sink, stop.clone())?;

    let (ended_tx, ended_rx) = tokio::sync::oneshot::channel();
    let vad_thread = {
        let (worker, heart, publisher) = (Arc::clone(&worker), Arc::clone(&heart), publisher);
        std::thread::Builder::new()
            .name("vad".into())
            .spawn(move || {
                let mut lanes = Lanes {
                    worker: &worker,
                    speakers: speakers.as_ref(),
                    wake: wake.as_deref(),
                    partials,
                    turn,
                    vocabulary: RefCell::new(Vocabulary::new(&config)),
                };
                let outcome = segment(segmenter, &audio_rx, &mut lanes, policy, &heart, &publisher);
                let _ = ended_tx.send(outcome);
            })
            .context("cannot start the VAD thread")?
    };

    let stay = cli.stay;
    let result = tokio::select! {
        () = terminate.recv() => {
            tracing::info!("shutting down");
            Ok(())
        }
        ended = wait_for_end(ended_rx, stay) => ended,
    };

    stop.stop();
    let _ = input.stop_and_join();
    let _ = tokio::task::spawn_blocking(move || vad_thread.join()).await;
    // Publish what is already queued: nothing accepted is lost.
    let draining = Arc::clone(&worker);
    let _ = tokio::task::spawn_blocking(move || draining.finish()).await;
    shutdown.cancel();
    let _ = heartbeat.await;
    let _ = server.await;
    result
}

/// Resolves when the input may open: after SIGUSR1 when held (`--hold-input`), then once a
/// subscriber is connected (`--wait-for-subscriber`).
async fn wait_to_open(
    release: Option<&mut tokio::signal::unix::Signal>,
    wait_for_subscriber: bool,
    publisher: &Publisher,
) {
    if let Some(release) = release {
        tracing::info!("holding the input until SIGUSR1");
        release.recv().await;
        tracing::info!("SIGUSR1: opening the input");
    }
    if wait_for_subscriber {
        tracing::info!("waiting for a subscriber before opening the input");
        while publisher.subscribers() == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Resolves when the input has ended (a file or stdin) and, unless `stay`, its segments are
/// all queued; with `stay`, never.
async fn wait_for_end(
    ended: tokio::sync::oneshot::Receiver<anyhow::Result<()>>,
    stay: bool,
) -> anyhow::Result<()> {
    let outcome = ended.await.unwrap_or(Ok(()));
    if let Err(e) = &outcome {
        tracing::error!("{e:#}");
    }
    if stay {
        tracing::info!("input ended; still serving (--stay)");
        std::future::pending::<()>().await;
    }
    tracing::info!("input ended; publishing what is left, then exiting");
    outcome
}

/// The audio source the flags ask for, and what to do when transcription falls behind.
fn source(config: &Config, cli: &Cli) -> anyhow::Result<(Source, QueuePolicy)> {
    let pace = if cli.source.fast { Pace::Fast } else { Pace::RealTime };
    Ok(match cli.input.as_deref() {
        Some(path) if path.as_os_str() == "-" => (
            Source::Pcm {
                reader: Box::new(std::io::stdin()),
                format: cli.source.format.parse()?,
                rate: cli.source.rate,
                channels: cli.source.channels,
                name: "stdin".into(),
            },
            QueuePolicy::Block,
        ),
        Some(path) => (Source::Wav { path: path.to_owned(), pace }, QueuePolicy::Block),
        None => {
            let device =
                cli.source.device.clone().or_else(|| {
                    Some(config.daemon.device.clone()).filter(|d| !d.trim().is_empty())
                });
            (Source::Microphone { device }, QueuePolicy::DropOldest)
        }
    })
}

/// Where the VAD thread sends a closed segment: whisper, and the speaker lane when on; when
/// it offers whisper a partial pass, when partials are on; and which pauses it reads.
struct Lanes<'a> {
    worker: &'a Worker,
    speakers: Option<&'a Lane>,
    /// The wake lane, which hears every chunk (`[wake]`).
    wake: Option<&'a crate::wake::Lane>,
    partials: Option<Schedule>,
    turn: Turn,
    vocabulary: RefCell<Vocabulary>,
}

/// The VAD thread: audio in, segments out. Returns when the input ends or goes away.
fn segment(
    mut segmenter: VadSegmenter,
    audio: &std::sync::mpsc::Receiver<AudioEvent>,
    lanes: &mut Lanes<'_>,
    policy: QueuePolicy,
    heart: &Heart,
    publisher: &Publisher,
) -> anyhow::Result<()> {
    let mut next_seg_id = 0u64;
    let open: Cell<Option<u64>> = Cell::new(None);
    let opened = Cell::new(false);
    let mut handle = |events: Vec<SegEvent>| {
        for event in events {
            match event {
                SegEvent::Start { start_s } => {
                    next_seg_id += 1;
                    open.set(Some(next_seg_id));
                    opened.set(true);
                    tracing::debug!(seg_id = next_seg_id, start_s, "speech started");
                    publisher.publish(&DaemonEvent::SpeechStart(SpeechStart {
                        seg_id: next_seg_id,
                        start: start_s,
                    }));
                }
                SegEvent::End { start_s, end_s, samples, speech_s, too_short } => {
                    let seg_id = open.take().unwrap_or(next_seg_id);
                    tracing::debug!(seg_id, end_s, speech_s, too_short, "speech stopped");
                    publisher.publish(&DaemonEvent::SpeechStop(SpeechStop { seg_id, end: end_s }));
                    if too_short {
                        publisher.publish(&DaemonEvent::SegmentDone(SegmentDone { seg_id }));
                        continue;
                    }
                    // The speaker lane first (it mostly has the segment already, from the
                    // pause that settled it).
                    if let Some(speakers) = lanes.speakers {
                        speakers.submit(seg_id, &samples, speech_s);
                    }
                    let job = Job {
                        seg_id,
                        start: start_s,
                        end: end_s,
                        samples,
                        speech_s,
                        vocabulary: lanes.vocabulary.borrow_mut().current(),
                    };
                    match lanes.worker.submit(job, policy) {
                        Submitted::Queued => {}
                        Submitted::DroppedOldest(old) => {
                            publish_error(
                                publisher,
                                ErrorCode::Stt,
                                format!(
                                    "segment {old} was dropped untranscribed: transcription is \
                                     behind (lower [daemon].threads contention, or use a smaller \
                                     model)"
                                ),
                            );
                            publisher
                                .publish(&DaemonEvent::SegmentDone(SegmentDone { seg_id: old }));
                        }
                        Submitted::Closed => {
                            publisher.publish(&DaemonEvent::SegmentDone(SegmentDone { seg_id }));
                        }
                    }
                }
            }
        }
    };
    let mut meter = crate::levels::Meter::new();
    for event in audio {
        match event {
            AudioEvent::Samples(samples) => {
                if let Some(wake) = lanes.wake {
                    wake.hear(&samples);
                }
                handle(segmenter.push(&samples));
                if let Some(levels) = meter.push(&samples, open.get()) {
                    publisher.publish(&DaemonEvent::Levels(levels));
                }
                if let (Some(schedule), Some(seg_id)) = (lanes.partials.as_mut(), open.get()) {
                    if opened.replace(false) {
                        schedule.opened();
                    }
                    offer_partial(schedule, &segmenter, seg_id, lanes.worker, &lanes.vocabulary);
                }
                if let Some(seg_id) = open.get() {
                    read_pause(&mut segmenter, seg_id, lanes);
                }
                let grown = segmenter.growing();
                if let Some(len) = lanes.turn.ended(open.get().zip(grown.as_ref())) {
                    tracing::debug!(seg_id = open.get(), len, "the turn ended before the hangover");
                    handle(segmenter.end_turn(len));
                }
            }
            AudioEvent::State(InputState::Capturing) => heart.set_audio(AudioState::Capturing),
            AudioEvent::State(InputState::Retrying { error, next_attempt }) => {
                // A gap in the audio: close any open segment rather than glue across it.
                handle(segmenter.finish());
                heart.set_audio(AudioState::Retrying);
                publish_error(
                    publisher,
                    ErrorCode::Audio,
                    format!("{error}; retrying in {:.1} s", next_attempt.as_secs_f64()),
                );
            }
            AudioEvent::State(InputState::Ended) => {
                handle(segmenter.finish());
                heart.set_audio(AudioState::Ended);
                publisher.publish(&heart.beat(lanes.worker.backlog(), lanes.worker.is_alive()));
                return Ok(());
            }
        }
    }
    handle(segmenter.finish());
    Ok(())
}

/// Offers the whisper worker a partial pass over the open segment `seg_id`, when one is due.
fn offer_partial(
    schedule: &mut Schedule,
    segmenter: &VadSegmenter,
    seg_id: u64,
    worker: &Worker,
    vocabulary: &RefCell<Vocabulary>,
) {
    let Some(grown) = segmenter.growing() else { return };
    if !schedule.due(grown.samples.len(), grown.speech_s, worker.partial_pending())
        || grown.pause_len() >= PARTIALS_PAUSE
    {
        return;
    }
    let job = Job {
        seg_id,
        start: grown.start_s,
        end: grown.start_s + stt_asr::whisper::seconds(grown.samples),
        samples: grown.samples.to_vec(),
        speech_s: grown.speech_s,
        vocabulary: vocabulary.borrow_mut().current(),
    };
    if worker.offer_partial(job) == Offered::Taken {
        schedule.taken(grown.samples.len());
    }
}

/// A pause this long (in samples, 50 ms) stops partial passes: the pause passes read it, the
/// first at 100 ms with the default end of turn, and must not wait behind a partial begun
/// just before.
const PARTIALS_PAUSE: usize = 800;

/// A pause in the open segment `seg_id` as long as its tail: what its `End` will carry if
/// nobody speaks again. The speaker lane may start on it now, during the hangover, rather
/// than after it beside whisper; and whisper reads it ([`Turn`]).
fn read_pause(segmenter: &mut VadSegmenter, seg_id: u64, lanes: &Lanes<'_>) {
    let Some(settled) = segmenter.take_settled() else { return };
    if let Some(speakers) = lanes.speakers {
        speakers.preview(seg_id, settled.samples.clone(), settled.speech_s);
    }
    if lanes.turn.active() {
        offer_pause(lanes, seg_id, settled.start_s, settled.samples, settled.speech_s);
    }
}

/// Offers whisper a pause pass over the open segment's first `samples` (with `--fast`,
/// waiting for its verdict).
fn offer_pause(lanes: &Lanes<'_>, seg_id: u64, start_s: f64, samples: Vec<f32>, speech_s: f64) {
    let len = samples.len();
    lanes.turn.voice(seg_id, len, &samples);
    let job = Job {
        seg_id,
        start: start_s,
        end: start_s + stt_asr::whisper::seconds(&samples),
        speech_s,
        samples,
        vocabulary: lanes.vocabulary.borrow_mut().current(),
    };
    if lanes.worker.offer_pause(job) == Offered::Taken {
        lanes.turn.taken(seg_id, len);
    }
}

/// The whisper thread's side: what it publishes of each pass, and what it tells the VAD
/// thread of each pause pass.
struct Whispered {
    /// `None` when partials are off.
    live: Option<Live>,
    verdicts: std::sync::mpsc::Sender<Verdict>,
}

impl Whispered {
    /// The report for one pass. A partial or a pause pass: what it shows now, if that
    /// changed; and for a pause pass, whether its text ends the turn. A final: its
    /// transcript (unless there was nothing real in it) with who spoke it, when the speaker
    /// lane is on, then `segment_done`.
    fn publish(&mut self, publisher: &Publisher, done: Done, speakers: Option<&Lane>) {
        // How the pass was done, when a person should know (a remote server failed and the
        // local model did it): told by the pass that did it, so a final that is its pause
        // pass's text (`ahead`) does not tell it again, and a pause pass's is not lost when
        // the segment then grows.
        if let Ok(stt_asr::Transcription { note: Some(note), .. }) = &done.outcome
            && !done.ahead
        {
            publish_error(publisher, ErrorCode::Stt, format!("segment {}: {note}", done.seg_id));
        }
        if done.pass == Pass::Final {
            if let Some(live) = self.live.as_mut() {
                live.finished(done.seg_id);
            }
            publish_final(publisher, done, speakers);
            return;
        }
        let end_p = done.outcome.as_ref().map_or(0.0, |t| t.end_p);
        let text = match &done.outcome {
            Ok(transcription) => {
                tracing::trace!(
                    pass = ?done.pass,
                    elapsed_ms = done.elapsed.as_millis(),
                    raw = %transcription.raw,
                    "pass over the open segment"
                );
                transcription.text.as_deref()
            }
            // The final will say it, if it fails too.
            Err(e) => {
                tracing::debug!("{:?} pass failed: {e}", done.pass);
                None
            }
        };
        if let Some(live) = self.live.as_mut()
            && let Some(partial) = live.partial(done.seg_id, text)
        {
            publisher.publish(&DaemonEvent::TranscriptPartial(partial));
        }
        if done.pass == Pass::Pause {
            let shape = text.map_or(Shape::Open, |text| stt_asr::turn::shape(text, end_p));
            tracing::debug!(?shape, end_p, len = done.len, text, "a pause read");
            // The VAD thread is gone only when the input has ended.
            let verdict = Verdict { seg_id: done.seg_id, len: done.len, shape };
            let _ = self.verdicts.send(verdict);
        }
    }
}

/// A final's transcript (unless there was nothing real in it) with who spoke it, when the
/// speaker lane is on, then `segment_done`.
fn publish_final(publisher: &Publisher, done: Done, speakers: Option<&Lane>) {
    let who = speakers.map_or(Who::NONE, |lane| lane.take(done.seg_id));
    match done.outcome {
        Ok(transcription) => {
            // In the worker's span, which names the segment.
            tracing::debug!(
                elapsed_ms = done.elapsed.as_millis(),
                waited_ms = done.waited.as_millis(),
                ahead = done.ahead,
                no_speech = transcription.no_speech_prob,
                raw = %transcription.raw,
                decodes = transcription.decodes,
                runaway = ?transcription.runaway,
                "transcribed"
            );
            if let Some(text) = transcription.text {
                publisher.publish(&DaemonEvent::Transcript(Transcript {
                    seg_id: done.seg_id,
                    text,
                    language: transcription.language,
                    start: done.start,
                    end: done.end,
                    duration: done.end - done.start,
                    speaker_id: who.id,
                    speaker_status: who.status,
                    speaker: who.name,
                    speaker_score: who.score,
                }));
            }
        }
        Err(e) => publish_error(
            publisher,
            ErrorCode::Stt,
            format!("segment {} could not be transcribed: {e}", done.seg_id),
        ),
    }
    publisher.publish(&DaemonEvent::SegmentDone(SegmentDone { seg_id: done.seg_id }));
}

fn publish_error(publisher: &Publisher, code: ErrorCode, message: String) {
    tracing::warn!("{message}");
    publisher.publish(&DaemonEvent::Error(ErrorMsg::new(code, message)));
}

/// What every heartbeat carries that is not the backlog.
#[derive(Debug)]
struct Heart {
    started: Instant,
    seq: AtomicU64,
    audio: Mutex<AudioState>,
    model: String,
    /// Where finals are sent, with a remote server.
    remote: Option<String>,
    /// The wake phrase listened for.
    wake: Option<String>,
}

impl Heart {
    fn new(model: String, remote: Option<String>, wake: Option<String>) -> Self {
        Self {
            started: Instant::now(),
            seq: AtomicU64::new(0),
            audio: Mutex::new(AudioState::Idle),
            model,
            remote,
            wake,
        }
    }

    fn set_audio(&self, state: AudioState) {
        *self.audio.lock().unwrap_or_else(PoisonError::into_inner) = state;
    }

    fn beat(&self, backlog: usize, stt_alive: bool) -> DaemonEvent {
        DaemonEvent::Heartbeat(DaemonHeartbeat {
            seq: self.seq.fetch_add(1, Ordering::SeqCst) + 1,
            uptime_s: self.started.elapsed().as_secs_f64(),
            backlog: u32::try_from(backlog).unwrap_or(u32::MAX),
            stt_healthy: stt_alive,
            audio: *self.audio.lock().unwrap_or_else(PoisonError::into_inner),
            model: self.model.clone(),
            remote: self.remote.clone(),
            wake: self.wake.clone(),
        })
    }
}

async fn heartbeats(
    heart: Arc<Heart>,
    worker: Arc<Worker>,
    publisher: Publisher,
    every: Duration,
    shutdown: CancellationToken,
) {
    let mut ticker = stt_app::Ticker::new(every, shutdown);
    while ticker.tick().await {
        publisher.publish(&heart.beat(worker.backlog(), worker.is_alive()));
    }
}
