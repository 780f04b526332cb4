//! Finding things again: one scorer for the recall tools and the associative hints.
//!
//! For a query, candidates come from four pools: the best BM25 matches (FTS5) among active
//! items and among log entries, and the nearest vectors among each. Every candidate gets
//!
//! ```text
//! relevance = keyword × bm25 / best bm25 of its pool  +  meaning × max(cosine, 0)
//! score     = relevance × (0.5 + 0.5 × item score)      (log entries: × 1)
//! ```
//!
//! then one hop of spreading: an item's linked items, and a log entry's neighbouring turns,
//! get `spread × score` when that beats their own. Without a query vector (embeddings off)
//! the keyword part is the whole relevance.
//!
//! Hints ([`HintGate`]) take the ranked hits with score ≥ 0.52 that were not hinted yet in
//! this session: the top one when it leads the next by ≥ 0.04, both when exactly two are
//! that close, nothing when three or more are (the cue is ambiguous).

use std::collections::{HashMap, HashSet};

use rusqlite::params;
use serde::{Deserialize, Serialize};

use crate::{ItemId, Kind, LogId, Result, Seconds, SessionId, Store, text};

/// What a hit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", content = "id", rename_all = "snake_case")]
pub enum Target {
    Item(ItemId),
    Log(LogId),
}

/// How the parts of the score are mixed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights {
    pub keyword: f32,
    pub meaning: f32,
    /// The share of a hit's score its links and neighbours get.
    pub spread: f32,
    /// The weight of a log entry's context (its neighbours, its date) against its own words.
    pub context: f32,
}

impl Default for Weights {
    fn default() -> Self {
        Weights { keyword: 0.35, meaning: 0.65, spread: 0.6, context: 0.8 }
    }
}

impl Weights {
    /// Words only (the BM25 baseline, and recall while embeddings are off).
    pub fn keyword_only() -> Self {
        Weights { keyword: 1.0, meaning: 0.0, spread: 0.0, ..Weights::default() }
    }

    /// Meaning only (the embedding baseline).
    pub fn meaning_only() -> Self {
        Weights { keyword: 0.0, meaning: 1.0, spread: 0.0, ..Weights::default() }
    }
}

/// A search.
#[derive(Debug, Clone, PartialEq)]
pub struct Query<'a> {
    pub text: &'a str,
    /// The text's embedding, by the model the store uses.
    pub vector: Option<&'a [f32]>,
    pub limit: usize,
    /// Search items.
    pub items: bool,
    /// Search the conversation log.
    pub log: bool,
    /// Leave out this session's own entries (what the model already sees).
    pub exclude_session: Option<SessionId>,
    pub weights: Weights,
}

impl<'a> Query<'a> {
    pub fn new(text: &'a str) -> Self {
        Query {
            text,
            vector: None,
            limit: 10,
            items: true,
            log: true,
            exclude_session: None,
            weights: Weights::default(),
        }
    }
}

/// One result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    pub target: Target,
    pub score: f32,
    /// The keyword part, 0–1 (BM25 over the best of its pool).
    pub keyword: f32,
    /// The cosine to the query, when both have a vector.
    pub meaning: f32,
    /// The item's text, or the entry as a line ("Caroline: …").
    pub text: String,
    /// When the item was made, or the entry said.
    pub at: Seconds,
    pub kind: Option<Kind>,
    /// Where it came from: the entry's reference, or each entry of the item's provenance.
    pub sources: Vec<String>,
    /// What this item corrected, oldest first.
    pub previous: Vec<String>,
}

/// How many candidates each pool gives.
const POOL: usize = 50;

#[derive(Debug, Default, Clone, Copy)]
struct Candidate {
    keyword: f32,
    meaning: Option<f32>,
    score: f32,
}

