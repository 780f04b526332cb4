//! The one thread that runs whisper, and the bounded queue in front of it.
//!
//! The whisper context is not thread-safe and one transcription uses every core it is given,
//! so exactly one thread owns it and segments wait their turn in a queue. The queue's depth
//! (waiting plus the one in progress) is the backlog the daemon reports. When the queue is
//! full a file input waits ([`QueuePolicy::Block`]: nothing is lost, the input just slows
//! down), while the microphone cannot wait, so the oldest waiting segment is dropped
//! ([`QueuePolicy::DropOldest`]) and reported to the caller.
//!
//! Beside the queue there is one slot for a *partial* pass: the open segment, transcribed
//! again while it is still being spoken. Finals always go first: a partial is taken only when
//! no final waits, refused while one does, and replaced by a newer one while it waits (the
//! latest only), so a final waits behind at most the one partial pass already running. A
//! final drops a waiting partial of its own segment or an earlier one: it would come too late.
//!
//! A [`Pass::Pause`] goes through the same slot: the open segment at a pause in its speech,
//! decoded as its final would be. The worker keeps its result, and when the segment's final
//! comes with exactly that audio, it is the final at once: whisper decoded it during the
//! pause, while the voice detector waited to be sure the speech had ended.

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
    /// Words to expect ([`Whisper::set_vocabulary`]); the same `Arc` from job to job while
    /// it does not change.
    pub vocabulary: Arc<[String]>,
}

/// Which kind of pass a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// A closed segment: its transcript.
    Final,
    /// An open segment so far: a live partial transcript (one decode, no retries).
    Partial,
    /// An open segment at a pause in its speech, decoded as a final (retries and all): a
    /// partial now, and the segment's final if it closes with exactly this audio.
    Pause,
}

/// What the worker thread runs: [`Whisper`], or a stand-in in tests of the scheduling.
pub trait Engine {
    fn model_name(&self) -> &str;
    fn transcribe(
        &mut self,
        pass: Pass,
        samples: &[f32],
        speech_s: f64,
    ) -> Result<Transcription, AsrError>;
    /// Words to expect from now on.
    fn set_vocabulary(&mut self, terms: &[String]) -> Result<(), AsrError>;
    /// Gives back memory when idle.
    fn shed(&mut self) -> Result<(), AsrError>;
}

impl Engine for Whisper {
    fn model_name(&self) -> &str {
        Whisper::model_name(self)
    }

    fn transcribe(
        &mut self,
        pass: Pass,
        samples: &[f32],
        speech_s: f64,
    ) -> Result<Transcription, AsrError> {
        match pass {
            Pass::Final | Pass::Pause => Whisper::transcribe(self, samples, speech_s),
            Pass::Partial => Whisper::partial(self, samples, speech_s),
        }
    }

    fn set_vocabulary(&mut self, terms: &[String]) -> Result<(), AsrError> {
        Whisper::set_vocabulary(self, terms).map(drop)
    }

    fn shed(&mut self) -> Result<(), AsrError> {
        Whisper::shed(self)
    }
}

/// A finished job.
#[derive(Debug)]
pub struct Done {
    pub pass: Pass,
    pub seg_id: u64,
    pub start: f64,
    pub end: f64,
    /// The audio it covered, in samples.
    pub len: usize,
    pub outcome: Result<Transcription, AsrError>,
    /// Time spent in whisper (none for a final decoded ahead).
    pub elapsed: Duration,
    /// Time spent waiting in the queue.
    pub waited: Duration,
    /// A final whose text a [`Pass::Pause`] over the same audio already had.
    pub ahead: bool,
}

/// The last [`Pass::Pause`]'s result, kept for its segment's final.
struct Ahead {
    seg_id: u64,
    samples: Vec<f32>,
    vocabulary: Arc<[String]>,
    transcription: Transcription,
}

impl Ahead {
    /// The kept text, if `job` is a final over exactly the audio it was decoded from.
    fn take_for(slot: &mut Option<Self>, job: &Job) -> Option<Transcription> {
        let ahead = slot.take()?;
        (ahead.seg_id == job.seg_id
            && Arc::ptr_eq(&ahead.vocabulary, &job.vocabulary)
            && ahead.samples == job.samples)
            .then_some(ahead.transcription)
    }
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

/// What became of a partial pass offered to the worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offered {
    /// In the slot; it replaced a waiting one, if there was one.
    Taken,
    /// A final is waiting, or the worker is shutting down: not taken.
    Skipped,
}

