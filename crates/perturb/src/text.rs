//! Text helpers: sentence splitting, answer replacement, answer shapes.

use ragprobe_matching::has_answer;
use regex::Regex;
use std::sync::OnceLock;

/// Abbreviations after which a period does not end a sentence.
const ABBREVIATIONS: &[&str] = &[
    "mr", "mrs", "ms", "dr", "st", "mt", "jr", "sr", "prof", "vs", "etc", "e.g", "i.e", "no",
    "fig", "approx", "ca", "inc", "ltd", "co", "gen", "col", "lt", "sgt", "u.s", "u.k",
];

fn is_cjk_stop(c: char) -> bool {
    matches!(c, '。' | '！' | '？')
}

/// Split a passage into sentences. A sentence ends at `.`, `!` or `?`
/// followed by whitespace and an uppercase letter, digit or quote — unless
/// the word before is an abbreviation or a single initial — or at `。！？`
/// (Chinese/Japanese full stops, no space needed). Sentences keep their
/// punctuation; surrounding whitespace is trimmed.
pub fn split_sentences(text: &str) -> Vec<String> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = Vec::new();
    let mut start = 0usize;
    let mut i = 0usize;
    while i < chars.len() {
        let (pos, c) = chars[i];
        let end_here = if is_cjk_stop(c) {
            true
        } else if matches!(c, '.' | '!' | '?') {
            // Include closing quotes/brackets right after the punctuation.
            let mut j = i + 1;
            while j < chars.len() && matches!(chars[j].1, '"' | '\'' | '”' | '’' | ')') {
                j += 1;
            }
            let ws = j < chars.len() && chars[j].1.is_whitespace();
            let mut k = j;
            while k < chars.len() && chars[k].1.is_whitespace() {
                k += 1;
            }
            let next_ok = k < chars.len()
                && (chars[k].1.is_uppercase()
                    || chars[k].1.is_ascii_digit()
                    || matches!(chars[k].1, '"' | '“' | '\'' | '('));
            if ws && next_ok && c == '.' {
                let word: String = text[start..pos]
                    .split_whitespace()
                    .last()
                    .unwrap_or("")
                    .trim_start_matches(['(', '"'])
                    .to_lowercase();
                let single_initial =
                    word.chars().count() == 1 && word.chars().all(char::is_alphabetic);
                !(ABBREVIATIONS.contains(&word.as_str()) || single_initial)
            } else {
                ws && next_ok
            }
        } else {
            false
        };
        if end_here {
            let mut j = i + 1;
            while j < chars.len() && matches!(chars[j].1, '"' | '\'' | '”' | '’' | ')') {
                j += 1;
            }
            let end = chars.get(j).map(|x| x.0).unwrap_or(text.len());
            let s = text[start..end].trim();
            if !s.is_empty() {
                out.push(s.to_string());
            }
            start = end;
            i = j;
            continue;
        }
        i += 1;
    }
    let rest = text[start..].trim();
    if !rest.is_empty() {
        out.push(rest.to_string());
    }
    out
}

/// Join sentences back: a space between them, none after a CJK full stop.
pub fn join_sentences(sentences: &[String]) -> String {
    let mut out = String::new();
    for s in sentences {
        if !out.is_empty() && !out.ends_with(is_cjk_stop) {
            out.push(' ');
        }
        out.push_str(s);
    }
    out
}

/// A letter or digit of a script that separates words with spaces: an
/// alias next to one of these is inside a longer word. CJK characters are
/// not word characters here (those scripts have no spaces between words).
fn is_word_char(c: char) -> bool {
    (c.is_alphanumeric() || c == '_') && !is_cjk(c)
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF)
}

/// Replace every case-insensitive occurrence of every alias in `text` by
/// `foil`, longest alias first, only where the alias is not part of a
/// longer word (an alias starting or ending with a letter or digit must not
/// touch another letter or digit). Returns the new text and the number of
/// replacements.
pub fn replace_aliases(text: &str, aliases: &[String], foil: &str) -> (String, usize) {
    let mut sorted: Vec<&str> = aliases
        .iter()
        .map(|a| a.trim())
        .filter(|a| !a.is_empty())
        .collect();
    sorted.sort_by_key(|a| std::cmp::Reverse(a.chars().count()));
    let mut out = text.to_string();
    let mut count = 0;
    for alias in sorted {
        let re = Regex::new(&format!("(?i){}", regex::escape(alias)))
            .expect("escaped alias is a valid regex");
        let (first, last) = (
            alias.chars().next().expect("non-empty"),
            alias.chars().last().expect("non-empty"),
        );
        let mut result = String::with_capacity(out.len());
        let mut prev_end = 0;
        for m in re.find_iter(&out) {
            let before = out[..m.start()].chars().last();
            let after = out[m.end()..].chars().next();
            let inside_word = (is_word_char(first) && before.is_some_and(is_word_char))
                || (is_word_char(last) && after.is_some_and(is_word_char));
            if inside_word {
                continue;
            }
            result.push_str(&out[prev_end..m.start()]);
            result.push_str(foil);
            prev_end = m.end();
            count += 1;
        }
        result.push_str(&out[prev_end..]);
        out = result;
    }
    (out, count)
}

/// Character offset (as a fraction of the text length) of the centre of the
/// first occurrence of any of `spans` (case-insensitive), if any.
pub fn span_centre(text: &str, spans: &[String]) -> Option<f64> {
    let lower = text.to_lowercase();
    let total = lower.chars().count().max(1) as f64;
    spans
        .iter()
        .filter(|s| !s.trim().is_empty())
        .filter_map(|s| {
            let needle = s.trim().to_lowercase();
            lower.find(&needle).map(|byte| {
                let start = lower[..byte].chars().count() as f64;
                (start + needle.chars().count() as f64 / 2.0) / total
            })
        })
        .reduce(f64::min)
}

