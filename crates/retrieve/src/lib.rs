//! Retrieval stage: top-k passages per question from a `corpus` artifact,
//! by BM25 (tantivy), dense inner product (all-MiniLM-L6-v2), or their
//! reciprocal-rank fusion; each passage labelled with `has_answer` by the
//! DPR matcher; plus the retrieval metrics of seed 000 Table 3.

mod ann;
mod bm25;
mod dense;
pub mod metrics;

pub use ann::{AnnOptions, HnswOptions, IvfOptions};
pub use bm25::Analyzer;
pub use dense::{exact_search, VectorType};
pub use metrics::{recall_table, RecallRow};

use ragprobe_artifact::{
    kinds, read, rows_of, ArtifactError, ContextRow, Contexts, Corpus, QuestionRow, Questions,
    Recipe, Sink, Store, Written,
};
use ragprobe_matching::has_answer;
use ragprobe_models::TextEncoder;
use serde_json::json;

/// Version of the retrieve stage's logic; part of every recipe. 2: exact
/// dense scores are one FMA chain per passage (`engine::search`), which
/// rounds differently from version 1's partial sums.
pub const STAGE_VERSION: u32 = 2;

/// Errors of the retrieve stage.
#[derive(Debug, thiserror::Error)]
pub enum RetrieveError {
    /// Reading or writing an artifact failed.
    #[error(transparent)]
    Artifact(#[from] ArtifactError),
    /// The embedding model (in-process or a server) failed.
    #[error(transparent)]
    Model(#[from] ragprobe_models::ModelError),
    /// Building, opening or searching a search index failed.
    #[error("{index} index: {message}")]
    Index {
        /// Which index: `BM25`, `IVF` or `HNSW`.
        index: &'static str,
        /// What failed, naming the file where there is one.
        message: String,
    },
    /// The options or inputs cannot be used (e.g. `-k 0`, no questions, an empty question text).
    #[error("{0}")]
    Invalid(String),
}

impl From<tantivy::TantivyError> for RetrieveError {
    fn from(e: tantivy::TantivyError) -> Self {
        RetrieveError::bm25(e)
    }
}

impl RetrieveError {
    /// A BM25 index error.
    pub(crate) fn bm25(e: impl std::fmt::Display) -> Self {
        RetrieveError::Index {
            index: "BM25",
            message: e.to_string(),
        }
    }
}

/// Result of the retrieve stage, failing with [`RetrieveError`] by default.
pub type Result<T, E = RetrieveError> = std::result::Result<T, E>;

/// How passages are ranked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Method {
    /// BM25 with tantivy (index built once per corpus and analyzer, then reused).
    Bm25,
    /// Exact inner product over passage embeddings (all-MiniLM-L6-v2
    /// in-process, or a served model), streamed over embedding shards.
    Dense,
    /// Reciprocal rank fusion of BM25 and dense (Cormack et al. 2009, k = 60).
    Hybrid,
}

impl Method {
    /// The method's name as recorded in recipes and logs: `bm25`, `dense` or `hybrid`.
    pub fn name(self) -> &'static str {
        match self {
            Method::Bm25 => "bm25",
            Method::Dense => "dense",
            Method::Hybrid => "hybrid",
        }
    }
}

/// Options of one retrieval run.
#[derive(Debug, Clone)]
pub struct RetrieveOptions {
    /// How passages are ranked.
    pub method: Method,
    /// Passages per question that form the evaluated top-k.
    pub k: usize,
    /// Extra passages kept after the top-k (rank k+1, ...), e.g. for the
    /// add-top-k condition.
    pub extra: usize,
    /// BM25 text analysis (BM25 and hybrid; dense ignores it).
    pub analyzer: Analyzer,
    /// Texts per MiniLM forward pass.
    pub batch: usize,
    /// Passages per embedding shard (one artifact each; the unit of
    /// resumption and of memory).
    pub shard_rows: usize,
    /// How vectors are stored in the shards.
    pub dtype: VectorType,
    /// Approximate dense search (an IVF index or an HNSW graph) instead of
    /// the exact scan (dense and hybrid).
    pub ann: Option<AnnOptions>,
    /// Show a progress bar on the terminal.
    pub progress: bool,
}

