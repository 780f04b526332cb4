//! Speaker identification through the real daemon: sessions of espeak-ng voices read from a
//! WAV file, the roster on disk under a temporary `XDG_DATA_HOME`, names and edits through
//! the files the assistant writes, and the events a subscriber sees.

// Test helpers outside #[test] functions may panic: a panic is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use stt_bus::{Connection, Service};
use stt_proto::{DaemonEvent, SpeakerStatus, Speakers, Transcript};
use stt_testkit::viewer::speak_as;
use stt_testkit::{DEADLINE, Proc, Sandbox, expect_within, wait_until};

/// Two voices the model tells far apart (tests/embed.rs in stt-speaker has eight).
const ANA: &str = "en-us+m3";
const BEA: &str = "en+f3";
const CAL: &str = "en-gb-scotland+m7";

/// Sentences of a spoken command's length (2 to 4 s).
const SENTENCES: [&str; 6] = [
    "Open the calendar for tomorrow morning please.",
    "What is the weather going to be like this weekend?",
    "Remind me to call the plumber after lunch.",
    "Play some quiet music in the living room.",
    "How long does it take to drive to the station?",
    "Add eggs, milk and bread to the shopping list.",
];

/// `[speakers]` on, confirmation out of reach (so every `speakers` event is a mint, a rename,
/// a prune or the one sent on connect), and `more`.
fn sandbox(more: &str) -> Sandbox {
    let sandbox = Sandbox::new();
    let config = format!("[speakers]\nenabled = true\nconfirm_s = 1000.0\n{more}");
    std::fs::write(sandbox.config_file(), config).unwrap();
    sandbox
}

fn data_dir(sandbox: &Sandbox) -> PathBuf {
    sandbox.root().join("data").join("stt")
}

/// `(voice, sentence)` spoken one after another into one 16 kHz WAV, a second of silence
/// around each.
fn session(dir: &Path, name: &str, lines: &[(&str, &str)]) -> PathBuf {
    let parts: Vec<PathBuf> = lines
        .iter()
        .enumerate()
        .map(|(n, (voice, text))| speak_as(dir, &format!("{name}-{n}"), voice, text))
        .collect();
    let out = dir.join(format!("{name}.wav"));
    let status = Command::new("sox").arg("-R").args(&parts).arg(&out).status();
    assert!(status.is_ok_and(|s| s.success()), "sox could not join the session");
    out
}

/// What a subscriber read from a daemon until it closed the socket.
fn run_daemon(sandbox: &Sandbox, wav: &Path) -> Vec<DaemonEvent> {
    run_daemon_logged(sandbox, wav).0
}

/// [`run_daemon`], and the daemon's log at debug.
fn run_daemon_logged(sandbox: &Sandbox, wav: &Path) -> (Vec<DaemonEvent>, String) {
    let mut daemon = sandbox.spawn_with_env(
        "stt-daemon",
        &["--input", wav.to_str().unwrap(), "--fast", "--wait-for-subscriber"],
        &[("STT_LOG", "stt_daemon=debug,info")],
    );
    let events = subscribe(sandbox);
    let closed = wait_until(Duration::from_secs(300), || {
        events.1.lock().unwrap_or_else(PoisonError::into_inner).then_some(())
    });
    assert!(closed.is_some(), "the daemon did not finish the file\n{}", daemon.log());
    assert!(daemon.wait(Duration::from_secs(30)).success(), "{}", daemon.log());
    (events.0.lock().unwrap_or_else(PoisonError::into_inner).clone(), daemon.log())
}

type Events = (Arc<Mutex<Vec<DaemonEvent>>>, Arc<Mutex<bool>>);

/// Subscribes to the sandbox's daemon (retrying until it answers) on a thread of its own.
fn subscribe(sandbox: &Sandbox) -> Events {
    let events: Events = Default::default();
    let (seen, closed) = (Arc::clone(&events.0), Arc::clone(&events.1));
    let path = sandbox.daemon_socket();
    let (up_tx, up) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async move {
            let deadline = Instant::now() + DEADLINE;
            let mut connection = loop {
                match Connection::open(&path, Service::DAEMON, "speakers-test").await {
                    Ok(connection) => break connection,
                    Err(e) if Instant::now() >= deadline => panic!("cannot subscribe: {e}"),
                    Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                }
            };
            let _ = up_tx.send(());
            while let Ok(Some(event)) = connection.recv::<DaemonEvent>().await {
                seen.lock().unwrap_or_else(PoisonError::into_inner).push(event);
            }
            *closed.lock().unwrap_or_else(PoisonError::into_inner) = true;
        });
    });
    up.recv_timeout(DEADLINE + Duration::from_secs(5)).expect("the daemon's socket answers");
    events
}

