//! Where stt keeps its files: the config file, data, and the runtime directory for sockets.
//!
//! | what | first of |
//! |---|---|
//! | config file | `$XDG_CONFIG_HOME/stt/config.toml`, `$HOME/.config/stt/config.toml` |
//! | data | `$STT_DATA_DIR`, `$XDG_DATA_HOME/stt`, `$HOME/.local/share/stt` |
//! | runtime (sockets) | `$STT_RUNTIME_DIR`, `$XDG_RUNTIME_DIR`, `/tmp/stt-$UID` (created 0700) |
//!
//! An empty variable counts as unset, and a relative `XDG_*` value is ignored, as the XDG base
//! directory spec says. Each function has a `_with(&Env)` form that reads a given [`Env`]
//! instead of the process environment, so tests never have to mutate the latter.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::ConfigError;
use crate::sections::Config;

/// File name of the daemon's event socket inside the runtime directory.
pub const DAEMON_SOCKET_NAME: &str = "stt-daemon.sock";
/// File name of the assistant's control socket inside the runtime directory.
pub const ASSISTANT_SOCKET_NAME: &str = "stt-assistant.sock";

/// The environment that directory lookups read: variables, the user id and the shared
/// temporary directory for the runtime fallback.
#[derive(Debug, Clone)]
pub struct Env {
    vars: Option<BTreeMap<String, OsString>>,
    uid: u32,
    tmp: PathBuf,
}

impl Env {
    /// The real process environment, user id and `/tmp`.
    pub fn from_process() -> Self {
        Self { vars: None, uid: nix::unistd::getuid().as_raw(), tmp: PathBuf::from("/tmp") }
    }

