//! Behaviour of the store: content ids, determinism, caching, atomicity,
//! verification, export/import and gc.

use arrow::array::{ArrayRef, Int32Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use ragprobe_artifact::{ArtifactError, Recipe, Store};
use serde_json::json;
use std::sync::Arc;

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Utf8, false),
        Field::new("v", DataType::Int32, false),
    ]))
}

fn batch(n: i32) -> RecordBatch {
    let keys: Vec<String> = (0..n).map(|i| format!("key-{i}")).collect();
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(keys)),
        Arc::new(Int32Array::from_iter_values(0..n)),
    ];
    RecordBatch::try_new(schema(), cols).unwrap()
}

fn recipe(p: i64) -> Recipe {
    Recipe::new("test", 1, json!({ "p": p }))
}

fn write(store: &Store, n: i32, p: i64) -> String {
    let mut w = store
        .writer_with_schema("test", 1, schema(), &recipe(p))
        .unwrap();
    w.write(&batch(n)).unwrap();
    let written = w.finish(json!({"note": "x"})).unwrap();
    store
        .record_action(&recipe(p), std::slice::from_ref(&written))
        .unwrap();
    written.id
}

#[test]
fn same_content_same_id_in_two_stores() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (sa, sb) = (
        Store::open(a.path()).unwrap(),
        Store::open(b.path()).unwrap(),
    );
    let ia = write(&sa, 100, 1);
    let ib = write(&sb, 100, 1);
    assert_eq!(ia, ib);
    assert_eq!(
        std::fs::read(sa.object_path(&ia)).unwrap(),
        std::fs::read(sb.object_path(&ib)).unwrap()
    );
    // The id is the SHA-256 of the bytes.
    assert_eq!(
        ragprobe_artifact::sha256_hex(&std::fs::read(sa.object_path(&ia)).unwrap()),
        ia
    );
    // Different params -> different manifest -> different id.
    assert_ne!(write(&sa, 100, 2), ia);
}

#[test]
fn manifest_round_trips() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path()).unwrap();
    let id = write(&s, 10, 7);
    let m = s.manifest(&id).unwrap();
    assert_eq!(m.kind, "test");
    assert_eq!(m.rows, 10);
    assert_eq!(m.recipe.params, json!({"p": 7}));
    assert_eq!(m.details, json!({"note": "x"}));
}

#[test]
fn action_records_make_a_cache() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path()).unwrap();
    assert!(s.cached(&recipe(1), &[]).unwrap().is_none());
    let id = write(&s, 5, 1);
    let hit = s.cached(&recipe(1), &[]).unwrap().expect("cached");
    assert_eq!(hit.outputs[0].id, id);
    assert!(s.cached(&recipe(2), &[]).unwrap().is_none());
    // Source hashes key the action but stay out of the manifest.
    let mut r = recipe(1);
    r.sources.insert("a.jsonl".into(), "00".repeat(32));
    assert_ne!(r.key(), recipe(1).key());
    assert_eq!(r.for_manifest(), recipe(1));
    // A record whose object disappeared is not a hit.
    std::fs::remove_file(s.object_path(&id)).unwrap();
    assert!(s.cached(&recipe(1), &[]).unwrap().is_none());
}

#[test]
fn an_unfinished_writer_leaves_nothing() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path()).unwrap();
    {
        let mut w = s
            .writer_with_schema("test", 1, schema(), &recipe(1))
            .unwrap();
        w.write(&batch(50)).unwrap();
        // dropped: a crash or error mid-stage
    }
    assert!(s.ids().unwrap().is_empty());
    assert_eq!(std::fs::read_dir(d.path().join("tmp")).unwrap().count(), 0);
}

fn flip_byte(path: &std::path::Path, at: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at] ^= 0x01;
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn verify_names_every_corrupt_object() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path()).unwrap();
    let good = write(&s, 20, 1);
    let bad1 = write(&s, 20, 2);
    let bad2 = write(&s, 30, 3);
    assert!(s.verify().unwrap().is_empty());
    flip_byte(&s.object_path(&bad1), 100);
    flip_byte(&s.object_path(&bad2), 10);
    let problems = s.verify().unwrap();
    let ids: Vec<&str> = problems.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.contains(&bad1.as_str()) && ids.contains(&bad2.as_str()));
    assert!(!ids.contains(&good.as_str()));
    assert!(
        problems[0].message.contains("corrupt"),
        "{}",
        problems[0].message
    );
    // Reading a corrupt object fails instead of returning altered data.
    assert!(matches!(
        s.read_all(&bad1),
        Err(ArtifactError::HashMismatch { .. })
    ));
}

