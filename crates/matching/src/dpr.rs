//! The DPR `has_answer` matcher.
//!
//! Reproduces `SimpleTokenizer` and `has_answer(answers, text, tokenizer,
//! match_type="string")` from the DPR repository (Karpukhin et al. 2020),
//! which labels retrieved passages in the studies:
//!
//! 1. text and each answer are Unicode NFD-normalised;
//! 2. tokens are maximal runs of letters, numbers and marks
//!    (`[\p{L}\p{N}\p{M}]+`) or any single character that is neither
//!    whitespace/separator nor control (`[^\p{Z}\p{C}]`);
//! 3. tokens are lowercased (`uncased=True`);
//! 4. the passage has the answer if some answer's token sequence occurs
//!    contiguously in the passage's tokens. Answers with no tokens are skipped.

use regex::Regex;
use std::sync::OnceLock;
use unicode_normalization::UnicodeNormalization;

/// DPR's `SimpleTokenizer`, uncased.
#[derive(Debug, Clone, Copy, Default)]
pub struct DprTokenizer;

fn token_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"[\p{L}\p{N}\p{M}]+|[^\p{Z}\p{C}]").expect("static regex"))
}

impl DprTokenizer {
    /// NFD-normalise, tokenise and lowercase `text`.
    pub fn tokens(&self, text: &str) -> Vec<String> {
        let nfd: String = text.nfd().collect();
        token_re()
            .find_iter(&nfd)
            .filter(|m| !m.as_str().chars().all(char::is_whitespace))
            .map(|m| m.as_str().to_lowercase())
            .collect()
    }
}

/// True if any of `answers` occurs as a contiguous token sequence in `text`.
pub fn has_answer(answers: &[impl AsRef<str>], text: &str) -> bool {
    let tok = DprTokenizer;
    let text_tokens = tok.tokens(text);
    answers.iter().any(|a| {
        let at = tok.tokens(a.as_ref());
        !at.is_empty() && text_tokens.windows(at.len()).any(|w| w == at.as_slice())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizer_splits_like_dpr() {
        let t = DprTokenizer.tokens("Hello, World! It's 3.5km.");
        assert_eq!(
            t,
            vec!["hello", ",", "world", "!", "it", "'", "s", "3", ".", "5km", "."]
        );
    }

    #[test]
    fn nfd_makes_composed_and_decomposed_equal() {
        // "é" precomposed (U+00E9) vs "e" + combining acute (U+0301).
        assert!(has_answer(&["Beyonc\u{e9}"], "Beyonce\u{301} sang."));
        assert!(has_answer(&["Beyonce\u{301}"], "BEYONC\u{c9} sang."));
    }

    #[test]
    fn contiguous_token_match_not_substring() {
        assert!(has_answer(&["New York"], "He moved to new york city."));
        assert!(!has_answer(&["York"], "Yorkshire pudding"));
        assert!(!has_answer(&["New York"], "New, York"));
        assert!(has_answer(&["1969"], "In 1969, men landed."));
        assert!(!has_answer(&["1969"], "In 19690 nothing happened."));
        assert!(!has_answer(&["", "   "], "anything"));
    }

    #[test]
    fn non_latin_scripts() {
        assert!(has_answer(&["東京"], "首都は 東京 です"));
        assert!(has_answer(&["Москва"], "Столица России — москва."));
    }
}
