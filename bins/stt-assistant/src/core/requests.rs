//! The requests: each checked against the mode ([`Mode::admits`], once), then applied; its
//! direct reply and the [`Effect`]s it asks for.

use std::time::Instant;

use stt_proto::{
    Ack, AssistantEvent, ChatMessage, ChatRole, ErrorCode, ErrorMsg, Mode, Request, Speaker,
};

use super::{Core, Effect, Outside};
use crate::turn::{ChatTurn, TYPED};

impl Core {
    /// Handles a request: its direct reply, and what else must happen.
    pub fn request(
        &mut self,
        request: &Request,
        now: Instant,
        outside: Outside,
    ) -> (AssistantEvent, Vec<Effect>) {
        let mut effects = Vec::new();
        let result = self.apply(request, now, outside, &mut effects);
        let reply = match result {
            Ok(()) => AssistantEvent::Ack(Ack { command: request.kind().into(), ok: true }),
            Err(error) => AssistantEvent::Error(error),
        };
        (reply, effects)
    }

    fn apply(
        &mut self,
        request: &Request,
        now: Instant,
        outside: Outside,
        effects: &mut Vec<Effect>,
    ) -> Result<(), ErrorMsg> {
        // Which mode takes which request is one table, the protocol's.
        self.mode.admits(request).map_err(wrong_mode)?;
        // A key takes over from a spoken turn: arming, editing, cancelling, chat and dictation
        // end it (Enter runs it as it stands; a yes or no by key answers as a spoken one).
        if matches!(
            request,
            Request::CommandStart
                | Request::CommandEdit { .. }
                | Request::CommandCancel
                | Request::ChatToggle
                | Request::ChatSend { .. }
                | Request::DictateStart
                | Request::DictateStop
                | Request::DictateToggle
                | Request::Clear
        ) {
            self.spoken = None;
        }
        match request {
            Request::CommandStart => {
                if self.mode == Mode::Idle {
                    self.buffer.clear();
                    self.segs.clear();
                    self.edited = false;
                    self.set_mode(Mode::CommandArmed, effects);
                    effects.push(self.command_text());
                }
                Ok(())
            }
            Request::DictateStart => self.dictate(true, effects),
            Request::DictateStop => self.dictate(false, effects),
            Request::DictateToggle => self.dictate(self.mode != Mode::Dictate, effects),
            Request::CommandEdit { text } => {
                self.buffer = text.trim().to_owned();
                self.edited = true;
                effects.push(self.command_text());
                Ok(())
            }
            Request::CommandCancel => {
                if self.mode == Mode::Executing {
                    // Idle once the command has stopped (`execution_finished`).
                    effects.push(Effect::CancelCommand);
                    return Ok(());
                }
                self.buffer.clear();
                self.segs.clear();
                self.edited = false;
                self.set_mode(Mode::Idle, effects);
                Ok(())
            }
            Request::CommandExecute { .. } => self.execute(now, outside, effects),
            Request::ChatToggle => {
                if self.mode == Mode::Chat {
                    self.set_mode(Mode::Idle, effects);
                    effects.push(Effect::DropQueuedChat);
                } else {
                    self.set_mode(Mode::Chat, effects);
                }
                Ok(())
            }
            Request::Clear => {
                // What is being said now is not for the conversation that was cleared.
                self.settle.clear();
                effects.push(Effect::ClearHistory);
                effects.push(Effect::Publish(AssistantEvent::Cleared {}));
                Ok(())
            }
            Request::SpeakerName { speaker_id, name } => {
                if name.trim().is_empty() {
                    return Err(ErrorMsg::new(ErrorCode::BadMessage, "the name is empty"));
                }
                self.known(speaker_id)?;
                let name = name.trim().to_owned();
                self.names.insert(speaker_id.clone(), name.clone());
                self.roster = self.named(self.roster.clone());
                effects.push(Effect::NameSpeaker { speaker_id: speaker_id.clone(), name });
                effects.push(Effect::Publish(AssistantEvent::Speakers(self.roster.clone())));
                Ok(())
            }
            Request::SpeakerForget { speaker_id } => {
                self.known(speaker_id)?;
                self.names.remove(speaker_id);
                self.drop_speaker(speaker_id);
                effects.push(Effect::ForgetSpeaker { speaker_id: speaker_id.clone() });
                effects.push(Effect::Publish(AssistantEvent::Speakers(self.roster.clone())));
                Ok(())
            }
            Request::SpeakerMerge { speaker_id, into } => {
                if speaker_id == into && !into.trim().is_empty() {
                    return Err(ErrorMsg::new(
                        ErrorCode::BadMessage,
                        format!(
                            "cannot merge '{into}' into itself: name the speaker that goes, then \
                             the one that stays"
                        ),
                    ));
                }
                let from_name = self.known(speaker_id)?.name.clone();
                let into_named = self.known(into)?.name.is_some();
                self.names.remove(speaker_id);
                if let Some(name) = from_name.filter(|_| !into_named) {
                    self.names.insert(into.clone(), name);
                }
                self.drop_speaker(speaker_id);
                self.roster = self.named(self.roster.clone());
                effects.push(Effect::MergeSpeaker {
                    speaker_id: speaker_id.clone(),
                    into: into.clone(),
                });
                effects.push(Effect::Publish(AssistantEvent::Speakers(self.roster.clone())));
                Ok(())
            }
            Request::ChatSend { text } => self.typed(text, effects),
            // The owner answers these itself (it holds the timers, the session and the
            // running job, and `status` is all of it).
            Request::Status
            | Request::SpeakerList
            | Request::TimerCancel { .. }
            | Request::ChatCommand { .. }
            | Request::ChatStop
            | Request::Memory(_)
            | Request::Task(_)
            | Request::VoiceToggle
            | Request::Intents(_)
            | Request::Hello(_)
            | Request::Subscribe { .. } => Ok(()),
            Request::Confirm { call_id } | Request::Deny { call_id } => {
                let call_id = self.waiting_call(call_id.as_deref())?;
                self.confirmation_over(&call_id);
                let allow = matches!(request, Request::Confirm { .. });
                effects.push(Effect::Answer { call_id, allow });
                Ok(())
            }
        }
    }

