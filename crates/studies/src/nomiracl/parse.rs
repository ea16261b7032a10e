//! NoMIRACL's response parser: the relevance label of a response, as the
//! reference's `VanillaTemplate.postprocess` reads it.

use ragprobe_matching::parse::ParseMode;

/// NoMIRACL's relevance label of a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NomiraclLabel {
    /// "Yes, answer is present".
    Yes,
    /// "I don't know".
    IDontKnow,
    /// Neither, or both.
    Invalid,
}

impl NomiraclLabel {
    /// The label as the `scores.nomiracl_label` column writes it: `yes`, `idk` or `invalid`.
    pub fn name(self) -> &'static str {
        match self {
            NomiraclLabel::Yes => "yes",
            NomiraclLabel::IDontKnow => "idk",
            NomiraclLabel::Invalid => "invalid",
        }
    }
}

/// NoMIRACL's label of a response, exactly as the official code
/// (project-miracl/nomiracl, `nomiracl/prompts/template.py`,
/// `VanillaTemplate.postprocess`, inherited by the role, repeat and
/// explanation templates) computes it:
/// 1. normalise: `\n` -> space, `\t` -> space, lowercase (nothing else:
///    no trimming, no apostrophe mapping);
/// 2. both "i don't know" and "yes, answer is present" occur -> invalid
///    (the code's word-count tie-break compares single words with a
///    phrase, so it never fires);
/// 3. "i don't know" -> idk; "yes, answer is present" -> yes;
/// 4. "answer is present" -> yes; "answer is not present" -> idk;
/// 5. a bracketed number (`[3]`) in a normalised response shorter than 10
///    characters -> yes; otherwise invalid.
///
/// [`ParseMode::Lenient`] first maps curly apostrophes and backticks to
/// `'` and `\r` to a space (ragprobe's earlier normalisation).
pub fn nomiracl_label_with(response: &str, mode: ParseMode) -> NomiraclLabel {
    let mut t = response.replace(['\n', '\t'], " ").to_lowercase();
    if mode == ParseMode::Lenient {
        t = t
            .replace('\r', " ")
            .replace(['\u{2019}', '\u{2018}', '`'], "'");
    }
    let yes = t.contains("yes, answer is present");
    let idk = t.contains("i don't know");
    if yes && idk {
        NomiraclLabel::Invalid
    } else if idk {
        NomiraclLabel::IDontKnow
    } else if yes || t.contains("answer is present") {
        NomiraclLabel::Yes
    } else if t.contains("answer is not present") {
        NomiraclLabel::IDontKnow
    } else if t.chars().count() < 10 && has_bracketed_number(&t) {
        NomiraclLabel::Yes
    } else {
        NomiraclLabel::Invalid
    }
}

/// The reference's `re.findall(r"\[(\d+|10)\]", response)` is non-empty.
fn has_bracketed_number(t: &str) -> bool {
    let b = t.as_bytes();
    (0..b.len()).any(|i| {
        if b[i] != b'[' {
            return false;
        }
        let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        digits > 0 && b.get(i + 1 + digits) == Some(&b']')
    })
}

/// [`nomiracl_label_with`] under the reference rules.
pub fn nomiracl_label(response: &str) -> NomiraclLabel {
    nomiracl_label_with(response, ParseMode::Reference)
}

#[cfg(test)]
mod tests {
    use super::*;
    use NomiraclLabel::*;

    #[test]
    fn nomiracl_rule_both_phrases_is_invalid() {
        assert_eq!(
            nomiracl_label("Yes, answer is present. Actually I don't know."),
            Invalid
        );
    }
    #[test]
    fn nomiracl_rule_i_dont_know() {
        assert_eq!(nomiracl_label("I don't know"), IDontKnow);
        assert_eq!(nomiracl_label("i DON'T KNOW."), IDontKnow);
    }
    #[test]
    fn nomiracl_rule_curly_apostrophe_is_not_mapped_by_the_reference() {
        // The reference does not map U+2019: no phrase matches.
        assert_eq!(nomiracl_label("I don\u{2019}t know"), Invalid);
        assert_eq!(
            nomiracl_label_with("I don\u{2019}t know", ParseMode::Lenient),
            IDontKnow
        );
        assert_eq!(
            nomiracl_label_with("I don`t know", ParseMode::Lenient),
            IDontKnow
        );
    }
    #[test]
    fn nomiracl_rule_tabs_become_spaces() {
        assert_eq!(nomiracl_label("Yes,\tanswer is present"), Yes);
        assert_eq!(nomiracl_label("I\tdon't know"), IDontKnow);
    }
    #[test]
    fn nomiracl_rule_carriage_return_is_kept_by_the_reference() {
        assert_eq!(nomiracl_label("I don't\r know"), Invalid);
        assert_eq!(
            nomiracl_label_with("I don't\rknow", ParseMode::Lenient),
            IDontKnow
        );
    }
    #[test]
    fn nomiracl_rule_bracketed_number_in_a_short_response() {
        // "[3]" alone: 3 characters < 10 and a bracketed number -> yes.
        assert_eq!(nomiracl_label("[3]"), Yes);
        assert_eq!(nomiracl_label("[10]."), Yes);
        // " [2] [5] " is 9 characters: yes.
        assert_eq!(nomiracl_label(" [2] [5] "), Yes);
        // 10 characters or more: invalid.
        assert_eq!(nomiracl_label("Context [3]"), Invalid);
        assert_eq!(nomiracl_label("[a]"), Invalid);
        assert_eq!(nomiracl_label("[]"), Invalid);
    }
    #[test]
    fn nomiracl_rule_yes_answer_is_present() {
        assert_eq!(nomiracl_label("Yes, answer is present"), Yes);
        assert_eq!(nomiracl_label("YES, ANSWER IS PRESENT\nin context 3"), Yes);
    }
    #[test]
    fn nomiracl_rule_answer_is_present() {
        assert_eq!(nomiracl_label("The answer is present in [2]."), Yes);
    }
    #[test]
    fn nomiracl_rule_answer_is_not_present() {
        assert_eq!(nomiracl_label("The answer is not present."), IDontKnow);
    }
    #[test]
    fn nomiracl_rule_else_invalid() {
        assert_eq!(nomiracl_label("Paris"), Invalid);
        assert_eq!(nomiracl_label(""), Invalid);
    }
    #[test]
    fn newlines_become_spaces() {
        // The phrase broken over a line still matches once newlines are spaces.
        assert_eq!(nomiracl_label("Yes, answer\nis present"), Yes);
        assert_eq!(nomiracl_label("I don't\nknow"), IDontKnow);
        // Without the rule this would be "answer\nis present": no match.
        assert_eq!(nomiracl_label("The answer\nis not present"), IDontKnow);
    }
}
