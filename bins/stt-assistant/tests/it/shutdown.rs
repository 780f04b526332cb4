//! Every lane stops with the assistant: [`stt_assistant::serve`] in this process with every
//! lane on (memory, the writer, the voice speaking into a WAV file, triage with its trained
//! classifier, dictation), stopped; once `serve` has returned, no thread of any lane is left
//! in the process. A process of its own: the threads of this process are what is counted.

use std::time::Duration;

use stt_assistant::{Settings, serve};
use stt_bus::BoundSocket;
use stt_config::{Config, Env};
use stt_proto::{AssistantEvent, LaneState, LaneStatus, Request};
use stt_testkit::{DEADLINE, expect_within};
use tokio_util::sync::CancellationToken;

/// The names of this process's threads now.
fn threads() -> Vec<String> {
    let tasks = std::fs::read_dir("/proc/self/task").unwrap();
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("comm")).ok())
        .map(|name| name.trim().to_owned())
        .collect()
}

/// The lanes' threads, by the names they are given.
const LANES: [&str; 5] = ["stt-memory", "stt-writer", "voice", "triage", "dictate"];

/// Set in the child process, where the test's body runs.
const CHILD: &str = "STT_ASSISTANT_SHUTDOWN_CHILD";

/// The test binary holds every test of the assistant, and runs them on threads of this
/// process: the body runs again in a child process, where the only threads are its own.
#[test]
fn no_lane_outlives_the_assistant() {
    let module = module_path!().split_once("::").map_or("", |(_, rest)| rest);
    stt_testkit::reexec::run_child(
        &format!("{module}::child_no_lane_outlives_the_assistant"),
        &[(CHILD, std::ffi::OsStr::new("1"))],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "half of a test: its parent runs it in a child process"]
async fn child_no_lane_outlives_the_assistant() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let models = stt_testkit::models_dir();
    // The process's one ONNX Runtime, loaded here first: threads it keeps for the process
    // take this thread's name, not the name of the lane that happened to load it first.
    stt_onnx::environment(&stt_onnx::runtime_library(&models)).expect("ONNX Runtime loads");
    let env = Env::from_vars(
        [("HOME", root.clone()), ("XDG_DATA_HOME", root.join("data")), ("STT_MODELS_DIR", models)]
            .map(|(name, path)| (name, path.into_os_string())),
    );
    let mut config = Config::default();
    config.llm.enabled = false;
    config.memory.enabled = true;
    config.triage.enabled = true;
    config.voice.enabled = true;
    config.voice.device = format!("wav:{}", root.join("voice.wav").display());
    let settings = Settings::from_config(&config, &env).unwrap();

    let shutdown = CancellationToken::new();
    let daemon_path = root.join("stt-daemon.sock");
    let _daemon = crate::common::daemon(&daemon_path, &shutdown);
    let control = root.join("stt-assistant.sock");
    let socket = BoundSocket::bind(&control, "stt-assistant").unwrap();
    let assistant = tokio::spawn(serve(socket, daemon_path, settings, shutdown.clone()));

    // Every lane is running from the start (the voice's loads the voice, `[voice].enabled`);
    // a dictation and a reply make every lane busy before the stop.
    let ask = |request: Request| {
        let control = control.clone();
        async move {
            stt_bus::request(&control, "test", &request, Duration::from_secs(30))
                .await
                .unwrap()
                .event
        }
    };
    let dictating = ask(Request::DictateStart).await;
    assert!(matches!(dictating, AssistantEvent::Ack(_)), "{dictating:?}");
    let said = ask(Request::ChatCommand { line: "/help".into() }).await;
    assert!(!matches!(said, AssistantEvent::Error(_)), "{said:?}");
    let running = tokio::task::spawn_blocking(|| {
        expect_within("every lane's thread running, triage's classifier trained", DEADLINE, || {
            let now = threads();
            let all = LANES.iter().all(|lane| now.iter().any(|t| t == lane));
            let trained = !now.iter().any(|t| t == "triage-loader");
            if all && trained { Ok(now) } else { Err(format!("{now:?}")) }
        })
    })
    .await
    .unwrap();
    assert!(running.iter().any(|t| t == "voice"), "{running:?}");
    // `status` shows every lane, each as it last said: all ready but dictation, which may
    // find nothing to type with here (off, and why).
    let deadline = tokio::time::Instant::now() + DEADLINE;
    let lanes = loop {
        let AssistantEvent::Status(status) = ask(Request::Status).await else { panic!() };
        let ready = |lane: &LaneStatus| lane.state == LaneState::Ready;
        let settled = status.lanes.iter().all(|lane| ready(lane) || lane.name == "dictation")
            && status.lanes.iter().all(|lane| lane.state != LaneState::Started);
        if settled || tokio::time::Instant::now() > deadline {
            break status.lanes;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let names: Vec<&str> = lanes.iter().map(|lane| lane.name.as_str()).collect();
    assert_eq!(names, ["memory", "writer", "triage", "voice", "dictation"], "{lanes:?}");
    for lane in &lanes {
        let off = lane.state == LaneState::Off;
        assert!(lane.state == LaneState::Ready || (off && lane.name == "dictation"), "{lanes:?}");
        assert_eq!(off, lane.why.is_some(), "an off lane says why: {lane:?}");
    }

    shutdown.cancel();
    tokio::time::timeout(DEADLINE, assistant).await.expect("serve returns").unwrap().unwrap();
    let left: Vec<String> = threads()
        .into_iter()
        .filter(|t| LANES.contains(&t.as_str()) || t == "triage-loader")
        .collect();
    assert!(left.is_empty(), "lanes left running after the assistant stopped: {left:?}");
}
