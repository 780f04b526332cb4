//! The loop's side of dictation: the lane started when first needed, each dictation's start
//! and end audited, what the lane could not type told.

use stt_proto::ErrorCode;
use stt_tools::DictationRecord;

use super::{Input, Owner};

/// The dictation lane and how it types.
#[derive(Debug)]
pub(super) struct Side {
    /// The lane, once dictation has been on (started by the first `dictate_start`).
    pub lane: Option<crate::dictate::Dictation>,
    pub settings: stt_dictate::TypistSettings,
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
        if self.dictate.lane.is_none() {
            let inputs = self.inputs.clone();
            let reports = crate::lane::Sink::new(move |report| {
                // Gone only when the loop has ended, and then nobody listens.
                let _ = inputs.send(Input::Dictate(report));
            });
            match crate::dictate::spawn(self.dictate.settings.clone(), reports) {
                Ok((dictation, thread)) => {
                    self.dictate.lane = Some(dictation);
                    self.threads.push(thread);
                }
                Err(e) => {
                    self.error(ErrorCode::Internal, format!("cannot start dictation: {e}"));
                    return;
                }
            }
        }
        if let Some(dictation) = &self.dictate.lane {
            dictation.start();
        }
        tracing::info!("dictation on");
        self.writer.audit_dictation(DictationRecord::on(self.clock.local_now()));
    }

    pub(super) fn on_dictate(&mut self, report: crate::dictate::Report) {
        match report {
            crate::dictate::Report::Failed { why } => self.error(ErrorCode::DictateFailed, why),
            crate::dictate::Report::Ended { phrases, chars } => {
                tracing::info!(phrases, chars, "dictation off");
                let record = DictationRecord::off(phrases, chars, self.clock.local_now());
                self.writer.audit_dictation(record);
            }
        }
    }
}
