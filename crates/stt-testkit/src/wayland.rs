//! A real Wayland compositor for dictation tests: sway on its headless backend (software
//! rendering), running one foot terminal that has the focus and writes every character it
//! receives to a file, as [`crate::x11`] does for X11. wtype types into it through the
//! virtual-keyboard protocol, as on a desktop running sway.
//!
//! sway refuses to run as root, so as root (CI) it runs as `nobody` (`setpriv`), in a
//! runtime directory of that user's; `WAYLAND_DISPLAY` is then the socket's full path.
//! `scripts/setup` installs sway, foot, xwayland and wtype.

use std::cell::Cell;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The user sway runs as when the tests run as root.
const NOBODY: u32 = 65_534;

/// A compositor with a focused text window; both are killed on drop.
#[derive(Debug)]
pub struct Display {
    sway: Child,
    /// The socket's full path, for `WAYLAND_DISPLAY`.
    socket: PathBuf,
    typed: PathBuf,
    from: Cell<usize>,
    dir: tempfile::TempDir,
}

impl Display {
    /// Starts sway and the window. Panics, naming what to install, when a program is missing.
    pub fn start() -> Self {
        for program in ["sway", "foot", "wtype", "setpriv"] {
            assert!(
                stt_os::find_on_path(Path::new(program)).is_some(),
                "{program} is not installed: run scripts/setup (Debian: apt install sway foot xwayland wtype)"
            );
        }
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("a temporary directory: {e}"));
        let root = nix::unistd::getuid().is_root();
        let typed = dir.path().join("typed");
        let config = dir.path().join("config");
        std::fs::write(
            &config,
            format!(
                "output HEADLESS-1 resolution 1024x768\nexec foot -e sh -c \"stty -icanon -echo; exec cat > '{}'\"\n",
                typed.display()
            ),
        )
        .unwrap_or_else(|e| panic!("sway's config: {e}"));
        if root {
            // The directory is nobody's, as a runtime directory must be its user's.
            let chown = |p: &Path| {
                nix::unistd::chown(p, Some(NOBODY.into()), Some(NOBODY.into()))
                    .unwrap_or_else(|e| panic!("chown {}: {e}", p.display()));
            };
            chown(dir.path());
            chown(&config);
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
                .unwrap_or_else(|e| panic!("chmod: {e}"));
        }
        let mut command = if root {
            let mut c = Command::new("setpriv");
            c.args([
                "--reuid",
                &NOBODY.to_string(),
                "--regid",
                &NOBODY.to_string(),
                "--clear-groups",
                "sway",
            ]);
            c
        } else {
            Command::new("sway")
        };
        let sway = command
            .args(["-c"])
            .arg(&config)
            .env("XDG_RUNTIME_DIR", dir.path())
            .env("HOME", dir.path())
            .env("WLR_BACKENDS", "headless")
            .env("WLR_LIBINPUT_NO_DEVICES", "1")
            .env("WLR_RENDERER", "pixman")
            .env_remove("WAYLAND_DISPLAY")
            .env_remove("DISPLAY")
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(
                std::fs::File::create(dir.path().join("sway.log"))
                    .unwrap_or_else(|e| panic!("sway's log: {e}")),
            )
            .spawn()
            .unwrap_or_else(|e| panic!("sway starts: {e}"));
        let mut display = Self { sway, socket: PathBuf::new(), typed, from: Cell::new(0), dir };
        display.socket = crate::wait_for("sway's socket", crate::DEADLINE, || {
            if let Ok(Some(status)) = display.sway.try_wait() {
                panic!("sway ended ({status}): {}", display.log());
            }
            std::fs::read_dir(display.dir.path()).ok()?.flatten().map(|e| e.path()).find(|p| {
                p.file_name().is_some_and(|n| {
                    let n = n.to_string_lossy();
                    n.starts_with("wayland-") && !n.ends_with(".lock")
                })
            })
        });
        // The terminal's `stty` has run once a key reaches the file unechoed.
        crate::wait_for("the window to take keys", crate::DEADLINE, || {
            display.wtype(".");
            std::thread::sleep(Duration::from_millis(50));
            (!display.typed().is_empty()).then_some(())
        });
        display.clear();
        display
    }

    /// `WAYLAND_DISPLAY` for programs that type into the window (the socket's full path).
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The text the window holds from what it received since the last [`Display::clear`].
    pub fn typed(&self) -> String {
        crate::x11::received(&self.typed, self.from.get())
    }

    /// Forgets what was typed so far.
    pub fn clear(&self) {
        self.from.set(crate::x11::end(&self.typed));
    }

    /// Types `text` with wtype, as dictation does (on its standard input).
    pub fn wtype(&self, text: &str) {
        use std::io::Write;
        let mut child = Command::new("wtype")
            .arg("-")
            .env("WAYLAND_DISPLAY", &self.socket)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("wtype: {e}"));
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(text.as_bytes());
        }
        let _ = child.wait();
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sway.log")).unwrap_or_default()
    }
}

impl Drop for Display {
    fn drop(&mut self) {
        let _ = self.sway.kill();
        let _ = self.sway.wait();
    }
}
