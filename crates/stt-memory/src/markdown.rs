//! Memory as Markdown files: a person's way to read, back up and edit what stt remembers.
//!
//! `export` writes one file per item, with YAML front matter and the text as the body:
//!
//! ```text
//! DIR/about_me.md  about_user.md  users/<name>.md     profiles
//!     knowledge/<id>-<slug>.md                         (type: fact, decision, …)
//!     episodes/<id>-<slug>.md                          (salience: high, mid, low)
//!     intentions/<id>-<slug>.md                        (cue, due, priority, state)
//!     archived/<kind>/<id>-<slug>.md                   out of recall (decayed, superseded, …)
//!     session-log/<id>.md  dream-log/<id>.md           to read; import skips them
//! ```
//!
//! `import` reads the item files back. A file whose `uid` names an item memory holds updates
//! that item (so an edited export is applied in place); any other file becomes a new
//! item, unless memory already holds the same text, which is then strengthened. Keys stt does
//! not know are kept with the item and written again on the next export.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use rusqlite::params;
use serde_json::Value as Json;
use yaml_serde::{Mapping, Value};

use crate::items::{Item, ItemFilter, Kind, NewItem};
use crate::log::{SessionStatus, sql};
use crate::text::{date_time, parse_date_time};
use crate::{ItemId, MemoryError, Result, Store};

/// The front-matter keys stt reads and writes itself; everything else is kept as it was.
const KNOWN: &[&str] = &[
    "id",
    "uid",
    "kind",
    "type",
    "salience",
    "name",
    "tags",
    "subject",
    "score",
    "stability",
    "created",
    "last_used",
    "last_decay",
    "status",
    "archived_why",
    "cue",
    "due",
    "priority",
    "state",
    "related",
    "supersedes",
    "sources",
];

/// What an export or import did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub items: usize,
    pub sessions: usize,
    pub dreams: usize,
    /// Import: files that updated an item in place.
    pub updated: usize,
    /// Import: files whose text memory already held.
    pub merged: usize,
}

fn slug(text: &str) -> String {
    let words: Vec<String> = crate::text::words(text).take(6).collect();
    let slug = words.join("-");
    if slug.is_empty() { "item".into() } else { slug.chars().take(48).collect() }
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> MemoryError + '_ {
    move |source| MemoryError::Io { path: path.to_owned(), source }
}

/// Writes `text` to `path`, 0600, its directories 0700, whole or not at all.
fn write_private(path: &Path, text: &str) -> Result<()> {
    stt_os::write_private(path, text.as_bytes()).map_err(io(path))
}

fn json_to_yaml(v: &Json) -> Value {
    yaml_serde::to_value(v).unwrap_or(Value::Null)
}

fn yaml_to_json(v: &Value) -> Json {
    serde_json::to_value(v).unwrap_or(Json::Null)
}

fn front_matter(item: &Item) -> Mapping {
    let mut m = Mapping::new();
    let mut put = |k: &str, v: Value| {
        m.insert(Value::String(k.into()), v);
    };
    put("id", item.id.0.into());
    put("uid", item.uid.clone().into());
    put("kind", item.kind.as_str().into());
    match item.kind {
        Kind::Episode => put("salience", item.subtype.clone().into()),
        _ if !item.subtype.is_empty() => put("type", item.subtype.clone().into()),
        _ => {}
    }
    if !item.name.is_empty() {
        put("name", item.name.clone().into());
    }
    if !item.tags.is_empty() {
        put("tags", item.tags.iter().map(|t| Value::from(t.clone())).collect());
    }
    if !item.subject.is_empty() {
        put("subject", item.subject.clone().into());
    }
    put("score", ((item.score * 1000.0).round() / 1000.0).into());
    put("stability", ((item.stability * 1000.0).round() / 1000.0).into());
    put("created", date_time(item.created).into());
    put("last_used", date_time(item.last_used).into());
    put("last_decay", date_time(item.last_decay).into());
    put("status", if item.active { "active" } else { "archived" }.into());
    if let Some(why) = &item.archived_why {
        put("archived_why", why.clone().into());
    }
    if let Some(cue) = &item.cue {
        put("cue", cue.clone().into());
    }
    if let Some(due) = item.due {
        put("due", date_time(due).into());
    }
    if let Some(p) = &item.priority {
        put("priority", p.clone().into());
    }
    if let Some(s) = &item.state {
        put("state", s.clone().into());
    }
    let linked = |kind: &str| -> Value {
        item.links.iter().filter(|(_, k)| k == kind).map(|(id, _)| Value::from(id.0)).collect()
    };
    if item.links.iter().any(|(_, k)| k == "related") {
        put("related", linked("related"));
    }
    if item.links.iter().any(|(_, k)| k == "supersedes") {
        put("supersedes", linked("supersedes"));
    }
    for (k, v) in &item.extra {
        put(k, json_to_yaml(v));
    }
    m
}

