//! The CLI providers against fake CLIs (stt-testkit's `fake_cli`) that print the real tools'
//! stream formats: a conversation carried on through each CLI's session, the prompt kept out
//! of argv, and each way a CLI fails, as the caller sees it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use stt_llm::cli::{Cli, Client};
use stt_llm::{Finish, LlmError, Message, Provider, Reply, Request, Resume};
use stt_testkit::fake_cli::{self, Behaviour, FakeCli};
use stt_testkit::{expect_within, procs};
use tempfile::TempDir;

/// Words that must never reach any process's argv.
const SECRET: &str = "my locker code is 4471";

fn fake(cli: Cli, behaviour: Behaviour) -> (TempDir, FakeCli) {
    let dir = tempfile::tempdir().unwrap();
    let fake = fake_cli::install(dir.path(), cli.program(), behaviour);
    (dir, fake)
}

fn provider(cli: Cli, fake: &FakeCli, idle: Duration) -> Provider {
    Provider::Cli(Client::new(cli, fake.program(), "", idle))
}

fn request<'a>(messages: &'a [Message], resume: Option<&'a Resume>) -> Request<'a> {
    Request {
        messages,
        tools: &[],
        stream: true,
        max_tokens: 256,
        temperature: 0.2,
        resume,
        slot: None,
    }
}

/// Sends one request, returning the reply and the pieces `on_text` saw.
async fn send(
    provider: &Provider,
    messages: &[Message],
    resume: Option<&Resume>,
) -> (Result<Reply, LlmError>, Vec<String>) {
    let mut pieces = Vec::new();
    let reply = provider.complete(&request(messages, resume), |p| pieces.push(p.to_owned())).await;
    (reply, pieces)
}

/// The flag each CLI resumes a session with.
fn resume_flag(cli: Cli) -> &'static str {
    match cli {
        Cli::Claude | Cli::Gemini => "--resume",
        Cli::Codex => "resume",
        Cli::Opencode => "--session",
    }
}

fn assert_no_prompt_in_argv(fake: &FakeCli) {
    for call in fake.calls() {
        for arg in &call.argv {
            for words in [SECRET, "locker", "capital", "Be brief"] {
                assert!(!arg.contains(words), "{words:?} in argv {:?}", call.argv);
            }
        }
    }
}

async fn two_turns_carry_on_through_the_session(cli: Cli) {
    let (_dir, fake) = fake(cli, Behaviour::Normal);
    let provider = provider(cli, &fake, Duration::from_secs(20));
    let mut messages =
        vec![Message::system("Be brief."), Message::user(format!("What is the capital? {SECRET}"))];

    let (first, pieces) = send(&provider, &messages, None).await;
    let first = first.unwrap();
    assert_eq!(
        first.content,
        format!("Hello from fake {}. You said: What is the capital? {SECRET}", cli.program())
    );
    assert_eq!(pieces.concat(), first.content);
    if matches!(cli, Cli::Claude | Cli::Gemini) {
        assert!(pieces.len() > 1, "{cli:?} streams pieces: {pieces:?}");
    }
    assert_eq!(first.finish, Some(Finish::Stop));
    assert!(first.tool_calls.is_empty());
    assert!(first.usage.is_some_and(|u| u.prompt_tokens > 0 && u.completion_tokens > 0));
    let handle = first.resume.clone().expect("a session to carry on");
    assert_eq!(handle.0, format!("{}-session-1", cli.program()));

    messages.push(Message::assistant(first.content.clone()));
    messages.push(Message::user("And the one of Italy?"));
    let (second, _) = send(&provider, &messages, Some(&handle)).await;
    let second = second.unwrap();
    assert_eq!(second.content, format!("Turn 2. Earlier you said: What is the capital? {SECRET}"));
    assert_eq!(second.resume.as_ref(), Some(&handle));

    let calls = fake.calls();
    assert_eq!(calls.len(), 2);
    let flag = resume_flag(cli);
    assert!(!calls[0].argv.iter().any(|a| a == flag), "{:?}", calls[0].argv);
    let at = calls[1].argv.iter().position(|a| a == flag).expect("the resume flag");
    assert_eq!(calls[1].argv.get(at + 1), Some(&handle.0), "{:?}", calls[1].argv);
    assert_eq!(calls[0].stdin, format!("Be brief.\n\nWhat is the capital? {SECRET}"));
    assert_eq!(calls[1].stdin, "And the one of Italy?", "a resumed turn sends the question only");
    assert_no_prompt_in_argv(&fake);
}

