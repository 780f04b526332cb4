//! The memory benchmark: LoCoMo conversations into the store, every question asked, and how
//! many of the turns that hold each answer come back in the top k.
//!
//! Run it with `scripts/bench-memory [--k K] [--write] FILE...` (the LoCoMo files are test
//! data outside the repository; see `../shared/data/locomo/README.md`). By hand:
//!
//! ```text
//! cargo bench -p stt-tests --bench memory -- --k 10 ../shared/data/locomo/conv-*.json
//! ```
//!
//! What it does, per file:
//! 1. A fresh store in a temporary directory. Each session's turns go into the conversation
//!    log as entries (speaker, text, the caption of a shared photo appended as
//!    `[shares a photo: …]`, the session's date as the time, one second apart), each with its
//!    `dia_id` as its source reference. Then every entry is embedded (all-MiniLM-L6-v2, the
//!    model memory uses) as the assistant's embedding lane would. Without `--dream` nothing
//!    else is built: no LLM is involved. With `--dream`, the assistant's own memory and LLM
//!    lanes then dream over the conversation's sessions with the provider the stt config
//!    chooses (as the assistant would: the configured one, else the first live), until none
//!    is pending; the items they write are recalled with the log, each standing for the
//!    turns in its provenance. With `--tree`, the conversation also goes, as one chat, into
//!    a memory tree in a store of its own, each summary written by that provider as it falls
//!    due; each question's nearest node by meaning (all levels) is judged by whether its span
//!    covers the evidence turns and whether its summary has every word of the answer.
//! 2. The same conversation is ingested a second time; the log must not grow.
//! 3. Every question of categories 1–4 (5 is adversarial: its answer is not in the
//!    conversation) is embedded and recalled through the store's one scorer, three ways:
//!    fused (what memory uses), BM25 only, embedding only. One JSON line per question of the
//!    fused run goes to stdout: `{"conv","question","category","retrieved"}`, the source
//!    references best first.
//!
//! The evidence of a few questions is malformed in the data; it is normalised as follows:
//! ids are read with `D<session>:<turn>` wherever they appear in each string (so
//! `"D8:6; D9:17"` gives two), leading zeros are dropped (`D30:05` → `D30:5`), and an id that
//! names no turn of the conversation (past a session's end) is dropped. A question left
//! without evidence is skipped. The counts are printed.
//!
//! Then the scale run: a store of `--items` generated items (default 100,000: text drawn
//! from the conversations' words, random unit vectors) and the questions recalled against
//! it, timed (the query's embedding timed apart).
//!
//! The summary goes to stderr; with `--write` it also rewrites this benchmark's section of
//! docs/PERFORMANCE.md.
//!
//! Knobs: `STT_BENCH_WEIGHTS=keyword,meaning,spread,context` runs the fused scorer with other
//! weights; `STT_BENCH_PARTS=1` also times words-only and meaning-only recall at scale (one
//! line each per question on stderr).

#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use serde_json::{Value, json};
use stt_embed::Embedder;
use stt_memory::{NewItem, Query, Role, SessionKind, Store, Target, Turn, Weights};
use stt_testkit::perf::{self, Stats};

struct Args {
    k: usize,
    items: usize,
    write: bool,
    dream: bool,
    tree: bool,
    files: Vec<PathBuf>,
}

fn args() -> Result<Args, String> {
    let mut out =
        Args { k: 10, items: 100_000, write: false, dream: false, tree: false, files: Vec::new() };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--bench" => {}
            "--k" => out.k = it.next().and_then(|v| v.parse().ok()).ok_or("--k needs a number")?,
            "--items" => {
                out.items =
                    it.next().and_then(|v| v.parse().ok()).ok_or("--items needs a number")?;
            }
            "--write" => out.write = true,
            "--dream" => out.dream = true,
            "--tree" => out.tree = true,
            "-h" | "--help" => {
                return Err("usage: bench-memory [--k K] [--items N] [--write] [--dream] \
                            [--tree] FILE..."
                    .into());
            }
            flag if flag.starts_with("--") => return Err(format!("unknown option '{flag}'")),
            file => out.files.push(PathBuf::from(file)),
        }
    }
    if out.files.is_empty() {
        return Err(
            "give the LoCoMo conversation files (e.g. ../shared/data/locomo/conv-*.json)".into()
        );
    }
    Ok(out)
}

