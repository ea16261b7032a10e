//! Every metric of the studies, computed from scored rows.
//!
//! Failed requests are excluded from every denominator (and counted in
//! `failed`). Rates are percentages (0–100) as the studies report them.
//! Each sample mean carries n and a question-clustered 95% bootstrap
//! interval ([`crate::bootstrap`]). An empty subset gives n = 0 and no value.
//! Families whose study defines them under a particular prompt are computed
//! for the prompts that play that role: conflict detection for templates
//! whose id contains `conflict`; RAD, stubbornness and PAR for the others
//! (PAR not under an `unans` prompt, where unanswerable questions expect
//! "unanswerable").

use ragprobe_artifact::scores::ScoreRow;
use ragprobe_artifact::tables::MetricRow;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

use crate::bootstrap::{interval, point, Cluster};

/// Per-question (sum, count) accumulator.
#[derive(Default, Clone)]
pub struct Clusters(BTreeMap<String, Cluster>);

impl Clusters {
    pub fn add(&mut self, qid: &str, value: f64) {
        let e = self.0.entry(qid.to_string()).or_insert((0.0, 0.0));
        e.0 += value;
        e.1 += 1.0;
    }
    /// One value per question (already averaged within the question).
    pub fn set(&mut self, qid: &str, value: f64) {
        self.0.insert(qid.to_string(), (value, 1.0));
    }
    pub fn n(&self) -> i64 {
        self.0.values().map(|c| c.1).sum::<f64>() as i64
    }
    fn values(&self) -> Vec<Cluster> {
        self.0.values().copied().collect()
    }
}

/// Grouping of metrics: (study, dataset, model, prompt).
#[derive(Clone)]
pub struct Key {
    pub study: &'static str,
    pub dataset: String,
    pub model: String,
    pub prompt: String,
}

/// Collects metric rows.
pub struct Out {
    pub rows: Vec<MetricRow>,
    pub bootstrap: usize,
    pub seed: u64,
}

impl Out {
    /// A sample-mean metric (x `scale`) with its interval.
    pub fn mean(&mut self, k: &Key, condition: &str, metric: &str, c: &Clusters, scale: f64, details: Value) {
        let vals = c.values();
        let p = point(&vals);
        let ci = interval(&vals, self.bootstrap, self.seed);
        let mut d = details;
        if let Some(o) = d.as_object_mut() {
            o.insert("questions".into(), json!(vals.len()));
        }
        self.rows.push(MetricRow {
            study: k.study.into(),
            dataset: k.dataset.clone(),
            model: k.model.clone(),
            prompt: k.prompt.clone(),
            condition: condition.into(),
            metric: metric.into(),
            value: p.map(|v| v * scale),
            n: c.n(),
            ci_low: ci.map(|x| x.0 * scale),
            ci_high: ci.map(|x| x.1 * scale),
            details: Some(d.to_string()),
        });
    }

    /// A plain count (no interval).
    pub fn count(&mut self, k: &Key, condition: &str, metric: &str, value: usize, n: usize, details: Value) {
        self.rows.push(MetricRow {
            study: k.study.into(),
            dataset: k.dataset.clone(),
            model: k.model.clone(),
            prompt: k.prompt.clone(),
            condition: condition.into(),
            metric: metric.into(),
            value: Some(value as f64),
            n: n as i64,
            ci_low: None,
            ci_high: None,
            details: Some(details.to_string()),
        });
    }
}

fn b(x: bool) -> f64 {
    if x {
        1.0
    } else {
        0.0
    }
}

/// Rows grouped by (dataset, model, prompt), failed rows removed (counted).
type Groups<'a> = BTreeMap<(String, String, String), Vec<&'a ScoreRow>>;

fn groups<'a>(rows: &'a [ScoreRow], pred: impl Fn(&ScoreRow) -> bool) -> Groups<'a> {
    let mut g: Groups = BTreeMap::new();
    for r in rows.iter().filter(|r| !r.failed && pred(r)) {
        g.entry((r.dataset.clone(), r.model.clone(), r.prompt.clone())).or_default().push(r);
    }
    g
}

