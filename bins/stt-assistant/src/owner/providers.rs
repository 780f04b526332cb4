//! The owner's providers: which one jobs use, whether it answers, when to look again, and
//! the local model's warm cache. [`Providers`] decides, purely, from what a probe found and
//! what the loop tells it (table-tested below); the loop carries out what it decides
//! (installs the provider, warms the cache, probes, tells viewers).

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use stt_llm::Provider;
use stt_llm::registry::{Id, Probed, Registry, Status as ProviderStatus};
use stt_proto::{ErrorCode, ErrorMsg};

use super::{Helped, Owner};
use crate::lane::Sink;
use crate::llm;
use crate::recur::Recurring;

/// How soon the first probe again comes while no provider is there.
const FIRST_REPROBE: Duration = Duration::from_secs(2);
/// How soon a probe comes again while the model loads.
const LOADING_REPROBE: Duration = Duration::from_millis(500);
/// The slowest the probes made while no provider is there get (then the periodic one).
const LAST_REPROBE: Duration = Duration::from_secs(16);

/// What the loop knows of the providers, and decides from it.
#[derive(Debug)]
pub struct Providers {
    /// What the last probe found, every provider.
    found: Vec<Probed>,
    /// Whether a probe has come back (jobs wait for the first: it chooses the provider).
    probed: bool,
    /// Whether the provider in use answered the last probe or request; `None` before the
    /// first.
    reachable: Option<bool>,
    /// How soon to look again while no provider is there.
    reprobe_after: Duration,
    /// The probe [`Owner::probe_soon`] makes: one on its way at most.
    reprobe: Recurring,
    /// A job found no provider: whether it waits for a probe made for it, or has had one.
    look: Look,
    /// Whether the local model's prompt cache holds the command prefix.
    warmth: Warmth,
}

/// A job that finds no provider, and the probe made for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Look {
    /// No job is waiting for a probe.
    Idle,
    /// A probe is on its way; the job waits for it.
    Probing,
    /// The probe came back: the next job runs with what it found.
    Looked,
}

/// Whether the local model's command slot holds the command prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Warmth {
    /// Not yet (or the server went away since).
    Cold,
    /// The warm-up request is running; jobs wait for it.
    Warming,
    /// Done (or failed: then the first command reads the prefix itself).
    Warm,
}

/// What the loop knows besides the probe, when one comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Known {
    /// The provider in use (with a client made for it).
    pub current: Option<Id>,
    /// The one `[llm].provider` names.
    pub configured: Option<Id>,
    /// The one a person chose (configured, or the session's, when it is live).
    pub preferred: Option<Id>,
    /// The registry's own choice among those found.
    pub chosen: Option<Id>,
}

/// What a probe asks of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// The provider jobs are to use.
    pub choice: Option<Id>,
    /// Install `choice` (it changed, or this is the first probe).
    pub install: bool,
    /// Warm the local model's cache now.
    pub warm: bool,
    /// The chosen provider answers.
    pub usable: bool,
    /// It is loading its model (on its way to usable: nobody needs an error).
    pub loading: bool,
    /// Tell viewers it became unusable, with the fix (once per change).
    pub down: bool,
    /// It answers again after it did not.
    pub back: bool,
}

/// What a job that wants to start may do, as far as the providers go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Go {
    /// Start.
    Start,
    /// Wait (for the first probe, a model loading or warming, or a probe made for it).
    Wait,
    /// Probe now for the job that found no provider, and wait for it.
    ProbeFirst,
}

impl Providers {
    pub fn new() -> Self {
        Providers {
            found: Vec::new(),
            probed: false,
            reachable: None,
            reprobe_after: FIRST_REPROBE,
            reprobe: Recurring::default(),
            look: Look::Idle,
            warmth: Warmth::Cold,
        }
    }

    /// What the last probe found.
    pub fn found(&self) -> &[Probed] {
        &self.found
    }

    /// Whether the provider in use answered the last probe or request.
    pub fn reachable(&self) -> Option<bool> {
        self.reachable
    }

    /// A request of a job said whether the model answered.
    pub fn answered(&mut self, reachable: bool) {
        self.reachable = Some(reachable);
    }

