//! Long-term memory: what was said, what was learnt from it, and finding it again.
//!
//! One SQLite file (WAL, FTS5) holds:
//! - the **conversation log** ([`log`]): every chat turn, command, tool call and result, in
//!   sessions that move open → pending → processed as the dreamer consolidates them;
//! - **items** ([`items`]): knowledge, episodes, intentions and profiles, each with a score that
//!   decays on a curve ([`decay`]), a stability that grows when it is used, links, and the log
//!   entries it was built from (its provenance);
//! - **vectors** ([`vectors`]): an embedding per item and log entry, kept in memory for recall;
//! - the dreamer's own diary ([`dreams`]);
//! - the **memory tree** ([`tree`]): the chat's messages and the summaries of summaries that
//!   keep an endless conversation within a bounded context.
//!
//! Beside them: the planner's tasks and plans ([`planner`]), Markdown export and import
//! ([`markdown`]), and the text helpers (normal forms, FTS5 queries, dates in words: [`text`]).
//!
//! [`recall`] is the one scorer for the recall tools and the associative hints: BM25 and
//! embedding cosine fused, weighted by an item's score, with one hop of spreading along links.
//!
//! The crate is synchronous and knows nothing of the assistant: it owns one connection and is
//! meant to live on one thread (the assistant's memory lane). Embeddings come in from outside
//! (the embedder runs on its own lane), so nothing here waits on a model.
//!
//! # Invariants
//! - Nothing is written without a transaction, so a kill -9 loses at most the write in flight.
//! - An item is never deleted by decay or correction, only archived; only `forget` deletes,
//!   and then everything of it goes: the row, its FTS entries, its vector, its links (SQLite's
//!   `secure_delete` zeroes the freed pages; the FTS index is merged and the WAL checkpointed).
//! - A file that is not stt's memory is never written to.

pub mod decay;
pub mod dreams;
pub mod items;
pub mod log;
pub mod markdown;
pub mod planner;
pub mod recall;
mod schema;
pub mod text;
pub mod tree;
pub mod vectors;

use std::fs::{self, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, ErrorCode, OpenFlags};
use serde::{Deserialize, Serialize};

pub use items::{Item, ItemFilter, Kind, NewItem, Remembered};
pub use log::{LogEntry, Role, SessionInfo, SessionKind, SessionStatus, Turn};
pub use recall::{HintGate, Hit, Query, Target, Weights};

/// A conversation episode: one chat, one command, one stretch of ambient speech.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SessionId(pub i64);

/// One entry of the conversation log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LogId(pub i64);

/// One item: a piece of knowledge, an episode, an intention or a profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ItemId(pub i64);

/// Seconds since the Unix epoch; what every time in the store is.
pub type Seconds = f64;

pub const DAY: Seconds = 86_400.0;

/// Where the store gets "now" (tests move it by days).
pub type Clock = Box<dyn Fn() -> Seconds + Send>;

pub fn system_clock() -> Clock {
    Box::new(|| SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64()))
}

#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error(
        "'{}' is not an stt memory database (not a SQLite file): move it aside or point \
         [memory].db at another file; stt never overwrites it",
        path.display()
    )]
    NotDatabase { path: PathBuf },
    #[error(
        "'{}' is another program's SQLite database: point [memory].db at another file; stt \
         never writes into it",
        path.display()
    )]
    Foreign { path: PathBuf },
    #[error(
        "the memory database '{}' is damaged ({detail}): move it aside (stt then starts an \
         empty one) or restore a backup; stt never overwrites it",
        path.display()
    )]
    Corrupt { path: PathBuf, detail: String },
    #[error(
        "the memory database '{}' was written by a newer stt (schema version {found}, this one \
         knows up to {known}): update stt",
        path.display()
    )]
    TooNew { path: PathBuf, found: u32, known: u32 },
    #[error("the memory database '{}': {source}", path.display())]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("'{}': {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("memory has no {what} {id}")]
    NotFound { what: &'static str, id: i64 },
    #[error("{0}")]
    Invalid(String),
}

