//! Providers across real processes: an OpenAI-shaped and an Anthropic-shaped server each
//! stream a tool call that the command flow runs; failover moves a turn to the next live
//! provider with a note; a turn's tokens reach the session. The servers are the scripted
//! one, answering in either shape.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use stt_proto::{AssistantEvent, ChatRole};
use stt_testkit::llm_server::{LlmServer, Script};
use stt_testkit::viewer::{Seen, answered, events, status, tool_result, watch_attached};
use stt_testkit::{DEADLINE, Proc, Sandbox, expect_within};

/// A port nothing listens on.
fn dead_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `llm` (lines of `[llm]`) with every local provider not named in `providers` pointed
/// where nothing answers, and no API keys from the environment.
fn config(sandbox: &Sandbox, llm: &str, providers: &str) {
    let dead = format!("http://127.0.0.1:{}/v1/chat/completions", dead_port());
    let mut text = format!("[llm]\nlocal_port = {}\n{llm}\n{providers}", dead_port());
    for id in ["ollama", "lmstudio", "llamacpp"] {
        if !providers.contains(&format!("[llm.providers.{id}]")) {
            text.push_str(&format!("[llm.providers.{id}]\nendpoint = \"{dead}\"\n"));
        }
    }
    std::fs::write(sandbox.config_file(), text).unwrap();
}

/// The daemon (no microphone: its speech recognition is up, so commands may run) and the
/// assistant, with no API keys but the config's and no CLIs; a viewer attached.
fn stack(sandbox: &Sandbox) -> (Proc, Proc, Seen) {
    let daemon = sandbox.spawn("stt-daemon", &[]);
    let env = [
        ("PATH", "/usr/bin:/bin"),
        ("OPENAI_API_KEY", ""),
        ("ANTHROPIC_API_KEY", ""),
        ("ZAI_API_KEY", ""),
    ];
    let assistant = sandbox.spawn_with_env("stt-assistant", &[], &env);
    let seen = watch_attached(sandbox, DEADLINE);
    (daemon, assistant, seen)
}

#[test]
fn an_openai_and_an_anthropic_shaped_server_each_stream_a_tool_call_that_runs() {
    for shape in ["openai", "anthropic"] {
        let sandbox = Sandbox::new();
        let llm = LlmServer::start();
        let llm_config = match shape {
            "openai" => {
                format!("provider = \"openai\"\nendpoint = \"{}\"\nkey = \"sk-test\"", llm.url())
            }
            _ => format!(
                "provider = \"anthropic-api\"\nendpoint = \"{}\"\nkey = \"sk-ant-test\"",
                llm.messages_url()
            ),
        };
        config(&sandbox, &llm_config, "");
        llm.push(Script::ToolCalls(vec![("get_datetime".into(), json!({}))]));
        llm.push(Script::Text("It is noon.".into()));
        let (_daemon, assistant, seen) = stack(&sandbox);
        for args in
            [&["command-start"][..], &["command-edit", "--text", "what time is it on the moon"]]
        {
            let out = sandbox.run("stt-ctl", args);
            assert_eq!(out.code, Some(0), "{shape}: {out:?}");
        }
        let out = sandbox.run("stt-ctl", &["command-execute", "--wait=20000"]);
        assert_eq!(out.code, Some(0), "{shape}: {out:?}\n{}", assistant.log());
        let events = answered(&seen, "It is noon.", DEADLINE);
        let result = events.iter().find_map(tool_result).expect("the tool ran");
        assert_eq!(result.tool, "get_datetime");
        assert!(result.ok, "{shape}: {result:?}");
        let requests = llm.requests();
        assert_eq!(requests.len(), 2, "{shape}: {requests:?}");
        assert_eq!(requests[0]["stream"], true, "{shape}: the call came streamed");
        let sent = llm.received().into_iter().find(|r| r.method == "POST").unwrap();
        match shape {
            "openai" => assert_eq!(sent.header("authorization"), Some("Bearer sk-test")),
            _ => assert_eq!(sent.header("x-api-key"), Some("sk-ant-test")),
        }
        assert_eq!(
            status(&sandbox)["llm_provider"],
            if shape == "openai" { "openai" } else { "anthropic-api" }
        );
    }
}

