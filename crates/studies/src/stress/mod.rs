//! RAG-Stress (seed 002): does a source-priority instruction (Soft,
//! Strict) make the model follow an edited passage against what it knew
//! closed-book; misleading and override rates on the closed-book strata,
//! paired contrasts with question-level bootstrap intervals.
//!
//! Here: its metric families ([`metrics`]). Its readers (TriviaQA-RC,
//! HotpotQA, SearchQA, MCQ), evidence edits
//! (`perturb/src/scenarios/stress.rs`), prompts and tables still live in the
//! stages (see ARCHITECTURE.md).

use ragprobe_score::metrics::{MetricFamilies, Out};
use ragprobe_score::scored::Scored;

pub mod metrics;
pub mod scenarios;

/// The study.
pub struct Stress;

impl MetricFamilies for Stress {
    fn name(&self) -> &'static str {
        "stress"
    }

    fn compute(&self, rows: &[Scored], out: &mut Out) {
        metrics::stress(rows, out);
    }
}

impl ragprobe_report::StudyReport for Stress {}

impl crate::Study for Stress {
    fn scenarios(&self) -> &'static [ragprobe_perturb::ScenarioRef] {
        &[&scenarios::EvidenceEdit]
    }
}
