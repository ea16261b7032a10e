//! The tokenizer built from a GGUF file's metadata tokenizes as llama.cpp
//! does, for each byte-level pre-tokenizer it reads (`tokenizer.ggml.pre`):
//! `tests/reference/llama_tokens.py` writes vocabulary-only files with
//! SmolLM2's 49,152 tokens and 48,900 merges (and four multi-digit tokens,
//! so Llama 3's digit runs show) under each pre-tokenizer name
//! and prints llama.cpp's ids (llama-cpp-python) for a multilingual sample
//! (numbers, contractions, CJK, Cyrillic, Arabic digits, whitespace runs,
//! special tokens, emoji).
//!
//! The python is `RAGPROBE_LLAMA_SERVER` (scripts/llama-server.sh's venv);
//! without it, or without the fetched model, the test says it was skipped,
//! unless `RAGPROBE_REQUIRE_LLAMA=1` (as in `make test`).

use candle_core::quantized::gguf_file::Value;
use ragprobe_models::llm::local::gguf_tokenizer;
use ragprobe_models::paths;
use std::path::Path;
use std::process::Command;

#[test]
fn each_pre_tokenizer_gives_llama_cpp_ids() {
    let required = std::env::var("RAGPROBE_REQUIRE_LLAMA").as_deref() == Ok("1");
    let python = std::env::var_os("RAGPROBE_LLAMA_SERVER").filter(|p| !p.is_empty());
    let source = paths::smollm2_gguf();
    let Some(python) = python.filter(|_| source.is_file()) else {
        assert!(
            !required,
            "needs RAGPROBE_LLAMA_SERVER and {} (make test provides both)",
            source.display()
        );
        eprintln!("SKIPPED: no llama.cpp or no SmolLM2 (`make test` provides both)");
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference/llama_tokens.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(&source)
        .arg(d.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let texts: Vec<&str> = v["texts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let mut seen = Vec::new();
    for (pre, want) in v["ids"].as_object().unwrap() {
        let tok = gguf_tokenizer(&d.path().join(format!("{pre}.gguf"))).unwrap();
        let mut all = Vec::new();
        for (text, want) in texts.iter().zip(want.as_array().unwrap()) {
            let want: Vec<u32> = want
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap() as u32)
                .collect();
            let got = tok.encode(*text, false).unwrap().get_ids().to_vec();
            assert_eq!(got, want, "{pre}: {text:?}");
            all.push(got);
        }
        seen.push((pre.clone(), all));
    }
    // The sample tells the pre-tokenizers apart (else it would test little).
    for (i, (a, x)) in seen.iter().enumerate() {
        for (b, y) in &seen[i + 1..] {
            assert_ne!(x, y, "{a} and {b} tokenize the sample alike");
        }
    }
    eprintln!(
        "{} pre-tokenizers x {} texts: llama.cpp's ids",
        seen.len(),
        texts.len()
    );
}

/// A pre-tokenizer llama.cpp has but ragprobe does not read is named.
#[test]
fn an_unknown_pre_tokenizer_is_named() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("tiny.gguf");
    let text = |s: &str| Some(Value::String(s.into()));
    let list = |v: &[&str]| {
        Some(Value::Array(
            v.iter().map(|s| Value::String(s.to_string())).collect(),
        ))
    };
    ragprobe_engine::gguf::write_tiny_llama(
        &p,
        &[
            ("tokenizer.ggml.model", text("gpt2")),
            (
                "tokenizer.ggml.tokens",
                list(&["a", "b", "ab", "c", "d", "e"]),
            ),
            ("tokenizer.ggml.merges", list(&["a b"])),
            ("tokenizer.ggml.pre", text("deepseek-llm")),
        ],
    )
    .unwrap();
    let e = gguf_tokenizer(&p).unwrap_err().to_string();
    assert!(
        e.contains("pre-tokenizer `deepseek-llm`") && e.contains("supported: default, gpt-2"),
        "{e}"
    );
}
