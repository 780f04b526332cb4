//! The LLM lane: jobs that talk to the model, one at a time (the loop's inference queue sees
//! to that). A job takes a snapshot of what it needs (the text, the conversation so far) and
//! reports back everything a person should see, every action to audit and the conversation
//! it leaves; it holds no shared state. [`spawn`] starts one and returns its [`Handle`],
//! whose cancellation stops it at its next await (a tool's process is killed with it).
//!
//! - [`command`]: a command through the tool loop;
//! - [`chat`]: a chat turn, streamed;
//! - [`compact`]: keeping the conversation within the model's window;
//! - [`dream`]: memory's consolidation, while nobody needs the model;
//! - [`tree`]: chat's conversation from the memory tree, and the tree's summaries;
//! - [`proactive`]: the assistant speaking up on its own when it wakes;
//! - [`triage`]: the tasks, dates, people and decision in what was just said;
//! - [`plan`]: a task broken down into a plan, by a request of its own;
//! - [`sentences`]: what is kept of a reply cut off or looping.
//!
//! Which job runs when is the queue's ([`crate::queue`]), by its kind ([`crate::kind`]).

pub mod chat;
pub mod command;
pub mod compact;
pub mod dream;
pub mod plan;
pub mod proactive;
pub mod sentences;
pub mod tree;
pub mod triage;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, Span};

use stt_llm::registry::{self, Id};
use stt_llm::{LlmError, Message, Provider, Request};
use stt_proto::{AssistantEvent, ErrorCode, ErrorMsg};
use stt_tools::{ActionRecord, Registry};

use crate::kind::JobKind;
use crate::lane::Sink;
use crate::memory::{self, Episode, Memory};
use crate::turn::ChatTurn;

/// The `[assistant]` settings jobs use.
#[derive(Debug, Clone)]
pub struct Settings {
    pub command_system_prompt: String,
    pub chat_system_prompt: String,
    pub max_tool_iterations: u32,
    pub confirmation_timeout: Duration,
    pub max_tokens: u32,
    /// `[assistant].command_answer_max_tokens`: a command's answer once its tools have run.
    pub command_answer_max_tokens: u32,
    pub temperature: f64,
    /// `[llm].stream`: ask for replies as they are generated (chat turns and commands).
    pub stream: bool,
    /// Token budget for a chat request: `max_context_tokens - max_tokens - margin`.
    pub prompt_budget: u32,
    /// Compact when a request reaches this share of the budget.
    pub compaction_trigger_ratio: f64,
    /// Turns kept verbatim by a compaction.
    pub compaction_keep_turns: u32,
    pub compaction_max_tokens: u32,
    pub compaction_system_prompt: String,
    /// Turns dropped at a time when summarizing fails.
    pub trim_block_turns: u32,
    /// The model may schedule its own wake-ups (`[planner].proactive`, memory on): commands
    /// about plans are offered the wake tools ([`crate::wake::Tool`]).
    pub proactive: bool,
}

/// What a model job runs with: the model, the tools, the settings, memory. Read-only, cheap
/// to clone: the loop hands each job its own.
#[derive(Debug, Clone)]
pub struct JobEnv {
    /// The provider in use; `None` when there is none.
    pub client: Option<Provider>,
    /// With `[llm].failover`: the next live provider, for a request whose provider fails
    /// before its first word (one that runs tools, for commands).
    pub fallback: Option<(Id, Provider)>,
    /// What to tell a person when there is none (what was tried and how to get one).
    pub missing: String,
    /// The provider registry and which of its providers `client` is, to word failures
    /// with their fix; `None` when `[llm].enabled` is false.
    pub providers: Option<(registry::Registry, Id)>,
    /// The tools a command may call (memory's come from `memory`).
    pub tools: Arc<Registry>,
    pub settings: Arc<Settings>,
    /// Long-term memory; `None` when `[memory].enabled` is false.
    pub memory: Option<Memory>,
    /// The chat's system prompt as its session has it (`/system`); `None`: the config's.
    /// Chat turns and the tree's summaries share it (and so the server's cached prefix).
    pub chat_system: Option<String>,
}

