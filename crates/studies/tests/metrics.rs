//! Every metric on small tables worked out by hand.

use ragprobe_artifact::{MetricRow, ScoreRow};
use ragprobe_score::metrics::Out;
use ragprobe_score::scored::{Scored, ScoredArena};
use ragprobe_score::{compare_rows, ScoreOptions};
use ragprobe_studies::imperfect::metrics as imperfect;
use ragprobe_studies::nomiracl::metrics as nomiracl;
use ragprobe_studies::rgb::metrics as rgb;
use ragprobe_studies::stress::metrics as stress;

/// The role (study, role, variant) the built-in template of this id
/// declares; test prompts with other ids declare none.
fn declared(
    prompt: &str,
) -> (
    Option<&'static str>,
    Option<&'static str>,
    Option<&'static str>,
) {
    match prompt {
        "imperfect-normal" | "normal" => (Some("000"), Some("normal"), None),
        "imperfect-unans" | "unans" => (Some("000"), Some("unans"), None),
        "imperfect-conflict" => (Some("000"), Some("conflict"), None),
        "imperfect-closed-book" => (Some("000"), Some("closed-book"), None),
        "stress-closed-book" => (Some("002"), Some("closed-book"), None),
        "stress-soft" => (Some("002"), Some("soft"), Some("v0")),
        "stress-strict" => (Some("002"), Some("strict"), Some("v0")),
        "stress-soft-v1" => (Some("002"), Some("soft"), Some("v1")),
        "stress-strict-v1" => (Some("002"), Some("strict"), Some("v1")),
        "nomiracl-vanilla" => (Some("001"), Some("nomiracl"), Some("vanilla")),
        "rgb-en" => (Some("rgb"), Some("rgb"), Some("en")),
        "rgb-en-closed-book" => (Some("rgb"), Some("closed-book"), Some("en")),
        _ => (None, None, None),
    }
}

