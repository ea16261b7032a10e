//! GFLOP/s of the engine's matmul kernel at prompt-like and decode-like shapes
//! (for tuning tile shapes; run it before and after a kernel change).
//! `cargo run --release -p ragprobe-engine --example matmul_speed`
use ragprobe_engine::kernels::{matmul, Isa};
use std::time::Instant;

fn main() {
    let isa = Isa::detect();
    for (t, k, n) in [
        (400, 576, 3072),
        (400, 1536, 576),
        (400, 576, 960),
        (8, 576, 3072),
        (1, 576, 3072),
        (1, 576, 49152),
    ] {
        let x: Vec<f32> = (0..t * k).map(|i| (i % 13) as f32 * 0.01).collect();
        let w: Vec<f32> = (0..n * k).map(|i| (i % 7) as f32 * 0.01).collect();
        let mut out = vec![0f32; t * n];
        matmul(isa, &x, t, k, &w, n, &mut out);
        let reps = (2e10 / (2.0 * (t * k * n) as f64)).clamp(3.0, 2000.0) as usize;
        let t0 = Instant::now();
        for _ in 0..reps {
            matmul(isa, &x, t, k, &w, n, &mut out);
        }
        let s = t0.elapsed().as_secs_f64() / reps as f64;
        println!(
            "{t}x{k} · {n}x{k}: {:.1} GFLOP/s, {:.1} GB/s of weights, {:.3} ms",
            2.0 * (t * k * n) as f64 / s / 1e9,
            (n * k * 4) as f64 / s / 1e9,
            s * 1e3
        );
    }
}
