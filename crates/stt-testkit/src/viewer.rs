//! What the assistant tests share: spoken commands made with espeak-ng, a viewer that
//! records every event, `stt-ctl status` as JSON, and the usual stack of scripted model,
//! daemon, assistant and viewer ([`start_stack`]).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use stt_bus::{Link, Subscription};
use stt_proto::{AssistantEvent, ToolCall, ToolResult};

use crate::Sandbox;
use crate::llm_server::LlmServer;

/// Speaks `text` into a 16 kHz mono WAV with a second of silence around it.
pub fn speak(dir: &Path, name: &str, text: &str) -> PathBuf {
    speak_as(dir, name, "en-us", text)
}

/// [`speak`] in espeak-ng's `voice` (`en+f3`, `en-gb-scotland+m7`, …).
pub fn speak_as(dir: &Path, name: &str, voice: &str, text: &str) -> PathBuf {
    let raw = dir.join(format!("{name}.raw.wav"));
    let out = dir.join(format!("{name}.wav"));
    let status = Command::new("espeak-ng")
        .args(["-v", voice, "-s", "150", "-w"])
        .arg(&raw)
        .arg(text)
        .status();
    assert!(status.is_ok_and(|s| s.success()), "espeak-ng failed: install it (scripts/setup)");
    // -R: dither from a fixed seed, so the same text gives the same samples on every run.
    let status = Command::new("sox")
        .arg("-R")
        .arg(&raw)
        .args(["-r", "16000", "-c", "1", "-b", "16"])
        .arg(&out)
        .args(["pad", "1", "1"])
        .status();
    assert!(status.is_ok_and(|s| s.success()), "sox failed: install it (scripts/setup)");
    out
}

/// The person's chat messages a viewer saw (what went to the model as theirs), in order.
pub fn user_messages(seen: &Seen) -> Vec<String> {
    events(seen)
        .into_iter()
        .filter_map(|e| match e {
            AssistantEvent::ChatMessage(m) if m.role == stt_proto::ChatRole::User => Some(m.text),
            _ => None,
        })
        .collect()
}

/// Every event a viewer saw, with when it arrived.
pub type Seen = Arc<Mutex<Vec<(Instant, AssistantEvent)>>>;

/// Subscribes as a viewer on a thread of its own and records every event.
pub fn watch(socket: PathBuf) -> Seen {
    let seen: Seen = Arc::default();
    let sink = Arc::clone(&seen);
    std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
            return;
        };
        rt.block_on(async move {
            let mut link = Subscription::assistant(socket, "test-viewer", true).with_backoff(
                stt_bus::Backoff::new(Duration::from_millis(20), Duration::from_millis(200)),
            );
            loop {
                if let Link::Event(event) = link.next().await {
                    sink.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push((Instant::now(), event));
                }
            }
        });
    });
    seen
}

/// Waits until the viewer has seen the whole (not partial) chat line `text`; returns every
/// event seen by then.
pub fn answered(seen: &Seen, text: &str, deadline: Duration) -> Vec<AssistantEvent> {
    crate::expect_within(&format!("the answer {text:?}"), deadline, || {
        let events = events(seen);
        let found = events
            .iter()
            .any(|e| matches!(e, AssistantEvent::ChatMessage(m) if m.text == text && !m.partial));
        if found { Ok(events) } else { Err(format!("{events:?}")) }
    })
}

/// [`watch`]es the sandbox's assistant as a viewer and waits until `status` counts it, so
/// nothing published after this returns is missed.
pub fn watch_attached(sandbox: &Sandbox, deadline: Duration) -> Seen {
    let seen = watch(sandbox.assistant_socket());
    crate::expect_within("the viewer attaches", deadline, || {
        let s = status(sandbox);
        if s["viewers"] == 1 { Ok(()) } else { Err(format!("{s}")) }
    });
    seen
}

/// Waits until a viewer [`watch`]ing the sandbox's assistant before a restart is back on
/// the new one (it reconnects by itself, as the TUI does) and is the only one, so nothing
/// the new assistant publishes after this returns is missed. (A fresh [`watch_attached`]
/// after a restart would race the old viewer's return.)
pub fn reattached(sandbox: &Sandbox, deadline: Duration) {
    crate::expect_within("the viewer comes back", deadline, || {
        let s = status(sandbox);
        if s["viewers"] == 1 { Ok(()) } else { Err(format!("{s}")) }
    });
}

/// The tool call an event carries, for `find_map` over events.
pub fn tool_call(event: &AssistantEvent) -> Option<ToolCall> {
    match event {
        AssistantEvent::ToolCall(c) => Some(c.clone()),
        _ => None,
    }
}

/// The tool result an event carries, for `find_map` over events.
pub fn tool_result(event: &AssistantEvent) -> Option<ToolResult> {
    match event {
        AssistantEvent::ToolResult(r) => Some(r.clone()),
        _ => None,
    }
}

/// The events seen so far.
pub fn events(seen: &Seen) -> Vec<AssistantEvent> {
    seen.lock().unwrap_or_else(PoisonError::into_inner).iter().map(|(_, e)| e.clone()).collect()
}

