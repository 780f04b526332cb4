//! The assistant's one owner: a single task holds every piece of domain state (the core, the
//! inference queue, the running job, the conversation, the calls waiting for a yes or no,
//! the timers, whether the model answers) and is the only one that changes it or publishes.
//! Its loop waits on a small fixed set: shutdown, the daemon subscription, one [`Input`]
//! channel (requests with their reply slot, lane reports), the heartbeat ticker and the next
//! timer's deadline. Events on the wire thus have one total order.
//!
//! Lanes (the LLM jobs, the probes, the writer thread) hold no state of the assistant's: they
//! get a snapshot and report back through the channel, wrapped as an [`Input`].

mod chat;
mod memory;

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
use stt_llm::registry::{Id, Probed, Registry, Status as ProviderStatus};
use stt_proto::speaker_files::SpeakerEditOp;
use stt_proto::{
    Ack, AssistantEvent, AssistantHeartbeat, ChatMessage, ChatRole, DaemonEvent, ErrorCode,
    ErrorMsg, Request, Status,
};
use stt_tools::SpeakerRecord;

use crate::core::{Core, Effect, Outside};
use crate::lane::Sink;
use crate::llm::{self, Chat, End, JobEnv, Report, Work};
use crate::memory::{Episode, Memory};
use crate::queue::{InferenceQueue, Job, JobKind};
use crate::session::{self, Session, Tokens};
use crate::timers::Timers;
use crate::writer::{Failed, Writer};

/// Everything that reaches the loop, apart from the daemon's events and the clock.
#[derive(Debug)]
pub enum Input {
    /// A control request and where its direct reply goes.
    Request { request: Request, reply: oneshot::Sender<AssistantEvent> },
    /// A report from LLM job `job`.
    Llm { job: u64, report: Report },
    /// What a probe of every provider found.
    Providers(Vec<Probed>),
    /// A write on the writer thread failed.
    Written(Failed),
    /// What the memory lane has to say (ready, or off and why).
    Memory(crate::memory::Report),
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
    /// The warm-up request to the local model is over (see [`Warmth`]).
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
    /// Where `/export` writes when given no path.
    pub export_dir: PathBuf,
    /// Long-term memory; `None` when `[memory].enabled` is false. The same handle is in
    /// `lane` for jobs.
    pub memory: Option<Memory>,
    /// `[memory].capture_ambient`: keep what is said in idle mode too.
    pub capture_ambient: bool,
    /// When dreams start on their own, and how long one may go on.
    pub dream_rules: crate::memory::DreamRules,
    pub dream_max_steps: u32,
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
    started: Instant,
    /// What its requests cost.
    tokens: Option<Tokens>,
}

/// The state, and the loop that owns it.
#[derive(Debug)]
pub struct Owner {
    core: Core,
    queue: InferenceQueue,
    env: JobEnv,
    running: Option<Running>,
    next_job: u64,
    /// Bumped by every `clear`: what a chat job of an older epoch reports is dropped.
    epoch: u64,
    conversation: Chat,
    /// Where the answer to each call waiting for a yes or no goes.
    answers: HashMap<String, oneshot::Sender<bool>>,
    timers: Timers,
    held: Option<Held>,
    /// Whether the provider in use answered the last probe or request; `None` before the
    /// first.
    reachable: Option<bool>,
    writer: Writer,
    publisher: Publisher,
    viewers: Arc<AtomicUsize>,
    registry: Option<Registry>,
    /// What the last probe found, every provider.
    providers: Vec<Probed>,
    /// Whether a probe has come back (jobs wait for the first: it chooses the provider).
    probed: bool,
    /// A probe asked for by [`Owner::probe_soon`] is on its way.
    reprobe_pending: bool,
    /// How soon to look again while no provider is there.
    reprobe_after: Duration,
    /// A job found no provider: whether it waits for a probe made for it, or has had one.
    look: Look,
    /// Whether the local model's prompt cache holds the command prefix.
    warmth: Warmth,
    /// The chat session, as saved in `session_file`.
    session: Session,
    session_file: PathBuf,
    session_ttl: Duration,
    export_dir: PathBuf,
    heartbeat_seq: u64,
    inputs: mpsc::UnboundedSender<Input>,
    memory: Option<Memory>,
    capture_ambient: bool,
    /// The stretch of idle speech being captured: its id, and when its last words came.
    ambient: Option<(u64, Instant)>,
    dreams: memory::Dreams,
    /// The helper tasks started by the loop (probes, warm-up, memory's answers, slash
    /// commands): each comes back as a [`Helped`]; aborted when the loop ends.
    helpers: JoinSet<Helped>,
}

