//! Typing into the focused window with the tools the desktop session has.
//!
//! Which tool is decided at run time, each time one fails: the one that worked last is
//! tried first; otherwise, on Wayland `wtype` (wlroots compositors and KDE: the virtual
//! keyboard protocol: sway, Hyprland, river; any text), `ydotool` and `dotool` (any compositor, through uinput:
//! US key codes, so ASCII text), then the clipboard (`wl-copy`, the paste key sent by one
//! of the three, the old clipboard put back); on X11 `xdotool type` (it finds each
//! character's key in the current layout), then the clipboard (`xclip` or `xsel`, the paste
//! key sent by `xdotool`). `[dictate].method` picks one and only that one.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::Edit;

/// The kind of desktop session, from its environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Session {
    Wayland,
    X11,
}

impl Session {
    /// Wayland when `WAYLAND_DISPLAY` is set (X11 programs there reach only XWayland's
    /// windows), else X11 when `DISPLAY` is; `None` outside a graphical session.
    pub fn from_env(wayland_display: Option<&OsStr>, display: Option<&OsStr>) -> Option<Self> {
        let set = |v: Option<&OsStr>| v.is_some_and(|v| !v.is_empty());
        if set(wayland_display) {
            Some(Self::Wayland)
        } else if set(display) {
            Some(Self::X11)
        } else {
            None
        }
    }

    /// The methods to try, in order.
    fn methods(self) -> &'static [Method] {
        match self {
            Self::Wayland => &[Method::Wtype, Method::Ydotool, Method::Dotool, Method::Clipboard],
            Self::X11 => &[Method::Xdotool, Method::Clipboard],
        }
    }

    /// What to install when nothing works.
    fn hint(self) -> &'static str {
        match self {
            Self::Wayland => {
                "install wtype (sway, Hyprland, river and other wlroots compositors), or ydotool with its ydotoold \
                 service running (GNOME and any other compositor), or wl-clipboard with one of \
                 those for the paste key; or pick one with [dictate].method"
            }
            Self::X11 => "install xdotool (Debian and Ubuntu: apt install xdotool)",
        }
    }
}

impl fmt::Display for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Wayland => "Wayland",
            Self::X11 => "X11",
        })
    }
}

/// How text gets into the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Wtype,
    Ydotool,
    Dotool,
    Xdotool,
    /// The text put on the clipboard, the paste key pressed, the old clipboard put back.
    Clipboard,
}

impl Method {
    /// Every method, as `[dictate].method` names them.
    pub const ALL: [Method; 5] =
        [Self::Wtype, Self::Ydotool, Self::Dotool, Self::Xdotool, Self::Clipboard];

    pub fn name(self) -> &'static str {
        match self {
            Self::Wtype => "wtype",
            Self::Ydotool => "ydotool",
            Self::Dotool => "dotool",
            Self::Xdotool => "xdotool",
            Self::Clipboard => "clipboard",
        }
    }

    /// The method named `name`, as `[dictate].method` writes it.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// What the typist needs to know.
#[derive(Debug, Clone)]
pub struct TypistSettings {
    /// The one method to use; `None` picks from what the session has.
    pub method: Option<Method>,
    /// The key that pastes, for the clipboard method: `ctrl+v`, or `ctrl+shift+v` for
    /// terminals, `shift+Insert`.
    pub paste_key: String,
    /// The session; `None` outside one (every edit then fails, saying so).
    pub session: Option<Session>,
    /// Where programs are looked for (a `PATH` value).
    pub path: Option<OsString>,
}

impl TypistSettings {
    /// The session and `PATH` of this process's environment.
    pub fn from_env(method: Option<Method>, paste_key: &str) -> Self {
        Self {
            method,
            paste_key: paste_key.to_owned(),
            session: Session::from_env(
                std::env::var_os("WAYLAND_DISPLAY").as_deref(),
                std::env::var_os("DISPLAY").as_deref(),
            ),
            path: std::env::var_os("PATH"),
        }
    }
}

/// Why text could not be typed. Each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum TypeError {
    #[error(
        "dictation has no window to type into: neither WAYLAND_DISPLAY nor DISPLAY is set; \
         start stt from your desktop session (`stt-daemon up` in its terminal, or its \
         autostart)"
    )]
    NoSession,
    #[error("dictation cannot type on {session}: none of {tried} is installed; {hint}")]
    NoTool { session: Session, tried: String, hint: &'static str },
    #[error("dictation could not type on {session}: {failures}; {hint}")]
    Failed { session: Session, failures: String, hint: &'static str },
    #[error(
        "the paste key '{0}' is not one dictation can press: write it as ctrl+v, ctrl+shift+v or shift+Insert"
    )]
    PasteKey(String),
}

