//! Breakdowns: `score --by COL[,COL] [--bins …]` computes every metric
//! family again for each group of a column of the cases or questions.
//!
//! **Columns.** Question-level: `dataset`, `lang`, `split`, `subset`, and
//! `meta.FIELD` (a field of the source record's unmapped fields, e.g.
//! `meta.s_pop` for PopQA popularity; nested fields as `meta.a.b`). These
//! keep every condition of a question in one group, so the paired families
//! (RAD, transitions, the misleading rate against the closed-book baseline)
//! are computed within each group. Case-level: `condition`,
//! `answer_position`, `inserted_at`, `expected`, `answerable`, `foil`,
//! `prompt`, `prompt_role`, `prompt_variant`, `model`.
//!
//! **Missing values.** A question without the field is in the group
//! `(none)`. A case without a case-level value (a closed-book baseline has
//! no answer position) is counted in *every* group of that column: it is
//! the baseline the grouped cases pair with, so MR by answer position
//! compares each position with the same closed-book answers.
//!
//! **Bins** (`--bins`): a whole number `N` cuts each numeric column into `N`
//! quantile bins over its distinct questions' values (edges at the
//! `i·n/N`-th smallest value; repeated edges merge), labelled `[lo, hi)`
//! with the last bin closed, `[lo, hi]`; two or more comma-separated
//! numbers are the edges themselves: `[-inf, e1)`, `[e1, e2)`, …,
//! `[ek, inf)`. Without `--bins`, each distinct value is a group. Groups
//! come in order: bins ascending, other values sorted, `(none)` last.
//!
//! Each group's metrics carry its n and a question-clustered bootstrap
//! interval, as the overall ones do.

use std::collections::{BTreeMap, HashMap};

use ragprobe_artifact::{CaseRow, QuestionRow};

use crate::scored::Scored;
use serde_json::Value;

use crate::{Result, ScoreError};

/// How numeric values are grouped.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Bins {
    /// Each distinct value is its own group.
    #[default]
    None,
    /// This many quantile bins.
    Quantiles(usize),
    /// These edges (ascending).
    Edges(Vec<f64>),
}

impl std::str::FromStr for Bins {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Bins, String> {
        let s = s.trim();
        if !s.contains(',') {
            return match s.parse::<usize>() {
                Ok(n) if n >= 2 => Ok(Bins::Quantiles(n)),
                _ => Err(format!("--bins {s}: give a number of quantile bins (2 or more) or two or more comma-separated edges")),
            };
        }
        let edges: Vec<f64> = s
            .split(',')
            .map(|e| {
                e.trim()
                    .parse::<f64>()
                    .map_err(|_| format!("--bins {s}: `{e}` is not a number"))
            })
            .collect::<std::result::Result<_, _>>()?;
        if edges.iter().any(|e| !e.is_finite()) || edges.windows(2).any(|w| w[0] >= w[1]) {
            return Err(format!(
                "--bins {s}: edges must be finite and strictly ascending"
            ));
        }
        Ok(Bins::Edges(edges))
    }
}

impl Bins {
    /// The option as a recipe parameter.
    pub fn param(&self) -> Value {
        match self {
            Bins::None => Value::Null,
            Bins::Quantiles(n) => serde_json::json!({"quantiles": n}),
            Bins::Edges(e) => serde_json::json!({"edges": e}),
        }
    }
}

/// A `--by` request.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Breakdown {
    /// The columns, in the order given.
    pub columns: Vec<String>,
    /// How numeric columns are binned.
    pub bins: Bins,
}

/// Whether a column belongs to the question or to the case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Question,
    Case,
}

const QUESTION_COLUMNS: [&str; 4] = ["dataset", "lang", "split", "subset"];
const CASE_COLUMNS: [&str; 10] = [
    "condition",
    "answer_position",
    "inserted_at",
    "expected",
    "answerable",
    "foil",
    "prompt",
    "prompt_role",
    "prompt_variant",
    "model",
];

