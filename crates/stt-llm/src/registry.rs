//! The providers stt knows, which of them are there, and which one to use.
//!
//! Every provider has an [`Id`] and a row in one table ([`Id::spec`]): how it is reached (a
//! CLI, a keyed API, a local server), where, with which key variable, and what to tell a
//! person who wants it and does not have it. [`Registry::probe_all`] asks all of them at once
//! (CLIs: on `PATH`; keyed APIs: a key present; local servers: an HTTP answer within
//! [`LOCAL_PROBE`]), [`Registry::choose`] picks the configured one, else the first live one in the order the seed
//! gives (explicit config, signed-in CLIs, keyed APIs, local servers) or the configured
//! `priority`, and [`Registry::provider`] builds the [`Provider`] that talks to it.
//! [`Registry::explain`] turns an [`LlmError`] into text that names the fix for that provider.
//!
//! # Invariants
//!
//! A key is read from its variable when it is used and lives only in a [`Secret`]; nothing
//! here logs one. A probe never sends a prompt and never costs money: keyed APIs are not
//! called to find out whether they are there.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::cli::{self, Cli};
use crate::{Endpoint, LlmError, Provider, Secret, anthropic, openai};

/// Why an `https://` provider cannot be used by a build without TLS, and the fix.
pub const NO_TLS: &str = "this build has no TLS: `cargo build --release -p stt-assistant \
                          --features https` (scripts/install does)";

/// How long a local server may take to answer a probe, connection included.
pub const LOCAL_PROBE: Duration = Duration::from_millis(200);

/// Every provider stt can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Id {
    Claude,
    Codex,
    Gemini,
    Opencode,
    Zai,
    OpenAi,
    AnthropicApi,
    Ollama,
    LmStudio,
    LlamaCpp,
    Custom,
}

/// How a provider is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A subscription CLI, run once per turn.
    Cli,
    /// A remote API that wants a key.
    Api,
    /// A server on this machine (or one the config names).
    Local,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cli => "cli",
            Self::Api => "api",
            Self::Local => "local",
        }
    }
}

/// Which wire format an HTTP provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `POST …/chat/completions`.
    OpenAi,
    /// `POST …/v1/messages`.
    Anthropic,
}

/// How a provider is reached, with its defaults.
#[derive(Debug, Clone, Copy)]
pub enum Transport {
    Cli(Cli),
    Http {
        shape: Shape,
        /// Chat URLs tried in order; the first that answers a probe is used. Empty for
        /// `custom`, whose URL the config gives.
        urls: &'static [&'static str],
        /// The variable the key is read from by default; `None` for a server that wants none.
        key_env: Option<&'static str>,
        /// The route a probe asks, beside the chat URL's root (`/health`, `/api/tags`);
        /// `None` for the models route beside the chat route.
        probe_path: Option<&'static str>,
    },
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub kind: Kind,
    pub transport: Transport,
    /// The model asked for when the config names none; empty lets the server or CLI choose
    /// (a local server with several models: the first it lists).
    pub default_model: &'static str,
    /// Models offered when the provider has no live list.
    pub models: &'static [&'static str],
    /// What a person does to get this provider, in a few words.
    pub get_it: &'static str,
}

impl Id {
    pub const ALL: [Self; 11] = [
        Self::Claude,
        Self::Codex,
        Self::Gemini,
        Self::Opencode,
        Self::Zai,
        Self::OpenAi,
        Self::AnthropicApi,
        Self::Ollama,
        Self::LmStudio,
        Self::LlamaCpp,
        Self::Custom,
    ];

    /// The order autodetection tries: signed-in CLIs, then keyed APIs, then local servers.
    /// (An explicitly configured provider comes before all of them.)
    pub const AUTODETECT: [Self; 10] = [
        Self::Claude,
        Self::Codex,
        Self::Gemini,
        Self::Opencode,
        Self::Zai,
        Self::OpenAi,
        Self::AnthropicApi,
        Self::Ollama,
        Self::LmStudio,
        Self::LlamaCpp,
    ];

