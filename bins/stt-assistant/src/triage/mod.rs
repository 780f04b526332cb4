//! The triage lane: what kind of things are being said, for the display-only panel
//! (`[triage].enabled`; docs/TRIAGE.md).
//!
//! A lane like the others: one worker thread and a loader beside it (which loads the
//! embedding model and trains the classifier, so start-up and the first transcript never
//! wait for it, and hands it to the worker), a handle ([`Triage`]) and a report enum
//! ([`Report`]). Utterances heard while the classifier loads join the window all the same;
//! the last turn that asked is classified once it is there. The owner hands it every utterance the daemon transcribed ([`Triage::heard`],
//! in any mode) and every settled turn ([`Triage::turn`]); on each turn the lane classifies
//! the last `window` utterances and reports their [`Signals`]. Each utterance is classified
//! once, when the first turn after it asks: a turn costs only its new words. It never runs a
//! model job: the owner decides whether signals escalate to an extraction (`llm::triage`).

pub mod classify;
pub mod window;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::lane::{self, Jobs, Queue, Sink, State, Thread};
use classify::{Classifier, EmbeddingClassifier, Example};
pub use window::{Signals, Window};

/// The user's own examples file, in the config directory unless `[triage].examples` says.
pub const OWN_EXAMPLES: &str = "triage-examples.tsv";

/// What the lane needs.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Utterances classified together on each settled turn (`[triage].window`).
    pub window: usize,
    /// The sentence-embedding model (`stt-embed`'s MiniLM) and ONNX Runtime.
    pub embedder: stt_embed::Files,
    /// The user's own labelled examples, trained on beside the built-in ones when the file
    /// is there (`<config dir>/triage-examples.tsv`).
    pub own_examples: PathBuf,
    /// The confidence from which a window's content is asked of the model
    /// (`[triage].escalate_threshold`).
    pub escalate: f32,
}

/// What the lane tells the owner.
#[derive(Debug)]
pub enum Report {
    /// Ready: the classifier is trained. Off: it cannot classify (no embedding model, a bad
    /// examples file): why, with the fix; the lane is off.
    State(State<Trained>),
    /// A settled turn's window, classified.
    Signals(Signals),
    /// Classifying a window failed; the lane goes on with the next.
    Failed { why: String },
}

/// How the classifier was trained: on how many examples (the user's among them), in how long.
#[derive(Debug)]
pub struct Trained {
    pub examples: usize,
    pub own: usize,
    pub took: Duration,
}

enum Ask {
    Heard {
        seg_id: u64,
        text: String,
    },
    Turn {
        seg_ids: Vec<u64>,
    },
    Clear,
    /// From the loader: the classifier, trained.
    Loaded(Box<dyn Classifier>),
}

/// The handle the owner keeps.
#[derive(Debug, Clone)]
pub struct Triage {
    asks: Jobs<Ask>,
}

impl Triage {
    /// How many asks wait for the worker, for `status`.
    pub fn gauge(&self) -> lane::Gauge {
        self.asks.gauge()
    }

    /// An utterance of the speech stream (empty ones are not).
    pub fn heard(&self, seg_id: u64, text: &str) {
        if !text.trim().is_empty() {
            self.send(Ask::Heard { seg_id, text: text.trim().to_owned() });
        }
    }

    /// A settled turn: classify the window.
    pub fn turn(&self, seg_ids: Vec<u64>) {
        self.send(Ask::Turn { seg_ids });
    }

    /// `clear`: the utterances so far are forgotten.
    pub fn clear(&self) {
        self.send(Ask::Clear);
    }

    fn send(&self, ask: Ask) {
        // The thread is gone only once the lane is off, which the owner was told.
        self.asks.send(ask);
    }
}

