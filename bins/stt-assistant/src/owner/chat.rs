//! The owner's chat surface: the session it keeps on disk, the provider a conversation runs
//! on, a reply a person stops, and the slash commands. Still the one owner: these are its
//! methods, called from its loop.

use std::path::PathBuf;

use tokio::sync::oneshot;

use stt_llm::Provider;
use stt_llm::registry::{Id, Probed, Registry, Status as ProviderStatus, host};
use stt_proto::{
    Ack, AssistantEvent, ChatMessage, ChatRole, ChatSession, ErrorCode, ErrorMsg, TokenUsage,
};

use super::{Helped, Owner, Running};
use crate::kind::JobKind;
use crate::llm::{Chat, End, Work};
use crate::memory::Episode;
use crate::session::{Session, Tokens, Turn};
use crate::slash::{self, Slash};
use crate::turn::ChatTurn;

/// The conversation and the session it is kept in on disk.
#[derive(Debug)]
pub(super) struct Side {
    pub(super) conversation: Chat,
    /// The chat session, as saved in `file`.
    pub(super) session: Session,
    pub(super) file: PathBuf,
    /// How long a saved session is picked up again after a restart.
    pub(super) ttl: std::time::Duration,
    /// Where `/export` writes when given no path.
    pub(super) export_dir: PathBuf,
}

/// What a slash command that took a while found.
#[derive(Debug)]
pub enum SlashDone {
    /// A fresh probe of every provider (`/providers`).
    Probed(Vec<Probed>),
    /// Text for the person, or what went wrong.
    Text(Result<String, String>),
}

impl Owner {
    /// A chat job for `turn`: the conversation as it stands and the session's handle. A
    /// session left alone past its time to live is replaced first.
    pub(super) fn chat_work(&mut self, turn: ChatTurn) -> Work {
        if self.chat.session.expired(self.clock.unix(), self.chat.ttl) {
            let hours = self.chat.ttl.as_secs() / 3600;
            self.note(format!("the last turn was over {hours} h ago: a new conversation starts"));
            self.new_session();
        }
        Work::Chat {
            turn,
            conversation: self.chat.conversation.clone(),
            resume: self.chat.session.handle.clone(),
            episode: self.chat_episode(),
        }
    }

    /// The memory episode of the current conversation: its session, named by when it began.
    pub(super) fn chat_episode(&self) -> Episode {
        Episode::Chat(self.chat.session.created)
    }

    /// `chat_stop`: stops the reply streaming; what arrived is kept (see [`Self::chat_finished`]).
    pub(super) fn chat_stop(&mut self) -> AssistantEvent {
        match self.jobs.running.as_mut().filter(|r| r.handle.is(JobKind::Chat)) {
            Some(running) => {
                tracing::info!(job = running.job, "stopping the chat reply");
                running.stopped = true;
                running.handle.cancel();
                AssistantEvent::Ack(Ack { command: "chat_stop".into(), ok: true })
            }
            None => AssistantEvent::Error(ErrorMsg::new(
                ErrorCode::NothingPending,
                "no reply is streaming: nothing to stop",
            )),
        }
    }

    /// A chat turn of the current conversation ended: a stopped answer is kept as what
    /// arrived, and the turn joins the session's display turns.
    pub(super) fn chat_finished(&mut self, running: &Running, end: End) {
        let stopped = running.stopped && end == End::Cancelled;
        if stopped {
            let id = running.reply_id.unwrap_or_else(|| self.core.next_id());
            self.publish(&AssistantEvent::ChatMessage(ChatMessage {
                id,
                role: ChatRole::Assistant,
                speaker: None,
                text: running.answer.clone(),
                partial: false,
                stopped: true,
            }));
            if !running.answer.trim().is_empty() {
                self.chat.conversation.turns.push(stt_llm::Message::assistant(&running.answer));
                self.chat.session.set_chat(&self.chat.conversation);
            }
        }
        if (end == End::Done || stopped) && !running.answer.trim().is_empty() {
            let episode = self.chat_episode();
            self.remember(episode, stt_memory::Role::Assistant, None, &running.answer);
        }
        // The turn grew the memory tree's buffer: it may want a summary.
        self.tree_may_be_due();
        // A chat the wake phrase started listens a while for more, then ends.
        self.core.chat_answered(self.clock.now());
        if end == End::Done || stopped {
            let provider = self.active().map_or_else(String::new, |id| id.to_string());
            let elapsed = self.clock.now().saturating_duration_since(running.started);
            self.chat.session.push_turn(Turn {
                q: running.question.clone(),
                a: running.answer.clone(),
                ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
                provider,
                stopped: stopped || running.cut,
                tokens: running.tokens,
            });
            self.publish_session();
        }
        self.save_session();
    }

