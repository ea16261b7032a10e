//! Weight matrices kept in 32-weight blocks for the steps that are bound
//! by memory bandwidth: decoding a handful of tokens reads every weight
//! once per step, so a step is as fast as the bytes it reads are few.
//!
//! Every quantized GGUF type is held in about its file size: the values
//! as 16 bytes of nibbles a block (8-bit types: 32 bytes), any fifth or
//! sixth bits beside them, and the scales as the file stores them (f16, and
//! the K types' 6- or 8-bit sub-block scales). The layout only regroups the
//! file's bits so each 32-weight block reads from fixed offsets:
//!
//! | GGUF type | weight (the reference's operations) | bytes / 32 held (file) |
//! |---|---|---|
//! | Q8_0 | `q · d` | 34 (34) |
//! | Q4_0 | `d · (q − 8)` | 18 (18) |
//! | Q4_1 | `d · q + m` | 20 (20) |
//! | Q5_0 | `d · (q − 16)`, q of 5 bits | 22 (22) |
//! | Q5_1 | `d · q + m`, q of 5 bits | 24 (24) |
//! | Q4_K | `(d·sc) · q − dmin·mn` as `d′ · q + m′`, `m′ = −(dmin·mn)` | 18.5 (18) |
//! | Q5_K | as Q4_K, q of 5 bits | 22.5 (22) |
//! | Q6_K | `(d·sc) · (q − 32)`, a scale per 16 weights | 26.25 (26.25) |
//!
//! (`a − b` and `a + (−b)` are the same IEEE operation.) A block's f32
//! scales are computed when a row is read, [`SEG`] blocks at a time in
//! SIMD registers, as the reference computes them (`d·sc` and `dmin·mn` are
//! exact in f32: 11 by at most 8 significant bits).
//!
//! **Same numbers.** Every weight equals its decoded f32 value bit for
//! bit (tested against [`Dtype::decode`](crate::quant::Dtype::decode)). The products are then
//! accumulated in the same 16 lanes, in the same order and with the same
//! final reduction as [`kernels::matmul`](crate::kernels::matmul): a packed
//! step gives bit-identical outputs to an f32 step, whichever ISA runs it.

use half::f16;

use crate::kernels::{Isa, LANES};
use crate::quant::Dtype;

pub mod q8;

/// Weights per block.
const BLOCK: usize = 32;

/// Blocks whose scales are computed at once: one 16-lane register (two K
/// super-blocks; a row of a K type is whole super-blocks).
const SEG: usize = 16;

/// Entries past the end of each scale array, so the last segment of the
/// last row reads a whole register.
const PAD: usize = 2 * SEG;

/// Steps of at most this many tokens use packed weights (more rows make
/// the step compute-bound, where the f32 kernel's tiles are faster).
pub const MAX_ROWS: usize = 8;

/// Weight rows per parallel task.
const ROWS_PER_TASK: usize = 64;

/// A `rows × k` matrix of one quantized GGUF type in 32-weight blocks,
/// row-major (each row `k / 32` blocks).
#[derive(Debug, Clone)]
pub struct Packed {
    /// The GGUF type the blocks came from.
    pub dtype: Dtype,
    /// Row length (a multiple of 32; of 256 for the K types).
    pub k: usize,
    /// Number of rows.
    pub rows: usize,
    /// The file's f16 scale: one a block, or (K types) one a 256-weight
    /// super-block.
    d: Vec<f16>,
    /// The file's f16 minimum (Q4_1, Q5_1: one a block) or `dmin` (Q4_K,
    /// Q5_K: one a super-block); empty otherwise.
    m: Vec<f16>,
    /// Q4_K, Q5_K: each block's 6-bit scale; Q6_K: each block's two `i8`
    /// scales (weights 0..16, 16..32); empty otherwise.
    sc: Vec<u8>,
    /// Q4_K, Q5_K: each block's 6-bit minimum; empty otherwise.
    mn: Vec<u8>,
    /// Q5 types: each block's fifth bits, bit `j` for weight `j`. Q6_K:
    /// two words a block, bit `j` of word `h` bit `4 + h` of weight `j`
    /// (bit planes: the integer kernels turn a plane into a byte mask in
    /// one step). Empty otherwise.
    qh: Vec<u32>,
    /// 16 bytes a block (low nibbles = weights 0..16, high = 16..32); Q8_0:
    /// 32 signed bytes a block.
    qs: Vec<u8>,
}

fn le16(lo: u8, hi: u8) -> f16 {
    f16::from_bits(u16::from_le_bytes([lo, hi]))
}

impl Packed {
    /// Whether the block kernels hold `dtype` (every quantized type the
    /// engine reads; f32, f16 and bf16 are read as mapped).
    pub fn holds(dtype: Dtype) -> bool {
        !matches!(dtype, Dtype::F32 | Dtype::F16 | Dtype::BF16)
    }

    /// Regroups raw GGUF blocks of `dtype` (whole rows of `k`) into the
    /// layout the kernels read (module docs); `None` when the type is not
    /// held here, `k` is not whole blocks or `raw` not whole rows.
    pub fn from_blocks(dtype: Dtype, k: usize, raw: &[u8]) -> Option<Packed> {
        let mut p = Packed::empty(dtype, k, raw.len())?;
        p.push_rows(raw);
        Some(p.padded())
    }

    /// As [`from_blocks`](Self::from_blocks), reading the `len` bytes from
    /// `src` a few rows at a time, so the raw tensor is never held whole
    /// beside its regrouped form. `Ok(None)`: as `from_blocks`.
    pub fn from_reader(
        dtype: Dtype,
        k: usize,
        len: usize,
        src: &mut impl std::io::Read,
    ) -> std::io::Result<Option<Packed>> {
        let Some(mut p) = Packed::empty(dtype, k, len) else {
            return Ok(None);
        };
        let per_row = dtype.bytes_for(k).expect("checked by empty");
        let mut buf = vec![0u8; per_row * (1usize << 20).div_ceil(per_row)];
        let mut left = len;
        while left > 0 {
            let n = left.min(buf.len());
            src.read_exact(&mut buf[..n])?;
            p.push_rows(&buf[..n]);
            left -= n;
        }
        Ok(Some(p.padded()))
    }

