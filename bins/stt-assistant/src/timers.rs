//! Timers set by the `set_timer` tool: plain data the assistant's loop owns. The loop sleeps
//! until [`Timers::next_deadline`], takes what is [`Timers::due`], and lists the rest in
//! `status`; `timer_cancel` removes one.
//!
//! They outlive the assistant: each change is saved ([`Timers::saved`], written by the writer
//! thread to `$XDG_STATE_HOME/stt/timers.json`, 0600, whole and renamed), and a restarted
//! assistant takes them back ([`Timers::restore`]). One whose time passed while it was not
//! running fires as soon as it is back, saying when it was due.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::{DateTime, Local};
use serde::{Deserialize, Serialize};
use stt_proto::TimerInfo;

/// The timers file, in the assistant's state directory.
pub const FILE: &str = "timers.json";

/// A timer that fires this much past its time says when it was due.
pub const LATE: Duration = Duration::from_secs(10);

/// A timer taken back at a start fires no sooner than this after it: the viewers (which see
/// it fire) have had time to find the assistant again.
pub const GRACE: Duration = Duration::from_secs(3);

/// One timer waiting to fire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timer {
    pub id: u64,
    pub label: String,
    /// When it fires on the loop's clock.
    pub deadline: Instant,
    /// When it fires on the wall clock: what is saved.
    pub at: DateTime<Local>,
}

impl Timer {
    /// What is said when it fires at `now`: its label, and when it was due if that was a
    /// while ago (the assistant was not running, or the machine slept).
    pub fn said(&self, now: DateTime<Local>) -> String {
        let late = (now - self.at).to_std().is_ok_and(|late| late > LATE);
        if late {
            format!(
                "⏰ {} (due at {}; the assistant was not running then)",
                self.label,
                self.at.format("%H:%M")
            )
        } else {
            format!("⏰ {}", self.label)
        }
    }
}

/// What is kept of the timers across restarts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Saved {
    pub timers: Vec<SavedTimer>,
}

/// One timer as kept: its label and when it fires.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedTimer {
    pub label: String,
    pub at: DateTime<Local>,
}

/// What `path` kept; nothing when it is not there, and nothing (said in the log) when it does
/// not read or parse: a damaged file never stops the assistant.
pub fn load(path: &Path) -> Saved {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            tracing::warn!(
                "{} does not parse ({e}): the timers set before are lost",
                path.display()
            );
            Saved::default()
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Saved::default(),
        Err(e) => {
            tracing::warn!("cannot read {}: {e}; the timers set before are lost", path.display());
            Saved::default()
        }
    }
}

/// Every timer waiting, by id, and the file they are kept in (none: not kept).
#[derive(Debug, Default)]
pub struct Timers {
    waiting: BTreeMap<u64, Timer>,
    pub file: Option<PathBuf>,
}

impl Timers {
    /// Timer `id`, firing at `deadline` on the loop's clock, `at` on the wall clock.
    pub fn add(&mut self, id: u64, label: String, deadline: Instant, at: DateTime<Local>) {
        self.waiting.insert(id, Timer { id, label, deadline, at });
    }

    /// The timers `saved` by an earlier run, taken back at `now` (the wall clock reading
    /// `local`), each with an id from `next_id`: one whose time has passed fires [`GRACE`]
    /// after the start.
    pub fn restore(
        saved: Saved,
        now: Instant,
        local: DateTime<Local>,
        mut next_id: impl FnMut() -> u64,
    ) -> Self {
        let mut timers = Self::default();
        for SavedTimer { label, at } in saved.timers {
            let ahead = (at - local).to_std().unwrap_or_default().max(GRACE);
            timers.add(next_id(), label, now + ahead, at);
        }
        timers
    }

    /// What to keep of them, soonest first.
    pub fn saved(&self) -> Saved {
        let mut timers: Vec<&Timer> = self.waiting.values().collect();
        timers.sort_by_key(|t| (t.deadline, t.id));
        let timers =
            timers.into_iter().map(|t| SavedTimer { label: t.label.clone(), at: t.at }).collect();
        Saved { timers }
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
        let local = Local::now();
        let mut timers = Timers::default();
        let mut add = |id, label: &str, secs| {
            let ahead = Duration::from_secs(secs);
            timers.add(id, label.into(), now + ahead, local + ahead);
        };
        add(1, "tea", 30);
        add(2, "oven", 10);
        add(3, "call", 20);
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

    /// What is saved reads back as it was: those still ahead wait as long as they had left
    /// (with new ids), one whose time passed while nothing ran fires at once and says when it
    /// was due; a damaged file is read as no timers.
    #[test]
    fn timers_outlive_a_restart_and_one_missed_fires_at_once_saying_when() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        let (now, local) = (Instant::now(), Local::now());
        let mut timers = Timers::default();
        timers.add(
            7,
            "pasta".into(),
            now + Duration::from_secs(600),
            local + Duration::from_secs(600),
        );
        timers.add(8, "tea".into(), now + Duration::from_secs(60), local + Duration::from_secs(60));
        let json = serde_json::to_vec(&timers.saved()).unwrap();
        crate::names::write_private(&path, &json).unwrap();
        assert_eq!(load(&path), timers.saved());

        // Back two minutes later: the tea's time has passed, the pasta has eight minutes left.
        let (later, later_local) = (now + Duration::from_secs(5), local + Duration::from_secs(120));
        let mut ids = 100..;
        let mut back = Timers::restore(load(&path), later, later_local, || ids.next().unwrap());
        let listed: Vec<(u64, String)> =
            back.list(later).into_iter().map(|t| (t.id, t.label)).collect();
        assert_eq!(listed, [(100, "tea".into()), (101, "pasta".into())]);
        assert_eq!(back.list(later)[1].remaining_s.round(), 480.0);
        assert!(back.due(later).is_empty(), "a viewer may not be back yet");
        let due = back.due(later + GRACE);
        assert_eq!(due.len(), 1);
        let tea = &due[0];
        assert_eq!(
            tea.said(later_local),
            format!(
                "⏰ tea (due at {}; the assistant was not running then)",
                tea.at.format("%H:%M")
            )
        );
        // On time, only the label.
        assert_eq!(tea.said(tea.at + Duration::from_secs(1)), "⏰ tea");

        std::fs::write(&path, b"{\"timers\": [").unwrap();
        assert_eq!(load(&path), Saved::default());
        assert_eq!(load(&dir.path().join("none.json")), Saved::default());
    }
}
