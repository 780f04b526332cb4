//! The tools that reach memory, as the model sees them and as the memory thread runs them.
//!
//! [`spec`] is what the model is told of each [`Tool`], the planner's too: memory's offered to
//! commands (`Tool::ASSISTANT`: recall, the recent conversation, intentions, a dream now) and
//! to a dream's rounds (`Tool::DREAM_ROUND`: write and correct items). Schemas are kept small:
//! the local model stt installs (1.5B parameters) reads every one offered on every request.
//!
//! [`call`] runs one against the store and returns what the model is told. It checks its
//! arguments itself (a small model gets them wrong often) and answers a wrong one with what
//! it expected, so the model can try again.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use stt_memory::{
    Hit, Item, ItemFilter, ItemId, Kind, LogId, NewItem, Query, Remembered, Role, SessionId,
    SessionStatus, Store, Target,
};
use stt_proto::SideEffect;
use stt_tools::registry::ToolSpec;

pub use super::called::Called;
use super::clock::{parse_local, when};
use super::plans;
pub use super::tool::Tool;

/// A reminder due further away than this is asked about (seconds).
const YEAR: f64 = 366.0 * 86400.0;

/// What a recall tool may return.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    pub top_k: usize,
    pub min_score: f32,
}

/// The specs of `tools`.
pub fn specs(tools: &[Tool]) -> Vec<ToolSpec> {
    tools.iter().map(|tool| spec(*tool)).collect()
}

