//! The everyday commands: 64 things a person asks on an ordinary day, in the order they run,
//! what a right outcome is and the tools each may act with, the chat in memory before them,
//! and how a command is scored.

use std::collections::BTreeSet;

use chrono::{NaiveDateTime, Weekday};
use serde_json::Value;

use stt_assistant::memory;
use stt_proto::TaskEntry;

use crate::job::{Job, Seen};
use crate::verdict::{
    ADD_INTENTION, CLIPBOARD_COPY, GET_DATETIME, MAKE_TASK, NOTIFY, OPEN_URL, SET_TIMER, Verdict,
    answered, asked_planner, cannot, copied, day_at, has, made_task, next_weekday_at, notified,
    of_task, opened, recalled, reminder, reminder_in, states_date, states_time, states_weekday,
    states_year, status_set, task_ids, timer, told, week_later, weekday_at,
};

/// An everyday spoken command, what a right outcome is, in words, the tools it may act with
/// (a read of the time, of memory or of the planner is always allowed; any other call makes
/// it wrong), and the check of what it did.
pub struct Everyday {
    pub said: &'static str,
    pub want: &'static str,
    pub acts: &'static [&'static str],
    pub right: fn(&Verdict<'_>) -> bool,
}

const REMIND: &[&str] = &[ADD_INTENTION, SET_TIMER];

/// What a person says to the assistant on an ordinary day, as the daemon's transcripts read,
/// in the order they run: one memory for all of them, so a reminder set early is open for
/// the rest, and the planner's tasks made early are the ones asked about later. Each is
/// worded so that the words the command path looks for ([`stt_tools::offer`],
/// `memory::called_for`, `memory::plans::asks_about_plans`) offer it the tools that do it.
pub const EVERYDAY: [Everyday; 64] = [
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
        acts: &[memory::Tool::Prioritize.name()],
        right: |v| {
            let ids = task_ids(v.tasks, "insurance");
            v.called(memory::Tool::Prioritize.name())
                .any(|a| of_task(a, &ids) && memory::plans::whole(&a["priority"]) == Some(1))
        },
    },
    Everyday {
        said: "Push the insurance task back by one week.",
        want: "reschedule the insurance task by shift_days 7 (or to its due date a week later)",
        acts: &[memory::Tool::Reschedule.name()],
        right: |v| week_later(v, "insurance"),
    },
    Everyday {
        said: "Mark the milk task as done.",
        want: "update_task_status of the milk task to done (or mark_plan_done, that leaves it \
               done)",
        acts: &[memory::Tool::UpdateTaskStatus.name(), memory::Tool::MarkPlanDone.name()],
        right: |v| {
            status_set(v, "milk", "done")
                || (v.called(memory::Tool::MarkPlanDone.name()).next().is_some()
                    && v.after.iter().any(|t| has(t, "milk") && t.status == "done"))
        },
    },
    Everyday {
        said: "Drop the Spanish goal.",
        want: "update_task_status of the Spanish task to dropped",
        acts: &[memory::Tool::UpdateTaskStatus.name()],
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
pub const SAID_BEFORE: [(&str, &str); 2] = [
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
    tool == GET_DATETIME || memory::Tool::named(tool).is_some_and(memory::Tool::reads_only)
}

/// One everyday command's outcome.
#[derive(Debug)]
pub struct Scored {
    pub right: bool,
    /// Tool names the model made up.
    pub invented: BTreeSet<String>,
    /// Replies that wrote the tool schemas back.
    pub echoes: usize,
    /// How its first reply wrote a call: "native" (`tool_calls`), "text" or "none".
    pub written: &'static str,
    /// The prompt tokens of its first request, as the server counted them.
    pub first_prompt: Option<u64>,
    pub calls: String,
    pub answer: String,
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
pub struct Around<'a> {
    pub now: NaiveDateTime,
    pub end: NaiveDateTime,
    pub tasks: &'a [TaskEntry],
    pub after: &'a [TaskEntry],
}

/// An everyday command judged: its check passed, and it called no tool that does not exist
/// and none that acts but those it may act with.
pub fn score_everyday(
    case: &Everyday,
    job: &Job,
    offered: &[String],
    around: &Around<'_>,
) -> Scored {
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