fn key(study: &'static str, g: &(String, String, String)) -> Key {
    Key { study, dataset: g.0.clone(), model: g.1.clone(), prompt: g.2.clone() }
}

/// Accuracy, EM and F1 per condition (seed 000 Appendix B Tables 11, 12),
/// plus the count of failed requests.
pub fn qa(rows: &[ScoreRow], out: &mut Out) {
    for (g, rs) in groups(rows, |r| !r.condition.starts_with("nomiracl") && r.accuracy.is_some()) {
        let k = key("qa", &g);
        let mut by_cond: BTreeMap<&str, Vec<&ScoreRow>> = BTreeMap::new();
        for r in rs {
            by_cond.entry(r.condition.as_str()).or_default().push(r);
        }
        for (cond, rs) in by_cond {
            let (mut acc, mut em, mut f1) = (Clusters::default(), Clusters::default(), Clusters::default());
            for r in &rs {
                acc.add(&r.qid, b(r.accuracy == Some(true)));
                em.add(&r.qid, b(r.em == Some(true)));
                f1.add(&r.qid, r.f1.unwrap_or(0.0));
            }
            let def = json!({"definition": "accuracy: a normalised gold alias is a substring of the normalised response; em: equal after normalisation; f1: SQuAD token F1, max over aliases"});
            out.mean(&k, cond, "acc", &acc, 100.0, def.clone());
            out.mean(&k, cond, "em", &em, 100.0, def.clone());
            out.mean(&k, cond, "f1", &f1, 100.0, def);
            let mcq: Vec<&&ScoreRow> = rs.iter().filter(|r| r.mcq_choice.is_some()).collect();
            if !mcq.is_empty() {
                let several = mcq.iter().filter(|r| r.mcq_choice.as_deref() == Some("several")).count();
                out.count(&k, cond, "mcq_several_options", several, mcq.len(), json!({"definition": "multiple-choice responses naming two or more options: neither reference nor foil"}));
            }
        }
    }
    let mut failed: BTreeMap<(String, String, String, String), (usize, usize)> = BTreeMap::new();
    for r in rows {
        let e = failed.entry((r.dataset.clone(), r.model.clone(), r.prompt.clone(), r.condition.clone())).or_default();
        e.1 += 1;
        if r.failed {
            e.0 += 1;
        }
    }
    for ((d, m, p, c), (f, n)) in failed {
        if f > 0 {
            out.count(&Key { study: "qa", dataset: d, model: m, prompt: p }, &c, "failed_requests", f, n, json!({"definition": "requests that failed after retries; excluded from every denominator"}));
        }
    }
}

/// Whether a base-condition response is correct under its label: an
/// unanswerable question is answered correctly by saying "unanswerable",
/// an answerable one by the gold answer (accuracy).
fn correct_for(label: &str, r: &ScoreRow) -> bool {
    if label == "unanswerable" {
        r.says_unanswerable == Some(true)
    } else {
        r.accuracy == Some(true)
    }
}