fn level(col: &str) -> Result<Level> {
    if QUESTION_COLUMNS.contains(&col) || col.strip_prefix("meta.").is_some_and(|f| !f.is_empty()) {
        Ok(Level::Question)
    } else if CASE_COLUMNS.contains(&col) {
        Ok(Level::Case)
    } else {
        Err(ScoreError::Invalid(format!(
            "--by {col}: not a column to group by; question columns: {}, meta.FIELD; case columns: {}",
            QUESTION_COLUMNS.join(", "),
            CASE_COLUMNS.join(", ")
        )))
    }
}

/// A row's value of one column.
#[derive(Debug, Clone, PartialEq)]
enum Raw {
    Text(String),
    Number(f64),
    Missing,
}

fn text(s: Option<&str>) -> Raw {
    s.map_or(Raw::Missing, |s| Raw::Text(s.to_string()))
}

/// `meta.FIELD` of a question: numbers stay numbers (for bins).
fn meta_field(q: Option<&QuestionRow>, path: &str) -> Raw {
    let Some(meta) = q.and_then(|q| q.meta.as_deref()) else {
        return Raw::Missing;
    };
    let Ok(mut v) = serde_json::from_str::<Value>(meta) else {
        return Raw::Missing;
    };
    for part in path.split('.') {
        match v.get(part) {
            Some(x) => v = x.clone(),
            None => return Raw::Missing,
        }
    }
    match v {
        Value::Null => Raw::Missing,
        Value::Number(n) => n.as_f64().map_or(Raw::Missing, Raw::Number),
        Value::String(s) => s.parse::<f64>().map_or(Raw::Text(s), Raw::Number),
        Value::Bool(b) => Raw::Text(b.to_string()),
        other => Raw::Text(other.to_string()),
    }
}

fn value(col: &str, s: &Scored, c: Option<&CaseRow>, q: Option<&QuestionRow>) -> Raw {
    if let Some(path) = col.strip_prefix("meta.") {
        return meta_field(q, path);
    }
    match col {
        "dataset" => Raw::Text(s.dataset.to_string()),
        "lang" => Raw::Text(s.lang.to_string()),
        "split" => text(q.and_then(|q| q.split.as_deref())),
        "subset" => text(q.and_then(|q| q.subset.as_deref())),
        "condition" => Raw::Text(s.condition.to_string()),
        "answer_position" => text(s.answer_position),
        "inserted_at" => c
            .and_then(|c| c.inserted_at)
            .map_or(Raw::Missing, |v| Raw::Number(v as f64)),
        "expected" => Raw::Text(s.expected.as_str().to_string()),
        "answerable" => s
            .answerable
            .map_or(Raw::Missing, |b| Raw::Text(b.to_string())),
        "foil" => text(c.and_then(|c| c.foil.as_deref())),
        "prompt" => Raw::Text(s.prompt.to_string()),
        "prompt_role" => text(s.prompt_role),
        "prompt_variant" => text(s.prompt_variant),
        "model" => Raw::Text(s.model.to_string()),
        _ => Raw::Missing,
    }
}

