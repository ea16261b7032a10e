//! Every bad-input class gives an error naming the file, the line and the
//! field; `--on-error skip` skips, counts and records.

use ragprobe_artifact::Store;
use ragprobe_ingest::{ingest, Format, IngestError, IngestOptions, OnError};
use ragprobe_studies::rgb::format::RgbFormat;
use std::path::{Path, PathBuf};

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn run(
    format: Format,
    path: PathBuf,
    on_error: OnError,
) -> (
    Store,
    tempfile::TempDir,
    Result<ragprobe_ingest::IngestReport, IngestError>,
) {
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path().join("store")).unwrap();
    let opts = IngestOptions {
        format: Some(format),
        paths: vec![path],
        on_error,
        ..Default::default()
    };
    let r = ingest(&store, &opts);
    (store, d, r)
}

fn err_text(format: Format, name: &str, bytes: &[u8]) -> String {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), name, bytes);
    let (_s, _d, r) = run(format, p, OnError::Fail);
    r.expect_err("bad input must fail").to_string()
}

const GOOD: &str =
    r#"{"question": "q1", "answers": ["a"], "ctxs": [{"title": "t", "text": "a b"}]}"#;

#[test]
fn malformed_json_names_file_and_line() {
    let text = format!("{GOOD}\n{GOOD}\n{{\"question\": \"q3\", \"answers\": [\"a\"\n");
    let e = err_text(Format::Dpr, "bad.jsonl", text.as_bytes());
    assert!(e.contains("bad.jsonl:3:"), "{e}");
    assert!(e.contains("malformed JSON"), "{e}");
}

#[test]
fn malformed_element_in_a_json_array_names_its_line() {
    let text = format!("[\n{GOOD},\n{{\"question\": \"q2\", \"answers\": [\"a\",]}}\n]\n");
    let e = err_text(Format::Dpr, "bad.json", text.as_bytes());
    assert!(e.contains("bad.json:3:"), "{e}");
    assert!(e.contains("malformed JSON"), "{e}");
}

#[test]
fn missing_question_names_the_field() {
    let text = format!("{GOOD}\n{{\"answers\": [\"a\"], \"ctxs\": []}}\n");
    let e = err_text(Format::Dpr, "bad.jsonl", text.as_bytes());
    assert!(e.contains("bad.jsonl:2:"), "{e}");
    assert!(e.contains("field `question` is missing"), "{e}");
}

#[test]
fn answers_of_the_wrong_type_name_the_field() {
    let e = err_text(
        Format::Dpr,
        "bad.jsonl",
        br#"{"question": "q", "answers": "Paris"}"#,
    );
    assert!(
        e.contains("bad.jsonl:1:")
            && e.contains("field `answers` must be a list of strings, found a string"),
        "{e}"
    );
    let e = err_text(
        Format::Dpr,
        "bad.jsonl",
        br#"{"question": "q", "answers": ["Paris", {"x": 1}]}"#,
    );
    assert!(
        e.contains("field `answers[1]` must be a string, found an object"),
        "{e}"
    );
}

#[test]
fn nested_field_errors_name_the_path() {
    let text = format!("{GOOD}\n{{\"question\": \"q\", \"answers\": [\"a\"], \"ctxs\": [{{\"title\": \"t\", \"text\": \"x\"}}, {{\"title\": \"t\"}}]}}\n");
    let e = err_text(Format::Dpr, "bad.jsonl", text.as_bytes());
    assert!(
        e.contains("bad.jsonl:2:") && e.contains("field `ctxs[1].text` is missing"),
        "{e}"
    );
}

#[test]
fn empty_file_is_refused() {
    let e = err_text(Format::Dpr, "empty.jsonl", b"");
    assert!(e.contains("empty.jsonl") && e.contains("empty"), "{e}");
    let e = err_text(Format::Records(&RgbFormat), "blank.jsonl", b"\n\n  \n");
    assert!(e.contains("blank.jsonl") && e.contains("empty"), "{e}");
}

