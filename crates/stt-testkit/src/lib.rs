//! What stt's tests share (not published). Here: finding the real binaries, a sandbox of
//! temporary XDG directories per test, child processes that never outlive their test, and
//! waiting on conditions with one deadline ([`expect_within`]) instead of sleeps.
//!
//! Modules: [`speech`] (espeak-ng clips, cached; WER) and [`real_speech`] (recordings of
//! people), [`viewer`] (an attached viewer, the spoken-command flow, [`viewer::start_stack`]),
//! [`llm_server`] (the scripted model in OpenAI's and Anthropic's shapes, the one stand-in),
//! [`fake_cli`] (fake claude/codex/gemini/opencode), [`llama`] (the real local model), [`fake`] (a fake
//! assistant on a real control socket), [`msg`] (message builders), [`reexec`] (a test's
//! `child_…` half in a process of its own), [`room`] (a private sound server: what the voice
//! says, the microphone hears), [`tmux`] (the real TUI in a private tmux),
//! [`daemon`] (a daemon socket publishing what the test writes), [`x11`] (Xvfb with a focused text window, for dictation), [`wayland`] (sway, headless, with
//! one too), [`procs`] (`/proc`), [`perf`] (a section of docs/PERFORMANCE.md), [`picture`]
//! (pictures of known text for the OCR tests), [`web`] (fixed pages for the web tools). stt-bus keeps raw helpers
//! of its own: a kit that depends on it cannot serve its own tests.

pub mod daemon;
pub mod fake;
pub mod fake_cli;
pub mod llama;
pub mod llm_server;
pub mod msg;
pub mod perf;
pub mod picture;
pub mod procs;
pub mod real_speech;
pub mod reexec;
pub mod room;
pub mod speech;
pub mod tmux;
pub mod viewer;
pub mod wayland;
pub mod web;
pub mod x11;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long a test waits for anything before it fails: long, since a deadline only matters
/// when something is wrong, and a loaded two-core machine with whisper busy is slow.
pub const DEADLINE: Duration = Duration::from_secs(90);

/// The path of a binary of this workspace, built next to the test executable.
///
/// `cargo test` does not build other packages' binaries, so `scripts/check` builds every
/// target first; a missing binary names the fix.
pub fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    // target/<profile>/deps/<test> → target/<profile>/<name>
    let dir = exe.parent().and_then(Path::parent).map(Path::to_path_buf).unwrap_or_default();
    let path = dir.join(name);
    assert!(
        path.is_file(),
        "{} is not built: run `cargo build --workspace --bins` before the tests (scripts/check does)",
        path.display()
    );
    path
}

/// stt's cache directory, where the setup scripts keep what they build and fetch for tests
/// (`$XDG_CACHE_HOME/stt`, else `~/.cache/stt`).
pub fn cache_dir() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let cache = var("XDG_CACHE_HOME").or_else(|| var("HOME").map(|h| h.join(".cache")))?;
    Some(cache.join("stt"))
}

/// Where `scripts/fetch-models` installed the models, as seen by this test process (the
/// sandbox points its children there, since their data directory is a temporary one).
pub fn models_dir() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let dir = var("STT_MODELS_DIR").unwrap_or_else(|| {
        var("STT_DATA_DIR")
            .or_else(|| var("XDG_DATA_HOME").map(|d| d.join("stt")))
            .or_else(|| var("HOME").map(|h| h.join(".local/share/stt")))
            .unwrap_or_default()
            .join("models")
    });
    assert!(
        dir.join("ggml-tiny.en-q8_0.bin").is_file(),
        "no whisper model in {}: run scripts/fetch-models",
        dir.display()
    );
    dir
}

/// Temporary runtime, config and data directories, removed when dropped.
#[derive(Debug)]
pub struct Sandbox {
    root: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Self {
        let root = tempfile::Builder::new().prefix("stt-test-").tempdir().unwrap_or_else(|e| {
            panic!("cannot create a temporary directory: {e}");
        });
        for dir in ["run", "config/stt", "data"] {
            std::fs::create_dir_all(root.path().join(dir)).unwrap_or_else(|e| panic!("{dir}: {e}"));
        }
        Self { root }
    }

