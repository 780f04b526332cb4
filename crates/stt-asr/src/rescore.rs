//! The user's own words heard where whisper wrote others. Biased toward the vocabulary
//! ([`crate::bias`]), greedy decoding still takes a wrong first step now and then and never
//! comes back ("I'd appropriately feel a rule" for "Add a Prometheus rule"): the term's first
//! token was not the likeliest one, though the audio fits the whole term well. So after a
//! pass, whisper's decoder reads the text again with a term in place of a run of words it was
//! unsure of, and scores both readings against the same audio.
//!
//! A term is written where all of these hold:
//! - whisper was unsure of a word in the run (a token below [`UNSURE_P`]): words it heard
//!   clearly are not second-guessed;
//! - the run is not already a term of the list, and sounds somewhat like the term
//!   ([`crate::spelling::sounds_alike`], at least [`MIN_ALIKE`]);
//! - the text with the term scores within `MARGIN × alike` of whisper's own: the more the
//!   words sound like the term, the less the audio itself must favour it;
//! - and it beats every other term tried in the same place by [`LEAD`]: where any term would
//!   do, the audio is not saying one of them.
//!
//! One term a final, the best. The decoder reads one token at a time (whisper.cpp gives the
//! logits of a batch's last token only), each term tried costing its tokens and those after
//! the run; a reading that falls too low to matter is cut short.

use std::ffi::c_int;

use crate::spelling::{MAX_WORDS, sounds_alike};

/// Whisper's own probability below which a token counts as unsure.
pub const UNSURE_P: f32 = 0.5;

/// The least log-probability a term's first token needs, where a run begins, to be tried.
pub const FIRST_MIN: f32 = -12.0;

/// How much less likely (natural log) than whisper's own text a text with a term may be,
/// where the words it replaces sound just like it; less as they sound less alike.
pub const MARGIN: f32 = 10.0;

/// How alike the words and the term must sound for the term to be tried at all.
pub const MIN_ALIKE: f32 = 0.5;

/// How much more likely (natural log) the text with the term must be than with any other
/// term tried in the same place.
pub const LEAD: f32 = 5.0;

/// Whisper's decoder as the rescoring reads it.
pub trait Decoder {
    /// Reads `tokens` from position `n_past` of the decoder's input on (what it read from
    /// there before is forgotten) and writes the log-probability of each possible next token
    /// (by id, up to and including the end of text) into `next`.
    fn read(&mut self, tokens: &[c_int], n_past: usize, next: &mut Vec<f32>) -> Result<(), String>;
}

/// One token of whisper's text, as the rescoring needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    /// Its id in whisper's vocabulary.
    pub id: c_int,
    /// Whisper's probability for it in the pass.
    pub p: f32,
    /// Its text.
    pub text: String,
}

/// A vocabulary term as the rescoring tries it.
#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    /// Its tokens as whisper writes it after a space.
    pub tokens: Vec<c_int>,
    /// The term as the user wrote it.
    pub text: String,
    /// Which of the user's terms it spells (a term is tried as written and capitalised).
    pub of: usize,
}

/// A term written in place of a run of whisper's tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct Swap {
    /// The first token replaced.
    pub start: usize,
    /// One past the last token replaced.
    pub end: usize,
    /// Which term (its index in the list given).
    pub term: usize,
    /// The text with the term against whisper's own, in natural log.
    pub gain: f32,
    /// The text with the term against the best other term in the same place.
    pub lead: f32,
    /// How alike the words replaced and the term sound.
    pub alike: f32,
}

