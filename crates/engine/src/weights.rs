//! A decoder model's shape and weights, read from a GGUF file and kept in
//! its tensor types ([`crate::quant::SUPPORTED_TYPES`], memory-mapped): the
//! architectures of [`SUPPORTED_ARCHITECTURES`], every hyperparameter from
//! the file's metadata.

use crate::gguf::Content;
use std::io::{Read, Seek, SeekFrom};
use std::sync::Arc;

use crate::matrix::{Bytes, Footprint, Matrix, Part};
use crate::packed::Packed;
use crate::quant::{supported_type_names, Dtype};
use crate::{EngineError, Result};

/// The `general.architecture` values the engine runs. `llama` covers
/// Llama 1–3.x (with Llama 3's RoPE scaling as llama.cpp's converter
/// writes it, a `rope_freqs.weight` tensor), SmolLM and Mistral-style
/// files (llama.cpp writes Mistral 7B as `llama`); `qwen2` is Qwen2 and
/// Qwen2.5 (biases on Q, K and V; NeoX-style RoPE).
pub const SUPPORTED_ARCHITECTURES: &[&str] = &["llama", "qwen2"];

/// How RoPE pairs a head's dimensions, as llama.cpp does per architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopeStyle {
    /// Pairs `(2i, 2i+1)` (llama: its converter permutes Q and K for it).
    Interleaved,
    /// Pairs `(i, i + head_dim/2)` (qwen2: `LLAMA_ROPE_TYPE_NEOX`).
    Neox,
}

/// The model's shape, from the GGUF metadata (`<arch>.*` keys).
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `general.architecture`, one of [`SUPPORTED_ARCHITECTURES`].
    pub architecture: String,
    /// How RoPE pairs dimensions (from the architecture).
    pub rope_style: RopeStyle,
    /// Hidden width.
    pub dim: usize,
    /// Transformer blocks.
    pub n_layer: usize,
    /// Query heads.
    pub n_head: usize,
    /// Key-value heads.
    pub n_kv_head: usize,
    /// Width of one head.
    pub head_dim: usize,
    /// Feed-forward width.
    pub ff_dim: usize,
    /// Vocabulary size.
    pub vocab: usize,
    /// RMS norm epsilon.
    pub eps: f32,
    /// RoPE base frequency.
    pub rope_base: f32,
    /// The longest sequence the model takes.
    pub context_length: usize,
}

impl Config {
    /// `n_kv_head * head_dim`.
    pub fn kv_dim(&self) -> usize {
        self.n_kv_head * self.head_dim
    }
}

/// One transformer block. Q, K and V are stacked into one matrix, and so
/// are the gate and up projections, so each is one matmul.
#[derive(Debug)]
pub struct Layer {
    /// Attention RMS norm weights.
    pub attn_norm: Vec<f32>,
    /// `[(dim + 2 kv_dim) × dim]`: Q rows, then K, then V.
    pub qkv: Matrix,
    /// `[dim × dim]`.
    pub out: Matrix,
    /// Feed-forward RMS norm weights.
    pub ffn_norm: Vec<f32>,
    /// `[2 ff_dim × dim]`: gate rows, then up.
    pub gate_up: Matrix,
    /// `[dim × ff_dim]`.
    pub down: Matrix,
    /// `[dim + 2 kv_dim]`: the Q, K and V biases (qwen2), added to the
    /// projection's output; None when the architecture has none.
    pub qkv_bias: Option<Vec<f32>>,
}

/// All weights.
#[derive(Debug)]
pub struct Weights {
    /// The shape.
    pub config: Config,
    /// `[vocab × dim]` token embeddings.
    pub embed: Matrix,
    /// The blocks.
    pub layers: Vec<Layer>,
    /// Final RMS norm weights.
    pub norm: Vec<f32>,
    /// `[vocab × dim]` output projection; None when tied to `embed`.
    pub output: Option<Matrix>,
    /// `[head_dim / 2]` RoPE frequency divisors (`rope_freqs.weight`,
    /// Llama 3's scaling: θ_i / f_i, as llama.cpp's `ggml_rope_ext`); None
    /// when the file has none.
    pub rope_freqs: Option<Vec<f32>>,
}

