//! How long OCR takes on a screen-sized picture: a 1920x1080 "screen" of 24 lines of text
//! drawn with DejaVu (as the tests draw theirs), read `ROUNDS` times on 1 and on 2 threads,
//! with the installed models. Prints the median and the slowest read, and how many of the
//! lines came back exactly.
//!
//! `cargo run --release -p stt-ocr --example screen_time`

#![allow(clippy::unwrap_used, clippy::print_stdout, reason = "a measuring tool")]

use std::time::{Duration, Instant};

use stt_ocr::{Ocr, Picture};

const ROUNDS: usize = 5;

fn main() {
    let models = stt_config::dirs::models_dir_with(&stt_config::dirs::Env::from_process()).unwrap();
    let lines: Vec<String> = (0..24)
        .map(|i| {
            format!(
                "Line {i}: cargo test -p stt-assistant finished in {}.{} s, 0 failed",
                3 + i,
                i % 10
            )
        })
        .collect();
    let placed: Vec<(f32, f32, &str)> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            (if i % 2 == 0 { 40.0 } else { 980.0 }, 40.0 + (i / 2) as f32 * 80.0, l.as_str())
        })
        .collect();
    let picture = Picture {
        width: 1920,
        height: 1080,
        rgb: stt_testkit::picture::draw(1920, 1080, 22.0, 25, 245, &placed),
    };
    for threads in [1, 2] {
        let mut ocr = Ocr::load(&models.join("ocr"), &stt_onnx::runtime_library(&models), threads)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut times: Vec<Duration> = Vec::new();
        let mut exact = 0;
        for _ in 0..ROUNDS {
            let started = Instant::now();
            let found = ocr.read(&picture).unwrap();
            times.push(started.elapsed());
            exact = lines.iter().filter(|l| found.iter().any(|f| f.text == **l)).count();
        }
        times.sort();
        println!(
            "{threads} thread(s): median {:.0} ms, slowest {:.0} ms, {exact} of {} lines exact",
            times[ROUNDS / 2].as_secs_f64() * 1000.0,
            times[ROUNDS - 1].as_secs_f64() * 1000.0,
            lines.len()
        );
    }
}
