//! The memory tree over a long chat, against the scripted model: 10,000 turns (20,000
//! messages) through the assistant's LLM and memory lanes, each chat request measured, each
//! summary the tree asks for written by the scripted model (a fixed-size summary naming what
//! it covers). It checks, at every turn, that the request stays within the prompt budget and
//! that the tree holds the 60/40/20 and 8 → 4 rules exactly, and reports the prompt's size
//! against the turn number next to what the whole conversation would take without the tree.
//!
//! The tree's own cost per turn (excluding the model) is timed separately on the store alone,
//! as the memory thread runs it: two messages pushed, the context read, the next job looked
//! up, and the summaries written when due.
//!
//! With `--real URL` (an OpenAI-compatible chat completions endpoint, e.g. llama-server on
//! the installed small model) it measures something else: a fact told at turn 5 of a 200-turn
//! chat (small talk otherwise), asked for at turn 200, over 5 runs with different facts; the
//! answer can come only through the tree (memory's hints are off): its summaries, or the
//! fact's message brought back word for word for the question. The report says which. A
//! figure, not a gate.
//!
//! Usage: `scripts/bench-tree [--turns N] [--write] [--real URL [--runs N] [--from N]]` (`--write` puts
//! the figures into docs/PERFORMANCE.md).

#![allow(clippy::print_stderr, clippy::unwrap_used, clippy::expect_used, reason = "a benchmark")]

use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use stt_assistant::lane::Sink;
use stt_assistant::llm::{self, Chat, End, JobEnv, Report, Settings, Work, estimate_tokens};
use stt_assistant::memory::{self, Episode, Memory};
use stt_assistant::turn::ChatTurn;
use stt_llm::{Endpoint, Provider};
use stt_memory::tree::{Fields, TreeJob, TreeRules, TreeStats};
use stt_memory::{Role, Store};
use stt_testkit::llm_server::{LlmServer, Script};
use stt_testkit::perf;

const SYSTEM: &str = "You are a helpful voice assistant.";
/// `[llm].max_context_tokens` 4096 less `max_tokens` 512 and the margin: the default's.
const BUDGET: u32 = 3_328;
const START: &str = "<!-- bench-tree:start -->";
const END: &str = "<!-- bench-tree:end -->";
const REAL_START: &str = "<!-- bench-tree-real:start -->";
const REAL_END: &str = "<!-- bench-tree-real:end -->";

fn said(turn: usize) -> String {
    format!("Turn {turn}: could you remind me what we planned for the garden and the shed?")
}

fn answer(turn: usize) -> String {
    format!(
        "Answer {turn}: we planned to plant tomatoes by the fence, paint the shed green and \
         fix the gate before the weekend."
    )
}

/// What the scripted model answers: a summary in the form asked when the tree asks, else a
/// chat answer; every request's size goes to `sizes`.
fn respond(request: &Value, sizes: &Mutex<Vec<usize>>) -> Script {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let tokens: usize =
        messages.iter().map(|m| estimate_tokens(m["content"].as_str().unwrap_or(""))).sum();
    let last = messages.last().and_then(|m| m["content"].as_str()).unwrap_or("");
    if last.starts_with("[Memory upkeep") {
        return Script::Text(
            "SUMMARY: The user and the assistant went over the garden plan again: tomatoes \
             by the fence, the shed painted green, the gate fixed before the weekend.\n\
             PROFILE: Has a garden with a shed.\nPREFERENCES: Green for the shed.\n\
             GOALS: Finish the garden before the weekend."
                .into(),
        );
    }
    sizes.lock().unwrap().push(tokens);
    let turn = last.split_once("Turn ").and_then(|(_, r)| r.split_once(':')).map_or("0", |t| t.0);
    Script::Text(answer(turn.parse().unwrap_or(0)))
}

