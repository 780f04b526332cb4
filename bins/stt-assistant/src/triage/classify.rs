//! What kind of thing was said: a confidence per category for each utterance.
//!
//! [`Classifier`] is the one interface the lane sees; [`EmbeddingClassifier`] is the one
//! built in: a sentence embedding (`stt-embed`'s MiniLM, the model memory uses) under a
//! softmax regression [`Head`] trained, when the lane loads, on labelled examples
//! ([`EXAMPLES`], `triage/train.tsv` in the repository, and the user's own file). Training
//! takes a fraction of a second; embedding the examples, about a second, on the lane's
//! loader thread. [`Centroids`] (each label's mean vector) is the simple peer the benchmark
//! measures it against.
//!
//! The labels are the [`CATEGORIES`] and [`CHATTER`], "none of these": an utterance of
//! small talk gives every category a low confidence.

use std::fmt;

/// The categories, in the order signals list them. docs/TRIAGE.md says what each means.
pub const CATEGORIES: [&str; 6] = ["request", "question", "task", "decision", "problem", "urgency"];

/// The label of an utterance that is none of the categories.
pub const CHATTER: &str = "chatter";

/// The labelled examples the classifier is trained on, kept in the repository.
pub const EXAMPLES: &str = include_str!("../../triage/train.tsv");

/// The held-out examples the benchmark reports accuracy on; never trained on.
pub const HELD_OUT: &str = include_str!("../../triage/test.tsv");

/// Every label an example may carry: the categories, then [`CHATTER`].
pub fn labels() -> Vec<String> {
    CATEGORIES.iter().chain(&[CHATTER]).map(|&l| l.to_owned()).collect()
}

/// One labelled utterance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Example {
    /// Its index in [`labels`].
    pub label: usize,
    pub text: String,
}

/// A line of an examples file that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    pub line: usize,
    pub why: String,
}

impl fmt::Display for BadLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.why)
    }
}

/// The examples in `text`: one a line, `label<TAB>words`; `#` starts a comment line, blank
/// lines are skipped.
pub fn parse_examples(text: &str) -> Result<Vec<Example>, BadLine> {
    let labels = labels();
    let mut examples = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let bad = |why: String| BadLine { line: line_no, why };
        let Some((label, words)) = line.split_once('\t') else {
            return Err(bad("no tab: write the label, a tab, then the words".into()));
        };
        let label = label.trim().to_lowercase();
        let Some(index) = labels.iter().position(|l| *l == label) else {
            return Err(bad(format!("unknown label {label:?}: one of {}", labels.join(", "))));
        };
        let words = words.trim();
        if words.is_empty() {
            return Err(bad("no words after the label".into()));
        }
        examples.push(Example { label: index, text: words.to_owned() });
    }
    Ok(examples)
}

/// Why a classifier could not classify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassifyError(pub String);

impl fmt::Display for ClassifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Anything that gives each utterance a confidence per category. The lane needs no more; a
/// classifier of another kind (a user's own exported model) implements this.
pub trait Classifier: Send {
    /// The categories it gives confidences for, in order.
    fn categories(&self) -> &[String];

    /// For each text, a confidence in 0..=1 per category of [`Classifier::categories`].
    fn classify(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ClassifyError>;
}

/// Softmax regression over unit vectors: one weight vector and bias per label.
#[derive(Debug, Clone)]
pub struct Head {
    weights: Vec<Vec<f32>>,
    bias: Vec<f32>,
}

/// How a [`Head`] is fitted: full-batch gradient descent on the cross-entropy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    pub epochs: usize,
    pub rate: f32,
    /// L2 penalty on the weights: keeps confidences from running to 0 and 1 on a few dozen
    /// examples a label.
    pub l2: f32,
}

impl Fit {
    /// What the lane trains with (chosen by `scripts/bench-triage --tune`: five-fold
    /// cross-validation on the training examples only).
    pub const DEFAULT: Fit = Fit { epochs: 400, rate: 4.0, l2: 1e-4 };
}

impl Head {
    /// Fits `labels` labels to `examples` (a vector and its label's index) with
    /// [`Fit::DEFAULT`]. Deterministic: the same examples give the same head.
    pub fn train(examples: &[(Vec<f32>, usize)], labels: usize) -> Head {
        Self::train_with(examples, labels, Fit::DEFAULT)
    }

    /// [`Head::train`] with another fit.
    pub fn train_with(examples: &[(Vec<f32>, usize)], labels: usize, fit: Fit) -> Head {
        let dim = examples.first().map_or(0, |(x, _)| x.len());
        let mut head = Head { weights: vec![vec![0.0; dim]; labels], bias: vec![0.0; labels] };
        if examples.is_empty() {
            return head;
        }
        #[allow(clippy::cast_precision_loss, reason = "a few hundred examples")]
        let n = examples.len() as f32;
        let mut grad_w = vec![vec![0.0f32; dim]; labels];
        let mut grad_b = vec![0.0f32; labels];
        for _ in 0..fit.epochs {
            for g in &mut grad_w {
                g.fill(0.0);
            }
            grad_b.fill(0.0);
            for (x, label) in examples {
                let p = head.probabilities(x);
                for (k, pk) in p.iter().enumerate() {
                    let err = pk - if k == *label { 1.0 } else { 0.0 };
                    grad_b[k] += err;
                    for (g, xi) in grad_w[k].iter_mut().zip(x) {
                        *g += err * xi;
                    }
                }
            }
            for k in 0..labels {
                head.bias[k] -= fit.rate * grad_b[k] / n;
                for (w, g) in head.weights[k].iter_mut().zip(&grad_w[k]) {
                    *w -= fit.rate * (g / n + fit.l2 * *w);
                }
            }
        }
        head
    }