impl Store {
    /// Ranks items and log entries against `query`, best first.
    pub fn recall(&self, query: &Query<'_>) -> Result<Vec<Hit>> {
        let w = query.weights;
        let vector = query
            .vector
            .filter(|_| self.vectors.model().is_some() && w.meaning > 0.0)
            .and_then(|v| self.vectors.query(v));
        let mut pool: HashMap<crate::Target, Candidate> = HashMap::new();
        if let Some(fts) = text::fts_query(query.text).filter(|_| w.keyword > 0.0) {
            if query.items {
                for (id, kw) in self.keyword_items(&fts)? {
                    pool.entry(Target::Item(id)).or_default().keyword = kw;
                }
            }
            if query.log {
                for (id, kw) in self.keyword_log(&fts, w.context, query.exclude_session)? {
                    pool.entry(Target::Log(id)).or_default().keyword = kw;
                }
            }
        }
        if let Some(v) = &vector {
            if query.items {
                for (id, cos) in self.vectors.top_items(v, POOL) {
                    pool.entry(Target::Item(id)).or_default().meaning = Some(cos);
                }
            }
            if query.log {
                let excluded = self.session_entries(query.exclude_session)?;
                for (id, cos) in self.vectors.top_logs(v, POOL + excluded.len()) {
                    if !excluded.contains(&id) {
                        pool.entry(Target::Log(id)).or_default().meaning = Some(cos);
                    }
                }
            }
        }
        let keyword_weight = if vector.is_some() { w.keyword } else { 1.0 };
        for (target, c) in &mut pool {
            let meaning = match (c.meaning, &vector) {
                (Some(m), _) => m,
                (None, Some(v)) => self.vectors.cosine(*target, v).unwrap_or(0.0),
                (None, None) => 0.0,
            };
            c.meaning = Some(meaning);
            let relevance = keyword_weight * c.keyword
                + if vector.is_some() { w.meaning * meaning.max(0.0) } else { 0.0 };
            c.score = relevance * self.weight(*target)?;
        }
        if w.spread > 0.0 {
            let mut spread: Vec<(Target, f32)> = Vec::new();
            for (target, c) in &pool {
                for next in self.neighbours(*target, query.exclude_session)? {
                    spread.push((next, c.score * w.spread));
                }
            }
            for (target, score) in spread {
                let c = pool.entry(target).or_default();
                if score > c.score {
                    c.score = score;
                }
            }
        }
        let mut ranked: Vec<(Target, Candidate)> = pool.into_iter().collect();
        ranked.sort_by(|a, b| b.1.score.total_cmp(&a.1.score).then(a.0.cmp(&b.0)));
        ranked.truncate(query.limit);
        ranked.into_iter().map(|(target, c)| self.hydrate(target, c)).collect()
    }

    /// Associative hints for what was just said or done: empty without a vector (words alone
    /// are too noisy to interrupt with), else what `gate` lets through, skipping `seen`, the
    /// current session's own entries, what says `text` again word for word (the same
    /// command repeated is no association), and the lines of past commands (a command said
    /// again in other words is not one either: the recall tools still find them).
    pub fn hints(
        &self,
        text: &str,
        vector: Option<&[f32]>,
        session: Option<SessionId>,
        seen: &HashSet<Target>,
        gate: &HintGate,
    ) -> Result<Vec<Hit>> {
        let Some(vector) = vector.filter(|_| self.has_vectors()) else { return Ok(Vec::new()) };
        let query = Query {
            vector: Some(vector),
            limit: 8 + seen.len(),
            exclude_session: session,
            ..Query::new(text)
        };
        let mut ranked = self.recall(&query)?;
        let said = text::normalise(text);
        ranked.retain(|h| said.is_empty() || !text::normalise(&h.text).ends_with(&said));
        let mut kept = Vec::with_capacity(ranked.len());
        for hit in ranked {
            if let Target::Log(id) = hit.target {
                let session = self.entry(id)?.session;
                if self.session(session)?.kind == crate::SessionKind::Command {
                    continue;
                }
            }
            kept.push(hit);
        }
        let ranked = kept;
        Ok(gate.choose(&ranked, seen).into_iter().cloned().collect())
    }

