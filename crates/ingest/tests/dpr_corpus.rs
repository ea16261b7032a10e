//! `--format dpr-corpus`: the DPR Wikipedia passages file (psgs_w100.tsv).

use ragprobe_artifact::{read, Corpus, Store};
use ragprobe_ingest::{ingest, Format, IngestOptions, OnError};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The first lines of psgs_w100.tsv, as DPR writes them: a header, a text
/// with doubled quotes inside a quoted field.
const HEAD: &str = "id\ttext\ttitle\n\
1\t\"Aaron Aaron ( or ; \"\"Ahärôn\"\") is a prophet, high priest, and the brother of Moses.\"\tAaron\n\
2\tGod at Sinai granted Aaron the priesthood for himself and his male descendants.\tAaron\n\
3\tA passage without a title.\t\n";

fn run(
    path: PathBuf,
    on_error: OnError,
) -> (
    Store,
    tempfile::TempDir,
    Result<ragprobe_ingest::IngestReport, ragprobe_ingest::IngestError>,
) {
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path().join("store")).unwrap();
    let opts = IngestOptions {
        format: Some(Format::DprCorpus),
        paths: vec![path],
        on_error,
        ..Default::default()
    };
    let r = ingest(&store, &opts);
    (store, d, r)
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn passages_are_read_with_quotes_undone_plain_or_gzipped_to_the_same_artifact() {
    let d = tempfile::tempdir().unwrap();
    let plain = write(d.path(), "psgs_w100.tsv", HEAD.as_bytes());
    let (store, _k, r) = run(plain, OnError::Fail);
    let r = r.unwrap();
    let id = &r.outputs[0].id;
    let rows = read::<Corpus>(&store, id).unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0].doc_id, "1");
    assert_eq!(
        rows[0].text,
        "Aaron Aaron ( or ; \"Ahärôn\") is a prophet, high priest, and the brother of Moses."
    );
    assert_eq!(rows[0].title.as_deref(), Some("Aaron"));
    assert_eq!(rows[2].title, None);

    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(HEAD.as_bytes()).unwrap();
    let zipped = write(d.path(), "psgs_w100.tsv.gz", &gz.finish().unwrap());
    let (store2, _k2, r2) = run(zipped, OnError::Fail);
    let rows2 = read::<Corpus>(&store2, &r2.unwrap().outputs[0].id).unwrap();
    assert_eq!(rows, rows2, "gzip is read the same");
}

#[test]
fn a_missing_column_names_the_file_and_the_column() {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "psgs.tsv", b"id\tpassage\ttitle\n1\tx\tt\n");
    let e = run(p, OnError::Fail).2.unwrap_err().to_string();
    assert!(
        e.contains("psgs.tsv") && e.contains("no `text` column"),
        "{e}"
    );
}

#[test]
fn a_bad_line_is_named_and_skip_mode_counts_it() {
    let d = tempfile::tempdir().unwrap();
    let body = format!("{HEAD}4\tan unquoted tab\there\tT\n\tno id\tT\n5\tlast\tT\n");
    let p = write(d.path(), "psgs.tsv", body.as_bytes());
    let e = run(p.clone(), OnError::Fail).2.unwrap_err().to_string();
    assert!(
        e.contains("psgs.tsv:5:") && e.contains("4 tab-separated field(s), the header has 3"),
        "{e}"
    );
    let (store, _k, r) = run(p, OnError::Skip);
    let r = r.unwrap();
    let rows = read::<Corpus>(&store, &r.outputs[0].id).unwrap();
    assert_eq!(
        rows.len(),
        4,
        "the two bad lines are skipped, the rest kept"
    );
    assert_eq!(rows[3].doc_id, "5");
    let m = store.manifest(&r.outputs[0].id).unwrap();
    assert_eq!(m.details["records_skipped"], 2, "{}", m.details);
    assert!(m
        .details
        .to_string()
        .contains("psgs.tsv:6: field `id`: empty"));
}

#[test]
fn the_fixture_holds_the_beir_corpus_passages() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let (store, _k, r) = run(root.join("fixtures/dpr-corpus-mini.tsv"), OnError::Fail);
    let rows = read::<Corpus>(&store, &r.unwrap().outputs[0].id).unwrap();
    let beir = std::fs::read_to_string(root.join("fixtures/corpus/corpus.jsonl")).unwrap();
    assert_eq!(rows.len(), beir.lines().count());
    let first: serde_json::Value = serde_json::from_str(beir.lines().next().unwrap()).unwrap();
    let d001 = rows.iter().find(|r| r.doc_id == first["_id"]).unwrap();
    assert_eq!(d001.text, first["text"].as_str().unwrap());
    assert_eq!(d001.title.as_deref(), first["title"].as_str());
}