/// A lane on the model at `url` (chat completions), answering in at most `max_tokens`.
fn env(url: String, max_tokens: u32, memory: Memory) -> JobEnv {
    let client = Provider::new(Endpoint {
        url,
        model: String::new(),
        api_key: None,
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(300),
        slots: false,
    })
    .unwrap();
    let settings = Settings {
        command_system_prompt: "You run commands.".into(),
        chat_system_prompt: SYSTEM.into(),
        max_tool_iterations: 4,
        confirmation_timeout: Duration::from_secs(1),
        max_tokens,
        command_answer_max_tokens: max_tokens,
        temperature: 0.0,
        stream: false,
        prompt_budget: BUDGET,
        compaction_trigger_ratio: 0.8,
        compaction_keep_turns: 4,
        compaction_max_tokens: 300,
        compaction_system_prompt: "Summarize.".into(),
        trim_block_turns: 2,
        proactive: true,
    };
    JobEnv {
        client: Some(client),
        fallback: None,
        missing: String::new(),
        providers: None,
        tools: Arc::new(stt_tools::Registry::new(&[]).unwrap()),
        settings: Arc::new(settings),
        memory: Some(memory),
        chat_system: None,
    }
}

/// One chat turn as the assistant's loop runs it: the user's words into memory, the chat job,
/// its answer into memory, then the tree's summaries until none is due. Returns the answer
/// and how many summaries were written.
/// One chat turn and the summaries it made due: the answer, what memory reminded the model
/// of (its notes), and how many summaries were written.
async fn chat_turn(env: &JobEnv, memory: &Memory, text: &str) -> (String, Vec<String>, usize) {
    memory.turn(Episode::Chat(1), Role::User, Some("Typed"), "chat", text);
    let work = Work::Chat {
        turn: ChatTurn::typed(text),
        conversation: Chat::default(),
        resume: None,
        episode: Episode::Chat(1),
    };
    let reports = llm::run_to_end(env, work).await;
    assert!(matches!(reports.last(), Some(Report::Finished(End::Done))), "{reports:?}");
    let answer = reports
        .iter()
        .find_map(|r| match r {
            Report::Reply { text, partial: false, .. } => Some(text.clone()),
            _ => None,
        })
        .unwrap_or_default();
    let hinted = reports
        .iter()
        .filter_map(|r| if let Report::Hinted(notes) = r { Some(notes.clone()) } else { None })
        .flatten()
        .collect();
    memory.turn(Episode::Chat(1), Role::Assistant, None, "chat", &answer);
    let mut summaries = 0;
    loop {
        let reports = llm::run_to_end(env, Work::Tree).await;
        if !reports.iter().any(|r| matches!(r, Report::TreeMore(true))) {
            return (answer, hinted, summaries);
        }
        summaries += 1;
    }
}

/// The counts the rules give for `messages` messages, each job done as soon as it is due.
fn expected(messages: i64, rules: &TreeRules) -> TreeStats {
    let (raw, compress) = (rules.raw_max as i64, rules.compress as i64);
    let (fanout, merge) = (rules.fanout_max as i64, rules.merge() as i64);
    let made =
        |below: i64, at: i64, take: i64| if below < at { 0 } else { 1 + (below - at) / take };
    let mut nodes = vec![made(messages, raw, compress)];
    while let Some(&below) = nodes.last().filter(|&&n| n >= fanout) {
        nodes.push(made(below, fanout, merge));
    }
    let unmerged =
        nodes.iter().enumerate().map(|(i, n)| n - merge * nodes.get(i + 1).unwrap_or(&0)).collect();
    TreeStats { messages, buffered: messages - compress * nodes[0], nodes, unmerged }
}

struct Args {
    turns: usize,
    write: bool,
    /// `--real URL`: the fact-recall runs on the model there instead.
    real: Option<String>,
    runs: usize,
    /// `--from N`: the first fact's number (1-based), to go on from runs done before.
    from: usize,
}

fn args() -> Result<Args, String> {
    let mut args = Args { turns: 10_000, write: false, real: None, runs: 5, from: 1 };
    let mut turns = None;
    let mut it = std::env::args().skip(1).filter(|a| a != "--bench");
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--write" => args.write = true,
            "--turns" => {
                turns = Some(it.next().and_then(|n| n.parse().ok()).ok_or("--turns takes N")?);
            }
            "--real" => args.real = Some(it.next().ok_or("--real takes the model's URL")?),
            "--runs" => {
                args.runs = it.next().and_then(|n| n.parse().ok()).ok_or("--runs takes N")?;
            }
            "--from" => {
                args.from = it
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|n| (1..=FACTS.len()).contains(n))
                    .ok_or("--from takes the first fact's number, 1 to 5")?;
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    args.turns = turns.unwrap_or(if args.real.is_some() { 200 } else { 10_000 });
    Ok(args)
}

