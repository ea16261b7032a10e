//! Batch-invariant CPU kernels.
//!
//! Every dot product is accumulated in [`LANES`] = 16 interleaved partial
//! sums (element `j` goes to lane `j % 16`, in order of `j`) with fused
//! multiply-adds, and the lanes are then summed in one fixed tree. The
//! result of one output element therefore never depends on how many rows
//! are in the batch, how the work is tiled or split across threads, or
//! whether the CPU runs 16 lanes as one AVX-512 register, two AVX2
//! registers or scalar code: each variant performs the same operations in
//! the same order, and an FMA is exact-rounded everywhere. Only the tile
//! shapes (how many outputs are computed together) differ per CPU.

use rayon::prelude::*;

use crate::search::Element;

/// Partial sums per dot product.
pub const LANES: usize = 16;

/// Output rows of the weight matrix per parallel task.
const ROWS_PER_TASK: usize = 32;

/// The fixed reduction of 16 partial sums, for the other kernels
/// ([`crate::packed`]) that must sum the same way.
#[inline(always)]
pub(crate) fn reduce16(a: &[f32; LANES]) -> f32 {
    reduce(a)
}

/// The fixed reduction of 16 partial sums.
#[inline(always)]
fn reduce(a: &[f32; LANES]) -> f32 {
    let mut b = [0f32; 8];
    for l in 0..8 {
        b[l] = a[l] + a[l + 8];
    }
    let c = [b[0] + b[4], b[1] + b[5], b[2] + b[6], b[3] + b[7]];
    (c[0] + c[2]) + (c[1] + c[3])
}

/// `TT` rows of `x` against `NN` rows of `w` (both `k` long):
/// `out[t * ldo + n] = dot(x[t], w[n])`.
///
/// # Safety
/// The pointers must cover the rows and `out` the outputs named.
#[inline(always)]
unsafe fn tile<const TT: usize, const NN: usize>(
    x: *const f32,
    ldx: usize,
    w: *const f32,
    ldw: usize,
    k: usize,
    out: *mut f32,
    ldo: usize,
) {
    let mut acc = [[[0f32; LANES]; NN]; TT];
    let full = k - k % LANES;
    let mut i = 0;
    while i < full {
        let mut wv = [[0f32; LANES]; NN];
        for (n, wn) in wv.iter_mut().enumerate() {
            *wn = std::ptr::read_unaligned(w.add(n * ldw + i) as *const [f32; LANES]);
        }
        for (t, acc_t) in acc.iter_mut().enumerate() {
            let xv = std::ptr::read_unaligned(x.add(t * ldx + i) as *const [f32; LANES]);
            for (acc_tn, wn) in acc_t.iter_mut().zip(wv.iter()) {
                for l in 0..LANES {
                    acc_tn[l] = xv[l].mul_add(wn[l], acc_tn[l]);
                }
            }
        }
        i += LANES;
    }
    for j in full..k {
        let l = j - full;
        for (t, acc_t) in acc.iter_mut().enumerate() {
            for (n, acc_tn) in acc_t.iter_mut().enumerate() {
                acc_tn[l] = (*x.add(t * ldx + j)).mul_add(*w.add(n * ldw + j), acc_tn[l]);
            }
        }
    }
    for (t, acc_t) in acc.iter().enumerate() {
        for (n, acc_tn) in acc_t.iter().enumerate() {
            *out.add(t * ldo + n) = reduce(acc_tn);
        }
    }
}

/// Rows `n0..n1` of `out = x · wᵀ` for all `t` rows of `x`, tiled `TT × NN`.
///
/// # Safety
/// `x` holds `t × k` values, `w` holds rows `n0..n1` of `k` values, and
/// `out` covers `out[r * ldo + n]` for every row `r < t` and `n` in `n0..n1`.
#[inline(always)]
unsafe fn matmul_rows<const TT: usize, const NN: usize>(
    x: &[f32],
    t: usize,
    k: usize,
    w: &[f32],
    (n0, n1): (usize, usize),
    out: *mut f32,
    ldo: usize,
) {
    let mut r = 0;
    while r < t {
        let tt = if r + TT <= t { TT } else { 1 };
        let mut n = n0;
        while n < n1 {
            let nn = if n + NN <= n1 { NN } else { 1 };
            let (xp, wp, op) = (
                x.as_ptr().add(r * k),
                w.as_ptr().add(n * k),
                out.add(r * ldo + n),
            );
            match (tt == TT, nn == NN) {
                (true, true) => tile::<TT, NN>(xp, k, wp, k, k, op, ldo),
                (true, false) => tile::<TT, 1>(xp, k, wp, k, k, op, ldo),
                (false, true) => tile::<1, NN>(xp, k, wp, k, k, op, ldo),
                (false, false) => tile::<1, 1>(xp, k, wp, k, k, op, ldo),
            }
            n += nn;
        }
        r += tt;
    }
}

