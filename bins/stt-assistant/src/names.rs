//! Speaker names given with `speaker_name`, kept across restarts in
//! `$XDG_DATA_HOME/stt/speaker-names.json` (a JSON object, speaker id → name; file 0600 in a
//! 0700 directory, written whole to a temporary file and renamed, so a crash never leaves half
//! a file).
//!
//! The daemon owns the speaker roster but takes no input, so names given here live with the
//! assistant and are written over the daemon's rosters (see `Core::with_names`).

use std::collections::BTreeMap;
use std::path::Path;

/// The file's name in the data directory.
pub const FILE: &str = stt_proto::speaker_files::NAMES_FILE;

/// The names saved at `path`; none when there is no file yet. A file that cannot be read or
/// parsed is reported and ignored, never fatal: the names are a convenience.
pub fn load(path: &Path) -> BTreeMap<String, String> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            tracing::warn!(
                "ignoring the speaker names in {}: {e}; name the speakers again with \
                 `stt-ctl speaker-name`",
                path.display()
            );
            BTreeMap::new()
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
        Err(e) => {
            tracing::warn!("cannot read the speaker names in {}: {e}", path.display());
            BTreeMap::new()
        }
    }
}

/// Saves `names` at `path`, replacing the file atomically.
pub fn save(path: &Path, names: &BTreeMap<String, String>) -> std::io::Result<()> {
    let json = serde_json::to_vec_pretty(names).map_err(std::io::Error::other)?;
    write_private(path, &json)
}

/// Writes `bytes` and a newline to `path` for its owner only (0600 in a 0700 directory),
/// whole or not at all ([`stt_os::write_private`]).
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut text = bytes.to_vec();
    text.push(b'\n');
    stt_os::write_private(path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn names_survive_a_round_trip_privately() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stt").join(FILE);
        assert!(load(&path).is_empty(), "no file yet: no names");
        let names = BTreeMap::from([("spk_0001".to_owned(), "Efren".to_owned())]);
        save(&path, &names).unwrap();
        assert_eq!(load(&path), names);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = std::fs::metadata(path.parent().unwrap()).unwrap().permissions().mode();
        assert_eq!(dir_mode & 0o777, 0o700);
    }

    #[test]
    fn a_damaged_file_is_ignored_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        std::fs::write(&path, b"{not json").unwrap();
        assert!(load(&path).is_empty());
    }
}
