//! Dense retrieval: passage embeddings written as shards (one `embeddings`
//! artifact per `shard_rows` passages, f32 or f16), and exact
//! inner-product top-k that streams over the shards in blocks with a
//! running top-k per question, so no step holds every vector at once.
//!
//! Each shard is its own stage invocation with its own action record: an
//! embedding run that is interrupted (or whose server fails for good)
//! resumes at the first shard that is missing, and redoes at most the
//! shards that were in progress.

use arrow::array::{ArrayRef, BinaryArray, StringArray};
use arrow::record_batch::RecordBatch;
use indicatif::{ProgressBar, ProgressStyle};
use parquet::column::reader::ColumnReader;
use parquet::data_type::ByteArray;
use parquet::file::reader::FileReader;
use ragprobe_artifact::{
    kinds, rows_of, ArtifactError, Corpus, CorpusRow, Embeddings, Recipe, Store, Written,
};
use ragprobe_engine::kernels::Isa;
use ragprobe_engine::search::{inner_products, Panels};
use ragprobe_models::TextEncoder;
use rayon::prelude::*;
use serde_json::json;
use std::sync::Arc;

use crate::{sort_hits, Hit, Result, RetrieveError, RetrieveOptions};

/// Version of the passage-embedding step (2: sharded, binary vectors).
const EMBED_VERSION: u32 = 2;
/// Passage vectors scored per block (rows read from a shard at a time).
const DOC_BLOCK: usize = 8192;
/// Queries scored together against one block.
const QUERY_CHUNK: usize = 256;
/// Texts sent to the encoder at a time (progress granularity).
const ENCODE_CHUNK: usize = 2048;

/// How vectors are stored in the embedding shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum VectorType {
    /// 4 bytes a value, exact.
    #[default]
    F32,
    /// 2 bytes a value (IEEE half): half the disk and read time; inner
    /// products change in about the fourth significant digit.
    F16,
}

impl VectorType {
    /// `f32` or `f16`, as recorded in recipes and manifests.
    pub fn name(self) -> &'static str {
        match self {
            VectorType::F32 => "f32",
            VectorType::F16 => "f16",
        }
    }

    fn from_name(s: &str) -> Option<VectorType> {
        match s {
            "f32" => Some(VectorType::F32),
            "f16" => Some(VectorType::F16),
            _ => None,
        }
    }

    fn width(self) -> usize {
        match self {
            VectorType::F32 => 4,
            VectorType::F16 => 2,
        }
    }

    fn encode(self, v: &[f32], out: &mut Vec<u8>) {
        match self {
            VectorType::F32 => out.extend(v.iter().flat_map(|x| x.to_le_bytes())),
            VectorType::F16 => {
                out.extend(v.iter().flat_map(|x| half::f16::from_f32(*x).to_le_bytes()))
            }
        }
    }

    /// The values of `bytes` into `out`, which holds as many values.
    pub(crate) fn decode_into(self, bytes: &[u8], out: &mut [f32]) {
        match self {
            VectorType::F32 => {
                for (o, c) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                    *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                }
            }
            VectorType::F16 => {
                for (o, c) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                    *o = half::f16::from_le_bytes([c[0], c[1]]).to_f32();
                }
            }
        }
    }

    /// The values of `bytes` (whole vectors) appended to `out`.
    pub(crate) fn decode(self, bytes: &[u8], out: &mut Vec<f32>) {
        let start = out.len();
        out.resize(start + bytes.len() / self.width(), 0.0);
        self.decode_into(bytes, &mut out[start..]);
    }
}

/// The text embedded for a passage.
pub fn passage_text(title: Option<&str>, text: &str) -> String {
    match title {
        Some(t) if !t.is_empty() => format!("{t}\n{text}"),
        _ => text.to_string(),
    }
}

/// The recipe parameters shared by the whole embedding run and its shards.
fn embed_params(encoder: &TextEncoder, opts: &RetrieveOptions) -> serde_json::Value {
    json!({
        "model": encoder.model_name(),
        "text": "title\\ntext",
        "shard_rows": opts.shard_rows,
        "dtype": opts.dtype.name(),
    })
}

/// One shard of a corpus's embeddings: what it is, whether it is done.
struct Shard {
    recipe: Recipe,
    done: Option<String>,
}

