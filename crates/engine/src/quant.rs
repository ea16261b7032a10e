//! The GGUF tensor types the engine reads, decoded to f32 exactly as the
//! reference dequantizers do.
//!
//! The reference is the `gguf` package's `gguf/quants.py` (0.19.0, the
//! `dequantize_blocks` of each type; llama.cpp's `dequantize_row_*` in
//! `ggml-quants.c` compute the same values): every weight is formed by the
//! same IEEE operations in the same order — for Q4_K, `(d · sc) · q − dmin · m`
//! with each product rounded, never fused — so a decoded weight equals the
//! reference's bit for bit (tested in `tests/llama_cpp.rs` against files
//! the reference dequantized). Rust never contracts `a * b - c` into a
//! fused multiply-add, so the portable code below is that arithmetic on
//! every CPU.
//!
//! Layouts (little-endian; `f16` is an IEEE half):
//!
//! | type | weights / block | bytes | block |
//! |------|-----------------|-------|-------|
//! | F32  | 1   | 4   | the value |
//! | F16  | 1   | 2   | the value |
//! | BF16 | 1   | 2   | the value's high 16 bits |
//! | Q4_0 | 32  | 18  | `d: f16`, 16 bytes of nibbles: `w = d · (q − 8)` |
//! | Q4_1 | 32  | 20  | `d, m: f16`, 16 bytes of nibbles: `w = d · q + m` |
//! | Q5_0 | 32  | 22  | `d: f16`, `qh: u32` (5th bits), 16 bytes: `w = d · (q − 16)` |
//! | Q5_1 | 32  | 24  | `d, m: f16`, `qh: u32`, 16 bytes: `w = d · q + m` |
//! | Q8_0 | 32  | 34  | `d: f16`, 32 `i8`: `w = q · d` |
//! | Q4_K | 256 | 144 | `d, dmin: f16`, 12 bytes of 6-bit scales and mins, 128 of nibbles |
//! | Q5_K | 256 | 176 | as Q4_K, then 32 bytes of 5th bits before the nibbles |
//! | Q6_K | 256 | 210 | 128 bytes low nibbles, 64 of high 2 bits, 16 `i8` scales, `d: f16` |
//!
//! In the 32-weight types, weight `j < 16` is the low nibble of byte `j`
//! and weight `j + 16` its high nibble; bit `j` of `qh` is weight `j`'s
//! fifth bit.

use crate::kernels::Isa;

/// A tensor type the engine reads (see the module table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(non_camel_case_types)]
pub enum Dtype {
    /// IEEE single.
    F32,
    /// IEEE half.
    F16,
    /// bfloat16.
    BF16,
    /// 4-bit, one scale per 32.
    Q4_0,
    /// 4-bit, a scale and a minimum per 32.
    Q4_1,
    /// 5-bit, one scale per 32.
    Q5_0,
    /// 5-bit, a scale and a minimum per 32.
    Q5_1,
    /// 8-bit, one scale per 32.
    Q8_0,
    /// 4-bit super-blocks of 256: 6-bit scales and minimums per 32.
    Q4_K,
    /// 5-bit super-blocks of 256: 6-bit scales and minimums per 32.
    Q5_K,
    /// 6-bit super-blocks of 256: an 8-bit scale per 16.
    Q6_K,
}

/// Every type the engine reads, for error messages and docs.
pub const SUPPORTED_TYPES: &[Dtype] = &[
    Dtype::F32,
    Dtype::F16,
    Dtype::BF16,
    Dtype::Q4_0,
    Dtype::Q4_1,
    Dtype::Q5_0,
    Dtype::Q5_1,
    Dtype::Q8_0,
    Dtype::Q4_K,
    Dtype::Q5_K,
    Dtype::Q6_K,
];

