//! NoMIRACL (seed 001, Thakur et al. 2024): hallucination rate on
//! non-relevant passage sets and error rate on relevant ones, per language.
//!
//! Here: its metric families ([`metrics`]). Its reader
//! (`ingest/src/formats/qa/nomiracl.rs`), query sample and cases
//! (`perturb/src/scenarios/nomiracl.rs`), prompt and tables still live in
//! the stages (see ARCHITECTURE.md).

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

    fn compute(&self, rows: &[Scored], out: &mut Out) {
        metrics::nomiracl(rows, out);
    }
}