    /// A fixed set of variables with the real user id and `/tmp`; for tests.
    pub fn from_vars<K, V>(vars: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<String>,
        V: Into<OsString>,
    {
        Self {
            vars: Some(vars.into_iter().map(|(k, v)| (k.into(), v.into())).collect()),
            ..Self::from_process()
        }
    }

    /// The same environment with `tmp` in place of `/tmp` for the runtime fallback.
    pub fn with_tmp(self, tmp: impl Into<PathBuf>) -> Self {
        Self { tmp: tmp.into(), ..self }
    }

    /// The same environment with another user id, as the owner the runtime fallback expects.
    pub fn with_uid(self, uid: u32) -> Self {
        Self { uid, ..self }
    }

    /// The user id.
    pub fn uid(&self) -> u32 {
        self.uid
    }

    /// The variable's value; `None` when unset or empty.
    pub fn var(&self, name: &str) -> Option<OsString> {
        let value = match &self.vars {
            Some(vars) => vars.get(name).cloned(),
            None => std::env::var_os(name),
        };
        value.filter(|v| !v.is_empty())
    }

    /// An `XDG_*` variable as a path; relative values are ignored, as the spec requires.
    fn xdg(&self, name: &str) -> Option<PathBuf> {
        self.var(name).map(PathBuf::from).filter(|p| p.is_absolute())
    }

    fn home(&self) -> Option<PathBuf> {
        self.var("HOME").map(PathBuf::from)
    }
}

/// The config file: `$XDG_CONFIG_HOME/stt/config.toml` or `~/.config/stt/config.toml`.
pub fn config_file() -> Result<PathBuf, ConfigError> {
    config_file_with(&Env::from_process())
}

/// [`config_file`] in `env`.
pub fn config_file_with(env: &Env) -> Result<PathBuf, ConfigError> {
    let base = env
        .xdg("XDG_CONFIG_HOME")
        .or_else(|| env.home().map(|h| h.join(".config")))
        .ok_or(ConfigError::NoHome { what: "config", vars: "$XDG_CONFIG_HOME nor $HOME" })?;
    Ok(base.join("stt").join("config.toml"))
}

/// The data directory: `$STT_DATA_DIR`, `$XDG_DATA_HOME/stt` or `~/.local/share/stt`.
///
/// Not created here: whoever writes into it creates what it needs.
pub fn data_dir() -> Result<PathBuf, ConfigError> {
    data_dir_with(&Env::from_process())
}

/// [`data_dir`] in `env`.
pub fn data_dir_with(env: &Env) -> Result<PathBuf, ConfigError> {
    xdg_dir(env, "STT_DATA_DIR", "XDG_DATA_HOME", "share").ok_or(ConfigError::NoHome {
        what: "data",
        vars: "$STT_DATA_DIR, $XDG_DATA_HOME nor $HOME",
    })
}

/// `$own`, else `$xdg/stt`, else `~/.local/<under_home>/stt`.
fn xdg_dir(env: &Env, own: &str, xdg: &str, under_home: &str) -> Option<PathBuf> {
    if let Some(dir) = env.var(own) {
        return Some(PathBuf::from(dir));
    }
    env.xdg(xdg)
        .or_else(|| env.home().map(|h| h.join(".local").join(under_home)))
        .map(|base| base.join("stt"))
}

/// Where llama-server writes the prompt state of a slot the assistant saves (the command
/// prompt, read once and restored after a restart): `$XDG_CACHE_HOME/stt/llama-slots` or
/// `~/.cache/stt/llama-slots`. Not created here: `up` creates it, mode 0700, before it
/// starts the model.
pub fn llama_slots_dir_with(env: &Env) -> Result<PathBuf, ConfigError> {
    env.xdg("XDG_CACHE_HOME")
        .or_else(|| env.home().map(|h| h.join(".cache")))
        .map(|base| base.join("stt").join("llama-slots"))
        .ok_or(ConfigError::NoHome { what: "cache", vars: "$XDG_CACHE_HOME nor $HOME" })
}

/// The key `stt-daemon up` gives the llama-server it starts, which refuses a request without
/// it (a web page in a browser on this machine cannot know it): `llama-server.key` in the
/// [`runtime_dir_with`], written by `up`, mode 0600, read by the assistant.
pub fn llama_key_file_with(env: &Env) -> Result<PathBuf, ConfigError> {
    Ok(runtime_dir_with(env)?.join("llama-server.key"))
}

/// The state directory, for logs: `$STT_STATE_DIR`, `$XDG_STATE_HOME/stt` or
/// `~/.local/state/stt`. Not created here.
pub fn state_dir() -> Result<PathBuf, ConfigError> {
    state_dir_with(&Env::from_process())
}

/// [`state_dir`] in `env`.
pub fn state_dir_with(env: &Env) -> Result<PathBuf, ConfigError> {
    xdg_dir(env, "STT_STATE_DIR", "XDG_STATE_HOME", "state").ok_or(ConfigError::NoHome {
        what: "state",
        vars: "$STT_STATE_DIR, $XDG_STATE_HOME nor $HOME",
    })
}

/// The runtime directory for sockets: `$STT_RUNTIME_DIR`, `$XDG_RUNTIME_DIR`, or
/// `/tmp/stt-$UID`.
///
/// `$STT_RUNTIME_DIR` is created (mode 0700) if missing. `$XDG_RUNTIME_DIR` is used as the
/// session manager made it. The `/tmp` fallback sits in a directory everyone can write, so it
/// is created with mode 0700 in one step, and an existing one is used only if it is a real
/// directory owned by this user that no one else can enter; otherwise this refuses.
pub fn runtime_dir() -> Result<PathBuf, ConfigError> {
    runtime_dir_with(&Env::from_process())
}

/// [`runtime_dir`] in `env`.
pub fn runtime_dir_with(env: &Env) -> Result<PathBuf, ConfigError> {
    if let Some(dir) = env.var("STT_RUNTIME_DIR") {
        let dir = PathBuf::from(dir);
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir).map_err(|e| {
            runtime_error(&dir, format!("cannot be created ({e}): fix $STT_RUNTIME_DIR"))
        })?;
        return Ok(dir);
    }
    if let Some(dir) = env.xdg("XDG_RUNTIME_DIR") {
        return Ok(dir);
    }
    let dir = env.tmp.join(format!("stt-{}", env.uid));
    private_dir(&dir, env.uid)?;
    Ok(dir)
}

