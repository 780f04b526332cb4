//! The assistant's state and rules, with no I/O: modes, the two-press command flow, the
//! readiness gate, what transcripts do in each mode, the tool calls waiting for a yes or no,
//! and the speaker roster.
//!
//! Everything that happens comes in as a method call ([`Core::request`],
//! [`Core::daemon_event`], …) and goes out as [`Effect`]s for the caller to carry out
//! (publish an event, start a command, send a chat turn), so the rules are tested here
//! without sockets or a model. This file keeps the state and what the daemon's events do;
//! [`requests`] what each request does; `tests` the rules as tables and scripts.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use stt_proto::{
    AssistantEvent, ChatMessage, ChatRole, DaemonEvent, DaemonHeartbeat, Mode, SpeakerStatus,
    Speakers, Transcript, TranscriptPartial, TurnEnded,
};

mod requests;

use crate::ids::Ids;
use crate::settle::{Settle, Settled};
use crate::spoken::{self, Flow, Stage};
use crate::turn::{self, ChatTurn};

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
    /// The wake phrase armed a command: a short sound says it listens.
    Earcon,
    /// A spoken turn ended: execute the command, as Enter would.
    RunSpoken,
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
    /// How a spoken turn goes, when the wake phrase starts one (`[wake]`).
    wake: Option<Flow>,
    /// The spoken turn under way, if any.
    spoken: Option<Stage>,
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
            wake: None,
            spoken: None,
        }
    }

    /// Takes a spoken turn without a key when the daemon hears the wake phrase.
    pub fn with_wake(mut self, flow: Flow) -> Self {
        self.wake = Some(flow);
        self
    }

    /// The wake phrase's words, when `[wake]` is on.
    pub fn wake_phrase(&self) -> Option<&[String]> {
        self.wake.as_ref().map(|flow| flow.phrase.as_slice())
    }

    /// The spoken turn under way, if any.
    pub fn spoken(&self) -> Option<Stage> {
        self.spoken
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

    /// The wake phrase the daemon listens for, by its last heartbeat.
    pub fn wake_listened(&self) -> Option<String> {
        self.last_heartbeat.as_ref().and_then(|(_, beat)| beat.wake.clone())
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

    /// When the turn being spoken settles, or a spoken turn gives up waiting for words, if
    /// nothing else happens ([`Core::turn_due`]).
    pub fn turn_deadline(&self) -> Option<Instant> {
        let gives_up = self.spoken.zip(self.wake.as_ref()).and_then(|(s, f)| s.deadline(f));
        [self.settle.deadline(), gives_up].into_iter().flatten().min()
    }

    /// The turn, if it has settled by `now`: `turn_ended`, and in chat mode its words for
    /// the model; and a spoken turn that waited long enough for words, given up.
    pub fn turn_due(&mut self, now: Instant) -> Vec<Effect> {
        let settled = self.settle.due(now);
        let mut effects: Vec<Effect> =
            settled.into_iter().flat_map(|turn| self.turn_settled(turn)).collect();
        effects.extend(self.spoken_due(now));
        effects
    }

    /// A chat reply was given at `now`: a chat the wake phrase started listens `follow_up`
    /// for more, then ends.
    pub fn chat_answered(&mut self, now: Instant) {
        let follow_up = self.wake.as_ref().filter(|f| f.chat).map(|f| f.follow_up);
        if let (Some(follow_up), Some(_), Mode::Chat) = (follow_up, self.spoken, self.mode) {
            self.spoken = Some(Stage::FollowUp { until: now + follow_up });
        }
    }

    /// A spoken turn that waited for words past its deadline, with nothing being said: back
    /// to idle (after the name alone, saying so).
    fn spoken_due(&mut self, now: Instant) -> Vec<Effect> {
        let (Some(stage), Some(flow)) = (self.spoken, self.wake.as_ref()) else { return vec![] };
        let over = stage.deadline(flow).is_some_and(|at| at <= now);
        if !over || self.settle.hearing() {
            return vec![];
        }
        if self.mode == Mode::Chat && flow.chat {
            // A spoken chat: quiet long enough after a reply (or after the name), it ends.
            self.spoken = None;
            let mut effects = Vec::new();
            self.set_mode(Mode::Idle, &mut effects);
            effects.push(Effect::DropQueuedChat);
            return effects;
        }
        if self.mode != Mode::CommandArmed {
            return vec![];
        }
        self.spoken = None;
        let mut effects = Vec::new();
        if matches!(stage, Stage::Named { .. }) && self.buffer.is_empty() {
            let id = self.next_id();
            effects.push(Effect::Publish(AssistantEvent::ChatMessage(ChatMessage {
                id,
                role: ChatRole::Note,
                speaker: None,
                text: "Heard the name, then nothing: say it again with what to do.".into(),
                partial: false,
                stopped: false,
            })));
        }
        self.buffer.clear();
        self.segs.clear();
        self.edited = false;
        self.set_mode(Mode::Idle, &mut effects);
        effects
    }

    /// The daemon heard the wake phrase: from idle, or in the listening after an answer, a
    /// command is armed without a key and a sound says so.
    fn woken(&mut self, now: Instant) -> Vec<Effect> {
        let Some(flow) = self.wake.as_ref() else { return vec![] };
        if flow.chat {
            // A conversation: from idle, or again in one a spoken turn started.
            if self.mode != Mode::Idle && !(self.mode == Mode::Chat && self.spoken.is_some()) {
                return vec![];
            }
            let mut effects = Vec::new();
            self.spoken = Some(Stage::Named { since: now, strip: true });
            self.set_mode(Mode::Chat, &mut effects);
            effects.push(Effect::Earcon);
            return effects;
        }
        let following_up = matches!(self.spoken, Some(Stage::FollowUp { .. }));
        if self.mode != Mode::Idle && !(self.mode == Mode::CommandArmed && following_up) {
            return vec![];
        }
        let mut effects = Vec::new();
        self.buffer.clear();
        self.segs.clear();
        self.edited = false;
        self.spoken = Some(Stage::Named { since: now, strip: true });
        self.set_mode(Mode::CommandArmed, &mut effects);
        effects.push(self.command_text());
        effects.push(Effect::Earcon);
        effects
    }

    /// What a spoken turn makes of a final's words: the wake phrase taken off the first ones
    /// after the name; a "stop" in the listening after an answer ends it. `None`: the words
    /// are used up.
    fn spoken_words(&mut self, text: String, now: Instant) -> Option<String> {
        let Some(flow) = self.wake.as_ref() else { return Some(text) };
        match self.spoken {
            Some(Stage::Named { since, strip: true }) if !text.is_empty() => {
                self.spoken = Some(Stage::Named { since, strip: false });
                Some(spoken::without_phrase(&text, &flow.phrase))
            }
            Some(Stage::FollowUp { .. }) if !text.is_empty() => {
                if spoken::is_enough(&text) {
                    self.spoken = Some(Stage::FollowUp { until: now });
                    return None;
                }
                self.spoken = Some(Stage::Named { since: now, strip: false });
                Some(text)
            }
            _ => Some(text),
        }
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
        // A spoken command with words runs when its turn ends, without Enter: said by whoever
        // may ([`Flow::only`]); another voice's is dropped.
        let spoken = matches!(self.spoken, Some(Stage::Named { .. }));
        if spoken && self.mode == Mode::CommandArmed && !self.buffer.trim().is_empty() {
            let may = self.wake.as_ref().is_none_or(|flow| flow.may_run(turn.speaker.as_deref()));
            if may {
                effects.push(Effect::RunSpoken);
            } else {
                tracing::info!(speaker = ?turn.speaker, "a spoken command in another voice: dropped");
                self.spoken = None;
                self.buffer.clear();
                self.segs.clear();
                self.set_mode(Mode::Idle, &mut effects);
            }
        }
        if self.mode == Mode::Chat && !turn.chat_text.is_empty() {
            // A chat the wake phrase started waits for the reply before listening on.
            if self.spoken.is_some() {
                self.spoken = Some(Stage::Running);
            }
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
            // The microphone's loudness is the owner's (what the voice hears of itself). A
            // wake phrase heard starts nothing yet: the spoken turn without a key is to come
            // (issue 47), and `[wake]` is off until it does.
            DaemonEvent::Hello(_) | DaemonEvent::Levels(_) => vec![],
            DaemonEvent::Wake(wake) => {
                let mut effects = vec![Effect::Publish(AssistantEvent::Wake(wake))];
                effects.extend(self.woken(now));
                effects
            }
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
        let chat = self.mode == Mode::Chat;
        let mut effects = vec![Effect::Publish(AssistantEvent::Transcript(transcript))];
        // A spoken yes or no to the tool call waiting for one, in a spoken turn.
        if self.mode == Mode::Executing
            && self.spoken == Some(Stage::Running)
            && let (Some(call_id), Some(allow)) = (self.awaiting.first(), spoken::answer(&text))
        {
            let call_id = call_id.clone();
            self.settle.words(seg_id, &text, name, chat, now);
            self.confirmation_over(&call_id);
            effects.push(Effect::Answer { call_id, allow });
            return effects;
        }
        // The turn's words: without the wake phrase said with them; none for a "stop".
        let kept = self.spoken_words(text, now);
        self.settle.words(seg_id, kept.as_deref().unwrap_or_default(), name, chat, now);
        let Some(text) = kept else {
            // "Stop" after an answer: the listening ends once the turn is over.
            effects.extend(self.spoken_due(now));
            return effects;
        };
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

    /// The command finished (or failed) at `now`: back to idle, or, after a spoken one,
    /// listening for the next without the name a while ([`Flow::follow_up`]).
    pub fn execution_finished(&mut self, now: Instant) -> Vec<Effect> {
        let mut effects = Vec::new();
        // Its calls wait no more.
        self.awaiting.clear();
        if self.mode == Mode::Executing {
            self.buffer.clear();
            self.segs.clear();
            self.edited = false;
            let follow_up = self.wake.as_ref().map_or(Duration::ZERO, |f| f.follow_up);
            if self.spoken == Some(Stage::Running) && !follow_up.is_zero() {
                self.spoken = Some(Stage::FollowUp { until: now + follow_up });
                self.set_mode(Mode::CommandArmed, &mut effects);
                effects.push(self.command_text());
            } else {
                self.spoken = None;
                self.set_mode(Mode::Idle, &mut effects);
            }
        }
        effects
    }
}

#[cfg(test)]
mod tests;
