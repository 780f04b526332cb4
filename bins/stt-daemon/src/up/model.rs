//! The local model: whether `up` runs llama.cpp's `llama-server` with the installed GGUF
//! ([`decide`], pure, over [`Facts`] that [`facts`] gathers), and with what arguments
//! ([`Launch::args`]).
//!
//! It runs only when nothing else was chosen: `[llm].enabled`, no `STT_RUN_LLM=0`,
//! `[llm].local_server`, no `[llm].provider` or `[llm].endpoint`, nothing answering on
//! `127.0.0.1:[llm].local_port` already, and both the program and the model installed
//! (`scripts/fetch-llm` installs both). Any "no" is said on `up`'s output and `up` goes on
//! without it: the assistant then reports that no provider is there, in its own words.

use std::ffi::OsString;
use std::fmt;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use stt_config::LlmConfig;
use stt_config::dirs::{Env, expand_home};

/// The service's name in `up`'s messages, and its program's usual name.
pub const NAME: &str = "llama-server";

/// The prefix of its lines in its log.
pub const LABEL: &str = "model";

/// Its log file under the state directory: its own, apart from `up.log`, since it is
/// chatty and never wanted on the terminal.
pub const LOG_NAME: &str = "llama-server.log";

/// The context of each slot, in tokens: room for the assistant's prompt budget
/// (`[assistant].max_context_tokens`, 4096 by default).
pub const CONTEXT: u32 = 4096;

/// Its slots, each with its own context and prompt cache: commands run in one, everything
/// else (chat, summaries, dreams) in the other, so background work never pushes the command
/// prompt out of the cache (the assistant names the slot of each request).
pub const SLOTS: u32 = 2;

/// Its CPU priority (nice): below whisper's, so that on a small machine speech is still
/// transcribed in real time while the model thinks.
pub const NICE: i32 = 10;

/// The most memory its prompt cache in RAM may take, in MiB (llama-server's default is
/// 8 GiB): prompts a slot lets go of are kept there and restored when they come back.
pub const CACHE_RAM_MIB: u32 = 256;

/// How long "something already answers on the port" may take to find out (the llamacpp
/// provider's own probe waits as long).
const ANSWER_TIMEOUT: Duration = Duration::from_millis(200);

/// Turns the local model off when set to `0`.
pub const ENV_OFF: &str = "STT_RUN_LLM";

/// Where `scripts/fetch-llm` builds llama-server, when set (the tests' override).
pub const ENV_PROGRAM: &str = "STT_LLAMA_SERVER";

/// What the decision is made from.
#[derive(Debug, Clone)]
pub struct Facts {
    /// `[llm].enabled`.
    pub enabled: bool,
    /// `STT_RUN_LLM=0` is set.
    pub env_off: bool,
    /// `[llm].local_server`.
    pub local_server: bool,
    /// `[llm].provider` ("" = automatic).
    pub provider: String,
    /// `[llm].endpoint` ("" = none).
    pub endpoint: String,
    /// `[llm].local_port`.
    pub port: u16,
    /// Something accepts connections on `127.0.0.1:port` now.
    pub answers: bool,
    /// The CPUs this process may run on.
    pub cpus: usize,
    /// The program, or why there is none.
    pub program: Result<PathBuf, NoProgram>,
    /// The model file, or why there is none.
    pub model: Result<PathBuf, NoModel>,
}

/// Why there is no llama-server to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoProgram {
    /// `[llm].local_server_program` names nothing executable.
    Configured(PathBuf),
    /// `$STT_LLAMA_SERVER` names nothing executable.
    Override(PathBuf),
    /// Not where `scripts/fetch-llm` builds it, and not on `PATH`.
    NotInstalled { cache: PathBuf },
}

/// Why there is no model to serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoModel {
    /// `[llm].local_model` resolves to this path, which is not a file.
    Missing(PathBuf),
    /// `[llm].local_model` cannot be resolved (no data directory): the error.
    Unresolved(String),
}

/// What `up` does about the local model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Start(Launch),
    Skip(Skip),
}

/// Why the local model is not started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// `[llm].enabled = false`: no model at all.
    LlmDisabled,
    /// `STT_RUN_LLM=0`.
    EnvOff,
    /// `[llm].local_server = false`.
    LocalServerOff,
    /// `[llm].provider` names one.
    ProviderChosen(String),
    /// `[llm].endpoint` names one.
    EndpointChosen(String),
    /// Something answers on the port already: the llamacpp provider will use it.
    Answers(u16),
    /// The program, the model, or both are missing.
    Missing { program: Option<NoProgram>, model: Option<NoModel> },
}