/// Seed 000 §5.2 (Figure 2, Table 4), on `base` cases labelled with
/// `--relabel-unanswerable`: Acc over all; Acc(ans) over answerable (gold
/// answer); Acc(unans) over unanswerable (said "unanswerable"). On the
/// unanswerable questions: Acc. = said unanswerable; Cor. = did not, and
/// gave the original gold answer; Hallu. = neither (the three add to 100).
/// And the share of answerable questions wrongly called unanswerable.
pub fn unanswerable(rows: &[ScoreRow], out: &mut Out) {
    for (g, rs) in groups(rows, |r| r.condition == "base") {
        if !rs.iter().any(|r| r.expected == "unanswerable") {
            continue;
        }
        let k = key("imperfect", &g);
        let (mut all, mut ans, mut unans) = (Clusters::default(), Clusters::default(), Clusters::default());
        let (mut cor, mut hallu, mut false_unans) = (Clusters::default(), Clusters::default(), Clusters::default());
        for r in &rs {
            let ok = correct_for(&r.expected, r);
            all.add(&r.qid, b(ok));
            if r.expected == "unanswerable" {
                let said = r.says_unanswerable == Some(true);
                let gold = !said && r.accuracy == Some(true);
                unans.add(&r.qid, b(said));
                cor.add(&r.qid, b(gold));
                hallu.add(&r.qid, b(!said && !gold));
            } else {
                ans.add(&r.qid, b(ok));
                false_unans.add(&r.qid, b(r.says_unanswerable == Some(true)));
            }
        }
        let d = |s: &str| json!({"definition": s});
        out.mean(&k, "base", "acc", &all, 100.0, d("answerable: gold answer; unanswerable: says 'unanswerable'"));
        out.mean(&k, "base", "acc_ans", &ans, 100.0, d("answerable questions answered with the gold answer"));
        out.mean(&k, "base", "acc_unans", &unans, 100.0, d("unanswerable questions: said 'unanswerable' (Table 4 Acc.)"));
        out.mean(&k, "base", "unans_cor", &cor, 100.0, d("unanswerable questions: did not say unanswerable and gave the original gold answer (Table 4 Cor.)"));
        out.mean(&k, "base", "unans_hallu", &hallu, 100.0, d("unanswerable questions: neither (Table 4 Hallu.)"));
        out.mean(&k, "base", "ans_called_unans", &false_unans, 100.0, d("answerable questions wrongly called unanswerable"));
    }
}

fn by_qid<'a>(rs: &[&'a ScoreRow], cond: &str) -> BTreeMap<&'a str, &'a ScoreRow> {
    rs.iter().filter(|r| r.condition == cond).map(|r| (r.qid.as_str(), *r)).collect()
}

/// Seed 000 §5.3.2 (Figure 3) and Table 6: ARA = questions correct with the
/// top-k documents (`base`); ARA-Add = those still correct with one added
/// document; RAD = 100 x |ARA-Add| / |ARA|, per added-document type
/// (`add-random`, `add-topk`, `add-genadv`, `add-conflict`). Correct means
/// the gold answer, or "unanswerable" for a question labelled unanswerable;
/// with such labels RAD is also split into answerable / unanswerable.
pub fn rad(rows: &[ScoreRow], out: &mut Out) {
    for (g, rs) in groups(rows, |r| !r.prompt.contains("conflict")) {
        let base = by_qid(&rs, "base");
        if base.is_empty() {
            continue;
        }
        let k = key("imperfect", &g);
        let adds: BTreeSet<&str> = rs.iter().filter(|r| r.condition.starts_with("add-")).map(|r| r.condition.as_str()).collect();
        let labelled = base.values().any(|r| r.expected == "unanswerable");
        for add in adds {
            let added = by_qid(&rs, add);
            let (mut all, mut ans, mut unans) = (Clusters::default(), Clusters::default(), Clusters::default());
            for (qid, br) in &base {
                if !correct_for(&br.expected, br) {
                    continue;
                }
                let Some(ar) = added.get(qid) else { continue };
                let still = b(correct_for(&br.expected, ar));
                all.add(qid, still);
                if br.expected == "unanswerable" {
                    unans.add(qid, still);
                } else {
                    ans.add(qid, still);
                }
            }
            let d = json!({"definition": "RAD = 100 x |ARA-Add| / |ARA|; ARA = questions correct in base, paired by qid", "ara": all.n()});
            out.mean(&k, add, "rad", &all, 100.0, d.clone());
            if labelled {
                out.mean(&k, add, "rad_ans", &ans, 100.0, d.clone());
                out.mean(&k, add, "rad_unans", &unans, 100.0, d);
            }
        }
    }
}

