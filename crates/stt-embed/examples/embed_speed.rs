//! How long embedding takes, one text per call and many per call, on one ONNX Runtime thread
//! (what stt uses) unless a thread count is given:
//!
//! ```text
//! cargo run --release -p stt-embed --example embed_speed [THREADS]
//! ```
//!
//! The model and ONNX Runtime are found where `scripts/fetch-models` installs them. The texts
//! are 48 short notes of the kind the memory keeps (8 to 25 tokens); each figure is the best
//! of 5 rounds, so a busy machine shows less.

#![allow(clippy::print_stdout, reason = "a command-line report")]

use std::error::Error;
use std::time::{Duration, Instant};

use stt_embed::Embedder;

const NOTES: [&str; 16] = [
    "My sister's birthday is on the third of May.",
    "I prefer dark mode in every editor.",
    "The car is due for its service in October.",
    "Call the dentist to move Tuesday's appointment.",
    "The wifi password at the cabin is written on the fridge.",
    "I am allergic to penicillin.",
    "Remind me to water the tomatoes every evening.",
    "Our project meeting moved to Thursdays at ten.",
    "The spare key is with the neighbour at number twelve.",
    "I want to read more about the history of Lisbon.",
    "My running goal this year is a half marathon under two hours.",
    "The office printer needs toner cartridges of type 305A.",
    "Book tickets for the concert before Friday.",
    "The kids' school closes early on the last day of term.",
    "I take my coffee black, no sugar.",
    "The invoice for the new laptop is in the tax folder.",
];

fn main() -> Result<(), Box<dyn Error>> {
    let threads = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 1,
    };
    let models = stt_config::dirs::models_dir_with(&stt_config::dirs::Env::from_process())?;
    let start = Instant::now();
    let mut embedder = Embedder::load_with_threads(
        &stt_embed::default_dir(&models),
        &stt_embed::runtime_library(&models),
        threads,
    )?;
    println!("load (ONNX Runtime, model, tokenizer, one warm-up run): {:?}", start.elapsed());

    // Three variants of each note, so the batch has 48 texts of similar but not equal length.
    let texts: Vec<String> = ["", "Note: ", "Remember that "]
        .iter()
        .flat_map(|prefix| NOTES.iter().map(move |note| format!("{prefix}{note}")))
        .collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();

    let single = best_of(5, || {
        for text in &texts {
            embedder.embed(&[text])?;
        }
        Ok(())
    })?;
    let batched = best_of(5, || embedder.embed(&texts).map(drop))?;
    // A long note: cut at MAX_TOKENS (256) tokens.
    let long = [NOTES.join(" "), NOTES.join(" ")].join(" ");
    let long = best_of(5, || embedder.embed(&[&long]).map(drop))?;

    let per = |d: Duration| d.as_secs_f64() * 1000.0 / texts.len() as f64;
    println!("{} texts, {threads} thread(s), best of 5:", texts.len());
    println!("  one per call:    {:6.2} ms per text", per(single));
    println!("  all in one call: {:6.2} ms per text ({:.1} ms in all)", per(batched), ms(batched));
    println!("  one text of {} tokens: {:.1} ms", stt_embed::MAX_TOKENS, ms(long));
    Ok(())
}

fn best_of(
    rounds: usize,
    mut f: impl FnMut() -> Result<(), stt_embed::EmbedError>,
) -> Result<Duration, Box<dyn Error>> {
    let mut best = Duration::MAX;
    for _ in 0..rounds {
        let start = Instant::now();
        f()?;
        best = best.min(start.elapsed());
    }
    Ok(best)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