/// What the model is told of `tool`.
pub fn spec(tool: Tool) -> ToolSpec {
    let object = |properties: Value, required: &[&str]| json!({"type": "object", "properties": properties, "required": required});
    let id = json!({"type": "integer", "description": "The item's id"});
    let sources = json!({"type": "array", "items": {"type": "integer"},
        "description": "Ids of the log entries it comes from"});
    let task_id = json!({"type": "integer", "description": "The task's id"});
    let date = json!({"type": "string", "description": "YYYY-MM-DD"});
    let priority = json!({"type": "integer", "description": "1 (highest) to 5"});
    let (description, parameters, side_effect) = match tool {
        Tool::Recall => (
            "Look up what the user said or decided in an earlier conversation.",
            object(
                json!({"query": {"type": "string", "description": "What to look for"}}),
                &["query"],
            ),
            SideEffect::ReadOnly,
        ),
        Tool::SearchRecent => (
            "The latest lines of past conversations, or those matching a query.",
            object(json!({"query": {"type": "string"}}), &[]),
            SideEffect::ReadOnly,
        ),
        Tool::AddIntention => (
            "Remind the user of something later: when a topic comes up (cue) or at a time (due).",
            object(
                json!({
                    "text": {"type": "string"},
                    "cue": {"type": "string", "description": "Words that bring it back"},
                    "due": {"type": "string", "description": "YYYY-MM-DD HH:MM"},
                    "due_in_minutes": {"type": "number"}
                }),
                &["text"],
            ),
            SideEffect::Local,
        ),
        Tool::CompleteIntention => {
            ("Mark an intention done.", object(json!({"id": id}), &["id"]), SideEffect::Local)
        }
        Tool::CancelIntention => (
            "Drop an intention that is no longer wanted.",
            object(json!({"id": id}), &["id"]),
            SideEffect::Local,
        ),
        Tool::DreamNow => ("Consolidate memory now.", object(json!({}), &[]), SideEffect::Local),
        Tool::ExploreTree => (
            "Summaries of all earlier conversation: with no node_id the top ones; with one, \
             that summary's parts or the messages it was made from.",
            object(json!({"node_id": {"type": "integer"}}), &[]),
            SideEffect::ReadOnly,
        ),
        Tool::ReadSessionLog => (
            "Read a pending conversation.",
            object(json!({"session_id": {"type": "integer"}}), &["session_id"]),
            SideEffect::ReadOnly,
        ),
        Tool::ListItems => (
            "List remembered items like a text.",
            object(json!({"query": {"type": "string"}}), &["query"]),
            SideEffect::ReadOnly,
        ),
        Tool::CreateKnowledge => (
            "Remember a lasting fact, decision, preference or pitfall.",
            object(
                json!({
                    "name": {"type": "string", "description": "Short topic, e.g. 'sister's city'"},
                    "body": {"type": "string", "description": "The fact in one sentence"},
                    "type": {"type": "string", "enum": ["fact", "decision", "preference", "pitfall"]},
                    "sources": sources,
                    "supersedes": {"type": "integer", "description": "Id of an item this corrects"}
                }),
                &["name", "body"],
            ),
            SideEffect::Local,
        ),
        Tool::UpdateItem => (
            "Rewrite an item's text (a fact rewritten replaces the old one, kept archived).",
            object(json!({"id": id, "body": {"type": "string"}}), &["id", "body"]),
            SideEffect::Local,
        ),
        Tool::ArchiveItem => (
            "Archive an item that is wrong or no longer true.",
            object(json!({"id": id, "why": {"type": "string"}}), &["id"]),
            SideEffect::Local,
        ),
        Tool::RecordEpisode => (
            "Remember what happened in a conversation, in one or two sentences.",
            object(
                json!({
                    "summary": {"type": "string"},
                    "salience": {"type": "string", "enum": ["high", "mid", "low"]},
                    "sources": sources
                }),
                &["summary"],
            ),
            SideEffect::Local,
        ),
        Tool::UpdateProfile => (
            "Rewrite what is known about the user, the assistant, or a named speaker.",
            object(
                json!({
                    "subject": {"type": "string", "description": "user, assistant, or a name"},
                    "body": {"type": "string"}
                }),
                &["subject", "body"],
            ),
            SideEffect::Local,
        ),
        Tool::MarkLogProcessed => (
            "Mark a conversation consolidated.",
            object(json!({"session_id": {"type": "integer"}}), &["session_id"]),
            SideEffect::Local,
        ),
        Tool::WriteDreamLog => (
            "Note in the dream log what this conversation gave; ends its round.",
            object(json!({"note": {"type": "string"}}), &["note"]),
            SideEffect::Local,
        ),
        // The planner's.
        Tool::CreateTask => (
            "Make a task to track: a goal the user wants to reach or something to get done.",
            object(
                json!({"title": {"type": "string"}, "goal": {"type": "string"}, "due": date,
                       "priority": priority}),
                &["title"],
            ),
            SideEffect::Local,
        ),
        // The model only names the task: the plan is written by a request of its own
        // (`llm::plan`), so a small model's call stays a line long (written inline, a plan
        // ran past the reply's token cap). `phases` is how that request stores it.
        Tool::BreakDownTask => (
            "Plan a task day by day into phases with dated items. Give its task_id, or a title \
             to make the task.",
            object(
                json!({
                    "task_id": task_id,
                    "title": {"type": "string"},
                    "days": {"type": "integer", "description": "Days the plan spans, from today"}
                }),
                &[],
            ),
            SideEffect::Local,
        ),
        Tool::ListTasks => (
            "List the user's tasks.",
            object(
                json!({"status": {"type": "string", "enum": ["open", "active", "done", "dropped"]}}),
                &[],
            ),
            SideEffect::ReadOnly,
        ),
        Tool::GetTask => (
            "A task with its plan.",
            object(json!({"task_id": task_id}), &["task_id"]),
            SideEffect::ReadOnly,
        ),
        Tool::GetNextActions => (
            "What the user should do next, most urgent first.",
            object(json!({}), &[]),
            SideEffect::ReadOnly,
        ),
        Tool::MarkPlanDone => (
            "Check off a plan item the user has done.",
            object(json!({"item_id": {"type": "integer"}}), &["item_id"]),
            SideEffect::Local,
        ),
        Tool::Reschedule => (
            "Move a task: a new due date, and/or its open items by some days.",
            object(
                json!({"task_id": task_id, "due": date, "shift_days": {"type": "integer"}}),
                &["task_id"],
            ),
            SideEffect::Local,
        ),
        Tool::UpdateTaskStatus => (
            "Mark a task open, active, done or dropped.",
            object(
                json!({"task_id": task_id,
                       "status": {"type": "string", "enum": ["open", "active", "done", "dropped"]}}),
                &["task_id", "status"],
            ),
            SideEffect::Local,
        ),
        Tool::Prioritize => (
            "Give a task another priority.",
            object(json!({"task_id": task_id, "priority": priority}), &["task_id", "priority"]),
            SideEffect::Local,
        ),
    };
    ToolSpec {
        name: tool.name().to_owned(),
        description: description.to_owned(),
        parameters,
        side_effect,
        requires_confirmation: false,
    }
}

