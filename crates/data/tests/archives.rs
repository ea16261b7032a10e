//! Datasets shipped as zip archives (TriviaQA-RC, SearchQA): downloaded
//! through the hub protocol from a local server, verified, unpacked into
//! the files the pipelines read, ingested to the artifacts of the same
//! files read from disk; a hostile or broken archive is refused with one
//! line and leaves nothing behind.

use ragprobe_artifact::Store;
use ragprobe_data::test_server::{Served, TestServer};
use ragprobe_data::{find, get, get_dataset, pending, Dataset, FileSpec, Part};
use ragprobe_ingest::Format;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

mod common;
use common::{ingested_from_disk, options};

const COMMIT: &str = "89abcdef0123456789abcdef0123456789abcdef";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// A zip of (member name, bytes), deflated; a name ending in `/` is a
/// directory entry.
fn zip_of(members: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in members {
        if let Some(dir) = name.strip_suffix('/') {
            w.add_directory(dir, opts).unwrap();
        } else {
            w.start_file(*name, opts).unwrap();
            w.write_all(bytes).unwrap();
        }
    }
    w.finish().unwrap().into_inner()
}

fn serve(repo: &str, revision: &str, path: &str, bytes: Vec<u8>) -> Served {
    let mut s = Served::default();
    s.revisions
        .insert((repo.into(), revision.into()), COMMIT.into());
    s.hub_files
        .insert((repo.into(), COMMIT.into(), path.into()), bytes);
    s
}

/// SearchQA's val.zip as its loading script reads it: one pretty-printed
/// JSON file per question, with a directory entry and a macOS resource
/// fork beside them.
fn searchqa_zip() -> Vec<u8> {
    let text = std::fs::read_to_string(fixtures().join("rc/searchqa-mini.jsonl")).unwrap();
    let mut members = vec![
        ("__MACOSX/._q000.json", b"\x00\x05junk".to_vec()),
        ("val/", vec![]),
    ];
    let names: Vec<String> = (0..text.lines().count())
        .map(|i| format!("q{i:03}.json"))
        .collect();
    for (line, name) in text.lines().zip(&names) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        members.push((name, serde_json::to_vec_pretty(&v).unwrap()));
    }
    // Stored out of name order: the JSON Lines follow the names.
    members.reverse();
    zip_of(&members)
}

/// SearchQA's archive `bytes` served where the registry's entry names it.
fn serve_searchqa(bytes: Vec<u8>) -> Served {
    let ragprobe_data::Source::Hub {
        repo,
        revision,
        path,
    } = find("searchqa").unwrap().parts[0].files[0].source
    else {
        panic!("searchqa is a hub source");
    };
    serve(repo, revision, path, bytes)
}

#[test]
fn searchqa_by_name_is_unpacked_to_json_lines_and_ingested_as_the_same_file_from_disk() {
    let reg = find("searchqa").unwrap();
    let server = TestServer::start(serve_searchqa(searchqa_zip())).unwrap();
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path().join("store")).unwrap();
    let opts = options(&server, d.path());

    let got = get(&store, "searchqa", &opts).unwrap();
    let dir = got.dir.clone();
    let laid = dir.join("searchqa-dev.jsonl");
    // One compact line per question, in member-name order (the fixture's):
    // written here independently, then ingested from disk.
    let fixture = std::fs::read_to_string(fixtures().join("rc/searchqa-mini.jsonl")).unwrap();
    let compact: String = fixture
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l)
                .unwrap()
                .to_string()
                + "\n"
        })
        .collect();
    assert_eq!(std::fs::read_to_string(&laid).unwrap(), compact);
    let by_hand = d.path().join("by-hand/searchqa-dev.jsonl");
    std::fs::create_dir_all(by_hand.parent().unwrap()).unwrap();
    std::fs::write(&by_hand, &compact).unwrap();
    let want = ingested_from_disk(
        &d.path().join("disk"),
        &[by_hand],
        "searchqa",
        None,
        Format::Searchqa,
        None,
    );
    let ids: Vec<String> = got.parts[0].outputs.iter().map(|o| o.id.clone()).collect();
    assert_eq!(ids, want);
    assert!(!dir.join("searchqa-dev.jsonl.unpack").exists());

    // Unpacked, the archive is not needed: deleted, nothing is fetched
    // again and nothing is pending.
    std::fs::remove_file(dir.join("searchqa-val.zip")).unwrap();
    let before = server.requests.load(Ordering::Relaxed);
    let again = get(&store, "searchqa", &opts).unwrap();
    assert!(again.parts[0].cached);
    assert!(pending(reg, &opts).unwrap().is_empty());
    assert_eq!(server.requests.load(Ordering::Relaxed), before);
}

