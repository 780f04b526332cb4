//! A dream: memory's consolidation, run on the LLM lane while nobody needs the model.
//!
//! The seed's ReAct loop, one pending conversation at a time: each round shows the model one
//! conversation (and the items it may touch, so it corrects rather than repeats) and lets it
//! call memory's dream tools until it answers without a call. The round's session is then
//! marked processed (if the model did not), so a dream cancelled midway resumes where it
//! stopped: the loop cancels it the moment someone speaks, arms a command or sends chat, at
//! the job's next await (a tool call in flight on the memory thread finishes as one
//! transaction). At the end every item decays by the days elapsed and the dream's log closes.
//!
//! Corrections do not rely on the model noticing them among its tools: after each round, every
//! fact the round added is put next to the nearest older one recall finds, and the model is
//! asked to rewrite the old note as it reads now ([`corrects`] decides what the rewrite means).
//!
//! Small rounds keep it within a small local model's reach: one conversation, seven short
//! tool schemas, a few hundred tokens of instructions.

use std::collections::BTreeSet;

use stt_llm::{Message, Provider, Request, ToolSpec};
use stt_memory::text::content_words;

use super::{JobEnv, Report, SLOT_OTHER, complete};
use crate::lane::Sink;
use crate::memory::{Rival, Round, Tool as MemoryTool, tools as memory_tools};

const PROMPT: &str = "You maintain the long-term memory of a voice assistant while the user is \
    away. You are shown one past conversation. Save what will still matter later, with tools: \
    create_knowledge for each lasting fact, preference, decision or plan about the user or \
    their world (a short name such as \"sister's city\" and one sentence; if it corrects an \
    item already remembered, give that item's id as supersedes); record_episode for one \
    sentence on what happened, if it mattered; update_profile for who the user is. Save \
    nothing for small talk, greetings or commands that were simply run. If you cannot call \
    tools, write each fact on a line of its own as FACT topic: sentence (the topic of an item \
    already remembered when the fact corrects it). When you are done, answer \"done\".";

/// Dreams sample greedily: consolidation wants the likeliest reading of what was said, and
/// the same conversation should give the same items every time.
const DREAM_TEMPERATURE: f64 = 0.0;

/// More distinct tools than this in one reply is a model reciting the tool list (the 0.5B one
/// does: create, update, archive, episode, profile, log, each once): the reply is ignored
/// and the round falls back to facts written as lines.
const MAX_TOOLS_PER_REPLY: usize = 3;

/// More calls than this in one reply is a model spraying one tool over every id it can
/// think of (the 0.5B one rewrote items 1 to 17 as "updated"): the reply is ignored too.
const MAX_CALLS_PER_REPLY: usize = 6;

/// Facts a model wrote as text, one `FACT topic: sentence` line each (what the prompt asks
/// of a model that cannot call tools: small ones write these more reliably than calls), as
/// `create_knowledge` calls; `step` makes their ids unique.
///
/// A fact must share a word with what the user said (`said`: its content words): the small
/// model sometimes writes the fact as the topic and makes up the sentence ("sister Ana lives
/// in Porto now: She is a family member of the Portuguese government"); then the topic is the
/// fact, and with neither grounded the line is dropped.
fn fact_lines(content: &str, step: u32, said: &BTreeSet<String>) -> Vec<stt_llm::ToolCall> {
    let grounded = |text: &str| content_words(text).iter().any(|w| said.contains(w));
    content
        .lines()
        .filter_map(|line| {
            let line = line.trim().trim_start_matches(['-', '*', ' ']);
            let rest =
                line.get(..4).filter(|p| p.eq_ignore_ascii_case("fact")).map(|_| &line[4..])?;
            // "FACT topic: sentence", or "FACT sentence" from a model that forgot the topic.
            let rest = rest.trim_start_matches([':', ' ']);
            let (topic, fact) = rest.split_once(':').unwrap_or(("", rest));
            // The prompt's own word copied back is no topic; the fact is kept without one.
            let topic = Some(topic.trim()).filter(|t| !t.eq_ignore_ascii_case("topic"));
            let mut fact = fact.trim();
            // The prompt's placeholder copied before the fact is not part of it either.
            if fact.get(..8).is_some_and(|p| p.eq_ignore_ascii_case("sentence"))
                && fact[8..].starts_with([':', ' '])
            {
                fact = fact[8..].trim_start_matches([':', ' ']);
            }
            let fact = memory_tools::without_speaker(fact);
            if fact.is_empty() || fact.eq_ignore_ascii_case("sentence") {
                return None;
            }
            match topic {
                _ if grounded(fact) => Some((topic.unwrap_or_default(), fact)),
                Some(topic) if topic.split_whitespace().count() >= 3 && grounded(topic) => {
                    Some(("", topic))
                }
                _ => None,
            }
        })
        .enumerate()
        .map(|(i, (topic, fact))| stt_llm::ToolCall {
            id: format!("fact-{step}-{i}"),
            name: "create_knowledge".into(),
            arguments: serde_json::json!({"name": topic, "body": fact}),
        })
        .collect()
}

