//! What every lane shares: its way in (a channel of jobs, [`start`]), the way its reports
//! get back to the assistant's loop ([`Sink`]), and its thread, which the assistant joins
//! when it stops ([`Thread`]).
//!
//! A lane is a module with a handle, a report enum and a spawn function. It never touches the
//! assistant's state: it reports, and the loop decides. The [`Sink`] it reports into wraps
//! each report as the loop's input (see `owner::Input`); tests give it a closure that keeps
//! what it gets. A lane on a thread of its own starts it with [`start`]: the handle keeps the
//! [`Jobs`] end, the owner keeps the [`Thread`]; at shutdown it drops the lane's handle (the
//! channel closes, so the thread ends after what it is doing) and joins every thread, so no
//! lane outlives the assistant.

use std::fmt;
use std::sync::{Arc, mpsc};

/// Starts a lane's thread, called `name`, running `run` over the jobs sent to the returned
/// [`Jobs`] until every one of them is dropped (then `recv` fails, and `run` returns).
pub fn start<J: Send + 'static>(
    name: &str,
    run: impl FnOnce(mpsc::Receiver<J>) + Send + 'static,
) -> std::io::Result<(Jobs<J>, Thread)> {
    let (tx, rx) = mpsc::channel();
    let thread = Thread::spawn(name, move || run(rx))?;
    Ok((Jobs(tx), thread))
}

/// The sending end of a lane's jobs, kept by its handle.
pub struct Jobs<J>(mpsc::Sender<J>);

impl<J> Jobs<J> {
    /// Sends `job`; false once the lane's thread has ended (the lane is off, which the owner
    /// was told when it happened, so most callers need not look).
    pub fn send(&self, job: J) -> bool {
        self.0.send(job).is_ok()
    }
}

impl<J> Clone for Jobs<J> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<J> fmt::Debug for Jobs<J> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Jobs")
    }
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