    /// Room for `len` bytes of `dtype` blocks, rows of `k`; `None` when the
    /// type is not held here or `len` is not whole rows.
    fn empty(dtype: Dtype, k: usize, len: usize) -> Option<Packed> {
        let per_row = dtype.bytes_for(k)?;
        if !Packed::holds(dtype)
            || !k.is_multiple_of(BLOCK)
            || k == 0
            || !len.is_multiple_of(per_row)
        {
            return None;
        }
        let (weights, size) = dtype.block();
        let file_blocks = len / size;
        let blocks = file_blocks * (weights / BLOCK);
        use Dtype::*;
        // The scale arrays' room includes [`padded`](Packed::padded)'s
        // entries: growing a full vector by them would double its capacity.
        let n = |on: bool, per: usize| if on { per + PAD } else { 0 };
        let k_type = matches!(dtype, Q4_K | Q5_K | Q6_K);
        Some(Packed {
            dtype,
            k,
            rows: len / per_row,
            d: Vec::with_capacity(file_blocks + PAD),
            m: Vec::with_capacity(n(matches!(dtype, Q4_1 | Q5_1 | Q4_K | Q5_K), file_blocks)),
            sc: Vec::with_capacity(n(k_type, blocks * if dtype == Q6_K { 2 } else { 1 })),
            mn: Vec::with_capacity(n(matches!(dtype, Q4_K | Q5_K), blocks)),
            qh: Vec::with_capacity(match dtype {
                Q5_0 | Q5_1 | Q5_K => blocks,
                Q6_K => 2 * blocks,
                _ => 0,
            }),
            qs: Vec::with_capacity(blocks * if dtype == Q8_0 { 32 } else { 16 }),
        })
    }

    /// The scale arrays that are used, [`PAD`] entries longer.
    fn padded(mut self) -> Packed {
        for v in [&mut self.d, &mut self.m] {
            if !v.is_empty() {
                v.extend([f16::ZERO; PAD]);
            }
        }
        for v in [&mut self.sc, &mut self.mn] {
            if !v.is_empty() {
                v.extend([0; PAD]);
            }
        }
        self
    }

    /// Appends whole rows of raw blocks of `self`'s type.
    fn push_rows(&mut self, raw: &[u8]) {
        let (_, size) = self.dtype.block();
        let p = self;
        let word = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4"));
        for b in raw.chunks_exact(size) {
            match p.dtype {
                Dtype::Q8_0 => {
                    p.d.push(le16(b[0], b[1]));
                    p.qs.extend_from_slice(&b[2..34]);
                }
                Dtype::Q4_0 => {
                    p.d.push(le16(b[0], b[1]));
                    p.qs.extend_from_slice(&b[2..18]);
                }
                Dtype::Q4_1 => {
                    p.d.push(le16(b[0], b[1]));
                    p.m.push(le16(b[2], b[3]));
                    p.qs.extend_from_slice(&b[4..20]);
                }
                Dtype::Q5_0 => {
                    p.d.push(le16(b[0], b[1]));
                    p.qh.push(word(b, 2));
                    p.qs.extend_from_slice(&b[6..22]);
                }
                Dtype::Q5_1 => {
                    p.d.push(le16(b[0], b[1]));
                    p.m.push(le16(b[2], b[3]));
                    p.qh.push(word(b, 4));
                    p.qs.extend_from_slice(&b[8..24]);
                }
                Dtype::Q4_K | Dtype::Q5_K => {
                    // Eight sub-blocks of 32: sub-block 2i is the low nibbles
                    // of bytes 32i..32i+32 of the values, 2i+1 their high
                    // nibbles; Q5_K's fifth bit of weight l of sub-block s
                    // is bit s of qh[l].
                    p.d.push(le16(b[0], b[1]));
                    p.m.push(le16(b[2], b[3]));
                    let scales: &[u8; 12] = b[4..16].try_into().expect("12 bytes");
                    let (sc, mn) = crate::quant::scales_mins(scales);
                    p.sc.extend_from_slice(&sc);
                    p.mn.extend_from_slice(&mn);
                    let (qh, vals) = match p.dtype {
                        Dtype::Q5_K => (Some(&b[16..48]), &b[48..176]),
                        _ => (None, &b[16..144]),
                    };
                    for i in 0..8 {
                        let src = &vals[32 * (i / 2)..32 * (i / 2) + 32];
                        let nib = |l: usize| {
                            if i % 2 == 0 {
                                src[l] & 0x0F
                            } else {
                                src[l] >> 4
                            }
                        };
                        for j in 0..16 {
                            p.qs.push(nib(j) | nib(j + 16) << 4);
                        }
                        if let Some(qh) = qh {
                            p.qh.push((0..32).map(|l| ((qh[l] as u32 >> i) & 1) << l).sum());
                        }
                    }
                }
                Dtype::Q6_K => {
                    // The reference's q − 32 per weight, regrouped: low four
                    // bits as nibbles, bits 4 and 5 as two bit planes a block.
                    let mut w = [0f32; 16];
                    let mut q = [0i8; 256];
                    let block: &[u8; 210] = b.try_into().expect("210 bytes");
                    crate::quant::q6_k_parts(block, &mut w, &mut q);
                    p.d.push(le16(b[208], b[209]));
                    p.sc.extend_from_slice(&b[192..208]);
                    let u = |i: usize| (q[i] as i32 + 32) as u32;
                    for i in 0..8 {
                        let at = 32 * i;
                        for j in 0..16 {
                            p.qs.push(((u(at + j) & 0x0F) | (u(at + j + 16) & 0x0F) << 4) as u8);
                        }
                        for h in 0..2 {
                            let plane = (0..32).map(|j| ((u(at + j) >> (4 + h)) & 1) << j);
                            p.qh.push(plane.sum());
                        }
                    }
                }
                _ => unreachable!("a type not held here"),
            }
        }
    }