/// The last word of a round that wrote nothing: the same conversation, no tools, facts as
/// lines (what a small model manages when calls fail it).
const EXTRACT: &str = "Extract facts the user states about themselves or their family. Output \
    one line per fact in the form 'FACT topic: sentence', using the user's own words. Output \
    nothing else.";

/// How the model is asked whether a new fact corrects the nearest one held before it: to
/// write the old note as it should read now. Small models miss a correction among a round's
/// tools (the 0.5B one one try in three) and answer "no" to every yes-or-no question, but
/// rewrite a note well. The examples show both outcomes: a new value for the same thing (a
/// colour, a workplace, an age) and something else about the same thing, which leaves the
/// note as it was. With one example of each, the 1.5B model copied every old note back
/// (bench-llm: Lisbon, Leo's age, the meeting's time and the manager kept); told what a new
/// value is, it wrote the new fact over notes it did not correct ("The user's sister is a
/// nurse." for "lives in Lisbon"); both examples of "something else" are needed.
const REWRITE: &str = "You keep a user's notes up to date. Given an old note and new \
    information, write the old note as it should read now. When the new information changes \
    what the note says (a new place, time, number, age, name or price for the same thing), \
    the note takes the new value. When it adds something else, even about the same person, \
    the note stays exactly as it was. Write only the note.";
const REWRITE_EXAMPLES: [(&str, &str, &str); 6] = [
    ("The user's car is red.", "The user painted the car blue.", "The user's car is blue."),
    (
        "The user works at a bakery.",
        "The user started a new job at the library.",
        "The user works at the library.",
    ),
    (
        "The user's daughter is 4.",
        "The user's daughter had her fifth birthday.",
        "The user's daughter is 5.",
    ),
    ("The user's car is red.", "The user's car has a flat tyre.", "The user's car is red."),
    ("The user's daughter is 4.", "The user's daughter likes horses.", "The user's daughter is 4."),
    (
        "The user's brother lives in Rome.",
        "The user's brother is a chef.",
        "The user's brother lives in Rome.",
    ),
];

fn rewrite_question(was: &str, now: &str) -> String {
    format!("Old note: {was}\nNew information: {now}")
}

/// Whether `rewrite` (the old note `was` as the model says it reads now, given `now`) is a
/// correction: some of the old note's words are gone, replaced by words of the new fact, and
/// at least half of them are kept (the same note, a new value). A small model often answers
/// with the new fact itself: sharing only a name ("Caroline went to a support group" against
/// "Caroline is researching adoption agencies") that is no correction. An empty or made-up
/// rewrite corrects nothing.
fn corrects(was: &str, rewrite: &str, now: &str) -> bool {
    let (old, new, fact) = (content_words(was), content_words(rewrite), content_words(now));
    let dropped = old.difference(&new).count();
    let mut added = new.difference(&old).peekable();
    let kept = old.intersection(&new).count();
    dropped > 0
        && kept * 2 >= old.len()
        && added.peek().is_some()
        && added.all(|w| fact.contains(w))
}

/// Whether the model judges `now` to correct `was`.
pub async fn replaces(
    env: &JobEnv,
    client: &Provider,
    was: &str,
    now: &str,
    out: &Sink<Report>,
) -> bool {
    let mut messages = vec![Message::system(REWRITE)];
    for (old, new, answer) in REWRITE_EXAMPLES {
        messages.push(Message::user(rewrite_question(old, new)));
        messages.push(Message::assistant(answer));
    }
    messages.push(Message::user(rewrite_question(was, now)));
    let request = Request {
        messages: &messages,
        tools: &[],
        stream: false,
        max_tokens: 60,
        temperature: DREAM_TEMPERATURE,
        resume: None,
        slot: Some(SLOT_OTHER),
    };
    match complete(env, client, &request, out, |_| {}).await {
        Ok(reply) => {
            let yes = corrects(was, &reply.content, now);
            tracing::debug!(rewrite = %reply.content, was, now, yes, "dream correction check");
            yes
        }
        Err(_) => false,
    }
}

