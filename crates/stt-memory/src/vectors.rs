//! Embeddings: one unit vector per active item and per log entry, stored as blobs and held in
//! memory for recall.
//!
//! The store never computes an embedding: the caller asks which texts lack one
//! ([`Store::missing_vectors`]), embeds them off its event loop, and hands them back
//! ([`Store::put_vectors`]). Each vector is stored with the model that made it; vectors of
//! another model are ignored (and replaced as the new model catches up), so changing the
//! model never mixes two spaces.

use std::collections::HashMap;

use rusqlite::params;

use crate::{ItemId, LogId, Result, Store, Target, items::embed_text, log::sql};

/// The vectors of one kind of owner, packed row after row, each quantised to 12-bit integers
/// in `i16` with its own scale: half the memory of `f32`, and a scan the compiler turns into
/// 16-bit multiply-adds (`pmaddwd`, in every x86-64), four times the rows per instruction of
/// `f32`. The cosine moves by less than 0.001.
///
/// Past [`EXACT_ROWS`] rows a search first ranks every row by the signs of its components
/// (384 bits, compared by XOR and popcount: 48 bytes a row instead of 768) and scores only
/// the best [`SHORTLIST`] exactly: at 100,000 rows the scan then reads 5 MB, not 77.
#[derive(Debug, Default)]
struct Slab {
    ids: Vec<i64>,
    data: Vec<i16>,
    scales: Vec<f32>,
    /// Each row's sign bits, `words` u64s a row.
    signs: Vec<u64>,
    pos: HashMap<i64, usize>,
}

/// Up to this many rows a search scores every row exactly.
const EXACT_ROWS: usize = 20_000;
/// Rows the sign ranking keeps for exact scoring.
const SHORTLIST: usize = 2_000;

fn words(dim: usize) -> usize {
    dim.div_ceil(64)
}

/// The sign bits of a row: bit k set when component k is positive.
fn sign_bits(q: &[i16]) -> Vec<u64> {
    let mut bits = vec![0u64; words(q.len())];
    for (k, x) in q.iter().enumerate() {
        if *x > 0 {
            bits[k / 64] |= 1 << (k % 64);
        }
    }
    bits
}

/// The largest quantised value. Each component of a unit vector of 384 is at most 1 and its
/// largest at least 1/√384, so a dot product of two rows is at most 384 × 2047² ≈ 1.6 × 10⁹:
/// it never overflows `i32`.
const Q: f32 = 2047.0;

/// `v` as integers of at most [`Q`] and the scale that brings them back (`x ≈ q × scale`).
fn quantise(v: &[f32]) -> (Vec<i16>, f32) {
    let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if max == 0.0 {
        return (vec![0; v.len()], 0.0);
    }
    let scale = max / Q;
    (v.iter().map(|x| (x / scale).round().clamp(-Q, Q) as i16).collect(), scale)
}

/// The dot product of two quantised rows, in 32-bit integers. Integer addition is
/// associative, so the compiler vectorises this plain sum (widening multiply-adds) as it
/// may not a float one.
fn dot_q(a: &[i16], b: &[i16]) -> i32 {
    a.iter().zip(b).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum()
}

impl Slab {
    fn insert(&mut self, id: i64, v: &[f32], dim: usize) {
        let (q, scale) = quantise(v);
        let bits = sign_bits(&q);
        let w = words(dim);
        if let Some(&at) = self.pos.get(&id) {
            self.data[at * dim..(at + 1) * dim].copy_from_slice(&q);
            self.signs[at * w..(at + 1) * w].copy_from_slice(&bits);
            self.scales[at] = scale;
            return;
        }
        self.pos.insert(id, self.ids.len());
        self.ids.push(id);
        self.data.extend_from_slice(&q);
        self.signs.extend_from_slice(&bits);
        self.scales.push(scale);
    }