/// The best swap of a term for a run of words of `text` (whisper's tokens after `prefix`, its
/// prompt and task tokens), if one passes the rules of the module; `eot` is the end-of-text
/// token. The decoder holds `prefix` (never empty) from the pass that wrote `text`: only its
/// last token is read again.
pub fn best_swap(
    decoder: &mut impl Decoder,
    prefix: &[c_int],
    text: &[Token],
    terms: &[Term],
    eot: c_int,
) -> Result<Option<Swap>, String> {
    let n = text.len();
    let ids: Vec<c_int> = text.iter().map(|t| t.id).collect();
    let words: Vec<usize> = (0..n).filter(|&j| j == 0 || text[j].text.starts_with(' ')).collect();
    // The runs of words that may be replaced: (first token, end, their text).
    let mut runs = Vec::new();
    for (k, &i) in words.iter().enumerate() {
        for w in 1..=MAX_WORDS {
            let end = words.get(k + w).copied().unwrap_or(n);
            let run = &text[i..end];
            if run.iter().any(|t| t.p < UNSURE_P)
                && !terms.iter().any(|t| contains(&ids[i..end], &t.tokens))
            {
                runs.push((i, end, run.iter().map(|t| t.text.as_str()).collect::<String>()));
            }
            if end == n {
                break;
            }
        }
    }
    if runs.is_empty() || terms.iter().all(|t| t.tokens.is_empty()) {
        return Ok(None);
    }
    let lp = |row: &[f32], token: c_int| {
        usize::try_from(token).ok().and_then(|i| row.get(i)).copied().unwrap_or(f32::NEG_INFINITY)
    };

    // Whisper's own text, read once: each token's log-probability (and the end of text's),
    // and each term's first token's where each token stands.
    let p = prefix.len();
    let mut row = Vec::new();
    // The pass left the prefix in the decoder: its last token is read again for its row.
    let held = p.saturating_sub(1);
    decoder.read(&prefix[held..], held, &mut row)?;
    let mut own = Vec::with_capacity(n + 1);
    let mut firsts: Vec<Vec<f32>> = Vec::with_capacity(n);
    for j in 0..=n {
        own.push(lp(&row, ids.get(j).copied().unwrap_or(eot)));
        if j < n {
            firsts.push(
                terms
                    .iter()
                    .map(|t| t.tokens.first().map_or(f32::NEG_INFINITY, |&f| lp(&row, f)))
                    .collect(),
            );
            decoder.read(&ids[j..=j], p + j, &mut row)?;
        }
    }
    // `tail[j]`: the log-probability of whisper's text from token j to its end.
    let mut tail = vec![0.0_f32; n + 2];
    for j in (0..=n).rev() {
        tail[j] = tail[j + 1] + own[j];
    }

    // Each run's score with each term that may stand there.
    let mut scored: Vec<(usize, usize, usize, f32, f32)> = Vec::new(); // (start, end, term, gain, alike)
    let mut read_to = n; // the decoder holds `prefix` and `ids[..read_to]`
    let mut after = Vec::new();
    let mut next = Vec::new();
    for start in words.iter().copied().filter(|&i| runs.iter().any(|r| r.0 == i)) {
        for (t, term) in terms.iter().enumerate() {
            let ends: Vec<(usize, f32)> = runs
                .iter()
                .filter(|r| r.0 == start)
                .map(|r| (r.1, sounds_alike(&r.2, &term.text)))
                .filter(|&(_, alike)| alike >= MIN_ALIKE)
                .collect();
            if ends.is_empty() || term.tokens.is_empty() || firsts[start][t] < FIRST_MIN {
                continue;
            }
            if read_to < start {
                decoder.read(&ids[read_to..start], p + read_to, &mut row)?;
            }
            read_to = start;
            // The term itself, then whisper's text after each run it may replace. Log-
            // probabilities only fall as tokens are read, so a reading that drops below
            // `floor` is left there: it can neither win nor stand as a rival to a winner.
            let floor = tail[start] - MARGIN - LEAD;
            let mut score = firsts[start][t];
            for m in 0..term.tokens.len() {
                if score < floor {
                    break;
                }
                decoder.read(&term.tokens[m..=m], p + start + m, &mut after)?;
                if let Some(&token) = term.tokens.get(m + 1) {
                    score += lp(&after, token);
                }
            }
            let at = p + start + term.tokens.len();
            for (end, alike) in ends {
                let mut total = score;
                if total >= floor {
                    next.clone_from(&after);
                    for (q, &token) in ids[end..].iter().enumerate() {
                        total += lp(&next, token);
                        if total < floor {
                            break;
                        }
                        decoder.read(&ids[end + q..=end + q], at + q, &mut next)?;
                    }
                    total += lp(&next, eot);
                }
                let gain = total - tail[start];
                tracing::trace!(
                    start,
                    end,
                    term = t,
                    gain,
                    alike,
                    "a term tried in place of words"
                );
                scored.push((start, end, t, gain, alike));
            }
        }
    }

    let mut best: Option<Swap> = None;
    for &(start, end, term, gain, alike) in &scored {
        let rival = scored
            .iter()
            .filter(|s| (s.0, s.1) == (start, end) && terms[s.2].of != terms[term].of)
            .map(|s| s.3)
            .fold(f32::NEG_INFINITY, f32::max);
        let lead = gain - rival;
        if gain >= -MARGIN * alike && lead >= LEAD && best.as_ref().is_none_or(|b| gain > b.gain) {
            best = Some(Swap { start, end, term, gain, lead, alike });
        }
    }
    Ok(best)
}

