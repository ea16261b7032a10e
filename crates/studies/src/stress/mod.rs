//! RAG-Stress (seed 002): does a source-priority instruction (Soft,
//! Strict) make the model follow an edited passage against what it knew
//! closed-book; misleading and override rates on the closed-book strata,
//! paired contrasts with question-level bootstrap intervals.
//!
//! Here: its evidence edits ([`scenarios`]), prompts (`prompts/`), metric
//! families ([`metrics`]), tables, charts ([`charts`]) and case-browser
//! verdicts. Its datasets' readers (TriviaQA-RC, HotpotQA, SearchQA, MCQ)
//! are ingest's shared formats (see ARCHITECTURE.md).

use ragprobe_score::metrics::{MetricFamilies, Out};
use ragprobe_score::scored::Scored;
use ragprobe_report::tables::TableSpec;

pub mod charts;
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

/// The study's tables, in the order the report shows them.
static TABLES: &[TableSpec] = &[
    TableSpec { id: "stress_mr", title: "RAG-Stress — misleading rate by policy × answer position, on the closed-book-correct set (seed 002)", study: "stress", metrics: &[("mr", "MR")], conditions: &["edited/beginning", "edited/middle", "edited/end", "edited/all"], condition_in_column: true, intervals: true },
    TableSpec { id: "stress_other", title: "RAG-Stress — clean accuracy, harmful override (on K), beneficial correction (on U) (seed 002)", study: "stress", metrics: &[("clean_acc", "Clean acc"), ("harmful_override", "HOR"), ("beneficial_correction", "BCR")], conditions: &["clean/all", "edited/all"], condition_in_column: false, intervals: true },
    TableSpec { id: "stress_contrasts", title: "RAG-Stress — paired contrasts in percentage points (seed 002 §3.3, §4.4.1)", study: "stress", metrics: &[("mr_strict_minus_soft", "Strict−Soft"), ("mr_diff", "Δ MR"), ("interaction_end_minus_middle", "Interaction")], conditions: &[], condition_in_column: true, intervals: true },
    TableSpec { id: "stress_audit", title: "RAG-Stress — audit: Strict−Soft HOR (on K) and BCR (on U), clean-arm foil-only control, common stratum (seed 002 §C)", study: "stress", metrics: &[("hor_strict_minus_soft", "Strict−Soft HOR"), ("bcr_strict_minus_soft", "Strict−Soft BCR"), ("foil_only_control", "Foil-only"), ("hor_strict_minus_soft_common", "HOR common"), ("bcr_strict_minus_soft_common", "BCR common")], conditions: &[], condition_in_column: true, intervals: true },
    TableSpec { id: "stress_transitions", title: "RAG-Stress — clean-gold → edited-foil transitions (count; n = pairs with a correct clean response) (seed 002 §C.3)", study: "stress", metrics: &[("clean_gold_to_edited_foil", "Transitions")], conditions: &[], condition_in_column: true, intervals: false },
    TableSpec { id: "stress_versions", title: "RAG-Stress — change of the Strict−Soft MR gap from the original wording v0 (seed 002 §F.2)", study: "stress", metrics: &[("mr_gap_change_from_v0", "Δ gap")], conditions: &[], condition_in_column: false, intervals: true },
];

impl ragprobe_report::StudyReport for Stress {
    fn charts(&self, rows: &[ragprobe_artifact::MetricRow]) -> Vec<ragprobe_report::charts::Chart> {
        [charts::stress_mr_by_position(rows)].into_iter().flatten().collect()
    }

    fn tables(&self) -> &'static [TableSpec] {
        TABLES
    }
}

impl crate::Study for Stress {
    fn prompts(&self) -> &'static [(&'static str, &'static str)] {
        &[
            ("stress-closed-book-mcq", include_str!("prompts/stress-closed-book-mcq.toml")),
            ("stress-closed-book", include_str!("prompts/stress-closed-book.toml")),
            ("stress-soft-mcq", include_str!("prompts/stress-soft-mcq.toml")),
            ("stress-soft-v1", include_str!("prompts/stress-soft-v1.toml")),
            ("stress-soft-v2", include_str!("prompts/stress-soft-v2.toml")),
            ("stress-soft", include_str!("prompts/stress-soft.toml")),
            ("stress-strict-mcq", include_str!("prompts/stress-strict-mcq.toml")),
            ("stress-strict-v1", include_str!("prompts/stress-strict-v1.toml")),
            ("stress-strict-v2", include_str!("prompts/stress-strict-v2.toml")),
            ("stress-strict", include_str!("prompts/stress-strict.toml")),
        ]
    }

    fn prompt_roles(&self) -> &'static [&'static str] {
        &["closed-book", "soft", "strict"]
    }

    fn scenarios(&self) -> &'static [ragprobe_perturb::ScenarioRef] {
        &[&scenarios::EvidenceEdit]
    }
}
