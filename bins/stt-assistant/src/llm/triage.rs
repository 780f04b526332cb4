//! Triage's second stage: when a window's signals escalate, the model reads its utterances
//! and writes what they hold as one JSON object: tasks, dates, people, a decision. The reply
//! is checked against that shape ([`parse`]); a reply that does not fit is sent back once with
//! what was wrong, and a second miss is reported as the extraction's error. No tools, no
//! conversation: a request of its own, in the slot chat's background work uses.

use serde::Deserialize;
use stt_llm::Message;
use stt_proto::{TriageContent, TriageTask};

use super::{JobEnv, Report, complete, json_object, one_answer};
use crate::lane::Sink;

/// A window to extract from, as the owner hands it to the queue.
#[derive(Debug, Clone, PartialEq)]
pub struct Extraction {
    /// The window's id (its `triage` events').
    pub id: u64,
    /// The settled turn that asked.
    pub seg_ids: Vec<u64>,
    /// The utterances, oldest first.
    pub utterances: Vec<String>,
    /// The classifier's confidences, per category.
    pub signals: Vec<(String, f32)>,
}

/// The system prompt.
pub const SYSTEM: &str = "You read what people said near a desktop microphone (transcribed \
    speech, so words may be misheard) and write down what it holds. Answer with one JSON \
    object and nothing else, exactly of this shape:\n\
    {\"tasks\": [{\"what\": \"...\", \"who\": null, \"when\": null}], \"dates\": [], \"people\": [], \"decision\": null}\n\
    tasks: things someone is to do, each with who is to do it and by when, as said (null when \
    not said). dates: dates and times mentioned, as said. people: the names of people \
    mentioned (not \"I\" or \"you\"). decision: what the speakers decided, in one sentence, or \
    null when they decided nothing. Use only what was said; leave a list empty when there is \
    nothing for it.";

/// Longest reply asked for, in tokens: a few tasks and names.
const MAX_TOKENS: u32 = 300;

/// The request's user message: the utterances, numbered. (Not the classifier's signals: a
/// small model given them wrote them back as the decision.)
fn ask(window: &Extraction) -> String {
    let mut text = String::from("What was said, oldest first:\n");
    for (i, utterance) in window.utterances.iter().enumerate() {
        text.push_str(&format!("{}. {utterance}\n", i + 1));
    }
    text
}

/// Asks the model, checks its answer, asks once more when it does not fit; reports
/// [`Report::Extracted`].
pub async fn run(env: &JobEnv, window: Extraction, out: &Sink<Report>) {
    let Some(client) = env.client.as_ref() else {
        out.send(Report::Extracted(Box::new(window), Err(env.missing.clone())));
        return;
    };
    let mut messages = vec![Message::system(SYSTEM), Message::user(ask(&window))];
    let mut outcome = Err(String::new());
    for attempt in 0..2 {
        let request = one_answer(&messages, MAX_TOKENS);
        let reply = match complete(env, client, &request, out, |_| {}).await {
            Ok(reply) => reply,
            Err(e) => {
                outcome = Err(env.explain(&e));
                break;
            }
        };
        match parse(&reply.content) {
            Ok(content) => {
                outcome = Ok(content);
                break;
            }
            Err(why) if attempt == 0 => {
                tracing::info!(
                    "triage: the extraction did not fit its shape ({why}); asking again"
                );
                messages.push(Message::assistant(&reply.content));
                messages.push(Message::user(format!(
                    "That does not fit: {why}. Answer again with only the JSON object, of \
                     exactly the shape given."
                )));
            }
            Err(why) => {
                outcome = Err(format!(
                    "the model's extraction did not fit its shape twice ({why}); a larger \
                     model (or another provider) writes it more reliably"
                ));
            }
        }
    }
    out.send(Report::Extracted(Box::new(window), outcome));
}

/// The reply's shape: every key there, no other.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Shape {
    tasks: Vec<TaskShape>,
    dates: Vec<String>,
    people: Vec<String>,
    decision: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskShape {
    what: String,
    #[serde(default)]
    who: Option<String>,
    #[serde(default)]
    when: Option<String>,
}

/// Words that are no one's name.
const PRONOUNS: [&str; 12] =
    ["i", "me", "you", "we", "us", "he", "him", "she", "her", "they", "them", "someone"];

/// The content of a reply that fits the shape (a code fence around it is allowed), or what
/// is wrong with it, in words the model is told.
pub fn parse(reply: &str) -> Result<TriageContent, String> {
    let shape: Shape = serde_json::from_str(json_object(reply)?).map_err(|e| e.to_string())?;
    let clean = |s: String| Some(s.trim().to_owned()).filter(|s| !s.is_empty() && s != "null");
    let tasks = shape
        .tasks
        .into_iter()
        .filter_map(|t| {
            Some(TriageTask {
                what: clean(t.what)?,
                who: t.who.and_then(clean),
                when: t.when.and_then(clean),
            })
        })
        .collect();
    // Small models list the speaker ("I") among the people, told not to or not.
    let person = |name: &String| !PRONOUNS.contains(&name.to_lowercase().as_str());
    Ok(TriageContent {
        tasks,
        dates: shape.dates.into_iter().filter_map(clean).collect(),
        people: shape.people.into_iter().filter_map(clean).filter(person).collect(),
        decision: shape.decision.and_then(clean),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_of_the_shape_is_read_and_cleaned() {
        let reply = "```json\n{\"tasks\": [{\"what\": \"call Ana\", \"who\": \"\", \"when\": \
                     \"after lunch tomorrow\"}, {\"what\": \" \"}], \"dates\": [\"tomorrow\", \"\"], \
                     \"people\": [\"Ana\", \"I\", \"We\"], \"decision\": null}\n```";
        let content = parse(reply).unwrap();
        assert_eq!(
            content,
            TriageContent {
                tasks: vec![TriageTask {
                    what: "call Ana".into(),
                    who: None,
                    when: Some("after lunch tomorrow".into())
                }],
                dates: vec!["tomorrow".into()],
                people: vec!["Ana".into()],
                decision: None,
            }
        );
    }

    #[test]
    fn a_reply_off_the_shape_says_what_is_wrong() {
        assert!(parse("Sure! Here are the tasks.").unwrap_err().contains("no JSON object"));
        let missing = parse(r#"{"tasks": [], "dates": []}"#).unwrap_err();
        assert!(missing.contains("people"), "{missing}");
        let extra =
            parse(r#"{"tasks": [], "dates": [], "people": [], "decision": null, "mood": "ok"}"#)
                .unwrap_err();
        assert!(extra.contains("mood"), "{extra}");
        let wrong = parse(r#"{"tasks": "call Ana", "dates": [], "people": [], "decision": null}"#)
            .unwrap_err();
        assert!(wrong.contains("invalid type"), "{wrong}");
    }

    #[test]
    fn the_question_numbers_the_utterances() {
        let window = Extraction {
            id: 1,
            seg_ids: vec![3],
            utterances: vec!["We need to ship on Friday.".into(), "Ana does the notes.".into()],
            signals: vec![("task".into(), 0.91), ("decision".into(), 0.4)],
        };
        let text = ask(&window);
        assert_eq!(
            text,
            "What was said, oldest first:\n1. We need to ship on Friday.\n2. Ana does the notes.\n"
        );
    }
}
