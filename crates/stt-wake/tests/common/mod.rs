//! What the tests share: the installed models, found where the daemon finds them
//! (`$STT_MODELS_DIR`, else `<data_dir>/models`), and speech made at test time with espeak-ng
//! and sox.
//!
//! Without the models or ONNX Runtime a test passes having printed why it was skipped, but
//! under `scripts/test` (`STT_TEST_STRICT` set) it fails: CI must never pass a test that did
//! not run.

#![allow(dead_code, reason = "each test file uses a part")]

use std::path::{Path, PathBuf};
use std::process::Command;

use stt_wake::{Features, Head, RuntimeError, WakeError};

pub fn models_dir() -> PathBuf {
    stt_config::dirs::models_dir_with(&stt_config::dirs::Env::from_process()).unwrap()
}

pub fn strict() -> bool {
    std::env::var_os("STT_TEST_STRICT").is_some()
}

/// Says that `test` was skipped and why, or fails under `STT_TEST_STRICT`.
pub fn skip(test: &str, why: &dyn std::fmt::Display) {
    assert!(!strict(), "{test}: {why}");
    eprintln!("{test}: SKIPPED, {why}");
}

/// Whether `e` means something is not installed, rather than broken.
fn not_installed(e: &WakeError) -> bool {
    matches!(
        e,
        WakeError::FeaturesMissing { .. }
            | WakeError::HeadMissing { .. }
            | WakeError::Runtime(RuntimeError::Missing { .. })
    )
}

/// The installed feature models, or `None` (having said why) when they or ONNX Runtime are
/// missing.
pub fn features(test: &str) -> Option<Features> {
    match Features::load(&models_dir()) {
        Ok(features) => Some(features),
        Err(e) if not_installed(&e) => {
            skip(test, &e);
            None
        }
        Err(e) => panic!("{test}: {e}"),
    }
}

/// The installed head for `name`, or `None` when it is not installed: a head is installed
/// only when asked for (its licence), so a missing one is skipped even under
/// `STT_TEST_STRICT`.
pub fn head(test: &str, name: &str) -> Option<Head> {
    match Head::installed(&models_dir(), name) {
        Ok(head) => Some(head),
        Err(e) if not_installed(&e) => {
            eprintln!("{test}: head {name} SKIPPED, {e}");
            None
        }
        Err(e) => panic!("{test}: {e}"),
    }
}

/// espeak-ng's version line, as `espeak-ng --version` prints it.
pub fn espeak_version() -> String {
    let out = Command::new("espeak-ng").arg("--version").output().unwrap_or_else(|e| {
        panic!("cannot run espeak-ng ({e}): the tests make their speech with it; run scripts/setup")
    });
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Runs `commands` (argument lists in which `{wav}` and `{raw}` stand for two files in
/// `dir`, named after `name`) and gives the 16-bit samples they leave in `{raw}`.
pub fn run_commands(dir: &Path, name: &str, commands: &[Vec<String>]) -> Vec<i16> {
    let wav = dir.join(format!("{name}.wav"));
    let raw = dir.join(format!("{name}.raw"));
    for command in commands {
        let args: Vec<String> = command
            .iter()
            .map(|a| {
                a.replace("{wav}", &wav.to_string_lossy()).replace("{raw}", &raw.to_string_lossy())
            })
            .collect();
        let out = Command::new(&args[0]).args(&args[1..]).output().unwrap_or_else(|e| {
            panic!("cannot run {} ({e}): the tests make their speech with espeak-ng and sox; run scripts/setup", args[0])
        });
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let bytes = std::fs::read(&raw).unwrap();
    bytes.chunks_exact(2).map(|b| i16::from_le_bytes([b[0], b[1]])).collect()
}

/// The commands that make a clip of `voice` saying `text` at `wpm` words a minute, as
/// `scripts/wake-reference.py` makes its clips.
pub fn say_commands(voice: &str, text: &str, wpm: u32) -> Vec<Vec<String>> {
    let espeak = ["espeak-ng", "-s", &wpm.to_string(), "-v", voice, "-w", "{wav}", text];
    let sox = [
        "sox",
        "-R",
        "{wav}",
        "-r",
        "16000",
        "-c",
        "1",
        "-b",
        "16",
        "-e",
        "signed-integer",
        "-L",
        "-t",
        "raw",
        "{raw}",
    ];
    [&espeak[..], &sox[..]].iter().map(|c| c.iter().map(|s| (*s).to_owned()).collect()).collect()
}

/// `voice` saying `text` at `wpm` words a minute, 16 kHz mono in [-1, 1].
pub fn say(dir: &Path, voice: &str, text: &str, wpm: u32) -> Vec<f32> {
    let name = format!("{voice}-{wpm}-{text}").replace(|c: char| !c.is_ascii_alphanumeric(), "_");
    let samples = run_commands(dir, &name, &say_commands(voice, text, wpm));
    samples.iter().map(|&s| f32::from(s) / 32768.0).collect()
}

/// `seconds` of silence at 16 kHz.
pub fn silence(seconds: f32) -> Vec<f32> {
    vec![0.0; (seconds * 16_000.0) as usize]
}