fn item_path(dir: &Path, item: &Item) -> PathBuf {
    let file = format!(
        "{}-{}.md",
        item.id.0,
        slug(if item.name.is_empty() { &item.body } else { &item.name })
    );
    let base = if item.active { dir.to_owned() } else { dir.join("archived") };
    match item.kind {
        Kind::Profile if item.active && item.subject == "assistant" => dir.join("about_me.md"),
        Kind::Profile if item.active && item.subject == "user" => dir.join("about_user.md"),
        Kind::Profile => base.join("users").join(file),
        Kind::Knowledge => base.join("knowledge").join(file),
        Kind::Episode => base.join("episodes").join(file),
        Kind::Intention => base.join("intentions").join(file),
    }
}

fn render(front: &Mapping, body: &str) -> String {
    let yaml = yaml_serde::to_string(front).unwrap_or_default();
    format!("---\n{yaml}---\n{}\n", body.trim_end())
}

/// Splits a file into its front matter and body; a file without front matter is all body.
fn parse(text: &str) -> std::result::Result<(Mapping, String), String> {
    let Some(rest) = text.strip_prefix("---\n").or_else(|| text.strip_prefix("---\r\n")) else {
        return Ok((Mapping::new(), text.trim().to_owned()));
    };
    let end = rest.find("\n---").ok_or("the front matter has no closing '---' line")?;
    let yaml = &rest[..=end];
    let body = rest[end + 4..].trim_start_matches(['\r', '\n']).trim_end();
    let front: Mapping = if yaml.trim().is_empty() {
        Mapping::new()
    } else {
        yaml_serde::from_str(yaml).map_err(|e| e.to_string())?
    };
    Ok((front, body.to_owned()))
}

impl Store {
    /// Writes every item (archived ones under `archived/`), every session's log and every
    /// dream as Markdown under `dir`, files 0600.
    pub fn export(&self, dir: &Path) -> Result<Counts> {
        let mut counts = Counts::default();
        let all = ItemFilter { archived: true, ..ItemFilter::default() };
        for item in self.items(&all)? {
            write_private(&item_path(dir, &item), &render(&front_matter(&item), &item.body))?;
            counts.items += 1;
        }
        for session in self.sessions(None)? {
            let mut front = Mapping::new();
            front.insert("id".into(), session.id.0.into());
            front.insert("kind".into(), session.kind.as_str().into());
            if let Some(label) = &session.label {
                front.insert("label".into(), label.clone().into());
            }
            front.insert("started".into(), date_time(session.started).into());
            let status = match session.status {
                SessionStatus::Open => "open",
                SessionStatus::Pending => "pending",
                SessionStatus::Processed => "processed",
            };
            front.insert("status".into(), status.into());
            let lines: Vec<String> = self
                .session_log(session.id)?
                .iter()
                .map(|e| format!("- {} {}", &date_time(e.at)[11..], e.line()))
                .collect();
            let path = dir.join("session-log").join(format!("{}.md", session.id.0));
            write_private(&path, &render(&front, &lines.join("\n")))?;
            counts.sessions += 1;
        }
        for dream in self.dreams(usize::MAX >> 1)? {
            let mut front = Mapping::new();
            front.insert("id".into(), dream.id.into());
            front.insert("started".into(), date_time(dream.started).into());
            front.insert("status".into(), dream.status.clone().into());
            front.insert("trigger".into(), dream.trigger.clone().into());
            let path = dir.join("dream-log").join(format!("{}.md", dream.id));
            write_private(&path, &render(&front, &dream.text))?;
            counts.dreams += 1;
        }
        Ok(counts)
    }

