//! Weight matrices kept in 32-weight blocks for the steps that are bound
//! by memory bandwidth: decoding a handful of tokens reads every weight
//! once per step, and a 4-bit block is 24 bytes for 32 weights where f32
//! is 128.
//!
//! Four layouts ([`Format`]) hold six GGUF types, each weight written as
//! one IEEE multiply (then, for Q4_1, one add) of exactly the values the
//! reference dequantizer ([`crate::quant`]) multiplies:
//!
//! | GGUF type | layout | weight | bytes / 32 (file) |
//! |---|---|---|---|
//! | Q8_0 | Q8_0 | `q · d` | 36 (34) |
//! | Q5_0 | Q5_0 | `(q − 16) · d`, q of 5 bits | 24 (22) |
//! | Q4_0 | Q5_0 | `(q − 8) · d` as `((q + 8) − 16) · d` | 24 (18) |
//! | Q4_1 | Q4_1 | `q · d + m` | 24 (20) |
//! | Q4_K | Q4_1 | `q · (d·sc) − dmin·m` as `q · d′ + m′`, `d′ = d·sc`, `m′ = −(dmin·m)` | 24 (18) |
//! | Q6_K | Q8_16 | `(q − 32) · (d·sc)`, a scale per 16 weights | 40 (26.25) |
//!
//! (`a − b` and `a + (−b)` are the same IEEE operation, and the products
//! `d·sc`, `dmin·m` are taken once at load as the reference takes them.)
//!
//! **Same numbers.** Every weight equals its decoded f32 value bit for
//! bit (tested against [`Dtype::decode`](crate::quant::Dtype::decode)). The products are then
//! accumulated in the same 16 lanes, in the same order and with the same
//! final reduction as [`kernels::matmul`](crate::kernels::matmul): a packed
//! step gives bit-identical outputs to an f32 step, whichever ISA runs it.

use crate::kernels::{Isa, LANES};
use crate::quant::Dtype;

/// Weights per block.
const BLOCK: usize = 32;

/// Steps of at most this many tokens use packed weights (more rows make
/// the step compute-bound, where the f32 kernel's tiles are faster).
pub const MAX_ROWS: usize = 8;

/// Weight rows per parallel task.
const ROWS_PER_TASK: usize = 64;

/// The block format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// 4-bit values with a scale and a minimum per block.
    Q4_1,
    /// 5-bit values less 16, with a scale per block.
    Q5_0,
    /// 8-bit signed values with a scale per block.
    Q8_0,
    /// 8-bit signed values with a scale per 16 weights (two per block).
    Q8_16,
}

/// A `rows × k` matrix in GGUF blocks, row-major (each row `k / 32` blocks).
#[derive(Debug, Clone)]
pub struct Packed {
    /// The block format.
    pub format: Format,
    /// Row length (a multiple of 32).
    pub k: usize,
    /// Number of rows.
    pub rows: usize,
    /// Each block's scale as f32: the file's f16 widened exactly, or (Q4_K)
    /// `d·sc`; Q8_16 holds two a block, one per 16 weights.
    d: Vec<f32>,
    /// Each block's minimum (Q4_1; empty otherwise).
    m: Vec<f32>,
    /// Each block's fifth bits, bit `j` for weight `j` (Q5_0; empty
    /// otherwise).
    qh: Vec<u32>,
    /// Q4_1, Q5_0: 16 bytes a block (low nibbles = weights 0..16, high =
    /// 16..32); Q8_0: 32 signed bytes a block.
    qs: Vec<u8>,
}

fn f16(lo: u8, hi: u8) -> f32 {
    half::f16::from_bits(u16::from_le_bytes([lo, hi])).to_f32()
}

impl Packed {
    /// The layout a GGUF type is held in, if the block kernels read it.
    pub fn format_for(dtype: Dtype) -> Option<Format> {
        match dtype {
            Dtype::Q4_1 | Dtype::Q4_K => Some(Format::Q4_1),
            Dtype::Q4_0 | Dtype::Q5_0 => Some(Format::Q5_0),
            Dtype::Q8_0 => Some(Format::Q8_0),
            Dtype::Q6_K => Some(Format::Q8_16),
            _ => None,
        }
    }

