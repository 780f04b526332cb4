//! The store as a whole: opening, the log, items, decay, recall, forgetting.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::*;

/// A store in a temp dir whose clock the test moves.
struct Fixture {
    _dir: tempfile::TempDir,
    store: Store,
    now: Arc<AtomicU64>,
}

const START: f64 = 1_764_000_000.0;

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let now = Arc::new(AtomicU64::new(START.to_bits()));
        let clock = Arc::clone(&now);
        let store = Store::open_with_clock(
            &dir.path().join("memory.db"),
            Box::new(move || f64::from_bits(clock.load(Ordering::SeqCst))),
        )
        .unwrap();
        Fixture { _dir: dir, store, now }
    }

    fn days(&self, days: f64) {
        let now = f64::from_bits(self.now.load(Ordering::SeqCst));
        self.now.store((now + days * DAY).to_bits(), Ordering::SeqCst);
    }
}

fn say(store: &mut Store, session: SessionId, who: &str, text: &str) -> LogId {
    store.append(session, &Turn { speaker: Some(who), ..Turn::new(Role::User, text) }).unwrap()
}

#[test]
fn a_new_file_is_private_and_current() {
    let f = Fixture::new();
    let mode = std::fs::metadata(f.store.path()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(f.store.schema_version().unwrap(), schema::latest());
}

#[test]
fn foreign_and_broken_files_are_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "my shopping list\n").unwrap();
    let err = Store::open(&text).unwrap_err();
    assert!(matches!(err, MemoryError::NotDatabase { .. }), "{err}");
    assert!(err.to_string().contains("notes.txt") && err.to_string().contains("[memory].db"));
    assert_eq!(std::fs::read_to_string(&text).unwrap(), "my shopping list\n");

    let other = dir.path().join("other.db");
    let conn = Connection::open(&other).unwrap();
    conn.execute_batch("CREATE TABLE songs(title TEXT); INSERT INTO songs VALUES ('x');").unwrap();
    drop(conn);
    let before = std::fs::read(&other).unwrap();
    let err = Store::open(&other).unwrap_err();
    assert!(matches!(err, MemoryError::Foreign { .. }), "{err}");
    assert_eq!(std::fs::read(&other).unwrap(), before);

    // A real memory file with its middle overwritten.
    let broken = dir.path().join("broken.db");
    {
        let mut store = Store::open(&broken).unwrap();
        let s = store.open_session(SessionKind::Chat, None, None).unwrap();
        for k in 0..200 {
            say(&mut store, s, "me", &format!("line number {k} with some words to fill pages"));
        }
    }
    let mut bytes = std::fs::read(&broken).unwrap();
    let len = bytes.len();
    for b in &mut bytes[4096..len.min(4096 * 6)] {
        *b = 0x5a;
    }
    std::fs::write(&broken, &bytes).unwrap();
    std::fs::remove_file(dir.path().join("broken.db-wal")).ok();
    let err = Store::open(&broken).unwrap_err();
    assert!(matches!(err, MemoryError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("move it aside"), "{err}");
    assert_eq!(std::fs::read(&broken).unwrap(), bytes);
}

#[test]
fn every_version_migrates() {
    for from in 0..schema::latest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.db");
        {
            let mut conn = Connection::open(&path).unwrap();
            schema::migrate(&mut conn, from).unwrap();
        }
        let store = Store::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), schema::latest(), "from {from}");
    }
}

/// A tree written before its messages were indexed is indexed by the migration.
#[test]
fn the_trees_messages_are_indexed_when_the_index_comes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    {
        let mut conn = Connection::open(&path).unwrap();
        schema::migrate(&mut conn, 3).unwrap();
        conn.execute(
            "INSERT INTO tree_messages(at, role, text, closed) \
             VALUES (1.0, 'user', 'My locker code is 4417.', 1)",
            [],
        )
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    let found = store.tree_recall("what was my locker code", 3).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].text, "My locker code is 4417.");
}