impl Weights {
    /// Where the weights' bytes live, over every matrix.
    pub fn footprint(&self) -> Footprint {
        let mut f = self.embed.footprint();
        if let Some(o) = &self.output {
            f += o.footprint();
        }
        for l in &self.layers {
            for m in [&l.qkv, &l.out, &l.gate_up, &l.down] {
                f += m.footprint();
            }
        }
        f
    }
}

/// Reads `ct`'s tensors from the mapped file (the block kernels' formats
/// through `file`, so their bytes are not also held mapped).
struct Reader<'a> {
    ct: &'a Content,
    file: &'a std::fs::File,
    map: Arc<memmap2::Mmap>,
}

impl Reader<'_> {
    fn has(&self, name: &str) -> bool {
        self.ct.tensor_infos.contains_key(name)
    }

    /// Tensor `name`'s type and byte range, checked against the file.
    fn locate(&self, name: &str, k: usize) -> Result<(Dtype, usize, usize)> {
        let info = self
            .ct
            .tensor_infos
            .get(name)
            .ok_or_else(|| EngineError::Load(format!("tensor `{name}` is missing")))?;
        let dtype = Dtype::from_ggml(info.ggml_type).ok_or_else(|| {
            EngineError::Load(format!(
                "tensor `{name}` is {}, a type the engine does not read (supported: {})",
                crate::quant::ggml_type_name(info.ggml_type),
                supported_type_names()
            ))
        })?;
        let n = info.elem_count();
        let len = match (dtype.bytes_for(k), dtype.bytes_for(n)) {
            (Some(_), Some(len)) if k > 0 && n.is_multiple_of(k) => len,
            _ => {
                return Err(EngineError::Load(format!(
                    "tensor `{name}`: rows of {k} values are not whole {} blocks of {}",
                    dtype.name(),
                    dtype.block().0
                )))
            }
        };
        let start = (self.ct.tensor_data_offset + info.offset) as usize;
        if start
            .checked_add(len)
            .is_none_or(|end| end > self.map.len())
        {
            return Err(EngineError::Load(format!(
                "tensor `{name}`'s data ends beyond the file's {} bytes",
                self.map.len()
            )));
        }
        Ok((dtype, start, len))
    }

    /// Tensor `name` decoded to f32 (norms, biases: `len` values), read
    /// through `file`: a page of the mapping touched here would stay
    /// resident, with the pages the kernel maps around it, until the whole
    /// model is loaded.
    fn vector(&self, name: &str, len: usize) -> Result<Vec<f32>> {
        let (dtype, start, bytes) = self.locate(name, len)?;
        let mut raw = vec![0u8; bytes];
        let mut f = self.file;
        f.seek(SeekFrom::Start(start as u64))
            .and_then(|_| f.read_exact(&mut raw))
            .map_err(|e| EngineError::Load(format!("tensor `{name}`: {e}")))?;
        let mut v = vec![0f32; len];
        dtype.decode(&raw, &mut v);
        Ok(v)
    }

    /// Tensors `names` stacked as one matrix of rows `k` wide, each in
    /// its own type.
    fn matrix(&self, names: &[&str], k: usize) -> Result<Matrix> {
        let mut parts = Vec::with_capacity(names.len());
        for name in names {
            let (dtype, start, len) = self.locate(name, k)?;
            let not_rows = || EngineError::Load(format!("tensor `{name}`: not whole rows of {k}"));
            let part = if Packed::holds(dtype) {
                // Regrouped for the block kernels: read a few rows at a
                // time, not mapped (mapped pages would stay resident beside
                // the copy, as would the whole raw tensor).
                let mut f = self.file;
                f.seek(SeekFrom::Start(start as u64))
                    .map_err(|e| EngineError::Load(format!("tensor `{name}`: {e}")))?;
                let p = Packed::from_reader(dtype, k, len, &mut f)
                    .map_err(|e| EngineError::Load(format!("tensor `{name}`: {e}")))?
                    .ok_or_else(not_rows)?;
                Part::packed(p)
            } else {
                let bytes = Bytes::Mapped {
                    map: self.map.clone(),
                    start,
                    len,
                };
                Part::new(dtype, k, bytes).ok_or_else(not_rows)?
            };
            parts.push(part);
        }
        Ok(Matrix::new(k, parts))
    }
}

