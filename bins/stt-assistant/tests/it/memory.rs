//! Long-term memory in the LLM lane against the scripted model and a real store: a command
//! recalls what an earlier conversation said, keeps an intention that a later turn's words
//! bring back, and the prompt carries memory's sections.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use stt_assistant::lane::Sink;
use stt_assistant::llm::{self, Chat, End, JobEnv, Report, Work};
use stt_assistant::memory::{self, Episode, Memory};
use stt_assistant::turn::ChatTurn;
use stt_memory::Role;
use stt_testkit::llm_server::{LlmServer, Script};

use crate::common::{self, run, tool_results};

fn env(server: &LlmServer, memory: Memory) -> JobEnv {
    common::env(server, common::settings(), Some(memory))
}

fn open(dir: &std::path::Path) -> Memory {
    common::memory(dir)
}

/// Waits (without blocking the runtime the jobs run on) until `done`, or fails after the
/// test kit's deadline.
async fn until(what: &str, done: impl Fn() -> bool) {
    stt_testkit::until(what, stt_testkit::DEADLINE, done).await;
}

fn system_of(request: &Value) -> String {
    request["messages"][0]["content"].as_str().unwrap().to_owned()
}

fn last_user(request: &Value) -> String {
    let messages = request["messages"].as_array().unwrap();
    let user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    user["content"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_command_recalls_what_an_earlier_chat_said() {
    let dir = tempfile::tempdir().unwrap();
    let memory = open(dir.path());
    memory.turn(Episode::Chat(1), Role::User, Some("Typed"), "chat", "My sister lives in Lisbon.");
    memory.turn(Episode::Chat(1), Role::Assistant, None, "chat", "Lisbon, noted.");
    memory.close(Episode::Chat(1));

    let server = LlmServer::start();
    server.push(Script::ToolCalls(vec![(
        "recall_memories".into(),
        json!({"query": "where does my sister live"}),
    )]));
    server.push(Script::Text("Your sister lives in Lisbon.".into()));
    let env = env(&server, memory.clone());
    let work = command("do you remember where my sister lives", 7);
    let reports = run(&env, work).await;

    let results = tool_results(&reports);
    assert_eq!(results.len(), 1, "{results:?}");
    let (tool, ok, result) = &results[0];
    assert_eq!((tool.as_str(), *ok), ("recall_memories", true));
    assert!(result.contains("Typed: My sister lives in Lisbon."), "{result}");
    let requests = server.requests();
    // The model was offered memory's tools and told when to use them.
    let offered: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    // Those its words call for: recall's, not a reminder's (nor those that end one, none
    // being open).
    assert_eq!(
        offered,
        ["recall_memories", "search_recent_conversation", "explore_memory_tree"],
        "{offered:?}"
    );
    // Told when to use them before the command's words; the system prompt is the configured
    // one, byte for byte, as on every command (the prefix llama-server keeps cached).
    let first_user = requests[0]["messages"][1]["content"].as_str().unwrap();
    assert!(first_user.contains("call recall_memories only when the user asks"), "{first_user}");
    assert!(first_user.ends_with("do you remember where my sister lives"), "{first_user}");
    assert!(system_of(&requests[0]).starts_with(&env.settings.command_system_prompt));
    // The result reached the model.
    let second = requests[1]["messages"].to_string();
    assert!(second.contains("Lisbon"), "{second}");

    // Nothing in "what time is it" asks memory: its tools are not offered, nor its rules.
    server.push(Script::Text("Noon.".into()));
    run(&env, command("what time is it", 8)).await;
    let request = server.requests().pop().unwrap();
    let tools = request["tools"].to_string();
    assert!(tools.contains("get_datetime") && !tools.contains("recall_memories"), "{tools}");
    assert!(system_of(&request).starts_with(&env.settings.command_system_prompt));
    assert!(!last_user(&request).contains("recall_memories"));
}

#[tokio::test]
async fn an_intention_comes_back_when_its_cue_is_said_and_ends_when_done() {
    let dir = tempfile::tempdir().unwrap();
    let memory = open(dir.path());
    let server = LlmServer::start();
    let env = env(&server, memory.clone());

    server.push(Script::ToolCalls(vec![(
        "add_intention".into(),
        json!({"text": "ask how the dentist went", "cue": "dentist"}),
    )]));
    server.push(Script::Text("I will ask.".into()));
    let work = command("when I mention the dentist, ask how it went", 1);
    let results = tool_results(&run(&env, work).await);
    assert!(results[0].1 && results[0].2.starts_with("intention "), "{results:?}");
    let id: i64 =
        results[0].2.trim_start_matches("intention ").split(' ').next().unwrap().parse().unwrap();

    // A chat turn without the cue: the intention waits in the system prompt only.
    server.push(Script::Text("Sunny.".into()));
    let chat = |text: &str| Work::Chat {
        turn: ChatTurn::typed(text),
        conversation: Chat::default(),
        resume: None,
        episode: Episode::Chat(2),
    };
    run(&env, chat("how is the weather")).await;
    // With the cue: the turn itself reminds the model.
    server.push(Script::Text("How did it go?".into()));
    let reports = run(&env, chat("I was at the dentist today")).await;
    let noted: Vec<&String> = reports
        .iter()
        .filter_map(|r| if let Report::Hinted(notes) = r { Some(notes) } else { None })
        .flatten()
        .collect();
    assert_eq!(
        noted,
        [&format!(
            "memory: \"dentist\" came up, which brings back intention {id}: ask how the dentist went"
        )]
    );
    // Once per conversation: the next turn with the cue is not reminded again.
    server.push(Script::Text("Right.".into()));
    run(&env, chat("the dentist was fine")).await;
    assert!(!last_user(server.requests().last().unwrap()).contains("(Memory:"));
    let requests = server.requests();
    let (plain, cued) = (&requests[2], &requests[3]);
    assert!(system_of(plain).contains(&format!("- [{id}] ask how the dentist went")));
    assert!(!last_user(plain).contains("(Memory:"), "{}", last_user(plain));
    let reminded = last_user(cued);
    assert!(
        reminded.starts_with("(Memory: \"dentist\" came up: you meant to ask how the dentist went"),
        "{reminded}"
    );
    assert!(reminded.ends_with("Typed: I was at the dentist today"), "{reminded}");
    // The stable part of the prompt did not move between the two turns.
    assert_eq!(system_of(plain), system_of(cued));

    server.push(Script::ToolCalls(vec![("complete_intention".into(), json!({"id": id}))]));
    server.push(Script::Text("Done.".into()));
    let work = command("I asked about the dentist", 3);
    let results = tool_results(&run(&env, work).await);
    assert_eq!(results[0], ("complete_intention".into(), true, format!("intention {id} is done")));
    let context = memory.context("the dentist again".into(), None, None).await.unwrap();
    assert!(context.reminders.is_empty() && !context.sections.contains("dentist"), "{context:?}");
}

#[tokio::test]
async fn bad_arguments_get_an_answer_the_model_can_act_on() {
    let dir = tempfile::tempdir().unwrap();
    let memory = open(dir.path());
    for (name, args, expect) in [
        ("recall_memories", json!({}), "give a 'query'"),
        ("add_intention", json!({"cue": "x"}), "give the 'text'"),
        ("add_intention", json!({"text": "x", "due": "tomorrow"}), "YYYY-MM-DD HH:MM"),
        ("add_intention", json!({"text": "x", "due": "2020-04-12 09:00"}), "has passed"),
        ("add_intention", json!({"text": "x", "due": "2099-04-12 09:00"}), "more than a year away"),
        ("complete_intention", json!({"id": "nine"}), "give the intention's 'id'"),
        ("cancel_intention", json!({"id": 99}), "there is no intention 99"),
        ("read_session_log", json!({"session_id": 5}), "there is no session 5"),
    ] {
        let tool = memory::Tool::named(name).unwrap();
        let called = memory.tool(tool, args).await.unwrap();
        assert!(!called.ok && called.result.contains(expect), "{name}: {called:?}");
    }
}

/// Command number `n`, as typed.
fn command(text: &str, n: u64) -> Work {
    Work::Command { text: text.into(), edited: false, episode: Episode::Command(n) }
}

/// Two conversations wait; `memory` holds them.
fn two_pending(memory: &Memory) {
    memory.turn(Episode::Chat(1), Role::User, Some("Typed"), "chat", "My sister lives in Lisbon.");
    memory.turn(Episode::Chat(1), Role::Assistant, None, "chat", "Noted.");
    memory.close(Episode::Chat(1));
    memory.turn(Episode::Chat(2), Role::User, Some("Typed"), "chat", "I fixed the bike today.");
    memory.close(Episode::Chat(2));
}

async fn stats(memory: &Memory) -> stt_memory::Stats {
    memory.stats().await.unwrap()
}

async fn dreams(memory: &Memory) -> String {
    memory.dreams(5).await.unwrap()
}

/// The scripted model's round of a dream: one fact written, then "done".
fn dream_round(server: &LlmServer, name: &str, body: &str) {
    let fact = json!({"name": name, "body": body});
    server.push(Script::ToolCalls(vec![("create_knowledge".into(), fact)]));
    server.push(Script::Text("done".into()));
}

fn dream(trigger: &str) -> Work {
    Work::Dream { trigger: trigger.into(), max_steps: 10 }
}

#[tokio::test]
async fn a_dream_turns_pending_conversations_into_items_and_marks_them_processed() {
    let dir = tempfile::tempdir().unwrap();
    let memory = open(dir.path());
    two_pending(&memory);
    let server = LlmServer::start();
    dream_round(&server, "sister's city", "The user's sister lives in Lisbon.");
    server.push(Script::ToolCalls(vec![(
        "record_episode".into(),
        json!({"summary": "The user fixed their bike.", "salience": "low"}),
    )]));
    server.push(Script::Text("done".into()));
    // A round that saved no fact reads what the user said once more, for facts as lines.
    server.push(Script::Text("No facts.".into()));
    let env = env(&server, memory.clone());
    let reports = run(&env, dream("asked")).await;

    let s = stats(&memory).await;
    assert_eq!((s.pending_sessions, s.active_items), (0, 2), "{s:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    assert!(last_user(&requests[4]).ends_with("Typed: I fixed the bike today.\n"));
    // Each round shows one conversation, its lines numbered for provenance.
    let first = last_user(&requests[0]);
    assert!(
        first.contains("Typed: My sister lives in Lisbon.") && !first.contains("bike"),
        "{first}"
    );
    let offered: Vec<memory::Tool> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| memory::Tool::named(t["function"]["name"].as_str()?))
        .collect();
    assert_eq!(offered, memory::Tool::DREAM_ROUND);
    // The item cites the lines it came from.
    let items = memory.list(Some(stt_memory::Kind::Knowledge), false, 5).await.unwrap();
    assert_eq!(items[0].body, "The user's sister lives in Lisbon.");
    assert_eq!(items[0].provenance.len(), 1, "{items:?}");
    let log = dreams(&memory).await;
    assert!(log.contains("(asked, done)") && log.contains("create_knowledge: item"), "{log}");
    assert!(log.contains("2 conversations read, 2 changes, 5 requests"), "{log}");
    let notes: Vec<&String> = reports
        .iter()
        .filter_map(|r| if let Report::Note(n) = r { Some(n) } else { None })
        .collect();
    assert!(notes.iter().any(|n| n.starts_with("memory: dreamt")), "{notes:?}");
}

/// A store, the scripted model and a lane on both, after a first dream learnt `body` (named
/// `name`) from "My sister lives in Lisbon.".
struct Learnt {
    _dir: tempfile::TempDir,
    memory: Memory,
    server: LlmServer,
    env: JobEnv,
}

async fn lisbon_learnt(name: &str, body: &str) -> Learnt {
    let dir = tempfile::tempdir().unwrap();
    let memory = open(dir.path());
    let server = LlmServer::start();
    let env = env(&server, memory.clone());
    memory.turn(Episode::Chat(1), Role::User, Some("Typed"), "chat", "My sister lives in Lisbon.");
    memory.close(Episode::Chat(1));
    dream_round(&server, name, body);
    run(&env, dream("idle")).await;
    Learnt { _dir: dir, memory, server, env }
}

#[tokio::test]
async fn a_correction_in_a_dream_supersedes_and_the_old_fact_stays_archived() {
    let Learnt { _dir, memory, server, env } =
        lisbon_learnt("sister's city", "The user's sister lives in Lisbon.").await;

    memory.turn(Episode::Chat(2), Role::User, Some("Typed"), "chat", "My sister moved to Porto.");
    memory.close(Episode::Chat(2));
    dream_round(&server, "sister's city", "The user's sister lives in Porto.");
    run(&env, dream("idle")).await;
    // The round showed the model what it may correct.
    let shown = last_user(&server.requests()[2]);
    assert!(shown.contains("Already remembered") && shown.contains("Lisbon"), "{shown}");

    let hits = memory.search("sister city".into(), 5).await.unwrap();
    let items: Vec<&stt_memory::Hit> = hits.iter().filter(|h| h.kind.is_some()).collect();
    assert_eq!(items.len(), 1, "only the correction is recalled: {hits:?}");
    assert!(items[0].text.contains("Porto"));
    assert_eq!(items[0].previous, ["sister's city: The user's sister lives in Lisbon."]);
}

#[tokio::test]
async fn a_fact_rewritten_in_a_dream_is_a_correction_that_keeps_the_old_text() {
    let Learnt { _dir, memory, server, env } =
        lisbon_learnt("sister in Lisbon", "The user's sister lives in Lisbon.").await;
    memory.turn(Episode::Chat(2), Role::User, Some("Typed"), "chat", "My sister moved to Porto.");
    memory.close(Episode::Chat(2));
    // Copied from the log line with its speaker, as small models do, and the id written as a
    // float (a whole number: the call parser and the tool take it).
    let rewrite =
        |id: u32| json!({"id": f64::from(id), "body": "Typed: The user's sister lives in Porto."});
    server.push(Script::ToolCalls(vec![("update_item".into(), rewrite(1))]));
    // Again, now that item 1 is archived: refused.
    let again = json!({"id": 1, "body": "My sister moved to Porto."});
    server.push(Script::ToolCalls(vec![("update_item".into(), again)]));
    server.push(Script::Text("done".into()));
    run(&env, dream("asked")).await;

    let results = tool_messages(&server);
    assert_eq!(results[1], "item 2 replaces item 1 (the old text is kept, archived)");
    assert!(results[2].starts_with("item 1 is archived"), "{results:?}");
    let hits = memory.search("sister".into(), 5).await.unwrap();
    let items: Vec<&stt_memory::Hit> = hits.iter().filter(|h| h.kind.is_some()).collect();
    assert_eq!(items.len(), 1, "{hits:?}");
    // The old name held the old value: it stays with the old text.
    assert_eq!(items[0].text, "The user's sister lives in Porto.");
    assert_eq!(items[0].previous, ["sister in Lisbon: The user's sister lives in Lisbon."]);
    assert_eq!(items[0].sources.len(), 1, "it cites the line that said it: {:?}", items[0]);
}

/// What the 0.5B model did in CI: it copied the old value into an update (refused), wrote
/// the dream log, and ended the round with no fact saved. The user's lines are read again.
#[tokio::test]
async fn a_round_that_saves_no_fact_reads_the_users_lines_again_and_finds_the_correction() {
    let Learnt { _dir, memory, server, env } =
        lisbon_learnt("sister's city", "My sister Ana lives in Lisbon.").await;
    let words = "My sister Ana lives in Porto now.";
    memory.turn(Episode::Chat(2), Role::User, Some("Typed"), "chat", words);
    memory.close(Episode::Chat(2));
    let copied = json!({"id": 1, "body": "My sister Ana lives in Lisbon now."});
    server.push(Script::ToolCalls(vec![("update_item".into(), copied)]));
    server.push(Script::ToolCalls(vec![("write_dream_log".into(), json!({"note": "updated"}))]));
    // Under a topic of its own: the rewrite of the old note decides.
    server.push(Script::Text(format!("FACT where Ana lives: {words}")));
    server.push(Script::Text("My sister Ana lives in Porto.".into()));
    run(&env, dream("asked")).await;

    let results = tool_messages(&server);
    assert!(results[1].starts_with("this conversation never says lisbon"), "{results:?}");
    let requests = server.requests();
    let asked: Vec<String> = requests.iter().map(last_user).collect();
    assert_eq!(requests.len(), 2 + 4, "{asked:#?}\n{}", dreams(&memory).await);
    assert!(asked[4].ends_with(&format!("Typed: {words}\n")), "{asked:?}");
    let hits = memory.search("where does my sister Ana live".into(), 5).await.unwrap();
    let items: Vec<&stt_memory::Hit> = hits.iter().filter(|h| h.kind.is_some()).collect();
    assert_eq!(items.len(), 1, "Lisbon is out of recall: {hits:?}");
    assert_eq!(items[0].text, format!("where Ana lives: {words}"));
    assert_eq!(items[0].previous, ["sister's city: My sister Ana lives in Lisbon."]);
    let log = dreams(&memory).await;
    assert!(log.contains("1 conversations read, 2 changes, 4 requests"), "{log}");
}

/// What each tool call of the scripted model was told, in order.
fn tool_messages(server: &LlmServer) -> Vec<String> {
    let mut seen = Vec::new();
    for request in server.requests() {
        for m in request["messages"].as_array().unwrap() {
            let text = m["content"].as_str().unwrap_or_default().to_owned();
            if m["role"] == "tool" && !seen.contains(&text) {
                seen.push(text);
            }
        }
    }
    seen
}

#[tokio::test]
async fn a_remembered_fact_copied_into_a_conversation_that_does_not_say_it_is_refused() {
    let Learnt { _dir, memory, server, env } =
        lisbon_learnt("sister's city", "My sister lives in Lisbon.").await;
    // Said again, it is strengthened; copied from the list of what memory holds, refused.
    for (n, words) in [(2, "Yes, my sister lives in Lisbon."), (3, "My sister lives in Porto now.")]
    {
        memory.turn(Episode::Chat(n), Role::User, Some("Typed"), "chat", words);
        memory.close(Episode::Chat(n));
        dream_round(&server, "sister", "My sister lives in Lisbon.");
        run(&env, dream("asked")).await;
    }
    let requests = server.requests();
    let results: Vec<String> = requests
        .iter()
        .filter_map(|r| r["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool"))
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(results.len(), 3, "{results:?}");
    assert_eq!(results[1], "already known as item 1: strengthened");
    assert!(results[2].starts_with("this conversation never says lisbon"), "{}", results[2]);
    let s = stats(&memory).await;
    assert_eq!(s.active_items, 1, "{s:?}");
}

#[tokio::test]
async fn a_new_fact_is_checked_against_the_nearest_older_one_and_replaces_it_when_it_changes_it() {
    let dir = tempfile::tempdir().unwrap();
    let memory = open(dir.path());
    let server = LlmServer::start();
    let env = env(&server, memory.clone());
    // Other things memory holds, so that words weigh as they do in a real store.
    for fact in [
        "The user's dog is called Rex.",
        "The user drinks coffee at eight.",
        "The user's car is blue.",
        "The user plays chess on Sundays.",
        "The user is allergic to cats.",
    ] {
        let args = json!({"name": "", "body": fact});
        let called = memory.tool(memory::Tool::CreateKnowledge, args).await.unwrap();
        assert!(called.ok, "{called:?}");
    }
    let said = [
        (1, "My sister lives in Lisbon.", "sister's city", "The user's sister lives in Lisbon."),
        (2, "My sister moved to Porto.", "sister's home", "The user's sister lives in Porto."),
        (3, "She works in Porto too.", "sister's work", "The user's sister works in Porto."),
    ];
    for (n, words, name, body) in said {
        memory.turn(Episode::Chat(n), Role::User, Some("Typed"), "chat", words);
        memory.close(Episode::Chat(n));
        dream_round(&server, name, body);
        // Asked to write the nearest older note as it reads now, the model changes it for
        // the move and leaves it as it was for the job.
        if n > 1 {
            server.push(Script::Text("The user's sister lives in Porto.".into()));
        }
        run(&env, dream("idle")).await;
    }
    let requests = server.requests();
    // The first fact had nothing to correct: no question. Then one per new fact.
    assert_eq!(requests.len(), 2 + 3 + 3, "{requests:#?}");
    let asked = last_user(&requests[4]);
    assert_eq!(
        asked,
        "Old note: The user's sister lives in Lisbon.\nNew information: The user's sister lives \
         in Porto."
    );
    assert!(requests[4]["tools"].as_array().is_none_or(|t| t.is_empty()), "{:?}", requests[4]);
    let asked = last_user(&requests[7]);
    assert!(asked.contains("Old note: The user's sister lives in Porto."), "{asked}");
    assert!(asked.contains("New information: The user's sister works in Porto."), "{asked}");

    let hits = memory.search("sister Porto".into(), 5).await.unwrap();
    let items: Vec<&str> =
        hits.iter().filter(|h| h.kind.is_some()).map(|h| h.text.as_str()).collect();
    assert_eq!(items.len(), 2, "Lisbon is out of recall, the work stays: {items:?}");
    assert!(items.iter().any(|t| t.contains("lives")) && items.iter().any(|t| t.contains("works")));
    let porto = hits.iter().find(|h| h.text.contains("lives in Porto")).unwrap();
    assert_eq!(porto.previous, ["sister's city: The user's sister lives in Lisbon."]);
    let log = dreams(&memory).await;
    assert_eq!(log.matches("correction: ").count(), 1, "{log}");
    assert!(log.contains("correction: item 7 replaces item 6 (kept archived)"), "{log}");
}

/// What the 1.5B model saved once: a name and a word ("sister's city", "Lisbon"). A word
/// alone is refused now, and a body of two words is asked about with its name: asked about
/// "Lisbon" alone, the model's rewrite ("Porto") kept nothing of the old note to show it was
/// the same one.
#[tokio::test]
async fn a_fact_saved_as_a_name_and_a_word_is_refused_and_two_words_go_with_the_name() {
    let dir = tempfile::tempdir().unwrap();
    let memory = open(dir.path());
    let server = LlmServer::start();
    let env = env(&server, memory.clone());
    // The first round's word is refused, with what to write instead; the model writes two.
    let word = json!({"name": "sister's city", "body": "Lisbon"});
    server.push(Script::ToolCalls(vec![("create_knowledge".into(), word)]));
    let said = [
        (1, "My sister Ana lives in Lisbon.", "sister's city", "Lives in Lisbon"),
        (2, "My sister Ana lives in Porto now.", "sister", "Lives in Porto"),
    ];
    for (n, words, name, body) in said {
        memory.turn(Episode::Chat(n), Role::User, Some("Typed"), "chat", words);
        memory.close(Episode::Chat(n));
        dream_round(&server, name, body);
        if n > 1 {
            server.push(Script::Text("sister's city: Lives in Porto".into()));
        }
        run(&env, dream("idle")).await;
    }
    let refused = &tool_messages(&server)[0];
    assert!(refused.starts_with("'body' must be the fact as one whole sentence"), "{refused}");
    let requests = server.requests();
    let asked = last_user(requests.last().unwrap());
    assert_eq!(
        asked,
        "Old note: sister's city: Lives in Lisbon\nNew information: sister: Lives in Porto"
    );
    let log = dreams(&memory).await;
    assert!(log.contains("correction: item 2 replaces item 1 (kept archived)"), "{log}");
}

#[tokio::test]
async fn a_cancelled_dream_keeps_what_it_processed_and_the_next_one_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let memory = open(dir.path());
    two_pending(&memory);
    let server = LlmServer::start();
    dream_round(&server, "sister's city", "The user's sister lives in Lisbon.");
    server.push(Script::Hang);
    let env = env(&server, memory.clone());
    let reports: Arc<Mutex<Vec<Report>>> = Arc::default();
    let keep = Arc::clone(&reports);
    let out = Sink::new(move |r| keep.lock().unwrap().push(r));
    let handle = llm::spawn(&env, dream("idle"), 0, tracing::Span::none(), out);
    until("the second round's request", || server.requests().len() == 3).await;
    // Someone speaks: the loop cancels the dream and records it as interrupted.
    handle.cancel();
    until("the dream to end", || {
        reports.lock().unwrap().iter().any(|r| matches!(r, Report::Finished(End::Cancelled)))
    })
    .await;
    memory.dream_end("interrupted".into(), String::new()).await.unwrap();
    let s = stats(&memory).await;
    assert_eq!((s.pending_sessions, s.active_items), (1, 1), "{s:?}");
    assert!(dreams(&memory).await.contains("(idle, interrupted)"));

    server.push(Script::Text("done".into()));
    run(&env, dream("idle")).await;
    let resumed = last_user(server.requests().last().unwrap());
    assert!(
        resumed.contains("I fixed the bike today.") && !resumed.contains("Lisbon."),
        "{resumed}"
    );
    assert_eq!(stats(&memory).await.pending_sessions, 0);
}

/// What the installed 0.5B model does with "remind me …": the same call many times in one
/// reply, then "completes" the intention it just added. One call per tool runs, and the
/// new intention stays open.
#[tokio::test]
async fn a_burst_of_calls_runs_once_and_a_new_intention_is_not_ended_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let memory = open(dir.path());
    let server = LlmServer::start();
    let add = ("add_intention".to_owned(), json!({"text": "book the service", "cue": "car"}));
    server.push(Script::ToolCalls(vec![add.clone(), add.clone(), add]));
    server.push(Script::ToolCalls(vec![("complete_intention".into(), json!({"id": 1}))]));
    server.push(Script::Text("I will remind you.".into()));
    let env = env(&server, memory.clone());
    let work = command("remind me to book the service when I mention the car", 1);
    let results = tool_results(&run(&env, work).await);
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0].0, "add_intention");
    assert_eq!(
        results[1],
        (
            "complete_intention".into(),
            false,
            "intention 1 was just added: it stays open until it is done".into()
        )
    );
    let open = memory.list(Some(stt_memory::Kind::Intention), false, 5).await.unwrap();
    assert_eq!(open.len(), 1, "{open:?}");
}