/// How long one program may take before it is killed.
const PROGRAM_WAIT: Duration = Duration::from_secs(10);

/// How long the window is given to read the clipboard before the old one is put back.
const PASTE_READ: Duration = Duration::from_millis(250);

/// Types edits into the focused window (blocking: it runs programs).
#[derive(Debug)]
pub struct Typist {
    settings: TypistSettings,
    /// The method that worked last.
    working: Option<Method>,
    /// When the last program that typed ended.
    last: Option<Instant>,
}

/// The least time between two typing programs. Each wtype uploads a keymap of its own, and a
/// key that follows a new keymap within a few milliseconds was lost (foot under sway, a real
/// compositor: a comma typed right after a backspace never came).
const GAP: Duration = Duration::from_millis(30);

impl Typist {
    pub fn new(settings: TypistSettings) -> Self {
        Self { settings, working: None, last: None }
    }

    /// The method that worked last, if any has.
    pub fn working(&self) -> Option<Method> {
        self.working
    }

    /// The methods this session can type with now (their programs installed), in the order
    /// they are tried, without typing anything; or why none can, naming what to install.
    pub fn ready(&self) -> Result<Vec<Method>, TypeError> {
        let session = self.settings.session.ok_or(TypeError::NoSession)?;
        let found: Vec<Method> = self
            .methods(session)
            .into_iter()
            .filter(|m| self.tools(*m, session).is_some())
            .collect();
        if found.is_empty() {
            return Err(self.no_tool(session));
        }
        Ok(found)
    }

    /// The methods `session` is tried with, in order: the one configured, or its own.
    fn methods(&self, session: Session) -> Vec<Method> {
        match self.settings.method {
            Some(method) => vec![method],
            None => session.methods().to_vec(),
        }
    }

    /// None of the methods tried is installed: what was tried, and what to install.
    fn no_tool(&self, session: Session) -> TypeError {
        let tried = self.methods(session).iter().map(|m| m.name()).collect::<Vec<_>>().join(", ");
        TypeError::NoTool { session, tried, hint: session.hint() }
    }

    /// Carries one phrase's edits out, in order (with wtype, as one program: backspaces as
    /// backspace characters); the method that did them. A method that fails is left for the
    /// next one the session has; one that is not installed is skipped.
    pub fn edits(&mut self, edits: &[Edit]) -> Result<Method, TypeError> {
        let session = self.settings.session.ok_or(TypeError::NoSession)?;
        let mut order = self.methods(session);
        if let Some(working) = self.working.filter(|m| order.contains(m)) {
            order.retain(|m| *m != working);
            order.insert(0, working);
        }
        let mut failures = Vec::new();
        let mut installed = false;
        for method in order {
            let Some(tools) = self.tools(method, session) else { continue };
            installed = true;
            if let Some(wait) = self.last.and_then(|last| GAP.checked_sub(last.elapsed())) {
                std::thread::sleep(wait);
            }
            let ran = self.run(method, &tools, edits);
            self.last = Some(Instant::now());
            match ran {
                Ok(()) => {
                    if self.working != Some(method) {
                        tracing::info!(method = method.name(), %session, "dictation types with this");
                    }
                    self.working = Some(method);
                    return Ok(method);
                }
                Err(Failure::PasteKey) => {
                    return Err(TypeError::PasteKey(self.settings.paste_key.clone()));
                }
                Err(Failure::Program(why)) => {
                    tracing::warn!(method = method.name(), %why, "dictation: a method failed");
                    failures.push(format!("{} failed ({why})", method.name()));
                    if self.working == Some(method) {
                        self.working = None;
                    }
                }
            }
        }
        if installed {
            Err(TypeError::Failed { session, failures: failures.join("; "), hint: session.hint() })
        } else {
            Err(self.no_tool(session))
        }
    }

    fn find(&self, program: &str) -> Option<PathBuf> {
        stt_os::find_program(Path::new(program), self.settings.path.as_deref())
    }

