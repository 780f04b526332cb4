//! The voice through the real binaries: what `stt-ctl say --wav` writes, the real daemon
//! (`stt-daemon transcribe`, tiny.en) hears back as the words that were said, and a voice that
//! is not there is named with its fix.

use stt_testkit::Sandbox;

/// Three sentences of the kind an assistant answers with.
const SAID: &str = "Your meeting with the design team moved to Thursday at ten. I set a timer \
                    for five minutes. It is raining in Lisbon, so bring an umbrella.";

/// The most the transcript may differ from what was said (issue 27).
const MAX_WER: f64 = 0.15;

#[test]
fn a_wav_written_by_stt_ctl_say_transcribes_back_through_the_daemon() {
    let voice = stt_testkit::models_dir().join("piper/en_US-joe-medium.onnx");
    if !voice.is_file() {
        assert!(
            std::env::var_os("STT_TEST_STRICT").is_none(),
            "no voice at {}: run scripts/fetch-voice",
            voice.display()
        );
        eprintln!("SKIPPED: no voice at {} (scripts/fetch-voice)", voice.display());
        return;
    }
    let sandbox = Sandbox::new();
    let wav = sandbox.root().join("said.wav");
    let wav_arg = wav.to_str().unwrap();
    let out = sandbox.run("stt-ctl", &["say", SAID, "--wav", wav_arg]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(out.stdout.starts_with("wrote ") && out.stdout.contains("s of speech"), "{out:?}");

    let nothing = sandbox.run("stt-ctl", &["say", " ... ", "--wav", wav_arg]);
    assert_eq!(nothing.code, Some(2), "{nothing:?}");
    assert!(nothing.stderr.contains("nothing to say"), "{nothing:?}");

    let _turn = crate::one_at_a_time();
    let heard = sandbox.run("stt-daemon", &["transcribe", wav_arg]);
    assert_eq!(heard.code, Some(0), "{heard:?}");
    let wer = stt_testkit::speech::wer(SAID, &heard.stdout);
    assert!(
        wer <= MAX_WER,
        "WER {:.1}%: said {SAID:?}, the daemon heard {:?}",
        wer * 100.0,
        heard.stdout
    );
}

#[test]
fn a_missing_voice_is_named_with_its_fix_and_nothing_is_written() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.config_file(), "[voice]\nmodel = \"/nonexistent/voice.onnx\"\n")
        .unwrap();
    let wav = sandbox.root().join("said.wav");
    let out = sandbox.run("stt-ctl", &["say", "Hello.", "--wav", wav.to_str().unwrap()]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains("/nonexistent/voice.onnx")
            && out.stderr.contains("scripts/fetch-voice"),
        "{out:?}"
    );
    assert!(!wav.exists(), "nothing is written without a voice");
}
