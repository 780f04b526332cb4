//! The assistant speaking up on its own. The model schedules its next look at what is due
//! with the `heartbeat` tool (10 to 720 minutes ahead); when that time comes the loop asks
//! [`Wakes::due`] whether to run a proactive turn now. Plain data on the local wall clock
//! (the loop's [`Clock`](crate::clock::Clock)), so tests move time instead of waiting for it.
//!
//! A person comes first: a wake-up that finds someone speaking, a command armed or running,
//! or the model busy for a person looks again a little later ([`RETRY`]); one in the first
//! [`FIRST_QUIET`] after start is postponed to its end, not replayed; inside the
//! do-not-disturb hours (`[planner].dnd`) or a quiet asked for (`set_do_not_disturb`) it waits
//! for their end. A wake-up whose last proactive turn nobody answered is dropped, and the
//! next comes one interval later: reminders never pile up.
//!
//! What the loop keeps across restarts ([`Saved`]) is written by the writer thread.

use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Local, NaiveTime, TimeDelta, Timelike};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use stt_proto::SideEffect;
use stt_tools::registry::ToolSpec;

/// No wake-up fires this soon after the assistant starts.
pub const FIRST_QUIET: Duration = Duration::from_secs(120);

/// How far ahead the model may schedule its next wake-up, in minutes.
pub const MINUTES: (u32, u32) = (10, 720);

/// A wake-up held back by a person looks again after this long.
pub const RETRY: Duration = Duration::from_secs(30);

/// The longest quiet `set_do_not_disturb` gives, in minutes (a day).
pub const MAX_QUIET_MINUTES: u32 = 24 * 60;

/// The wake-up file, in the assistant's state directory.
pub const FILE: &str = "wake.json";

stt_tools::tools! {
    /// The tools that change the wake-ups, as commands and proactive turns get them.
    pub enum Tool {
        /// When the assistant next wakes up on its own.
        Heartbeat = "heartbeat",
        /// Quiet: no wake-ups for some minutes.
        SetDoNotDisturb = "set_do_not_disturb",
    }
}

/// Whether a command's words, about plans, call for wake-up tool `tool`: looking again
/// later ("check on my progress tomorrow") or quiet hours ("don't disturb me tonight").
pub fn called_for(tool: Tool, text: &str) -> bool {
    const AGAIN: [&str; 8] =
        ["check", "again", "later", "follow", "nudge", "ping", "remind", "progress"];
    const QUIET: [&str; 5] = ["disturb", "quiet", "silence", "mute", "interrupt"];
    let words: Vec<String> = stt_memory::text::words(text).collect();
    let any = |list: &[&str]| words.iter().any(|w| list.contains(&w.as_str()));
    match tool {
        Tool::Heartbeat => any(&AGAIN),
        Tool::SetDoNotDisturb => any(&QUIET),
    }
}

/// Wake-ups as the config asks for them.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `[planner].dnd`.
    pub hours: Option<Hours>,
    /// Where the next wake-up is kept across restarts.
    pub file: std::path::PathBuf,
}

/// Do-not-disturb hours: from one minute of the day to another, across midnight when the
/// first is later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hours {
    from: u16,
    to: u16,
}

impl Hours {
    /// From `[planner].dnd`'s minutes after midnight.
    pub fn new((from, to): (u16, u16)) -> Self {
        Self { from, to }
    }

    fn contains(self, at: NaiveTime) -> bool {
        let minute = u16::try_from(at.hour() * 60 + at.minute()).unwrap_or(0);
        if self.from < self.to {
            (self.from..self.to).contains(&minute)
        } else {
            minute >= self.from || minute < self.to
        }
    }

    /// When the hours that hold `at` end.
    fn end_after(self, at: DateTime<Local>) -> DateTime<Local> {
        let end = NaiveTime::from_hms_opt(u32::from(self.to / 60), u32::from(self.to % 60), 0)
            .unwrap_or_default();
        let mut day = at.date_naive();
        if at.time() >= end {
            day = day.succ_opt().unwrap_or(day);
        }
        day.and_time(end).and_local_timezone(Local).earliest().unwrap_or(at + TimeDelta::hours(1))
    }
}

