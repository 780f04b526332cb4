//! Which words of a segment still being spoken are settled: the local-agreement policy of
//! whisper_streaming, over whole passes.
//!
//! The open segment is transcribed again and again as it grows, each pass from its start.
//! A word is *committed* once two passes in a row agree on it and on every word before it;
//! committed words are shown in every later partial, even if a later pass heard them
//! otherwise (only the final transcript may change them). The words after them are the
//! tentative tail: the newest pass's, as it heard them.
//!
//! A later pass may hear a committed word otherwise, drop it or add one. So each pass is
//! aligned to the committed words by word edits, and agreement is sought after that point:
//! one misheard word does not stop the words after it from being committed.
//!
//! Words are compared without case or punctuation, so "music." and "music," agree; the newest
//! pass's spelling is the one shown when it still agrees.

/// The agreement over one segment's passes.
#[derive(Debug, Default, Clone)]
pub struct Agreement {
    /// The committed words, as last shown.
    committed: Vec<String>,
    /// The words of the last pass.
    last: Vec<String>,
}

/// What a pass shows: the committed words and the tentative tail, as one text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    pub text: String,
    /// Characters (not bytes) of `text` that are committed.
    pub committed_len: usize,
}

impl Agreement {
    /// Takes the text of the next pass; returns what to show.
    pub fn pass(&mut self, text: &str) -> Shown {
        let words: Vec<String> = text.split_whitespace().map(str::to_owned).collect();
        let n = self.committed.len();
        if words.len() >= n && words[..n].iter().zip(&self.committed).all(|(a, b)| same(a, b)) {
            // The pass agrees with what is committed: its spelling is the newest.
            self.committed.clone_from_slice(&words[..n]);
        }
        // Where each pass goes on after the committed words, and where the two agree. Of the
        // places this pass could go on from, the one that agrees most with the last pass.
        let before = align(&self.committed, &self.last).last().copied().unwrap_or(0);
        let agreeing = |from: usize| {
            words[from..].iter().zip(&self.last[before..]).take_while(|(a, b)| same(a, b)).count()
        };
        let (agreed, here) = align(&self.committed, &words)
            .into_iter()
            .map(|j| (agreeing(j), j))
            .max()
            .unwrap_or((0, 0));
        self.committed.extend_from_slice(&words[here..here + agreed]);
        // Whisper ends every pass with a full stop, which is not yet the end of a sentence
        // when the speaker goes on.
        if agreed > 0
            && here + agreed == words.len()
            && let Some(last) = self.committed.last_mut()
        {
            let kept = last.trim_end_matches(['.', '\u{2026}']).len();
            if kept > 0 {
                last.truncate(kept);
            }
        }
        let committed = self.committed.join(" ");
        let committed_len = committed.chars().count();
        let mut shown = committed;
        for word in &words[here + agreed..] {
            if !shown.is_empty() {
                shown.push(' ');
            }
            shown.push_str(word);
        }
        self.last = words;
        Shown { text: shown, committed_len }
    }

    /// Words committed so far.
    pub fn committed(&self) -> &[String] {
        &self.committed
    }
}

/// How many of `words` may stand for `committed`: the lengths of the prefixes of `words`
/// closest to it in word edits, shortest first. (A word heard otherwise is one edit whether it
/// is read as replaced, or as dropped and another added: the caller chooses.)
fn align(committed: &[String], words: &[String]) -> Vec<usize> {
    if committed.is_empty() {
        return vec![0];
    }
    // Edit distances of committed[..i] to words[..j], a row per committed word.
    let mut row: Vec<usize> = (0..=words.len()).collect();
    for (i, c) in committed.iter().enumerate() {
        let mut next = vec![i + 1; words.len() + 1];
        for (j, w) in words.iter().enumerate() {
            next[j + 1] = (row[j] + usize::from(!same(c, w))).min(row[j + 1] + 1).min(next[j] + 1);
        }
        row = next;
    }
    let best = row.iter().copied().min().unwrap_or(0);
    (0..row.len()).filter(|&j| row[j] == best).collect()
}

