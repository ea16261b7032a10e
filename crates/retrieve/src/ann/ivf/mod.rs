//! The IVF index (`--ann ivf`, the default; "IVF-Flat" in FAISS's terms):
//! spherical k-means splits the passage vectors into `nlist` cells, and a
//! query scores the vectors of its `nprobe` nearest cells exactly, with the
//! exact search's kernel, so a passage it finds has the exact search's
//! score to the bit.
//!
//! * Build, in bounded memory, in three streamed passes over the shards:
//!   an evenly strided sample of at most [`TRAIN_PER_CELL`] vectors a cell
//!   (and [`TRAIN_MAX`] in all, or one a cell when there are more cells)
//!   for k-means (seeded initial centroids, up to [`TRAIN_ROUNDS`] rounds);
//!   every vector's nearest centroid (4 bytes a vector held); every vector
//!   written into its cell of a memory-mapped file whose blocks were
//!   reserved first (a full disk is an error, not a crash). An empty cell
//!   takes half of the largest (FAISS's rule), so no cell stays empty
//!   while another is crowded.
//! * Search: queries in rounds of [`QUERY_ROUND`]; each query's `nprobe`
//!   nearest centroids; then the cells in parallel, each scoring the
//!   queries of the round that probe it [`CELL_QUERIES`] at a time in one
//!   product (a cell is read once per that many of its queries, not once
//!   per query), with a running top-k per query and cell, merged into the
//!   query's best by score, ties to the lower corpus row.
//! * Any vectors: cells are angular (unit centroids) and scores are plain
//!   inner products, so unit vectors are not required.
//! * Deterministic: the same shards and `nlist` give the same files on any
//!   machine and thread count, and the same results.
//!
//! Files (little-endian): `centroids.f32` (`nlist × dim`), `cells.u64`
//! (`nlist + 1` slot offsets, multiples of the kernel's 32-vector panel),
//! `rows.u32` (the corpus row of each slot, `u32::MAX` for padding),
//! `vectors.f32` or `vectors.f16` (every slot, packed in panels for the
//! kernel; f16 when every shard is f16, so the index holds the shards'
//! values exactly at half the size and the scores stay the exact
//! search's) and `index.json` (what was built).

use memmap2::{Mmap, MmapMut};
use ragprobe_artifact::Store;
use ragprobe_engine::kernels::{argmax, Isa};
use ragprobe_engine::search::{
    inner_products_serial, packed_len, write_packed, Element, Panels, PanelsRef, PANEL,
};
use rand::SeedableRng;
use rayon::prelude::*;
use serde_json::{json, Value};
use std::fs::File;
use std::path::Path;
use std::sync::Mutex;

use super::{
    index_dir, non_finite_row, open_regular, publish, ready, verify_files, BuildDir, IndexKind,
};
use crate::dense::{for_each_block, progress_bar, shard_layout, RunningTopK, VectorType};
use crate::{sort_hits, Hit, Result, RetrieveError};

mod train;
use train::*;

/// Bump when the index's construction or files change.
const IVF_VERSION: u32 = 1;
/// Training vectors per cell at most (FAISS samples up to 256 and warns
/// under 39).
const TRAIN_PER_CELL: usize = 64;
/// Training vectors at most (384 MiB at 384 f32 values).
const TRAIN_MAX: usize = 262_144;
/// k-means rounds at most (it stops early when no assignment changes).
const TRAIN_ROUNDS: usize = 12;
/// Seed of the initial centroids.
const SEED: u64 = 0x1f_5eed;
/// Queries searched together: a probed cell is read once per round, so a
/// round takes as many as a run usually has (memory: `nprobe` cells and
/// the best `n` a query).
const QUERY_ROUND: usize = 1 << 16;
/// Vectors scored against the centroids per parallel task.
const ASSIGN_CHUNK: usize = 64;
/// Queries and cell vectors scored in one product (bounds the scores
/// buffer at 256 × 8,192 values per thread).
const CELL_QUERIES: usize = 256;
const CELL_BLOCK: usize = 8192;
/// A cell's share of the split of the largest cell (FAISS's `EPS`).
const SPLIT_EPS: f32 = 1.0 / 1024.0;

