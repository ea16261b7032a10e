//! The pipeline runner: validation before anything runs, the quickstart end
//! to end with the embedded model, caching, and resuming a killed run.

use ragprobe_mock::{start, MockConfig};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{ragprobe, root, run_with_env, stderr};

fn invalid(text: &str) -> String {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("p.toml");
    std::fs::write(&p, text).unwrap();
    let o = ragprobe(&d.path().join("s"), &["run", p.to_str().unwrap()]);
    assert!(!o.status.success(), "an invalid pipeline must be rejected");
    assert!(
        !d.path()
            .join("s/objects")
            .read_dir()
            .map(|mut r| r.next().is_some())
            .unwrap_or(false),
        "nothing ran"
    );
    stderr(&o)
}

const INGEST: &str =
    "[steps.q]\nstage = \"ingest\"\nformat = \"dpr\"\npaths = [\"fixtures/nq-mini.jsonl\"]\n";

#[test]
fn unknown_stage_names_the_line() {
    let e = invalid(&format!("{INGEST}\n[steps.x]\nstage = \"train\"\n"));
    assert!(
        e.contains("p.toml:6") && e.contains("unknown stage `train`"),
        "{e}"
    );
}

#[test]
fn a_cycle_is_rejected() {
    let e = invalid("[steps.a]\nstage = \"perturb\"\nquestions = \"@b.cases\"\nscenario = \"base\"\n\n[steps.b]\nstage = \"perturb\"\nquestions = \"@a.cases\"\nscenario = \"base\"\n");
    assert!(e.contains("p.toml:1") && e.contains("cycle"), "{e}");
}

#[test]
fn a_missing_input_step_names_the_line() {
    let e = invalid(&format!("{INGEST}\n[steps.c]\nstage = \"perturb\"\nquestions = \"@nope.questions\"\nscenario = \"base\"\n"));
    assert!(
        e.contains("p.toml:8") && e.contains("no step `nope`"),
        "{e}"
    );
}

#[test]
fn a_bad_parameter_names_the_step() {
    let e = invalid(&format!("{INGEST}\n[steps.c]\nstage = \"perturb\"\nquestions = \"@q.questions\"\nscenario = \"base\"\nwobble = 3\n"));
    assert!(
        e.contains("p.toml:6") && e.contains("step `c`") && e.contains("wobble"),
        "{e}"
    );
}

#[test]
fn an_unknown_variable_names_the_line() {
    let e = invalid("[steps.q]\nstage = \"ingest\"\nformat = \"dpr\"\npaths = [\"{{nowhere}}/nq-mini.jsonl\"]\n");
    assert!(
        e.contains("p.toml:4") && e.contains("unknown variable `nowhere`"),
        "{e}"
    );
}

/// The embedded models are not fetched (said, so the test is seen skipped).
fn models_missing() -> bool {
    let missing = !ragprobe_models::paths::smollm2_gguf().is_file()
        || !ragprobe_models::paths::minilm_dir()
            .join("model.safetensors")
            .is_file();
    if missing {
        eprintln!(
            "SKIPPED: models not fetched (run `bash scripts/fetch-models.sh`; `make test` does)"
        );
    }
    missing
}

#[test]
fn quickstart_end_to_end_then_fully_cached() {
    if models_missing() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let store = d.path().join("store");
    let out = d.path().join("report");
    let args = [
        "run",
        "pipelines/quickstart.toml",
        "--set",
        "n=3",
        "--set",
        &format!("out={}", out.display()),
    ];
    let first = ragprobe(&store, &args);
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(out.join("index.html").is_file());
    // Every expected metric exists, is finite and has n > 0.
    let stdout = String::from_utf8_lossy(&first.stdout).into_owned();
    let metrics_id = stdout
        .lines()
        .find(|l| l.starts_with("score\tmetrics\t"))
        .unwrap()
        .split('\t')
        .nth(2)
        .unwrap()
        .to_string();
    let s = ragprobe_artifact::Store::open(&store).unwrap();
    let rows = ragprobe_artifact::read::<ragprobe_artifact::Metrics>(&s, &metrics_id).unwrap();
    let expect = [
        ("qa", "closed-book", "acc"),
        ("qa", "base", "acc"),
        ("qa", "base", "em"),
        ("qa", "base", "f1"),
        ("imperfect", "base", "acc_unans"),
        ("imperfect", "add-random", "rad"),
        ("imperfect", "add-conflict", "acc_c"),
        ("nomiracl", "non_relevant", "hallucination_rate"),
        ("nomiracl", "relevant", "error_rate"),
        ("stress", "clean/all", "clean_acc"),
        ("rgb", "rgb-noise-0", "acc"),
        ("rgb", "rgb-noise-1", "rejection_rate"),
        ("rgb", "rgb-counterfactual-0", "error_detection_rate"),
    ];
    for (study, cond, metric) in expect {
        let m = rows
            .iter()
            .find(|r| r.study == study && r.condition == cond && r.metric == metric)
            .unwrap_or_else(|| panic!("no {study}/{cond}/{metric}"));
        assert!(
            m.n > 0 && m.value.is_some_and(f64::is_finite),
            "{study}/{cond}/{metric}: {m:?}"
        );
    }
    let second = ragprobe(&store, &args);
    assert!(second.status.success());
    assert!(
        stderr(&second).contains(": 0 step(s) run"),
        "{}",
        stderr(&second)
    );
    assert_eq!(
        String::from_utf8_lossy(&second.stdout),
        stdout,
        "same artifacts"
    );
    share_through_s3(d.path(), &store, &args, &out, &stdout);
}

