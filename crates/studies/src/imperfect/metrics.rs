//! Seed 000 (imperfect retrieval): QA accuracy per condition, the
//! unanswerable and conflict families, RAD, stubbornness and PAR.

use ragprobe_artifact::{condition, Expected};
use ragprobe_score::metrics::{b, groups, key, role_in, Clusters, Key, Out};
use ragprobe_score::scored::Scored;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

/// Accuracy, EM and F1 per condition (seed 000 Appendix B Tables 11, 12),
/// plus the count of failed requests.
pub fn qa(rows: &[Scored], out: &mut Out) {
    for (g, rs) in groups(rows, |r| {
        !r.condition.starts_with("nomiracl") && r.flags.accuracy.is_some()
    }) {
        let k = key("qa", &g);
        let mut by_cond: BTreeMap<&str, Vec<&Scored>> = BTreeMap::new();
        for r in rs {
            by_cond.entry(r.condition).or_default().push(r);
        }
        for (cond, rs) in by_cond {
            let def = json!({"definition": "accuracy: a normalised gold alias is a substring of the normalised response; em: equal after normalisation; f1: SQuAD token F1, max over aliases"});
            // One metric's clusters at a time: at a million rows each
            // holds 32 MB.
            let metrics: [(&str, fn(&Scored) -> f64); 3] = [
                ("acc", |r| b(r.flags.accuracy == Some(true))),
                ("em", |r| b(r.flags.em == Some(true))),
                ("f1", |r| r.flags.f1.unwrap_or(0.0)),
            ];
            for (metric, value) in metrics {
                let mut c = Clusters::with_capacity(rs.len());
                for r in &rs {
                    c.add(r.qid, value(r));
                }
                out.mean(&k, cond, metric, &c, 100.0, def.clone());
            }
            let mcq: Vec<&&Scored> = rs.iter().filter(|r| r.mcq_choice.is_some()).collect();
            if !mcq.is_empty() {
                let several = mcq
                    .iter()
                    .filter(|r| r.mcq_choice == Some("several"))
                    .count();
                out.count(&k, cond, "mcq_several_options", several, mcq.len(), json!({"definition": "multiple-choice responses naming two or more options: neither reference nor foil"}));
            }
        }
    }
    let mut failed: BTreeMap<(&str, &str, &str, &str), (usize, usize)> = BTreeMap::new();
    for r in rows {
        let e = failed
            .entry((r.dataset, r.model, r.prompt, r.condition))
            .or_default();
        e.1 += 1;
        if r.failed {
            e.0 += 1;
        }
    }
    for ((d, m, p, c), (f, n)) in failed {
        if f > 0 {
            out.count(&Key { study: "qa", dataset: d.into(), model: m.into(), prompt: p.into() }, c, "failed_requests", f, n, json!({"definition": "requests that failed after retries; excluded from every denominator"}));
        }
    }
}

/// Whether a base-condition response is correct under its label: an
/// unanswerable question is answered correctly by saying "unanswerable",
/// an answerable one by the gold answer (accuracy).
fn correct_for(label: Expected, r: &Scored) -> bool {
    if label == Expected::Unanswerable {
        r.flags.says_unanswerable == Some(true)
    } else {
        r.flags.accuracy == Some(true)
    }
}

/// Seed 000 §5.2 (Figure 2, Table 4), on `base` cases labelled with
/// `--relabel-unanswerable`: Acc over all; Acc(ans) over answerable (gold
/// answer); Acc(unans) over unanswerable (said "unanswerable"). On the
/// unanswerable questions: Acc. = said unanswerable; Cor. = did not, and
/// gave the original gold answer; Hallu. = neither (the three add to 100).
/// And the share of answerable questions wrongly called unanswerable.
pub fn unanswerable(rows: &[Scored], out: &mut Out) {
    for (g, rs) in groups(rows, |r| r.condition == condition::BASE) {
        if !rs.iter().any(|r| r.expected == Expected::Unanswerable) {
            continue;
        }
        let k = key("imperfect", &g);
        let (mut all, mut ans, mut unans) = (
            Clusters::default(),
            Clusters::default(),
            Clusters::default(),
        );
        let (mut cor, mut hallu, mut false_unans) = (
            Clusters::default(),
            Clusters::default(),
            Clusters::default(),
        );
        for r in &rs {
            let ok = correct_for(r.expected, r);
            all.add(r.qid, b(ok));
            if r.expected == Expected::Unanswerable {
                let said = r.flags.says_unanswerable == Some(true);
                let gold = !said && r.flags.accuracy == Some(true);
                unans.add(r.qid, b(said));
                cor.add(r.qid, b(gold));
                hallu.add(r.qid, b(!said && !gold));
            } else {
                ans.add(r.qid, b(ok));
                false_unans.add(r.qid, b(r.flags.says_unanswerable == Some(true)));
            }
        }
        let d = |s: &str| json!({"definition": s});
        out.mean(
            &k,
            "base",
            "acc",
            &all,
            100.0,
            d("answerable: gold answer; unanswerable: says 'unanswerable'"),
        );
        out.mean(
            &k,
            "base",
            "acc_ans",
            &ans,
            100.0,
            d("answerable questions answered with the gold answer"),
        );
        out.mean(
            &k,
            "base",
            "acc_unans",
            &unans,
            100.0,
            d("unanswerable questions: said 'unanswerable' (Table 4 Acc.)"),
        );
        out.mean(&k, "base", "unans_cor", &cor, 100.0, d("unanswerable questions: did not say unanswerable and gave the original gold answer (Table 4 Cor.)"));
        out.mean(
            &k,
            "base",
            "unans_hallu",
            &hallu,
            100.0,
            d("unanswerable questions: neither (Table 4 Hallu.)"),
        );
        out.mean(
            &k,
            "base",
            "ans_called_unans",
            &false_unans,
            100.0,
            d("answerable questions wrongly called unanswerable"),
        );
    }
}

