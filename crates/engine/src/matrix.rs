//! A weight matrix held as the GGUF file stores it, never as an f32 copy:
//! resident memory stays near the file's size whatever the tensor type.
//!
//! A matrix is one or more stacked tensors (Q, K and V; gate and up), each
//! a [`Part`] of its own type (a Q4_K_M file mixes Q4_K and Q6_K in one
//! stack). A product `x · wᵀ` takes one of two paths per part, both giving
//! the bits [`kernels::matmul`] gives on the decoded f32 weights:
//!
//! * **Block kernels** (every quantized type; steps of at most
//!   [`packed::MAX_ROWS`] tokens, bound by reading the weights): the
//!   blocks are decoded in registers inside the dot product ([`packed`]).
//! * **Decoded tiles** (every type, any step): each parallel task decodes
//!   its [`TILE_ROWS`] weight rows into a per-thread f32 buffer with the
//!   reference's arithmetic ([`Dtype::decode`]) and runs the f32 kernel on
//!   them, so a prompt chunk reads each block once and no f32 copy of the
//!   model is ever held.
//!
//! F32, F16 and BF16 tensors stay in the memory-mapped file; the quantized
//! types are regrouped once at load into the block kernels' layout, about
//! the file's size ([`packed`]).

use std::cell::RefCell;
use std::sync::Arc;

use crate::kernels::{self, Isa};
use crate::packed::{self, Packed};
use crate::quant::Dtype;

/// Weight rows each parallel task decodes and multiplies at once.
pub const TILE_ROWS: usize = 16;

/// How products with quantized weights are computed. Each is
/// deterministic: a token's products are the same bits whatever else is
/// in the batch, the threads, the prefix reuse or the ISA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dots {
    /// f32 activations times the exactly decoded weights: the reference
    /// the tests compare with llama.cpp on dequantized twins.
    F32,
    /// Activations quantized to 8 bits in 32-value blocks and multiplied
    /// with the weights' blocks as integers, as llama.cpp does
    /// ([`packed::q8`]): fewer operations a block, so a decode step runs
    /// at the speed memory delivers the blocks.
    Q8,
    /// The default: generated tokens take [`Dots::Q8`] (their steps are
    /// bound by reading the weights) and prompt tokens [`Dots::F32`]
    /// (chunks of many tokens are bound by arithmetic, where the f32
    /// tiles are faster, and exact). Which a token takes depends only on
    /// whether it was generated, so batching still changes no output.
    /// The model decides per row; a [`Matrix`] given it computes in f32.
    #[default]
    Q8Generated,
}

/// Bytes of a tensor: a range of the memory-mapped file, or owned.
#[derive(Debug, Clone)]
pub enum Bytes {
    /// `len` bytes at `start` of the mapped file.
    Mapped {
        /// The file's mapping, shared by every tensor.
        map: Arc<memmap2::Mmap>,
        /// First byte.
        start: usize,
        /// Length.
        len: usize,
    },
    /// Bytes in memory (tests, tensors built in code).
    Owned(Vec<u8>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped { map, start, len } => &map[*start..*start + *len],
            Bytes::Owned(v) => v,
        }
    }
}

/// How a part's blocks are held.
#[derive(Debug, Clone)]
enum Store {
    /// Regrouped for the block kernels ([`Packed::dtype`] is the type).
    Blocks(Packed),
    /// As in the file.
    Raw {
        /// The tensor type.
        dtype: Dtype,
        /// The blocks, row after row.
        bytes: Bytes,
    },
}

/// One stacked tensor: `rows` rows of the matrix's `k` weights.
#[derive(Debug, Clone)]
pub struct Part {
    rows: usize,
    store: Store,
}

