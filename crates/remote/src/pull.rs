//! `artifacts pull`: artifacts and their whole lineage from a remote.

use futures::{StreamExt, TryStreamExt};
use indicatif::ProgressBar;
use object_store::{GetOptions, GetRange};
use ragprobe_artifact::{check_record, is_full_id, ActionRecord, ArtifactError, Store};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{Read, Write};

use crate::error::{RemoteError, Result};
use crate::{action_key, bytes_bar, id_of_object_key, object_key, Remote, Transfer};

/// What a pull did.
#[derive(Debug, Clone, Default)]
pub struct PullReport {
    /// The artifacts asked for, as full ids.
    pub roots: Vec<String>,
    /// Objects in the lineage closure.
    pub objects: usize,
    /// Objects downloaded now.
    pub fetched: usize,
    /// Bytes downloaded now.
    pub bytes_fetched: u64,
    /// Objects the local store had already.
    pub present: usize,
    /// Action records stored now.
    pub actions: usize,
    /// Action records the local store had already, identical.
    pub actions_present: usize,
    /// Records the local store holds in a different version, kept: one line each.
    pub conflicts: Vec<String>,
    /// Journal lines added to the local journals.
    pub journal_lines: usize,
}

/// One object's place in the closure walk.
struct Visited {
    inputs: Vec<String>,
    made_by: Vec<String>,
    fetched: Option<u64>,
}

