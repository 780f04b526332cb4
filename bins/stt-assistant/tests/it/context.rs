//! The document and web tools through the command path against the scripted model: offered
//! when a command's words call for them, run as the model asks, and their text is what the
//! model reads next.

use std::sync::Arc;

use serde_json::json;
use stt_assistant::llm::Work;
use stt_assistant::memory::Episode;
use stt_testkit::llm_server::{LlmServer, Script};
use stt_testkit::web::WebServer;

use crate::common::{self, tool_results};

fn command(text: &str, n: u64) -> Work {
    Work::Command { text: text.into(), edited: false, episode: Episode::Command(n) }
}

fn offered(server: &LlmServer, request: usize) -> Vec<String> {
    server.requests()[request]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_note_and_a_web_page_answer_a_command_and_nothing_outside_the_roots_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::write(docs.join("shopping.md"), "# Shopping\n- eggs\n- flour\n").unwrap();
    std::fs::write(dir.path().join("diary.txt"), "private").unwrap();
    let page = b"<html><body><h1>Trains</h1><p>The 8:15 to Leeds leaves from platform 4.</p>\
        </body></html>";
    let web = WebServer::start(vec![("/trains", "text/html", page.to_vec())]);
    let server = LlmServer::start();
    let mut env = common::env(&server, common::settings(), None);
    let config = stt_config::ToolsConfig {
        document_roots: vec![docs.clone()],
        ..stt_config::ToolsConfig::default()
    };
    env.tools = Arc::new(stt_tools::Registry::configured(&config, dir.path()).unwrap());

    // A file: read_file is offered (the web tools are not), runs, and its text goes back.
    server.push(Script::ToolCalls(vec![("read_file".into(), json!({"path": "shopping.md"}))]));
    server.push(Script::Text("Eggs and flour.".into()));
    let reports = common::run(&env, command("read my shopping notes", 1)).await;
    let results = tool_results(&reports);
    assert_eq!(results, [("read_file".into(), true, "# Shopping\n- eggs\n- flour\n".into())]);
    let tools = offered(&server, 0);
    assert!(tools.contains(&"read_file".into()) && tools.contains(&"list_dir".into()), "{tools:?}");
    assert!(!tools.contains(&"fetch_web".into()), "{tools:?}");
    assert!(server.requests()[1].to_string().contains("flour"));

    // Outside the roots: refused, naming the setting.
    server.push(Script::ToolCalls(vec![("read_file".into(), json!({"path": "../diary.txt"}))]));
    server.push(Script::Text("I may not read that file.".into()));
    let reports = common::run(&env, command("read the file diary.txt", 2)).await;
    let (_, ok, why) = &tool_results(&reports)[0];
    assert!(!ok && why.contains("[tools].document_roots"), "{why}");

    // A web page: fetch_web is offered for words about the web, and reads the page's text.
    let url = format!("{}/trains", web.url());
    server.push(Script::ToolCalls(vec![("fetch_web".into(), json!({"url": url}))]));
    server.push(Script::Text("Platform 4.".into()));
    let reports = common::run(&env, command("which platform does the web page say", 3)).await;
    let (tool, ok, text) = &tool_results(&reports)[0];
    assert!(tool == "fetch_web" && *ok && text.contains("leaves from platform 4"), "{text}");
    assert!(!text.contains("<p>"), "{text}");
    assert!(offered(&server, 4).contains(&"fetch_web".into()));
    assert_eq!(web.asked(), ["/trains"]);

    // A command about neither is offered neither.
    server.push(Script::Text("It is on.".into()));
    common::run(&env, command("turn on the lights", 4)).await;
    let tools = offered(&server, 6);
    assert!(!tools.iter().any(|t| t == "read_file" || t == "fetch_web"), "{tools:?}");

    // The screen: never without [tools].screen; with it, for words about the screen.
    server.push(Script::Text("I cannot see your screen.".into()));
    common::run(&env, command("what does the error on my screen say", 5)).await;
    assert!(!offered(&server, 7).contains(&"capture_screen".into()));
    let config = stt_config::ToolsConfig { screen: true, ..config };
    env.tools = Arc::new(stt_tools::Registry::configured(&config, dir.path()).unwrap());
    server.push(Script::Text("Let me look.".into()));
    common::run(&env, command("what does the error on my screen say", 6)).await;
    assert!(offered(&server, 8).contains(&"capture_screen".into()));
}