#[test]
fn sessions_move_open_pending_processed() {
    let mut f = Fixture::new();
    let s = f.store.open_session(SessionKind::Chat, Some("chat"), None).unwrap();
    say(&mut f.store, s, "Typed", "remind me to water the plants");
    f.store.append(s, &Turn::new(Role::Assistant, "I will.")).unwrap();
    assert_eq!(f.store.session(s).unwrap().status, SessionStatus::Open);
    let empty = f.store.open_session(SessionKind::Command, None, None).unwrap();
    assert_eq!(f.store.close_open_sessions().unwrap(), 1);
    assert!(f.store.session(empty).is_err(), "an empty session is dropped");
    assert_eq!(f.store.sessions(Some(SessionStatus::Pending)).unwrap().len(), 1);
    f.store.mark_processed(s).unwrap();
    let log = f.store.session_log(s).unwrap();
    assert_eq!(log.len(), 2);
    assert_eq!(log[0].line(), "Typed: remind me to water the plants");
    assert_eq!(log[1].line(), "assistant: I will.");
    assert_eq!(f.store.session(s).unwrap().status, SessionStatus::Processed);
}

#[test]
fn a_full_disk_is_a_fault_that_loses_nothing_committed() {
    let mut f = Fixture::new();
    let s = f.store.open_session(SessionKind::Chat, Some("chat"), None).unwrap();
    let kept = say(&mut f.store, s, "Typed", "my locker code is 4417");
    // SQLite's page limit fails writes with the very error a full disk gives (SQLITE_FULL).
    let pages: i64 = f.store.conn.query_row("PRAGMA page_count", [], |r| r.get(0)).unwrap();
    f.store.conn.pragma_update(None, "max_page_count", pages).unwrap();
    let long = "words that will not fit ".repeat(400);
    let err = (0..100)
        .find_map(|_| f.store.append(s, &Turn::new(Role::User, &long)).err())
        .expect("the page limit was never reached");
    assert!(err.is_unavailable(), "{err}");
    assert!(err.to_string().contains("memory.db") && err.to_string().contains("full"), "{err}");
    // Reopened (the limit is per connection), what was committed before is all there.
    let path = f.store.path().to_owned();
    drop(f.store);
    let mut store = Store::open(&path).unwrap();
    let log = store.session_log(s).unwrap();
    assert_eq!(log[0].id, kept);
    assert!(log.iter().all(|e| e.id == kept || e.text == long));
    assert!(store.append(s, &Turn::new(Role::Assistant, "Noted.")).is_ok());
}

#[test]
fn the_same_fact_twice_is_one_stronger_item() {
    let mut f = Fixture::new();
    let first =
        f.store.remember(NewItem::fact("dog's name", "The user's dog is called Rex.")).unwrap();
    let again = f.store.remember(NewItem::fact("dog", "the user's dog is called rex")).unwrap();
    assert!(matches!(again, Remembered::Strengthened { id } if id == first.id()));
    let items = f.store.items(&ItemFilter::default()).unwrap();
    assert_eq!(items.len(), 1);
    assert!(items[0].stability > 1.0);
}

#[test]
fn a_correction_supersedes_and_keeps_the_old() {
    let mut f = Fixture::new();
    let old = f
        .store
        .remember(NewItem::fact("favourite colour", "The user's favourite colour is blue."))
        .unwrap()
        .id();
    let new = f
        .store
        .remember(NewItem::fact("Favourite colour", "The user's favourite colour is green."))
        .unwrap();
    assert_eq!(new, Remembered::Superseded { id: new.id(), old });
    let hits = f.store.recall(&Query::new("favourite colour")).unwrap();
    assert_eq!(hits[0].target, Target::Item(new.id()));
    assert!(hits[0].text.contains("green"));
    assert_eq!(
        hits[0].previous,
        vec!["favourite colour: The user's favourite colour is blue.".to_owned()]
    );
    assert!(hits.iter().all(|h| h.target != Target::Item(old)), "the old one is out of recall");
    let archived = f.store.item(old).unwrap();
    assert!(!archived.active);
    assert_eq!(archived.archived_why.as_deref(), Some("superseded"));
    assert!(archived.links.contains(&(new.id(), "superseded_by".to_owned())));
}

