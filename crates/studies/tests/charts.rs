//! The studies' figures through the report stage: which rows make which
//! chart, in registration order, the comparison's last.

use ragprobe_artifact::MetricRow;

fn row(study: &str, condition: &str, metric: &str, value: f64) -> MetricRow {
    MetricRow {
        study: study.into(),
        dataset: "d".into(),
        model: "m".into(),
        prompt: "p".into(),
        condition: condition.into(),
        metric: metric.into(),
        value: Some(value),
        n: 40,
        ..Default::default()
    }
}

#[test]
fn each_study_draws_its_own_figures() {
    let rows = vec![
        row("imperfect", "base", "acc", 50.0),
        row("imperfect", "add-random", "rad", 10.0),
        row("stress", "edited/middle", "mr", 20.0),
        row("nomiracl", "non_relevant", "hallucination_rate", 30.0),
        row("nomiracl", "relevant", "error_rate", 5.0),
        row("rgb", "rgb-noise-0.4", "acc", 70.0),
        row("compare", "base", "diff", 1.0),
        // Rows no figure reads.
        row("faitheval", "faitheval-unanswerable", "acc", 40.0),
        row("imperfect", "base", "par", 3.0),
    ];
    let charts = ragprobe_report::charts::all(&rows, &ragprobe_studies::reports());
    let names: Vec<&str> = charts.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "fig2_unanswerable",
            "fig3_rad",
            "nomiracl_tradeoff",
            "stress_mr_by_position",
            "rgb_noise",
            "compare_diffs"
        ]
    );
    assert!(ragprobe_report::charts::all(&rows[..2], &[]).is_empty());
}
