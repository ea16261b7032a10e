//! `metrics`: one aggregate number per row.

use crate::column::Column;
use crate::kind::Kind;

/// The `metrics` kind.
pub struct Metrics;

/// One `metrics` row. `value` is None when the subset is empty (n = 0):
/// never NaN.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricRow {
    /// Which study's definition (`retrieval`, `imperfect`, `nomiracl`, `stress`, `rgb`).
    pub study: String,
    /// Dataset name, or `all`.
    pub dataset: String,
    /// The model (or retriever) measured.
    pub model: String,
    /// Prompt template id ("" where no prompt is involved, e.g. retrieval).
    pub prompt: String,
    /// Condition or setting, e.g. `top-5`, `add-random`, `strict/end`.
    pub condition: String,
    /// Metric name, e.g. `recall@5`, `acc`, `rad`, `mr`.
    pub metric: String,
    /// The value (percentages as 0–100); None when `n` is 0.
    pub value: Option<f64>,
    /// Size of the denominator (questions or cases counted).
    pub n: i64,
    /// Lower end of the 95% bootstrap interval, when computed.
    pub ci_low: Option<f64>,
    /// Upper end of the 95% bootstrap interval, when computed.
    pub ci_high: Option<f64>,
    /// JSON with the numerator, exclusions and the definition used.
    pub details: Option<String>,
    /// The breakdown column(s) (`score --by`), e.g. `meta.s_pop`; None for
    /// the overall metrics.
    pub breakdown: Option<String>,
    /// The group of the breakdown: the column's value, or a bin such as
    /// `[100, 1000)`; several columns' values are joined by `; `.
    pub breakdown_group: Option<String>,
}

impl Kind for Metrics {
    const NAME: &'static str = "metrics";
    const VERSION: u32 = 2;
    type Row = MetricRow;
    fn columns() -> Vec<Column<MetricRow>> {
        type R = MetricRow;
        vec![
            Column::utf8("study", |r: &R| &r.study, |r, v| r.study = v),
            Column::utf8("dataset", |r: &R| &r.dataset, |r, v| r.dataset = v),
            Column::utf8("model", |r: &R| &r.model, |r, v| r.model = v),
            Column::utf8("prompt", |r: &R| &r.prompt, |r, v| r.prompt = v),
            Column::utf8("condition", |r: &R| &r.condition, |r, v| r.condition = v),
            Column::utf8("metric", |r: &R| &r.metric, |r, v| r.metric = v),
            Column::opt_float64(
                "value",
                |r: &R| r.value.filter(|v| v.is_finite()),
                |r, v| r.value = v,
            ),
            Column::int64("n", |r: &R| r.n, |r, v| r.n = v),
            Column::opt_float64("ci_low", |r: &R| r.ci_low, |r, v| r.ci_low = v),
            Column::opt_float64("ci_high", |r: &R| r.ci_high, |r, v| r.ci_high = v),
            Column::opt_utf8(
                "details",
                |r: &R| r.details.as_deref(),
                |r, v| r.details = v,
            ),
            Column::opt_utf8(
                "breakdown",
                |r: &R| r.breakdown.as_deref(),
                |r, v| r.breakdown = v,
            )
            .added_in(2),
            Column::opt_utf8(
                "breakdown_group",
                |r: &R| r.breakdown_group.as_deref(),
                |r, v| r.breakdown_group = v,
            )
            .added_in(2),
        ]
    }
    /// (by, study, dataset, model, prompt, condition, metric, group): the
    /// overall metrics first, then each breakdown's groups side by side.
    /// The group order is the order the rows came in (bins in ascending
    /// order), so it is kept as the last key by a stable sort.
    fn sort(rows: &mut [MetricRow]) {
        fn key(r: &MetricRow) -> (Option<&str>, [&str; 6]) {
            (
                r.breakdown.as_deref(),
                [
                    &r.study,
                    &r.dataset,
                    &r.model,
                    &r.prompt,
                    &r.condition,
                    &r.metric,
                ],
            )
        }
        rows.sort_by(|a, b| key(a).cmp(&key(b)));
    }
}
