//! SQuAD-style answer normalisation and metrics.
//!
//! Definitions follow the official SQuAD v1.1 evaluation script
//! (`normalize_answer`, `exact_match_score`, `f1_score`), which the studies
//! use for EM and F1 (seed 000 Appendix B), and seed 000 §4.2 for accuracy.

use regex::Regex;
use std::sync::OnceLock;

/// ASCII punctuation, exactly Python's `string.punctuation`.
#[cfg(test)]
const PUNCTUATION: &str = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";

fn articles() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    // Python: re.sub(r"\b(a|an|the)\b", " ", text) on a str (Unicode \b).
    RE.get_or_init(|| Regex::new(r"\b(a|an|the)\b").expect("static regex"))
}

/// SQuAD `normalize_answer`: lowercase, remove punctuation (ASCII
/// `string.punctuation`), replace the articles a/an/the by a space, and
/// collapse whitespace (Python `str.split()` semantics: any Unicode
/// whitespace, no empty tokens). The steps run in the script's order:
/// `white_space_fix(remove_articles(remove_punc(lower(s))))`.
pub fn normalize_answer(s: &str) -> String {
    let mut out = String::new();
    normalize_into(s, &mut out);
    out
}

/// Python's `string.punctuation`, which is exactly ASCII punctuation
/// (tested below), without a scan of the list per character.
fn is_ascii_punct(c: char) -> bool {
    c.is_ascii_punctuation()
}

/// The tokens of a normalised text (joined by single spaces).
fn tokens(normalized: &str) -> Vec<&str> {
    if normalized.is_empty() {
        Vec::new()
    } else {
        normalized.split(' ').collect()
    }
}

/// [`normalize_answer`] of `s` written over `out`, in one pass: lowercase
/// and drop punctuation per character, split on whitespace, drop the
/// tokens `a`, `an`, `the`, join with single spaces. A token holding a
/// character that is neither a word character nor whitespace (e.g.
/// `«the»`) goes through the script's `\b(a|an|the)\b` regex, so the
/// result is always the script's. Tokens are written straight into `out`
/// (the scorer normalises every response and alias: a string per token
/// was most of its allocations).
pub fn normalize_into(s: &str, out: &mut String) {
    /// Where the token being read starts in `out`, if one is.
    struct Token {
        start: Option<usize>,
        odd: bool,
    }
    /// Remove the token that starts at `start`, and the space before it.
    fn remove(out: &mut String, start: usize) {
        out.truncate(start.saturating_sub(1));
    }
    fn push(out: &mut String, t: &str) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(t);
    }
    fn flush(out: &mut String, tok: &mut Token) {
        let Some(start) = tok.start.take() else {
            return;
        };
        if tok.odd {
            let replaced = articles().replace_all(&out[start..], " ").into_owned();
            remove(out, start);
            for t in replaced.split_whitespace() {
                push(out, t);
            }
        } else if matches!(&out[start..], "a" | "an" | "the") {
            remove(out, start);
        }
        tok.odd = false;
    }
    fn take(c: char, out: &mut String, tok: &mut Token) {
        if is_ascii_punct(c) {
            return;
        }
        if c.is_whitespace() {
            return flush(out, tok);
        }
        // Alphabetic characters, ASCII digits and '_' are word characters
        // for the regex too; anything else takes the exact regex path.
        if !c.is_alphabetic() && !c.is_ascii_digit() && c != '_' {
            tok.odd = true;
        }
        if tok.start.is_none() {
            if !out.is_empty() {
                out.push(' ');
            }
            tok.start = Some(out.len());
        }
        out.push(c);
    }
    out.clear();
    let mut tok = Token {
        start: None,
        odd: false,
    };
    for ch in s.chars() {
        if ch.is_whitespace() {
            flush(out, &mut tok);
        } else if ch.is_ascii() {
            // The same lowercase, without Unicode's tables.
            take(ch.to_ascii_lowercase(), out, &mut tok);
        } else {
            for c in ch.to_lowercase() {
                take(c, out, &mut tok);
            }
        }
    }
    flush(out, &mut tok);
}

/// Accuracy, exact match and token F1 of one prediction against its gold
/// aliases, normalising each text once (the definitions of [`accuracy`],
/// [`exact_match`] and [`f1`]).
pub fn squad_scores(prediction: &str, golds: &[impl AsRef<str>]) -> (bool, bool, f64) {
    squad_scores_normalized(&normalize_answer(prediction), golds)
}

/// [`squad_scores`] of a prediction already normalised
/// ([`normalize_answer`]), for a caller that needs the normalised text too.
pub fn squad_scores_normalized(p: &str, golds: &[impl AsRef<str>]) -> (bool, bool, f64) {
    let pt = tokens(p);
    let mut gs = String::new();
    let (mut acc, mut em, mut best) = (false, false, 0.0f64);
    for g in golds {
        normalize_into(g.as_ref(), &mut gs);
        acc |= !gs.is_empty() && p.contains(&*gs);
        em |= gs == p;
        best = best.max(overlap_f1(&pt, &tokens(&gs)));
    }
    (acc, em, best)
}

