//! `stt-ctl vocabulary list|add|remove`: the words whisper should expect.
//!
//! These edit the vocabulary file (`stt_config::vocabulary`) here, without the assistant:
//! the daemon reads the file, and a change reaches the running daemon within a quarter of a
//! second, before its next segment. `list` shows the config's `[daemon].vocabulary` too.

use std::io::Write;

use serde_json::json;

use crate::{Cli, EXIT_OK, EXIT_REFUSED, EXIT_USAGE, VocabularyVerb};

/// Runs one vocabulary verb; returns the exit status.
pub fn run(cli: &Cli, verb: &VocabularyVerb, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let path = match stt_config::vocabulary::file() {
        Ok(path) => path,
        Err(e) => {
            let _ = writeln!(err, "stt-ctl: {e}");
            return EXIT_USAGE;
        }
    };
    let result = match verb {
        VocabularyVerb::List => {
            let config = match stt_config::Config::load(cli.config.as_deref()) {
                Ok(config) => config.daemon.vocabulary,
                Err(e) => {
                    let _ = writeln!(err, "stt-ctl: {e}");
                    return EXIT_USAGE;
                }
            };
            stt_config::vocabulary::read(&path).map(|file| {
                let all = stt_config::vocabulary::merged(&config, &file);
                if cli.json {
                    json!({"terms": all, "config": config, "file": file, "path": path}).to_string()
                } else if all.is_empty() {
                    format!(
                        "no vocabulary: `stt-ctl vocabulary add WORD` adds one (to {})",
                        path.display()
                    )
                } else {
                    let mut text = all.join("\n");
                    if !config.is_empty() {
                        text.push_str(&format!(
                            "\n({} from [daemon].vocabulary, {} from {})",
                            config.len(),
                            all.len() - config.len(),
                            path.display()
                        ));
                    }
                    text
                }
            })
        }
        VocabularyVerb::Add { terms } => stt_config::vocabulary::add(&path, terms).map(|added| {
            if cli.json {
                json!({"added": added, "path": path}).to_string()
            } else if added.is_empty() {
                "already in the vocabulary".to_owned()
            } else {
                format!("added {}: the daemon uses it from its next segment", added.join(", "))
            }
        }),
        VocabularyVerb::Remove { term } => {
            stt_config::vocabulary::remove(&path, term).map(|gone| {
                if cli.json {
                    json!({"removed": gone, "path": path}).to_string()
                } else if gone {
                    format!("removed {}", term.trim())
                } else {
                    format!("{:?} is not in {}", term.trim(), path.display())
                }
            })
        }
    };
    match result {
        Ok(text) => {
            let _ = writeln!(out, "{text}");
            EXIT_OK
        }
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
            let _ = writeln!(err, "stt-ctl: {e}");
            EXIT_USAGE
        }
        Err(e) => {
            let _ = writeln!(err, "stt-ctl: the vocabulary file {}: {e}", path.display());
            EXIT_REFUSED
        }
    }
}