/// Runs a dream (`trigger`: why it started) of at most `max_steps` model requests.
pub async fn run(env: &JobEnv, trigger: &str, max_steps: u32, out: &Sink<Report>) {
    let Some(memory) = &env.memory else { return };
    let Some(client) = &env.client else {
        return out.send(Report::Note(format!("memory: no dream: {}", env.missing)));
    };
    if !client.supports_tools() {
        return out.send(Report::Note(
            "memory: no dream: the provider in use does not call tools (`/providers`)".into(),
        ));
    }
    let sessions = match memory.dream_start(trigger.to_owned()).await {
        Ok(sessions) => sessions,
        Err(why) => return tracing::warn!("memory could not start a dream: {why}"),
    };
    tracing::info!(trigger, sessions = sessions.len(), "dream started");
    let tools: Vec<ToolSpec> = memory_tools::specs(&MemoryTool::DREAM_ROUND)
        .into_iter()
        .map(|s| ToolSpec { name: s.name, description: s.description, parameters: s.parameters })
        .collect();
    let mut steps = 0;
    let mut changes = 0;
    let mut read = 0;
    'sessions: for session in sessions {
        let Ok(Round { text, conversation }) = memory.dream_round(session).await else {
            continue;
        };
        let said = content_words(&conversation);
        let mut messages = vec![Message::system(PROMPT), Message::user(text.clone())];
        let mut seen: Vec<String> = Vec::new();
        // Facts the round saved (or found already known): none, and the user's lines are
        // read once more for facts written as lines.
        let mut facts = 0;
        // Items the round added that correct nothing yet, checked at its end.
        let mut created = Vec::new();
        // `write_dream_log` closes the round (small models call it early and often).
        let mut round_over = false;
        // What the tool schemas cost, on every request of the round.
        let schemas: usize = tools
            .iter()
            .map(|t| {
                super::estimate_tokens(&format!("{}{}{}", t.name, t.description, t.parameters))
            })
            .sum();
        loop {
            if steps >= max_steps {
                break 'sessions;
            }
            // A round that grew past the prompt's budget (a long conversation, a model
            // repeating itself) ends here rather than fail on the server's context size.
            let used: usize = messages
                .iter()
                .map(|m| {
                    let calls: String =
                        m.tool_calls.iter().map(|c| c.arguments.to_string()).collect();
                    super::estimate_tokens(&m.content) + super::estimate_tokens(&calls)
                })
                .sum();
            if schemas + used > env.settings.prompt_budget as usize {
                tracing::info!(tokens = schemas + used, "a dream round outgrew the prompt budget");
                break;
            }
            steps += 1;
            let request = Request {
                messages: &messages,
                tools: &tools,
                stream: false,
                max_tokens: env.settings.max_tokens,
                temperature: DREAM_TEMPERATURE,
                resume: None,
                slot: Some(SLOT_OTHER),
            };
            let reply = match complete(env, client, &request, out, |_| {}).await {
                Ok(reply) => reply,
                Err(e) => {
                    let why = env.explain(&e);
                    let _ = memory.dream_end("failed".into(), why.clone()).await;
                    return out.send(Report::Note(format!("memory: the dream failed: {why}")));
                }
            };
            tracing::debug!(content = %reply.content, calls = ?reply.tool_calls, "dream reply");
            let mut calls = reply.tool_calls.clone();
            if calls.is_empty() {
                calls = stt_llm::calls_in_content(&reply.content, |name| {
                    MemoryTool::named(name).is_some()
                });
            }
            if calls.is_empty() {
                calls = fact_lines(&reply.content, steps, &said);
            }
            let mut distinct: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
            distinct.sort_unstable();
            distinct.dedup();
            if distinct.len() > MAX_TOOLS_PER_REPLY || calls.len() > MAX_CALLS_PER_REPLY {
                tracing::info!(tools = ?distinct, calls = calls.len(), "a dream reply sprayed calls: ignored");
                break;
            }
            // The same call again is a loop (small models do it): this round is over.
            let keys: Vec<String> =
                calls.iter().map(|c| format!("{}{}", c.name, c.arguments)).collect();
            if calls.is_empty() || keys.iter().any(|k| seen.contains(k)) {
                break;
            }
            seen.extend(keys);
            messages.push(Message::calls(calls.clone()));
            for call in calls {
                let Some(tool) = MemoryTool::named(&call.name) else {
                    let no = format!("there is no memory tool named '{}'", call.name);
                    messages.push(Message::tool(call.id.clone(), no));
                    continue;
                };
                if tool == MemoryTool::WriteDreamLog {
                    round_over = true;
                }
                let result = match memory.tool(tool, call.arguments.clone()).await {
                    Ok(called) => {
                        if called.ok && tool.changes_memory() {
                            changes += 1;
                        }
                        if called.ok && tool.saves_a_fact() {
                            facts += 1;
                        }
                        created.extend(called.created);
                        called.result
                    }
                    Err(refusal) => refusal.into_why(),
                };
                messages.push(Message::tool(call.id.clone(), result));
            }
            if round_over {
                break;
            }
        }
        // A round that wrote only an episode or a dream log (the 0.5B model often does, after
        // a refused copy of an old fact) has not read the conversation's facts.
        if facts == 0 && steps < max_steps {
            steps += 1;
            let messages = [Message::system(EXTRACT), Message::user(conversation)];
            let request = Request {
                messages: &messages,
                tools: &[],
                stream: false,
                max_tokens: env.settings.max_tokens,
                temperature: DREAM_TEMPERATURE,
                resume: None,
                slot: Some(SLOT_OTHER),
            };
            if let Ok(reply) = complete(env, client, &request, out, |_| {}).await {
                tracing::debug!(content = %reply.content, "dream extraction");
                for call in fact_lines(&reply.content, steps, &said) {
                    if let Some(tool) = MemoryTool::named(&call.name)
                        && let Ok(called) = memory.tool(tool, call.arguments).await
                        && called.ok
                    {
                        changes += 1;
                        created.extend(called.created);
                    }
                }
            }
        }
        for new in created {
            if steps >= max_steps {
                break;
            }
            let Ok(Rival { old, was, now }) = memory.rival(new).await else {
                continue;
            };
            steps += 1;
            if replaces(env, client, &was, &now, out).await
                && memory.supersede(new, old).await.is_ok()
            {
                changes += 1;
            }
        }
        let _ = memory.dream_round_done(session).await;
        read += 1;
    }
    let note = format!("{read} conversations read, {changes} changes, {steps} requests");
    let _ = memory.dream_end("done".into(), note.clone()).await;
    tracing::info!("dream done: {note}");
    out.send(Report::Note(format!("memory: dreamt ({note})")));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_written_as_lines_lose_the_prompts_words() {
        let content = "FACT sister Ana lives in Lisbon: sentence My sister Ana lives in Lisbon.\n\
            Fact topic: sentence: Typed: I play the cello.\n- FACT pet: Rex is a dog.\nhello\n\
            Fact sister Ana lives in Porto.\n\
            FACT sister Ana lives in Porto now: She is a member of the government.\n\
            FACT weather: It is raining in Oslo.";
        let said = content_words("my sister ana lives in lisbon; she plays the cello; our dog rex");
        let facts: Vec<(String, String)> = fact_lines(content, 1, &said)
            .into_iter()
            .map(|c| {
                let text = |key: &str| c.arguments[key].as_str().unwrap().to_owned();
                (text("name"), text("body"))
            })
            .collect();
        let want = [
            ("sister Ana lives in Lisbon", "My sister Ana lives in Lisbon."),
            ("", "I play the cello."),
            ("pet", "Rex is a dog."),
            ("", "sister Ana lives in Porto."),
            ("", "sister Ana lives in Porto now"),
        ];
        let want: Vec<(String, String)> =
            want.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect();
        assert_eq!(facts, want);
    }

    #[test]
    fn a_rewrite_that_swaps_a_value_for_the_new_facts_is_a_correction() {
        let cases = [
            // (old note, the model's rewrite, new fact, a correction?)
            (
                "My sister lives in Lisbon.",
                "My sister lives in Porto.",
                "She lives in Porto.",
                true,
            ),
            (
                "The dentist visit is on Tuesday.",
                "The dentist visit is on Friday.",
                "Friday.",
                true,
            ),
            // Only a name shared: the model wrote the new fact, not the old one changed.
            (
                "Caroline went to a support group.",
                "Caroline is researching adoption agencies.",
                "Caroline is researching adoption agencies.",
                false,
            ),
            ("The son is 7 years old.", "The son is 8 years old.", "The son turned 8.", true),
            // Unchanged: both are true.
            ("The user's car is blue.", "The user's car is blue.", "The bike is red.", false),
            // Nothing kept: not the same note.
            ("The user drinks coffee.", "Tea in the evening.", "Tea in the evening.", false),
            // Words from nowhere: the model made something up.
            ("The user likes jazz.", "The user likes opera.", "The user likes rock.", false),
            ("The user likes jazz.", "", "The user likes rock.", false),
        ];
        for (was, rewrite, now, want) in cases {
            assert_eq!(corrects(was, rewrite, now), want, "{was} -> {rewrite} ({now})");
        }
    }
}
