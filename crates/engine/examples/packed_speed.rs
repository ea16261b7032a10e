//! One-token (decode-step) products with the block kernels, per GGUF type,
//! at the shapes of SmolLM2-135M and Qwen2.5-0.5B: GB/s of the file's
//! bytes, so runs of two builds of the engine compare directly; f32 decoded
//! in the dot product and integer dots with 8-bit activations.
//!
//!   cargo run --release -p ragprobe-engine --example packed_speed [THREADS]

use std::time::Instant;

use ragprobe_engine::kernels::Isa;
use ragprobe_engine::packed::{self, q8, Packed};
use ragprobe_engine::quant::Dtype;

fn main() {
    let threads = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("pool");
    let isa = Isa::detect();
    let mut s = 7u64;
    let mut byte = move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 33) as u8
    };
    for (dtype, k, n) in [
        (Dtype::Q4_1, 576, 3072),
        (Dtype::Q4_1, 1536, 576),
        (Dtype::Q4_1, 576, 49152),
        (Dtype::Q8_0, 896, 151936),
        (Dtype::Q5_0, 896, 9728),
        (Dtype::Q4_K, 4864, 896),
        (Dtype::Q6_K, 4864, 896),
    ] {
        let len = dtype.bytes_for(n * k).expect("whole blocks");
        let mut raw: Vec<u8> = (0..len).map(|_| byte()).collect();
        // Small finite f16 fields (the first four bytes of each block, or
        // Q6_K's last two).
        let (_, size) = dtype.block();
        for b in raw.chunks_exact_mut(size) {
            let at: &[usize] = if dtype == Dtype::Q6_K {
                &[208]
            } else {
                &[0, 2]
            };
            for &i in at {
                b[i + 1] = 0x1C | (b[i + 1] & 0x80);
            }
        }
        let p = Packed::from_blocks(dtype, k, &raw).expect("a held type");
        let x: Vec<f32> = (0..k).map(|i| (i % 13) as f32 * 0.01).collect();
        let mut out = vec![0f32; n];
        pool.install(|| packed::matmul(isa, &x, 1, &p, &mut out, 0, n));
        let reps = (4e9 / len as f64).clamp(5.0, 5000.0) as usize;
        let t0 = Instant::now();
        pool.install(|| {
            for _ in 0..reps {
                packed::matmul(isa, &x, 1, &p, &mut out, 0, n);
            }
        });
        let secs = t0.elapsed().as_secs_f64() / reps as f64;
        // The integer dots with 8-bit activations (the default for
        // generated tokens).
        let variant = q8::Variant::for_isa(isa);
        let t0 = Instant::now();
        pool.install(|| {
            for _ in 0..reps {
                let a = q8::Q8Rows::quantize(&x, 1, k);
                q8::matmul(variant, &a, &p, &mut out, 0, n);
            }
        });
        let q8_secs = t0.elapsed().as_secs_f64() / reps as f64;
        println!(
            "{:5} 1x{k} · {n}x{k}: {:6.2} GB/s (q8 dots {:6.2}) of the file's {:.1} MB, {:.3} ms",
            dtype.name(),
            len as f64 / secs / 1e9,
            len as f64 / q8_secs / 1e9,
            len as f64 / 1e6,
            secs * 1e3
        );
    }
}
