//! Query samples drawn before any case is built: NoMIRACL's
//! `load_data_sample` (CPython's generator, [`crate::pyrandom`]).

use crate::*;

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
