//! `stt-daemon up`: the daemon, the assistant and (with `--with-tui`) the TUI as children of
//! one supervisor.
//!
//! 1. One `up` per user: [`lock`] holds `<runtime dir>/stt-up.lock`.
//! 2. The daemon starts; once its socket answers (a connection gets its hello), the
//!    assistant starts; once its socket answers (a `status` request gets a reply), the TUI
//!    starts in this terminal.
//! 3. A daemon or assistant that crashes is restarted by [`policy`] (250 ms doubling to 5 s;
//!    given up on after 5 crashes within 60 s, or 3 failures in a row before its socket ever
//!    answered, with its last lines of stderr in the message). The others reconnect by
//!    themselves. One that exits 0 finished and is not restarted.
//! 4. Quitting the TUI, SIGINT, SIGTERM or SIGHUP stops everything: the TUI, then the
//!    assistant, then the daemon, each with SIGTERM and SIGKILL after 3 s. No child outlives
//!    `up`, however it ends ([`child`]).
//!
//! Output: without the TUI, each child's stderr goes to `up`'s stderr line by line, prefixed
//! with its name (`[daemon] …`); with the TUI it goes to `<state dir>/up.log` ([`LOG_NAME`]),
//! which the message of a give-up names; `--log FILE` appends it to FILE instead
//! ([`output`]).
//!
//! With `--input FILE` the daemon keeps serving after the file ends (`--stay`), and holds the
//! file (`--hold-input`) until you first arm a command or start chat, so a recording can be
//! followed through the command flow; `--play-at-once` plays it as soon as the assistant
//! follows the daemon.

pub mod child;
pub mod lock;
pub mod output;
pub mod policy;
pub mod service;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::Arc;

use anyhow::Context;
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use stt_app::CommonArgs;
use stt_bus::{Link, Subscription};
use stt_config::Config;
use stt_proto::{AssistantEvent, Mode};

use crate::UpArgs;
use child::{Running, STOP_GRACE, Spec};
use lock::{LOCK_NAME, UpLock};

/// The log file under the state directory that `up --with-tui` writes the children's lines to
/// (the TUI owns the terminal).
pub const LOG_NAME: &str = "up.log";
use output::Output;
use policy::RestartPolicy;
use service::{Hold, PEER, Probe, Report, Supervised};

/// Runs `stt-daemon up` until the TUI quits, a signal arrives, or a child is given up on.
pub fn run(config: &Config, common: &CommonArgs, args: &UpArgs) -> anyhow::Result<()> {
    if args.with_tui && args.input.as_deref() == Some(Path::new("-")) {
        anyhow::bail!(
            "--input - reads audio from stdin, which the TUI needs for your keys: give a WAV \
             file, or run `stt-daemon up --input -` without --with-tui"
        );
    }
    // One thread: children must be forked by a thread that lives as long as `up`, or their
    // death signal would fire when that thread ends (see `child`).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(supervise(config, common, args))
}

