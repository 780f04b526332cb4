//! The owner's side of the voice: starting and toggling the lane, handing it a reply's
//! sentences as they complete, hushing it, and what the microphone hears while it speaks.
//!
//! While the voice is audible ([`Echo::audible`](crate::echo::Echo::audible)), a segment the daemon opens is *overheard*:
//! its words are judged against what the voice said around then ([`crate::echo::judge`]).
//! Its own words coming back are echo: their partials are not relayed and their final is
//! relayed empty, so they are no one's turn and start nothing. A person's words are a
//! barge-in: the owner's one interrupt ([`Owner::interrupt`], [`Need::BargeIn`]) stops the
//! voice and the chat reply it was saying, and the segment's text is the person's words
//! alone. A speech start well into a piece (past [`crate::echo::ONSET`]) cannot be that
//! piece's echo starting, so it barges in at once; one near a piece's start waits for words.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use stt_proto::{AssistantEvent, DaemonEvent, ErrorCode, ErrorMsg, LaneState};

use super::{Input, Owner};
use crate::echo::Heard;
use crate::kind::Need;
use crate::lane::{Board, State};

/// The lane's name in `status`.
const LANE: &str = "voice";

/// What a person is told when they spoke over the voice and whisper heard only the voice.
pub(crate) const LOST_OVER_THE_VOICE: &str = "you spoke over the voice and it stopped, but \
     only its own words were heard: please say it again (an echo-cancelling microphone helps: \
     docs/VOICE.md)";

/// The voice lane and what the loop keeps of it.
#[derive(Debug)]
pub(super) struct Side {
    /// The lane; none when its thread could not start (said at start, and to `voice_on`).
    pub lane: Option<crate::voice::Voice>,
    /// The voice is loaded and its output open (it said it is ready).
    pub ready: bool,
    /// Whether replies are spoken now (`[voice].enabled`, then `voice_toggle`).
    pub on: bool,
    /// Why espeak-ng speaks instead of the Piper voice, until it has been told (with the
    /// first reply spoken, when someone is there to hear it and read it).
    pub fallback: Option<String>,
    /// What the voice said lately, and when: what the microphone may hear back.
    pub echo: crate::echo::Echo,
    /// How loud the voice played and the microphone heard it: a person over the voice.
    pub talk: crate::talk::Talk,
    /// Segments opened while the voice was audible, by id, until their `segment_done`.
    pub overheard: HashMap<u64, Overheard>,
}

impl Side {
    /// Starts the lane's thread, which loads nothing until the voice is first turned on.
    pub fn start(
        settings: crate::voice::Settings,
        inputs: &tokio::sync::mpsc::UnboundedSender<Input>,
        lanes: &mut Board,
    ) -> Self {
        let lane = match crate::voice::spawn(settings, crate::lane::Sink::to(inputs, Input::Voice))
        {
            Ok((lane, thread)) => {
                lanes.add(LANE, lane.gauge(), LaneState::Started, [thread]);
                Some(lane)
            }
            Err(e) => {
                let why = format!("the voice is off: cannot start its thread: {e}");
                tracing::error!("{why}");
                lanes.failed(LANE, why);
                None
            }
        };
        Self {
            lane,
            ready: false,
            on: false,
            fallback: None,
            echo: crate::echo::Echo::default(),
            talk: crate::talk::Talk::new(),
            overheard: HashMap::new(),
        }
    }
}

/// A segment opened while the voice was audible.
#[derive(Debug, Clone)]
pub(super) struct Overheard {
    /// When its speech start arrived.
    since: Instant,
    /// It was taken for a person, and the voice stopped for it.
    person: bool,
    /// The person's words in its latest partial: its final may lose them to the voice's,
    /// which filled the segment before they spoke (whisper writes the louder voice).
    words: Option<String>,
    /// How long after a piece began its speech started.
    onset: Option<Duration>,
}