/// A GGML tensor type id's name (ggml.h's `ggml_type`), for errors; ids
/// the engine does not know print as `type <id>`.
pub fn ggml_type_name(t: u32) -> String {
    if let Some(d) = Dtype::from_ggml(t) {
        return d.name().to_string();
    }
    let name = match t {
        9 => "Q8_1",
        10 => "Q2_K",
        11 => "Q3_K",
        15 => "Q8_K",
        16 => "IQ2_XXS",
        17 => "IQ2_XS",
        18 => "IQ3_XXS",
        19 => "IQ1_S",
        20 => "IQ4_NL",
        21 => "IQ3_S",
        22 => "IQ2_S",
        23 => "IQ4_XS",
        24 => "I8",
        25 => "I16",
        26 => "I32",
        27 => "I64",
        28 => "F64",
        29 => "IQ1_M",
        _ => return format!("type {t}"),
    };
    name.to_string()
}

/// The names of [`SUPPORTED_TYPES`], comma-separated.
pub fn supported_type_names() -> String {
    SUPPORTED_TYPES
        .iter()
        .map(|t| t.name())
        .collect::<Vec<_>>()
        .join(", ")
}

impl Dtype {
    /// The engine's type for a GGML tensor type id (ggml.h's `ggml_type`);
    /// `None` when it does not read that type.
    pub fn from_ggml(t: u32) -> Option<Dtype> {
        Some(match t {
            0 => Dtype::F32,
            1 => Dtype::F16,
            30 => Dtype::BF16,
            2 => Dtype::Q4_0,
            3 => Dtype::Q4_1,
            6 => Dtype::Q5_0,
            7 => Dtype::Q5_1,
            8 => Dtype::Q8_0,
            12 => Dtype::Q4_K,
            13 => Dtype::Q5_K,
            14 => Dtype::Q6_K,
            _ => return None,
        })
    }

    /// The type's name as GGUF tools print it.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "F32",
            Dtype::F16 => "F16",
            Dtype::BF16 => "BF16",
            Dtype::Q4_0 => "Q4_0",
            Dtype::Q4_1 => "Q4_1",
            Dtype::Q5_0 => "Q5_0",
            Dtype::Q5_1 => "Q5_1",
            Dtype::Q8_0 => "Q8_0",
            Dtype::Q4_K => "Q4_K",
            Dtype::Q5_K => "Q5_K",
            Dtype::Q6_K => "Q6_K",
        }
    }

    /// `(weights, bytes)` of one block.
    pub fn block(self) -> (usize, usize) {
        match self {
            Dtype::F32 => (1, 4),
            Dtype::F16 | Dtype::BF16 => (1, 2),
            Dtype::Q4_0 => (32, 18),
            Dtype::Q4_1 => (32, 20),
            Dtype::Q5_0 => (32, 22),
            Dtype::Q5_1 => (32, 24),
            Dtype::Q8_0 => (32, 34),
            Dtype::Q4_K => (256, 144),
            Dtype::Q5_K => (256, 176),
            Dtype::Q6_K => (256, 210),
        }
    }

    /// Bytes of `n` weights; `None` unless `n` is whole blocks.
    pub fn bytes_for(self, n: usize) -> Option<usize> {
        let (w, b) = self.block();
        n.is_multiple_of(w).then(|| n / w * b)
    }

    /// [`decode`](Self::decode) compiled for `isa`'s vector width: the
    /// same operations on the same values (the compiler vectorizes the
    /// loops and never fuses a multiply with an add), so the same bits.
    pub fn decode_on(self, isa: Isa, src: &[u8], out: &mut [f32]) {
        match isa {
            // SAFETY: the ISA was detected on this CPU.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => unsafe { self.decode_avx512(src, out) },
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => unsafe { self.decode_avx2(src, out) },
            _ => self.decode(src, out),
        }
    }

    /// # Safety
    /// The CPU has AVX-512F.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,fma")]
    unsafe fn decode_avx512(self, src: &[u8], out: &mut [f32]) {
        self.decode_body(src, out)
    }

    /// # Safety
    /// The CPU has AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn decode_avx2(self, src: &[u8], out: &mut [f32]) {
        self.decode_body(src, out)
    }

    /// Decodes `src` (whole blocks) into `out`, one weight per value, with
    /// the reference's arithmetic (module docs).
    ///
    /// # Panics
    /// When `src` is not exactly the blocks of `out.len()` weights.
    pub fn decode(self, src: &[u8], out: &mut [f32]) {
        self.decode_body(src, out)
    }

    #[inline(always)]
    fn decode_body(self, src: &[u8], out: &mut [f32]) {
        let (w, b) = self.block();
        assert!(
            out.len().is_multiple_of(w) && src.len() == out.len() / w * b,
            "{} blocks: {} bytes for {} weights",
            self.name(),
            src.len(),
            out.len()
        );
        match self {
            Dtype::F32 => each(src, out, |s: &[u8; 4], o: &mut [f32; 1]| {
                o[0] = f32::from_le_bytes(*s)
            }),
            Dtype::F16 => each(src, out, |s: &[u8; 2], o: &mut [f32; 1]| {
                o[0] = f16(s[0], s[1])
            }),
            Dtype::BF16 => each(src, out, |s: &[u8; 2], o: &mut [f32; 1]| {
                o[0] = f32::from_bits((u16::from_le_bytes(*s) as u32) << 16)
            }),
            Dtype::Q4_0 => each(src, out, q4_0),
            Dtype::Q4_1 => each(src, out, q4_1),
            Dtype::Q5_0 => each(src, out, q5_0),
            Dtype::Q5_1 => each(src, out, q5_1),
            Dtype::Q8_0 => each(src, out, q8_0),
            Dtype::Q4_K => each(src, out, q4_k),
            Dtype::Q5_K => each(src, out, q5_k),
            Dtype::Q6_K => each(src, out, q6_k),
        }
    }
}

