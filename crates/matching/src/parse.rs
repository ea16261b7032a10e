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
    pub fn name(self) -> &'static str {
        match self {
            NomiraclLabel::Yes => "yes",
            NomiraclLabel::IDontKnow => "idk",
            NomiraclLabel::Invalid => "invalid",
        }
    }
}

/// NoMIRACL's parsing rules (Thakur et al. 2024, evaluation code), in order:
/// lowercase, newlines to spaces, curly apostrophes to `'`; if both
/// "yes, answer is present" and "i don't know" occur -> invalid; "i don't
/// know" -> idk; "yes, answer is present" -> yes; "answer is present" ->
/// yes; "answer is not present" -> idk; else invalid.
pub fn nomiracl_label(response: &str) -> NomiraclLabel {
    let t = response.to_lowercase().replace(['\n', '\r'], " ").replace(['\u{2019}', '\u{2018}', '`'], "'");
    let yes = t.contains("yes, answer is present");
    let idk = t.contains("i don't know");
    if yes && idk {
        NomiraclLabel::Invalid
    } else if idk {
        NomiraclLabel::IDontKnow
    } else if yes {
        NomiraclLabel::Yes
    } else if t.contains("answer is not present") {
        // Checked before the shorter phrase it contains.
        NomiraclLabel::IDontKnow
    } else if t.contains("answer is present") {
        NomiraclLabel::Yes
    } else {
        NomiraclLabel::Invalid
    }
}

/// Seed 000's unanswerable label: the normalised response contains
/// "unanswerable" (the Unans prompt asks the model to write 'unanswerable').
pub fn says_unanswerable(response: &str) -> bool {
    normalize_answer(response).contains("unanswerable")
}

/// Seed 000's conflict label: the normalised response contains "conflict"
/// (the Conflict prompt asks the model to respond with 'conflict').
pub fn says_conflict(response: &str) -> bool {
    normalize_answer(response).contains("conflict")
}

/// RGB's rejection: the response says the documents do not hold enough
/// information (en "insufficient information", zh "信息不足").
pub fn rgb_rejection(response: &str) -> bool {
    response.to_lowercase().contains("insufficient information") || response.contains("信息不足")
}

/// RGB's error detection: the response says the documents contain factual
/// errors (en "factual errors", zh "事实性错误").
pub fn rgb_fact_error(response: &str) -> bool {
    response.to_lowercase().contains("factual errors") || response.contains("事实性错误")
}

/// RGB's answer check (`checkanswer`): lowercase the prediction (and, for
/// Chinese, remove spaces, as RGB does for Chinese predictions); the
/// response is correct when every required part is matched by at least one
/// of its aliases as a substring. An empty part list is never correct.
pub fn rgb_correct(response: &str, parts: &[Vec<String>], zh: bool) -> bool {
    let mut p = response.to_lowercase();
    if zh {
        p.retain(|c| !c.is_whitespace());
    }
    !parts.is_empty()
        && parts.iter().all(|aliases| {
            aliases.iter().any(|a| {
                let mut a = a.to_lowercase();
                if zh {
                    a.retain(|c| !c.is_whitespace());
                }
                !a.is_empty() && p.contains(&a)
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use NomiraclLabel::*;

    #[test]
    fn nomiracl_rule_both_phrases_is_invalid() {
        assert_eq!(nomiracl_label("Yes, answer is present. Actually I don't know."), Invalid);
    }
    #[test]
    fn nomiracl_rule_i_dont_know() {
        assert_eq!(nomiracl_label("I don't know"), IDontKnow);
        assert_eq!(nomiracl_label("i DON'T KNOW."), IDontKnow);
    }
    #[test]
    fn nomiracl_rule_curly_apostrophe() {
        assert_eq!(nomiracl_label("I don\u{2019}t know"), IDontKnow);
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
        assert!(rgb_rejection("I can not answer the question because of the insufficient information in documents."));
        assert!(rgb_fact_error("There are factual errors in the provided documents."));
        assert!(rgb_rejection("文档信息不足，因此我无法基于提供的文档回答该问题。"));
    }

    #[test]
    fn rgb_multi_part_rule() {
        let parts = vec![vec!["Neil Armstrong".to_string(), "Armstrong".into()], vec!["Buzz Aldrin".into(), "Aldrin".into()]];
        assert!(rgb_correct("armstrong and aldrin", &parts, false));
        assert!(!rgb_correct("Neil Armstrong only", &parts, false));
        assert!(rgb_correct("答案是 北京", &[vec!["北京".into()]], true));
        assert!(rgb_correct("答案是北 京", &[vec!["北京".into()]], true), "spaces removed for Chinese");
        assert!(!rgb_correct("anything", &[], false));
    }
}