/// The registry's TriviaQA-RC entry with its file's pinned hash dropped (the
/// test serves a small archive in the real one's layout).
fn triviaqa_unpinned() -> &'static Dataset {
    let reg = find("triviaqa-rc").unwrap();
    let part = reg.parts[0];
    let files: &'static [FileSpec] = Box::leak(Box::new([FileSpec {
        sha256: None,
        bytes: None,
        ..part.files[0]
    }]));
    let parts: &'static [Part] = Box::leak(Box::new([Part { files, ..part }]));
    Box::leak(Box::new(Dataset { parts, ..*reg }))
}

/// triviaqa-rc.zip's layout: `qa/<domain>-<split>.json` and
/// `evidence/{wikipedia,web}/<file>`.
fn triviaqa_zip() -> Vec<u8> {
    let fx = fixtures().join("rc");
    let mut members = vec![
        ("qa/", vec![]),
        (
            "qa/wikipedia-dev.json",
            std::fs::read(fx.join("triviaqa-mini.json")).unwrap(),
        ),
        ("qa/web-dev.json", b"{}".to_vec()),
        ("evidence/web/unused.txt", b"not read".to_vec()),
    ];
    let mut names: Vec<String> = std::fs::read_dir(fx.join("triviaqa-evidence/wikipedia"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    for n in &names {
        let bytes = std::fs::read(fx.join("triviaqa-evidence/wikipedia").join(n)).unwrap();
        members.push((
            Box::leak(format!("evidence/wikipedia/{n}").into_boxed_str()),
            bytes,
        ));
    }
    zip_of(&members)
}

#[test]
fn triviaqa_rc_unpacks_its_questions_and_evidence_and_ingests_as_from_disk() {
    let dataset = triviaqa_unpinned();
    let server = TestServer::start(serve(
        "mandarjoshi/trivia_qa",
        "main",
        "data/triviaqa-rc.zip",
        triviaqa_zip(),
    ))
    .unwrap();
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path().join("store")).unwrap();
    let opts = options(&server, d.path());
    let got = get_dataset(&store, dataset, &opts).unwrap();
    let dir = &got.dir;
    assert_eq!(
        std::fs::read(dir.join("triviaqa/wikipedia-dev.json")).unwrap(),
        std::fs::read(fixtures().join("rc/triviaqa-mini.json")).unwrap()
    );
    assert!(dir.join("triviaqa-evidence/wikipedia/Danube.txt").is_file());
    assert!(!dir.join("triviaqa-evidence/web").exists());
    // The fixture under the name the pipeline reads, with its evidence.
    let by_hand = d.path().join("by-hand/wikipedia-dev.json");
    std::fs::create_dir_all(by_hand.parent().unwrap()).unwrap();
    std::fs::copy(fixtures().join("rc/triviaqa-mini.json"), &by_hand).unwrap();
    let want = ingested_from_disk(
        &d.path().join("disk"),
        &[by_hand],
        "triviaqa",
        None,
        Format::Triviaqa,
        Some(fixtures().join("rc/triviaqa-evidence")),
    );
    let ids: Vec<String> = got.parts[0].outputs.iter().map(|o| o.id.clone()).collect();
    assert_eq!(ids, want);
}

#[test]
fn a_hostile_or_broken_archive_is_refused_in_one_line_and_leaves_nothing() {
    for (members, says) in [
        (
            vec![
                ("ok.json", br#"{"question":"q","answer":"a"}"#.to_vec()),
                ("../escape.json", b"{}".to_vec()),
            ],
            "member `../escape.json` is not a safe relative path",
        ),
        (
            vec![
                ("ok.json", br#"{"question":"q","answer":"a"}"#.to_vec()),
                ("bad.json", b"{\"question\": ".to_vec()),
            ],
            "member `bad.json`: line 1",
        ),
    ] {
        let server = TestServer::start(serve_searchqa(zip_of(&members))).unwrap();
        let d = tempfile::tempdir().unwrap();
        let store = Store::open(d.path().join("store")).unwrap();
        let e = get(&store, "searchqa", &options(&server, d.path()))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("dataset `searchqa` archive `searchqa-val.zip`") && e.contains(says),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
        let study = d.path().join("data/rag-stress");
        assert!(!study.join("searchqa-dev.jsonl").exists());
        assert!(!study.join("searchqa-dev.jsonl.unpack").exists());
        assert!(
            !d.path().join("data/escape.json").exists() && !study.join("../escape.json").exists()
        );
        assert_eq!(store.list().unwrap().len(), 0, "nothing entered the store");
    }
}
