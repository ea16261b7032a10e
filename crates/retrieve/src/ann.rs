//! Approximate dense search (`--ann`): an HNSW graph (the `hnsw_rs` crate)
//! over the embedding shards, built once per set of shards and parameters,
//! kept as derived data under `<store>/indexes/hnsw-<key>/` and reused.
//!
//! * Deterministic: points are inserted one at a time in corpus order and
//!   the crate draws levels from a fixed seed, so the same shards give the
//!   same graph and the same results on any machine.
//! * Cosine: the graph's distance is `1 − ⟨a, b⟩`, so it needs unit
//!   vectors (all-MiniLM-L6-v2 and most served embedding models return
//!   them); other vectors are refused with the exact search named instead.
//! * Measured: every run computes the exact top-k of a sample of its
//!   questions (streamed over the shards) and reports recall@10 of the
//!   graph against it; the contexts artifact's manifest records it.

use arrow::array::{Array, BinaryArray};
use hnsw_rs::prelude::{AnnT, Distance, Hnsw, HnswIo};
use ragprobe_artifact::{column::column, sha256_hex, ArtifactError, Store};
use rayon::prelude::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

use crate::dense::{exact_search, progress_bar, shard_layout};
use crate::{sort_hits, Hit, Result, RetrieveError};

/// Bump when the graph's construction changes.
const ANN_VERSION: u32 = 1;
/// Most layers of the graph (the crate's maximum).
const MAX_LAYERS: usize = 16;
/// Questions whose exact top-k is computed to measure recall.
const RECALL_SAMPLE: usize = 200;
/// File stem of the dumped graph.
const BASENAME: &str = "hnsw";

/// HNSW parameters (Malkov & Yashunin 2018).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnnOptions {
    /// Links per node and layer (`M`; layer 0 keeps twice as many).
    pub m: usize,
    /// Candidates explored while inserting a point.
    pub ef_construction: usize,
    /// Candidates explored per query (at least `k`): recall against speed.
    pub ef_search: usize,
}

impl Default for AnnOptions {
    fn default() -> Self {
        AnnOptions {
            m: 16,
            ef_construction: 100,
            ef_search: 64,
        }
    }
}

impl AnnOptions {
    /// The parameters as recorded in recipes.
    pub fn to_json(self) -> Value {
        json!({"kind": "hnsw", "m": self.m, "ef_construction": self.ef_construction, "ef_search": self.ef_search})
    }
}

/// `1 − ⟨a, b⟩`, floored at 0 (unit vectors: a cosine distance), summed in
/// 16 lanes so that it vectorises.
#[derive(Debug, Clone, Copy, Default)]
pub struct CosineDistance;

/// ⟨a, b⟩ in 16 interleaved partial sums.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 16];
    let (ca, cb) = (a.chunks_exact(16), b.chunks_exact(16));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..16 {
            acc[i] += x[i] * y[i];
        }
    }
    let tail: f32 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + tail
}

impl Distance<f32> for CosineDistance {
    fn eval(&self, va: &[f32], vb: &[f32]) -> f32 {
        (1.0 - dot(va, vb)).max(0.0)
    }
}

fn index_dir(store: &Store, shards: &[String], opts: AnnOptions) -> PathBuf {
    let key = sha256_hex(
        format!(
            "hnsw|v{ANN_VERSION}|{}|{}|{}",
            shards.join(","),
            opts.m,
            opts.ef_construction
        )
        .as_bytes(),
    );
    store
        .root()
        .join("indexes")
        .join(format!("hnsw-{}", &key[..24]))
}

fn io_error(path: &Path, e: impl std::fmt::Display) -> RetrieveError {
    RetrieveError::Index(format!("{}: {e}", path.display()))
}

