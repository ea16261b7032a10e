//! Throughput of per-row accuracy + EM + F1 (the SQuAD metrics) on N
//! generated predictions with 1–5 gold aliases each, single-threaded and on
//! all cores. `cargo run --release -p ragprobe-score --example bench_rows -- 1000000`
//! Writes the same data as JSONL when given a path, for the Python baseline.

use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use std::io::Write;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let dump = args.get(2);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let vocab: Vec<String> = (0..5000).map(|i| format!("w{i}")).collect();
    let word = |rng: &mut rand_chacha::ChaCha8Rng| vocab[rng.random_range(0..vocab.len())].clone();
    let rows: Vec<(String, Vec<String>)> = (0..n)
        .map(|_| {
            let aliases: Vec<String> = (0..rng.random_range(1..=5))
                .map(|_| {
                    (0..rng.random_range(1..=3))
                        .map(|_| word(&mut rng))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect();
            let mut pred: Vec<String> = (0..rng.random_range(1..=12))
                .map(|_| word(&mut rng))
                .collect();
            if rng.random_bool(0.4) {
                pred.insert(0, format!("The {}.", aliases[0]));
            }
            (pred.join(" "), aliases)
        })
        .collect();
    if let Some(path) = dump {
        let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
        for (p, a) in &rows {
            writeln!(f, "{}", serde_json::json!({"prediction": p, "answers": a})).unwrap();
        }
    }
    let score = |(p, a): &(String, Vec<String>)| -> (bool, bool, f64) {
        ragprobe_matching::squad_scores(p, a)
    };
    let t = Instant::now();
    let single: f64 = rows.iter().map(|r| score(r).2).sum();
    let s1 = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let multi: f64 = rows.par_iter().map(|r| score(r).2).sum();
    let s2 = t.elapsed().as_secs_f64();
    assert!((single - multi).abs() < 1e-6 * n as f64);
    println!("rust_single_rows_per_s {:.0}", n as f64 / s1);
    println!(
        "rust_parallel_rows_per_s {:.0} ({} threads)",
        n as f64 / s2,
        rayon::current_num_threads()
    );
}
