//! How long a speaker embedding takes, per second of speech, on one ONNX Runtime thread (what
//! stt uses) unless a thread count is given:
//!
//! ```text
//! cargo run --release -p stt-speaker --example voice_speed [THREADS]
//! ```
//!
//! The model and ONNX Runtime are found where `scripts/fetch-speaker-model` and
//! `scripts/fetch-models` install them. The speech is espeak-ng's (made with the test kit,
//! cached under the system's temporary directory): one sentence of about 3.5 s (embedded
//! whole) and six sentences joined (about 21.5 s: six windows of 4 s). The features' share of
//! the time is shown apart; the rest is the model. Each figure is the best of 5 rounds, so a
//! busy machine shows less.

#![allow(clippy::print_stdout, reason = "a command-line report")]

use std::error::Error;
use std::time::{Duration, Instant};

use stt_speaker::embed::{self, Embedder};
use stt_speaker::fbank::{Fbank, SAMPLE_RATE};
use stt_testkit::speech::{Line, Part, Speech};

const SENTENCES: [&str; 6] = [
    "Please set a timer for ten minutes and remind me to call my sister.",
    "The quick brown fox jumps over the lazy dog, then rests in the shade.",
    "It is raining again, so bring an umbrella when you go out tonight.",
    "Our project meeting moved to Thursdays at ten in the big room.",
    "The spare key is with the neighbour who lives at number twelve.",
    "I would like to read more about the history of Lisbon this year.",
];

fn main() -> Result<(), Box<dyn Error>> {
    let threads = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 1,
    };
    let models = stt_testkit::models_dir();
    let start = Instant::now();
    let mut embedder = Embedder::load_with_threads(
        &embed::default_path(&models),
        &stt_embed::runtime_library(&models),
        threads,
    )?;
    println!("load (ONNX Runtime, model, one warm-up run): {:?}", start.elapsed());

    let speech = Speech::new(std::env::temp_dir().join("stt-speaker-speech"));
    let say = |text| Part::Say(Line { text, voice: "en-us+m3" });
    let short = speech.samples(&[say(SENTENCES[3])]);
    let long = speech.samples(&SENTENCES.map(say));

    println!("{threads} thread(s), best of 5:");
    for (name, samples) in [("one sentence", &short), ("six sentences", &long)] {
        let seconds = samples.len() as f64 / f64::from(SAMPLE_RATE);
        let mut fbank = Fbank::new();
        let features = best_of(5, || {
            fbank.compute(samples);
            Ok(())
        })?;
        let total = best_of(5, || embedder.embed(samples).map(drop))?;
        let (total, features) = (ms(total), ms(features));
        println!(
            "  {name} ({seconds:.1} s): {total:6.1} ms, {:5.1} ms per second of speech \
             (features {features:.1} ms)",
            total / seconds
        );
    }
    Ok(())
}

fn best_of(
    rounds: usize,
    mut f: impl FnMut() -> Result<(), embed::EmbedError>,
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
