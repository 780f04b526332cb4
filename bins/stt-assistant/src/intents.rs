//! Commands answered without the model (`[intents]`): what a command's words ask for, read by
//! `stt_intent`'s templates, as an [`Action`] the loop carries out at once, and the answer
//! it gives. Pure: the loop passes the local time and what is on ([`Can`]); the actions
//! themselves are run by `owner/intents.rs`.
//!
//! Every built-in intent in `stt_intent::BUILTIN` is an arm of [`action`]; a configured tool
//! with `sentences` is [`Action::Tool`]. An intent whose part is off (reminders without
//! memory, do not disturb without wake-ups) is left to the model, as is anything the
//! templates do not take whole.

use std::path::Path;

use chrono::{NaiveDateTime, Timelike};
use serde_json::{Value as Json, json};

use stt_config::ToolCommand;
use stt_intent::{Decision, Intents, Match, Value};

/// What a command asks for, to be done without the model.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Time,
    /// The time in another place's zone.
    TimeIn {
        zone: stt_intent::zone::Tz,
    },
    Date,
    TimerSet {
        seconds: f64,
        label: String,
    },
    TimerList,
    /// One timer: the one with `label`, or the only one.
    TimerCancel {
        label: Option<String>,
    },
    TimerCancelAll,
    ReminderAdd {
        text: String,
        due: NaiveDateTime,
    },
    ReminderList,
    PlanNext,
    TaskAdd {
        title: String,
    },
    TaskDone {
        title: String,
    },
    Voice(bool),
    Dictate(bool),
    /// Do not disturb for `minutes`; 0 ends it.
    Quiet {
        minutes: u32,
    },
    /// What the person said last, and its answer, forgotten.
    ForgetLast,
    /// A configured tool, with the arguments its sentence gave; `answered`: the user's file
    /// gives it an answer (else its output is the answer, or "Done.").
    Tool {
        name: String,
        args: Json,
        answered: bool,
    },
}

/// What is on, so an intent that needs a part that is off goes to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Can {
    pub memory: bool,
    /// The assistant speaks up on its own (do not disturb means something).
    pub wake: bool,
}

/// A command decided here.
#[derive(Debug, Clone, PartialEq)]
pub struct Decided {
    pub intent: String,
    /// The template that matched, as written.
    pub template: String,
    pub action: Action,
}

/// The intents: the built-in ones, the user's file, and the configured tools' sentences.
#[derive(Debug, Clone)]
pub struct Local {
    intents: Intents,
    /// The configured tools that have sentences.
    tools: Vec<String>,
}

/// The user's file of intents, beside the config file unless `[intents].file` says where.
pub const FILE: &str = "intents.toml";

/// Do not disturb without a length: an hour.
const QUIET_MINUTES: u32 = 60;

