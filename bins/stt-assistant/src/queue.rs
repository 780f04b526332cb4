//! The inference queue: every model job goes through one worker, one at a time, because
//! there is one model server. Jobs start by their kind's priority ([`JobKind::rule`]):
//! commands, then chat turns, then background work (the memory tree's summaries, then
//! dreams). A person's jobs wait in a bounded line: a full queue refuses a command (`busy`)
//! and gives up its oldest waiting chat turn; leaving chat drops the chat turns still
//! waiting. Background work recurs: each kind is wanted or not (at most one waits), and
//! wanting it while it runs means one more run after. When a person needs the model, the
//! running job stops if its kind's row says it yields to that [`Need`]; background work
//! stopped so is wanted again and goes on later ([`Rule::yields_to`]).
//!
//! Plain data: the assistant's loop owns it, takes the next job when none is running and
//! marks it done when the job reports back.

use std::collections::VecDeque;

use crate::llm::Work;
use crate::turn::ChatTurn;

/// What a model job is for. Everything the loop does differently for a kind is asked of its
/// row here (or matched on the kind, exhaustively), never inferred from what it is not: a kind
/// added tomorrow is one variant and one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobKind {
    /// A person's spoken or typed command, through the tool loop.
    Command,
    /// A chat turn.
    Chat,
    /// The assistant speaking up on its own (a reminder, when it wakes).
    Proactive,
    /// The memory tree's next summary.
    Tree,
    /// Memory's consolidation.
    Dream,
    /// Triage's extraction: the tasks, dates, people and decision in what was just said.
    Triage,
}

/// How the loop treats one kind of job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// Lower runs first.
    pub priority: u8,
    /// A person waits for it: its start and end count as activity (the quiet a dream waits
    /// for starts over).
    pub person: bool,
    /// Who stops it when it runs (it is wanted again, and goes on later).
    pub yields: Yields,
    /// It calls tools: a provider it fails over to must run them too.
    pub tools: bool,
    /// Background work a person stopped: when it may go on.
    pub resumes: Resumes,
    /// Stopped, it is aborted at once; otherwise it ends itself at its next safe point (a
    /// summary stops while the model writes it, but once written it is kept with its note).
    pub aborts: bool,
    /// Wanted again before it started, the newer ask replaces the one waiting (otherwise the
    /// first stands).
    pub newest: bool,
}

/// When background work a person stopped goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resumes {
    /// As soon as the model is free again.
    AtOnce,
    /// Once things have been quiet a while (the loop says when).
    AfterQuiet,
    /// Never: it is dropped (newer work of its kind will come).
    Never,
}

/// Whom a running job gives the model up to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Yields {
    /// Nobody: it runs to its end.
    Never,
    /// A person who wants the model: a command armed, run or edited, a chat turn coming.
    Person,
    /// Anyone speaking at all, and a person who wants the model.
    Speech,
}

/// Why the model is wanted now, by whom: what a running job may yield to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// A command is armed, run or edited (or spoken while armed).
    Command,
    /// Chat was entered, or a turn typed or spoken in it.
    Chat,
    /// Someone speaks with no command armed and chat off: nobody asks the model yet.
    Speech,
    /// Someone speaks over a spoken reply: the reply stops, whatever its row (as
    /// `chat_stop` would stop it), and background work yields as to any speech.
    BargeIn,
}

impl Need {
    pub fn name(self) -> &'static str {
        match self {
            Need::Command => "a command",
            Need::Chat => "chat",
            Need::Speech => "speech",
            Need::BargeIn => "a person talking over the reply",
        }
    }
}

impl Rule {
    /// Whether a running job of this row stops for `need`.
    pub const fn yields_to(self, need: Need) -> bool {
        match (self.yields, need) {
            (Yields::Never, _) | (Yields::Person, Need::Speech | Need::BargeIn) => false,
            (Yields::Person, Need::Command | Need::Chat) | (Yields::Speech, _) => true,
        }
    }
}

impl JobKind {
    /// Every kind, in priority order.
    pub const ALL: [JobKind; 6] = [
        JobKind::Command,
        JobKind::Chat,
        JobKind::Proactive,
        JobKind::Tree,
        JobKind::Dream,
        JobKind::Triage,
    ];