/// Everything a call may need besides the store.
#[derive(Debug)]
pub struct Call<'a> {
    pub tool: Tool,
    pub args: &'a Value,
    /// The query's embedding (recall tools), when the embedder is on.
    pub vector: Option<&'a [f32]>,
    pub limits: Limits,
    /// The store's clock (for `due_in_minutes`).
    pub now: f64,
    /// The lines an item written without `sources` may cite (a dream's session: what its
    /// user said); it cites those that share its words.
    pub sources: Vec<(LogId, String)>,
    /// In a dream's round: names and numbers of the remembered items it showed that its
    /// conversation never says (see [`ungrounded`]).
    pub shown_only: &'a BTreeSet<String>,
    /// Whether the memory tree is on.
    pub tree: bool,
    /// The local date at the store's clock, `YYYY-MM-DD` (the planner's today).
    pub today: String,
}

/// A fact without the "Typed: " a model copies from the log line it came from: who said it
/// is not part of it.
pub fn without_speaker(fact: &str) -> &str {
    let mut fact = fact.trim();
    for who in ["typed:", "typing:", "user:"] {
        if fact.get(..who.len()).is_some_and(|p| p.eq_ignore_ascii_case(who)) {
            fact = fact[who.len()..].trim();
        }
    }
    fact
}

/// In a dream, why a fact is refused as not grounded in the conversation, if it is: it shares
/// no word with what the user said (made up), or it uses a name or number only the list of
/// remembered items has (copied: a small model copies what it is shown, which would confirm
/// "lives in Lisbon" from "lives in Porto now"). The refusal says what to do instead.
fn ungrounded(call: &Call<'_>, body: &str) -> Option<Called> {
    let words = stt_memory::text::content_words(body);
    if !call.sources.is_empty() {
        let said: BTreeSet<String> = call
            .sources
            .iter()
            .flat_map(|(_, line)| stt_memory::text::content_words(line))
            .collect();
        if words.is_disjoint(&said) {
            return Some(Called::failed(
                "this conversation says nothing of that: save only what it says",
            ));
        }
    }
    let copied: Vec<&str> =
        words.iter().filter(|w| call.shown_only.contains(*w)).map(String::as_str).collect();
    (!copied.is_empty()).then(|| {
        Called::failed(format!(
            "this conversation never says {}: that is what memory held before. Save only what \
             this conversation says; when it changes a remembered item, give that item's id as \
             supersedes",
            copied.join(", ")
        ))
    })
}

