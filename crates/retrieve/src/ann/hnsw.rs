//! The HNSW graph (`--ann hnsw`, the `hnsw_rs` crate).
//!
//! * Deterministic: points are inserted one at a time in corpus order and
//!   the crate draws levels from a fixed seed, so the same shards give the
//!   same graph and the same results on any machine.
//! * Cosine: the graph's distance is `1 − ⟨a, b⟩`, so it needs unit
//!   vectors (all-MiniLM-L6-v2 and most served embedding models return
//!   them); other vectors are refused with the exact search named instead.

use hnsw_rs::prelude::{AnnT, Distance, Hnsw, HnswIo};
use ragprobe_artifact::Store;
use rayon::prelude::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

use super::{index_dir, non_finite_row, publish, ready, verify_files, BuildDir, IndexKind};
use crate::dense::{for_each_block, progress_bar};
use crate::{sort_hits, Hit, Result, RetrieveError};

/// Bump when the graph's construction changes.
const ANN_VERSION: u32 = 1;
/// Most layers of the graph (the crate's maximum).
const MAX_LAYERS: usize = 16;
/// File stem of the dumped graph.
const BASENAME: &str = "hnsw";

/// HNSW parameters (Malkov & Yashunin 2018).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HnswOptions {
    /// Links per node and layer (`M`; layer 0 keeps twice as many).
    pub m: usize,
    /// Candidates explored while inserting a point.
    pub ef_construction: usize,
    /// Candidates explored per query (at least `k`): recall against speed.
    pub ef_search: usize,
}

impl Default for HnswOptions {
    fn default() -> Self {
        HnswOptions {
            m: 16,
            ef_construction: 100,
            ef_search: 64,
        }
    }
}

impl HnswOptions {
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

fn graph_dir(store: &Store, shards: &[String], opts: HnswOptions) -> PathBuf {
    let key = format!(
        "hnsw|v{ANN_VERSION}|{}|{}|{}",
        shards.join(","),
        opts.m,
        opts.ef_construction
    );
    index_dir(store, "hnsw", &key)
}

/// An error about an HNSW index file.
fn io_error(path: &Path, e: impl std::fmt::Display) -> RetrieveError {
    IndexKind::Hnsw.error(path, e)
}

/// Builds the graph over every vector of `shards` (in corpus order) and
/// publishes it to `dir` by renaming a finished temporary directory.
/// `total` is the shards' row count.
fn build(
    store: &Store,
    shards: &[String],
    total: u64,
    dim: usize,
    opts: HnswOptions,
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
    for_each_block(store, shards, dim, 8192, |vectors, rows, first| {
        if let Some(row) = non_finite_row(vectors, dim, first) {
            return Err(RetrieveError::Invalid(format!(
                "corpus row {row} holds a value that is not finite (NaN or infinite); re-embed the corpus"
            )));
        }
        for (i, vector) in vectors.chunks_exact(dim).enumerate() {
            let row = first + i as u64;
            let norm = dot(vector, vector).sqrt();
            if (norm - 1.0).abs() > 1e-2 {
                return Err(RetrieveError::Invalid(format!(
                    "--ann hnsw needs unit vectors (cosine); corpus row {row} has norm {norm:.4}: use --ann ivf or exact search (without --ann)"
                )));
            }
            graph.insert_slice((vector, row as usize));
        }
        bar.inc(rows as u64);
        Ok(true)
    })?;
    bar.finish_and_clear();
    let tmp = BuildDir::create(store, IndexKind::Hnsw)?;
    graph
        .file_dump(tmp.path(), BASENAME)
        .map_err(|e| io_error(tmp.path(), e))?;
    // The crate writes without syncing: sync its files before the marker.
    for entry in std::fs::read_dir(tmp.path()).map_err(|e| io_error(tmp.path(), e))? {
        let path = entry.map_err(|e| io_error(tmp.path(), e))?.path();
        std::fs::File::open(&path)
            .and_then(|f| f.sync_all())
            .map_err(|e| io_error(&path, e))?;
    }
    publish(tmp, dir, shards, total)
}

/// Top `n` passages per query from the graph (built first if needed).
pub(super) fn search(ask: super::Ask<'_>, opts: HnswOptions) -> Result<(Vec<Vec<Hit>>, Value)> {
    let super::Ask {
        store,
        shards,
        queries,
        dim,
        n,
        ..
    } = ask;
    let dir = graph_dir(store, shards, opts);
    let started = std::time::Instant::now();
    if !ready(store, IndexKind::Hnsw, &dir)? {
        build(store, shards, ask.total, dim, opts, &dir, ask.progress)?;
        store.log_run(json!({"stage": "hnsw-build", "index": dir.file_name().map(|f| f.to_string_lossy().to_string()), "seconds": started.elapsed().as_secs_f64()}));
    } else {
        tracing::info!("hnsw: reusing index {}", dir.display());
    }
    let searched = std::time::Instant::now();
    // The crate panics or aborts on a damaged graph (a truncated or flipped
    // file, a huge header): its files are checked against the hashes
    // recorded at build time before it reads them.
    verify_files(IndexKind::Hnsw, &dir)?;
    let mut io = HnswIo::new(&dir, BASENAME);
    let io_ref = &mut io;
    // (`once` makes the closure FnOnce, so the graph may borrow `io`.)
    fn once<R>(f: impl FnOnce() -> R) -> impl FnOnce() -> R {
        f
    }
    let loaded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(once(move || {
        io_ref.load_hnsw()
    })));
    let graph: Hnsw<f32, CosineDistance> = match loaded {
        Ok(g) => g.map_err(|e| io_error(&dir, e))?,
        Err(_) => return Err(IndexKind::Hnsw.damaged(&dir, "the graph files could not be loaded")),
    };
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
    Ok((results, json!({})))
}
