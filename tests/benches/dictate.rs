//! The dictation benchmark: final transcript → text in the window, and 200 phrases in a row
//! with nothing lost or doubled.
//!
//! A real X server (Xvfb) with a plain text window (xterm running `cat`, so every character
//! it receives lands in a file: `stt_testkit::x11`), the release `stt-assistant` (model off)
//! in dictation, following a daemon socket this process writes `transcript` events on. Each
//! phrase is ten words; the clock starts when its event is published and stops when the
//! window's file holds the whole phrase (polled every 0.2 ms). Beside it, the peer: the
//! same phrases typed by `xdotool type` run directly, the floor that stt's hops (the daemon
//! socket, the assistant's loop, the dictation lane) add to.
//!
//! Run it with `scripts/bench-dictate`, which builds the release assistant and writes the
//! figures into `docs/PERFORMANCE.md`. Knob: `STT_BENCH_PHRASES` (default 200).

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use stt_proto::DaemonEvent;
use stt_testkit::daemon::HandWrittenDaemon;
use stt_testkit::perf::{Stats, env_num};
use stt_testkit::x11::Display;
use stt_testkit::{DEADLINE, Sandbox, msg, wait_for};

const START: &str = "<!-- bench-dictate:start -->";
const END: &str = "<!-- bench-dictate:end -->";

/// Words the phrases are drawn from: plain dictation, no spoken commands.
const WORDS: &[&str] = &[
    "the", "report", "is", "ready", "for", "review", "and", "we", "should", "send", "it", "to",
    "Anna", "before", "lunch", "tomorrow", "please", "check", "numbers", "in", "last", "table",
    "again", "because", "budget", "changed", "this", "morning", "after", "meeting",
];

/// Phrase `i`: ten words, a capital and a full stop, as whisper writes a sentence.
fn phrase(i: usize) -> String {
    let words: Vec<&str> = (0..10).map(|k| WORDS[(i * 7 + k * 3 + k * k) % WORDS.len()]).collect();
    let mut text = words.join(" ");
    text[..1].make_ascii_uppercase();
    text.push('.');
    text
}

/// Waits until the window holds `want` in all; how long since `from`.
fn landed(display: &Display, want: &str, from: Instant) -> f64 {
    let deadline = from + DEADLINE;
    loop {
        if display.typed().len() >= want.len() {
            return from.elapsed().as_secs_f64() * 1000.0;
        }
        assert!(Instant::now() < deadline, "the window never got {want:?}: {:?}", display.typed());
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn main() {
    let n = usize::try_from(env_num("STT_BENCH_PHRASES", 200)).unwrap_or(200);
    let display = Display::start();
    let phrases: Vec<String> = (0..n).map(phrase).collect();

    // The peer: xdotool itself, the way the dictation lane runs it.
    let mut peer = Vec::new();
    let mut want = String::new();
    for text in phrases.iter().take(50) {
        if !want.is_empty() {
            want.push(' ');
        }
        let from = Instant::now();
        let sep = if display.typed().is_empty() { "" } else { " " };
        display.xdotool(&["type", "--delay", "0", &format!("{sep}{text}")]);
        want.push_str(text);
        peer.push(landed(&display, &want, from));
    }
    assert_eq!(display.typed(), want, "xdotool alone lost or doubled characters");
    display.clear();

    let sandbox = Sandbox::new();
    std::fs::write(sandbox.config_file(), "[llm]\nenabled = false\n").unwrap();
    let daemon = HandWrittenDaemon::start(&sandbox.daemon_socket());
    let _assistant = sandbox.spawn_with_env("stt-assistant", &[], &[("DISPLAY", display.name())]);
    wait_for("the assistant to follow", DEADLINE, || (daemon.subscribers() > 0).then_some(()));
    let out = sandbox.run("stt-ctl", &["dictate-start"]);
    assert_eq!(out.code, Some(0), "{out:?}");

    let mut latencies = Vec::new();
    let mut want = String::new();
    for (seg, text) in (1..).zip(&phrases) {
        if !want.is_empty() {
            want.push(' ');
        }
        want.push_str(text);
        let from = Instant::now();
        daemon.publish(&DaemonEvent::Transcript(msg::transcript(seg, text)));
        latencies.push(landed(&display, &want, from));
    }
    let typed = display.typed();
    let (lost, doubled) = difference(&want, &typed);
    let stt = Stats::of(latencies);
    let floor = Stats::of(peer);
    let chars = want.chars().count();

    let table = format!(
        "| | phrases | median | p95 | max |\n|---|---:|---:|---:|---:|\n\
         | final transcript → text in the window, through stt | {} | {:.1} ms | {:.1} ms | {:.1} ms |\n\
         | `xdotool type` run directly (the peer) | {} | {:.1} ms | {:.1} ms | {:.1} ms |\n",
        stt.n, stt.p50, stt.p95, stt.max, floor.n, floor.p50, floor.p95, floor.max
    );
    let verdict = format!(
        "{n} phrases in a row, {chars} characters: **{lost} lost, {doubled} doubled** (the window's text {} the phrases joined by spaces).",
        if typed == want { "equals" } else { "differs from" }
    );
    println!("{table}\n{verdict}");
    if let Some(target) = std::env::var_os("STT_BENCH_WRITE") {
        // Relative to the workspace root, where scripts/bench-dictate runs.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root");
        let path = root.join(target);
        let section = format!(
            "{START}\n## Dictation (`scripts/bench-dictate`)\n\n\
             Measured {} on {}, release build. Xvfb with an xterm whose `cat` writes what it \
             receives to a file; the release `stt-assistant` in dictation, following a daemon \
             socket the bench writes `transcript` events on, typing with `xdotool` (delay 0 for \
             ASCII). Each phrase is ten words (about 60 characters); the clock runs from the \
             event's publication to the whole phrase in the window's file. The peer is `xdotool \
             type` run by the bench itself: what typing costs before stt adds its hops. \
             Reproduce with `scripts/bench-dictate`.\n\n{table}\n{verdict}\n\n\
             **Targets** (issue 30): median ≤ 50 ms for a 10-word phrase: **{}** ({:.1} ms); \
             200 phrases with 0 lost or doubled characters: **{}**.\n{END}",
            stt_testkit::perf::today(),
            stt_testkit::perf::machine(),
            if stt.p50 <= 50.0 { "met" } else { "not met" },
            stt.p50,
            if lost == 0 && doubled == 0 && n >= 200 { "met" } else { "not met" },
        );
        stt_testkit::perf::write_section(&path, START, END, &section).unwrap();
        println!("wrote {}", path.display());
    }
}

/// Characters of `want` missing from `got`, and characters of `got` not in `want`, by the
/// longest common subsequence of the two (they are equal when both are 0).
fn difference(want: &str, got: &str) -> (usize, usize) {
    let a: Vec<char> = want.chars().collect();
    let b: Vec<char> = got.chars().collect();
    let mut row = vec![0_usize; b.len() + 1];
    for x in &a {
        let mut diagonal = 0;
        for (j, y) in b.iter().enumerate() {
            let up = row[j + 1];
            row[j + 1] = if x == y { diagonal + 1 } else { up.max(row[j]) };
            diagonal = up;
        }
    }
    let common = row[b.len()];
    (a.len() - common, b.len() - common)
}