/// A read hashes an object once and records it; a file changed after that
/// (new length or modification time) is hashed again and caught; `verify`
/// always hashes.
#[test]
fn reads_hash_an_object_once_and_again_when_its_file_changed() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path()).unwrap();
    let id = write(&s, 20, 1);
    s.read_all(&id).unwrap();
    let stamp = d.path().join("verified").join(&id);
    assert!(stamp.is_file(), "the first read records the hash check");
    let path = s.object_path(&id);
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    flip_byte(&path, 100);
    assert!(matches!(
        s.read_all(&id),
        Err(ArtifactError::HashMismatch { .. })
    ));
    // The same bytes altered, with the old modification time put back.
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    assert!(
        matches!(s.read_all(&id), Err(ArtifactError::HashMismatch { .. })),
        "the change time gives the rewrite away"
    );
    let problems = s.verify().unwrap();
    assert_eq!(problems.len(), 1, "verify hashes whatever the record says");
    assert!(!stamp.exists(), "verify drops a damaged object's record");
}

#[test]
fn export_import_and_altered_import() {
    let (a, b, out) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let (sa, sb) = (
        Store::open(a.path()).unwrap(),
        Store::open(b.path()).unwrap(),
    );
    let id = write(&sa, 40, 1);
    let file = sa.export(&id, out.path()).unwrap();
    assert_eq!(
        file.file_name().unwrap().to_string_lossy(),
        format!("{id}.parquet")
    );
    assert_eq!(sb.import(&file).unwrap(), id);
    assert!(sb.verify().unwrap().is_empty());
    // An altered copy is refused, whatever byte changed.
    let c = tempfile::tempdir().unwrap();
    let sc = Store::open(c.path()).unwrap();
    for at in [
        0usize,
        200,
        std::fs::metadata(&file).unwrap().len() as usize - 3,
    ] {
        let altered = out.path().join("alt").join(format!("{id}.parquet"));
        std::fs::create_dir_all(altered.parent().unwrap()).unwrap();
        std::fs::copy(&file, &altered).unwrap();
        flip_byte(&altered, at);
        let err = sc.import(&altered).unwrap_err();
        assert!(matches!(err, ArtifactError::AlteredImport { .. }), "{err}");
        assert!(err.to_string().contains("altered"), "{err}");
    }
    assert!(sc.ids().unwrap().is_empty());
    // A renamed file whose footer is damaged is refused too.
    let renamed = out.path().join("mine.parquet");
    std::fs::copy(&file, &renamed).unwrap();
    let len = std::fs::metadata(&renamed).unwrap().len() as usize;
    flip_byte(&renamed, len - 1); // the trailing PAR1 magic
    assert!(sc.import(&renamed).is_err());
}

#[test]
fn resolve_by_prefix_and_path() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path()).unwrap();
    let id = write(&s, 3, 1);
    assert_eq!(s.resolve(&id[..8]).unwrap(), id);
    assert_eq!(s.resolve(&id.to_uppercase()[..10]).unwrap(), id);
    assert!(matches!(
        s.resolve("ffffffffffff"),
        Err(ArtifactError::NotFound(_))
    ));
    assert!(matches!(
        s.resolve("no-such-thing"),
        Err(ArtifactError::NotFound(_))
    ));
    assert_eq!(s.resolve(s.object_path(&id).to_str().unwrap()).unwrap(), id);
    assert!(matches!(
        s.resolve_kind(&id, "questions"),
        Err(ArtifactError::WrongKind { .. })
    ));
}

#[test]
fn gc_keeps_what_actions_and_imports_refer_to() {
    let (d, o) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let s = Store::open(d.path()).unwrap();
    let kept = write(&s, 3, 1);
    // An orphan: written but no action recorded.
    let mut w = s
        .writer_with_schema("test", 1, schema(), &recipe(9))
        .unwrap();
    w.write(&batch(9)).unwrap();
    let orphan = w.finish(json!(null)).unwrap().id;
    // An imported object from elsewhere.
    let other = tempfile::tempdir().unwrap();
    let so = Store::open(other.path()).unwrap();
    let foreign = write(&so, 4, 4);
    let f = so.export(&foreign, o.path()).unwrap();
    s.import(&f).unwrap();
    let dry = s.gc(true).unwrap();
    assert_eq!(dry.removed, vec![orphan.clone()]);
    assert!(s.object_path(&orphan).exists());
    let r = s.gc(false).unwrap();
    assert_eq!(r.removed, vec![orphan.clone()]);
    assert_eq!(r.kept, 2);
    assert!(!s.object_path(&orphan).exists());
    assert!(s.object_path(&kept).exists() && s.object_path(&foreign).exists());
}