/// IVF parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IvfOptions {
    /// Cells (k-means centroids); `None`: √N for N vectors.
    pub nlist: Option<usize>,
    /// Cells searched per query: recall against speed.
    pub nprobe: usize,
    /// Pick nprobe instead: the smallest that reaches this recall@10 on
    /// the sample of questions whose exact top-k the run computes anyway.
    pub recall: Option<f64>,
}

impl Default for IvfOptions {
    fn default() -> Self {
        IvfOptions {
            nlist: None,
            nprobe: 16,
            recall: None,
        }
    }
}

impl IvfOptions {
    /// The parameters as recorded in recipes (`nlist` null: chosen from
    /// the corpus size; the manifest records the number used).
    pub fn to_json(self) -> Value {
        let mut v = json!({"kind": "ivf", "nlist": self.nlist, "nprobe": self.nprobe});
        if let Some(r) = self.recall {
            v["recall_target"] = json!(r);
        }
        v
    }

    /// Cells for `total` vectors: `nlist` when given, else √total; never
    /// more than the vectors nor fewer than 1. FAISS suggests 4–16·√N for
    /// its search, which scans a query's cells one query at a time; here a
    /// round scores every query of a cell in one product, so fewer, larger
    /// cells batch better (measured at 1M vectors: √N cells with nprobe 16
    /// scan the same share as 4·√N with 64, faster, at the same recall).
    pub fn cells(self, total: u64) -> usize {
        let auto = (total as f64).sqrt().round() as usize;
        self.nlist.unwrap_or(auto).clamp(1, total.max(1) as usize)
    }
}

/// A new file of `len` bytes, its blocks reserved (so that a full disk is
/// an error here rather than SIGBUS on a write through the map), mapped
/// for writing.
fn mapped_file(path: &Path, len: usize) -> Result<(File, MmapMut)> {
    let file = File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| io_error(path, e))?;
    file.set_len(len as u64).map_err(|e| io_error(path, e))?;
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a valid open descriptor; the range is the file's length.
        let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len as libc::off_t) };
        // EINVAL/EOPNOTSUPP: the file system cannot reserve; writes then
        // allocate as they go.
        if rc != 0 && rc != libc::EINVAL && rc != libc::EOPNOTSUPP {
            return Err(io_error(path, std::io::Error::from_raw_os_error(rc)));
        }
    }
    // SAFETY: the file is new, in this process's own temporary directory,
    // and nothing else maps or truncates it while the map lives.
    let map = unsafe { MmapMut::map_mut(&file) }.map_err(|e| io_error(path, e))?;
    Ok((file, map))
}

/// An error about an IVF index file.
fn io_error(path: &Path, e: impl std::fmt::Display) -> RetrieveError {
    IndexKind::Ivf.error(path, e)
}

/// Flushes a written map and its file to disk.
fn sync(path: &Path, file: File, map: MmapMut) -> Result<()> {
    map.flush().map_err(|e| io_error(path, e))?;
    drop(map);
    file.sync_all().map_err(|e| io_error(path, e))
}

