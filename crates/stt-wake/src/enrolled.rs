//! A wake phrase of the user's own, enrolled from a few recordings of them saying it: no
//! model is trained and no head needed. The approach of local-wake (PyPI `local-wake` 0.1.2,
//! MIT), on the same speech embeddings as openWakeWord's heads:
//!
//! 1. Each recording is cut to its speech (the first to the last 10 ms whose level is within
//!    [`SPEECH_DB`] of its loudest), with up to [`LEAD_S`] of what came before kept as the
//!    start of the stream, and its embeddings taken ([`crate::Features::embed_clip`]): those of
//!    the steps that end inside the speech or up to [`TAIL_S`] after it. That sequence is
//!    the phrase as said once: a template.
//! 2. Live, after each step, the last embeddings of the stream, as many as a template has,
//!    are compared with each template by dynamic time warping over cosine distance (the
//!    cheapest path from first pair to last pair, each step of it one embedding on in
//!    either sequence or both), divided by the two lengths together as local-wake divides.
//!    The least over the templates is the phrase's distance: 0 for the same sequence.
//! 3. The phrase is heard when that distance is at most the threshold, which enrolment
//!    sets from how far the recordings are from each other ([`Enrolled::from_clips`]).
//!
//! An [`Enrolled`] is kept as JSON ([`Enrolled::to_json`], [`Enrolled::from_json`]): the
//! templates, the threshold, and which feature models made them, so a file from other
//! models is refused rather than compared.

use serde::{Deserialize, Serialize};

use crate::WakeError;
use crate::features::{DIM, Embedding, Features, SAMPLE_RATE, STEP};

/// The fewest recordings a phrase is enrolled from.
pub const MIN_CLIPS: usize = 3;

/// The most recordings a phrase is enrolled from.
pub const MAX_CLIPS: usize = 5;

/// How far below a recording's loudest 10 ms its speech reaches, in dB.
pub const SPEECH_DB: f32 = 35.0;

/// A recording whose loudest 10 ms is quieter than this (dB below full scale) holds no
/// speech to enrol.
pub const QUIETEST_DBFS: f32 = -50.0;

/// How much of what comes before the speech in a recording starts its stream, in seconds
/// (silence is put in where the recording has less).
pub const LEAD_S: f32 = 0.5;

/// How long after the speech a template goes on, in seconds.
pub const TAIL_S: f32 = 0.16;

/// The threshold set at enrolment is the farthest any recording is from the nearest other
/// one, times this, kept between [`MIN_THRESHOLD`] and [`MAX_THRESHOLD`].
///
/// Measured on espeak-ng (`tests/enrol.rs` prints the table): "hey computer" enrolled in two
/// voices at three speeds came to 0.033 at the farthest, so a threshold of 0.050; the phrase
/// said by other voices, faster, slower, after other speech or leading a sentence came
/// within 0.013 to 0.034, other sentences and "hey jarvis" no nearer than 0.10, "hey" alone
/// 0.088 and "computer" alone 0.053. What sounds nearly the same is heard too ("hey
/// compute" 0.017, "hey commuter" 0.029, "okay computer" 0.040): the embeddings are of
/// sounds, not words.
pub const THRESHOLD_MARGIN: f32 = 1.5;

/// The lowest threshold enrolment sets: recordings that are nearly the same (one take
/// copied, say) would otherwise make a phrase that only that take could match.
pub const MIN_THRESHOLD: f32 = 0.03;

/// The highest threshold enrolment sets, and the farthest a recording may be from the
/// nearest other: other phrases lie beyond it (0.088 for "hey" against "hey computer"), so a
/// recording that far holds something else, and enrolment refuses it.
pub const MAX_THRESHOLD: f32 = 0.08;

/// Which feature models the templates come from: a file made with other models is refused.
const FEATURES_ID: &str = "openwakeword-0.5.1";

/// A phrase enrolled from the user's recordings: the embedding sequence of each, and the
/// distance under which the live stream is taken to say it.
#[derive(Debug, Clone, PartialEq)]
pub struct Enrolled {
    templates: Vec<Vec<Embedding>>,
    threshold: f32,
}

