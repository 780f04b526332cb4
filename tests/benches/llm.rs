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
//!    server is started again, the assistant's warm-up request (`llm::command::warm`: the
//!    command prefix read into the command slot, which the assistant sends once llama-server
//!    answers) is sent, and the command once more: the first command a person gives after
//!    `stt-daemon up`.
//! 2. **tool choice and arguments.** [`TOOL_CASES`]: spoken commands through the same path,
//!    scored 1 for the right tool with the right arguments, 0.5 for the right tool with
//!    others, 0 otherwise; a command no tool does must call none. `open_url` asks for
//!    confirmation and is answered no (nothing opens); `notify` and `clipboard_copy` may fail
//!    without a desktop: the call is scored, not its outcome. Tool names the model made up
//!    and replies that echo the tool schemas are counted.
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

use serde_json::{Value, json};
use tokio::runtime::Runtime;
use tracing::Span;

use stt_assistant::lane::Sink;
use stt_assistant::llm::{self, Chat, JobEnv, Report, Work};
use stt_assistant::memory::{self, Episode};
use stt_assistant::turn::ChatTurn;
use stt_daemon::up::model::Launch;
use stt_llm::{Endpoint, Provider};
use stt_memory::Role;
use stt_memory::tree::TreeRules;
use stt_proto::AssistantEvent;

const START: &str = "<!-- bench-llm:start -->";
const END: &str = "<!-- bench-llm:end -->";
const USAGE: &str = "usage: scripts/bench-llm [--model PATH.gguf]... [--url CHAT_COMPLETIONS_URL [--name LABEL]]...";
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

/// A spoken command, the tool it should call, the arguments wanted, in words, and the check
/// of a call's arguments. `None`: no tool does it, so none should be called, and the answer
/// should say so ([`refuses`]; 0.5 for no call and an answer that does not).
struct ToolCase {
    said: &'static str,
    tool: Option<&'static str>,
    want: &'static str,
    args: fn(&Value) -> bool,
}

/// The spoken commands, as the daemon's transcripts read.
const TOOL_CASES: [ToolCase; 13] = [
    ToolCase {
        said: "Set a timer for five minutes.",
        tool: Some("set_timer"),
        want: "minutes 5",
        args: |a| minutes(a, 5.0),
    },
    ToolCase {
        said: "Remind me in twenty minutes to check the oven.",
        tool: Some("set_timer"),
        want: "minutes 20, a label with \"oven\"",
        args: |a| minutes(a, 20.0) && says(a, "label", "oven"),
    },
    ToolCase {
        said: "Set a timer for an hour and a half.",
        tool: Some("set_timer"),
        want: "minutes 90",
        args: |a| minutes(a, 90.0),
    },
    ToolCase {
        said: "Start a thirty second timer for the tea.",
        tool: Some("set_timer"),
        want: "minutes 0.5",
        args: |a| minutes(a, 0.5),
    },
    ToolCase {
        said: "What time is it?",
        tool: Some("get_datetime"),
        want: "any (it takes none)",
        args: |_| true,
    },
    ToolCase {
        said: "What day is it today?",
        tool: Some("get_datetime"),
        want: "any (it takes none)",
        args: |_| true,
    },
    ToolCase {
        said: "Copy hello world to the clipboard.",
        tool: Some("clipboard_copy"),
        want: "text \"hello world\"",
        args: |a| words(a["text"].as_str().unwrap_or_default()) == "hello world",
    },
    ToolCase {
        said: "Put the word banana on the clipboard.",
        tool: Some("clipboard_copy"),
        want: "text \"banana\"",
        args: |a| words(a["text"].as_str().unwrap_or_default()) == "banana",
    },
    ToolCase {
        said: "Show a notification saying backup done.",
        tool: Some("notify"),
        want: "\"backup done\" in the title or body",
        args: |a| says(a, "title", "backup done") || says(a, "body", "backup done"),
    },
    ToolCase {
        said: "Send me a notification that says the tea is ready.",
        tool: Some("notify"),
        want: "\"tea is ready\" in the title or body",
        args: |a| says(a, "title", "tea is ready") || says(a, "body", "tea is ready"),
    },
    ToolCase {
        said: "Open example.org.",
        tool: Some("open_url"),
        want: "url http(s)://example.org",
        args: |a| web_page(a, &["example.org", "www.example.org"]),
    },
    ToolCase {
        said: "Open the Rust website.",
        tool: Some("open_url"),
        want: "url http(s)://rust-lang.org",
        args: |a| web_page(a, &["rust-lang.org", "www.rust-lang.org"]),
    },
    ToolCase {
        said: "Turn off the kitchen lights.",
        tool: None,
        want: "no call, and an answer that says it cannot",
        args: |_| true,
    },
];

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

