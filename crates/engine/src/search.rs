//! Inner products of many query vectors with many passage vectors, for
//! exact dense search.
//!
//! Each output is one chain of fused multiply-adds over the vector's
//! elements in order (`acc = fma(x[j], w[j], acc)` for j = 0, 1, ...,
//! from 0), so its value never depends on the tiling, the thread count,
//! which other queries or passages are in the call, or whether the CPU ran
//! AVX-512, AVX2 or portable code. The passages are packed into panels of
//! [`PANEL`] vectors stored element-major, so that one vector load feeds
//! [`PANEL`] outputs and one broadcast of a query element feeds a whole
//! panel: the outer-product form of a matrix product, which keeps the FMA
//! units busy instead of reducing partial sums per output.

use crate::kernels::Isa;
use rayon::prelude::*;

/// Passages per panel: two AVX-512 or four AVX2 registers.
pub const PANEL: usize = 32;

/// Panels per parallel task.
const PANELS_PER_TASK: usize = 4;

/// Passage vectors packed for [`inner_products`]: panel `p` holds vectors
/// `32p .. 32p + 32`, element `j` of all of them together; the last panel
/// is padded with zero vectors.
#[derive(Debug, Default, Clone)]
pub struct Panels {
    data: Vec<f32>,
    n: usize,
    k: usize,
}

impl Panels {
    /// Packs `n` vectors of `k` elements (`w`, row-major), reusing this
    /// buffer.
    pub fn pack(&mut self, w: &[f32], n: usize, k: usize) {
        assert!(
            w.len() >= n * k,
            "{} values for {n} vectors of {k}",
            w.len()
        );
        self.pack_rows(n, k, |i, out| out.copy_from_slice(&w[i * k..(i + 1) * k]));
    }

    /// Packs `n` vectors of `k` elements, vector `i` written by
    /// `fill(i, out)` into a `k`-long scratch vector (which stays in the
    /// L1 cache), reusing this buffer: for vectors stored in another form,
    /// converted on the way in without a row-major f32 copy of them all.
    pub fn pack_rows(&mut self, n: usize, k: usize, mut fill: impl FnMut(usize, &mut [f32])) {
        // Every slot below `n` is written below, so only the last panel's
        // padding needs zeros (a reused buffer is not cleared first: that
        // was a pass over the whole block per call).
        self.data.resize(packed_len(n, k), 0.0);
        let mut row = vec![0.0; k];
        for p in 0..n {
            fill(p, &mut row);
            write_packed(&mut self.data, p, &row);
        }
        row.fill(0.0);
        for p in n..n.div_ceil(PANEL) * PANEL {
            write_packed(&mut self.data, p, &row);
        }
        self.n = n;
        self.k = k;
    }

    /// Vectors packed.
    pub fn len(&self) -> usize {
        self.n
    }

    /// The packed vectors as a borrowed view.
    pub fn view(&self) -> PanelsRef<'_> {
        PanelsRef {
            data: &self.data,
            n: self.n,
            k: self.k,
        }
    }

    /// No vectors packed.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

/// What packed panels store: `f32`, or IEEE half floats (`half::f16`: half
/// the memory and reads). A half is widened to f32 exactly before its FMA,
/// so half panels give the outputs of f32 panels holding the same values.
pub trait Element: Copy + Send + Sync + sealed::Sealed + 'static {
    /// Stored as IEEE half bits.
    const HALF: bool;
    /// The value as f32 (exact).
    fn widen(self) -> f32;
    /// [`inner_products_serial`] for panels of this type, compiled in this
    /// crate (which the dev profile optimises) rather than in the caller's.
    #[doc(hidden)]
    fn products_serial(isa: Isa, x: &[f32], t: usize, w: PanelsRef<'_, Self>, out: &mut [f32]);
}