/// The ids of the embedding shards of `corpus`, in corpus order, computing
/// the shards that are missing. The run as a whole is recorded too, so a
/// later run finds every shard with one lookup.
pub fn embeddings(
    store: &Store,
    corpus: &str,
    encoder: &TextEncoder,
    opts: &RetrieveOptions,
) -> Result<Vec<String>> {
    if opts.shard_rows == 0 {
        return Err(RetrieveError::Invalid(
            "--shard-rows must be at least 1".into(),
        ));
    }
    let mut recipe = Recipe::new("embed", EMBED_VERSION, embed_params(encoder, opts));
    recipe.inputs = vec![corpus.to_string()];
    recipe
        .resources
        .insert("embedder".into(), encoder.resource_id());
    let _running = store.lock_action(&recipe)?;
    if let Some(rec) = store.cached(&recipe, &[])? {
        tracing::info!("embed: cached, {} shard(s)", rec.outputs.len());
        return Ok(rec.outputs.iter().map(|o| o.id.clone()).collect());
    }
    let rows = store.manifest(corpus)?.rows;
    let per = opts.shard_rows as u64;
    let n_shards = rows.div_ceil(per) as usize;
    let mut shards = Vec::with_capacity(n_shards);
    for i in 0..n_shards {
        let r = recipe.shard(i);
        let done = store
            .cached(&r, &[kinds::EMBEDDINGS])?
            .map(|rec| rec.output(kinds::EMBEDDINGS).map(|o| o.id))
            .transpose()?;
        shards.push(Shard { recipe: r, done });
    }
    let finished = shards.iter().filter(|s| s.done.is_some()).count();
    if finished > 0 {
        tracing::info!("embed: resuming, {finished} of {n_shards} shard(s) already done");
    }
    let bar = progress_bar(opts.progress, rows, "embed", "passages");
    bar.set_position((finished as u64 * per).min(rows));
    if finished < n_shards {
        let mut pending: Vec<CorpusRow> = Vec::new();
        let mut row = 0u64;
        for batch in store.open_batches(corpus, 4096.min(opts.shard_rows))? {
            let batch = batch.map_err(ArtifactError::from)?;
            let len = batch.num_rows() as u64;
            // Rows of finished shards are skipped without decoding them.
            let shard = ((row / per) as usize).min(n_shards - 1);
            let last = (((row + len - 1) / per) as usize).min(n_shards - 1);
            if shards[shard..=last].iter().all(|s| s.done.is_some()) {
                row += len;
                continue;
            }
            for c in rows_of::<Corpus>(&batch)? {
                let s = (row / per) as usize;
                if s >= n_shards {
                    return Err(RetrieveError::Invalid(format!(
                        "corpus {}: more rows than the {rows} its manifest records",
                        &corpus[..corpus.len().min(12)]
                    )));
                }
                if shards[s].done.is_none() {
                    pending.push(c);
                    if row % per == per - 1 || row == rows - 1 {
                        let first = row + 1 - pending.len() as u64;
                        let id = write_shard(
                            store,
                            &shards[s].recipe,
                            encoder,
                            opts,
                            &pending,
                            s,
                            n_shards,
                            first,
                            &bar,
                        )?;
                        shards[s].done = Some(id);
                        pending.clear();
                    }
                }
                row += 1;
            }
        }
    }
    bar.finish_and_clear();
    let ids: Vec<String> = shards
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            s.done.ok_or_else(|| {
                RetrieveError::Invalid(format!(
                    "embedding shard {i} was not written (the corpus has fewer rows than its manifest says)"
                ))
            })
        })
        .collect::<Result<_>>()?;
    let outputs: Vec<Written> = ids
        .iter()
        .map(|id| {
            Ok(Written {
                kind: ragprobe_artifact::kinds::EMBEDDINGS.to_string(),
                id: id.clone(),
                rows: store.manifest(id)?.rows,
            })
        })
        .collect::<Result<_>>()?;
    store.record_action(&recipe, &outputs)?;
    Ok(ids)
}

/// A progress bar over `len` `unit`s (hidden unless `show`), the same
/// for every long step of retrieval.
pub(crate) fn progress_bar(show: bool, len: u64, what: &str, unit: &str) -> ProgressBar {
    let bar = if show {
        ProgressBar::new(len)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{what} [{{bar:30}}] {{pos}}/{{len}} {unit} ({{per_sec}}, eta {{eta}})"
        ))
        .expect("static")
        .progress_chars("=> "),
    );
    bar
}

