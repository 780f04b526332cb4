//! The planner's tasks and plans, kept in memory's database beside what was said: a task
//! (a title, the goal behind it, a status, a priority, a due date), broken down into phases
//! in order, each with dated plan items (the day-by-day to-dos) that are checked off. Checking
//! the last item of a phase finishes the phase; finishing the last phase finishes the task.
//!
//! Dates are local calendar days, `YYYY-MM-DD`, as the caller gives them: the store never
//! reads a clock for them (it stamps `created` and `updated` with its own clock). The next
//! actions ([`Store::next_actions`]) are ordered by urgency against the `today` the caller
//! passes: overdue first, then today, then the next three days, then later, each by
//! priority (1 is the highest) and date.

use rusqlite::{OptionalExtension, params};

use crate::log::sql;
use crate::{MemoryError, Result, Store};

/// What a task is at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Not started.
    Open,
    /// Some of its plan is done.
    Active,
    Done,
    /// Given up.
    Dropped,
}

impl Status {
    pub const ALL: [Status; 4] = [Status::Open, Status::Active, Status::Done, Status::Dropped];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Open => "open",
            Status::Active => "active",
            Status::Done => "done",
            Status::Dropped => "dropped",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        Self::ALL.into_iter().find(|status| status.as_str() == s.trim())
    }
}

/// Priorities run from 1 (the highest) to 5.
pub const PRIORITIES: std::ops::RangeInclusive<u8> = 1..=5;

/// The priority a task gets when none is said.
pub const DEFAULT_PRIORITY: u8 = 3;

/// A new task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTask {
    pub title: String,
    pub goal: String,
    pub priority: u8,
    /// `YYYY-MM-DD`.
    pub due: Option<String>,
}

/// A phase of a plan, with its items, as a breakdown gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPhase {
    pub title: String,
    /// (day `YYYY-MM-DD`, what to do).
    pub items: Vec<(String, String)>,
}

/// A task as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub id: i64,
    pub title: String,
    pub goal: String,
    pub status: Status,
    pub priority: u8,
    pub due: Option<String>,
    pub created: f64,
    pub updated: f64,
    /// Its phases in order, each with its items.
    pub phases: Vec<Phase>,
}

/// A phase as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Phase {
    pub id: i64,
    pub title: String,
    pub done: bool,
    pub items: Vec<Item>,
}

/// A plan item as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub id: i64,
    pub day: String,
    pub text: String,
    pub done: bool,
}

/// Something to do next: a plan item, or a task with no plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextAction {
    pub task: i64,
    pub task_title: String,
    /// The plan item; `None` for a task with no plan left to do.
    pub item: Option<i64>,
    /// What to do: the item's text, or the task's title.
    pub text: String,
    /// When: the item's day, or the task's due date.
    pub day: Option<String>,
    pub priority: u8,
    /// Its day is before `today`.
    pub overdue: bool,
}

/// What checking an item off did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    /// The item's phase is finished now.
    pub phase_done: bool,
    /// The task is finished now.
    pub task_done: bool,
}

/// `YYYY-MM-DD` with a month and day that exist (leap years included), or why not.
pub fn check_date(date: &str) -> Result<()> {
    day_of(date).map(drop)
}

fn day_of(date: &str) -> Result<chrono::NaiveDate> {
    let written = date.len() == 10 && date.as_bytes()[4] == b'-' && date.as_bytes()[7] == b'-';
    chrono::NaiveDate::parse_from_str(date, "%Y-%m-%d").ok().filter(|_| written).ok_or_else(|| {
        MemoryError::Invalid(format!(
            "{date:?} is no date: write it as YYYY-MM-DD, e.g. 2026-12-24"
        ))
    })
}

/// The day `days` after `date` (both `YYYY-MM-DD`).
pub fn add_days(date: &str, days: i64) -> Result<String> {
    let day = day_of(date)?;
    let moved = chrono::TimeDelta::try_days(days).and_then(|by| day.checked_add_signed(by));
    let moved = moved.ok_or_else(|| {
        MemoryError::Invalid(format!("{days} days from {date} is past any calendar"))
    })?;
    Ok(moved.format("%Y-%m-%d").to_string())
}

