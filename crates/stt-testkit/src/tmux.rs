//! A real terminal for the tests of the TUI: one program in a detached tmux session of a
//! private server (`tmux -L stt-test-<pid>-<n>`), at a fixed size; keys sent to it as a person
//! types them, its screen read back as plain text, and its exit status once it is gone.
//!
//! The server, and with it the program (tmux hangs it up), goes when the [`Tmux`] is dropped,
//! whether or not the test passed; the drop waits (up to 10 s) until the program is gone.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// What the shell around the program prints when it exits, before the status and `]`.
const EXITED: &str = "[tmux: the program exited with status ";

/// A private tmux server running one program in one pane; killed when dropped.
#[derive(Debug)]
pub struct Tmux {
    /// The `-L` name of the server.
    server: String,
    /// The session (and so its one pane) the commands are aimed at.
    session: String,
    /// The server's socket, which tmux leaves behind when killed.
    socket: PathBuf,
    /// The pid of the shell the program runs under.
    shell: i32,
    /// Files shown with the screen when a wait times out (the program's logs).
    logs: Vec<PathBuf>,
}

impl Tmux {
    /// Starts `cmd`'s program with its arguments, its working directory and its changes to
    /// the environment (what it sets and removes: the pane inherits the rest from this
    /// process, as a child would), in a window of `width`×`height` cells.
    ///
    /// It runs under a shell that prints its exit status when it ends and then stays a
    /// minute, so that [`exit_status`](Self::exit_status) can read it from the screen. (Not
    /// tmux's `remain-on-exit`: a program that exits while tmux's libutempter has its own
    /// SIGCHLD handler in is never reaped, and its pane is dead without a status; see
    /// tmux/tmux#311.)
    ///
    /// Fails the test, naming scripts/setup, when tmux is not installed.
    pub fn start(cmd: &Command, width: u16, height: u16) -> Self {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let installed = Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success());
        assert!(installed, "tmux is not installed: run scripts/setup (it installs tmux)");

        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let server = format!("stt-test-{}-{n}", std::process::id());
        let session = "stt".to_owned();
        let mut tmux = Self { server, session, socket: PathBuf::new(), shell: 0, logs: Vec::new() };
        let (width, height) = (width.to_string(), height.to_string());
        let mut args: Vec<OsString> = ["new-session", "-d", "-s", &tmux.session]
            .into_iter()
            .chain(["-x", &width, "-y", &height])
            .map(OsString::from)
            .collect();
        if let Some(dir) = cmd.get_current_dir() {
            args.extend([OsString::from("-c"), dir.as_os_str().to_owned()]);
        }
        // Several arguments: tmux runs them as they are, and the shell takes the program's
        // as "$@", so nothing needs quoting.
        let script = format!("\"$@\"; echo \"{EXITED}$?]\"; exec sleep 60");
        args.extend(["sh", "-c", &script, "sh"].map(OsString::from));
        args.extend(env_argv(cmd));
        tmux.tmux(&args);
        tmux.socket = PathBuf::from(tmux.query("#{socket_path}"));
        let shell = tmux.query("#{pane_pid}");
        tmux.shell =
            shell.parse().unwrap_or_else(|e| panic!("tmux gave the pane's pid as {shell:?}: {e}"));
        tmux
    }

    /// Shows the contents of `log` with the screen when a [`wait_for`](Self::wait_for)
    /// times out.
    #[must_use]
    pub fn showing(mut self, log: impl Into<PathBuf>) -> Self {
        self.logs.push(log.into());
        self
    }

    /// Types `key`, in tmux's `send-keys` names: `a`, `Enter`, `Escape`, `C-c`.
    pub fn send(&self, key: &str) {
        self.tmux(&["send-keys", "-t", &self.session, key]);
    }

    /// What the terminal shows now, one line a row, without colours or attributes.
    pub fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", &self.session])
    }

    /// The pid of the program while it runs: the shell's one child (`env`, which became the
    /// program).
    pub fn pid(&self) -> Option<i32> {
        if self.shell == 0 {
            return None; // not started
        }
        match crate::procs::children(self.shell).as_slice() {
            [program] if program.comm != "sleep" => Some(program.pid),
            _ => None,
        }
    }

    /// The program's exit status once it has exited, from the line its shell printed
    /// (`None` while it runs; 128 + the signal when a signal ended it).
    pub fn exit_status(&self) -> Option<i32> {
        let screen = self.screen();
        let (_, after) = screen.rsplit_once(EXITED)?;
        after.split(']').next()?.parse().ok()
    }

    /// Waits until the screen satisfies `done`, and returns it; fails the test after
    /// `timeout` with `what`, the last screen and the logs.
    #[track_caller]
    pub fn wait_for(
        &self,
        what: &str,
        timeout: Duration,
        mut done: impl FnMut(&str) -> bool,
    ) -> String {
        crate::expect_within(what, timeout, || {
            let screen = self.screen();
            if done(&screen) { Ok(screen) } else { Err(self.seen(&screen)) }
        })
    }

    /// A screen and the logs, for a failure message.
    pub fn seen(&self, screen: &str) -> String {
        let mut seen = format!("the screen:\n{screen}");
        for log in &self.logs {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            seen.push_str(&format!("\n{}:\n{text}", log.display()));
        }
        seen
    }

    /// One value of tmux's formats (`#{pane_pid}`) for the pane.
    fn query(&self, format: &str) -> String {
        self.tmux(&["display-message", "-p", "-t", &self.session, format]).trim().to_owned()
    }

    /// Runs a tmux command against this server and returns what it printed; fails the test
    /// when tmux does.
    fn tmux<S: AsRef<std::ffi::OsStr>>(&self, args: &[S]) -> String {
        let out = self.client().args(args).output().unwrap_or_else(|e| {
            panic!("cannot run tmux ({e}): run scripts/setup (it installs tmux)")
        });
        let shown: Vec<_> = args.iter().map(|a| a.as_ref().to_string_lossy()).collect();
        assert!(
            out.status.success(),
            "tmux -L {} {} failed ({}): {}",
            self.server,
            shown.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A tmux client of this server, ignoring the user's configuration and any tmux this
    /// test runs in.
    fn client(&self) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.env_remove("TMUX").args(["-L", &self.server, "-f", "/dev/null"]);
        cmd
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let program = self.pid();
        // Hangs up the pane's shell and program; its socket file is left for us to remove.
        let _ = self.client().arg("kill-server").output();
        if !self.socket.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.socket);
        }
        // A program that stops cleanly on SIGHUP is given the time to, before the test's
        // directories go.
        if let Some(pid) = program {
            crate::wait_until(Duration::from_secs(10), || {
                (!crate::procs::is_alive(pid)).then_some(())
            });
        }
    }
}

