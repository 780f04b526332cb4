//! The commands answered without the model, timed through the release daemon socket and
//! assistant: Enter (`stt-ctl command-execute` started, as a hotkey does) → the tool's
//! result on the event stream, → the answer in the conversation; the daemon's final
//! (`command-execute --wait` held since the words were said) → the first audio of the spoken
//! answer (the voice writing into a WAV file); and, through the real release daemon fed
//! speech at real time on its stdin, the end of the spoken words → that first audio
//! ([`spoken_real`]). The peer, in the same run: the same commands through the installed
//! local model (`[intents]` off), when it is installed.
//!
//! A hand-written daemon publishes the events of the first three (no whisper). Run it with
//! `scripts/bench-intents`, which builds the release programs and writes the figures into
//! `docs/PERFORMANCE.md`. Knobs: `STT_BENCH_RUNS` (default 40 commands a path),
//! `STT_BENCH_PEER` (0 skips the model).

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use stt_proto::{AssistantEvent, ChatRole, DaemonEvent, SegmentDone, SpeechStart, SpeechStop};
use stt_testkit::daemon::HandWrittenDaemon;
use stt_testkit::perf::{Stats, env_num};
use stt_testkit::viewer::{Seen, speak, watch};
use stt_testkit::{DEADLINE, Proc, Sandbox, msg, wait_for};

const START: &str = "<!-- bench-intents:start -->";
const END: &str = "<!-- bench-intents:end -->";

/// The commands, in turn: (what is said, whether a tool's result comes before the answer).
const COMMANDS: &[(&str, bool)] = &[
    ("what time is it", false),
    ("set a timer for ten minutes", true),
    ("what's the date today", false),
    ("cancel the timer", false),
];