    /// The f32 scales of blocks `g0..g0 + n` (`n <= SEG`; `g0` and `n`
    /// whole super-blocks for the K types, which every row is) into `ds`
    /// (Q6_K: two a block) and their minimums into `ms`, as the reference
    /// computes them.
    /// (The SIMD kernels compute the same values in registers.)
    #[inline]
    fn scales(&self, g0: usize, n: usize, ds: &mut [f32; 2 * SEG], ms: &mut [f32; SEG]) {
        let wide = |h: f16| {
            let [lo, hi] = h.to_bits().to_le_bytes();
            crate::quant::f16(lo, hi)
        };
        match self.dtype {
            Dtype::Q8_0 | Dtype::Q4_0 | Dtype::Q5_0 => {
                for (o, &h) in ds.iter_mut().zip(&self.d[g0..]).take(n) {
                    *o = wide(h);
                }
            }
            Dtype::Q4_1 | Dtype::Q5_1 => {
                for ((o, p), (&h, &l)) in ds
                    .iter_mut()
                    .zip(ms.iter_mut())
                    .zip(self.d[g0..].iter().zip(&self.m[g0..]))
                    .take(n)
                {
                    (*o, *p) = (wide(h), wide(l));
                }
            }
            Dtype::Q4_K | Dtype::Q5_K => {
                let blocks = ds.iter_mut().zip(ms.iter_mut()).enumerate().take(n);
                for (b, (o, p)) in blocks {
                    let s = (g0 + b) / 8;
                    *o = wide(self.d[s]) * self.sc[g0 + b] as f32;
                    *p = -(wide(self.m[s]) * self.mn[g0 + b] as f32);
                }
            }
            Dtype::Q6_K => {
                let sc = &self.sc[2 * g0..];
                for (i, (o, &c)) in ds.iter_mut().zip(sc).enumerate().take(2 * n) {
                    *o = wide(self.d[(2 * g0 + i) / 16]) * (c as i8) as f32;
                }
            }
            _ => unreachable!("a type not held here"),
        }
    }

