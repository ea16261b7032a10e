use std::path::PathBuf;

/// Errors of the artifact store. Every variant names the object or file.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    #[error("{path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path}: not a readable Parquet artifact: {message}")]
    Parquet { path: PathBuf, message: String },
    #[error("{path}: has no ragprobe manifest (key `ragprobe.manifest` missing from the Parquet metadata)")]
    NoManifest { path: PathBuf },
    #[error("{path}: manifest is not valid: {message}")]
    BadManifest { path: PathBuf, message: String },
    #[error("object {id} is corrupt: its bytes hash to {actual}")]
    HashMismatch { id: String, actual: String },
    #[error("{path}: refusing to import: the file is named for artifact {expected} but its bytes hash to {actual} (the file was altered or truncated)")]
    AlteredImport {
        path: PathBuf,
        expected: String,
        actual: String,
    },
    #[error("{path}: refusing to import: {message}")]
    BadImport { path: PathBuf, message: String },
    #[error("no artifact matches `{0}` (give a full id, a unique id prefix, or a path to a .parquet file)")]
    NotFound(String),
    #[error("artifact prefix `{prefix}` is ambiguous: it matches {} and {} more", candidates.first().map(String::as_str).unwrap_or(""), candidates.len().saturating_sub(1))]
    Ambiguous {
        prefix: String,
        candidates: Vec<String>,
    },
    #[error("artifact {id} is a `{actual}` artifact, expected `{expected}`")]
    WrongKind {
        id: String,
        expected: String,
        actual: String,
    },
    #[error("`{kind}` artifact{}: column `{column}` {message}", id.as_deref().map(|i| format!(" {i}")).unwrap_or_default())]
    Column {
        kind: String,
        id: Option<String>,
        column: String,
        message: String,
    },
    #[error(transparent)]
    Arrow(#[from] arrow::error::ArrowError),
    #[error("{0}")]
    Other(String),
}

pub type Result<T, E = ArtifactError> = std::result::Result<T, E>;

pub(crate) fn io_err(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> ArtifactError {
    let path = path.into();
    move |error| ArtifactError::Io { path, error }
}
