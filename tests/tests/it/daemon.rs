//! The daemon end to end: speech made by espeak-ng at test time, the real tiny.en model, the
//! real socket and the real process. Each test's clip is the same eight sentences in five
//! voices with silence between them, written at different rates and channel counts.
//!
//! Needs espeak-ng and sox (`scripts/setup`) and the model (`scripts/fetch-models`).

// Test helpers outside #[test] functions may panic: a panic is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use stt_asr::whisper::seconds;
use stt_bus::{Connection, Service};
use stt_proto::{AudioState, DaemonEvent, DaemonHeartbeat};
use stt_testkit::speech::{self, Format, Line, Part, Speech, word_errors, words};
use stt_testkit::{Output, Proc, Sandbox, real_speech, wait_until};

/// Sentences tiny.en gets right, each in a voice that it hears well (checked with
/// `stt-daemon transcribe`): commands without digits or rare words, no commas (a pause
/// inside a sentence could split it into two segments).
const LINES: &[Line] = &[
    Line { text: "turn on the kitchen lights", voice: "en-us" },
    Line { text: "what is the weather like today", voice: "en+m3" },
    Line { text: "please remind me to call my sister tomorrow", voice: "en-gb" },
    Line { text: "open the calendar for next week", voice: "en-us+f3" },
    Line { text: "play some relaxing music in the living room", voice: "en+m3" },
    Line { text: "send a message to my brother", voice: "en-us+f3" },
    Line { text: "what time does the library open", voice: "en-gb" },
    Line { text: "how long does it take to drive to the airport", voice: "en-gb+f4" },
];

/// The most a file's transcripts may differ from what was said.
const MAX_WER: f64 = 0.15;

/// One daemon run over the clip of [`LINES`], from start to exit. Whisper takes 0.2–0.5 s a
/// sentence on an idle 2-core machine, ten times that and more while builds run.
const RUN_DEADLINE: Duration = Duration::from_secs(300);

/// From start until the socket answers (the model loads first).
const CONNECT_DEADLINE: Duration = Duration::from_secs(60);

/// `[daemon]` keys for the tests that watch heartbeats.
const FAST_HEARTBEATS: &str = "heartbeat_interval_ms = 50\n";

/// `[daemon]` keys every daemon in these tests runs with: none, so the tests hold the shipped
/// defaults to account.
const DAEMON_KEYS: &str = "";

/// A sandbox whose config file has [`DAEMON_KEYS`] and `keys` in `[daemon]`.
fn sandbox(keys: &str) -> Sandbox {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.config_file(), format!("[daemon]\n{DAEMON_KEYS}{keys}")).unwrap();
    sandbox
}

/// Whisper's turn ([`crate::one_at_a_time`]). (Never held while calling [`file_run`] or
/// [`run_file`], which take it.)
fn one_at_a_time() -> MutexGuard<'static, ()> {
    crate::one_at_a_time()
}

fn speech() -> Speech {
    Speech::new(Path::new(env!("CARGO_TARGET_TMPDIR")).join("speech"))
}

/// The clip of [`LINES`] in `format`.
fn clip(format: Format) -> PathBuf {
    speech().clip(&speech::spoken(LINES), format)
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

// ---- tests -------------------------------------------------------------------------------

#[test]
fn a_file_gives_one_group_per_sentence_in_order_with_the_spoken_words() {
    // file_run() checks the exit status and the socket.
    let texts = segments(file_run(), "the 16 kHz mono file");
    expect_spoken(&texts, "the 16 kHz mono file");
}

#[test]
fn no_word_is_clipped_at_the_segment_edges() {
    let texts = segments(file_run(), "the 16 kHz mono file");
    let _turn = one_at_a_time();
    // The reference: each sentence's own clip, silence and all, fed to whisper whole, without
    // the VAD, with the daemon's default settings. A word at a sentence's edge that whisper
    // hears in the whole clip must be in the segment's transcript too.
    let mut whisper = tiny_en();
    let mut failures = Vec::new();
    let mut report = String::new();
    for (line, segment) in LINES.iter().zip(&texts) {
        let single = speech().clip(&speech::spoken(&[*line]), Format::wav(16_000, 1));
        let samples = stt_audio::read_wav_16k_mono(&single).unwrap();
        let whole =
            whisper.transcribe(&samples, seconds(&samples)).unwrap().text.unwrap_or_default();
        report.push_str(&format!(
            "  {:?}\n    whole:   {whole:?}\n    segment: {segment:?}\n",
            line.text
        ));
        let (said, heard, whole) = (words(line.text), words(segment), words(&whole));
        // The segment starts where the whole clip does (a repeated tail could otherwise hide
        // a lost first word)...
        if whole.first() == said.first() && heard.first() != said.first() {
            failures.push(format!("{:?}: the segment starts at {:?}", line.text, heard.first()));
        }
        // ...and has the first and last words said, always, and the second and second-to-last
        // ones when whisper hears them in the whole clip.
        let n = said.len();
        let edges = [(0, true), (n - 1, true), (1.min(n - 1), false), (n.saturating_sub(2), false)];
        for (i, always) in edges {
            let word = &said[i];
            if !heard.contains(word) && (always || whole.contains(word)) {
                failures.push(format!("{:?}: {word:?} (word {}) is missing", line.text, i + 1));
            }
        }
    }
    note(&format!("segments against whole clips:\n{report}"));
    assert!(failures.is_empty(), "{}\n{report}", failures.join("\n"));
}

/// The default model with the daemon's default settings, in this process.
fn tiny_en() -> stt_asr::Whisper {
    stt_asr::Whisper::load(stt_asr::AsrConfig {
        model: stt_testkit::models_dir().join("ggml-tiny.en-q8_0.bin"),
        ..stt_asr::AsrConfig::default()
    })
    .unwrap()
}

#[test]
fn a_vocabulary_longer_than_the_prompt_keeps_its_first_terms() {
    let _turn = one_at_a_time();
    let mut whisper = tiny_en();
    let few: Vec<String> = ["Siobhan", "kubectl", "Nextcloud"].map(String::from).to_vec();
    assert_eq!(whisper.set_vocabulary(&few).unwrap(), 3);
    let many: Vec<String> = (0..300).map(|i| format!("Projectname{i}")).collect();
    let kept = whisper.set_vocabulary(&many).unwrap();
    assert!(kept > 10 && kept < 300, "{kept} of 300 kept");
    // What was kept is the first terms, and it fits.
    let prompt: Vec<&str> = many[..kept].iter().map(String::as_str).collect();
    let tokens = whisper.set_prompt(&stt_asr::whisper::vocabulary_prompt(&prompt)).unwrap();
    assert!(tokens <= stt_asr::whisper::MAX_PROMPT_TOKENS, "{tokens} tokens");
    let one_more: Vec<&str> = many[..=kept].iter().map(String::as_str).collect();
    let over = whisper.set_prompt(&stt_asr::whisper::vocabulary_prompt(&one_more)).unwrap();
    assert!(over > stt_asr::whisper::MAX_PROMPT_TOKENS, "{over} tokens with one more term");
    assert_eq!(whisper.set_vocabulary(&[]).unwrap(), 0);
}

#[test]
fn whisper_hears_the_same_after_giving_its_buffers_back() {
    let _turn = one_at_a_time();
    let mut whisper = tiny_en();
    let single = speech().clip(&speech::spoken(&LINES[..1]), Format::wav(16_000, 1));
    let samples = stt_audio::read_wav_16k_mono(&single).unwrap();
    let before = whisper.transcribe(&samples, seconds(&samples)).unwrap().text;
    assert!(before.as_deref().is_some_and(|t| !t.is_empty()), "{before:?}");
    // The worker sheds whenever its queue empties; twice in a row must be harmless too.
    whisper.shed().unwrap();
    whisper.shed().unwrap();
    assert_eq!(whisper.transcribe(&samples, seconds(&samples)).unwrap().text, before);
}

#[test]
fn stdin_gives_the_same_transcripts_as_the_file() {
    let from_file = segments(file_run(), "the 16 kHz mono file");
    let _turn = one_at_a_time();
    let raw = std::fs::read(clip(Format::raw(16_000, 1))).unwrap();
    let sandbox = sandbox("");
    let (mut daemon, mut stdin) = sandbox.spawn_with_stdin(
        "stt-daemon",
        &[
            "--input",
            "-",
            "--format",
            "s16le",
            "--rate",
            "16000",
            "--channels",
            "1",
            "--wait-for-subscriber",
        ],
    );
    let subscriber = Subscriber::connect(&sandbox.daemon_socket(), &daemon);
    // Only now, with the subscriber there: the daemon opens its input once one is.
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let written = stdin.write_all(&raw);
        drop(stdin); // end of input: the daemon finishes and exits
        written
    });
    let events = run_to_the_end(&sandbox, &mut daemon, &subscriber);
    writer.join().unwrap().unwrap_or_else(|e| panic!("writing stdin: {e}\n{}", daemon.log()));

    let texts = segments(&events, "stdin");
    assert_eq!(texts, from_file, "stdin and the file differ");
    expect_spoken(&texts, "stdin");
}