    /// A chat turn failed: a line of the conversation, naming the fix.
    pub(super) fn chat_error(&mut self, text: String) {
        tracing::warn!("{text}");
        let id = self.core.next_id();
        self.publish(&AssistantEvent::ChatMessage(ChatMessage {
            id,
            role: ChatRole::Error,
            speaker: None,
            text,
            partial: false,
            stopped: false,
        }));
    }

    /// The session as viewers show it.
    pub(super) fn chat_session(&self) -> ChatSession {
        let usage =
            |t: Tokens| TokenUsage { prompt: t.prompt, completion: t.completion, cached: t.cached };
        let endpoint = match &self.jobs.env.client {
            Some(Provider::Cli(cli)) => cli.cli().program().to_owned(),
            Some(client) => host(&client.target()).to_owned(),
            None => String::new(),
        };
        ChatSession {
            provider: self.active().map(|id| id.to_string()),
            model: self.jobs.env.client.as_ref().map(|c| c.model().to_owned()).unwrap_or_default(),
            endpoint,
            loading: self.model_loading(),
            turns: u32::try_from(self.chat.session.turns.len()).unwrap_or(u32::MAX),
            last: self.chat.session.turns.last().and_then(|t| t.tokens).map(usage),
            total: usage(self.chat.session.tokens),
        }
    }

    pub(super) fn publish_session(&self) {
        self.publish(&AssistantEvent::ChatSession(self.chat_session()));
    }

    pub(super) fn save_session(&self) {
        self.writer.save_session(self.chat.file.clone(), self.chat.session.clone());
    }

    /// A new, empty session on the same provider and model. Memory closes the old one's
    /// episode: it waits for a dream.
    fn new_session(&mut self) {
        if let Some(memory) = &self.memory.lane {
            memory.close(self.chat_episode());
        }
        self.close_tree();
        let mut fresh = Session::new(self.clock.unix());
        fresh.provider = self.chat.session.provider.take();
        fresh.model = std::mem::take(&mut self.chat.session.model);
        self.chat.session = fresh;
        self.chat.conversation = Chat::default();
    }

    /// A new conversation, or a provider that starts without the old one's context: the
    /// memory tree's buffer leaves the context, to be summarized (the summaries stay).
    fn close_tree(&mut self) {
        if let Some(memory) = self.memory.lane.as_ref().filter(|m| m.tree()) {
            memory.tree_close();
            self.jobs.queue.want(Work::Tree);
        }
    }

    /// `clear` and `/new`: the conversation is gone, from memory and from disk.
    pub(super) fn forget_session(&mut self) {
        self.new_session();
        self.writer.forget_session(self.chat.file.clone());
        self.publish_session();
    }

    /// The provider to prefer when none is in use: the configured one, else the one the
    /// saved conversation ran on, if it is there (so a restarted assistant carries on).
    pub(super) fn preferred(&self, registry: &Registry, found: &[Probed]) -> Option<Id> {
        registry.configured().or_else(|| {
            let id = Id::parse(self.chat.session.provider.as_deref()?)?;
            found.iter().any(|p| p.id == id && p.status == ProviderStatus::Live).then_some(id)
        })
    }

