//! A BERT-family text encoder (all-MiniLM-L6-v2 and its kin) on the
//! engine's batch-invariant kernels.
//!
//! The forward pass is Hugging Face's `BertModel` in inference mode
//! (word + position + token-type embeddings and LayerNorm; per layer
//! self-attention, output projection, residual and LayerNorm, then the
//! feed-forward block with exact GELU, residual and LayerNorm), followed
//! by sentence-transformers' mean pooling and L2 normalisation.
//!
//! The texts of a batch are not padded: their tokens are stacked into one
//! matrix for every linear layer (each weight matrix read once for the
//! whole batch) and each token attends over its own text only, so a
//! padded position and its mask never exist. Every output element is
//! computed by the same operations in the same order whatever else is in
//! the batch and whichever SIMD width runs it ([`crate::kernels`]): a
//! text's vector does not depend on its batch.

use std::path::Path;

use rayon::prelude::*;

use crate::kernels::{self, Isa};
use crate::{EngineError, Result};

/// Bumped whenever the encoder's arithmetic changes (and with it, possibly,
/// its vectors): it enters the encoder's id in recipes.
pub const ENCODER_ID: &str = "ragprobe-encoder-2";

/// Rows of a linear layer's input computed per kernel call, so the rows
/// stay in cache while every block of weight rows passes over them.
const ROWS_PER_CALL: usize = 256;

/// The hyperparameters of a BERT encoder (`config.json`).
#[derive(Debug, Clone, PartialEq)]
pub struct BertConfig {
    /// Width of the hidden states.
    pub hidden_size: usize,
    /// Transformer layers.
    pub num_hidden_layers: usize,
    /// Attention heads (`hidden_size` is a multiple).
    pub num_attention_heads: usize,
    /// Width of the feed-forward block.
    pub intermediate_size: usize,
    /// Positions the model has embeddings for.
    pub max_position_embeddings: usize,
    /// LayerNorm's epsilon.
    pub layer_norm_eps: f64,
    /// The weights' name prefix besides none (`model_type`, e.g. `bert`).
    pub model_type: Option<String>,
}

/// One LayerNorm: weight and bias.
struct Norm {
    w: Vec<f32>,
    b: Vec<f32>,
}

/// One linear layer: `n × k` weights (as stored: output rows) and bias.
struct Linear {
    w: Vec<f32>,
    b: Vec<f32>,
    n: usize,
    k: usize,
}

struct Layer {
    q: Linear,
    k: Linear,
    v: Linear,
    out: Linear,
    norm1: Norm,
    up: Linear,
    down: Linear,
    norm2: Norm,
}

/// A loaded BERT encoder.
pub struct Bert {
    cfg: BertConfig,
    isa: Isa,
    word: Vec<f32>,
    vocab: usize,
    position: Vec<f32>,
    token_type: Vec<f32>,
    norm: Norm,
    layers: Vec<Layer>,
}

impl std::fmt::Debug for Bert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bert")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

/// The tensors of a safetensors file, read as f32.
struct Tensors<'a> {
    st: safetensors::SafeTensors<'a>,
    path: &'a Path,
    prefix: String,
}