impl Local {
    /// The built-in intents, the user's `file` (none is fine) and `tools`' sentences. An
    /// intent name that is neither built in nor a tool is refused, naming the file.
    pub fn load(file: &Path, tools: &[ToolCommand]) -> Result<Self, String> {
        let mut intents = Intents::builtin().map_err(|e| e.to_string())?;
        let builtin: Vec<String> = intents.names().map(str::to_owned).collect();
        match std::fs::read_to_string(file) {
            Ok(text) => {
                let origin = file.display().to_string();
                let mine = Intents::parse(&text, &origin).map_err(|e| {
                    format!("{e}; fix it, or move the file away to use the built-in intents only")
                })?;
                for name in mine.names() {
                    if !builtin.iter().any(|b| b == name) && !tools.iter().any(|t| t.name == name) {
                        return Err(format!(
                            "{origin}: intent '{name}' is neither a built-in one ({}) nor a \
                             [[tools.command]] name",
                            builtin.join(", ")
                        ));
                    }
                }
                intents.extend(mine);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
        }
        let mut with = Vec::new();
        for tool in tools.iter().filter(|t| !t.sentences.is_empty()) {
            let origin = format!("[[tools.command]] '{}'", tool.name);
            intents.add(&tool.name, &tool.sentences, None, &origin).map_err(|e| e.to_string())?;
            for slot in intents.slots(&tool.name).keys() {
                if !tool.parameters.contains_key(slot) {
                    return Err(format!(
                        "{origin}: its sentences have a slot {{{slot}}} that is none of its \
                         parameters: name it in `parameters`"
                    ));
                }
            }
            with.push(tool.name.clone());
        }
        Ok(Self { intents, tools: with })
    }

    /// What `text` asks for at local time `now`, if it is decided here.
    pub fn decide(&self, text: &str, now: NaiveDateTime, can: Can) -> Option<Decided> {
        let Decision::Matched(m) = self.intents.decide(text, now) else { return None };
        let action = if self.tools.contains(&m.intent) {
            let args: serde_json::Map<String, Json> =
                m.slots.iter().map(|(k, v)| (k.clone(), json!(shown(v)))).collect();
            let answered = self.has_answer(&m.intent);
            Action::Tool { name: m.intent.clone(), args: Json::Object(args), answered }
        } else {
            action(&m, can)?
        };
        Some(Decided { intent: m.intent, template: m.template, action })
    }

    /// Why `text` is the model's: no template takes it, two disagree, or its intent needs a
    /// part that is off.
    pub fn why_not(&self, text: &str, now: NaiveDateTime) -> String {
        match self.intents.decide(text, now) {
            Decision::NoMatch => format!("no template takes \"{}\" whole", text.trim()),
            Decision::Unsure(all) => {
                let names: Vec<&str> = all.iter().map(|m| m.intent.as_str()).collect();
                format!("it reads more than one way ({})", names.join(", "))
            }
            Decision::Matched(m) => format!(
                "{} needs a part that is off ([memory].enabled for reminders, tasks and \
                 forgetting, [planner].proactive for do not disturb)",
                m.intent
            ),
        }
    }

    /// Whether intent `intent` has an answer of its own (a configured tool's comes from its
    /// output unless the user's file gives one).
    pub fn has_answer(&self, intent: &str) -> bool {
        self.intents.answer(intent).is_some()
    }

    /// Intent `intent`'s answer with `values` put in.
    pub fn answer(&self, intent: &str, values: &[(&str, &str)]) -> String {
        let answer = self.intents.answer(intent).unwrap_or("Done.");
        stt_intent::fill(answer, values)
    }
}

/// A slot's value as a tool's argument.
fn shown(value: &Value) -> String {
    match value {
        Value::Number(n) => n.to_string(),
        Value::Duration(s) => duration(*s),
        Value::Time(t) => t.format("%Y-%m-%d %H:%M").to_string(),
        Value::Date(d) => d.to_string(),
        Value::Zone(z) => z.name().to_owned(),
        Value::Text(t) => t.clone(),
    }
}

/// A built-in intent's action, or `None` (the model's) when it is unknown or its part is off.
fn action(m: &Match, can: Can) -> Option<Action> {
    let text = |name: &str| m.text(name).map(str::to_owned);
    let seconds = || match m.slots.get("duration") {
        Some(Value::Duration(s)) => Some(*s),
        _ => None,
    };
    Some(match m.intent.as_str() {
        "get_time" => Action::Time,
        "get_time_in" => match m.slots.get("place") {
            Some(Value::Zone(zone)) => Action::TimeIn { zone: *zone },
            _ => return None,
        },
        "get_date" => Action::Date,
        "timer_set" => {
            Action::TimerSet { seconds: seconds()?, label: text("label").unwrap_or_default() }
        }
        "timer_list" => Action::TimerList,
        "timer_cancel" => Action::TimerCancel { label: text("label") },
        "timer_cancel_all" => Action::TimerCancelAll,
        "reminder_add" if can.memory => {
            let Some(Value::Time(due)) = m.slots.get("time") else { return None };
            Action::ReminderAdd { text: text("text")?, due: *due }
        }
        "reminder_list" if can.memory => Action::ReminderList,
        "plan_next" if can.memory => Action::PlanNext,
        "task_add" if can.memory => Action::TaskAdd { title: text("title")? },
        "task_done" if can.memory => Action::TaskDone { title: text("title")? },
        "voice_on" => Action::Voice(true),
        "voice_off" => Action::Voice(false),
        "dictate_on" => Action::Dictate(true),
        "dictate_off" => Action::Dictate(false),
        "quiet_on" if can.wake => {
            let minutes = seconds().map_or(QUIET_MINUTES, |s| (s / 60.0).round().max(1.0) as u32);
            Action::Quiet { minutes }
        }
        "quiet_off" if can.wake => Action::Quiet { minutes: 0 },
        "forget_last" if can.memory => Action::ForgetLast,
        _ => return None,
    })
}

/// What `action` would do, for a person (`stt-ctl intents test`).
pub fn describe(action: &Action, now: NaiveDateTime) -> String {
    match action {
        Action::Time => "say the time".into(),
        Action::TimeIn { zone } => format!("say the time in {}", zone.name()),
        Action::Date => "say the date".into(),
        Action::TimerSet { seconds, label } if label.is_empty() => {
            format!("set a timer for {}", duration(*seconds))
        }
        Action::TimerSet { seconds, label } => {
            format!("set a timer for {} called \"{label}\"", duration(*seconds))
        }
        Action::TimerList => "list the timers".into(),
        Action::TimerCancel { label: Some(label) } => format!("cancel the timer \"{label}\""),
        Action::TimerCancel { label: None } => "cancel the timer (the only one)".into(),
        Action::TimerCancelAll => "cancel every timer".into(),
        Action::ReminderAdd { text, due } => {
            format!("remind you to \"{text}\" {} (add_intention)", when(*due, now))
        }
        Action::ReminderList => "list the reminders".into(),
        Action::PlanNext => "say what is next on your list".into(),
        Action::TaskAdd { title } => format!("add the task \"{title}\" (create_task)"),
        Action::TaskDone { title } => format!("mark the task \"{title}\" done"),
        Action::Voice(on) => format!("turn spoken replies {}", if *on { "on" } else { "off" }),
        Action::Dictate(on) => format!("turn dictation {}", if *on { "on" } else { "off" }),
        Action::Quiet { minutes: 0 } => "end do not disturb".into(),
        Action::Quiet { minutes } => {
            format!("do not disturb for {}", duration(f64::from(*minutes) * 60.0))
        }
        Action::ForgetLast => "forget what was just said".into(),
        Action::Tool { name, args, .. } => format!("run the tool {name} with {args}"),
    }
}

/// A length of time as said: "10 minutes", "1 hour 30 minutes", "45 seconds".
pub fn duration(seconds: f64) -> String {
    let total = seconds.round().max(0.0) as u64;
    let (h, m, s) = (total / 3600, total / 60 % 60, total % 60);
    let part = |n: u64, unit: &str| match n {
        0 => None,
        1 => Some(format!("1 {unit}")),
        n => Some(format!("{n} {unit}s")),
    };
    let parts: Vec<String> =
        [part(h, "hour"), part(m, "minute"), part(s, "second")].into_iter().flatten().collect();
    if parts.is_empty() { "0 seconds".into() } else { parts.join(" ") }
}

/// A time of day as said: "14:20".
pub fn clock(at: NaiveDateTime) -> String {
    format!("{:02}:{:02}", at.hour(), at.minute())
}

/// A day as said: "Monday 7 December 2026".
pub fn day(at: NaiveDateTime) -> String {
    at.format("%A %-d %B %Y").to_string()
}

/// A moment to come as said from `now`: "today at 21:00", "tomorrow at 09:00", "on Friday
/// 11 December at 15:00".
pub fn when(at: NaiveDateTime, now: NaiveDateTime) -> String {
    let days = (at.date() - now.date()).num_days();
    let on = match days {
        0 => "today".to_owned(),
        1 => "tomorrow".to_owned(),
        _ => format!("on {}", at.format("%A %-d %B")),
    };
    format!("{on} at {}", clock(at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    /// Monday 7 December 2026, 14:20.
    fn now() -> NaiveDateTime {
        NaiveDate::from_ymd_opt(2026, 12, 7)
            .and_then(|d| d.and_hms_opt(14, 20, 0))
            .unwrap_or_default()
    }

    fn local() -> Local {
        Local::load(Path::new("/nonexistent/intents.toml"), &[]).unwrap_or_else(|e| panic!("{e}"))
    }

    const ALL: Can = Can { memory: true, wake: true };

    #[test]
    fn every_built_in_intent_has_an_action() {
        let intents = Intents::builtin().unwrap_or_else(|e| panic!("{e}"));
        for name in intents.names() {
            let slots = intents
                .slots(name)
                .into_iter()
                .map(|(slot, kind)| {
                    let value = match kind {
                        stt_intent::Kind::Duration => Value::Duration(60.0),
                        stt_intent::Kind::Time => Value::Time(now()),
                        stt_intent::Kind::Date => Value::Date(now().date()),
                        stt_intent::Kind::Number => Value::Number(1.0),
                        stt_intent::Kind::Zone => Value::Zone(stt_intent::zone::Tz::UTC),
                        stt_intent::Kind::Text => Value::Text("x".into()),
                    };
                    (slot, value)
                })
                .collect();
            let m = Match { intent: name.to_owned(), slots, template: String::new() };
            assert!(action(&m, ALL).is_some(), "the built-in intent {name} has no action");
        }
    }

    #[test]
    fn commands_become_actions_and_parts_that_are_off_leave_them_to_the_model() {
        let decide = |text: &str, can: Can| local().decide(text, now(), can).map(|d| d.action);
        assert_eq!(decide("what time is it", Can::default()), Some(Action::Time));
        assert_eq!(
            decide("what time is it in Tokyo", Can::default()),
            Some(Action::TimeIn { zone: stt_intent::zone::Tz::Asia__Tokyo })
        );
        assert_eq!(decide("what time is it in the meeting room", Can::default()), None);
        assert_eq!(
            decide("set a timer for ten minutes for the pasta", Can::default()),
            Some(Action::TimerSet { seconds: 600.0, label: "pasta".into() })
        );
        let due = NaiveDate::from_ymd_opt(2026, 12, 8).and_then(|d| d.and_hms_opt(9, 0, 0));
        let reminder = "remind me to call the plumber tomorrow at nine";
        assert_eq!(
            decide(reminder, ALL),
            due.map(|due| Action::ReminderAdd { text: "call the plumber".into(), due })
        );
        assert_eq!(decide(reminder, Can::default()), None, "reminders live in memory");
        assert_eq!(
            decide("do not disturb for 30 minutes", ALL),
            Some(Action::Quiet { minutes: 30 })
        );
        assert_eq!(decide("do not disturb", ALL), Some(Action::Quiet { minutes: 60 }));
        assert_eq!(decide("do not disturb", Can::default()), None);
        assert_eq!(decide("what time does the bakery close", ALL), None);
    }

    #[test]
    fn a_configured_tool_with_sentences_is_run_with_their_slots_as_arguments() {
        let tool = ToolCommand {
            name: "lights".into(),
            description: "Lights on".into(),
            argv: vec!["lights".into(), "{room}".into()],
            side_effect: stt_config::SideEffect::Local,
            requires_confirmation: false,
            parameters: [("room".to_owned(), "The room".to_owned())].into(),
            sentences: vec!["turn on the {room} lights".into()],
        };
        let local = Local::load(Path::new("/nonexistent"), std::slice::from_ref(&tool))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            local.decide("Turn on the kitchen lights.", now(), Can::default()).map(|d| d.action),
            Some(Action::Tool {
                name: "lights".into(),
                args: json!({"room": "kitchen"}),
                answered: false
            })
        );
        let mut odd = tool;
        odd.sentences = vec!["turn on the {place} lights".into()];
        let err = Local::load(Path::new("/nonexistent"), &[odd]).err().unwrap_or_default();
        assert!(err.contains("slot {place} that is none of its parameters"), "{err}");
    }

    #[test]
    fn a_users_file_with_an_unknown_intent_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let file = dir.path().join("intents.toml");
        std::fs::write(&file, "[[intent]]\nname = \"make_coffee\"\nsentences = [\"coffee\"]\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let err = Local::load(&file, &[]).err().unwrap_or_default();
        assert!(err.contains("intent 'make_coffee' is neither a built-in one"), "{err}");
        std::fs::write(&file, "[[intent]]\nname = \"get_time\"\nsentences = [\"clock\"]\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let local = Local::load(&file, &[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            local.decide("clock", now(), Can::default()).map(|d| d.action),
            Some(Action::Time)
        );
    }

    #[test]
    fn times_and_lengths_are_said_as_people_say_them() {
        assert_eq!(duration(600.0), "10 minutes");
        assert_eq!(duration(5400.0), "1 hour 30 minutes");
        assert_eq!(duration(61.0), "1 minute 1 second");
        let at = |d: u32, h: u32| {
            NaiveDate::from_ymd_opt(2026, 12, d)
                .and_then(|d| d.and_hms_opt(h, 0, 0))
                .unwrap_or_default()
        };
        assert_eq!(when(at(7, 21), now()), "today at 21:00");
        assert_eq!(when(at(8, 9), now()), "tomorrow at 09:00");
        assert_eq!(when(at(11, 15), now()), "on Friday 11 December at 15:00");
        assert_eq!(day(now()), "Monday 7 December 2026");
        assert_eq!(clock(now()), "14:20");
    }
}