impl Default for RetrieveOptions {
    fn default() -> Self {
        RetrieveOptions {
            method: Method::Bm25,
            k: 5,
            extra: 0,
            analyzer: Analyzer::English,
            batch: 32,
            shard_rows: 100_000,
            dtype: VectorType::F32,
            ann: None,
            progress: false,
        }
    }
}

/// What a retrieval run produced.
#[derive(Debug, Clone)]
pub struct RetrieveReport {
    /// The `contexts` artifact: the top `k + extra` passages of each question.
    pub contexts: Written,
    /// The `metrics` artifact with Recall@k and Unans@k per dataset.
    pub metrics: Written,
    /// Recall@k per dataset, for the summary table.
    pub recall: Vec<RecallRow>,
    /// The whole stage was a cache hit.
    pub cached: bool,
}

/// A retrieved passage: its row in the corpus artifact and its score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// The passage's row in the corpus artifact (0-based).
    pub row: u64,
    /// Its score (BM25, inner product, or fused rank score).
    pub score: f64,
}

/// Sort hits best first; ties broken by corpus row so results never depend
/// on index layout or thread scheduling.
pub(crate) fn sort_hits(hits: &mut [Hit]) {
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.row.cmp(&b.row)));
}

/// Reciprocal rank fusion: score(d) = sum over rankings of 1 / (60 + rank(d)).
pub(crate) fn rrf(rankings: &[Vec<Hit>], n: usize) -> Vec<Hit> {
    let mut acc: std::collections::BTreeMap<u64, f64> = std::collections::BTreeMap::new();
    for ranking in rankings {
        for (i, h) in ranking.iter().enumerate() {
            *acc.entry(h.row).or_default() += 1.0 / (60.0 + (i + 1) as f64);
        }
    }
    let mut hits: Vec<Hit> = acc
        .into_iter()
        .map(|(row, score)| Hit { row, score })
        .collect();
    sort_hits(&mut hits);
    hits.truncate(n);
    hits
}

fn check(opts: &RetrieveOptions, questions: &[QuestionRow]) -> Result<()> {
    if opts.k == 0 {
        return Err(RetrieveError::Invalid("-k must be at least 1".into()));
    }
    if questions.is_empty() {
        return Err(RetrieveError::Invalid(
            "the questions artifact has no rows".into(),
        ));
    }
    if let Some(q) = questions.iter().find(|q| q.question.trim().is_empty()) {
        return Err(RetrieveError::Invalid(format!(
            "question `{}` has an empty question text; nothing to retrieve with",
            q.qid
        )));
    }
    Ok(())
}

