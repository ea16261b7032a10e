//! The `RecordFormat` extension point: a study's reader over JSON Lines
//! and over Parquet with nested (struct of lists) columns, as the
//! Hugging Face datasets ship them; bad records named by file and line.

use arrow::array::{ArrayRef, ListBuilder, StringArray, StringBuilder, StructArray};
use arrow::datatypes::{DataType, Field};
use ragprobe_artifact::{read, ContextRow, Contexts, QuestionRow, Questions, Store};
use ragprobe_ingest::{
    ingest, passage, FieldError, Format, IngestOptions, Obj, Record, RecordFormat,
};
use std::path::PathBuf;
use std::sync::Arc;

/// A multiple-choice record: `question`, `context`, `choices` {`label`,
/// `text`}, the answer the first option.
struct Choices;

impl RecordFormat for Choices {
    fn name(&self) -> &'static str {
        "test-choices"
    }
    fn description(&self) -> &'static str {
        "test records with choices"
    }
    fn version(&self) -> u32 {
        1
    }
    fn parse(&self, mut obj: Obj) -> Result<Record, FieldError> {
        let question = obj.req_str("question")?;
        let context = obj.req_str("context")?;
        let mut c = Obj::new(
            obj.take("choices").ok_or(FieldError::missing("choices"))?,
            "choices",
        )?;
        let labels = c.req_str_list("label")?;
        let texts = c.req_str_list("text")?;
        let mut record = Record::new(
            None,
            question,
            vec![texts[0].clone()],
            obj.rest(),
            vec![passage(1, "ctx".into(), None, context)],
        );
        record.row.options = Some(labels.into_iter().zip(texts).collect());
        Ok(record)
    }
}

fn ingest_one(path: PathBuf) -> (tempfile::TempDir, Vec<QuestionRow>, Vec<ContextRow>) {
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path().join("store")).unwrap();
    let r = ingest(
        &store,
        &IngestOptions {
            format: Some(Format::Records(&Choices)),
            paths: vec![path],
            ..Default::default()
        },
    )
    .unwrap();
    let q = read::<Questions>(&store, &r.outputs[0].id).unwrap();
    let c = read::<Contexts>(&store, &r.outputs[1].id).unwrap();
    (d, q, c)
}

fn parquet(dir: &std::path::Path) -> PathBuf {
    let list = |rows: &[&[&str]]| {
        let mut b = ListBuilder::new(StringBuilder::new());
        for r in rows {
            for v in *r {
                b.values().append_value(v);
            }
            b.append(true);
        }
        Arc::new(b.finish()) as ArrayRef
    };
    let labels = list(&[&["A", "B"], &["1", "2", "3"]]);
    let texts = list(&[&["yes", "no"], &["one", "two", "three"]]);
    let choices = StructArray::from(vec![
        (
            Arc::new(Field::new("label", labels.data_type().clone(), true)),
            labels,
        ),
        (
            Arc::new(Field::new("text", texts.data_type().clone(), true)),
            texts,
        ),
    ]);
    assert!(matches!(
        arrow::array::Array::data_type(&choices),
        DataType::Struct(_)
    ));
    let batch = arrow::record_batch::RecordBatch::try_from_iter(vec![
        (
            "question",
            Arc::new(StringArray::from(vec!["q1?", "q2?"])) as ArrayRef,
        ),
        (
            "context",
            Arc::new(StringArray::from(vec!["c1", "c2"])) as ArrayRef,
        ),
        ("choices", Arc::new(choices) as ArrayRef),
        (
            "num of options",
            Arc::new(StringArray::from(vec!["2", "3"])) as ArrayRef,
        ),
    ])
    .unwrap();
    let path = dir.join("test-00000-of-00001.parquet");
    let mut w = parquet::arrow::ArrowWriter::try_new(
        std::fs::File::create(&path).unwrap(),
        batch.schema(),
        None,
    )
    .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    path
}

#[test]
fn a_registered_format_reads_parquet_with_nested_columns() {
    let d = tempfile::tempdir().unwrap();
    let (_s, q, c) = ingest_one(parquet(d.path()));
    assert_eq!(q.len(), 2);
    assert_eq!(q[1].question, "q2?");
    assert_eq!(
        q[1].options.as_deref().unwrap(),
        [
            ("1".into(), "one".into()),
            ("2".into(), "two".into()),
            ("3".into(), "three".into())
        ]
    );
    assert_eq!(q[1].answers, ["one"]);
    // The unmapped column is kept, not dropped.
    assert!(q[1].meta.as_deref().unwrap().contains("num of options"));
    assert_eq!(c.len(), 2);
    assert_eq!(
        (c[1].qid.as_str(), c[1].text.as_str()),
        (q[1].qid.as_str(), "c2")
    );
}

#[test]
fn jsonl_gives_the_same_rows_and_a_bad_record_is_named() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("test-00000-of-00001.jsonl");
    std::fs::write(&p, concat!(
        r#"{"question": "q1?", "context": "c1", "choices": {"label": ["A", "B"], "text": ["yes", "no"]}, "num of options": "2"}"#, "\n",
        r#"{"question": "q2?", "context": "c2", "choices": {"label": ["1", "2", "3"], "text": ["one", "two", "three"]}, "num of options": "3"}"#, "\n",
    )).unwrap();
    let (_s, q, _c) = ingest_one(p.clone());
    let (_s2, qp, _c2) = ingest_one(parquet(d.path()));
    assert_eq!(q, qp, "a record reads the same from JSON Lines and Parquet");

    std::fs::write(&p, "{\"question\": \"q1?\", \"context\": \"c1\", \"choices\": {\"label\": [\"A\"], \"text\": [2.5, {}]}}\n").unwrap();
    let store = Store::open(d.path().join("s3")).unwrap();
    let e = ingest(
        &store,
        &IngestOptions {
            format: Some(Format::Records(&Choices)),
            paths: vec![p],
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains(".jsonl:1") && e.contains("choices.text[1]"),
        "{e}"
    );
}