impl JobEnv {
    /// The system prompt chat turns and the tree's summaries start with.
    pub fn chat_system(&self) -> &str {
        self.chat_system.as_deref().unwrap_or(&self.settings.chat_system_prompt)
    }

    /// `e` in words that name the fix for the provider in use.
    pub fn explain(&self, e: &LlmError) -> String {
        match &self.providers {
            Some((registry, id)) => {
                let model = self.client.as_ref().map_or("", Provider::model);
                registry.explain(*id, model, e)
            }
            None => e.to_string(),
        }
    }
}

/// The chat conversation: a rolling summary of what was compacted, and the turns since.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Chat {
    pub summary: Option<String>,
    pub turns: Vec<Message>,
}

impl Chat {
    /// The messages of a request: the system prompt, the summary as a second system message
    /// (so the prefix stays stable between compactions), then the turns.
    pub fn messages(&self, system: &str) -> Vec<Message> {
        let mut messages = vec![Message::system(system)];
        if let Some(summary) = &self.summary {
            messages
                .push(Message::system(format!("Summary of the conversation so far:\n{summary}")));
        }
        messages.extend(self.turns.iter().cloned());
        messages
    }

    /// Estimated tokens of the request these messages make.
    pub fn tokens(&self, system: &str) -> usize {
        self.messages(system).iter().map(|m| estimate_tokens(&m.content)).sum()
    }
}

/// A request of background work that wants one answer, no tools and no streaming, as
/// repeatable as the model allows (temperature 0), in the slot chat's background work uses:
/// triage's extraction and the planner's plans.
pub fn one_answer<'a>(messages: &'a [Message], max_tokens: u32) -> Request<'a> {
    Request {
        messages,
        tools: &[],
        stream: false,
        max_tokens,
        temperature: 0.0,
        resume: None,
        slot: Some(SLOT_OTHER),
    }
}

/// The JSON object a reply holds: from its first `{` to its last `}` (so a code fence or a
/// sentence around it does no harm), or, in words the model is told, that there is none.
pub fn json_object(reply: &str) -> Result<&str, String> {
    match (reply.find('{'), reply.rfind('}')) {
        (Some(from), Some(to)) if from < to => Ok(&reply[from..=to]),
        _ => Err("there is no JSON object in it".into()),
    }
}

/// A rough token count: about four characters per token, plus a few per message.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4) + 4
}

/// What a job does.
#[derive(Debug, Clone, PartialEq)]
pub enum Work {
    /// Run a command through the tool loop.
    Command { text: String, edited: bool, episode: Episode },
    /// Send a chat turn, with the conversation as it stands and the provider's resume
    /// handle.
    Chat { turn: ChatTurn, conversation: Chat, resume: Option<String>, episode: Episode },
    /// Consolidate memory (`trigger`: why), in at most `max_steps` requests.
    Dream { trigger: String, max_steps: u32 },
    /// Write the memory tree's next summary, if one is due.
    Tree,
    /// Extract the tasks, dates, people and decision of a triage window.
    Triage(Box<triage::Extraction>),
    /// A proactive turn: remind the user of what is due.
    Proactive(proactive::Wakeup),
}

impl Work {
    pub fn kind(&self) -> JobKind {
        match self {
            Work::Command { .. } => JobKind::Command,
            Work::Chat { .. } => JobKind::Chat,
            Work::Dream { .. } => JobKind::Dream,
            Work::Tree => JobKind::Tree,
            Work::Triage(_) => JobKind::Triage,
            Work::Proactive(_) => JobKind::Proactive,
        }
    }
}

