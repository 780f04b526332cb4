//! The user's own words for whisper: `[daemon].vocabulary` and the vocabulary file,
//! `<data dir>/vocabulary.txt`, which `stt-ctl vocabulary add` writes and the daemon re-reads
//! while it runs.
//!
//! The file has one term per line (a word or a short phrase); blank lines and lines starting
//! with `#` are ignored, and kept when the file is rewritten. It is written whole or not at
//! all, 0600.

use std::io;
use std::path::{Path, PathBuf};

use crate::ConfigError;
use crate::dirs::Env;

/// The file's name in the data directory.
pub const FILE_NAME: &str = "vocabulary.txt";

/// The longest term, in characters: a name or a phrase, not a sentence.
pub const MAX_TERM_CHARS: usize = 60;

/// Where the vocabulary file is.
pub fn file() -> Result<PathBuf, ConfigError> {
    file_with(&Env::from_process())
}

/// [`file`] with the environment given.
pub fn file_with(env: &Env) -> Result<PathBuf, ConfigError> {
    Ok(crate::dirs::data_dir_with(env)?.join(FILE_NAME))
}

/// The terms in a vocabulary file's text.
pub fn parse(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

/// The terms in the file at `path`; none when there is no file.
pub fn read(path: &Path) -> io::Result<Vec<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(parse(&text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// Why a term cannot go in the vocabulary, if it cannot.
pub fn check_term(term: &str) -> Result<(), String> {
    let term = term.trim();
    if term.is_empty() {
        return Err("a term cannot be empty".into());
    }
    if term.starts_with('#') {
        return Err(format!("{term:?} starts with '#', which marks a comment in the file"));
    }
    if term.chars().any(char::is_control) {
        return Err(format!("{term:?} holds a line break or another control character"));
    }
    if term.chars().count() > MAX_TERM_CHARS {
        return Err(format!(
            "{term:?} is longer than {MAX_TERM_CHARS} characters: give a word or a short phrase"
        ));
    }
    Ok(())
}

/// Adds `terms` to the file at `path` (created 0600, with its directory, if need be), each
/// unless it is there already (whatever its case). Returns those added.
pub fn add(path: &Path, terms: &[String]) -> io::Result<Vec<String>> {
    let mut text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    let mut have = parse(&text);
    let mut added = Vec::new();
    for term in terms {
        let term = term.trim();
        if let Err(why) = check_term(term) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, why));
        }
        if !have.iter().any(|t| t.eq_ignore_ascii_case(term)) {
            have.push(term.to_owned());
            added.push(term.to_owned());
        }
    }
    if added.is_empty() {
        return Ok(added);
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    for term in &added {
        text.push_str(term);
        text.push('\n');
    }
    write(path, &text)?;
    Ok(added)
}

/// Removes `term` (whatever its case) from the file at `path`; whether it was there.
pub fn remove(path: &Path, term: &str) -> io::Result<bool> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let term = term.trim();
    let mut removed = false;
    let kept: String = text
        .lines()
        .filter(|line| {
            let gone = line.trim().eq_ignore_ascii_case(term) && !line.trim().starts_with('#');
            removed |= gone;
            !gone
        })
        .flat_map(|line| [line, "\n"])
        .collect();
    if removed {
        write(path, &kept)?;
    }
    Ok(removed)
}

/// The config's terms, then the file's, each once (the first spelling wins).
pub fn merged(config: &[String], file: &[String]) -> Vec<String> {
    let mut all: Vec<String> = Vec::with_capacity(config.len() + file.len());
    for term in config.iter().chain(file) {
        let term = term.trim();
        if !term.is_empty() && !all.iter().any(|t| t.eq_ignore_ascii_case(term)) {
            all.push(term.to_owned());
        }
    }
    all
}

fn write(path: &Path, text: &str) -> io::Result<()> {
    stt_os::write_private(path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_are_added_once_and_removed_and_comments_stay() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data").join(FILE_NAME);
        assert!(read(&path).unwrap().is_empty(), "no file: no terms");
        let added = add(&path, &["Efren".into(), " kubectl ".into()]).unwrap();
        assert_eq!(added, ["Efren", "kubectl"]);
        assert_eq!(add(&path, &["efren".into(), "Nextcloud".into()]).unwrap(), ["Nextcloud"]);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.insert_str(0, "# names\n\n");
        std::fs::write(&path, &text).unwrap();
        assert_eq!(read(&path).unwrap(), ["Efren", "kubectl", "Nextcloud"]);
        assert!(remove(&path, "KUBECTL").unwrap());
        assert!(!remove(&path, "kubectl").unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "# names\n\nEfren\nNextcloud\n");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn a_bad_term_is_refused_with_why_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        for (term, why) in [
            ("  ", "empty"),
            ("#hashtag", "comment"),
            ("two\nlines", "line break"),
            (&"x".repeat(61)[..], "longer than 60"),
        ] {
            let err = add(&path, &["fine".into(), term.into()]).unwrap_err();
            assert!(err.to_string().contains(why), "{term:?}: {err}");
        }
        assert!(!path.exists());
    }

    #[test]
    fn the_config_comes_first_and_each_term_once() {
        let config = vec!["Efren".to_owned(), "kubectl".to_owned()];
        let file = vec!["KUBECTL".to_owned(), "Nextcloud".to_owned(), " ".to_owned()];
        assert_eq!(merged(&config, &file), ["Efren", "kubectl", "Nextcloud"]);
    }
}
