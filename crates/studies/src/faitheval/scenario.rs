//! FaithEval's cases: each question with its own context, as the README's
//! snippet prompts it (no retrieval, no sampling).

use ragprobe_artifact::{CaseRow, QuestionRow};
use ragprobe_perturb::{doc, Builder, Result, Scenario};
use serde_json::json;

use super::task::Task;

/// `faitheval`: one case per question, its passages the record's context,
/// condition `faitheval-<task>` (the question's subset), labelled with what
/// a faithful model does (unanswerable, conflict, answer).
pub struct FaithEvalCases;

impl Scenario for FaithEvalCases {
    fn name(&self) -> &'static str {
        "faitheval"
    }

    fn build(&self, b: &mut Builder<'_>, q: &QuestionRow) -> Result<Vec<CaseRow>> {
        let Some(task) = q.subset.as_deref().and_then(Task::parse) else {
            b.skip(
                self.name(),
                "question has no FaithEval task (ingest it with --format faitheval-<task>)",
            );
            return Ok(vec![]);
        };
        let docs: Vec<_> = b
            .contexts(&q.qid)
            .iter()
            .map(|c| doc(c, task.doc_source()))
            .collect();
        let params = json!({"task": task.name(), "passages": docs.iter().map(|d| d.doc_id.as_str()).collect::<Vec<_>>()});
        Ok(vec![b.base_case(
            q,
            task.condition(),
            docs,
            task.expected(),
            params,
        )])
    }
}
