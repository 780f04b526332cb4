//! The inference queue: every model job goes through one worker, one at a time, because
//! there is one model server. Jobs start by their kind's priority ([`JobKind::priority`]):
//! commands, then chat turns, then background work (the memory tree's summaries, then
//! dreams). A person's jobs wait in a bounded line: a full queue refuses a command (`busy`)
//! and gives up its oldest waiting chat turn; leaving chat drops the chat turns still
//! waiting. Background work recurs: each kind is wanted or not (at most one waits), and
//! wanting it while it runs means one more run after. When a person needs the model, the
//! running job stops if its kind's row says it yields to that [`Need`](crate::kind::Need); background work
//! stopped so is wanted again and goes on later ([`Rule::yields_to`](crate::kind::Rule::yields_to)). The kinds and their
//! rows are [`crate::kind`]'s.
//!
//! Plain data: the assistant's loop owns it, takes the next job when none is running and
//! marks it done when the job reports back.

use std::collections::VecDeque;

use crate::kind::JobKind;
use crate::llm::Work;
use crate::turn::ChatTurn;

/// One model call to make.
#[derive(Debug, Clone, PartialEq)]
pub enum Job {
    /// `segs`: the daemon's segments the text came from, so logs can follow an utterance.
    Command {
        text: String,
        edited: bool,
        segs: Vec<u64>,
    },
    Chat(ChatTurn),
    /// Background work, as it will run; `resumed`: a person stopped it once already.
    Background {
        work: Work,
        resumed: bool,
    },
}

impl Job {
    pub fn kind(&self) -> JobKind {
        match self {
            Job::Command { .. } => JobKind::Command,
            Job::Chat(_) => JobKind::Chat,
            Job::Background { work, .. } => work.kind(),
        }
    }
}

/// The bounded queue in front of the worker.
#[derive(Debug)]
pub struct InferenceQueue {
    /// A person's jobs, in the order they start.
    jobs: VecDeque<Job>,
    /// Background work wanted, one job a kind at most.
    background: Vec<Job>,
    running: Option<JobKind>,
    capacity: usize,
}

impl InferenceQueue {
    pub fn new(capacity: usize) -> Self {
        Self {
            jobs: VecDeque::new(),
            background: Vec::new(),
            running: None,
            capacity: capacity.max(1),
        }
    }

    /// A person's jobs waiting (not counting the one running, nor background work).
    pub fn depth(&self) -> u32 {
        u32::try_from(self.jobs.len()).unwrap_or(u32::MAX)
    }

    /// Whether a job is running, of whatever kind.
    pub fn busy(&self) -> bool {
        self.running.is_some()
    }

    /// The kind of the job running.
    pub fn running(&self) -> Option<JobKind> {
        self.running
    }

    /// Background work is wanted: `work` runs when nothing of a higher priority waits.
    /// Wanted again before it started, the first ask stands (a dream keeps its first
    /// trigger).
    pub fn want(&mut self, work: Work) {
        self.want_job(work, false);
    }

    /// Background work a person stopped is wanted again: it goes on as its row's
    /// [`Rule::resumes`](crate::kind::Rule::resumes) says (unless the same kind was wanted meanwhile).
    pub fn want_again(&mut self, work: Work) {
        self.want_job(work, true);
    }

    fn want_job(&mut self, work: Work, resumed: bool) {
        debug_assert!(!work.kind().rule().person, "a person's job is pushed, not wanted");
        let kind = work.kind();
        match self.background.iter_mut().find(|job| job.kind() == kind) {
            None => self.background.push(Job::Background { work, resumed }),
            // Asked afresh while a stopped one waits to go on: the new ask stands (a dream a
            // person asks for starts when the model is free, not after the quiet).
            Some(waiting @ Job::Background { resumed: true, .. }) if !resumed => {
                *waiting = Job::Background { work, resumed };
            }
            Some(waiting) if kind.rule().newest => *waiting = Job::Background { work, resumed },
            Some(_) => {}
        }
    }

    /// Whether any background work waits.
    pub fn wants_background(&self) -> bool {
        !self.background.is_empty()
    }

    /// Whether background work of `kind` waits.
    pub fn wanted(&self, kind: JobKind) -> bool {
        self.background.iter().any(|job| job.kind() == kind)
    }

    pub fn has_room(&self) -> bool {
        self.jobs.len() < self.capacity
    }

    /// Queues a command ahead of every chat turn. Full: refused, and the oldest waiting chat
    /// turn is dropped (returned), so the next try finds room.
    pub fn push_command(
        &mut self,
        text: String,
        edited: bool,
        segs: Vec<u64>,
    ) -> Result<(), Option<ChatTurn>> {
        if self.jobs.len() >= self.capacity {
            return Err(drop_oldest_chat(&mut self.jobs));
        }
        self.insert(Job::Command { text, edited, segs });
        Ok(())
    }