    fn keyword_items(&self, fts: &str) -> Result<Vec<(ItemId, f32)>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                // FTS5 alone, then the status by key: joined to `items`, SQLite may walk
                // the whole table and ask the index about each row.
                "SELECT rowid, -bm25(items_fts, 2.0, 1.0, 1.0) AS s FROM items_fts \
                 WHERE items_fts MATCH ?1 ORDER BY s DESC LIMIT ?2",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![fts, 2 * POOL as i64], |r| {
                Ok((ItemId(r.get(0)?), r.get::<_, f64>(1)?))
            })
            .map_err(|e| self.err(e))?;
        let rows = rows.collect::<rusqlite::Result<Vec<_>>>().map_err(|e| self.err(e))?;
        let mut active = self
            .conn
            .prepare_cached("SELECT status = 'active' FROM items WHERE id = ?1")
            .map_err(|e| self.err(e))?;
        let mut kept = Vec::with_capacity(POOL);
        for (id, s) in rows {
            if active.query_row([id.0], |r| r.get::<_, bool>(0)).unwrap_or(false) {
                kept.push((id, s));
                if kept.len() == POOL {
                    break;
                }
            }
        }
        normalised(kept)
    }

    fn keyword_log(
        &self,
        fts: &str,
        context: f32,
        exclude: Option<SessionId>,
    ) -> Result<Vec<(LogId, f32)>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT f.rowid, -bm25(log_fts, 1.0, ?2) AS s FROM log_fts f \
                 WHERE log_fts MATCH ?1 \
                 AND (?4 IS NULL OR f.rowid NOT IN (SELECT id FROM log WHERE session = ?4)) \
                 ORDER BY s DESC LIMIT ?3",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![fts, f64::from(context), POOL as i64, exclude.map(|s| s.0)], |r| {
                Ok((LogId(r.get(0)?), r.get::<_, f64>(1)?))
            })
            .map_err(|e| self.err(e))?;
        normalised(rows.collect::<rusqlite::Result<Vec<_>>>().map_err(|e| self.err(e))?)
    }

    fn session_entries(&self, session: Option<SessionId>) -> Result<HashSet<LogId>> {
        let Some(session) = session else { return Ok(HashSet::new()) };
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id FROM log WHERE session = ?1")
            .map_err(|e| self.err(e))?;
        let rows =
            stmt.query_map([session.0], |r| Ok(LogId(r.get(0)?))).map_err(|e| self.err(e))?;
        rows.collect::<rusqlite::Result<_>>().map_err(|e| self.err(e))
    }

    /// An item's score mixed in (0.5–1); log entries weigh 1.
    fn weight(&self, target: Target) -> Result<f32> {
        let Target::Item(id) = target else { return Ok(1.0) };
        let score: f64 = self
            .conn
            .prepare_cached("SELECT score FROM items WHERE id = ?1")
            .and_then(|mut s| s.query_row([id.0], |r| r.get(0)))
            .map_err(|e| self.err(e))?;
        Ok(0.5 + 0.5 * score.clamp(0.0, 1.0) as f32)
    }

    /// Where spreading goes from a hit: an item's active related items; a log entry's turns
    /// just before and after it.
    fn neighbours(&self, target: Target, exclude: Option<SessionId>) -> Result<Vec<Target>> {
        let (sql, id) = match target {
            // Two plain lookups by key; an OR or a join on a CASE here had SQLite walk every
            // item for every hit.
            Target::Item(id) => (
                "SELECT dst FROM links WHERE src = ?1 AND kind = 'related' \
                 AND (SELECT status FROM items WHERE id = dst) = 'active' \
                 UNION SELECT src FROM links WHERE dst = ?1 AND kind = 'related' \
                 AND (SELECT status FROM items WHERE id = src) = 'active'",
                id.0,
            ),
            Target::Log(id) => (
                "SELECT n.id FROM log o JOIN log n ON n.session = o.session \
                 AND n.seq IN (o.seq - 1, o.seq + 1) WHERE o.id = ?1 \
                 AND (?2 IS NULL OR n.session != ?2)",
                id.0,
            ),
        };
        let mut stmt = self.conn.prepare_cached(sql).map_err(|e| self.err(e))?;
        let exclude = exclude.map(|s| s.0);
        let ids: rusqlite::Result<Vec<i64>> = match target {
            Target::Item(_) => {
                stmt.query_map(params![id], |r| r.get(0)).and_then(Iterator::collect)
            }
            Target::Log(_) => {
                stmt.query_map(params![id, exclude], |r| r.get(0)).and_then(Iterator::collect)
            }
        };
        let ids = ids.map_err(|e| self.err(e))?;
        Ok(ids
            .into_iter()
            .map(|n| match target {
                Target::Item(_) => Target::Item(ItemId(n)),
                Target::Log(_) => Target::Log(LogId(n)),
            })
            .collect())
    }

    fn hydrate(&self, target: Target, c: Candidate) -> Result<Hit> {
        let mut hit = Hit {
            target,
            score: c.score,
            keyword: c.keyword,
            meaning: c.meaning.unwrap_or(0.0),
            text: String::new(),
            at: 0.0,
            kind: None,
            sources: Vec::new(),
            previous: Vec::new(),
        };
        match target {
            Target::Log(id) => {
                let entry = self.entry(id)?;
                hit.text = entry.line();
                hit.at = entry.at;
                hit.sources = vec![entry.reference()];
            }
            Target::Item(id) => {
                let item = self.item(id)?;
                hit.text = item.text();
                hit.at = item.created;
                hit.kind = Some(item.kind);
                for log in &item.provenance {
                    if let Ok(entry) = self.entry(*log) {
                        hit.sources.push(entry.reference());
                    }
                }
                // Follow the chain back: each correction names the one before it.
                let mut seen = HashSet::new();
                let mut next = superseded(&item);
                while let Some(prev) = next.filter(|p| seen.insert(*p)) {
                    let prev = self.item(prev)?;
                    hit.previous.insert(0, prev.text());
                    next = superseded(&prev);
                }
            }
        }
        Ok(hit)
    }
}

