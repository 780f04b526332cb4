//! The inference queue: every model call goes through one worker, one at a time, because
//! there is one model server. Commands jump ahead of chat turns; a full queue refuses a
//! command (`busy`) and gives up its oldest waiting chat turn; leaving chat drops the chat
//! turns still waiting.
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
}

impl JobKind {
    /// Every kind, in priority order.
    pub const ALL: [JobKind; 4] = [JobKind::Command, JobKind::Chat, JobKind::Tree, JobKind::Dream];

    /// This kind's row.
    pub const fn rule(self) -> Rule {
        match self {
            JobKind::Command => Rule { priority: 0, person: true, yields: false },
            JobKind::Chat => Rule { priority: 1, person: true, yields: false },
            JobKind::Tree => Rule { priority: 2, person: false, yields: false },
            JobKind::Dream => Rule { priority: 3, person: false, yields: true },
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
}

impl Job {
    pub fn kind(&self) -> JobKind {
        match self {
            Job::Command { .. } => JobKind::Command,
            Job::Chat { .. } => JobKind::Chat,
        }
    }
}

/// The bounded queue in front of the worker.
#[derive(Debug)]
pub struct InferenceQueue {
    jobs: VecDeque<Job>,
    busy: bool,
    capacity: usize,
}

impl InferenceQueue {
    pub fn new(capacity: usize) -> Self {
        Self { jobs: VecDeque::new(), busy: false, capacity: capacity.max(1) }
    }

    /// Jobs waiting (not counting the one running).
    pub fn depth(&self) -> u32 {
        u32::try_from(self.jobs.len()).unwrap_or(u32::MAX)
    }

    /// Whether a job is running.
    pub fn busy(&self) -> bool {
        self.busy
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

    /// The next job, if none is running; the worker is then busy until [`Self::done`].
    pub fn start_next(&mut self) -> Option<Job> {
        if self.busy {
            return None;
        }
        let job = self.jobs.pop_front()?;
        self.busy = true;
        Some(job)
    }

    /// The running job finished.
    pub fn done(&mut self) {
        self.busy = false;
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
    /// person waits on commands and chat only; only a dream gives way to someone speaking.
    #[test]
    fn each_kind_has_its_row() {
        let rows: Vec<(&str, u8, bool, bool)> = JobKind::ALL
            .iter()
            .map(|k| (k.name(), k.rule().priority, k.rule().person, k.rule().yields))
            .collect();
        assert_eq!(
            rows,
            [
                ("command", 0, true, false),
                ("chat", 1, true, false),
                ("tree", 2, false, false),
                ("dream", 3, false, true),
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
        while let Some(job) = queue.start_next() {
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
    fn the_worker_is_busy_between_start_and_done_and_runs_one_job_at_a_time() {
        let mut queue = InferenceQueue::new(2);
        queue.push_chat("a".into(), vec![]);
        queue.push_chat("b".into(), vec![]);
        assert!(!queue.busy());
        assert_eq!(queue.start_next(), Some(chat("a")));
        assert!(queue.busy());
        assert_eq!(queue.start_next(), None, "one job at a time");
        queue.done();
        assert!(!queue.busy());
        assert_eq!(queue.start_next(), Some(chat("b")));
    }
}