/// Exact match: 1 if the normalised prediction equals any normalised gold
/// alias. Empty `golds` gives `false`.
pub fn exact_match(prediction: &str, golds: &[impl AsRef<str>]) -> bool {
    let p = normalize_answer(prediction);
    golds.iter().any(|g| normalize_answer(g.as_ref()) == p)
}

/// Token F1 between one prediction and one gold answer, as in SQuAD:
/// bag-of-tokens overlap of the normalised strings,
/// `2PR/(P+R)` with `P = common/|pred|`, `R = common/|gold|`.
///
/// When either side normalises to no tokens, the SQuAD v2 convention
/// applies: 1.0 if both are empty, else 0.0 (v1.1 would divide by zero).
pub fn token_f1(prediction: &str, gold: &str) -> f64 {
    let (p, g) = (normalize_answer(prediction), normalize_answer(gold));
    overlap_f1(&tokens(&p), &tokens(&g))
}

/// F1 of the bag-of-items overlap of two sequences (tokens, or characters
/// for Chinese): `2PR/(P+R)` with `P = common/|pred|`, `R = common/|gold|`,
/// items counted with multiplicity; 1.0 when both are empty, 0.0 when only
/// one is.
pub fn overlap_f1<T: PartialEq>(pred: &[T], gold: &[T]) -> f64 {
    if pred.is_empty() || gold.is_empty() {
        return if pred.is_empty() && gold.is_empty() {
            1.0
        } else {
            0.0
        };
    }
    // Which gold items are matched: a bit mask for the usual short answer.
    let mut mask = 0u64;
    let mut used = if gold.len() > 64 {
        vec![false; gold.len()]
    } else {
        Vec::new()
    };
    let mut common = 0usize;
    for t in pred {
        let free = |i: usize| {
            if used.is_empty() {
                mask & (1 << i) == 0
            } else {
                !used[i]
            }
        };
        if let Some(i) = (0..gold.len()).find(|&i| free(i) && gold[i] == *t) {
            if used.is_empty() {
                mask |= 1 << i;
            } else {
                used[i] = true;
            }
            common += 1;
        }
    }
    if common == 0 {
        return 0.0;
    }
    let precision = common as f64 / pred.len() as f64;
    let recall = common as f64 / gold.len() as f64;
    2.0 * precision * recall / (precision + recall)
}

/// Token F1 against several gold aliases: the maximum over aliases
/// (`metric_max_over_ground_truths` in the SQuAD script). Empty `golds`
/// gives 0.0.
pub fn f1(prediction: &str, golds: &[impl AsRef<str>]) -> f64 {
    golds
        .iter()
        .map(|g| token_f1(prediction, g.as_ref()))
        .fold(0.0, f64::max)
}

