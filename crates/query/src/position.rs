//! Where in the SQL text an error is: line and column of a word, of a
//! polars message's expression, of a named relation.

use crate::*;

/// 1-based (line, column) of byte offset `at` in `text`.
pub(crate) fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Where `word` first stands in `sql` as a whole word (quoted or not).
pub(crate) fn find_word(sql: &str, word: &str) -> Option<(usize, usize)> {
    let re = regex::Regex::new(&format!(
        r"(^|[^A-Za-z0-9_]){}($|[^A-Za-z0-9_])",
        regex::escape(word)
    ))
    .ok()?;
    re.find(sql).map(|m| {
        let start = m.start() + usize::from(!sql[m.start()..].starts_with(word));
        line_col(sql, start)
    })
}

/// polars' error text: its first paragraph (the plan dump is dropped),
/// with sqlparser's "at Line: L, Column: C" turned into a position.
pub(crate) fn polars_message(e: &PolarsError) -> (String, Option<(usize, usize)>) {
    let full = e.to_string();
    // One line: the plan dump polars appends is dropped, hints ("Did you
    // mean …") stay on the line.
    let head = full
        .split("Resolved plan until failure")
        .next()
        .unwrap_or(&full)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let (text, at) = split_position(&head);
    match unsupported_expression(&text) {
        // The dump's first `Location(line,column)` is where the construct starts.
        Some(words) => {
            let re = regex::Regex::new(r"Location\((\d+),\s*(\d+)\)").expect("valid regex");
            let dumped = re
                .captures(&text)
                .and_then(|c| Some((c[1].parse().ok()?, c[2].parse().ok()?)));
            (words, at.or(dumped))
        }
        None => (text, at),
    }
}

/// polars names an SQL construct it does not run by dumping sqlparser's
/// syntax tree (`expression SimilarTo { negated: false, expr: … } is not
/// currently supported`): said instead as the construct's SQL words
/// (`SIMILAR TO is not supported by ragprobe query (polars SQL)`).
pub(crate) fn unsupported_expression(text: &str) -> Option<String> {
    let re = regex::Regex::new(
        r"^(?:.*: )?expression ([A-Z][A-Za-z]*)\b.* is not (?:currently |yet )?supported",
    )
    .expect("valid regex");
    let name = re.captures(text)?.get(1)?.as_str().to_string();
    let mut words = String::new();
    for (i, c) in name.chars().enumerate() {
        if i > 0 && c.is_ascii_uppercase() {
            words.push(' ');
        }
        words.push(c.to_ascii_uppercase());
    }
    Some(format!(
        "{words} is not supported by ragprobe query (polars SQL)"
    ))
}

/// sqlparser's " at Line: L, Column: C" taken out of `text` as a position.
pub(crate) fn split_position(text: &str) -> (String, Option<(usize, usize)>) {
    let re = regex::Regex::new(r"\s*at Line: (\d+), Column: (\d+)").expect("valid regex");
    match re.captures(text) {
        Some(c) => {
            let at = (c[1].parse().unwrap_or(0), c[2].parse().unwrap_or(0));
            (re.replace(text, "").into_owned(), Some(at))
        }
        None => (text.to_string(), None),
    }
}

/// The position of the first quoted name in `message` found in `sql`.
pub(crate) fn locate_named(sql: &str, message: &str) -> Option<(usize, usize)> {
    let re = regex::Regex::new(r#"["'`]([^"'`]+)["'`]"#).expect("valid regex");
    // polars names a joined table's column `col:table`; the query says `col`.
    let found = re
        .captures_iter(message)
        .filter_map(|c| {
            let name = c[1].split(':').next().unwrap_or(&c[1]).to_string();
            find_word(sql, &name)
        })
        .next();
    found
}