    pub fn root(&self) -> &Path {
        self.root.path()
    }

    pub fn runtime_dir(&self) -> PathBuf {
        self.root().join("run")
    }

    pub fn config_file(&self) -> PathBuf {
        self.root().join("config/stt/config.toml")
    }

    pub fn daemon_socket(&self) -> PathBuf {
        self.runtime_dir().join("stt-daemon.sock")
    }

    pub fn assistant_socket(&self) -> PathBuf {
        self.runtime_dir().join("stt-assistant.sock")
    }

    /// A command for one of our binaries, with the sandbox's directories in its
    /// environment and nothing of the user's.
    pub fn command(&self, name: &str) -> Command {
        self.command_for(&bin(name))
    }

    /// Like [`command`](Self::command), for any program (a copy of one of ours, a script).
    pub fn command_for(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        // A dictation test must never type into the desktop of whoever runs the tests.
        cmd.env_remove("XDG_RUNTIME_DIR")
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .env_remove("STT_DATA_DIR")
            .env("STT_RUNTIME_DIR", self.runtime_dir())
            .env("XDG_CONFIG_HOME", self.root().join("config"))
            .env("XDG_DATA_HOME", self.root().join("data"))
            .env("XDG_STATE_HOME", self.root().join("state"))
            .env_remove("STT_STATE_DIR")
            .env("HOME", self.root())
            .env("STT_MODELS_DIR", models_dir())
            .env("STT_LOG", "info")
            .stdin(Stdio::null());
        // A developer's own keys must never make a keyed API the model a test talks to, and
        // their llama-server must not be started by every `stt-daemon up` of a test.
        for var in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "ZAI_API_KEY",
            "XDG_CACHE_HOME",
            "STT_LLAMA_SERVER",
        ] {
            cmd.env_remove(var);
        }
        cmd
    }

    /// Starts a long-running binary; its stderr goes to a log file for failure messages.
    pub fn spawn(&self, name: &str, args: &[&str]) -> Proc {
        self.spawn_with(name, args, Stdio::null())
    }

    /// Like [`spawn`](Self::spawn), with a pipe to its stdin; dropping the pipe closes it.
    pub fn spawn_with_stdin(&self, name: &str, args: &[&str]) -> (Proc, ChildStdin) {
        let mut proc = self.spawn_with(name, args, Stdio::piped());
        let stdin = proc.child.stdin.take().unwrap_or_else(|| panic!("{name} has no stdin pipe"));
        (proc, stdin)
    }

    /// Like [`spawn`](Self::spawn), with its stdout written to the returned file, which can
    /// be read while it runs.
    pub fn spawn_with_stdout(&self, name: &str, args: &[&str]) -> (Proc, PathBuf) {
        let path = self.root().join(format!("{name}.{}.stdout", unique()));
        let stdout = File::create(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut cmd = self.command(name);
        cmd.args(args).stdin(Stdio::null()).stdout(stdout);
        (self.spawn_command(name, cmd), path)
    }

    /// Starts `program` (not necessarily one of ours, see [`command_for`](Self::command_for))
    /// like [`spawn`](Self::spawn); `name` names it in messages.
    pub fn spawn_program(&self, name: &str, program: &Path, args: &[&str]) -> Proc {
        let mut cmd = self.command_for(program);
        cmd.args(args).stdin(Stdio::null()).stdout(Stdio::null());
        self.spawn_command(name, cmd)
    }

    /// [`Sandbox::spawn`] with more environment (`STT_LOG=debug`, say).
    pub fn spawn_with_env(&self, name: &str, args: &[&str], env: &[(&str, &str)]) -> Proc {
        let mut cmd = self.command(name);
        cmd.args(args).stdin(Stdio::null()).stdout(Stdio::null()).envs(env.iter().copied());
        self.spawn_command(name, cmd)
    }

    fn spawn_with(&self, name: &str, args: &[&str], stdin: Stdio) -> Proc {
        let mut cmd = self.command(name);
        cmd.args(args).stdin(stdin).stdout(Stdio::null());
        self.spawn_command(name, cmd)
    }

    /// Starts `cmd` with its stderr going to a log file.
    fn spawn_command(&self, name: &str, mut cmd: Command) -> Proc {
        let log = self.root().join(format!("{name}.{}.log", unique()));
        let stderr = File::create(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
        let child =
            cmd.stderr(stderr).spawn().unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Proc { child, name: name.to_owned(), log }
    }

    /// Runs a binary to completion.
    pub fn run(&self, name: &str, args: &[&str]) -> Output {
        let out = self
            .command(name)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {name}: {e}"));
        Output {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// What a finished command printed, and how it exited.
#[derive(Debug, Clone)]
pub struct Output {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// A child process that is killed if its test ends first.
#[derive(Debug)]
pub struct Proc {
    child: Child,
    name: String,
    log: PathBuf,
}

impl Proc {
    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).unwrap_or(i32::MAX)
    }

    /// What it has written to stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends `signal` and waits (with a deadline) for it to exit.
    pub fn signal_and_wait(&mut self, signal: nix::sys::signal::Signal) -> ExitStatus {
        let pid = nix::unistd::Pid::from_raw(self.pid());
        let _ = nix::sys::signal::kill(pid, signal);
        self.wait(Duration::from_secs(10))
    }

    /// Waits for it to exit on its own.
    pub fn wait(&mut self, timeout: Duration) -> ExitStatus {
        let name = self.name.clone();
        wait_until(timeout, || self.child.try_wait().ok().flatten())
            .unwrap_or_else(|| panic!("{name} did not exit; its log:\n{}", self.log()))
    }

    /// Whether it is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes an executable script `contents` to `path` (mode 0755). Written by `cp`, not by this
/// process: a file this process has open for writing is open too in any child another test
/// thread forks at that moment, until it execs, and running the file then fails with "Text
/// file busy" (seen in scripts/check).
pub fn write_program(path: &Path, contents: &str) {
    use std::os::unix::fs::PermissionsExt;
    let draft = path.with_extension("draft");
    std::fs::write(&draft, contents).unwrap_or_else(|e| panic!("{}: {e}", draft.display()));
    let copied = std::process::Command::new("cp")
        .arg(&draft)
        .arg(path)
        .status()
        .unwrap_or_else(|e| panic!("cp: {e}"));
    assert!(copied.success(), "cp {} {}", draft.display(), path.display());
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// Polls `probe` every 10 ms until it returns `Some`, or `timeout` passes (→ `None`).
pub fn wait_until<T>(timeout: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = probe() {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Like [`wait_until`], but a timeout fails the test, naming `what`.
#[track_caller]
pub fn wait_for<T>(what: &str, timeout: Duration, probe: impl FnMut() -> Option<T>) -> T {
    wait_until(timeout, probe)
        .unwrap_or_else(|| panic!("timed out after {timeout:?} waiting for {what}"))
}

/// Waits until `holds`, looking every 10 ms without blocking the async runtime (the lanes a
/// test runs in process go on meanwhile); fails the test, naming `what`, after `timeout`. In
/// tokio's time: under a paused clock the wait is virtual too.
pub async fn until(what: &str, timeout: Duration, mut holds: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + timeout;
    while !holds() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "gave up after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Like [`wait_until`], but a timeout fails the test with `what` and the last thing seen.
#[track_caller]
pub fn expect_within<T>(
    what: &str,
    timeout: Duration,
    mut probe: impl FnMut() -> Result<T, String>,
) -> T {
    let mut last = String::new();
    let found = wait_until(timeout, || match probe() {
        Ok(value) => Some(value),
        Err(seen) => {
            last = seen;
            None
        }
    });
    found.unwrap_or_else(|| {
        panic!("timed out after {timeout:?} waiting for {what}; last seen: {last}")
    })
}
