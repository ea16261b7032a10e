//! Dense retrieval: MiniLM passage embeddings (an artifact of their own,
//! cached per corpus id + model hash) and exact inner-product top-k over
//! all of them (flat search), batched as matrix products.

use arrow::array::{Array, ArrayRef, FixedSizeListArray, Float32Array, StringArray};
use arrow::datatypes::{DataType, Field};
use arrow::record_batch::RecordBatch;
use candle_core::{Device, Tensor};
use indicatif::{ProgressBar, ProgressStyle};
use ragprobe_artifact::{
    column::column, rows_of, ArtifactError, Corpus, Embeddings, Recipe, Store,
};
use ragprobe_models::{Embedder, EMBEDDING_DIM};
use serde_json::json;
use std::sync::Arc;

use crate::{sort_hits, Hit, Result, RetrieveOptions};

/// Version of the passage-embedding step.
const EMBED_VERSION: u32 = 1;
/// Passages scored per matrix product.
const DOC_CHUNK: usize = 16384;
/// Queries scored per matrix product.
const QUERY_CHUNK: usize = 64;

/// The text embedded for a passage.
pub fn passage_text(title: Option<&str>, text: &str) -> String {
    match title {
        Some(t) if !t.is_empty() => format!("{t}\n{text}"),
        _ => text.to_string(),
    }
}

/// The embeddings artifact of `corpus`, computed once per corpus and model.
pub fn embeddings(
    store: &Store,
    corpus: &str,
    embedder: &Embedder,
    opts: &RetrieveOptions,
) -> Result<String> {
    let mut recipe = Recipe::new(
        "embed",
        EMBED_VERSION,
        json!({"model": embedder.model_name(), "text": "title\\ntext", "max_seq_len": 256}),
    );
    recipe.inputs = vec![corpus.to_string()];
    recipe.resources.insert(
        "embedder".into(),
        format!(
            "{}:sha256:{}",
            embedder.model_name(),
            embedder.model_sha256()
        ),
    );
    if let Some(rec) = store.cached(&recipe)? {
        tracing::info!(
            "embed: cached passage embeddings {}",
            &rec.outputs[0].id[..12]
        );
        return Ok(rec.outputs[0].id.clone());
    }
    let rows = store.manifest(corpus)?.rows;
    let bar = if opts.progress {
        ProgressBar::new(rows)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template(
            "embed passages [{bar:30}] {pos}/{len} ({per_sec}, eta {eta})",
        )
        .expect("static")
        .progress_chars("=> "),
    );
    let mut w = ragprobe_artifact::writer::<Embeddings>(store, &recipe)?;
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    for batch in store.open_batches(corpus, 256)? {
        let batch = batch.map_err(ArtifactError::from)?;
        let cs = rows_of::<Corpus>(&batch)?;
        let texts: Vec<String> = cs
            .iter()
            .map(|c| passage_text(c.title.as_deref(), &c.text))
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let embs = embedder.embed(&refs, opts.batch)?;
        let values = Float32Array::from_iter_values(embs.iter().flatten().copied());
        let list =
            FixedSizeListArray::try_new(item.clone(), EMBEDDING_DIM as i32, Arc::new(values), None)
                .map_err(ArtifactError::from)?;
        let ids: ArrayRef = Arc::new(StringArray::from_iter_values(
            cs.iter().map(|c| c.doc_id.as_str()),
        ));
        w.write(
            &RecordBatch::try_new(w.schema(), vec![ids, Arc::new(list)])
                .map_err(ArtifactError::from)?,
        )?;
        bar.inc(cs.len() as u64);
    }
    bar.finish_and_clear();
    let written = w.finish(json!({"model": embedder.model_name(), "dim": EMBEDDING_DIM}))?;
    store.record_action(&recipe, std::slice::from_ref(&written))?;
    Ok(written.id)
}

/// All passage embeddings, row-major (rows x 384).
fn load_matrix(store: &Store, id: &str) -> Result<Vec<f32>> {
    let mut out = Vec::new();
    for batch in store.open_batches(id, 8192)? {
        let batch = batch.map_err(ArtifactError::from)?;
        let list = column::<FixedSizeListArray>(&batch, "embedding")?;
        let values = list
            .values()
            .as_any()
            .downcast_ref::<Float32Array>()
            .ok_or_else(|| ArtifactError::Other("embedding values are not float32".into()))?;
        let start = list.offset() * EMBEDDING_DIM;
        out.extend_from_slice(&values.values()[start..start + list.len() * EMBEDDING_DIM]);
    }
    Ok(out)
}

/// Top `n` passages by inner product for every question text.
pub fn search(
    store: &Store,
    corpus: &str,
    embedder: &Embedder,
    texts: &[&str],
    n: usize,
    opts: &RetrieveOptions,
) -> Result<Vec<Vec<Hit>>> {
    let emb_id = embeddings(store, corpus, embedder, opts)?;
    let docs = load_matrix(store, &emb_id)?;
    let n_docs = docs.len() / EMBEDDING_DIM;
    let queries = embedder.embed(texts, opts.batch)?;
    let dev = Device::Cpu;
    let mut results: Vec<Vec<Hit>> = vec![Vec::new(); texts.len()];
    for (qi0, qchunk) in queries.chunks(QUERY_CHUNK).enumerate() {
        let qflat: Vec<f32> = qchunk.iter().flatten().copied().collect();
        let q = Tensor::from_vec(qflat, (qchunk.len(), EMBEDDING_DIM), &dev)
            .map_err(ragprobe_models::ModelError::from)?;
        for d0 in (0..n_docs).step_by(DOC_CHUNK) {
            let d1 = (d0 + DOC_CHUNK).min(n_docs);
            let d = Tensor::from_slice(
                &docs[d0 * EMBEDDING_DIM..d1 * EMBEDDING_DIM],
                (d1 - d0, EMBEDDING_DIM),
                &dev,
            )
            .map_err(ragprobe_models::ModelError::from)?;
            let scores: Vec<Vec<f32>> = q
                .matmul(&d.t().map_err(ragprobe_models::ModelError::from)?)
                .and_then(|s| s.to_vec2())
                .map_err(ragprobe_models::ModelError::from)?;
            for (j, row) in scores.into_iter().enumerate() {
                let top = &mut results[qi0 * QUERY_CHUNK + j];
                top.extend(row.into_iter().enumerate().map(|(i, s)| Hit {
                    row: (d0 + i) as u64,
                    score: s as f64,
                }));
                if top.len() > n {
                    top.select_nth_unstable_by(n, |a, b| {
                        b.score.total_cmp(&a.score).then(a.row.cmp(&b.row))
                    });
                    top.truncate(n);
                }
            }
        }
    }
    for r in &mut results {
        sort_hits(r);
        r.truncate(n);
    }
    Ok(results)
}