/// Facts told at turn 5 and asked for at the last turn, with the word the answer must have.
const FACTS: [(&str, &str, &str); 5] = [
    ("My locker code is 4417.", "What is my locker code?", "4417"),
    ("My sister's name is Ines.", "What is my sister's name?", "ines"),
    ("I parked the car on level 3, in spot B12.", "In which spot did I park the car?", "b12"),
    ("My flight to Oslo leaves at 7:45.", "When does my flight to Oslo leave?", "7:45"),
    ("The wifi password is bluefalcon.", "What is the wifi password?", "bluefalcon"),
];

/// What the user says on the other turns.
const SMALL_TALK: [&str; 12] = [
    "Give me a name for a grey cat.",
    "What is a quick lunch idea?",
    "Tell me one fact about the moon.",
    "Suggest a short walk for a rainy day.",
    "What rhymes with garden?",
    "Name a good board game for two.",
    "How long should I boil an egg?",
    "Give me a word that means happy.",
    "What is a nice colour for a kitchen?",
    "Suggest a song to wake up to.",
    "What can I plant in autumn?",
    "Name a quiet hobby.",
];

/// The fact-recall runs on a real model: a fresh memory each run, `turns` chat turns with
/// the fact at turn 5 and the question last, every summary the tree asks for written by the
/// model. Returns the report.
fn real(runtime: &tokio::runtime::Runtime, url: &str, args: &Args, dir: &Path) -> String {
    let runs = args.runs.min(FACTS.len() + 1 - args.from);
    let mut report = format!(
        "{runs} runs of {} chat turns each on the model at {url} (replies of at most 64 tokens, \
         greedy), the default tree (60/40, 8 → 4); a fact told at turn 5, asked for at turn \
         {}; memory's hints off, so the answer comes from the tree alone: its summaries and \
         buffer, or its messages brought back word for word.\n\n| fact | asked | answer | \
         the fact's word in a summary or the buffer | brought back | summaries written | \
         time |\n|---|---|---|---|---|---:|---:|\n",
        args.turns, args.turns
    );
    let mut right = 0;
    for (n, (fact, question, key)) in FACTS.iter().enumerate().skip(args.from - 1).take(runs) {
        let started = Instant::now();
        let db = dir.join(format!("real-{n}.db"));
        let settings = memory::Settings { hints: false, ..memory::Settings::new(db) };
        let memory = memory::spawn(settings, Sink::new(|_| {})).unwrap().0;
        let env = env(url.to_owned(), 64, memory.clone());
        let (answer, in_context, recalled, summaries) = runtime.block_on(async {
            let mut summaries = 0;
            let mut recalled = false;
            let mut answer = String::new();
            let mut in_context = false;
            for turn in 1..=args.turns {
                let text = match turn {
                    5 => (*fact).to_owned(),
                    t if t == args.turns => (*question).to_owned(),
                    t => SMALL_TALK[t % SMALL_TALK.len()].to_owned(),
                };
                if turn == args.turns {
                    let context = memory.tree_context().await.unwrap();
                    let summaries: String =
                        context.nodes.iter().map(|n| n.summary.to_lowercase()).collect();
                    let buffer: String =
                        context.buffer.iter().map(|m| m.text.to_lowercase()).collect();
                    in_context = summaries.contains(key) || buffer.contains(key);
                }
                let (said, hinted, written) = chat_turn(&env, &memory, &text).await;
                recalled = hinted.iter().any(|h| h.to_lowercase().contains(key));
                answer = said;
                summaries += written;
            }
            memory.stop().await;
            (answer, in_context, recalled, summaries)
        });
        let ok = answer.to_lowercase().contains(key);
        right += usize::from(ok);
        eprintln!(
            "run {}: {question} → {answer:?} ({})",
            n + 1,
            if ok { "right" } else { "wrong" }
        );
        report.push_str(&format!(
            "| {fact} | {question} | {} {} | {} | {} | {summaries} | {:.0} s |
",
            if ok { "right:" } else { "wrong:" },
            answer.replace('|', "/").replace('\n', " "),
            if in_context { "yes" } else { "no" },
            if recalled { "yes" } else { "no" },
            started.elapsed().as_secs_f64()
        ));
    }
    report.push_str(&format!(
        "
Answered right: {right} of {runs}.
"
    ));
    report
}

