//! The user's own words spelled their way. Told a term in its prompt, whisper still often
//! writes it as it sounds: split in two ("Next cloud", "Wire guard"), a letter off
//! ("Hyperland", "Annelise"). After each pass, a word or a run of up to three words that is
//! within a letter in five of a vocabulary term, ignoring case, spaces and punctuation, is
//! replaced by the term as the user wrote it.
//!
//! Terms shorter than [`MIN_LETTERS`] are only ever matched exactly: a short word is too
//! easily one letter away from a common one.

/// Letters (and digits) a term needs before a near miss counts as the term.
pub const MIN_LETTERS: usize = 5;

/// A near miss may be this many edits away per letter of the term (rounded down).
const EDITS_PER_LETTER: f64 = 0.2;

/// The longest run of words one term may replace (here and in [`crate::rescore`]).
pub const MAX_WORDS: usize = 3;

/// `text` with every near miss of a term in `terms` spelled as the term.
pub fn respell(text: &str, terms: &[String]) -> String {
    let words = words(text);
    if words.is_empty() || terms.is_empty() {
        return text.to_owned();
    }
    // Longer terms first: "Home Assistant" before "Assistant".
    let mut terms: Vec<(&str, String)> =
        terms.iter().map(|t| (t.as_str(), key(t))).filter(|(_, k)| !k.is_empty()).collect();
    terms.sort_by_key(|(_, k)| std::cmp::Reverse(k.chars().count()));

    let mut out = String::with_capacity(text.len());
    let mut copied = 0; // bytes of `text` already in `out`
    let mut i = 0;
    while i < words.len() {
        match best_match(&words[i..], &terms) {
            Some((n, term)) => {
                let (start, end) = (words[i].core.0, words[i + n - 1].core.1);
                out.push_str(&text[copied..start]);
                out.push_str(term);
                copied = end;
                i += n;
            }
            None => i += 1,
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// A word of the text: the byte span of its letters, digits and inner marks ("don't",
/// "e-mail"), without the punctuation around it, and their lowercase key.
struct Word {
    core: (usize, usize),
    key: String,
}

fn words(text: &str) -> Vec<Word> {
    let mut words = Vec::new();
    let mut at = 0;
    for raw in text.split_inclusive(char::is_whitespace) {
        let trimmed = raw.trim_end();
        let lead = trimmed.len() - trimmed.trim_start_matches(|c: char| !c.is_alphanumeric()).len();
        let inner = trimmed.trim_matches(|c: char| !c.is_alphanumeric());
        if !inner.is_empty() {
            words.push(Word { core: (at + lead, at + lead + inner.len()), key: key(inner) });
        }
        at += raw.len();
    }
    words
}

/// Lowercase letters and digits only: what is compared.
fn key(s: &str) -> String {
    s.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

/// The term the words at the start of `words` spell, if any, and how many words it takes:
/// the closest match, the fewest words on a tie.
fn best_match<'t>(words: &[Word], terms: &[(&'t str, String)]) -> Option<(usize, &'t str)> {
    let mut best: Option<(usize, usize, &str)> = None; // (edits, words, term)
    for (term, term_key) in terms {
        let letters = term_key.chars().count();
        let allowed = if letters < MIN_LETTERS {
            0
        } else {
            #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
            let edits = (letters as f64 * EDITS_PER_LETTER).floor() as usize;
            edits
        };
        let mut joined = String::new();
        for (n, word) in words.iter().take(MAX_WORDS).enumerate() {
            joined.push_str(&word.key);
            let len = joined.chars().count();
            if len > letters + allowed {
                break;
            }
            if len + allowed < letters {
                continue;
            }
            let edits = strsim::levenshtein(&joined, term_key);
            if edits <= allowed && best.is_none_or(|(e, w, _)| (edits, n + 1) < (e, w)) {
                best = Some((edits, n + 1, term));
            }
        }
    }
    best.map(|(_, n, term)| (n, term))
}

/// How alike `a` and `b` sound, from 0 (nothing alike) to 1 (the same), judged by their
/// consonants: each letter's class in Soundex's grouping (b f p v; c g j k q s x z; d t; l;
/// m n; r), a class repeated once, vowels and h, w, y left out, compared by edit distance.
/// Crude, but it is what tells "Chobcidian" from "Funder" as a hearing of "Obsidian", and
/// whisper's misses keep most consonants of what was said.
pub fn sounds_alike(a: &str, b: &str) -> f32 {
    let (a, b) = (consonants(a), consonants(b));
    let longest = a.chars().count().max(b.chars().count());
    if longest == 0 {
        return 0.0;
    }
    #[allow(clippy::cast_precision_loss)]
    let alike = 1.0 - strsim::levenshtein(&a, &b) as f32 / longest as f32;
    alike
}

/// The consonant classes of `s` ([`sounds_alike`]), one digit each.
fn consonants(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars().flat_map(char::to_lowercase) {
        let class = match c {
            'b' | 'f' | 'p' | 'v' => '1',
            'c' | 'g' | 'j' | 'k' | 'q' | 's' | 'x' | 'z' => '2',
            'd' | 't' => '3',
            'l' => '4',
            'm' | 'n' => '5',
            'r' => '6',
            _ => continue,
        };
        if !out.ends_with(class) {
            out.push(class);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(list: &[&str]) -> Vec<String> {
        list.iter().map(|t| (*t).to_owned()).collect()
    }

    #[test]
    fn near_misses_of_a_term_are_spelled_as_the_term() {
        let t = terms(&[
            "Nextcloud",
            "Hyprland",
            "Anneliese",
            "WireGuard",
            "kubectl",
            "Home Assistant",
        ]);
        for (heard, expected) in [
            (
                "Please open Next cloud and share the file.",
                "Please open Nextcloud and share the file.",
            ),
            ("Hyperland crashed after the update.", "Hyprland crashed after the update."),
            ("Remind Annelise about the invoice.", "Remind Anneliese about the invoice."),
            ("Turn on wire guard, before you connect.", "Turn on WireGuard, before you connect."),
            ("Use Kubectl to restart it.", "Use kubectl to restart it."),
            ("Ask home assistant.", "Ask Home Assistant."),
            ("(Nextcloud) is up", "(Nextcloud) is up"),
        ] {
            assert_eq!(respell(heard, &t), expected, "{heard:?}");
        }
    }

    #[test]
    fn other_words_are_left_alone() {
        let t = terms(&["Efren", "Niamh", "Ngozi", "Sam", "Grafana", "Nextcloud"]);
        for text in [
            "Open the door often.",
            "What is your name?",
            "Send it to the same place.",
            "Graph and a chart.",
            "The next clown is here.  Two  spaces stay.",
            "",
            "…",
        ] {
            assert_eq!(respell(text, &t), text, "{text:?} changed");
        }
        // A short term only when it is exactly there.
        assert_eq!(respell("ask sam", &t), "ask Sam");
        assert_eq!(respell("ask Pam", &t), "ask Pam");
    }

    #[test]
    fn misheard_terms_sound_alike_and_other_words_do_not() {
        for (heard, term) in [
            ("Chobcidian,", "Obsidian"),
            ("image", "Immich"),
            ("Tandy with", "Thandiwe"),
            ("kube-er-eats", "Kubernetes"),
            ("Scumectal to", "kubectl"),
        ] {
            let alike = sounds_alike(heard, term);
            assert!(alike >= 0.5, "{heard:?} as {term:?}: {alike}");
        }
        for (heard, term) in
            [("the sea call", "Siobhan"), ("Lucky", "Joaquin"), ("a backup.", "Immich")]
        {
            let alike = sounds_alike(heard, term);
            assert!(alike < 0.4, "{heard:?} as {term:?}: {alike}");
        }
        assert_eq!(sounds_alike("Nextcloud", "next cloud"), 1.0);
        assert_eq!(sounds_alike("", "aeiou"), 0.0, "no consonants: nothing to compare");
    }
}