/// How to run it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub program: PathBuf,
    pub model: PathBuf,
    pub port: u16,
    /// Threads for generating and for reading prompts: one per CPU.
    pub threads: usize,
}

/// Whether to run the local model, the first "no" winning, in the order of [`Skip`].
pub fn decide(facts: &Facts) -> Decision {
    let skip = if !facts.enabled {
        Skip::LlmDisabled
    } else if facts.env_off {
        Skip::EnvOff
    } else if !facts.local_server {
        Skip::LocalServerOff
    } else if !facts.provider.is_empty() {
        Skip::ProviderChosen(facts.provider.clone())
    } else if !facts.endpoint.is_empty() {
        Skip::EndpointChosen(facts.endpoint.clone())
    } else if facts.answers {
        Skip::Answers(facts.port)
    } else {
        match (&facts.program, &facts.model) {
            (Ok(program), Ok(model)) => {
                let (program, model) = (program.clone(), model.clone());
                let threads = facts.cpus.max(1);
                return Decision::Start(Launch { program, model, port: facts.port, threads });
            }
            (program, model) => Skip::Missing {
                program: program.as_ref().err().cloned(),
                model: model.as_ref().err().cloned(),
            },
        }
    };
    Decision::Skip(skip)
}

/// Gathers the facts: the environment, a probe of the port, the program and the model on
/// disk.
pub fn facts(llm: &LlmConfig, env: &Env) -> Facts {
    Facts {
        enabled: llm.enabled,
        env_off: env.var(ENV_OFF).is_some_and(|v| v == "0"),
        local_server: llm.local_server,
        provider: llm.provider.trim().to_owned(),
        endpoint: llm.endpoint.trim().to_owned(),
        port: llm.local_port,
        answers: answers(llm.local_port),
        cpus: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        program: find_program(&llm.local_server_program, env),
        model: find_model(&llm.local_model, env),
    }
}

/// Whether something accepts connections on `127.0.0.1:port` within [`ANSWER_TIMEOUT`].
pub fn answers(port: u16) -> bool {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    TcpStream::connect_timeout(&addr, ANSWER_TIMEOUT).is_ok()
}

/// The llama-server to run: `configured` (a path, or a name on `PATH`); when that is empty,
/// `$STT_LLAMA_SERVER`, else the one `scripts/fetch-llm` builds if it is there, else
/// `llama-server` on `PATH`.
pub fn find_program(configured: &Path, env: &Env) -> Result<PathBuf, NoProgram> {
    if !configured.as_os_str().is_empty() {
        let program = expand_home(configured, env);
        return on_path_or_as_is(&program, env).ok_or(NoProgram::Configured(program));
    }
    if let Some(program) = env.var(ENV_PROGRAM).map(PathBuf::from) {
        return if stt_os::is_executable(&program) {
            Ok(program)
        } else {
            Err(NoProgram::Override(program))
        };
    }
    let cache = fetch_llm_program(env);
    if stt_os::is_executable(&cache) {
        return Ok(cache);
    }
    on_path_or_as_is(Path::new(NAME), env).ok_or(NoProgram::NotInstalled { cache })
}

/// Where `scripts/fetch-llm` builds llama-server:
/// `${XDG_CACHE_HOME:-$HOME/.cache}/stt/llama/llama-server`.
pub fn fetch_llm_program(env: &Env) -> PathBuf {
    let cache = env
        .var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| env.var("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("~/.cache"));
    cache.join("stt").join("llama").join(NAME)
}

/// The model file `[llm].local_model` names (a path, or a file name in the models
/// directory, as `[daemon].model` is found), if it is a file.
pub fn find_model(configured: &Path, env: &Env) -> Result<PathBuf, NoModel> {
    let path = stt_config::dirs::model_path_with(configured, env)
        .map_err(|e| NoModel::Unresolved(e.to_string()))?;
    if path.is_file() { Ok(path) } else { Err(NoModel::Missing(path)) }
}

/// `program` itself when it is a path (it has a `/`), else the first executable of that
/// name on `$PATH`.
fn on_path_or_as_is(program: &Path, env: &Env) -> Option<PathBuf> {
    stt_os::find_program(program, env.var("PATH").as_deref())
}

impl Launch {
    /// `-m MODEL --host 127.0.0.1 --port PORT -c 8192 -np 2 --jinja -t N -tb N --poll 0
    /// --cache-ram 256`: loopback only; [`SLOTS`] slots of [`CONTEXT`] tokens each; `--jinja`
    /// for the model's own chat template, which is what makes its tool calls parse; a thread
    /// per CPU, which sleep rather than spin while they wait (`--poll 0`: a spinning thread
    /// takes a core whisper may need); a bounded prompt cache in RAM ([`CACHE_RAM_MIB`]). It
    /// runs at [`NICE`].
    pub fn args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["-m".into(), self.model.clone().into()];
        let threads = self.threads.to_string();
        let context = (CONTEXT * SLOTS).to_string();
        let (slots, cache) = (SLOTS.to_string(), CACHE_RAM_MIB.to_string());
        let rest = [
            "--host",
            "127.0.0.1",
            "--port",
            &self.port.to_string(),
            "-c",
            &context,
            "-np",
            &slots,
            "--jinja",
            "-t",
            &threads,
            "-tb",
            &threads,
            "--poll",
            "0",
            "--cache-ram",
            &cache,
        ];
        args.extend(rest.iter().map(OsString::from));
        args
    }
}

