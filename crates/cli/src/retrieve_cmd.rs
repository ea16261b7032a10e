use anyhow::{Context, Result};
use clap::Args;
use ragprobe_artifact::Store;
use ragprobe_retrieve::{evaluate, recall_table, retrieve, Analyzer, Method, RetrieveOptions};

/// Retrieve the top-k passages of a corpus for every question.
///
/// Writes a `contexts` artifact (qid, rank, doc_id, title, text, score,
/// has_answer by the DPR matcher) and a `metrics` artifact with Recall@k and
/// Unans per dataset (seed 000 Table 3), and prints that table on stderr.
#[derive(Args, Debug)]
pub struct RetrieveArgs {
    /// The corpus artifact (id, prefix or .parquet path).
    #[arg(long)]
    pub corpus: String,
    /// The questions artifact.
    #[arg(long)]
    pub questions: String,
    /// Ranking method.
    #[arg(long, value_enum, default_value_t = Method::Bm25)]
    pub method: Method,
    /// Passages per question.
    #[arg(short, long, default_value_t = 5, value_parser = crate::bounds::usize_in(1, 100_000))]
    pub k: usize,
    /// Extra passages kept after the top k (e.g. 1 for the add-top-k condition).
    #[arg(long, default_value_t = 0, value_parser = crate::bounds::usize_in(0, 1000))]
    pub extra: usize,
    /// BM25 analysis: a language code (en, de, fr, ... stemmed; zh/ja/ko character bigrams) or `plain`.
    #[arg(long, default_value = "en")]
    pub lang: String,
    /// Texts per MiniLM forward pass (dense, hybrid).
    #[arg(long, default_value_t = 32, value_parser = crate::bounds::usize_in(1, 4096))]
    pub batch: usize,
}

/// Recall@k and Unans of an existing contexts artifact (pre-retrieved
/// results that came with a dataset), per dataset — seed 000 Table 3.
#[derive(Args, Debug)]
pub struct RecallArgs {
    /// The questions artifact.
    #[arg(long)]
    pub questions: String,
    /// The contexts artifact.
    #[arg(long)]
    pub contexts: String,
    /// Cut-off rank.
    #[arg(short, long, default_value_t = 5, value_parser = crate::bounds::usize_in(1, 100_000))]
    pub k: usize,
}

pub fn run(store: &Store, a: RetrieveArgs) -> Result<crate::StageOut> {
    let method = a.method;
    let embedder = if method == Method::Bm25 {
        None
    } else {
        Some(ragprobe_models::Embedder::load_default().context("loading the MiniLM embedder")?)
    };
    let opts = RetrieveOptions {
        method,
        k: a.k,
        extra: a.extra,
        analyzer: Analyzer::for_lang(&a.lang),
        batch: a.batch,
        progress: true,
    };
    let r = retrieve(store, &a.corpus, &a.questions, &opts, embedder.as_ref())?;
    eprint!("{}", recall_table(&r.recall));
    Ok(crate::StageOut::new(
        [
            (r.contexts.kind.as_str(), r.contexts.id.as_str()),
            (r.metrics.kind.as_str(), r.metrics.id.as_str()),
        ],
        r.cached,
    ))
}

pub fn recall(store: &Store, a: RecallArgs) -> Result<crate::StageOut> {
    let (m, rows, cached) = evaluate(store, &a.questions, &a.contexts, a.k)?;
    eprint!("{}", recall_table(&rows));
    Ok(crate::StageOut::new(
        [(m.kind.as_str(), m.id.as_str())],
        cached,
    ))
}