    /// The name in the config, the slash commands and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Codex => "codex",
            Self::Gemini => "gemini",
            Self::Opencode => "opencode",
            Self::Zai => "zai",
            Self::OpenAi => "openai",
            Self::AnthropicApi => "anthropic-api",
            Self::Ollama => "ollama",
            Self::LmStudio => "lmstudio",
            Self::LlamaCpp => "llamacpp",
            Self::Custom => "custom",
        }
    }

    /// The id named `name`, if there is one.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|id| id.as_str() == name.trim())
    }

    /// Every id's name, for messages that list the choices.
    pub fn names() -> String {
        Self::ALL.map(Self::as_str).join(", ")
    }

    pub fn kind(self) -> Kind {
        self.spec().kind
    }

    /// This provider's row of the table.
    pub fn spec(self) -> Spec {
        use Transport::{Cli as C, Http};
        let none: &[&str] = &[];
        match self {
            Self::Claude => Spec {
                kind: Kind::Cli,
                transport: C(Cli::Claude),
                default_model: "",
                models: &["sonnet", "opus", "haiku"],
                get_it: "install Claude Code and run `claude auth login`",
            },
            Self::Codex => Spec {
                kind: Kind::Cli,
                transport: C(Cli::Codex),
                default_model: "",
                models: none,
                get_it: "install the Codex CLI and run `codex login`",
            },
            Self::Gemini => Spec {
                kind: Kind::Cli,
                transport: C(Cli::Gemini),
                default_model: "",
                models: none,
                get_it: "install the Gemini CLI and sign in by running `gemini` once",
            },
            Self::Opencode => Spec {
                kind: Kind::Cli,
                transport: C(Cli::Opencode),
                default_model: "",
                models: none,
                get_it: "install opencode and run `opencode auth login`",
            },
            Self::Zai => Spec {
                kind: Kind::Api,
                transport: Http {
                    shape: Shape::OpenAi,
                    urls: &["https://api.z.ai/api/coding/paas/v4/chat/completions"],
                    key_env: Some("ZAI_API_KEY"),
                    probe_path: None,
                },
                default_model: "glm-4.6",
                models: &["glm-4.6", "glm-4.5-air"],
                get_it: "set ZAI_API_KEY",
            },
            Self::OpenAi => Spec {
                kind: Kind::Api,
                transport: Http {
                    shape: Shape::OpenAi,
                    urls: &["https://api.openai.com/v1/chat/completions"],
                    key_env: Some("OPENAI_API_KEY"),
                    probe_path: None,
                },
                default_model: "gpt-4o-mini",
                models: &["gpt-4o-mini", "gpt-4o", "gpt-4.1-mini"],
                get_it: "set OPENAI_API_KEY",
            },
            Self::AnthropicApi => Spec {
                kind: Kind::Api,
                transport: Http {
                    shape: Shape::Anthropic,
                    urls: &["https://api.anthropic.com/v1/messages"],
                    key_env: Some("ANTHROPIC_API_KEY"),
                    probe_path: None,
                },
                default_model: "claude-sonnet-4-5",
                models: &["claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-1"],
                get_it: "set ANTHROPIC_API_KEY",
            },
            Self::Ollama => Spec {
                kind: Kind::Local,
                transport: Http {
                    shape: Shape::OpenAi,
                    urls: &["http://127.0.0.1:11434/v1/chat/completions"],
                    key_env: None,
                    probe_path: Some("/api/tags"),
                },
                default_model: "",
                models: none,
                get_it: "start ollama (`ollama serve`) and pull a model (`ollama pull qwen2.5`)",
            },
            Self::LmStudio => Spec {
                kind: Kind::Local,
                transport: Http {
                    shape: Shape::OpenAi,
                    urls: &["http://127.0.0.1:1234/v1/chat/completions"],
                    key_env: None,
                    probe_path: None,
                },
                default_model: "",
                models: none,
                get_it: "start LM Studio's local server (port 1234)",
            },
            Self::LlamaCpp => Spec {
                kind: Kind::Local,
                transport: Http {
                    shape: Shape::OpenAi,
                    // stt's own (the one `stt-daemon up` runs), then llama-server's default.
                    urls: &[
                        "http://127.0.0.1:9931/v1/chat/completions",
                        "http://127.0.0.1:8080/v1/chat/completions",
                    ],
                    key_env: None,
                    probe_path: Some("/health"),
                },
                default_model: "",
                models: none,
                get_it: "install the local model (scripts/fetch-llm) and run `stt-daemon up`, \
                         or start llama-server yourself",
            },
            Self::Custom => Spec {
                kind: Kind::Local,
                transport: Http {
                    shape: Shape::OpenAi,
                    urls: &[],
                    key_env: None,
                    probe_path: None,
                },
                default_model: "",
                models: none,
                get_it: "start the server at [llm].endpoint, or change it",
            },
        }
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a key comes from: `env:NAME` (recommended) or the key itself.
#[derive(Clone, PartialEq, Eq)]
pub enum KeyRef {
    Env(String),
    Literal(Secret),
    /// The first line of a file that is not a `#` comment (the key `stt-daemon up` gives the
    /// llama-server it starts).
    File(PathBuf),
}

impl KeyRef {
    /// `env:NAME` or a literal key; `None` for an empty string.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        Some(match text.strip_prefix("env:") {
            Some(name) => Self::Env(name.trim().to_owned()),
            None => Self::Literal(Secret::new(text)),
        })
    }

    /// The key, read now; `None` when the variable is unset or empty.
    pub fn resolve(&self) -> Option<Secret> {
        match self {
            Self::Env(name) => std::env::var(name)
                .ok()
                .filter(|v| !v.trim().is_empty())
                .map(|v| Secret::new(v.trim())),
            Self::Literal(secret) => Some(secret.clone()),
            Self::File(path) => std::fs::read_to_string(path).ok().and_then(|text| {
                text.lines()
                    .map(str::trim)
                    .find(|line| !line.is_empty() && !line.starts_with('#'))
                    .map(Secret::new)
            }),
        }
    }

    /// How to name it in a message: the variable, never the key.
    pub fn describe(&self) -> String {
        match self {
            Self::Env(name) => name.clone(),
            Self::Literal(_) => "the key in the config file".to_owned(),
            Self::File(path) => format!("the key in {}", path.display()),
        }
    }
}