/// `block` on each `B`-byte block of `src` and its `W` weights of `out`
/// (fixed-size arrays: no bounds checks, so the loops vectorize).
#[inline(always)]
fn each<const B: usize, const W: usize>(
    src: &[u8],
    out: &mut [f32],
    block: impl Fn(&[u8; B], &mut [f32; W]),
) {
    let (src, _) = src.as_chunks::<B>();
    let (out, _) = out.as_chunks_mut::<W>();
    for (s, o) in src.iter().zip(out) {
        block(s, o);
    }
}

/// An IEEE half's exact f32 value, in integer operations the decoding
/// loops inline (`half`'s conversion is an out-of-line call that detects
/// F16C at run time: half the decoding time went to it). Subnormals are
/// scaled by an exact float subtraction; tested against `half` on all
/// 65,536 values.
#[inline(always)]
pub(crate) fn f16(lo: u8, hi: u8) -> f32 {
    let h = u16::from_le_bytes([lo, hi]) as u32;
    const EXP: u32 = 0x7C00 << 13;
    let mut o = (h & 0x7FFF) << 13;
    let exp = o & EXP;
    o += (127 - 15) << 23;
    if exp == EXP {
        o += (128 - 16) << 23; // infinity or NaN
    } else if exp == 0 {
        o += 1 << 23; // subnormal: renormalise exactly
        o = (f32::from_bits(o) - f32::from_bits(113 << 23)).to_bits();
    }
    f32::from_bits(o | ((h & 0x8000) << 16))
}

/// `N` bytes of `s` from `at`, as an array.
#[inline(always)]
fn sub<const N: usize>(s: &[u8], at: usize) -> &[u8; N] {
    s[at..at + N]
        .try_into()
        .expect("a fixed range of a fixed block")
}

/// quants.py `Q4_0.dequantize_blocks`: `d * (q - 8)`.
#[inline(always)]
fn q4_0(s: &[u8; 18], o: &mut [f32; 32]) {
    let d = f16(s[0], s[1]);
    let qs: &[u8; 16] = sub(s, 2);
    for j in 0..16 {
        o[j] = d * ((qs[j] & 0x0F) as i32 - 8) as f32;
        o[j + 16] = d * ((qs[j] >> 4) as i32 - 8) as f32;
    }
}

/// `Q4_1.dequantize_blocks`: `(d * q) + m`.
#[inline(always)]
fn q4_1(s: &[u8; 20], o: &mut [f32; 32]) {
    let (d, m) = (f16(s[0], s[1]), f16(s[2], s[3]));
    let qs: &[u8; 16] = sub(s, 4);
    for j in 0..16 {
        o[j] = d * (qs[j] & 0x0F) as f32 + m;
        o[j + 16] = d * (qs[j] >> 4) as f32 + m;
    }
}