/// Idle speech after this long a pause starts a new ambient session.
const AMBIENT_GAP: Duration = Duration::from_secs(600);

impl Owner {
    /// An owner whose lanes report into `inputs`.
    pub fn new(parts: Parts, inputs: mpsc::UnboundedSender<Input>) -> Self {
        let (session, note) = session::load(&parts.session_file, session::now(), parts.session_ttl);
        if let Some(note) = note {
            tracing::info!("{note}");
        }
        let mut queue = parts.queue;
        if parts.memory.as_ref().is_some_and(Memory::tree) {
            // A summary left due by the last run is written first.
            queue.want(Job::Tree);
        }
        Self {
            core: parts.core,
            queue,
            env: parts.env,
            running: None,
            next_job: 1,
            epoch: 0,
            conversation: session.chat(),
            answers: HashMap::new(),
            timers: Timers::default(),
            held: None,
            reachable: None,
            writer: parts.writer,
            publisher: parts.publisher,
            viewers: parts.viewers,
            registry: parts.registry,
            providers: Vec::new(),
            probed: false,
            reprobe_pending: false,
            reprobe_after: FIRST_REPROBE,
            look: Look::Idle,
            warmth: Warmth::Cold,
            session,
            session_file: parts.session_file,
            session_ttl: parts.session_ttl,
            export_dir: parts.export_dir,
            heartbeat_seq: 0,
            inputs,
            memory: parts.memory,
            capture_ambient: parts.capture_ambient,
            ambient: None,
            dreams: memory::Dreams::new(parts.dream_rules, parts.dream_max_steps, now()),
            helpers: JoinSet::new(),
        }
    }

