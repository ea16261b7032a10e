//! Parsers of model responses into the labels the studies score.

use crate::squad::normalize_answer;

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

/// The prediction RGB's `evalue.py` inspects: for Chinese datasets the
/// ASCII spaces are removed (`prediction.replace(" ", "")`) before every
/// check; otherwise the raw prediction.
fn rgb_prediction(response: &str, zh: bool) -> std::borrow::Cow<'_, str> {
    if zh {
        std::borrow::Cow::Owned(response.replace(' ', ""))
    } else {
        std::borrow::Cow::Borrowed(response)
    }
}

/// RGB's rejection (`evalue.py` `predict`): `'信息不足' in prediction or
/// 'insufficient information' in prediction`, case-sensitive, on the
/// prediction (ASCII spaces removed for Chinese). Lenient: case-insensitive.
pub fn rgb_rejection(response: &str, zh: bool, mode: ParseMode) -> bool {
    let p = rgb_prediction(response, zh);
    let en = match mode {
        ParseMode::Reference => p.contains("insufficient information"),
        ParseMode::Lenient => p.to_lowercase().contains("insufficient information"),
    };
    en || p.contains("信息不足")
}

/// RGB's error detection (`evalue.py`): `'事实性错误' in prediction or
/// 'factual errors' in prediction`, case-sensitive, on the prediction
/// (ASCII spaces removed for Chinese). Lenient: case-insensitive.
pub fn rgb_fact_error(response: &str, zh: bool, mode: ParseMode) -> bool {
    let p = rgb_prediction(response, zh);
    let en = match mode {
        ParseMode::Reference => p.contains("factual errors"),
        ParseMode::Lenient => p.to_lowercase().contains("factual errors"),
    };
    en || p.contains("事实性错误")
}

/// RGB's answer check (`evalue.py` `checkanswer`): the prediction (ASCII
/// spaces removed for Chinese) and the answers are lowercased; each
/// required part is matched when one of its aliases is a substring; the
/// response is correct when every part matches (`0 not in labels and 1 in
/// labels`). A response that rejects ("insufficient information") gets the
/// label `[-1]` and is never correct under the reference rules. An empty
/// part list is never correct. The answers themselves keep their spaces,
/// as in RGB.
pub fn rgb_correct(response: &str, parts: &[Vec<String>], zh: bool, mode: ParseMode) -> bool {
    if mode == ParseMode::Reference && rgb_rejection(response, zh, mode) {
        return false;
    }
    rgb_parts_matched(response, parts, zh)
}

/// Every part matched (RGB `checkanswer` without the rejection rule).
pub fn rgb_parts_matched(response: &str, parts: &[Vec<String>], zh: bool) -> bool {
    let prediction = rgb_prediction(response, zh);
    let p = lowercase(&prediction);
    !parts.is_empty()
        && parts.iter().all(|aliases| {
            aliases
                .iter()
                .any(|a| !a.is_empty() && p.contains(&*lowercase(a)))
        })
}

/// `s.to_lowercase()`, borrowed when that changes nothing (ASCII without
/// capitals): the answer check runs for every scored response.
fn lowercase(s: &str) -> std::borrow::Cow<'_, str> {
    if s.bytes().any(|b| b.is_ascii_uppercase() || !b.is_ascii()) {
        std::borrow::Cow::Owned(s.to_lowercase())
    } else {
        std::borrow::Cow::Borrowed(s)
    }
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

    #[test]
    fn labels() {
        assert!(says_unanswerable("Unanswerable."));
        assert!(says_unanswerable("It is 'unanswerable'"));
        assert!(!says_unanswerable("Paris"));
        assert!(says_conflict("Conflict"));
        let r = ParseMode::Reference;
        assert!(rgb_rejection(
            "I can not answer the question because of the insufficient information in documents.",
            false,
            r
        ));
        assert!(rgb_fact_error(
            "There are factual errors in the provided documents.",
            false,
            r
        ));
        assert!(rgb_rejection(
            "文档信息不足，因此我无法基于提供的文档回答该问题。",
            true,
            r
        ));
    }

    #[test]
    fn rgb_multi_part_rule() {
        let parts = vec![
            vec!["Neil Armstrong".to_string(), "Armstrong".into()],
            vec!["Buzz Aldrin".into(), "Aldrin".into()],
        ];
        let r = ParseMode::Reference;
        assert!(rgb_correct("armstrong and aldrin", &parts, false, r));
        assert!(!rgb_correct("Neil Armstrong only", &parts, false, r));
        assert!(rgb_correct("答案是 北京", &[vec!["北京".into()]], true, r));
        assert!(
            rgb_correct("答案是北 京", &[vec!["北京".into()]], true, r),
            "ASCII spaces removed for Chinese"
        );
        assert!(!rgb_correct("anything", &[], false, r));
    }

    #[test]
    fn rgb_phrases_are_case_sensitive_as_in_evalue_py() {
        let (r, l) = (ParseMode::Reference, ParseMode::Lenient);
        // evalue.py: 'factual errors' in prediction -- on the raw text.
        assert!(!rgb_fact_error(
            "Factual errors exist in document 2.",
            false,
            r
        ));
        assert!(rgb_fact_error(
            "Factual errors exist in document 2.",
            false,
            l
        ));
        assert!(rgb_fact_error(
            "There are factual errors in the provided documents.",
            false,
            r
        ));
        assert!(!rgb_rejection("Insufficient information.", false, r));
        assert!(rgb_rejection("Insufficient information.", false, l));
        // Chinese: spaces removed before the check.
        assert!(rgb_fact_error("存在 事实性 错误", true, r));
    }

    #[test]
    fn rgb_a_rejection_is_never_correct_under_the_reference() {
        let parts = vec![vec!["Paris".to_string()]];
        let resp = "Paris? I can not answer the question because of the insufficient information in documents.";
        assert!(!rgb_correct(resp, &parts, false, ParseMode::Reference));
        assert!(rgb_correct(resp, &parts, false, ParseMode::Lenient));
        // Chinese answers keep their spaces (RGB strips the prediction only).
        assert!(!rgb_correct(
            "纽约",
            &[vec!["纽 约".into()]],
            true,
            ParseMode::Reference
        ));
    }
}