/// What a look at the wake-ups found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Look {
    /// Run a proactive turn now.
    Turn,
    /// Not now (why); the next look is at [`Wakes::next`].
    Later(&'static str),
    /// A person comes first: looked at again in 30 s. Nothing a restart needs (the wake-up
    /// it holds is still due then), so nothing to write down.
    Held,
    /// The last proactive turn is still unanswered: this one is dropped.
    Dropped,
}

/// What is kept across restarts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Saved {
    /// The next wake-up, if one is scheduled.
    pub next: Option<DateTime<Local>>,
    /// The interval the model last asked for, in minutes.
    pub minutes: u32,
    /// The end of a quiet asked for with `set_do_not_disturb`.
    pub quiet_until: Option<DateTime<Local>>,
}

/// The wake-ups: when the next is, and what holds it back.
#[derive(Debug, Clone)]
pub struct Wakes {
    started: DateTime<Local>,
    saved: Saved,
    hours: Option<Hours>,
    /// A proactive turn was shown and no person has spoken or typed to the assistant since.
    unanswered: bool,
}

impl Wakes {
    /// Wake-ups as `saved` left them, for an assistant started at `started`.
    pub fn new(saved: Saved, hours: Option<Hours>, started: DateTime<Local>) -> Self {
        Self { started, saved, hours, unanswered: false }
    }

    /// What to keep across a restart.
    pub fn saved(&self) -> &Saved {
        &self.saved
    }

    /// When to look next, if a wake-up is scheduled.
    pub fn next(&self) -> Option<DateTime<Local>> {
        self.saved.next
    }

    /// The model's `heartbeat(minutes)`: the next wake-up `minutes` from `now`, clamped to
    /// [`MINUTES`]. Returns the minutes used and when.
    pub fn schedule(&mut self, minutes: u32, now: DateTime<Local>) -> (u32, DateTime<Local>) {
        let minutes = minutes.clamp(MINUTES.0, MINUTES.1);
        let at = now + TimeDelta::minutes(i64::from(minutes));
        self.saved.minutes = minutes;
        self.saved.next = Some(at);
        (minutes, at)
    }

    /// `set_do_not_disturb(minutes)`: quiet until `minutes` from `now`; 0 ends a quiet.
    pub fn quiet_for(&mut self, minutes: u32, now: DateTime<Local>) -> Option<DateTime<Local>> {
        self.saved.quiet_until = (minutes > 0)
            .then(|| now + TimeDelta::minutes(i64::from(minutes.min(MAX_QUIET_MINUTES))));
        self.saved.quiet_until
    }

    /// Whether the assistant keeps quiet at `now`: the do-not-disturb hours, or a quiet
    /// asked for. Returns when it ends.
    pub fn quiet(&self, now: DateTime<Local>) -> Option<DateTime<Local>> {
        let asked = self.saved.quiet_until.filter(|until| *until > now);
        let hours = self.hours.filter(|h| h.contains(now.time())).map(|h| h.end_after(now));
        asked.into_iter().chain(hours).max()
    }

    /// A person spoke or typed to the assistant: the last proactive turn is answered.
    pub fn answered(&mut self) {
        self.unanswered = false;
    }

    /// A proactive turn was shown.
    pub fn shown(&mut self) {
        self.unanswered = true;
    }

    /// Whether a proactive turn is due at `now`. `busy`: a person is speaking, has a
    /// command armed or running, or waits for the model.
    pub fn due(&mut self, now: DateTime<Local>, busy: bool) -> Option<Look> {
        let next = self.saved.next.filter(|next| *next <= now)?;
        let settled = self.started + TimeDelta::from_std(FIRST_QUIET).unwrap_or_default();
        if now < settled {
            self.saved.next = Some(settled);
            return Some(Look::Later("the assistant has only just started"));
        }
        if let Some(end) = self.quiet(now) {
            self.saved.next = Some(end);
            return Some(Look::Later("do not disturb"));
        }
        if busy {
            self.saved.next = Some(now + TimeDelta::from_std(RETRY).unwrap_or_default());
            return Some(Look::Held);
        }
        // The next look, unless the turn asks for another: one interval on.
        let minutes = self.saved.minutes.clamp(MINUTES.0, MINUTES.1);
        self.saved.next = Some(now.max(next) + TimeDelta::minutes(i64::from(minutes)));
        if self.unanswered {
            return Some(Look::Dropped);
        }
        Some(Look::Turn)
    }
}

