//! The conversation log: what was said, by whom, when and in which mode, in sessions.
//!
//! A session is one chat or command episode (or a stretch of ambient speech, when that is
//! captured at all). It is `open` while entries come in, `pending` once closed (waiting for a
//! dream to consolidate it), and `processed` once a dream has. Entries are recallable from
//! the moment they are written, consolidated or not.

use rusqlite::{OptionalExtension, Transaction, params};
use serde::{Deserialize, Serialize};

use crate::{LogId, MemoryError, Result, Seconds, SessionId, Store, text};

/// How many turns either side of an entry go into its search context.
const CONTEXT_TURNS: i64 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionKind {
    Chat,
    Command,
    Ambient,
    /// Brought in from elsewhere (the benchmark's conversations, a user's import).
    Imported,
}

impl SessionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionKind::Chat => "chat",
            SessionKind::Command => "command",
            SessionKind::Ambient => "ambient",
            SessionKind::Imported => "imported",
        }
    }

    fn parse(s: &str) -> SessionKind {
        match s {
            "chat" => SessionKind::Chat,
            "command" => SessionKind::Command,
            "ambient" => SessionKind::Ambient,
            _ => SessionKind::Imported,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    Open,
    Pending,
    Processed,
}

impl SessionStatus {
    fn parse(s: &str) -> SessionStatus {
        match s {
            "open" => SessionStatus::Open,
            "pending" => SessionStatus::Pending,
            _ => SessionStatus::Processed,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A person: typed chat, a spoken command.
    User,
    Assistant,
    /// A tool call and its result.
    Tool,
    /// Speech nobody addressed to the assistant.
    Ambient,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::Ambient => "ambient",
        }
    }

    pub(crate) fn parse(s: &str) -> Role {
        match s {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            _ => Role::Ambient,
        }
    }
}

/// An entry to append.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn<'a> {
    pub role: Role,
    /// Who said it, when known (a speaker's name, "Typed").
    pub speaker: Option<&'a str>,
    /// The assistant's mode when it was said.
    pub mode: Option<&'a str>,
    pub text: &'a str,
    /// A reference to where it came from outside stt (the benchmark's `dia_id`).
    pub source: Option<&'a str>,
    /// When it was said; now if `None`.
    pub at: Option<Seconds>,
}

impl<'a> Turn<'a> {
    pub fn new(role: Role, text: &'a str) -> Self {
        Turn { role, speaker: None, mode: None, text, source: None, at: None }
    }
}

/// An entry as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogEntry {
    pub id: LogId,
    pub session: SessionId,
    pub seq: i64,
    pub at: Seconds,
    pub role: Role,
    pub speaker: Option<String>,
    pub mode: Option<String>,
    pub text: String,
    pub source: Option<String>,
}

impl LogEntry {
    /// The reference a recall result gives for this entry: its outside source if it has one,
    /// else `L<id>`.
    pub fn reference(&self) -> String {
        self.source.clone().unwrap_or_else(|| format!("L{}", self.id.0))
    }

