//! Times the MiniLM encoder on a file of texts, one per line, in batches
//! of `--batch` texts, and writes the vectors (little-endian f32, 384 per
//! text, in input order) so another build's vectors can be compared:
//!
//! `cargo run --release -p ragprobe-models --example encoder_bench -- TEXTS OUT.f32 [BATCH] [MODEL_DIR]`
//!
//! Prints one JSON line: texts, batch, wall seconds of `embed` (the
//! model loaded before the clock starts; tokenisation included) and texts/s. Used by
//! `scripts/bench-encoder.sh`, which runs it in this tree and in the tree
//! before the encoder moved onto the engine's kernels (candle's BERT).

use std::io::Write;
use std::time::Instant;

use ragprobe_models::Embedder;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: encoder_bench TEXTS OUT.f32 [BATCH] [MODEL_DIR]");
        std::process::exit(2);
    }
    let batch: usize = args
        .get(2)
        .map(|b| b.parse().expect("BATCH is a number"))
        .unwrap_or(32);
    let texts = std::fs::read_to_string(&args[0]).expect("TEXTS is readable");
    let texts: Vec<&str> = texts.lines().collect();
    let e = match args.get(3) {
        Some(dir) => Embedder::load(std::path::Path::new(dir)),
        None => Embedder::load_default(),
    }
    .expect("the MiniLM model loads");
    let t = Instant::now();
    let vectors = e.embed(&texts, batch).expect("embedding succeeds");
    let secs = t.elapsed().as_secs_f64();
    let mut out =
        std::io::BufWriter::new(std::fs::File::create(&args[1]).expect("OUT is writable"));
    for v in &vectors {
        for x in v.iter() {
            out.write_all(&x.to_le_bytes()).expect("write");
        }
    }
    out.flush().expect("write");
    println!(
        "{{\"texts\":{},\"batch\":{},\"seconds\":{:.3},\"texts_per_s\":{:.2}}}",
        texts.len(),
        batch,
        secs,
        texts.len() as f64 / secs
    );
}
