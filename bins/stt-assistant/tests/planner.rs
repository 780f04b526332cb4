//! The planner's tools through the command path against the scripted model and a real store:
//! the model's calls (as it writes them) make a task, break it into dated items, list what to
//! do next and check items off, and the rows in memory's database are what it asked for.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use serde_json::json;
use stt_assistant::llm::{Report, Work};
use stt_assistant::memory::Episode;
use stt_proto::AssistantEvent;
use stt_testkit::llm_server::{LlmServer, Script};

fn command(text: &str, n: u64) -> Work {
    Work::Command { text: text.into(), edited: false, episode: Episode::Command(n) }
}

fn tool_results(reports: &[Report]) -> Vec<(String, bool, String)> {
    reports
        .iter()
        .filter_map(|r| match r {
            Report::Publish(AssistantEvent::ToolResult(t)) => {
                Some((t.tool.clone(), t.ok, t.result.clone()))
            }
            _ => None,
        })
        .collect()
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
        json!({"title": "Learn Rust", "goal": "write a small CLI", "due": "2026-12-20", "priority": 2}),
    )]));
    server.push(Script::ToolCalls(vec![(
        "break_down_task".into(),
        json!({"task_id": 1, "phases": [
            {"title": "Basics", "items": [
                {"day": "2026-12-07", "text": "Read chapters 1 to 4"},
                {"day": "2026-12-08", "text": "Ownership and borrowing"}]},
            {"title": "Practice", "items": [{"day": "2026-12-14", "text": "Write a small CLI"}]}
        ]}),
    )]));
    server.push(Script::Text("Your plan is ready: two phases over two weeks.".into()));
    let reports = common::run(&env, command("help me learn Rust in two weeks", 1)).await;
    let results = tool_results(&reports);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results.iter().all(|(_, ok, _)| *ok), "{results:?}");
    assert!(results[1].2.contains("item 2 2026-12-08: Ownership and borrowing"), "{results:?}");
    // Offered with the command's tools, read by the model as it asked.
    let offered: Vec<String> = server.requests()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    for name in ["create_task", "break_down_task", "get_next_actions", "mark_plan_done"] {
        assert!(offered.iter().any(|o| o == name), "{name} not offered: {offered:?}");
    }

    // The rows: what the model asked for, no more.
    let store = stt_memory::Store::open(&dir.path().join("memory.sqlite")).unwrap();
    let task = store.task(1).unwrap();
    assert_eq!(
        (task.title.as_str(), task.priority, task.due.as_deref()),
        ("Learn Rust", 2, Some("2026-12-20"))
    );
    let days: Vec<(&str, &str)> = task
        .phases
        .iter()
        .flat_map(|p| p.items.iter().map(|i| (i.day.as_str(), i.text.as_str())))
        .collect();
    assert_eq!(days.len(), 3);
    assert_eq!(days[2], ("2026-12-14", "Write a small CLI"));
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
    let listed = memory.tool("list_tasks".into(), json!({})).await.unwrap();
    assert!(
        listed.result.contains("[active] Learn Rust")
            && listed.result.contains("1 of 3 items done"),
        "{listed:?}"
    );
}
