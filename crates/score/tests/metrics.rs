//! Every metric on small tables worked out by hand.

use ragprobe_artifact::scores::ScoreRow;
use ragprobe_artifact::tables::MetricRow;
use ragprobe_score::metrics::{self, Out};
use ragprobe_score::{compare_rows, ScoreOptions};

fn r(qid: &str, cond: &str, prompt: &str) -> ScoreRow {
    ScoreRow {
        case_id: format!("{qid}-{cond}"),
        qid: qid.into(),
        dataset: "d".into(),
        lang: "en".into(),
        condition: cond.into(),
        prompt: prompt.into(),
        model: "m".into(),
        request_id: format!("r-{qid}-{cond}-{prompt}"),
        expected: "answer".into(),
        accuracy: Some(false),
        em: Some(false),
        f1: Some(0.0),
        says_unanswerable: Some(false),
        says_conflict: Some(false),
        ..Default::default()
    }
}

fn acc(mut x: ScoreRow, ok: bool) -> ScoreRow {
    x.accuracy = Some(ok);
    x
}

fn run(rows: &[ScoreRow], f: fn(&[ScoreRow], &mut Out)) -> Vec<MetricRow> {
    let mut out = Out { rows: vec![], bootstrap: 200, seed: 1 };
    f(rows, &mut out);
    out.rows
}

fn get<'a>(m: &'a [MetricRow], cond: &str, metric: &str) -> &'a MetricRow {
    m.iter().find(|x| x.condition == cond && x.metric == metric).unwrap_or_else(|| panic!("no {cond}/{metric} in {:#?}", m.iter().map(|x| (&x.condition, &x.metric)).collect::<Vec<_>>()))
}

fn close(v: Option<f64>, want: f64) -> bool {
    v.is_some_and(|v| (v - want).abs() < 1e-9)
}

#[test]
fn qa_accuracy_em_f1_and_failed_rows() {
    let mut rows = vec![acc(r("q1", "base", "p"), true), acc(r("q2", "base", "p"), true), acc(r("q3", "base", "p"), false), acc(r("q4", "base", "p"), false)];
    rows[0].em = Some(true);
    rows[0].f1 = Some(1.0);
    rows[1].f1 = Some(0.5);
    let mut failed = r("q5", "base", "p");
    failed.failed = true;
    failed.accuracy = None;
    rows.push(failed);
    let m = run(&rows, metrics::qa);
    // acc = 2/4 (the failed row is excluded), em = 1/4, f1 = (1 + 0.5)/4.
    assert!(close(get(&m, "base", "acc").value, 50.0) && get(&m, "base", "acc").n == 4);
    assert!(close(get(&m, "base", "em").value, 25.0));
    assert!(close(get(&m, "base", "f1").value, 37.5));
    let f = get(&m, "base", "failed_requests");
    assert_eq!((f.value, f.n), (Some(1.0), 5));
}

#[test]
fn unanswerable_table_4() {
    let mut rows = vec![acc(r("q1", "base", "unans"), true), r("q2", "base", "unans")];
    rows[1].says_unanswerable = Some(true); // answerable, wrongly called unanswerable
    let mut u = |qid: &str, said: bool, gold: bool| {
        let mut x = acc(r(qid, "base", "unans"), gold);
        x.expected = "unanswerable".into();
        x.says_unanswerable = Some(said);
        rows.push(x);
    };
    u("q3", true, false); // Acc.
    u("q4", false, true); // Cor.
    u("q5", false, false); // Hallu.
    let m = run(&rows, metrics::unanswerable);
    assert!(close(get(&m, "base", "acc").value, 40.0)); // q1, q3 of 5
    assert!(close(get(&m, "base", "acc_ans").value, 50.0) && get(&m, "base", "acc_ans").n == 2);
    assert!(close(get(&m, "base", "acc_unans").value, 100.0 / 3.0) && get(&m, "base", "acc_unans").n == 3);
    assert!(close(get(&m, "base", "unans_cor").value, 100.0 / 3.0));
    assert!(close(get(&m, "base", "unans_hallu").value, 100.0 / 3.0));
    assert!(close(get(&m, "base", "ans_called_unans").value, 50.0));
}