fn transcripts(events: &[DaemonEvent]) -> Vec<Transcript> {
    events
        .iter()
        .filter_map(|e| match e {
            DaemonEvent::Transcript(t) => Some(t.clone()),
            _ => None,
        })
        .collect()
}

fn rosters(events: &[DaemonEvent]) -> Vec<Speakers> {
    events
        .iter()
        .filter_map(|e| match e {
            DaemonEvent::Speakers(s) => Some(s.clone()),
            _ => None,
        })
        .collect()
}

fn ids(roster: &Speakers) -> Vec<(String, Option<String>)> {
    roster.speakers.iter().map(|s| (s.id.clone(), s.name.clone())).collect()
}

/// Which id each voice got, in order, from a session of `voices`.
fn ids_by_voice(voices: &[&str], events: &[DaemonEvent]) -> BTreeMap<String, Vec<String>> {
    let transcripts = transcripts(events);
    assert_eq!(transcripts.len(), voices.len(), "one transcript per line: {transcripts:#?}");
    let mut by_voice: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (voice, t) in voices.iter().zip(&transcripts) {
        let id = t.speaker_id.clone().unwrap_or_else(|| format!("none ({:?})", t.speaker_status));
        by_voice.entry((*voice).to_owned()).or_default().push(id);
    }
    by_voice
}

#[test]
fn an_alternating_two_voice_session_gives_each_voice_one_id_and_no_speakers_event_on_adapts() {
    let sandbox = sandbox("");
    let voices = [ANA, BEA, ANA, BEA, ANA, BEA, ANA, BEA];
    let lines: Vec<(&str, &str)> =
        voices.iter().enumerate().map(|(n, v)| (*v, SENTENCES[n % SENTENCES.len()])).collect();
    let wav = session(sandbox.root(), "alternating", &lines);
    let (events, log) = run_daemon_logged(&sandbox, &wav);
    // Every segment was embedded at the pause that ended it, before it closed: what the
    // segment held was what the pause settled (stt-vad's `take_settled`).
    let identified: Vec<&str> = log.lines().filter(|l| l.contains("speaker identified")).collect();
    assert_eq!(identified.len(), voices.len(), "{log}");
    assert!(identified.iter().all(|l| l.contains("early=true")), "{identified:#?}");

    let by_voice = ids_by_voice(&voices, &events);
    eprintln!("ids by voice: {by_voice:?}");
    let (ana, bea) = (&by_voice[ANA], &by_voice[BEA]);
    assert!(ana.iter().all(|id| id == &ana[0]), "{ANA} kept one id: {ana:?}");
    assert!(bea.iter().all(|id| id == &bea[0]), "{BEA} kept one id: {bea:?}");
    assert_ne!(ana[0], bea[0], "two voices, two ids");
    let statuses: Vec<SpeakerStatus> =
        transcripts(&events).iter().map(|t| t.speaker_status).collect();
    assert_eq!(statuses[..2], [SpeakerStatus::Unknown; 2], "each voice minted when first heard");
    assert!(statuses[2..].iter().all(|s| *s == SpeakerStatus::Matched), "{statuses:?}");
    assert!(transcripts(&events)[2..].iter().all(|t| t.speaker_score.is_some_and(|s| s > 0.0)));

    // The roster on connect (empty), then one per mint: six matched segments adapted
    // prototypes without a word.
    let rosters = rosters(&events);
    let sizes: Vec<usize> = rosters.iter().map(|r| r.speakers.len()).collect();
    assert_eq!(sizes, [0, 1, 2], "speakers events: {rosters:#?}");
    let samples: Vec<Option<String>> =
        rosters[2].speakers.iter().map(|s| s.sample_path.clone()).collect();
    let expected: Vec<Option<String>> =
        [&ana[0], &bea[0]].iter().map(|id| Some(format!("speakers/{id}.wav"))).collect();
    assert_eq!(samples, expected, "relative to the data directory");
    // A mint's roster goes out before the transcript that names the new id.
    let first_mint =
        events.iter().position(|e| matches!(e, DaemonEvent::Speakers(s) if s.speakers.len() == 1));
    let first_transcript = events.iter().position(|e| matches!(e, DaemonEvent::Transcript(_)));
    assert!(first_mint < first_transcript);

    // On disk: private, with a sample of each voice.
    let dir = data_dir(&sandbox).join("speakers");
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    for id in [&ana[0], &bea[0]] {
        let sample = dir.join(format!("{id}.wav"));
        assert_eq!(mode(&sample), 0o600, "{}", sample.display());
        assert!(std::fs::metadata(&sample).unwrap().len() > 16_000, "a second or more of voice");
    }
    assert_eq!(mode(&dir.join("speakers.json")), 0o600);
    assert_eq!(mode(&dir.join("prototypes.json")), 0o600);
}