fn r(qid: &str, cond: &str, prompt: &str) -> ScoreRow {
    let (study, role, variant) = declared(prompt);
    ScoreRow {
        prompt_study: study.map(String::from),
        prompt_role: role.map(String::from),
        prompt_variant: variant.map(String::from),
        case_id: format!("{qid}-{cond}"),
        qid: qid.into(),
        dataset: "d".into(),
        lang: "en".into(),
        condition: cond.into(),
        prompt: prompt.into(),
        model: "m".into(),
        request_id: format!("r-{qid}-{cond}-{prompt}"),
        expected: ragprobe_artifact::Expected::Answer,
        flags: ragprobe_artifact::MatchFlags {
            accuracy: Some(false),
            em: Some(false),
            f1: Some(0.0),
            says_unanswerable: Some(false),
            says_conflict: Some(false),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn acc(mut x: ScoreRow, ok: bool) -> ScoreRow {
    x.flags.accuracy = Some(ok);
    x
}

fn run(rows: &[ScoreRow], f: fn(&[Scored], &mut Out)) -> Vec<MetricRow> {
    run_with(
        rows,
        f,
        &ScoreOptions {
            bootstrap: 200,
            seed: 1,
            ..Default::default()
        },
    )
}

fn run_with(rows: &[ScoreRow], f: fn(&[Scored], &mut Out), opts: &ScoreOptions) -> Vec<MetricRow> {
    let bump = bumpalo::Bump::new();
    let rows = ScoredArena::new(&bump).add_all(rows);
    let mut out = Out::new(opts);
    f(&rows, &mut out);
    out.rows
}

fn detail(m: &MetricRow, key: &str) -> serde_json::Value {
    serde_json::from_str::<serde_json::Value>(m.details.as_deref().unwrap_or("{}")).unwrap()[key]
        .clone()
}

fn get<'a>(m: &'a [MetricRow], cond: &str, metric: &str) -> &'a MetricRow {
    m.iter()
        .find(|x| x.condition == cond && x.metric == metric)
        .unwrap_or_else(|| {
            panic!(
                "no {cond}/{metric} in {:#?}",
                m.iter()
                    .map(|x| (&x.condition, &x.metric))
                    .collect::<Vec<_>>()
            )
        })
}

fn close(v: Option<f64>, want: f64) -> bool {
    v.is_some_and(|v| (v - want).abs() < 1e-9)
}

#[test]
fn qa_accuracy_em_f1_and_failed_rows() {
    let mut rows = vec![
        acc(r("q1", "base", "p"), true),
        acc(r("q2", "base", "p"), true),
        acc(r("q3", "base", "p"), false),
        acc(r("q4", "base", "p"), false),
    ];
    rows[0].flags.em = Some(true);
    rows[0].flags.f1 = Some(1.0);
    rows[1].flags.f1 = Some(0.5);
    let mut failed = r("q5", "base", "p");
    failed.failed = true;
    failed.flags.accuracy = None;
    rows.push(failed);
    let m = run(&rows, imperfect::qa);
    // acc = 2/4 (the failed row is excluded), em = 1/4, f1 = (1 + 0.5)/4.
    assert!(close(get(&m, "base", "acc").value, 50.0) && get(&m, "base", "acc").n == 4);
    assert!(close(get(&m, "base", "em").value, 25.0));
    assert!(close(get(&m, "base", "f1").value, 37.5));
    let f = get(&m, "base", "failed_requests");
    assert_eq!((f.value, f.n), (Some(1.0), 5));
}

#[test]
fn unanswerable_table_4() {
    let mut rows = vec![
        acc(r("q1", "base", "unans"), true),
        r("q2", "base", "unans"),
    ];
    rows[1].flags.says_unanswerable = Some(true); // answerable, wrongly called unanswerable
    let mut u = |qid: &str, said: bool, gold: bool| {
        let mut x = acc(r(qid, "base", "unans"), gold);
        x.expected = ragprobe_artifact::Expected::Unanswerable;
        x.flags.says_unanswerable = Some(said);
        rows.push(x);
    };
    u("q3", true, false); // Acc.
    u("q4", false, true); // Cor.
    u("q5", false, false); // Hallu.
    let m = run(&rows, imperfect::unanswerable);
    assert!(close(get(&m, "base", "acc").value, 40.0)); // q1, q3 of 5
    assert!(close(get(&m, "base", "acc_ans").value, 50.0) && get(&m, "base", "acc_ans").n == 2);
    assert!(
        close(get(&m, "base", "acc_unans").value, 100.0 / 3.0)
            && get(&m, "base", "acc_unans").n == 3
    );
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
    let m = run(&rows, imperfect::rad);
    // ARA = {q1, q2, q3}; ARA-Add(random) = {q1, q3} -> 66.7
    let x = get(&m, "add-random", "rad");
    assert!(close(x.value, 200.0 / 3.0) && x.n == 3, "{x:?}");
    // add-topk only for q1, which fails -> 0 of 1
    assert!(close(get(&m, "add-topk", "rad").value, 0.0) && get(&m, "add-topk", "rad").n == 1);
    assert!(
        m.iter().all(|x| x.metric != "rad_unans"),
        "no unanswerable labels, no split"
    );
}

/// Table 7 on a hand-built set. Answerable questions q1..q6 (q7 is not:
/// no gold answer in its top-k). q1, q2 have a built conflict passage: C.
/// q3, q4, q6 have only their base case: NC. q1 and q2 also have base cases,
/// which must not count again.
///   C:  q1 says "conflict" (right), q2 does not          -> Acc(C)  = 1/2
///   NC: q3 gold, q4 gold but also "conflict" (wrong), q6 gold -> Acc(NC) = 2/3
///   Acc over the 5 answerable questions once: (1 + 2)/5 = 60
/// and (Acc(NC) - Acc) / (Acc(NC) - Acc(C)) = (2/3 - 3/5)/(2/3 - 1/2) = 0.4 = |C|/5.
fn table7_rows() -> Vec<ScoreRow> {
    let p = "imperfect-conflict";
    let ans = |mut x: ScoreRow, a: bool| {
        x.answerable = Some(a);
        x
    };
    let mut c1 = ans(r("q1", "add-conflict", p), true);
    c1.flags.says_conflict = Some(true);
    let c2 = ans(acc(r("q2", "add-conflict", p), true), true);
    let b1 = ans(acc(r("q1", "base", p), true), true);
    let b2 = ans(acc(r("q2", "base", p), true), true);
    let b3 = ans(acc(r("q3", "base", p), true), true);
    let mut b4 = ans(acc(r("q4", "base", p), true), true);
    b4.flags.says_conflict = Some(true);
    let b6 = ans(acc(r("q6", "base", p), true), true);
    let b7 = ans(acc(r("q7", "base", p), true), false);
    vec![c1, c2, b1, b2, b3, b4, b6, b7]
}

#[test]
fn conflict_detection_table_7_populations_are_disjoint() {
    let m = run(&table7_rows(), imperfect::conflict_detection);
    let (c, nc, all) = (
        get(&m, "add-conflict", "acc_c"),
        get(&m, "base", "acc_nc"),
        get(&m, "add-conflict+base", "acc_answerable"),
    );
    assert!(close(c.value, 50.0) && c.n == 2, "{c:?}");
    assert!(close(nc.value, 200.0 / 3.0) && nc.n == 3, "{nc:?}");
    assert!(
        close(all.value, 60.0) && all.n == 5,
        "every answerable question once: {all:?}"
    );
    let share = detail(all, "c_share").as_f64().unwrap();
    assert!((share - 0.4).abs() < 1e-12);
    let ratio = (nc.value.unwrap() - all.value.unwrap()) / (nc.value.unwrap() - c.value.unwrap());
    assert!(
        (ratio - share).abs() < 1e-9,
        "the paper's invariant: {ratio} = C share {share}"
    );
}

#[test]
fn conflict_share_moves_questions_from_c_to_nc() {
    // P = 1: everyone with a passage is in C (as without the option).
    let opts = |p| ScoreOptions {
        bootstrap: 50,
        seed: 1,
        conflict_share: Some(p),
        ..Default::default()
    };
    let m = run_with(&table7_rows(), imperfect::conflict_detection, &opts(1.0));
    assert_eq!(get(&m, "add-conflict", "acc_c").n, 2);
    // P ~ 0: nobody is in C; q1 and q2 join NC by their base case (gold,
    // no "conflict": right) -> NC = 4 right of 5.
    let m = run_with(&table7_rows(), imperfect::conflict_detection, &opts(1e-12));
    assert_eq!(get(&m, "add-conflict", "acc_c").n, 0);
    let nc = get(&m, "base", "acc_nc");
    assert!(close(nc.value, 80.0) && nc.n == 5, "{nc:?}");
    // The split is a pure function of (seed, qid).
    let d = imperfect::share_draw(1, "q1");
    assert!(
        (0.0..1.0).contains(&d)
            && d == imperfect::share_draw(1, "q1")
            && d != imperfect::share_draw(2, "q1")
    );
}

#[test]
fn families_follow_the_declared_role_not_the_name() {
    // A template named like a conflict prompt whose role is `normal` gets
    // the Normal-prompt families, not conflict detection.
    let mut rows = table7_rows();
    for x in &mut rows {
        x.prompt = "no-conflict-v2".into();
        x.prompt_role = Some("normal".into());
    }
    assert!(run(&rows, imperfect::conflict_detection).is_empty());
    assert!(!run(&rows, imperfect::stubbornness).is_empty());
    // And one named `plain` that declares `conflict` gets conflict detection.
    for x in &mut rows {
        x.prompt = "plain".into();
        x.prompt_role = Some("conflict".into());
    }
    assert!(!run(&rows, imperfect::conflict_detection).is_empty());
    assert!(
        run(&rows, imperfect::rad).is_empty() && run(&rows, imperfect::stubbornness).is_empty()
    );
    // A template without a role gets neither.
    for x in &mut rows {
        x.prompt_role = None;
    }
    assert!(
        run(&rows, imperfect::conflict_detection).is_empty()
            && run(&rows, imperfect::stubbornness).is_empty()
    );
}

#[test]
fn stubbornness_table_8() {
    let p = "imperfect-normal";
    let mut rows = vec![
        acc(r("q1", "base", p), true),
        acc(r("q2", "base", p), true),
        acc(r("q3", "base", p), true),
        acc(r("q4", "base", p), false),
    ];
    rows.push(acc(r("q1", "add-conflict", p), true));
    let mut foil = acc(r("q2", "add-conflict", p), false);
    foil.flags.foil_any = Some(true);
    rows.push(foil);
    rows.push(acc(r("q3", "add-conflict", p), false));
    rows.push(acc(r("q4", "add-conflict", p), true)); // not in ARA
    let m = run(&rows, imperfect::stubbornness);
    for (metric, v) in [
        ("a_to_a", 100.0 / 3.0),
        ("a_to_c", 100.0 / 3.0),
        ("a_to_u", 100.0 / 3.0),
    ] {
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
    let m = run(&[a, b, c], imperfect::par);
    let x = get(&m, "base", "par");
    assert!(close(x.value, 50.0) && x.n == 2);
}

#[test]
fn nomiracl_rates() {
    let mut rows = Vec::new();
    for (i, (exp, label)) in [
        ("non_relevant", "yes"),
        ("non_relevant", "idk"),
        ("non_relevant", "invalid"),
        ("non_relevant", "yes"),
        ("relevant", "idk"),
        ("relevant", "yes"),
    ]
    .iter()
    .enumerate()
    {
        let mut x = r(&format!("q{i}"), "nomiracl", "nomiracl-vanilla");
        x.expected = ragprobe_artifact::Expected::parse(exp).unwrap();
        x.study.nomiracl_label = Some(label.to_string());
        x.flags.accuracy = None;
        rows.push(x);
    }
    let m = run(&rows, nomiracl::nomiracl);
    let h = get(&m, "non_relevant", "hallucination_rate");
    assert!(close(h.value, 50.0) && h.n == 4, "{h:?}"); // 2 yes of 4
    assert!(close(get(&m, "non_relevant", "invalid_rate").value, 25.0));
    let hv = get(&m, "non_relevant", "hallucination_rate_valid_only");
    assert!(close(hv.value, 200.0 / 3.0) && hv.n == 3); // FP/(FP+TN) = 2/3
    assert!(close(get(&m, "relevant", "error_rate").value, 50.0));
    assert!(close(
        get(&m, "relevant", "error_rate_valid_only").value,
        50.0
    ));
    assert_eq!(m[0].dataset, "en", "NoMIRACL metrics are per language");
}

/// Accuracy and exact match agree (both matchers give the same K).
fn same(mut x: ScoreRow, ok: bool) -> ScoreRow {
    x.flags.accuracy = Some(ok);
    x.flags.em = Some(ok);
    x
}

/// The stress worked example: closed-book K = {q1, q2}, U = {q3}; foil-only
/// on edited evidence by (policy, qid, position) from `fo`; clean arm
/// correct except q3 away from the end.
fn stress_rows(
    model: &str,
    variants: &[(&str, &str)],
    fo: &dyn Fn(&str, &str, &str) -> bool,
) -> Vec<ScoreRow> {
    let mut rows = vec![
        same(r("q1", "closed-book", "stress-closed-book"), true),
        same(r("q2", "closed-book", "stress-closed-book"), true),
        same(r("q3", "closed-book", "stress-closed-book"), false),
    ];
    for (soft, strict) in variants {
        for p in [*soft, *strict] {
            for q in ["q1", "q2", "q3"] {
                for pos in ["beginning", "middle", "end"] {
                    let f = fo(p, q, pos);
                    let mut e = same(r(q, "evidence-edited", p), !f);
                    e.answer_position = Some(pos.into());
                    e.flags.foil_only = Some(f);
                    e.flags.foil_exact = Some(f);
                    e.case_id = format!("{q}-{p}-{pos}-e");
                    rows.push(e);
                    let mut c = same(r(q, "evidence-clean", p), q != "q3" || pos == "end");
                    c.answer_position = Some(pos.into());
                    c.flags.foil_only = Some(false);
                    c.flags.foil_exact = Some(false);
                    c.case_id = format!("{q}-{p}-{pos}-c");
                    rows.push(c);
                }
            }
        }
    }
    for x in &mut rows {
        x.model = model.into();
    }
    rows
}

fn fo_v0(p: &str, q: &str, pos: &str) -> bool {
    matches!(
        (p, q, pos),
        ("stress-strict", "q1", _) | ("stress-strict", "q2", "end") | ("stress-soft", "q1", "end")
    )
}

#[test]
fn stress_misleading_rate_and_contrasts() {
    let mut rows = stress_rows("m", &[("stress-soft", "stress-strict")], &fo_v0);
    // A closed-book response of study 000 must not define K (roles, not names).
    rows.push(same(r("q3", "closed-book", "imperfect-closed-book"), true));
    let m = run(&rows, stress::stress);
    let pick = |prompt: &str, cond: &str, metric: &str| {
        m.iter()
            .find(|x| x.prompt == prompt && x.condition == cond && x.metric == metric)
            .unwrap_or_else(|| panic!("no {prompt} {cond} {metric}"))
            .clone()
    };
    // K = {q1, q2}. Strict end: both foil-only -> 100; middle: q1 -> 50.
    assert!(close(
        pick("stress-strict", "edited/end", "mr").value,
        100.0
    ));
    assert!(close(
        pick("stress-strict", "edited/middle", "mr").value,
        50.0
    ));
    assert_eq!(pick("stress-strict", "edited/middle", "mr").n, 2);
    assert_eq!(
        detail(
            &pick("stress-strict", "edited/middle", "mr"),
            "baseline_prompt"
        ),
        "stress-closed-book"
    );
    assert_eq!(
        detail(&pick("stress-strict", "edited/middle", "mr"), "k_matcher"),
        "accuracy"
    );
    assert_eq!(
        detail(
            &pick("stress-strict", "edited/all", "harmful_override"),
            "k_matcher"
        ),
        "exact"
    );
    // Positions averaged within question: q1 = 1, q2 = 1/3 -> (1 + 1/3)/2 = 66.7
    assert!(close(
        pick("stress-strict", "edited/all", "mr").value,
        200.0 / 3.0
    ));
    // Soft: q1 end only -> q1 = 1/3, q2 = 0 -> 16.7
    assert!(close(
        pick("stress-soft", "edited/all", "mr").value,
        100.0 / 6.0
    ));
    // Strict - Soft, within question: q1 = 1 - 1/3, q2 = 1/3 - 0 -> mean 1/2 -> 50 points
    let c = pick(
        "stress-strict - stress-soft",
        "edited/all",
        "mr_strict_minus_soft",
    );
    assert!(close(c.value, 50.0) && c.n == 2, "{c:?}");
    // Strict End - Middle on K: q1 0, q2 1 -> 50 points
    assert!(close(
        pick("stress-strict", "edited/end-middle", "mr_diff").value,
        50.0
    ));
    // Clean accuracy on the full set: q1, q2 always; q3 only at the end -> 7/9
    assert!(close(
        pick("stress-strict", "clean/all", "clean_acc").value,
        700.0 / 9.0
    ));
    // Beneficial correction on U = {q3}: clean correct at 1 of 3 positions -> 33.3
    assert!(close(
        pick("stress-strict", "clean/all", "beneficial_correction").value,
        100.0 / 3.0
    ));
    // Harmful override on K under Strict: q1 never the reference (1), q2 at the end (1/3) -> 66.7
    assert!(close(
        pick("stress-strict", "edited/all", "harmful_override").value,
        200.0 / 3.0
    ));
    // Transitions at the end under Strict: pairs with a correct clean
    // response are q1, q2, q3 (n = 3); q1 and q2 turn to the foil -> 2.
    let t = pick("stress-strict", "end", "clean_gold_to_edited_foil");
    assert_eq!((t.value, t.n), (Some(2.0), 3));
    // Middle: clean correct for q1, q2 (n = 2); only q1 to the foil.
    let t = pick("stress-strict", "middle", "clean_gold_to_edited_foil");
    assert_eq!((t.value, t.n), (Some(1.0), 2));
    // All: 1 + 1 + 2 = 4 transitions over 2 + 2 + 3 = 7 pairs (not 3 x 3).
    let t = pick("stress-strict", "all", "clean_gold_to_edited_foil");
    assert_eq!((t.value, t.n), (Some(4.0), 7));
    // Strict - Soft HOR on K: q1 = 1 - 1/3, q2 = 1/3 - 0 -> 50 points;
    // BCR on U: the clean arm is the same under both -> 0.
    assert!(close(
        pick(
            "stress-strict - stress-soft",
            "edited/all",
            "hor_strict_minus_soft"
        )
        .value,
        50.0
    ));
    assert!(close(
        pick(
            "stress-strict - stress-soft",
            "clean/all",
            "bcr_strict_minus_soft"
        )
        .value,
        0.0
    ));
    // Interaction Strict(End-Middle) - Soft(End-Middle): q1 (1-1)-(1-0) = -1,
    // q2 (1-0)-(0-0) = 1 -> 0.
    let i = pick(
        "stress-strict - stress-soft",
        "edited/end-middle",
        "interaction_end_minus_middle",
    );
    assert!(close(i.value, 0.0) && i.n == 2, "{i:?}");
    // Clean-arm control on K: no foil in the clean arm; the edited arm as MR.
    assert!(close(
        pick("stress-strict", "clean/all", "foil_only_control").value,
        0.0
    ));
    assert!(close(
        pick("stress-strict", "edited/all", "foil_only_control").value,
        200.0 / 3.0
    ));
}

#[test]
fn stress_fixed_population_leaves_out_incomplete_questions() {
    let mut rows = stress_rows("m", &[("stress-soft", "stress-strict")], &fo_v0);
    // q4 is in K and foil-only everywhere under Strict, but its middle
    // edited response under Soft is missing (a position not realised).
    rows.push(same(r("q4", "closed-book", "stress-closed-book"), true));
    for p in ["stress-soft", "stress-strict"] {
        for pos in ["beginning", "middle", "end"] {
            for arm in ["clean", "edited"] {
                if p == "stress-soft" && pos == "middle" && arm == "edited" {
                    continue;
                }
                let f = arm == "edited" && p == "stress-strict";
                let mut x = same(r("q4", &format!("evidence-{arm}"), p), !f);
                x.answer_position = Some(pos.into());
                x.flags.foil_only = Some(f);
                x.flags.foil_exact = Some(f);
                x.case_id = format!("q4-{p}-{pos}-{arm}");
                rows.push(x);
            }
        }
    }
    let m = run(&rows, stress::stress);
    let pick = |prompt: &str, cond: &str, metric: &str| {
        m.iter()
            .find(|x| x.prompt == prompt && x.condition == cond && x.metric == metric)
            .unwrap()
            .clone()
    };
    // Per position, q4 counts where realised: Strict end = 3 of 3.
    assert_eq!(pick("stress-strict", "edited/end", "mr").n, 3);
    // Averaged and paired: only q1, q2 (the fixed population), as before.
    let avg = pick("stress-strict", "edited/all", "mr");
    assert!(close(avg.value, 200.0 / 3.0) && avg.n == 2, "{avg:?}");
    assert_eq!(detail(&avg, "excluded"), 1);
    assert_eq!(pick("stress-strict", "edited/end-middle", "mr_diff").n, 2);
    assert_eq!(
        pick(
            "stress-strict - stress-soft",
            "edited/all",
            "mr_strict_minus_soft"
        )
        .n,
        2
    );
}

#[test]
fn stress_prompt_version_change_and_common_stratum() {
    // v1: Strict is foil-only only at the end for q1; Soft never.
    let fo = |p: &str, q: &str, pos: &str| match p {
        "stress-strict-v1" => q == "q1" && pos == "end",
        _ => fo_v0(p, q, pos),
    };
    let mut rows = stress_rows(
        "m1",
        &[
            ("stress-soft", "stress-strict"),
            ("stress-soft-v1", "stress-strict-v1"),
        ],
        &fo,
    );
    // Change from v0 on K: q1: (1/3 - 0) - (1 - 1/3) = -1/3; q2: (0 - 0) - (1/3 - 0) = -1/3 -> -33.3
    let m = run(&rows, stress::stress);
    let ch = m
        .iter()
        .find(|x| x.prompt == "v1 - v0" && x.metric == "mr_gap_change_from_v0")
        .unwrap();
    assert!(close(ch.value, -100.0 / 3.0) && ch.n == 2, "{ch:?}");
    // A second model whose K is {q2} only: the common stratum is {q2}.
    let mut m2 = stress_rows("m2", &[("stress-soft", "stress-strict")], &fo_v0);
    for x in m2
        .iter_mut()
        .filter(|x| x.qid == "q1" && x.condition == "closed-book")
    {
        x.flags.accuracy = Some(false);
        x.flags.em = Some(false);
    }
    rows.extend(m2);
    let m = run(&rows, stress::stress);
    let common = m
        .iter()
        .find(|x| {
            x.model == "m1"
                && x.metric == "hor_strict_minus_soft_common"
                && x.prompt == "stress-strict - stress-soft"
        })
        .unwrap();
    // On {q2}: Strict HOR 1/3, Soft HOR 0 -> 33.3, n = 1.
    assert!(
        close(common.value, 100.0 / 3.0) && common.n == 1,
        "{common:?}"
    );
    assert_eq!(detail(common, "common_stratum"), 1);
    let u = m
        .iter()
        .find(|x| x.model == "m2" && x.metric == "bcr_strict_minus_soft_common")
        .unwrap();
    assert_eq!(detail(u, "common_stratum"), 1, "U common = {{q3}}");
}

#[test]
fn stress_k_matcher_exact_versus_accuracy() {
    // q2's closed-book response contains the answer but is not an exact
    // match: in K under `accuracy`, not under `exact`.
    let mut rows = stress_rows("m", &[("stress-soft", "stress-strict")], &fo_v0);
    for x in rows
        .iter_mut()
        .filter(|x| x.qid == "q2" && x.condition == "closed-book")
    {
        x.flags.em = Some(false);
    }
    let k_of = |opts: ScoreOptions| {
        let m = run_with(&rows, stress::stress, &opts);
        let mr = m
            .iter()
            .find(|x| {
                x.prompt == "stress-strict" && x.condition == "edited/end" && x.metric == "mr"
            })
            .unwrap()
            .n;
        let hor = m
            .iter()
            .find(|x| x.prompt == "stress-strict" && x.metric == "harmful_override")
            .unwrap()
            .n;
        (mr, hor)
    };
    let o = |k| ScoreOptions {
        bootstrap: 20,
        seed: 1,
        k_matcher: k,
        ..Default::default()
    };
    // paper: MR on accuracy-K {q1, q2}, HOR on exact-K {q1}.
    assert_eq!(k_of(o(ragprobe_score::metrics::KMatcher::Paper)), (2, 1));
    assert_eq!(k_of(o(ragprobe_score::metrics::KMatcher::Exact)), (1, 1));
    assert_eq!(k_of(o(ragprobe_score::metrics::KMatcher::Accuracy)), (2, 2));
}

#[test]
fn rgb_noise_rejection_counterfactual_and_integration() {
    let mut rows = Vec::new();
    let mut add =
        |q: &str, cond: &str, prompt: &str, expected: &str, correct: bool, rej: bool, fe: bool| {
            let mut x = r(q, cond, prompt);
            x.expected = ragprobe_artifact::Expected::parse(expected).unwrap();
            x.study.rgb_correct = Some(correct);
            x.study.rgb_rejection = Some(rej);
            x.study.rgb_fact_error = Some(fe);
            rows.push(x);
        };
    let cf = "rgb-counterfactual-0.2";
    add("q1", "rgb-noise-0", "rgb-en", "answer", true, false, false);
    add("q2", "rgb-noise-0", "rgb-en", "answer", false, false, false);
    add(
        "q1",
        "rgb-noise-1",
        "rgb-en",
        "unanswerable",
        false,
        true,
        false,
    );
    add(
        "q2",
        "rgb-noise-1",
        "rgb-en",
        "unanswerable",
        false,
        false,
        false,
    );
    // Answers from what it knew at noise 1: evalue.py's all_rate counts it
    // with the rejections, the plain rejection rate does not.
    add(
        "q3",
        "rgb-noise-1",
        "rgb-en",
        "unanswerable",
        true,
        false,
        false,
    );
    add(
        "q4",
        "rgb-noise-1",
        "rgb-en",
        "unanswerable",
        false,
        false,
        false,
    );
    add("q1", cf, "rgb-en", "conflict", true, false, true);
    add("q2", cf, "rgb-en", "conflict", false, false, true);
    add("q3", cf, "rgb-en", "conflict", true, false, false);
    // Detects the error and rejects: evalue.py gives it the label [-1],
    // and `0 not in label` counts it as corrected; fact_evalue.py does not.
    add("q4", cf, "rgb-en", "conflict", false, true, true);
    let int0 = "rgb-integration-0";
    add("q1", int0, "rgb-en", "answer", true, false, false);
    add("q2", int0, "rgb-en", "answer", false, false, false);
    add("q3", int0, "rgb-en", "answer", false, true, false);
    // RGB's passage_num = 0 run: 1 of 2 right.
    let (cb, cb_prompt) = ("closed-book", "rgb-en-closed-book");
    add("q1", cb, cb_prompt, "answer", true, false, false);
    add("q2", cb, cb_prompt, "answer", false, false, false);
    let m = run(&rows, rgb::rgb);
    assert!(close(get(&m, "rgb-noise-0", "acc").value, 50.0));
    let rej = get(&m, "rgb-noise-1", "rejection_rate");
    assert!(close(rej.value, 25.0) && rej.n == 4, "q1 of 4: {rej:?}");
    let all = get(&m, "rgb-noise-1", "all_rate");
    assert!(close(all.value, 50.0), "q1 rejects, q3 is right: {all:?}");
    // Acc_doc on counterfactual cases: q1 and q3 of 4.
    assert!(close(get(&m, cf, "acc").value, 50.0));
    assert!(close(get(&m, cf, "error_detection_rate").value, 75.0));
    let cr = get(&m, cf, "cr_evalue");
    assert!(
        close(cr.value, 200.0 / 3.0) && cr.n == 3,
        "q1 and q4 of q1, q2, q4: {cr:?}"
    );
    let crf = get(&m, cf, "cr_fact_evalue");
    assert!(
        close(crf.value, 100.0 / 3.0) && crf.n == 3,
        "q1 of q1, q2, q4: {crf:?}"
    );
    let ia = get(&m, "rgb-integration-0", "integration_acc");
    assert!(close(ia.value, 100.0 / 3.0) && ia.n == 3);
    let cb = get(&m, "closed-book", "acc_closed_book");
    assert!(close(cb.value, 50.0) && cb.n == 2, "{cb:?}");
    // English, Chinese, with and without documents: one row (the paper's).
    assert!(m.iter().all(|x| x.prompt == "rgb"), "one table row");
    // Not a counterfactual condition: no ED there; not rate 1: no rejection.
    assert!(!m
        .iter()
        .any(|x| x.condition == "rgb-noise-0" && x.metric == "error_detection_rate"));
    assert!(!m
        .iter()
        .any(|x| x.condition == "rgb-noise-0" && x.metric == "rejection_rate"));
    // --lenient: no quirk, q1 only.
    let lenient = ScoreOptions {
        bootstrap: 20,
        seed: 1,
        parse: ragprobe_score::ParseMode::Lenient,
        ..Default::default()
    };
    let m = run_with(&rows, rgb::rgb, &lenient);
    assert!(close(get(&m, cf, "cr_evalue").value, 100.0 / 3.0));
}

#[test]
fn empty_subsets_have_n_zero_and_no_value() {
    // Only unanswerable questions: Acc(ans) has an empty denominator.
    let mut x = r("q1", "base", "unans");
    x.expected = ragprobe_artifact::Expected::Unanswerable;
    x.flags.says_unanswerable = Some(true);
    let m = run(&[x], imperfect::unanswerable);
    let a = get(&m, "base", "acc_ans");
    assert_eq!((a.n, a.value, a.ci_low, a.ci_high), (0, None, None, None));
    assert!(m.iter().all(|x| x.value.is_none_or(|v| v.is_finite())));
}

#[test]
fn paired_comparison() {
    let a = [
        acc(r("q1", "base", "p"), true),
        acc(r("q2", "base", "p"), false),
        acc(r("q3", "base", "p"), true),
    ];
    let b = [
        acc(r("q1", "base", "p"), true),
        acc(r("q2", "base", "p"), true),
    ];
    let (va, vb): (Vec<&ScoreRow>, Vec<&ScoreRow>) = (a.iter().collect(), b.iter().collect());
    let c = compare_rows(
        &va,
        &vb,
        "acc",
        &ScoreOptions {
            bootstrap: 500,
            seed: 3,
            ..Default::default()
        },
    )
    .unwrap();
    // Shared questions q1, q2: A = 50, B = 100, B - A = 50 points.
    assert_eq!(
        (c.questions, c.a, c.b, c.diff),
        (2, Some(50.0), Some(100.0), Some(50.0))
    );
    let (lo, hi) = c.ci.unwrap();
    assert!(lo <= 50.0 && hi >= 50.0);
    assert!(compare_rows(&va, &vb, "nope", &ScoreOptions::default()).is_err());
}
