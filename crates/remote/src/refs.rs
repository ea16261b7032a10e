//! Which action made which object, so a pull finds the records it needs.
//!
//! Each push writes one immutable index, `refs/<sha256>.json`, named by the
//! SHA-256 of its content: `{"made_by": {output id: [action keys]}}` for
//! the records it pushed. A second push of the same closure writes the
//! same name and is skipped. A pull lists `refs/` once and fetches only the
//! indexes it has not seen before (they never change, so they are kept in
//! `<store>/remotes/<url hash>/refs/`).

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as Key;
use ragprobe_artifact::{is_full_id, sha256_hex, ActionRecord, Store};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

use crate::error::{RemoteError, Result};
use crate::Remote;

/// Output id -> keys of the actions that made it.
pub(crate) type MadeBy = HashMap<String, BTreeSet<String>>;

/// The index of `records`: its name (`<sha256>.json`) and body.
pub(crate) fn index_of<'a>(records: impl IntoIterator<Item = &'a ActionRecord>) -> (String, Bytes) {
    let mut made_by: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for r in records {
        for o in &r.outputs {
            made_by.entry(&o.id).or_default().insert(&r.key);
        }
    }
    let body =
        serde_json::to_vec(&serde_json::json!({ "made_by": made_by })).expect("json serialises");
    (format!("{}.json", sha256_hex(&body)), Bytes::from(body))
}

/// Read an index, checking it is the content its name says.
fn parse_index(name: &str, body: &[u8]) -> Result<MadeBy, String> {
    let want = name.strip_suffix(".json").unwrap_or(name);
    let actual = sha256_hex(body);
    if actual != want {
        return Err(format!("its bytes hash to {actual}"));
    }
    let v: serde_json::Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let map = v
        .get("made_by")
        .and_then(|m| m.as_object())
        .ok_or("no `made_by` map")?;
    let mut out = MadeBy::new();
    for (output, keys) in map {
        let keys = keys.as_array().ok_or("a `made_by` entry is not a list")?;
        for k in keys {
            match k.as_str() {
                Some(k) if is_full_id(k) && is_full_id(output) => {
                    out.entry(output.clone()).or_default().insert(k.to_string());
                }
                _ => return Err(format!("entry {output:?} is not an id with action keys")),
            }
        }
    }
    Ok(out)
}

fn is_index_name(name: &str) -> bool {
    name.strip_suffix(".json").is_some_and(is_full_id)
}

impl Remote {
    fn refs_cache(&self, store: &Store) -> PathBuf {
        store
            .root()
            .join("remotes")
            .join(&sha256_hex(self.url.as_bytes())[..16])
            .join("refs")
    }

    /// Write the index of `records` unless the remote has it already.
    pub(crate) async fn put_index<'a>(
        &self,
        records: impl IntoIterator<Item = &'a ActionRecord>,
    ) -> Result<()> {
        let (name, body) = index_of(records);
        let listed: BTreeSet<String> = self
            .list("refs")
            .await?
            .into_iter()
            .filter_map(|m| m.location.filename().map(str::to_string))
            .collect();
        if !listed.contains(&name) {
            self.put_create(&Key::from(format!("refs/{name}")), body)
                .await?;
        }
        Ok(())
    }

    /// Every index in the remote, merged; fetching only the ones this store
    /// has not seen, and keeping those.
    pub(crate) async fn made_by(&self, store: &Store) -> Result<MadeBy> {
        let names: Vec<String> = self
            .list("refs")
            .await?
            .into_iter()
            .filter_map(|m| {
                m.location
                    .filename()
                    .filter(|n| is_index_name(n))
                    .map(str::to_string)
            })
            .collect();
        let cache = self.refs_cache(store);
        let bodies: Vec<(String, Vec<u8>)> = futures::stream::iter(names.into_iter().map(|name| {
            let cache = cache.clone();
            async move {
                let local = cache.join(&name);
                if let Ok(b) = std::fs::read(&local) {
                    if parse_index(&name, &b).is_ok() {
                        return Ok::<_, RemoteError>((name, b));
                    }
                }
                let key = Key::from(format!("refs/{name}"));
                let b = self.read_listed(&key).await?;
                parse_index(&name, &b).map_err(|m| self.corrupt(&key, m))?;
                keep(&cache, &name, &b, store);
                Ok((name, b.to_vec()))
            }
        }))
        .buffer_unordered(8)
        .try_collect()
        .await?;
        let mut out = MadeBy::new();
        for (name, b) in bodies {
            let m = parse_index(&name, &b).expect("checked above");
            for (o, ks) in m {
                out.entry(o).or_default().extend(ks);
            }
        }
        Ok(out)
    }

    /// `refs/` problems for `remote verify`: an index whose bytes are not
    /// its name, or that names an action the remote lacks.
    pub(crate) async fn verify_refs(&self, actions: &BTreeSet<String>) -> Result<Vec<String>> {
        let mut problems = Vec::new();
        for m in self.list("refs").await? {
            let name = m.location.filename().unwrap_or("").to_string();
            if !is_index_name(&name) {
                problems.push(format!("{}: not a lineage index", m.location));
                continue;
            }
            let b = self.read_listed(&m.location).await?;
            match parse_index(&name, &b) {
                Err(e) => problems.push(format!("{}: {e}", m.location)),
                Ok(map) => {
                    let missing: BTreeSet<&String> = map
                        .values()
                        .flatten()
                        .filter(|k| !actions.contains(*k))
                        .collect();
                    for k in missing {
                        problems.push(format!(
                            "{}: names action {k}, which the remote lacks or cannot read",
                            m.location
                        ));
                    }
                }
            }
        }
        Ok(problems)
    }
}

/// Keep a fetched index (best effort: it is only a cache).
fn keep(dir: &std::path::Path, name: &str, body: &[u8], store: &Store) {
    let res = (|| {
        std::fs::create_dir_all(dir)?;
        let tmp = store.tmp_path(".refs");
        std::fs::write(&tmp, body)?;
        std::fs::rename(&tmp, dir.join(name))
    })();
    if let Err(e) = res {
        tracing::debug!("could not keep the lineage index {name}: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ragprobe_artifact::{OutputRef, Recipe};

    #[test]
    fn an_index_is_named_by_its_content_and_checked_on_read() {
        let r = ActionRecord {
            key: "a".repeat(64),
            recipe: Recipe::new("s", 1, serde_json::json!({})),
            outputs: vec![OutputRef {
                kind: "corpus".into(),
                id: "b".repeat(64),
                rows: 1,
            }],
        };
        let (name, body) = index_of([&r]);
        let m = parse_index(&name, &body).unwrap();
        assert!(m[&"b".repeat(64)].contains(&"a".repeat(64)));
        assert_eq!(
            index_of([&r]),
            (name.clone(), body.clone()),
            "same content, same name"
        );
        let mut bad = body.to_vec();
        bad[5] ^= 1;
        assert!(parse_index(&name, &bad).unwrap_err().contains("hash to"));
    }
}
