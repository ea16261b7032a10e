//! A bounded mutation fuzzer over every ingest format, every predictions
//! format and pipeline files, seeded from the project's fixtures.
//!
//! Mutations: byte flips, truncation, invalid UTF-8, bracket and quote
//! damage, retyped and dropped fields (on a parsed JSON record), deep
//! nesting, duplicated and swapped lines. Each mutant must give, within a
//! time limit, either a result or an error that names the file — never a
//! panic or a hang. `make test` runs `FUZZ_ITERS` mutants per input kind
//! (default 60, about a minute in all); a longer run is
//! `FUZZ_ITERS=5000 cargo test --workspace --test fuzz -- --nocapture`.
//! A failing mutant is written under the system temp directory and named
//! in the failure, so it can be replayed.

use ragprobe_artifact::Store;
use ragprobe_ingest::{ingest, Format, IngestOptions, OnError};
use ragprobe_score::predictions::{score_predictions, PredictionColumns};
use ragprobe_score::ScoreOptions;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod common;
use common::root;

/// Per-input time limit: far above any honest input's time.
const LIMIT: Duration = Duration::from_secs(20);

fn iters() -> usize {
    std::env::var("FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150)
}

/// xorshift64*: a seeded, dependency-free generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Change one value of a JSON tree (retype or drop), at a random depth.
fn mutate_json(v: &mut Value, rng: &mut Rng, depth: usize) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            let keys: Vec<String> = m.keys().cloned().collect();
            let k = &keys[rng.below(keys.len())];
            if depth > 0 && rng.below(3) > 0 {
                mutate_json(m.get_mut(k).unwrap(), rng, depth - 1);
            } else if rng.below(3) == 0 {
                m.remove(k);
            } else {
                *m.get_mut(k).unwrap() = retyped(rng);
            }
        }
        Value::Array(a) if !a.is_empty() => {
            let i = rng.below(a.len());
            if depth > 0 && rng.below(2) == 0 {
                mutate_json(&mut a[i], rng, depth - 1);
            } else {
                a[i] = retyped(rng);
            }
        }
        other => *other = retyped(rng),
    }
}

fn retyped(rng: &mut Rng) -> Value {
    match rng.below(8) {
        0 => Value::Null,
        1 => serde_json::json!(12345678901234567890u64),
        2 => serde_json::json!(-1.5e308),
        3 => serde_json::json!([]),
        4 => serde_json::json!({}),
        5 => serde_json::json!(""),
        6 => serde_json::json!(true),
        _ => serde_json::json!([[["deep"]]]),
    }
}

