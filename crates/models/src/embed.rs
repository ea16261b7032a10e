//! all-MiniLM-L6-v2 sentence embeddings in Rust (the engine's encoder + tokenizers).
//!
//! Reproduces sentence-transformers' pipeline for this model
//! (`modules.json`: Transformer -> Pooling(mean) -> Normalize):
//! 1. WordPiece tokenisation from `tokenizer.json`, truncated at
//!    `max_seq_length` = 256 tokens (the file itself pads and truncates at 128,
//!    which would change the pooling; both are overridden);
//! 2. BERT forward pass (the engine's [`ragprobe_engine::encoder`]: texts
//!    are not padded, each attends over its own tokens only, and its
//!    vector does not depend on the batch);
//! 3. mean of the token embeddings weighted by the attention mask
//!    (`sum(h * m) / max(sum(m), 1e-9)`);
//! 4. L2 normalisation (`x / max(||x||, 1e-12)`), so a dot product is a cosine.

use ragprobe_engine::encoder::{Bert, BertConfig};
use std::path::{Path, PathBuf};
use tokenizers::{Tokenizer, TruncationParams};

use crate::paths::file_sha256;
use crate::{ModelError, Result};

/// Width of a MiniLM embedding.
pub const EMBEDDING_DIM: usize = 384;
/// sentence-transformers' `max_seq_length` for this model.
pub const MAX_SEQ_LEN: usize = 256;

/// A loaded MiniLM sentence embedder.
pub struct Embedder {
    model: Bert,
    tokenizer: Tokenizer,
    model_sha256: String,
    dir: PathBuf,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("dir", &self.dir)
            .field("model_sha256", &self.model_sha256)
            .finish()
    }
}

fn need(path: PathBuf) -> Result<PathBuf> {
    if path.is_file() {
        Ok(path)
    } else {
        Err(ModelError::Missing { path })
    }
}

impl Embedder {
    /// Load from the default models directory.
    pub fn load_default() -> Result<Embedder> {
        Embedder::load(&crate::paths::minilm_dir())
    }

    /// Load from a directory holding `model.safetensors`, `tokenizer.json`
    /// and `config.json`.
    pub fn load(dir: &Path) -> Result<Embedder> {
        let weights = need(dir.join("model.safetensors"))?;
        let tok_path = need(dir.join("tokenizer.json"))?;
        let cfg_path = need(dir.join("config.json"))?;
        let load_err = |path: &Path, message: String| ModelError::Load {
            path: path.to_path_buf(),
            message,
        };
        let cfg_text =
            std::fs::read_to_string(&cfg_path).map_err(|e| load_err(&cfg_path, e.to_string()))?;
        let config = bert_config(&cfg_text).map_err(|m| load_err(&cfg_path, m))?;
        let mut tokenizer =
            Tokenizer::from_file(&tok_path).map_err(|e| load_err(&tok_path, e.to_string()))?;
        // No padding: the encoder takes each text's own tokens.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_SEQ_LEN,
                ..Default::default()
            }))
            .map_err(|e| load_err(&tok_path, e.to_string()))?;
        // Bert's errors name the file already.
        let model = Bert::load(&weights, config).map_err(|e| ModelError::Backend(e.to_string()))?;
        let model_sha256 = file_sha256(&weights).map_err(|e| load_err(&weights, e.to_string()))?;
        Ok(Embedder {
            model,
            tokenizer,
            model_sha256,
            dir: dir.to_path_buf(),
        })
    }

    /// SHA-256 of the weights file: the model's id in recipes and caches.
    pub fn model_sha256(&self) -> &str {
        &self.model_sha256
    }

    /// A short model name for artifacts.
    pub fn model_name(&self) -> &'static str {
        "all-MiniLM-L6-v2"
    }

    /// The encoder's id in recipes and caches: the model, its weights'
    /// hash and the implementation that computes the vectors
    /// ([`ragprobe_engine::encoder::ENCODER_ID`]).
    pub fn model_id(&self) -> String {
        format!(
            "{}:sha256:{}:{}",
            self.model_name(),
            self.model_sha256,
            ragprobe_engine::encoder::ENCODER_ID
        )
    }

    /// Embed one batch of texts (all at once: call with batches of ~32).
    pub fn embed_batch(&self, texts: &[&str]) -> Result<Vec<[f32; EMBEDDING_DIM]>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| ModelError::Tokenizer(e.to_string()))?;
        let ids: Vec<Vec<u32>> = encodings.iter().map(|e| e.get_ids().to_vec()).collect();
        let rows = self.model.embed(&ids).map_err(|e| ModelError::Load {
            path: self.dir.clone(),
            message: e.to_string(),
        })?;
        Ok(rows
            .into_iter()
            .map(|r| {
                let mut a = [0f32; EMBEDDING_DIM];
                a.copy_from_slice(&r);
                a
            })
            .collect())
    }

    /// Embed any number of texts in batches of `batch`.
    pub fn embed(&self, texts: &[&str], batch: usize) -> Result<Vec<[f32; EMBEDDING_DIM]>> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(batch.max(1)) {
            out.extend(self.embed_batch(chunk)?);
        }
        Ok(out)
    }

    /// Cosine similarity of two texts.
    pub fn similarity(&self, a: &str, b: &str) -> Result<f32> {
        let e = self.embed_batch(&[a, b])?;
        Ok(cosine(&e[0], &e[1]))
    }
}

/// The encoder's hyperparameters from a Hugging Face `config.json`; a
/// missing field, or an activation or position embedding other than BERT's
/// (`gelu`, `absolute`), is an error naming the field.
fn bert_config(text: &str) -> std::result::Result<BertConfig, String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let int = |k: &str| {
        v[k].as_u64()
            .map(|x| x as usize)
            .ok_or_else(|| format!("field `{k}`: a non-negative integer expected"))
    };
    for (k, want) in [
        ("hidden_act", "gelu"),
        ("position_embedding_type", "absolute"),
    ] {
        if let Some(got) = v.get(k).and_then(|x| x.as_str()).filter(|g| *g != want) {
            return Err(format!("field `{k}` is `{got}`; the encoder runs `{want}`"));
        }
    }
    Ok(BertConfig {
        hidden_size: int("hidden_size")?,
        num_hidden_layers: int("num_hidden_layers")?,
        num_attention_heads: int("num_attention_heads")?,
        intermediate_size: int("intermediate_size")?,
        max_position_embeddings: int("max_position_embeddings")?,
        layer_norm_eps: v["layer_norm_eps"].as_f64().unwrap_or(1e-12),
        model_type: v["model_type"].as_str().map(String::from),
    })
}

/// Cosine similarity (plain, not assuming normalised inputs).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        dot += (*x as f64) * (*y as f64);
        na += (*x as f64) * (*x as f64);
        nb += (*y as f64) * (*y as f64);
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    (dot / (na.sqrt() * nb.sqrt())) as f32
}
