//! What every lane shares: the way its reports get back to the assistant's loop.
//!
//! A lane is a module with a handle, a report enum and a spawn function. It never touches the
//! assistant's state: it reports, and the loop decides. The [`Sink`] it reports into wraps
//! each report as the loop's input (see `owner::Input`); tests give it a closure that keeps
//! what it gets.

use std::fmt;
use std::sync::Arc;

/// Where a lane sends its reports.
pub struct Sink<R>(Arc<dyn Fn(R) + Send + Sync>);

impl<R> Sink<R> {
    pub fn new(f: impl Fn(R) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
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