struct Stack {
    sandbox: Sandbox,
    daemon: HandWrittenDaemon,
    seen: Seen,
    _assistant: Proc,
    wav: PathBuf,
    beats: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Drop for Stack {
    fn drop(&mut self) {
        self.beats.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The release assistant following a hand-written daemon that beats every 200 ms, the voice
/// on into a WAV file; `llm`: the config's `[llm]` and `[intents]` lines.
fn stack(llm: &str) -> Stack {
    let sandbox = Sandbox::new();
    let wav = sandbox.root().join("voice.wav");
    let config = format!("{llm}\n[voice]\nenabled = true\ndevice = \"wav:{}\"\n", wav.display());
    std::fs::write(sandbox.config_file(), config).unwrap();
    let daemon = HandWrittenDaemon::start(&sandbox.daemon_socket());
    let assistant = sandbox.spawn("stt-assistant", &[]);
    wait_for("the assistant to follow", DEADLINE, || (daemon.subscribers() > 0).then_some(()));
    let beats = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let (on, publisher) = (beats.clone(), daemon.publisher());
    std::thread::spawn(move || {
        let mut seq = 0;
        while on.load(std::sync::atomic::Ordering::SeqCst) {
            seq += 1;
            publisher.publish(&msg::heartbeat(seq));
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    let seen = watch(sandbox.assistant_socket());
    wait_for("the viewer to attach and STT to be healthy", DEADLINE, || {
        let s = stt_testkit::viewer::status(&sandbox);
        (s["viewers"].as_u64() > Some(0) && s["stt_healthy"] == true).then_some(())
    });
    Stack { sandbox, daemon, seen, _assistant: assistant, wav, beats }
}

impl Stack {
    fn ctl(&self, args: &[&str]) {
        let out = self.sandbox.run("stt-ctl", args);
        assert_eq!(out.code, Some(0), "{args:?}: {out:?}");
    }

    /// Events seen since index `from`, with their times.
    fn since(&self, from: usize) -> Vec<(Instant, AssistantEvent)> {
        let seen = self.seen.lock().unwrap();
        seen[from.min(seen.len())..].to_vec()
    }

    fn seen_len(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    fn wav_len(&self) -> u64 {
        std::fs::metadata(&self.wav).map(|m| m.len()).unwrap_or(0)
    }
}

/// When the answer (and the tool's result) came, from `events`.
fn answer_at(events: &[(Instant, AssistantEvent)]) -> (Option<Instant>, Option<Instant>) {
    let result =
        events.iter().find_map(|(at, e)| matches!(e, AssistantEvent::ToolResult(_)).then_some(*at));
    let answer = events.iter().find_map(|(at, e)| match e {
        AssistantEvent::ChatMessage(m) if m.role == ChatRole::Assistant && !m.partial => Some(*at),
        _ => None,
    });
    (result, answer)
}

/// Cancels every timer `status` lists, so a round of [`COMMANDS`] starts as the first did:
/// a timer left by a misheard "cancel the timer" would make the next one answer "Which one?"
/// with a list that grows round by round (and slower to say).
fn no_timers(sandbox: &Sandbox) {
    let timers = stt_testkit::viewer::status(sandbox)["timers"].clone();
    for id in timers.as_array().into_iter().flatten().filter_map(|t| t["id"].as_u64()) {
        let out = sandbox.run("stt-ctl", &["timer-cancel", &id.to_string()]);
        assert_eq!(out.code, Some(0), "timer-cancel {id}: {out:?}");
    }
}

/// Typed commands: Enter → tool result, Enter → answer (ms).
fn typed(stack: &Stack, runs: usize, deadline: Duration) -> (Vec<f64>, Vec<f64>) {
    let (mut results, mut answers) = (Vec::new(), Vec::new());
    for i in 0..runs {
        let (text, tool) = COMMANDS[i % COMMANDS.len()];
        if i % COMMANDS.len() == 0 {
            no_timers(&stack.sandbox);
        }
        stack.ctl(&["command-start"]);
        stack.ctl(&["command-edit", "--text", text]);
        let from = stack.seen_len();
        let enter = Instant::now();
        stack.ctl(&["command-execute"]);
        let (result, answer) = wait_for(&format!("the answer to {text:?}"), deadline, || {
            let (result, answer) = answer_at(&stack.since(from));
            answer.filter(|_| !tool || result.is_some()).map(|a| (result, a))
        });
        answers.push((answer - enter).as_secs_f64() * 1000.0);
        if let Some(result) = result {
            results.push((result - enter).as_secs_f64() * 1000.0);
        }
        wait_for("idle again", deadline, || {
            (stt_testkit::viewer::status(&stack.sandbox)["mode"] == "idle").then_some(())
        });
    }
    (results, answers)
}

/// Spoken commands: the final published (execute held since the words began) → the first
/// audio of the spoken answer (ms).
fn spoken(stack: &Stack, runs: usize, deadline: Duration) -> Vec<f64> {
    let mut first_audio = Vec::new();
    for i in 0..runs {
        let (text, _) = COMMANDS[i % COMMANDS.len()];
        if i % COMMANDS.len() == 0 {
            no_timers(&stack.sandbox);
        }
        let seg = 1000 + i as u64;
        stack.ctl(&["command-start"]);
        stack.daemon.publish(&DaemonEvent::SpeechStart(SpeechStart { seg_id: seg, start: 0.0 }));
        // Push to talk: the key is let go while the words are being transcribed.
        let mut held = stack.sandbox.command("stt-ctl");
        held.args(["command-execute", "--wait=20000"]);
        let mut held = held.spawn().unwrap();
        stack.daemon.publish(&DaemonEvent::SpeechStop(SpeechStop { seg_id: seg, end: 1.5 }));
        std::thread::sleep(Duration::from_millis(50));
        let before = stack.wav_len();
        let end = Instant::now();
        stack.daemon.publish(&DaemonEvent::Transcript(msg::transcript(seg, text)));
        stack.daemon.publish(&DaemonEvent::SegmentDone(SegmentDone { seg_id: seg }));
        let heard = wait_for(&format!("the voice to say the answer to {text:?}"), deadline, || {
            (stack.wav_len() > before).then(Instant::now)
        });
        first_audio.push((heard - end).as_secs_f64() * 1000.0);
        assert!(held.wait().unwrap().success(), "the held execute ran");
        wait_for("idle again", deadline, || {
            (stt_testkit::viewer::status(&stack.sandbox)["mode"] == "idle").then_some(())
        });
        // The answer is said whole before the next command.
        let mut last = stack.wav_len();
        loop {
            std::thread::sleep(Duration::from_millis(300));
            let now = stack.wav_len();
            if now == last {
                break;
            }
            last = now;
        }
    }
    first_audio
}

/// The end of a spoken turn → the first audio of its spoken answer, through the real release
/// daemon (whisper on espeak-ng speech fed at real time on its stdin, the default end of a
/// turn, live partials on) and assistant: push to talk as a hotkey does it, `command-start`
/// before the words and `command-execute --wait` held from their end. The clock starts as
/// the feeder writes the last sample of speech (above -36 dBFS) and stops when the voice's
/// WAV file grows (ms). A command whisper hears as other words is not timed: its words are
/// returned beside the times.
fn spoken_real(runs: usize, deadline: Duration) -> (Vec<f64>, Vec<String>) {
    let sandbox = Sandbox::new();
    let wav = sandbox.root().join("voice.wav");
    let config = format!(
        "[llm]\nenabled = false\n[voice]\nenabled = true\ndevice = \"wav:{}\"\n",
        wav.display()
    );
    std::fs::write(sandbox.config_file(), config).unwrap();
    let utterances: Vec<(Vec<i16>, usize)> = COMMANDS
        .iter()
        .enumerate()
        .map(|(i, (text, _))| {
            let samples = pcm16(&speak(sandbox.root(), &format!("said{i}"), text));
            let end = samples.iter().rposition(|s| s.unsigned_abs() > 500).unwrap_or(0);
            (samples, end)
        })
        .collect();
    let (_daemon, stdin) = sandbox.spawn_with_stdin("stt-daemon", &["--input", "-"]);
    let feeder = Feeder::start(stdin);
    let _assistant = sandbox.spawn("stt-assistant", &[]);
    let seen = watch(sandbox.assistant_socket());
    wait_for("the viewer to attach and STT to be healthy", deadline, || {
        let s = stt_testkit::viewer::status(&sandbox);
        (s["viewers"].as_u64() > Some(0) && s["stt_healthy"] == true).then_some(())
    });
    let ctl = |args: &[&str]| {
        let out = sandbox.run("stt-ctl", args);
        assert_eq!(out.code, Some(0), "{args:?}: {out:?}");
    };
    let wav_len = || std::fs::metadata(&wav).map(|m| m.len()).unwrap_or(0);
    let quiet = || {
        let mut last = wav_len();
        loop {
            std::thread::sleep(Duration::from_millis(300));
            let now = wav_len();
            if now == last {
                break;
            }
            last = now;
        }
    };
    // The voice loads on its own thread: a typed command first.
    ctl(&["command-start"]);
    ctl(&["command-edit", "--text", "what time is it"]);
    ctl(&["command-execute", "--wait=60000"]);
    wait_for("the voice to speak", Duration::from_secs(120), || (wav_len() > 44).then_some(()));
    quiet();
    let (mut first_audio, mut misheard) = (Vec::new(), Vec::new());
    for i in 0..runs {
        let (samples, end) = &utterances[i % utterances.len()];
        let text = COMMANDS[i % COMMANDS.len()].0;
        if i % COMMANDS.len() == 0 {
            no_timers(&sandbox);
        }
        ctl(&["command-start"]);
        let before = wav_len();
        let from = seen.lock().unwrap().len();
        let spoken = feeder.say(samples.clone(), *end);
        let end = spoken.recv().unwrap();
        // The key let go as the words end: execute, held until the final.
        let mut held = sandbox.command("stt-ctl");
        held.args(["command-execute", "--wait=20000"]);
        let mut held = held.spawn().unwrap();
        let heard_as = || -> Vec<String> {
            seen.lock().unwrap()[from..]
                .iter()
                .filter_map(|(_, e)| match e {
                    AssistantEvent::Transcript(t) => Some(t.text.clone()),
                    _ => None,
                })
                .collect()
        };
        // The answer's first audio, or the held execute refused: whisper heard other words,
        // which went to the model (off here).
        let outcome = stt_testkit::wait_until(deadline, || {
            if wav_len() > before {
                return Some(Some(Instant::now()));
            }
            held.try_wait().ok().flatten().filter(|status| !status.success()).map(|_| None)
        });
        let outcome = outcome.unwrap_or_else(|| {
            panic!("the voice did not answer {text:?}, heard as {:?}", heard_as())
        });
        if outcome.is_none() {
            // Refused, the command stays armed: a person would cancel it.
            ctl(&["command-cancel"]);
        }
        wait_for("idle again", deadline, || {
            (stt_testkit::viewer::status(&sandbox)["mode"] == "idle").then_some(())
        });
        let Some(heard) = outcome else {
            eprintln!("bench-intents: {text:?} misheard as {:?}: not timed", heard_as());
            misheard.push(heard_as().join(" "));
            quiet();
            continue;
        };
        first_audio.push((heard - end).as_secs_f64() * 1000.0);
        assert!(held.wait().unwrap().success(), "the held execute ran");
        let ms = first_audio.last().copied().unwrap_or_default();
        eprintln!("bench-intents: {text:?} heard as {:?}: {ms:.0} ms", heard_as());
        quiet();
    }
    (first_audio, misheard)
}

/// The 16-bit samples of a WAV file's `data` chunk.
fn pcm16(path: &Path) -> Vec<i16> {
    let bytes = std::fs::read(path).unwrap();
    let at = bytes.windows(4).position(|w| w == b"data").expect("a data chunk") + 8;
    bytes[at..].chunks_exact(2).map(|b| i16::from_le_bytes([b[0], b[1]])).collect()
}

/// Writes 16 kHz PCM to the daemon's stdin at real time, 10 ms at a time: silence, or the
/// words it is given; tells when it wrote the words' last sample of speech.
struct Feeder {
    words: std::sync::mpsc::Sender<(Vec<i16>, usize, std::sync::mpsc::Sender<Instant>)>,
}

impl Feeder {
    fn start(mut stdin: std::process::ChildStdin) -> Self {
        use std::io::Write as _;
        let (words, rx) = std::sync::mpsc::channel::<(Vec<i16>, usize, _)>();
        std::thread::spawn(move || {
            const CHUNK: usize = 160;
            let start = Instant::now();
            let mut ticks: u32 = 0;
            let mut saying: Option<(Vec<i16>, usize, usize, std::sync::mpsc::Sender<Instant>)> =
                None;
            loop {
                if saying.is_none()
                    && let Ok((samples, end, told)) = rx.try_recv()
                {
                    saying = Some((samples, end, 0, told));
                }
                let mut chunk = [0i16; CHUNK];
                let mut ended = None;
                if let Some((samples, end, at, told)) = saying.as_mut() {
                    let n = CHUNK.min(samples.len() - *at);
                    chunk[..n].copy_from_slice(&samples[*at..*at + n]);
                    if (*at..*at + CHUNK).contains(end) {
                        ended = Some(told.clone());
                    }
                    *at += n;
                    if *at >= samples.len() {
                        saying = None;
                    }
                }
                let bytes: Vec<u8> = chunk.iter().flat_map(|s| s.to_le_bytes()).collect();
                if stdin.write_all(&bytes).and_then(|()| stdin.flush()).is_err() {
                    return;
                }
                if let Some(told) = ended {
                    let _ = told.send(Instant::now());
                }
                ticks += 1;
                let next = start + Duration::from_millis(10) * ticks;
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
        });
        Self { words }
    }

    /// Says `samples` (their speech ending at sample `end`) once what is being said is done.
    fn say(&self, samples: Vec<i16>, end: usize) -> std::sync::mpsc::Receiver<Instant> {
        let (told, rx) = std::sync::mpsc::channel();
        self.words.send((samples, end, told)).unwrap();
        rx
    }
}

/// The nearest-rank percentile `p` of `values`.
fn percentile(values: &[f64], p: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len().max(1)) - 1).copied().unwrap_or(f64::NAN)
}

fn row(what: &str, values: &[f64]) -> String {
    let s = Stats::of(values.to_vec());
    let p90 = percentile(values, 0.9);
    format!(
        "| {what} | {} | {:.1} ms | {p90:.1} ms | {:.1} ms | {:.1} ms |\n",
        s.n, s.p50, s.p95, s.max
    )
}

fn main() {
    let runs = usize::try_from(env_num("STT_BENCH_RUNS", 40)).unwrap_or(40);
    let local = stack("[llm]\nenabled = false\n");
    // The voice loads on its own thread: the first answer would wait for it.
    stack_warm(&local);
    let (results, answers) = typed(&local, runs, DEADLINE);
    let audio = spoken(&local, runs.min(20), DEADLINE);
    drop(local);
    let (real, misheard) = spoken_real(runs.min(20), DEADLINE);
    let turn = (Stats::of(real.clone()).p50, percentile(&real, 0.9));

    let mut table =
        String::from("| | runs | median | p90 | p95 | max |\n|---|---:|---:|---:|---:|---:|\n");
    table.push_str(&row("Enter → the tool's result (set_timer), without the model", &results));
    table.push_str(&row("Enter → the answer in the conversation, without the model", &answers));
    table.push_str(&row(
        "the daemon's final → the spoken answer's first audio (no partial before it)",
        &audio,
    ));
    table.push_str(&row(
        "end of the spoken turn → first audio: the real daemon and assistant, speech at real time",
        &real,
    ));
    let (results, answers) = (Stats::of(results), Stats::of(answers));

    let peer = if env_num("STT_BENCH_PEER", 1) == 1 {
        let dir = tempfile::tempdir().unwrap();
        let server = stt_testkit::llama::Server::start(dir.path());
        let model = stack(&format!(
            "[llm]\nendpoint = \"http://127.0.0.1:{}/v1/chat/completions\"\nrequest_timeout_s = 120\n[intents]\nenabled = false\n",
            server.port
        ));
        stack_warm(&model);
        let (_, answers) = typed(&model, runs.min(8), Duration::from_secs(240));
        Some(answers)
    } else {
        None
    };
    if let Some(peer) = &peer {
        table.push_str(&row(
            "Enter → the answer, the same commands through the installed model (the peer)",
            peer,
        ));
    }
    println!("{table}");

    if let Some(target) = std::env::var_os("STT_BENCH_WRITE") {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root");
        let path = root.join(target);
        let met = |ok: bool| if ok { "met" } else { "not met" };
        let section = format!(
            "{START}\n## Commands without the model (`scripts/bench-intents`)\n\n\
             Measured {} on {}, release build. The release `stt-assistant` follows a daemon \
             socket the bench writes events on (heartbeats every 200 ms; no whisper), the voice \
             on into a WAV file. Typed: `stt-ctl command-start`, `command-edit`, then the clock \
             starts as `stt-ctl command-execute` is started (a hotkey's Enter) and stops at the \
             `tool_result` and at the answer's `chat_message` on a viewer's stream. The commands \
             in turn: {}. The daemon's final → first audio: `command-execute --wait` is held \
             from the words' start; the clock starts as the hand-written daemon publishes the \
             final and `segment_done` (no partial before it, so nothing of the answer is ready \
             ahead) and stops when the voice's WAV file grows. End of the spoken turn → first \
             audio: the release `stt-daemon --input -` with its default config (whisper tiny.en, \
             live partials, the prosody end of a turn) fed the same commands spoken by espeak-ng \
             at real time on its stdin, the release assistant as above: `command-start` before \
             the words, `command-execute --wait` started as they end (push to talk let go); the \
             clock starts as the last sample of speech is written and stops when the voice's WAV \
             file grows. A partial that a template takes whole has its answer synthesized ahead \
             (`Voice::prepare`), so it plays as the final runs the command. The peer is the same \
             typed commands through the installed Qwen2.5-Coder-1.5B on llama-server (one \
             thread), `[intents]` off. Reproduce with `scripts/bench-intents`.\n\n{table}\n\
             **Targets** (issue 44): Enter → tool run ≤ 50 ms: **{}** (median {:.1}, p95 {:.1} ms); \
             Enter → answer ≤ 100 ms: **{}** (median {:.1}, p95 {:.1} ms); end of a spoken turn → \
             first audio ≤ 0.8 s, median and p90: **{}** (median {:.0} ms, p90 {:.0} ms).\n\n\
             Spoken commands whisper heard as other words (they went to the model, off here, \
             and are not timed): {}.\n{END}",
            stt_testkit::perf::today(),
            stt_testkit::perf::machine(),
            COMMANDS.iter().map(|(c, _)| format!("\"{c}\"")).collect::<Vec<_>>().join(", "),
            met(results.p95 <= 50.0),
            results.p50,
            results.p95,
            met(answers.p95 <= 100.0),
            answers.p50,
            answers.p95,
            met(turn.0 <= 800.0 && turn.1 <= 800.0),
            turn.0,
            turn.1,
            if misheard.is_empty() {
                "none".to_owned()
            } else {
                let said: Vec<String> = misheard.iter().map(|m| format!("\"{m}\"")).collect();
                format!(
                    "{} of {} ({})",
                    misheard.len(),
                    real.len() + misheard.len(),
                    said.join(", ")
                )
            },
        );
        stt_testkit::perf::write_section(&path, START, END, &section).unwrap();
        println!("wrote {}", path.display());
    }
}

/// One command first, so the voice is loaded and the caches warm.
fn stack_warm(stack: &Stack) {
    let _ = typed(stack, 1, Duration::from_secs(240));
    std::thread::sleep(Duration::from_millis(500));
}