/// Starts the lane's threads: the worker, and the loader that hands it the classifier.
pub fn spawn(settings: Settings, reports: Sink<Report>) -> std::io::Result<(Triage, [Thread; 2])> {
    let window = settings.window;
    let worker_reports = reports.clone();
    let (asks, worker) = lane::start("triage", move |rx| serve(window, &rx, &worker_reports))?;
    let loaded = asks.clone();
    let loader = Thread::spawn("triage-loader", move || {
        let started = Instant::now();
        match load(&settings) {
            Ok((classifier, examples, own)) => {
                let trained = Trained { examples, own, took: started.elapsed() };
                reports.send(Report::State(State::Ready(trained)));
                loaded.send(Ask::Loaded(classifier));
            }
            // The worker ends when the owner drops the handle; until then it only keeps the
            // window.
            Err(why) => reports.send(Report::State(State::Off { why })),
        }
    })?;
    Ok((Triage { asks }, [worker, loader]))
}

/// The built-in classifier, trained on the repository's examples and the user's own.
fn load(settings: &Settings) -> Result<(Box<dyn Classifier>, usize, usize), String> {
    let mut examples = classify::parse_examples(classify::EXAMPLES)
        .map_err(|e| format!("triage: the built-in examples, {e} (a bug)"))?;
    let own = own_examples(&settings.own_examples)?;
    let own_count = own.len();
    examples.extend(own);
    let embedder = settings.embedder.load().map_err(|e| format!("triage is off: {e}"))?;
    let classifier = EmbeddingClassifier::train(embedder, &examples)
        .map_err(|e| format!("triage is off: training the classifier failed: {e}"))?;
    Ok((Box::new(classifier), examples.len(), own_count))
}

/// The user's examples file, if there is one.
fn own_examples(path: &std::path::Path) -> Result<Vec<Example>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => classify::parse_examples(&text).map_err(|e| {
            format!(
                "triage is off: {}, {e}; fix the line (docs/TRIAGE.md says how the file is \
                 written) or move the file away",
                path.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(format!("triage is off: cannot read {}: {e}", path.display())),
    }
}

/// The worker: utterances kept, windows classified once the classifier is there, until the
/// owner drops the handle.
fn serve(size: usize, asks: &Queue<Ask>, reports: &Sink<Report>) {
    let mut classifier: Option<Box<dyn Classifier>> = None;
    let mut window = Window::new(size);
    // The last settled turn not classified yet.
    let mut turn = None;
    while let Ok(first) = asks.recv() {
        // What waited while the last window was classified (or the classifier loaded): the
        // utterances all count, but only the latest turn is classified.
        for ask in std::iter::once(first).chain(asks.try_iter()) {
            match ask {
                Ask::Heard { seg_id, text } => window.push(seg_id, text),
                Ask::Turn { seg_ids } => turn = Some(seg_ids),
                Ask::Clear => {
                    window.clear();
                    turn = None;
                }
                Ask::Loaded(loaded) => classifier = Some(loaded),
            }
        }
        let Some(classifier) = classifier.as_mut() else { continue };
        let Some(seg_ids) = turn.take() else { continue };
        match window.signals(classifier.as_mut(), seg_ids) {
            Ok(Some(signals)) => reports.send(Report::Signals(signals)),
            Ok(None) => {}
            Err(e) => reports.send(Report::Failed { why: format!("triage: {e}") }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_examples_are_read_and_a_bad_line_names_the_file_and_the_fix() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join(OWN_EXAMPLES);
        assert_eq!(own_examples(&path), Ok(Vec::new()), "no file: none of the user's");
        std::fs::write(&path, "# mine\nrequest\tPing the on-call engineer.\n").unwrap_or_default();
        let read = own_examples(&path).unwrap_or_default();
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].text, "Ping the on-call engineer.");
        std::fs::write(&path, "request\tfine\nreminder\tnot a label\n").unwrap_or_default();
        let why = own_examples(&path).unwrap_err();
        assert!(why.contains(OWN_EXAMPLES) && why.contains("line 2"), "{why}");
        assert!(
            why.contains("unknown label \"reminder\"") && why.contains("docs/TRIAGE.md"),
            "{why}"
        );
    }
}
