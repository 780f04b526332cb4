//! A person speaking over the voice, told by loudness (double-talk detection).
//!
//! Through speakers with no echo canceller the microphone hears the voice, and a person who
//! starts speaking over it opens no segment of their own: the voice's echo already holds one
//! open. Their words reach whisper mixed with the voice's, which is louder and wins, so
//! [`crate::echo`]'s judgement by words comes late or never. Loudness comes at once: the
//! daemon sends the microphone's level every 20 ms of an open segment
//! ([`stt_proto::Levels`]), the voice lane the level of each piece it plays, and the room
//! passes the voice to the microphone with a delay and a gain that hardly change. [`Talk`]
//! learns those two from the voice heard back alone (the delay at which the microphone's
//! level follows the voice's most closely, and the median difference there), then expects,
//! at each moment, the voice's level then plus the gain. A microphone louder than that over
//! 100 ms, by [`EXCESS_DB`] or more (more in a room whose echo follows the voice less
//! closely), in [`FRAMES`] windows in a row, is a second talker.
//!
//! This is the loudness test of an echo canceller's double-talk detector, without the
//! canceller: it hears a person only where they are louder than the voice's echo (in its
//! pauses, between its syllables, or speaking up). docs/VOICE.md says how it was measured.
//!
//! Two clocks are lined up on the way. The microphone's frames are placed by the least
//! delayed of the recent events. The voice's pieces are placed where the voice lane reckons
//! they play, which is exact for a piece queued behind another and rough for one begun from
//! silence, so that one is moved to where its echo first rises ([`Talk::played`]). Behind a
//! canceller no path can be learned (the residue does not follow the voice); there a
//! microphone well over the residue's usual level is a person.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How much louder than the voice heard back the microphone must be over a window, in dB, at
/// least; more where the room's echo follows the voice less closely ([`SPREADS`] times the
/// windows' spread while the voice was heard back alone).
pub const EXCESS_DB: f32 = 5.0;
const SPREADS: f32 = 3.0;
/// The window whose energy is compared, in frames (100 ms): long enough that the voice and
/// the microphone need not line up to the frame.
const WINDOW: usize = 5;
/// Windows in a row (each a frame later) that must be that loud.
pub const FRAMES: usize = 3;
/// One level frame.
pub const FRAME: Duration = Duration::from_millis(20);
/// Delays tried between the voice playing and the microphone hearing it.
const DELAYS: std::ops::RangeInclusive<i64> = -5..=25; // × 20 ms: -100 ms to 500 ms
/// Frames of the voice heard back needed before the path is trusted.
const MIN_FRAMES: usize = 60;
/// The spread (median absolute deviation, dB) above which the learned path is not trusted:
/// the microphone does not follow the voice (no echo, or a person speaking all along).
const MAX_SPREAD_DB: f32 = 2.5;
/// Voice frames quieter than this (dBFS) say nothing of the path.
const VOICE_FLOOR_DB: f32 = -55.0;
/// What is kept, for learning.
const HISTORY: Duration = Duration::from_secs(12);
/// How far back the least delayed event is looked for: short, as the microphone's clock
/// and this one drift apart (a third of a percent was seen through PulseAudio).
const CLOCKS: Duration = Duration::from_secs(3);
/// How far under the voice the microphone must stay, most of the time, for the voice to be
/// taken as muffled (dB), and how far over that residue a person is.
const MUFFLED_DB: f32 = 20.0;
const MUFFLED_EXCESS_DB: f32 = 12.0;
/// Frames the delay is followed over as the clocks drift (a second).
const TRACK: usize = 50;
/// The room's quiet, in dBFS, before any is heard.
const QUIET_DB: f32 = -70.0;
/// How far from the lane's reckoning the echo of a piece begun from silence is looked for,
/// and how far above the room's quiet it must be at least.
const ONSET_SEARCH: Duration = Duration::from_millis(500);
const ONSET_DB: f32 = 15.0;

/// The room's path from the voice to the microphone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Path {
    /// Frames from the voice playing to the microphone hearing it.
    pub delay: i64,
    /// Microphone level minus voice level, in dB.
    pub gain: f32,
    /// How closely the microphone followed, frame by frame (median absolute deviation, dB).
    pub spread: f32,
    /// The excess over a window that is a person here, in dB.
    pub excess: f32,
}