/// Builds the graph over every vector of `shards` (in corpus order) and
/// publishes it to `dir` by renaming a finished temporary directory.
/// `total` is the shards' row count.
fn build(
    store: &Store,
    shards: &[String],
    total: u64,
    opts: AnnOptions,
    dir: &Path,
    progress: bool,
) -> Result<()> {
    let graph: Hnsw<f32, CosineDistance> = Hnsw::new(
        opts.m,
        total.max(1) as usize,
        MAX_LAYERS,
        opts.ef_construction,
        CosineDistance,
    );
    let bar = progress_bar(progress, total, "hnsw index", "vectors");
    let mut vector: Vec<f32> = Vec::new();
    for id in shards {
        let (dim, dtype, mut row) = shard_layout(store, id)?;
        for batch in store.open_batches(id, 8192)? {
            let batch = batch.map_err(ArtifactError::from)?;
            let v = column::<BinaryArray>(&batch, "vector")?;
            for i in 0..v.len() {
                vector.clear();
                dtype.decode(v.value(i), &mut vector);
                if vector.len() != dim {
                    return Err(RetrieveError::Invalid(format!(
                        "embeddings artifact {} row {row}: {} values where {dim} were expected",
                        &id[..12],
                        vector.len()
                    )));
                }
                let norm = dot(&vector, &vector).sqrt();
                if (norm - 1.0).abs() > 1e-2 {
                    return Err(RetrieveError::Invalid(format!(
                        "--ann needs unit vectors (cosine); corpus row {row} has norm {norm:.4}: use exact search (without --ann)"
                    )));
                }
                graph.insert_slice((&vector, row as usize));
                row += 1;
            }
            bar.inc(v.len() as u64);
        }
    }
    bar.finish_and_clear();
    let tmp = store.tmp_path(".hnsw");
    std::fs::create_dir_all(&tmp).map_err(|e| io_error(&tmp, e))?;
    graph
        .file_dump(&tmp, BASENAME)
        .map_err(|e| io_error(&tmp, e))?;
    std::fs::write(
        tmp.join(".complete"),
        format!("{}\n{total}\n", shards.join("\n")),
    )
    .map_err(|e| io_error(&tmp, e))?;
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io_error(parent, e))?;
    }
    match std::fs::rename(&tmp, dir) {
        Ok(()) => Ok(()),
        Err(_) if dir.join(".complete").is_file() => {
            let _ = std::fs::remove_dir_all(&tmp);
            Ok(())
        }
        Err(e) => Err(io_error(dir, e)),
    }
}

/// Top `n` passages per query from the graph (built first if needed), and
/// what the contexts manifest records about it: the parameters and
/// recall@10 against the exact search on a sample of the queries.
pub fn search(
    store: &Store,
    shards: &[String],
    queries: &[f32],
    dim: usize,
    n: usize,
    opts: AnnOptions,
    progress: bool,
) -> Result<(Vec<Vec<Hit>>, Value)> {
    let nq = queries.len() / dim.max(1);
    let mut total = 0u64;
    for id in shards {
        let (d, _, _) = shard_layout(store, id)?;
        if d != dim {
            return Err(RetrieveError::Invalid(format!(
                "embeddings artifact {} holds {d}-wide vectors but the questions were embedded with {dim} values",
                &id[..id.len().min(12)]
            )));
        }
        total += store.manifest(id)?.rows;
    }
    if total == 0 || n == 0 {
        return Ok((vec![Vec::new(); nq], opts.to_json()));
    }
    let dir = index_dir(store, shards, opts);
    let started = std::time::Instant::now();
    if !dir.join(".complete").is_file() {
        build(store, shards, total, opts, &dir, progress)?;
        store.log_run(json!({"stage": "hnsw-build", "index": dir.file_name().map(|f| f.to_string_lossy().to_string()), "seconds": started.elapsed().as_secs_f64()}));
    } else {
        tracing::info!("hnsw: reusing index {}", dir.display());
    }
    let searched = std::time::Instant::now();
    let mut io = HnswIo::new(&dir, BASENAME);
    let graph: Hnsw<f32, CosineDistance> = io.load_hnsw().map_err(|e| io_error(&dir, e))?;
    let ef = opts.ef_search.max(n);
    let results: Vec<Vec<Hit>> = queries
        .par_chunks(dim.max(1))
        .map(|q| {
            let mut hits: Vec<Hit> = graph
                .search(q, n, ef)
                .into_iter()
                .map(|nb| Hit {
                    row: nb.d_id as u64,
                    score: (1.0 - nb.distance) as f64,
                })
                .collect();
            sort_hits(&mut hits);
            hits.truncate(n);
            hits
        })
        .collect();
    store.log_run(json!({"stage": "hnsw-search", "queries": results.len(), "seconds": searched.elapsed().as_secs_f64()}));
    // Recall@10 (or @n when n < 10) of a sample against the exact search.
    let sample = (queries.len() / dim.max(1)).min(RECALL_SAMPLE);
    let at = n.min(10);
    let recall = if sample > 0 && at > 0 {
        let exact = exact_search(store, shards, &queries[..sample * dim], dim, at)?;
        let found: usize = exact
            .iter()
            .zip(&results)
            .map(|(e, a)| {
                let got: std::collections::HashSet<u64> =
                    a.iter().take(at).map(|h| h.row).collect();
                e.iter().filter(|h| got.contains(&h.row)).count()
            })
            .sum();
        found as f64 / (sample * at) as f64
    } else {
        f64::NAN
    };
    let mut info = opts.to_json();
    info[format!("recall_at_{at}")] = json!(recall);
    info["recall_queries"] = json!(sample);
    Ok((results, info))
}
