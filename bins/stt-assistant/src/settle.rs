//! When a turn is over. The daemon cuts speech into segments at every pause longer than its
//! hangover (or sooner, when its end-of-turn policy finds the words finished), but a person
//! who stops to think mid-sentence has not finished their turn. A turn *settles* when speech
//! has stopped, none has started again within `quiet`, and every segment of it has its final
//! words (`segment_done`). Speech that starts again sooner joins the turn.
//!
//! "Within `quiet`" is judged on two clocks. On the audio's: speech whose `speech_start`
//! begins `quiet` or more after the last segment's end (`speech_stop.end`) begins another
//! turn, which is what keeps turns apart when the daemon reads a file faster than real time.
//! On the wall clock: live, nothing comes to say that no one spoke, so a turn settles once
//! `quiet` has passed since its `speech_stop` arrived.
//!
//! Pure: the caller passes the time and asks [`Settle::due`] after each event and at
//! [`Settle::deadline`].

use std::collections::{BTreeSet, VecDeque};
use std::time::{Duration, Instant};

/// The words of one segment, as they joined a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Said {
    seg_id: u64,
    text: String,
    /// The speaker's name, when identification matched a named speaker.
    speaker: Option<String>,
    /// Heard in chat mode: the words are for the model.
    chat: bool,
}

/// A turn that settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settled {
    /// Its segments, in order, with words or not.
    pub seg_ids: Vec<u64>,
    /// The words of its segments, in order, joined by a space.
    pub text: String,
    /// The speaker's name when every segment with words was matched to that one named
    /// speaker.
    pub speaker: Option<String>,
    /// The words heard in chat mode, joined (empty when none were).
    pub chat_text: String,
}

/// A turn being gathered.
#[derive(Debug, Default)]
struct Gathering {
    seg_ids: Vec<u64>,
    said: Vec<Said>,
    /// The segment whose speech is open.
    open: Option<u64>,
    /// Segments stopped without their `segment_done` yet.
    unfinished: BTreeSet<u64>,
    /// When speech last stopped (the wall clock), while none is open.
    quiet_since: Option<Instant>,
    /// Where its last segment ended, in the audio's seconds.
    last_end: Option<f64>,
    /// Speech began a new turn after it: it takes no more segments.
    closed: bool,
}

impl Gathering {
    fn join(&mut self, seg_id: u64) {
        if !self.seg_ids.contains(&seg_id) {
            self.seg_ids.push(seg_id);
        }
    }

    /// Every segment's words are in.
    fn complete(&self) -> bool {
        self.open.is_none() && self.unfinished.is_empty()
    }

    fn settled(self) -> Option<Settled> {
        let with_words: Vec<&Said> = self.said.iter().filter(|s| !s.text.is_empty()).collect();
        if with_words.is_empty() {
            return None;
        }
        let join = |chat_only: bool| {
            with_words
                .iter()
                .filter(|s| s.chat || !chat_only)
                .map(|s| s.text.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        };
        let first = with_words[0].speaker.clone();
        let speaker = first
            .filter(|name| with_words.iter().all(|s| s.speaker.as_deref() == Some(name.as_str())));
        Some(Settled { seg_ids: self.seg_ids, text: join(false), speaker, chat_text: join(true) })
    }
}

/// The turns being gathered, and when they settle.
#[derive(Debug)]
pub struct Settle {
    quiet: Duration,
    /// Oldest first; all but the last are closed and wait for their segments' words.
    turns: VecDeque<Gathering>,
}

impl Settle {
    /// Turns settle after `quiet` without speech following a `speech_stop`.
    pub fn new(quiet: Duration) -> Self {
        Self { quiet, turns: VecDeque::new() }
    }

    /// Whether someone is in the middle of a turn: speech heard that has not settled.
    pub fn hearing(&self) -> bool {
        !self.turns.is_empty()
    }

