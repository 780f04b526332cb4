//! Fake subscription CLIs (claude, codex, gemini, opencode) on a temporary `PATH`: small
//! scripts that print the real tools' stream formats, for the CLI providers' tests.
//!
//! [`install`] writes an executable bash script named for the CLI into a directory (put it
//! first on `PATH`, or run it by its path), with a state directory beside it,
//! `<dir>/<cli>.state/`. Each run reads its prompt from stdin, like the real tools, and
//! records its argv (one argument a line) and its stdin as `calls/<n>.argv` and
//! `calls/<n>.stdin` there, and the folder it ran in as `calls/<n>.cwd` ([`FakeCli::calls`]),
//! and its pid ([`FakeCli::last_pid`]).
//!
//! A fake keeps real sessions: a run without the CLI's resume flag mints an id and answers
//! "Hello from fake <cli>. You said: <the prompt's last line>"; a run with the flag and a known
//! id answers "Turn <k>. Earlier you said: <the first prompt's last line>", which it can only
//! know from the session; an unknown id fails as the real tool does. Text comes in several
//! pieces where the tool's format streams pieces (claude, gemini), whole otherwise.
//!
//! Also like the real tools: `claude auth status`, `codex login status` and `opencode
//! models`.

use std::path::{Path, PathBuf};

/// How a fake behaves on a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// Answers, keeping the session.
    Normal,
    /// Says what the real tool says when signed out, and fails (its auth check fails too).
    NotLoggedIn,
    /// Starts the answer ("Hello"), then dies with exit status 1.
    Crash,
    /// Reads the prompt, then says nothing, forever (a child `sleep` holds its group). Its
    /// auth check and model list, which get no prompt, still answer.
    Hang,
}

impl Behaviour {
    fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "normal",
            Self::NotLoggedIn => "not_logged_in",
            Self::Crash => "crash",
            Self::Hang => "hang",
        }
    }
}

/// An installed fake.
#[derive(Debug, Clone)]
pub struct FakeCli {
    program: PathBuf,
    state: PathBuf,
}

/// One run of a fake: what it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub argv: Vec<String>,
    pub stdin: String,
    /// The folder it ran in.
    pub cwd: String,
}

impl FakeCli {
    /// The script's path.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// Where it keeps its calls and sessions.
    pub fn state(&self) -> &Path {
        &self.state
    }

    /// Every run so far, oldest first.
    pub fn calls(&self) -> Vec<Call> {
        let read = |n: usize, ext: &str| {
            std::fs::read_to_string(self.state.join(format!("calls/{n}.{ext}"))).ok()
        };
        (1..)
            .map_while(|n| {
                let argv = read(n, "argv")?;
                Some(Call {
                    argv: argv.lines().map(str::to_owned).collect(),
                    stdin: read(n, "stdin").unwrap_or_default(),
                    cwd: read(n, "cwd").unwrap_or_default().trim_end().to_owned(),
                })
            })
            .collect()
    }

    /// The pid of the newest run, once it has started.
    pub fn last_pid(&self) -> Option<i32> {
        std::fs::read_to_string(self.state.join("pid")).ok()?.trim().parse().ok()
    }
}

/// Writes a fake `cli` ("claude", "codex", "gemini" or "opencode") into `dir`, behaving as
/// `behaviour`. Installing again changes the behaviour and keeps the calls and sessions.
pub fn install(dir: &Path, cli: &str, behaviour: Behaviour) -> FakeCli {
    let body = match cli {
        "claude" => CLAUDE,
        "codex" => CODEX,
        "gemini" => GEMINI,
        "opencode" => OPENCODE,
        other => panic!("no fake for the CLI {other:?}"),
    };
    let program = dir.join(cli);
    let state = dir.join(format!("{cli}.state"));
    let head = format!(
        "#!/usr/bin/env bash\n\
         # A fake `{cli}` for stt's tests: see stt-testkit's fake_cli.rs.\n\
         cli={cli}\n\
         state='{state}'\n\
         behaviour={behaviour}\n",
        state = state.display(),
        behaviour = behaviour.as_str(),
    );
    crate::write_program(&program, &format!("{head}{COMMON}{body}"));
    FakeCli { program, state }
}