#[test]
fn invalid_utf8_names_line_and_column() {
    let mut bytes = format!("{GOOD}\n").into_bytes();
    bytes.extend_from_slice(b"{\"question\": \"caf\xe9\", \"answers\": [\"a\"]}\n");
    let e = err_text(Format::Dpr, "latin1.jsonl", &bytes);
    assert!(
        e.contains("latin1.jsonl:2:") && e.contains("invalid UTF-8 at column 18"),
        "{e}"
    );
}

#[test]
fn other_formats_name_their_fields() {
    let e = err_text(
        Format::Records(&RgbFormat),
        "r.jsonl",
        br#"{"id": 1, "query": "q", "answer": {"x": 1}, "positive": []}"#,
    );
    assert!(
        e.contains("r.jsonl:1:") && e.contains("field `answer`"),
        "{e}"
    );
    let e = err_text(
        Format::Records(&RgbFormat),
        "r.jsonl",
        br#"{"id": 1, "answer": "a"}"#,
    );
    assert!(e.contains("field `query` is missing"), "{e}");
    let e = err_text(
        Format::Records(&ragprobe_studies::nomiracl::format::NomiraclFormat),
        "n.jsonl",
        br#"{"query_id": "1", "query": "q", "positive_passages": [{"docid": "d", "title": "t"}]}"#,
    );
    assert!(
        e.contains("n.jsonl:1:") && e.contains("field `positive_passages[0].text` is missing"),
        "{e}"
    );
    let e = err_text(Format::Selfrag, "p.jsonl", br#"{"question": "q", "answers": ["a"], "ctxs": [{"title": "t", "text": "x", "score": "high"}]}"#);
    assert!(e.contains("field `ctxs[0].score` must be a number"), "{e}");
    let e = err_text(
        Format::Table,
        "t.csv",
        b"question,answers\n\"who?\",Paris\n,London\n",
    );
    assert!(
        e.contains("t.csv:3:") && e.contains("field `question` is empty"),
        "{e}"
    );
}

#[test]
fn skip_mode_skips_counts_and_records() {
    let d = tempfile::tempdir().unwrap();
    let text = format!("{GOOD}\nnot json\n{{\"answers\": [\"a\"]}}\n{GOOD}\n");
    let p = write(d.path(), "mixed.jsonl", text.as_bytes());
    let (store, _d, r) = run(Format::Dpr, p, OnError::Skip);
    let r = r.unwrap();
    assert_eq!(r.skipped, 2);
    let q = r.outputs.iter().find(|o| o.kind == "questions").unwrap();
    assert_eq!(q.rows, 2);
    let m = store.manifest(&q.id).unwrap();
    assert_eq!(m.details["records_skipped"], 2);
    let examples = m.details["skipped_examples"].as_array().unwrap();
    assert_eq!(examples.len(), 2);
    assert!(
        examples[0].as_str().unwrap().starts_with("mixed.jsonl:2:"),
        "{examples:?}"
    );
    assert!(
        examples[1]
            .as_str()
            .unwrap()
            .contains("mixed.jsonl:3: field `question` is missing"),
        "{examples:?}"
    );
}

#[test]
fn a_file_of_only_bad_records_is_an_error_even_when_skipping() {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "allbad.jsonl", b"nope\n{\"answers\": [\"a\"]}\n");
    let (_s, _d, r) = run(Format::Dpr, p, OnError::Skip);
    let e = r.unwrap_err().to_string();
    assert!(
        e.contains("no valid records") && e.contains("2 skipped"),
        "{e}"
    );
}

#[test]
fn missing_path_is_a_clear_error() {
    let (_s, _d, r) = run(
        Format::Dpr,
        PathBuf::from("/nonexistent/x.jsonl"),
        OnError::Fail,
    );
    let e = r.unwrap_err().to_string();
    assert!(
        e.contains("/nonexistent/x.jsonl") && e.contains("no such file"),
        "{e}"
    );
}