    /// Puts `job` after every job of its priority or a higher one (lower number).
    fn insert(&mut self, job: Job) {
        let priority = job.kind().priority();
        let at = self
            .jobs
            .iter()
            .position(|waiting| waiting.kind().priority() > priority)
            .unwrap_or(self.jobs.len());
        self.jobs.insert(at, job);
    }

    /// Queues a chat turn; when full, the oldest waiting chat turn makes room (and is
    /// returned). With only commands waiting and no room, the turn itself is dropped.
    pub fn push_chat(&mut self, turn: ChatTurn) -> Option<ChatTurn> {
        let mut dropped = None;
        if self.jobs.len() >= self.capacity {
            dropped = drop_oldest_chat(&mut self.jobs);
            if dropped.is_none() {
                return Some(turn);
            }
        }
        self.insert(Job::Chat(turn));
        dropped
    }

    /// Drops the oldest waiting chat turn, if any (a command was refused for lack of room).
    pub fn drop_oldest_chat(&mut self) -> Option<ChatTurn> {
        drop_oldest_chat(&mut self.jobs)
    }

    /// Drops every waiting chat turn; returns how many.
    pub fn drop_chat(&mut self) -> usize {
        let before = self.jobs.len();
        self.jobs.retain(|job| !matches!(job, Job::Chat(_)));
        before - self.jobs.len()
    }

    /// The next job, if none is running: a person's first, then the background work of the
    /// highest priority that `may` start now (the rest keeps waiting). The worker is then busy
    /// until [`Self::done`].
    pub fn start_next(&mut self, may: impl Fn(&Job) -> bool) -> Option<Job> {
        if self.running.is_some() {
            return None;
        }
        let job = match self.jobs.pop_front() {
            Some(job) => job,
            None => {
                let at = self
                    .background
                    .iter()
                    .enumerate()
                    .filter(|(_, job)| may(job))
                    .min_by_key(|(_, job)| job.kind().priority())
                    .map(|(at, _)| at)?;
                self.background.remove(at)
            }
        };
        self.running = Some(job.kind());
        Some(job)
    }

    /// The running job finished.
    pub fn done(&mut self) {
        self.running = None;
    }
}

