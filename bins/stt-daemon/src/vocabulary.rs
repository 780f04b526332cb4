//! The words whisper is told to expect: `[daemon].vocabulary` and the vocabulary file
//! (`stt_config::vocabulary`), which `stt-ctl vocabulary add` changes while the daemon runs.
//! The VAD thread asks before each pass; the file is looked at (its time and size) at most
//! every [`CHECK_EVERY`], and read again only when they changed.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use stt_config::Config;

/// How often the file is looked at, at most.
pub const CHECK_EVERY: Duration = Duration::from_millis(250);

#[derive(Debug)]
pub struct Vocabulary {
    config: Vec<String>,
    path: Option<PathBuf>,
    /// The file's time and size when last read (`None`: no file).
    seen: Option<(SystemTime, u64)>,
    checked: Option<Instant>,
    current: Arc<[String]>,
}

impl Vocabulary {
    /// The config's terms, and the file's as they are now.
    pub fn new(config: &Config) -> Self {
        let path = stt_config::vocabulary::file()
            .map_err(|e| tracing::warn!("no vocabulary file: {e}"))
            .ok();
        Self::with_file(config.daemon.vocabulary.clone(), path)
    }

    pub fn with_file(config: Vec<String>, path: Option<PathBuf>) -> Self {
        let current = Arc::from(stt_config::vocabulary::merged(&config, &[]));
        let mut vocabulary = Self { config, path, seen: None, checked: None, current };
        vocabulary.reload();
        vocabulary
    }

    /// The terms now: the same `Arc` as long as they do not change.
    pub fn current(&mut self) -> Arc<[String]> {
        if self.checked.is_none_or(|at| at.elapsed() >= CHECK_EVERY) {
            self.reload();
        }
        Arc::clone(&self.current)
    }

    fn reload(&mut self) {
        self.checked = Some(Instant::now());
        let Some(path) = &self.path else { return };
        let stamp = std::fs::metadata(path)
            .ok()
            .map(|m| (m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len()));
        if stamp == self.seen {
            return;
        }
        self.seen = stamp;
        let file = match stt_config::vocabulary::read(path) {
            Ok(terms) => terms,
            Err(e) => {
                tracing::warn!("cannot read the vocabulary file {}: {e}", path.display());
                return;
            }
        };
        let terms = stt_config::vocabulary::merged(&self.config, &file);
        if *terms != *self.current {
            tracing::info!(terms = terms.len(), "vocabulary: {}", terms.join(", "));
            self.current = Arc::from(terms);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_read_again_when_it_changes_and_the_arc_stays_while_it_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vocabulary.txt");
        let mut v = Vocabulary::with_file(vec!["Efren".into()], Some(path.clone()));
        let first = v.current();
        assert_eq!(&*first, ["Efren".to_owned()]);
        stt_config::vocabulary::add(&path, &["kubectl".into()]).unwrap();
        assert!(Arc::ptr_eq(&first, &v.current()), "not looked at again before CHECK_EVERY");
        v.checked = v.checked.map(|at| at - CHECK_EVERY);
        let next = v.current();
        assert_eq!(&*next, ["Efren".to_owned(), "kubectl".to_owned()]);
        assert!(Arc::ptr_eq(&next, &v.current()), "unchanged: the same Arc");
    }
}
