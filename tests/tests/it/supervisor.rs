//! `stt-daemon up` across real processes: it starts the daemon and the assistant in order,
//! restarts a crashed child while the others and viewers reconnect, leaves nothing behind
//! however it ends, gives up on a child that keeps failing (with its last words), runs once
//! per user, stops everything when the TUI quits, and holds a WAV input until the assistant
//! is first armed.
//!
//! The daemon runs on a spoken WAV (`--input`), which `up` holds until the first arm, so no
//! microphone is needed and nothing is transcribed unless a test arms.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use stt_proto::AssistantEvent;
use stt_testkit::procs::{self, child_named, left_behind, up_children};
use stt_testkit::viewer::{events, speak, status, watch};
use stt_testkit::{Proc, Sandbox, expect_within};

/// For anything that loads a model or waits on the machine's other tests.
use stt_testkit::DEADLINE;

/// `up` and its two children, each answering on its socket.
struct Up {
    up: Proc,
    daemon: i32,
    assistant: i32,
}

/// A spoken command as a WAV file in the sandbox.
fn wav(sandbox: &Sandbox) -> String {
    speak(sandbox.root(), "lights", "turn on the kitchen lights").to_string_lossy().into_owned()
}

/// Starts `stt-daemon up --input <wav> <extra>` and waits until the assistant answers
/// `status` and both children are there.
fn start_up(sandbox: &Sandbox, extra: &[&str]) -> Up {
    let wav = wav(sandbox);
    let mut args = vec!["up", "--input", wav.as_str()];
    args.extend_from_slice(extra);
    let mut up = sandbox.spawn("stt-daemon", &args);
    let (daemon, assistant) = up_children(sandbox, &mut up);
    Up { up, daemon, assistant }
}

/// Waits until none of `pids`, their children or their process groups is alive.
fn expect_nothing_left(pids: &[i32]) {
    expect_within("no process of up's left", Duration::from_secs(10), || {
        let left = left_behind(pids);
        if left.is_empty() { Ok(()) } else { Err(format!("{left:?}")) }
    });
}

fn heartbeats_in(path: &Path, from: usize) -> usize {
    let text = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(text.get(from..).unwrap_or_default()).into_owned();
    text.lines().filter(|l| l.contains("\"type\":\"heartbeat\"")).count()
}

#[test]
fn a_killed_assistant_is_back_within_2_s_and_a_running_dump_sees_it_again() {
    let sandbox = Sandbox::new();
    let Up { mut up, assistant, .. } = start_up(&sandbox, &[]);
    let (mut dump, out) = sandbox.spawn_with_stdout("stt-tui", &["--dump", "0"]);
    expect_within("the dump prints a heartbeat", DEADLINE, || {
        if heartbeats_in(&out, 0) > 0 { Ok(()) } else { Err(dump.log()) }
    });

    kill(Pid::from_raw(assistant), Signal::SIGKILL).unwrap();
    let killed = Instant::now();
    let restarted = expect_within("a new assistant answers status", Duration::from_secs(2), || {
        let child = child_named(up.pid(), "stt-assistant").filter(|c| c.pid != assistant);
        let answers = sandbox.run("stt-ctl", &["status"]).code == Some(0);
        match child {
            Some(child) if answers => Ok(child.pid),
            other => Err(format!("{other:?}, answers: {answers}")),
        }
    });
    assert!(killed.elapsed() < Duration::from_secs(2));
    assert!(up.log().contains("[up] stt-assistant was killed by SIGKILL; restarting it in 250 ms"));

    // The same dump, never restarted, follows the new assistant.
    let offset = usize::try_from(std::fs::metadata(&out).unwrap().len()).unwrap();
    expect_within("the dump prints the new assistant's heartbeats", DEADLINE, || {
        if heartbeats_in(&out, offset) > 0 { Ok(()) } else { Err(dump.log()) }
    });
    assert!(dump.is_running(), "{}", dump.log());
    assert!(up.is_running(), "{}", up.log());
    assert_eq!(child_named(up.pid(), "stt-assistant").map(|c| c.pid), Some(restarted));
}

