//! The assistant's state and rules, with no I/O: modes, the two-press command flow, the
//! readiness gate, what transcripts do in each mode, the tool calls waiting for a yes or no,
//! and the speaker roster.
//!
//! Everything that happens comes in as a method call ([`Core::request`],
//! [`Core::daemon_event`], …) and goes out as [`Effect`]s for the caller to carry out
//! (publish an event, start a command, send a chat turn), so the rules are tested here
//! without sockets or a model.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use stt_proto::{
    Ack, AssistantEvent, ChatMessage, ChatRole, DaemonEvent, DaemonHeartbeat, ErrorCode, ErrorMsg,
    Mode, Request, Speaker, SpeakerStatus, Speakers, Transcript, TranscriptPartial, TurnEnded,
};

use crate::ids::Ids;
use crate::settle::{Settle, Settled};
use crate::turn::{self, ChatTurn, TYPED};

/// Something the caller must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Send to every subscriber.
    Publish(AssistantEvent),
    /// Run the command through the model and tools; `segs` are the segments it was said in.
    Execute { text: String, edited: bool, segs: Vec<u64> },
    /// Send a chat turn to the model.
    ChatTurn(ChatTurn),
    /// Chat mode was left: drop chat turns still waiting.
    DropQueuedChat,
    /// Wipe the LLM conversation.
    ClearHistory,
    /// A speaker was named: audit it, and save [`Core::names`] for the next run.
    NameSpeaker { speaker_id: String, name: String },
    /// A speaker was forgotten: audit it, save [`Core::names`] (its name is gone), and tell
    /// the daemon (an edit in the edits file).
    ForgetSpeaker { speaker_id: String },
    /// `speaker_id` was merged into `into`: audit it, save [`Core::names`] (`into` may have
    /// taken `speaker_id`'s name), and tell the daemon.
    MergeSpeaker { speaker_id: String, into: String },
    /// Stop the running command (`command_cancel` while executing); its end comes back as
    /// [`Core::execution_finished`].
    CancelCommand,
    /// Tell the tool call `call_id` its answer.
    Answer { call_id: String, allow: bool },
    /// Dictation turned on or off: start or end the typing lane's dictation, audit it.
    Dictation { on: bool },
    /// Type a final transcript said while dictating.
    Dictate(String),
}

/// What the caller tells the core about the world that the core does not track itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outside {
    /// Subscribers attached as viewers.
    pub viewers: u32,
    /// `[llm].enabled`.
    pub llm_enabled: bool,
    /// Whether the inference queue has room for a command.
    pub queue_has_room: bool,
    /// The model provider in use is still loading its model: execute waits.
    pub model_loading: bool,
    /// The armed command is answered without the model (`crate::intents`): what the model
    /// lacks does not hold it.
    pub here: bool,
}

/// The state.
#[derive(Debug)]
pub struct Core {
    mode: Mode,
    buffer: String,
    /// The segments whose words are in `buffer`.
    segs: Vec<u64>,
    edited: bool,
    /// The segment whose partial words the command text last showed after `buffer`, until
    /// its final is in.
    live: Option<u64>,
    require_viewer: bool,
    stale_after: Duration,
    daemon_connected: bool,
    last_heartbeat: Option<(Instant, DaemonHeartbeat)>,
    /// The segment whose speech is open (speech_start seen, speech_stop not yet).
    open_speech: Option<u64>,
    /// Segments closed but without their segment_done yet.
    unfinished: BTreeSet<u64>,
    roster: Speakers,
    /// Names given with `speaker_name`, by speaker id. The daemon only publishes (it takes no
    /// input), so they live here and win over the names in its rosters.
    names: BTreeMap<String, String>,
    /// Speakers forgotten or merged away that the daemon's rosters still had when last seen:
    /// it applies the edit a moment later, and a roster it sends meanwhile must not bring
    /// them back to viewers. An id leaves once a roster comes without it (ids are never
    /// reused).
    gone: BTreeSet<String>,
    /// Tool calls waiting for a yes or no, oldest first.
    awaiting: Vec<String>,
    ids: Ids,
    /// The turn being spoken, and when it settles.
    settle: Settle,
}

impl Core {
    pub fn new(require_viewer: bool, stale_after: Duration) -> Self {
        Self {
            mode: Mode::Idle,
            buffer: String::new(),
            segs: Vec::new(),
            edited: false,
            live: None,
            require_viewer,
            stale_after,
            daemon_connected: false,
            last_heartbeat: None,
            open_speech: None,
            unfinished: BTreeSet::new(),
            roster: Speakers { speakers: Vec::new() },
            names: BTreeMap::new(),
            gone: BTreeSet::new(),
            awaiting: Vec::new(),
            ids: Ids::starting_at(1),
            settle: Settle::new(Duration::ZERO),
        }
    }

    /// Turns settle after `quiet` without speech following a `speech_stop`
    /// (`[assistant].settle_ms`; without this, each segment is a turn).
    pub fn with_settle(mut self, quiet: Duration) -> Self {
        self.settle = Settle::new(quiet);
        self
    }

    /// Hands out ids from `ids` (the assistant's, unique across its restarts).
    pub fn with_ids(mut self, ids: Ids) -> Self {
        self.ids = ids;
        self
    }

    /// Starts with the names given in earlier runs (see [`Effect::NameSpeaker`]).
    pub fn with_names(mut self, names: BTreeMap<String, String>) -> Self {
        self.names = names;
        self
    }

    /// The names given with `speaker_name`, by speaker id.
    pub fn names(&self) -> &BTreeMap<String, String> {
        &self.names
    }

