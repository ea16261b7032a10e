//! The score stage's extension point: it computes the metric families it
//! is given (a study outside the crate plugs in with no change to it), and
//! refuses to score with none rather than write a metrics artifact without
//! metrics.

use ragprobe_artifact::{kinds, write_all, QuestionRow, Recipe, Store};
use ragprobe_score::metrics::{Clusters, Key, MetricFamilies, Out, Studies};
use ragprobe_score::predictions::{score_predictions, PredictionColumns};
use ragprobe_score::scored::Scored;
use ragprobe_score::ScoreOptions;
use serde_json::json;

/// A study defined here: the share of responses judged correct, over every
/// row that did not fail.
struct Correct;

impl MetricFamilies for Correct {
    fn name(&self) -> &'static str {
        "correct-share"
    }
    fn compute(&self, rows: &[Scored], out: &mut Out) {
        let mut c = Clusters::default();
        for r in rows.iter().filter(|r| !r.failed) {
            c.add(
                r.qid,
                ragprobe_score::metrics::b(r.flags.accuracy == Some(true)),
            );
        }
        let k = Key {
            study: "correct-share",
            dataset: "all".into(),
            model: "all".into(),
            prompt: "all".into(),
        };
        out.mean(
            &k,
            "all",
            "share",
            &c,
            100.0,
            json!({"definition": "correct / rows"}),
        );
    }
}

static CORRECT: &[&dyn MetricFamilies] = &[&Correct];

/// A study that only judges: it labels every response it is shown.
struct Labels;

impl MetricFamilies for Labels {
    fn name(&self) -> &'static str {
        "labels"
    }
    fn judge(
        &self,
        _case: &ragprobe_artifact::CaseRow,
        text: &str,
        _mode: ragprobe_matching::parse::ParseMode,
        row: &mut ragprobe_artifact::ScoreRow,
    ) {
        row.study.nomiracl_label = Some(format!("seen {}", text.len()));
    }
    fn compute(&self, _rows: &[Scored], _out: &mut Out) {}
}

static LABELS: &[&dyn MetricFamilies] = &[&Correct, &Labels];

fn setup(dir: &std::path::Path) -> (Store, std::path::PathBuf, String) {
    let store = Store::open(dir.join("store")).unwrap();
    let qs: Vec<QuestionRow> = ["Paris", "Berlin", "Rome", "Oslo"]
        .iter()
        .enumerate()
        .map(|(i, a)| QuestionRow {
            qid: format!("q{i}"),
            dataset: "d".into(),
            lang: "en".into(),
            question: format!("question {i}?"),
            answers: vec![(*a).into()],
            ..Default::default()
        })
        .collect();
    let q = write_all::<kinds::Questions>(
        &store,
        &Recipe::new("ingest", 1, json!({})),
        qs,
        json!(null),
    )
    .unwrap();
    let preds = dir.join("preds.jsonl");
    std::fs::write(
        &preds,
        r#"{"id": "q0", "prediction": "Paris"}
{"id": "q1", "prediction": "Munich"}
{"id": "q2", "prediction": "Rome"}
{"id": "q3", "prediction": "Bergen"}
"#,
    )
    .unwrap();
    (store, preds, q.id)
}

#[test]
fn a_family_registered_from_outside_the_crate_is_computed() {
    let dir = tempfile::tempdir().unwrap();
    let (store, preds, q) = setup(dir.path());
    let opts = ScoreOptions {
        bootstrap: 50,
        studies: Studies(CORRECT),
        ..Default::default()
    };
    let (report, _) =
        score_predictions(&store, &preds, &q, &PredictionColumns::default(), &opts).unwrap();
    let rows: Vec<_> = report
        .rows
        .iter()
        .filter(|r| r.study == "correct-share")
        .collect();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].value, Some(50.0));
    assert_eq!(rows[0].n, 4);
    // Only the registered study: none of the built-in families ran.
    assert!(report.rows.iter().all(|r| r.study == "correct-share"));
}

#[test]
fn scoring_with_no_registered_study_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (store, preds, q) = setup(dir.path());
    let e = score_predictions(
        &store,
        &preds,
        &q,
        &PredictionColumns::default(),
        &ScoreOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("no study is registered"), "{e}");
    assert!(
        store.list().unwrap().len() == 1,
        "nothing but the questions in the store"
    );
}

#[test]
fn a_registered_study_judges_every_response_and_an_absent_one_none() {
    let dir = tempfile::tempdir().unwrap();
    let (store, preds, q) = setup(dir.path());
    let labels = |studies| {
        let opts = ScoreOptions {
            bootstrap: 10,
            studies: Studies(studies),
            ..Default::default()
        };
        let (report, _) =
            score_predictions(&store, &preds, &q, &PredictionColumns::default(), &opts).unwrap();
        let mut l: Vec<Option<String>> =
            ragprobe_artifact::read::<ragprobe_artifact::Scores>(&store, &report.scores.id)
                .unwrap()
                .into_iter()
                .map(|r| r.study.nomiracl_label)
                .collect();
        l.sort();
        l
    };
    assert_eq!(labels(CORRECT), vec![None; 4]);
    assert_eq!(
        labels(LABELS),
        ["seen 4", "seen 5", "seen 6", "seen 6"]
            .map(|s| Some(s.to_string()))
            .to_vec()
    );
}

/// External predictions are held to the same options as responses: a
/// conflict share outside (0, 1] is refused before anything is written
/// (it was used silently).
#[test]
fn predictions_refuse_a_conflict_share_outside_the_unit_interval() {
    let dir = tempfile::tempdir().unwrap();
    let (store, preds, q) = setup(dir.path());
    let opts = ScoreOptions {
        conflict_share: Some(1.5),
        studies: Studies(CORRECT),
        ..Default::default()
    };
    let e = score_predictions(&store, &preds, &q, &PredictionColumns::default(), &opts)
        .unwrap_err()
        .to_string();
    assert!(e.contains("--conflict-share 1.5 must be in (0, 1]"), "{e}");
    assert_eq!(store.list().unwrap().len(), 1, "only the questions");
}