/// The quickstart run travels to a teammate through a real S3 server
/// (moto on 127.0.0.1): pushed by pipeline, pulled by id, and the same
/// pipeline there computes nothing and calls no model.
/// The fifth study through the CLI: its formats, scenario, prompts, judge,
/// table and verdicts reach every stage from its one registration line.
#[test]
fn faitheval_end_to_end_through_the_registered_study() {
    if models_missing() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let (store, out) = (d.path().join("store"), d.path().join("report"));
    let args = [
        "run",
        "crates/studies/src/faitheval/pipeline.toml",
        "--set",
        "max_tokens=12",
        "--set",
        &format!("out={}", out.display()),
    ];
    let first = ragprobe(&store, &args);
    assert!(first.status.success(), "{}", stderr(&first));
    let table = std::fs::read_to_string(out.join("tables/faitheval.md")).unwrap();
    for dataset in [
        "faitheval-unanswerable",
        "faitheval-inconsistent",
        "faitheval-counterfactual",
    ] {
        assert!(table.contains(&format!("{dataset}: Acc")), "{table}");
    }
    assert!(table.contains("Acc (strict)"), "{table}");
    let csv = std::fs::read_to_string(out.join("tables/all_metrics.csv")).unwrap();
    let n: Vec<&str> = csv
        .lines()
        .filter(|l| l.starts_with("faitheval,") && l.contains(",acc,"))
        .collect();
    assert_eq!(n.len(), 3, "one accuracy per task:\n{csv}");
    let again = ragprobe(&store, &args);
    assert!(again.status.success());
    assert!(
        stderr(&again).contains("0 step(s) run"),
        "{}",
        stderr(&again)
    );
}

fn share_through_s3(dir: &Path, store: &Path, args: &[&str], out: &Path, stdout: &str) {
    let server = match ragprobe_remote::test_server::S3Server::start(dir.join("moto.log")).unwrap()
    {
        Some(s) => s,
        None if std::env::var("RAGPROBE_REQUIRE_S3").as_deref() == Ok("1") => {
            panic!("moto_server not found: run `bash scripts/s3-server.sh install`")
        }
        None => {
            eprintln!("SKIPPED (sharing part): no moto_server");
            return;
        }
    };
    server.create_bucket("lab").unwrap();
    // HOME stays: the embedded models live under it.
    let env = [
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
    ];
    let rp = |s: &Path, a: &[&str]| {
        let mut full = vec!["--store", s.to_str().unwrap()];
        full.extend_from_slice(a);
        let o = run_with_env(&root(), None, &full, &env);
        assert!(o.status.success(), "{:?}: {}", a, stderr(&o));
        o
    };
    let teammate = dir.join("teammate");
    for s in [store, teammate.as_path()] {
        rp(
            s,
            &[
                "remote",
                "add",
                "team",
                "s3://lab/ragprobe",
                "--endpoint",
                &server.endpoint(),
            ],
        );
    }
    let mut push = vec!["artifacts", "push", "--with-journals", "--pipeline"];
    push.extend_from_slice(args[1..].as_ref());
    let pushed = stderr(&rp(store, &push));
    assert!(pushed.contains(" sent ("), "{pushed}");
    // The report directory names its inputs; pushing it again sends nothing new.
    let again = stderr(&rp(
        store,
        &["artifacts", "push", "--report", out.to_str().unwrap()],
    ));
    assert!(again.contains(": 0 sent"), "{again}");
    let ids: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.split('\t').nth(2))
        .collect();
    let mut pull = vec!["artifacts", "pull", "--with-journals"];
    pull.extend(ids.iter().copied());
    rp(&teammate, &pull);
    rp(&teammate, &["artifacts", "verify"]);
    let mut run = vec![];
    run.extend_from_slice(args);
    let there = rp(&teammate, &run);
    let err = stderr(&there);
    // Every computing step is answered by the action records that came
    // with the pull; only the report is rendered again (it writes files).
    assert!(
        err.contains(": 1 step(s) run") && err.contains("requests: 0 new"),
        "{err}"
    );
    assert_eq!(
        String::from_utf8_lossy(&there.stdout),
        stdout,
        "the same artifacts"
    );
}