/// Whether two words are the same word, whatever their case and punctuation.
fn same(a: &str, b: &str) -> bool {
    let key = |w: &str| -> String {
        w.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
    };
    key(a) == key(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &str, committed_len: usize) -> Shown {
        Shown { text: text.into(), committed_len }
    }

    #[test]
    fn words_two_passes_agree_on_are_committed() {
        let mut a = Agreement::default();
        assert_eq!(a.pass("Turn the"), shown("Turn the", 0));
        assert_eq!(a.pass("Turn the kitchen"), shown("Turn the kitchen", 8));
        assert_eq!(a.pass("Turn the kitchen lights on."), shown("Turn the kitchen lights on.", 16));
        // Committed up to the pass's last word: not its full stop, which may not stay one.
        assert_eq!(a.pass("Turn the kitchen lights on."), shown("Turn the kitchen lights on", 26));
        assert_eq!(
            a.pass("Turn the kitchen lights on, please"),
            shown("Turn the kitchen lights on, please", 27)
        );
        assert_eq!(a.committed(), ["Turn", "the", "kitchen", "lights", "on,"]);
    }

    #[test]
    fn case_and_punctuation_do_not_break_agreement_and_the_newest_spelling_shows() {
        let mut a = Agreement::default();
        a.pass("Stop the music.");
        assert_eq!(a.pass("stop the music, please"), shown("stop the music, please", 15));
        assert_eq!(a.pass("Stop the music please."), shown("Stop the music please", 21));
    }

    #[test]
    fn a_committed_word_stays_when_a_later_pass_hears_it_otherwise() {
        let mut a = Agreement::default();
        a.pass("Send a message to Anna");
        a.pass("Send a message to Anna saying");
        // The third pass hears "Hannah": what was committed stays, and the words after it
        // that two passes agree on are committed all the same.
        assert_eq!(
            a.pass("Send a message to Hannah saying I"),
            shown("Send a message to Anna saying I", 29)
        );
        assert_eq!(a.committed().len(), 6);
        // A pass shorter than what is committed shows the committed words alone.
        assert_eq!(a.pass("Send a"), shown("Send a message to Anna saying", 29));
    }

    #[test]
    fn a_word_a_later_pass_drops_or_adds_does_not_stop_the_commits() {
        let mut a = Agreement::default();
        a.pass("Please summarize the free mode.");
        a.pass("Please summarize the free most important.");
        assert_eq!(a.committed(), ["Please", "summarize", "the", "free"]);
        // The next pass hears no "free": it goes on after "the", and agrees with the last
        // one on "most important".
        assert_eq!(
            a.pass("Please summarize the most important points."),
            shown("Please summarize the free most important points.", 40)
        );
        assert_eq!(
            a.pass("Please summarize the most important points from the"),
            shown("Please summarize the free most important points from the", 47)
        );
        // A pass that adds a word in the middle: the words after it still align.
        assert_eq!(
            a.pass("Please summarize all the free most important points from the meeting"),
            shown("Please summarize the free most important points from the meeting", 56)
        );
    }

    #[test]
    fn the_tail_alone_changes_between_passes() {
        let mut a = Agreement::default();
        a.pass("What is the");
        assert_eq!(a.pass("What is the whether"), shown("What is the whether", 11));
        assert_eq!(a.pass("What is the weather like"), shown("What is the weather like", 11));
        assert_eq!(
            a.pass("What is the weather like tomorrow"),
            shown("What is the weather like tomorrow", 24)
        );
    }

    #[test]
    fn nothing_heard_shows_nothing() {
        let mut a = Agreement::default();
        assert_eq!(a.pass(""), shown("", 0));
        assert_eq!(a.pass("  "), shown("", 0));
    }
}
