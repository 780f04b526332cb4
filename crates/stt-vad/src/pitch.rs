//! Where the voice goes as it stops: the pitch of the last voiced moment against the
//! speaker's pitch over the seconds before it.
//!
//! A speaker who has finished a statement lets the pitch fall at its end (the "final
//! lowering" of intonation studies); one who pauses mid-sentence holds it level or lets it
//! rise (a continuation rise), which is how a listener knows to wait. The daemon's
//! `end_of_turn = "prosody"` (its default) ends a turn early only when whisper's text reads
//! as a sentence *and* the voice fell ([`final_pitch`] at or under [`FALL_ST`], or
//! [`CLEAR_FALL_ST`] for a text without a closing mark); docs/PERFORMANCE.md ("The end of a
//! turn") measures it on espeak-ng sentences cut mid-way and on recordings of people.
//!
//! The pitch is tracked with YIN (de Cheveigné and Kawahara, 2002) on the audio taken down to
//! 8 kHz: for each 10 ms step, the lag at which the cumulative mean normalised difference of a
//! 25 ms window first dips under [`YIN_THRESHOLD`] (refined to its local minimum and by a
//! parabola), within 60–400 Hz. Quiet frames (30 dB under the loudest) and frames without
//! such a dip are unvoiced. A frame an octave off the median (a common YIN error in creaky
//! voice) is folded back by an octave, or dropped when that does not bring it near.

use crate::SAMPLE_RATE;

/// The rate the tracker works at: every second sample, each pair averaged.
const RATE: usize = SAMPLE_RATE as usize / 2;
/// The audio looked at: the last this many seconds before the end.
const SPAN_S: usize = 3;
/// Analysis window and step, in samples at [`RATE`] (25 ms and 10 ms).
const WINDOW: usize = 200;
const STEP: usize = 80;
/// Lags searched, from 400 Hz down to 60 Hz.
const MIN_LAG: usize = RATE / 400;
const MAX_LAG: usize = RATE / 60;
/// YIN's absolute threshold on the normalised difference.
pub const YIN_THRESHOLD: f32 = 0.15;
/// Frames this far under the loudest one (in dB) are unvoiced.
const QUIET_DB: f32 = 30.0;
/// Fewer voiced frames than this in the span: no pitch to read.
const MIN_VOICED: usize = 10;
/// The end is the median of the last this many voiced frames (50 ms).
const END_FRAMES: usize = 5;
/// A frame further than this from the median (in semitones) is folded by an octave, or
/// dropped.
const OCTAVE_SLACK_ST: f32 = 7.0;

/// How far (in semitones) the voice must fall at its end, below its median over the last
/// seconds, for a turn to end early: espeak-ng's statements fell 3.4–6.5 at their end and its sentences
/// cut mid-way at most 2.0 (but one); before the pauses inside recordings of people the
/// pitch rose 1–5 (docs/PERFORMANCE.md, "The end of a turn").
pub const FALL_ST: f32 = -2.0;

/// How far the voice must fall for a text without any closing mark to end a turn: whisper's
/// full stop is one sign of an end and the fall another, so with one missing the other must
/// be plain. Statements espeak-ng read whole that whisper left unmarked fell 3.7–6.3; the one
/// sentence cut mid-way whose voice fell at all fell 3.2 (docs/PERFORMANCE.md).
pub const CLEAR_FALL_ST: f32 = -4.0;

/// The pitch at the end of `samples` (16 kHz mono) in semitones from the median pitch of
/// their last seconds: negative when the voice fell. `None` when too little of it is voiced
/// to tell (a whisper, noise, a word or two).
pub fn final_pitch(samples: &[f32]) -> Option<f32> {
    let x = decimate(&samples[samples.len().saturating_sub(SPAN_S * SAMPLE_RATE as usize)..]);
    if x.len() < WINDOW + MAX_LAG {
        return None;
    }
    let energies: Vec<f32> = (0..=(x.len() - WINDOW - MAX_LAG) / STEP)
        .map(|i| rms(&x[i * STEP..i * STEP + WINDOW]))
        .collect();
    let loudest = energies.iter().copied().fold(0.0, f32::max);
    if loudest <= 0.0 {
        return None;
    }
    let floor = loudest * 10f32.powf(-QUIET_DB / 20.0);
    let mut diff = vec![0.0f32; MAX_LAG + 1];
    let tones: Vec<f32> = energies
        .iter()
        .enumerate()
        .filter(|(_, e)| **e >= floor)
        .filter_map(|(i, _)| yin(&x[i * STEP..i * STEP + WINDOW + MAX_LAG], &mut diff))
        .map(|lag| 12.0 * (RATE as f32 / lag / 100.0).log2())
        .collect();
    if tones.len() < MIN_VOICED {
        return None;
    }
    let median = median(&tones);
    let folded: Vec<f32> = tones
        .iter()
        .filter_map(|&t| {
            [t, t - 12.0, t + 12.0].into_iter().find(|t| (t - median).abs() <= OCTAVE_SLACK_ST)
        })
        .collect();
    if folded.len() < MIN_VOICED {
        return None;
    }
    let median = self::median(&folded);
    let end = self::median(&folded[folded.len() - END_FRAMES..]);
    Some(end - median)
}

