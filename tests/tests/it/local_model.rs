//! `stt-daemon up` and the local model across real processes: with no provider configured it
//! starts the real llama-server (installed by `scripts/fetch-llm`, which `scripts/setup`
//! runs) with the real small model first, does not wait for it to load, logs it to a private
//! file of its own, and stops it with everything else. It starts none when told not to or
//! when a server already answers, and a model server that keeps failing is given up on
//! while the rest runs on.
//!
//! The daemon runs on a spoken WAV (`--input`), held until the first arm, so no microphone
//! is needed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use stt_testkit::llama::{health, model, server_program as llama_server};
use stt_testkit::procs::{self, child_named, left_behind, up_children};
use stt_testkit::viewer::speak;
use stt_testkit::{DEADLINE, Proc, Sandbox, expect_within};

/// For the model to load on a machine that may be busy with other tests.
const MODEL_DEADLINE: Duration = Duration::from_secs(240);

/// A port nothing listens on (now).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Whether something accepts connections on `127.0.0.1:port`.
fn answers(port: u16) -> bool {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
}

/// Writes the sandbox's config: the local model on `port`, served by `program` (absolute
/// paths: the sandbox's data directory is a temporary one).
fn configure(sandbox: &Sandbox, port: u16, program: &Path, model: &Path) {
    let config = format!(
        "[llm]\nlocal_port = {port}\nlocal_server_program = \"{}\"\nlocal_model = \"{}\"\n",
        program.display(),
        model.display()
    );
    std::fs::write(sandbox.config_file(), config).unwrap();
}

/// A spoken command as a WAV file in the sandbox.
fn wav(sandbox: &Sandbox) -> String {
    speak(sandbox.root(), "lights", "turn on the kitchen lights").to_string_lossy().into_owned()
}

/// `<state dir>/llama-server.log` in the sandbox.
fn model_log(sandbox: &Sandbox) -> PathBuf {
    sandbox.root().join("state/stt/llama-server.log")
}

/// Stops `up` with SIGTERM, and waits until neither it nor any of `children` (their
/// children, their groups) is left.
fn stop(up: &mut Proc, children: &[i32]) {
    let mut pids = vec![up.pid()];
    pids.extend_from_slice(children);
    let status = up.signal_and_wait(Signal::SIGTERM);
    assert!(status.success(), "{status:?}: {}", up.log());
    expect_within("no process of up's left", Duration::from_secs(10), || {
        let left = left_behind(&pids);
        if left.is_empty() { Ok(()) } else { Err(format!("{left:?}")) }
    });
    assert!(up.log().contains("[up] stopped"), "{}", up.log());
}

#[test]
fn up_starts_the_local_model_first_without_waiting_for_it_and_stops_it_with_the_rest() {
    let sandbox = Sandbox::new();
    let (program, model) = (llama_server(), model());
    let port = free_port();
    configure(&sandbox, port, &program, &model);
    let wav = wav(&sandbox);
    let mut up = sandbox.spawn("stt-daemon", &["up", "--input", &wav]);

    // The model loaded: /health answers 503 while it loads, 200 once it is ready.
    let seen = expect_within("llama-server answers GET /health with 200", MODEL_DEADLINE, || {
        assert!(up.is_running(), "up exited: {}", up.log());
        match health(port) {
            Some(200) => Ok(up.log()),
            other => Err(format!("{other:?}\n{}", up.log())),
        }
    });
    // It was started first, and the daemon right after, without waiting for the load.
    let log_file = model_log(&sandbox);
    let decided = format!(
        "[up] starting the local model: {} with '{}' on 127.0.0.1:{port}; its log: {}",
        program.display(),
        model.display(),
        log_file.display()
    );
    let at = |needle: &str| seen.find(needle).unwrap_or_else(|| panic!("{needle:?}:\n{seen}"));
    assert!(at(&decided) < at("[up] started llama-server (pid"), "{seen}");
    assert!(at("[up] started llama-server (pid") < at("[up] started stt-daemon (pid"), "{seen}");

    let (daemon, assistant) = up_children(&sandbox, &mut up);
    let server = child_named(up.pid(), "llama-server").unwrap_or_else(|| panic!("{}", up.log()));
    // In a process group of its own, like the daemon and the assistant.
    assert_eq!(procs::info(server.pid).unwrap().pgid, server.pid);
    let listens = format!(
        "[up] llama-server listens on 127.0.0.1:{port} (pid {}) and loads the model",
        server.pid
    );
    assert!(up.log().contains(&listens), "{}", up.log());

    // Its lines went to its own private log, never to up's output.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&log_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{}", log_file.display());
    let written = std::fs::read_to_string(&log_file).unwrap();
    assert!(written.contains(&format!("[up] started llama-server (pid {})", server.pid)));
    assert!(written.contains("[model] "), "{written}");
    assert!(written.contains(&format!("listening on http://127.0.0.1:{port}")), "{written}");
    assert!(!up.log().contains("[model] "), "{}", up.log());

    stop(&mut up, &[daemon, assistant, server.pid]);
    assert!(!answers(port), "the model's port still answers after up stopped");
}

