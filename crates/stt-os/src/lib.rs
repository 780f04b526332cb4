//! What stt's programs need of the system, written once for every crate (it depends on
//! nothing, so the engines may use it too): a program found on `PATH`, and a file written
//! for its owner only, whole or not at all.

use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// `program` itself when it has a directory part (`/usr/bin/x`, `./x`) and is an executable
/// file; otherwise the first executable file of that name in the directories of `path` (a
/// `PATH` value; `None` finds nothing).
pub fn find_program(program: &Path, path: Option<&OsStr>) -> Option<PathBuf> {
    if program.components().count() > 1 {
        return is_executable(program).then(|| program.to_owned());
    }
    std::env::split_paths(path?).map(|dir| dir.join(program)).find(|p| is_executable(p))
}

/// [`find_program`] on this process's own `PATH`.
pub fn find_on_path(program: &Path) -> Option<PathBuf> {
    find_program(program, std::env::var_os("PATH").as_deref())
}

/// Whether `path` is a file someone may execute.
pub fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Makes `dir` (and what is missing above it) for its owner only, 0700; one that was there
/// already is made 0700 too.
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// Writes `bytes` to `path` for its owner only (0600, its directory made 0700 if missing):
/// whole to a temporary file beside it, synced, then renamed over the old one, so a crash
/// leaves the old file or the new one, never half of either.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(".tmp");
    let staged = path.with_file_name(name);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&staged)?;
    // A temporary file left by a crash keeps its old mode; make sure.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&staged, path)
}

/// The bytes a program may still write on the file system that holds `path`.
pub fn free_bytes(path: &Path) -> std::io::Result<u64> {
    let found = nix::sys::statvfs::statvfs(path).map_err(std::io::Error::from)?;
    Ok(found.blocks_available().saturating_mul(found.fragment_size()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test: a failure should panic")]

    use super::*;

    fn executable(path: &Path, mode: u32) {
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_disk_has_room_and_a_missing_path_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(free_bytes(dir.path()).unwrap() > 0);
        assert!(free_bytes(&dir.path().join("missing")).is_err());
    }

    #[test]
    fn a_program_is_found_by_name_on_the_path_or_taken_as_a_path() {
        let dir = tempfile::tempdir().unwrap();
        let (first, second) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(&first).unwrap();
        std::fs::create_dir_all(&second).unwrap();
        executable(&second.join("tool"), 0o755);
        executable(&first.join("plain"), 0o644);
        executable(&second.join("plain"), 0o700);
        let path = std::env::join_paths([&first, &second]).unwrap();
        let find = |name: &str| find_program(Path::new(name), Some(&path));
        assert_eq!(find("tool"), Some(second.join("tool")));
        assert_eq!(find("plain"), Some(second.join("plain")), "a file not executable is skipped");
        assert_eq!(find("missing"), None);
        assert_eq!(find_program(Path::new("tool"), None), None, "no PATH, nothing found");
        let full = second.join("tool");
        assert_eq!(find_program(&full, None), Some(full.clone()), "a path is taken as it is");
        assert_eq!(find_program(&first.join("plain"), Some(&path)), None, "not executable");
        assert!(find_on_path(Path::new("sh")).is_some());
        assert!(!is_executable(dir.path()), "a directory is not a program");
    }

    #[test]
    fn a_private_file_is_written_whole_for_its_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new/names.json");
        write_private(&path, b"one").unwrap();
        // A temporary file a crash left behind, open to others: written over, made private.
        let staged = dir.path().join("new/names.json.tmp");
        std::fs::write(&staged, "stale").unwrap();
        std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_private(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap_or_default(), b"two");
        assert!(!staged.exists());
        let mode = |p: &Path| std::fs::metadata(p).map(|m| m.permissions().mode() & 0o777).ok();
        assert_eq!(mode(&path), Some(0o600));
        assert_eq!(mode(&dir.path().join("new")), Some(0o700));
    }
}
