//! `capture_screen`: a picture of the screen (or of the focused window) taken with the tool
//! the desktop already has, and its text read by OCR (`stt-ocr`). Read only; offered only
//! with `[tools].screen = true`.
//!
//! The tool is chosen at run time for the session: on Wayland `grim` (wlroots compositors:
//! Sway, Hyprland), `gnome-screenshot` (GNOME), `spectacle` (KDE); on X11 `import`
//! (ImageMagick), `gnome-screenshot`, `spectacle`. When none is there the error names what
//! to install for this kind of session. The picture is written to a private temporary file
//! and deleted once read; only its text leaves this module.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use stt_ocr::{Ocr, Picture};

/// How long the screenshot tool may take.
const TAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Which display server the session runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Session {
    Wayland,
    X11,
    /// Neither `WAYLAND_DISPLAY` nor `DISPLAY` is set.
    None,
}

impl Session {
    /// This process's session, from its environment.
    pub fn current() -> Self {
        if std::env::var_os("WAYLAND_DISPLAY").is_some_and(|v| !v.is_empty()) {
            Self::Wayland
        } else if std::env::var_os("DISPLAY").is_some_and(|v| !v.is_empty()) {
            Self::X11
        } else {
            Self::None
        }
    }
}

/// A screenshot program and how to ask it for the screen or the focused window, writing
/// to a file.
struct Taker {
    program: &'static str,
    screen: &'static [&'static str],
    window: Option<&'static [&'static str]>,
}

const GRIM: Taker = Taker { program: "grim", screen: &[], window: None };
const GNOME: Taker =
    Taker { program: "gnome-screenshot", screen: &["-f"], window: Some(&["-w", "-f"]) };
const SPECTACLE: Taker = Taker {
    program: "spectacle",
    screen: &["-b", "-n", "-f", "-o"],
    window: Some(&["-b", "-n", "-a", "-o"]),
};
const IMPORT: Taker = Taker { program: "import", screen: &["-window", "root"], window: None };

fn takers(session: Session) -> &'static [Taker] {
    match session {
        Session::Wayland => &[GRIM, GNOME, SPECTACLE],
        Session::X11 => &[IMPORT, GNOME, SPECTACLE],
        Session::None => &[],
    }
}

/// What to install, worded for `session`.
fn install_hint(session: Session) -> String {
    match session {
        Session::Wayland => {
            "no screenshot tool is installed for this Wayland session: install grim (Sway, \
                             Hyprland), gnome-screenshot (GNOME) or spectacle (KDE)"
                .into()
        }
        Session::X11 => {
            "no screenshot tool is installed for this X11 session: install imagemagick (for \
                         `import`), gnome-screenshot or spectacle"
                .into()
        }
        Session::None => {
            "there is no graphical session to capture (neither WAYLAND_DISPLAY nor DISPLAY is set)"
                .into()
        }
    }
}

/// The first of `program` found in `path` (a PATH-like list of folders).
fn find(program: &str, path: &std::ffi::OsStr) -> Option<PathBuf> {
    std::env::split_paths(path).map(|dir| dir.join(program)).find(|p| p.is_file())
}

/// The screen reader: OCR's models, loaded the first time they are needed.
#[derive(Debug, Clone)]
pub struct Screen {
    models: PathBuf,
    runtime: PathBuf,
    ocr: Arc<Mutex<Option<Ocr>>>,
}

/// Readers are alike when they read with the same models (the registry compares its tools).
impl PartialEq for Screen {
    fn eq(&self, other: &Self) -> bool {
        self.models == other.models && self.runtime == other.runtime
    }
}

impl Screen {
    /// OCR from `<models>` (`ocr/det.onnx`, `ocr/rec.onnx`) with ONNX Runtime at `runtime`.
    pub fn new(models: PathBuf, runtime: PathBuf) -> Self {
        Self { models, runtime, ocr: Arc::default() }
    }

