//! The assistant's one owner: a single task holds every piece of domain state (the core, the
//! inference queue, the running job, the conversation, the calls waiting for a yes or no,
//! the timers, whether the model answers) and is the only one that changes it or publishes.
//! Its loop waits on a small fixed set: shutdown, the daemon subscription, the control
//! requests with their reply slot, one [`Input`] channel (the lanes' reports), its helper
//! tasks, the heartbeat ticker and the next deadline (a timer, a held execute, a turn's end,
//! a wake-up). At the end of every turn it starts the next model job if one may start
//! ([`Owner::start_next`]). Events on the wire thus have one total order.
//!
//! Lanes (the LLM jobs, memory, the voice, triage, dictation, the writer) hold no state of
//! the assistant's: they get a snapshot and report back through the channel, wrapped as an
//! [`Input`]. The owner's methods are split by concern: `jobs` (a job's life), `chat`,
//! `intents`, `memory`, `providers`, `triage`, `voice`, `wake` and `dictate`.

mod chat;
mod dictate;
mod intents;
mod jobs;
mod memory;
mod providers;
mod triage;
mod voice;
mod wake;

pub use providers::probes;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use stt_bus::{ConnInfo, Handler, Link, Publisher, Subscription};
use stt_llm::Provider;
use stt_llm::registry::{Probed, Registry};
use stt_proto::speaker_files::SpeakerEditOp;
use stt_proto::{
    Ack, AssistantEvent, AssistantHeartbeat, ChatMessage, ChatRole, DaemonEvent, ErrorCode,
    ErrorMsg, LaneState, Request, Status,
};
use stt_tools::SpeakerRecord;

use crate::core::{Core, Effect, Outside};
use crate::kind::{JobKind, Need};
use crate::lane::State;
use crate::llm::{self, Chat, JobEnv, Report, Work};
use crate::memory::{Episode, Memory};
use crate::queue::InferenceQueue;
use crate::session::{self, Tokens};
use crate::timers::Timers;
use crate::writer::Writer;
use providers::Providers;

/// A control request and where its direct reply goes.
#[derive(Debug)]
pub struct Asked {
    pub request: Request,
    pub reply: oneshot::Sender<AssistantEvent>,
}

/// Control requests waiting for the loop, at most. The channel from the control server is
/// bounded by this: a client that floods it (a script in a loop, a stuck hotkey) is answered
/// `busy` at once for each request over it, and nothing already accepted is lost. The loop
/// takes a request in microseconds, so only a flood or a stalled loop fills it.
pub const REQUESTS_WAITING: usize = 64;

/// What the lanes the loop started report back, apart from the daemon's events, the
/// requests and the clock. Unbounded on purpose: every report comes from work the loop
/// itself started (one model job at a time, the memory and writer threads, the probe), so
/// its volume is bounded by that work; a bound would have to drop a report (a lost
/// `Finished` would stall the queue for good) or block a job's task on the loop it reports
/// to.
#[derive(Debug)]
pub enum Input {
    /// A report from LLM job `job`.
    Llm { job: u64, report: Report },
    /// What a probe of every provider found.
    Providers(Vec<Probed>),
    /// A write on the writer thread failed.
    Written(crate::writer::Report),
    /// What the memory lane has to say (ready, or off and why).
    Memory(crate::memory::Report),
    /// What the voice lane has to say (ready, off and why, a piece it could not say).
    Voice(crate::voice::Report),
    /// What the triage lane has to say (ready, off and why, a window's signals).
    Triage(crate::triage::Report),
    /// What the dictation lane has to say (a phrase it could not type, a dictation's end).
    Dictate(crate::dictate::Report),
    /// A report of command `job`, answered without the model (`owner/intents.rs`).
    Local { job: u64, report: Report },
}

/// What a helper task the loop started ([`Owner::help`]) comes back with.
#[derive(Debug)]
pub enum Helped {
    /// What a probe asked for by [`Owner::probe_now`] found.
    Providers(Vec<Probed>),
    /// What a probe asked for by [`Owner::probe_soon`] found.
    Reprobed(Vec<Probed>),
    /// A slash command that took a while is done; its reply goes to `reply`.
    Slash { reply: oneshot::Sender<AssistantEvent>, done: chat::SlashDone },
    /// Memory answered a `memory` request; its reply goes to `reply`.
    MemoryDone { reply: oneshot::Sender<AssistantEvent>, done: memory::MemoryDone },
    /// Whether a dream is due now (and why).
    DreamDue(Option<String>),
    /// The warm-up request to the local model is over ([`Owner::warm_up`]).
    Warmed,
    /// Done, with nothing to say (a notification shown, a dream's end recorded).
    Nothing,
}

