//! Which tools a command's words call for. Every schema a small model is shown costs its
//! attention and, on a CPU, the time to read it: the 1.5B model reads about 50 prompt tokens
//! a second on two cores, and the built-in tools' schemas are some 400 tokens. So a command
//! is offered only the built-in tools its words name (a timer, the clipboard, a web page…),
//! and "what is the capital of France" none: its prompt is the system prompt the server
//! already holds, and its own words.
//!
//! The user's own tools (`[[tools.command]]`) are always offered, first: they are few, they
//! do not change while the assistant runs, and so they stay in the prefix the server keeps.

use crate::registry::Builtin;

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
    Some(match Builtin::named(name)? {
        Builtin::GetDatetime => &TIME,
        Builtin::SetTimer => &TIMER,
        Builtin::Notify => &NOTIFICATION,
        Builtin::ClipboardCopy => &CLIPBOARD,
        Builtin::OpenUrl => &BROWSER,
        Builtin::CaptureScreen => &SCREEN,
        Builtin::ListDir | Builtin::ReadFile => &DOCUMENTS,
        Builtin::FetchWeb | Builtin::WebSearch => &WEB,
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

    use Builtin::{
        CaptureScreen, ClipboardCopy, FetchWeb, GetDatetime, ListDir, Notify, OpenUrl, SetTimer,
    };

    fn offered(text: &str) -> Vec<Builtin> {
        [GetDatetime, SetTimer, Notify, ClipboardCopy, OpenUrl, FetchWeb, ListDir]
            .into_iter()
            .filter(|tool| asked_for(tool.name(), text))
            .collect()
    }

    #[test]
    fn a_command_is_offered_the_tools_its_words_name() {
        assert_eq!(offered("What is the capital of France?"), Vec::<Builtin>::new());
        assert_eq!(offered("Turn off the kitchen lights."), Vec::<Builtin>::new());
        assert_eq!(offered("What time is it?"), [GetDatetime]);
        assert_eq!(offered("Set a timer for an hour and a half."), [SetTimer]);
        assert_eq!(offered("Start a thirty second timer for the tea."), [SetTimer]);
        assert_eq!(offered("Put the word banana on the clipboard."), [ClipboardCopy]);
        assert_eq!(offered("Show a notification saying backup done."), [Notify]);
        assert_eq!(offered("Open example.org."), [OpenUrl]);
        assert_eq!(offered("Search the web for rust news"), [FetchWeb]);
        assert_eq!(offered("Read my notes file"), [ListDir]);
    }

    #[test]
    fn the_users_own_tools_are_always_offered() {
        assert!(always("lights") && asked_for("lights", "what is the capital of France"));
        assert!(!always(SetTimer.name()) && !always(CaptureScreen.name()));
    }
}