#[test]
fn a_44k_stereo_file_gives_the_same_transcripts_as_the_16k_mono_one() {
    let mono = segments(file_run(), "the 16 kHz mono file");
    let _turn = one_at_a_time();
    let sandbox = sandbox("");
    let file = clip(Format::wav(44_100, 2));
    let mut daemon = sandbox
        .spawn("stt-daemon", &["--input", path_str(&file), "--fast", "--wait-for-subscriber"]);
    let subscriber = Subscriber::connect(&sandbox.daemon_socket(), &daemon);
    let events = run_to_the_end(&sandbox, &mut daemon, &subscriber);

    let texts = segments(&events, "the 44.1 kHz stereo file");
    if texts != mono {
        // Resampled by the daemon rather than by sox, the audio differs a little; whisper
        // may then pick another word now and then, never many.
        let errors = word_errors(&words(&mono.join(" ")), &words(&texts.join(" ")));
        note(&format!("44.1 kHz stereo differs from 16 kHz mono by {errors} words"));
        assert!(errors <= 2, "{errors} words differ:\n16 kHz:   {mono:?}\n44.1 kHz: {texts:?}");
    }
    expect_spoken(&texts, "the 44.1 kHz stereo file");
}

#[test]
fn silence_and_noise_give_heartbeats_and_no_speech() {
    let _turn = one_at_a_time();
    let sandbox = sandbox(FAST_HEARTBEATS);
    let noise = |kind, seconds, amplitude| Part::Noise { kind, seconds, amplitude };
    let file = speech().clip(
        &[
            Part::Silence(1.5),
            noise("pinknoise", 3.0, 0.1),
            Part::Silence(1.0),
            noise("whitenoise", 2.0, 0.05),
            Part::Silence(1.0),
            noise("brownnoise", 2.0, 0.2),
            Part::Silence(1.5),
        ],
        Format::wav(16_000, 1),
    );
    let mut daemon = sandbox.spawn(
        "stt-daemon",
        &["--input", path_str(&file), "--fast", "--stay", "--wait-for-subscriber"],
    );
    let subscriber = Subscriber::connect(&sandbox.daemon_socket(), &daemon);

    // Wait for the end of the input, every segment (if any) done, and a few heartbeats more.
    subscriber.wait_for(
        "the end of the input and 3 heartbeats after it",
        &daemon,
        RUN_DEADLINE,
        |seen| {
            let starts = count(&seen.events, |e| matches!(e, DaemonEvent::SpeechStart(_)));
            let dones = count(&seen.events, |e| matches!(e, DaemonEvent::SegmentDone(_)));
            let ended = seen.events.iter().position(|e| {
                heartbeat(e).is_some_and(|h| h.audio == AudioState::Ended && h.backlog == 0)
            })?;
            let after = seen.events[ended..].iter().filter(|e| heartbeat(e).is_some()).count();
            (starts == dones && after > 3).then_some(())
        },
    );
    let events = subscriber.seen().events.clone();
    let spoken: Vec<&DaemonEvent> = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                DaemonEvent::Transcript(_) | DaemonEvent::SpeechStart(_) | DaemonEvent::Error(_)
            )
        })
        .collect();
    assert!(spoken.is_empty(), "silence and noise gave {spoken:#?}\n{}", log_tail(&daemon));
    let heartbeats = events.iter().filter_map(heartbeat).collect::<Vec<_>>();
    assert!(heartbeats.iter().all(|h| h.stt_healthy), "{heartbeats:#?}");

    stop(&sandbox, &mut daemon);
}

