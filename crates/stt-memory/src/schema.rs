//! The database's shape, and the migrations that bring any earlier version of it up to date.
//!
//! `PRAGMA user_version` holds the number of migrations applied; `PRAGMA application_id`
//! marks the file as stt's, so a foreign SQLite file is refused instead of written into.
//! Migrations only ever append: a released step is never edited, the next change is a new
//! step, and `tests::every_version_migrates` opens a database left at each earlier version.

use rusqlite::Connection;

/// "stt1" in ASCII: what `PRAGMA application_id` says in every stt memory file.
pub const APPLICATION_ID: i32 = 0x7374_7431;

/// Each step, in order; `MIGRATIONS[k]` takes a database from version `k` to `k + 1`.
pub const MIGRATIONS: &[&str] = &[
    // 1: the conversation log, items with their links and provenance, vectors, dreams.
    r"
    -- owner: 'item' or 'log'; v: little-endian f32s, unit length.
    CREATE TABLE vectors (
        owner  TEXT NOT NULL,
        id     INTEGER NOT NULL,
        model  TEXT NOT NULL,
        v      BLOB NOT NULL,
        PRIMARY KEY (owner, id)
    );
    CREATE TABLE sessions (
        id       INTEGER PRIMARY KEY,
        kind     TEXT NOT NULL,
        label    TEXT,
        started  REAL NOT NULL,
        ended    REAL,
        status   TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'pending', 'processed'))
    );
    CREATE TABLE log (
        id       INTEGER PRIMARY KEY,
        session  INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq      INTEGER NOT NULL,
        at       REAL NOT NULL,
        role     TEXT NOT NULL,
        speaker  TEXT,
        mode     TEXT,
        text     TEXT NOT NULL,
        source   TEXT
    );
    CREATE INDEX log_session ON log(session, seq);
    CREATE INDEX log_source ON log(source);
    -- rowid = log.id. `context` holds the session's date and the neighbouring turns, so a
    -- turn that answers with 'yes, last Tuesday' is found by the words of the question
    -- before it. The store writes it (a turn's context changes when the next turns come).
    CREATE VIRTUAL TABLE log_fts USING fts5(text, context, tokenize = 'porter unicode61');
    CREATE TRIGGER log_forget AFTER DELETE ON log BEGIN
        DELETE FROM log_fts WHERE rowid = old.id;
        DELETE FROM vectors WHERE owner = 'log' AND id = old.id;
    END;

    CREATE TABLE items (
        id           INTEGER PRIMARY KEY,
        uid          TEXT NOT NULL UNIQUE,
        kind         TEXT NOT NULL CHECK (kind IN ('knowledge', 'episode', 'intention', 'profile')),
        subtype      TEXT NOT NULL DEFAULT '',
        name         TEXT NOT NULL,
        body         TEXT NOT NULL,
        tags         TEXT NOT NULL DEFAULT '',
        norm         TEXT NOT NULL,
        name_norm    TEXT NOT NULL DEFAULT '',
        subject      TEXT NOT NULL DEFAULT '',
        score        REAL NOT NULL DEFAULT 1.0,
        stability    REAL NOT NULL DEFAULT 1.0,
        created      REAL NOT NULL,
        last_used    REAL NOT NULL,
        last_decay   REAL NOT NULL,
        status       TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
        archived_why TEXT,
        cue          TEXT,
        due          REAL,
        priority     TEXT,
        state        TEXT,
        extra        TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX items_kind ON items(kind, status);
    -- Duplicates and corrections are looked up by text and by name: these indexes name every
    -- column those lookups test, so SQLite never prefers walking `items_kind`.
    CREATE INDEX items_norm ON items(norm, kind, status);
    CREATE INDEX items_slot ON items(name_norm, subject, kind, status);
    CREATE VIRTUAL TABLE items_fts USING fts5(
        name, body, tags, content = 'items', content_rowid = 'id', tokenize = 'porter unicode61'
    );
    CREATE TRIGGER items_fts_insert AFTER INSERT ON items BEGIN
        INSERT INTO items_fts(rowid, name, body, tags) VALUES (new.id, new.name, new.body, new.tags);
    END;
    CREATE TRIGGER items_fts_delete AFTER DELETE ON items BEGIN
        INSERT INTO items_fts(items_fts, rowid, name, body, tags)
            VALUES ('delete', old.id, old.name, old.body, old.tags);
        DELETE FROM vectors WHERE owner = 'item' AND id = old.id;
    END;
    CREATE TRIGGER items_fts_update AFTER UPDATE OF name, body, tags ON items BEGIN
        INSERT INTO items_fts(items_fts, rowid, name, body, tags)
            VALUES ('delete', old.id, old.name, old.body, old.tags);
        INSERT INTO items_fts(rowid, name, body, tags) VALUES (new.id, new.name, new.body, new.tags);
        DELETE FROM vectors WHERE owner = 'item' AND id = old.id;
    END;

    -- kind: 'related' (spreads recall) or 'supersedes' (src replaced dst).
    CREATE TABLE links (
        src   INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
        dst   INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
        kind  TEXT NOT NULL,
        PRIMARY KEY (src, dst, kind)
    );
    CREATE INDEX links_dst ON links(dst);
    CREATE TABLE provenance (
        item  INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
        log   INTEGER NOT NULL REFERENCES log(id) ON DELETE CASCADE,
        PRIMARY KEY (item, log)
    );
    CREATE INDEX provenance_log ON provenance(log);
    CREATE TABLE dreams (
        id       INTEGER PRIMARY KEY,
        started  REAL NOT NULL,
        ended    REAL,
        status   TEXT NOT NULL,
        trigger  TEXT NOT NULL DEFAULT '',
        text     TEXT NOT NULL DEFAULT ''
    );
    ",
    // 2: the memory tree: the chat's raw messages, numbered across the whole conversation,
    // and the summaries made of them (level 0) and of those (level 1 and up).
    r"
    CREATE TABLE tree_nodes (
        id         INTEGER PRIMARY KEY,
        level      INTEGER NOT NULL,
        -- The node it was merged into; NULL while it is in the context.
        parent     INTEGER REFERENCES tree_nodes(id) ON DELETE SET NULL,
        summary    TEXT NOT NULL,
        -- Profile, preferences, goals: a JSON object.
        fields     TEXT NOT NULL DEFAULT '{}',
        first_seq  INTEGER NOT NULL,
        last_seq   INTEGER NOT NULL,
        started    REAL NOT NULL,
        ended      REAL NOT NULL,
        created    REAL NOT NULL
    );
    CREATE INDEX tree_nodes_open ON tree_nodes(parent, level, first_seq);
    CREATE TABLE tree_messages (
        seq      INTEGER PRIMARY KEY,
        at       REAL NOT NULL,
        role     TEXT NOT NULL,
        speaker  TEXT,
        text     TEXT NOT NULL,
        -- The level-0 node it was compressed into; NULL while it is in the buffer.
        node     INTEGER REFERENCES tree_nodes(id) ON DELETE SET NULL
    );
    CREATE INDEX tree_messages_node ON tree_messages(node, seq);
    ",
    // 3: buffered messages a new conversation closed: out of the context, due for a summary.
    r"
    ALTER TABLE tree_messages ADD COLUMN closed INTEGER NOT NULL DEFAULT 0;
    ",
    // 4: the tree's messages by their words (rowid = seq), so a turn can bring back what
    // was said word for word after it left the context.
    r"
    CREATE VIRTUAL TABLE tree_fts USING fts5(text, tokenize = 'porter unicode61');
    INSERT INTO tree_fts(rowid, text) SELECT seq, text FROM tree_messages;
    CREATE TRIGGER tree_fts_insert AFTER INSERT ON tree_messages BEGIN
        INSERT INTO tree_fts(rowid, text) VALUES (new.seq, new.text);
    END;
    CREATE TRIGGER tree_fts_forget AFTER DELETE ON tree_messages BEGIN
        DELETE FROM tree_fts WHERE rowid = old.seq;
    END;
    ",
    // 5: the planner: tasks, their phases in order, and dated plan items checked off.
    // Dates are local calendar days, 'YYYY-MM-DD'; priority 1 is the highest.
    r"
    CREATE TABLE tasks (
        id        INTEGER PRIMARY KEY,
        title     TEXT NOT NULL,
        goal      TEXT NOT NULL DEFAULT '',
        status    TEXT NOT NULL DEFAULT 'open'
                  CHECK (status IN ('open', 'active', 'done', 'dropped')),
        priority  INTEGER NOT NULL DEFAULT 3 CHECK (priority BETWEEN 1 AND 5),
        due       TEXT,
        created   REAL NOT NULL,
        updated   REAL NOT NULL
    );
    CREATE TABLE phases (
        id     INTEGER PRIMARY KEY,
        task   INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
        seq    INTEGER NOT NULL,
        title  TEXT NOT NULL,
        done   INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX phases_task ON phases(task, seq);
    CREATE TABLE plan_items (
        id     INTEGER PRIMARY KEY,
        task   INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
        phase  INTEGER NOT NULL REFERENCES phases(id) ON DELETE CASCADE,
        day    TEXT NOT NULL,
        text   TEXT NOT NULL,
        done   REAL
    );
    CREATE INDEX plan_items_phase ON plan_items(phase, day);
    ",
];

/// The version a fully migrated database has.
pub fn latest() -> u32 {
    MIGRATIONS.len() as u32
}

pub fn version(conn: &Connection) -> rusqlite::Result<u32> {
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
}

pub fn application_id(conn: &Connection) -> rusqlite::Result<i32> {
    conn.pragma_query_value(None, "application_id", |row| row.get(0))
}

/// Whether the file has any table of its own (a database someone else made).
pub fn has_tables(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row("SELECT count(*) FROM sqlite_schema WHERE type = 'table'", [], |row| {
        row.get::<_, i64>(0)
    })
    .map(|n| n > 0)
}

/// Applies every step after the database's version, each in its own transaction with the
/// version bump, so a crash leaves the database at a whole version.
pub fn migrate(conn: &mut Connection, to: u32) -> rusqlite::Result<u32> {
    let from = version(conn)?;
    for step in from..to {
        let tx = conn.transaction()?;
        tx.execute_batch(MIGRATIONS[step as usize])?;
        tx.pragma_update(None, "application_id", APPLICATION_ID)?;
        tx.pragma_update(None, "user_version", step + 1)?;
        tx.commit()?;
    }
    Ok(from)
}