/// Seed 000 §5.4 Table 7 (Conflict prompt): on answerable questions that
/// have an `add-conflict` case, Acc(C) = share of conflict cases answered
/// "conflict"; Acc(NC) = share of their `base` cases (no conflict passage)
/// answered with the gold answer and not "conflict"; Acc over both.
pub fn conflict_detection(rows: &[ScoreRow], out: &mut Out) {
    for (g, rs) in groups(rows, |r| r.prompt.contains("conflict")) {
        let conflict = by_qid(&rs, "add-conflict");
        if conflict.is_empty() {
            continue;
        }
        let base = by_qid(&rs, "base");
        let k = key("imperfect", &g);
        let (mut c, mut nc, mut all) = (Clusters::default(), Clusters::default(), Clusters::default());
        for (qid, r) in &conflict {
            let ok = b(r.says_conflict == Some(true));
            c.add(qid, ok);
            all.add(qid, ok);
        }
        for (qid, r) in &base {
            if conflict.contains_key(qid) && r.answerable == Some(true) {
                let ok = b(r.accuracy == Some(true) && r.says_conflict != Some(true));
                nc.add(qid, ok);
                all.add(qid, ok);
            }
        }
        out.mean(&k, "add-conflict", "acc_c", &c, 100.0, json!({"definition": "conflict cases answered 'conflict'"}));
        out.mean(&k, "base", "acc_nc", &nc, 100.0, json!({"definition": "answerable cases without a conflict passage answered with the gold answer and not 'conflict'"}));
        out.mean(&k, "add-conflict+base", "acc", &all, 100.0, json!({"definition": "both sets pooled"}));
    }
}

/// Seed 000 §5.4 Table 8 (Normal prompt): on ARA (questions correct in
/// `base`) with a conflict passage added: A->A = still the gold answer;
/// A->C = not the gold answer but the foil; A->U = neither.
pub fn stubbornness(rows: &[ScoreRow], out: &mut Out) {
    for (g, rs) in groups(rows, |r| !r.prompt.contains("conflict")) {
        let conflict = by_qid(&rs, "add-conflict");
        let base = by_qid(&rs, "base");
        if conflict.is_empty() || base.is_empty() {
            continue;
        }
        let k = key("imperfect", &g);
        let (mut aa, mut ac, mut au) = (Clusters::default(), Clusters::default(), Clusters::default());
        for (qid, br) in &base {
            if br.accuracy != Some(true) {
                continue;
            }
            let Some(cr) = conflict.get(qid) else { continue };
            let keep = cr.accuracy == Some(true);
            let foil = !keep && cr.foil_any == Some(true);
            aa.add(qid, b(keep));
            ac.add(qid, b(foil));
            au.add(qid, b(!keep && !foil));
        }
        out.mean(&k, "add-conflict", "a_to_a", &aa, 100.0, json!({"definition": "ARA questions still answered with the gold answer"}));
        out.mean(&k, "add-conflict", "a_to_c", &ac, 100.0, json!({"definition": "ARA questions now answered with the foil"}));
        out.mean(&k, "add-conflict", "a_to_u", &au, 100.0, json!({"definition": "ARA questions answered with neither"}));
    }
}

/// Seed 000 Table 13 (Normal prompt): PAR = share of unanswerable questions
/// (no retrieved passage holds the answer) answered correctly anyway.
pub fn par(rows: &[ScoreRow], out: &mut Out) {
    for (g, rs) in groups(rows, |r| r.condition == "base" && !r.prompt.contains("conflict") && !r.prompt.contains("unans")) {
        let k = key("imperfect", &g);
        let mut c = Clusters::default();
        for r in rs.iter().filter(|r| r.answerable == Some(false)) {
            c.add(&r.qid, b(r.accuracy == Some(true)));
        }
        out.mean(&k, "base", "par", &c, 100.0, json!({"definition": "unanswerable questions (no answer in the top-k) answered with the gold answer"}));
    }
}