#[test]
fn noise_and_a_music_bed_at_real_time_write_nothing_live_or_final() {
    let _turn = one_at_a_time();
    let sandbox = sandbox("");
    let noise = |kind, seconds, amplitude| Part::Noise { kind, seconds, amplitude };
    // A fan, a hiss, plucked strings, a held tone and an organ: the live path with partials
    // on, as a microphone in a room would give them.
    let file = speech().clip(
        &[
            Part::Silence(1.0),
            // An organ chord: the voice detector opens a segment on it, and tiny.en writes
            // "You" for it, with no doubt at all.
            Part::Chord { hz: [220, 277, 330], seconds: 4.0, amplitude: 0.3 },
            Part::Silence(1.5),
            noise("brownnoise", 4.0, 0.3),
            noise("pinknoise", 3.0, 0.15),
            Part::Silence(0.5),
            noise("pluck", 3.0, 0.4),
            noise("sine", 2.0, 0.1),
            noise("whitenoise", 3.0, 0.05),
            Part::Silence(1.0),
        ],
        Format::wav(16_000, 1),
    );
    let mut daemon =
        sandbox.spawn("stt-daemon", &["--input", path_str(&file), "--wait-for-subscriber"]);
    let subscriber = Subscriber::connect(&sandbox.daemon_socket(), &daemon);
    let events = run_to_the_end(&sandbox, &mut daemon, &subscriber);
    let written: Vec<&DaemonEvent> = events
        .iter()
        .filter(|e| match e {
            DaemonEvent::Transcript(t) => !t.text.trim().is_empty(),
            DaemonEvent::TranscriptPartial(p) => !p.text.trim().is_empty(),
            DaemonEvent::Error(_) => true,
            _ => false,
        })
        .collect();
    let opened = count(&events, |e| matches!(e, DaemonEvent::SpeechStart(_)));
    note(&format!("noise at real time: {opened} segments opened, nothing written"));
    assert!(written.is_empty(), "noise gave {written:#?}\n{}", show(&events));
    // Whisper was asked: what it wrote was caught.
    assert!(opened >= 1, "nothing opened a segment: the filter was not tried\n{}", show(&events));
}

#[test]
fn fed_faster_than_real_time_the_backlog_rises_and_drains() {
    let _turn = one_at_a_time();
    // With the fixed hangover the VAD reads on while whisper works (with end_of_turn =
    // "text" it waits at each pause of a `--fast` file for whisper's verdict, and segments
    // never queue).
    let sandbox = sandbox(&format!("{FAST_HEARTBEATS}end_of_turn = \"hangover\"\n"));
    let file = clip(Format::wav(48_000, 1));
    let mut daemon = sandbox.spawn(
        "stt-daemon",
        &["--input", path_str(&file), "--fast", "--stay", "--wait-for-subscriber"],
    );
    let subscriber = Subscriber::connect(&sandbox.daemon_socket(), &daemon);

    let (peak, drained) = subscriber.wait_for(
        "a heartbeat with a backlog, then one with none after the input ended",
        &daemon,
        RUN_DEADLINE,
        |seen| {
            let beats: Vec<&DaemonHeartbeat> = seen.events.iter().filter_map(heartbeat).collect();
            let first_busy = beats.iter().position(|h| h.backlog > 0)?;
            let drained = beats[first_busy..]
                .iter()
                .position(|h| h.backlog == 0 && h.audio == AudioState::Ended)?;
            let peak = beats.iter().map(|h| h.backlog).max().unwrap_or(0);
            Some((peak, (*beats[first_busy + drained]).clone()))
        },
    );
    note(&format!("backlog peaked at {peak}, drained by heartbeat {}", drained.seq));
    let seen = subscriber.seen();
    let seqs: Vec<u64> = seen.events.iter().filter_map(heartbeat).map(|h| h.seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "heartbeats out of order: {seqs:?}");
    drop(seen);

    stop(&sandbox, &mut daemon);
}

#[test]
fn while_a_sentence_is_spoken_its_words_show_and_settle_before_the_final() {
    let _turn = one_at_a_time();
    let lines = &LINES[2..5];
    let file = speech().clip(&speech::spoken(lines), Format::wav(16_000, 1));
    let sandbox = sandbox("");
    // At real time, as a microphone gives it.
    let mut daemon =
        sandbox.spawn("stt-daemon", &["--input", path_str(&file), "--wait-for-subscriber"]);
    let subscriber = Subscriber::connect(&sandbox.daemon_socket(), &daemon);
    let events = run_to_the_end(&sandbox, &mut daemon, &subscriber);
    let texts = segment_texts(&events, lines.len(), "the file at real time");
    let said = lines.iter().map(|l| l.text).collect::<Vec<_>>().join(" ");
    let wer = speech::wer(&said, &texts.join(" "));
    assert!(wer <= MAX_WER, "WER {:.1}% with partials on: {texts:?}", wer * 100.0);

    // How soon words show depends on how busy the machine is (scripts/bench-asr --only live
    // measures it); what must hold whatever the load is checked here.
    let mut report = String::new();
    for (i, line) in lines.iter().enumerate() {
        let id = events
            .iter()
            .filter_map(|e| match e {
                DaemonEvent::SpeechStart(s) => Some(s.seg_id),
                _ => None,
            })
            .nth(i)
            .unwrap();
        let partials: Vec<&stt_proto::TranscriptPartial> = events
            .iter()
            .filter_map(|e| match e {
                DaemonEvent::TranscriptPartial(p) if p.seg_id == id => Some(p),
                _ => None,
            })
            .collect();
        report.push_str(&format!("  {:?} → {:?}\n", line.text, texts[i]));
        for p in &partials {
            let (committed, tail) = p.split();
            report.push_str(&format!("    [{committed}]{tail}\n"));
        }
        // Whisper is idle when the first sentence starts, so its first pass is taken at once
        // and published before its final (over the same audio each run: deterministic). A
        // later sentence may have none on a busy machine: its pass waits while the previous
        // final runs, and its own final drops it (a partial after its final is worth nothing).
        if i == 0 {
            assert!(!partials.is_empty(), "segment {id}: no partial\n{report}");
        }
        let Some(last) = partials.last() else { continue };
        // What is committed stays: each partial starts with the last one's committed words.
        for pair in partials.windows(2) {
            let (before, after) = (pair[0], pair[1]);
            let (kept, _) = before.split();
            assert!(
                after.committed_len >= before.committed_len && after.text.starts_with(kept),
                "segment {id}: {before:?} then {after:?}\n{report}"
            );
        }
        // Words two passes agreed on are the final's words, but for one at most.
        let committed = words(last.split().0);
        let heard = words(&texts[i]);
        let changed = committed.iter().filter(|w| !heard.contains(w)).count();
        assert!(changed <= 1, "segment {id}: committed {committed:?}, final {heard:?}\n{report}");
    }
    note(&format!("partials:\n{report}"));
}

