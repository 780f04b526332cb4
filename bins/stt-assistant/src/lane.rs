//! What every lane shares: its way in (a measured channel of jobs, [`start`]), the way its
//! reports get back to the assistant's loop ([`Sink`]), what it says of itself ([`State`]:
//! ready, or off and why), and its thread, which the assistant joins when it stops
//! ([`Thread`]). The owner keeps them all on one [`Board`]: each lane's name, state, queue
//! depth (in `status`) and threads.
//!
//! A lane is a module with a handle, a report enum (one of whose variants carries its
//! [`State`]) and a spawn function. It never touches the assistant's state: it reports, and
//! the loop decides. The [`Sink`] it reports into wraps each report as the loop's input (see
//! `owner::Input`); tests give it a closure that keeps what it gets. A lane on a thread of its
//! own starts it with [`start`]: the handle keeps the [`Jobs`] end, the board the [`Thread`];
//! at shutdown the owner drops the lane's handle (the channel closes, so the thread ends after
//! what it is doing) and joins every thread, so no lane outlives the assistant.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use stt_proto::{LaneState, LaneStatus};

/// Starts a lane's thread, called `name`, running `run` over the jobs sent to the returned
/// [`Jobs`] until every one of them is dropped (then `recv` fails, and `run` returns).
pub fn start<J: Send + 'static>(
    name: &str,
    run: impl FnOnce(Queue<J>) + Send + 'static,
) -> std::io::Result<(Jobs<J>, Thread)> {
    let (jobs, queue) = channel();
    let thread = Thread::spawn(name, move || run(queue))?;
    Ok((jobs, thread))
}

/// A measured channel: what is sent and not yet taken is counted ([`Jobs::gauge`]).
pub fn channel<J>() -> (Jobs<J>, Queue<J>) {
    let (tx, rx) = mpsc::channel();
    let gauge = Gauge::default();
    (Jobs { tx, gauge: gauge.clone() }, Queue { rx, gauge })
}

/// How many jobs wait in a lane's channel.
#[derive(Debug, Clone, Default)]
pub struct Gauge(Arc<AtomicUsize>);

impl Gauge {
    pub fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

/// The sending end of a lane's jobs, kept by its handle.
pub struct Jobs<J> {
    tx: mpsc::Sender<J>,
    gauge: Gauge,
}

impl<J> Jobs<J> {
    /// Sends `job`; false once the lane's thread has ended (the lane is off, which the owner
    /// was told when it happened, so most callers need not look).
    pub fn send(&self, job: J) -> bool {
        // Counted before it can be taken, so the count never goes below what waits.
        self.gauge.0.fetch_add(1, Ordering::Relaxed);
        let sent = self.tx.send(job).is_ok();
        if !sent {
            self.gauge.0.fetch_sub(1, Ordering::Relaxed);
        }
        sent
    }

    /// The count of what waits, for `status`.
    pub fn gauge(&self) -> Gauge {
        self.gauge.clone()
    }
}

impl<J> Clone for Jobs<J> {
    fn clone(&self) -> Self {
        Self { tx: self.tx.clone(), gauge: self.gauge.clone() }
    }
}

impl<J> fmt::Debug for Jobs<J> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Jobs({} waiting)", self.gauge.get())
    }
}

/// The receiving end of a lane's jobs, on its thread: each job taken is counted off.
pub struct Queue<J> {
    rx: mpsc::Receiver<J>,
    gauge: Gauge,
}

impl<J> Queue<J> {
    /// The next job, once one comes; an error once every [`Jobs`] is gone.
    pub fn recv(&self) -> Result<J, mpsc::RecvError> {
        self.rx.recv().inspect(|_| self.took())
    }

    /// The next job, if one comes within `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<J, mpsc::RecvTimeoutError> {
        self.rx.recv_timeout(timeout).inspect(|_| self.took())
    }

    /// The jobs waiting now, without waiting for more.
    pub fn try_iter(&self) -> impl Iterator<Item = J> + '_ {
        self.rx.try_iter().inspect(|_| self.took())
    }

    fn took(&self) {
        self.gauge.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<J> fmt::Debug for Queue<J> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Queue({} waiting)", self.gauge.get())
    }
}

impl<'a, J> IntoIterator for &'a Queue<J> {
    type Item = J;
    type IntoIter = Box<dyn Iterator<Item = J> + 'a>;

    /// Every job until every [`Jobs`] is gone.
    fn into_iter(self) -> Self::IntoIter {
        Box::new(std::iter::from_fn(|| self.recv().ok()))
    }
}

/// What a lane says of itself, as one of its reports: it can work (with what it found), or
/// it cannot, and why (for a person, naming the fix).
#[derive(Debug, Clone, PartialEq)]
pub enum State<T> {
    Ready(T),
    Off { why: String },
}

/// Where a lane sends its reports.
pub struct Sink<R>(Arc<dyn Fn(R) + Send + Sync>);

impl<R> Sink<R> {
    pub fn new(f: impl Fn(R) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// Reports sent on into the loop's `inputs`, each made an input by `wrap`. Once the loop
    /// has ended nobody listens, and they are dropped.
    pub fn to<I: Send + 'static>(
        inputs: &tokio::sync::mpsc::UnboundedSender<I>,
        wrap: impl Fn(R) -> I + Send + Sync + 'static,
    ) -> Self {
        let inputs = inputs.clone();
        Self::new(move |report| {
            let _ = inputs.send(wrap(report));
        })
    }

