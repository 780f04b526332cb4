//! The assistant's loop served in this process ([`stt_assistant::serve`]) under tokio's
//! paused clock: the rules that depend on time (a held `command_execute` and its deadline, a
//! daemon whose heartbeats stop, a dream stopped by speech going on after the quiet) are
//! checked in virtual time, so a test of seconds of waiting takes none. The daemon is a real
//! publish-only socket served here; requests go over the real control socket; every file
//! (memory, the session, speaker names) is under a temporary directory.
//!
//! The scripted model answers on a thread of its own, in real time, while the clock here
//! moves on whenever the loop waits: the model's timeouts are an hour, and the waits that
//! span a request allow minutes of virtual time, so a slow real answer is never a timeout.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Local};
use serde_json::json;

use stt_assistant::clock::Clock;
use stt_assistant::{Settings, serve};
use stt_bus::{BoundSocket, Link, Publisher, Subscription};
use stt_config::{Config, Env};
use stt_proto::{
    AssistantEvent, ChatMessage, ChatRole, DaemonEvent, ErrorCode, MemoryRequest, Mode, Request,
    SpeechStart, Status, TaskRequest,
};
use stt_testkit::llm_server::{LlmServer, Script};
use tokio_util::sync::CancellationToken;

/// How often a wait looks again, in virtual time (costs nothing real).
const POLL: Duration = Duration::from_millis(50);

/// How long, in virtual time, a wait that spans real work (a request to the scripted model,
/// the memory thread) may take: the clock jumps a poll at a time while that work runs, so on
/// a loaded machine a real second can be minutes of it.
const LONG: Duration = Duration::from_secs(3600);

/// A daemon that publishes what the test tells it, and the assistant following it.
struct Served {
    _dir: tempfile::TempDir,
    control: PathBuf,
    daemon: Publisher,
    shutdown: CancellationToken,
    assistant: tokio::task::JoinHandle<anyhow::Result<()>>,
    /// The assistant's local clock.
    clock: Clock,
}

impl Served {
    /// The assistant with `config`, its XDG directories under a temporary one.
    async fn start(config: &Config) -> Self {
        Self::start_at(config, None).await
    }

    /// The assistant with `config`, its local clock reading `at` now (else the system's).
    async fn start_at(config: &Config, at: Option<DateTime<Local>>) -> Self {
        let clock = |now| at.map_or(Clock::System, |at| Clock::starting(at, now));
        Self::start_clocked(config, clock, None).await
    }

    /// The assistant with `config` and the clock `clock` makes of the loop's `now`; `wake`:
    /// the wake-up the last run left (`<state dir>/stt/wake.json`).
    async fn start_clocked(
        config: &Config,
        clock: impl FnOnce(std::time::Instant) -> Clock,
        wake: Option<&stt_assistant::wake::Saved>,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        if let Some(saved) = wake {
            let file = root.join("state/stt").join(stt_assistant::wake::FILE);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, serde_json::to_vec(saved).unwrap()).unwrap();
        }
        let env = Env::from_vars(
            [("HOME", ""), ("XDG_DATA_HOME", "data"), ("XDG_STATE_HOME", "state")]
                .map(|(name, sub)| (name, root.join(sub).into_os_string())),
        );
        let shutdown = CancellationToken::new();
        let daemon_path = dir.path().join("stt-daemon.sock");
        let daemon = crate::common::daemon(&daemon_path, &shutdown);

