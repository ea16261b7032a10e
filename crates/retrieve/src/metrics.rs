//! Retrieval metrics of seed 000 Table 3.
//!
//! Per dataset, over the questions that have gold answers:
//! * **Recall@k** = 100 x (questions with at least one `has_answer` passage
//!   among ranks 1..k) / (questions) — the top-k retrieval accuracy of
//!   Karpukhin et al. (2020);
//! * **Unans@k** = 100 - Recall@k: the share of questions none of whose
//!   top-k passages holds the answer (the unanswerable split of seed 000 §5.2).
//!
//! Questions without gold answers (relevance-judged sets) cannot be judged and are
//! counted separately, never in a denominator.

use ragprobe_artifact::{
    read, write_all, ContextRow, MetricRow, Metrics, QuestionRow, Recipe, Store, Written,
};
use serde_json::json;
use std::collections::{BTreeMap, HashMap};

use crate::Result;

/// One dataset's line of Table 3.
#[derive(Debug, Clone, PartialEq)]
pub struct RecallRow {
    /// Dataset name (`questions.dataset`).
    pub dataset: String,
    /// Questions with gold answers (the denominator).
    pub size: u64,
    /// Of those, questions with an answer-bearing passage in the top k.
    pub answerable: u64,
    /// Questions without gold answers, left out.
    pub no_gold: u64,
    /// The k of Recall@k.
    pub k: usize,
}

impl RecallRow {
    /// Recall@k as a percentage of `size`; None when no question has gold answers.
    pub fn recall(&self) -> Option<f64> {
        (self.size > 0).then(|| 100.0 * self.answerable as f64 / self.size as f64)
    }
    /// Unans@k: 100 minus Recall@k, the share of questions with no answer-bearing passage in the top k.
    pub fn unans(&self) -> Option<f64> {
        self.recall().map(|r| 100.0 - r)
    }
}

/// Recall@k per dataset from questions and their contexts (ranks > k ignored).
pub fn recall_from_rows(
    questions: &[QuestionRow],
    contexts: &[ContextRow],
    k: usize,
) -> Vec<RecallRow> {
    let mut hit: HashMap<&str, bool> = HashMap::new();
    for c in contexts {
        if c.rank as usize <= k && c.has_answer == Some(true) {
            hit.insert(c.qid.as_str(), true);
        }
    }
    let mut rows: BTreeMap<&str, RecallRow> = BTreeMap::new();
    for q in questions {
        let r = rows.entry(q.dataset.as_str()).or_insert_with(|| RecallRow {
            dataset: q.dataset.clone(),
            size: 0,
            answerable: 0,
            no_gold: 0,
            k,
        });
        if q.answers.is_empty() {
            r.no_gold += 1;
            continue;
        }
        r.size += 1;
        if hit.contains_key(q.qid.as_str()) {
            r.answerable += 1;
        }
    }
    rows.into_values().collect()
}

/// Recall rows as a `metrics` artifact.
pub fn write(
    store: &Store,
    recipe: &Recipe,
    rows: &[RecallRow],
    model: &str,
    k: usize,
) -> Result<Written> {
    let mut out = Vec::new();
    for r in rows {
        let details = json!({"answerable": r.answerable, "no_gold_answers": r.no_gold}).to_string();
        for (metric, value) in [
            (format!("recall@{k}"), r.recall()),
            (format!("unans@{k}"), r.unans()),
        ] {
            out.push(MetricRow {
                study: "retrieval".into(),
                dataset: r.dataset.clone(),
                model: model.into(),
                prompt: String::new(),
                condition: format!("top-{k}"),
                metric,
                value,
                n: r.size as i64,
                ci_low: None,
                ci_high: None,
                details: Some(details.clone()),
                breakdown: None,
                breakdown_group: None,
            });
        }
    }
    Ok(write_all::<Metrics>(store, recipe, out, json!({"k": k}))?)
}

/// Recall rows back from a metrics artifact written by [`write`].
pub fn from_metrics(store: &Store, id: &str) -> Result<Vec<RecallRow>> {
    let mut rows: BTreeMap<String, RecallRow> = BTreeMap::new();
    for m in read::<Metrics>(store, id)? {
        let Some(k) = m
            .metric
            .strip_prefix("recall@")
            .and_then(|k| k.parse().ok())
        else {
            continue;
        };
        let d: serde_json::Value = m
            .details
            .as_deref()
            .and_then(|d| serde_json::from_str(d).ok())
            .unwrap_or_default();
        rows.insert(
            m.dataset.clone(),
            RecallRow {
                dataset: m.dataset,
                size: m.n as u64,
                answerable: d["answerable"].as_u64().unwrap_or(0),
                no_gold: d["no_gold_answers"].as_u64().unwrap_or(0),
                k,
            },
        );
    }
    Ok(rows.into_values().collect())
}

/// Table 3 as text: dataset, size, Recall@k, Unans.
pub fn recall_table(rows: &[RecallRow]) -> String {
    let mut s = String::new();
    let k = rows.first().map(|r| r.k).unwrap_or(0);
    s.push_str(&format!(
        "{:<24} {:>8} {:>10} {:>10}\n",
        "dataset",
        "size",
        format!("Recall@{k}"),
        "Unans"
    ));
    for r in rows {
        let f = |v: Option<f64>| v.map(|v| format!("{v:.1}")).unwrap_or_else(|| "-".into());
        s.push_str(&format!(
            "{:<24} {:>8} {:>10} {:>10}\n",
            r.dataset,
            r.size,
            f(r.recall()),
            f(r.unans())
        ));
        if r.no_gold > 0 {
            s.push_str(&format!(
                "{:<24} ({} question(s) without gold answers left out)\n",
                "", r.no_gold
            ));
        }
    }
    s
}
