//! Which tools a command's words call for. Every schema a small model is shown costs its
//! attention and, on a CPU, the time to read it: the 1.5B model reads about 50 prompt tokens
//! a second on two cores, and the built-in tools' schemas are some 400 tokens. So a command
//! is offered only the built-in tools its words name (a timer, the clipboard, a web page…),
//! and "what is the capital of France" none: its prompt is the system prompt the server
//! already holds, and its own words.
//!
//! The user's own tools (`[[tools.command]]`) are always offered, first: they are few, they
//! do not change while the assistant runs, and so they stay in the prefix the server keeps.

use crate::registry::{
    CAPTURE_SCREEN, CLIPBOARD_COPY, FETCH_WEB, GET_DATETIME, LIST_DIR, NOTIFY, OPEN_URL, READ_FILE,
    SET_TIMER, WEB_SEARCH,
};

const TIME: [&str; 29] = [
    "time",
    "times",
    "date",
    "dates",
    "day",
    "days",
    "today",
    "tonight",
    "tomorrow",
    "yesterday",
    "weekday",
    "week",
    "weekend",
    "month",
    "year",
    "clock",
    "now",
    "when",
    "calendar",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "morning",
    "afternoon",
    "evening",
];
const TIMER: [&str; 19] = [
    "timer",
    "timers",
    "alarm",
    "alarms",
    "countdown",
    "remind",
    "reminder",
    "minute",
    "minutes",
    "min",
    "mins",
    "second",
    "seconds",
    "sec",
    "secs",
    "hour",
    "hours",
    "ping",
    "wake",
];
const NOTIFICATION: [&str; 10] = [
    "notify",
    "notification",
    "notifications",
    "alert",
    "alerts",
    "popup",
    "pop",
    "banner",
    "message",
    "toast",
];
const CLIPBOARD: [&str; 5] = ["clipboard", "copy", "paste", "clip", "yank"];
const BROWSER: [&str; 18] = [
    "open", "browser", "website", "site", "url", "link", "page", "webpage", "http", "https", "www",
    "com", "org", "net", "visit", "mail", "email", "mailto",
];
const DOCUMENTS: [&str; 16] = [
    "file",
    "files",
    "folder",
    "folders",
    "directory",
    "document",
    "documents",
    "doc",
    "docs",
    "pdf",
    "docx",
    "read",
    "notes",
    "note",
    "report",
    "markdown",
];
const WEB: [&str; 16] = [
    "web", "website", "site", "page", "webpage", "url", "link", "internet", "online", "search",
    "google", "look", "news", "http", "https", "com",
];
const SCREEN: [&str; 8] =
    ["screen", "window", "display", "see", "showing", "shown", "error", "dialog"];

/// The words that call for built-in tool `name`; `None` for a tool of the user's own.
fn words_for(name: &str) -> Option<&'static [&'static str]> {
    Some(match name {
        GET_DATETIME => &TIME,
        SET_TIMER => &TIMER,
        NOTIFY => &NOTIFICATION,
        CLIPBOARD_COPY => &CLIPBOARD,
        OPEN_URL => &BROWSER,
        CAPTURE_SCREEN => &SCREEN,
        LIST_DIR | READ_FILE => &DOCUMENTS,
        FETCH_WEB | WEB_SEARCH => &WEB,
        _ => return None,
    })
}

/// Whether tool `name` is always offered: one of the user's own (`[[tools.command]]`).
pub fn always(name: &str) -> bool {
    words_for(name).is_none()
}

/// Whether a command's words (`text`) call for tool `name`: a word of its list is among
/// them. The user's own tools: always.
pub fn asked_for(name: &str, text: &str) -> bool {
    let Some(list) = words_for(name) else { return true };
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .any(|w| list.contains(&w.to_lowercase().as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered(text: &str) -> Vec<&'static str> {
        [GET_DATETIME, SET_TIMER, NOTIFY, CLIPBOARD_COPY, OPEN_URL, FETCH_WEB, LIST_DIR]
            .into_iter()
            .filter(|name| asked_for(name, text))
            .collect()
    }

    #[test]
    fn a_command_is_offered_the_tools_its_words_name() {
        assert_eq!(offered("What is the capital of France?"), Vec::<&str>::new());
        assert_eq!(offered("Turn off the kitchen lights."), Vec::<&str>::new());
        assert_eq!(offered("What time is it?"), [GET_DATETIME]);
        assert_eq!(offered("Set a timer for an hour and a half."), [SET_TIMER]);
        assert_eq!(offered("Start a thirty second timer for the tea."), [SET_TIMER]);
        assert_eq!(offered("Put the word banana on the clipboard."), [CLIPBOARD_COPY]);
        assert_eq!(offered("Show a notification saying backup done."), [NOTIFY]);
        assert_eq!(offered("Open example.org."), [OPEN_URL]);
        assert_eq!(offered("Search the web for rust news"), [FETCH_WEB]);
        assert_eq!(offered("Read my notes file"), [LIST_DIR]);
    }

    #[test]
    fn the_users_own_tools_are_always_offered() {
        assert!(always("lights") && asked_for("lights", "what is the capital of France"));
        assert!(!always(SET_TIMER) && !always(CAPTURE_SCREEN));
    }
}
