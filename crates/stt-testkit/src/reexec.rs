//! Tests that need a process of their own (another `HOME`, a signal, a crash): the test
//! binary runs one of its own `#[ignore]`d `child_…` tests again in a child process. The
//! child half is ignored, so a plain `cargo test` never runs it alone (where it would pass
//! without exercising anything); only its parent runs it, with `--ignored`.

use std::ffi::OsStr;
use std::process::{Command, Output};

/// The command that runs test `test` (its path within the crate, `mic::tests::child_drops`)
/// of this test binary alone, ignored or not, with its output captured.
pub fn child_command(test: &str) -> Command {
    let exe = std::env::current_exe()
        .unwrap_or_else(|e| panic!("cannot find the test binary to run {test} in: {e}"));
    let mut command = Command::new(exe);
    command.args([test, "--exact", "--ignored", "--nocapture", "--test-threads=1"]);
    command
}

/// Runs test `test` in a child process with `env` added, and returns its output; panics,
/// with both of its streams, unless the test ran there and passed.
pub fn run_child(test: &str, env: &[(&str, &OsStr)]) -> Output {
    let output = child_command(test)
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("cannot run the test binary for {test}: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "{test} failed in its child process\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
    output
}
