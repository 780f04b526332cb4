//! The memory tree's side of the LLM lane: chat's conversation read from the tree, and the
//! summaries the tree asks for, written one per job.
//!
//! A summary is **future-informed**: the model is given the whole context as chat's model
//! sees it (the summaries so far and the messages that came *after* the stretch), then the
//! stretch to summarize, wrapped in an instruction to record how things stand at the end of
//! the conversation, not at the end of the stretch (a decision reversed later is recorded as
//! reversed). A summary cut off by its token cap keeps its whole sentences before the first
//! it repeats. A request that fails, comes back empty or is cut off before one whole sentence
//! writes a plain extract instead, so the stretch still leaves the context and nothing is lost
//! (the tree keeps the messages word for word); a note says so either way.

use stt_llm::{Finish, Message, Request};
use stt_memory::Role;
use stt_memory::tree::{Fields, Node, TreeContext, TreeJob, TreeMessage};
use tokio_util::sync::CancellationToken;

use super::{Chat, JobEnv, Report, SLOT_OTHER, complete, estimate_tokens, sentences};
use crate::lane::Sink;
use crate::memory::tree as memory_tree;

/// What the model is asked, after the context and before the stretch.
const INSTRUCTION: &str = "[Memory upkeep, not a message from the user] Summarize the \
    earlier part of this conversation below, for your own memory. Use everything above: where \
    something in it was changed, decided otherwise, finished or dropped later on, write how it \
    ended, not how it stood then. Keep names, numbers, dates and decisions. Answer in exactly \
    this form, one line each (write none when there is nothing):\nSUMMARY: what happened and \
    what was decided, in at most five sentences\nPROFILE: who the user is\nPREFERENCES: what \
    the user likes or wants done a certain way\nGOALS: what the user is working towards";

/// The conversation chat's model is given from the tree: the summaries, then the buffer, but
/// the user's newest message (the turn being sent, which the caller adds with what memory
/// reminds it of). `None` when the tree is off or memory does not answer.
pub async fn conversation(env: &JobEnv) -> Option<Chat> {
    let memory = env.memory.as_ref()?;
    let TreeContext { nodes, mut buffer } = memory.tree_context().await.ok()?;
    if buffer.last().is_some_and(|m| m.role == Role::User) {
        buffer.pop();
    }
    Some(Chat { summary: memory_tree::summaries(&nodes), turns: turns(&buffer) })
}

fn turns(messages: &[TreeMessage]) -> Vec<Message> {
    messages
        .iter()
        .map(|m| match m.role {
            Role::Assistant => Message::assistant(&m.text),
            _ => match m.speaker.as_deref() {
                Some(who) => Message::user(format!("{who}: {}", m.text)),
                None => Message::user(&m.text),
            },
        })
        .collect()
}

