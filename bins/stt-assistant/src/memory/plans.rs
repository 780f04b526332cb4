//! The planner's tools: the words that call for each ([`called_for`]) and how the memory
//! thread runs them against `stt_memory::planner` ([`call`]; what the model is told of them is
//! `super::tools::spec`). Like memory's own tools they check their arguments themselves and
//! answer a wrong one with what they expected, so a small model can try again; a plan the
//! model breaks a task into is checked whole (every phase titled, every item dated) and
//! stored all or nothing.

use serde_json::Value;
use stt_memory::Store;
use stt_memory::planner::{self, NewPhase, NewTask, NextAction, Status, Task};

use super::called::Called;
use super::tool::Tool::{
    self, BreakDownTask, CreateTask, GetNextActions, GetTask, ListTasks, MarkPlanDone, Prioritize,
    Reschedule, UpdateTaskStatus,
};

/// Whether a command's words are about goals, tasks or plans (then it is offered the
/// planner's tools: every schema costs a small model's attention, as memory's do).
pub fn asks_about_plans(text: &str) -> bool {
    const WORDS: [&str; 36] = [
        "list",
        "lists",
        "plan",
        "plans",
        "planning",
        "task",
        "tasks",
        "todo",
        "goal",
        "goals",
        "learn",
        "learning",
        "next",
        "schedule",
        "reschedule",
        "deadline",
        "due",
        "priority",
        "prioritize",
        "done",
        "finished",
        "finish",
        "completed",
        "progress",
        "week",
        "weeks",
        "month",
        "months",
        "days",
        "steps",
        "break",
        "project",
        "study",
        "practice",
        "habit",
        "postpone",
    ];
    // "to-do" and "to do list" are read as two words.
    let lower = text.to_lowercase();
    stt_memory::text::words(text).any(|w| WORDS.contains(&w.as_str()))
        || ["to-do", "to do list", "todo"].iter().any(|p| lower.contains(p))
}

/// Whether a command's words, about plans ([`asks_about_plans`]), call for planner tool
/// `tool`: adding for "add" or a goal, the next actions for "next", status for "done" or
/// "drop", and so on; words about plans that name none of them get the list and the next
/// actions. Nine schemas and their 1 900 tokens had the 1.5B model answer in words instead.
pub fn called_for(tool: Tool, text: &str) -> bool {
    const ADDING: [&str; 13] = [
        "add", "create", "new", "make", "want", "goal", "goals", "learn", "learning", "study",
        "practice", "habit", "project",
    ];
    const BREAKING: [&str; 11] = [
        "plan", "planning", "break", "steps", "learn", "learning", "study", "practice", "habit",
        "project", "goal",
    ];
    const LISTING: [&str; 7] = ["list", "lists", "tasks", "todo", "show", "open", "all"];
    const SHOWING: [&str; 4] = ["details", "detail", "about", "plan"];
    const NEXT: [&str; 4] = ["next", "should", "now", "today"];
    const STATUS: [&str; 17] = [
        "done",
        "finished",
        "finish",
        "completed",
        "complete",
        "mark",
        "did",
        "drop",
        "dropped",
        "cancel",
        "remove",
        "delete",
        "stop",
        "abandon",
        "start",
        "started",
        "active",
    ];
    const MOVING: [&str; 13] = [
        "reschedule",
        "postpone",
        "push",
        "move",
        "delay",
        "later",
        "back",
        "due",
        "deadline",
        "week",
        "weeks",
        "days",
        "tomorrow",
    ];
    const ENDING: [&str; 10] = [
        "done",
        "finished",
        "completed",
        "drop",
        "dropped",
        "cancel",
        "remove",
        "delete",
        "abandon",
        "stop",
    ];
    const MAKING: [&str; 6] = ["add", "create", "new", "plan", "break", "steps"];
    const STEPS: [&str; 9] =
        ["step", "steps", "item", "items", "lesson", "lessons", "phase", "part", "session"];
    const RANKING: [&str; 6] = ["priority", "prioritize", "important", "urgent", "top", "first"];
    if !asks_about_plans(text) {
        return false;
    }
    let words: Vec<String> = stt_memory::text::words(text).collect();
    let any = |list: &[&str]| words.iter().any(|w| list.contains(&w.as_str()));
    // Words that end a task make none, unless they say so too ("add a task: finish…").
    let makes = any(&MAKING) || !any(&ENDING);
    let named = [&ADDING[..], &LISTING, &NEXT, &STATUS, &MOVING, &RANKING].iter().any(|l| any(l));
    match tool {
        // "Make the insurance task my top priority" ranks a task and "drop the Spanish goal"
        // ends one: neither makes or plans one (offered `break_down_task` for the second,
        // the 1.5B model planned the goal it was asked to drop).
        CreateTask => any(&ADDING) && !any(&RANKING) && makes,
        BreakDownTask => any(&BREAKING) && makes,
        ListTasks => any(&LISTING) || !named,
        GetTask => any(&SHOWING),
        GetNextActions => any(&NEXT) || !named,
        // A step of a plan is named as one; "mark the milk task as done" is about the task.
        MarkPlanDone => any(&STATUS) && any(&STEPS),
        UpdateTaskStatus => any(&STATUS),
        Reschedule => any(&MOVING),
        Prioritize => any(&RANKING),
        _ => false,
    }
}