    /// Runs until `shutdown`: follows the daemon at `daemon` (reconnecting whenever it goes
    /// away), answers requests, runs jobs, beats once a second and fires timers.
    pub async fn run(
        mut self,
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
            let next_deadline =
                [self.timers.next_deadline(), self.held.as_ref().map(|h| h.deadline)]
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
                    self.fire_timers(now());
                    self.retry_held();
                }
            }
        }
        if let Some(running) = &self.running {
            running.handle.cancel();
        }
        // What helpers were doing is moot now.
        self.helpers.shutdown().await;
        if !self.timers.is_empty() {
            tracing::info!(timers = self.timers.len(), "timers not fired are dropped");
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
                self.core.daemon_link(false);
            }
            Link::Event(event) => {
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
                match &event {
                    DaemonEvent::Transcript(t) => {
                        self.capture_ambient(t);
                        self.activity();
                    }
                    // Someone speaks: a dream gives the model back at once.
                    DaemonEvent::SpeechStart(_) => self.interrupt("speech"),
                    _ => {}
                }
                let effects = self.core.daemon_event(event, now());
                self.apply(effects);
            }
        }
    }

    fn on_input(&mut self, input: Input) {
        match input {
            Input::Request { request: Request::ChatCommand { line }, reply } => {
                self.slash(&line, reply);
            }
            Input::Request { request: Request::Memory(request), reply } => {
                self.memory_request(request, reply);
            }
            Input::Request { request, reply } => {
                let answer = self.request(&request);
                if let Request::CommandExecute { wait_ms: Some(ms @ 1..) } = request
                    && not_ready(&answer)
                {
                    self.hold(now() + Duration::from_millis(ms), reply);
                    return;
                }
                // A client that hung up has no reply to read.
                let _ = reply.send(answer);
            }
            Input::Llm { job, report } => {
                let _job = tracing::info_span!("job", job).entered();
                self.on_report(job, report);
            }
            Input::Providers(found) => self.on_helped(Helped::Providers(found)),
            Input::Written(failed) => self.error(ErrorCode::Internal, failed.message),
            Input::Memory(report) => self.on_memory(report),
        }
    }

    /// Starts a helper task; what it comes back with goes to [`Owner::on_helped`].
    fn help(&mut self, task: impl Future<Output = Helped> + Send + 'static) {
        self.helpers.spawn(task.instrument(tracing::Span::current()));
    }

    fn on_helped(&mut self, helped: Helped) {
        match helped {
            Helped::Providers(found) => {
                if self.look == Look::Probing {
                    self.look = Look::Looked;
                }
                self.on_providers(found);
            }
            Helped::Warmed => {
                let was_loading = self.model_loading();
                if self.warmth == Warmth::Warming {
                    self.warmth = Warmth::Warm;
                }
                if was_loading != self.model_loading() {
                    self.publish_session();
                }
                self.start_next();
            }
            Helped::Reprobed(found) => {
                self.reprobe_pending = false;
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
        match report {
            crate::memory::Report::Ready { stats, meaning } => {
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
            crate::memory::Report::Off { why } => self.error(ErrorCode::Internal, why),
        }
    }

    /// Keeps idle speech when `[memory].capture_ambient` asks for it. A pause longer than
    /// [`AMBIENT_GAP`] closes one stretch and starts the next.
    fn capture_ambient(&mut self, t: &stt_proto::Transcript) {
        let Some(memory) = self.memory.as_ref().filter(|_| self.capture_ambient) else { return };
        if self.core.mode() != stt_proto::Mode::Idle || t.text.trim().is_empty() {
            return;
        }
        let now = now();
        let id = match self.ambient {
            Some((id, last)) if now.saturating_duration_since(last) < AMBIENT_GAP => id,
            Some((id, _)) => {
                memory.close(Episode::Ambient(id));
                id + 1
            }
            None => session::now(),
        };
        self.ambient = Some((id, now));
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
        let Some(memory) = &self.memory else { return };
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
        if let Some(earlier) = self.held.replace(Held { deadline, reply }) {
            let _ = earlier.reply.send(AssistantEvent::Error(ErrorMsg::new(
                ErrorCode::Busy,
                "another command_execute took the place of this one",
            )));
        }
    }

    /// Tries the held `command_execute` again: it runs once the flow is ready, and is refused
    /// with the reason once its deadline has passed (or at once, for any other refusal).
    fn retry_held(&mut self) {
        let Some(held) = self.held.take() else { return };
        let answer = self.request(&Request::CommandExecute { wait_ms: None });
        if not_ready(&answer) && now() < held.deadline {
            self.held = Some(held);
            return;
        }
        let _ = held.reply.send(answer);
    }

    fn viewer_count(&self) -> u32 {
        u32::try_from(self.viewers.load(Ordering::SeqCst)).unwrap_or(u32::MAX)
    }

    fn request(&mut self, request: &Request) -> AssistantEvent {
        // A person arming, running, editing or chatting wants the model: a dream stops.
        let wants_the_model = match request {
            Request::CommandStart
            | Request::CommandExecute { .. }
            | Request::CommandEdit { .. } => Some("a command"),
            Request::ChatToggle | Request::ChatSend { .. } => Some("chat"),
            _ => None,
        };
        if let Some(why) = wants_the_model {
            self.interrupt(why);
        }
        match request {
            Request::Status => return AssistantEvent::Status(self.status()),
            Request::SpeakerList => return AssistantEvent::SpeakerList(self.core.roster().clone()),
            Request::TimerCancel { timer_id } => return self.cancel_timer(*timer_id),
            Request::ChatStop => return self.chat_stop(),
            _ => {}
        }
        if let Request::CommandExecute { .. } = request
            && self.core.mode() == stt_proto::Mode::CommandArmed
            && let Some(refusal) = self.chat_only()
        {
            return AssistantEvent::Error(refusal);
        }
        let outside = Outside {
            viewers: self.viewer_count(),
            llm_enabled: self.registry.is_some(),
            queue_has_room: self.queue.has_room(),
            model_loading: self.model_loading(),
        };
        let (reply, effects) = self.core.request(request, now(), outside);
        if let AssistantEvent::Error(ErrorMsg { code: ErrorCode::Busy, .. }) = &reply {
            self.queue.drop_oldest_chat();
        }
        self.apply(effects);
        reply
    }

    fn cancel_timer(&mut self, id: u64) -> AssistantEvent {
        match self.timers.cancel(id) {
            Some(timer) => {
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
        let now = now();
        let (stt_healthy, stt_detail) = self.core.stt_health(now);
        let (buffer, edited) = self.core.buffer();
        Status {
            mode: self.core.mode(),
            stt_healthy,
            stt_detail,
            llm_enabled: self.registry.is_some(),
            llm_endpoint: self.env.client.as_ref().map(Provider::target).unwrap_or_default(),
            llm_reachable: self.reachable,
            llm_provider: self.active().map(|id| id.to_string()),
            llm_model: self.env.client.as_ref().map(|c| c.model().to_owned()).unwrap_or_default(),
            inference_queue: self.queue.depth(),
            inference_busy: self.queue.busy(),
            viewers: self.viewer_count(),
            command_buffer: buffer.to_owned(),
            command_edited: edited,
            version: env!("CARGO_PKG_VERSION").to_owned(),
            timers: self.timers.list(now),
            chat: Some(Box::new(self.chat_session())),
        }
    }

    /// Carries out what the core decided.
    fn apply(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::Publish(event) => self.publish(&event),
                Effect::Execute { text, edited, segs } => {
                    if self.queue.push_command(text, edited, segs).is_err() {
                        // The core checked for room; report it and stand down all the same.
                        self.error(
                            ErrorCode::Busy,
                            "the model is busy: the inference queue is full",
                        );
                        let effects = self.core.execution_finished();
                        self.apply(effects);
                    }
                    self.start_next();
                }
                Effect::ChatTurn { text, segs } => {
                    if let Some(Job::Chat { text: dropped, .. }) = self.queue.push_chat(text, segs)
                    {
                        self.error(
                            ErrorCode::Busy,
                            format!("the model is behind: dropped the chat turn \"{dropped}\""),
                        );
                    }
                    self.start_next();
                }
                Effect::DropQueuedChat => {
                    self.queue.drop_chat();
                }
                Effect::ClearHistory => {
                    self.epoch += 1;
                    self.conversation = Chat::default();
                    self.forget_session();
                    // A chat turn in flight belongs to the conversation just forgotten.
                    if let Some(running) =
                        self.running.as_ref().filter(|r| r.handle.is(JobKind::Chat))
                    {
                        running.handle.cancel();
                    }
                    // The model may be free to summarize what just left the context.
                    self.start_next();
                }
                Effect::NameSpeaker { speaker_id, name } => {
                    let record = SpeakerRecord::name(&speaker_id, &name, chrono::Local::now());
                    self.writer.audit_speaker(record);
                    self.writer.save_names(self.core.names().clone());
                }
                Effect::ForgetSpeaker { speaker_id } => {
                    tracing::info!(speaker_id, "forgetting a speaker");
                    let record = SpeakerRecord::forget(&speaker_id, chrono::Local::now());
                    self.writer.audit_speaker(record);
                    // Names first: the daemon reads them when it applies the edit.
                    self.writer.save_names(self.core.names().clone());
                    self.writer.edit_speakers(SpeakerEditOp::Forget { speaker_id });
                }
                Effect::MergeSpeaker { speaker_id, into } => {
                    tracing::info!(speaker_id, into, "merging a speaker into another");
                    let record = SpeakerRecord::merge(&speaker_id, &into, chrono::Local::now());
                    self.writer.audit_speaker(record);
                    self.writer.save_names(self.core.names().clone());
                    self.writer.edit_speakers(SpeakerEditOp::Merge { speaker_id, into });
                }
                Effect::CancelCommand => {
                    if let Some(running) =
                        self.running.as_ref().filter(|r| r.handle.is(JobKind::Command))
                    {
                        tracing::info!(job = running.job, "cancelling the running command");
                        running.handle.cancel();
                    }
                }
                Effect::Answer { call_id, allow } => {
                    if let Some(answer) = self.answers.remove(&call_id) {
                        // The call may have timed out a moment ago: then no one listens.
                        let _ = answer.send(allow);
                    }
                }
            }
        }
    }

    /// Starts the next queued job, unless one is running (or no probe has chosen the
    /// provider yet: the first comes within a fraction of a second of the start).
    fn start_next(&mut self) {
        // A server still loading its model would refuse the job: it waits, like a job that
        // came before the first probe.
        if self.running.is_some()
            || (self.registry.is_some() && !self.probed)
            || self.model_loading()
        {
            return;
        }
        // A job that finds no provider looks once more at once, before it says none is there:
        // a server started a moment ago is used now, not at the next probe (up to 16 s away).
        if self.registry.is_some() && self.env.client.is_none() && self.queue.depth() > 0 {
            match self.look {
                Look::Probing => return,
                Look::Idle => {
                    self.look = Look::Probing;
                    self.probe_now();
                    return;
                }
                Look::Looked => self.look = Look::Idle,
            }
        } else if self.look == Look::Looked {
            // The probe found one: the next job that finds none looks again.
            self.look = Look::Idle;
        }
        // Background work needs memory (and the tree, for its summaries).
        let memory = self.memory.as_ref();
        let tree = memory.is_some_and(Memory::tree);
        let may = |kind: JobKind| match kind {
            JobKind::Command | JobKind::Chat => true,
            JobKind::Tree => tree,
            JobKind::Dream => memory.is_some(),
        };
        let Some(job) = self.queue.start_next(may) else { return };
        let id = self.job_id();
        self.env.fallback = self.fallback(job.kind().rule().tools);
        // A chat turn's words, as sent, for the session's display turns.
        let (work, segs, question) = match job {
            Job::Command { text, edited, segs } => {
                let episode = Episode::Command(id);
                self.remember(episode, stt_memory::Role::User, None, &text);
                (Work::Command { text, edited, episode }, segs, String::new())
            }
            Job::Chat { text, segs } => {
                let work = self.chat_work(text.clone());
                let who = crate::memory::speaker_of(&text);
                let episode = self.chat_episode();
                self.remember(episode, stt_memory::Role::User, who, crate::memory::words_of(&text));
                (work, segs, text)
            }
            Job::Tree => {
                (Work::Tree { system: self.session.system.clone() }, vec![], String::new())
            }
            Job::Dream { trigger } => (self.dream_work(trigger), vec![], String::new()),
        };
        self.launch(id, work, &segs, question);
    }

    /// The next job's id: the one place ids are given.
    fn job_id(&mut self) -> u64 {
        let id = self.next_job;
        self.next_job += 1;
        id
    }

    /// Starts job `id` doing `work` (said in segments `segs`; `question`: a chat turn's words).
    fn launch(&mut self, id: u64, work: Work, segs: &[u64], question: String) {
        // Everything the job logs names it; this names its segments.
        let span = tracing::info_span!("job", job = id);
        span.in_scope(|| {
            for seg_id in segs {
                tracing::debug!(seg_id, "job for segment");
            }
        });
        let inputs = self.inputs.clone();
        let out = Sink::new(move |report| {
            // Gone only when the loop has ended, and then nobody listens.
            let _ = inputs.send(Input::Llm { job: id, report });
        });
        let handle = llm::spawn(&self.env, work, self.epoch, span.clone(), out);
        span.in_scope(|| tracing::debug!(kind = handle.kind.name(), "job started"));
        self.running = Some(Running {
            job: id,
            handle,
            reply_id: None,
            question,
            answer: String::new(),
            stopped: false,
            cut: false,
            started: now(),
            tokens: None,
        });
    }

    fn on_report(&mut self, job: u64, report: Report) {
        let Some(running) = self.running.as_ref().filter(|r| r.job == job) else {
            tracing::debug!("a report from a job that is over: {report:?}");
            return;
        };
        let current = running.handle.epoch == self.epoch;
        // A `clear` came after this chat turn started: nothing of it is shown or kept.
        let stale = running.handle.is(JobKind::Chat) && !current;
        let command = running.handle.is(JobKind::Command);
        match &report {
            Report::Publish(AssistantEvent::ToolCall(call)) if command => {
                let line = format!("{}({})", call.tool, call.args);
                self.remember(Episode::Command(job), stt_memory::Role::Tool, None, &line);
            }
            // What recall found is in memory already: only the call is kept.
            Report::Publish(AssistantEvent::ToolResult(result))
                if command && !crate::memory::tools::is_recall(&result.tool) =>
            {
                let line = format!("{} → {}", result.tool, result.result);
                self.remember(Episode::Command(job), stt_memory::Role::Tool, None, &line);
            }
            Report::Reply { text, partial: false, .. } if command && !text.trim().is_empty() => {
                self.remember(Episode::Command(job), stt_memory::Role::Assistant, None, text);
            }
            _ => {}
        }
        match report {
            Report::Publish(event) if !stale => self.publish(&event),
            Report::Reply { text, partial, stopped } if !stale => {
                if let Some(running) = self.running.as_mut() {
                    if partial {
                        running.answer.push_str(&text);
                    } else {
                        running.answer.clone_from(&text);
                    }
                    running.cut |= stopped;
                }
                let id = self.reply_id();
                self.publish(&AssistantEvent::ChatMessage(ChatMessage {
                    id,
                    role: ChatRole::Assistant,
                    speaker: None,
                    text,
                    partial,
                    stopped,
                }));
            }
            Report::Note(text) if !stale => self.note(text),
            Report::Failed(text) if !stale => self.chat_error(text),
            Report::Publish(_) | Report::Reply { .. } | Report::Note(_) | Report::Failed(_) => {}
            Report::Usage(usage) => {
                if let Some(running) = self.running.as_mut() {
                    let mut tokens = running.tokens.unwrap_or_default();
                    tokens.add(Tokens::of(usage));
                    running.tokens = Some(tokens);
                }
            }
            Report::Resume(handle) => {
                if current {
                    self.session.handle = Some(handle);
                }
            }
            Report::Reachable(reachable) => self.reachable = Some(reachable),
            Report::Confirm { call_id, answer } => {
                self.core.confirmation_requested(&call_id);
                self.answers.insert(call_id, answer);
            }
            Report::ConfirmOver { call_id } => {
                self.core.confirmation_over(&call_id);
                self.answers.remove(&call_id);
            }
            Report::Timer { after, label } => {
                let id = self.core.next_id();
                tracing::info!(id, %label, seconds = after.as_secs_f64(), "timer set");
                self.timers.add(id, label, now() + after);
            }
            Report::Audit(record) => self.writer.audit_action(*record),
            Report::Hinted(notes) if !stale => {
                for note in notes {
                    self.note(note);
                }
            }
            Report::Hinted(_) => {}
            Report::DreamNow => self.queue.want(Job::Dream { trigger: "asked".into() }),
            Report::TreeMore(true) => self.tree_may_be_due(),
            Report::TreeMore(false) => {}
            Report::Conversation(chat) => {
                if current {
                    self.session.set_chat(&chat);
                    self.save_session();
                    self.conversation = chat;
                }
            }
            Report::Finished(end) => self.finished(end),
        }
    }

    /// The id of the running job's reply line, given on its first piece.
    fn reply_id(&mut self) -> u64 {
        let Some(running) = self.running.as_mut() else { return self.core.next_id() };
        *running.reply_id.get_or_insert_with(|| self.core.next_id())
    }

    /// The running job is over: the next one starts.
    fn finished(&mut self, end: End) {
        let Some(running) = self.running.take() else { return };
        self.queue.done();
        // Whatever it still waited for is moot.
        for call_id in std::mem::take(&mut self.answers).into_keys() {
            self.core.confirmation_over(&call_id);
        }
        tracing::debug!(?end, "job over");
        if running.handle.is(JobKind::Chat) && running.handle.epoch == self.epoch {
            self.chat_finished(&running, end);
        }
        if running.handle.is(JobKind::Dream) {
            self.dream_over(end);
        }
        if running.handle.kind.rule().person {
            self.activity();
        }
        match end {
            End::Done => {}
            End::Cancelled if running.handle.is(JobKind::Command) => {
                self.note("command cancelled".into());
            }
            End::Cancelled => {}
            End::Panicked => self.error(
                ErrorCode::Internal,
                "the job failed on a bug in stt-assistant (see its log); the next one runs",
            ),
        }
        if running.handle.is(JobKind::Command) {
            if let Some(memory) = &self.memory {
                memory.close(Episode::Command(running.job));
            }
            let effects = self.core.execution_finished();
            self.apply(effects);
        }
        self.start_next();
    }

    /// The provider in use.
    fn active(&self) -> Option<Id> {
        self.env.providers.as_ref().map(|(_, id)| *id).filter(|_| self.env.client.is_some())
    }

    /// With `[llm].failover`, the provider a job's request goes to when the one in use fails
    /// before its first word: the next live one (that runs tools, for a job that calls them).
    fn fallback(&self, tools: bool) -> Option<(Id, Provider)> {
        let registry = self.registry.as_ref().filter(|r| r.settings().failover)?;
        registry.fallbacks(&self.providers, self.active()?).into_iter().find_map(|id| {
            let probed = self.providers.iter().find(|p| p.id == id)?;
            let provider = registry.provider(probed, "").ok()?;
            (!tools || provider.supports_tools()).then_some((id, provider))
        })
    }

    /// Why a command cannot run on the provider in use (a chat-only CLI), naming one that
    /// can; `None` when it can, or when there is no provider (the job says so).
    fn chat_only(&self) -> Option<ErrorMsg> {
        let client = self.env.client.as_ref()?;
        if client.supports_tools() {
            return None;
        }
        let name = self.active().map_or_else(String::new, |id| id.to_string());
        let able = self.registry.as_ref().and_then(|registry| {
            registry
                .fallbacks(&self.providers, self.active()?)
                .into_iter()
                .find(|id| !matches!(id.spec().transport, stt_llm::registry::Transport::Cli(_)))
        });
        let fix = match able {
            Some(id) => format!("`/provider {id}` switches to one that can"),
            None => "none that can is running: start the local model (`stt-daemon up`) or \
                     ollama, or set an API key (docs/PROVIDERS.md)"
                .to_owned(),
        };
        Some(ErrorMsg::new(
            ErrorCode::NoExecutor,
            format!(
                "{name} is a chat provider: it runs its own agent, not stt's tools, so it cannot \
                 run commands; {fix}"
            ),
        ))
    }

    /// Takes in what a probe of every provider found: chooses the provider on the first (or
    /// when the one in use went away and it was chosen automatically), and reports becoming
    /// unusable to viewers with the fix, once per change.
    fn on_providers(&mut self, found: Vec<Probed>) {
        let Some(registry) = self.registry.clone() else { return };
        let first = !self.probed;
        self.probed = true;
        let live = |id: Id| found.iter().any(|p| p.id == id && p.status == ProviderStatus::Live);
        let current = self.active();
        let choice = match current {
            // A provider in use that is still there stays: no switching mid-conversation.
            Some(id) if live(id) || registry.configured() == Some(id) => Some(id),
            _ => self.preferred(&registry, &found).or_else(|| registry.choose(&found)),
        };
        let probed = choice.and_then(|id| found.iter().find(|p| p.id == id));
        let loading = probed.is_some_and(|p| p.loading);
        let usable = choice.is_some_and(live);
        // The session a new provider publishes must already say whether it is loading (or
        // warming up).
        let was_loading = self.model_loading();
        self.providers.clone_from(&found);
        if !usable || choice != current {
            // A server that went away comes back with an empty cache.
            self.warmth = Warmth::Cold;
        }
        let warm =
            self.warmth == Warmth::Cold && usable && !loading && choice == Some(Id::LlamaCpp);
        if warm {
            self.warmth = Warmth::Warming;
        }
        if choice != current || first {
            self.use_provider(&registry, choice, &found, current);
        }
        if warm {
            self.warm_up();
        }
        let before = self.reachable.replace(usable);
        match (before, usable) {
            // Loading is on its way to usable: the session says so, nobody needs an error.
            (_, false) if loading => {
                tracing::debug!(provider = ?choice, "the model is loading");
            }
            (Some(true) | None, false) => {
                let message = match probed {
                    Some(probed) => registry.explain_down(probed),
                    None => registry.none_live(&found),
                };
                self.error(ErrorCode::LlmError, message);
            }
            (Some(false), true) => tracing::info!(provider = ?choice, "the model answers again"),
            (None, true) => tracing::debug!(provider = ?choice, "the model answers"),
            (Some(false), false) => tracing::debug!("probe: the model still does not answer"),
            (Some(true), true) => tracing::debug!("probe: the model answers"),
        }
        if self.model_loading() {
            // Look again soon: the jobs waiting, and the person, want to know when it is up.
            self.probe_soon(Duration::from_millis(500));
        } else if self.env.client.is_none() {
            // Nothing yet: a local model `stt-daemon up` starts beside us may be a moment
            // from listening, and a person may be starting one. Look again soon, then less
            // and less often (2, 4, 8, 16 s) down to the periodic probe's pace.
            let delay = self.reprobe_after;
            self.reprobe_after = (delay * 2).min(Duration::from_secs(16));
            self.probe_soon(delay);
        } else {
            self.reprobe_after = FIRST_REPROBE;
        }
        if was_loading != self.model_loading() {
            self.publish_session();
        }
        self.start_next();
    }

    /// Whether the provider in use answers but is still loading its model, or reading the
    /// command prefix into its cache (jobs wait for both: a command sent meanwhile would wait
    /// inside the server all the same).
    fn model_loading(&self) -> bool {
        self.warmth == Warmth::Warming
            || self
                .active()
                .is_some_and(|id| self.providers.iter().any(|p| p.id == id && p.loading))
    }

    /// Once the local model (llama-server) answers with its model loaded, has it read the
    /// command prefix (the system prompt and the tool list every command starts with) into
    /// its command slot, so that the first command costs what every later one does. One
    /// request, `max_tokens` 1; jobs wait for it ([`Warmth::Warming`]).
    fn warm_up(&mut self) {
        let Some(client) = self.env.client.clone() else {
            self.warmth = Warmth::Warm;
            return;
        };
        let env = self.env.clone();
        self.help(async move {
            let started = tokio::time::Instant::now();
            match llm::command::warm(&env, &client).await {
                Ok(usage) => tracing::info!(
                    prompt_tokens = usage.prompt_tokens,
                    ms = started.elapsed().as_millis(),
                    "the local model has the command prompt in its cache"
                ),
                Err(e) => tracing::warn!("warming the local model's prompt cache failed: {e}"),
            }
            Helped::Warmed
        });
    }

    /// Probes every provider now, for a job that found none; what it finds comes as
    /// [`Helped::Providers`], like the periodic probe's.
    fn probe_now(&mut self) {
        let Some(registry) = self.registry.clone() else { return };
        self.help(async move { Helped::Providers(registry.probe_all().await) });
    }

    /// Probes every provider once more after `delay` (the periodic probe is slow); one such
    /// probe at a time.
    fn probe_soon(&mut self, delay: Duration) {
        let Some(registry) = self.registry.clone().filter(|_| !self.reprobe_pending) else {
            return;
        };
        self.reprobe_pending = true;
        self.help(async move {
            tokio::time::sleep(delay).await;
            Helped::Reprobed(registry.probe_all().await)
        });
    }

    fn fire_timers(&mut self, now: Instant) {
        for timer in self.timers.due(now) {
            tracing::info!(id = timer.id, label = %timer.label, "timer fired");
            self.publish(&AssistantEvent::ChatMessage(ChatMessage {
                id: timer.id,
                role: ChatRole::Note,
                speaker: None,
                text: format!("⏰ {}", timer.label),
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
        self.heartbeat_seq += 1;
        self.publish(&AssistantEvent::Heartbeat(AssistantHeartbeat {
            seq: self.heartbeat_seq,
            mode: self.core.mode(),
            stt_healthy: self.core.stt_health(now()).0,
            daemon_backlog: self.core.daemon_backlog(),
            inference_queue: self.queue.depth(),
            inference_busy: self.queue.busy(),
        }));
    }

    fn publish(&self, event: &AssistantEvent) {
        self.publisher.publish(event);
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

/// How soon the first probe again comes while no provider is there.
const FIRST_REPROBE: Duration = Duration::from_secs(2);

/// A job that finds no provider, and the probe made for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Look {
    /// No job is waiting for a probe.
    Idle,
    /// A probe is on its way; the job waits for it.
    Probing,
    /// The probe came back: the next job runs with what it found.
    Looked,
}

/// Whether the local model's command slot holds the command prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Warmth {
    /// Not yet (or the server went away since).
    Cold,
    /// The warm-up request is running; jobs wait for it.
    Warming,
    /// Done (or failed: then the first command reads the prefix itself).
    Warm,
}

/// Whether `reply` refuses a request only until the flow is ready.
fn not_ready(reply: &AssistantEvent) -> bool {
    matches!(reply, AssistantEvent::Error(ErrorMsg { code: ErrorCode::NotReady, .. }))
}

/// Sleeps until `deadline`; never returns without one.
/// The loop's clock: tokio's, so that a test that pauses tokio's time moves this clock
/// too (every deadline the loop keeps, held requests, timers and the heartbeat's staleness,
/// then passes in virtual time).
fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// The control server's side: every request goes to the loop, and its reply comes back.
#[derive(Debug, Clone)]
pub struct Front {
    inputs: mpsc::UnboundedSender<Input>,
}

impl Front {
    pub fn new(inputs: mpsc::UnboundedSender<Input>) -> Self {
        Self { inputs }
    }
}

impl Handler for Front {
    async fn handle(&self, _conn: &ConnInfo, request: Request) -> AssistantEvent {
        let (reply, answer) = oneshot::channel();
        if self.inputs.send(Input::Request { request, reply }).is_err() {
            return shutting_down();
        }
        answer.await.unwrap_or_else(|_| shutting_down())
    }
}

fn shutting_down() -> AssistantEvent {
    AssistantEvent::Error(ErrorMsg::new(
        ErrorCode::Internal,
        "stt-assistant is shutting down; try again once it is back",
    ))
}

/// Finds which providers are there: at start, then every `every` (never again when zero),
/// each finding to `out`.
pub async fn probes(
    registry: Registry,
    every: Duration,
    out: Sink<Vec<Probed>>,
    shutdown: CancellationToken,
) {
    if every.is_zero() {
        tokio::select! {
            () = shutdown.cancelled() => {}
            found = registry.probe_all() => out.send(found),
        }
        return;
    }
    let mut ticker = stt_app::Ticker::new(every, shutdown.clone());
    while ticker.tick().await {
        tokio::select! {
            () = shutdown.cancelled() => break,
            found = registry.probe_all() => out.send(found),
        }
    }
}