fn check_priority(priority: u8) -> Result<()> {
    if PRIORITIES.contains(&priority) {
        Ok(())
    } else {
        Err(MemoryError::Invalid(format!(
            "priority {priority}: give 1 (the highest) to 5 (the lowest)"
        )))
    }
}

fn status_of(s: &str) -> Status {
    Status::parse(s).unwrap_or(Status::Open)
}

impl Store {
    /// Stores a new task; returns its id.
    pub fn create_task(&mut self, task: &NewTask) -> Result<i64> {
        let title = task.title.trim();
        if title.is_empty() {
            return Err(MemoryError::Invalid("a task needs a title".into()));
        }
        check_priority(task.priority)?;
        if let Some(due) = &task.due {
            check_date(due)?;
        }
        let now = self.now();
        self.write(|tx| {
            tx.execute(
                "INSERT INTO tasks(title, goal, status, priority, due, created, updated) \
                 VALUES (?1, ?2, 'open', ?3, ?4, ?5, ?5)",
                params![title, task.goal.trim(), task.priority, task.due, now],
            )
            .map_err(sql)?;
            Ok(tx.last_insert_rowid())
        })
    }

    /// Replaces task `id`'s plan with `phases` (in order), all or nothing: every phase needs
    /// a title and an item, every item a valid day and some words.
    pub fn set_plan(&mut self, id: i64, phases: &[NewPhase]) -> Result<()> {
        if phases.is_empty() {
            return Err(MemoryError::Invalid("a plan needs at least one phase".into()));
        }
        for (i, phase) in phases.iter().enumerate() {
            let n = i + 1;
            if phase.title.trim().is_empty() {
                return Err(MemoryError::Invalid(format!("phase {n} has no title")));
            }
            if phase.items.is_empty() {
                return Err(MemoryError::Invalid(format!("phase {n} has no items")));
            }
            for (day, text) in &phase.items {
                check_date(day).map_err(|e| MemoryError::Invalid(format!("phase {n}: {e}")))?;
                if text.trim().is_empty() {
                    return Err(MemoryError::Invalid(format!("phase {n} has an empty item")));
                }
            }
        }
        self.task_exists(id)?;
        let now = self.now();
        self.write(|tx| {
            tx.execute("DELETE FROM phases WHERE task = ?1", [id]).map_err(sql)?;
            for (seq, phase) in phases.iter().enumerate() {
                tx.execute(
                    "INSERT INTO phases(task, seq, title) VALUES (?1, ?2, ?3)",
                    params![id, seq as i64, phase.title.trim()],
                )
                .map_err(sql)?;
                let phase_id = tx.last_insert_rowid();
                for (day, text) in &phase.items {
                    tx.execute(
                        "INSERT INTO plan_items(task, phase, day, text) VALUES (?1, ?2, ?3, ?4)",
                        params![id, phase_id, day, text.trim()],
                    )
                    .map_err(sql)?;
                }
            }
            tx.execute(
                "UPDATE tasks SET status = CASE status WHEN 'done' THEN 'active' ELSE status END, \
                 updated = ?2 WHERE id = ?1",
                params![id, now],
            )
            .map_err(sql)?;
            Ok(())
        })
    }

    fn task_exists(&self, id: i64) -> Result<()> {
        let found: Option<i64> = self
            .conn
            .query_row("SELECT id FROM tasks WHERE id = ?1", [id], |row| row.get(0))
            .optional()
            .map_err(|e| self.err(e))?;
        found.map(|_| ()).ok_or(MemoryError::NotFound { what: "task", id })
    }

    /// Tasks, most urgent first (by status, then priority, then due date), with their plans;
    /// `status` keeps only those at it.
    pub fn tasks(&self, status: Option<Status>) -> Result<Vec<Task>> {
        let ids: Vec<i64> = {
            let mut stmt = self
                .conn
                .prepare(
                    "SELECT id FROM tasks WHERE ?1 IS NULL OR status = ?1 ORDER BY \
                     CASE status WHEN 'active' THEN 0 WHEN 'open' THEN 1 WHEN 'done' THEN 2 ELSE 3 END, \
                     priority, due IS NULL, due, id",
                )
                .map_err(|e| self.err(e))?;
            stmt.query_map([status.map(Status::as_str)], |row| row.get(0))
                .and_then(Iterator::collect)
                .map_err(|e| self.err(e))?
        };
        ids.into_iter().map(|id| self.task(id)).collect()
    }

