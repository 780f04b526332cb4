//! Whether the words heard so far end what the person was saying, judged from whisper's text
//! at a pause (`[daemon].end_of_turn = "text"`, and with the voice's pitch, `"prosody"`).
//!
//! Whisper punctuates from the words and the audio together: a sentence heard whole ends in
//! a full stop, a question mark or an exclamation mark, while speech cut off mid-thought more
//! often ends without one, with a comma or with an ellipsis. Whisper still closes a fragment
//! with a full stop now and then ("Set a timer for." is rare, "Set a timer for five." is
//! not), so a text that ends on a word that cannot end an English sentence (an article, a
//! conjunction, a preposition that leads on) is not an end whatever its punctuation.

/// Words after which an English sentence goes on. A sentence can end on most prepositions
/// ("what is it for?"), so only those that almost never end one are here.
const LEADS_ON: &[&str] = &[
    "a", "an", "the", "and", "or", "but", "nor", "so", "because", "if", "than", "that's", "of",
    "to", "with", "from", "into", "onto", "my", "your", "our", "their", "his", "its", "um", "uh",
    "er", "erm", "hmm", "like", "whether", "although", "though", "unless", "while", "whereas",
    "let's", "i", "we", "i'm", "we're", "please",
];

/// How sure whisper must be of the mark that ends the text ([`Transcription::end_p`]): on
/// espeak-ng sentences cut mid-way (`scripts/bench-asr --only turn`) whisper's full stops
/// were mostly below it, on whole ones mostly above (docs/PERFORMANCE.md). A higher floor
/// (0.65) split fewer of them at a 450 ms pause (4 of 19, not 6) but let the plainest of
/// commands ("Turn on the kitchen lights.", the daemon's end-of-turn test) wait out the
/// hangover.
///
/// [`Transcription::end_p`]: crate::Transcription::end_p
pub const MIN_END_P: f32 = 0.5;

/// How sure whisper must be of its mark when the voice also fell where the person stopped
/// (`end_of_turn = "prosody"`): the fall is the stronger sign, and whisper is often unsure of
/// the full stop after a short command it heard whole ("Stop the music.": 0.35).
pub const MIN_END_P_FELL: f32 = 0.2;

/// What whisper's text at a pause says of the turn, before the voice is heard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A sentence closed by a mark whisper was sure of ([`MIN_END_P`]): the turn ends.
    Finished,
    /// A sentence closed by a mark whisper was less sure of ([`MIN_END_P_FELL`]).
    Unsure,
    /// Words with no mark after them at all, the last one not leading on: tiny.en often
    /// leaves the full stop off a command it heard whole ("Turn the volume down a little").
    Unmarked,
    /// Anything else: a comma, an ellipsis, a word that leads on, whisper's doubt, nothing.
    Open,
}

/// What `text` (whisper's cleaned text of the segment so far, whose last mark it gave
/// probability `end_p`) says of the turn.
pub fn shape(text: &str, end_p: f32) -> Shape {
    let text = text.trim_end().trim_end_matches(['"', '\'', ')', ']', '”', '’']);
    if text.ends_with("...") || text.ends_with('…') {
        return Shape::Open;
    }
    let Some(last) = text.split_whitespace().next_back() else { return Shape::Open };
    let word: String = last
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '\'' || *c == '’')
        .map(|c| if c == '’' { '\'' } else { c })
        .collect::<String>()
        .to_lowercase();
    if word.is_empty() || LEADS_ON.contains(&word.as_str()) {
        return Shape::Open;
    }
    if text.ends_with(char::is_alphanumeric) {
        Shape::Unmarked
    } else if !text.ends_with(['.', '?', '!']) {
        Shape::Open
    } else if end_p >= MIN_END_P {
        Shape::Finished
    } else if end_p >= MIN_END_P_FELL {
        Shape::Unsure
    } else {
        Shape::Open
    }
}

/// Whether `text`, whose last mark whisper gave probability `end_p`, reads as a finished turn
/// by its words alone (`end_of_turn = "text"`).
pub fn ends_turn(text: &str, end_p: f32) -> bool {
    shape(text, end_p) == Shape::Finished
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sentence_ends_a_turn_and_a_fragment_does_not() {
        for done in [
            "Stop.",
            "Close all windows.",
            "What's the weather like tomorrow in Paris?",
            "Turn it off!",
            "He said \"yes.\"",
            "What is it for?",
            "Set a timer for 5 minutes. ",
        ] {
            assert!(ends_turn(done, 0.9), "{done:?} is a finished turn");
            assert!(!ends_turn(done, 0.3), "{done:?}: whisper was not sure of its mark");
        }
        for open in [
            "",
            "   ",
            ".",
            "Set a timer for",
            "Set a timer for 5 minutes,",
            "I was thinking...",
            "I was thinking…",
            "Remind me to buy milk and.",
            "Send it to the.",
            "Open the door because",
            "Um.",
            "I'm going to.",
            "Tell me what I.",
        ] {
            assert!(!ends_turn(open, 0.9), "{open:?} goes on");
        }
    }

    #[test]
    fn a_text_is_shaped_by_its_mark_and_how_sure_whisper_was_of_it() {
        assert_eq!(shape("Stop the music.", 0.8), Shape::Finished);
        assert_eq!(shape("Stop the music.", 0.35), Shape::Unsure);
        assert_eq!(shape("Stop the music.", 0.1), Shape::Open);
        assert_eq!(shape("Turn the volume down a little", 0.0), Shape::Unmarked);
        assert_eq!(shape("Turn the volume down a little,", 0.9), Shape::Open);
        assert_eq!(shape("Copy the last paragraph and", 0.0), Shape::Open);
        assert_eq!(shape("Copy the last paragraph and.", 0.9), Shape::Open);
        assert_eq!(shape("I was thinking...", 0.9), Shape::Open);
        assert_eq!(shape("", 0.9), Shape::Open);
    }
}
