//! The local models against a fixed battery, to choose stt's default model by measurement.
//!
//! For each model (every GGUF `scripts/fetch-llm` installs that is in the models directory, in
//! the order of that script, or those named with `--model`), llama-server is started with the
//! arguments `stt-daemon up` gives it ([`Launch::args`], a thread per CPU, a free port; not at
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
//! 2. **everyday commands.** [`EVERYDAY`]: 64 things a person asks on an ordinary day (the
//!    time and the date, timers, reminders at a time, the planner's tasks, the clipboard,
//!    notifications, web pages, questions the model answers itself, things no tool does,
//!    what was said before), in order, through the same path with memory on (a fresh
//!    memory with the default `memory::Settings`, words only, [`SAID_BEFORE`] in it), so
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
//! 3. **short facts.** [`FACTS`]: chat turns (`Work::Chat`, the default chat system prompt,
//!    memory off), right when the answer has one of the expected words.
//! 4. **summaries.** [`CHATS`]: three made-up chats of 20 turns with names, numbers and dates
//!    in them (and a value changed later on), summarized by the memory tree's own job
//!    (`Work::Tree` on a fresh memory: its instruction, request and parsing) once the 41st
//!    message makes the 40 before it due; scored on what the tree keeps (the summary and its
//!    fields) as the share of the facts kept (each a list of accepted spellings) and the count
//!    contradicted: a fact whose old or wrong value is there without the right one, or a
//!    number that the chat never said. A summary cut off by `compaction_max_tokens` keeps
//!    what the tree keeps of it (its whole sentences before the first it repeats); one the
//!    tree could not use (cut off before a whole sentence, empty) keeps nothing.
//! 5. **corrections.** [`REWRITES`]: the dream's correction check (`llm::dream::replaces`: the
//!    old note and the new fact, the model rewrites the note), right when the rewrite has the
//!    new value and not the old; four pairs whose new fact corrects nothing must keep the note.
//!    Whether the dream itself would supersede the note is reported beside it.
//!
//! Every request goes through a small recording proxy in this process ([`Proxy`]), one
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

#![allow(clippy::print_stdout, clippy::print_stderr, reason = "a benchmark prints its figures")]

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{Read as _, Write as _};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use chrono::{Datelike as _, NaiveDate, NaiveDateTime, TimeDelta, Timelike as _, Weekday};
use serde_json::{Value, json};
use tokio::runtime::Runtime;
use tracing::Span;

use stt_assistant::lane::Sink;
use stt_assistant::llm::{self, Chat, JobEnv, Report, Work};
use stt_assistant::memory::{self, Episode};
use stt_assistant::turn::ChatTurn;
use stt_daemon::up::model::Launch;
use stt_llm::{Endpoint, LlmError, Message, Provider, Request, ToolSpec, Usage};
use stt_memory::Role;
use stt_memory::tree::TreeRules;
use stt_proto::{AssistantEvent, TaskEntry, TaskRequest};

const START: &str = "<!-- bench-llm:start -->";
const END: &str = "<!-- bench-llm:end -->";
const USAGE: &str = "usage: scripts/bench-llm [--everyday] [--model PATH.gguf]... [--url CHAT_COMPLETIONS_URL [--name LABEL]]...\n  --everyday: the everyday commands alone, scored and printed, nothing written (to try a prompt in a few minutes)";
/// The command timed cold and warm.
const TIMED: &str = "What time is it?";
/// Warm runs of it that called the tool; their median is reported.
const WARM_RUNS: usize = 3;
/// Warm runs at most, to have [`WARM_RUNS`] that called the tool and answered.
const MAX_WARM_RUNS: usize = 6;
/// How long llama-server may take to load a model.
const LOAD_PATIENCE: Duration = Duration::from_secs(300);
/// Who says the user's lines of chat: the daemon's prefix for a speaker it does not know.
const SPEAKER: &str = "Unknown";
/// The memory tree's sizes for the summaries: the 41st message makes the 40 before it due,
/// so one summary covers a whole chat of 20 turns, with the 41st after it as the tree's
/// default sizes would have 20 more.
const SUMMARY_RULES: TreeRules = TreeRules { raw_max: 41, compress: 40, fanout_max: 8 };

// ---------------------------------------------------------------------------------------
// The battery: prompts, expected answers and how each is scored.
// ---------------------------------------------------------------------------------------

/// An everyday spoken command, what a right outcome is, in words, the tools it may act with
/// (a read of the time, of memory or of the planner is always allowed; any other call makes
/// it wrong), and the check of what it did.
struct Everyday {
    said: &'static str,
    want: &'static str,
    acts: &'static [&'static str],
    right: fn(&Verdict<'_>) -> bool,
}

/// What a command did, for its check: the calls as they ran (their `tool_call` events, in
/// order), its answer, the local time just before it started and once it ended, and the
/// planner's tasks before and after it.
struct Verdict<'a> {
    calls: Vec<(&'a str, &'a Value)>,
    answer: String,
    now: NaiveDateTime,
    end: NaiveDateTime,
    tasks: &'a [TaskEntry],
    after: &'a [TaskEntry],
}

impl Verdict<'_> {
    /// The arguments of each call of `tool`.
    fn called(&self, tool: &str) -> impl Iterator<Item = &Value> {
        self.calls.iter().filter(move |(t, _)| *t == tool).map(|(_, a)| *a)
    }
}

const GET_DATETIME: &str = "get_datetime";
const SET_TIMER: &str = "set_timer";
const NOTIFY: &str = "notify";
const CLIPBOARD_COPY: &str = "clipboard_copy";
const OPEN_URL: &str = "open_url";
const ADD_INTENTION: &str = memory::tools::ADD_INTENTION;
const CREATE_TASK: &str = memory::plans::CREATE_TASK;
const BREAK_DOWN_TASK: &str = memory::plans::BREAK_DOWN_TASK;
const MAKE_TASK: &[&str] = &[CREATE_TASK, BREAK_DOWN_TASK];
const REMIND: &[&str] = &[ADD_INTENTION, SET_TIMER];