/// A small pipeline against a loopback OpenAI-compatible mock.
fn mock_pipeline(dir: &Path, url: &str) -> PathBuf {
    let p = dir.join("mock.toml");
    std::fs::write(
        &p,
        format!(
            "[vars]\nurl = \"{url}\"\n\n{INGEST}\n[steps.c]\nstage = \"perturb\"\nquestions = \"@q.questions\"\ncontexts = \"@q.contexts\"\nscenario = [\"closed-book\", \"base\", \"add-random\"]\n\n\
             [steps.g]\nstage = \"generate\"\ncases = \"@c.cases\"\nprompt = \"imperfect-normal\"\nbackend = \"openai\"\nbase-url = \"{{{{url}}}}\"\nmodel = \"mock-model\"\nconcurrency = 4\n\n\
             [steps.s]\nstage = \"score\"\nresponses = \"@g.responses\"\nbootstrap = 200\n"
        ),
    )
    .unwrap();
    p
}

#[test]
fn a_killed_pipeline_resumes_to_the_same_artifacts() {
    let rt = common::runtime();
    let cfg = || MockConfig {
        latency: Duration::from_millis(25),
        ..Default::default()
    };
    let d = tempfile::tempdir().unwrap();
    let m0 = rt.block_on(start(cfg(), 0)).unwrap();
    let p0 = mock_pipeline(d.path(), &m0.base_url());
    let reference = ragprobe(&d.path().join("s0"), &["run", p0.to_str().unwrap()]);
    assert!(reference.status.success(), "{}", stderr(&reference));
    let final_ids = |o: &str| {
        o.lines()
            .filter(|l| l.starts_with("s\t"))
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let ref_ids = final_ids(&String::from_utf8_lossy(&reference.stdout));
    assert_eq!(ref_ids.len(), 2);

    let m1 = rt.block_on(start(cfg(), 0)).unwrap();
    let dir1 = d.path().join("run1");
    std::fs::create_dir_all(&dir1).unwrap();
    let p1 = mock_pipeline(&dir1, &m1.base_url());
    let s1 = d.path().join("s1");
    let mut child = common::spawn(&s1, &["run", p1.to_str().unwrap()]);
    let t0 = Instant::now();
    let journaled = || common::journal_lines(&s1);
    while journaled() < 20 && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(journaled() < 120, "killed mid-generation");
    let m2 = rt.block_on(start(cfg(), 0)).unwrap();
    let p2 = mock_pipeline(&dir1, &m2.base_url());
    let resumed = ragprobe(&s1, &["run", p2.to_str().unwrap()]);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert_eq!(
        final_ids(&String::from_utf8_lossy(&resumed.stdout)),
        ref_ids
    );
    assert_eq!(m2.stats.answered_twice(), 0);
}

/// Regression (reliability #15): a global flag in a step (`store = …`) was
/// silently ignored; it is now an error with the line.
#[test]
fn a_global_flag_in_a_step_is_rejected() {
    let e = invalid("[steps.q]\nstage = \"ingest\"\nformat = \"dpr\"\nstore = \"elsewhere\"\npaths = [\"fixtures/nq-mini.jsonl\"]\n");
    assert!(
        e.contains("p.toml:4") && e.contains("`store` is not a step parameter"),
        "{e}"
    );
}

/// Regression (reliability #15): `run --dry-run` hung hashing a FIFO inside
/// a directory argument; only declared file inputs are hashed, and only
/// their regular files.
#[test]
fn a_fifo_inside_an_input_directory_does_not_hang_the_plan() {
    let d = tempfile::tempdir().unwrap();
    let lang = d.path().join("en");
    for sub in ["topics", "qrels"] {
        std::fs::create_dir_all(lang.join(sub)).unwrap();
        for f in std::fs::read_dir(root().join("fixtures/nomiracl-dist/en").join(sub))
            .unwrap()
            .flatten()
        {
            std::fs::copy(f.path(), lang.join(sub).join(f.file_name())).unwrap();
        }
    }
    std::fs::copy(
        root().join("fixtures/nomiracl-dist/en/corpus.jsonl"),
        lang.join("corpus.jsonl"),
    )
    .unwrap();
    assert!(Command::new("mkfifo")
        .arg(lang.join("notes.fifo"))
        .status()
        .unwrap()
        .success());
    let p = d.path().join("p.toml");
    std::fs::write(
        &p,
        format!(
            "[steps.i]\nstage = \"ingest\"\nformat = \"nomiracl\"\npaths = [\"{}\"]\n",
            lang.display()
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ragprobe"))
        .arg("--store")
        .arg(d.path().join("s"))
        .args(["run", p.to_str().unwrap(), "--dry-run"])
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("run --dry-run hung");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success());
}

/// Hardening II: two concurrent `run`s of one pipeline on one store made
/// every model request twice (320 journal lines for 160 ids). The second
/// now waits for the first's step and finds it cached.
#[test]
fn two_concurrent_runs_make_each_request_once() {
    let rt = common::runtime();
    let m = rt
        .block_on(start(
            MockConfig {
                latency: Duration::from_millis(10),
                ..Default::default()
            },
            0,
        ))
        .unwrap();
    let d = tempfile::tempdir().unwrap();
    let p = mock_pipeline(d.path(), &m.base_url());
    let store = d.path().join("s");
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_ragprobe"))
            .arg("--store")
            .arg(&store)
            .args(["run", p.to_str().unwrap()])
            .current_dir(root())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(a.status.success(), "{}", stderr(&a));
    assert!(b.status.success(), "{}", stderr(&b));
    let finals = |o: &std::process::Output| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| l.starts_with("s\t"))
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(finals(&a), finals(&b));
    assert_eq!(m.stats.answered_twice(), 0, "a request was made twice");
    let lines: Vec<String> = std::fs::read_dir(store.join("requests"))
        .unwrap()
        .flatten()
        .flat_map(|e| {
            std::fs::read_to_string(e.path())
                .unwrap_or_default()
                .lines()
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .collect();
    let ids: std::collections::BTreeSet<String> = lines
        .iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["request_id"].as_str().map(String::from))
        .collect();
    assert!(!ids.is_empty());
    assert_eq!(lines.len(), ids.len(), "one journal line per request id");
}

/// Hardening II, M6: a BEIR directory holding a symlink loop (`x -> .`)
/// made `run --dry-run` hang, and every file under a directory input was
/// hashed. A step's key now covers exactly the files its stage reads: the
/// loop is harmless and an unrelated file changing leaves the step cached.
#[test]
fn a_step_hashes_only_what_its_stage_reads() {
    let d = tempfile::tempdir().unwrap();
    let beir = d.path().join("beir");
    std::fs::create_dir_all(beir.join("qrels")).unwrap();
    for f in ["corpus.jsonl", "queries.jsonl", "qrels/test.tsv"] {
        std::fs::copy(root().join("fixtures/corpus").join(f), beir.join(f)).unwrap();
    }
    std::os::unix::fs::symlink(".", beir.join("x")).unwrap();
    std::fs::write(beir.join("notes.txt"), "first").unwrap();
    let p = d.path().join("p.toml");
    std::fs::write(
        &p,
        format!(
            "[steps.i]\nstage = \"ingest\"\nformat = \"beir\"\npaths = [\"{}\"]\n",
            beir.display()
        ),
    )
    .unwrap();
    let store = d.path().join("s");
    let bounded = |args: &[&str]| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ragprobe"))
            .arg("--store")
            .arg(&store)
            .args(args)
            .current_dir(root())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if t0.elapsed() > Duration::from_secs(60) {
                child.kill().unwrap();
                panic!("`ragprobe {}` hung", args.join(" "));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o))
    };
    let pp = p.to_str().unwrap();
    bounded(&["run", pp, "--dry-run"]);
    bounded(&["run", pp]);
    std::fs::write(beir.join("notes.txt"), "changed").unwrap();
    let plan = bounded(&["run", pp, "--dry-run"]);
    assert!(plan.contains("ingest    cached"), "{plan}");
    // A file the stage reads changing makes the step run again.
    let mut queries = std::fs::read_to_string(beir.join("queries.jsonl")).unwrap();
    queries = queries.replacen("\"text\": \"", "\"text\": \"Q ", 1);
    queries = queries.replacen("\"text\":\"", "\"text\":\"Q ", 1);
    std::fs::write(beir.join("queries.jsonl"), queries).unwrap();
    let plan = bounded(&["run", pp, "--dry-run"]);
    assert!(plan.contains("ingest    to-run"), "{plan}");
}