impl Enrolled {
    /// Enrols a phrase from [`MIN_CLIPS`] to [`MAX_CLIPS`] recordings of it (16 kHz mono, in
    /// [-1, 1], each holding the phrase once, silence around it allowed), with `features`
    /// (its live stream is not touched). The threshold is set from the recordings: each is
    /// compared with the others, and the farthest any is from its nearest, times
    /// [`THRESHOLD_MARGIN`], is where the live stream must come within (kept between
    /// [`MIN_THRESHOLD`] and [`MAX_THRESHOLD`]). A recording with no speech in it, or one
    /// farther than [`MAX_THRESHOLD`] from every other, is refused, naming which.
    pub fn from_clips<C: AsRef<[f32]>>(
        features: &mut Features,
        clips: &[C],
    ) -> Result<Enrolled, WakeError> {
        if !(MIN_CLIPS..=MAX_CLIPS).contains(&clips.len()) {
            return Err(WakeError::Enrol(format!(
                "it takes {MIN_CLIPS} to {MAX_CLIPS} recordings of the phrase, not {}",
                clips.len()
            )));
        }
        let mut templates = Vec::with_capacity(clips.len());
        for (i, clip) in clips.iter().enumerate() {
            let (audio, speech) = cut(clip.as_ref()).map_err(|why| {
                WakeError::Enrol(format!("recording {} {why}: record it again", i + 1))
            })?;
            let embeddings = features.embed_clip(&audio)?;
            templates.push(template(&embeddings, speech));
        }
        let mut farthest = 0.0f32;
        for (i, template) in templates.iter().enumerate() {
            let others = templates.iter().enumerate().filter(|&(j, _)| j != i);
            let nearest = others.map(|(_, o)| dtw(o, template)).fold(f32::INFINITY, f32::min);
            if nearest > MAX_THRESHOLD {
                return Err(WakeError::Enrol(format!(
                    "recording {} sounds unlike the others (a distance of {nearest:.3} from the \
                     nearest, over {MAX_THRESHOLD}): each recording must hold the phrase once, \
                     and nothing else but silence; record it again",
                    i + 1
                )));
            }
            farthest = farthest.max(nearest);
        }
        let threshold = (farthest * THRESHOLD_MARGIN).clamp(MIN_THRESHOLD, MAX_THRESHOLD);
        Ok(Enrolled { templates, threshold })
    }

    /// The least distance of the end of `history` (the stream's embeddings, oldest first)
    /// from any template: lower is nearer, 0 the same. `None` while `history` is shorter
    /// than the shortest template.
    pub fn distance(&self, history: &[Embedding]) -> Option<f32> {
        self.templates
            .iter()
            .filter_map(|t| history.len().checked_sub(t.len()).map(|from| dtw(&history[from..], t)))
            .reduce(f32::min)
    }

    /// The distance under which the phrase is heard.
    pub fn threshold(&self) -> f32 {
        self.threshold
    }

    /// This phrase with another threshold: higher hears it more readily, and other speech
    /// with it.
    pub fn with_threshold(self, threshold: f32) -> Enrolled {
        Enrolled { threshold, ..self }
    }

    /// How many embeddings each template holds, in the order of the recordings.
    pub fn template_lengths(&self) -> Vec<usize> {
        self.templates.iter().map(Vec::len).collect()
    }

    /// The phrase as JSON, to keep on disk.
    pub fn to_json(&self) -> String {
        let file = File {
            features: FEATURES_ID.to_owned(),
            threshold: self.threshold,
            templates: self
                .templates
                .iter()
                .map(|t| t.iter().map(|e| e.to_vec()).collect())
                .collect(),
        };
        // A struct of strings, numbers and lists always serialises.
        serde_json::to_string(&file).unwrap_or_default()
    }

    /// A phrase [`Enrolled::to_json`] wrote.
    pub fn from_json(json: &str) -> Result<Enrolled, WakeError> {
        let file: File =
            serde_json::from_str(json).map_err(|e| WakeError::Enrolled(e.to_string()))?;
        if file.features != FEATURES_ID {
            return Err(WakeError::Enrolled(format!(
                "it was made with the feature models '{}', and these are '{FEATURES_ID}'",
                file.features
            )));
        }
        if !(file.threshold.is_finite() && file.threshold >= 0.0) {
            return Err(WakeError::Enrolled(format!("its threshold is {}", file.threshold)));
        }
        if file.templates.is_empty() || file.templates.iter().any(Vec::is_empty) {
            return Err(WakeError::Enrolled("it holds an empty recording".to_owned()));
        }
        let mut templates = Vec::with_capacity(file.templates.len());
        for t in file.templates {
            let mut template = Vec::with_capacity(t.len());
            for e in t {
                let embedding: Embedding = e.as_slice().try_into().map_err(|_| {
                    WakeError::Enrolled(format!("an embedding has {} values, not {DIM}", e.len()))
                })?;
                template.push(embedding);
            }
            templates.push(template);
        }
        Ok(Enrolled { templates, threshold: file.threshold })
    }
}

/// An [`Enrolled`] as kept on disk.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    features: String,
    threshold: f32,
    templates: Vec<Vec<Vec<f32>>>,
}

