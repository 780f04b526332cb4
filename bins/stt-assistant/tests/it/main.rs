//! The assistant's integration tests, one test binary with a module per area (as
//! `tests/tests/it`): the LLM lane against the scripted model, the loop served in this process,
//! and the assistant's binary across a real process. One binary links the assistant and all it
//! depends on once, where ten binaries linked it ten times.
//!
//! Run one area with its module's name as the filter: `cargo test -p stt-assistant --test it
//! memory::`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod chat;
mod command;
mod common;
mod context;
mod in_process;
mod memory;
mod outside;
mod planner;
mod shutdown;
mod speakers;
mod tree;
mod triage;
