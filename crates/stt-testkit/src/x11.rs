//! A real X server for dictation tests: Xvfb on a display of its own, with one plain text
//! window (xterm) that has the focus and writes every character it receives to a file, so a
//! test reads back exactly what was typed into it.
//!
//! The terminal runs `cat` with the line discipline's echo and line buffering off
//! (`stty -icanon -echo`): each key reaches the file as it is typed, Return as a newline.
//! `scripts/setup` installs Xvfb, xterm and xdotool.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// An X server with a focused text window; both are killed on drop.
#[derive(Debug)]
pub struct Display {
    server: Child,
    window: Child,
    /// `:N`, for `DISPLAY`.
    name: String,
    typed: PathBuf,
    /// Where in the file [`Display::typed`] reads from.
    from: Cell<usize>,
    _dir: tempfile::TempDir,
}

impl Display {
    /// Starts Xvfb and the window. Panics, naming what to install, when a program is missing.
    pub fn start() -> Self {
        for program in ["Xvfb", "xterm", "xdotool"] {
            assert!(
                stt_os::find_on_path(Path::new(program)).is_some(),
                "{program} is not installed: run scripts/setup (Debian: apt install xvfb xterm xdotool)"
            );
        }
        // Now and then a new xterm cannot open a new Xvfb's display under load (xterm, run
        // as root, will not say why): a fresh pair is started, three times at most.
        let mut why = String::new();
        for _ in 0..3 {
            match Self::try_start() {
                Ok(display) => return display,
                Err(e) => why = e,
            }
        }
        panic!("no X display with a text window: {why}");
    }

    fn try_start() -> Result<Self, String> {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("a temporary directory: {e}"));
        // Xvfb picks a free display and writes its number on the descriptor it is given.
        let mut server = Command::new("Xvfb")
            .args(["-displayfd", "1", "-screen", "0", "1024x768x24", "-nolisten", "tcp"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("Xvfb starts: {e}"));
        let number =
            read_line(server.stdout.take().unwrap_or_else(|| panic!("Xvfb has no output pipe")));
        let name = format!(":{}", number.trim());
        let typed = dir.path().join("typed");
        std::fs::write(&typed, "").unwrap_or_else(|e| panic!("the window's file: {e}"));
        let window = Command::new("xterm")
            .env("DISPLAY", &name)
            .args(["-geometry", "120x30+0+0", "-e", "sh", "-c"])
            .arg(format!("stty -icanon -echo; exec cat > '{}'", typed.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(
                std::fs::File::create(dir.path().join("xterm.log"))
                    .unwrap_or_else(|e| panic!("xterm's log: {e}")),
            )
            .spawn()
            .unwrap_or_else(|e| panic!("xterm starts: {e}"));
        let display = Self { server, window, name, typed, from: Cell::new(0), _dir: dir };
        // The window is mapped, then given the focus (no window manager does it here).
        let mut display = display;
        let id = crate::wait_for("the xterm window", crate::DEADLINE, || {
            if let Ok(Some(status)) = display.window.try_wait() {
                let log = std::fs::read_to_string(display._dir.path().join("xterm.log"));
                let server = display.server.try_wait();
                return Some(Err(format!(
                    "xterm on {} ended ({status}; Xvfb: {server:?}): {}",
                    display.name,
                    log.unwrap_or_default()
                )));
            }
            let out = display.xdotool(&["search", "--onlyvisible", "--class", "xterm"]);
            out.lines()
                .next()
                .map(|l| Ok(l.to_owned()))
                .filter(|l| l.as_ref().is_ok_and(|l| !l.is_empty()))
        })?;
        display.xdotool(&["windowfocus", "--sync", &id]);
        // The terminal's `stty` has run once a key reaches the file unechoed.
        crate::wait_for("the window to take keys", crate::DEADLINE, || {
            display.xdotool(&["type", "--delay", "0", "."]);
            std::thread::sleep(Duration::from_millis(50));
            let seen = display.typed();
            (!seen.is_empty()).then_some(())
        });
        display.clear();
        Ok(display)
    }

    /// `DISPLAY` for programs that type into the window.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The text the window holds from what it received since the last [`Display::clear`].
    pub fn typed(&self) -> String {
        received(&self.typed, self.from.get())
    }

    /// Forgets what was typed so far.
    pub fn clear(&self) {
        self.from.set(end(&self.typed));
    }

    /// Runs xdotool on this display; its output.
    pub fn xdotool(&self, args: &[&str]) -> String {
        let out = Command::new("xdotool")
            .env("DISPLAY", &self.name)
            .args(args)
            .stderr(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("xdotool runs: {e}"));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// The text a window that writes what it receives to `file` holds, from byte `from` on: a
/// backspace (a terminal sends DEL) takes back the character before it, as in any text field.
pub(crate) fn received(file: &Path, from: usize) -> String {
    let bytes = std::fs::read(file).unwrap_or_default();
    let received = String::from_utf8_lossy(bytes.get(from..).unwrap_or_default());
    let mut text = String::with_capacity(received.len());
    for c in received.chars() {
        if matches!(c, '\u{7f}' | '\u{8}') {
            text.pop();
        } else {
            text.push(c);
        }
    }
    text
}

/// Where a window's file ends now: what [`received`] reads from to forget what came before
/// (`cat` keeps writing at its own offset, so the file is read from there rather than
/// emptied).
pub(crate) fn end(file: &Path) -> usize {
    std::fs::read(file).map(|b| b.len()).unwrap_or(0)
}

fn read_line(pipe: std::process::ChildStdout) -> String {
    use std::io::BufRead;
    let mut line = String::new();
    std::io::BufReader::new(pipe)
        .read_line(&mut line)
        .unwrap_or_else(|e| panic!("Xvfb says its display: {e}"));
    assert!(!line.trim().is_empty(), "Xvfb did not start (is another X server in the way?)");
    line
}

impl Drop for Display {
    fn drop(&mut self) {
        let _ = self.window.kill();
        let _ = self.window.wait();
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}
