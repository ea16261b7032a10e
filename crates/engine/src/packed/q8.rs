//! Products of quantized weights with activations quantized to 8 bits, as
//! llama.cpp computes them: the weights' blocks are multiplied as small
//! integers, exactly, and only each block's sums are scaled in f32. A
//! block then costs a few integer instructions instead of 32 decoded f32
//! weights, so a decode step runs at the speed memory delivers the blocks.
//!
//! **The operations** (every path, ISA, batch and thread count performs
//! exactly these, so the outputs are the same bits):
//!
//! 1. Each row of `x` is quantized in 32-value blocks ([`Q8Rows`]): with
//!    `amax` the largest `|x_i|` of the block, `d = amax / 127` and
//!    `q_i = round_ties_even(x_i · (127 / amax))`, an integer in
//!    −127..=127 (`d = 0`, `q = 0` for a block of zeros; `d = NaN` when
//!    the block holds a NaN or an infinity, so it reaches the output).
//!    The block also keeps `c = d · S`, `S = Σ q_i` (exact).
//! 2. A weight block's 32 weights are small integers `w_j` with f32 scales
//!    from [`Packed::scales`]: `w_j = q_j − o` (Q8_0 `o = 0`, Q4_0 8, Q5_0
//!    16, Q6_K 32) with scale `ds` (Q6_K: one for weights 0..16, one for
//!    16..32), or, for the types with a minimum (Q4_1, Q5_1, Q4_K, Q5_K),
//!    `w_j = q_j` with scale `ds` and minimum `ms`.
//! 3. Lane `l` of 8 sums weights `4l..4l + 4`: `P_l = Σ w_j · q_j`, exact
//!    in `i32`. The block adds `acc_l = fma(P_l, ds · d, acc_l)` (Q6_K:
//!    lanes 0..4 the first scale, 4..8 the second).
//! 4. For the types with a minimum, the minimum's share `Σ_j ms · d · q_j`
//!    of a block `b` is added to lane `b mod 16` of 16 more:
//!    `m_i = fma(ms, c, m_i)`.
//! 5. Blocks in row order; the row's output is `reduce8(acc)`, plus
//!    `reduce8(m_l + m_{l+8})` for the types with a minimum, where
//!    [`reduce8`] adds `(a₀+a₄ + a₂+a₆) + (a₁+a₅ + a₃+a₇)`.
//!
//! Against the f32 reference (exactly decoded weights, f32 activations)
//! the products differ by the activations' rounding: at most `d / 2` a
//! value, about 0.4% of the block's largest; the tests state the measured
//! agreement of whole models.
//!
//! **The layout** makes the SIMD kernels cheap: rows of `x` are held in
//! pairs, so one register holds lane `l` of two rows side by side and one
//! multiply serves both with the weights' lanes doubled (with AVX-512, a
//! pair's whole block in one 512-bit register).

use super::{Packed, BLOCK, SEG};
use crate::kernels::Isa;
use crate::quant::Dtype;

/// `1.5 · 2²³`: `(v + M) − M` rounds `|v| < 2²²` to the nearest integer,
/// ties to even, in any f32 arithmetic (one instruction each way, where
/// `round_ties_even` may be a library call).
const ROUND: f32 = 12_582_912.0;

/// Rows of activations quantized in 32-value blocks (module docs, step 1).
#[derive(Debug, Clone, Default)]
pub struct Q8Rows {
    /// Row length (whole blocks).
    k: usize,
    /// Number of rows.
    t: usize,
    /// The quantized values. Rows `2p, 2p + 1` are held together, block
    /// by block: 64 bytes a block, whose 4-byte group `2l + h` is lane `l`
    /// (values `4l..4l + 4`) of row `2p + h`. An odd last row follows
    /// alone, 32 bytes a block.
    q: Vec<i8>,
    /// Each block's scale `d`, the two rows of a pair side by side: row
    /// `r`'s block `b` at `2 · (r / 2 · nb + b) + r % 2`.
    d: Vec<f32>,
    /// Each block's `c = d · S`, row after row, and [`SEG`] more entries
    /// so a segment reads one whole register.
    c: Vec<f32>,
}