fn drop_oldest_chat(jobs: &mut VecDeque<Job>) -> Option<ChatTurn> {
    let at = jobs.iter().position(|job| matches!(job, Job::Chat(_)))?;
    match jobs.remove(at)? {
        Job::Chat(turn) => Some(turn),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(text: &str) -> Job {
        Job::Chat(ChatTurn::typed(text))
    }

    fn command(text: &str) -> Job {
        Job::Command { text: text.into(), edited: false, segs: vec![] }
    }

    fn drain(queue: &mut InferenceQueue) -> Vec<Job> {
        let mut jobs = Vec::new();
        while let Some(job) = queue.start_next(|_| true) {
            jobs.push(job);
            queue.done();
        }
        jobs
    }

    #[test]
    fn commands_jump_ahead_of_chat() {
        let mut queue = InferenceQueue::new(8);
        queue.push_chat(ChatTurn::typed("a"));
        queue.push_chat(ChatTurn::typed("b"));
        queue.push_command("lights".into(), false, vec![]).unwrap();
        assert_eq!(drain(&mut queue), vec![command("lights"), chat("a"), chat("b")]);
    }

    #[test]
    fn a_full_queue_refuses_a_command_and_drops_the_oldest_chat_turn() {
        let mut queue = InferenceQueue::new(2);
        queue.push_chat(ChatTurn::typed("a"));
        queue.push_chat(ChatTurn::typed("b"));
        assert_eq!(
            queue.push_command("lights".into(), false, vec![]),
            Err(Some(ChatTurn::typed("a")))
        );
        assert_eq!(queue.depth(), 1);
        queue.push_command("lights".into(), false, vec![]).unwrap();
        assert_eq!(drain(&mut queue), vec![command("lights"), chat("b")]);
    }

    #[test]
    fn a_full_queue_makes_room_for_a_new_chat_turn() {
        let mut queue = InferenceQueue::new(2);
        queue.push_chat(ChatTurn::typed("a"));
        queue.push_chat(ChatTurn::typed("b"));
        assert_eq!(queue.push_chat(ChatTurn::typed("c")), Some(ChatTurn::typed("a")));
        assert_eq!(drain(&mut queue), vec![chat("b"), chat("c")]);

        queue.push_command("x".into(), false, vec![]).unwrap();
        queue.push_command("y".into(), false, vec![]).unwrap();
        assert_eq!(
            queue.push_chat(ChatTurn::typed("z")),
            Some(ChatTurn::typed("z")),
            "no chat turn to give up"
        );
    }

    #[test]
    fn leaving_chat_drops_waiting_turns_only() {
        let mut queue = InferenceQueue::new(8);
        queue.push_chat(ChatTurn::typed("a"));
        queue.push_command("x".into(), false, vec![]).unwrap();
        queue.push_chat(ChatTurn::typed("b"));
        assert_eq!(queue.drop_chat(), 2);
        assert_eq!(drain(&mut queue), vec![command("x")]);
    }

    fn dream(trigger: &str) -> Work {
        Work::Dream { trigger: trigger.into(), max_steps: 10 }
    }

    fn background(work: Work) -> Job {
        Job::Background { work, resumed: false }
    }

    #[test]
    fn background_work_waits_for_a_persons_jobs_and_runs_by_priority() {
        let mut queue = InferenceQueue::new(2);
        queue.want(dream("idle"));
        queue.want(Work::Tree);
        queue.want(dream("asked"));
        queue.push_chat(ChatTurn::typed("a"));
        assert_eq!(queue.depth(), 1, "background work is not a person's to count");
        // A dream may not start (someone is around): the tree goes, and the dream waits.
        assert_eq!(queue.start_next(|_| true), Some(chat("a")));
        queue.done();
        let not_dream = |job: &Job| job.kind() != JobKind::Dream;
        assert_eq!(queue.start_next(not_dream), Some(background(Work::Tree)));
        assert_eq!(queue.running(), Some(JobKind::Tree));
        // Wanted again while it runs: one more run after.
        queue.want(Work::Tree);
        queue.done();
        assert_eq!(queue.start_next(not_dream), Some(background(Work::Tree)));
        queue.done();
        assert_eq!(queue.start_next(not_dream), None);
        assert!(!queue.busy());
        assert_eq!(queue.start_next(|_| true), Some(background(dream("idle"))));
        assert!(queue.busy(), "a dream holds the model like any job");
        queue.done();
        assert!(!queue.wanted(JobKind::Dream));
    }

    #[test]
    fn a_newer_triage_window_replaces_the_one_waiting_and_goes_last() {
        let window = |id| {
            Work::Triage(Box::new(crate::llm::triage::Extraction {
                id,
                seg_ids: vec![id],
                utterances: vec![format!("utterance {id}")],
                signals: vec![("request".into(), 0.9)],
            }))
        };
        let mut queue = InferenceQueue::new(2);
        queue.want(window(1));
        queue.want(dream("idle"));
        queue.want(window(2));
        queue.want(Work::Tree);
        assert_eq!(queue.start_next(|_| true), Some(background(Work::Tree)));
        queue.done();
        assert_eq!(queue.start_next(|_| true), Some(background(dream("idle"))));
        queue.done();
        assert_eq!(queue.start_next(|_| true), Some(background(window(2))), "the newest only");
        queue.done();
        assert_eq!(queue.start_next(|_| true), None);
    }

    #[test]
    fn stopped_work_is_wanted_again_as_resumed_and_a_fresh_ask_meanwhile_stands() {
        let mut queue = InferenceQueue::new(2);
        queue.want_again(dream("asked"));
        assert!(queue.wants_background());
        let fresh_only = |job: &Job| !matches!(job, Job::Background { resumed: true, .. });
        assert_eq!(queue.start_next(fresh_only), None, "the loop holds a resumed dream back");
        assert_eq!(
            queue.start_next(|_| true),
            Some(Job::Background { work: dream("asked"), resumed: true })
        );
        queue.done();
        queue.want(dream("idle"));
        queue.want_again(dream("asked"));
        assert_eq!(queue.start_next(fresh_only), Some(background(dream("idle"))));
        queue.done();
        // A fresh ask while a stopped one waits for the quiet: the ask stands.
        queue.want_again(dream("asked"));
        queue.want(dream("asked again"));
        assert_eq!(queue.start_next(fresh_only), Some(background(dream("asked again"))));
    }

    #[test]
    fn the_worker_is_busy_between_start_and_done_and_runs_one_job_at_a_time() {
        let mut queue = InferenceQueue::new(2);
        queue.push_chat(ChatTurn::typed("a"));
        queue.push_chat(ChatTurn::typed("b"));
        assert!(!queue.busy());
        assert_eq!(queue.start_next(|_| true), Some(chat("a")));
        assert!(queue.busy());
        assert_eq!(queue.start_next(|_| true), None, "one job at a time");
        queue.done();
        assert!(!queue.busy());
        assert_eq!(queue.start_next(|_| true), Some(chat("b")));
    }
}