#[test]
fn a_killed_daemon_is_restarted_and_the_assistant_follows_the_new_one() {
    let sandbox = Sandbox::new();
    let Up { mut up, daemon, assistant } = start_up(&sandbox, &[]);
    kill(Pid::from_raw(daemon), Signal::SIGKILL).unwrap();
    // The assistant forgets the old daemon's heartbeats when it loses it (at once: the kernel
    // closes the socket), so healthy again means a heartbeat from the new one.
    expect_within(
        "a new daemon answers, and the same assistant is healthy again",
        DEADLINE,
        || {
            let child = child_named(up.pid(), "stt-daemon").filter(|c| c.pid != daemon);
            let s = status(&sandbox);
            let log = up.log();
            match child {
                Some(c)
                    if log
                        .contains(&format!("stt-daemon answers on its socket (pid {})", c.pid)) =>
                {
                    if s["stt_healthy"] == true {
                        Ok(())
                    } else {
                        Err(format!("{s}"))
                    }
                }
                other => Err(format!("{other:?}: {s}\n{log}")),
            }
        },
    );
    assert!(up.log().contains("[up] stt-daemon was killed by SIGKILL; restarting it in 250 ms"));
    assert_eq!(child_named(up.pid(), "stt-assistant").map(|c| c.pid), Some(assistant));
    assert!(up.is_running(), "{}", up.log());
}

#[test]
fn sigterm_to_up_stops_every_child_and_exits_0() {
    let sandbox = Sandbox::new();
    let Up { mut up, daemon, assistant } = start_up(&sandbox, &[]);
    let pid = up.pid();
    // The daemon and the assistant run in process groups of their own.
    assert_eq!(procs::info(daemon).unwrap().pgid, daemon);
    assert_eq!(procs::info(assistant).unwrap().pgid, assistant);

    let status = up.signal_and_wait(Signal::SIGTERM);
    assert!(status.success(), "{status:?}: {}", up.log());
    expect_nothing_left(&[pid, daemon, assistant]);
    assert!(up.log().contains("[up] stopped"), "{}", up.log());
    assert!(!sandbox.daemon_socket().exists(), "the daemon did not clean up");
    assert!(!sandbox.assistant_socket().exists(), "the assistant did not clean up");
}

#[test]
fn sigkill_to_up_takes_its_children_along_and_a_new_up_starts() {
    let sandbox = Sandbox::new();
    let Up { mut up, daemon, assistant } = start_up(&sandbox, &[]);
    let pid = up.pid();
    up.signal_and_wait(Signal::SIGKILL);
    expect_nothing_left(&[pid, daemon, assistant]);

    // The lock went with it, and the stale sockets are replaced.
    let mut again = start_up(&sandbox, &[]);
    let status = again.up.signal_and_wait(Signal::SIGINT);
    assert!(status.success(), "{status:?}: {}", again.up.log());
}

/// A config whose assistant refuses to start, every time: a regular file where its socket
/// should go. The file and the config.
fn failing_assistant(sandbox: &Sandbox) -> (std::path::PathBuf, std::path::PathBuf) {
    let blocker = sandbox.root().join("not-a-socket");
    std::fs::write(&blocker, "").unwrap();
    let config = sandbox.root().join("failing.toml");
    std::fs::write(&config, format!("[assistant]\nsocket = \"{}\"\n", blocker.display())).unwrap();
    (blocker, config)
}