#[test]
fn a_correction_found_later_supersedes_too() {
    let mut f = Fixture::new();
    let old = f.store.remember(NewItem::fact("sister", "My sister lives in Lisbon.")).unwrap().id();
    f.store.recall(&Query::new("sister Lisbon")).unwrap();
    let new = f.store.remember(NewItem::fact("sister's home", "She moved to Porto.")).unwrap().id();
    assert!(f.store.supersede(new, old).unwrap());
    assert!(!f.store.supersede(new, old).unwrap(), "only once");
    assert!(f.store.supersede(new, new).is_err());
    let (old_item, new_item) = (f.store.item(old).unwrap(), f.store.item(new).unwrap());
    assert_eq!(old_item.archived_why.as_deref(), Some("superseded"));
    assert!(new_item.links.contains(&(old, "supersedes".to_owned())));
    assert!(new_item.stability >= old_item.stability, "the correction inherits the stability");
    let hits = f.store.recall(&Query::new("where does my sister live")).unwrap();
    assert!(hits.iter().all(|h| h.target != Target::Item(old)), "{hits:?}");
}

#[test]
fn decay_follows_the_curve_and_archives() {
    let mut f = Fixture::new();
    let fact = f.store.remember(NewItem::fact("a", "knowledge fades slowly")).unwrap().id();
    let mut episode = NewItem::new(Kind::Episode, "b", "a low episode fades fast");
    episode.subtype = "low".into();
    let episode = f.store.remember(episode).unwrap().id();
    f.days(3.0);
    f.store.decay_all().unwrap();
    let k = f.store.item(fact).unwrap();
    let expected = (1.0 - 0.1 / 1.5f64).powf(3.0);
    assert!((k.score - expected).abs() < 1e-9, "{} vs {expected}", k.score);
    // Running again at once changes nothing: the elapsed time is per item.
    f.store.decay_all().unwrap();
    assert!((f.store.item(fact).unwrap().score - expected).abs() < 1e-9);
    f.days(10.0);
    let out = f.store.decay_all().unwrap();
    assert_eq!(out.archived, 1);
    let e = f.store.item(episode).unwrap();
    assert!(!e.active && e.archived_why.as_deref() == Some("decayed"), "{e:?}");
    assert!(f.store.item(fact).unwrap().active);
}

#[test]
fn recall_makes_things_fade_slower() {
    let mut f = Fixture::new();
    let used =
        f.store.remember(NewItem::fact("a", "the car is parked on level three")).unwrap().id();
    let unused = f.store.remember(NewItem::fact("b", "the bike is in the shed")).unwrap().id();
    f.store.reinforce(&[used]).unwrap();
    f.days(5.0);
    f.store.decay_all().unwrap();
    assert!(f.store.item(used).unwrap().score > f.store.item(unused).unwrap().score);
}

#[test]
fn raw_log_entries_are_found_before_any_dream() {
    let mut f = Fixture::new();
    let s = f.store.open_session(SessionKind::Chat, None, Some(1_683_554_160.0)).unwrap();
    let q = f
        .store
        .append(
            s,
            &Turn {
                source: Some("D1:1"),
                at: Some(1_683_554_160.0),
                ..Turn::new(Role::User, "Where did you park?")
            },
        )
        .unwrap();
    let a = f
        .store
        .append(
            s,
            &Turn {
                source: Some("D1:2"),
                at: Some(1_683_554_170.0),
                ..Turn::new(Role::Assistant, "On level three, by the lift.")
            },
        )
        .unwrap();
    f.store
        .append(
            s,
            &Turn {
                source: Some("D1:3"),
                at: Some(1_683_554_180.0),
                ..Turn::new(Role::User, "Thanks, and what's for dinner?")
            },
        )
        .unwrap();
    let hits = f.store.recall(&Query::new("parking level")).unwrap();
    let found: Vec<Target> = hits.iter().map(|h| h.target).collect();
    assert!(found.contains(&Target::Log(a)) && found.contains(&Target::Log(q)), "{hits:?}");
    // The date a turn was said is searchable too.
    let hits = f.store.recall(&Query { limit: 3, ..Query::new("May 2023") }).unwrap();
    assert_eq!(hits.len(), 3);
    assert_eq!(hits.iter().find(|h| h.target == Target::Log(a)).unwrap().sources, vec!["D1:2"]);
}

