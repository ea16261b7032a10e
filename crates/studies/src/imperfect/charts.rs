//! Seed 000's figures: Figure 2 (unanswerable) and Figure 3 (RAD).

use ragprobe_artifact::{condition, MetricRow};
use ragprobe_report::charts::{Chart, group_key, Kind, series_by};

/// Seed 000 Figure 2: Acc, Acc(ans), Acc(unans), one bar per model.
pub fn fig2_unanswerable(rows: &[MetricRow]) -> Option<Chart> {
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
pub fn fig3_rad(rows: &[MetricRow]) -> Option<Chart> {
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