    /// The turn that takes new speech.
    fn current(&mut self) -> &mut Gathering {
        if self.turns.back().is_none_or(|t| t.closed) {
            self.turns.push_back(Gathering::default());
        }
        let last = self.turns.len() - 1;
        &mut self.turns[last]
    }

    /// The turn `seg_id` is in, or the current one.
    fn holding(&mut self, seg_id: u64) -> &mut Gathering {
        match self.turns.iter().position(|t| t.seg_ids.contains(&seg_id)) {
            Some(i) => &mut self.turns[i],
            None => self.current(),
        }
    }

    /// `speech_start` of `seg_id` at `start` (audio seconds): the turn goes on, or, when the
    /// quiet before it was long enough, another begins.
    pub fn started(&mut self, seg_id: u64, start: f64) {
        let quiet = self.quiet.as_secs_f64();
        if let Some(turn) = self.turns.back_mut().filter(|t| !t.closed && t.open.is_none()) {
            turn.closed = turn.last_end.is_some_and(|end| start - end >= quiet);
        }
        let turn = self.current();
        turn.join(seg_id);
        turn.open = Some(seg_id);
        turn.quiet_since = None;
    }

    /// `speech_stop` of `seg_id`, which ended at `end` (audio seconds): quiet from `now`.
    pub fn stopped(&mut self, seg_id: u64, end: f64, now: Instant) {
        let turn = self.holding(seg_id);
        turn.join(seg_id);
        turn.unfinished.insert(seg_id);
        if turn.open.is_none_or(|open| open == seg_id) {
            turn.open = None;
            turn.quiet_since = Some(now);
            turn.last_end = Some(end);
        }
    }

    /// A segment's final words (`text` trimmed; empty when it held none), who said them,
    /// and whether they were heard in chat mode, at `now`.
    pub fn words(
        &mut self,
        seg_id: u64,
        text: &str,
        speaker: Option<String>,
        chat: bool,
        now: Instant,
    ) {
        let turn = self.holding(seg_id);
        turn.join(seg_id);
        // Words of a segment never seen open or stopping (the assistant joined mid-segment,
        // or a daemon that sends only transcripts): the quiet counts from them.
        if turn.open.is_none() && !turn.unfinished.contains(&seg_id) {
            turn.quiet_since = Some(now);
        }
        turn.said.retain(|s| s.seg_id != seg_id);
        turn.said.push(Said { seg_id, text: text.trim().to_owned(), speaker, chat });
    }

    /// `segment_done`: the segment's words are all in.
    pub fn done(&mut self, seg_id: u64) {
        if let Some(turn) = self.turns.iter_mut().find(|t| t.seg_ids.contains(&seg_id)) {
            turn.unfinished.remove(&seg_id);
        }
    }

    /// The turns settled by `now`, oldest first (taken). A turn without words settles
    /// unseen.
    pub fn due(&mut self, now: Instant) -> Vec<Settled> {
        let quiet = self.quiet;
        let mut settled = Vec::new();
        while let Some(turn) = self.turns.front() {
            let quiet_over = turn.quiet_since.is_some_and(|since| since + quiet <= now);
            if !(turn.complete() && (turn.closed || quiet_over)) {
                break;
            }
            settled.extend(self.turns.pop_front().and_then(Gathering::settled));
        }
        settled
    }

    /// When the current turn will settle if nothing else happens; `None` while speech is
    /// open or a segment's words are still coming (their `segment_done` then asks again).
    pub fn deadline(&self) -> Option<Instant> {
        let turn = self.turns.front()?;
        if !turn.complete() {
            return None;
        }
        turn.quiet_since.map(|since| since + self.quiet)
    }

    /// The daemon went away: its open segments never finish, so what was said settles now.
    pub fn flush(&mut self) -> Vec<Settled> {
        self.turns.drain(..).filter_map(Gathering::settled).collect()
    }

