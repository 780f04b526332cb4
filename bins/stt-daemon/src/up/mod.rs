//! `stt-daemon up`: the local model server, the daemon, the assistant and (with
//! `--with-tui`) the TUI as children of one supervisor.
//!
//! 1. One `up` per user: [`lock`] holds `<runtime dir>/stt-up.lock`.
//! 2. When the config chose no model, llama-server starts first with the installed one
//!    ([`model`] decides, and says why not). It is not waited for: it listens at once and
//!    loads for seconds, which the assistant shows as "loading model".
//! 3. The daemon starts; once its socket answers (a connection gets its hello), the
//!    assistant starts; once its socket answers (a `status` request gets a reply), the TUI
//!    starts in this terminal.
//! 4. A child that crashes is restarted by [`policy`] (250 ms doubling to 5 s; given up on
//!    after 5 crashes within 60 s, or 3 failures in a row before its socket ever answered,
//!    with its last lines of stderr in the message). The others reconnect by themselves. One
//!    that exits 0 finished and is not restarted. Giving up on the daemon or the assistant
//!    ends `up`; giving up on llama-server does not (a dead model must not take
//!    transcription down): `up` says so, with where its log is, and goes on.
//! 5. Quitting the TUI, SIGINT, SIGTERM or SIGHUP stops everything: the TUI, then the
//!    assistant, then the daemon, then llama-server, each with SIGTERM and SIGKILL after
//!    3 s. No child outlives `up`, however it ends ([`child`]).
//!
//! Output: without the TUI, each child's stderr goes to `up`'s stderr line by line, prefixed
//! with its name (`[daemon] …`); with the TUI it goes to `<state dir>/up.log` ([`LOG_NAME`]),
//! which the message of a give-up names; `--log FILE` appends it to FILE instead
//! ([`output`]). llama-server's stdout and stderr always go to a log of their own,
//! `<state dir>/llama-server.log` ([`model::LOG_NAME`]).
//!
//! With `--input FILE` the daemon keeps serving after the file ends (`--stay`), and holds the
//! file (`--hold-input`) until you first arm a command or start chat, so a recording can be
//! followed through the command flow; `--play-at-once` plays it as soon as the assistant
//! follows the daemon.

pub mod child;
pub mod lock;
pub mod model;
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
use stt_proto::{AssistantEvent, ChatSession, Mode};

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
            stdout: false,
            nice: None,
        },
        probe: Probe::Daemon(daemon_socket),
        policy: RestartPolicy::default(),
        output: Arc::clone(&output),
        log: None,
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
            stdout: false,
            nice: None,
        },
        probe: Probe::Assistant(assistant_socket.clone()),
        policy: RestartPolicy::default(),
        output: Arc::clone(&output),
        log: None,
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
            stdout: true,
            nice: None,
        })
    } else {
        None
    };

    let model = local_model(config, &output);
    let mut up = Up {
        output,
        signals: &mut signals,
        reports: mpsc::unbounded_channel(),
        services: Vec::new(),
        essential: 0,
        finished: 0,
        model: None,
        tui: None,
    };
    if let Some((service, model)) = model {
        // First, and not waited for: the daemon and the assistant start while it loads.
        up.model = Some(model);
        up.start(service);
    }
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
    /// Services started that `up` cannot go on without: the daemon and the assistant.
    essential: usize,
    /// Essential services that exited 0 by themselves.
    finished: usize,
    /// llama-server, when it was started.
    model: Option<LocalModel>,
    tui: Option<Running>,
}

/// llama-server as `up` speaks of it.
#[derive(Debug, Clone)]
struct LocalModel {
    port: u16,
    log: PathBuf,
    /// The model file it serves.
    model: PathBuf,
}

