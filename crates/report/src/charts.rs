//! SVG charts of the studies' figures, drawn with plotters (SVG backend,
//! no font files needed: text is left to the browser).

use plotters::prelude::*;
use ragprobe_artifact::{condition, MetricRow};
use std::collections::BTreeMap;

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Bars: one group per label, one bar per series; optional interval whiskers.
/// (The y axis runs to 128 so the legend sits above the 0–100 data.)
pub fn grouped_bars(
    title: &str,
    y_desc: &str,
    groups: &[String],
    series: &[(String, Vec<Option<(f64, Option<(f64, f64)>)>>)],
) -> String {
    let mut svg = String::new();
    // Each group is wide enough for its bars and for its label.
    let longest = groups.iter().map(|g| g.chars().count()).max().unwrap_or(0);
    let width = (140 + groups.len() * (40 + 22 * series.len()).max(7 * longest + 20))
        .clamp(520, 2400) as u32;
    {
        let root = SVGBackend::with_string(&mut svg, (width, 420)).into_drawing_area();
        root.fill(&WHITE).expect("svg");
        let n = groups.len().max(1) as f64;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(60)
            .y_label_area_size(50)
            .build_cartesian_2d(0f64..n, 0f64..128f64)
            .expect("chart");
        let labels = groups.to_vec();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(groups.len().max(1) * 2 + 1)
            .x_label_formatter(&|x| {
                let i = (x - 0.5).round();
                if (x - 0.5 - i).abs() < 1e-6 && i >= 0.0 {
                    labels.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc(y_desc)
            .y_label_formatter(&|y| {
                if *y <= 100.0 {
                    format!("{y:.0}")
                } else {
                    String::new()
                }
            })
            .draw()
            .expect("mesh");
        let k = series.len().max(1) as f64;
        let bw = 0.8 / k;
        for (si, (name, vals)) in series.iter().enumerate() {
            let c = color(si);
            let rects: Vec<Rectangle<(f64, f64)>> = vals
                .iter()
                .enumerate()
                .filter_map(|(gi, v)| v.map(|(y, _)| (gi, y)))
                .map(|(gi, y)| {
                    let x0 = gi as f64 + 0.1 + si as f64 * bw;
                    Rectangle::new([(x0, 0.0), (x0 + bw * 0.92, y)], c.filled())
                })
                .collect();
            chart
                .draw_series(rects)
                .expect("bars")
                .label(name.clone())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
            let whiskers: Vec<_> = vals
                .iter()
                .enumerate()
                .filter_map(|(gi, v)| v.and_then(|(y, ci)| ci.map(|(lo, hi)| (gi, y, lo, hi))))
                .map(|(gi, y, lo, hi)| {
                    ErrorBar::new_vertical(
                        gi as f64 + 0.1 + si as f64 * bw + bw * 0.46,
                        lo,
                        y,
                        hi,
                        BLACK.stroke_width(1),
                        6,
                    )
                })
                .collect();
            chart.draw_series(whiskers).expect("whiskers");
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .expect("legend");
        root.present().expect("svg");
    }
    svg
}

/// Lines over categorical x positions, with interval whiskers.
pub fn lines(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    xs: &[String],
    series: &[(String, Vec<Option<(f64, Option<(f64, f64)>)>>)],
) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (640, 420)).into_drawing_area();
        root.fill(&WHITE).expect("svg");
        let n = xs.len().max(1) as f64;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(50)
            .y_label_area_size(50)
            .build_cartesian_2d(-0.5f64..(n - 0.5), 0f64..128f64)
            .expect("chart");
        let labels = xs.to_vec();
        chart
            .configure_mesh()
            .x_labels(xs.len().max(1) * 2 + 1)
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    labels.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .x_desc(x_desc)
            .y_desc(y_desc)
            .y_label_formatter(&|y| {
                if *y <= 100.0 {
                    format!("{y:.0}")
                } else {
                    String::new()
                }
            })
            .draw()
            .expect("mesh");
        for (si, (name, vals)) in series.iter().enumerate() {
            let c = color(si);
            let pts: Vec<(f64, f64)> = vals
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.map(|(y, _)| (i as f64, y)))
                .collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
                .expect("line")
                .label(name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 14, y)], c.stroke_width(2))
                });
            chart
                .draw_series(pts.iter().map(|p| Circle::new(*p, 4, c.filled())))
                .expect("points");
            let whiskers: Vec<_> = vals
                .iter()
                .enumerate()
                .filter_map(|(i, v)| {
                    v.and_then(|(y, ci)| {
                        ci.map(|(lo, hi)| {
                            ErrorBar::new_vertical(
                                i as f64 + 0.04 * si as f64,
                                lo,
                                y,
                                hi,
                                c.stroke_width(1),
                                8,
                            )
                        })
                    })
                })
                .collect();
            chart.draw_series(whiskers).expect("whiskers");
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .expect("legend");
        root.present().expect("svg");
    }
    svg
}

