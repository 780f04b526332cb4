//! The owner's side of the wake-ups ([`crate::wake`]): when the loop looks, what a person
//! doing something means for a wake-up, what the wake tools ask, and a proactive turn's
//! reminder shown in the conversation and spoken.

use std::path::PathBuf;
use std::time::Instant;

use stt_llm::Message;
use stt_proto::{AssistantEvent, ChatMessage, ChatRole, Mode};

use super::Owner;
use crate::llm::Work;
use crate::llm::proactive::Wakeup;
use crate::wake::{Asked, Look, Wakes};

/// The wake-ups and where they are kept.
#[derive(Debug)]
pub(super) struct Side {
    wakes: Wakes,
    file: PathBuf,
}

impl Side {
    /// The end of a quiet asked for, if one holds.
    pub(super) fn quiet_until(&self) -> Option<chrono::DateTime<chrono::Local>> {
        self.wakes.saved().quiet_until
    }

    /// The wake-ups as the last run left them in `settings.file`, for an assistant started
    /// at `started`.
    pub(super) fn load(
        settings: crate::wake::Settings,
        started: chrono::DateTime<chrono::Local>,
    ) -> Self {
        let saved = crate::wake::load(&settings.file);
        if let Some(next) = saved.next {
            tracing::info!("the next wake-up is at {}", next.format("%Y-%m-%d %H:%M"));
        }
        Self { wakes: Wakes::new(saved, settings.hours, started), file: settings.file }
    }
}

impl Owner {
    /// When the loop next looks at the wake-ups.
    pub(super) fn wake_deadline(&self) -> Option<Instant> {
        let next = self.wake.as_ref()?.wakes.next()?;
        let now = self.clock.now();
        let ahead = (next - self.clock.local(now)).to_std().unwrap_or_default();
        Some(now + self.clock.wait(ahead))
    }

    /// Runs a proactive turn if one is due and nothing holds it back.
    pub(super) fn look(&mut self) {
        let busy = self.person_first();
        let local = self.clock.local_now();
        let Some(side) = self.wake.as_mut() else { return };
        let Some(look) = side.wakes.due(local, busy) else { return };
        // Not for a hold every 30 s while a person speaks: nothing a restart needs.
        if look != Look::Held {
            self.writer.save_wake(side.file.clone(), side.wakes.saved().clone());
        }
        match look {
            Look::Turn => {
                tracing::info!("waking up: a proactive turn");
                let now = local.format("%A %-d %B %Y, %H:%M").to_string();
                let today = local.format("%Y-%m-%d").to_string();
                self.jobs.queue.want(Work::Proactive(Wakeup { now, today }));
            }
            Look::Later(why) => tracing::info!("a wake-up waits: {why}"),
            Look::Held => tracing::debug!("a wake-up waits: a person comes first"),
            Look::Dropped => {
                tracing::info!("the last reminder is still unanswered: this wake-up is dropped");
            }
        }
    }

    /// Whether a person is doing something a wake-up must not come into: speaking, a
    /// command armed, running or waiting for a yes or no, a person's job waiting.
    fn person_first(&self) -> bool {
        self.core.hearing()
            || self.core.mode() == Mode::CommandArmed
            || !self.core.awaiting().is_empty()
            || self.jobs.queue.depth() > 0
            || self.jobs.running.as_ref().is_some_and(|r| r.handle.kind.rule().person)
    }

    /// What a wake tool asked for.
    pub(super) fn wake_asked(&mut self, asked: Asked) {
        let local = self.clock.local_now();
        let Some(side) = self.wake.as_mut() else { return };
        match asked {
            Asked::Wake(minutes) => {
                let (minutes, at) = side.wakes.schedule(minutes, local);
                tracing::info!(minutes, "the next wake-up is at {}", at.format("%H:%M"));
            }
            Asked::Quiet(minutes) => match side.wakes.quiet_for(minutes, local) {
                Some(until) => tracing::info!("do not disturb until {}", until.format("%H:%M")),
                None => tracing::info!("do not disturb is over"),
            },
        }
        self.writer.save_wake(side.file.clone(), side.wakes.saved().clone());
    }

    /// A person spoke or typed to the assistant: a reminder shown before is answered.
    pub(super) fn answered(&mut self) {
        if let Some(side) = self.wake.as_mut() {
            side.wakes.answered();
        }
    }

    /// A proactive turn's reminder: in the conversation, and aloud with the voice on unless
    /// the assistant keeps quiet now (it does not start one then; this guards a quiet asked
    /// for while it ran).
    pub(super) fn reminder(&mut self, text: String) {
        let local = self.clock.local_now();
        let Some(side) = self.wake.as_mut() else { return };
        side.wakes.shown();
        let quiet = side.wakes.quiet(local).is_some();
        if let Some(running) = self.jobs.running.as_mut() {
            running.answer.clone_from(&text);
            running.spoken = if quiet { usize::MAX } else { 0 };
        }
        self.speak_answer(true);
        let id = self.reply_id();
        self.publish(&AssistantEvent::ChatMessage(ChatMessage {
            id,
            role: ChatRole::Assistant,
            speaker: None,
            text: text.clone(),
            partial: false,
            stopped: false,
        }));
        // A person may answer it in chat: the model then sees what it said.
        self.chat.conversation.turns.push(Message::assistant(text));
        self.chat.session.set_chat(&self.chat.conversation);
        self.save_session();
    }
}