/// Creates `dir` with mode 0700, or checks that the existing one is ours and private.
fn private_dir(dir: &Path, uid: u32) -> Result<(), ConfigError> {
    const FIX: &str = "remove it, or set $XDG_RUNTIME_DIR or $STT_RUNTIME_DIR to a private \
                       directory";
    // mkdir with the mode is one step, so the directory is never wider than 0700 (the umask
    // can only narrow it).
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(e) => return Err(runtime_error(dir, format!("cannot be created ({e}): {FIX}"))),
    }
    // symlink_metadata: a link planted by someone else must not be followed to their directory.
    let meta = std::fs::symlink_metadata(dir)
        .map_err(|e| runtime_error(dir, format!("cannot be inspected ({e}): {FIX}")))?;
    if !meta.file_type().is_dir() {
        return Err(runtime_error(dir, format!("is not a directory: {FIX}")));
    }
    if meta.uid() != uid {
        return Err(runtime_error(
            dir,
            format!("is owned by uid {}, not by you (uid {uid}): {FIX}", meta.uid()),
        ));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(runtime_error(
            dir,
            format!(
                "has mode {mode:03o}, so other users can reach its sockets: run `chmod 700 '{}'`, \
                 or {FIX}",
                dir.display()
            ),
        ));
    }
    Ok(())
}

fn runtime_error(path: &Path, problem: String) -> ConfigError {
    ConfigError::RuntimeDir { path: path.to_owned(), problem }
}

/// The daemon's event socket: `[daemon].socket`, or `<runtime_dir>/stt-daemon.sock`.
pub fn daemon_socket(cfg: &Config) -> Result<PathBuf, ConfigError> {
    daemon_socket_with(cfg, &Env::from_process())
}

/// [`daemon_socket`] in `env`.
pub fn daemon_socket_with(cfg: &Config, env: &Env) -> Result<PathBuf, ConfigError> {
    socket(&cfg.daemon.socket, DAEMON_SOCKET_NAME, env)
}

/// The assistant's control socket: `[assistant].socket`, or `<runtime_dir>/stt-assistant.sock`.
pub fn assistant_socket(cfg: &Config) -> Result<PathBuf, ConfigError> {
    assistant_socket_with(cfg, &Env::from_process())
}

/// [`assistant_socket`] in `env`.
pub fn assistant_socket_with(cfg: &Config, env: &Env) -> Result<PathBuf, ConfigError> {
    socket(&cfg.assistant.socket, ASSISTANT_SOCKET_NAME, env)
}

fn socket(configured: &Path, name: &str, env: &Env) -> Result<PathBuf, ConfigError> {
    if configured.as_os_str().is_empty() {
        return Ok(runtime_dir_with(env)?.join(name));
    }
    Ok(expand_home(configured, env))
}

/// Where a model named in the config lives: an absolute path as is, `~/...` under `$HOME`,
/// and a bare name or relative path under `<data_dir>/models`.
pub fn model_path(configured: &Path) -> Result<PathBuf, ConfigError> {
    model_path_with(configured, &Env::from_process())
}

/// [`model_path`] in `env`.
pub fn model_path_with(configured: &Path, env: &Env) -> Result<PathBuf, ConfigError> {
    let expanded = expand_home(configured, env);
    if expanded.is_absolute() {
        return Ok(expanded);
    }
    Ok(models_dir_with(env)?.join(expanded))
}

/// Where models are installed: `$STT_MODELS_DIR`, else `<data_dir>/models` (the same rule
/// as `scripts/fetch-models`).
pub fn models_dir() -> Result<PathBuf, ConfigError> {
    models_dir_with(&Env::from_process())
}

