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

use ragprobe_engine::gguf::Value;
use ragprobe_models::llm::local::gguf_tokenizer;
use ragprobe_models::paths;
use std::path::Path;
use std::process::Command;

/// Runs `tests/reference/<script>` (SmolLM2's GGUF and a scratch folder as
/// arguments) and parses what it prints; `None` when llama.cpp or the model
/// is not here and `make test`'s `RAGPROBE_REQUIRE_LLAMA=1` is not set.
fn reference(script: &str) -> Option<(serde_json::Value, tempfile::TempDir)> {
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
        return None;
    };
    let d = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/reference")
        .join(script);
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
    Some((serde_json::from_slice(&out.stdout).unwrap(), d))
}

/// The `texts` of a reference's output.
fn texts(v: &serde_json::Value) -> Vec<&str> {
    v["texts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect()
}

/// A JSON array of ids.
fn ids(v: &serde_json::Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

#[test]
fn each_pre_tokenizer_gives_llama_cpp_ids() {
    let Some((v, d)) = reference("llama_tokens.py") else {
        return;
    };
    let texts = texts(&v);
    let mut seen = Vec::new();
    for (pre, want) in v["ids"].as_object().unwrap() {
        let tok = gguf_tokenizer(&d.path().join(format!("{pre}.gguf"))).unwrap();
        let mut all = Vec::new();
        for (text, want) in texts.iter().zip(want.as_array().unwrap()) {
            let want = ids(want);
            let got = tok.encode(text).unwrap();
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
/// A SentencePiece vocabulary (`tokenizer.ggml.model = llama`), with and
/// without the space prefix: `tests/reference/spm_tokens.py` makes one from
/// SmolLM2's pieces with scores (ties included), byte-fallback tokens,
/// control and user-defined tokens, and prints llama.cpp's ids and
/// `llama_detokenize` text for the sample.
#[test]
fn sentencepiece_gives_llama_cpp_ids_and_text() {
    let Some((v, d)) = reference("spm_tokens.py") else {
        return;
    };
    let texts = texts(&v);
    let mut seen = Vec::new();
    for (name, want) in v["ids"].as_object().unwrap() {
        let tok = gguf_tokenizer(&d.path().join(format!("{name}.gguf"))).unwrap();
        let decoded = v["decoded"][name].as_array().unwrap();
        let mut all = Vec::new();
        for ((text, want), text_back) in texts.iter().zip(want.as_array().unwrap()).zip(decoded) {
            let want = ids(want);
            let got = tok.encode(text).unwrap();
            assert_eq!(got, want, "{name}: {text:?}");
            assert_eq!(
                tok.decode(&got).unwrap(),
                text_back.as_str().unwrap(),
                "{name}: decoding {text:?}"
            );
            all.push(got);
        }
        seen.push(all);
    }
    assert_eq!(seen.len(), 2);
    assert_ne!(
        seen[0], seen[1],
        "the space prefix changes nothing in the sample"
    );
    eprintln!(
        "SentencePiece, 2 vocabularies x {} texts: llama.cpp's ids and text",
        texts.len()
    );
}

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