fn by_qid<'a>(rs: &[&'a Scored<'a>], cond: &str) -> BTreeMap<&'a str, &'a Scored<'a>> {
    rs.iter()
        .filter(|r| r.condition == cond)
        .map(|r| (r.qid, *r))
        .collect()
}

/// Seed 000 §5.3.2 (Figure 3) and Table 6: ARA = questions correct with the
/// top-k documents (`base`); ARA-Add = those still correct with one added
/// document; RAD = 100 x |ARA-Add| / |ARA|, per added-document type
/// (`add-random`, `add-topk`, `add-genadv`, `add-conflict`). Correct means
/// the gold answer, or "unanswerable" for a question labelled unanswerable;
/// with such labels RAD is also split into answerable / unanswerable.
/// Computed for the `normal` and `unans` roles.
pub fn rad(rows: &[Scored], out: &mut Out) {
    for (g, rs) in groups(rows, |r| role_in(r, &["normal", "unans"])) {
        let base = by_qid(&rs, "base");
        if base.is_empty() {
            continue;
        }
        let k = key("imperfect", &g);
        let adds: BTreeSet<&str> = rs
            .iter()
            .filter(|r| r.condition.starts_with("add-"))
            .map(|r| r.condition)
            .collect();
        let labelled = base.values().any(|r| r.expected == Expected::Unanswerable);
        for add in adds {
            let added = by_qid(&rs, add);
            let (mut all, mut ans, mut unans) = (
                Clusters::default(),
                Clusters::default(),
                Clusters::default(),
            );
            for (qid, br) in &base {
                if !correct_for(br.expected, br) {
                    continue;
                }
                let Some(ar) = added.get(qid) else { continue };
                let still = b(correct_for(br.expected, ar));
                all.add(qid, still);
                if br.expected == Expected::Unanswerable {
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

/// Seed 000 §5.4 Table 7 (Conflict prompt, role `conflict`): three
/// disjoint-or-pooled populations of *answerable* questions (some top-k
/// passage holds a gold answer), each question counted once:
/// * C = the questions whose conflict passage was built and passed every
///   filter (they have an `add-conflict` case); Acc(C) = share answered
///   "conflict";
/// * NC = the other answerable questions, under the top-k documents alone
///   (`base`); Acc(NC) = share answered with the gold answer and not
///   "conflict";
/// * Acc = over C ∪ NC (every answerable question once).
///
/// The paper's Table 7 shows C and NC are disjoint groups: within a
/// dataset (Acc(NC) − Acc) / (Acc(NC) − Acc(C)) is the same for every
/// model (it is |C| / (|C| + |NC|)). With `conflict_share` = P, only a
/// seeded share P of the questions with a conflict passage form C (chosen
/// per question from SHA-256(seed, qid)); the others join NC through their
/// `base` case — for runs where nearly every passage can be built.
pub fn conflict_detection(rows: &[Scored], out: &mut Out) {
    for (g, rs) in groups(rows, |r| role_in(r, &["conflict"])) {
        let conflict = by_qid(&rs, "add-conflict");
        if conflict.is_empty() {
            continue;
        }
        let base = by_qid(&rs, "base");
        let k = key("imperfect", &g);
        let (share_p, seed) = (out.opts.conflict_share, out.opts.seed);
        let in_c = |qid: &str| match share_p {
            None => true,
            Some(p) => share_draw(seed, qid) < p,
        };
        let (mut c, mut nc, mut all) = (
            Clusters::default(),
            Clusters::default(),
            Clusters::default(),
        );
        let mut c_qids = BTreeSet::new();
        for (qid, r) in &conflict {
            if r.answerable != Some(true) || !in_c(qid) {
                continue;
            }
            c_qids.insert(*qid);
            let ok = b(r.flags.says_conflict == Some(true));
            c.add(qid, ok);
            all.add(qid, ok);
        }
        for (qid, r) in &base {
            if c_qids.contains(qid) || r.answerable != Some(true) {
                continue;
            }
            let ok = b(r.flags.accuracy == Some(true) && r.flags.says_conflict != Some(true));
            nc.add(qid, ok);
            all.add(qid, ok);
        }
        let (nc_n, c_n) = (nc.n() as f64, c.n() as f64);
        let share = (c_n + nc_n > 0.0).then(|| c_n / (c_n + nc_n));
        let cs = out.opts.conflict_share;
        let d = |s: &str| json!({"definition": s, "c": c_n, "nc": nc_n, "c_share": share, "conflict_share": cs});
        out.mean(&k, "add-conflict", "acc_c", &c, 100.0, d("C: answerable questions whose conflict passage was built (add-conflict case), answered 'conflict'"));
        out.mean(&k, "base", "acc_nc", &nc, 100.0, d("NC: the other answerable questions (top-k only), answered with the gold answer and not 'conflict'"));
        out.mean(
            &k,
            "add-conflict+base",
            "acc_answerable",
            &all,
            100.0,
            d("every answerable question once: C by its conflict case, NC by its base case"),
        );
    }
}

/// A uniform draw in [0, 1) fixed by (seed, qid): the seeded C/NC split.
pub fn share_draw(seed: u64, qid: &str) -> f64 {
    let h =
        ragprobe_artifact::sha256_hex(format!("{seed}\u{1f}{qid}\u{1f}conflict-share").as_bytes());
    u64::from_str_radix(&h[..16], 16).expect("hex") as f64 / 2f64.powi(64)
}

/// Seed 000 §5.4 Table 8 (Normal prompt): on ARA (questions correct in
/// `base`) with a conflict passage added: A->A = still the gold answer;
/// A->C = not the gold answer but the foil; A->U = neither. Role `normal`.
pub fn stubbornness(rows: &[Scored], out: &mut Out) {
    for (g, rs) in groups(rows, |r| role_in(r, &["normal"])) {
        let conflict = by_qid(&rs, "add-conflict");
        let base = by_qid(&rs, "base");
        if conflict.is_empty() || base.is_empty() {
            continue;
        }
        let k = key("imperfect", &g);
        let (mut aa, mut ac, mut au) = (
            Clusters::default(),
            Clusters::default(),
            Clusters::default(),
        );
        for (qid, br) in &base {
            if br.flags.accuracy != Some(true) {
                continue;
            }
            let Some(cr) = conflict.get(qid) else {
                continue;
            };
            let keep = cr.flags.accuracy == Some(true);
            let foil = !keep && cr.flags.foil_any == Some(true);
            aa.add(qid, b(keep));
            ac.add(qid, b(foil));
            au.add(qid, b(!keep && !foil));
        }
        out.mean(
            &k,
            "add-conflict",
            "a_to_a",
            &aa,
            100.0,
            json!({"definition": "ARA questions still answered with the gold answer"}),
        );
        out.mean(
            &k,
            "add-conflict",
            "a_to_c",
            &ac,
            100.0,
            json!({"definition": "ARA questions now answered with the foil"}),
        );
        out.mean(
            &k,
            "add-conflict",
            "a_to_u",
            &au,
            100.0,
            json!({"definition": "ARA questions answered with neither"}),
        );
    }
}

/// Seed 000 Table 13 (Normal prompt): PAR = share of unanswerable questions
/// (no retrieved passage holds the answer) answered correctly anyway.
/// Role `normal`.
pub fn par(rows: &[Scored], out: &mut Out) {
    for (g, rs) in groups(rows, |r| {
        r.condition == condition::BASE && role_in(r, &["normal"])
    }) {
        let k = key("imperfect", &g);
        let mut c = Clusters::default();
        for r in rs.iter().filter(|r| r.answerable == Some(false)) {
            c.add(r.qid, b(r.flags.accuracy == Some(true)));
        }
        out.mean(&k, "base", "par", &c, 100.0, json!({"definition": "unanswerable questions (no answer in the top-k) answered with the gold answer"}));
    }
}
