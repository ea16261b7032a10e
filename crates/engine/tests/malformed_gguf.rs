//! Crafted GGUF files are one-line errors, never a panic, an abort on a
//! huge allocation or unbounded memory (Hardening II, M4 and L7).

use ragprobe_engine::gguf::write_tiny_llama;
use ragprobe_engine::gguf::Value;
use ragprobe_engine::model::Model;
use std::path::Path;

/// The tiny model with `over` applied, written to `path`; its bytes.
fn write(path: &Path, over: &[(&str, Option<Value>)]) -> Vec<u8> {
    write_tiny_llama(path, over).unwrap();
    std::fs::read(path).unwrap()
}

fn load_error(path: &Path) -> String {
    match Model::load(path, 1) {
        Ok(_) => panic!("{}: loaded", path.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_tiny_model_loads() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("ok.gguf");
    write(&p, &[]);
    let m = Model::load(&p, 1).unwrap();
    assert_eq!(m.config().n_layer, 1);
}

#[test]
fn crafted_metadata_is_an_error_naming_what_is_wrong() {
    let d = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, Vec<(&str, Option<Value>)>, &str)> = vec![
        // A zero alignment would divide by zero.
        (
            "alignment-0",
            vec![("general.alignment", Some(Value::U32(0)))],
            "general.alignment",
        ),
        // Multi-terabyte allocations.
        (
            "blocks",
            vec![("llama.block_count", Some(Value::U32(u32::MAX)))],
            "4294967295 blocks",
        ),
        (
            "ff",
            vec![("llama.feed_forward_length", Some(Value::U32(4_000_000_000)))],
            "blk.0.ffn_gate.weight",
        ),
        // L7: the key is named.
        (
            "u64-width",
            vec![("llama.embedding_length", Some(Value::U64(1 << 40)))],
            "llama.embedding_length",
        ),
        (
            "no-blocks",
            vec![("llama.block_count", None)],
            "llama.block_count",
        ),
        // An architecture the engine does not run is named, with the list.
        (
            "gemma",
            vec![("general.architecture", Some(Value::String("gemma".into())))],
            "architecture `gemma` is not supported (supported: llama, qwen2)",
        ),
    ];
    for (name, over, want) in cases {
        let p = d.path().join(format!("{name}.gguf"));
        write(&p, &over);
        let e = load_error(&p);
        assert!(
            e.contains(want) && e.contains(&format!("{name}.gguf")),
            "{name}: {e}"
        );
        assert!(!e.contains('\n'), "{name}: one line: {e}");
    }
}

/// `context_length = 2^32−1` grew memory until the process was killed: the
/// engine's tables are capped.
#[test]
fn a_huge_context_length_is_capped() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("ctx.gguf");
    write(&p, &[("llama.context_length", Some(Value::U32(u32::MAX)))]);
    let m = Model::load(&p, 1).unwrap();
    assert_eq!(
        m.config().context_length,
        ragprobe_engine::weights::MAX_CONTEXT
    );
}

/// Byte-level damage to the header: declared lengths past the file's end,
/// absurd counts, a truncated file.
#[test]
fn a_damaged_header_is_an_error_not_an_allocation() {
    let d = tempfile::tempdir().unwrap();
    let good = write(&d.path().join("good.gguf"), &[]);
    let patch = |at: usize, v: u64| {
        let mut b = good.clone();
        b[at..at + 8].copy_from_slice(&v.to_le_bytes());
        b
    };
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        // The first key's length (after magic, version and the two counts).
        ("key-length", patch(24, 1 << 40), "remain"),
        ("tensor-count", patch(8, u64::MAX), "more than its"),
        ("kv-count", patch(16, 1 << 50), "more than its"),
        (
            "truncated",
            good[..good.len() * 2 / 3].to_vec(),
            "ends past the file",
        ),
        ("empty", Vec::new(), "cut short"),
    ];
    for (name, bytes, want) in cases {
        let p = d.path().join(format!("{name}.gguf"));
        std::fs::write(&p, bytes).unwrap();
        let e = load_error(&p);
        assert!(
            e.contains(want) && e.contains(&format!("{name}.gguf")),
            "{name}: {e}"
        );
    }
}

/// A tensor in a type the engine does not decode is named with its type
/// and the list of types it reads (not a panic inside a kernel).
#[test]
fn a_tensor_type_the_engine_does_not_read_is_named() {
    let d = tempfile::tempdir().unwrap();
    let b = write(&d.path().join("good.gguf"), &[]);
    // The tensor info: name, n_dims (u32), dims (u64 each), type (u32).
    let name = b"blk.0.attn_q.weight";
    let at = b
        .windows(name.len())
        .position(|w| w == name)
        .expect("the tensor's info")
        + name.len();
    let n_dims = u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
    let ty = at + 4 + 8 * n_dims;
    assert_eq!(
        u32::from_le_bytes(b[ty..ty + 4].try_into().unwrap()),
        0,
        "F32"
    );
    let with_type = |t: u32, file: &str| {
        let mut b = b.clone();
        b[ty..ty + 4].copy_from_slice(&t.to_le_bytes());
        let p = d.path().join(file);
        std::fs::write(&p, b).unwrap();
        load_error(&p)
    };
    let e = with_type(9, "q8_1.gguf"); // GGML_TYPE_Q8_1
    assert!(
        e.contains("blk.0.attn_q.weight")
            && e.contains("Q8_1")
            && e.contains("supported: F32, F16, BF16, Q4_0"),
        "{e}"
    );
    // A type the engine reads, but rows (8 wide) that are not whole blocks.
    let e = with_type(8, "q8_0.gguf"); // GGML_TYPE_Q8_0
    assert!(
        e.contains("rows of 8 values are not whole Q8_0 blocks of 32"),
        "{e}"
    );
}