/// Weight `j`'s fifth bit, as bit 4.
#[inline(always)]
fn fifth(qh: u32, j: usize) -> i32 {
    (((qh >> j) & 1) << 4) as i32
}

/// `Q5_0.dequantize_blocks`: `d * (q - 16)`.
#[inline(always)]
fn q5_0(s: &[u8; 22], o: &mut [f32; 32]) {
    let d = f16(s[0], s[1]);
    let qh = u32::from_le_bytes(*sub(s, 2));
    let qs: &[u8; 16] = sub(s, 6);
    for j in 0..16 {
        let lo = (qs[j] & 0x0F) as i32 | fifth(qh, j);
        let hi = (qs[j] >> 4) as i32 | fifth(qh, j + 16);
        o[j] = d * (lo - 16) as f32;
        o[j + 16] = d * (hi - 16) as f32;
    }
}

/// `Q5_1.dequantize_blocks`: `(d * q) + m`.
#[inline(always)]
fn q5_1(s: &[u8; 24], o: &mut [f32; 32]) {
    let (d, m) = (f16(s[0], s[1]), f16(s[2], s[3]));
    let qh = u32::from_le_bytes(*sub(s, 4));
    let qs: &[u8; 16] = sub(s, 8);
    for j in 0..16 {
        let lo = (qs[j] & 0x0F) as i32 | fifth(qh, j);
        let hi = (qs[j] >> 4) as i32 | fifth(qh, j + 16);
        o[j] = d * lo as f32 + m;
        o[j + 16] = d * hi as f32 + m;
    }
}

/// `Q8_0.dequantize_blocks`: `x * d`.
#[inline(always)]
fn q8_0(s: &[u8; 34], o: &mut [f32; 32]) {
    let d = f16(s[0], s[1]);
    let qs: &[u8; 32] = sub(s, 2);
    for j in 0..32 {
        o[j] = (qs[j] as i8) as f32 * d;
    }
}

/// `Q4_K.get_scale_min`: the eight 6-bit scales and minimums of a K block.
#[inline(always)]
pub(crate) fn scales_mins(s: &[u8; 12]) -> ([u8; 8], [u8; 8]) {
    let (mut sc, mut mn) = ([0u8; 8], [0u8; 8]);
    for i in 0..4 {
        sc[i] = s[i] & 0x3F;
        mn[i] = s[i + 4] & 0x3F;
        sc[i + 4] = (s[i + 8] & 0x0F) | ((s[i] >> 2) & 0x30);
        mn[i + 4] = (s[i + 8] >> 4) | ((s[i + 4] >> 2) & 0x30);
    }
    (sc, mn)
}

/// `Q4_K.dequantize_blocks`: sub-block `2i` is the low nibbles of bytes
/// `32i..32i+32`, `2i+1` their high nibbles; `(d * sc) * q - dmin * m`.
#[inline(always)]
fn q4_k(s: &[u8; 144], o: &mut [f32; 256]) {
    let (d, dmin) = (f16(s[0], s[1]), f16(s[2], s[3]));
    let (sc, mn) = scales_mins(sub(s, 4));
    for i in 0..4 {
        let qs: &[u8; 32] = sub(s, 16 + 32 * i);
        let (d1, m1) = (d * sc[2 * i] as f32, dmin * mn[2 * i] as f32);
        let (d2, m2) = (d * sc[2 * i + 1] as f32, dmin * mn[2 * i + 1] as f32);
        let (lo, hi) = o[64 * i..64 * i + 64].split_at_mut(32);
        for l in 0..32 {
            lo[l] = d1 * (qs[l] & 0x0F) as f32 - m1;
            hi[l] = d2 * (qs[l] >> 4) as f32 - m2;
        }
    }
}

