//! One `stt-daemon up` per user: an exclusive `flock` on `<runtime dir>/stt-up.lock`, which
//! holds the owner's pid so a second `up` can say who runs.
//!
//! The lock belongs to the open file, which children do not inherit (Rust opens files
//! close-on-exec), so it is released exactly when `up` exits, however it exits.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

/// The lock file's name in the runtime directory.
pub const LOCK_NAME: &str = "stt-up.lock";

/// Held for as long as `up` runs.
#[derive(Debug)]
pub struct UpLock {
    _file: Flock<File>,
    path: PathBuf,
}

impl UpLock {
    /// Takes the lock at `path` and writes our pid into it; refuses, naming the running
    /// `up`'s pid, when another process holds it.
    pub fn acquire(path: &Path) -> anyhow::Result<Self> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(|e| anyhow::anyhow!("cannot open the lock file '{}': {e}", path.display()))?;
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(mut file) => {
                file.set_len(0)?;
                file.rewind()?;
                writeln!(file, "{}", std::process::id())?;
                Ok(Self { _file: file, path: path.to_owned() })
            }
            Err((mut file, Errno::EWOULDBLOCK)) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                let (pid, kill) = match text.trim() {
                    "" => ("pid unknown".to_owned(), String::new()),
                    pid => (format!("pid {pid}"), format!(", or `kill {pid}`")),
                };
                anyhow::bail!(
                    "stt is already running (`stt-daemon up`, {pid}; it holds '{}'): use it, or \
                     stop it first (Ctrl-C in its terminal, `systemctl --user stop stt`{kill})",
                    path.display(),
                )
            }
            Err((_, e)) => anyhow::bail!("cannot lock '{}': {e}", path.display()),
        }
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid_until_it_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_NAME);
        let first = UpLock::acquire(&path).unwrap();
        assert_eq!(
            std::fs::read_to_string(first.path()).unwrap(),
            format!("{}\n", std::process::id())
        );

        let err = UpLock::acquire(&path).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!(
                "stt is already running (`stt-daemon up`, pid {}",
                std::process::id()
            )),
            "{err}"
        );

        drop(first);
        UpLock::acquire(&path).unwrap();
    }
}
