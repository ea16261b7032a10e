//! FaithEval's metric: accuracy per task, as the README's snippet
//! computes it, with the strict phrase list beside the default one.

use ragprobe_score::metrics::{b, key, Clusters, Groups, Out};
use ragprobe_score::scored::Scored;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

use super::task::Task;

/// Per task, dataset, model and prompt, over the `faitheval-<task>` rows
/// that got a response:
///
/// * `acc`: the share of correct responses, in percent. Unanswerable and
///   inconsistent: the normalised response contains a valid phrase of the
///   README's default list (`strict_match = False`; the README prints
///   `correct / len(dataset)`); counterfactual: the option the context
///   supports is the one chosen (the paper's multiple-choice accuracy; the
///   README has no snippet for it).
/// * `acc_strict` (unanswerable, inconsistent): the same with the strict
///   list (`unknown`; `conflict`).
///
/// Rows are keyed by dataset, model and prompt family: the template id
/// without a `-<task>` suffix (`faitheval-unanswerable` → `faitheval`), so
/// one model's three tasks share a table row.
///
/// Failed requests are out of the denominator (counted by the run; the
/// README's loop has none). The judgements are the score stage's per-row
/// `accuracy` and `em`, which [`super::FaithEval`]'s judge sets for these
/// rows.
pub fn faitheval(rows: &[Scored], out: &mut Out) {
    let mut g: Groups = BTreeMap::new();
    for r in rows.iter().filter(|r| !r.failed) {
        if let Some(task) = Task::of_condition(r.condition) {
            let family = r
                .prompt
                .strip_suffix(task.name())
                .and_then(|p| p.strip_suffix('-'))
                .unwrap_or(r.prompt);
            g.entry((r.dataset, r.model, family)).or_default().push(r);
        }
    }
    for (gk, rs) in g {
        let k = key("faitheval", &gk);
        let conditions: BTreeSet<&str> = rs.iter().map(|r| r.condition).collect();
        for condition in &conditions {
            let task = Task::of_condition(condition).expect("a FaithEval condition");
            let (mut acc, mut strict) = (Clusters::default(), Clusters::default());
            for r in rs.iter().filter(|r| r.condition == *condition) {
                acc.add(r.qid, b(r.flags.accuracy == Some(true)));
                strict.add(r.qid, b(r.flags.em == Some(true)));
            }
            let definition = match task.valid_phrases(false) {
                Some(p) => format!("correct / N: the normalised response contains one of {p:?} (FaithEval README, strict_match = False)"),
                None => "correct / N: the option the context supports is the one chosen".into(),
            };
            out.mean(
                &k,
                condition,
                "acc",
                &acc,
                100.0,
                json!({"definition": definition, "task": task.name()}),
            );
            if let Some(p) = task.valid_phrases(true) {
                out.mean(&k, condition, "acc_strict", &strict, 100.0, json!({"definition": format!("correct / N: the normalised response contains one of {p:?} (FaithEval README, strict_match = True)"), "task": task.name()}));
            }
        }
    }
}
