//! RGB (Chen et al. 2024): noise robustness, negative rejection,
//! information integration and counterfactual robustness, as its
//! `evalue.py` (commit 65ec39e) and `fact_evalue.py` (commit d2293ee)
//! compute them.

use ragprobe_score::metrics::{b, groups, key, Clusters, Out};
use ragprobe_score::scored::Scored;
use serde_json::json;
use std::collections::BTreeSet;

/// The suffix of RGB's closed-book templates (`rgb-en-closed-book`): RGB's
/// `passage_num = 0` run, whose accuracy is the counterfactual table's Acc.
pub const CLOSED_BOOK_SUFFIX: &str = "-closed-book";

/// The table row a template's figures go in: its id without the
/// closed-book suffix and the language (`rgb-en`, `rgb-zh`,
/// `rgb-en-closed-book` are all `rgb`), so that one model's English and
/// Chinese figures, with and without documents, share a row as in the
/// paper's tables (the datasets, `rgb-en` and `rgb-zh`, are the column
/// groups). Each metric's details name the template itself.
pub fn prompt_family(template: &str) -> &str {
    let t = template.strip_suffix(CLOSED_BOOK_SUFFIX).unwrap_or(template);
    t.strip_suffix("-en")
        .or_else(|| t.strip_suffix("-zh"))
        .unwrap_or(t)
}

/// A row of RGB's: a case RGB's scenarios built, or a closed-book case
/// answered with one of RGB's templates.
fn is_rgb(r: &Scored) -> bool {
    r.condition.starts_with("rgb-")
        || (r.condition == "closed-book" && r.prompt_study == Some("rgb"))
}

/// The noise rate of an RGB condition (`rgb-noise-0.4`, `rgb-integration-1`,
/// `rgb-counterfactual-0.2[-correct-0.2]`); None for closed-book.
fn noise_rate(condition: &str) -> Option<f64> {
    let rest = ["rgb-noise-", "rgb-integration-", "rgb-counterfactual-"]
        .iter()
        .find_map(|p| condition.strip_prefix(p))?;
    rest.split("-correct-").next()?.parse().ok()
}

