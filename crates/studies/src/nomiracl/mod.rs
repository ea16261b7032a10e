//! NoMIRACL (seed 001, Thakur et al. 2024): hallucination rate on
//! non-relevant passage sets and error rate on relevant ones, per language.
//!
//! Here: its metric families ([`metrics`]). Its reader
//! (`ingest/src/formats/qa/nomiracl.rs`), query sample and cases
//! (`perturb/src/scenarios/nomiracl.rs`), prompt and tables still live in
//! the stages (see ARCHITECTURE.md).

use ragprobe_artifact::{CaseRow, ScoreRow};
use ragprobe_matching::parse::{nomiracl_label_with, ParseMode};
use ragprobe_score::metrics::{MetricFamilies, Out};
use ragprobe_score::scored::Scored;

pub mod metrics;
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
            row.nomiracl_label = Some(nomiracl_label_with(text, mode).name().into());
        }
    }

    fn compute(&self, rows: &[Scored], out: &mut Out) {
        metrics::nomiracl(rows, out);
    }
}

impl ragprobe_report::StudyReport for Nomiracl {}

impl crate::Study for Nomiracl {
    fn scenarios(&self) -> &'static [ragprobe_perturb::ScenarioRef] {
        &[&scenarios::Nomiracl]
    }
}
