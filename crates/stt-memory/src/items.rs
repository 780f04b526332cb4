//! Items: what memory has made of the conversation.
//!
//! - **knowledge** (`subtype` fact, decision, preference, pitfall, …): semantic memory;
//! - **episodes** (`subtype` = salience high, mid or low): what happened, when;
//! - **intentions**: something to do or say later, with a cue (words that bring it back when
//!   spoken), a due time, a priority and a state (open, done, cancelled);
//! - **profiles**: about the assistant (`subject` "assistant"), about the user ("user"), or
//!   about one speaker (their name).
//!
//! Every item carries a score and a stability ([`crate::decay`]), its provenance (the log
//! entries it was built from) and links. Writing the same fact twice strengthens one item;
//! a correction (same name, new text, or an explicit `supersedes`) archives the old item with
//! a link from the new one, so what was said before can still be shown.

use std::collections::BTreeMap;

use rusqlite::{OptionalExtension, Transaction, params};
use serde::{Deserialize, Serialize};

use crate::{ItemId, LogId, MemoryError, Result, Seconds, Store, Target, log::sql, text};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Knowledge,
    Episode,
    Intention,
    Profile,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Knowledge, Kind::Episode, Kind::Intention, Kind::Profile];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Knowledge => "knowledge",
            Kind::Episode => "episode",
            Kind::Intention => "intention",
            Kind::Profile => "profile",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// An item to write.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NewItem {
    pub kind: Option<Kind>,
    /// Knowledge: fact, decision, preference, pitfall…; episode: high, mid or low.
    pub subtype: String,
    /// A short title; for knowledge, the slot a correction replaces ("favourite colour").
    pub name: String,
    pub body: String,
    pub tags: Vec<String>,
    /// Whom it is about (profiles; optional elsewhere).
    pub subject: String,
    pub provenance: Vec<LogId>,
    /// Items it relates to (recall spreads along these).
    pub related: Vec<ItemId>,
    /// An item this one corrects.
    pub supersedes: Option<ItemId>,
    pub cue: Option<String>,
    pub due: Option<Seconds>,
    pub priority: Option<String>,
    /// Front-matter keys stt does not know, kept as they were.
    pub extra: BTreeMap<String, serde_json::Value>,
    /// The item's identity across stores (export, import); a new one when `None`.
    pub uid: Option<String>,
}

impl NewItem {
    pub fn new(kind: Kind, name: impl Into<String>, body: impl Into<String>) -> Self {
        NewItem { kind: Some(kind), name: name.into(), body: body.into(), ..NewItem::default() }
    }

    pub fn fact(name: impl Into<String>, body: impl Into<String>) -> Self {
        NewItem { subtype: "fact".into(), ..NewItem::new(Kind::Knowledge, name, body) }
    }
}

/// What `remember` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Remembered {
    Created {
        id: ItemId,
    },
    /// The same thing was already known: that item was strengthened.
    Strengthened {
        id: ItemId,
    },
    /// It corrects `old`, now archived with a link from `id`.
    Superseded {
        id: ItemId,
        old: ItemId,
    },
}

impl Remembered {
    pub fn id(self) -> ItemId {
        match self {
            Remembered::Created { id }
            | Remembered::Strengthened { id }
            | Remembered::Superseded { id, .. } => id,
        }
    }
}

/// An item as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    pub id: ItemId,
    /// Stable across export and import, unlike `id`.
    pub uid: String,
    pub kind: Kind,
    pub subtype: String,
    pub name: String,
    pub body: String,
    pub tags: Vec<String>,
    pub subject: String,
    pub score: f64,
    pub stability: f64,
    pub created: Seconds,
    pub last_used: Seconds,
    pub last_decay: Seconds,
    pub active: bool,
    /// Why it was archived: decayed, superseded, done, cancelled, by hand.
    pub archived_why: Option<String>,
    pub cue: Option<String>,
    pub due: Option<Seconds>,
    pub priority: Option<String>,
    /// Intentions: open, done or cancelled.
    pub state: Option<String>,
    pub extra: BTreeMap<String, serde_json::Value>,
    pub provenance: Vec<LogId>,
    /// (other item, link kind): `related`, `supersedes` (this replaced it), `superseded_by`.
    pub links: Vec<(ItemId, String)>,
}

impl Item {
    /// The text that is embedded and shown: the name, then the body.
    pub fn text(&self) -> String {
        embed_text(&self.name, &self.body)
    }
}

pub(crate) fn embed_text(name: &str, body: &str) -> String {
    if name.is_empty() || body.starts_with(name) {
        body.to_owned()
    } else {
        format!("{name}: {body}")
    }
}

