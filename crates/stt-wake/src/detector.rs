//! The features and the phrases listened for, together: audio in, a [`Detection`] out when a
//! phrase is heard.
//!
//! After each step every phrase is scored: a head's score against its threshold
//! ([`DEFAULT_THRESHOLD`] unless set), an enrolled phrase's distance against its own. Over
//! its threshold, the phrase is heard; if several are at once, the surest. A phrase stays
//! over its threshold for several steps (3 to 7 in the espeak-ng clips of
//! `tests/reference.json`), and two phrases can share a word, so after a detection nothing
//! is scored for [`REFRACTORY_S`]: one detection per utterance, whichever phrase.

use std::fmt;

use crate::WakeError;
use crate::enrolled::Enrolled;
use crate::features::{Features, SAMPLE_RATE, STEP};
use crate::head::Head;

/// The score over which a head's phrase is heard, unless set: openWakeWord's own.
pub const DEFAULT_THRESHOLD: f32 = 0.5;

/// How long after a detection nothing more is detected, in seconds, unless set.
pub const REFRACTORY_S: f32 = 2.0;

/// A phrase heard.
#[derive(Debug, Clone, PartialEq)]
pub struct Detection {
    /// The name it was added under.
    pub phrase: String,
    /// How sure: a head's score, or for an enrolled phrase one minus its distance (both in
    /// [0, 1], higher is surer).
    pub score: f32,
    /// Where the step it was heard in ends, in samples since the stream started (or was
    /// reset).
    pub at_sample: u64,
}

/// A detector: the features, the phrases, and when the last detection was. `Send`, so it can
/// live on a worker thread.
pub struct Detector {
    features: Features,
    phrases: Vec<Phrase>,
    /// Steps after a detection during which nothing is scored.
    refractory: u64,
    /// The first step that may be scored again.
    quiet_until: u64,
}

impl fmt::Debug for Detector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.phrases.iter().map(|p| p.name.as_str()).collect();
        f.debug_struct("Detector")
            .field("phrases", &names)
            .field("refractory_steps", &self.refractory)
            .finish_non_exhaustive()
    }
}

/// One phrase listened for.
struct Phrase {
    name: String,
    matcher: Matcher,
}

enum Matcher {
    Head { head: Head, threshold: f32 },
    Enrolled(Enrolled),
}

impl Matcher {
    /// How sure the phrase was said at the end of `history`, if it was (see
    /// [`Detection::score`]).
    fn heard(&mut self, history: &[crate::Embedding]) -> Result<Option<f32>, WakeError> {
        Ok(match self {
            Matcher::Head { head, threshold } => {
                head.score(history)?.filter(|score| score >= threshold)
            }
            Matcher::Enrolled(enrolled) => enrolled
                .distance(history)
                .filter(|&d| d <= enrolled.threshold())
                .map(|d| (1.0 - d).clamp(0.0, 1.0)),
        })
    }
}

impl Detector {
    /// A detector on `features` listening for nothing yet, with a refractory time of
    /// [`REFRACTORY_S`].
    pub fn new(features: Features) -> Detector {
        let mut detector =
            Detector { features, phrases: Vec::new(), refractory: 0, quiet_until: 0 };
        detector.set_refractory_s(REFRACTORY_S);
        detector
    }

    /// Listens for `name` with an openWakeWord head, heard at a score of `threshold` or more
    /// ([`DEFAULT_THRESHOLD`] is openWakeWord's).
    pub fn add_head(&mut self, name: impl Into<String>, head: Head, threshold: f32) {
        self.phrases.push(Phrase { name: name.into(), matcher: Matcher::Head { head, threshold } });
    }

    /// Listens for `name`, a phrase enrolled from the user's recordings, heard at its own
    /// threshold.
    pub fn add_enrolled(&mut self, name: impl Into<String>, enrolled: Enrolled) {
        self.phrases.push(Phrase { name: name.into(), matcher: Matcher::Enrolled(enrolled) });
    }

    /// Sets how long after a detection nothing more is detected, in seconds (rounded up to
    /// whole steps).
    pub fn set_refractory_s(&mut self, seconds: f32) {
        let steps = (seconds.max(0.0) * SAMPLE_RATE as f32 / STEP as f32).ceil();
        self.refractory = steps as u64;
    }

    /// The features, for enrolling a phrase with the models already loaded
    /// ([`Enrolled::from_clips`] leaves the live stream alone).
    pub fn features(&mut self) -> &mut Features {
        &mut self.features
    }

    /// Adds 16 kHz mono `samples` in [-1, 1] and gives the phrases heard in the steps they
    /// complete, oldest first: almost always none or one, but a push longer than the
    /// refractory time can hold two.
    pub fn push(&mut self, samples: &[f32]) -> Result<Vec<Detection>, WakeError> {
        let new = self.features.push(samples)?.len();
        self.detect(new)
    }

    /// [`Detector::push`] for 16-bit samples.
    pub fn push_i16(&mut self, samples: &[i16]) -> Result<Vec<Detection>, WakeError> {
        let new = self.features.push_i16(samples)?.len();
        self.detect(new)
    }

    /// Starts the stream again, as if no audio had come (see [`Features::reset`]).
    pub fn reset(&mut self) {
        self.features.reset();
        self.quiet_until = 0;
    }

    /// Scores the last `new` steps of the stream, each on the history as it was then.
    fn detect(&mut self, new: usize) -> Result<Vec<Detection>, WakeError> {
        let history = self.features.history();
        let steps = self.features.steps();
        let mut detections = Vec::new();
        for age in (0..new).rev() {
            let step = steps - age as u64;
            if step < self.quiet_until {
                continue;
            }
            let upto = &history[..history.len() - age];
            let mut best: Option<(usize, f32)> = None;
            for (i, phrase) in self.phrases.iter_mut().enumerate() {
                if let Some(score) = phrase.matcher.heard(upto)?
                    && best.is_none_or(|(_, b)| score > b)
                {
                    best = Some((i, score));
                }
            }
            if let Some((i, score)) = best {
                detections.push(Detection {
                    phrase: self.phrases[i].name.clone(),
                    score,
                    at_sample: step * STEP as u64,
                });
                self.quiet_until = step + 1 + self.refractory;
            }
        }
        Ok(detections)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refractory_time_is_whole_steps() {
        let steps = |s: f32| (s * SAMPLE_RATE as f32 / STEP as f32).ceil() as u64;
        assert_eq!(steps(REFRACTORY_S), 25);
        assert_eq!(steps(0.1), 2);
        assert_eq!(steps(0.0), 0);
    }

    #[test]
    fn a_detector_can_move_to_a_worker_thread() {
        fn send<T: Send>() {}
        send::<Detector>();
    }
}