/// A model that cannot call tools (the small local one, often) writes facts as lines.
#[tokio::test]
async fn a_dream_takes_facts_written_as_lines_too() {
    let dir = tempfile::tempdir().unwrap();
    let memory = open(dir.path());
    memory.turn(Episode::Chat(1), Role::User, Some("Typed"), "chat", "My sister lives in Lisbon.");
    memory.turn(
        Episode::Chat(1),
        Role::User,
        Some("Typed"),
        "chat",
        "The printer is out of toner.",
    );
    memory.close(Episode::Chat(1));
    let server = LlmServer::start();
    server.push(Script::Text(
        "FACT sister's city: The user's sister lives in Lisbon.\nFACT topic: sentence\n\
         Fact topic: Typed: I play the cello.\nOK"
            .into(),
    ));
    server.push(Script::Text("done".into()));
    let env = env(&server, memory.clone());
    run(&env, dream("asked")).await;
    let items = memory.list(Some(stt_memory::Kind::Knowledge), false, 5).await.unwrap();
    let texts: Vec<String> = items.iter().map(stt_memory::Item::text).collect();
    // The cello was never mentioned: a fact that shares no word with what was said is dropped.
    assert_eq!(texts, ["sister's city: The user's sister lives in Lisbon."]);
    // Written without sources, it cites only the lines that share its words.
    assert_eq!(items[0].provenance.len(), 1, "{items:?}");
    assert_eq!(stats(&memory).await.pending_sessions, 0);
}