/// The attention of one query token over keys `0..len` of one sequence's
/// cache, heads `h0..h1`: `out[h - h0] = softmax(q[h]·K[g]ᵀ · scale) · V[g]`,
/// with `g` the key-value head that query head `h` shares (grouped
/// queries). Each head is computed alone, the same way whichever heads are
/// asked for (so heads can run as separate parallel tasks). `dots` (every
/// position's [`dot_body`] of the head's query with its key: `dots(q,
/// keys, offset in a position, kv_dim, out)`) and `axpy` (`o = p·v + o`)
/// are the ISA's versions of [`dots_body`] and [`axpy_body`]. Keys and
/// values are f32 or halves ([`Element`]), each widened exactly before its
/// FMA.
#[inline(always)]
fn attend_with<T: Element>(
    a: &Attend,
    (q, h0, h1): (&[f32], usize, usize),
    (keys, values, len): (&[T], &[T], usize),
    out: &mut [f32],
    dots: impl Fn(&[f32], &[T], usize, usize, &mut [f32]),
    axpy: impl Fn(f32, &[T], &mut [f32]),
) {
    let (hd, kvd) = (a.head_dim, a.kv_dim);
    let group = a.n_head / a.n_kv_head;
    let mut scores = vec![0f32; len];
    for h in h0..h1 {
        let g = h / group;
        let qh = &q[h * hd..(h + 1) * hd];
        let mut max = f32::NEG_INFINITY;
        dots(qh, keys, g * hd, kvd, &mut scores);
        for s in scores.iter_mut() {
            *s *= a.scale;
            max = max.max(*s);
        }
        let mut sum = 0f32;
        for s in scores.iter_mut() {
            *s = (*s - max).exp();
            sum += *s;
        }
        let oh = &mut out[(h - h0) * hd..(h - h0 + 1) * hd];
        oh.fill(0.0);
        for (j, &p) in scores.iter().enumerate() {
            axpy(p, &values[j * kvd + g * hd..j * kvd + (g + 1) * hd], oh);
        }
        let inv = 1.0 / sum;
        for o in oh.iter_mut() {
            *o *= inv;
        }
    }
}

/// `o = p · v + o`, elementwise.
#[inline(always)]
fn axpy_body<T: Element>(p: f32, v: &[T], o: &mut [f32]) {
    for (o, &v) in o.iter_mut().zip(v) {
        *o = p.mul_add(v.widen(), *o);
    }
}

/// `out[j] = dot(q, keys[j · kvd + off..][..q.len()])` for every position
/// `j < out.len()`, one position at a time.
#[inline(always)]
fn dots_each<T: Element>(
    q: &[f32],
    keys: &[T],
    (off, kvd): (usize, usize),
    out: &mut [f32],
    dot: impl Fn(&[f32], &[T]) -> f32,
) {
    for (j, o) in out.iter_mut().enumerate() {
        *o = dot(q, &keys[j * kvd + off..j * kvd + off + q.len()]);
    }
}

/// [`dots_each`] with [`dot_body`].
#[inline(always)]
fn dots_body<T: Element>(q: &[f32], keys: &[T], off: usize, kvd: usize, out: &mut [f32]) {
    dots_each(q, keys, (off, kvd), out, dot_body)
}

/// A dot product in the fixed lane order (`b` widened to f32 exactly).
#[inline(always)]
fn dot_body<T: Element>(a: &[f32], b: &[T]) -> f32 {
    let mut acc = [0f32; LANES];
    let full = a.len() - a.len() % LANES;
    let mut i = 0;
    while i < full {
        for l in 0..LANES {
            acc[l] = a[i + l].mul_add(b[i + l].widen(), acc[l]);
        }
        i += LANES;
    }
    for j in full..a.len() {
        acc[j - full] = a[j].mul_add(b[j].widen(), acc[j - full]);
    }
    reduce(&acc)
}

/// Shapes of the attention.
#[derive(Debug, Clone, Copy)]
pub struct Attend {
    /// Query heads.
    pub n_head: usize,
    /// Key-value heads (`n_head` is a multiple).
    pub n_kv_head: usize,
    /// Width of one head.
    pub head_dim: usize,
    /// `n_kv_head * head_dim`: one cached position.
    pub kv_dim: usize,
    /// `1 / sqrt(head_dim)`.
    pub scale: f32,
}

/// The instruction set the kernels are compiled for, picked once per
/// process from what the CPU has. Outputs are the same for every variant.
///
/// The SIMD variants come only from [`Isa::detect`] and [`Isa::available`]:
/// the kernels are safe functions, and handing one an instruction set the
/// CPU lacks would be undefined behaviour, so other crates cannot name them.
///
/// ```compile_fail
/// let _ = ragprobe_engine::kernels::Isa::Avx512;
/// ```
/// ```
/// let _ = ragprobe_engine::kernels::Isa::Portable;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    /// AVX-512F with FMA: 16 lanes in one register, 4 × 4 tiles.
    #[non_exhaustive]
    Avx512,
    /// AVX2 with FMA and F16C: 16 lanes in two registers, 2 × 2 tiles.
    #[non_exhaustive]
    Avx2,
    /// Anything else (the FMAs may be calls into libm: slow, same results).
    Portable,
}