/// What a person says to the assistant on an ordinary day, as the daemon's transcripts read,
/// in the order they run: one memory for all of them, so a reminder set early is open for
/// the rest, and the planner's tasks made early are the ones asked about later. Each is
/// worded so that the words the command path looks for ([`stt_tools::offer`],
/// `memory::called_for`, `memory::plans::asks_about_plans`) offer it the tools that do it.
const EVERYDAY: [Everyday; 64] = [
    // The time and the date.
    Everyday {
        said: "What time is it?",
        want: "get_datetime, or the time it is",
        acts: &[],
        right: |v| told(v, states_time),
    },
    Everyday {
        said: "Can you tell me the time?",
        want: "get_datetime, or the time it is",
        acts: &[],
        right: |v| told(v, states_time),
    },
    Everyday {
        said: "What's the time right now?",
        want: "get_datetime, or the time it is",
        acts: &[],
        right: |v| told(v, states_time),
    },
    Everyday {
        said: "What day is it today?",
        want: "get_datetime, or today's weekday",
        acts: &[],
        right: |v| told(v, states_weekday),
    },
    Everyday {
        said: "What's today's date?",
        want: "get_datetime, or today's date",
        acts: &[],
        right: |v| told(v, states_date),
    },
    Everyday {
        said: "What year is it?",
        want: "get_datetime, or this year",
        acts: &[],
        right: |v| told(v, states_year),
    },
    // Timers.
    Everyday {
        said: "Set a timer for five minutes.",
        want: "set_timer minutes 5",
        acts: &[SET_TIMER],
        right: |v| timer(v, 5.0, None),
    },
    Everyday {
        said: "Set a timer for 20 minutes for the pasta.",
        want: "set_timer minutes 20, a label with \"pasta\"",
        acts: &[SET_TIMER],
        right: |v| timer(v, 20.0, Some("pasta")),
    },
    Everyday {
        said: "Set a timer for an hour and a half.",
        want: "set_timer minutes 90",
        acts: &[SET_TIMER],
        right: |v| timer(v, 90.0, None),
    },
    Everyday {
        said: "Start a thirty second timer for the tea.",
        want: "set_timer minutes 0.5, a label with \"tea\"",
        acts: &[SET_TIMER],
        right: |v| timer(v, 0.5, Some("tea")),
    },
    Everyday {
        said: "Timer for 2 minutes, please.",
        want: "set_timer minutes 2",
        acts: &[SET_TIMER],
        right: |v| timer(v, 2.0, None),
    },
    Everyday {
        said: "Set a timer for 45 minutes.",
        want: "set_timer minutes 45",
        acts: &[SET_TIMER],
        right: |v| timer(v, 45.0, None),
    },
    Everyday {
        said: "Set a timer for a quarter of an hour.",
        want: "set_timer minutes 15",
        acts: &[SET_TIMER],
        right: |v| timer(v, 15.0, None),
    },
    Everyday {
        said: "Can you set a 10 minute timer for the eggs?",
        want: "set_timer minutes 10, a label with \"eggs\"",
        acts: &[SET_TIMER],
        right: |v| timer(v, 10.0, Some("egg")),
    },
    Everyday {
        said: "Wake me up in 30 minutes.",
        want: "set_timer minutes 30",
        acts: &[SET_TIMER],
        right: |v| timer(v, 30.0, None),
    },
    Everyday {
        said: "Set a timer for one hour.",
        want: "set_timer minutes 60",
        acts: &[SET_TIMER],
        right: |v| timer(v, 60.0, None),
    },
    // Reminders at a time. No words in common with the commands after them, so that none
    // of these brings a reminder back into another's prompt by its words.
    Everyday {
        said: "Remind me tomorrow at 9 a.m. to make a dentist appointment.",
        want: "add_intention due tomorrow 09:00, a text with \"dentist\"",
        acts: &[ADD_INTENTION],
        right: |v| reminder(v, "dentist", &[day_at(v, 1, 9, 0)]),
    },
    Everyday {
        said: "Remind me on Friday at 5 p.m. to pay the rent.",
        want: "add_intention due the coming Friday 17:00, a text with \"rent\"",
        acts: &[ADD_INTENTION],
        right: |v| reminder(v, "rent", &weekday_at(v, Weekday::Fri, 17, 0)),
    },
    Everyday {
        said: "Remind me in twenty minutes to check the oven.",
        want: "set_timer minutes 20 with \"oven\" in its label, or add_intention due in 20 \
               minutes with \"oven\" in its text",
        acts: REMIND,
        right: |v| reminder_in(v, "oven", 20),
    },
    Everyday {
        said: "Remind me in two hours to take the laundry out.",
        want: "set_timer minutes 120 with \"laundry\" in its label, or add_intention due in \
               2 hours with \"laundry\" in its text",
        acts: REMIND,
        right: |v| reminder_in(v, "laundry", 120),
    },
    Everyday {
        said: "Remind me tomorrow morning at 8 to water the plants.",
        want: "add_intention due tomorrow 08:00, a text with \"plants\"",
        acts: &[ADD_INTENTION],
        right: |v| reminder(v, "plant", &[day_at(v, 1, 8, 0)]),
    },
    Everyday {
        said: "Remind me the day after tomorrow at noon to pick up the parcel.",
        want: "add_intention due in two days at 12:00, a text with \"parcel\"",
        acts: &[ADD_INTENTION],
        right: |v| reminder(v, "parcel", &[day_at(v, 2, 12, 0)]),
    },
    Everyday {
        said: "Remind me next Wednesday at 3 p.m. to collect my glasses.",
        want: "add_intention due the coming Wednesday (or the one after) 15:00, a text with \
               \"glasses\"",
        acts: &[ADD_INTENTION],
        right: |v| reminder(v, "glasses", &next_weekday_at(v, Weekday::Wed, 15, 0)),
    },
    Everyday {
        said: "Remind me tomorrow evening at 7:30 to print the train tickets.",
        want: "add_intention due tomorrow 19:30, a text with \"tickets\"",
        acts: &[ADD_INTENTION],
        right: |v| reminder(v, "ticket", &[day_at(v, 1, 19, 30)]),
    },
    // The planner: tasks made first, then asked about, moved and ended.
    Everyday {
        said: "Add a task to buy milk.",
        want: "create_task with \"milk\" in its title",
        acts: MAKE_TASK,
        right: |v| made_task(v, "milk"),
    },
    Everyday {
        said: "Create a task to renew the car insurance before the end of the month.",
        want: "create_task with \"insurance\" in its title",
        acts: MAKE_TASK,
        right: |v| made_task(v, "insurance"),
    },
    Everyday {
        said: "I want to learn Spanish in three months, make it one of my goals.",
        want: "create_task (or break_down_task) with \"spanish\" in its title",
        acts: MAKE_TASK,
        right: |v| made_task(v, "spanish"),
    },
    Everyday {
        said: "What should I do next?",
        want: "get_next_actions or list_tasks",
        acts: &[],
        right: |v| asked_planner(v),
    },
    Everyday {
        said: "What's on my task list?",
        want: "list_tasks or get_next_actions",
        acts: &[],
        right: |v| asked_planner(v),
    },
    Everyday {
        said: "Make the insurance task my top priority.",
        want: "prioritize the insurance task to priority 1",
        acts: &[memory::plans::PRIORITIZE],
        right: |v| {
            let ids = task_ids(v.tasks, "insurance");
            v.called(memory::plans::PRIORITIZE)
                .any(|a| of_task(a, &ids) && memory::plans::whole(&a["priority"]) == Some(1))
        },
    },
    Everyday {
        said: "Push the insurance task back by one week.",
        want: "reschedule the insurance task by shift_days 7 (or to its due date a week later)",
        acts: &[memory::plans::RESCHEDULE],
        right: |v| week_later(v, "insurance"),
    },
    Everyday {
        said: "Mark the milk task as done.",
        want: "update_task_status of the milk task to done (or mark_plan_done, that leaves it \
               done)",
        acts: &[memory::plans::UPDATE_TASK_STATUS, memory::plans::MARK_PLAN_DONE],
        right: |v| {
            status_set(v, "milk", "done")
                || (v.called(memory::plans::MARK_PLAN_DONE).next().is_some()
                    && v.after.iter().any(|t| has(t, "milk") && t.status == "done"))
        },
    },
    Everyday {
        said: "Drop the Spanish goal.",
        want: "update_task_status of the Spanish task to dropped",
        acts: &[memory::plans::UPDATE_TASK_STATUS],
        right: |v| status_set(v, "spanish", "dropped"),
    },
    // The clipboard.
    Everyday {
        said: "Copy hello world to the clipboard.",
        want: "clipboard_copy text \"hello world\"",
        acts: &[CLIPBOARD_COPY],
        right: |v| copied(v, "hello world"),
    },
    Everyday {
        said: "Put the word banana on the clipboard.",
        want: "clipboard_copy text \"banana\"",
        acts: &[CLIPBOARD_COPY],
        right: |v| copied(v, "banana"),
    },
    Everyday {
        said: "Copy the phone number 555 0123 to the clipboard.",
        want: "clipboard_copy text \"555 0123\" (its digits, nothing else)",
        acts: &[CLIPBOARD_COPY],
        right: |v| {
            v.called(CLIPBOARD_COPY).any(|a| {
                let text = a["text"].as_str().unwrap_or_default();
                !text.chars().any(char::is_alphabetic)
                    && text.chars().filter(char::is_ascii_digit).collect::<String>() == "5550123"
            })
        },
    },
    Everyday {
        said: "Copy thank you very much to the clipboard.",
        want: "clipboard_copy text \"thank you very much\"",
        acts: &[CLIPBOARD_COPY],
        right: |v| copied(v, "thank you very much"),
    },
    Everyday {
        said: "Put 12 Baker Street on the clipboard.",
        want: "clipboard_copy text \"12 Baker Street\"",
        acts: &[CLIPBOARD_COPY],
        right: |v| copied(v, "12 baker street"),
    },
    // Notifications.
    Everyday {
        said: "Show a notification saying backup done.",
        want: "notify, \"backup done\" in the title or body",
        acts: &[NOTIFY],
        right: |v| notified(v, &["backup done"]),
    },
    Everyday {
        said: "Send me a notification that says the tea is ready.",
        want: "notify, \"tea is ready\" in the title or body",
        acts: &[NOTIFY],
        right: |v| notified(v, &["tea is ready"]),
    },
    Everyday {
        said: "Pop up a message saying dinner is served.",
        want: "notify, \"dinner is served\" in the title or body",
        acts: &[NOTIFY],
        right: |v| notified(v, &["dinner is served"]),
    },
    Everyday {
        said: "Notify me with the words stand up and stretch.",
        want: "notify, \"stand up and stretch\" in the title or body",
        acts: &[NOTIFY],
        right: |v| notified(v, &["stand up and stretch"]),
    },
    Everyday {
        said: "Send a notification: the download is complete.",
        want: "notify, \"download is complete\" (or \"download complete\") in the title or body",
        acts: &[NOTIFY],
        right: |v| notified(v, &["download is complete", "download complete"]),
    },
    // Web pages.
    Everyday {
        said: "Open example.org.",
        want: "open_url http(s)://example.org",
        acts: &[OPEN_URL],
        right: |v| opened(v, "example.org"),
    },
    Everyday {
        said: "Open the Rust website.",
        want: "open_url http(s)://rust-lang.org",
        acts: &[OPEN_URL],
        right: |v| opened(v, "rust-lang.org"),
    },
    Everyday {
        said: "Open Wikipedia.",
        want: "open_url http(s)://wikipedia.org (any language's)",
        acts: &[OPEN_URL],
        right: |v| opened(v, "wikipedia.org"),
    },
    Everyday {
        said: "Go to youtube.com.",
        want: "open_url http(s)://youtube.com",
        acts: &[OPEN_URL],
        right: |v| opened(v, "youtube.com"),
    },
    Everyday {
        said: "Open GitHub.",
        want: "open_url http(s)://github.com",
        acts: &[OPEN_URL],
        right: |v| opened(v, "github.com"),
    },
    // Questions the model answers itself.
    Everyday {
        said: "What is the capital of France?",
        want: "no call, \"Paris\"",
        acts: &[],
        right: |v| answered(v, &["paris"]),
    },
    Everyday {
        said: "How many legs does a spider have?",
        want: "no call, \"eight\"",
        acts: &[],
        right: |v| answered(v, &["eight", "8"]),
    },
    Everyday {
        said: "Who wrote Romeo and Juliet?",
        want: "no call, \"Shakespeare\"",
        acts: &[],
        right: |v| answered(v, &["shakespeare"]),
    },
    Everyday {
        said: "What's the boiling point of water in Celsius?",
        want: "no call, \"100\"",
        acts: &[],
        right: |v| answered(v, &["100", "one hundred"]),
    },
    Everyday {
        said: "How do you say thank you in Spanish?",
        want: "no call, \"gracias\"",
        acts: &[],
        right: |v| answered(v, &["gracias"]),
    },
    Everyday {
        said: "What's the largest planet in the solar system?",
        want: "no call, \"Jupiter\"",
        acts: &[],
        right: |v| answered(v, &["jupiter"]),
    },
    Everyday {
        said: "Who painted the Mona Lisa?",
        want: "no call, \"Leonardo da Vinci\"",
        acts: &[],
        right: |v| answered(v, &["leonardo", "da vinci"]),
    },
    Everyday {
        said: "What's 15 plus 27?",
        want: "no call, \"42\"",
        acts: &[],
        right: |v| answered(v, &["42", "forty-two", "forty two"]),
    },
    // What no tool does: no call (but a read of the time) and an answer that says so.
    Everyday {
        said: "Turn off the kitchen lights.",
        want: "no call, an answer that says it cannot",
        acts: &[],
        right: |v| cannot(v),
    },
    Everyday {
        said: "Order me a pizza.",
        want: "no call, an answer that says it cannot",
        acts: &[],
        right: |v| cannot(v),
    },
    Everyday {
        said: "Call my mother.",
        want: "no call, an answer that says it cannot",
        acts: &[],
        right: |v| cannot(v),
    },
    Everyday {
        said: "Book a table for two tonight.",
        want: "no call (get_datetime aside), an answer that says it cannot",
        acts: &[],
        right: |v| cannot(v),
    },
    Everyday {
        said: "Turn the volume up.",
        want: "no call, an answer that says it cannot",
        acts: &[],
        right: |v| cannot(v),
    },
    // What was said before ([`SAID_BEFORE`] is in memory).
    Everyday {
        said: "What have I told you about my sister?",
        want: "recall_memories, search_recent_conversation or explore_memory_tree",
        acts: &[],
        right: |v| recalled(v),
    },
    Everyday {
        said: "Do you remember what I said about my new job?",
        want: "recall_memories, search_recent_conversation or explore_memory_tree",
        acts: &[],
        right: |v| recalled(v),
    },
    Everyday {
        said: "What did we talk about earlier?",
        want: "recall_memories, search_recent_conversation or explore_memory_tree",
        acts: &[],
        right: |v| recalled(v),
    },
];

/// A chat in memory before the everyday commands run (the user's lines, the assistant's),
/// for them to recall.
const SAID_BEFORE: [(&str, &str); 2] = [
    (
        "My sister Ana just moved to Porto, she works as a nurse there now.",
        "That's a big move for Ana! Porto is a lovely city.",
    ),
    (
        "I start my new job at the bakery on the first of next month.",
        "Congratulations on the new job at the bakery!",
    ),
];

/// Whether a call of `tool` reads and changes nothing that a person would notice: the time,
/// memory or the planner read.
fn reads(tool: &str) -> bool {
    tool == GET_DATETIME || memory::tools::is_recall(tool)
}

/// A question about the time or the date: `get_datetime` called, or no call and an answer
/// that `says` it.
fn told(v: &Verdict<'_>, says: fn(&Verdict<'_>) -> bool) -> bool {
    v.called(GET_DATETIME).next().is_some() || (v.calls.is_empty() && says(v))
}

/// The minutes from one before the command started to its end.
fn minutes_of(v: &Verdict<'_>) -> Vec<NaiveDateTime> {
    let mut at = v.now.with_second(0).unwrap_or(v.now) - TimeDelta::minutes(1);
    let mut out = Vec::new();
    while at <= v.end && out.len() < 60 {
        out.push(at);
        at += TimeDelta::minutes(1);
    }
    out
}

/// Whether the answer tells the time of one of those minutes: in 24 hours, or in 12 (with
/// or without a leading zero) and not in the wrong half of the day.
fn states_time(v: &Verdict<'_>) -> bool {
    let any =
        |forms: &[String]| holds(&v.answer, &forms.iter().map(String::as_str).collect::<Vec<_>>());
    minutes_of(v).iter().any(|at| {
        let full = ["%H:%M", "%-H:%M"].map(|f| at.format(f).to_string());
        let half = ["%I:%M", "%-I:%M"].map(|f| at.format(f).to_string());
        let (this, other) = if at.hour() < 12 {
            (["am", "a.m"], ["pm", "p.m"])
        } else {
            (["pm", "p.m"], ["am", "a.m"])
        };
        let with = |marks: [&str; 2]| -> Vec<String> {
            half.iter()
                .flat_map(|h| {
                    marks.iter().flat_map(move |m| [format!("{h}{m}"), format!("{h} {m}")])
                })
                .collect()
        };
        let said_half = any(&half) || any(&with(this));
        (any(&full) || said_half) && !any(&with(other))
    })
}

/// Whether the answer names today's weekday, and no other.
fn states_weekday(v: &Verdict<'_>) -> bool {
    let today: Vec<String> =
        [v.now, v.end].iter().map(|at| at.format("%A").to_string().to_lowercase()).collect();
    let named: Vec<&str> =
        ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
            .into_iter()
            .filter(|day| holds(&v.answer, &[day]))
            .collect();
    !named.is_empty() && named.iter().all(|day| today.iter().any(|t| t == day))
}

/// Whether the answer gives today's date: its month's name and its day's number, or in
/// numbers (`YYYY-MM-DD`, or day and month either way round with the year).
fn states_date(v: &Verdict<'_>) -> bool {
    [v.now, v.end].iter().any(|at| {
        let day = at.format("%-d").to_string();
        let days: Vec<String> = ["", "st", "nd", "rd", "th"].map(|s| format!("{day}{s}")).into();
        let days: Vec<&str> = days.iter().map(String::as_str).collect();
        let month = at.format("%B").to_string();
        let numeric = ["%Y-%m-%d", "%d/%m/%Y", "%-d/%-m/%Y", "%m/%d/%Y", "%-m/%-d/%Y"]
            .map(|f| at.format(f).to_string());
        holds(&v.answer, &numeric.each_ref().map(String::as_str))
            || (holds(&v.answer, &[month.as_str()]) && holds(&v.answer, &days))
    })
}

