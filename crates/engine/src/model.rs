//! The forward pass over a batch of sequences: every token of the step in
//! one matrix for the linear layers, attention per sequence.

use rayon::prelude::*;
use std::path::Path;

use crate::kernels::{self, Attend, Isa};
use crate::matrix::{Dots, Footprint, Matrix};
use crate::weights::{Config, RopeStyle, Weights};
use crate::{EngineError, Result};

/// A loaded model.
pub struct Model {
    weights: Weights,
    isa: Isa,
    /// RoPE's frequency of each pair of a head's values (`head_dim / 2`).
    /// The angles' cos and sin are computed per step for its positions: a
    /// table for the whole context would hold `context_length × head_dim`
    /// values (8 MB for a 32k context).
    theta: Vec<f32>,
    pool: Option<rayon::ThreadPool>,
    /// Never use the packed weights (for tests that compare the paths).
    f32_only: bool,
    /// How sequences' caches store keys and values.
    kv: KvType,
    /// How products with quantized weights are computed.
    dots: Dots,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("config", &self.weights.config)
            .field("isa", &self.isa)
            .finish()
    }
}

/// How the KV cache stores keys and values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KvType {
    /// IEEE half floats, as llama.cpp's default `f16` cache: half the
    /// memory of f32 (SmolLM2-135M: 23 KB a position instead of 46 KB).
    /// Each key and value is rounded to the nearest half once, when it is
    /// cached, and widened exactly when read, so every step sees the same
    /// numbers whatever the batch, threads or prefix reuse.
    #[default]
    F16,
    /// f32: keys and values exactly as computed (the reference the tests
    /// compare with llama.cpp's f32 cache).
    F32,
}

/// What a [`KvCache`] holds: f32 or IEEE half floats.
pub(crate) trait Cached: crate::search::Element {
    /// `v` as stored (halves: rounded to the nearest, ties to even).
    fn narrow(v: f32) -> Self;
}

impl Cached for f32 {
    #[inline(always)]
    fn narrow(v: f32) -> f32 {
        v
    }
}

impl Cached for half::f16 {
    #[inline(always)]
    fn narrow(v: f32) -> half::f16 {
        half::f16::from_f32(v)
    }
}

/// Keys and values of every layer, `[position × kv_dim]` each.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rows<T> {
    pub(crate) keys: Vec<Vec<T>>,
    pub(crate) values: Vec<Vec<T>>,
}

impl<T: Cached> Rows<T> {
    fn new(n_layer: usize, room: usize) -> Rows<T> {
        let room = || (0..n_layer).map(|_| Vec::with_capacity(room)).collect();
        Rows {
            keys: room(),
            values: room(),
        }
    }

    /// Appends one position's key and value at layer `l`.
    fn push(&mut self, l: usize, key: &[f32], value: &[f32]) {
        self.keys[l].extend(key.iter().map(|&v| T::narrow(v)));
        self.values[l].extend(value.iter().map(|&v| T::narrow(v)));
    }

    /// The first `n` values of every layer, in vectors of exactly that room.
    fn prefix(&self, n: usize) -> Rows<T> {
        let cut = |v: &Vec<Vec<T>>| v.iter().map(|r| r[..n].to_vec()).collect();
        Rows {
            keys: cut(&self.keys),
            values: cut(&self.values),
        }
    }

    /// Appends the first `n` values of every layer of `other`.
    fn extend_from(&mut self, other: &Rows<T>, n: usize) {
        for (dst, src) in self.keys.iter_mut().zip(&other.keys) {
            dst.extend_from_slice(&src[..n]);
        }
        for (dst, src) in self.values.iter_mut().zip(&other.values) {
            dst.extend_from_slice(&src[..n]);
        }
    }
}

/// The cache's rows in the model's [`KvType`].
#[derive(Debug, Clone)]
pub(crate) enum Store {
    F32(Rows<f32>),
    F16(Rows<half::f16>),
}

impl Default for Store {
    fn default() -> Store {
        Store::F16(Rows::default())
    }
}

