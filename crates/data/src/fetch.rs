//! Downloads: hub files through `hf-hub` (its cache, its resumable
//! `.sync.part` files), plain HTTPS through `reqwest` with range requests
//! to resume; bounded retries with backoff; every file written to a
//! `.part` beside its final name and renamed into place when whole.

use futures::StreamExt;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::registry::Source;
use crate::{DataError, DataOptions};

/// `url` with its scheme and host replaced by `mirror`'s (its path kept).
pub fn mirrored(url: &str, mirror: Option<&str>) -> String {
    let Some(m) = mirror else {
        return url.to_string();
    };
    let path = url
        .split_once("://")
        .map(|(_, rest)| rest.find('/').map_or("", |i| &rest[i..]))
        .unwrap_or(url);
    format!("{}{path}", m.trim_end_matches('/'))
}

/// The URL of `source` (after the mirror or `HF_ENDPOINT`).
pub fn url_of(source: &Source, opts: &DataOptions) -> String {
    match source {
        Source::Url(u) => mirrored(u, opts.mirror.as_deref()),
        Source::Hub {
            repo,
            revision,
            path,
        } => format!(
            "{}/datasets/{repo}/resolve/{revision}/{path}",
            opts.hub_endpoint.trim_end_matches('/')
        ),
    }
}

/// SHA-256 of a file.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let f = std::fs::File::open(path)?;
    ragprobe_artifact::sha256_reader(std::io::BufReader::with_capacity(1 << 20, f))
}

/// Fetches `source` to `dest` (a final path: nothing is there until the
/// file is whole). `what` names the dataset and file in errors.
pub async fn fetch(
    source: &Source,
    dest: &Path,
    opts: &DataOptions,
    what: &str,
) -> Result<(), DataError> {
    match source {
        Source::Url(_) => fetch_url(&url_of(source, opts), dest, opts, what).await,
        Source::Hub {
            repo,
            revision,
            path,
        } => fetch_hub(repo, revision, path, dest, opts, what).await,
    }
}

fn io(what: &str, path: &Path, e: impl std::fmt::Display) -> DataError {
    DataError::Fetch(format!("{what}: {}: {e}", path.display()))
}

/// One line for an HTTP failure, with the cause a user can act on.
fn status_error(what: &str, url: &str, status: reqwest::StatusCode) -> DataError {
    let hint = match status.as_u16() {
        401 | 403 => ": the repository is gated or private: set HF_TOKEN to a token whose account accepted its terms",
        404 => ": not found at the pinned revision",
        _ => "",
    };
    let message = format!("{what}: {url}: HTTP {status}{hint}");
    if status == reqwest::StatusCode::NOT_FOUND {
        DataError::NotFound(message)
    } else {
        DataError::Fetch(message)
    }
}

async fn fetch_url(
    url: &str,
    dest: &Path,
    opts: &DataOptions,
    what: &str,
) -> Result<(), DataError> {
    if opts.offline {
        return Err(DataError::Offline(format!(
            "{what}: offline (HF_HUB_OFFLINE) and not downloaded yet: {url}"
        )));
    }
    let part = part_path(dest);
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(20))
        .build()
        .map_err(|e| DataError::Fetch(format!("{what}: {e}")))?;
    let mut attempt = 0u32;
    loop {
        match fetch_url_once(&client, url, &part, opts, what).await {
            Ok(()) => break,
            // A status the server gave is final; a transport failure is retried.
            Err(Attempt::Final(e)) => return Err(e),
            Err(Attempt::Retry(e)) if attempt + 1 >= opts.retries.max(1) => return Err(e),
            Err(Attempt::Retry(e)) => {
                attempt += 1;
                let wait = Duration::from_millis(200 * 2u64.pow(attempt.min(6)));
                tracing::warn!(
                    "{e}; retrying in {wait:?} (attempt {} of {})",
                    attempt + 1,
                    opts.retries
                );
                tokio::time::sleep(wait).await;
            }
        }
    }
    std::fs::rename(&part, dest).map_err(|e| io(what, dest, e))
}

enum Attempt {
    Final(DataError),
    Retry(DataError),
}

