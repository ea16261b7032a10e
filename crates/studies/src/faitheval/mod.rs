//! FaithEval (Ming et al., Salesforce, ICLR 2025, *FaithEval: Can Your
//! Language Model Stay Faithful to Context, Even If "The Moon is Made of
//! Marshmallows"*): does the model stay with its context when the context
//! holds no answer (unanswerable), holds two (inconsistent), or states a
//! counterfactual.
//!
//! All of it is in this folder: its formats ([`mod@format`]), cases
//! ([`scenario`]), prompts (`prompts/`), per-row judgement ([`judge`]:
//! the README snippet's `normalize_answer` and valid phrases), metrics
//! ([`metrics`]), table and case-browser verdicts (here), pipeline
//! (`pipeline.toml`) and fixtures (`fixtures/`); `ragprobe_studies::STUDIES`
//! registers it in one line.
//!
//! Where the reference is silent, and what was chosen:
//! * the counterfactual task has no public prompt or scorer (the
//!   repository's issue #1): it is asked as multiple choice (the paper's
//!   framing) and scored by the option chosen, as ragprobe scores any
//!   multiple-choice case (the label or the option's text);
//! * accuracy leaves failed requests out of the denominator (the README's
//!   `correct / len(dataset)` has none).

use ragprobe_artifact::{CaseRow, ScoreRow};
use ragprobe_ingest::RecordFormat;
use ragprobe_matching::parse::ParseMode;
use ragprobe_perturb::ScenarioRef;
use ragprobe_report::tables::TableSpec;
use ragprobe_report::StudyReport;
use ragprobe_score::metrics::{MetricFamilies, Out};
use ragprobe_score::scored::Scored;

pub mod format;
pub mod judge;
pub mod metrics;
pub mod scenario;
pub mod task;
#[cfg(test)]
mod tests;

use task::Task;

/// The study.
pub struct FaithEval;

impl MetricFamilies for FaithEval {
    fn name(&self) -> &'static str {
        "faitheval"
    }

    /// The README's verdict on a response to an unanswerable or
    /// inconsistent case: `accuracy` with the default phrase list, `em`
    /// with the strict one (`f1`, an overlap with answers the task does not
    /// ask for, is cleared). Counterfactual cases are multiple choice,
    /// scored by the option chosen before any study judges.
    fn judge(&self, case: &CaseRow, text: &str, _mode: ParseMode, row: &mut ScoreRow) {
        let Some(task) = Task::of_condition(&case.condition) else {
            return;
        };
        if let Some([default, strict]) = judge::verdicts(task, text) {
            row.flags.accuracy = Some(default);
            row.flags.em = Some(strict);
            row.flags.f1 = None;
        }
    }

    fn compute(&self, rows: &[Scored], out: &mut Out) {
        metrics::faitheval(rows, out);
    }
}

/// The study's table: accuracy per task (one column group per dataset),
/// default and strict phrases.
static TABLES: [TableSpec; 1] = [TableSpec {
    id: "faitheval",
    title: "FaithEval — accuracy per task: the README's valid phrases (default, strict); counterfactual: the option the context supports",
    study: "faitheval",
    metrics: &[("acc", "Acc"), ("acc_strict", "Acc (strict)")],
    conditions: &[],
    condition_in_column: false,
    intervals: true,
}];

impl StudyReport for FaithEval {
    fn tables(&self) -> &'static [TableSpec] {
        &TABLES
    }

    /// Unanswerable: said "unknown" (or another valid phrase) or answered;
    /// inconsistent: named the conflict or answered one side;
    /// counterfactual: chose the option the context supports or another.
    fn verdict(&self, row: &ScoreRow) -> Option<(String, Option<bool>)> {
        let task = Task::of_condition(&row.condition)?;
        let ok = row.flags.accuracy == Some(true);
        let strict = if row.flags.em == Some(true) {
            ""
        } else {
            " (not the strict phrase)"
        };
        let v = match (task, ok) {
            (Task::Unanswerable, true) => format!("abstained as the context asks{strict}"),
            (Task::Unanswerable, false) => "answered: the context holds no answer".into(),
            (Task::Inconsistent, true) => format!("named the conflict{strict}"),
            (Task::Inconsistent, false) => "answered without naming the conflict".into(),
            (Task::Counterfactual, _) => {
                let chose = match row.mcq_choice.as_deref() {
                    Some("several") => "several options".to_string(),
                    Some("none") | None => "no option".to_string(),
                    Some(c) => format!("option {c}"),
                };
                let right = if ok {
                    "the one the context supports"
                } else {
                    "not the one the context supports"
                };
                format!("chose {chose}: {right}")
            }
        };
        Some((v, Some(ok)))
    }

    /// An unanswerable case answered with a valid phrase abstained.
    fn abstained(&self, row: &ScoreRow) -> bool {
        Task::of_condition(&row.condition) == Some(Task::Unanswerable)
            && row.flags.accuracy == Some(true)
    }

    fn tags(&self, row: &ScoreRow, _base_correct: Option<bool>, tags: &mut Vec<String>) {
        if let Some(task) = Task::of_condition(&row.condition) {
            if row.flags.accuracy != Some(true) {
                tags.push(format!("unfaithful: {}", task.name()));
            }
        }
    }
}

impl crate::Study for FaithEval {
    fn record_formats(&self) -> &'static [&'static dyn RecordFormat] {
        use format::FaithEvalFormat as F;
        &[
            &F(Task::Unanswerable),
            &F(Task::Inconsistent),
            &F(Task::Counterfactual),
        ]
    }

    fn scenarios(&self) -> &'static [ScenarioRef] {
        &[&scenario::FaithEvalCases]
    }

    fn prompts(&self) -> &'static [(&'static str, &'static str)] {
        &[
            (
                "faitheval-unanswerable",
                include_str!("prompts/faitheval-unanswerable.toml"),
            ),
            (
                "faitheval-inconsistent",
                include_str!("prompts/faitheval-inconsistent.toml"),
            ),
            (
                "faitheval-counterfactual",
                include_str!("prompts/faitheval-counterfactual.toml"),
            ),
        ]
    }

    fn prompt_roles(&self) -> &'static [&'static str] {
        &["faitheval"]
    }
}