/// `cmd` as the arguments of `env`: what it removes (`-u NAME`) and sets (`NAME=value`)
/// in the environment, then the program and its arguments.
fn env_argv(cmd: &Command) -> Vec<OsString> {
    let mut argv = vec![OsString::from("env")];
    let mut sets = Vec::new();
    for (name, value) in cmd.get_envs() {
        match value {
            None => argv.extend([OsString::from("-u"), name.to_owned()]),
            Some(value) => {
                let mut set = name.to_owned();
                set.push("=");
                set.push(value);
                sets.push(set);
            }
        }
    }
    argv.extend(sets);
    argv.push(cmd.get_program().to_owned());
    argv.extend(cmd.get_args().map(ToOwned::to_owned));
    argv
}

/// The text inside the box whose top border holds ` title ` (a ratatui `Block` the width of
/// the screen): its rows, without the borders, trimmed; `None` when no such box is shown.
pub fn panel(screen: &str, title: &str) -> Option<String> {
    let title = format!(" {title} ");
    let mut rows = screen.lines().skip_while(|row| !(row.starts_with('┌') && row.contains(&title)));
    rows.next()?;
    let inside = rows
        .take_while(|row| !row.starts_with('└'))
        .map(|row| row.trim_start_matches('│').trim_end().trim_end_matches('│').trim())
        .collect::<Vec<_>>();
    Some(inside.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_becomes_env_with_its_changes_then_the_program() {
        let mut cmd = Command::new("/bin/prog");
        cmd.env("A", "1 2").env_remove("B").arg("--x").arg("y z");
        let argv: Vec<String> =
            env_argv(&cmd).iter().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(argv, ["env", "-u", "B", "A=1 2", "/bin/prog", "--x", "y z"]);
    }

    #[test]
    fn a_panel_is_the_rows_inside_its_box() {
        let screen = "┌ stt ──┐\n│mode idle│\n└───────┘\n┌ command buffer ─┐\n│What time│\n│ is it? │\n└─────────┘\n hints";
        assert_eq!(panel(screen, "command buffer").as_deref(), Some("What time\nis it?"));
        assert_eq!(panel(screen, "stt").as_deref(), Some("mode idle"));
        assert_eq!(panel(screen, "transcripts"), None);
    }
}