#[tokio::test]
async fn claude_carries_on_through_its_session() {
    two_turns_carry_on_through_the_session(Cli::Claude).await;
}

#[tokio::test]
async fn codex_carries_on_through_its_thread() {
    two_turns_carry_on_through_the_session(Cli::Codex).await;
}

#[tokio::test]
async fn gemini_carries_on_through_its_session() {
    two_turns_carry_on_through_the_session(Cli::Gemini).await;
}

#[tokio::test]
async fn opencode_carries_on_through_its_session() {
    two_turns_carry_on_through_the_session(Cli::Opencode).await;
}

#[tokio::test]
async fn a_session_the_cli_no_longer_has_starts_afresh_with_the_conversation() {
    for cli in Cli::ALL {
        let (_dir, fake) = fake(cli, Behaviour::Normal);
        let provider = provider(cli, &fake, Duration::from_secs(20));
        let messages = [
            Message::system("Be brief."),
            Message::user(format!("Remember this: {SECRET}")),
            Message::assistant("Noted."),
            Message::user("What did I ask you to remember?"),
        ];
        let gone = Resume("gone-session".into());
        let (reply, pieces) = send(&provider, &messages, Some(&gone)).await;
        let reply = reply.unwrap_or_else(|e| panic!("{cli:?}: {e}"));
        let expected =
            format!("Hello from fake {}. You said: What did I ask you to remember?", cli.program());
        assert_eq!(reply.content, expected, "{cli:?}");
        assert_eq!(pieces.concat(), expected, "{cli:?}: the refusal showed nothing");
        assert_eq!(reply.resume, Some(Resume(format!("{}-session-2", cli.program()))));

        let calls = fake.calls();
        assert_eq!(calls.len(), 2, "{cli:?}: refused, then sent again");
        assert!(calls[0].argv.iter().any(|a| a == "gone-session"), "{:?}", calls[0].argv);
        assert!(!calls[1].argv.iter().any(|a| a == resume_flag(cli)), "{:?}", calls[1].argv);
        let stdin = &calls[1].stdin;
        assert!(stdin.starts_with("Be brief.\n\n"), "{cli:?}: {stdin}");
        assert!(stdin.contains(&format!("User: Remember this: {SECRET}")), "{cli:?}: {stdin}");
        assert!(stdin.contains("Assistant: Noted."), "{cli:?}: {stdin}");
        assert!(stdin.ends_with("What did I ask you to remember?"), "{cli:?}: {stdin}");
        assert_no_prompt_in_argv(&fake);
    }
}

#[tokio::test]
async fn a_missing_program_is_not_installed() {
    let dir = tempfile::tempdir().unwrap();
    for cli in Cli::ALL {
        let missing = dir.path().join(cli.program());
        let provider = Provider::Cli(Client::new(cli, &missing, "", Duration::from_secs(5)));
        let probed = provider.probe().await;
        assert!(matches!(probed, Err(LlmError::NotInstalled { .. })), "{cli:?}: {probed:?}");
        let messages = [Message::user("hello")];
        let (sent, pieces) = send(&provider, &messages, None).await;
        assert!(matches!(sent, Err(LlmError::NotInstalled { .. })), "{cli:?}: {sent:?}");
        assert!(pieces.is_empty());
    }
    let by_name = Client::new(Cli::Claude, "no-such-cli-stt-test", "", Duration::from_secs(5));
    assert!(matches!(by_name.probe().await, Err(LlmError::NotInstalled { .. })));
}

#[tokio::test]
async fn an_installed_cli_is_found_and_lists_its_models() {
    for cli in Cli::ALL {
        let (_dir, fake) = fake(cli, Behaviour::Normal);
        let provider = provider(cli, &fake, Duration::from_secs(20));
        provider.probe().await.unwrap_or_else(|e| panic!("{cli:?}: {e}"));
        let models = provider.models().await.unwrap();
        match cli {
            Cli::Opencode => assert_eq!(
                models,
                ["anthropic/claude-sonnet-4-5", "openai/gpt-5.4", "opencode/big-pickle"]
            ),
            Cli::Claude => assert_eq!(models, ["sonnet", "opus", "haiku"]),
            Cli::Codex | Cli::Gemini => assert!(!models.is_empty(), "{cli:?}"),
        }
    }
}

