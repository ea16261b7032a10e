//! A rule-based named-entity detector for English (no spaCy), for GenADV's
//! "at least two entities" filter and its entity list.
//!
//! Types: DATE, NUMBER (numbers and quantities) and NAME (proper-noun
//! spans). Detection runs in this order, and a later rule never takes
//! characters an earlier one claimed:
//! 1. DATE regexes: full dates ("14 July 1789", "July 14, 1789"), month +
//!    year, BC/AD years, decades ("1920s"), centuries ("19th century"),
//!    years 1000–2099;
//! 2. NUMBER regexes: digits (with thousands separators, decimals, %,
//!    currency, million/billion, units of measure) and number words;
//! 3. NAME from a gazetteer of corpus titles (Aho-Corasick, leftmost-longest);
//! 4. NAME from capitalised spans: runs of capitalised words joined by
//!    "of", "and", "the", "de", "von", "van", "da"; a leading "The" is dropped
//!    (unless the span is a known title), as are sentence-initial function
//!    words, lone demonyms ("French") and weekday/month names, possessive
//!    "'s" and trailing connectors.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::Regex;
use std::collections::HashSet;
use std::sync::OnceLock;

/// The kind of a detected entity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum EntityType {
    /// A date: full date, month and year, year, decade or century.
    #[serde(rename = "DATE")]
    Date,
    /// A number or quantity, in digits or words.
    #[serde(rename = "NUMBER")]
    Number,
    /// A proper-noun span (gazetteer title or capitalised words).
    #[serde(rename = "NAME")]
    Name,
}

impl EntityType {
    /// The type's label: `DATE`, `NUMBER` or `NAME`.
    pub fn name(self) -> &'static str {
        match self {
            EntityType::Date => "DATE",
            EntityType::Number => "NUMBER",
            EntityType::Name => "NAME",
        }
    }
}

/// One detected entity (byte offsets into the text).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Entity {
    /// The entity as it appears in the text.
    pub text: String,
    /// The entity's type.
    #[serde(rename = "type")]
    pub kind: EntityType,
    /// Byte offset where the entity starts.
    pub start: usize,
    /// Byte offset just past the entity's end.
    pub end: usize,
}

const MONTHS: &str = "January|February|March|April|May|June|July|August|September|October|November|December|Jan\\.|Feb\\.|Mar\\.|Apr\\.|Aug\\.|Sept?\\.|Oct\\.|Nov\\.|Dec\\.";
const UNITS: &str = "square kilometres|square kilometers|square miles|square metres|kilometres per hour|kilometers per hour|kilometres per second|kilometers per second|metres per second|miles per hour|degrees Celsius|degrees Fahrenheit|light-years|light years|kilometres|kilometers|km/h|km|metres|meters|m|miles|mi|feet|ft|foot|inches|centimetres|cm|millimetres|mm|kilograms|kg|grams|g|tonnes|tons|pounds|lb|litres|liters|degrees|°C|°F|seconds|minutes|hours|days|weeks|months|years|percent|per cent|%|hectares|acres|watts|kW|MW|volts|storeys|stories|floors";
const NUMBER_WORDS: &str = "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|million|billion|dozen";

fn re(cell: &'static OnceLock<Regex>, pat: impl FnOnce() -> String) -> &'static Regex {
    cell.get_or_init(|| Regex::new(&pat()).expect("static regex"))
}

fn date_res() -> Vec<&'static Regex> {
    static A: OnceLock<Regex> = OnceLock::new();
    static B: OnceLock<Regex> = OnceLock::new();
    static C: OnceLock<Regex> = OnceLock::new();
    static D: OnceLock<Regex> = OnceLock::new();
    static E: OnceLock<Regex> = OnceLock::new();
    static F: OnceLock<Regex> = OnceLock::new();
    static G: OnceLock<Regex> = OnceLock::new();
    vec![
        re(&A, || {
            format!(r"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:{MONTHS})\s+\d{{3,4}}\b")
        }),
        re(&B, || {
            format!(r"\b(?:{MONTHS})\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{3,4}}\b")
        }),
        re(&C, || format!(r"\b(?:{MONTHS})\s+\d{{3,4}}\b")),
        re(&D, || r"\b\d{1,4}\s?(?:BC|BCE|AD|CE)\b".to_string()),
        re(&E, || r"\b(?:1\d{3}|20\d{2}|\d0)s\b".to_string()),
        re(&F, || r"\b\d{1,2}(?:st|nd|rd|th)\s+century\b".to_string()),
        re(&G, || r"\b(?:1\d{3}|20\d{2})\b".to_string()),
    ]
}