    /// Task `id` with its plan.
    pub fn task(&self, id: i64) -> Result<Task> {
        let row = self
            .conn
            .query_row(
                "SELECT title, goal, status, priority, due, created, updated FROM tasks \
                 WHERE id = ?1",
                [id],
                |row| {
                    Ok(Task {
                        id,
                        title: row.get(0)?,
                        goal: row.get(1)?,
                        status: status_of(&row.get::<_, String>(2)?),
                        priority: row.get(3)?,
                        due: row.get(4)?,
                        created: row.get(5)?,
                        updated: row.get(6)?,
                        phases: Vec::new(),
                    })
                },
            )
            .optional()
            .map_err(|e| self.err(e))?;
        let mut task = row.ok_or(MemoryError::NotFound { what: "task", id })?;
        let mut phases = self
            .conn
            .prepare("SELECT id, title, done FROM phases WHERE task = ?1 ORDER BY seq")
            .map_err(|e| self.err(e))?;
        let phases: Vec<Phase> = phases
            .query_map([id], |row| {
                Ok(Phase {
                    id: row.get(0)?,
                    title: row.get(1)?,
                    done: row.get::<_, i64>(2)? != 0,
                    items: Vec::new(),
                })
            })
            .and_then(Iterator::collect)
            .map_err(|e| self.err(e))?;
        let mut items = self
            .conn
            .prepare(
                "SELECT id, day, text, done IS NOT NULL FROM plan_items WHERE phase = ?1 \
                 ORDER BY day, id",
            )
            .map_err(|e| self.err(e))?;
        for mut phase in phases {
            phase.items = items
                .query_map([phase.id], |row| {
                    Ok(Item {
                        id: row.get(0)?,
                        day: row.get(1)?,
                        text: row.get(2)?,
                        done: row.get(3)?,
                    })
                })
                .and_then(Iterator::collect)
                .map_err(|e| self.err(e))?;
            task.phases.push(phase);
        }
        Ok(task)
    }

