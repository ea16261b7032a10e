//! The studies' figures: which metric rows make which chart (seed 000
//! Figures 2 and 3, RAG-Stress MR by position, the NoMIRACL trade-off, RGB
//! accuracy by noise rate, paired comparisons).

use super::*;

/// The model a metric row is for, without its file hash: its colour.
pub(crate) fn model_name(r: &MetricRow) -> String {
    r.model
        .split('@')
        .next()
        .unwrap_or(&r.model)
        .trim_end_matches(".gguf")
        .to_string()
}

/// `model · prompt` (the model without its file hash), as charts name lines.
pub(crate) fn label(r: &MetricRow) -> String {
    let model = model_name(r);
    if r.prompt.is_empty() {
        model
    } else {
        format!("{model} · {}", r.prompt)
    }
}

/// `label (dataset)`: one series per model, prompt and dataset.
pub(super) fn group_key(r: &MetricRow) -> String {
    format!("{} ({})", label(r), r.dataset)
}

/// One series per distinct `key` of `rows` (sorted), valued at each x by
/// the first row `hit` matches (None where no row does).
pub(crate) fn series_by<X>(
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

/// Seed 000 Figure 2: Acc, Acc(ans), Acc(unans), one bar per model.
pub(super) fn fig2_unanswerable(rows: &[MetricRow]) -> Option<Chart> {
    let metrics = ["acc", "acc_ans", "acc_unans"];
    let fig2: Vec<&MetricRow> = rows
        .iter()
        .filter(|r| {
            r.study == "imperfect"
                && r.condition == condition::BASE
                && metrics.contains(&r.metric.as_str())
        })
        .collect();
    if fig2.is_empty() {
        return None;
    }
    Some(Chart {
        name: "fig2_unanswerable".into(),
        title: "Unanswerable questions (Unans prompt)".into(),
        y_desc: "accuracy (%)".into(),
        kind: Kind::Bars {
            groups: vec!["Acc".into(), "Acc(ans)".into(), "Acc(unans)".into()],
        },
        series: series_by(&fig2, group_key, &metrics, |r, m| r.metric == *m),
    })
}

/// Seed 000 Figure 3: RAD per added-document type, one bar per model.
pub(super) fn fig3_rad(rows: &[MetricRow]) -> Option<Chart> {
    let fig3: Vec<&MetricRow> = rows
        .iter()
        .filter(|r| r.study == "imperfect" && r.metric == "rad")
        .collect();
    if fig3.is_empty() {
        return None;
    }
    let mut types: Vec<String> = fig3.iter().map(|r| r.condition.clone()).collect();
    types.sort();
    types.dedup();
    Some(Chart {
        name: "fig3_rad".into(),
        title: "RAD by added-document type".into(),
        y_desc: "RAD (%)".into(),
        series: series_by(&fig3, group_key, &types, |r, t| r.condition == *t),
        kind: Kind::Bars { groups: types },
    })
}

/// Seed 002: MR by answer position, one line per model and policy prompt.
pub(super) fn stress_mr_by_position(rows: &[MetricRow]) -> Option<Chart> {
    let mr: Vec<&MetricRow> = rows
        .iter()
        .filter(|r| {
            r.study == "stress"
                && r.metric == "mr"
                && r.condition.starts_with("edited/")
                && r.condition != "edited/all"
        })
        .collect();
    if mr.is_empty() {
        return None;
    }
    let xs: Vec<String> = ["beginning", "middle", "end"].map(String::from).to_vec();
    Some(Chart {
        name: "stress_mr_by_position".into(),
        title: "Misleading rate by answer position".into(),
        y_desc: "MR (%)".into(),
        series: series_by(&mr, group_key, &xs, |r, x| {
            r.condition == format!("edited/{x}")
        }),
        kind: Kind::Lines {
            xs,
            x_desc: "answer-span position".into(),
        },
    })
}

/// NoMIRACL trade-off: hallucination (non-relevant) against error (relevant).
pub(super) fn nomiracl_tradeoff(rows: &[MetricRow]) -> Option<Chart> {
    let nm: Vec<&MetricRow> = rows.iter().filter(|r| r.study == "nomiracl").collect();
    let series: Vec<Series> = series_by(
        &nm,
        |r| format!("{} [{}]", label(r), r.dataset),
        &["hallucination_rate", "error_rate"],
        |r, m| r.metric == *m,
    )
    .into_iter()
    .filter(|s| s.values.iter().all(Option::is_some))
    .collect();
    (!series.is_empty()).then(|| Chart {
        name: "nomiracl_tradeoff".into(),
        title: "NoMIRACL: hallucination vs error".into(),
        y_desc: "error rate, relevant (%)".into(),
        kind: Kind::Scatter {
            x_desc: "hallucination rate, non-relevant (%)".into(),
        },
        series,
    })
}

/// RGB: accuracy against noise rate.
pub(super) fn rgb_noise(rows: &[MetricRow]) -> Option<Chart> {
    let rgb: Vec<&MetricRow> = rows
        .iter()
        .filter(|r| r.study == "rgb" && r.metric == "acc" && r.condition.starts_with("rgb-noise-"))
        .collect();
    if rgb.is_empty() {
        return None;
    }
    let mut rates: Vec<(f64, String)> = rgb
        .iter()
        .filter_map(|r| {
            r.condition
                .trim_start_matches("rgb-noise-")
                .parse::<f64>()
                .ok()
                .map(|x| (x, r.condition.clone()))
        })
        .collect();
    rates.sort_by(|a, b| a.0.total_cmp(&b.0));
    rates.dedup();
    Some(Chart {
        name: "rgb_noise".into(),
        title: "RGB: accuracy against noise rate".into(),
        y_desc: "accuracy (%)".into(),
        series: series_by(&rgb, group_key, &rates, |r, (_, c)| r.condition == *c),
        kind: Kind::Lines {
            xs: rates.iter().map(|(x, _)| format!("{x}")).collect(),
            x_desc: "noise rate".into(),
        },
    })
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

/// Every chart that has data.
pub fn all(rows: &[MetricRow]) -> Vec<Chart> {
    [
        fig2_unanswerable(rows),
        fig3_rad(rows),
        stress_mr_by_position(rows),
        nomiracl_tradeoff(rows),
        rgb_noise(rows),
        compare_diffs(rows),
    ]
    .into_iter()
    .flatten()
    .collect()
}
