//! Same input -> byte-identical artifacts; JSON key order does not matter;
//! a rerun is a cache hit.

use ragprobe_artifact::Store;
use ragprobe_ingest::{ingest, Format, IngestOptions};
use std::path::Path;

const A: &str = r#"{"question": "who wrote hamlet", "answers": ["William Shakespeare", "Shakespeare"], "ctxs": [{"id": "d1", "title": "Hamlet", "text": "Hamlet is a tragedy by William Shakespeare.", "score": 12.5, "hasanswer": true}, {"id": "d2", "title": "Macbeth", "text": "Macbeth is set in Scotland.", "score": 10.0}], "source": {"b": 1, "a": [1, 2]}}
{"question": "capital of france", "answers": ["Paris"], "ctxs": [{"id": "d3", "title": "France", "text": "Paris is the capital of France.", "score": 3}]}
"#;

// The same records with every object's keys in another order.
const A_REORDERED: &str = r#"{"source": {"a": [1, 2], "b": 1}, "ctxs": [{"hasanswer": true, "score": 12.5, "text": "Hamlet is a tragedy by William Shakespeare.", "title": "Hamlet", "id": "d1"}, {"score": 10.0, "text": "Macbeth is set in Scotland.", "title": "Macbeth", "id": "d2"}], "answers": ["William Shakespeare", "Shakespeare"], "question": "who wrote hamlet"}
{"answers": ["Paris"], "ctxs": [{"text": "Paris is the capital of France.", "score": 3, "id": "d3", "title": "France"}], "question": "capital of france"}
"#;

fn ingest_text(dir: &Path, text: &str) -> (Store, Vec<String>, bool) {
    std::fs::create_dir_all(dir).unwrap();
    let file = dir.join("mini.jsonl");
    std::fs::write(&file, text).unwrap();
    let store = Store::open(dir.join("store")).unwrap();
    let opts = IngestOptions {
        format: Some(Format::Dpr),
        paths: vec![file],
        ..Default::default()
    };
    let r = ingest(&store, &opts).unwrap();
    (
        store,
        r.outputs.into_iter().map(|o| o.id).collect(),
        r.cached,
    )
}

#[test]
fn two_fresh_stores_give_the_same_ids() {
    let d = tempfile::tempdir().unwrap();
    let (s1, ids1, _) = ingest_text(&d.path().join("one"), A);
    let (s2, ids2, _) = ingest_text(&d.path().join("two"), A);
    assert_eq!(ids1, ids2);
    for id in &ids1 {
        assert_eq!(
            std::fs::read(s1.object_path(id)).unwrap(),
            std::fs::read(s2.object_path(id)).unwrap()
        );
    }
}

#[test]
fn reordered_json_keys_give_the_same_ids() {
    let d = tempfile::tempdir().unwrap();
    let (_, ids1, _) = ingest_text(&d.path().join("one"), A);
    let (_, ids2, _) = ingest_text(&d.path().join("two"), A_REORDERED);
    assert_eq!(ids1, ids2);
}

#[test]
fn a_rerun_is_cached_and_a_changed_input_is_not() {
    let d = tempfile::tempdir().unwrap();
    let (_, ids1, cached1) = ingest_text(d.path(), A);
    let (_, ids2, cached2) = ingest_text(d.path(), A);
    assert!(!cached1);
    assert!(cached2);
    assert_eq!(ids1, ids2);
    let changed = A.replace("capital of france", "capital of France?");
    let (_, ids3, cached3) = ingest_text(d.path(), &changed);
    assert!(!cached3);
    assert_ne!(ids1[0], ids3[0]);
}

#[test]
fn gzip_is_read_transparently() {
    use std::io::Write;
    let d = tempfile::tempdir().unwrap();
    let plain = d.path().join("p");
    let (s, ids_plain, _) = ingest_text(&plain, A);
    let gz_dir = d.path().join("g");
    std::fs::create_dir_all(&gz_dir).unwrap();
    // Same file name, gzip bytes: content detection, not the extension.
    let file = gz_dir.join("mini.jsonl");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(A.as_bytes()).unwrap();
    std::fs::write(&file, enc.finish().unwrap()).unwrap();
    let store = Store::open(gz_dir.join("store")).unwrap();
    let r = ingest(
        &store,
        &IngestOptions {
            format: Some(Format::Dpr),
            paths: vec![file],
            ..Default::default()
        },
    )
    .unwrap();
    let ids_gz: Vec<String> = r.outputs.into_iter().map(|o| o.id).collect();
    assert_eq!(ids_plain, ids_gz);
    drop(s);
}