/// Whether this CPU runs the AVX2 variant (AVX2, FMA and F16C: the block
/// kernels widen f16 scales with F16C).
#[cfg(target_arch = "x86_64")]
pub(crate) fn has_avx2() -> bool {
    std::is_x86_feature_detected!("avx2")
        && std::is_x86_feature_detected!("fma")
        && std::is_x86_feature_detected!("f16c")
}

impl Isa {
    /// The best variant this CPU runs.
    pub fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("fma") {
                return Isa::Avx512;
            }
            if has_avx2() {
                return Isa::Avx2;
            }
        }
        Isa::Portable
    }

    /// Every variant this CPU runs, portable first (tests compare them).
    pub fn available() -> Vec<Isa> {
        let mut v = vec![Isa::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if has_avx2() {
                v.push(Isa::Avx2);
            }
            if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("fma") {
                v.push(Isa::Avx512);
            }
        }
        v
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86 {
    //! The same arithmetic as the portable bodies, in explicit SIMD: lane
    //! `l` of the 16 partial sums is lane `l` of one AVX-512 register, or
    //! of the low (l < 8) or high AVX2 register.
    use super::*;
    use std::arch::x86_64::*;

    /// [`reduce`] of the 16 lanes of `a` in registers: the same additions
    /// in the same order (lane `l` + lane `l + 8`, then `+ 4`, then
    /// `(0 + 2) + (1 + 3)`), without a round trip through memory.
    ///
    /// # Safety
    /// The CPU has AVX-512F (the caller detected it).
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(crate) unsafe fn sum512(a: __m512) -> f32 {
        let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1));
        let b = _mm256_add_ps(_mm512_castps512_ps256(a), hi);
        let c = _mm_add_ps(_mm256_castps256_ps128(b), _mm256_extractf128_ps(b, 1));
        let e = _mm_add_ps(c, _mm_movehl_ps(c, c));
        _mm_cvtss_f32(_mm_add_ss(e, _mm_shuffle_ps(e, e, 1)))
    }

    /// The 16 partial sums of a 512-bit register, then the tail and the
    /// fixed reduction.
    ///
    /// # Safety
    /// The CPU has AVX-512F and FMA (the caller detected them).
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    unsafe fn finish512(acc: __m512, tail: impl Fn(&mut [f32; LANES])) -> f32 {
        let mut a = [0f32; LANES];
        _mm512_storeu_ps(a.as_mut_ptr(), acc);
        tail(&mut a);
        reduce(&a)
    }

    /// [`finish512`] for two AVX2 registers (lanes 0..8 and 8..16).
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA (the caller detected them).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn finish256(lo: __m256, hi: __m256, tail: impl Fn(&mut [f32; LANES])) -> f32 {
        let mut a = [0f32; LANES];
        _mm256_storeu_ps(a.as_mut_ptr(), lo);
        _mm256_storeu_ps(a.as_mut_ptr().add(8), hi);
        tail(&mut a);
        reduce(&a)
    }

    /// Element `j >= full` of a dot product, into lane `j - full`.
    ///
    /// # Safety
    /// `x` and `w` are valid for `k` reads and `k - full <= LANES`.
    #[inline(always)]
    unsafe fn tail_of<T: Element>(
        x: *const f32,
        w: *const T,
        full: usize,
        k: usize,
        a: &mut [f32; LANES],
    ) {
        for j in full..k {
            a[j - full] = (*x.add(j)).mul_add((*w.add(j)).widen(), a[j - full]);
        }
    }

    /// 16 values from `p` as f32: loaded, or widened from halves.
    ///
    /// # Safety
    /// The CPU has AVX-512F (and F16C for halves); `p` is valid for 16 reads of `T`.
    #[inline(always)]
    pub(crate) unsafe fn load16<T: Element>(p: *const T) -> __m512 {
        if T::HALF {
            _mm512_cvtph_ps(_mm256_loadu_si256(p.cast()))
        } else {
            _mm512_loadu_ps(p.cast())
        }
    }

    /// 8 values from `p` as f32 (AVX2; halves through F16C).
    ///
    /// # Safety
    /// The CPU has AVX2 (and F16C for halves); `p` is valid for 8 reads of `T`.
    #[inline(always)]
    pub(crate) unsafe fn load8<T: Element>(p: *const T) -> __m256 {
        if T::HALF {
            _mm256_cvtph_ps(_mm_loadu_si128(p.cast()))
        } else {
            _mm256_loadu_ps(p.cast())
        }
    }

    /// One step of a tile: `acc[t][n] += x[t] * w[n]` for the listed
    /// `n` (literal indices, so the accumulators live in registers).
    macro_rules! fma_row {
        ($fma:ident, $acc:ident, $xv:expr, $wv:ident, ($($n:literal)*)) => {
            $( $acc[$n] = $fma($xv, $wv[$n], $acc[$n]); )*
        };
    }

    /// A `TT × NN` tile kernel with AVX-512: `out[t * ldo + n] = dot(x[t], w[n])`.
    macro_rules! tile512 {
        ($name:ident, ($($t:literal)*), $nl:tt, $nn:literal) => {
            /// # Safety
            /// The CPU has AVX-512F and FMA (the caller detected them).
            /// `x` holds the tile's rows and `w` its `NN` rows, each `k` long and
            /// `k` apart; `out` covers `out[t * ldo + n]` for the tile.
            #[inline]
            #[target_feature(enable = "avx512f,fma")]
            unsafe fn $name(x: *const f32, w: *const f32, k: usize, out: *mut f32, ldo: usize) {
                let z = _mm512_setzero_ps();
                let mut acc = [$({ let _ = $t; [z; $nn] }),*];
                let full = k - k % LANES;
                let mut i = 0;
                while i < full {
                    let mut wv = [z; $nn];
                    for (n, wn) in wv.iter_mut().enumerate() {
                        *wn = _mm512_loadu_ps(w.add(n * k + i));
                    }
                    $(
                        let xv = _mm512_loadu_ps(x.add($t * k + i));
                        let row = &mut acc[$t];
                        fma_row!(_mm512_fmadd_ps, row, xv, wv, $nl);
                    )*
                    i += LANES;
                }
                if full == k && acc.len() == 4 && $nn == 4 {
                    // A whole 4 × 4 tile without a tail: all sixteen
                    // reductions at once, the same additions as `reduce`.
                    let mut a = [z; 16];
                    for (t, acc_t) in acc.iter().enumerate() {
                        for (n, v) in acc_t.iter().enumerate() {
                            a[4 * t + n] = *v;
                        }
                    }
                    let mut f = [0f32; 16];
                    _mm512_storeu_ps(f.as_mut_ptr(), reduce_16x16(&a));
                    for t in 0..4 {
                        for n in 0..4 {
                            *out.add(t * ldo + n) = f[4 * n + t];
                        }
                    }
                    return;
                }
                for (t, acc_t) in acc.iter().enumerate() {
                    for (n, a) in acc_t.iter().enumerate() {
                        let (xr, wr) = (x.add(t * k), w.add(n * k));
                        *out.add(t * ldo + n) = finish512(*a, |l| tail_of(xr, wr, full, k, l));
                    }
                }
            }
        };
    }

    /// [`reduce`] of sixteen accumulators `a[i]` at once, by the same
    /// additions in the same tree (lanes l and l + 8, then l and l + 4,
    /// then (0 + 2) + (1 + 3)): lane `4j + m` of the result is the sum of
    /// `a[4m + j]`. Fifteen vector additions instead of sixteen stores and
    /// 240 scalar ones; with k = 384 the scalar reductions took about as
    /// long as the dot products.
    ///
    /// # Safety
    /// The CPU has AVX-512F (the caller detected it).
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn reduce_16x16(a: &[__m512; 16]) -> __m512 {
        // b[p]: lanes 0..8 are a[2p]'s l + (l + 8), lanes 8..16 a[2p + 1]'s.
        let b: [__m512; 8] = std::array::from_fn(|p| {
            let (x, y) = (a[2 * p], a[2 * p + 1]);
            _mm512_add_ps(
                _mm512_shuffle_f32x4::<0x44>(x, y),
                _mm512_shuffle_f32x4::<0xEE>(x, y),
            )
        });
        // c[r]: quarter j holds a[4r + j]'s four sums m + (m + 4).
        let c: [__m512; 4] = std::array::from_fn(|r| {
            let (x, y) = (b[2 * r], b[2 * r + 1]);
            _mm512_add_ps(
                _mm512_shuffle_f32x4::<0x88>(x, y),
                _mm512_shuffle_f32x4::<0xDD>(x, y),
            )
        });
        // d[s]: quarter j holds (0 + 2), (1 + 3) of a[8s + j], then of a[8s + 4 + j].
        let d: [__m512; 2] = std::array::from_fn(|s| {
            let (x, y) = (c[2 * s], c[2 * s + 1]);
            _mm512_add_ps(
                _mm512_shuffle_ps::<0x44>(x, y),
                _mm512_shuffle_ps::<0xEE>(x, y),
            )
        });
        _mm512_add_ps(
            _mm512_shuffle_ps::<0x88>(d[0], d[1]),
            _mm512_shuffle_ps::<0xDD>(d[0], d[1]),
        )
    }
    tile512!(t512_4x4, (0 1 2 3), (0 1 2 3), 4);
    tile512!(t512_4x1, (0 1 2 3), (0), 1);
    tile512!(t512_1x4, (0), (0 1 2 3), 4);
    tile512!(t512_1x1, (0), (0), 1);

    /// Two AVX2 registers as the 16 lanes.
    #[derive(Clone, Copy)]
    struct Pair(__m256, __m256);

    /// `x * w + a` on both halves.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA (the caller detected them).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn fma_pair(x: Pair, w: Pair, a: Pair) -> Pair {
        Pair(
            _mm256_fmadd_ps(x.0, w.0, a.0),
            _mm256_fmadd_ps(x.1, w.1, a.1),
        )
    }

    /// Sixteen values from `p` as a [`Pair`].
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA (the caller detected them). `p` is valid for 16 reads.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn load_pair(p: *const f32) -> Pair {
        Pair(_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8)))
    }

    /// A `TT × NN` tile kernel with AVX2.
    macro_rules! tile256 {
        ($name:ident, ($($t:literal)*), $nl:tt, $nn:literal) => {
            /// # Safety
            /// The CPU has AVX2 and FMA (the caller detected them).
            /// `x` holds the tile's rows and `w` its `NN` rows, each `k` long and
            /// `k` apart; `out` covers `out[t * ldo + n]` for the tile.
            #[inline]
            #[target_feature(enable = "avx2,fma")]
            unsafe fn $name(x: *const f32, w: *const f32, k: usize, out: *mut f32, ldo: usize) {
                let z = Pair(_mm256_setzero_ps(), _mm256_setzero_ps());
                let mut acc = [$({ let _ = $t; [z; $nn] }),*];
                let full = k - k % LANES;
                let mut i = 0;
                while i < full {
                    let mut wv = [z; $nn];
                    for (n, wn) in wv.iter_mut().enumerate() {
                        *wn = load_pair(w.add(n * k + i));
                    }
                    $(
                        let xv = load_pair(x.add($t * k + i));
                        let row = &mut acc[$t];
                        fma_row!(fma_pair, row, xv, wv, $nl);
                    )*
                    i += LANES;
                }
                for (t, acc_t) in acc.iter().enumerate() {
                    for (n, a) in acc_t.iter().enumerate() {
                        let (xr, wr) = (x.add(t * k), w.add(n * k));
                        *out.add(t * ldo + n) = finish256(a.0, a.1, |l| tail_of(xr, wr, full, k, l));
                    }
                }
            }
        };
    }
    tile256!(t256_2x2, (0 1), (0 1), 2);
    tile256!(t256_2x1, (0 1), (0), 1);
    tile256!(t256_1x2, (0), (0 1), 2);
    tile256!(t256_1x1, (0), (0), 1);

    macro_rules! rows {
        ($name:ident, $feat:literal, $tt:literal, $nn:literal, $full:ident, $tail_n:ident, $tail_t:ident, $one:ident) => {
            /// Rows `n0..n1` of `out = x · wᵀ`, tiled.
            ///
            /// # Safety
            /// The CPU has the macro's target features (the caller detected them);
            /// `x` holds `t × k` values, `w` rows `n0..n1` of `k` values, and `out`
            /// covers `out[r * ldo + n]` for every row `r < t` and `n` in `n0..n1`.
            #[target_feature(enable = $feat)]
            pub unsafe fn $name(
                x: &[f32],
                t: usize,
                k: usize,
                w: &[f32],
                (n0, n1): (usize, usize),
                out: *mut f32,
                ldo: usize,
            ) {
                let mut r = 0;
                while r < t {
                    let full_t = r + $tt <= t;
                    let mut n = n0;
                    while n < n1 {
                        let full_n = n + $nn <= n1;
                        let (xp, wp, op) = (
                            x.as_ptr().add(r * k),
                            w.as_ptr().add(n * k),
                            out.add(r * ldo + n),
                        );
                        match (full_t, full_n) {
                            (true, true) => $full(xp, wp, k, op, ldo),
                            (true, false) => $tail_n(xp, wp, k, op, ldo),
                            (false, true) => $tail_t(xp, wp, k, op, ldo),
                            (false, false) => $one(xp, wp, k, op, ldo),
                        }
                        n += if full_n { $nn } else { 1 };
                    }
                    r += if full_t { $tt } else { 1 };
                }
            }
        };
    }
    rows!(
        rows_avx512,
        "avx512f,fma",
        4,
        4,
        t512_4x4,
        t512_4x1,
        t512_1x4,
        t512_1x1
    );
    rows!(rows_avx2, "avx2,fma", 2, 2, t256_2x2, t256_2x1, t256_1x2, t256_1x1);

    /// `dot(a, b)` in the fixed lane order.
    ///
    /// # Safety
    /// The CPU has AVX-512F and FMA (the caller detected them). `b` is at least as long as `a`.
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    unsafe fn dot512<T: Element>(a: &[f32], b: &[T]) -> f32 {
        let (k, full) = (a.len(), a.len() - a.len() % LANES);
        let mut acc = _mm512_setzero_ps();
        let mut i = 0;
        while i < full {
            acc = _mm512_fmadd_ps(
                _mm512_loadu_ps(a.as_ptr().add(i)),
                load16(b.as_ptr().add(i)),
                acc,
            );
            i += LANES;
        }
        finish512(acc, |l| tail_of(a.as_ptr(), b.as_ptr(), full, k, l))
    }

    /// [`dots_body`] with AVX-512: four positions at a time (four
    /// independent chains, each the lane order of [`dot512`]) and the lanes
    /// summed in registers.
    ///
    /// # Safety
    /// The CPU has AVX-512F and FMA (the caller detected them). `keys`
    /// holds `out.len()` positions of `kvd` values, `off + q.len() <= kvd`.
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    unsafe fn dots512<T: Element>(q: &[f32], keys: &[T], off: usize, kvd: usize, out: &mut [f32]) {
        let hd = q.len();
        assert!(off + hd <= kvd && keys.len() >= out.len() * kvd);
        let mut j = 0;
        if hd.is_multiple_of(LANES) {
            let kp = keys.as_ptr().add(off);
            while j + 4 <= out.len() {
                let mut acc = [_mm512_setzero_ps(); 4];
                for i in (0..hd).step_by(LANES) {
                    let qv = _mm512_loadu_ps(q.as_ptr().add(i));
                    for (r, a) in acc.iter_mut().enumerate() {
                        *a = _mm512_fmadd_ps(qv, load16(kp.add((j + r) * kvd + i)), *a);
                    }
                }
                for (r, a) in acc.iter().enumerate() {
                    out[j + r] = sum512(*a);
                }
                j += 4;
            }
        }
        let rest = &mut out[j..];
        dots_each(q, &keys[j * kvd..], (off, kvd), rest, |q, k| dot512(q, k));
    }

    /// [`dot512`] with AVX2, the same lane order.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA (the caller detected them). `b` is at least as long as `a`.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn dot256<T: Element>(a: &[f32], b: &[T]) -> f32 {
        let (k, full) = (a.len(), a.len() - a.len() % LANES);
        let (mut lo, mut hi) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        let mut i = 0;
        while i < full {
            let (pa, pb) = (a.as_ptr().add(i), b.as_ptr().add(i));
            lo = _mm256_fmadd_ps(_mm256_loadu_ps(pa), load8(pb), lo);
            hi = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(8)), load8(pb.add(8)), hi);
            i += LANES;
        }
        finish256(lo, hi, |l| tail_of(a.as_ptr(), b.as_ptr(), full, k, l))
    }

    /// `o = p · v + o`, elementwise.
    ///
    /// # Safety
    /// The CPU has AVX-512F and FMA (the caller detected them). `v` is at least as long as `o`.
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    unsafe fn axpy512<T: Element>(p: f32, v: &[T], o: &mut [f32]) {
        let full = o.len() - o.len() % LANES;
        let pv = _mm512_set1_ps(p);
        let mut i = 0;
        while i < full {
            let po = o.as_mut_ptr().add(i);
            _mm512_storeu_ps(
                po,
                _mm512_fmadd_ps(pv, load16(v.as_ptr().add(i)), _mm512_loadu_ps(po)),
            );
            i += LANES;
        }
        for j in full..o.len() {
            o[j] = p.mul_add(v[j].widen(), o[j]);
        }
    }

    /// [`axpy512`] with AVX2.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA (the caller detected them). `v` is at least as long as `o`.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn axpy256<T: Element>(p: f32, v: &[T], o: &mut [f32]) {
        let full = o.len() - o.len() % 8;
        let pv = _mm256_set1_ps(p);
        let mut i = 0;
        while i < full {
            let po = o.as_mut_ptr().add(i);
            _mm256_storeu_ps(
                po,
                _mm256_fmadd_ps(pv, load8(v.as_ptr().add(i)), _mm256_loadu_ps(po)),
            );
            i += 8;
        }
        for j in full..o.len() {
            o[j] = p.mul_add(v[j].widen(), o[j]);
        }
    }

    /// Attention of one token, AVX-512.
    ///
    /// # Safety
    /// The CPU has AVX-512F and FMA (the caller detected them). The slices are as [`attend_with`] takes them.
    #[target_feature(enable = "avx512f,fma")]
    pub unsafe fn attend_avx512<T: Element>(
        a: &Attend,
        q: (&[f32], usize, usize),
        k: &[T],
        v: &[T],
        len: usize,
        out: &mut [f32],
    ) {
        attend_with(
            a,
            q,
            (k, v, len),
            out,
            |q, k, off, kvd, o| dots512(q, k, off, kvd, o),
            |p, x, o| axpy512(p, x, o),
        )
    }

    /// Attention of one token, AVX2.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA (the caller detected them). The slices are as [`attend_with`] takes them.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn attend_avx2<T: Element>(
        a: &Attend,
        q: (&[f32], usize, usize),
        k: &[T],
        v: &[T],
        len: usize,
        out: &mut [f32],
    ) {
        attend_with(
            a,
            q,
            (k, v, len),
            out,
            |q, k, off, kvd, o| dots_each(q, k, (off, kvd), o, |q, k| dot256(q, k)),
            |p, x, o| axpy256(p, x, o),
        )
    }
}