impl Q8Rows {
    /// The `t` rows of `k` values of `x` quantized (`k` whole blocks).
    pub fn quantize(x: &[f32], t: usize, k: usize) -> Q8Rows {
        assert!(k.is_multiple_of(BLOCK) && x.len() >= t * k);
        let nb = k / BLOCK;
        let mut r = Q8Rows {
            k,
            t,
            q: vec![0; t * k],
            d: vec![0.0; 2 * t.div_ceil(2) * nb],
            c: vec![0.0; t * nb + SEG],
        };
        let mut qs = [0i8; BLOCK];
        for (at, xs) in x[..t * k].chunks_exact(BLOCK).enumerate() {
            let (row, b) = (at / nb, at % nb);
            let (mut amax, mut finite) = (0f32, true);
            for v in xs {
                amax = amax.max(v.abs());
                finite &= v.is_finite();
            }
            let (d, id) = match (finite, amax == 0.0) {
                (false, _) => (f32::NAN, 0.0),
                (true, true) => (0.0, 0.0),
                (true, false) => (amax / 127.0, 127.0 / amax),
            };
            for (q, &v) in qs.iter_mut().zip(xs) {
                *q = ((v * id + ROUND) - ROUND) as i8;
            }
            let at_d = r.d_at(row, b);
            r.d[at_d] = d;
            r.c[at] = d * qs.iter().map(|&q| q as i32).sum::<i32>() as f32;
            for (l, lane) in qs.chunks_exact(4).enumerate() {
                let at = r.lane(row, b, l);
                r.q[at..at + 4].copy_from_slice(lane);
            }
        }
        r
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.t
    }

    /// Where lane `l` (values `4l..4l + 4`) of row `r`'s block `b` starts
    /// in `q`.
    fn lane(&self, r: usize, b: usize, l: usize) -> usize {
        let nb = self.k / BLOCK;
        match r < (self.t & !1) {
            true => 64 * (r / 2 * nb + b) + 4 * (2 * l + r % 2),
            false => self.single(b) + 4 * l,
        }
    }

    /// Where value `j` of row `r`'s block `b` is held in `q`.
    fn at(&self, r: usize, b: usize, j: usize) -> usize {
        self.lane(r, b, j / 4) + j % 4
    }

    /// Where the odd last row's block `b` starts in `q`.
    fn single(&self, b: usize) -> usize {
        (self.t & !1) * self.k + b * BLOCK
    }

    /// Where row `r`'s block `b` has its scale in `d`.
    fn d_at(&self, r: usize, b: usize) -> usize {
        2 * (r / 2 * (self.k / BLOCK) + b) + r % 2
    }

    /// Block `b`'s scale `d` in row `r`.
    fn d(&self, r: usize, b: usize) -> f32 {
        self.d[self.d_at(r, b)]
    }
}

/// Whether `dtype`'s weights have a minimum (module docs, step 2).
fn has_min(dtype: Dtype) -> bool {
    matches!(dtype, Dtype::Q4_1 | Dtype::Q5_1 | Dtype::Q4_K | Dtype::Q5_K)
}

/// The integer offset `o` of `dtype`'s weights (module docs, step 2).
fn offset(dtype: Dtype) -> i32 {
    match dtype {
        Dtype::Q4_0 => 8,
        Dtype::Q5_0 => 16,
        Dtype::Q6_K => 32,
        _ => 0,
    }
}

/// The 8 lanes' sum, in the fixed order of the module docs (step 5).
#[inline(always)]
pub fn reduce8(a: &[f32; 8]) -> f32 {
    let s: [f32; 4] = std::array::from_fn(|j| a[j] + a[j + 4]);
    let u = [s[0] + s[2], s[1] + s[3]];
    u[0] + u[1]
}

