//! What is kept of a reply the model did not finish: its whole sentences, and of a reply
//! that looped, the sentences before the first one it said again.

use std::collections::HashSet;

use stt_memory::text::normalise;

/// Whether `c` at byte `i` of `text` closes a sentence: `.`, `!`, `?` or `。` followed by
/// white space or the end ("3.50" and "10:15" go on).
pub(crate) fn closes(text: &str, i: usize, c: char) -> bool {
    matches!(c, '.' | '!' | '?' | '。')
        && text[i + c.len_utf8()..].chars().next().is_none_or(char::is_whitespace)
}

/// Where each sentence of `text` ends (the byte after it), and each line (a summary's
/// labelled lines).
fn ends(text: &str) -> impl Iterator<Item = usize> + '_ {
    text.char_indices()
        .filter_map(|(i, c)| (closes(text, i, c) || c == '\n').then_some(i + c.len_utf8()))
}

/// A sentence without the label a line may open with ("SUMMARY: The work…"), so that a
/// labelled first sentence said again without its label counts as said again.
fn unlabelled(sentence: &str) -> &str {
    match sentence.split_once(':') {
        Some((label, rest))
            if !label.trim().is_empty()
                && label
                    .trim()
                    .trim_matches(['-', '*', '#', ' '])
                    .chars()
                    .all(char::is_alphabetic) =>
        {
            rest
        }
        _ => sentence,
    }
}

/// `text` up to the end of its last whole sentence, or all of it and "…" when no sentence
/// ended.
pub fn whole_sentences(text: &str) -> String {
    let last = text.char_indices().rfind(|&(i, c)| closes(text, i, c));
    match last {
        Some((i, c)) => text[..i + c.len_utf8()].to_owned(),
        None if text.is_empty() => String::new(),
        None => format!("{}…", text.trim_end()),
    }
}

/// A reply cut off at its token cap, kept to what can be trusted: its whole sentences (and
/// lines) up to the first one it says a second time. A small model that loops repeats the
/// same sentences until the cap (the 1.5B one did so summarizing a kitchen renovation: "The
/// work will start on 2 June, …" four times); what it said before is a summary. `None` when
/// no whole sentence comes before the loop.
pub fn before_the_loop(text: &str) -> Option<String> {
    let mut seen = HashSet::new();
    let (mut start, mut kept) = (0, 0);
    for end in ends(text) {
        let sentence = normalise(unlabelled(&text[start..end]));
        start = end;
        if sentence.is_empty() {
            continue;
        }
        if !seen.insert(sentence) {
            break;
        }
        kept = end;
    }
    let kept = text[..kept].trim();
    (!kept.is_empty()).then(|| kept.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_cut_at_its_last_whole_sentence() {
        assert_eq!(whole_sentences("It is 10:15. The meeting is at 3"), "It is 10:15.");
        assert_eq!(whole_sentences("Done! And then"), "Done!");
        assert_eq!(whole_sentences("It costs 3.50 euros and"), "It costs 3.50 euros and…");
        assert_eq!(whole_sentences(""), "");
    }

    #[test]
    fn a_looping_reply_keeps_what_came_before_the_first_repeat() {
        let looped = "SUMMARY: Bogdan starts on 2 June. The tiles are sage green. The work \
            takes three weeks. The tiles are sage green. The work takes three weeks. The";
        assert_eq!(
            before_the_loop(looped).as_deref(),
            Some(
                "SUMMARY: Bogdan starts on 2 June. The tiles are sage green. The work takes three weeks."
            )
        );
        // The first sentence again, without the line's label.
        let again = "SUMMARY: Leo is 8. The party is at 3. Leo is 8. The";
        assert_eq!(
            before_the_loop(again).as_deref(),
            Some("SUMMARY: Leo is 8. The party is at 3.")
        );
        // Cut off without a loop: the unfinished sentence goes, the labelled lines stay.
        let cut = "SUMMARY: A trip to Porto on 14 March.\nPROFILE: A teacher.\nGOALS: Visit In";
        assert_eq!(
            before_the_loop(cut).as_deref(),
            Some("SUMMARY: A trip to Porto on 14 March.\nPROFILE: A teacher.")
        );
        // The same words in another case or spacing are the same sentence.
        assert_eq!(
            before_the_loop("Leo is 8. Party at 3.  leo IS 8 . more").as_deref(),
            Some("Leo is 8. Party at 3.")
        );
        assert_eq!(before_the_loop("The work will start on 2"), None);
        assert_eq!(before_the_loop(""), None);
    }
}
