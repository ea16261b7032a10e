//! Imperfect retrieval (seed 000, *How Robust Are RAG Systems to
//! Imperfect Retrieval?*): does the model abstain when no retrieved passage
//! holds the answer, does a correct answer survive an added random, top-k,
//! conflicting or GenADV passage (RAD), does it notice a conflict or switch
//! to the foil (Tables 7, 8, 13).
//!
//! Here: its metric families ([`metrics`]). Its readers (DPR/FiD,
//! Self-RAG), scenarios (`perturb/src/scenarios/imperfect.rs`, GenADV),
//! prompts and tables still live in the stages (see ARCHITECTURE.md).

use ragprobe_score::metrics::{MetricFamilies, Out};
use ragprobe_score::scored::Scored;

pub mod metrics;
pub mod scenarios;

/// The study.
pub struct Imperfect;

impl MetricFamilies for Imperfect {
    fn name(&self) -> &'static str {
        "imperfect"
    }

    fn compute(&self, rows: &[Scored], out: &mut Out) {
        metrics::qa(rows, out);
        metrics::unanswerable(rows, out);
        metrics::rad(rows, out);
        metrics::conflict_detection(rows, out);
        metrics::stubbornness(rows, out);
        metrics::par(rows, out);
    }
}

impl ragprobe_report::StudyReport for Imperfect {}

impl crate::Study for Imperfect {
    fn scenarios(&self) -> &'static [ragprobe_perturb::ScenarioRef] {
        &[
            &scenarios::AddRandom,
            &scenarios::AddTopk,
            &scenarios::AddConflict,
            &scenarios::AddGenadv,
        ]
    }
}
