//! all-MiniLM-L6-v2 sentence embeddings in Rust (candle + tokenizers).
//!
//! Reproduces sentence-transformers' pipeline for this model
//! (`modules.json`: Transformer -> Pooling(mean) -> Normalize):
//! 1. WordPiece tokenisation from `tokenizer.json`, truncated at
//!    `max_seq_length` = 256 tokens (the file itself pads and truncates at 128,
//!    which would change the pooling; both are overridden), padded to the
//!    longest sequence of the batch;
//! 2. BERT forward pass;
//! 3. mean of the token embeddings weighted by the attention mask
//!    (`sum(h * m) / max(sum(m), 1e-9)`);
//! 4. L2 normalisation (`x / max(||x||, 1e-12)`), so a dot product is a cosine.

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use std::path::{Path, PathBuf};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use crate::paths::file_sha256;
use crate::{ModelError, Result};

/// Width of a MiniLM embedding.
pub const EMBEDDING_DIM: usize = 384;
/// sentence-transformers' `max_seq_length` for this model.
pub const MAX_SEQ_LEN: usize = 256;

/// A loaded MiniLM sentence embedder.
pub struct Embedder {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
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
        let config: Config =
            serde_json::from_str(&cfg_text).map_err(|e| load_err(&cfg_path, e.to_string()))?;
        let mut tokenizer =
            Tokenizer::from_file(&tok_path).map_err(|e| load_err(&tok_path, e.to_string()))?;
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..Default::default()
        }));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_SEQ_LEN,
                ..Default::default()
            }))
            .map_err(|e| load_err(&tok_path, e.to_string()))?;
        let device = Device::Cpu;
        // SAFETY: the file is mapped read-only and not modified while mapped.
        let vb = unsafe { VarBuilder::from_mmaped_safetensors(&[&weights], DType::F32, &device) }
            .map_err(|e| load_err(&weights, e.to_string()))?;
        let model = BertModel::load(vb, &config).map_err(|e| load_err(&weights, e.to_string()))?;
        let model_sha256 = file_sha256(&weights).map_err(|e| load_err(&weights, e.to_string()))?;
        Ok(Embedder {
            model,
            tokenizer,
            device,
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

    /// Embed one batch of texts (all at once: call with batches of ~32).
    pub fn embed_batch(&self, texts: &[&str]) -> Result<Vec<[f32; EMBEDDING_DIM]>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| ModelError::Tokenizer(e.to_string()))?;
        let seq = encodings[0].get_ids().len();
        let n = encodings.len();
        let mut ids = Vec::with_capacity(n * seq);
        let mut types = Vec::with_capacity(n * seq);
        let mut mask = Vec::with_capacity(n * seq);
        for e in &encodings {
            ids.extend(e.get_ids().iter().map(|&x| x as i64));
            types.extend(e.get_type_ids().iter().map(|&x| x as i64));
            mask.extend(e.get_attention_mask().iter().map(|&x| x as i64));
        }
        let ids = Tensor::from_vec(ids, (n, seq), &self.device)?;
        let types = Tensor::from_vec(types, (n, seq), &self.device)?;
        let mask = Tensor::from_vec(mask, (n, seq), &self.device)?;
        let hidden = self.model.forward(&ids, &types, Some(&mask))?; // (n, seq, 384)
        let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?; // (n, seq, 1)
        let summed = hidden.broadcast_mul(&m)?.sum(1)?; // (n, 384)
        let counts = m.sum(1)?.clamp(1e-9f32, f32::MAX)?; // (n, 1)
        let mean = summed.broadcast_div(&counts)?;
        let norms = mean
            .sqr()?
            .sum_keepdim(1)?
            .sqrt()?
            .clamp(1e-12f32, f32::MAX)?;
        let normed = mean.broadcast_div(&norms)?;
        let rows: Vec<Vec<f32>> = normed.to_vec2()?;
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