#[test]
fn questions_written_before_schema_v2_still_read() {
    use arrow::array::{ListBuilder, StringBuilder};
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path()).unwrap();
    let v2 = <ragprobe_artifact::Questions as ragprobe_artifact::Kind>::schema();
    let v1 = Schema::new(
        v2.fields()
            .iter()
            .filter(|f| !f.name().starts_with("option_"))
            .map(|f| f.as_ref().clone())
            .collect::<Vec<_>>(),
    );
    let str_col = |v: Option<&str>| -> ArrayRef { Arc::new(StringArray::from(vec![v])) };
    let list = || -> ArrayRef {
        let mut b = ListBuilder::new(StringBuilder::new());
        b.values().append_value("Paris");
        b.append(true);
        Arc::new(b.finish())
    };
    let mut parts = ListBuilder::new(ListBuilder::new(StringBuilder::new()));
    parts.append(false);
    let mut fakes = ListBuilder::new(StringBuilder::new());
    fakes.append(false);
    let cols: Vec<ArrayRef> = vec![
        str_col(Some("q1")),
        str_col(Some("d")),
        str_col(None),
        str_col(Some("en")),
        str_col(Some("capital of France?")),
        list(),
        Arc::new(parts.finish()),
        Arc::new(fakes.finish()),
        str_col(None),
        str_col(None),
    ];
    let schema = Arc::new(v1);
    let mut w = s
        .writer_with_schema("questions", 1, schema.clone(), &recipe(1))
        .unwrap();
    w.write(&RecordBatch::try_new(schema, cols).unwrap())
        .unwrap();
    let id = w.finish(json!(null)).unwrap().id;
    let qs = ragprobe_artifact::read::<ragprobe_artifact::Questions>(&s, &id).unwrap();
    assert_eq!(
        (
            qs[0].qid.as_str(),
            qs[0].answers.clone(),
            qs[0].options.clone()
        ),
        ("q1", vec!["Paris".to_string()], None)
    );
}

/// Regression (reliability #18): an artifact made from an input that has
/// no action record (a partly failed generation) kept its output but lost
/// the input to gc.
#[test]
fn gc_keeps_the_inputs_of_kept_artifacts() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path()).unwrap();
    // The input: written, no action recorded (as a partly failed run).
    let mut w = s
        .writer_with_schema("test", 1, schema(), &recipe(7))
        .unwrap();
    w.write(&batch(2)).unwrap();
    let input = w.finish(json!(null)).unwrap().id;
    // The output made from it, with an action record.
    let mut r = recipe(8);
    r.inputs = vec![input.clone()];
    let mut w = s.writer_with_schema("test", 1, schema(), &r).unwrap();
    w.write(&batch(3)).unwrap();
    let out = w.finish(json!(null)).unwrap();
    s.record_action(&r, std::slice::from_ref(&out)).unwrap();
    let report = s.gc(false).unwrap();
    assert!(report.removed.is_empty(), "{:?}", report.removed);
    assert!(s.object_path(&input).exists() && s.object_path(&out.id).exists());
}

/// Regression (reliability #5): gc deleted the temp file of a running
/// writer; now only stale temp files go.
#[test]
fn gc_leaves_a_fresh_temp_file_alone() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path()).unwrap();
    let mut w = s
        .writer_with_schema("test", 1, schema(), &recipe(5))
        .unwrap();
    w.write(&batch(4)).unwrap();
    let r = s.gc(false).unwrap();
    assert_eq!((r.removed_tmp, r.kept_tmp), (0, 1));
    // The writer finishes after gc ran.
    let written = w.finish(json!(null)).unwrap();
    assert!(s.object_path(&written.id).exists());
    // A temp file older than the threshold is stale and goes.
    std::fs::write(d.path().join("tmp/left-over.tmp"), b"x").unwrap();
    let r = s.gc_with(false, std::time::Duration::ZERO).unwrap();
    assert_eq!(r.removed_tmp, 1);
    assert!(!d.path().join("tmp/left-over.tmp").exists());
}

