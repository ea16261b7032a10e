//! Benchmark data for `scripts/bench-sharing.sh`: corpus artifacts of
//! pseudo-random text (incompressible, so a file is as large as asked) in a
//! store, each with its action record. Prints one id per line.
//!
//!   cargo run --release -p ragprobe-remote --example make_artifacts -- STORE SMALL_COUNT SMALL_KB LARGE_COUNT LARGE_MB

use ragprobe_artifact::{write_all, Corpus, CorpusRow, Recipe, Store};

fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One artifact of about `bytes` bytes.
fn artifact(store: &Store, tag: &str, bytes: usize) -> String {
    // A row is 100 words of 16 hex digits: about 1.7 kB.
    let rows = (bytes / 1700).max(1);
    let seed = mix(tag
        .bytes()
        .fold(0u64, |h, b| h.wrapping_mul(131).wrapping_add(b as u64)));
    let rows: Vec<CorpusRow> = (0..rows)
        .map(|i| CorpusRow {
            doc_id: format!("{tag}-{i:08}"),
            title: None,
            text: (0..100)
                .map(|w| format!("{:016x}", mix(seed ^ ((i as u64) << 8 | w))))
                .collect::<Vec<_>>()
                .join(" "),
            meta: None,
        })
        .collect();
    let recipe = Recipe::new("ingest", 1, serde_json::json!({ "bench": tag }));
    let w = write_all::<Corpus>(store, &recipe, rows, serde_json::Value::Null).expect("write");
    store
        .record_action(&recipe, std::slice::from_ref(&w))
        .expect("record");
    w.id
}

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() != 5 {
        eprintln!("usage: make_artifacts STORE SMALL_COUNT SMALL_KB LARGE_COUNT LARGE_MB");
        std::process::exit(2);
    }
    let n = |i: usize| a[i].parse::<usize>().expect("a number");
    let store = Store::open(&a[0]).expect("store");
    for i in 0..n(1) {
        println!("{}", artifact(&store, &format!("small{i}"), n(2) << 10));
    }
    for i in 0..n(3) {
        println!("{}", artifact(&store, &format!("large{i}"), n(4) << 20));
    }
}