/// Every fake's start: record the run, read the prompt, and the helpers.
const COMMON: &str = r#"
mkdir -p "$state/calls" "$state/sessions"
n=$(( $(cat "$state/count" 2>/dev/null || echo 0) + 1 ))
echo "$n" >"$state/count"
echo "$$" >"$state/pid"
printf '%s\n' "$@" >"$state/calls/$n.argv"
pwd >"$state/calls/$n.cwd"
input=$(cat)
printf '%s' "$input" >"$state/calls/$n.stdin"
said=${input##*$'\n'}

# The inside of a JSON string.
esc() {
  local s=$1
  s=${s//\\/\\\\}; s=${s//\"/\\\"}; s=${s//$'\n'/\\n}; s=${s//$'\r'/\\r}; s=${s//$'\t'/\\t}
  printf '%s' "$s"
}

# Sets $id and the answer's $pieces: a known session ($resume) carried on, an unknown one
# refused (each fake's `refuse`), or a new one.
session() {
  if [ -n "$resume" ]; then
    [ -f "$state/sessions/$resume" ] || refuse "$resume"
    id=$resume
    pieces=("Turn $(( $(wc -l <"$state/sessions/$id") + 1 ))."
            " Earlier you said: $(head -n 1 "$state/sessions/$id")")
  else
    id="$cli-session-$n"
    pieces=("Hello" " from fake $cli." " You said: $said")
  fi
  printf '%s\n' "$said" >>"$state/sessions/$id"
  answer=$(printf '%s' "${pieces[@]}")
}

# Hang: a child holds the group, as a CLI's own tools would.
if [ "$behaviour" = hang ] && [ -n "$input" ]; then
  sleep 600 &
  wait
  exit 0
fi
"#;

const CLAUDE: &str = r#"
if [ "$1 $2" = "auth status" ]; then
  if [ "$behaviour" = not_logged_in ]; then
    echo '{"loggedIn": false, "authMethod": "none", "apiProvider": "firstParty"}'
    exit 1
  fi
  echo '{"loggedIn": true, "authMethod": "claude.ai", "apiProvider": "firstParty"}'
  exit 0
fi
resume= model=claude-sonnet-4-5 partial=
while [ $# -gt 0 ]; do
  case $1 in
    --resume|-r) resume=$2; shift ;;
    --model) model=$2; shift ;;
    --include-partial-messages) partial=1 ;;
  esac
  shift
done
refuse() { echo "No conversation found with session ID: $1" >&2; exit 1; }

if [ "$behaviour" = not_logged_in ]; then
  id="signed-out-$n"
  printf '{"type":"system","subtype":"init","session_id":"%s","model":"%s"}\n' "$id" "$model"
  printf '{"type":"assistant","message":{"model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"Not logged in · Please run /login"}]},"session_id":"%s","error":"authentication_failed"}\n' "$id"
  printf '{"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login","session_id":"%s"}\n' "$id"
  exit 1
fi
session
printf '{"type":"system","subtype":"init","session_id":"%s","model":"%s"}\n' "$id" "$model"
[ -n "$partial" ] && printf '{"type":"stream_event","event":{"type":"message_start","message":{"role":"assistant","content":[]}},"session_id":"%s"}\n' "$id"
for piece in "${pieces[@]}"; do
  [ -n "$partial" ] && printf '{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"%s"}},"session_id":"%s"}\n' "$(esc "$piece")" "$id"
  if [ "$behaviour" = crash ]; then echo "fake claude: the connection dropped" >&2; exit 1; fi
done
printf '{"type":"assistant","message":{"model":"%s","role":"assistant","content":[{"type":"text","text":"%s"}]},"session_id":"%s"}\n' "$model" "$(esc "$answer")" "$id"
printf '{"type":"result","subtype":"success","is_error":false,"result":"%s","session_id":"%s","usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":3,"output_tokens":7}}\n' "$(esc "$answer")" "$id"
"#;

const CODEX: &str = r#"
if [ "$1 $2" = "login status" ]; then
  if [ "$behaviour" = not_logged_in ]; then echo "Not logged in" >&2; exit 1; fi
  echo "Logged in using ChatGPT" >&2
  exit 0
fi
resume=
while [ $# -gt 0 ]; do
  case $1 in
    resume) resume=$2; shift ;;
    --model|-m|--sandbox|-s) shift ;;
  esac
  shift
done
refuse() {
  echo "Error: thread/resume: thread/resume failed: no rollout found for thread id $1 (code -32600)" >&2
  exit 1
}