/// Regression: an index build that stopped left its temporary directory
/// (as large as the corpus's vectors), and gc counted it as removed while
/// `remove_file` failed on it. Now a stale directory goes; a directory
/// whose files are still being written stays, however old the directory.
#[test]
fn gc_removes_a_stale_temp_directory_and_keeps_one_being_written() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path()).unwrap();
    let left = d.path().join("tmp/123-1-0.ivf");
    std::fs::create_dir_all(&left).unwrap();
    std::fs::write(left.join("vectors.f32"), vec![0u8; 64]).unwrap();
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    let age = |p: &std::path::Path| {
        std::fs::File::open(p)
            .unwrap()
            .set_modified(hour_ago)
            .unwrap()
    };
    age(&left);
    // Its file was written just now: a running build.
    let r = s.gc(false).unwrap();
    assert_eq!((r.removed_tmp, r.kept_tmp), (0, 1));
    assert!(left.exists());
    age(&left.join("vectors.f32"));
    age(&left);
    let r = s.gc(false).unwrap();
    assert_eq!((r.removed_tmp, r.kept_tmp), (1, 0));
    assert!(!left.exists());
}

/// Regression (reliability #16): export into a missing directory left a
/// temp file behind; onto a FIFO replaced it; onto a file overwrote it
/// silently.
#[test]
fn export_refuses_unsafe_targets_and_leaves_no_temp_file() {
    let (d, o) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let s = Store::open(d.path()).unwrap();
    let id = write(&s, 3, 1);
    let missing = o.path().join("newdir/");
    let e = s.export(&id, &missing).unwrap_err().to_string();
    assert!(e.contains("no such directory"), "{e}");
    let leftovers: Vec<_> = std::fs::read_dir(o.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let fifo = o.path().join("pipe");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let e = s.export_with(&id, &fifo, true).unwrap_err().to_string();
    assert!(e.contains("not a regular file"), "{e}");
    let file = o.path().join("a.parquet");
    s.export(&id, &file).unwrap();
    let e = s.export(&id, &file).unwrap_err().to_string();
    assert!(e.contains("--force"), "{e}");
    s.export_with(&id, &file, true).unwrap();
    assert_eq!(
        std::fs::read_dir(o.path()).unwrap().count(),
        2,
        "the FIFO and the file, no temp file"
    );
}

/// Regression (reliability #3): a file whose manifest says `schema_version:
/// 999` and whose `answers` column is `list<int64>` was imported and then
/// panicked a reader; both are refused with the artifact and column named.
#[test]
fn unknown_schema_versions_and_wrong_column_types_are_refused() {
    use arrow::array::{Int64Builder, ListBuilder};
    let (d, o, e2) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let s = Store::open(d.path()).unwrap();
    let sch = Arc::new(Schema::new(vec![
        Field::new("qid", DataType::Utf8, false),
        Field::new(
            "answers",
            DataType::List(Arc::new(Field::new("item", DataType::Int64, true))),
            false,
        ),
    ]));
    let crafted = |version: u32, p: i64| {
        let mut l = ListBuilder::new(Int64Builder::new());
        l.values().append_value(7);
        l.append(true);
        let cols: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(vec!["q1"])),
            Arc::new(l.finish()),
        ];
        let mut w = s
            .writer_with_schema("questions", version, sch.clone(), &recipe(p))
            .unwrap();
        w.write(&RecordBatch::try_new(sch.clone(), cols).unwrap())
            .unwrap();
        w.finish(json!(null)).unwrap().id
    };
    let newer = crafted(999, 1);
    let e = ragprobe_artifact::read::<ragprobe_artifact::Questions>(&s, &newer)
        .unwrap_err()
        .to_string();
    assert!(e.contains("schema version 999"), "{e}");
    let typed = crafted(2, 2);
    let e = ragprobe_artifact::read::<ragprobe_artifact::Questions>(&s, &typed)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&typed) && e.contains("column `answers`") && e.contains("Int64"),
        "{e}"
    );
    // Import refuses the newer version.
    let f = s.export(&newer, o.path()).unwrap();
    let other = Store::open(e2.path()).unwrap();
    let e = other.import(&f).unwrap_err().to_string();
    assert!(e.contains("schema version 999"), "{e}");
}