    /// `capture_screen(window)`: the text on the screen (or the focused window, where the
    /// tool can take one), for `session`, finding the tools in `path`.
    pub async fn capture(
        &self,
        window: bool,
        session: Session,
        path: &std::ffi::OsStr,
    ) -> Result<String, String> {
        let found = takers(session).iter().find_map(|t| find(t.program, path).map(|p| (t, p)));
        let Some((taker, program)) = found else { return Err(install_hint(session)) };
        // Private (0700), and removed with everything in it when dropped, on every path out.
        let dir = tempfile::Builder::new().prefix("stt-screen-").tempdir().map_err(|e| {
            format!(
                "cannot make a folder for the screenshot in {}: {e}",
                std::env::temp_dir().display()
            )
        })?;
        let file = dir.path().join("screen.png");
        let (args, whole) = match (window, taker.window) {
            (true, Some(args)) => (args, false),
            (_, _) => (taker.screen, window),
        };
        let mut command = tokio::process::Command::new(&program);
        command.args(args).arg(&file).stdin(std::process::Stdio::null()).kill_on_drop(true);
        let taken = tokio::time::timeout(TAKE_TIMEOUT, command.output()).await;
        let output = match taken {
            Ok(Ok(output)) => output,
            Ok(Err(e)) => return Err(format!("cannot run {}: {e}", program.display())),
            Err(_) => {
                return Err(format!(
                    "{} took more than {} s",
                    taker.program,
                    TAKE_TIMEOUT.as_secs()
                ));
            }
        };
        let bytes = std::fs::read(&file);
        // The picture is gone once read.
        drop(dir);
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(format!("{} failed ({}): {}", taker.program, output.status, stderr.trim()));
        }
        let bytes = bytes.map_err(|e| format!("{} wrote no picture: {e}", taker.program))?;
        let screen = self.clone();
        let text = tokio::task::spawn_blocking(move || screen.read(&bytes))
            .await
            .map_err(|e| format!("reading the screen failed: {e}"))??;
        let what = if window && !whole { "the focused window" } else { "the screen" };
        let text = if text.trim().is_empty() {
            format!("no text on {what}")
        } else {
            crate::context::capped(&text, 0, what)
        };
        Ok(if whole {
            format!("({} takes no single window: this is the whole screen)\n{text}", taker.program)
        } else {
            text
        })
    }

    /// The text in a PNG.
    fn read(&self, png: &[u8]) -> Result<String, String> {
        let picture = Picture::from_png(png).map_err(|e| e.to_string())?;
        let mut slot = self.ocr.lock().map_err(|_| "the OCR models failed before".to_owned())?;
        if slot.is_none() {
            *slot = Some(
                Ocr::load(&self.models.join("ocr"), &self.runtime, 2).map_err(|e| e.to_string())?,
            );
        }
        let ocr = slot.as_mut().ok_or("the OCR models are not loaded")?;
        let lines = ocr.read(&picture).map_err(|e| e.to_string())?;
        Ok(stt_ocr::text(&lines))
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    /// A folder holding a fake `program` that writes `png` to the file named last and logs
    /// its arguments to `args.txt` beside it.
    fn fake(program: &str, png: &[u8]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let picture = dir.path().join("picture.png");
        std::fs::write(&picture, png).unwrap();
        let script = format!(
            "#!/bin/sh\necho \"$@\" > '{log}'\nfor last; do :; done\ncp '{picture}' \"$last\"\n",
            log = dir.path().join("args.txt").display(),
            picture = picture.display()
        );
        let path = dir.path().join(program);
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        dir
    }

    fn reader() -> Screen {
        let models =
            stt_config::dirs::models_dir_with(&stt_config::dirs::Env::from_process()).unwrap();
        Screen::new(models.clone(), stt_onnx::runtime_library(&models))
    }

    /// The screenshot tool found for the session takes the picture; OCR reads its text; the
    /// picture is gone afterwards.
    #[tokio::test]
    async fn the_text_on_the_screen_is_read_from_the_tool_the_session_has() {
        let rgb = stt_testkit::picture::draw(
            800,
            120,
            26.0,
            20,
            240,
            &[(30.0, 40.0, "Disk almost full: 2 GB left")],
        );
        let tools = fake("grim", &stt_testkit::picture::png(800, 120, &rgb));
        let text =
            reader().capture(false, Session::Wayland, tools.path().as_os_str()).await.unwrap();
        assert_eq!(text, "Disk almost full: 2 GB left");
        let args = std::fs::read_to_string(tools.path().join("args.txt")).unwrap();
        let written = PathBuf::from(args.trim());
        assert!(written.ends_with("screen.png") && !written.exists(), "{args}");

        // The focused window, from a tool that can take one; grim cannot, and says so.
        let tools = fake("gnome-screenshot", &stt_testkit::picture::png(800, 120, &rgb));
        let text = reader().capture(true, Session::X11, tools.path().as_os_str()).await.unwrap();
        assert_eq!(text, "Disk almost full: 2 GB left");
        let args = std::fs::read_to_string(tools.path().join("args.txt")).unwrap();
        assert!(args.starts_with("-w -f "), "{args}");
        let tools = fake("grim", &stt_testkit::picture::png(800, 120, &rgb));
        let whole =
            reader().capture(true, Session::Wayland, tools.path().as_os_str()).await.unwrap();
        assert_eq!(
            whole,
            "(grim takes no single window: this is the whole screen)\nDisk almost full: 2 GB left"
        );
    }

    #[tokio::test]
    async fn without_a_tool_the_error_names_what_to_install_for_the_session() {
        let empty = tempfile::tempdir().unwrap();
        let path = empty.path().as_os_str();
        let wayland = reader().capture(false, Session::Wayland, path).await.unwrap_err();
        assert!(wayland.contains("grim") && wayland.contains("Wayland"), "{wayland}");
        let x11 = reader().capture(false, Session::X11, path).await.unwrap_err();
        assert!(x11.contains("imagemagick") && x11.contains("X11"), "{x11}");
        let none = reader().capture(false, Session::None, path).await.unwrap_err();
        assert!(none.contains("DISPLAY"), "{none}");
        // A tool that fails: its own words come back.
        let broken = tempfile::tempdir().unwrap();
        let grim = broken.path().join("grim");
        std::fs::write(
            &grim,
            "#!/bin/sh\necho 'compositor does not support wlr-screencopy' >&2\nexit 1\n",
        )
        .unwrap();
        std::fs::set_permissions(&grim, std::fs::Permissions::from_mode(0o755)).unwrap();
        let why =
            reader().capture(false, Session::Wayland, broken.path().as_os_str()).await.unwrap_err();
        assert!(why.contains("grim failed") && why.contains("wlr-screencopy"), "{why}");
    }
}