/// One sequence's cached keys and values.
#[derive(Debug, Clone, Default)]
pub struct KvCache {
    pub(crate) store: Store,
    /// Positions filled.
    pub(crate) len: usize,
}

impl KvCache {
    /// An empty cache of `kv` with room for `capacity` positions.
    pub(crate) fn new(c: &Config, kv: KvType, capacity: usize) -> KvCache {
        let room = capacity * c.kv_dim();
        let store = match kv {
            KvType::F32 => Store::F32(Rows::new(c.n_layer, room)),
            KvType::F16 => Store::F16(Rows::new(c.n_layer, room)),
        };
        KvCache { store, len: 0 }
    }

    /// Positions `0..n` of `other` (of the same type), appended to this
    /// (empty) cache.
    pub(crate) fn copy_prefix(&mut self, other: &KvCache, n: usize, kv_dim: usize) {
        match (&mut self.store, &other.store) {
            (Store::F32(a), Store::F32(b)) => a.extend_from(b, n * kv_dim),
            (Store::F16(a), Store::F16(b)) => a.extend_from(b, n * kv_dim),
            _ => unreachable!("a model's caches are all of its KvType"),
        }
        self.len = n;
    }

    /// A copy of positions `0..n`, holding no more room than they take.
    pub(crate) fn prefix(&self, n: usize, kv_dim: usize) -> KvCache {
        let store = match &self.store {
            Store::F32(r) => Store::F32(r.prefix(n * kv_dim)),
            Store::F16(r) => Store::F16(r.prefix(n * kv_dim)),
        };
        KvCache { store, len: n }
    }

    /// Appends one position's key and value at layer `l`.
    fn push(&mut self, l: usize, key: &[f32], value: &[f32]) {
        match &mut self.store {
            Store::F32(r) => r.push(l, key, value),
            Store::F16(r) => r.push(l, key, value),
        }
    }

    /// [`kernels::attend_heads`] over layer `l`'s first `len` positions.
    fn attend(
        &self,
        isa: Isa,
        a: &Attend,
        l: usize,
        q: (&[f32], usize, usize),
        len: usize,
        out: &mut [f32],
    ) {
        match &self.store {
            Store::F32(r) => kernels::attend_heads(isa, a, q, &r.keys[l], &r.values[l], len, out),
            Store::F16(r) => kernels::attend_heads(isa, a, q, &r.keys[l], &r.values[l], len, out),
        }
    }
}

/// The tokens one sequence feeds in one step.
pub(crate) struct Feed<'a> {
    /// Index of the sequence's cache.
    pub cache: usize,
    /// Its next tokens (a prompt chunk, or the last generated token).
    pub tokens: &'a [u32],
    /// Whether the step must return the next token after the last one.
    pub logits: bool,
    /// Whether `tokens` is the last generated token (else prompt tokens):
    /// [`Dots::Q8Generated`] computes the two kinds differently.
    pub generated: bool,
}

impl Model {
    /// Loads a GGUF model of one of the
    /// [`SUPPORTED_ARCHITECTURES`](crate::weights::SUPPORTED_ARCHITECTURES);
    /// `threads` = 0 uses rayon's global
    /// pool (every core).
    pub fn load(path: &Path, threads: usize) -> Result<Model> {
        let err = |m: String| EngineError::Load(format!("{}: {m}", path.display()));
        let (file, ct) = crate::gguf::read_content(path).map_err(|e| err(e.to_string()))?;
        let weights = Weights::from_gguf(&ct, &file).map_err(|e| err(e.to_string()))?;
        Model::new(weights, threads)
    }