#[test]
fn an_assistant_that_keeps_failing_is_given_up_on_with_its_last_words() {
    let sandbox = Sandbox::new();
    let (blocker, config) = failing_assistant(&sandbox);
    let wav = wav(&sandbox);
    let config_arg = config.to_string_lossy();
    let mut up = sandbox.spawn("stt-daemon", &["up", "--input", &wav, "--config", &config_arg]);

    let status = up.wait(DEADLINE);
    assert_eq!(status.code(), Some(1), "{}", up.log());
    let log = up.log();
    let message = log.split("stt-daemon: error: ").nth(1).unwrap_or_else(|| panic!("{log}"));
    assert!(
        message.starts_with(
            "giving up on stt-assistant: it failed 3 times in a row before it answered on its \
             socket; the last time it exited with status 1. Its last lines on stderr:\n"
        ),
        "{message}"
    );
    assert!(
        message.trim_end().ends_with(&format!(
            "stt-assistant: error: refusing to replace '{}': it exists and is not a socket; move \
             it away",
            blocker.display()
        )),
        "{message}"
    );
    // Three tries, then the daemon was stopped too.
    assert_eq!(log.matches("[up] started stt-assistant").count(), 3, "{log}");
    assert!(log.contains("[up] stopped"), "{log}");
    assert!(!sandbox.daemon_socket().exists(), "the daemon was left running");
}

#[test]
fn with_the_tui_the_logs_go_to_the_state_directory_and_a_give_up_names_the_file() {
    let sandbox = Sandbox::new();
    let (_, config) = failing_assistant(&sandbox);
    let config_arg = config.to_string_lossy();
    // The assistant never answers, so the TUI is never started: `up` gives up first.
    let mut up = sandbox.spawn("stt-daemon", &["up", "--with-tui", "--config", &config_arg]);
    let status = up.wait(DEADLINE);
    assert_eq!(status.code(), Some(1), "{}", up.log());
    let file = sandbox.root().join("state/stt/up.log");
    let log = up.log();
    assert!(log.contains("giving up on stt-assistant"), "{log}");
    assert!(log.contains(&format!("The whole log is in {}.", file.display())), "{log}");
    // Nothing of the children's reached the terminal the TUI would own; the file has it all.
    assert!(!log.contains("[up] started stt-assistant"), "{log}");
    let written = std::fs::read_to_string(&file).unwrap();
    assert_eq!(written.matches("[up] started stt-assistant").count(), 3, "{written}");
    assert!(written.contains("[assistant] stt-assistant: error: refusing to replace"), "{written}");
}

#[test]
fn a_second_up_is_refused_and_the_first_keeps_running() {
    let sandbox = Sandbox::new();
    let Up { up, daemon, assistant } = start_up(&sandbox, &[]);
    let wav = wav(&sandbox);
    let mut second = sandbox.spawn("stt-daemon", &["up", "--input", &wav]);
    let status = second.wait(DEADLINE);
    assert_eq!(status.code(), Some(1), "{}", second.log());
    let expected = format!(
        "stt-daemon: error: stt is already running (`stt-daemon up`, pid {}; it holds '{}'",
        up.pid(),
        sandbox.runtime_dir().join("stt-up.lock").display()
    );
    assert!(second.log().starts_with(&expected), "{}", second.log());

    assert_eq!(sandbox.run("stt-ctl", &["status"]).code, Some(0));
    assert_eq!(child_named(up.pid(), "stt-daemon").map(|c| c.pid), Some(daemon));
    assert_eq!(child_named(up.pid(), "stt-assistant").map(|c| c.pid), Some(assistant));
}

/// A stand-in for the TUI: records its pid and arguments, and quits when `quit` appears.
fn fake_tui(dir: &Path) -> String {
    let d = dir.display();
    format!(
        "#!/bin/sh\n\
         printf '%s\\n' \"$@\" > '{d}/args'\n\
         echo $$ > '{d}/pid.tmp' && mv '{d}/pid.tmp' '{d}/pid'\n\
         while [ ! -e '{d}/quit' ]; do sleep 0.05; done\n\
         exit 0\n"
    )
}