/// One mutant of `seed` (the bytes of a fixture file).
fn mutate(seed: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut b = seed.to_vec();
    if b.is_empty() {
        return b"{".to_vec();
    }
    match rng.below(9) {
        0 => {
            for _ in 0..1 + rng.below(8) {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
        }
        1 => b.truncate(rng.below(b.len())),
        2 => {
            let i = rng.below(b.len());
            b.splice(i..i, [0xff, 0xfe, 0xc3]);
        }
        3 => {
            let marks: Vec<usize> = b
                .iter()
                .enumerate()
                .filter(|(_, c)| b"{}[]\",:".contains(c))
                .map(|(i, _)| i)
                .collect();
            for _ in 0..1 + rng.below(3) {
                if let Some(&i) = marks.get(rng.below(marks.len())) {
                    b[i] = b"{}[]\",:\t"[rng.below(8)];
                }
            }
        }
        4 | 5 => {
            // Retype or drop a field of one record (a JSON line, or the whole document).
            let text = String::from_utf8_lossy(&b).into_owned();
            let lines: Vec<&str> = text.lines().collect();
            let i = rng.below(lines.len());
            if let Ok(mut v) = serde_json::from_str::<Value>(lines[i]) {
                mutate_json(&mut v, rng, 4);
                let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
                out[i] = v.to_string();
                b = (out.join("\n") + "\n").into_bytes();
            } else if let Ok(mut v) = serde_json::from_str::<Value>(&text) {
                mutate_json(&mut v, rng, 5);
                b = v.to_string().into_bytes();
            } else {
                let i = rng.below(b.len());
                b.insert(i, b'"');
            }
        }
        6 => {
            // Deep nesting inside a record.
            let depth = 200 + rng.below(20_000);
            let nest = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
            let text = String::from_utf8_lossy(&b).into_owned();
            b = match text.find(": ") {
                Some(i) => format!("{}: {nest}, \"_x\"{}", &text[..i], &text[i..]).into_bytes(),
                None => nest.into_bytes(),
            };
        }
        7 => {
            // Duplicate or swap lines.
            let text = String::from_utf8_lossy(&b).into_owned();
            let mut lines: Vec<String> = text.lines().map(String::from).collect();
            if lines.len() > 1 {
                let (i, j) = (rng.below(lines.len()), rng.below(lines.len()));
                if rng.below(2) == 0 {
                    lines.swap(i, j);
                } else {
                    let l = lines[i].clone();
                    lines.insert(j, l);
                }
            }
            b = (lines.join("\n") + "\n").into_bytes();
        }
        _ => {
            let i = rng.below(b.len());
            let j = (i + 1 + rng.below(64)).min(b.len());
            b.drain(i..j);
        }
    }
    b
}

/// Run `f` on another thread with the time limit; a panic or a hang fails
/// the test, naming the mutant kept at `keep`.
fn guarded<T: Send + 'static>(keep: &Path, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let _ = tx.send(r);
    });
    match rx.recv_timeout(LIMIT) {
        Ok(Ok(v)) => v,
        Ok(Err(_)) => panic!("panic on the mutant kept at {}", keep.display()),
        Err(_) => panic!(
            "no answer within {LIMIT:?} on the mutant kept at {}",
            keep.display()
        ),
    }
}

/// Keep a failing candidate for replay.
fn keep(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join("ragprobe-fuzz");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[derive(Default)]
struct Tally {
    mutants: usize,
    errors: usize,
    accepted: usize,
}

/// Fuzz one ingest format from one seed file; `place` puts the mutant where
/// the reader expects it and returns the path to ingest and the file name
/// the error must name.
fn fuzz_ingest(
    format: Format,
    seed: &Path,
    layout: &dyn Fn(&Path, &[u8]) -> (PathBuf, String),
    evidence: Option<PathBuf>,
    rng: &mut Rng,
) -> Tally {
    let mut seed_bytes = std::fs::read(seed).unwrap();
    if seed.ends_with("table-mini.jsonl") {
        // The table reader's default column names.
        seed_bytes = String::from_utf8(seed_bytes)
            .unwrap()
            .replace("\"qid\"", "\"id\"")
            .replace("\"query\"", "\"question\"")
            .replace("\"gold\"", "\"answers\"")
            .into_bytes();
    }
    let work = tempfile::tempdir().unwrap();
    let store_dir = work.path().join("store");
    let mut t = Tally::default();
    for i in 0..iters() {
        let bytes = mutate(&seed_bytes, rng);
        let case = work.path().join(format!("m{i}"));
        std::fs::create_dir_all(&case).unwrap();
        let (path, name) = layout(&case, &bytes);
        let kept = keep(
            &format!("{}-{}-{i}", format!("{format:?}").to_lowercase(), name),
            &bytes,
        );
        let on_error = if i % 2 == 0 {
            OnError::Fail
        } else {
            OnError::Skip
        };
        let (sd, ev) = (store_dir.clone(), evidence.clone());
        let r = guarded(&kept, move || {
            let store = Store::open(&sd).unwrap();
            ingest(
                &store,
                &IngestOptions {
                    format: Some(format),
                    paths: vec![path],
                    on_error,
                    evidence_dir: ev,
                    passage_words: 100,
                    ..Default::default()
                },
            )
            .map(|_| ())
            .map_err(|e| e.to_string())
        });
        t.mutants += 1;
        match r {
            Ok(()) => t.accepted += 1,
            Err(e) => {
                assert!(
                    e.contains(&name),
                    "{format:?}: the error does not name `{name}`: {e}\n(mutant: {})",
                    kept.display()
                );
                t.errors += 1;
            }
        }
        let _ = std::fs::remove_file(&kept);
        let _ = std::fs::remove_dir_all(&case);
    }
    t
}

fn single(name: &'static str) -> impl Fn(&Path, &[u8]) -> (PathBuf, String) {
    move |dir: &Path, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        (p, name.to_string())
    }
}