/// `--slot-save-path DIR`: where the assistant has llama-server save the command prompt it
/// read, and restore it from after a restart ([`stt_config::dirs::llama_slots_dir_with`]),
/// created here, mode 0700 (what was said to the model can be in it).
pub fn slot_args(env: &Env) -> Result<[OsString; 2], String> {
    let dir = stt_config::dirs::llama_slots_dir_with(env).map_err(|e| e.to_string())?;
    stt_os::private_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(["--slot-save-path".into(), dir.into_os_string()])
}

/// `--api-key-file FILE`: `key` (one random key per `up`, [`new_key`], the same for every
/// restart of the server, which the assistant has read already), written to
/// [`stt_config::dirs::llama_key_file_with`] (mode 0600, replaced atomically), where the
/// assistant reads it. llama-server then refuses every request without it but its health
/// check, so a page in a browser on this machine cannot use the model nor read its slots
/// (llama-server allows any origin by default).
pub fn key_args(env: &Env, key: &str) -> Result<[OsString; 2], String> {
    let path = stt_config::dirs::llama_key_file_with(env).map_err(|e| e.to_string())?;
    stt_os::write_private(&path, format!("{key}\n").as_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(["--api-key-file".into(), path.into_os_string()])
}

/// A new random key: 32 bytes from the kernel, as hex.
pub fn new_key() -> Result<String, String> {
    let mut bytes = [0_u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| std::io::Read::read_exact(&mut random, &mut bytes))
        .map_err(|e| format!("cannot read /dev/urandom: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The fix for anything missing.
/// What to do about llama-server failing as its last lines (`said`) tell, serving `model`:
/// a model file it could not load is damaged or cut short (a download stopped, a full disk).
pub fn fix_for(said: &str, model: &Path) -> Option<String> {
    said.contains("failed to load model").then(|| {
        format!(
            "llama-server could not load '{}': the file is damaged or cut short. {}, or set \
             [llm].local_model to another model.",
            model.display(),
            capitalized(FETCH)
        )
    })
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

const FETCH: &str = "run scripts/fetch-llm, which builds llama-server and installs the model";

impl fmt::Display for Skip {
    /// The line `up` says, after `[up] `.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const NOT: &str = "not starting the local model";
        match self {
            Self::LlmDisabled => write!(f, "{NOT}: [llm].enabled is false"),
            Self::EnvOff => write!(f, "{NOT}: {ENV_OFF}=0"),
            Self::LocalServerOff => write!(f, "{NOT}: [llm].local_server is false"),
            Self::ProviderChosen(provider) => {
                write!(f, "{NOT}: the config chooses the provider \"{provider}\" ([llm].provider)")
            }
            Self::EndpointChosen(endpoint) => {
                write!(f, "{NOT}: the config names the endpoint '{endpoint}' ([llm].endpoint)")
            }
            Self::Answers(port) => {
                write!(f, "a model server already answers on 127.0.0.1:{port}; using it")
            }
            Self::Missing { program, model } => {
                write!(f, "{NOT}: ")?;
                let said: Vec<String> = program
                    .iter()
                    .map(ToString::to_string)
                    .chain(model.iter().map(ToString::to_string))
                    .collect();
                write!(f, "{}", said.join(", and "))?;
                match (program, model) {
                    (Some(NoProgram::Configured(_)), _) => {
                        write!(f, ": fix [llm].local_server_program, or leave it \"\" and {FETCH}")
                    }
                    (_, Some(NoModel::Missing(_))) | (Some(_), _) => write!(f, ": {FETCH}"),
                    _ => Ok(()),
                }
            }
        }
    }
}

impl fmt::Display for NoProgram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Configured(path) => write!(
                f,
                "[llm].local_server_program '{}' is not an executable file nor a program on PATH",
                path.display()
            ),
            Self::Override(path) => {
                write!(f, "${ENV_PROGRAM} '{}' is not an executable file", path.display())
            }
            Self::NotInstalled { cache } => {
                write!(f, "no {NAME} at '{}' nor on PATH", cache.display())
            }
        }
    }
}

impl fmt::Display for NoModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing(path) => {
                write!(f, "no model at '{}' ([llm].local_model)", path.display())
            }
            Self::Unresolved(e) => write!(f, "cannot find [llm].local_model: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Everything says yes.
    fn yes() -> Facts {
        Facts {
            enabled: true,
            env_off: false,
            local_server: true,
            provider: String::new(),
            endpoint: String::new(),
            port: 9931,
            answers: false,
            cpus: 2,
            program: Ok("/c/llama-server".into()),
            model: Ok("/m/q.gguf".into()),
        }
    }

    fn skip(why: Skip) -> Decision {
        Decision::Skip(why)
    }

    #[test]
    fn the_first_no_wins_in_order() {
        let launch = Launch {
            program: "/c/llama-server".into(),
            model: "/m/q.gguf".into(),
            port: 9931,
            threads: 2,
        };
        let no_program = || Err(NoProgram::NotInstalled { cache: "/c/llama-server".into() });
        let no_model = || Err(NoModel::Missing("/m/q.gguf".into()));
        #[allow(clippy::type_complexity)]
        let table: Vec<(&str, Box<dyn Fn(&mut Facts)>, Decision)> = vec![
            ("all yes", Box::new(|_| {}), Decision::Start(launch.clone())),
            (
                "another port",
                Box::new(|f| f.port = 8080),
                Decision::Start(Launch { port: 8080, ..launch }),
            ),
            (
                "disabled beats everything",
                Box::new(|f| {
                    f.enabled = false;
                    f.env_off = true;
                    f.local_server = false;
                    f.answers = true;
                }),
                skip(Skip::LlmDisabled),
            ),
            (
                "env off beats the config",
                Box::new(|f| {
                    f.env_off = true;
                    f.local_server = false;
                    f.provider = "openai".into();
                }),
                skip(Skip::EnvOff),
            ),
            (
                "local_server off",
                Box::new(|f| {
                    f.local_server = false;
                    f.provider = "openai".into();
                }),
                skip(Skip::LocalServerOff),
            ),
            (
                "a provider",
                Box::new(|f| {
                    f.provider = "ollama".into();
                    f.endpoint = "http://x".into();
                    f.answers = true;
                }),
                skip(Skip::ProviderChosen("ollama".into())),
            ),
            (
                "an endpoint",
                Box::new(|f| {
                    f.endpoint = "http://gpu:8080/v1/chat/completions".into();
                    f.answers = true;
                }),
                skip(Skip::EndpointChosen("http://gpu:8080/v1/chat/completions".into())),
            ),
            (
                "something answers, even with nothing installed",
                Box::new(move |f| {
                    f.answers = true;
                    f.program = no_program();
                }),
                skip(Skip::Answers(9931)),
            ),
            (
                "no program",
                Box::new(move |f| f.program = no_program()),
                skip(Skip::Missing { program: no_program().err(), model: None }),
            ),
            (
                "no model",
                Box::new(move |f| f.model = no_model()),
                skip(Skip::Missing { program: None, model: no_model().err() }),
            ),
            (
                "neither",
                Box::new(move |f| {
                    f.program = no_program();
                    f.model = no_model();
                }),
                skip(Skip::Missing { program: no_program().err(), model: no_model().err() }),
            ),
        ];
        for (what, change, expected) in table {
            let mut facts = yes();
            change(&mut facts);
            assert_eq!(decide(&facts), expected, "{what}: {facts:?}");
        }
    }

    #[test]
    fn each_no_is_said_with_its_fix() {
        let cache = PathBuf::from("/h/.cache/stt/llama/llama-server");
        let model = PathBuf::from("/d/models/q.gguf");
        let table = [
            (Skip::LlmDisabled, "not starting the local model: [llm].enabled is false"),
            (Skip::EnvOff, "not starting the local model: STT_RUN_LLM=0"),
            (Skip::LocalServerOff, "not starting the local model: [llm].local_server is false"),
            (
                Skip::ProviderChosen("claude".into()),
                "not starting the local model: the config chooses the provider \"claude\" \
                 ([llm].provider)",
            ),
            (
                Skip::EndpointChosen("http://gpu:8080/v1/chat/completions".into()),
                "not starting the local model: the config names the endpoint \
                 'http://gpu:8080/v1/chat/completions' ([llm].endpoint)",
            ),
            (Skip::Answers(9931), "a model server already answers on 127.0.0.1:9931; using it"),
            (
                Skip::Missing {
                    program: Some(NoProgram::NotInstalled { cache: cache.clone() }),
                    model: None,
                },
                "not starting the local model: no llama-server at \
                 '/h/.cache/stt/llama/llama-server' nor on PATH: run scripts/fetch-llm, which \
                 builds llama-server and installs the model",
            ),
            (
                Skip::Missing { program: None, model: Some(NoModel::Missing(model.clone())) },
                "not starting the local model: no model at '/d/models/q.gguf' \
                 ([llm].local_model): run scripts/fetch-llm, which builds llama-server and \
                 installs the model",
            ),
            (
                Skip::Missing {
                    program: Some(NoProgram::NotInstalled { cache }),
                    model: Some(NoModel::Missing(model)),
                },
                "not starting the local model: no llama-server at \
                 '/h/.cache/stt/llama/llama-server' nor on PATH, and no model at \
                 '/d/models/q.gguf' ([llm].local_model): run scripts/fetch-llm, which builds \
                 llama-server and installs the model",
            ),
            (
                Skip::Missing {
                    program: Some(NoProgram::Configured("/opt/llama".into())),
                    model: None,
                },
                "not starting the local model: [llm].local_server_program '/opt/llama' is not \
                 an executable file nor a program on PATH: fix [llm].local_server_program, or \
                 leave it \"\" and run scripts/fetch-llm, which builds llama-server and \
                 installs the model",
            ),
            (
                Skip::Missing { program: Some(NoProgram::Override("/x".into())), model: None },
                "not starting the local model: $STT_LLAMA_SERVER '/x' is not an executable \
                 file: run scripts/fetch-llm, which builds llama-server and installs the model",
            ),
        ];
        for (skip, expected) in table {
            assert_eq!(skip.to_string(), expected);
        }
    }

    #[test]
    fn the_arguments_serve_the_model_on_loopback_with_its_template() {
        let launch =
            Launch { program: "/l".into(), model: "/m/q.gguf".into(), port: 9931, threads: 2 };
        let args: Vec<String> =
            launch.args().into_iter().map(|a| a.into_string().unwrap()).collect();
        let expected = "-m /m/q.gguf --host 127.0.0.1 --port 9931 -c 8192 -np 2 --jinja -t 2 -tb 2 \
                        --poll 0 --cache-ram 256";
        assert_eq!(args.join(" "), expected);
    }

    #[test]
    fn the_saved_prompts_go_in_a_private_directory_under_the_cache() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        let env = Env::from_vars([("HOME", home.path().as_os_str())]);
        let [flag, dir] = slot_args(&env).unwrap();
        let dir = PathBuf::from(dir);
        assert_eq!(flag, "--slot-save-path");
        assert_eq!(dir, home.path().join(".cache/stt/llama-slots"));
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    }

    #[test]
    fn the_key_is_random_and_written_privately() {
        use std::os::unix::fs::PermissionsExt;
        let run = tempfile::tempdir().unwrap();
        let env = Env::from_vars([("XDG_RUNTIME_DIR", run.path().as_os_str())]);
        let key = new_key().unwrap();
        assert_eq!(key.len(), 64, "{key}");
        assert_ne!(new_key().unwrap(), key);
        let [flag, file] = key_args(&env, &key).unwrap();
        let file = PathBuf::from(file);
        let expected = run.path().join("llama-server.key");
        assert_eq!((flag.to_str(), file.clone()), (Some("--api-key-file"), expected));
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), format!("{key}\n"));
    }

    /// An executable file at `path`.
    fn install(path: &Path) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn the_program_is_the_configured_one_else_the_override_else_fetch_llms_else_on_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let (home, bin) = (root.join("home"), root.join("bin"));
        let cached = home.join(".cache/stt/llama/llama-server");
        let s = |p: &Path| p.to_str().unwrap().to_owned();
        let env = |extra: &[(&str, String)]| {
            let mut vars = vec![("HOME", s(&home)), ("PATH", s(&bin))];
            vars.extend(extra.iter().cloned());
            Env::from_vars(vars)
        };
        let none = Path::new("");

        // Nothing installed: says where fetch-llm would have put it.
        assert_eq!(
            find_program(none, &env(&[])),
            Err(NoProgram::NotInstalled { cache: cached.clone() })
        );
        // On PATH.
        install(&bin.join("llama-server"));
        assert_eq!(find_program(none, &env(&[])), Ok(bin.join("llama-server")));
        // fetch-llm's, under $HOME/.cache or $XDG_CACHE_HOME, comes first.
        install(&cached);
        assert_eq!(find_program(none, &env(&[])), Ok(cached.clone()));
        let xdg = root.join("xdg");
        let xdg_cached = xdg.join("stt/llama/llama-server");
        install(&xdg_cached);
        assert_eq!(find_program(none, &env(&[("XDG_CACHE_HOME", s(&xdg))])), Ok(xdg_cached));
        // $STT_LLAMA_SERVER before both; a wrong one is said, not silently passed over.
        let other = root.join("other/llama-server");
        install(&other);
        assert_eq!(find_program(none, &env(&[(ENV_PROGRAM, s(&other))])), Ok(other.clone()));
        let wrong = root.join("nothing");
        assert_eq!(
            find_program(none, &env(&[(ENV_PROGRAM, s(&wrong))])),
            Err(NoProgram::Override(wrong.clone()))
        );
        // The configured one before everything: a path, `~/…`, or a name on PATH.
        assert_eq!(find_program(&other, &env(&[(ENV_PROGRAM, s(&cached))])), Ok(other));
        assert_eq!(
            find_program(Path::new("~/.cache/stt/llama/llama-server"), &env(&[])),
            Ok(cached)
        );
        install(&bin.join("my-llama"));
        assert_eq!(find_program(Path::new("my-llama"), &env(&[])), Ok(bin.join("my-llama")));
        assert_eq!(find_program(&wrong, &env(&[])), Err(NoProgram::Configured(wrong)));
        // A file that is not executable is not a program.
        let plain = root.join("plain");
        std::fs::write(&plain, "").unwrap();
        assert_eq!(find_program(&plain, &env(&[])), Err(NoProgram::Configured(plain)));
    }

    #[test]
    fn the_model_is_found_as_the_daemons_is() {
        let dir = tempfile::tempdir().unwrap();
        let models = dir.path().join("models");
        std::fs::create_dir_all(&models).unwrap();
        std::fs::write(models.join("q.gguf"), "").unwrap();
        let env = Env::from_vars([("STT_MODELS_DIR", models.to_str().unwrap())]);
        assert_eq!(find_model(Path::new("q.gguf"), &env), Ok(models.join("q.gguf")));
        assert_eq!(find_model(&models.join("q.gguf"), &env), Ok(models.join("q.gguf")));
        assert_eq!(
            find_model(Path::new("other.gguf"), &env),
            Err(NoModel::Missing(models.join("other.gguf")))
        );
        let nowhere = Env::from_vars(Vec::<(&str, &str)>::new());
        assert!(matches!(find_model(Path::new("q.gguf"), &nowhere), Err(NoModel::Unresolved(_))));
    }

    #[test]
    fn a_listening_port_answers_and_a_closed_one_does_not() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert!(answers(port));
        drop(listener);
        assert!(!answers(port));
    }

    #[test]
    fn a_model_it_could_not_load_is_named_with_the_fix() {
        let model = Path::new("/d/models/q.gguf");
        assert_eq!(
            fix_for("E srv    load_model: failed to load model, '/d/models/q.gguf'", model)
                .as_deref(),
            Some(
                "llama-server could not load '/d/models/q.gguf': the file is damaged or cut \
                 short. Run scripts/fetch-llm, which builds llama-server and installs the \
                 model, or set [llm].local_model to another model."
            )
        );
        assert_eq!(fix_for("error: address already in use", model), None);
    }

    #[test]
    fn the_env_flag_is_off_only_at_0() {
        let llm = LlmConfig { local_port: 1, ..LlmConfig::default() };
        for (value, off) in [("0", true), ("1", false), ("", false), ("no", false)] {
            let env = Env::from_vars([(ENV_OFF, value)]);
            assert_eq!(facts(&llm, &env).env_off, off, "{ENV_OFF}={value:?}");
        }
    }
}
