//! `ragprobe data` through the command line, with a local server standing
//! in for the internet: datasets fetched by name, then a study's pipeline
//! run on them against the mock model server.

use ragprobe_data::test_server::{Served, TestServer};
use ragprobe_mock::{start, MockConfig, Replies};
use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::root;

fn rp(store: &Path, args: &[&str], mirror: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ragprobe"))
        .arg("--store")
        .arg(store)
        .args(args)
        .env("RAGPROBE_MIRROR", mirror)
        .env("HF_HUB_CACHE", store.join("hub-cache"))
        .env_remove("RAGPROBE_DATA")
        .env_remove("HF_ENDPOINT")
        .current_dir(root())
        .output()
        .unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `ragprobe` with the hub at `hub` (cache `cache`), from `fixtures/`: its
/// `<kind>\t<id>` lines; the command must succeed.
fn outputs_via_hub(store: &Path, hub: &str, cache: &Path, args: &[&str]) -> Vec<(String, String)> {
    let o = Command::new(env!("CARGO_BIN_EXE_ragprobe"))
        .arg("--store")
        .arg(store)
        .args(args)
        .env("HF_ENDPOINT", hub)
        .env("HF_HUB_CACHE", cache)
        .env_remove("HF_HUB_OFFLINE")
        .current_dir(root().join("fixtures"))
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{args:?}: {err}");
    out.lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn a_study_runs_on_data_fetched_by_name() {
    let server = rgb_server();
    let d = tempfile::tempdir().unwrap();
    let store = d.path().join("store");

    let o = rp(&store, &["data", "get", "--study", "rgb"], &server.url());
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines.len(),
        12,
        "questions and contexts of six parts: {out}"
    );
    assert!(lines
        .iter()
        .all(|l| l.starts_with("questions\t") || l.starts_with("contexts\t")));
    // Again: the same lines, no request.
    let before = server.requests.load(std::sync::atomic::Ordering::Relaxed);
    let (again, _) = text(&rp(&store, &["data", "get", "rgb"], &server.url()));
    assert_eq!(again, out);
    assert_eq!(
        server.requests.load(std::sync::atomic::Ordering::Relaxed),
        before
    );
    let (ls, _) = text(&rp(&store, &["data", "ls"], &server.url()));
    assert!(
        ls.lines()
            .any(|l| l.starts_with("rgb ") && l.contains(" yes ")),
        "{ls}"
    );
    // A mistyped name, a study with datasets placed by hand: one line each.
    let o = rp(&store, &["data", "get", "rbg"], &server.url());
    let (_, err) = text(&o);
    assert!(
        !o.status.success() && err.contains("did you mean `rgb`"),
        "{err}"
    );
    let o = rp(
        &store,
        &["data", "get", "--study", "imperfect-retrieval"],
        &server.url(),
    );
    let (_, err) = text(&o);
    assert!(
        !o.status.success() && err.contains("placed by hand") && err.contains("`tqa`"),
        "{err}"
    );

    // The study's pipeline on what was fetched, against the mock.
    let (_rt, mock) = scripted_mock();
    let report = d.path().join("report");
    let data = store.join("datasets/rgb");
    let o = rp(
        &store,
        &[
            "run",
            "pipelines/rgb.toml",
            "--set",
            &format!("base_url={}", mock.base_url()),
            "--set",
            "model=mock-model",
            "--set",
            &format!("data={}", data.display()),
            "--set",
            &format!("out={}", report.display()),
        ],
        &server.url(),
    );
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(report.join("index.html").is_file());
}

/// The mock model server with scripted replies, on its own runtime (kept
/// alive by the caller).
fn scripted_mock() -> (tokio::runtime::Runtime, ragprobe_mock::MockServer) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mock = rt
        .block_on(start(
            MockConfig {
                replies: Replies::Scripted,
                ..Default::default()
            },
            0,
        ))
        .unwrap();
    (rt, mock)
}

