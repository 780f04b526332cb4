//! Timers set by the `set_timer` tool: plain data the assistant's loop owns. The loop sleeps
//! until [`Timers::next_deadline`], takes what is [`Timers::due`], and lists the rest in
//! `status`; `timer_cancel` removes one.

use std::collections::BTreeMap;
use std::time::Instant;

use stt_proto::TimerInfo;

/// One timer waiting to fire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timer {
    pub id: u64,
    pub label: String,
    pub deadline: Instant,
}

/// Every timer waiting, by id.
#[derive(Debug, Default)]
pub struct Timers {
    waiting: BTreeMap<u64, Timer>,
}

impl Timers {
    pub fn add(&mut self, id: u64, label: String, deadline: Instant) {
        self.waiting.insert(id, Timer { id, label, deadline });
    }

    /// Removes timer `id`; whether it was waiting.
    pub fn cancel(&mut self, id: u64) -> Option<Timer> {
        self.waiting.remove(&id)
    }

    /// When the next timer fires.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.waiting.values().map(|t| t.deadline).min()
    }

    /// Removes and returns the timers whose deadline has come, earliest first.
    pub fn due(&mut self, now: Instant) -> Vec<Timer> {
        let ids: Vec<u64> =
            self.waiting.values().filter(|t| t.deadline <= now).map(|t| t.id).collect();
        let mut due: Vec<Timer> = ids.iter().filter_map(|id| self.waiting.remove(id)).collect();
        due.sort_by_key(|t| (t.deadline, t.id));
        due
    }

    /// The timers waiting, soonest first, for `status`.
    pub fn list(&self, now: Instant) -> Vec<TimerInfo> {
        let mut timers: Vec<&Timer> = self.waiting.values().collect();
        timers.sort_by_key(|t| (t.deadline, t.id));
        timers
            .into_iter()
            .map(|t| TimerInfo {
                id: t.id,
                label: t.label.clone(),
                remaining_s: t.deadline.saturating_duration_since(now).as_secs_f64(),
            })
            .collect()
    }

    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn timers_fire_in_deadline_order_and_cancelled_ones_never() {
        let now = Instant::now();
        let mut timers = Timers::default();
        timers.add(1, "tea".into(), now + Duration::from_secs(30));
        timers.add(2, "oven".into(), now + Duration::from_secs(10));
        timers.add(3, "call".into(), now + Duration::from_secs(20));
        assert_eq!(timers.next_deadline(), Some(now + Duration::from_secs(10)));
        let listed: Vec<u64> = timers.list(now).iter().map(|t| t.id).collect();
        assert_eq!(listed, [2, 3, 1]);
        assert_eq!(timers.list(now)[0].remaining_s, 10.0);

        assert_eq!(timers.cancel(3).map(|t| t.label), Some("call".into()));
        assert_eq!(timers.cancel(3), None);
        assert!(timers.due(now + Duration::from_secs(9)).is_empty());
        let due: Vec<u64> =
            timers.due(now + Duration::from_secs(40)).iter().map(|t| t.id).collect();
        assert_eq!(due, [2, 1]);
        assert!(timers.is_empty());
        assert_eq!(timers.next_deadline(), None);
    }
}
