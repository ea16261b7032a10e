//! The scoring of FaithEval's README evaluation snippet: its own
//! `normalize_answer`, then a substring test against the task's valid
//! phrases (`if any(phrase in normalize_answer(pred_answer) for phrase in
//! valid_phrases): correct += 1`).

use regex::Regex;
use std::sync::LazyLock;

use super::task::Task;

/// `remove_articles`: `re.sub(r'\b(a|an|the)\b', ' ', text)`; Python's
/// `\b` on a `str` is Unicode-aware, as the regex crate's is.
static ARTICLES: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(a|an|the)\b").expect("valid regex"));

/// The README's `normalize_answer`, step by step in its order:
/// `replace_underscore` (`_` → space), `lower`, `handle_punc` (every
/// character of `string.punctuation` and ‘ ’ ´ ` becomes a space — not
/// deleted, unlike SQuAD's), `remove_articles` (a, an, the → space),
/// `white_space_fix` (`' '.join(text.split())`), `strip`.
pub fn normalize_answer(s: &str) -> String {
    let lowered = s.replace('_', " ").to_lowercase();
    let spaced: String = lowered
        .chars()
        .map(|c| {
            if c.is_ascii_punctuation() || matches!(c, '‘' | '’' | '´' | '`') {
                ' '
            } else {
                c
            }
        })
        .collect();
    let no_articles = ARTICLES.replace_all(&spaced, " ");
    // Python's `str.split()` splits on what `str.isspace` calls space: the
    // Unicode White_Space characters and the separators U+001C..U+001F.
    no_articles
        .split(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The README's verdict on `response` for `task` (`strict`: the strict
/// phrase list): whether its normalised text contains a valid phrase.
/// None for the counterfactual task (scored by the option chosen).
pub fn correct(task: Task, response: &str, strict: bool) -> Option<bool> {
    Some(verdicts(task, response)?[strict as usize])
}

/// The README's verdicts on `response` for `task` with the default and
/// the strict phrase lists, the response normalised once. None for the
/// counterfactual task.
pub fn verdicts(task: Task, response: &str) -> Option<[bool; 2]> {
    let (default, strict) = (task.valid_phrases(false)?, task.valid_phrases(true)?);
    // `pred_answer = ...['content'].strip()` before normalising: the
    // normalisation's own strip makes that one a no-op.
    let n = normalize_answer(response);
    let found = |phrases: &[&str]| phrases.iter().any(|p| n.contains(p));
    Some([found(default), found(strict)])
}