/// Seed 001 (NoMIRACL), per language, model and prompt:
/// hallucination rate = #yes / N on the non-relevant subset; error rate =
/// #idk / N on the relevant subset; invalid rates; and the variants that
/// leave invalid outputs out of the denominator: FP/(FP+TN) = yes/(yes+idk)
/// on non-relevant, FN/(FN+TP) = idk/(idk+yes) on relevant.
pub fn nomiracl(rows: &[ScoreRow], out: &mut Out) {
    let mut g: BTreeMap<(String, String, String), Vec<&ScoreRow>> = BTreeMap::new();
    for r in rows.iter().filter(|r| !r.failed && r.condition == "nomiracl") {
        g.entry((r.lang.clone(), r.model.clone(), r.prompt.clone())).or_default().push(r);
    }
    for (gk, rs) in g {
        let k = key("nomiracl", &gk);
        for (subset, main, main_label, other_label) in [("non_relevant", "hallucination_rate", "yes", "idk"), ("relevant", "error_rate", "idk", "yes")] {
            let (mut rate, mut invalid, mut valid_rate) = (Clusters::default(), Clusters::default(), Clusters::default());
            for r in rs.iter().filter(|r| r.expected == subset) {
                let l = r.nomiracl_label.as_deref().unwrap_or("invalid");
                rate.add(&r.qid, b(l == main_label));
                invalid.add(&r.qid, b(l == "invalid"));
                if l == main_label || l == other_label {
                    valid_rate.add(&r.qid, b(l == main_label));
                }
            }
            let datasets: BTreeSet<&str> = rs.iter().map(|r| r.dataset.as_str()).collect();
            out.mean(&k, subset, main, &rate, 100.0, json!({"definition": format!("#{main_label} / N over the {subset} subset (invalid outputs in the denominator)"), "datasets": datasets}));
            out.mean(&k, subset, "invalid_rate", &invalid, 100.0, json!({"definition": "#invalid / N"}));
            let v = if subset == "non_relevant" { "FP/(FP+TN) = yes/(yes+idk): invalid outputs left out" } else { "FN/(FN+TP) = idk/(idk+yes): invalid outputs left out" };
            out.mean(&k, subset, &format!("{main}_valid_only"), &valid_rate, 100.0, json!({"definition": v}));
        }
    }
}

const POSITIONS: [&str; 3] = ["beginning", "middle", "end"];