async fn supervise(config: &Config, common: &CommonArgs, args: &UpArgs) -> anyhow::Result<()> {
    let mut signals = Signals::catch()?;
    let _lock = UpLock::acquire(&stt_config::dirs::runtime_dir()?.join(LOCK_NAME))?;
    let daemon_socket = stt_config::dirs::daemon_socket(config)?;
    let assistant_socket = stt_config::dirs::assistant_socket(config)?;
    refuse_running("stt-daemon", &daemon_socket)?;
    refuse_running("stt-assistant", &assistant_socket)?;
    let output = Arc::new(match (&args.log, args.with_tui) {
        (Some(path), _) => Output::file(path)?,
        // The TUI owns the terminal: the logs go where a person can find them.
        (None, true) => Output::file(&stt_config::dirs::state_dir()?.join(LOG_NAME))?,
        (None, false) => Output::stderr(),
    });
    let exe = std::env::current_exe().context("cannot find this executable")?;
    let config_args = config_args(common);

    let (wanted, hold) = match &args.input {
        Some(_) => {
            let (tx, rx) = watch::channel(false);
            (Some(tx), Some(Hold { wanted: rx, assistant: assistant_socket.clone() }))
        }
        None => (None, None),
    };
    let daemon = Supervised {
        spec: Spec {
            name: "stt-daemon",
            label: "daemon",
            program: exe.clone(),
            args: daemon_args(&config_args, args),
            terminal: false,
            stdin: args.input.as_deref() == Some(Path::new("-")),
        },
        probe: Probe::Daemon(daemon_socket),
        policy: RestartPolicy::default(),
        output: Arc::clone(&output),
        hold,
    };
    let assistant = Supervised {
        spec: Spec {
            name: "stt-assistant",
            label: "assistant",
            program: sibling(&exe, "stt-assistant")?,
            args: config_args.clone(),
            terminal: false,
            stdin: false,
        },
        probe: Probe::Assistant(assistant_socket.clone()),
        policy: RestartPolicy::default(),
        output: Arc::clone(&output),
        hold: None,
    };
    let tui = if args.with_tui {
        Some(Spec {
            name: "stt-tui",
            label: "tui",
            program: sibling(&exe, "stt-tui")?,
            args: config_args,
            terminal: true,
            stdin: true,
        })
    } else {
        None
    };

    let mut up = Up {
        output,
        signals: &mut signals,
        reports: mpsc::unbounded_channel(),
        services: Vec::new(),
        finished: 0,
        tui: None,
    };
    let result = up.run(daemon, assistant, tui, args, wanted, assistant_socket).await;
    up.stop_all().await;
    result
}

/// The supervisor's running state.
struct Up<'a> {
    output: Arc<Output>,
    signals: &'a mut Signals,
    reports: (mpsc::UnboundedSender<Report>, mpsc::UnboundedReceiver<Report>),
    /// Each service's task and the token that stops it, in the order they started.
    services: Vec<(CancellationToken, JoinHandle<()>)>,
    /// Services that exited 0 by themselves.
    finished: usize,
    tui: Option<Running>,
}

/// Why waiting for a service's first answer ended early.
enum Interrupted {
    Signal,
}

impl Up<'_> {
    async fn run(
        &mut self,
        daemon: Supervised,
        assistant: Supervised,
        tui: Option<Spec>,
        args: &UpArgs,
        wanted: Option<watch::Sender<bool>>,
        assistant_socket: PathBuf,
    ) -> anyhow::Result<()> {
        for service in [daemon, assistant] {
            let name = service.spec.name;
            self.start(service);
            if let Err(Interrupted::Signal) = self.first_ready(name).await? {
                return Ok(());
            }
        }
        if let (Some(wanted), Some(input)) = (wanted, &args.input) {
            if args.play_at_once {
                let _ = wanted.send(true);
            } else {
                self.say(&format!(
                    "holding '{}' until you first arm a command or start chat (`a` or `t` in the \
                     TUI, or `stt-ctl command-start` / `stt-ctl chat-toggle`)",
                    input.display()
                ));
                tokio::spawn(watch_for_arm(assistant_socket, wanted));
            }
        }
        if let Some(spec) = tui {
            let running = spec.start(&self.output)?;
            self.say(&format!("started stt-tui (pid {})", running.pid));
            self.tui = Some(running);
        } else {
            self.say(
                "stt is running: `stt-ctl status`, `stt-tui` or `stt-tui --dump 0` in another \
                 terminal; Ctrl-C here stops it",
            );
        }
        loop {
            tokio::select! {
                () = self.signals.recv() => return Ok(()),
                status = tui_exit(&mut self.tui) => return tui_result(status),
                report = self.reports.1.recv() => match report {
                    Some(Report::GaveUp { message, .. }) => {
                        return Err(anyhow::anyhow!(self.with_log(message)));
                    }
                    Some(Report::Finished { .. }) => {
                        self.finished += 1;
                        if self.finished == self.services.len() && self.tui.is_none() {
                            self.say("every child finished");
                            return Ok(());
                        }
                    }
                    Some(Report::Ready { name, pid }) => {
                        self.say(&format!("{name} answers on its socket (pid {pid})"));
                    }
                    None => return Ok(()),
                },
            }
        }
    }

    fn start(&mut self, service: Supervised) {
        let token = CancellationToken::new();
        let task = tokio::spawn(service.run(self.reports.0.clone(), token.clone()));
        self.services.push((token, task));
    }

    /// Waits until `name` first answers on its socket; fails if it is given up on.
    async fn first_ready(&mut self, name: &str) -> anyhow::Result<Result<(), Interrupted>> {
        loop {
            tokio::select! {
                () = self.signals.recv() => return Ok(Err(Interrupted::Signal)),
                report = self.reports.1.recv() => match report {
                    Some(Report::Ready { name: n, pid }) if n == name => {
                        self.say(&format!("{name} answers on its socket (pid {pid})"));
                        return Ok(Ok(()));
                    }
                    Some(Report::Ready { .. }) => {}
                    Some(Report::GaveUp { message, .. }) => anyhow::bail!(self.with_log(message)),
                    Some(Report::Finished { name: n }) => {
                        self.finished += 1;
                        if n == name {
                            anyhow::bail!("{name} exited with status 0 before it answered on its socket");
                        }
                    }
                    None => anyhow::bail!("the supervisor lost its services"),
                },
            }
        }
    }

    /// Stops the TUI, then the services in the reverse order of their start.
    async fn stop_all(&mut self) {
        if let Some(tui) = &mut self.tui {
            tui.stop(STOP_GRACE).await;
        }
        while let Some((token, task)) = self.services.pop() {
            token.cancel();
            let _ = task.await;
        }
        self.say("stopped");
    }

    fn say(&self, line: &str) {
        self.output.line("up", line);
    }

    /// `message`, saying where the whole log is when it goes to a file.
    fn with_log(&self, message: String) -> String {
        match self.output.path() {
            Some(path) => format!("{message}\nThe whole log is in {}.", path.display()),
            None => message,
        }
    }
}