/// Whether the answer gives this year.
fn states_year(v: &Verdict<'_>) -> bool {
    [v.now, v.end].iter().any(|at| holds(&v.answer, &[at.format("%Y").to_string().as_str()]))
}

/// A `set_timer` for `minutes`, its label with `label` when one is asked for.
fn timer(v: &Verdict<'_>, minutes: f64, label: Option<&str>) -> bool {
    v.called(SET_TIMER).any(|a| {
        a["minutes"].as_f64().is_some_and(|m| (m - minutes).abs() < 1e-6)
            && label.is_none_or(|l| says(a, "label", l))
    })
}

/// When an `add_intention`'s reminder falls due, as memory reads its arguments: the earliest
/// and the latest it can be. `due_in_minutes` counts from when the call ran, some time
/// between the command's start and its end (a minute either side, for the minute a model
/// works from); else `due` is that minute (`YYYY-MM-DD HH:MM`, with a `T` too, or a day
/// alone at 09:00, as memory reads it).
fn due_of(v: &Verdict<'_>, args: &Value) -> Option<(NaiveDateTime, NaiveDateTime)> {
    if let Some(m) = args["due_in_minutes"].as_f64().filter(|m| *m > 0.0) {
        let after = TimeDelta::seconds((m * 60.0).round() as i64);
        let slack = TimeDelta::minutes(1);
        return Some((v.now + after - slack, v.end + after + slack));
    }
    let due = args["due"].as_str()?.trim();
    let at = NaiveDateTime::parse_from_str(due, "%Y-%m-%d %H:%M")
        .or_else(|_| NaiveDateTime::parse_from_str(due, "%Y-%m-%dT%H:%M"))
        .ok()
        .or_else(|| NaiveDate::parse_from_str(due, "%Y-%m-%d").ok()?.and_hms_opt(9, 0, 0))?;
    Some((at, at))
}

/// An `add_intention` with `key` in its text, due at one of `at`.
fn reminder(v: &Verdict<'_>, key: &str, at: &[NaiveDateTime]) -> bool {
    v.called(ADD_INTENTION).any(|a| {
        says(a, "text", key)
            && due_of(v, a).is_some_and(|(lo, hi)| at.iter().any(|w| lo <= *w && *w <= hi))
    })
}

/// "Remind me in `minutes` minutes to …": a `set_timer` of that length with `key` in its
/// label, or an `add_intention` with `key` in its text, due that long after the command (a
/// minute either side).
fn reminder_in(v: &Verdict<'_>, key: &str, minutes: i64) -> bool {
    let after = TimeDelta::minutes(minutes);
    let slack = TimeDelta::minutes(1);
    let (from, to) = (v.now + after - slack, v.end + after + slack);
    let timer = timer(v, minutes as f64, Some(key));
    timer
        || v.called(ADD_INTENTION).any(|a| {
            says(a, "text", key) && due_of(v, a).is_some_and(|(lo, hi)| lo <= to && from <= hi)
        })
}

/// `days` after the command's day, at `hour:minute`.
fn day_at(v: &Verdict<'_>, days: i64, hour: u32, minute: u32) -> NaiveDateTime {
    let day = v.now.date() + TimeDelta::days(days);
    day.and_hms_opt(hour, minute, 0).unwrap_or_default()
}

/// "On Friday at five": the next `day` at `hour:minute`; when today is that day and the hour
/// is still to come, today's too.
fn weekday_at(v: &Verdict<'_>, day: Weekday, hour: u32, minute: u32) -> Vec<NaiveDateTime> {
    let today = day_at(v, 0, hour, minute);
    let mut at = Vec::new();
    if v.now.weekday() == day && today > v.now {
        at.push(today);
    }
    at.extend((1..=7).map(|n| day_at(v, n, hour, minute)).find(|d| d.weekday() == day));
    at
}

/// "Next Wednesday at three": the coming `day` after today, or the one a week after it.
fn next_weekday_at(v: &Verdict<'_>, day: Weekday, hour: u32, minute: u32) -> Vec<NaiveDateTime> {
    let coming = (1..=7).map(|n| day_at(v, n, hour, minute)).find(|d| d.weekday() == day);
    coming.into_iter().flat_map(|d| [d, d + TimeDelta::days(7)]).collect()
}

/// Whether task `task` has `key` in its title or goal.
fn has(task: &TaskEntry, key: &str) -> bool {
    words(&task.title).contains(key) || words(&task.goal).contains(key)
}

/// The ids of the tasks with `key` in their title or goal.
fn task_ids(tasks: &[TaskEntry], key: &str) -> Vec<i64> {
    tasks.iter().filter(|t| has(t, key)).map(|t| t.id).collect()
}

/// Whether a call's `task_id` is one of `ids` (in any spelling the planner takes).
fn of_task(args: &Value, ids: &[i64]) -> bool {
    memory::plans::whole(&args["task_id"]).is_some_and(|id| ids.contains(&id))
}

/// A task made with `key` in its title: `create_task`, or `break_down_task` with a title
/// (which makes the task it plans).
fn made_task(v: &Verdict<'_>, key: &str) -> bool {
    MAKE_TASK.iter().any(|tool| v.called(tool).any(|a| says(a, "title", key)))
}

/// The planner asked what there is to do.
fn asked_planner(v: &Verdict<'_>) -> bool {
    [memory::plans::GET_NEXT_ACTIONS, memory::plans::LIST_TASKS]
        .iter()
        .any(|tool| v.called(tool).next().is_some())
}

/// An `update_task_status` of a task with `key` (as it was before the command) to `status`.
fn status_set(v: &Verdict<'_>, key: &str, status: &str) -> bool {
    let ids = task_ids(v.tasks, key);
    v.called(memory::plans::UPDATE_TASK_STATUS)
        .any(|a| of_task(a, &ids) && a["status"].as_str().map(str::trim) == Some(status))
}

/// A `reschedule` of a task with `key` a week later: `shift_days` 7, or a `due` a week
/// after the one it had, and neither given otherwise.
fn week_later(v: &Verdict<'_>, key: &str) -> bool {
    let ids = task_ids(v.tasks, key);
    v.called(memory::plans::RESCHEDULE).any(|a| {
        let Some(id) = memory::plans::whole(&a["task_id"]).filter(|id| ids.contains(id)) else {
            return false;
        };
        let later = v
            .tasks
            .iter()
            .find(|t| t.id == id)
            .and_then(|t| NaiveDate::parse_from_str(t.due.as_deref()?, "%Y-%m-%d").ok())
            .map(|d| (d + TimeDelta::days(7)).format("%Y-%m-%d").to_string());
        let shift = memory::plans::whole(&a["shift_days"]).unwrap_or(0);
        let due = a["due"].as_str().map(str::trim).filter(|d| !d.is_empty());
        let due_right = due.is_some() && due == later.as_deref();
        (shift == 0 || shift == 7) && (due.is_none() || due_right) && (shift == 7 || due_right)
    })
}

/// A `clipboard_copy` of `text` (in words: case and punctuation aside).
fn copied(v: &Verdict<'_>, text: &str) -> bool {
    v.called(CLIPBOARD_COPY).any(|a| words(a["text"].as_str().unwrap_or_default()) == text)
}

/// A `notify` with one of `texts` in its title or body.
fn notified(v: &Verdict<'_>, texts: &[&str]) -> bool {
    v.called(NOTIFY).any(|a| texts.iter().any(|t| says(a, "title", t) || says(a, "body", t)))
}

/// An `open_url` of a page of `site`.
fn opened(v: &Verdict<'_>, site: &str) -> bool {
    v.called(OPEN_URL).any(|a| web_page(a, site))
}

/// A question answered without a call, the answer with one of `spellings`.
fn answered(v: &Verdict<'_>, spellings: &[&str]) -> bool {
    v.calls.is_empty() && holds(&v.answer, spellings)
}

/// What no tool does: no call but a read of the time, and an answer that says it cannot.
fn cannot(v: &Verdict<'_>) -> bool {
    v.calls.iter().all(|(tool, _)| *tool == GET_DATETIME) && refuses(&v.answer)
}

/// Memory asked for what was said before.
fn recalled(v: &Verdict<'_>) -> bool {
    [memory::tools::RECALL, memory::tools::SEARCH_RECENT, memory::tools::EXPLORE_TREE]
        .iter()
        .any(|tool| v.called(tool).next().is_some())
}

/// Whether an answer says that it cannot do what was asked.
fn refuses(answer: &str) -> bool {
    let answer = answer.to_lowercase().replace('\u{2019}', "'");
    [
        "can't",
        "cannot",
        "can not",
        "unable",
        "not able",
        "no tool",
        "don't have",
        "do not have",
        "not possible",
        "isn't possible",
        "not available",
        "sorry",
    ]
    .iter()
    .any(|w| answer.contains(w))
}

/// Whether the call's string `key` has the words `want`.
fn says(args: &Value, key: &str, want: &str) -> bool {
    words(args[key].as_str().unwrap_or_default()).contains(want)
}

/// Whether the call's `url` is an http(s) link to `site` or a host under it (its front page
/// or any).
fn web_page(args: &Value, site: &str) -> bool {
    let url = args["url"].as_str().unwrap_or_default().trim().to_ascii_lowercase();
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
    let host = rest.map(|r| r.split(['/', '?', '#']).next().unwrap_or_default());
    host.is_some_and(|h| h == site || h.strip_suffix(site).is_some_and(|sub| sub.ends_with('.')))
}

/// `text` lower-cased, its punctuation dropped, its words single-spaced.
fn words(text: &str) -> String {
    let kept: String = text
        .to_lowercase()
        .chars()
        .map(|c| if c.is_alphanumeric() || c == '\'' { c } else { ' ' })
        .collect();
    kept.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Short questions for chat, and the words a right answer has (any of them).
const FACTS: [(&str, &[&str]); 5] = [
    ("Name a primary colour.", &["red", "blue", "yellow"]),
    ("What is the capital of Australia?", &["canberra"]),
    ("What is the chemical symbol for gold?", &["au"]),
    ("In which year did the Second World War end?", &["1945"]),
    ("How many legs does a spider have?", &["eight", "8"]),
];

/// A planted fact: what it is, the spellings that keep it, and the values that would
/// contradict it (an old value the chat changed later).
struct Fact {
    what: &'static str,
    kept: &'static [&'static str],
    wrong: &'static [&'static str],
}

/// A made-up chat of 20 turns (the user's words, the assistant's), the user's next message
/// (which makes the 20 turns due for a summary), and the facts its summary must keep.
struct SummaryChat {
    topic: &'static str,
    turns: [(&'static str, &'static str); 20],
    next: &'static str,
    facts: &'static [Fact],
}