/// Labelled points.
pub fn scatter(title: &str, x_desc: &str, y_desc: &str, points: &[(String, f64, f64)]) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (640, 460)).into_drawing_area();
        root.fill(&WHITE).expect("svg");
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(16)
            .x_label_area_size(50)
            .y_label_area_size(50)
            .build_cartesian_2d(0f64..105f64, 0f64..128f64)
            .expect("chart");
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .y_label_formatter(&|y| {
                if *y <= 100.0 {
                    format!("{y:.0}")
                } else {
                    String::new()
                }
            })
            .draw()
            .expect("mesh");
        for (i, (label, x, y)) in points.iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(std::iter::once(Circle::new((*x, *y), 6, c.filled())))
                .expect("point")
                .label(label.clone())
                .legend(move |(px, py)| Circle::new((px + 6, py), 5, c.filled()));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .expect("legend");
        root.present().expect("svg");
    }
    svg
}

fn val(r: &MetricRow) -> Option<(f64, Option<(f64, f64)>)> {
    r.value.map(|v| (v, r.ci_low.zip(r.ci_high)))
}

/// `model · prompt` (the model without its file hash), as charts name lines.
pub(crate) fn label(r: &MetricRow) -> String {
    let model = r
        .model
        .split('@')
        .next()
        .unwrap_or(&r.model)
        .trim_end_matches(".gguf");
    if r.prompt.is_empty() {
        model.to_string()
    } else {
        format!("{model} · {}", r.prompt)
    }
}

/// `label (dataset)`: one chart group or line per model, prompt and dataset.
fn group_key(r: &MetricRow) -> String {
    format!("{} ({})", label(r), r.dataset)
}

/// The distinct group keys of `rows`, sorted.
fn group_keys(rows: &[&MetricRow]) -> Vec<String> {
    let mut keys: Vec<String> = rows.iter().map(|r| group_key(r)).collect();
    keys.sort();
    keys.dedup();
    keys
}

/// One series per name: its values at each x, from the first row `hit`
/// matches (None where no row does).
pub(crate) fn series<N, X>(
    rows: &[&MetricRow],
    names: &[N],
    xs: &[X],
    hit: impl Fn(&MetricRow, &N, &X) -> bool,
    title: impl Fn(&N) -> String,
) -> Vec<(String, Vec<Option<(f64, Option<(f64, f64)>)>>)> {
    names
        .iter()
        .map(|n| {
            let values = xs
                .iter()
                .map(|x| rows.iter().find(|r| hit(r, n, x)).and_then(|r| val(r)))
                .collect();
            (title(n), values)
        })
        .collect()
}

