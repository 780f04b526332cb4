//! The installed Piper voice (`scripts/fetch-voice`) end to end: sentences synthesized, then
//! heard back by whisper (tiny.en, as the daemon runs it) at a word error rate of at most 15%
//! (numbers as words: whisper writes "10" for "ten"),
//! with the time each took against the audio's length (run with `--nocapture`).
//!
//! Without the voice, ONNX Runtime or espeak-ng a test passes having printed why it was
//! skipped, but under `scripts/test` (`STT_TEST_STRICT` set) it fails: CI must never pass a
//! test that did not run.

#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test: a failure should panic, and the timings are its report"
)]

use std::time::Instant;

use stt_asr::{AsrConfig, Whisper};
use stt_audio::Resampler;
use stt_voice::{ESPEAK, Voice, VoiceError};

/// Sentences of the kind an assistant answers with.
const SENTENCES: [&str; 4] = [
    "The meeting with the design team is on Thursday at ten.",
    "I set a timer for five minutes.",
    "It is raining in Lisbon, so bring an umbrella.",
    "Your sister called this morning; she will call again after lunch.",
];

/// The installed voice, or `None` (having said why) when something it needs is missing.
fn voice(test: &str) -> Option<Voice> {
    let models = stt_testkit::models_dir();
    let runtime = stt_voice::runtime_library(&models);
    match Voice::load(&stt_voice::default_path(&models), &runtime, 1, ESPEAK) {
        Ok(voice) => Some(voice),
        Err(
            e @ (VoiceError::Missing { .. }
            | VoiceError::Runtime(stt_voice::RuntimeError::Missing { .. })),
        ) => {
            assert!(std::env::var_os("STT_TEST_STRICT").is_none(), "{test}: {e}");
            eprintln!("{test}: SKIPPED, {e}");
            None
        }
        Err(e) => panic!("{test}: {e}"),
    }
}

#[test]
fn what_the_voice_says_whisper_hears() {
    let Some(mut voice) = voice("what_the_voice_says_whisper_hears") else { return };
    let models = stt_testkit::models_dir();
    let mut whisper = Whisper::load(AsrConfig {
        model: models.join("ggml-tiny.en-q8_0.bin"),
        ..AsrConfig::default()
    })
    .unwrap();
    let rate = voice.sample_rate();
    let (mut reference, mut heard) = (String::new(), String::new());
    // Piper draws its noise anew each time: every sentence twice, so one unlucky draw of
    // one word does not decide the rate.
    for sentence in SENTENCES.iter().chain(&SENTENCES).copied() {
        let started = Instant::now();
        let audio = voice.synthesize(sentence).unwrap();
        let took = started.elapsed().as_secs_f64();
        let seconds = audio.len() as f64 / f64::from(rate);
        // Speech at a speaking pace: 1.5 to 5 words a second.
        let words = sentence.split_whitespace().count() as f64;
        assert!(
            (words / 5.0..words / 1.5).contains(&seconds),
            "{sentence:?}: {seconds:.2} s of audio"
        );
        let peak = audio.iter().fold(0f32, |m, x| m.max(x.abs()));
        assert!(peak > 0.1, "{sentence:?}: the audio is nearly silent (peak {peak})");

        let mut resampler = Resampler::new(rate, 16_000).unwrap();
        let mut samples = resampler.process(&audio);
        samples.extend(resampler.flush());
        let text = whisper.transcribe(&samples, seconds).unwrap().text.unwrap_or_default();
        println!(
            "{sentence:?}: {seconds:.2} s of audio in {:.0} ms (RTF {:.2}); whisper: {text:?}",
            took * 1000.0,
            took / seconds
        );
        reference.push_str(sentence);
        reference.push(' ');
        heard.push_str(&text);
        heard.push(' ');
    }
    let wer = stt_testkit::real_speech::spoken_wer(&reference, &heard);
    println!("WER {:.1}%", wer * 100.0);
    assert!(wer <= 0.15, "WER {:.1}%: said {reference:?}, heard {heard:?}", wer * 100.0);
}

#[test]
fn nothing_to_say_is_no_audio() {
    let Some(mut voice) = voice("nothing_to_say_is_no_audio") else { return };
    assert!(voice.synthesize("").unwrap().is_empty());
    assert!(voice.synthesize(" ... , ").unwrap().is_empty());
}

/// A voice file cut short (a download that stopped, a full disk) is refused with its path and
/// the fix, never crashed on.
#[test]
fn a_truncated_voice_is_refused_with_its_path_and_the_fix() {
    let models = stt_testkit::models_dir();
    let runtime = stt_voice::runtime_library(&models);
    if !runtime.exists() {
        assert!(
            std::env::var_os("STT_TEST_STRICT").is_none(),
            "no ONNX Runtime: {}",
            runtime.display()
        );
        eprintln!("SKIPPED: no ONNX Runtime at {}", runtime.display());
        return;
    }
    let installed = stt_voice::default_path(&models);
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join(installed.file_name().unwrap());
    let whole = std::fs::read(&installed).unwrap_or_else(|_| vec![0_u8; 4096]);
    std::fs::write(&cut, &whole[..whole.len().min(4096)]).unwrap();
    let config = installed.with_extension("onnx.json");
    if config.exists() {
        std::fs::copy(&config, cut.with_extension("onnx.json")).unwrap();
    }
    let e = Voice::load(&cut, &runtime, 1, ESPEAK).map(|_| ()).unwrap_err();
    let text = e.to_string();
    assert!(text.contains(&cut.display().to_string()), "names the file: {text}");
    assert!(text.contains("scripts/fetch-voice"), "names the fix: {text}");
}
