//! Every kind round-trips: rows written through `write_all` read back equal
//! (after the kind's canonical sort), for arbitrary rows including nulls,
//! empty lists, unicode and more rows than one batch.

use proptest::collection::vec;
use proptest::option::of;
use proptest::prelude::*;
use ragprobe_artifact::*;

fn vocab<E: Vocabulary + std::fmt::Debug>() -> impl Strategy<Value = E> {
    proptest::sample::select(E::ALL)
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![Just(String::new()), "[a-z]{1,6}", "\\PC{0,12}",]
}

fn texts() -> impl Strategy<Value = Vec<String>> {
    vec(text(), 0..4)
}

fn options() -> impl Strategy<Value = Option<Vec<(String, String)>>> {
    of(vec((text(), text()), 0..4))
}

fn question() -> impl Strategy<Value = QuestionRow> {
    (
        (text(), text(), of(text()), text(), text()),
        (
            texts(),
            of(vec(texts(), 0..3)),
            of(texts()),
            of(text()),
            options(),
            of(text()),
        ),
    )
        .prop_map(
            |(
                (qid, dataset, split, lang, question),
                (answers, answer_parts, fake_answers, subset, options, meta),
            )| QuestionRow {
                qid,
                dataset,
                split,
                lang,
                question,
                answers,
                answer_parts,
                fake_answers,
                subset,
                options,
                meta,
            },
        )
}

fn context() -> impl Strategy<Value = ContextRow> {
    (
        (text(), any::<i32>(), text(), of(text()), text()),
        (
            of(-1e9f64..1e9),
            of(any::<bool>()),
            of(text()),
            of(text()),
            of(text()),
        ),
    )
        .prop_map(
            |(
                (qid, rank, doc_id, title, text),
                (score, has_answer, has_answer_source, relevance, meta),
            )| ContextRow {
                qid,
                rank,
                doc_id,
                title,
                text,
                score,
                has_answer,
                has_answer_source,
                relevance,
                meta,
            },
        )
}

fn corpus() -> impl Strategy<Value = CorpusRow> {
    (text(), of(text()), text(), of(text())).prop_map(|(doc_id, title, text, meta)| CorpusRow {
        doc_id,
        title,
        text,
        meta,
    })
}

fn doc() -> impl Strategy<Value = CaseDoc> {
    (
        text(),
        of(text()),
        text(),
        vocab::<DocSource>(),
        of(any::<bool>()),
    )
        .prop_map(|(doc_id, title, text, source, has_answer)| CaseDoc {
            doc_id,
            title,
            text,
            source,
            has_answer,
        })
}

fn case() -> impl Strategy<Value = CaseRow> {
    (
        (
            text(),
            text(),
            text(),
            text(),
            text(),
            text(),
            vec(doc(), 0..4),
        ),
        (
            texts(),
            of(vec(texts(), 0..3)),
            vocab::<Expected>(),
            of(any::<i32>()),
            of(text()),
            of(text()),
            text(),
            options(),
        ),
    )
        .prop_map(
            |(
                (case_id, qid, dataset, lang, condition, question, docs),
                (
                    answers,
                    answer_parts,
                    expected,
                    inserted_at,
                    foil,
                    answer_position,
                    derivation,
                    options,
                ),
            )| CaseRow {
                case_id,
                qid,
                dataset,
                lang,
                condition,
                question,
                docs,
                answers,
                answer_parts,
                expected,
                inserted_at,
                foil,
                answer_position,
                derivation,
                options,
            },
        )
}

fn response() -> impl Strategy<Value = ResponseRow> {
    (
        (
            text(),
            text(),
            text(),
            text(),
            text(),
            0u32..1000,
            text(),
            text(),
            text(),
        ),
        (
            text(),
            of(text()),
            of(text()),
            of(0u32..100_000),
            of(0u32..100_000),
            of(vec(any::<u32>(), 0..6)),
            0u32..10,
            of(text()),
        ),
    )
        .prop_map(
            |(
                (
                    request_id,
                    case_id,
                    qid,
                    condition,
                    template,
                    template_version,
                    backend,
                    model,
                    messages,
                ),
                (
                    settings,
                    text,
                    finish_reason,
                    prompt_tokens,
                    completion_tokens,
                    token_ids,
                    attempts,
                    error,
                ),
            )| ResponseRow {
                request_id,
                case_id,
                qid,
                condition,
                template,
                template_version,
                backend,
                model,
                messages,
                settings,
                text,
                finish_reason,
                prompt_tokens,
                completion_tokens,
                token_ids,
                attempts,
                error,
            },
        )
}

