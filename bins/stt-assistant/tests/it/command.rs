//! The command path against the scripted model: what a command sends (the same prefix every
//! time, in its own llama-server slot), its answer capped once its tools have run, calls the
//! model did not write whole never run, and the warm-up request that fills the cache.

use serde_json::{Value, json};
use stt_assistant::llm::{self, Report, SLOT_COMMAND, SLOT_OTHER, Settings, Work};
use stt_assistant::memory::Episode;
use stt_assistant::turn::ChatTurn;
use stt_llm::{Endpoint, Provider};
use stt_proto::{AssistantEvent, ErrorCode};
use stt_testkit::llm_server::{LlmServer, Script};

use crate::common;

fn command(text: &str, id: u64) -> Work {
    Work::Command { text: text.into(), edited: false, episode: Episode::Command(id) }
}

/// The calls the job ran, as (tool, ok).
fn results(reports: &[Report]) -> Vec<(String, bool)> {
    reports
        .iter()
        .filter_map(|r| match r {
            Report::Publish(AssistantEvent::ToolResult(t)) => Some((t.tool.clone(), t.ok)),
            _ => None,
        })
        .collect()
}

/// The job's final answer line.
fn answer(reports: &[Report]) -> Option<String> {
    reports.iter().rev().find_map(|r| match r {
        Report::Reply { text, partial: false, .. } => Some(text.clone()),
        _ => None,
    })
}

fn errors(reports: &[Report]) -> Vec<ErrorCode> {
    reports
        .iter()
        .filter_map(|r| match r {
            Report::Publish(AssistantEvent::Error(e)) => Some(e.code),
            _ => None,
        })
        .collect()
}

/// The system message and the tool list: what comes before the command's own words.
fn prefix(request: &Value) -> (Value, Value) {
    (request["messages"][0].clone(), request["tools"].clone())
}