impl fmt::Debug for KeyRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Env(name) => write!(f, "env:{name}"),
            Self::Literal(_) => f.write_str("literal(…)"),
            Self::File(path) => write!(f, "file:{}", path.display()),
        }
    }
}

/// What the config says about one provider (`[llm.providers.ID]`); empty fields keep the
/// table's defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Override {
    /// The chat URL (for an HTTP provider) or the program (for a CLI).
    pub endpoint: String,
    pub key: Option<KeyRef>,
    pub model: String,
    /// Replaces the model list `/models` shows.
    pub models: Vec<String>,
}

/// What the registry is told: the `[llm]` config, resolved by the caller.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// `[llm].provider`: use this one when it is there.
    pub provider: Option<Id>,
    /// Per provider settings; `[llm].endpoint`, `key` and `model` are `custom`'s (or the
    /// named provider's) and arrive here merged by the caller.
    pub overrides: HashMap<Id, Override>,
    /// `[llm].priority`: autodetection tries these first, in this order.
    pub priority: Vec<Id>,
    /// `[llm].failover`: a turn that fails before its first word is sent once more to the
    /// next live provider.
    pub failover: bool,
    /// Chat URLs tried first for `llamacpp` (the server `stt-daemon up` runs).
    pub local_urls: Vec<String>,
    /// The key file of that server (`stt_config::dirs::llama_key_file_with`): its key goes
    /// with every request to `local_urls`, and nowhere else.
    pub local_key: Option<PathBuf>,
    pub connect_timeout: Duration,
    pub idle_timeout: Duration,
    /// Where CLIs are looked up; `None` for `$PATH`.
    pub path: Option<std::ffi::OsString>,
    /// The folder CLI turns run in (see [`cli::Client::with_workdir`]); `None`: wherever the
    /// assistant runs.
    pub cli_workdir: Option<PathBuf>,
}

/// Whether a provider can be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Live,
    /// A keyed API without its key.
    NeedsKey,
    /// Its server does not answer (or is still loading its model).
    Down,
    /// Its CLI is not on `PATH` (or `custom` has no endpoint).
    NotInstalled,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Live => "live",
            Self::NeedsKey => "needs-key",
            Self::Down => "down",
            Self::NotInstalled => "not-installed",
        }
    }
}

/// One provider as the last probe found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probed {
    pub id: Id,
    pub status: Status,
    /// Where it is: the chat URL that answered (or would be used), or the CLI's program.
    pub target: String,
    /// The model a turn would ask for (empty: the provider's choice).
    pub model: String,
    /// Why it is not live, for a person; empty when live.
    pub detail: String,
    /// A local server that answered but is still loading its model.
    pub loading: bool,
}

/// The providers and how to reach them. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Registry {
    settings: std::sync::Arc<Settings>,
    /// For probes (short timeouts set per request).
    http: reqwest::Client,
}

impl Registry {
    pub fn new(settings: Settings) -> Self {
        let http = reqwest::Client::builder()
            .connect_timeout(LOCAL_PROBE)
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        Self { settings: std::sync::Arc::new(settings), http }
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    fn overrides(&self, id: Id) -> Option<&Override> {
        self.settings.overrides.get(&id)
    }

    /// The chat URLs a provider is tried at, in order.
    pub fn urls(&self, id: Id) -> Vec<String> {
        if let Some(url) = self.overrides(id).map(|o| o.endpoint.trim()).filter(|e| !e.is_empty()) {
            return vec![url.to_owned()];
        }
        let mut urls = Vec::new();
        if id == Id::LlamaCpp {
            urls.extend(self.settings.local_urls.iter().cloned());
        }
        if let Transport::Http { urls: defaults, .. } = id.spec().transport {
            urls.extend(defaults.iter().map(|u| (*u).to_owned()));
        }
        urls.dedup();
        urls
    }

    /// Where a provider's key comes from, if it takes one.
    pub fn key(&self, id: Id) -> Option<KeyRef> {
        if let Some(key) = self.overrides(id).and_then(|o| o.key.clone()) {
            return Some(key);
        }
        match id.spec().transport {
            Transport::Http { key_env: Some(name), .. } => Some(KeyRef::Env(name.to_owned())),
            _ => None,
        }
    }

    /// The key a request to `url` of provider `id` carries: its own, or, for the local server
    /// `up` runs at one of `local_urls`, the key `up` gave it.
    fn key_for(&self, id: Id, url: &str) -> Option<Secret> {
        self.key(id).and_then(|k| k.resolve()).or_else(|| {
            let local = id == Id::LlamaCpp && self.settings.local_urls.iter().any(|u| u == url);
            let file = self.settings.local_key.clone().filter(|_| local)?;
            KeyRef::File(file).resolve()
        })
    }

    /// The model a provider is asked for: the config's, else the table's default.
    pub fn configured_model(&self, id: Id) -> String {
        self.overrides(id)
            .map(|o| o.model.trim().to_owned())
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| id.spec().default_model.to_owned())
    }