/// The TUI's exit; never, without one.
async fn tui_exit(tui: &mut Option<Running>) -> std::io::Result<ExitStatus> {
    match tui {
        Some(tui) => tui.wait().await,
        None => std::future::pending().await,
    }
}

/// Quitting the TUI (exit 0, or a signal that ends a terminal program) ends `up` with 0;
/// anything else is an error.
fn tui_result(status: std::io::Result<ExitStatus>) -> anyhow::Result<()> {
    use std::os::unix::process::ExitStatusExt;
    let status = status.context("cannot wait for stt-tui")?;
    use nix::sys::signal::Signal::{SIGHUP, SIGINT, SIGTERM};
    let quit = [SIGINT, SIGTERM, SIGHUP].map(|s| s as i32);
    if status.success() || status.signal().is_some_and(|s| quit.contains(&s)) {
        return Ok(());
    }
    anyhow::bail!("stt-tui {}", policy::describe(status))
}

/// Sets `wanted` once the assistant first leaves idle: armed for a command, or chat.
async fn watch_for_arm(assistant: PathBuf, wanted: watch::Sender<bool>) {
    let mut link = Subscription::assistant(assistant.clone(), PEER, false);
    loop {
        let armed = match link.next().await {
            // A mode set before this subscription (or a restarted assistant's) is in status.
            Link::Up(_) => service::status(&assistant).await.is_some_and(|s| s.mode != Mode::Idle),
            Link::Event(AssistantEvent::Mode { mode }) => mode != Mode::Idle,
            _ => false,
        };
        if armed {
            let _ = wanted.send(true);
            return;
        }
    }
}

/// `--config PATH` when one was given: every child reads the same file.
fn config_args(common: &CommonArgs) -> Vec<OsString> {
    match &common.config {
        Some(path) => vec!["--config".into(), path.into()],
        None => Vec::new(),
    }
}

/// The daemon child's arguments: the config, then what `up` passes through. With an input
/// it keeps serving when the input ends (`--stay`), plays it only when `up` says so
/// (`--hold-input`) and to a connected assistant (`--wait-for-subscriber`).
pub fn daemon_args(config_args: &[OsString], args: &UpArgs) -> Vec<OsString> {
    let mut out = config_args.to_vec();
    let mut flag = |name: &str, value: Option<OsString>| {
        out.push(name.into());
        out.extend(value);
    };
    if let Some(input) = &args.input {
        flag("--input", Some(input.into()));
        if input.as_os_str() == "-" {
            flag("--format", Some(args.source.format.clone().into()));
            flag("--rate", Some(args.source.rate.to_string().into()));
            flag("--channels", Some(args.source.channels.to_string().into()));
        }
        flag("--stay", None);
        flag("--hold-input", None);
        flag("--wait-for-subscriber", None);
    }
    if args.source.fast {
        flag("--fast", None);
    }
    if let Some(device) = &args.source.device {
        flag("--device", Some(device.into()));
    }
    if let Some(model) = &args.source.model {
        flag("--model", Some(model.into()));
    }
    out
}