    /// This kind's row.
    pub const fn rule(self) -> Rule {
        match self {
            JobKind::Command => Rule {
                priority: 0,
                person: true,
                yields: Yields::Never,
                tools: true,
                resumes: Resumes::AtOnce,
                aborts: true,
                newest: false,
            },
            JobKind::Chat => Rule {
                priority: 1,
                person: true,
                yields: Yields::Never,
                tools: false,
                resumes: Resumes::AtOnce,
                aborts: true,
                newest: false,
            },
            // Below a person's work, above background work: a reminder is of the moment. It
            // never talks over anyone (it stops for speech too) and is dropped when stopped:
            // the next wake-up comes anyway, and a stale reminder is worse than none.
            JobKind::Proactive => Rule {
                priority: 2,
                person: false,
                yields: Yields::Speech,
                tools: true,
                resumes: Resumes::Never,
                aborts: true,
                newest: true,
            },
            // A summary gives way to a person's job, not to talk nobody asks the model about
            // (in a busy room it would never be written), and goes on right after: the chat's
            // context stays bounded only while summaries keep up.
            JobKind::Tree => Rule {
                priority: 3,
                person: false,
                yields: Yields::Person,
                tools: false,
                resumes: Resumes::AtOnce,
                aborts: false,
                newest: false,
            },
            JobKind::Dream => Rule {
                priority: 4,
                person: false,
                yields: Yields::Speech,
                tools: true,
                resumes: Resumes::AfterQuiet,
                aborts: true,
                newest: false,
            },
            // Display only, and about what was just said: the last in line, stopped for a
            // person and then dropped, and a newer window's ask replaces one still waiting.
            JobKind::Triage => Rule {
                priority: 5,
                person: false,
                yields: Yields::Person,
                tools: false,
                resumes: Resumes::Never,
                aborts: true,
                newest: true,
            },
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            JobKind::Command => "command",
            JobKind::Chat => "chat",
            JobKind::Tree => "tree",
            JobKind::Dream => "dream",
            JobKind::Triage => "triage",
            JobKind::Proactive => "proactive",
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
    /// [`Rule::resumes`] says (unless the same kind was wanted meanwhile).
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

    /// The table, as a person reads it: commands before chat before background work; a
    /// person waits on commands and chat only; commands and dreams call tools.
    #[test]
    fn each_kind_has_its_row() {
        type Row = (&'static str, u8, bool, Yields, bool, Resumes, bool, bool);
        let rows: Vec<Row> = JobKind::ALL
            .iter()
            .map(|k| {
                let r = k.rule();
                (k.name(), r.priority, r.person, r.yields, r.tools, r.resumes, r.aborts, r.newest)
            })
            .collect();
        use Resumes::{AfterQuiet, AtOnce, Never};
        assert_eq!(
            rows,
            [
                ("command", 0, true, Yields::Never, true, AtOnce, true, false),
                ("chat", 1, true, Yields::Never, false, AtOnce, true, false),
                ("proactive", 2, false, Yields::Speech, true, Never, true, true),
                ("tree", 3, false, Yields::Person, false, AtOnce, false, false),
                ("dream", 4, false, Yields::Speech, true, AfterQuiet, true, false),
                ("triage", 5, false, Yields::Person, false, Never, true, true),
            ]
        );
    }

    /// Preemption, every running kind against every need: a person's jobs never stop for
    /// another; a summary stops for a command or chat, a dream for anyone speaking too. What
    /// stops is background work, which is wanted again (the loop's `finished`).
    #[test]
    fn who_stops_what() {
        let table: Vec<(&str, [bool; 4])> = JobKind::ALL
            .iter()
            .map(|k| {
                let r = k.rule();
                let needs = [Need::Command, Need::Chat, Need::Speech, Need::BargeIn];
                (k.name(), needs.map(|n| r.yields_to(n)))
            })
            .collect();
        assert_eq!(
            table,
            [
                ("command", [false, false, false, false]),
                ("chat", [false, false, false, false]),
                ("proactive", [true, true, true, true]),
                ("tree", [true, true, false, false]),
                ("dream", [true, true, true, true]),
                ("triage", [true, true, false, false]),
            ]
        );
        for kind in JobKind::ALL {
            let rule = kind.rule();
            assert!(
                !rule.person || rule.yields == Yields::Never,
                "{}: a person's job is not stopped for another's",
                kind.name()
            );
        }
    }

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