/// "1:56 pm on 8 May, 2023" → Unix seconds.
fn locomo_time(text: &str) -> Option<f64> {
    let at = chrono::NaiveDateTime::parse_from_str(text.trim(), "%I:%M %p on %d %B, %Y").ok()?;
    Some(at.and_utc().timestamp() as f64)
}

struct TurnData {
    speaker: String,
    text: String,
    dia_id: String,
    at: f64,
    session: u32,
}

struct Question {
    text: String,
    category: u64,
    evidence: Vec<String>,
    /// The answer as the data gives it (for `--tree`: whether a summary kept it).
    answer: String,
}

struct Conversation {
    id: String,
    turns: Vec<TurnData>,
    questions: Vec<Question>,
    dropped_ids: usize,
    skipped_questions: usize,
}

fn normalise_ids(raw: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = raw.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'D' {
            let rest = &raw[i + 1..];
            let session: String = rest.chars().take_while(char::is_ascii_digit).collect();
            let after = &rest[session.len()..];
            if !session.is_empty() && after.starts_with(':') {
                let turn: String = after[1..].chars().take_while(char::is_ascii_digit).collect();
                if let (Ok(s), Ok(t)) = (session.parse::<u32>(), turn.parse::<u32>()) {
                    out.push(format!("D{s}:{t}"));
                    i += 1 + session.len() + 1 + turn.len();
                    continue;
                }
            }
        }
        i += 1;
    }
    out
}

fn load(path: &Path) -> Conversation {
    let data: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let id: String =
        path.file_stem().unwrap().to_string_lossy().chars().filter(char::is_ascii_digit).collect();
    let conv = data.get("conversation").unwrap_or(&data);
    let mut turns = Vec::new();
    for k in 1.. {
        let Some(session) = conv.get(format!("session_{k}")).and_then(Value::as_array) else {
            if conv.get(format!("session_{k}_date_time")).is_some() {
                continue;
            }
            break;
        };
        let date = conv[format!("session_{k}_date_time")].as_str().unwrap_or("");
        let start = locomo_time(date).unwrap_or_else(|| panic!("unreadable date '{date}'"));
        for (n, turn) in session.iter().enumerate() {
            let mut text = turn["text"].as_str().unwrap_or("").to_owned();
            if let Some(caption) = turn.get("blip_caption").and_then(Value::as_str) {
                text.push_str(&format!(" [shares a photo: {caption}]"));
            }
            turns.push(TurnData {
                speaker: turn["speaker"].as_str().unwrap_or("").to_owned(),
                text,
                dia_id: turn["dia_id"].as_str().unwrap_or("").to_owned(),
                at: start + n as f64,
                session: k,
            });
        }
    }
    let known: HashSet<&str> = turns.iter().map(|t| t.dia_id.as_str()).collect();
    let (mut dropped_ids, mut skipped_questions) = (0, 0);
    let mut questions = Vec::new();
    for qa in data["qa"].as_array().unwrap() {
        let category = qa["category"].as_u64().unwrap_or(0);
        if !(1..=4).contains(&category) {
            continue;
        }
        let mut evidence = Vec::new();
        for raw in qa["evidence"].as_array().into_iter().flatten().filter_map(Value::as_str) {
            for id in normalise_ids(raw) {
                if known.contains(id.as_str()) {
                    if !evidence.contains(&id) {
                        evidence.push(id);
                    }
                } else {
                    dropped_ids += 1;
                }
            }
        }
        if evidence.is_empty() {
            skipped_questions += 1;
            continue;
        }
        questions.push(Question {
            text: qa["question"].as_str().unwrap_or("").to_owned(),
            category,
            evidence,
            answer: match &qa["answer"] {
                Value::String(a) => a.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            },
        });
    }
    Conversation { id, turns, questions, dropped_ids, skipped_questions }
}

