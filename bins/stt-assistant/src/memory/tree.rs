//! The memory tree as the assistant uses it: chat's context when `[memory].tree` is on, what
//! a summary job writes, and the tree shown to a person (`stt-ctl memory tree`) or the model
//! (`explore_memory_tree`). The shape itself is `stt_memory::tree`'s.

use stt_memory::tree::{Fields, Node, NodeId, TreeJob, TreeMessage};
use stt_memory::{MemoryError, Role, Store};

use super::clock::when;
use super::{Fault, Refusal, TreeShown};

/// What a tree question is answered with when the tree is off.
pub const OFF: &str = "the memory tree is off ([memory].tree = false in the config)";

/// Writes a job's summary: the node it made.
pub fn write(
    store: &mut Store,
    job: &TreeJob,
    summary: &str,
    fields: &Fields,
) -> Result<String, Fault> {
    let written = match job {
        TreeJob::Compress(messages) => {
            let (Some(first), Some(last)) = (messages.first(), messages.last()) else {
                return Err(Refusal::Failed("a summary of no messages".into()).into());
            };
            store.tree_compress(first.seq, last.seq, summary, fields)
        }
        TreeJob::Merge { nodes, .. } => {
            let ids: Vec<NodeId> = nodes.iter().map(|n| n.id).collect();
            store.tree_merge(&ids, summary, fields)
        }
    };
    match written {
        Ok(id) => Ok(format!("node {}", id.0)),
        // Another job wrote it first, or the tree was forgotten meanwhile: nothing lost.
        Err(MemoryError::Invalid(why)) => Err(Refusal::Failed(why).into()),
        Err(e) => Err(e.into()),
    }
}

/// The tree for a person or the model: with no node, the nodes still in the context (the
/// tops of the tree, oldest first) and the buffer's size; with one, its summary, fields, time
/// range and children, or, at level 0, the messages it was made from.
pub fn show(store: &Store, node: Option<NodeId>) -> Result<TreeShown, Fault> {
    let Some(id) = node else {
        let context = store.tree_context()?;
        let stats = store.tree_stats()?;
        let mut text = format!(
            "The memory tree: {} messages, {} of them in the buffer; nodes per level: {}.",
            stats.messages,
            stats.buffered,
            if stats.nodes.is_empty() {
                "none yet".to_owned()
            } else {
                let levels: Vec<String> = stats.nodes.iter().map(i64::to_string).collect();
                levels.join(", ")
            }
        );
        if !context.nodes.is_empty() {
            text.push_str("\nIn the context, oldest first (a node's id shows more):");
            for node in &context.nodes {
                text.push_str(&format!("\n{}", node_line(node)));
            }
        }
        return Ok(TreeShown { text, nodes: context.nodes });
    };
    let node = match store.tree_node(id) {
        Ok(node) => node,
        Err(MemoryError::NotFound { .. }) => {
            return Err(Refusal::Missing(format!(
                "the memory tree has no node {}: `stt-ctl memory tree` lists the top ones",
                id.0
            ))
            .into());
        }
        Err(e) => return Err(e.into()),
    };
    let mut text = format!(
        "node {} · level {} · messages {}–{} · {} to {}{}\n{}",
        node.id.0,
        node.level,
        node.first_seq,
        node.last_seq,
        when(node.started),
        when(node.ended),
        node.parent.map(|p| format!(" · merged into node {}", p.0)).unwrap_or_default(),
        node.summary
    );
    text.push_str(&fields_lines(&node.fields));
    let mut nodes = vec![node.clone()];
    if node.level == 0 {
        text.push_str("\nMessages:");
        for message in store.tree_messages(id)? {
            text.push_str(&format!("\n[{}] {}", message.seq, message_line(&message)));
        }
    } else {
        text.push_str("\nChildren:");
        for child in store.tree_children(id)? {
            text.push_str(&format!("\n{}", node_line(&child)));
            nodes.push(child);
        }
    }
    Ok(TreeShown { text, nodes })
}

/// A node on one line: id, level, span and the start of its summary.
fn node_line(node: &Node) -> String {
    let mut summary: String = node.summary.chars().take(120).collect();
    if summary.len() < node.summary.len() {
        summary.push('…');
    }
    format!(
        "- node {} (level {}, messages {}–{}, {}): {summary}",
        node.id.0,
        node.level,
        node.first_seq,
        node.last_seq,
        when(node.started)
    )
}

fn fields_lines(fields: &Fields) -> String {
    let mut text = String::new();
    for (name, value) in [
        ("Profile", &fields.profile),
        ("Preferences", &fields.preferences),
        ("Goals", &fields.goals),
    ] {
        if !value.is_empty() {
            text.push_str(&format!("\n{name}: {value}"));
        }
    }
    text
}

/// A raw message as the tree shows it and a summary job reads it: who said it, and what.
pub fn message_line(message: &TreeMessage) -> String {
    let who = match (message.role, message.speaker.as_deref()) {
        (Role::Assistant, _) => "Assistant",
        (_, Some(who)) if who != "Typed" => who,
        _ => "User",
    };
    format!("{who}: {}", message.text)
}

/// A message brought back from the tree for a turn, as the model reads it: who said it and
/// what, word for word (the first 300 characters).
pub fn recalled_line(message: &TreeMessage) -> String {
    let who = match (message.role, message.speaker.as_deref()) {
        (Role::Assistant, _) => "you said".to_owned(),
        (_, Some(who)) if !matches!(who, "Typed" | "Unknown") => format!("{who} said"),
        _ => "the user said".to_owned(),
    };
    let mut text: String = message.text.chars().take(300).collect();
    if text.len() < message.text.len() {
        text.push('…');
    }
    format!("{who}: \"{text}\"")
}

/// The system prompt's section of what the conversation taught about the user: the fields
/// of the newest node that has any (they grow from one summary to the next).
pub fn learnt(store: &Store) -> stt_memory::Result<Option<String>> {
    let Some(fields) = store.tree_fields()? else { return Ok(None) };
    let lines = fields_lines(&fields);
    Ok((!lines.is_empty())
        .then(|| format!("## About the user (from your conversations)\n{}\n\n", lines.trim())))
}

/// The summaries in the context as the chat's model reads them, oldest first; `None` when
/// there are none yet.
pub fn summaries(nodes: &[Node]) -> Option<String> {
    let lines: Vec<String> = nodes
        .iter()
        .map(|n| format!("- {} to {}: {}", when(n.started), when(n.ended), n.summary.trim()))
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}
