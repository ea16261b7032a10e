//! Retrieval on hand-built inputs: rankings, has_answer, Recall@k counted
//! by hand, caching, determinism and errors.

use ragprobe_artifact::{
    read, ContextRow, Contexts, Corpus, CorpusRow, QuestionRow, Questions, Recipe, Sink, Store,
};
use ragprobe_retrieve::{evaluate, retrieve, Method, RetrieveError, RetrieveOptions};
use serde_json::json;

const PASSAGES: &[(&str, &str, &str)] = &[
    (
        "p1",
        "Eiffel Tower",
        "The Eiffel Tower in Paris was completed in 1889 for the World's Fair.",
    ),
    (
        "p2",
        "Danube",
        "The Danube flows through Vienna, Budapest and Belgrade before reaching the Black Sea.",
    ),
    (
        "p3",
        "Mount Everest",
        "Mount Everest is the highest mountain above sea level, at 8,849 metres.",
    ),
    (
        "p4",
        "Pride and Prejudice",
        "Pride and Prejudice is a novel by Jane Austen, published in 1813.",
    ),
    (
        "p5",
        "Paris",
        "Paris is the capital of France and hosts many museums such as the Louvre.",
    ),
    (
        "p6",
        "Tower Bridge",
        "Tower Bridge in London crosses the River Thames and opened in 1894.",
    ),
];

/// (qid, question, answers, dataset)
const QUESTIONS: &[(&str, &str, &[&str], &str)] = &[
    ("a", "When was the Eiffel Tower completed?", &["1889"], "d1"),
    (
        "b",
        "Which river flows through Vienna and Budapest?",
        &["Danube"],
        "d1",
    ),
    (
        "c",
        "Who wrote the novel Pride and Prejudice?",
        &["Jane Austen", "Austen"],
        "d1",
    ),
    // No passage holds the answer: unanswerable at any k.
    ("d", "How tall is the Eiffel Tower?", &["330 metres"], "d2"),
    // No gold answers: left out of Recall.
    ("e", "Tell me about bridges in London", &[], "d2"),
];

fn setup(dir: &std::path::Path) -> (Store, String, String) {
    let store = Store::open(dir).unwrap();
    let r = Recipe::new("test-input", 1, json!({}));
    let mut c = Sink::<Corpus>::new(&store, &r).unwrap();
    for (id, title, text) in PASSAGES {
        c.push(CorpusRow {
            doc_id: id.to_string(),
            title: Some(title.to_string()),
            text: text.to_string(),
            meta: None,
        })
        .unwrap();
    }
    let corpus = c.finish(json!(null)).unwrap().id;
    let mut q = Sink::<Questions>::new(&store, &r).unwrap();
    for (qid, text, answers, dataset) in QUESTIONS {
        q.push(QuestionRow {
            qid: qid.to_string(),
            dataset: dataset.to_string(),
            lang: "en".into(),
            question: text.to_string(),
            answers: answers.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        })
        .unwrap();
    }
    let questions = q.finish(json!(null)).unwrap().id;
    (store, corpus, questions)
}

fn by_qid(rows: &[ContextRow], qid: &str) -> Vec<ContextRow> {
    rows.iter().filter(|r| r.qid == qid).cloned().collect()
}