#[test]
fn a_name_reaches_the_daemon_through_the_assistant_and_survives_a_daemon_restart() {
    let sandbox = sandbox("");
    let first = session(sandbox.root(), "first", &[(ANA, SENTENCES[0]), (ANA, SENTENCES[1])]);
    // The assistant caches the roster the daemon sends, to check the id it is asked to name.
    let _assistant: Proc = sandbox.spawn("stt-assistant", &[]);
    let events = run_daemon(&sandbox, &first);
    let minted = transcripts(&events)[0].speaker_id.clone().expect("an id");
    expect_within("the assistant knows the speaker", DEADLINE, || {
        let out = sandbox.run("stt-ctl", &["speaker-list"]);
        if out.stdout.contains(&minted) { Ok(()) } else { Err(format!("{out:?}")) }
    });
    let named = sandbox.run("stt-ctl", &["speaker-name", &minted, "Ana"]);
    assert_eq!(named.code, Some(0), "{named:?}");

    // A new daemon: the name is in the roster it sends on connect and on the voice's next
    // transcript, straight from the daemon.
    let second = session(sandbox.root(), "second", &[(ANA, SENTENCES[2])]);
    let events = run_daemon(&sandbox, &second);
    let on_connect = &rosters(&events)[0];
    assert_eq!(ids(on_connect), [(minted.clone(), Some("Ana".to_owned()))]);
    let t = &transcripts(&events)[0];
    assert_eq!(
        (t.speaker_id.as_deref(), t.speaker_status, t.speaker.as_deref()),
        (Some(minted.as_str()), SpeakerStatus::Matched, Some("Ana")),
        "{t:?}"
    );
}

#[test]
fn a_name_given_while_the_daemon_runs_is_announced_at_once() {
    let sandbox = sandbox("");
    let wav = session(sandbox.root(), "one", &[(ANA, SENTENCES[3])]);
    let mut daemon = sandbox.spawn(
        "stt-daemon",
        &["--input", wav.to_str().unwrap(), "--fast", "--wait-for-subscriber", "--stay"],
    );
    let (events, _) = subscribe(&sandbox);
    let id = expect_within("the voice's transcript", Duration::from_secs(300), || {
        let seen = events.lock().unwrap_or_else(PoisonError::into_inner);
        transcripts(&seen).first().and_then(|t| t.speaker_id.clone()).ok_or(format!("{seen:?}"))
    });
    // What the assistant writes on `speaker-name` (bins/stt-assistant/src/names.rs).
    let names = data_dir(&sandbox).join("speaker-names.json");
    std::fs::write(&names, format!("{{\"{id}\": \"Bea\"}}\n")).unwrap();
    expect_within("a roster with the name", DEADLINE, || {
        let seen = events.lock().unwrap_or_else(PoisonError::into_inner);
        let last = rosters(&seen).pop();
        match last {
            Some(r) if ids(&r) == [(id.clone(), Some("Bea".to_owned()))] => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
    assert!(daemon.signal_and_wait(nix::sys::signal::Signal::SIGTERM).success());
}

#[test]
fn pruning_drops_the_least_heard_unnamed_speaker_never_a_named_one() {
    let sandbox = sandbox("max_speakers = 1\n");
    let first = session(sandbox.root(), "named", &[(ANA, SENTENCES[0])]);
    let events = run_daemon(&sandbox, &first);
    let ana = transcripts(&events)[0].speaker_id.clone().unwrap();
    std::fs::write(data_dir(&sandbox).join("speaker-names.json"), format!("{{\"{ana}\":\"Ana\"}}"))
        .unwrap();
    // Two new voices over a limit of one: the first new one goes when the second comes;
    // Ana, named, stays although she was heard least.
    let second = session(
        sandbox.root(),
        "others",
        &[(BEA, SENTENCES[1]), (BEA, SENTENCES[2]), (CAL, SENTENCES[3])],
    );
    let events = run_daemon(&sandbox, &second);
    let ts = transcripts(&events);
    let (bea, cal) = (ts[0].speaker_id.clone().unwrap(), ts[2].speaker_id.clone().unwrap());
    assert!(!BTreeSet::from([&ana, &bea]).contains(&cal), "three voices, three ids");
    let last = rosters(&events).pop().unwrap();
    assert_eq!(ids(&last), [(ana, Some("Ana".to_owned())), (cal, None)], "{bea} pruned");
    assert!(!data_dir(&sandbox).join("speakers").join(format!("{bea}.wav")).exists());
}

#[test]
fn a_corrupt_roster_is_reported_moved_aside_and_replaced() {
    let sandbox = sandbox("");
    let dir = data_dir(&sandbox).join("speakers");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("speakers.json"), b"{\"version\": 1, \"speakers\": [{\"id\"").unwrap();
    let wav = session(sandbox.root(), "one", &[(ANA, SENTENCES[4])]);
    let events = run_daemon(&sandbox, &wav);
    let reported = events.iter().any(|e| {
        matches!(e, DaemonEvent::Error(m) if m.message.contains("moved aside")
            && m.message.contains("speakers.json"))
    });
    assert!(reported, "an error event names the file: {events:#?}");
    assert!(dir.join("speakers.json.corrupt").exists(), "the old file is kept aside");
    let t = &transcripts(&events)[0];
    assert_eq!(t.speaker_status, SpeakerStatus::Unknown, "a fresh roster mints: {t:?}");
    let roster: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("speakers.json")).unwrap()).unwrap();
    assert_eq!(roster["speakers"].as_array().unwrap().len(), 1, "{roster}");
}

