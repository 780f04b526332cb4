//! llama-server on one model, started with the arguments `stt-daemon up` gives it.

use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use stt_daemon::up::model::Launch;

/// How long llama-server may take to load a model.
const LOAD_PATIENCE: Duration = Duration::from_secs(300);

/// llama-server on one model, started as `stt-daemon up` starts it; killed when dropped.
#[derive(Debug)]
pub struct Llama {
    pub child: Child,
    pub port: u16,
    /// From the spawn to `GET /health` answering 200.
    pub load: Duration,
}

impl Llama {
    /// Starts `model` on a free port, its log in `dir`, and waits until it is ready.
    pub fn start(model: &Path, dir: &Path, name: &str) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or_else(|e| panic!("no free port: {e}"));
        let launch = launch(model, port);
        let mut args = launch.args();
        args.extend(["--slot-save-path".into(), Self::slots(dir).into_os_string()]);
        let log = dir.join(format!("{name}.log"));
        let out = File::create(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
        let err = out.try_clone().unwrap_or_else(|e| panic!("{}: {e}", log.display()));
        let started = Instant::now();
        std::fs::create_dir_all(Self::slots(dir))
            .unwrap_or_else(|e| panic!("{}: {e}", Self::slots(dir).display()));
        let child = Command::new(&launch.program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", launch.program.display()));
        let mut server = Self { child, port, load: Duration::ZERO };
        stt_testkit::expect_within(
            "llama-server answers GET /health with 200",
            LOAD_PATIENCE,
            || {
                if let Ok(Some(status)) = server.child.try_wait() {
                    let said = std::fs::read_to_string(&log).unwrap_or_default();
                    panic!("llama-server exited ({status}); its log:\n{said}");
                }
                match stt_testkit::llama::health(port) {
                    Some(200) => Ok(()),
                    other => Err(format!("{other:?}")),
                }
            },
        );
        server.load = started.elapsed();
        server
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1/chat/completions", self.port)
    }

    /// Where its slots are saved (`--slot-save-path`, as `up` gives one), under `dir`.
    pub fn slots(dir: &Path) -> PathBuf {
        dir.join("llama-slots")
    }

    /// Its peak resident memory so far (VmHWM), in KiB.
    pub fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }
}

impl Drop for Llama {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How `stt-daemon up` runs `model` on `port`: a thread per CPU, as `up::model::facts` counts
/// them.
fn launch(model: &Path, port: u16) -> Launch {
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    Launch { program: stt_testkit::llama::server_program(), model: model.to_owned(), port, threads }
}

/// llama-server's arguments as `up` gives them, the model and the port as placeholders.
pub fn shown_args() -> String {
    let launch = launch(Path::new("MODEL.gguf"), 1);
    let mut shown = vec!["llama-server".to_owned()];
    let mut after_port = false;
    for arg in launch.args() {
        let arg = arg.to_string_lossy().into_owned();
        shown.push(if after_port { "PORT".to_owned() } else { arg.clone() });
        after_port = arg == "--port";
    }
    shown.push("--slot-save-path DIR".to_owned());
    shown.join(" ")
}
