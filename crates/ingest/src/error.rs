use ragprobe_artifact::ArtifactError;

/// An ingest failure. Record-level errors name the file, the line where the
/// record starts, and the field.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("{file}:{line}: {message}")]
    Record {
        file: String,
        line: u64,
        message: String,
    },
    #[error("{file}: {message}")]
    File { file: String, message: String },
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Artifact(#[from] ArtifactError),
}

impl IngestError {
    /// True for errors confined to one record, which `--on-error skip` may skip.
    pub fn is_record_level(&self) -> bool {
        matches!(self, IngestError::Record { .. })
    }
}

/// A problem with one field of a record; the reader adds file and line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }
    pub fn missing(field: impl Into<String>) -> Self {
        FieldError::new(field, "is missing")
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "field `{}` {}", self.field, self.message)
    }
}