/// Regression (reliability #2): structural damage looped forever under
/// `--on-error skip`; it now ends the file with an error naming it.
#[test]
fn structural_damage_stops_the_file_even_under_skip() {
    for (name, bytes) in [
        ("x.json", &b"[}]"[..]),
        (
            "y.json",
            b"[,{\"question\": \"q\", \"answers\": [\"a\"], \"ctxs\": []}]",
        ),
    ] {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), name, bytes);
        let e = run(Format::Dpr, p, OnError::Skip)
            .2
            .expect_err("structural error")
            .to_string();
        assert!(e.contains(name) && e.contains("unexpected"), "{e}");
    }
}

/// Regression (reliability #2): a truncated gzip qrels file looped forever.
#[test]
fn a_truncated_gzip_qrels_file_stops_with_an_error() {
    use std::io::Write;
    let d = tempfile::tempdir().unwrap();
    let beir = d.path().join("b");
    std::fs::create_dir_all(beir.join("qrels")).unwrap();
    std::fs::write(
        beir.join("corpus.jsonl"),
        "{\"_id\": \"d1\", \"title\": \"t\", \"text\": \"x\"}\n",
    )
    .unwrap();
    std::fs::write(
        beir.join("queries.jsonl"),
        "{\"_id\": \"q1\", \"text\": \"who?\"}\n",
    )
    .unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    for i in 0..2000 {
        writeln!(gz, "q1\td1\t{}", i % 2).unwrap();
    }
    let bytes = gz.finish().unwrap();
    // Named .tsv, as in the report: ingest recognises gzip by its magic bytes.
    std::fs::write(beir.join("qrels/test.tsv"), &bytes[..bytes.len() / 2]).unwrap();
    let e = run(Format::Beir, beir, OnError::Skip)
        .2
        .expect_err("truncated gzip")
        .to_string();
    assert!(e.contains("test.tsv") && e.contains("read error"), "{e}");
}

/// Regression (reliability #11): a repeated `_id` in BEIR queries renamed
/// the second query, wrote the first one's judged contexts twice and gave
/// the renamed one none. A repeated `_id` is now a record error.
#[test]
fn beir_repeated_query_ids_are_an_error() {
    let d = tempfile::tempdir().unwrap();
    let beir = d.path().join("b");
    std::fs::create_dir_all(beir.join("qrels")).unwrap();
    std::fs::write(beir.join("corpus.jsonl"), "{\"_id\": \"d1\", \"title\": \"t\", \"text\": \"x\"}\n{\"_id\": \"d2\", \"title\": \"t\", \"text\": \"y\"}\n").unwrap();
    std::fs::write(
        beir.join("queries.jsonl"),
        "{\"_id\": \"q01\", \"text\": \"who?\"}\n{\"_id\": \"q01\", \"text\": \"what?\"}\n",
    )
    .unwrap();
    std::fs::write(
        beir.join("qrels/test.tsv"),
        "query-id\tcorpus-id\tscore\nq01\td1\t1\nq01\td2\t0\n",
    )
    .unwrap();
    let e = run(Format::Beir, beir.clone(), OnError::Fail)
        .2
        .expect_err("repeated _id")
        .to_string();
    assert!(
        e.contains("queries.jsonl:2") && e.contains("`q01` already appeared on line 1"),
        "{e}"
    );
    let (store, _d, r) = run(Format::Beir, beir, OnError::Skip);
    let r = r.unwrap();
    let id = |k: &str| r.outputs.iter().find(|o| o.kind == k).unwrap().id.clone();
    let qs =
        ragprobe_artifact::read::<ragprobe_artifact::Questions>(&store, &id("questions")).unwrap();
    let cs =
        ragprobe_artifact::read::<ragprobe_artifact::Contexts>(&store, &id("contexts")).unwrap();
    assert_eq!(qs.len(), 1);
    assert_eq!(cs.len(), 2, "q01's two judged passages, once");
    assert!(cs.iter().all(|c| c.qid == qs[0].qid));
}