/// RGB's six files on a plain-file server laid out as the registry's
/// source (GitHub raw at the pinned commit).
fn rgb_server() -> TestServer {
    let mut s = Served::default();
    for (name, file) in [
        ("en", "rgb-mini"),
        ("zh", "rgb-zh-mini"),
        ("en_int", "rgb-int-mini"),
        ("zh_int", "rgb-int-mini"),
        ("en_fact", "rgb-mini"),
        ("zh_fact", "rgb-zh-mini"),
    ] {
        s.plain_files.insert(
            format!("/chen700564/RGB/d2293eec8c76467c1572b3ebedcaca4e9b4e82f4/data/{name}.json"),
            std::fs::read(root().join(format!("fixtures/{file}.jsonl"))).unwrap(),
        );
    }
    TestServer::start(s).unwrap()
}

/// `step\tkind\tid` lines of the ingest steps in a run's output.
fn ingest_lines(out: &str) -> Vec<String> {
    let mut v: Vec<String> = out
        .lines()
        .filter(|l| {
            [
                "en\t",
                "zh\t",
                "en_fact\t",
                "zh_fact\t",
                "en_int\t",
                "zh_int\t",
            ]
            .iter()
            .any(|p| l.starts_with(p))
        })
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

/// #34: a pipeline's ingest steps name their dataset (`fetch = "rgb"`,
/// `part = "en"`): with no `data` set, `run --dry-run` lists the downloads,
/// `run` fetches them and reads the same files as a run given them by
/// path (same artifact ids), and a second run makes no request.
#[test]
fn a_pipeline_fetches_the_datasets_its_steps_name() {
    let server = rgb_server();
    let d = tempfile::tempdir().unwrap();
    let store = d.path().join("store");
    let (_rt, mock) = scripted_mock();
    let base = format!("base_url={}", mock.base_url());
    let out = format!("out={}", d.path().join("report").display());
    let args = [
        "run",
        "pipelines/rgb.toml",
        "--set",
        &base,
        "--set",
        "model=mock-model",
        "--set",
        &out,
    ];
    let mut dry = args.to_vec();
    dry.push("--dry-run");
    let (plan, err) = text(&rp(&store, &dry, &server.url()));
    assert!(
        plan.contains("downloads into") && plan.contains("rgb en_fact.jsonl"),
        "{plan}{err}"
    );
    assert_eq!(
        server.requests.load(std::sync::atomic::Ordering::Relaxed),
        0,
        "a dry run downloads nothing"
    );

    let o = rp(&store, &args, &server.url());
    let (by_name, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(d.path().join("report/index.html").is_file());
    assert_eq!(ingest_lines(&by_name).len(), 12, "{by_name}");

    // The same files given by path: the same artifacts.
    let other = d.path().join("other");
    let data = format!("data={}", store.join("datasets/rgb").display());
    let mut by_path_args = args.to_vec();
    by_path_args.extend(["--set", &data]);
    let o = rp(&other, &by_path_args, "http://127.0.0.1:9");
    let (by_path, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(ingest_lines(&by_path), ingest_lines(&by_name));

    // Again: every step cached, no request.
    let before = server.requests.load(std::sync::atomic::Ordering::Relaxed);
    let o = rp(&store, &args, &server.url());
    let (_, err) = text(&o);
    assert!(o.status.success() && err.contains("0 step(s) run"), "{err}");
    assert_eq!(
        server.requests.load(std::sync::atomic::Ordering::Relaxed),
        before
    );
}

/// #34: `kill -9` of `data get` in the middle of a file, then a rerun:
/// the finished file is not fetched again, the cut one continues from its
/// `.part` with a range request, and the artifacts are the ones an
/// uninterrupted download gives.
#[test]
fn a_killed_download_resumes_without_fetching_finished_files() {
    let server = rgb_server();
    let zh = "/chen700564/RGB/d2293eec8c76467c1572b3ebedcaca4e9b4e82f4/data/zh.json".to_string();
    let en = zh.replace("zh.json", "en.json");
    server.served.lock().unwrap().stall.insert(zh.clone(), 3000);
    let d = tempfile::tempdir().unwrap();
    let store = d.path().join("store");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ragprobe"))
        .arg("--store")
        .arg(&store)
        .args(["data", "get", "rgb"])
        .env("RAGPROBE_MIRROR", server.url())
        .env_remove("RAGPROBE_DATA")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let part = store.join("datasets/rgb/zh.jsonl.part");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::fs::metadata(&part).map(|m| m.len()).unwrap_or(0) < 3000 {
        assert!(
            std::time::Instant::now() < deadline,
            "the download did not start"
        );
        assert!(child.try_wait().unwrap().is_none(), "ragprobe exited early");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(store.join("datasets/rgb/en.jsonl").is_file());
    assert!(
        !store.join("datasets/rgb/zh.jsonl").exists(),
        "no half file under the final name"
    );

    server.served.lock().unwrap().stall.clear();
    let o = rp(&store, &["data", "get", "rgb"], &server.url());
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    {
        let s = server.served.lock().unwrap();
        assert_eq!(s.gets[&en], 1, "the finished file is not fetched again");
        assert_eq!(s.gets[&zh], 2);
        assert_eq!(
            s.ranged_gets[&zh], 1,
            "the cut file continues from its part"
        );
    }
    assert_eq!(
        std::fs::read(store.join("datasets/rgb/zh.jsonl")).unwrap(),
        std::fs::read(root().join("fixtures/rgb-zh-mini.jsonl")).unwrap()
    );
    let fresh = d.path().join("fresh");
    let (whole, _) = text(&rp(&fresh, &["data", "get", "rgb"], &server.url()));
    assert_eq!(out, whole);
}

/// `--model hf:<owner>/<name>/<file>@<rev>` fetches the GGUF through the hub
/// protocol (here the local server) into the hub cache; the model's content
/// hash is its identity, so the responses are the ones the same file gives
/// by path (that run is a cache hit).
#[test]
fn a_model_by_name_is_the_same_model_as_its_file() {
    let gguf = ragprobe_models::paths::smollm2_gguf();
    if !gguf.is_file() {
        eprintln!("SKIPPED: the embedded model is not fetched (run `bash scripts/fetch-models.sh`; `make test` does)");
        return;
    }
    let commit = "89abcdef0123456789abcdef0123456789abcdef";
    let mut s = Served::default();
    let repo = "bartowski/SmolLM2-135M-Instruct-GGUF";
    s.revisions
        .insert((repo.into(), commit.into()), commit.into());
    s.model_files.insert(
        (
            repo.into(),
            commit.into(),
            "SmolLM2-135M-Instruct-Q4_1.gguf".into(),
        ),
        std::fs::read(&gguf).unwrap(),
    );
    let server = TestServer::start(s).unwrap();
    let d = tempfile::tempdir().unwrap();
    let store = d.path().join("store");
    let run = |args: &[&str]| outputs_via_hub(&store, &server.url(), &d.path().join("hub"), args);
    let q = run(&["ingest", "--format", "dpr", "nq-mini-array.json"])
        .into_iter()
        .find(|(k, _)| k == "questions")
        .unwrap()
        .1;
    let cases = run(&[
        "perturb",
        "--questions",
        &q,
        "-s",
        "closed-book",
        "--limit",
        "2",
    ])[0]
        .1
        .clone();
    let spec = format!("hf:{repo}/SmolLM2-135M-Instruct-Q4_1.gguf@{commit}");
    let gen = |model: &str| {
        run(&[
            "generate",
            "--cases",
            &cases,
            "--prompt",
            "imperfect-closed-book",
            "--max-tokens",
            "4",
            "--model",
            model,
        ])[0]
            .1
            .clone()
    };
    let by_name = gen(&spec);
    let by_path = gen(gguf.to_str().unwrap());
    assert_eq!(by_name, by_path);
    // A second run by name finds the file in the hub cache: no request.
    let before = server.requests.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(gen(&spec), by_name);
    assert_eq!(
        server.requests.load(std::sync::atomic::Ordering::Relaxed),
        before
    );
}

/// `--embed-model hf:<owner>/<name>@<rev>` for the in-process encoder
/// fetches its three files through the hub protocol; the same files give
/// the same contexts as the built-in all-MiniLM-L6-v2.
#[test]
fn an_encoder_by_name_is_the_same_encoder_as_its_files() {
    let dir = ragprobe_models::paths::minilm_dir();
    if !dir.join("model.safetensors").is_file() {
        eprintln!("SKIPPED: the embedded models are not fetched (run `bash scripts/fetch-models.sh`; `make test` does)");
        return;
    }
    let commit = "c9745ed1d9f207416be6d2e6f8de32d1f16199bf";
    let repo = "sentence-transformers/all-MiniLM-L6-v2";
    let mut s = Served::default();
    s.revisions
        .insert((repo.into(), commit.into()), commit.into());
    for f in ["config.json", "tokenizer.json", "model.safetensors"] {
        s.model_files.insert(
            (repo.into(), commit.into(), f.into()),
            std::fs::read(dir.join(f)).unwrap(),
        );
    }
    let server = TestServer::start(s).unwrap();
    let d = tempfile::tempdir().unwrap();
    let store = d.path().join("store");
    let run = |args: &[&str]| outputs_via_hub(&store, &server.url(), &d.path().join("hub"), args);
    let ing = run(&["ingest", "--format", "beir", "corpus"]);
    let id = |k: &str| ing.iter().find(|(kind, _)| kind == k).unwrap().1.clone();
    let (corpus, questions) = (id("corpus"), id("questions"));
    let retrieve = |extra: &[&str]| {
        let mut args = vec![
            "retrieve",
            "--corpus",
            &corpus,
            "--questions",
            &questions,
            "-k",
            "3",
            "--method",
            "dense",
        ];
        args.extend_from_slice(extra);
        run(&args)
            .into_iter()
            .find(|(k, _)| k == "contexts")
            .unwrap()
            .1
    };
    let spec = format!("hf:{repo}@{commit}");
    let by_name = retrieve(&["--embed-model", &spec]);
    let built_in = retrieve(&[]);
    assert_eq!(by_name, built_in);
}

/// A dataset placed by hand (MedQA) is keyed on its files, not only on its
/// registry entry: edit the file and the pipeline's ingest step runs again
/// and reads the new bytes (it was a cache hit of the old artifacts).
#[test]
fn a_dataset_placed_by_hand_is_keyed_on_its_files() {
    let d = tempfile::tempdir().unwrap();
    let store = d.path().join("store");
    let placed = store.join("datasets/rag-stress/medqa-test.jsonl");
    std::fs::create_dir_all(placed.parent().unwrap()).unwrap();
    let full = std::fs::read_to_string(root().join("fixtures/rc/medqa-mini-en.jsonl")).unwrap();
    std::fs::write(&placed, &full).unwrap();
    let pipeline = d.path().join("medqa.toml");
    std::fs::write(
        &pipeline,
        "[vars]\ndata = \"not-here\"\n\n[steps.medqa]\nstage = \"ingest\"\nformat = \"mcq\"\n\
         dataset = \"medqa\"\npaths = [\"{{data}}/medqa-test.jsonl\"]\nfetch = \"medqa\"\npart = \"test\"\n",
    )
    .unwrap();
    let run = || {
        let o = rp(
            &store,
            &["run", pipeline.to_str().unwrap()],
            "http://127.0.0.1:9",
        );
        let (out, err) = text(&o);
        assert!(o.status.success(), "{err}");
        let ids: Vec<String> = out
            .lines()
            .filter(|l| l.starts_with("medqa\t"))
            .map(str::to_string)
            .collect();
        assert!(!ids.is_empty(), "{out}");
        (ids, err)
    };
    let (first, _) = run();
    let (again, err) = run();
    assert_eq!(again, first);
    assert!(err.contains("0 step(s) run"), "{err}");
    let first_line = full.lines().next().unwrap();
    std::fs::write(&placed, format!("{first_line}\n")).unwrap();
    let (edited, err) = run();
    assert!(err.contains("1 step(s) run"), "{err}");
    assert_ne!(edited, first, "the edited file gives other artifacts");
}
