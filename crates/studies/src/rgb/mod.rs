//! RGB (Chen et al., AAAI 2024): noise robustness, negative rejection,
//! information integration and counterfactual robustness, scored as its
//! `evalue.py` scores them.
//!
//! Here: its metric families ([`metrics`]). Its reader
//! (`ingest/src/formats/qa/rgb.rs`), cases (`perturb/src/scenarios/rgb.rs`),
//! prompts and charts still live in the stages (see ARCHITECTURE.md).

use ragprobe_artifact::{CaseRow, ScoreRow};
use ragprobe_matching::parse::{rgb_correct, rgb_fact_error, rgb_rejection, ParseMode};
use ragprobe_score::metrics::{MetricFamilies, Out};
use ragprobe_score::scored::Scored;

pub mod metrics;
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

impl ragprobe_report::StudyReport for Rgb {}

impl crate::Study for Rgb {
    fn scenarios(&self) -> &'static [ragprobe_perturb::ScenarioRef] {
        &[&scenarios::RgbNoise, &scenarios::RgbCounterfactual]
    }
}