/// A toy embedding: one dimension per word of a tiny vocabulary, normalised.
fn toy(text: &str) -> Vec<f32> {
    const VOCAB: [&str; 8] = ["dog", "puppy", "cat", "car", "park", "level", "dinner", "pasta"];
    let mut v = vec![0.0f32; VOCAB.len()];
    for w in text::words(text) {
        let w = match w.as_str() {
            "puppy" | "rex" => "dog",
            other => other,
        };
        if let Some(k) = VOCAB.iter().position(|v| *v == w) {
            v[k] += 1.0;
        }
    }
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    v.iter().map(|x| x / n).collect()
}

fn embed_missing(store: &mut Store) {
    let missing = store.missing_vectors(1000).unwrap();
    let vectors: Vec<_> = missing.into_iter().map(|(t, text)| (t, toy(&text))).collect();
    store.put_vectors(&vectors).unwrap();
}

#[test]
fn meaning_finds_what_words_miss_and_hints_gate() {
    let mut f = Fixture::new();
    f.store.use_embeddings("toy", 8).unwrap();
    let dog = f.store.remember(NewItem::fact("pet", "Rex the dog")).unwrap().id();
    f.store.remember(NewItem::fact("meal", "pasta for dinner")).unwrap();
    embed_missing(&mut f.store);
    assert!(f.store.has_vectors());
    // "puppy" shares no word with "Rex the dog".
    let v = toy("my puppy");
    let hits = f.store.recall(&Query { vector: Some(&v), ..Query::new("my puppy") }).unwrap();
    assert_eq!(hits[0].target, Target::Item(dog));
    assert!(hits[0].meaning > 0.99);

    let gate = HintGate::default();
    let mut seen = HashSet::new();
    let hints = f.store.hints("my puppy", Some(&v), None, &seen, &gate).unwrap();
    assert_eq!(hints.len(), 1);
    seen.insert(hints[0].target);
    assert!(
        f.store.hints("my puppy", Some(&v), None, &seen, &gate).unwrap().is_empty(),
        "once per session"
    );
    assert!(
        f.store.hints("my puppy", None, None, &HashSet::new(), &gate).unwrap().is_empty(),
        "silent without vectors"
    );
    // The same words again are a repetition, not an association.
    let v = toy("Rex the dog");
    let again = f.store.hints("rex the DOG!", Some(&v), None, &HashSet::new(), &gate).unwrap();
    assert!(again.iter().all(|h| h.target != Target::Item(dog)), "{again:?}");
    // Nor are the lines of past commands (the recall tools find them).
    let s = f.store.open_session(SessionKind::Command, None, None).unwrap();
    f.store.append(s, &Turn::new(Role::User, "drive the car to the park")).unwrap();
    embed_missing(&mut f.store);
    let v = toy("car park");
    let q = Query { vector: Some(&v), ..Query::new("car park") };
    assert!(matches!(f.store.recall(&q).unwrap()[0].target, Target::Log(_)));
    let hints = f.store.hints("car park", Some(&v), None, &HashSet::new(), &gate).unwrap();
    assert!(hints.is_empty(), "{hints:?}");
}

fn hit(score: f32, id: i64) -> Hit {
    Hit {
        target: Target::Item(ItemId(id)),
        score,
        keyword: 0.0,
        meaning: 0.0,
        text: String::new(),
        at: 0.0,
        kind: None,
        sources: vec![],
        previous: vec![],
    }
}

#[test]
fn the_hint_gate() {
    let gate = HintGate::default();
    let none = HashSet::new();
    let check = |scores: &[f32], expected: &[i64]| {
        let ranked: Vec<Hit> = scores.iter().enumerate().map(|(k, s)| hit(*s, k as i64)).collect();
        let got: Vec<i64> = gate
            .choose(&ranked, &none)
            .iter()
            .map(|h| match h.target {
                Target::Item(i) => i.0,
                Target::Log(l) => l.0,
            })
            .collect();
        assert_eq!(got, expected, "{scores:?}");
    };
    check(&[], &[]);
    check(&[0.51], &[]);
    check(&[0.60], &[0]);
    check(&[0.70, 0.60, 0.59], &[0]);
    check(&[0.70, 0.68], &[0, 1]);
    check(&[0.70, 0.68, 0.55], &[0, 1]);
    check(&[0.70, 0.68, 0.67], &[]);
    check(&[0.60, 0.50, 0.49], &[0]);
    let seen: HashSet<Target> = [Target::Item(ItemId(0))].into();
    let ranked = vec![hit(0.9, 0), hit(0.6, 1)];
    assert_eq!(gate.choose(&ranked, &seen)[0].target, Target::Item(ItemId(1)));
}

