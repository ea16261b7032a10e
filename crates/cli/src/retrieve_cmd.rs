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
    /// The served embedding model's name (openai); for the in-process
    /// encoder, `hf:<owner>/<name>[@rev]`: a BERT-family sentence encoder
    /// with mean pooling, as all-MiniLM-L6-v2 (its config.json,
    /// tokenizer.json and model.safetensors fetched through the hub protocol).
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
    /// Approximate search instead of the exact scan: `--ann` (or `--ann
    /// ivf`) an IVF index (k-means cells, the nearest --ann-nprobe searched
    /// exactly; any vectors), `--ann hnsw` an HNSW graph (unit vectors).
    /// Built once per embeddings and reused; its recall@10 against the
    /// exact search, on up to 200 of the questions, goes into the contexts
    /// artifact's manifest.
    #[arg(long, value_enum, num_args = 0..=1, default_missing_value = "ivf")]
    pub ann: Option<AnnKind>,
    /// IVF cells (k-means centroids) [default: √N for N passages].
    #[arg(long, value_parser = crate::bounds::usize_in(1, 65_536))]
    pub ann_nlist: Option<usize>,
    /// IVF cells searched per question: recall against speed [default: 16].
    #[arg(long, value_parser = crate::bounds::usize_in(1, 65_536))]
    pub ann_nprobe: Option<usize>,
    /// IVF: pick nprobe instead, the smallest whose recall@10 on up to 200
    /// of the questions (against the exact search the run does anyway)
    /// reaches this (0–1]; the nprobes tried go into the manifest.
    #[arg(long, value_parser = crate::bounds::f64_in(0.0, 1.0, true), conflicts_with = "ann_nprobe")]
    pub ann_recall: Option<f64>,
    /// HNSW links per node (M) [default: 16].
    #[arg(long, value_parser = crate::bounds::usize_in(2, 128))]
    pub ann_m: Option<usize>,
    /// HNSW candidates explored per insertion [default: 100].
    #[arg(long, value_parser = crate::bounds::usize_in(1, 10_000))]
    pub ann_ef_construction: Option<usize>,
    /// HNSW candidates explored per query, raised to k when lower [default: 64].
    #[arg(long, value_parser = crate::bounds::usize_in(1, 100_000))]
    pub ann_ef_search: Option<usize>,
}

/// Which approximate index `--ann` searches.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnnKind {
    /// Inverted file: k-means cells scored exactly (the default).
    Ivf,
    /// Hierarchical navigable small-world graph (`hnsw_rs`).
    Hnsw,
}