/// Retrieve the top `k + extra` passages of `corpus` for every question.
/// `encoder` is needed for dense and hybrid retrieval.
pub fn retrieve(
    store: &Store,
    corpus: &str,
    questions: &str,
    opts: &RetrieveOptions,
    encoder: Option<&TextEncoder>,
) -> Result<RetrieveReport> {
    let corpus = store.resolve_kind(corpus, kinds::CORPUS)?;
    let questions_id = store.resolve_kind(questions, kinds::QUESTIONS)?;
    let mut recipe = Recipe::new(
        "retrieve",
        STAGE_VERSION,
        json!({
            "method": opts.method.name(),
            "k": opts.k,
            "extra": opts.extra,
            "analyzer": if opts.method == Method::Dense { serde_json::Value::Null } else { json!(opts.analyzer.name()) },
        }),
    );
    if opts.method != Method::Bm25 && opts.dtype != VectorType::F32 {
        recipe.params["dtype"] = json!(opts.dtype.name());
    }
    if let (true, Some(ann)) = (opts.method != Method::Bm25, opts.ann) {
        recipe.params["ann"] = ann.to_json();
    }
    recipe.inputs = vec![corpus.clone(), questions_id.clone()];
    let needs_model = opts.method != Method::Bm25;
    let encoder = if needs_model {
        let e = encoder.ok_or_else(|| {
            RetrieveError::Invalid(format!(
                "--method {} needs an embedding model",
                opts.method.name()
            ))
        })?;
        recipe.resources.insert("embedder".into(), e.resource_id());
        Some(e)
    } else {
        None
    };
    if let Some(report) = cached_report(store, &recipe)? {
        return Ok(report);
    }
    let qs = read::<Questions>(store, &questions_id)?;
    check(opts, &qs)?;
    let n = opts.k + opts.extra;
    let started = std::time::Instant::now();
    let texts: Vec<&str> = qs.iter().map(|q| q.question.as_str()).collect();
    let (hits, ann) = search(store, &corpus, &texts, n, opts, encoder)?;
    let search_seconds = started.elapsed().as_secs_f64();
    let contexts = write_contexts(store, &recipe, &corpus, &qs, &hits, opts, ann)?;
    let recall = metrics::recall_from_rows(
        &qs,
        &ragprobe_artifact::read::<ragprobe_artifact::Contexts>(store, &contexts.id)?,
        opts.k,
    );
    let model = match opts.method {
        Method::Bm25 => format!("bm25/{}", opts.analyzer.name()),
        Method::Dense => format!("dense/{}", encoder.map(|e| e.model_name()).unwrap_or("")),
        Method::Hybrid => format!(
            "hybrid-rrf/bm25-{}+{}",
            opts.analyzer.name(),
            encoder.map(|e| e.model_name()).unwrap_or("")
        ),
    };
    let metrics = metrics::write(store, &recipe, &recall, &model, opts.k)?;
    let record = store.record_action(&recipe, &[contexts.clone(), metrics.clone()])?;
    store.log_run(json!({"stage": "retrieve", "action": record.key, "method": opts.method.name(), "questions": qs.len(), "search_seconds": search_seconds, "seconds": started.elapsed().as_secs_f64()}));
    Ok(RetrieveReport {
        contexts,
        metrics,
        recall,
        cached: false,
    })
}

/// The report of a retrieval the store has already done (both outputs present).
fn cached_report(store: &Store, recipe: &Recipe) -> Result<Option<RetrieveReport>> {
    let Some(rec) = store.cached(recipe, &[kinds::CONTEXTS, kinds::METRICS])? else {
        return Ok(None);
    };
    tracing::info!("retrieve: cached, not run (action {})", &rec.key[..12]);
    let get = |kind: &str| {
        rec.outputs
            .iter()
            .find(|o| o.kind == kind)
            .map(Written::from)
    };
    let (Some(contexts), Some(metrics)) = (get(kinds::CONTEXTS), get(kinds::METRICS)) else {
        return Ok(None);
    };
    let recall = metrics::from_metrics(store, &metrics.id)?;
    Ok(Some(RetrieveReport {
        contexts,
        metrics,
        recall,
        cached: true,
    }))
}

/// The top `n` hits of each question text by the options' method.
fn search(
    store: &Store,
    corpus: &str,
    texts: &[&str],
    n: usize,
    opts: &RetrieveOptions,
    encoder: Option<&TextEncoder>,
) -> Result<(Vec<Vec<Hit>>, Option<serde_json::Value>)> {
    Ok(match opts.method {
        Method::Bm25 => (
            bm25::Bm25Index::open_or_build(store, corpus, opts.analyzer, opts.progress)?
                .search_all(texts, n)?,
            None,
        ),
        Method::Dense => dense::search(store, corpus, encoder.expect("checked"), texts, n, opts)?,
        Method::Hybrid => {
            let depth = (n * 10).max(100);
            let b = bm25::Bm25Index::open_or_build(store, corpus, opts.analyzer, opts.progress)?
                .search_all(texts, depth)?;
            let (d, ann) =
                dense::search(store, corpus, encoder.expect("checked"), texts, depth, opts)?;
            (
                b.into_iter().zip(d).map(|(b, d)| rrf(&[b, d], n)).collect(),
                ann,
            )
        }
    })
}