/// What the owner is made of, apart from the state it builds itself.
#[derive(Debug)]
pub struct Parts {
    pub core: Core,
    pub queue: InferenceQueue,
    pub env: JobEnv,
    pub writer: Writer,
    pub publisher: Publisher,
    /// Connections subscribed as viewers, counted by the control server.
    pub viewers: Arc<AtomicUsize>,
    /// The model providers; `None` when `[llm].enabled` is false.
    pub registry: Option<Registry>,
    /// Where the chat session is kept, and how long it lives without a turn.
    pub session_file: PathBuf,
    pub session_ttl: Duration,
    /// Where the timers are kept.
    pub timers_file: PathBuf,
    /// Where `/export` writes when given no path.
    pub export_dir: PathBuf,
    /// Long-term memory's settings; `None` when `[memory].enabled` is false. Its handle is
    /// `env.memory`, the jobs' too.
    pub memory: Option<crate::memory::Settings>,
    /// The voice lane's settings, whether replies are spoken at start among them.
    pub voice: crate::voice::Settings,
    /// The triage lane's settings; `None` when it is off.
    pub triage: Option<crate::triage::Settings>,
    /// The wake-ups' settings; `None` when the assistant does not speak up on its own.
    pub wake: Option<crate::wake::Settings>,
    /// The local time the loop goes by.
    pub clock: crate::clock::Clock,
    /// How dictation types, and into which session.
    pub dictate: stt_dictate::TypistSettings,
    /// The commands answered without the model; `None` when `[intents].enabled` is false.
    pub intents: Option<crate::intents::Local>,
}

/// A `command_execute` with `wait_ms`, held until the flow is ready or its deadline.
#[derive(Debug)]
struct Held {
    deadline: Instant,
    reply: oneshot::Sender<AssistantEvent>,
}

/// The job running, if any.
#[derive(Debug)]
struct Running {
    job: u64,
    handle: llm::Handle,
    /// The id of the job's reply line, once it has one.
    reply_id: Option<u64>,
    /// A chat turn's words, as sent (for the session's display turns).
    question: String,
    /// A chat turn's answer so far.
    answer: String,
    /// A person stopped it (`chat_stop`).
    stopped: bool,
    /// Its answer was cut off mid-stream.
    cut: bool,
    /// Background work: what to want again if a person stops it.
    again: Option<Work>,
    /// A person needed the model and stopped it ([`Owner::interrupt`]).
    preempted: bool,
    started: Instant,
    /// What its requests cost.
    tokens: Option<Tokens>,
    /// Bytes of `answer` handed to the voice so far.
    spoken: usize,
}

/// The state, and the loop that owns it.
#[derive(Debug)]
pub struct Owner {
    core: Core,
    /// The model jobs: queued, running, and what waits for one to start.
    jobs: jobs::Side,
    timers: Timers,
    /// A held execute, and the calls waiting for a yes or no.
    waiting: Waiting,
    writer: Writer,
    /// Where events go, and who watches.
    bus: Bus,
    registry: Option<Registry>,
    /// What is known of the providers, and what follows from it.
    providers: Providers,
    /// The conversation and its session on disk.
    chat: chat::Side,
    inputs: mpsc::UnboundedSender<Input>,
    /// The memory lane and its dreams.
    memory: memory::Side,
    /// The voice lane and what the loop keeps of it.
    voice: voice::Side,
    /// The dictation lane and how it types.
    dictate: dictate::Side,
    /// The triage lane and what the loop keeps of it.
    triage: triage::Side,
    /// Every lane: its state and queue for `status`, and the threads of those the owner
    /// started (the voice, triage, dictation), joined when the loop ends.
    lanes: crate::lane::Board,
    /// The wake-ups, when the assistant may speak up on its own.
    wake: Option<wake::Side>,
    clock: crate::clock::Clock,
    /// Idle speech, kept when the config asks.
    ambient: Ambient,
    /// The helper tasks started by the loop (probes, warm-up, memory's answers, slash
    /// commands): each comes back as a [`Helped`]; aborted when the loop ends.
    helpers: JoinSet<Helped>,
    /// The commands answered without the model, and the one running.
    intents: intents::Side,
}

/// What waits for the person: an execute held until the last words are in, and each call
/// waiting for a yes or no (where its answer goes).
#[derive(Debug, Default)]
struct Waiting {
    held: Option<Held>,
    answers: HashMap<String, oneshot::Sender<bool>>,
}

/// Where the owner's events go, and who watches them.
#[derive(Debug)]
struct Bus {
    publisher: Publisher,
    viewers: Arc<AtomicUsize>,
    heartbeat_seq: u64,
}

