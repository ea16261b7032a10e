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

/// Which index a file belongs to: named in every error about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IndexKind {
    Ivf,
    Hnsw,
}

impl IndexKind {
    fn name(self) -> &'static str {
        match self {
            IndexKind::Ivf => "IVF",
            IndexKind::Hnsw => "HNSW",
        }
    }

    /// An error about `path` in this index.
    fn error(self, path: &Path, e: impl std::fmt::Display) -> RetrieveError {
        RetrieveError::Index {
            index: self.name(),
            message: format!("{}: {e}", path.display()),
        }
    }

    /// An index file that cannot be used: the error names it and says how
    /// to rebuild.
    fn damaged(self, path: &Path, what: impl std::fmt::Display) -> RetrieveError {
        self.error(path, format!("{what}; delete the directory to rebuild it"))
    }
}

/// The list of an index's files and their SHA-256, written when it is
/// published (`sha256sum` format, so `sha256sum -c` checks it by hand).
const HASHES: &str = "files.sha256";
/// Stamps of the files verified since they were last written (length,
/// times, inode): a file whose stamp is unchanged is not hashed again.
const VERIFIED: &str = ".verified";

/// Opens `path` for reading only if it is a regular file: a FIFO (which
/// would block the open) or a device in an index directory is an error.
fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Opening a FIFO without O_NONBLOCK waits for a writer; on a regular
        // file the flag changes nothing.
        o.custom_flags(libc::O_NONBLOCK);
    }
    let f = o.open(path)?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(f)
}

/// A temporary directory an index is built in: removed when dropped
/// unless [`publish`] moved it into place, so a failed build leaves no
/// corpus-sized leftovers (a killed one is left to `artifacts gc`).
struct BuildDir {
    path: PathBuf,
    kind: IndexKind,
}

impl BuildDir {
    fn create(store: &Store, kind: IndexKind) -> Result<BuildDir> {
        let suffix = match kind {
            IndexKind::Ivf => ".ivf",
            IndexKind::Hnsw => ".hnsw",
        };
        let path = store.tmp_path(suffix);
        std::fs::create_dir_all(&path).map_err(|e| kind.error(&path, e))?;
        Ok(BuildDir { path, kind })
    }

    fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `bytes` to a new file `name` here and fsyncs it (the
    /// directory is published whole, so the file needs no rename of its own).
    fn write_synced(&self, name: &str, bytes: &[u8]) -> Result<()> {
        let path = self.path.join(name);
        std::fs::File::create(&path)
            .and_then(|mut f| {
                std::io::Write::write_all(&mut f, bytes)?;
                f.sync_all()
            })
            .map_err(|e| self.kind.error(&path, e))
    }
}

impl Drop for BuildDir {
    fn drop(&mut self) {
        if self.path.exists() {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// fsyncs a directory (its entries: new files, a rename into it).
fn sync_dir(kind: IndexKind, path: &Path) -> Result<()> {
    std::fs::File::open(path)
        .and_then(|d| d.sync_all())
        .map_err(|e| kind.error(path, e))
}

/// SHA-256 of a regular file.
fn hash_file(kind: IndexKind, path: &Path) -> Result<String> {
    open_regular(path)
        .and_then(|f| {
            ragprobe_artifact::sha256_reader(std::io::BufReader::with_capacity(1 << 20, f))
        })
        .map_err(|e| kind.damaged(path, e))
}

/// Publishes the finished index in `tmp` as `dir`: hashes every file into
/// [`HASHES`], writes the `.complete` marker (the shards and the row
/// count), fsyncs them and the directory, renames the directory into place
/// and fsyncs its parent. Another process that published the same index
/// first wins; this copy is then removed.
fn publish(tmp: BuildDir, dir: &Path, shards: &[String], total: u64) -> Result<()> {
    let kind = tmp.kind;
    let mut names: Vec<String> = Vec::new();
    for entry in std::fs::read_dir(tmp.path()).map_err(|e| kind.error(tmp.path(), e))? {
        let entry = entry.map_err(|e| kind.error(tmp.path(), e))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    let mut list = String::new();
    for name in &names {
        let hash = hash_file(kind, &tmp.path().join(name))?;
        list.push_str(&format!("{hash}  {name}\n"));
    }
    tmp.write_synced(HASHES, list.as_bytes())?;
    let text = format!("{}\n{total}\n", shards.join("\n"));
    tmp.write_synced(".complete", text.as_bytes())?;
    sync_dir(kind, tmp.path())?;
    let parent = dir.parent().unwrap_or(dir);
    std::fs::create_dir_all(parent).map_err(|e| kind.error(parent, e))?;
    match std::fs::rename(tmp.path(), dir) {
        Ok(()) => sync_dir(kind, parent),
        Err(_) if dir.join(".complete").is_file() => Ok(()),
        Err(e) => Err(kind.error(dir, e)),
    }
}

/// Whether the index in `dir` is published and usable as it is: `false`
/// when it must be built (absent, or built before its files were hashed:
/// that copy is removed first).
fn ready(store: &Store, kind: IndexKind, dir: &Path) -> Result<bool> {
    if !dir.join(".complete").is_file() {
        return Ok(false);
    }
    if dir.join(HASHES).exists() {
        return Ok(true);
    }
    tracing::info!(
        "{} index {}: built before index files were hashed; building it again",
        kind.name(),
        dir.display()
    );
    let aside = store.tmp_path(".old-index");
    std::fs::rename(dir, &aside).map_err(|e| kind.error(dir, e))?;
    std::fs::remove_dir_all(&aside).map_err(|e| kind.error(&aside, e))?;
    Ok(false)
}

/// Checks every file of the published index in `dir` against the hashes
/// recorded when it was built, before anything reads it: a damaged index
/// (a changed row, swapped cells, zeroed or NaN vectors, a truncated
/// graph) is an error naming the file, never a wrong result. Cheap when
/// repeated: a file whose stamp (length, times, inode) is the one recorded
/// at its last check is not hashed again, as the store does for objects;
/// a file written since has a new stamp and is hashed.
fn verify_files(kind: IndexKind, dir: &Path) -> Result<()> {
    let list_path = dir.join(HASHES);
    let list = open_regular(&list_path)
        .and_then(std::io::read_to_string)
        .map_err(|e| kind.damaged(&list_path, e))?;
    let stamps_path = dir.join(VERIFIED);
    let known: std::collections::HashMap<String, String> = open_regular(&stamps_path)
        .and_then(std::io::read_to_string)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(n, s)| (n.to_string(), s.to_string()))
        .collect();
    let mut stamps = String::new();
    for (i, line) in list.lines().enumerate() {
        let bad_line = || {
            kind.damaged(
                &list_path,
                format!("line {}: not `<sha256>  <file>`", i + 1),
            )
        };
        let (want, name) = line.split_once("  ").ok_or_else(bad_line)?;
        if !ragprobe_artifact::is_full_id(want)
            || name.is_empty()
            || name.contains('/')
            || name.starts_with('.')
        {
            return Err(bad_line());
        }
        let path = dir.join(name);
        let meta = std::fs::symlink_metadata(&path).map_err(|e| kind.damaged(&path, e))?;
        if !meta.is_file() {
            return Err(kind.damaged(&path, "not a regular file"));
        }
        let stamp = ragprobe_artifact::file_stamp(&meta);
        if stamp.is_none() || known.get(name) != stamp.as_ref() {
            let got = hash_file(kind, &path)?;
            if got != want {
                return Err(kind.damaged(
                    &path,
                    format!(
                        "its bytes hash to {got}, not the {want} recorded when the index was built"
                    ),
                ));
            }
        }
        if let Some(s) = stamp {
            stamps.push_str(&format!("{name}\t{s}\n"));
        }
    }
    // Best effort: without the stamps the next process hashes again.
    let tmp = dir.join(format!("{VERIFIED}.{}", std::process::id()));
    if std::fs::write(&tmp, stamps).is_ok() && std::fs::rename(&tmp, &stamps_path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    Ok(())
}

/// The corpus row of the first non-finite value in a block of vectors
/// (`first` is the block's first row): such a vector would score NaN
/// against every query and silently drop out of, or reorder, the results.
fn non_finite_row(vectors: &[f32], dim: usize, first: u64) -> Option<u64> {
    vectors
        .iter()
        .position(|x| !x.is_finite())
        .map(|i| first + (i / dim.max(1)) as u64)
}

/// What an index's search is asked: the top `n` passages for each query
/// (`dim` floats each) over the embeddings `shards` (`total` rows in all).
#[derive(Clone, Copy)]
struct Ask<'a> {
    store: &'a Store,
    shards: &'a [String],
    total: u64,
    queries: &'a [f32],
    dim: usize,
    n: usize,
    progress: bool,
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
    let ask = Ask {
        store,
        shards,
        total,
        queries,
        dim,
        n,
        progress,
    };
    let (results, facts) = match opts {
        AnnOptions::Ivf(o) => {
            let truth = ivf::Truth { exact: &exact, at };
            ivf::search(ask, o, truth)?
        }
        AnnOptions::Hnsw(o) => hnsw::search(ask, o)?,
    };
    if let Some((q, h)) = results
        .iter()
        .enumerate()
        .find_map(|(q, hits)| hits.iter().find(|h| !h.score.is_finite()).map(|h| (q, h)))
    {
        let kind = match opts {
            AnnOptions::Ivf(_) => IndexKind::Ivf,
            AnnOptions::Hnsw(_) => IndexKind::Hnsw,
        };
        return Err(RetrieveError::Index {
            index: kind.name(),
            message: format!(
                "question {} scored {} against corpus row {}: its query vector is not finite",
                q + 1,
                h.score,
                h.row
            ),
        });
    }
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