impl Part {
    /// `bytes` (whole rows of `k` weights of `dtype`) as a part; `None`
    /// when they are not whole rows. The types the block kernels read
    /// ([`Packed::holds`]) are regrouped for them (`bytes` can then be
    /// dropped).
    pub fn new(dtype: Dtype, k: usize, bytes: Bytes) -> Option<Part> {
        let per_row = dtype.bytes_for(k)?;
        if k == 0 || !bytes.len().is_multiple_of(per_row) {
            return None;
        }
        let rows = bytes.len() / per_row;
        let store = match Packed::holds(dtype) {
            true => Store::Blocks(Packed::from_blocks(dtype, k, &bytes)?),
            false => Store::Raw { dtype, bytes },
        };
        Some(Part { rows, store })
    }

    /// A part of blocks already regrouped for the block kernels
    /// ([`Packed::from_reader`]).
    pub fn packed(p: Packed) -> Part {
        Part {
            rows: p.rows,
            store: Store::Blocks(p),
        }
    }

    /// The part's tensor type.
    pub fn dtype(&self) -> Dtype {
        match &self.store {
            Store::Blocks(p) => p.dtype,
            Store::Raw { dtype, .. } => *dtype,
        }
    }

    /// Row `r` decoded into `out` (`k` values), on `isa`.
    fn decode_row(&self, isa: Isa, k: usize, r: usize, out: &mut [f32]) {
        match &self.store {
            Store::Blocks(p) => p.decode_row(r, out),
            Store::Raw { dtype, bytes } => {
                let per_row = dtype.bytes_for(k).expect("checked in Part::new");
                dtype.decode_on(isa, &bytes[r * per_row..(r + 1) * per_row], out);
            }
        }
    }

    /// Bytes held in memory (split blocks) and mapped from the file.
    fn bytes(&self) -> (usize, usize) {
        match &self.store {
            Store::Blocks(p) => (p.bytes(), 0),
            Store::Raw {
                bytes: b @ Bytes::Mapped { .. },
                ..
            } => (0, b.len()),
            Store::Raw { bytes, .. } => (bytes.len(), 0),
        }
    }
}

/// A `rows × k` weight matrix of stacked [`Part`]s.
#[derive(Debug, Clone)]
pub struct Matrix {
    k: usize,
    rows: usize,
    parts: Vec<Part>,
}

/// Where a matrix's bytes live.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Bytes held in process memory (the block kernels' split blocks).
    pub owned: usize,
    /// Bytes read from the memory-mapped file (the page cache's, shared).
    pub mapped: usize,
    /// Parts read by the block kernels in small steps.
    pub block_parts: usize,
}

impl std::ops::AddAssign for Footprint {
    fn add_assign(&mut self, o: Footprint) {
        self.owned += o.owned;
        self.mapped += o.mapped;
        self.block_parts += o.block_parts;
    }
}

