//! One model through the battery: a cold and a warm command, the everyday commands, short
//! facts, summaries and corrections, then the first command after a restart; every output
//! saved as JSON.

use std::path::Path;
use std::time::Instant;

use serde_json::{Value, json};
use tokio::runtime::Runtime;

use stt_assistant::lane::Sink;
use stt_assistant::llm::{self, Chat, JobEnv, Work};
use stt_assistant::memory::{self, Episode};
use stt_assistant::turn::ChatTurn;
use stt_llm::{LlmError, Message, Provider, Request, ToolSpec, Usage};
use stt_memory::Role;
use stt_proto::TaskRequest;

use crate::corrections::{REWRITES, Rewritten};
use crate::everyday::{Around, EVERYDAY, SAID_BEFORE, Scored, score_everyday};
use crate::facts::FACTS;
use crate::job::{Base, Job, Seen, Timed};
use crate::llama::Llama;
use crate::load::{TICKS_PER_S, machine_busy, process_cpu};
use crate::output::{Timings, ms_between};
use crate::proxy::Proxy;
use crate::summaries::{CHATS, SUMMARY_RULES, SummaryScore, repeats, score_summary};
use crate::target::Target;
use crate::text::holds;

/// The command timed cold and warm.
pub const TIMED: &str = "What time is it?";
/// Warm runs of it that called the tool; their median is reported.
const WARM_RUNS: usize = 3;
/// Warm runs at most, to have [`WARM_RUNS`] that called the tool and answered.
const MAX_WARM_RUNS: usize = 6;

/// Who says the user's lines of chat: the daemon's prefix for a speaker it does not know.
const SPEAKER: &str = "Unknown";

/// One request as `up` made a command's before the tools were chosen by its words: the
/// command system prompt, every built-in tool and every one of memory's
/// (`memory::Tool::ASSISTANT`), a question no tool answers, and `max_tokens` 1 (as
/// `command::warm` sends its request): what its prompt costs.
async fn every_tool(env: &JobEnv, client: &Provider) -> Result<Usage, LlmError> {
    let memory = memory::tools::specs(&memory::Tool::ASSISTANT);
    let tools: Vec<ToolSpec> = env
        .tools
        .specs()
        .chain(&memory)
        .map(|spec| ToolSpec {
            name: spec.name.clone(),
            description: spec.description.clone(),
            parameters: spec.parameters.clone(),
        })
        .collect();
    let messages = [
        Message::system(&env.settings.command_system_prompt),
        Message::user("What is the capital of France?"),
    ];
    let request = Request {
        messages: &messages,
        tools: &tools,
        stream: false,
        max_tokens: 1,
        temperature: 0.0,
        resume: None,
        slot: Some(llm::SLOT_COMMAND),
    };
    client.complete(&request, |_| {}).await.map(|reply| reply.usage.unwrap_or_default())
}

/// Everything measured on one model.
#[derive(Debug, Default)]
pub struct Figures {
    pub load_s: Option<f64>,
    pub cold: Option<Timed>,
    pub warm: Vec<Timed>,
    /// After a restart: the warm-up request's time, then the first command.
    pub warm_up_ms: Option<f64>,
    pub after_warm_up: Option<Timed>,
    /// After the next restart: the saved prefix restored (ms), then the first command.
    pub restored: Option<(f64, Timed)>,
    pub everyday: Vec<Scored>,
    pub tool_ends: Vec<f64>,
    /// The prompt tokens of one request with every built-in and memory tool offered.
    pub every_tool_prompt: Option<u64>,
    pub facts: Vec<(bool, String)>,
    pub chat_first: Vec<f64>,
    pub chat_ends: Vec<f64>,
    pub summaries: Vec<SummaryScore>,
    pub summary_ends: Vec<f64>,
    pub rewrites: Vec<Rewritten>,
    pub timings: Vec<Timings>,
    pub rss_kib: Option<u64>,
    /// CPU time other processes took while the battery ran on the first server, in cores.
    pub others_cores: Option<f64>,
    pub wall_s: f64,
}