/// The minimum lanes' sum (module docs, step 5).
#[inline(always)]
fn reduce16(m: &[f32; 16]) -> f32 {
    reduce8(&std::array::from_fn(|l| m[l] + m[l + 8]))
}

/// Block `g`'s integer weights `w_j` (module docs, step 2).
fn weights(p: &Packed, g: usize) -> [i32; BLOCK] {
    if p.dtype == Dtype::Q8_0 {
        return std::array::from_fn(|j| p.qs[g * BLOCK + j] as i8 as i32);
    }
    let qs = &p.qs[g * 16..g * 16 + 16];
    let bit = |word: u32, j: usize| ((word >> j) & 1) as i32;
    let o = offset(p.dtype);
    std::array::from_fn(|j| {
        let nib = match j < 16 {
            true => qs[j] & 0x0F,
            false => qs[j - 16] >> 4,
        } as i32;
        let high = match p.dtype {
            Dtype::Q5_0 | Dtype::Q5_1 | Dtype::Q5_K => bit(p.qh[g], j) << 4,
            Dtype::Q6_K => bit(p.qh[2 * g], j) << 4 | bit(p.qh[2 * g + 1], j) << 5,
            _ => 0,
        };
        (nib | high) - o
    })
}

/// Rows `n0..n1` of `out = x · wᵀ` for `TT` rows of `a` from `t0`,
/// portable (the module docs' operations, one by one).
///
/// # Safety
/// `t0 + TT <= a.rows()`, `n0..n1` are rows of `p`, and `out` covers
/// `out[t * ldo + n]` for `t < TT` and those rows.
unsafe fn rows_portable<const TT: usize>(
    a: &Q8Rows,
    t0: usize,
    p: &Packed,
    (n0, n1): (usize, usize),
    out: *mut f32,
    ldo: usize,
) {
    let nb = p.k / BLOCK;
    let (mut ds, mut ms) = ([0f32; 2 * SEG], [0f32; SEG]);
    let min = has_min(p.dtype);
    for n in n0..n1 {
        let mut acc = [[0f32; 8]; TT];
        let mut macc = [[0f32; 16]; TT];
        for s in (0..nb).step_by(SEG) {
            let cnt = (nb - s).min(SEG);
            p.scales(n * nb + s, cnt, &mut ds, &mut ms);
            for i in 0..cnt {
                let b = s + i;
                let w = weights(p, n * nb + b);
                for t in 0..TT {
                    let r = t0 + t;
                    let d = a.d(r, b);
                    for (l, acc) in acc[t].iter_mut().enumerate() {
                        let dot: i32 = (4 * l..4 * l + 4)
                            .map(|j| w[j] * a.q[a.at(r, b, j)] as i32)
                            .sum();
                        let scale = match p.dtype {
                            Dtype::Q6_K => ds[2 * i + l / 4],
                            _ => ds[i],
                        };
                        *acc = (dot as f32).mul_add(scale * d, *acc);
                    }
                    if min {
                        macc[t][i] = ms[i].mul_add(a.c[r * nb + b], macc[t][i]);
                    }
                }
            }
        }
        for t in 0..TT {
            let mut o = reduce8(&acc[t]);
            if min {
                o += reduce16(&macc[t]);
            }
            *out.add(t * ldo + n) = o;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! The module's operations in AVX2 and AVX-512 VNNI registers: the
    //! integer lanes are exact, so `vpdpbusd` and AVX2's
    //! `vpmaddubsw` + `vpmaddwd` give the same sums (every pair's sum fits
    //! in 16 bits: |w| ≤ 128, |q| ≤ 127).
    use super::*;
    use std::arch::x86_64::*;

    /// Bytes `j` of `q` plus `v` where bit `j` of `word` is set (AVX2).
    #[inline(always)]
    unsafe fn add_bits_avx2(q: __m256i, word: u32, v: i8) -> __m256i {
        // Byte j holds byte j / 8 of the word; the mask keeps bit j % 8.
        let spread = _mm256_shuffle_epi8(
            _mm256_set1_epi32(word as i32),
            _mm256_set_epi64x(
                0x0303030303030303,
                0x0202020202020202,
                0x0101010101010101,
                0,
            ),
        );
        let bit = _mm256_set1_epi64x(0x8040201008040201u64 as i64);
        let set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
        _mm256_add_epi8(q, _mm256_and_si256(set, _mm256_set1_epi8(v)))
    }

    /// As [`add_bits_avx2`] with an AVX-512 byte mask.
    #[inline(always)]
    unsafe fn add_bits_vnni(q: __m256i, word: u32, v: i8) -> __m256i {
        _mm256_mask_add_epi8(q, word as __mmask32, q, _mm256_set1_epi8(v))
    }

    /// The 8 lanes' sums of 4 products of unsigned `u` and signed `s`.
    #[inline(always)]
    unsafe fn dot_avx2(u: __m256i, s: __m256i) -> __m256i {
        _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1))
    }

    /// As [`dot_avx2`], one `vpdpbusd`.
    #[inline(always)]
    unsafe fn dot_vnni(u: __m256i, s: __m256i) -> __m256i {
        _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s)
    }

    /// How far ahead the Q8_0 kernel asks memory for its blocks: this
    /// many bytes of `qs` (4 segments). Measured with `packed_speed`, 2
    /// threads, a 145 MB Q8_0 head: 19–24 GB/s without, 28–30 with. The
    /// 4- to 6-bit types ran slower with it (Q4_K 10.6 to 6.5 GB/s), so
    /// they leave it to the hardware.
    const AHEAD: usize = 2048;

    /// Asks for Q8_0 blocks `g..g + SEG` (bytes and scales). A task's
    /// rows are a short stream (64 rows), which the hardware prefetcher
    /// ramps up to late; this keeps several segments' loads in flight. (A
    /// hint: no fault past the end.)
    #[inline(always)]
    unsafe fn prefetch_q8_0(p: &Packed, g: usize) {
        let line = |ptr: *const u8| _mm_prefetch::<_MM_HINT_T0>(ptr as *const i8);
        let base = p.qs.as_ptr().wrapping_add(g * BLOCK);
        for off in (0..SEG * BLOCK).step_by(64) {
            line(base.wrapping_add(off));
        }
        line(p.d.as_ptr().wrapping_add(g) as *const u8);
    }

    /// The 8 lanes' sum as [`reduce8`] adds them.
    #[inline(always)]
    unsafe fn reduce(acc: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
        let u = _mm_add_ps(s, _mm_movehl_ps(s, s));
        _mm_cvtss_f32(_mm_add_ss(u, _mm_shuffle_ps(u, u, 1)))
    }

    /// A pair's two outputs as [`reduce8`] adds them, from its lanes
    /// `0..4` (`lo`) and `4..8` (`hi`), the rows alternating.
    #[inline(always)]
    unsafe fn reduce_pair(lo: __m256, hi: __m256) -> [f32; 2] {
        let s = _mm256_add_ps(lo, hi);
        let u = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
        let v = _mm_add_ps(u, _mm_movehl_ps(u, u));
        [_mm_cvtss_f32(v), _mm_cvtss_f32(_mm_shuffle_ps(v, v, 1))]
    }

    macro_rules! kernel {
        ($name:ident, $features:literal, $add_bits:ident, $dot:ident, $wide:literal) => {
            /// [`rows_portable`] in SIMD registers (module docs).
            ///
            /// # Safety
            /// The CPU has the features enabled here (the caller detected
            /// them); as [`rows_portable`]; `t0` is even.
            #[target_feature(enable = $features)]
            pub unsafe fn $name<const TT: usize>(
                a: &Q8Rows,
                t0: usize,
                p: &Packed,
                (n0, n1): (usize, usize),
                out: *mut f32,
                ldo: usize,
            ) {
                let nb = p.k / BLOCK;
                let (mut ds, mut ms) = ([0f32; 2 * SEG], [0f32; SEG]);
                let (dtype, min) = (p.dtype, has_min(p.dtype));
                let signed = !min;
                let o = _mm256_set1_epi8(offset(dtype) as i8);
                let low = _mm_set1_epi8(0x0F);
                // Lanes 0..4 and 4..8 of a block, each twice.
                let dup = [
                    _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3),
                    _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7),
                ];
                debug_assert!(t0 % 2 == 0 && (TT % 2 == 0 || t0 + TT == a.t));
                let pairs = TT / 2;
                let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
                for n in n0..n1 {
                    // Per pair, lanes 0..4 and 4..8 of both rows; the odd
                    // last row alone; and the minimum lanes 0..8, 8..16.
                    let mut acc = [[_mm256_setzero_ps(); 2]; 4];
                    // `$wide`: each pair's lanes 0..4 and 4..8 in one
                    // 512-bit register instead (the same lanes).
                    let mut wide: [__m512; 4] = std::mem::zeroed();
                    let mut one = _mm256_setzero_ps();
                    let mut macc = [[_mm256_setzero_ps(); 2]; TT];
                    for s in (0..nb).step_by(SEG) {
                        let cnt = (nb - s).min(SEG);
                        if dtype == Dtype::Q8_0 {
                            prefetch_q8_0(p, n * nb + s + AHEAD / BLOCK);
                        }
                        super::super::x86::scales256(p, n * nb + s, &mut ds, &mut ms);
                        if min {
                            for (t, m) in macc.iter_mut().enumerate() {
                                let c = a.c.as_ptr().add((t0 + t) * nb + s);
                                for (h, m) in m.iter_mut().enumerate() {
                                    let live = _mm256_cmpgt_epi32(
                                        _mm256_set1_epi32(cnt as i32 - 8 * h as i32),
                                        lanes,
                                    );
                                    let f = _mm256_fmadd_ps(
                                        _mm256_loadu_ps(ms.as_ptr().add(8 * h)),
                                        _mm256_loadu_ps(c.add(8 * h)),
                                        *m,
                                    );
                                    *m = _mm256_blendv_ps(*m, f, _mm256_castsi256_ps(live));
                                }
                            }
                        }
                        for i in 0..cnt {
                            let (b, g) = (s + i, n * nb + s + i);
                            // The block's weights as bytes: q_j (minimum
                            // types) or w_j = q_j − o.
                            let w = match dtype {
                                Dtype::Q8_0 => _mm256_loadu_si256(
                                    p.qs.as_ptr().add(g * BLOCK) as *const __m256i
                                ),
                                _ => {
                                    let v = _mm_loadu_si128(
                                        p.qs.as_ptr().add(g * 16) as *const __m128i
                                    );
                                    let mut q = _mm256_set_m128i(
                                        _mm_and_si128(_mm_srli_epi16(v, 4), low),
                                        _mm_and_si128(v, low),
                                    );
                                    match dtype {
                                        Dtype::Q5_0 | Dtype::Q5_1 | Dtype::Q5_K => {
                                            q = $add_bits(q, *p.qh.get_unchecked(g), 16)
                                        }
                                        Dtype::Q6_K => {
                                            q = $add_bits(q, *p.qh.get_unchecked(2 * g), 16);
                                            q = $add_bits(q, *p.qh.get_unchecked(2 * g + 1), 32);
                                        }
                                        _ => {}
                                    }
                                    _mm256_sub_epi8(q, o)
                                }
                            };
                            // Signed weights multiply as |w_j| · ±q_j.
                            let u = if signed { _mm256_abs_epi8(w) } else { w };
                            // The scales of lanes 0..4 and 4..8.
                            let sc = match dtype {
                                Dtype::Q6_K => [2 * i, 2 * i + 1],
                                _ => [i, i],
                            }
                            .map(|j| _mm256_set1_ps(*ds.get_unchecked(j)));
                            if $wide && pairs > 0 {
                                let twice = _mm512_setr_epi32(
                                    0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7,
                                );
                                let u2 = _mm512_permutexvar_epi32(twice, _mm512_castsi256_si512(u));
                                let w2 = _mm512_permutexvar_epi32(twice, _mm512_castsi256_si512(w));
                                // Negative weights negate the activation.
                                let neg = _mm512_movepi8_mask(w2);
                                let sc = _mm512_castpd_ps(_mm512_insertf64x4(
                                    _mm512_castpd256_pd512(_mm256_castps_pd(sc[0])),
                                    _mm256_castps_pd(sc[1]),
                                    1,
                                ));
                                for (pp, acc) in wide.iter_mut().enumerate().take(pairs) {
                                    let at = (t0 / 2 + pp) * nb + b;
                                    let d = _mm512_castpd_ps(_mm512_set1_pd(
                                        (a.d.as_ptr().add(2 * at) as *const f64).read_unaligned(),
                                    ));
                                    let q =
                                        _mm512_loadu_si512(a.q.as_ptr().add(64 * at) as *const _);
                                    let q = if signed {
                                        _mm512_mask_sub_epi8(q, neg, _mm512_setzero_si512(), q)
                                    } else {
                                        q
                                    };
                                    let dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u2, q);
                                    let dot = _mm512_cvtepi32_ps(dot);
                                    *acc = _mm512_fmadd_ps(dot, _mm512_mul_ps(sc, d), *acc);
                                }
                            } else if pairs > 0 {
                                let u2 = dup.map(|x| _mm256_permutevar8x32_epi32(u, x));
                                let w2 = dup.map(|x| _mm256_permutevar8x32_epi32(w, x));
                                for (pp, acc) in acc.iter_mut().enumerate().take(pairs) {
                                    let at = (t0 / 2 + pp) * nb + b;
                                    let d = _mm256_castpd_ps(_mm256_set1_pd(
                                        (a.d.as_ptr().add(2 * at) as *const f64).read_unaligned(),
                                    ));
                                    let q = a.q.as_ptr().add(64 * at);
                                    for (h, acc) in acc.iter_mut().enumerate() {
                                        let q = _mm256_loadu_si256(q.add(32 * h) as *const __m256i);
                                        let q = if signed {
                                            _mm256_sign_epi8(q, w2[h])
                                        } else {
                                            q
                                        };
                                        let dot = _mm256_cvtepi32_ps($dot(u2[h], q));
                                        *acc = _mm256_fmadd_ps(dot, _mm256_mul_ps(sc[h], d), *acc);
                                    }
                                }
                            }
                            if TT % 2 == 1 {
                                let r = t0 + TT - 1;
                                let q = _mm256_loadu_si256(
                                    a.q.as_ptr().add(a.single(b)) as *const __m256i
                                );
                                let q = if signed { _mm256_sign_epi8(q, w) } else { q };
                                let d = _mm256_set1_ps(a.d(r, b));
                                let scale = match dtype {
                                    Dtype::Q6_K => _mm256_permute2f128_ps(
                                        _mm256_mul_ps(sc[0], d),
                                        _mm256_mul_ps(sc[1], d),
                                        0x20,
                                    ),
                                    _ => _mm256_mul_ps(sc[0], d),
                                };
                                let dot = _mm256_cvtepi32_ps($dot(u, q));
                                one = _mm256_fmadd_ps(dot, scale, one);
                            }
                        }
                    }
                    let share = |t: usize| match min {
                        true => reduce(_mm256_add_ps(macc[t][0], macc[t][1])),
                        false => 0.0,
                    };
                    if $wide {
                        for (acc, w) in acc.iter_mut().zip(&wide).take(pairs) {
                            *acc = [
                                _mm512_castps512_ps256(*w),
                                _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(*w), 1)),
                            ];
                        }
                    }
                    for (pp, acc) in acc.iter().enumerate().take(pairs) {
                        let [x, y] = reduce_pair(acc[0], acc[1]);
                        let (t, u) = (2 * pp, 2 * pp + 1);
                        *out.add(t * ldo + n) = if min { x + share(t) } else { x };
                        *out.add(u * ldo + n) = if min { y + share(u) } else { y };
                    }
                    if TT % 2 == 1 {
                        let (t, x) = (TT - 1, reduce(one));
                        *out.add(t * ldo + n) = if min { x + share(t) } else { x };
                    }
                }
            }
        };
    }

    kernel!(rows_avx2, "avx2,fma,f16c", add_bits_avx2, dot_avx2, false);
    kernel!(
        rows_vnni,
        "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni",
        add_bits_vnni,
        dot_vnni,
        true
    );
}