/// Which items to list.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ItemFilter {
    pub kind: Option<Kind>,
    /// Archived ones too.
    pub archived: bool,
    pub subject: Option<String>,
    pub limit: Option<usize>,
}

const ITEM_COLUMNS: &str = "id, uid, kind, subtype, name, body, tags, subject, score, stability, \
     created, last_used, last_decay, status, archived_why, cue, due, priority, state, extra";

fn item_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Item> {
    let tags: String = row.get(6)?;
    let extra: String = row.get(19)?;
    Ok(Item {
        id: ItemId(row.get(0)?),
        uid: row.get(1)?,
        kind: Kind::parse(&row.get::<_, String>(2)?).unwrap_or(Kind::Knowledge),
        subtype: row.get(3)?,
        name: row.get(4)?,
        body: row.get(5)?,
        tags: tags.split(',').filter(|t| !t.is_empty()).map(str::to_owned).collect(),
        subject: row.get(7)?,
        score: row.get(8)?,
        stability: row.get(9)?,
        created: row.get(10)?,
        last_used: row.get(11)?,
        last_decay: row.get(12)?,
        active: row.get::<_, String>(13)? == "active",
        archived_why: row.get(14)?,
        cue: row.get(15)?,
        due: row.get(16)?,
        priority: row.get(17)?,
        state: row.get(18)?,
        extra: serde_json::from_str(&extra).unwrap_or_default(),
        provenance: Vec::new(),
        links: Vec::new(),
    })
}

/// A fresh identity: 64 random bits (std's randomly keyed hasher over the time and a
/// counter), in hex.
fn new_uid() -> String {
    use std::hash::BuildHasher;
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{:016x}", std::hash::RandomState::new().hash_one((nanos, n, std::process::id())))
}

/// Growth of stability when the same fact is said again: it is being confirmed.
const CONFIRM_STABILITY: f64 = 1.0;

fn add_provenance(tx: &Transaction<'_>, item: ItemId, logs: &[LogId]) -> Result<()> {
    for log in logs {
        tx.execute(
            "INSERT OR IGNORE INTO provenance(item, log) SELECT ?1, id FROM log WHERE id = ?2",
            params![item.0, log.0],
        )
        .map_err(sql)?;
    }
    Ok(())
}

fn link(tx: &Transaction<'_>, src: ItemId, dst: ItemId, kind: &str) -> Result<()> {
    if src != dst {
        tx.execute(
            "INSERT OR IGNORE INTO links(src, dst, kind) SELECT ?1, id, ?3 FROM items \
             WHERE id = ?2 AND NOT EXISTS (SELECT 1 FROM links WHERE src = ?2 AND dst = ?1 \
             AND kind = ?3 AND kind = 'related')",
            params![src.0, dst.0, kind],
        )
        .map_err(sql)?;
    }
    Ok(())
}

fn archive_in(tx: &Transaction<'_>, id: ItemId, why: &str) -> Result<bool> {
    let changed = tx
        .execute(
            "UPDATE items SET status = 'archived', archived_why = ?2 \
             WHERE id = ?1 AND status = 'active'",
            params![id.0, why],
        )
        .map_err(sql)?;
    Ok(changed > 0)
}

/// The active item of `kind` whose text has the normal form `norm`.
fn same_in(tx: &Transaction<'_>, kind: Kind, norm: &str) -> Result<Option<ItemId>> {
    tx.query_row(
        "SELECT id FROM items WHERE kind = ?1 AND norm = ?2 AND status = 'active' \
         ORDER BY id LIMIT 1",
        params![kind.as_str(), norm],
        |r| Ok(ItemId(r.get(0)?)),
    )
    .optional()
    .map_err(sql)
}