    fn remove(&mut self, id: i64, dim: usize) {
        let Some(at) = self.pos.remove(&id) else { return };
        let last = self.ids.len() - 1;
        if at != last {
            let moved = self.ids[last];
            self.ids[at] = moved;
            self.scales[at] = self.scales[last];
            self.data.copy_within(last * dim..(last + 1) * dim, at * dim);
            let w = words(dim);
            self.signs.copy_within(last * w..(last + 1) * w, at * w);
            self.pos.insert(moved, at);
        }
        self.ids.pop();
        self.scales.pop();
        self.data.truncate(last * dim);
        self.signs.truncate(last * words(dim));
    }

    /// The cosine of row `id` to a query quantised by [`quantise`].
    fn cosine(&self, id: i64, query: &(Vec<i16>, f32), dim: usize) -> Option<f32> {
        let at = *self.pos.get(&id)?;
        let row = &self.data[at * dim..(at + 1) * dim];
        Some(dot_q(&query.0, row) as f32 * query.1 * self.scales[at])
    }

    /// The `n` rows most similar to `query`, best first.
    fn top(&self, query: &(Vec<i16>, f32), n: usize, dim: usize) -> Vec<(i64, f32)> {
        if n == 0 || self.ids.is_empty() {
            return Vec::new();
        }
        let exact = |at: usize| {
            dot_q(&query.0, &self.data[at * dim..(at + 1) * dim]) as f32 * query.1 * self.scales[at]
        };
        let rows: Vec<usize> = if self.ids.len() <= EXACT_ROWS.max(n) {
            (0..self.ids.len()).collect()
        } else {
            let w = words(dim);
            let bits = sign_bits(&query.0);
            let mut distance: Vec<(u32, usize)> = self
                .signs
                .chunks_exact(w)
                .map(|row| row.iter().zip(&bits).map(|(a, b)| (a ^ b).count_ones()).sum::<u32>())
                .zip(0..)
                .collect();
            let keep = SHORTLIST.max(n);
            distance.select_nth_unstable(keep - 1);
            distance.truncate(keep);
            distance.into_iter().map(|(_, at)| at).collect()
        };
        let mut scored: Vec<(f32, usize)> = rows.into_iter().map(|at| (exact(at), at)).collect();
        if scored.len() > n {
            scored.select_nth_unstable_by(n - 1, |a, b| b.0.total_cmp(&a.0));
            scored.truncate(n);
        }
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored.into_iter().map(|(s, at)| (self.ids[at], s)).collect()
    }
}

/// The dot product (the cosine, for unit vectors) of two `f32` vectors.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The vectors in memory, for the model in use.
#[derive(Debug, Default)]
pub struct Index {
    model: Option<String>,
    dim: usize,
    items: Slab,
    logs: Slab,
}