    pub fn send(&self, report: R) {
        (self.0)(report);
    }
}

impl<R> Clone for Sink<R> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<R> fmt::Debug for Sink<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Sink")
    }
}

/// A lane's named thread, joined when the assistant stops.
#[derive(Debug)]
pub struct Thread {
    name: String,
    handle: std::thread::JoinHandle<()>,
}

impl Thread {
    /// Starts `run` on a thread called `name` (what `ps -T` and the logs show).
    pub fn spawn(name: &str, run: impl FnOnce() + Send + 'static) -> std::io::Result<Self> {
        let handle = std::thread::Builder::new().name(name.to_owned()).spawn(run)?;
        Ok(Self { name: name.to_owned(), handle })
    }

    /// Waits until the thread has ended: once its lane's handle is gone, after what it is
    /// doing.
    pub fn join(self) {
        if self.handle.join().is_err() {
            tracing::error!(lane = %self.name, "a lane's thread panicked (a bug; see above)");
        }
    }
}

/// The lanes the owner started: each one's name, what it last said of itself and how many
/// jobs wait for it (for `status`), and the threads it joins when it stops.
#[derive(Debug, Default)]
pub struct Board {
    lanes: Vec<Entry>,
    threads: Vec<Thread>,
}

#[derive(Debug)]
struct Entry {
    name: &'static str,
    gauge: Gauge,
    state: LaneState,
    why: Option<String>,
}

impl Board {
    /// A lane called `name` (as `status` shows it), whose jobs `gauge` counts, in `state`
    /// until it reports one; `threads` are joined when the owner stops.
    pub fn add(
        &mut self,
        name: &'static str,
        gauge: Gauge,
        state: LaneState,
        threads: impl IntoIterator<Item = Thread>,
    ) {
        self.lanes.push(Entry { name, gauge, state, why: None });
        self.threads.extend(threads);
    }

    /// A lane that could not start: `status` shows it off, and why.
    pub fn failed(&mut self, name: &'static str, why: String) {
        let state = LaneState::Off;
        self.lanes.push(Entry { name, gauge: Gauge::default(), state, why: Some(why) });
    }

    /// What lane `name` said of itself.
    pub fn saw<T>(&mut self, name: &'static str, state: &State<T>) {
        let Some(lane) = self.lanes.iter_mut().find(|lane| lane.name == name) else {
            debug_assert!(false, "no lane {name} on the board");
            return;
        };
        (lane.state, lane.why) = match state {
            State::Ready(_) => (LaneState::Ready, None),
            State::Off { why } => (LaneState::Off, Some(why.clone())),
        };
    }

    /// What lane `name` last said of itself; `None` for a lane not on the board.
    pub fn state(&self, name: &str) -> Option<LaneState> {
        self.lanes.iter().find(|lane| lane.name == name).map(|lane| lane.state)
    }

    /// Every lane, in the order they started.
    pub fn status(&self) -> Vec<LaneStatus> {
        self.lanes
            .iter()
            .map(|lane| LaneStatus {
                name: lane.name.to_owned(),
                state: lane.state,
                why: lane.why.clone(),
                queued: u32::try_from(lane.gauge.get()).unwrap_or(u32::MAX),
            })
            .collect()
    }

    /// The lanes' threads, to join once their handles are gone.
    pub fn take_threads(&mut self) -> Vec<Thread> {
        std::mem::take(&mut self.threads)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gauge_counts_what_waits_until_it_is_taken() {
        let (jobs, queue) = channel();
        let gauge = jobs.gauge();
        assert_eq!(gauge.get(), 0);
        assert!(jobs.send(1) && jobs.send(2) && jobs.send(3));
        assert_eq!(gauge.get(), 3);
        assert_eq!(queue.recv(), Ok(1));
        assert_eq!(gauge.get(), 2);
        assert_eq!(queue.try_iter().collect::<Vec<_>>(), [2, 3]);
        assert_eq!(gauge.get(), 0);
        drop(queue);
        assert!(!jobs.send(4), "nobody takes it");
        assert_eq!(gauge.get(), 0, "what was not sent is not counted");
    }

    #[test]
    fn the_board_shows_each_lane_as_it_last_said() {
        let mut board = Board::default();
        let (jobs, _queue) = channel::<()>();
        board.add("voice", jobs.gauge(), LaneState::Started, []);
        board.failed("triage", "cannot start its thread".into());
        assert!(jobs.send(()));
        let shown = board.status();
        assert_eq!((shown[0].state, shown[0].queued), (LaneState::Started, 1));
        assert_eq!(
            (shown[1].state, shown[1].why.as_deref()),
            (LaneState::Off, Some("cannot start its thread"))
        );
        board.saw("voice", &State::Off::<()> { why: "no output device".into() });
        assert_eq!(board.status()[0].why.as_deref(), Some("no output device"));
        board.saw("voice", &State::Ready(()));
        assert_eq!(
            (board.status()[0].state, board.status()[0].why.clone()),
            (LaneState::Ready, None)
        );
    }
}
