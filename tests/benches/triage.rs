//! The triage classifier's benchmark: trained on `bins/stt-assistant/triage/train.tsv` as
//! the assistant's triage lane trains it, then judged on the held-out
//! `bins/stt-assistant/triage/test.tsv`: accuracy, the confusion matrix, and each label's
//! precision and recall; the same for the nearest-centroid peer on the same vectors; then the
//! time the lane takes to load (embedding and training) and to give the signals of a window
//! of six utterances, none seen before.
//!
//! Run it with `scripts/bench-triage [--write]`; `--write` rewrites its section of
//! docs/PERFORMANCE.md. `--tune` instead prints five-fold cross-validation on the training
//! examples alone (never the held-out ones) for a grid of fits: how `Fit::DEFAULT` was chosen. Needs the embedding model and ONNX Runtime (`scripts/fetch-models`).

#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use stt_assistant::triage::classify::{
    self, Centroids, Classifier, EmbeddingClassifier, Example, Fit, Head,
};
use stt_embed::Embedder;
use stt_testkit::perf::{self, Stats};

/// Windows timed for the signals' speed.
const WINDOWS: usize = 60;

fn load_embedder() -> Result<Embedder, String> {
    let models = stt_testkit::models_dir();
    Embedder::load(&stt_embed::default_dir(&models), &stt_embed::runtime_library(&models))
        .map_err(|e| e.to_string())
}

/// Accuracy, confusion matrix (rows: the label written; columns: the one predicted) and
/// per-label precision and recall, as Markdown.
fn judged(
    name: &str,
    predicted: &[usize],
    examples: &[Example],
    labels: &[String],
) -> (f64, String) {
    let k = labels.len();
    let mut matrix = vec![vec![0usize; k]; k];
    for (p, e) in predicted.iter().zip(examples) {
        matrix[e.label][*p] += 1;
    }
    let right: usize = (0..k).map(|i| matrix[i][i]).sum();
    let accuracy = right as f64 / examples.len() as f64;
    let mut out = format!(
        "**{name}**: {right} of {} right (**{:.1}%**).\n\n| written \\ predicted |",
        examples.len(),
        accuracy * 100.0
    );
    for l in labels {
        let _ = write!(out, " {l} |");
    }
    out.push_str(" recall |\n|---|");
    out.push_str(&"---:|".repeat(k + 1));
    out.push('\n');
    for (i, row) in matrix.iter().enumerate() {
        let _ = write!(out, "| {} |", labels[i]);
        for (j, n) in row.iter().enumerate() {
            if i == j {
                let _ = write!(out, " **{n}** |");
            } else {
                let _ = write!(out, " {n} |");
            }
        }
        let total: usize = row.iter().sum();
        let _ = writeln!(out, " {:.0}% |", 100.0 * row[i] as f64 / total.max(1) as f64);
    }
    out.push_str("| precision |");
    for j in 0..k {
        let column: usize = matrix.iter().map(|row| row[j]).sum();
        let _ = write!(out, " {:.0}% |", 100.0 * matrix[j][j] as f64 / column.max(1) as f64);
    }
    out.push_str(" |\n");
    (accuracy, out)
}

fn best(p: &[f32]) -> usize {
    p.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map_or(0, |(i, _)| i)
}

/// Five-fold cross-validation on `labelled` for a grid of fits: accuracy, the mean
/// probability given to the right label, and the log-loss.
fn tune(labelled: &[(Vec<f32>, usize)], labels: usize) {
    const FOLDS: usize = 5;
    println!(
        "| epochs | rate | l2 | accuracy | p(right) | log-loss |\n|---:|---:|---:|---:|---:|---:|"
    );
    for epochs in [400, 1000, 2500] {
        for rate in [4.0, 10.0] {
            for l2 in [1e-3, 1e-4, 0.0] {
                let fit = Fit { epochs, rate, l2 };
                let (mut right, mut p_right, mut loss) = (0usize, 0.0f64, 0.0f64);
                for fold in 0..FOLDS {
                    let train: Vec<(Vec<f32>, usize)> = labelled
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| i % FOLDS != fold)
                        .map(|(_, e)| e.clone())
                        .collect();
                    let head = Head::train_with(&train, labels, fit);
                    for (x, label) in labelled.iter().skip(fold).step_by(FOLDS) {
                        let p = head.probabilities(x);
                        right += usize::from(best(&p) == *label);
                        p_right += f64::from(p[*label]);
                        loss -= f64::from(p[*label].max(1e-9)).ln();
                    }
                }
                let n = labelled.len() as f64;
                println!(
                    "| {epochs} | {rate} | {l2} | {:.1}% | {:.2} | {:.3} |",
                    100.0 * right as f64 / n,
                    p_right / n,
                    loss / n
                );
            }
        }
    }
}

