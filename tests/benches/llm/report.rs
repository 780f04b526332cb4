//! The report: the Markdown table of every model's figures, what each got wrong, and the
//! section of docs/PERFORMANCE.md around them.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::battery::{Figures, TIMED};
use crate::corrections::{REWRITES, Rewrite, Rewritten};
use crate::everyday::EVERYDAY;
use crate::facts::FACTS;
use crate::job::Timed;
use crate::llama::shown_args;
use crate::summaries::{CHATS, reason};
use crate::target::Target;

/// The markers around the section this benchmark writes in docs/PERFORMANCE.md.
pub const START: &str = "<!-- bench-llm:start -->";
pub const END: &str = "<!-- bench-llm:end -->";

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

/// The whole section.
pub fn section(targets: &[Target], all: &[Figures], command: &str, loads: (&str, &str)) -> String {
    format!(
        "{START}\n## The local models against a fixed battery (`scripts/bench-llm`)\n\n\
         Measured {} on {}, release build, with `{command}` (load average {} at the start, {} at \
         the end); the benchmark is `tests/benches/llm/`, whose tables hold every prompt, \
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
