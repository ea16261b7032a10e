use ragprobe_artifact::ArtifactError;

/// An ingest failure. Record-level errors name the file, the line where the
/// record starts, and the field.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// A bad record: the file, the line where the record starts, and what is wrong.
    #[error("{file}:{line}: {message}")]
    Record {
        /// The input file.
        file: String,
        /// 1-based line where the record starts.
        line: u64,
        /// What is wrong, usually naming the field.
        message: String,
    },
    /// A problem with a whole input file: missing, unreadable, empty or of the wrong kind.
    #[error("{file}: {message}")]
    File {
        /// The input file or directory.
        file: String,
        /// What is wrong with it.
        message: String,
    },
    /// A run-level error, given as its message: no input files or `--format`, no valid rows, and the like.
    #[error("{0}")]
    Usage(String),
    /// A failure reading or writing artifacts in the store.
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
    /// The field's name in the input record.
    pub field: String,
    /// What is wrong with it, e.g. `is missing`.
    pub message: String,
}

impl FieldError {
    /// A field error with a custom message.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }
    /// The error for a required field that is absent.
    pub fn missing(field: impl Into<String>) -> Self {
        FieldError::new(field, "is missing")
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "field `{}` {}", self.field, self.message)
    }
}