    /// The program a CLI provider runs: the configured one, or its name found on the path.
    fn program(&self, cli: Cli, id: Id) -> Option<PathBuf> {
        let configured = self.overrides(id).map(|o| o.endpoint.trim()).unwrap_or_default();
        let name = if configured.is_empty() { cli.program() } else { configured };
        find_program(name, self.settings.path.as_deref())
    }

    /// Asks every provider at once whether it is there; takes about [`LOCAL_PROBE`] at most
    /// (every check runs in parallel, and none waits longer).
    pub async fn probe_all(&self) -> Vec<Probed> {
        let mut set = tokio::task::JoinSet::new();
        for (index, id) in Id::ALL.into_iter().enumerate() {
            let registry = self.clone();
            set.spawn(async move { (index, registry.probe(id).await) });
        }
        let mut found: Vec<(usize, Probed)> = Vec::with_capacity(Id::ALL.len());
        while let Some(joined) = set.join_next().await {
            if let Ok(pair) = joined {
                found.push(pair);
            }
        }
        found.sort_by_key(|(index, _)| *index);
        found.into_iter().map(|(_, probed)| probed).collect()
    }

    /// Asks one provider whether it is there.
    pub async fn probe(&self, id: Id) -> Probed {
        let model = self.configured_model(id);
        let probed = |status, target: String, detail: String| Probed {
            id,
            status,
            target,
            model: model.clone(),
            detail,
            loading: false,
        };
        match id.spec().transport {
            Transport::Cli(cli) => match self.program(cli, id) {
                Some(path) => probed(Status::Live, path.display().to_string(), String::new()),
                None => probed(
                    Status::NotInstalled,
                    cli.program().to_owned(),
                    format!("`{}` is not on PATH", cli.program()),
                ),
            },
            Transport::Http { probe_path, .. } => {
                let urls = self.urls(id);
                let Some(first) = urls.first().cloned() else {
                    return probed(
                        Status::NotInstalled,
                        String::new(),
                        "no endpoint is configured".to_owned(),
                    );
                };
                // Chosen, an https provider could only fail in a build without TLS. (Without
                // its key it needs that first.)
                let no_tls = first.starts_with("https://") && !cfg!(feature = "https");
                if id.kind() == Kind::Api
                    && self.overrides(id).is_none_or(|o| o.endpoint.is_empty())
                {
                    // A keyed API is not called to find out: a key present is live.
                    let key = self.key(id);
                    return match key.as_ref().and_then(KeyRef::resolve) {
                        Some(_) if no_tls => probed(Status::NotInstalled, first, NO_TLS.to_owned()),
                        Some(_) => probed(Status::Live, first, String::new()),
                        None => probed(
                            Status::NeedsKey,
                            first,
                            format!(
                                "set {}",
                                key.map_or_else(|| "its key".to_owned(), |k| k.describe())
                            ),
                        ),
                    };
                }
                if no_tls {
                    return probed(Status::NotInstalled, first, NO_TLS.to_owned());
                }
                self.probe_http(id, &urls, probe_path, model.clone()).await
            }
        }
    }

    /// Probes a server at each of `urls` at once; the first (in order) that answers wins.
    async fn probe_http(
        &self,
        id: Id,
        urls: &[String],
        probe_path: Option<&'static str>,
        model: String,
    ) -> Probed {
        let mut set = tokio::task::JoinSet::new();
        for (index, url) in urls.iter().enumerate() {
            let http = self.http.clone();
            let url = url.clone();
            let key = self.key_for(id, &url);
            set.spawn(async move {
                let outcome = probe_url(&http, &url, probe_path, key.as_ref()).await;
                (index, url, outcome)
            });
        }
        let mut answers = Vec::new();
        while let Some(joined) = set.join_next().await {
            if let Ok(answer) = joined {
                answers.push(answer);
            }
        }
        answers.sort_by_key(|(index, ..)| *index);
        let live = answers.iter().find(|(_, _, outcome)| matches!(outcome, Answer::Up { .. }));
        let loading = answers.iter().find(|(_, _, outcome)| matches!(outcome, Answer::Loading));
        match (live, loading) {
            (Some((_, url, Answer::Up { models })), _) => {
                let model = if model.is_empty() && id == Id::Ollama {
                    // ollama serves several models and wants one named.
                    models.first().cloned().unwrap_or_default()
                } else {
                    model
                };
                Probed {
                    id,
                    status: Status::Live,
                    target: url.clone(),
                    model,
                    detail: String::new(),
                    loading: false,
                }
            }
            (_, Some((_, url, _))) => Probed {
                id,
                status: Status::Down,
                target: url.clone(),
                model,
                detail: "loading its model".to_owned(),
                loading: true,
            },
            _ => {
                let why = answers
                    .iter()
                    .find_map(|(_, _, outcome)| match outcome {
                        Answer::Down(why) => Some(why.clone()),
                        _ => None,
                    })
                    .unwrap_or_default();
                Probed {
                    id,
                    status: Status::Down,
                    target: urls.first().cloned().unwrap_or_default(),
                    model,
                    detail: why,
                    loading: false,
                }
            }
        }
    }

