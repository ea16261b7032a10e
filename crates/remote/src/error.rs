use std::path::PathBuf;

/// Errors of remotes: every one names the remote and, where there is one,
/// the object, in a single line.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The store's config file could not be read or written.
    #[error("{path}: {message}")]
    Config {
        /// The config file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The command cannot be done as asked (unknown remote, bad name, ...).
    #[error("{0}")]
    Usage(String),
    /// The remote cannot be reached or opened (no credentials, bad URL).
    #[error("remote `{remote}` ({url}): {message}")]
    Connect {
        /// The remote's name.
        remote: String,
        /// Its URL.
        url: String,
        /// Why.
        message: String,
    },
    /// A request for one object failed (denied, missing bucket, network).
    #[error("remote `{remote}` ({url}): {key}: {message}")]
    Request {
        /// The remote's name.
        remote: String,
        /// Its URL.
        url: String,
        /// The object's key in the remote.
        key: String,
        /// What the store answered, on one line.
        message: String,
    },
    /// An object in the remote is not what its key says: refused.
    #[error("remote `{remote}` ({url}): {key}: refused: {message}")]
    Corrupt {
        /// The remote's name.
        remote: String,
        /// Its URL.
        url: String,
        /// The object's key in the remote.
        key: String,
        /// What is wrong with it.
        message: String,
    },
    /// The local store failed.
    #[error(transparent)]
    Artifact(#[from] ragprobe_artifact::ArtifactError),
    /// A local file could not be read or written.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        error: std::io::Error,
    },
}

/// Result of remote operations.
pub type Result<T, E = RemoteError> = std::result::Result<T, E>;

/// An `object_store` error on one line, with the causes a user can act on
/// said plainly (the raw answer follows).
pub(crate) fn one_line(e: &object_store::Error) -> String {
    let raw = ragprobe_artifact::error_chain(e);
    let denied = matches!(
        e,
        object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. }
    );
    with_hint(&raw, denied)
}

/// `raw` on one line, after the cause a user can act on said plainly (a
/// missing bucket, denied access — or `denied` —, an unreachable server).
pub(crate) fn with_hint(raw: &str, denied: bool) -> String {
    let raw = raw.replace(['\n', '\r'], " ");
    let hint = if raw.contains("NoSuchBucket") {
        Some("the bucket does not exist")
    } else if raw.contains("AccessDenied")
        || raw.contains("403 Forbidden")
        || raw.contains("InvalidAccessKeyId")
        || raw.contains("SignatureDoesNotMatch")
        || denied
    {
        Some("access denied (check the credentials in the environment or profile)")
    } else if raw.contains("onnection refused")
        || raw.contains("error sending request")
        || raw.contains("dns error")
        || raw.contains("timed out")
    {
        Some("cannot reach the server (network failure)")
    } else {
        None
    };
    match hint {
        Some(h) => format!("{h}: {raw}"),
        None => raw,
    }
}
