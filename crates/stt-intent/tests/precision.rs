//! The precision set (`sentences.tsv`): every sentence decided as its line says, read at
//! Monday 7 December 2026, 14:20. A sentence for the model that an intent takes, or a
//! sentence given to the wrong intent or with a wrong value, is a wrong action: there must
//! be none. Sentences for an intent that reach the model instead cost only time; the test
//! prints how many, and holds the share matched to a floor.

use chrono::{NaiveDate, NaiveDateTime};
use stt_intent::{Decision, Intents, Value};

fn now() -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2026, 12, 7).and_then(|d| d.and_hms_opt(14, 20, 0)).unwrap_or_default()
}

/// The least share of the intents' sentences matched without the model.
const RECALL_FLOOR: f64 = 0.97;

/// Whether `value` is what `expected` writes.
fn fits(value: &Value, expected: &str) -> bool {
    match value {
        Value::Duration(s) | Value::Number(s) => {
            expected.parse::<f64>().is_ok_and(|e| (e - s).abs() < 1e-6)
        }
        Value::Time(t) => t.format("%Y-%m-%d %H:%M").to_string() == expected,
        Value::Date(d) => d.to_string() == expected,
        Value::Zone(z) => z.name() == expected,
        Value::Text(t) => t == expected,
    }
}

#[test]
fn the_precision_set_has_no_wrong_action() {
    let intents = Intents::builtin().unwrap_or_else(|e| panic!("{e}"));
    let set = include_str!("sentences.tsv");
    let (mut wrong, mut missed) = (Vec::new(), Vec::new());
    let (mut for_intents, mut for_model) = (0, 0);
    for line in set.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let mut columns = line.split('\t');
        let (expected, sentence) = (columns.next().unwrap_or(""), columns.next().unwrap_or(""));
        let checks: Vec<(&str, &str)> = columns
            .next()
            .unwrap_or("")
            .split(';')
            .filter_map(|c| c.trim().split_once('='))
            .collect();
        let decided = intents.decide(sentence, now());
        if expected == "model" {
            for_model += 1;
            if let Decision::Matched(m) = decided {
                wrong.push(format!(
                    "{sentence:?} is the model's, but {} took it ({})",
                    m.intent, m.template
                ));
            }
            continue;
        }
        for_intents += 1;
        match decided {
            Decision::Matched(m) if m.intent == expected => {
                for (slot, value) in &checks {
                    match m.slots.get(*slot) {
                        Some(got) if fits(got, value) => {}
                        got => wrong.push(format!("{sentence:?}: {slot} is {got:?}, not {value}")),
                    }
                }
                for slot in m.slots.keys().filter(|s| !checks.iter().any(|(c, _)| c == s)) {
                    if m.slots[slot].as_text().is_some() {
                        wrong.push(format!(
                            "{sentence:?}: {slot} = {:?}, and none was said",
                            m.slots[slot]
                        ));
                    }
                }
            }
            Decision::Matched(m) => {
                wrong.push(format!(
                    "{sentence:?} is {expected}, but {} took it ({})",
                    m.intent, m.template
                ));
            }
            Decision::NoMatch | Decision::Unsure(_) => {
                missed.push(format!("{sentence:?} ({expected})"));
            }
        }
    }
    let matched = for_intents - missed.len();
    let recall = matched as f64 / for_intents as f64;
    eprintln!(
        "precision set: {} sentences ({for_intents} for intents, {for_model} for the model); \
         wrong actions {}; matched {matched} of {for_intents} ({:.1}%)",
        for_intents + for_model,
        wrong.len(),
        recall * 100.0
    );
    for m in &missed {
        eprintln!("  reached the model: {m}");
    }
    assert!(for_intents + for_model >= 300, "the set must have at least 300 sentences");
    assert!(wrong.is_empty(), "wrong actions:\n{}", wrong.join("\n"));
    assert!(
        recall >= RECALL_FLOOR,
        "matched {:.1}% of the intents' sentences, below {:.0}%",
        recall * 100.0,
        RECALL_FLOOR * 100.0
    );
}