impl Owner {
    pub(super) fn on_voice(&mut self, report: crate::voice::Report) {
        match report {
            crate::voice::Report::State(state) => self.voice_state(state),
            crate::voice::Report::Playing { text, from, to, levels } => {
                self.voice.echo.played(&text, from, to);
                self.voice.talk.played(from, &levels);
            }
            crate::voice::Report::Failed { why } => self.error(ErrorCode::Internal, why),
        }
    }

    fn voice_state(&mut self, state: State<crate::voice::Loaded>) {
        self.lanes.saw(LANE, &state);
        match state {
            State::Ready(crate::voice::Loaded { voice, output, fallback }) => {
                tracing::info!(voice, output, "the voice is ready");
                self.voice.ready = true;
                self.voice.fallback = fallback;
            }
            State::Off { why } => {
                // Off until asked again (the next `voice_on` has the lane try again).
                self.voice.ready = false;
                self.voice.on = false;
                self.error(ErrorCode::Internal, why);
            }
        }
    }

    /// Replies spoken from now on: the lane loads the voice the first time (on its own
    /// thread; it says if it cannot).
    pub(super) fn voice_on(&mut self) -> Result<(), String> {
        let Some(voice) = &self.voice.lane else {
            return Err("the voice is off: its thread could not start (see the log)".into());
        };
        voice.load();
        self.voice.on = true;
        Ok(())
    }

    /// `voice_toggle`: spoken replies on or off; answered with the status that says which.
    pub(super) fn voice_toggle(&mut self) -> AssistantEvent {
        if self.voice.on {
            self.hush();
            self.voice.on = false;
            tracing::info!("spoken replies off");
        } else if let Err(why) = self.voice_on() {
            return AssistantEvent::Error(ErrorMsg::new(ErrorCode::Internal, why));
        } else {
            tracing::info!("spoken replies on");
        }
        AssistantEvent::Status(self.status())
    }

    /// Hands the voice what of the running job's answer is new and whole: its finished
    /// sentences while it streams (`done` false), all of it once it is done.
    pub(super) fn speak_answer(&mut self, done: bool) {
        let (true, Some(voice), Some(running)) =
            (self.voice.on, &self.voice.lane, self.jobs.running.as_mut())
        else {
            return;
        };
        if running.spoken == usize::MAX {
            return; // hushed
        }
        let from = running.spoken.min(running.answer.len());
        let end = if done {
            Some(running.answer.len())
        } else {
            crate::voice::sentence_end(&running.answer, from)
        };
        if let Some(end) = end.filter(|&end| end > from)
            && let Some(piece) = running.answer.get(from..end)
        {
            voice.say(piece);
            running.spoken = end;
            // The robotic voice is explained as it is first heard.
            if let Some(why) = self.voice.fallback.take() {
                self.error(ErrorCode::Internal, why);
            }
        }
    }

    /// Stops the voice mid-sentence: a person stopped, cancelled or cleared, asked for
    /// something new, or spoke over it.
    pub(super) fn hush(&mut self) {
        if let Some(voice) = self.voice.lane.as_ref().filter(|_| self.voice.ready) {
            voice.stop();
            let at = self.clock.now();
            self.voice.echo.hushed(at);
            self.voice.talk.hushed(at);
        }
        if let Some(running) = self.jobs.running.as_mut() {
            // What is left of this answer is not said either.
            running.spoken = usize::MAX;
        }
    }

