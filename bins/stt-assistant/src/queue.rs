//! The inference queue: every model call goes through one worker, one at a time, because
//! there is one model server. Commands jump ahead of chat turns; a full queue refuses a
//! command (`busy`) and gives up its oldest waiting chat turn; leaving chat drops the chat
//! turns still waiting.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;

/// One model call to make.
#[derive(Debug, Clone, PartialEq)]
pub enum Job {
    Command { text: String, edited: bool },
    Chat { text: String },
}

#[derive(Debug, Default)]
struct Inner {
    jobs: VecDeque<Job>,
    busy: bool,
}

/// The bounded queue in front of the worker.
#[derive(Debug)]
pub struct InferenceQueue {
    inner: Mutex<Inner>,
    ready: Notify,
    capacity: usize,
}

impl InferenceQueue {
    pub fn new(capacity: usize) -> Self {
        Self { inner: Mutex::default(), ready: Notify::new(), capacity: capacity.max(1) }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Jobs waiting (not counting the one running).
    pub fn depth(&self) -> u32 {
        u32::try_from(self.lock().jobs.len()).unwrap_or(u32::MAX)
    }

    /// Whether a job is running.
    pub fn busy(&self) -> bool {
        self.lock().busy
    }

    pub fn has_room(&self) -> bool {
        self.lock().jobs.len() < self.capacity
    }

    /// Queues a command ahead of every chat turn. Full: refused, and the oldest waiting chat
    /// turn is dropped (returned), so the next try finds room.
    pub fn push_command(&self, text: String, edited: bool) -> Result<(), Option<Job>> {
        let mut inner = self.lock();
        if inner.jobs.len() >= self.capacity {
            return Err(drop_oldest_chat(&mut inner.jobs));
        }
        let at = inner
            .jobs
            .iter()
            .position(|job| matches!(job, Job::Chat { .. }))
            .unwrap_or(inner.jobs.len());
        inner.jobs.insert(at, Job::Command { text, edited });
        drop(inner);
        self.ready.notify_one();
        Ok(())
    }

    /// Queues a chat turn; when full, the oldest waiting chat turn makes room (and is
    /// returned). With only commands waiting and no room, the turn itself is dropped.
    pub fn push_chat(&self, text: String) -> Option<Job> {
        let mut inner = self.lock();
        let mut dropped = None;
        if inner.jobs.len() >= self.capacity {
            dropped = drop_oldest_chat(&mut inner.jobs);
            if dropped.is_none() {
                return Some(Job::Chat { text });
            }
        }
        inner.jobs.push_back(Job::Chat { text });
        drop(inner);
        self.ready.notify_one();
        dropped
    }

    /// Drops the oldest waiting chat turn, if any (a command was refused for lack of room).
    pub fn drop_oldest_chat(&self) -> Option<Job> {
        drop_oldest_chat(&mut self.lock().jobs)
    }

    /// Drops every waiting chat turn; returns how many.
    pub fn drop_chat(&self) -> usize {
        let mut inner = self.lock();
        let before = inner.jobs.len();
        inner.jobs.retain(|job| !matches!(job, Job::Chat { .. }));
        before - inner.jobs.len()
    }

    /// Waits for the next job and marks the worker busy.
    pub async fn next(&self) -> Job {
        loop {
            let notified = self.ready.notified();
            {
                let mut inner = self.lock();
                if let Some(job) = inner.jobs.pop_front() {
                    inner.busy = true;
                    return job;
                }
            }
            notified.await;
        }
    }

    /// The running job finished.
    pub fn done(&self) {
        self.lock().busy = false;
    }
}

fn drop_oldest_chat(jobs: &mut VecDeque<Job>) -> Option<Job> {
    let at = jobs.iter().position(|job| matches!(job, Job::Chat { .. }))?;
    jobs.remove(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(text: &str) -> Job {
        Job::Chat { text: text.into() }
    }

    fn command(text: &str) -> Job {
        Job::Command { text: text.into(), edited: false }
    }

    fn drain(queue: &InferenceQueue) -> Vec<Job> {
        let mut jobs = Vec::new();
        while queue.depth() > 0 {
            jobs.push(futures_now(queue.next()));
            queue.done();
        }
        jobs
    }

    fn futures_now<T>(future: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(future)
    }

    #[test]
    fn commands_jump_ahead_of_chat() {
        let queue = InferenceQueue::new(8);
        queue.push_chat("a".into());
        queue.push_chat("b".into());
        queue.push_command("lights".into(), false).unwrap();
        assert_eq!(drain(&queue), vec![command("lights"), chat("a"), chat("b")]);
    }

    #[test]
    fn a_full_queue_refuses_a_command_and_drops_the_oldest_chat_turn() {
        let queue = InferenceQueue::new(2);
        queue.push_chat("a".into());
        queue.push_chat("b".into());
        assert_eq!(queue.push_command("lights".into(), false), Err(Some(chat("a"))));
        assert_eq!(queue.depth(), 1);
        queue.push_command("lights".into(), false).unwrap();
        assert_eq!(drain(&queue), vec![command("lights"), chat("b")]);
    }

    #[test]
    fn a_full_queue_makes_room_for_a_new_chat_turn() {
        let queue = InferenceQueue::new(2);
        queue.push_chat("a".into());
        queue.push_chat("b".into());
        assert_eq!(queue.push_chat("c".into()), Some(chat("a")));
        assert_eq!(drain(&queue), vec![chat("b"), chat("c")]);

        queue.push_command("x".into(), false).unwrap();
        queue.push_command("y".into(), false).unwrap();
        assert_eq!(queue.push_chat("z".into()), Some(chat("z")), "no chat turn to give up");
    }

    #[test]
    fn leaving_chat_drops_waiting_turns_only() {
        let queue = InferenceQueue::new(8);
        queue.push_chat("a".into());
        queue.push_command("x".into(), false).unwrap();
        queue.push_chat("b".into());
        assert_eq!(queue.drop_chat(), 2);
        assert_eq!(drain(&queue), vec![command("x")]);
    }

    #[test]
    fn the_worker_is_busy_between_next_and_done() {
        let queue = InferenceQueue::new(2);
        queue.push_chat("a".into());
        assert!(!queue.busy());
        futures_now(queue.next());
        assert!(queue.busy());
        queue.done();
        assert!(!queue.busy());
    }
}