impl Remote {
    /// Full ids for what a user typed: full ids, or unique prefixes (4+ hex
    /// digits) of ids the remote or the local store holds.
    async fn resolve(
        &self,
        store: &Store,
        specs: &[String],
        listed: &HashMap<String, u64>,
    ) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for spec in specs {
            let s = spec.to_ascii_lowercase();
            if is_full_id(&s) {
                out.push(s);
                continue;
            }
            if s.len() < 4 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(RemoteError::Usage(format!(
                    "`{spec}` is not an artifact id (give a full id or a unique prefix of 4+ hex digits)"
                )));
            }
            let mut m: Vec<String> = listed
                .keys()
                .filter(|id| id.starts_with(&s))
                .cloned()
                .collect();
            m.extend(store.ids()?.into_iter().filter(|id| id.starts_with(&s)));
            m.sort();
            m.dedup();
            match m.len() {
                1 => out.push(m.remove(0)),
                0 => {
                    return Err(RemoteError::Usage(format!(
                        "remote `{}`: no artifact matches `{spec}`",
                        self.name
                    )))
                }
                n => {
                    return Err(RemoteError::Usage(format!(
                        "`{spec}` is ambiguous: it matches {n} artifacts ({}, ...)",
                        m[0]
                    )))
                }
            }
        }
        Ok(out)
    }

    /// Pull `specs` and their lineage: every input, the action records that
    /// made them and those records' outputs, so the pipeline that made them
    /// is fully cached here. Objects already in the store are not fetched;
    /// a download cut short resumes from its last byte.
    pub fn pull(&self, store: &Store, specs: &[String], t: &Transfer) -> Result<PullReport> {
        self.rt.block_on(self.pull_async(store, specs, t))
    }

    async fn pull_async(
        &self,
        store: &Store,
        specs: &[String],
        t: &Transfer,
    ) -> Result<PullReport> {
        let listed: HashMap<String, u64> = self
            .list("objects")
            .await?
            .into_iter()
            .filter_map(|m| id_of_object_key(&m.location).map(|id| (id, m.size)))
            .collect();
        let mut roots = self.resolve(store, specs, &listed).await?;
        roots.sort();
        roots.dedup();
        let mut report = PullReport {
            roots: roots.clone(),
            ..Default::default()
        };
        let made_by = self.made_by(store).await?;
        let bar = bytes_bar(0, t.progress, "pull");
        let mut seen: HashSet<String> = roots.iter().cloned().collect();
        let mut keys_seen: HashSet<String> = HashSet::new();
        let mut records: BTreeMap<String, ActionRecord> = BTreeMap::new();
        let mut frontier = roots.clone();
        // Breadth first: one round per lineage level, each round in parallel.
        while !frontier.is_empty() {
            let visited: Vec<Visited> = futures::stream::iter(
                frontier
                    .iter()
                    .map(|id| self.visit(store, id, &listed, &made_by, &bar)),
            )
            .buffer_unordered(t.jobs.max(1))
            .try_collect()
            .await?;
            let mut next = Vec::new();
            let mut new_keys = Vec::new();
            for v in visited {
                report.objects += 1;
                match v.fetched {
                    Some(b) => {
                        report.fetched += 1;
                        report.bytes_fetched += b;
                    }
                    None => report.present += 1,
                }
                next.extend(v.inputs.into_iter().filter(|i| seen.insert(i.clone())));
                new_keys.extend(
                    v.made_by
                        .into_iter()
                        .filter(|k| keys_seen.insert(k.clone())),
                );
            }
            let got: Vec<Option<ActionRecord>> =
                futures::stream::iter(new_keys.iter().map(|k| self.fetch_record(k)))
                    .buffer_unordered(t.jobs.max(1))
                    .try_collect()
                    .await?;
            for (k, r) in new_keys.iter().zip(&got) {
                if r.is_none() {
                    tracing::warn!("remote `{}`: action {k} is missing (a lineage index names it); that step will run again here", self.name);
                }
            }
            for r in got.into_iter().flatten() {
                next.extend(
                    r.outputs
                        .iter()
                        .map(|o| o.id.clone())
                        .filter(|i| seen.insert(i.clone())),
                );
                records.insert(r.key.clone(), r);
            }
            frontier = next;
        }
        bar.finish_and_clear();
        // Every record is held against its outputs' own manifests before any
        // is adopted: a forged record (its key and recipe kept, another
        // step's outputs named) fails the whole pull, naming the record.
        for r in records.values() {
            store
                .check_record_outputs(r)
                .map_err(|e| self.corrupt(&action_key(&r.key), e.to_string()))?;
        }
        for r in records.values() {
            match store.action_record(&r.key) {
                Some(mine) if &mine == r => report.actions_present += 1,
                Some(_) => report.conflicts.push(format!(
                    "{}: the local store has a different record for this step; kept the local one",
                    r.key
                )),
                None => {
                    store.put_action_record(r)?;
                    report.actions += 1;
                }
            }
        }
        for id in &roots {
            store.pin(id)?;
        }
        if t.with_journals {
            report.journal_lines = self.pull_journals(store).await?;
        }
        Ok(report)
    }

    /// Make sure `id` is in the store (downloading it when not), then read
    /// its inputs and the actions that made it.
    async fn visit(
        &self,
        store: &Store,
        id: &str,
        listed: &HashMap<String, u64>,
        made_by: &crate::refs::MadeBy,
        bar: &ProgressBar,
    ) -> Result<Visited> {
        let key = object_key(id);
        let (fetched, manifest) = if store.contains(id) {
            (None, store.manifest(id)?)
        } else {
            let Some(&size) = listed.get(id) else {
                return Err(RemoteError::Request {
                    remote: self.name.clone(),
                    url: self.url.clone(),
                    key: key.to_string(),
                    message: "not in the remote (push it from the machine that made it)".into(),
                });
            };
            bar.inc_length(size);
            (Some(size), self.download(store, id, size, bar).await?)
        };
        let inputs = manifest.recipe.inputs;
        let made_by = made_by
            .get(id)
            .map(|ks| ks.iter().cloned().collect())
            .unwrap_or_default();
        Ok(Visited {
            inputs,
            made_by,
            fetched,
        })
    }

    /// Bytes `have..size` of object `key`, appended to `file` and hashed.
    /// False when the server sends more than `size` bytes (the caller
    /// refuses the object); a failed request is an error, and the part
    /// file stays for the next run to continue.
    #[allow(clippy::too_many_arguments)]
    async fn fetch_rest(
        &self,
        key: &object_store::path::Path,
        have: u64,
        size: u64,
        file: &mut std::fs::File,
        hasher: &mut Sha256,
        bar: &ProgressBar,
        io: &dyn Fn(std::io::Error) -> RemoteError,
    ) -> Result<bool> {
        let opts = GetOptions {
            range: (have > 0).then_some(GetRange::Offset(have)),
            ..Default::default()
        };
        let got = self
            .store
            .get_opts(key, opts)
            .await
            .map_err(|e| self.request_error(key, &e))?;
        let mut stream = got.into_stream();
        let mut written = have;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| self.request_error(key, &e))?;
            // Never more than the listing said: a server that streams on
            // (a body declared as 1 TB) fills no disk.
            written += chunk.len() as u64;
            if written > size {
                return Ok(false);
            }
            hasher.update(&chunk);
            tokio::task::block_in_place(|| file.write_all(&chunk)).map_err(io)?;
            bar.inc(chunk.len() as u64);
        }
        Ok(true)
    }

    /// Download object `id` into the store: to `tmp/pull-<id>.part` (kept
    /// across interruptions and continued with a range request), then
    /// checked and renamed into place by [`Store::adopt`].
    async fn download(
        &self,
        store: &Store,
        id: &str,
        size: u64,
        bar: &ProgressBar,
    ) -> Result<ragprobe_artifact::Manifest> {
        let key = object_key(id);
        let part = store.root().join("tmp").join(format!("pull-{id}.part"));
        let io = |error| RemoteError::Io {
            path: part.clone(),
            error,
        };
        let mut have = std::fs::metadata(&part).map(|m| m.len()).unwrap_or(0);
        if have > size {
            have = 0;
        }
        let mut retried = false;
        loop {
            // The bytes are hashed as they are written (a resumed download
            // hashes what the last run wrote first).
            let mut hasher = Sha256::new();
            if have > 0 {
                hash_prefix(&part, have, &mut hasher).map_err(io)?;
                bar.inc(have);
            }
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(have > 0)
                .write(true)
                .truncate(have == 0)
                .open(&part)
                .map_err(io)?;
            if have < size {
                let fetched = self
                    .fetch_rest(&key, have, size, &mut file, &mut hasher, bar, &io)
                    .await?;
                if !fetched {
                    drop(file);
                    let _ = std::fs::remove_file(&part);
                    return Err(self.corrupt(
                        &key,
                        format!(
                            "the server sent more than the {size} bytes its listing gives; refused"
                        ),
                    ));
                }
            }
            // (Store::adopt_hashed syncs it before the rename.)
            drop(file);
            let actual = hex::encode(hasher.finalize());
            match store.adopt_hashed(&part, id, &actual) {
                Ok(manifest) => return Ok(manifest),
                // A resumed download whose first part was bad: once more from zero.
                Err(ArtifactError::HashMismatch { .. }) if have > 0 && !retried => {
                    retried = true;
                    tracing::warn!("{key}: the resumed download does not check out; fetching it again from the start");
                    bar.set_position(bar.position().saturating_sub(size));
                    have = 0;
                }
                Err(e) => {
                    let _ = std::fs::remove_file(&part);
                    return Err(self.corrupt(&key, e.to_string()));
                }
            }
        }
    }

    /// One action record, checked: it parses, it is stored under its own
    /// key, and that key is its recipe's key. `None` when a marker led to a
    /// record that is not there (`remote verify` reports those).
    pub(crate) async fn fetch_record(&self, key: &str) -> Result<Option<ActionRecord>> {
        let k = action_key(key);
        let Some((bytes, _)) = self.read(&k).await? else {
            return Ok(None);
        };
        let r: ActionRecord = serde_json::from_slice(&bytes)
            .map_err(|e| self.corrupt(&k, format!("not an action record: {e}")))?;
        if r.key != key {
            return Err(self.corrupt(&k, format!("the record inside is for action {}", r.key)));
        }
        check_record(&r).map_err(|e| self.corrupt(&k, e.to_string()))?;
        Ok(Some(r))
    }
}

/// Hashes the first `have` bytes of the part file `part` (what an earlier,
/// interrupted run wrote), 1 MiB at a time.
fn hash_prefix(part: &std::path::Path, have: u64, hasher: &mut Sha256) -> std::io::Result<()> {
    let mut f = std::fs::File::open(part)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut left = have;
    while left > 0 {
        let n = tokio::task::block_in_place(|| f.read(&mut buf))?;
        if n == 0 {
            break;
        }
        let n = n.min(left as usize);
        hasher.update(&buf[..n]);
        left -= n as u64;
    }
    Ok(())
}