impl MemoryError {
    /// The disk holding the database is full (or the user's quota spent): a write failed and
    /// changed nothing, and the same write works once there is room.
    pub fn is_full(&self) -> bool {
        match self {
            MemoryError::Sqlite { source, .. } => {
                source.sqlite_error_code() == Some(ErrorCode::DiskFull)
            }
            MemoryError::Io { source, .. } => {
                matches!(source.raw_os_error(), Some(libc_enospc::ENOSPC | libc_enospc::EDQUOT))
            }
            _ => false,
        }
    }

    /// A fault of the disk or of another process (full, locked, read-only, I/O): memory
    /// should go off for the session with a note, while chat goes on.
    pub fn is_unavailable(&self) -> bool {
        match self {
            MemoryError::Sqlite { source, .. } => matches!(
                source.sqlite_error_code(),
                Some(
                    ErrorCode::DiskFull
                        | ErrorCode::DatabaseBusy
                        | ErrorCode::DatabaseLocked
                        | ErrorCode::ReadOnly
                        | ErrorCode::SystemIoFailure
                        | ErrorCode::CannotOpen
                        | ErrorCode::PermissionDenied
                )
            ),
            MemoryError::Io { .. } => true,
            _ => false,
        }
    }
}

/// The two errors that say a disk is full (Linux's numbers).
mod libc_enospc {
    pub const ENOSPC: i32 = 28;
    pub const EDQUOT: i32 = 122;
}

pub type Result<T, E = MemoryError> = std::result::Result<T, E>;

/// The memory store: one connection, its vectors in memory, a clock.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    vectors: vectors::Index,
    clock: Clock,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .field("vectors", &self.vectors)
            .finish_non_exhaustive()
    }
}

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

impl Store {
    /// Opens (or creates, mode 0600 in a 0700 directory) the memory database at `path` and
    /// brings its schema up to date. A file that is not stt's memory is refused, never
    /// rewritten.
    pub fn open(path: &Path) -> Result<Store> {
        Self::open_with_clock(path, system_clock())
    }

    pub fn open_with_clock(path: &Path, clock: Clock) -> Result<Store> {
        let io = |source| MemoryError::Io { path: path.to_owned(), source };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(io)?;
        }
        match fs::File::open(path) {
            Ok(mut file) => {
                let mut head = Vec::with_capacity(16);
                file.by_ref().take(16).read_to_end(&mut head).map_err(io)?;
                if !head.is_empty() && head.as_slice() != SQLITE_MAGIC {
                    return Err(MemoryError::NotDatabase { path: path.to_owned() });
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // Created here, 0600, so SQLite never makes it with the umask's mode.
                OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(path)
                    .map_err(io)?;
            }
            Err(e) => return Err(io(e)),
        }
        // A file copied in from elsewhere may be wider open than it should be.
        fs::set_permissions(path, fs::Permissions::from_mode(0o600)).map_err(io)?;

        let sqlite = |source| MemoryError::Sqlite { path: path.to_owned(), source };
        let corrupt = |source: rusqlite::Error| match source.sqlite_error_code() {
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
                MemoryError::Corrupt { path: path.to_owned(), detail: source.to_string() }
            }
            _ => sqlite(source),
        };
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Connection::open_with_flags(path, flags).map_err(sqlite)?;
        conn.busy_timeout(std::time::Duration::from_secs(2)).map_err(sqlite)?;

