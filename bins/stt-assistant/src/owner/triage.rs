//! The loop's side of triage: what it hands the lane (the words viewers were shown, each
//! settled turn, `clear`), what it publishes of the lane's signals, and when it asks the
//! model for an extraction (a confidence at `[triage].escalate_threshold`: the lowest job in
//! the queue, and only the newest window waits). Display only: nothing here starts a mode, a
//! command or a tool.

use stt_proto::{
    AssistantEvent, ErrorCode, LaneState, Triage, TriageContent, TriageSignal, TriageStage,
};

use super::{Input, Owner};
use crate::lane::{Board, State};
use crate::llm::Work;
use crate::llm::triage::Extraction;
use crate::triage::{Report, Settings, Signals, Trained};

/// The lane's name in `status`.
const LANE: &str = "triage";

/// The lane, and what the loop keeps of it.
#[derive(Debug, Default)]
pub struct Side {
    /// `None` when `[triage]` is off, or the lane went off.
    lane: Option<crate::triage::Triage>,
    threshold: f32,
}

impl Side {
    /// Starts the lane's thread (it loads the classifier there) when `settings` is given.
    pub fn start(
        settings: Option<Settings>,
        inputs: &tokio::sync::mpsc::UnboundedSender<Input>,
        lanes: &mut Board,
    ) -> Self {
        let Some(settings) = settings else { return Self::default() };
        let threshold = settings.escalate;
        let reports = crate::lane::Sink::to(inputs, Input::Triage);
        match crate::triage::spawn(settings, reports) {
            Ok((lane, started)) => {
                lanes.add(LANE, lane.gauge(), LaneState::Started, started);
                Self { lane: Some(lane), threshold }
            }
            Err(e) => {
                let why = format!("triage is off: cannot start its thread: {e}");
                tracing::error!("{why}");
                lanes.failed(LANE, why);
                Self::default()
            }
        }
    }

    /// Lets the lane's threads end: its handle goes (they are joined with the others).
    pub fn stop(&mut self) {
        self.lane = None;
    }

    /// What viewers were just shown, as the lane should hear it.
    pub fn shown(&self, event: &AssistantEvent) {
        let Some(lane) = &self.lane else { return };
        match event {
            AssistantEvent::Transcript(t) => lane.heard(t.seg_id, &t.text),
            AssistantEvent::TurnEnded(turn) => lane.turn(turn.seg_ids.clone()),
            AssistantEvent::Cleared {} => lane.clear(),
            _ => {}
        }
    }
}

fn signals(confidences: &[(String, f32)]) -> Vec<TriageSignal> {
    confidences
        .iter()
        .map(|(category, confidence)| TriageSignal {
            category: category.clone(),
            // Two decimals say all a bar can show, and keep the line short.
            confidence: (confidence * 100.0).round() / 100.0,
        })
        .collect()
}

impl Owner {
    pub(super) fn on_triage(&mut self, report: Report) {
        match report {
            Report::State(state) => self.triage_state(state),
            Report::Failed { why } => tracing::warn!("{why}"),
            Report::Signals(found) => self.triage_signals(found),
        }
    }

    fn triage_state(&mut self, state: State<Trained>) {
        self.lanes.saw(LANE, &state);
        match state {
            State::Ready(Trained { examples, own, took }) => tracing::info!(
                examples,
                own,
                ms = took.as_millis(),
                "triage: the classifier is trained"
            ),
            State::Off { why } => {
                self.triage = Side::default();
                self.error(ErrorCode::Internal, why);
            }
        }
    }

    /// A window's signals: published, and escalated when one reaches the threshold.
    fn triage_signals(&mut self, found: Signals) {
        // From the one allocator, unique across restarts: the TUI drops a window whose id is
        // below the one it shows, so ids from 1 again after a restart froze its panel.
        let id = self.core.next_id();
        let top = found.top().map(|(category, p)| (category.to_owned(), p));
        tracing::debug!(id, top = ?top, "triage: signals");
        self.publish(&AssistantEvent::Triage(Triage {
            id,
            stage: TriageStage::Signals,
            seg_ids: found.seg_ids.clone(),
            signals: signals(&found.confidences),
            content: None,
            error: None,
        }));
        if top.is_some_and(|(_, p)| p >= self.triage.threshold) {
            self.jobs.queue.want(Work::Triage(Box::new(Extraction {
                id,
                seg_ids: found.seg_ids,
                utterances: found.utterances,
                signals: found.confidences,
            })));
        }
    }

    /// The model's extraction of window `window.id`, merged over its signals.
    pub(super) fn triage_extracted(
        &mut self,
        window: Extraction,
        outcome: Result<TriageContent, String>,
    ) {
        let (content, error) = match outcome {
            Ok(content) => (Some(content), None),
            Err(why) => {
                tracing::info!(id = window.id, "triage: the extraction failed: {why}");
                (None, Some(why))
            }
        };
        self.publish(&AssistantEvent::Triage(Triage {
            id: window.id,
            stage: TriageStage::Content,
            seg_ids: window.seg_ids,
            signals: signals(&window.signals),
            content,
            error,
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confidences_go_on_the_wire_to_two_decimals_in_order() {
        let wire = signals(&[("request".into(), 0.823_456), ("task".into(), 0.004)]);
        assert_eq!(wire[0].category, "request");
        assert!((wire[0].confidence - 0.82).abs() < 1e-6);
        assert!(wire[1].confidence.abs() < 1e-6);
    }
}
