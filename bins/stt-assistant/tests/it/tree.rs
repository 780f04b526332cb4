//! The memory tree in the LLM lane against the scripted model and a real store: a summary is
//! written with what came after its stretch in view, a chat turn is sent the summaries and the
//! buffer, and a failed summary still takes its stretch out of the context.

use serde_json::Value;
use stt_assistant::lane::Sink;
use stt_assistant::llm::{Chat, JobEnv, Report, Settings, Work};
use stt_assistant::memory::{self, Episode, Memory, Refusal};
use stt_assistant::turn::ChatTurn;
use stt_memory::Role;
use stt_memory::tree::TreeRules;
use stt_testkit::llm_server::{LlmServer, Script};

use crate::common::{self, run};

fn env(server: &LlmServer, memory: Memory) -> JobEnv {
    let settings = Settings { compaction_max_tokens: 120, ..common::settings() };
    common::env(server, settings, Some(memory))
}

/// A store whose tree compresses 4 of 6 buffered messages and merges 2 of 4 nodes.
fn open(dir: &std::path::Path) -> Memory {
    let settings = memory::Settings {
        tree: Some(TreeRules { raw_max: 6, compress: 4, fanout_max: 4 }),
        ..memory::Settings::new(dir.join("memory.sqlite"))
    };
    memory::spawn(settings, Sink::new(|_| {})).unwrap().0
}

fn notes(reports: &[Report]) -> Vec<String> {
    reports
        .iter()
        .filter_map(|r| if let Report::Note(n) = r { Some(n.clone()) } else { None })
        .collect()
}

fn more(reports: &[Report]) -> Option<bool> {
    reports.iter().find_map(|r| if let Report::TreeMore(m) = r { Some(*m) } else { None })
}

fn contents(request: &Value) -> Vec<(String, String)> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (m["role"].as_str().unwrap().to_owned(), m["content"].as_str().unwrap().to_owned())
        })
        .collect()
}

/// Six messages of a chat where a decision is reversed after the first four.
fn reversed_decision(memory: &Memory) {
    let said = [
        (Role::User, "Let's book the train to Porto for Friday."),
        (Role::Assistant, "Booked: the train to Porto on Friday."),
        (Role::User, "Also pack the blue suitcase."),
        (Role::Assistant, "Noted: the blue suitcase."),
        (Role::User, "Actually, cancel the train: we drive to Porto instead."),
        (Role::Assistant, "The train is cancelled; you drive."),
    ];
    for (role, text) in said {
        let speaker = (role == Role::User).then_some("Typed");
        memory.turn(Episode::Chat(1), role, speaker, "chat", text);
    }
}

const SUMMARY: &str = "SUMMARY: The user meant to take the train to Porto on Friday but \
    cancelled it and drives instead; the blue suitcase is packed.\nPROFILE: none\n\
    PREFERENCES: Likes to travel light.\nGOALS: Get to Porto on Friday.";

#[tokio::test]
async fn a_summary_sees_what_came_after_its_stretch_and_records_how_it_ended() {
    let dir = tempfile::tempdir().unwrap();
    let memory = open(dir.path());
    reversed_decision(&memory);
    let server = LlmServer::start();
    server.push(Script::Text(SUMMARY.into()));
    let env = env(&server, memory.clone());
    let reports = run(&env, Work::Tree).await;
    assert_eq!(more(&reports), Some(true));
    assert_eq!(notes(&reports), ["context compacted: messages 1–4 summarized in the memory tree"]);

    // The model saw the reversal (after the stretch's place), then the stretch to summarize.
    let request = contents(&server.requests()[0]);
    let (last_role, last) = request.last().unwrap();
    assert_eq!(last_role, "user");
    assert!(last.contains("write how it ended") && last.contains("book the train"), "{last}");
    let reversal = request.iter().position(|(_, t)| t.contains("cancel the train")).unwrap();
    assert!(reversal < request.len() - 1, "{request:?}");
    // The stretch itself is not also in the context above it.
    assert!(request[..request.len() - 1].iter().all(|(_, t)| !t.contains("book the train")));

    let nodes = memory.tree_show(None).await.unwrap().nodes;
    assert_eq!(nodes.len(), 1);
    assert!(nodes[0].summary.contains("drives instead"), "{:?}", nodes[0]);
    assert_eq!(nodes[0].fields.goals, "Get to Porto on Friday.");
    assert_eq!(nodes[0].fields.profile, "", "none is no profile");

    // Nothing more is due: the next job asks the model nothing.
    let reports = run(&env, Work::Tree).await;
    assert_eq!(more(&reports), Some(false));
    assert_eq!(server.requests().len(), 1);

    // A chat turn is sent the summary, then the buffer, then the turn; what the tree learnt
    // of the user is in the system prompt.
    memory.turn(Episode::Chat(1), Role::User, Some("Typed"), "chat", "Which way do we go?");
    server.push(Script::Text("By car.".into()));
    let work = Work::Chat {
        turn: ChatTurn::typed("Which way do we go?"),
        conversation: Chat::default(),
        resume: None,
        episode: Episode::Chat(1),
    };
    run(&env, work).await;
    let request = contents(&server.requests()[1]);
    let roles: Vec<&str> = request.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(roles, ["system", "system", "user", "assistant", "user"], "{request:?}");
    assert!(request[0].1.contains("Goals: Get to Porto on Friday."), "{}", request[0].1);
    assert!(request[1].1.contains("drives instead"), "{}", request[1].1);
    assert_eq!(request[2].1, "Typed: Actually, cancel the train: we drive to Porto instead.");
    assert!(request[4].1.ends_with("Typed: Which way do we go?"), "{}", request[4].1);
    assert!(request.iter().all(|(_, t)| !t.contains("Booked: the train")), "{request:?}");
}