/// What a job tells the loop, in the order it happens.
#[derive(Debug)]
pub enum Report {
    /// An event for every subscriber, as it is (tool calls and results, errors).
    Publish(AssistantEvent),
    /// The job's reply line: streamed pieces (`partial`), then the whole text (`stopped`
    /// when it was cut off before it was finished).
    Reply { text: String, partial: bool, stopped: bool },
    /// A chat turn failed: the text, naming the fix, for the conversation pane.
    Failed(String),
    /// What the request cost.
    Usage(stt_llm::Usage),
    /// The provider's handle on its copy of the conversation, for the next turn.
    Resume(String),
    /// A note line of its own (the context was compacted or trimmed).
    Note(String),
    /// Whether the model answered the last request.
    Reachable(bool),
    /// A tool call waits for a person's yes or no, sent on `answer`.
    Confirm { call_id: String, answer: oneshot::Sender<bool> },
    /// The call stopped waiting (answered, or timed out as no).
    ConfirmOver { call_id: String },
    /// The `set_timer` tool asked for a timer.
    Timer { after: Duration, label: String },
    /// Memory reminded the model of something (a hint, an intention): a note for each.
    Hinted(Vec<String>),
    /// The `dream_now` tool asked for a dream.
    DreamNow,
    /// A wake tool asked for a wake-up or a quiet.
    Wake(crate::wake::Asked),
    /// A proactive turn's reminder, for the conversation (and the voice).
    Reminder(String),
    /// A tree job is over: whether it wrote a summary (then another may be due).
    TreeMore(bool),
    /// A triage window's extraction: what it found, or why it failed (naming the fix).
    Extracted(Box<triage::Extraction>, Result<stt_proto::TriageContent, String>),
    /// A tool call to write to the audit log.
    Audit(Box<ActionRecord>),
    /// The conversation as the job leaves it (after compaction, then with the answer).
    Conversation(Chat),
    /// The job is over; nothing comes after this.
    Finished(End),
}

/// How a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Done,
    /// Its handle was cancelled.
    Cancelled,
    /// It panicked (a bug); the loop goes on.
    Panicked,
}

/// The loop's hold on a running job.
#[derive(Debug)]
pub struct Handle {
    /// The `clear` epoch the job started in.
    pub epoch: u64,
    pub kind: JobKind,
    cancel: CancellationToken,
}

impl Handle {
    pub fn is(&self, kind: JobKind) -> bool {
        self.kind == kind
    }

    /// Stops the job at its next await; it then reports [`End::Cancelled`].
    pub fn cancel(&self) {
        self.cancel.cancel();
    }
}

/// Starts `work` in `epoch`, logging in `span`; its reports go to `out`, ending with
/// [`Report::Finished`].
pub fn spawn(env: &JobEnv, work: Work, epoch: u64, span: Span, out: Sink<Report>) -> Handle {
    let cancel = CancellationToken::new();
    let handle = Handle { epoch, kind: work.kind(), cancel: cancel.clone() };
    let aborts = work.kind().rule().aborts;
    let stop = cancel.clone();
    let env = env.clone();
    let job_out = out.clone();
    let job = tokio::spawn(
        async move {
            match work {
                Work::Command { text, edited, episode } => {
                    command::run(&env, &text, edited, episode, &job_out).await;
                }
                Work::Chat { turn, conversation, resume, episode } => {
                    let said = Said {
                        line: &turn.line(),
                        words: &turn.words,
                        speaker: turn.speaker.name(),
                    };
                    let prompt =
                        recall(&env, env.chat_system(), said, episode, false, &job_out).await;
                    let turn = chat::Turn {
                        text: &prompt.text,
                        system: &prompt.system,
                        resume: resume.as_deref(),
                    };
                    chat::turn(&env, turn, conversation, &job_out).await;
                }
                Work::Dream { trigger, max_steps } => {
                    dream::run(&env, &trigger, max_steps, &job_out).await;
                }
                Work::Tree => tree::run(&env, env.chat_system(), &job_out, &stop).await,
                Work::Triage(window) => triage::run(&env, *window, &job_out).await,
                Work::Proactive(wakeup) => proactive::run(&env, &wakeup, &job_out).await,
            }
        }
        .instrument(span.clone()),
    );
    tokio::spawn(
        async move {
            let abort = job.abort_handle();
            let end = tokio::select! {
                // A job that does not abort ends itself at its next safe point.
                () = cancel.cancelled(), if aborts => {
                    // Dropping the job's future kills a tool's process (`kill_on_drop`).
                    abort.abort();
                    End::Cancelled
                }
                outcome = job => match outcome {
                    Ok(()) if cancel.is_cancelled() => End::Cancelled,
                    Ok(()) => End::Done,
                    Err(e) if e.is_cancelled() => End::Cancelled,
                    Err(_) => End::Panicked,
                },
            };
            out.send(Report::Finished(end));
        }
        .instrument(span),
    );
    handle
}

