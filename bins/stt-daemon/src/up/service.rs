//! Keeping one service (the daemon, the assistant or llama-server) running: start it, wait
//! until its socket answers, restart it when it crashes (by [`RestartPolicy`]), and report
//! what happens to the supervisor.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use stt_bus::{Connection, Reply, Service};
use stt_proto::{AssistantEvent, Request, Status};

use super::child::{Running, STOP_GRACE, Spec};
use super::output::Output;
use super::policy::{CrashHistory, Ended, RestartPolicy, Verdict, ended};

/// How `up` names itself to the services it probes.
pub const PEER: &str = "stt-daemon-up";

/// How long a start may take before its socket answers (model loading included).
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// How often a socket is probed while a child starts.
const PROBE_EVERY: Duration = Duration::from_millis(50);

/// How long one probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// What "its socket answers" means for a service.
#[derive(Debug, Clone)]
pub enum Probe {
    /// The daemon's event socket: a connection gets the publisher's hello.
    Daemon(PathBuf),
    /// The assistant's control socket: a `status` request gets its reply.
    Assistant(PathBuf),
    /// A TCP port on 127.0.0.1 accepts connections (llama-server listens before it loads
    /// its model, so this answers within a moment of its start).
    Port(u16),
}

impl Probe {
    /// Whether the socket answers now.
    pub async fn answers(&self) -> bool {
        match self {
            Self::Daemon(path) => {
                let open = Connection::open(path, Service::DAEMON, PEER);
                matches!(tokio::time::timeout(PROBE_TIMEOUT, open).await, Ok(Ok(_)))
            }
            Self::Assistant(path) => status(path).await.is_some(),
            Self::Port(port) => {
                let connect = tokio::net::TcpStream::connect((Ipv4Addr::LOCALHOST, *port));
                matches!(tokio::time::timeout(PROBE_TIMEOUT, connect).await, Ok(Ok(_)))
            }
        }
    }

    /// Where it is probed, for a person: `'/run/user/1000/stt-daemon.sock'`,
    /// `127.0.0.1:9931`.
    pub fn place(&self) -> String {
        match self {
            Self::Daemon(path) | Self::Assistant(path) => format!("'{}'", path.display()),
            Self::Port(port) => format!("127.0.0.1:{port}"),
        }
    }
}

/// The assistant's `status` reply, if it answers.
pub async fn status(assistant: &Path) -> Option<Status> {
    match stt_bus::request(assistant, PEER, &Request::Status, PROBE_TIMEOUT).await {
        Ok(Reply { event: AssistantEvent::Status(status), .. }) => Some(status),
        _ => None,
    }
}

/// The daemon's held input (`--hold-input`) and when to let it play.
#[derive(Debug, Clone)]
pub struct Hold {
    /// Becomes true when the input may play (the first arm or chat, or at once).
    pub wanted: watch::Receiver<bool>,
    /// The assistant, which must be following the daemon before the input plays, so no
    /// event of it goes unseen.
    pub assistant: PathBuf,
}

/// One supervised service.
#[derive(Debug)]
pub struct Supervised {
    pub spec: Spec,
    pub probe: Probe,
    pub policy: RestartPolicy,
    /// Where `up`'s lines about it go, and its own unless `log` says otherwise.
    pub output: Arc<Output>,
    /// A log of its own for its lines (llama-server's, which is chatty); `up`'s lines about
    /// it go there too, so each run in it is marked.
    pub log: Option<Arc<Output>>,
    /// For the daemon with `--input`: each start is held until this releases it.
    pub hold: Option<Hold>,
}

