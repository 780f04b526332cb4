//! From speech probabilities to segments.
//!
//! The stream is cut into frames of the classifier's length; each frame is scored once, in
//! order, whatever the chunk sizes pushed, so the events depend only on the audio. Time is
//! counted in samples since the stream began and reported in seconds.

use std::collections::VecDeque;

use crate::{Earshot, SAMPLE_RATE, SpeechProb, VadConfig, VadError};

/// Once a segment is open, frames count as speech down to `threshold - HYSTERESIS` (but never
/// below half the threshold), so a word scored just under the threshold does not start the
/// hangover.
pub const HYSTERESIS: f64 = 0.15;

/// The default [`VadConfig::tail_ms`]: audio kept after the last speech frame when a segment
/// closes, in milliseconds.
pub const TAIL_MS: u32 = 300;

/// A segment that reaches its maximum length is split at the quietest point of its last
/// `SPLIT_SEARCH_MS` (or its last half, if that is shorter).
pub const SPLIT_SEARCH_MS: u32 = 3000;

/// Energy window (25 ms) and hop (10 ms) in which the quietest point is looked for.
const QUIET_WINDOW: usize = 400;
const QUIET_HOP: usize = 160;

const SAMPLES_PER_MS: u64 = SAMPLE_RATE as u64 / 1000;

/// What the [`Segmenter`] reports. Every `Start` is followed by exactly one `End` with the
/// same `start_s` (at the latest from [`Segmenter::finish`]); segments never overlap.
#[derive(Debug, Clone, PartialEq)]
pub enum SegEvent {
    /// Speech began: a segment is open. `start_s` is the time of its first sample, pre-roll
    /// included, in seconds since the stream began.
    Start { start_s: f64 },
    /// The segment closed: by hangover, by reaching the maximum length (a `Start` at
    /// `end_s` follows for the continuation), or at the end of input.
    End {
        start_s: f64,
        end_s: f64,
        /// The audio from `start_s` to `end_s`: pre-roll, speech and the kept tail.
        samples: Vec<f32>,
        /// Seconds from the first to the last speech frame in it (pauses shorter than the
        /// hangover included): how much speech the text may hold.
        speech_s: f64,
        /// The speech in it (first to last speech frame) is shorter than `min_speech_ms`:
        /// announce it, but do not transcribe it.
        too_short: bool,
    },
}

/// The open segment as its `End` will carry it if no more speech comes (see
/// [`Segmenter::take_settled`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Settled {
    pub start_s: f64,
    /// What the `End` will carry as `samples`: pre-roll, speech and the tail.
    pub samples: Vec<f32>,
    /// What the `End` will carry as `speech_s`.
    pub speech_s: f64,
}

/// The open segment while it grows (see [`Segmenter::growing`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Growing<'a> {
    pub start_s: f64,
    pub samples: &'a [f32],
    pub speech_s: f64,
    /// Where its speech so far ends: the end of the last speech frame, as an offset into
    /// `samples`. What follows is a pause (or nothing, while speech goes on).
    pub speech_len: usize,
}

impl Growing<'_> {
    /// Samples since the last speech frame.
    pub fn pause_len(&self) -> usize {
        self.samples.len() - self.speech_len
    }
}

/// Turns a 16 kHz mono stream into speech segments; see the [crate docs](crate).
pub struct Segmenter<P = Earshot> {
    prob: P,
    frame_len: usize,
    /// A frame at or above `on` counts towards opening a segment; inside a segment, a frame
    /// at or above `off` is speech.
    on: f32,
    off: f32,
    /// Lengths in samples.
    pre_roll: u64,
    onset_frames: u32,
    hangover: u64,
    tail: u64,
    min_speech: u64,
    max_len: usize,
    split_search: usize,
    /// Samples of an incomplete frame, not scored yet (fewer than `frame_len`).
    pending: Vec<f32>,
    /// Samples scored so far: the end of the last frame.
    now: u64,
    /// The last `ring_cap` scored samples (they end at `now`): the pre-roll source.
    ring: VecDeque<f32>,
    ring_cap: usize,
    /// End of the last segment: the next one's pre-roll never reaches before it.
    prev_end: u64,
    /// Consecutive frames at or above `on` while idle, and where the first began.
    run: u32,
    run_start: u64,
    open: Option<Open>,
}