#[tokio::test]
async fn a_failed_summary_still_takes_its_stretch_out_of_the_context_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let memory = open(dir.path());
    reversed_decision(&memory);
    let server = LlmServer::start();
    server.push(Script::Length("SUMMARY: The user booked".into()));
    let env = env(&server, memory.clone());
    let reports = run(&env, Work::Tree).await;
    assert_eq!(more(&reports), Some(true));
    let notes = notes(&reports);
    assert_eq!(notes.len(), 1);
    assert!(notes[0].starts_with("context trimmed: messages 1–4 left the context"), "{notes:?}");
    assert!(notes[0].contains("cut off by [assistant].compaction_max_tokens"), "{notes:?}");
    let context = memory.tree_context().await.unwrap();
    assert_eq!(context.nodes.len(), 1);
    assert!(context.nodes[0].summary.starts_with("(not summarized) Let's book the train"));
    assert_eq!(context.buffer.len(), 2);
    // The messages stay in the tree, word for word.
    let node = context.nodes[0].id;
    let text = memory.tree_show(Some(node)).await.unwrap().text;
    assert!(text.contains("[2] Assistant: Booked: the train to Porto on Friday."), "{text}");
}

#[tokio::test]
async fn a_summary_that_loops_until_its_cap_keeps_what_it_said_before_the_loop() {
    let dir = tempfile::tempdir().unwrap();
    let memory = open(dir.path());
    reversed_decision(&memory);
    let server = LlmServer::start();
    server.push(Script::Length(
        "SUMMARY: The user drives to Porto on Friday. The train was cancelled. The user drives \
         to Porto on Friday. The train was cancelled. The user"
            .into(),
    ));
    let env = env(&server, memory.clone());
    let reports = run(&env, Work::Tree).await;
    assert_eq!(more(&reports), Some(true));
    let notes = notes(&reports);
    assert!(notes[0].starts_with("context compacted: messages 1–4 summarized"), "{notes:?}");
    let context = memory.tree_context().await.unwrap();
    assert_eq!(
        context.nodes[0].summary,
        "The user drives to Porto on Friday. The train was cancelled."
    );
}

#[tokio::test]
async fn a_new_conversation_closes_the_buffer_and_a_merge_reads_its_summaries() {
    let dir = tempfile::tempdir().unwrap();
    let memory = open(dir.path());
    let server = LlmServer::start();
    let env = env(&server, memory.clone());
    // Four short conversations, each closed by a new one: four nodes, then one merge.
    for n in 1..=4 {
        memory.turn(Episode::Chat(n), Role::User, None, "chat", &format!("topic {n}"));
        memory.turn(Episode::Chat(n), Role::Assistant, None, "chat", "ok");
        memory.tree_close();
        server.push(Script::Text(format!("SUMMARY: We spoke of topic {n}.")));
        let reports = run(&env, Work::Tree).await;
        assert_eq!(more(&reports), Some(true));
    }
    server.push(Script::Text("SUMMARY: Topics 1 and 2.".into()));
    run(&env, Work::Tree).await;
    let merge = contents(&server.requests()[4]);
    let last = &merge.last().unwrap().1;
    assert!(last.contains("- We spoke of topic 1.\n- We spoke of topic 2."), "{last}");
    // The merged nodes are not in the context the merge was given; the others are.
    let above = &merge[1].1;
    assert!(above.contains("topic 3") && !above.contains("topic 1."), "{above}");

    let memory::TreeShown { text, nodes } = memory.tree_show(None).await.unwrap();
    let levels: Vec<u32> = nodes.iter().map(|n| n.level).collect();
    assert_eq!(levels, [1, 0, 0], "{text}");
    assert!(text.contains("8 messages, 0 of them in the buffer; nodes per level: 4, 1"), "{text}");
    let text = memory.tree_show(Some(nodes[0].id)).await.unwrap().text;
    assert!(text.contains("Children:\n- node 1 (level 0, messages 1–2"), "{text}");
    let Err(Refusal::Missing(why)) = memory.tree_show(Some(stt_memory::tree::NodeId(99))).await
    else {
        panic!()
    };
    assert!(why.contains("`stt-ctl memory tree`"), "{why}");
}