/// `x` at half the rate: each pair of samples averaged (a gentle low-pass first, enough for
/// a pitch under 400 Hz).
fn decimate(x: &[f32]) -> Vec<f32> {
    x.chunks_exact(2).map(|p| (p[0] + p[1]) * 0.5).collect()
}

fn rms(x: &[f32]) -> f32 {
    (x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32).sqrt()
}

/// YIN's period, in samples at [`RATE`] (sub-sample), of the window at the start of `x`
/// (which holds [`WINDOW`] + [`MAX_LAG`] samples); `None` when no lag dips under the
/// threshold. `diff` is scratch space of `MAX_LAG + 1`.
fn yin(x: &[f32], diff: &mut [f32]) -> Option<f32> {
    for (lag, d) in diff.iter_mut().enumerate().skip(1) {
        *d = (0..WINDOW).map(|j| (x[j] - x[j + lag]).powi(2)).sum();
    }
    // The cumulative mean normalised difference, in place.
    diff[0] = 1.0;
    let mut running = 0.0;
    for (lag, d) in diff.iter_mut().enumerate().skip(1) {
        running += *d;
        *d = if running > 0.0 { *d * lag as f32 / running } else { 1.0 };
    }
    let mut lag = (MIN_LAG..MAX_LAG).find(|&lag| diff[lag] < YIN_THRESHOLD)?;
    while lag + 1 < MAX_LAG && diff[lag + 1] < diff[lag] {
        lag += 1;
    }
    let (a, b, c) = (diff[lag - 1], diff[lag], diff[lag + 1]);
    let bend = a - 2.0 * b + c;
    let shift = if bend > 0.0 { (0.5 * (a - c) / bend).clamp(-0.5, 0.5) } else { 0.0 };
    Some(lag as f32 + shift)
}

fn median(xs: &[f32]) -> f32 {
    let mut v = xs.to_vec();
    v.sort_by(f32::total_cmp);
    v[v.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A voice-like buzz at a pitch gliding from `from` to `to` Hz: a pulse train's first
    /// harmonics, the phase carried across samples.
    fn glide(from: f32, to: f32, seconds: f32) -> Vec<f32> {
        let n = (seconds * SAMPLE_RATE as f32) as usize;
        let mut phase = 0.0f32;
        (0..n)
            .map(|i| {
                let f = from + (to - from) * i as f32 / n as f32;
                phase += std::f32::consts::TAU * f / SAMPLE_RATE as f32;
                (1..=6).map(|h| (phase * h as f32).sin() / h as f32).sum::<f32>() * 0.2
            })
            .collect()
    }

    #[test]
    fn a_steady_voice_reads_its_own_pitch() {
        let x = glide(150.0, 150.0, 1.0);
        let mut diff = vec![0.0; MAX_LAG + 1];
        let lag = yin(&decimate(&x)[..WINDOW + MAX_LAG], &mut diff).unwrap();
        let hz = RATE as f32 / lag;
        assert!((hz - 150.0).abs() < 2.0, "{hz} Hz");
        let st = final_pitch(&x).unwrap();
        assert!(st.abs() < 0.3, "a level voice ends where it was: {st}");
        assert!(st > FALL_ST);
    }

    #[test]
    fn a_statement_falls_at_its_end_and_a_pause_mid_sentence_does_not() {
        // Level at 180 Hz, then its last 300 ms falling to 130 Hz (5.6 semitones).
        let mut done = glide(180.0, 180.0, 1.5);
        done.extend(glide(180.0, 130.0, 0.3));
        let st = final_pitch(&done).unwrap();
        assert!(st < -4.0, "{st}");
        assert!(st < CLEAR_FALL_ST);
        // A continuation rise, and a voice held level before silence.
        let mut rise = glide(180.0, 180.0, 1.5);
        rise.extend(glide(180.0, 210.0, 0.3));
        assert!(final_pitch(&rise).unwrap() > 1.0);
        let mut level = glide(180.0, 180.0, 1.5);
        level.extend(vec![0.0; 4800]);
        let st = final_pitch(&level).unwrap();
        assert!(st.abs() < 0.3, "the silence after the voice is not read: {st}");
    }

    #[test]
    fn a_frame_an_octave_off_is_folded_back() {
        // Creaky voice at the end read an octave low would look like a fall of 12.
        let mut x = glide(200.0, 200.0, 1.5);
        x.extend(glide(100.0, 100.0, 0.1));
        let st = final_pitch(&x).unwrap();
        assert!(st.abs() < 1.0, "{st}");
    }

    #[test]
    fn no_voice_no_pitch_and_the_text_decides() {
        assert_eq!(final_pitch(&[]), None);
        assert_eq!(final_pitch(&vec![0.0; 32_000]), None);
        let mut state = 0x9e37_79b9u32;
        let noise: Vec<f32> = (0..32_000)
            .map(|_| {
                // xorshift32: white noise, no period a voice could have.
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                (state as f32 / u32::MAX as f32 - 0.5) * 0.2
            })
            .collect();
        assert_eq!(final_pitch(&noise), None, "noise has no period");
    }
}