#[test]
fn mutated_inputs_never_panic_or_hang_and_errors_name_the_file() {
    let mut rng = Rng(0x5eed_f00d_1234_5678);
    let fx = |p: &str| root().join("fixtures").join(p);
    let mut report = Vec::new();
    let cases: Vec<(Format, PathBuf, &'static str, Option<PathBuf>)> = vec![
        (Format::Dpr, fx("nq-mini.jsonl"), "nq.jsonl", None),
        (Format::Dpr, fx("nq-mini-array.json"), "nq.json", None),
        (Format::Dpr, fx("nq-mini.jsonl.gz"), "nq.jsonl.gz", None),
        (Format::Selfrag, fx("popqa-mini.jsonl"), "popqa.jsonl", None),
        (
            Format::Records(&ragprobe_studies::nomiracl::format::NomiraclFormat),
            fx("nomiracl-mini/en.dev.jsonl"),
            "en.dev.jsonl",
            None,
        ),
        (
            Format::Records(&ragprobe_studies::rgb::format::RgbFormat),
            fx("rgb-mini.jsonl"),
            "rgb.jsonl",
            None,
        ),
        (
            Format::Records(&ragprobe_studies::rgb::format::RgbFormat),
            fx("rgb-int-mini.jsonl"),
            "en_int.jsonl",
            None,
        ),
        (Format::Table, fx("table-mini.csv"), "table.csv", None),
        (Format::Table, fx("table-mini.jsonl"), "table.jsonl", None),
        (
            Format::Triviaqa,
            fx("rc/triviaqa-mini.json"),
            "triviaqa.json",
            Some(fx("rc/triviaqa-evidence")),
        ),
        (
            Format::Hotpotqa,
            fx("rc/hotpotqa-mini.json"),
            "hotpot.json",
            None,
        ),
        (
            Format::Searchqa,
            fx("rc/searchqa-mini.jsonl"),
            "searchqa.jsonl",
            None,
        ),
        (
            Format::Mcq,
            fx("rc/medqa-mini-zh.jsonl"),
            "medqa.jsonl",
            None,
        ),
        (
            Format::DprCorpus,
            fx("dpr-corpus-mini.tsv"),
            "psgs_w100.tsv",
            None,
        ),
    ];
    for (format, seed, name, evidence) in cases {
        let t = fuzz_ingest(format, &seed, &single(name), evidence, &mut rng);
        report.push((format!("{format:?} {name}"), t));
    }
    // BEIR: a directory; one of its files mutated at a time.
    for member in ["corpus.jsonl", "queries.jsonl", "qrels/test.tsv"] {
        let layout = move |dir: &Path, bytes: &[u8]| {
            let b = dir.join("beir");
            std::fs::create_dir_all(b.join("qrels")).unwrap();
            for f in ["corpus.jsonl", "queries.jsonl", "qrels/test.tsv"] {
                std::fs::copy(root().join("fixtures/corpus").join(f), b.join(f)).unwrap();
            }
            std::fs::write(b.join(member), bytes).unwrap();
            (b, member.rsplit('/').next().unwrap().to_string())
        };
        let t = fuzz_ingest(
            Format::Beir,
            &fx(&format!("corpus/{member}")),
            &layout,
            None,
            &mut rng,
        );
        report.push((format!("Beir {member}"), t));
    }
    // NoMIRACL's distribution directory: one file mutated at a time.
    for member in [
        "corpus.jsonl",
        "topics/dev.relevant.tsv",
        "qrels/dev.relevant.tsv",
    ] {
        let layout = move |dir: &Path, bytes: &[u8]| {
            let b = dir.join("en");
            for sub in ["topics", "qrels"] {
                std::fs::create_dir_all(b.join(sub)).unwrap();
                for f in std::fs::read_dir(root().join("fixtures/nomiracl-dist/en").join(sub))
                    .unwrap()
                    .flatten()
                {
                    std::fs::copy(f.path(), b.join(sub).join(f.file_name())).unwrap();
                }
            }
            std::fs::copy(
                root().join("fixtures/nomiracl-dist/en/corpus.jsonl"),
                b.join("corpus.jsonl"),
            )
            .unwrap();
            std::fs::write(b.join(member), bytes).unwrap();
            (b, member.rsplit('/').next().unwrap().to_string())
        };
        let t = fuzz_ingest(
            Format::Records(&ragprobe_studies::nomiracl::format::NomiraclFormat),
            &fx(&format!("nomiracl-dist/en/{member}")),
            &layout,
            None,
            &mut rng,
        );
        report.push((format!("Nomiracl dir {member}"), t));
    }

    // Predictions files, joined to a questions artifact.
    let work = tempfile::tempdir().unwrap();
    let store = Store::open(work.path().join("store")).unwrap();
    let q = ingest(
        &store,
        &IngestOptions {
            format: Some(Format::Dpr),
            paths: vec![fx("nq-mini.jsonl")],
            ..Default::default()
        },
    )
    .unwrap();
    let qid = q.outputs[0].id.clone();
    let qs = ragprobe_artifact::read::<ragprobe_artifact::Questions>(&store, &qid).unwrap();
    let jsonl: String = qs
        .iter()
        .map(|x| serde_json::json!({"id": x.qid, "prediction": x.answers[0]}).to_string() + "\n")
        .collect();
    let csv: String = std::iter::once("id,prediction\n".to_string())
        .chain(
            qs.iter()
                .map(|x| format!("{},\"{}\"\n", x.qid, x.answers[0].replace('"', "\"\""))),
        )
        .collect();
    for (name, seed) in [
        ("pred.jsonl", jsonl.into_bytes()),
        ("pred.csv", csv.clone().into_bytes()),
        ("pred.tsv", csv.replace(',', "\t").into_bytes()),
    ] {
        let mut t = Tally::default();
        for i in 0..iters() {
            let bytes = mutate(&seed, &mut rng);
            let path = work.path().join(name);
            std::fs::write(&path, &bytes).unwrap();
            let kept = keep(&format!("predictions-{i}-{name}"), &bytes);
            let (sd, q2) = (work.path().join("store"), qid.clone());
            let r = guarded(&kept, move || {
                let store = Store::open(&sd).unwrap();
                let opts = ScoreOptions {
                    bootstrap: 20,
                    studies: ragprobe_studies::studies(),
                    ..Default::default()
                };
                score_predictions(
                    &store,
                    &path,
                    &q2,
                    &PredictionColumns {
                        on_duplicate: ragprobe_score::predictions::OnDuplicate::Last,
                        ..Default::default()
                    },
                    &opts,
                )
                .map(|_| ())
                .map_err(|e| e.to_string())
            });
            t.mutants += 1;
            match r {
                Ok(()) => t.accepted += 1,
                Err(e) => {
                    assert!(
                        e.contains(name) || e.contains("none of the"),
                        "predictions: the error does not name `{name}`: {e}"
                    );
                    t.errors += 1;
                }
            }
            let _ = std::fs::remove_file(&kept);
        }
        report.push((format!("predictions {name}"), t));
    }

    // Pipeline files: validated by `run --dry-run` in a child process.
    for pipeline in ["quickstart.toml", "nomiracl.toml", "rag-stress.toml"] {
        let seed = std::fs::read(root().join("pipelines").join(pipeline)).unwrap();
        let mut t = Tally::default();
        for i in 0..iters() / 2 {
            let bytes = mutate(&seed, &mut rng);
            let path = work.path().join("p.toml");
            std::fs::write(&path, &bytes).unwrap();
            let kept = keep(&format!("pipeline-{i}-{pipeline}"), &bytes);
            let mut child = Command::new(env!("CARGO_BIN_EXE_ragprobe"))
                .arg("--store")
                .arg(work.path().join("pstore"))
                .args(["run", path.to_str().unwrap(), "--dry-run"])
                .current_dir(root())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let t0 = Instant::now();
            let status = loop {
                if let Some(s) = child.try_wait().unwrap() {
                    break s;
                }
                if t0.elapsed() > LIMIT {
                    child.kill().unwrap();
                    panic!(
                        "run --dry-run hung on the pipeline kept at {}",
                        kept.display()
                    );
                }
                std::thread::sleep(Duration::from_millis(5));
            };
            let mut stderr = String::new();
            use std::io::Read;
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut stderr)
                .unwrap();
            assert_ne!(
                status.code(),
                Some(101),
                "panic on the pipeline kept at {}: {stderr}",
                kept.display()
            );
            t.mutants += 1;
            if status.success() {
                t.accepted += 1;
            } else {
                assert!(
                    stderr.contains("p.toml") || stderr.contains("--set"),
                    "the error does not name the pipeline file: {stderr}\n(kept at {})",
                    kept.display()
                );
                t.errors += 1;
            }
            let _ = std::fs::remove_file(&kept);
        }
        report.push((format!("pipeline {pipeline}"), t));
    }

    eprintln!(
        "{:<34} {:>8} {:>12} {:>9}",
        "input", "mutants", "clean errors", "accepted"
    );
    for (name, t) in &report {
        eprintln!(
            "{name:<34} {:>8} {:>12} {:>9}",
            t.mutants, t.errors, t.accepted
        );
    }
    let total: usize = report.iter().map(|r| r.1.mutants).sum();
    assert!(total >= 20 * iters(), "every input kind was fuzzed");
}

