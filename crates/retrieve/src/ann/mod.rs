//! Approximate dense search (`--ann`) over the embedding shards: an IVF
//! index (k-means cells scored with the exact kernel, the default) or an
//! HNSW graph (`hnsw_rs`). Either is built once per set of shards and
//! parameters, kept as derived data under `<store>/indexes/<kind>-<key>/`
//! (published by renaming a finished temporary directory) and reused.
//!
//! Every run computes the exact top-k of a sample of its questions
//! (streamed over the shards) and measures the index's recall@10 against
//! it; the contexts artifact's manifest records it.

mod hnsw;
mod ivf;

pub use hnsw::HnswOptions;
pub use ivf::IvfOptions;

use ragprobe_artifact::{sha256_hex, Store};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

use crate::dense::{exact_search, shard_layout, width_mismatch};
use crate::{Hit, Result, RetrieveError};

/// Questions whose exact top-k is computed to measure recall.
const RECALL_SAMPLE: usize = 200;

/// Which approximate index, with its parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AnnOptions {
    /// Inverted file: k-means cells, the nearest `nprobe` searched exactly.
    Ivf(IvfOptions),
    /// Hierarchical navigable small-world graph (Malkov & Yashunin 2018).
    Hnsw(HnswOptions),
}

impl Default for AnnOptions {
    fn default() -> Self {
        AnnOptions::Ivf(IvfOptions::default())
    }
}

impl AnnOptions {
    /// The parameters as recorded in recipes.
    pub fn to_json(self) -> Value {
        match self {
            AnnOptions::Ivf(o) => o.to_json(),
            AnnOptions::Hnsw(o) => o.to_json(),
        }
    }
}

/// `<store>/indexes/<kind>-<first 24 hex digits of sha256(key)>`.
fn index_dir(store: &Store, kind: &str, key: &str) -> PathBuf {
    let key = sha256_hex(key.as_bytes());
    store
        .root()
        .join("indexes")
        .join(format!("{kind}-{}", &key[..24]))
}

fn io_error(path: &Path, e: impl std::fmt::Display) -> RetrieveError {
    RetrieveError::Index(format!("{}: {e}", path.display()))
}

/// A temporary directory an index is built in: removed when dropped
/// unless [`publish`] moved it into place, so a failed build leaves no
/// corpus-sized leftovers (a killed one is left to `artifacts gc`).
struct BuildDir(PathBuf);

impl BuildDir {
    fn create(store: &Store, suffix: &str) -> Result<BuildDir> {
        let tmp = store.tmp_path(suffix);
        std::fs::create_dir_all(&tmp).map_err(|e| io_error(&tmp, e))?;
        Ok(BuildDir(tmp))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for BuildDir {
    fn drop(&mut self) {
        if self.0.exists() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Writes `bytes` to a new file in a build directory and fsyncs it (the
/// directory is published whole, so the file needs no rename of its own).
fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::File::create(path)
        .and_then(|mut f| {
            std::io::Write::write_all(&mut f, bytes)?;
            f.sync_all()
        })
        .map_err(|e| io_error(path, e))
}

/// fsyncs a directory (its entries: new files, a rename into it).
fn sync_dir(path: &Path) -> Result<()> {
    std::fs::File::open(path)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_error(path, e))
}

/// Publishes the finished index in `tmp` as `dir`: writes the `.complete`
/// marker (the shards and the row count), fsyncs it and the directory,
/// renames the directory into place and fsyncs its parent. Another
/// process that published the same index first wins; this copy is then
/// removed.
fn publish(tmp: BuildDir, dir: &Path, shards: &[String], total: u64) -> Result<()> {
    let text = format!("{}\n{total}\n", shards.join("\n"));
    write_synced(&tmp.path().join(".complete"), text.as_bytes())?;
    sync_dir(tmp.path())?;
    let parent = dir.parent().unwrap_or(dir);
    std::fs::create_dir_all(parent).map_err(|e| io_error(parent, e))?;
    match std::fs::rename(tmp.path(), dir) {
        Ok(()) => sync_dir(parent),
        Err(_) if dir.join(".complete").is_file() => Ok(()),
        Err(e) => Err(io_error(dir, e)),
    }
}

/// Top `n` passages per query from the approximate index (built first if
/// needed), and what the contexts manifest records about it: the
/// parameters, the index's own facts, and recall@10 against the exact
/// search on a sample of the queries.
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
            return Err(width_mismatch(id, d, dim));
        }
        total += store.manifest(id)?.rows;
    }
    let mut info = opts.to_json();
    if total == 0 || n == 0 {
        return Ok((vec![Vec::new(); nq], info));
    }
    // The exact top-10 (or top-n when n < 10) of a sample: what recall is
    // measured against, and what `--ann-recall` calibrates nprobe on.
    let sample = nq.min(RECALL_SAMPLE);
    let at = n.min(10);
    let exact = exact_search(store, shards, &queries[..sample * dim], dim, at)?;
    let (results, facts) = match opts {
        AnnOptions::Ivf(o) => {
            let truth = ivf::Truth { exact: &exact, at };
            ivf::search(store, shards, total, queries, dim, n, o, truth, progress)?
        }
        AnnOptions::Hnsw(o) => hnsw::search(store, shards, total, queries, dim, n, o, progress)?,
    };
    if let (Value::Object(info), Value::Object(facts)) = (&mut info, facts) {
        info.extend(facts);
    }
    let recall = if sample > 0 {
        recall_at(&exact, &results, at)
    } else {
        f64::NAN
    };
    info[format!("recall_at_{at}")] = json!(recall);
    info["recall_queries"] = json!(sample);
    Ok((results, info))
}

/// Recall@`at` of `approx` against `exact`: the share of each exact top-`at`
/// found in the approximate top-`at`, over every query of `exact`.
fn recall_at(exact: &[Vec<Hit>], approx: &[Vec<Hit>], at: usize) -> f64 {
    let found: usize = exact
        .iter()
        .zip(approx)
        .map(|(e, a)| {
            let got: std::collections::HashSet<u64> = a.iter().take(at).map(|h| h.row).collect();
            e.iter().take(at).filter(|h| got.contains(&h.row)).count()
        })
        .sum();
    let wanted: usize = exact.iter().map(|e| e.len().min(at)).sum();
    if wanted == 0 {
        f64::NAN
    } else {
        found as f64 / wanted as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(rows: &[u64]) -> Vec<Hit> {
        rows.iter().map(|&row| Hit { row, score: 0.0 }).collect()
    }

    /// Worked example: 2 queries at 3; the first finds 2 of its 3, the
    /// second 3 of 3 (order ignored) -> 5/6.
    #[test]
    fn recall_counts_exact_hits_found() {
        let exact = [hits(&[1, 2, 3]), hits(&[7, 8, 9])];
        let approx = [hits(&[1, 3, 4]), hits(&[9, 8, 7])];
        assert!((recall_at(&exact, &approx, 3) - 5.0 / 6.0).abs() < 1e-12);
        // Only the first `at` of the approximate list count.
        let approx = [hits(&[4, 1, 2, 3]), hits(&[7, 8, 9])];
        assert!((recall_at(&exact, &approx, 3) - 5.0 / 6.0).abs() < 1e-12);
    }
}
