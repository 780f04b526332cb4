//! The detector on a stream with the installed heads: each phrase heard once where it is
//! said, nothing in other speech, one detection per utterance however long the phrase stays
//! over its threshold; and the stream's embeddings the same however the audio is cut.

#![allow(
    clippy::unwrap_used,
    clippy::print_stderr,
    reason = "a test: a failure should panic, and the detections are its report"
)]

mod common;

use std::ops::Range;

use stt_wake::detector::DEFAULT_THRESHOLD;
use stt_wake::{Detection, Detector};

/// A stream built of speech and silence, remembering where each piece of speech is.
#[derive(Default)]
struct Stream {
    audio: Vec<f32>,
    said: Vec<(&'static str, Range<usize>)>,
}

impl Stream {
    fn say(&mut self, dir: &std::path::Path, voice: &str, text: &'static str) -> &mut Self {
        let start = self.audio.len();
        self.audio.extend(common::say(dir, voice, text, 175));
        self.said.push((text, start..self.audio.len()));
        self
    }

    fn silence(&mut self, seconds: f32) -> &mut Self {
        self.audio.extend(common::silence(seconds));
        self
    }

    /// What was said where `detection` was made: its step ends inside the speech or within
    /// half a second after it.
    fn said_at(&self, detection: &Detection) -> Option<&'static str> {
        let at = detection.at_sample as usize;
        self.said.iter().find(|(_, r)| at > r.start && at <= r.end + 8000).map(|(text, _)| *text)
    }
}

fn push_all(detector: &mut Detector, audio: &[f32], chunk: usize) -> Vec<Detection> {
    let mut detections = Vec::new();
    for piece in audio.chunks(chunk) {
        detections.extend(detector.push(piece).unwrap());
    }
    detections
}

#[test]
fn each_phrase_is_heard_once_where_it_is_said() {
    let test = "each_phrase_is_heard_once_where_it_is_said";
    let Some(features) = common::features(test) else { return };
    let (Some(jarvis), Some(alexa)) =
        (common::head(test, "hey_jarvis"), common::head(test, "alexa"))
    else {
        return;
    };
    let mut detector = Detector::new(features);
    detector.add_head("hey_jarvis", jarvis, DEFAULT_THRESHOLD);
    detector.add_head("alexa", alexa, DEFAULT_THRESHOLD);

    let dir = tempfile::tempdir().unwrap();
    let mut stream = Stream::default();
    stream
        .silence(1.0)
        .say(dir.path(), "en-us+f3", "hey jarvis")
        .silence(1.0)
        .say(dir.path(), "en-gb", "The weather today is cloudy with a chance of rain.")
        .silence(0.5)
        .say(dir.path(), "en-us", "alexa")
        .silence(1.0)
        .say(dir.path(), "en-us", "Please remind me to call my sister at six.")
        .silence(1.0);

    // In pieces of 20 ms, as a microphone gives them.
    let detections = push_all(&mut detector, &stream.audio, 320);
    eprintln!("{detections:#?}");
    let heard: Vec<(&str, Option<&str>)> =
        detections.iter().map(|d| (d.phrase.as_str(), stream.said_at(d))).collect();
    assert_eq!(heard, [("hey_jarvis", Some("hey jarvis")), ("alexa", Some("alexa"))]);
    assert!(detections.iter().all(|d| d.score >= DEFAULT_THRESHOLD && d.score <= 1.0));
}

#[test]
fn a_phrase_said_twice_in_a_breath_is_heard_once() {
    let test = "a_phrase_said_twice_in_a_breath_is_heard_once";
    let Some(features) = common::features(test) else { return };
    let Some(jarvis) = common::head(test, "hey_jarvis") else { return };
    let mut detector = Detector::new(features);
    detector.add_head("hey_jarvis", jarvis, DEFAULT_THRESHOLD);

    let dir = tempfile::tempdir().unwrap();
    let mut stream = Stream::default();
    stream
        .silence(1.0)
        .say(dir.path(), "en-us", "hey jarvis")
        .silence(0.2)
        .say(dir.path(), "en-us+m7", "hey jarvis")
        .silence(1.0);
    let detections = push_all(&mut detector, &stream.audio, 1280);
    eprintln!("refractory 2 s: {detections:?}");
    assert_eq!(detections.len(), 1, "{detections:?}");

    // With a refractory time shorter than the gap between them, both are heard.
    detector.reset();
    detector.set_refractory_s(0.4);
    let detections = push_all(&mut detector, &stream.audio, 1280);
    eprintln!("refractory 0.4 s: {detections:?}");
    assert_eq!(detections.len(), 2, "{detections:?}");
    assert_ne!(stream.said_at(&detections[0]), None);
    assert!(detections[1].at_sample > stream.said[1].1.start as u64, "{detections:?}");
}

#[test]
fn the_embeddings_do_not_depend_on_how_the_audio_is_cut() {
    let test = "the_embeddings_do_not_depend_on_how_the_audio_is_cut";
    let Some(mut features) = common::features(test) else { return };
    let dir = tempfile::tempdir().unwrap();
    let audio = common::say(dir.path(), "en-us", "Good morning, hey jarvis.", 175);

    let mut cut = |chunk: usize| {
        features.reset();
        let mut embeddings = Vec::new();
        for piece in audio.chunks(chunk) {
            embeddings.extend_from_slice(features.push(piece).unwrap());
        }
        assert_eq!(embeddings.as_slice(), features.history());
        embeddings
    };
    let steps = cut(1280);
    assert_eq!(steps.len(), audio.len() / 1280);
    for chunk in [1, 160, 1000, 4000, audio.len()] {
        assert!(cut(chunk) == steps, "pieces of {chunk} samples");
    }
    // A whole recording at once gives the same as the stream.
    assert!(features.embed_clip(&audio).unwrap() == steps);
}