    /// `roster` with the names given here written over the daemon's.
    fn named(&self, mut roster: Speakers) -> Speakers {
        for speaker in &mut roster.speakers {
            if let Some(name) = self.names.get(&speaker.id) {
                speaker.name = Some(name.clone());
            }
        }
        roster
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn buffer(&self) -> (&str, bool) {
        (&self.buffer, self.edited)
    }

    /// The speaker roster, as the daemon last sent it, with the names given here.
    pub fn roster(&self) -> &Speakers {
        &self.roster
    }

    /// The daemon's transcription backlog, from its last heartbeat.
    /// Where the daemon sends audio to be transcribed, by its last heartbeat; `None`: this
    /// machine.
    pub fn stt_remote(&self) -> Option<String> {
        self.last_heartbeat.as_ref().and_then(|(_, beat)| beat.remote.clone())
    }

    pub fn daemon_backlog(&self) -> u32 {
        self.last_heartbeat.as_ref().map_or(0, |(_, beat)| beat.backlog)
    }

    /// A fresh id for a chat line or a timer.
    pub fn next_id(&mut self) -> u64 {
        self.ids.fresh()
    }

    /// A tool call started waiting for a yes or no.
    pub fn confirmation_requested(&mut self, call_id: &str) {
        if !self.awaiting.iter().any(|id| id == call_id) {
            self.awaiting.push(call_id.to_owned());
        }
    }

    /// A tool call stopped waiting (answered, timed out, or its command ended).
    pub fn confirmation_over(&mut self, call_id: &str) {
        self.awaiting.retain(|id| id != call_id);
    }

    /// The tool calls waiting for a yes or no, oldest first.
    pub fn awaiting(&self) -> &[String] {
        &self.awaiting
    }

    /// Whether speech recognition is usable, and if not why, for a person.
    pub fn stt_health(&self, now: Instant) -> (bool, String) {
        if !self.daemon_connected {
            return (false, "not connected to stt-daemon (start it with `stt-daemon up`)".into());
        }
        let Some((at, beat)) = &self.last_heartbeat else {
            return (false, "no heartbeat from stt-daemon yet".into());
        };
        let age = now.saturating_duration_since(*at);
        if age >= self.stale_after {
            return (false, format!("no heartbeat from stt-daemon for {:.1} s", age.as_secs_f64()));
        }
        if !beat.stt_healthy {
            return (false, "stt-daemon reports its speech recognition is not running".into());
        }
        (true, String::new())
    }

    /// The daemon link came up or went down.
    pub fn daemon_link(&mut self, up: bool) {
        self.daemon_connected = up;
        if !up {
            // Whatever was open will never be closed by this daemon.
            self.last_heartbeat = None;
            self.open_speech = None;
            self.unfinished.clear();
        }
    }

    /// An event from the daemon.
    pub fn daemon_event(&mut self, event: DaemonEvent, now: Instant) -> Vec<Effect> {
        let mut effects = self.follow(event, now);
        effects.extend(self.turn_due(now));
        effects
    }

    /// Whether someone is speaking, or has spoken a turn that has not settled yet.
    pub fn hearing(&self) -> bool {
        self.settle.hearing()
    }

    /// When the turn being spoken settles if nothing else happens ([`Core::turn_due`]).
    pub fn turn_deadline(&self) -> Option<Instant> {
        self.settle.deadline()
    }

    /// The turn, if it has settled by `now`: `turn_ended`, and in chat mode its words for
    /// the model.
    pub fn turn_due(&mut self, now: Instant) -> Vec<Effect> {
        let settled = self.settle.due(now);
        settled.into_iter().flat_map(|turn| self.turn_settled(turn)).collect()
    }

    /// The daemon went away: the turn it was hearing settles with what it said.
    pub fn daemon_lost(&mut self) -> Vec<Effect> {
        self.daemon_link(false);
        let settled = self.settle.flush();
        settled.into_iter().flat_map(|turn| self.turn_settled(turn)).collect()
    }

    fn turn_settled(&mut self, turn: Settled) -> Vec<Effect> {
        let mut effects = vec![Effect::Publish(AssistantEvent::TurnEnded(TurnEnded {
            seg_ids: turn.seg_ids.clone(),
            text: turn.text,
            speaker: turn.speaker.clone(),
        }))];
        if self.mode == Mode::Chat && !turn.chat_text.is_empty() {
            let id = self.next_id();
            effects.push(Effect::Publish(AssistantEvent::ChatMessage(ChatMessage {
                id,
                role: ChatRole::User,
                speaker: turn.speaker.clone(),
                text: turn.chat_text.clone(),
                partial: false,
                stopped: false,
            })));
            // The model is told who spoke, or that no one knows.
            let speaker = turn.speaker.map_or(turn::Speaker::Unknown, turn::Speaker::Named);
            effects.push(Effect::ChatTurn(ChatTurn {
                speaker,
                words: turn.chat_text,
                segs: turn.seg_ids,
            }));
        }
        effects
    }

    /// A daemon event: what it changes, and what is published of it.
    fn follow(&mut self, event: DaemonEvent, now: Instant) -> Vec<Effect> {
        match event {
            DaemonEvent::Heartbeat(beat) => {
                self.last_heartbeat = Some((now, beat));
                vec![]
            }
            DaemonEvent::SpeechStart(start) => {
                self.open_speech = Some(start.seg_id);
                self.settle.started(start.seg_id, start.start);
                vec![Effect::Publish(AssistantEvent::SpeechStart(start))]
            }
            DaemonEvent::SpeechStop(stop) => {
                if self.open_speech == Some(stop.seg_id) {
                    self.open_speech = None;
                }
                self.unfinished.insert(stop.seg_id);
                self.settle.stopped(stop.seg_id, stop.end, now);
                vec![Effect::Publish(AssistantEvent::SpeechStop(stop))]
            }
            DaemonEvent::SegmentDone(done) => {
                self.unfinished.remove(&done.seg_id);
                self.settle.done(done.seg_id);
                // Its partial words were shown, and no final replaced them (it heard
                // nothing real): the command text goes back to what is in the buffer.
                if self.live == Some(done.seg_id) {
                    self.live = None;
                    if self.mode == Mode::CommandArmed && !self.edited {
                        return vec![self.command_text()];
                    }
                }
                vec![]
            }
            DaemonEvent::TranscriptPartial(partial) => self.partial(partial),
            DaemonEvent::Transcript(transcript) => self.transcript(transcript, now),
            DaemonEvent::Speakers(mut roster) => {
                self.gone.retain(|id| roster.speakers.iter().any(|s| &s.id == id));
                roster.speakers.retain(|s| !self.gone.contains(&s.id));
                self.roster = self.named(roster);
                vec![Effect::Publish(AssistantEvent::Speakers(self.roster.clone()))]
            }
            DaemonEvent::Error(error) => vec![Effect::Publish(AssistantEvent::Error(error))],
            // The microphone's loudness is the owner's (what the voice hears of itself).
            DaemonEvent::Hello(_) | DaemonEvent::Levels(_) => vec![],
        }
    }

    /// A transcript's speaker's name, when identification matched a named speaker; `None`
    /// when the speaker is not known by name (viewers show it as unknown).
    pub fn speaker_name(&self, transcript: &Transcript) -> Option<String> {
        if transcript.speaker_status != SpeakerStatus::Matched {
            return None;
        }
        let roster = transcript.speaker_id.as_ref().and_then(|id| {
            self.roster.speakers.iter().find(|s| &s.id == id).and_then(|s| s.name.clone())
        });
        roster.or_else(|| transcript.speaker.clone())
    }

    /// Words of a segment still being spoken: relayed, and in `command_armed` shown after
    /// the command's words so far (the buffer itself waits for the final).
    fn partial(&mut self, partial: TranscriptPartial) -> Vec<Effect> {
        let words = partial.text.trim();
        let mut effects = Vec::with_capacity(2);
        if self.mode == Mode::CommandArmed && !self.edited && !words.is_empty() {
            let mut text = self.buffer.clone();
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(words);
            self.live = Some(partial.seg_id);
            effects.push(Effect::Publish(AssistantEvent::CommandText { text, edited: false }));
        }
        effects.insert(0, Effect::Publish(AssistantEvent::TranscriptPartial(partial)));
        effects
    }

    fn transcript(&mut self, mut transcript: Transcript, now: Instant) -> Vec<Effect> {
        let name = self.speaker_name(&transcript);
        transcript.speaker.clone_from(&name);
        let text = transcript.text.trim().to_owned();
        let seg_id = transcript.seg_id;
        self.settle.words(seg_id, &text, name.clone(), self.mode == Mode::Chat, now);
        let mut effects = vec![Effect::Publish(AssistantEvent::Transcript(transcript))];
        // Chat mode's words go to the model when the turn settles (`turn_settled`); a
        // command's join its buffer at once, for the person to see before they execute.
        if self.mode == Mode::CommandArmed && !self.edited && !text.is_empty() {
            if !self.buffer.is_empty() {
                self.buffer.push(' ');
            }
            self.buffer.push_str(&text);
            self.segs.push(seg_id);
            if self.live == Some(seg_id) {
                self.live = None;
            }
            effects.push(self.command_text());
        }
        if self.mode == Mode::Dictate && !text.is_empty() {
            effects.push(Effect::Dictate(text));
        }
        effects
    }

    fn command_text(&self) -> Effect {
        Effect::Publish(AssistantEvent::CommandText {
            text: self.buffer.clone(),
            edited: self.edited,
        })
    }

    fn set_mode(&mut self, mode: Mode, effects: &mut Vec<Effect>) {
        if self.mode != mode {
            self.mode = mode;
            effects.push(Effect::Publish(AssistantEvent::Mode { mode }));
        }
    }

    /// The command finished (or failed): back to idle.
    pub fn execution_finished(&mut self) -> Vec<Effect> {
        let mut effects = Vec::new();
        // Its calls wait no more.
        self.awaiting.clear();
        if self.mode == Mode::Executing {
            self.buffer.clear();
            self.segs.clear();
            self.edited = false;
            self.set_mode(Mode::Idle, &mut effects);
        }
        effects
    }

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
            self.set_mode(Mode::Executing, effects);
            effects.push(Effect::Execute {
                text: self.buffer.clone(),
                edited: self.edited,
                segs: self.segs.clone(),
            });
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
        self.set_mode(Mode::Executing, effects);
        effects.push(Effect::Execute {
            text: self.buffer.clone(),
            edited: self.edited,
            segs: self.segs.clone(),
        });
        Ok(())
    }
}