/// Hardening II: crafted remote action records, IVF index files and GGUF
/// headers. The property is stronger than "no panic": a mutant is either
/// an error or gives exactly what the undamaged input gives — never a
/// wrong result with exit 0.
#[test]
fn crafted_records_index_files_and_gguf_headers_give_errors_not_wrong_results() {
    let mut rng = Rng(0x0bad_5eed_cafe_f00d);
    let mut report = Vec::new();
    report.push((
        "remote action records".to_string(),
        fuzz_remote_records(&mut rng),
    ));
    report.push(("IVF index files".to_string(), fuzz_ivf_files(&mut rng)));
    report.push(("GGUF headers".to_string(), fuzz_gguf(&mut rng)));
    for (name, t) in &report {
        eprintln!(
            "{name:<34} {:>8} {:>12} {:>9}",
            t.mutants, t.errors, t.accepted
        );
        assert!(
            t.mutants > 0 && t.errors > 0,
            "{name}: mutants reached the checks"
        );
    }
}

/// Two ingest steps pushed to a directory remote; one record mutated; a
/// pull into a fresh store either fails or leaves every step cached with
/// its true outputs.
fn fuzz_remote_records(rng: &mut Rng) -> Tally {
    use ragprobe_remote::{Remote, RemoteConfig, Transfer};
    let work = tempfile::tempdir().unwrap();
    let here = Store::open(work.path().join("here")).unwrap();
    let fx = |p: &str| root().join("fixtures").join(p);
    let mut truth = Vec::new();
    for file in ["nq-mini.jsonl", "nq-mini-array.json"] {
        let opts = IngestOptions {
            format: Some(Format::Dpr),
            paths: vec![fx(file)],
            ..Default::default()
        };
        let r = ingest(&here, &opts).unwrap();
        let rec = here
            .actions()
            .unwrap()
            .into_iter()
            .find(|a| a.outputs.iter().any(|o| o.id == r.outputs[0].id))
            .unwrap();
        truth.push(rec);
    }
    let remote_dir = work.path().join("remote");
    let cfg = RemoteConfig {
        url: format!("file://{}", remote_dir.display()),
        endpoint: None,
        region: None,
        anonymous: false,
    };
    let roots: Vec<String> = truth.iter().map(|r| r.outputs[0].id.clone()).collect();
    Remote::open("team", &cfg)
        .unwrap()
        .push(&here, &roots, &Transfer::default())
        .unwrap();
    let mut t = Tally::default();
    for i in 0..iters() / 2 {
        let victim = &truth[i % truth.len()];
        let path = remote_dir
            .join("actions")
            .join(format!("{}.json", victim.key));
        let good = std::fs::read(&path).unwrap();
        let bytes = mutate(&good, rng);
        std::fs::write(&path, &bytes).unwrap();
        let kept = keep(&format!("record-{i}.json"), &bytes);
        let there = work.path().join(format!("there{i}"));
        let (cfg2, roots2, truth2) = (cfg.clone(), roots.clone(), truth.clone());
        let r = guarded(&kept, move || {
            let store = Store::open(&there).unwrap();
            let pulled = Remote::open("team", &cfg2)
                .and_then(|remote| remote.pull(&store, &roots2, &Transfer::default()));
            // Whatever the pull did, no step answers with another's output.
            for rec in &truth2 {
                if let Ok(Some(hit)) = store.cached(&rec.recipe, &[]) {
                    assert_eq!(hit.outputs, rec.outputs, "a wrong cached output");
                }
            }
            pulled.map(|_| ()).map_err(|e| e.to_string())
        });
        t.mutants += 1;
        match r {
            Ok(()) => t.accepted += 1,
            Err(e) => {
                assert!(
                    e.contains("team") && !e.contains('\n'),
                    "the error does not name the remote: {e}\n(mutant: {})",
                    kept.display()
                );
                t.errors += 1;
            }
        }
        std::fs::write(&path, &good).unwrap();
        let _ = std::fs::remove_file(&kept);
    }
    t
}

