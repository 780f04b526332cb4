//! The loop's side of dictation: the lane, started with the others, each dictation's start
//! and end audited, what the lane could not type told (at a dictation's start when nothing
//! in the session can type).

use stt_proto::{ErrorCode, LaneState};
use stt_tools::DictationRecord;

use super::{Input, Owner};
use crate::lane::{Board, State};

/// The lane's name in `status`.
const LANE: &str = "dictation";

/// The dictation lane.
#[derive(Debug)]
pub(super) struct Side {
    /// The lane; none when its thread could not start (said at start, and to each
    /// `dictate_start`).
    pub lane: Option<crate::dictate::Dictation>,
}

impl Side {
    /// Starts the lane's thread, which types as `settings` say (it waits for a dictation).
    pub fn start(
        settings: stt_dictate::TypistSettings,
        inputs: &tokio::sync::mpsc::UnboundedSender<Input>,
        lanes: &mut Board,
    ) -> Self {
        match crate::dictate::spawn(settings, crate::lane::Sink::to(inputs, Input::Dictate)) {
            Ok((lane, thread)) => {
                lanes.add(LANE, lane.gauge(), LaneState::Started, [thread]);
                Self { lane: Some(lane) }
            }
            Err(e) => {
                let why = format!("dictation is off: cannot start its thread: {e}");
                tracing::error!("{why}");
                lanes.failed(LANE, why);
                Self { lane: None }
            }
        }
    }
}

impl Owner {
    /// Dictation turned on or off (the core has changed the mode).
    pub(super) fn dictation(&mut self, on: bool) {
        if !on {
            // Audited with its counts once the lane has typed what was said (`Ended`).
            if let Some(dictation) = &self.dictate.lane {
                dictation.stop();
            }
            return;
        }
        let Some(dictation) = &self.dictate.lane else {
            self.error(
                ErrorCode::Internal,
                "dictation is off: its thread could not start (see the log)",
            );
            return;
        };
        dictation.start();
        tracing::info!("dictation on");
        self.writer.audit_dictation(DictationRecord::on(self.clock.local_now()));
    }

    pub(super) fn on_dictate(&mut self, report: crate::dictate::Report) {
        match report {
            crate::dictate::Report::State(state) => {
                self.lanes.saw(LANE, &state);
                match state {
                    State::Ready(methods) => {
                        let names: Vec<&str> = methods.iter().map(|m| m.name()).collect();
                        tracing::info!(methods = ?names, "dictation can type");
                    }
                    // Said at once to a person starting a dictation; at the start a session
                    // without a desktop (a server, a test) is no fault.
                    State::Off { why } if self.core.mode() == stt_proto::Mode::Dictate => {
                        self.error(ErrorCode::DictateFailed, why);
                    }
                    State::Off { why } => tracing::info!(%why, "dictation cannot type here"),
                }
            }
            crate::dictate::Report::Failed { why } => self.error(ErrorCode::DictateFailed, why),
            crate::dictate::Report::Ended { phrases, chars } => {
                tracing::info!(phrases, chars, "dictation off");
                let record = DictationRecord::off(phrases, chars, self.clock.local_now());
                self.writer.audit_dictation(record);
            }
        }
    }
}