/// Builds the index of every vector of `shards` and publishes it to `dir`.
#[allow(clippy::too_many_arguments)]
fn build(
    store: &Store,
    shards: &[String],
    total: u64,
    dim: usize,
    nlist: usize,
    stored: Stored,
    dir: &Path,
    progress: bool,
) -> Result<()> {
    if total > u32::MAX as u64 {
        return Err(RetrieveError::Invalid(format!(
            "--ann ivf indexes up to {} vectors; these shards hold {total}",
            u32::MAX
        )));
    }
    let isa = Isa::detect();
    // 1. An evenly strided training sample: rows ⌊j·total/s⌋.
    let s = train_rows(total, nlist);
    let row_of = |j: usize| (j as u128 * total as u128 / s as u128) as u64;
    let mut sample: Vec<f32> = Vec::with_capacity(s * dim);
    let mut j = 0;
    for_each_block(store, shards, dim, CELL_BLOCK, |v, rows, first| {
        while j < s && row_of(j) < first + rows as u64 {
            let i = (row_of(j) - first) as usize;
            sample.extend_from_slice(&v[i * dim..(i + 1) * dim]);
            j += 1;
        }
        Ok(j < s)
    })?;
    if j < s {
        return Err(short(shards, total, row_of(j)));
    }
    let (centroids, rounds) = train(isa, &sample, dim, nlist, progress);
    drop(sample);
    // 2. Every vector's cell.
    let mut panels = Panels::default();
    panels.pack(&centroids, nlist, dim);
    let bar = progress_bar(progress, total, "ivf assign", "vectors");
    let mut cell: Vec<u32> = Vec::with_capacity(total as usize);
    for_each_block(store, shards, dim, CELL_BLOCK, |v, rows, first| {
        if let Some(row) = non_finite_row(v, dim, first) {
            return Err(RetrieveError::Invalid(format!(
                "embeddings shards {}..: corpus row {row} holds a value that is not finite (NaN or infinite); re-embed the corpus",
                &shards[0][..shards[0].len().min(12)]
            )));
        }
        cell.extend(nearest(isa, v, dim, panels.view()));
        bar.inc(rows as u64);
        Ok(true)
    })?;
    bar.finish_and_clear();
    if cell.len() as u64 != total {
        return Err(short(shards, total, cell.len() as u64));
    }
    // 3. Cells as padded slot ranges; every vector written to its slot.
    let mut offsets = vec![0u64; nlist + 1];
    for &c in &cell {
        offsets[c as usize + 1] += 1;
    }
    for j in 0..nlist {
        offsets[j + 1] = offsets[j] + offsets[j + 1].div_ceil(PANEL as u64) * PANEL as u64;
    }
    let slots = offsets[nlist] as usize;
    let build_dir = BuildDir::create(store, IndexKind::Ivf)?;
    let tmp = build_dir.path();
    let (vpath, rpath) = (tmp.join(stored.file()), tmp.join("rows.u32"));
    let (vfile, mut vmap) = mapped_file(&vpath, packed_len(slots, dim) * stored.width())?;
    let (rfile, mut rmap) = mapped_file(&rpath, slots * 4)?;
    {
        let mut vectors = stored
            .cast_mut(&mut vmap[..])
            .map_err(|e| io_error(&vpath, e))?;
        let mut half = vec![half::f16::ZERO; dim];
        let rows: &mut [u32] =
            bytemuck::try_cast_slice_mut(&mut rmap[..]).map_err(|e| io_error(&rpath, e))?;
        rows.fill(u32::MAX);
        let mut cursor = offsets.clone();
        let bar = progress_bar(progress, total, "ivf cells", "vectors");
        for_each_block(store, shards, dim, CELL_BLOCK, |v, n, first| {
            for (i, x) in v.chunks_exact(dim).enumerate() {
                let row = first as usize + i;
                let c = cell[row] as usize;
                let slot = cursor[c] as usize;
                cursor[c] += 1;
                match &mut vectors {
                    StoredMut::F32(v) => write_packed(v, slot, x),
                    StoredMut::F16(v) => {
                        // Exact: the values came from f16 shards.
                        half.iter_mut()
                            .zip(x)
                            .for_each(|(h, x)| *h = half::f16::from_f32(*x));
                        write_packed(v, slot, &half);
                    }
                }
                rows[slot] = row as u32;
            }
            bar.inc(n as u64);
            Ok(true)
        })?;
        bar.finish_and_clear();
    }
    sync(&vpath, vfile, vmap)?;
    sync(&rpath, rfile, rmap)?;
    build_dir.write_synced("centroids.f32", bytemuck::cast_slice(&centroids))?;
    build_dir.write_synced("cells.u64", bytemuck::cast_slice(&offsets))?;
    let facts = json!({
        "version": IVF_VERSION,
        "dim": dim,
        "dtype": stored.name(),
        "nlist": nlist,
        "vectors": total,
        "slots": slots,
        "train_vectors": s,
        "kmeans_rounds": rounds,
    });
    build_dir.write_synced("index.json", facts.to_string().as_bytes())?;
    publish(build_dir, dir, shards, total)
}

