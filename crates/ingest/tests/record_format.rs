//! The `RecordFormat` extension point: a study's reader over JSON Lines
//! and over Parquet with nested (struct of lists) columns, as the
//! Hugging Face datasets ship them; bad records named by file and line.

use arrow::array::{ArrayRef, ListBuilder, StringArray, StringBuilder, StructArray};
use arrow::datatypes::{DataType, Field};
use ragprobe_artifact::{read, ContextRow, Contexts, QuestionRow, Questions, Store};
use ragprobe_ingest::{
    ingest, passage, FieldError, Format, IngestError, IngestOptions, Obj, OnError, ReadOptions,
    Record, RecordFormat,
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
    fn parse(&self, mut obj: Obj, _: &ReadOptions<'_>) -> Result<Record, FieldError> {
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

/// A distribution of one question per `*.q` file in a directory (sorted by
/// name), the language the directory's name; its subset from `--subset`.
struct Dirs;

impl RecordFormat for Dirs {
    fn name(&self) -> &'static str {
        "test-dirs"
    }
    fn description(&self) -> &'static str {
        "test distribution directory"
    }
    fn version(&self) -> u32 {
        0
    }
    fn parse(&self, mut obj: Obj, options: &ReadOptions<'_>) -> Result<Record, FieldError> {
        let mut r = Record::new(None, obj.req_str("q")?, vec![], None, vec![]);
        r.row.subset = options.subset.map(String::from);
        Ok(r)
    }
    fn language_of(&self, path: &std::path::Path) -> Option<String> {
        path.file_name()?
            .to_str()?
            .strip_prefix("lang-")
            .map(String::from)
    }
    fn reads_directories(&self) -> bool {
        true
    }
    fn read_directory(
        &self,
        dir: &std::path::Path,
        options: &ReadOptions<'_>,
    ) -> Result<Vec<Result<Record, IngestError>>, IngestError> {
        let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        Ok(names
            .into_iter()
            .map(|p| {
                let text = std::fs::read_to_string(&p).unwrap();
                if text.trim().is_empty() {
                    return Err(IngestError::Record {
                        file: p.display().to_string(),
                        line: 1,
                        message: "field `q` is empty".into(),
                    });
                }
                let mut r = Record::new(
                    Some(text.trim().into()),
                    text.trim().into(),
                    vec![],
                    None,
                    vec![],
                );
                r.row.subset = options.split.map(String::from);
                Ok(r)
            })
            .collect())
    }
}

fn ingest_with(
    store: &Store,
    format: Format,
    path: PathBuf,
    on_error: OnError,
) -> Result<ragprobe_ingest::IngestReport, IngestError> {
    ingest(
        store,
        &IngestOptions {
            format: Some(format),
            paths: vec![path],
            split: Some("dev".into()),
            subset: Some("picked".into()),
            on_error,
            ..Default::default()
        },
    )
}

#[test]
fn a_format_that_reads_directories_gets_the_directory_its_options_and_its_language() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("lang-xx");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("b.q"), "second?").unwrap();
    std::fs::write(dir.join("a.q"), "first?").unwrap();
    let store = Store::open(d.path().join("store")).unwrap();
    let r = ingest_with(&store, Format::Records(&Dirs), dir.clone(), OnError::Fail).unwrap();
    let q = read::<Questions>(&store, &r.outputs[0].id).unwrap();
    let got: Vec<_> = q
        .iter()
        .map(|q| {
            (
                q.question.as_str(),
                q.lang.as_str(),
                q.split.as_deref(),
                q.subset.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("first?", "xx", Some("dev"), Some("dev")),
            ("second?", "xx", Some("dev"), Some("dev"))
        ]
    );
    // Every file under the directory is a source: a changed one is a new run.
    let m = store.manifest(&r.outputs[0].id).unwrap();
    assert!(
        m.recipe.params.get("reader_version").is_none(),
        "version 0 adds nothing to the recipe: {}",
        m.recipe.params
    );
    std::fs::write(dir.join("a.q"), "changed?").unwrap();
    let r2 = ingest_with(&store, Format::Records(&Dirs), dir.clone(), OnError::Fail).unwrap();
    assert!(!r2.cached);
    assert_ne!(r2.outputs[0].id, r.outputs[0].id);

    // A bad record fails the run naming its file, or is skipped and counted.
    std::fs::write(dir.join("c.q"), " ").unwrap();
    let e = ingest_with(&store, Format::Records(&Dirs), dir.clone(), OnError::Fail)
        .unwrap_err()
        .to_string();
    assert!(e.contains("c.q:1: field `q` is empty"), "{e}");
    let r3 = ingest_with(&store, Format::Records(&Dirs), dir.clone(), OnError::Skip).unwrap();
    assert_eq!((r3.records, r3.skipped, r3.outputs[0].rows), (3, 1, 2));

    // Its files are read by `parse`, with the options and the file's language.
    let f = d.path().join("lang-yy");
    std::fs::write(&f, "{\"q\": \"third?\"}\n").unwrap();
    let r4 = ingest_with(&store, Format::Records(&Dirs), f, OnError::Fail).unwrap();
    let q = read::<Questions>(&store, &r4.outputs[0].id).unwrap();
    assert_eq!(
        (q[0].lang.as_str(), q[0].subset.as_deref()),
        ("yy", Some("picked"))
    );
}

#[test]
fn a_format_that_reads_files_refuses_a_directory_and_versions_its_recipe() {
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path().join("store")).unwrap();
    let e = ingest_with(
        &store,
        Format::Records(&Choices),
        d.path().to_path_buf(),
        OnError::Skip,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("is a directory; the `test-choices` format reads files"),
        "{e}"
    );
    let p = d.path().join("c.jsonl");
    std::fs::write(
        &p,
        r#"{"question": "q?", "context": "c", "choices": {"label": ["A"], "text": ["a"]}}"#,
    )
    .unwrap();
    let r = ingest_with(&store, Format::Records(&Choices), p, OnError::Fail).unwrap();
    let m = store.manifest(&r.outputs[0].id).unwrap();
    assert_eq!(m.recipe.params["reader_version"], 1);
}
