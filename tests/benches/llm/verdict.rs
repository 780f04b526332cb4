//! The checks an everyday command is held to: its calls as they ran and its answer, against
//! the local time when it ran and the planner's tasks before and after it.

use chrono::{Datelike as _, NaiveDate, NaiveDateTime, TimeDelta, Timelike as _, Weekday};
use serde_json::Value;

use stt_assistant::memory;
use stt_proto::TaskEntry;
use stt_tools::Builtin;

use crate::text::{holds, words};

// The tools the checks speak of, by the names the runs report.
pub const GET_DATETIME: &str = Builtin::GetDatetime.name();
pub const SET_TIMER: &str = Builtin::SetTimer.name();
pub const NOTIFY: &str = Builtin::Notify.name();
pub const CLIPBOARD_COPY: &str = Builtin::ClipboardCopy.name();
pub const OPEN_URL: &str = Builtin::OpenUrl.name();
pub const ADD_INTENTION: &str = memory::Tool::AddIntention.name();
const CREATE_TASK: &str = memory::Tool::CreateTask.name();
const BREAK_DOWN_TASK: &str = memory::Tool::BreakDownTask.name();
pub const MAKE_TASK: &[&str] = &[CREATE_TASK, BREAK_DOWN_TASK];

/// What a command did, for its check: the calls as they ran (their `tool_call` events, in
/// order), its answer, the local time just before it started and once it ended, and the
/// planner's tasks before and after it.
pub struct Verdict<'a> {
    pub calls: Vec<(&'a str, &'a Value)>,
    pub answer: String,
    pub now: NaiveDateTime,
    pub end: NaiveDateTime,
    pub tasks: &'a [TaskEntry],
    pub after: &'a [TaskEntry],
}

impl Verdict<'_> {
    /// The arguments of each call of `tool`.
    pub fn called(&self, tool: &str) -> impl Iterator<Item = &Value> {
        self.calls.iter().filter(move |(t, _)| *t == tool).map(|(_, a)| *a)
    }
}

/// A question about the time or the date: `get_datetime` called, or no call and an answer
/// that `says` it.
pub fn told(v: &Verdict<'_>, says: fn(&Verdict<'_>) -> bool) -> bool {
    v.called(GET_DATETIME).next().is_some() || (v.calls.is_empty() && says(v))
}

/// The minutes from one before the command started to its end.
fn minutes_of(v: &Verdict<'_>) -> Vec<NaiveDateTime> {
    let mut at = v.now.with_second(0).unwrap_or(v.now) - TimeDelta::minutes(1);
    let mut out = Vec::new();
    while at <= v.end && out.len() < 60 {
        out.push(at);
        at += TimeDelta::minutes(1);
    }
    out
}

/// Whether the answer tells the time of one of those minutes: in 24 hours, or in 12 (with
/// or without a leading zero) and not in the wrong half of the day.
pub fn states_time(v: &Verdict<'_>) -> bool {
    let any =
        |forms: &[String]| holds(&v.answer, &forms.iter().map(String::as_str).collect::<Vec<_>>());
    minutes_of(v).iter().any(|at| {
        let full = ["%H:%M", "%-H:%M"].map(|f| at.format(f).to_string());
        let half = ["%I:%M", "%-I:%M"].map(|f| at.format(f).to_string());
        let (this, other) = if at.hour() < 12 {
            (["am", "a.m"], ["pm", "p.m"])
        } else {
            (["pm", "p.m"], ["am", "a.m"])
        };
        let with = |marks: [&str; 2]| -> Vec<String> {
            half.iter()
                .flat_map(|h| {
                    marks.iter().flat_map(move |m| [format!("{h}{m}"), format!("{h} {m}")])
                })
                .collect()
        };
        let said_half = any(&half) || any(&with(this));
        (any(&full) || said_half) && !any(&with(other))
    })
}

/// Whether the answer names today's weekday, and no other.
pub fn states_weekday(v: &Verdict<'_>) -> bool {
    let today: Vec<String> =
        [v.now, v.end].iter().map(|at| at.format("%A").to_string().to_lowercase()).collect();
    let named: Vec<&str> =
        ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
            .into_iter()
            .filter(|day| holds(&v.answer, &[day]))
            .collect();
    !named.is_empty() && named.iter().all(|day| today.iter().any(|t| t == day))
}

/// Whether the answer gives today's date: its month's name and its day's number, or in
/// numbers (`YYYY-MM-DD`, or day and month either way round with the year).
pub fn states_date(v: &Verdict<'_>) -> bool {
    [v.now, v.end].iter().any(|at| {
        let day = at.format("%-d").to_string();
        let days: Vec<String> = ["", "st", "nd", "rd", "th"].map(|s| format!("{day}{s}")).into();
        let days: Vec<&str> = days.iter().map(String::as_str).collect();
        let month = at.format("%B").to_string();
        let numeric = ["%Y-%m-%d", "%d/%m/%Y", "%-d/%-m/%Y", "%m/%d/%Y", "%-m/%-d/%Y"]
            .map(|f| at.format(f).to_string());
        holds(&v.answer, &numeric.each_ref().map(String::as_str))
            || (holds(&v.answer, &[month.as_str()]) && holds(&v.answer, &days))
    })
}

