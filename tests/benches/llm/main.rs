//! The local models against a fixed battery, to choose stt's default model by measurement.
//!
//! For each model (every GGUF `scripts/fetch-llm` installs that is in the models directory, in
//! the order of that script, or those named with `--model`), llama-server is started with the
//! arguments `stt-daemon up` gives it ([`Launch::args`](stt_daemon::up::model::Launch::args), a thread per CPU, a free port; not at
//! `up`'s nice level, so that other load on the machine weighs less on the figures), and the
//! assistant's own code paths run against it with the settings of the default config
//! (`stt_assistant::Settings::from_config(&Config::default())`: streaming on, temperature
//! 0.2, `max_tokens` 512, `command_answer_max_tokens` 64, the default system prompts) and
//! `Endpoint.slots` on, as the assistant has it for llama-server:
//!
//! 1. **a cold and a warm command.** "What time is it?" through the tool loop
//!    (`llm::spawn` with `Work::Command`, as `run_to_end` does, the built-in tools, memory
//!    off), the first command after the server started (nothing in its cache), then the same
//!    command until three runs have called the tool and answered (at most six; the median of
//!    those three is reported, and the runs that made the time up or gave no answer are
//!    counted). After the rest of the battery the
//!    server is started again (with `--slot-save-path`, as `up` starts it), the assistant's
//!    warm-up (`llm::command::warm_saved`: the command prefix read into the command slot and
//!    saved, which the assistant does once llama-server answers), and the command once more:
//!    the first command a person gives after `stt-daemon up`; then once more, the saved
//!    prefix restored instead of read: the first command after the next start.
//! 2. **everyday commands.** [`everyday::EVERYDAY`]: 64 things a person asks on an ordinary day (the
//!    time and the date, timers, reminders at a time, the planner's tasks, the clipboard,
//!    notifications, web pages, questions the model answers itself, things no tool does,
//!    what was said before), in order, through the same path with memory on (a fresh
//!    memory with the default `memory::Settings`, words only, [`everyday::SAID_BEFORE`] in it), so
//!    that each is offered the tools its words call for as `stt-daemon up` offers them. Each
//!    is right or wrong by a check of the calls as they ran (their `tool_call` events) and
//!    the answer, against the local time when it ran and the planner's tasks before and
//!    after it; a call of a tool that does not exist, or one that acts and was not asked
//!    for, makes it wrong. `open_url` asks for confirmation and is answered no (nothing
//!    opens); `notify` and `clipboard_copy` may fail without a desktop: the call is scored,
//!    not its outcome. Tool names the model made up, replies that echo the tool schemas and
//!    the prompt tokens of each command's first request are counted, and, before the
//!    commands, those of one request with every built-in and memory tool offered (as `up`
//!    offered them before a command's words chose them).
//! 3. **short facts.** [`facts::FACTS`]: chat turns (`Work::Chat`, the default chat system prompt,
//!    memory off), right when the answer has one of the expected words.
//! 4. **summaries.** [`summaries::CHATS`]: three made-up chats of 20 turns with names, numbers and dates
//!    in them (and a value changed later on), summarized by the memory tree's own job
//!    (`Work::Tree` on a fresh memory: its instruction, request and parsing) once the 41st
//!    message makes the 40 before it due; scored on what the tree keeps (the summary and its
//!    fields) as the share of the facts kept (each a list of accepted spellings) and the count
//!    contradicted: a fact whose old or wrong value is there without the right one, or a
//!    number that the chat never said. A summary cut off by `compaction_max_tokens` keeps
//!    what the tree keeps of it (its whole sentences before the first it repeats); one the
//!    tree could not use (cut off before a whole sentence, empty) keeps nothing.
//! 5. **corrections.** [`corrections::REWRITES`]: the dream's correction check (`llm::dream::replaces`: the
//!    old note and the new fact, the model rewrites the note), right when the rewrite has the
//!    new value and not the old; four pairs whose new fact corrects nothing must keep the note.
//!    Whether the dream itself would supersede the note is reported beside it.
//!
//! Every request goes through a small recording proxy in this process ([`proxy::Proxy`]), one
//! request per connection: the first streamed token of a command is when the first piece of
//! text or of a call reached it, and the model's raw output of every request is kept. Every
//! output of parts 2–5 goes to `target/bench-llm/<model>.json` for inspection. Tokens/s are
//! llama-server's own `timings`, summed over every request of the battery. The peak RSS is
//! llama-server's VmHWM after the battery.
//!
//! With `--url` the battery runs against any OpenAI-compatible chat completions URL (the
//! server's default model, no key, no `id_slot`), without the start, cold, warm-up and RSS
//! figures it cannot measure; over `https://` nothing can be recorded on the way, so the
//! first-token and raw-output figures are missing too, and corrections are scored by the
//! dream's verdict.
//!
//! Usage: `scripts/bench-llm [--model PATH.gguf]... [--url CHAT_COMPLETIONS_URL [--name
//! LABEL]]...`. With `STT_BENCH_WRITE=docs/PERFORMANCE.md` (the script sets it) the figures
//! replace the `bench-llm` section of that file.
//!
//! The modules, in reading order: [`cli`] reads the command line and [`target`] what it names;
//! [`battery`] runs one model through the parts; [`everyday`] and the [`verdict`] checks it
//! uses, [`facts`], [`summaries`] and [`corrections`] hold each part's prompts, expected answers
//! and scoring, [`text`] how an answer is read; [`job`] runs a lane's job, through the
//! [`proxy`] that records each request, read back as an [`output`]; [`llama`] starts
//! llama-server, [`load`] reads the machine's load, and [`report`] writes the Markdown.

#![allow(clippy::print_stdout, clippy::print_stderr, reason = "a benchmark prints its figures")]

mod battery;
mod cli;
mod corrections;
mod everyday;
mod facts;
mod job;
mod llama;
mod load;
mod output;
mod proxy;
mod report;
mod summaries;
mod target;
mod text;
mod verdict;

use std::path::Path;
use std::process::ExitCode;

use crate::battery::{Figures, bench};
use crate::job::Base;
use crate::load::load_average;
use crate::report::{END, START, section};

fn main() -> ExitCode {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap_or(Path::new("..")).to_owned();
    let asked = cli::read(&root);
    let base = Base::new();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("no runtime: {e}"));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("no temporary directory: {e}"));
    let saved = root.join("target/bench-llm");
    let load_before = load_average();
    let all: Vec<Figures> = asked
        .targets
        .iter()
        .map(|t| bench(&runtime, &base, t, dir.path(), &saved, asked.everyday))
        .collect();
    if asked.everyday {
        return ExitCode::SUCCESS;
    }
    let section = section(&asked.targets, &all, &asked.command, (&load_before, &load_average()));
    println!("{section}");
    if let Ok(target) = std::env::var("STT_BENCH_WRITE") {
        let path = root.join(target);
        stt_testkit::perf::write_section(&path, START, END, &section)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        eprintln!("bench-llm: wrote {}", path.display());
    }
    ExitCode::SUCCESS
}
