//! `score --verdicts`: imported verdicts (people's labels or another tool's
//! judge) set against the string matcher, end to end: responses from the
//! loopback mock, verdicts written from the scored rows with some flipped,
//! and the `matcher` metrics and report table that come out.

use ragprobe_artifact::{read, Metrics, Scores, Store};
use ragprobe_mock::{start, MockConfig};

mod common;
use common::{root, run_ok};

/// The id of the `kind` output among a command's outputs.
fn id(outs: &[(String, String)], kind: &str) -> String {
    outs.iter().find(|(k, _)| k == kind).unwrap().1.clone()
}

/// `score --responses RESPONSES --verdicts FILE` on `store`: its outputs
/// and stderr.
fn score_with_verdicts(
    store: &std::path::Path,
    responses: &str,
    file: &std::path::Path,
) -> (Vec<(String, String)>, String) {
    let f = file.to_str().unwrap();
    let args = [
        "score",
        "--responses",
        responses,
        "--bootstrap",
        "50",
        "--verdicts",
        f,
    ];
    run_ok(&root(), store, &args)
}

/// Ingest the NQ fixture into `store`, build `scenarios` cases and answer
/// them with the mock at `url` (imperfect-normal): (cases, responses) ids.
fn mock_responses(store: &std::path::Path, url: &str, scenarios: &str) -> (String, String) {
    let (q, _) = run_ok(
        &root(),
        store,
        &["ingest", "--format", "dpr", "fixtures/nq-mini.jsonl"],
    );
    let (q, c) = (id(&q, "questions"), id(&q, "contexts"));
    let (cases, _) = run_ok(
        &root(),
        store,
        &[
            "perturb",
            "--questions",
            &q,
            "--contexts",
            &c,
            "-s",
            scenarios,
        ],
    );
    let cases = id(&cases, "cases");
    let (g, _) = run_ok(
        &root(),
        store,
        &[
            "generate",
            "--cases",
            &cases,
            "--prompt",
            "imperfect-normal",
            "--backend",
            "openai",
            "--base-url",
            url,
            "--model",
            "mock-model",
        ],
    );
    (cases, id(&g, "responses"))
}