impl Element for f32 {
    const HALF: bool = false;
    #[inline(always)]
    fn widen(self) -> f32 {
        self
    }
    fn products_serial(isa: Isa, x: &[f32], t: usize, w: PanelsRef<'_, f32>, out: &mut [f32]) {
        products_serial(isa, x, t, w, out)
    }
}

impl Element for half::f16 {
    const HALF: bool = true;
    #[inline(always)]
    fn widen(self) -> f32 {
        self.to_f32_const()
    }
    fn products_serial(isa: Isa, x: &[f32], t: usize, w: PanelsRef<'_, Self>, out: &mut [f32]) {
        products_serial(isa, x, t, w, out)
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for half::f16 {}
}

/// Packed vectors in [`Panels`]' layout held elsewhere (a memory-mapped
/// index file, say), as f32 or f16.
#[derive(Debug, Clone, Copy)]
pub struct PanelsRef<'a, T: Element = f32> {
    data: &'a [T],
    n: usize,
    k: usize,
}

impl<'a, T: Element> PanelsRef<'a, T> {
    /// `n` vectors of `k` elements packed in `data` (as [`write_packed`]
    /// writes them); `None` when `data` is shorter than the padded panels.
    pub fn new(data: &'a [T], n: usize, k: usize) -> Option<Self> {
        (data.len() >= packed_len(n, k)).then_some(PanelsRef { data, n, k })
    }

    /// Vectors packed.
    pub fn len(&self) -> usize {
        self.n
    }

    /// No vectors packed.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

/// Values that `n` packed vectors of `k` elements take, padding included.
pub fn packed_len(n: usize, k: usize) -> usize {
    n.div_ceil(PANEL) * PANEL * k
}

/// Writes vector `v` as vector `slot` of the packed layout in `dst`
/// (which must hold at least `packed_len(slot + 1, v.len())` values).
pub fn write_packed<T: Copy>(dst: &mut [T], slot: usize, v: &[T]) {
    let k = v.len();
    let base = (slot / PANEL) * PANEL * k + slot % PANEL;
    for (j, &x) in v.iter().enumerate() {
        dst[base + j * PANEL] = x;
    }
}

/// A raw output pointer that parallel tasks write disjoint columns of.
#[derive(Clone, Copy)]
struct OutPtr(*mut f32);
// SAFETY: each task writes only the columns of its own panels.
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}

/// `out[q * n + p] = Σ_j x[q * k + j] · w_p[j]` for the `t` queries `x`
/// (row-major, `k` wide) and the `n` packed passages, in parallel over
/// groups of panels.
pub fn inner_products(isa: Isa, x: &[f32], t: usize, w: &Panels, out: &mut [f32]) {
    let (n, k) = (w.n, w.k);
    assert!(x.len() >= t * k && out.len() >= t * n);
    if n == 0 || t == 0 {
        return;
    }
    let ptr = OutPtr(out.as_mut_ptr());
    let panels = n.div_ceil(PANEL);
    let w = w.view();
    (0..panels.div_ceil(PANELS_PER_TASK))
        .into_par_iter()
        .for_each(move |task| {
            let ptr = ptr;
            let range = task * PANELS_PER_TASK..((task + 1) * PANELS_PER_TASK).min(panels);
            // SAFETY: bounds checked above; this task alone writes the
            // columns of its panels; the ISA was detected on this CPU.
            unsafe { panel_range(isa, x, t, w, range, ptr.0) };
        });
}

/// Every query against panels `range` of `w`, into their columns of `out`
/// (`t × n` values).
///
/// # Safety
/// `x` and `out` must hold `t` rows; the ISA must be this CPU's; no one
/// else may write these columns meanwhile.
unsafe fn panel_range<T: Element>(
    isa: Isa,
    x: &[f32],
    t: usize,
    w: PanelsRef<'_, T>,
    range: std::ops::Range<usize>,
    out: *mut f32,
) {
    let (n, k) = (w.n, w.k);
    for p in range {
        let panel = &w.data[p * PANEL * k..(p + 1) * PANEL * k];
        let cols = (p * PANEL, (n - p * PANEL).min(PANEL));
        panel_products(isa, x, t, k, panel, out, n, cols);
    }
}

