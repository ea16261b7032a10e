//! Every fixture ingests with the counts its generator wrote, and the
//! retrieval metrics of the fixtures match the counts worked out by hand
//! (scripts/make-fixtures.py: 8 of the 40 NQ questions have no
//! answer-bearing passage among their six; 3 of the 30 PopQA items none).

use std::path::Path;

mod common;
use common::{fixtures, id_of};

/// `ragprobe --store STORE ARGS` in the fixtures; asserts success; (outputs, stderr).
fn rp(store: &Path, args: &[&str]) -> (Vec<(String, String)>, String) {
    common::run_ok(&fixtures(), store, args)
}

fn rows(store: &Path, id: &str) -> u64 {
    let s = ragprobe_artifact::Store::open(store).unwrap();
    s.manifest(id).unwrap().rows
}

#[test]
fn every_fixture_ingests_with_its_counts() {
    let d = tempfile::tempdir().unwrap();
    let store = d.path();
    let cases: &[(&[&str], &[(&str, u64)])] = &[
        (
            &["--format", "dpr", "nq-mini.jsonl"],
            &[("questions", 40), ("contexts", 240)],
        ),
        (
            &["--format", "dpr", "nq-mini.jsonl.gz"],
            &[("questions", 40), ("contexts", 240)],
        ),
        (
            &["--format", "dpr", "nq-mini-array.json"],
            &[("questions", 10), ("contexts", 60)],
        ),
        (
            &["--format", "selfrag", "popqa-mini.jsonl"],
            &[("questions", 30), ("contexts", 150)],
        ),
        (&["--format", "rgb", "rgb-mini.jsonl"], &[("questions", 30)]),
        (
            &["--format", "rgb", "rgb-zh-mini.jsonl"],
            &[("questions", 10)],
        ),
        (
            &[
                "--format",
                "nomiracl",
                "nomiracl-mini/en.dev.jsonl",
                "nomiracl-mini/de.dev.jsonl",
            ],
            &[("questions", 32), ("contexts", 320)],
        ),
        (
            &["--format", "beir", "corpus"],
            &[("questions", 40), ("contexts", 50), ("corpus", 75)],
        ),
        (
            &[
                "--format",
                "table",
                "table-mini.csv",
                "--col-id",
                "id",
                "--answers-sep",
                "|",
                "--col-lang",
                "lang",
            ],
            &[("questions", 30)],
        ),
        (
            &[
                "--format",
                "table",
                "table-mini.jsonl",
                "--col-id",
                "qid",
                "--col-question",
                "query",
                "--col-answers",
                "gold",
            ],
            &[("questions", 30)],
        ),
    ];
    for (args, expected) in cases {
        let mut full = vec!["ingest"];
        full.extend_from_slice(args);
        let (outs, _) = rp(store, &full);
        for (kind, n) in *expected {
            assert_eq!(rows(store, id_of(&outs, kind)), *n, "{args:?} {kind}");
        }
    }
    // Languages: from the NoMIRACL file names, and by script for RGB Chinese.
    let s = ragprobe_artifact::Store::open(store).unwrap();
    let (outs, _) = rp(
        store,
        &[
            "ingest",
            "--format",
            "nomiracl",
            "nomiracl-mini/en.dev.jsonl",
            "nomiracl-mini/de.dev.jsonl",
        ],
    );
    let qs = ragprobe_artifact::read::<ragprobe_artifact::Questions>(&s, id_of(&outs, "questions"))
        .unwrap();
    assert_eq!(qs.iter().filter(|q| q.lang == "de").count(), 12);
    assert_eq!(
        qs.iter()
            .filter(|q| q.subset.as_deref() == Some("relevant"))
            .count(),
        16
    );
    let (outs, _) = rp(store, &["ingest", "--format", "rgb", "rgb-zh-mini.jsonl"]);
    let qs = ragprobe_artifact::read::<ragprobe_artifact::Questions>(&s, id_of(&outs, "questions"))
        .unwrap();
    assert!(qs.iter().all(|q| q.lang == "zh"));
    // RGB multi-part answers keep their structure.
    let (outs, _) = rp(store, &["ingest", "--format", "rgb", "rgb-mini.jsonl"]);
    let qs = ragprobe_artifact::read::<ragprobe_artifact::Questions>(&s, id_of(&outs, "questions"))
        .unwrap();
    assert_eq!(
        qs.iter()
            .filter(|q| q.answer_parts.as_ref().is_some_and(|p| p.len() > 1))
            .count(),
        4
    );
    assert_eq!(qs.iter().filter(|q| q.fake_answers.is_some()).count(), 20);
}

#[test]
fn recall_of_the_fixture_contexts_matches_the_hand_counts() {
    let d = tempfile::tempdir().unwrap();
    let store = d.path();
    let (outs, _) = rp(store, &["ingest", "--format", "dpr", "nq-mini.jsonl"]);
    let (m, table) = rp(
        store,
        &[
            "recall",
            "--questions",
            id_of(&outs, "questions"),
            "--contexts",
            id_of(&outs, "contexts"),
            "-k",
            "5",
        ],
    );
    // 32 of 40 answerable in the top 5 (8 unanswerable by construction).
    assert!(
        table.contains("nq-mini                        40       80.0       20.0"),
        "{table}"
    );
    let metrics = ragprobe_artifact::read::<ragprobe_artifact::Metrics>(
        &ragprobe_artifact::Store::open(store).unwrap(),
        id_of(&m, "metrics"),
    )
    .unwrap();
    let recall = metrics.iter().find(|r| r.metric == "recall@5").unwrap();
    assert_eq!((recall.value, recall.n), (Some(80.0), 40));
    let (outs, _) = rp(
        store,
        &["ingest", "--format", "selfrag", "popqa-mini.jsonl"],
    );
    let (_, table) = rp(
        store,
        &[
            "recall",
            "--questions",
            id_of(&outs, "questions"),
            "--contexts",
            id_of(&outs, "contexts"),
            "-k",
            "5",
        ],
    );
    // 27 of 30 (items 4009, 4020 and 4026 have no answer in their passages).
    assert!(
        table.contains("popqa-mini                     30       90.0       10.0"),
        "{table}"
    );
}

#[test]
fn bm25_retrieval_over_the_fixture_corpus_is_cached_on_rerun() {
    let d = tempfile::tempdir().unwrap();
    let store = d.path();
    let (outs, _) = rp(store, &["ingest", "--format", "beir", "corpus"]);
    let args = [
        "retrieve",
        "--corpus",
        id_of(&outs, "corpus"),
        "--questions",
        id_of(&outs, "questions"),
        "-k",
        "5",
        "--extra",
        "1",
    ];
    let (first, table) = rp(store, &args);
    assert!(table.contains("Recall@5"), "{table}");
    assert_eq!(rows(store, id_of(&first, "contexts")), 40 * 6);
    let (second, log) = rp(store, &args);
    assert_eq!(first, second);
    assert!(log.contains("cached, not run"), "{log}");
}