/// What the voice played and the microphone heard lately; see the [module docs](self).
#[derive(Debug)]
pub struct Talk {
    /// The voice's frames: when each began to play, and its level (dBFS).
    voice: VecDeque<(Instant, f32)>,
    /// The microphone's frames: when each began, as best known, and its level.
    mic: VecDeque<(Instant, f32)>,
    /// Where the daemon's stream began by each recent event (arrival less stream time), and
    /// when it came: the earliest is the one that came with the least delay.
    origins: VecDeque<(Instant, Instant)>,
    path: Option<Path>,
    /// The room's quiet: a low percentile of the microphone's frames (dBFS).
    quiet: f32,
    /// Windows in a row too loud for the voice alone.
    loud: usize,
    /// Where no path can be learned because the microphone hardly hears the voice (an echo
    /// canceller takes it out, leaving a residue that does not follow it): how loud the
    /// microphone is while the voice plays, most of the time (its 90th percentile, dBFS).
    muffled: Option<f32>,
    /// Frames since the path was last learned.
    since_learned: usize,
    /// How much later than the voice lane reckons its pieces play, in microseconds
    /// (negative: sooner), as the echo of the last piece it began from silence showed.
    offset_us: i64,
    /// A piece began from silence and its echo has not yet been heard: when it began, and
    /// when the voice in it first grew loud, by the lane's reckoning.
    unheard: Option<(Instant, Instant)>,
    /// The delay first learned: a piece begun from silence is moved so that its echo comes
    /// this long after it, and the delay is set back to it (the delay and the pieces'
    /// offsets would otherwise wander together, each taking up what the other gives).
    anchor: Option<i64>,
}

impl Default for Talk {
    fn default() -> Self {
        Self::new()
    }
}

impl Talk {
    pub fn new() -> Self {
        Self {
            voice: VecDeque::new(),
            mic: VecDeque::new(),
            origins: VecDeque::new(),
            path: None,
            quiet: QUIET_DB,
            loud: 0,
            muffled: None,
            since_learned: 0,
            offset_us: 0,
            unheard: None,
            anchor: None,
        }
    }

    /// The voice plays `levels` (one per [`FRAME`]) from `from`, by the voice lane's
    /// reckoning.
    ///
    /// A piece queued behind another follows it exactly; one begun from silence starts when
    /// the device gets to it, which the lane knows only roughly (a sound server's reported
    /// lead is off by a second when its stream has just started). So the first echo of such
    /// a piece is looked for in what the microphone hears, and the piece, and those queued
    /// behind it, are moved to match; until then no one is judged.
    pub fn played(&mut self, from: Instant, levels: &[f32]) {
        // Where the last piece ends, by the lane's reckoning.
        let follows = self.voice.back().is_some_and(|(last, _)| {
            let end = moved(*last + FRAME, -self.offset_us);
            end + FRAME >= from && from + FRAME >= end
        });
        if !follows {
            self.offset_us = 0;
            let loud = levels.iter().position(|db| *db > VOICE_FLOOR_DB);
            self.unheard = loud.map(|i| (from, from + FRAME * i as u32));
        }
        let from = moved(from, self.offset_us);
        self.hushed(from);
        let frames = levels.iter().enumerate();
        self.voice.extend(frames.map(|(i, &db)| (from + FRAME * i as u32, db)));
    }

    /// The echo of the piece begun from silence grew loud in the microphone at `heard`:
    /// the piece (and what is queued behind it) is moved to match.
    fn heard_begin(&mut self, piece: Instant, expected: Instant, heard: Instant) {
        let us = |d: Duration| i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
        let late_us = match heard.checked_duration_since(expected) {
            Some(later) => us(later),
            None => -us(expected.duration_since(heard)),
        };
        if late_us.unsigned_abs() > ONSET_SEARCH.as_micros() as u64 {
            return;
        }
        tracing::debug!(late_ms = late_us / 1000, "the voice's piece began off its reckoning");
        for (at, _) in self.voice.iter_mut().filter(|(at, _)| *at >= piece) {
            *at = moved(*at, late_us);
        }
        self.offset_us = late_us;
        if let (Some(path), Some(anchor)) = (self.path.as_mut(), self.anchor) {
            path.delay = anchor;
        }
    }