/// A number as a label: whole numbers without a fraction.
fn num(v: f64) -> String {
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// The label of a missing question-level value.
pub const NONE: &str = "(none)";

/// One column's groups: labels in order, and the label of each value.
struct Grouping {
    level: Level,
    labels: Vec<String>,
    /// Bin edges (numbers binned) or None (values as labels).
    bins: Option<Vec<(f64, f64, bool)>>,
    /// Whether the groups have a natural order (bins).
    ordered: bool,
}

impl Grouping {
    fn label(&self, v: &Raw) -> Option<String> {
        match (v, &self.bins) {
            (Raw::Missing, _) => (self.level == Level::Question).then(|| NONE.to_string()),
            (Raw::Number(x), Some(bins)) => bins
                .iter()
                .position(|&(lo, hi, closed)| *x >= lo && (*x < hi || (closed && *x <= hi)))
                .map(|i| self.labels[i].clone()),
            (Raw::Number(x), None) => Some(num(*x)),
            (Raw::Text(t), _) => Some(t.clone()),
        }
    }
}

fn quantile_bins(values: &mut [f64], n: usize) -> Vec<(f64, f64, bool)> {
    values.sort_by(|a, b| a.total_cmp(b));
    let (min, max) = (values[0], values[values.len() - 1]);
    let mut edges = vec![min];
    for i in 1..n {
        let e = values[i * values.len() / n];
        if e > *edges.last().unwrap() && e < max {
            edges.push(e);
        }
    }
    edges.push(max);
    let last = edges.len() - 2;
    edges
        .windows(2)
        .enumerate()
        .map(|(i, w)| (w[0], w[1], i == last))
        .collect()
}

fn grouping(col: &str, bins: &Bins, values: &[(Option<&str>, Raw)]) -> Result<Grouping> {
    let level = level(col)?;
    // Numbers, one per question for question-level columns.
    let mut seen = std::collections::HashSet::new();
    let mut numbers: Vec<f64> = Vec::new();
    let mut texts = std::collections::BTreeSet::new();
    let mut missing = false;
    for (qid, v) in values {
        match v {
            Raw::Number(x) => {
                if level == Level::Case || qid.is_none_or(|q| seen.insert(q.to_string())) {
                    numbers.push(*x);
                }
            }
            Raw::Text(t) => {
                texts.insert(t.clone());
            }
            Raw::Missing => missing = true,
        }
    }
    let binned = match bins {
        Bins::None => None,
        _ if !texts.is_empty() => {
            return Err(ScoreError::Invalid(format!(
                "--by {col} --bins: the column has text values (e.g. `{}`); bins need numbers",
                texts.iter().next().unwrap()
            )))
        }
        _ if numbers.is_empty() => Some(Vec::new()),
        Bins::Quantiles(n) => Some(quantile_bins(&mut numbers, *n)),
        Bins::Edges(e) => {
            let mut all = vec![f64::NEG_INFINITY];
            all.extend(e);
            all.push(f64::INFINITY);
            Some(all.windows(2).map(|w| (w[0], w[1], false)).collect())
        }
    };
    let mut labels: Vec<String> = match &binned {
        Some(b) => b
            .iter()
            .map(|&(lo, hi, closed)| {
                format!(
                    "[{}, {}{}",
                    num(lo),
                    num(hi),
                    if closed { "]" } else { ")" }
                )
            })
            .collect(),
        None => {
            let mut l: Vec<(Option<f64>, String)> = numbers
                .iter()
                .map(|x| (Some(*x), num(*x)))
                .chain(texts.iter().map(|t| (None, t.clone())))
                .collect();
            l.sort_by(|a, b| match (a.0, b.0) {
                (Some(x), Some(y)) => x.total_cmp(&y),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => a.1.cmp(&b.1),
            });
            l.dedup_by(|a, b| a.1 == b.1);
            l.into_iter().map(|(_, s)| s).collect()
        }
    };
    if missing && level == Level::Question {
        labels.push(NONE.to_string());
    }
    Ok(Grouping {
        level,
        ordered: binned.is_some(),
        labels,
        bins: binned,
    })
}

/// Every way of picking one item from each list, in order (the first list
/// varies slowest).
fn product(lists: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = vec![vec![]];
    for list in lists {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                list.iter().map(move |&i| {
                    let mut k = prefix.clone();
                    k.push(i);
                    k
                })
            })
            .collect();
    }
    out
}

/// One group of a breakdown.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// Its label (values of several columns joined by `; `).
    pub label: String,
    /// Its position in the breakdown's order.
    pub index: usize,
    /// Indices of the scored rows in it.
    pub rows: Vec<usize>,
}