/// The kernel variants (all give the same bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// Scalar code.
    Portable,
    /// AVX2 with FMA and F16C.
    Avx2,
    /// AVX-512 with byte masks and VNNI dots (256-bit registers).
    Vnni,
}

impl Variant {
    /// The fastest variant this CPU runs within `isa`'s features.
    pub fn for_isa(isa: Isa) -> Variant {
        #[cfg(target_arch = "x86_64")]
        {
            let vnni = std::is_x86_feature_detected!("avx512bw")
                && std::is_x86_feature_detected!("avx512vl")
                && std::is_x86_feature_detected!("avx512vnni");
            match isa {
                Isa::Avx512 if vnni && crate::kernels::has_avx2() => return Variant::Vnni,
                Isa::Avx512 | Isa::Avx2 if crate::kernels::has_avx2() => return Variant::Avx2,
                _ => {}
            }
        }
        let _ = isa;
        Variant::Portable
    }

    /// Every variant this CPU runs.
    pub fn available() -> Vec<Variant> {
        let mut v = vec![Variant::Portable];
        for isa in Isa::available() {
            let best = Variant::for_isa(isa);
            if !v.contains(&best) {
                v.push(best);
            }
        }
        if v.contains(&Variant::Vnni) && !v.contains(&Variant::Avx2) {
            v.push(Variant::Avx2);
        }
        v
    }
}