/// How the index stores its vectors: f32, or f16 when every shard is f16.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stored {
    F32,
    F16,
}

/// An index's vectors, borrowed.
enum StoredRef<'a> {
    F32(&'a [f32]),
    F16(&'a [half::f16]),
}

/// An index's vectors, being written.
enum StoredMut<'a> {
    F32(&'a mut [f32]),
    F16(&'a mut [half::f16]),
}

impl Stored {
    /// f16 when every shard stores f16 (the index then holds their values
    /// exactly), else f32.
    fn of(store: &Store, shards: &[String]) -> Result<Stored> {
        for id in shards {
            if shard_layout(store, id)?.1 != VectorType::F16 {
                return Ok(Stored::F32);
            }
        }
        Ok(Stored::F16)
    }

    fn name(self) -> &'static str {
        match self {
            Stored::F32 => "f32",
            Stored::F16 => "f16",
        }
    }

    fn file(self) -> &'static str {
        match self {
            Stored::F32 => "vectors.f32",
            Stored::F16 => "vectors.f16",
        }
    }

    fn width(self) -> usize {
        match self {
            Stored::F32 => 4,
            Stored::F16 => 2,
        }
    }

    fn cast(self, bytes: &[u8]) -> std::result::Result<StoredRef<'_>, bytemuck::PodCastError> {
        use half::slice::HalfBitsSliceExt;
        Ok(match self {
            Stored::F32 => StoredRef::F32(bytemuck::try_cast_slice(bytes)?),
            Stored::F16 => {
                StoredRef::F16(bytemuck::try_cast_slice::<u8, u16>(bytes)?.reinterpret_cast())
            }
        })
    }

    fn cast_mut(
        self,
        bytes: &mut [u8],
    ) -> std::result::Result<StoredMut<'_>, bytemuck::PodCastError> {
        use half::slice::HalfBitsSliceExt;
        Ok(match self {
            Stored::F32 => StoredMut::F32(bytemuck::try_cast_slice_mut(bytes)?),
            Stored::F16 => StoredMut::F16(
                bytemuck::try_cast_slice_mut::<u8, u16>(bytes)?.reinterpret_cast_mut(),
            ),
        })
    }
}

/// The `rows` vectors of one cell (`packed`, whole panels) against the
/// queries `x`, [`CELL_BLOCK`] at a time, offered to the queries' running
/// tops by position in the cell.
fn score_cell<T: Element>(
    isa: Isa,
    x: &[f32],
    packed: &[T],
    rows: usize,
    dim: usize,
    scores: &mut Vec<f32>,
    tops: &mut [RunningTopK],
) {
    for first in (0..rows).step_by(CELL_BLOCK) {
        let m = (rows - first).min(CELL_BLOCK);
        let view = PanelsRef::new(&packed[first * dim..], m, dim)
            .expect("a cell holds whole panels (checked when opened)");
        scores.resize(tops.len() * m, 0.0);
        inner_products_serial(isa, x, tops.len(), view, scores);
        for (top, s) in tops.iter_mut().zip(scores.chunks_exact(m)) {
            top.offer(s, first as u64);
        }
    }
}

/// The shards held fewer vectors than their manifests count.
fn short(shards: &[String], total: u64, got: u64) -> RetrieveError {
    RetrieveError::Invalid(format!(
        "embeddings shards {}..: their manifests count {total} vectors but only {got} could be read",
        &shards[0][..shards[0].len().min(12)]
    ))
}

/// A built index, its vectors and rows mapped.
struct Index {
    dim: usize,
    centroids: Panels,
    offsets: Vec<u64>,
    counts: Vec<usize>,
    stored: Stored,
    rows: Mmap,
    vectors: Mmap,
    facts: Value,
}

/// An index file that cannot be used: the error names it and says how to
/// rebuild.
fn damaged(path: &Path, what: impl std::fmt::Display) -> RetrieveError {
    IndexKind::Ivf.damaged(path, what)
}