fn number_res() -> Vec<&'static Regex> {
    static A: OnceLock<Regex> = OnceLock::new();
    static B: OnceLock<Regex> = OnceLock::new();
    vec![
        re(&A, || {
            format!(
                r"(?:[$€£]\s?)?\b\d[\d,]*(?:\.\d+)?(?:\s?(?:million|billion|thousand|trillion))?(?:\s?(?:{UNITS})\b|%)?"
            )
        }),
        re(&B, || {
            format!(
                r"(?i)\b(?:{NUMBER_WORDS})(?:[\s-]+(?:and\s+)?(?:{NUMBER_WORDS}|a half))*(?:\s+(?:{UNITS})\b)?"
            )
        }),
    ]
}

const CONNECTORS: &[&str] = &[
    "of", "and", "the", "de", "von", "van", "da", "del", "du", "la", "le", "y", "on", "upon",
];
const FUNCTION_WORDS: &[&str] = &[
    "The",
    "A",
    "An",
    "In",
    "On",
    "At",
    "It",
    "He",
    "She",
    "They",
    "We",
    "I",
    "You",
    "This",
    "That",
    "These",
    "Those",
    "His",
    "Her",
    "Its",
    "Their",
    "Our",
    "There",
    "When",
    "Where",
    "Who",
    "What",
    "Which",
    "Why",
    "How",
    "After",
    "Before",
    "During",
    "By",
    "For",
    "From",
    "With",
    "As",
    "Although",
    "While",
    "Many",
    "Most",
    "Some",
    "Each",
    "Every",
    "Both",
    "Since",
    "Until",
    "Today",
    "Later",
    "Also",
    "However",
    "Because",
    "If",
    "Once",
    "Over",
    "Under",
    "About",
    "Around",
    "Only",
    "All",
    "No",
    "Not",
    "One",
    "Two",
    "Three",
    "First",
    "Its",
    "To",
    "Of",
    "And",
    "But",
    "Or",
    "Yes",
    "Her",
    "Him",
    "Its",
    "Then",
    "Now",
    "According",
    "Along",
    "Among",
    "Between",
    "Through",
    "Unlike",
    "Like",
    "Near",
    "Several",
    "Such",
    "Another",
    "Other",
];
const DEMONYMS: &[&str] = &[
    "French",
    "English",
    "German",
    "Roman",
    "Greek",
    "Italian",
    "Spanish",
    "Chinese",
    "Japanese",
    "American",
    "British",
    "European",
    "Russian",
    "Indian",
    "Egyptian",
    "Christian",
    "Catholic",
    "Dutch",
    "Portuguese",
    "Swedish",
    "Norwegian",
    "Danish",
    "Polish",
    "Austrian",
    "Swiss",
    "Irish",
    "Scottish",
    "Welsh",
    "African",
    "Asian",
    "Arab",
    "Persian",
    "Latin",
    "Mexican",
    "Canadian",
    "Australian",
    "Brazilian",
    "Korean",
    "Turkish",
    "Hungarian",
    "Czech",
    "Belgian",
    "Islamic",
    "Muslim",
    "Jewish",
    "Buddhist",
    "Hindu",
    "Soviet",
    "Viking",
    "Victorian",
    "Renaissance",
    "Gothic",
    "Baroque",
    "Protestant",
    "Byzantine",
    "Ottoman",
    "Medieval",
    "Western",
    "Eastern",
    "Northern",
    "Southern",
    "Atlantic",
];
const CALENDAR: &[&str] = &[
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// The detector, with an optional gazetteer of known titles.
pub struct Ner {
    gazetteer: Option<AhoCorasick>,
    titles: Vec<String>,
    known: HashSet<String>,
}

impl Ner {
    /// `titles`: names known to be entities (e.g. the corpus's passage titles).
    pub fn new(titles: &[String]) -> Ner {
        let mut t: Vec<String> = titles
            .iter()
            .map(|s| s.trim().to_string())
            .filter(|s| s.chars().count() >= 3 && s.chars().next().is_some_and(char::is_uppercase))
            .collect();
        t.sort();
        t.dedup();
        let gazetteer = (!t.is_empty()).then(|| {
            AhoCorasickBuilder::new()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&t)
                .expect("gazetteer")
        });
        let known = t.iter().cloned().collect();
        Ner {
            gazetteer,
            titles: t,
            known,
        }
    }

    /// Entities of `text`, in order of appearance.
    pub fn entities(&self, text: &str) -> Vec<Entity> {
        let mut taken = vec![false; text.len() + 1];
        let mut out: Vec<Entity> = Vec::new();
        let free = |taken: &[bool], s: usize, e: usize| !taken[s..e].iter().any(|x| *x);
        let claim =
            |out: &mut Vec<Entity>, taken: &mut Vec<bool>, s: usize, e: usize, kind: EntityType| {
                let t = text[s..e].trim();
                if t.is_empty() {
                    return;
                }
                for x in taken.iter_mut().take(e).skip(s) {
                    *x = true;
                }
                out.push(Entity {
                    text: t.to_string(),
                    kind,
                    start: s,
                    end: e,
                });
            };
        for r in date_res() {
            for m in r.find_iter(text) {
                if free(&taken, m.start(), m.end()) {
                    claim(&mut out, &mut taken, m.start(), m.end(), EntityType::Date);
                }
            }
        }
        for r in number_res() {
            for m in r.find_iter(text) {
                let (s, mut e) = (m.start(), m.end());
                while e > s && text[..e].ends_with([' ', ',', '.', '-']) {
                    e -= 1;
                }
                // A number inside a word or glued to a capitalised name ("Apollo 11") is not a quantity.
                let before = text[..s].chars().last();
                let prev_word = text[..s].trim_end().rsplit(' ').next().unwrap_or("");
                let after_name = before == Some(' ')
                    && prev_word.chars().next().is_some_and(char::is_uppercase)
                    && !FUNCTION_WORDS.contains(&prev_word)
                    && text[s..e].chars().all(|c| c.is_ascii_digit());
                if e > s
                    && free(&taken, s, e)
                    && !before.is_some_and(char::is_alphanumeric)
                    && !after_name
                {
                    claim(&mut out, &mut taken, s, e, EntityType::Number);
                }
            }
        }
        if let Some(ac) = &self.gazetteer {
            for m in ac.find_iter(text) {
                let (s, e) = (m.start(), m.end());
                let boundary_ok = !text[..s].chars().last().is_some_and(char::is_alphanumeric)
                    && !text[e..].chars().next().is_some_and(char::is_alphanumeric);
                if boundary_ok && free(&taken, s, e) {
                    let _ = &self.titles[m.pattern().as_usize()];
                    claim(&mut out, &mut taken, s, e, EntityType::Name);
                }
            }
        }
        for (s, e) in self.capitalised_spans(text) {
            if free(&taken, s, e) {
                claim(&mut out, &mut taken, s, e, EntityType::Name);
            }
        }
        out.sort_by_key(|x| x.start);
        out
    }

    fn capitalised_spans(&self, text: &str) -> Vec<(usize, usize)> {
        static WORD: OnceLock<Regex> = OnceLock::new();
        let word = re(&WORD, || r"[\p{L}\p{N}][\p{L}\p{N}'’\-\.]*".to_string());
        let words: Vec<(usize, usize, &str)> = word
            .find_iter(text)
            .map(|m| (m.start(), m.end(), m.as_str()))
            .collect();
        let is_cap = |w: &str| w.chars().next().is_some_and(char::is_uppercase);
        let sentence_start = |i: usize| {
            if i == 0 {
                return true;
            }
            let between = &text[words[i - 1].1..words[i].0];
            let prev = words[i - 1].2;
            between.contains(['.', '!', '?', ':', ';', '"', '“'])
                || prev.ends_with('.') && !prev.ends_with("St.")
        };
        let mut spans = Vec::new();
        let mut i = 0;
        while i < words.len() {
            if !is_cap(words[i].2) {
                i += 1;
                continue;
            }
            // Extend over capitalised words, connectors between them, and a short number after a name.
            let mut j = i;
            let mut k = i + 1;
            while k < words.len() {
                let gap = &text[words[k - 1].1..words[k].0];
                if gap.contains(|c: char| !c.is_whitespace()) {
                    break;
                }
                let w = words[k].2;
                if is_cap(w) {
                    j = k;
                    k += 1;
                } else if CONNECTORS.contains(&w)
                    && k + 1 < words.len()
                    && is_cap(words[k + 1].2)
                    && text[words[k].1..words[k + 1].0].trim().is_empty()
                {
                    k += 1;
                } else if w.chars().all(|c| c.is_ascii_digit()) && w.len() <= 3 && j == k - 1 {
                    j = k;
                    break;
                } else {
                    break;
                }
            }
            let mut first = i;
            // Drop sentence-initial function words and a leading "The" (unless a known title).
            while first <= j {
                let w = words[first].2;
                let span_text = &text[words[first].0..words[j].1];
                if self.known.contains(span_text) {
                    break;
                }
                if (sentence_start(first) && FUNCTION_WORDS.contains(&w))
                    || w == "The"
                    || (first == i && FUNCTION_WORDS.contains(&w) && sentence_start(i))
                {
                    first += 1;
                    while first <= j && CONNECTORS.contains(&words[first].2) {
                        first += 1;
                    }
                } else {
                    break;
                }
            }
            if first <= j {
                let (s, mut e) = (words[first].0, words[j].1);
                let mut t = &text[s..e];
                for suffix in ["'s", "’s", "'", "."] {
                    if let Some(x) = t.strip_suffix(suffix) {
                        if suffix != "." || !x.ends_with(|c: char| c.is_uppercase()) || x.len() > 3
                        {
                            e -= suffix.len();
                            t = x;
                        }
                    }
                }
                let single = first == j;
                let lone_common = single
                    && (DEMONYMS.contains(&t)
                        || CALENDAR.contains(&t)
                        || FUNCTION_WORDS.contains(&t));
                if !lone_common && !t.is_empty() {
                    spans.push((s, e));
                }
            }
            i = j + 1;
        }
        spans
    }
}

