use std::path::PathBuf;

/// Errors of the artifact store. Every variant names the object or file.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// Reading or writing a file failed.
    #[error("{path}: {error}")]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The underlying I/O error.
        error: std::io::Error,
    },
    /// A file could not be read or written as Parquet.
    #[error("{path}: not a readable Parquet artifact: {message}")]
    Parquet {
        /// The file involved.
        path: PathBuf,
        /// What the Parquet reader or writer said.
        message: String,
    },
    /// A Parquet file carries no ragprobe manifest in its metadata.
    #[error("{path}: has no ragprobe manifest (key `ragprobe.manifest` missing from the Parquet metadata)")]
    NoManifest {
        /// The file involved.
        path: PathBuf,
    },
    /// A file's manifest does not parse or fails the manifest checks.
    #[error("{path}: manifest is not valid: {message}")]
    BadManifest {
        /// The file involved.
        path: PathBuf,
        /// What is wrong with the manifest.
        message: String,
    },
    /// A stored object's bytes no longer hash to its id.
    #[error("object {id} is corrupt: its bytes hash to {actual}")]
    HashMismatch {
        /// The object's id (the hash it should have).
        id: String,
        /// The hash of its bytes now.
        actual: String,
    },
    /// An imported file is named for one artifact id but its bytes hash to another.
    #[error("{path}: refusing to import: the file is named for artifact {expected} but its bytes hash to {actual} (the file was altered or truncated)")]
    AlteredImport {
        /// The file being imported.
        path: PathBuf,
        /// The id the file name claims.
        expected: String,
        /// The id its bytes actually hash to.
        actual: String,
    },
    /// An imported file is not a valid artifact (unreadable, bad manifest, wrong row count, or changed mid-copy).
    #[error("{path}: refusing to import: {message}")]
    BadImport {
        /// The file being imported.
        path: PathBuf,
        /// Why it is refused.
        message: String,
    },
    /// Nothing in the store matches what the user typed.
    #[error("no artifact matches `{0}` (give a full id, a unique id prefix, or a path to a .parquet file)")]
    NotFound(String),
    /// An id prefix matches more than one stored object.
    #[error("artifact prefix `{prefix}` is ambiguous: it matches {} and {} more", candidates.first().map(String::as_str).unwrap_or(""), candidates.len().saturating_sub(1))]
    Ambiguous {
        /// The prefix the user typed.
        prefix: String,
        /// Every stored id it matches, sorted.
        candidates: Vec<String>,
    },
    /// An artifact is of another kind than the stage expected.
    #[error("artifact {id} is a `{actual}` artifact, expected `{expected}`")]
    WrongKind {
        /// The artifact id.
        id: String,
        /// The kind the caller asked for.
        expected: String,
        /// The kind its manifest records.
        actual: String,
    },
    /// A column of an artifact is missing or cannot be decoded as its kind says.
    #[error("`{kind}` artifact{}: column `{column}` {message}", id.as_deref().map(|i| format!(" {i}")).unwrap_or_default())]
    Column {
        /// The artifact's kind name.
        kind: String,
        /// The artifact id, when known (streaming readers decode without one).
        id: Option<String>,
        /// The column's name.
        column: String,
        /// What is wrong with it.
        message: String,
    },
    /// An Arrow error while building or reading record batches.
    #[error(transparent)]
    Arrow(#[from] arrow::error::ArrowError),
    /// Any other error, as its message.
    #[error("{0}")]
    Other(String),
}

/// Result of the artifact store's operations, failing with [`ArtifactError`] by default.
pub type Result<T, E = ArtifactError> = std::result::Result<T, E>;

pub(crate) fn io_err(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> ArtifactError {
    let path = path.into();
    move |error| ArtifactError::Io { path, error }
}