#[test]
fn bm25_ranks_the_answer_passage_first_and_labels_has_answer() {
    let d = tempfile::tempdir().unwrap();
    let (store, corpus, questions) = setup(d.path());
    let opts = RetrieveOptions {
        method: Method::Bm25,
        k: 2,
        extra: 1,
        ..Default::default()
    };
    let r = retrieve(&store, &corpus, &questions, &opts, None).unwrap();
    assert!(!r.cached);
    let rows = read::<Contexts>(&store, &r.contexts.id).unwrap();
    assert_eq!(
        rows.len(),
        5 * 3,
        "k + extra passages for each of 5 questions"
    );
    for (qid, doc) in [("a", "p1"), ("b", "p2"), ("c", "p4")] {
        let top = &by_qid(&rows, qid)[0];
        assert_eq!((top.rank, top.doc_id.as_str()), (1, doc), "{qid}");
        assert_eq!(top.has_answer, Some(true), "{qid}");
        assert_eq!(top.has_answer_source.as_deref(), Some("computed"));
    }
    let d_rows = by_qid(&rows, "d");
    assert!(d_rows.iter().all(|r| r.has_answer == Some(false)));
    assert!(by_qid(&rows, "e").iter().all(|r| r.has_answer.is_none()));
    // Scores descend within a question.
    for qid in ["a", "b", "c", "d", "e"] {
        let s: Vec<f64> = by_qid(&rows, qid)
            .iter()
            .map(|r| r.score.unwrap())
            .collect();
        assert!(s.windows(2).all(|w| w[0] >= w[1]), "{qid}: {s:?}");
    }
    // Table 3 by hand: d1 has 3 questions, all answerable -> 100 / 0;
    // d2 has one judged question (d), unanswerable -> 0 / 100; e left out.
    let d1 = r.recall.iter().find(|x| x.dataset == "d1").unwrap();
    let d2 = r.recall.iter().find(|x| x.dataset == "d2").unwrap();
    assert_eq!(
        (d1.size, d1.answerable, d1.recall(), d1.unans()),
        (3, 3, Some(100.0), Some(0.0))
    );
    assert_eq!(
        (d2.size, d2.answerable, d2.no_gold, d2.recall(), d2.unans()),
        (1, 0, 1, Some(0.0), Some(100.0))
    );
}

#[test]
fn recall_counts_only_ranks_up_to_k() {
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path()).unwrap();
    let r = Recipe::new("test-input", 1, json!({}));
    let mut q = Sink::<Questions>::new(&store, &r).unwrap();
    for qid in ["x", "y", "z", "w"] {
        q.push(QuestionRow {
            qid: qid.into(),
            dataset: "hand".into(),
            lang: "en".into(),
            question: "?".into(),
            answers: vec!["a".into()],
            ..Default::default()
        })
        .unwrap();
    }
    let questions = q.finish(json!(null)).unwrap().id;
    // x: answer at rank 1; y: at rank 3; z: at rank 6 (the extra passage); w: none.
    let mut c = Sink::<Contexts>::new(&store, &r).unwrap();
    for (qid, answer_rank) in [("x", 1), ("y", 3), ("z", 6), ("w", 0)] {
        for rank in 1..=6 {
            c.push(ContextRow {
                qid: qid.into(),
                rank,
                doc_id: format!("{qid}{rank}"),
                text: "t".into(),
                has_answer: Some(rank == answer_rank),
                ..Default::default()
            })
            .unwrap();
        }
    }
    let contexts = c.finish(json!(null)).unwrap().id;
    let (_, rows, _) = evaluate(&store, &questions, &contexts, 5).unwrap();
    // Recall@5 = 2/4 = 50.0 (x, y), Unans = 50.0
    assert_eq!(
        (
            rows[0].size,
            rows[0].answerable,
            rows[0].recall(),
            rows[0].unans()
        ),
        (4, 2, Some(50.0), Some(50.0))
    );
    let (_, rows, _) = evaluate(&store, &questions, &contexts, 1).unwrap();
    assert_eq!(rows[0].recall(), Some(25.0));
    let (_, rows, _) = evaluate(&store, &questions, &contexts, 6).unwrap();
    assert_eq!(rows[0].recall(), Some(75.0));
    let (_, _, cached) = evaluate(&store, &questions, &contexts, 6).unwrap();
    assert!(cached);
}

