//! What the assistant tests share: spoken commands made with espeak-ng, a viewer that
//! records every event, and `stt-ctl status` as JSON.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use stt_bus::{Link, Subscription};
use stt_proto::AssistantEvent;

use crate::Sandbox;

/// Speaks `text` into a 16 kHz mono WAV with a second of silence around it.
pub fn speak(dir: &Path, name: &str, text: &str) -> PathBuf {
    let raw = dir.join(format!("{name}.raw.wav"));
    let out = dir.join(format!("{name}.wav"));
    let status = Command::new("espeak-ng")
        .args(["-v", "en-us", "-s", "150", "-w"])
        .arg(&raw)
        .arg(text)
        .status();
    assert!(status.is_ok_and(|s| s.success()), "espeak-ng failed: install it (scripts/setup)");
    let status = Command::new("sox")
        .arg(&raw)
        .args(["-r", "16000", "-c", "1", "-b", "16"])
        .arg(&out)
        .args(["pad", "1", "1"])
        .status();
    assert!(status.is_ok_and(|s| s.success()), "sox failed: install it (scripts/setup)");
    out
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

/// The events seen so far.
pub fn events(seen: &Seen) -> Vec<AssistantEvent> {
    seen.lock().unwrap_or_else(PoisonError::into_inner).iter().map(|(_, e)| e.clone()).collect()
}

/// `stt-ctl --json status`, parsed (`null` when the assistant does not answer).
pub fn status(sandbox: &Sandbox) -> Value {
    let out = sandbox.run("stt-ctl", &["--json", "status"]);
    serde_json::from_str(&out.stdout).unwrap_or(Value::Null)
}
