//! The assistant's one clock, which the owner is given (a test gives its own): the loop's
//! monotonic time, tokio's, so that a test that pauses tokio's time moves every deadline the
//! loop keeps (held requests, timers, jobs, the heartbeat's staleness); and the local time
//! and Unix seconds read from it (wake-ups, intents, the chat session): the system's, or one
//! that starts where a test says and moves with the loop's time, `speed` times as fast (a
//! test with a real model, whose answers take real seconds, lets an hour pass in a minute).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use chrono::{DateTime, Local, TimeDelta};

/// The assistant's clock.
#[derive(Debug, Clone, Copy, Default)]
pub enum Clock {
    #[default]
    System,
    /// `at` when the loop's clock read `start`.
    Test { at: DateTime<Local>, start: Instant, speed: u32 },
}

impl Clock {
    /// A clock that reads `at` now, `now` on the loop's clock, and keeps its pace.
    pub fn starting(at: DateTime<Local>, now: Instant) -> Self {
        Self::Test { at, start: now, speed: 1 }
    }

    /// A clock that reads `at` now and runs `speed` times as fast as the loop's.
    pub fn fast(at: DateTime<Local>, now: Instant, speed: u32) -> Self {
        Self::Test { at, start: now, speed: speed.max(1) }
    }

    /// Now on the loop's monotonic clock (tokio's).
    pub fn now(&self) -> Instant {
        tokio::time::Instant::now().into_std()
    }

    /// The local time now.
    pub fn local_now(&self) -> DateTime<Local> {
        self.local(self.now())
    }

    /// The local time when the loop's clock reads `now`.
    pub fn local(&self, now: Instant) -> DateTime<Local> {
        match self {
            Self::System => Local::now(),
            Self::Test { at, start, speed } => {
                let passed = now.saturating_duration_since(*start).saturating_mul(*speed);
                *at + TimeDelta::from_std(passed).unwrap_or(TimeDelta::MAX)
            }
        }
    }

    /// Seconds since the Unix epoch now, what the chat session is stamped with.
    pub fn unix(&self) -> u64 {
        match self {
            Self::System => SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
            Self::Test { .. } => u64::try_from(self.local_now().timestamp()).unwrap_or(0),
        }
    }

    /// How long the loop waits for `ahead` of this clock's time to pass.
    pub fn wait(&self, ahead: Duration) -> Duration {
        match self {
            Self::System => ahead,
            Self::Test { speed, .. } => ahead / (*speed).max(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn at(hour: u32, minute: u32) -> DateTime<Local> {
        Local.with_ymd_and_hms(2026, 12, 7, hour, minute, 0).single().unwrap()
    }

    #[test]
    fn a_test_clock_starts_where_it_is_told_and_may_run_fast() {
        let start = Instant::now();
        let clock = Clock::fast(at(10, 0), start, 60);
        assert_eq!(clock.local(start + Duration::from_secs(2)), at(10, 2));
        assert_eq!(clock.wait(Duration::from_secs(600)), Duration::from_secs(10));
        let steady = Clock::starting(at(10, 0), start);
        assert_eq!(steady.local(start + Duration::from_secs(120)), at(10, 2));
        assert_eq!(Clock::System.wait(Duration::from_secs(5)), Duration::from_secs(5));
    }

    #[test]
    fn a_test_clocks_unix_seconds_are_its_local_time() {
        let clock = Clock::starting(at(10, 0), Instant::now());
        let unix = u64::try_from(at(10, 0).timestamp()).unwrap();
        assert!((unix..unix + 5).contains(&clock.unix()), "{}", clock.unix());
    }
}