/// The segment being collected.
struct Open {
    start: u64,
    /// From `start` to `now`; never longer than `max_len`.
    samples: Vec<f32>,
    /// Start of the first and end of the last speech frame.
    speech_start: u64,
    speech_end: u64,
    /// The pause after `speech_end` has lasted the tail: what `End` will carry is known
    /// (unless speech resumes), not yet taken by [`Segmenter::take_settled`].
    settled: Option<Settled>,
    /// The `speech_end` a [`Settled`] was made for, so each pause makes one.
    settled_for: Option<u64>,
}

impl Segmenter<Earshot> {
    /// A segmenter with the [`Earshot`] classifier.
    pub fn new(cfg: VadConfig) -> Result<Self, VadError> {
        Self::with_prob(cfg, Earshot::new())
    }
}

impl<P: SpeechProb> Segmenter<P> {
    /// A segmenter with any frame classifier (tests use a scripted one).
    pub fn with_prob(cfg: VadConfig, prob: P) -> Result<Self, VadError> {
        cfg.validate()?;
        let frame_len = prob.frame_len().max(1);
        let ms = |v: u32| u64::from(v) * SAMPLES_PER_MS;
        let onset_frames = ms(cfg.onset_ms).div_ceil(frame_len as u64).max(1);
        let onset_frames = u32::try_from(onset_frames).unwrap_or(u32::MAX);
        let max_len = usize::try_from(u64::from(cfg.max_segment_s) * u64::from(SAMPLE_RATE))
            .unwrap_or(usize::MAX);
        let ring_cap = usize::try_from(ms(cfg.pre_roll_ms)).unwrap_or(usize::MAX)
            + onset_frames as usize * frame_len;
        Ok(Self {
            prob,
            frame_len,
            on: cfg.threshold as f32,
            off: (cfg.threshold - HYSTERESIS).max(cfg.threshold / 2.0) as f32,
            pre_roll: ms(cfg.pre_roll_ms),
            onset_frames,
            hangover: ms(cfg.hangover_ms),
            tail: ms(cfg.tail_ms.min(cfg.hangover_ms)),
            min_speech: ms(cfg.min_speech_ms),
            max_len,
            split_search: (SPLIT_SEARCH_MS as usize * SAMPLES_PER_MS as usize).min(max_len / 2),
            pending: Vec::with_capacity(frame_len),
            now: 0,
            ring: VecDeque::with_capacity(ring_cap + frame_len),
            ring_cap,
            prev_end: 0,
            run: 0,
            run_start: 0,
            open: None,
        })
    }

    /// Feeds the next audio of the stream: 16 kHz mono, any number of samples. Returns what
    /// happened in it, in order.
    pub fn push(&mut self, audio: &[f32]) -> Vec<SegEvent> {
        let mut events = Vec::new();
        let mut rest = audio;
        if !self.pending.is_empty() {
            let take = (self.frame_len - self.pending.len()).min(rest.len());
            self.pending.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if self.pending.len() < self.frame_len {
                return events;
            }
            let frame = std::mem::take(&mut self.pending);
            self.frame(&frame, &mut events);
            self.pending = frame;
            self.pending.clear();
        }
        let mut frames = rest.chunks_exact(self.frame_len);
        for frame in &mut frames {
            self.frame(frame, &mut events);
        }
        self.pending.extend_from_slice(frames.remainder());
        events
    }

    /// Ends the input (the stream ended, or has a gap): closes an open segment, its tail
    /// taken from what is left (an incomplete last frame included, unscored). Speech still
    /// waiting for its onset is dropped.
    ///
    /// The segmenter can then take a new stream: its clock goes on from here, the classifier
    /// starts afresh, and no pre-roll reaches back across this point.
    pub fn finish(&mut self) -> Vec<SegEvent> {
        let mut events = Vec::new();
        let pending = std::mem::take(&mut self.pending);
        if self.open.as_ref().is_some_and(|o| o.samples.len() + pending.len() > self.max_len) {
            self.at_max(self.now, &mut events);
        }
        self.now += pending.len() as u64;
        if let Some(open) = self.open.as_mut() {
            open.samples.extend_from_slice(&pending);
            let end = (open.speech_end + self.tail).min(self.now);
            self.close(end, &mut events);
        }
        self.ring.clear();
        self.prev_end = self.now;
        self.run = 0;
        self.prob.reset();
        events
    }

    /// Whether a segment is open (a `Start` was reported and its `End` not yet).
    pub fn in_segment(&self) -> bool {
        self.open.is_some()
    }

