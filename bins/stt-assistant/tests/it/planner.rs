//! The planner's tools through the command path against the scripted model and a real store:
//! the model's calls (as it writes them) make a task, break it into dated items, list what to
//! do next and check items off, and the rows in memory's database are what it asked for.

use serde_json::json;
use stt_assistant::llm::Work;
use stt_assistant::memory::Episode;
use stt_testkit::llm_server::{LlmServer, Script};

use crate::common::{self, tool_results};

fn command(text: &str, n: u64) -> Work {
    Work::Command { text: text.into(), edited: false, episode: Episode::Command(n) }
}

/// The local date `days` from today, `YYYY-MM-DD` (the planner refuses days gone by).
fn day(days: i64) -> String {
    (chrono::Local::now().date_naive() + chrono::Days::new(days.unsigned_abs()))
        .format("%Y-%m-%d")
        .to_string()
}

#[tokio::test]
async fn a_goal_becomes_a_task_with_a_dated_plan_worked_through_by_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let memory = common::memory(dir.path());
    let server = LlmServer::start();
    let env = common::env(&server, common::settings(), Some(memory.clone()));

    // "Help me learn Rust in two weeks": the task, then its plan, then the answer.
    server.push(Script::ToolCalls(vec![(
        "create_task".into(),
        json!({"title": "Learn Rust", "goal": "write a small CLI", "due": day(14), "priority": 2}),
    )]));
    server.push(Script::ToolCalls(vec![(
        "break_down_task".into(),
        json!({"task_id": 1, "phases": [
            {"title": "Basics", "items": [
                {"day": day(0), "text": "Read chapters 1 to 4"},
                {"day": day(1), "text": "Ownership and borrowing"}]},
            {"title": "Practice", "items": [{"day": day(7), "text": "Write a small CLI"}]}
        ]}),
    )]));
    server.push(Script::Text("Your plan is ready: two phases over two weeks.".into()));
    let reports = common::run(&env, command("help me learn Rust in two weeks", 1)).await;
    let results = tool_results(&reports);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results.iter().all(|(_, ok, _)| *ok), "{results:?}");
    let second = format!("item 2 {}: Ownership and borrowing", day(1));
    assert!(results[1].2.contains(&second), "{results:?}");
    // Offered those its words call for, read by the model as it asked.
    let offered: Vec<String> = server.requests()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(offered, ["create_task", "break_down_task", "reschedule"]);

    // The rows: what the model asked for, no more.
    let store = stt_memory::Store::open(&dir.path().join("memory.sqlite")).unwrap();
    let task = store.task(1).unwrap();
    assert_eq!(
        (task.title.as_str(), task.priority, task.due.clone()),
        ("Learn Rust", 2, Some(day(14)))
    );
    let days: Vec<(&str, &str)> = task
        .phases
        .iter()
        .flat_map(|p| p.items.iter().map(|i| (i.day.as_str(), i.text.as_str())))
        .collect();
    assert_eq!(days.len(), 3);
    assert_eq!(days[2], (day(7).as_str(), "Write a small CLI"));
    drop(store);

    // "What should I do next", then the first item done: the task is under way.
    server.push(Script::ToolCalls(vec![("get_next_actions".into(), json!({}))]));
    server.push(Script::ToolCalls(vec![("mark_plan_done".into(), json!({"item_id": 1}))]));
    server.push(Script::Text("Done: chapters 1 to 4.".into()));
    let reports =
        common::run(&env, command("what should I do next, and I read the chapters", 2)).await;
    let results = tool_results(&reports);
    assert!(
        results[0].2.contains("item 1: Read chapters 1 to 4 (task 1 Learn Rust)"),
        "{results:?}"
    );
    assert_eq!(results[1], ("mark_plan_done".into(), true, "item 1 done".into()));
    let listed = memory.tool(stt_assistant::memory::Tool::ListTasks, json!({})).await.unwrap();
    assert!(
        listed.result.contains("[active] Learn Rust")
            && listed.result.contains("1 of 3 items done"),
        "{listed:?}"
    );
}

/// A small model's `break_down_task` names only the task: the plan is written by a request
/// of its own (today's date and the shape given), a plan that cannot be stored is sent back
/// once with why, and what is stored is what that request wrote.
#[tokio::test]
async fn a_plan_the_model_does_not_write_in_its_call_is_written_by_a_request_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let memory = common::memory(dir.path());
    let server = LlmServer::start();
    let env = common::env(&server, common::settings(), Some(memory.clone()));
    let made = memory
        .tool(stt_assistant::memory::Tool::CreateTask, json!({"title": "Learn Rust"}))
        .await
        .unwrap();
    assert!(made.ok, "{made:?}");

    server.push(Script::ToolCalls(vec![(
        "break_down_task".into(),
        json!({"task_id": 1, "days": 3}),
    )]));
    // The plan's own request: first a day gone by, then a plan that fits.
    let gone = json!({"phases": [{"title": "Basics", "items": [{"day": "2020-01-01", "text": "Chapter 1"}]}]});
    server.push(Script::Text(gone.to_string()));
    let plan = json!({"phases": [
        {"title": "Basics", "items": [{"day": day(0), "text": "Chapter 1"}, {"day": day(1), "text": "Chapter 2"}]},
        {"title": "Practice", "items": [{"day": day(2), "text": "A small program"}]}
    ]});
    server.push(Script::Text(format!("```json\n{plan}\n```")));
    server.push(Script::Text("Planned: three days.".into()));
    let reports = common::run(&env, command("plan my Rust task over three days", 1)).await;
    let results = tool_results(&reports);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].1, "{results:?}");
    assert!(results[0].2.contains("phase 2: Practice"), "{results:?}");

    let requests = server.requests();
    assert_eq!(requests.len(), 4, "the command, the plan twice, the answer");
    let asked = requests[1]["messages"][1]["content"].as_str().unwrap();
    assert!(asked.contains("task 1 [open] Learn Rust"), "{asked}");
    let span = format!("Today is {}. Plan 3 days, starting today.", day(0));
    assert!(asked.contains(&span), "{asked}");
    let again = requests[2]["messages"].as_array().unwrap();
    let again = again.last().unwrap()["content"].as_str().unwrap();
    assert!(again.contains("2020-01-01 has passed"), "{again}");
    let shown =
        memory.tool(stt_assistant::memory::Tool::GetTask, json!({"task_id": 1})).await.unwrap();
    let third = format!("item 3 {}: A small program", day(2));
    assert!(shown.result.contains(&third), "{shown:?}");
}
