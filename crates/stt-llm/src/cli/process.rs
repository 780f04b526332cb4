//! Running a CLI: finding the program, one turn's process (the prompt written to its stdin,
//! its stdout read line by line as it comes, the end of its stderr kept for messages, silence
//! timed), and short commands (`claude auth status`, `opencode models`) run to completion.
//!
//! A turn's process leads a process group of its own, and the whole group is killed when the
//! turn ends early (its future dropped, as a person's Stop does, or the CLI fell silent): a
//! CLI's own children (a shell it ran, a server it started) go with it.

use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

use super::stream::{Format, Turn, text_at};
use crate::LlmError;

/// How much of stderr a failure quotes, in characters.
const STDERR_TAIL: usize = 500;

/// A turn's process, run to its end.
#[derive(Debug)]
pub(super) struct Finished {
    pub turn: Turn,
    pub status: ExitStatus,
    /// The last [`STDERR_TAIL`] characters it wrote to stderr, trimmed.
    pub stderr: String,
}

/// Runs one turn: starts `program` with `args` (never the prompt), writes `input` to its
/// stdin and closes it, and folds each line of its stdout through `format`, handing the new
/// text to `on_text` as it arrives, in `workdir` when given. `name` names the CLI in errors.
/// Fails with `Timeout` (or `Interrupted`, once text has arrived) when it is silent for `idle`.
#[allow(clippy::too_many_arguments)]
pub(super) async fn run_turn<F: FnMut(&str)>(
    program: &Path,
    name: &str,
    workdir: Option<&Path>,
    args: &[String],
    env: &[(&str, &str)],
    input: &str,
    idle: Duration,
    format: &mut dyn Format,
    on_text: &mut F,
) -> Result<Finished, LlmError> {
    let mut command = Command::new(program);
    command
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(dir) = workdir {
        command.current_dir(dir);
    }
    let mut child = command.spawn().map_err(|e| spawn_error(name, &e))?;
    // Declared after `child`, so dropped before it: the group goes first, then the leader.
    let mut group = Group(child.id());
    let (Some(stdin), Some(stdout), Some(mut stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(cli_error(name, "its stdin, stdout or stderr was not a pipe".into(), ""));
    };

    let write = async move {
        let mut stdin = stdin;
        // A CLI that exits without reading it (a bad flag) closes the pipe: its exit status
        // and stderr say why, so the write's own error adds nothing.
        let _ = stdin.write_all(input.as_bytes()).await;
        let _ = stdin.shutdown().await;
    };
    tokio::pin!(write);
    let mut lines = BufReader::new(stdout).lines();
    let mut tail = Tail::default();
    let mut buf = [0_u8; 2048];
    let mut turn = Turn::default();
    let mut shown = 0;
    let (mut writing, mut out_open, mut err_open) = (true, true, true);
    while out_open || err_open {
        tokio::select! {
            () = &mut write, if writing => writing = false,
            line = lines.next_line(), if out_open => match line {
                Ok(Some(line)) => {
                    fold(&line, format, &mut turn);
                    if turn.content.len() > shown {
                        on_text(&turn.content[shown..]);
                        shown = turn.content.len();
                    }
                }
                Ok(None) | Err(_) => out_open = false,
            },
            read = stderr.read(&mut buf), if err_open => match read {
                Ok(0) | Err(_) => err_open = false,
                Ok(n) => tail.push(&buf[..n]),
            },
            () = tokio::time::sleep(idle) => return Err(silent(name, idle, turn.content)),
        }
    }
    let status = match tokio::time::timeout(idle, child.wait()).await {
        Ok(Ok(status)) => status,
        Ok(Err(e)) => return Err(cli_error(name, format!("could not wait for it: {e}"), "")),
        Err(_) => return Err(silent(name, idle, turn.content)),
    };
    // Reaped: its group id may be reused, so nothing is killed in its name any more.
    group.0 = None;
    Ok(Finished { turn, status, stderr: tail.text() })
}

/// What a short command printed, and how it exited.
#[derive(Debug)]
pub(super) struct Output {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

#[cfg(test)]
impl Output {
    /// What a command that exited with `code` printed.
    pub fn new(code: i32, stdout: &str, stderr: &str) -> Self {
        use std::os::unix::process::ExitStatusExt;
        // A wait status holds the exit code in its second byte.
        let status = ExitStatus::from_raw(code << 8);
        Self { status, stdout: stdout.to_owned(), stderr: stderr.to_owned() }
    }
}

/// Runs `program args` with no input to its end, waiting at most `limit`; the process is
/// killed if it takes longer.
pub(super) async fn output(
    program: &Path,
    name: &str,
    args: &[&str],
    limit: Duration,
) -> Result<Output, LlmError> {
    let mut command = Command::new(program);
    command.args(args).stdin(Stdio::null()).kill_on_drop(true);
    let out = match tokio::time::timeout(limit, command.output()).await {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => return Err(spawn_error(name, &e)),
        Err(_) => return Err(LlmError::Timeout { url: name.to_owned(), seconds: limit.as_secs() }),
    };
    Ok(Output {
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// One line of stdout: a JSON event folded into the turn; anything else (a CLI's stray
/// banner) skipped.
fn fold(line: &str, format: &mut dyn Format, turn: &mut Turn) {
    let line = line.trim();
    if line.is_empty() {
        return;
    }
    match serde_json::from_str::<Value>(line) {
        Ok(event) => {
            // The type only: events carry the prompt and the answer, which are never logged.
            tracing::trace!(event = text_at(&event, "/type"), "cli event");
            format.event(&event, turn);
        }
        Err(_) => tracing::debug!(chars = line.chars().count(), "skipped a line that is not JSON"),
    }
}

fn spawn_error(name: &str, e: &std::io::Error) -> LlmError {
    if e.kind() == std::io::ErrorKind::NotFound {
        LlmError::NotInstalled { program: name.to_owned() }
    } else {
        cli_error(name, format!("could not start it: {e}"), "")
    }
}

fn cli_error(name: &str, why: String, partial: &str) -> LlmError {
    LlmError::Cli { program: name.to_owned(), why, partial: partial.to_owned() }
}

/// The CLI said nothing for `idle`: a timeout, or an interrupted answer once one had begun.
fn silent(name: &str, idle: Duration, partial: String) -> LlmError {
    let seconds = idle.as_secs();
    if partial.is_empty() {
        LlmError::Timeout { url: name.to_owned(), seconds }
    } else {
        LlmError::Interrupted { partial, why: format!("{name} sent nothing for {seconds} s") }
    }
}

/// The end of a stream of bytes.
#[derive(Debug, Default)]
struct Tail(Vec<u8>);

impl Tail {
    fn push(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
        // Four bytes a character at most, so this keeps at least STDERR_TAIL of them.
        let keep = STDERR_TAIL * 4;
        if self.0.len() > keep {
            self.0.drain(..self.0.len() - keep);
        }
    }

    fn text(&self) -> String {
        let text = String::from_utf8_lossy(&self.0);
        let text = text.trim();
        let skip = text.chars().count().saturating_sub(STDERR_TAIL);
        text.chars().skip(skip).collect()
    }
}

/// A turn's process group, killed when dropped unless it has been reaped. `kill_on_drop`
/// kills only the leader; this takes its children too. The standard library cannot signal
/// a group, so this runs `kill` (procps or util-linux, on every Linux desktop); where it is
/// missing, the leader still dies.
#[derive(Debug)]
struct Group(Option<u32>);

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(id) = self.0.take() {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", "--", &format!("-{id}")])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_characters_whole() {
        let mut tail = Tail::default();
        tail.push("é".repeat(3000).as_bytes());
        tail.push(b" the end\n");
        let text = tail.text();
        assert_eq!(text.chars().count(), STDERR_TAIL);
        assert!(text.ends_with("é the end"), "{text}");
    }
}
