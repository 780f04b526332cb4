//! Fake subscription CLIs (claude, codex, gemini, opencode) on a temporary `PATH`: small
//! scripts that print the real tools' stream formats, for the CLI providers' tests.
//!
//! NOT BUILT YET.