/// Runs a memory tool. `Err` is a fault of the store (the lane decides whether memory goes
/// off); a bad argument is an `Ok` answer that says so.
pub fn call(store: &mut Store, call: &Call<'_>) -> stt_memory::Result<Called> {
    let args = call.args;
    let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::trim).unwrap_or("");
    // An id as a whole number in any JSON spelling: 7, 7.0 (the tool-call parser takes a
    // whole float for an integer, as JSON Schema does) or "7".
    let int = |key: &str| args.get(key).and_then(plans::whole);
    let ids = |key: &str| -> Vec<LogId> {
        let given: Vec<LogId> = args
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| {
                plans::whole(v).or_else(|| v.as_str()?.trim_start_matches('L').parse().ok())
            })
            .map(LogId)
            .collect();
        if given.is_empty() {
            cited(&call.sources, &[text("name"), text("body"), text("summary")])
        } else {
            given
        }
    };
    if call.tool.is_plan() {
        return plans::call(store, call.tool, args, &call.today);
    }
    Ok(match call.tool {
        Tool::Recall | Tool::SearchRecent | Tool::ListItems => {
            let query = text("query");
            if query.is_empty() && call.tool != Tool::SearchRecent {
                return Ok(Called::failed("give a 'query': what to look for"));
            }
            if query.is_empty() {
                let recent = store.recent(call.limits.top_k.max(5))?;
                if recent.is_empty() {
                    return Ok(Called::ok("nothing has been said yet"));
                }
                let lines: Vec<String> =
                    recent.iter().map(|e| format!("- [{}] {}", when(e.at), e.line())).collect();
                return Ok(Called::ok(lines.join("\n")));
            }
            let q = Query {
                vector: call.vector,
                limit: call.limits.top_k,
                items: call.tool != Tool::SearchRecent,
                log: call.tool != Tool::ListItems,
                ..Query::new(query)
            };
            let hits: Vec<Hit> = store
                .recall(&q)?
                .into_iter()
                .filter(|h| h.score >= call.limits.min_score)
                .collect();
            let used: Vec<ItemId> = hits
                .iter()
                .filter_map(|h| match h.target {
                    Target::Item(id) => Some(id),
                    Target::Log(_) => None,
                })
                .collect();
            if call.tool == Tool::Recall && !used.is_empty() {
                store.reinforce(&used)?;
            }
            if hits.is_empty() {
                return Ok(Called::ok(format!("nothing in memory matches \"{query}\"")));
            }
            Called::ok(hits.iter().map(hit_line).collect::<Vec<_>>().join("\n"))
        }
        Tool::AddIntention => {
            let body = text("text");
            if body.is_empty() {
                return Ok(Called::failed("give the 'text' of the intention"));
            }
            let due = match (text("due"), args.get("due_in_minutes").and_then(Value::as_f64)) {
                (_, Some(minutes)) if minutes > 0.0 => Some(call.now + minutes * 60.0),
                ("", _) => None,
                (due, _) => match parse_local(due) {
                    Some(at) => Some(at),
                    None => {
                        return Ok(Called::failed(format!(
                            "'due' must read YYYY-MM-DD HH:MM, not \"{due}\""
                        )));
                    }
                },
            };
            let cue = Some(text("cue")).filter(|c| !c.is_empty());
            // A time already here or gone is a model filling in every field: with a cue it
            // is dropped, without one it is refused.
            let due = match due {
                Some(at) if at <= call.now + 60.0 && cue.is_some() => None,
                Some(at) if at <= call.now + 60.0 => {
                    return Ok(Called::failed(format!(
                        "{} has passed: give a time to come, or a cue",
                        when(at)
                    )));
                }
                // A year or more away is a date guessed wrong more often than meant.
                Some(at) if at > call.now + YEAR => {
                    return Ok(Called::failed(format!(
                        "{} is more than a year away: ask the user when they mean",
                        when(at)
                    )));
                }
                due => due,
            };
            let id = store.add_intention(body, cue, due, None, &[])?;
            let mut said = format!("intention {} kept", id.0);
            if let Some(cue) = cue {
                said.push_str(&format!("; it comes back when \"{cue}\" is said"));
            }
            if let Some(due) = due {
                said.push_str(&format!("; due {}", when(due)));
            }
            Called::ok(said)
        }
        Tool::CompleteIntention | Tool::CancelIntention => {
            let Some(id) = int("id") else {
                return Ok(Called::failed("give the intention's 'id' (the prompt lists them)"));
            };
            let state = if call.tool == Tool::CompleteIntention { "done" } else { "cancelled" };
            match store.end_intention(ItemId(id), state) {
                Ok(()) => Called::ok(format!("intention {id} is {state}")),
                Err(stt_memory::MemoryError::NotFound { .. }) => {
                    Called::failed(format!("there is no intention {id}"))
                }
                Err(e) => return Err(e),
            }
        }
        Tool::ExploreTree if !call.tree => Called::failed(super::tree::OFF),
        Tool::ExploreTree => {
            let node = int("node_id").filter(|id| *id > 0).map(stt_memory::tree::NodeId);
            match super::tree::show(store, node) {
                Ok(shown) => Called::ok(shown.text),
                Err(super::Fault::Refused(refusal)) => Called::failed(refusal.into_why()),
                Err(super::Fault::Store(e)) => return Err(e),
            }
        }
        Tool::ReadSessionLog => {
            let Some(id) = int("session_id") else {
                return Ok(Called::failed("give a 'session_id' from the pending list"));
            };
            if let Err(stt_memory::MemoryError::NotFound { .. }) = store.session(SessionId(id)) {
                return Ok(Called::failed(format!("there is no session {id}")));
            }
            session_text(&store.session_log(SessionId(id))?)
        }
        Tool::CreateKnowledge => {
            let (name, body) = (text("name"), without_speaker(text("body")));
            if body.is_empty() {
                return Ok(Called::failed("give the fact in 'body'"));
            }
            // A value alone is no fact: "Lisbon" under "sister's city" says nothing in recall
            // on its own, and a later "Porto" cannot be seen to correct it.
            if stt_memory::text::content_words(body).len() < 2 {
                return Ok(Called::failed(format!(
                    "'body' must be the fact as one whole sentence that says whose it is (for \
                     example \"The user's sister lives in Lisbon.\"), not \"{body}\" alone"
                )));
            }
            // A type it does not know (a small model copies "object" from the schema) is
            // a fact: the fact is worth more than its label.
            let subtype = match text("type") {
                t @ ("fact" | "decision" | "preference" | "pitfall") => t,
                _ => "fact",
            };
            if let Some(refused) = ungrounded(call, body) {
                return Ok(refused);
            }
            // An id the store does not hold (a model making one up) corrects nothing.
            let supersedes = int("supersedes").map(ItemId).filter(|id| store.item(*id).is_ok());
            let new = NewItem {
                subtype: subtype.to_owned(),
                provenance: known_entries(store, ids("sources")),
                supersedes,
                ..NewItem::new(Kind::Knowledge, name, body)
            };
            match store.remember(new)? {
                Remembered::Created { id } => {
                    Called { created: Some(id), ..Called::ok(format!("item {} created", id.0)) }
                }
                Remembered::Strengthened { id } => {
                    Called::ok(format!("already known as item {}: strengthened", id.0))
                }
                Remembered::Superseded { id, old } => Called::ok(format!(
                    "item {} created; it replaces item {} (kept archived)",
                    id.0, old.0
                )),
            }
        }
        Tool::UpdateItem => {
            let Some(id) = int("id").map(ItemId) else {
                return Ok(Called::failed("give the item's 'id'"));
            };
            let body = without_speaker(text("body"));
            if let Some(refused) = ungrounded(call, body) {
                return Ok(refused);
            }
            let item = match store.item(id) {
                Ok(item) => item,
                Err(stt_memory::MemoryError::NotFound { .. }) => {
                    return Ok(Called::failed(format!("there is no item {}", id.0)));
                }
                Err(e) => return Err(e),
            };
            if !item.active {
                return Ok(Called::failed(format!(
                    "item {} is archived; write a new item (create_knowledge) instead",
                    id.0
                )));
            }
            let same = stt_memory::text::normalise(body) == stt_memory::text::normalise(&item.body);
            if item.kind == Kind::Knowledge && !body.is_empty() && !same {
                // A fact rewritten is a correction: the new text takes its place in recall
                // and the old one stays, archived, with a link ("what did I say before?").
                // Its name goes with it unless it holds the old value ("lives in Lisbon").
                let said = stt_memory::text::content_words(body);
                let name = if stt_memory::text::names_and_numbers(&item.name)
                    .iter()
                    .all(|w| said.contains(w))
                {
                    item.name
                } else {
                    String::new()
                };
                let new = NewItem {
                    subtype: item.subtype,
                    subject: item.subject,
                    provenance: known_entries(store, ids("sources")),
                    supersedes: Some(id),
                    ..NewItem::new(Kind::Knowledge, name, body)
                };
                return Ok(match store.remember(new)? {
                    Remembered::Superseded { id: new, .. } | Remembered::Created { id: new } => {
                        Called::ok(format!(
                            "item {} replaces item {} (the old text is kept, archived)",
                            new.0, id.0
                        ))
                    }
                    // Another item says it already: that one replaces this.
                    Remembered::Strengthened { id: other } => {
                        store.supersede(other, id)?;
                        Called::ok(format!(
                            "item {} already says that; it replaces item {} (kept archived)",
                            other.0, id.0
                        ))
                    }
                });
            }
            match store.update_item(id, None, Some(body).filter(|b| !b.is_empty())) {
                Ok(()) => Called::ok(format!("item {} updated", id.0)),
                Err(stt_memory::MemoryError::NotFound { .. }) => {
                    Called::failed(format!("there is no item {}", id.0))
                }
                Err(e) => return Err(e),
            }
        }
        Tool::ArchiveItem => {
            let Some(id) = int("id") else { return Ok(Called::failed("give the item's 'id'")) };
            let why = Some(text("why")).filter(|w| !w.is_empty()).unwrap_or("by a dream");
            match store.archive(ItemId(id), why)? {
                true => Called::ok(format!("item {id} archived")),
                false => Called::failed(format!("there is no item {id}")),
            }
        }
        Tool::RecordEpisode => {
            let summary = text("summary");
            if summary.is_empty() {
                return Ok(Called::failed("give the 'summary'"));
            }
            let salience = match text("salience") {
                s @ ("high" | "mid" | "low") => s,
                _ => "mid",
            };
            let new = NewItem {
                subtype: salience.to_owned(),
                provenance: known_entries(store, ids("sources")),
                ..NewItem::new(Kind::Episode, "", summary)
            };
            Called::ok(format!("episode {} recorded", store.remember(new)?.id().0))
        }
        Tool::UpdateProfile => {
            let (subject, body) = (text("subject").to_lowercase(), text("body"));
            if subject.is_empty() || body.is_empty() {
                return Ok(Called::failed("give the 'subject' and the new 'body'"));
            }
            let id = store.set_profile(&subject, body, &[])?;
            Called::ok(format!("profile of {subject} is item {}", id.0))
        }
        Tool::MarkLogProcessed => {
            let Some(id) = int("session_id") else {
                return Ok(Called::failed("give the 'session_id'"));
            };
            match store.mark_processed(SessionId(id)) {
                Ok(()) => Called::ok(format!("session {id} is processed")),
                Err(stt_memory::MemoryError::NotFound { .. }) => {
                    Called::failed(format!("there is no session {id}"))
                }
                Err(e) => return Err(e),
            }
        }
        Tool::WriteDreamLog => Called::ok(format!("noted: {}", text("note"))),
        // A dream is the loop's to run; the planner's tools went to the planner above.
        Tool::DreamNow
        | Tool::CreateTask
        | Tool::BreakDownTask
        | Tool::ListTasks
        | Tool::GetTask
        | Tool::GetNextActions
        | Tool::MarkPlanDone
        | Tool::Reschedule
        | Tool::UpdateTaskStatus
        | Tool::Prioritize => {
            Called::failed(format!("{} is not run by the memory thread", call.tool))
        }
    })
}