/// Puts a conversation into the store, embeds what is new; returns the ms spent.
fn ingest(store: &mut Store, embedder: &mut Embedder, conv: &Conversation) -> f64 {
    let started = Instant::now();
    let mut current = None;
    for turn in &conv.turns {
        let session = match current {
            Some((k, id)) if k == turn.session => id,
            _ => {
                if let Some((_, id)) = current {
                    store.close_session(id).unwrap();
                }
                let label = format!("LoCoMo {} session {}", conv.id, turn.session);
                let id =
                    store.open_session(SessionKind::Imported, Some(&label), Some(turn.at)).unwrap();
                current = Some((turn.session, id));
                id
            }
        };
        let entry = Turn {
            speaker: Some(&turn.speaker),
            source: Some(&turn.dia_id),
            at: Some(turn.at),
            ..Turn::new(Role::User, &turn.text)
        };
        store.append(session, &entry).unwrap();
    }
    if let Some((_, id)) = current {
        store.close_session(id).unwrap();
    }
    loop {
        let missing = store.missing_vectors(64).unwrap();
        if missing.is_empty() {
            break;
        }
        let texts: Vec<&str> = missing.iter().map(|(_, t)| t.as_str()).collect();
        let vectors = embedder.embed(&texts).unwrap();
        let batch: Vec<(Target, Vec<f32>)> = missing.iter().map(|(t, _)| *t).zip(vectors).collect();
        store.put_vectors(&batch).unwrap();
    }
    started.elapsed().as_secs_f64() * 1000.0
}

/// The source references of ranked hits, best first, each once, at most `k`.
fn references(hits: &[stt_memory::Hit], k: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for hit in hits {
        for source in &hit.sources {
            if !out.contains(source) {
                out.push(source.clone());
            }
        }
    }
    out.truncate(k);
    out
}

#[derive(Default, Clone)]
struct Score {
    all: BTreeMap<u64, (usize, usize)>,
    any: BTreeMap<u64, (usize, usize)>,
}

impl Score {
    fn add(&mut self, category: u64, evidence: &[String], retrieved: &[String]) {
        let all = evidence.iter().all(|e| retrieved.contains(e));
        let any = evidence.iter().any(|e| retrieved.contains(e));
        for (map, hit) in [(&mut self.all, all), (&mut self.any, any)] {
            let slot = map.entry(category).or_default();
            slot.0 += usize::from(hit);
            slot.1 += 1;
        }
    }

    fn total(map: &BTreeMap<u64, (usize, usize)>) -> f64 {
        let (hit, n) = map.values().fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        100.0 * hit as f64 / n.max(1) as f64
    }