#[test]
fn rad_pairs_by_qid() {
    let rows = vec![
        acc(r("q1", "base", "normal"), true),
        acc(r("q2", "base", "normal"), true),
        acc(r("q3", "base", "normal"), true),
        acc(r("q4", "base", "normal"), false),
        acc(r("q1", "add-random", "normal"), true),
        acc(r("q2", "add-random", "normal"), false),
        acc(r("q3", "add-random", "normal"), true),
        acc(r("q4", "add-random", "normal"), true), // not in ARA: ignored
        acc(r("q1", "add-topk", "normal"), false),
    ];
    let m = run(&rows, metrics::rad);
    // ARA = {q1, q2, q3}; ARA-Add(random) = {q1, q3} -> 66.7
    let x = get(&m, "add-random", "rad");
    assert!(close(x.value, 200.0 / 3.0) && x.n == 3, "{x:?}");
    // add-topk only for q1, which fails -> 0 of 1
    assert!(close(get(&m, "add-topk", "rad").value, 0.0) && get(&m, "add-topk", "rad").n == 1);
    assert!(m.iter().all(|x| x.metric != "rad_unans"), "no unanswerable labels, no split");
}

#[test]
fn conflict_detection_table_7() {
    let p = "imperfect-conflict";
    let mut c1 = r("q1", "add-conflict", p);
    c1.says_conflict = Some(true);
    let c2 = r("q2", "add-conflict", p);
    let mut b1 = acc(r("q1", "base", p), true);
    b1.answerable = Some(true);
    let mut b2 = acc(r("q2", "base", p), true);
    b2.answerable = Some(true);
    b2.says_conflict = Some(true); // correct answer but also "conflict": wrong for NC
    let m = run(&[c1, c2, b1, b2], metrics::conflict_detection);
    assert!(close(get(&m, "add-conflict", "acc_c").value, 50.0));
    assert!(close(get(&m, "base", "acc_nc").value, 50.0));
    let all = get(&m, "add-conflict+base", "acc");
    assert!(close(all.value, 50.0) && all.n == 4);
    assert!(run(&[r("q1", "add-conflict", "imperfect-normal")], metrics::conflict_detection).is_empty(), "only for conflict prompts");
}

#[test]
fn stubbornness_table_8() {
    let p = "imperfect-normal";
    let mut rows = vec![acc(r("q1", "base", p), true), acc(r("q2", "base", p), true), acc(r("q3", "base", p), true), acc(r("q4", "base", p), false)];
    rows.push(acc(r("q1", "add-conflict", p), true));
    let mut foil = acc(r("q2", "add-conflict", p), false);
    foil.foil_any = Some(true);
    rows.push(foil);
    rows.push(acc(r("q3", "add-conflict", p), false));
    rows.push(acc(r("q4", "add-conflict", p), true)); // not in ARA
    let m = run(&rows, metrics::stubbornness);
    for (metric, v) in [("a_to_a", 100.0 / 3.0), ("a_to_c", 100.0 / 3.0), ("a_to_u", 100.0 / 3.0)] {
        let x = get(&m, "add-conflict", metric);
        assert!(close(x.value, v) && x.n == 3, "{metric}: {x:?}");
    }
}

#[test]
fn par_table_13() {
    let p = "imperfect-normal";
    let mut a = acc(r("q1", "base", p), true);
    a.answerable = Some(false);
    let mut b = acc(r("q2", "base", p), false);
    b.answerable = Some(false);
    let mut c = acc(r("q3", "base", p), true);
    c.answerable = Some(true);
    let m = run(&[a, b, c], metrics::par);
    let x = get(&m, "base", "par");
    assert!(close(x.value, 50.0) && x.n == 2);
}