/// Idle speech: kept only with `[memory].capture_ambient`; the stretch being captured is
/// its session id and when its last words came.
#[derive(Debug)]
struct Ambient {
    capture: bool,
    current: Option<(u64, Instant)>,
}

/// Idle speech after this long a pause starts a new ambient session.
const AMBIENT_GAP: Duration = Duration::from_secs(600);

/// The memory lane's name in `status`.
const MEMORY: &str = "memory";

impl Owner {
    /// An owner whose lanes report into `inputs`.
    pub fn new(parts: Parts, inputs: mpsc::UnboundedSender<Input>) -> Self {
        let (session, note) =
            session::load(&parts.session_file, parts.clock.unix(), parts.session_ttl);
        if let Some(note) = note {
            tracing::info!("{note}");
        }
        let timers = crate::timers::load(&parts.timers_file);
        let timers_file = parts.timers_file.clone();
        let mut queue = parts.queue;
        let memory = parts.env.memory.clone();
        let (capture_ambient, dream_rules) = match parts.memory {
            Some(settings) => (settings.capture_ambient, settings.dreams),
            None => (false, crate::memory::DreamRules::OFF),
        };
        if memory.as_ref().is_some_and(Memory::tree) {
            // A summary left due by the last run is written first.
            queue.want(Work::Tree);
        }
        let voice_on = parts.voice.enabled;
        let mut lanes = crate::lane::Board::default();
        // Memory and the writer, which jobs and `serve` use too, started just before; every
        // other lane the owner keeps starts here, at once (the voice loads with
        // `[voice].enabled`).
        if let Some(memory) = &memory {
            lanes.add(MEMORY, memory.gauge(), LaneState::Started, []);
        }
        lanes.add("writer", parts.writer.gauge(), LaneState::Ready, []);
        let triage = triage::Side::start(parts.triage, &inputs, &mut lanes);
        let voice = voice::Side::start(parts.voice, &inputs, &mut lanes);
        let dictate = dictate::Side::start(parts.dictate, &inputs, &mut lanes);
        let wake = parts.wake.map(|settings| wake::Side::load(settings, parts.clock.local_now()));
        let mut owner = Self {
            core: parts.core,
            jobs: jobs::Side {
                queue,
                env: parts.env,
                running: None,
                next: 1,
                epoch: 0,
                starts: Vec::new(),
            },
            timers: Timers::default(),
            waiting: Waiting::default(),
            writer: parts.writer,
            bus: Bus { publisher: parts.publisher, viewers: parts.viewers, heartbeat_seq: 0 },
            registry: parts.registry,
            providers: Providers::new(),
            chat: chat::Side {
                conversation: session.chat(),
                session,
                file: parts.session_file,
                ttl: parts.session_ttl,
                export_dir: parts.export_dir,
            },
            inputs,
            memory: memory::Side {
                lane: memory,
                dreams: memory::Dreams::new(dream_rules, parts.clock.now()),
            },
            voice,
            dictate,
            triage,
            lanes,
            wake,
            clock: parts.clock,
            ambient: Ambient { capture: capture_ambient, current: None },
            helpers: JoinSet::new(),
            intents: intents::Side::new(parts.intents),
        };
        let (now, local) = (owner.clock.now(), owner.clock.local_now());
        owner.timers = Timers::restore(timers, now, local, || owner.core.next_id());
        owner.timers.file = Some(timers_file);
        if !owner.timers.is_empty() {
            tracing::info!(
                timers = owner.timers.len(),
                "the timers set before the restart wait again"
            );
        }
        if voice_on && let Err(e) = owner.voice_on() {
            tracing::error!("{e}");
        }
        owner
    }