/// Starts `up` with `env`, waits for the daemon and the assistant, checks that no
/// llama-server was started, stops it, and returns its log.
fn up_without_a_model(sandbox: &Sandbox, env: &[(&str, &str)]) -> String {
    let wav = wav(sandbox);
    let mut up = sandbox.spawn_with_env("stt-daemon", &["up", "--input", &wav], env);
    let (daemon, assistant) = up_children(sandbox, &mut up);
    assert_eq!(child_named(up.pid(), "llama-server"), None, "{}", up.log());
    assert!(!up.log().contains("[up] started llama-server"), "{}", up.log());
    stop(&mut up, &[daemon, assistant]);
    assert!(!model_log(sandbox).exists(), "a llama-server log was written");
    up.log()
}

#[test]
fn stt_run_llm_0_starts_no_model() {
    let sandbox = Sandbox::new();
    let port = free_port();
    configure(&sandbox, port, &llama_server(), &model());
    let log = up_without_a_model(&sandbox, &[("STT_RUN_LLM", "0")]);
    assert!(log.contains("[up] not starting the local model: STT_RUN_LLM=0\n"), "{log}");
    assert!(!answers(port), "something answers on the model's port");
}

#[test]
fn a_server_already_answering_on_the_port_is_used_and_not_replaced() {
    let sandbox = Sandbox::new();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    configure(&sandbox, port, &llama_server(), &model());
    let log = up_without_a_model(&sandbox, &[]);
    let expected = format!("[up] a model server already answers on 127.0.0.1:{port}; using it\n");
    assert!(log.contains(&expected), "{log}");
}

#[test]
fn a_missing_model_is_said_with_its_fix_and_the_rest_runs() {
    let sandbox = Sandbox::new();
    let port = free_port();
    let missing = sandbox.root().join("no-such-model.gguf");
    configure(&sandbox, port, &llama_server(), &missing);
    let log = up_without_a_model(&sandbox, &[]);
    let expected = format!(
        "[up] not starting the local model: no model at '{}' ([llm].local_model): run \
         scripts/fetch-llm, which builds llama-server and installs the model\n",
        missing.display()
    );
    assert!(log.contains(&expected), "{log}");
}

#[test]
fn a_model_server_that_keeps_failing_is_given_up_on_and_the_rest_runs_on() {
    let sandbox = Sandbox::new();
    let port = free_port();
    // A llama-server that fails at once, saying why on both of its outputs.
    let program = sandbox.root().join("failing-llama-server");
    stt_testkit::write_program(
        &program,
        "#!/bin/sh\necho \"starting $*\"\necho 'error: failed to load model' >&2\nexit 1\n",
    );
    let model = sandbox.root().join("model.gguf");
    std::fs::write(&model, "").unwrap();
    configure(&sandbox, port, &program, &model);
    let wav = wav(&sandbox);
    let mut up = sandbox.spawn("stt-daemon", &["up", "--input", &wav]);

    let log_file = model_log(&sandbox);
    let log = expect_within("up gives up on llama-server", DEADLINE, || {
        let log = up.log();
        if log.contains("stt goes on without the local model") { Ok(log) } else { Err(log) }
    });
    // Its last lines, from stdout and stderr (in either order), each on a line of up's.
    let message = log.split("[up] giving up on llama-server: ").nth(1).unwrap();
    let said = [
        "it failed 3 times in a row before it answered on its socket; the last time it exited \
         with status 1. Its last lines on stderr:\n"
            .to_owned(),
        format!(
            "\n[up]     starting -m {} --host 127.0.0.1 --port {port} -c 8192 -np 2 --jinja -t {cpus} \
             -tb {cpus} --poll 0 --cache-ram 256 --slot-save-path {} --api-key-file {}\n",
            model.display(),
            sandbox.root().join(".cache/stt/llama-slots").display(),
            sandbox.runtime_dir().join("llama-server.key").display(),
            cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        ),
        "\n[up]     error: failed to load model\n".to_owned(),
        format!(
            "\n[up] stt goes on without the local model; llama-server's whole log is in {}.\n",
            log_file.display()
        ),
    ];
    assert!(message.starts_with(&said[0]), "{log}");
    for needle in &said[1..] {
        assert!(message.contains(needle.as_str()), "{needle:?} not in:\n{log}");
    }
    assert_eq!(log.matches("[up] started llama-server").count(), 3, "{log}");

    // The rest runs on.
    let (daemon, assistant) = up_children(&sandbox, &mut up);
    assert!(up.is_running(), "{}", up.log());
    let written = std::fs::read_to_string(&log_file).unwrap();
    assert_eq!(written.matches("[model] error: failed to load model").count(), 3, "{written}");
    stop(&mut up, &[daemon, assistant]);
}

