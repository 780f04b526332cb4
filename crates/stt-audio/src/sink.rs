//! Where inputs send their events, and how they are told to stop.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::AudioEvent;

/// The sending half of a bounded `std::sync::mpsc::sync_channel` of [`AudioEvent`]s.
///
/// Files and raw PCM wait for room in it (back-pressure, nothing lost); the microphone
/// drops what does not fit (see the [crate docs](crate)). Dropping the receiver ends any
/// input sending into it.
#[derive(Debug, Clone)]
pub struct Sink {
    tx: SyncSender<AudioEvent>,
}

/// Why an input stopped sending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Halt {
    /// The stop flag was raised.
    Stopped,
    /// The receiver is gone.
    Disconnected,
}

/// What a non-blocking send did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TrySend {
    Sent,
    Full,
    Disconnected,
}

/// Longest sleep between two tries while the channel is full: the most a waiting sender adds
/// to the consumer's latency, and how late it may notice a stop.
const FULL_POLL_MAX: Duration = Duration::from_millis(5);

impl Sink {
    pub fn new(tx: SyncSender<AudioEvent>) -> Self {
        Self { tx }
    }

    /// A sink and its receiver, with room for `capacity` events (at least 1).
    pub fn channel(capacity: usize) -> (Self, Receiver<AudioEvent>) {
        let (tx, rx) = sync_channel(capacity.max(1));
        (Self::new(tx), rx)
    }

    pub(crate) fn try_send(&self, event: AudioEvent) -> TrySend {
        match self.tx.try_send(event) {
            Ok(()) => TrySend::Sent,
            Err(TrySendError::Full(_)) => TrySend::Full,
            Err(TrySendError::Disconnected(_)) => TrySend::Disconnected,
        }
    }

    /// Sends `event`, waiting for room as long as it takes unless `stop` is raised.
    ///
    /// std's `SyncSender::send` cannot be interrupted (and `send_timeout` is unstable), so a
    /// full channel is polled with short sleeps instead: a stop is noticed within
    /// [`FULL_POLL_MAX`] while the consumer is stuck.
    pub(crate) fn send_waiting(&self, mut event: AudioEvent, stop: &StopFlag) -> Result<(), Halt> {
        let mut pause = Duration::from_micros(50);
        loop {
            if stop.is_stopped() {
                return Err(Halt::Stopped);
            }
            match self.tx.try_send(event) {
                Ok(()) => return Ok(()),
                Err(TrySendError::Disconnected(_)) => return Err(Halt::Disconnected),
                Err(TrySendError::Full(back)) => event = back,
            }
            if stop.sleep(pause) == Wake::Stopped {
                return Err(Halt::Stopped);
            }
            pause = (pause * 2).min(FULL_POLL_MAX);
        }
    }
}

/// Tells input threads to stop. Cheap to clone; all clones share one flag, so one flag can
/// stop several inputs. Raising it wakes sleeping inputs at once.
#[derive(Debug, Clone, Default)]
pub struct StopFlag(Arc<StopInner>);

#[derive(Debug, Default)]
struct StopInner {
    stopped: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
}

/// Why [`StopFlag::wait_until`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wake {
    Stopped,
    /// The caller's condition held after a [`StopFlag::notify`].
    Woken,
    TimedOut,
}

impl StopFlag {
    pub fn new() -> Self {
        Self::default()
    }

    /// Raises the flag for good.
    pub fn stop(&self) {
        self.0.stopped.store(true, Ordering::SeqCst);
        let _guard = self.0.lock.lock().unwrap_or_else(PoisonError::into_inner);
        self.0.wake.notify_all();
    }

    pub fn is_stopped(&self) -> bool {
        self.0.stopped.load(Ordering::SeqCst)
    }

    /// Sleeps for `duration` unless the flag is raised first.
    pub(crate) fn sleep(&self, duration: Duration) -> Wake {
        self.wait_until(Instant::now() + duration, || false)
    }

    /// Waits until `deadline`, the flag is raised, or `woken()` holds. Whoever makes `woken()`
    /// true must call [`notify`](Self::notify) afterwards; since `woken()` is checked under the
    /// same lock that `notify` takes, no wake-up is lost.
    pub(crate) fn wait_until(&self, deadline: Instant, woken: impl Fn() -> bool) -> Wake {
        let mut guard = self.0.lock.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if self.is_stopped() {
                return Wake::Stopped;
            }
            if woken() {
                return Wake::Woken;
            }
            let now = Instant::now();
            if now >= deadline {
                return Wake::TimedOut;
            }
            guard = self
                .0
                .wake
                .wait_timeout(guard, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Wakes every [`wait_until`](Self::wait_until) on this flag to recheck its condition.
    pub(crate) fn notify(&self) {
        let _guard = self.0.lock.lock().unwrap_or_else(PoisonError::into_inner);
        self.0.wake.notify_all();
    }
}