        let id = schema::application_id(&conn).map_err(corrupt)?;
        let found = schema::version(&conn).map_err(corrupt)?;
        if id != schema::APPLICATION_ID
            && (id != 0 || schema::has_tables(&conn).map_err(corrupt)?)
        {
            return Err(MemoryError::Foreign { path: path.to_owned() });
        }
        if found > schema::latest() {
            return Err(MemoryError::TooNew {
                path: path.to_owned(),
                found,
                known: schema::latest(),
            });
        }
        let check: String =
            conn.query_row("PRAGMA quick_check(1)", [], |row| row.get(0)).map_err(corrupt)?;
        if check != "ok" {
            return Err(MemoryError::Corrupt { path: path.to_owned(), detail: check });
        }
        // WAL: readers never block the writer, and a commit is one append. NORMAL sync is
        // durable against a killed process (the WAL is on disk before the commit returns);
        // only a power cut can lose the last commits.
        conn.pragma_update(None, "journal_mode", "WAL").map_err(sqlite)?;
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(sqlite)?;
        conn.pragma_update(None, "foreign_keys", "ON").map_err(sqlite)?;
        // Deleted rows are overwritten with zeros: `forget` leaves nothing in free pages.
        conn.pragma_update(None, "secure_delete", "ON").map_err(sqlite)?;
        // A 16 MiB page cache: recall reads the same index pages query after query.
        conn.pragma_update(None, "cache_size", -16_384).map_err(sqlite)?;
        schema::migrate(&mut conn, schema::latest()).map_err(sqlite)?;

        Ok(Store { conn, path: path.to_owned(), vectors: vectors::Index::default(), clock })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn schema_version(&self) -> Result<u32> {
        schema::version(&self.conn).map_err(|e| self.err(e))
    }

    /// Replaces the clock (tests move time by days).
    pub fn set_clock(&mut self, clock: Clock) {
        self.clock = clock;
    }

    pub fn now(&self) -> Seconds {
        (self.clock)()
    }

    fn err(&self, source: rusqlite::Error) -> MemoryError {
        MemoryError::Sqlite { path: self.path.clone(), source }
    }

    /// Runs `f` in one transaction: all of it is written, or none.
    fn write<T>(&mut self, f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T>) -> Result<T> {
        let path = &self.path;
        let with_path = |e: MemoryError| match e {
            MemoryError::Sqlite { path: p, source } if p.as_os_str().is_empty() => {
                MemoryError::Sqlite { path: path.clone(), source }
            }
            e => e,
        };
        let tx = self.conn.transaction().map_err(log::sql).map_err(with_path)?;
        let out = f(&tx).map_err(with_path)?;
        tx.commit().map_err(log::sql).map_err(with_path)?;
        Ok(out)
    }

    /// Counts for `memory status`.
    pub fn stats(&self) -> Result<Stats> {
        let count = |sql: &str| -> Result<i64> {
            self.conn.query_row(sql, [], |row| row.get(0)).map_err(|e| self.err(e))
        };
        Ok(Stats {
            sessions: count("SELECT count(*) FROM sessions")?,
            pending_sessions: count("SELECT count(*) FROM sessions WHERE status = 'pending'")?,
            log_entries: count("SELECT count(*) FROM log")?,
            active_items: count("SELECT count(*) FROM items WHERE status = 'active'")?,
            archived_items: count("SELECT count(*) FROM items WHERE status = 'archived'")?,
            vectors: self.vectors.len() as i64,
            embedding_model: self.vectors.model().map(str::to_owned),
        })
    }

    /// Makes deleted content unrecoverable: merges the FTS indexes (dropping what was
    /// deleted from their segments) and checkpoints the WAL into the main file.
    fn scrub(&self) -> Result<()> {
        self.conn
            .execute_batch(
                "INSERT INTO log_fts(log_fts) VALUES ('optimize');
                 INSERT INTO items_fts(items_fts) VALUES ('optimize');
                 INSERT INTO tree_fts(tree_fts) VALUES ('optimize');",
            )
            .map_err(|e| self.err(e))?;
        self.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(|e| self.err(e))
    }
}

/// What the store holds, in counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub sessions: i64,
    pub pending_sessions: i64,
    pub log_entries: i64,
    pub active_items: i64,
    pub archived_items: i64,
    pub vectors: i64,
    pub embedding_model: Option<String>,
}

#[cfg(test)]
mod tests;