/// The installed model, cut short as a stopped download or a full disk leaves it: the real
/// llama-server cannot load it, and `up` names the file and the fix, and goes on without it.
#[test]
fn a_model_file_cut_short_is_named_with_the_fix_and_the_rest_runs() {
    let sandbox = Sandbox::new();
    let port = free_port();
    let model = sandbox.root().join("cut-short.gguf");
    let whole = std::fs::File::open(stt_testkit::llama::model()).unwrap();
    let mut cut = std::fs::File::create(&model).unwrap();
    std::io::copy(&mut std::io::Read::take(whole, 3 << 20), &mut cut).unwrap();
    configure(&sandbox, port, &llama_server(), &model);
    let wav = wav(&sandbox);
    let mut up = sandbox.spawn("stt-daemon", &["up", "--input", &wav]);

    let log = expect_within("up gives up on llama-server", MODEL_DEADLINE, || {
        let log = up.log();
        if log.contains("stt goes on without the local model") { Ok(log) } else { Err(log) }
    });
    let fix = format!(
        "[up] llama-server could not load '{}': the file is damaged or cut short. Run \
         scripts/fetch-llm, which builds llama-server and installs the model, or set \
         [llm].local_model to another model.\n",
        model.display()
    );
    assert!(log.contains(&fix), "{fix:?} not in:\n{log}");
    let (daemon, assistant) = up_children(&sandbox, &mut up);
    assert!(up.is_running(), "{}", up.log());
    stop(&mut up, &[daemon, assistant]);
}

#[test]
fn a_killed_model_server_is_restarted_and_none_outlives_a_killed_up() {
    let sandbox = Sandbox::new();
    let port = free_port();
    configure(&sandbox, port, &llama_server(), &model());
    let wav = wav(&sandbox);
    let mut up = sandbox.spawn("stt-daemon", &["up", "--input", &wav]);
    let (daemon, assistant) = up_children(&sandbox, &mut up);
    let first = child_named(up.pid(), "llama-server").unwrap_or_else(|| panic!("{}", up.log()));

    kill(Pid::from_raw(first.pid), Signal::SIGKILL).unwrap();
    let second = expect_within("a new llama-server listens", DEADLINE, || {
        let child = child_named(up.pid(), "llama-server").filter(|c| c.pid != first.pid);
        let log = up.log();
        match child {
            Some(c)
                if log.contains(&format!(
                    "llama-server listens on 127.0.0.1:{port} (pid {})",
                    c.pid
                )) =>
            {
                Ok(c.pid)
            }
            other => Err(format!("{other:?}\n{log}")),
        }
    });
    assert!(up.log().contains("[up] llama-server was killed by SIGKILL; restarting it in 250 ms"));
    assert!(up.is_running(), "{}", up.log());

    // SIGKILL leaves `up` no time to stop anything: the kernel's death signal does it.
    let pid = up.pid();
    up.signal_and_wait(Signal::SIGKILL);
    expect_within("no process of up's left", Duration::from_secs(10), || {
        let left = left_behind(&[pid, daemon, assistant, second]);
        if left.is_empty() { Ok(()) } else { Err(format!("{left:?}")) }
    });
    // A killed server's socket closes as the kernel finishes tearing it down (its 1 GB model
    // unmapped first, slowly on a loaded machine); one left running would answer throughout.
    expect_within("the model's port closes after up was killed", Duration::from_secs(10), || {
        if answers(port) { Err(format!("port {port} still answers")) } else { Ok(()) }
    });
}