/// Whether `tokens` holds `part` as a run.
fn contains(tokens: &[c_int], part: &[c_int]) -> bool {
    !part.is_empty() && tokens.windows(part.len()).any(|w| w == part)
}

#[cfg(test)]
mod tests {
    use super::*;

    const EOT: c_int = 20;
    const PREFIX: [c_int; 2] = [18, 19];
    /// Below every log-probability the sentences give: what the audio does not say.
    const UNHEARD: f32 = -30.0;

    /// A decoder that hears whole sentences (after [`PREFIX`], up to [`EOT`]), each token with
    /// its own log-probability, and nothing else; it refuses to read past what it holds, as
    /// whisper's cache would give garbage there.
    struct Heard {
        sentences: Vec<(Vec<c_int>, Vec<f32>)>,
        holds: Vec<c_int>,
    }

    impl Heard {
        /// `text` is what whisper wrote: the decoder holds the prefix and it, as after a pass.
        fn new(text: &[c_int], sentences: &[Sentence]) -> Self {
            let sentences = sentences
                .iter()
                .map(|(tokens, lps)| {
                    let mut full = PREFIX.to_vec();
                    full.extend_from_slice(tokens);
                    full.push(EOT);
                    let mut all = vec![0.0; PREFIX.len()];
                    all.extend_from_slice(lps);
                    assert_eq!(all.len(), full.len(), "a log-probability a token and the end");
                    (full, all)
                })
                .collect();
            Self { sentences, holds: [&PREFIX[..], text].concat() }
        }
    }

    impl Decoder for Heard {
        fn read(
            &mut self,
            tokens: &[c_int],
            n_past: usize,
            next: &mut Vec<f32>,
        ) -> Result<(), String> {
            assert!(n_past <= self.holds.len(), "read at {n_past}, holding {}", self.holds.len());
            self.holds.truncate(n_past);
            self.holds.extend_from_slice(tokens);
            next.clear();
            next.resize(usize::try_from(EOT).unwrap() + 1, UNHEARD);
            let k = self.holds.len();
            for (sentence, lps) in &self.sentences {
                if sentence.len() > k && sentence.starts_with(&self.holds) {
                    let id = usize::try_from(sentence[k]).unwrap();
                    next[id] = next[id].max(lps[k]);
                }
            }
            Ok(())
        }
    }

    /// A sentence the decoder hears: its tokens, and their log-probabilities and the end's.
    type Sentence = (&'static [c_int], &'static [f32]);