/// Seed 002 (RAG-Stress), per dataset and model:
/// K = questions whose closed-book response is correct (the baseline),
/// U = the others. Per policy prompt P:
/// * clean accuracy on the full set (all positions; and per position);
/// * MR = share of K whose edited-evidence response is foil-only, per
///   position, and with positions averaged within question;
/// * harmful override (on K) = share whose edited response no longer gives
///   the reference; beneficial correction (on U) = share whose clean
///   response gives the reference (both averaged over positions within
///   question; different strata, not to be subtracted);
/// * direct clean-gold -> edited-foil transition counts;
/// * position contrasts End-Middle, Beginning-Middle, Beginning-End on K,
///   paired within question;
/// * for each Strict prompt with a Soft twin (same name with `soft`):
///   Strict-minus-Soft MR with positions averaged within each question
///   before resampling.
pub fn stress(rows: &[ScoreRow], out: &mut Out) {
    let mut by_dm: BTreeMap<(String, String), Vec<&ScoreRow>> = BTreeMap::new();
    for r in rows.iter().filter(|r| !r.failed) {
        by_dm.entry((r.dataset.clone(), r.model.clone())).or_default().push(r);
    }
    for ((dataset, model), rs) in by_dm {
        let evidence_prompts: BTreeSet<&str> = rs.iter().filter(|r| r.condition.starts_with("evidence-")).map(|r| r.prompt.as_str()).collect();
        if evidence_prompts.is_empty() {
            continue;
        }
        // The baseline: closed-book responses, preferring a closed-book prompt.
        let cb_prompts: BTreeSet<&str> = rs.iter().filter(|r| r.condition == "closed-book").map(|r| r.prompt.as_str()).collect();
        let cb_prompt = cb_prompts.iter().find(|p| p.contains("closed-book")).or(cb_prompts.iter().next()).copied();
        let mut baseline: BTreeMap<&str, bool> = BTreeMap::new();
        if let Some(p) = cb_prompt {
            for r in rs.iter().filter(|r| r.condition == "closed-book" && r.prompt == p) {
                baseline.insert(r.qid.as_str(), r.accuracy == Some(true));
            }
        }
        let mut fo_by_prompt: BTreeMap<&str, BTreeMap<&str, Vec<f64>>> = BTreeMap::new();
        for p in &evidence_prompts {
            let k = Key { study: "stress", dataset: dataset.clone(), model: model.clone(), prompt: p.to_string() };
            let rows_p: Vec<&&ScoreRow> = rs.iter().filter(|r| r.prompt == *p).collect();
            let cell = |cond: &str, pos: &str, qid: &str| rows_p.iter().find(|r| r.condition == cond && r.answer_position.as_deref() == Some(pos) && r.qid == qid).copied();
            let qids: BTreeSet<&str> = rows_p.iter().filter(|r| r.condition.starts_with("evidence-")).map(|r| r.qid.as_str()).collect();
            let d = |s: &str| json!({"definition": s, "baseline_prompt": cb_prompt, "k": baseline.values().filter(|v| **v).count(), "u": baseline.values().filter(|v| !**v).count()});
            let mut clean_all = Clusters::default();
            let mut mr_q: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
            let (mut hor_q, mut bcr_q): (BTreeMap<&str, Vec<f64>>, BTreeMap<&str, Vec<f64>>) = Default::default();
            let mut transitions_total = 0;
            for pos in POSITIONS {
                let (mut clean, mut mr) = (Clusters::default(), Clusters::default());
                let mut transitions = 0;
                let mut pairs = 0;
                for q in &qids {
                    let (c, e) = (cell("evidence-clean", pos, q), cell("evidence-edited", pos, q));
                    if let Some(c) = c {
                        clean.add(q, b(c.accuracy == Some(true)));
                        clean_all.add(q, b(c.accuracy == Some(true)));
                        if baseline.get(q) == Some(&false) {
                            bcr_q.entry(q).or_default().push(b(c.accuracy == Some(true)));
                        }
                    }
                    if let Some(e) = e {
                        if baseline.get(q) == Some(&true) {
                            let fo = b(e.foil_only == Some(true));
                            mr.add(q, fo);
                            mr_q.entry(q).or_default().push(fo);
                            hor_q.entry(q).or_default().push(b(e.accuracy != Some(true)));
                        }
                    }
                    if let (Some(c), Some(e)) = (c, e) {
                        pairs += 1;
                        if c.accuracy == Some(true) && e.foil_only == Some(true) {
                            transitions += 1;
                        }
                    }
                }
                transitions_total += transitions;
                out.mean(&k, &format!("clean/{pos}"), "clean_acc", &clean, 100.0, d("clean-evidence responses with the reference, all questions"));
                out.mean(&k, &format!("edited/{pos}"), "mr", &mr, 100.0, d("misleading rate: share of K (closed-book-correct) whose edited-evidence response is foil-only"));
                out.count(&k, &format!("{pos}"), "clean_gold_to_edited_foil", transitions, pairs, d("questions whose clean response gives the reference and edited response the foil only"));
            }
            out.mean(&k, "clean/all", "clean_acc", &clean_all, 100.0, d("clean-evidence accuracy over all questions and positions"));
            let avg = |m: &BTreeMap<&str, Vec<f64>>| {
                let mut c = Clusters::default();
                for (q, v) in m {
                    c.set(q, v.iter().sum::<f64>() / v.len() as f64);
                }
                c
            };
            out.mean(&k, "edited/all", "mr", &avg(&mr_q), 100.0, d("MR with positions averaged within question"));
            out.mean(&k, "edited/all", "harmful_override", &avg(&hor_q), 100.0, d("on K: edited-evidence response no longer gives the reference (positions averaged within question)"));
            out.mean(&k, "clean/all", "beneficial_correction", &avg(&bcr_q), 100.0, d("on U (closed-book wrong): clean-evidence response gives the reference (positions averaged within question)"));
            out.count(&k, "all", "clean_gold_to_edited_foil", transitions_total, qids.len() * 3, d("total over positions"));
            for (a, bb) in [("end", "middle"), ("beginning", "middle"), ("beginning", "end")] {
                let mut c = Clusters::default();
                for q in &qids {
                    if baseline.get(q) != Some(&true) {
                        continue;
                    }
                    if let (Some(x), Some(y)) = (cell("evidence-edited", a, q), cell("evidence-edited", bb, q)) {
                        c.set(q, b(x.foil_only == Some(true)) - b(y.foil_only == Some(true)));
                    }
                }
                out.mean(&k, &format!("edited/{a}-{bb}"), "mr_diff", &c, 100.0, d("paired within question on K, percentage points"));
            }
            fo_by_prompt.insert(p, mr_q);
        }
        for p in &evidence_prompts {
            if !p.contains("strict") {
                continue;
            }
            let twin = p.replace("strict", "soft");
            let (Some(strict), Some(soft)) = (fo_by_prompt.get(p), fo_by_prompt.get(twin.as_str())) else { continue };
            let mut c = Clusters::default();
            for (q, sv) in strict {
                if let Some(tv) = soft.get(q) {
                    c.set(q, sv.iter().sum::<f64>() / sv.len() as f64 - tv.iter().sum::<f64>() / tv.len() as f64);
                }
            }
            let k = Key { study: "stress", dataset: dataset.clone(), model: model.clone(), prompt: format!("{p} - {twin}") };
            out.mean(&k, "edited/all", "mr_strict_minus_soft", &c, 100.0, json!({"definition": "Strict MR - Soft MR on K, positions averaged within question before resampling (percentage points)"}));
        }
    }
}