/// Samples in one frame of the level measure (10 ms).
const LEVEL_FRAME: usize = SAMPLE_RATE as usize / 100;

/// The audio a recording's embeddings are taken from, and where its speech is in it (in
/// samples, end excluded): up to [`LEAD_S`] of the recording before the speech (silence put
/// in where it has less), the speech, and [`TAIL_S`] after it (silence where it has less).
/// An error says why there is no speech.
fn cut(clip: &[f32]) -> Result<(Vec<f32>, std::ops::Range<usize>), String> {
    let levels: Vec<f32> = clip.chunks(LEVEL_FRAME).map(level_db).collect();
    let loudest = levels.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if loudest < QUIETEST_DBFS {
        return Err(format!(
            "holds no speech (its loudest is {loudest:.0} dBFS, under {QUIETEST_DBFS:.0})"
        ));
    }
    let loud = |l: &f32| *l >= loudest - SPEECH_DB;
    let first = levels.iter().position(loud).unwrap_or(0);
    let last = levels.iter().rposition(loud).unwrap_or(levels.len() - 1);
    let start = first * LEVEL_FRAME;
    let end = ((last + 1) * LEVEL_FRAME).min(clip.len());

    let lead = seconds(LEAD_S);
    let tail = seconds(TAIL_S);
    let from = start.saturating_sub(lead);
    let to = (end + tail).min(clip.len());
    let mut audio = vec![0.0; lead - (start - from)];
    audio.extend_from_slice(&clip[from..to]);
    audio.resize(audio.len() + tail - (to - end), 0.0);
    let speech = lead..lead + (end - start);
    Ok((audio, speech))
}

/// The template of a recording: the embeddings of the steps that end inside the speech or up
/// to [`TAIL_S`] after it (the step that gave `embeddings[i]` ends at `(i + 1) * STEP`).
fn template(embeddings: &[Embedding], speech: std::ops::Range<usize>) -> Vec<Embedding> {
    let tail = seconds(TAIL_S);
    embeddings
        .iter()
        .enumerate()
        .filter(|(i, _)| {
            let end = (i + 1) * STEP;
            end > speech.start && end <= speech.end + tail
        })
        .map(|(_, e)| *e)
        .collect()
}

fn seconds(s: f32) -> usize {
    (s * SAMPLE_RATE as f32).round() as usize
}

/// The level of `samples` in dB below full scale (RMS; silence is very low, not -inf).
fn level_db(samples: &[f32]) -> f32 {
    let power = samples.iter().map(|s| s * s).sum::<f32>() / samples.len().max(1) as f32;
    10.0 * (power + 1e-12).log10()
}

