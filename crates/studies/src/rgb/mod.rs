//! RGB (Chen et al., AAAI 2024): noise robustness, negative rejection,
//! information integration and counterfactual robustness, composed as its
//! `processdata` composes cases and scored as its `evalue.py` and
//! `fact_evalue.py` score them.
//!
//! Here: its scenarios ([`scenarios`]), response parsers ([`parse`]),
//! metric families ([`metrics`]), prompts (`prompts/`), tables, charts,
//! case-browser verdicts and its reader ([`format`]).

use ragprobe_artifact::{CaseRow, ScoreRow};
use ragprobe_matching::parse::ParseMode;
use parse::{rgb_correct, rgb_fact_error, rgb_rejection};
use ragprobe_score::metrics::{MetricFamilies, Out};
use ragprobe_score::scored::Scored;
use ragprobe_report::tables::TableSpec;

pub mod charts;
pub mod format;
pub mod metrics;
pub mod parse;
pub mod scenarios;
#[cfg(test)]
mod tests;

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
        row.study.rgb_rejection = Some(rgb_rejection(text, zh, mode));
        row.study.rgb_fact_error = Some(rgb_fact_error(text, zh, mode));
        let parts: Option<Vec<Vec<String>>> = case
            .answer_parts
            .clone()
            .or_else(|| (!case.answers.is_empty()).then(|| vec![case.answers.clone()]));
        row.study.rgb_correct = parts.map(|p| rgb_correct(text, &p, zh, mode));
    }

    fn compute(&self, rows: &[Scored], out: &mut Out) {
        metrics::rgb(rows, out);
    }
}

/// The study's tables, in the order the report shows them: the paper's
/// four results tables (noise robustness, negative rejection, information
/// integration, counterfactual robustness; English and Chinese side by
/// side as dataset column groups), then every RGB figure by condition.
static TABLES: &[TableSpec] = &[
    TableSpec { id: "rgb_noise_robustness", title: "RGB — noise robustness: accuracy by noise rate (evalue.py all_rate below noise 1)", study: "rgb", metrics: &[("acc", "Acc")], conditions: &["rgb-noise-0", "rgb-noise-0.2", "rgb-noise-0.4", "rgb-noise-0.6", "rgb-noise-0.8"], condition_in_column: true, intervals: false },
    TableSpec { id: "rgb_negative_rejection", title: "RGB — negative rejection at noise 1: Rej = evalue.py all_rate (rejects or answers correctly; RGB's reported figure), Rej (strict) = says 'insufficient information' only", study: "rgb", metrics: &[("all_rate", "Rej"), ("rejection_rate", "Rej (strict)")], conditions: &["rgb-noise-1"], condition_in_column: false, intervals: false },
    TableSpec { id: "rgb_information_integration", title: "RGB — information integration: accuracy by noise rate", study: "rgb", metrics: &[("integration_acc", "Acc")], conditions: &["rgb-integration-0", "rgb-integration-0.2", "rgb-integration-0.4"], condition_in_column: true, intervals: false },
    TableSpec { id: "rgb_counterfactual_robustness", title: "RGB — counterfactual robustness (noise 0): Acc without documents, Acc_doc with the counterfactual ones, ED, CR = fact_evalue.py's correct_rate (the README's; detection by string here), CR (evalue.py) = evalue.py's correct_rate (a rejection counts as corrected)", study: "rgb", metrics: &[("acc_closed_book", "Acc"), ("acc", "Acc_doc"), ("error_detection_rate", "ED"), ("cr_fact_evalue", "CR"), ("cr_evalue", "CR (evalue.py)")], conditions: &["closed-book", "rgb-counterfactual-0"], condition_in_column: false, intervals: false },
    TableSpec { id: "rgb_noise", title: "RGB — every figure by condition: accuracy, integration, Rej (all_rate) and Rej (strict) at noise 1, counterfactual ED and both CRs", study: "rgb", metrics: &[("acc_closed_book", "Acc (no docs)"), ("acc", "Acc"), ("integration_acc", "Integration"), ("all_rate", "Rej"), ("rejection_rate", "Rej (strict)"), ("error_detection_rate", "ED"), ("cr_fact_evalue", "CR"), ("cr_evalue", "CR (evalue.py)")], conditions: &[], condition_in_column: true, intervals: false },
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
        if !r.condition.starts_with("rgb-counterfactual-") {
            return None;
        }
        let yes_no = |b: Option<bool>| if b == Some(true) { "yes" } else { "no" };
        let (d, c) = (r.study.rgb_fact_error == Some(true), r.study.rgb_correct == Some(true));
        Some((
            format!(
                "error detected: {} · corrected: {}",
                yes_no(r.study.rgb_fact_error),
                yes_no(r.study.rgb_correct)
            ),
            Some(d && c),
        ))
    }

    /// Every answer part matched.
    fn correct(&self, r: &ScoreRow) -> bool {
        r.study.rgb_correct == Some(true)
    }

    /// Says RGB's "insufficient information" sentence.
    fn abstained(&self, r: &ScoreRow) -> bool {
        r.study.rgb_rejection == Some(true)
    }

    fn tags(&self, r: &ScoreRow, _base_correct: Option<bool>, tags: &mut Vec<String>) {
        if r.condition.starts_with("rgb-counterfactual-") {
            if r.study.rgb_fact_error == Some(true) {
                tags.push("error detected".into());
            }
            if r.study.rgb_correct == Some(true) {
                tags.push("corrected".into());
            }
        }
    }
}

impl crate::Study for Rgb {
    fn record_formats(&self) -> &'static [&'static dyn ragprobe_ingest::RecordFormat] {
        &[&format::RgbFormat]
    }

    fn prompts(&self) -> &'static [(&'static str, &'static str)] {
        &[
            ("rgb-en", include_str!("prompts/rgb-en.toml")),
            ("rgb-zh", include_str!("prompts/rgb-zh.toml")),
            ("rgb-en-closed-book", include_str!("prompts/rgb-en-closed-book.toml")),
            ("rgb-zh-closed-book", include_str!("prompts/rgb-zh-closed-book.toml")),
        ]
    }

    fn prompt_roles(&self) -> &'static [&'static str] {
        &["rgb"]
    }

    fn scenarios(&self) -> &'static [ragprobe_perturb::ScenarioRef] {
        &[&scenarios::RgbNoise, &scenarios::RgbCounterfactual]
    }

    /// [`scenarios::RgbOptions::default`], as it records itself.
    fn perturb_defaults(&self, opts: &mut ragprobe_perturb::StudyOptions) {
        scenarios::RgbOptions::default().set(opts);
    }
}