/// [`inner_products`] on the calling thread alone, over borrowed panels:
/// for callers that run many small products in parallel themselves (the
/// cells of an IVF index). The same bits as [`inner_products`] over f32
/// panels holding the same values.
pub fn inner_products_serial<T: Element>(
    isa: Isa,
    x: &[f32],
    t: usize,
    w: PanelsRef<'_, T>,
    out: &mut [f32],
) {
    T::products_serial(isa, x, t, w, out)
}

/// The body of [`inner_products_serial`], instantiated here for each
/// [`Element`].
fn products_serial<T: Element>(
    isa: Isa,
    x: &[f32],
    t: usize,
    w: PanelsRef<'_, T>,
    out: &mut [f32],
) {
    let (n, k) = (w.n, w.k);
    assert!(x.len() >= t * k && out.len() >= t * n);
    // SAFETY: bounds checked above (`PanelsRef` holds whole panels); the
    // ISA was detected on this CPU; `out` is borrowed mutably here.
    unsafe { panel_range(isa, x, t, w, 0..n.div_ceil(PANEL), out.as_mut_ptr()) };
}

/// Every query against one panel, in tiles of queries.
///
/// # Safety
/// `out` must hold `t × ldo` values; the ISA must be this CPU's.
#[allow(clippy::too_many_arguments)]
unsafe fn panel_products<T: Element>(
    isa: Isa,
    x: &[f32],
    t: usize,
    k: usize,
    panel: &[T],
    out: *mut f32,
    ldo: usize,
    cols: (usize, usize),
) {
    let mut q = 0;
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => {
            while q + 8 <= t {
                x86::tile512::<8, T>(&x[q * k..], k, panel, out.add(q * ldo), ldo, cols);
                q += 8;
            }
            while q < t {
                x86::tile512::<1, T>(&x[q * k..], k, panel, out.add(q * ldo), ldo, cols);
                q += 1;
            }
        }
        // Half panels need F16C too (every AVX2 CPU has it; without it
        // they take the portable path, same bits).
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 if !T::HALF || std::is_x86_feature_detected!("f16c") => {
            while q + 2 <= t {
                x86::tile256::<2, T>(&x[q * k..], k, panel, out.add(q * ldo), ldo, cols);
                q += 2;
            }
            while q < t {
                x86::tile256::<1, T>(&x[q * k..], k, panel, out.add(q * ldo), ldo, cols);
                q += 1;
            }
        }
        _ => {
            while q < t {
                tile_portable(&x[q * k..], k, panel, out.add(q * ldo), cols);
                q += 1;
            }
        }
    }
}