/// One minus the cosine of `a` and `b` (1 where either is all zeros).
fn cosine_distance(a: &Embedding, b: &Embedding) -> f32 {
    let (mut ab, mut aa, mut bb) = (0.0, 0.0, 0.0);
    for (x, y) in a.iter().zip(b) {
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    let norms = (aa * bb).sqrt();
    if norms > 0.0 { 1.0 - ab / norms } else { 1.0 }
}

/// The dynamic time warping distance of `a` and `b` over cosine distance, as local-wake
/// computes it (librosa's `dtw` with steps (1, 1), (0, 1) and (1, 0), all weighted 1): the
/// cost of the cheapest path from the first pair to the last, divided by the sum of the two
/// lengths. Empty sequences are infinitely far.
fn dtw(a: &[Embedding], b: &[Embedding]) -> f32 {
    if a.is_empty() || b.is_empty() {
        return f32::INFINITY;
    }
    // One row of the cost matrix at a time: row[j] is the cheapest path to (i, j).
    let mut row = vec![f32::INFINITY; b.len()];
    for (i, x) in a.iter().enumerate() {
        let mut left = f32::INFINITY;
        let mut diagonal = if i == 0 { 0.0 } else { f32::INFINITY };
        for (j, y) in b.iter().enumerate() {
            let up = row[j];
            let best = diagonal.min(up).min(left);
            let cost = cosine_distance(x, y) + best;
            diagonal = up;
            row[j] = cost;
            left = cost;
        }
    }
    row[b.len() - 1] / (a.len() + b.len()) as f32
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test: a failure should panic")]

    use super::*;

    /// An embedding pointing along axis `k`.
    fn axis(k: usize) -> Embedding {
        let mut e = [0.0; DIM];
        e[k] = 1.0;
        e
    }

    #[test]
    fn dtw_is_zero_for_the_same_sequence_and_forgives_a_slower_one() {
        let a = [axis(0), axis(1), axis(2)];
        assert_eq!(dtw(&a, &a), 0.0);
        // The same sounds, each held longer: still the same path cost.
        let slow = [axis(0), axis(0), axis(1), axis(1), axis(2)];
        assert_eq!(dtw(&a, &slow), 0.0);
        // One sound wrong: a distance of 1 on the path, over 6 embeddings.
        let wrong = [axis(0), axis(3), axis(2)];
        assert!((dtw(&a, &wrong) - 1.0 / 6.0).abs() < 1e-6, "{}", dtw(&a, &wrong));
        assert_eq!(dtw(&a, &[]), f32::INFINITY);
    }

    #[test]
    fn dtw_takes_the_cheapest_path_over_the_two_lengths() {
        // X = [[1,0],[0,1],[1,1]] against Y = [[1,0],[1,1]]: the cheapest path pairs X0-Y0,
        // X1-Y1 (1 - cos 45° = 0.29289) and X2-Y1, over the 5 embeddings.
        let mut x = [[0.0; DIM]; 3];
        x[0][0] = 1.0;
        x[1][1] = 1.0;
        x[2][0] = 1.0;
        x[2][1] = 1.0;
        let y = [x[0], x[2]];
        let want = (1.0 - std::f32::consts::FRAC_1_SQRT_2) / 5.0;
        assert!((dtw(&x, &y) - want).abs() < 1e-6, "{} vs {want}", dtw(&x, &y));
    }

    #[test]
    fn a_recording_is_cut_to_its_speech_with_lead_and_tail() {
        let rate = SAMPLE_RATE as usize;
        // 1 s of near silence, 0.5 s of tone, 1 s of near silence.
        let mut clip = vec![0.0001; rate];
        clip.extend((0..rate / 2).map(|i| (i as f32 * 0.1).sin() * 0.3));
        clip.extend(vec![0.0001; rate]);
        let (audio, speech) = cut(&clip).unwrap();
        assert_eq!(speech, seconds(LEAD_S)..seconds(LEAD_S) + rate / 2);
        assert_eq!(audio.len(), speech.end + seconds(TAIL_S));
        assert_eq!(&audio[speech], &clip[rate..rate + rate / 2]);

        // Speech from the first sample: silence is put in before it.
        let (audio, speech) = cut(&clip[rate..]).unwrap();
        assert_eq!(speech.start, seconds(LEAD_S));
        assert!(audio[..speech.start].iter().all(|&s| s == 0.0));
    }

    #[test]
    fn a_silent_recording_is_refused() {
        let err = cut(&vec![0.0; 16_000]).unwrap_err();
        assert!(err.starts_with("holds no speech"), "{err}");
    }

    #[test]
    fn a_template_is_the_steps_that_end_in_the_speech_or_just_after() {
        let embeddings: Vec<Embedding> = (0..20).map(|i| axis(i % DIM)).collect();
        // Speech from 0.5 s to 1.3 s (samples 8000 to 20800); steps end every 1280.
        let t = template(&embeddings, 8000..20_800);
        // Steps ending at 8960 (index 6) to 23040 (index 17, within 20800 + 2560 = 23360).
        assert_eq!(t.first(), Some(&embeddings[6]));
        assert_eq!(t.last(), Some(&embeddings[17]));
        assert_eq!(t.len(), 12);
    }

    #[test]
    fn json_round_trips_and_refuses_other_models() {
        let enrolled =
            Enrolled { templates: vec![vec![axis(0), axis(5)], vec![axis(1)]], threshold: 0.12 };
        let json = enrolled.to_json();
        assert_eq!(Enrolled::from_json(&json).unwrap(), enrolled);

        let other = json.replace(FEATURES_ID, "other-models");
        let err = Enrolled::from_json(&other).unwrap_err().to_string();
        assert!(err.contains("'other-models'") && err.ends_with("enrol the phrase again"), "{err}");

        let short =
            r#"{"features":"openwakeword-0.5.1","threshold":0.1,"templates":[[[1.0,2.0]]]}"#;
        let err = Enrolled::from_json(short).unwrap_err().to_string();
        assert!(err.contains("2 values, not 96"), "{err}");
    }

    #[test]
    fn the_nearest_template_gives_the_distance() {
        let enrolled = Enrolled {
            templates: vec![vec![axis(0), axis(1)], vec![axis(2), axis(3)]],
            threshold: 0.1,
        };
        assert_eq!(enrolled.distance(&[axis(1)]), None);
        assert_eq!(enrolled.distance(&[axis(7), axis(2), axis(3)]), Some(0.0));
        assert_eq!(enrolled.distance(&[axis(0), axis(1), axis(4)]), Some(0.5));
    }
}