thread_local! {
    /// Each thread's decoded tile ([`TILE_ROWS`] × k f32).
    static TILE: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

impl Matrix {
    /// `parts` stacked, each `k` wide.
    pub fn new(k: usize, parts: Vec<Part>) -> Matrix {
        Matrix {
            k,
            rows: parts.iter().map(|p| p.rows).sum(),
            parts,
        }
    }

    /// Row length.
    pub fn k(&self) -> usize {
        self.k
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The parts' types, in stacking order.
    pub fn dtypes(&self) -> Vec<Dtype> {
        self.parts.iter().map(Part::dtype).collect()
    }

    /// Row `r` decoded into `out` (`k` values), with the reference's
    /// arithmetic.
    pub fn decode_row(&self, mut r: usize, out: &mut [f32]) {
        for p in &self.parts {
            if r < p.rows {
                return p.decode_row(Isa::detect(), self.k, r, &mut out[..self.k]);
            }
            r -= p.rows;
        }
        panic!("row beyond the matrix's {} rows", self.rows);
    }

    /// Every weight decoded, row-major (tests and comparisons).
    pub fn to_f32(&self) -> Vec<f32> {
        let mut all = vec![0f32; self.rows * self.k];
        for (r, row) in all.chunks_exact_mut(self.k).enumerate() {
            self.decode_row(r, row);
        }
        all
    }

    /// Where the matrix's bytes live.
    pub fn footprint(&self) -> Footprint {
        let mut f = Footprint::default();
        for p in &self.parts {
            let (owned, mapped) = p.bytes();
            f += Footprint {
                owned,
                mapped,
                block_parts: matches!(p.store, Store::Blocks(..)) as usize,
            };
        }
        f
    }

    /// `out[t × rows] = x[t × k] · wᵀ`. With [`Dots::F32`]: bit-identical
    /// to [`kernels::matmul`] over the decoded weights, whichever path each
    /// part takes (module docs); `blocks = false` never uses the block
    /// kernels (for tests comparing the paths). With [`Dots::Q8`] the
    /// quantized parts take [`packed::q8`]'s integer dots at every `t`
    /// (`blocks` is then moot) and F32/F16/BF16 parts the f32 paths.
    /// [`Dots::Q8Generated`] computes as [`Dots::F32`] here (the model
    /// splits its rows between the two).
    pub fn matmul(&self, isa: Isa, x: &[f32], t: usize, out: &mut [f32], dots: Dots, blocks: bool) {
        let (k, n) = (self.k, self.rows);
        assert!(x.len() >= t * k && out.len() >= t * n);
        // Quantized once for every part that takes integer dots.
        let mut q8 = None;
        let mut col = 0;
        for part in &self.parts {
            match &part.store {
                Store::Blocks(p) if dots == Dots::Q8 && t > 0 => {
                    let a = q8.get_or_insert_with(|| packed::q8::Q8Rows::quantize(x, t, k));
                    packed::q8::matmul(packed::q8::Variant::for_isa(isa), a, p, out, col, n)
                }
                Store::Blocks(p) if blocks && (1..=packed::MAX_ROWS).contains(&t) => {
                    packed::matmul(isa, x, t, p, out, col, n)
                }
                _ => kernels::for_row_blocks(part.rows, TILE_ROWS, out, |(r0, r1), ptr| {
                    TILE.with_borrow_mut(|tile| {
                        tile.resize(TILE_ROWS * k, 0.0);
                        for r in r0..r1 {
                            part.decode_row(isa, k, r, &mut tile[(r - r0) * k..(r - r0 + 1) * k]);
                        }
                        // SAFETY: the ISA was detected on this CPU; `x` holds
                        // `t × k` values, the tile rows `0..r1 - r0`, and the
                        // output covers columns `col + r0..col + r1` of every
                        // row (checked above), which only this task writes.
                        unsafe {
                            kernels::matmul_range(
                                isa,
                                x,
                                t,
                                k,
                                tile,
                                (0, r1 - r0),
                                ptr.add(col + r0),
                                n,
                            )
                        }
                    })
                }),
            }
            col += part.rows;
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Bytes of every type for `rows × k` weights, from a fixed stream,
    /// with each block's f16 fields set to small finite values (also the
    /// block kernels' tests' input).
    pub(crate) fn blocks(dtype: Dtype, rows: usize, k: usize, seed: u64) -> Vec<u8> {
        let mut s = seed;
        let mut next = move || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 33) as u8
        };
        let n = dtype.bytes_for(rows * k).unwrap();
        let mut raw: Vec<u8> = (0..n).map(|_| next()).collect();
        let (_, bb) = dtype.block();
        let small = |i: u8| half::f16::from_f32((i as f32 - 128.0) / 4096.0).to_le_bytes();
        for b in raw.chunks_exact_mut(bb) {
            let f16_at: &[usize] = match dtype {
                Dtype::F32 => {
                    b.copy_from_slice(&((b[0] as f32 - 128.0) / 64.0).to_le_bytes());
                    &[]
                }
                Dtype::F16 => &[0],
                Dtype::BF16 => {
                    b[1] = 0x3C | (b[1] & 0x80);
                    &[]
                }
                Dtype::Q4_0 | Dtype::Q5_0 | Dtype::Q8_0 => &[0],
                Dtype::Q4_1 | Dtype::Q5_1 | Dtype::Q4_K | Dtype::Q5_K => &[0, 2],
                Dtype::Q6_K => &[208],
            };
            for &at in f16_at {
                let v = small(b[at]);
                b[at..at + 2].copy_from_slice(&v);
            }
        }
        raw
    }

    #[test]
    fn every_path_gives_the_f32_kernels_bits_on_the_decoded_weights() {
        let k = 256;
        let mut g = 1u64;
        let x: Vec<f32> = (0..20 * k)
            .map(|_| {
                g = g.wrapping_mul(2862933555777941757).wrapping_add(3037000493);
                ((g >> 40) as f32 / 16_777_216.0 - 0.5) * 2.0
            })
            .collect();
        // A stack mixing types, as a K-quant mix does (row counts not
        // multiples of the tile).
        let parts: Vec<Part> = crate::quant::SUPPORTED_TYPES
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                let raw = blocks(t, 5 + i, k, i as u64 + 3);
                Part::new(t, k, Bytes::Owned(raw)).unwrap()
            })
            .collect();
        let m = Matrix::new(k, parts);
        let w = m.to_f32();
        assert!(w.iter().all(|v| v.is_finite()));
        for isa in Isa::available() {
            for t in [1, 3, 8, 9, 20] {
                let mut want = vec![0f32; t * m.rows()];
                kernels::matmul(isa, &x, t, k, &w, m.rows(), &mut want);
                for blocks in [true, false] {
                    let mut got = vec![0f32; t * m.rows()];
                    m.matmul(isa, &x, t, &mut got, Dots::F32, blocks);
                    let same = want
                        .iter()
                        .zip(&got)
                        .all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "{isa:?} t={t} blocks={blocks}");
                }
            }
        }
    }

    /// With integer dots, a stack of every type gives each row of `x` the
    /// same bits whether it is multiplied alone or with 19 others, and the
    /// unquantized parts keep the f32 kernels' bits.
    #[test]
    fn integer_dots_are_the_same_bits_whatever_the_batch() {
        let k = 256;
        let x: Vec<f32> = (0..20 * k)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0)
            .collect();
        let parts: Vec<Part> = crate::quant::SUPPORTED_TYPES
            .iter()
            .enumerate()
            .map(|(i, &t)| Part::new(t, k, Bytes::Owned(blocks(t, 3 + i, k, i as u64))).unwrap())
            .collect();
        let m = Matrix::new(k, parts);
        let n = m.rows();
        let isa = Isa::detect();
        let mut all = vec![0f32; 20 * n];
        m.matmul(isa, &x, 20, &mut all, Dots::Q8, true);
        let (mut f32s, w) = (vec![0f32; 20 * n], m.to_f32());
        kernels::matmul(isa, &x, 20, k, &w, n, &mut f32s);
        let alone: Vec<Vec<f32>> = (0..20)
            .map(|r| {
                let mut one = vec![0f32; n];
                m.matmul(isa, &x[r * k..(r + 1) * k], 1, &mut one, Dots::Q8, true);
                one
            })
            .collect();
        let mut col = 0;
        for p in &m.parts {
            let quantized = Packed::holds(p.dtype());
            for (r, one) in alone.iter().enumerate() {
                for c in col..col + p.rows {
                    assert_eq!(
                        one[c].to_bits(),
                        all[r * n + c].to_bits(),
                        "{:?}",
                        p.dtype()
                    );
                    if !quantized {
                        assert_eq!(one[c].to_bits(), f32s[r * n + c].to_bits());
                    }
                }
            }
            col += p.rows;
        }
    }

    #[test]
    fn rows_that_are_not_whole_blocks_are_refused() {
        assert!(Part::new(Dtype::Q4_K, 64, Bytes::Owned(vec![0; 144])).is_none());
        assert!(Part::new(Dtype::Q8_0, 32, Bytes::Owned(vec![0; 35])).is_none());
        assert_eq!(
            Part::new(Dtype::Q8_0, 32, Bytes::Owned(vec![0; 68])).map(|p| p.rows),
            Some(2)
        );
    }
}