#[derive(Debug)]
struct Queue {
    jobs: VecDeque<(Job, Instant)>,
    /// The one partial pass (or [`Pass::Pause`]) waiting, if any.
    partial: Option<(Pass, Job, Instant)>,
    /// The pass in progress, if any.
    busy: Option<Pass>,
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
        on_done: impl FnMut(Done) + Send + 'static,
    ) -> Result<Self, AsrError> {
        Self::spawn_with(move || Whisper::load(config), capacity, on_done)
    }

    /// [`Worker::spawn`] with any engine: `load` runs on the new thread.
    pub fn spawn_with<E: Engine>(
        load: impl FnOnce() -> Result<E, AsrError> + Send + 'static,
        capacity: usize,
        mut on_done: impl FnMut(Done) + Send + 'static,
    ) -> Result<Self, AsrError> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                partial: None,
                busy: None,
                closed: false,
            }),
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
                    let mut engine = match load() {
                        Ok(engine) => {
                            let _ = loaded_tx.send(Ok(engine.model_name().to_owned()));
                            engine
                        }
                        Err(e) => {
                            let _ = loaded_tx.send(Err(e));
                            return;
                        }
                    };
                    let mut vocabulary: Arc<[String]> = Arc::from(Vec::new());
                    let mut ahead: Option<Ahead> = None;
                    while let Some((pass, job, queued_at)) = next_job(&shared) {
                        // What is logged about a segment names it, in every process.
                        let _segment =
                            tracing::info_span!("segment", seg_id = job.seg_id).entered();
                        if !Arc::ptr_eq(&vocabulary, &job.vocabulary) {
                            vocabulary = Arc::clone(&job.vocabulary);
                            if let Err(e) = engine.set_vocabulary(&vocabulary) {
                                tracing::warn!("{e}; transcribing without the vocabulary");
                            }
                        }
                        let waited = queued_at.elapsed();
                        let started = Instant::now();
                        let decoded_ahead = match pass {
                            Pass::Final => Ahead::take_for(&mut ahead, &job),
                            Pass::Partial | Pass::Pause => None,
                        };
                        let is_ahead = decoded_ahead.is_some();
                        let outcome = match decoded_ahead {
                            Some(transcription) => Ok(transcription),
                            None => engine.transcribe(pass, &job.samples, job.speech_s),
                        };
                        let elapsed = started.elapsed();
                        let len = job.samples.len();
                        if pass == Pass::Pause
                            && let Ok(transcription) = &outcome
                        {
                            ahead = Some(Ahead {
                                seg_id: job.seg_id,
                                samples: job.samples,
                                vocabulary: Arc::clone(&job.vocabulary),
                                transcription: transcription.clone(),
                            });
                        }
                        // Report before marking idle, so the backlog never reads 0 while a
                        // result is still unpublished.
                        on_done(Done {
                            pass,
                            seg_id: job.seg_id,
                            start: job.start,
                            end: job.end,
                            len,
                            outcome,
                            elapsed,
                            waited,
                            ahead: is_ahead,
                        });
                        shared.lock().busy = None;
                        shared.changed.notify_all();
                        // Nothing waiting after a final: give back what decoding touched
                        // (about 20 ms; a segment arriving meanwhile waits that long). Not
                        // after a partial: the segment is still open, its final comes soon.
                        if pass == Pass::Final
                            && shared.lock().jobs.is_empty()
                            && let Err(e) = engine.shed()
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
        // A partial of this segment or an earlier one would come after its final.
        if queue.partial.as_ref().is_some_and(|(_, p, _)| p.seg_id <= job.seg_id) {
            queue.partial = None;
        }
        queue.jobs.push_back((job, Instant::now()));
        drop(queue);
        self.shared.changed.notify_all();
        dropped.map_or(Submitted::Queued, Submitted::DroppedOldest)
    }

    /// Offers a partial pass over an open segment: taken into the slot (replacing a waiting
    /// one) unless a final is waiting.
    pub fn offer_partial(&self, job: Job) -> Offered {
        self.offer(Pass::Partial, job)
    }

    /// Offers a [`Pass::Pause`] over an open segment, as [`Worker::offer_partial`].
    pub fn offer_pause(&self, job: Job) -> Offered {
        self.offer(Pass::Pause, job)
    }

    fn offer(&self, pass: Pass, job: Job) -> Offered {
        let mut queue = self.shared.lock();
        if queue.closed || !queue.jobs.is_empty() {
            return Offered::Skipped;
        }
        queue.partial = Some((pass, job, Instant::now()));
        drop(queue);
        self.shared.changed.notify_all();
        Offered::Taken
    }

    /// Whether a partial pass (or a [`Pass::Pause`]) is waiting or running.
    pub fn partial_pending(&self) -> bool {
        let queue = self.shared.lock();
        queue.partial.is_some() || matches!(queue.busy, Some(Pass::Partial | Pass::Pause))
    }

    /// Segments closed but not yet transcribed: waiting, plus the one in progress (partial
    /// passes are not counted).
    pub fn backlog(&self) -> usize {
        let queue = self.shared.lock();
        queue.jobs.len() + usize::from(queue.busy == Some(Pass::Final))
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

/// Blocks until there is a job (→ `Some`: a final first, else the partial) or the queue is
/// closed and empty of finals (→ `None`; a waiting partial is dropped then).
fn next_job(shared: &Shared) -> Option<(Pass, Job, Instant)> {
    let mut queue = shared.lock();
    loop {
        let next = match queue.jobs.pop_front() {
            Some((job, at)) => Some((Pass::Final, job, at)),
            None if !queue.closed => queue.partial.take(),
            None => None,
        };
        if let Some((pass, job, at)) = next {
            queue.busy = Some(pass);
            drop(queue);
            shared.changed.notify_all();
            return Some((pass, job, at));
        }
        if queue.closed {
            return None;
        }
        queue = shared.changed.wait(queue).unwrap_or_else(PoisonError::into_inner);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    /// Reports each pass it starts, then waits for the test to let it finish.
    struct Gate {
        started: mpsc::Sender<(Pass, u64)>,
        go: mpsc::Receiver<()>,
    }

    impl Engine for Gate {
        fn model_name(&self) -> &str {
            "gate"
        }

        fn transcribe(
            &mut self,
            pass: Pass,
            samples: &[f32],
            _: f64,
        ) -> Result<Transcription, AsrError> {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let seg_id = samples[0] as u64;
            let _ = self.started.send((pass, seg_id));
            let _ = self.go.recv();
            Ok(Transcription {
                text: Some(format!("{pass:?} {seg_id}")),
                ..Transcription::nothing("en")
            })
        }

        fn set_vocabulary(&mut self, _: &[String]) -> Result<(), AsrError> {
            Ok(())
        }

        fn shed(&mut self) -> Result<(), AsrError> {
            Ok(())
        }
    }

    #[allow(clippy::cast_precision_loss)]
    fn job(seg_id: u64) -> Job {
        Job {
            seg_id,
            start: 0.0,
            end: 1.0,
            samples: vec![seg_id as f32],
            speech_s: 1.0,
            vocabulary: Arc::from(Vec::new()),
        }
    }

    struct Rig {
        worker: Worker,
        started: mpsc::Receiver<(Pass, u64)>,
        go: mpsc::Sender<()>,
        /// Each finished pass: which, whether decoded ahead, and its text.
        done: mpsc::Receiver<(Pass, u64, bool, Option<String>)>,
    }

    fn rig() -> Rig {
        let (started_tx, started) = mpsc::channel();
        let (go, go_rx) = mpsc::channel();
        let (done_tx, done) = mpsc::channel();
        let worker = Worker::spawn_with(
            move || Ok(Gate { started: started_tx, go: go_rx }),
            4,
            move |d: Done| {
                let text = d.outcome.map(|t| t.text).unwrap_or_default();
                let _ = done_tx.send((d.pass, d.seg_id, d.ahead, text));
            },
        )
        .unwrap();
        Rig { worker, started, go, done }
    }

    impl Rig {
        fn started(&self) -> (Pass, u64) {
            self.started.recv_timeout(Duration::from_secs(10)).expect("a pass starts")
        }

        /// Lets the running pass finish and returns what it reported.
        fn finish_one(&self) -> (Pass, u64) {
            self.go.send(()).unwrap();
            let (pass, seg_id, _, _) = self.next_done();
            (pass, seg_id)
        }

        fn next_done(&self) -> (Pass, u64, bool, Option<String>) {
            self.done.recv_timeout(Duration::from_secs(10)).expect("a pass ends")
        }
    }

    #[test]
    fn a_final_waits_behind_at_most_the_partial_already_running() {
        let rig = rig();
        assert_eq!(rig.worker.offer_partial(job(1)), Offered::Taken);
        assert_eq!(rig.started(), (Pass::Partial, 1));
        assert!(rig.worker.partial_pending());
        // A newer partial waits in the slot; then segment 1 closes: its final drops it.
        assert_eq!(rig.worker.offer_partial(job(1)), Offered::Taken);
        assert_eq!(rig.worker.submit(job(1), QueuePolicy::Block), Submitted::Queued);
        // While a final waits, partials are refused.
        assert_eq!(rig.worker.offer_partial(job(2)), Offered::Skipped);
        assert_eq!(rig.worker.backlog(), 1, "partials are not backlog");
        assert_eq!(rig.finish_one(), (Pass::Partial, 1));
        assert_eq!(rig.started(), (Pass::Final, 1));
        assert_eq!(rig.finish_one(), (Pass::Final, 1));
        assert!(!rig.worker.partial_pending());
        rig.worker.finish();
        assert!(rig.started.try_recv().is_err(), "the dropped partial never ran");
    }

    #[test]
    fn the_slot_keeps_only_the_latest_partial_and_finals_go_first() {
        let rig = rig();
        assert_eq!(rig.worker.submit(job(1), QueuePolicy::Block), Submitted::Queued);
        assert_eq!(rig.started(), (Pass::Final, 1));
        // Segment 2 is open; three partial passes offered while the final runs: the last wins.
        for _ in 0..3 {
            assert_eq!(rig.worker.offer_partial(job(2)), Offered::Taken);
        }
        assert_eq!(rig.finish_one(), (Pass::Final, 1));
        assert_eq!(rig.started(), (Pass::Partial, 2));
        assert_eq!(rig.finish_one(), (Pass::Partial, 2));
        // A partial of a later segment is not dropped by an earlier segment's final.
        assert_eq!(rig.worker.submit(job(2), QueuePolicy::Block), Submitted::Queued);
        assert_eq!(rig.started(), (Pass::Final, 2));
        assert_eq!(rig.worker.offer_partial(job(3)), Offered::Taken);
        assert_eq!(rig.worker.submit(job(2), QueuePolicy::Block), Submitted::Queued);
        assert_eq!(rig.finish_one(), (Pass::Final, 2));
        assert_eq!(rig.started(), (Pass::Final, 2));
        assert_eq!(rig.finish_one(), (Pass::Final, 2));
        assert_eq!(rig.started(), (Pass::Partial, 3));
        assert_eq!(rig.finish_one(), (Pass::Partial, 3));
        rig.worker.finish();
    }

    #[test]
    fn a_final_over_the_audio_of_the_last_pause_pass_is_not_decoded_again() {
        let rig = rig();
        let paused = Job { samples: vec![1.0, 0.5], ..job(1) };
        assert_eq!(rig.worker.offer_pause(paused.clone()), Offered::Taken);
        assert_eq!(rig.started(), (Pass::Pause, 1));
        assert!(rig.worker.partial_pending());
        rig.go.send(()).unwrap();
        assert_eq!(rig.next_done(), (Pass::Pause, 1, false, Some("Pause 1".into())));
        // The segment closes with exactly that audio: its final is the pause pass's text, and
        // whisper is not asked again.
        assert_eq!(rig.worker.submit(paused.clone(), QueuePolicy::Block), Submitted::Queued);
        assert_eq!(rig.next_done(), (Pass::Final, 1, true, Some("Pause 1".into())));
        assert!(rig.started.try_recv().is_err(), "no second decode");
        // Speech came after the pause: the final's audio is longer, so it is decoded.
        assert_eq!(rig.worker.offer_pause(Job { seg_id: 2, ..paused.clone() }), Offered::Taken);
        let _ = rig.started();
        assert_eq!(rig.finish_one().0, Pass::Pause);
        let longer = Job { seg_id: 2, samples: vec![2.0, 0.5, 0.5], ..job(2) };
        assert_eq!(rig.worker.submit(longer, QueuePolicy::Block), Submitted::Queued);
        assert_eq!(rig.started(), (Pass::Final, 2));
        rig.go.send(()).unwrap();
        assert_eq!(rig.next_done(), (Pass::Final, 2, false, Some("Final 2".into())));
        // A kept result serves one final only, and only its own segment's.
        assert_eq!(rig.worker.submit(paused, QueuePolicy::Block), Submitted::Queued);
        assert_eq!(rig.started(), (Pass::Final, 1));
        rig.go.send(()).unwrap();
        assert!(!rig.next_done().2, "decoded: not the kept one");
        rig.worker.finish();
    }

    #[test]
    fn finishing_drains_the_finals_and_drops_a_waiting_partial() {
        let rig = rig();
        assert_eq!(rig.worker.submit(job(1), QueuePolicy::Block), Submitted::Queued);
        assert_eq!(rig.started(), (Pass::Final, 1));
        assert_eq!(rig.worker.offer_partial(job(2)), Offered::Taken);
        let (go, shared) = (rig.go.clone(), Arc::clone(&rig.worker.shared));
        let finishing = std::thread::spawn(move || {
            // Let the final through once finish() has closed the queue.
            let mut queue = shared.lock();
            while !queue.closed {
                queue = shared.changed.wait(queue).unwrap();
            }
            drop(queue);
            go.send(()).unwrap();
        });
        rig.worker.finish();
        finishing.join().unwrap();
        let (pass, seg_id, _, _) = rig.done.try_recv().unwrap();
        assert_eq!((pass, seg_id), (Pass::Final, 1));
        assert!(rig.done.try_recv().is_err(), "no partial after finish");
        assert_eq!(rig.worker.offer_partial(job(3)), Offered::Skipped);
    }
}