/// One query against one panel, one FMA chain per output.
///
/// # Safety
/// `out` must have room for the panel's columns.
unsafe fn tile_portable<T: Element>(
    x: &[f32],
    k: usize,
    panel: &[T],
    out: *mut f32,
    cols: (usize, usize),
) {
    let mut acc = [0f32; PANEL];
    for j in 0..k {
        let xj = x[j];
        for (l, a) in acc.iter_mut().enumerate() {
            *a = xj.mul_add(panel[j * PANEL + l].widen(), *a);
        }
    }
    for (l, a) in acc.iter().take(cols.1).enumerate() {
        *out.add(cols.0 + l) = *a;
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! The portable chains in SIMD: lane `l` of the registers of a panel is
    //! passage `l` of the panel.
    use super::{Element, PANEL};
    use crate::kernels::x86::{load16, load8};
    use std::arch::x86_64::*;

    /// `TQ` queries against one panel with AVX-512.
    ///
    /// # Safety
    /// As [`super::panel_products`]; `x` holds `TQ` rows of `k`.
    #[target_feature(enable = "avx512f,fma")]
    pub unsafe fn tile512<const TQ: usize, T: Element>(
        x: &[f32],
        k: usize,
        panel: &[T],
        out: *mut f32,
        ldo: usize,
        (c0, cn): (usize, usize),
    ) {
        let (xp, wp) = (x.as_ptr(), panel.as_ptr());
        let mut acc = [[_mm512_setzero_ps(); 2]; TQ];
        for j in 0..k {
            let w0 = load16(wp.add(j * PANEL));
            let w1 = load16(wp.add(j * PANEL + 16));
            for (q, a) in acc.iter_mut().enumerate() {
                let xb = _mm512_set1_ps(*xp.add(q * k + j));
                a[0] = _mm512_fmadd_ps(xb, w0, a[0]);
                a[1] = _mm512_fmadd_ps(xb, w1, a[1]);
            }
        }
        for (q, a) in acc.iter().enumerate() {
            let dst = out.add(q * ldo + c0);
            if cn == PANEL {
                _mm512_storeu_ps(dst, a[0]);
                _mm512_storeu_ps(dst.add(16), a[1]);
            } else {
                let mut tmp = [0f32; PANEL];
                _mm512_storeu_ps(tmp.as_mut_ptr(), a[0]);
                _mm512_storeu_ps(tmp.as_mut_ptr().add(16), a[1]);
                std::ptr::copy_nonoverlapping(tmp.as_ptr(), dst, cn);
            }
        }
    }

    /// `TQ` queries against one panel with AVX2.
    ///
    /// # Safety
    /// As [`tile512`].
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn tile256<const TQ: usize, T: Element>(
        x: &[f32],
        k: usize,
        panel: &[T],
        out: *mut f32,
        ldo: usize,
        (c0, cn): (usize, usize),
    ) {
        let (xp, wp) = (x.as_ptr(), panel.as_ptr());
        let mut acc = [[_mm256_setzero_ps(); 4]; TQ];
        for j in 0..k {
            let w = [
                load8(wp.add(j * PANEL)),
                load8(wp.add(j * PANEL + 8)),
                load8(wp.add(j * PANEL + 16)),
                load8(wp.add(j * PANEL + 24)),
            ];
            for (q, a) in acc.iter_mut().enumerate() {
                let xb = _mm256_set1_ps(*xp.add(q * k + j));
                for (r, wr) in a.iter_mut().zip(w) {
                    *r = _mm256_fmadd_ps(xb, wr, *r);
                }
            }
        }
        for (q, a) in acc.iter().enumerate() {
            let mut tmp = [0f32; PANEL];
            for (r, v) in a.iter().enumerate() {
                _mm256_storeu_ps(tmp.as_mut_ptr().add(8 * r), *v);
            }
            std::ptr::copy_nonoverlapping(tmp.as_ptr(), out.add(q * ldo + c0), cn);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(len: usize, seed: u64) -> Vec<f32> {
        let mut s = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..len)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
            })
            .collect()
    }

    /// Half panels give the bits of f32 panels holding the same
    /// (half-rounded) values.
    fn half_panels_match_f32_panels(isa: Isa, x: &[f32], t: usize, w: &[f32], n: usize, k: usize) {
        let halves: Vec<half::f16> = w.iter().map(|&v| half::f16::from_f32(v)).collect();
        let rounded: Vec<f32> = halves.iter().map(|h| h.to_f32()).collect();
        let mut f32_panels = Panels::default();
        f32_panels.pack(&rounded, n, k);
        let mut want16 = vec![f32::NAN; t * n];
        inner_products(isa, x, t, &f32_panels, &mut want16);
        let mut buf16 = vec![half::f16::ZERO; packed_len(n, k)];
        for (p, v) in halves.chunks_exact(k).enumerate() {
            write_packed(&mut buf16, p, v);
        }
        let mut got16 = vec![f32::NAN; t * n];
        inner_products_serial(isa, x, t, PanelsRef::new(&buf16, n, k).unwrap(), &mut got16);
        assert_eq!(
            got16.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want16.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "{isa:?} half panels t={t} n={n} k={k}"
        );
    }

    /// Every output is the same chain of FMAs whatever the ISA, the query
    /// count, the passage count or where a vector sits in the call; and it
    /// is the inner product.
    #[test]
    fn every_output_is_the_same_fma_chain_on_every_isa() {
        for (t, n, k) in [
            (1, 1, 1),
            (9, 70, 37),
            (17, 33, 384),
            (8, 32, 16),
            (3, 5, 7),
        ] {
            let (x, w) = (data(t * k, 1), data(n * k, 2));
            let chain = |q: usize, p: usize| {
                (0..k).fold(0f32, |a, j| x[q * k + j].mul_add(w[p * k + j], a))
            };
            let mut panels = Panels::default();
            panels.pack(&w, n, k);
            for isa in Isa::available() {
                let mut out = vec![f32::NAN; t * n];
                inner_products(isa, &x, t, &panels, &mut out);
                for q in 0..t {
                    for p in 0..n {
                        let want: f64 = (0..k)
                            .map(|j| x[q * k + j] as f64 * w[p * k + j] as f64)
                            .sum();
                        let got = out[q * n + p];
                        assert_eq!(
                            got.to_bits(),
                            chain(q, p).to_bits(),
                            "{isa:?} t={t} n={n} k={k} ({q}, {p})"
                        );
                        assert!((got as f64 - want).abs() < 1e-4);
                    }
                }
                // The serial form over a view, and vectors written one by
                // one into a borrowed buffer: the same bits.
                let mut serial = vec![f32::NAN; t * n];
                inner_products_serial(isa, &x, t, panels.view(), &mut serial);
                assert_eq!(serial, out);
                let mut buf = vec![0.0; packed_len(n, k)];
                for (p, v) in w.chunks_exact(k).enumerate() {
                    write_packed(&mut buf, p, v);
                }
                let view = PanelsRef::new(&buf, n, k).unwrap();
                assert!(PanelsRef::new(&buf[1..], n, k).is_none());
                inner_products_serial(isa, &x, t, view, &mut serial);
                assert_eq!(serial, out);
                half_panels_match_f32_panels(isa, &x, t, &w, n, k);
                // One query alone, and the passages from 3 on alone: the same bits.
                let mut one = vec![0.0; n];
                inner_products(isa, &x[(t - 1) * k..], 1, &panels, &mut one);
                assert_eq!(one, out[(t - 1) * n..]);
                if n > 3 {
                    let mut rest = Panels::default();
                    rest.pack(&w[3 * k..], n - 3, k);
                    let mut part = vec![0.0; t * (n - 3)];
                    inner_products(isa, &x, t, &rest, &mut part);
                    for q in 0..t {
                        assert_eq!(
                            part[q * (n - 3)..(q + 1) * (n - 3)],
                            out[q * n + 3..(q + 1) * n]
                        );
                    }
                }
            }
        }
    }

    /// A buffer packed again with fewer vectors holds what a fresh one
    /// holds: the old vectors in the new padding are zeroed.
    #[test]
    fn repacking_a_buffer_zeroes_its_padding() {
        let k = 5;
        let w: Vec<f32> = (0..70 * k).map(|i| i as f32 + 1.0).collect();
        let mut reused = Panels::default();
        reused.pack(&w, 70, k);
        for n in [33, 64, 1, 70] {
            reused.pack(&w, n, k);
            let mut fresh = Panels::default();
            fresh.pack(&w, n, k);
            assert_eq!(reused.data, fresh.data, "{n} vectors");
            let padding = (n..n.div_ceil(PANEL) * PANEL).count() * k;
            assert_eq!(fresh.data.iter().filter(|v| **v == 0.0).count(), padding);
            let mut by_rows = Panels::default();
            by_rows.pack_rows(n, k, |i, out| out.copy_from_slice(&w[i * k..(i + 1) * k]));
            assert_eq!(by_rows.data, fresh.data, "{n} vectors, packed row by row");
        }
    }
}