    /// Token texts by id.
    const TEXTS: [&str; 12] = [
        " Connect",
        " to",
        " Mateo",
        " Tailscail",
        " network",
        " first.",
        " Tail",
        "scale",
        " banana",
        " Tails",
        "kale",
        " Taylor",
    ];

    fn text(ids: &[c_int], p: &[f32]) -> Vec<Token> {
        ids.iter()
            .zip(p)
            .map(|(&id, &p)| Token { id, p, text: TEXTS[usize::try_from(id).unwrap()].to_owned() })
            .collect()
    }

    fn term(tokens: &[c_int], text: &str, of: usize) -> Term {
        Term { tokens: tokens.to_vec(), text: text.to_owned(), of }
    }

    /// Whisper wrote "Connect to Tailscail network first." (unsure of " Tailscail"); the audio
    /// says "Connect to Tailscale network first." a little less likely to the decoder.
    fn tailscail() -> (Vec<c_int>, Vec<Sentence>) {
        let wrote = vec![0, 1, 3, 4, 5];
        let heard: Vec<Sentence> = vec![
            (&[0, 1, 3, 4, 5], &[-0.1, -0.1, -1.0, -0.2, -0.2, -0.1]),
            (&[0, 1, 6, 7, 4, 5], &[-0.1, -0.1, -3.0, -0.5, -0.3, -0.2, -0.1]),
        ];
        (wrote, heard)
    }

    /// The best swap of `terms` in `wrote`, whisper's probabilities `p`, for a decoder that
    /// hears `heard`.
    fn swap(
        wrote: &[c_int],
        p: &[f32],
        heard: &[Sentence],
        terms: &[Term],
    ) -> Result<Option<Swap>, String> {
        best_swap(&mut Heard::new(wrote, heard), &PREFIX, &text(wrote, p), terms, EOT)
    }

    /// The best swap of "Tailscale" (tokens 6, 7) alone.
    fn tailscale(wrote: &[c_int], p: &[f32], heard: &[Sentence]) -> Result<Option<Swap>, String> {
        swap(wrote, p, heard, &[term(&[6, 7], "Tailscale", 0)])
    }

    #[test]
    fn a_term_whisper_was_unsure_of_is_written_when_the_audio_allows_it() {
        let (wrote, heard) = tailscail();
        let swap = tailscale(&wrote, &[0.9, 0.9, 0.3, 0.8, 0.9], &heard).unwrap().expect("a swap");
        assert_eq!((swap.start, swap.end, swap.term), (2, 3, 0));
        // (-3.0 - 0.5 - 0.3 - 0.2 - 0.1) - (-1.0 - 0.2 - 0.2 - 0.1): the two readings' odds.
        assert!((swap.gain - -2.6).abs() < 1e-4, "{swap:?}");
        assert!(swap.lead.is_infinite(), "no other term: {swap:?}");
        assert!((swap.alike - sounds_alike(" Tailscail", "Tailscale")).abs() < f32::EPSILON);
    }

    #[test]
    fn words_whisper_was_sure_of_are_not_second_guessed() {
        let (wrote, heard) = tailscail();
        assert_eq!(tailscale(&wrote, &[0.9, 0.9, 0.6, 0.8, 0.9], &heard), Ok(None));
    }

    #[test]
    fn a_term_the_audio_does_not_favour_enough_is_not_written() {
        let (wrote, _) = tailscail();
        let heard: Vec<Sentence> = vec![
            (&[0, 1, 3, 4, 5], &[-0.1, -0.1, -1.0, -0.2, -0.2, -0.1]),
            (&[0, 1, 6, 7, 4, 5], &[-0.1, -0.1, -9.0, -3.0, -0.3, -0.2, -0.1]),
        ];
        let swap = tailscale(&wrote, &[0.9, 0.9, 0.3, 0.8, 0.9], &heard);
        assert_eq!(swap, Ok(None), "11 below whisper's own, more than the margin");
    }