/// Why waiting for a service's first answer ended early.
enum Interrupted {
    Signal,
    /// Every essential service finished.
    Finished,
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
            self.essential += 1;
            if let Err(Interrupted::Signal | Interrupted::Finished) = self.first_ready(name).await?
            {
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
                tokio::spawn(watch_for_arm(assistant_socket.clone(), wanted));
            }
        }
        if self.model.is_some() {
            tokio::spawn(say_model_ready(
                assistant_socket.clone(),
                Arc::clone(&self.output),
                tokio::time::Instant::now(),
            ));
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
                    Some(report) => {
                        if let Some(end) = self.on_report(report) {
                            return end;
                        }
                    }
                    None => return Ok(()),
                },
            }
        }
    }

    /// Answers a service's report: says it, and ends `up` (`Some`) when an essential
    /// service is given up on, or every essential one finished without a TUI to wait for.
    fn on_report(&mut self, report: Report) -> Option<anyhow::Result<()>> {
        match report {
            Report::Ready { name, pid } => self.say_ready(name, pid),
            Report::GaveUp { name, message } if name == model::NAME => {
                let log = self.model.as_ref().map(|m| m.log.display().to_string());
                let fix = self.model.as_ref().and_then(|m| model::fix_for(&message, &m.model));
                let text = format!(
                    "{message}\n{}stt goes on without the local model; llama-server's whole \
                     log is in {}.",
                    fix.map(|fix| format!("{fix}\n")).unwrap_or_default(),
                    log.unwrap_or_default()
                );
                for line in text.lines() {
                    self.say(line);
                }
            }
            Report::GaveUp { message, .. } => {
                return Some(Err(anyhow::anyhow!(self.with_log(message))));
            }
            // The service said so; the model is not needed for the rest to go on.
            Report::Finished { name } if name == model::NAME => {}
            Report::Finished { .. } => {
                self.finished += 1;
                if self.finished == self.essential && self.tui.is_none() {
                    self.say("every child finished");
                    return Some(Ok(()));
                }
            }
        }
        None
    }

    /// `stt-daemon answers on its socket (pid 12)`; llama-server listening is not the model
    /// loaded, and says so.
    fn say_ready(&self, name: &str, pid: i32) {
        match &self.model {
            Some(model) if name == model::NAME => self.say(&format!(
                "{name} listens on 127.0.0.1:{} (pid {pid}) and loads the model",
                model.port
            )),
            _ => self.say(&format!("{name} answers on its socket (pid {pid})")),
        }
    }

    fn start(&mut self, service: Supervised) {
        let token = CancellationToken::new();
        let task = tokio::spawn(service.run(self.reports.0.clone(), token.clone()));
        self.services.push((token, task));
    }

    /// Waits until `name` first answers on its socket; fails if it (or another essential
    /// service) is given up on.
    async fn first_ready(&mut self, name: &str) -> anyhow::Result<Result<(), Interrupted>> {
        loop {
            tokio::select! {
                () = self.signals.recv() => return Ok(Err(Interrupted::Signal)),
                report = self.reports.1.recv() => match report {
                    Some(Report::Ready { name: n, pid }) if n == name => {
                        self.say_ready(name, pid);
                        return Ok(Ok(()));
                    }
                    Some(Report::Finished { name: n }) if n == name => {
                        self.finished += 1;
                        anyhow::bail!("{name} exited with status 0 before it answered on its socket");
                    }
                    Some(report) => match self.on_report(report) {
                        Some(Ok(())) => return Ok(Err(Interrupted::Finished)),
                        Some(Err(e)) => return Err(e),
                        None => {}
                    },
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

/// Says once, on `output`, when the local model is ready for the first command: it answers,
/// has loaded the model, and has read the command prompt into its cache (the assistant
/// warms it and reports `loading` until then). Until then a command waits for it.
async fn say_model_ready(assistant: PathBuf, output: Arc<Output>, since: tokio::time::Instant) {
    let ready = |session: Option<&ChatSession>| {
        session.is_some_and(|s| s.provider.as_deref() == Some("llamacpp") && !s.loading)
    };
    let mut link = Subscription::assistant(assistant.clone(), PEER, false);
    loop {
        let now_ready = match link.next().await {
            Link::Up(_) => {
                service::status(&assistant).await.is_some_and(|s| ready(s.chat.as_deref()))
            }
            Link::Event(AssistantEvent::ChatSession(session)) => ready(Some(&session)),
            _ => false,
        };
        if now_ready {
            output.line(
                "up",
                &format!(
                    "the local model is ready ({:.1} s after stt was): it has read the command \
                     prompt, so commands answer at full speed",
                    since.elapsed().as_secs_f64()
                ),
            );
            return;
        }
    }
}

/// llama-server's service, when [`model::decide`] says to run it; the decision is said on
/// `output` either way. Nothing here fails `up`: without a local model the rest still runs.
fn local_model(config: &Config, output: &Arc<Output>) -> Option<(Supervised, LocalModel)> {
    let say = |line: &str| output.line("up", line);
    let env = stt_config::Env::from_process();
    let launch = match model::decide(&model::facts(&config.llm, &env)) {
        model::Decision::Skip(why) => {
            say(&why.to_string());
            return None;
        }
        model::Decision::Start(launch) => launch,
    };
    let log = stt_config::dirs::state_dir_with(&env)
        .map_err(anyhow::Error::from)
        .map(|dir| dir.join(model::LOG_NAME))
        .and_then(|path| Ok((Arc::new(Output::file(&path)?), path)));
    let (log, log_path) = match log {
        Ok(log) => log,
        Err(e) => {
            say(&format!("not starting the local model: {e:#}"));
            return None;
        }
    };
    let mut args = launch.args();
    // Without it the command prompt is read again after every restart: said, not fatal.
    match model::slot_args(&env) {
        Ok(slots) => args.extend(slots),
        Err(why) => say(&format!("the local model's saved prompts are off: {why}")),
    }
    // Without it any program or web page on this machine could use the model: said. One
    // key for every start of this `up`: the assistant has read it already.
    static KEY: std::sync::OnceLock<Result<String, String>> = std::sync::OnceLock::new();
    let key = KEY.get_or_init(model::new_key).clone();
    match key.and_then(|key| model::key_args(&env, &key)) {
        Ok(key) => args.extend(key),
        Err(why) => say(&format!("the local model takes requests without a key: {why}")),
    }
    say(&format!(
        "starting the local model: {} with '{}' on 127.0.0.1:{}; its log: {}",
        launch.program.display(),
        launch.model.display(),
        launch.port,
        log_path.display()
    ));
    let service = Supervised {
        spec: Spec {
            name: model::NAME,
            label: model::LABEL,
            program: launch.program.clone(),
            args,
            terminal: false,
            stdin: false,
            stdout: true,
            nice: Some(model::NICE),
        },
        probe: Probe::Port(launch.port),
        policy: RestartPolicy::default(),
        output: Arc::clone(output),
        log: Some(log),
        hold: None,
    };
    Some((service, LocalModel { port: launch.port, log: log_path, model: launch.model }))
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