/// RGB (Chen et al. 2024): accuracy per noise rate (RGB's answer check, on
/// cases that hold a positive passage); rejection rate at noise 1.0 (says
/// "insufficient information"); on counterfactual cases the error
/// detection rate (says "factual errors") and the error correction rate
/// (among those, the correct answer is given).
pub fn rgb(rows: &[ScoreRow], out: &mut Out) {
    for (g, rs) in groups(rows, |r| r.condition.starts_with("rgb-")) {
        let k = key("rgb", &g);
        let conds: BTreeSet<&str> = rs.iter().map(|r| r.condition.as_str()).collect();
        for cond in conds {
            let these: Vec<&&ScoreRow> = rs.iter().filter(|r| r.condition == cond).collect();
            if cond == "rgb-counterfactual" {
                let (mut ed, mut cr) = (Clusters::default(), Clusters::default());
                for r in &these {
                    let detected = r.rgb_fact_error == Some(true);
                    ed.add(&r.qid, b(detected));
                    if detected {
                        cr.add(&r.qid, b(r.rgb_correct == Some(true)));
                    }
                }
                out.mean(&k, cond, "error_detection_rate", &ed, 100.0, json!({"definition": "says 'factual errors'"}));
                out.mean(&k, cond, "error_correction_rate", &cr, 100.0, json!({"definition": "among detected, gives the correct answer"}));
                continue;
            }
            let (mut acc, mut rej) = (Clusters::default(), Clusters::default());
            for r in &these {
                if r.expected == "answer" {
                    acc.add(&r.qid, b(r.rgb_correct == Some(true)));
                } else {
                    rej.add(&r.qid, b(r.rgb_rejection == Some(true)));
                }
            }
            if acc.n() > 0 {
                out.mean(&k, cond, "acc", &acc, 100.0, json!({"definition": "every required answer part matched by one of its aliases (RGB checkanswer)"}));
            }
            if rej.n() > 0 {
                out.mean(&k, cond, "rejection_rate", &rej, 100.0, json!({"definition": "only negative passages: says 'insufficient information'"}));
            }
        }
    }
}

/// Every family.
pub fn all(rows: &[ScoreRow], out: &mut Out) {
    qa(rows, out);
    unanswerable(rows, out);
    rad(rows, out);
    conflict_detection(rows, out);
    stubbornness(rows, out);
    par(rows, out);
    nomiracl(rows, out);
    stress(rows, out);
    rgb(rows, out);
}