    /// Splits raw GGUF blocks of `dtype` (whole rows of `k`) into the
    /// scales, minimums and values the kernels read (module docs); `None`
    /// when the type has no layout here, `k` is not whole blocks or `raw`
    /// not whole rows.
    pub fn from_blocks(dtype: Dtype, k: usize, raw: &[u8]) -> Option<Packed> {
        let mut p = Packed::empty(dtype, k, raw.len())?;
        p.push_rows(dtype, raw);
        Some(p)
    }

    /// As [`from_blocks`](Self::from_blocks), reading the `len` bytes from
    /// `src` a few rows at a time, so the raw tensor is never held whole
    /// beside its split form. `Ok(None)`: as `from_blocks`.
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
            p.push_rows(dtype, &buf[..n]);
            left -= n;
        }
        Ok(Some(p))
    }

    /// Room for `len` bytes of `dtype` blocks, rows of `k`; `None` when the
    /// type has no layout here or `len` is not whole rows.
    fn empty(dtype: Dtype, k: usize, len: usize) -> Option<Packed> {
        let format = Packed::format_for(dtype)?;
        let per_row = dtype.bytes_for(k)?;
        if !k.is_multiple_of(BLOCK) || k == 0 || !len.is_multiple_of(per_row) {
            return None;
        }
        let (weights, size) = dtype.block();
        let blocks = len / size * (weights / BLOCK);
        let cap = |on: bool| if on { blocks } else { 0 };
        Some(Packed {
            format,
            k,
            rows: len / per_row,
            d: Vec::with_capacity(blocks * if format == Format::Q8_16 { 2 } else { 1 }),
            m: Vec::with_capacity(cap(format == Format::Q4_1)),
            qh: Vec::with_capacity(cap(format == Format::Q5_0)),
            qs: Vec::with_capacity(
                blocks
                    * match format {
                        Format::Q8_0 | Format::Q8_16 => 32,
                        _ => 16,
                    },
            ),
        })
    }

    /// Appends whole rows of raw `dtype` blocks (`self`'s type).
    fn push_rows(&mut self, dtype: Dtype, raw: &[u8]) {
        let (_, size) = dtype.block();
        let p = self;
        for b in raw.chunks_exact(size) {
            match dtype {
                Dtype::Q8_0 => {
                    p.d.push(f16(b[0], b[1]));
                    p.qs.extend_from_slice(&b[2..34]);
                }
                Dtype::Q4_1 => {
                    p.d.push(f16(b[0], b[1]));
                    p.m.push(f16(b[2], b[3]));
                    p.qs.extend_from_slice(&b[4..20]);
                }
                Dtype::Q5_0 => {
                    p.d.push(f16(b[0], b[1]));
                    p.qh.push(u32::from_le_bytes([b[2], b[3], b[4], b[5]]));
                    p.qs.extend_from_slice(&b[6..22]);
                }
                Dtype::Q4_0 => {
                    // q − 8 = (q + 8) − 16: q + 8 in 8..24, its fifth bit to qh.
                    p.d.push(f16(b[0], b[1]));
                    let mut qh = 0u32;
                    for j in 0..16 {
                        let (lo, hi) = ((b[2 + j] & 0x0F) + 8, (b[2 + j] >> 4) + 8);
                        qh |= ((lo >> 4) as u32) << j | ((hi >> 4) as u32) << (j + 16);
                        p.qs.push((lo & 0x0F) | (hi & 0x0F) << 4);
                    }
                    p.qh.push(qh);
                }
                Dtype::Q4_K => {
                    // Eight sub-blocks of 32: scale d·sc, minimum −(dmin·m);
                    // sub-block 2i = low nibbles of bytes 32i..32i+32, 2i+1
                    // their high nibbles.
                    let (d, dmin) = (f16(b[0], b[1]), f16(b[2], b[3]));
                    let scales: &[u8; 12] = b[4..16].try_into().expect("12 bytes");
                    let (sc, mn) = crate::quant::scales_mins(scales);
                    for i in 0..8 {
                        p.d.push(d * sc[i] as f32);
                        p.m.push(-(dmin * mn[i] as f32));
                        let src = &b[16 + 32 * (i / 2)..16 + 32 * (i / 2) + 32];
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
                    }
                }
                Dtype::Q6_K => {
                    // As the reference: scale d·sc per 16 weights, q − 32.
                    let mut w = [0f32; 16];
                    let mut q = [0i8; 256];
                    let block: &[u8; 210] = b.try_into().expect("210 bytes");
                    crate::quant::q6_k_parts(block, &mut w, &mut q);
                    for i in 0..8 {
                        p.d.push(w[2 * i]);
                        p.d.push(w[2 * i + 1]);
                        p.qs.extend(q[32 * i..32 * i + 32].iter().map(|&v| v as u8));
                    }
                }
                _ => unreachable!("a type without a layout here"),
            }
        }
    }

    /// Row `r` as f32, exactly as the kernels see it.
    pub fn decode_row(&self, r: usize, out: &mut [f32]) {
        let nb = self.k / BLOCK;
        for b in 0..nb {
            decode_block(self, r * nb + b, &mut out[b * BLOCK..(b + 1) * BLOCK]);
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.qs.len() + 4 * (self.d.len() + self.m.len() + self.qh.len())
    }

    /// Builds a Q4_1 matrix from raw parts (tests and benchmarks):
    /// per block a scale, a minimum and 16 bytes of nibbles.
    pub fn q4_1(k: usize, d: Vec<f32>, m: Vec<f32>, qs: Vec<u8>) -> Packed {
        assert!(k.is_multiple_of(BLOCK) && d.len() == m.len() && qs.len() == 16 * d.len());
        Packed {
            format: Format::Q4_1,
            k,
            rows: d.len() * BLOCK / k,
            d,
            m,
            qh: Vec::new(),
            qs,
        }
    }

    /// Builds a Q8_0 matrix from raw parts: per block a scale and 32 bytes.
    pub fn q8_0(k: usize, d: Vec<f32>, qs: Vec<i8>) -> Packed {
        assert!(k.is_multiple_of(BLOCK) && qs.len() == BLOCK * d.len());
        Packed {
            format: Format::Q8_0,
            k,
            rows: d.len() * BLOCK / k,
            d,
            m: Vec::new(),
            qh: Vec::new(),
            qs: qs.into_iter().map(|v| v as u8).collect(),
        }
    }

    /// Builds a Q5_0 matrix from raw parts: per block a scale, the fifth
    /// bits and 16 bytes of nibbles.
    pub fn q5_0(k: usize, d: Vec<f32>, qh: Vec<u32>, qs: Vec<u8>) -> Packed {
        assert!(k.is_multiple_of(BLOCK) && d.len() == qh.len() && qs.len() == 16 * d.len());
        Packed {
            format: Format::Q5_0,
            k,
            rows: d.len() * BLOCK / k,
            d,
            m: Vec::new(),
            qh,
            qs,
        }
    }
}