    /// Takes in what a probe found: the provider to use, and what the loop is to do.
    pub fn probe(&mut self, found: Vec<Probed>, known: Known) -> Decision {
        let first = !self.probed;
        self.probed = true;
        if self.look == Look::Probing {
            self.look = Look::Looked;
        }
        let live = |id: Id| found.iter().any(|p| p.id == id && p.status == ProviderStatus::Live);
        let choice = match known.current {
            // A provider in use that is still there stays: no switching mid-conversation.
            Some(id) if live(id) || known.configured == Some(id) => Some(id),
            _ => known.preferred.or(known.chosen),
        };
        let loading =
            choice.and_then(|id| found.iter().find(|p| p.id == id)).is_some_and(|p| p.loading);
        let usable = choice.is_some_and(live);
        // A server that went away comes back with an empty cache.
        if !usable || choice != known.current {
            self.warmth = Warmth::Cold;
        }
        let warm =
            self.warmth == Warmth::Cold && usable && !loading && choice == Some(Id::LlamaCpp);
        if warm {
            self.warmth = Warmth::Warming;
        }
        let before = self.reachable.replace(usable);
        self.found = found;
        Decision {
            choice,
            install: choice != known.current || first,
            warm,
            usable,
            loading,
            down: !usable && !loading && before != Some(false),
            back: usable && before == Some(false),
        }
    }

    /// The warm-up request is over (done or failed).
    pub fn warmed(&mut self) {
        if self.warmth == Warmth::Warming {
            self.warmth = Warmth::Warm;
        }
    }

    /// Whether `active`, the provider in use, is loading its model or reading the command
    /// prefix into its cache (jobs wait for both: a command sent meanwhile would wait inside
    /// the server all the same).
    pub fn loading(&self, active: Option<Id>) -> bool {
        self.warmth == Warmth::Warming
            || active.is_some_and(|id| self.found.iter().any(|p| p.id == id && p.loading))
    }

    /// After a probe: how soon to look again, if before the periodic probe. Soon while the
    /// model loads (the jobs waiting, and the person, want to know when it is up); while
    /// there is no provider, 2, 4, 8, 16 s (a local model `stt-daemon up` starts beside us
    /// may be a moment from listening, and a person may be starting one).
    pub fn next_look(&mut self, loading: bool, has_client: bool) -> Option<Duration> {
        if loading {
            Some(LOADING_REPROBE)
        } else if !has_client {
            let delay = self.reprobe_after;
            self.reprobe_after = (delay * 2).min(LAST_REPROBE);
            Some(delay)
        } else {
            self.reprobe_after = FIRST_REPROBE;
            None
        }
    }

    /// Whether a probe for [`Self::next_look`] may go out now (one at a time); it is then
    /// on its way until [`Self::reprobed`].
    pub fn may_reprobe(&mut self) -> bool {
        self.reprobe.start()
    }

    pub fn reprobed(&mut self) {
        self.reprobe.done();
    }

    /// Whether a job may start: not before the first probe, nor while the model loads or
    /// warms; and a job that finds no provider (`has_client` false, `waiting` jobs) has a
    /// probe made for it first, so that a server started a moment ago is used now rather
    /// than at the next probe (up to 16 s away).
    pub fn go(&mut self, active: Option<Id>, has_client: bool, waiting: bool) -> Go {
        if !self.probed || self.loading(active) {
            return Go::Wait;
        }
        if !has_client && waiting {
            match self.look {
                Look::Probing => return Go::Wait,
                Look::Idle => {
                    self.look = Look::Probing;
                    return Go::ProbeFirst;
                }
                Look::Looked => self.look = Look::Idle,
            }
        } else if self.look == Look::Looked {
            // The probe found one: the next job that finds none looks again.
            self.look = Look::Idle;
        }
        Go::Start
    }
}

impl Owner {
    /// The provider in use.
    pub(super) fn active(&self) -> Option<Id> {
        self.jobs
            .env
            .providers
            .as_ref()
            .map(|(_, id)| *id)
            .filter(|_| self.jobs.env.client.is_some())
    }

    /// With `[llm].failover`, the provider a job's request goes to when the one in use fails
    /// before its first word: the next live one (that runs tools, for a job that calls them).
    pub(super) fn fallback(&self, tools: bool) -> Option<(Id, Provider)> {
        let registry = self.registry.as_ref().filter(|r| r.settings().failover)?;
        registry.fallbacks(self.providers.found(), self.active()?).into_iter().find_map(|id| {
            let probed = self.providers.found().iter().find(|p| p.id == id)?;
            let provider = registry.provider(probed, "").ok()?;
            (!tools || provider.supports_tools()).then_some((id, provider))
        })
    }