    /// The voice was stopped at `at`: nothing it had queued after then plays.
    pub fn hushed(&mut self, at: Instant) {
        while self.voice.back().is_some_and(|(start, _)| *start >= at) {
            self.voice.pop_back();
        }
    }

    /// The daemon's stream ended (it is restarting): a new one counts from 0, and its frames
    /// are placed afresh. The room's path stays.
    pub fn stream_ended(&mut self) {
        self.mic.clear();
        self.origins.clear();
        self.loud = 0;
    }

    /// The learned path, once there is one.
    pub fn path(&self) -> Option<Path> {
        self.path
    }

    /// The daemon's levels `db` (20 ms each, the last ending `end` seconds into its stream)
    /// arrived at `arrival`. Whether a person is speaking over the voice now.
    pub fn heard(&mut self, arrival: Instant, end: f64, db: &[f32]) -> bool {
        let Some(origin) = arrival.checked_sub(Duration::from_secs_f64(end)) else {
            return false;
        };
        // The least delayed event says best where the stream's clock stands; the window
        // follows the two clocks' drift.
        self.origins.push_back((arrival, origin));
        while self.origins.front().is_some_and(|(seen, _)| arrival.duration_since(*seen) > CLOCKS) {
            self.origins.pop_front();
        }
        let origin = self.origins.iter().map(|(_, o)| *o).min().unwrap_or(origin);
        let Some(first) =
            (origin + Duration::from_secs_f64(end)).checked_sub(FRAME * db.len() as u32)
        else {
            return false;
        };
        self.track();
        let mut person = false;
        for (i, &level) in db.iter().enumerate() {
            let at = first + FRAME * i as u32;
            self.mic.push_back((at, level));
            if let (Some(path), Some(anchor), Some((piece, begins))) =
                (self.path, self.anchor, self.unheard)
            {
                // Where the piece's echo should grow loud, by the lane's reckoning.
                let expected = shift(begins, anchor).unwrap_or(begins);
                // The echo crosses the level the voice crossed, less the way back's loss.
                let onset = (VOICE_FLOOR_DB + path.gain).max(self.quiet + ONSET_DB);
                if level > onset && at + ONSET_SEARCH >= expected {
                    self.unheard = None;
                    self.heard_begin(piece, expected, at);
                } else if at > expected + ONSET_SEARCH {
                    self.unheard = None;
                } else {
                    self.loud = 0;
                    continue;
                }
            }
            let over = match (self.path, self.muffled) {
                (Some(path), _) => excess(self, &path, self.mic.len()).map(|e| (e, path.excess)),
                (None, Some(muffled)) => self.over_muffled(muffled).map(|e| (e, MUFFLED_EXCESS_DB)),
                (None, None) => None,
            };
            match over {
                Some((excess, over)) if excess >= over => self.loud += 1,
                _ => self.loud = 0,
            }
            if self.loud >= FRAMES && !person {
                let voice = self.path.and_then(|p| self.voice_at(shift(at, -p.delay)?));
                tracing::debug!(
                    excess = ?over.map(|o| o.0),
                    level,
                    voice,
                    path = ?self.path,
                    "a person over the voice"
                );
            }
            person |= self.loud >= FRAMES;
        }
        let cut = arrival.checked_sub(HISTORY).unwrap_or(arrival);
        while self.mic.front().is_some_and(|(at, _)| *at < cut) {
            self.mic.pop_front();
        }
        while self.voice.front().is_some_and(|(at, _)| *at < cut) {
            self.voice.pop_front();
        }
        self.since_learned += db.len();
        if person {
            self.loud = 0;
        } else if self.path.is_none() || self.since_learned >= 4 * MIN_FRAMES {
            self.learn();
        }
        person
    }

    /// The voice's level at the frame that began nearest `at` (within half a frame).
    fn voice_at(&self, at: Instant) -> Option<f32> {
        let half = FRAME / 2;
        let i = self.voice.partition_point(|(start, _)| *start + half <= at);
        self.voice.get(i).filter(|(start, _)| at + half >= *start).map(|(_, db)| *db)
    }