#[test]
fn links_spread_one_hop() {
    let mut f = Fixture::new();
    let a = f.store.remember(NewItem::fact("trip", "Flight to Lisbon on Friday")).unwrap().id();
    let b = f.store.remember(NewItem::fact("hotel", "Booked the Alfama guesthouse")).unwrap().id();
    let c = f.store.remember(NewItem::fact("other", "Unrelated note about taxes")).unwrap().id();
    f.store.relate(a, b).unwrap();
    let hits = f.store.recall(&Query::new("Lisbon flight")).unwrap();
    let score = |t| hits.iter().find(|h| h.target == Target::Item(t)).map(|h| h.score);
    let (sa, sb) = (score(a).unwrap(), score(b).unwrap());
    assert!((sb - 0.6 * sa).abs() < 1e-5, "{sa} {sb}");
    assert_eq!(score(c), None);
}

#[test]
fn intentions_come_due_or_by_cue() {
    let mut f = Fixture::new();
    let dentist = f
        .store
        .add_intention("Ask about the dentist appointment", Some("dentist"), None, None, &[])
        .unwrap();
    let due = f
        .store
        .add_intention("Send the report", None, Some(START + 3600.0), Some("high"), &[])
        .unwrap();
    let later =
        f.store.add_intention("Buy a present", None, Some(START + 30.0 * DAY), None, &[]).unwrap();
    let now = f.store.intentions("what's the weather", START).unwrap();
    assert!(now.due.is_empty() && now.cued.is_empty() && now.rest.len() == 3);
    f.days(1.0);
    let now = f.store.intentions("I need to call the dentist", f.store.now()).unwrap();
    assert_eq!(now.due.iter().map(|i| i.id).collect::<Vec<_>>(), vec![due]);
    assert_eq!(now.cued.iter().map(|i| i.id).collect::<Vec<_>>(), vec![dentist]);
    assert_eq!(now.rest.iter().map(|i| i.id).collect::<Vec<_>>(), vec![later]);
    f.store.end_intention(due, "done").unwrap();
    let item = f.store.item(due).unwrap();
    assert!(!item.active && item.state.as_deref() == Some("done"));
}

#[test]
fn profiles_are_rewritten_not_duplicated() {
    let mut f = Fixture::new();
    let a = f.store.set_profile("user", "Likes short answers.", &[]).unwrap();
    let b = f.store.set_profile("user", "Likes short answers. Works nights.", &[]).unwrap();
    assert_eq!(a, b);
    assert_eq!(
        f.store.profile("user").unwrap().unwrap().body,
        "Likes short answers. Works nights."
    );
    assert!(f.store.profile("assistant").unwrap().is_none());
}

/// Whether `needle` is anywhere in the database's files (main file and WAL).
fn on_disk(store: &Store, needle: &str) -> bool {
    let mut found = false;
    for suffix in ["", "-wal"] {
        let mut path = store.path().as_os_str().to_owned();
        path.push(suffix);
        if let Ok(bytes) = std::fs::read(&path) {
            found |= bytes.windows(needle.len()).any(|w| w == needle.as_bytes());
        }
    }
    found
}

