//! The dictation lane: each final transcript said while dictating, typed into the focused
//! window (`dictate_start`; README, "Dictation").
//!
//! A lane like the others: its own thread (typing runs programs, which block), a handle
//! ([`Dictation`]) and a report enum ([`Report`]). The thread keeps the dictation's
//! [`stt_dictate::Phrases`] (spoken commands, capitals, "scratch that") and the
//! [`stt_dictate::Typist`] that found what the session types with. Phrases are typed in the
//! order said, one at a time; none is dropped while the lane lives.
//!
//! What is typed is never logged nor reported: the reports carry counts.

use stt_dictate::{Edit, Phrases, Typist, TypistSettings};

use crate::lane::{self, Jobs, Queue, Sink, State, Thread};

/// What the lane tells the owner.
#[derive(Debug)]
pub enum Report {
    /// Ready: the session can type with these methods. Off: nothing can type in this
    /// session: why, naming what to install. Found without typing when the lane starts and
    /// again when a dictation starts, before anything is said into it.
    State(State<Vec<stt_dictate::Method>>),
    /// A phrase could not be typed: why, naming what to install (dictation goes on).
    Failed { why: String },
    /// A dictation ended (`dictate_stop`): how much of it was typed.
    Ended { phrases: u64, chars: u64 },
}

#[derive(Debug)]
enum Job {
    /// A new dictation: nothing to take back from before.
    Start,
    Phrase(String),
    Stop,
}

/// The handle the owner keeps.
#[derive(Debug, Clone)]
pub struct Dictation {
    jobs: Jobs<Job>,
}

impl Dictation {
    /// How many phrases wait to be typed, for `status`.
    pub fn gauge(&self) -> lane::Gauge {
        self.jobs.gauge()
    }

    /// A new dictation begins.
    pub fn start(&self) {
        self.jobs.send(Job::Start);
    }

    /// Types a final transcript.
    pub fn phrase(&self, text: &str) {
        self.jobs.send(Job::Phrase(text.to_owned()));
    }

    /// The dictation ends once what was said is typed; [`Report::Ended`] says how much.
    pub fn stop(&self) {
        self.jobs.send(Job::Stop);
    }
}

/// Starts the lane's thread.
pub fn spawn(
    settings: TypistSettings,
    reports: Sink<Report>,
) -> std::io::Result<(Dictation, Thread)> {
    let (jobs, thread) = lane::start("dictate", move |rx| run(settings, &rx, &reports))?;
    Ok((Dictation { jobs }, thread))
}

/// Says what the session can type with, or why nothing can ([`Report::State`]); that why, as told (a phrase failing for it is not told again).
fn ready(typist: &Typist, reports: &Sink<Report>) -> Option<String> {
    match typist.ready() {
        Ok(methods) => {
            reports.send(Report::State(State::Ready(methods)));
            None
        }
        Err(e) => {
            let why = e.to_string();
            reports.send(Report::State(State::Off { why: why.clone() }));
            Some(why)
        }
    }
}

fn run(settings: TypistSettings, jobs: &Queue<Job>, reports: &Sink<Report>) {
    let mut typist = Typist::new(settings);
    let mut phrases = Phrases::default();
    let (mut said, mut typed) = (0_u64, 0_u64);
    // The last failure told, so a dictation into a session without a tool says it once.
    let mut told: Option<String> = ready(&typist, reports);
    while let Ok(job) = jobs.recv() {
        match job {
            Job::Start => {
                phrases = Phrases::default();
                (said, typed) = (0, 0);
                told = ready(&typist, reports);
            }
            Job::Stop => reports.send(Report::Ended { phrases: said, chars: typed }),
            Job::Phrase(text) => {
                said += 1;
                let edits = phrases.phrase(&text);
                if edits.is_empty() {
                    continue;
                }
                match typist.edits(&edits) {
                    Ok(method) => {
                        let chars: u64 = edits
                            .iter()
                            .map(|e| match e {
                                Edit::Type(text) => text.chars().count() as u64,
                                Edit::Erase(_) => 0,
                            })
                            .sum();
                        typed += chars;
                        tracing::debug!(chars, method = method.name(), "typed a phrase");
                        told = None;
                    }
                    Err(e) => {
                        let why = e.to_string();
                        tracing::warn!(%why, "dictation could not type a phrase");
                        if told.as_ref() != Some(&why) {
                            reports.send(Report::Failed { why: why.clone() });
                            told = Some(why);
                        }
                    }
                }
            }
        }
    }
}
