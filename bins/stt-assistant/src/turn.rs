//! A chat turn as the assistant keeps it: who said it, the words, and the segments they were
//! said in. The model reads it as one line, `Name: words`; memory keeps the speaker and the
//! words apart. Nothing parses that line back.

/// Who said a chat turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Speaker {
    /// A speaker the roster names.
    Named(String),
    /// Someone speaking whom nobody has named (or speaker identification is off).
    Unknown,
    /// The person at the keyboard (`chat_send`).
    Typed,
}

/// How viewers show a typed turn's speaker, and the model is told it.
pub const TYPED: &str = "Typed";

impl Speaker {
    /// The speaker as memory keeps it; `None` when nobody knows who spoke.
    pub fn name(&self) -> Option<&str> {
        match self {
            Speaker::Named(name) => Some(name),
            Speaker::Typed => Some(TYPED),
            Speaker::Unknown => None,
        }
    }

    /// The speaker as the model reads it before the words.
    pub fn label(&self) -> &str {
        self.name().unwrap_or("Unknown")
    }
}

/// One chat turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatTurn {
    pub speaker: Speaker,
    pub words: String,
    /// The daemon's segments the words came from (none for a typed turn).
    pub segs: Vec<u64>,
}

impl ChatTurn {
    /// Words typed at the keyboard.
    pub fn typed(words: impl Into<String>) -> Self {
        ChatTurn { speaker: Speaker::Typed, words: words.into(), segs: Vec::new() }
    }

    /// Words `name` said.
    pub fn named(name: impl Into<String>, words: impl Into<String>) -> Self {
        ChatTurn { speaker: Speaker::Named(name.into()), words: words.into(), segs: Vec::new() }
    }

    /// The turn as the model reads it, and the session shows it: `Name: words`.
    pub fn line(&self) -> String {
        format!("{}: {}", self.speaker.label(), self.words)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_reads_who_said_it_and_memory_keeps_the_name_apart() {
        let said = |speaker: Speaker| ChatTurn {
            speaker,
            words: "set a timer: 5 min".into(),
            segs: vec![],
        };
        let named = said(Speaker::Named("Ana".into()));
        assert_eq!(named.line(), "Ana: set a timer: 5 min");
        assert_eq!(named.speaker.name(), Some("Ana"));
        let unknown = said(Speaker::Unknown);
        assert_eq!(unknown.line(), "Unknown: set a timer: 5 min");
        assert_eq!(unknown.speaker.name(), None);
        assert_eq!(ChatTurn::typed("hi").line(), "Typed: hi");
        assert_eq!(ChatTurn::typed("hi").speaker.name(), Some("Typed"));
    }
}
