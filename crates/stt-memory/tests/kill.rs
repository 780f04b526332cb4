//! A crash in the middle of writing loses nothing that was committed: a child process writes
//! entries and items as fast as it can, telling the parent each id once `append` or
//! `remember` has returned; the parent kills it with SIGKILL mid-stream, opens the store
//! again and finds every reported write, whole.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use stt_memory::{ItemId, LogId, NewItem, Role, SessionKind, Store, Turn};

const ROLE: &str = "STT_MEMORY_KILL_CHILD";

/// The child: runs only when the parent starts it (ignored otherwise).
#[test]
#[ignore = "the writer the kill test starts; not a test on its own"]
fn writer_child() {
    let Some(path) = std::env::var_os(ROLE) else { return };
    let mut store = Store::open(std::path::Path::new(&path)).unwrap();
    let session = store.open_session(SessionKind::Chat, Some("kill"), None).unwrap();
    for k in 0.. {
        let text = format!("entry number {k} with a few words to make a page fill up");
        let id = store.append(session, &Turn::new(Role::User, &text)).unwrap();
        println!("log {} {k}", id.0);
        let mut item = NewItem::fact(format!("fact {k}"), format!("fact body {k}"));
        item.provenance = vec![id];
        let item = store.remember(item).unwrap().id();
        println!("item {} {k}", item.0);
    }
}

#[test]
fn kill_9_mid_write_loses_nothing_committed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "writer_child", "--include-ignored", "--nocapture", "--test-threads=1"])
        .env(ROLE, &path)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut reported: Vec<(String, i64, u64)> = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        let mut parts = line.split(' ');
        let (Some(what), Some(id), Some(k)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let (Ok(id), Ok(k)) = (id.parse(), k.parse()) else { continue };
        reported.push((what.to_owned(), id, k));
        if reported.len() == 400 {
            // SIGKILL: no destructor, no checkpoint, the WAL as it is.
            child.kill().unwrap();
            break;
        }
    }
    child.wait().unwrap();
    assert_eq!(reported.len(), 400, "the writer stopped early");

    let store = Store::open(&path).unwrap();
    for (what, id, k) in &reported {
        match what.as_str() {
            "log" => {
                let entry = store.entry(LogId(*id)).unwrap();
                assert!(entry.text.starts_with(&format!("entry number {k} ")), "{entry:?}");
            }
            _ => {
                let item = store.item(ItemId(*id)).unwrap();
                assert_eq!(item.body, format!("fact body {k}"));
                assert_eq!(item.provenance.len(), 1);
            }
        }
    }
}
