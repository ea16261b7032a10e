//! Artifacts with a lineage, for the remote tests.
#![allow(dead_code)]

use ragprobe_artifact::{write_all, Corpus, CorpusRow, Recipe, Store};
use serde_json::json;

/// A corpus artifact of `rows` passages of `words` words, made by a stage
/// with `recipe` (its action is recorded).
pub fn corpus(store: &Store, recipe: &Recipe, rows: usize, words: usize) -> String {
    let rows: Vec<CorpusRow> = (0..rows)
        .map(|i| CorpusRow {
            doc_id: format!("d{i:06}"),
            title: Some(format!("title {i}")),
            // Pseudo-random words, so the Parquet file is about as large as its text.
            text: (0..words)
                .map(|w| format!("{:x}", mix((i * 1_000_003 + w) as u64)))
                .collect::<Vec<_>>()
                .join(" "),
            meta: None,
        })
        .collect();
    let w = write_all::<Corpus>(store, recipe, rows, serde_json::Value::Null).unwrap();
    w.id
}

pub fn recipe(stage: &str, tag: &str, inputs: &[&str]) -> Recipe {
    let mut r = Recipe::new(stage, 1, json!({ "tag": tag }));
    r.inputs = inputs.iter().map(|s| s.to_string()).collect();
    r
}

/// A three-step lineage: `a` (ingest) -> `b` -> (`c`, `d`), with action
/// records. Returns (recipes, [a, b, c, d]).
pub fn lineage(store: &Store, tag: &str) -> (Vec<Recipe>, Vec<String>) {
    let ra = recipe("ingest", tag, &[]);
    let a = corpus(store, &ra, 20, 5);
    store
        .record_action(&ra, &[store_written(store, &a)])
        .unwrap();
    let rb = recipe("derive", tag, &[&a]);
    let b = corpus(store, &rb, 10, 5);
    store
        .record_action(&rb, &[store_written(store, &b)])
        .unwrap();
    let rc = recipe("split", tag, &[&b]);
    let c = corpus(store, &rc, 3, 5);
    let d = corpus(store, &rc, 4, 5);
    store
        .record_action(&rc, &[store_written(store, &c), store_written(store, &d)])
        .unwrap();
    (vec![ra, rb, rc], vec![a, b, c, d])
}

pub fn store_written(store: &Store, id: &str) -> ragprobe_artifact::Written {
    let m = store.manifest(id).unwrap();
    ragprobe_artifact::Written {
        kind: m.kind,
        id: id.to_string(),
        rows: m.rows,
    }
}

pub fn tmp_files(store: &Store) -> usize {
    std::fs::read_dir(store.root().join("tmp")).unwrap().count()
}

/// splitmix64: a fixed pseudo-random word per position.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