    /// A daemon event, as the rest of the owner should see it, in the light of what the
    /// voice said: `None` for a partial of the voice's own words, a transcript of them
    /// emptied, a person's words without the voice's around them. Barges in when a person
    /// speaks over the voice.
    pub(super) fn overheard(&mut self, mut event: DaemonEvent) -> Option<DaemonEvent> {
        let at = self.clock.now();
        match &mut event {
            DaemonEvent::SpeechStart(start) if self.voice.echo.audible(at) => {
                // Well into a piece, speech that starts is not the piece's echo starting.
                let person = !self.voice.echo.onset_near(at);
                let onset = self.voice.echo.since_onset(at);
                let ms = onset.map(|d| d.as_millis());
                tracing::debug!(
                    seg_id = start.seg_id,
                    ms,
                    person,
                    "overheard: a piece began ms before"
                );
                let seen = Overheard { since: at, person, words: None, onset };
                self.voice.overheard.insert(start.seg_id, seen);
                if person {
                    self.barge_in(start.seg_id, "speech began while the voice spoke");
                }
            }
            DaemonEvent::TranscriptPartial(partial) => {
                let Some(seen) = self.voice.overheard.get(&partial.seg_id).cloned() else {
                    return Some(event);
                };
                if !seen.person {
                    // Only words two passes agreed on count against the voice: whisper
                    // mishears a short piece of it now and then ("take an umbrella" →
                    // "taken a burrow up"), rarely the same way twice.
                    let committed: String =
                        partial.text.chars().take(partial.committed_len).collect();
                    // Words too few to tell from the voice misheard wait for the next pass.
                    let judged =
                        match self.misheard(&seen, self.judged(&seen, &committed, at, false), at) {
                            Heard::Person(words) if crate::echo::enough_to_tell(&words) => {
                                Heard::Person(words)
                            }
                            _ => Heard::Echo,
                        };
                    tracing::debug!(
                        seg_id = partial.seg_id,
                        committed = committed.split_whitespace().count(),
                        person = matches!(judged, Heard::Person(_)),
                        "overheard: a partial's agreed words judged"
                    );
                    let Heard::Person(words) = judged else { return None };
                    self.person(partial.seg_id, seen, &words);
                }
                if let Heard::Person(words) =
                    self.judged_now(partial.seg_id, &partial.text, at, false)
                {
                    let skipped = partial
                        .text
                        .find(&words)
                        .map_or(0, |at| partial.text[..at].chars().count());
                    partial.committed_len =
                        partial.committed_len.saturating_sub(skipped).min(words.chars().count());
                    // Kept for a final that loses them (to the voice, or to a canceller that
                    // muffled their first syllables: whisper then writes nothing), unless
                    // they sound like the voice misheard.
                    let heard = Heard::Person(words.clone());
                    let theirs = self
                        .voice
                        .overheard
                        .get(&partial.seg_id)
                        .is_some_and(|seen| self.misheard(seen, heard, at) != Heard::Echo);
                    if let Some(seen) =
                        self.voice.overheard.get_mut(&partial.seg_id).filter(|_| theirs)
                    {
                        seen.words = Some(words.clone());
                    }
                    partial.text = words;
                } else {
                    // Only the voice's words so far (the person's are under them): nothing to
                    // show as theirs.
                    return None;
                }
            }
            DaemonEvent::Transcript(transcript) => {
                let Some(seen) = self.voice.overheard.get(&transcript.seg_id).cloned() else {
                    return Some(event);
                };
                let heard = self.judged(&seen, &transcript.text, at, true);
                let heard = if seen.person { heard } else { self.misheard(&seen, heard, at) };
                match (heard, seen.words.clone()) {
                    // A person's words, without the voice's: speech that began well into a
                    // piece, or words that are neither the voice's nor sound like them.
                    (Heard::Person(words), _) => {
                        self.person(transcript.seg_id, seen, &words);
                        transcript.text = words;
                    }
                    // The final heard only the voice (which filled the segment before they
                    // spoke), or nothing: what the partials heard of them is their turn.
                    (Heard::Echo, Some(words)) if seen.person => transcript.text = words,
                    // The voice stopped for a person, and whisper wrote only the voice's
                    // words (the louder, earlier talker of the two): their words are lost,
                    // and they are told so rather than left waiting for an answer.
                    (Heard::Echo, None) if seen.person => {
                        tracing::info!(
                            seg_id = transcript.seg_id,
                            "a person spoke over the voice, and only the voice was heard"
                        );
                        transcript.text.clear();
                        self.error(ErrorCode::Stt, LOST_OVER_THE_VOICE.to_owned());
                    }
                    (Heard::Echo, _) => {
                        tracing::info!(
                            seg_id = transcript.seg_id,
                            "echo: the segment was the voice's own words; not a turn"
                        );
                        transcript.text.clear();
                        // Its start tells how late echo starts here.
                        if let Some(delay) = seen.onset
                            && self.voice.echo.echo_began(delay)
                        {
                            tracing::info!(
                                ms = delay.as_millis(),
                                "echo: it started late into a piece; speech starting that \
                                 late now waits for words"
                            );
                        }
                    }
                }
            }
            DaemonEvent::SegmentDone(done) => {
                self.voice.overheard.remove(&done.seg_id);
            }
            // The wake phrase while the voice is heard: its own words are no one calling it;
            // anyone else saying the name stops it.
            DaemonEvent::Wake(_) if self.voice.echo.audible(at) => {
                let since = at.checked_sub(crate::echo::LAG * 2).unwrap_or(at);
                let said = self.voice.echo.words_between(since, at);
                if self.core.wake_phrase().is_some_and(|phrase| crate::echo::says(&said, phrase)) {
                    tracing::info!("the wake phrase was the voice's own words: not a wake");
                    return None;
                }
                self.barge_in(0, "the wake phrase");
            }
            // The room louder than the voice heard back alone: a person over it, who may not
            // be heard by words (whisper writes the louder voice).
            DaemonEvent::Levels(levels) => {
                // No voice, nothing to tell a person from.
                if !self.voice.ready {
                    return None;
                }
                let over = self.voice.talk.heard(at, levels.end, &levels.db);
                if let Some(seen) =
                    self.voice.overheard.get(&levels.seg_id).filter(|s| over && !s.person)
                {
                    let seen = Overheard { person: true, ..seen.clone() };
                    self.voice.overheard.insert(levels.seg_id, seen);
                    self.barge_in(levels.seg_id, "the room grew louder than the voice alone");
                }
                return None;
            }
            _ => {}
        }
        Some(event)
    }

