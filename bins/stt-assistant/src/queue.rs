//! The inference queue: every model job goes through one worker, one at a time, because
//! there is one model server. Jobs start by their kind's priority ([`JobKind::rule`]):
//! commands, then chat turns, then background work (the memory tree's summaries, then
//! dreams). A person's jobs wait in a bounded line: a full queue refuses a command (`busy`)
//! and gives up its oldest waiting chat turn; leaving chat drops the chat turns still
//! waiting. Background work recurs: each kind is wanted or not (at most one waits), and
//! wanting it while it runs means one more run after.
//!
//! Plain data: the assistant's loop owns it, takes the next job when none is running and
//! marks it done when the job reports back.

use std::collections::VecDeque;

/// What a model job is for. Everything the loop does differently for a kind is asked of its
/// row here (or matched on the kind, exhaustively), never inferred from what it is not: a kind
/// added tomorrow is one variant and one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobKind {
    /// A person's spoken or typed command, through the tool loop.
    Command,
    /// A chat turn.
    Chat,
    /// The memory tree's next summary.
    Tree,
    /// Memory's consolidation.
    Dream,
}

/// How the loop treats one kind of job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// Lower runs first.
    pub priority: u8,
    /// A person waits for it: its start and end count as activity (the quiet a dream waits
    /// for starts over).
    pub person: bool,
    /// Someone speaking, arming a command or sending chat stops it (it goes on later).
    pub yields: bool,
    /// It calls tools: a provider it fails over to must run them too.
    pub tools: bool,
}

impl JobKind {
    /// Every kind, in priority order.
    pub const ALL: [JobKind; 4] = [JobKind::Command, JobKind::Chat, JobKind::Tree, JobKind::Dream];

    /// This kind's row.
    pub const fn rule(self) -> Rule {
        match self {
            JobKind::Command => Rule { priority: 0, person: true, yields: false, tools: true },
            JobKind::Chat => Rule { priority: 1, person: true, yields: false, tools: false },
            JobKind::Tree => Rule { priority: 2, person: false, yields: false, tools: false },
            JobKind::Dream => Rule { priority: 3, person: false, yields: true, tools: true },
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            JobKind::Command => "command",
            JobKind::Chat => "chat",
            JobKind::Tree => "tree",
            JobKind::Dream => "dream",
        }
    }
}

/// One model call to make.
#[derive(Debug, Clone, PartialEq)]
pub enum Job {
    /// `segs`: the daemon's segments the text came from, so logs can follow an utterance.
    Command {
        text: String,
        edited: bool,
        segs: Vec<u64>,
    },
    Chat {
        text: String,
        segs: Vec<u64>,
    },
    /// The memory tree's next summary, if one is due.
    Tree,
    /// A dream, and why (`asked`, `idle`, …).
    Dream {
        trigger: String,
    },
}

