//! Weight matrices kept in their GGUF blocks (Q4_1, Q8_0) for the steps
//! that are bound by memory bandwidth: decoding a handful of tokens reads
//! every weight once per step, and a Q4_1 block is 20 bytes for 32 weights
//! where f32 is 128.
//!
//! **Same numbers.** A block is decoded in registers with exactly the
//! operations as the reference dequantizer ([`crate::quant`]: `d * q + m`
//! for Q4_1, `q * d` for Q8_0: one IEEE multiply, then one add), so every
//! weight equals its decoded f32 value bit for bit (tested below against
//! [`Dtype::decode`](crate::quant::Dtype::decode)). The products are then
//! accumulated in the same 16 lanes, in the same order and with the same
//! final reduction as [`kernels::matmul`](crate::kernels::matmul): a packed
//! step gives bit-identical outputs to an f32 step, whichever ISA runs it.

use crate::kernels::{Isa, LANES};

/// Weights per GGUF block (Q4_1 and Q8_0).
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
    /// 8-bit signed values with a scale per block.
    Q8_0,
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
    /// Each block's scale (f16 widened to f32, exactly).
    d: Vec<f32>,
    /// Each block's minimum (Q4_1; empty for Q8_0).
    m: Vec<f32>,
    /// Q4_1: 16 bytes a block (low nibbles = weights 0..16, high = 16..32);
    /// Q8_0: 32 signed bytes a block.
    qs: Vec<u8>,
}

fn f16(lo: u8, hi: u8) -> f32 {
    half::f16::from_bits(u16::from_le_bytes([lo, hi])).to_f32()
}

impl Packed {
    /// Splits raw GGUF blocks of `format` (whole rows of `k`) into the
    /// scales, minimums and values the kernels read; `None` when `k` is not
    /// whole blocks or `raw` not whole rows.
    pub fn from_blocks(format: Format, k: usize, raw: &[u8]) -> Option<Packed> {
        let size = match format {
            Format::Q4_1 => 20,
            Format::Q8_0 => 34,
        };
        let per_row = k / BLOCK * size;
        if !k.is_multiple_of(BLOCK) || k == 0 || !raw.len().is_multiple_of(per_row) {
            return None;
        }
        let blocks = raw.len() / size;
        let mut p = Packed {
            format,
            k,
            rows: raw.len() / per_row,
            d: Vec::with_capacity(blocks),
            m: Vec::new(),
            qs: Vec::with_capacity(blocks * if format == Format::Q4_1 { 16 } else { 32 }),
        };
        for b in raw.chunks_exact(size) {
            p.d.push(f16(b[0], b[1]));
            if format == Format::Q4_1 {
                p.m.push(f16(b[2], b[3]));
                p.qs.extend_from_slice(&b[4..20]);
            } else {
                p.qs.extend_from_slice(&b[2..34]);
            }
        }
        Some(p)
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
        self.qs.len() + 4 * (self.d.len() + self.m.len())
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
            qs: qs.into_iter().map(|v| v as u8).collect(),
        }
    }
}

/// Block `blk` as 32 f32 weights (candle's dequantisation, operation for operation).
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
        Format::Q8_0 => {
            let qs = &p.qs[blk * BLOCK..blk * BLOCK + BLOCK];
            for j in 0..BLOCK {
                out[j] = (qs[j] as i8) as f32 * d;
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
            Format::Q8_0 => {
                let src = p.qs.as_ptr().add(blk * BLOCK + off);
                let q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(src as *const __m128i));
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
        vec![Packed::q4_1(k, d.clone(), m, q4), Packed::q8_0(k, d, q8)]
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
    }
}