    /// Why a command cannot run on the provider in use (a chat-only CLI), naming one that
    /// can; `None` when it can, or when there is no provider (the job says so).
    pub(super) fn chat_only(&self) -> Option<ErrorMsg> {
        let client = self.jobs.env.client.as_ref()?;
        if client.supports_tools() {
            return None;
        }
        let name = self.active().map_or_else(String::new, |id| id.to_string());
        let able = self.registry.as_ref().and_then(|registry| {
            registry
                .fallbacks(self.providers.found(), self.active()?)
                .into_iter()
                .find(|id| !matches!(id.spec().transport, stt_llm::registry::Transport::Cli(_)))
        });
        let fix = match able {
            Some(id) => format!("`/provider {id}` switches to one that can"),
            None => "none that can is running: start the local model (`stt-daemon up`) or \
                     ollama, or set an API key (docs/PROVIDERS.md)"
                .to_owned(),
        };
        Some(ErrorMsg::new(
            ErrorCode::NoExecutor,
            format!(
                "{name} is a chat provider: it runs its own agent, not stt's tools, so it cannot \
                 run commands; {fix}"
            ),
        ))
    }

    /// Takes in what a probe of every provider found: chooses the provider on the first (or
    /// when the one in use went away and it was chosen automatically), and reports becoming
    /// unusable to viewers with the fix, once per change.
    pub(super) fn on_providers(&mut self, found: Vec<Probed>) {
        let Some(registry) = self.registry.clone() else { return };
        // The session a new provider publishes must already say whether it is loading (or
        // warming up).
        let was_loading = self.model_loading();
        let current = self.active();
        let known = Known {
            current,
            configured: registry.configured(),
            preferred: self.preferred(&registry, &found),
            chosen: registry.choose(&found),
        };
        let decision = self.providers.probe(found, known);
        let choice = decision.choice;
        if decision.install {
            let found = self.providers.found().to_vec();
            self.use_provider(&registry, choice, &found, current);
        }
        if decision.warm {
            self.warm_up();
        }
        if decision.loading {
            tracing::debug!(provider = ?choice, "the model is loading");
        } else if decision.down {
            let probed = choice.and_then(|id| self.providers.found().iter().find(|p| p.id == id));
            let message = match probed {
                Some(probed) => registry.explain_down(probed),
                None => registry.none_live(self.providers.found()),
            };
            self.error(ErrorCode::LlmError, message);
        } else if decision.back {
            tracing::info!(provider = ?choice, "the model answers again");
        } else if decision.usable {
            tracing::debug!(provider = ?choice, "probe: the model answers");
        } else {
            tracing::debug!(provider = ?choice, "probe: the model still does not answer");
        }
        let loading = self.model_loading();
        if let Some(delay) = self.providers.next_look(loading, self.jobs.env.client.is_some()) {
            self.probe_soon(delay);
        }
        if was_loading != loading {
            self.publish_session();
        }
    }

    /// Whether the provider in use answers but is still loading its model, or reading the
    /// command prefix into its cache.
    pub(super) fn model_loading(&self) -> bool {
        self.providers.loading(self.active())
    }

    /// Once the local model (llama-server) answers with its model loaded, has it read the
    /// command prefix (the system prompt and the tool list every command starts with) into
    /// its command slot, so that the first command costs what every later one does. One
    /// request, `max_tokens` 1; jobs wait for it ([`Providers::loading`]).
    fn warm_up(&mut self) {
        let Some(client) = self.jobs.env.client.clone() else {
            self.providers.warmed();
            return;
        };
        let env = self.jobs.env.clone();
        // Where `up` has llama-server save and restore slots (none without a home).
        let dir = stt_config::dirs::llama_slots_dir_with(&stt_config::Env::from_process()).ok();
        self.help(async move {
            let started = tokio::time::Instant::now();
            let ms = || started.elapsed().as_millis();
            match llm::command::warm_saved(&env, &client, dir.as_deref()).await {
                Ok(llm::command::Warmed::Restored { tokens }) => tracing::info!(
                    tokens,
                    ms = ms(),
                    "the local model has the command prompt in its cache (restored)"
                ),
                Ok(llm::command::Warmed::Read { usage, saved }) => tracing::info!(
                    prompt_tokens = usage.prompt_tokens,
                    saved,
                    ms = ms(),
                    "the local model has the command prompt in its cache"
                ),
                Err(e) => tracing::warn!("warming the local model's prompt cache failed: {e}"),
            }
            Helped::Warmed
        });
    }