    /// The roster's speaker `id` (with the name given here), or why there is none.
    fn known(&self, id: &str) -> Result<&Speaker, ErrorMsg> {
        if id.trim().is_empty() {
            return Err(ErrorMsg::new(
                ErrorCode::BadMessage,
                "the speaker id is empty: `stt-ctl speaker-list` shows the ids",
            ));
        }
        self.roster.speakers.iter().find(|s| s.id == id).ok_or_else(|| {
            ErrorMsg::new(
                ErrorCode::UnknownSpeaker,
                format!("no speaker '{id}': `stt-ctl speaker-list` shows the ids"),
            )
        })
    }

    /// Takes `id` out of the roster viewers see, until the daemon's rosters lose it too.
    fn drop_speaker(&mut self, id: &str) {
        self.roster.speakers.retain(|s| s.id != id);
        self.gone.insert(id.to_owned());
    }

    /// A typed chat turn: like a spoken one in chat mode, which it enters from idle.
    fn typed(&mut self, text: &str, effects: &mut Vec<Effect>) -> Result<(), ErrorMsg> {
        let text = text.trim();
        if text.is_empty() {
            return Err(ErrorMsg::new(ErrorCode::BadMessage, "the message is empty"));
        }
        if self.mode == Mode::Idle {
            self.set_mode(Mode::Chat, effects);
        }
        let id = self.next_id();
        effects.push(Effect::Publish(AssistantEvent::ChatMessage(ChatMessage {
            id,
            role: ChatRole::User,
            // Not an unknown speaker: the person at the keyboard.
            speaker: Some(TYPED.to_owned()),
            text: text.to_owned(),
            partial: false,
            stopped: false,
        })));
        // The model is told the words were typed, as it is told who spoke.
        effects.push(Effect::ChatTurn(ChatTurn::typed(text)));
        Ok(())
    }