    /// The programs `method` needs, when they are installed.
    fn tools(&self, method: Method, session: Session) -> Option<Tools> {
        let one = |name: &str| self.find(name).map(|p| Tools { main: p, keys: None, read: None });
        match method {
            Method::Wtype => one("wtype"),
            Method::Ydotool => one("ydotool"),
            Method::Dotool => one("dotool"),
            Method::Xdotool => one("xdotool"),
            Method::Clipboard => {
                let (copy, read, keys): (&str, &str, &[Method]) = match session {
                    Session::Wayland => {
                        ("wl-copy", "wl-paste", &[Method::Wtype, Method::Ydotool, Method::Dotool])
                    }
                    Session::X11 => ("xclip", "xclip", &[Method::Xdotool]),
                };
                let main = self
                    .find(copy)
                    .or_else(|| (session == Session::X11).then(|| self.find("xsel")).flatten())?;
                let keys = keys.iter().find_map(|&m| self.find(m.name()).map(|p| (m, p)))?;
                let read = self.find(read).filter(|_| main.ends_with(copy));
                Some(Tools { main, keys: Some(keys), read })
            }
        }
    }

    fn run(&self, method: Method, tools: &Tools, edits: &[Edit]) -> Result<(), Failure> {
        if method == Method::Wtype {
            let text: String = edits
                .iter()
                .map(|edit| match edit {
                    Edit::Type(text) => text.clone(),
                    Edit::Erase(n) => "\u{8}".repeat(*n),
                })
                .collect();
            return keyboard(method, &tools.main, &Edit::Type(text));
        }
        for edit in edits {
            match method {
                Method::Clipboard => self.clipboard(tools, edit)?,
                _ => keyboard(method, &tools.main, edit)?,
            }
        }
        Ok(())
    }

    /// Types through the clipboard: what it held is put back after the paste (text only; a
    /// picture on it is lost, and an empty one stays empty).
    fn clipboard(&self, tools: &Tools, edit: &Edit) -> Result<(), Failure> {
        let (key_method, key_tool) = tools.keys.as_ref().ok_or(Failure::PasteKey)?;
        let text = match edit {
            // Backspaces are keys, not text.
            Edit::Erase(_) => return keyboard(*key_method, key_tool, edit),
            Edit::Type(text) => text,
        };
        let xsel = tools.main.ends_with("xsel");
        let wayland = tools.main.ends_with("wl-copy");
        let old = tools.read.as_ref().and_then(|read| {
            let args: &[&str] = if wayland {
                &["--no-newline", "--type", "text"]
            } else {
                &["-selection", "clipboard", "-o"]
            };
            output(read, args).ok().filter(|old| !old.is_empty())
        });
        let copy_args: &[&str] = if wayland {
            &["--type", "text/plain;charset=utf-8"]
        } else if xsel {
            &["--clipboard", "--input"]
        } else {
            &["-selection", "clipboard", "-i"]
        };
        serve(&tools.main, copy_args, text.as_bytes())?;
        press(*key_method, key_tool, &self.settings.paste_key)?;
        std::thread::sleep(PASTE_READ);
        match old {
            Some(old) => serve(&tools.main, copy_args, &old)?,
            None if wayland => serve(&tools.main, &["--clear"], b"")?,
            None => {}
        }
        Ok(())
    }
}

/// The programs a method runs: the one that types (or copies), the one that presses keys
/// (the clipboard's paste), the one that reads the clipboard.
#[derive(Debug)]
struct Tools {
    main: PathBuf,
    keys: Option<(Method, PathBuf)>,
    read: Option<PathBuf>,
}

#[derive(Debug)]
enum Failure {
    /// The program could not run or said no: why, in its own words.
    Program(String),
    /// The paste key cannot be pressed by the tool at hand.
    PasteKey,
}

/// wtype's arguments: the text from standard input, after a pause of 40 ms (`-s`, taken
/// after the keymap is sent): the first key right after wtype's new keymap was lost at times,
/// "Ask Zoë" typed as "sk Zoë" into foot under sway.
const WTYPE_ARGS: [&str; 3] = ["-s", "40", "-"];

