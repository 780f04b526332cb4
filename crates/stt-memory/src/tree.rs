//! The memory tree: a conversation of any length in a context of bounded size.
//!
//! Chat messages go into a raw **buffer**. When it holds `raw_max` messages, its oldest
//! `compress` become one level-0 **node** (a summary written by the model, which sees the whole
//! context, so the summary states how things ended, not how they stood), and the buffer keeps
//! the rest. When a level holds `fanout_max` nodes not yet merged, its oldest `fanout_max / 2`
//! become one node of the level above, and so on upward. What the model is given is the
//! **context**: every node not merged yet (oldest first) and the raw buffer. Merged nodes leave
//! the context and stay in the tree, each with its children and, at level 0, its messages.
//!
//! A new conversation (`/new`, `clear`) **closes** the buffer: its messages leave the context
//! at once and are due for a summary however few they are, so the new conversation starts
//! with the summaries alone.
//!
//! This module keeps the shape; the model's work (the summaries) is the caller's: [`Store::
//! tree_due`] says what is due, the caller summarizes it, and [`Store::tree_compress`] or
//! [`Store::tree_merge`] writes the result in one transaction. A crash between the two
//! leaves the tree as it was, and the same job is due again.

use std::collections::BTreeMap;

use rusqlite::{OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};

use crate::log::{Role, sql};
use crate::{MemoryError, Result, Seconds, Store};

/// A node of the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NodeId(pub i64);

/// The tree's sizes: `[memory].tree_*`, whose defaults and checks are the config's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeRules {
    /// Raw messages the buffer may hold before its oldest are compressed.
    pub raw_max: usize,
    /// How many of the oldest messages one compression takes.
    pub compress: usize,
    /// Unmerged nodes a level may hold before its oldest half is merged.
    pub fanout_max: usize,
}

impl TreeRules {
    /// How many nodes one merge takes.
    pub fn merge(&self) -> usize {
        self.fanout_max / 2
    }
}

/// A raw message of the conversation, numbered across all of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TreeMessage {
    /// The message's place in the whole conversation, from 1.
    pub seq: i64,
    pub at: Seconds,
    pub role: Role,
    pub speaker: Option<String>,
    pub text: String,
}

/// What a summary learnt about the user besides the story: who they are, what they like,
/// what they are after. Each grows as the conversation goes on (a merge sees its children's).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fields {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub profile: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub preferences: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub goals: String,
    /// Keys this build does not know, kept as they were.
    #[serde(flatten)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

impl Fields {
    pub fn is_empty(&self) -> bool {
        self.profile.is_empty()
            && self.preferences.is_empty()
            && self.goals.is_empty()
            && self.extra.is_empty()
    }
}

/// A node: the summary of a stretch of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub id: NodeId,
    pub level: u32,
    /// The node it was merged into; `None` while it is still in the context.
    pub parent: Option<NodeId>,
    pub summary: String,
    pub fields: Fields,
    /// The messages it covers, first and last (`seq`).
    pub first_seq: i64,
    pub last_seq: i64,
    /// When the first and last of them were said.
    pub started: Seconds,
    pub ended: Seconds,
    pub created: Seconds,
}

/// What the model is given of the conversation: the nodes not merged yet, oldest first, and
/// the raw buffer after them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TreeContext {
    pub nodes: Vec<Node>,
    pub buffer: Vec<TreeMessage>,
}

/// What the tree needs next, if anything.
#[derive(Debug, Clone, PartialEq)]
pub enum TreeJob {
    /// Summarize these buffered messages (the oldest) into a level-0 node.
    Compress(Vec<TreeMessage>),
    /// Summarize these nodes (the oldest unmerged of `level`) into one of `level + 1`.
    Merge { level: u32, nodes: Vec<Node> },
}

/// Counts, for `memory stats` and the benchmark.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TreeStats {
    /// Raw messages, all of them and those still in the buffer (in the context).
    pub messages: i64,
    pub buffered: i64,
    /// Nodes per level (index = level), all and still in the context.
    pub nodes: Vec<i64>,
    pub unmerged: Vec<i64>,
}