/// 1. The first command, then the same again.
fn cold_and_warm(
    label: &str,
    runtime: &Runtime,
    env: &JobEnv,
    proxy: Option<&Proxy>,
    local: bool,
    figures: &mut Figures,
    log: &mut Value,
) {
    eprintln!("bench-llm: {label}: cold and warm commands…");
    let cold = Job::command(runtime, env, proxy, TIMED, 1);
    figures.timings.extend(cold.outputs.iter().filter_map(|o| o.timings));
    if local {
        figures.cold = Some(cold.timed());
    }
    let mut warm_log = Vec::new();
    // Runs that made the time up (or gave no answer) do not count towards the three.
    while figures.warm.iter().filter(|t| t.valid()).count() < WARM_RUNS
        && figures.warm.len() < MAX_WARM_RUNS
    {
        let job = Job::command(runtime, env, proxy, TIMED, 1);
        figures.timings.extend(job.outputs.iter().filter_map(|o| o.timings));
        figures.warm.push(job.timed());
        warm_log.push(job.json());
    }
    log["cold"] = cold.json();
    log["warm"] = json!(warm_log);
}

/// Runs the battery on `target`; its outputs go to `saved` as JSON. `everyday_only`: the
/// everyday commands alone.
pub fn bench(
    runtime: &Runtime,
    base: &Base,
    target: &Target,
    dir: &Path,
    saved: &Path,
    everyday_only: bool,
) -> Figures {
    let began = Instant::now();
    let busy_before = machine_busy();
    let own_before = process_cpu("self");
    let label = target.label();
    let mut figures = Figures::default();
    let mut log = json!({"model": label, "target": format!("{target:?}")});
    let (server, url) = match target {
        Target::Gguf { path, .. } => {
            eprintln!("bench-llm: {label}: starting llama-server…");
            let server = Llama::start(path, dir, &label);
            figures.load_s = Some(server.load.as_secs_f64());
            let url = server.url();
            (Some(server), url)
        }
        Target::Url { url, .. } => (None, url.clone()),
    };
    let proxy = url.starts_with("http://").then(|| Proxy::start(&url));
    let lane_url = proxy.as_ref().map_or_else(|| url.clone(), |p| p.url.clone());
    let slots = server.is_some();
    let env = base.env(&lane_url, slots, None);
    let proxy = proxy.as_ref();

    if !everyday_only {
        cold_and_warm(&label, runtime, &env, proxy, server.is_some(), &mut figures, &mut log);
    }

    // 2. Everyday commands, memory on: the tools offered as `up` offers them.
    let memory = memory::spawn(
        memory::Settings::new(dir.join(format!("{label}-everyday.db"))),
        Sink::new(|_| {}),
    )
    .unwrap_or_else(|e| panic!("cannot start memory: {e}"))
    .0;
    for (user, assistant) in SAID_BEFORE {
        memory.turn(Episode::Chat(1), Role::User, Some(SPEAKER), "chat", user);
        memory.turn(Episode::Chat(1), Role::Assistant, None, "chat", assistant);
    }
    let everyday_env = base.env(&lane_url, slots, Some(memory.clone()));
    let client = everyday_env.client.clone().unwrap_or_else(|| panic!("the env has a client"));
    let started = Instant::now();
    let usage = runtime.block_on(every_tool(&everyday_env, &client));
    let outputs = proxy.map(Proxy::take).unwrap_or_default();
    figures.timings.extend(outputs.iter().filter_map(|o| o.timings));
    figures.every_tool_prompt = match (outputs.first(), &usage) {
        (Some(o), _) if o.prompt_tokens > 0 => Some(o.prompt_tokens),
        (_, Ok(usage)) if usage.prompt_tokens > 0 => Some(u64::from(usage.prompt_tokens)),
        _ => None,
    };
    if let Err(e) = &usage {
        eprintln!("bench-llm: {label}: the request with every tool failed: {e}");
    }
    log["every_tool"] = json!({
        "prompt_tokens": figures.every_tool_prompt,
        "outputs": outputs.iter().map(|o| o.json(started)).collect::<Vec<_>>(),
    });
    let tasks = |memory: &memory::Memory| {
        runtime
            .block_on(memory.plans(TaskRequest::List { status: None }))
            .map(|answer| answer.tasks)
            .unwrap_or_default()
    };
    let mut everyday_log = Vec::new();
    for (n, case) in (1..).zip(&EVERYDAY) {
        eprintln!("bench-llm: {label}: command {:?}…", case.said);
        let before = tasks(&memory);
        let now = chrono::Local::now().naive_local();
        let job = Job::command(runtime, &everyday_env, proxy, case.said, n);
        let end = chrono::Local::now().naive_local();
        let after = tasks(&memory);
        figures.timings.extend(job.outputs.iter().filter_map(|o| o.timings));
        let around = Around { now, end, tasks: &before, after: &after };
        let score = score_everyday(case, &job, &base.offered, &around);
        eprintln!("  → {} ({})", score.calls, if score.right { "right" } else { "wrong" });
        figures.tool_ends.push(job.ran.end_ms());
        everyday_log.push(json!({
            "said": case.said, "want": case.want, "right": score.right,
            "at": now.format("%Y-%m-%d %H:%M:%S").to_string(),
            "invented": score.invented, "schema_echoes": score.echoes, "written": score.written,
            "first_prompt_tokens": score.first_prompt, "run": job.json(),
        }));
        figures.everyday.push(score);
    }
    log["everyday"] = json!(everyday_log);
    runtime.block_on(memory.stop());
    if everyday_only {
        let right = figures.everyday.iter().filter(|s| s.right).count();
        eprintln!("bench-llm: {label}: everyday commands right: {right}/{}", EVERYDAY.len());
        save(&log, saved, &label);
        return figures;
    }

    // 3. Short facts.
    let mut facts_log = Vec::new();
    for (question, words) in FACTS {
        let work = Work::Chat {
            turn: ChatTurn::named(SPEAKER, question),
            conversation: Chat::default(),
            resume: None,
            episode: Episode::Chat(1),
        };
        let job = Job::run(runtime, &env, proxy, work);
        figures.timings.extend(job.outputs.iter().filter_map(|o| o.timings));
        let answer = job.ran.reply();
        let right = holds(&answer, words);
        eprintln!("bench-llm: {label}: {question} → {answer:?} ({right})");
        figures.chat_ends.push(job.ran.end_ms());
        figures.chat_first.extend(job.ran.first_piece_ms());
        facts_log.push(json!({"question": question, "right": right, "run": job.json()}));
        figures.facts.push((right, answer));
    }
    log["facts"] = json!(facts_log);

    // 4. Summaries, by the memory tree's own job.
    let mut summaries_log = Vec::new();
    for (n, chat) in CHATS.iter().enumerate() {
        eprintln!("bench-llm: {label}: summary of {}…", chat.topic);
        let db = dir.join(format!("{label}-summary-{n}.db"));
        let settings = memory::Settings {
            hints: false,
            tree: Some(SUMMARY_RULES),
            ..memory::Settings::new(db)
        };
        let (memory, _thread) = memory::spawn(settings, Sink::new(|_| {}))
            .unwrap_or_else(|e| panic!("cannot start memory: {e}"));
        let episode = Episode::Chat(1);
        for (user, assistant) in chat.turns {
            memory.turn(episode, Role::User, Some(SPEAKER), "chat", user);
            memory.turn(episode, Role::Assistant, None, "chat", assistant);
        }
        memory.turn(episode, Role::User, Some(SPEAKER), "chat", chat.next);
        let summary_lane = base.env(&lane_url, slots, Some(memory.clone()));
        let job = Job::run(runtime, &summary_lane, proxy, Work::Tree);
        figures.timings.extend(job.outputs.iter().filter_map(|o| o.timings));
        let nodes = runtime.block_on(async {
            let nodes = memory.tree_context().await.map(|c| c.nodes).unwrap_or_default();
            memory.stop().await;
            nodes
        });
        let stored = nodes.first().map(|node| {
            let f = &node.fields;
            format!(
                "{}\nPROFILE: {}\nPREFERENCES: {}\nGOALS: {}",
                node.summary, f.profile, f.preferences, f.goals
            )
        });
        let failed = match (&stored, nodes.first()) {
            (None, _) => Some("the tree wrote no node".to_owned()),
            (Some(_), Some(node)) if node.summary.starts_with("(not summarized)") => Some(
                job.ran
                    .seen
                    .iter()
                    .find_map(|(_, s)| match s {
                        Seen::Note(note) => Some(note.clone()),
                        _ => None,
                    })
                    .unwrap_or_else(|| "not summarized".into()),
            ),
            _ => None,
        };
        let mut score = score_summary(chat, stored.as_deref(), failed);
        score.repeats = job.outputs.iter().any(|o| repeats(&o.content));
        eprintln!(
            "  → kept {}/{}, changed {:?}, numbers from nowhere {:?}{}",
            score.kept,
            chat.facts.len(),
            score.changed,
            score.invented,
            score.failed.as_deref().map(|f| format!(", failed: {f}")).unwrap_or_default()
        );
        figures.summary_ends.push(job.ran.end_ms());
        summaries_log.push(json!({
            "topic": chat.topic, "kept": score.kept, "of": chat.facts.len(),
            "dropped": score.dropped, "changed": score.changed, "invented_numbers": score.invented,
            "failed": score.failed, "stored": stored, "run": job.json(),
        }));
        figures.summaries.push(score);
    }
    log["summaries"] = json!(summaries_log);

    // 5. Corrections, by the dream's own check.
    let mut rewrites_log = Vec::new();
    let client = env.client.clone().unwrap_or_else(|| panic!("the env has a client"));
    for rewrite in &REWRITES {
        let start = Instant::now();
        let verdict = runtime.block_on(llm::dream::replaces(
            &env,
            &client,
            rewrite.was,
            rewrite.now,
            &Sink::new(|_| {}),
        ));
        let outputs = proxy.map(Proxy::take).unwrap_or_default();
        figures.timings.extend(outputs.iter().filter_map(|o| o.timings));
        let text = outputs.last().map(|o| o.content.trim().to_owned());
        let right = match &text {
            Some(text) if rewrite.corrects => holds(text, rewrite.new) && !holds(text, rewrite.old),
            Some(text) => holds(text, rewrite.old) && !holds(text, rewrite.new),
            None => verdict == rewrite.corrects,
        };
        eprintln!("bench-llm: {label}: {} + {} → {text:?} ({right})", rewrite.was, rewrite.now);
        rewrites_log.push(json!({
            "was": rewrite.was, "now": rewrite.now, "corrects": rewrite.corrects,
            "rewrite": text, "right": right, "dream_supersedes": verdict,
            "outputs": outputs.iter().map(|o| o.json(start)).collect::<Vec<_>>(),
        }));
        figures.rewrites.push(Rewritten { text, right, supersedes: verdict });
    }
    log["corrections"] = json!(rewrites_log);
    figures.rss_kib = server.as_ref().and_then(Llama::peak_rss_kib);
    if let (Some(before), Some(after), Some(own_before), Some(own_after)) =
        (busy_before, machine_busy(), own_before, process_cpu("self"))
    {
        let server = server.as_ref().map_or(Some(0), |s| process_cpu(&s.child.id().to_string()));
        let own = own_after.saturating_sub(own_before) + server.unwrap_or(0);
        let others = after.saturating_sub(before).saturating_sub(own) as f64 / TICKS_PER_S;
        figures.others_cores = Some(others / began.elapsed().as_secs_f64());
    }
    drop(server);

    // 1, again: the first command after a restart and the assistant's warm-up request, as
    // `up` has them: the prefix read and saved (the first start), then restored (the next).
    if let Target::Gguf { path, .. } = target {
        let mut runs = Vec::new();
        for (n, how) in ["read", "restored"].into_iter().enumerate() {
            eprintln!("bench-llm: {label}: restart, warm-up ({how}), first command…");
            let server = Llama::start(path, dir, &format!("{label}-again-{n}"));
            let proxy = Proxy::start(&server.url());
            let env = base.env(&proxy.url, true, None);
            let client = env.client.clone().unwrap_or_else(|| panic!("the env has a client"));
            let started = Instant::now();
            let slots = Llama::slots(dir);
            let warmed = runtime.block_on(llm::command::warm_saved(&env, &client, Some(&slots)));
            let warm_ms = ms_between(started, Instant::now());
            let restored = matches!(warmed, Ok(llm::command::Warmed::Restored { .. }));
            if let Err(e) = &warmed {
                eprintln!("bench-llm: {label}: the warm-up request failed: {e}");
            }
            let warm_up: Vec<Value> = proxy.take().iter().map(|o| o.json(started)).collect();
            let job = Job::command(runtime, &env, Some(&proxy), TIMED, 1);
            runs.push(json!({"warm_up": warm_up, "warmed": format!("{warmed:?}"),
                "first_command": job.json()}));
            if restored {
                figures.restored = Some((warm_ms, job.timed()));
            } else {
                figures.warm_up_ms = Some(warm_ms);
                figures.after_warm_up = Some(job.timed());
            }
        }
        log["after_warm_up"] = json!(runs);
    }
    figures.wall_s = began.elapsed().as_secs_f64();
    save(&log, saved, &label);
    figures
}

/// Writes a model's outputs to `saved/<label>.json`.
fn save(log: &Value, saved: &Path, label: &str) {
    let file = saved.join(format!("{label}.json"));
    let text = serde_json::to_string_pretty(log).unwrap_or_default();
    match std::fs::create_dir_all(saved).and_then(|()| std::fs::write(&file, text)) {
        Ok(()) => eprintln!("bench-llm: {label}: outputs in {}", file.display()),
        Err(e) => eprintln!("bench-llm: cannot write {}: {e}", file.display()),
    }
}