    /// Reads item files under `dir` back (see the module's doc); session and dream logs are
    /// skipped. A file that cannot be read is an error naming it; nothing of it is written.
    pub fn import(&mut self, dir: &Path) -> Result<Counts> {
        let mut files = Vec::new();
        collect(dir, &mut files)?;
        files.sort();
        let mut counts = Counts::default();
        let mut ids: BTreeMap<i64, ItemId> = BTreeMap::new();
        let mut links: Vec<(ItemId, Vec<i64>, &'static str)> = Vec::new();
        for path in files {
            let text = fs::read_to_string(&path).map_err(io(&path))?;
            let (front, body) = parse(&text).map_err(|why| {
                MemoryError::Invalid(format!(
                    "'{}': {why}: fix the file or move it out",
                    path.display()
                ))
            })?;
            let (id, outcome) = self.import_one(&path, &front, body)?;
            match outcome {
                Imported::Updated => counts.updated += 1,
                Imported::Merged => counts.merged += 1,
                Imported::Created => {}
            }
            counts.items += 1;
            if let Some(old) = front.get("id").and_then(Value::as_i64) {
                ids.insert(old, id);
            }
            for (key, kind) in [("related", "related"), ("supersedes", "supersedes")] {
                let others: Vec<i64> = match front.get(key) {
                    Some(Value::Sequence(seq)) => seq.iter().filter_map(Value::as_i64).collect(),
                    Some(v) => v.as_i64().into_iter().collect(),
                    None => Vec::new(),
                };
                if !others.is_empty() {
                    links.push((id, others, kind));
                }
            }
        }
        self.write(|tx| {
            for (src, others, kind) in &links {
                for other in others {
                    let dst = ids.get(other).copied().unwrap_or(ItemId(*other));
                    if dst != *src {
                        tx.execute(
                            "INSERT OR IGNORE INTO links(src, dst, kind) \
                             SELECT ?1, id, ?3 FROM items WHERE id = ?2 AND NOT EXISTS \
                             (SELECT 1 FROM links WHERE src = ?2 AND dst = ?1 AND kind = ?3 \
                             AND kind = 'related')",
                            params![src.0, dst.0, kind],
                        )
                        .map_err(sql)?;
                    }
                }
            }
            Ok(())
        })?;
        Ok(counts)
    }

    fn import_one(
        &mut self,
        path: &Path,
        front: &Mapping,
        body: String,
    ) -> Result<(ItemId, Imported)> {
        let get = |k: &str| front.get(k).and_then(Value::as_str).map(str::to_owned);
        let num = |k: &str| front.get(k).and_then(Value::as_f64);
        let time = |k: &str| get(k).and_then(|t| parse_date_time(&t));
        let kind = match get("kind") {
            Some(k) => Kind::parse(&k).ok_or_else(|| {
                MemoryError::Invalid(format!(
                    "'{}': kind '{k}' is not one of knowledge, episode, intention, profile",
                    path.display()
                ))
            })?,
            None => guess_kind(path),
        };
        if body.trim().is_empty() {
            return Err(MemoryError::Invalid(format!(
                "'{}' has no text below its front matter",
                path.display()
            )));
        }
        let mut subject = get("subject").unwrap_or_default();
        if kind == Kind::Profile && subject.is_empty() {
            subject = match path.file_name().and_then(|n| n.to_str()) {
                Some("about_me.md") => "assistant".into(),
                Some("about_user.md") => "user".into(),
                _ => path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
            };
        }
        let subtype =
            get(if kind == Kind::Episode { "salience" } else { "type" }).unwrap_or_default();
        let tags: Vec<String> = match front.get("tags") {
            Some(Value::Sequence(seq)) => {
                seq.iter().filter_map(|t| t.as_str().map(str::to_owned)).collect()
            }
            Some(Value::String(s)) => {
                s.split(',').map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()).collect()
            }
            _ => Vec::new(),
        };
        let extra: BTreeMap<String, Json> = front
            .iter()
            .filter_map(|(k, v)| Some((k.as_str()?.to_owned(), v)))
            .filter(|(k, _)| !KNOWN.contains(&k.as_str()))
            .map(|(k, v)| (k, yaml_to_json(v)))
            .collect();
        let name = get("name").unwrap_or_default();
        // The item this file was exported from, if this store holds it: the file is an edit.
        let uid = get("uid");
        let existing = uid.as_deref().and_then(|uid| self.item_by_uid(uid).ok().flatten());
        let (id, outcome) = match existing {
            Some(item) => {
                self.update_item(item.id, Some(&name), Some(&body))?;
                (item.id, Imported::Updated)
            }
            None => {
                let new = NewItem {
                    kind: Some(kind),
                    subtype: subtype.clone(),
                    name,
                    body,
                    tags: tags.clone(),
                    subject,
                    cue: get("cue"),
                    due: time("due"),
                    priority: get("priority"),
                    extra: extra.clone(),
                    uid,
                    ..NewItem::default()
                };
                match self.remember(new)? {
                    crate::Remembered::Strengthened { id } => (id, Imported::Merged),
                    other => (other.id(), Imported::Created),
                }
            }
        };
        // The file's own figures and state win (it is what the person sees and edits), except
        // when its text was merged into an item memory already had: that item keeps its own.
        if outcome == Imported::Merged {
            return Ok((id, outcome));
        }
        let active = get("status").is_none_or(|s| s != "archived");
        let extra_json = serde_json::to_string(&extra).unwrap_or_else(|_| "{}".into());
        self.write(|tx| {
            tx.execute(
                "UPDATE items SET subtype = ?2, tags = ?3, score = coalesce(?4, score), \
                 stability = coalesce(?5, stability), created = coalesce(?6, created), \
                 last_used = coalesce(?7, last_used), last_decay = coalesce(?8, last_decay), \
                 status = ?9, archived_why = CASE WHEN ?9 = 'active' THEN NULL \
                 ELSE coalesce(?10, archived_why, 'by hand') END, \
                 state = coalesce(?11, state), extra = ?12 WHERE id = ?1",
                params![
                    id.0,
                    subtype,
                    tags.join(","),
                    num("score"),
                    num("stability"),
                    time("created"),
                    time("last_used"),
                    time("last_decay"),
                    if active { "active" } else { "archived" },
                    get("archived_why"),
                    get("state"),
                    extra_json
                ],
            )
            .map_err(sql)?;
            Ok(())
        })?;
        if !active {
            self.vectors.remove(crate::Target::Item(id));
        }
        Ok((id, outcome))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Imported {
    Created,
    Updated,
    Merged,
}

/// The kind a file without `kind:` has, from its folder.
fn guess_kind(path: &Path) -> Kind {
    let in_dir = |d: &str| path.components().any(|c| c.as_os_str() == d);
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if in_dir("episodes") {
        Kind::Episode
    } else if in_dir("intentions") {
        Kind::Intention
    } else if in_dir("users") || name == "about_me.md" || name == "about_user.md" {
        Kind::Profile
    } else {
        Kind::Knowledge
    }
}

/// Every `.md` under `dir` except the session and dream logs.
fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            if name != "session-log" && name != "dream-log" {
                collect(&path, out)?;
            }
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Role, SessionKind, Turn};