/// A raw output pointer that parallel tasks write disjoint parts of.
#[derive(Clone, Copy)]
struct OutPtr(*mut f32);
// SAFETY: tasks write disjoint column ranges of the output.
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}

/// `out[t × n] = x[t × k] · w[n × k]ᵀ` (a linear layer without bias), in
/// parallel over blocks of weight rows.
pub fn matmul(isa: Isa, x: &[f32], t: usize, k: usize, w: &[f32], n: usize, out: &mut [f32]) {
    assert!(x.len() >= t * k && w.len() >= n * k && out.len() >= t * n);
    // SAFETY: bounds checked above; the ISA was detected on this CPU.
    for_row_blocks(n, ROWS_PER_TASK, out, |r, ptr| unsafe {
        matmul_range(isa, x, t, k, w, r, ptr, n)
    });
}

/// Rows `n0..n1` of `out = x · wᵀ` on `isa`, one thread: what
/// [`matmul`] computes for those columns, bit for bit (each output element
/// is the same fixed sequence of operations however the work is cut).
///
/// # Safety
/// The ISA was detected on this CPU; `x` holds `t × k` values, `w` rows
/// `n0..n1` of `k` values (row `n` at `w[n * k]`), and `out` covers
/// `out[r * ldo + n]` for every `r < t` and `n` in `n0..n1`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn matmul_range(
    isa: Isa,
    x: &[f32],
    t: usize,
    k: usize,
    w: &[f32],
    r: (usize, usize),
    out: *mut f32,
    ldo: usize,
) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => x86::rows_avx512(x, t, k, w, r, out, ldo),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => x86::rows_avx2(x, t, k, w, r, out, ldo),
        _ => matmul_rows::<2, 2>(x, t, k, w, r, out, ldo),
    }
}

