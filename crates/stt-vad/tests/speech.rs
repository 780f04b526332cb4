//! The segmenter with each real classifier on real speech: sentences spoken by espeak-ng,
//! resampled by sox, made at test time in a temporary directory. Both tools are installed by
//! `scripts/setup`; a test fails with what to install if they are missing.
//!
//! Every test runs once with [`Earshot`] and once with [`Silero`] (modules `earshot` and
//! `silero` below). Silero needs the model that `scripts/fetch-models` installs, found where
//! the daemon finds it (`$STT_MODELS_DIR`, else `<data_dir>/models`); without it its tests
//! fail saying so.

#![allow(clippy::unwrap_used, reason = "a test: a failure should panic")]

use std::path::Path;
use std::process::Command;

use stt_testkit::speech::{Line, Part, Speech};
use stt_vad::{Earshot, SAMPLE_RATE, SegEvent, Segmenter, Silero, SpeechProb, VadConfig};

const RATE: usize = SAMPLE_RATE as usize;

fn tool(cmd: &mut Command) {
    let name = cmd.get_program().to_string_lossy().into_owned();
    match cmd.output() {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!("{name} failed: {}", String::from_utf8_lossy(&out.stderr)),
        Err(e) => panic!(
            "cannot run {name} ({e}): these tests need espeak-ng and sox; install them with \
             scripts/setup (or apt-get install -y espeak-ng sox)"
        ),
    }
}

fn read_wav(path: &Path) -> Vec<f32> {
    let mut wav = hound::WavReader::open(path).unwrap();
    let spec = wav.spec();
    assert_eq!((spec.sample_rate, spec.channels, spec.bits_per_sample), (SAMPLE_RATE, 1, 16));
    wav.samples::<i16>().map(|s| f32::from(s.unwrap()) / 32768.0).collect()
}

/// `text` spoken by espeak-ng, at 16 kHz, trimmed to where it is non-silent (|x| ≥ 0.001);
/// made once and cached by the test kit.
fn speak(voice: &'static str, wpm: u32, text: &'static str) -> Vec<f32> {
    let speech = Speech::new(Path::new(env!("CARGO_TARGET_TMPDIR")).join("speech"));
    let x = speech.samples(&[Part::SayAt { line: Line { text, voice }, wpm }]);
    let first = x.iter().position(|s| s.abs() >= 1e-3).unwrap();
    let last = x.iter().rposition(|s| s.abs() >= 1e-3).unwrap();
    x[first..=last].to_vec()
}

/// `seconds` of sox's pink noise (the same every run) at `dbfs` RMS.
fn pink_noise(dir: &Path, seconds: u32, dbfs: f32) -> Vec<f32> {
    let path = dir.join("pink.wav");
    tool(
        Command::new("sox")
            .args(["-R", "-n", "-r", "16000", "-c", "1", "-b", "16"])
            .arg(&path)
            .args(["synth", &seconds.to_string(), "pinknoise", "vol", "0.25"]),
    );
    let x = read_wav(&path);
    let rms = (x.iter().map(|s| s * s).sum::<f32>() / x.len() as f32).sqrt();
    let gain = 10f32.powf(dbfs / 20.0) / rms;
    x.iter().map(|s| s * gain).collect()
}