/// Reads a whole index file (a regular file only).
fn read(path: &Path) -> Result<Vec<u8>> {
    open_regular(path)
        .and_then(|mut f| {
            let mut v = Vec::new();
            std::io::Read::read_to_end(&mut f, &mut v).map(|_| v)
        })
        .map_err(|e| damaged(path, e))
}

/// Maps an index file read-only (a regular file only).
fn map(path: &Path) -> Result<Mmap> {
    let f = open_regular(path).map_err(|e| damaged(path, e))?;
    // SAFETY: index files are written once, published by renaming their
    // directory, and never modified afterwards; a file truncated by hand
    // while mapped would end the process (SIGBUS), as with any map.
    unsafe { Mmap::map(&f) }.map_err(|e| io_error(path, e))
}

impl Index {
    /// Opens the index in `dir`, checking every file's size against
    /// `index.json` (a damaged index is an error naming the file).
    fn open(dir: &Path, dim: usize, nlist: usize, total: u64) -> Result<Index> {
        let bad = |file: &str, what: String| damaged(&dir.join(file), what);
        let facts: Value = serde_json::from_slice(&read(&dir.join("index.json"))?)
            .map_err(|e| bad("index.json", e.to_string()))?;
        let want = (json!(IVF_VERSION), json!(dim), json!(nlist), json!(total));
        let got = (
            &facts["version"],
            &facts["dim"],
            &facts["nlist"],
            &facts["vectors"],
        );
        if (&want.0, &want.1, &want.2, &want.3) != got {
            return Err(bad(
                "index.json",
                format!("built for version, dim, nlist, vectors {got:?}, not {want:?}"),
            ));
        }
        let centroid_bytes = read(&dir.join("centroids.f32"))?;
        let cells = read(&dir.join("cells.u64"))?;
        if centroid_bytes.len() != nlist * dim * 4 {
            return Err(bad(
                "centroids.f32",
                format!("{} bytes, not {}", centroid_bytes.len(), nlist * dim * 4),
            ));
        }
        if cells.len() != (nlist + 1) * 8 {
            return Err(bad(
                "cells.u64",
                format!("{} bytes, not {}", cells.len(), (nlist + 1) * 8),
            ));
        }
        let centroids: Vec<f32> = bytemuck::pod_collect_to_vec(&centroid_bytes);
        let offsets: Vec<u64> = bytemuck::pod_collect_to_vec(&cells);
        // Offsets: from 0, in order, whole panels, no more padding than a
        // panel a cell.
        let slots = offsets[nlist];
        if offsets[0] != 0
            || offsets.windows(2).any(|w| w[0] > w[1])
            || offsets.iter().any(|o| o % PANEL as u64 != 0)
            || slots > total + (PANEL * nlist) as u64
        {
            return Err(bad("cells.u64", "cell offsets out of order".into()));
        }
        let slots = slots as usize;
        let rows = map(&dir.join("rows.u32"))?;
        let stored = match facts["dtype"].as_str() {
            None | Some("f32") => Stored::F32,
            Some("f16") => Stored::F16,
            Some(other) => return Err(bad("index.json", format!("unknown dtype {other:?}"))),
        };
        let vectors = map(&dir.join(stored.file()))?;
        if rows.len() != slots * 4 {
            return Err(bad(
                "rows.u32",
                format!("{} bytes, not {}", rows.len(), slots * 4),
            ));
        }
        let want = packed_len(slots, dim) * stored.width();
        if vectors.len() != want || stored.cast(&vectors[..]).is_err() {
            return Err(bad(
                stored.file(),
                format!("{} bytes, not {want}", vectors.len()),
            ));
        }
        // Rows: each cell's corpus rows increasing (ties in a cell go to
        // the lower row through this order) and below `total`, then
        // padding only; every vector once.
        let all: &[u32] =
            bytemuck::try_cast_slice(&rows[..]).map_err(|e| bad("rows.u32", e.to_string()))?;
        let mut counts = Vec::with_capacity(nlist);
        for c in 0..nlist {
            let cell = &all[offsets[c] as usize..offsets[c + 1] as usize];
            let n = cell
                .iter()
                .position(|&r| r == u32::MAX)
                .unwrap_or(cell.len());
            let ordered = cell[..n].windows(2).all(|w| w[0] < w[1]);
            if !ordered
                || cell[..n].last().is_some_and(|&r| r as u64 >= total)
                || cell[n..].iter().any(|&r| r != u32::MAX)
                || cell.len() != n.div_ceil(PANEL) * PANEL
            {
                return Err(bad(
                    "rows.u32",
                    format!("cell {c} holds rows out of order or past the corpus"),
                ));
            }
            counts.push(n);
        }
        if counts.iter().sum::<usize>() as u64 != total {
            return Err(bad(
                "rows.u32",
                format!("the cells do not hold {total} rows"),
            ));
        }
        let mut panels = Panels::default();
        panels.pack(&centroids, nlist, dim);
        Ok(Index {
            dim,
            centroids: panels,
            offsets,
            counts,
            stored,
            rows,
            vectors,
            facts,
        })
    }

