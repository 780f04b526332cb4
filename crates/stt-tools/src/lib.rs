//! What the assistant may do, and the record of what it did.
//!
//! Modules, in reading order:
//! - [`audit`]: the append-only audit log of actions, one JSON line per action in
//!   `<data_dir>/audit/YYYY-MM-DD.jsonl` (file 0600, directory 0700). Only actions are
//!   written: never chat, never audio.

pub mod audit;

pub use audit::{ActionRecord, AuditLog, SpeakerRecord};