/// An IVF index over mock embeddings; one index file mutated; a search
/// either fails naming the IVF index or returns the undamaged top-k.
fn fuzz_ivf_files(rng: &mut Rng) -> Tally {
    use ragprobe_artifact::{Corpus, CorpusRow, QuestionRow, Questions, Recipe, Sink};
    use ragprobe_mock::{start, MockConfig};
    use ragprobe_models::llm::openai::OpenAiConfig;
    use ragprobe_models::{RemoteEncoder, RemoteEncoderConfig, TextEncoder};
    use ragprobe_retrieve::{retrieve, AnnOptions, IvfOptions, Method, RetrieveOptions};
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = rt
        .block_on(start(
            MockConfig {
                embed_dim: 16,
                ..Default::default()
            },
            0,
        ))
        .unwrap();
    let encoder = std::sync::Arc::new(TextEncoder::Remote(
        RemoteEncoder::new(RemoteEncoderConfig {
            client: OpenAiConfig {
                base_urls: vec![server.base_url()],
                model: "mock-model".into(),
                ..Default::default()
            },
            inputs_per_request: 8,
            base64: true,
        })
        .unwrap(),
    ));
    let work = tempfile::tempdir().unwrap();
    let store = Store::open(work.path().join("store")).unwrap();
    let r = Recipe::new("fuzz-input", 1, serde_json::json!({}));
    let mut c = Sink::<Corpus>::new(&store, &r).unwrap();
    for i in 0..40 {
        c.push(CorpusRow {
            doc_id: format!("p{i}"),
            title: None,
            text: format!("passage {i} on topic {}", i % 9),
            meta: None,
        })
        .unwrap();
    }
    let corpus = c.finish(serde_json::Value::Null).unwrap().id;
    let mut q = Sink::<Questions>::new(&store, &r).unwrap();
    for i in 0..6 {
        q.push(QuestionRow {
            qid: format!("q{i}"),
            dataset: "d".into(),
            lang: "en".into(),
            question: format!("which passage is on topic {i}?"),
            answers: vec!["x".into()],
            ..Default::default()
        })
        .unwrap();
    }
    let questions = q.finish(serde_json::Value::Null).unwrap().id;
    let opts = |k: usize| RetrieveOptions {
        method: Method::Dense,
        k,
        shard_rows: 16,
        ann: Some(AnnOptions::Ivf(IvfOptions {
            nlist: Some(3),
            nprobe: 3,
            recall: None,
        })),
        ..Default::default()
    };
    let top = |store: &Store, id: &str, n: usize| -> Vec<Vec<String>> {
        let rows = ragprobe_artifact::read::<ragprobe_artifact::Contexts>(store, id).unwrap();
        let mut by_q: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for r in rows {
            by_q.entry(r.qid.clone())
                .or_default()
                .push(r.doc_id.clone());
        }
        by_q.into_values()
            .map(|mut v| {
                v.truncate(n);
                v
            })
            .collect()
    };
    let first = retrieve(
        &store,
        &corpus,
        &questions,
        &opts(3),
        Some(encoder.as_ref()),
    )
    .unwrap();
    let want = top(&store, &first.contexts.id, 3);
    let dir = std::fs::read_dir(work.path().join("store/indexes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("ivf-"))
        .unwrap();
    let files = [
        "rows.u32",
        "cells.u64",
        "vectors.f32",
        "centroids.f32",
        "index.json",
        "files.sha256",
    ];
    let mut t = Tally::default();
    for i in 0..iters() / 2 {
        let name = files[rng.below(files.len())];
        let path = dir.join(name);
        let good = std::fs::read(&path).unwrap();
        let bytes = mutate(&good, rng);
        std::fs::write(&path, &bytes).unwrap();
        let kept = keep(&format!("ivf-{i}-{name}"), &bytes);
        let k = 4 + i;
        let (s, c, q, e, w) = (
            store.clone(),
            corpus.clone(),
            questions.clone(),
            encoder.clone(),
            want.clone(),
        );
        let r = guarded(&kept, move || {
            match retrieve(&s, &c, &q, &opts(k), Some(e.as_ref())) {
                Ok(r) => {
                    assert_eq!(
                        top(&s, &r.contexts.id, 3),
                        w,
                        "a damaged index gave other results"
                    );
                    Ok(())
                }
                Err(e) => Err(e.to_string()),
            }
        });
        t.mutants += 1;
        match r {
            Ok(()) => t.accepted += 1,
            Err(e) => {
                assert!(
                    e.starts_with("IVF index: ") && e.contains(name),
                    "the error does not name the index file `{name}`: {e}\n(mutant: {})",
                    kept.display()
                );
                t.errors += 1;
            }
        }
        std::fs::write(&path, &good).unwrap();
        let _ = std::fs::remove_file(&kept);
    }
    drop(server);
    t
}

/// A tiny llama GGUF; its header mutated (bytes, or an integer value set
/// to an extreme); loading is an error naming the file or a model.
fn fuzz_gguf(rng: &mut Rng) -> Tally {
    use ragprobe_engine::gguf::write_tiny_llama;
    use ragprobe_engine::gguf::Value;
    use ragprobe_engine::model::Model;
    let work = tempfile::tempdir().unwrap();
    let keys = [
        "general.alignment",
        "llama.embedding_length",
        "llama.attention.head_count",
        "llama.attention.head_count_kv",
        "llama.block_count",
        "llama.feed_forward_length",
        "llama.context_length",
    ];
    let extremes = || {
        [
            Value::U32(0),
            Value::U32(u32::MAX),
            Value::U32(4_000_000_000),
            Value::U64(1 << 40),
            Value::I32(-1),
            Value::U8(3),
            Value::String("x".into()),
        ]
    };
    let seed_path = work.path().join("seed.gguf");
    write_tiny_llama(&seed_path, &[]).unwrap();
    let seed = std::fs::read(&seed_path).unwrap();
    let mut t = Tally::default();
    for i in 0..iters() {
        let path = work.path().join(format!("m{i}.gguf"));
        if i % 2 == 0 {
            let key = keys[rng.below(keys.len())];
            let value = extremes()[rng.below(7)].clone();
            write_tiny_llama(&path, &[(key, Some(value))]).unwrap();
        } else {
            // Damage within the header and the first tensors.
            let cut = (1024 + rng.below(1024)).min(seed.len());
            let mut bytes = mutate(&seed[..cut], rng);
            bytes.extend_from_slice(&seed[cut..]);
            std::fs::write(&path, &bytes).unwrap();
        }
        let bytes = std::fs::read(&path).unwrap();
        let kept = keep(&format!("gguf-{i}.gguf"), &bytes);
        let p = path.clone();
        let r = guarded(&kept, move || {
            Model::load(&p, 1).map(|_| ()).map_err(|e| e.to_string())
        });
        t.mutants += 1;
        match r {
            Ok(()) => t.accepted += 1,
            Err(e) => {
                assert!(
                    e.contains(&format!("m{i}.gguf")) && !e.contains('\n'),
                    "the error does not name the file: {e}\n(mutant: {})",
                    kept.display()
                );
                t.errors += 1;
            }
        }
        let _ = std::fs::remove_file(&kept);
    }
    t
}