/// Shorthand for the tables below.
const fn fact(what: &'static str, kept: &'static [&'static str]) -> Fact {
    Fact { what, kept, wrong: &[] }
}

const CHATS: [SummaryChat; 3] = [
    SummaryChat {
        topic: "a trip to Porto",
        turns: [
            (
                "I'm planning a trip to Porto to see my sister Ines.",
                "Lovely! How long will you stay?",
            ),
            ("Three nights. I fly out on the 14th of March.", "Noted: three nights from 14 March."),
            (
                "The flight leaves at 7:45 in the morning, so I need to be at the airport early.",
                "Then aim to be at the airport by 6:15.",
            ),
            (
                "What's the weather usually like there in March?",
                "Mild and often rainy, around 15 degrees.",
            ),
            ("Good, I'll pack a rain jacket.", "Good idea."),
            (
                "I booked a room at Casa Azul, it's near the river.",
                "Casa Azul by the river, noted.",
            ),
            (
                "My budget for the whole trip is 600 euros.",
                "600 euros should be enough for three nights if you're careful.",
            ),
            (
                "I was going to rent a car to get around.",
                "A car gives you freedom, but parking in Porto is hard.",
            ),
            ("Any good food I should try?", "Try a francesinha and some pasteis de nata."),
            (
                "Ines says the francesinha at her local cafe is the best.",
                "Then you know where to go.",
            ),
            (
                "Actually, forget the car. I'll take the train from the airport instead.",
                "The train it is, then. It's cheaper too.",
            ),
            (
                "My colleague Tomas will cover my work while I'm away.",
                "Good that Tomas can cover for you.",
            ),
            ("Do I need to bring anything for Ines?", "A small gift is always nice."),
            ("She likes dark chocolate, I'll bring some.", "Dark chocolate for Ines, noted."),
            ("What's a good day trip from Porto?", "The Douro valley is a beautiful day trip."),
            ("Maybe, if the weather is good.", "Keep it as an option."),
            ("I should also tell my landlord I'm away.", "A quick message should do."),
            ("How do you say thank you in Portuguese?", "Obrigado, or obrigada from a woman."),
            ("Obrigado then. I think that's everything for the trip.", "Sounds well planned."),
            ("Thanks for the help.", "You're welcome, enjoy Porto!"),
        ],
        next: "Oh, and is Portugal in the same time zone as London?",
        facts: &[
            fact("sister Ines", &["ines"]),
            fact(
                "flies on 14 March",
                &["14 march", "march 14", "14th of march", "march 14th", "14th march"],
            ),
            fact("flight at 7:45", &["7:45", "7.45", "07:45", "seven forty-five"]),
            fact("three nights", &["three nights", "3 nights"]),
            fact("hotel Casa Azul", &["casa azul"]),
            fact("budget 600 euros", &["600", "six hundred"]),
            Fact {
                what: "train from the airport, not a car",
                kept: &["train"],
                wrong: &["rent a car", "rental car", "hire a car", "by car"],
            },
            fact("colleague Tomas covers", &["tomas", "tomás"]),
        ],
    },
    SummaryChat {
        topic: "a kitchen renovation",
        turns: [
            ("We're finally redoing the kitchen.", "Exciting! Who is doing the work?"),
            ("A contractor called Bogdan. He came round yesterday.", "What did Bogdan think?"),
            ("His quote is 4,800 euros for everything.", "4,800 euros, materials included?"),
            (
                "Yes, materials included. We already paid a deposit of 1,200.",
                "So 3,600 is left to pay.",
            ),
            ("He wants to start on the 26th of May.", "Noted: the work starts on 26 May."),
            ("It should take about three weeks.", "Three weeks, so done by the middle of June."),
            (
                "For the tiles we're thinking sage green.",
                "Sage green is a calm choice for a kitchen.",
            ),
            ("My partner loves it too.", "Then it's settled."),
            ("We also need a new dishwasher.", "Any brand in mind?"),
            ("A Bosch, the quiet one.", "Bosch dishwashers are reliable."),
            (
                "How do I keep the dust out of the living room?",
                "Hang plastic sheeting over the doorway and tape the edges.",
            ),
            ("Good tip.", "Glad it helps."),
            (
                "Bogdan just called: he can't start in May, so the start moves to the 2nd of June.",
                "Okay, the work now starts on 2 June.",
            ),
            ("We'll be away that first weekend anyway.", "Handy timing."),
            (
                "Our neighbour Mrs Okafor will keep the spare key for Bogdan.",
                "Mrs Okafor has the spare key, noted.",
            ),
            (
                "Should we eat out while the work is going on?",
                "A microwave in another room helps a lot.",
            ),
            ("We'll set up the microwave in the dining room.", "Good plan."),
            (
                "What should I ask Bogdan before he starts?",
                "Ask about the schedule, taking the rubbish away and when to pay.",
            ),
            ("He said the rest is paid when it's finished.", "So the rest is due on completion."),
            ("Thanks, that helps.", "Good luck with the kitchen!"),
        ],
        next: "Remind me, what colour were the tiles going to be?",
        facts: &[
            fact("contractor Bogdan", &["bogdan"]),
            fact("quote 4,800 euros", &["4,800", "4800", "4.800", "4 800"]),
            fact("deposit 1,200 paid", &["1,200", "1200", "1.200", "1 200"]),
            Fact {
                what: "starts on 2 June (moved from 26 May)",
                kept: &[
                    "2 june",
                    "june 2",
                    "2nd of june",
                    "june 2nd",
                    "2nd june",
                    "june second",
                    "second of june",
                ],
                wrong: &["26 may", "may 26", "26th of may", "may 26th", "26th may"],
            },
            fact("takes three weeks", &["three weeks", "3 weeks"]),
            fact("sage green tiles", &["sage"]),
            fact("Bosch dishwasher", &["bosch"]),
            fact("Mrs Okafor keeps the key", &["okafor"]),
        ],
    },
    SummaryChat {
        topic: "a birthday party and the dentist",
        turns: [
            ("My son Leo turns 8 next month.", "How exciting! Are you planning a party?"),
            ("Yes, on Saturday the 9th of November.", "Saturday 9 November, noted."),
            ("We invited 12 kids from his class.", "12 kids makes a lively party."),
            ("It's at the climbing gym, Boulderhaus.", "Boulderhaus sounds fun for that age."),
            ("It starts at 3 pm and goes on for two hours.", "From 3 until 5 then."),
            ("Any ideas for the cake?", "Chocolate cake is always popular."),
            ("Leo wants chocolate with raspberries.", "Chocolate and raspberry it is."),
            ("My mother will bake it.", "How nice of her."),
            ("What should go in the party bags?", "Stickers, a small toy and some sweets."),
            ("Nothing too sugary though.", "Then pencils or a bouncy ball."),
            (
                "Separate thing: I have a dentist appointment with Dr Haddad on Tuesday.",
                "Noted: Dr Haddad on Tuesday.",
            ),
            ("It's at 4:30.", "Tuesday at 4:30."),
            ("Can you remind me to floss more?", "I can set a reminder whenever you like."),
            (
                "Later. What's good for sensitive teeth?",
                "A toothpaste for sensitive teeth and a soft brush.",
            ),
            (
                "The dentist's office called, they moved my appointment to Thursday, same time.",
                "Okay: Dr Haddad on Thursday at 4:30.",
            ),
            ("That works better anyway.", "Good."),
            (
                "Back to the party: should I hire an entertainer?",
                "At a climbing gym the climbing is the entertainment.",
            ),
            ("True. I'll ask Boulderhaus if they give a tour.", "Good idea."),
            ("I think we're all set.", "Sounds like a great party."),
            ("Thanks!", "You're welcome."),
        ],
        next: "What was I going to ask the gym?",
        facts: &[
            fact("son Leo", &["leo"]),
            fact("turns 8", &["8", "eight", "8th", "eighth"]),
            fact(
                "party on 9 November",
                &[
                    "9 november",
                    "november 9",
                    "9th of november",
                    "november 9th",
                    "9th november",
                    "nov 9",
                ],
            ),
            fact("12 kids", &["12", "twelve"]),
            fact("at Boulderhaus", &["boulderhaus"]),
            fact("chocolate cake with raspberries", &["raspberry", "raspberries"]),
            fact("dentist Dr Haddad", &["haddad"]),
            Fact {
                what: "dentist on Thursday (moved from Tuesday)",
                kept: &["thursday"],
                wrong: &["tuesday"],
            },
            fact("at 4:30", &["4:30", "4.30", "16:30", "half past four"]),
        ],
    },
];

/// An old note and new information for the dream's correction check; the spellings of the
/// new value and of the old; whether the new information corrects the note (when it does
/// not, the note must stay as it was).
struct Rewrite {
    was: &'static str,
    now: &'static str,
    new: &'static [&'static str],
    old: &'static [&'static str],
    corrects: bool,
}

const REWRITES: [Rewrite; 11] = [
    Rewrite {
        was: "The user's sister lives in Lisbon.",
        now: "The user's sister moved to Porto last month.",
        new: &["porto"],
        old: &["lisbon"],
        corrects: true,
    },
    Rewrite {
        was: "The dentist appointment is on Tuesday at 10.",
        now: "The dentist moved the appointment to Friday.",
        new: &["friday"],
        old: &["tuesday"],
        corrects: true,
    },
    Rewrite {
        was: "The user's gym membership costs 30 euros a month.",
        now: "The gym raised the price to 35 euros a month.",
        new: &["35"],
        old: &["30"],
        corrects: true,
    },
    Rewrite {
        was: "The user's son Leo is 7 years old.",
        now: "Leo turned 8 yesterday.",
        new: &["8", "eight"],
        old: &["7", "seven"],
        corrects: true,
    },
    Rewrite {
        was: "The user drives a grey Skoda.",
        now: "The user sold the Skoda and now drives a blue Volvo.",
        new: &["volvo"],
        old: &["skoda"],
        corrects: true,
    },
    Rewrite {
        was: "The team meeting is at 9:30 on Mondays.",
        now: "From next week the team meeting starts at 10:15.",
        new: &["10:15"],
        old: &["9:30"],
        corrects: true,
    },
    Rewrite {
        was: "The user's manager is called Priya.",
        now: "The user has a new manager, Daniel.",
        new: &["daniel"],
        old: &["priya"],
        corrects: true,
    },
    Rewrite {
        was: "The user's sister lives in Lisbon.",
        now: "The user's brother lives in Madrid.",
        new: &["madrid"],
        old: &["lisbon"],
        corrects: false,
    },
    Rewrite {
        was: "The user is allergic to peanuts.",
        now: "The user started learning the piano.",
        new: &["piano"],
        old: &["peanut", "peanuts"],
        corrects: false,
    },
    // Something else about the same person or thing: the note stands.
    Rewrite {
        was: "The user's sister lives in Lisbon.",
        now: "The user's sister is a nurse.",
        new: &["nurse"],
        old: &["lisbon"],
        corrects: false,
    },
    Rewrite {
        was: "The user plays tennis on Saturdays.",
        now: "The user's tennis partner is Marco.",
        new: &["marco"],
        old: &["saturdays", "saturday"],
        corrects: false,
    },
];