fn flag() -> impl Strategy<Value = Option<bool>> {
    of(any::<bool>())
}

fn score() -> impl Strategy<Value = ScoreRow> {
    (
        (
            text(),
            text(),
            text(),
            text(),
            text(),
            text(),
            of(text()),
            of(text()),
            of(text()),
            text(),
        ),
        (
            text(),
            vocab::<Expected>(),
            of(text()),
            flag(),
            any::<bool>(),
            flag(),
            flag(),
            of(0.0f64..1.0),
            flag(),
            flag(),
        ),
        (
            flag(),
            flag(),
            flag(),
            of(text()),
            flag(),
            flag(),
            flag(),
            of(text()),
            of(text()),
            of(text()),
        ),
    )
        .prop_map(|(a, b, c)| ScoreRow {
            case_id: a.0,
            qid: a.1,
            dataset: a.2,
            lang: a.3,
            condition: a.4,
            prompt: a.5,
            prompt_study: a.6,
            prompt_role: a.7,
            prompt_variant: a.8,
            model: a.9,
            request_id: b.0,
            expected: b.1,
            answer_position: b.2,
            answerable: b.3,
            failed: b.4,
            flags: ragprobe_artifact::MatchFlags {
                accuracy: b.5,
                em: b.6,
                f1: b.7,
                says_unanswerable: b.8,
                says_conflict: b.9,
                foil_only: c.0,
                foil_any: c.1,
                foil_exact: c.2,
            },
            study: ragprobe_artifact::StudyCells {
                nomiracl_label: c.3,
                rgb_rejection: c.4,
                rgb_fact_error: c.5,
                rgb_correct: c.6,
            },
            mcq_choice: c.7,
            foil: c.8,
            response: c.9,
        })
}

fn metric() -> impl Strategy<Value = MetricRow> {
    (
        (text(), text(), text(), text(), text(), text()),
        (
            of(-1e6f64..1e6),
            any::<i64>(),
            of(0.0f64..1.0),
            of(0.0f64..1.0),
            of(text()),
        ),
    )
        .prop_map(
            |(
                (study, dataset, model, prompt, condition, metric),
                (value, n, ci_low, ci_high, details),
            )| MetricRow {
                study,
                dataset,
                model,
                prompt,
                condition,
                metric,
                value,
                n,
                ci_low,
                ci_high,
                details,
                breakdown: None,
                breakdown_group: None,
            },
        )
}

fn genadv() -> impl Strategy<Value = GenAdvRow> {
    (
        (text(), text(), text(), of(text()), of(text()), of(text())),
        (
            of(-1.0f64..1.0),
            of(text()),
            of(text()),
            vocab::<GenAdvStatus>(),
            of(text()),
        ),
    )
        .prop_map(
            |(
                (qid, purpose, answer, answer_sentence, entities, rewritten_sentence),
                (cosine, foil, passage, status, reason),
            )| GenAdvRow {
                qid,
                purpose,
                answer,
                answer_sentence,
                entities,
                rewritten_sentence,
                cosine,
                foil,
                passage,
                status,
                reason,
            },
        )
}

fn embedding() -> impl Strategy<Value = EmbeddingRow> {
    (text(), vec(any::<u8>(), 0..64)).prop_map(|(doc_id, vector)| EmbeddingRow { doc_id, vector })
}

