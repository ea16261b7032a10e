//! `artifacts push`: a lineage closure up to a remote.

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use indicatif::ProgressBar;
use object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload, WriteMultipart};
use ragprobe_artifact::{ActionRecord, ArtifactError, Store};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::Read;
use std::sync::Mutex;

use crate::closure::{local_closure, Closure};
use crate::error::{RemoteError, Result};
use crate::{
    action_key, bytes_bar, id_of_object_key, object_key, Remote, Transfer, PARTS_IN_FLIGHT,
    PART_BYTES,
};

/// What a push did.
#[derive(Debug, Clone, Default)]
pub struct PushReport {
    /// Objects in the lineage closure.
    pub objects: usize,
    /// Objects uploaded now.
    pub sent: usize,
    /// Bytes uploaded now.
    pub bytes_sent: u64,
    /// Objects the remote already had (skipped).
    pub present: usize,
    /// Action records written now.
    pub actions_sent: usize,
    /// Action records the remote already had, identical.
    pub actions_present: usize,
    /// Records the remote holds in a different version, kept as they are
    /// (`--force` replaces them): one line each.
    pub conflicts: Vec<String>,
    /// Journal lines added to the remote's journals.
    pub journal_lines: usize,
}

/// How a remote action record compares with ours.
enum Compared {
    Same,
    Replaced,
    Conflict(String),
}

impl Remote {
    /// Push `roots` and everything they were made from, with the action
    /// records that made them (and the request journals, when asked).
    ///
    /// Order matters for readers racing the push: objects first, then the
    /// records that name them, then the `refs/` index that leads a pull to
    /// those records; so whatever a reader finds is complete. Objects the
    /// remote lists already (same size) are skipped, which is also how an
    /// interrupted push resumes. Every byte sent is hashed on the way and
    /// the upload is abandoned when it does not hash to its id.
    pub fn push(&self, store: &Store, roots: &[String], t: &Transfer) -> Result<PushReport> {
        let closure = local_closure(store, roots)?;
        self.rt.block_on(self.push_closure(store, &closure, t))
    }

    async fn push_closure(&self, store: &Store, c: &Closure, t: &Transfer) -> Result<PushReport> {
        let mut report = PushReport {
            objects: c.objects.len(),
            ..Default::default()
        };
        let present: HashMap<String, u64> = self
            .list("objects")
            .await?
            .into_iter()
            .filter_map(|m| id_of_object_key(&m.location).map(|id| (id, m.size)))
            .collect();
        let mut to_send = Vec::new();
        for id in &c.objects {
            let path = store.object_path(id);
            let size = std::fs::metadata(&path)
                .map_err(|error| RemoteError::Io { path, error })?
                .len();
            if present.get(id) == Some(&size) {
                report.present += 1;
            } else {
                to_send.push((id.as_str(), size));
            }
        }
        let total: u64 = to_send.iter().map(|(_, s)| s).sum();
        let bar = bytes_bar(total, t.progress, "push");
        futures::stream::iter(
            to_send
                .iter()
                .map(|(id, size)| self.upload(store, id, *size, &bar)),
        )
        .buffer_unordered(t.jobs.max(1))
        .try_collect::<Vec<()>>()
        .await?;
        bar.finish_and_clear();
        report.sent = to_send.len();
        report.bytes_sent = total;

        let remote_actions: HashMap<String, Option<String>> = self
            .list("actions")
            .await?
            .into_iter()
            .filter_map(|m| {
                let key = m.location.filename()?.strip_suffix(".json")?.to_string();
                Some((key, m.e_tag))
            })
            .collect();
        let outcomes = Mutex::new(Vec::new());
        futures::stream::iter(c.actions.values().map(|r| {
            let listed = remote_actions.get(&r.key);
            let outcomes = &outcomes;
            async move {
                let o = self.push_action(r, listed, t.force).await?;
                outcomes
                    .lock()
                    .expect("not poisoned")
                    .push((r.key.clone(), o));
                Ok::<(), RemoteError>(())
            }
        }))
        .buffer_unordered(t.jobs.max(1))
        .try_collect::<Vec<()>>()
        .await?;
        for (key, o) in outcomes.into_inner().expect("not poisoned") {
            match o {
                Some(Compared::Same) => report.actions_present += 1,
                None | Some(Compared::Replaced) => report.actions_sent += 1,
                Some(Compared::Conflict(why)) => report.conflicts.push(format!("{key}: {why}")),
            }
        }
        report.conflicts.sort();

        self.put_index(c.actions.values()).await?;

        if t.with_journals {
            report.journal_lines = self.push_journals(store).await?;
        }
        Ok(report)
    }