/// Embeds one shard's passages and writes them as one artifact with its
/// own action record.
#[allow(clippy::too_many_arguments)]
fn write_shard(
    store: &Store,
    recipe: &Recipe,
    encoder: &TextEncoder,
    opts: &RetrieveOptions,
    passages: &[CorpusRow],
    shard: usize,
    shards: usize,
    first_row: u64,
    bar: &ProgressBar,
) -> Result<String> {
    let mut bytes: Vec<u8> = Vec::new();
    let mut offsets: Vec<usize> = vec![0];
    let mut dim: Option<usize> = None;
    for chunk in passages.chunks(ENCODE_CHUNK) {
        let texts: Vec<String> = chunk
            .iter()
            .map(|c| passage_text(c.title.as_deref(), &c.text))
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let at = first_row + (offsets.len() - 1) as u64;
        let vectors = encoder.embed(&refs, opts.batch).map_err(|e| {
            RetrieveError::Invalid(format!(
                "embedding shard {shard} (corpus rows {at}..{}): {e}",
                at + chunk.len() as u64
            ))
        })?;
        if vectors.len() != chunk.len() {
            return Err(RetrieveError::Invalid(format!(
                "the encoder returned {} vectors for {} passages",
                vectors.len(),
                chunk.len()
            )));
        }
        for (v, c) in vectors.iter().zip(chunk) {
            let d = *dim.get_or_insert(v.len());
            if v.len() != d || d == 0 {
                return Err(RetrieveError::Invalid(format!(
                    "passage `{}`: the encoder returned {} values where earlier vectors had {d}",
                    c.doc_id,
                    v.len()
                )));
            }
            opts.dtype.encode(v, &mut bytes);
            offsets.push(bytes.len());
        }
        bar.inc(chunk.len() as u64);
    }
    let written = write_vectors(
        store,
        recipe,
        passages.iter().map(|c| c.doc_id.as_str()),
        offsets.windows(2).map(|o| &bytes[o[0]..o[1]]),
        json!({
            "model": encoder.model_name(),
            "dim": dim.unwrap_or(0),
            "dtype": opts.dtype.name(),
            "shard": shard,
            "shards": shards,
            "first_row": first_row,
        }),
    )?;
    store.record_action(recipe, std::slice::from_ref(&written))?;
    Ok(written.id)
}

/// One `embeddings` artifact of `vectors` (bytes as stored) for the
/// passages `doc_ids`, with the shard's `details` in its manifest.
fn write_vectors<'a>(
    store: &Store,
    recipe: &Recipe,
    doc_ids: impl Iterator<Item = &'a str>,
    vectors: impl Iterator<Item = &'a [u8]>,
    details: serde_json::Value,
) -> Result<Written> {
    let mut w = ragprobe_artifact::writer::<Embeddings>(store, recipe)?;
    let ids: ArrayRef = Arc::new(StringArray::from_iter_values(doc_ids));
    let vectors: ArrayRef = Arc::new(BinaryArray::from_iter_values(vectors));
    w.write(&RecordBatch::try_new(w.schema(), vec![ids, vectors]).map_err(ArtifactError::from)?)?;
    Ok(w.finish(details)?)
}

/// What a shard's manifest says about its vectors: (dim, dtype, first row).
pub(crate) fn shard_layout(store: &Store, id: &str) -> Result<(usize, VectorType, u64)> {
    let m = store.manifest(id)?;
    let d = &m.details;
    let bad = |what: &str| {
        RetrieveError::Invalid(format!(
            "embeddings artifact {}: its manifest has no valid `{what}`",
            &id[..id.len().min(12)]
        ))
    };
    let dim = d["dim"]
        .as_u64()
        .filter(|x| *x > 0)
        .ok_or_else(|| bad("dim"))? as usize;
    let dtype = d["dtype"]
        .as_str()
        .and_then(VectorType::from_name)
        .ok_or_else(|| bad("dtype"))?;
    let first = d["first_row"].as_u64().ok_or_else(|| bad("first_row"))?;
    Ok((dim, dtype, first))
}

/// The best `k` (score, row) pairs seen so far for one query: candidates
/// above the current cut are collected and, when twice `k` pile up, cut
/// back to `k`. Rows arrive in increasing order, so a later row with a
/// score equal to the cut never outranks a kept one (ties go to the lower
/// row) and is rightly skipped.
pub(crate) struct RunningTopK {
    k: usize,
    cut: f32,
    hits: Vec<(f32, u64)>,
}

