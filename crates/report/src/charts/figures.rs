//! The helpers a study's figures are made with ([`series_by`], the
//! series names), and the stage's own figure: paired comparisons. The
//! studies' figures are theirs ([`crate::StudyReport::charts`]).

use super::*;

/// The model a metric row is for, without its file hash: its colour.
pub fn model_name(r: &MetricRow) -> String {
    r.model
        .split('@')
        .next()
        .unwrap_or(&r.model)
        .trim_end_matches(".gguf")
        .to_string()
}

/// `model · prompt` (the model without its file hash), as charts name lines.
pub fn label(r: &MetricRow) -> String {
    let model = model_name(r);
    if r.prompt.is_empty() {
        model
    } else {
        format!("{model} · {}", r.prompt)
    }
}

/// `label (dataset)`: one series per model, prompt and dataset.
pub fn group_key(r: &MetricRow) -> String {
    format!("{} ({})", label(r), r.dataset)
}

/// One series per distinct `key` of `rows` (sorted), valued at each x by
/// the first row `hit` matches (None where no row does).
pub fn series_by<X>(
    rows: &[&MetricRow],
    key: impl Fn(&MetricRow) -> String,
    xs: &[X],
    hit: impl Fn(&MetricRow, &X) -> bool,
) -> Vec<Series> {
    let mut keys: Vec<(String, String)> = rows.iter().map(|r| (key(r), model_name(r))).collect();
    keys.sort();
    keys.dedup_by(|a, b| a.0 == b.0);
    keys.into_iter()
        .map(|(name, model)| Series {
            values: xs
                .iter()
                .map(|x| {
                    rows.iter()
                        .find(|r| key(r) == name && hit(r, x))
                        .and_then(|r| Val::of(r))
                })
                .collect(),
            name,
            model,
        })
        .collect()
}

/// `report --compare`: B − A per metric and condition, with intervals.
pub(super) fn compare_diffs(rows: &[MetricRow]) -> Option<Chart> {
    let series: Vec<Series> = rows
        .iter()
        .filter(|r| r.study == "compare" && r.metric == "diff")
        .map(|r| Series {
            name: format!("{} ({}, {})", r.model, r.dataset, r.prompt),
            model: "compare".into(),
            values: vec![Val::of(r)],
        })
        .collect();
    (!series.is_empty()).then(|| Chart {
        name: "compare_diffs".into(),
        title: "Paired differences B − A (95% CI)".into(),
        y_desc: "B − A (points)".into(),
        kind: Kind::Diffs,
        series,
    })
}

/// Every chart that has data: the studies' (in registration order), then
/// the comparison's.
pub fn all(rows: &[MetricRow], studies: crate::Studies) -> Vec<Chart> {
    let mut charts: Vec<Chart> = studies.iter().flat_map(|s| s.charts(rows)).collect();
    charts.extend(compare_diffs(rows));
    charts
}
