//! `data get` against a local server that speaks the hub's file protocol
//! and serves plain files: download, verify, lay out, ingest, and the
//! faults (a cut connection, a changed byte, 404, 401, no server, offline).

use ragprobe_artifact::Store;
use ragprobe_data::test_server::{Served, TestServer};
use ragprobe_data::{get, get_dataset, DataOptions, Dataset, FileSpec, Part, Source};
use ragprobe_ingest::Format;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

mod common;
use common::{ingested_from_disk, options};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture(p: &str) -> Vec<u8> {
    std::fs::read(root().join("fixtures").join(p)).unwrap()
}

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
/// The revision the registry pins for NoMIRACL.
const NOMIRACL_REV: &str = "ecd08778d0426a5ca28ac99763b0c9ddc2c78e68";

fn gzip(b: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

/// RGB's six files at its repository's raw paths; NoMIRACL's English and
/// German distribution directories (corpus gzipped, dev topics and qrels;
/// test files absent, as for a language without a test split) in the hub
/// repository at the pinned revision.
fn served() -> Served {
    let mut s = Served::default();
    for (name, file) in [
        ("en", "rgb-mini.jsonl"),
        ("zh", "rgb-zh-mini.jsonl"),
        ("en_int", "rgb-int-mini.jsonl"),
        ("zh_int", "rgb-int-mini.jsonl"),
        ("en_fact", "rgb-mini.jsonl"),
        ("zh_fact", "rgb-zh-mini.jsonl"),
    ] {
        s.plain_files.insert(rgb_path(name), fixture(file));
    }
    s.revisions.insert(
        ("miracl/nomiracl".into(), NOMIRACL_REV.into()),
        COMMIT.into(),
    );
    for folder in ["english", "german"] {
        let hub = |p: &str| {
            (
                "miracl/nomiracl".to_string(),
                COMMIT.to_string(),
                format!("data/{folder}/{p}"),
            )
        };
        s.hub_files.insert(
            hub("corpus.jsonl.gz"),
            gzip(&fixture("nomiracl-dist/en/corpus.jsonl")),
        );
        for f in [
            "topics/dev.relevant.tsv",
            "topics/dev.non_relevant.tsv",
            "qrels/dev.relevant.tsv",
            "qrels/dev.non_relevant.tsv",
        ] {
            s.hub_files
                .insert(hub(f), fixture(&format!("nomiracl-dist/en/{f}")));
        }
    }
    s
}

/// The URL path of an RGB file (the registry's URL after the mirror).
fn rgb_path(name: &str) -> String {
    format!("/chen700564/RGB/d2293eec8c76467c1572b3ebedcaca4e9b4e82f4/data/{name}.json")
}

#[test]
fn both_kinds_of_source_give_the_artifacts_of_the_same_files_from_disk() {
    let server = TestServer::start(served()).unwrap();
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path().join("store")).unwrap();
    let opts = options(&server, d.path());

    // A plain HTTPS source (GitHub raw through the mirror): all six parts.
    let rgb = get(&store, "rgb", &opts).unwrap();
    assert_eq!(rgb.parts.len(), 6);
    for p in &rgb.parts {
        assert!(!p.cached && p.fetched == 1, "{}", p.part);
        let file = rgb.dir.join(format!("{}.jsonl", p.part));
        let lang = if p.part.starts_with("zh") { "zh" } else { "en" };
        let want = ingested_from_disk(
            &d.path().join(format!("disk-{}", p.part)),
            &[file],
            &format!("rgb-{}", p.part),
            Some(lang),
            Format::Records(&ragprobe_studies::rgb::format::RgbFormat),
            None,
        );
        let got: Vec<String> = p.outputs.iter().map(|o| o.id.clone()).collect();
        assert_eq!(got, want, "{}", p.part);
    }
    assert_eq!(
        std::fs::read(rgb.dir.join("en.jsonl")).unwrap(),
        fixture("rgb-mini.jsonl")
    );

    // A hub source: two languages of NoMIRACL.
    let only = DataOptions {
        only: vec!["en".into(), "de".into()],
        ..opts.clone()
    };
    let nm = get(&store, "nomiracl", &only).unwrap();
    for p in &nm.parts {
        let want = ingested_from_disk(
            &d.path().join(format!("disk-nm-{}", p.part)),
            &[nm.dir.join(&p.part)],
            "nomiracl",
            None,
            Format::Records(&ragprobe_studies::nomiracl::format::NomiraclFormat),
            None,
        );
        let got: Vec<String> = p.outputs.iter().map(|o| o.id.clone()).collect();
        assert_eq!(got, want, "{}", p.part);
    }

    // A second get: a cache hit that asks the network nothing.
    let before = server.requests.load(Ordering::Relaxed);
    let again = get(&store, "rgb", &opts).unwrap();
    assert!(again.parts.iter().all(|p| p.cached));
    let again = get(&store, "nomiracl", &only).unwrap();
    assert!(again.parts.iter().all(|p| p.cached));
    assert_eq!(server.requests.load(Ordering::Relaxed), before);

    // Offline with a warm hub cache: laid out anew from the cache.
    std::fs::remove_dir_all(d.path().join("data/nomiracl")).unwrap();
    let offline = DataOptions {
        offline: true,
        ..only.clone()
    };
    get(&store, "nomiracl", &offline).unwrap();
    assert_eq!(server.requests.load(Ordering::Relaxed), before);
    // A cold one names what is missing.
    let cold = DataOptions {
        offline: true,
        hub_cache: d.path().join("empty-cache"),
        data_dir: d.path().join("empty-data"),
        ..only
    };
    let e = get(&store, "nomiracl", &cold).unwrap_err().to_string();
    assert!(
        e.contains("offline") && e.contains("miracl/nomiracl@ecd08778"),
        "{e}"
    );
}