/// The studies' accuracy (seed 000 §4.2, after Mallen et al. 2023): a
/// prediction is correct if any normalised gold alias is a substring of the
/// normalised prediction. Aliases that normalise to the empty string never
/// match (an empty alias would otherwise match every prediction).
pub fn accuracy(prediction: &str, golds: &[impl AsRef<str>]) -> bool {
    let p = normalize_answer(prediction);
    golds.iter().any(|g| {
        let g = normalize_answer(g.as_ref());
        !g.is_empty() && p.contains(&g)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_punctuation_is_pythons_string_punctuation() {
        for b in 0u8..128 {
            let c = b as char;
            assert_eq!(is_ascii_punct(c), PUNCTUATION.contains(c), "{c:?}");
        }
    }

    #[test]
    fn normalisation_follows_the_squad_script() {
        assert_eq!(normalize_answer("The  Eiffel Tower!"), "eiffel tower");
        assert_eq!(normalize_answer("an apple, a pear"), "apple pear");
        // Articles inside words stay ("theatre", "another").
        assert_eq!(normalize_answer("Theatre of another"), "theatre of another");
        // Punctuation is removed, not replaced: "U.S.A." -> "usa".
        assert_eq!(normalize_answer("U.S.A."), "usa");
        // Hyphen removal joins words, as in the script.
        assert_eq!(normalize_answer("well-known"), "wellknown");
        // Non-ASCII punctuation is not in string.punctuation and stays.
        assert_eq!(normalize_answer("«Paris»"), "«paris»");
        assert_eq!(normalize_answer("  \t\n "), "");
    }

    /// The script's order, step by step (the reference for the one pass).
    fn script_order(s: &str) -> String {
        let lower = s.to_lowercase();
        let no_punc: String = lower
            .chars()
            .filter(|c| !PUNCTUATION.contains(*c))
            .collect();
        articles()
            .replace_all(&no_punc, " ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    }

    proptest::proptest! {
        /// Any mix of articles, words, punctuation, Unicode letters and
        /// whitespace normalises as the script does, written into a
        /// reused buffer or not, and the SQuAD scores agree with the
        /// per-definition functions.
        #[test]
        fn one_pass_equals_the_script_on_any_text(
            parts in proptest::collection::vec(
                proptest::sample::select(vec![
                    "the", "The", "a", "An", "an", "x", "word", "U.S.", "-", "«", "»", "_",
                    "É", "ß", "İ", "l'", "!", ",", " ", "  ", "\t", "\u{a0}", "\u{2003}", "3",
                ]),
                0..12,
            ),
            gold in proptest::sample::select(vec!["the word", "x", "An É", "", "word x"]),
        ) {
            let s: String = parts.concat();
            proptest::prop_assert_eq!(normalize_answer(&s), script_order(&s));
            let mut buf = String::from("left over from before");
            normalize_into(&s, &mut buf);
            proptest::prop_assert_eq!(&buf, &script_order(&s));
            let (a, e, f) = squad_scores(&s, &[gold]);
            proptest::prop_assert_eq!(a, accuracy(&s, &[gold]));
            proptest::prop_assert_eq!(e, exact_match(&s, &[gold]));
            proptest::prop_assert_eq!(f, token_f1(&s, gold));
        }
    }

    /// Long golds (more than the 64 items of the bit mask) count each
    /// gold item once, like short ones.
    #[test]
    fn overlap_of_long_sequences() {
        let gold: Vec<u32> = (0..100).map(|i| i % 50).collect();
        let pred: Vec<u32> = (0..30).map(|i| i % 10).collect();
        // Each of 0..10 is twice in gold; pred has each three times:
        // common = 20, P = 20/30, R = 20/100.
        let (p, r) = (20.0 / 30.0, 20.0 / 100.0);
        assert!((overlap_f1(&pred, &gold) - 2.0 * p * r / (p + r)).abs() < 1e-12);
        // 0..40 once each: common = 10.
        let short: Vec<u32> = gold[..40].to_vec();
        let (p, r) = (10.0 / 30.0, 10.0 / 40.0);
        assert!((overlap_f1(&pred, &short) - 2.0 * p * r / (p + r)).abs() < 1e-12);
    }

    #[test]
    fn one_pass_normalisation_equals_the_script_order() {
        for s in [
            "The  Eiffel Tower!",
            "an apple, a pear",
            "Theatre of another",
            "U.S.A.",
            "«the» end",
            "a-the an_d",
            "ÀN Élan, THE",
            "x\u{a0}the\u{2003}y",
            "l'the",
            "straße a",
            "İstanbul",
        ] {
            let lower = s.to_lowercase();
            let no_punc: String = lower
                .chars()
                .filter(|c| !PUNCTUATION.contains(*c))
                .collect();
            let slow = articles()
                .replace_all(&no_punc, " ")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            assert_eq!(normalize_answer(s), slow, "{s:?}");
        }
        let (a, e, f) = squad_scores(
            "Barack Obama was president",
            &["Obama", "barack obama was president"],
        );
        assert_eq!((a, e, f), (true, true, 1.0));
    }

    #[test]
    fn exact_match_over_aliases() {
        assert!(exact_match("the Beatles", &["Beatles", "Fab Four"]));
        assert!(!exact_match("The Beatles band", &["Beatles"]));
        assert!(!exact_match("x", &[] as &[&str]));
    }

    #[test]
    fn f1_worked_example() {
        // pred tokens: [barack, obama, was, president] (4)
        // gold tokens: [obama] (1); common = 1 -> P = 1/4, R = 1 -> F1 = 0.4
        let v = token_f1("Barack Obama was president", "Obama");
        assert!((v - 0.4).abs() < 1e-12, "{v}");
        // Repeated tokens count by multiplicity: pred [new, new, york] vs
        // gold [new, york]: common = 2, P = 2/3, R = 1 -> F1 = 0.8
        let v = token_f1("new new york", "New York");
        assert!((v - 0.8).abs() < 1e-12, "{v}");
        // Max over aliases.
        let v = f1("Obama", &["Barack Obama", "Obama"]);
        assert_eq!(v, 1.0);
        assert_eq!(token_f1("the", "a"), 1.0); // both empty after normalisation
        assert_eq!(token_f1("", "paris"), 0.0);
    }

    #[test]
    fn accuracy_is_normalised_substring() {
        assert!(accuracy("I think it was the year 1969.", &["1969"]));
        assert!(accuracy("It is PARIS, France", &["Paris"]));
        assert!(!accuracy("London", &["Paris", "City of Light"]));
        // Substring, not token: "1969" is inside "19690" too (as in the studies' code).
        assert!(accuracy("19690", &["1969"]));
        // Empty alias never matches.
        assert!(!accuracy("anything", &["the"]));
    }
}
