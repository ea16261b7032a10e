//! RAG-Stress's figure: the misleading rate by answer position.

use ragprobe_artifact::MetricRow;
use ragprobe_report::charts::{Chart, group_key, Kind, series_by};

/// Seed 002: MR by answer position, one line per model and policy prompt.
pub fn stress_mr_by_position(rows: &[MetricRow]) -> Option<Chart> {
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
