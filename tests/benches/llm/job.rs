//! The lanes and the jobs: the default config's lane on a model's URL, and a job run to its
//! end with each report timed and the model's output of each request kept.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::runtime::Runtime;
use tracing::Span;

use stt_assistant::lane::Sink;
use stt_assistant::llm::{self, JobEnv, Report, Work};
use stt_assistant::memory::{self, Episode};
use stt_llm::{Endpoint, Provider};
use stt_proto::AssistantEvent;

use crate::output::{Output, ms_between, round};
use crate::proxy::{Proxy, lock};

/// What every lane of the battery shares: the default config's settings and tools.
#[derive(Debug)]
pub struct Base {
    pub settings: Arc<llm::Settings>,
    pub tools: Arc<stt_tools::Registry>,
    /// The names of every tool a command may call: the registry's, memory's and the
    /// planner's, and the wake-ups' (any other name is one the model made up).
    pub offered: Vec<String>,
    connect: Duration,
    idle: Duration,
}

impl Base {
    pub fn new() -> Self {
        let config = stt_config::Config::default();
        let settings =
            stt_assistant::Settings::from_config(&config, &stt_config::Env::from_process())
                .unwrap_or_else(|e| panic!("the default config's settings: {e:#}"));
        let tools = stt_tools::Registry::configured(&settings.tools, &settings.models)
            .unwrap_or_else(|e| panic!("the default config's tools: {e}"));
        let offered = tools
            .specs()
            .map(|s| s.name.clone())
            .chain(memory::Tool::commands().map(|t| t.name().to_owned()))
            .chain(stt_assistant::wake::Tool::ALL.iter().map(|t| t.name().to_owned()))
            .collect();
        Self {
            settings: Arc::new(settings.lane),
            tools: Arc::new(tools),
            offered,
            connect: Duration::from_secs(config.llm.connect_timeout_s),
            idle: Duration::from_secs(config.llm.request_timeout_s),
        }
    }

    /// A lane on the model at `url` (`slots`: llama-server's `id_slot` is sent).
    pub fn env(&self, url: &str, slots: bool, memory: Option<memory::Memory>) -> JobEnv {
        let client = Provider::new(Endpoint {
            url: url.to_owned(),
            model: String::new(),
            api_key: None,
            connect_timeout: self.connect,
            idle_timeout: self.idle,
            slots,
        })
        .unwrap_or_else(|e| panic!("a client for {url}: {e}"));
        JobEnv {
            client: Some(client),
            fallback: None,
            missing: "no model".into(),
            providers: None,
            tools: Arc::clone(&self.tools),
            settings: Arc::clone(&self.settings),
            memory,
            chat_system: None,
        }
    }
}

/// What a job reported, as the battery keeps it.
#[derive(Debug)]
pub enum Seen {
    Call {
        tool: String,
        args: Value,
    },
    Result {
        tool: String,
        ok: bool,
        result: String,
    },
    /// The job's reply line, whole.
    Reply(String),
    /// A streamed piece of it.
    Piece,
    Error(String),
    /// A call asked for confirmation (answered no).
    Confirm(String),
    Note(String),
    Finished(String),
}

impl Seen {
    pub fn json(&self) -> Value {
        match self {
            Self::Call { tool, args } => json!({"call": tool, "args": args}),
            Self::Result { tool, ok, result } => json!({"result": tool, "ok": ok, "text": result}),
            Self::Reply(text) => json!({"reply": text}),
            Self::Piece => json!({"piece": true}),
            Self::Error(text) => json!({"error": text}),
            Self::Confirm(id) => json!({"confirm": id, "answered": false}),
            Self::Note(text) => json!({"note": text}),
            Self::Finished(end) => json!({"finished": end}),
        }
    }
}

/// One job's reports, each with when it came.
#[derive(Debug)]
pub struct Ran {
    pub start: Instant,
    pub seen: Vec<(Instant, Seen)>,
    pub end: Instant,
}

impl Ran {
    pub fn calls(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.seen.iter().filter_map(|(_, s)| match s {
            Seen::Call { tool, args } => Some((tool.as_str(), args)),
            _ => None,
        })
    }

    pub fn reply(&self) -> String {
        self.seen
            .iter()
            .find_map(|(_, s)| match s {
                Seen::Reply(text) => Some(text.clone()),
                _ => None,
            })
            .unwrap_or_default()
    }

    pub fn end_ms(&self) -> f64 {
        ms_between(self.start, self.end)
    }

    /// The first streamed piece of the reply line.
    pub fn first_piece_ms(&self) -> Option<f64> {
        self.seen
            .iter()
            .find(|(_, s)| matches!(s, Seen::Piece))
            .map(|(t, _)| ms_between(self.start, *t))
    }

    pub fn json(&self) -> Value {
        let seen: Vec<Value> = self
            .seen
            .iter()
            .filter(|(_, s)| !matches!(s, Seen::Piece))
            .map(|(t, s)| {
                let mut v = s.json();
                v["ms"] = json!(round(ms_between(self.start, *t)));
                v
            })
            .collect();
        json!({"end_ms": round(self.end_ms()), "reports": seen})
    }
}