    #[test]
    fn words_that_sound_nothing_like_the_term_are_left_alone() {
        // "Connect to banana network first.", the audio as likely to say "Tailscale".
        let wrote = [0, 1, 8, 4, 5];
        let heard: Vec<Sentence> = vec![
            (&[0, 1, 8, 4, 5], &[-0.1, -0.1, -1.0, -0.2, -0.2, -0.1]),
            (&[0, 1, 6, 7, 4, 5], &[-0.1, -0.1, -0.5, -0.1, -0.2, -0.2, -0.1]),
        ];
        assert_eq!(tailscale(&wrote, &[0.9, 0.9, 0.3, 0.8, 0.9], &heard), Ok(None));
    }

    #[test]
    fn a_term_already_written_is_not_swapped_for_another() {
        // "Connect to Tailscale network first.", unsure; "Tails kale" would fit as well.
        let wrote = [0, 1, 6, 7, 4, 5];
        let heard: Vec<Sentence> = vec![
            (&[0, 1, 6, 7, 4, 5], &[-0.1, -0.1, -1.0, -0.2, -0.2, -0.2, -0.1]),
            (&[0, 1, 9, 10, 4, 5], &[-0.1, -0.1, -0.1, -0.1, -0.2, -0.2, -0.1]),
        ];
        let terms = [term(&[6, 7], "Tailscale", 0), term(&[9, 10], "Tailskale", 1)];
        assert_eq!(swap(&wrote, &[0.9, 0.9, 0.3, 0.3, 0.8, 0.9], &heard, &terms), Ok(None));
    }

    #[test]
    fn where_two_terms_fit_alike_neither_is_written() {
        let (wrote, mut heard) = tailscail();
        // "Taylor" (a term too) fits the audio within the lead of "Tailscale".
        heard.push((&[0, 1, 11, 4, 5], &[-0.1, -0.1, -3.5, -0.3, -0.2, -0.1]));
        let terms = [term(&[6, 7], "Tailscale", 0), term(&[11], "Taylor", 1)];
        let unsure = [0.9, 0.9, 0.3, 0.8, 0.9];
        assert_eq!(swap(&wrote, &unsure, &heard, &terms), Ok(None));
        // The same term written two ways is no rival to itself.
        let terms = [term(&[6, 7], "Tailscale", 0), term(&[9, 10], "Tailscale", 0)];
        heard.push((&[0, 1, 9, 10, 4, 5], &[-0.1, -0.1, -3.2, -0.5, -0.3, -0.2, -0.1]));
        let found = swap(&wrote, &unsure, &heard, &terms).unwrap().expect("a swap");
        assert_eq!((found.start, found.end, found.term), (2, 3, 0));
    }

    #[test]
    fn nothing_to_try_reads_nothing() {
        struct Deaf;
        impl Decoder for Deaf {
            fn read(&mut self, _: &[c_int], _: usize, _: &mut Vec<f32>) -> Result<(), String> {
                Err("read".into())
            }
        }
        let wrote = [0, 1, 3];
        let sure = text(&wrote, &[0.9, 0.9, 0.9]);
        assert_eq!(
            best_swap(&mut Deaf, &PREFIX, &sure, &[term(&[6, 7], "Tailscale", 0)], EOT),
            Ok(None)
        );
        let unsure = text(&wrote, &[0.9, 0.9, 0.1]);
        assert_eq!(best_swap(&mut Deaf, &PREFIX, &unsure, &[], EOT), Ok(None));
        assert_eq!(
            best_swap(&mut Deaf, &PREFIX, &[], &[term(&[6, 7], "Tailscale", 0)], EOT),
            Ok(None)
        );
        // A decoder that fails is an error, not a swap.
        assert!(
            best_swap(&mut Deaf, &PREFIX, &unsure, &[term(&[6, 7], "Tailscale", 0)], EOT).is_err()
        );
    }
}
