//! [`ConfigError`]: everything that can go wrong finding, reading or checking the configuration.

use std::path::{Path, PathBuf};

/// An error from loading the config file or resolving a directory.
///
/// Every message names the file or directory and the key, quotes the bad value, and says what
/// to do about it.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A file named with `--config` does not exist.
    #[error(
        "config file '{}' does not exist: create it (`stt-ctl config-default > '{}'` writes one \
         with every default) or drop --config to use the default location",
        path.display(),
        path.display()
    )]
    NotFound {
        /// The path that was named.
        path: PathBuf,
    },

    /// The config file exists but could not be read.
    #[error("cannot read config file '{}': {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why reading failed.
        source: std::io::Error,
    },

    /// The file is not valid TOML.
    #[error("{}: {message}", location(path, *line))]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line of the error, when the parser reported one.
        line: Option<usize>,
        /// The parser's description.
        message: String,
    },

    /// A key that no section has (usually a typo).
    #[error(
        "{}: unknown key '{key}'{} (expected one of: {expected})",
        location(path, *line),
        suggestion.as_deref().map(|s| format!(", did you mean '{s}'?")).unwrap_or_default()
    )]
    UnknownKey {
        /// The file.
        path: PathBuf,
        /// 1-based line of the key.
        line: Option<usize>,
        /// Dotted path of the key, e.g. `assistant.requir_viewer`.
        key: String,
        /// The keys allowed where it stands, comma separated.
        expected: String,
        /// The allowed key closest to the one written, if any is close.
        suggestion: Option<String>,
    },

    /// A key whose value has the wrong type or shape, or a required key that is missing.
    #[error("{}: key '{key}': {message}", location(path, *line))]
    BadValue {
        /// The file.
        path: PathBuf,
        /// 1-based line of the value.
        line: Option<usize>,
        /// Dotted path of the key, e.g. `llm.request_timeout_s` or `tools.command[0].argv`.
        key: String,
        /// What was wrong, as serde describes it.
        message: String,
    },

    /// A value of the right type that makes no sense (a zero queue, a ratio above 1, ...).
    #[error("{}: key '{key}': {message}", location(path, *line))]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line of the key, when the file sets it (it may be a default).
        line: Option<usize>,
        /// Dotted path of the key.
        key: String,
        /// What is wrong and how to fix it, quoting the value.
        message: String,
    },

    /// No environment variable says where a directory is.
    #[error("cannot find the {what} directory: neither {vars} is set; set one of them")]
    NoHome {
        /// Which directory ("config", "data").
        what: &'static str,
        /// The variables consulted, e.g. "$XDG_CONFIG_HOME nor $HOME".
        vars: &'static str,
    },

    /// The runtime directory could not be created or is unsafe to use.
    #[error("runtime directory '{}' {problem}", path.display())]
    RuntimeDir {
        /// The directory.
        path: PathBuf,
        /// What is wrong and how to fix it.
        problem: String,
    },
}

/// `path:line`, or just `path` when the line is unknown.
fn location(path: &Path, line: Option<usize>) -> String {
    match line {
        Some(line) => format!("{}:{line}", path.display()),
        None => path.display().to_string(),
    }
}