#[test]
fn a_missing_model_is_an_error_that_names_the_fix() {
    let sandbox = sandbox("model = \"/nonexistent/campplus.onnx\"\n");
    let out = sandbox.run("stt-daemon", &["--input", "/dev/null", "--fast"]);
    assert_ne!(out.code, Some(0));
    assert!(
        out.stderr.contains("/nonexistent/campplus.onnx")
            && out.stderr.contains("scripts/fetch-speaker-model"),
        "{out:?}"
    );
}

/// Real people (the test set of `scripts/fetch-speech`: a man reading playing cards, and the
/// voice of alsa-utils' channel names), taking turns with short commands of 1 to 3 s: nobody's
/// utterance is ever matched to an id minted for the other person (the error that would put
/// names and memories on the wrong one), and each is minted once (matched after that, at
/// 0.69 to 0.81 here; segments the VAD finds under `min_segment_s` say `none`). The table is
/// printed; docs/PERFORMANCE.md has the figures over more voices.
#[test]
fn real_people_taking_turns_keep_one_id_each_and_never_get_each_others() {
    let clips = stt_testkit::real_speech::test_set();
    let by = |who: &str| -> Vec<_> {
        clips.iter().filter(|c| c.speaker == who && c.speech_s >= 1.0).cloned().collect()
    };
    let (cards, alsa) = (by("pocketsphinx-cards"), by("alsa-utils-voice"));
    assert!(cards.len() >= 4 && alsa.len() >= 4, "the test set: {clips:#?}");
    let turns: Vec<_> = cards.iter().zip(&alsa).flat_map(|(a, b)| [a.clone(), b.clone()]).collect();
    let sandbox = sandbox("");
    let wav = sandbox.root().join("real-turns.wav");
    stt_testkit::real_speech::session(&turns, 1.5, &wav);
    let events = run_daemon(&sandbox, &wav);
    let transcripts = transcripts(&events);
    assert_eq!(transcripts.len(), turns.len(), "one transcript per clip: {transcripts:#?}");
    let mut minted_for: BTreeMap<String, String> = BTreeMap::new();
    let mut table = String::new();
    for (clip, t) in turns.iter().zip(&transcripts) {
        let id = t.speaker_id.clone().unwrap_or_default();
        table += &format!(
            "  {:<20} {:<10} {:?} {:?}\n",
            clip.speaker, id, t.speaker_status, t.speaker_score
        );
        match t.speaker_status {
            SpeakerStatus::Unknown => {
                minted_for.insert(id, clip.speaker.clone());
            }
            SpeakerStatus::Matched => {
                assert_eq!(
                    minted_for.get(&id),
                    Some(&clip.speaker),
                    "{} matched to an id minted for someone else:\n{table}",
                    clip.id
                );
            }
            _ => {}
        }
    }
    eprintln!("real people taking turns (speaker, id, status, score):\n{table}");
    let ids_of = |who: &str| minted_for.values().filter(|s| s.as_str() == who).count();
    assert_eq!((ids_of("pocketsphinx-cards"), ids_of("alsa-utils-voice")), (1, 1), "{table}");
}

