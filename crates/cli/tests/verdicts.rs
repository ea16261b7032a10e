//! `score --verdicts`: imported verdicts (people's labels or another tool's
//! judge) set against the string matcher, end to end: responses from the
//! loopback mock, verdicts written from the scored rows with some flipped,
//! and the `matcher` metrics and report table that come out.

use ragprobe_artifact::{read, Metrics, Scores, Store};
use ragprobe_mock::{start, MockConfig};

mod common;
use common::{root, run_ok};

#[test]
fn imported_verdicts_give_agreement_and_kappa() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let m = rt.block_on(start(MockConfig::default(), 0)).unwrap();
    let d = tempfile::tempdir().unwrap();
    let s = d.path().join("s");
    let id = |outs: &[(String, String)], kind: &str| {
        outs.iter().find(|(k, _)| k == kind).unwrap().1.clone()
    };
    let (q, _) = run_ok(
        &root(),
        &s,
        &["ingest", "--format", "dpr", "fixtures/nq-mini.jsonl"],
    );
    let (c, _) = run_ok(
        &root(),
        &s,
        &[
            "perturb",
            "--questions",
            &id(&q, "questions"),
            "--contexts",
            &id(&q, "contexts"),
            "-s",
            "closed-book,base",
        ],
    );
    let url = m.base_url();
    let (g, _) = run_ok(
        &root(),
        &s,
        &[
            "generate",
            "--cases",
            &id(&c, "cases"),
            "--prompt",
            "imperfect-normal",
            "--backend",
            "openai",
            "--base-url",
            &url,
            "--model",
            "mock-model",
        ],
    );
    let responses = id(&g, "responses");
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
        let mut correct = r.accuracy == Some(true);
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
    std::fs::write(&vf, lines).unwrap();

    let (judged, err) = run_ok(
        &root(),
        &s,
        &[
            "score",
            "--responses",
            &responses,
            "--bootstrap",
            "50",
            "--verdicts",
            vf.to_str().unwrap(),
        ],
    );
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
    let string_acc = 100.0 * base.iter().filter(|r| r.accuracy == Some(true)).count() as f64 / n;
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
        cm["both_correct"].as_f64().unwrap(),
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
}
