//! `remote ls` and `remote verify`: what a remote holds, and whether every
//! object is what its key says.

use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as Key;
use object_store::ObjectStoreExt;
use ragprobe_artifact::{check_record, check_record_against, ActionRecord, Manifest};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

use crate::error::Result;
use crate::{bytes_bar, id_of_object_key, Remote, Transfer};

/// What a remote holds (from listings only).
#[derive(Debug, Clone, Default)]
pub struct RemoteListing {
    /// Artifact ids and sizes, sorted by id.
    pub objects: Vec<(String, u64)>,
    /// Action records.
    pub actions: usize,
    /// Request journals.
    pub journals: usize,
}

/// What `remote verify` found.
#[derive(Debug, Clone, Default)]
pub struct VerifyReport {
    /// Objects checked.
    pub objects: usize,
    /// Bytes read.
    pub bytes: u64,
    /// Action records checked.
    pub actions: usize,
    /// `key: problem` lines, sorted (empty = healthy).
    pub problems: Vec<String>,
}

impl Remote {
    /// The remote's artifacts, records and journals (three listings).
    pub fn listing(&self) -> Result<RemoteListing> {
        self.rt.block_on(async {
            let mut objects: Vec<(String, u64)> = self
                .list("objects")
                .await?
                .into_iter()
                .filter_map(|m| id_of_object_key(&m.location).map(|id| (id, m.size)))
                .collect();
            objects.sort();
            Ok(RemoteListing {
                objects,
                actions: self.list("actions").await?.len(),
                journals: self.list("journals").await?.len(),
            })
        })
    }

    /// Read every object and hash it; check every action record (well
    /// formed, stored under its recipe's key, its outputs present) and
    /// every marker (its record present).
    pub fn verify(&self, t: &Transfer) -> Result<VerifyReport> {
        self.rt.block_on(async {
            let mut report = VerifyReport::default();
            let mut problems = Vec::new();
            let (to_hash, damaged) = self.hash_objects(t, &mut problems).await?;
            report.objects = to_hash.len();
            report.bytes = to_hash.iter().map(|o| o.2).sum();

            let sizes: BTreeMap<String, u64> = to_hash
                .iter()
                .map(|(id, _, size)| (id.clone(), *size))
                .collect();
            let mut keys: BTreeMap<String, ()> = BTreeMap::new();
            for (loc, r) in self.read_actions(t).await? {
                report.actions += 1;
                if let Some(name) = self
                    .check_action(&loc, r, &sizes, &damaged, &mut problems)
                    .await
                {
                    keys.insert(name, ());
                }
            }
            let known: BTreeSet<String> = keys.into_keys().collect();
            problems.extend(self.verify_refs(&known).await?);
            problems.sort();
            report.problems = problems;
            Ok(report)
        })
    }

    /// Every action record of the remote, read `t.jobs` at a time: where
    /// it is, and the record or why it is not one.
    async fn read_actions(&self, t: &Transfer) -> Result<Vec<(Key, Result<ActionRecord, String>)>> {
        let actions = self.list("actions").await?;
        futures::stream::iter(actions.iter().map(|m| async move {
            let b = self.read_listed(&m.location).await?;
            Ok::<_, crate::RemoteError>((
                m.location.clone(),
                serde_json::from_slice::<ActionRecord>(&b).map_err(|e| e.to_string()),
            ))
        }))
        .buffer_unordered(t.jobs.max(1))
        .try_collect()
        .await
    }

