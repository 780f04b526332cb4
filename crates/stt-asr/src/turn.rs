//! Whether the words heard so far end what the person was saying, judged from whisper's text
//! at a pause (`[daemon].end_of_turn = "text"`).
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

/// Whether `text` (whisper's cleaned text of the segment so far, whose last mark it gave
/// probability `end_p`) reads as a finished turn.
pub fn ends_turn(text: &str, end_p: f32) -> bool {
    if end_p < MIN_END_P {
        return false;
    }
    let text = text.trim_end().trim_end_matches(['"', '\'', ')', ']', '”', '’']);
    if text.ends_with("...") || text.ends_with('…') {
        return false;
    }
    if !text.ends_with(['.', '?', '!']) {
        return false;
    }
    let Some(last) = text.split_whitespace().next_back() else { return false };
    let word: String = last
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '\'' || *c == '’')
        .map(|c| if c == '’' { '\'' } else { c })
        .collect::<String>()
        .to_lowercase();
    !word.is_empty() && !LEADS_ON.contains(&word.as_str())
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
}
