//! What the assistant's tests share: a lane whose model is the scripted server, a job run to
//! its end, and a stand-in daemon (a publish-only socket the test writes events on).

use std::sync::Arc;
use std::time::Duration;

use stt_assistant::llm::{self, End, JobEnv, Report, Settings, Work};
use stt_assistant::memory::Memory;
use stt_llm::{Endpoint, Provider};
use stt_testkit::llm_server::LlmServer;

/// The lane settings the tests start from: small limits, greedy, streamed.
pub fn settings() -> Settings {
    Settings {
        command_system_prompt: "You run commands.".into(),
        chat_system_prompt: "You are a helpful voice assistant.".into(),
        max_tool_iterations: 4,
        confirmation_timeout: Duration::from_secs(1),
        max_tokens: 64,
        command_answer_max_tokens: 64,
        temperature: 0.0,
        stream: true,
        prompt_budget: 4000,
        compaction_trigger_ratio: 0.8,
        compaction_keep_turns: 2,
        compaction_max_tokens: 60,
        compaction_system_prompt: "Summarize.".into(),
        trim_block_turns: 2,
        proactive: true,
    }
}

/// A lane on `server`'s model with `settings`, the built-in tools, and `memory` if any.
pub fn env(server: &LlmServer, settings: Settings, memory: Option<Memory>) -> JobEnv {
    let client = Provider::new(Endpoint {
        url: server.url(),
        model: String::new(),
        api_key: None,
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(5),
        slots: false,
    })
    .expect("a provider for the scripted server");
    JobEnv {
        client: Some(client),
        fallback: None,
        missing: String::new(),
        providers: None,
        tools: Arc::new(stt_tools::Registry::new(&[]).expect("the built-in tools")),
        settings: Arc::new(settings),
        memory,
        chat_system: None,
    }
}

/// Long-term memory in a file under `dir`.
pub fn memory(dir: &std::path::Path) -> Memory {
    let settings = stt_assistant::memory::Settings::new(dir.join("memory.sqlite"));
    let (memory, _thread) =
        stt_assistant::memory::spawn(settings, stt_assistant::lane::Sink::new(|_| {}))
            .expect("memory opens");
    memory
}

/// The tool results among `reports`: (tool, ok, result).
pub fn tool_results(reports: &[Report]) -> Vec<(String, bool, String)> {
    reports
        .iter()
        .filter_map(|r| match r {
            Report::Publish(stt_proto::AssistantEvent::ToolResult(t)) => {
                Some((t.tool.clone(), t.ok, t.result.clone()))
            }
            _ => None,
        })
        .collect()
}

/// Runs `work` to its end (within 20 s); returns every report.
pub async fn run(env: &JobEnv, work: Work) -> Vec<Report> {
    let reports = tokio::time::timeout(Duration::from_secs(20), llm::run_to_end(env, work))
        .await
        .expect("the job ended");
    assert!(matches!(reports.last(), Some(Report::Finished(End::Done))), "{reports:?}");
    reports
}

/// A stand-in daemon: the real publish server on `path`, whose events the test publishes;
/// it stops with `shutdown`.
pub fn daemon(
    path: &std::path::Path,
    shutdown: &tokio_util::sync::CancellationToken,
) -> stt_bus::Publisher {
    let daemon = stt_bus::Publisher::default();
    let bound = stt_bus::BoundSocket::bind(path, "stt-daemon").unwrap();
    tokio::spawn(stt_bus::publish_server::serve(
        bound,
        daemon.clone(),
        stt_proto::Hello::new("stt-daemon"),
        shutdown.clone(),
    ));
    daemon
}