/// The names of the tools a request offers, in order.
fn offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["function"]["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A lane whose provider is a llama-server (requests name their slot).
fn llama_lane(server: &LlmServer, settings: Settings) -> llm::JobEnv {
    let client = Provider::new(Endpoint {
        url: server.url(),
        model: String::new(),
        api_key: None,
        connect_timeout: std::time::Duration::from_secs(2),
        idle_timeout: std::time::Duration::from_secs(5),
        slots: true,
    })
    .expect("a provider for the scripted server");
    llm::JobEnv { client: Some(client), ..common::env(server, settings, None) }
}

#[tokio::test]
async fn every_command_starts_with_the_same_prefix_and_is_offered_the_tools_its_words_call_for() {
    let server = LlmServer::start();
    let lights = stt_config::ToolCommand {
        name: "lights".into(),
        description: "Turn the lights on or off.".into(),
        argv: vec!["true".into(), "{state}".into()],
        side_effect: stt_proto::SideEffect::Local,
        requires_confirmation: false,
        parameters: [("state".to_owned(), "on or off".to_owned())].into(),
        sentences: Vec::new(),
    };
    let tools = stt_tools::Registry::new(&[lights]).expect("the tools");
    let env = llm::JobEnv {
        tools: std::sync::Arc::new(tools),
        ..llama_lane(&server, common::settings())
    };
    server.push(Script::ContentCall(r#"{"name": "get_datetime", "arguments": {}}"#.into()));
    server.push(Script::Text("It is noon.".into()));
    common::run(&env, command("what time is it on the moon", 1)).await;
    server.push(Script::Text("Paris.".into()));
    common::run(&env, command("what is the capital of France", 2)).await;
    server.push(Script::Text("I cannot do that.".into()));
    common::run(&env, command("set a timer and copy it to the clipboard", 3)).await;

    // The time asked in words a template takes is told from that template, once the
    // clock is read: one request, and no time the model could get wrong.
    server.push(Script::ContentCall(r#"{"name": "get_datetime", "arguments": {}}"#.into()));
    let reports = common::run(&env, command("what time is it", 4)).await;
    let told = answer(&reports).unwrap_or_default();
    assert!(told.starts_with("It's ") && told.contains(':'), "{told}");

    let requests = server.requests();
    assert_eq!(requests.len(), 5, "{requests:?}");
    for request in &requests {
        assert_eq!(request["messages"][0], requests[0]["messages"][0]);
        assert_eq!(request["id_slot"], json!(SLOT_COMMAND), "{request}");
    }
    let with_tools = format!("You run commands. {}", llm::command::WITH_TOOLS);
    assert_eq!(requests[0]["messages"][0]["content"], with_tools.as_str());
    // The user's own tool always, first; the built-in ones its words name, in one order.
    assert_eq!(offered(&requests[0]), ["lights", "get_datetime"]);
    assert_eq!(offered(&requests[1]), ["lights", "get_datetime"], "the same request again");
    assert_eq!(offered(&requests[2]), ["lights"]);
    assert_eq!(offered(&requests[3]), ["lights", "set_timer", "clipboard_copy"]);

    // The warm-up request reads the prefix all of them share, and asks for one token.
    server.push(Script::Text("OK".into()));
    let client = env.client.clone().expect("a client");
    llm::command::warm(&env, &client).await.expect("the warm-up answers");
    let warm = server.requests().pop().expect("the warm-up request");
    assert_eq!(prefix(&warm), prefix(&requests[2]));
    assert_eq!((warm["max_tokens"].clone(), warm["id_slot"].clone()), (json!(1), json!(0)));

    // Chat goes to the other slot, and never to a server that has none.
    server.push(Script::Text("Hello.".into()));
    let chat = Work::Chat {
        turn: ChatTurn::typed("hi"),
        conversation: llm::Chat::default(),
        resume: None,
        episode: Episode::Chat(3),
    };
    common::run(&env, chat.clone()).await;
    assert_eq!(server.requests().pop().expect("the chat request")["id_slot"], json!(SLOT_OTHER));
    server.push(Script::Text("Hello.".into()));
    common::run(&common::env(&server, common::settings(), None), chat).await;
    let plain = server.requests().pop().expect("the chat request");
    assert!(plain.get("id_slot").is_none(), "{plain}");
}

#[tokio::test]
async fn the_answer_after_a_tool_is_capped_and_ends_at_a_whole_sentence() {
    let server = LlmServer::start();
    let settings =
        Settings { max_tokens: 400, command_answer_max_tokens: 24, ..common::settings() };
    let env = common::env(&server, settings, None);
    server.push(Script::ContentCall(r#"{"name": "get_datetime", "arguments": {}}"#.into()));
    server.push(Script::Length("It is noon on Thursday. You also asked me once about".into()));
    let reports = common::run(&env, command("what time is it on the moon", 1)).await;

    assert_eq!(results(&reports), [("get_datetime".to_owned(), true)]);
    assert_eq!(answer(&reports).as_deref(), Some("It is noon on Thursday."));
    // Cut at the answer's own cap: no error for it.
    assert_eq!(errors(&reports), []);
    let requests = server.requests();
    assert_eq!(requests[0]["max_tokens"], 400, "before a tool: [assistant].max_tokens");
    assert_eq!(requests[1]["max_tokens"], 24, "after: command_answer_max_tokens");

    // With no sentence ended, it is kept and marked as cut.
    server.push(Script::ContentCall(r#"{"name": "get_datetime", "arguments": {}}"#.into()));
    server.push(Script::Length("It is noon and".into()));
    let reports = common::run(&env, command("what time is it on the moon", 2)).await;
    assert_eq!(answer(&reports).as_deref(), Some("It is noon and…"));

    // Results echoed back in the template's markup are no answer: the outcome is asked for.
    server.push(Script::ContentCall(r#"{"name": "get_datetime", "arguments": {}}"#.into()));
    server.push(Script::Text(
        "<tool_response>\nThursday 3 December 2026, 12:00\n</tool_response>".into(),
    ));
    server.push(Script::Text("It is noon.".into()));
    let reports = common::run(&env, command("what time is it on the moon", 4)).await;
    assert_eq!(answer(&reports).as_deref(), Some("It is noon."));
    let asked = server.requests().last().unwrap().to_string();
    assert!(asked.contains("tell the user the outcome"), "{asked}");

    // A reply cut at max_tokens before any tool ran is still reported as cut off.
    server.push(Script::Length("Well, let me think about that for a long while".into()));
    let reports = common::run(&env, command("tell me a story", 3)).await;
    assert_eq!(errors(&reports), [ErrorCode::Truncated]);
}

#[tokio::test]
async fn a_call_not_written_whole_is_not_run_and_the_model_is_told_why() {
    let server = LlmServer::start();
    let env = common::env(&server, common::settings(), None);
    // Cut off inside the label (the model hit its limit), then a call the tool takes.
    server.push(Script::ContentCall(
        r#"<tool_call>{"name": "set_timer", "arguments": {"minutes": 5, "label": "te"#.into(),
    ));
    server.push(Script::ContentCall(
        r#"{"name": "set_timer", "arguments": {"minutes": 5, "label": "tea"}}"#.into(),
    ));
    let reports = common::run(&env, command("set a tea timer for five minutes", 1)).await;

    // Only the whole call ran.
    assert_eq!(results(&reports), [("set_timer".to_owned(), true)]);
    let timers: Vec<_> = reports
        .iter()
        .filter_map(|r| match r {
            Report::Timer { label, .. } => Some(label.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(timers, ["tea"]);
    // The timer set, its answer is the template's: no third request.
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let told = |n: usize| {
        let messages = requests[n]["messages"].as_array().expect("messages");
        messages.last().expect("a message")["content"].as_str().unwrap_or_default().to_owned()
    };
    let first = told(1);
    assert!(first.contains("set_timer was not run") && first.contains("cut off"), "{first}");
    assert_eq!(answer(&reports).as_deref(), Some("Timer set for 5 minutes: tea."));
    assert_eq!(errors(&reports), []);

    // Told once; a second call it cannot run ends the command with the reason. The schema
    // echoed as arguments is no argument: set_timer still needs its minutes.
    let echo = r#"{"name": "set_timer", "arguments": {"type": "object", "properties": {}}}"#;
    server.push(Script::ContentCall(echo.into()));
    server.push(Script::ContentCall(echo.into()));
    let reports = common::run(&env, command("set a timer", 2)).await;
    assert_eq!(results(&reports), []);
    assert_eq!(errors(&reports), [ErrorCode::ToolError]);
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn a_command_with_memory_keeps_the_system_prompt_and_adds_its_context_to_the_turn() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let memory = common::memory(dir.path());
    let server = LlmServer::start();
    let env = common::env(&server, common::settings(), Some(memory));
    server.push(Script::Text("Noon.".into()));
    common::run(&env, command("what time is it", 1)).await;
    server.push(Script::Text("Nothing about that.".into()));
    common::run(&env, command("do you remember what I said about the dentist", 2)).await;
    let requests = server.requests();
    assert_eq!(requests[0]["messages"][0], requests[1]["messages"][0]);
    let with_tools = format!("You run commands. {}", llm::command::WITH_TOOLS);
    assert_eq!(requests[1]["messages"][0]["content"], with_tools.as_str());
    let turn = requests[1]["messages"][1]["content"].as_str().unwrap_or_default();
    assert!(turn.contains("recall_memories") && turn.ends_with("about the dentist"), "{turn}");
}

#[tokio::test]
async fn a_command_answered_in_words_is_streamed_and_a_call_written_as_text_is_not() {
    let server = LlmServer::start();
    let env = common::env(&server, common::settings(), None);
    let pieces = |reports: &[Report]| -> String {
        reports
            .iter()
            .filter_map(|r| match r {
                Report::Reply { text, partial: true, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    };
    server.push(Script::Text("The capital of France is Paris.".into()));
    let reports = common::run(&env, command("what is the capital of France", 1)).await;
    assert_eq!(pieces(&reports), "The capital of France is Paris.");
    assert_eq!(answer(&reports).as_deref(), Some("The capital of France is Paris."));
    // Offered no tool, and told so after the configured prompt.
    let asked = server.requests().pop().expect("the request");
    let without = format!("You run commands. {}", llm::command::WITHOUT_TOOLS);
    assert_eq!(asked["messages"][0]["content"], without.as_str());
    assert!(asked.get("tools").is_none_or(|t| t.as_array().is_none_or(Vec::is_empty)), "{asked}");

    // A call the model writes as text is never shown as it streams; its answer is.
    server.push(Script::ContentCall(r#"{"name": "get_datetime", "arguments": {}}"#.into()));
    server.push(Script::Text("It is noon.".into()));
    let reports = common::run(&env, command("what time is it on the moon", 2)).await;
    assert_eq!(pieces(&reports), "");
    assert_eq!(answer(&reports).as_deref(), Some("It is noon."));
}

#[tokio::test]
async fn a_failed_call_leaves_the_models_i_cannot_as_the_answer() {
    let server = LlmServer::start();
    let broken = stt_config::ToolCommand {
        name: "lights".into(),
        description: "Turn the lights on or off.".into(),
        argv: vec!["false".into()],
        side_effect: stt_proto::SideEffect::Local,
        requires_confirmation: false,
        parameters: Default::default(),
        sentences: Vec::new(),
    };
    let tools = stt_tools::Registry::new(&[broken]).expect("the tools");
    let env = llm::JobEnv {
        tools: std::sync::Arc::new(tools),
        ..common::env(&server, common::settings(), None)
    };
    server.push(Script::ContentCall(r#"{"name": "lights", "arguments": {}}"#.into()));
    server.push(Script::Text("I cannot do it.".into()));
    let reports = common::run(&env, command("turn on the lights", 1)).await;
    assert_eq!(results(&reports), [("lights".to_owned(), false)]);
    assert_eq!(answer(&reports).as_deref(), Some("I cannot do it."));
}

#[tokio::test]
async fn a_call_described_instead_of_made_is_asked_for_once_and_an_invented_tool_is_refused() {
    let server = LlmServer::start();
    let env = common::env(&server, common::settings(), None);
    // "To set a timer, call `set_timer`…": asked once to make the call, which then runs.
    server.push(Script::Text(
        "To set a timer, you can call the `set_timer` function with minutes 10.".into(),
    ));
    server.push(Script::ToolCalls(vec![("set_timer".into(), json!({"minutes": 10}))]));
    let reports = common::run(&env, command("set a timer for ten minutes", 1)).await;
    assert_eq!(results(&reports), [("set_timer".to_owned(), true)]);
    let said = answer(&reports).unwrap_or_default();
    assert!(said.contains("10 minutes"), "{said}");
    let asked = server.requests().pop().expect("the second request");
    let messages = asked["messages"].as_array().unwrap();
    assert_eq!(messages.last().unwrap()["content"], llm::command::DO_IT);
    // Asked once: described again, the words are the answer.
    for text in ["Call `set_timer` to set it.", "You can use set timer for that."] {
        server.push(Script::Text(text.into()));
    }
    let reports = common::run(&env, command("set a timer for ten minutes", 2)).await;
    assert!(results(&reports).is_empty());
    assert_eq!(answer(&reports).as_deref(), Some("You can use set timer for that."));

    // An empty call where one tool that needs nothing is offered: that tool runs.
    server.push(Script::Text("<tools></tools>".into()));
    server.push(Script::Text("It is noon.".into()));
    let reports = common::run(&env, command("what time is it on the moon", 3)).await;
    assert_eq!(results(&reports), [("get_datetime".to_owned(), true)]);
    assert_eq!(answer(&reports).as_deref(), Some("It is noon."));
    // Where two are offered it is asked for once; still empty, the markup is never shown.
    for _ in 0..2 {
        server.push(Script::Text("<tools></tools>".into()));
    }
    let reports = common::run(&env, command("set a timer and copy it to the clipboard", 4)).await;
    assert!(results(&reports).is_empty());
    let said = answer(&reports).unwrap_or_default();
    assert!(said.starts_with("I could not tell which of my tools"), "{said}");
    // Asked again in other words (not in the command slot), its empty reply left out.
    let again = server.requests().pop().expect("the second request");
    let system = again["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(system.ends_with(llm::command::WRITTEN_WHOLE), "{system}");
    assert_ne!(again["id_slot"], json!(SLOT_COMMAND));
    assert_eq!(again["messages"].as_array().map(Vec::len), Some(2), "{again}");

    // Told why its call was not run, it says that back: an error, not an answer.
    server.push(Script::ContentCall(r#"{"name": "set_timer", "arguments": {"minutes": "#.into()));
    server.push(Script::Text(
        "The call was cut off before it ended. Call the tool again with arguments it takes, or \
         answer in words."
            .into(),
    ));
    let reports = common::run(&env, command("set a timer for ten minutes", 6)).await;
    assert!(results(&reports).is_empty());
    assert_eq!(answer(&reports), None);
    assert_eq!(errors(&reports), [ErrorCode::ToolError]);

    // A call of a tool that does not exist runs nothing and is not shown as JSON.
    let before = server.requests().len();
    server.push(Script::ContentCall(
        r#"{"name": "book_table", "arguments": {"people": 2, "time": "tonight"}}"#.into(),
    ));
    let reports = common::run(&env, command("book a table for two tonight", 5)).await;
    assert!(results(&reports).is_empty());
    let said = answer(&reports).unwrap_or_default();
    assert!(said.starts_with("I can't do that") && !said.contains('{'), "{said}");
    assert_eq!(server.requests().len(), before + 1, "the model is not asked again");
}
