//! What every CLI's stream folds into: the [`Turn`] (its text, session id, usage, whether the
//! final event came and what went wrong), and the [`Format`] each CLI module implements to
//! read its own events into it.

use serde_json::Value;

use crate::conversation::Usage;

/// One CLI's stream format: folds each JSON event its stdout prints into the turn.
pub(super) trait Format: Send {
    fn event(&mut self, event: &Value, turn: &mut Turn);

    /// Whether a turn needs the stream's final event to count as whole. A CLI whose final
    /// event is known to go missing (opencode) is whole when it exits cleanly.
    fn needs_final_event(&self) -> bool {
        true
    }
}

/// A turn as far as its stream has told it.
#[derive(Debug, Default)]
pub(super) struct Turn {
    /// The answer's text so far.
    pub content: String,
    /// The CLI's session id, once an event named it.
    pub session: Option<String>,
    pub usage: Option<Usage>,
    /// The final event arrived.
    pub done: bool,
    /// The failure the stream itself reported (an error result, a failed turn), in the CLI's
    /// words.
    pub error: Option<String>,
    /// The last non-fatal complaint (a retry, a warning): the best words for a failure the
    /// stream did not report itself.
    pub note: Option<String>,
    /// The next text starts a new message of the model's: a blank line goes before it.
    gap: bool,
}

impl Turn {
    /// Adds a piece of the answer.
    pub fn text(&mut self, piece: &str) {
        if piece.is_empty() {
            return;
        }
        if self.gap && !self.content.is_empty() {
            self.content.push_str("\n\n");
        }
        self.gap = false;
        self.content.push_str(piece);
    }

    /// What follows belongs to another message (after a tool call, say), not the same
    /// paragraph.
    pub fn new_message(&mut self) {
        self.gap = true;
    }

    /// Adds what one step cost (CLIs that count per step, like opencode, are summed).
    pub fn add_usage(&mut self, more: Usage) {
        let usage = self.usage.get_or_insert_with(Usage::default);
        usage.prompt_tokens = usage.prompt_tokens.saturating_add(more.prompt_tokens);
        usage.completion_tokens = usage.completion_tokens.saturating_add(more.completion_tokens);
        usage.cached_tokens = usage.cached_tokens.saturating_add(more.cached_tokens);
    }

    /// Remembers the session id an event names, if it names one.
    pub fn session_from(&mut self, event: &Value, pointer: &str) {
        let id = text_at(event, pointer);
        if !id.is_empty() {
            id.clone_into(self.session.get_or_insert_with(String::new));
        }
    }
}

/// The string at `pointer` (`/event/delta/text`), empty when absent.
pub(super) fn text_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

/// The count at `pointer`, 0 when absent.
pub(super) fn count_at(value: &Value, pointer: &str) -> u32 {
    value
        .pointer(pointer)
        .and_then(Value::as_u64)
        .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Folds captured stdout lines through `format`, as the process loop does.
    pub fn fold(format: &mut dyn Format, lines: &[&str]) -> Turn {
        let mut turn = Turn::default();
        for line in lines {
            let event: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
            format.event(&event, &mut turn);
        }
        turn
    }

    #[test]
    fn messages_are_kept_apart_by_a_blank_line() {
        let mut turn = Turn::default();
        turn.new_message();
        turn.text("Let me look.");
        turn.new_message();
        turn.text("");
        turn.text("It is ");
        turn.text("five.");
        assert_eq!(turn.content, "Let me look.\n\nIt is five.");
    }
}
