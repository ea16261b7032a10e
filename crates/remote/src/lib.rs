//! Team sharing: a store pushes artifacts to an object store (S3 and
//! S3-compatible servers, GCS, Azure, HTTP/WebDAV, local directories; the
//! `object_store` crate) and pulls them back, by lineage.
//!
//! Layout of a remote (under its URL's prefix):
//!
//! ```text
//! objects/<id>.parquet    artifacts, immutable, named by the SHA-256 of their bytes
//! actions/<key>.json      action records (the only mutable objects: conditional puts)
//! refs/<sha256>.json      lineage indexes, one per push (immutable, named by their
//!                         content): which action made which object
//! journals/<file>.jsonl   request journals (`--with-journals`), merged line by line
//! ```
//!
//! Everything read from a remote is checked before the store takes it: an
//! object's bytes must hash to its id and its manifest must be valid; a
//! record's key must be its recipe's key. Writes into the local store are
//! atomic, so an interrupted pull leaves nothing half-written, and a rerun
//! resumes (finished objects are skipped, a partial download continues
//! from where it stopped). With [`ReadThrough`], a store fetches from a
//! remote the action records and artifacts it lacks, as stages ask.

mod closure;
pub mod config;
mod connect;
mod error;
mod journals;
mod pull;
mod push;
mod read_through;
mod refs;
mod s3_list;
pub mod test_server;
mod verify;

pub use closure::{local_closure, Closure};
pub use config::{RemoteConfig, StoreConfig};
pub use connect::Backend;
pub use error::{RemoteError, Result};
pub use pull::PullReport;
pub use push::PushReport;
pub use read_through::ReadThrough;
pub use verify::{RemoteListing, VerifyReport};

use futures::TryStreamExt;
use indicatif::{ProgressBar, ProgressStyle};
use object_store::path::Path as Key;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt, UpdateVersion};
use std::sync::Arc;

/// Transfer settings shared by push, pull and verify.
#[derive(Debug, Clone)]
pub struct Transfer {
    /// Objects moved at once.
    pub jobs: usize,
    /// Show a progress bar (on stderr).
    pub progress: bool,
    /// Also carry the request journals.
    pub with_journals: bool,
    /// Push: replace a remote action record that differs from the local one.
    pub force: bool,
}

impl Default for Transfer {
    fn default() -> Self {
        Transfer {
            jobs: 8,
            progress: false,
            with_journals: false,
            force: false,
        }
    }
}

/// Files at least this large go up in parts of this size, several at once.
pub const PART_BYTES: usize = 8 << 20;
/// Parts of one file in flight at once.
pub const PARTS_IN_FLIGHT: usize = 4;

/// An opened remote.
pub struct Remote {
    name: String,
    url: String,
    store: Arc<dyn ObjectStore>,
    backend: Backend,
    /// S3 remotes list key by key (an invalid key is skipped, not fatal).
    lister: Option<s3_list::S3Lister>,
    rt: tokio::runtime::Runtime,
}

impl Remote {
    /// Open the remote `name` described by `config` (no request is made yet).
    pub fn open(name: &str, config: &RemoteConfig) -> Result<Remote> {
        let (mut store, backend, lister) = connect::open(name, config)?;
        // Tests of interruption need a push that takes a while:
        // `RAGPROBE_REMOTE_THROTTLE_MS` delays every put and get by that much.
        if let Some(ms) = std::env::var("RAGPROBE_REMOTE_THROTTLE_MS")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
        {
            let wait = std::time::Duration::from_millis(ms);
            let cfg = object_store::throttle::ThrottleConfig {
                wait_put_per_call: wait,
                wait_get_per_call: wait,
                ..Default::default()
            };
            store = Arc::new(object_store::throttle::ThrottledStore::new(store, cfg));
        }
        let mut remote = Remote::with_store(name, &config.url, store, backend)?;
        remote.lister = lister;
        Ok(remote)
    }