    /// The open segment so far: its audio from its start to now, and the seconds of speech in
    /// it (first to last speech frame). `None` when no segment is open. For live partial
    /// transcripts; the segment's `End` may still add to it or trim its tail.
    pub fn growing(&self) -> Option<Growing<'_>> {
        self.open.as_ref().map(|o| Growing {
            start_s: secs(o.start),
            samples: &o.samples,
            speech_s: secs(o.speech_end.saturating_sub(o.speech_start)),
            speech_len: usize::try_from(o.speech_end - o.start)
                .unwrap_or(usize::MAX)
                .min(o.samples.len()),
        })
    }

    /// Ends the turn in a pause, before the hangover: closes the open segment with its first
    /// `len` samples, if no speech came after them (its last speech frame ends at or before
    /// `len`, and it holds them all). Something that judged the pause the end of what was
    /// said (the text so far) calls it; the segment's `End` then carries exactly the audio
    /// it judged. Returns nothing, and changes nothing, when speech has resumed, the segment
    /// closed, or `len` is not in it.
    pub fn end_turn(&mut self, len: usize) -> Vec<SegEvent> {
        let mut events = Vec::new();
        let Some(open) = self.open.as_ref() else { return events };
        let speech_len = open.speech_end - open.start;
        if (len as u64) < speech_len || len > open.samples.len() {
            return events;
        }
        tracing::debug!(pause_ms = (len as u64 - speech_len) / SAMPLES_PER_MS, "turn ended early");
        self.close(open.start + len as u64, &mut events);
        events
    }

    /// The open segment as its `End` will carry it, once per pause in its speech: when the
    /// pause has lasted [`VadConfig::tail_ms`], everything the `End` will hold is in, and only new
    /// speech before the hangover runs out would change it. So work on the segment (a
    /// speaker's embedding) can start during the hangover, while nothing else runs, rather
    /// than after it; an `End` whose `samples` are longer than the settled ones means speech
    /// resumed. `None` when no segment is open or its speech goes on.
    pub fn take_settled(&mut self) -> Option<Settled> {
        self.open.as_mut().and_then(|o| o.settled.take())
    }

    fn frame(&mut self, frame: &[f32], events: &mut Vec<SegEvent>) {
        let p = self.prob.prob(frame);
        let frame_start = self.now;
        self.now += frame.len() as u64;
        self.remember(frame);

        if self.open.as_ref().is_some_and(|o| o.samples.len() + frame.len() > self.max_len) {
            self.at_max(frame_start, events);
        }
        if let Some(open) = self.open.as_mut() {
            open.samples.extend_from_slice(frame);
            if p >= self.off {
                open.speech_end = self.now;
                open.settled = None;
            } else if self.now - open.speech_end >= self.hangover {
                let end = open.speech_end + self.tail;
                self.close(end, events);
            } else if self.now - open.speech_end >= self.tail
                && open.settled_for != Some(open.speech_end)
            {
                let end = usize::try_from(open.speech_end + self.tail - open.start)
                    .unwrap_or(usize::MAX)
                    .min(open.samples.len());
                open.settled_for = Some(open.speech_end);
                open.settled = Some(Settled {
                    start_s: secs(open.start),
                    samples: open.samples[..end].to_vec(),
                    speech_s: secs(open.speech_end - open.speech_start),
                });
            }
        } else if p >= self.on {
            if self.run == 0 {
                self.run_start = frame_start;
            }
            self.run += 1;
            if self.run >= self.onset_frames {
                self.start(events);
            }
        } else {
            self.run = 0;
        }
    }

    fn remember(&mut self, samples: &[f32]) {
        self.ring.extend(samples);
        let excess = self.ring.len().saturating_sub(self.ring_cap);
        self.ring.drain(..excess);
    }

    fn start(&mut self, events: &mut Vec<SegEvent>) {
        let ring_start = self.now - self.ring.len() as u64;
        let start = self.run_start.saturating_sub(self.pre_roll).max(self.prev_end).max(ring_start);
        let skip = usize::try_from(start - ring_start).unwrap_or(usize::MAX);
        let samples: Vec<f32> = self.ring.iter().skip(skip).copied().collect();
        tracing::debug!(start_s = secs(start), "speech segment opens");
        events.push(SegEvent::Start { start_s: secs(start) });
        self.open = Some(Open {
            start,
            samples,
            speech_start: self.run_start,
            speech_end: self.now,
            settled: None,
            settled_for: None,
        });
        self.run = 0;
    }

    /// Closes the open segment at `end` (clamped to the audio it holds).
    fn close(&mut self, end: u64, events: &mut Vec<SegEvent>) {
        let Some(mut open) = self.open.take() else { return };
        let len = open.samples.len() as u64;
        let end = end.clamp(open.start, open.start + len);
        open.samples.truncate(usize::try_from(end - open.start).unwrap_or(usize::MAX));
        let speech = open.speech_end.min(end).saturating_sub(open.speech_start);
        let too_short = speech < self.min_speech;
        tracing::debug!(
            start_s = secs(open.start),
            end_s = secs(end),
            speech_s = secs(speech),
            too_short,
            "speech segment closes"
        );
        events.push(SegEvent::End {
            start_s: secs(open.start),
            end_s: secs(end),
            samples: open.samples,
            speech_s: secs(speech),
            too_short,
        });
        self.prev_end = end;
        self.run = 0;
    }

    /// The open segment cannot take the next `frame_start..` audio without exceeding the
    /// maximum length: end it at its quietest recent point, continuing in a new segment if
    /// speech goes on past that point.
    fn at_max(&mut self, frame_start: u64, events: &mut Vec<SegEvent>) {
        let Some(open) = self.open.as_ref() else { return };
        // In a pause whose whole tail is already in: this is where hangover would cut anyway.
        let keep_end = open.speech_end + self.tail;
        if keep_end <= frame_start {
            self.close(keep_end, events);
            return;
        }
        let split = open.start + self.quietest(&open.samples) as u64;
        if split >= open.speech_end {
            self.close(split, events);
            return;
        }
        let Some(mut first) = self.open.take() else { return };
        let rest = first.samples.split_off(usize::try_from(split - first.start).unwrap_or(0));
        let speech_end = first.speech_end;
        first.speech_end = split;
        self.open = Some(first);
        tracing::debug!(split_s = secs(split), "speech segment reached its maximum length: split");
        self.close(split, events);
        events.push(SegEvent::Start { start_s: secs(split) });
        self.open = Some(Open {
            start: split,
            samples: rest,
            speech_start: split,
            speech_end,
            settled: None,
            settled_for: None,
        });
    }

    /// Offset into `samples` of the middle of the quietest window within the search span at
    /// its end; the latest such window on ties (the longest first part).
    fn quietest(&self, samples: &[f32]) -> usize {
        let base = samples.len() - self.split_search.min(samples.len());
        let region = &samples[base..];
        if region.len() < QUIET_WINDOW {
            return samples.len();
        }
        let mut best = (f32::INFINITY, 0);
        for i in (0..=region.len() - QUIET_WINDOW).step_by(QUIET_HOP) {
            let energy: f32 = region[i..i + QUIET_WINDOW].iter().map(|x| x * x).sum();
            if energy <= best.0 {
                best = (energy, i);
            }
        }
        base + best.1 + QUIET_WINDOW / 2
    }
}