    fn per_category(map: &BTreeMap<u64, (usize, usize)>) -> String {
        map.iter()
            .map(|(c, (h, n))| format!("{c}: {:.1}%", 100.0 * *h as f64 / (*n).max(1) as f64))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A scorer's name and its weights.
type Mode = (&'static str, fn() -> Weights);

const MODES: [Mode; 3] = [
    ("fused (memory's scorer)", fused),
    ("BM25 only", bm25_baseline),
    ("embedding only", Weights::meaning_only),
];

/// Memory's weights, or `STT_BENCH_WEIGHTS=keyword,meaning,spread,context` to try others.
fn fused() -> Weights {
    let Ok(knob) = std::env::var("STT_BENCH_WEIGHTS") else { return Weights::default() };
    let v: Vec<f32> = knob.split(',').map(|x| x.trim().parse().unwrap()).collect();
    Weights { keyword: v[0], meaning: v[1], spread: v[2], context: v[3] }
}

/// Plain BM25 over each turn with its neighbours and date, all one document: the baseline the
/// issue names.
fn bm25_baseline() -> Weights {
    Weights { context: 1.0, ..Weights::keyword_only() }
}

fn scale(
    embedder: &mut Embedder,
    convs: &[Conversation],
    n: usize,
    dir: &Path,
) -> Option<(Stats, Stats, f64)> {
    if n == 0 {
        return None;
    }
    let mut vocabulary: Vec<String> = convs
        .iter()
        .flat_map(|c| c.turns.iter())
        .flat_map(|t| stt_memory::text::words(&t.text).collect::<Vec<_>>())
        .collect();
    vocabulary.sort();
    vocabulary.dedup();
    let mut store = Store::open(&dir.join("scale.db")).unwrap();
    store.use_embeddings(embedder.model_id(), stt_embed::DIM).unwrap();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let started = Instant::now();
    let mut batch = Vec::new();
    for k in 0..n {
        let len = 8 + (next() % 13) as usize;
        let body: Vec<&str> = (0..len)
            .map(|_| vocabulary[(next() % vocabulary.len() as u64) as usize].as_str())
            .collect();
        let id =
            store.remember(NewItem::fact(format!("generated {k}"), body.join(" "))).unwrap().id();
        let mut v: Vec<f32> =
            (0..stt_embed::DIM).map(|_| (next() % 2001) as f32 / 1000.0 - 1.0).collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= norm);
        batch.push((Target::Item(id), v));
        if batch.len() == 1000 {
            store.put_vectors(&batch).unwrap();
            batch.clear();
        }
    }
    store.put_vectors(&batch).unwrap();
    let fill_s = started.elapsed().as_secs_f64();
    let (mut recall, mut embed) = (Vec::new(), Vec::new());
    for q in convs.iter().flat_map(|c| c.questions.iter()).take(300) {
        let t = Instant::now();
        let v = embedder.embed(&[q.text.as_str()]).unwrap().remove(0);
        embed.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        let hits = store.recall(&Query { vector: Some(&v), ..Query::new(&q.text) }).unwrap();
        recall.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(!hits.is_empty());
        if std::env::var_os("STT_BENCH_PARTS").is_some() {
            for (name, w) in
                [("keyword", Weights::keyword_only()), ("meaning", Weights::meaning_only())]
            {
                let t = Instant::now();
                store
                    .recall(&Query { vector: Some(&v), weights: w, ..Query::new(&q.text) })
                    .unwrap();
                eprintln!("{name} {:.2}", t.elapsed().as_secs_f64() * 1000.0);
            }
        }
    }
    Some((Stats::of(recall), Stats::of(embed), fill_s))
}

/// `--dream`: the assistant's memory and LLM lanes, on the provider the config chooses.
struct Dreamer {
    rt: tokio::runtime::Runtime,
    env: stt_assistant::llm::JobEnv,
    name: String,
    model: String,
}

/// What dreaming over one conversation did.
struct Dreamt {
    sessions: usize,
    items: i64,
    requests: usize,
    secs: f64,
}

impl Dreamer {
    fn new() -> Result<Self, String> {
        use stt_llm::registry::Registry;
        let config = stt_config::Config::load(None).map_err(|e| e.to_string())?;
        let settings =
            stt_assistant::Settings::from_config(&config, &stt_config::Env::from_process())
                .map_err(|e| e.to_string())?;
        let registry = Registry::new(stt_assistant::registry_settings(&config.llm));
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let found = rt.block_on(registry.probe_all());
        let id = registry
            .configured()
            .or_else(|| registry.choose(&found))
            .ok_or_else(|| registry.none_live(&found))?;
        let probed = found.iter().find(|p| p.id == id).ok_or("the provider was not probed")?;
        let client = registry.provider(probed, "").map_err(|e| registry.explain(id, "", &e))?;
        let model = client.model().to_owned();
        let env = stt_assistant::llm::JobEnv {
            client: Some(client),
            fallback: None,
            missing: String::new(),
            providers: Some((registry, id)),
            tools: std::sync::Arc::new(stt_tools::Registry::new(&[])?),
            settings: std::sync::Arc::new(settings.lane),
            memory: None,
            chat_system: None,
        };
        Ok(Dreamer { rt, env, name: id.to_string(), model })
    }

    /// Dreams over the store at `db` until no session is pending (or a dream gets nowhere),
    /// then waits for the new items' vectors.
    fn dream(&self, db: &Path, models: &Path, conv: &Conversation) -> Dreamt {
        use stt_assistant::lane::Sink;
        use stt_assistant::llm::{self, Report, Work};
        use stt_assistant::memory;
        let started = Instant::now();
        let embedder = stt_embed::Files::under(models);
        let settings =
            memory::Settings { embedder: Some(embedder), ..memory::Settings::new(db.into()) };
        let handle = memory::spawn(settings, Sink::new(|_| {})).unwrap().0;
        let env = stt_assistant::llm::JobEnv { memory: Some(handle.clone()), ..self.env.clone() };
        let stats = |m: &memory::Memory| match self.rt.block_on(m.stats()) {
            Ok(s) => s,
            Err(why) => panic!("memory: {why}"),
        };
        let first = stats(&handle);
        let mut requests = 0;
        loop {
            let before = stats(&handle).pending_sessions;
            if before == 0 {
                break;
            }
            let (tx, rx) = std::sync::mpsc::channel();
            let out = Sink::new(move |r: Report| {
                let _ = tx.send(r);
            });
            let work = Work::Dream { trigger: "bench".into(), max_steps: 200 };
            self.rt.block_on(async {
                llm::spawn(&env, work, 0, tracing::Span::none(), out);
            });
            for report in rx.iter() {
                match report {
                    Report::Reachable(_) => requests += 1,
                    Report::Note(note) => eprintln!("conv {}: {note}", conv.id),
                    Report::Finished(_) => break,
                    _ => {}
                }
            }
            if stats(&handle).pending_sessions >= before {
                eprintln!("conv {}: a dream processed nothing; giving up", conv.id);
                break;
            }
        }
        let waited = Instant::now();
        let last = loop {
            let s = stats(&handle);
            if s.vectors >= s.log_entries + s.active_items || waited.elapsed().as_secs() > 120 {
                break s;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        };
        Dreamt {
            sessions: usize::try_from(first.pending_sessions - last.pending_sessions).unwrap_or(0),
            items: last.active_items,
            requests,
            secs: started.elapsed().as_secs_f64(),
        }
    }
}

/// What `--tree` built of one conversation, and how its nodes did on the questions.
#[derive(Default)]
struct Treed {
    nodes: usize,
    levels: Vec<i64>,
    requests: usize,
    secs: f64,
    questions: usize,
    /// The node nearest the question by meaning covers all its evidence turns.
    top_covers: usize,
    /// The share of the conversation's turns that node covers, summed (the chance of a hit).
    top_share: f64,
    /// The answer's words are all in that node's summary, and in some node's summary.
    top_answers: usize,
    any_answers: usize,
}

impl Dreamer {
    /// `--tree`: the conversation as one endless chat in a tree of its own (a store apart, so
    /// the log is not doubled), every summary due written by the model as each turn comes in;
    /// then each question's nearest node by meaning, judged by the turns it covers (its
    /// provenance) and by whether its summary kept the answer.
    fn tree(&self, db: &Path, embedder: &mut Embedder, conv: &Conversation) -> Treed {
        use stt_assistant::lane::Sink;
        use stt_assistant::llm::{self, Report, Work};
        use stt_assistant::memory::{self, Episode};
        let started = Instant::now();
        // The default tree.
        let settings = memory::Settings::new(db.into());
        let handle = memory::spawn(settings, Sink::new(|_| {})).unwrap().0;
        let env = stt_assistant::llm::JobEnv { memory: Some(handle.clone()), ..self.env.clone() };
        let mut requests = 0;
        for turn in &conv.turns {
            handle.turn(
                Episode::Chat(1),
                stt_memory::Role::User,
                Some(&turn.speaker),
                "chat",
                &turn.text,
            );
            loop {
                let (tx, rx) = std::sync::mpsc::channel();
                let out = Sink::new(move |r: Report| {
                    let _ = tx.send(r);
                });
                self.rt.block_on(async {
                    llm::spawn(&env, Work::Tree, 0, tracing::Span::none(), out);
                });
                let mut more = false;
                for report in rx.iter() {
                    match report {
                        Report::Reachable(_) => requests += 1,
                        Report::Note(note) => eprintln!("conv {}: {note}", conv.id),
                        Report::TreeMore(m) => more = m,
                        Report::Finished(_) => break,
                        _ => {}
                    }
                }
                if !more {
                    break;
                }
            }
        }
        self.rt.block_on(handle.stop());
        let store = Store::open(db).unwrap();
        let stats = store.tree_stats().unwrap();
        // Every node, any level; a node's turns are its seq range (seq n is turn n - 1).
        let mut nodes = Vec::new();
        let mut stack: Vec<stt_memory::tree::Node> = store.tree_context().unwrap().nodes;
        while let Some(node) = stack.pop() {
            stack.extend(store.tree_children(node.id).unwrap());
            nodes.push(node);
        }
        let mut treed =
            Treed { nodes: nodes.len(), levels: stats.nodes, requests, ..Treed::default() };
        if nodes.is_empty() {
            treed.secs = started.elapsed().as_secs_f64();
            return treed;
        }
        let summaries: Vec<&str> = nodes.iter().map(|n| n.summary.as_str()).collect();
        let vectors = embedder.embed(&summaries).unwrap();
        let index = |dia: &str| conv.turns.iter().position(|t| t.dia_id == dia);
        let kept = |summary: &str, answer: &str| {
            let words = stt_memory::text::content_words(answer);
            let said = stt_memory::text::content_words(summary);
            !words.is_empty() && words.is_subset(&said)
        };
        for q in &conv.questions {
            let v = embedder.embed(&[q.text.as_str()]).unwrap().remove(0);
            let best = (0..nodes.len())
                .max_by(|&a, &b| {
                    stt_embed::cosine(&v, &vectors[a])
                        .total_cmp(&stt_embed::cosine(&v, &vectors[b]))
                })
                .unwrap();
            let node = &nodes[best];
            let covers = q.evidence.iter().all(|e| {
                index(e).is_some_and(|i| (node.first_seq..=node.last_seq).contains(&(i as i64 + 1)))
            });
            treed.questions += 1;
            treed.top_covers += usize::from(covers);
            treed.top_share +=
                (node.last_seq - node.first_seq + 1) as f64 / conv.turns.len().max(1) as f64;
            treed.top_answers += usize::from(kept(&node.summary, &q.answer));
            treed.any_answers += usize::from(summaries.iter().any(|s| kept(s, &q.answer)));
        }
        treed.secs = started.elapsed().as_secs_f64();
        treed
    }
}

fn main() -> ExitCode {
    let args = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("bench-memory: {e}");
            return ExitCode::from(2);
        }
    };
    let models = stt_testkit::models_dir();
    let dreamer = if args.dream || args.tree {
        match Dreamer::new() {
            Ok(d) => Some(d),
            Err(e) => {
                eprintln!("bench-memory: --dream/--tree: {e}");
                return ExitCode::from(1);
            }
        }
    } else {
        None
    };
    let mut dreamt = Vec::new();
    let mut treed: Vec<Treed> = Vec::new();
    let mut embedder = match Embedder::load(
        &stt_embed::default_dir(&models),
        &stt_embed::runtime_library(&models),
    ) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("bench-memory: {e}");
            return ExitCode::from(1);
        }
    };
    let convs: Vec<Conversation> = args.files.iter().map(|f| load(f)).collect();
    let dir = tempfile::tempdir().unwrap();
    let mut scores: Vec<Score> = vec![Score::default(); MODES.len()];
    let (mut ingest_ms, mut turns) = (0.0, 0usize);
    let mut recall_ms = Vec::new();
    let mut query_embed_ms = Vec::new();
    let mut twice_ok = true;
    for conv in &convs {
        let mut store = Store::open(&dir.path().join(format!("conv-{}.db", conv.id))).unwrap();
        store.use_embeddings(embedder.model_id(), stt_embed::DIM).unwrap();
        ingest_ms += ingest(&mut store, &mut embedder, conv);
        turns += conv.turns.len();
        let once = store.stats().unwrap();
        ingest(&mut store, &mut embedder, conv);
        let twice = store.stats().unwrap();
        if once.log_entries != twice.log_entries || once.active_items != twice.active_items {
            twice_ok = false;
            eprintln!("conv {}: ingesting twice grew the store: {once:?} → {twice:?}", conv.id);
        }
        if let Some(dreamer) = dreamer.as_ref().filter(|_| args.tree) {
            let path = dir.path().join(format!("conv-{}-tree.db", conv.id));
            treed.push(dreamer.tree(&path, &mut embedder, conv));
        }
        if let Some(dreamer) = dreamer.as_ref().filter(|_| args.dream) {
            let path = store.path().to_owned();
            drop(store);
            dreamt.push(dreamer.dream(&path, &models, conv));
            store = Store::open(&path).unwrap();
            store.use_embeddings(embedder.model_id(), stt_embed::DIM).unwrap();
        }
        for q in &conv.questions {
            let t = Instant::now();
            let v = embedder.embed(&[q.text.as_str()]).unwrap().remove(0);
            query_embed_ms.push(t.elapsed().as_secs_f64() * 1000.0);
            for (m, (_, weights)) in MODES.iter().enumerate() {
                let query = Query {
                    vector: Some(&v),
                    limit: args.k,
                    weights: weights(),
                    ..Query::new(&q.text)
                };
                let t = Instant::now();
                let hits = store.recall(&query).unwrap();
                if m == 0 {
                    recall_ms.push(t.elapsed().as_secs_f64() * 1000.0);
                }
                let retrieved = references(&hits, args.k);
                scores[m].add(q.category, &q.evidence, &retrieved);
                if m == 0 {
                    println!(
                        "{}",
                        json!({"conv": conv.id, "question": q.text, "category": q.category,
                               "retrieved": retrieved})
                    );
                }
            }
        }
    }
    let k = args.k;
    let questions: usize = convs.iter().map(|c| c.questions.len()).sum();
    let dropped: usize = convs.iter().map(|c| c.dropped_ids).sum();
    let skipped: usize = convs.iter().map(|c| c.skipped_questions).sum();
    let mut report = String::new();
    report.push_str(&format!(
        "{} conversations, {turns} turns, {questions} questions (categories 1–4); evidence ids \
         dropped as naming no turn: {dropped}; questions left without evidence: {skipped}.\n\n",
        convs.len()
    ));
    report.push_str(&format!("| scorer | recall_all@{k} | recall_any@{k} | recall_all@{k} by category |\n|---|---|---|---|\n"));
    for (m, (name, _)) in MODES.iter().enumerate() {
        report.push_str(&format!(
            "| {name} | {:.1}% | {:.1}% | {} |\n",
            Score::total(&scores[m].all),
            Score::total(&scores[m].any),
            Score::per_category(&scores[m].all)
        ));
    }
    if !dreamt.is_empty() {
        let sessions: usize = dreamt.iter().map(|d| d.sessions).sum();
        let items: i64 = dreamt.iter().map(|d| d.items).sum();
        let secs: f64 = dreamt.iter().map(|d| d.secs).sum();
        let requests: usize = dreamt.iter().map(|d| d.requests).sum();
        report.push_str(&format!(
            "\nDreamt with {} ({}): {sessions} sessions consolidated into {items} items in \
             {requests} model requests, {secs:.0} s ({:.1} s per session).\n",
            dreamer.as_ref().map_or("", |d| d.name.as_str()),
            dreamer.as_ref().map_or("", |d| d.model.as_str()),
            secs / sessions.max(1) as f64
        ));
    }
    if !treed.is_empty() {
        let sum = |f: fn(&Treed) -> usize| treed.iter().map(f).sum::<usize>();
        let questions = sum(|t| t.questions).max(1) as f64;
        let share: f64 = treed.iter().map(|t| t.top_share).sum();
        let secs: f64 = treed.iter().map(|t| t.secs).sum();
        let levels: Vec<String> = treed.iter().map(|t| format!("{:?}", t.levels)).collect();
        report.push_str(&format!(
            "\nThe memory tree (`--tree`) with {} ({}): each conversation as one chat, the \
             default tree (60/40, 8 → 4); {} nodes (per level, per conversation: {}) in {} model \
             requests, {secs:.0} s. The node nearest each question by meaning covers all its \
             evidence turns for {:.1}% of the questions (that node spans {:.1}% of its \
             conversation on average: the chance of covering by luck); its summary has every \
             word of the answer for {:.1}%, and some node's summary has for {:.1}%.\n",
            dreamer.as_ref().map_or("", |d| d.name.as_str()),
            dreamer.as_ref().map_or("", |d| d.model.as_str()),
            sum(|t| t.nodes),
            levels.join(", "),
            sum(|t| t.requests),
            100.0 * sum(|t| t.top_covers) as f64 / questions,
            100.0 * share / questions,
            100.0 * sum(|t| t.top_answers) as f64 / questions,
            100.0 * sum(|t| t.any_answers) as f64 / questions,
        ));
    }
    let recall = Stats::of(recall_ms);
    let qe = Stats::of(query_embed_ms);
    report.push_str(&format!(
        "\nIngest: {:.2} ms per turn (log, search index and embedding; no LLM). Ingesting every \
         conversation a second time: {}.\nRecall on these stores: p50 {:.2} ms, p99 {:.2} ms; \
         embedding the question: p50 {:.2} ms, p99 {:.2} ms.\n",
        ingest_ms / turns.max(1) as f64,
        if twice_ok { "the store did not grow (no duplicates)" } else { "DUPLICATES (see above)" },
        recall.p50,
        recall.p99,
        qe.p50,
        qe.p99
    ));
    if let Some((recall, embed, fill)) = scale(&mut embedder, &convs, args.items, dir.path()) {
        report.push_str(&format!(
            "With {} items in the store (generated in {fill:.0} s): recall p50 {:.2} ms, p99 \
             {:.2} ms; with the question's embedding on top: p50 {:.2} ms.\n",
            args.items,
            recall.p50,
            recall.p99,
            recall.p50 + embed.p50
        ));
    }
    eprintln!("{report}");
    if args.write {
        let section = format!(
            "<!-- bench-memory:start -->\n## Memory recall on LoCoMo (`scripts/bench-memory`)\n\n\
             Measured {} on {}, with `scripts/bench-memory --write \
             ../shared/data/locomo/conv-*.json`.\n\n{report}<!-- bench-memory:end -->\n",
            perf::today(),
            perf::machine()
        );
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/PERFORMANCE.md");
        perf::write_section(
            &path,
            "<!-- bench-memory:start -->",
            "<!-- bench-memory:end -->",
            &section,
        )
        .unwrap();
    }
    ExitCode::SUCCESS
}