const NODE_COLUMNS: &str =
    "id, level, parent, summary, fields, first_seq, last_seq, started, ended, created";

fn node_of(row: &Row<'_>) -> rusqlite::Result<Node> {
    let fields: String = row.get(4)?;
    Ok(Node {
        id: NodeId(row.get(0)?),
        level: row.get(1)?,
        parent: row.get::<_, Option<i64>>(2)?.map(NodeId),
        summary: row.get(3)?,
        fields: serde_json::from_str(&fields).unwrap_or_default(),
        first_seq: row.get(5)?,
        last_seq: row.get(6)?,
        started: row.get(7)?,
        ended: row.get(8)?,
        created: row.get(9)?,
    })
}

/// The FTS5 query [`Store::tree_recall`] asks: any two of the text's content words (the first
/// eight), or its one.
fn recall_query(text: &str) -> Option<String> {
    let words: Vec<String> = crate::text::content_words(text).into_iter().take(8).collect();
    let quoted = |w: &String| format!("\"{w}\"");
    match words.as_slice() {
        [] => None,
        [one] => Some(quoted(one)),
        _ => {
            let mut pairs = Vec::new();
            for (i, a) in words.iter().enumerate() {
                for b in &words[i + 1..] {
                    pairs.push(format!("({} AND {})", quoted(a), quoted(b)));
                }
            }
            Some(pairs.join(" OR "))
        }
    }
}

fn message_of(row: &Row<'_>) -> rusqlite::Result<TreeMessage> {
    let role: String = row.get(2)?;
    Ok(TreeMessage {
        seq: row.get(0)?,
        at: row.get(1)?,
        role: Role::parse(&role),
        speaker: row.get(3)?,
        text: row.get(4)?,
    })
}

impl Store {
    /// Adds a message to the buffer; returns its place in the conversation.
    pub fn tree_push(&mut self, role: Role, speaker: Option<&str>, text: &str) -> Result<i64> {
        let now = self.now();
        self.write(|tx| {
            tx.execute(
                "INSERT INTO tree_messages(at, role, speaker, text) VALUES (?1, ?2, ?3, ?4)",
                params![now, role.as_str(), speaker, text],
            )
            .map_err(sql)?;
            Ok(tx.last_insert_rowid())
        })
    }