    /// `text`, heard in a segment seen as `seen`, against what the voice said since;
    /// `whole` for a final ([`crate::echo::judge`]).
    fn judged(&self, seen: &Overheard, text: &str, at: Instant, whole: bool) -> Heard {
        crate::echo::judge(text, &self.voice.echo.words_between(seen.since, at), whole)
    }

    /// A person's words in a segment that began with a piece of the voice are its echo after
    /// all when they sound like what it said ([`crate::echo::sounds_said`]): whisper
    /// mishears the voice now and then.
    fn misheard(&self, seen: &Overheard, heard: Heard, at: Instant) -> Heard {
        match heard {
            Heard::Person(words)
                if crate::echo::sounds_said(
                    &words,
                    &self.voice.echo.words_between(seen.since, at),
                ) =>
            {
                Heard::Echo
            }
            heard => heard,
        }
    }

    /// [`Self::judged`] for segment `seg_id` as it is seen now.
    fn judged_now(&self, seg_id: u64, text: &str, at: Instant, whole: bool) -> Heard {
        match self.voice.overheard.get(&seg_id) {
            Some(seen) => self.judged(seen, text, at, whole),
            None => Heard::Echo,
        }
    }

    /// Segment `seg_id` is a person's, who said `words`: the voice stops for it if it has
    /// not yet.
    fn person(&mut self, seg_id: u64, seen: Overheard, words: &str) {
        let barge = !seen.person;
        let words = Some(words.to_owned());
        self.voice.overheard.insert(seg_id, Overheard { person: true, words, ..seen });
        if barge {
            self.barge_in(seg_id, "words that are not the voice's");
        }
    }

    /// A person speaks over the voice: it stops, and so does the reply it was saying.
    fn barge_in(&mut self, seg_id: u64, why: &'static str) {
        tracing::info!(seg_id, why, "barge-in: the voice stops");
        self.interrupt(Need::BargeIn);
    }
}