if [ "$behaviour" = not_logged_in ]; then
  printf '{"type":"thread.started","thread_id":"signed-out-%s"}\n{"type":"turn.started"}\n' "$n"
  echo '{"type":"error","message":"Reconnecting... 1/5 (unexpected status 401 Unauthorized: Missing bearer or basic authentication in header)"}'
  echo '{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized: Missing bearer or basic authentication in header, url: https://chatgpt.com/backend-api/codex/responses"}}'
  exit 1
fi
session
printf '{"type":"thread.started","thread_id":"%s"}\n{"type":"turn.started"}\n' "$id"
echo '{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Answering**"}}'
if [ "$behaviour" = crash ]; then
  printf '{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"%s"}}\n' "$(esc "${pieces[0]}")"
  echo "fake codex: the connection dropped" >&2
  exit 1
fi
printf '{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"%s"}}\n' "$(esc "$answer")"
echo '{"type":"turn.completed","usage":{"input_tokens":20,"cached_input_tokens":5,"output_tokens":9}}'
"#;

const GEMINI: &str = r#"
resume= model=gemini-2.5-pro
while [ $# -gt 0 ]; do
  case $1 in
    --resume|-r) resume=$2; shift ;;
    --model|-m) model=$2; shift ;;
  esac
  shift
done
refuse() {
  echo "Error resuming session: Invalid session identifier \"$1\"." >&2
  echo "  Use --list-sessions to see available sessions, then use --resume {number}, --resume {uuid}, or --resume latest." >&2
  exit 42
}
at='"timestamp":"2026-05-01T10:00:00.000Z"'

if [ "$behaviour" = not_logged_in ]; then
  echo "Please set an Auth method in your $HOME/.gemini/settings.json or specify one of the following environment variables before running: GEMINI_API_KEY, GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_GCA" >&2
  exit 41
fi
session
printf '{"type":"init",%s,"session_id":"%s","model":"%s"}\n' "$at" "$id" "$model"
printf '{"type":"message",%s,"role":"user","content":"%s"}\n' "$at" "$(esc "$input")"
for piece in "${pieces[@]}"; do
  printf '{"type":"message",%s,"role":"assistant","content":"%s","delta":true}\n' "$at" "$(esc "$piece")"
  if [ "$behaviour" = crash ]; then echo "fake gemini: the connection dropped" >&2; exit 1; fi
done
printf '{"type":"result",%s,"status":"success","stats":{"total_tokens":30,"input_tokens":20,"output_tokens":10,"cached":4,"input":16,"duration_ms":5,"tool_calls":0}}\n' "$at"
"#;

const OPENCODE: &str = r#"
if [ "$1" = models ]; then
  printf 'anthropic/claude-sonnet-4-5\nopenai/gpt-5.4\nopencode/big-pickle\n'
  exit 0
fi
resume=
while [ $# -gt 0 ]; do
  case $1 in
    --session|-s) resume=$2; shift ;;
    --model|-m) shift ;;
  esac
  shift
done
refuse() { echo "Error: Session not found" >&2; exit 1; }

if [ "$behaviour" = not_logged_in ]; then
  printf '{"type":"error","timestamp":1,"sessionID":"ses_out%s","error":{"name":"ProviderAuthError","data":{"providerID":"anthropic","message":"No credentials for anthropic: run `opencode auth login`"}}}\n' "$n"
  exit 1
fi
session
at="\"timestamp\":1778479990756,\"sessionID\":\"$id\""
printf '{"type":"step_start",%s,"part":{"id":"prt_1","sessionID":"%s","messageID":"msg_1","type":"step-start"}}\n' "$at" "$id"
text=$answer
[ "$behaviour" = crash ] && text=${pieces[0]}
printf '{"type":"text",%s,"part":{"id":"prt_2","sessionID":"%s","messageID":"msg_1","type":"text","text":"%s","time":{"start":1,"end":2}}}\n' "$at" "$id" "$(esc "$text")"
if [ "$behaviour" = crash ]; then echo "fake opencode: the connection dropped" >&2; exit 1; fi
printf '{"type":"step_finish",%s,"part":{"id":"prt_3","sessionID":"%s","messageID":"msg_1","type":"step-finish","reason":"stop","tokens":{"input":10,"output":6,"reasoning":0,"cache":{"read":2,"write":0}},"cost":0}}\n' "$at" "$id"
"#;