/// Seed 000 Figure 2: Acc, Acc(ans), Acc(unans) per model.
fn fig2_unanswerable(rows: &[MetricRow]) -> Option<(String, String)> {
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
    let groups = group_keys(&fig2);
    let series = series(
        &fig2,
        &metrics,
        &groups,
        |r, m, g| r.metric == *m && group_key(r) == *g,
        |m| {
            m.replace("acc_", "Acc(").replace("acc", "Acc") + if m.contains('_') { ")" } else { "" }
        },
    );
    Some((
        "fig2_unanswerable.svg".into(),
        grouped_bars(
            "Unanswerable questions (Unans prompt)",
            "accuracy (%)",
            &groups,
            &series,
        ),
    ))
}

/// Seed 000 Figure 3: RAD per added-document type.
fn fig3_rad(rows: &[MetricRow]) -> Option<(String, String)> {
    let fig3: Vec<&MetricRow> = rows
        .iter()
        .filter(|r| r.study == "imperfect" && r.metric == "rad")
        .collect();
    if fig3.is_empty() {
        return None;
    }
    let groups = group_keys(&fig3);
    let mut types: Vec<&str> = fig3.iter().map(|r| r.condition.as_str()).collect();
    types.sort();
    types.dedup();
    let series = series(
        &fig3,
        &types,
        &groups,
        |r, t, g| r.condition == *t && group_key(r) == *g,
        |t| t.to_string(),
    );
    Some((
        "fig3_rad.svg".into(),
        grouped_bars("RAD by added-document type", "RAD (%)", &groups, &series),
    ))
}

/// Seed 002: MR by answer position, one line per policy prompt.
fn stress_mr_by_position(rows: &[MetricRow]) -> Option<(String, String)> {
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
    let xs: Vec<String> = ["beginning", "middle", "end"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let keys = group_keys(&mr);
    let series = series(
        &mr,
        &keys,
        &xs,
        |r, k, x| group_key(r) == *k && r.condition == format!("edited/{x}"),
        |k| k.clone(),
    );
    Some((
        "stress_mr_by_position.svg".into(),
        lines(
            "Misleading rate by answer position (95% CI)",
            "answer-span position",
            "MR (%)",
            &xs,
            &series,
        ),
    ))
}

/// NoMIRACL trade-off: hallucination (non-relevant) against error (relevant).
fn nomiracl_tradeoff(rows: &[MetricRow]) -> Option<(String, String)> {
    let mut pts: BTreeMap<String, (Option<f64>, Option<f64>)> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.study == "nomiracl") {
        let e = pts
            .entry(format!("{} [{}]", label(r), r.dataset))
            .or_default();
        match r.metric.as_str() {
            "hallucination_rate" => e.0 = r.value,
            "error_rate" => e.1 = r.value,
            _ => {}
        }
    }
    let pts: Vec<(String, f64, f64)> = pts
        .into_iter()
        .filter_map(|(k, (h, e))| Some((k, h?, e?)))
        .collect();
    (!pts.is_empty()).then(|| {
        (
            "nomiracl_tradeoff.svg".into(),
            scatter(
                "NoMIRACL: hallucination vs error",
                "hallucination rate, non-relevant (%)",
                "error rate, relevant (%)",
                &pts,
            ),
        )
    })
}

/// RGB: accuracy against noise rate.
fn rgb_noise(rows: &[MetricRow]) -> Option<(String, String)> {
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
    let xs: Vec<String> = rates.iter().map(|(x, _)| format!("{x}")).collect();
    let keys = group_keys(&rgb);
    let series = series(
        &rgb,
        &keys,
        &rates,
        |r, k, (_, c)| group_key(r) == *k && r.condition == *c,
        |k| k.clone(),
    );
    Some((
        "rgb_noise.svg".into(),
        lines(
            "RGB: accuracy against noise rate",
            "noise rate",
            "accuracy (%)",
            &xs,
            &series,
        ),
    ))
}

/// Every chart that has data: (file name, SVG).
pub fn all(rows: &[MetricRow]) -> Vec<(String, String)> {
    [
        fig2_unanswerable(rows),
        fig3_rad(rows),
        stress_mr_by_position(rows),
        nomiracl_tradeoff(rows),
        rgb_noise(rows),
    ]
    .into_iter()
    .flatten()
    .collect()
}