    /// The probability of each label for `x`.
    pub fn probabilities(&self, x: &[f32]) -> Vec<f32> {
        let logits: Vec<f32> = self
            .weights
            .iter()
            .zip(&self.bias)
            .map(|(w, b)| b + w.iter().zip(x).map(|(w, x)| w * x).sum::<f32>())
            .collect();
        softmax(&logits)
    }
}

/// Each label's mean vector; a text's label probabilities are a softmax of its cosine to
/// each, sharpened. The peer [`Head`] is measured against.
#[derive(Debug, Clone)]
pub struct Centroids {
    centroids: Vec<Vec<f32>>,
}

/// Cosines of MiniLM vectors lie close together: this spreads them before the softmax.
const CENTROID_SHARPNESS: f32 = 20.0;

impl Centroids {
    pub fn train(examples: &[(Vec<f32>, usize)], labels: usize) -> Centroids {
        let dim = examples.first().map_or(0, |(x, _)| x.len());
        let mut centroids = vec![vec![0.0f32; dim]; labels];
        for (x, label) in examples {
            for (c, xi) in centroids[*label].iter_mut().zip(x) {
                *c += xi;
            }
        }
        for c in &mut centroids {
            let norm = c.iter().map(|v| v * v).sum::<f32>().sqrt().max(f32::EPSILON);
            c.iter_mut().for_each(|v| *v /= norm);
        }
        Centroids { centroids }
    }

    pub fn probabilities(&self, x: &[f32]) -> Vec<f32> {
        let logits: Vec<f32> = self
            .centroids
            .iter()
            .map(|c| CENTROID_SHARPNESS * c.iter().zip(x).map(|(c, x)| c * x).sum::<f32>())
            .collect();
        softmax(&logits)
    }
}

fn softmax(logits: &[f32]) -> Vec<f32> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let exp: Vec<f32> = logits.iter().map(|l| (l - max).exp()).collect();
    let sum: f32 = exp.iter().sum();
    exp.iter().map(|e| e / sum).collect()
}

/// The built-in classifier: MiniLM sentence vectors under a trained [`Head`].
pub struct EmbeddingClassifier {
    embedder: stt_embed::Embedder,
    head: Head,
    categories: Vec<String>,
}

impl fmt::Debug for EmbeddingClassifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmbeddingClassifier").finish_non_exhaustive()
    }
}

impl EmbeddingClassifier {
    /// Trains a head on `examples` with `embedder`'s vectors.
    pub fn train(
        mut embedder: stt_embed::Embedder,
        examples: &[Example],
    ) -> Result<Self, ClassifyError> {
        let texts: Vec<&str> = examples.iter().map(|e| e.text.as_str()).collect();
        let vectors = embedder.embed(&texts).map_err(|e| ClassifyError(e.to_string()))?;
        let labelled: Vec<(Vec<f32>, usize)> =
            vectors.into_iter().zip(examples.iter().map(|e| e.label)).collect();
        let head = Head::train(&labelled, labels().len());
        let categories = CATEGORIES.iter().map(|&c| c.to_owned()).collect();
        Ok(Self { embedder, head, categories })
    }
}

impl Classifier for EmbeddingClassifier {
    fn categories(&self) -> &[String] {
        &self.categories
    }

    fn classify(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ClassifyError> {
        let vectors = self.embedder.embed(texts).map_err(|e| ClassifyError(e.to_string()))?;
        // The categories come first among the labels; chatter's share is what they lack.
        Ok(vectors
            .iter()
            .map(|v| {
                let mut p = self.head.probabilities(v);
                p.truncate(CATEGORIES.len());
                p
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_examples_in_the_repository_read_and_cover_every_label() {
        for (file, per_label) in [(EXAMPLES, 30), (HELD_OUT, 15)] {
            let examples = parse_examples(file).unwrap();
            for (i, label) in labels().iter().enumerate() {
                let n = examples.iter().filter(|e| e.label == i).count();
                assert!(n >= per_label, "{label}: {n} examples");
            }
        }
        let train = parse_examples(EXAMPLES).unwrap();
        let held_out = parse_examples(HELD_OUT).unwrap();
        assert!(
            !held_out.iter().any(|h| train.iter().any(|t| t.text == h.text)),
            "a held-out example is trained on"
        );
    }

    #[test]
    fn a_bad_line_is_named_with_the_fix() {
        let err = parse_examples("# fine\n\nrequest\tdo it\nrequest do it\n").unwrap_err();
        assert_eq!(err.line, 4);
        assert!(err.why.contains("tab"), "{err}");
        let err = parse_examples("order\tpizza").unwrap_err();
        assert!(err.why.contains("unknown label \"order\"") && err.why.contains("chatter"));
        assert!(parse_examples("task\t  ").unwrap_err().why.contains("no words"));
    }

    /// Three labels apart in three dimensions, with some noise: the head and the centroids
    /// both learn them, and the head is sure where the examples were.
    #[test]
    fn the_head_learns_labels_apart() {
        let mut examples = Vec::new();
        let mut seed = 7u32;
        let mut noise = || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            (seed % 1000) as f32 / 5000.0
        };
        for label in 0..3 {
            for _ in 0..20 {
                let mut x = vec![noise(), noise(), noise()];
                x[label] += 1.0;
                examples.push((x, label));
            }
        }
        let head = Head::train(&examples, 3);
        let centroids = Centroids::train(&examples, 3);
        for (x, label) in &examples {
            let p = head.probabilities(x);
            assert!(p[*label] > 0.8, "{p:?} for label {label}");
            assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-5);
            let q = centroids.probabilities(x);
            let best = q.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).unwrap().0;
            assert_eq!(best, *label);
        }
    }
}