#[test]
fn a_finished_sentence_ends_its_turn_at_a_short_pause_and_an_unfinished_one_does_not() {
    // A pause of about 400 ms (espeak-ng's own silence at the end and start of a sentence,
    // about 200 ms, and 200 ms more): longer than the 300 ms that ends a finished turn,
    // shorter than the 500 ms hangover.
    let pause = Part::Silence(0.2);
    let finished = Line { text: "turn on the kitchen lights", voice: "en-us" };
    let goes_on = Line { text: "please remind me to call my sister and", voice: "en-gb" };
    let then = Line { text: "what time does the library open", voice: "en-gb" };
    let parts = [
        Part::Silence(1.0),
        Part::Say(finished),
        pause,
        Part::Say(then),
        Part::Silence(1.5),
        Part::Say(goes_on),
        pause,
        Part::Say(then),
        Part::Silence(1.0),
    ];
    let file = speech().clip(&parts, Format::wav(16_000, 1));
    // Read as fast as whisper goes, the VAD waits for whisper at each pause: the same
    // segments on any machine.
    let events = run_file_with(&file, "end_of_turn = \"text\"\n");
    let texts = segment_texts(&events, 3, "end_of_turn = \"text\"");
    expect_close(&texts[0], finished.text);
    expect_close(&texts[1], then.text);
    expect_close(&texts[2], &format!("{} {}", goes_on.text, then.text));
    // Listening to the voice as well (the default): the statement's pitch fell at its end,
    // so its turn ends at the pause too; the sentence that goes on still does not end.
    let prosody = run_file_with(&file, "");
    let texts = segment_texts(&prosody, 3, "end_of_turn = \"prosody\"");
    expect_close(&texts[0], finished.text);
    expect_close(&texts[2], &format!("{} {}", goes_on.text, then.text));
    // With the fixed hangover, neither pause ends a turn.
    let fixed = run_file_with(&file, "end_of_turn = \"hangover\"\n");
    let texts = segment_texts(&fixed, 2, "end_of_turn = \"hangover\"");
    expect_close(&texts[0], &format!("{} {}", finished.text, then.text));
    note(&format!("with the fixed hangover: {texts:?}"));
}