    /// Runs until `shutdown`: follows the daemon at `daemon` (reconnecting whenever it goes
    /// away), answers requests, runs jobs, beats once a second and fires timers.
    pub async fn run(
        mut self,
        mut requests: mpsc::Receiver<Asked>,
        mut inputs: mpsc::UnboundedReceiver<Input>,
        daemon: PathBuf,
        shutdown: CancellationToken,
    ) {
        let mut link = Subscription::daemon(daemon, "stt-assistant");
        let mut beat = tokio::time::interval(Duration::from_secs(1));
        beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The first tick is at once; the first heartbeat a second after start, as ever.
        beat.tick().await;
        loop {
            let next_deadline = [
                self.timers.next_deadline(),
                self.waiting.held.as_ref().map(|h| h.deadline),
                self.core.turn_deadline(),
                self.wake_deadline(),
            ]
            .into_iter()
            .flatten()
            .min();
            tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                next = link.next() => {
                    self.on_link(next);
                    self.retry_held();
                }
                Some(asked) = requests.recv() => self.on_request(asked),
                Some(input) = inputs.recv() => self.on_input(input),
                Some(helped) = self.helpers.join_next() => match helped {
                    Ok(helped) => self.on_helped(helped),
                    Err(e) if e.is_panic() => {
                        tracing::error!("a helper task of the loop panicked (a bug): {e}");
                    }
                    Err(_) => {}
                },
                _ = beat.tick() => {
                    self.heartbeat();
                    // Readiness also changes with the clock (a stale heartbeat) and with
                    // viewers, which the control server counts.
                    self.retry_held();
                }
                () = sleep_until(next_deadline) => {
                    let effects = self.core.turn_due(self.clock.now());
                    self.apply(effects);
                    self.fire_timers(self.clock.now());
                    self.look();
                    self.retry_held();
                }
            }
            // Whatever this turn queued, ended or freed: the next job starts here, and only
            // here, once the turn is over.
            self.start_next();
        }
        if let Some(running) = &self.jobs.running {
            running.handle.cancel();
        }
        // What helpers were doing is moot now.
        self.helpers.shutdown().await;
        // The lanes' handles go, so their threads end after what they are doing (the voice
        // silenced first: a reply still playing would hold it), and are waited for.
        if let Some(voice) = self.voice.lane.take() {
            voice.stop();
        }
        self.dictate.lane = None;
        self.triage.stop();
        let threads = self.lanes.take_threads();
        let joined =
            tokio::task::spawn_blocking(move || threads.into_iter().for_each(|t| t.join()));
        if joined.await.is_err() {
            tracing::error!("could not wait for the lanes' threads");
        }
        if !self.timers.is_empty() {
            tracing::info!(timers = self.timers.len(), "timers not fired wait for the next start");
        }
        // What was asked to be written is written before the process ends.
        let writer = self.writer;
        if tokio::task::spawn_blocking(move || writer.close()).await.is_err() {
            tracing::error!("could not wait for the writer thread");
        }
    }

    fn on_link(&mut self, next: Link<DaemonEvent>) {
        match next {
            Link::Up(_) => {
                tracing::info!("connected to stt-daemon");
                self.core.daemon_link(true);
            }
            Link::Down(why) => {
                tracing::warn!("stt-daemon link down: {why}; retrying");
                let effects = self.core.daemon_lost();
                self.apply(effects);
                // Its segments end with it: a new daemon counts from 1 again, and its stream
                // from 0.
                self.voice.overheard.clear();
                self.voice.talk.stream_ended();
            }
            Link::Event(event) => {
                // The voice's own words coming back are no one's turn.
                let Some(event) = self.overheard(event) else { return };
                // What follows from a segment's event names the segment, as the daemon's log
                // does: one grep for `seg_id=N` follows an utterance through the processes. At
                // debug only: this is the relay's hot path, and below debug the span costs a
                // level check.
                let seg = event.seg_id();
                let span = match seg {
                    Some(seg_id) => tracing::debug_span!("segment", seg_id),
                    None => tracing::Span::none(),
                };
                let _entered = span.enter();
                if seg.is_some() {
                    tracing::debug!(kind = event.kind(), "from the daemon");
                }
                let mut partial = None;
                match &event {
                    DaemonEvent::Transcript(t) => {
                        self.capture_ambient(t);
                        self.activity();
                    }
                    DaemonEvent::TranscriptPartial(p) => partial = Some(p.text.clone()),
                    // Someone speaks: background work that yields to it gives the model back
                    // at once (a command armed or chat on: a person will want it).
                    DaemonEvent::SpeechStart(_) => self.interrupt(match self.core.mode() {
                        stt_proto::Mode::CommandArmed => Need::Command,
                        stt_proto::Mode::Chat => Need::Chat,
                        _ => Need::Speech,
                    }),
                    _ => {}
                }
                let effects = self.core.daemon_event(event, self.clock.now());
                self.apply(effects);
                if let Some(words) = partial {
                    self.foresee(&words);
                }
            }
        }
    }

    fn on_request(&mut self, Asked { request, reply }: Asked) {
        match request {
            Request::ChatCommand { line } => self.slash(&line, reply),
            Request::Memory(request) => self.memory_request(request, reply),
            Request::Task(request) => self.task_request(request, reply),
            request => {
                let answer = self.request(&request);
                if let Request::CommandExecute { wait_ms: Some(ms @ 1..) } = request
                    && not_ready(&answer)
                {
                    self.hold(self.clock.now() + Duration::from_millis(ms), reply);
                    return;
                }
                // A client that hung up has no reply to read.
                let _ = reply.send(answer);
            }
        }
    }

    fn on_input(&mut self, input: Input) {
        match input {
            Input::Llm { job, report } => {
                let _job = tracing::info_span!("job", job).entered();
                self.on_report(job, report);
            }
            Input::Providers(found) => self.on_helped(Helped::Providers(found)),
            Input::Written(report) => self.on_written(report),
            Input::Memory(report) => self.on_memory(report),
            Input::Voice(report) => self.on_voice(report),
            Input::Triage(report) => self.on_triage(report),
            Input::Dictate(report) => self.on_dictate(report),
            Input::Local { job, report } => {
                let _job = tracing::info_span!("job", job).entered();
                self.on_local(job, report);
            }
        }
    }

    /// Starts a helper task; what it comes back with goes to [`Owner::on_helped`].
    fn help(&mut self, task: impl Future<Output = Helped> + Send + 'static) {
        self.helpers.spawn(task.instrument(tracing::Span::current()));
    }

    fn on_helped(&mut self, helped: Helped) {
        match helped {
            Helped::Providers(found) => self.on_providers(found),
            Helped::Warmed => {
                let was_loading = self.model_loading();
                self.providers.warmed();
                if was_loading != self.model_loading() {
                    self.publish_session();
                }
            }
            Helped::Reprobed(found) => {
                self.providers.reprobed();
                self.on_providers(found);
            }
            Helped::Slash { reply, done } => self.slash_done(reply, done),
            Helped::MemoryDone { reply, done } => self.memory_done(reply, done),
            Helped::DreamDue(trigger) => self.dream_due(trigger),
            Helped::Nothing => {}
        }
    }

    /// What the memory lane reported.
    fn on_memory(&mut self, report: crate::memory::Report) {
        let was_off = self.lanes.state(MEMORY) == Some(LaneState::Off);
        self.lanes.saw(MEMORY, &report);
        match report {
            State::Ready(_) if was_off => {
                // Back after its disk was full: what waited is written.
                self.note(
                    "Memory writes again: what was said while the disk was full is kept.".into(),
                );
            }
            State::Ready(crate::memory::Opened { stats, meaning }) => {
                tracing::info!(
                    items = stats.active_items,
                    entries = stats.log_entries,
                    pending = stats.pending_sessions,
                    "memory is ready"
                );
                if let Err(why) = meaning {
                    tracing::warn!("memory recalls by words only, and gives no hints: {why}");
                }
            }
            State::Off { why } => self.error(ErrorCode::Internal, why),
        }
    }

    /// Keeps idle speech when `[memory].capture_ambient` asks for it. A pause longer than
    /// [`AMBIENT_GAP`] closes one stretch and starts the next.
    fn capture_ambient(&mut self, t: &stt_proto::Transcript) {
        let Some(memory) = self.memory.lane.as_ref().filter(|_| self.ambient.capture) else {
            return;
        };
        if self.core.mode() != stt_proto::Mode::Idle || t.text.trim().is_empty() {
            return;
        }
        let now = self.clock.now();
        let id = match self.ambient.current {
            Some((id, last)) if now.saturating_duration_since(last) < AMBIENT_GAP => id,
            Some((id, _)) => {
                memory.close(Episode::Ambient(id));
                id + 1
            }
            None => self.clock.unix(),
        };
        self.ambient.current = Some((id, now));
        let speaker = t.speaker.as_deref();
        memory.turn(Episode::Ambient(id), stt_memory::Role::Ambient, speaker, "idle", &t.text);
    }

    /// Writes an entry of `episode` to memory, if it is on.
    fn remember(
        &self,
        episode: Episode,
        role: stt_memory::Role,
        speaker: Option<&str>,
        text: &str,
    ) {
        let Some(memory) = &self.memory.lane else { return };
        let mode = match episode {
            Episode::Chat(_) => "chat",
            Episode::Command(_) => "command",
            Episode::Ambient(_) => "idle",
        };
        memory.turn(episode, role, speaker, mode, text);
    }

    /// Holds a `command_execute` until the flow is ready or `deadline`; one at a time.
    fn hold(&mut self, deadline: Instant, reply: oneshot::Sender<AssistantEvent>) {
        tracing::debug!("holding command_execute until the flow is ready");
        if let Some(earlier) = self.waiting.held.replace(Held { deadline, reply }) {
            let _ = earlier.reply.send(AssistantEvent::Error(ErrorMsg::new(
                ErrorCode::Busy,
                "another command_execute took the place of this one",
            )));
        }
    }

    /// Tries the held `command_execute` again: it runs once the flow is ready, and is refused
    /// with the reason once its deadline has passed (or at once, for any other refusal).
    fn retry_held(&mut self) {
        let Some(held) = self.waiting.held.take() else { return };
        let answer = self.request(&Request::CommandExecute { wait_ms: None });
        if not_ready(&answer) && self.clock.now() < held.deadline {
            self.waiting.held = Some(held);
            return;
        }
        let _ = held.reply.send(answer);
    }

    fn viewer_count(&self) -> u32 {
        u32::try_from(self.bus.viewers.load(Ordering::SeqCst)).unwrap_or(u32::MAX)
    }

    fn request(&mut self, request: &Request) -> AssistantEvent {
        // A command answered here needs no model, waits for none and stops nothing.
        let here = matches!(request, Request::CommandExecute { .. }) && self.armed_here();
        // A person arming, running, editing or chatting wants the model: background work
        // that yields stops.
        let wants_the_model = match request {
            Request::CommandExecute { .. } if here => None,
            Request::CommandStart
            | Request::CommandExecute { .. }
            | Request::CommandEdit { .. } => Some(Need::Command),
            Request::ChatToggle | Request::ChatSend { .. } => Some(Need::Chat),
            _ => None,
        };
        if let Some(need) = wants_the_model {
            self.interrupt(need);
        }
        if wants_the_model.is_some()
            || here
            || matches!(request, Request::ChatStop | Request::CommandCancel | Request::Clear)
        {
            self.hush();
        }
        match request {
            Request::Status => return AssistantEvent::Status(self.status()),
            Request::SpeakerList => return AssistantEvent::SpeakerList(self.core.roster().clone()),
            Request::TimerCancel { timer_id } => return self.cancel_timer(*timer_id),
            Request::ChatStop => return self.chat_stop(),
            Request::VoiceToggle => return self.voice_toggle(),
            Request::Intents(stt_proto::IntentsRequest::Test { text }) => {
                return self.intent_test(text);
            }
            _ => {}
        }
        if let Request::CommandExecute { .. } = request
            && !here
            && self.core.mode() == stt_proto::Mode::CommandArmed
            && let Some(refusal) = self.chat_only()
        {
            return AssistantEvent::Error(refusal);
        }
        let outside = Outside {
            viewers: self.viewer_count(),
            llm_enabled: self.registry.is_some(),
            queue_has_room: self.jobs.queue.has_room(),
            model_loading: self.model_loading(),
            here,
        };
        let (reply, effects) = self.core.request(request, self.clock.now(), outside);
        if let AssistantEvent::Error(ErrorMsg { code: ErrorCode::Busy, .. }) = &reply {
            self.jobs.queue.drop_oldest_chat();
        }
        self.apply(effects);
        reply
    }

    /// What the writer thread said.
    fn on_written(&mut self, report: crate::writer::Report) {
        use crate::writer::Report;
        match report {
            Report::Failed { message } | Report::Full { message } => {
                self.error(ErrorCode::Internal, message);
            }
            Report::Room => self.note(
                "Saved again: the conversation, timers and audit records that waited while the \
                 disk was full are written."
                    .into(),
            ),
        }
    }

    /// Keeps the timers as they are now for the next start.
    pub(super) fn save_timers(&self) {
        if let Some(file) = &self.timers.file {
            self.writer.save_timers(file.clone(), self.timers.saved());
        }
    }

    fn cancel_timer(&mut self, id: u64) -> AssistantEvent {
        match self.timers.cancel(id) {
            Some(timer) => {
                self.save_timers();
                tracing::info!(id, label = %timer.label, "timer cancelled");
                AssistantEvent::Ack(Ack { command: "timer_cancel".into(), ok: true })
            }
            None => AssistantEvent::Error(ErrorMsg::new(
                ErrorCode::NothingPending,
                format!("no timer {id} is set: `stt-ctl status` lists the timers"),
            )),
        }
    }

    fn status(&self) -> Status {
        let now = self.clock.now();
        let (stt_healthy, stt_detail) = self.core.stt_health(now);
        let (buffer, edited) = self.core.buffer();
        Status {
            mode: self.core.mode(),
            stt_healthy,
            stt_detail,
            llm_enabled: self.registry.is_some(),
            llm_endpoint: self.jobs.env.client.as_ref().map(Provider::target).unwrap_or_default(),
            llm_reachable: self.providers.reachable(),
            llm_provider: self.active().map(|id| id.to_string()),
            llm_model: self
                .jobs
                .env
                .client
                .as_ref()
                .map(|c| c.model().to_owned())
                .unwrap_or_default(),
            inference_queue: self.jobs.queue.depth(),
            inference_busy: self.jobs.queue.busy(),
            viewers: self.viewer_count(),
            command_buffer: buffer.to_owned(),
            command_edited: edited,
            version: env!("CARGO_PKG_VERSION").to_owned(),
            timers: self.timers.list(now),
            chat: Some(Box::new(self.chat_session())),
            voice: self.voice.on,
            lanes: self.lanes.status(),
        }
    }

    /// Carries out what the core decided.
    fn apply(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::Publish(event) => {
                    self.publish(&event);
                    self.triage.shown(&event);
                }
                Effect::Execute { text, edited, segs } => {
                    if let Some(decided) = self.decided_here(&text) {
                        self.run_here(decided, text, edited);
                        continue;
                    }
                    self.answered();
                    if self.jobs.queue.push_command(text, edited, segs).is_err() {
                        // The core checked for room; report it and stand down all the same.
                        self.error(
                            ErrorCode::Busy,
                            "the model is busy: the inference queue is full",
                        );
                        let effects = self.core.execution_finished(self.clock.now());
                        self.apply(effects);
                    }
                }
                Effect::ChatTurn(turn) => {
                    self.answered();
                    if let Some(dropped) = self.jobs.queue.push_chat(turn) {
                        let words = dropped.words;
                        self.error(
                            ErrorCode::Busy,
                            format!("the model is behind: dropped the chat turn \"{words}\""),
                        );
                    }
                }
                Effect::DropQueuedChat => {
                    self.jobs.queue.drop_chat();
                }
                Effect::ClearHistory => {
                    self.jobs.epoch += 1;
                    self.chat.conversation = Chat::default();
                    self.forget_session();
                    // A chat turn in flight belongs to the conversation just forgotten.
                    if let Some(running) =
                        self.jobs.running.as_ref().filter(|r| r.handle.is(JobKind::Chat))
                    {
                        running.handle.cancel();
                    }
                }
                Effect::NameSpeaker { speaker_id, name } => {
                    let record = SpeakerRecord::name(&speaker_id, &name, self.clock.local_now());
                    self.writer.audit_speaker(record);
                    self.writer.save_names(self.core.names().clone());
                }
                Effect::ForgetSpeaker { speaker_id } => {
                    tracing::info!(speaker_id, "forgetting a speaker");
                    let record = SpeakerRecord::forget(&speaker_id, self.clock.local_now());
                    self.writer.audit_speaker(record);
                    // Names first: the daemon reads them when it applies the edit.
                    self.writer.save_names(self.core.names().clone());
                    self.writer.edit_speakers(SpeakerEditOp::Forget { speaker_id });
                }
                Effect::MergeSpeaker { speaker_id, into } => {
                    tracing::info!(speaker_id, into, "merging a speaker into another");
                    let record = SpeakerRecord::merge(&speaker_id, &into, self.clock.local_now());
                    self.writer.audit_speaker(record);
                    self.writer.save_names(self.core.names().clone());
                    self.writer.edit_speakers(SpeakerEditOp::Merge { speaker_id, into });
                }
                Effect::CancelCommand => {
                    if let Some(running) =
                        self.jobs.running.as_ref().filter(|r| r.handle.is(JobKind::Command))
                    {
                        tracing::info!(job = running.job, "cancelling the running command");
                        running.handle.cancel();
                    }
                }
                Effect::Dictation { on } => self.dictation(on),
                Effect::Dictate(text) => {
                    if let Some(dictation) = &self.dictate.lane {
                        dictation.phrase(&text);
                    }
                }
                Effect::Answer { call_id, allow } => {
                    if let Some(answer) = self.waiting.answers.remove(&call_id) {
                        // The call may have timed out a moment ago: then no one listens.
                        let _ = answer.send(allow);
                    }
                }
                Effect::Earcon => {
                    if let Some(voice) = self.voice.lane.as_ref().filter(|_| self.voice.ready) {
                        voice.earcon();
                    }
                }
                Effect::RunSpoken => {
                    // As Enter would: the turn has ended, so nothing is left to wait for.
                    let reply = self.request(&Request::CommandExecute { wait_ms: None });
                    if let AssistantEvent::Error(error) = reply {
                        self.error(error.code, error.message);
                    }
                }
            }
        }
    }

    fn fire_timers(&mut self, now: Instant) {
        let due = self.timers.due(now);
        if !due.is_empty() {
            self.save_timers();
        }
        let local = self.clock.local(now);
        for timer in due {
            tracing::info!(id = timer.id, label = %timer.label, "timer fired");
            self.publish(&AssistantEvent::ChatMessage(ChatMessage {
                id: timer.id,
                role: ChatRole::Note,
                speaker: None,
                text: timer.said(local),
                partial: false,
                stopped: false,
            }));
            // A desktop notification too, where there is a notifier.
            let label = timer.label;
            self.help(async move {
                let _ = tokio::process::Command::new("notify-send")
                    .args(["--app-name=stt", "Timer", &label])
                    .status()
                    .await;
                Helped::Nothing
            });
        }
    }

    /// Tells subscribers how things stand (and, now and then, sees whether a dream is due).
    fn heartbeat(&mut self) {
        self.maybe_dream();
        self.bus.heartbeat_seq += 1;
        self.publish(&AssistantEvent::Heartbeat(AssistantHeartbeat {
            seq: self.bus.heartbeat_seq,
            mode: self.core.mode(),
            stt_healthy: self.core.stt_health(self.clock.now()).0,
            daemon_backlog: self.core.daemon_backlog(),
            inference_queue: self.jobs.queue.depth(),
            inference_busy: self.jobs.queue.busy(),
            stt_remote: self.core.stt_remote(),
            wake: self.core.wake_listened(),
            speaking: self.voice.echo.audible(self.clock.now()),
        }));
    }

    fn publish(&self, event: &AssistantEvent) {
        self.bus.publisher.publish(event);
    }

    fn note(&mut self, text: String) {
        let id = self.core.next_id();
        self.publish(&AssistantEvent::ChatMessage(ChatMessage {
            id,
            role: ChatRole::Note,
            speaker: None,
            text,
            partial: false,
            stopped: false,
        }));
    }

    fn error(&self, code: ErrorCode, message: impl Into<String>) {
        let message = message.into();
        tracing::warn!("{message}");
        self.publish(&AssistantEvent::Error(ErrorMsg::new(code, message)));
    }
}

