//! Parsers of model responses into the shared labels (unanswerable,
//! conflict) and the parsing mode; the studies' own parsers are in their
//! folders (`ragprobe_studies`).

use crate::squad::normalize_answer;

/// Which parsing rules to apply to a response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ParseMode {
    /// Exactly the reference code's rules (NoMIRACL's
    /// `VanillaTemplate.postprocess`; RGB's `evalue.py`). The default.
    #[default]
    Reference,
    /// Kinder normalisation (`--lenient`): NoMIRACL also maps curly
    /// apostrophes, backticks and `\r` before matching; RGB matches its
    /// phrases case-insensitively.
    Lenient,
}

impl ParseMode {
    /// The mode's name as recorded in score parameters: `reference` or `lenient`.
    pub fn name(self) -> &'static str {
        match self {
            ParseMode::Reference => "reference",
            ParseMode::Lenient => "lenient",
        }
    }
}

/// Seed 000's unanswerable label: the normalised response contains
/// "unanswerable" (the Unans prompt asks the model to write 'unanswerable').
pub fn says_unanswerable(response: &str) -> bool {
    says_unanswerable_normalized(&normalize_answer(response))
}

/// [`says_unanswerable`] of a response already normalised with
/// [`normalize_answer`] (a scorer that checks several labels normalises once).
pub fn says_unanswerable_normalized(normalized: &str) -> bool {
    normalized.contains("unanswerable")
}

/// Seed 000's conflict label: the normalised response contains "conflict"
/// (the Conflict prompt asks the model to respond with 'conflict').
pub fn says_conflict(response: &str) -> bool {
    says_conflict_normalized(&normalize_answer(response))
}

/// [`says_conflict`] of a response already normalised with [`normalize_answer`].
pub fn says_conflict_normalized(normalized: &str) -> bool {
    normalized.contains("conflict")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert!(says_unanswerable("Unanswerable."));
        assert!(says_unanswerable("It is 'unanswerable'"));
        assert!(!says_unanswerable("Paris"));
        assert!(says_conflict("Conflict"));
    }
}