/// What `path` kept; nothing when it is not there or does not parse (said in the log).
pub fn load(path: &Path) -> Saved {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            tracing::warn!("{} does not parse ({e}): no wake-up is scheduled", path.display());
            Saved::default()
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Saved::default(),
        Err(e) => {
            tracing::warn!("cannot read {}: {e}; no wake-up is scheduled", path.display());
            Saved::default()
        }
    }
}

/// What a wake tool's call asks of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// `heartbeat(minutes)`.
    Wake(u32),
    /// `set_do_not_disturb(minutes)`.
    Quiet(u32),
}

/// What the model is told a wake tool did.
pub fn told(asked: Asked) -> String {
    match asked {
        Asked::Wake(minutes) => {
            let minutes = minutes.clamp(MINUTES.0, MINUTES.1);
            format!("you will look again in {minutes} minutes")
        }
        Asked::Quiet(0) => "do not disturb is over: reminders may come again".into(),
        Asked::Quiet(minutes) => {
            let minutes = minutes.min(MAX_QUIET_MINUTES);
            format!("quiet for {minutes} minutes: no reminders until then")
        }
    }
}

/// The spec of wake tool `tool`.
pub fn spec(tool: Tool) -> ToolSpec {
    let (description, parameters) = match tool {
        Tool::Heartbeat => (
            "Choose when you next wake up on your own to look at the user's tasks and \
             reminders and remind them of what is due: minutes from now, 10 to 720.",
            json!({"type": "object", "properties": {
                "minutes": {"type": "integer", "description": "Minutes from now, 10 to 720"}
            }, "required": ["minutes"]}),
        ),
        Tool::SetDoNotDisturb => (
            "Keep quiet (no reminders on your own) for some minutes, up to 1440; 0 ends a quiet.",
            json!({"type": "object", "properties": {
                "minutes": {"type": "integer", "description": "Minutes of quiet from now; 0 ends it"}
            }, "required": ["minutes"]}),
        ),
    };
    ToolSpec {
        name: tool.name().to_owned(),
        description: description.to_owned(),
        parameters,
        side_effect: SideEffect::Local,
        requires_confirmation: false,
    }
}

