//! The matcher against the built-in templates: one case per rule. The precision set (many
//! sentences, lookalikes among them) is apart, in `tests/precision.rs`.

use chrono::{NaiveDate, NaiveDateTime};

use super::*;

/// Monday 7 December 2026, 14:20.
fn now() -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2026, 12, 7).and_then(|d| d.and_hms_opt(14, 20, 0)).unwrap_or_default()
}

fn builtin() -> Intents {
    Intents::builtin().unwrap_or_else(|e| panic!("{e}"))
}

fn decided(text: &str) -> Option<Match> {
    match builtin().decide(text, now()) {
        Decision::Matched(m) => Some(m),
        Decision::NoMatch => None,
        Decision::Unsure(all) => panic!("{text:?} read several ways: {all:?}"),
    }
}

fn intent(text: &str) -> Option<String> {
    decided(text).map(|m| m.intent)
}

#[test]
fn the_built_in_file_loads_and_every_intent_has_an_answer() {
    let intents = builtin();
    let names: Vec<&str> = intents.names().collect();
    assert!(names.len() >= 17, "{names:?}");
    for name in names {
        assert!(intents.answer(name).is_some(), "{name} has no answer");
    }
}

#[test]
fn a_sentence_matches_whole_or_not_at_all() {
    assert_eq!(intent("What time is it?").as_deref(), Some("get_time"));
    assert_eq!(intent("what time is it in Tokyo").as_deref(), Some("get_time_in"));
    assert_eq!(intent("what time is it at the station"), None);
    assert_eq!(intent("what time does the bakery close"), None);
    assert_eq!(intent("is it time"), None);
}

#[test]
fn courtesies_around_a_command_are_dropped() {
    assert_eq!(intent("Hey, could you please tell me the time?").as_deref(), Some("get_time"));
    assert_eq!(intent("What's the date today, thanks").as_deref(), Some("get_date"));
    assert_eq!(intent("please"), None);
}

#[test]
fn typed_slots_are_read_and_the_text_slot_takes_the_fewest_words() {
    let m = decided("Set a timer for ten minutes for the pasta").unwrap_or_else(|| panic!());
    assert_eq!(m.intent, "timer_set");
    assert_eq!(m.slots.get("duration"), Some(&Value::Duration(600.0)));
    assert_eq!(m.text("label"), Some("pasta"));
    let m = decided("set a timer for 10 minutes").unwrap_or_else(|| panic!());
    assert_eq!(m.slots.get("label"), None, "'a' is no label");
    let m = decided("Remind me to call the plumber tomorrow at nine").unwrap_or_else(|| panic!());
    assert_eq!(m.intent, "reminder_add");
    assert_eq!(m.text("text"), Some("call the plumber"));
    let due = NaiveDate::from_ymd_opt(2026, 12, 8).and_then(|d| d.and_hms_opt(9, 0, 0));
    assert_eq!(m.slots.get("time"), due.map(Value::Time).as_ref());
}

#[test]
fn a_slot_that_does_not_read_leaves_the_sentence_to_the_model() {
    assert_eq!(intent("set a timer for when the bakery opens"), None);
    assert_eq!(intent("remind me to call the plumber"), None);
    assert_eq!(intent("remind me to call the plumber yesterday at nine"), None);
}

#[test]
fn two_intents_that_both_match_decide_nothing() {
    let mut intents = builtin();
    intents
        .add("lights", &["turn on the {room} lights".into()], None, "test")
        .unwrap_or_else(|e| panic!("{e}"));
    intents
        .add("kitchen", &["turn on the kitchen lights".into()], None, "test")
        .unwrap_or_else(|e| panic!("{e}"));
    match intents.decide("turn on the kitchen lights", now()) {
        Decision::Unsure(all) => assert_eq!(all.len(), 2),
        other => panic!("{other:?}"),
    }
    match intents.decide("turn on the hall lights", now()) {
        Decision::Matched(m) => assert_eq!(m.text("room"), Some("hall")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_users_file_adds_sentences_and_answers() {
    let mut intents = builtin();
    let mine = Intents::parse(
        "[[intent]]\nname = \"get_time\"\nsentences = [\"what o'clock is it\"]\nanswer = \"{time}, boss.\"\n",
        "mine.toml",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    intents.extend(mine);
    assert!(
        matches!(intents.decide("what o'clock is it", now()), Decision::Matched(m) if m.intent == "get_time")
    );
    assert!(matches!(intents.decide("what time is it", now()), Decision::Matched(_)));
    assert_eq!(intents.answer("get_time"), Some("{time}, boss."));
}

#[test]
fn a_bad_file_is_refused_with_where_and_why() {
    let err = |text: &str| {
        Intents::parse(text, "mine.toml").err().map(|e| e.to_string()).unwrap_or_default()
    };
    assert!(
        err("[[intent]]\nname = \"x\"\nsentence = [\"a\"]\n").starts_with("mine.toml: "),
        "unknown key"
    );
    assert_eq!(
        err("[[intent]]\nname = \"x\"\nsentences = [\"(a|b\"]\n"),
        "mine.toml: intent 'x': template \"(a|b\": ')' is missing"
    );
    assert_eq!(err("[[intent]]\nname = \" \"\n"), "mine.toml: an intent without a name");
}

#[test]
fn slots_of_an_intent_are_listed_with_their_kinds() {
    let slots = builtin().slots("timer_set");
    assert_eq!(slots.get("duration"), Some(&Kind::Duration));
    assert_eq!(slots.get("label"), Some(&Kind::Text));
}

#[test]
fn answers_are_filled_and_optional_parts_left_out_when_empty() {
    let check = |answer: &str, values: &[(&str, &str)], expected: &str| {
        assert_eq!(fill(answer, values), expected, "{answer:?} with {values:?}");
    };
    check(
        "Timer set for {duration}[: {label}].",
        &[("duration", "10 minutes"), ("label", "pasta")],
        "Timer set for 10 minutes: pasta.",
    );
    check(
        "Timer set for {duration}[: {label}].",
        &[("duration", "10 minutes"), ("label", "")],
        "Timer set for 10 minutes.",
    );
    check(
        "Timer set for {duration}[: {label}].",
        &[("duration", "10 minutes")],
        "Timer set for 10 minutes.",
    );
    check("It's {time}.", &[("time", "14:20")], "It's 14:20.");
    check("{a} and {b}", &[("a", "x")], "x and ");
    check("keeps {odd one} and [brackets", &[], "keeps {odd one} and [brackets");
}

#[test]
fn the_moment_a_sentence_names_is_its_longest_time_phrase() {
    let at = |d: u32, h: u32, m: u32| {
        NaiveDate::from_ymd_opt(2026, 12, d).and_then(|d| d.and_hms_opt(h, m, 0))
    };
    assert_eq!(moment_in("Remind me to call the plumber tomorrow at nine.", now()), at(8, 9, 0));
    assert_eq!(moment_in("remind me in ten minutes to stretch", now()), at(7, 14, 30));
    assert_eq!(moment_in("what is the capital of France", now()), None);
    assert_eq!(moment_in("at 9 or at 10 tomorrow", now()), at(8, 10, 0), "the longest run");
}