fn config(ct: &Content) -> Result<Config> {
    let arch = match ct.metadata.get("general.architecture") {
        Some(v) => v
            .as_str()
            .map_err(|e| EngineError::Load(format!("`general.architecture`: {e}")))?
            .to_string(),
        None => "llama".into(),
    };
    let rope_style = match arch.as_str() {
        "llama" => RopeStyle::Interleaved,
        "qwen2" => RopeStyle::Neox,
        _ => {
            return Err(EngineError::Load(format!(
                "architecture `{arch}` is not supported (supported: {})",
                SUPPORTED_ARCHITECTURES.join(", ")
            )))
        }
    };
    let get = |k: &str| {
        ct.metadata
            .get(&format!("{arch}.{k}"))
            .ok_or_else(|| EngineError::Load(format!("GGUF metadata has no `{arch}.{k}`")))
    };
    let opt_int = |k: &str| crate::gguf::metadata_usize(ct, &format!("{arch}.{k}"));
    let int = |k: &str| -> Result<usize> {
        opt_int(k)?.ok_or_else(|| EngineError::Load(format!("GGUF metadata has no `{arch}.{k}`")))
    };
    let (dim, n_head) = (int("embedding_length")?, int("attention.head_count")?);
    let n_kv_head = opt_int("attention.head_count_kv")?.unwrap_or(n_head);
    if n_head == 0 || n_kv_head == 0 || dim % n_head != 0 || n_head % n_kv_head != 0 {
        return Err(EngineError::Load(format!(
            "unsupported head layout: {n_head} heads, {n_kv_head} key-value heads, width {dim}"
        )));
    }
    let vocab = match ct.metadata.get("tokenizer.ggml.tokens") {
        Some(v) => v
            .as_array()
            .map_err(|e| EngineError::Load(format!("`tokenizer.ggml.tokens`: {e}")))?
            .len(),
        None => return Err(EngineError::Load("GGUF metadata has no vocabulary".into())),
    };
    let declared = opt_int("context_length")?.unwrap_or(2048);
    if declared > MAX_CONTEXT {
        tracing::warn!(
            "GGUF metadata `{arch}.context_length` is {declared}; sequences are limited to {MAX_CONTEXT} tokens"
        );
    }
    let c = Config {
        architecture: arch.clone(),
        rope_style,
        dim,
        n_layer: int("block_count")?,
        n_head,
        n_kv_head,
        head_dim: dim / n_head,
        ff_dim: int("feed_forward_length")?,
        vocab,
        eps: get("attention.layer_norm_rms_epsilon")?
            .to_f32()
            .map_err(|e| {
                EngineError::Load(format!("`{arch}.attention.layer_norm_rms_epsilon`: {e}"))
            })?,
        rope_base: get("rope.freq_base")
            .and_then(|v| v.to_f32())
            .unwrap_or(10_000.0),
        context_length: declared.clamp(1, MAX_CONTEXT),
    };
    check_shapes(ct, &c)?;
    Ok(c)
}

/// The longest sequence the engine keeps rotary tables and caches for: a
/// declared `context_length` above it (2^32−1 in a crafted file grew memory
/// until killed) is capped, with a warning.
pub const MAX_CONTEXT: usize = 1 << 17;

