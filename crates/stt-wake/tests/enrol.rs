//! A phrase enrolled from espeak-ng recordings of it: heard when other voices say it, faster
//! or slower, and when it follows other speech; not heard in other sentences, nor in another
//! wake phrase; a recording of something else refused. Run with `--nocapture` for each
//! clip's least distance against the threshold (the table behind
//! `stt_wake::enrolled::THRESHOLD_MARGIN`).

#![allow(
    clippy::unwrap_used,
    clippy::print_stderr,
    reason = "a test: a failure should panic, and the distances are its report"
)]

mod common;

use std::path::Path;

use stt_wake::{Detector, Enrolled, Features, WakeError};

/// The made-up phrase.
const PHRASE: &str = "hey computer";

/// The recordings it is enrolled from: two voices, at three speeds.
const ENROL: [(&str, u32); 3] = [("en-us", 160), ("en-us", 190), ("en-us+f3", 175)];

fn enrolment_clips(dir: &Path) -> Vec<Vec<f32>> {
    ENROL.iter().map(|&(voice, wpm)| common::say(dir, voice, PHRASE, wpm)).collect()
}

/// `audio` with a second of silence before and after.
fn padded(audio: &[f32]) -> Vec<f32> {
    let mut clip = common::silence(1.0);
    clip.extend_from_slice(audio);
    clip.extend(common::silence(1.0));
    clip
}

/// The least distance of the stream from the phrase over `audio` (with a second of silence
/// around it).
fn least_distance(features: &mut Features, enrolled: &Enrolled, audio: &[f32]) -> f32 {
    features.reset();
    let mut least = f32::INFINITY;
    for chunk in padded(audio).chunks(1280) {
        features.push(chunk).unwrap();
        if let Some(d) = enrolled.distance(features.history()) {
            least = least.min(d);
        }
    }
    least
}

#[test]
fn an_enrolled_phrase_is_heard_in_other_voices_and_not_in_other_speech() {
    let test = "an_enrolled_phrase_is_heard_in_other_voices_and_not_in_other_speech";
    let Some(mut features) = common::features(test) else { return };
    let dir = tempfile::tempdir().unwrap();
    let say = |voice: &str, text: &str| common::say(dir.path(), voice, text, 175);

    let enrolled = Enrolled::from_clips(&mut features, &enrolment_clips(dir.path())).unwrap();
    eprintln!(
        "enrolled from {} recordings: templates of {:?} embeddings, threshold {:.4}",
        ENROL.len(),
        enrolled.template_lengths(),
        enrolled.threshold()
    );

    let mut after_speech = say("en-us", "Good morning, everyone.");
    after_speech.extend(say("en-us", PHRASE));
    let heard = [
        ("en-gb says it", say("en-gb", PHRASE)),
        ("en-us+m7 says it", say("en-us+m7", PHRASE)),
        ("en-gb-scotland+m3 says it", say("en-gb-scotland+m3", PHRASE)),
        ("said after a second of other speech", after_speech),
        ("said slowly (130 wpm)", common::say(dir.path(), "en-us", PHRASE, 130)),
        ("said fast (230 wpm)", common::say(dir.path(), "en-us", PHRASE, 230)),
        ("leading a sentence", say("en-us", "Hey computer, what time is it?")),
    ];
    let not_heard = [
        ("hey jarvis", say("en-us", "hey jarvis")),
        ("a sentence with computer", say("en-us", "I bought a new computer yesterday.")),
        ("the weather", say("en-gb", "The weather today is cloudy with a chance of rain.")),
        ("a reminder", say("en-us+f3", "Please remind me to call my sister at six.")),
        ("hey alone", say("en-us", "hey")),
        ("hey jupiter", say("en-us", "hey jupiter")),
    ];
    // Printed, not asserted: a whisper is far from every recording, and what sounds nearly
    // the same as the phrase is as near as the phrase itself.
    let near = [
        ("whispered", say("en-us+whisper", PHRASE)),
        ("computer alone", say("en-us", "computer")),
        ("okay computer", say("en-us", "okay computer")),
        ("hey commuter", say("en-us", "hey commuter")),
        ("hey compute", say("en-us", "hey compute")),
    ];

    let mut wrong = Vec::new();
    for (name, audio) in &heard {
        let d = least_distance(&mut features, &enrolled, audio);
        eprintln!("to hear      {name:<36} least distance {d:.4}");
        if d > enrolled.threshold() {
            wrong.push(format!("not heard: {name} ({d:.4})"));
        }
    }
    for (name, audio) in &not_heard {
        let d = least_distance(&mut features, &enrolled, audio);
        eprintln!("not to hear  {name:<36} least distance {d:.4}");
        if d <= enrolled.threshold() {
            wrong.push(format!("heard: {name} ({d:.4})"));
        }
    }
    for (name, audio) in &near {
        let d = least_distance(&mut features, &enrolled, audio);
        let verdict = if d <= enrolled.threshold() { "heard" } else { "not heard" };
        eprintln!("(near)       {name:<36} least distance {d:.4}: {verdict}");
    }
    assert!(wrong.is_empty(), "threshold {:.4}: {wrong:#?}", enrolled.threshold());
}