/// Whether the answer gives this year.
pub fn states_year(v: &Verdict<'_>) -> bool {
    [v.now, v.end].iter().any(|at| holds(&v.answer, &[at.format("%Y").to_string().as_str()]))
}

/// A `set_timer` for `minutes`, its label with `label` when one is asked for.
pub fn timer(v: &Verdict<'_>, minutes: f64, label: Option<&str>) -> bool {
    v.called(SET_TIMER).any(|a| {
        a["minutes"].as_f64().is_some_and(|m| (m - minutes).abs() < 1e-6)
            && label.is_none_or(|l| says(a, "label", l))
    })
}

/// When an `add_intention`'s reminder falls due, as memory reads its arguments: the earliest
/// and the latest it can be. `due_in_minutes` counts from when the call ran, some time
/// between the command's start and its end (a minute either side, for the minute a model
/// works from); else `due` is that minute (`YYYY-MM-DD HH:MM`, with a `T` too, or a day
/// alone at 09:00, as memory reads it).
fn due_of(v: &Verdict<'_>, args: &Value) -> Option<(NaiveDateTime, NaiveDateTime)> {
    if let Some(m) = args["due_in_minutes"].as_f64().filter(|m| *m > 0.0) {
        let after = TimeDelta::seconds((m * 60.0).round() as i64);
        let slack = TimeDelta::minutes(1);
        return Some((v.now + after - slack, v.end + after + slack));
    }
    let due = args["due"].as_str()?.trim();
    let at = NaiveDateTime::parse_from_str(due, "%Y-%m-%d %H:%M")
        .or_else(|_| NaiveDateTime::parse_from_str(due, "%Y-%m-%dT%H:%M"))
        .ok()
        .or_else(|| NaiveDate::parse_from_str(due, "%Y-%m-%d").ok()?.and_hms_opt(9, 0, 0))?;
    Some((at, at))
}

/// An `add_intention` with `key` in its text, due at one of `at`.
pub fn reminder(v: &Verdict<'_>, key: &str, at: &[NaiveDateTime]) -> bool {
    v.called(ADD_INTENTION).any(|a| {
        says(a, "text", key)
            && due_of(v, a).is_some_and(|(lo, hi)| at.iter().any(|w| lo <= *w && *w <= hi))
    })
}

/// "Remind me in `minutes` minutes to …": a `set_timer` of that length with `key` in its
/// label, or an `add_intention` with `key` in its text, due that long after the command (a
/// minute either side).
pub fn reminder_in(v: &Verdict<'_>, key: &str, minutes: i64) -> bool {
    let after = TimeDelta::minutes(minutes);
    let slack = TimeDelta::minutes(1);
    let (from, to) = (v.now + after - slack, v.end + after + slack);
    let timer = timer(v, minutes as f64, Some(key));
    timer
        || v.called(ADD_INTENTION).any(|a| {
            says(a, "text", key) && due_of(v, a).is_some_and(|(lo, hi)| lo <= to && from <= hi)
        })
}

/// `days` after the command's day, at `hour:minute`.
pub fn day_at(v: &Verdict<'_>, days: i64, hour: u32, minute: u32) -> NaiveDateTime {
    let day = v.now.date() + TimeDelta::days(days);
    day.and_hms_opt(hour, minute, 0).unwrap_or_default()
}

/// "On Friday at five": the next `day` at `hour:minute`; when today is that day and the hour
/// is still to come, today's too.
pub fn weekday_at(v: &Verdict<'_>, day: Weekday, hour: u32, minute: u32) -> Vec<NaiveDateTime> {
    let today = day_at(v, 0, hour, minute);
    let mut at = Vec::new();
    if v.now.weekday() == day && today > v.now {
        at.push(today);
    }
    at.extend((1..=7).map(|n| day_at(v, n, hour, minute)).find(|d| d.weekday() == day));
    at
}

/// "Next Wednesday at three": the coming `day` after today, or the one a week after it.
pub fn next_weekday_at(
    v: &Verdict<'_>,
    day: Weekday,
    hour: u32,
    minute: u32,
) -> Vec<NaiveDateTime> {
    let coming = (1..=7).map(|n| day_at(v, n, hour, minute)).find(|d| d.weekday() == day);
    coming.into_iter().flat_map(|d| [d, d + TimeDelta::days(7)]).collect()
}

/// Whether task `task` has `key` in its title or goal.
pub fn has(task: &TaskEntry, key: &str) -> bool {
    words(&task.title).contains(key) || words(&task.goal).contains(key)
}

/// The ids of the tasks with `key` in their title or goal.
pub fn task_ids(tasks: &[TaskEntry], key: &str) -> Vec<i64> {
    tasks.iter().filter(|t| has(t, key)).map(|t| t.id).collect()
}