#[test]
fn a_cut_connection_resumes_to_the_right_bytes() {
    let mut s = served();
    s.cut_once.insert(rgb_path("en"), 5_000);
    s.cut_once.insert(
        format!(
            "/datasets/miracl/nomiracl/resolve/{NOMIRACL_REV}/data/english/topics/dev.relevant.tsv"
        ),
        40,
    );
    let server = TestServer::start(s).unwrap();
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path().join("store")).unwrap();
    let mut opts = options(&server, d.path());
    opts.only = vec!["en".into()];
    let r = get(&store, "rgb", &opts).unwrap();
    assert_eq!(
        std::fs::read(r.dir.join("en.jsonl")).unwrap(),
        fixture("rgb-mini.jsonl")
    );
    let r = get(&store, "nomiracl", &opts).unwrap();
    assert_eq!(
        std::fs::read(r.dir.join("en/topics/dev.relevant.tsv")).unwrap(),
        fixture("nomiracl-dist/en/topics/dev.relevant.tsv")
    );
    // A part file left by a killed download is continued, not restarted.
    let dir = d.path().join("data/rgb");
    let full = fixture("rgb-zh-mini.jsonl");
    std::fs::write(dir.join("zh.jsonl.part"), &full[..1000]).unwrap();
    opts.only = vec!["zh".into()];
    get(&store, "rgb", &opts).unwrap();
    assert_eq!(std::fs::read(dir.join("zh.jsonl")).unwrap(), full);
    assert!(!dir.join("zh.jsonl.part").exists());
}

