//! RGB's response parsers, as its `evalue.py` reads a prediction:
//! rejection, factual-error detection, the answer check.

use ragprobe_matching::parse::ParseMode;

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

    #[test]
    fn labels() {
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