/// `Q5_K.dequantize_blocks`: as Q4_K, with bit `s` of `qh[l]` the fifth
/// bit of weight `l` of sub-block `s`.
#[inline(always)]
fn q5_k(s: &[u8; 176], o: &mut [f32; 256]) {
    let (d, dmin) = (f16(s[0], s[1]), f16(s[2], s[3]));
    let (sc, mn) = scales_mins(sub(s, 4));
    let qh: &[u8; 32] = sub(s, 16);
    for i in 0..4 {
        let qs: &[u8; 32] = sub(s, 48 + 32 * i);
        let (d1, m1) = (d * sc[2 * i] as f32, dmin * mn[2 * i] as f32);
        let (d2, m2) = (d * sc[2 * i + 1] as f32, dmin * mn[2 * i + 1] as f32);
        let (lo, hi) = o[64 * i..64 * i + 64].split_at_mut(32);
        for l in 0..32 {
            let a = (qs[l] & 0x0F) | (((qh[l] >> (2 * i)) & 1) << 4);
            let b = (qs[l] >> 4) | (((qh[l] >> (2 * i + 1)) & 1) << 4);
            lo[l] = d1 * a as f32 - m1;
            hi[l] = d2 * b as f32 - m2;
        }
    }
}

/// `Q6_K.dequantize_blocks`: in half `h` (weights `128h..`), weight `w`'s
/// low four bits are the low (w < 64) or high nibble of `ql[64h + w % 64]`,
/// its high two bits `qh[32h + w % 32] >> 2(w / 32)`; `(d * sc) * (q - 32)`
/// with one `i8` scale per 16 weights.
#[inline(always)]
fn q6_k(s: &[u8; 210], o: &mut [f32; 256]) {
    let mut dsc = [0f32; 16];
    let mut q = [0i8; 256];
    q6_k_parts(s, &mut dsc, &mut q);
    for i in 0..256 {
        o[i] = dsc[i / 16] * q[i] as f32;
    }
}

