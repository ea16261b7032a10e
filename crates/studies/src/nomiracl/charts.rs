//! NoMIRACL's figure: hallucination against error rate.

use ragprobe_artifact::MetricRow;
use ragprobe_report::charts::{Chart, Kind, label, Series, series_by};

/// NoMIRACL trade-off: hallucination (non-relevant) against error (relevant).
pub fn nomiracl_tradeoff(rows: &[MetricRow]) -> Option<Chart> {
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