#[tokio::test]
async fn a_command_explores_the_tree_from_the_top_down_to_the_messages() {
    let dir = tempfile::tempdir().unwrap();
    let memory = open(dir.path());
    reversed_decision(&memory);
    let server = LlmServer::start();
    server.push(Script::Text(SUMMARY.into()));
    let env = env(&server, memory.clone());
    run(&env, Work::Tree).await;

    let explore = |args: serde_json::Value| {
        Script::ToolCalls(vec![(memory::Tool::ExploreTree.name().into(), args)])
    };
    server.push(explore(serde_json::json!({})));
    server.push(explore(serde_json::json!({"node_id": 1})));
    server.push(explore(serde_json::json!({"node_id": 7})));
    server.push(Script::Text("You drive.".into()));
    let work = Work::Command {
        text: "what did we say earlier about the train".into(),
        edited: false,
        episode: Episode::Command(1),
    };
    let reports = run(&env, work).await;
    let offered = server.requests()[1]["tools"].to_string();
    assert!(offered.contains(memory::Tool::ExploreTree.name()), "{offered}");
    let results: Vec<(bool, String)> = reports
        .iter()
        .filter_map(|r| match r {
            Report::Publish(stt_proto::AssistantEvent::ToolResult(t)) => {
                Some((t.ok, t.result.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(results[0].1.starts_with("The memory tree: 6 messages, 2 of them in the buffer"));
    assert!(results[0].1.contains("- node 1 (level 0, messages 1–4"), "{:?}", results[0]);
    assert!(
        results[1].1.contains("[5] User: Actually") || results[1].1.contains("[1] User: Let's")
    );
    assert!(results[1].1.contains("Goals: Get to Porto on Friday."), "{:?}", results[1]);
    assert!(!results[2].0 && results[2].1.contains("no node 7"), "{:?}", results[2]);
}

/// A number the summary dropped still answers a question about it: the turn is sent the
/// message that said it, word for word, once it has left the context.
#[tokio::test]
async fn a_turn_brings_back_what_left_the_context_word_for_word() {
    let dir = tempfile::tempdir().unwrap();
    let memory = open(dir.path());
    let said = [
        (Role::User, "Pack the blue suitcase; its lock code is 318."),
        (Role::Assistant, "Noted: the blue suitcase."),
        (Role::User, "And book a table for Friday."),
        (Role::Assistant, "Booked for Friday."),
        (Role::User, "Thanks."),
        (Role::Assistant, "You're welcome."),
    ];
    for (role, text) in said {
        let speaker = (role == Role::User).then_some("Typed");
        memory.turn(Episode::Chat(1), role, speaker, "chat", text);
    }
    let server = LlmServer::start();
    server.push(Script::Text("SUMMARY: A suitcase was packed and a table booked.".into()));
    let env = env(&server, memory.clone());
    assert_eq!(more(&run(&env, Work::Tree).await), Some(true));

    let chat = |text: &str| Work::Chat {
        turn: ChatTurn::typed(text),
        conversation: Chat::default(),
        resume: None,
        episode: Episode::Chat(1),
    };
    server.push(Script::Text("318.".into()));
    let reports = run(&env, chat("What was the lock code of the suitcase?")).await;
    let request = contents(&server.requests()[1]);
    let (_, turn) = request.last().unwrap();
    assert!(
        turn.contains("(Memory: Earlier (")
            && turn.contains("the user said: \"Pack the blue suitcase; its lock code is 318.\"")
            && turn.ends_with("Typed: What was the lock code of the suitcase?"),
        "{turn}"
    );
    let hinted: Vec<&String> = reports
        .iter()
        .filter_map(|r| if let Report::Hinted(notes) = r { Some(notes) } else { None })
        .flatten()
        .collect();
    assert!(hinted.iter().any(|n| n.contains("brought back") && n.contains("318")), "{hinted:?}");

    // A turn that shares no two words with it is sent nothing of it.
    server.push(Script::Text("Sunny.".into()));
    run(&env, chat("How is the weather today?")).await;
    let request = contents(&server.requests()[2]);
    assert!(request.iter().all(|(_, t)| !t.contains("318")), "{request:?}");
}