/// [`models_dir`] in `env`.
pub fn models_dir_with(env: &Env) -> Result<PathBuf, ConfigError> {
    if let Some(dir) = env.var("STT_MODELS_DIR") {
        return Ok(expand_home(Path::new(&dir), env));
    }
    Ok(data_dir_with(env)?.join("models"))
}

/// The long-term memory database: `[memory].db`, or `<data_dir>/memory.sqlite`.
pub fn memory_db(cfg: &Config) -> Result<PathBuf, ConfigError> {
    memory_db_with(cfg, &Env::from_process())
}

/// [`memory_db`] in `env`.
pub fn memory_db_with(cfg: &Config, env: &Env) -> Result<PathBuf, ConfigError> {
    if cfg.memory.db.as_os_str().is_empty() {
        return Ok(data_dir_with(env)?.join("memory.sqlite"));
    }
    Ok(expand_home(&cfg.memory.db, env))
}

/// `path` with a leading `~/` replaced by `$HOME/`; other paths, and all paths when `$HOME`
/// is unset, come back unchanged.
pub fn expand_home(path: &Path, env: &Env) -> PathBuf {
    match (path.strip_prefix("~"), env.home()) {
        (Ok(rest), Some(home)) => home.join(rest),
        _ => path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Env {
        Env::from_vars(vars.iter().map(|(k, v)| (*k, *v)))
    }

    #[test]
    fn config_file_prefers_xdg_then_home() {
        let table: &[(&[(&str, &str)], &str)] = &[
            (&[("XDG_CONFIG_HOME", "/x"), ("HOME", "/h")], "/x/stt/config.toml"),
            (&[("XDG_CONFIG_HOME", ""), ("HOME", "/h")], "/h/.config/stt/config.toml"),
            (&[("XDG_CONFIG_HOME", "rel"), ("HOME", "/h")], "/h/.config/stt/config.toml"),
            (&[("HOME", "/h")], "/h/.config/stt/config.toml"),
        ];
        for (vars, expected) in table {
            assert_eq!(config_file_with(&env(vars)).unwrap(), Path::new(expected), "{vars:?}");
        }
    }

    #[test]
    fn config_file_without_home_says_what_to_set() {
        let err = config_file_with(&env(&[])).unwrap_err().to_string();
        assert!(err.contains("$XDG_CONFIG_HOME nor $HOME"), "{err}");
    }

    #[test]
    fn data_dir_prefers_stt_then_xdg_then_home() {
        let table: &[(&[(&str, &str)], &str)] = &[
            (&[("STT_DATA_DIR", "/d"), ("XDG_DATA_HOME", "/x"), ("HOME", "/h")], "/d"),
            (&[("XDG_DATA_HOME", "/x"), ("HOME", "/h")], "/x/stt"),
            (&[("STT_DATA_DIR", ""), ("HOME", "/h")], "/h/.local/share/stt"),
        ];
        for (vars, expected) in table {
            assert_eq!(data_dir_with(&env(vars)).unwrap(), Path::new(expected), "{vars:?}");
        }
        assert!(data_dir_with(&env(&[])).unwrap_err().to_string().contains("$STT_DATA_DIR"));
    }

    #[test]
    fn runtime_dir_prefers_stt_then_xdg() {
        let tmp = tempfile::tempdir().unwrap();
        let stt = tmp.path().join("a/b");
        let stt_str = stt.to_str().unwrap();
        let got = runtime_dir_with(&env(&[
            ("STT_RUNTIME_DIR", stt_str),
            ("XDG_RUNTIME_DIR", "/run/user/1"),
        ]))
        .unwrap();
        assert_eq!(got, stt);
        assert!(stt.is_dir(), "STT_RUNTIME_DIR is created");

        let got = runtime_dir_with(&env(&[("XDG_RUNTIME_DIR", "/run/user/1")])).unwrap();
        assert_eq!(got, Path::new("/run/user/1"));
    }

    #[test]
    fn runtime_fallback_is_created_private() {
        let tmp = tempfile::tempdir().unwrap();
        let e = env(&[]).with_tmp(tmp.path());
        let dir = runtime_dir_with(&e).unwrap();
        assert_eq!(dir, tmp.path().join(format!("stt-{}", e.uid())));
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o077, 0, "mode {mode:o}");
        // A second call finds it and accepts it.
        assert_eq!(runtime_dir_with(&e).unwrap(), dir);
    }

    #[test]
    fn runtime_fallback_refuses_unsafe_existing_paths() {
        let tmp = tempfile::tempdir().unwrap();
        let e = env(&[]).with_tmp(tmp.path());
        let dir = tmp.path().join(format!("stt-{}", e.uid()));

        std::fs::DirBuilder::new().mode(0o755).create(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = runtime_dir_with(&e).unwrap_err().to_string();
        assert!(err.contains(dir.to_str().unwrap()) && err.contains("mode 755"), "{err}");
        assert!(err.contains("chmod 700"), "{err}");

        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let err = runtime_dir_with(&e.clone().with_uid(e.uid() + 1)).unwrap_err().to_string();
        assert!(err.contains("not by you"), "{err}");
        std::fs::remove_dir(&dir).unwrap();

        std::fs::write(&dir, "").unwrap();
        let err = runtime_dir_with(&e).unwrap_err().to_string();
        assert!(err.contains("is not a directory"), "{err}");
        std::fs::remove_file(&dir).unwrap();

        let target = tmp.path().join("elsewhere");
        std::fs::DirBuilder::new().mode(0o700).create(&target).unwrap();
        std::os::unix::fs::symlink(&target, &dir).unwrap();
        let err = runtime_dir_with(&e).unwrap_err().to_string();
        assert!(err.contains("is not a directory"), "a symlink is not followed: {err}");
    }

    #[test]
    fn sockets_default_to_the_runtime_dir_unless_configured() {
        let e = env(&[("XDG_RUNTIME_DIR", "/run/user/7"), ("HOME", "/h")]);
        let mut cfg = Config::default();
        assert_eq!(daemon_socket_with(&cfg, &e).unwrap(), Path::new("/run/user/7/stt-daemon.sock"));
        assert_eq!(
            assistant_socket_with(&cfg, &e).unwrap(),
            Path::new("/run/user/7/stt-assistant.sock")
        );
        cfg.daemon.socket = PathBuf::from("/s/d.sock");
        cfg.assistant.socket = PathBuf::from("~/a.sock");
        assert_eq!(daemon_socket_with(&cfg, &e).unwrap(), Path::new("/s/d.sock"));
        assert_eq!(assistant_socket_with(&cfg, &e).unwrap(), Path::new("/h/a.sock"));
    }

    #[test]
    fn models_resolve_under_the_data_dir() {
        let e = env(&[("STT_DATA_DIR", "/d"), ("HOME", "/h")]);
        let table = [
            ("ggml-tiny.en-q8_0.bin", "/d/models/ggml-tiny.en-q8_0.bin"),
            ("sub/x.bin", "/d/models/sub/x.bin"),
            ("/abs/x.bin", "/abs/x.bin"),
            ("~/m/x.bin", "/h/m/x.bin"),
        ];
        for (configured, expected) in table {
            assert_eq!(model_path_with(Path::new(configured), &e).unwrap(), Path::new(expected));
        }
    }

    #[test]
    fn memory_db_defaults_to_the_data_dir() {
        let e = env(&[("STT_DATA_DIR", "/d")]);
        let mut cfg = Config::default();
        assert_eq!(memory_db_with(&cfg, &e).unwrap(), Path::new("/d/memory.sqlite"));
        cfg.memory.db = PathBuf::from("/m.sqlite");
        assert_eq!(memory_db_with(&cfg, &e).unwrap(), Path::new("/m.sqlite"));
    }
}