/// Entity-level precision, recall and F1 of predictions against gold
/// (multisets of (text, type)).
pub fn prf(gold: &[(String, EntityType)], pred: &[(String, EntityType)]) -> (usize, usize, usize) {
    let mut g = gold.to_vec();
    let mut tp = 0;
    for p in pred {
        if let Some(i) = g.iter().position(|x| x == p) {
            g.remove(i);
            tp += 1;
        }
    }
    (tp, pred.len(), gold.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ents(text: &str) -> Vec<(String, &'static str)> {
        Ner::new(&[])
            .entities(text)
            .into_iter()
            .map(|e| (e.text, e.kind.name()))
            .collect()
    }

    #[test]
    fn dates_numbers_names() {
        assert_eq!(
            ents("The Eiffel Tower was completed in 1889."),
            vec![("Eiffel Tower".into(), "NAME"), ("1889".into(), "DATE")]
        );
        assert_eq!(
            ents("The storming of the Bastille took place on 14 July 1789."),
            vec![("Bastille".into(), "NAME"), ("14 July 1789".into(), "DATE")]
        );
        assert_eq!(
            ents("Mount Everest rises 8,849 metres above sea level."),
            vec![
                ("Mount Everest".into(), "NAME"),
                ("8,849 metres".into(), "NUMBER")
            ]
        );
        assert_eq!(
            ents("Pride and Prejudice was written by Jane Austen."),
            vec![
                ("Pride and Prejudice".into(), "NAME"),
                ("Jane Austen".into(), "NAME")
            ]
        );
        assert_eq!(
            ents("In 1969 Apollo 11 landed on the Moon."),
            vec![
                ("1969".into(), "DATE"),
                ("Apollo 11".into(), "NAME"),
                ("Moon".into(), "NAME")
            ]
        );
    }

    #[test]
    fn gazetteer_keeps_known_titles_whole() {
        let ner = Ner::new(&["The Starry Night".to_string()]);
        let e: Vec<String> = ner
            .entities("Van Gogh painted The Starry Night in June 1889.")
            .into_iter()
            .map(|e| e.text)
            .collect();
        assert_eq!(e, vec!["Van Gogh", "The Starry Night", "June 1889"]);
    }

    #[test]
    fn demonyms_and_function_words_are_not_names() {
        assert!(ents("French engineers built it.").is_empty());
        assert_eq!(
            ents("It was built by French engineers in Paris."),
            vec![("Paris".into(), "NAME")]
        );
    }
}
