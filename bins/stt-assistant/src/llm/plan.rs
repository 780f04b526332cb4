//! `break_down_task` without phases: the plan is written by a request of its own. A command's
//! model only says which task to plan (a call a line long: after its first tool, a command's
//! answer is capped at a few dozen tokens, far too few for a plan), and this request, with
//! the task, today's date and the shape to write, asks for the phases and dated items as one
//! JSON object. The memory thread checks and stores them (`memory::plans`); a plan it refuses,
//! or an answer off the shape, is sent back once with what was wrong.

use serde_json::{Value, json};
use stt_llm::Message;

use super::{JobEnv, Report, complete, json_object, one_answer};
use crate::lane::Sink;
use crate::memory::plans::whole;
use crate::memory::{self, Memory};

/// The system prompt.
const SYSTEM: &str = "You plan tasks day by day. Answer with one JSON object and nothing \
    else, exactly of this shape:\n\
    {\"phases\": [{\"title\": \"...\", \"items\": [{\"day\": \"YYYY-MM-DD\", \"text\": \"...\"}]}]}\n\
    Two to four phases in order, each with one item for each day it takes: a concrete thing \
    to do that day, in a few words. Days start today and run in order.";

/// Longest plan asked for, in tokens: a few weeks of one-line items.
const MAX_TOKENS: u32 = 900;

/// Longest plan, in days.
const MAX_DAYS: i64 = 60;

/// The plan's span as the request says it.
fn span(days: Option<i64>) -> String {
    match days {
        Some(days) => format!("Plan {days} days, starting today."),
        None => "Plan from today until its due date, or for two weeks when it has none.".into(),
    }
}

/// Writes and stores task `args.task_id`'s plan; returns whether it was stored and what the
/// command's model is told.
pub async fn break_down(
    env: &JobEnv,
    memory: &Memory,
    args: &Value,
    out: &Sink<Report>,
) -> (bool, String) {
    let title = args.get("title").and_then(Value::as_str).map(str::trim).unwrap_or("");
    let given = args.get("task_id").and_then(whole);
    // An id the store lacks (a small model guesses "1" before making the task) with a title
    // is taken as the title.
    let known = match given {
        Some(id) => matches!(
            memory.tool(memory::Tool::GetTask, json!({"task_id": id})).await,
            Ok(memory::Called { ok: true, .. })
        ),
        None => false,
    };
    let task_id = match given {
        Some(id) if known || title.is_empty() => id,
        _ if !title.is_empty() => {
            // A small model plans before it makes the task: the title makes it.
            match memory.tool(memory::Tool::CreateTask, json!({"title": title})).await {
                Ok(memory::Called { ok: true, result, .. }) => {
                    match result.strip_prefix("task ").and_then(|r| r.split(' ').next()) {
                        Some(id) => id.parse().unwrap_or_default(),
                        None => return (false, result),
                    }
                }
                Ok(memory::Called { result, .. }) => return (false, result),
                Err(refusal) => return (false, refusal.into_why()),
            }
        }
        _ => return (false, "give the 'task_id' to plan, or a 'title' to make one".into()),
    };
    let days = args.get("days").and_then(whole).filter(|d| *d > 0).map(|d| d.min(MAX_DAYS));
    let task = match memory.tool(memory::Tool::GetTask, json!({"task_id": task_id})).await {
        Ok(memory::Called { ok: true, result, .. }) => result,
        Ok(memory::Called { result, .. }) => return (false, result),
        Err(refusal) => return (false, refusal.into_why()),
    };
    let Some(client) = env.client.as_ref() else { return (false, env.missing.clone()) };
    let today = chrono::Local::now().format("%Y-%m-%d").to_string();
    let mut messages = vec![
        Message::system(SYSTEM),
        Message::user(format!("{task}\n\nToday is {today}. {}", span(days))),
    ];
    let mut why = String::new();
    for _ in 0..2 {
        let request = one_answer(&messages, MAX_TOKENS);
        let reply = match complete(env, client, &request, out, |_| {}).await {
            Ok(reply) => reply,
            Err(e) => return (false, env.explain(&e)),
        };
        why = match phases_in(&reply.content) {
            Err(why) => why,
            Ok(phases) => {
                let stored = memory
                    .tool(
                        memory::Tool::BreakDownTask,
                        json!({"task_id": task_id, "phases": phases}),
                    )
                    .await;
                match stored {
                    Ok(memory::Called { ok: true, result, .. }) => return (true, result),
                    Ok(memory::Called { result, .. }) => result,
                    Err(refusal) => return (false, refusal.into_why()),
                }
            }
        };
        tracing::info!("planner: the plan was not taken ({why}); asking again");
        messages.push(Message::assistant(&reply.content));
        messages.push(Message::user(format!(
            "That cannot be stored: {why}. Answer again with only the JSON object."
        )));
    }
    (false, format!("the plan could not be written: {why}"))
}

/// The `phases` array of a reply holding one JSON object (a code fence around it allowed), or
/// what is wrong with it, in words the model is told.
fn phases_in(reply: &str) -> Result<Value, String> {
    let object: Value = serde_json::from_str(json_object(reply)?).map_err(|e| e.to_string())?;
    match object.get("phases") {
        Some(phases @ Value::Array(_)) => Ok(phases.clone()),
        _ => Err("it has no \"phases\" list".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_phases_are_read_from_a_reply_or_what_is_wrong_is_said() {
        let reply = "```json\n{\"phases\": [{\"title\": \"Basics\", \"items\": []}]}\n```";
        assert_eq!(phases_in(reply).unwrap()[0]["title"], "Basics");
        assert!(phases_in("Here is your plan!").unwrap_err().contains("no JSON object"));
        assert!(phases_in("{\"plan\": []}").unwrap_err().contains("no \"phases\""));
        assert!(phases_in("{\"phases\": [}").is_err());
        assert_eq!(span(Some(14)), "Plan 14 days, starting today.");
    }
}
