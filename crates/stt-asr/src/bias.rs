//! Whisper nudged toward the user's own words while it decodes (contextual biasing, as in
//! shallow fusion with a list of phrases).
//!
//! The prompt tells whisper which words to expect, and the small models still write most of
//! them as they sound ("Cubect", "Graf alert", "Syncfinfished"). So while whisper picks each
//! token, the tokens that spell a vocabulary term get a bonus on their logits: a small one for
//! a term's first token anywhere, a larger one for its next token once the tokens so far end
//! with the start of the term. A term whisper has begun is then likely finished as written,
//! and audio that sounds nothing like a term is not bent into one: the first token's bonus is
//! too small to outweigh what whisper hears. Once a term is whole, the tokens that would run
//! on into the same word ("Krzysztof" + "am") lose that bonus: the term ends where it ends.

use std::ffi::c_int;

// Tuned on `scripts/bench-asr --only vocabulary` with tiny.en (2026-12-06). Without the
// run-on rule, first-token bonuses of 2 / 3 / 4 (next 6 / 6 / 8) spelled 27 / 31 / 32 of the
// 40 terms right and moved the real recordings' WER +0.0 / +0.3 / +1.4 points: at 4 whisper
// wrote terms for words nobody said ("eight" → "Efren, Efren"). With it, 2.5 and 3 both
// spelled 32, +0.3 points. A next-token bonus of 3 to 10 moved one term or none.

/// Added to the logit of a term's first token at every step.
pub const START_BONUS: f32 = 2.5;

/// Added to the logit of a term's next token when the tokens so far end with its beginning.
pub const NEXT_BONUS: f32 = 6.0;

/// The token sequences of the vocabulary's terms, and the bonuses they give.
#[derive(Debug, Clone, Default)]
pub struct Bias {
    /// Each term as whisper spells it in running text (after a space), longest first.
    paths: Vec<Vec<c_int>>,
    /// The tokens that carry on the word before them (they start with a letter or a digit,
    /// not a space or a mark), by token id.
    run_on: Vec<bool>,
    start: f32,
    next: f32,
}

impl Bias {
    /// Bonuses for the terms whose token sequences are `paths` (empty ones are left out);
    /// `run_on[id]` says whether token `id` carries on the word before it.
    pub fn new(paths: Vec<Vec<c_int>>, run_on: Vec<bool>) -> Self {
        Self::with_bonuses(paths, run_on, START_BONUS, NEXT_BONUS)
    }

    /// As [`Bias::new`], with bonuses of one's own.
    pub fn with_bonuses(
        mut paths: Vec<Vec<c_int>>,
        run_on: Vec<bool>,
        start: f32,
        next: f32,
    ) -> Self {
        paths.retain(|p| !p.is_empty());
        paths.sort_by_key(|p| std::cmp::Reverse(p.len()));
        paths.dedup();
        Self { paths, run_on, start, next }
    }

    /// Whether there is nothing to bias toward.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// Adds the bonuses for the next token after `tokens` (the text tokens decoded so far) to
    /// `logits` (one a vocabulary token). A token several terms favour gets the largest bonus
    /// once; tokens outside `logits` are ignored.
    pub fn apply(&self, tokens: &[c_int], logits: &mut [f32]) {
        let mut bonuses: Vec<(c_int, f32)> = Vec::new();
        let mut give =
            |token: c_int, bonus: f32| match bonuses.iter_mut().find(|(t, _)| *t == token) {
                Some((_, b)) => *b = b.max(bonus),
                None => bonuses.push((token, bonus)),
            };
        let mut whole = false;
        for path in &self.paths {
            give(path[0], self.start);
            for k in 1..path.len() {
                if tokens.ends_with(&path[..k]) {
                    give(path[k], self.next);
                }
            }
            whole |= tokens.ends_with(path);
        }
        if whole {
            for (logit, _) in logits.iter_mut().zip(&self.run_on).filter(|(_, run_on)| **run_on) {
                *logit -= self.next;
            }
        }
        for (token, bonus) in bonuses {
            if let Some(logit) = usize::try_from(token).ok().and_then(|i| logits.get_mut(i)) {
                *logit += bonus;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logits() -> Vec<f32> {
        vec![0.0; 10]
    }

    #[test]
    fn a_terms_first_token_gets_the_small_bonus_anywhere() {
        let bias = Bias::new(vec![vec![3, 4, 5]], Vec::new());
        let mut l = logits();
        bias.apply(&[1, 2], &mut l);
        assert_eq!(l[3], START_BONUS);
        assert_eq!(l[4], 0.0, "not begun, so its second token gets nothing");
        assert_eq!(l.iter().filter(|&&x| x != 0.0).count(), 1);
    }

    #[test]
    fn a_begun_term_is_pulled_toward_its_next_token() {
        let bias = Bias::new(vec![vec![3, 4, 5]], Vec::new());
        let mut l = logits();
        bias.apply(&[1, 3], &mut l);
        assert_eq!(l[4], NEXT_BONUS);
        let mut l = logits();
        bias.apply(&[3, 4], &mut l);
        assert_eq!(l[5], NEXT_BONUS);
        assert_eq!(l[4], 0.0, "the prefix [3, 4] does not end with [3]");
        let mut l = logits();
        bias.apply(&[3, 4, 5], &mut l);
        assert_eq!(l[3], START_BONUS, "a finished term is not pulled on");
        assert_eq!(l.iter().filter(|&&x| x != 0.0).count(), 1);
    }

    #[test]
    fn a_whole_term_does_not_run_on_into_the_next_token() {
        // Tokens 7 and 8 carry on a word; 9 starts a new one.
        let run_on = (0..10).map(|t| t == 7 || t == 8).collect();
        let bias = Bias::new(vec![vec![3, 4]], run_on);
        let mut l = logits();
        bias.apply(&[3, 4], &mut l);
        assert_eq!((l[7], l[8], l[9]), (-NEXT_BONUS, -NEXT_BONUS, 0.0));
        let mut l = logits();
        bias.apply(&[3], &mut l);
        assert_eq!((l[7], l[8]), (0.0, 0.0), "only once the term is whole");
    }

    #[test]
    fn a_token_two_terms_favour_gets_the_larger_bonus_once() {
        let bias = Bias::new(vec![vec![3, 4], vec![4, 6], vec![4, 6], vec![]], Vec::new());
        let mut l = logits();
        bias.apply(&[3], &mut l);
        assert_eq!(l[4], NEXT_BONUS, "the start of [4, 6] and the next of [3, 4]: not summed");
        assert_eq!(l[3], START_BONUS);
    }

    #[test]
    fn tokens_outside_the_vocabulary_are_ignored_and_nothing_is_empty() {
        let bias = Bias::new(vec![vec![42, -1]], Vec::new());
        let mut l = logits();
        bias.apply(&[42], &mut l);
        assert!(l.iter().all(|&x| x == 0.0));
        assert!(Bias::new(vec![vec![]], Vec::new()).is_empty());
        assert!(Bias::default().is_empty());
    }
}
