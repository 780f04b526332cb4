//! When a child that stopped is restarted, after how long, and when it is given up on. Pure:
//! the clock is passed in.

use std::collections::VecDeque;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

/// How crashes are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartPolicy {
    /// The delay before restarting after the first crash in [`window`](Self::window).
    pub first_delay: Duration,
    /// The most a delay grows to: each further crash in the window doubles it up to this.
    pub max_delay: Duration,
    /// How far back crashes are counted.
    pub window: Duration,
    /// This many crashes within the window and the child is given up on.
    pub max_crashes: usize,
    /// This many failures in a row before the child ever answered on its socket and it is
    /// given up on (a bad config or a missing model fails like this on every start).
    pub max_failed_starts: usize,
}

impl Default for RestartPolicy {
    /// 250 ms doubling to 5 s; give up after 5 crashes in 60 s or 3 failed starts in a row.
    fn default() -> Self {
        Self {
            first_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(5),
            window: Duration::from_secs(60),
            max_crashes: 5,
            max_failed_starts: 3,
        }
    }
}

/// What to do about a crash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Start it again after this delay.
    Restart(Duration),
    /// Stop trying; why, for a person (`it crashed 5 times within 60 s`).
    GiveUp(String),
}

/// One child's recent crashes.
#[derive(Debug, Default, Clone)]
pub struct CrashHistory {
    crashes: VecDeque<Instant>,
    failed_starts: usize,
}

impl CrashHistory {
    /// The child answered on its socket: failed starts no longer count as in a row.
    pub fn ready(&mut self) {
        self.failed_starts = 0;
    }

    /// The child crashed at `now`, after answering on its socket (`was_ready`) or before.
    pub fn crashed(&mut self, policy: &RestartPolicy, now: Instant, was_ready: bool) -> Verdict {
        while self
            .crashes
            .front()
            .is_some_and(|&t| now.saturating_duration_since(t) >= policy.window)
        {
            self.crashes.pop_front();
        }
        self.crashes.push_back(now);
        if was_ready {
            self.failed_starts = 0;
        } else {
            self.failed_starts += 1;
            if self.failed_starts >= policy.max_failed_starts {
                return Verdict::GiveUp(format!(
                    "it failed {} times in a row before it answered on its socket",
                    self.failed_starts
                ));
            }
        }
        if self.crashes.len() >= policy.max_crashes {
            return Verdict::GiveUp(format!(
                "it crashed {} times within {} s",
                self.crashes.len(),
                policy.window.as_secs()
            ));
        }
        let doublings = u32::try_from(self.crashes.len() - 1).unwrap_or(u32::MAX).min(16);
        Verdict::Restart(policy.first_delay.saturating_mul(1 << doublings).min(policy.max_delay))
    }
}

/// How a child ended, as the supervisor sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// Exit status 0: it finished, or was asked to stop by someone else. Not restarted.
    Finished,
    /// Anything else, said for a person (`exited with status 1`, `was killed by SIGKILL`).
    Crashed(String),
}

/// Classifies an exit status.
pub fn ended(status: ExitStatus) -> Ended {
    if status.success() {
        return Ended::Finished;
    }
    Ended::Crashed(describe(status))
}

/// An exit status for a person: `exited with status 1`, `was killed by SIGKILL`.
pub fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => match nix::sys::signal::Signal::try_from(signal) {
            Ok(signal) => format!("was killed by {}", signal.as_str()),
            Err(_) => format!("was killed by signal {signal}"),
        },
        (None, None) => format!("ended ({status})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn delays_double_from_250_ms_to_the_cap() {
        let policy = RestartPolicy { max_crashes: 100, ..RestartPolicy::default() };
        let mut history = CrashHistory::default();
        let start = Instant::now();
        let delays: Vec<Verdict> =
            (0..7).map(|i| history.crashed(&policy, start + ms(i * 100), true)).collect();
        let expected: Vec<Verdict> =
            [250, 500, 1000, 2000, 4000, 5000, 5000].map(|d| Verdict::Restart(ms(d))).to_vec();
        assert_eq!(delays, expected);
    }

    #[test]
    fn crashes_older_than_the_window_are_forgotten() {
        let policy = RestartPolicy::default();
        let mut history = CrashHistory::default();
        let start = Instant::now();
        assert_eq!(history.crashed(&policy, start, true), Verdict::Restart(ms(250)));
        assert_eq!(history.crashed(&policy, start + ms(1000), true), Verdict::Restart(ms(500)));
        // A minute after both: a first crash again.
        let later = start + Duration::from_secs(61);
        assert_eq!(history.crashed(&policy, later, true), Verdict::Restart(ms(250)));
    }

    #[test]
    fn five_crashes_within_a_minute_give_up() {
        let policy = RestartPolicy::default();
        let mut history = CrashHistory::default();
        let start = Instant::now();
        for i in 0..4 {
            let verdict = history.crashed(&policy, start + Duration::from_secs(i * 10), true);
            assert!(matches!(verdict, Verdict::Restart(_)), "crash {i}: {verdict:?}");
        }
        assert_eq!(
            history.crashed(&policy, start + Duration::from_secs(59), true),
            Verdict::GiveUp("it crashed 5 times within 60 s".into())
        );
    }

    #[test]
    fn three_failed_starts_in_a_row_give_up() {
        let policy = RestartPolicy::default();
        let mut history = CrashHistory::default();
        let start = Instant::now();
        assert_eq!(history.crashed(&policy, start, false), Verdict::Restart(ms(250)));
        assert_eq!(history.crashed(&policy, start + ms(300), false), Verdict::Restart(ms(500)));
        assert_eq!(
            history.crashed(&policy, start + ms(900), false),
            Verdict::GiveUp("it failed 3 times in a row before it answered on its socket".into())
        );
    }

    #[test]
    fn answering_on_the_socket_breaks_a_row_of_failed_starts() {
        let policy = RestartPolicy::default();
        let mut history = CrashHistory::default();
        let start = Instant::now();
        history.crashed(&policy, start, false);
        history.crashed(&policy, start + ms(1), false);
        history.ready();
        let verdict = history.crashed(&policy, start + ms(2), false);
        assert!(matches!(verdict, Verdict::Restart(_)), "{verdict:?}");
    }

    #[test]
    fn exit_0_is_finished_and_anything_else_a_crash_said_plainly() {
        assert_eq!(ended(ExitStatus::from_raw(0)), Ended::Finished);
        assert_eq!(
            ended(ExitStatus::from_raw(1 << 8)),
            Ended::Crashed("exited with status 1".into())
        );
        assert_eq!(ended(ExitStatus::from_raw(9)), Ended::Crashed("was killed by SIGKILL".into()));
        assert_eq!(describe(ExitStatus::from_raw(6)), "was killed by SIGABRT");
    }
}