    /// The problems of the action record at `loc` (objects: the remote's,
    /// with their sizes; `damaged`: those whose bytes do not hash to their
    /// id): not a record, stored under another key, malformed, naming an
    /// output the remote lacks, or contradicted by its outputs' own
    /// manifests. Returns its action key when it is a well-formed record
    /// stored under it.
    async fn check_action(
        &self,
        loc: &Key,
        r: Result<ActionRecord, String>,
        objects: &BTreeMap<String, u64>,
        damaged: &BTreeSet<String>,
        problems: &mut Vec<String>,
    ) -> Option<String> {
        let name = loc
            .filename()
            .and_then(|n| n.strip_suffix(".json"))
            .unwrap_or("")
            .to_string();
        let r = match r {
            Ok(r) => r,
            Err(e) => {
                problems.push(format!("{loc}: not an action record: {e}"));
                return None;
            }
        };
        if r.key != name {
            problems.push(format!("{loc}: the record inside is for action {}", r.key));
            return None;
        }
        if let Err(e) = check_record(&r) {
            problems.push(format!("{loc}: {e}"));
            return None;
        }
        let missing: Vec<String> = r
            .outputs
            .iter()
            .filter(|o| !objects.contains_key(&o.id))
            .map(|o| {
                format!(
                    "{loc}: names output {} {}, which the remote lacks",
                    o.kind, o.id
                )
            })
            .collect();
        if missing.is_empty() && !r.outputs.iter().any(|o| damaged.contains(&o.id)) {
            // Every output is there: hold the record against what the
            // outputs' own manifests say (a forged record keeps its key
            // and recipe and names another step's outputs).
            let mut manifests = BTreeMap::new();
            for o in &r.outputs {
                let size = objects.get(&o.id).copied().unwrap_or(0);
                match self.manifest_of(&o.id, size).await {
                    Ok(m) => {
                        manifests.insert(o.id.clone(), m);
                    }
                    Err(e) => problems.push(format!("{loc}: output {}: {e}", o.id)),
                }
            }
            if manifests.len() == r.outputs.len() {
                if let Err(e) = check_record_against(&r, |o| Ok(manifests[&o.id].clone())) {
                    problems.push(format!("{loc}: {e}"));
                }
            }
        }
        problems.extend(missing);
        Some(name)
    }

    /// Lists and hashes every object (`t.jobs` at a time, with a progress
    /// bar): (id, key, size) of each object named for an id, and the ids
    /// whose bytes hash to something else; each such problem, and each key
    /// not named for an id, goes to `problems` once.
    async fn hash_objects(
        &self,
        t: &Transfer,
        problems: &mut Vec<String>,
    ) -> Result<(Vec<(String, Key, u64)>, BTreeSet<String>)> {
        let objects = self.list("objects").await?;
        let mut to_hash = Vec::new();
        for m in objects {
            match id_of_object_key(&m.location) {
                Some(id) => {
                    to_hash.push((id, m.location, m.size));
                }
                None => problems.push(format!("{}: not named for an artifact id", m.location)),
            }
        }
        let bar = bytes_bar(to_hash.iter().map(|o| o.2).sum(), t.progress, "verify");
        let hashed: Vec<(String, Option<String>)> =
            futures::stream::iter(to_hash.iter().map(|(id, key, _)| {
                let bar = &bar;
                async move {
                    let got = self
                        .store
                        .get(key)
                        .await
                        .map_err(|e| self.request_error(key, &e))?;
                    let mut s = got.into_stream();
                    let mut h = Sha256::new();
                    while let Some(c) = s.next().await {
                        let c = c.map_err(|e| self.request_error(key, &e))?;
                        h.update(&c);
                        bar.inc(c.len() as u64);
                    }
                    let actual = hex::encode(h.finalize());
                    Ok::<_, crate::RemoteError>((
                        id.clone(),
                        (actual != *id).then(|| format!("{key}: its bytes hash to {actual}")),
                    ))
                }
            }))
            .buffer_unordered(t.jobs.max(1))
            .try_collect()
            .await?;
        bar.finish_and_clear();
        // Objects whose bytes are not their id: reported once, here, and
        // not read again for the records that name them.
        let mut damaged = BTreeSet::new();
        for (id, problem) in hashed {
            if let Some(p) = problem {
                damaged.insert(id);
                problems.push(p);
            }
        }
        Ok((to_hash, damaged))
    }

    /// The manifest of remote object `id` (`size` bytes), read from its
    /// footer with two range requests (the tail, then the metadata).
    pub(crate) async fn manifest_of(&self, id: &str, size: u64) -> Result<Manifest> {
        let key = crate::object_key(id);
        let corrupt = |m: String| self.corrupt(&key, m);
        if size < 12 {
            return Err(corrupt("too short for a Parquet file".into()));
        }
        let tail = self
            .store
            .get_range(&key, size - 8..size)
            .await
            .map_err(|e| self.request_error(&key, &e))?;
        let last8: [u8; 8] = tail
            .as_ref()
            .try_into()
            .map_err(|_| corrupt("short read of the footer".into()))?;
        let len = ragprobe_artifact::footer_metadata_len(&last8)
            .filter(|l| *l + 12 <= size)
            .ok_or_else(|| corrupt("no Parquet footer".into()))?;
        let meta = self
            .store
            .get_range(&key, size - 8 - len..size - 8)
            .await
            .map_err(|e| self.request_error(&key, &e))?;
        ragprobe_artifact::manifest_from_footer(key.as_ref(), &meta)
            .map_err(|e| corrupt(e.to_string()))
    }
}