#[test]
fn forget_leaves_nothing_on_disk() {
    let mut f = Fixture::new();
    f.store.use_embeddings("toy", 8).unwrap();
    let s = f.store.open_session(SessionKind::Chat, None, None).unwrap();
    let entry = say(&mut f.store, s, "Typed", "my locker code is zanzibar4471");
    let mut new = NewItem::fact("locker", "The locker code is quixotic9912");
    new.provenance = vec![entry];
    let secret = f.store.remember(new).unwrap().id();
    f.store.remember(NewItem::fact("keep", "keep this one")).unwrap();
    embed_missing(&mut f.store);
    assert!(on_disk(&f.store, "quixotic9912"));
    assert!(f.store.forget(secret).unwrap());
    assert!(!on_disk(&f.store, "quixotic9912"), "the item's text is still in the file");
    assert!(f.store.recall(&Query::new("quixotic9912")).unwrap().is_empty());
    assert_eq!(f.store.stats().unwrap().active_items, 1);

    f.store.forget_session(s).unwrap();
    assert!(!on_disk(&f.store, "zanzibar4471"), "the log entry is still in the file");
    assert!(f.store.recall(&Query::new("zanzibar4471")).unwrap().is_empty());

    f.store.forget_all().unwrap();
    assert!(!on_disk(&f.store, "keep this one"));
    let stats = f.store.stats().unwrap();
    assert_eq!((stats.active_items, stats.log_entries, stats.vectors), (0, 0, 0));
}

#[test]
fn forgetting_what_was_just_said_takes_the_last_line_and_its_answer_and_nothing_before() {
    let mut f = Fixture::new();
    assert_eq!(f.store.forget_last_said().unwrap(), None, "nothing said yet");
    let s = f.store.open_session(SessionKind::Chat, None, None).unwrap();
    say(&mut f.store, s, "Typed", "my sister lives in Porto");
    f.store.append(s, &Turn::new(Role::Assistant, "Noted.")).unwrap();
    say(&mut f.store, s, "Typed", "my pin is zanzibar4471");
    f.store.append(s, &Turn::new(Role::Assistant, "I will keep zanzibar4471.")).unwrap();
    f.store.tree_push(Role::User, None, "my sister lives in Porto").unwrap();
    f.store.tree_push(Role::User, None, "my pin is zanzibar4471").unwrap();
    f.store.tree_push(Role::Assistant, None, "I will keep zanzibar4471.").unwrap();

    assert_eq!(f.store.forget_last_said().unwrap().as_deref(), Some("my pin is zanzibar4471"));
    assert!(!on_disk(&f.store, "zanzibar4471"), "the words are still in the file");
    assert!(f.store.recall(&Query::new("zanzibar4471")).unwrap().is_empty());
    let left: Vec<String> = f.store.session_log(s).unwrap().into_iter().map(|e| e.text).collect();
    assert_eq!(left, ["my sister lives in Porto", "Noted."]);
    let buffer: Vec<String> =
        f.store.tree_context().unwrap().buffer.into_iter().map(|m| m.text).collect();
    assert_eq!(buffer, ["my sister lives in Porto"]);
}

#[test]
fn vectors_survive_a_reopen_and_follow_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    {
        let mut store = Store::open(&path).unwrap();
        store.use_embeddings("toy", 8).unwrap();
        store.remember(NewItem::fact("pet", "Rex the dog")).unwrap();
        embed_missing(&mut store);
        assert_eq!(store.stats().unwrap().vectors, 1);
    }
    let mut store = Store::open(&path).unwrap();
    assert!(!store.has_vectors(), "off until asked for");
    store.use_embeddings("toy", 8).unwrap();
    assert_eq!(store.stats().unwrap().vectors, 1);
    assert!(store.missing_vectors(10).unwrap().is_empty());
    store.use_embeddings("another-model", 8).unwrap();
    assert_eq!(store.missing_vectors(10).unwrap().len(), 1, "another model's vectors are not used");
}

#[test]
fn the_current_session_can_be_left_out() {
    let mut f = Fixture::new();
    let before = f.store.open_session(SessionKind::Chat, None, None).unwrap();
    let old = say(&mut f.store, before, "Typed", "the spare key is under the blue pot");
    f.store.close_session(before).unwrap();
    let now = f.store.open_session(SessionKind::Chat, None, None).unwrap();
    let current = say(&mut f.store, now, "Typed", "where is the spare key?");
    let all = f.store.recall(&Query::new("spare key")).unwrap();
    assert!(all.iter().any(|h| h.target == Target::Log(current)));
    let query = Query { exclude_session: Some(now), ..Query::new("spare key") };
    let hits: Vec<Target> = f.store.recall(&query).unwrap().iter().map(|h| h.target).collect();
    assert_eq!(hits, vec![Target::Log(old)], "what is being said now is not recalled back");
}