#[test]
fn a_word_added_with_stt_ctl_is_spelled_right_by_the_running_daemon() {
    let _turn = one_at_a_time();
    // tiny.en hears espeak-ng's "Siobhan" as "Siwaan" without being told the name.
    let line = Line { text: "ask Siobhan to check the dashboard", voice: "en-us" };
    let raw =
        std::fs::read(speech().clip(&speech::spoken(&[line]), Format::raw(16_000, 1))).unwrap();
    let sandbox = sandbox("");
    let (mut daemon, mut stdin) = sandbox.spawn_with_stdin(
        "stt-daemon",
        &["--input", "-", "--format", "s16le", "--rate", "16000", "--wait-for-subscriber"],
    );
    let subscriber = Subscriber::connect(&sandbox.daemon_socket(), &daemon);
    let transcripts = |seen: &Seen| -> Vec<String> {
        seen.events
            .iter()
            .filter_map(|e| match e {
                DaemonEvent::Transcript(t) => Some(t.text.clone()),
                _ => None,
            })
            .collect()
    };
    use std::io::Write;
    stdin.write_all(&raw).unwrap();
    let before = subscriber.wait_for("the first transcript", &daemon, RUN_DEADLINE, |seen| {
        transcripts(seen).first().cloned()
    });
    assert!(!before.contains("Siobhan"), "already right without the vocabulary: {before:?}");

    let out = sandbox.run("stt-ctl", &["vocabulary", "add", "Siobhan"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(out.stdout.contains("added Siobhan"), "{out:?}");
    let bad = sandbox.run("stt-ctl", &["vocabulary", "add", "two\nlines"]);
    assert_eq!(bad.code, Some(2), "{bad:?}");
    assert!(bad.stderr.contains("line break"), "{bad:?}");
    let list = sandbox.run("stt-ctl", &["vocabulary", "list"]);
    assert_eq!(list.stdout.trim(), "Siobhan", "{list:?}");
    // The same words again, after the file changed: the daemon reads it before the segment.
    stdin.write_all(&raw).unwrap();
    drop(stdin);
    let events = run_to_the_end(&sandbox, &mut daemon, &subscriber);
    let texts = segment_texts(&events, 2, "the sentence twice");
    // (What the prompt does to the other words is measured, not tested: scripts/bench-asr.)
    assert!(texts[1].contains("Siobhan"), "not spelled right after `vocabulary add`: {texts:?}");
    note(&format!("before and after `vocabulary add`: {texts:?}"));
}

#[test]
fn transcribe_prints_one_line_per_segment_and_nothing_else() {
    let lines = transcribe_lines("", Format::wav(22_050, 1));
    expect_spoken(&lines, "stt-daemon transcribe");
}

#[test]
fn flash_attention_from_the_config_hears_the_sentences_too() {
    let lines = transcribe_lines("flash_attention = true\n", Format::wav(16_000, 1));
    expect_spoken(&lines, "stt-daemon transcribe with flash_attention = true");
}

#[test]
fn a_missing_model_or_input_or_microphone_fails_with_the_fix() {
    let sandbox = sandbox("");
    let file = clip(Format::wav(16_000, 1));
    let not_wav = sandbox.root().join("x.wav");
    std::fs::write(&not_wav, "this is text, not audio\n").unwrap();
    let missing = sandbox.root().join("missing.wav");
    let cases: &[(&str, &[&str], &[&str])] = &[
        (
            "a missing model",
            &["--model", "/nonexistent.bin", "--input", path_str(&file), "--fast"],
            &["/nonexistent.bin", "scripts/fetch-models"],
        ),
        (
            "a text file named .wav",
            &["--input", path_str(&not_wav), "--fast"],
            &[path_str(&not_wav), "not a WAV file"],
        ),
        (
            "a missing input file",
            &["--input", path_str(&missing), "--fast"],
            &[path_str(&missing), "No such file"],
        ),
        ("an unknown microphone", &["--device", "nosuchmic"], &["nosuchmic", "stt-daemon devices"]),
    ];
    for (what, args, needles) in cases {
        let out = run_within(&sandbox, args, Duration::from_secs(60));
        assert!(matches!(out.code, Some(c) if c != 0), "{what}: expected a failure: {out:?}");
        for needle in *needles {
            assert!(out.stderr.contains(needle), "{what}: no {needle:?} in {:?}", out.stderr);
        }
        assert!(!sandbox.daemon_socket().exists(), "{what}: the socket was left behind");
    }
}

/// Real people's short commands (pocketsphinx's card names, speaker-test's channel names,
/// from `scripts/fetch-speech --subset test`), each with 1.5 s of silence around it, through
/// the daemon's own pipeline (VAD, segmenter, queue, whisper worker, filters): one transcript
/// each, none with more words than were said and a half, and the words heard. espeak-ng's
/// voices never made whisper loop; these did ("10 of close 10 of close 10 of close 10 10"
/// for "ten of clubs", "1. 1." for "one").
#[test]
fn real_short_commands_come_through_the_daemon_without_loops() {
    let clips = real_speech::test_set();
    assert!(clips.len() >= 10, "the test set has {} clips", clips.len());
    let session = Path::new(env!("CARGO_TARGET_TMPDIR")).join("real-short-commands.wav");
    let spans = real_speech::session(&clips, 1.5, &session);
    let events = run_file(&session);
    let texts = segment_texts(&events, clips.len(), "the real short commands");
    let starts: Vec<f64> = events
        .iter()
        .filter_map(|e| match e {
            DaemonEvent::SpeechStart(s) => Some(s.start),
            _ => None,
        })
        .collect();
    let (mut errors, mut said) = (0, 0);
    let mut table = String::new();
    for ((clip, text), (start, span)) in clips.iter().zip(&texts).zip(starts.iter().zip(&spans)) {
        assert!(
            span.0 <= *start && *start < span.1,
            "{}: its segment starts at {start:.2} s, outside {span:?}",
            clip.id
        );
        let (reference, heard) =
            (real_speech::spoken_words(&clip.text), real_speech::spoken_words(text));
        let e = word_errors(&reference, &heard);
        table += &format!("  {e}/{} {:<18} {:?} → {text:?}\n", reference.len(), clip.id, clip.text);
        assert!(
            heard.len() * 2 <= reference.len() * 3,
            "{}: {text:?} has more words than {:?} and a half: whisper ran away\n{table}",
            clip.id,
            clip.text
        );
        errors += e;
        said += reference.len();
    }
    #[allow(clippy::cast_precision_loss)]
    let wer = errors as f64 / said as f64;
    note(&format!("real short commands: WER {:.1}%\n{table}", wer * 100.0));
    // tiny.en hears "clubs" as "close" and "rear" as "we're"; faster-whisper with the same
    // weights does about as well on these (docs/PERFORMANCE.md, "Real speech").
    assert!(wer <= 0.35, "WER {:.1}% over 35% on the real short commands:\n{table}", wer * 100.0);
}

// ---- helpers -----------------------------------------------------------------------------

/// `stt-daemon transcribe` on the clip of [`LINES`] in `format`, with `keys` in `[daemon]`:
/// its lines, checked to be one per sentence and nothing else.
fn transcribe_lines(keys: &str, format: Format) -> Vec<String> {
    let _turn = one_at_a_time();
    let sandbox = sandbox(keys);
    let file = clip(format);
    let out = run_within(&sandbox, &["transcribe", path_str(&file)], RUN_DEADLINE);
    assert_eq!(out.code, Some(0), "{out:?}");
    let lines: Vec<String> = out.stdout.lines().map(str::to_owned).collect();
    assert!(
        lines.len() == LINES.len() && lines.iter().all(|l| !l.trim().is_empty()),
        "expected {} lines, one per sentence: {:?}",
        LINES.len(),
        out.stdout
    );
    lines
}

// ---- the file run several tests compare against ------------------------------------------

/// The events of one daemon run over the 16 kHz mono clip, made once for every test that
/// needs it. The run exited 0 and removed its socket.
fn file_run() -> &'static [DaemonEvent] {
    static RUN: OnceLock<Vec<DaemonEvent>> = OnceLock::new();
    RUN.get_or_init(|| run_file(&clip(Format::wav(16_000, 1))))
}

/// What a daemon with the shipped defaults publishes on `file`, read as fast as it goes, to
/// the end (see [`run_to_the_end`]).
fn run_file(file: &Path) -> Vec<DaemonEvent> {
    run_file_with(file, "")
}

/// [`run_file`] with `keys` in `[daemon]`.
fn run_file_with(file: &Path, keys: &str) -> Vec<DaemonEvent> {
    let _turn = one_at_a_time();
    let sandbox = sandbox(keys);
    let mut daemon = sandbox
        .spawn("stt-daemon", &["--input", path_str(file), "--fast", "--wait-for-subscriber"]);
    let subscriber = Subscriber::connect(&sandbox.daemon_socket(), &daemon);
    run_to_the_end(&sandbox, &mut daemon, &subscriber)
}

/// Waits for a daemon reading a file or stdin to publish everything and close the socket,
/// checks that it exits 0 and leaves no socket behind, and returns what it published.
fn run_to_the_end(
    sandbox: &Sandbox,
    daemon: &mut Proc,
    subscriber: &Subscriber,
) -> Vec<DaemonEvent> {
    subscriber.wait_for(
        "the daemon to finish and close the socket",
        daemon,
        RUN_DEADLINE,
        |seen| seen.closed.then_some(()),
    );
    let status = daemon.wait(Duration::from_secs(30));
    assert!(status.success(), "the daemon exited with {status}\n{}", subscriber.report(daemon));
    assert!(!sandbox.daemon_socket().exists(), "the daemon left its socket behind");
    let seen = subscriber.seen();
    assert!(seen.error.is_none(), "reading the socket: {:?}", seen.error);
    seen.events.clone()
}

/// Stops a daemon that stays (`--stay`) with SIGTERM: exit 0, socket gone.
fn stop(sandbox: &Sandbox, daemon: &mut Proc) {
    let status = daemon.signal_and_wait(Signal::SIGTERM);
    assert!(status.success(), "the daemon exited with {status}\n{}", log_tail(daemon));
    assert!(!sandbox.daemon_socket().exists(), "the daemon left its socket behind");
}

// ---- checks ------------------------------------------------------------------------------

/// The transcripts of a run, one per sentence, after checking that each segment published
/// exactly `speech_start`, `speech_stop`, `transcript`, `segment_done` in that order (with
/// any `transcript_partial`s after the start and before the transcript), that
/// segment ids increase, that there is one segment per sentence, and that nothing failed.
fn segments(events: &[DaemonEvent], what: &str) -> Vec<String> {
    segment_texts(events, LINES.len(), what)
}

/// [`segments`] for a run of `expected` utterances.
fn segment_texts(events: &[DaemonEvent], expected: usize, what: &str) -> Vec<String> {
    let fail = |why: String| -> ! { panic!("{what}: {why}\nevents:\n{}", show(events)) };
    let errors: Vec<&DaemonEvent> =
        events.iter().filter(|e| matches!(e, DaemonEvent::Error(_))).collect();
    if !errors.is_empty() {
        fail(format!("errors published: {errors:?}"));
    }
    let ids: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            DaemonEvent::SpeechStart(s) => Some(s.seg_id),
            _ => None,
        })
        .collect();
    if ids.len() != expected {
        fail(format!("{} segments for {expected} utterances", ids.len()));
    }
    if !ids.windows(2).all(|w| w[0] < w[1]) {
        fail(format!("segment ids do not increase: {ids:?}"));
    }
    let mut texts = Vec::new();
    for &id in &ids {
        let all: Vec<&DaemonEvent> = events.iter().filter(|e| e.seg_id() == Some(id)).collect();
        // Live partials come anywhere after the start, but never after the transcript.
        let last_partial = all.iter().rposition(|e| matches!(e, DaemonEvent::TranscriptPartial(_)));
        let transcript = all.iter().position(|e| matches!(e, DaemonEvent::Transcript(_)));
        if let (Some(p), Some(t)) = (last_partial, transcript)
            && p > t
        {
            fail(format!("segment {id} has a partial after its transcript: {all:?}"));
        }
        let group: Vec<&DaemonEvent> =
            all.into_iter().filter(|e| !matches!(e, DaemonEvent::TranscriptPartial(_))).collect();
        match group[..] {
            [
                DaemonEvent::SpeechStart(start),
                DaemonEvent::SpeechStop(stop),
                DaemonEvent::Transcript(t),
                DaemonEvent::SegmentDone(_),
            ] => {
                if !(start.start < stop.end && t.start <= t.end) {
                    fail(format!("segment {id} has its times backwards: {group:?}"));
                }
                texts.push(t.text.clone());
            }
            _ => fail(format!("segment {id} published {group:?}")),
        }
    }
    let orphans: Vec<&DaemonEvent> =
        events.iter().filter(|e| e.seg_id().is_some_and(|id| !ids.contains(&id))).collect();
    if !orphans.is_empty() {
        fail(format!("events of segments that never started: {orphans:?}"));
    }
    texts
}