    /// "Caroline: I went to the support group." — how the entry reads to a model.
    pub fn line(&self) -> String {
        match &self.speaker {
            Some(who) => format!("{who}: {}", self.text),
            None => format!("{}: {}", self.role.as_str(), self.text),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    pub id: SessionId,
    pub kind: SessionKind,
    pub label: Option<String>,
    pub started: Seconds,
    pub ended: Option<Seconds>,
    pub status: SessionStatus,
    pub entries: i64,
}

pub(crate) const ENTRY_COLUMNS: &str = "id, session, seq, at, role, speaker, mode, text, source";

pub(crate) fn entry_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<LogEntry> {
    Ok(LogEntry {
        id: LogId(row.get(0)?),
        session: SessionId(row.get(1)?),
        seq: row.get(2)?,
        at: row.get(3)?,
        role: Role::parse(&row.get::<_, String>(4)?),
        speaker: row.get(5)?,
        mode: row.get(6)?,
        text: row.get(7)?,
        source: row.get(8)?,
    })
}

fn session_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<SessionInfo> {
    Ok(SessionInfo {
        id: SessionId(row.get(0)?),
        kind: SessionKind::parse(&row.get::<_, String>(1)?),
        label: row.get(2)?,
        started: row.get(3)?,
        ended: row.get(4)?,
        status: SessionStatus::parse(&row.get::<_, String>(5)?),
        entries: row.get(6)?,
    })
}

const SESSION_SELECT: &str = "SELECT s.id, s.kind, s.label, s.started, s.ended, s.status, \
     (SELECT count(*) FROM log WHERE log.session = s.id) FROM sessions s";

/// Rewrites the search context of the entry at `seq` in `session`: the date it was said and
/// the text of the turns around it.
fn refresh_context(tx: &Transaction<'_>, session: SessionId, seq: i64) -> rusqlite::Result<()> {
    let Some((id, at, text)) = tx
        .query_row(
            "SELECT id, at, text FROM log WHERE session = ?1 AND seq = ?2",
            params![session.0, seq],
            |row| Ok((row.get::<_, i64>(0)?, row.get::<_, f64>(1)?, row.get::<_, String>(2)?)),
        )
        .optional()?
    else {
        return Ok(());
    };
    let mut context = text::date_words(at);
    let mut around = tx.prepare_cached(
        "SELECT text FROM log WHERE session = ?1 AND seq BETWEEN ?2 AND ?3 AND seq != ?4 \
         ORDER BY seq",
    )?;
    let rows = around
        .query_map(params![session.0, seq - CONTEXT_TURNS, seq + CONTEXT_TURNS, seq], |row| {
            row.get::<_, String>(0)
        })?;
    for neighbour in rows {
        context.push('\n');
        context.push_str(&neighbour?);
    }
    tx.execute("DELETE FROM log_fts WHERE rowid = ?1", [id])?;
    tx.execute(
        "INSERT INTO log_fts(rowid, text, context) VALUES (?1, ?2, ?3)",
        params![id, text, context],
    )?;
    Ok(())
}

impl Store {
    /// Starts a session; `label` names it for people ("chat", "LoCoMo 26 session 3").
    pub fn open_session(
        &mut self,
        kind: SessionKind,
        label: Option<&str>,
        at: Option<Seconds>,
    ) -> Result<SessionId> {
        let at = at.unwrap_or_else(|| self.now());
        self.write(|tx| {
            tx.execute(
                "INSERT INTO sessions(kind, label, started) VALUES (?1, ?2, ?3)",
                params![kind.as_str(), label, at],
            )
            .map_err(sql)?;
            Ok(SessionId(tx.last_insert_rowid()))
        })
    }

    /// Appends one entry to an open session. An entry with a `source` that the log already
    /// holds with the same text is not written again (importing the same conversation twice
    /// adds nothing); its id is returned.
    pub fn append(&mut self, session: SessionId, turn: &Turn<'_>) -> Result<LogId> {
        let at = turn.at.unwrap_or_else(|| self.now());
        self.write(|tx| {
            if let Some(source) = turn.source {
                let known: Option<i64> = tx
                    .query_row(
                        "SELECT id FROM log WHERE source = ?1 AND text = ?2 LIMIT 1",
                        params![source, turn.text],
                        |r| r.get(0),
                    )
                    .optional()
                    .map_err(sql)?;
                if let Some(id) = known {
                    return Ok(LogId(id));
                }
            }
            let status: Option<String> = tx
                .query_row("SELECT status FROM sessions WHERE id = ?1", [session.0], |r| r.get(0))
                .optional()
                .map_err(sql)?;
            match status.as_deref() {
                None => return Err(MemoryError::NotFound { what: "session", id: session.0 }),
                Some("open") => {}
                // A late entry (a tool result after the chat was closed) reopens nothing: it
                // joins its session, which a dream will read again.
                Some(_) => {
                    tx.execute("UPDATE sessions SET status = 'pending' WHERE id = ?1", [session.0])
                        .map_err(sql)?;
                }
            }
            let seq: i64 = tx
                .query_row(
                    "SELECT coalesce(max(seq), -1) + 1 FROM log WHERE session = ?1",
                    [session.0],
                    |r| r.get(0),
                )
                .map_err(sql)?;
            tx.execute(
                "INSERT INTO log(session, seq, at, role, speaker, mode, text, source) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    session.0,
                    seq,
                    at,
                    turn.role.as_str(),
                    turn.speaker,
                    turn.mode,
                    turn.text,
                    turn.source
                ],
            )
            .map_err(sql)?;
            let id = LogId(tx.last_insert_rowid());
            for s in (seq - CONTEXT_TURNS).max(0)..=seq {
                refresh_context(tx, session, s).map_err(sql)?;
            }
            Ok(id)
        })
    }

    /// Closes a session: `pending` if anything was said in it, gone if nothing was.
    pub fn close_session(&mut self, session: SessionId) -> Result<SessionStatus> {
        let now = self.now();
        self.write(|tx| {
            let entries: i64 = tx
                .query_row("SELECT count(*) FROM log WHERE session = ?1", [session.0], |r| r.get(0))
                .map_err(sql)?;
            if entries == 0 {
                tx.execute("DELETE FROM sessions WHERE id = ?1", [session.0]).map_err(sql)?;
                return Ok(SessionStatus::Processed);
            }
            tx.execute(
                "UPDATE sessions SET status = 'pending', ended = coalesce(ended, ?2) \
                 WHERE id = ?1 AND status = 'open'",
                params![session.0, now],
            )
            .map_err(sql)?;
            Ok(SessionStatus::Pending)
        })
    }

    /// Closes every open session (before a dream, and at start-up for sessions a crash left
    /// open). Returns how many became pending.
    pub fn close_open_sessions(&mut self) -> Result<usize> {
        let open: Vec<SessionId> =
            self.sessions(Some(SessionStatus::Open))?.into_iter().map(|s| s.id).collect();
        let mut pending = 0;
        for id in open {
            if self.close_session(id)? == SessionStatus::Pending {
                pending += 1;
            }
        }
        Ok(pending)
    }

    /// Marks a session consolidated: a later dream will not read it again.
    pub fn mark_processed(&mut self, session: SessionId) -> Result<()> {
        let changed = self
            .conn
            .execute("UPDATE sessions SET status = 'processed' WHERE id = ?1", [session.0])
            .map_err(|e| self.err(e))?;
        if changed == 0 {
            return Err(MemoryError::NotFound { what: "session", id: session.0 });
        }
        Ok(())
    }

    /// Sessions, oldest first; only those with `status` if given.
    pub fn sessions(&self, status: Option<SessionStatus>) -> Result<Vec<SessionInfo>> {
        let status = status.map(|s| match s {
            SessionStatus::Open => "open",
            SessionStatus::Pending => "pending",
            SessionStatus::Processed => "processed",
        });
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "{SESSION_SELECT} WHERE ?1 IS NULL OR s.status = ?1 ORDER BY s.started, s.id"
            ))
            .map_err(|e| self.err(e))?;
        let rows = stmt.query_map([status], session_from_row).map_err(|e| self.err(e))?;
        rows.collect::<rusqlite::Result<_>>().map_err(|e| self.err(e))
    }

    pub fn session(&self, id: SessionId) -> Result<SessionInfo> {
        self.conn
            .query_row(&format!("{SESSION_SELECT} WHERE s.id = ?1"), [id.0], session_from_row)
            .optional()
            .map_err(|e| self.err(e))?
            .ok_or(MemoryError::NotFound { what: "session", id: id.0 })
    }

    /// A session's entries in order.
    pub fn session_log(&self, id: SessionId) -> Result<Vec<LogEntry>> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {ENTRY_COLUMNS} FROM log WHERE session = ?1 ORDER BY seq"
            ))
            .map_err(|e| self.err(e))?;
        let rows = stmt.query_map([id.0], entry_from_row).map_err(|e| self.err(e))?;
        rows.collect::<rusqlite::Result<_>>().map_err(|e| self.err(e))
    }

    pub fn entry(&self, id: LogId) -> Result<LogEntry> {
        self.conn
            .query_row(
                &format!("SELECT {ENTRY_COLUMNS} FROM log WHERE id = ?1"),
                [id.0],
                entry_from_row,
            )
            .optional()
            .map_err(|e| self.err(e))?
            .ok_or(MemoryError::NotFound { what: "log entry", id: id.0 })
    }

    /// The most recent entries, newest last.
    pub fn recent(&self, limit: usize) -> Result<Vec<LogEntry>> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {ENTRY_COLUMNS} FROM log ORDER BY at DESC, id DESC LIMIT ?1"
            ))
            .map_err(|e| self.err(e))?;
        let rows = stmt.query_map([limit as i64], entry_from_row).map_err(|e| self.err(e))?;
        let mut out = rows.collect::<rusqlite::Result<Vec<_>>>().map_err(|e| self.err(e))?;
        out.reverse();
        Ok(out)
    }

    /// Forgets what the person said last ("forget what I just said"): their latest line (a
    /// turn of theirs or speech overheard) and what followed it in its session (the answer,
    /// the tools it ran), with their search rows and vectors, and the same words still in the
    /// memory tree's buffer. Returns the words forgotten, or `None` when there are none.
    /// Words a summary of the tree already holds stay in that summary.
    pub fn forget_last_said(&mut self) -> Result<Option<String>> {
        let last: Option<(i64, i64, i64, f64, String)> = self
            .conn
            .query_row(
                "SELECT id, session, seq, at, text FROM log WHERE role IN ('user', 'ambient') \
                 ORDER BY at DESC, id DESC LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        let Some((_, session, seq, at, text)) = last else { return Ok(None) };
        let ids: Vec<i64> = {
            let mut stmt = self
                .conn
                .prepare("SELECT id FROM log WHERE session = ?1 AND seq >= ?2")
                .map_err(|e| self.err(e))?;
            stmt.query_map(params![session, seq], |r| r.get(0))
                .map_err(|e| self.err(e))?
                .collect::<rusqlite::Result<_>>()
                .map_err(|e| self.err(e))?
        };
        self.write(|tx| {
            tx.execute("DELETE FROM log WHERE session = ?1 AND seq >= ?2", params![session, seq])
                .map_err(sql)?;
            // The turns before it held its words in their search context.
            for before in (seq - CONTEXT_TURNS).max(0)..seq {
                refresh_context(tx, SessionId(session), before).map_err(sql)?;
            }
            // The tree's buffer keeps chat turns apart from the log: the same words, at the
            // same moment or after, and what came after them.
            let buffered: Option<i64> = tx
                .query_row(
                    "SELECT seq FROM tree_messages WHERE node IS NULL AND role = 'user' \
                     AND text = ?1 AND at >= ?2 - 5 ORDER BY seq DESC LIMIT 1",
                    params![text, at],
                    |r| r.get(0),
                )
                .optional()
                .map_err(sql)?;
            if let Some(first) = buffered {
                tx.execute("DELETE FROM tree_messages WHERE node IS NULL AND seq >= ?1", [first])
                    .map_err(sql)?;
            }
            Ok(())
        })?;
        for id in ids {
            self.vectors.remove(crate::Target::Log(LogId(id)));
        }
        self.scrub()?;
        Ok(Some(text))
    }

    /// Deletes a session and everything said in it (its entries' search rows and vectors go
    /// with them; items built from it keep their text but lose the provenance).
    pub fn forget_session(&mut self, id: SessionId) -> Result<()> {
        let ids: Vec<i64> = {
            let mut stmt = self
                .conn
                .prepare("SELECT id FROM log WHERE session = ?1")
                .map_err(|e| self.err(e))?;
            stmt.query_map([id.0], |r| r.get(0))
                .map_err(|e| self.err(e))?
                .collect::<rusqlite::Result<_>>()
                .map_err(|e| self.err(e))?
        };
        let changed =
            self.write(|tx| tx.execute("DELETE FROM sessions WHERE id = ?1", [id.0]).map_err(sql))?;
        if changed == 0 {
            return Err(MemoryError::NotFound { what: "session", id: id.0 });
        }
        for log in ids {
            self.vectors.remove(crate::Target::Log(LogId(log)));
        }
        self.scrub()
    }
}

/// An SQLite error inside a transaction; `Store::write` adds the database's path.
pub(crate) fn sql(source: rusqlite::Error) -> MemoryError {
    MemoryError::Sqlite { path: std::path::PathBuf::new(), source }
}