#[test]
fn failover_sends_a_turn_to_the_next_live_provider_with_a_note() {
    let sandbox = Sandbox::new();
    let llm = LlmServer::start();
    let dead = format!("http://127.0.0.1:{}/v1/chat/completions", dead_port());
    // The configured endpoint is down; ollama (the scripted server) is there.
    config(
        &sandbox,
        &format!("endpoint = \"{dead}\"\nfailover = true"),
        &format!("[llm.providers.ollama]\nendpoint = \"{}\"\n", llm.url()),
    );
    let (_daemon, _assistant, seen) = stack(&sandbox);
    expect_within("ollama is found", DEADLINE, || {
        let out = sandbox.run("stt-ctl", &["chat-command", "/providers"]);
        let live = out
            .stdout
            .lines()
            .any(|l| l.split_whitespace().nth(1) == Some("ollama") && l.contains("live"));
        if live { Ok(()) } else { Err(out.stdout) }
    });
    llm.push(Script::Text("Answered by the fallback.".into()));
    assert_eq!(sandbox.run("stt-ctl", &["chat-send", "hello"]).code, Some(0));
    answered(&seen, "Answered by the fallback.", DEADLINE);
    let notes: Vec<String> = events(&seen)
        .into_iter()
        .filter_map(|e| match e {
            AssistantEvent::ChatMessage(m) if m.role == ChatRole::Note => Some(m.text),
            _ => None,
        })
        .collect();
    assert!(
        notes.iter().any(|n| n.contains("could not reach") && n.contains("trying ollama instead")),
        "{notes:?}"
    );
    // Failover is per request: the configured provider stays in use.
    assert_eq!(status(&sandbox)["llm_provider"], "custom");
}

#[test]
fn a_turns_tokens_reach_the_session_and_status() {
    let sandbox = Sandbox::new();
    let llm = LlmServer::start();
    config(
        &sandbox,
        &format!(
            "provider = \"anthropic-api\"\nendpoint = \"{}\"\nkey = \"k\"",
            llm.messages_url()
        ),
        "",
    );
    let (_daemon, _assistant, seen) = stack(&sandbox);
    llm.push(Script::Text("One two three.".into()));
    assert_eq!(sandbox.run("stt-ctl", &["chat-send", "count"]).code, Some(0));
    answered(&seen, "One two three.", DEADLINE);
    let session = expect_within("the session counts the turn", DEADLINE, || {
        events(&seen)
            .into_iter()
            .rev()
            .find_map(|e| match e {
                AssistantEvent::ChatSession(s) if s.turns == 1 => Some(s),
                _ => None,
            })
            .ok_or_else(|| "no chat_session with one turn yet".to_owned())
    });
    // The scripted server counts 6 prompt tokens plus 4 from its cache, and a token a word.
    let last = session.last.expect("the provider counted the turn");
    assert_eq!((last.prompt, last.cached, last.completion), (10, 4, 3), "{session:?}");
    assert_eq!(session.total, last);
    assert_eq!(session.provider.as_deref(), Some("anthropic-api"));
    let chat = &status(&sandbox)["chat"];
    assert_eq!(chat["total"]["completion"], 3, "{chat}");
}

#[test]
fn a_local_server_loading_its_model_is_shown_loading_and_turns_wait_for_it() {
    let sandbox = Sandbox::new();
    let llm = LlmServer::start();
    llm.set_loading(true);
    // Nothing configured: the local server is found by itself, still loading.
    config(&sandbox, "", &format!("[llm.providers.llamacpp]\nendpoint = \"{}\"\n", llm.url()));
    let (_daemon, _assistant, seen) = stack(&sandbox);
    expect_within("the session says the model is loading", DEADLINE, || {
        let chat = status(&sandbox)["chat"].clone();
        if chat["loading"] == true && chat["provider"] == "llamacpp" {
            Ok(())
        } else {
            Err(chat.to_string())
        }
    });
    expect_within("speech recognition is up", DEADLINE, || {
        let s = status(&sandbox);
        if s["stt_healthy"] == true { Ok(()) } else { Err(s.to_string()) }
    });
    for args in [&["command-start"][..], &["command-edit", "--text", "what time is it on the moon"]]
    {
        assert_eq!(sandbox.run("stt-ctl", args).code, Some(0));
    }
    let out = sandbox.run("stt-ctl", &["command-execute"]);
    assert!(out.stderr.contains("the model is still loading"), "{out:?}");
    assert_eq!(sandbox.run("stt-ctl", &["command-cancel"]).code, Some(0));
    // Once loaded, the server first reads the command prompt (the warm-up), then the turn.
    llm.push(Script::Text("OK".into()));
    llm.push(Script::Text("Loaded and answering.".into()));
    assert_eq!(sandbox.run("stt-ctl", &["chat-send", "are you there"]).code, Some(0));
    // The turn waits in the queue, not failing against a server that would refuse it.
    assert!(llm.requests().is_empty(), "no request while loading");
    llm.set_loading(false);
    answered(&seen, "Loaded and answering.", DEADLINE);
    let requests = llm.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(requests[0]["max_tokens"], 1, "the warm-up first: {}", requests[0]);
    let errors: Vec<_> = events(&seen)
        .into_iter()
        .filter(|e| match e {
            // The daemon has no microphone here: its audio errors are not the model's.
            AssistantEvent::Error(e) => e.code != stt_proto::ErrorCode::Audio,
            AssistantEvent::ChatMessage(m) => m.role == ChatRole::Error,
            _ => false,
        })
        .collect();
    assert!(errors.is_empty(), "loading is not an error: {errors:?}");
    assert_eq!(status(&sandbox)["chat"]["loading"], false);
}