/// Fetch the hit passages from the corpus in one streaming pass, then write
/// the contexts in question order, then rank.
fn write_contexts(
    store: &Store,
    recipe: &Recipe,
    corpus: &str,
    qs: &[QuestionRow],
    hits: &[Vec<Hit>],
    opts: &RetrieveOptions,
    ann: Option<serde_json::Value>,
) -> Result<Written> {
    let mut wanted: std::collections::HashMap<u64, Option<ragprobe_artifact::CorpusRow>> =
        hits.iter().flatten().map(|h| (h.row, None)).collect();
    let mut row = 0u64;
    for batch in store.open_batches(corpus, 8192)? {
        let batch = batch.map_err(ArtifactError::from)?;
        let n = batch.num_rows() as u64;
        if (row..row + n).any(|r| wanted.contains_key(&r)) {
            for (i, c) in rows_of::<Corpus>(&batch)?.into_iter().enumerate() {
                if let Some(slot) = wanted.get_mut(&(row + i as u64)) {
                    *slot = Some(c);
                }
            }
        }
        row += n;
    }
    let mut sink = Sink::<Contexts>::new(store, recipe)?;
    for (q, hs) in qs.iter().zip(hits) {
        for (rank, h) in hs.iter().enumerate() {
            let c = wanted
                .get(&h.row)
                .and_then(|c| c.as_ref())
                .ok_or_else(|| RetrieveError::Invalid(format!("corpus row {} not found", h.row)))?;
            let has = (!q.answers.is_empty()).then(|| has_answer(&q.answers, &c.text));
            sink.push(ContextRow {
                qid: q.qid.clone(),
                rank: rank as i32 + 1,
                doc_id: c.doc_id.clone(),
                title: c.title.clone(),
                text: c.text.clone(),
                score: Some(h.score),
                has_answer: has,
                has_answer_source: has.map(|_| "computed".to_string()),
                relevance: None,
                meta: None,
            })?;
        }
    }
    let mut details = json!({"method": opts.method.name(), "k": opts.k, "extra": opts.extra, "questions": qs.len()});
    if let Some(ann) = ann {
        details["ann"] = ann;
    }
    Ok(sink.finish(details)?)
}

/// Recall@k / Unans of contexts that came with a dataset (or any contexts
/// artifact) for `questions`: pre-retrieved results need no retrieval run.
pub fn evaluate(
    store: &Store,
    questions: &str,
    contexts: &str,
    k: usize,
) -> Result<(Written, Vec<RecallRow>, bool)> {
    if k == 0 {
        return Err(RetrieveError::Invalid("-k must be at least 1".into()));
    }
    let q = store.resolve_kind(questions, kinds::QUESTIONS)?;
    let c = store.resolve_kind(contexts, kinds::CONTEXTS)?;
    let mut recipe = Recipe::new("recall", STAGE_VERSION, json!({"k": k}));
    recipe.inputs = vec![q.clone(), c.clone()];
    if let Some(rec) = store.cached(&recipe, &[kinds::METRICS])? {
        tracing::info!("recall: cached, not run (action {})", &rec.key[..12]);
        let o = rec.output(kinds::METRICS)?;
        let rows = metrics::from_metrics(store, &o.id)?;
        return Ok((o, rows, true));
    }
    let rows = metrics::recall_from_rows(
        &read::<Questions>(store, &q)?,
        &ragprobe_artifact::read::<ragprobe_artifact::Contexts>(store, &c)?,
        k,
    );
    let written = metrics::write(store, &recipe, &rows, "given-contexts", k)?;
    store.record_action(&recipe, std::slice::from_ref(&written))?;
    Ok((written, rows, false))
}
