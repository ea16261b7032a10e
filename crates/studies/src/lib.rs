//! The studies ragprobe reproduces, one folder each: imperfect retrieval
//! (seed 000), NoMIRACL (seed 001), RAG-Stress (seed 002) and RGB.
//!
//! A study plugs into the stages through their extension points; the
//! stages name no study. Registered here, once:
//!
//! * the perturb stage's [`Scenario`]s: [`SCENARIOS`];
//! * the score stage's [`MetricFamilies`]: [`METRIC_FAMILIES`].
//!
//! Each study's other parts (readers, scenarios, prompts, tables) are
//! still in the stage crates; ARCHITECTURE.md says where, and what moves
//! next.

use ragprobe_perturb::ScenarioRef;
use ragprobe_score::metrics::{MetricFamilies, Studies};

pub mod imperfect;
pub mod nomiracl;
pub mod rgb;
pub mod stress;

/// Every study's scenarios, in the order `--scenario` lists them (after
/// the stage's shared `closed-book` and `base`).
pub static SCENARIOS: &[ScenarioRef] = &[
    &imperfect::scenarios::AddRandom,
    &imperfect::scenarios::AddTopk,
    &imperfect::scenarios::AddConflict,
    &imperfect::scenarios::AddGenadv,
    &stress::scenarios::EvidenceEdit,
    &nomiracl::scenarios::Nomiracl,
    &rgb::scenarios::RgbNoise,
    &rgb::scenarios::RgbCounterfactual,
];

/// The scenario `name` (or alias) among the shared ones and [`SCENARIOS`].
pub fn scenario(name: &str) -> Option<ScenarioRef> {
    ragprobe_perturb::find_scenario(SCENARIOS, name)
}

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