/// What a service's task tells the supervisor.
#[derive(Debug)]
pub enum Report {
    /// Its socket answers (after each start).
    Ready { name: &'static str, pid: i32 },
    /// It exited 0 by itself, and is not restarted.
    Finished { name: &'static str },
    /// It kept failing, or could not be started; the message says why, with its last lines.
    GaveUp { name: &'static str, message: String },
}

/// How one run of the child ended.
enum Outcome {
    /// `stop` was cancelled: the child is stopped, the task ends.
    Stopped,
    /// It ended; whether it had answered on its socket first.
    Ended { how: Ended, was_ready: bool },
}

impl Supervised {
    /// Runs the service until `stop` is cancelled, it finishes, or it is given up on.
    pub async fn run(self, reports: mpsc::UnboundedSender<Report>, stop: CancellationToken) {
        let name = self.spec.name;
        let mut history = CrashHistory::default();
        loop {
            let mut child = match self.spec.start(self.log.as_ref().unwrap_or(&self.output)) {
                Ok(child) => child,
                Err(e) => {
                    let _ = reports.send(Report::GaveUp { name, message: e.to_string() });
                    return;
                }
            };
            self.say(&format!("started {name} (pid {})", child.pid));
            let outcome = self.run_once(&mut child, &mut history, &reports, &stop).await;
            let (how, was_ready) = match outcome {
                Outcome::Stopped => return,
                Outcome::Ended { how: Ended::Finished, .. } => {
                    self.say(&format!("{name} exited with status 0; it is not restarted"));
                    let _ = reports.send(Report::Finished { name });
                    return;
                }
                Outcome::Ended { how: Ended::Crashed(how), was_ready } => (how, was_ready),
            };
            child.drain().await;
            match history.crashed(&self.policy, Instant::now(), was_ready) {
                Verdict::Restart(delay) => {
                    self.say(&format!("{name} {how}; restarting it in {} ms", delay.as_millis()));
                    tokio::select! {
                        () = stop.cancelled() => return,
                        () = tokio::time::sleep(delay) => {}
                    }
                }
                Verdict::GiveUp(why) => {
                    let message = give_up_message(name, &how, &why, &child.last_lines());
                    let _ = reports.send(Report::GaveUp { name, message });
                    return;
                }
            }
        }
    }

    /// One run of the child: until its socket answers, then until it ends.
    async fn run_once(
        &self,
        child: &mut Running,
        history: &mut CrashHistory,
        reports: &mpsc::UnboundedSender<Report>,
        stop: &CancellationToken,
    ) -> Outcome {
        let ready = tokio::select! {
            () = stop.cancelled() => None,
            status = child.wait() => Some(Err(status)),
            answered = wait_ready(&self.probe) => Some(Ok(answered)),
        };
        match ready {
            None => {
                child.stop(STOP_GRACE).await;
                return Outcome::Stopped;
            }
            Some(Err(status)) => return Outcome::Ended { how: how(status), was_ready: false },
            Some(Ok(false)) => {
                child.stop(STOP_GRACE).await;
                let how = format!(
                    "did not answer on {} within {} s",
                    self.probe.place(),
                    READY_TIMEOUT.as_secs()
                );
                return Outcome::Ended { how: Ended::Crashed(how), was_ready: false };
            }
            Some(Ok(true)) => {}
        }
        history.ready();
        let pid = child.pid.as_raw();
        let _ = reports.send(Report::Ready { name: self.spec.name, pid });

        let release = async {
            match &self.hold {
                Some(hold) => release_when_wanted(hold.clone()).await,
                None => std::future::pending().await,
            }
        };
        let mut release = std::pin::pin!(release);
        let mut released = false;
        loop {
            tokio::select! {
                () = stop.cancelled() => {
                    child.stop(STOP_GRACE).await;
                    return Outcome::Stopped;
                }
                status = child.wait() => {
                    return Outcome::Ended { how: how(status), was_ready: true };
                }
                () = &mut release, if !released => {
                    released = true;
                    child.signal(Signal::SIGUSR1);
                    self.say("playing the input");
                }
            }
        }
    }

    fn say(&self, line: &str) {
        self.output.line("up", line);
        if let Some(log) = &self.log {
            log.line("up", line);
        }
    }
}

fn how(status: std::io::Result<std::process::ExitStatus>) -> Ended {
    match status {
        Ok(status) => ended(status),
        Err(e) => Ended::Crashed(format!("could not be waited for ({e})")),
    }
}

/// Probes until the socket answers (`true`) or [`READY_TIMEOUT`] passes (`false`).
async fn wait_ready(probe: &Probe) -> bool {
    let deadline = tokio::time::Instant::now() + READY_TIMEOUT;
    loop {
        if probe.answers().await {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(PROBE_EVERY).await;
    }
}

/// Resolves once the input is wanted and the assistant follows the daemon (its status says
/// STT is healthy, which takes a heartbeat from the daemon).
async fn release_when_wanted(mut hold: Hold) {
    if hold.wanted.wait_for(|wanted| *wanted).await.is_err() {
        return std::future::pending().await;
    }
    loop {
        if status(&hold.assistant).await.is_some_and(|s| s.stt_healthy) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `giving up on stt-assistant: it failed 3 times …; the last time it exited with status 1.
/// Its last lines on stderr: …`
pub fn give_up_message(name: &str, how: &str, why: &str, last: &[String]) -> String {
    let mut message = format!("giving up on {name}: {why}; the last time it {how}.");
    if last.is_empty() {
        message.push_str(" It wrote nothing on stderr.");
    } else {
        message.push_str(" Its last lines on stderr:");
        for line in last {
            message.push_str("\n    ");
            message.push_str(line);
        }
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_give_up_message_names_the_child_why_and_its_last_lines() {
        let last = ["loading".to_owned(), "stt-assistant: error: bad socket".to_owned()];
        assert_eq!(
            give_up_message(
                "stt-assistant",
                "exited with status 1",
                "it failed 3 times in a row before it answered on its socket",
                &last
            ),
            "giving up on stt-assistant: it failed 3 times in a row before it answered on its \
             socket; the last time it exited with status 1. Its last lines on stderr:\n    \
             loading\n    stt-assistant: error: bad socket"
        );
        assert!(give_up_message("x", "a", "b", &[]).ends_with("It wrote nothing on stderr."));
    }

    #[tokio::test]
    async fn a_socket_nobody_serves_does_not_answer() {
        let dir = tempfile::tempdir().unwrap();
        for probe in
            [Probe::Daemon(dir.path().join("d.sock")), Probe::Assistant(dir.path().join("a.sock"))]
        {
            assert!(!probe.answers().await, "{probe:?}");
        }
    }

    #[tokio::test]
    async fn a_port_answers_while_something_listens() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let probe = Probe::Port(port);
        assert!(probe.answers().await);
        assert_eq!(probe.place(), format!("127.0.0.1:{port}"));
        drop(listener);
        assert!(!probe.answers().await);
    }
}
