//! One child process: started with its life tied to `up`'s, its output forwarded line by
//! line, and stopped with SIGTERM, then SIGKILL after a grace period.
//!
//! No child outlives `up`: each asks the kernel for a signal when `up` dies
//! (`PR_SET_PDEATHSIG`, SIGKILL for llama-server, the daemon and the assistant, SIGTERM for
//! the TUI so it can restore the terminal), which covers `up` itself being SIGKILLed.
//! Those three run in process groups of their own, so a Ctrl-C in the terminal reaches only
//! `up` (and the TUI), and `up` stops them in order; stopping one signals its whole group,
//! so anything it started goes too.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use tokio::task::JoinHandle;

use super::output::{Output, SharedRing, forward};

/// How long a child may take over SIGTERM before it gets SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(3);

/// How long, after a child exited, its last lines may take to arrive.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(1);

/// What to run, and how it relates to `up`.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The binary's name, said in messages (`stt-assistant`).
    pub name: &'static str,
    /// The short name its output lines are prefixed with (`assistant`).
    pub label: &'static str,
    /// The executable.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Shares `up`'s terminal (the TUI): inherits stdin, stdout and stderr, stays in `up`'s
    /// process group (the terminal's foreground), and gets SIGTERM when `up` dies.
    pub terminal: bool,
    /// Inherits `up`'s stdin (the daemon reading `--input -`).
    pub stdin: bool,
    /// Its stdout is forwarded like its stderr, not dropped (llama-server writes part of its
    /// log there).
    pub stdout: bool,
    /// Its CPU priority (`nice`), when not `up`'s own: the local model runs below whisper.
    pub nice: Option<i32>,
}

/// A started child.
#[derive(Debug)]
pub struct Running {
    child: tokio::process::Child,
    /// Its process id (and, unless it shares the terminal, its process group id).
    pub pid: Pid,
    /// Its last lines of output.
    pub ring: SharedRing,
    group: bool,
    readers: Vec<JoinHandle<()>>,
}

impl Spec {
    /// Starts it, forwarding its stderr (and with [`stdout`](Self::stdout) its stdout) to
    /// `output`, unless it shares the terminal.
    pub fn start(&self, output: &Arc<Output>) -> std::io::Result<Running> {
        let mut cmd = tokio::process::Command::new(&self.program);
        cmd.args(&self.args).kill_on_drop(true);
        if self.terminal {
            die_with_parent(&mut cmd, Signal::SIGTERM, None);
        } else {
            let stdin = if self.stdin { Stdio::inherit() } else { Stdio::null() };
            let stdout = if self.stdout { Stdio::piped() } else { Stdio::null() };
            cmd.stdin(stdin).stdout(stdout).stderr(Stdio::piped()).process_group(0);
            die_with_parent(&mut cmd, Signal::SIGKILL, self.nice);
        }
        let mut child = cmd.spawn().map_err(|e| {
            std::io::Error::new(e.kind(), format!("cannot start '{}': {e}", self.program.display()))
        })?;
        let raw = child.id().and_then(|id| i32::try_from(id).ok()).unwrap_or(0);
        let ring = SharedRing::default();
        let label = self.label;
        let mut readers = Vec::new();
        if let Some(stderr) = child.stderr.take() {
            readers.push(tokio::spawn(forward(
                stderr,
                label,
                Arc::clone(&ring),
                Arc::clone(output),
            )));
        }
        if let Some(stdout) = child.stdout.take() {
            readers.push(tokio::spawn(forward(
                stdout,
                label,
                Arc::clone(&ring),
                Arc::clone(output),
            )));
        }
        Ok(Running { child, pid: Pid::from_raw(raw), ring, group: !self.terminal, readers })
    }
}

impl Running {
    /// Waits for it to exit (cancel-safe).
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// Sends `signal` to the process alone.
    pub fn signal(&self, signal: Signal) {
        let _ = kill(self.pid, signal);
    }

    /// Stops it: SIGTERM (to its whole group), then SIGKILL if it is still there after
    /// `grace`; returns once it is gone.
    pub async fn stop(&mut self, grace: Duration) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        self.signal_all(Signal::SIGTERM);
        if tokio::time::timeout(grace, self.child.wait()).await.is_err() {
            self.signal_all(Signal::SIGKILL);
            let _ = self.child.wait().await;
        }
    }

    fn signal_all(&self, signal: Signal) {
        let _ = if self.group { killpg(self.pid, signal) } else { kill(self.pid, signal) };
    }

    /// Waits (briefly) for the output it wrote before exiting to be read.
    pub async fn drain(&mut self) {
        for reader in self.readers.drain(..) {
            let _ = tokio::time::timeout(DRAIN_TIMEOUT, reader).await;
        }
    }

    /// Its last lines on stderr, oldest first.
    pub fn last_lines(&self) -> Vec<String> {
        self.ring.lock().unwrap_or_else(PoisonError::into_inner).lines()
    }
}

/// Asks the kernel to send `signal` to the child when `up` dies, and gives the child the CPU
/// priority `nice` when there is one.
///
/// The death signal follows the thread that forked, so children must be started from a
/// thread that lives as long as `up`: `up` runs a current-thread runtime on its main thread.
#[allow(unsafe_code)]
fn die_with_parent(cmd: &mut tokio::process::Command, signal: Signal, nice: Option<i32>) {
    let parent = nix::unistd::getpid();
    let hook = move || -> std::io::Result<()> {
        nix::sys::prctl::set_pdeathsig(signal)?;
        // `up` may have died before the prctl: then no signal will come, so do not start.
        if nix::unistd::getppid() != parent {
            return Err(std::io::Error::from(nix::errno::Errno::ESRCH));
        }
        if let Some(nice) = nice {
            // SAFETY: a plain system call on this process, with no pointers.
            // A priority that cannot be lowered is no reason not to start: it runs as is.
            let _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) };
        }
        Ok(())
    };
    // SAFETY: the hook runs in the child between fork and exec, where only async-signal-safe
    // operations are allowed. It makes three system calls (prctl, getppid, setpriority) and
    // builds an `io::Error` from a raw errno, which does not allocate; it touches no lock.
    unsafe {
        cmd.pre_exec(hook);
    }
}