/// Checks that whisper's `text` says `said`, but for one word in five.
fn expect_close(text: &str, said: &str) {
    let wer = speech::wer(said, text);
    assert!(wer <= 0.2, "{text:?} for {said:?}: WER {:.0}%", wer * 100.0);
}

/// Checks that `texts` (one per sentence) say [`LINES`]: WER over the file at most
/// [`MAX_WER`].
fn expect_spoken(texts: &[String], what: &str) {
    let said = LINES.iter().map(|l| l.text).collect::<Vec<_>>().join(" ");
    let heard = texts.join(" ");
    let wer = speech::wer(&said, &heard);
    let table: String = LINES
        .iter()
        .zip(texts)
        .map(|(line, text)| {
            format!(
                "  {:>4.0}%  {:<12} {:?} → {text:?}\n",
                speech::wer(line.text, text) * 100.0,
                line.voice,
                line.text
            )
        })
        .collect();
    note(&format!("{what}: WER {:.1}%\n{table}", wer * 100.0));
    assert!(
        wer <= MAX_WER,
        "{what}: WER {:.1}% is over {:.0}%:\n{table}",
        wer * 100.0,
        MAX_WER * 100.0
    );
}

fn heartbeat(event: &DaemonEvent) -> Option<&DaemonHeartbeat> {
    match event {
        DaemonEvent::Heartbeat(h) => Some(h),
        _ => None,
    }
}

fn count(events: &[DaemonEvent], pred: impl Fn(&DaemonEvent) -> bool) -> usize {
    events.iter().filter(|e| pred(e)).count()
}

/// Events one per line, heartbeats summed up, for failure messages.
fn show(events: &[DaemonEvent]) -> String {
    let mut out = String::new();
    let mut beats = 0;
    for event in events {
        if let Some(h) = heartbeat(event) {
            beats += 1;
            if beats > 1 && h.backlog == 0 {
                continue;
            }
        }
        out.push_str(&format!("  {event:?}\n"));
    }
    out.push_str(&format!(
        "  ({beats} heartbeats in all; those with backlog 0 after the first left out)\n"
    ));
    out
}

fn log_tail(daemon: &Proc) -> String {
    let log = daemon.log();
    let lines: Vec<&str> = log.lines().collect();
    format!("daemon log (last lines):\n{}", lines[lines.len().saturating_sub(40)..].join("\n"))
}

/// Shown with `--nocapture`, and with a failure.
#[allow(clippy::print_stderr)]
fn note(text: &str) {
    eprintln!("{text}");
}

/// Runs `stt-daemon ARGS` to completion, killing it after `timeout`.
fn run_within(sandbox: &Sandbox, args: &[&str], timeout: Duration) -> Output {
    let dir = tempfile::tempdir_in(sandbox.root()).unwrap();
    let (stdout, stderr) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut child = sandbox
        .command("stt-daemon")
        .args(args)
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let status = wait_until(timeout, || child.try_wait().ok().flatten());
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("stt-daemon {args:?} did not finish in {timeout:?}; stderr:\n{}", read(&stderr));
    };
    Output { code: status.code(), stdout: read(&stdout), stderr: read(&stderr) }
}

// ---- a subscriber on the real socket -----------------------------------------------------

/// What a subscriber has read so far.
#[derive(Debug, Default)]
struct Seen {
    events: Vec<DaemonEvent>,
    /// The daemon closed the connection.
    closed: bool,
    /// Reading failed (not a clean close).
    error: Option<String>,
}

/// A subscriber on the daemon's socket, reading on a thread of its own into [`Seen`]. The
/// thread ends when the daemon closes the connection (or is killed at the end of the test).
#[derive(Debug)]
struct Subscriber {
    seen: Arc<Mutex<Seen>>,
}