    /// Cell `c`: its packed vectors and their corpus rows (padding left out).
    fn cell(&self, c: usize) -> (StoredRef<'_>, &[u32]) {
        let rows: &[u32] = bytemuck::cast_slice(&self.rows[..]);
        let (a, b) = (self.offsets[c] as usize, self.offsets[c + 1] as usize);
        let (a, b) = (a * self.dim, b * self.dim);
        let vectors = match self
            .stored
            .cast(&self.vectors[..])
            .expect("checked when opened")
        {
            StoredRef::F32(v) => StoredRef::F32(&v[a..b]),
            StoredRef::F16(v) => StoredRef::F16(&v[a..b]),
        };
        let (a, n) = (self.offsets[c] as usize, self.counts[c]);
        (vectors, &rows[a..a + n])
    }

    /// Top `n` of each query (row-major) over its `nprobe` nearest cells.
    fn search(&self, isa: Isa, queries: &[f32], n: usize, nprobe: usize) -> Vec<Vec<Hit>> {
        let dim = self.dim;
        let t = queries.len() / dim;
        let nlist = self.centroids.len();
        let probe = probes(isa, queries, dim, self.centroids.view(), nprobe);
        // The queries of each cell, in query order (probe i is query
        // i / nprobe's).
        let (start, mut asked) = group(&probe, nlist);
        asked.iter_mut().for_each(|i| *i /= nprobe as u32);
        // Tasks: a cell and up to CELL_QUERIES of its queries, so that a
        // cell many queries probe is shared among the threads.
        let tasks: Vec<(usize, usize, usize)> = (0..nlist)
            .flat_map(|c| {
                let end = start[c + 1];
                (start[c]..end)
                    .step_by(CELL_QUERIES)
                    .map(move |a| (c, a, (a + CELL_QUERIES).min(end)))
            })
            .collect();
        // Each query's best so far, merged into as its cells finish (cut
        // back to `n` when twice as many pile up).
        let best: Vec<Mutex<Vec<Hit>>> = (0..t).map(|_| Mutex::new(Vec::new())).collect();
        tasks.par_iter().for_each_init(
            || (Vec::new(), Vec::new()),
            |(x, scores): &mut (Vec<f32>, Vec<f32>), &(c, a, b)| {
                let (packed, rows) = self.cell(c);
                let qs = &asked[a..b];
                x.clear();
                for &q in qs {
                    x.extend_from_slice(&queries[q as usize * dim..(q as usize + 1) * dim]);
                }
                let mut tops: Vec<RunningTopK> = qs.iter().map(|_| RunningTopK::new(n)).collect();
                match packed {
                    StoredRef::F32(p) => score_cell(isa, x, p, rows.len(), dim, scores, &mut tops),
                    StoredRef::F16(p) => score_cell(isa, x, p, rows.len(), dim, scores, &mut tops),
                }
                for (&q, top) in qs.iter().zip(tops) {
                    let mut kept = best[q as usize].lock().unwrap_or_else(|p| p.into_inner());
                    kept.extend(top.finish().into_iter().map(|h| Hit {
                        row: rows[h.row as usize] as u64,
                        score: h.score,
                    }));
                    if kept.len() >= 2 * n {
                        sort_hits(&mut kept);
                        kept.truncate(n);
                    }
                }
            },
        );
        best.into_par_iter()
            .map(|m| {
                let mut h = m.into_inner().unwrap_or_else(|p| p.into_inner());
                sort_hits(&mut h);
                h.truncate(n);
                h
            })
            .collect()
    }
}