/// Regression (reliability #13): a numeric answer past f64's precision
/// became `1.2345678901234568e+22`; a "NaN" Self-RAG score was kept; a
/// binary Parquet answer became hex.
#[test]
fn numbers_keep_their_text_and_nan_or_binary_values_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "big.jsonl", br#"{"question": "q", "answers": [12345678901234567890123], "ctxs": [{"title": "t", "text": "12345678901234567890123 is big"}]}"#);
    let (store, _d, r) = run(Format::Dpr, p, OnError::Fail);
    let r = r.unwrap();
    let qs =
        ragprobe_artifact::read::<ragprobe_artifact::Questions>(&store, &r.outputs[0].id).unwrap();
    assert_eq!(qs[0].answers, vec!["12345678901234567890123"]);

    let e = err_text(Format::Selfrag, "popqa.jsonl", br#"{"question": "q", "answers": ["a"], "ctxs": [{"title": "t", "text": "a", "score": "NaN"}]}"#);
    assert!(
        e.contains("popqa.jsonl:1") && e.contains("score") && e.contains("finite"),
        "{e}"
    );

    use arrow::array::{ArrayRef, BinaryArray, StringArray};
    use std::sync::Arc;
    let batch = arrow::record_batch::RecordBatch::try_from_iter(vec![
        (
            "id",
            Arc::new(StringArray::from(vec!["t1", "t2"])) as ArrayRef,
        ),
        (
            "question",
            Arc::new(StringArray::from(vec!["q1", "q2"])) as ArrayRef,
        ),
        (
            "answers",
            Arc::new(BinaryArray::from(vec![&b"ok"[..], &[0xff, 0xfe][..]])) as ArrayRef,
        ),
    ])
    .unwrap();
    let path = d.path().join("t.parquet");
    let mut w = parquet::arrow::ArrowWriter::try_new(
        std::fs::File::create(&path).unwrap(),
        batch.schema(),
        None,
    )
    .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let (_s, _d2, r) = run(Format::Table, path, OnError::Fail);
    let e = r.expect_err("binary answers").to_string();
    assert!(
        e.contains("t.parquet")
            && e.contains("row 2")
            && e.contains("answers")
            && e.contains("not UTF-8"),
        "{e}"
    );
}

/// Empty passage text is real data (Self-RAG PopQA has a titled passage
/// with empty text; BEIR corpora have title-only documents): kept, and the
/// passages with neither title nor text are counted in the manifest.
#[test]
fn empty_passage_text_is_kept_and_counted() {
    let d = tempfile::tempdir().unwrap();
    let beir = d.path().join("b");
    std::fs::create_dir_all(beir.join("qrels")).unwrap();
    std::fs::write(beir.join("corpus.jsonl"), "{\"_id\": \"d1\", \"title\": \"Only a title\", \"text\": \"\"}\n{\"_id\": \"d2\", \"title\": \"\", \"text\": \"\"}\n").unwrap();
    std::fs::write(
        beir.join("queries.jsonl"),
        "{\"_id\": \"q1\", \"text\": \"who?\"}\n",
    )
    .unwrap();
    std::fs::write(beir.join("qrels/test.tsv"), "q1\td1\t1\n").unwrap();
    let (store, _d, r) = run(Format::Beir, beir, OnError::Fail);
    let r = r.expect("title-only documents are accepted");
    let corpus = r.outputs.iter().find(|o| o.kind == "corpus").unwrap();
    assert_eq!(corpus.rows, 2);
    assert_eq!(
        store.manifest(&corpus.id).unwrap().details["empty_passages"],
        1
    );
    let p = write(d.path(), "popqa.jsonl", br#"{"question": "q", "answers": ["a"], "ctxs": [{"title": "T", "text": ""}, {"title": "U", "text": "a b"}]}"#);
    let (_s, _d2, r) = run(Format::Selfrag, p, OnError::Fail);
    assert!(r.is_ok(), "{r:?}");
}
