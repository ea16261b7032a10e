//! Request journals travel with `--with-journals`: a teammate who adds a
//! model or a prompt does not repeat the calls already made.
//!
//! A journal is append-only JSON Lines, one finished request per line
//! (`requests/<backend>-<hash>.jsonl`). Journals merge as sets of lines:
//! the remote copy is the remote's lines followed by ours that it lacks,
//! written with a compare-and-swap so two pushers never drop each other's
//! lines; a pull appends the remote's lines the local copy lacks.

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as Key;
use object_store::PutMode;
use ragprobe_artifact::Store;
use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{RemoteError, Result};
use crate::Remote;

/// How often a journal push retries after losing a compare-and-swap race.
const CAS_TRIES: usize = 20;

fn journal_dir(store: &Store) -> PathBuf {
    store.root().join("requests")
}

/// A journal file name as the models crate writes them; anything else in a
/// remote (`../x`, hidden files) is ignored.
fn valid_name(name: &str) -> bool {
    name.ends_with(".jsonl")
        && !name.starts_with('.')
        && name.len() <= 128
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
}

/// The complete lines of a journal that are JSON objects with a request id
/// (a torn or damaged line never travels).
fn entries(text: &[u8]) -> Vec<&[u8]> {
    text.split(|&b| b == b'\n')
        .filter(|l| {
            serde_json::from_slice::<serde_json::Value>(l)
                .ok()
                .is_some_and(|v| v.get("request_id").is_some_and(|r| r.is_string()))
        })
        .collect()
}

/// The entries of `extra` that `base` lacks, each once, in `extra`'s order.
fn missing<'a>(base: &[u8], extra: &'a [u8]) -> Vec<&'a [u8]> {
    let mut have: HashSet<&[u8]> = entries(base).into_iter().collect();
    let mut out = Vec::new();
    for l in entries(extra) {
        if have.insert(l) {
            out.push(l);
        }
    }
    out
}

fn lines(out: &mut Vec<u8>, ls: &[&[u8]]) {
    for l in ls {
        out.extend_from_slice(l);
        out.push(b'\n');
    }
}

/// `base`'s entries, then `extra`'s that `base` lacks; and how many were added.
fn merged(base: &[u8], extra: &[u8]) -> (Vec<u8>, usize) {
    let add = missing(base, extra);
    let mut out: Vec<u8> = Vec::with_capacity(base.len() + extra.len());
    lines(&mut out, &entries(base));
    lines(&mut out, &add);
    (out, add.len())
}

fn local_journals(store: &Store) -> Result<Vec<(String, PathBuf)>> {
    let dir = journal_dir(store);
    let rd = match std::fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(RemoteError::Io { path: dir, error }),
    };
    let mut out = Vec::new();
    for e in rd {
        let e = e.map_err(|error| RemoteError::Io {
            path: dir.clone(),
            error,
        })?;
        let name = e.file_name().to_string_lossy().into_owned();
        if valid_name(&name) {
            out.push((name, e.path()));
        }
    }
    out.sort();
    Ok(out)
}

impl Remote {
    /// Merge every local journal into the remote's copy. Returns the lines added.
    pub(crate) async fn push_journals(&self, store: &Store) -> Result<usize> {
        let journals = local_journals(store)?;
        let added = futures::stream::iter(journals.iter().map(|(name, path)| async move {
            let local = std::fs::read(path).map_err(|error| RemoteError::Io {
                path: path.clone(),
                error,
            })?;
            self.merge_up(&Key::from(format!("journals/{name}")), &local)
                .await
        }))
        .buffer_unordered(4)
        .try_collect::<Vec<usize>>()
        .await?;
        Ok(added.into_iter().sum())
    }

    async fn merge_up(&self, key: &Key, local: &[u8]) -> Result<usize> {
        for _ in 0..CAS_TRIES {
            let (remote, version) = match self.read(key).await? {
                Some((b, v)) => (b, Some(v)),
                None => (Bytes::new(), None),
            };
            let (body, added) = merged(&remote, local);
            if added == 0 {
                return Ok(0);
            }
            let mode = match version {
                None => PutMode::Create,
                Some(v) if self.has_conditional_update() => PutMode::Update(v),
                Some(_) => PutMode::Overwrite,
            };
            match self.store.put_opts(key, body.into(), mode.into()).await {
                Ok(_) => return Ok(added),
                Err(
                    object_store::Error::AlreadyExists { .. }
                    | object_store::Error::Precondition { .. },
                ) => continue,
                Err(e) => return Err(self.request_error(key, &e)),
            }
        }
        Err(RemoteError::Request {
            remote: self.name.clone(),
            url: self.url.clone(),
            key: key.to_string(),
            message: format!("still changing after {CAS_TRIES} merges; try again"),
        })
    }

    /// Append the remote journals' lines the local ones lack. Returns the lines added.
    pub(crate) async fn pull_journals(&self, store: &Store) -> Result<usize> {
        let listed = self.list("journals").await?;
        let dir = journal_dir(store);
        let mut total = 0;
        for m in listed {
            let Some(name) = m.location.filename().filter(|n| valid_name(n)) else {
                continue;
            };
            let bytes = self.read_listed(&m.location).await?;
            total += append_missing(&dir.join(name), &bytes)?;
        }
        Ok(total)
    }
}

/// Append to the journal at `path` the entries of `remote` it lacks, as
/// complete lines in one write (the journal's own append discipline, so a
/// generation running meanwhile loses nothing).
fn append_missing(path: &Path, remote: &[u8]) -> Result<usize> {
    let io = |error| RemoteError::Io {
        path: path.to_path_buf(),
        error,
    };
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(io)?;
    }
    let local = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(io(e)),
    };
    let add = missing(&local, remote);
    if add.is_empty() {
        return Ok(0);
    }
    let mut tail = Vec::new();
    if !local.is_empty() && !local.ends_with(b"\n") {
        tail.push(b'\n');
    }
    lines(&mut tail, &add);
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(io)?;
    f.write_all(&tail).map_err(io)?;
    f.sync_all().map_err(io)?;
    Ok(add.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_keeps_order_adds_only_missing_lines_and_drops_damaged_ones() {
        let a = b"{\"request_id\":\"1\"}\n{\"request_id\":\"2\"}\n";
        let b = b"{\"request_id\":\"2\"}\n{\"request_id\":\"3\"}\nnot json\n{\"request_id\":\"3\"}\n{\"request_id\":\"4\"";
        let (m, added) = merged(a, b);
        assert_eq!(added, 1);
        assert_eq!(
            m,
            b"{\"request_id\":\"1\"}\n{\"request_id\":\"2\"}\n{\"request_id\":\"3\"}\n"
        );
        assert_eq!(merged(&m, a).1, 0);
    }

    #[test]
    fn pulling_appends_to_a_journal_with_a_torn_tail_on_a_fresh_line() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("requests").join("x.jsonl");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "{\"request_id\":\"1\"}\n{\"requ").unwrap();
        let n = append_missing(&p, b"{\"request_id\":\"1\"}\n{\"request_id\":\"2\"}\n").unwrap();
        assert_eq!(n, 1);
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "{\"request_id\":\"1\"}\n{\"requ\n{\"request_id\":\"2\"}\n"
        );
        assert!(valid_name("openai-0123456789abcdef.jsonl"));
        assert!(!valid_name("../x.jsonl") && !valid_name(".hidden.jsonl"));
    }
}