/// Whether the call's `minutes` is `want`.
fn minutes(args: &Value, want: f64) -> bool {
    args["minutes"].as_f64().is_some_and(|m| (m - want).abs() < 1e-6)
}

/// Whether the call's string `key` has the words `want`.
fn says(args: &Value, key: &str, want: &str) -> bool {
    words(args[key].as_str().unwrap_or_default()).contains(want)
}

/// Whether the call's `url` is an http(s) link to one of `hosts` (its front page or any).
fn web_page(args: &Value, hosts: &[&str]) -> bool {
    let url = args["url"].as_str().unwrap_or_default().to_ascii_lowercase();
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
    rest.is_some_and(|r| hosts.contains(&r.split('/').next().unwrap_or_default()))
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
        let log = dir.join(format!("{name}.log"));
        let out = File::create(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
        let err = out.try_clone().unwrap_or_else(|e| panic!("{}: {e}", log.display()));
        let started = Instant::now();
        let child = Command::new(&launch.program)
            .args(launch.args())
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
    shown.join(" ")
}

/// What every lane of the battery shares: the default config's settings and tools.
#[derive(Debug)]
struct Base {
    settings: Arc<llm::Settings>,
    tools: Arc<stt_tools::Registry>,
    /// The names of the tools a command is offered (memory off).
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
        let offered = tools.specs().map(|s| s.name.clone()).collect();
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

    fn command(runtime: &Runtime, env: &JobEnv, proxy: Option<&Proxy>, said: &str) -> Self {
        let work =
            Work::Command { text: said.to_owned(), edited: false, episode: Episode::Command(1) };
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

/// One tool case's outcome.
#[derive(Debug)]
struct ToolScore {
    score: f64,
    /// Tool names the model made up.
    invented: BTreeSet<String>,
    /// Replies that wrote the tool schemas back.
    echoes: usize,
    /// How its first reply wrote a call: "native" (`tool_calls`), "text" or "none".
    written: &'static str,
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

fn score_tools(case: &ToolCase, job: &Job, offered: &[String]) -> ToolScore {
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
    let score = match case.tool {
        None if calls.is_empty() && unknown.is_empty() && refuses(&job.ran.reply()) => 1.0,
        None if calls.is_empty() && unknown.is_empty() => 0.5,
        None => 0.0,
        Some(tool) => {
            let mine: Vec<&Value> = calls.iter().filter(|(t, _)| *t == tool).map(|c| c.1).collect();
            if mine.iter().any(|a| (case.args)(a)) {
                1.0
            } else if mine.is_empty() {
                0.0
            } else {
                0.5
            }
        }
    };
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
    ToolScore { score, invented, echoes, written, calls, answer: job.ran.reply() }
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
    tools: Vec<ToolScore>,
    tool_ends: Vec<f64>,
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

    // 1. The first command, then the same again.
    eprintln!("bench-llm: {label}: cold and warm commands…");
    let cold = Job::command(runtime, &env, proxy, TIMED);
    figures.timings.extend(cold.outputs.iter().filter_map(|o| o.timings));
    if server.is_some() {
        figures.cold = Some(cold.timed());
    }
    let mut warm_log = Vec::new();
    // Runs that made the time up (or gave no answer) do not count towards the three.
    while figures.warm.iter().filter(|t| t.valid()).count() < WARM_RUNS
        && figures.warm.len() < MAX_WARM_RUNS
    {
        let job = Job::command(runtime, &env, proxy, TIMED);
        figures.timings.extend(job.outputs.iter().filter_map(|o| o.timings));
        figures.warm.push(job.timed());
        warm_log.push(job.json());
    }
    log["cold"] = cold.json();
    log["warm"] = json!(warm_log);

    // 2. Tool choice and arguments.
    let mut tools_log = Vec::new();
    for case in &TOOL_CASES {
        eprintln!("bench-llm: {label}: command {:?}…", case.said);
        let job = Job::command(runtime, &env, proxy, case.said);
        figures.timings.extend(job.outputs.iter().filter_map(|o| o.timings));
        let score = score_tools(case, &job, &base.offered);
        eprintln!("  → {} ({})", score.calls, score.score);
        figures.tool_ends.push(job.ran.end_ms());
        tools_log.push(json!({
            "said": case.said, "tool": case.tool, "want": case.want, "score": score.score,
            "invented": score.invented, "schema_echoes": score.echoes, "written": score.written,
            "run": job.json(),
        }));
        figures.tools.push(score);
    }
    log["tools"] = json!(tools_log);

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
        let memory = memory::spawn(settings, Sink::new(|_| {}))
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

    // 1, again: the first command after a restart and the assistant's warm-up request.
    if let Target::Gguf { path, .. } = target {
        eprintln!("bench-llm: {label}: restart, warm-up request, first command…");
        let server = Llama::start(path, dir, &format!("{label}-again"));
        let proxy = Proxy::start(&server.url());
        let env = base.env(&proxy.url, true, None);
        let client = env.client.clone().unwrap_or_else(|| panic!("the env has a client"));
        let started = Instant::now();
        if let Err(e) = runtime.block_on(llm::command::warm(&env, &client)) {
            eprintln!("bench-llm: {label}: the warm-up request failed: {e}");
        }
        figures.warm_up_ms = Some(ms_between(started, Instant::now()));
        let warm_up: Vec<Value> = proxy.take().iter().map(|o| o.json(started)).collect();
        let job = Job::command(runtime, &env, Some(&proxy), TIMED);
        figures.after_warm_up = Some(job.timed());
        log["after_warm_up"] = json!({"warm_up": warm_up, "first_command": job.json()});
    }
    figures.wall_s = began.elapsed().as_secs_f64();
    let file = saved.join(format!("{label}.json"));
    let text = serde_json::to_string_pretty(&log).unwrap_or_default();
    match std::fs::create_dir_all(saved).and_then(|()| std::fs::write(&file, text)) {
        Ok(()) => eprintln!("bench-llm: {label}: outputs in {}", file.display()),
        Err(e) => eprintln!("bench-llm: cannot write {}: {e}", file.display()),
    }
    figures
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
    row("tool choice: right tool and arguments (invented tool names / schema echoes)", &|f| {
        let score: f64 = f.tools.iter().map(|t| t.score).sum();
        let invented: BTreeSet<&String> = f.tools.iter().flat_map(|t| &t.invented).collect();
        let echoes: usize = f.tools.iter().map(|t| t.echoes).sum();
        format!("**{score}/{}** ({} / {echoes})", f.tools.len(), invented.len())
    });
    row("its first reply wrote a call as `tool_calls` / in the text / none", &|f| {
        let count = |w: &str| f.tools.iter().filter(|t| t.written == w).count();
        format!("{} / {} / {}", count("native"), count("text"), count("none"))
    });
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
        "after a restart: the warm-up request, then the first command (the same three)",
        &|f| match (f.warm_up_ms, &f.after_warm_up) {
            (Some(w), Some(t)) => format!("{}, then {}", secs(Some(w)), first_and_end(Some(t))),
            _ => "—".to_owned(),
        },
    );
    row("the 13 commands of the tool part: median end (slowest)", &|f| {
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
        let tools: Vec<String> = TOOL_CASES
            .iter()
            .zip(&f.tools)
            .filter(|(_, s)| s.score < 1.0)
            .map(|(case, s)| {
                let answer = if s.calls == "no call" && !s.answer.is_empty() {
                    format!(": \"{}\"", short(&s.answer, 70))
                } else {
                    String::new()
                };
                format!(
                    "\"{}\" (want {}) → {}{answer} [{}]",
                    case.said,
                    case.want,
                    short(&s.calls, 90),
                    s.score
                )
            })
            .collect();
        if !tools.is_empty() {
            parts.push(format!("*tools*: {}", tools.join("; ")));
        }
        let invented: BTreeSet<&String> = f.tools.iter().flat_map(|t| &t.invented).collect();
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
         - **tool choice**: {} spoken commands through the tool loop (`Work::Command`, the 5 \
         built-in tools, memory off, so no memory tools are offered): 1 for the right tool with \
         the right arguments, 0.5 for the right tool with others, 0 otherwise (\"Turn off the \
         kitchen lights\" must call nothing and say it cannot: 0.5 for no call and an answer \
         that does not). `open_url` is answered no. An invented name is a \
         tool the model called or wrote that does not exist; a schema echo, a reply with the \
         schemas' `properties` or `parameters` in its text.\n\
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
         have called the tool and answered, at most 6 (the median of those 3). After the battery the server is started again and sent the assistant's \
         warm-up request (`command::warm`: the command prefix into its slot, as the assistant \
         does once llama-server answers), then the command: the first command after `stt-daemon \
         up`. First token: the first piece of text or of a call of any of the command's \
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
        TOOL_CASES.len(),
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