/// Does the tree's next summary, if one is due: one request at most, so a person's turn
/// waits for no more than this one. Reports [`Report::TreeMore`] with whether it wrote one
/// (then another may be due).
pub async fn run(env: &JobEnv, system: &str, out: &Sink<Report>, stop: &CancellationToken) {
    let Some(memory) = &env.memory else { return out.send(Report::TreeMore(false)) };
    let Ok(Some(job)) = memory.tree_due().await else {
        return out.send(Report::TreeMore(false));
    };
    let Ok(context) = memory.tree_context().await else {
        return out.send(Report::TreeMore(false));
    };
    let (what, segment, previous) = match &job {
        TreeJob::Compress(messages) => (
            format!(
                "messages {}–{}",
                messages.first().map_or(0, |m| m.seq),
                messages.last().map_or(0, |m| m.seq)
            ),
            messages.iter().map(memory_tree::message_line).collect::<Vec<_>>().join("\n"),
            context.nodes.iter().rev().find(|n| !n.fields.is_empty()).map(|n| n.fields.clone()),
        ),
        TreeJob::Merge { level, nodes } => (
            format!("{} summaries of level {level}", nodes.len()),
            nodes.iter().map(|n| format!("- {}", n.summary.trim())).collect::<Vec<_>>().join("\n"),
            nodes.iter().rev().find(|n| !n.fields.is_empty()).map(|n| n.fields.clone()),
        ),
    };
    let messages = request(env, system, &context, &job, &segment);
    let request = Request {
        messages: &messages,
        tools: &[],
        stream: false,
        max_tokens: env.settings.compaction_max_tokens,
        temperature: 0.0,
        resume: None,
        slot: Some(SLOT_OTHER),
    };
    let client = env.client.as_ref();
    let written = match client {
        None => Err(env.missing.clone()),
        // Stopped while the model writes: nothing is written, and the job is wanted again.
        // Past this point it ends by itself: a summary written is kept with its note.
        Some(client) => match tokio::select! {
            biased;
            () = stop.cancelled() => return out.send(Report::TreeMore(false)),
            reply = complete(env, client, &request, out, |_| {}) => reply,
        } {
            Err(e) => Err(env.explain(&e)),
            // Cut off (a small model looping, most often): its whole sentences before the
            // loop are a summary still; the tree keeps the messages word for word anyway.
            Ok(reply) if reply.finish == Some(Finish::Length) => {
                match sentences::before_the_loop(&reply.content).and_then(|t| parse(&t)) {
                    Some(parsed) => {
                        tracing::info!(
                            "a tree summary reached [assistant].compaction_max_tokens: its \
                             whole sentences before any repeat are kept"
                        );
                        Ok(parsed)
                    }
                    None => {
                        Err("the summary was cut off by [assistant].compaction_max_tokens".into())
                    }
                }
            }
            Ok(reply) => parse(&reply.content).ok_or_else(|| "the summary came back empty".into()),
        },
    };
    let (summary, mut fields, note) = match written {
        Ok((summary, fields)) => {
            (summary, fields, format!("context compacted: {what} summarized in the memory tree"))
        }
        Err(why) => {
            tracing::warn!("a tree summary failed: {why}");
            (
                extract(&job),
                Fields::default(),
                format!(
                    "context trimmed: {what} left the context unsummarized (summarizing \
                     failed: {why}); `stt-ctl memory tree` keeps them word for word"
                ),
            )
        }
    };
    // Fields grow: what the model left out is what was known before.
    if let Some(previous) = previous {
        for (now, before) in [
            (&mut fields.profile, previous.profile),
            (&mut fields.preferences, previous.preferences),
            (&mut fields.goals, previous.goals),
        ] {
            if now.is_empty() {
                *now = before;
            }
        }
    }
    match memory.tree_write(job, summary, fields).await {
        Ok(node) => {
            tracing::info!("memory tree: {what} → {node}");
            out.send(Report::Note(note));
            out.send(Report::TreeMore(true));
        }
        Err(why) => {
            tracing::warn!("the memory tree refused a summary: {why}");
            out.send(Report::TreeMore(false));
        }
    }
}

/// The request for `job`: the context chat's model has (without the stretch itself, which
/// comes last), made to fit the prompt budget by dropping the oldest messages after the
/// stretch, then shortening the stretch.
fn request(
    env: &JobEnv,
    system: &str,
    context: &TreeContext,
    job: &TreeJob,
    segment: &str,
) -> Vec<Message> {
    let budget = env.settings.prompt_budget as usize;
    let (nodes, after): (Vec<Node>, Vec<TreeMessage>) = match job {
        TreeJob::Compress(messages) => {
            let last = messages.last().map_or(0, |m| m.seq);
            (
                context.nodes.clone(),
                context.buffer.iter().filter(|m| m.seq > last).cloned().collect(),
            )
        }
        TreeJob::Merge { nodes: merged, .. } => {
            let ids: Vec<_> = merged.iter().map(|n| n.id).collect();
            let rest = context.nodes.iter().filter(|n| !ids.contains(&n.id)).cloned().collect();
            (rest, context.buffer.clone())
        }
    };
    let mut chat = Chat { summary: memory_tree::summaries(&nodes), turns: turns(&after) };
    let mut segment = segment.to_owned();
    let ask = |segment: &str| format!("{INSTRUCTION}\n\nThe earlier part:\n{segment}");
    let fits =
        |chat: &Chat, segment: &str| chat.tokens(system) + estimate_tokens(&ask(segment)) <= budget;
    while !chat.turns.is_empty() && !fits(&chat, &segment) {
        chat.turns.remove(0);
    }
    if !fits(&chat, &segment) {
        chat.summary = None;
    }
    while !fits(&chat, &segment) && segment.chars().count() > 200 {
        // From the middle: the stretch's start and end say most about how it went.
        let chars: Vec<char> = segment.chars().collect();
        let keep = chars.len() * 3 / 4 / 2;
        segment = format!(
            "{} … {}",
            chars[..keep].iter().collect::<String>(),
            chars[chars.len() - keep..].iter().collect::<String>()
        );
    }
    let mut messages = chat.messages(system);
    messages.push(Message::user(ask(&segment)));
    messages
}