/// Writes `rows` as kind `K` and reads them back: (expected, read).
fn roundtrip<K: Kind>(rows: Vec<K::Row>) -> (Vec<K::Row>, Vec<K::Row>)
where
    K::Row: Clone,
{
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let recipe = Recipe::new("test", 1, serde_json::json!({}));
    let w = write_all::<K>(&store, &recipe, rows.clone(), serde_json::Value::Null).unwrap();
    assert_eq!(w.rows, rows.len() as u64);
    let mut expected = rows;
    K::sort(&mut expected);
    (expected, read::<K>(&store, &w.id).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn questions(rows in vec(question(), 0..20)) {
        let (want, got) = roundtrip::<Questions>(rows);
        prop_assert_eq!(want, got);
    }

    /// `read_columns` reads the named columns as `read` does and leaves
    /// every other field at its default.
    #[test]
    fn questions_some_columns(rows in vec(question(), 0..20)) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let recipe = Recipe::new("test", 1, serde_json::json!({}));
        let w = write_all::<Questions>(&store, &recipe, rows, serde_json::Value::Null).unwrap();
        let got = read_columns::<Questions>(&store, &w.id, &["qid", "answers", "answer_parts"]).unwrap();
        let want: Vec<QuestionRow> = read::<Questions>(&store, &w.id)
            .unwrap()
            .into_iter()
            .map(|q| QuestionRow { qid: q.qid, answers: q.answers, answer_parts: q.answer_parts, ..Default::default() })
            .collect();
        prop_assert_eq!(want, got);
    }

    #[test]
    fn contexts(rows in vec(context(), 0..20)) {
        let (want, got) = roundtrip::<Contexts>(rows);
        prop_assert_eq!(want, got);
    }

    #[test]
    fn corpus_rows(rows in vec(corpus(), 0..20)) {
        let (want, got) = roundtrip::<Corpus>(rows);
        prop_assert_eq!(want, got);
    }

    #[test]
    fn cases(rows in vec(case(), 0..12)) {
        let (want, got) = roundtrip::<Cases>(rows);
        prop_assert_eq!(want, got);
    }

    #[test]
    fn responses(rows in vec(response(), 0..12)) {
        let (want, got) = roundtrip::<Responses>(rows);
        prop_assert_eq!(want, got);
    }

    #[test]
    fn scores(rows in vec(score(), 0..12)) {
        let (want, got) = roundtrip::<Scores>(rows);
        prop_assert_eq!(want, got);
    }

    #[test]
    fn metrics(rows in vec(metric(), 0..12)) {
        let (want, got) = roundtrip::<Metrics>(rows);
        prop_assert_eq!(want, got);
    }

    #[test]
    fn genadv_trails(rows in vec(genadv(), 0..12)) {
        let (want, got) = roundtrip::<GenAdv>(rows);
        prop_assert_eq!(want, got);
    }

    #[test]
    fn embeddings(rows in vec(embedding(), 0..6)) {
        let (want, got) = roundtrip::<Embeddings>(rows);
        prop_assert_eq!(want, got);
    }
}

/// More rows than one batch: the sink flushes and the reader joins batches.
#[test]
fn many_rows_span_batches() {
    let rows: Vec<CorpusRow> = (0..BATCH_ROWS * 2 + 7)
        .map(|i| CorpusRow {
            doc_id: format!("d{i}"),
            title: (i % 3 == 0).then(|| format!("t{i}")),
            text: "x".repeat(i % 5),
            meta: None,
        })
        .collect();
    let (want, got) = roundtrip::<Corpus>(rows);
    assert_eq!(want, got);
}

/// A reader's column error names the kind, the artifact and the column.
#[test]
fn a_missing_column_names_kind_artifact_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let recipe = Recipe::new("test", 1, serde_json::json!({}));
    let w = write_all::<Corpus>(
        &store,
        &recipe,
        vec![CorpusRow {
            doc_id: "d".into(),
            text: "t".into(),
            ..Default::default()
        }],
        serde_json::Value::Null,
    )
    .unwrap();
    let e = read::<Questions>(&store, &w.id).unwrap_err().to_string();
    assert!(
        e.contains("`questions` artifact") && e.contains(&w.id) && e.contains("`qid`"),
        "{e}"
    );
}
