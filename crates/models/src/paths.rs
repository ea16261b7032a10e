//! Locations of model files fetched by `scripts/fetch-models.sh`.

use std::path::PathBuf;

/// The models cache: `$RAGPROBE_MODELS`, else `~/.cache/ragprobe/models`.
pub fn models_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("RAGPROBE_MODELS").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    home.join(".cache").join("ragprobe").join("models")
}

/// Directory of all-MiniLM-L6-v2 (`model.safetensors`, `tokenizer.json`, `config.json`).
pub fn minilm_dir() -> PathBuf {
    models_dir().join("all-minilm-l6-v2")
}

/// The embedded generator's GGUF file.
pub fn smollm2_gguf() -> PathBuf {
    models_dir()
        .join("smollm2-135m-instruct")
        .join("SmolLM2-135M-Instruct.Q4_1.gguf")
}

/// SHA-256 of a file, streamed: the id of a model file in recipes.
pub fn file_sha256(path: &std::path::Path) -> std::io::Result<String> {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}

/// Lowercase hex SHA-256 of a string.
pub fn sha256_str(s: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(s.as_bytes()))
}