    /// A model over `weights`; `threads` as in [`load`](Self::load).
    pub fn new(weights: Weights, threads: usize) -> Result<Model> {
        let c = &weights.config;
        let half = c.head_dim / 2;
        // As candle and llama.cpp: θ_i = base^(-2i/d), angle = position · θ_i,
        // in f32; with Llama 3's frequency divisors, θ_i / f_i.
        let theta: Vec<f32> = (0..half)
            .map(|i| {
                let t = 1f32 / c.rope_base.powf((2 * i) as f32 / c.head_dim as f32);
                match &weights.rope_freqs {
                    Some(f) => t / f[i],
                    None => t,
                }
            })
            .collect();
        let pool = match threads {
            0 => None,
            n => Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .build()
                    .map_err(|e| EngineError::Load(e.to_string()))?,
            ),
        };
        Ok(Model {
            weights,
            isa: Isa::detect(),
            theta,
            pool,
            f32_only: false,
            kv: KvType::default(),
            dots: Dots::default(),
        })
    }

    /// Whether small steps may use the block kernels of Q4_1 and Q8_0 (the
    /// default) rather than decoded tiles. Outputs are the same either way;
    /// only speed differs.
    pub fn set_packed(&mut self, on: bool) {
        self.f32_only = !on;
    }

    /// How the caches of sequences started from now on store keys and
    /// values ([`KvType::F16`] by default).
    pub fn set_kv_type(&mut self, kv: KvType) {
        self.kv = kv;
    }

    /// How sequences' caches store keys and values.
    pub fn kv_type(&self) -> KvType {
        self.kv
    }

    /// How products with quantized weights are computed from now on
    /// ([`Dots::Q8Generated`] by default; [`Dots::F32`] is the exact
    /// reference).
    pub fn set_dots(&mut self, dots: Dots) {
        self.dots = dots;
    }

    /// How products with quantized weights are computed.
    pub fn dots(&self) -> Dots {
        self.dots
    }

    /// An empty cache in the model's [`KvType`] with room for `capacity`
    /// positions.
    pub(crate) fn new_cache(&self, capacity: usize) -> KvCache {
        KvCache::new(&self.weights.config, self.kv, capacity)
    }

    /// Where the weights' bytes live (held, mapped, block-kernel parts).
    pub fn footprint(&self) -> Footprint {
        self.weights.footprint()
    }

    /// The model's shape.
    pub fn config(&self) -> &Config {
        &self.weights.config
    }

    /// The kernel variant in use.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// Runs `f` on the model's thread pool.
    pub(crate) fn install<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        match &self.pool {
            Some(p) => p.install(f),
            None => f(),
        }
    }

    /// `out = x · wᵀ` for `t` rows of `x`, the first `generated` of them
    /// generated tokens' (see [`Dots`]), from the weights' blocks (see
    /// [`crate::matrix`]: the same bits whichever path a part takes).
    fn linear(&self, x: &[f32], (t, generated): (usize, usize), w: &Matrix, out: &mut [f32]) {
        let blocks = !self.f32_only;
        match self.dots {
            Dots::Q8Generated => {
                let (k, n, g) = (w.k(), w.rows(), generated);
                if g > 0 {
                    w.matmul(self.isa, x, g, out, Dots::Q8, blocks);
                }
                if t > g {
                    let (x, out) = (&x[g * k..], &mut out[g * n..]);
                    w.matmul(self.isa, x, t - g, out, Dots::F32, blocks);
                }
            }
            dots => w.matmul(self.isa, x, t, out, dots, blocks),
        }
    }

    /// Rotates each head of `v` by position `pos`: pairs `(2i, 2i+1)`
    /// (llama's interleaved RoPE, as GGUF stores its Q and K) or
    /// `(i, i + head_dim/2)` (NeoX, qwen2).
    /// The cos and sin of position `pos`'s angles (`pos · θ_i`, in f32),
    /// into `out` (`head_dim / 2` of each).
    fn angles(&self, pos: usize, out: &mut [f32]) {
        let (cos, sin) = out.split_at_mut(self.theta.len());
        for ((c, s), t) in cos.iter_mut().zip(sin).zip(&self.theta) {
            let a = pos as f32 * t;
            (*c, *s) = (a.cos(), a.sin());
        }
    }

    /// Rotates each head of `v` by the [`angles`](Self::angles) `cs`.
    fn rope(&self, v: &mut [f32], cs: &[f32]) {
        let half = self.theta.len();
        let (cos, sin) = cs.split_at(half);
        let (stride, offset) = match self.weights.config.rope_style {
            RopeStyle::Interleaved => (2, 1),
            RopeStyle::Neox => (1, half),
        };
        for head in v.chunks_exact_mut(half * 2) {
            for i in 0..half {
                let (ia, ib) = (stride * i, stride * i + offset);
                let (a, b) = (head[ia], head[ib]);
                head[ia] = a * cos[i] - b * sin[i];
                head[ib] = a * sin[i] + b * cos[i];
            }
        }
    }

    /// One step: feeds every `feeds` entry's tokens through the model,
    /// appending their keys and values to `caches`, and returns the greedy
    /// next token of each feed that asks for logits (in feed order).
    pub(crate) fn step(&self, caches: &mut [KvCache], feeds: &[Feed]) -> Vec<u32> {
        let vocab = self.weights.config.vocab;
        let logits = self.forward(caches, feeds);
        logits.chunks_exact(vocab).map(kernels::argmax).collect()
    }

    /// The next-token logits after `tokens`, `[vocab]`, from an empty cache
    /// in one step (for comparing the forward pass with other runtimes).
    pub fn next_logits(&self, tokens: &[u32]) -> Vec<f32> {
        let mut caches = [self.new_cache(tokens.len())];
        let feeds = [Feed {
            cache: 0,
            tokens,
            logits: true,
            generated: false,
        }];
        self.install(|| self.forward(&mut caches, &feeds))
    }

    /// [`Model::step`]'s forward pass: the logits, `[vocab]` per feed that
    /// asks for them, in feed order.
    fn forward(&self, caches: &mut [KvCache], feeds: &[Feed]) -> Vec<f32> {
        // The generated tokens' feeds first, so their rows are one block
        // (each row is computed alone, so the order changes no output).
        let order: Vec<usize> = {
            let (mut g, p): (Vec<usize>, Vec<usize>) =
                (0..feeds.len()).partition(|&i| feeds[i].generated);
            g.extend(p);
            g
        };
        let ordered: Vec<&Feed> = order.iter().map(|&i| &feeds[i]).collect();
        let logits = self.forward_ordered(caches, &ordered);
        // Back in feed order.
        let vocab = self.weights.config.vocab;
        let mut row = vec![usize::MAX; feeds.len()];
        for (r, &i) in order.iter().filter(|&&i| feeds[i].logits).enumerate() {
            row[i] = r;
        }
        (0..feeds.len())
            .filter(|&i| feeds[i].logits)
            .flat_map(|i| &logits[row[i] * vocab..(row[i] + 1) * vocab])
            .copied()
            .collect()
    }

    /// [`Model::forward`] with the generated tokens' feeds first.
    fn forward_ordered(&self, caches: &mut [KvCache], feeds: &[&Feed]) -> Vec<f32> {
        let c = &self.weights.config;
        let (d, kv, ff) = (c.dim, c.kv_dim(), c.ff_dim);
        let isa = self.isa;
        // (cache, position) of every token of the step, in order.
        let mut at: Vec<(usize, usize)> = Vec::new();
        for f in feeds {
            let start = caches[f.cache].len;
            at.extend((0..f.tokens.len()).map(|i| (f.cache, start + i)));
        }
        let t = at.len();
        let g: usize = feeds
            .iter()
            .filter(|f| f.generated)
            .map(|f| f.tokens.len())
            .sum();
        let split = (t, g);
        let mut x = vec![0f32; t * d];
        let tokens = feeds.iter().flat_map(|f| f.tokens);
        for (row, &tok) in x.chunks_exact_mut(d).zip(tokens) {
            let tok = (tok as usize).min(c.vocab - 1);
            self.weights.embed.decode_row(tok, row);
        }
        let attend = Attend {
            n_head: c.n_head,
            n_kv_head: c.n_kv_head,
            head_dim: c.head_dim,
            kv_dim: kv,
            scale: 1.0 / (c.head_dim as f32).sqrt(),
        };
        let qkv_w = d + 2 * kv;
        // Every token's RoPE angles, once for all layers.
        let half = self.theta.len();
        let mut angles = vec![0f32; t * 2 * half];
        for (row, &(_, pos)) in angles.chunks_exact_mut(2 * half).zip(&at) {
            self.angles(pos, row);
        }
        let mut h = vec![0f32; t * d];
        let mut qkv = vec![0f32; t * qkv_w];
        let mut att = vec![0f32; t * d];
        let mut proj = vec![0f32; t * d];
        let mut gu = vec![0f32; t * 2 * ff];
        let mut act = vec![0f32; t * ff];
        for (l, layer) in self.weights.layers.iter().enumerate() {
            norm_rows(&x, &layer.attn_norm, c.eps, &mut h, d);
            self.linear(&h, split, &layer.qkv, &mut qkv);
            qkv.par_chunks_mut(qkv_w)
                .zip(angles.par_chunks(2 * half))
                .for_each(|(row, cs)| {
                    if let Some(bias) = &layer.qkv_bias {
                        add(row, bias);
                    }
                    let (q, rest) = row.split_at_mut(d);
                    self.rope(q, cs);
                    self.rope(&mut rest[..kv], cs);
                });
            for (row, &(ci, _)) in qkv.chunks_exact(qkv_w).zip(&at) {
                caches[ci].push(l, &row[d..d + kv], &row[d + kv..]);
            }
            // One task per token and head, so a single sequence's step uses
            // every thread too.
            let shared: &[KvCache] = caches;
            let (hd, nh) = (c.head_dim, c.n_head);
            att.par_chunks_mut(hd).enumerate().for_each(|(i, out)| {
                let (r, h) = (i / nh, i % nh);
                let (ci, pos) = at[r];
                let q = &qkv[r * qkv_w..r * qkv_w + d];
                shared[ci].attend(isa, &attend, l, (q, h, h + 1), pos + 1, out);
            });
            self.linear(&att, split, &layer.out, &mut proj);
            add(&mut x, &proj);
            norm_rows(&x, &layer.ffn_norm, c.eps, &mut h, d);
            self.linear(&h, split, &layer.gate_up, &mut gu);
            act.par_chunks_mut(ff)
                .zip(gu.par_chunks(2 * ff))
                .for_each(|(a, row)| {
                    let (g, u) = row.split_at(ff);
                    for ((a, &g), &u) in a.iter_mut().zip(g).zip(u) {
                        *a = g / (1.0 + (-g).exp()) * u;
                    }
                });
            self.linear(&act, split, &layer.down, &mut proj);
            add(&mut x, &proj);
        }
        for f in feeds {
            caches[f.cache].len += f.tokens.len();
        }
        // The last row of every feed that wants logits.
        let mut last = Vec::new();
        let mut end = 0;
        for f in feeds {
            end += f.tokens.len();
            if f.logits {
                last.push(end - 1);
            }
        }
        if last.is_empty() {
            return Vec::new();
        }
        let mut rows = vec![0f32; last.len() * d];
        for (dst, &r) in rows.chunks_exact_mut(d).zip(&last) {
            kernels::rms_norm(&x[r * d..(r + 1) * d], &self.weights.norm, c.eps, dst);
        }
        let head = self.weights.output.as_ref().unwrap_or(&self.weights.embed);
        let mut logits = vec![0f32; last.len() * c.vocab];
        let generated = feeds.iter().filter(|f| f.generated && f.logits).count();
        self.linear(&rows, (last.len(), generated), head, &mut logits);
        logits
    }
}

fn norm_rows(x: &[f32], w: &[f32], eps: f32, out: &mut [f32], d: usize) {
    out.par_chunks_mut(d)
        .zip(x.par_chunks(d))
        .for_each(|(o, r)| kernels::rms_norm(r, w, eps, o));
}

fn add(x: &mut [f32], y: &[f32]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a += b;
    }
}