        let mut settings = Settings::from_config(config, &env).unwrap();
        settings.clock = clock(tokio::time::Instant::now().into_std());
        let clock = settings.clock;
        assert!(settings.session_file.starts_with(&root), "{:?}", settings.session_file);
        let control = dir.path().join("stt-assistant.sock");
        let socket = BoundSocket::bind(&control, "stt-assistant").unwrap();
        let assistant = tokio::spawn(serve(socket, daemon_path, settings, shutdown.clone()));
        // The assistant follows the daemon once it has subscribed.
        tokio::time::timeout(Duration::from_secs(30), async {
            while daemon.subscribers() == 0 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the assistant subscribes to the daemon");
        Self { _dir: dir, control, daemon, shutdown, assistant, clock }
    }

    fn beat(&self, seq: u64) {
        self.daemon.publish(&stt_testkit::msg::heartbeat(seq));
    }

    /// Beats every second from now on, as the real daemon does (in virtual time: waits on
    /// the scripted model's real answers move the clock by whole seconds).
    fn keep_beating(&self) {
        let daemon = self.daemon.clone();
        tokio::spawn(async move {
            let mut seq = 0;
            loop {
                seq += 1;
                daemon.publish(&stt_testkit::msg::heartbeat(seq));
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
    }

    /// The wake-up as the assistant last saved it.
    fn wake_file(&self) -> stt_assistant::wake::Saved {
        stt_assistant::wake::load(
            &self._dir.path().join("state/stt").join(stt_assistant::wake::FILE),
        )
    }

    /// The local time as the assistant reads it now.
    fn local(&self) -> DateTime<Local> {
        self.clock.local(tokio::time::Instant::now().into_std())
    }

    /// The chat messages every viewer sees from now on.
    fn messages(&self) -> Arc<Mutex<Vec<ChatMessage>>> {
        let seen: Arc<Mutex<Vec<ChatMessage>>> = Arc::default();
        let keep = Arc::clone(&seen);
        let mut viewer =
            Subscription::<AssistantEvent>::assistant(self.control.clone(), "test", true);
        tokio::spawn(async move {
            loop {
                if let Link::Event(AssistantEvent::ChatMessage(m)) = viewer.next().await {
                    keep.lock().unwrap().push(m);
                }
            }
        });
        seen
    }

    /// Runs `text` as a typed command and waits for it to end.
    async fn command(&self, text: &str) {
        for request in [
            Request::CommandStart,
            Request::CommandEdit { text: text.into() },
            Request::CommandExecute { wait_ms: None },
        ] {
            let reply = ask(&self.control, &request).await;
            assert!(matches!(reply, AssistantEvent::Ack(_)), "{request:?}: {reply:?}");
        }
        let long = LONG;
        self.until("the command is done", long, |s| s.mode == Mode::Idle && !s.inference_busy)
            .await;
    }

    async fn status(&self) -> Status {
        match ask(&self.control, &Request::Status).await {
            AssistantEvent::Status(status) => status,
            other => panic!("not a status: {other:?}"),
        }
    }

    /// Waits (in virtual time, up to `within`) until `status` says `what`. Under the paused
    /// clock time moves only while every task waits on a timer, so the wait sleeps between
    /// looks: a loop of requests alone would hold the clock still.
    async fn until(&self, what: &str, within: Duration, holds: impl Fn(&Status) -> bool) -> Status {
        tokio::time::timeout(within, async {
            loop {
                let status = self.status().await;
                if holds(&status) {
                    return status;
                }
                // Virtual time: the clock moves only when the test lets it.
                tokio::time::sleep(POLL).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("status never said {what}"))
    }

    async fn stop(self) {
        self.shutdown.cancel();
        self.assistant.await.unwrap().unwrap();
    }
}

/// Asks the assistant. The wait allows an hour of virtual time: while a request waits on
/// real work (the memory thread, the scripted model) the paused clock jumps from timer to
/// timer, about a second of it for each millisecond of real time.
async fn ask(control: &Path, request: &Request) -> AssistantEvent {
    stt_bus::request(control, "test", request, Duration::from_secs(3600)).await.unwrap().event
}

#[tokio::test(start_paused = true)]
async fn a_held_execute_waits_out_its_deadline_and_silence_from_the_daemon_makes_stt_unhealthy() {
    let mut config = Config::default();
    config.llm.enabled = false;
    config.memory.enabled = false;
    let served = Served::start(&config).await;
    served.beat(1);
    served.until("STT is healthy", Duration::from_secs(2), |s| s.stt_healthy).await;
    let armed = ask(&served.control, &Request::CommandStart).await;
    assert!(matches!(armed, AssistantEvent::Ack(_)), "{armed:?}");
    // Speech opens and never closes: a held execute waits its whole deadline, then is
    // refused with the reason.
    served.daemon.publish(&DaemonEvent::SpeechStart(SpeechStart { seg_id: 1, start: 0.0 }));
    tokio::time::timeout(Duration::from_secs(2), async {
        loop {
            let refused = ask(&served.control, &Request::CommandExecute { wait_ms: None }).await;
            if matches!(&refused, AssistantEvent::Error(e) if e.message.contains("still open")) {
                return;
            }
            tokio::time::sleep(POLL).await;
        }
    })
    .await
    .expect("the assistant hears the speech start");
    assert_eq!(served.status().await.mode, Mode::CommandArmed);
    let started = tokio::time::Instant::now();
    let held = ask(&served.control, &Request::CommandExecute { wait_ms: Some(2_500) }).await;
    let waited = started.elapsed();
    match held {
        AssistantEvent::Error(e) => {
            assert_eq!(e.code, ErrorCode::NotReady, "{e:?}");
            assert!(e.message.contains("speech is still open (segment 1)"), "{e:?}");
        }
        other => panic!("a held execute with speech open was answered {other:?}"),
    }
    assert!(waited >= Duration::from_millis(2_500), "answered after {waited:?} of its 2.5 s");
    // No heartbeat since the first, 2.5 s ago: past [assistant].stt_stale_after_ms (3 s by
    // default) STT reads unhealthy, saying why.
    let status =
        served.until("STT is unhealthy", Duration::from_secs(10), |s| !s.stt_healthy).await;
    assert!(status.stt_detail.contains("heartbeat"), "{status:?}");
    assert!(started.elapsed() >= Duration::from_millis(2_500), "{:?}", started.elapsed());
    // A heartbeat brings it back at once.
    served.beat(2);
    served.until("STT is healthy again", Duration::from_secs(2), |s| s.stt_healthy).await;
    served.stop().await;
}

/// A dream holds the model; someone starts speaking: the dream stops at once (the model is
/// free), is wanted again, and goes on only after the quiet a stopped dream waits for (30 s),
/// in virtual time.
#[tokio::test(start_paused = true)]
async fn speech_stops_a_dream_which_goes_on_after_the_quiet() {
    let server = LlmServer::start();
    let served = Served::start(&scripted(&server)).await;
    served.keep_beating();
    let long = LONG;
    served.until("the model answers", long, |s| s.llm_reachable == Some(true)).await;

    // A command leaves a conversation for a dream to read.
    server.push(Script::Text("The lights are on.".into()));
    for request in [
        Request::CommandStart,
        Request::CommandEdit { text: "turn on the lights".into() },
        Request::CommandExecute { wait_ms: None },
    ] {
        let reply = ask(&served.control, &request).await;
        assert!(matches!(reply, AssistantEvent::Ack(_)), "{request:?}: {reply:?}");
    }
    served.until("the command is done", long, |s| s.mode == Mode::Idle && !s.inference_busy).await;
    assert_eq!(server.requests().len(), 1);

    // The dream's first request hangs: the dream holds the model.
    server.push(Script::Hang);
    let started = ask(&served.control, &Request::Memory(MemoryRequest::Dream)).await;
    match &started {
        AssistantEvent::MemoryOutput { text, .. } => assert!(text.contains("a dream started")),
        other => panic!("memory dream answered {other:?}"),
    }
    served.until("the dream holds the model", long, |s| s.inference_busy).await;
    stt_testkit::until("the dream's request", long, || server.requests().len() == 2).await;

    // Someone speaks (nobody armed a command): the dream gives the model back.
    served.daemon.publish(&DaemonEvent::SpeechStart(SpeechStart { seg_id: 1, start: 0.0 }));
    let stopped = tokio::time::Instant::now();
    served.until("the dream stopped", long, |s| !s.inference_busy).await;
    let stopped_after = stopped.elapsed();

    // It waits for the quiet: with the model free, nothing runs for a while…
    server.respond_with(|_| Script::Text("Nothing to keep.".into()));
    tokio::time::sleep(Duration::from_secs(20).saturating_sub(stopped_after)).await;
    assert_eq!(server.requests().len(), 2, "the stopped dream went on before the quiet");
    assert!(!served.status().await.inference_busy);
    // …then it goes on by itself.
    stt_testkit::until("the dream going on", long, || server.requests().len() >= 3).await;
    assert!(stopped.elapsed() >= Duration::from_secs(29), "went on after {:?}", stopped.elapsed());
    served.until("the resumed dream is over", long, |s| !s.inference_busy).await;
    let dreams =
        ask(&served.control, &Request::Memory(MemoryRequest::Dreams { limit: None })).await;
    match dreams {
        AssistantEvent::MemoryOutput { text, .. } => {
            // Newest first: the one that went on, then the one speech stopped.
            let dreams: Vec<&str> = text.lines().filter(|l| l.starts_with("dream ")).collect();
            assert_eq!(dreams.len(), 2, "{text}");
            assert!(dreams[0].contains("(asked, done)"), "{text}");
            assert!(dreams[1].contains("(asked, interrupted)"), "{text}");
        }
        other => panic!("memory dreams answered {other:?}"),
    }
    served.stop().await;
}

/// The config of a test against the scripted model: no timeout fires while it answers in
/// real time (see the top), no embeddings, no tree, dreams only when asked.
fn scripted(server: &LlmServer) -> Config {
    let mut config = Config::default();
    config.llm.endpoint = server.url();
    config.llm.model = "scripted".into();
    config.llm.connect_timeout_s = 3600;
    config.llm.request_timeout_s = 3600;
    config.memory.embedding_model = PathBuf::new();
    config.memory.tree = false;
    config.memory.dream_idle_s = 0;
    config
}

/// Waits up to `within` (virtual time, hours of it) for `holds`, looking every few seconds:
/// a wake-up is minutes away, and a look every few milliseconds would cost real seconds.
async fn in_hours(what: &str, within: Duration, holds: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + within;
    while !holds() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "gave up after {within:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
}

/// Today at `hour`:`minute`, local time.
fn today_at(hour: u32, minute: u32) -> DateTime<Local> {
    let day = Local::now().date_naive();
    day.and_hms_opt(hour, minute, 0).unwrap().and_local_timezone(Local).earliest().unwrap()
}

/// A task due today, so that a proactive turn has something to say.
async fn task_due_today(served: &Served) {
    let add = TaskRequest::Add {
        title: "Renew the passport".into(),
        goal: None,
        due: Some(Local::now().format("%Y-%m-%d").to_string()),
        priority: Some(1),
    };
    let added = ask(&served.control, &Request::Task(add)).await;
    assert!(matches!(added, AssistantEvent::TaskOutput { .. }), "{added:?}");
}

fn said_by_assistant(messages: &Mutex<Vec<ChatMessage>>, text: &str) -> bool {
    messages.lock().unwrap().iter().any(|m| m.role == ChatRole::Assistant && m.text == text)
}

/// The model asks to look again in an hour (`heartbeat`). An hour later, in virtual time, a
/// proactive turn asks the model with the time and the task due, and its reminder lands in
/// the conversation; nobody answers it, so the next hour's wake-up is dropped; a person
/// answers in chat, and the hour after that the assistant reminds again.
#[tokio::test(start_paused = true)]
async fn a_heartbeat_brings_a_reminder_and_an_unanswered_one_is_not_repeated() {
    let server = LlmServer::start();
    let served = Served::start_at(&scripted(&server), Some(today_at(10, 0))).await;
    served.keep_beating();
    let messages = served.messages();
    let long = LONG;
    served.until("the model answers", long, |s| s.llm_reachable == Some(true)).await;
    task_due_today(&served).await;

    server.push(Script::ToolCalls(vec![("heartbeat".into(), json!({"minutes": 60}))]));
    server.push(Script::Text("I will look at your tasks every hour.".into()));
    let started = tokio::time::Instant::now();
    served.command("check on my tasks every hour").await;
    let offered = server.requests()[0]["tools"].to_string();
    // Looking again is offered; quiet hours, which its words do not ask for, are not.
    assert!(offered.contains("heartbeat") && !offered.contains("set_do_not_disturb"), "{offered}");
    let asked = server.requests().len();
    assert_eq!(asked, 2);

    // An hour after the call (and not before: it came after `started`), the proactive turn,
    // with the time and what is due.
    server.push(Script::Text("Your passport renewal is due today.".into()));
    in_hours("the proactive turn", Duration::from_secs(2 * 3600), || {
        server.requests().len() == asked + 1
    })
    .await;
    assert!(started.elapsed() >= Duration::from_secs(3600), "{:?}", started.elapsed());
    // Told the time of the assistant's clock (started at 10:00 today), not the system's.
    let request = server.requests()[asked].to_string();
    let now = served.local();
    let told = [now, now - chrono::TimeDelta::minutes(1)].map(|t| t.format("%H:%M").to_string());
    assert!(told.iter().any(|t| request.contains(t.as_str())), "{told:?}: {request}");
    assert!(request.contains("Renew the passport"), "{request}");
    stt_testkit::until("the reminder in the conversation", long, || {
        said_by_assistant(&messages, "Your passport renewal is due today.")
    })
    .await;

    // Unanswered: the next hour's wake-up asks nothing.
    tokio::time::sleep(Duration::from_secs(61 * 60)).await;
    assert_eq!(server.requests().len(), asked + 1, "an unanswered reminder was repeated");

    // A person answers in chat; the next wake-up reminds again.
    assert!(matches!(ask(&served.control, &Request::ChatToggle).await, AssistantEvent::Ack(_)));
    server.push(Script::Text("Good luck with it.".into()));
    let send = Request::ChatSend { text: "I will do it after lunch".into() };
    assert!(matches!(ask(&served.control, &send).await, AssistantEvent::Ack(_)));
    stt_testkit::until("the chat reply", long, || {
        said_by_assistant(&messages, "Good luck with it.")
    })
    .await;
    // The reminder is in the conversation the chat turn sent.
    let chat = server.requests()[asked + 1].to_string();
    assert!(chat.contains("Your passport renewal is due today."), "{chat}");
    server.push(Script::Text("The passport, after lunch.".into()));
    // Within the next hour or, when the chat above took longer in virtual time than the rest
    // of this one, the hour after (the wake-up that came first found it unanswered).
    in_hours("the next reminder", Duration::from_secs(2 * 3600 + 300), || {
        said_by_assistant(&messages, "The passport, after lunch.")
    })
    .await;
    served.stop().await;
}

/// A wake-up that falls in the do-not-disturb hours (22:00-08:00 by default) waits for their
/// end: asked at 21:50 for 30 minutes on, the proactive turn comes at 08:00.
#[tokio::test(start_paused = true)]
async fn do_not_disturb_hours_hold_a_wake_up_until_morning() {
    let server = LlmServer::start();
    let served = Served::start_at(&scripted(&server), Some(today_at(21, 50))).await;
    served.keep_beating();
    let long = LONG;
    served.until("the model answers", long, |s| s.llm_reachable == Some(true)).await;
    task_due_today(&served).await;
    server.push(Script::ToolCalls(vec![("heartbeat".into(), json!({"minutes": 30}))]));
    server.push(Script::Text("I will look again in half an hour.".into()));
    served.command("look at my tasks again in half an hour").await;
    let asked = server.requests().len();

    server.push(Script::Text("Good morning: the passport is due.".into()));
    let morning = (today_at(7, 55) + chrono::TimeDelta::days(1)) - served.local();
    tokio::time::sleep(morning.to_std().unwrap()).await;
    assert_eq!(server.requests().len(), asked, "a proactive turn in the do-not-disturb hours");
    in_hours("the morning's proactive turn", Duration::from_secs(3600), || {
        server.requests().len() == asked + 1
    })
    .await;
    // Read on the assistant's clock: virtual time also runs on while the loop waits on the
    // scripted server's socket, so the command's own length in it varies with the machine.
    let came = served.local();
    let morning = today_at(8, 0) + chrono::TimeDelta::days(1);
    assert!(came >= morning, "came at {came}, before the do-not-disturb hours ended");
    assert!(server.requests()[asked].to_string().contains("08:00"), "{:?}", server.requests());
    served.stop().await;
}

/// The config of a test against the installed local model (the real llama-server).
fn local_model(server: &stt_testkit::llama::Server) -> Config {
    let mut config = Config::default();
    config.llm.endpoint = format!("http://127.0.0.1:{}/v1/chat/completions", server.port);
    config.llm.request_timeout_s = 180;
    config.memory.embedding_model = PathBuf::new();
    config.memory.tree = false;
    config.memory.dream_idle_s = 0;
    config
}

/// The assistant on a clock that reads `at` and runs 120 times as fast, with a wake-up the
/// last run left at `next` (every hour) and a task due today; the chat messages it shows.
async fn woken(
    config: &Config,
    at: DateTime<Local>,
    next: DateTime<Local>,
) -> (Served, Arc<Mutex<Vec<ChatMessage>>>) {
    let saved = stt_assistant::wake::Saved { next: Some(next), minutes: 60, quiet_until: None };
    let served = Served::start_clocked(config, |now| Clock::fast(at, now, 120), Some(&saved)).await;
    served.keep_beating();
    let messages = served.messages();
    task_due_today(&served).await;
    (served, messages)
}

/// The installed local model, on a clock 120 times as fast as the real one (its answers take
/// real seconds; the wake-ups are minutes apart). By day, a wake-up left by the last run
/// comes, and the model's reminder of the task due today lands in the conversation. At
/// night (the default do-not-disturb hours) the same wake-up waits for 08:00 and nothing is
/// said.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_model_reminds_of_what_is_due_when_it_wakes_and_not_at_night() {
    if let Ok(filter) = std::env::var("STT_LOG") {
        let _ = tracing_subscriber::fmt().with_env_filter(filter).with_test_writer().try_init();
    }
    let dir = tempfile::tempdir().unwrap();
    let server = stt_testkit::llama::Server::start(dir.path());
    let config = local_model(&server);

    let (day, messages) = woken(&config, today_at(10, 0), today_at(10, 20)).await;
    let reminded = tokio::time::timeout(Duration::from_secs(300), async {
        loop {
            let said =
                messages.lock().unwrap().iter().find(|m| m.role == ChatRole::Assistant).cloned();
            if let Some(said) = said {
                return said;
            }
            tokio::time::sleep(POLL).await;
        }
    })
    .await
    .expect("a reminder from the local model within 5 minutes");
    eprintln!("the local model reminded: {:?}", reminded.text);
    assert!(reminded.text.to_lowercase().contains("passport"), "{reminded:?}");
    assert!(day.local() >= today_at(10, 20), "it came at {}", day.local());
    day.stop().await;

    let (night, messages) = woken(&config, today_at(22, 50), today_at(23, 0)).await;
    // An hour of the night (30 s): the wake-up is held to the morning, nothing is said.
    while night.local() < today_at(23, 50) {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let said: Vec<ChatMessage> = messages.lock().unwrap().clone();
    assert!(said.iter().all(|m| m.role != ChatRole::Assistant), "{said:?}");
    let kept = night.wake_file();
    assert_eq!(kept.next, Some(today_at(8, 0) + chrono::TimeDelta::days(1)), "{kept:?}");
    night.stop().await;
}