impl Subscriber {
    /// Connects, retrying until the socket answers, and returns once the daemon's hello is in.
    fn connect(socket: &Path, daemon: &Proc) -> Self {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (connected_tx, connected) = std::sync::mpsc::channel::<Result<(), String>>();
        let (path, shared) = (socket.to_owned(), Arc::clone(&seen));
        std::thread::spawn(move || {
            let runtime =
                tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async move {
                let deadline = Instant::now() + CONNECT_DEADLINE;
                let mut connection = loop {
                    match Connection::open(&path, Service::DAEMON, "test").await {
                        Ok(connection) => break connection,
                        Err(e) if Instant::now() >= deadline => {
                            let _ = connected_tx.send(Err(e.to_string()));
                            return;
                        }
                        Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                    }
                };
                let _ = connected_tx.send(Ok(()));
                loop {
                    let next = connection.recv::<DaemonEvent>().await;
                    let mut seen = shared.lock().unwrap();
                    match next {
                        Ok(Some(event)) => seen.events.push(event),
                        Ok(None) => {
                            seen.closed = true;
                            return;
                        }
                        Err(e) => {
                            seen.error = Some(e.to_string());
                            seen.closed = true;
                            return;
                        }
                    }
                }
            });
        });
        match connected.recv_timeout(CONNECT_DEADLINE + Duration::from_secs(5)) {
            Ok(Ok(())) => Self { seen },
            Ok(Err(e)) => panic!("cannot subscribe: {e}\n{}", log_tail(daemon)),
            Err(e) => panic!("cannot subscribe: {e}\n{}", log_tail(daemon)),
        }
    }

    fn seen(&self) -> MutexGuard<'_, Seen> {
        self.seen.lock().unwrap()
    }

    /// Polls `probe` on what was read until it says yes; on timeout fails with the events so
    /// far and the daemon's log.
    fn wait_for<T>(
        &self,
        what: &str,
        daemon: &Proc,
        timeout: Duration,
        mut probe: impl FnMut(&Seen) -> Option<T>,
    ) -> T {
        wait_until(timeout, || probe(&self.seen())).unwrap_or_else(|| {
            panic!("timed out after {timeout:?} waiting for {what}\n{}", self.report(daemon))
        })
    }

    /// The events so far and the daemon's log, for failure messages.
    fn report(&self, daemon: &Proc) -> String {
        let seen = self.seen();
        format!(
            "events so far (closed: {}, error: {:?}):\n{}{}",
            seen.closed,
            seen.error,
            show(&seen.events),
            log_tail(daemon)
        )
    }
}

#[test]
fn a_term_whisper_was_unsure_of_is_written_where_the_audio_allows_it() {
    let _turn = one_at_a_time();
    let mut whisper = tiny_en();
    let terms: Vec<String> =
        ["Kubernetes", "Immich", "Thandiwe", "Obsidian", "Nextcloud", "Grafana"]
            .map(String::from)
            .to_vec();
    whisper.set_vocabulary(&terms).unwrap();
    let mut said = |text, voice| {
        let line = Part::SayAt { line: Line { text, voice }, wpm: 165 };
        let samples = speech().samples(&[Part::Silence(0.5), line, Part::Silence(1.0)]);
        whisper.transcribe(&samples, seconds(&samples)).unwrap()
    };
    // tiny.en, told the term and favouring its tokens, still writes "Sir Chopsidian"; read
    // again with "Obsidian" in their place, the audio allows it (stt_asr::rescore).
    let heard = said("Search Obsidian for the recipe.", "en-gb");
    let text = heard.text.clone().unwrap_or_default();
    assert!(!heard.raw.contains("Obsidian"), "whisper's own pass had it: {heard:?}");
    assert!(text.contains("Obsidian for the recipe"), "{heard:?}");
    // Words whisper was sure of, none like a term, stay as it wrote them.
    let heard = said("Turn on the kitchen lights.", "en-us");
    assert_eq!(heard.text.as_deref(), Some(heard.raw.as_str()), "{heard:?}");
    assert!(terms.iter().all(|t| !heard.raw.contains(t.as_str())), "{heard:?}");
    note(&format!("rescored: {text:?}; untouched: {:?}", heard.raw));
}

/// The microphone goes and comes back: the room's sound server unloads the sink whose monitor
/// the daemon records, then loads it again. The daemon says so within 2 s (an `audio` error
/// and its heartbeat's `retrying`) and resumes by itself: a person speaking in the room is
/// transcribed again.
#[test]
fn a_microphone_that_goes_and_comes_back_is_told_at_once_and_used_again() {
    let _turn = one_at_a_time();
    let sandbox = Sandbox::new();
    let Some(room) = stt_testkit::room::Room::start(sandbox.root(), false, -6.0) else { return };
    let [(name, value)] = room.env();
    let daemon = sandbox.spawn_with_env("stt-daemon", &[], &[(name, value.as_str())]);
    let subscriber = Subscriber::connect(&sandbox.daemon_socket(), &daemon);
    let capturing = |from: usize| {
        move |seen: &Seen| {
            seen.events[from.min(seen.events.len())..]
                .iter()
                .any(|e| matches!(e, DaemonEvent::Heartbeat(h) if h.audio == AudioState::Capturing))
                .then_some(())
        }
    };
    subscriber.wait_for("the microphone is open", &daemon, CONNECT_DEADLINE, capturing(0));

    let from = subscriber.seen().events.len();
    let gone = Instant::now();
    room.pactl(&["unload-module", "module-null-sink"]).unwrap();
    let told =
        subscriber.wait_for("the daemon says so", &daemon, Duration::from_secs(10), |seen| {
            seen.events[from..].iter().find_map(|e| match e {
                DaemonEvent::Error(m) if m.code == stt_proto::ErrorCode::Audio => {
                    Some(m.message.clone())
                }
                _ => None,
            })
        });
    let after = gone.elapsed();
    eprintln!("the microphone's loss told after {after:?}: {told}");
    assert!(after <= Duration::from_secs(2), "told after {after:?}: {told}");
    assert!(told.starts_with("the microphone stopped") && told.contains("retrying in"), "{told}");

    let back = subscriber.seen().events.len();
    room.pactl(&["load-module", "module-null-sink", "sink_name=room", "rate=48000"]).unwrap();
    room.pactl(&["set-default-source", "room.monitor"]).unwrap();
    subscriber.wait_for("the microphone is open again", &daemon, CONNECT_DEADLINE, capturing(back));
    let parts = [Part::Silence(0.5), Part::Say(LINES[0]), Part::Silence(1.0)];
    let said = speech().clip(&parts, Format::wav(16_000, 1));
    let heard = subscriber.seen().events.len();
    room.say(&said, 100);
    let text = subscriber.wait_for("the room is heard again", &daemon, CONNECT_DEADLINE, |seen| {
        seen.events[heard..].iter().find_map(|e| match e {
            DaemonEvent::Transcript(t) if !t.text.trim().is_empty() => Some(t.text.clone()),
            _ => None,
        })
    });
    assert!(text.to_lowercase().contains("kitchen"), "{text}");
}

// ---- the wake lane -----------------------------------------------------------------------

/// Whether openWakeWord's `head` is installed (`scripts/fetch-wake --head NAME`, which
/// `scripts/test` runs); a test that needs one it lacks is skipped, unless every test must run.
fn wake_head(head: &str) -> bool {
    let there = stt_testkit::models_dir().join(format!("wake/{head}.onnx")).is_file();
    assert!(
        there || std::env::var_os("STT_TEST_STRICT").is_none(),
        "no wake head {head}: run scripts/fetch-wake --head {head}"
    );
    there
}