#[tokio::test]
async fn a_signed_out_cli_says_not_logged_in() {
    for cli in Cli::ALL {
        let (_dir, fake) = fake(cli, Behaviour::NotLoggedIn);
        let provider = provider(cli, &fake, Duration::from_secs(20));
        let (sent, pieces) = send(&provider, &[Message::user(SECRET)], None).await;
        match sent {
            Err(LlmError::NotLoggedIn { program, why }) => {
                assert_eq!(program, fake.program().to_str().unwrap());
                assert!(!why.is_empty() && why.len() <= 200, "{cli:?}: {why}");
            }
            other => panic!("{cli:?}: {other:?}"),
        }
        assert!(pieces.is_empty(), "{cli:?}: the CLI's complaint is not the answer: {pieces:?}");
        let probed = provider.probe().await;
        if matches!(cli, Cli::Claude | Cli::Codex) {
            assert!(matches!(probed, Err(LlmError::NotLoggedIn { .. })), "{cli:?}: {probed:?}");
        } else {
            assert!(probed.is_ok(), "{cli:?} has no cheap auth check: {probed:?}");
        }
        assert_no_prompt_in_argv(&fake);
    }
}

#[tokio::test]
async fn a_crash_keeps_what_was_said() {
    for cli in Cli::ALL {
        let (_dir, fake) = fake(cli, Behaviour::Crash);
        let provider = provider(cli, &fake, Duration::from_secs(20));
        let (sent, pieces) = send(&provider, &[Message::user("hi")], None).await;
        let error = sent.expect_err("a crash fails");
        assert_eq!(error.partial(), "Hello", "{cli:?}: {error:?}");
        assert!(!error.before_first_token());
        assert_eq!(pieces.concat(), "Hello");
        let LlmError::Cli { why, .. } = &error else { panic!("{cli:?}: {error:?}") };
        assert!(why.contains("exit status 1"), "{cli:?}: {why}");
        assert!(why.contains("the connection dropped"), "{cli:?}: stderr quoted: {why}");
    }
}

#[tokio::test]
async fn a_silent_cli_times_out_and_is_killed_with_its_children() {
    let (_dir, fake) = fake(Cli::Claude, Behaviour::Hang);
    let idle = Duration::from_millis(500);
    let provider = provider(Cli::Claude, &fake, idle);
    let started = Instant::now();
    let (sent, _) = send(&provider, &[Message::user(SECRET)], None).await;
    assert!(matches!(sent, Err(LlmError::Timeout { .. })), "{sent:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    let pid = fake.last_pid().expect("the fake started");
    expect_within("the fake and its sleep to be gone", Duration::from_secs(5), || {
        let left = procs::left_behind(&[pid]);
        if left.is_empty() { Ok(()) } else { Err(format!("{left:?}")) }
    });
    assert_eq!(fake.calls()[0].stdin, SECRET, "the prompt was written to stdin");
}

#[tokio::test]
async fn dropping_a_turn_kills_the_cli() {
    let (_dir, fake) = fake(Cli::Codex, Behaviour::Hang);
    let provider = provider(Cli::Codex, &fake, Duration::from_secs(60));
    let messages = [Message::user("tell me a long story")];
    let request = request(&messages, None);
    let turn = provider.complete(&request, |_| {});
    let started = async {
        while !fake.state().join("calls/1.stdin").exists() || fake.last_pid().is_none() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::select! {
        sent = turn => panic!("the turn ended by itself: {sent:?}"),
        () = started => {}
    }
    // The turn's future is dropped here, as a person's Stop drops it.
    let pid = fake.last_pid().unwrap();
    expect_within("the stopped CLI to be gone", Duration::from_secs(5), || {
        let left = procs::left_behind(&[pid]);
        if left.is_empty() { Ok(()) } else { Err(format!("{left:?}")) }
    });
}

#[tokio::test]
async fn a_reply_without_streaming_comes_whole() {
    let (_dir, fake) = fake(Cli::Claude, Behaviour::Normal);
    let provider = provider(Cli::Claude, &fake, Duration::from_secs(20));
    let messages = [Message::user("hi")];
    let request = Request { stream: false, ..request(&messages, None) };
    let mut pieces = Vec::new();
    let reply = provider.complete(&request, |p| pieces.push(p.to_owned())).await.unwrap();
    assert_eq!(pieces.len(), 1);
    assert_eq!(pieces[0], reply.content);
    assert_eq!(reply.content, "Hello from fake claude. You said: hi");
}