impl Tensors<'_> {
    fn err(&self, m: String) -> EngineError {
        EngineError::Load(format!("{}: {m}", self.path.display()))
    }

    /// The first dimension of tensor `name` (under the prefix): rows of an
    /// embedding table.
    fn rows(&self, name: &str) -> Result<usize> {
        let full = format!("{}{name}", self.prefix);
        let t = self
            .st
            .tensor(&full)
            .map_err(|e| self.err(format!("tensor `{full}`: {e}")))?;
        Ok(t.shape().first().copied().unwrap_or(0))
    }

    /// Tensor `name` (under the prefix) as f32 values, checked to hold
    /// `len` of them (F32, F16 or BF16 in the file).
    fn get(&self, name: &str, len: usize) -> Result<Vec<f32>> {
        let full = format!("{}{name}", self.prefix);
        let t = self
            .st
            .tensor(&full)
            .map_err(|e| self.err(format!("tensor `{full}`: {e}")))?;
        let n: usize = t.shape().iter().product();
        if n != len {
            return Err(self.err(format!(
                "tensor `{full}` has shape {:?}, expected {len} values",
                t.shape()
            )));
        }
        let d = t.data();
        use safetensors::Dtype;
        let v: Vec<f32> = match t.dtype() {
            Dtype::F32 => d
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
            Dtype::F16 => d
                .chunks_exact(2)
                .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
                .collect(),
            Dtype::BF16 => d
                .chunks_exact(2)
                .map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32())
                .collect(),
            other => {
                return Err(self.err(format!(
                    "tensor `{full}` is {other:?}; F32, F16 or BF16 expected"
                )))
            }
        };
        Ok(v)
    }

    fn linear(&self, name: &str, n: usize, k: usize) -> Result<Linear> {
        Ok(Linear {
            w: self.get(&format!("{name}.weight"), n * k)?,
            b: self.get(&format!("{name}.bias"), n)?,
            n,
            k,
        })
    }

    /// A LayerNorm, by its current names (`weight`, `bias`) or the old
    /// TensorFlow ones (`gamma`, `beta`).
    fn norm(&self, name: &str, n: usize) -> Result<Norm> {
        match self.get(&format!("{name}.weight"), n) {
            Ok(w) => Ok(Norm {
                w,
                b: self.get(&format!("{name}.bias"), n)?,
            }),
            Err(_) => Ok(Norm {
                w: self.get(&format!("{name}.gamma"), n)?,
                b: self.get(&format!("{name}.beta"), n)?,
            }),
        }
    }
}

