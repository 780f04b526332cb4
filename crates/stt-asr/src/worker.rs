//! The one thread that runs whisper, and the bounded queue in front of it.
//!
//! The whisper context is not thread-safe and one transcription uses every core it is given,
//! so exactly one thread owns it and segments wait their turn in a queue. The queue's depth
//! (waiting plus the one in progress) is the backlog the daemon reports. When the queue is
//! full a file input waits ([`QueuePolicy::Block`]: nothing is lost, the input just slows
//! down), while the microphone cannot wait, so the oldest waiting segment is dropped
//! ([`QueuePolicy::DropOldest`]) and reported to the caller.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::{AsrConfig, AsrError, Transcription, Whisper};

/// One closed segment to transcribe.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub seg_id: u64,
    /// Audio time of the segment, in seconds.
    pub start: f64,
    pub end: f64,
    /// 16 kHz mono.
    pub samples: Vec<f32>,
    /// Seconds of speech in it, as the voice detector measured them.
    pub speech_s: f64,
}

/// A finished job.
#[derive(Debug)]
pub struct Done {
    pub seg_id: u64,
    pub start: f64,
    pub end: f64,
    pub outcome: Result<Transcription, AsrError>,
    /// Time spent in whisper.
    pub elapsed: Duration,
    /// Time spent waiting in the queue.
    pub waited: Duration,
}

/// What to do with a new job when the queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueuePolicy {
    /// Wait for room (files and stdin: back-pressure, nothing lost).
    Block,
    /// Drop the oldest waiting job (the microphone: stay live).
    DropOldest,
}

/// What became of a submitted job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submitted {
    Queued,
    /// Queued, and to make room this waiting segment was dropped untranscribed.
    DroppedOldest(u64),
    /// The worker is shutting down; the job was not taken.
    Closed,
}

#[derive(Debug)]
struct Queue {
    jobs: VecDeque<(Job, Instant)>,
    busy: bool,
    closed: bool,
}

#[derive(Debug)]
struct Shared {
    queue: Mutex<Queue>,
    changed: Condvar,
    capacity: usize,
    /// True while the whisper thread runs; false once it has ended (or panicked).
    alive: AtomicBool,
}

/// Marks the worker dead when the thread ends, however it ends.
struct AliveGuard(Arc<Shared>);

impl Drop for AliveGuard {
    fn drop(&mut self) {
        self.0.alive.store(false, Ordering::SeqCst);
        // Wake a submitter blocked on a full queue: nothing will drain it now.
        self.0.lock().closed = true;
        self.0.changed.notify_all();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The transcription thread and its queue.
#[derive(Debug)]
pub struct Worker {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
    model_name: String,
}

impl Worker {
    /// Loads the model on a new thread (so a missing or corrupt model is reported here, before
    /// anything runs) and starts serving jobs; each finished job is passed to `on_done` on the
    /// worker thread.
    pub fn spawn(
        config: AsrConfig,
        capacity: usize,
        mut on_done: impl FnMut(Done) + Send + 'static,
    ) -> Result<Self, AsrError> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue { jobs: VecDeque::new(), busy: false, closed: false }),
            changed: Condvar::new(),
            capacity: capacity.max(1),
            alive: AtomicBool::new(true),
        });
        let (loaded_tx, loaded_rx) = std::sync::mpsc::channel();
        let thread = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("whisper".into())
                .spawn(move || {
                    let _alive = AliveGuard(Arc::clone(&shared));
                    let mut whisper = match Whisper::load(config) {
                        Ok(w) => {
                            let _ = loaded_tx.send(Ok(w.model_name().to_owned()));
                            w
                        }
                        Err(e) => {
                            let _ = loaded_tx.send(Err(e));
                            return;
                        }
                    };
                    while let Some((job, queued_at)) = next_job(&shared) {
                        // What is logged about a segment names it, in every process.
                        let _segment =
                            tracing::info_span!("segment", seg_id = job.seg_id).entered();
                        let waited = queued_at.elapsed();
                        let started = Instant::now();
                        let outcome = whisper.transcribe(&job.samples, job.speech_s);
                        let elapsed = started.elapsed();
                        // Report before marking idle, so the backlog never reads 0 while a
                        // result is still unpublished.
                        on_done(Done {
                            seg_id: job.seg_id,
                            start: job.start,
                            end: job.end,
                            outcome,
                            elapsed,
                            waited,
                        });
                        shared.lock().busy = false;
                        shared.changed.notify_all();
                        // Nothing waiting: give back what decoding touched (about 20 ms;
                        // a segment arriving meanwhile waits that long).
                        if shared.lock().jobs.is_empty()
                            && let Err(e) = whisper.shed()
                        {
                            tracing::warn!("{e}; the next segment tries again");
                        }
                    }
                })
                .map_err(|e| AsrError::Whisper(format!("cannot start the whisper thread: {e}")))?
        };
        let model_name = loaded_rx
            .recv()
            .map_err(|_| AsrError::Whisper("the whisper thread died while loading".into()))??;
        Ok(Self { shared, thread: Mutex::new(Some(thread)), model_name })
    }

    pub fn model_name(&self) -> &str {
        &self.model_name
    }

    /// Queues a job, applying `policy` when the queue is full.
    pub fn submit(&self, job: Job, policy: QueuePolicy) -> Submitted {
        let mut queue = self.shared.lock();
        let mut dropped = None;
        loop {
            if queue.closed {
                return Submitted::Closed;
            }
            if queue.jobs.len() < self.shared.capacity {
                break;
            }
            match policy {
                QueuePolicy::Block => {
                    queue = self.shared.changed.wait(queue).unwrap_or_else(PoisonError::into_inner);
                }
                QueuePolicy::DropOldest => {
                    dropped = queue.jobs.pop_front().map(|(old, _)| old.seg_id);
                    break;
                }
            }
        }
        queue.jobs.push_back((job, Instant::now()));
        drop(queue);
        self.shared.changed.notify_all();
        dropped.map_or(Submitted::Queued, Submitted::DroppedOldest)
    }

    /// Segments closed but not yet transcribed: waiting, plus the one in progress.
    pub fn backlog(&self) -> usize {
        let queue = self.shared.lock();
        queue.jobs.len() + usize::from(queue.busy)
    }

    /// Whether the whisper thread is still running (it ends once [`Worker::finish`] has
    /// drained the queue, or if it panicked).
    pub fn is_alive(&self) -> bool {
        self.shared.alive.load(Ordering::SeqCst)
    }

    /// Refuses new jobs, finishes every queued one, then stops the thread. Blocks until done.
    pub fn finish(&self) {
        self.shared.lock().closed = true;
        self.shared.changed.notify_all();
        let thread = self.thread.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Blocks until there is a job (→ `Some`) or the queue is closed and empty (→ `None`).
fn next_job(shared: &Shared) -> Option<(Job, Instant)> {
    let mut queue = shared.lock();
    loop {
        if let Some(job) = queue.jobs.pop_front() {
            queue.busy = true;
            drop(queue);
            shared.changed.notify_all();
            return Some(job);
        }
        if queue.closed {
            return None;
        }
        queue = shared.changed.wait(queue).unwrap_or_else(PoisonError::into_inner);
    }
}
