//! A generate run killed part-way (kill -9 of the child process) and rerun
//! finishes with the same artifact id as an uninterrupted run, and the
//! server never sees a finished request again.

use ragprobe_mock::{start, MockConfig};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::fixtures;

/// `ragprobe --store STORE ARGS` in the fixtures; asserts success; its outputs.
fn rp(store: &Path, args: &[&str]) -> Vec<(String, String)> {
    common::run_ok(&fixtures(), store, args).0
}

/// 120 cases from the NQ fixture (closed-book, base, add-random).
fn make_cases(store: &Path) -> String {
    let ing = rp(store, &["ingest", "--format", "dpr", "nq-mini.jsonl"]);
    let get = |k: &str| ing.iter().find(|(x, _)| x == k).unwrap().1.clone();
    let out = rp(
        store,
        &[
            "perturb",
            "--questions",
            &get("questions"),
            "--contexts",
            &get("contexts"),
            "-s",
            "closed-book,base,add-random",
            "-k",
            "3",
        ],
    );
    out[0].1.clone()
}

fn gen_args<'a>(cases: &'a str, url: &'a str) -> Vec<&'a str> {
    vec![
        "generate",
        "--cases",
        cases,
        "--prompt",
        "imperfect-normal",
        "--backend",
        "openai",
        "--base-url",
        url,
        "--model",
        "mock-model",
        "--concurrency",
        "4",
        "--max-tokens",
        "8",
    ]
}

fn journal_lines(store: &Path) -> usize {
    let dir = store.join("requests");
    std::fs::read_dir(&dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| {
                    std::fs::read_to_string(e.path())
                        .unwrap_or_default()
                        .lines()
                        .filter(|l| l.ends_with('}'))
                        .count()
                })
                .sum()
        })
        .unwrap_or(0)
}

#[test]
fn killed_generation_resumes_to_the_same_artifact() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let slow = || MockConfig {
        latency: Duration::from_millis(25),
        ..Default::default()
    };
    let d = tempfile::tempdir().unwrap();

    // Uninterrupted reference run.
    let s0 = d.path().join("s0");
    let c0 = make_cases(&s0);
    let m0 = rt.block_on(start(slow(), 0)).unwrap();
    let reference = rp(&s0, &gen_args(&c0, &m0.base_url()))[0].1.clone();

    // Interrupted run: kill -9 once some requests are journaled.
    let s1 = d.path().join("s1");
    let c1 = make_cases(&s1);
    assert_eq!(c0, c1);
    let m1 = rt.block_on(start(slow(), 0)).unwrap();
    let url1 = m1.base_url();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ragprobe"))
        .arg("--store")
        .arg(&s1)
        .args(gen_args(&c1, &url1))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while journal_lines(&s1) < 30 && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let finished = journal_lines(&s1);
    assert!(
        (30..120).contains(&finished),
        "killed part-way ({finished} finished)"
    );

    // Resume against a fresh server: it must see only the unfinished requests.
    let m2 = rt.block_on(start(slow(), 0)).unwrap();
    let resumed = rp(&s1, &gen_args(&c1, &m2.base_url()))[0].1.clone();
    assert_eq!(
        resumed, reference,
        "same artifact id as the uninterrupted run"
    );
    assert_eq!(m2.stats.answered_twice(), 0);
    assert_eq!(
        m2.stats.distinct_answered(),
        120 - finished,
        "no finished request was sent again"
    );
}

#[test]
fn the_embedded_model_answers_fixture_cases_and_a_rerun_is_cached() {
    if !ragprobe_models::paths::smollm2_gguf().is_file() {
        eprintln!("SKIPPED: the embedded model is not fetched (run `bash scripts/fetch-models.sh`; `make test` does)");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let s = d.path();
    let ing = rp(s, &["ingest", "--format", "dpr", "nq-mini-array.json"]);
    let q = ing
        .iter()
        .find(|(k, _)| k == "questions")
        .unwrap()
        .1
        .clone();
    let cases = rp(s, &["perturb", "--questions", &q, "-s", "closed-book"])[0]
        .1
        .clone();
    let args = [
        "generate",
        "--cases",
        &cases,
        "--prompt",
        "imperfect-closed-book",
        "--max-tokens",
        "12",
    ];
    let first = rp(s, &args)[0].1.clone();
    let store = ragprobe_artifact::Store::open(s).unwrap();
    let rows = ragprobe_artifact::read::<ragprobe_artifact::Responses>(&store, &first).unwrap();
    assert_eq!(rows.len(), 10);
    assert!(rows.iter().all(|r| r.error.is_none()
        && r.text.is_some()
        && r.backend == "local"
        && r.token_ids.is_some()));
    let o = Command::new(env!("CARGO_BIN_EXE_ragprobe"))
        .arg("--store")
        .arg(s)
        .args(args)
        .current_dir(fixtures())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("cached, not run"));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        format!("responses\t{first}")
    );
}