/// `stt-ctl --json status`, parsed (`null` when the assistant does not answer).
pub fn status(sandbox: &Sandbox) -> Value {
    let out = sandbox.run("stt-ctl", &["--json", "status"]);
    serde_json::from_str(&out.stdout).unwrap_or(Value::Null)
}

/// A spoken command under way: the processes, the viewer, and when execute was accepted.
#[derive(Debug)]
pub struct SpokenCommand {
    pub assistant: crate::Proc,
    pub daemon: crate::Proc,
    pub seen: Seen,
    pub executed: Instant,
}

/// The two-press flow as a person does it, against whatever model the sandbox's config
/// names: start the assistant with a viewer, arm, let the daemon transcribe `text` spoken
/// from a WAV into the command buffer, then execute (retried until the last segment is
/// done, as a person would).
pub fn spoken_command(sandbox: &Sandbox, text: &str, deadline: Duration) -> SpokenCommand {
    let wav = speak(sandbox.root(), "command", text);
    let assistant = sandbox.spawn("stt-assistant", &[]);
    let seen = watch_attached(sandbox, deadline);
    let out = sandbox.run("stt-ctl", &["command-start"]);
    assert_eq!(out.code, Some(0), "{out:?}");

    let wav_arg = wav.to_string_lossy().into_owned();
    let daemon = sandbox
        .spawn("stt-daemon", &["--input", &wav_arg, "--fast", "--stay", "--wait-for-subscriber"]);
    let words: Vec<String> = text.split_whitespace().map(str::to_lowercase).collect();
    crate::expect_within("the transcript fills the command buffer", deadline, || {
        let s = status(sandbox);
        let buffer = s["command_buffer"].as_str().unwrap_or_default().to_lowercase();
        let heard = words.iter().all(|w| buffer.contains(w.as_str()));
        if heard { Ok(()) } else { Err(format!("{s}\n{}", daemon.log())) }
    });
    let executed = crate::expect_within("execute is accepted", deadline, || {
        let out = sandbox.run("stt-ctl", &["command-execute"]);
        if out.code == Some(0) { Ok(Instant::now()) } else { Err(format!("{out:?}")) }
    });
    SpokenCommand { assistant, daemon, seen, executed }
}

/// What most assistant tests start from: a scripted model the config points at (with
/// `more_config` after it), a daemon with no microphone (its audio retries, but its speech
/// recognition is up, so execute is allowed), the assistant, and a viewer attached.
#[derive(Debug)]
pub struct Stack {
    pub sandbox: Sandbox,
    pub llm: LlmServer,
    pub daemon: crate::Proc,
    pub assistant: crate::Proc,
    pub seen: Seen,
}

/// A scripted model, and the sandbox's config pointing at it (`more_config` after that).
pub fn scripted_model(sandbox: &Sandbox, more_config: &str) -> LlmServer {
    let llm = LlmServer::start();
    let config = format!("[llm]\nendpoint = \"{}\"\n{more_config}", llm.url());
    std::fs::write(sandbox.config_file(), config)
        .unwrap_or_else(|e| panic!("{}: {e}", sandbox.config_file().display()));
    llm
}

/// Starts a [`Stack`].
pub fn start_stack(more_config: &str) -> Stack {
    let sandbox = Sandbox::new();
    let llm = scripted_model(&sandbox, more_config);
    let daemon = sandbox.spawn("stt-daemon", &[]);
    let assistant = sandbox.spawn("stt-assistant", &[]);
    let seen = watch_attached(&sandbox, crate::DEADLINE);
    Stack { sandbox, llm, daemon, assistant, seen }
}

/// Runs `text` as a typed command (`command-start`, `command-edit`, `command-execute
/// --wait`) and returns the answer said in the conversation, once the flow is back to idle
/// (or on to dictation, when the command asked for it).
pub fn typed_answer(sandbox: &Sandbox, seen: &Seen, text: &str, deadline: Duration) -> String {
    let answers = |events: &[AssistantEvent]| -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match e {
                AssistantEvent::ChatMessage(m)
                    if m.role == stt_proto::ChatRole::Assistant && !m.partial =>
                {
                    Some(m.text.clone())
                }
                _ => None,
            })
            .collect()
    };
    let before = answers(&events(seen)).len();
    for args in [&["command-start"][..], &["command-edit", "--text", text]] {
        let out = sandbox.run("stt-ctl", args);
        assert_eq!(out.code, Some(0), "{out:?}");
    }
    let out = sandbox.run("stt-ctl", &["command-execute", "--wait=20000"]);
    assert_eq!(out.code, Some(0), "{text}: {out:?}");
    crate::expect_within(&format!("the answer to {text:?}, and idle again"), deadline, || {
        let events = events(seen);
        let mode = status(sandbox)["mode"].clone();
        let over = mode == "idle" || mode == "dictate";
        match answers(&events).get(before) {
            Some(answer) if over => Ok(answer.clone()),
            _ => Err(format!("{events:?}")),
        }
    })
}