/// Runs `rows(range, out)` in parallel for the blocks of `per_task` weight
/// rows of `0..n`; each writes only its own output columns (`range`) of
/// `out`, which the caller has sized for every row of `x`.
pub(crate) fn for_row_blocks(
    n: usize,
    per_task: usize,
    out: &mut [f32],
    rows: impl Fn((usize, usize), *mut f32) + Sync + Send,
) {
    let ptr = OutPtr(out.as_mut_ptr());
    (0..n.div_ceil(per_task))
        .into_par_iter()
        .for_each(move |b| {
            let ptr = ptr;
            rows((b * per_task, ((b + 1) * per_task).min(n)), ptr.0);
        });
}

/// Attention of one query token (all heads) over the first `len` cached
/// positions; see [`Attend`]. The cached keys and values are f32 or halves
/// ([`Element`]); halves are widened exactly, so they give the outputs of
/// f32 keys and values holding the same numbers.
pub fn attend<T: Element>(
    isa: Isa,
    a: &Attend,
    q: &[f32],
    keys: &[T],
    values: &[T],
    len: usize,
    out: &mut [f32],
) {
    attend_heads(isa, a, (q, 0, a.n_head), keys, values, len, out)
}

/// [`attend`] for query heads `h0..h1` only, into `out` (`(h1 - h0) ×
/// head_dim` values): each head's output is the bits [`attend`] gives it.
pub fn attend_heads<T: Element>(
    isa: Isa,
    a: &Attend,
    (q, h0, h1): (&[f32], usize, usize),
    keys: &[T],
    values: &[T],
    len: usize,
    out: &mut [f32],
) {
    assert!(keys.len() >= len * a.kv_dim && values.len() >= len * a.kv_dim);
    assert!(h0 <= h1 && h1 <= a.n_head && q.len() >= a.n_head * a.head_dim);
    assert!(out.len() >= (h1 - h0) * a.head_dim);
    let q = (q, h0, h1);
    match isa {
        // SAFETY: the ISA was detected on this CPU.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { x86::attend_avx512(a, q, keys, values, len, out) },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { x86::attend_avx2(a, q, keys, values, len, out) },
        _ => attend_with(a, q, (keys, values, len), out, dots_body, axpy_body),
    }
}

