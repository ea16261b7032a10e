//! RGB (Chen et al., AAAI 2024): noise robustness, negative rejection,
//! information integration and counterfactual robustness, scored as its
//! `evalue.py` scores them.
//!
//! Here: its metric families ([`metrics`]). Its reader
//! (`ingest/src/formats/qa/rgb.rs`), cases (`perturb/src/scenarios/rgb.rs`),
//! prompts and charts still live in the stages (see ARCHITECTURE.md).

use ragprobe_artifact::{CaseRow, ScoreRow};
use ragprobe_matching::parse::ParseMode;
use parse::{rgb_correct, rgb_fact_error, rgb_rejection};
use ragprobe_score::metrics::{MetricFamilies, Out};
use ragprobe_score::scored::Scored;
use ragprobe_report::tables::TableSpec;

pub mod charts;
pub mod metrics;
pub mod parse;
pub mod scenarios;

/// The study.
pub struct Rgb;

impl MetricFamilies for Rgb {
    fn name(&self) -> &'static str {
        "rgb"
    }

    /// RGB's judgements of every response, as `evalue.py` makes them
    /// (`mode`): rejection, factual-error detection and, when the case has
    /// answer parts or a gold answer, correctness (every part matched).
    fn judge(&self, case: &CaseRow, text: &str, mode: ParseMode, row: &mut ScoreRow) {
        let zh = case.lang == "zh";
        row.rgb_rejection = Some(rgb_rejection(text, zh, mode));
        row.rgb_fact_error = Some(rgb_fact_error(text, zh, mode));
        let parts: Option<Vec<Vec<String>>> = case
            .answer_parts
            .clone()
            .or_else(|| (!case.answers.is_empty()).then(|| vec![case.answers.clone()]));
        row.rgb_correct = parts.map(|p| rgb_correct(text, &p, zh, mode));
    }

    fn compute(&self, rows: &[Scored], out: &mut Out) {
        metrics::rgb(rows, out);
    }
}

/// The study's tables, in the order the report shows them.
static TABLES: &[TableSpec] = &[
    TableSpec { id: "rgb_noise", title: "RGB — accuracy by noise rate, rejection at noise 1, counterfactual error detection / correction", study: "rgb", metrics: &[("acc", "Acc"), ("integration_acc", "Integration"), ("rejection_rate", "Reject"), ("error_detection_rate", "ED"), ("error_correction_rate", "CR")], conditions: &[], condition_in_column: true, intervals: false },
];

impl ragprobe_report::StudyReport for Rgb {
    fn charts(&self, rows: &[ragprobe_artifact::MetricRow]) -> Vec<ragprobe_report::charts::Chart> {
        [charts::rgb_noise(rows)].into_iter().flatten().collect()
    }

    fn tables(&self) -> &'static [TableSpec] {
        TABLES
    }

    /// Counterfactual cases: whether the factual error was detected and
    /// the answer corrected (right: both).
    fn verdict(&self, r: &ScoreRow) -> Option<(String, Option<bool>)> {
        if r.condition != "rgb-counterfactual" {
            return None;
        }
        let yes_no = |b: Option<bool>| if b == Some(true) { "yes" } else { "no" };
        let (d, c) = (r.rgb_fact_error == Some(true), r.rgb_correct == Some(true));
        Some((
            format!(
                "error detected: {} · corrected: {}",
                yes_no(r.rgb_fact_error),
                yes_no(r.rgb_correct)
            ),
            Some(d && c),
        ))
    }

    /// Every answer part matched.
    fn correct(&self, r: &ScoreRow) -> bool {
        r.rgb_correct == Some(true)
    }

    /// Says RGB's "insufficient information" sentence.
    fn abstained(&self, r: &ScoreRow) -> bool {
        r.rgb_rejection == Some(true)
    }

    fn tags(&self, r: &ScoreRow, _base_correct: Option<bool>, tags: &mut Vec<String>) {
        if r.condition == "rgb-counterfactual" {
            if r.rgb_fact_error == Some(true) {
                tags.push("error detected".into());
            }
            if r.rgb_correct == Some(true) {
                tags.push("corrected".into());
            }
        }
    }
}

impl crate::Study for Rgb {
    fn prompts(&self) -> &'static [(&'static str, &'static str)] {
        &[
            ("rgb-en", include_str!("prompts/rgb-en.toml")),
            ("rgb-zh", include_str!("prompts/rgb-zh.toml")),
        ]
    }

    fn prompt_roles(&self) -> &'static [&'static str] {
        &["rgb"]
    }

    fn scenarios(&self) -> &'static [ragprobe_perturb::ScenarioRef] {
        &[&scenarios::RgbNoise, &scenarios::RgbCounterfactual]
    }
}