/// Runs `work` to its end on its own (no loop: for benchmarks and tests) and returns every
/// report, [`Report::Finished`] last.
pub async fn run_to_end(env: &JobEnv, work: Work) -> Vec<Report> {
    let reports = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (done_tx, done) = oneshot::channel();
    let done_tx = std::sync::Mutex::new(Some(done_tx));
    let keep = Arc::clone(&reports);
    let out = Sink::new(move |report: Report| {
        let end = matches!(report, Report::Finished(_));
        keep.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(report);
        if end
            && let Some(tx) =
                done_tx.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
        {
            let _ = tx.send(());
        }
    });
    let _handle = spawn(env, work, 0, Span::none(), out);
    // The job always ends with `Finished`; a dropped sender means it is gone all the same.
    let _ = done.await;
    std::mem::take(&mut *reports.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
}

/// One request to the model, reporting whether it answered. With a fallback (`[llm].failover`),
/// a request that fails before its first word is sent once more to the fallback, with a note.
async fn complete(
    env: &JobEnv,
    client: &Provider,
    request: &Request<'_>,
    out: &Sink<Report>,
    mut on_text: impl FnMut(&str),
) -> Result<stt_llm::Reply, LlmError> {
    let outcome = client.complete(request, &mut on_text).await;
    let reachable = !matches!(
        outcome,
        Err(LlmError::Unreachable { .. } | LlmError::Timeout { .. } | LlmError::NoTls { .. })
    );
    // The request reports its own failure to viewers; only the state changes here.
    out.send(Report::Reachable(reachable));
    match (outcome, &env.fallback) {
        (Err(e), Some((id, fallback))) if e.before_first_token() => {
            out.send(Report::Note(format!(
                "{}; trying {id} instead ([llm].failover)",
                env.explain(&e)
            )));
            fallback.complete(request, on_text).await.inspect_err(|_| {
                tracing::warn!(provider = %id, "the failover provider failed too");
            })
        }
        (outcome, _) => outcome,
    }
}

/// A prompt with what memory adds.
#[derive(Debug, Clone, PartialEq)]
struct Prompt {
    system: String,
    text: String,
    /// Whether the tools that end an intention are offered: one is open, and the words speak
    /// of reminders or of something done, or brought one back.
    ends: bool,
    /// Whether a command is offered memory's tools: when its words ask about the past or a
    /// reminder, or memory brought something back. Every schema costs a small model's
    /// attention: offered to "what time is it", they made the 0.5B model answer from the
    /// `get_datetime` description instead of calling it, one time in three.
    memory_tools: bool,
}

/// What to tell the model about its memory, after the system prompt. With `tools`, when to
/// call them.
/// The llama-server slot commands run in: their prompt (the command system prompt and the
/// tool list, the same bytes every time) stays in its cache, whatever else the model does.
pub const SLOT_COMMAND: u32 = 0;
/// The slot of everything else: chat, its summaries (which share chat's prefix) and dreams.
pub const SLOT_OTHER: u32 = 1;

const DISCIPLINE_CHAT: &str = "You remember earlier conversations. A line starting with \
    \"(Memory:\" before a message comes from that memory, not from what the user says now: \
    use it when it answers or bears on what is asked, and do not bring it up otherwise. Never \
    make up memories.";
const DISCIPLINE_TOOLS: &str = "You remember earlier conversations: call recall_memories \
    only when the user asks about something said before. To be reminded later (\"remind me … \
    when … comes up\"), call add_intention.";

/// What a person said, as a job is given it.
#[derive(Debug, Clone, Copy)]
struct Said<'a> {
    /// As the model reads it (a chat turn: `Name: words`).
    line: &'a str,
    /// The words alone, for memory.
    words: &'a str,
    /// Who said them, as memory keeps it; `None` when nobody knows (and for commands).
    speaker: Option<&'a str>,
}