/// RMS normalisation of one row: `x / sqrt(mean(x²) + eps) * w`.
pub fn rms_norm(x: &[f32], w: &[f32], eps: f32, out: &mut [f32]) {
    let mut acc = [0f32; LANES];
    for (i, v) in x.iter().enumerate() {
        acc[i % LANES] += v * v;
    }
    let scale = 1.0 / (reduce(&acc) / x.len() as f32 + eps).sqrt();
    for ((o, v), g) in out.iter_mut().zip(x).zip(w) {
        *o = v * scale * g;
    }
}

/// Index of the largest value (the first one on ties).
pub fn argmax(v: &[f32]) -> u32 {
    let mut best = 0;
    for (i, x) in v.iter().enumerate() {
        if *x > v[best] {
            best = i;
        }
    }
    best as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: usize, seed: u32) -> Vec<f32> {
        (0..n)
            .map(|i| {
                let h = (i as u32).wrapping_mul(2654435761).wrapping_add(seed) >> 8;
                (h % 2001) as f32 / 1000.0 - 1.0
            })
            .collect()
    }

    fn all_isas() -> Vec<Isa> {
        Isa::available()
    }

    #[test]
    fn matmul_matches_a_plain_dot_product_closely() {
        let (t, k, n) = (5, 37, 70);
        let (x, w) = (data(t * k, 1), data(n * k, 2));
        let mut out = vec![0.0; t * n];
        matmul(Isa::detect(), &x, t, k, &w, n, &mut out);
        for r in 0..t {
            for c in 0..n {
                let want: f64 = (0..k)
                    .map(|j| x[r * k + j] as f64 * w[c * k + j] as f64)
                    .sum();
                assert!((out[r * n + c] as f64 - want).abs() < 1e-4, "{r},{c}");
            }
        }
    }

    #[test]
    fn every_row_is_bit_identical_whatever_the_batch_and_isa() {
        // With a tail, and without one (whole tiles reduce together).
        for k in [96 + 5, 96, 384] {
            rows_bit_identical(k);
        }
    }

    fn rows_bit_identical(k: usize) {
        let n = 67;
        let w = data(n * k, 3);
        let x = data(9 * k, 4);
        let mut reference = vec![0.0; 9 * n];
        for r in 0..9 {
            matmul(
                Isa::Portable,
                &x[r * k..],
                1,
                k,
                &w,
                n,
                &mut reference[r * n..],
            );
        }
        for isa in all_isas() {
            for t in [1, 2, 3, 4, 5, 8, 9] {
                let mut out = vec![0.0; t * n];
                matmul(isa, &x, t, k, &w, n, &mut out);
                assert_eq!(out, reference[..t * n], "{isa:?} with {t} rows, k = {k}");
            }
        }
    }

    /// Four query heads of `hd` sharing two key-value heads, scale 0.2.
    fn grouped(hd: usize) -> Attend {
        Attend {
            n_head: 4,
            n_kv_head: 2,
            head_dim: hd,
            kv_dim: 2 * hd,
            scale: 0.2,
        }
    }

    #[test]
    fn attention_is_the_same_on_every_isa_and_sums_values_by_softmax() {
        // Heads of 20 (a lane tail) and 64 (whole registers, four positions
        // at a time), over 7 positions (a tail of 3).
        for hd in [20, 64] {
            let a = grouped(hd);
            let (kvd, n) = (2 * hd, 4 * hd);
            let (q, keys, values) = (data(n, 5), data(7 * kvd, 6), data(7 * kvd, 7));
            let mut want = vec![0.0; n];
            attend(Isa::Portable, &a, &q, &keys, &values, 7, &mut want);
            for isa in all_isas() {
                let mut out = vec![0.0; n];
                attend(isa, &a, &q, &keys, &values, 7, &mut out);
                assert_eq!(out, want, "{isa:?}, heads of {hd}");
                // One head alone gives that head's bits.
                let mut one = vec![0.0; hd];
                attend_heads(isa, &a, (&q, 3, 4), &keys, &values, 7, &mut one);
                assert_eq!(one, want[3 * hd..], "{isa:?}, head 3 alone");
            }
            // Head 3 uses key-value head 1; check it by hand in f64.
            let (h, g) = (3, 1);
            let s: Vec<f64> = (0..7)
                .map(|j| {
                    (0..hd)
                        .map(|i| q[h * hd + i] as f64 * keys[j * kvd + g * hd + i] as f64)
                        .sum::<f64>()
                        * 0.2
                })
                .collect();
            let m = s.iter().cloned().fold(f64::MIN, f64::max);
            let e: Vec<f64> = s.iter().map(|v| (v - m).exp()).collect();
            let z: f64 = e.iter().sum();
            for i in 0..hd {
                let v: f64 = (0..7)
                    .map(|j| e[j] / z * values[j * kvd + g * hd + i] as f64)
                    .sum();
                assert!((want[h * hd + i] as f64 - v).abs() < 1e-5);
            }
        }
    }

    #[test]
    fn half_keys_and_values_give_the_outputs_of_f32_ones_of_the_same_numbers() {
        use half::f16;
        for hd in [20, 64] {
            let a = grouped(hd);
            let (kvd, n) = (2 * hd, 4 * hd);
            let halves = |v: Vec<f32>| -> Vec<f16> { v.into_iter().map(f16::from_f32).collect() };
            let (q, keys, values) = (
                data(n, 5),
                halves(data(9 * kvd, 6)),
                halves(data(9 * kvd, 7)),
            );
            let wide = |v: &[f16]| -> Vec<f32> { v.iter().map(|h| h.to_f32()).collect() };
            let (wk, wv) = (wide(&keys), wide(&values));
            for isa in all_isas() {
                let (mut got, mut want) = (vec![0.0; n], vec![0.0; n]);
                attend(isa, &a, &q, &keys, &values, 9, &mut got);
                attend(isa, &a, &q, &wk, &wv, 9, &mut want);
                let same = got
                    .iter()
                    .zip(&want)
                    .all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(same, "{isa:?}, heads of {hd}");
            }
        }
    }

    #[test]
    fn rms_norm_and_argmax() {
        let mut out = [0.0; 2];
        rms_norm(&[3.0, 4.0], &[1.0, 2.0], 0.0, &mut out);
        // mean of squares = 12.5
        let r = 12.5f32.sqrt();
        assert!((out[0] - 3.0 / r).abs() < 1e-6 && (out[1] - 8.0 / r).abs() < 1e-6);
        assert_eq!(argmax(&[1.0, 3.0, 3.0, 2.0]), 1);
    }
}
