//! Seed 001 (NoMIRACL): the judged passages of a query, and the
//! reference script's query sample.

use crate::*;

impl<'a> Builder<'a> {
    /// nomiracl: the judged passages of a query in qrels order (first k).
    pub(crate) fn nomiracl(&mut self, q: &QuestionRow, s: Scenario) -> Result<Vec<CaseRow>> {
        let opts = self.opts;
        // The reference reproduction script (project-miracl/nomiracl
        // examples/repro_nomiracl_generation.py) uses a query's judged
        // passages in qrels order (positives, then negatives, as the
        // data loader inserts them), 10 of them: no sampling or
        // shuffling of passages. Ingest keeps that order as `rank`.
        let Some(subset) = q.subset.as_deref() else {
            self.skip(s, "question has no NoMIRACL subset");
            return Ok(vec![]);
        };
        let Some(expected) = Expected::parse(subset)
            .filter(|e| matches!(e, Expected::Relevant | Expected::NonRelevant))
        else {
            self.skip(
                s,
                &format!("NoMIRACL subset {subset:?} is neither relevant nor non_relevant"),
            );
            return Ok(vec![]);
        };
        let judged = self.contexts(&q.qid).len();
        let docs: Vec<CaseDoc> = self
            .contexts(&q.qid)
            .iter()
            .take(opts.k)
            .map(|c| doc(c, DocSource::Judged))
            .collect();
        if judged != opts.k {
            self.note(s, &format!("{} judged passages than k = {} (the reference script uses only queries with exactly 10)", if judged < opts.k { "fewer" } else { "more" }, opts.k));
        }
        let params = json!({"k": opts.k, "order": "qrels", "passages": docs.iter().map(|d| d.doc_id.as_str()).collect::<Vec<_>>()});
        Ok(vec![self.base_case(q, s.name(), docs, expected, params)])
    }
}

/// NoMIRACL's query sample ([`pyrandom::nomiracl_sample`]) drawn from the
/// relevant and non_relevant questions of `selected`, kept in their order.
pub(crate) fn nomiracl_subsample(
    selected: Vec<&QuestionRow>,
    ns: NomiraclSample,
) -> Vec<&QuestionRow> {
    let rel: Vec<&QuestionRow> = selected
        .iter()
        .copied()
        .filter(|q| q.subset.as_deref() == Some("relevant"))
        .collect();
    let non: Vec<&QuestionRow> = selected
        .iter()
        .copied()
        .filter(|q| q.subset.as_deref() == Some("non_relevant"))
        .collect();
    let (ri, ni) = pyrandom::nomiracl_sample(
        rel.len(),
        non.len(),
        ns.relevant_ratio,
        ns.non_relevant_ratio,
        ns.max_pool,
        ns.seed,
    );
    let keep: std::collections::HashSet<&str> = ri
        .iter()
        .map(|&i| rel[i].qid.as_str())
        .chain(ni.iter().map(|&i| non[i].qid.as_str()))
        .collect();
    tracing::info!(
        "NoMIRACL sample: {} of {} relevant and {} of {} non-relevant queries",
        ri.len(),
        rel.len(),
        ni.len(),
        non.len()
    );
    selected
        .into_iter()
        .filter(|q| keep.contains(q.qid.as_str()))
        .collect()
}