#[test]
fn nomiracl_rates() {
    let mut rows = Vec::new();
    for (i, (exp, label)) in [("non_relevant", "yes"), ("non_relevant", "idk"), ("non_relevant", "invalid"), ("non_relevant", "yes"), ("relevant", "idk"), ("relevant", "yes")].iter().enumerate() {
        let mut x = r(&format!("q{i}"), "nomiracl", "nomiracl-vanilla");
        x.expected = exp.to_string();
        x.nomiracl_label = Some(label.to_string());
        x.accuracy = None;
        rows.push(x);
    }
    let m = run(&rows, metrics::nomiracl);
    let h = get(&m, "non_relevant", "hallucination_rate");
    assert!(close(h.value, 50.0) && h.n == 4, "{h:?}"); // 2 yes of 4
    assert!(close(get(&m, "non_relevant", "invalid_rate").value, 25.0));
    let hv = get(&m, "non_relevant", "hallucination_rate_valid_only");
    assert!(close(hv.value, 200.0 / 3.0) && hv.n == 3); // FP/(FP+TN) = 2/3
    assert!(close(get(&m, "relevant", "error_rate").value, 50.0));
    assert!(close(get(&m, "relevant", "error_rate_valid_only").value, 50.0));
    assert_eq!(m[0].dataset, "en", "NoMIRACL metrics are per language");
}

#[test]
fn stress_misleading_rate_and_contrasts() {
    let mut rows = vec![acc(r("q1", "closed-book", "stress-closed-book"), true), acc(r("q2", "closed-book", "stress-closed-book"), true), acc(r("q3", "closed-book", "stress-closed-book"), false)];
    // foil-only on edited evidence, by (policy, qid, position).
    let fo = |p: &str, q: &str, pos: &str| match (p, q, pos) {
        ("stress-strict", "q1", _) => true,
        ("stress-strict", "q2", "end") => true,
        ("stress-soft", "q1", "end") => true,
        _ => false,
    };
    for p in ["stress-soft", "stress-strict"] {
        for q in ["q1", "q2", "q3"] {
            for pos in ["beginning", "middle", "end"] {
                let mut e = acc(r(q, "evidence-edited", p), !fo(p, q, pos));
                e.answer_position = Some(pos.into());
                e.foil_only = Some(fo(p, q, pos));
                e.case_id = format!("{q}-{p}-{pos}-e");
                rows.push(e);
                let mut c = acc(r(q, "evidence-clean", p), q != "q3" || pos == "end");
                c.answer_position = Some(pos.into());
                c.foil_only = Some(false);
                c.case_id = format!("{q}-{p}-{pos}-c");
                rows.push(c);
            }
        }
    }
    let m = run(&rows, metrics::stress);
    let pick = |prompt: &str, cond: &str, metric: &str| m.iter().find(|x| x.prompt == prompt && x.condition == cond && x.metric == metric).unwrap().clone();
    // K = {q1, q2}. Strict end: both foil-only -> 100; middle: q1 -> 50.
    assert!(close(pick("stress-strict", "edited/end", "mr").value, 100.0));
    assert!(close(pick("stress-strict", "edited/middle", "mr").value, 50.0));
    assert_eq!(pick("stress-strict", "edited/middle", "mr").n, 2);
    // Positions averaged within question: q1 = 1, q2 = 1/3 -> (1 + 1/3)/2 = 66.7
    assert!(close(pick("stress-strict", "edited/all", "mr").value, 200.0 / 3.0));
    // Soft: q1 end only -> q1 = 1/3, q2 = 0 -> 16.7
    assert!(close(pick("stress-soft", "edited/all", "mr").value, 100.0 / 6.0));
    // Strict - Soft, within question: q1 = 1 - 1/3, q2 = 1/3 - 0 -> mean 1/2 -> 50 points
    let c = pick("stress-strict - stress-soft", "edited/all", "mr_strict_minus_soft");
    assert!(close(c.value, 50.0) && c.n == 2, "{c:?}");
    // Strict End - Middle on K: q1 0, q2 1 -> 50 points
    assert!(close(pick("stress-strict", "edited/end-middle", "mr_diff").value, 50.0));
    // Clean accuracy on the full set: q1, q2 always; q3 only at the end -> 7/9
    assert!(close(pick("stress-strict", "clean/all", "clean_acc").value, 700.0 / 9.0));
    // Beneficial correction on U = {q3}: clean correct at 1 of 3 positions -> 33.3
    assert!(close(pick("stress-strict", "clean/all", "beneficial_correction").value, 100.0 / 3.0));
    // Harmful override on K under Strict: q1 never the reference (1), q2 at the end (1/3) -> 66.7
    assert!(close(pick("stress-strict", "edited/all", "harmful_override").value, 200.0 / 3.0));
    // Transitions clean gold -> edited foil at the end under Strict: q1, q2 -> 2
    assert_eq!(pick("stress-strict", "end", "clean_gold_to_edited_foil").value, Some(2.0));
}