fn superseded(item: &crate::Item) -> Option<ItemId> {
    item.links.iter().find(|(_, k)| k == "supersedes").map(|(id, _)| *id)
}

fn normalised<T>(rows: Vec<(T, f64)>) -> Result<Vec<(T, f32)>> {
    let best = rows.iter().map(|r| r.1).fold(0.0f64, f64::max);
    Ok(rows
        .into_iter()
        .map(|(id, s)| (id, if best > 0.0 { (s / best) as f32 } else { 0.0 }))
        .collect())
}

/// When a hint is worth interrupting with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HintGate {
    pub threshold: f32,
    pub gap: f32,
}

impl Default for HintGate {
    fn default() -> Self {
        HintGate { threshold: 0.52, gap: 0.04 }
    }
}

impl HintGate {
    /// From hits ranked best first: the candidates are those at or above the threshold not in
    /// `seen`. The top one alone when it leads the next by `gap` or more; the top two when
    /// exactly two are within `gap` of the top; nothing when three or more are (ambiguous).
    pub fn choose<'h>(&self, ranked: &'h [Hit], seen: &HashSet<Target>) -> Vec<&'h Hit> {
        let candidates: Vec<&Hit> = ranked
            .iter()
            .filter(|h| h.score >= self.threshold && !seen.contains(&h.target))
            .collect();
        let Some(top) = candidates.first() else { return Vec::new() };
        let close = candidates.iter().filter(|h| top.score - h.score < self.gap).count();
        match close {
            1 => vec![candidates[0]],
            2 => candidates[..2].to_vec(),
            _ => Vec::new(),
        }
    }
}