/// Every dimension the metadata declares must be the one the tensors hold,
/// checked before anything is allocated: a crafted `block_count = 2^32−1`
/// or `feed_forward_length = 4e9` aborted on a multi-terabyte allocation.
fn check_shapes(ct: &Content, c: &Config) -> Result<()> {
    let elems = |name: &str| -> Result<usize> {
        ct.tensor_infos
            .get(name)
            .map(|t| t.elem_count())
            .ok_or_else(|| EngineError::Load(format!("tensor `{name}` is missing")))
    };
    let expect = |name: &str, dims: &[usize]| -> Result<()> {
        let want = dims.iter().try_fold(1usize, |a, d| a.checked_mul(*d));
        let got = elems(name)?;
        if want != Some(got) {
            return Err(EngineError::Load(format!(
                "tensor `{name}` holds {got} values; the metadata's shape {dims:?} needs {}",
                want.map_or("more than fit in memory".into(), |w| w.to_string())
            )));
        }
        Ok(())
    };
    let (d, kv, ff) = (c.dim, c.n_kv_head * c.head_dim, c.ff_dim);
    expect("token_embd.weight", &[c.vocab, d])?;
    // More layers than tensors: the first missing block is named.
    if c.n_layer == 0
        || !ct
            .tensor_infos
            .contains_key(&format!("blk.{}.attn_q.weight", c.n_layer - 1))
    {
        return Err(EngineError::Load(format!(
            "the metadata declares {} blocks, but tensor `blk.{}.attn_q.weight` is missing",
            c.n_layer,
            c.n_layer.saturating_sub(1)
        )));
    }
    for i in 0..c.n_layer {
        let p = |s: &str| format!("blk.{i}.{s}.weight");
        expect(&p("attn_q"), &[d, d])?;
        expect(&p("attn_k"), &[kv, d])?;
        expect(&p("attn_v"), &[kv, d])?;
        expect(&p("attn_output"), &[d, d])?;
        expect(&p("ffn_gate"), &[ff, d])?;
        expect(&p("ffn_up"), &[ff, d])?;
        expect(&p("ffn_down"), &[d, ff])?;
        if c.rope_style == RopeStyle::Neox {
            let b = |s: &str| format!("blk.{i}.{s}.bias");
            expect(&b("attn_q"), &[d])?;
            expect(&b("attn_k"), &[kv])?;
            expect(&b("attn_v"), &[kv])?;
        }
    }
    if ct.tensor_infos.contains_key("rope_freqs.weight") {
        expect("rope_freqs.weight", &[c.head_dim / 2])?;
    }
    Ok(())
}

impl Weights {
    /// Reads the shape and every weight of a GGUF model of one of the
    /// [`SUPPORTED_ARCHITECTURES`] from `file`, whose header is `ct`: the
    /// matrices stay in their blocks, most of them in the memory-mapped
    /// file (see [`crate::matrix`]).
    ///
    /// The mapping assumes the file is not modified while the model is
    /// loaded (as llama.cpp's loader does).
    pub fn from_gguf(ct: &Content, file: &std::fs::File) -> Result<Weights> {
        let c = config(ct)?;
        // SAFETY: the file is opened read-only and not written while mapped
        // (documented above); every range read is checked against its length.
        let map = unsafe { memmap2::Mmap::map(file) }
            .map_err(|e| EngineError::Load(format!("cannot map the file: {e}")))?;
        let r = Reader {
            ct,
            file,
            map: Arc::new(map),
        };
        let (d, kv, ff) = (c.dim, c.kv_dim(), c.ff_dim);
        let mut layers = Vec::with_capacity(c.n_layer);
        for i in 0..c.n_layer {
            let p = |s: &str| format!("blk.{i}.{s}.weight");
            let (q, k, v) = (p("attn_q"), p("attn_k"), p("attn_v"));
            let (o, g, u, dn) = (p("attn_output"), p("ffn_gate"), p("ffn_up"), p("ffn_down"));
            let qkv_bias = match c.rope_style {
                RopeStyle::Neox => {
                    let b = |s: &str| format!("blk.{i}.{s}.bias");
                    let mut all = r.vector(&b("attn_q"), d)?;
                    all.extend(r.vector(&b("attn_k"), kv)?);
                    all.extend(r.vector(&b("attn_v"), kv)?);
                    Some(all)
                }
                RopeStyle::Interleaved => None,
            };
            layers.push(Layer {
                attn_norm: r.vector(&p("attn_norm"), d)?,
                qkv: r.matrix(&[&q, &k, &v], d)?,
                out: r.matrix(&[&o], d)?,
                ffn_norm: r.vector(&p("ffn_norm"), d)?,
                gate_up: r.matrix(&[&g, &u], d)?,
                down: r.matrix(&[&dn], ff)?,
                qkv_bias,
            });
        }
        let output = match r.has("output.weight") {
            true => Some(r.matrix(&["output.weight"], d)?),
            false => None,
        };
        let rope_freqs = match r.has("rope_freqs.weight") {
            true => Some(r.vector("rope_freqs.weight", c.head_dim / 2)?),
            false => None,
        };
        Ok(Weights {
            rope_freqs,
            embed: r.matrix(&["token_embd.weight"], d)?,
            norm: r.vector("output_norm.weight", d)?,
            output,
            layers,
            config: c,
        })
    }
}