    /// Checks plan item `item` off: its phase is done when its last item is, the task when
    /// its last phase is (and active until then). Checking an item already done changes
    /// nothing.
    pub fn mark_item_done(&mut self, item: i64) -> Result<Checked> {
        let found: Option<(i64, i64)> = self
            .conn
            .query_row("SELECT task, phase FROM plan_items WHERE id = ?1", [item], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .optional()
            .map_err(|e| self.err(e))?;
        let (task, phase) = found.ok_or(MemoryError::NotFound { what: "plan item", id: item })?;
        let now = self.now();
        self.write(|tx| {
            tx.execute(
                "UPDATE plan_items SET done = ?2 WHERE id = ?1 AND done IS NULL",
                params![item, now],
            )
            .map_err(sql)?;
            let left = |sql_text: &str, id: i64| -> Result<i64> {
                tx.query_row(sql_text, [id], |row| row.get(0)).map_err(sql)
            };
            let phase_done =
                left("SELECT count(*) FROM plan_items WHERE phase = ?1 AND done IS NULL", phase)?
                    == 0;
            if phase_done {
                tx.execute("UPDATE phases SET done = 1 WHERE id = ?1", [phase]).map_err(sql)?;
            }
            let task_done =
                left("SELECT count(*) FROM phases WHERE task = ?1 AND done = 0", task)? == 0;
            let status = if task_done { "done" } else { "active" };
            tx.execute(
                "UPDATE tasks SET status = ?2, updated = ?3 WHERE id = ?1 AND status != 'dropped'",
                params![task, status, now],
            )
            .map_err(sql)?;
            Ok(Checked { phase_done, task_done })
        })
    }

    /// Marks task `id` finished (every item of its plan with it), dropped, open or active.
    pub fn set_task_status(&mut self, id: i64, status: Status) -> Result<()> {
        self.task_exists(id)?;
        let now = self.now();
        self.write(|tx| {
            tx.execute(
                "UPDATE tasks SET status = ?2, updated = ?3 WHERE id = ?1",
                params![id, status.as_str(), now],
            )
            .map_err(sql)?;
            if status == Status::Done {
                tx.execute(
                    "UPDATE plan_items SET done = ?2 WHERE task = ?1 AND done IS NULL",
                    params![id, now],
                )
                .map_err(sql)?;
                tx.execute("UPDATE phases SET done = 1 WHERE task = ?1", [id]).map_err(sql)?;
            }
            Ok(())
        })
    }

    /// Gives task `id` another priority.
    pub fn set_task_priority(&mut self, id: i64, priority: u8) -> Result<()> {
        check_priority(priority)?;
        self.task_exists(id)?;
        let now = self.now();
        self.conn
            .execute(
                "UPDATE tasks SET priority = ?2, updated = ?3 WHERE id = ?1",
                params![id, priority, now],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Moves task `id`: its due date to `due` (or none), and the days of its plan items not
    /// done yet by `shift_days` (0 leaves them).
    pub fn reschedule(&mut self, id: i64, due: Option<&str>, shift_days: i64) -> Result<()> {
        if let Some(due) = due {
            check_date(due)?;
        }
        let task = self.task(id)?;
        let mut moved = Vec::new();
        for item in task.phases.iter().flat_map(|p| &p.items).filter(|i| !i.done) {
            moved.push((item.id, add_days(&item.day, shift_days)?));
        }
        let now = self.now();
        self.write(|tx| {
            tx.execute(
                "UPDATE tasks SET due = ?2, updated = ?3 WHERE id = ?1",
                params![id, due, now],
            )
            .map_err(sql)?;
            for (item, day) in &moved {
                tx.execute("UPDATE plan_items SET day = ?2 WHERE id = ?1", params![item, day])
                    .map_err(sql)?;
            }
            Ok(())
        })
    }

    /// What to do next, most urgent first, at most `limit`: each open or active task's plan
    /// items not done in its first unfinished phase, or the task itself when it has no plan
    /// left to do. Urgency: overdue, today, within three days, later; then priority, then
    /// date.
    pub fn next_actions(&self, today: &str, limit: usize) -> Result<Vec<NextAction>> {
        check_date(today)?;
        let soon = add_days(today, 3)?;
        let mut actions = Vec::new();
        for task in self.tasks(None)? {
            if !matches!(task.status, Status::Open | Status::Active) {
                continue;
            }
            let phase = task.phases.iter().find(|p| !p.done);
            let items: Vec<&Item> =
                phase.map(|p| p.items.iter().filter(|i| !i.done).collect()).unwrap_or_default();
            if items.is_empty() {
                actions.push(NextAction {
                    task: task.id,
                    task_title: task.title.clone(),
                    item: None,
                    text: task.title.clone(),
                    day: task.due.clone(),
                    priority: task.priority,
                    overdue: task.due.as_deref().is_some_and(|d| d < today),
                });
            }
            for item in items {
                actions.push(NextAction {
                    task: task.id,
                    task_title: task.title.clone(),
                    item: Some(item.id),
                    text: item.text.clone(),
                    day: Some(item.day.clone()),
                    priority: task.priority,
                    overdue: item.day.as_str() < today,
                });
            }
        }
        let bucket = |a: &NextAction| match a.day.as_deref() {
            Some(day) if day < today => 0,
            Some(day) if day == today => 1,
            Some(day) if day <= soon.as_str() => 2,
            Some(_) => 3,
            None => 4,
        };
        actions.sort_by(|a, b| {
            (bucket(a), a.priority, &a.day, a.task, a.item).cmp(&(
                bucket(b),
                b.priority,
                &b.day,
                b.task,
                b.item,
            ))
        });
        actions.truncate(limit);
        Ok(actions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("memory.db")).unwrap();
        (dir, store)
    }

    fn task(title: &str, priority: u8, due: Option<&str>) -> NewTask {
        NewTask { title: title.into(), goal: String::new(), priority, due: due.map(Into::into) }
    }

    fn phase(title: &str, items: &[(&str, &str)]) -> NewPhase {
        NewPhase {
            title: title.into(),
            items: items.iter().map(|(d, t)| ((*d).into(), (*t).into())).collect(),
        }
    }

    #[test]
    fn dates_are_checked_and_days_added_across_months_and_leap_years() {
        for good in ["2026-12-06", "2028-02-29", "2000-02-29"] {
            check_date(good).unwrap();
        }
        for bad in ["2026-02-29", "1900-02-29", "2026-13-01", "2026-1-5", "tomorrow", "2026-04-31"]
        {
            let e = check_date(bad).unwrap_err().to_string();
            assert!(e.contains("YYYY-MM-DD"), "{bad}: {e}");
        }
        assert_eq!(add_days("2026-12-30", 3).unwrap(), "2027-01-02");
        assert_eq!(add_days("2028-02-28", 1).unwrap(), "2028-02-29");
        assert_eq!(add_days("2026-03-01", -1).unwrap(), "2026-02-28");
    }

    #[test]
    fn checking_the_last_item_of_a_phase_advances_the_task_and_the_last_phase_ends_it() {
        let (_dir, mut store) = store();
        let id = store.create_task(&task("Learn Rust", 2, Some("2026-12-20"))).unwrap();
        store
            .set_plan(
                id,
                &[
                    phase(
                        "Basics",
                        &[("2026-12-07", "Read chapters 1-3"), ("2026-12-08", "Ownership")],
                    ),
                    phase("Practice", &[("2026-12-09", "Write a CLI")]),
                ],
            )
            .unwrap();
        let plan = store.task(id).unwrap();
        assert_eq!(plan.status, Status::Open);
        assert_eq!(plan.phases.len(), 2);
        let [first, second] = [plan.phases[0].items[0].id, plan.phases[0].items[1].id];
        let third = plan.phases[1].items[0].id;

        assert_eq!(
            store.mark_item_done(first).unwrap(),
            Checked { phase_done: false, task_done: false }
        );
        assert_eq!(store.task(id).unwrap().status, Status::Active);
        assert_eq!(
            store.mark_item_done(second).unwrap(),
            Checked { phase_done: true, task_done: false }
        );
        let next = store.next_actions("2026-12-07", 10).unwrap();
        assert_eq!(next.len(), 1);
        assert_eq!(next[0].text, "Write a CLI", "the next phase's items come up");
        assert_eq!(
            store.mark_item_done(third).unwrap(),
            Checked { phase_done: true, task_done: true }
        );
        assert_eq!(store.task(id).unwrap().status, Status::Done);
        assert!(store.next_actions("2026-12-07", 10).unwrap().is_empty());
        // Again: nothing changes.
        assert_eq!(
            store.mark_item_done(third).unwrap(),
            Checked { phase_done: true, task_done: true }
        );
        assert!(matches!(store.mark_item_done(999), Err(MemoryError::NotFound { .. })));
    }

    #[test]
    fn next_actions_come_overdue_first_then_today_then_soon_each_by_priority() {
        let (_dir, mut store) = store();
        let low = store.create_task(&task("Tidy the garage", 5, None)).unwrap();
        let high = store.create_task(&task("File taxes", 1, Some("2026-12-31"))).unwrap();
        let planned = store.create_task(&task("Learn Rust", 3, None)).unwrap();
        store
            .set_plan(
                planned,
                &[phase(
                    "Basics",
                    &[
                        ("2026-12-05", "Chapter 1"),
                        ("2026-12-06", "Chapter 2"),
                        ("2026-12-08", "Chapter 3"),
                    ],
                )],
            )
            .unwrap();
        let late = store.create_task(&task("Renew passport", 4, Some("2026-12-01"))).unwrap();
        let next = store.next_actions("2026-12-06", 10).unwrap();
        let order: Vec<(&str, bool)> = next.iter().map(|a| (a.text.as_str(), a.overdue)).collect();
        assert_eq!(
            order,
            [
                ("Chapter 1", true),
                ("Renew passport", true),
                ("Chapter 2", false),
                ("Chapter 3", false),
                ("File taxes", false),
                ("Tidy the garage", false),
            ]
        );
        assert_eq!(next[1].task, late);
        assert_eq!(next[4].task, high);
        assert_eq!(next[5].task, low);
        assert_eq!(store.next_actions("2026-12-06", 2).unwrap().len(), 2);

        // Another priority and a later date move them.
        store.set_task_priority(low, 1).unwrap();
        store.reschedule(planned, None, 7).unwrap();
        let next = store.next_actions("2026-12-06", 10).unwrap();
        assert_eq!(next[0].text, "Renew passport");
        assert_eq!(next.last().unwrap().text, "Tidy the garage", "no date comes last");
        assert_eq!(store.task(planned).unwrap().phases[0].items[0].day, "2026-12-12");
        store.set_task_status(late, Status::Dropped).unwrap();
        assert!(store.next_actions("2026-12-06", 10).unwrap().iter().all(|a| a.task != late));
    }

    #[test]
    fn a_bad_plan_or_task_is_refused_whole_and_says_why() {
        let (_dir, mut store) = store();
        assert!(store.create_task(&task(" ", 3, None)).unwrap_err().to_string().contains("title"));
        assert!(
            store
                .create_task(&task("x", 9, None))
                .unwrap_err()
                .to_string()
                .contains("1 (the highest) to 5")
        );
        assert!(
            store
                .create_task(&task("x", 3, Some("soon")))
                .unwrap_err()
                .to_string()
                .contains("YYYY-MM-DD")
        );
        let id = store.create_task(&task("Learn Rust", 3, None)).unwrap();
        store.set_plan(id, &[phase("Basics", &[("2026-12-07", "Chapter 1")])]).unwrap();
        let bad = [
            phase("Practice", &[("2026-12-09", "A CLI")]),
            phase("Projects", &[("2026-12-32", "A server")]),
        ];
        let e = store.set_plan(id, &bad).unwrap_err().to_string();
        assert!(e.contains("phase 2") && e.contains("YYYY-MM-DD"), "{e}");
        assert_eq!(store.task(id).unwrap().phases[0].title, "Basics", "the old plan stands");
        assert!(store.set_plan(id, &[]).is_err());
        assert!(
            store
                .set_plan(id, &[phase("Empty", &[])])
                .unwrap_err()
                .to_string()
                .contains("no items")
        );
        assert!(matches!(
            store.set_plan(77, &[phase("A", &[("2026-12-07", "b")])]),
            Err(MemoryError::NotFound { .. })
        ));
    }

    #[test]
    fn finishing_a_task_checks_its_plan_and_tasks_list_by_status() {
        let (_dir, mut store) = store();
        let a = store.create_task(&task("A", 3, None)).unwrap();
        store.set_plan(a, &[phase("P", &[("2026-12-07", "one"), ("2026-12-08", "two")])]).unwrap();
        let b = store.create_task(&task("B", 2, None)).unwrap();
        store.set_task_status(a, Status::Done).unwrap();
        let done = store.task(a).unwrap();
        assert!(done.phases.iter().all(|p| p.done && p.items.iter().all(|i| i.done)));
        let open: Vec<i64> =
            store.tasks(Some(Status::Open)).unwrap().iter().map(|t| t.id).collect();
        assert_eq!(open, [b]);
        let all: Vec<i64> = store.tasks(None).unwrap().iter().map(|t| t.id).collect();
        assert_eq!(all, [b, a], "open before done");
    }

    #[test]
    fn forgetting_everything_forgets_the_tasks_too() {
        let (_dir, mut store) = store();
        let id = store.create_task(&task("Call the notary quxbar77", 3, None)).unwrap();
        store.set_plan(id, &[phase("P", &[("2026-12-07", "bring zzplanword9")])]).unwrap();
        store.forget_all().unwrap();
        assert!(store.tasks(None).unwrap().is_empty());
        let bytes = std::fs::read(store.path()).unwrap();
        let found = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
        assert!(!found(b"quxbar77") && !found(b"zzplanword9"), "left in the file");
    }

    #[test]
    fn what_was_committed_survives_the_process_dying() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.db");
        let id = {
            let mut store = Store::open(&path).unwrap();
            let id = store.create_task(&task("Learn Rust", 3, None)).unwrap();
            store.set_plan(id, &[phase("Basics", &[("2026-12-07", "Chapter 1")])]).unwrap();
            // No close, no checkpoint: what a killed process leaves.
            std::mem::forget(store);
            id
        };
        let store = Store::open(&path).unwrap();
        assert_eq!(store.task(id).unwrap().phases[0].items[0].text, "Chapter 1");
    }
}
