//! Forgetting and merging speakers, across a real process: the assistant (its binary, in a
//! sandbox of temporary XDG directories) follows a daemon socket served here, which gives it
//! a roster; `speaker_forget` and `speaker_merge` over its control socket must leave the
//! files the daemon reads (`speaker-edits.json`, `speaker-names.json`) and audit lines, and
//! refuse ids it does not know without stopping.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use stt_proto::speaker_files::{EDITS_FILE, NAMES_FILE, SpeakerEditOp, SpeakerEdits};
use stt_proto::{AssistantEvent, DaemonEvent, ErrorCode, Request, Speakers};
use stt_testkit::{DEADLINE, Sandbox, msg};
use tokio_util::sync::CancellationToken;

async fn ask(control: &Path, request: &Request) -> Result<AssistantEvent, String> {
    stt_bus::request(control, "test", request, Duration::from_secs(10))
        .await
        .map(|reply| reply.event)
        .map_err(|e| e.to_string())
}

/// Polls `probe` every 10 ms until it gives `Ok`, failing the test after [`DEADLINE`] with
/// `what` and the last thing seen.
async fn within<T, F: Future<Output = Result<T, String>>>(
    what: &str,
    mut probe: impl FnMut() -> F,
) -> T {
    let mut last = String::new();
    let found = tokio::time::timeout(DEADLINE, async {
        loop {
            match probe().await {
                Ok(value) => return value,
                Err(seen) => last = seen,
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    found.unwrap_or_else(|_| panic!("timed out waiting for {what}; last seen: {last}"))
}

async fn acked(control: &Path, request: Request) {
    match ask(control, &request).await {
        Ok(AssistantEvent::Ack(ack)) => assert_eq!(ack.command, request.kind()),
        other => panic!("{request:?} was answered {other:?}"),
    }
}

async fn roster(control: &Path) -> Result<Speakers, String> {
    match ask(control, &Request::SpeakerList).await? {
        AssistantEvent::SpeakerList(list) => Ok(list),
        other => Err(format!("{other:?}")),
    }
}

fn ids_and_names(list: &Speakers) -> Vec<(String, Option<String>)> {
    list.speakers.iter().map(|s| (s.id.clone(), s.name.clone())).collect()
}

fn read_edits(path: &Path) -> Result<SpeakerEdits, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

fn read_names(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Every audit record of the day (or days) so far.
fn audit(dir: &Path) -> Vec<Value> {
    let Ok(days) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut records = Vec::new();
    for day in days {
        let text = std::fs::read_to_string(day.unwrap().path()).unwrap();
        records.extend(text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()));
    }
    records
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forget_and_merge_reach_the_daemons_files_and_unknown_ids_are_refused() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.config_file(), "[llm]\nenabled = false\n[memory]\nenabled = false\n")
        .unwrap();
    let data: PathBuf = sandbox.root().join("data/stt");
    let (edits_file, names_file, audit_dir) =
        (data.join(EDITS_FILE), data.join(NAMES_FILE), data.join("audit"));

    // The daemon: a publish-only socket whose roster the test decides.
    let shutdown = CancellationToken::new();
    let daemon = crate::common::daemon(&sandbox.daemon_socket(), &shutdown);
    let program = Path::new(env!("CARGO_BIN_EXE_stt-assistant"));
    let mut assistant = sandbox.spawn_program("stt-assistant", program, &[]);
    let control = sandbox.assistant_socket();

    let speakers = vec![
        msg::speaker("spk_0001", None),
        msg::speaker("spk_0003", None),
        msg::speaker("spk_0004", None),
    ];
    within("the assistant to have the daemon's roster", async || {
        // Until it has subscribed, a roster reaches no one: send it again each time.
        daemon.publish(&DaemonEvent::Speakers(msg::roster(speakers.clone())));
        let list = roster(&control).await?;
        if list.speakers.len() == 3 { Ok(()) } else { Err(format!("{list:?}")) }
    })
    .await;
    for (id, name) in [("spk_0003", "Bo"), ("spk_0004", "Ana")] {
        acked(&control, Request::SpeakerName { speaker_id: id.into(), name: name.into() }).await;
    }

    // Forget a named speaker.
    acked(&control, Request::SpeakerForget { speaker_id: "spk_0003".into() }).await;
    let edits = within("the forget edit", async || {
        let edits = read_edits(&edits_file)?;
        if edits.edits.len() == 1 { Ok(edits) } else { Err(format!("{edits:?}")) }
    })
    .await;
    assert_eq!(edits.edits[0].op, SpeakerEditOp::Forget { speaker_id: "spk_0003".into() });
    let mode = std::fs::metadata(&edits_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the edits file is the user's alone");
    // The names are written before the edit, on the same thread.
    assert_eq!(read_names(&names_file), serde_json::json!({"spk_0004": "Ana"}));
    let list = roster(&control).await.unwrap();
    assert_eq!(
        ids_and_names(&list),
        [("spk_0001".into(), None), ("spk_0004".into(), Some("Ana".into()))],
        "gone from the roster before the daemon says so"
    );

    // Merge Ana's second id into the unnamed one: it takes her name.
    acked(
        &control,
        Request::SpeakerMerge { speaker_id: "spk_0004".into(), into: "spk_0001".into() },
    )
    .await;
    let edits = within("the merge edit", async || {
        let edits = read_edits(&edits_file)?;
        if edits.edits.len() == 2 { Ok(edits) } else { Err(format!("{edits:?}")) }
    })
    .await;
    assert_eq!(
        edits.edits[1].op,
        SpeakerEditOp::Merge { speaker_id: "spk_0004".into(), into: "spk_0001".into() }
    );
    assert!(edits.edits[1].seq > edits.edits[0].seq, "{edits:?}");
    assert_eq!(read_names(&names_file), serde_json::json!({"spk_0001": "Ana"}));
    let list = roster(&control).await.unwrap();
    assert_eq!(ids_and_names(&list), [("spk_0001".into(), Some("Ana".into()))]);

    let records = within("the audit lines", async || {
        let records = audit(&audit_dir);
        if records.len() == 4 { Ok(records) } else { Err(format!("{records:?}")) }
    })
    .await;
    let actions: Vec<(&str, &str)> = records
        .iter()
        .map(|r| (r["action"].as_str().unwrap(), r["speaker_id"].as_str().unwrap()))
        .collect();
    assert_eq!(
        actions,
        [("name", "spk_0003"), ("name", "spk_0004"), ("forget", "spk_0003"), ("merge", "spk_0004")]
    );
    assert_eq!(records[3]["into"], "spk_0001");
    assert!(records[2].get("name").is_none(), "{}", records[2]);

    // Ids it does not know are refused, saying where the ids are; nothing changes.
    for request in [
        Request::SpeakerForget { speaker_id: "spk_0003".into() },
        Request::SpeakerMerge { speaker_id: "spk_0009".into(), into: "spk_0001".into() },
    ] {
        match ask(&control, &request).await {
            Ok(AssistantEvent::Error(e)) => {
                assert_eq!(e.code, ErrorCode::UnknownSpeaker, "{e:?}");
                assert!(e.message.contains("`stt-ctl speaker-list`"), "{e:?}");
            }
            other => panic!("{request:?} was answered {other:?}"),
        }
    }
    let itself = Request::SpeakerMerge { speaker_id: "spk_0001".into(), into: "spk_0001".into() };
    match ask(&control, &itself).await {
        Ok(AssistantEvent::Error(e)) => assert_eq!(e.code, ErrorCode::BadMessage, "{e:?}"),
        other => panic!("a merge into itself was answered {other:?}"),
    }
    assert_eq!(read_edits(&edits_file).unwrap().edits.len(), 2);

    // …and the assistant is still there.
    assert!(matches!(ask(&control, &Request::Status).await, Ok(AssistantEvent::Status(_))));
    assert!(assistant.is_running(), "{}", assistant.log());
    shutdown.cancel();
}
