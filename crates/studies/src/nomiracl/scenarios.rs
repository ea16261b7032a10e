//! Seed 001's scenario (NoMIRACL): a query's judged passages in qrels
//! order, labelled by its subset (relevant, non_relevant).

use ragprobe_artifact::{CaseDoc, CaseRow, DocSource, Expected, QuestionRow};
use ragprobe_perturb::{doc, Builder, Result, Scenario};
use serde_json::json;

/// `nomiracl`: a query's judged passages in qrels order, labelled relevant or non_relevant.
pub struct Nomiracl;

impl Scenario for Nomiracl {
    fn name(&self) -> &'static str {
        "nomiracl"
    }
    fn build(&self, b: &mut Builder<'_>, q: &QuestionRow) -> Result<Vec<CaseRow>> {
        nomiracl(b, q, self.name())
    }
}

/// nomiracl: the judged passages of a query in qrels order (first k).
fn nomiracl<'a>(b: &mut Builder<'a>, q: &QuestionRow, s: &'static str) -> Result<Vec<CaseRow>> {
    let opts = b.opts;
    // The reference reproduction script (project-miracl/nomiracl
    // examples/repro_nomiracl_generation.py) uses a query's judged
    // passages in qrels order (positives, then negatives, as the
    // data loader inserts them), 10 of them: no sampling or
    // shuffling of passages. Ingest keeps that order as `rank`.
    let Some(subset) = q.subset.as_deref() else {
        b.skip(s, "question has no NoMIRACL subset");
        return Ok(vec![]);
    };
    let Some(expected) =
        Expected::parse(subset).filter(|e| matches!(e, Expected::Relevant | Expected::NonRelevant))
    else {
        b.skip(
            s,
            &format!("NoMIRACL subset {subset:?} is neither relevant nor non_relevant"),
        );
        return Ok(vec![]);
    };
    let judged = b.contexts(&q.qid).len();
    let docs: Vec<CaseDoc> = b
        .contexts(&q.qid)
        .iter()
        .take(opts.k)
        .map(|c| doc(c, DocSource::Judged))
        .collect();
    if judged != opts.k {
        b.note(s, &format!("{} judged passages than k = {} (the reference script uses only queries with exactly 10)", if judged < opts.k { "fewer" } else { "more" }, opts.k));
    }
    let params = json!({"k": opts.k, "order": "qrels", "passages": docs.iter().map(|d| d.doc_id.as_str()).collect::<Vec<_>>()});
    Ok(vec![b.base_case(q, s, docs, expected, params)])
}