    /// The provider the config names: `[llm].provider`, or `custom` when only an endpoint
    /// is given.
    pub fn configured(&self) -> Option<Id> {
        self.settings.provider.or_else(|| (!self.urls(Id::Custom).is_empty()).then_some(Id::Custom))
    }

    /// The provider to use. A configured one is used whether it answers or not: a person who
    /// named a provider is told why it fails, never moved to another one (which may send
    /// their words somewhere they did not choose). Otherwise the first live one in the
    /// `priority` order, then the autodetect order; `None` when nothing is live.
    /// A server still loading its model counts as there: it soon will be.
    pub fn choose(&self, probed: &[Probed]) -> Option<Id> {
        self.configured().or_else(|| self.in_order(probed, true).into_iter().next())
    }

    /// The live providers a turn that failed on `failed` may be retried on, in the order
    /// autodetection prefers them.
    pub fn fallbacks(&self, probed: &[Probed], failed: Id) -> Vec<Id> {
        self.in_order(probed, false).into_iter().filter(|id| *id != failed).collect()
    }

    /// Every live provider (and, with `loading`, every server still loading its model), in
    /// the order autodetection prefers them.
    fn in_order(&self, probed: &[Probed], loading: bool) -> Vec<Id> {
        let live = |id: Id| {
            probed
                .iter()
                .any(|p| p.id == id && (p.status == Status::Live || (loading && p.loading)))
        };
        let order = self.configured().into_iter().chain(self.settings.priority.iter().copied());
        let mut seen = Vec::new();
        for id in order.chain(Id::AUTODETECT) {
            if !seen.contains(&id) && live(id) {
                seen.push(id);
            }
        }
        seen
    }

    /// The provider `id` as `probed` found it, asking for `model` (empty: the probe's).
    pub fn provider(&self, probed: &Probed, model: &str) -> Result<Provider, LlmError> {
        let id = probed.id;
        let model = if model.trim().is_empty() { probed.model.clone() } else { model.to_owned() };
        match id.spec().transport {
            Transport::Cli(cli) => {
                let program = self
                    .program(cli, id)
                    .ok_or_else(|| LlmError::NotInstalled { program: cli.program().to_owned() })?;
                let client = cli::Client::new(cli, program, &model, self.settings.idle_timeout);
                Ok(Provider::Cli(match &self.settings.cli_workdir {
                    Some(dir) => client.with_workdir(dir.clone()),
                    None => client,
                }))
            }
            Transport::Http { shape, .. } => {
                let url = if probed.target.is_empty() {
                    self.urls(id).into_iter().next().unwrap_or_default()
                } else {
                    probed.target.clone()
                };
                let api_key = self.key_for(id, &url);
                let endpoint = Endpoint {
                    url,
                    model,
                    api_key,
                    connect_timeout: self.settings.connect_timeout,
                    idle_timeout: self.settings.idle_timeout,
                    slots: id == Id::LlamaCpp,
                };
                match shape {
                    Shape::OpenAi => openai::Client::new(endpoint).map(Provider::OpenAi),
                    Shape::Anthropic => anthropic::Client::new(endpoint).map(Provider::Anthropic),
                }
            }
        }
    }

    /// The models `/models` offers for a provider: the config's list, else the live list,
    /// else the table's.
    pub async fn models(&self, probed: &Probed) -> Result<Vec<String>, LlmError> {
        if let Some(list) = self.overrides(probed.id).map(|o| &o.models).filter(|l| !l.is_empty()) {
            return Ok(list.clone());
        }
        let shipped = || probed.id.spec().models.iter().map(|m| (*m).to_owned()).collect();
        if probed.id.kind() == Kind::Api && probed.status != Status::Live {
            return Ok(shipped());
        }
        let live = self.provider(probed, "")?.models().await?;
        Ok(if live.is_empty() { shipped() } else { live })
    }