    /// The call a `confirm` or `deny` answers: the one named, or the only one waiting.
    fn waiting_call(&self, call_id: Option<&str>) -> Result<String, ErrorMsg> {
        match (call_id, self.awaiting.as_slice()) {
            (Some(id), waiting) if waiting.iter().any(|w| w == id) => Ok(id.to_owned()),
            (Some(id), _) => Err(ErrorMsg::new(
                ErrorCode::NothingPending,
                format!("no tool call '{id}' is waiting for confirmation"),
            )),
            (None, []) => Err(ErrorMsg::new(
                ErrorCode::NothingPending,
                "no tool call is waiting for confirmation",
            )),
            (None, [only]) => Ok(only.clone()),
            (None, waiting) => Err(ErrorMsg::new(
                ErrorCode::BadMessage,
                format!("{} tool calls are waiting: name one with --call-id", waiting.len()),
            )),
        }
    }

    /// Dictation on (from idle) or off (from dictating); the mode was checked
    /// ([`Mode::admits`]).
    fn dictate(&mut self, on: bool, effects: &mut Vec<Effect>) -> Result<(), ErrorMsg> {
        if on != (self.mode == Mode::Dictate) {
            self.set_mode(if on { Mode::Dictate } else { Mode::Idle }, effects);
            effects.push(Effect::Dictation { on });
        }
        Ok(())
    }

    fn execute(
        &mut self,
        now: Instant,
        outside: Outside,
        effects: &mut Vec<Effect>,
    ) -> Result<(), ErrorMsg> {
        if let Some(seg_id) = self.open_speech {
            return Err(not_ready(format!(
                "speech is still open (segment {seg_id}); execute again when it closes"
            )));
        }
        if let Some(seg_id) = self.unfinished.iter().next() {
            return Err(not_ready(format!(
                "segment {seg_id} is still being transcribed; execute again in a moment"
            )));
        }
        let (healthy, why) = self.stt_health(now);
        if !healthy {
            return Err(not_ready(format!("speech recognition is not healthy: {why}")));
        }
        if self.require_viewer && outside.viewers == 0 {
            return Err(not_ready(
                "no viewer is attached and [assistant].require_viewer is on: start stt-tui",
            ));
        }
        if self.buffer.trim().is_empty() {
            return Err(ErrorMsg::new(
                ErrorCode::BadMessage,
                "the command is empty: speak it, or set it with `stt-ctl command-edit --text …`",
            ));
        }
        if outside.here {
            self.run(effects);
            return Ok(());
        }
        if !outside.llm_enabled {
            return Err(ErrorMsg::new(
                ErrorCode::NoExecutor,
                "no executor configured: [llm].enabled is false",
            ));
        }
        if outside.model_loading {
            return Err(not_ready("the model is still loading; execute again in a moment"));
        }
        if !outside.queue_has_room {
            return Err(ErrorMsg::new(
                ErrorCode::Busy,
                "the model is busy: the inference queue is full",
            ));
        }
        self.run(effects);
        Ok(())
    }

    /// Executes the armed command: a spoken turn's now runs.
    fn run(&mut self, effects: &mut Vec<Effect>) {
        if self.spoken.is_some() {
            self.spoken = Some(super::Stage::Running);
        }
        self.set_mode(Mode::Executing, effects);
        effects.push(Effect::Execute {
            text: self.buffer.clone(),
            edited: self.edited,
            segs: self.segs.clone(),
        });
    }
}

fn wrong_mode(message: &str) -> ErrorMsg {
    ErrorMsg::new(ErrorCode::WrongMode, message)
}

fn not_ready(message: impl Into<String>) -> ErrorMsg {
    ErrorMsg::new(ErrorCode::NotReady, format!("not ready: {}", message.into()))
}