/// Whether a call's `task_id` is one of `ids` (in any spelling the planner takes).
pub fn of_task(args: &Value, ids: &[i64]) -> bool {
    memory::plans::whole(&args["task_id"]).is_some_and(|id| ids.contains(&id))
}

/// A task made with `key` in its title: `create_task`, or `break_down_task` with a title
/// (which makes the task it plans).
pub fn made_task(v: &Verdict<'_>, key: &str) -> bool {
    MAKE_TASK.iter().any(|tool| v.called(tool).any(|a| says(a, "title", key)))
}

/// The planner asked what there is to do.
pub fn asked_planner(v: &Verdict<'_>) -> bool {
    [memory::Tool::GetNextActions, memory::Tool::ListTasks]
        .iter()
        .any(|tool| v.called(tool.name()).next().is_some())
}

/// An `update_task_status` of a task with `key` (as it was before the command) to `status`.
pub fn status_set(v: &Verdict<'_>, key: &str, status: &str) -> bool {
    let ids = task_ids(v.tasks, key);
    v.called(memory::Tool::UpdateTaskStatus.name())
        .any(|a| of_task(a, &ids) && a["status"].as_str().map(str::trim) == Some(status))
}

/// A `reschedule` of a task with `key` a week later: `shift_days` 7, or a `due` a week
/// after the one it had, and neither given otherwise.
pub fn week_later(v: &Verdict<'_>, key: &str) -> bool {
    let ids = task_ids(v.tasks, key);
    v.called(memory::Tool::Reschedule.name()).any(|a| {
        let Some(id) = memory::plans::whole(&a["task_id"]).filter(|id| ids.contains(id)) else {
            return false;
        };
        let later = v
            .tasks
            .iter()
            .find(|t| t.id == id)
            .and_then(|t| NaiveDate::parse_from_str(t.due.as_deref()?, "%Y-%m-%d").ok())
            .map(|d| (d + TimeDelta::days(7)).format("%Y-%m-%d").to_string());
        let shift = memory::plans::whole(&a["shift_days"]).unwrap_or(0);
        let due = a["due"].as_str().map(str::trim).filter(|d| !d.is_empty());
        let due_right = due.is_some() && due == later.as_deref();
        (shift == 0 || shift == 7) && (due.is_none() || due_right) && (shift == 7 || due_right)
    })
}

/// A `clipboard_copy` of `text` (in words: case and punctuation aside).
pub fn copied(v: &Verdict<'_>, text: &str) -> bool {
    v.called(CLIPBOARD_COPY).any(|a| words(a["text"].as_str().unwrap_or_default()) == text)
}

/// A `notify` with one of `texts` in its title or body.
pub fn notified(v: &Verdict<'_>, texts: &[&str]) -> bool {
    v.called(NOTIFY).any(|a| texts.iter().any(|t| says(a, "title", t) || says(a, "body", t)))
}

/// An `open_url` of a page of `site`.
pub fn opened(v: &Verdict<'_>, site: &str) -> bool {
    v.called(OPEN_URL).any(|a| web_page(a, site))
}

/// A question answered without a call, the answer with one of `spellings`.
pub fn answered(v: &Verdict<'_>, spellings: &[&str]) -> bool {
    v.calls.is_empty() && holds(&v.answer, spellings)
}

/// What no tool does: no call but a read of the time, and an answer that says it cannot.
pub fn cannot(v: &Verdict<'_>) -> bool {
    v.calls.iter().all(|(tool, _)| *tool == GET_DATETIME) && refuses(&v.answer)
}

/// Memory asked for what was said before.
pub fn recalled(v: &Verdict<'_>) -> bool {
    [memory::Tool::Recall, memory::Tool::SearchRecent, memory::Tool::ExploreTree]
        .iter()
        .any(|tool| v.called(tool.name()).next().is_some())
}

/// Whether an answer says that it cannot do what was asked.
fn refuses(answer: &str) -> bool {
    let answer = answer.to_lowercase().replace('\u{2019}', "'");
    [
        "can't",
        "cannot",
        "can not",
        "unable",
        "not able",
        "no tool",
        "don't have",
        "do not have",
        "not possible",
        "isn't possible",
        "not available",
        "sorry",
    ]
    .iter()
    .any(|w| answer.contains(w))
}

/// Whether the call's string `key` has the words `want`.
fn says(args: &Value, key: &str, want: &str) -> bool {
    words(args[key].as_str().unwrap_or_default()).contains(want)
}

/// Whether the call's `url` is an http(s) link to `site` or a host under it (its front page
/// or any).
fn web_page(args: &Value, site: &str) -> bool {
    let url = args["url"].as_str().unwrap_or_default().trim().to_ascii_lowercase();
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
    let host = rest.map(|r| r.split(['/', '?', '#']).next().unwrap_or_default());
    host.is_some_and(|h| h == site || h.strip_suffix(site).is_some_and(|sub| sub.ends_with('.')))
}