/// The answer span position a fraction of the text falls in: beginning
/// (< 1/3), middle (1/3..2/3) or end (> 2/3).
pub fn position_of(fraction: f64) -> &'static str {
    if fraction < 1.0 / 3.0 {
        "beginning"
    } else if fraction <= 2.0 / 3.0 {
        "middle"
    } else {
        "end"
    }
}

/// The shape of an answer, for choosing a foil of the same kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Shape {
    /// A year: 1000–2099, or up to 4 digits with AD/BC/CE/BCE.
    Year,
    /// A calendar date: a month name with a day or year, or a numeric date.
    Date,
    /// A number, optionally with a unit (`8,849 metres`, `118`, `3.5 km`).
    Number,
    /// Anything else (names, places, titles).
    Text,
}

impl Shape {
    /// The shape's lowercase name (`year`, `date`, `number` or `text`).
    pub fn name(self) -> &'static str {
        match self {
            Shape::Year => "year",
            Shape::Date => "date",
            Shape::Number => "number",
            Shape::Text => "text",
        }
    }
}

fn re(cell: &'static OnceLock<Regex>, pat: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pat).expect("static regex"))
}

/// Classify an answer string.
pub fn shape(answer: &str) -> Shape {
    static YEAR: OnceLock<Regex> = OnceLock::new();
    static DATE_WORDS: OnceLock<Regex> = OnceLock::new();
    static DATE_NUM: OnceLock<Regex> = OnceLock::new();
    static NUMBER: OnceLock<Regex> = OnceLock::new();
    let a = answer.trim();
    if re(
        &YEAR,
        r"^(?i)((ad|ce) ?\d{1,4}|\d{1,4} ?(ad|bc|bce|ce)|1\d{3}|20\d{2})$",
    )
    .is_match(a)
    {
        return Shape::Year;
    }
    let months = r"(?i)\b(jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|sep(t(ember)?)?|oct(ober)?|nov(ember)?|dec(ember)?)\b";
    if re(&DATE_WORDS, months).is_match(a) && a.chars().any(|c| c.is_ascii_digit()) {
        return Shape::Date;
    }
    if re(&DATE_NUM, r"^\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}$").is_match(a)
        || (a.contains('年') && a.chars().any(|c| c.is_ascii_digit()))
    {
        return Shape::Date;
    }
    if re(
        &NUMBER,
        r"^[~≈]?[-+]?\d[\d,.\s]*(%|[\p{L}°$€£]+\.?)?(\s+[\p{L}²³]+\.?){0,2}$",
    )
    .is_match(a)
    {
        return Shape::Number;
    }
    Shape::Text
}

/// True when `candidate` and a gold alias are the same answer to the DPR
/// matcher (either contains the other as a token sequence).
pub fn same_answer(candidate: &str, golds: &[String]) -> bool {
    has_answer(golds, candidate) || golds.iter().any(|g| has_answer(&[candidate], g))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_split_on_stops_but_not_abbreviations() {
        let s = split_sentences("Mt. Everest is tall. It was climbed in 1953 by Hillary and Tenzing Norgay. J. K. Rowling wrote books! Did she? Yes.");
        assert_eq!(
            s,
            vec![
                "Mt. Everest is tall.",
                "It was climbed in 1953 by Hillary and Tenzing Norgay.",
                "J. K. Rowling wrote books!",
                "Did she?",
                "Yes."
            ]
        );
        assert_eq!(
            split_sentences("长江是中国最长的河流。它流经十一个省份！"),
            vec!["长江是中国最长的河流。", "它流经十一个省份！"]
        );
        assert_eq!(
            split_sentences("Version 3.5 is out. Prices rose 2.5 percent."),
            vec!["Version 3.5 is out.", "Prices rose 2.5 percent."]
        );
    }

    #[test]
    fn replacement_respects_word_boundaries_and_case() {
        let (t, n) = replace_aliases(
            "Paris is big. PARIS, not Parisian.",
            &["Paris".into()],
            "Lyon",
        );
        assert_eq!((t.as_str(), n), ("Lyon is big. Lyon, not Parisian.", 2));
        let (t, n) = replace_aliases(
            "Buzz Aldrin and Aldrin",
            &["Aldrin".into(), "Buzz Aldrin".into()],
            "Collins",
        );
        assert_eq!((t.as_str(), n), ("Collins and Collins", 2));
        let (t, _) = replace_aliases("长江长6300公里", &["6300公里".into()], "5000公里");
        assert_eq!(t, "长江长5000公里");
    }

    #[test]
    fn shapes() {
        assert_eq!(shape("1889"), Shape::Year);
        assert_eq!(shape("14 July 1789"), Shape::Date);
        assert_eq!(shape("July 14, 1789"), Shape::Date);
        assert_eq!(shape("1789-07-14"), Shape::Date);
        assert_eq!(shape("8,849 metres"), Shape::Number);
        assert_eq!(shape("118"), Shape::Number);
        assert_eq!(shape("3.5 km"), Shape::Number);
        assert_eq!(shape("Marie Curie"), Shape::Text);
        assert_eq!(shape("May Day"), Shape::Text);
    }

    #[test]
    fn span_positions() {
        let t = "aaaa bbbb cccc";
        assert_eq!(
            position_of(span_centre(t, &["aaaa".into()]).unwrap()),
            "beginning"
        );
        assert_eq!(
            position_of(span_centre(t, &["BBBB".into()]).unwrap()),
            "middle"
        );
        assert_eq!(
            position_of(span_centre(t, &["cccc".into()]).unwrap()),
            "end"
        );
        assert_eq!(span_centre(t, &["zz".into()]), None);
    }
}