/// Whether `text` names a task, a goal or a plan: then "done" or "drop" is about it, not
/// about a reminder.
pub fn names_a_task(text: &str) -> bool {
    const WORDS: [&str; 6] = ["task", "tasks", "goal", "goals", "plan", "plans"];
    stt_memory::text::words(text).any(|w| WORDS.contains(&w.as_str()))
}

/// Next actions a call lists at most.
const NEXT_ACTIONS: usize = 8;

/// A whole number in any JSON spelling: 7, 7.0 (the tool-call parser takes a whole float for
/// an integer, as JSON Schema does) or "7".
pub fn whole(v: &Value) -> Option<i64> {
    v.as_i64()
        .or_else(|| v.as_f64().filter(|n| n.fract() == 0.0).map(|n| n as i64))
        .or_else(|| v.as_str()?.trim().parse().ok())
}

fn int(args: &Value, key: &str) -> Option<i64> {
    whole(args.get(key)?)
}

fn text<'a>(args: &'a Value, key: &str) -> &'a str {
    args.get(key).and_then(Value::as_str).map(str::trim).unwrap_or("")
}

/// One line of a task.
pub fn task_line(task: &Task) -> String {
    let mut line = format!(
        "task {} [{}] {} (priority {})",
        task.id,
        task.status.as_str(),
        task.title,
        task.priority
    );
    if let Some(due) = &task.due {
        line.push_str(&format!(", due {due}"));
    }
    let items: Vec<_> = task.phases.iter().flat_map(|p| &p.items).collect();
    if !items.is_empty() {
        let done = items.iter().filter(|i| i.done).count();
        line.push_str(&format!(", {done} of {} items done", items.len()));
    }
    line
}

/// A task with its plan, as the model and a person read it.
pub fn task_text(task: &Task) -> String {
    let mut text = task_line(task);
    if !task.goal.is_empty() {
        text.push_str(&format!("\ngoal: {}", task.goal));
    }
    for (n, phase) in task.phases.iter().enumerate() {
        let mark = if phase.done { " (done)" } else { "" };
        text.push_str(&format!("\nphase {}: {}{mark}", n + 1, phase.title));
        for item in &phase.items {
            let check = if item.done { "x" } else { " " };
            text.push_str(&format!("\n  [{check}] item {} {}: {}", item.id, item.day, item.text));
        }
    }
    text
}

/// One line of a next action.
pub fn action_line(action: &NextAction) -> String {
    let mut line = match action.item {
        Some(item) => {
            format!("item {item}: {} (task {} {})", action.text, action.task, action.task_title)
        }
        None => format!("task {}: {}", action.task, action.text),
    };
    if let Some(day) = &action.day {
        line.push_str(if action.overdue { ", overdue since " } else { ", on " });
        line.push_str(day);
    }
    line
}

/// A task as a `task_output` lists it.
pub fn task_entry(task: &Task) -> stt_proto::TaskEntry {
    stt_proto::TaskEntry {
        id: task.id,
        title: task.title.clone(),
        goal: task.goal.clone(),
        status: task.status.as_str().to_owned(),
        priority: task.priority,
        due: task.due.clone(),
        phases: task
            .phases
            .iter()
            .map(|p| stt_proto::PlanPhase {
                title: p.title.clone(),
                done: p.done,
                items: p
                    .items
                    .iter()
                    .map(|i| stt_proto::PlanItem {
                        id: i.id,
                        day: i.day.clone(),
                        text: i.text.clone(),
                        done: i.done,
                    })
                    .collect(),
            })
            .collect(),
    }
}