/// Whether `text` has any of `spellings` as words of their own, case aside.
fn holds(text: &str, spellings: &[&str]) -> bool {
    let text = text.to_lowercase();
    spellings.iter().any(|spelling| {
        let spelling = spelling.to_lowercase();
        text.match_indices(&spelling).any(|(at, _)| {
            let before = text[..at].chars().next_back();
            let after = text[at + spelling.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
        })
    })
}

/// The numbers in `text`: runs of digits, thousands separators dropped, leading zeros too.
fn numbers(text: &str) -> BTreeSet<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut joined = String::new();
    for (i, c) in chars.iter().enumerate() {
        let between_digits = i > 0
            && chars[i - 1].is_ascii_digit()
            && chars.get(i + 1).is_some_and(char::is_ascii_digit);
        if !(*c == ',' && between_digits) {
            joined.push(*c);
        }
    }
    joined
        .split(|c: char| !c.is_ascii_digit())
        .filter(|run| !run.is_empty())
        .map(|run| {
            let trimmed = run.trim_start_matches('0');
            if trimmed.is_empty() { "0".to_owned() } else { trimmed.to_owned() }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// The recording proxy.
// ---------------------------------------------------------------------------------------

/// A request the proxy forwarded, and the response as it came.
#[derive(Debug)]
struct Exchange {
    /// When the proxy had the whole request.
    sent: Instant,
    request: Value,
    raw: Vec<u8>,
    /// When each read of the response ended, and how many bytes there were by then.
    reads: Vec<(Instant, usize)>,
    done: Instant,
}

/// A recording HTTP proxy in front of the model's server: every request of the lanes goes
/// through it, one per connection (`Connection: close` both ways), so that each response is
/// timed as it arrives and kept whole.
#[derive(Debug)]
struct Proxy {
    /// The chat completions URL to give the lanes.
    url: String,
    log: Arc<Mutex<Vec<Exchange>>>,
    /// Connections being served.
    open: Arc<AtomicUsize>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Proxy {
    /// A proxy for `upstream`, an `http://` chat completions URL.
    fn start(upstream: &str) -> Self {
        let rest = upstream
            .strip_prefix("http://")
            .unwrap_or_else(|| panic!("the proxy takes http:// URLs, not {upstream}"));
        let (authority, path) =
            rest.split_once('/').map_or((rest, String::new()), |(a, p)| (a, format!("/{p}")));
        let authority =
            if authority.contains(':') { authority.to_owned() } else { format!("{authority}:80") };
        let listener = TcpListener::bind("127.0.0.1:0")
            .unwrap_or_else(|e| panic!("cannot listen on loopback: {e}"));
        let port = listener.local_addr().map_or(0, |a| a.port());
        let log: Arc<Mutex<Vec<Exchange>>> = Arc::default();
        let open = Arc::new(AtomicUsize::new(0));
        let (accept_log, accept_open) = (Arc::clone(&log), Arc::clone(&open));
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                accept_open.fetch_add(1, Ordering::SeqCst);
                let (log, open, authority) =
                    (Arc::clone(&accept_log), Arc::clone(&accept_open), authority.clone());
                std::thread::spawn(move || {
                    if let Some(exchange) = forward(client, &authority) {
                        lock(&log).push(exchange);
                    }
                    open.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        Self { url: format!("http://127.0.0.1:{port}{path}"), log, open }
    }

    /// What the model sent back since the last call, request by request, once every
    /// connection is over.
    fn take(&self) -> Vec<Output> {
        let idle = stt_testkit::wait_until(Duration::from_secs(60), || {
            (self.open.load(Ordering::SeqCst) == 0).then_some(())
        });
        if idle.is_none() {
            eprintln!("bench-llm: a request through the proxy is still open after 60 s");
        }
        let mut exchanges = std::mem::take(&mut *lock(&self.log));
        exchanges.sort_by_key(|e| e.sent);
        exchanges.iter().map(Output::of).collect()
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The value of the header `name` in an HTTP head.
fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines()
        .skip(1)
        .filter_map(|line| line.split_once(':'))
        .find(|(key, _)| key.trim().eq_ignore_ascii_case(name))
        .map(|(_, value)| value.trim())
}

/// Reads one request: its head and body.
fn read_request(client: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    let head_end = loop {
        if let Some(at) = find(&data, b"\r\n\r\n") {
            break at + 4;
        }
        let n = client.read(&mut buf).ok().filter(|&n| n > 0)?;
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let length: usize = header(&head, "content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
    while data.len() < head_end + length {
        let n = client.read(&mut buf).ok().filter(|&n| n > 0)?;
        data.extend_from_slice(&buf[..n]);
    }
    Some((head, data[head_end..].to_vec()))
}

/// The request's head for `authority`: one request on the connection, no compression.
fn rewrite_head(head: &str, authority: &str) -> String {
    let mut lines = head.split("\r\n").filter(|l| !l.is_empty());
    let mut out = format!("{}\r\n", lines.next().unwrap_or_default());
    for line in lines {
        let name = line.split(':').next().unwrap_or_default().trim().to_ascii_lowercase();
        if !["host", "connection", "keep-alive", "accept-encoding"].contains(&name.as_str()) {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str(&format!("Host: {authority}\r\nConnection: close\r\n\r\n"));
    out
}

/// A chunked body decoded, and whether its last chunk came.
fn dechunk(body: &[u8]) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        let Some(line) = find(&body[at..], b"\r\n") else { return (out, false) };
        let size = String::from_utf8_lossy(&body[at..at + line]);
        let Ok(size) = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16)
        else {
            return (out, false);
        };
        at += line + 2;
        if size == 0 {
            return (out, true);
        }
        if body.len() < at + size {
            out.extend_from_slice(&body[at..]);
            return (out, false);
        }
        out.extend_from_slice(&body[at..at + size]);
        at += size + 2;
        if at > body.len() {
            return (out, false);
        }
    }
}

/// Whether a response has come whole.
fn response_complete(raw: &[u8]) -> bool {
    let Some(head_end) = find(raw, b"\r\n\r\n").map(|at| at + 4) else { return false };
    let head = String::from_utf8_lossy(&raw[..head_end]);
    if header(&head, "transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        return dechunk(&raw[head_end..]).1;
    }
    header(&head, "content-length")
        .and_then(|v| v.parse::<usize>().ok())
        .is_some_and(|length| raw.len() - head_end >= length)
}

/// Forwards one request from `client` to `authority` and the response back, as it comes.
fn forward(mut client: TcpStream, authority: &str) -> Option<Exchange> {
    let _ = client.set_read_timeout(Some(Duration::from_secs(30)));
    let (head, body) = read_request(&mut client)?;
    let sent = Instant::now();
    let mut upstream = TcpStream::connect(authority).ok()?;
    let _ = upstream.set_read_timeout(Some(Duration::from_secs(900)));
    upstream.write_all(rewrite_head(&head, authority).as_bytes()).ok()?;
    upstream.write_all(&body).ok()?;
    let (mut raw, mut reads) = (Vec::new(), Vec::new());
    let mut buf = vec![0u8; 1 << 16];
    while let Ok(n) = upstream.read(&mut buf) {
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
        reads.push((Instant::now(), raw.len()));
        if client.write_all(&buf[..n]).is_err() || response_complete(&raw) {
            break;
        }
    }
    let _ = client.shutdown(Shutdown::Both);
    let request = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(Exchange { sent, request, raw, reads, done: Instant::now() })
}

/// llama-server's own figures for one request.
#[derive(Debug, Clone, Copy, Default)]
struct Timings {
    /// Prompt tokens read, and in how long.
    prompt_n: f64,
    prompt_ms: f64,
    /// Prompt tokens served from its cache.
    cache_n: f64,
    predicted_n: f64,
    predicted_ms: f64,
}

/// What the model sent back for one request.
#[derive(Debug)]
struct Output {
    status: u16,
    /// The text, or the error's body.
    content: String,
    /// Calls the server returned as such: (name, arguments as written).
    calls: Vec<(String, String)>,
    finish: String,
    prompt_tokens: u64,
    completion_tokens: u64,
    timings: Option<Timings>,
    streamed: bool,
    /// When the first piece of text or of a call reached the proxy.
    first: Option<Instant>,
    sent: Instant,
    done: Instant,
    max_tokens: Option<u64>,
    /// The request's last message, for inspection.
    asked: String,
    /// The names of the tools the request offered.
    offered: Vec<String>,
}

/// Whether an SSE line carries a piece of text or of a call.
fn token_line(line: &str) -> bool {
    let Some(data) = line.trim().strip_prefix("data:") else { return false };
    let Ok(event) = serde_json::from_str::<Value>(data.trim()) else { return false };
    let delta = &event["choices"][0]["delta"];
    let text = |key: &str| delta[key].as_str().is_some_and(|s| !s.is_empty());
    text("content")
        || text("reasoning_content")
        || delta["tool_calls"].as_array().is_some_and(|c| !c.is_empty())
}

impl Output {
    fn of(exchange: &Exchange) -> Self {
        let raw = &exchange.raw;
        let head_end = find(raw, b"\r\n\r\n").map_or(raw.len(), |at| at + 4);
        let head = String::from_utf8_lossy(&raw[..head_end]).into_owned();
        let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let body = if header(&head, "transfer-encoding").is_some_and(|v| v.contains("chunked")) {
            dechunk(&raw[head_end..]).0
        } else {
            raw[head_end..].to_vec()
        };
        let text = String::from_utf8_lossy(&body).into_owned();
        let request = &exchange.request;
        let asked = request["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_owned();
        let mut out = Self {
            status,
            content: String::new(),
            calls: Vec::new(),
            finish: String::new(),
            prompt_tokens: 0,
            completion_tokens: 0,
            timings: None,
            streamed: text.trim_start().starts_with("data:"),
            first: None,
            sent: exchange.sent,
            done: exchange.done,
            max_tokens: request["max_tokens"].as_u64(),
            asked,
            offered: request["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                .collect(),
        };
        if out.streamed {
            for line in text.lines() {
                let Some(data) = line.trim().strip_prefix("data:") else { continue };
                if let Ok(event) = serde_json::from_str::<Value>(data.trim()) {
                    out.merge_piece(&event);
                }
            }
            out.first = first_token(exchange, head_end);
        } else if let Ok(reply) = serde_json::from_str::<Value>(&text) {
            let message = &reply["choices"][0]["message"];
            out.content = message["content"].as_str().unwrap_or_default().to_owned();
            for call in message["tool_calls"].as_array().into_iter().flatten() {
                let name = call["function"]["name"].as_str().unwrap_or_default().to_owned();
                let args = &call["function"]["arguments"];
                out.calls
                    .push((name, args.as_str().map_or_else(|| args.to_string(), str::to_owned)));
            }
            out.finish = reply["choices"][0]["finish_reason"].as_str().unwrap_or_default().into();
            out.figures(&reply);
        }
        if status != 200 {
            out.content = text;
        }
        out
    }

    /// One streamed event added in.
    fn merge_piece(&mut self, event: &Value) {
        let choice = &event["choices"][0];
        let delta = &choice["delta"];
        if let Some(piece) = delta["content"].as_str() {
            self.content.push_str(piece);
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = usize::try_from(call["index"].as_u64().unwrap_or(0)).unwrap_or(0);
            while self.calls.len() <= index {
                self.calls.push((String::new(), String::new()));
            }
            if let Some(name) = call["function"]["name"].as_str() {
                self.calls[index].0.push_str(name);
            }
            if let Some(args) = call["function"]["arguments"].as_str() {
                self.calls[index].1.push_str(args);
            }
        }
        if let Some(finish) = choice["finish_reason"].as_str() {
            finish.clone_into(&mut self.finish);
        }
        self.figures(event);
    }

    /// Usage and timings, where the event has them.
    fn figures(&mut self, event: &Value) {
        let usage = &event["usage"];
        if usage.is_object() {
            self.prompt_tokens = usage["prompt_tokens"].as_u64().unwrap_or(0);
            self.completion_tokens = usage["completion_tokens"].as_u64().unwrap_or(0);
        }
        let t = &event["timings"];
        if t.is_object() {
            let f = |key: &str| t[key].as_f64().unwrap_or(0.0);
            self.timings = Some(Timings {
                prompt_n: f("prompt_n"),
                prompt_ms: f("prompt_ms"),
                cache_n: f("cache_n"),
                predicted_n: f("predicted_n"),
                predicted_ms: f("predicted_ms"),
            });
        }
    }

    /// The output as saved for inspection; times in ms from `start`.
    fn json(&self, start: Instant) -> Value {
        let ms = |t: Instant| round(ms_between(start, t));
        json!({
            "status": self.status,
            "asked": self.asked,
            "tools": self.offered,
            "max_tokens": self.max_tokens,
            "content": self.content,
            "tool_calls": self.calls.iter().map(|(n, a)| json!({"name": n, "arguments": a})).collect::<Vec<_>>(),
            "finish": self.finish,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "timings": self.timings.map(|t| json!({"prompt_n": t.prompt_n, "prompt_ms": round(t.prompt_ms), "cache_n": t.cache_n, "predicted_n": t.predicted_n, "predicted_ms": round(t.predicted_ms)})),
            "sent_ms": ms(self.sent),
            "first_token_ms": self.first.map(ms),
            "done_ms": ms(self.done),
        })
    }
}

/// When the first line carrying a piece of text or of a call reached the proxy.
fn first_token(exchange: &Exchange, head_end: usize) -> Option<Instant> {
    let mut from = head_end;
    let mut pending = String::new();
    for &(at, end) in &exchange.reads {
        if end <= from {
            continue;
        }
        pending.push_str(&String::from_utf8_lossy(&exchange.raw[from..end]));
        from = end;
        while let Some(newline) = pending.find('\n') {
            if token_line(&pending[..newline]) {
                return Some(at);
            }
            pending.drain(..=newline);
        }
    }
    None
}

fn ms_between(from: Instant, to: Instant) -> f64 {
    to.saturating_duration_since(from).as_secs_f64() * 1000.0
}

fn round(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

// ---------------------------------------------------------------------------------------
// llama-server, the lanes and the jobs.
// ---------------------------------------------------------------------------------------

/// llama-server on one model, started as `stt-daemon up` starts it; killed when dropped.
#[derive(Debug)]
struct Llama {
    child: Child,
    port: u16,
    /// From the spawn to `GET /health` answering 200.
    load: Duration,
}

impl Llama {
    /// Starts `model` on a free port, its log in `dir`, and waits until it is ready.
    fn start(model: &Path, dir: &Path, name: &str) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or_else(|e| panic!("no free port: {e}"));
        let launch = launch(model, port);
        let mut args = launch.args();
        args.extend(["--slot-save-path".into(), Self::slots(dir).into_os_string()]);
        let log = dir.join(format!("{name}.log"));
        let out = File::create(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
        let err = out.try_clone().unwrap_or_else(|e| panic!("{}: {e}", log.display()));
        let started = Instant::now();
        std::fs::create_dir_all(Self::slots(dir))
            .unwrap_or_else(|e| panic!("{}: {e}", Self::slots(dir).display()));
        let child = Command::new(&launch.program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", launch.program.display()));
        let mut server = Self { child, port, load: Duration::ZERO };
        stt_testkit::expect_within(
            "llama-server answers GET /health with 200",
            LOAD_PATIENCE,
            || {
                if let Ok(Some(status)) = server.child.try_wait() {
                    let said = std::fs::read_to_string(&log).unwrap_or_default();
                    panic!("llama-server exited ({status}); its log:\n{said}");
                }
                match stt_testkit::llama::health(port) {
                    Some(200) => Ok(()),
                    other => Err(format!("{other:?}")),
                }
            },
        );
        server.load = started.elapsed();
        server
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1/chat/completions", self.port)
    }

    /// Where its slots are saved (`--slot-save-path`, as `up` gives one), under `dir`.
    fn slots(dir: &Path) -> PathBuf {
        dir.join("llama-slots")
    }

    /// Its peak resident memory so far (VmHWM), in KiB.
    fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }
}

impl Drop for Llama {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How `stt-daemon up` runs `model` on `port`: a thread per CPU, as `up::model::facts` counts
/// them.
fn launch(model: &Path, port: u16) -> Launch {
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    Launch { program: stt_testkit::llama::server_program(), model: model.to_owned(), port, threads }
}

/// llama-server's arguments as `up` gives them, the model and the port as placeholders.
fn shown_args() -> String {
    let launch = launch(Path::new("MODEL.gguf"), 1);
    let mut shown = vec!["llama-server".to_owned()];
    let mut after_port = false;
    for arg in launch.args() {
        let arg = arg.to_string_lossy().into_owned();
        shown.push(if after_port { "PORT".to_owned() } else { arg.clone() });
        after_port = arg == "--port";
    }
    shown.push("--slot-save-path DIR".to_owned());
    shown.join(" ")
}

/// What every lane of the battery shares: the default config's settings and tools.
#[derive(Debug)]
struct Base {
    settings: Arc<llm::Settings>,
    tools: Arc<stt_tools::Registry>,
    /// The names of every tool a command may call: the registry's, memory's and the
    /// planner's, and the wake-ups' (any other name is one the model made up).
    offered: Vec<String>,
    connect: Duration,
    idle: Duration,
}

impl Base {
    fn new() -> Self {
        let config = stt_config::Config::default();
        let settings =
            stt_assistant::Settings::from_config(&config, &stt_config::Env::from_process())
                .unwrap_or_else(|e| panic!("the default config's settings: {e:#}"));
        let tools = stt_tools::Registry::configured(&settings.tools, &settings.models)
            .unwrap_or_else(|e| panic!("the default config's tools: {e}"));
        let offered = tools
            .specs()
            .map(|s| s.name.clone())
            .chain(memory::tools::command_tools().map(str::to_owned))
            .chain(stt_assistant::wake::TOOLS.iter().map(|n| (*n).to_owned()))
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
    fn env(&self, url: &str, slots: bool, memory: Option<memory::Memory>) -> JobEnv {
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
enum Seen {
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
    fn json(&self) -> Value {
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
struct Ran {
    start: Instant,
    seen: Vec<(Instant, Seen)>,
    end: Instant,
}

impl Ran {
    fn calls(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.seen.iter().filter_map(|(_, s)| match s {
            Seen::Call { tool, args } => Some((tool.as_str(), args)),
            _ => None,
        })
    }

    fn reply(&self) -> String {
        self.seen
            .iter()
            .find_map(|(_, s)| match s {
                Seen::Reply(text) => Some(text.clone()),
                _ => None,
            })
            .unwrap_or_default()
    }

    fn end_ms(&self) -> f64 {
        ms_between(self.start, self.end)
    }

    /// The first streamed piece of the reply line.
    fn first_piece_ms(&self) -> Option<f64> {
        self.seen
            .iter()
            .find(|(_, s)| matches!(s, Seen::Piece))
            .map(|(t, _)| ms_between(self.start, *t))
    }

    fn json(&self) -> Value {
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
struct Job {
    ran: Ran,
    outputs: Vec<Output>,
}

impl Job {
    fn run(runtime: &Runtime, env: &JobEnv, proxy: Option<&Proxy>, work: Work) -> Self {
        let ran = runtime.block_on(run(env, work));
        let outputs = proxy.map(Proxy::take).unwrap_or_default();
        Self { ran, outputs }
    }

    /// `said` as the `n`th command.
    fn command(runtime: &Runtime, env: &JobEnv, proxy: Option<&Proxy>, said: &str, n: u64) -> Self {
        let work =
            Work::Command { text: said.to_owned(), edited: false, episode: Episode::Command(n) };
        Self::run(runtime, env, proxy, work)
    }

    /// Start → the first streamed token of any of its requests.
    fn first_token_ms(&self) -> Option<f64> {
        self.outputs.iter().filter_map(|o| o.first).min().map(|t| ms_between(self.ran.start, t))
    }

    /// Why the job gave no answer, if it gave none.
    fn failed(&self) -> Option<String> {
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

    fn timed(&self) -> Timed {
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

    fn json(&self) -> Value {
        json!({
            "job": self.ran.json(),
            "outputs": self.outputs.iter().map(|o| o.json(self.ran.start)).collect::<Vec<_>>(),
        })
    }
}

/// A timed command.
#[derive(Debug, Clone, Default)]
struct Timed {
    first_ms: Option<f64>,
    /// Start → the first tool call reported (what a viewer sees first).
    call_ms: Option<f64>,
    end_ms: f64,
    prompt: u64,
    cached: u64,
    generated: u64,
    requests: usize,
    /// Why it gave no answer (an error it reported, or none), if it gave none.
    failed: Option<String>,
    /// Whether it called a tool ("What time is it?" should: answered without one, the
    /// time is made up).
    called: bool,
    answer: String,
}

impl Timed {
    /// Whether it called a tool and answered: a run whose time is a command's.
    fn valid(&self) -> bool {
        self.called && self.failed.is_none()
    }
}

// ---------------------------------------------------------------------------------------
// One model through the battery.
// ---------------------------------------------------------------------------------------

/// What the battery runs against.
#[derive(Debug, Clone)]
enum Target {
    /// A GGUF, served by llama-server as `up` serves it; `role`: what `scripts/fetch-llm
    /// --model` calls it, when it installs it.
    Gguf { path: PathBuf, role: Option<String> },
    /// Any OpenAI-compatible chat completions URL.
    Url { url: String, name: String },
}

impl Target {
    fn label(&self) -> String {
        match self {
            Self::Gguf { path, .. } => path
                .file_name()
                .map(|n| n.to_string_lossy().trim_end_matches(".gguf").to_owned())
                .unwrap_or_default(),
            Self::Url { name, .. } => name.clone(),
        }
    }

    /// The table's heading for it.
    fn heading(&self) -> String {
        match self {
            Self::Gguf { role: Some(role), .. } => {
                format!("{} (`fetch-llm --model {role}`)", self.label())
            }
            Self::Gguf { role: None, .. } => self.label(),
            Self::Url { url, name } if url == name => format!("`{url}`"),
            Self::Url { url, name } => format!("{name} (`{url}`)"),
        }
    }
}

/// One everyday command's outcome.
#[derive(Debug)]
struct Scored {
    right: bool,
    /// Tool names the model made up.
    invented: BTreeSet<String>,
    /// Replies that wrote the tool schemas back.
    echoes: usize,
    /// How its first reply wrote a call: "native" (`tool_calls`), "text" or "none".
    written: &'static str,
    /// The prompt tokens of its first request, as the server counted them.
    first_prompt: Option<u64>,
    calls: String,
    answer: String,
}

/// The tool names a reply's text gives as `"name": "…"`.
fn names_in(text: &str) -> Vec<String> {
    text.match_indices("\"name\"")
        .filter_map(|(at, key)| {
            let rest = text[at + key.len()..].trim_start().strip_prefix(':')?.trim_start();
            let rest = rest.strip_prefix('"')?;
            Some(rest[..rest.find('"')?].to_owned())
        })
        // A name, not a sentence (a small model writes a tool's result as a "name" too).
        .filter(|name| name.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c)))
        .collect()
}

/// The moments and the planner's tasks a command's check goes by.
struct Around<'a> {
    now: NaiveDateTime,
    end: NaiveDateTime,
    tasks: &'a [TaskEntry],
    after: &'a [TaskEntry],
}

/// An everyday command judged: its check passed, and it called no tool that does not exist
/// and none that acts but those it may act with.
fn score_everyday(case: &Everyday, job: &Job, offered: &[String], around: &Around<'_>) -> Scored {
    let calls: Vec<(&str, &Value)> = job.ran.calls().collect();
    let unknown: Vec<&str> = job
        .ran
        .seen
        .iter()
        .filter_map(|(_, s)| match s {
            Seen::Result { tool, result, .. } if result.starts_with("there is no tool named") => {
                Some(tool.as_str())
            }
            _ => None,
        })
        .collect();
    let stray = calls.iter().any(|(tool, _)| !reads(tool) && !case.acts.contains(tool));
    let verdict = Verdict {
        calls: calls.clone(),
        answer: job.ran.reply(),
        now: around.now,
        end: around.end,
        tasks: around.tasks,
        after: around.after,
    };
    let right = unknown.is_empty() && !stray && (case.right)(&verdict);
    let mut invented: BTreeSet<String> = unknown.iter().map(|t| (*t).to_owned()).collect();
    for output in &job.outputs {
        let names = output.calls.iter().map(|c| c.0.clone()).chain(names_in(&output.content));
        invented.extend(names.filter(|n| !n.is_empty() && !offered.contains(n)));
    }
    let echoes = job
        .outputs
        .iter()
        .filter(|o| o.content.contains("\"properties\"") || o.content.contains("\"parameters\""))
        .count();
    let written = match job.outputs.first() {
        Some(o) if !o.calls.is_empty() => "native",
        Some(o) if offered.iter().any(|n| o.content.contains(n.as_str())) => "text",
        _ => "none",
    };
    let calls = if calls.is_empty() {
        "no call".to_owned()
    } else {
        calls.iter().map(|(t, a)| format!("{t} {a}")).collect::<Vec<_>>().join(", ")
    };
    let first_prompt = job.outputs.first().map(|o| o.prompt_tokens).filter(|n| *n > 0);
    Scored { right, invented, echoes, written, first_prompt, calls, answer: verdict.answer }
}

/// One request as `up` made a command's before the tools were chosen by its words: the
/// command system prompt, every built-in tool and every one of memory's
/// (`memory::tools::ASSISTANT`), a question no tool answers, and `max_tokens` 1 (as
/// `command::warm` sends its request): what its prompt costs.
async fn every_tool(env: &JobEnv, client: &Provider) -> Result<Usage, LlmError> {
    let memory = memory::tools::specs(&memory::tools::ASSISTANT);
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

/// One summary's outcome.
#[derive(Debug)]
struct SummaryScore {
    kept: usize,
    dropped: Vec<&'static str>,
    changed: Vec<&'static str>,
    /// Numbers in the summary the chat never said.
    invented: Vec<String>,
    /// Why the tree has no summary of the model's, if it has none.
    failed: Option<String>,
    /// The model wrote a sentence three times or more.
    repeats: bool,
}

fn score_summary(chat: &SummaryChat, text: Option<&str>, failed: Option<String>) -> SummaryScore {
    let Some(text) = text.filter(|_| failed.is_none()) else {
        return SummaryScore {
            kept: 0,
            dropped: chat.facts.iter().map(|f| f.what).collect(),
            changed: Vec::new(),
            invented: Vec::new(),
            failed: Some(failed.unwrap_or_else(|| "no summary".into())),
            repeats: false,
        };
    };
    let mut score = SummaryScore {
        kept: 0,
        dropped: Vec::new(),
        changed: Vec::new(),
        invented: Vec::new(),
        failed: None,
        repeats: false,
    };
    for fact in chat.facts {
        if holds(text, fact.kept) {
            score.kept += 1;
        } else {
            score.dropped.push(fact.what);
            if holds(text, fact.wrong) {
                score.changed.push(fact.what);
            }
        }
    }
    let said: String = chat
        .turns
        .iter()
        .flat_map(|(u, a)| [*u, *a])
        .chain([chat.next])
        .collect::<Vec<_>>()
        .join("\n");
    let said = numbers(&said);
    score.invented = numbers(text).into_iter().filter(|n| !said.contains(n)).collect();
    score
}

/// Whether `text` has a sentence (of some length) three times or more: a model in a loop.
fn repeats(text: &str) -> bool {
    let sentences: Vec<&str> =
        text.split(['.', '\n']).map(str::trim).filter(|s| s.len() > 20).collect();
    sentences.iter().any(|s| sentences.iter().filter(|t| *t == s).count() >= 3)
}

/// The reason in a note such as "context trimmed: … (summarizing failed: WHY); …".
fn reason(note: &str) -> &str {
    note.split_once("summarizing failed: ")
        .map_or(note, |(_, rest)| rest.split_once("); ").map_or(rest, |(why, _)| why))
}

/// One correction check's outcome.
#[derive(Debug)]
struct Rewritten {
    /// The model's rewrite, when the proxy saw it.
    text: Option<String>,
    right: bool,
    /// The dream's verdict: whether it would supersede the old note.
    supersedes: bool,
}

/// Everything measured on one model.
#[derive(Debug, Default)]
struct Figures {
    load_s: Option<f64>,
    cold: Option<Timed>,
    warm: Vec<Timed>,
    /// After a restart: the warm-up request's time, then the first command.
    warm_up_ms: Option<f64>,
    after_warm_up: Option<Timed>,
    /// After the next restart: the saved prefix restored (ms), then the first command.
    restored: Option<(f64, Timed)>,
    everyday: Vec<Scored>,
    tool_ends: Vec<f64>,
    /// The prompt tokens of one request with every built-in and memory tool offered.
    every_tool_prompt: Option<u64>,
    facts: Vec<(bool, String)>,
    chat_first: Vec<f64>,
    chat_ends: Vec<f64>,
    summaries: Vec<SummaryScore>,
    summary_ends: Vec<f64>,
    rewrites: Vec<Rewritten>,
    timings: Vec<Timings>,
    rss_kib: Option<u64>,
    /// CPU time other processes took while the battery ran on the first server, in cores.
    others_cores: Option<f64>,
    wall_s: f64,
}

/// Runs the battery on `target`; its outputs go to `saved` as JSON.
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

fn bench(runtime: &Runtime, base: &Base, target: &Target, dir: &Path, saved: &Path) -> Figures {
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

    if !everyday_only() {
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
    if everyday_only() {
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

// ---------------------------------------------------------------------------------------
// The report.
// ---------------------------------------------------------------------------------------

fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    (!values.is_empty()).then(|| values[values.len() / 2])
}

fn secs(ms: Option<f64>) -> String {
    ms.map_or_else(|| "—".to_owned(), |ms| format!("{:.2} s", ms / 1000.0))
}

/// The first token, the tool call and the end of a command.
fn first_and_end(timed: Option<&Timed>) -> String {
    match timed {
        Some(t) => format!(
            "{} / {} / {}{}",
            secs(t.first_ms),
            secs(t.call_ms),
            secs(Some(t.end_ms)),
            failed(t)
        ),
        None => "—".to_owned(),
    }
}

/// " (no answer)" when a command gave none, " (answered without a call)" when it made one up.
fn failed(timed: &Timed) -> &'static str {
    match (&timed.failed, timed.called) {
        (Some(_), _) => " (no answer)",
        (None, false) => " (answered without a call)",
        (None, true) => "",
    }
}

/// A command's requests and tokens.
fn tokens(timed: Option<&Timed>) -> String {
    match timed {
        Some(t) if t.requests > 0 => format!(
            "{} request{}, {} prompt ({} cached) / {} generated",
            t.requests,
            if t.requests == 1 { "" } else { "s" },
            t.prompt,
            t.cached,
            t.generated
        ),
        _ => "—".to_owned(),
    }
}

/// `text` cut to `max` characters, on one line, safe in a table.
fn short(text: &str, max: usize) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ").replace('|', "/");
    if one.chars().count() > max {
        format!("{}…", one.chars().take(max).collect::<String>())
    } else {
        one
    }
}

/// The table's rows, one cell per model.
fn table(targets: &[Target], all: &[Figures]) -> String {
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    let mut row = |name: &str, cell: &dyn Fn(&Figures) -> String| {
        rows.push((name.to_owned(), all.iter().map(cell).collect()));
    };
    row(
        &format!(
            "everyday commands right (model path alone, {} commands) (invented tool names / \
             schema echoes)",
            EVERYDAY.len()
        ),
        &|f| {
            let right = f.everyday.iter().filter(|t| t.right).count();
            let of = f.everyday.len();
            let invented: BTreeSet<&String> = f.everyday.iter().flat_map(|t| &t.invented).collect();
            let echoes: usize = f.everyday.iter().map(|t| t.echoes).sum();
            let share = if of > 0 { right as f64 * 100.0 / of as f64 } else { 0.0 };
            format!("**{right}/{of} ({share:.0}%)** ({} / {echoes})", invented.len())
        },
    );
    row("its first reply wrote a call as `tool_calls` / in the text / none", &|f| {
        let count = |w: &str| f.everyday.iter().filter(|t| t.written == w).count();
        format!("{} / {} / {}", count("native"), count("text"), count("none"))
    });
    row("a command's prompt: median prompt tokens of its first request (min–max)", &|f| {
        let tokens: Vec<u64> = f.everyday.iter().filter_map(|t| t.first_prompt).collect();
        let median = median(tokens.iter().map(|n| *n as f64).collect());
        match (median, tokens.iter().min(), tokens.iter().max()) {
            (Some(m), Some(lo), Some(hi)) => format!("{m:.0} ({lo}–{hi})"),
            _ => "—".to_owned(),
        }
    });
    row(
        "before: every tool offered (as up offered a command before tools were chosen by its \
         words)",
        &|f| f.every_tool_prompt.map_or_else(|| "—".to_owned(), |n| format!("{n} prompt tokens")),
    );
    row("short facts (chat)", &|f| {
        format!("**{}/{}**", f.facts.iter().filter(|(right, _)| *right).count(), f.facts.len())
    });
    row("summary facts kept (contradicted)", &|f| {
        let kept: usize = f.summaries.iter().map(|s| s.kept).sum();
        let of: usize = CHATS.iter().take(f.summaries.len()).map(|c| c.facts.len()).sum();
        let wrong: usize = f.summaries.iter().map(|s| s.changed.len() + s.invented.len()).sum();
        let failed = f.summaries.iter().filter(|s| s.failed.is_some()).count();
        let failed =
            if failed > 0 { format!(", {failed} summaries unusable") } else { String::new() };
        format!("**{kept}/{of}** ({wrong}{failed})")
    });
    row("corrections: new value, old gone (the dream supersedes)", &|f| {
        let (fixes, keeps): (Vec<_>, Vec<_>) =
            REWRITES.iter().zip(&f.rewrites).partition(|(r, _)| r.corrects);
        let right = |v: &[(&Rewrite, &Rewritten)]| v.iter().filter(|(_, w)| w.right).count();
        let supersedes =
            |v: &[(&Rewrite, &Rewritten)]| v.iter().filter(|(_, w)| w.supersedes).count();
        format!(
            "**{}/{}** ({}/{}); unrelated notes kept {}/{} (superseded {})",
            right(&fixes),
            fixes.len(),
            supersedes(&fixes),
            fixes.len(),
            right(&keeps),
            keeps.len(),
            supersedes(&keeps)
        )
    });
    row("llama-server ready: spawn → `/health` 200", &|f| secs(f.load_s.map(|s| s * 1000.0)));
    row("cold command (the first after start): first token / tool call shown / end", &|f| {
        first_and_end(f.cold.as_ref())
    });
    row("its requests and tokens", &|f| tokens(f.cold.as_ref()));
    row("warm command, median of 3: first token / tool call shown / end", &|f| {
        // The runs that called the tool and answered, or all when none did.
        let valid: Vec<&Timed> = f.warm.iter().filter(|t| t.valid()).collect();
        let runs = if valid.is_empty() { f.warm.iter().collect() } else { valid.clone() };
        let first = median(runs.iter().filter_map(|t| t.first_ms).collect());
        let call = median(runs.iter().filter_map(|t| t.call_ms).collect());
        let end = median(runs.iter().map(|t| t.end_ms).collect());
        let failed = f.warm.iter().filter(|t| t.failed.is_some()).count();
        let uncalled = f.warm.iter().filter(|t| t.failed.is_none() && !t.called).count();
        let mut others = Vec::new();
        if uncalled > 0 {
            others.push(format!("{uncalled} answered without a call"));
        }
        if failed > 0 {
            others.push(format!("{failed} gave no answer"));
        }
        let others = others.join(", ");
        let failed = match (valid.len(), others.is_empty()) {
            (_, true) => String::new(),
            (0, false) => format!(" (none of {} called the tool: {others})", f.warm.len()),
            (n, false) => format!(" (the {n} that called the tool; besides, {others})"),
        };
        if f.warm.is_empty() {
            "—".to_owned()
        } else {
            format!("{} / {} / {}{failed}", secs(first), secs(call), secs(end))
        }
    });
    row("its requests and tokens (the first warm run that called the tool)", &|f| {
        tokens(f.warm.iter().find(|t| t.valid()).or(f.warm.first()))
    });
    row(
        "after a restart: the warm-up request reads the prefix (and saves it), then the first command (the same three)",
        &|f| match (f.warm_up_ms, &f.after_warm_up) {
            (Some(w), Some(t)) => format!("{}, then {}", secs(Some(w)), first_and_end(Some(t))),
            _ => "—".to_owned(),
        },
    );
    row(
        "after the next restart: the saved prefix restored, then the first command (the same three)",
        &|f| match &f.restored {
            Some((w, t)) => format!("{}, then {}", secs(Some(*w)), first_and_end(Some(t))),
            None => "— (not restored)".to_owned(),
        },
    );
    row(&format!("the {} everyday commands: median end (slowest)", EVERYDAY.len()), &|f| {
        let slowest = f
            .tool_ends
            .iter()
            .copied()
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
        format!("{} ({})", secs(median(f.tool_ends.clone())), secs(slowest))
    });
    row("chat answer: median first piece / end", &|f| {
        format!("{} / {}", secs(median(f.chat_first.clone())), secs(median(f.chat_ends.clone())))
    });
    row("a summary (40 messages): median time", &|f| secs(median(f.summary_ends.clone())));
    row("prompt tokens/s (llama-server's timings, every request)", &|f| {
        let n: f64 = f.timings.iter().map(|t| t.prompt_n).sum();
        let ms: f64 = f.timings.iter().map(|t| t.prompt_ms).sum();
        if ms > 0.0 { format!("{:.1} ({n:.0} tokens)", n / ms * 1000.0) } else { "—".to_owned() }
    });
    row("generated tokens/s (the same)", &|f| {
        let n: f64 = f.timings.iter().map(|t| t.predicted_n).sum();
        let ms: f64 = f.timings.iter().map(|t| t.predicted_ms).sum();
        if ms > 0.0 { format!("{:.1} ({n:.0} tokens)", n / ms * 1000.0) } else { "—".to_owned() }
    });
    row("llama-server peak RSS (VmHWM)", &|f| {
        f.rss_kib.map_or_else(|| "—".to_owned(), |k| format!("{:.0} MiB", k as f64 / 1024.0))
    });
    row("the whole battery", &|f| format!("{:.0} s", f.wall_s));
    row("CPU other processes took meanwhile (cores, on the first server)", &|f| {
        f.others_cores.map_or_else(|| "—".to_owned(), |c| format!("{c:.2}"))
    });
    let mut text = String::from("| |");
    for target in targets {
        let _ = write!(text, " {} |", target.heading());
    }
    text.push_str("\n|---|");
    text.push_str(&"---|".repeat(targets.len()));
    text.push('\n');
    for (name, cells) in rows {
        let _ = writeln!(text, "| {name} | {} |", cells.join(" | "));
    }
    text
}

/// What each model got wrong, one paragraph each.
fn misses(targets: &[Target], all: &[Figures]) -> String {
    let mut text = String::new();
    for (target, f) in targets.iter().zip(all) {
        let mut parts = Vec::new();
        let timed = f.cold.iter().chain(&f.warm).chain(&f.after_warm_up);
        let timed: BTreeSet<&str> = timed.filter_map(|t| t.failed.as_deref()).collect();
        if !timed.is_empty() {
            let why: Vec<String> = timed.iter().map(|w| short(w, 100)).collect();
            parts.push(format!(
                "*the timed command* \"{TIMED}\" gave no answer: {}",
                why.join("; ")
            ));
        }
        let timed = f.cold.iter().chain(&f.warm).chain(&f.after_warm_up);
        let made_up: BTreeSet<String> = timed
            .filter(|t| t.failed.is_none() && !t.called)
            .map(|t| format!("\"{}\"", short(&t.answer, 60)))
            .collect();
        if !made_up.is_empty() {
            let answers: Vec<String> = made_up.into_iter().collect();
            parts.push(format!(
                "*the timed command* \"{TIMED}\" answered without calling a tool: {}",
                answers.join(", ")
            ));
        }
        let everyday: Vec<String> = EVERYDAY
            .iter()
            .zip(&f.everyday)
            .filter(|(_, s)| !s.right)
            .map(|(case, s)| {
                let answer = if s.answer.is_empty() {
                    String::new()
                } else {
                    format!(": \"{}\"", short(&s.answer, 70))
                };
                format!("\"{}\" (want {}) → {}{answer}", case.said, case.want, short(&s.calls, 90))
            })
            .collect();
        if !everyday.is_empty() {
            parts.push(format!("*everyday commands*: {}", everyday.join("; ")));
        }
        let invented: BTreeSet<&String> = f.everyday.iter().flat_map(|t| &t.invented).collect();
        if !invented.is_empty() {
            let names: Vec<String> = invented.iter().map(|n| format!("`{n}`")).collect();
            parts.push(format!("*made-up tool names*: {}", names.join(", ")));
        }
        let facts: Vec<String> = FACTS
            .iter()
            .zip(&f.facts)
            .filter(|(_, (right, _))| !right)
            .map(|((q, _), (_, answer))| format!("\"{q}\" → \"{}\"", short(answer, 80)))
            .collect();
        if !facts.is_empty() {
            parts.push(format!("*facts*: {}", facts.join("; ")));
        }
        for (chat, s) in CHATS.iter().zip(&f.summaries) {
            let mut said = Vec::new();
            if let Some(why) = &s.failed {
                let looped = if s.repeats { ", the model repeating itself" } else { "" };
                said.push(format!("unusable ({}{looped})", short(reason(why), 120)));
            } else if !s.dropped.is_empty() {
                said.push(format!("dropped {}", s.dropped.join(", ")));
            }
            if !s.changed.is_empty() {
                said.push(format!("changed {}", s.changed.join(", ")));
            }
            if !s.invented.is_empty() {
                said.push(format!("numbers the chat never said: {}", s.invented.join(", ")));
            }
            if !said.is_empty() {
                parts.push(format!("*summary of {}*: {}", chat.topic, said.join("; ")));
            }
        }
        let rewrites: Vec<String> = REWRITES
            .iter()
            .zip(&f.rewrites)
            .filter(|(_, w)| !w.right)
            .map(|(r, w)| {
                let text =
                    w.text.as_deref().map_or_else(|| "(not seen)".to_owned(), |t| short(t, 80));
                format!("\"{}\" + \"{}\" → \"{text}\"", r.was, r.now)
            })
            .collect();
        if !rewrites.is_empty() {
            parts.push(format!("*corrections*: {}", rewrites.join("; ")));
        }
        if parts.is_empty() {
            parts.push("none".to_owned());
        }
        let _ = writeln!(text, "- **{}**: {}.", target.label(), parts.join(". "));
    }
    text
}

/// Clock ticks per second of `/proc`'s CPU times (`CLK_TCK`, 100 on Linux).
const TICKS_PER_S: f64 = 100.0;

/// The machine's busy CPU time so far (all but idle and waiting for I/O), in clock ticks.
fn machine_busy() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<u64> =
        stat.lines().next()?.split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
    let total: u64 = fields.iter().take(8).sum();
    Some(total - fields.get(3)? - fields.get(4)?)
}

/// The CPU time (user and system) of the process `pid` (or `self`) so far, in clock ticks.
fn process_cpu(pid: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// The whole section.
fn section(targets: &[Target], all: &[Figures], command: &str, loads: (&str, &str)) -> String {
    format!(
        "{START}\n## The local models against a fixed battery (`scripts/bench-llm`)\n\n\
         Measured {} on {}, release build, with `{command}` (load average {} at the start, {} at \
         the end); the benchmark is `tests/benches/llm.rs`, whose tables hold every prompt, \
         expected answer and score. llama-server with the arguments `stt-daemon up` gives it \
         (`Launch::args`), though not at its nice level: `{}`; the assistant's code paths with the default config (`[llm].stream` on, \
         chat at temperature 0.2 (commands, summaries and the dream's check greedy), `max_tokens` 512, `command_answer_max_tokens` 64, the default system \
         prompts), `id_slot` sent as to llama-server. The model's raw outputs are in \
         `target/bench-llm/<model>.json`.\n\n\
         - **everyday commands**: {} things a person asks of the assistant on an ordinary \
         day (the time and the date, timers, reminders at a time, the planner's tasks, the \
         clipboard, notifications, web pages, questions the model answers itself, things no \
         tool does, what was said before), through the tool loop (`Work::Command`, the model \
         path alone: no local intents) with memory on (a fresh memory, the default `[memory]` \
         settings but words only, with a short chat in it to recall), in order, so reminders \
         and tasks made early are there for the rest. Each command is offered the tools its \
         words call for, as `stt-daemon up` offers them: the built-in ones, memory's and the \
         planner's. Each is right or wrong: the tool called and its arguments as they ran (a \
         reminder's due time as memory reads it, against the moment asked, worked out when \
         the command ran; \"in twenty minutes\" may be a timer too); a question, no call and \
         an expected word in the answer; what no tool does, no call (`get_datetime` aside) \
         and an answer that says it cannot; the time or the date, `get_datetime` or an answer \
         that gives it. Any call of a tool that does not exist, or that acts and was not asked \
         for (reading the time, memory or the planner aside), makes it wrong. `open_url` is \
         answered no; `notify` and `clipboard_copy` may fail without a desktop: the call is \
         scored, not its outcome. An invented name is a tool the model called or wrote that \
         does not exist; a schema echo, a reply with the schemas' `properties` or \
         `parameters` in its text. A command's prompt: the prompt tokens of its first \
         request; before: one request (`max_tokens` 1) with the command system prompt, every \
         built-in tool and every one of memory's, and \"What is the capital of France?\", as \
         `up` offered a command every tool before they were chosen by its words.\n\
         - **short facts**: {} chat questions (`Work::Chat`, memory off), right when the answer \
         has an expected word.\n\
         - **summaries**: 3 made-up chats of 20 turns ({} planted names, numbers and dates, two \
         of them changed later in the chat), summarized by the memory tree's job (`Work::Tree`, \
         its instruction and parsing) once a 41st message makes the 40 due; a fact is kept when \
         the summary and fields the tree stores have one of its spellings; contradicted: an old \
         value without the new one, or a number the chat never said. A summary cut off by \
         `compaction_max_tokens` (256) keeps its whole sentences before the first it repeats; \
         with none, the tree keeps an extract, and it keeps nothing here.\n\
         - **corrections**: the dream's check (`dream::replaces`: the model rewrites an old \
         note given a new fact) on {} pairs, right when the rewrite has the new value and not \
         the old; {} more pairs whose fact changes nothing must keep the note.\n\
         - **times**: \"What time is it?\" through the same path (get_datetime, then the \
         answer): the first after llama-server started (nothing in its cache), then more until 3 \
         have called the tool and answered, at most 6 (the median of those 3). After the battery the server is started again and the assistant \
         warms it (`command::warm_saved`: the command prefix read into its slot and saved, as the \
         assistant does once llama-server answers), then the command: the first command after \
         `stt-daemon up`; then started once more, the saved prefix restored instead of read, and \
         the command again. First token: the first piece of text or of a call of any of the command's \
         requests reaching a recording proxy between the env and the server (a model that \
         writes its call as text streams it, though nobody sees it); tool call shown: the \
         `tool_call` event, which a viewer shows; end: the answer, the job's end. A command \
         that answered without calling `get_datetime` made the time up: it is flagged. Tokens/s: llama-server's `timings`, summed over every request of the battery.\n\n\
         {}\n**Misses.**\n\n{}{END}\n",
        stt_testkit::perf::today(),
        stt_testkit::perf::machine(),
        loads.0,
        loads.1,
        shown_args(),
        EVERYDAY.len(),
        FACTS.len(),
        CHATS.iter().map(|c| c.facts.len()).sum::<usize>(),
        REWRITES.iter().filter(|r| r.corrects).count(),
        REWRITES.iter().filter(|r| !r.corrects).count(),
        table(targets, all),
        misses(targets, all),
    )
}

// ---------------------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------------------

/// The GGUF files `scripts/fetch-llm` installs that are in the models directory, in its order.
fn installed(root: &Path) -> Vec<Target> {
    let script = root.join("scripts/fetch-llm");
    let text = std::fs::read_to_string(&script)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", script.display()));
    let models = stt_testkit::models_dir();
    text.lines()
        .filter_map(|line| {
            let (role, name) = line.strip_prefix("MODEL_")?.split_once("_NAME=")?;
            Some(Target::Gguf { path: models.join(name.trim()), role: Some(role.to_owned()) })
        })
        .filter(|t| matches!(t, Target::Gguf { path, .. } if path.is_file()))
        .collect()
}

fn targets(root: &Path, args: &[String]) -> Result<Vec<Target>, String> {
    let roles: Vec<Target> = installed(root);
    let mut targets = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--model" => {
                let path = PathBuf::from(it.next().ok_or("--model takes a GGUF file")?);
                if !path.is_file() {
                    return Err(format!("no file {}", path.display()));
                }
                let role = roles.iter().find_map(|t| match t {
                    Target::Gguf { path: p, role } if p.file_name() == path.file_name() => {
                        role.clone()
                    }
                    _ => None,
                });
                targets.push(Target::Gguf { path, role });
            }
            "--url" => {
                let url = it.next().ok_or("--url takes a chat completions URL")?.clone();
                if !url.starts_with("http://") && !url.starts_with("https://") {
                    return Err(format!("{url} is not an http:// or https:// URL"));
                }
                targets.push(Target::Url { name: url.clone(), url });
            }
            "--name" => {
                let label = it.next().ok_or("--name takes a label")?.clone();
                match targets.last_mut() {
                    Some(Target::Url { name, .. }) => *name = label,
                    _ => return Err("--name names the --url before it".into()),
                }
            }
            "--everyday" => {}
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if targets.is_empty() {
        targets = roles;
    }
    if targets.is_empty() {
        return Err("no model installed: run scripts/fetch-llm --model all".into());
    }
    Ok(targets)
}

/// Whether `--everyday` was given: the everyday commands alone, nothing written.
fn everyday_only() -> bool {
    std::env::args().any(|a| a == "--everyday")
}

fn main() -> ExitCode {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap_or(Path::new("..")).to_owned();
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let targets = match targets(&root, &args) {
        Ok(targets) => targets,
        Err(e) => {
            eprintln!("{e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let command = std::iter::once("scripts/bench-llm".to_owned())
        .chain(args.iter().map(|a| if a.contains(' ') { format!("'{a}'") } else { a.clone() }))
        .collect::<Vec<_>>()
        .join(" ");
    let base = Base::new();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("no runtime: {e}"));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("no temporary directory: {e}"));
    let saved = root.join("target/bench-llm");
    let load_before = load_average();
    let all: Vec<Figures> =
        targets.iter().map(|t| bench(&runtime, &base, t, dir.path(), &saved)).collect();
    if everyday_only() {
        return ExitCode::SUCCESS;
    }
    let section = section(&targets, &all, &command, (&load_before, &load_average()));
    println!("{section}");
    if let Ok(target) = std::env::var("STT_BENCH_WRITE") {
        let path = root.join(target);
        stt_testkit::perf::write_section(&path, START, END, &section)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        eprintln!("bench-llm: wrote {}", path.display());
    }
    ExitCode::SUCCESS
}