/// A Q6_K block's factors: `dsc[0..16]` the scales `d · sc` of its 16
/// groups of 16 weights, `q` each weight's 6-bit value less 32 (the weight
/// is `dsc[i / 16] · q[i]`, [`q6_k`]).
#[inline(always)]
pub(crate) fn q6_k_parts(s: &[u8; 210], dsc: &mut [f32; 16], q: &mut [i8; 256]) {
    let sc: &[u8; 16] = sub(s, 192);
    let d = f16(s[208], s[209]);
    for (v, &c) in dsc.iter_mut().zip(sc) {
        *v = d * (c as i8) as f32;
    }
    // In 32-weight groups `g` of each half, so each loop runs on fixed
    // offsets.
    for h in 0..2 {
        let hb: &[u8; 32] = sub(s, 128 + 32 * h);
        for g in 0..4 {
            let l: &[u8; 32] = sub(s, 64 * h + 32 * (g % 2));
            let at = 128 * h + 32 * g;
            for i in 0..32 {
                let low = if g < 2 { l[i] & 0x0F } else { l[i] >> 4 };
                let high = (hb[i] >> (2 * g)) & 3;
                q[at + i] = ((low | (high << 4)) as i32 - 32) as i8;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Worked blocks, one per type, with the weights written out by hand
    /// from the layouts in the module docs.
    #[test]
    fn worked_blocks_decode_as_the_layouts_say() {
        let h = |v: f32| half::f16::from_f32(v).to_le_bytes();
        // Q4_0: d = 0.5, byte 0 = 0x3A: weight 0 = (10 - 8) · 0.5, weight 16 = (3 - 8) · 0.5.
        let mut b = h(0.5).to_vec();
        b.extend([0x3A].iter().chain([0x88u8; 15].iter()));
        let mut o = [0f32; 32];
        Dtype::Q4_0.decode(&b, &mut o);
        assert_eq!((o[0], o[16], o[1]), (1.0, -2.5, 0.0));
        // Q5_1: d = 1, m = -16, qh bit 16 set: weight 16 = (2 | 16) - 16 = 2.
        let mut b = [h(1.0), h(-16.0)].concat();
        b.extend(0x0001_0000u32.to_le_bytes());
        b.extend([0x21].iter().chain([0u8; 15].iter()));
        Dtype::Q5_1.decode(&b, &mut o);
        assert_eq!((o[0], o[16], o[1]), (-15.0, 2.0, -16.0));
        // Q5_0: the same nibbles, qh bit 0: weight 0 = (1 | 16) - 16 = 1.
        let mut b = h(2.0).to_vec();
        b.extend(1u32.to_le_bytes());
        b.extend([0x21].iter().chain([0u8; 15].iter()));
        Dtype::Q5_0.decode(&b, &mut o);
        assert_eq!((o[0], o[16], o[1]), (2.0, -28.0, -32.0));
        // BF16 and F16.
        let mut one = [0f32; 1];
        Dtype::BF16.decode(&[0x80, 0x3F], &mut one);
        assert_eq!(one[0], 1.0);
        Dtype::F16.decode(&h(-2.0), &mut one);
        assert_eq!(one[0], -2.0);
    }

    #[test]
    fn k_blocks_use_the_six_bit_scales_and_their_high_bits() {
        let h = |v: f32| half::f16::from_f32(v).to_le_bytes();
        // Q4_K: sub-block 1's scale 3 (byte 1), sub-block 4's scale
        // 0x25 | high bits from byte 0's top two bits (0b01 → 0x10).
        let mut s = [0u8; 12];
        s[0] = 0x40 | 2; // sc[0] = 2, high bits of sc[4] = 1
        s[1] = 3; // sc[1] = 3
        s[4] = 1; // mn[0] = 1
        s[8] = 0x05; // sc[4] low nibble 5 → sc[4] = 0x15 = 21
        let mut b = [h(0.5), h(0.25)].concat();
        b.extend(s);
        let mut qs = [0u8; 128];
        qs[0] = 0x97; // weight 0 (sub-block 0) = 7, weight 32 (sub-block 1) = 9
        qs[64] = 0x02; // weight 128 (sub-block 4) = 2
        b.extend(qs);
        let mut o = [0f32; 256];
        Dtype::Q4_K.decode(&b, &mut o);
        assert_eq!(o[0], 0.5 * 2.0 * 7.0 - 0.25);
        assert_eq!(o[32], 0.5 * 3.0 * 9.0);
        assert_eq!(o[128], 0.5 * 21.0 * 2.0);
        // Q6_K: weight 0 = (ql[0] low | qh[0] bits 0-1) - 32; weight 64 its
        // high nibble with qh[0] bits 4-5 (w / 32 = 2); scale per 16.
        let mut b = vec![0u8; 210];
        b[0] = 0x31; // low nibble 1 (weight 0), high nibble 3 (weight 64)
        b[128] = 0b0010_0011; // weight 0: high bits 3; weight 64: bits 4-5 = 2
        b[192] = 2; // scale of weights 0..16
        b[196] = (-1i8) as u8; // scale of weights 64..80
        b[208..210].copy_from_slice(&h(0.5));
        Dtype::Q6_K.decode(&b, &mut o);
        assert_eq!(o[0], 0.5 * 2.0 * ((1 | (3 << 4)) - 32) as f32);
        assert_eq!(o[64], -0.5 * ((3 | (2 << 4)) - 32) as f32);
        assert_eq!(o[1], 0.5 * 2.0 * -32.0);
    }

    #[test]
    fn halves_convert_exactly() {
        for h in 0..=u16::MAX {
            let [lo, hi] = h.to_le_bytes();
            let (got, want) = (f16(lo, hi), half::f16::from_bits(h).to_f32());
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "{h:#06x}: {got} against {want}"
            );
        }
    }

    #[test]
    fn every_isa_decodes_the_same_bits() {
        let mut s = 5u64;
        for &t in SUPPORTED_TYPES {
            let n = 512;
            let raw: Vec<u8> = (0..t.bytes_for(n).unwrap())
                .map(|_| {
                    s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (s >> 56) as u8
                })
                .collect();
            let mut want = vec![0f32; n];
            t.decode(&raw, &mut want);
            for isa in Isa::available() {
                let mut got = vec![0f32; n];
                t.decode_on(isa, &raw, &mut got);
                let same = want
                    .iter()
                    .zip(&got)
                    .all(|(a, b)| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()));
                assert!(same, "{} on {isa:?}", t.name());
            }
        }
    }

    #[test]
    fn blocks_of_the_wrong_size_are_refused() {
        assert_eq!(Dtype::Q4_K.bytes_for(512), Some(288));
        assert_eq!(Dtype::Q4_K.bytes_for(100), None);
        assert_eq!(Dtype::F16.bytes_for(3), Some(6));
    }
}