    /// Probes every provider now, for a job that found none; what it finds comes as
    /// [`Helped::Providers`], like the periodic probe's.
    pub(super) fn probe_now(&mut self) {
        let Some(registry) = self.registry.clone() else { return };
        self.help(async move { Helped::Providers(registry.probe_all().await) });
    }

    /// Probes every provider once more after `delay` (the periodic probe is slow); one such
    /// probe at a time.
    pub(super) fn probe_soon(&mut self, delay: Duration) {
        let Some(registry) = self.registry.clone() else { return };
        if !self.providers.may_reprobe() {
            return;
        }
        self.help(async move {
            tokio::time::sleep(delay).await;
            Helped::Reprobed(registry.probe_all().await)
        });
    }
}

/// Finds which providers are there: at start, then every `every` (never again when zero),
/// each finding to `out`.
pub async fn probes(
    registry: Registry,
    every: Duration,
    out: Sink<Vec<Probed>>,
    shutdown: CancellationToken,
) {
    if every.is_zero() {
        tokio::select! {
            () = shutdown.cancelled() => {}
            found = registry.probe_all() => out.send(found),
        }
        return;
    }
    let mut ticker = stt_app::Ticker::new(every, shutdown.clone());
    while ticker.tick().await {
        tokio::select! {
            () = shutdown.cancelled() => break,
            found = registry.probe_all() => out.send(found),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a probe found: each provider live, down, or loading (answering, not live yet).
    fn found(states: &[(Id, &str)]) -> Vec<Probed> {
        states
            .iter()
            .map(|&(id, state)| Probed {
                id,
                status: if state == "live" { ProviderStatus::Live } else { ProviderStatus::Down },
                target: String::new(),
                model: String::new(),
                detail: String::new(),
                loading: state == "loading",
            })
            .collect()
    }

    fn known(current: Option<Id>, configured: Option<Id>, preferred: Option<Id>) -> Known {
        Known { current, configured, preferred, chosen: Some(Id::Ollama) }
    }

    /// Which provider a probe chooses, and whether the loop installs it: the first probe
    /// always installs; a provider in use stays while it is live (or configured, even down);
    /// otherwise a person's preference, then the registry's choice.
    #[test]
    fn the_choice_of_provider() {
        use Id::{AnthropicApi as Anthropic, LlamaCpp, Ollama};
        let both_live = [(LlamaCpp, "live"), (Ollama, "live")];
        let llama_down = [(LlamaCpp, "down"), (Ollama, "live")];
        #[rustfmt::skip]
        type Row<'a> = (&'a str, bool, Known, &'a [(Id, &'a str)], Option<Id>, bool);
        let table: [Row<'_>; 7] = [
            ("first probe", true, known(None, None, None), &both_live, Some(Ollama), true),
            (
                "preferred first",
                true,
                known(None, None, Some(LlamaCpp)),
                &both_live,
                Some(LlamaCpp),
                true,
            ),
            (
                "in use and live stays",
                false,
                known(Some(LlamaCpp), None, None),
                &both_live,
                Some(LlamaCpp),
                false,
            ),
            (
                "in use, gone: moves on",
                false,
                known(Some(LlamaCpp), None, None),
                &llama_down,
                Some(Ollama),
                true,
            ),
            (
                "configured stays down",
                false,
                known(Some(LlamaCpp), Some(LlamaCpp), None),
                &llama_down,
                Some(LlamaCpp),
                false,
            ),
            (
                "first probe, same one",
                true,
                known(Some(Ollama), None, None),
                &both_live,
                Some(Ollama),
                true,
            ),
            (
                "a preference beats the registry",
                false,
                known(None, None, Some(Anthropic)),
                &both_live,
                Some(Anthropic),
                true,
            ),
        ];
        for (name, first, known, states, choice, install) in table {
            let mut providers = Providers::new();
            if !first {
                providers.probe(found(states), Known { current: None, ..known });
            }
            let decision = providers.probe(found(states), known);
            assert_eq!((decision.choice, decision.install), (choice, install), "{name}");
        }
    }

    /// Down, loading, back: viewers hear of a provider becoming unusable once per change,
    /// never while it loads (it is on its way), and the loop logs its coming back.
    #[test]
    fn down_and_back_are_told_once_per_change() {
        let mut providers = Providers::new();
        let at = |current| known(current, Some(Id::LlamaCpp), Some(Id::LlamaCpp));
        let mut probe = |state: &str, current| {
            let d = providers.probe(found(&[(Id::LlamaCpp, state)]), at(current));
            (d.usable, d.loading, d.down, d.back)
        };
        #[rustfmt::skip]
        let steps = [
            ("loading at start",  "loading", None,              (false, true,  false, false)),
            ("up: answers now",   "live",    None,              (true,  false, false, true)),
            ("still up",          "live",    Some(Id::LlamaCpp), (true,  false, false, false)),
            ("gone: told",        "down",    Some(Id::LlamaCpp), (false, false, true,  false)),
            ("still gone: quiet", "down",    Some(Id::LlamaCpp), (false, false, false, false)),
            ("back",              "live",    Some(Id::LlamaCpp), (true,  false, false, true)),
        ];
        for (name, state, current, expect) in steps {
            assert_eq!(probe(state, current), expect, "{name}");
        }
    }

    /// The local model's cache is warmed once per server that answers with its model
    /// loaded; jobs wait while it warms; a server that went away is warmed again when back.
    #[test]
    fn the_local_model_is_warmed_once_per_server() {
        let mut providers = Providers::new();
        let llama = Some(Id::LlamaCpp);
        let probe = |providers: &mut Providers, state: &str, current| {
            providers.probe(found(&[(Id::LlamaCpp, state)]), known(current, llama, llama)).warm
        };
        assert!(!probe(&mut providers, "loading", None), "not while it loads");
        assert!(providers.loading(llama), "its loading holds jobs back");
        assert!(probe(&mut providers, "live", None), "loaded: warm it");
        assert!(providers.loading(llama), "jobs wait for the warm-up");
        assert!(!probe(&mut providers, "live", llama), "warming already");
        providers.warmed();
        assert!(!providers.loading(llama));
        assert!(!probe(&mut providers, "live", llama), "warm already");
        assert!(!probe(&mut providers, "down", llama));
        assert!(probe(&mut providers, "live", llama), "back with an empty cache");
        // Ollama keeps its own cache: only llama-server is warmed.
        let mut other = Providers::new();
        let decision = other.probe(found(&[(Id::Ollama, "live")]), known(None, None, None));
        assert!(!decision.warm);
    }

    /// How soon the loop looks again: every half second while the model loads; 2, 4, 8,
    /// 16, 16 s while there is no provider; not before the periodic probe once there is one
    /// (and the back-off starts over).
    #[test]
    fn looking_again_backs_off_while_nothing_is_there() {
        let mut providers = Providers::new();
        let s = Duration::from_secs;
        let looks: Vec<Option<Duration>> =
            (0..5).map(|_| providers.next_look(false, false)).collect();
        assert_eq!(looks, [Some(s(2)), Some(s(4)), Some(s(8)), Some(s(16)), Some(s(16))]);
        assert_eq!(providers.next_look(true, false), Some(Duration::from_millis(500)));
        assert_eq!(providers.next_look(false, true), None);
        assert_eq!(providers.next_look(false, false), Some(s(2)), "starts over");
        assert!(providers.may_reprobe());
        assert!(!providers.may_reprobe(), "one such probe at a time");
        providers.reprobed();
        assert!(providers.may_reprobe());
    }

    /// A job waits for the first probe; one that finds no provider has a probe made for it
    /// and waits for that, then runs with what it found (and the next one looks again).
    #[test]
    fn a_job_that_finds_no_provider_looks_once_first() {
        let mut providers = Providers::new();
        assert_eq!(providers.go(None, false, true), Go::Wait, "before the first probe");
        providers.probe(found(&[(Id::LlamaCpp, "down")]), known(None, None, None));
        assert_eq!(providers.go(None, false, true), Go::ProbeFirst);
        assert_eq!(providers.go(None, false, true), Go::Wait, "the probe is on its way");
        providers.probe(found(&[(Id::LlamaCpp, "down")]), known(None, None, None));
        assert_eq!(providers.go(None, false, true), Go::Start, "it says none is there");
        assert_eq!(providers.go(None, false, true), Go::ProbeFirst, "the next job looks again");
        assert_eq!(providers.go(None, false, false), Go::Start, "background work is not held");
        assert_eq!(providers.go(Some(Id::Ollama), true, false), Go::Start);
    }
}