/// Block `blk` as 32 f32 weights (the reference's dequantisation,
/// operation for operation).
#[inline(always)]
fn decode_block(p: &Packed, blk: usize, out: &mut [f32]) {
    let d = p.d[blk];
    match p.format {
        Format::Q4_1 => {
            let m = p.m[blk];
            let qs = &p.qs[blk * 16..blk * 16 + 16];
            for j in 0..16 {
                out[j] = (qs[j] & 0x0F) as f32 * d + m;
                out[j + 16] = (qs[j] >> 4) as f32 * d + m;
            }
        }
        Format::Q5_0 => {
            let qh = p.qh[blk];
            let qs = &p.qs[blk * 16..blk * 16 + 16];
            for j in 0..16 {
                let lo = (qs[j] & 0x0F) as i32 | (((qh >> j) & 1) << 4) as i32;
                let hi = (qs[j] >> 4) as i32 | (((qh >> (j + 16)) & 1) << 4) as i32;
                out[j] = (lo - 16) as f32 * d;
                out[j + 16] = (hi - 16) as f32 * d;
            }
        }
        Format::Q8_0 => {
            let qs = &p.qs[blk * BLOCK..blk * BLOCK + BLOCK];
            for j in 0..BLOCK {
                out[j] = (qs[j] as i8) as f32 * d;
            }
        }
        Format::Q8_16 => {
            let qs = &p.qs[blk * BLOCK..blk * BLOCK + BLOCK];
            for j in 0..BLOCK {
                out[j] = (qs[j] as i8) as f32 * p.d[2 * blk + j / 16];
            }
        }
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
    for n in n0..n1 {
        let mut acc = [[0f32; LANES]; TT];
        for b in 0..nb {
            decode_block(p, n * nb + b, &mut w);
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

    /// Block `blk`'s weights 0..16 and 16..32 as two 16-lane registers.
    ///
    /// # Safety
    /// The CPU has AVX-512F and FMA (the caller detected them).
    /// `blk` is a block of `p` (`blk < rows × k / BLOCK`).
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    unsafe fn block512(p: &Packed, blk: usize) -> (__m512, __m512) {
        let d = _mm512_set1_ps(*p.d.get_unchecked(blk));
        match p.format {
            Format::Q4_1 => {
                let m = _mm512_set1_ps(*p.m.get_unchecked(blk));
                let q = _mm512_cvtepu8_epi32(_mm_loadu_si128(
                    p.qs.as_ptr().add(blk * 16) as *const __m128i
                ));
                let lo = _mm512_cvtepi32_ps(_mm512_and_si512(q, _mm512_set1_epi32(0x0F)));
                let hi = _mm512_cvtepi32_ps(_mm512_srli_epi32(q, 4));
                (
                    _mm512_add_ps(_mm512_mul_ps(lo, d), m),
                    _mm512_add_ps(_mm512_mul_ps(hi, d), m),
                )
            }
            Format::Q5_0 => {
                let q = _mm512_cvtepu8_epi32(_mm_loadu_si128(
                    p.qs.as_ptr().add(blk * 16) as *const __m128i
                ));
                let qh = _mm512_set1_epi32(*p.qh.get_unchecked(blk) as i32);
                let idx = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
                let one = _mm512_set1_epi32(1);
                let bit = |sh: __m512i| {
                    _mm512_slli_epi32(_mm512_and_si512(_mm512_srlv_epi32(qh, sh), one), 4)
                };
                let sixteen = _mm512_set1_epi32(16);
                let lo = _mm512_or_si512(_mm512_and_si512(q, _mm512_set1_epi32(0x0F)), bit(idx));
                let hi =
                    _mm512_or_si512(_mm512_srli_epi32(q, 4), bit(_mm512_add_epi32(idx, sixteen)));
                (
                    _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(lo, sixteen)), d),
                    _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(hi, sixteen)), d),
                )
            }
            Format::Q8_0 => {
                let base = p.qs.as_ptr().add(blk * BLOCK);
                let lo = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(
                    base as *const __m128i,
                )));
                let hi = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(
                    base.add(16) as *const __m128i
                )));
                (_mm512_mul_ps(lo, d), _mm512_mul_ps(hi, d))
            }
            Format::Q8_16 => {
                let base = p.qs.as_ptr().add(blk * BLOCK);
                let lo = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(
                    base as *const __m128i,
                )));
                let hi = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(
                    base.add(16) as *const __m128i
                )));
                let d0 = _mm512_set1_ps(*p.d.get_unchecked(2 * blk));
                let d1 = _mm512_set1_ps(*p.d.get_unchecked(2 * blk + 1));
                (_mm512_mul_ps(lo, d0), _mm512_mul_ps(hi, d1))
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
        for n in n0..n1 {
            let mut acc = [_mm512_setzero_ps(); TT];
            for b in 0..nb {
                let (w0, w1) = block512(p, n * nb + b);
                let j = b * BLOCK;
                for (t, a) in acc.iter_mut().enumerate() {
                    *a = _mm512_fmadd_ps(_mm512_loadu_ps(xp.add(t * k + j)), w0, *a);
                    *a = _mm512_fmadd_ps(_mm512_loadu_ps(xp.add(t * k + j + LANES)), w1, *a);
                }
            }
            for (t, a) in acc.iter().enumerate() {
                let mut l = [0f32; LANES];
                _mm512_storeu_ps(l.as_mut_ptr(), *a);
                *out.add(t * ldo + n) = crate::kernels::reduce16(&l);
            }
        }
    }

    /// Eight weights starting at `off` of block `blk` (off = 0, 8, 16, 24).
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA (the caller detected them).
    /// `blk` is a block of `p` and `off` one of 0, 8, 16, 24.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn eight256(p: &Packed, blk: usize, off: usize) -> __m256 {
        let d = _mm256_set1_ps(*p.d.get_unchecked(blk));
        match p.format {
            Format::Q4_1 => {
                let m = _mm256_set1_ps(*p.m.get_unchecked(blk));
                let src = p.qs.as_ptr().add(blk * 16 + off % 16);
                let q = _mm256_cvtepu8_epi32(_mm_loadl_epi64(src as *const __m128i));
                let q = if off < 16 {
                    _mm256_and_si256(q, _mm256_set1_epi32(0x0F))
                } else {
                    _mm256_srli_epi32(q, 4)
                };
                _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(q), d), m)
            }
            Format::Q5_0 => {
                let src = p.qs.as_ptr().add(blk * 16 + off % 16);
                let q = _mm256_cvtepu8_epi32(_mm_loadl_epi64(src as *const __m128i));
                let q = if off < 16 {
                    _mm256_and_si256(q, _mm256_set1_epi32(0x0F))
                } else {
                    _mm256_srli_epi32(q, 4)
                };
                let qh = _mm256_set1_epi32(*p.qh.get_unchecked(blk) as i32);
                let o = off as i32;
                let idx = _mm256_setr_epi32(o, o + 1, o + 2, o + 3, o + 4, o + 5, o + 6, o + 7);
                let bit = _mm256_slli_epi32(
                    _mm256_and_si256(_mm256_srlv_epi32(qh, idx), _mm256_set1_epi32(1)),
                    4,
                );
                let q = _mm256_sub_epi32(_mm256_or_si256(q, bit), _mm256_set1_epi32(16));
                _mm256_mul_ps(_mm256_cvtepi32_ps(q), d)
            }
            Format::Q8_0 => {
                let src = p.qs.as_ptr().add(blk * BLOCK + off);
                let q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(src as *const __m128i));
                _mm256_mul_ps(_mm256_cvtepi32_ps(q), d)
            }
            Format::Q8_16 => {
                let src = p.qs.as_ptr().add(blk * BLOCK + off);
                let q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(src as *const __m128i));
                let d = _mm256_set1_ps(*p.d.get_unchecked(2 * blk + off / 16));
                _mm256_mul_ps(_mm256_cvtepi32_ps(q), d)
            }
        }
    }

    /// [`rows_portable`] with AVX2 (lanes 0..8 low register, 8..16 high).
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA (the caller detected them).
    /// As [`rows_portable`]: `x` covers `TT × p.k` values, `n0..n1` are
    /// rows of `p`, and `out` covers `out[t * ldo + n]` for them.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn rows_avx2<const TT: usize>(
        x: &[f32],
        p: &Packed,
        (n0, n1): (usize, usize),
        out: *mut f32,
        ldo: usize,
    ) {
        let (k, nb) = (p.k, p.k / BLOCK);
        let xp = x.as_ptr();
        for n in n0..n1 {
            let mut lo = [_mm256_setzero_ps(); TT];
            let mut hi = [_mm256_setzero_ps(); TT];
            for b in 0..nb {
                let blk = n * nb + b;
                let w = [
                    eight256(p, blk, 0),
                    eight256(p, blk, 8),
                    eight256(p, blk, 16),
                    eight256(p, blk, 24),
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
        fn f16ish(&mut self) -> f32 {
            half::f16::from_f32((self.next() % 2000) as f32 / 1000.0 - 1.0).to_f32() * 0.05
        }
    }

    fn isas() -> Vec<Isa> {
        let mut v = vec![Isa::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                v.push(Isa::Avx2);
            }
            if std::is_x86_feature_detected!("avx512f") {
                v.push(Isa::Avx512);
            }
        }
        v
    }

    fn matrices(rows: usize, k: usize) -> Vec<Packed> {
        let mut g = Lcg(7);
        let blocks = rows * k / BLOCK;
        let d: Vec<f32> = (0..blocks).map(|_| g.f16ish()).collect();
        let m: Vec<f32> = (0..blocks).map(|_| g.f16ish()).collect();
        let q4: Vec<u8> = (0..blocks * 16).map(|_| g.next() as u8).collect();
        let q8: Vec<i8> = (0..blocks * BLOCK).map(|_| g.next() as i8).collect();
        let qh: Vec<u32> = (0..blocks).map(|_| g.next() ^ (g.next() << 16)).collect();
        vec![
            Packed::q4_1(k, d.clone(), m, q4.clone()),
            Packed::q5_0(k, d.clone(), qh, q4),
            Packed::q8_0(k, d, q8),
        ]
    }

    #[test]
    fn packed_rows_are_bit_identical_to_the_f32_kernel_on_every_isa() {
        let (rows, k) = (70, 96);
        let mut g = Lcg(11);
        let x: Vec<f32> = (0..MAX_ROWS * k).map(|_| g.f16ish() * 10.0).collect();
        for p in matrices(rows, k) {
            let mut w = vec![0f32; rows * k];
            for r in 0..rows {
                p.decode_row(r, &mut w[r * k..(r + 1) * k]);
            }
            for isa in isas() {
                for t in 1..=MAX_ROWS {
                    let mut want = vec![0f32; t * rows];
                    kernels::matmul(isa, &x, t, k, &w, rows, &mut want);
                    let mut got = vec![0f32; t * rows];
                    matmul(isa, &x, t, &p, &mut got, 0, rows);
                    let same = want
                        .iter()
                        .zip(&got)
                        .all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "{:?} {isa:?} t={t}", p.format);
                }
            }
        }
    }

    /// Read a few rows at a time, a tensor of several buffers splits as
    /// when given whole.
    #[test]
    fn reading_in_pieces_splits_as_the_whole() {
        let mut g = Lcg(5);
        for dtype in [Dtype::Q8_0, Dtype::Q5_0, Dtype::Q4_K, Dtype::Q6_K] {
            let k = 256;
            let per_row = dtype.bytes_for(k).unwrap();
            let rows = (3 << 20) / per_row + 7;
            let mut raw: Vec<u8> = (0..rows * per_row).map(|_| g.next() as u8).collect();
            // Finite f16 scales (bytes 0..4 of every block are f16 for these types).
            let (_, size) = dtype.block();
            for b in raw.chunks_exact_mut(size) {
                b[1] &= 0x3B;
                b[3] &= 0x3B;
            }
            let whole = Packed::from_blocks(dtype, k, &raw).unwrap();
            let read = Packed::from_reader(dtype, k, raw.len(), &mut raw.as_slice())
                .unwrap()
                .unwrap();
            assert_eq!(read.rows, rows);
            assert!(read.qs == whole.qs && read.qh == whole.qh, "{dtype:?}");
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert!(bits(&read.d) == bits(&whole.d) && bits(&read.m) == bits(&whole.m));
        }
        let short = Packed::from_reader(Dtype::Q8_0, 32, 68, &mut [0u8; 40].as_slice());
        assert!(short.is_err(), "a file that ends early is an error");
        // A type without a layout here.
        assert!(
            Packed::from_reader(Dtype::Q5_K, 256, 176, &mut [0u8; 176].as_slice())
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn decoding_follows_the_gguf_layouts() {
        // Q4_1: low nibbles are weights 0..16, high nibbles 16..32.
        let mut qs = vec![0u8; 16];
        qs[0] = 0x52; // weight 0 = 2, weight 16 = 5
        let p = Packed::q4_1(32, vec![0.5], vec![-1.0], qs);
        let mut row = [0f32; 32];
        p.decode_row(0, &mut row);
        assert_eq!(
            (row[0], row[16], row[1]),
            (2.0 * 0.5 - 1.0, 5.0 * 0.5 - 1.0, -1.0)
        );
        let mut q8 = vec![0i8; 32];
        q8[3] = -4;
        let p = Packed::q8_0(32, vec![0.25], q8);
        p.decode_row(0, &mut row);
        assert_eq!((row[3], row[0]), (-1.0, 0.0));
        // Q5_0: bit j of qh is weight j's fifth bit; weights are q - 16.
        let mut qs = vec![0u8; 16];
        qs[0] = 0x52;
        let p = Packed::q5_0(32, vec![0.5], vec![1 | 1 << 17], qs);
        p.decode_row(0, &mut row);
        assert_eq!(
            (row[0], row[16], row[1], row[17]),
            ((18.0 - 16.0) * 0.5, (5.0 - 16.0) * 0.5, -8.0, 0.0)
        );
    }
}