    /// What the model is given now.
    pub fn tree_context(&self) -> Result<TreeContext> {
        let nodes = self.nodes_where("parent IS NULL ORDER BY first_seq", [])?;
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT seq, at, role, speaker, text FROM tree_messages \
                 WHERE node IS NULL AND closed = 0 ORDER BY seq",
            )
            .map_err(sql)?;
        let buffer = stmt
            .query_map([], message_of)
            .map_err(sql)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(sql)?;
        Ok(TreeContext { nodes, buffer })
    }

    /// Closes the buffer (a new conversation starts): its messages leave the context and
    /// are due for a summary. Returns how many.
    pub fn tree_close(&mut self) -> Result<usize> {
        self.write(|tx| {
            tx.execute("UPDATE tree_messages SET closed = 1 WHERE node IS NULL AND closed = 0", [])
                .map_err(sql)
        })
    }

    /// The next compression or merge `rules` call for, compressions first (the buffer is
    /// what grows with every turn): closed messages (up to `compress` of them), then the
    /// oldest `compress` of a buffer that reached `raw_max`.
    pub fn tree_due(&self, rules: &TreeRules) -> Result<Option<TreeJob>> {
        let (buffered, closed): (i64, i64) = self
            .conn
            .query_row(
                "SELECT count(*), count(*) FILTER (WHERE closed = 1) FROM tree_messages \
                 WHERE node IS NULL",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(sql)?;
        if closed > 0 || (buffered - closed) as usize >= rules.raw_max {
            let take =
                if closed > 0 { (closed as usize).min(rules.compress) } else { rules.compress };
            let mut stmt = self
                .conn
                .prepare_cached(
                    "SELECT seq, at, role, speaker, text FROM tree_messages WHERE node IS NULL \
                     ORDER BY seq LIMIT ?1",
                )
                .map_err(sql)?;
            let oldest = stmt
                .query_map([take as i64], message_of)
                .map_err(sql)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(sql)?;
            return Ok(Some(TreeJob::Compress(oldest)));
        }
        let full: Option<u32> = self
            .conn
            .query_row(
                "SELECT level FROM tree_nodes WHERE parent IS NULL GROUP BY level \
                 HAVING count(*) >= ?1 ORDER BY level LIMIT 1",
                [rules.fanout_max as i64],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql)?;
        let Some(level) = full else { return Ok(None) };
        let nodes = self.nodes_where(
            "parent IS NULL AND level = ?1 ORDER BY first_seq LIMIT ?2",
            params![level, rules.merge() as i64],
        )?;
        Ok(Some(TreeJob::Merge { level, nodes }))
    }

    /// Writes the summary of the buffered messages `first..=last` as a level-0 node: they
    /// leave the buffer. Refused unless they are the oldest in the buffer, all still there.
    pub fn tree_compress(
        &mut self,
        first: i64,
        last: i64,
        summary: &str,
        fields: &Fields,
    ) -> Result<NodeId> {
        let now = self.now();
        self.write(|tx| {
            let (oldest, count, started, ended): (Option<i64>, i64, Option<f64>, Option<f64>) = tx
                .query_row(
                    "SELECT (SELECT min(seq) FROM tree_messages WHERE node IS NULL), \
                     count(*), min(at), max(at) FROM tree_messages \
                     WHERE node IS NULL AND seq BETWEEN ?1 AND ?2",
                    params![first, last],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                )
                .map_err(sql)?;
            let whole = last >= first && count == last - first + 1 && oldest == Some(first);
            let (Some(started), Some(ended), true) = (started, ended, whole) else {
                return Err(MemoryError::Invalid(format!(
                    "messages {first}..{last} are not the oldest in the tree's buffer"
                )));
            };
            let id = insert_node(tx, 0, summary, fields, (first, last), (started, ended), now)?;
            tx.execute(
                "UPDATE tree_messages SET node = ?1 WHERE seq BETWEEN ?2 AND ?3",
                params![id.0, first, last],
            )
            .map_err(sql)?;
            Ok(id)
        })
    }

    /// Writes the summary of `children` (the oldest unmerged nodes of one level) as one node
    /// of the level above: they leave the context. Refused unless they are that.
    pub fn tree_merge(
        &mut self,
        children: &[NodeId],
        summary: &str,
        fields: &Fields,
    ) -> Result<NodeId> {
        let now = self.now();
        self.write(|tx| {
            let Some(first) = children.first() else {
                return Err(MemoryError::Invalid("a merge needs nodes".into()));
            };
            let level: u32 = tx
                .query_row("SELECT level FROM tree_nodes WHERE id = ?1", [first.0], |r| r.get(0))
                .optional()
                .map_err(sql)?
                .ok_or(MemoryError::NotFound { what: "tree node", id: first.0 })?;
            let mut stmt = tx
                .prepare_cached(
                    "SELECT id FROM tree_nodes WHERE parent IS NULL AND level = ?1 \
                     ORDER BY first_seq LIMIT ?2",
                )
                .map_err(sql)?;
            let oldest = stmt
                .query_map(params![level, children.len() as i64], |r| Ok(NodeId(r.get(0)?)))
                .map_err(sql)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(sql)?;
            if oldest != children {
                return Err(MemoryError::Invalid(format!(
                    "nodes {children:?} are not the oldest unmerged of level {level}"
                )));
            }
            let span: (i64, i64, f64, f64) = tx
                .query_row(
                    &format!(
                        "SELECT min(first_seq), max(last_seq), min(started), max(ended) \
                         FROM tree_nodes WHERE id IN ({})",
                        ids_list(children)
                    ),
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                )
                .map_err(sql)?;
            let id = insert_node(
                tx,
                level + 1,
                summary,
                fields,
                (span.0, span.1),
                (span.2, span.3),
                now,
            )?;
            tx.execute(
                &format!("UPDATE tree_nodes SET parent = ?1 WHERE id IN ({})", ids_list(children)),
                [id.0],
            )
            .map_err(sql)?;
            Ok(id)
        })
    }

    /// The fields of the newest node still in the context that has any (what the
    /// conversation has taught so far), without reading the rest of the context: a prompt
    /// asks for them on every turn.
    pub fn tree_fields(&self) -> Result<Option<Fields>> {
        let newest = self
            .nodes_where("parent IS NULL AND fields != '{}' ORDER BY last_seq DESC LIMIT 1", [])?;
        Ok(newest.into_iter().next().map(|n| n.fields).filter(|f| !f.is_empty()))
    }

    /// One node.
    pub fn tree_node(&self, id: NodeId) -> Result<Node> {
        self.nodes_where("id = ?1", [id.0])?
            .pop()
            .ok_or(MemoryError::NotFound { what: "tree node", id: id.0 })
    }

    /// A node's children, oldest first (none for level 0: see [`Store::tree_messages`]).
    pub fn tree_children(&self, id: NodeId) -> Result<Vec<Node>> {
        self.nodes_where("parent = ?1 ORDER BY first_seq", [id.0])
    }

    /// The raw messages a level-0 node was made from.
    pub fn tree_messages(&self, id: NodeId) -> Result<Vec<TreeMessage>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT seq, at, role, speaker, text FROM tree_messages WHERE node = ?1 \
                 ORDER BY seq",
            )
            .map_err(sql)?;
        stmt.query_map([id.0], message_of)
            .map_err(sql)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(sql)
    }

    /// What was said earlier in the conversation that bears on `text`, word for word: at most
    /// `limit` messages that have left the context (summarized, or closed with an earlier
    /// conversation), best match first. A message must share two of `text`'s content words
    /// (its only one, when it has one), by stem ("parked" answers "park"); a message that says
    /// `text` again is left out.
    pub fn tree_recall(&self, text: &str, limit: usize) -> Result<Vec<TreeMessage>> {
        let Some(query) = recall_query(text) else { return Ok(Vec::new()) };
        // Out of the context is older than the open buffer's first message.
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT m.seq, m.at, m.role, m.speaker, m.text FROM tree_fts f \
                 JOIN tree_messages m ON m.seq = f.rowid \
                 WHERE tree_fts MATCH ?1 AND f.rowid < coalesce((SELECT min(seq) \
                 FROM tree_messages WHERE node IS NULL AND closed = 0), 1 << 62) \
                 ORDER BY bm25(tree_fts), m.seq DESC LIMIT ?2",
            )
            .map_err(sql)?;
        let said = crate::text::normalise(text);
        let found = stmt
            .query_map(params![query, (limit + 2) as i64], message_of)
            .map_err(sql)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(sql)?;
        Ok(found
            .into_iter()
            .filter(|m| crate::text::normalise(&m.text) != said)
            .take(limit)
            .collect())
    }

    /// The tree's counts.
    pub fn tree_stats(&self) -> Result<TreeStats> {
        let (messages, buffered): (i64, i64) = self
            .conn
            .query_row(
                "SELECT count(*), count(*) FILTER (WHERE node IS NULL AND closed = 0) \
                 FROM tree_messages",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(sql)?;
        let mut stats = TreeStats { messages, buffered, ..TreeStats::default() };
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT level, count(*), count(*) FILTER (WHERE parent IS NULL) \
                 FROM tree_nodes GROUP BY level ORDER BY level",
            )
            .map_err(sql)?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, usize>(0)?, r.get::<_, i64>(1)?, r.get(2)?)))
            .map_err(sql)?;
        for row in rows {
            let (level, all, unmerged) = row.map_err(sql)?;
            stats.nodes.resize(level + 1, 0);
            stats.unmerged.resize(level + 1, 0);
            stats.nodes[level] = all;
            stats.unmerged[level] = unmerged;
        }
        Ok(stats)
    }

    fn nodes_where(&self, condition: &str, params: impl rusqlite::Params) -> Result<Vec<Node>> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!("SELECT {NODE_COLUMNS} FROM tree_nodes WHERE {condition}"))
            .map_err(sql)?;
        stmt.query_map(params, node_of)
            .map_err(sql)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(sql)
    }
}