/// The number after `key` in `line` (`requests: 12 to send` -> 12).
fn number_after(line: &str, key: &str) -> u64 {
    let rest = &line[line
        .find(key)
        .unwrap_or_else(|| panic!("`{key}` in {line}"))
        + key.len()..];
    let digits: String = rest
        .trim_start_matches(['~', ' '])
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("a number after `{key}` in {line}"))
}

/// `run --dry-run` names the generate step it cannot estimate yet;
/// `run --estimate` builds its cases and estimates exactly the requests the
/// run then makes, their prompt tokens as the run renders them (here the
/// 4-characters rule over the messages the responses record), the most
/// completion tokens and the cost; the run's summary gives the tokens the
/// server reported; afterwards the step is cached and nothing is left to send.
#[test]
fn the_estimate_counts_the_requests_the_run_makes() {
    let rt = common::runtime();
    let m = rt.block_on(start(MockConfig::default(), 0)).unwrap();
    let d = tempfile::tempdir().unwrap();
    let p = mock_pipeline(d.path(), &m.base_url());
    let pp = p.to_str().unwrap();
    let store = d.path().join("s");
    let dry = ragprobe(&store, &["run", pp, "--dry-run"]);
    let plan = String::from_utf8_lossy(&dry.stdout).into_owned();
    assert!(dry.status.success(), "{}", stderr(&dry));
    assert!(
        plan.contains("not estimated") && plan.contains(": g"),
        "{plan}"
    );

    let prices = ["--price-in", "2", "--price-out", "10"];
    let est = ragprobe(&store, &[&["run", pp, "--estimate"][..], &prices].concat());
    assert!(est.status.success(), "{}", stderr(&est));
    let out = String::from_utf8_lossy(&est.stdout).into_owned();
    assert_eq!(m.stats.distinct_answered(), 0, "the estimate sends nothing");
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("requests:"))
        .unwrap_or_else(|| panic!("an estimate line: {out}"));
    let to_send = number_after(line, "requests:");
    let prompt = number_after(line, "prompt tokens:");
    let completion = number_after(line, "at most");
    assert!(to_send > 0, "{line}");
    let max_tokens = u64::from(ragprobe_models::llm::DEFAULT_MAX_TOKENS);
    assert_eq!(
        completion,
        to_send * max_tokens,
        "max_tokens a request: {line}"
    );
    let cost = 2.0 * prompt as f64 / 1e6 + 10.0 * completion as f64 / 1e6;
    assert!(
        line.contains(&format!("= at most ~{cost:.4}")),
        "{cost:.4} in {line}"
    );

    let run = ragprobe(&store, &["run", pp, "--price-in", "2", "--price-out", "10"]);
    let err = stderr(&run);
    assert!(run.status.success(), "{err}");
    assert_eq!(m.stats.distinct_answered() as u64, to_send, "{err}");
    assert!(
        err.contains(&format!("requests: {to_send} new, 0 cached")),
        "{err}"
    );
    assert!(
        err.contains(&format!("prompt, {} completion", 3 * to_send)),
        "the mock's usage (3 completion tokens a reply): {err}"
    );
    let responses = String::from_utf8_lossy(&run.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("g\tresponses\t").map(String::from))
        .expect("the responses id");
    let store_h = ragprobe_artifact::Store::open(&store).unwrap();
    let rows =
        ragprobe_artifact::read::<ragprobe_artifact::Responses>(&store_h, &responses).unwrap();
    let rendered: u64 = rows
        .iter()
        .map(|r| {
            let msgs: Vec<serde_json::Value> = serde_json::from_str(&r.messages).unwrap();
            msgs.iter()
                .map(|m| m["content"].as_str().unwrap().chars().count().div_ceil(4) as u64)
                .sum::<u64>()
        })
        .sum();
    assert_eq!((rows.len() as u64, rendered), (to_send, prompt));

    let again = ragprobe(&store, &["run", pp, "--estimate"]);
    let out = String::from_utf8_lossy(&again.stdout).into_owned();
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with("g ") && l.ends_with("cached"))
            && !out.contains("to send"),
        "{out}"
    );
}