/// Whether `reply` refuses a request only until the flow is ready.
fn not_ready(reply: &AssistantEvent) -> bool {
    matches!(reply, AssistantEvent::Error(ErrorMsg { code: ErrorCode::NotReady, .. }))
}

/// Sleeps until `deadline`; never returns without one.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// The control server's side: every request goes to the loop, and its reply comes back.
#[derive(Debug, Clone)]
pub struct Front {
    requests: mpsc::Sender<Asked>,
}

impl Front {
    /// A front whose requests go to `requests` (of [`REQUESTS_WAITING`]).
    pub fn new(requests: mpsc::Sender<Asked>) -> Self {
        Self { requests }
    }

    /// Hands `request` to the loop and waits for its reply; refused at once with `busy`
    /// when [`REQUESTS_WAITING`] requests already wait.
    pub async fn ask(&self, request: Request) -> AssistantEvent {
        let (reply, answer) = oneshot::channel();
        match self.requests.try_send(Asked { request, reply }) {
            Ok(()) => answer.await.unwrap_or_else(|_| shutting_down()),
            Err(mpsc::error::TrySendError::Full(_)) => AssistantEvent::Error(ErrorMsg::new(
                ErrorCode::Busy,
                format!(
                    "stt-assistant has {REQUESTS_WAITING} requests waiting already; send fewer \
                     at once (a script in a loop, a key held down?) and try again"
                ),
            )),
            Err(mpsc::error::TrySendError::Closed(_)) => shutting_down(),
        }
    }
}