/// The groups of `rows` (each row's case and question looked up by
/// `case_of` / `question_of`), in order; a group with no rows is left out.
/// Also says whether the order is natural (every column binned).
pub fn groups<'a>(
    b: &Breakdown,
    rows: &[Scored],
    case_of: &dyn Fn(&Scored) -> Option<&'a CaseRow>,
    question_of: &dyn Fn(&Scored) -> Option<&'a QuestionRow>,
) -> Result<(Vec<Group>, bool)> {
    let mut per_col = Vec::new();
    for col in &b.columns {
        let vals: Vec<(Option<&str>, Raw)> = rows
            .iter()
            .map(|r| (Some(r.qid), value(col, r, case_of(r), question_of(r))))
            .collect();
        let g = grouping(col, &b.bins, &vals)?;
        let labels: Vec<Option<String>> = vals.iter().map(|(_, v)| g.label(v)).collect();
        per_col.push((g, labels));
    }
    let ordered = per_col.iter().all(|(g, _)| g.ordered);
    // Cartesian product of the columns' labels, in order.
    let all_labels: Vec<Vec<usize>> = per_col
        .iter()
        .map(|(g, _)| (0..g.labels.len()).collect())
        .collect();
    let combos = product(&all_labels);
    let index_of: Vec<HashMap<&str, usize>> = per_col
        .iter()
        .map(|(g, _)| {
            g.labels
                .iter()
                .enumerate()
                .map(|(i, l)| (l.as_str(), i))
                .collect()
        })
        .collect();
    let mut members: BTreeMap<Vec<usize>, Vec<usize>> = BTreeMap::new();
    for r in 0..rows.len() {
        // The label indices of this row per column (every label when a
        // case-level value is missing).
        let options: Vec<Vec<usize>> = per_col
            .iter()
            .zip(&index_of)
            .map(|((g, labels), idx)| match &labels[r] {
                Some(l) => idx.get(l.as_str()).map(|&i| vec![i]).unwrap_or_default(),
                None => (0..g.labels.len()).collect(),
            })
            .collect();
        for k in product(&options) {
            members.entry(k).or_default().push(r);
        }
    }
    let mut out = Vec::new();
    for (index, c) in combos.iter().enumerate() {
        let Some(rows) = members.remove(c) else {
            continue;
        };
        let label = c
            .iter()
            .zip(&per_col)
            .map(|(&i, (g, _))| g.labels[i].clone())
            .collect::<Vec<_>>()
            .join("; ");
        out.push(Group { label, index, rows });
    }
    Ok((out, ordered))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ragprobe_artifact::ScoreRow;

    /// Compact rows (in an arena that lives as long as the test).
    fn scored(rows: &[ScoreRow]) -> Vec<Scored<'static>> {
        let bump: &'static bumpalo::Bump = Box::leak(Box::new(bumpalo::Bump::new()));
        crate::scored::ScoredArena::new(bump).add_all(rows)
    }

    fn row(qid: &str, condition: &str, pos: Option<&str>) -> ScoreRow {
        ScoreRow {
            qid: qid.into(),
            case_id: format!("{qid}-{condition}"),
            condition: condition.into(),
            answer_position: pos.map(String::from),
            dataset: "d".into(),
            ..Default::default()
        }
    }

    fn q(qid: &str, meta: &str) -> QuestionRow {
        QuestionRow {
            qid: qid.into(),
            meta: Some(meta.into()),
            ..Default::default()
        }
    }

    fn labels(g: &[Group]) -> Vec<&str> {
        g.iter().map(|g| g.label.as_str()).collect()
    }

    #[test]
    fn bins_parse() {
        assert_eq!("4".parse::<Bins>(), Ok(Bins::Quantiles(4)));
        assert_eq!(
            "0, 100,1000".parse::<Bins>(),
            Ok(Bins::Edges(vec![0.0, 100.0, 1000.0]))
        );
        assert!("1".parse::<Bins>().is_err());
        assert!("5,2".parse::<Bins>().is_err());
        assert!("a,b".parse::<Bins>().is_err());
    }

    #[test]
    fn edges_bin_a_meta_field_and_missing_questions_go_to_none() {
        // s_pop: q1 50, q2 150, q3 5000, q4 none.
        let qs: HashMap<String, QuestionRow> = [
            q("q1", r#"{"s_pop": 50}"#),
            q("q2", r#"{"s_pop": "150"}"#),
            q("q3", r#"{"s_pop": 5000}"#),
            q("q4", r#"{}"#),
        ]
        .into_iter()
        .map(|q| (q.qid.clone(), q))
        .collect();
        let rows = vec![
            row("q1", "base", None),
            row("q1", "closed-book", None),
            row("q2", "base", None),
            row("q3", "base", None),
            row("q4", "base", None),
        ];
        let b = Breakdown {
            columns: vec!["meta.s_pop".into()],
            bins: "100,1000".parse().unwrap(),
        };
        let (g, ordered) = groups(&b, &scored(&rows), &|_| None, &|r| qs.get(r.qid)).unwrap();
        assert!(ordered);
        // [-inf,100): q1 (both conditions together); [100,1000): q2;
        // [1000,inf): q3; (none): q4.
        assert_eq!(
            labels(&g),
            ["[-inf, 100)", "[100, 1000)", "[1000, inf)", "(none)"]
        );
        assert_eq!(g[0].rows, [0, 1]);
        assert_eq!(
            (g[1].rows.clone(), g[2].rows.clone(), g[3].rows.clone()),
            (vec![2], vec![3], vec![4])
        );
    }

    #[test]
    fn quantiles_cut_distinct_questions() {
        // Values 1..=8 over 8 questions, two rows each: 4 bins of 2 questions.
        let qs: HashMap<String, QuestionRow> = (1..=8)
            .map(|i| q(&format!("q{i}"), &format!(r#"{{"pop": {i}}}"#)))
            .map(|q| (q.qid.clone(), q))
            .collect();
        let rows: Vec<ScoreRow> = (1..=8)
            .flat_map(|i| {
                [
                    row(&format!("q{i}"), "a", None),
                    row(&format!("q{i}"), "b", None),
                ]
            })
            .collect();
        let b = Breakdown {
            columns: vec!["meta.pop".into()],
            bins: Bins::Quantiles(4),
        };
        let (g, _) = groups(&b, &scored(&rows), &|_| None, &|r| qs.get(r.qid)).unwrap();
        // Edges at the 2nd, 4th, 6th smallest of 8 values (0-based 2, 4, 6): 3, 5, 7.
        assert_eq!(labels(&g), ["[1, 3)", "[3, 5)", "[5, 7)", "[7, 8]"]);
        assert!(g.iter().all(|g| g.rows.len() == 4));
    }

    #[test]
    fn a_case_without_the_value_joins_every_group() {
        let rows = vec![
            row("q1", "closed-book", None),
            row("q1", "strict", Some("end")),
            row("q1", "strict", Some("beginning")),
        ];
        let b = Breakdown {
            columns: vec!["answer_position".into()],
            bins: Bins::None,
        };
        let (g, ordered) = groups(&b, &scored(&rows), &|_| None, &|_| None).unwrap();
        assert!(!ordered);
        assert_eq!(labels(&g), ["beginning", "end"]);
        assert_eq!(g[0].rows, [0, 2]);
        assert_eq!(g[1].rows, [0, 1]);
    }

    #[test]
    fn two_columns_combine_and_unknown_columns_are_errors() {
        let rows = vec![
            row("q1", "base", Some("end")),
            row("q2", "add-random", Some("end")),
        ];
        let b = Breakdown {
            columns: vec!["condition".into(), "answer_position".into()],
            bins: Bins::None,
        };
        let (g, _) = groups(&b, &scored(&rows), &|_| None, &|_| None).unwrap();
        assert_eq!(labels(&g), ["add-random; end", "base; end"]);
        let bad = Breakdown {
            columns: vec!["colour".into()],
            bins: Bins::None,
        };
        let e = groups(&bad, &scored(&rows), &|_| None, &|_| None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--by colour") && e.contains("meta.FIELD"), "{e}");
        let text_bins = Breakdown {
            columns: vec!["condition".into()],
            bins: Bins::Quantiles(2),
        };
        assert!(groups(&text_bins, &scored(&rows), &|_| None, &|_| None).is_err());
    }
}
