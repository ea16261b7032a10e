//! `ragprobe generate --model <a qwen2 Q4_K_M file>` end to end: the tiny
//! random-weight Qwen2 model in llama.cpp's Q4_K_M mix (Q4_K and Q6_K
//! blocks, written by `crates/engine/tests/reference/tiny_models.py` with
//! `gguf` and llama.cpp's quantizer) generates for cases built from the NQ
//! fixture, the rerun is served from the cache, and another model file
//! gives another artifact (the file's content hash is in the key).
//!
//! The python is `RAGPROBE_LLAMA_SERVER` (scripts/llama-server.sh's venv,
//! with `gguf`); without it the test says it was skipped, unless
//! `RAGPROBE_REQUIRE_LLAMA=1` (as in `make test`).

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::fixtures;

fn rp(store: &Path, args: &[&str]) -> (Vec<(String, String)>, String) {
    common::run_ok(&fixtures(), store, args)
}

/// The tiny models, written once into `dir`.
fn tiny_models(dir: &Path) -> Option<PathBuf> {
    let Some(python) = std::env::var_os("RAGPROBE_LLAMA_SERVER").filter(|p| !p.is_empty()) else {
        assert!(
            std::env::var("RAGPROBE_REQUIRE_LLAMA").as_deref() != Ok("1"),
            "RAGPROBE_LLAMA_SERVER is not set (make test sets it from scripts/llama-server.sh)"
        );
        eprintln!("SKIPPED: no llama.cpp (RAGPROBE_LLAMA_SERVER; `make test` builds one)");
        return None;
    };
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine/tests/reference/tiny_models.py");
    std::fs::create_dir_all(dir).unwrap();
    let out = Command::new(python).arg(script).arg(dir).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(dir.to_path_buf())
}

#[test]
fn a_qwen2_q4_k_m_file_generates_in_a_pipeline() {
    let d = tempfile::tempdir().unwrap();
    let Some(models) = tiny_models(&d.path().join("models")) else {
        return;
    };
    let store = d.path().join("store");
    let (ing, _) = rp(&store, &["ingest", "--format", "dpr", "nq-mini.jsonl"]);
    let get = |k: &str| ing.iter().find(|(x, _)| x == k).unwrap().1.clone();
    let (cases, _) = rp(
        &store,
        &[
            "perturb",
            "--questions",
            &get("questions"),
            "--contexts",
            &get("contexts"),
            "-s",
            "base",
            "-k",
            "2",
            "--limit",
            "6",
        ],
    );
    let cases = cases[0].1.clone();
    let generate = |model: &Path| {
        let (out, err) = rp(
            &store,
            &[
                "generate",
                "--cases",
                &cases,
                "--prompt",
                "imperfect-normal",
                "--model",
                model.to_str().unwrap(),
                "--max-tokens",
                "5",
            ],
        );
        (out[0].1.clone(), err)
    };
    let qwen = models.join("qwen2-q4_k_m.gguf");
    let (first, _) = generate(&qwen);
    let (again, log) = generate(&qwen);
    assert_eq!(first, again, "the rerun is the same artifact");
    assert!(
        log.contains("cached"),
        "the rerun is served from the cache: {log}"
    );
    let (other, _) = generate(&models.join("llama-q4_k_m.gguf"));
    assert_ne!(first, other, "another model file, another artifact");
    // Every case has a response of 1 to 5 tokens from the model, no error.
    let o = common::run_in(
        &fixtures(),
        Some(&store),
        &[
            "query",
            "select count(*) as n, min(completion_tokens) as shortest, \
             max(completion_tokens) as longest, \
             sum(case when error is null then 0 else 1 end) as failed from r",
            "--table",
            &format!("r={first}"),
            "--csv",
            "-",
        ],
    );
    assert!(o.status.success(), "{}", common::stderr(&o));
    let text = common::stdout(&o);
    let row: Vec<u64> = text
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    let [n, shortest, longest, failed] = row[..] else {
        panic!("{text}")
    };
    assert_eq!((n, failed), (6, 0), "{text}");
    assert!(shortest >= 1 && longest <= 5, "{text}");
}