/// Regression (reliability #17): a manifest kind holding a tab and a
/// newline, or an action record whose output id is a path, was printed or
/// followed; both are refused where they are read.
#[test]
fn forged_kinds_and_ids_are_refused() {
    let (d, o, e2) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let s = Store::open(d.path()).unwrap();
    let mut w = s
        .writer_with_schema("questions\tforged\nline", 1, schema(), &recipe(4))
        .unwrap();
    w.write(&batch(1)).unwrap();
    let id = w.finish(json!(null)).unwrap().id;
    let f = s.export(&id, o.path()).unwrap();
    let e = Store::open(e2.path())
        .unwrap()
        .import(&f)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a kind name"), "{e}");
    // A tampered action record: its output id is a path.
    let good = write(&s, 2, 5);
    let rec_path = std::fs::read_dir(d.path().join("actions"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| std::fs::read_to_string(p).unwrap().contains(&good))
        .unwrap();
    let text = std::fs::read_to_string(&rec_path)
        .unwrap()
        .replace(&good, "../../../x");
    std::fs::write(&rec_path, text).unwrap();
    assert!(
        s.cached(&recipe(5), &[]).unwrap().is_none(),
        "the tampered record is not followed"
    );
    assert!(s
        .actions()
        .unwrap()
        .iter()
        .all(|a| a.outputs.iter().all(|o| o.id != "../../../x")));
}

/// Regression (reliability #6): a flipped byte in a cached output was
/// handed out by the cache; now the damaged object is dropped and the
/// stage runs again, writing the same id back.
#[test]
fn a_damaged_cached_output_is_not_a_cache_hit() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path()).unwrap();
    let id = write(&s, 50, 6);
    assert!(s.cached(&recipe(6), &[]).unwrap().is_some());
    let p = s.object_path(&id);
    let mut bytes = std::fs::read(&p).unwrap();
    bytes[100] ^= 0xff;
    std::fs::write(&p, bytes).unwrap();
    assert!(s.cached(&recipe(6), &[]).unwrap().is_none(), "not a hit");
    assert!(!p.exists(), "the damaged object is removed");
    assert_eq!(write(&s, 50, 6), id, "rerun heals to the same id");
    assert!(s.verify_object(&id).is_ok());
}

/// Canonical JSON (recipe keys, `meta`, manifests) relies on serde_json's
/// maps being sorted. A dependency that turns on serde_json's
/// `preserve_order` feature (polars' `json` feature did, through a JSONPath
/// crate) changes every key and id in the workspace: fail loudly here.
#[test]
fn serde_json_maps_stay_sorted_in_this_workspace() {
    let v: serde_json::Value = serde_json::from_str(r#"{"b": 1, "a": {"d": 2, "c": 3}}"#).unwrap();
    assert_eq!(
        v.to_string(),
        r#"{"a":{"c":3,"d":2},"b":1}"#,
        "serde_json's preserve_order is on: find who enables it (cargo tree -e features -i serde_json)"
    );
}

/// Hardening II, H2 and M1: a record that keeps its key and recipe but
/// names another step's output was a cache hit (the stage answered
/// "cached" with the wrong artifact), and a record with no outputs made the
/// stage index out of bounds. Every record is now held against its
/// outputs' own manifests, on a cache hit and before it is adopted.
#[test]
fn a_record_naming_another_steps_output_is_neither_used_nor_adopted() {
    use ragprobe_artifact::{ActionRecord, OutputRef};
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path()).unwrap();
    let mine = write(&s, 5, 1);
    let other = write(&s, 7, 2);
    let good = s.action_record(&recipe(1).key()).unwrap();
    assert!(s.check_record_outputs(&good).is_ok());
    let forge = |outputs: Vec<OutputRef>| ActionRecord {
        outputs,
        ..good.clone()
    };
    let other_out = OutputRef {
        kind: "test".into(),
        id: other.clone(),
        rows: 7,
    };
    let cases = [
        ("another recipe's output", forge(vec![other_out.clone()])),
        ("no outputs", forge(vec![])),
        (
            "the wrong kind",
            forge(vec![OutputRef {
                kind: "responses".into(),
                id: mine.clone(),
                rows: 5,
            }]),
        ),
        (
            "the wrong row count",
            forge(vec![OutputRef {
                kind: "test".into(),
                id: mine.clone(),
                rows: 6,
            }]),
        ),
    ];
    let path = d
        .path()
        .join("actions")
        .join(format!("{}.json", recipe(1).key()));
    for (what, forged) in &cases {
        let e = s.put_action_record(forged).unwrap_err().to_string();
        assert!(e.contains("altered or mixed up"), "{what}: {e}");
        // Written behind the store's back (an older pull, a hand edit): no hit.
        std::fs::write(&path, serde_json::to_string(forged).unwrap()).unwrap();
        assert!(s.cached(&recipe(1), &[]).unwrap().is_none(), "{what}");
    }
    // The stage runs again and its record replaces the forged one.
    assert_eq!(write(&s, 5, 1), mine);
    assert_eq!(
        s.cached(&recipe(1), &[]).unwrap().unwrap().outputs[0].id,
        mine
    );
    // A caller naming the kinds it reads gets a record holding each once.
    assert!(s.cached(&recipe(1), &["test"]).unwrap().is_some());
    assert!(s
        .cached(&recipe(1), &["test", "metrics"])
        .unwrap()
        .is_none());
}