impl Job {
    pub fn kind(&self) -> JobKind {
        match self {
            Job::Command { .. } => JobKind::Command,
            Job::Chat { .. } => JobKind::Chat,
            Job::Tree => JobKind::Tree,
            Job::Dream { .. } => JobKind::Dream,
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

    /// Background work is wanted: `job` runs when nothing of a higher priority waits. Wanted
    /// again before it started, the first ask stands (a dream keeps its first trigger).
    pub fn want(&mut self, job: Job) {
        debug_assert!(!job.kind().rule().person, "a person's job is pushed, not wanted");
        if !self.wanted(job.kind()) {
            self.background.push(job);
        }
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
    ) -> Result<(), Option<Job>> {
        if self.jobs.len() >= self.capacity {
            return Err(drop_oldest_chat(&mut self.jobs));
        }
        self.insert(Job::Command { text, edited, segs });
        Ok(())
    }

    /// Puts `job` after every job of its priority or a higher one (lower number).
    fn insert(&mut self, job: Job) {
        let priority = job.kind().rule().priority;
        let at = self
            .jobs
            .iter()
            .position(|waiting| waiting.kind().rule().priority > priority)
            .unwrap_or(self.jobs.len());
        self.jobs.insert(at, job);
    }

    /// Queues a chat turn; when full, the oldest waiting chat turn makes room (and is
    /// returned). With only commands waiting and no room, the turn itself is dropped.
    pub fn push_chat(&mut self, text: String, segs: Vec<u64>) -> Option<Job> {
        let mut dropped = None;
        if self.jobs.len() >= self.capacity {
            dropped = drop_oldest_chat(&mut self.jobs);
            if dropped.is_none() {
                return Some(Job::Chat { text, segs });
            }
        }
        self.insert(Job::Chat { text, segs });
        dropped
    }

    /// Drops the oldest waiting chat turn, if any (a command was refused for lack of room).
    pub fn drop_oldest_chat(&mut self) -> Option<Job> {
        drop_oldest_chat(&mut self.jobs)
    }

    /// Drops every waiting chat turn; returns how many.
    pub fn drop_chat(&mut self) -> usize {
        let before = self.jobs.len();
        self.jobs.retain(|job| !matches!(job, Job::Chat { .. }));
        before - self.jobs.len()
    }

    /// The next job, if none is running: a person's first, then the background work of the
    /// highest priority that `may` start now (the rest keeps waiting). The worker is then busy
    /// until [`Self::done`].
    pub fn start_next(&mut self, may: impl Fn(JobKind) -> bool) -> Option<Job> {
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
                    .filter(|(_, job)| may(job.kind()))
                    .min_by_key(|(_, job)| job.kind().rule().priority)
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

fn drop_oldest_chat(jobs: &mut VecDeque<Job>) -> Option<Job> {
    let at = jobs.iter().position(|job| matches!(job, Job::Chat { .. }))?;
    jobs.remove(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table, as a person reads it: commands before chat before background work; a
    /// person waits on commands and chat only; only a dream gives way to someone speaking;
    /// commands and dreams call tools.
    #[test]
    fn each_kind_has_its_row() {
        let rows: Vec<(&str, u8, bool, bool, bool)> = JobKind::ALL
            .iter()
            .map(|k| {
                let r = k.rule();
                (k.name(), r.priority, r.person, r.yields, r.tools)
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("command", 0, true, false, true),
                ("chat", 1, true, false, false),
                ("tree", 2, false, false, false),
                ("dream", 3, false, true, true),
            ]
        );
    }

    fn chat(text: &str) -> Job {
        Job::Chat { text: text.into(), segs: vec![] }
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
        queue.push_chat("a".into(), vec![]);
        queue.push_chat("b".into(), vec![]);
        queue.push_command("lights".into(), false, vec![]).unwrap();
        assert_eq!(drain(&mut queue), vec![command("lights"), chat("a"), chat("b")]);
    }

    #[test]
    fn a_full_queue_refuses_a_command_and_drops_the_oldest_chat_turn() {
        let mut queue = InferenceQueue::new(2);
        queue.push_chat("a".into(), vec![]);
        queue.push_chat("b".into(), vec![]);
        assert_eq!(queue.push_command("lights".into(), false, vec![]), Err(Some(chat("a"))));
        assert_eq!(queue.depth(), 1);
        queue.push_command("lights".into(), false, vec![]).unwrap();
        assert_eq!(drain(&mut queue), vec![command("lights"), chat("b")]);
    }

    #[test]
    fn a_full_queue_makes_room_for_a_new_chat_turn() {
        let mut queue = InferenceQueue::new(2);
        queue.push_chat("a".into(), vec![]);
        queue.push_chat("b".into(), vec![]);
        assert_eq!(queue.push_chat("c".into(), vec![]), Some(chat("a")));
        assert_eq!(drain(&mut queue), vec![chat("b"), chat("c")]);

        queue.push_command("x".into(), false, vec![]).unwrap();
        queue.push_command("y".into(), false, vec![]).unwrap();
        assert_eq!(queue.push_chat("z".into(), vec![]), Some(chat("z")), "no chat turn to give up");
    }

    #[test]
    fn leaving_chat_drops_waiting_turns_only() {
        let mut queue = InferenceQueue::new(8);
        queue.push_chat("a".into(), vec![]);
        queue.push_command("x".into(), false, vec![]).unwrap();
        queue.push_chat("b".into(), vec![]);
        assert_eq!(queue.drop_chat(), 2);
        assert_eq!(drain(&mut queue), vec![command("x")]);
    }

    #[test]
    fn background_work_waits_for_a_persons_jobs_and_runs_by_priority() {
        let mut queue = InferenceQueue::new(2);
        queue.want(Job::Dream { trigger: "idle".into() });
        queue.want(Job::Tree);
        queue.want(Job::Dream { trigger: "asked".into() });
        queue.push_chat("a".into(), vec![]);
        assert_eq!(queue.depth(), 1, "background work is not a person's to count");
        // A dream may not start (someone is around): the tree goes, and the dream waits.
        assert_eq!(queue.start_next(|_| true), Some(chat("a")));
        queue.done();
        assert_eq!(queue.start_next(|kind| kind != JobKind::Dream), Some(Job::Tree));
        assert_eq!(queue.running(), Some(JobKind::Tree));
        // Wanted again while it runs: one more run after.
        queue.want(Job::Tree);
        queue.done();
        assert_eq!(queue.start_next(|kind| kind != JobKind::Dream), Some(Job::Tree));
        queue.done();
        assert_eq!(queue.start_next(|kind| kind != JobKind::Dream), None);
        assert!(!queue.busy());
        assert_eq!(queue.start_next(|_| true), Some(Job::Dream { trigger: "idle".into() }));
        assert!(queue.busy(), "a dream holds the model like any job");
        queue.done();
        assert!(!queue.wanted(JobKind::Dream));
    }

    #[test]
    fn the_worker_is_busy_between_start_and_done_and_runs_one_job_at_a_time() {
        let mut queue = InferenceQueue::new(2);
        queue.push_chat("a".into(), vec![]);
        queue.push_chat("b".into(), vec![]);
        assert!(!queue.busy());
        assert_eq!(queue.start_next(|_| true), Some(chat("a")));
        assert!(queue.busy());
        assert_eq!(queue.start_next(|_| true), None, "one job at a time");
        queue.done();
        assert!(!queue.busy());
        assert_eq!(queue.start_next(|_| true), Some(chat("b")));
    }
}