/// Another stt binary installed next to this one.
fn sibling(exe: &Path, name: &str) -> anyhow::Result<PathBuf> {
    let path = exe.with_file_name(name);
    if !path.is_file() {
        anyhow::bail!(
            "'{}' is missing: `stt-daemon up` runs the {name} installed next to it; install all \
             four binaries (scripts/install), or build them (`cargo build -p stt-daemon -p \
             stt-assistant -p stt-tui -p stt-ctl`)",
            path.display()
        );
    }
    Ok(path)
}

/// Fails when something already serves `socket`: it was started outside `up`.
fn refuse_running(name: &str, socket: &Path) -> anyhow::Result<()> {
    if std::os::unix::net::UnixStream::connect(socket).is_ok() {
        anyhow::bail!(
            "{name} is already running outside `stt-daemon up` (its socket '{}' answers): stop \
             it first, or use it as it is",
            socket.display()
        );
    }
    Ok(())
}

/// SIGINT, SIGTERM and SIGHUP, caught from the start.
#[derive(Debug)]
struct Signals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
}

impl Signals {
    fn catch() -> anyhow::Result<Self> {
        let catch = |kind| signal(kind).context("cannot catch signals");
        Ok(Self {
            interrupt: catch(SignalKind::interrupt())?,
            terminate: catch(SignalKind::terminate())?,
            hangup: catch(SignalKind::hangup())?,
        })
    }

    async fn recv(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
            _ = self.hangup.recv() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Source;

    fn strings(args: &[OsString]) -> Vec<&str> {
        args.iter().map(|a| a.to_str().unwrap()).collect()
    }

    #[test]
    fn the_microphone_daemon_gets_only_what_was_given() {
        assert!(daemon_args(&[], &UpArgs::default()).is_empty());
        let source = Source {
            fast: true,
            device: Some("USB Mic".into()),
            model: Some("ggml-base.bin".into()),
            ..Source::default()
        };
        let args = UpArgs { source, ..UpArgs::default() };
        let config = config_args(&CommonArgs { config: Some("/c.toml".into()) });
        assert_eq!(
            strings(&daemon_args(&config, &args)),
            ["--config", "/c.toml", "--fast", "--device", "USB Mic", "--model", "ggml-base.bin"]
        );
    }

    #[test]
    fn a_file_input_is_held_kept_serving_and_waits_for_the_assistant() {
        let args = UpArgs { input: Some("talk.wav".into()), ..UpArgs::default() };
        assert_eq!(
            strings(&daemon_args(&[], &args)),
            ["--input", "talk.wav", "--stay", "--hold-input", "--wait-for-subscriber"]
        );
    }

    #[test]
    fn stdin_input_passes_the_raw_format() {
        let source =
            Source { format: "f32le".into(), rate: 48_000, channels: 2, ..Source::default() };
        let args = UpArgs { input: Some("-".into()), source, ..UpArgs::default() };
        assert_eq!(
            strings(&daemon_args(&[], &args)),
            [
                "--input",
                "-",
                "--format",
                "f32le",
                "--rate",
                "48000",
                "--channels",
                "2",
                "--stay",
                "--hold-input",
                "--wait-for-subscriber"
            ]
        );
    }

    #[test]
    fn quitting_the_tui_is_success_and_a_crash_is_not() {
        use std::os::unix::process::ExitStatusExt;
        assert!(tui_result(Ok(ExitStatus::from_raw(0))).is_ok());
        assert!(tui_result(Ok(ExitStatus::from_raw(15))).is_ok());
        let err = tui_result(Ok(ExitStatus::from_raw(2 << 8))).unwrap_err();
        assert_eq!(err.to_string(), "stt-tui exited with status 2");
        let err = tui_result(Ok(ExitStatus::from_raw(11))).unwrap_err();
        assert_eq!(err.to_string(), "stt-tui was killed by SIGSEGV");
    }
}