impl Handler for Front {
    async fn handle(&self, _conn: &ConnInfo, request: Request) -> AssistantEvent {
        self.ask(request).await
    }
}

fn shutting_down() -> AssistantEvent {
    AssistantEvent::Error(ErrorMsg::new(
        ErrorCode::Internal,
        "stt-assistant is shutting down; try again once it is back",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flood of requests while the loop is behind: those over the bound are refused at
    /// once, naming why; those taken are answered when the loop gets to them.
    #[tokio::test]
    async fn requests_over_the_bound_are_refused_busy_and_the_rest_are_answered() {
        let (tx, mut rx) = mpsc::channel(REQUESTS_WAITING);
        let front = Front::new(tx);
        let mut waiting = tokio::task::JoinSet::new();
        for _ in 0..REQUESTS_WAITING {
            let front = front.clone();
            waiting.spawn(async move { front.ask(Request::Status).await });
        }
        while rx.len() < REQUESTS_WAITING {
            tokio::task::yield_now().await;
        }
        match front.ask(Request::Status).await {
            AssistantEvent::Error(e) => {
                assert_eq!(e.code, ErrorCode::Busy, "{e:?}");
                assert!(e.message.contains("64 requests waiting"), "{e:?}");
            }
            other => panic!("a request over the bound was answered {other:?}"),
        }
        // The loop catches up: every request it took is answered.
        while let Ok(Asked { reply, .. }) = rx.try_recv() {
            let _ = reply.send(AssistantEvent::Ack(Ack { command: "status".into(), ok: true }));
        }
        let mut answered = 0;
        while let Some(done) = waiting.join_next().await {
            assert!(matches!(done.unwrap(), AssistantEvent::Ack(_)));
            answered += 1;
        }
        assert_eq!(answered, REQUESTS_WAITING);
    }
}