    /// Makes `choice` the provider jobs use (or none), saying so when it replaces another.
    /// A conversation that moves to another provider loses its handle and context, not the
    /// turns a person saw.
    pub(super) fn use_provider(
        &mut self,
        registry: &Registry,
        choice: Option<Id>,
        found: &[Probed],
        before: Option<Id>,
    ) {
        let probed = choice.and_then(|id| found.iter().find(|p| p.id == id));
        let Some(probed) = probed else {
            self.jobs.env.client = None;
            self.jobs.env.missing = registry.none_live(found);
            self.jobs.env.providers = None;
            self.publish_session();
            return;
        };
        let id = probed.id;
        let same = self.chat.session.provider.as_deref() == Some(id.as_str());
        let model = if same { self.chat.session.model.clone() } else { String::new() };
        match registry.provider(probed, &model) {
            Ok(provider) => {
                tracing::info!(provider = %id, target = %provider.target(), model = provider.model(), "using this model provider");
                if let Some(old) = before.filter(|old| *old != id) {
                    self.note(format!("now using {id} ({old} is not there any more)"));
                }
                self.jobs.env.client = Some(provider);
            }
            Err(e) => {
                self.jobs.env.client = None;
                self.jobs.env.missing = registry.explain(id, &model, &e);
            }
        }
        self.jobs.env.providers = Some((registry.clone(), id));
        if !same {
            let had = self.chat.session.provider.is_some();
            self.chat.session.switch_provider(id.as_str(), "");
            self.chat.conversation = self.chat.session.chat();
            if had {
                self.save_session();
                self.close_tree();
            }
        }
        self.publish_session();
    }

    /// Carries out a slash command; its reply goes to `reply` now, or when it is done.
    pub(super) fn slash(&mut self, line: &str, reply: oneshot::Sender<AssistantEvent>) {
        let command = match slash::parse(line) {
            Ok(command) => command,
            Err(e) => {
                let _ = reply.send(AssistantEvent::Error(ErrorMsg::new(ErrorCode::BadMessage, e)));
                return;
            }
        };
        tracing::debug!(?command, "slash command");
        let outcome = match command {
            Slash::Help => Ok(slash::HELP.to_owned()),
            Slash::New => {
                self.jobs.epoch += 1;
                if let Some(running) =
                    self.jobs.running.as_ref().filter(|r| r.handle.is(JobKind::Chat))
                {
                    running.handle.cancel();
                }
                self.forget_session();
                Ok("a new conversation starts".to_owned())
            }
            Slash::System(text) => {
                self.chat.session.system = Some(text);
                self.save_session();
                Ok("this conversation's system prompt is set".to_owned())
            }
            Slash::Model(name) => self.switch_model(&name),
            Slash::Provider(id) => self.switch_provider(id),
            Slash::Providers => return self.spawn_slash(reply, SlashJob::Probe),
            Slash::Models => return self.spawn_slash(reply, SlashJob::Models),
            Slash::Export(path) => return self.spawn_slash(reply, SlashJob::Export(path)),
        };
        self.slash_done(reply, SlashDone::Text(outcome));
    }

    /// A slash command's outcome: a note for every viewer and the direct reply.
    pub(super) fn slash_done(&mut self, reply: oneshot::Sender<AssistantEvent>, done: SlashDone) {
        let outcome = match done {
            SlashDone::Text(outcome) => outcome,
            SlashDone::Probed(found) => {
                let table = slash::providers_table(&found, self.active());
                self.on_providers(found);
                Ok(table)
            }
        };
        let answer = match outcome {
            Ok(text) => {
                self.note(text.clone());
                AssistantEvent::ChatOutput { text }
            }
            Err(e) => AssistantEvent::Error(ErrorMsg::new(ErrorCode::NoExecutor, e)),
        };
        let _ = reply.send(answer);
    }

    fn switch_model(&mut self, name: &str) -> Result<String, String> {
        let (registry, id) = self.jobs.env.providers.clone().ok_or_else(no_provider)?;
        let probed = self.probed(id);
        let provider =
            registry.provider(&probed, name).map_err(|e| registry.explain(id, name, &e))?;
        self.jobs.env.client = Some(provider);
        name.clone_into(&mut self.chat.session.model);
        self.save_session();
        self.publish_session();
        Ok(format!("now asking {id} for {name}"))
    }

