//! Forgetting on a curve.
//!
//! Each day an item keeps `daily = 1 − base / (1 + stability × 0.5)` of its score, with `base`
//! 0.1 for knowledge and 0.25 for episodes (× 0.4 for a high-salience episode, × 0.7 for a
//! mid one). Stability grows each time an item is recalled or confirmed, so what is used
//! fades more slowly (spaced repetition). Below [`ARCHIVE_BELOW`] an item is archived: out of
//! recall, never deleted.
//!
//! Intentions and profiles do not decay: an intention ends when it is done or cancelled, and
//! a profile is rewritten, not forgotten.

use rusqlite::params;

use crate::{DAY, Result, Seconds, Store, Target, log::sql};

pub const ARCHIVE_BELOW: f64 = 0.2;
/// Stability added when an item is recalled and shown to the model.
pub const RECALL_STABILITY: f64 = 0.5;

/// The share of its score an item keeps per day.
pub fn daily(kind: &str, subtype: &str, stability: f64) -> f64 {
    let base = match (kind, subtype) {
        ("episode", "high") => 0.25 * 0.4,
        ("episode", "mid") => 0.25 * 0.7,
        ("episode", _) => 0.25,
        _ => 0.1,
    };
    1.0 - base / (1.0 + stability * 0.5)
}

/// What one pass of decay did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Decayed {
    pub decayed: usize,
    pub archived: usize,
}

impl Store {
    /// Applies the days elapsed since each item's last decay, and archives what fell below
    /// the threshold. Safe to run at any time and any number of times: the elapsed time is
    /// measured per item.
    pub fn decay_all(&mut self) -> Result<Decayed> {
        let now = self.now();
        let (out, archived) = self.write(|tx| {
            let mut out = Decayed::default();
            let mut archived = Vec::new();
            let rows: Vec<(i64, String, String, f64, f64, Seconds)> = {
                let mut stmt = tx
                    .prepare(
                        "SELECT id, kind, subtype, score, stability, last_decay FROM items \
                         WHERE status = 'active' AND kind IN ('knowledge', 'episode')",
                    )
                    .map_err(sql)?;
                stmt.query_map([], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
                })
                .map_err(sql)?
                .collect::<rusqlite::Result<_>>()
                .map_err(sql)?
            };
            for (id, kind, subtype, score, stability, last) in rows {
                let days = (now - last) / DAY;
                if days <= 0.0 {
                    continue;
                }
                let score = score * daily(&kind, &subtype, stability).powf(days);
                out.decayed += 1;
                if score < ARCHIVE_BELOW {
                    out.archived += 1;
                    archived.push(id);
                }
                tx.execute(
                    "UPDATE items SET score = ?2, last_decay = ?3, \
                     status = CASE WHEN ?2 < ?4 THEN 'archived' ELSE status END, \
                     archived_why = CASE WHEN ?2 < ?4 THEN 'decayed' ELSE archived_why END \
                     WHERE id = ?1",
                    params![id, score, now, ARCHIVE_BELOW],
                )
                .map_err(sql)?;
            }
            Ok((out, archived))
        })?;
        for id in archived {
            self.vectors.remove(Target::Item(crate::ItemId(id)));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_curve() {
        // stability 1: knowledge keeps 1 - 0.1/1.5 per day, a low episode 1 - 0.25/1.5.
        assert!((daily("knowledge", "fact", 1.0) - (1.0 - 0.1 / 1.5)).abs() < 1e-12);
        assert!((daily("episode", "low", 1.0) - (1.0 - 0.25 / 1.5)).abs() < 1e-12);
        assert!((daily("episode", "high", 1.0) - (1.0 - 0.1 / 1.5)).abs() < 1e-12);
        assert!((daily("episode", "mid", 1.0) - (1.0 - 0.175 / 1.5)).abs() < 1e-12);
        // More stable, slower.
        assert!(daily("knowledge", "fact", 3.0) > daily("knowledge", "fact", 1.0));
    }
}