fn action_entry(a: &NextAction) -> stt_proto::NextAction {
    stt_proto::NextAction {
        task: a.task,
        task_title: a.task_title.clone(),
        item: a.item,
        text: a.text.clone(),
        day: a.day.clone(),
        priority: a.priority,
        overdue: a.overdue,
    }
}

/// What a `task` request is answered with: the text a person reads, and the tasks or next
/// actions it lists.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Answer {
    pub text: String,
    pub tasks: Vec<stt_proto::TaskEntry>,
    pub next: Vec<stt_proto::NextAction>,
}

/// Answers a `task` request (`stt-ctl task`) against the store; `today` is the local date.
/// A wrong argument or an id the store lacks is `Err(Ok(why))`, a fault of the store
/// `Err(Err(e))`.
pub fn answer(
    store: &mut Store,
    request: &stt_proto::TaskRequest,
    today: &str,
) -> Result<Answer, std::result::Result<String, stt_memory::MemoryError>> {
    use stt_memory::MemoryError::{Invalid, NotFound};
    use stt_proto::TaskRequest as R;
    let person = |e: stt_memory::MemoryError| match e {
        Invalid(why) => Ok(why),
        NotFound { what, id } => {
            Ok(format!("there is no {what} {id}: `stt-ctl task list` shows them"))
        }
        fault => Err(fault),
    };
    let shown = |task: Task| Answer {
        text: task_text(&task),
        tasks: vec![task_entry(&task)],
        next: Vec::new(),
    };
    match request {
        R::List { status } => {
            let status = match status.as_deref().map(str::trim) {
                None | Some("" | "all") => None,
                Some(s) => Some(Status::parse(s).ok_or_else(|| {
                    Ok(format!("no status '{s}': open, active, done or dropped"))
                })?),
            };
            let tasks = store.tasks(status).map_err(person)?;
            let text = if tasks.is_empty() {
                "no tasks".to_owned()
            } else {
                tasks.iter().map(task_line).collect::<Vec<_>>().join("\n")
            };
            Ok(Answer { text, tasks: tasks.iter().map(task_entry).collect(), next: Vec::new() })
        }
        R::Show { id } => store.task(*id).map(shown).map_err(person),
        R::Add { title, goal, due, priority } => {
            let task = NewTask {
                title: title.to_string(),
                goal: goal.clone().unwrap_or_default(),
                priority: priority.unwrap_or(planner::DEFAULT_PRIORITY),
                due: due.clone().filter(|d| !d.trim().is_empty()),
            };
            let id = store.create_task(&task).map_err(person)?;
            store.task(id).map(shown).map_err(person)
        }
        R::Done { id, item: false } => {
            store.set_task_status(*id, Status::Done).map_err(person)?;
            store.task(*id).map(shown).map_err(person)
        }
        R::Done { id, item: true } => {
            let checked = store.mark_item_done(*id).map_err(person)?;
            let task = store
                .tasks(None)
                .map_err(person)?
                .into_iter()
                .find(|t| t.phases.iter().flat_map(|p| &p.items).any(|i| i.id == *id));
            let mut answer = task.map(shown).unwrap_or_default();
            let said = match checked {
                c if c.task_done => format!("item {id} done; that was the last: the task is done"),
                c if c.phase_done => format!("item {id} done; its phase is finished"),
                _ => format!("item {id} done"),
            };
            answer.text = format!("{said}\n{}", answer.text);
            Ok(answer)
        }
        R::Next { limit } => {
            let limit = limit.map_or(NEXT_ACTIONS, |l| l as usize);
            let actions = store.next_actions(today, limit).map_err(person)?;
            let text = if actions.is_empty() {
                "nothing to do: no open tasks".to_owned()
            } else {
                actions.iter().map(action_line).collect::<Vec<_>>().join("\n")
            };
            Ok(Answer { text, tasks: Vec::new(), next: actions.iter().map(action_entry).collect() })
        }
    }
}

