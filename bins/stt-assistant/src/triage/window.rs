//! The last utterances of the speech stream, and the signals they give together.
//!
//! Each utterance is classified once. A window's confidence in a category is the highest of
//! its utterances', each weighed down by [`DECAY`] for every utterance said after it: what
//! was just said leads, and a request two utterances back still shows, fainter.

use std::collections::VecDeque;

use super::classify::{Classifier, ClassifyError};

/// The weight an utterance loses for each one said after it.
pub const DECAY: f32 = 0.7;

/// A window's signals.
#[derive(Debug, Clone, PartialEq)]
pub struct Signals {
    /// The settled turn that asked.
    pub seg_ids: Vec<u64>,
    /// The window's utterances, oldest first: what an extraction reads.
    pub utterances: Vec<String>,
    /// A confidence in 0..=1 per category, in the classifier's order.
    pub confidences: Vec<(String, f32)>,
}

impl Signals {
    /// The category with the highest confidence, and the confidence.
    pub fn top(&self) -> Option<(&str, f32)> {
        self.confidences.iter().max_by(|a, b| a.1.total_cmp(&b.1)).map(|(c, p)| (c.as_str(), *p))
    }
}

#[derive(Debug)]
struct Utterance {
    seg_id: u64,
    text: String,
    /// Its confidences, once classified.
    confidences: Option<Vec<f32>>,
}

/// The last `size` utterances.
#[derive(Debug)]
pub struct Window {
    size: usize,
    utterances: VecDeque<Utterance>,
}

impl Window {
    pub fn new(size: usize) -> Self {
        Self { size: size.max(1), utterances: VecDeque::new() }
    }

    /// An utterance heard; the oldest leaves when the window is full. The same segment's
    /// words again replace its earlier ones.
    pub fn push(&mut self, seg_id: u64, text: String) {
        self.utterances.retain(|u| u.seg_id != seg_id);
        self.utterances.push_back(Utterance { seg_id, text, confidences: None });
        while self.utterances.len() > self.size {
            self.utterances.pop_front();
        }
    }

    pub fn clear(&mut self) {
        self.utterances.clear();
    }

    /// The window's signals for the turn `seg_ids`, classifying what was not yet; `None`
    /// when it holds no utterance.
    pub fn signals(
        &mut self,
        classifier: &mut dyn Classifier,
        seg_ids: Vec<u64>,
    ) -> Result<Option<Signals>, ClassifyError> {
        if self.utterances.is_empty() {
            return Ok(None);
        }
        let new: Vec<usize> = (0..self.utterances.len())
            .filter(|&i| self.utterances[i].confidences.is_none())
            .collect();
        if !new.is_empty() {
            let texts: Vec<&str> = new.iter().map(|&i| self.utterances[i].text.as_str()).collect();
            let classified = classifier.classify(&texts)?;
            if classified.len() != new.len() {
                return Err(ClassifyError(format!(
                    "the classifier gave {} answers for {} utterances",
                    classified.len(),
                    new.len()
                )));
            }
            for (i, confidences) in new.into_iter().zip(classified) {
                self.utterances[i].confidences = Some(confidences);
            }
        }
        let newest = self.utterances.len() - 1;
        let confidences = classifier
            .categories()
            .iter()
            .enumerate()
            .map(|(c, name)| {
                let best = self
                    .utterances
                    .iter()
                    .enumerate()
                    .map(|(i, u)| {
                        let p = u.confidences.as_ref().and_then(|p| p.get(c)).copied();
                        #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
                        let age = (newest - i) as i32;
                        p.unwrap_or(0.0).clamp(0.0, 1.0) * DECAY.powi(age)
                    })
                    .fold(0.0f32, f32::max);
                (name.clone(), best)
            })
            .collect();
        Ok(Some(Signals {
            seg_ids,
            utterances: self.utterances.iter().map(|u| u.text.clone()).collect(),
            confidences,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gives "ask …" to `request`, "why …" to `question`, anything else nothing; counts
    /// the texts it was given.
    struct Words {
        categories: Vec<String>,
        seen: usize,
    }

    impl Classifier for Words {
        fn categories(&self) -> &[String] {
            &self.categories
        }

        fn classify(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ClassifyError> {
            self.seen += texts.len();
            Ok(texts
                .iter()
                .map(|t| match t.split_whitespace().next() {
                    Some("ask") => vec![0.9, 0.05],
                    Some("why") => vec![0.1, 0.8],
                    _ => vec![0.0, 0.0],
                })
                .collect())
        }
    }

    fn words() -> Words {
        Words { categories: vec!["request".into(), "question".into()], seen: 0 }
    }

    #[test]
    fn what_was_just_said_leads_and_older_utterances_fade() {
        let mut classifier = words();
        let mut window = Window::new(3);
        assert_eq!(window.signals(&mut classifier, vec![]).unwrap(), None, "nothing heard");
        window.push(1, "ask Ana for the keys".into());
        let signals = window.signals(&mut classifier, vec![1]).unwrap().unwrap();
        assert_eq!(signals.top(), Some(("request", 0.9)));
        window.push(2, "why is it cold".into());
        let signals = window.signals(&mut classifier, vec![2]).unwrap().unwrap();
        assert_eq!(signals.top(), Some(("question", 0.8)));
        let request = signals.confidences[0].1;
        assert!((request - 0.9 * DECAY).abs() < 1e-6, "{request}");
        assert_eq!(classifier.seen, 2, "each utterance classified once");
        assert_eq!(signals.utterances, ["ask Ana for the keys", "why is it cold"]);
    }

    #[test]
    fn the_window_keeps_its_size_and_clear_empties_it() {
        let mut classifier = words();
        let mut window = Window::new(2);
        window.push(1, "ask for tea".into());
        window.push(2, "nice day".into());
        window.push(3, "lovely".into());
        let signals = window.signals(&mut classifier, vec![3]).unwrap().unwrap();
        assert_eq!(signals.confidences[0].1, 0.0, "the request left the window");
        assert_eq!(signals.utterances.len(), 2);
        window.push(3, "why not".into());
        let signals = window.signals(&mut classifier, vec![3]).unwrap().unwrap();
        assert_eq!(signals.utterances, ["nice day", "why not"], "a segment's words replaced");
        window.clear();
        assert_eq!(window.signals(&mut classifier, vec![4]).unwrap(), None);
    }
}