/// A dataset whose file has a pinned SHA-256 (leaked: entries are static).
fn pinned(server_path: &'static str, sha256: &'static str) -> &'static Dataset {
    let files: &'static [FileSpec] = Box::leak(Box::new([FileSpec {
        name: "en.jsonl",
        source: Source::Url(server_path),
        sha256: Some(sha256),
        bytes: None,
        optional: false,
    }]));
    let parts: &'static [Part] = Box::leak(Box::new([Part {
        name: "en",
        files,
        dataset: "rgb-en",
        lang: Some("en"),
        ingest: None,
        evidence: None,
        unpack: &[],
    }]));
    Box::leak(Box::new(Dataset {
        name: "pinned",
        study: "test",
        description: "",
        license: "",
        citation: "",
        format: Format::Records(&ragprobe_studies::rgb::format::RgbFormat),
        parts,
        access: ragprobe_data::Access::Download,
        note: "",
    }))
}

#[test]
fn other_bytes_are_refused_and_nothing_enters_the_store() {
    let server = TestServer::start(served()).unwrap();
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path().join("store")).unwrap();
    let opts = options(&server, d.path());
    // Pinned: one changed byte.
    let good = fixture("rgb-mini.jsonl");
    let want = ragprobe_data::fetch::sha256_bytes(&good);
    let mut bad = good.clone();
    bad[100] ^= 1;
    server
        .served
        .lock()
        .unwrap()
        .plain_files
        .insert("/x/en.json".into(), bad.clone());
    let e = get_dataset(
        &store,
        pinned(
            "https://example.org/x/en.json",
            Box::leak(want.clone().into_boxed_str()),
        ),
        &opts,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("SHA-256") && e.contains(&want) && e.contains("pins"),
        "{e}"
    );
    assert!(store.ids().unwrap().is_empty(), "nothing ingested");
    // Unpinned: the first download's hash is recorded; other bytes later
    // are refused, naming both.
    let mut o = opts.clone();
    o.only = vec!["en".into()];
    get(&store, "rgb", &o).unwrap();
    let n = store.ids().unwrap().len();
    server
        .served
        .lock()
        .unwrap()
        .plain_files
        .insert(rgb_path("en"), bad);
    std::fs::remove_file(d.path().join("data/rgb/en.jsonl")).unwrap();
    let e = get(&store, "rgb", &o).unwrap_err().to_string();
    assert!(
        e.contains("recorded at its first download") && e.contains("en.jsonl"),
        "{e}"
    );
    assert_eq!(store.ids().unwrap().len(), n);
}

#[test]
fn not_found_gated_and_unreachable_each_give_one_line() {
    let mut s = served();
    s.gated.insert("miracl/nomiracl".into());
    s.token = Some("secret-token-value".into());
    let server = TestServer::start(s).unwrap();
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path().join("store")).unwrap();
    let mut opts = options(&server, d.path());
    opts.only = vec!["en".into()];
    let e = get(&store, "nomiracl", &opts).unwrap_err().to_string();
    assert!(
        e.contains("401") && e.contains("HF_TOKEN") && !e.contains('\n'),
        "{e}"
    );
    // With the token it goes through, and the token is in no message or file.
    opts.hub_token = Some("secret-token-value".into());
    get(&store, "nomiracl", &opts).unwrap();
    // 404: a file the pinned revision lacks.
    opts.only = vec!["fr".into()];
    let e = get(&store, "nomiracl", &opts).unwrap_err().to_string();
    assert!(
        e.contains("404") && e.contains("fr/corpus.jsonl.gz") && e.contains("pinned revision"),
        "{e}"
    );
    assert!(!e.contains("secret-token-value"));
    // No server at all.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut dead = options(&server, &d.path().join("dead"));
    dead.mirror = Some(format!("http://127.0.0.1:{port}"));
    dead.retries = 2;
    dead.only = vec!["en".into()];
    let e = get(&store, "rgb", &dead).unwrap_err().to_string();
    assert!(
        e.contains("dataset `rgb` file `en.jsonl`") && !e.contains('\n'),
        "{e}"
    );
    // An unknown name gets the closest.
    let e = get(&store, "rbg", &opts).unwrap_err().to_string();
    assert!(e.contains("did you mean `rgb`"), "{e}");
}