/// Types or erases with a keyboard tool.
fn keyboard(method: Method, tool: &Path, edit: &Edit) -> Result<(), Failure> {
    match (method, edit) {
        (Method::Wtype, Edit::Type(text)) => run(tool, &WTYPE_ARGS, Some(text.as_bytes())),
        // As text too: backspace characters are typed as the BackSpace key. `-k BackSpace`
        // is not used: a key named on the command line came first after wtype's new keymap,
        // and foot under sway lost it about one time in three (a real compositor, tested).
        (Method::Wtype, Edit::Erase(n)) => {
            run(tool, &WTYPE_ARGS, Some("\u{8}".repeat(*n).as_bytes()))
        }
        (Method::Ydotool, Edit::Type(text)) => {
            run(tool, &["type", "--file", "-"], Some(text.as_bytes()))
        }
        (Method::Ydotool, Edit::Erase(n)) => {
            // ydotool 1.x names keys by their Linux key codes: 14 is backspace.
            let mut args = vec!["key"];
            args.extend(["14:1", "14:0"].repeat(*n));
            run(tool, &args, None)
        }
        (Method::Dotool, edit) => {
            let mut script = String::new();
            match edit {
                Edit::Type(text) => {
                    for (i, line) in text.split('\n').enumerate() {
                        if i > 0 {
                            script.push_str("key enter\n");
                        }
                        if !line.is_empty() {
                            script.push_str("type ");
                            script.push_str(line);
                            script.push('\n');
                        }
                    }
                }
                Edit::Erase(n) => script.push_str(&"key backspace\n".repeat(*n)),
            }
            run(tool, &[], Some(script.as_bytes()))
        }
        (_, Edit::Type(text)) => {
            // xdotool: a character that is not on the keyboard's map is typed by mapping a
            // spare key to it, which the window needs a moment to see; plain ASCII needs none.
            let delay = if text.is_ascii() { "0" } else { "12" };
            run(tool, &["type", "--delay", delay, "--file", "-"], Some(text.as_bytes()))
        }
        (_, Edit::Erase(n)) => {
            let mut args = vec!["key", "--delay", "0"];
            args.extend(std::iter::repeat_n("BackSpace", *n));
            run(tool, &args, None)
        }
    }
}

/// Presses the paste key (`ctrl+v`, `ctrl+shift+v`, `shift+Insert`) with a keyboard tool.
fn press(method: Method, tool: &Path, key: &str) -> Result<(), Failure> {
    let parts: Vec<&str> = key.split('+').map(str::trim).collect();
    let (key, mods) = parts.split_last().ok_or(Failure::PasteKey)?;
    let known = ["ctrl", "shift", "alt", "super"];
    if key.is_empty() || mods.iter().any(|m| !known.contains(&m.to_lowercase().as_str())) {
        return Err(Failure::PasteKey);
    }
    match method {
        Method::Wtype => {
            let mut args = Vec::new();
            for m in mods {
                args.extend(["-M", m]);
            }
            args.extend(["-k", key]);
            for m in mods {
                args.extend(["-m", m]);
            }
            run(tool, &args, None)
        }
        Method::Ydotool => {
            let code = |name: &str| match name.to_lowercase().as_str() {
                "ctrl" => Some(29),
                "shift" => Some(42),
                "alt" => Some(56),
                "super" => Some(125),
                "v" => Some(47),
                "insert" => Some(110),
                _ => None,
            };
            let codes: Vec<u32> = mods
                .iter()
                .chain([key])
                .map(|n| code(n))
                .collect::<Option<_>>()
                .ok_or(Failure::PasteKey)?;
            let mut args = vec!["key".to_owned()];
            args.extend(codes.iter().map(|c| format!("{c}:1")));
            args.extend(codes.iter().rev().map(|c| format!("{c}:0")));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            run(tool, &args, None)
        }
        Method::Dotool => {
            run(tool, &[], Some(format!("key {}\n", parts.join("+").to_lowercase()).as_bytes()))
        }
        _ => run(tool, &["key", "--clearmodifiers", &parts.join("+")], None),
    }
}

/// Runs `tool` to its end (at most [`PROGRAM_WAIT`]) with `input` on its standard input.
fn run(tool: &Path, args: &[&str], input: Option<&[u8]>) -> Result<(), Failure> {
    let mut child = Command::new(tool)
        .args(args)
        .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Failure::Program(format!("{}: {e}", tool.display())))?;
    if let Some(input) = input
        && let Some(mut stdin) = child.stdin.take()
    {
        // A tool that exits early closes the pipe: its status says why.
        let _ = stdin.write_all(input);
    }
    let status = wait(&mut child)?;
    if status.success() {
        return Ok(());
    }
    let mut said = String::new();
    if let Some(mut stderr) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut stderr, &mut said);
    }
    let said = said.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_owned();
    let name = tool.file_name().unwrap_or_default().to_string_lossy();
    Err(Failure::Program(if said.is_empty() {
        format!("{name}: {status}")
    } else {
        format!("{name}: {said}")
    }))
}