/// The daemon's events from `file` played at real time, once it has all been heard.
fn heard_at_real_time(sandbox: &Sandbox, file: &Path) -> Vec<DaemonEvent> {
    let mut daemon = sandbox
        .spawn("stt-daemon", &["--input", path_str(file), "--stay", "--wait-for-subscriber"]);
    let subscriber = Subscriber::connect(&sandbox.daemon_socket(), &daemon);
    subscriber.wait_for(
        "the end of the input, every segment done",
        &daemon,
        RUN_DEADLINE,
        |seen| {
            let starts = count(&seen.events, |e| matches!(e, DaemonEvent::SpeechStart(_)));
            let dones = count(&seen.events, |e| matches!(e, DaemonEvent::SegmentDone(_)));
            let ended = seen.events.iter().any(|e| {
                heartbeat(e).is_some_and(|h| h.audio == AudioState::Ended && h.backlog == 0)
            });
            (ended && starts == dones).then_some(())
        },
    );
    let events = subscriber.seen().events.clone();
    stop(sandbox, &mut daemon);
    events
}

fn wakes(events: &[DaemonEvent]) -> Vec<&stt_proto::Wake> {
    events
        .iter()
        .filter_map(|e| match e {
            DaemonEvent::Wake(w) => Some(w),
            _ => None,
        })
        .collect()
}

/// `[wake]` with openWakeWord's "hey jarvis": the phrase said before a command is heard once,
/// where it was said, and a sentence without it wakes nothing; the heartbeat names the phrase;
/// the command is transcribed as ever.
#[test]
fn the_wake_phrase_is_heard_once_where_it_was_said_and_nowhere_else() {
    if !wake_head("hey_jarvis") {
        return;
    }
    let _turn = one_at_a_time();
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.config_file(), "[wake]\nenabled = true\nphrase = \"hey_jarvis\"\n")
        .unwrap();
    let said = |text| Part::Say(Line { text, voice: "en-us" });
    let file = speech().clip(
        &[
            Part::Silence(1.0),
            Part::Say(LINES[1]),
            Part::Silence(1.5),
            said("hey jarvis"),
            Part::Silence(0.3),
            said("what time is it"),
            Part::Silence(1.5),
        ],
        Format::wav(16_000, 1),
    );
    let events = heard_at_real_time(&sandbox, &file);
    let wakes = wakes(&events);
    assert_eq!(wakes.len(), 1, "{}", show(&events));
    let wake = wakes[0];
    assert_eq!(wake.phrase, "hey_jarvis");
    assert!(wake.score >= 0.5, "{wake:?}");
    // Where it was said: in the segment that holds it, not in the sentence before.
    let transcripts: Vec<&stt_proto::Transcript> = events
        .iter()
        .filter_map(|e| match e {
            DaemonEvent::Transcript(t) => Some(t),
            _ => None,
        })
        .collect();
    let named = transcripts
        .iter()
        .find(|t| t.text.to_lowercase().contains("time"))
        .unwrap_or_else(|| panic!("no transcript of the command: {}", show(&events)));
    assert!(
        named.start - 0.5 <= wake.at && wake.at <= named.end,
        "the wake at {} s, the command's segment {}..{} s",
        wake.at,
        named.start,
        named.end
    );
    assert!(transcripts[0].end < wake.at, "{}", show(&events));
    let named_beats = events.iter().filter_map(heartbeat).filter(|h| h.wake.is_some());
    assert!(named_beats.clone().all(|h| h.wake.as_deref() == Some("hey_jarvis")));
    assert!(named_beats.count() > 0, "no heartbeat names the phrase: {}", show(&events));
}

/// `[wake].phrase = "enrolled"`: before anything is enrolled the daemon says how to enrol and
/// transcribes all the same; `stt-daemon wake-enroll` makes the phrase from three recordings
/// (kept 0600), and then it is heard in a voice it was not enrolled from, after a sentence.
#[test]
fn a_phrase_of_ones_own_is_enrolled_from_recordings_and_heard_in_another_voice() {
    let _turn = one_at_a_time();
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.config_file(), "[wake]\nenabled = true\nphrase = \"enrolled\"\n")
        .unwrap();
    let phrase = |voice, wpm| Part::SayAt { line: Line { text: "hey computer", voice }, wpm };
    let later = speech().clip(
        &[
            Part::Silence(1.0),
            Part::Say(LINES[0]),
            Part::Silence(1.5),
            phrase("en-gb", 175),
            Part::Silence(1.5),
        ],
        Format::wav(16_000, 1),
    );

    // Nothing enrolled: told how, and the speech is transcribed all the same.
    let events = heard_at_real_time(&sandbox, &later);
    let told = events.iter().find_map(|e| match e {
        DaemonEvent::Error(e) if e.code == stt_proto::ErrorCode::Wake => Some(e.message.clone()),
        _ => None,
    });
    let told = told.unwrap_or_else(|| panic!("no wake error: {}", show(&events)));
    assert!(told.contains("stt-daemon wake-enroll"), "{told}");
    assert!(events.iter().any(|e| matches!(e, DaemonEvent::Transcript(_))), "{}", show(&events));
    assert!(wakes(&events).is_empty());
    assert!(events.iter().filter_map(heartbeat).all(|h| h.wake.is_none()));

    // Enrolled from three recordings.
    let clip = |voice, wpm| {
        let parts = [Part::Silence(0.4), phrase(voice, wpm), Part::Silence(0.4)];
        path_str(&speech().clip(&parts, Format::wav(22_050, 1))).to_owned()
    };
    let clips = [clip("en-us", 160), clip("en-us", 190), clip("en-us+f3", 175)];
    let mut args = vec!["wake-enroll"];
    args.extend(clips.iter().map(String::as_str));
    let out = run_within(&sandbox, &args, Duration::from_secs(120));
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(out.stdout.starts_with("enrolled the wake phrase from 3 recordings"), "{out:?}");
    let kept = sandbox.root().join("data/stt/wake/enrolled.json");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777, 0o600);

    // Heard in another voice, and only there.
    let events = heard_at_real_time(&sandbox, &later);
    let wakes = wakes(&events);
    assert_eq!(wakes.len(), 1, "{}", show(&events));
    assert_eq!(wakes[0].phrase, "enrolled");
    let first = events.iter().find_map(|e| match e {
        DaemonEvent::Transcript(t) => Some(t.end),
        _ => None,
    });
    assert!(first.is_some_and(|end| end < wakes[0].at), "{}", show(&events));
}