/// The system prompt and the turn's text with what memory has for `text`. For chat, its
/// sections and discipline go after `system`. For a command (`tools`), the system prompt stays
/// as it is, byte for byte, so that with the tool list after it, it is the same prefix on
/// every command, which llama-server keeps in its cache: the sections and discipline go
/// before `text` instead. This turn's reminders (intentions due or cued, hints) go before
/// `text` either way. Without memory, or when it does not answer, both go as they are.
async fn recall(
    env: &JobEnv,
    system: &str,
    said: Said<'_>,
    episode: Episode,
    tools: bool,
    out: &Sink<Report>,
) -> Prompt {
    let text = said.line;
    let plain = Prompt {
        system: system.to_owned(),
        text: text.to_owned(),
        ends: false,
        memory_tools: false,
    };
    let Some(memory) = &env.memory else { return plain };
    let words = said.words.to_owned();
    let speaker = said.speaker.map(str::to_owned);
    let context = match memory.context(words.clone(), Some(episode), speaker).await {
        Ok(context) => context,
        Err(why) => {
            tracing::debug!("no memory for this prompt: {why}");
            return plain;
        }
    };
    if !context.notes.is_empty() {
        out.send(Report::Hinted(context.notes.clone()));
    }
    // Offered by the words alone (a reminder due is in the words, not a reason to show every
    // memory tool): a tool list that changed with memory's state would change the prefix
    // the server keeps, and cost a small model seconds of reading on every command.
    let open = context.intentions > 0;
    let ends = open
        && (!context.reminders.is_empty()
            || memory::called_for(memory::Tool::CompleteIntention, &words, open));
    let memory_tools = tools && (memory::asks_about_memory(&words, open) || ends);
    let discipline = match (tools, memory_tools) {
        (false, _) => Some(DISCIPLINE_CHAT),
        (true, true) => Some(DISCIPLINE_TOOLS),
        (true, false) => None,
    };
    // A command whose words are not about memory gets none of it (what it knows, the open
    // intentions): seven open reminders before "open example.org" had the 1.5B model explain
    // how to call open_url instead of calling it, and cost it 300 tokens of reading.
    let sections =
        Some(context.sections.as_str()).filter(|s| !s.is_empty() && (!tools || memory_tools));
    let added = discipline.into_iter().chain(sections);
    let mut system = system.to_owned();
    let mut before = String::new();
    for part in added {
        let to = if tools { &mut before } else { &mut system };
        if !to.is_empty() {
            to.push_str("\n\n");
        }
        to.push_str(part);
    }
    if !context.reminders.is_empty() {
        if !before.is_empty() {
            before.push_str("\n\n");
        }
        before.push_str(&format!("(Memory: {})", context.reminders.join("; ")));
    }
    let text = if before.is_empty() { text.to_owned() } else { format!("{before}\n\n{text}") };
    Prompt { system, text, ends, memory_tools }
}

/// Reports an error to viewers (and the log).
fn error(out: &Sink<Report>, code: ErrorCode, message: impl Into<String>) {
    let message = message.into();
    tracing::warn!("{message}");
    out.send(Report::Publish(AssistantEvent::Error(ErrorMsg::new(code, message))));
}

fn no_client(env: &JobEnv, out: &Sink<Report>) {
    error(out, ErrorCode::NoExecutor, env.missing.clone());
}