    /// `error`, from provider `id`, in words that name the fix.
    pub fn explain(&self, id: Id, model: &str, error: &LlmError) -> String {
        let fix = match error {
            LlmError::Unreachable { .. } => match id.kind() {
                Kind::Local => format!("{}; or `/provider` to choose another", id.spec().get_it),
                _ => "check the network, or `/provider` to choose another".to_owned(),
            },
            // It is there but slow: installing it is no fix.
            LlmError::Timeout { .. } => match id.kind() {
                Kind::Local => "the machine may be busy with other work: try again when it is \
                    quieter, or `/provider` to choose another"
                    .to_owned(),
                _ => "check the network, or `/provider` to choose another".to_owned(),
            },
            LlmError::Status { status: 401 | 403, .. } => {
                let key = self.key(id).map_or_else(|| "the key".to_owned(), |k| k.describe());
                format!("{id} refused the key: set {key} to a valid key (see docs/PROVIDERS.md)")
            }
            LlmError::Status { status: 404, body, .. }
                if body.to_lowercase().contains("model") || !model.is_empty() =>
            {
                let pull = if id == Id::Ollama {
                    format!(" (ollama: `ollama pull {model}`)")
                } else {
                    String::new()
                };
                format!(
                    "{id} has no model '{model}': `/models` lists what it has, `/model NAME` \
                     picks one{pull}"
                )
            }
            LlmError::Status { status: 429, .. } => {
                "rate limited or out of quota: wait, or `/provider` to choose another".to_owned()
            }
            LlmError::Status { status: 500.., .. } => {
                "the server failed: try again, or `/provider` to choose another".to_owned()
            }
            LlmError::NotInstalled { .. } => {
                format!("{}; or `/provider` to choose another", id.spec().get_it)
            }
            LlmError::NotLoggedIn { program, .. } => {
                format!("sign in ({}), then `/provider {id}`", login_command(program))
            }
            LlmError::Interrupted { .. } => "the partial answer is kept".to_owned(),
            LlmError::Status { .. }
            | LlmError::Malformed { .. }
            | LlmError::NoTls { .. }
            | LlmError::Cli { .. } => String::new(),
        };
        if fix.is_empty() { format!("{id}: {error}") } else { format!("{id}: {error} — {fix}") }
    }

    /// Why the provider `probed` describes cannot be used now, and the fix.
    pub fn explain_down(&self, probed: &Probed) -> String {
        let what = if probed.detail.is_empty() { probed.status.as_str() } else { &probed.detail };
        format!(
            "{}: {what} — {}; or `/provider` to choose another",
            probed.id,
            probed.id.spec().get_it
        )
    }

    /// The text for "no provider is live": what was tried and how to get one.
    pub fn none_live(&self, probed: &[Probed]) -> String {
        let mut lines = vec!["No model is available. Tried:".to_owned()];
        for p in probed {
            if p.id == Id::Custom && p.status == Status::NotInstalled {
                continue;
            }
            let why = if p.detail.is_empty() { p.status.as_str() } else { &p.detail };
            lines.push(format!("  {:<13} {:<13} {}", p.id, p.status.as_str(), why));
        }
        lines.push(
            "Get one: install the local model (scripts/fetch-llm) and run `stt-daemon up`; \
             start ollama; set OPENAI_API_KEY or ANTHROPIC_API_KEY; sign in to a CLI \
             (claude, codex, gemini, opencode); or set [llm].endpoint. See docs/PROVIDERS.md."
                .to_owned(),
        );
        lines.join("\n")
    }
}

/// The command that signs a person in to a CLI.
fn login_command(program: &str) -> &'static str {
    let name = Path::new(program).file_name().and_then(|n| n.to_str()).unwrap_or(program);
    match name {
        "claude" => "`claude auth login`",
        "codex" => "`codex login`",
        "gemini" => "run `gemini` once",
        "opencode" => "`opencode auth login`",
        _ => "its login command",
    }
}

/// What a probe of one URL found.
#[derive(Debug)]
enum Answer {
    /// It answered; `models` when it listed them.
    Up {
        models: Vec<String>,
    },
    /// llama-server's `/health` said 503: up, still loading.
    Loading,
    Down(String),
}

async fn probe_url(
    http: &reqwest::Client,
    chat_url: &str,
    probe_path: Option<&str>,
    key: Option<&Secret>,
) -> Answer {
    let url = match probe_path {
        Some(path) => format!("{}{path}", origin(chat_url)),
        None => openai::models_url(chat_url),
    };
    let mut request = http.get(&url).timeout(LOCAL_PROBE);
    if let Some(key) = key {
        request = request.bearer_auth(key.expose());
    }
    let started = Instant::now();
    match request.send().await {
        Ok(response) if response.status().as_u16() == 503 && probe_path == Some("/health") => {
            Answer::Loading
        }
        Ok(response) => {
            let remaining = LOCAL_PROBE.saturating_sub(started.elapsed());
            let body =
                tokio::time::timeout(remaining, response.text()).await.ok().and_then(Result::ok);
            Answer::Up { models: body.as_deref().map(model_names).unwrap_or_default() }
        }
        Err(e) if e.is_timeout() => Answer::Down(format!(
            "no answer from {} within {} ms",
            host(chat_url),
            LOCAL_PROBE.as_millis()
        )),
        Err(_) => Answer::Down(format!("nothing answers at {}", host(chat_url))),
    }
}

/// Model names in a `/models` (`data[].id`) or ollama `/api/tags` (`models[].name`) body.
fn model_names(body: &str) -> Vec<String> {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(body) else { return Vec::new() };
    let list = |key: &str, field: &str| -> Vec<String> {
        value[key]
            .as_array()
            .map(|items| {
                items.iter().filter_map(|m| m[field].as_str().map(str::to_owned)).collect()
            })
            .unwrap_or_default()
    };
    let mut names = list("data", "id");
    if names.is_empty() {
        names = list("models", "name");
    }
    names
}