impl<P> std::fmt::Debug for Segmenter<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segmenter")
            .field("frame_len", &self.frame_len)
            .field("now_s", &secs(self.now))
            .field("open_since_s", &self.open.as_ref().map(|o| secs(o.start)))
            .finish_non_exhaustive()
    }
}

fn secs(samples: u64) -> f64 {
    samples as f64 / f64::from(SAMPLE_RATE)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 10 ms frames, so timelines read in milliseconds.
    const FRAME: usize = 160;

    /// Replays a probability per frame, whatever the audio.
    struct Script {
        probs: Vec<f32>,
        next: usize,
    }

    impl SpeechProb for Script {
        fn frame_len(&self) -> usize {
            FRAME
        }
        fn prob(&mut self, frame: &[f32]) -> f32 {
            assert_eq!(frame.len(), FRAME);
            let p = self.probs.get(self.next).copied().unwrap_or(0.0);
            self.next += 1;
            p
        }
    }

    /// Test audio for a timeline of `(milliseconds, probability)` spans (multiples of 10 ms):
    /// frames at or above 0.3 are loud, with a sample-dependent level so misplaced slices
    /// show; the others, and the `dips` (`from_ms..to_ms`), are a constant faint ±0.001.
    fn scene(timeline: &[(u32, f32)], dips: &[(u32, u32)]) -> (Vec<f32>, Vec<f32>) {
        let mut probs = Vec::new();
        for &(ms, p) in timeline {
            assert_eq!(ms % 10, 0, "timeline spans are whole frames");
            probs.extend(std::iter::repeat_n(p, ms as usize / 10));
        }
        let audio = (0..probs.len() * FRAME)
            .map(|i| {
                let ms = (i / 16) as u32;
                let dip = dips.iter().any(|&(a, b)| (a..b).contains(&ms));
                let sign = if i % 2 == 0 { 1.0 } else { -1.0 };
                let level = if probs[i / FRAME] >= 0.3 && !dip {
                    0.3 + 0.2 * ((i as f32 * 0.618_034).fract())
                } else {
                    0.001
                };
                sign * level
            })
            .collect();
        (probs, audio)
    }

    fn cfg() -> VadConfig {
        VadConfig {
            threshold: 0.5,
            pre_roll_ms: 300,
            onset_ms: 60,
            hangover_ms: 500,
            tail_ms: 300,
            min_speech_ms: 250,
            max_segment_s: 20,
        }
    }

    fn run(cfg: VadConfig, probs: &[f32], audio: &[f32], chunk: usize) -> Vec<SegEvent> {
        let script = Script { probs: probs.to_vec(), next: 0 };
        let mut seg = Segmenter::with_prob(cfg, script).unwrap();
        let mut events = Vec::new();
        for c in audio.chunks(chunk) {
            events.extend(seg.push(c));
        }
        events.extend(seg.finish());
        events
    }

    fn ms(s: f64) -> String {
        let samples = (s * f64::from(SAMPLE_RATE)).round();
        format!("{}", samples / SAMPLES_PER_MS as f64)
    }

    /// Events as `start MS` / `end MS..MS [short]`, after checking that each segment holds
    /// exactly the input audio of its span, never longer than the maximum.
    fn summary(cfg: &VadConfig, audio: &[f32], events: &[SegEvent]) -> Vec<String> {
        let max = cfg.max_segment_s as usize * SAMPLE_RATE as usize;
        events
            .iter()
            .map(|e| match e {
                SegEvent::Start { start_s } => format!("start {}", ms(*start_s)),
                SegEvent::End { start_s, end_s, samples, too_short, .. } => {
                    let a = (start_s * f64::from(SAMPLE_RATE)).round() as usize;
                    let b = (end_s * f64::from(SAMPLE_RATE)).round() as usize;
                    assert!(samples.len() <= max, "segment of {} samples", samples.len());
                    assert!(samples[..] == audio[a..b], "samples of {a}..{b} differ from input");
                    let short = if *too_short { " short" } else { "" };
                    format!("end {}..{}{short}", ms(*start_s), ms(*end_s))
                }
            })
            .collect()
    }

    /// Pushes `audio` one frame at a time and collects what `take_settled` gives after each
    /// frame, with the events.
    fn run_settled(probs: &[f32], audio: &[f32]) -> (Vec<SegEvent>, Vec<Settled>) {
        let mut seg =
            Segmenter::with_prob(cfg(), Script { probs: probs.to_vec(), next: 0 }).unwrap();
        let (mut events, mut settled) = (Vec::new(), Vec::new());
        for frame in audio.chunks(FRAME) {
            events.extend(seg.push(frame));
            settled.extend(seg.take_settled());
        }
        events.extend(seg.finish());
        (events, settled)
    }

    #[test]
    fn a_pause_as_long_as_the_tail_settles_what_the_end_will_carry() {
        // Speech, a 300 ms pause (the tail: settled), more speech, then silence: settled
        // again 300 ms in, and that is what the end carries, 200 ms later.
        let (probs, audio) =
            scene(&[(200, 0.0), (800, 0.9), (300, 0.0), (600, 0.9), (1000, 0.0)], &[]);
        let (events, settled) = run_settled(&probs, &audio);
        assert_eq!(settled.len(), 2, "one per pause that lasts the tail");
        let Some(SegEvent::End { samples, speech_s, start_s, .. }) = events.get(1) else {
            panic!("{events:?}")
        };
        let last = &settled[1];
        assert_eq!((&last.samples, last.speech_s, last.start_s), (samples, *speech_s, *start_s));
        assert!(settled[0].samples.len() < samples.len(), "the first pause was not the end");
        // A pause shorter than the tail settles nothing.
        let (probs, audio) = scene(&[(200, 0.0), (800, 0.9), (200, 0.0), (800, 0.9)], &[]);
        assert!(run_settled(&probs, &audio).1.is_empty());
    }

    #[test]
    fn the_growing_segment_is_the_start_of_what_its_end_carries() {
        let (probs, audio) = scene(&[(500, 0.0), (1200, 0.9), (800, 0.0)], &[]);
        let mut seg = Segmenter::with_prob(cfg(), Script { probs, next: 0 }).unwrap();
        let mut seen = Vec::new();
        let mut events = Vec::new();
        for frame in audio.chunks(FRAME) {
            events.extend(seg.push(frame));
            if let Some(g) = seg.growing() {
                seen.push((g.start_s, g.samples.to_vec(), g.speech_s));
            }
        }
        let Some(SegEvent::End { start_s, samples, .. }) = events.get(1) else {
            panic!("{events:?}")
        };
        assert!(seg.growing().is_none(), "closed");
        assert!(!seen.is_empty());
        for (at, grown, _) in &seen {
            assert_eq!(at, start_s);
            let n = grown.len().min(samples.len());
            assert_eq!(grown[..n], samples[..n], "what grew is what the end carries");
        }
        // It grows a frame at a time, and its speech with it, never beyond the audio.
        assert!(seen.windows(2).all(|w| w[1].1.len() == w[0].1.len() + FRAME));
        assert!(seen.iter().all(|(_, grown, speech)| *speech <= grown.len() as f64 / 16_000.0));
        assert!(seen.last().unwrap().2 > 1.0, "{:?}", seen.last().unwrap().2);
    }

    #[test]
    fn a_turn_ended_in_a_pause_closes_with_the_audio_judged_and_not_after_speech_resumes() {
        // Speech from 200 to 1000 ms, a 200 ms pause, speech again, then silence.
        let (probs, audio) =
            scene(&[(200, 0.0), (800, 0.9), (200, 0.0), (600, 0.9), (1000, 0.0)], &[]);
        let mut seg = Segmenter::with_prob(cfg(), Script { probs, next: 0 }).unwrap();
        let mut frames = audio.chunks(FRAME);
        let mut events = Vec::new();
        // 150 ms into the first pause: what was judged is the segment so far.
        for frame in frames.by_ref().take(115) {
            events.extend(seg.push(frame));
        }
        let g = seg.growing().expect("open");
        assert_eq!(g.pause_len(), 150 * 16, "a pause of 150 ms so far");
        let (judged, speech_len) = (g.samples.len(), g.speech_len);
        assert!(seg.end_turn(judged + 1).is_empty(), "audio it does not hold yet");
        assert!(seg.end_turn(speech_len - 1).is_empty(), "a cut inside the speech");
        // Speech resumes before the judgement comes back: it changes nothing.
        for frame in frames.by_ref().take(10) {
            events.extend(seg.push(frame));
        }
        assert_eq!(seg.growing().unwrap().pause_len(), 0, "speaking again");
        assert!(seg.end_turn(judged).is_empty(), "speech came after it");
        // 150 ms into the last pause the turn ends: the segment closes at once with exactly
        // the audio judged, well before the 500 ms hangover.
        for frame in frames.by_ref().take(70) {
            events.extend(seg.push(frame));
        }
        let g = seg.growing().unwrap();
        assert_eq!(g.pause_len(), 150 * 16);
        let (start_s, judged) = (g.start_s, g.samples.to_vec());
        let ended = seg.end_turn(judged.len());
        let [SegEvent::End { start_s: s, end_s, samples, too_short: false, .. }] = &ended[..]
        else {
            panic!("{ended:?}")
        };
        assert_eq!((s, samples), (&start_s, &judged));
        assert_eq!(ms(*end_s), "1950");
        assert!(seg.growing().is_none() && seg.end_turn(judged.len()).is_empty(), "closed");
        // The silence after it opens nothing more.
        for frame in frames {
            events.extend(seg.push(frame));
        }
        events.extend(seg.finish());
        assert_eq!(events.len(), 1, "only the start came from push: {events:?}");
    }

    fn check(cfg: VadConfig, timeline: &[(u32, f32)], dips: &[(u32, u32)], expected: &[&str]) {
        let (probs, audio) = scene(timeline, dips);
        let events = run(cfg, &probs, &audio, 4000);
        assert_eq!(summary(&cfg, &audio, &events), expected, "timeline {timeline:?}");
    }

    #[test]
    fn state_machine() {
        let c = cfg();
        // Silence, and frames that never reach the threshold: nothing.
        check(c, &[(3000, 0.0)], &[], &[]);
        check(c, &[(3000, 0.49)], &[], &[]);
        // A click shorter than the onset opens nothing.
        check(c, &[(1000, 0.0), (50, 1.0), (1000, 0.0)], &[], &[]);
        check(c, &[(1000, 0.0), (50, 1.0), (10, 0.4), (50, 1.0), (1000, 0.0)], &[], &[]);
        // Exactly the onset opens, 300 ms of pre-roll before the first speech frame; the
        // segment closes 500 ms after the last speech frame, keeping a 300 ms tail; 60 ms of
        // speech is too short.
        check(
            c,
            &[(1000, 0.0), (60, 1.0), (1000, 0.0)],
            &[],
            &["start 700", "end 700..1360 short"],
        );
        // An utterance.
        check(c, &[(1000, 0.0), (800, 1.0), (1000, 0.0)], &[], &["start 700", "end 700..2100"]);
        // Minimum speech length: 240 ms is too short, 250 ms is not.
        check(
            c,
            &[(1000, 0.0), (240, 1.0), (1000, 0.0)],
            &[],
            &["start 700", "end 700..1540 short"],
        );
        check(c, &[(1000, 0.0), (250, 1.0), (1000, 0.0)], &[], &["start 700", "end 700..1550"]);
        // Speech right at the start: the pre-roll is what there is.
        check(c, &[(100, 0.0), (500, 1.0), (1000, 0.0)], &[], &["start 0", "end 0..900"]);
        // The hangover bridges a 490 ms pause ...
        check(
            c,
            &[(1000, 0.0), (500, 1.0), (490, 0.0), (500, 1.0), (1000, 0.0)],
            &[],
            &["start 700", "end 700..2790"],
        );
        // ... but not a 500 ms one; the next pre-roll stops where the last segment ended.
        check(
            c,
            &[(1000, 0.0), (500, 1.0), (550, 0.0), (500, 1.0), (1000, 0.0)],
            &[],
            &["start 700", "end 700..1800", "start 1800", "end 1800..2850"],
        );
        check(
            c,
            &[(1000, 0.0), (500, 1.0), (1000, 0.0), (500, 1.0), (1000, 0.0)],
            &[],
            &["start 700", "end 700..1800", "start 2200", "end 2200..3300"],
        );
        // Hysteresis: 0.4 keeps an open segment in speech, but does not open one.
        check(
            c,
            &[(1000, 0.0), (300, 1.0), (1000, 0.4), (1000, 0.0)],
            &[],
            &["start 700", "end 700..2600"],
        );
        check(c, &[(1000, 0.0), (300, 0.4), (1000, 0.0)], &[], &[]);
        // End of input closes an open segment with what is left of its tail.
        check(c, &[(1000, 0.0), (1000, 1.0)], &[], &["start 700", "end 700..2000"]);
        check(c, &[(1000, 0.0), (1000, 1.0), (100, 0.0)], &[], &["start 700", "end 700..2100"]);
        // ... and drops speech still short of the onset.
        check(c, &[(1000, 0.0), (50, 1.0)], &[], &[]);
        // No hangover, no pre-roll: the segment is the speech frames exactly.
        let bare = VadConfig { pre_roll_ms: 0, hangover_ms: 0, ..c };
        check(
            bare,
            &[(1000, 0.0), (500, 1.0), (1000, 0.0)],
            &[],
            &["start 1000", "end 1000..1500"],
        );
    }

    #[test]
    fn max_length_splits_at_the_quietest_point() {
        let c = VadConfig { max_segment_s: 2, ..cfg() };
        // Continuous speech with short dips: each 2 s segment ends in the dip within its last
        // second, and the next starts there, so the segments tile the input (checked by
        // `summary`) with nothing lost or repeated.
        check(
            c,
            &[(500, 0.0), (5300, 1.0), (1000, 0.0)],
            &[(1700, 1740), (3000, 3040), (4500, 4540)],
            &[
                "start 200",
                "end 200..1722.5",
                "start 1722.5",
                "end 1722.5..3022.5",
                "start 3022.5",
                "end 3022.5..4522.5",
                "start 4522.5",
                "end 4522.5..6100",
            ],
        );
        // Without dips the split still comes in time and keeps the segment within 2 s.
        let (probs, audio) = scene(&[(500, 0.0), (9000, 1.0), (1000, 0.0)], &[]);
        let events = run(c, &probs, &audio, 4000);
        let s = summary(&c, &audio, &events);
        assert_eq!(s.len(), 12, "{s:?}");
        assert_eq!(s.first().map(String::as_str), Some("start 200"));
        assert_eq!(s.last().map(String::as_str), Some("end 8822.5..9800"), "{s:?}");
        for pair in events.windows(2) {
            if let [SegEvent::End { end_s, .. }, SegEvent::Start { start_s }] = pair {
                assert_eq!(end_s, start_s, "a split leaves no gap");
            }
        }
    }

    #[test]
    fn max_length_in_a_pause_closes_the_segment() {
        let c = VadConfig { max_segment_s: 2, hangover_ms: 1500, ..cfg() };
        // The maximum arrives in the pause after the speech, whose 300 ms tail is all in:
        // close there, as the hangover would have later.
        check(c, &[(500, 0.0), (1000, 1.0), (3000, 0.0)], &[], &["start 200", "end 200..1800"]);
        // The maximum arrives 100 ms into the pause: the quietest point is in the pause, so the
        // segment ends there instead of splitting off a continuation without speech.
        check(c, &[(500, 0.0), (1600, 1.0), (3000, 0.0)], &[], &["start 200", "end 200..2182.5"]);
        // Speech that resumes after such a close opens a new segment.
        check(
            c,
            &[(500, 0.0), (1600, 1.0), (600, 0.0), (500, 1.0), (3000, 0.0)],
            &[],
            &["start 200", "end 200..2182.5", "start 2400", "end 2400..3500"],
        );
    }

    #[test]
    fn events_do_not_depend_on_chunk_sizes() {
        let c = VadConfig { max_segment_s: 2, ..cfg() };
        let (probs, audio) = scene(
            &[(330, 0.0), (1200, 1.0), (700, 0.0), (60, 1.0), (800, 0.0), (4000, 0.9), (340, 0.0)],
            &[(3100, 3140)],
        );
        let mut audio = audio;
        audio.extend([0.2; 77]); // an incomplete last frame
        let reference = run(c, &probs, &audio, audio.len());
        assert!(reference.len() >= 8, "{reference:?}");
        for chunk in [1, 37, 160, 4000] {
            assert_eq!(run(c, &probs, &audio, chunk), reference, "chunks of {chunk}");
        }
    }

    #[test]
    fn segments_never_exceed_the_maximum_and_pre_roll_stays_bounded() {
        let c = VadConfig { max_segment_s: 1, pre_roll_ms: 400, onset_ms: 100, ..cfg() };
        let (probs, audio) = scene(&[(200, 0.0), (5000, 1.0), (300, 0.0), (5000, 1.0)], &[]);
        let script = Script { probs, next: 0 };
        let mut seg = Segmenter::with_prob(c, script).unwrap();
        let mut events = Vec::new();
        for chunk in audio.chunks(1000) {
            events.extend(seg.push(chunk));
            assert!(seg.ring.len() <= seg.ring_cap);
            assert!(seg.open.as_ref().is_none_or(|o| o.samples.len() <= 16_000));
        }
        events.extend(seg.finish());
        summary(&c, &audio, &events);
        let starts = events.iter().filter(|e| matches!(e, SegEvent::Start { .. })).count();
        let ends = events.iter().filter(|e| matches!(e, SegEvent::End { .. })).count();
        assert_eq!(starts, ends);
        assert!(starts >= 10, "{starts} segments");
    }

    #[test]
    fn after_finish_the_clock_goes_on_and_pre_roll_stays_after_the_gap() {
        let c = cfg();
        let (mut probs, first) = scene(&[(500, 0.0), (600, 1.0), (100, 0.0)], &[]);
        let (probs2, second) = scene(&[(100, 0.0), (600, 1.0), (100, 0.0)], &[]);
        probs.extend(probs2);
        let mut seg = Segmenter::with_prob(c, Script { probs, next: 0 }).unwrap();
        let mut events = seg.push(&first);
        events.extend(seg.finish());
        events.extend(seg.push(&second));
        events.extend(seg.finish());
        let both = [first, second].concat();
        // The second stream's speech starts at 1300 ms; its pre-roll would reach back to
        // 1000 ms, but stops where the first stream ended (1200 ms).
        assert_eq!(
            summary(&c, &both, &events),
            ["start 200", "end 200..1200", "start 1200", "end 1200..2000"]
        );
    }

    #[test]
    fn invalid_config_is_refused() {
        let script = Script { probs: Vec::new(), next: 0 };
        let err = Segmenter::with_prob(VadConfig { threshold: 1.5, ..cfg() }, script).unwrap_err();
        assert_eq!(err, VadError::Threshold(1.5));
    }
}
