//! The one allocator of the ids the assistant puts on the wire (chat lines, timers), unique
//! across restarts.
//!
//! The supervisor restarts a crashed assistant while the TUI keeps its lines and matches a
//! `chat_message` to the newest line with the same id, so ids that started at 1 again made new
//! replies overwrite old lines. Ids now count up from the wall clock in microseconds at start:
//! a run would have to hand out a million ids a second, for as long as the next run takes to
//! start, to reach the ids of the next one. A wall clock set back by more than the restart
//! takes can repeat ids; nothing else can. The values stay below 2^53, so JSON readers that
//! hold numbers as doubles read them exactly.

use std::time::{SystemTime, UNIX_EPOCH};

/// Hands out increasing ids.
#[derive(Debug, Clone)]
pub struct Ids {
    next: u64,
}

impl Ids {
    /// Ids from `first` on.
    pub const fn starting_at(first: u64) -> Self {
        Self { next: first }
    }

    /// Ids from the wall clock's microseconds now.
    pub fn from_clock() -> Self {
        let micros = SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |d| d.as_micros());
        Self::starting_at(u64::try_from(micros).unwrap_or(u64::MAX >> 11).max(1))
    }

    pub fn fresh(&mut self) -> u64 {
        let id = self.next;
        self.next += 1;
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_increase_and_a_later_start_begins_above_an_earlier_run() {
        let mut first = Ids::from_clock();
        let a: Vec<u64> = (0..1000).map(|_| first.fresh()).collect();
        assert!(a.windows(2).all(|w| w[1] == w[0] + 1));
        // A restart: however soon, its clock has moved on past the ids handed out so far,
        // unless the first run outran the clock (a thousand ids in under a millisecond here).
        std::thread::sleep(std::time::Duration::from_millis(2));
        let mut second = Ids::from_clock();
        assert!(second.fresh() > *a.last().unwrap());
        assert!(a[0] < 1 << 53, "exact in JSON doubles");
    }
}
