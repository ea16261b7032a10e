//! Multiple-choice answers and Chinese text.

use regex::Regex;
use std::collections::BTreeSet;
use std::sync::OnceLock;
use unicode_normalization::UnicodeNormalization;

/// Normalisation for scripts written without spaces (Chinese, Japanese):
/// NFKC (full-width letters, digits and punctuation become their ASCII
/// forms), lowercase, and every punctuation, symbol and whitespace character
/// removed — no tokenisation by spaces is assumed.
pub fn normalize_cjk(s: &str) -> String {
    s.nfkc()
        .flat_map(char::to_lowercase)
        .filter(|c| c.is_alphanumeric())
        .collect()
}

/// Accuracy for such scripts: a normalised gold alias is a substring of the
/// normalised prediction (the studies' accuracy with [`normalize_cjk`]; it
/// subsumes RGB's convention of stripping spaces from Chinese predictions).
pub fn accuracy_cjk(prediction: &str, golds: &[impl AsRef<str>]) -> bool {
    let p = normalize_cjk(prediction);
    golds.iter().any(|g| {
        let g = normalize_cjk(g.as_ref());
        !g.is_empty() && p.contains(&g)
    })
}

/// What a response chose among multiple-choice options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// Exactly one option, by its label, its text, or both.
    One(String),
    /// Two or more different options: neither the reference nor the foil.
    Several(Vec<String>),
    /// No option recognised.
    None,
}

fn letter_res() -> &'static [Regex] {
    static R: OnceLock<Vec<Regex>> = OnceLock::new();
    R.get_or_init(|| {
        [
            r"^\s*[\(\[]?([A-J])[\)\]]?\s*[.):：]?\s*$", // "B", "(B)", "B."
            r"^\s*[\(\[]?([A-J])[\)\]]?\s*[.):：]\s",    // "B. Pancreas", "(B) ..."
            r"(?i)\b(?:answer|option|choice)\s*(?:is|:)?\s*[\(\[]?([A-J])[\)\]]?(?:[^A-Za-z]|$)", // "The answer is B"
            r"[\(\[]([A-J])[\)\]]", // "(B)" anywhere
            r"(?:答案|选项|选择)\s*(?:是|为|：|:)?\s*([A-J])", // Chinese "答案是B"
        ]
        .iter()
        .map(|p| Regex::new(p).expect("static regex"))
        .collect()
    })
}

fn norm_text(s: &str) -> String {
    normalize_cjk(s)
}

/// The option a response chose. Accepts the label ("B", "(B)", "answer is
/// B"), the option's text (normalised substring, any language), or both; a
/// response naming two different options is [`Choice::Several`].
pub fn mcq_choice(response: &str, options: &[(String, String)]) -> Choice {
    let labels: BTreeSet<&str> = options.iter().map(|o| o.0.as_str()).collect();
    let mut chosen: BTreeSet<String> = BTreeSet::new();
    let upper = response.nfkc().collect::<String>();
    for re in letter_res() {
        for c in re.captures_iter(&upper) {
            let l = &c[1];
            if labels.contains(l) {
                chosen.insert(l.to_string());
            }
        }
    }
    let r = norm_text(response);
    // Texts contained in a longer matching option text do not count twice
    // ("Vitamin B" inside "Vitamin B12").
    let hits: Vec<&(String, String)> = options
        .iter()
        .filter(|(_, t)| {
            let t = norm_text(t);
            !t.is_empty() && r.contains(&t)
        })
        .collect();
    for (l, t) in &hits {
        let nt = norm_text(t);
        let shadowed = hits.iter().any(|(l2, t2)| {
            l2 != l && norm_text(t2).len() > nt.len() && norm_text(t2).contains(&nt)
        });
        if !shadowed {
            chosen.insert(l.clone());
        }
    }
    match chosen.len() {
        0 => Choice::None,
        1 => Choice::One(chosen.into_iter().next().expect("one")),
        _ => Choice::Several(chosen.into_iter().collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> Vec<(String, String)> {
        [
            ("A", "Vitamin A"),
            ("B", "Vitamin B12"),
            ("C", "Vitamin C"),
            ("D", "Vitamin D"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
    }

    #[test]
    fn by_letter() {
        for r in [
            "C",
            "(C)",
            "C.",
            " c. ",
            "The answer is C.",
            "Answer: (C)",
            "I choose option C because ...",
        ] {
            let want = if r.trim().starts_with('c') {
                Choice::None
            } else {
                Choice::One("C".into())
            };
            assert_eq!(mcq_choice(r, &opts()), want, "{r:?}");
        }
    }

    #[test]
    fn by_text_and_both() {
        assert_eq!(
            mcq_choice("vitamin c deficiency", &opts()),
            Choice::One("C".into())
        );
        assert_eq!(mcq_choice("C. Vitamin C", &opts()), Choice::One("C".into()));
        assert_eq!(
            mcq_choice("Vitamin B12", &opts()),
            Choice::One("B".into()),
            "not also A/B/C/D by the letter inside a word"
        );
    }

    #[test]
    fn two_options_are_neither() {
        assert_eq!(
            mcq_choice("Either Vitamin C or Vitamin D", &opts()),
            Choice::Several(vec!["C".into(), "D".into()])
        );
        assert_eq!(
            mcq_choice("The answer is B, not (C)", &opts()),
            Choice::Several(vec!["B".into(), "C".into()])
        );
        assert_eq!(mcq_choice("no idea", &opts()), Choice::None);
    }

    #[test]
    fn chinese_options_and_full_width() {
        let o: Vec<(String, String)> = [("A", "肝脏"), ("B", "胰腺"), ("C", "肾脏")]
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(mcq_choice("答案是B", &o), Choice::One("B".into()));
        assert_eq!(
            mcq_choice("答案：（Ｂ）", &o),
            Choice::One("B".into()),
            "full-width letter and brackets"
        );
        assert_eq!(
            mcq_choice("胰岛素由胰腺分泌。", &o),
            Choice::One("B".into())
        );
        assert_eq!(
            mcq_choice("肝脏和肾脏", &o),
            Choice::Several(vec!["A".into(), "C".into()])
        );
    }

    #[test]
    fn cjk_normalisation_and_accuracy() {
        assert_eq!(
            normalize_cjk("长江，流经 １１ 个省份！"),
            "长江流经11个省份"
        );
        assert!(
            accuracy_cjk("答案是：长 江。", &["长江"]),
            "spaces and full-width punctuation do not matter"
        );
        assert!(!accuracy_cjk("黄河", &["长江"]));
        assert!(
            !accuracy_cjk("任何", &["。"]),
            "an alias of only punctuation never matches"
        );
    }
}