fn ids_list(ids: &[NodeId]) -> String {
    ids.iter().map(|id| id.0.to_string()).collect::<Vec<_>>().join(",")
}

fn insert_node(
    tx: &rusqlite::Transaction<'_>,
    level: u32,
    summary: &str,
    fields: &Fields,
    (first_seq, last_seq): (i64, i64),
    (started, ended): (f64, f64),
    now: f64,
) -> Result<NodeId> {
    let fields = serde_json::to_string(fields).unwrap_or_else(|_| "{}".into());
    tx.execute(
        "INSERT INTO tree_nodes(level, summary, fields, first_seq, last_seq, started, ended, \
         created) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![level, summary, fields, first_seq, last_seq, started, ended, now],
    )
    .map_err(sql)?;
    Ok(NodeId(tx.last_insert_rowid()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("memory.db")).unwrap();
        (dir, store)
    }

    /// Does every job the tree asks for, with summaries that name what they cover.
    fn settle(store: &mut Store, rules: &TreeRules) {
        while let Some(job) = store.tree_due(rules).unwrap() {
            match job {
                TreeJob::Compress(messages) => {
                    assert_eq!(messages.len(), rules.compress);
                    let (first, last) = (messages[0].seq, messages[messages.len() - 1].seq);
                    store
                        .tree_compress(first, last, &format!("{first}-{last}"), &Fields::default())
                        .unwrap();
                }
                TreeJob::Merge { nodes, .. } => {
                    assert_eq!(nodes.len(), rules.merge());
                    let ids: Vec<NodeId> = nodes.iter().map(|n| n.id).collect();
                    let summary: Vec<&str> = nodes.iter().map(|n| n.summary.as_str()).collect();
                    store.tree_merge(&ids, &summary.join("+"), &Fields::default()).unwrap();
                }
            }
        }
    }

    /// Nodes a level gets from `n` below it, and how many of them stay unmerged.
    fn expected(below: i64, threshold: i64, take: i64) -> i64 {
        if below < threshold { 0 } else { 1 + (below - threshold) / take }
    }

    #[test]
    fn the_buffer_and_the_levels_follow_the_rules_exactly() {
        let (_dir, mut store) = store();
        // The config's defaults.
        let rules = TreeRules { raw_max: 60, compress: 40, fanout_max: 8 };
        let total = 3000;
        for n in 1..=total {
            let role = if n % 2 == 1 { Role::User } else { Role::Assistant };
            store.tree_push(role, None, &format!("message {n}")).unwrap();
            settle(&mut store, &rules);
            let stats = store.tree_stats().unwrap();
            assert!(stats.buffered < rules.raw_max as i64, "{n}: {stats:?}");
            assert!(stats.unmerged.iter().all(|&u| u < rules.fanout_max as i64), "{n}: {stats:?}");
        }
        let stats = store.tree_stats().unwrap();
        // 60/40/20: a compression at 60 messages, then one per 40 more.
        let level0 = expected(total, 60, 40);
        assert_eq!(stats.buffered, total - 40 * level0);
        // 8 → 4: a merge when a level holds 8, then one per 4 more.
        let mut want = vec![level0];
        while let Some(&below) = want.last().filter(|&&n| n >= 8) {
            want.push(expected(below, 8, 4));
        }
        assert_eq!(stats.nodes, want, "{stats:?}");
        let unmerged: Vec<i64> =
            want.iter().enumerate().map(|(i, n)| n - 4 * want.get(i + 1).unwrap_or(&0)).collect();
        assert_eq!(stats.unmerged, unmerged);
        // The context: every unmerged node, oldest first, covering the conversation up to
        // the buffer without a gap.
        let context = store.tree_context().unwrap();
        let mut next = 1;
        for node in &context.nodes {
            assert_eq!(node.first_seq, next, "{:?}", context.nodes);
            next = node.last_seq + 1;
        }
        assert_eq!(context.buffer[0].seq, next);
        assert_eq!(context.buffer.last().unwrap().text, format!("message {total}"));
    }

    #[test]
    fn a_node_leads_to_its_children_and_down_to_the_messages() {
        let (_dir, mut store) = store();
        let rules = TreeRules { raw_max: 6, compress: 4, fanout_max: 4 };
        for n in 1..=30 {
            store.tree_push(Role::User, Some("Ana"), &format!("m{n}")).unwrap();
            settle(&mut store, &rules);
        }
        let context = store.tree_context().unwrap();
        let top = context.nodes.iter().find(|n| n.level == 1).expect("a merged node");
        assert_eq!(top.summary, "1-4+5-8");
        let children = store.tree_children(top.id).unwrap();
        assert_eq!(children.iter().map(|c| c.summary.as_str()).collect::<Vec<_>>(), ["1-4", "5-8"]);
        assert!(children.iter().all(|c| c.parent == Some(top.id)));
        let said = store.tree_messages(children[1].id).unwrap();
        assert_eq!(
            said.iter().map(|m| m.text.as_str()).collect::<Vec<_>>(),
            ["m5", "m6", "m7", "m8"]
        );
        assert_eq!(said[0].speaker.as_deref(), Some("Ana"));
        assert_eq!((top.first_seq, top.last_seq), (1, 8));
    }

    #[test]
    fn the_tree_and_its_buffer_survive_a_restart_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.db");
        let rules = TreeRules { raw_max: 6, compress: 4, fanout_max: 4 };
        let before = {
            let mut store = Store::open(&path).unwrap();
            for n in 1..=23 {
                store.tree_push(Role::User, None, &format!("m{n}")).unwrap();
                settle(&mut store, &rules);
            }
            let fields = Fields { goals: "learn the cello".into(), ..Fields::default() };
            if let Some(TreeJob::Compress(m)) =
                store.tree_due(&TreeRules { raw_max: 2, ..rules }).unwrap()
            {
                store.tree_compress(m[0].seq, m[m.len() - 1].seq, "with fields", &fields).unwrap();
            }
            store.tree_context().unwrap()
        };
        let store = Store::open(&path).unwrap();
        assert_eq!(store.tree_context().unwrap(), before);
        assert_eq!(before.nodes.last().unwrap().fields.goals, "learn the cello");
    }

    #[test]
    fn jobs_done_out_of_order_are_refused_and_change_nothing() {
        let (_dir, mut store) = store();
        for n in 1..=8 {
            store.tree_push(Role::User, None, &format!("m{n}")).unwrap();
        }
        let err = store.tree_compress(2, 5, "s", &Fields::default()).unwrap_err();
        assert!(matches!(err, MemoryError::Invalid(_)), "{err}");
        assert!(store.tree_compress(1, 20, "s", &Fields::default()).is_err(), "past the end");
        let a = store.tree_compress(1, 2, "a", &Fields::default()).unwrap();
        let b = store.tree_compress(3, 4, "b", &Fields::default()).unwrap();
        assert!(store.tree_compress(1, 2, "again", &Fields::default()).is_err());
        assert!(store.tree_merge(&[b], "not the oldest", &Fields::default()).is_err());
        assert!(store.tree_merge(&[], "nothing", &Fields::default()).is_err());
        store.tree_merge(&[a, b], "ab", &Fields::default()).unwrap();
        let stats = store.tree_stats().unwrap();
        assert_eq!(
            (stats.buffered, stats.nodes.clone(), stats.unmerged),
            (4, vec![2, 1], vec![0, 1])
        );
    }

    #[test]
    fn a_closed_buffer_leaves_the_context_and_is_summarized_however_short() {
        let (_dir, mut store) = store();
        let rules = TreeRules { raw_max: 6, compress: 4, fanout_max: 4 };
        for n in 1..=7 {
            store.tree_push(Role::User, None, &format!("m{n}")).unwrap();
        }
        // 7 buffered: one compression of 4 is due; closing makes all 7 due, 4 at a time.
        assert_eq!(store.tree_close().unwrap(), 7);
        assert!(store.tree_context().unwrap().buffer.is_empty());
        store.tree_push(Role::User, None, "a new conversation").unwrap();
        let mut sizes = Vec::new();
        while let Some(TreeJob::Compress(m)) = store.tree_due(&rules).unwrap() {
            sizes.push(m.len());
            let (first, last) = (m[0].seq, m[m.len() - 1].seq);
            store.tree_compress(first, last, "s", &Fields::default()).unwrap();
        }
        assert_eq!(sizes, [4, 3]);
        let context = store.tree_context().unwrap();
        assert_eq!(context.nodes.len(), 2);
        assert_eq!(
            context.buffer.iter().map(|m| m.text.as_str()).collect::<Vec<_>>(),
            ["a new conversation"]
        );
        assert_eq!(store.tree_stats().unwrap().buffered, 1);
        assert_eq!(store.tree_close().unwrap(), 1);
        assert_eq!(store.tree_close().unwrap(), 0, "nothing left to close");
    }

    #[test]
    fn what_left_the_context_comes_back_by_its_words() {
        let (_dir, mut store) = store();
        let said = [
            "Give me a name for a grey cat.",
            "Misty.",
            "My locker code is 4417.",
            "Noted.",
            "I parked the car on level 3, in spot B12.",
            "OK.",
            "What is my locker code?",
            "It is 4417.",
        ];
        for (n, text) in said.iter().enumerate() {
            let role = if n % 2 == 0 { Role::User } else { Role::Assistant };
            store.tree_push(role, None, text).unwrap();
        }
        let recall = |store: &Store, q: &str| -> Vec<String> {
            store.tree_recall(q, 3).unwrap().into_iter().map(|m| m.text).collect()
        };
        assert!(recall(&store, "What is my locker code?").is_empty(), "all still in the context");
        store.tree_compress(1, 6, "small talk", &Fields::default()).unwrap();
        assert_eq!(recall(&store, "What is my locker code?"), ["My locker code is 4417."]);
        assert_eq!(
            recall(&store, "In which spot did I park the car?"),
            ["I parked the car on level 3, in spot B12."],
            "by stem"
        );
        assert!(recall(&store, "What colour is my car?").is_empty(), "one word of two");
        assert!(recall(&store, "Is it raining?").is_empty());
        // The same question asked before is no answer to it.
        store.tree_compress(7, 8, "the code again", &Fields::default()).unwrap();
        assert_eq!(recall(&store, "what is my locker code"), ["My locker code is 4417."]);
        // An earlier conversation's messages are out of the context once it is closed.
        store.tree_push(Role::User, None, "The wifi password is bluefalcon.").unwrap();
        assert!(recall(&store, "wifi password?").is_empty());
        store.tree_close().unwrap();
        assert_eq!(recall(&store, "wifi password?"), ["The wifi password is bluefalcon."]);
        store.forget_all().unwrap();
        assert!(recall(&store, "wifi password?").is_empty(), "forgotten means gone");
        let indexed: i64 =
            store.conn.query_row("SELECT count(*) FROM tree_fts", [], |r| r.get(0)).unwrap();
        assert_eq!(indexed, 0);
    }

    #[test]
    fn the_newest_fields_in_the_context_are_what_the_conversation_taught() {
        let (_dir, mut store) = store();
        assert_eq!(store.tree_fields().unwrap(), None);
        for n in 1..=6 {
            store.tree_push(Role::User, None, &format!("m{n}")).unwrap();
        }
        let goals = |g: &str| Fields { goals: g.into(), ..Fields::default() };
        let a = store.tree_compress(1, 2, "a", &goals("learn the cello")).unwrap();
        let b = store.tree_compress(3, 4, "b", &goals("play in a band")).unwrap();
        store.tree_compress(5, 6, "c", &Fields::default()).unwrap();
        assert_eq!(store.tree_fields().unwrap(), Some(goals("play in a band")));
        // Merged away, a node's fields go with it: the merge's own are what counts.
        store.tree_merge(&[a, b], "ab", &Fields::default()).unwrap();
        assert_eq!(store.tree_fields().unwrap(), None);
    }

    #[test]
    fn forgetting_everything_empties_the_tree() {
        let (_dir, mut store) = store();
        store.tree_push(Role::User, None, "my locker code is 4417").unwrap();
        store.tree_push(Role::Assistant, None, "Noted.").unwrap();
        store.tree_compress(1, 1, "the locker code is 4417", &Fields::default()).unwrap();
        store.forget_all().unwrap();
        assert_eq!(store.tree_stats().unwrap(), TreeStats::default());
        assert_eq!(store.tree_context().unwrap(), TreeContext::default());
    }
}
