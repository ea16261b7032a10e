//! The studies ragprobe reproduces, one folder each: imperfect retrieval
//! (seed 000), NoMIRACL (seed 001), RAG-Stress (seed 002) and RGB.
//!
//! A study plugs into the stages through their extension points; the
//! stages name no study. Registered here, once:
//!
//! * the score stage's [`MetricFamilies`]: [`METRIC_FAMILIES`].
//!
//! Each study's other parts (readers, scenarios, prompts, tables) are
//! still in the stage crates; ARCHITECTURE.md says where, and what moves
//! next.

use ragprobe_score::metrics::{MetricFamilies, Studies};

pub mod imperfect;
pub mod nomiracl;
pub mod rgb;
pub mod stress;

/// Every study's metric families, in the order their rows are written.
pub static METRIC_FAMILIES: &[&dyn MetricFamilies] = &[
    &imperfect::Imperfect,
    &nomiracl::Nomiracl,
    &stress::Stress,
    &rgb::Rgb,
];

/// [`METRIC_FAMILIES`] as the score options take them.
pub fn studies() -> Studies {
    Studies(METRIC_FAMILIES)
}