/// One try: continues `part` from its length with a range request.
async fn fetch_url_once(
    client: &reqwest::Client,
    url: &str,
    part: &Path,
    opts: &DataOptions,
    what: &str,
) -> Result<(), Attempt> {
    let have = std::fs::metadata(part).map(|m| m.len()).unwrap_or(0);
    let mut req = client.get(url);
    if have > 0 {
        req = req.header(reqwest::header::RANGE, format!("bytes={have}-"));
    }
    let resp = req.send().await.map_err(|e| {
        Attempt::Retry(DataError::Fetch(format!("{what}: {url}: {}", one_line(&e))))
    })?;
    let status = resp.status();
    if status == reqwest::StatusCode::RANGE_NOT_SATISFIABLE && have > 0 {
        // Already whole (the last try ended after its final byte).
        return Ok(());
    }
    if !status.is_success() {
        let e = status_error(what, url, status);
        return Err(if status.is_server_error() {
            Attempt::Retry(e)
        } else {
            Attempt::Final(e)
        });
    }
    let resumed = status == reqwest::StatusCode::PARTIAL_CONTENT;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(resumed)
        .write(true)
        .truncate(!resumed)
        .open(part)
        .map_err(|e| Attempt::Final(io(what, part, e)))?;
    let total = resp
        .content_length()
        .map(|n| n + if resumed { have } else { 0 });
    let bar = crate::bar(opts.progress, total, what);
    bar.set_position(if resumed { have } else { 0 });
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            Attempt::Retry(DataError::Fetch(format!(
                "{what}: {url}: cut off: {}",
                one_line(&e)
            )))
        })?;
        file.write_all(&chunk)
            .map_err(|e| Attempt::Final(io(what, part, e)))?;
        bar.inc(chunk.len() as u64);
    }
    file.sync_all()
        .map_err(|e| Attempt::Final(io(what, part, e)))?;
    bar.finish_and_clear();
    if let Some(t) = total {
        let got = std::fs::metadata(part).map(|m| m.len()).unwrap_or(0);
        if got != t {
            return Err(Attempt::Retry(DataError::Fetch(format!(
                "{what}: {url}: cut off at {got} of {t} bytes"
            ))));
        }
    }
    Ok(())
}

/// `dest` with `.part` appended: where a download grows.
fn part_path(dest: &Path) -> PathBuf {
    let mut s = dest.as_os_str().to_owned();
    s.push(".part");
    PathBuf::from(s)
}

async fn fetch_hub(
    repo: &str,
    revision: &str,
    path: &str,
    dest: &Path,
    opts: &DataOptions,
    what: &str,
) -> Result<(), DataError> {
    let got = hub_file(hf_hub::RepoType::Dataset, repo, revision, path, opts, what).await?;
    // Into the dataset's directory under its pipeline name: a hard link to
    // the hub cache's blob where possible, else a copy; renamed into place.
    let part = part_path(dest);
    let _ = std::fs::remove_file(&part);
    let real = std::fs::canonicalize(&got).map_err(|e| io(what, &got, e))?;
    if std::fs::hard_link(&real, &part).is_err() {
        std::fs::copy(&real, &part).map_err(|e| io(what, &part, e))?;
    }
    std::fs::rename(&part, dest).map_err(|e| io(what, dest, e))
}

/// A file of a hub repository, in the hub cache (fetched unless cached).
pub(crate) async fn hub_file(
    kind: hf_hub::RepoType,
    repo: &str,
    revision: &str,
    path: &str,
    opts: &DataOptions,
    what: &str,
) -> Result<PathBuf, DataError> {
    use hf_hub::Repo;
    let r = Repo::with_revision(repo.to_string(), kind, revision.to_string());
    let prefix = if matches!(kind, hf_hub::RepoType::Dataset) {
        "datasets/"
    } else {
        ""
    };
    let cached = hf_hub::Cache::new(opts.hub_cache.clone())
        .repo(r.clone())
        .get(path);
    let got = match cached {
        Some(p) => p,
        None if opts.offline => {
            return Err(DataError::Offline(format!(
                "{what}: offline (HF_HUB_OFFLINE) and not in the hub cache {}: {repo}@{revision}/{path}",
                opts.hub_cache.display()
            )))
        }
        None => {
            let api = hf_hub::api::tokio::ApiBuilder::new()
                .with_endpoint(opts.hub_endpoint.clone())
                .with_cache_dir(opts.hub_cache.clone())
                .with_token(opts.hub_token.clone())
                .with_progress(opts.progress)
                .build()
                .map_err(|e| DataError::Fetch(format!("{what}: {e}")))?;
            let mut attempt = 0u32;
            loop {
                match api.repo(r.clone()).get(path).await {
                    Ok(p) => break p,
                    Err(e) => {
                        let url = format!(
                            "{}/{prefix}{repo}/resolve/{revision}/{path}",
                            opts.hub_endpoint.trim_end_matches('/')
                        );
                        let final_status = match &e {
                            hf_hub::api::tokio::ApiError::RequestError(re) => re
                                .status()
                                .filter(|s| s.is_client_error())
                                .map(|s| status_error(what, &url, s)),
                            _ => None,
                        };
                        if let Some(err) = final_status {
                            return Err(err);
                        }
                        attempt += 1;
                        if attempt >= opts.retries.max(1) {
                            return Err(DataError::Fetch(format!("{what}: {url}: {}", one_line(&e))));
                        }
                        let wait = Duration::from_millis(200 * 2u64.pow(attempt.min(6)));
                        tracing::warn!("{what}: {}; retrying in {wait:?}", one_line(&e));
                        tokio::time::sleep(wait).await;
                    }
                }
            }
        }
    };
    Ok(got)
}

/// An error and its causes on one line.
fn one_line(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cause = c.source();
    }
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Hashes `bytes` (tests).
pub fn sha256_bytes(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mirror_replaces_scheme_and_host_and_keeps_the_path() {
        assert_eq!(
            mirrored(
                "https://raw.githubusercontent.com/o/r/abc/data/en.json",
                Some("http://127.0.0.1:9/m/")
            ),
            "http://127.0.0.1:9/m/o/r/abc/data/en.json"
        );
        assert_eq!(mirrored("https://x.org/a", None), "https://x.org/a");
    }
}