/// Runs `work` on `lane` to its end (`llm::run_to_end`, but answering a confirmation with
/// no at once, and each report timed).
async fn run(env: &JobEnv, work: Work) -> Ran {
    let start = Instant::now();
    let seen: Arc<Mutex<Vec<(Instant, Seen)>>> = Arc::default();
    let (done_tx, done) = tokio::sync::oneshot::channel();
    let done_tx = Mutex::new(Some(done_tx));
    let keep = Arc::clone(&seen);
    let out = Sink::new(move |report: Report| {
        let at = Instant::now();
        let kept = match report {
            Report::Publish(AssistantEvent::ToolCall(call)) => {
                Some(Seen::Call { tool: call.tool, args: call.args })
            }
            Report::Publish(AssistantEvent::ToolResult(r)) => {
                Some(Seen::Result { tool: r.tool, ok: r.ok, result: r.result })
            }
            Report::Publish(AssistantEvent::Error(e)) => Some(Seen::Error(e.message)),
            Report::Reply { partial: true, .. } => Some(Seen::Piece),
            Report::Reply { text, .. } => Some(Seen::Reply(text)),
            Report::Failed(why) => Some(Seen::Error(why)),
            Report::Note(note) => Some(Seen::Note(note)),
            Report::Confirm { call_id, answer } => {
                let _ = answer.send(false);
                Some(Seen::Confirm(call_id))
            }
            Report::Finished(end) => Some(Seen::Finished(format!("{end:?}"))),
            _ => None,
        };
        let finished = matches!(kept, Some(Seen::Finished(_)));
        if let Some(kept) = kept {
            lock(&keep).push((at, kept));
        }
        if finished && let Some(tx) = lock(&done_tx).take() {
            let _ = tx.send(());
        }
    });
    let _handle = llm::spawn(env, work, 0, Span::none(), out);
    // The job always ends with `Finished`; a dropped sender means it is gone all the same.
    let _ = done.await;
    let seen = std::mem::take(&mut *lock(&seen));
    let end = seen.last().map_or_else(Instant::now, |(t, _)| *t);
    Ran { start, seen, end }
}

/// A job and what the model sent back for each of its requests.
#[derive(Debug)]
pub struct Job {
    pub ran: Ran,
    pub outputs: Vec<Output>,
}

impl Job {
    pub fn run(runtime: &Runtime, env: &JobEnv, proxy: Option<&Proxy>, work: Work) -> Self {
        let ran = runtime.block_on(run(env, work));
        let outputs = proxy.map(Proxy::take).unwrap_or_default();
        Self { ran, outputs }
    }

    /// `said` as the `n`th command.
    pub fn command(
        runtime: &Runtime,
        env: &JobEnv,
        proxy: Option<&Proxy>,
        said: &str,
        n: u64,
    ) -> Self {
        let work =
            Work::Command { text: said.to_owned(), edited: false, episode: Episode::Command(n) };
        Self::run(runtime, env, proxy, work)
    }

    /// Start → the first streamed token of any of its requests.
    fn first_token_ms(&self) -> Option<f64> {
        self.outputs.iter().filter_map(|o| o.first).min().map(|t| ms_between(self.ran.start, t))
    }

    /// Why the job gave no answer, if it gave none.
    pub fn failed(&self) -> Option<String> {
        let error = self.ran.seen.iter().find_map(|(_, s)| match s {
            Seen::Error(e) => Some(e.clone()),
            _ => None,
        });
        match (error, self.ran.reply().is_empty()) {
            (Some(error), _) => Some(error),
            (None, true) => Some("no answer".into()),
            (None, false) => None,
        }
    }

    pub fn timed(&self) -> Timed {
        Timed {
            first_ms: self.first_token_ms(),
            call_ms: self.ran.seen.iter().find_map(|(t, s)| {
                matches!(s, Seen::Call { .. }).then(|| ms_between(self.ran.start, *t))
            }),
            end_ms: self.ran.end_ms(),
            prompt: self.outputs.iter().map(|o| o.prompt_tokens).sum(),
            cached: self.outputs.iter().filter_map(|o| o.timings).map(|t| t.cache_n as u64).sum(),
            generated: self.outputs.iter().map(|o| o.completion_tokens).sum(),
            requests: self.outputs.len(),
            failed: self.failed(),
            called: self.ran.calls().next().is_some(),
            answer: self.ran.reply(),
        }
    }

    pub fn json(&self) -> Value {
        json!({
            "job": self.ran.json(),
            "outputs": self.outputs.iter().map(|o| o.json(self.ran.start)).collect::<Vec<_>>(),
        })
    }
}

/// A timed command.
#[derive(Debug, Clone, Default)]
pub struct Timed {
    pub first_ms: Option<f64>,
    /// Start → the first tool call reported (what a viewer sees first).
    pub call_ms: Option<f64>,
    pub end_ms: f64,
    pub prompt: u64,
    pub cached: u64,
    pub generated: u64,
    pub requests: usize,
    /// Why it gave no answer (an error it reported, or none), if it gave none.
    pub failed: Option<String>,
    /// Whether it called a tool ("What time is it?" should: answered without one, the
    /// time is made up).
    pub called: bool,
    pub answer: String,
}

impl Timed {
    /// Whether it called a tool and answered: a run whose time is a command's.
    pub fn valid(&self) -> bool {
        self.called && self.failed.is_none()
    }
}