#[test]
fn rgb_noise_rejection_and_counterfactual() {
    let mut rows = Vec::new();
    let mut add = |q: &str, cond: &str, expected: &str, correct: bool, rej: bool, fe: bool| {
        let mut x = r(q, cond, "rgb-en");
        x.expected = expected.into();
        x.rgb_correct = Some(correct);
        x.rgb_rejection = Some(rej);
        x.rgb_fact_error = Some(fe);
        rows.push(x);
    };
    add("q1", "rgb-noise-0", "answer", true, false, false);
    add("q2", "rgb-noise-0", "answer", false, false, false);
    add("q1", "rgb-noise-1", "unanswerable", false, true, false);
    add("q2", "rgb-noise-1", "unanswerable", false, false, false);
    add("q1", "rgb-counterfactual", "conflict", true, false, true);
    add("q2", "rgb-counterfactual", "conflict", false, false, true);
    add("q3", "rgb-counterfactual", "conflict", true, false, false);
    let m = run(&rows, metrics::rgb);
    assert!(close(get(&m, "rgb-noise-0", "acc").value, 50.0));
    assert!(close(get(&m, "rgb-noise-1", "rejection_rate").value, 50.0));
    assert!(close(get(&m, "rgb-counterfactual", "error_detection_rate").value, 200.0 / 3.0));
    let cr = get(&m, "rgb-counterfactual", "error_correction_rate");
    assert!(close(cr.value, 50.0) && cr.n == 2);
}

#[test]
fn empty_subsets_have_n_zero_and_no_value() {
    // Only unanswerable questions: Acc(ans) has an empty denominator.
    let mut x = r("q1", "base", "unans");
    x.expected = "unanswerable".into();
    x.says_unanswerable = Some(true);
    let m = run(&[x], metrics::unanswerable);
    let a = get(&m, "base", "acc_ans");
    assert_eq!((a.n, a.value, a.ci_low, a.ci_high), (0, None, None, None));
    assert!(m.iter().all(|x| x.value.is_none_or(|v| v.is_finite())));
}

#[test]
fn paired_comparison() {
    let a = [acc(r("q1", "base", "p"), true), acc(r("q2", "base", "p"), false), acc(r("q3", "base", "p"), true)];
    let b = [acc(r("q1", "base", "p"), true), acc(r("q2", "base", "p"), true)];
    let (va, vb): (Vec<&ScoreRow>, Vec<&ScoreRow>) = (a.iter().collect(), b.iter().collect());
    let c = compare_rows(&va, &vb, "acc", &ScoreOptions { bootstrap: 500, seed: 3 }).unwrap();
    // Shared questions q1, q2: A = 50, B = 100, B - A = 50 points.
    assert_eq!((c.questions, c.a, c.b, c.diff), (2, Some(50.0), Some(100.0), Some(50.0)));
    let (lo, hi) = c.ci.unwrap();
    assert!(lo <= 50.0 && hi >= 50.0);
    assert!(compare_rows(&va, &vb, "nope", &ScoreOptions::default()).is_err());
}
