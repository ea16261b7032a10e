//! RGB's figure: accuracy against noise rate.

use ragprobe_artifact::MetricRow;
use ragprobe_report::charts::{Chart, group_key, Kind, series_by};

/// RGB: accuracy against noise rate.
pub fn rgb_noise(rows: &[MetricRow]) -> Option<Chart> {
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
