//! Binding a Unix socket that belongs to us alone.
//!
//! The socket is bound inside a fresh private (0700) directory next to its final path,
//! chmod-ed to 0600 there, and renamed into place: it is never reachable with wider
//! permissions. An exclusive `flock` on `<path>.lock`, held for the socket's lifetime,
//! decides which process owns the path: whoever holds it may replace a leftover socket file;
//! whoever cannot get it is told the service is already running.

use std::fs::{DirBuilder, File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};
use tokio::net::{UnixListener, UnixStream};

use crate::BusError;

/// A listening socket plus what keeps it ours: the lock, and the file removed on drop.
#[derive(Debug)]
pub struct BoundSocket {
    listener: UnixListener,
    path: PathBuf,
    /// (device, inode) of the socket file we created, so drop never removes a successor's.
    ident: (u64, u64),
    _lock: Flock<File>,
}

impl BoundSocket {
    /// Binds `path` for `service` (used in messages). Must run inside a tokio runtime.
    pub fn bind(path: &Path, service: &str) -> Result<Self, BusError> {
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if !parent.exists() {
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(|e| BusError::io("cannot create the socket directory", parent, e))?;
        }
        let lock = take_lock(path, service)?;

        match std::fs::symlink_metadata(path) {
            Ok(meta) if !meta.file_type().is_socket() => {
                return Err(BusError::NotASocket { path: path.to_owned() });
            }
            // We hold the lock, so nobody serves this file: it is stale. Rename replaces it.
            Ok(_) => tracing::info!(path = %path.display(), "replacing a stale socket"),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(BusError::io("cannot inspect", path, e)),
        }

        let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let staging = parent.join(format!(
            ".{}.{}.tmp",
            file_name.as_deref().unwrap_or("stt.sock"),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&staging);
        DirBuilder::new()
            .mode(0o700)
            .create(&staging)
            .map_err(|e| BusError::io("cannot create a private staging directory", &staging, e))?;
        let staged = staging.join("s");
        let result = (|| {
            let std_listener = std::os::unix::net::UnixListener::bind(&staged)
                .map_err(|e| BusError::io("cannot bind", &staged, e))?;
            std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| BusError::io("cannot chmod", &staged, e))?;
            std::fs::rename(&staged, path)
                .map_err(|e| BusError::io("cannot move the socket into place at", path, e))?;
            std_listener
                .set_nonblocking(true)
                .map_err(|e| BusError::io("cannot configure", path, e))?;
            UnixListener::from_std(std_listener)
                .map_err(|e| BusError::io("cannot listen on", path, e))
        })();
        let _ = std::fs::remove_dir_all(&staging);
        let listener = result?;
        let meta =
            std::fs::symlink_metadata(path).map_err(|e| BusError::io("cannot stat", path, e))?;
        Ok(Self { listener, path: path.to_owned(), ident: (meta.dev(), meta.ino()), _lock: lock })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Waits for the next connection from a process of our own uid; connections from
    /// other uids are logged and closed without a word. Failures to accept (out of file
    /// descriptors, say) are logged and retried after a pause instead of spinning, so this
    /// never fails: a serve loop only has to stop on shutdown.
    pub async fn accept(&self) -> UnixStream {
        loop {
            match self.listener.accept().await {
                Ok((stream, _)) if peer_is_us(&stream) => return stream,
                Ok(_) => {
                    tracing::warn!(path = %self.path.display(), "refused a connection from another user");
                }
                Err(e) => {
                    tracing::warn!("accept failed on {}: {e}", self.path.display());
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            }
        }
    }
}

impl Drop for BoundSocket {
    fn drop(&mut self) {
        if let Ok(meta) = std::fs::symlink_metadata(&self.path)
            && (meta.dev(), meta.ino()) == self.ident
        {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Whether the process at the other end of `stream` runs as our uid (SO_PEERCRED).
pub fn peer_is_us(stream: &UnixStream) -> bool {
    match stream.peer_cred() {
        Ok(cred) => cred.uid() == nix::unistd::getuid().as_raw(),
        Err(e) => {
            tracing::warn!("cannot read the peer's credentials: {e}");
            false
        }
    }
}

fn take_lock(path: &Path, service: &str) -> Result<Flock<File>, BusError> {
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".lock");
    let lock_path = PathBuf::from(lock_path);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&lock_path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::PermissionDenied => {
                BusError::PermissionDenied { path: lock_path.clone() }
            }
            _ => BusError::io("cannot open the lock file", &lock_path, e),
        })?;
    Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|(_, errno)| {
        if errno == nix::errno::Errno::EWOULDBLOCK {
            BusError::AlreadyRunning { service: service.to_owned(), path: path.to_owned() }
        } else {
            BusError::io("cannot lock", &lock_path, errno.into())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn socket_is_0600_and_removed_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.sock");
        let bound = BoundSocket::bind(&path, "test").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        drop(bound);
        assert!(!path.exists());
    }

    #[tokio::test]
    async fn a_second_instance_is_refused_while_the_first_lives() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.sock");
        let _first = BoundSocket::bind(&path, "stt-test").unwrap();
        let err = BoundSocket::bind(&path, "stt-test").unwrap_err();
        assert!(matches!(err, BusError::AlreadyRunning { .. }), "{err}");
        assert!(err.to_string().contains("stt-test is already running"), "{err}");
        // The refused attempt must not have removed the live socket.
        assert!(UnixStream::connect(&path).await.is_ok());
    }

    #[tokio::test]
    async fn a_stale_socket_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.sock");
        // A socket file with nothing listening, as a crash leaves behind.
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        assert!(path.exists());
        let bound = BoundSocket::bind(&path, "test").unwrap();
        let client = UnixStream::connect(&path).await.unwrap();
        let accepted = bound.accept().await;
        drop((client, accepted));
    }

    #[tokio::test]
    async fn a_regular_file_is_not_clobbered() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.sock");
        std::fs::write(&path, "precious").unwrap();
        let err = BoundSocket::bind(&path, "test").unwrap_err();
        assert!(matches!(err, BusError::NotASocket { .. }), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "precious");
    }

    #[tokio::test]
    async fn drop_leaves_a_successors_socket_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.sock");
        let first = BoundSocket::bind(&path, "test").unwrap();
        std::fs::remove_file(&path).unwrap();
        let _other = std::os::unix::net::UnixListener::bind(&path).unwrap();
        drop(first);
        assert!(path.exists());
    }
}