    /// Follows the delay as the clocks drift (the voice's device and the microphone's each
    /// keep their own time): a frame either way when the last second of what was heard
    /// follows the voice more closely there.
    fn track(&mut self) {
        let Some(mut path) = self.path else { return };
        let recent = self.mic.len().saturating_sub(TRACK);
        let spread = |delay: i64| {
            let diffs: Vec<f32> = self
                .mic
                .iter()
                .skip(recent)
                .filter_map(|&(at, mic)| {
                    let voice = self.voice_at(shift(at, -delay)?)?;
                    (voice > VOICE_FLOOR_DB).then_some(mic - voice)
                })
                .collect();
            (diffs.len() >= TRACK / 2).then(|| {
                let gain = median(&diffs);
                median(&diffs.iter().map(|d| (d - gain).abs()).collect::<Vec<_>>())
            })
        };
        let Some(now) = spread(path.delay) else { return };
        let best = [path.delay - 1, path.delay + 1]
            .into_iter()
            .filter_map(|delay| Some((delay, spread(delay)?)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((delay, better)) = best.filter(|(_, s)| *s + 0.5 < now) {
            tracing::trace!(
                delay_ms = delay * 20,
                spread_db = better,
                "the voice's way back drifted"
            );
            path.delay = delay;
            self.path = Some(path);
        }
    }

    /// How loud the microphone was while the voice played, most of the time, when that is
    /// well under the voice (an echo canceller's residue); `None` otherwise.
    fn muffled_level(&self) -> Option<f32> {
        let (heard, voice): (Vec<f32>, Vec<f32>) = self
            .mic
            .iter()
            .filter_map(|&(at, mic)| {
                Some((mic, self.voice_at(at).filter(|v| *v > VOICE_FLOOR_DB)?))
            })
            .unzip();
        if heard.len() < MIN_FRAMES {
            return None;
        }
        let level = percentile(&heard, 0.9);
        (level < percentile(&voice, 0.5) - MUFFLED_DB).then_some(level)
    }

    /// How much louder than the voice's residue the microphone's last [`WINDOW`] frames were,
    /// in dB; `None` when the voice was not playing.
    fn over_muffled(&self, muffled: f32) -> Option<f32> {
        let frames: Vec<(Instant, f32)> = self.mic.iter().rev().take(WINDOW).copied().collect();
        let playing = frames.iter().any(|(at, _)| self.voice_at(*at).is_some());
        let heard = frames.iter().map(|(_, db)| power(*db)).sum::<f32>() / frames.len() as f32;
        playing.then(|| 10.0 * (heard / power(muffled)).log10())
    }

    /// Finds the delay at which the microphone follows the voice most closely, how closely,
    /// and the room's quiet.
    fn learn(&mut self) {
        let levels: Vec<f32> = self.mic.iter().map(|(_, db)| *db).collect();
        if levels.len() >= MIN_FRAMES {
            self.quiet = percentile(&levels, 0.1).max(-100.0);
        }
        // Every delay is tried on the same frames: those the voice played around at each
        // delay (the voice is known ahead of time, so an early delay would otherwise have
        // frames to go on before the right one does).
        let rows: Vec<(f32, Vec<f32>)> = self
            .mic
            .iter()
            .filter_map(|&(at, mic)| {
                let voice: Option<Vec<f32>> =
                    DELAYS.map(|delay| self.voice_at(shift(at, -delay)?)).collect();
                Some((mic, voice?))
            })
            .collect();
        let mut best: Option<Path> = None;
        for (k, delay) in DELAYS.enumerate() {
            let diffs: Vec<f32> = rows
                .iter()
                .filter(|(_, voice)| voice[k] > VOICE_FLOOR_DB)
                .map(|(mic, voice)| mic - voice[k])
                .collect();
            if diffs.len() < MIN_FRAMES {
                continue;
            }
            let gain = median(&diffs);
            let spread = median(&diffs.iter().map(|d| (d - gain).abs()).collect::<Vec<_>>());
            if best.is_none_or(|b| spread < b.spread) {
                best = Some(Path { delay, gain, spread, excess: EXCESS_DB });
            }
        }
        let Some(mut path) = best.filter(|p| p.spread <= MAX_SPREAD_DB) else {
            self.muffled = self.muffled_level();
            return;
        };
        self.muffled = None;
        // How far the windows' excess strays from 0 while (as far as anyone knows) only the
        // voice was heard.
        let strays: Vec<f32> = (WINDOW..=self.mic.len())
            .filter_map(|n| excess(self, &path, n))
            .map(f32::abs)
            .collect();
        if strays.len() >= MIN_FRAMES {
            path.excess = (SPREADS * median(&strays)).max(EXCESS_DB);
        }
        if self.path.is_none_or(|old| old.delay != path.delay) {
            tracing::debug!(
                delay_ms = path.delay * 20,
                gain_db = path.gain,
                spread_db = path.spread,
                excess_db = path.excess,
                "the voice's way back to the microphone"
            );
        }
        self.anchor.get_or_insert(path.delay);
        self.path = Some(path);
        self.since_learned = 0;
    }
}

/// How much louder the [`WINDOW`] microphone frames that end with its `n`th were than the
/// voice heard back (along `path`) and the room's quiet would make them, in dB, energy over
/// the window; `None` when the voice played during none of them (a speech start tells of a
/// person then).
fn excess(talk: &Talk, path: &Path, n: usize) -> Option<f32> {
    let frames = talk.mic.iter().take(n).skip(n.saturating_sub(WINDOW));
    let (mut heard, mut expected, mut playing) = (0.0, 0.0, false);
    for &(at, level) in frames {
        heard += power(level);
        // The frame either side too: the two clocks line up to within a frame, not to it.
        let voice = (path.delay - 1..=path.delay + 1)
            .filter_map(|delay| talk.voice_at(shift(at, -delay)?))
            .reduce(f32::max);
        playing |= voice.is_some();
        expected += power(talk.quiet) + voice.map_or(0.0, |v| power(v + path.gain));
    }
    playing.then(|| 10.0 * (heard / expected).log10())
}

fn power(db: f32) -> f32 {
    10f32.powf(db / 10.0)
}

fn percentile(xs: &[f32], p: f32) -> f32 {
    let mut v = xs.to_vec();
    v.sort_by(f32::total_cmp);
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let i = ((v.len() - 1) as f32 * p).round() as usize;
    v[i]
}

/// `at` moved by `us` microseconds, later or (negative) sooner; as it is if that is before
/// the clock's start.
fn moved(at: Instant, us: i64) -> Instant {
    let by = Duration::from_micros(us.unsigned_abs());
    if us >= 0 { at + by } else { at.checked_sub(by).unwrap_or(at) }
}

/// `at` moved by `frames` frames (either way); `None` before the clock's start.
fn shift(at: Instant, frames: i64) -> Option<Instant> {
    let by = FRAME * frames.unsigned_abs() as u32;
    if frames >= 0 { at.checked_add(by) } else { at.checked_sub(by) }
}

fn median(xs: &[f32]) -> f32 {
    let mut v = xs.to_vec();
    v.sort_by(f32::total_cmp);
    v[v.len() / 2]
}

/// The level of each [`FRAME`] of `audio` at `rate` Hz, in dBFS (-100 for silence): what the
/// voice lane reports of a piece it plays.
pub fn levels(audio: &[f32], rate: u32) -> Vec<f32> {
    let frame = (rate / 50).max(1) as usize;
    audio
        .chunks(frame)
        .map(|chunk| {
            let mean = chunk.iter().map(|x| x * x).sum::<f32>() / chunk.len() as f32;
            if mean > 0.0 { (10.0 * mean.log10()).max(-100.0) } else { -100.0 }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A person silent for `start` frames, then saying `theirs`, over `total` frames.
    fn speaking_from(start: usize, total: usize, theirs: &[f32]) -> Vec<Option<f32>> {
        (0..total).map(|i| i.checked_sub(start).and_then(|j| theirs.get(j).copied())).collect()
    }

    /// xorshift32 from `seed`: numbers that follow no voice.
    fn numbers(seed: u32) -> impl FnMut() -> u32 {
        let mut state = seed.max(1);
        move || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state
        }
    }

    /// A voice with syllables, `n` frames: runs of 6–14 frames around -23 dBFS, gaps of 2–5
    /// frames around -55 between them, irregularly.
    fn speech(n: usize, seed: u32) -> Vec<f32> {
        let mut next = numbers(seed);
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let syllable = 6 + next() % 9;
            out.extend((0..syllable).map(|_| -20.0 - (next() % 7) as f32));
            let gap = 2 + next() % 4;
            out.extend((0..gap).map(|_| -52.0 - (next() % 7) as f32));
        }
        out.truncate(n);
        out
    }

    /// A room: the microphone hears the voice `delay` frames late and `gain` dB down (±2 dB), with
    /// a person's levels (`None` frames: silent) added, in events of five frames; whether a
    /// person was heard, and at which frame first.
    fn room(
        talk: &mut Talk,
        t0: Instant,
        voice: &[f32],
        delay: usize,
        gain: f32,
        person: &[Option<f32>],
    ) -> Option<usize> {
        pieces(talk, t0, &[(0, 0, voice)], delay, gain, person)
    }

    /// [`room`] with pieces: each `(reckoned, played, levels)` is reported as playing from
    /// frame `reckoned` and plays from frame `played`.
    fn pieces(
        talk: &mut Talk,
        t0: Instant,
        pieces: &[(usize, usize, &[f32])],
        delay: usize,
        gain: f32,
        person: &[Option<f32>],
    ) -> Option<usize> {
        let mut played: Vec<Option<f32>> = Vec::new();
        for (_, at, levels) in pieces {
            played.resize(played.len().max(at + levels.len()), None);
            for (k, db) in levels.iter().enumerate() {
                played[at + k] = Some(*db);
            }
        }
        let n = played.len().max(person.len()) + delay;
        let mut first = None;
        let mut told = 0;
        for chunk_end in (5..=n).step_by(5) {
            // Each piece is reported as it is queued: a second before it plays.
            while let Some((reckoned, _, levels)) = pieces.get(told)
                && reckoned.saturating_sub(50) <= chunk_end
            {
                talk.played(t0 + FRAME * *reckoned as u32, levels);
                told += 1;
            }
            let db: Vec<f32> = (chunk_end - 5..chunk_end)
                .map(|i| {
                    // A real room's echo wavers: ±2 dB, frame by frame.
                    let waver = ((i * 7919) % 5) as f32 - 2.0;
                    let echo = i
                        .checked_sub(delay)
                        .and_then(|j| played.get(j).copied().flatten())
                        .map(|v| v + gain + waver);
                    let theirs = person.get(i).copied().flatten();
                    let power = [echo, theirs, Some(-70.0)]
                        .iter()
                        .flatten()
                        .map(|db| 10f32.powf(db / 10.0))
                        .sum::<f32>();
                    10.0 * power.log10()
                })
                .collect();
            // The stream began at t0 (its clock), the event arrives 15 ms after its end.
            let end = chunk_end as f64 * 0.02;
            let arrival = t0 + Duration::from_secs_f64(end) + Duration::from_millis(15);
            if talk.heard(arrival, end, &db) && first.is_none() {
                first = Some(chunk_end);
            }
        }
        first
    }

    #[test]
    fn a_piece_begun_from_silence_off_its_reckoning_is_moved_to_its_echo() {
        let t0 = Instant::now();
        for (reckoned, played) in [(500, 510), (500, 492), (500, 525)] {
            let mut talk = Talk::new();
            // Each begins, as a synthesised sentence does, with a moment of near silence.
            let quiet_first = |levels: Vec<f32>| [vec![-65.0; 10], levels].concat();
            let (first, second) = (quiet_first(speech(400, 21)), quiet_first(speech(300, 22)));
            let both = [(0, 0, &first[..]), (reckoned, played, &second[..])];
            assert_eq!(pieces(&mut talk, t0, &both, 4, -6.0, &[]), None, "{reckoned} {played}");
            // And a person over the second piece is still heard.
            let mut talk = Talk::new();
            let theirs = speech(100, 23);
            let person = speaking_from(700, 900, &theirs);
            let heard = pieces(&mut talk, t0, &both, 4, -6.0, &person).expect("heard");
            assert!((700..=715).contains(&heard), "{reckoned} {played}: heard at {heard}");
        }
    }

    #[test]
    fn the_voice_heard_back_alone_teaches_the_path_and_is_never_a_person() {
        let t0 = Instant::now();
        for (delay, gain) in [(3, -6.0), (8, -20.0), (14, 3.0)] {
            let mut talk = Talk::new();
            let voice = speech(400, 7 + delay as u32);
            assert_eq!(room(&mut talk, t0, &voice, delay, gain, &[]), None, "{delay} {gain}");
            let path = talk.path().expect("learned");
            // The events' own 15 ms on the way are part of the delay learned.
            assert!((path.delay - delay as i64).abs() <= 1, "{path:?}");
            assert!((path.gain - gain).abs() < 1.0, "{path:?}");
        }
    }

    #[test]
    fn a_person_louder_than_the_echo_is_heard_within_a_few_frames() {
        let t0 = Instant::now();
        let mut talk = Talk::new();
        let voice = speech(600, 3);
        // They start at frame 400 (8 s in), their syllables 6 dB above the echo's.
        let theirs = speech(300, 11);
        let person = speaking_from(400, 700, &theirs);
        let first = room(&mut talk, t0, &voice, 4, -6.0, &person).expect("heard");
        assert!((400..=410).contains(&first), "heard at frame {first}");
    }

    #[test]
    fn no_path_no_judgement_and_a_stopped_voice_expects_no_echo() {
        let t0 = Instant::now();
        let mut talk = Talk::new();
        // Too little of the voice to learn from: loud or not, no person yet.
        let voice = speech(20, 5);
        let person: Vec<Option<f32>> = vec![Some(-10.0); 25];
        assert_eq!(room(&mut talk, t0, &voice, 2, -6.0, &person), None);
        assert_eq!(talk.path(), None);
        // Played and then hushed: the frames after the stop are not the voice's.
        let mut talk = Talk::new();
        talk.played(t0, &[-20.0; 100]);
        talk.hushed(t0 + FRAME * 40);
        assert_eq!(talk.voice.len(), 40);
        assert_eq!(talk.voice_at(t0 + FRAME * 39), Some(-20.0));
        assert_eq!(talk.voice_at(t0 + FRAME * 41), None);
    }

    #[test]
    fn behind_an_echo_canceller_a_person_is_louder_than_the_residue() {
        let t0 = Instant::now();
        let mut talk = Talk::new();
        // The canceller leaves a residue 20–40 dB under the voice that does not follow it.
        // A person starts at frame 500.
        let voice = speech(700, 31);
        let theirs = speech(150, 32);
        let person = speaking_from(500, 700, &theirs);
        let mut next = numbers(99);
        let residue = (0..700).map(|_| -45.0 - (next() % 20) as f32);
        let mic: Vec<f32> = residue
            .zip(&person)
            .map(|(r, p)| 10.0 * (power(r) + p.map_or(0.0, power)).log10())
            .collect();
        talk.played(t0, &voice);
        let mut heard = None;
        for end in (5..=mic.len()).step_by(5) {
            let arrival = t0 + FRAME * end as u32 + Duration::from_millis(15);
            if talk.heard(arrival, end as f64 * 0.02, &mic[end - 5..end]) && heard.is_none() {
                heard = Some(end);
            }
        }
        assert_eq!(talk.path(), None, "the residue does not follow the voice closely enough");
        let heard = heard.expect("heard");
        assert!((500..=515).contains(&heard), "heard at {heard}");
    }

    #[test]
    fn a_restarted_daemon_is_placed_by_its_own_clock() {
        let t0 = Instant::now();
        let mut talk = Talk::new();
        let voice = speech(400, 41);
        assert_eq!(room(&mut talk, t0, &voice, 3, -6.0, &[]), None);
        let path = talk.path().expect("learned");
        // A new daemon a second after the old one's last event (a supervisor restarts it at
        // once) counts from 0: placed by the old stream's clock, its frames would fall 9 s
        // early, and no one would be judged until that clock was forgotten (3 s).
        talk.stream_ended();
        let t1 = t0 + Duration::from_secs(9);
        let again = speech(300, 42);
        // Speaking up (6 dB over the voice itself): this is about clocks, not sensitivity.
        let theirs: Vec<f32> = speech(100, 43).iter().map(|db| db + 6.0).collect();
        let person = speaking_from(75, 400, &theirs);
        let heard = room(&mut talk, t1, &again, 3, -6.0, &person).expect("heard");
        assert!((75..=90).contains(&heard), "heard at {heard}");
        assert_eq!(talk.path().map(|p| p.delay), Some(path.delay));
    }

    #[test]
    fn levels_of_a_piece() {
        let tone: Vec<f32> = (0..500).map(|i| if i % 2 == 0 { 0.5 } else { -0.5 }).collect();
        let levels = levels(&tone, 22_050);
        assert_eq!(levels.len(), 2, "20 ms frames and the rest");
        assert!((levels[0] - 20.0 * 0.5f32.log10()).abs() < 0.01);
        assert_eq!(self::levels(&[0.0; 100], 22_050), vec![-100.0]);
    }
}