#[test]
fn a_rerun_is_cached_and_two_stores_agree() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (s1, c1, q1) = setup(d1.path());
    let (s2, c2, q2) = setup(d2.path());
    let opts = RetrieveOptions {
        k: 3,
        ..Default::default()
    };
    let a = retrieve(&s1, &c1, &q1, &opts, None).unwrap();
    let b = retrieve(&s1, &c1, &q1, &opts, None).unwrap();
    assert!(b.cached);
    assert_eq!(
        (a.contexts.id.clone(), a.metrics.id.clone()),
        (b.contexts.id, b.metrics.id)
    );
    assert_eq!(a.recall, b.recall);
    let c = retrieve(&s2, &c2, &q2, &opts, None).unwrap();
    assert_eq!(
        a.contexts.id, c.contexts.id,
        "same inputs, same bytes in another store"
    );
}

#[test]
fn bad_requests_are_clear_errors() {
    let d = tempfile::tempdir().unwrap();
    let (store, corpus, questions) = setup(d.path());
    let k0 = RetrieveOptions {
        k: 0,
        ..Default::default()
    };
    let e = retrieve(&store, &corpus, &questions, &k0, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("-k must be at least 1"), "{e}");
    let e = retrieve(
        &store,
        &questions,
        &questions,
        &RetrieveOptions::default(),
        None,
    )
    .unwrap_err();
    assert!(e.to_string().contains("expected `corpus`"), "{e}");
    let e = retrieve(
        &store,
        &corpus,
        &questions,
        &RetrieveOptions {
            method: Method::Dense,
            ..Default::default()
        },
        None,
    )
    .unwrap_err();
    assert!(
        matches!(e, RetrieveError::Invalid(_))
            && e.to_string().contains("needs an embedding model"),
        "{e}"
    );
    // An empty question text.
    let r = Recipe::new("test-input", 2, json!({}));
    let mut q = Sink::<Questions>::new(&store, &r).unwrap();
    q.push(QuestionRow {
        qid: "blank".into(),
        dataset: "x".into(),
        lang: "en".into(),
        question: "  ".into(),
        answers: vec!["a".into()],
        ..Default::default()
    })
    .unwrap();
    let blank = q.finish(json!(null)).unwrap().id;
    let e = retrieve(&store, &corpus, &blank, &RetrieveOptions::default(), None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("`blank`") && e.contains("empty question"), "{e}");
}

#[test]
fn dense_and_hybrid_retrieval_with_minilm() {
    let dir = ragprobe_models::paths::minilm_dir();
    if !dir.join("model.safetensors").is_file() {
        eprintln!("SKIPPED: MiniLM model not found in {} (run `bash scripts/fetch-models.sh`; `make test` does)", dir.display());
        return;
    }
    let embedder = ragprobe_models::TextEncoder::Local(Box::new(
        ragprobe_models::Embedder::load(&dir).unwrap(),
    ));
    let d = tempfile::tempdir().unwrap();
    let (store, corpus, questions) = setup(d.path());
    for method in [Method::Dense, Method::Hybrid] {
        let opts = RetrieveOptions {
            method,
            k: 2,
            ..Default::default()
        };
        let r = retrieve(&store, &corpus, &questions, &opts, Some(&embedder)).unwrap();
        let rows = read::<Contexts>(&store, &r.contexts.id).unwrap();
        for (qid, doc) in [("a", "p1"), ("b", "p2"), ("c", "p4")] {
            assert_eq!(by_qid(&rows, qid)[0].doc_id, doc, "{method:?} {qid}");
        }
        let again = retrieve(&store, &corpus, &questions, &opts, Some(&embedder)).unwrap();
        assert!(again.cached);
        assert_eq!(again.contexts.id, r.contexts.id);
    }
    // Dense scores are cosines.
    let r = retrieve(
        &store,
        &corpus,
        &questions,
        &RetrieveOptions {
            method: Method::Dense,
            k: 6,
            ..Default::default()
        },
        Some(&embedder),
    )
    .unwrap();
    let rows = read::<Contexts>(&store, &r.contexts.id).unwrap();
    assert!(rows
        .iter()
        .all(|c| c.score.unwrap() <= 1.0001 && c.score.unwrap() >= -1.0001));
}