    /// Row `r` as f32, exactly as the kernels see it.
    pub fn decode_row(&self, r: usize, out: &mut [f32]) {
        let nb = self.k / BLOCK;
        let (mut ds, mut ms) = ([0f32; 2 * SEG], [0f32; SEG]);
        for s in (0..nb).step_by(SEG) {
            let n = (nb - s).min(SEG);
            self.scales(r * nb + s, n, &mut ds, &mut ms);
            for i in 0..n {
                let b = s + i;
                decode_block(
                    self,
                    r * nb + b,
                    &ds,
                    &ms,
                    i,
                    &mut out[b * BLOCK..(b + 1) * BLOCK],
                );
            }
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.qs.len()
            + self.sc.len()
            + self.mn.len()
            + 2 * (self.d.len() + self.m.len())
            + 4 * self.qh.len()
    }
}

/// Weights `j` and `j + 16` of a block from `f(j)`, for `j < 16`.
#[inline(always)]
fn each16(out: &mut [f32; BLOCK], f: impl Fn(usize) -> (f32, f32)) {
    for j in 0..16 {
        (out[j], out[j + 16]) = f(j);
    }
}

/// Block `g` as 32 f32 weights, its scales at `i` of the segment's `ds`,
/// `ms` (the reference's dequantisation, operation for operation; one loop
/// per type, so each vectorises).
#[inline(always)]
fn decode_block(
    p: &Packed,
    g: usize,
    ds: &[f32; 2 * SEG],
    ms: &[f32; SEG],
    i: usize,
    out: &mut [f32],
) {
    let out: &mut [f32; BLOCK] = (&mut out[..BLOCK]).try_into().expect("a block");
    let (d, m) = (ds[i], ms[i]);
    if p.dtype == Dtype::Q8_0 {
        let qs = &p.qs[g * BLOCK..(g + 1) * BLOCK];
        for j in 0..BLOCK {
            out[j] = d * (qs[j] as i8) as f32;
        }
        return;
    }
    let qs: &[u8; 16] = p.qs[g * 16..g * 16 + 16].try_into().expect("16 bytes");
    let fifth = |h: u32, j: usize| (((h >> j) & 1) << 4) as i32;
    let nib = |j: usize| ((qs[j] & 0x0F) as i32, (qs[j] >> 4) as i32);
    match p.dtype {
        Dtype::Q4_0 => each16(out, |j| {
            let (lo, hi) = nib(j);
            (d * (lo - 8) as f32, d * (hi - 8) as f32)
        }),
        Dtype::Q4_1 | Dtype::Q4_K => each16(out, |j| {
            let (lo, hi) = nib(j);
            (d * lo as f32 + m, d * hi as f32 + m)
        }),
        Dtype::Q5_0 => {
            let h = p.qh[g];
            each16(out, |j| {
                let (lo, hi) = nib(j);
                (
                    d * ((lo | fifth(h, j)) - 16) as f32,
                    d * ((hi | fifth(h, j + 16)) - 16) as f32,
                )
            })
        }
        Dtype::Q5_1 | Dtype::Q5_K => {
            let h = p.qh[g];
            each16(out, |j| {
                let (lo, hi) = nib(j);
                (
                    d * (lo | fifth(h, j)) as f32 + m,
                    d * (hi | fifth(h, j + 16)) as f32 + m,
                )
            })
        }
        Dtype::Q6_K => {
            let (b4, b5) = (p.qh[2 * g], p.qh[2 * g + 1]);
            let (d0, d1) = (ds[2 * i], ds[2 * i + 1]);
            each16(out, |j| {
                let (lo, hi) = nib(j);
                let six = |v: i32, j: usize| {
                    (v | (((b4 >> j) & 1) << 4 | ((b5 >> j) & 1) << 5) as i32) - 32
                };
                (d0 * six(lo, j) as f32, d1 * six(hi, j + 16) as f32)
            })
        }
        _ => unreachable!("a type not held here"),
    }
}

/// Rows `n0..n1` of `out = x · wᵀ` for `TT` rows of `x`, portable.
///
/// # Safety
/// `x` covers `TT × k` values and `out` the outputs named.
unsafe fn rows_portable<const TT: usize>(
    x: &[f32],
    p: &Packed,
    (n0, n1): (usize, usize),
    out: *mut f32,
    ldo: usize,
) {
    let (k, nb) = (p.k, p.k / BLOCK);
    let mut w = [0f32; BLOCK];
    let (mut ds, mut ms) = ([0f32; 2 * SEG], [0f32; SEG]);
    for n in n0..n1 {
        let mut acc = [[0f32; LANES]; TT];
        for s in (0..nb).step_by(SEG) {
            let cnt = (nb - s).min(SEG);
            p.scales(n * nb + s, cnt, &mut ds, &mut ms);
            for i in 0..cnt {
                let b = s + i;
                decode_block(p, n * nb + b, &ds, &ms, i, &mut w);
                for (t, acc_t) in acc.iter_mut().enumerate() {
                    let xs = &x[t * k + b * BLOCK..t * k + (b + 1) * BLOCK];
                    for l in 0..LANES {
                        acc_t[l] = xs[l].mul_add(w[l], acc_t[l]);
                    }
                    for l in 0..LANES {
                        acc_t[l] = xs[LANES + l].mul_add(w[LANES + l], acc_t[l]);
                    }
                }
            }
        }
        for (t, acc_t) in acc.iter().enumerate() {
            *out.add(t * ldo + n) = crate::kernels::reduce16(acc_t);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! The packed kernels in explicit SIMD (see the portable body for the
    //! arithmetic; lanes as in [`crate::kernels`]).
    use super::*;
    use std::arch::x86_64::*;

    /// [`Packed::scales`] of the [`SEG`] blocks from `g0` in AVX-512
    /// registers (the same products; entries past the row are read from
    /// the next row or the padding and not used).
    ///
    /// # Safety
    /// The CPU has AVX-512F (the caller detected it). `g0` is a block of
    /// `p`, the first of a segment of its row.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn scales512(p: &Packed, g0: usize, ds: &mut [f32; 2 * SEG], ms: &mut [f32; SEG]) {
        let h16 = |v: &[f16], at: usize| {
            debug_assert!(at + 16 <= v.len());
            _mm512_cvtph_ps(_mm256_loadu_si256(v.as_ptr().add(at) as *const __m256i))
        };
        let one = |h: f16| _mm512_cvtph_ps(_mm256_set1_epi16(h.to_bits() as i16));
        let bytes = |v: &[u8], at: usize| {
            debug_assert!(at + 16 <= v.len());
            _mm_loadu_si128(v.as_ptr().add(at) as *const __m128i)
        };
        let neg = |x: __m512| {
            _mm512_castsi512_ps(_mm512_xor_si512(
                _mm512_castps_si512(x),
                _mm512_set1_epi32(i32::MIN),
            ))
        };
        match p.dtype {
            Dtype::Q8_0 | Dtype::Q4_0 | Dtype::Q5_0 => {
                _mm512_storeu_ps(ds.as_mut_ptr(), h16(&p.d, g0))
            }
            Dtype::Q4_1 | Dtype::Q5_1 => {
                _mm512_storeu_ps(ds.as_mut_ptr(), h16(&p.d, g0));
                _mm512_storeu_ps(ms.as_mut_ptr(), h16(&p.m, g0));
            }
            Dtype::Q4_K | Dtype::Q5_K => {
                // Lanes 0..8 from super-block s, 8..16 from s + 1.
                let s = g0 / 8;
                let two = |v: &[f16]| {
                    let (a, b) = (v[s].to_bits() as i16, v[s + 1].to_bits() as i16);
                    _mm512_cvtph_ps(_mm256_set_m128i(_mm_set1_epi16(b), _mm_set1_epi16(a)))
                };
                let sc = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes(&p.sc, g0)));
                let mn = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes(&p.mn, g0)));
                _mm512_storeu_ps(ds.as_mut_ptr(), _mm512_mul_ps(two(&p.d), sc));
                _mm512_storeu_ps(ms.as_mut_ptr(), neg(_mm512_mul_ps(two(&p.m), mn)));
            }
            Dtype::Q6_K => {
                // Scales 16h..16h+16 are super-block g0 / 8 + h's.
                for h in 0..2 {
                    let sc =
                        _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes(&p.sc, 2 * g0 + 16 * h)));
                    let d = one(p.d[g0 / 8 + h]);
                    _mm512_storeu_ps(ds.as_mut_ptr().add(16 * h), _mm512_mul_ps(d, sc));
                }
            }
            _ => unreachable!("a type not held here"),
        }
    }

    /// [`scales512`] in AVX2 registers.
    ///
    /// # Safety
    /// The CPU has AVX2 and F16C (the caller detected them). As
    /// [`scales512`].
    #[inline]
    #[target_feature(enable = "avx2,f16c")]
    pub(super) unsafe fn scales256(
        p: &Packed,
        g0: usize,
        ds: &mut [f32; 2 * SEG],
        ms: &mut [f32; SEG],
    ) {
        let h8 = |v: &[f16], at: usize| {
            debug_assert!(at + 8 <= v.len());
            _mm256_cvtph_ps(_mm_loadu_si128(v.as_ptr().add(at) as *const __m128i))
        };
        let one = |h: f16| _mm256_cvtph_ps(_mm_set1_epi16(h.to_bits() as i16));
        let bytes = |v: &[u8], at: usize| {
            debug_assert!(at + 8 <= v.len());
            _mm_loadl_epi64(v.as_ptr().add(at) as *const __m128i)
        };
        let neg = |x: __m256| {
            _mm256_castsi256_ps(_mm256_xor_si256(
                _mm256_castps_si256(x),
                _mm256_set1_epi32(i32::MIN),
            ))
        };
        for h in 0..2 {
            let (at, dp, mp) = (
                g0 + 8 * h,
                ds.as_mut_ptr().add(8 * h),
                ms.as_mut_ptr().add(8 * h),
            );
            match p.dtype {
                Dtype::Q8_0 | Dtype::Q4_0 | Dtype::Q5_0 => _mm256_storeu_ps(dp, h8(&p.d, at)),
                Dtype::Q4_1 | Dtype::Q5_1 => {
                    _mm256_storeu_ps(dp, h8(&p.d, at));
                    _mm256_storeu_ps(mp, h8(&p.m, at));
                }
                Dtype::Q4_K | Dtype::Q5_K => {
                    // Blocks at..at + 8 are super-block at / 8.
                    let sc = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes(&p.sc, at)));
                    let mn = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes(&p.mn, at)));
                    _mm256_storeu_ps(dp, _mm256_mul_ps(one(p.d[at / 8]), sc));
                    _mm256_storeu_ps(mp, neg(_mm256_mul_ps(one(p.m[at / 8]), mn)));
                }
                Dtype::Q6_K => {
                    // Scales 16h..16h+16, super-block at / 8's.
                    let d = one(p.d[at / 8]);
                    for j in 0..2 {
                        let i = 2 * g0 + 16 * h + 8 * j;
                        let sc = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes(&p.sc, i)));
                        _mm256_storeu_ps(ds.as_mut_ptr().add(16 * h + 8 * j), _mm256_mul_ps(d, sc));
                    }
                }
                _ => unreachable!("a type not held here"),
            }
        }
    }

    /// Block `g`'s weights 0..16 and 16..32 as two 16-lane registers, its
    /// scales at `i` of the segment's `ds`, `ms`.
    ///
    /// # Safety
    /// The CPU has AVX-512F and FMA (the caller detected them). `g` is a
    /// block of `p` and `i < SEG`.
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    unsafe fn block512(
        p: &Packed,
        g: usize,
        ds: &[f32; 2 * SEG],
        ms: &[f32; SEG],
        i: usize,
    ) -> (__m512, __m512) {
        let d = _mm512_set1_ps(*ds.get_unchecked(i));
        // The block's 16 bytes of nibbles, one a lane.
        let q =
            || _mm512_cvtepu8_epi32(_mm_loadu_si128(p.qs.as_ptr().add(g * 16) as *const __m128i));
        let nibbles = || {
            let q = q();
            (
                _mm512_and_si512(q, _mm512_set1_epi32(0x0F)),
                _mm512_srli_epi32(q, 4),
            )
        };
        let idx = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        // Bits `at + j·step..` of `word` for lanes j, moved to bits 4 and up.
        let high = |word: u32, at: i32, step: i32, mask: i32| {
            let sh = _mm512_add_epi32(
                _mm512_mullo_epi32(idx, _mm512_set1_epi32(step)),
                _mm512_set1_epi32(at),
            );
            let v = _mm512_and_si512(
                _mm512_srlv_epi32(_mm512_set1_epi32(word as i32), sh),
                _mm512_set1_epi32(mask),
            );
            _mm512_slli_epi32(v, 4)
        };
        let cvt = _mm512_cvtepi32_ps;
        let less = |v: __m512i, by: i32| cvt(_mm512_sub_epi32(v, _mm512_set1_epi32(by)));
        // The 4- and 5-bit types: every weight a block can hold, computed
        // once with the reference's operations into a table (16 values, or
        // 32 in two tables picked by the fifth bit), then looked up per
        // weight by its nibble (`vpermps` reads the low four bits of each
        // index lane): the weights are the table's bits, fewer operations
        // than converting and scaling each.
        // `from + j` in lane j (small integers: exact).
        let values = |from: f32| {
            let iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
            _mm512_add_ps(_mm512_set1_ps(from), _mm512_cvtepi32_ps(iota))
        };
        let table = |from: f32, min: bool| {
            let t = _mm512_mul_ps(d, values(from));
            match min {
                true => _mm512_add_ps(t, _mm512_set1_ps(*ms.get_unchecked(i))),
                false => t,
            }
        };
        match p.dtype {
            Dtype::Q4_0 | Dtype::Q4_1 | Dtype::Q4_K => {
                let t = match p.dtype {
                    Dtype::Q4_0 => table(-8., false),
                    _ => table(0., true),
                };
                let q = q();
                (
                    _mm512_permutexvar_ps(q, t),
                    _mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), t),
                )
            }
            Dtype::Q5_0 | Dtype::Q5_1 | Dtype::Q5_K => {
                let (low, high) = match p.dtype {
                    Dtype::Q5_0 => (table(-16., false), table(0., false)),
                    _ => (table(0., true), table(16., true)),
                };
                let (q, qh) = (q(), *p.qh.get_unchecked(g));
                let pick = |idx: __m512i, fifth: u32| {
                    let w = _mm512_permutexvar_ps(idx, low);
                    _mm512_mask_permutexvar_ps(w, fifth as __mmask16, idx, high)
                };
                (
                    pick(q, qh & 0xFFFF),
                    pick(_mm512_srli_epi32(q, 4), qh >> 16),
                )
            }
            Dtype::Q6_K => {
                let (lo, hi) = nibbles();
                let (b4, b5) = (*p.qh.get_unchecked(2 * g), *p.qh.get_unchecked(2 * g + 1));
                let two = |at: i32| {
                    _mm512_or_si512(high(b4, at, 1, 1), _mm512_slli_epi32(high(b5, at, 1, 1), 1))
                };
                let lo = _mm512_or_si512(lo, two(0));
                let hi = _mm512_or_si512(hi, two(16));
                let d0 = _mm512_set1_ps(*ds.get_unchecked(2 * i));
                let d1 = _mm512_set1_ps(*ds.get_unchecked(2 * i + 1));
                (
                    _mm512_mul_ps(d0, less(lo, 32)),
                    _mm512_mul_ps(d1, less(hi, 32)),
                )
            }
            _ => {
                // Q8_0.
                let base = p.qs.as_ptr().add(g * BLOCK);
                let lo = cvt(_mm512_cvtepi8_epi32(_mm_loadu_si128(
                    base as *const __m128i,
                )));
                let hi = cvt(_mm512_cvtepi8_epi32(_mm_loadu_si128(
                    base.add(16) as *const __m128i
                )));
                (_mm512_mul_ps(lo, d), _mm512_mul_ps(hi, d))
            }
        }
    }

    /// [`rows_portable`] with AVX-512.
    ///
    /// # Safety
    /// The CPU has AVX-512F and FMA (the caller detected them).
    /// As [`rows_portable`]: `x` covers `TT × p.k` values, `n0..n1` are
    /// rows of `p`, and `out` covers `out[t * ldo + n]` for them.
    #[target_feature(enable = "avx512f,fma")]
    pub unsafe fn rows_avx512<const TT: usize>(
        x: &[f32],
        p: &Packed,
        (n0, n1): (usize, usize),
        out: *mut f32,
        ldo: usize,
    ) {
        let (k, nb) = (p.k, p.k / BLOCK);
        let xp = x.as_ptr();
        let (mut ds, mut ms) = ([0f32; 2 * SEG], [0f32; SEG]);
        for n in n0..n1 {
            let mut acc = [_mm512_setzero_ps(); TT];
            for s in (0..nb).step_by(SEG) {
                let cnt = (nb - s).min(SEG);
                scales512(p, n * nb + s, &mut ds, &mut ms);
                for i in 0..cnt {
                    let b = s + i;
                    let (w0, w1) = block512(p, n * nb + b, &ds, &ms, i);
                    let j = b * BLOCK;
                    for (t, a) in acc.iter_mut().enumerate() {
                        *a = _mm512_fmadd_ps(_mm512_loadu_ps(xp.add(t * k + j)), w0, *a);
                        *a = _mm512_fmadd_ps(_mm512_loadu_ps(xp.add(t * k + j + LANES)), w1, *a);
                    }
                }
            }
            for (t, a) in acc.iter().enumerate() {
                *out.add(t * ldo + n) = crate::kernels::x86::sum512(*a);
            }
        }
    }

    /// Eight weights starting at `off` of block `g` (off = 0, 8, 16, 24),
    /// its scales at `i` of the segment's `ds`, `ms`.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA (the caller detected them). `g` is a block
    /// of `p`, `i < SEG` and `off` one of 0, 8, 16, 24.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn eight256(
        p: &Packed,
        g: usize,
        off: usize,
        ds: &[f32; 2 * SEG],
        ms: &[f32; SEG],
        i: usize,
    ) -> __m256 {
        let d = _mm256_set1_ps(*ds.get_unchecked(i));
        let nibbles = || {
            let src = p.qs.as_ptr().add(g * 16 + off % 16);
            let q = _mm256_cvtepu8_epi32(_mm_loadl_epi64(src as *const __m128i));
            match off < 16 {
                true => _mm256_and_si256(q, _mm256_set1_epi32(0x0F)),
                false => _mm256_srli_epi32(q, 4),
            }
        };
        let lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        // Bits `at + j·step..` of `word` for lanes j, moved to bits 4 and up.
        let high = |word: u32, at: i32, step: i32, mask: i32| {
            let sh = _mm256_add_epi32(
                _mm256_mullo_epi32(lane, _mm256_set1_epi32(step)),
                _mm256_set1_epi32(at),
            );
            let v = _mm256_and_si256(
                _mm256_srlv_epi32(_mm256_set1_epi32(word as i32), sh),
                _mm256_set1_epi32(mask),
            );
            _mm256_slli_epi32(v, 4)
        };
        let cvt = _mm256_cvtepi32_ps;
        let less = |v: __m256i, by: i32| cvt(_mm256_sub_epi32(v, _mm256_set1_epi32(by)));
        let scaled_min = |q: __m256i| {
            _mm256_add_ps(
                _mm256_mul_ps(d, cvt(q)),
                _mm256_set1_ps(*ms.get_unchecked(i)),
            )
        };
        let o = off as i32;
        match p.dtype {
            Dtype::Q4_1 | Dtype::Q4_K => scaled_min(nibbles()),
            Dtype::Q4_0 => _mm256_mul_ps(d, less(nibbles(), 8)),
            Dtype::Q5_0 | Dtype::Q5_1 | Dtype::Q5_K => {
                let q = _mm256_or_si256(nibbles(), high(*p.qh.get_unchecked(g), o, 1, 1));
                match p.dtype {
                    Dtype::Q5_0 => _mm256_mul_ps(d, less(q, 16)),
                    _ => scaled_min(q),
                }
            }
            Dtype::Q6_K => {
                let (b4, b5) = (*p.qh.get_unchecked(2 * g), *p.qh.get_unchecked(2 * g + 1));
                let two =
                    _mm256_or_si256(high(b4, o, 1, 1), _mm256_slli_epi32(high(b5, o, 1, 1), 1));
                let q = _mm256_or_si256(nibbles(), two);
                _mm256_mul_ps(
                    _mm256_set1_ps(*ds.get_unchecked(2 * i + off / 16)),
                    less(q, 32),
                )
            }
            _ => {
                // Q8_0.
                let src = p.qs.as_ptr().add(g * BLOCK + off);
                let q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(src as *const __m128i));
                _mm256_mul_ps(cvt(q), d)
            }
        }
    }

    /// [`rows_portable`] with AVX2 (lanes 0..8 low register, 8..16 high).
    ///
    /// # Safety
    /// The CPU has AVX2, FMA and F16C (the caller detected them).
    /// As [`rows_portable`]: `x` covers `TT × p.k` values, `n0..n1` are
    /// rows of `p`, and `out` covers `out[t * ldo + n]` for them.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn rows_avx2<const TT: usize>(
        x: &[f32],
        p: &Packed,
        (n0, n1): (usize, usize),
        out: *mut f32,
        ldo: usize,
    ) {
        let (k, nb) = (p.k, p.k / BLOCK);
        let xp = x.as_ptr();
        let (mut ds, mut ms) = ([0f32; 2 * SEG], [0f32; SEG]);
        for n in n0..n1 {
            let mut lo = [_mm256_setzero_ps(); TT];
            let mut hi = [_mm256_setzero_ps(); TT];
            for s in (0..nb).step_by(SEG) {
                let cnt = (nb - s).min(SEG);
                scales256(p, n * nb + s, &mut ds, &mut ms);
                for i in 0..cnt {
                    let b = s + i;
                    let g = n * nb + b;
                    let w = [
                        eight256(p, g, 0, &ds, &ms, i),
                        eight256(p, g, 8, &ds, &ms, i),
                        eight256(p, g, 16, &ds, &ms, i),
                        eight256(p, g, 24, &ds, &ms, i),
                    ];
                    let j = b * BLOCK;
                    for t in 0..TT {
                        let r = xp.add(t * k + j);
                        lo[t] = _mm256_fmadd_ps(_mm256_loadu_ps(r), w[0], lo[t]);
                        hi[t] = _mm256_fmadd_ps(_mm256_loadu_ps(r.add(8)), w[1], hi[t]);
                        lo[t] = _mm256_fmadd_ps(_mm256_loadu_ps(r.add(16)), w[2], lo[t]);
                        hi[t] = _mm256_fmadd_ps(_mm256_loadu_ps(r.add(24)), w[3], hi[t]);
                    }
                }
            }
            for t in 0..TT {
                let mut l = [0f32; LANES];
                _mm256_storeu_ps(l.as_mut_ptr(), lo[t]);
                _mm256_storeu_ps(l.as_mut_ptr().add(8), hi[t]);
                *out.add(t * ldo + n) = crate::kernels::reduce16(&l);
            }
        }
    }
}