    fn switch_provider(&mut self, id: Id) -> Result<String, String> {
        let registry = self.registry.clone().ok_or_else(no_provider)?;
        let probed = self.probed(id);
        let provider = registry.provider(&probed, "").map_err(|e| registry.explain(id, "", &e))?;
        let target = provider.target();
        self.jobs.env.client = Some(provider);
        self.jobs.env.providers = Some((registry, id));
        self.chat.session.switch_provider(id.as_str(), "");
        self.chat.conversation = self.chat.session.chat();
        self.close_tree();
        self.save_session();
        self.publish_session();
        let warning = match probed.status {
            ProviderStatus::Live => String::new(),
            _ if probed.loading => " (still loading its model)".to_owned(),
            status => format!(
                " — but it is {}{}: turns will fail until it is there",
                status.as_str(),
                if probed.detail.is_empty() {
                    String::new()
                } else {
                    format!(", {}", probed.detail)
                }
            ),
        };
        Ok(format!("now using {id} at {target}; the conversation's context starts over{warning}"))
    }

    /// What the last probe found of `id` (an empty finding before the first probe).
    fn probed(&self, id: Id) -> Probed {
        self.providers.found().iter().find(|p| p.id == id).cloned().unwrap_or(Probed {
            id,
            status: ProviderStatus::Down,
            target: String::new(),
            model: String::new(),
            detail: "not probed yet".to_owned(),
            loading: false,
        })
    }

    /// A slash command's reply that needed no wait.
    fn slash_done_now(&mut self, helped: Helped) {
        if let Helped::Slash { reply, done } = helped {
            self.slash_done(reply, done);
        }
    }

    /// Runs a slash command that waits on the network or the disk off the loop.
    fn spawn_slash(&mut self, reply: oneshot::Sender<AssistantEvent>, job: SlashJob) {
        let done = |done| Helped::Slash { reply, done };
        match job {
            SlashJob::Probe => {
                let Some(registry) = self.registry.clone() else {
                    return self.slash_done_now(done(SlashDone::Text(Err(no_provider()))));
                };
                self.help(async move { done(SlashDone::Probed(registry.probe_all().await)) });
            }
            SlashJob::Models => {
                let Some((registry, id)) = self.jobs.env.providers.clone() else {
                    return self.slash_done_now(done(SlashDone::Text(Err(no_provider()))));
                };
                let probed = self.probed(id);
                let current =
                    self.jobs.env.client.as_ref().map(|c| c.model().to_owned()).unwrap_or_default();
                self.help(async move {
                    let text = match registry.models(&probed).await {
                        Ok(models) if models.is_empty() => {
                            Ok(format!("{id} lists no models; `/model NAME` asks for any name"))
                        }
                        Ok(models) => Ok(models
                            .iter()
                            .map(|m| format!("{} {m}", if *m == current { '●' } else { ' ' }))
                            .collect::<Vec<_>>()
                            .join("\n")),
                        Err(e) => Err(registry.explain(id, "", &e)),
                    };
                    done(SlashDone::Text(text))
                });
            }
            SlashJob::Export(path) => {
                let path =
                    export_path(&self.chat.export_dir, path.as_deref(), self.clock.local_now());
                let when = self.clock.local_now().format("%Y-%m-%d %H:%M").to_string();
                let provider = self.chat.session.provider.clone().unwrap_or_default();
                let text = slash::markdown(&self.chat.session.turns, &provider, &when);
                let turns = self.chat.session.turns.len();
                self.help(async move {
                    let written = tokio::task::spawn_blocking(move || {
                        crate::names::write_private(&path, text.as_bytes())
                            .map(|()| format!("wrote {turns} turns to {}", path.display()))
                            .map_err(|e| format!("cannot write {}: {e}", path.display()))
                    })
                    .await;
                    let outcome = written
                        .unwrap_or_else(|e| Err(format!("the export stopped on a bug: {e}")));
                    done(SlashDone::Text(outcome))
                });
            }
        }
    }
}

/// A slash command that runs off the loop.
#[derive(Debug)]
enum SlashJob {
    Probe,
    Models,
    Export(Option<String>),
}

fn no_provider() -> String {
    "no model provider is configured: [llm].enabled is false".to_owned()
}

/// Where `/export` writes: the path given (relative ones under `dir`), or a new file in `dir`
/// named for the time `at`.
fn export_path(
    dir: &std::path::Path,
    given: Option<&str>,
    at: chrono::DateTime<chrono::Local>,
) -> PathBuf {
    match given {
        Some(path) => {
            let path = PathBuf::from(path);
            if path.is_absolute() { path } else { dir.join(path) }
        }
        None => dir.join(format!("chat-{}.md", at.format("%Y%m%d-%H%M%S"))),
    }
}
