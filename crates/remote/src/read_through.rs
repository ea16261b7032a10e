//! Read-through: a store that fetches from a remote what it lacks
//! (`ragprobe --store-remote team …`). A stage whose action ran on another
//! machine gets the record, its outputs and their lineage; an input named
//! by id that only the remote has is pulled before the stage reads it.

use ragprobe_artifact::{ArtifactError, Fallback, Store};
use std::sync::Mutex;

use crate::{id_of_object_key, Remote, Transfer};

/// A [`Fallback`] over a remote. One fetch at a time: pipeline steps run in
/// parallel, and two pulls of one object must not race on its download.
pub struct ReadThrough {
    remote: Remote,
    transfer: Transfer,
    lock: Mutex<()>,
}

impl ReadThrough {
    /// Read through to `remote`.
    pub fn new(remote: Remote, transfer: Transfer) -> ReadThrough {
        ReadThrough {
            remote,
            transfer,
            lock: Mutex::new(()),
        }
    }

    /// Run `f` on a thread of its own: the remote's runtime cannot block
    /// inside another runtime, and a stage may call from async code.
    fn off_thread<T: Send>(
        &self,
        f: impl FnOnce() -> crate::Result<T> + Send,
    ) -> Result<T, ArtifactError> {
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        std::thread::scope(|s| s.spawn(f).join())
            .map_err(|_| ArtifactError::Other("the read-through thread panicked".into()))?
            .map_err(|e| ArtifactError::Other(e.to_string()))
    }
}

impl Fallback for ReadThrough {
    fn fetch_action(&self, store: &Store, key: &str) -> Result<bool, ArtifactError> {
        let r = &self.remote;
        let record = self.off_thread(|| r.rt.block_on(r.fetch_record(key)))?;
        let Some(record) = record else {
            return Ok(false);
        };
        let outputs: Vec<String> = record.outputs.iter().map(|o| o.id.clone()).collect();
        self.off_thread(|| r.pull(store, &outputs, &self.transfer))?;
        if store.action_record(key).is_none() {
            // A record its outputs do not bear out is not used: the stage
            // runs here instead (and its own record is not pushed over it).
            if let Err(e) = store.put_action_record(&record) {
                tracing::warn!("remote `{}`: {e}; running the step here", r.name());
                return Ok(false);
            }
        }
        tracing::info!("action {} fetched from remote `{}`", &key[..12], r.name());
        Ok(true)
    }

    fn fetch_object(&self, store: &Store, spec: &str) -> Result<Option<String>, ArtifactError> {
        let r = &self.remote;
        let found = self.off_thread(|| {
            r.rt.block_on(async {
                let mut ids: Vec<String> = r
                    .list("objects")
                    .await?
                    .into_iter()
                    .filter_map(|m| id_of_object_key(&m.location))
                    .filter(|id| id.starts_with(spec))
                    .collect();
                ids.sort();
                Ok(ids)
            })
        })?;
        match found.as_slice() {
            [] => Ok(None),
            [id] => {
                self.off_thread(|| r.pull(store, std::slice::from_ref(id), &self.transfer))?;
                tracing::info!("artifact {} fetched from remote `{}`", &id[..12], r.name());
                Ok(Some(id.clone()))
            }
            many => Err(ArtifactError::Ambiguous {
                prefix: spec.to_string(),
                candidates: many.to_vec(),
            }),
        }
    }
}
