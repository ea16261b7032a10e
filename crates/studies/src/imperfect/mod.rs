//! Imperfect retrieval (seed 000, *How Robust Are RAG Systems to
//! Imperfect Retrieval?*): does the model abstain when no retrieved passage
//! holds the answer, does a correct answer survive an added random, top-k,
//! conflicting or GenADV passage (RAD), does it notice a conflict or switch
//! to the foil (Tables 7, 8, 13).
//!
//! Here: its scenarios ([`scenarios`]), prompts (`prompts/`), metric
//! families ([`metrics`]), tables, charts ([`charts`]) and case-browser
//! verdicts. Shared with other studies, in the stages: its datasets'
//! readers (DPR/FiD, Self-RAG) and the GenADV writer and foil picker its
//! scenarios call (see ARCHITECTURE.md).

use ragprobe_artifact::ScoreRow;
use ragprobe_score::metrics::{MetricFamilies, Out};
use ragprobe_score::scored::Scored;
use ragprobe_report::tables::TableSpec;

pub mod charts;
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

/// The study's tables, in the order the report shows them.
static TABLES: &[TableSpec] = &[
    TableSpec { id: "table3_retrieval", title: "Table 3 — retrieval: Recall@k and unanswerable share (seed 000)", study: "retrieval", metrics: &[("recall@", "Recall@k"), ("unans@", "Unans")], conditions: &[], condition_in_column: false, intervals: false },
    TableSpec { id: "table11_closed_book", title: "Table 11 — closed-book QA: Acc / EM / F1 (seed 000 Appendix B)", study: "qa", metrics: &[("acc", "Acc"), ("em", "EM"), ("f1", "F1")], conditions: &["closed-book"], condition_in_column: false, intervals: true },
    TableSpec { id: "table12_rag", title: "Table 12 — retrieval-augmented QA with the top-k: Acc / EM / F1 (seed 000 Appendix B)", study: "qa", metrics: &[("acc", "Acc"), ("em", "EM"), ("f1", "F1")], conditions: &["base"], condition_in_column: false, intervals: true },
    TableSpec { id: "table4_unanswerable", title: "Figure 2 / Table 4 — unanswerable questions, Unans prompt (seed 000 §5.2)", study: "imperfect", metrics: &[("acc", "Acc"), ("acc_ans", "Acc(ans)"), ("acc_unans", "Acc(unans)"), ("unans_cor", "Cor."), ("unans_hallu", "Hallu."), ("ans_called_unans", "Ans→unans")], conditions: &["base"], condition_in_column: false, intervals: false },
    TableSpec { id: "figure3_rad", title: "Figure 3 — RAD per added-document type (seed 000 §5.3.2)", study: "imperfect", metrics: &[("rad", "RAD")], conditions: &["add-random", "add-topk", "add-genadv", "add-conflict"], condition_in_column: true, intervals: true },
    TableSpec { id: "table6_adversarial_unanswerable", title: "Table 6 — RAD on answerable / unanswerable, Unans prompt (seed 000 §5.3.3)", study: "imperfect", metrics: &[("rad_ans", "Ans."), ("rad_unans", "Unans.")], conditions: &["add-genadv", "add-random"], condition_in_column: true, intervals: false },
    TableSpec { id: "table7_conflict_detection", title: "Table 7 — conflict detection, Conflict prompt (seed 000 §5.4)", study: "imperfect", metrics: &[("acc_c", "Acc(C)"), ("acc_nc", "Acc(NC)"), ("acc_answerable", "Acc")], conditions: &["add-conflict", "base", "add-conflict+base"], condition_in_column: false, intervals: false },
    TableSpec { id: "table8_stubbornness", title: "Table 8 — stubbornness with a conflicting passage, Normal prompt (seed 000 §5.4)", study: "imperfect", metrics: &[("a_to_a", "A→A"), ("a_to_c", "A→C"), ("a_to_u", "A→U")], conditions: &["add-conflict"], condition_in_column: false, intervals: false },
    TableSpec { id: "table13_par", title: "Table 13 — parametric answer rate on unanswerable questions (seed 000)", study: "imperfect", metrics: &[("par", "PAR")], conditions: &["base"], condition_in_column: false, intervals: true },
];

impl ragprobe_report::StudyReport for Imperfect {
    fn charts(&self, rows: &[ragprobe_artifact::MetricRow]) -> Vec<ragprobe_report::charts::Chart> {
        [charts::fig2_unanswerable(rows), charts::fig3_rad(rows)].into_iter().flatten().collect()
    }

    fn tables(&self) -> &'static [TableSpec] {
        TABLES
    }

    /// With a conflicting passage, where the `base` response was right:
    /// A→A (still right), A→C (took the foil), A→U (neither; seed 000
    /// Table 8); and an answerable question lost to an added passage.
    fn tags(&self, r: &ScoreRow, base_correct: Option<bool>, tags: &mut Vec<String>) {
        if r.condition == "add-conflict" && base_correct == Some(true) {
            tags.push(
                if r.flags.accuracy == Some(true) {
                    "A→A"
                } else if r.flags.foil_any == Some(true) {
                    "A→C"
                } else {
                    "A→U"
                }
                .into(),
            );
        }
        if r.condition.starts_with("add-")
            && base_correct == Some(true)
            && r.flags.accuracy != Some(true)
            && r.expected != ragprobe_artifact::Expected::Unanswerable
        {
            tags.push("lost by the added document".into());
        }
    }
}

impl crate::Study for Imperfect {
    fn prompts(&self) -> &'static [(&'static str, &'static str)] {
        &[
            ("conflict-passage", include_str!("prompts/conflict-passage.toml")),
            ("genadv-adversarial-passage", include_str!("prompts/genadv-adversarial-passage.toml")),
            ("genadv-adversarial-sentence", include_str!("prompts/genadv-adversarial-sentence.toml")),
            ("genadv-answer-sentence", include_str!("prompts/genadv-answer-sentence.toml")),
            ("imperfect-closed-book", include_str!("prompts/imperfect-closed-book.toml")),
            ("imperfect-conflict", include_str!("prompts/imperfect-conflict.toml")),
            ("imperfect-normal", include_str!("prompts/imperfect-normal.toml")),
            ("imperfect-unans", include_str!("prompts/imperfect-unans.toml")),
        ]
    }

    fn prompt_roles(&self) -> &'static [&'static str] {
        &["closed-book", "normal", "unans", "conflict", "writer"]
    }

    fn scenarios(&self) -> &'static [ragprobe_perturb::ScenarioRef] {
        &[
            &scenarios::AddRandom,
            &scenarios::AddTopk,
            &scenarios::AddConflict,
            &scenarios::AddGenadv,
        ]
    }
}