    #[test]
    fn export_then_import_gives_the_same_memory() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("m.db")).unwrap();
        let s = store.open_session(SessionKind::Chat, Some("chat"), None).unwrap();
        store.append(s, &Turn::new(Role::User, "my dog is called Rex")).unwrap();
        let mut fact = NewItem::fact("dog", "The user's dog is called Rex.");
        fact.tags = vec!["pets".into()];
        fact.extra.insert("mood".into(), Json::from("cheerful"));
        let dog = store.remember(fact).unwrap().id();
        let walk = store.remember(NewItem::fact("walks", "Rex is walked at 7.")).unwrap().id();
        store.relate(dog, walk).unwrap();
        store.add_intention("Buy dog food", Some("pet shop"), None, Some("high"), &[]).unwrap();
        store.set_profile("user", "Has a dog.", &[]).unwrap();
        store.remember(NewItem::fact("dog", "The user's dog is called Max.")).unwrap();

        let out = dir.path().join("export");
        let counts = store.export(&out).unwrap();
        assert_eq!((counts.items, counts.sessions), (5, 1));
        assert!(out.join("about_user.md").exists());
        assert!(out.join("session-log/1.md").exists());
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &fs::metadata(out.join("about_user.md")).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);

        let mut fresh = Store::open(&dir.path().join("fresh.db")).unwrap();
        let counts = fresh.import(&out).unwrap();
        assert_eq!(counts.items, 5);
        let all = ItemFilter { archived: true, ..ItemFilter::default() };
        let before = store.items(&all).unwrap();
        let after = fresh.items(&all).unwrap();
        let summary = |items: &[Item]| {
            let mut v: Vec<_> = items
                .iter()
                .map(|i| {
                    let extra = serde_json::to_string(&i.extra).unwrap();
                    (
                        i.kind.as_str(),
                        i.body.clone(),
                        i.active,
                        i.tags.clone(),
                        extra,
                        i.cue.clone(),
                        i.links.len(),
                    )
                })
                .collect();
            v.sort();
            v
        };
        assert_eq!(summary(&before), summary(&after));

        // Importing the same files again changes nothing.
        let again = fresh.import(&out).unwrap();
        assert_eq!(again.updated, 5);
        assert_eq!(fresh.items(&all).unwrap().len(), 5);
    }

    #[test]
    fn an_edited_file_updates_its_item() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("m.db")).unwrap();
        let id = store.remember(NewItem::fact("tea", "Likes green tea.")).unwrap().id();
        let out = dir.path().join("export");
        store.export(&out).unwrap();
        let file = fs::read_dir(out.join("knowledge")).unwrap().next().unwrap().unwrap().path();
        let text =
            fs::read_to_string(&file).unwrap().replace("Likes green tea.", "Likes black tea.");
        fs::write(&file, text.replacen("---\n", "---\nsource_app: notes\n", 1)).unwrap();
        store.import(&out).unwrap();
        let item = store.item(id).unwrap();
        assert_eq!(item.body, "Likes black tea.");
        assert_eq!(
            item.extra.get("source_app"),
            Some(&Json::from("notes")),
            "unknown keys are kept"
        );
        assert_eq!(store.items(&ItemFilter::default()).unwrap().len(), 1);
    }

    #[test]
    fn an_archived_file_does_not_archive_the_live_item_it_repeats() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("m.db")).unwrap();
        let live = store.remember(NewItem::fact("tea", "Likes green tea.")).unwrap().id();
        let input = dir.path().join("in/archived/knowledge");
        fs::create_dir_all(&input).unwrap();
        fs::write(
            input.join("9-tea.md"),
            "---\nkind: knowledge\nstatus: archived\nscore: 0.1\n---\nlikes green tea\n",
        )
        .unwrap();
        let counts = store.import(&dir.path().join("in")).unwrap();
        assert_eq!(counts.merged, 1);
        let item = store.item(live).unwrap();
        assert!(item.active && item.score > 0.9, "{item:?}");
    }

    #[test]
    fn a_broken_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("m.db")).unwrap();
        fs::create_dir_all(dir.path().join("in/knowledge")).unwrap();
        fs::write(dir.path().join("in/knowledge/bad.md"), "---\nname: [unclosed\n---\ntext\n")
            .unwrap();
        let err = store.import(&dir.path().join("in")).unwrap_err().to_string();
        assert!(err.contains("bad.md"), "{err}");
    }
}