/// `scheme://host:port` of a URL.
fn origin(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(slash) => &url[..after_scheme + slash],
        None => url,
    }
}

/// `host:port` of a URL, for messages and the TUI's header.
pub fn host(url: &str) -> &str {
    let origin = origin(url);
    origin.find("://").map_or(origin, |i| &origin[i + 3..])
}

/// `name` as a path, or found in the directories of `path` (`$PATH` when `None`), if it is
/// an executable file.
pub fn find_program(name: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    match path {
        Some(path) => stt_os::find_program(Path::new(name), Some(path)),
        None => stt_os::find_on_path(Path::new(name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry(settings: Settings) -> Registry {
        Registry::new(Settings {
            connect_timeout: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(1),
            ..settings
        })
    }

    fn probed(id: Id, status: Status) -> Probed {
        Probed {
            id,
            status,
            target: String::new(),
            model: String::new(),
            detail: String::new(),
            loading: false,
        }
    }

    #[test]
    fn every_id_has_a_unique_name_that_parses_back() {
        for id in Id::ALL {
            assert_eq!(Id::parse(id.as_str()), Some(id));
        }
        let mut names: Vec<_> = Id::ALL.map(Id::as_str).to_vec();
        names.dedup();
        assert_eq!(names.len(), Id::ALL.len());
        assert_eq!(Id::parse("chatgpt"), None);
    }

    #[test]
    fn the_choice_is_the_config_then_priority_then_clis_keys_and_local() {
        let all_live: Vec<Probed> = Id::ALL.map(|id| probed(id, Status::Live)).to_vec();
        let cases: [(Settings, &[Id], Option<Id>); 6] = [
            (Settings::default(), &[Id::Ollama, Id::OpenAi, Id::Codex], Some(Id::Codex)),
            (Settings::default(), &[Id::LlamaCpp, Id::Ollama], Some(Id::Ollama)),
            (Settings::default(), &[], None),
            (
                Settings { provider: Some(Id::Ollama), ..Settings::default() },
                &[Id::Ollama, Id::Claude],
                Some(Id::Ollama),
            ),
            // The configured one is down: still it, so its failure is what a person sees.
            (
                Settings { provider: Some(Id::Ollama), ..Settings::default() },
                &[Id::Claude],
                Some(Id::Ollama),
            ),
            (
                Settings { priority: vec![Id::LlamaCpp, Id::Claude], ..Settings::default() },
                &[Id::Claude, Id::LlamaCpp],
                Some(Id::LlamaCpp),
            ),
        ];
        for (settings, live, expected) in cases {
            let found: Vec<Probed> = all_live
                .iter()
                .map(|p| {
                    let status = if live.contains(&p.id) { Status::Live } else { Status::Down };
                    Probed { status, ..p.clone() }
                })
                .collect();
            let r = registry(settings.clone());
            assert_eq!(r.choose(&found), expected, "{settings:?} with {live:?}");
        }
    }

    #[tokio::test]
    async fn an_https_provider_is_not_there_without_tls_whatever_its_key() {
        let overrides = HashMap::from([(
            Id::OpenAi,
            Override { key: Some(KeyRef::Literal(Secret::new("sk"))), ..Override::default() },
        )]);
        let probed =
            registry(Settings { overrides, ..Settings::default() }).probe(Id::OpenAi).await;
        if cfg!(feature = "https") {
            assert_eq!(probed.status, Status::Live, "{probed:?}");
        } else {
            assert_eq!(probed.status, Status::NotInstalled, "{probed:?}");
            assert!(probed.detail.contains("--features https"), "{probed:?}");
        }
    }

    #[test]
    fn a_server_loading_its_model_is_chosen_but_never_a_fallback() {
        let r = registry(Settings::default());
        let loading = Probed { loading: true, ..probed(Id::LlamaCpp, Status::Down) };
        let found = [probed(Id::Claude, Status::NotInstalled), loading];
        assert_eq!(r.choose(&found), Some(Id::LlamaCpp));
        assert!(r.fallbacks(&found, Id::Custom).is_empty());
    }

    #[test]
    fn a_configured_endpoint_is_custom_and_comes_first() {
        let overrides = HashMap::from([(
            Id::Custom,
            Override { endpoint: "http://h:1/v1/chat/completions".into(), ..Override::default() },
        )]);
        let r = registry(Settings { overrides, ..Settings::default() });
        let found = [probed(Id::Claude, Status::Live), probed(Id::Custom, Status::Down)];
        assert_eq!(r.choose(&found), Some(Id::Custom));
        assert_eq!(r.fallbacks(&found, Id::Custom), [Id::Claude]);
    }

    #[test]
    fn keys_come_from_the_variable_the_config_names_and_never_show() {
        assert_eq!(KeyRef::parse(""), None);
        assert_eq!(KeyRef::parse(" env:MY_KEY "), Some(KeyRef::Env("MY_KEY".into())));
        let literal = KeyRef::parse("sk-secret-123").unwrap();
        assert!(!format!("{literal:?}").contains("sk-secret"));
        assert_eq!(literal.describe(), "the key in the config file");
        assert_eq!(literal.resolve().unwrap().expose(), "sk-secret-123");
        assert!(!format!("{:?}", literal.resolve()).contains("sk-secret"));
    }

    #[test]
    fn the_key_up_gave_its_server_goes_to_that_server_alone() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("llama-server.key");
        let local = "http://127.0.0.1:5555/v1/chat/completions";
        let r = registry(Settings {
            local_urls: vec![local.into()],
            local_key: Some(file.clone()),
            ..Settings::default()
        });
        assert!(r.key_for(Id::LlamaCpp, local).is_none(), "no file yet: no key");
        std::fs::write(&file, "# up's key\nabc123\n").unwrap();
        assert_eq!(
            r.key_for(Id::LlamaCpp, local).map(|k| k.expose().to_owned()),
            Some("abc123".into())
        );
        assert!(r.key_for(Id::LlamaCpp, "http://127.0.0.1:8080/v1/chat/completions").is_none());
        assert!(r.key_for(Id::Ollama, local).is_none(), "another provider never gets it");
        assert_eq!(
            KeyRef::File(file).describe(),
            format!("the key in {}", dir.path().join("llama-server.key").display())
        );
    }

    #[test]
    fn urls_put_the_supervised_server_first_and_an_override_alone() {
        let r = registry(Settings {
            local_urls: vec!["http://127.0.0.1:5555/v1/chat/completions".into()],
            local_key: None,
            ..Settings::default()
        });
        assert_eq!(
            r.urls(Id::LlamaCpp),
            [
                "http://127.0.0.1:5555/v1/chat/completions",
                "http://127.0.0.1:9931/v1/chat/completions",
                "http://127.0.0.1:8080/v1/chat/completions"
            ]
        );
        assert!(r.urls(Id::Custom).is_empty());
        let overrides = HashMap::from([(
            Id::Ollama,
            Override {
                endpoint: "http://gpu-box:11434/v1/chat/completions".into(),
                ..Override::default()
            },
        )]);
        let r = registry(Settings { overrides, ..Settings::default() });
        assert_eq!(r.urls(Id::Ollama), ["http://gpu-box:11434/v1/chat/completions"]);
    }

    #[test]
    fn hosts_and_origins() {
        assert_eq!(host("http://127.0.0.1:9931/v1/chat/completions"), "127.0.0.1:9931");
        assert_eq!(host("https://api.openai.com/v1/chat/completions"), "api.openai.com");
        assert_eq!(origin("http://h:1/v1/x"), "http://h:1");
        assert_eq!(origin("http://h:1"), "http://h:1");
    }

    #[test]
    fn model_lists_read_both_shapes() {
        assert_eq!(model_names(r#"{"data":[{"id":"a"},{"id":"b"}]}"#), ["a", "b"]);
        assert_eq!(model_names(r#"{"models":[{"name":"qwen2.5:0.5b"}]}"#), ["qwen2.5:0.5b"]);
        assert!(model_names("not json").is_empty());
    }

    #[test]
    fn explanations_name_the_fix() {
        let r = registry(Settings::default());
        let cases = [
            (
                Id::OpenAi,
                LlmError::Status { url: "u".into(), status: 401, body: "bad key".into() },
                "set OPENAI_API_KEY",
            ),
            (
                Id::Ollama,
                LlmError::Unreachable {
                    url: "http://127.0.0.1:11434".into(),
                    why: "refused".into(),
                },
                "ollama serve",
            ),
            (
                Id::Ollama,
                LlmError::Status {
                    url: "u".into(),
                    status: 404,
                    body: "model 'x' not found".into(),
                },
                "ollama pull x",
            ),
            (
                Id::Claude,
                LlmError::NotLoggedIn {
                    program: "/usr/bin/claude".into(),
                    why: "Please run /login".into(),
                },
                "claude auth login",
            ),
            (Id::Codex, LlmError::NotInstalled { program: "codex".into() }, "codex login"),
            (
                Id::OpenAi,
                LlmError::Status { url: "u".into(), status: 429, body: "slow down".into() },
                "slow down",
            ),
            // There, but slow: the machine is busy; installing it again is no fix.
            (
                Id::LlamaCpp,
                LlmError::Timeout { url: "u".into(), seconds: 120 },
                "may be busy with other work",
            ),
        ];
        for (id, error, needle) in cases {
            let text = r.explain(id, "x", &error);
            assert!(text.contains(needle), "{text:?} lacks {needle:?}");
        }
        let slow = r.explain(Id::LlamaCpp, "", &LlmError::Timeout { url: "u".into(), seconds: 1 });
        assert!(!slow.contains("fetch-llm"), "{slow}");
    }

    #[test]
    fn programs_are_found_on_the_given_path_only_when_executable() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("claude");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(dir.path().join("codex"), "").unwrap();
        let path = Some(dir.path().as_os_str());
        assert_eq!(find_program("claude", path), Some(exe));
        assert_eq!(find_program("codex", path), None);
        assert_eq!(find_program("gemini", path), None);
    }
}