impl Index {
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    pub fn len(&self) -> usize {
        self.items.ids.len() + self.logs.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn slab(&self, target: Target) -> (&Slab, i64) {
        match target {
            Target::Item(id) => (&self.items, id.0),
            Target::Log(id) => (&self.logs, id.0),
        }
    }

    pub(crate) fn remove(&mut self, target: Target) {
        let dim = self.dim;
        match target {
            Target::Item(id) => self.items.remove(id.0, dim),
            Target::Log(id) => self.logs.remove(id.0, dim),
        }
    }

    pub(crate) fn clear(&mut self) {
        self.items = Slab::default();
        self.logs = Slab::default();
    }

    /// A query vector in the form the index compares with.
    pub(crate) fn query(&self, v: &[f32]) -> Option<(Vec<i16>, f32)> {
        (v.len() == self.dim).then(|| quantise(v))
    }

    pub(crate) fn cosine(&self, target: Target, query: &(Vec<i16>, f32)) -> Option<f32> {
        let (slab, id) = self.slab(target);
        slab.cosine(id, query, self.dim)
    }

    pub(crate) fn top_items(&self, query: &(Vec<i16>, f32), n: usize) -> Vec<(ItemId, f32)> {
        self.items.top(query, n, self.dim).into_iter().map(|(id, s)| (ItemId(id), s)).collect()
    }

    pub(crate) fn top_logs(&self, query: &(Vec<i16>, f32), n: usize) -> Vec<(LogId, f32)> {
        self.logs.top(query, n, self.dim).into_iter().map(|(id, s)| (LogId(id), s)).collect()
    }

    fn insert(&mut self, target: Target, v: &[f32]) {
        let dim = self.dim;
        match target {
            Target::Item(id) => self.items.insert(id.0, v, dim),
            Target::Log(id) => self.logs.insert(id.0, v, dim),
        }
    }
}

fn to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn from_blob(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

fn owner(target: Target) -> (&'static str, i64) {
    match target {
        Target::Item(id) => ("item", id.0),
        Target::Log(id) => ("log", id.0),
    }
}

impl Store {
    /// Turns recall by meaning on, for vectors made by `model` (`dim` long): loads those
    /// already stored. Until this is called recall uses words only, and hints stay silent.
    pub fn use_embeddings(&mut self, model: &str, dim: usize) -> Result<()> {
        let mut index = Index { model: Some(model.to_owned()), dim, ..Index::default() };
        let mut stmt = self
            .conn
            .prepare(
                "SELECT v.owner, v.id, v.v FROM vectors v \
                 LEFT JOIN items i ON v.owner = 'item' AND i.id = v.id \
                 WHERE v.model = ?1 AND (v.owner = 'log' OR i.status = 'active')",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([model], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, Vec<u8>>(2)?))
            })
            .map_err(|e| self.err(e))?;
        for row in rows {
            let (owner, id, blob) = row.map_err(|e| self.err(e))?;
            let v = from_blob(&blob);
            if v.len() != dim {
                continue;
            }
            let target =
                if owner == "item" { Target::Item(ItemId(id)) } else { Target::Log(LogId(id)) };
            index.insert(target, &v);
        }
        drop(stmt);
        self.vectors = index;
        Ok(())
    }