impl EmbedArgs {
    /// The approximate index these options name, if any. A flag of the
    /// other index (or any index flag without `--ann`) is an error rather
    /// than silently ignored: a bare `--ann` meant HNSW before IVF became
    /// the default.
    pub fn ann(&self) -> Result<Option<ragprobe_retrieve::AnnOptions>> {
        use ragprobe_retrieve::{AnnOptions, HnswOptions, IvfOptions};
        let ivf_flags = [
            ("--ann-nlist", self.ann_nlist),
            ("--ann-nprobe", self.ann_nprobe),
            ("--ann-recall", self.ann_recall.map(|_| 0)),
        ];
        let hnsw_flags = [
            ("--ann-m", self.ann_m),
            ("--ann-ef-construction", self.ann_ef_construction),
            ("--ann-ef-search", self.ann_ef_search),
        ];
        let stray = |flags: &[(&'static str, Option<usize>)], what: &str| match flags
            .iter()
            .find(|f| f.1.is_some())
        {
            Some((flag, _)) => anyhow::bail!("{flag} {what}"),
            None => Ok(()),
        };
        Ok(match self.ann {
            None => {
                stray(&ivf_flags, "needs --ann (the IVF index)")?;
                stray(&hnsw_flags, "needs --ann hnsw")?;
                None
            }
            Some(AnnKind::Ivf) => {
                stray(
                    &hnsw_flags,
                    "applies to --ann hnsw; a bare --ann is the IVF index",
                )?;
                let d = IvfOptions::default();
                Some(AnnOptions::Ivf(IvfOptions {
                    nlist: self.ann_nlist.or(d.nlist),
                    nprobe: self.ann_nprobe.unwrap_or(d.nprobe),
                    recall: self.ann_recall,
                }))
            }
            Some(AnnKind::Hnsw) => {
                stray(&ivf_flags, "applies to --ann ivf, not --ann hnsw")?;
                let d = HnswOptions::default();
                Some(AnnOptions::Hnsw(HnswOptions {
                    m: self.ann_m.unwrap_or(d.m),
                    ef_construction: self.ann_ef_construction.unwrap_or(d.ef_construction),
                    ef_search: self.ann_ef_search.unwrap_or(d.ef_search),
                }))
            }
        })
    }

    /// The encoder these options name.
    pub fn encoder(&self) -> Result<TextEncoder> {
        Ok(match self.embed_backend {
            EncoderKind::Local => TextEncoder::Local(Box::new(match self.embed_model.as_deref() {
                None | Some("embedded" | "default") => ragprobe_models::Embedder::load_default()
                    .context("loading the MiniLM embedder")?,
                Some(m) if m.starts_with("hf:") => {
                    let opts = ragprobe_data::DataOptions::from_env(std::path::Path::new("."));
                    let dir = ragprobe_data::model_dir(
                        m,
                        &["config.json", "tokenizer.json", "model.safetensors"],
                        &opts,
                    )?;
                    ragprobe_models::Embedder::load(&dir)
                        .with_context(|| format!("loading the encoder {m}"))?
                }
                Some(other) => anyhow::bail!(
                    "--embed-model for the in-process encoder is hf:<owner>/<name>[@rev] (or none for all-MiniLM-L6-v2), got `{other}`"
                ),
            })),
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
        ann: a.embed.ann()?,
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

#[cfg(test)]
mod tests {
    use crate::{Cli, Command};
    use clap::Parser;
    use ragprobe_retrieve::{AnnOptions, HnswOptions, IvfOptions};

    fn parse(args: &[&str]) -> anyhow::Result<Option<AnnOptions>> {
        let base = ["ragprobe", "retrieve", "--corpus", "c", "--questions", "q"];
        let cli = Cli::try_parse_from(base.iter().chain(args)).unwrap();
        match cli.command {
            Command::Retrieve(a) => a.embed.ann(),
            other => panic!("{other:?}"),
        }
    }

    fn ann(args: &[&str]) -> Option<AnnOptions> {
        parse(args).unwrap()
    }

    /// A bare `--ann` (even before another flag) is the IVF index with its
    /// defaults; `--ann hnsw` takes the HNSW flags; no `--ann` is exact.
    #[test]
    fn ann_flag_names_the_index() {
        assert_eq!(ann(&[]), None);
        let ivf = AnnOptions::Ivf(IvfOptions::default());
        assert_eq!(ann(&["--ann"]), Some(ivf));
        assert_eq!(ann(&["--ann", "-k", "3"]), Some(ivf));
        assert_eq!(ann(&["--ann", "ivf"]), Some(ivf));
        assert_eq!(
            ann(&["--ann", "--ann-nlist", "64", "--ann-nprobe", "4"]),
            Some(AnnOptions::Ivf(IvfOptions {
                nlist: Some(64),
                nprobe: 4,
                recall: None,
            }))
        );
        assert_eq!(
            ann(&["--ann", "--ann-recall", "0.95"]),
            Some(AnnOptions::Ivf(IvfOptions {
                recall: Some(0.95),
                ..IvfOptions::default()
            }))
        );
        assert_eq!(
            ann(&["--ann", "hnsw", "--ann-ef-search", "128"]),
            Some(AnnOptions::Hnsw(HnswOptions {
                ef_search: 128,
                ..HnswOptions::default()
            }))
        );
    }

    /// Regression: a bare `--ann` with HNSW flags (HNSW's form before IVF
    /// became the default) silently ran IVF and ignored them; a flag of
    /// either index without `--ann` ran the exact search. Now each is an
    /// error naming the flag.
    #[test]
    fn an_index_flag_that_would_be_ignored_is_an_error() {
        for (args, flag) in [
            (&["--ann", "--ann-ef-search", "128"][..], "--ann-ef-search"),
            (&["--ann", "ivf", "--ann-m", "8"][..], "--ann-m"),
            (&["--ann", "hnsw", "--ann-nprobe", "4"][..], "--ann-nprobe"),
            (
                &["--ann", "hnsw", "--ann-recall", "0.9"][..],
                "--ann-recall",
            ),
            (&["--ann-nlist", "64"][..], "--ann-nlist"),
            (
                &["--ann-ef-construction", "50"][..],
                "--ann-ef-construction",
            ),
        ] {
            let err = parse(args).unwrap_err().to_string();
            assert!(err.starts_with(flag), "{args:?}: {err}");
        }
    }
}