    /// A remote over any object store (tests use the in-memory one).
    pub fn with_store(
        name: &str,
        url: &str,
        store: Arc<dyn ObjectStore>,
        backend: Backend,
    ) -> Result<Remote> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .build()
            .map_err(|error| RemoteError::Io {
                path: "tokio runtime".into(),
                error,
            })?;
        Ok(Remote {
            name: name.to_string(),
            url: url.to_string(),
            store,
            backend,
            lister: None,
            rt,
        })
    }

    /// The remote's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The remote's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub(crate) fn request_error(&self, key: &Key, e: &object_store::Error) -> RemoteError {
        RemoteError::Request {
            remote: self.name.clone(),
            url: self.url.clone(),
            key: key.to_string(),
            message: error::one_line(e),
        }
    }

    pub(crate) fn corrupt(&self, key: &Key, message: impl Into<String>) -> RemoteError {
        RemoteError::Corrupt {
            remote: self.name.clone(),
            url: self.url.clone(),
            key: key.to_string(),
            message: message.into(),
        }
    }

    /// Everything under `prefix/` (one paginated listing). A key that is
    /// not a valid object path (a `..` segment: no ragprobe wrote it) is
    /// skipped with a warning on S3 remotes; on GCS and Azure,
    /// `object_store` fails the listing with an error naming it.
    pub(crate) async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        let at = Key::from(format!("{prefix}/"));
        if let Some(lister) = &self.lister {
            let listed = lister
                .list(prefix)
                .await
                .map_err(|message| RemoteError::Request {
                    remote: self.name.clone(),
                    url: self.url.clone(),
                    key: at.to_string(),
                    message,
                })?;
            for (key, why) in &listed.skipped {
                tracing::warn!(remote = %self.name, "skipping key `{key}`: {why}");
            }
            return Ok(listed.objects);
        }
        let p = Key::from(prefix);
        self.store
            .list(Some(&p))
            .try_collect()
            .await
            .map_err(|e| self.request_error(&at, &e))
    }

    /// The object at `key` with its version (for a compare-and-swap), or
    /// `None` when there is none.
    pub(crate) async fn read(&self, key: &Key) -> Result<Option<(bytes::Bytes, UpdateVersion)>> {
        match self.store.get(key).await {
            Ok(g) => {
                let v = UpdateVersion {
                    e_tag: g.meta.e_tag.clone(),
                    version: g.meta.version.clone(),
                };
                let b = g.bytes().await.map_err(|e| self.request_error(key, &e))?;
                Ok(Some((b, v)))
            }
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.request_error(key, &e)),
        }
    }

    /// [`Remote::read`] of an object a listing just named.
    pub(crate) async fn read_listed(&self, key: &Key) -> Result<bytes::Bytes> {
        match self.read(key).await? {
            Some((b, _)) => Ok(b),
            None => Err(RemoteError::Request {
                remote: self.name.clone(),
                url: self.url.clone(),
                key: key.to_string(),
                message: "listed, then gone (deleted meanwhile?)".into(),
            }),
        }
    }

    /// True when the store supports compare-and-swap updates.
    pub(crate) fn has_conditional_update(&self) -> bool {
        matches!(
            self.backend,
            Backend::S3 | Backend::Gcs | Backend::Azure | Backend::Memory
        )
    }
}

/// `objects/<id>.parquet`.
pub(crate) fn object_key(id: &str) -> Key {
    Key::from(format!("objects/{id}.parquet"))
}

/// `actions/<key>.json`.
pub(crate) fn action_key(key: &str) -> Key {
    Key::from(format!("actions/{key}.json"))
}

/// The id in a listed `objects/<id>.parquet` key, when it is exactly one
/// (`objects/sub/<id>.parquet` is not object `<id>`: it would be fetched
/// from the wrong key).
pub(crate) fn id_of_object_key(key: &Key) -> Option<String> {
    let id = key
        .as_ref()
        .strip_prefix("objects/")?
        .strip_suffix(".parquet")?;
    ragprobe_artifact::is_full_id(id).then(|| id.to_string())
}

/// A byte-count progress bar (hidden unless asked for).
pub(crate) fn bytes_bar(total: u64, show: bool, what: &str) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {msg}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar.set_prefix(what.to_string());
    bar
}