/// The file name of the model an OpenAI-compatible server at `url` serves (its
/// `GET /v1/models`, plain HTTP); `None` when it does not say.
fn served_model(url: &str) -> Option<String> {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://")?;
    let (host, _) = rest.split_once('/')?;
    let mut stream = std::net::TcpStream::connect(host).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET /v1/models HTTP/1.0\r\nHost: {host}\r\n\r\n").ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let (_, body) = answer.split_once("\r\n\r\n")?;
    let models: Value = serde_json::from_str(body).ok()?;
    let id = models["data"][0]["id"].as_str()?;
    Some(id.rsplit('/').next().unwrap_or(id).to_owned())
}

fn main() -> ExitCode {
    let args = match args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!(
                "{e}\nusage: scripts/bench-tree [--turns N] [--write] [--real URL [--runs N] [--from N]]"
            );
            return ExitCode::from(2);
        }
    };
    let rules = memory::tree_rules(&stt_config::MemoryConfig::default()).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    if let Some(url) = &args.real {
        let report = real(&runtime, url, &args, dir.path());
        eprintln!("{report}");
        if args.write {
            let section = format!(
                "{REAL_START}\n## A fact told early in a long chat, on a real model \
                 (`scripts/bench-tree --real`)\n\nMeasured {} on {}, with `scripts/bench-tree \
                 --real {url} --write` against llama-server serving {} (the arguments \
                 `stt-daemon up` gives it).\n\n{report}{REAL_END}\n",
                perf::today(),
                perf::machine(),
                served_model(url).unwrap_or_else(|| "the model at that URL".into())
            );
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/PERFORMANCE.md");
            perf::write_section(&path, REAL_START, REAL_END, &section).unwrap();
        }
        return ExitCode::SUCCESS;
    }

    // 1. Through the lanes, against the scripted model.
    let sizes: Arc<Mutex<Vec<usize>>> = Arc::default();
    let server = LlmServer::start();
    let seen = Arc::clone(&sizes);
    server.respond_with(move |request| respond(request, &seen));
    let settings =
        memory::Settings { tree: Some(rules), ..memory::Settings::new(dir.path().join("env.db")) };
    let memory = memory::spawn(settings, Sink::new(|_| {})).unwrap().0;
    let env = env(server.url(), 512, memory.clone());
    let started = Instant::now();
    let mut samples = Vec::new();
    // What the request would be without the tree (or any compaction): the first one, which
    // has the system prompt and what memory adds, and every message since.
    let mut without = 0;
    let mut summaries = 0;
    let mut broken = Vec::new();
    runtime.block_on(async {
        for turn in 1..=args.turns {
            let text = said(turn);
            summaries += chat_turn(&env, &memory, &text).await.2;
            let sent = *sizes.lock().unwrap().last().unwrap();
            if turn == 1 {
                without = sent;
            } else {
                without += estimate_tokens(&format!("Typed: {text}"));
            }
            if sent > BUDGET as usize {
                broken.push(format!("turn {turn}: {sent} tokens sent, over {BUDGET}"));
            }
            if turn == 1 || turn % (args.turns / 10).max(1) == 0 || [60, 120, 500].contains(&turn) {
                let nodes = memory.tree_show(None).await.unwrap().nodes;
                samples.push((turn, without, sent, nodes.len()));
            }
            without += estimate_tokens(&answer(turn));
        }
    });
    let lanes_s = started.elapsed().as_secs_f64();
    let sizes = sizes.lock().unwrap().clone();
    let max_sent = sizes.iter().copied().max().unwrap_or(0);
    let store = Store::open(&dir.path().join("env.db")).unwrap();
    let stats = store.tree_stats().unwrap();
    let want = expected(2 * args.turns as i64, &rules);
    if stats != want {
        broken.push(format!("the tree holds {stats:?}, the rules give {want:?}"));
    }
    drop(store);
    runtime.block_on(memory.stop());

    // 2. The tree's own cost per turn, on the store alone.
    let mut store = Store::open(&dir.path().join("alone.db")).unwrap();
    let mut per_turn = Vec::with_capacity(args.turns);
    let fields =
        Fields { goals: "Finish the garden before the weekend.".into(), ..Fields::default() };
    // Turns over 2 ms, and how many of them wrote a summary.
    let (mut slow, mut slow_writing) = (0, 0);
    for turn in 1..=args.turns {
        let t = Instant::now();
        let mut wrote = false;
        store.tree_push(Role::User, Some("Typed"), &said(turn)).unwrap();
        store.tree_context().unwrap();
        store.tree_push(Role::Assistant, None, &answer(turn)).unwrap();
        while let Some(job) = store.tree_due(&rules).unwrap() {
            wrote = true;
            let summary = "The garden plan again: tomatoes, the shed green, the gate fixed.";
            match job {
                TreeJob::Compress(m) => {
                    store.tree_compress(m[0].seq, m[m.len() - 1].seq, summary, &fields).unwrap();
                }
                TreeJob::Merge { nodes, .. } => {
                    let ids: Vec<_> = nodes.iter().map(|n| n.id).collect();
                    store.tree_merge(&ids, summary, &fields).unwrap();
                }
            }
        }
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        if ms > 2.0 {
            slow += 1;
            slow_writing += usize::from(wrote);
        }
        per_turn.push(ms);
    }
    let mean = per_turn.iter().sum::<f64>() / per_turn.len().max(1) as f64;
    per_turn.sort_by(f64::total_cmp);
    let pct = |p: f64| per_turn[((per_turn.len() as f64 - 1.0) * p).round() as usize];

    let mut report = format!(
        "{} chat turns ({} messages) through the assistant's LLM and memory lanes against the \
         scripted model, in {lanes_s:.0} s; {summaries} summaries written (compressions and \
         merges). Prompt budget {BUDGET} tokens (the default config's); largest request sent \
         {max_sent} tokens; {}.\n\n\
         | turn | whole conversation, no tree (tokens) | request sent with the tree (tokens) | \
         summaries in the context |\n|---:|---:|---:|---:|\n",
        args.turns,
        2 * args.turns,
        if broken.is_empty() {
            "every request within the budget, and the node counts per level as the 60/40/20 \
             and 8 → 4 rules give, exactly"
                .to_owned()
        } else {
            format!("BROKEN: {}", broken.join("; "))
        }
    );
    for (turn, without, sent, nodes) in &samples {
        report.push_str(&format!("| {turn} | {without} | {sent} | {nodes} |\n"));
    }
    report.push_str(&format!(
        "\nNodes per level at the end: {:?} ({:?} still in the context); {} messages in the \
         buffer.\n\nThe tree's own cost per turn (the store alone: two messages pushed, the \
         context read, the next job looked up, summaries written when due; no model): mean \
         {mean:.3} ms, p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms; {slow} of {} turns over 2 ms \
         ({slow_writing} of them turns that wrote a summary).\n",
        stats.nodes,
        stats.unmerged,
        stats.buffered,
        pct(0.5),
        pct(0.99),
        pct(1.0),
        args.turns
    ));
    eprintln!("{report}");
    if args.write {
        let section = format!(
            "{START}\n## The memory tree over a long chat (`scripts/bench-tree`)\n\nMeasured {} \
             on {}, with `scripts/bench-tree --write`.\n\n{report}{END}\n",
            perf::today(),
            perf::machine()
        );
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/PERFORMANCE.md");
        perf::write_section(&path, START, END, &section).unwrap();
    }
    if broken.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