fn wrong_mode(message: &str) -> ErrorMsg {
    ErrorMsg::new(ErrorCode::WrongMode, message)
}

fn not_ready(message: impl Into<String>) -> ErrorMsg {
    ErrorMsg::new(ErrorCode::NotReady, format!("not ready: {}", message.into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use stt_proto::{AudioState, SegmentDone, Speaker, SpeakerState, SpeechStart, SpeechStop};

    const OUT: Outside = Outside {
        viewers: 0,
        llm_enabled: true,
        queue_has_room: true,
        model_loading: false,
        here: false,
    };

    fn beat(healthy: bool) -> DaemonEvent {
        DaemonEvent::Heartbeat(DaemonHeartbeat {
            seq: 1,
            uptime_s: 1.0,
            backlog: 2,
            stt_healthy: healthy,
            audio: AudioState::Capturing,
            model: "m".into(),
            remote: None,
        })
    }

    fn transcript(seg_id: u64, text: &str) -> DaemonEvent {
        DaemonEvent::Transcript(Transcript {
            seg_id,
            text: text.into(),
            language: "en".into(),
            start: 0.0,
            end: 1.0,
            duration: 1.0,
            speaker_id: None,
            speaker_status: SpeakerStatus::None,
            speaker: None,
            speaker_score: None,
        })
    }

    /// A core connected to a healthy daemon.
    fn ready() -> (Core, Instant) {
        let now = Instant::now();
        let mut core = Core::new(false, Duration::from_secs(3));
        core.daemon_link(true);
        core.daemon_event(beat(true), now);
        (core, now)
    }

    /// One utterance, spoken and transcribed.
    fn say(core: &mut Core, now: Instant, seg_id: u64, text: &str) -> Vec<Effect> {
        let mut effects =
            core.daemon_event(DaemonEvent::SpeechStart(SpeechStart { seg_id, start: 0.0 }), now);
        effects.extend(
            core.daemon_event(DaemonEvent::SpeechStop(SpeechStop { seg_id, end: 1.0 }), now),
        );
        effects.extend(core.daemon_event(transcript(seg_id, text), now));
        effects.extend(core.daemon_event(DaemonEvent::SegmentDone(SegmentDone { seg_id }), now));
        effects
    }

    #[track_caller]
    fn check(
        core: &mut Core,
        now: Instant,
        request: Request,
        outside: Outside,
        code: Option<ErrorCode>,
        needle: &str,
    ) -> Vec<Effect> {
        let (reply, effects) = core.request(&request, now, outside);
        match (reply, code) {
            (AssistantEvent::Ack(ack), None) => assert_eq!(ack.command, request.kind()),
            (AssistantEvent::Error(e), Some(code)) => {
                assert_eq!(e.code, code, "{}", e.message);
                assert!(e.message.contains(needle), "{:?} lacks {needle:?}", e.message);
                assert!(effects.is_empty(), "a refused request changes nothing: {effects:?}");
            }
            (other, _) => panic!("{request:?}: unexpected reply {other:?}"),
        }
        effects
    }

    #[test]
    fn the_two_press_flow_fills_the_buffer_and_executes_it() {
        let (mut core, now) = ready();
        let effects = check(&mut core, now, Request::CommandStart, OUT, None, "");
        assert!(
            effects.contains(&Effect::Publish(AssistantEvent::Mode { mode: Mode::CommandArmed }))
        );
        say(&mut core, now, 1, "what time");
        let effects = say(&mut core, now, 2, " is it ");
        assert!(effects.contains(&Effect::Publish(AssistantEvent::CommandText {
            text: "what time is it".into(),
            edited: false
        })));
        let effects =
            check(&mut core, now, Request::CommandExecute { wait_ms: None }, OUT, None, "");
        assert_eq!(core.mode(), Mode::Executing);
        assert!(effects.contains(&Effect::Execute {
            text: "what time is it".into(),
            edited: false,
            segs: vec![1, 2]
        }));
        // Transcripts while executing do not touch the command.
        say(&mut core, now, 3, "never mind");
        core.execution_finished();
        assert_eq!(core.mode(), Mode::Idle);
        assert_eq!(core.buffer(), ("", false));
    }

    fn partial(seg_id: u64, text: &str, committed_len: usize) -> DaemonEvent {
        DaemonEvent::TranscriptPartial(TranscriptPartial {
            seg_id,
            text: text.into(),
            committed_len,
        })
    }

    fn command_texts(effects: &[Effect]) -> Vec<&str> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Publish(AssistantEvent::CommandText { text, .. }) => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn an_armed_command_grows_with_the_words_being_spoken_and_keeps_only_finals() {
        let (mut core, now) = ready();
        check(&mut core, now, Request::CommandStart, OUT, None, "");
        say(&mut core, now, 1, "what time");
        // Relayed as they come, and shown after the command's words.
        let effects = core.daemon_event(partial(2, "is", 0), now);
        assert_eq!(
            effects[0],
            Effect::Publish(AssistantEvent::TranscriptPartial(TranscriptPartial {
                seg_id: 2,
                text: "is".into(),
                committed_len: 0
            }))
        );
        assert_eq!(command_texts(&effects), ["what time is"]);
        let effects = core.daemon_event(partial(2, "is it in", 5), now);
        assert_eq!(command_texts(&effects), ["what time is it in"]);
        assert_eq!(core.buffer(), ("what time", false), "the buffer waits for the final");
        // The final replaces the partial words.
        let effects = core.daemon_event(transcript(2, "is it"), now);
        assert_eq!(command_texts(&effects), ["what time is it"]);
        let effects = core.daemon_event(DaemonEvent::SegmentDone(SegmentDone { seg_id: 2 }), now);
        assert!(command_texts(&effects).is_empty(), "{effects:?}");
        // A segment whose final heard nothing real: its partial words go when it is done.
        core.daemon_event(partial(3, "uh", 0), now);
        let effects = core.daemon_event(DaemonEvent::SegmentDone(SegmentDone { seg_id: 3 }), now);
        assert_eq!(command_texts(&effects), ["what time is it"]);
        // Not armed: relayed only.
        check(&mut core, now, Request::CommandCancel, OUT, None, "");
        let effects = core.daemon_event(partial(4, "hello", 0), now);
        assert_eq!(effects.len(), 1, "{effects:?}");
        assert!(command_texts(&effects).is_empty());
    }

    #[test]
    fn cancel_while_executing_stops_the_command_and_idles_once_it_has_stopped() {
        let (mut core, now) = ready();
        check(&mut core, now, Request::CommandStart, OUT, None, "");
        say(&mut core, now, 1, "delete my files");
        check(&mut core, now, Request::CommandExecute { wait_ms: None }, OUT, None, "");
        let effects = check(&mut core, now, Request::CommandCancel, OUT, None, "");
        assert_eq!(effects, [Effect::CancelCommand]);
        assert_eq!(core.mode(), Mode::Executing, "running until the job says it stopped");
        let effects = core.execution_finished();
        assert_eq!(effects, [Effect::Publish(AssistantEvent::Mode { mode: Mode::Idle })]);
        check(
            &mut core,
            now,
            Request::CommandCancel,
            OUT,
            Some(ErrorCode::WrongMode),
            "no command armed or running",
        );
    }

    #[test]
    fn confirm_and_deny_answer_the_call_waiting_and_only_it() {
        let (mut core, now) = ready();
        let confirm = |id: Option<&str>| Request::Confirm { call_id: id.map(str::to_owned) };
        let deny = |id: Option<&str>| Request::Deny { call_id: id.map(str::to_owned) };
        let none = ErrorCode::NothingPending;
        check(&mut core, now, confirm(None), OUT, Some(none), "no tool call is waiting");

        core.confirmation_requested("call_1");
        check(&mut core, now, deny(Some("call_9")), OUT, Some(none), "no tool call 'call_9'");
        let effects = check(&mut core, now, confirm(None), OUT, None, "");
        assert_eq!(effects, [Effect::Answer { call_id: "call_1".into(), allow: true }]);
        check(&mut core, now, confirm(None), OUT, Some(none), "no tool call is waiting");

        core.confirmation_requested("call_2");
        core.confirmation_requested("call_3");
        let two = ErrorCode::BadMessage;
        check(&mut core, now, deny(None), OUT, Some(two), "2 tool calls are waiting");
        let effects = check(&mut core, now, deny(Some("call_3")), OUT, None, "");
        assert_eq!(effects, [Effect::Answer { call_id: "call_3".into(), allow: false }]);
        assert_eq!(core.awaiting(), ["call_2"]);
        // A call that timed out waits no more.
        core.confirmation_over("call_2");
        check(&mut core, now, confirm(Some("call_2")), OUT, Some(none), "'call_2'");
        // Nor do the calls of a command that ended.
        core.confirmation_requested("call_4");
        core.execution_finished();
        assert!(core.awaiting().is_empty());
    }

    #[test]
    fn an_edit_freezes_the_buffer() {
        let (mut core, now) = ready();
        check(&mut core, now, Request::CommandStart, OUT, None, "");
        say(&mut core, now, 1, "what dime is it");
        check(
            &mut core,
            now,
            Request::CommandEdit { text: "what time is it".into() },
            OUT,
            None,
            "",
        );
        say(&mut core, now, 2, "ignored");
        assert_eq!(core.buffer(), ("what time is it", true));
        let effects =
            check(&mut core, now, Request::CommandExecute { wait_ms: None }, OUT, None, "");
        assert!(effects.contains(&Effect::Execute {
            text: "what time is it".into(),
            edited: true,
            segs: vec![1]
        }));
    }

    #[test]
    fn execute_waits_for_readiness_and_says_which_condition_failed() {
        let (mut core, now) = ready();
        check(&mut core, now, Request::CommandStart, OUT, None, "");
        say(&mut core, now, 1, "open the door");

        core.daemon_event(DaemonEvent::SpeechStart(SpeechStart { seg_id: 2, start: 5.0 }), now);
        check(
            &mut core,
            now,
            Request::CommandExecute { wait_ms: None },
            OUT,
            Some(ErrorCode::NotReady),
            "speech is still open (segment 2)",
        );
        core.daemon_event(DaemonEvent::SpeechStop(SpeechStop { seg_id: 2, end: 6.0 }), now);
        check(
            &mut core,
            now,
            Request::CommandExecute { wait_ms: None },
            OUT,
            Some(ErrorCode::NotReady),
            "segment 2 is still being transcribed",
        );
        core.daemon_event(DaemonEvent::SegmentDone(SegmentDone { seg_id: 2 }), now);

        let later = now + Duration::from_secs(4);
        check(
            &mut core,
            later,
            Request::CommandExecute { wait_ms: None },
            OUT,
            Some(ErrorCode::NotReady),
            "no heartbeat from stt-daemon for 4.0 s",
        );
        core.daemon_event(beat(false), later);
        check(
            &mut core,
            later,
            Request::CommandExecute { wait_ms: None },
            OUT,
            Some(ErrorCode::NotReady),
            "not running",
        );
        core.daemon_event(beat(true), later);

        let mut strict = Core::new(true, Duration::from_secs(3));
        strict.daemon_link(true);
        strict.daemon_event(beat(true), now);
        check(&mut strict, now, Request::CommandStart, OUT, None, "");
        say(&mut strict, now, 1, "open the door");
        check(
            &mut strict,
            now,
            Request::CommandExecute { wait_ms: None },
            OUT,
            Some(ErrorCode::NotReady),
            "require_viewer",
        );
        check(
            &mut strict,
            now,
            Request::CommandExecute { wait_ms: None },
            Outside { viewers: 1, ..OUT },
            None,
            "",
        );

        check(
            &mut core,
            later,
            Request::CommandExecute { wait_ms: None },
            Outside { llm_enabled: false, ..OUT },
            Some(ErrorCode::NoExecutor),
            "no executor configured",
        );
        check(
            &mut core,
            later,
            Request::CommandExecute { wait_ms: None },
            Outside { model_loading: true, ..OUT },
            Some(ErrorCode::NotReady),
            "still loading",
        );
        check(
            &mut core,
            later,
            Request::CommandExecute { wait_ms: None },
            Outside { queue_has_room: false, ..OUT },
            Some(ErrorCode::Busy),
            "busy",
        );
        check(&mut core, later, Request::CommandExecute { wait_ms: None }, OUT, None, "");
    }

    #[test]
    fn a_lost_daemon_link_is_not_ready() {
        let (mut core, now) = ready();
        check(&mut core, now, Request::CommandStart, OUT, None, "");
        say(&mut core, now, 1, "lights off");
        core.daemon_link(false);
        check(
            &mut core,
            now,
            Request::CommandExecute { wait_ms: None },
            OUT,
            Some(ErrorCode::NotReady),
            "not connected to stt-daemon",
        );
    }

    fn turns_ended(effects: &[Effect]) -> Vec<TurnEnded> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Publish(AssistantEvent::TurnEnded(t)) => Some(t.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn chat_sends_one_message_per_settled_turn_and_every_mode_hears_turns_end() {
        let (core, t0) = ready();
        let mut core = core.with_settle(Duration::from_millis(600));
        let at = |ms| t0 + Duration::from_millis(ms);
        // Idle: the turn ends, nothing goes to the model.
        let effects = say(&mut core, at(0), 1, "The oven is still on.");
        assert!(turns_ended(&effects).is_empty(), "not yet settled");
        let effects = core.turn_due(at(600));
        assert_eq!(turns_ended(&effects)[0].text, "The oven is still on.");
        assert!(!effects.iter().any(|e| matches!(e, Effect::ChatTurn(_))));

        check(&mut core, at(700), Request::ChatToggle, OUT, None, "");
        say(&mut core, at(1000), 2, "Remind me to call Ana,");
        assert_eq!(core.turn_deadline(), Some(at(1600)));
        let effects = say(&mut core, at(1400), 3, "after lunch tomorrow.");
        assert!(!effects.iter().any(|e| matches!(e, Effect::ChatTurn(_))), "{effects:?}");
        assert!(core.turn_due(at(1999)).is_empty());
        let effects = core.turn_due(at(2000));
        assert_eq!(turns_ended(&effects)[0].seg_ids, [2, 3]);
        assert!(effects.contains(&Effect::ChatTurn(ChatTurn {
            speaker: crate::turn::Speaker::Unknown,
            words: "Remind me to call Ana, after lunch tomorrow.".into(),
            segs: vec![2, 3]
        })));

        // `clear` forgets what was being said; a lost daemon settles it at once.
        say(&mut core, at(3000), 4, "forget this");
        check(&mut core, at(3100), Request::Clear, OUT, None, "");
        assert!(core.turn_due(at(9000)).is_empty());
        say(&mut core, at(9000), 5, "half a");
        let effects = core.daemon_lost();
        assert_eq!(turns_ended(&effects)[0].text, "half a");
    }

    #[test]
    fn dictation_types_each_final_and_excludes_commands_and_chat() {
        let (mut core, now) = ready();
        let effects = check(&mut core, now, Request::DictateToggle, OUT, None, "");
        assert!(effects.contains(&Effect::Dictation { on: true }), "{effects:?}");
        assert_eq!(core.mode(), Mode::Dictate);
        // Asked again: already on, nothing starts twice.
        let effects = check(&mut core, now, Request::DictateStart, OUT, None, "");
        assert!(effects.is_empty(), "{effects:?}");

        // Partials are shown, never typed; each final is typed, an empty one not.
        let effects = core.daemon_event(partial(1, "buy milk and", 0), now);
        assert!(!effects.iter().any(|e| matches!(e, Effect::Dictate(_))), "{effects:?}");
        let effects = say(&mut core, now, 1, " Buy milk and eggs. ");
        assert!(effects.contains(&Effect::Dictate("Buy milk and eggs.".into())), "{effects:?}");
        let effects = say(&mut core, now, 2, "");
        assert!(!effects.iter().any(|e| matches!(e, Effect::Dictate(_))), "{effects:?}");
        // Nothing goes to the model while dictating.
        let effects = core.turn_due(now + Duration::from_secs(60));
        assert!(!effects.iter().any(|e| matches!(e, Effect::ChatTurn(_))), "{effects:?}");

        for request in
            [Request::CommandStart, Request::ChatToggle, Request::ChatSend { text: "hi".into() }]
        {
            check(&mut core, now, request, OUT, Some(ErrorCode::WrongMode), "dictate-stop");
        }
        let effects = check(&mut core, now, Request::DictateToggle, OUT, None, "");
        assert!(effects.contains(&Effect::Dictation { on: false }), "{effects:?}");
        assert_eq!(core.mode(), Mode::Idle);
        check(&mut core, now, Request::DictateStop, OUT, Some(ErrorCode::WrongMode), "not on");
        let effects = say(&mut core, now, 3, "Not for the window.");
        assert!(!effects.iter().any(|e| matches!(e, Effect::Dictate(_))), "{effects:?}");

        // From chat or a command, dictation waits until they are left.
        check(&mut core, now, Request::ChatToggle, OUT, None, "");
        check(&mut core, now, Request::DictateStart, OUT, Some(ErrorCode::WrongMode), "chat");
        check(&mut core, now, Request::ChatToggle, OUT, None, "");
        check(&mut core, now, Request::CommandStart, OUT, None, "");
        check(&mut core, now, Request::DictateToggle, OUT, Some(ErrorCode::WrongMode), "command");
    }

    #[test]
    fn command_and_chat_exclude_each_other() {
        let (mut core, now) = ready();
        check(&mut core, now, Request::ChatToggle, OUT, None, "");
        assert_eq!(core.mode(), Mode::Chat);
        check(
            &mut core,
            now,
            Request::CommandStart,
            OUT,
            Some(ErrorCode::WrongMode),
            "chat mode is on",
        );
        let effects = say(&mut core, now, 1, "tell me a joke");
        assert!(effects.contains(&Effect::ChatTurn(ChatTurn {
            speaker: crate::turn::Speaker::Unknown,
            words: "tell me a joke".into(),
            segs: vec![1]
        })));
        let effects = check(&mut core, now, Request::ChatToggle, OUT, None, "");
        assert!(effects.contains(&Effect::DropQueuedChat));
        check(&mut core, now, Request::CommandStart, OUT, None, "");
        check(
            &mut core,
            now,
            Request::ChatToggle,
            OUT,
            Some(ErrorCode::WrongMode),
            "cancel or finish it first",
        );
        check(&mut core, now, Request::CommandCancel, OUT, None, "");
        assert_eq!(core.mode(), Mode::Idle);
        check(
            &mut core,
            now,
            Request::CommandExecute { wait_ms: None },
            OUT,
            Some(ErrorCode::WrongMode),
            "arm a command first",
        );
        check(
            &mut core,
            now,
            Request::CommandEdit { text: "x".into() },
            OUT,
            Some(ErrorCode::WrongMode),
            "arm a command first",
        );
    }

    #[test]
    fn an_empty_command_is_refused() {
        let (mut core, now) = ready();
        check(&mut core, now, Request::CommandStart, OUT, None, "");
        check(
            &mut core,
            now,
            Request::CommandExecute { wait_ms: None },
            OUT,
            Some(ErrorCode::BadMessage),
            "the command is empty",
        );
    }

    #[test]
    fn clear_keeps_the_mode() {
        let (mut core, now) = ready();
        check(&mut core, now, Request::ChatToggle, OUT, None, "");
        let effects = check(&mut core, now, Request::Clear, OUT, None, "");
        assert_eq!(
            effects,
            vec![Effect::ClearHistory, Effect::Publish(AssistantEvent::Cleared {})]
        );
        assert_eq!(core.mode(), Mode::Chat);
    }

    #[test]
    fn speakers_are_resolved_named_or_unknown_and_validated() {
        let (mut core, now) = ready();
        let roster = Speakers {
            speakers: vec![Speaker {
                id: "spk_0001".into(),
                name: Some("Efren".into()),
                status: SpeakerState::Confirmed,
                cumulative_s: 10.0,
                sample_path: None,
                created_at: "2026-11-30T09:00:00Z".into(),
            }],
        };
        core.daemon_event(DaemonEvent::Speakers(roster), now);
        let DaemonEvent::Transcript(mut t) = transcript(1, "hi") else { unreachable!() };
        t.speaker_id = Some("spk_0001".into());
        t.speaker_status = SpeakerStatus::Matched;
        assert_eq!(core.speaker_name(&t).as_deref(), Some("Efren"));
        t.speaker_status = SpeakerStatus::Uncertain;
        assert_eq!(core.speaker_name(&t), None);
        t.speaker_id = Some("spk_0002".into());
        t.speaker_status = SpeakerStatus::Matched;
        assert_eq!(core.speaker_name(&t), None);

        check(
            &mut core,
            now,
            Request::SpeakerName { speaker_id: "spk_0009".into(), name: "X".into() },
            OUT,
            Some(ErrorCode::UnknownSpeaker),
            "spk_0009",
        );
        check(
            &mut core,
            now,
            Request::SpeakerName { speaker_id: "spk_0001".into(), name: "  ".into() },
            OUT,
            Some(ErrorCode::BadMessage),
            "empty",
        );
        let effects = check(
            &mut core,
            now,
            Request::SpeakerName { speaker_id: "spk_0001".into(), name: "Ef".into() },
            OUT,
            None,
            "",
        );
        let Some(Effect::Publish(AssistantEvent::Speakers(renamed))) = effects.get(1) else {
            panic!("{effects:?}")
        };
        assert_eq!(renamed.speakers[0].name.as_deref(), Some("Ef"), "viewers get the new name");
        assert_eq!(
            effects[0],
            Effect::NameSpeaker { speaker_id: "spk_0001".into(), name: "Ef".into() }
        );
        t.speaker_id = Some("spk_0001".into());
        assert_eq!(core.speaker_name(&t).as_deref(), Some("Ef"), "transcripts show it at once");

        // The daemon's next roster does not know the name; the given one still wins, and it
        // outlives the process (the assistant saves `names()` and starts `with_names`).
        let mut unnamed = core.roster().clone();
        unnamed.speakers[0].name = None;
        core.daemon_event(DaemonEvent::Speakers(unnamed.clone()), now);
        assert_eq!(core.speaker_name(&t).as_deref(), Some("Ef"));
        let mut next = ready().0.with_names(core.names().clone());
        next.daemon_event(DaemonEvent::Speakers(unnamed), now);
        assert_eq!(next.speaker_name(&t).as_deref(), Some("Ef"));
    }

    /// A core that has the daemon's roster of `speakers` (id, name).
    fn with_roster(speakers: &[(&str, Option<&str>)]) -> (Core, Instant) {
        let (mut core, now) = ready();
        let speakers = speakers
            .iter()
            .map(|(id, name)| Speaker {
                id: (*id).into(),
                name: name.map(Into::into),
                status: SpeakerState::Confirmed,
                cumulative_s: 10.0,
                sample_path: None,
                created_at: "2026-11-30T09:00:00Z".into(),
            })
            .collect();
        core.daemon_event(DaemonEvent::Speakers(Speakers { speakers }), now);
        (core, now)
    }

    /// The ids and names of the roster an effect publishes.
    fn published(effects: &[Effect]) -> Vec<(String, Option<String>)> {
        let Some(Effect::Publish(AssistantEvent::Speakers(roster))) = effects.last() else {
            panic!("no roster published: {effects:?}")
        };
        roster.speakers.iter().map(|s| (s.id.clone(), s.name.clone())).collect()
    }

    fn pair(id: &str, name: Option<&str>) -> (String, Option<String>) {
        (id.into(), name.map(Into::into))
    }

    #[test]
    fn forget_and_merge_are_refused_for_ids_not_in_the_roster_and_bad_ids() {
        let (mut core, now) = with_roster(&[("spk_0001", Some("Ana")), ("spk_0002", None)]);
        let forget = |id: &str| Request::SpeakerForget { speaker_id: id.into() };
        let merge = |id: &str, into: &str| Request::SpeakerMerge {
            speaker_id: id.into(),
            into: into.into(),
        };
        for (request, code, needle) in [
            (forget("spk_0009"), ErrorCode::UnknownSpeaker, "no speaker 'spk_0009'"),
            (forget(""), ErrorCode::BadMessage, "empty"),
            (merge("spk_0009", "spk_0001"), ErrorCode::UnknownSpeaker, "'spk_0009'"),
            (merge("spk_0002", "spk_0009"), ErrorCode::UnknownSpeaker, "'spk_0009'"),
            (merge("spk_0001", "spk_0001"), ErrorCode::BadMessage, "into itself"),
            (merge("", "spk_0001"), ErrorCode::BadMessage, "empty"),
            (merge("spk_0001", " "), ErrorCode::BadMessage, "empty"),
        ] {
            check(&mut core, now, request, OUT, Some(code), needle);
        }
        let unknown = core.request(&forget("spk_0009"), now, OUT).0;
        let AssistantEvent::Error(e) = unknown else { panic!("{unknown:?}") };
        assert!(e.message.contains("`stt-ctl speaker-list`"), "names the fix: {e:?}");
        assert_eq!(core.roster().speakers.len(), 2, "nothing changed");
    }

    #[test]
    fn forgetting_drops_the_speaker_and_its_name_until_the_daemon_has_too() {
        let (mut core, now) = with_roster(&[("spk_0001", None), ("spk_0003", None)]);
        check(
            &mut core,
            now,
            Request::SpeakerName { speaker_id: "spk_0003".into(), name: "Bo".into() },
            OUT,
            None,
            "",
        );
        let effects = check(
            &mut core,
            now,
            Request::SpeakerForget { speaker_id: "spk_0003".into() },
            OUT,
            None,
            "",
        );
        assert_eq!(effects[0], Effect::ForgetSpeaker { speaker_id: "spk_0003".into() });
        assert_eq!(published(&effects), [pair("spk_0001", None)], "viewers see it go at once");
        assert!(core.names().is_empty(), "its name goes with it: {:?}", core.names());

        // A roster the daemon sent before it read the edit does not bring it back…
        let before = with_roster(&[("spk_0001", None), ("spk_0003", None), ("spk_0005", None)]);
        let stale = before.0.roster().clone();
        let effects = core.daemon_event(DaemonEvent::Speakers(stale.clone()), now);
        assert_eq!(published(&effects), [pair("spk_0001", None), pair("spk_0005", None)]);
        // …and once the daemon's roster is without it, nothing more is held back.
        let mut applied = stale;
        applied.speakers.retain(|s| s.id != "spk_0003");
        core.daemon_event(DaemonEvent::Speakers(applied), now);
        assert!(core.gone.is_empty(), "{:?}", core.gone);
    }

    #[test]
    fn merging_moves_the_name_only_to_an_unnamed_speaker() {
        // Ana's name goes to the unnamed speaker that stays.
        let (mut core, now) = with_roster(&[("spk_0001", None), ("spk_0004", None)]);
        core.names.insert("spk_0004".into(), "Ana".into());
        core.roster = core.named(core.roster.clone());
        let effects = check(
            &mut core,
            now,
            Request::SpeakerMerge { speaker_id: "spk_0004".into(), into: "spk_0001".into() },
            OUT,
            None,
            "",
        );
        assert_eq!(
            effects[0],
            Effect::MergeSpeaker { speaker_id: "spk_0004".into(), into: "spk_0001".into() }
        );
        assert_eq!(published(&effects), [pair("spk_0001", Some("Ana"))]);
        assert_eq!(core.names(), &BTreeMap::from([("spk_0001".into(), "Ana".into())]));

        // A speaker that has a name keeps it; the other's goes.
        let (mut core, now) =
            with_roster(&[("spk_0001", Some("Efren")), ("spk_0002", None), ("spk_0004", None)]);
        for (id, name) in [("spk_0001", "Ef"), ("spk_0004", "Ana")] {
            let name = Request::SpeakerName { speaker_id: id.into(), name: name.into() };
            check(&mut core, now, name, OUT, None, "");
        }
        let effects = check(
            &mut core,
            now,
            Request::SpeakerMerge { speaker_id: "spk_0004".into(), into: "spk_0001".into() },
            OUT,
            None,
            "",
        );
        assert_eq!(published(&effects), [pair("spk_0001", Some("Ef")), pair("spk_0002", None)]);
        assert_eq!(core.names(), &BTreeMap::from([("spk_0001".into(), "Ef".into())]));

        // A name the daemon's roster carries counts as a name (it came from the names file).
        let (mut core, now) = with_roster(&[("spk_0001", Some("Efren")), ("spk_0004", None)]);
        let effects = check(
            &mut core,
            now,
            Request::SpeakerMerge { speaker_id: "spk_0001".into(), into: "spk_0004".into() },
            OUT,
            None,
            "",
        );
        assert_eq!(published(&effects), [pair("spk_0004", Some("Efren"))]);
    }
}
