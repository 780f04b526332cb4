//! The dreamer's diary: one row per dream, with what it did.

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::{MemoryError, Result, Seconds, Store};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dream {
    pub id: i64,
    pub started: Seconds,
    pub ended: Option<Seconds>,
    /// running, done, interrupted, failed.
    pub status: String,
    /// idle, overdue, asked (`stt-ctl memory dream`, the `dream_now` tool).
    pub trigger: String,
    /// The dream log: what the dreamer wrote, and one line per step.
    pub text: String,
}

impl Store {
    pub fn dream_start(&mut self, trigger: &str) -> Result<i64> {
        let now = self.now();
        self.conn
            .execute(
                "INSERT INTO dreams(started, status, trigger) VALUES (?1, 'running', ?2)",
                params![now, trigger],
            )
            .map_err(|e| self.err(e))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Adds a line to a dream's log.
    pub fn dream_note(&mut self, id: i64, line: &str) -> Result<()> {
        let changed = self
            .conn
            .execute(
                "UPDATE dreams SET text = text || CASE WHEN text = '' THEN '' ELSE char(10) END \
                 || ?2 WHERE id = ?1",
                params![id, line],
            )
            .map_err(|e| self.err(e))?;
        if changed == 0 {
            return Err(MemoryError::NotFound { what: "dream", id });
        }
        Ok(())
    }

    pub fn dream_end(&mut self, id: i64, status: &str) -> Result<()> {
        let now = self.now();
        self.conn
            .execute(
                "UPDATE dreams SET status = ?2, ended = ?3 WHERE id = ?1",
                params![id, status, now],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The latest dreams, newest first.
    pub fn dreams(&self, limit: usize) -> Result<Vec<Dream>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, started, ended, status, trigger, text FROM dreams \
                 ORDER BY started DESC, id DESC LIMIT ?1",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([limit as i64], |r| {
                Ok(Dream {
                    id: r.get(0)?,
                    started: r.get(1)?,
                    ended: r.get(2)?,
                    status: r.get(3)?,
                    trigger: r.get(4)?,
                    text: r.get(5)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<rusqlite::Result<_>>().map_err(|e| self.err(e))
    }

    /// When the last dream that got anywhere ended.
    pub fn last_dream(&self) -> Result<Option<Seconds>> {
        self.conn
            .query_row(
                "SELECT max(coalesce(ended, started)) FROM dreams WHERE status != 'failed'",
                [],
                |r| r.get::<_, Option<f64>>(0),
            )
            .optional()
            .map(Option::flatten)
            .map_err(|e| self.err(e))
    }
}
