//! Raw engine speed on synthetic prompts: prompt tokens/s, single-stream
//! generated tokens/s and aggregate generated tokens/s at a batch size.
//! `cargo run --release -p ragprobe-engine --example engine_speed -- MODEL.gguf [PROMPT_TOKENS] [GEN] [BATCH] [THREADS]`

use ragprobe_engine::{BatchOptions, Model, Next, Request, Sink};

/// Counts tokens and notes when the first one came.
struct Count {
    start: Instant,
    first: Option<f64>,
    n: usize,
}

impl Sink for Count {
    type Error = ();
    fn token(&mut self, _: usize, _: u32) -> Next {
        self.first.get_or_insert(self.start.elapsed().as_secs_f64());
        self.n += 1;
        Next::Continue
    }
    fn done(&mut self, _: usize) -> Result<(), ()> {
        Ok(())
    }
}
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize, d: usize| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    let (plen, gen, batch, threads) = (arg(2, 400), arg(3, 64), arg(4, 8), arg(5, 0));
    let t0 = Instant::now();
    let model = Model::load(std::path::Path::new(&args[1]), threads).expect("load");
    let f = model.footprint();
    eprintln!(
        "loaded in {:.2} s ({:?}); weights {:.0} MB held ({} parts for the block kernels), {:.0} MB mapped",
        t0.elapsed().as_secs_f64(),
        model.isa(),
        f.owned as f64 / 1e6,
        f.block_parts,
        f.mapped as f64 / 1e6
    );
    let prompt = |seed: u32| -> Vec<u32> {
        (0..plen as u32)
            .map(|i| 200 + (i * 7919 + seed * 104729) % 40000)
            .collect()
    };
    let run = |prompts: &[Vec<u32>], batch: usize| {
        let reqs: Vec<Request> = prompts
            .iter()
            .map(|p| Request {
                prompt: p,
                max_tokens: gen,
            })
            .collect();
        let opts = BatchOptions {
            batch,
            prefix_entries: 0,
            ..Default::default()
        };
        let mut count = Count {
            start: Instant::now(),
            first: None,
            n: 0,
        };
        model.generate(&reqs, &opts, &mut count).unwrap();
        (
            count.first.unwrap(),
            count.start.elapsed().as_secs_f64(),
            count.n,
        )
    };
    let (pre, total, n) = run(&[prompt(1)], 1);
    println!(
        "single: prompt {:.0} tok/s ({plen} in {pre:.2} s), generation {:.1} tok/s",
        plen as f64 / pre,
        (n - 1) as f64 / (total - pre)
    );
    let prompts: Vec<Vec<u32>> = (0..batch as u32).map(prompt).collect();
    let (_, total, n) = run(&prompts, batch);
    println!("batch {batch}: {n} tokens in {total:.2} s including {} prompt tokens: {:.1} generated tok/s aggregate", plen * batch, n as f64 / total);
}