impl Store {
    /// Writes an item, unless memory already holds it: the same text (case, spacing and
    /// punctuation aside) of the same kind strengthens the item there; a knowledge item with
    /// the same name and subject but a different text, or one naming `supersedes`, replaces the
    /// old one in recall and archives it with a link.
    pub fn remember(&mut self, new: NewItem) -> Result<Remembered> {
        let kind = new.kind.unwrap_or(Kind::Knowledge);
        if new.body.trim().is_empty() {
            return Err(MemoryError::Invalid("an item needs a text (body)".into()));
        }
        let now = self.now();
        let norm = text::normalise(&new.body);
        let name_norm = text::normalise(&new.name);
        let (outcome, archived) = self.write(|tx| {
            if let Some(id) = same_in(tx, kind, &norm)? {
                tx.execute(
                    "UPDATE items SET score = 1.0, stability = stability + ?2, last_used = ?3 \
                     WHERE id = ?1",
                    params![id.0, CONFIRM_STABILITY, now],
                )
                .map_err(sql)?;
                add_provenance(tx, id, &new.provenance)?;
                return Ok((Remembered::Strengthened { id }, None));
            }
            let old = match new.supersedes {
                Some(old) => Some(old),
                None if kind == Kind::Knowledge && !name_norm.is_empty() => tx
                    .query_row(
                        "SELECT id FROM items WHERE kind = 'knowledge' AND subject = ?1 \
                         AND name_norm = ?2 AND status = 'active' ORDER BY id LIMIT 1",
                        params![new.subject, name_norm],
                        |r| Ok(ItemId(r.get(0)?)),
                    )
                    .optional()
                    .map_err(sql)?,
                None => None,
            };
            // A correction inherits how well the old item was known.
            let stability: f64 = match old {
                Some(old) => tx
                    .query_row("SELECT stability FROM items WHERE id = ?1", [old.0], |r| r.get(0))
                    .optional()
                    .map_err(sql)?
                    .ok_or(MemoryError::NotFound { what: "item", id: old.0 })?,
                None => 1.0,
            };
            let state = (kind == Kind::Intention).then_some("open");
            let extra = serde_json::to_string(&new.extra).unwrap_or_else(|_| "{}".into());
            tx.execute(
                "INSERT INTO items(kind, subtype, name, body, tags, norm, subject, stability, \
                 created, last_used, last_decay, cue, due, priority, state, extra, name_norm, \
                 uid) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9, ?9, ?10, ?11, ?12, ?13, \
                 ?14, ?15, ?16)",
                params![
                    kind.as_str(),
                    new.subtype,
                    new.name,
                    new.body,
                    new.tags.join(","),
                    norm,
                    new.subject,
                    stability,
                    now,
                    new.cue,
                    new.due,
                    new.priority,
                    state,
                    extra,
                    name_norm,
                    new.uid.clone().unwrap_or_else(new_uid)
                ],
            )
            .map_err(sql)?;
            let id = ItemId(tx.last_insert_rowid());
            add_provenance(tx, id, &new.provenance)?;
            for other in &new.related {
                link(tx, id, *other, "related")?;
            }
            match old {
                Some(old) => {
                    archive_in(tx, old, "superseded")?;
                    link(tx, id, old, "supersedes")?;
                    Ok((Remembered::Superseded { id, old }, Some(old)))
                }
                None => Ok((Remembered::Created { id }, None)),
            }
        })?;
        if let Some(old) = archived {
            self.vectors.remove(Target::Item(old));
        }
        Ok(outcome)
    }

    /// One item, with its provenance and links.
    pub fn item(&self, id: ItemId) -> Result<Item> {
        let mut item = self
            .conn
            .query_row(
                &format!("SELECT {ITEM_COLUMNS} FROM items WHERE id = ?1"),
                [id.0],
                item_from_row,
            )
            .optional()
            .map_err(|e| self.err(e))?
            .ok_or(MemoryError::NotFound { what: "item", id: id.0 })?;
        self.fill(&mut item)?;
        Ok(item)
    }