#[test]
fn imported_verdicts_give_agreement_and_kappa() {
    let rt = common::runtime();
    let m = rt.block_on(start(MockConfig::default(), 0)).unwrap();
    let d = tempfile::tempdir().unwrap();
    let s = d.path().join("s");
    let url = m.base_url();
    let (_, responses) = mock_responses(&s, &url, "closed-book,base");
    let (plain, _) = run_ok(
        &root(),
        &s,
        &["score", "--responses", &responses, "--bootstrap", "50"],
    );
    let store = Store::open(&s).unwrap();
    let rows = read::<Scores>(&store, &id(&plain, "scores")).unwrap();
    let base: Vec<_> = rows
        .iter()
        .filter(|r| r.condition == "base" && !r.failed)
        .collect();
    assert!(base.len() >= 4, "{}", base.len());

    // Verdicts: the string decision on every closed-book and base row,
    // flipped on the first two base rows; the model named on one line.
    let mut lines = String::new();
    let mut flipped = 0;
    for r in rows.iter().filter(|r| !r.failed) {
        let mut correct = r.flags.accuracy == Some(true);
        if r.condition == "base" && flipped < 2 {
            correct = !correct;
            flipped += 1;
        }
        let verdict = if correct { "correct" } else { "incorrect" };
        let model = if flipped == 1 && r.condition == "base" {
            format!(", \"model\": \"{}\"", r.model)
        } else {
            String::new()
        };
        lines.push_str(&format!(
            "{{\"id\": \"{}\"{model}, \"verdict\": \"{verdict}\"}}\n",
            r.case_id
        ));
    }
    lines.push_str("{\"id\": \"no-such-case\", \"verdict\": \"abstained\"}\n");
    let vf = d.path().join("verdicts.jsonl");
    std::fs::write(&vf, &lines).unwrap();

    let (judged, err) = score_with_verdicts(&s, &responses, &vf);
    assert_ne!(
        id(&judged, "metrics"),
        id(&plain, "metrics"),
        "the verdicts are in the recipe"
    );
    assert!(
        err.contains("1 of") && err.contains("name no scored row"),
        "{err}"
    );
    let metrics = read::<Metrics>(&store, &id(&judged, "metrics")).unwrap();
    let get = |cond: &str, metric: &str| {
        metrics
            .iter()
            .find(|r| {
                r.study == "matcher"
                    && r.condition == cond
                    && r.metric == metric
                    && r.breakdown.is_none()
            })
            .unwrap_or_else(|| panic!("{cond} {metric}"))
            .clone()
    };
    let n = base.len() as f64;
    let string_acc = 100.0
        * base
            .iter()
            .filter(|r| r.flags.accuracy == Some(true))
            .count() as f64
        / n;
    assert_eq!(get("base", "string_accuracy").value, Some(string_acc));
    assert_eq!(
        get("base", "disagreement").value,
        Some(200.0 / n),
        "two of {n} flipped"
    );
    assert_eq!(get("base", "disagreement").n, base.len() as i64);
    assert_eq!(get("closed-book", "disagreement").value, Some(0.0));
    // kappa by hand from the confusion the details give.
    let k = get("base", "kappa");
    let det: serde_json::Value = serde_json::from_str(k.details.as_deref().unwrap()).unwrap();
    let cm = &det["confusion"];
    let (a, b, c2, d2) = (
        cm["both"].as_f64().unwrap(),
        cm["string_only"].as_f64().unwrap(),
        cm["verdict_only"].as_f64().unwrap(),
        cm["neither"].as_f64().unwrap(),
    );
    assert_eq!((a + b + c2 + d2, b + c2), (n, 2.0));
    let (po, ps, pv) = ((a + d2) / n, (a + b) / n, (a + c2) / n);
    let pe = ps * pv + (1.0 - ps) * (1.0 - pv);
    match k.value {
        Some(v) => assert!((v - (po - pe) / (1.0 - pe)).abs() < 1e-12, "{v}"),
        None => assert_eq!(pe, 1.0),
    }
    assert_eq!(det["verdicts_unmatched"], 1);

    // Every family under both matchers: `acc` as scored, and with the
    // verdicts in place of the string decision (every row has one here).
    let acc = |group: &str| {
        metrics
            .iter()
            .find(|r| {
                r.study == "qa"
                    && r.condition == "base"
                    && r.metric == "acc"
                    && r.breakdown.as_deref() == Some("matcher")
                    && r.breakdown_group.as_deref() == Some(group)
            })
            .unwrap_or_else(|| panic!("acc under {group}"))
            .value
    };
    assert_eq!(acc("string"), Some(string_acc));
    assert_eq!(acc("verdicts"), get("base", "verdict_accuracy").value);

    // The plain run has no matcher rows; the report shows the table.
    assert!(read::<Metrics>(&store, &id(&plain, "metrics"))
        .unwrap()
        .iter()
        .all(|r| r.study != "matcher"));
    let out = d.path().join("report");
    run_ok(
        &root(),
        &s,
        &[
            "report",
            "--metrics",
            &id(&judged, "metrics"),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let md = std::fs::read_to_string(out.join("tables/matcher_agreement.md")).unwrap();
    assert!(md.contains("Acc (verdicts)") && md.contains("κ"), "{md}");
    // With the scores, the case browser tags the responses the file judged
    // (the verdicts were kept in the store: the report does not need the
    // file), the one naming its model too, and the disagreement shares
    // link to them.
    let out3 = d.path().join("report-browser");
    std::fs::remove_file(&vf).unwrap();
    run_ok(
        &root(),
        &s,
        &[
            "report",
            "--metrics",
            &id(&judged, "metrics"),
            "--scores",
            &id(&judged, "scores"),
            "--out",
            out3.to_str().unwrap(),
        ],
    );
    let html = std::fs::read_to_string(out3.join("index.html")).unwrap();
    assert!(
        html.contains("condition=base&amp;model=mock-model&amp;prompt=imperfect-normal&amp;outcome=judge+%E2%89%A0+matcher\""),
        "no link to the base disagreements"
    );
    // Each response's tags (indices into the tag table): the two flipped
    // base rows differ, and every scored row has the file's verdict.
    let index = common::browser_index(&html);
    let names: Vec<&str> = index["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let rows_tagged = |tag: &str| {
        let Some(t) = names.iter().position(|n| *n == tag) else {
            return 0;
        };
        index["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r[4].as_array().unwrap().iter().any(|x| x == t))
            .count()
    };
    assert_eq!(rows_tagged("judge ≠ matcher"), 2, "{names:?}");
    let judged_rows = rows_tagged("judge: correct") + rows_tagged("judge: incorrect");
    assert_eq!(judged_rows, rows.iter().filter(|r| !r.failed).count());
    std::fs::write(&vf, &lines).unwrap();

    // `--matcher judge`: the headline families take the verdicts (the
    // `verdicts` group's figures), say so, and the agreement rows stay.
    let f = vf.to_str().unwrap();
    let (by_judge, _) = run_ok(
        &root(),
        &s,
        &[
            "score",
            "--responses",
            &responses,
            "--bootstrap",
            "50",
            "--verdicts",
            f,
            "--matcher",
            "judge",
        ],
    );
    let m2 = read::<Metrics>(&store, &id(&by_judge, "metrics")).unwrap();
    let headline = m2
        .iter()
        .find(|r| {
            r.study == "qa" && r.condition == "base" && r.metric == "acc" && r.breakdown.is_none()
        })
        .unwrap();
    assert_eq!(headline.value, acc("verdicts"));
    assert_ne!(headline.value, Some(string_acc), "two base rows flipped");
    assert!(headline
        .details
        .as_deref()
        .unwrap()
        .contains("\"matcher\":\"verdicts ("));
    let agreement = |ms: &[ragprobe_artifact::MetricRow]| -> Vec<(String, String, Option<f64>)> {
        ms.iter()
            .filter(|r| r.study == "matcher" || r.breakdown.is_some())
            .map(|r| (r.condition.clone(), r.metric.clone(), r.value))
            .collect()
    };
    assert_eq!(
        agreement(&m2),
        agreement(&metrics),
        "the side-by-side rows do not change"
    );
    let out2 = d.path().join("report-judge");
    run_ok(
        &root(),
        &s,
        &[
            "report",
            "--metrics",
            &id(&by_judge, "metrics"),
            "--out",
            out2.to_str().unwrap(),
        ],
    );
    let t = std::fs::read_to_string(out2.join("tables.md")).unwrap();
    assert!(t.contains("(score --matcher judge)"), "{t}");
    // Without verdicts there is nothing to take.
    let o = common::ragprobe(
        &s,
        &["score", "--responses", &responses, "--matcher", "judge"],
    );
    let err = common::stderr(&o);
    assert!(!o.status.success());
    assert!(err.contains("--matcher judge needs verdicts"), "{err}");
}

/// `score --judge` against the loopback mock (scripted: it answers the
/// judge template with each verdict, and sometimes in no such form): the
/// cascade sends exactly the responses on which exact match, substring
/// accuracy and `has_answer` disagree; an unparsed reply is counted, not a
/// verdict; a judging killed midway resumes without asking twice; a rerun
/// asks nothing; and the judge's verdicts imported as a file give the same
/// agreement figures.
#[test]
fn the_judge_cascade_resumes_and_matches_imported_verdicts() {
    let rt = common::runtime();
    let cfg = || MockConfig {
        replies: ragprobe_mock::Replies::Scripted,
        latency: std::time::Duration::from_millis(20),
        ..Default::default()
    };
    let m = rt.block_on(start(cfg(), 0)).unwrap();
    let d = tempfile::tempdir().unwrap();
    let s = d.path().join("s");
    let url = m.base_url();
    let (cases_id, responses) = mock_responses(&s, &url, "base,add-random,add-conflict");
    let store = Store::open(&s).unwrap();
    let cases: std::collections::HashMap<String, ragprobe_artifact::CaseRow> =
        read::<ragprobe_artifact::Cases>(&store, &cases_id)
            .unwrap()
            .into_iter()
            .map(|c| (c.case_id.clone(), c))
            .collect();
    let resp = read::<ragprobe_artifact::Responses>(&store, &responses).unwrap();
    // The cascade's rule, written out: the gold matchers disagree, or on
    // a case with a foil the foil matchers do, or both answers match.
    let differ = |a: &[String], t: &str| {
        let em = ragprobe_matching::squad::exact_match(t, a);
        let acc = ragprobe_matching::squad::accuracy(t, a);
        let has = ragprobe_matching::has_answer(a, t);
        !(em == acc && acc == has)
    };
    let disagree = resp
        .iter()
        .filter(|r| {
            let case = &cases[&r.case_id];
            let (Some(t), a) = (r.text.as_deref(), &case.answers) else {
                return false;
            };
            let foil = case.foil.iter().map(String::clone).collect::<Vec<_>>();
            let on_foil = !foil.is_empty()
                && (differ(&foil, t)
                    || (ragprobe_matching::squad::accuracy(t, a)
                        && ragprobe_matching::squad::accuracy(t, &foil)));
            !a.is_empty() && (differ(a, t) || on_foil)
        })
        .count();
    assert!(
        cases.values().any(|c| c.foil.is_some()),
        "add-conflict cases carry a foil"
    );
    let gradable = resp
        .iter()
        .filter(|r| r.text.is_some() && !cases[&r.case_id].answers.is_empty())
        .count();
    assert!(
        disagree > 0 && disagree < gradable,
        "{disagree} of {gradable}: the fixture has both"
    );

    let args = |url: &str, on: &str| -> Vec<String> {
        let judge = format!("openai:mock-model@{url}");
        [
            "score",
            "--responses",
            &responses,
            "--bootstrap",
            "50",
            "--judge",
            &judge,
            "--judge-on",
            on,
        ]
        .iter()
        .map(|x| x.to_string())
        .collect()
    };
    let before = m.stats.distinct_answered();
    let journaled = || common::journal_lines(&s);
    let journaled_before = journaled();

    // Killed midway through judging all rows, then resumed against a
    // fresh server: the resumed run asks nothing twice (the killed run's
    // calls in flight are the only ones lost).
    let killed_args = args(&url, "all");
    let killed_args: Vec<&str> = killed_args.iter().map(String::as_str).collect();
    let mut child = common::spawn(&s, &killed_args);
    let t0 = std::time::Instant::now();
    while journaled() < journaled_before + 3 && t0.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let killed_at = m.stats.distinct_answered() - before;
    assert!(
        killed_at < gradable,
        "killed midway ({killed_at} of {gradable})"
    );
    let m2 = rt.block_on(start(cfg(), 0)).unwrap();
    let url2 = m2.base_url();
    let a: Vec<String> = args(&url2, "all");
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let (all, err) = run_ok(&root(), &s, &a);
    assert!(
        err.contains(&format!(
            "judge: {gradable} of {gradable} gradable responses sent (all)"
        )),
        "{err}"
    );
    assert!(
        err.contains(" 0 failed;") && !err.contains(" 0 cached,"),
        "resumed: {err}"
    );
    assert_eq!(m2.stats.answered_twice(), 0);
    let asked = m2.stats.distinct_answered();
    let (_, err) = run_ok(&root(), &s, &a);
    assert!(
        err.contains("requests: 0 new"),
        "a rerun asks nothing: {err}"
    );
    assert_eq!(m2.stats.distinct_answered(), asked);

    // The cascade: only the disagreements (all judged above: no new request).
    let dis: Vec<String> = args(&url2, "disagreements");
    let dis: Vec<&str> = dis.iter().map(String::as_str).collect();
    let (cascade, err) = run_ok(&root(), &s, &dis);
    assert!(
        err.contains(&format!(
            "judge: {disagree} of {gradable} gradable responses sent (disagreements)"
        )),
        "{err}"
    );
    assert_eq!(
        m2.stats.distinct_answered(),
        asked,
        "the cascade's rows were among all"
    );

    // Unparsed replies are counted; the judge's verdicts as a file give
    // the same figures.
    let metrics = read::<Metrics>(&store, &id(&all, "metrics")).unwrap();
    let kappa = metrics
        .iter()
        .find(|r| r.study == "matcher" && r.metric == "kappa" && r.condition == "base")
        .unwrap();
    let det: serde_json::Value = serde_json::from_str(kappa.details.as_deref().unwrap()).unwrap();
    let made = &det["made_by"];
    assert_eq!(made["judged"], gradable as u64);
    let judgements = made["judgements"][0].as_str().unwrap();
    let judged = read::<ragprobe_artifact::Responses>(&store, judgements).unwrap();
    let mut lines = String::new();
    let mut unparsed = 0;
    for r in &judged {
        match ragprobe_score::agreement::Verdict::from_judge_reply(r.text.as_deref().unwrap()) {
            Some(v) => {
                let w = v.name();
                lines.push_str(&format!(
                    "{{\"id\": \"{}\", \"model\": \"mock-model\", \"verdict\": \"{w}\"}}\n",
                    r.case_id
                ));
            }
            None => unparsed += 1,
        }
    }
    assert!(
        unparsed > 0,
        "the mock replies in no verdict form sometimes"
    );
    assert_eq!(made["unparsed"], unparsed);
    let vf = d.path().join("judge-as-file.jsonl");
    std::fs::write(&vf, &lines).unwrap();
    let (imported, _) = score_with_verdicts(&s, &responses, &vf);
    let figures = |metrics_id: &str| -> Vec<(String, String, Option<f64>, i64)> {
        read::<Metrics>(&store, metrics_id)
            .unwrap()
            .into_iter()
            .filter(|r| r.study == "matcher")
            .map(|r| (r.condition, r.metric, r.value, r.n))
            .collect()
    };
    assert_eq!(
        figures(&id(&imported, "metrics")),
        figures(&id(&all, "metrics"))
    );
    // The report says how much the judge was asked.
    let out = d.path().join("judge-report");
    let metrics_all = id(&all, "metrics");
    let out_s = out.to_str().unwrap();
    // With the scores, the case browser tags each judged row with the
    // judge's verdict (read from the judgements the metrics name).
    let scores_all = id(&all, "scores");
    let report_args = [
        "report",
        "--metrics",
        &metrics_all,
        "--scores",
        &scores_all,
        "--out",
        out_s,
    ];
    run_ok(&root(), &s, &report_args);
    let md = std::fs::read_to_string(out.join("tables/matcher_agreement.md")).unwrap();
    let said =
        format!("{gradable} of {gradable} responses judged (all), {unparsed} unparsed, 0 failed");
    assert!(md.contains(&said), "{md}");
    // Each disagreement share links to the browser, filtered to the
    // responses it counts (the tag the browser gives them).
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(
        html.contains("condition=base&amp;model=mock-model&amp;prompt=imperfect-normal&amp;outcome=judge+%E2%89%A0+matcher\""),
        "no link to the base disagreements"
    );
    // The conflict cases were judged for the foil: their foil metrics.
    let foil_kappa = metrics
        .iter()
        .find(|r| r.study == "matcher" && r.metric == "foil_kappa" && r.condition == "add-conflict")
        .expect("foil_kappa for add-conflict");
    assert!(foil_kappa.n > 0);
    assert!(
        metrics
            .iter()
            .all(|r| !(r.study == "matcher" && r.metric == "foil_kappa" && r.condition == "base")),
        "no foil on base cases"
    );
    assert_ne!(
        figures(&id(&cascade, "metrics")),
        figures(&id(&all, "metrics"))
    );
}