/// Rows `r` of the output for `TT` rows of `x`, on `isa`.
///
/// # Safety
/// As [`rows_portable`]; the ISA was detected on this CPU.
unsafe fn rows<const TT: usize>(
    isa: Isa,
    x: &[f32],
    p: &Packed,
    r: (usize, usize),
    out: *mut f32,
    ldo: usize,
) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => x86::rows_avx512::<TT>(x, p, r, out, ldo),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => x86::rows_avx2::<TT>(x, p, r, out, ldo),
        _ => rows_portable::<TT>(x, p, r, out, ldo),
    }
}

/// Columns `col..col + p.rows` of `out[t × ldo] = x[t × k] · wᵀ` for
/// `1 <= t <= MAX_ROWS`, in parallel over blocks of weight rows;
/// bit-identical to [`kernels::matmul`](crate::kernels::matmul) over the
/// decoded weights.
pub fn matmul(isa: Isa, x: &[f32], t: usize, p: &Packed, out: &mut [f32], col: usize, ldo: usize) {
    let (k, n) = (p.k, p.rows);
    assert!((1..=MAX_ROWS).contains(&t) && x.len() >= t * k);
    assert!(col + n <= ldo && out.len() >= (t - 1) * ldo + col + n);
    // SAFETY: bounds checked above; the ISA was detected on this CPU; each
    // task writes columns `col + r` of its own rows `r`.
    crate::kernels::for_row_blocks(n, ROWS_PER_TASK, out, |r, ptr| unsafe {
        let ptr = ptr.add(col);
        match t {
            1 => rows::<1>(isa, x, p, r, ptr, ldo),
            2 => rows::<2>(isa, x, p, r, ptr, ldo),
            3 => rows::<3>(isa, x, p, r, ptr, ldo),
            4 => rows::<4>(isa, x, p, r, ptr, ldo),
            5 => rows::<5>(isa, x, p, r, ptr, ldo),
            6 => rows::<6>(isa, x, p, r, ptr, ldo),
            7 => rows::<7>(isa, x, p, r, ptr, ldo),
            _ => rows::<8>(isa, x, p, r, ptr, ldo),
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels;

    /// A pseudo-random stream (no dependency needed).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u32 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) as u32
        }
    }

    /// Every type held here.
    fn held() -> Vec<Dtype> {
        crate::quant::SUPPORTED_TYPES
            .iter()
            .copied()
            .filter(|t| Packed::holds(*t))
            .collect()
    }

    /// Raw blocks of `dtype` for `rows × k` weights, seeded from `g`, each
    /// block's f16 fields set to small finite values.
    fn raw(dtype: Dtype, rows: usize, k: usize, g: &mut Lcg) -> Vec<u8> {
        crate::matrix::tests::blocks(dtype, rows, k, g.next() as u64)
    }

    #[test]
    fn every_quantized_type_is_held_in_about_its_file_size() {
        let (rows, k) = (4, 512);
        let mut g = Lcg(3);
        for dtype in held() {
            let file = dtype.bytes_for(rows * k).unwrap();
            let p = Packed::from_blocks(dtype, k, &raw(dtype, rows, k, &mut g)).unwrap();
            // At most one byte more per 32 weights (the K types' scales).
            assert!(
                p.bytes() >= file && p.bytes() <= file + rows * k / 32 + 8 * PAD,
                "{dtype:?}: {} for {file}",
                p.bytes()
            );
        }
        assert!(
            !Packed::holds(Dtype::F16) && !Packed::holds(Dtype::BF16) && !Packed::holds(Dtype::F32)
        );
        let names: Vec<&str> = held().iter().map(|t| t.name()).collect();
        assert_eq!(
            names,
            ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q4_K", "Q5_K", "Q6_K"]
        );
    }

    #[test]
    fn the_layout_decodes_as_the_reference_dequantizer() {
        let (rows, k) = (3, 512 + 256 * SEG / 8);
        let mut g = Lcg(9);
        for dtype in held() {
            let raw = raw(dtype, rows, k, &mut g);
            let p = Packed::from_blocks(dtype, k, &raw).unwrap();
            let mut want = vec![0f32; rows * k];
            dtype.decode(&raw, &mut want);
            let mut got = vec![0f32; k];
            for r in 0..rows {
                p.decode_row(r, &mut got);
                let same = got
                    .iter()
                    .zip(&want[r * k..])
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{dtype:?} row {r}");
            }
        }
    }

    #[test]
    fn packed_rows_are_bit_identical_to_the_f32_kernel_on_every_isa() {
        // Rows longer than a segment of scales, and not whole segments.
        let (rows, k) = (70, 256 * (SEG / 8 + 1));
        let mut g = Lcg(11);
        let x: Vec<f32> = (0..MAX_ROWS * k)
            .map(|_| (g.next() % 2000) as f32 / 1000.0 - 1.0)
            .collect();
        for dtype in held() {
            let p = Packed::from_blocks(dtype, k, &raw(dtype, rows, k, &mut g)).unwrap();
            let mut w = vec![0f32; rows * k];
            for r in 0..rows {
                p.decode_row(r, &mut w[r * k..(r + 1) * k]);
            }
            for isa in Isa::available() {
                for t in 1..=MAX_ROWS {
                    let mut want = vec![0f32; t * rows];
                    kernels::matmul(isa, &x, t, k, &w, rows, &mut want);
                    let mut got = vec![0f32; t * rows];
                    matmul(isa, &x, t, &p, &mut got, 0, rows);
                    let same = want
                        .iter()
                        .zip(&got)
                        .all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "{dtype:?} {isa:?} t={t}");
                }
            }
        }
    }

    /// Read a few rows at a time, a tensor of several buffers regroups as
    /// when given whole.
    #[test]
    fn reading_in_pieces_regroups_as_the_whole() {
        let mut g = Lcg(5);
        for dtype in held() {
            let k = 256;
            let rows = (3 << 20) / dtype.bytes_for(k).unwrap() + 7;
            let raw = raw(dtype, rows, k, &mut g);
            let whole = Packed::from_blocks(dtype, k, &raw).unwrap();
            let read = Packed::from_reader(dtype, k, raw.len(), &mut raw.as_slice())
                .unwrap()
                .unwrap();
            assert_eq!(read.rows, rows);
            let bits = |v: &[f16]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert!(read.qs == whole.qs && read.qh == whole.qh, "{dtype:?}");
            assert!(read.sc == whole.sc && read.mn == whole.mn, "{dtype:?}");
            assert!(bits(&read.d) == bits(&whole.d) && bits(&read.m) == bits(&whole.m));
        }
        let short = Packed::from_reader(Dtype::Q8_0, 32, 68, &mut [0u8; 40].as_slice());
        // Held in exactly the room it needs (resident memory near the file
        // size): the padding did not double the scale arrays.
        for dtype in held() {
            let raw = raw(dtype, 40, 256, &mut g);
            let p = Packed::from_reader(dtype, 256, raw.len(), &mut raw.as_slice())
                .unwrap()
                .unwrap();
            let room = p.qs.capacity()
                + p.sc.capacity()
                + p.mn.capacity()
                + 2 * (p.d.capacity() + p.m.capacity())
                + 4 * p.qh.capacity();
            assert_eq!(room, p.bytes(), "{dtype:?}");
        }
        assert!(short.is_err(), "a file that ends early is an error");
        // A type not held here.
        assert!(
            Packed::from_reader(Dtype::F16, 32, 64, &mut [0u8; 64].as_slice())
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn decoding_follows_the_gguf_layouts() {
        let h = |v: f32| f16::from_f32(v).to_le_bytes();
        let mut row = [0f32; 32];
        // Q4_1: low nibbles are weights 0..16, high nibbles 16..32.
        let mut b = [h(0.5), h(-1.0)].concat();
        b.extend([0u8; 16]);
        b[4] = 0x52; // weight 0 = 2, weight 16 = 5
        Packed::from_blocks(Dtype::Q4_1, 32, &b)
            .unwrap()
            .decode_row(0, &mut row);
        assert_eq!(
            (row[0], row[16], row[1]),
            (2.0 * 0.5 - 1.0, 5.0 * 0.5 - 1.0, -1.0)
        );
        // Q8_0: signed bytes.
        let mut b = h(0.25).to_vec();
        b.extend([0u8; 32]);
        b[2 + 3] = (-4i8) as u8;
        Packed::from_blocks(Dtype::Q8_0, 32, &b)
            .unwrap()
            .decode_row(0, &mut row);
        assert_eq!((row[3], row[0]), (-1.0, 0.0));
        // Q5_0: bit j of qh is weight j's fifth bit; weights are q - 16.
        let mut b = h(0.5).to_vec();
        b.extend((1u32 | 1 << 17).to_le_bytes());
        b.extend([0u8; 16]);
        b[6] = 0x52;
        Packed::from_blocks(Dtype::Q5_0, 32, &b)
            .unwrap()
            .decode_row(0, &mut row);
        assert_eq!(
            (row[0], row[16], row[1], row[17]),
            ((18.0 - 16.0) * 0.5, (5.0 - 16.0) * 0.5, -8.0, 0.0)
        );
        // Q4_0: weights are q - 8.
        let mut b = h(2.0).to_vec();
        b.extend([0u8; 16]);
        b[2] = 0x3A;
        Packed::from_blocks(Dtype::Q4_0, 32, &b)
            .unwrap()
            .decode_row(0, &mut row);
        assert_eq!((row[0], row[16], row[1]), (4.0, -10.0, -16.0));
    }
}