#[test]
fn quitting_the_tui_stops_everything_and_up_exits_0() {
    let sandbox = Sandbox::new();
    // `up` runs the binaries next to itself: a copy of it, the real assistant, a fake TUI.
    let bin = sandbox.root().join("bin");
    let tui = sandbox.root().join("tui");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&tui).unwrap();
    let exe = bin.join("stt-daemon");
    let real = stt_testkit::bin("stt-daemon");
    std::fs::hard_link(&real, &exe).or_else(|_| std::fs::copy(&real, &exe).map(drop)).unwrap();
    std::os::unix::fs::symlink(stt_testkit::bin("stt-assistant"), bin.join("stt-assistant"))
        .unwrap();
    stt_testkit::write_program(&bin.join("stt-tui"), &fake_tui(&tui));

    let config = sandbox.config_file();
    std::fs::write(&config, "[llm]\nenabled = false\n").unwrap();
    let log = sandbox.root().join("up.log");
    let wav = wav(&sandbox);
    let (log_arg, config_arg) = (log.to_string_lossy(), config.to_string_lossy());
    let args = ["up", "--with-tui", "--input", &wav, "--log", &log_arg, "--config", &config_arg];
    let mut up = sandbox.spawn_program("stt-daemon up", &exe, &args);

    let tui_pid: i32 = expect_within("the TUI starts", DEADLINE, || {
        let pid = std::fs::read_to_string(tui.join("pid")).map_err(|e| e.to_string())?;
        pid.trim().parse().map_err(|e| format!("{pid:?}: {e}"))
    });
    // Only once the assistant answered; in up's process group (the terminal's foreground),
    // with the config.
    assert_eq!(sandbox.run("stt-ctl", &["status"]).code, Some(0));
    let info = procs::info(tui_pid).unwrap();
    assert_eq!(info.ppid, up.pid());
    assert_eq!(info.pgid, procs::info(up.pid()).unwrap().pgid);
    assert_eq!(
        std::fs::read_to_string(tui.join("args")).unwrap(),
        format!("--config\n{config_arg}\n")
    );
    let (daemon, assistant) = up_children(&sandbox, &mut up);

    std::fs::write(tui.join("quit"), "").unwrap();
    let status = up.wait(DEADLINE);
    assert!(status.success(), "{status:?}: {}", up.log());
    expect_nothing_left(&[up.pid(), daemon, assistant, tui_pid]);

    // The terminal was the TUI's alone: the children's lines went to --log.
    assert_eq!(up.log(), "", "up wrote on the TUI's terminal");
    let log = std::fs::read_to_string(&log).unwrap();
    for needle in ["[daemon] ", "[assistant] ", "[up] started stt-tui", "[up] stopped"] {
        assert!(log.contains(needle), "{needle:?} not in the log:\n{log}");
    }
}

#[test]
fn a_file_input_plays_once_the_assistant_is_first_armed() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.config_file(), "[llm]\nenabled = false\n").unwrap();
    let Up { up, .. } = start_up(&sandbox, &["--fast"]);
    let seen = watch(sandbox.assistant_socket());

    // Held: heartbeats go by, and no speech.
    let heard = expect_within("three heartbeats", DEADLINE, || {
        let events = events(&seen);
        let beats = events.iter().filter(|e| matches!(e, AssistantEvent::Heartbeat(_))).count();
        if beats >= 3 { Ok(events) } else { Err(format!("{events:?}")) }
    });
    let speech = |e: &AssistantEvent| {
        matches!(e, AssistantEvent::SpeechStart(_) | AssistantEvent::Transcript(_))
    };
    assert!(!heard.iter().any(speech), "the file played before the first arm: {heard:?}");

    let out = sandbox.run("stt-ctl", &["command-start"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    expect_within("the file plays into the command buffer", DEADLINE, || {
        let s = status(&sandbox);
        let buffer = s["command_buffer"].as_str().unwrap_or_default().to_lowercase();
        if buffer.contains("kitchen") && buffer.contains("lights") {
            Ok(())
        } else {
            Err(format!("{s}\n{}", up.log()))
        }
    });
    assert!(up.log().contains("[up] playing the input"), "{}", up.log());
}