    /// `clear`: the turns being gathered are forgotten.
    pub fn clear(&mut self) {
        self.turns.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUIET: Duration = Duration::from_millis(600);

    fn ms(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    /// One segment heard live, its audio clock the wall clock's: speech from `from_ms` to
    /// `to_ms`, stopped then, its words and done 50 ms later.
    fn segment(
        settle: &mut Settle,
        t0: Instant,
        seg_id: u64,
        (from_ms, to_ms): (u64, u64),
        text: &str,
    ) {
        settle.started(seg_id, secs(from_ms));
        settle.stopped(seg_id, secs(to_ms), ms(t0, to_ms));
        settle.words(seg_id, text, None, true, ms(t0, to_ms + 50));
        settle.done(seg_id);
    }

    fn secs(ms: u64) -> f64 {
        ms as f64 / 1000.0
    }

    fn one(mut settled: Vec<Settled>) -> Settled {
        assert_eq!(settled.len(), 1, "{settled:?}");
        settled.remove(0)
    }

    #[test]
    fn speech_that_starts_again_within_the_quiet_joins_the_turn() {
        let t0 = Instant::now();
        let mut settle = Settle::new(QUIET);
        segment(&mut settle, t0, 1, (0, 1000), "Remind me to call Ana,");
        assert_eq!(settle.deadline(), Some(ms(t0, 1600)));
        assert_eq!(settle.due(ms(t0, 1200)), []);
        segment(&mut settle, t0, 2, (1500, 2500), "after lunch tomorrow.");
        assert_eq!(settle.due(ms(t0, 3099)), []);
        let turn = one(settle.due(ms(t0, 3100)));
        assert_eq!(turn.seg_ids, [1, 2]);
        assert_eq!(turn.text, "Remind me to call Ana, after lunch tomorrow.");
        assert_eq!(settle.deadline(), None, "taken");
    }

    #[test]
    fn a_longer_quiet_makes_two_turns() {
        let t0 = Instant::now();
        let mut settle = Settle::new(QUIET);
        segment(&mut settle, t0, 1, (0, 1000), "What time is it?");
        assert_eq!(one(settle.due(ms(t0, 1600))).seg_ids, [1]);
        segment(&mut settle, t0, 2, (2000, 3000), "And the weather?");
        assert_eq!(one(settle.due(ms(t0, 3600))).text, "And the weather?");
    }

    #[test]
    fn read_faster_than_real_time_the_audio_clock_keeps_turns_apart() {
        // A file read with --fast: every event at once, the pauses only in the audio.
        let t0 = Instant::now();
        let mut settle = Settle::new(QUIET);
        let heard = |settle: &mut Settle, seg, (from, to), text: &str| {
            settle.started(seg, secs(from));
            settle.stopped(seg, secs(to), t0);
            settle.words(seg, text, None, false, t0);
        };
        heard(&mut settle, 1, (0, 1000), "one");
        heard(&mut settle, 2, (1400, 2000), "two");
        heard(&mut settle, 3, (2600, 3000), "three");
        assert_eq!(settle.due(t0), [], "words still coming");
        settle.done(1);
        settle.done(2);
        let first = one(settle.due(t0));
        assert_eq!((first.seg_ids, first.text.as_str()), (vec![1, 2], "one two"));
        settle.done(3);
        assert_eq!(settle.due(t0), [], "the last turn's quiet is the wall clock's");
        assert_eq!(one(settle.due(ms(t0, 600))).text, "three");
    }

    #[test]
    fn a_turn_waits_for_its_last_words_however_long_they_take() {
        let t0 = Instant::now();
        let mut settle = Settle::new(QUIET);
        settle.started(1, 0.0);
        settle.stopped(1, 1.0, ms(t0, 1000));
        assert_eq!(settle.deadline(), None, "words still to come");
        assert_eq!(settle.due(ms(t0, 5000)), []);
        settle.words(1, " Open the calendar. ", None, false, ms(t0, 5000));
        settle.done(1);
        let turn = one(settle.due(ms(t0, 5000)));
        assert_eq!(turn.text, "Open the calendar.");
        assert_eq!(turn.chat_text, "", "not heard in chat mode");
    }

    #[test]
    fn speech_open_holds_the_turn_and_the_quiet_counts_from_its_stop() {
        let t0 = Instant::now();
        let mut settle = Settle::new(QUIET);
        segment(&mut settle, t0, 1, (0, 1000), "one");
        settle.started(2, 1.2);
        assert_eq!(settle.deadline(), None);
        assert_eq!(settle.due(ms(t0, 9000)), []);
        settle.stopped(2, 9.0, ms(t0, 9000));
        settle.words(2, "two", None, true, ms(t0, 9100));
        settle.done(2);
        assert_eq!(settle.deadline(), Some(ms(t0, 9600)));
    }

    #[test]
    fn a_turn_without_words_is_no_turn_and_wordless_segments_are_listed_but_not_said() {
        let t0 = Instant::now();
        let mut settle = Settle::new(QUIET);
        // A cough: stopped, done, no transcript.
        settle.started(1, 0.0);
        settle.stopped(1, 0.1, ms(t0, 100));
        settle.done(1);
        assert_eq!(settle.due(ms(t0, 700)), []);
        assert_eq!(settle.deadline(), None, "gone");
        settle.started(2, 0.9);
        settle.stopped(2, 1.0, ms(t0, 1000));
        settle.done(2);
        segment(&mut settle, t0, 3, (1100, 1200), "Lights off.");
        let turn = one(settle.due(ms(t0, 1800)));
        assert_eq!((turn.seg_ids, turn.text.as_str()), (vec![2, 3], "Lights off."));
    }

    #[test]
    fn the_speaker_is_named_only_when_every_piece_is_theirs_and_chat_gets_its_own_words() {
        let t0 = Instant::now();
        let mut settle = Settle::new(QUIET);
        let said = |settle: &mut Settle, seg, text: &str, who: Option<&str>, chat| {
            settle.started(seg, 0.0);
            settle.stopped(seg, 0.0, t0);
            settle.words(seg, text, who.map(str::to_owned), chat, t0);
            settle.done(seg);
        };
        said(&mut settle, 1, "Hello", Some("Ana"), true);
        said(&mut settle, 2, "", None, true);
        said(&mut settle, 3, "there.", Some("Ana"), true);
        assert_eq!(one(settle.due(ms(t0, 600))).speaker.as_deref(), Some("Ana"));
        said(&mut settle, 4, "Hello", Some("Ana"), false);
        said(&mut settle, 5, "you.", Some("Efren"), true);
        let turn = one(settle.due(ms(t0, 600)));
        assert_eq!(turn.speaker, None, "two people");
        assert_eq!(turn.chat_text, "you.", "only what was said in chat mode is for the model");
        said(&mut settle, 6, "Hi", None, true);
        said(&mut settle, 7, "there", Some("Ana"), true);
        assert_eq!(one(settle.due(ms(t0, 600))).speaker, None, "partly unknown");
    }

    #[test]
    fn words_without_a_stop_settle_after_them_and_a_lost_daemon_flushes() {
        let t0 = Instant::now();
        let mut settle = Settle::new(QUIET);
        // Joined mid-segment, or a daemon that sends only transcripts.
        settle.words(7, "late words", None, false, ms(t0, 10));
        assert_eq!(settle.deadline(), Some(ms(t0, 610)));
        settle.done(7);
        assert_eq!(one(settle.due(ms(t0, 610))).text, "late words");
        // The daemon dies mid-turn: what was said settles at once.
        segment(&mut settle, t0, 8, (0, 1000), "half a");
        settle.started(9, 1.1);
        assert_eq!(one(settle.flush()).seg_ids, [8, 9]);
        assert_eq!(settle.flush(), []);
        segment(&mut settle, t0, 10, (0, 1000), "gone");
        settle.clear();
        assert_eq!(settle.due(ms(t0, 5000)), []);
    }
}