impl RunningTopK {
    pub(crate) fn new(k: usize) -> Self {
        RunningTopK {
            k,
            cut: f32::NEG_INFINITY,
            hits: Vec::new(),
        }
    }

    pub(crate) fn offer(&mut self, scores: &[f32], first_row: u64) {
        // Once the cut has settled almost no score passes it: test 64 at a
        // time (a branch-free comparison the compiler vectorises) and look
        // at single scores only in a run that has one above the cut.
        for (c, run) in scores.chunks(64).enumerate() {
            let cut = self.cut;
            if !run.iter().fold(false, |any, &s| any | (s > cut)) {
                continue;
            }
            for (i, &s) in run.iter().enumerate() {
                if s > self.cut {
                    self.hits.push((s, first_row + (c * 64 + i) as u64));
                    if self.hits.len() >= 2 * self.k {
                        self.shrink();
                    }
                }
            }
        }
    }

    fn shrink(&mut self) {
        if self.hits.len() > self.k {
            self.hits
                .select_nth_unstable_by(self.k - 1, |a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            self.hits.truncate(self.k);
            self.cut = self.hits.iter().map(|h| h.0).fold(f32::INFINITY, f32::min);
        }
    }

    pub(crate) fn finish(mut self) -> Vec<Hit> {
        self.shrink();
        let mut hits: Vec<Hit> = self
            .hits
            .into_iter()
            .map(|(s, row)| Hit {
                row,
                score: s as f64,
            })
            .collect();
        sort_hits(&mut hits);
        hits.truncate(self.k);
        hits
    }
}

/// Exact top-`n` inner products of `queries` (row-major, `dim` wide) over
/// the vectors of `shards`, streamed block by block: a reader thread
/// verifies, reads and decodes the next block while the cores score this
/// one (at 1M passages the reading alone was a quarter of the time).
pub fn exact_search(
    store: &Store,
    shards: &[String],
    queries: &[f32],
    dim: usize,
    n: usize,
) -> Result<Vec<Vec<Hit>>> {
    let nq = queries.len() / dim.max(1);
    let mut tops: Vec<RunningTopK> = (0..nq).map(|_| RunningTopK::new(n.max(1))).collect();
    if n == 0 || nq == 0 {
        return Ok(vec![Vec::new(); nq]);
    }
    let isa = Isa::detect();
    let mut scores: Vec<f32> = vec![0.0; QUERY_CHUNK.min(nq) * DOC_BLOCK];
    std::thread::scope(|scope| -> Result<()> {
        // Blocks travel reader -> scorer on `full`, and back on `empty` to
        // be refilled, so three buffers serve the whole corpus.
        let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<(Panels, u64)>(BLOCKS_AHEAD);
        let (empty_tx, empty_rx) = std::sync::mpsc::channel::<Panels>();
        for _ in 0..=BLOCKS_AHEAD {
            let _ = empty_tx.send(Panels::default());
        }
        let reader = scope.spawn(move || read_blocks(store, shards, dim, full_tx, empty_rx));
        for (block, row) in full_rx {
            let rows = block.len();
            for (c, chunk) in tops.chunks_mut(QUERY_CHUNK).enumerate() {
                let q0 = c * QUERY_CHUNK;
                let t = chunk.len();
                let out = &mut scores[..t * rows];
                inner_products(isa, &queries[q0 * dim..(q0 + t) * dim], t, &block, out);
                chunk
                    .par_iter_mut()
                    .zip(out.par_chunks(rows))
                    .for_each(|(top, s)| top.offer(s, row));
            }
            let _ = empty_tx.send(block);
        }
        reader
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })?;
    Ok(tops.into_iter().map(RunningTopK::finish).collect())
}

/// Blocks read ahead of the scoring.
const BLOCKS_AHEAD: usize = 2;

/// The reader of [`exact_search`]: every shard's vectors as packed blocks
/// of up to [`DOC_BLOCK`] rows with the corpus row of their first vector, in
/// corpus order, into buffers taken from `empty`. Stops early when the
/// scorer has gone.
fn read_blocks(
    store: &Store,
    shards: &[String],
    dim: usize,
    full: std::sync::mpsc::SyncSender<(Panels, u64)>,
    empty: std::sync::mpsc::Receiver<Panels>,
) -> Result<()> {
    for_each_stored_block(store, shards, dim, DOC_BLOCK, |vectors, dtype, row| {
        let Ok(mut block) = empty.recv() else {
            return Ok(false);
        };
        block.pack_rows(vectors.len(), dim, |i, out| {
            dtype.decode_into(vectors[i].data(), out)
        });
        Ok(full.send((block, row)).is_ok())
    })
}

/// The error for a shard whose vectors are `d` wide where the questions'
/// are `dim`.
pub(crate) fn width_mismatch(id: &str, d: usize, dim: usize) -> RetrieveError {
    RetrieveError::Invalid(format!(
        "embeddings artifact {} holds {d}-wide vectors but the questions were embedded with {dim} values",
        &id[..id.len().min(12)]
    ))
}

/// Every vector of `shards` in corpus order, decoded to f32, in blocks of
/// up to `block_rows`: `f(vectors, rows, first_row)` (row-major, `dim`
/// wide), until `f` returns `false`. A shard of another width, or a vector
/// of another length, is an error naming the shard and the row.
pub(crate) fn for_each_block(
    store: &Store,
    shards: &[String],
    dim: usize,
    block_rows: usize,
    mut f: impl FnMut(&[f32], usize, u64) -> Result<bool>,
) -> Result<()> {
    let mut raw: Vec<f32> = Vec::with_capacity(block_rows * dim);
    for_each_stored_block(store, shards, dim, block_rows, |vectors, dtype, row| {
        raw.clear();
        for v in vectors {
            dtype.decode(v.data(), &mut raw);
        }
        f(&raw, vectors.len(), row)
    })
}

/// [`for_each_block`] with the vectors as stored: `f(vectors, dtype,
/// first_row)`, each vector `dim` values of `dtype`, for a caller that
/// converts them where it puts them (one pass over the block instead of
/// two). Blocks run across the shard's row groups; only a shard's last
/// block is shorter than `block_rows`.
///
/// The `vector` column is read with Parquet's column reader, not through
/// arrow: a vector is then a slice of its page (of the mapped file itself
/// for shards written uncompressed), never copied into an array.
pub(crate) fn for_each_stored_block(
    store: &Store,
    shards: &[String],
    dim: usize,
    block_rows: usize,
    mut f: impl FnMut(&[ByteArray], VectorType, u64) -> Result<bool>,
) -> Result<()> {
    let block_rows = block_rows.max(1);
    let mut vectors: Vec<ByteArray> = Vec::with_capacity(block_rows);
    for id in shards {
        let short = &id[..id.len().min(12)];
        let (d, dtype, mut row) = shard_layout(store, id)?;
        if d != dim {
            return Err(width_mismatch(id, d, dim));
        }
        let bad = |e: parquet::errors::ParquetError| {
            RetrieveError::Invalid(format!("embeddings artifact {short}: {e}"))
        };
        let file = store.open_file(id)?;
        let schema = file.metadata().file_metadata().schema_descr_ptr();
        let vector_column = (0..schema.num_columns())
            .find(|&c| schema.column(c).path().string() == "vector")
            .filter(|&c| schema.column(c).max_def_level() == 0)
            .filter(|&c| schema.column(c).max_rep_level() == 0)
            .ok_or_else(|| {
                RetrieveError::Invalid(format!(
                    "embeddings artifact {short}: no required, flat `vector` column"
                ))
            })?;
        let want = dim * dtype.width();
        let groups = file.num_row_groups();
        for g in 0..groups {
            let group = file.get_row_group(g).map_err(bad)?;
            let expected = group.metadata().num_rows();
            let ColumnReader::ByteArrayColumnReader(mut reader) =
                group.get_column_reader(vector_column).map_err(bad)?
            else {
                return Err(RetrieveError::Invalid(format!(
                    "embeddings artifact {short}: the `vector` column is not binary"
                )));
            };
            let mut read: i64 = 0;
            loop {
                let before = vectors.len();
                let (n, _, _) = reader
                    .read_records(block_rows - before, None, None, &mut vectors)
                    .map_err(bad)?;
                read += n as i64;
                if let Some(i) = vectors[before..].iter().position(|v| v.len() != want) {
                    return Err(RetrieveError::Invalid(format!(
                        "embeddings artifact {short} row {}: {} bytes where {want} were expected",
                        row + (before + i) as u64,
                        vectors[before + i].len()
                    )));
                }
                let last = g + 1 == groups && read >= expected;
                if vectors.len() == block_rows || (last && !vectors.is_empty()) {
                    if !f(&vectors, dtype, row)? {
                        return Ok(());
                    }
                    row += vectors.len() as u64;
                    vectors.clear();
                }
                if n == 0 || read >= expected {
                    break;
                }
            }
            if read != expected {
                return Err(RetrieveError::Invalid(format!(
                    "embeddings artifact {short} row group {g}: {read} vectors where its footer says {expected}"
                )));
            }
        }
    }
    Ok(())
}

/// Top `n` passages by inner product for every question text: exact, or
/// from an approximate index with `opts.ann` (then also what the contexts
/// manifest records about the index, its recall among it).
pub fn search(
    store: &Store,
    corpus: &str,
    encoder: &TextEncoder,
    texts: &[&str],
    n: usize,
    opts: &RetrieveOptions,
) -> Result<(Vec<Vec<Hit>>, Option<serde_json::Value>)> {
    let shards = embeddings(store, corpus, encoder, opts)?;
    let queries = encoder.embed(texts, opts.batch)?;
    let dim = queries.first().map(Vec::len).unwrap_or(0);
    if let Some(q) = queries.iter().position(|q| q.len() != dim || dim == 0) {
        return Err(RetrieveError::Invalid(format!(
            "question {q}: the encoder returned {} values where the first question had {dim}",
            queries[q].len()
        )));
    }
    let flat: Vec<f32> = queries.into_iter().flatten().collect();
    match opts.ann {
        Some(ann) => {
            let (hits, info) =
                crate::ann::search(store, &shards, &flat, dim, n, ann, opts.progress)?;
            Ok((hits, Some(info)))
        }
        None => Ok((exact_search(store, &shards, &flat, dim, n)?, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The running top-k keeps exactly what a full sort keeps, ties to the
    /// lower row, across blocks.
    #[test]
    fn running_top_k_equals_a_full_sort() {
        let scores: Vec<f32> = (0..1000u64)
            .map(|i| ((i * 7919) % 101) as f32 / 10.0)
            .collect();
        for k in [1, 3, 10, 64] {
            let mut top = RunningTopK::new(k);
            for (b, block) in scores.chunks(37).enumerate() {
                top.offer(block, b as u64 * 37);
            }
            let mut all: Vec<Hit> = scores
                .iter()
                .enumerate()
                .map(|(i, &s)| Hit {
                    row: i as u64,
                    score: s as f64,
                })
                .collect();
            sort_hits(&mut all);
            all.truncate(k);
            assert_eq!(top.finish(), all, "k = {k}");
        }
    }

    #[test]
    fn vector_types_round_trip() {
        let v = [0.5f32, -1.25, 3.0, 1e-3];
        for t in [VectorType::F32, VectorType::F16] {
            let mut bytes = Vec::new();
            t.encode(&v, &mut bytes);
            assert_eq!(bytes.len(), v.len() * t.width());
            let mut back = Vec::new();
            t.decode(&bytes, &mut back);
            for (a, b) in v.iter().zip(&back) {
                assert!((a - b).abs() <= a.abs() * 1e-3, "{t:?}: {a} vs {b}");
            }
            let mut into = [f32::NAN; 4];
            t.decode_into(&bytes, &mut into);
            assert_eq!(into.to_vec(), back, "{t:?}: one vector decoded in place");
        }
    }

    /// The scorer's blocks are packed straight from the stored bytes: the
    /// panels equal those packed from the decoded rows.
    #[test]
    fn panels_packed_from_stored_bytes_equal_packed_decoded_rows() {
        let (n, k) = (45, 7);
        let v: Vec<f32> = (0..n * k).map(|i| (i as f32 * 0.37).sin()).collect();
        for t in [VectorType::F32, VectorType::F16] {
            let mut bytes = Vec::new();
            t.encode(&v, &mut bytes);
            let mut rows = Vec::new();
            t.decode(&bytes, &mut rows);
            let mut want = Panels::default();
            want.pack(&rows, n, k);
            let mut got = Panels::default();
            let stride = k * t.width();
            got.pack_rows(n, k, |i, out| {
                t.decode_into(&bytes[i * stride..(i + 1) * stride], out)
            });
            let (mut a, mut b) = (vec![0.0; n * 3], vec![0.0; n * 3]);
            let x: Vec<f32> = (0..3 * k).map(|i| i as f32 - 4.0).collect();
            let isa = ragprobe_engine::kernels::Isa::detect();
            inner_products(isa, &x, 3, &want, &mut a);
            inner_products(isa, &x, 3, &got, &mut b);
            assert_eq!(a, b, "{t:?}");
            assert_eq!(got.len(), n);
        }
    }

    /// An `embeddings` shard of `vectors` (bytes as stored) in a store.
    fn stored_shard(store: &Store, vectors: &[Vec<u8>], dim: usize, first_row: u64) -> String {
        let recipe = Recipe::new("test-shard", 1, json!({ "first_row": first_row }));
        let ids: Vec<String> = (0..vectors.len())
            .map(|i| format!("d{}", first_row + i as u64))
            .collect();
        write_vectors(
            store,
            &recipe,
            ids.iter().map(String::as_str),
            vectors.iter().map(Vec::as_slice),
            json!({"model": "test", "dim": dim, "dtype": "f32", "shard": 0,
                "shards": 1, "first_row": first_row}),
        )
        .unwrap()
        .id
    }

    fn f32_vector(row: u64, dim: usize) -> Vec<u8> {
        let mut bytes = Vec::new();
        let v: Vec<f32> = (0..dim).map(|j| (row * 10 + j as u64) as f32).collect();
        VectorType::F32.encode(&v, &mut bytes);
        bytes
    }

    /// Stored vectors come back as written, in corpus order, in blocks of
    /// exactly `block_rows` across a shard's row groups (only a shard's
    /// last block is shorter); and a shard's vectors are stored plain and
    /// uncompressed, so they are read in place.
    #[test]
    fn stored_blocks_run_across_row_groups_in_corpus_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let dim = 3;
        // More than two row groups of 8192 rows, then a small shard.
        let (a, b) = (16484u64, 50u64);
        let shard_a = stored_shard(
            &store,
            &(0..a).map(|r| f32_vector(r, dim)).collect::<Vec<_>>(),
            dim,
            0,
        );
        let shard_b = stored_shard(
            &store,
            &(a..a + b).map(|r| f32_vector(r, dim)).collect::<Vec<_>>(),
            dim,
            a,
        );
        let shards = vec![shard_a.clone(), shard_b];
        let mut blocks = Vec::new();
        let mut values = Vec::new();
        for_each_stored_block(&store, &shards, dim, 5000, |v, dtype, row| {
            blocks.push((row, v.len()));
            for x in v {
                dtype.decode(x.data(), &mut values);
            }
            Ok(true)
        })
        .unwrap();
        assert_eq!(
            blocks,
            vec![
                (0, 5000),
                (5000, 5000),
                (10000, 5000),
                (15000, 1484),
                (a, 50)
            ]
        );
        let mut want = Vec::new();
        for r in 0..a + b {
            VectorType::F32.decode(&f32_vector(r, dim), &mut want);
        }
        assert_eq!(values, want);
        let mut decoded = Vec::new();
        for_each_block(&store, &shards, dim, 5000, |v, rows, _| {
            assert_eq!(v.len(), rows * dim);
            decoded.extend_from_slice(v);
            Ok(true)
        })
        .unwrap();
        assert_eq!(decoded, want);

        let file = store.open_file(&shard_a).unwrap();
        let meta = file.metadata();
        assert!(meta.num_row_groups() >= 3);
        for g in meta.row_groups() {
            let vector = g.column(1);
            assert_eq!(vector.column_path().string(), "vector");
            assert_eq!(
                vector.compression(),
                parquet::basic::Compression::UNCOMPRESSED
            );
            assert!(vector.dictionary_page_offset().is_none(), "no dictionary");
        }
    }

    /// A stored vector of the wrong length is an error naming the shard's
    /// corpus row, in a later row group too.
    #[test]
    fn a_vector_of_another_length_is_an_error_naming_its_row() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let dim = 3;
        let mut vectors: Vec<Vec<u8>> = (0..9100).map(|r| f32_vector(r, dim)).collect();
        vectors[9000].truncate(8);
        let shard = stored_shard(&store, &vectors, dim, 100);
        let err = for_each_stored_block(&store, &[shard], dim, 4096, |_, _, _| Ok(true))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("row 9100: 8 bytes where 12 were expected"),
            "{err}"
        );
    }
}
