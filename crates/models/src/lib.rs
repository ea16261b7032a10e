//! Model backends shared by the stages: every model call in
//! ragprobe goes through this crate.
//!
//! * [`embed`]: all-MiniLM-L6-v2 sentence embeddings (mean pooling + L2
//!   normalisation, exactly as sentence-transformers), used by retrieval and
//!   by perturb's similarity filters.
//! * [`encoder`]: passage and question encoders for dense retrieval:
//!   MiniLM in-process or a `/v1/embeddings` server.
//! * [`llm`]: language-model backends (embedded GGUF, OpenAI-compatible)
//!   and the crash-safe request journal.
//! * [`prompts`]: prompt templates as data, found in the studies' catalog.
//! * [`paths`]: where the fetched model files live (`RAGPROBE_MODELS`).

pub mod embed;
pub mod encoder;
pub mod llm;
pub mod paths;
pub mod prompts;
pub mod tokens;
pub mod truncate;

pub use embed::{cosine, Embedder, EMBEDDING_DIM};
pub use encoder::{EncoderKind, RemoteEncoder, RemoteEncoderConfig, TextEncoder};

/// Errors of model loading and inference. Messages name the file or model.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A model or tokenizer file is missing or unreadable.
    #[error("model file {path} is missing; run `bash scripts/fetch-models.sh` (or set RAGPROBE_MODELS to where the models are)")]
    Missing {
        /// Where the file was expected.
        path: std::path::PathBuf,
    },
    /// A model, tokenizer or journal file could not be loaded, or written (journal).
    #[error("{path}: {message}")]
    Load {
        /// The file involved.
        path: std::path::PathBuf,
        /// What went wrong.
        message: String,
    },
    /// Building the tokenizer, tokenizing, or applying the chat template failed.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// A backend could not be reached or answered with an error.
    #[error("{0}")]
    Backend(String),
}

/// The crate's result type; errors default to [`ModelError`].
pub type Result<T, E = ModelError> = std::result::Result<T, E>;