/// What a call of wake tool `tool` with `args` asks for, or what was wrong with it.
pub fn ask(tool: Tool, args: &Value) -> Result<Asked, String> {
    let minutes = args
        .get("minutes")
        .and_then(crate::memory::plans::whole)
        .ok_or_else(|| format!("{tool} needs 'minutes', a whole number"))?;
    let minutes = u32::try_from(minutes.max(0)).unwrap_or(u32::MAX);
    Ok(match tool {
        Tool::Heartbeat => Asked::Wake(minutes),
        Tool::SetDoNotDisturb => Asked::Quiet(minutes),
    })
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn at(h: u32, m: u32) -> DateTime<Local> {
        Local.with_ymd_and_hms(2026, 12, 7, h, m, 0).earliest().unwrap()
    }

    fn wakes(started: DateTime<Local>) -> Wakes {
        Wakes::new(Saved::default(), Some(Hours::new((22 * 60, 8 * 60))), started)
    }

    #[test]
    fn the_model_schedules_its_wake_up_within_ten_minutes_and_twelve_hours() {
        let mut w = wakes(at(9, 0));
        assert_eq!(w.schedule(3, at(10, 0)), (10, at(10, 10)));
        assert_eq!(w.schedule(5000, at(10, 0)).0, 720);
        assert_eq!(w.schedule(45, at(10, 0)), (45, at(10, 45)));
        assert_eq!(w.due(at(10, 44), false), None);
        assert_eq!(w.due(at(10, 45), false), Some(Look::Turn));
        // Then every 45 minutes, until the model says otherwise.
        assert_eq!(w.next(), Some(at(11, 30)));
    }

    #[test]
    fn no_wake_up_in_the_first_two_minutes_a_due_one_is_postponed_once() {
        let mut w = Wakes::new(
            Saved { next: Some(at(8, 30)), minutes: 60, quiet_until: None },
            None,
            at(9, 0),
        );
        assert_eq!(
            w.due(at(9, 0), false),
            Some(Look::Later("the assistant has only just started"))
        );
        assert_eq!(w.next(), Some(at(9, 2)));
        assert_eq!(w.due(at(9, 1), false), None);
        assert_eq!(w.due(at(9, 2), false), Some(Look::Turn));
        assert_eq!(w.due(at(9, 2), false), None, "one turn, not one per missed interval");
        assert_eq!(w.next(), Some(at(10, 2)));
    }

    #[test]
    fn a_person_comes_first_and_an_unanswered_turn_is_not_repeated() {
        let mut w = wakes(at(9, 0));
        w.schedule(30, at(10, 0));
        assert_eq!(w.due(at(10, 30), true), Some(Look::Held));
        assert_eq!(w.next(), Some(at(10, 30) + TimeDelta::seconds(30)));
        assert_eq!(w.due(at(10, 31), false), Some(Look::Turn));
        w.shown();
        assert_eq!(w.due(at(11, 1), false), Some(Look::Dropped));
        assert_eq!(w.due(at(11, 31), false), Some(Look::Dropped));
        w.answered();
        assert_eq!(w.due(at(12, 1), false), Some(Look::Turn));
    }

    #[test]
    fn do_not_disturb_hours_span_midnight_and_hold_a_wake_up_to_their_end() {
        let mut w = wakes(at(9, 0));
        w.schedule(60, at(21, 30));
        assert_eq!(w.due(at(22, 30), false), Some(Look::Later("do not disturb")));
        let morning = Local.with_ymd_and_hms(2026, 12, 8, 8, 0, 0).earliest().unwrap();
        assert_eq!(w.next(), Some(morning));
        assert_eq!(w.quiet(at(7, 59)), Some(at(8, 0)));
        assert_eq!(w.quiet(at(8, 0)), None);
        assert_eq!(w.quiet(at(21, 59)), None);
        assert_eq!(w.due(morning, false), Some(Look::Turn));
    }

    #[test]
    fn a_quiet_asked_for_holds_wake_ups_until_it_ends_or_is_ended() {
        let mut w = Wakes::new(Saved::default(), None, at(9, 0));
        w.schedule(10, at(10, 0));
        assert_eq!(w.quiet_for(90, at(10, 0)), Some(at(11, 30)));
        assert_eq!(w.due(at(10, 10), false), Some(Look::Later("do not disturb")));
        assert_eq!(w.next(), Some(at(11, 30)));
        assert_eq!(w.quiet_for(0, at(10, 20)), None);
        assert_eq!(w.quiet(at(10, 20)), None);
        assert_eq!(w.quiet_for(99_999, at(10, 0)), Some(at(10, 0) + TimeDelta::days(1)));
    }

    #[test]
    fn the_tools_take_whole_minutes() {
        assert_eq!(ask(Tool::Heartbeat, &json!({"minutes": 30})), Ok(Asked::Wake(30)));
        assert_eq!(ask(Tool::SetDoNotDisturb, &json!({"minutes": 0})), Ok(Asked::Quiet(0)));
        assert!(ask(Tool::Heartbeat, &json!({})).unwrap_err().contains("minutes"));
        assert!(ask(Tool::Heartbeat, &json!({"minutes": "soon"})).is_err());
        for tool in Tool::ALL {
            assert_eq!(spec(*tool).name, tool.name());
        }
    }

    #[test]
    fn what_is_kept_reads_back_and_a_damaged_file_schedules_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        assert_eq!(load(&path), Saved::default());
        let saved = Saved { next: Some(at(10, 0)), minutes: 60, quiet_until: Some(at(9, 0)) };
        std::fs::write(&path, serde_json::to_vec(&saved).unwrap()).unwrap();
        assert_eq!(load(&path), saved);
        std::fs::write(&path, b"{half").unwrap();
        assert_eq!(load(&path), Saved::default());
    }
}
