//! Seed 001 (NoMIRACL): hallucination and error rates per language.

use ragprobe_artifact::Expected;
use ragprobe_score::metrics::{b, key, Clusters, Groups, Out};
use ragprobe_score::scored::Scored;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

/// Seed 001 (NoMIRACL), per language, model and prompt:
/// hallucination rate = #yes / N on the non-relevant subset; error rate =
/// #idk / N on the relevant subset; invalid rates; and the variants that
/// leave invalid outputs out of the denominator: FP/(FP+TN) = yes/(yes+idk)
/// on non-relevant, FN/(FN+TP) = idk/(idk+yes) on relevant.
pub fn nomiracl(rows: &[Scored], out: &mut Out) {
    let mut g: Groups = BTreeMap::new();
    for r in rows
        .iter()
        .filter(|r| !r.failed && r.condition == "nomiracl")
    {
        g.entry((r.lang, r.model, r.prompt)).or_default().push(r);
    }
    for (gk, rs) in g {
        let k = key("nomiracl", &gk);
        for (subset, main, main_label, other_label) in [
            (Expected::NonRelevant, "hallucination_rate", "yes", "idk"),
            (Expected::Relevant, "error_rate", "idk", "yes"),
        ] {
            let (mut rate, mut invalid, mut valid_rate) = (
                Clusters::default(),
                Clusters::default(),
                Clusters::default(),
            );
            let subset_name = subset.as_str();
            for r in rs.iter().filter(|r| r.expected == subset) {
                let l = r.study.nomiracl_label.unwrap_or("invalid");
                rate.add(r.qid, b(l == main_label));
                invalid.add(r.qid, b(l == "invalid"));
                if l == main_label || l == other_label {
                    valid_rate.add(r.qid, b(l == main_label));
                }
            }
            let datasets: BTreeSet<&str> = rs.iter().map(|r| r.dataset).collect();
            out.mean(&k, subset_name, main, &rate, 100.0, json!({"definition": format!("#{main_label} / N over the {subset_name} subset (invalid outputs in the denominator)"), "datasets": datasets}));
            out.mean(
                &k,
                subset_name,
                "invalid_rate",
                &invalid,
                100.0,
                json!({"definition": "#invalid / N"}),
            );
            let v = if subset == Expected::NonRelevant {
                "FP/(FP+TN) = yes/(yes+idk): invalid outputs left out"
            } else {
                "FN/(FN+TP) = idk/(idk+yes): invalid outputs left out"
            };
            out.mean(
                &k,
                subset_name,
                &format!("{main}_valid_only"),
                &valid_rate,
                100.0,
                json!({"definition": v}),
            );
        }
    }
}