/// The exact top-`at` of the first questions (a sample), for calibrating
/// nprobe.
pub(super) struct Truth<'a> {
    pub exact: &'a [Vec<Hit>],
    pub at: usize,
}

/// The smallest nprobe whose recall@`at` on the sample reaches `target`
/// (nlist when none does), and each nprobe tried with its recall: doubling
/// from 1, then bisecting (recall never falls as nprobe grows: more cells
/// are searched, ties broken the same way).
fn calibrate(
    index: &Index,
    isa: Isa,
    queries: &[f32],
    truth: &Truth<'_>,
    target: f64,
) -> (usize, Vec<(usize, f64)>) {
    let nlist = index.centroids.len();
    let sample = &queries[..truth.exact.len() * index.dim];
    let mut tried: Vec<(usize, f64)> = Vec::new();
    let mut recall_of = |p: usize| {
        let got = index.search(isa, sample, truth.at, p);
        let r = super::recall_at(truth.exact, &got, truth.at);
        tried.push((p, r));
        r >= target
    };
    let (mut lo, mut hi) = (0, 1);
    while !recall_of(hi) {
        if hi == nlist {
            return (nlist, tried);
        }
        lo = hi;
        hi = (hi * 2).min(nlist);
    }
    // recall(lo) < target <= recall(hi)
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if recall_of(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    (hi, tried)
}

/// Top `n` passages per query from the index (built first if needed), and
/// the index's facts for the manifest.
pub(super) fn search(
    ask: super::Ask<'_>,
    opts: IvfOptions,
    truth: Truth<'_>,
) -> Result<(Vec<Vec<Hit>>, Value)> {
    let super::Ask {
        queries,
        dim,
        n,
        store,
        shards,
        total,
        ..
    } = ask;
    if cfg!(target_endian = "big") {
        return Err(RetrieveError::Invalid(
            "--ann ivf writes little-endian index files; use exact search on this machine".into(),
        ));
    }
    let nlist = opts.cells(total);
    let stored = Stored::of(store, shards)?;
    // f16 indexes get their own key, so that a binary from before them
    // never meets one and an older f32 index over f16 shards is rebuilt.
    let half = if stored == Stored::F16 { "|f16" } else { "" };
    let key = format!("ivf|v{IVF_VERSION}|{}|{nlist}{half}", shards.join(","));
    let dir = index_dir(store, "ivf", &key);
    let started = std::time::Instant::now();
    if !ready(store, IndexKind::Ivf, &dir)? {
        build(store, shards, total, dim, nlist, stored, &dir, ask.progress)?;
        store.log_run(json!({"stage": "ivf-build", "index": dir.file_name().map(|f| f.to_string_lossy().to_string()), "seconds": started.elapsed().as_secs_f64()}));
    } else {
        tracing::info!("ivf: reusing index {}", dir.display());
    }
    let searched = std::time::Instant::now();
    verify_files(IndexKind::Ivf, &dir)?;
    let index = Index::open(&dir, dim, nlist, total)?;
    let isa = Isa::detect();
    let (nprobe, tried) = match opts.recall {
        // Without exact hits to find (no sample, or no scores), recall is
        // undefined: keep the given nprobe.
        Some(target) if truth.exact.iter().any(|e| !e.is_empty()) => {
            calibrate(&index, isa, queries, &truth, target)
        }
        _ => (opts.nprobe.clamp(1, nlist), Vec::new()),
    };
    let nq = queries.len() / dim;
    let bar = progress_bar(ask.progress, nq as u64, "ivf search", "questions");
    let mut results = Vec::with_capacity(nq);
    for round in queries.chunks(QUERY_ROUND * dim) {
        results.extend(index.search(isa, round, n, nprobe));
        bar.inc((round.len() / dim) as u64);
    }
    bar.finish_and_clear();
    store.log_run(
        json!({"stage": "ivf-search", "queries": nq, "seconds": searched.elapsed().as_secs_f64()}),
    );
    let mut facts = json!({
        "nlist": nlist,
        "nprobe": nprobe,
        "train_vectors": index.facts["train_vectors"],
        "kmeans_rounds": index.facts["kmeans_rounds"],
    });
    if !tried.is_empty() {
        facts["nprobe_calibration"] = json!(tried);
    }
    Ok((results, facts))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Worked example of the update: members are summed and normalised;
    /// the empty cell takes half of the largest, nudged apart.
    #[test]
    fn means_average_members_and_split_the_largest_cell_into_an_empty_one() {
        let sample = [1.0, 0.0, 1.0, 0.2, 0.0, 1.0, 1.0, -0.2];
        let old = [1.0, 0.0, 0.0, 1.0, 0.6, 0.8];
        // Vectors 0, 1, 3 in cell 0; vector 2 in cell 1; cell 2 empty.
        let c = means(&sample, 2, &[0, 0, 1, 0], 3, &old);
        // Cell 1: (0, 1). Cell 0 sums to (3, 0) -> (1, 0), then is split
        // with cell 2: (1·(1−ε), 0) and (1·(1+ε), 0), both normalised to (1, 0).
        assert_eq!(&c[2..4], &[0.0, 1.0]);
        assert_eq!(&c[0..2], &[1.0, 0.0]);
        assert_eq!(&c[4..6], &[1.0, 0.0]);
        // A two-element vector not on an axis is nudged apart.
        let c = means(&[0.6, 0.8], 2, &[0], 2, &[0.6, 0.8, 0.0, 1.0]);
        assert!(c[0] != c[2] && c[1] != c[3], "{c:?}");
        let dot = c[0] * c[2] + c[1] * c[3];
        assert!(dot > 0.999 && dot < 1.0, "{dot}");
    }

    /// Worked example: cells [2, 0, 2, 1, 0] group as cell 0: 1, 4;
    /// cell 1: 3; cell 2: 0, 2; cell 3: none.
    #[test]
    fn group_lists_each_cells_members_in_order() {
        let (start, members) = group(&[2, 0, 2, 1, 0], 4);
        assert_eq!(start, vec![0, 2, 3, 5, 5]);
        assert_eq!(members, vec![1, 4, 3, 0, 2]);
    }

    /// nlist: given, else √N, clamped to 1..=N.
    #[test]
    fn cells_follow_the_corpus_size() {
        let auto = IvfOptions::default();
        assert_eq!(auto.cells(1_000_000), 1000);
        assert_eq!(auto.cells(21_000_000), 4583);
        assert_eq!(auto.cells(10), 3);
        assert_eq!(auto.cells(1), 1);
        assert_eq!(auto.cells(0), 1);
        let given = IvfOptions {
            nlist: Some(64),
            nprobe: 8,
            recall: None,
        };
        assert_eq!(given.cells(1000), 64);
        assert_eq!(given.cells(10), 10);
        assert_eq!(train_rows(1_000_000, 1000), 64_000);
        assert_eq!(train_rows(1_000_000, 10_000), TRAIN_MAX);
        assert_eq!(train_rows(100, 40), 100);
    }

    /// The nearest centroid, ties to the lower cell; probes pick the
    /// `nprobe` best cells, ties to the lower cell.
    #[test]
    fn nearest_and_probes_break_ties_to_the_lower_cell() {
        let isa = Isa::detect();
        let c = [1.0, 0.0, 0.0, 1.0, 1.0, 0.0];
        let mut p = Panels::default();
        p.pack(&c, 3, 2);
        assert_eq!(
            nearest(isa, &[1.0, 0.1, 0.1, 1.0, 1.0, 0.0], 2, p.view()),
            vec![0, 1, 0]
        );
        let mut got = probes(isa, &[0.9, 0.1], 2, p.view(), 2);
        got.sort();
        assert_eq!(got, vec![0, 2]);
    }
}
