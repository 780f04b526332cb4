//! How the battery reads what a model wrote: spellings as words of their own, case and
//! punctuation aside.

/// Whether `text` has any of `spellings` as words of their own, case aside.
pub fn holds(text: &str, spellings: &[&str]) -> bool {
    let text = text.to_lowercase();
    spellings.iter().any(|spelling| {
        let spelling = spelling.to_lowercase();
        text.match_indices(&spelling).any(|(at, _)| {
            let before = text[..at].chars().next_back();
            let after = text[at + spelling.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
        })
    })
}

/// `text` lower-cased, its punctuation dropped, its words single-spaced.
pub fn words(text: &str) -> String {
    let kept: String = text
        .to_lowercase()
        .chars()
        .map(|c| if c.is_alphanumeric() || c == '\'' { c } else { ' ' })
        .collect();
    kept.split_whitespace().collect::<Vec<_>>().join(" ")
}
