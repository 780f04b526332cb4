//! Triage: the classifier as the lane trains it, on the held-out examples and on the sentences
//! the cross-process test speaks; and the extraction against the scripted model (its answer
//! checked against the shape, asked again once).

#![allow(clippy::print_stderr)]

use stt_assistant::llm::triage::Extraction;
use stt_assistant::llm::{Report, Work};
use stt_assistant::triage::classify::{self, Classifier, EmbeddingClassifier};
use stt_testkit::llm_server::{LlmServer, Script};

use crate::common;

/// The classifier as the lane trains it, or `None` (having said why) without the model.
fn trained() -> Option<EmbeddingClassifier> {
    let models = stt_testkit::models_dir();
    let embedder = match stt_embed::Embedder::load(
        &stt_embed::default_dir(&models),
        &stt_embed::runtime_library(&models),
    ) {
        Ok(embedder) => embedder,
        Err(e) => {
            assert!(std::env::var_os("STT_TEST_STRICT").is_none(), "{e}");
            eprintln!("SKIPPED: {e}");
            return None;
        }
    };
    let examples = classify::parse_examples(classify::EXAMPLES).unwrap();
    Some(EmbeddingClassifier::train(embedder, &examples).unwrap())
}

fn top(classifier: &mut EmbeddingClassifier, text: &str) -> (String, f32) {
    let p = classifier.classify(&[text]).unwrap().remove(0);
    let (i, confidence) =
        p.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map(|(i, p)| (i, *p)).unwrap();
    (classifier.categories()[i].clone(), confidence)
}

/// Most of the held-out examples are read right (chatter right when every category stays
/// under half), and each spoken test sentence gets its category on top.
#[test]
fn the_classifier_reads_held_out_speech_and_the_spoken_sentences() {
    let Some(mut classifier) = trained() else { return };
    let held_out = classify::parse_examples(classify::HELD_OUT).unwrap();
    let labels = classify::labels();
    let right = held_out
        .iter()
        .filter(|e| {
            let (category, confidence) = top(&mut classifier, &e.text);
            match labels[e.label].as_str() {
                classify::CHATTER => confidence < 0.5,
                label => category == label,
            }
        })
        .count();
    let accuracy = right as f64 / held_out.len() as f64;
    eprintln!("held out: {right} of {} ({:.1}%)", held_out.len(), accuracy * 100.0);
    assert!(accuracy >= 0.7, "{right} of {}", held_out.len());
    for (category, text) in stt_testkit::speech::TRIAGE_LINES {
        let (top, confidence) = top(&mut classifier, text);
        eprintln!("{text:?}: {top} {confidence:.2}");
        assert_eq!(top, category, "{text:?}");
    }
}

fn window() -> Extraction {
    Extraction {
        id: 7,
        seg_ids: vec![3, 4],
        utterances: vec!["Please send the quarterly report to Maria by Friday.".into()],
        signals: vec![("request".into(), 0.93), ("task".into(), 0.4)],
    }
}

const CONTENT: &str = r#"{"tasks": [{"what": "send the quarterly report to Maria", "who": null, "when": "Friday"}], "dates": ["Friday"], "people": ["Maria"], "decision": null}"#;

fn extracted(reports: Vec<Report>) -> (Extraction, Result<stt_proto::TriageContent, String>) {
    reports
        .into_iter()
        .find_map(|r| match r {
            Report::Extracted(window, outcome) => Some((*window, outcome)),
            _ => None,
        })
        .expect("an extraction report")
}

#[tokio::test]
async fn an_answer_off_its_shape_is_asked_again_once_then_reported() {
    let server = LlmServer::start();
    let env = common::env(&server, common::settings(), None);
    server.push(Script::Text("Sure! Maria gets the report.".into()));
    server.push(Script::Text(format!("```json\n{CONTENT}\n```")));
    let (back, outcome) = extracted(common::run(&env, Work::Triage(Box::new(window()))).await);
    assert_eq!(back, window(), "the window comes back with its signals");
    let content = outcome.unwrap();
    assert_eq!(content.people, ["Maria"]);
    assert_eq!(content.tasks[0].when.as_deref(), Some("Friday"));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let again = requests[1]["messages"].as_array().unwrap();
    let last = again.last().unwrap()["content"].as_str().unwrap();
    assert!(last.contains("does not fit") && last.contains("no JSON object"), "{last}");
    let asked = requests[0]["messages"][1]["content"].as_str().unwrap();
    assert!(
        asked.ends_with("1. Please send the quarterly report to Maria by Friday.\n"),
        "{asked}"
    );

    server.push(Script::Text("no".into()));
    server.push(Script::Text(r#"{"tasks": []}"#.into()));
    let (_, outcome) = extracted(common::run(&env, Work::Triage(Box::new(window()))).await);
    let error = outcome.unwrap_err();
    assert!(error.contains("twice") && error.contains("missing field"), "{error}");
    assert_eq!(server.requests().len(), 4, "asked again once, not more");
}
