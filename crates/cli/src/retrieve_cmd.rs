use anyhow::{Context, Result};
use clap::Args;
use ragprobe_artifact::Store;
use ragprobe_models::llm::openai::OpenAiConfig;
use ragprobe_models::{EncoderKind, RemoteEncoder, RemoteEncoderConfig, TextEncoder};
use ragprobe_retrieve::{
    evaluate, recall_table, retrieve, Analyzer, Method, RetrieveOptions, VectorType,
};
use std::time::Duration;

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
    #[command(flatten)]
    pub embed: EmbedArgs,
}

/// Where passage and question embeddings come from (dense, hybrid).
#[derive(Args, Debug, Clone)]
pub struct EmbedArgs {
    /// Encoder: all-MiniLM-L6-v2 in-process, or an OpenAI-compatible
    /// `/v1/embeddings` server (vLLM, Text Embeddings Inference, Infinity, Ollama, OpenAI).
    #[arg(long, value_enum, default_value_t = EncoderKind::Local)]
    pub embed_backend: EncoderKind,
    /// Base URL of the embeddings server; several values (or the flag
    /// repeated) for replicas: requests go to the least busy.
    #[arg(long = "embed-base-url", num_args = 1.., default_value = "http://127.0.0.1:8000/v1")]
    pub embed_base_urls: Vec<String>,
    /// The served embedding model's name (openai).
    #[arg(long)]
    pub embed_model: Option<String>,
    /// Name of the environment variable holding the server's API key (never logged).
    #[arg(long)]
    pub embed_api_key_env: Option<String>,
    /// Embedding requests in flight at once, over all replicas (openai).
    #[arg(long, default_value_t = 16, value_parser = crate::bounds::usize_in(1, 4096))]
    pub embed_concurrency: usize,
    /// Texts per embeddings request (openai).
    #[arg(long, default_value_t = 64, value_parser = crate::bounds::usize_in(1, 100_000))]
    pub embed_inputs_per_request: usize,
    /// Ask the server for base64 vectors (less to send and parse; vLLM, TEI, Infinity and OpenAI support it).
    #[arg(long)]
    pub embed_base64: bool,
    /// Attempts per embeddings request before the run stops (finished shards are kept).
    #[arg(long, default_value_t = 6)]
    pub embed_max_attempts: u32,
    /// Per-request timeout in seconds (openai).
    #[arg(long, default_value_t = 120.0, value_parser = crate::bounds::f64_in(0.0, 86_400.0, true))]
    pub embed_timeout: f64,
    /// Passages per embedding shard: each shard is one artifact, the unit of
    /// resumption, and the most vectors any step holds at once.
    #[arg(long, default_value_t = 100_000, value_parser = crate::bounds::usize_in(1, 100_000_000))]
    pub shard_rows: usize,
    /// Vector storage in the shards: f32, or f16 for half the disk and read time.
    #[arg(long, value_enum, default_value_t = VectorType::F32)]
    pub embed_dtype: VectorType,
    /// Approximate search with an HNSW graph (built once per embeddings and
    /// reused; needs unit vectors) instead of the exact scan. Its recall@10
    /// against the exact search, on up to 200 of the questions, goes into the
    /// contexts artifact's manifest.
    #[arg(long)]
    pub ann: bool,
    /// HNSW links per node (M).
    #[arg(long, default_value_t = 16, value_parser = crate::bounds::usize_in(2, 128))]
    pub ann_m: usize,
    /// HNSW candidates explored per insertion.
    #[arg(long, default_value_t = 100, value_parser = crate::bounds::usize_in(1, 10_000))]
    pub ann_ef_construction: usize,
    /// HNSW candidates explored per query (raised to k when lower).
    #[arg(long, default_value_t = 64, value_parser = crate::bounds::usize_in(1, 100_000))]
    pub ann_ef_search: usize,
}

impl EmbedArgs {
    /// The encoder these options name.
    pub fn encoder(&self) -> Result<TextEncoder> {
        Ok(match self.embed_backend {
            EncoderKind::Local => TextEncoder::Local(Box::new(
                ragprobe_models::Embedder::load_default().context("loading the MiniLM embedder")?,
            )),
            EncoderKind::Openai => TextEncoder::Remote(RemoteEncoder::new(RemoteEncoderConfig {
                client: OpenAiConfig {
                    base_urls: self.embed_base_urls.clone(),
                    model: self.embed_model.clone().context(
                        "--embed-backend openai needs --embed-model (the served model name)",
                    )?,
                    api_key_env: self.embed_api_key_env.clone(),
                    concurrency: self.embed_concurrency,
                    timeout: Duration::from_secs_f64(self.embed_timeout),
                    max_attempts: self.embed_max_attempts,
                    ..Default::default()
                },
                inputs_per_request: self.embed_inputs_per_request,
                base64: self.embed_base64,
            })?),
        })
    }
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
    let encoder = if method == Method::Bm25 {
        None
    } else {
        Some(a.embed.encoder()?)
    };
    let opts = RetrieveOptions {
        method,
        k: a.k,
        extra: a.extra,
        analyzer: Analyzer::for_lang(&a.lang),
        batch: a.batch,
        shard_rows: a.embed.shard_rows,
        dtype: a.embed.embed_dtype,
        ann: a.embed.ann.then_some(ragprobe_retrieve::AnnOptions {
            m: a.embed.ann_m,
            ef_construction: a.embed.ann_ef_construction,
            ef_search: a.embed.ann_ef_search,
        }),
        progress: true,
    };
    let r = retrieve(store, &a.corpus, &a.questions, &opts, encoder.as_ref())?;
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