/// RGB, per (dataset, model, prompt) and condition, failed requests out of
/// every denominator (RGB drops an instance whose request raises from
/// `results`, `evalue.py` l.271–273). A row's labels are `predict`'s
/// (`evalue.py` l.123–134): `[-1]` when the response rejects
/// (`rgb_rejection`: "insufficient information" / "信息不足",
/// case-sensitive), else `checkanswer`'s label per answer part; *fully
/// correct* is `0 not in label and 1 in label` (`rgb_correct`, never true
/// for a rejecting response under the reference rules); `factlabel` is
/// `rgb_fact_error` ("factual errors" / "事实性错误").
///
/// * `acc` (`rgb-noise-<r>`, `rgb-counterfactual-<r>`) and
///   `integration_acc` (`rgb-integration-<r>`): fully correct over every
///   case of the condition — `evalue.py`'s `all_rate` below noise 1
///   (l.274–283), the accuracy of its noise-robustness, integration and
///   (as Acc_doc, against the true answer) counterfactual tables;
/// * at noise rate 1, on every testbed: `all_rate`, RGB's reported figure
///   (`noise_rate == 1 and label[0] == -1` **or** fully correct, l.277–280;
///   its README calls it the rejection rate, and the paper's negative
///   rejection column is this number), and `rejection_rate`, the plain
///   share of rejecting responses (the paper's definition of rejection,
///   what `all_rate` would be without the correct answers it also counts);
/// * on counterfactual cases: `error_detection_rate` (ED,
///   `fact_check_rate` = `factlabel == 1` over all, l.288–296);
///   `cr_evalue`, `evalue.py`'s `correct_rate` (l.292–298): among detected,
///   `0 not in label` — a detected response that rejects (`[-1]`) counts
///   as corrected; `cr_fact_evalue`, `fact_evalue.py`'s `correct_rate`
///   (l.131–135, the CR its README names): among detected, fully correct.
///   `fact_evalue.py` takes "detected" from its ChatGPT judge's verdict;
///   here it is the string check of `evalue.py` (the judged ED* needs a
///   judge model). Both are 0 in RGB when nothing is detected; here the
///   population is empty (n = 0, no value).
/// * `acc_closed_book` (closed-book cases answered with an
///   `rgb-*-closed-book` template, RGB's `passage_num = 0` run): fully
///   correct over all — the counterfactual table's Acc.
///
/// Rows are keyed by the template's [`prompt_family`].
///
/// `--lenient` matches the phrases case-insensitively, lets a rejecting
/// response be correct, and drops `cr_evalue`'s `[-1]` quirk.
pub fn rgb(rows: &[Scored], out: &mut Out) {
    let reference = out.opts.parse == ragprobe_matching::parse::ParseMode::Reference;
    for (g, rs) in groups(rows, is_rgb) {
        let k = key("rgb", &(g.0, g.1, prompt_family(g.2)));
        let det = |d: &str| json!({"definition": d, "template": g.2});
        let conds: BTreeSet<&str> = rs.iter().map(|r| r.condition).collect();
        for cond in conds {
            let these: Vec<&&Scored> = rs.iter().filter(|r| r.condition == cond).collect();
            let mut correct = Clusters::default();
            for r in &these {
                correct.add(r.qid, b(r.study.rgb_correct == Some(true)));
            }
            if cond == "closed-book" {
                out.mean(&k, cond, "acc_closed_book", &correct, 100.0, det("no documents (RGB's passage_num = 0 run): every answer part matched (RGB checkanswer); a rejection is never correct"));
                continue;
            }
            let Some(rate) = noise_rate(cond) else {
                continue;
            };
            if cond.starts_with("rgb-integration-") {
                out.mean(&k, cond, "integration_acc", &correct, 100.0, det("information integration: every answer part matched by one of its aliases, each part's passages among the documents (RGB checkanswer on _int data; evalue.py all_rate below noise 1)"));
            } else if rate < 1.0 {
                let def = if cond.starts_with("rgb-counterfactual-") {
                    "Acc_doc: every part of the true answer matched with the counterfactual documents (evalue.py all_rate on _fact data); a rejection is never correct"
                } else {
                    "every required answer part matched by one of its aliases (RGB checkanswer; evalue.py all_rate below noise 1); a rejection is never correct"
                };
                out.mean(&k, cond, "acc", &correct, 100.0, det(def));
            }
            if rate >= 1.0 {
                let (mut all, mut rej) = (Clusters::default(), Clusters::default());
                for r in &these {
                    let rejects = r.study.rgb_rejection == Some(true);
                    all.add(r.qid, b(rejects || r.study.rgb_correct == Some(true)));
                    rej.add(r.qid, b(rejects));
                }
                out.mean(&k, cond, "all_rate", &all, 100.0, det("RGB's reported rejection figure (evalue.py all_rate at noise_rate 1, l.277-280): says 'insufficient information' or gives every answer part; the paper's Rej column"));
                out.mean(&k, cond, "rejection_rate", &rej, 100.0, det("only negative passages: says 'insufficient information' (case-sensitive, RGB evalue.py), correct answers not counted"));
            }
            if cond.starts_with("rgb-counterfactual-") {
                counterfactual(out, &k, cond, &these, reference, &det);
            }
        }
    }
}

/// ED and both CRs of one counterfactual condition ([`rgb`]).
fn counterfactual(
    out: &mut Out,
    k: &ragprobe_score::metrics::Key,
    cond: &str,
    these: &[&&Scored],
    reference: bool,
    det: &dyn Fn(&str) -> serde_json::Value,
) {
    let (mut ed, mut cr_evalue, mut cr_fact) = (
        Clusters::default(),
        Clusters::default(),
        Clusters::default(),
    );
    for r in these {
        let detected = r.study.rgb_fact_error == Some(true);
        ed.add(r.qid, b(detected));
        if detected {
            let correct = r.study.rgb_correct == Some(true);
            let rejects = reference && r.study.rgb_correct.is_some() && r.study.rgb_rejection == Some(true);
            cr_evalue.add(r.qid, b(correct || rejects));
            cr_fact.add(r.qid, b(correct));
        }
    }
    out.mean(k, cond, "error_detection_rate", &ed, 100.0, det("ED: says 'factual errors' (case-sensitive substring of the raw response, RGB evalue.py fact_check_rate)"));
    out.mean(k, cond, "cr_evalue", &cr_evalue, 100.0, det("CR as evalue.py's correct_rate (l.292-298): among detected, no answer part unmatched (0 not in labels; a rejection's [-1] label counts as corrected)"));
    out.mean(k, cond, "cr_fact_evalue", &cr_fact, 100.0, det("CR as fact_evalue.py's correct_rate (l.131-135), the one RGB's README names: among detected (here by evalue.py's string check, there by its ChatGPT judge), every answer part matched (0 not in labels and 1 in labels)"));
}