/// With an intention open, the words that end it offer the tools that end one, unless they
/// are another tool's words ("a notification saying backup done": the 1.5B model completed
/// reminder 1 beside the notify call).
#[tokio::test]
async fn done_ends_an_intention_unless_it_is_another_tools_words() {
    let dir = tempfile::tempdir().unwrap();
    let memory = open(dir.path());
    let add = json!({"text": "water the plants", "cue": "plants"});
    assert!(memory.tool(memory::Tool::AddIntention, add).await.unwrap().ok);
    let server = LlmServer::start();
    let env = env(&server, memory.clone());
    let offered = async |text: &str, n: u64| -> String {
        server.push(Script::Text("OK.".into()));
        run(&env, command(text, n)).await;
        server.requests().last().unwrap()["tools"].to_string()
    };
    let notify = offered("Show a notification saying backup done.", 1).await;
    assert!(notify.contains("\"notify\"") && !notify.contains("complete_intention"), "{notify}");
    let plants = offered("I'm done with the plants.", 2).await;
    assert!(plants.contains("complete_intention"), "{plants}");
}

/// After a tool, as after a person's turn: its result's words bring an intention back.
#[tokio::test]
async fn a_tools_result_can_cue_an_intention() {
    let dir = tempfile::tempdir().unwrap();
    let memory = open(dir.path());
    let weekday = chrono::Local::now().format("%A").to_string();
    let add = json!({"text": "water the plants", "cue": weekday});
    let added = memory.tool(memory::Tool::AddIntention, add).await.unwrap();
    assert!(added.ok, "{added:?}");
    let server = LlmServer::start();
    server.push(Script::ToolCalls(vec![("get_datetime".into(), json!({}))]));
    server.push(Script::Text("It is the afternoon.".into()));
    let env = env(&server, memory.clone());
    let work = command("what time is it", 1);
    let reports = run(&env, work).await;
    // An intention open is no reason to offer the tools that end one: the words are not
    // about it (the prefix the server keeps does not change with memory's state).
    let first = server.requests()[0]["tools"].to_string();
    assert!(!first.contains("complete_intention"), "{first}");
    let second = server.requests()[1]["messages"].to_string();
    assert!(
        second.contains(&format!(
            "(Memory: \\\"{weekday}\\\" came up: you meant to water the plants"
        )),
        "{second}"
    );
    assert!(
        reports.iter().any(|r| matches!(r, Report::Hinted(n) if n[0].contains("water the plants")))
    );
}