/// Rows `r` of the output for `TT` rows of `a` from `t0`, on `variant`.
///
/// # Safety
/// As [`rows_portable`]; the variant runs on this CPU.
unsafe fn rows<const TT: usize>(
    variant: Variant,
    a: &Q8Rows,
    t0: usize,
    p: &Packed,
    r: (usize, usize),
    out: *mut f32,
    ldo: usize,
) {
    match variant {
        #[cfg(target_arch = "x86_64")]
        Variant::Vnni => x86::rows_vnni::<TT>(a, t0, p, r, out, ldo),
        #[cfg(target_arch = "x86_64")]
        Variant::Avx2 => x86::rows_avx2::<TT>(a, t0, p, r, out, ldo),
        _ => rows_portable::<TT>(a, t0, p, r, out, ldo),
    }
}

/// Columns `col..col + p.rows` of `out[t × ldo] = x · wᵀ` for every row
/// of `a` (the module docs' operations), in parallel over blocks of
/// weight rows; each task takes the rows of `a` eight at a time, so a
/// block's weights are unpacked once for eight rows.
pub fn matmul(variant: Variant, a: &Q8Rows, p: &Packed, out: &mut [f32], col: usize, ldo: usize) {
    let (t, n) = (a.rows(), p.rows);
    assert!(a.k == p.k && t >= 1);
    assert!(col + n <= ldo && out.len() >= (t - 1) * ldo + col + n);
    // SAFETY: bounds checked above; the variant was detected on this CPU;
    // each task writes columns `col + r` of its own rows `r`.
    crate::kernels::for_row_blocks(n, super::ROWS_PER_TASK, out, |r, ptr| unsafe {
        let ptr = ptr.add(col);
        for t0 in (0..t).step_by(8) {
            let o = ptr.add(t0 * ldo);
            match t - t0 {
                1 => rows::<1>(variant, a, t0, p, r, o, ldo),
                2 => rows::<2>(variant, a, t0, p, r, o, ldo),
                3 => rows::<3>(variant, a, t0, p, r, o, ldo),
                4 => rows::<4>(variant, a, t0, p, r, o, ldo),
                5 => rows::<5>(variant, a, t0, p, r, o, ldo),
                6 => rows::<6>(variant, a, t0, p, r, o, ldo),
                7 => rows::<7>(variant, a, t0, p, r, o, ldo),
                _ => rows::<8>(variant, a, t0, p, r, o, ldo),
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activations_quantize_as_the_module_docs_say() {
        let mut x = vec![0f32; 64];
        // amax 254: d = 2, and q = x / 2 rounded, ties to even.
        x[..6].copy_from_slice(&[254.0, -127.0, 3.0, 1.0, 5.0, -3.0]);
        x[33] = f32::NAN;
        let a = Q8Rows::quantize(&x, 2, 32);
        assert_eq!(a.d(0, 0), 2.0);
        let q: Vec<i8> = (0..7).map(|j| a.q[a.at(0, 0, j)]).collect();
        assert_eq!(q, [127, -64, 2, 0, 2, -2, 0]);
        assert_eq!(a.c[0], 2.0 * (127 - 64 + 2 + 2 - 2) as f32);
        assert!(
            a.d(1, 0).is_nan() && a.c[1].is_nan(),
            "a NaN reaches the output"
        );
        assert_eq!(a.rows(), 2);
        let zero = Q8Rows::quantize(&[0.0; 32], 1, 32);
        assert_eq!((zero.d[0], zero.q[0]), (0.0, 0));
    }

    /// Every held type: each variant, and the rows taken 20 at once or one
    /// by one, give the same bits; and they stay near the f32 product.
    #[test]
    fn every_variant_and_batch_gives_the_same_bits_near_f32() {
        // 24 blocks a row: one whole segment and a partial one.
        let (k, t, rows) = (768, 20, 37);
        let mut g = 5u64;
        let x: Vec<f32> = (0..t * k)
            .map(|_| {
                g = g.wrapping_mul(2862933555777941757).wrapping_add(3037000493);
                ((g >> 40) as f32 / 16_777_216.0 - 0.5) * 2.0
            })
            .collect();
        let all = Q8Rows::quantize(&x, t, k);
        for (i, &dtype) in crate::quant::SUPPORTED_TYPES.iter().enumerate() {
            if !Packed::holds(dtype) {
                continue;
            }
            let raw = crate::matrix::tests::blocks(dtype, rows, k, 40 + i as u64);
            let p = Packed::from_blocks(dtype, k, &raw).unwrap();
            let mut want = vec![0f32; t * rows];
            for r in 0..t {
                let one = Q8Rows::quantize(&x[r * k..(r + 1) * k], 1, k);
                let out = &mut want[r * rows..(r + 1) * rows];
                matmul(Variant::Portable, &one, &p, out, 0, rows);
            }
            for v in Variant::available() {
                let mut got = vec![0f32; t * rows];
                matmul(v, &all, &p, &mut got, 0, rows);
                let same = want
                    .iter()
                    .zip(&got)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{dtype:?} {v:?}");
            }
            let mut exact = vec![0f32; t * rows];
            let w: Vec<f32> = (0..rows)
                .flat_map(|r| {
                    let mut row = vec![0f32; k];
                    p.decode_row(r, &mut row);
                    row
                })
                .collect();
            crate::kernels::matmul(Isa::Portable, &x, t, k, &w, rows, &mut exact);
            let scale = exact.iter().fold(0f32, |m, v| m.max(v.abs()));
            let diff = exact
                .iter()
                .zip(&want)
                .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
            assert!(diff / scale < 1e-2, "{dtype:?}: {}", diff / scale);
        }
    }

    #[test]
    fn reduce8_adds_in_the_stated_order() {
        let a = [1e8, 1.0, -1e8, 1.0, 1.0, 1.0, 1.0, 1.0];
        // (1e8 + 1) + (-1e8 + 1) = 0 in f32 (1e8 + 1 rounds to 1e8), then
        // the odd lanes' 4.
        assert_eq!(reduce8(&a), 4.0);
    }
}
