//! RGB (Chen et al. 2024): noise robustness, negative rejection,
//! information integration and counterfactual robustness.

use ragprobe_artifact::Expected;
use ragprobe_score::metrics::{b, groups, key, Clusters, Out};
use ragprobe_score::scored::Scored;
use serde_json::json;
use std::collections::BTreeSet;

/// RGB (Chen et al. 2024), as its `evalue.py` computes it:
/// * `acc` per noise rate (`rgb-noise-<r>`) and, for the information
///   integration testbed (`rgb-integration-<r>`), the integration accuracy:
///   every answer part matched (`0 not in labels and 1 in labels`), a
///   rejection never counting as correct;
/// * `rejection_rate` on cases with only negative passages (noise 1.0):
///   says "insufficient information" (case-sensitive, as `evalue.py`);
/// * on counterfactual cases, `error_detection_rate` = says "factual
///   errors" (case-sensitive) over all cases; `error_correction_rate` =
///   among those, `0 not in labels` — which, as in `evalue.py`, also counts
///   a response that rejects (its label is `[-1]`); `--lenient` drops that
///   quirk and matches the phrases case-insensitively.
pub fn rgb(rows: &[Scored], out: &mut Out) {
    let reference = out.opts.parse == ragprobe_matching::parse::ParseMode::Reference;
    for (g, rs) in groups(rows, |r| r.condition.starts_with("rgb-")) {
        let k = key("rgb", &g);
        let conds: BTreeSet<&str> = rs.iter().map(|r| r.condition).collect();
        for cond in conds {
            let these: Vec<&&Scored> = rs.iter().filter(|r| r.condition == cond).collect();
            if cond == "rgb-counterfactual" {
                let (mut ed, mut cr) = (Clusters::default(), Clusters::default());
                for r in &these {
                    let detected = r.rgb_fact_error == Some(true);
                    ed.add(r.qid, b(detected));
                    if detected {
                        let corrected = r.rgb_correct == Some(true)
                            || (reference
                                && r.rgb_correct.is_some()
                                && r.rgb_rejection == Some(true));
                        cr.add(r.qid, b(corrected));
                    }
                }
                out.mean(&k, cond, "error_detection_rate", &ed, 100.0, json!({"definition": "says 'factual errors' (case-sensitive substring of the raw response, RGB evalue.py)"}));
                out.mean(&k, cond, "error_correction_rate", &cr, 100.0, json!({"definition": "among detected, no answer part unmatched (RGB evalue.py: 0 not in labels; a rejection's [-1] label counts)"}));
                continue;
            }
            let (mut acc, mut rej) = (Clusters::default(), Clusters::default());
            for r in &these {
                if r.expected == Expected::Answer {
                    acc.add(r.qid, b(r.rgb_correct == Some(true)));
                } else {
                    rej.add(r.qid, b(r.rgb_rejection == Some(true)));
                }
            }
            let integration = cond.starts_with("rgb-integration-");
            if acc.n() > 0 {
                let (metric, def) = if integration {
                    ("integration_acc", "information integration: every answer part matched by one of its aliases, each part's passages among the documents (RGB checkanswer on _int data)")
                } else {
                    ("acc", "every required answer part matched by one of its aliases (RGB checkanswer); a rejection is never correct")
                };
                out.mean(&k, cond, metric, &acc, 100.0, json!({"definition": def}));
            }
            if rej.n() > 0 {
                out.mean(&k, cond, "rejection_rate", &rej, 100.0, json!({"definition": "only negative passages: says 'insufficient information' (case-sensitive, RGB evalue.py)"}));
            }
        }
    }
}