/// The whole path with nothing configured but where the model is: `up` starts llama-server,
/// the assistant finds it by itself (loading, then live), and a typed turn is answered by
/// the real model.
#[test]
fn up_runs_the_local_model_the_assistant_finds_it_and_it_answers_a_turn() {
    use stt_proto::{AssistantEvent, ChatRole};
    use stt_testkit::viewer::{events, status, watch_attached};

    let sandbox = Sandbox::new();
    let port = free_port();
    configure(&sandbox, port, &llama_server(), &model());
    // No --input: the daemon's microphone retries, its speech recognition is up.
    let mut up = sandbox.spawn("stt-daemon", &["up"]);
    let (daemon, assistant) = up_children(&sandbox, &mut up);
    let server = child_named(up.pid(), "llama-server").unwrap_or_else(|| panic!("{}", up.log()));
    // Below whisper's priority, so speech stays real-time while it thinks.
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", server.pid)).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let nice: i32 = after_name.split(' ').nth(16).unwrap().parse().unwrap();
    assert_eq!(nice, 10, "{stat}");
    // `up` says when the model has loaded and read the command prompt.
    expect_within("up says the local model is ready", MODEL_DEADLINE, || {
        let log = up.log();
        if log.contains("[up] the local model is ready (") { Ok(()) } else { Err(log) }
    });
    let seen = watch_attached(&sandbox, DEADLINE);
    let out = sandbox.run("stt-ctl", &["chat-send", "Say hello."]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let answer = expect_within("the local model answers", MODEL_DEADLINE, || {
        let all = events(&seen);
        all.iter()
            .find_map(|e| match e {
                AssistantEvent::ChatMessage(m) if m.role == ChatRole::Assistant && !m.partial => {
                    Some(m.text.clone())
                }
                AssistantEvent::ChatMessage(m) if m.role == ChatRole::Error => {
                    panic!("{}\n{}", m.text, up.log())
                }
                _ => None,
            })
            .ok_or_else(|| format!("{all:?}"))
    });
    assert!(!answer.trim().is_empty());
    let s = status(&sandbox);
    assert_eq!(s["llm_provider"], "llamacpp", "{s}");
    assert_eq!(s["chat"]["endpoint"], format!("127.0.0.1:{port}"), "{s}");
    assert_eq!(s["chat"]["loading"], false, "{s}");
    // The assistant has the key `up` gave the server; a page in a browser, or any request
    // without it, is refused: the model, the slots and the props, not the health check.
    let key_file = sandbox.runtime_dir().join("llama-server.key");
    let mode = std::fs::metadata(&key_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{}", key_file.display());
    let body = r#"{"messages":[{"role":"user","content":"hi"}],"max_tokens":1}"#;
    let origin = "Origin: http://evil.example\r\n";
    assert_eq!(http(port, "POST", "/v1/chat/completions", origin, body), 401);
    assert_eq!(http(port, "GET", "/slots", "", ""), 401);
    assert_eq!(http(port, "GET", "/health", "", ""), 200);
    let key = std::fs::read_to_string(&key_file).unwrap();
    let auth = format!("Authorization: Bearer {}\r\n", key.trim());
    assert_eq!(http(port, "POST", "/v1/chat/completions", &auth, body), 200, "the key opens it");
    stop(&mut up, &[daemon, assistant, server.pid]);
}

/// The status code of one HTTP/1.1 request to the local server (`headers`: more header
/// lines, each ending in CRLF).
fn http(port: u16, method: &str, path: &str, headers: &str, body: &str) -> u16 {
    use std::io::{Read, Write};
    let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
    conn.set_read_timeout(Some(MODEL_DEADLINE)).unwrap();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n{headers}\r\n{body}",
        body.len()
    );
    conn.write_all(request.as_bytes()).unwrap();
    let mut head = [0_u8; 12];
    conn.read_exact(&mut head).unwrap();
    String::from_utf8_lossy(&head[9..12]).parse().unwrap()
}

/// The command prompt read after the first start is saved (a private file, keyed by the
/// model and the prompt) and restored by the next `up`, not read again.
#[test]
fn the_command_prompt_read_once_is_restored_after_up_starts_again() {
    use std::os::unix::fs::PermissionsExt;

    let sandbox = Sandbox::new();
    let port = free_port();
    configure(&sandbox, port, &llama_server(), &model());
    let wav = wav(&sandbox);
    let slots = sandbox.root().join(".cache/stt/llama-slots");
    let saved = || -> Vec<PathBuf> {
        let entries = std::fs::read_dir(&slots).map(|d| d.flatten().map(|e| e.path()).collect());
        entries.unwrap_or_default()
    };
    let ready = |up: &Proc, restored: bool| {
        expect_within("up says the local model is ready", MODEL_DEADLINE, || {
            let log = up.log();
            let said = log.contains("[up] the local model is ready (");
            let how = log.contains("the command prompt in its cache (restored)") == restored;
            if said && how && !saved().is_empty() { Ok(()) } else { Err(log) }
        });
    };

    let mut up = sandbox.spawn("stt-daemon", &["up", "--input", &wav]);
    let (daemon, assistant) = up_children(&sandbox, &mut up);
    let server = child_named(up.pid(), "llama-server").unwrap_or_else(|| panic!("{}", up.log()));
    ready(&up, false);
    let files = saved();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("command-") && name.ends_with(".bin"), "{name}");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!((mode(&slots), mode(&files[0])), (0o700, 0o600));
    stop(&mut up, &[daemon, assistant, server.pid]);

    let mut up = sandbox.spawn("stt-daemon", &["up", "--input", &wav]);
    let (daemon, assistant) = up_children(&sandbox, &mut up);
    let server = child_named(up.pid(), "llama-server").unwrap_or_else(|| panic!("{}", up.log()));
    ready(&up, true);
    assert_eq!(saved(), files, "the same file, restored, nothing more");
    stop(&mut up, &[daemon, assistant, server.pid]);
}