    /// Up to `limit` texts that have no vector of the model in use yet: active items first,
    /// then log entries, oldest first. Empty while embeddings are off.
    pub fn missing_vectors(&self, limit: usize) -> Result<Vec<(Target, String)>> {
        let Some(model) = self.vectors.model() else { return Ok(Vec::new()) };
        let mut out = Vec::new();
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT i.id, i.name, i.body FROM items i WHERE i.status = 'active' \
                 AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.owner = 'item' \
                 AND v.id = i.id AND v.model = ?1) ORDER BY i.id LIMIT ?2",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![model, limit as i64], |r| {
                let (id, name, body): (i64, String, String) = (r.get(0)?, r.get(1)?, r.get(2)?);
                Ok((Target::Item(ItemId(id)), embed_text(&name, &body)))
            })
            .map_err(|e| self.err(e))?;
        for row in rows {
            out.push(row.map_err(|e| self.err(e))?);
        }
        let left = limit.saturating_sub(out.len());
        if left > 0 {
            let mut stmt = self
                .conn
                .prepare_cached(&format!(
                    "SELECT {} FROM log l WHERE NOT EXISTS (SELECT 1 FROM vectors v \
                     WHERE v.owner = 'log' AND v.id = l.id AND v.model = ?1) \
                     ORDER BY l.id LIMIT ?2",
                    crate::log::ENTRY_COLUMNS
                ))
                .map_err(|e| self.err(e))?;
            let rows = stmt
                .query_map(params![model, left as i64], crate::log::entry_from_row)
                .map_err(|e| self.err(e))?;
            for row in rows {
                let entry = row.map_err(|e| self.err(e))?;
                out.push((Target::Log(entry.id), entry.line()));
            }
        }
        Ok(out)
    }

    /// Stores vectors made by the model in use. Vectors of the wrong length, or for owners
    /// deleted meanwhile, are skipped.
    pub fn put_vectors(&mut self, vectors: &[(Target, Vec<f32>)]) -> Result<usize> {
        let Some(model) = self.vectors.model().map(str::to_owned) else { return Ok(0) };
        let dim = self.vectors.dim;
        let stored = self.write(|tx| {
            let mut stored = Vec::new();
            for (k, (target, v)) in vectors.iter().enumerate() {
                if v.len() != dim {
                    continue;
                }
                let (owner, id) = owner(*target);
                let table = if owner == "item" { "items" } else { "log" };
                let live: bool = tx
                    .query_row(
                        &format!(
                            "SELECT count(*) FROM {table} WHERE id = ?1{}",
                            if owner == "item" { " AND status = 'active'" } else { "" }
                        ),
                        [id],
                        |r| r.get::<_, i64>(0),
                    )
                    .map_err(sql)?
                    > 0;
                if !live {
                    continue;
                }
                tx.execute(
                    "INSERT OR REPLACE INTO vectors(owner, id, model, v) VALUES (?1, ?2, ?3, ?4)",
                    params![owner, id, model, to_blob(v)],
                )
                .map_err(sql)?;
                stored.push(k);
            }
            Ok(stored)
        })?;
        for &k in &stored {
            let (target, v) = &vectors[k];
            self.vectors.insert(*target, v);
        }
        Ok(stored.len())
    }

    /// Whether recall can use meaning (embeddings are on and at least one vector is in).
    pub fn has_vectors(&self) -> bool {
        self.vectors.model().is_some() && !self.vectors.is_empty()
    }

    pub fn embedding_model(&self) -> Option<&str> {
        self.vectors.model()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantised_cosines_stay_close() {
        let a: Vec<f32> = (0..384).map(|i| ((i * 7919) % 101) as f32 / 50.0 - 1.0).collect();
        let b: Vec<f32> = (0..384).map(|i| ((i * 104_729) % 97) as f32 / 48.0 - 1.0).collect();
        let unit = |v: &[f32]| {
            let n = dot(v, v).sqrt();
            v.iter().map(|x| x / n).collect::<Vec<f32>>()
        };
        let (a, b) = (unit(&a), unit(&b));
        let mut slab = Slab::default();
        slab.insert(1, &b, 384);
        let exact = dot(&a, &b);
        let approx = slab.cosine(1, &quantise(&a), 384).unwrap();
        assert!((exact - approx).abs() < 0.01, "{exact} vs {approx}");
        assert_eq!(dot_q(&[1; 37], &[-2; 37]), -74);
    }

    #[test]
    fn the_sign_shortlist_finds_the_nearest_rows() {
        let dim = 32;
        let mut rng = 7u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % 2001) as f32 / 1000.0 - 1.0
        };
        let mut slab = Slab::default();
        let mut rows = Vec::new();
        for id in 0..(EXACT_ROWS as i64 + 5_000) {
            let v: Vec<f32> = (0..dim).map(|_| next()).collect();
            let n = dot(&v, &v).sqrt();
            let v: Vec<f32> = v.iter().map(|x| x / n).collect();
            slab.insert(id, &v, dim);
            rows.push(v);
        }
        let query = rows[1234].clone();
        let mut exact: Vec<(f32, i64)> =
            rows.iter().zip(0..).map(|(r, id)| (dot(r, &query), id)).collect();
        exact.sort_by(|a, b| b.0.total_cmp(&a.0));
        let found: Vec<i64> =
            slab.top(&quantise(&query), 10, dim).into_iter().map(|(id, _)| id).collect();
        assert_eq!(found[0], 1234);
        let truth: Vec<i64> = exact[..10].iter().map(|e| e.1).collect();
        let shared = found.iter().filter(|id| truth.contains(id)).count();
        assert!(shared >= 8, "{found:?} vs {truth:?}");
    }

    #[test]
    fn a_slab_keeps_rows_straight_through_removals() {
        let mut slab = Slab::default();
        for id in 0..5 {
            slab.insert(id, &[id as f32 / 5.0, 0.5], 2);
        }
        slab.remove(1, 2);
        slab.remove(4, 2);
        let q = quantise(&[1.0, 0.0]);
        assert!((slab.cosine(3, &q, 2).unwrap() - 0.6).abs() < 0.01);
        assert_eq!(slab.cosine(1, &q, 2), None);
        let top: Vec<i64> = slab.top(&q, 2, 2).into_iter().map(|(id, _)| id).collect();
        assert_eq!(top, vec![3, 2]);
        slab.insert(0, &[0.9, 0.0], 2);
        assert_eq!(slab.top(&q, 1, 2)[0].0, 0);
    }
}