#[test]
fn a_detector_hears_an_enrolled_phrase_once_after_other_speech() {
    let test = "a_detector_hears_an_enrolled_phrase_once_after_other_speech";
    let Some(mut features) = common::features(test) else { return };
    let dir = tempfile::tempdir().unwrap();
    let enrolled = Enrolled::from_clips(&mut features, &enrolment_clips(dir.path())).unwrap();
    // Kept on disk and read back, as the daemon would.
    let enrolled = Enrolled::from_json(&enrolled.to_json()).unwrap();
    let mut detector = Detector::new(features);
    detector.add_enrolled(PHRASE, enrolled);

    let mut audio = common::silence(1.0);
    audio.extend(common::say(dir.path(), "en-gb", "The weather today is cloudy.", 175));
    let phrase_starts = audio.len();
    audio.extend(common::say(dir.path(), "en-us+m7", PHRASE, 175));
    let phrase_ends = audio.len();
    audio.extend(common::silence(1.0));
    audio.extend(common::say(dir.path(), "en-us", "Please remind me to call my sister.", 175));
    audio.extend(common::silence(1.0));

    // In pieces of 10 ms, as a microphone gives them.
    let mut detections = Vec::new();
    for chunk in audio.chunks(160) {
        detections.extend(detector.push(chunk).unwrap());
    }
    eprintln!("{detections:?}, phrase at samples {phrase_starts}..{phrase_ends}");
    assert_eq!(detections.len(), 1, "{detections:?}");
    let detection = &detections[0];
    assert_eq!(detection.phrase, PHRASE);
    // Heard once the phrase is said, and no later than half a second after.
    let at = detection.at_sample as usize;
    assert!(at > phrase_starts && at <= phrase_ends + 8000, "{detection:?}");
}

#[test]
fn a_recording_of_something_else_is_refused() {
    let test = "a_recording_of_something_else_is_refused";
    let Some(mut features) = common::features(test) else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut clips = enrolment_clips(dir.path());
    clips[1] = common::say(dir.path(), "en-us", "The weather today is cloudy.", 175);
    match Enrolled::from_clips(&mut features, &clips) {
        Err(WakeError::Enrol(why)) => {
            assert!(why.starts_with("recording 2 sounds unlike the others"), "{why}");
        }
        other => panic!("{other:?}"),
    }

    clips[1] = common::silence(2.0);
    let err = Enrolled::from_clips(&mut features, &clips).unwrap_err().to_string();
    assert!(err.starts_with("cannot enrol the wake phrase: recording 2 holds no speech"), "{err}");

    let err = Enrolled::from_clips(&mut features, &clips[..2]).unwrap_err().to_string();
    assert!(err.contains("it takes 3 to 5 recordings of the phrase, not 2"), "{err}");
}