    /// The item with this `uid`, if memory holds it.
    pub fn item_by_uid(&self, uid: &str) -> Result<Option<Item>> {
        let id: Option<i64> = self
            .conn
            .query_row("SELECT id FROM items WHERE uid = ?1", [uid], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))?;
        id.map(|id| self.item(ItemId(id))).transpose()
    }

    fn fill(&self, item: &mut Item) -> Result<()> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT log FROM provenance WHERE item = ?1 ORDER BY log")
            .map_err(|e| self.err(e))?;
        item.provenance = stmt
            .query_map([item.id.0], |r| Ok(LogId(r.get(0)?)))
            .map_err(|e| self.err(e))?
            .collect::<rusqlite::Result<_>>()
            .map_err(|e| self.err(e))?;
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT dst, kind FROM links WHERE src = ?1 \
                 UNION ALL SELECT src, CASE kind WHEN 'supersedes' THEN 'superseded_by' \
                 ELSE kind END FROM links WHERE dst = ?1",
            )
            .map_err(|e| self.err(e))?;
        item.links = stmt
            .query_map([item.id.0], |r| Ok((ItemId(r.get(0)?), r.get(1)?)))
            .map_err(|e| self.err(e))?
            .collect::<rusqlite::Result<_>>()
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Items, newest first.
    pub fn items(&self, filter: &ItemFilter) -> Result<Vec<Item>> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {ITEM_COLUMNS} FROM items WHERE (?1 IS NULL OR kind = ?1) \
                 AND (?2 OR status = 'active') AND (?3 IS NULL OR subject = ?3) \
                 ORDER BY created DESC, id DESC LIMIT ?4"
            ))
            .map_err(|e| self.err(e))?;
        let limit = filter.limit.map_or(-1, |l| l as i64);
        let rows = stmt
            .query_map(
                params![filter.kind.map(Kind::as_str), filter.archived, filter.subject, limit],
                item_from_row,
            )
            .map_err(|e| self.err(e))?;
        let mut items = rows.collect::<rusqlite::Result<Vec<_>>>().map_err(|e| self.err(e))?;
        for item in &mut items {
            self.fill(item)?;
        }
        Ok(items)
    }

    /// Rewrites an item's text in place (the dreamer's `update_knowledge`, a profile). The
    /// item is being confirmed, so it is strengthened too.
    pub fn update_item(
        &mut self,
        id: ItemId,
        name: Option<&str>,
        body: Option<&str>,
    ) -> Result<()> {
        let now = self.now();
        let changed = self.write(|tx| {
            let n = tx
                .execute(
                    "UPDATE items SET name = coalesce(?2, name), body = coalesce(?3, body), \
                     name_norm = coalesce(?6, name_norm), last_used = ?4, score = 1.0, \
                     stability = stability + ?5 WHERE id = ?1",
                    params![id.0, name, body, now, CONFIRM_STABILITY, name.map(text::normalise)],
                )
                .map_err(sql)?;
            if let Some(body) = body {
                tx.execute(
                    "UPDATE items SET norm = ?2 WHERE id = ?1",
                    params![id.0, text::normalise(body)],
                )
                .map_err(sql)?;
            }
            Ok(n)
        })?;
        if changed == 0 {
            return Err(MemoryError::NotFound { what: "item", id: id.0 });
        }
        self.vectors.remove(Target::Item(id));
        Ok(())
    }

    /// Retires an item from recall; it stays readable (`show`, `list --archived`).
    pub fn archive(&mut self, id: ItemId, why: &str) -> Result<bool> {
        let done = self.write(|tx| archive_in(tx, id, why))?;
        self.vectors.remove(Target::Item(id));
        Ok(done)
    }

    /// Records that `new` corrects `old`, found after both were written (a dream's check of a
    /// new fact against the nearest one already held): `old` is archived as superseded with
    /// a link both ways, and `new` inherits how well `old` was known. Returns whether `old`
    /// was still active.
    pub fn supersede(&mut self, new: ItemId, old: ItemId) -> Result<bool> {
        if new == old {
            return Err(MemoryError::Invalid("an item cannot replace itself".into()));
        }
        let done = self.write(|tx| {
            // (stability, active) of an item.
            let state = |id: ItemId| {
                tx.query_row(
                    "SELECT stability, status = 'active' FROM items WHERE id = ?1",
                    [id.0],
                    |r| Ok((r.get::<_, f64>(0)?, r.get::<_, bool>(1)?)),
                )
                .optional()
                .map_err(sql)?
                .ok_or(MemoryError::NotFound { what: "item", id: id.0 })
            };
            let ((old_stability, _), (new_stability, new_active)) = (state(old)?, state(new)?);
            if !new_active || !archive_in(tx, old, "superseded")? {
                return Ok(false);
            }
            link(tx, new, old, "supersedes")?;
            tx.execute(
                "UPDATE items SET stability = ?2 WHERE id = ?1",
                params![new.0, old_stability.max(new_stability)],
            )
            .map_err(sql)?;
            Ok(true)
        })?;
        self.vectors.remove(Target::Item(old));
        Ok(done)
    }

    /// Links two items so recall spreads from one to the other.
    pub fn relate(&mut self, a: ItemId, b: ItemId) -> Result<()> {
        self.write(|tx| link(tx, a, b, "related"))
    }

    /// Deletes an item and everything of it: its row, its search entries, its vector, its
    /// links and provenance. Returns whether it existed.
    pub fn forget(&mut self, id: ItemId) -> Result<bool> {
        let changed =
            self.write(|tx| tx.execute("DELETE FROM items WHERE id = ?1", [id.0]).map_err(sql))?;
        self.vectors.remove(Target::Item(id));
        self.scrub()?;
        Ok(changed > 0)
    }

    /// Deletes everything memory holds: items, the conversation log, vectors, dreams.
    pub fn forget_all(&mut self) -> Result<()> {
        self.write(|tx| {
            tx.execute_batch(
                "DELETE FROM links; DELETE FROM provenance; DELETE FROM items;
                 DELETE FROM log; DELETE FROM sessions; DELETE FROM vectors; DELETE FROM dreams;
                 DELETE FROM log_fts; DELETE FROM tree_messages; DELETE FROM tree_fts;
                 DELETE FROM tree_nodes; DELETE FROM plan_items; DELETE FROM phases;
                 DELETE FROM tasks;",
            )
            .map_err(sql)
        })?;
        self.vectors.clear();
        self.scrub()?;
        self.conn.execute_batch("VACUUM").map_err(|e| self.err(e))
    }

    /// Counts an item as used: recalled and shown to the model. Its stability grows, so it
    /// fades more slowly from now on.
    pub fn reinforce(&mut self, ids: &[ItemId]) -> Result<()> {
        let now = self.now();
        self.write(|tx| {
            for id in ids {
                tx.execute(
                    "UPDATE items SET stability = stability + ?2, last_used = ?3 WHERE id = ?1",
                    params![id.0, crate::decay::RECALL_STABILITY, now],
                )
                .map_err(sql)?;
            }
            Ok(())
        })
    }

    /// Writes or rewrites the profile about `subject` ("assistant", "user", a speaker's name).
    pub fn set_profile(
        &mut self,
        subject: &str,
        body: &str,
        provenance: &[LogId],
    ) -> Result<ItemId> {
        let existing = self.profile(subject)?;
        match existing {
            Some(item) => {
                self.update_item(item.id, None, Some(body))?;
                let id = item.id;
                self.write(|tx| add_provenance(tx, id, provenance))?;
                Ok(id)
            }
            None => {
                let mut new = NewItem::new(Kind::Profile, format!("about {subject}"), body);
                new.subject = subject.to_owned();
                new.provenance = provenance.to_vec();
                Ok(self.remember(new)?.id())
            }
        }
    }

    pub fn profile(&self, subject: &str) -> Result<Option<Item>> {
        let filter = ItemFilter {
            kind: Some(Kind::Profile),
            subject: Some(subject.to_owned()),
            limit: Some(1),
            ..ItemFilter::default()
        };
        Ok(self.items(&filter)?.into_iter().next())
    }

    /// Records something to do or say later.
    pub fn add_intention(
        &mut self,
        body: &str,
        cue: Option<&str>,
        due: Option<Seconds>,
        priority: Option<&str>,
        provenance: &[LogId],
    ) -> Result<ItemId> {
        let mut new = NewItem::new(Kind::Intention, "", body);
        new.cue = cue.map(str::to_owned).filter(|c| !c.trim().is_empty());
        new.due = due;
        new.priority = priority.map(str::to_owned);
        new.provenance = provenance.to_vec();
        Ok(self.remember(new)?.id())
    }

    /// Ends an intention: `done` or `cancelled`. It is archived, not deleted.
    pub fn end_intention(&mut self, id: ItemId, state: &str) -> Result<()> {
        let changed = self.write(|tx| {
            let n = tx
                .execute(
                    "UPDATE items SET state = ?2 WHERE id = ?1 AND kind = 'intention'",
                    params![id.0, state],
                )
                .map_err(sql)?;
            archive_in(tx, id, state)?;
            Ok(n)
        })?;
        if changed == 0 {
            return Err(MemoryError::NotFound { what: "intention", id: id.0 });
        }
        self.vectors.remove(Target::Item(id));
        Ok(())
    }

    /// Open intentions for the prompt: those due by `now` first, then those whose cue is in
    /// `current` (what was just said), then the rest; each group by due time.
    pub fn intentions(&self, current: &str, now: Seconds) -> Result<Intentions> {
        let filter = ItemFilter { kind: Some(Kind::Intention), ..ItemFilter::default() };
        let mut open = self.items(&filter)?;
        open.sort_by(|a, b| {
            a.due.unwrap_or(f64::MAX).total_cmp(&b.due.unwrap_or(f64::MAX)).then(a.id.cmp(&b.id))
        });
        let mut out = Intentions::default();
        for item in open {
            if item.due.is_some_and(|due| due <= now) {
                out.due.push(item);
            } else if item.cue.as_deref().is_some_and(|cue| text::cue_matches(cue, current)) {
                out.cued.push(item);
            } else {
                out.rest.push(item);
            }
        }
        Ok(out)
    }
}

/// Open intentions, grouped for the prompt.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Intentions {
    pub due: Vec<Item>,
    pub cued: Vec<Item>,
    pub rest: Vec<Item>,
}
