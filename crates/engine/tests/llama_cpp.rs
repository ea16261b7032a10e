//! The forward pass of each architecture against llama.cpp's on the same
//! file: tiny random-weight models written with the `gguf` package
//! (`tests/reference/tiny_models.py`: llama, llama with Llama 3's
//! `rope_freqs`, qwen2 with Q/K/V biases and a tied head), and
//! llama.cpp's next-token logits at every position of a 24-token sequence
//! (llama-cpp-python).
//!
//! The python is `RAGPROBE_LLAMA_SERVER` (scripts/llama-server.sh's venv,
//! which also holds `gguf`); without it the test says it was skipped,
//! unless `RAGPROBE_REQUIRE_LLAMA=1` (as in `make test`).

use ragprobe_engine::model::Model;
use ragprobe_engine::{BatchOptions, Next, Request, Sink};
use std::path::Path;
use std::process::Command;

/// Both compute in f32 with different summation orders: the logits agree
/// to this fraction of the largest logit's magnitude, and the greedy token
/// is the same at every position.
const TOLERANCE: f32 = 1e-5;

/// llama.cpp's run: the tokens and the logits after each.
struct Reference {
    tokens: Vec<u32>,
    logits: Vec<Vec<f32>>,
}

fn reference(text: &str) -> Reference {
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    let floats = |r: &serde_json::Value| -> Vec<f32> {
        r.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect()
    };
    Reference {
        tokens: floats(&v["tokens"]).into_iter().map(|t| t as u32).collect(),
        logits: v["logits"].as_array().unwrap().iter().map(floats).collect(),
    }
}

#[test]
fn each_architecture_gives_llama_cpp_logits() {
    let Some(python) = std::env::var_os("RAGPROBE_LLAMA_SERVER").filter(|p| !p.is_empty()) else {
        assert!(
            std::env::var("RAGPROBE_REQUIRE_LLAMA").as_deref() != Ok("1"),
            "RAGPROBE_LLAMA_SERVER is not set (make test sets it from scripts/llama-server.sh)"
        );
        eprintln!("SKIPPED: no llama.cpp (RAGPROBE_LLAMA_SERVER; `make test` builds one)");
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference/tiny_models.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(d.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut checked = Vec::new();
    for name in ["llama-f32", "llama3-rope-f32", "qwen2-f32"] {
        let model = Model::load(&d.path().join(format!("{name}.gguf")), 2).unwrap();
        let text = std::fs::read_to_string(d.path().join(format!("{name}.json"))).unwrap();
        let r = reference(&text);
        let mut worst = 0f32;
        for (p, want) in r.logits.iter().enumerate() {
            let got = model.next_logits(&r.tokens[..=p]);
            assert_eq!(got.len(), want.len(), "{name}: vocabulary");
            let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
            let diff = got
                .iter()
                .zip(want)
                .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
            worst = worst.max(diff / scale);
            assert!(
                diff <= TOLERANCE * scale,
                "{name}, position {p}: logits differ by {diff} (largest {scale})"
            );
            assert_eq!(
                argmax(&got),
                argmax(want),
                "{name}, position {p}: greedy token"
            );
        }
        checked.push(format!(
            "{name}: {} positions, worst {worst:.2e}",
            r.logits.len()
        ));
    }
    eprintln!("{}", checked.join("; "));
}

/// Collects each request's tokens.
struct Collect(Vec<Vec<u32>>);

impl Sink for Collect {
    type Error = ();
    fn token(&mut self, request: usize, token: u32) -> Next {
        self.0[request].push(token);
        Next::Continue
    }
    fn done(&mut self, _: usize) -> Result<(), ()> {
        Ok(())
    }
}

/// Batch invariance on the architecture: five prompts sharing prefixes,
/// greedy, one at a time on one thread against batched on two threads
/// with prefix reuse and prompts cut into chunks: the same tokens.
fn same_tokens_however_run(path: &Path, tokens: &[u32], name: &str) {
    let prompts: Vec<Vec<u32>> = (0..5)
        .map(|i| {
            let mut p = tokens[..12 + i % 3].to_vec();
            p.extend(tokens.iter().rev().take(3 + i).copied());
            p
        })
        .collect();
    let requests: Vec<Request> = prompts
        .iter()
        .map(|p| Request {
            prompt: p,
            max_tokens: 10,
        })
        .collect();
    let run = |threads: usize, opts: BatchOptions| {
        let model = Model::load(path, threads).unwrap();
        let mut out = Collect(vec![Vec::new(); requests.len()]);
        model.generate(&requests, &opts, &mut out).unwrap();
        out.0
    };
    let alone = run(
        1,
        BatchOptions {
            batch: 1,
            prefix_entries: 0,
            ..BatchOptions::default()
        },
    );
    let batched = run(
        2,
        BatchOptions {
            batch: 4,
            step_tokens: 7,
            prefix_entries: 4,
            min_prefix: 4,
        },
    );
    assert!(alone.iter().all(|t| t.len() == 10), "{name}: {alone:?}");
    assert_eq!(alone, batched, "{name}: batched, threads, prefix reuse");
}

fn argmax(v: &[f32]) -> usize {
    (0..v.len()).fold(0, |b, i| if v[i] > v[b] { i } else { b })
}
