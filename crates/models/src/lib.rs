//! Model backends shared by the stages (design.md §2): every model call in
//! ragprobe goes through this crate.
//!
//! * [`embed`]: all-MiniLM-L6-v2 sentence embeddings (mean pooling + L2
//!   normalisation, exactly as sentence-transformers), used by retrieval and
//!   by perturb's similarity filters.
//! * [`llm`]: language-model backends (embedded GGUF, OpenAI-compatible)
//!   and the crash-safe request journal.
//! * [`prompts`]: the studies' prompt templates as data (`pipelines/prompts/`).
//! * [`paths`]: where the fetched model files live (`RAGPROBE_MODELS`).

mod builtin_prompts;
pub mod embed;
pub mod llm;
pub mod paths;
pub mod prompts;
pub mod truncate;

pub use embed::{cosine, Embedder, EMBEDDING_DIM};

/// Errors of model loading and inference. Messages name the file or model.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("model file {path} is missing; run `bash scripts/fetch-models.sh` (or set RAGPROBE_MODELS to where the models are)")]
    Missing { path: std::path::PathBuf },
    #[error("{path}: {message}")]
    Load {
        path: std::path::PathBuf,
        message: String,
    },
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// A backend could not be reached or answered with an error.
    #[error("{0}")]
    Backend(String),
    #[error("inference: {0}")]
    Inference(#[from] candle_core::Error),
}

pub type Result<T, E = ModelError> = std::result::Result<T, E>;
