//! Work the loop starts again and again (a probe soon after the last, a check whether a dream
//! is due), at most one at a time: one small type in place of a flag per kind of work (like
//! rust-analyzer's `OpQueue`). The queue's background jobs recur the same way, per kind, with
//! "asked for again while it runs: once more after" ([`crate::queue::InferenceQueue::want`]).

/// Whether one run of some work is on its way, and whether it was asked for again meanwhile.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Recurring {
    running: bool,
    again: bool,
}

impl Recurring {
    /// Starts a run unless one is on its way: true when the caller is to start it now. An ask
    /// while one runs is dropped (the run on its way will do).
    pub fn start(&mut self) -> bool {
        !std::mem::replace(&mut self.running, true)
    }

    /// Asks for a run: true when the caller is to start it now; while one runs, it is marked
    /// to run once more after ([`Self::done`] says so).
    pub fn ask(&mut self) -> bool {
        if self.running {
            self.again = true;
            false
        } else {
            self.running = true;
            true
        }
    }

    /// The run is over: true when it was asked for again meanwhile, and the caller is to
    /// start it once more now (it is running again).
    pub fn done(&mut self) -> bool {
        if std::mem::take(&mut self.again) {
            true
        } else {
            self.running = false;
            false
        }
    }

    /// Whether a run is on its way.
    pub fn running(self) -> bool {
        self.running
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_one_runs_and_an_ask_meanwhile_runs_once_more() {
        let mut work = Recurring::default();
        assert!(work.start());
        assert!(!work.start(), "one at a time: a second start is dropped");
        assert!(!work.done(), "nobody asked again");
        assert!(!work.running());

        assert!(work.ask());
        assert!(!work.ask());
        assert!(!work.ask(), "two asks meanwhile are one more run");
        assert!(work.done(), "asked again: once more");
        assert!(work.running());
        assert!(!work.done());
        assert!(!work.running());
    }
}
