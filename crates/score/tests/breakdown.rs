//! `score --by` end to end: a binned popularity breakdown of external
//! predictions, against accuracies counted by hand.

use ragprobe_artifact::{kinds, write_all, MetricRow, QuestionRow, Recipe, Store};
use ragprobe_score::breakdown::{Bins, Breakdown};
use ragprobe_score::predictions::{score_predictions, OnDuplicate, PredictionColumns};
use ragprobe_score::ScoreOptions;

fn question(qid: &str, answer: &str, meta: &str) -> QuestionRow {
    QuestionRow {
        qid: qid.into(),
        dataset: "popqa".into(),
        lang: "en".into(),
        question: format!("where is {qid}?"),
        answers: vec![answer.into()],
        meta: Some(meta.into()),
        ..Default::default()
    }
}

fn acc<'a>(rows: &'a [MetricRow], group: Option<&str>) -> &'a MetricRow {
    rows.iter()
        .find(|r| r.study == "qa" && r.metric == "acc" && r.breakdown_group.as_deref() == group)
        .unwrap_or_else(|| panic!("no acc row for group {group:?}"))
}

#[test]
fn accuracy_per_popularity_bin_matches_the_hand_count() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("store")).unwrap();
    // s_pop: q1 50, q2 500, q3 700, q4 5000, q5 missing.
    let qs = vec![
        question("q1", "Paris", r#"{"s_pop": 50}"#),
        question("q2", "Berlin", r#"{"s_pop": 500}"#),
        question("q3", "Rome", r#"{"s_pop": 700}"#),
        question("q4", "Madrid", r#"{"s_pop": 5000}"#),
        question("q5", "Oslo", r#"{"other": 1}"#),
    ];
    let q = write_all::<kinds::Questions>(
        &store,
        &Recipe::new("ingest", 1, serde_json::json!({})),
        qs,
        serde_json::Value::Null,
    )
    .unwrap();
    // Correct: q1, q3, q4 (substring); wrong: q2, q5.
    let preds = dir.path().join("preds.jsonl");
    std::fs::write(
        &preds,
        [
            r#"{"id": "q1", "prediction": "Paris"}"#,
            r#"{"id": "q2", "prediction": "Munich"}"#,
            r#"{"id": "q3", "prediction": "rome"}"#,
            r#"{"id": "q4", "prediction": "Madrid, Spain"}"#,
            r#"{"id": "q5", "prediction": "no idea"}"#,
        ]
        .join("\n"),
    )
    .unwrap();
    let cols = PredictionColumns {
        id: "id".into(),
        prediction: "prediction".into(),
        model: None,
        role: None,
        on_duplicate: OnDuplicate::Error,
    };
    let opts = ScoreOptions {
        bootstrap: 100,
        breakdown: Some(Breakdown {
            columns: vec!["meta.s_pop".into()],
            bins: "100,1000".parse::<Bins>().unwrap(),
        }),
        studies: ragprobe_studies::studies(),
        ..Default::default()
    };
    let (report, _) = score_predictions(&store, &preds, &q.id, &cols, &opts).unwrap();
    let rows = &report.rows;
    // Overall: 3 of 5.
    assert_eq!((acc(rows, None).value, acc(rows, None).n), (Some(60.0), 5));
    assert!(acc(rows, None).breakdown.is_none());
    // [-inf, 100): q1 1/1; [100, 1000): q2, q3 1/2; [1000, inf): q4 1/1; (none): q5 0/1.
    for (group, value, n) in [
        ("[-inf, 100)", 100.0, 1),
        ("[100, 1000)", 50.0, 2),
        ("[1000, inf)", 100.0, 1),
        ("(none)", 0.0, 1),
    ] {
        let r = acc(rows, Some(group));
        assert_eq!((r.value, r.n), (Some(value), n), "{group}");
        assert_eq!(r.breakdown.as_deref(), Some("meta.s_pop"));
    }
    // The artifact holds the same rows, groups in bin order.
    let stored =
        ragprobe_artifact::read::<ragprobe_artifact::Metrics>(&store, &report.metrics.id).unwrap();
    let groups: Vec<&str> = stored
        .iter()
        .filter(|r| r.metric == "acc" && r.breakdown.is_some())
        .map(|r| r.breakdown_group.as_deref().unwrap())
        .collect();
    assert_eq!(
        groups,
        ["[-inf, 100)", "[100, 1000)", "[1000, inf)", "(none)"]
    );
    // The breakdown is part of the recipe: without it, another action.
    let plain = ScoreOptions {
        bootstrap: 100,
        studies: ragprobe_studies::studies(),
        ..Default::default()
    };
    let (again, _) = score_predictions(&store, &preds, &q.id, &cols, &plain).unwrap();
    assert!(!again.cached);
    assert!(again.rows.iter().all(|r| r.breakdown.is_none()));
}
