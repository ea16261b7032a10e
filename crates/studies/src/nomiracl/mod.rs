//! NoMIRACL (seed 001, Thakur et al. 2024): hallucination rate on
//! non-relevant passage sets and error rate on relevant ones, per language.
//!
//! Here, all of it: its reader ([`format`]), query sample ([`sample`]),
//! cases ([`scenarios`]), prompts, response parser ([`parse`]), metric
//! families ([`metrics`]), tables, chart ([`charts`]) and case-browser
//! verdicts.

use ragprobe_artifact::{CaseRow, Expected, ScoreRow};
use ragprobe_matching::parse::ParseMode;
use parse::{nomiracl_label_with};
use ragprobe_score::metrics::{MetricFamilies, Out};
use ragprobe_score::scored::Scored;
use ragprobe_report::tables::TableSpec;

pub mod charts;
pub mod format;
pub mod metrics;
pub mod parse;
pub mod sample;
pub mod scenarios;

/// The study.
pub struct Nomiracl;

impl MetricFamilies for Nomiracl {
    fn name(&self) -> &'static str {
        "nomiracl"
    }

    /// The NoMIRACL label of a response to a `nomiracl` case: yes, idk or
    /// invalid, as the reference's parser reads it (`mode`).
    fn judge(&self, case: &CaseRow, text: &str, mode: ParseMode, row: &mut ScoreRow) {
        if case.condition == "nomiracl" {
            row.study.nomiracl_label = Some(nomiracl_label_with(text, mode).name().into());
        }
    }

    fn compute(&self, rows: &[Scored], out: &mut Out) {
        metrics::nomiracl(rows, out);
    }
}

/// The study's tables, in the order the report shows them.
static TABLES: &[TableSpec] = &[
    TableSpec { id: "nomiracl_rates", title: "NoMIRACL — hallucination rate (non-relevant) and error rate (relevant), invalid outputs in the denominator (seed 001)", study: "nomiracl", metrics: &[("hallucination_rate", "Halluc."), ("error_rate", "Error")], conditions: &[], condition_in_column: false, intervals: false },
    TableSpec { id: "nomiracl_rates_valid_only", title: "NoMIRACL — FP/(FP+TN) and FN/(FN+TP): invalid outputs left out (seed 001)", study: "nomiracl", metrics: &[("hallucination_rate_valid_only", "FP/(FP+TN)"), ("error_rate_valid_only", "FN/(FN+TP)"), ("invalid_rate", "Invalid")], conditions: &[], condition_in_column: false, intervals: false },
];

impl ragprobe_report::StudyReport for Nomiracl {
    fn charts(&self, rows: &[ragprobe_artifact::MetricRow]) -> Vec<ragprobe_report::charts::Chart> {
        [charts::nomiracl_tradeoff(rows)].into_iter().flatten().collect()
    }

    fn tables(&self) -> &'static [TableSpec] {
        TABLES
    }

    /// The parsed label (yes / I don't know / invalid) and whether it is
    /// the right one for the subset (relevant: yes; non-relevant: I don't
    /// know).
    fn verdict(&self, r: &ScoreRow) -> Option<(String, Option<bool>)> {
        let l = r.study.nomiracl_label.as_ref()?;
        let said = match l.as_str() {
            "yes" => "yes",
            "idk" => "I don't know",
            _ => "invalid",
        };
        let right = match r.expected {
            Expected::Relevant => l == "yes",
            Expected::NonRelevant => l == "idk",
            _ => false,
        };
        let subset = if r.expected == Expected::Relevant {
            "relevant"
        } else {
            "non-relevant"
        };
        Some((
            format!(
                "said “{said}”: {} for the {subset} subset",
                if right { "right" } else { "wrong" }
            ),
            Some(right),
        ))
    }

    fn tags(&self, r: &ScoreRow, _base_correct: Option<bool>, tags: &mut Vec<String>) {
        if let Some(l) = &r.study.nomiracl_label {
            tags.push(format!("nomiracl: {l}"));
        }
    }
}

impl crate::Study for Nomiracl {
    fn prompts(&self) -> &'static [(&'static str, &'static str)] {
        &[
            ("nomiracl-explanation", include_str!("prompts/nomiracl-explanation.toml")),
            ("nomiracl-repeat", include_str!("prompts/nomiracl-repeat.toml")),
            ("nomiracl-role", include_str!("prompts/nomiracl-role.toml")),
            ("nomiracl-vanilla", include_str!("prompts/nomiracl-vanilla.toml")),
        ]
    }

    fn prompt_roles(&self) -> &'static [&'static str] {
        &["nomiracl"]
    }

    fn record_formats(&self) -> &'static [&'static dyn ragprobe_ingest::RecordFormat] {
        &[&format::NomiraclFormat]
    }

    fn scenarios(&self) -> &'static [ragprobe_perturb::ScenarioRef] {
        &[&scenarios::Nomiracl]
    }

    fn question_samples(&self) -> &'static [&'static dyn ragprobe_perturb::QuestionSample] {
        &[&sample::Sample]
    }

    /// `nomiracl_sample`: null (every query) unless set.
    fn perturb_defaults(&self, opts: &mut ragprobe_perturb::StudyOptions) {
        sample::NomiraclSample::set(None, opts);
    }
}