/// The lines among `lines` an item saying `what` came from: the (at most three) that share
/// the most of its words of four letters or more, best first. Citing a whole session would
/// make the item stand for every line of it.
fn cited(lines: &[(LogId, String)], what: &[&str]) -> Vec<LogId> {
    let content = |text: &str| -> std::collections::HashSet<String> {
        stt_memory::text::words(text).filter(|w| w.chars().count() >= 4).collect()
    };
    let wanted = content(&what.join(" "));
    let mut scored: Vec<(usize, LogId)> = lines
        .iter()
        .map(|(id, text)| (content(text).intersection(&wanted).count(), *id))
        .filter(|(shared, _)| *shared > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().take(3).map(|(_, id)| id).collect()
}

/// Log entries among `ids` that exist (a model may cite ids it made up).
fn known_entries(store: &Store, ids: Vec<LogId>) -> Vec<LogId> {
    ids.into_iter().filter(|id| store.entry(*id).is_ok()).collect()
}

/// A session's entries as a dream reads them: one line each, with its id to cite.
pub fn session_text(entries: &[stt_memory::LogEntry]) -> Called {
    let Some(first) = entries.first() else { return Called::ok("(this conversation is empty)") };
    let mut text = format!("Conversation {} on {}:\n", first.session.0, when(first.at));
    for e in entries {
        // Tool lines are long and rarely worth a memory: cut them short.
        let line = e.line();
        let line = match e.role {
            Role::Tool => cut(&line, 160),
            _ => cut(&line, 600),
        };
        text.push_str(&format!("[{}] {line}\n", e.id.0));
    }
    Called::ok(text)
}

/// Pending sessions, oldest first, as a dream's first message lists them.
pub fn pending(store: &Store) -> stt_memory::Result<Vec<stt_memory::SessionInfo>> {
    let mut sessions = store.sessions(Some(SessionStatus::Pending))?;
    sessions.sort_by_key(|s| s.id);
    Ok(sessions)
}

/// One recall hit as the model reads it.
pub fn hit_line(hit: &Hit) -> String {
    let mut line = match (hit.target, hit.kind) {
        (Target::Item(id), Some(kind)) => {
            format!("- [item {}, {}, {}] {}", id.0, kind.as_str(), when(hit.at), hit.text)
        }
        _ => format!("- [said {}] {}", when(hit.at), hit.text),
    };
    if let Some(before) = hit.previous.last() {
        line.push_str(&format!(" (corrects an earlier \"{before}\")"));
    }
    line
}

/// An item as a person or the model reads it in a listing.
pub fn item_line(item: &Item) -> String {
    let mut line = format!("{:>5}  {:<10} {}", item.id.0, item.kind.as_str(), item.text());
    if let Some(cue) = &item.cue {
        line.push_str(&format!(" (cue: {cue})"));
    }
    if let Some(due) = item.due {
        line.push_str(&format!(" (due {})", when(due)));
    }
    if !item.active {
        line.push_str(&format!(" [archived: {}]", item.archived_why.as_deref().unwrap_or("")));
    }
    line
}

/// Open intentions, each on a line with its id (stable order: by id).
pub fn intention_lines(store: &Store) -> stt_memory::Result<Vec<String>> {
    let filter = ItemFilter { kind: Some(Kind::Intention), ..ItemFilter::default() };
    let mut open = store.items(&filter)?;
    open.sort_by_key(|i| i.id);
    Ok(open.iter().map(intention_line).collect())
}

pub fn intention_line(item: &Item) -> String {
    let mut line = format!("- [{}] {}", item.id.0, item.body);
    if let Some(cue) = &item.cue {
        line.push_str(&format!(" (when \"{cue}\" comes up)"));
    }
    if let Some(due) = item.due {
        line.push_str(&format!(" (due {})", when(due)));
    }
    line
}

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_a_spec_that_reads_or_writes_as_it_says() {
        for tool in Tool::ALL {
            let spec = spec(*tool);
            assert_eq!(spec.name, tool.name());
            assert_eq!(spec.parameters["type"], "object", "{tool}");
            assert_eq!(spec.side_effect == SideEffect::ReadOnly, tool.reads_only(), "{tool}");
        }
    }
}