/// Runs a clipboard tool that stays behind to serve what it was given (`wl-copy`, `xclip
/// -i`): its output is not read, since the part that stays keeps it open.
fn serve(tool: &Path, args: &[&str], input: &[u8]) -> Result<(), Failure> {
    let mut child = Command::new(tool)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| Failure::Program(format!("{}: {e}", tool.display())))?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(input);
    }
    let status = wait(&mut child)?;
    let name = tool.file_name().unwrap_or_default().to_string_lossy();
    if status.success() { Ok(()) } else { Err(Failure::Program(format!("{name}: {status}"))) }
}

/// What a tool prints (the clipboard's text), read whole.
fn output(tool: &Path, args: &[&str]) -> Result<Vec<u8>, Failure> {
    let out = Command::new(tool)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| Failure::Program(format!("{}: {e}", tool.display())))?;
    if out.status.success() { Ok(out.stdout) } else { Err(Failure::Program(String::new())) }
}

fn wait(child: &mut std::process::Child) -> Result<std::process::ExitStatus, Failure> {
    let deadline = Instant::now() + PROGRAM_WAIT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(1)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Failure::Program(format!(
                    "gave no answer in {} s",
                    PROGRAM_WAIT.as_secs()
                )));
            }
            Err(e) => return Err(Failure::Program(e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test: a failure should panic")]

    use std::os::unix::fs::PermissionsExt;

    use super::*;

    /// A fake tool in `dir` that appends its arguments and its input to `log` and exits
    /// with `code` (printing `says` on stderr when it fails).
    /// The tests that write fake programs and run them, one at a time: a program written
    /// while another test's thread forks can be held open by that child until it execs, and
    /// then running it fails ("Text file busy"): the clipboard test lost its `wl-paste`.
    fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
        static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
        ONE.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn fake(dir: &Path, name: &str, code: i32, says: &str) {
        let log = dir.join("log");
        let script = format!(
            "#!/bin/sh\nprintf '%s' '{name}' >> '{log}'\nfor a in \"$@\"; do printf ' %s' \"$a\" >> '{log}'; done\n\
             input=$(cat); [ -z \"$input\" ] || printf ' <%s' \"$input\" >> '{log}'\necho >> '{log}'\n\
             [ {code} -eq 0 ] || echo '{says}' >&2\nexit {code}\n",
            log = log.display()
        );
        let path = dir.join(name);
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn typist(dir: &Path, session: Option<Session>, method: Option<Method>) -> Typist {
        Typist::new(TypistSettings {
            method,
            paste_key: "ctrl+v".into(),
            session,
            path: Some(dir.as_os_str().to_owned()),
        })
    }

    fn log(dir: &Path) -> String {
        std::fs::read_to_string(dir.join("log")).unwrap_or_default()
    }

    #[test]
    fn the_session_comes_from_its_environment() {
        let s = |w: &str, d: &str| {
            Session::from_env(Some(OsStr::new(w)).filter(|_| !w.is_empty()), Some(OsStr::new(d)))
        };
        assert_eq!(s("wayland-1", ":0"), Some(Session::Wayland));
        assert_eq!(s("", ":0"), Some(Session::X11));
        assert_eq!(s("", ""), None);
    }

    #[test]
    fn what_a_session_can_type_with_is_known_before_anything_is_typed() {
        let _one = one_at_a_time();
        let dir = tempfile::tempdir().unwrap();
        let none = typist(dir.path(), Some(Session::Wayland), None).ready().unwrap_err();
        assert!(matches!(none, TypeError::NoTool { .. }), "{none}");
        assert!(none.to_string().contains("wtype"), "{none}");
        assert!(matches!(typist(dir.path(), None, None).ready(), Err(TypeError::NoSession)));
        fake(dir.path(), "dotool", 0, "");
        let found = typist(dir.path(), Some(Session::Wayland), None).ready().unwrap();
        assert_eq!(found, [Method::Dotool]);
        assert_eq!(log(dir.path()), "", "nothing was typed");
    }

    #[test]
    fn x11_types_with_xdotool_without_a_delay_for_ascii() {
        let _one = one_at_a_time();
        let dir = tempfile::tempdir().unwrap();
        fake(dir.path(), "xdotool", 0, "");
        let mut typist = typist(dir.path(), Some(Session::X11), None);
        assert_eq!(typist.edits(&[Edit::Type("Hello, world".into())]).unwrap(), Method::Xdotool);
        assert_eq!(typist.edits(&[Edit::Type("Zoë".into())]).unwrap(), Method::Xdotool);
        assert_eq!(typist.edits(&[Edit::Erase(2)]).unwrap(), Method::Xdotool);
        assert_eq!(
            log(dir.path()),
            "xdotool type --delay 0 --file - <Hello, world\n\
             xdotool type --delay 12 --file - <Zoë\n\
             xdotool key --delay 0 BackSpace BackSpace\n"
        );
    }

    #[test]
    fn wayland_falls_back_from_a_failing_wtype_and_remembers_what_worked() {
        let _one = one_at_a_time();
        let dir = tempfile::tempdir().unwrap();
        fake(dir.path(), "wtype", 1, "Compositor does not support the virtual keyboard protocol");
        fake(dir.path(), "dotool", 0, "");
        let mut typist = typist(dir.path(), Some(Session::Wayland), None);
        assert_eq!(typist.edits(&[Edit::Type("one\ntwo".into())]).unwrap(), Method::Dotool);
        assert_eq!(typist.working(), Some(Method::Dotool));
        assert_eq!(typist.edits(&[Edit::Erase(1)]).unwrap(), Method::Dotool);
        assert_eq!(
            log(dir.path()),
            "wtype -s 40 - <one\ntwo\ndotool <type one\nkey enter\ntype two\ndotool <key backspace\n"
        );
    }

    #[test]
    fn the_clipboard_pastes_with_the_key_tool_and_puts_the_old_text_back() {
        let _one = one_at_a_time();
        let dir = tempfile::tempdir().unwrap();
        fake(dir.path(), "wl-copy", 0, "");
        fake(dir.path(), "wl-paste", 0, "");
        fake(dir.path(), "wtype", 0, "");
        let mut typist = typist(dir.path(), Some(Session::Wayland), Some(Method::Clipboard));
        assert_eq!(typist.edits(&[Edit::Type("naïve".into())]).unwrap(), Method::Clipboard);
        let log = log(dir.path());
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines[0], "wl-paste --no-newline --type text");
        assert_eq!(lines[1], "wl-copy --type text/plain;charset=utf-8 <naïve");
        assert_eq!(lines[2], "wtype -M ctrl -k v -m ctrl");
        // The clipboard was empty, and is again.
        assert_eq!(lines[3], "wl-copy --clear", "{log}");
    }

    #[test]
    fn failures_name_what_to_install_for_the_session() {
        let _one = one_at_a_time();
        let dir = tempfile::tempdir().unwrap();
        let mut none = typist(dir.path(), None, None);
        let err = none.edits(&[Edit::Type("x".into())]).unwrap_err().to_string();
        assert!(err.contains("neither WAYLAND_DISPLAY nor DISPLAY"), "{err}");

        let mut wayland = typist(dir.path(), Some(Session::Wayland), None);
        let err = wayland.edits(&[Edit::Type("x".into())]).unwrap_err().to_string();
        assert!(err.contains("none of wtype, ydotool, dotool, clipboard is installed"), "{err}");
        assert!(err.contains("install wtype"), "{err}");

        fake(dir.path(), "xdotool", 1, "Cannot open display: :9");
        let mut x11 = typist(dir.path(), Some(Session::X11), None);
        let err = x11.edits(&[Edit::Type("x".into())]).unwrap_err().to_string();
        assert!(err.contains("xdotool failed (xdotool: Cannot open display: :9)"), "{err}");

        let mut bad_key = typist(dir.path(), Some(Session::X11), Some(Method::Clipboard));
        fake(dir.path(), "xclip", 0, "");
        bad_key.settings.paste_key = "hyper+v".into();
        let err = bad_key.edits(&[Edit::Type("x".into())]).unwrap_err().to_string();
        assert!(err.contains("paste key 'hyper+v'"), "{err}");
    }
}