fn silence(seconds: f32) -> Vec<f32> {
    vec![0.0; (seconds * RATE as f32) as usize]
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Vad {
    Earshot,
    Silero,
}

impl Vad {
    fn classifier(self) -> Box<dyn SpeechProb + Send> {
        match self {
            Self::Earshot => Box::new(Earshot::new()),
            Self::Silero => {
                let model = stt_config::dirs::model_path(Path::new("silero_vad.onnx")).unwrap();
                Box::new(Silero::load(&model).unwrap_or_else(|e| panic!("{e}")))
            }
        }
    }
}

/// All events for `audio` pushed in chunks of `chunk` samples, then finished.
fn segment(vad: Vad, cfg: VadConfig, audio: &[f32], chunk: usize) -> Vec<SegEvent> {
    let mut seg = Segmenter::with_prob(cfg, vad.classifier()).unwrap();
    let mut events: Vec<SegEvent> = audio.chunks(chunk).flat_map(|c| seg.push(c)).collect();
    events.extend(seg.finish());
    events
}

/// (start, end, too_short) of each segment, in samples.
fn segments(events: &[SegEvent]) -> Vec<(usize, usize, bool)> {
    let at = |s: f64| (s * f64::from(SAMPLE_RATE)).round() as usize;
    events
        .iter()
        .filter_map(|e| match e {
            SegEvent::End { start_s, end_s, samples, too_short, .. } => {
                let (a, b) = (at(*start_s), at(*end_s));
                assert_eq!(samples.len(), b - a, "samples of {a}..{b}");
                Some((a, b, *too_short))
            }
            SegEvent::Start { .. } => None,
        })
        .collect()
}

/// Each test, once per classifier.
macro_rules! for_each_vad {
    ($($test:ident),+ $(,)?) => {
        mod earshot {
            $(#[test] fn $test() { super::$test(super::Vad::Earshot) })+
        }
        mod silero {
            $(#[test] fn $test() { super::$test(super::Vad::Silero) })+
        }
    };
}

for_each_vad!(
    two_sentences_make_two_segments_that_hold_every_word,
    silence_and_noise_alone_make_no_segment,
    long_speech_is_split_at_quiet_points_and_nothing_is_lost,
);

fn two_sentences_make_two_segments_that_hold_every_word(vad: Vad) {
    let cases = [
        ("en-us", 165, "Open the file manager and show me my downloads.", "Stop."),
        ("en-gb", 190, "Six fish were found in the sea.", "Thanks."),
        (
            "en-us+f3",
            140,
            "Yes.",
            "Set a timer for fifteen minutes, then remind me to check the oven.",
        ),
    ];
    for (voice, wpm, first, second) in cases {
        let a = speak(voice, wpm, first);
        let b = speak(voice, wpm, second);
        let mut audio = silence(1.0);
        let span_a = (audio.len(), audio.len() + a.len());
        audio.extend(&a);
        audio.extend(silence(1.5));
        let span_b = (audio.len(), audio.len() + b.len());
        audio.extend(&b);
        audio.extend(silence(1.0));

        let events = segment(vad, VadConfig::default(), &audio, 4000);
        let segs = segments(&events);
        let case = format!("{vad:?}, {voice} {wpm} wpm: {first:?} + {second:?}: segments {segs:?}");
        assert_eq!(segs.len(), 2, "{case}");
        for ((start, end, too_short), (a, b)) in segs.iter().zip([span_a, span_b]) {
            assert!(!too_short, "{case}");
            assert!(*start <= a && *end >= b, "{case}: speech {a}..{b} is clipped");
        }
        // The same audio in other chunk sizes gives the same events, samples included.
        for chunk in [1, 37] {
            assert!(
                segment(vad, VadConfig::default(), &audio, chunk) == events,
                "{case}, chunks of {chunk}"
            );
        }
    }
}

fn silence_and_noise_alone_make_no_segment(vad: Vad) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = VadConfig::default();
    assert_eq!(segment(vad, cfg, &silence(10.0), 4000), [], "{vad:?}: digital silence");
    // A quiet room: pink noise at -45 dBFS, and a fan-like -40 dBFS.
    for dbfs in [-45.0, -40.0] {
        let noise = pink_noise(dir.path(), 30, dbfs);
        assert_eq!(segment(vad, cfg, &noise, 4000), [], "{vad:?}: pink noise at {dbfs} dBFS");
    }
}

fn long_speech_is_split_at_quiet_points_and_nothing_is_lost(vad: Vad) {
    let sentences = [
        "Find every file that changed since yesterday afternoon,",
        "and send a message to Sam saying I will be five minutes late,",
        "then set a timer for fifteen minutes and remind me to check the oven,",
        "and tell me how far it is from here to the station.",
    ];
    // 200 ms between sentences: shorter than the hangover, so this is one long utterance.
    let mut audio = silence(0.5);
    for round in 0..2 {
        for (i, text) in sentences.iter().enumerate() {
            let voice = if (round + i) % 2 == 0 { "en-us" } else { "en-gb" };
            audio.extend(speak(voice, 165, text));
            audio.extend(silence(0.2));
        }
    }
    audio.extend(silence(1.0));
    let cfg = VadConfig { max_segment_s: 6, ..VadConfig::default() };

    let events = segment(vad, cfg, &audio, 4000);
    let segs = segments(&events);
    assert!(
        segs.len() >= 4,
        "{vad:?}: {} s of speech in 6 s segments: {segs:?}",
        audio.len() / RATE
    );
    let mut joined = Vec::new();
    for e in &events {
        if let SegEvent::End { samples, .. } = e {
            assert!(samples.len() <= 6 * RATE, "a segment of {} samples", samples.len());
            joined.extend_from_slice(samples);
        }
    }
    for pair in segs.windows(2) {
        let ((_, end, _), (start, _, _)) = (pair[0], pair[1]);
        assert_eq!(end, start, "consecutive segments touch: {segs:?}");
        // The cut is in a pause: the 25 ms around it is far quieter than the speech.
        let around = &audio[end - 200..end + 200];
        let rms = (around.iter().map(|s| s * s).sum::<f32>() / 400.0).sqrt();
        assert!(
            rms < 0.01,
            "{vad:?}: cut at {:.3} s, where the RMS is {rms}",
            end as f32 / RATE as f32
        );
    }
    let (first, last) = (segs[0].0, segs[segs.len() - 1].1);
    assert!(joined == audio[first..last], "the segments together are the input, once");
}

// Where Silero is needed: noise that earshot takes for speech (docs/PERFORMANCE.md, "Voice
// activity detection"). The daemon's default must stay clean here.

#[test]
fn silero_opens_nothing_on_loud_noise() {
    let dir = tempfile::tempdir().unwrap();
    // Louder than any quiet room: earshot opens segments on pink noise at -30 and -20 dBFS.
    for dbfs in [-30.0, -20.0] {
        let noise = pink_noise(dir.path(), 30, dbfs);
        let events = segment(Vad::Silero, VadConfig::default(), &noise, 4000);
        assert_eq!(events, [], "pink noise at {dbfs} dBFS");
    }
}

#[test]
fn silero_keeps_sentences_apart_in_noise() {
    let dir = tempfile::tempdir().unwrap();
    let a = speak("en-us", 165, "Open the file manager and show me my downloads.");
    let b = speak("en-gb", 165, "Set a timer for fifteen minutes.");
    let mut speech = silence(1.0);
    let span_a = (speech.len(), speech.len() + a.len());
    speech.extend(&a);
    speech.extend(silence(1.5));
    let span_b = (speech.len(), speech.len() + b.len());
    speech.extend(&b);
    speech.extend(silence(1.0));
    // Pink noise 10 dB under the speech (RMS over where it is active), as in the measurement:
    // earshot's segments run on past each sentence there, and it opens false ones.
    let active = |x: &[f32]| (x.iter().map(|s| s * s).sum::<f32>() / x.len() as f32).sqrt();
    let level = 20.0 * active(&[a, b].concat()).log10() - 10.0;
    let noise = pink_noise(dir.path(), 7, level);
    let audio: Vec<f32> = speech.iter().zip(noise.iter().cycle()).map(|(s, n)| s + n).collect();

    let segs = segments(&segment(Vad::Silero, VadConfig::default(), &audio, 4000));
    assert_eq!(segs.len(), 2, "{segs:?}");
    for ((start, end, too_short), (a, b)) in segs.iter().zip([span_a, span_b]) {
        assert!(!too_short && *start <= a && *end >= b, "speech {a}..{b} clipped: {segs:?}");
        // Ends within the tail (300 ms) plus a little: not run on into the noise.
        assert!(*end <= b + RATE / 2, "segment {start}..{end} runs on past speech {a}..{b}");
    }
}

#[test]
fn silero_reset_starts_the_stream_afresh() {
    let audio = speak("en-us", 165, "Six fish were found in the sea.");
    let mut vad = Vad::Silero.classifier();
    let mut probs = || -> Vec<f32> { audio.chunks_exact(512).map(|f| vad.prob(f)).collect() };
    let first = probs();
    let second = probs(); // state and context carried over from the first pass
    assert!(first.iter().any(|&p| p > 0.9), "speech scores high: {first:?}");
    assert_ne!(first, second, "the state carries over between frames");
    vad.reset();
    let third: Vec<f32> = audio.chunks_exact(512).map(|f| vad.prob(f)).collect();
    assert_eq!(first, third, "after reset, the same audio scores the same");
}
