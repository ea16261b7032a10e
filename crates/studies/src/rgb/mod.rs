//! RGB (Chen et al., AAAI 2024): noise robustness, negative rejection,
//! information integration and counterfactual robustness, scored as its
//! `evalue.py` scores them.
//!
//! Here: its metric families ([`metrics`]). Its reader
//! (`ingest/src/formats/qa/rgb.rs`), cases (`perturb/src/scenarios/rgb.rs`),
//! prompts and charts still live in the stages (see ARCHITECTURE.md).

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

    fn compute(&self, rows: &[Scored], out: &mut Out) {
        metrics::rgb(rows, out);
    }
}