/// The phases `args` gives, or what is wrong with them.
fn phases(args: &Value) -> Result<Vec<NewPhase>, String> {
    let Some(given) = args.get("phases").and_then(Value::as_array) else {
        return Err("give 'phases': [{\"title\": ..., \"items\": [{\"day\": \"YYYY-MM-DD\", \"text\": ...}]}]".into());
    };
    given
        .iter()
        .enumerate()
        .map(|(n, phase)| {
            let items = phase
                .get("items")
                .and_then(Value::as_array)
                .ok_or_else(|| format!("phase {} has no 'items' list", n + 1))?
                .iter()
                .map(|item| (text(item, "day").to_owned(), text(item, "text").to_owned()))
                .collect();
            Ok(NewPhase { title: text(phase, "title").to_owned(), items })
        })
        .collect()
}

/// Runs planner tool `tool` with `args`; `today` is the local date, `YYYY-MM-DD`. `Err` is a
/// fault of the store; a wrong argument is an `Ok` answer that says so.
pub fn call(
    store: &mut Store,
    tool: Tool,
    args: &Value,
    today: &str,
) -> stt_memory::Result<Called> {
    use stt_memory::MemoryError::{Invalid, NotFound};
    let task_id = int(args, "task_id");
    let outcome = match tool {
        CreateTask => {
            let priority = int(args, "priority").unwrap_or(i64::from(planner::DEFAULT_PRIORITY));
            let mut due = Some(text(args, "due").to_owned()).filter(|d| !d.is_empty());
            // A small model knows no date: one in the past is a guess. The task is made
            // without it (a wrong due date is worse than none), and the model told why.
            let guessed = due.take_if(|d| planner::check_date(d).is_ok() && d.as_str() < today);
            let task = NewTask {
                title: text(args, "title").to_owned(),
                goal: text(args, "goal").to_owned(),
                priority: u8::try_from(priority).unwrap_or(u8::MAX),
                due,
            };
            store.create_task(&task).map(|id| {
                let undated = guessed
                    .map(|d| format!(", without a due date: {d} has passed"))
                    .unwrap_or_default();
                format!(
                    "task {id} made: {}{undated} (today is {today}); break_down_task plans it",
                    task.title
                )
            })
        }
        BreakDownTask => {
            let Some(id) = task_id else { return Ok(Called::failed("give 'task_id'")) };
            let phases = match phases(args) {
                Ok(phases) => phases,
                Err(why) => return Ok(Called::failed(why)),
            };
            let past = phases
                .iter()
                .flat_map(|p| &p.items)
                .find(|(day, _)| planner::check_date(day).is_ok() && day.as_str() < today);
            if let Some((day, _)) = past {
                return Ok(Called::failed(format!(
                    "{day} has passed: today is {today}, so the plan starts today or later"
                )));
            }
            store.set_plan(id, &phases).and_then(|()| store.task(id)).map(|task| task_text(&task))
        }
        ListTasks => {
            let status = match text(args, "status") {
                "" => None,
                s => match Status::parse(s) {
                    Some(status) => Some(status),
                    None => return Ok(Called::failed("'status' is open, active, done or dropped")),
                },
            };
            store.tasks(status).map(|tasks| {
                if tasks.is_empty() {
                    "no tasks".to_owned()
                } else {
                    tasks.iter().map(task_line).collect::<Vec<_>>().join("\n")
                }
            })
        }
        GetTask => {
            let Some(id) = task_id else { return Ok(Called::failed("give 'task_id'")) };
            store.task(id).map(|task| task_text(&task))
        }
        GetNextActions => store.next_actions(today, NEXT_ACTIONS).map(|actions| {
            if actions.is_empty() {
                "nothing to do: no open tasks".to_owned()
            } else {
                format!(
                    "today is {today}\n{}",
                    actions.iter().map(action_line).collect::<Vec<_>>().join("\n")
                )
            }
        }),
        MarkPlanDone => {
            let Some(item) = int(args, "item_id") else {
                return Ok(Called::failed("give 'item_id'"));
            };
            store.mark_item_done(item).map(|checked| match checked {
                c if c.task_done => {
                    format!("item {item} done; that was the last: the task is done")
                }
                c if c.phase_done => {
                    format!("item {item} done; its phase is finished, the next begins")
                }
                _ => format!("item {item} done"),
            })
        }
        Reschedule => {
            let Some(id) = task_id else { return Ok(Called::failed("give 'task_id'")) };
            let due = Some(text(args, "due")).filter(|d| !d.is_empty());
            let shift = int(args, "shift_days").unwrap_or(0);
            if due.is_none() && shift == 0 {
                return Ok(Called::failed(
                    "give a new 'due' date, or 'shift_days' to move its items",
                ));
            }
            store
                .reschedule(id, due, shift)
                .and_then(|()| store.task(id))
                .map(|task| task_line(&task))
        }
        UpdateTaskStatus => {
            let Some(id) = task_id else { return Ok(Called::failed("give 'task_id'")) };
            let Some(status) = Status::parse(text(args, "status")) else {
                return Ok(Called::failed("'status' is open, active, done or dropped"));
            };
            store.set_task_status(id, status).map(|()| format!("task {id} is {}", status.as_str()))
        }
        Prioritize => {
            let Some(id) = task_id else { return Ok(Called::failed("give 'task_id'")) };
            let Some(priority) = int(args, "priority") else {
                return Ok(Called::failed("give 'priority', 1 (highest) to 5"));
            };
            store
                .set_task_priority(id, u8::try_from(priority).unwrap_or(u8::MAX))
                .map(|()| format!("task {id} has priority {priority}"))
        }
        other => return Ok(Called::failed(format!("{other} is not the planner's"))),
    };
    match outcome {
        Ok(said) => Ok(Called::ok(said)),
        // What the model got wrong, said so it can try again.
        Err(Invalid(why)) => Ok(Called::failed(why)),
        Err(NotFound { what, id }) => {
            Ok(Called::failed(format!("there is no {what} {id}: list_tasks shows them")))
        }
        Err(fault) => Err(fault),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("memory.db")).unwrap();
        (dir, store)
    }

    fn run(store: &mut Store, tool: Tool, args: Value) -> Called {
        call(store, tool, &args, "2026-12-07").unwrap()
    }

    #[test]
    fn plans_are_offered_when_the_words_are_about_them() {
        for text in [
            "help me learn Rust in two weeks",
            "what should I do next",
            "I'm done with item 3",
            "what's on my to-do list",
            "add buy milk to my list",
        ] {
            assert!(asks_about_plans(text), "{text}");
        }
        for text in ["what time is it", "turn on the lights", "set a timer for ten minutes"] {
            assert!(!asks_about_plans(text), "{text}");
        }
    }

    #[test]
    fn a_command_about_plans_is_offered_the_planner_tools_its_words_call_for() {
        let offered = |text: &str| -> Vec<Tool> {
            Tool::PLANNER.into_iter().filter(|tool| called_for(*tool, text)).collect()
        };
        assert_eq!(offered("what time is it"), Vec::<Tool>::new());
        assert_eq!(offered("Add a task to buy milk."), [CreateTask]);
        assert_eq!(offered("What should I do next?"), [GetNextActions]);
        assert_eq!(offered("What's on my task list?"), [ListTasks]);
        assert_eq!(offered("Mark the milk task as done."), [UpdateTaskStatus]);
        assert!(offered("I finished step 3 of my Rust plan.").contains(&MarkPlanDone));
        assert_eq!(offered("Make the insurance task my top priority."), [Prioritize]);
        assert_eq!(offered("Drop the Spanish goal."), [UpdateTaskStatus]);
        assert_eq!(offered("Add a new task: finish the report."), [CreateTask, UpdateTaskStatus]);
        assert_eq!(offered("Push the insurance task back by one week."), [Reschedule]);
        assert_eq!(
            offered("help me learn Rust in two weeks"),
            [CreateTask, BreakDownTask, Reschedule]
        );
        assert_eq!(offered("how are my plans"), [ListTasks, GetNextActions]);
    }

    #[test]
    fn a_task_is_made_broken_down_worked_through_and_finished() {
        let (_dir, mut store) = store();
        let made = run(
            &mut store,
            CreateTask,
            json!({"title": "Learn Rust", "goal": "write a CLI", "due": "2026-12-20", "priority": "2"}),
        );
        assert!(made.ok && made.result.starts_with("task 1 made"), "{made:?}");
        let plan = json!({"task_id": 1.0, "phases": [
            {"title": "Basics", "items": [{"day": "2026-12-07", "text": "Chapters 1-3"}, {"day": "2026-12-08", "text": "Ownership"}]},
            {"title": "Practice", "items": [{"day": "2026-12-10", "text": "A small CLI"}]}
        ]});
        let broken = run(&mut store, BreakDownTask, plan);
        assert!(broken.ok, "{broken:?}");
        assert!(
            broken.result.contains("phase 1: Basics\n  [ ] item 1 2026-12-07: Chapters 1-3"),
            "{}",
            broken.result
        );
        let next = run(&mut store, GetNextActions, json!({}));
        assert!(
            next.result.starts_with(
                "today is 2026-12-07\nitem 1: Chapters 1-3 (task 1 Learn Rust), on 2026-12-07"
            ),
            "{}",
            next.result
        );
        assert!(
            run(&mut store, MarkPlanDone, json!({"item_id": 1})).result.ends_with("item 1 done")
        );
        let phase = run(&mut store, MarkPlanDone, json!({"item_id": "2"}));
        assert!(phase.result.contains("its phase is finished"), "{phase:?}");
        let listed = run(&mut store, ListTasks, json!({"status": "active"}));
        assert_eq!(
            listed.result,
            "task 1 [active] Learn Rust (priority 2), due 2026-12-20, 2 of 3 items done"
        );
        let moved = run(&mut store, Reschedule, json!({"task_id": 1, "shift_days": 2}));
        assert!(moved.ok, "{moved:?}");
        assert!(
            run(&mut store, GetTask, json!({"task_id": 1}))
                .result
                .contains("item 3 2026-12-12: A small CLI")
        );
        let last = run(&mut store, MarkPlanDone, json!({"item_id": 3}));
        assert!(last.result.contains("the task is done"), "{last:?}");
        assert_eq!(
            run(&mut store, GetNextActions, json!({})).result,
            "nothing to do: no open tasks"
        );
        assert!(run(&mut store, Prioritize, json!({"task_id": 1, "priority": 1})).ok);
        assert!(run(&mut store, UpdateTaskStatus, json!({"task_id": 1, "status": "dropped"})).ok);
    }

    #[test]
    fn wrong_arguments_are_answered_with_what_was_expected() {
        let (_dir, mut store) = store();
        let cases = [
            (CreateTask, json!({"title": ""}), "title"),
            (CreateTask, json!({"title": "x", "due": "next week"}), "YYYY-MM-DD"),
            (CreateTask, json!({"title": "x", "priority": 9}), "1 (the highest) to 5"),
            (BreakDownTask, json!({"phases": []}), "task_id"),
            (BreakDownTask, json!({"task_id": 1}), "give 'phases'"),
            (
                BreakDownTask,
                json!({"task_id": 1, "phases": [{"title": "A", "items": [{"day": "2026-12-01", "text": "b"}]}]}),
                "today is 2026-12-07",
            ),
            (BreakDownTask, json!({"task_id": 1, "phases": [{"title": "A"}]}), "no 'items'"),
            (
                BreakDownTask,
                json!({"task_id": 7, "phases": [{"title": "A", "items": [{"day": "2026-12-07", "text": "b"}]}]}),
                "no task 7",
            ),
            (MarkPlanDone, json!({}), "item_id"),
            (MarkPlanDone, json!({"item_id": 5}), "no plan item 5"),
            (ListTasks, json!({"status": "later"}), "open, active, done or dropped"),
            (Reschedule, json!({"task_id": 1}), "shift_days"),
            (UpdateTaskStatus, json!({"task_id": 1, "status": "finished"}), "open, active"),
            (Prioritize, json!({"task_id": 1}), "priority"),
        ];
        for (name, args, needle) in cases {
            let called = run(&mut store, name, args.clone());
            assert!(!called.ok && called.result.contains(needle), "{name} {args}: {called:?}");
        }
        let made = run(&mut store, CreateTask, json!({"title": "Plan a trip"}));
        assert!(made.ok, "{made:?}");
        let bad_day = json!({"task_id": 1, "phases": [{"title": "A", "items": [{"day": "2026-02-30", "text": "b"}]}]});
        let refused = run(&mut store, BreakDownTask, bad_day);
        assert!(!refused.ok && refused.result.contains("phase 1"), "{refused:?}");
        assert!(store.task(1).unwrap().phases.is_empty(), "nothing of a refused plan is kept");
        // A due date gone by is a small model's guess: the task is made without it.
        let guessed = run(&mut store, CreateTask, json!({"title": "x", "due": "2023-04-15"}));
        assert!(guessed.ok, "{guessed:?}");
        assert!(
            guessed.result.contains("without a due date: 2023-04-15 has passed"),
            "{guessed:?}"
        );
        assert_eq!(store.task(2).unwrap().due, None);
    }
}