    /// Upload one object, hashing it on the way; small files in one put,
    /// large ones in parts.
    async fn upload(&self, store: &Store, id: &str, size: u64, bar: &ProgressBar) -> Result<()> {
        let path = store.object_path(id);
        let key = object_key(id);
        let io = |error| RemoteError::Io {
            path: path.clone(),
            error,
        };
        let mut file = std::fs::File::open(&path).map_err(io)?;
        let mut hasher = Sha256::new();
        let mismatch = |hasher: Sha256| {
            let actual = hex::encode(hasher.finalize());
            (actual != id).then(|| {
                RemoteError::Artifact(ArtifactError::HashMismatch {
                    id: id.to_string(),
                    actual,
                })
            })
        };
        if size < PART_BYTES as u64 {
            let mut buf = Vec::with_capacity(size as usize);
            tokio::task::block_in_place(|| file.read_to_end(&mut buf)).map_err(io)?;
            hasher.update(&buf);
            if let Some(e) = mismatch(hasher) {
                return Err(e);
            }
            let n = buf.len() as u64;
            self.store
                .put_opts(&key, PutPayload::from(buf), PutOptions::default())
                .await
                .map_err(|e| self.request_error(&key, &e))?;
            bar.inc(n);
            return Ok(());
        }
        let upload = self
            .store
            .put_multipart(&key)
            .await
            .map_err(|e| self.request_error(&key, &e))?;
        let mut w = WriteMultipart::new_with_chunk_size(upload, PART_BYTES);
        loop {
            let mut chunk = Vec::with_capacity(PART_BYTES);
            let n = tokio::task::block_in_place(|| {
                (&mut file).take(PART_BYTES as u64).read_to_end(&mut chunk)
            });
            let n = match n {
                Ok(n) => n,
                Err(e) => {
                    let _ = w.abort().await;
                    return Err(io(e));
                }
            };
            if n == 0 {
                break;
            }
            hasher.update(&chunk);
            if let Err(e) = w.wait_for_capacity(PARTS_IN_FLIGHT).await {
                let _ = w.abort().await;
                return Err(self.request_error(&key, &e));
            }
            w.put(Bytes::from(chunk));
            bar.inc(n as u64);
        }
        if let Some(e) = mismatch(hasher) {
            let _ = w.abort().await;
            return Err(e);
        }
        w.finish().await.map_err(|e| self.request_error(&key, &e))?;
        Ok(())
    }

    /// Create `key` unless it exists. True when this call created it.
    /// Stores without conditional puts get a plain put.
    pub(crate) async fn put_create(
        &self,
        key: &object_store::path::Path,
        body: Bytes,
    ) -> Result<bool> {
        let opts = PutOptions::from(PutMode::Create);
        match self.store.put_opts(key, body.clone().into(), opts).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
            Err(object_store::Error::NotImplemented { .. }) => {
                self.store
                    .put_opts(key, body.into(), PutOptions::default())
                    .await
                    .map_err(|e| self.request_error(key, &e))?;
                Ok(true)
            }
            Err(e) => Err(self.request_error(key, &e)),
        }
    }

    /// Write one record with a conditional put: created when absent;
    /// compared when present; replaced only with `force`, and then only if
    /// nobody changed it since we read it.
    ///
    /// `listed` is the remote's entry for the record from the listing (its
    /// ETag). On S3 a single-part object's ETag is the MD5 of its bytes, so
    /// an identical record is recognised without reading it back.
    async fn push_action(
        &self,
        r: &ActionRecord,
        listed: Option<&Option<String>>,
        force: bool,
    ) -> Result<Option<Compared>> {
        let key = action_key(&r.key);
        let body = Bytes::from(serde_json::to_vec_pretty(r).expect("record serialises"));
        match listed {
            None => {
                if self.put_create(&key, body.clone()).await? {
                    return Ok(None);
                }
            }
            Some(Some(etag)) if self.backend == crate::Backend::S3 => {
                use md5::Digest;
                let md5 = hex::encode(md5::Md5::digest(&body));
                if etag.trim_matches('"') == md5 {
                    return Ok(Some(Compared::Same));
                }
            }
            Some(_) => {}
        }
        let (bytes, version) = match self.read(&key).await? {
            Some(got) => got,
            // Deleted since the listing: write it again.
            None if self.put_create(&key, body.clone()).await? => return Ok(None),
            None => {
                return Ok(Some(Compared::Conflict(
                    "changed while pushing; push again".into(),
                )))
            }
        };
        let theirs = serde_json::from_slice::<ActionRecord>(&bytes).ok();
        if theirs.as_ref() == Some(r) {
            return Ok(Some(Compared::Same));
        }
        let why = match &theirs {
            Some(t) => format!(
                "the remote's record names other outputs ({}); kept the remote's (--force replaces it)",
                t.outputs
                    .iter()
                    .map(|o| format!("{} {}", o.kind, &o.id[..12.min(o.id.len())]))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => "the remote's record is unreadable; kept it (--force replaces it)".into(),
        };
        if !force {
            return Ok(Some(Compared::Conflict(why)));
        }
        let mode = if self.has_conditional_update() {
            PutMode::Update(version)
        } else {
            PutMode::Overwrite
        };
        match self.store.put_opts(&key, body.into(), mode.into()).await {
            Ok(_) => Ok(Some(Compared::Replaced)),
            Err(object_store::Error::Precondition { .. }) => Ok(Some(Compared::Conflict(
                "another push changed the record meanwhile; kept theirs".into(),
            ))),
            Err(e) => Err(self.request_error(&key, &e)),
        }
    }
}