impl Bert {
    /// Load the weights of `cfg` from a safetensors file: the names of
    /// Hugging Face's `BertModel`, bare or under `<model_type>.`. A
    /// missing tensor, a shape that does not match the configuration or a
    /// type other than F32/F16/BF16 is an error naming the file and the
    /// tensor.
    pub fn load(path: &Path, cfg: BertConfig) -> Result<Bert> {
        let (h, heads) = (cfg.hidden_size, cfg.num_attention_heads);
        if h == 0 || heads == 0 || h % heads != 0 || cfg.num_hidden_layers == 0 {
            return Err(EngineError::Load(format!(
                "{}: hidden_size {h} is not a positive multiple of num_attention_heads {heads} (or no layers)",
                path.display()
            )));
        }
        let io = |e: std::io::Error| EngineError::Load(format!("{}: {e}", path.display()));
        let file = std::fs::File::open(path).map_err(io)?;
        // Mapped, not read: the weights are copied out once as f32, and the
        // file's bytes need not be held beside them.
        // SAFETY: the file is mapped read-only and only read during this call.
        let bytes = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        let st = safetensors::SafeTensors::deserialize(&bytes).map_err(|e| {
            EngineError::Load(format!("{}: not a safetensors file: {e}", path.display()))
        })?;
        let mut t = Tensors {
            st,
            path,
            prefix: String::new(),
        };
        let word_name = "embeddings.word_embeddings.weight";
        if t.st.tensor(word_name).is_err() {
            if let Some(m) = &cfg.model_type {
                t.prefix = format!("{m}.");
            }
        }
        let vocab = t.rows(word_name)?;
        let word = t.get(word_name, vocab * h)?;
        let p = cfg.max_position_embeddings;
        let position = t.get("embeddings.position_embeddings.weight", p * h)?;
        let type_name = "embeddings.token_type_embeddings.weight";
        let token_type = t.get(type_name, t.rows(type_name)?.max(1) * h)?;
        let norm = t.norm("embeddings.LayerNorm", h)?;
        let i = cfg.intermediate_size;
        let layers = (0..cfg.num_hidden_layers)
            .map(|l| {
                let n = |s: &str| format!("encoder.layer.{l}.{s}");
                Ok(Layer {
                    q: t.linear(&n("attention.self.query"), h, h)?,
                    k: t.linear(&n("attention.self.key"), h, h)?,
                    v: t.linear(&n("attention.self.value"), h, h)?,
                    out: t.linear(&n("attention.output.dense"), h, h)?,
                    norm1: t.norm(&n("attention.output.LayerNorm"), h)?,
                    up: t.linear(&n("intermediate.dense"), i, h)?,
                    down: t.linear(&n("output.dense"), h, i)?,
                    norm2: t.norm(&n("output.LayerNorm"), h)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Bert {
            cfg,
            isa: Isa::detect(),
            word,
            vocab,
            position,
            token_type,
            norm,
            layers,
        })
    }

    /// The configuration it was loaded with.
    pub fn config(&self) -> &BertConfig {
        &self.cfg
    }

    /// Run the kernels of `isa` instead of the detected ones (tests compare
    /// them; every variant gives the same bits).
    pub fn with_isa(mut self, isa: Isa) -> Bert {
        self.isa = isa;
        self
    }

    /// The mean-pooled, L2-normalised vector of each text, given as token
    /// ids (token type 0, positions from 0). A text longer than the
    /// model's positions, an empty one or an id outside the vocabulary is
    /// an error. Each vector is the same whatever else is in `texts`.
    pub fn embed(&self, texts: &[Vec<u32>]) -> Result<Vec<Vec<f32>>> {
        let h = self.cfg.hidden_size;
        for (i, ids) in texts.iter().enumerate() {
            if ids.is_empty() || ids.len() > self.cfg.max_position_embeddings {
                return Err(EngineError::Load(format!(
                    "text {i}: {} tokens; the encoder takes 1 to {}",
                    ids.len(),
                    self.cfg.max_position_embeddings
                )));
            }
            if let Some(bad) = ids.iter().find(|&&id| id as usize >= self.vocab) {
                return Err(EngineError::Load(format!(
                    "text {i}: token id {bad} outside the vocabulary of {}",
                    self.vocab
                )));
            }
        }
        let mut starts = Vec::with_capacity(texts.len() + 1);
        starts.push(0usize);
        for ids in texts {
            starts.push(starts.last().unwrap() + ids.len());
        }
        let t = *starts.last().unwrap();
        if t == 0 {
            return Ok(Vec::new());
        }
        let eps = self.cfg.layer_norm_eps as f32;
        // Embeddings, then their LayerNorm.
        let mut x = vec![0f32; t * h];
        let mut row = 0;
        for ids in texts {
            for (pos, &id) in ids.iter().enumerate() {
                let out = &mut x[row * h..(row + 1) * h];
                let w = &self.word[id as usize * h..(id as usize + 1) * h];
                let p = &self.position[pos * h..(pos + 1) * h];
                for j in 0..h {
                    out[j] = w[j] + self.token_type[j] + p[j];
                }
                layer_norm(out, &self.norm, eps);
                row += 1;
            }
        }
        let mut q = vec![0f32; t * h];
        let mut k = vec![0f32; t * h];
        let mut v = vec![0f32; t * h];
        let mut ctx = vec![0f32; t * h];
        let mut a = vec![0f32; t * h];
        let mut up = vec![0f32; t * self.cfg.intermediate_size];
        for layer in &self.layers {
            self.linear(&x, t, &layer.q, &mut q);
            self.linear(&x, t, &layer.k, &mut k);
            self.linear(&x, t, &layer.v, &mut v);
            self.attention(&starts, (&q, &k, &v), &mut ctx);
            self.linear(&ctx, t, &layer.out, &mut a);
            a.par_chunks_mut(h).zip(x.par_chunks(h)).for_each(|(a, x)| {
                for (a, x) in a.iter_mut().zip(x) {
                    *a += x;
                }
                layer_norm(a, &layer.norm1, eps);
            });
            self.linear(&a, t, &layer.up, &mut up);
            up.par_chunks_mut(4096).for_each(gelu_in_place);
            self.linear(&up, t, &layer.down, &mut x);
            x.par_chunks_mut(h).zip(a.par_chunks(h)).for_each(|(x, a)| {
                for (x, a) in x.iter_mut().zip(a) {
                    *x += a;
                }
                layer_norm(x, &layer.norm2, eps);
            });
        }
        // Mean over each text's tokens (in order), then L2 normalisation.
        Ok((0..texts.len())
            .map(|s| {
                let mut m = vec![0f32; h];
                for r in starts[s]..starts[s + 1] {
                    for (m, x) in m.iter_mut().zip(&x[r * h..(r + 1) * h]) {
                        *m += x;
                    }
                }
                let n = (starts[s + 1] - starts[s]) as f32;
                m.iter_mut().for_each(|v| *v /= n);
                let norm = m.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
                m.iter_mut().for_each(|v| *v /= norm);
                m
            })
            .collect())
    }

    /// Self-attention of every text over its own tokens, each head as two
    /// matrix products on the engine's kernel: `S = Q_h · K_hᵀ`, scaled;
    /// `P = exp(S - max)` by row, with its sum; `ctx_h = (P · V_h) / sum`.
    /// `P` and `V_hᵀ` are padded with zeros to a multiple of the kernel's
    /// 16 lanes (an exact `+ 0·0` on each sum), so every product takes
    /// the kernel's tail-free path. A text's result depends on its own
    /// tokens only, and is computed by the same operations in the same
    /// order whatever else is in the batch ((text, head) pairs run in
    /// parallel, each on one thread).
    fn attention(&self, starts: &[usize], (q, k, v): (&[f32], &[f32], &[f32]), ctx: &mut [f32]) {
        let h = self.cfg.hidden_size;
        let heads = self.cfg.num_attention_heads;
        let hd = h / heads;
        let scale = 1.0 / (hd as f32).sqrt();
        let isa = self.isa;
        let pairs: Vec<(usize, usize)> = (0..starts.len() - 1)
            .flat_map(|s| (0..heads).map(move |hh| (s, hh)))
            .collect();
        let outs: Vec<Vec<f32>> = pairs
            .par_iter()
            .map(|&(s, hh)| {
                let (r0, len) = (starts[s], starts[s + 1] - starts[s]);
                let lp = len.div_ceil(kernels::LANES) * kernels::LANES;
                let gather = |m: &[f32]| -> Vec<f32> {
                    let mut g = Vec::with_capacity(len * hd);
                    for r in r0..r0 + len {
                        g.extend_from_slice(&m[r * h + hh * hd..r * h + (hh + 1) * hd]);
                    }
                    g
                };
                let (qh, kh) = (gather(q), gather(k));
                // V_hᵀ: hd rows of lp positions.
                let mut vt = vec![0f32; hd * lp];
                for (j, r) in (r0..r0 + len).enumerate() {
                    for (c, &x) in v[r * h + hh * hd..r * h + (hh + 1) * hd].iter().enumerate() {
                        vt[c * lp + j] = x;
                    }
                }
                let mut p = vec![0f32; len * lp];
                // SAFETY: qh and kh hold `len` rows of `hd`, p holds `len`
                // rows of `lp >= len` (columns 0..len written); the ISA was
                // detected on this CPU.
                unsafe {
                    kernels::matmul_range(isa, &qh, len, hd, &kh, (0, len), p.as_mut_ptr(), lp)
                };
                let mut sums = vec![0f32; len];
                for (row, sum) in p.chunks_mut(lp).zip(sums.iter_mut()) {
                    let row = &mut row[..len];
                    let mut max = f32::NEG_INFINITY;
                    for x in row.iter_mut() {
                        *x *= scale;
                        max = max.max(*x);
                    }
                    for x in row.iter_mut() {
                        *x = (*x - max).exp();
                        *sum += *x;
                    }
                }
                let mut o = vec![0f32; len * hd];
                // SAFETY: p holds `len` rows of `lp`, vt `hd` rows of `lp`,
                // o `len` rows of `hd`; the ISA was detected on this CPU.
                unsafe {
                    kernels::matmul_range(isa, &p, len, lp, &vt, (0, hd), o.as_mut_ptr(), hd)
                };
                for (row, sum) in o.chunks_mut(hd).zip(&sums) {
                    let inv = 1.0 / sum;
                    row.iter_mut().for_each(|x| *x *= inv);
                }
                o
            })
            .collect();
        for (&(s, hh), o) in pairs.iter().zip(&outs) {
            for (i, row) in o.chunks(hd).enumerate() {
                let r = starts[s] + i;
                ctx[r * h + hh * hd..r * h + (hh + 1) * hd].copy_from_slice(row);
            }
        }
    }

    /// `out[t × n] = x[t × k] · wᵀ + b`, [`ROWS_PER_CALL`] rows at a time.
    fn linear(&self, x: &[f32], t: usize, l: &Linear, out: &mut [f32]) {
        for (xs, os) in x[..t * l.k]
            .chunks(ROWS_PER_CALL * l.k)
            .zip(out[..t * l.n].chunks_mut(ROWS_PER_CALL * l.n))
        {
            let rows = xs.len() / l.k;
            kernels::matmul(self.isa, xs, rows, l.k, &l.w, l.n, os);
            for o in os.chunks_mut(l.n) {
                for (o, b) in o.iter_mut().zip(&l.b) {
                    *o += b;
                }
            }
        }
    }
}

/// LayerNorm of one row in place: `(x - mean) / sqrt(var + eps) * w + b`,
/// mean and (biased) variance summed in order.
fn layer_norm(x: &mut [f32], n: &Norm, eps: f32) {
    let len = x.len() as f32;
    let mean = x.iter().sum::<f32>() / len;
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / len;
    let inv = 1.0 / (var + eps).sqrt();
    for ((v, w), b) in x.iter_mut().zip(&n.w).zip(&n.b) {
        *v = (*v - mean) * inv * w + b;
    }
}

/// GELU, `x/2 · (1 + erf(x/√2))` (BERT's exact `gelu`), in place, with
/// [`erf`] in f32.
fn gelu_in_place(xs: &mut [f32]) {
    for x in xs.iter_mut() {
        *x = 0.5 * *x * (1.0 + erf(*x * std::f32::consts::FRAC_1_SQRT_2));
    }
}

/// erf in f32: the rational approximation of Eigen's and XLA's float erf
/// (`x · P(x²) / Q(x²)`; ±1 beyond ±3.9), within 5e-7 of erf
/// everywhere (the worst near ±3.9, about 1e-7 below 3; test below,
/// against libm's f64 erf). Plain multiplies and
/// adds, no fused multiply-add, so every ISA and vector width gives the
/// same bits; it vectorises, where the f64 libm erf it replaces took a
/// third of the encoder's time.
#[inline(always)]
fn erf(x: f32) -> f32 {
    let x2 = x * x;
    let mut p = x2 * -2.726_142_3e-10 + 2.770_681_4e-8;
    p = x2 * p + -2.101_024e-6;
    p = x2 * p + -5.692_506_4e-5;
    p = x2 * p + -7.349_906_3e-4;
    p = x2 * p + -2.954_6e-3;
    p = x2 * p + -1.609_603_3e-2;
    let p = x * p;
    let mut q = x2 * -1.456_607_2e-5 + -2.133_740_6e-4;
    q = x2 * q + -1.682_827e-3;
    q = x2 * q + -7.373_329e-3;
    q = x2 * q + -1.426_474e-2;
    // Beyond 3.9, erf rounds to ±1 in f32 (erfc(3.9) = 3.5e-8), where the
    // approximation is up to 7 ulp short (and, for large |x|, inf/inf).
    let r = p / q;
    if x > 3.9 {
        1.0
    } else if x < -3.9 {
        -1.0
    } else {
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gelu(x: f32) -> f32 {
        let mut v = [x];
        gelu_in_place(&mut v);
        v[0]
    }

    #[test]
    fn gelu_at_known_points() {
        // GELU(1) = 0.8413447460685429, GELU(-1) = -0.15865525393145707.
        assert!((gelu(1.0) - 0.841_344_8).abs() < 1e-7);
        assert!((gelu(-1.0) + 0.158_655_26).abs() < 1e-7);
        assert_eq!(gelu(0.0), 0.0);
    }

    #[test]
    fn erf_within_5e_7_of_libm_f64() {
        let mut worst = (0f64, 0f32);
        for i in -600_000..=600_000 {
            let x = i as f32 * 1e-5;
            let e = (erf(x) as f64 - libm::erf(x as f64)).abs();
            if e > worst.0 {
                worst = (e, x);
            }
        }
        assert!(worst.0 < 5e-7, "erf off by {} at {}", worst.0, worst.1);
        assert_eq!(erf(10.0), 1.0);
        assert_eq!(erf(-10.0), -1.0);
        assert_eq!(erf(f32::MAX), 1.0);
        assert_eq!(erf(f32::MIN), -1.0);
    }

    #[test]
    fn layer_norm_worked_example() {
        // x = [1, 2, 3, 4]: mean 2.5, var 1.25.
        let mut x = vec![1.0f32, 2.0, 3.0, 4.0];
        let n = Norm {
            w: vec![1.0; 4],
            b: vec![0.5; 4],
        };
        layer_norm(&mut x, &n, 0.0);
        let s = 1.25f32.sqrt();
        for (v, want) in x.iter().zip([-1.5 / s, -0.5 / s, 0.5 / s, 1.5 / s]) {
            assert!((v - (want + 0.5)).abs() < 1e-6, "{v}");
        }
    }
}