/// A reply's summary and fields; `None` when it holds no summary.
fn parse(reply: &str) -> Option<(String, Fields)> {
    const LABELS: [&str; 4] = ["summary", "profile", "preferences", "goals"];
    // The four labelled parts, then what came before any label.
    let mut parts: [String; 5] = Default::default();
    let mut current = 4;
    for line in reply.lines() {
        let line = line.trim().trim_start_matches(['-', '*', '#', ' ']);
        let labelled = line.split_once(':').and_then(|(label, rest)| {
            let label = label.trim().trim_matches('*').to_ascii_lowercase();
            let at = LABELS.iter().position(|l| *l == label)?;
            Some((at, rest.trim().trim_start_matches('*').trim()))
        });
        let text = match labelled {
            Some((at, rest)) => {
                current = at;
                rest
            }
            None => line,
        };
        if !text.is_empty() {
            let part = &mut parts[current];
            if !part.is_empty() {
                part.push(' ');
            }
            part.push_str(text);
        }
    }
    let [summary, profile, preferences, goals, unlabelled] =
        parts.map(|p| if is_none(&p) { String::new() } else { p.trim().to_owned() });
    let summary = if summary.is_empty() { unlabelled } else { summary };
    let fields = Fields { profile, preferences, goals, ..Fields::default() };
    (!summary.is_empty()).then_some((summary, fields))
}

fn is_none(text: &str) -> bool {
    let text = text.trim().trim_end_matches('.').to_ascii_lowercase();
    matches!(text.as_str(), "" | "none" | "n/a" | "unknown" | "nothing" | "-")
}

/// What a stretch leaves in the context when the model could not summarize it: the start of
/// each of the user's lines (or of each summary), so the context still says what was spoken of.
fn extract(job: &TreeJob) -> String {
    let lines: Vec<String> = match job {
        TreeJob::Compress(messages) => messages
            .iter()
            .filter(|m| m.role != Role::Assistant)
            .map(|m| m.text.split_whitespace().take(12).collect::<Vec<_>>().join(" "))
            .collect(),
        TreeJob::Merge { nodes, .. } => nodes
            .iter()
            .map(|n| n.summary.split_whitespace().take(30).collect::<Vec<_>>().join(" "))
            .collect(),
    };
    let mut text = format!("(not summarized) {}", lines.join(" / "));
    if text.chars().count() > 600 {
        text = text.chars().take(600).collect::<String>() + "…";
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_in_the_form_asked_gives_the_summary_and_the_fields() {
        let reply = "SUMMARY: The user chose the train to Porto, not the car.\n\
            **PROFILE:** A teacher in Lisbon.\nPREFERENCES: none\n- GOALS: Visit Ana\nby May.";
        let (summary, fields) = parse(reply).unwrap();
        assert_eq!(summary, "The user chose the train to Porto, not the car.");
        assert_eq!(fields.profile, "A teacher in Lisbon.");
        assert_eq!(fields.preferences, "");
        assert_eq!(fields.goals, "Visit Ana by May.");
    }

    #[test]
    fn a_reply_without_labels_is_the_summary_and_an_empty_one_is_none() {
        let (summary, fields) = parse("They talked about trains.\nThen about boats.").unwrap();
        assert_eq!(summary, "They talked about trains. Then about boats.");
        assert!(fields.is_empty());
        assert_eq!(parse("SUMMARY: none\nGOALS: none"), None);
        assert_eq!(parse("  \n"), None);
    }

    #[test]
    fn an_extract_keeps_the_start_of_each_user_line() {
        let message = |seq, role, text: &str| TreeMessage {
            seq,
            at: 0.0,
            role,
            speaker: None,
            text: text.into(),
        };
        let job = TreeJob::Compress(vec![
            message(
                1,
                Role::User,
                "We take the train to Porto on Friday at nine in the morning, ok?",
            ),
            message(2, Role::Assistant, "Fine."),
            message(3, Role::User, "No, the car."),
        ]);
        assert_eq!(
            extract(&job),
            "(not summarized) We take the train to Porto on Friday at nine in the / No, the car."
        );
    }
}