fn main() -> ExitCode {
    let write = std::env::args().any(|a| a == "--write");
    let labels = classify::labels();
    let train = classify::parse_examples(classify::EXAMPLES).unwrap();
    let test = classify::parse_examples(classify::HELD_OUT).unwrap();

    let started = Instant::now();
    let mut embedder = match load_embedder() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("bench-triage: {e}");
            return ExitCode::from(1);
        }
    };
    let load_ms = started.elapsed().as_secs_f64() * 1000.0;
    let texts =
        |examples: &[Example]| -> Vec<String> { examples.iter().map(|e| e.text.clone()).collect() };
    let embed = |embedder: &mut Embedder, texts: &[String]| {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        embedder.embed(&refs).unwrap()
    };
    let started = Instant::now();
    let train_vectors = embed(&mut embedder, &texts(&train));
    let embed_train_ms = started.elapsed().as_secs_f64() * 1000.0;
    let labelled: Vec<(Vec<f32>, usize)> =
        train_vectors.into_iter().zip(train.iter().map(|e| e.label)).collect();
    if std::env::args().any(|a| a == "--tune") {
        tune(&labelled, labels.len());
        return ExitCode::SUCCESS;
    }
    let started = Instant::now();
    let head = Head::train(&labelled, labels.len());
    let fit_ms = started.elapsed().as_secs_f64() * 1000.0;
    let centroids = Centroids::train(&labelled, labels.len());

    let test_vectors = embed(&mut embedder, &texts(&test));
    let by_head: Vec<usize> = test_vectors.iter().map(|v| best(&head.probabilities(v))).collect();
    let by_centroid: Vec<usize> =
        test_vectors.iter().map(|v| best(&centroids.probabilities(v))).collect();
    let (head_acc, head_table) = judged(
        "Softmax regression on MiniLM vectors (what the lane runs)",
        &by_head,
        &test,
        &labels,
    );
    let (centroid_acc, centroid_table) =
        judged("Nearest centroid on the same vectors (the peer)", &by_centroid, &test, &labels);
    // Trained as the lane trains it on the training examples: it must agree with the head.
    let mut classifier = EmbeddingClassifier::train(embedder, &train).unwrap();

    // Signals for windows of six utterances the classifier has not seen (the held-out set,
    // six at a time, round and round).
    let mut window_ms = Vec::new();
    for w in 0..WINDOWS {
        let window: Vec<&str> =
            (0..6).map(|i| test[(w * 6 + i) % test.len()].text.as_str()).collect();
        let started = Instant::now();
        let signals = classifier.classify(&window).unwrap();
        window_ms.push(started.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(signals.len(), 6);
    }
    let window = Stats::of(window_ms);

    let report = format!(
        "**Data**: {} training examples and {} held-out ones, {} labels ({} each in training, \
         {} each held out), written for stt (`bins/stt-assistant/triage/`); the held-out set \
         shares no sentence, name or topic pattern with the training set.\n\n{head_table}\n\
         {centroid_table}\n\
         **Speed** (one thread, as the lane runs it): loading the embedding model {load_ms:.0} ms; \
         embedding the {} training examples {embed_train_ms:.0} ms; fitting the head {fit_ms:.0} ms \
         (all on the lane's loader thread, after start-up). Signals for a window of six \
         utterances none seen before: median **{:.1} ms**, p95 {:.1} ms, max {:.1} ms ({} \
         windows; the lane keeps each utterance's confidences, so a settled turn classifies \
         only its new words).\n\n**Targets** (issue 28): signals for a six-utterance window \
         ≤ 30 ms: **{}**.\n",
        train.len(),
        test.len(),
        labels.len(),
        train.len() / labels.len(),
        test.len() / labels.len(),
        train.len(),
        window.p50,
        window.p95,
        window.max,
        window.n,
        if window.p95 <= 30.0 { "met" } else { "not met" },
    );
    println!("{report}");
    eprintln!("head {:.1}%, centroids {:.1}%", head_acc * 100.0, centroid_acc * 100.0);
    if write {
        let section = format!(
            "<!-- bench-triage:start -->\n## Triage: the classifier (`scripts/bench-triage`)\n\n\
             Measured {} on {}, with `scripts/bench-triage --write`.\n\n{report}\
             <!-- bench-triage:end -->\n",
            perf::today(),
            perf::machine()
        );
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/PERFORMANCE.md");
        perf::write_section(
            &path,
            "<!-- bench-triage:start -->",
            "<!-- bench-triage:end -->",
            &section,
        )
        .unwrap();
    }
    ExitCode::SUCCESS
}