/// `stt-ctl speaker-forget` and `speaker-merge` go from the assistant to the running daemon
/// through the edits file: its roster loses the forgotten speaker (and the sample), the
/// merged one's speech goes to the speaker that stays, and the daemon says so at once.
#[test]
fn forget_and_merge_from_stt_ctl_reach_the_running_daemon() {
    let sandbox = sandbox("");
    let _assistant: Proc = sandbox.spawn("stt-assistant", &[]);
    let lines = [(ANA, SENTENCES[0]), (BEA, SENTENCES[1]), (CAL, SENTENCES[3])];
    let wav = session(sandbox.root(), "three", &lines);
    let mut daemon = sandbox.spawn(
        "stt-daemon",
        &["--input", wav.to_str().unwrap(), "--fast", "--wait-for-subscriber", "--stay"],
    );
    let (events, _) = subscribe(&sandbox);
    // The roster as the daemon last sent it (every subscriber gets it on connect too).
    let last_roster = || rosters(&events.lock().unwrap_or_else(PoisonError::into_inner)).pop();
    let before =
        expect_within("three speakers", Duration::from_secs(300), || match last_roster() {
            Some(r) if r.speakers.len() == 3 => Ok(r),
            other => Err(format!("{other:?}")),
        });
    let ids: Vec<String> = before.speakers.iter().map(|s| s.id.clone()).collect();
    expect_within("the assistant knows all three", DEADLINE, || {
        let out = sandbox.run("stt-ctl", &["speaker-list"]);
        if ids.iter().all(|id| out.stdout.contains(id)) { Ok(()) } else { Err(format!("{out:?}")) }
    });

    let forgot = sandbox.run("stt-ctl", &["speaker-forget", &ids[1]]);
    assert_eq!(forgot.code, Some(0), "{forgot:?}");
    let merged = sandbox.run("stt-ctl", &["speaker-merge", &ids[2], &ids[0]]);
    assert_eq!(merged.code, Some(0), "{merged:?}");

    let after = expect_within("the daemon's roster of one", DEADLINE, || match last_roster() {
        Some(r) if r.speakers.len() == 1 => Ok(r),
        other => Err(format!("{other:?}")),
    });
    let stays = &after.speakers[0];
    assert_eq!(stays.id, ids[0]);
    let heard = |i: usize| before.speakers[i].cumulative_s;
    assert!((stays.cumulative_s - (heard(0) + heard(2))).abs() < 0.02, "{after:?} {before:?}");
    let dir = data_dir(&sandbox).join("speakers");
    assert!(dir.join(format!("{}.wav", ids[0])).exists());
    for gone in &ids[1..] {
        assert!(!dir.join(format!("{gone}.wav")).exists(), "{gone}'s sample is deleted");
    }
    let on_disk = std::fs::read_to_string(dir.join("speakers.json")).unwrap();
    assert!(!on_disk.contains(&ids[1]) && !on_disk.contains(&ids[2]), "{on_disk}");
    // Stopped, the daemon first transcribes what it accepted (nothing is lost): let whisper
    // catch up (it lags the speaker lane on a busy machine), so the exit is prompt.
    expect_within("every segment transcribed", DEADLINE, || {
        let seen = events.lock().unwrap_or_else(PoisonError::into_inner);
        let count = |f: fn(&DaemonEvent) -> bool| seen.iter().filter(|e| f(e)).count();
        let stopped = count(|e| matches!(e, DaemonEvent::SpeechStop(_)));
        let done = count(|e| matches!(e, DaemonEvent::SegmentDone(_)));
        if stopped > 0 && done == stopped { Ok(()) } else { Err(format!("{done} of {stopped}")) }
    });
    assert!(daemon.signal_and_wait(nix::sys::signal::Signal::SIGTERM).success());
}
