//! Opening a remote: the `object_store` for its URL, with credentials from
//! the environment or the usual profile files (never from the config).

use object_store::aws::{AmazonS3Builder, Checksum};
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::http::HttpBuilder;
use object_store::local::LocalFileSystem;
use object_store::prefix::PrefixStore;
use object_store::{BackoffConfig, ClientOptions, ObjectStore, RetryConfig};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::config::RemoteConfig;
use crate::error::{RemoteError, Result};
use crate::s3_list::S3Lister;

/// What kind of store a remote is; local directories and HTTP servers lack
/// conditional updates, so the few mutable objects fall back to plain puts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// S3 or an S3-compatible server.
    S3,
    /// Google Cloud Storage.
    Gcs,
    /// Azure Blob Storage.
    Azure,
    /// An HTTP/WebDAV server.
    Http,
    /// A local (or mounted) directory.
    Local,
    /// `object_store`'s in-memory store (tests).
    Memory,
}

/// How long a failing request is retried before the error is reported.
/// `RAGPROBE_REMOTE_RETRY_SECS` overrides the default of 30 s.
pub(crate) fn retry_config() -> RetryConfig {
    let secs = std::env::var("RAGPROBE_REMOTE_RETRY_SECS")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .unwrap_or(30.0);
    RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            base: 2.0,
        },
        max_retries: if secs == 0.0 { 0 } else { 6 },
        retry_timeout: Duration::from_secs_f64(secs),
    }
}

fn client_options(allow_http: bool) -> ClientOptions {
    ClientOptions::new()
        .with_allow_http(allow_http)
        .with_connect_timeout(Duration::from_secs(10))
        .with_timeout(Duration::from_secs(300))
        .with_pool_idle_timeout(Duration::from_secs(60))
}

/// The URL schemes a remote may use.
pub const SCHEMES: &[&str] = &[
    "s3", "s3a", "gs", "az", "adl", "azure", "abfs", "abfss", "http", "https", "file",
];

/// Check that `url` names a remote this build can open (no request made,
/// no credentials needed: a remote can be added before they are set).
pub fn check_url(url: &str) -> Result<(), String> {
    match url::Url::parse(url.trim()).ok().filter(|u| u.scheme().len() > 1) {
        None => Ok(()),
        Some(u) if SCHEMES.contains(&u.scheme()) => {
            if matches!(u.scheme(), "s3" | "s3a" | "gs" | "az" | "azure") && u.host_str().is_none() {
                return Err(format!("{url}: no bucket or container named"));
            }
            Ok(())
        }
        Some(u) => Err(format!(
            "unsupported scheme `{}://` (s3://, gs://, az://, https://, file:// or a directory path)",
            u.scheme()
        )),
    }
}

/// The object store `config` names, rooted at its prefix, with the
/// key-by-key lister of an S3 remote.
pub(crate) fn open(
    name: &str,
    config: &RemoteConfig,
) -> Result<(Arc<dyn ObjectStore>, Backend, Option<S3Lister>)> {
    let fail = |message: String| RemoteError::Connect {
        remote: name.to_string(),
        url: config.url.clone(),
        message,
    };
    let url = config.url.trim();
    let parsed = url::Url::parse(url).ok().filter(|u| u.scheme().len() > 1);
    let Some(parsed) = parsed else {
        // A plain directory path.
        return open_local(Path::new(url))
            .map_err(fail)
            .map(|(s, b)| (s, b, None));
    };
    let prefix = parsed.path().trim_matches('/').to_string();
    let with_prefix = |s: Arc<dyn ObjectStore>| -> Arc<dyn ObjectStore> {
        if prefix.is_empty() {
            s
        } else {
            Arc::new(PrefixStore::new(s, prefix.as_str()))
        }
    };
    match parsed.scheme() {
        "file" => {
            let path = parsed
                .to_file_path()
                .map_err(|_| fail("not a local path".into()))?;
            open_local(&path).map_err(fail).map(|(s, b)| (s, b, None))
        }
        "s3" | "s3a" => {
            let (b, allow_http) = s3_builder(url, config).map_err(fail)?;
            let s = Arc::new(
                b.clone()
                    .build()
                    .map_err(|e| fail(crate::error::one_line(&e)))?,
            );
            let lister = parsed
                .host_str()
                .and_then(|bucket| S3Lister::new(&b, bucket, s.clone(), &prefix, allow_http));
            Ok((with_prefix(s), Backend::S3, lister))
        }
        "gs" => {
            let s = GoogleCloudStorageBuilder::from_env()
                .with_url(url)
                .with_retry(retry_config())
                .with_client_options(client_options(false))
                .build()
                .map_err(|e| fail(crate::error::one_line(&e)))?;
            Ok((with_prefix(Arc::new(s)), Backend::Gcs, None))
        }
        "az" | "adl" | "azure" | "abfs" | "abfss" => {
            let s = MicrosoftAzureBuilder::from_env()
                .with_url(url)
                .with_retry(retry_config())
                .with_client_options(client_options(false))
                .build()
                .map_err(|e| fail(crate::error::one_line(&e)))?;
            Ok((with_prefix(Arc::new(s)), Backend::Azure, None))
        }
        "http" | "https" => {
            let s = HttpBuilder::new()
                .with_url(url)
                .with_retry(retry_config())
                .with_client_options(client_options(parsed.scheme() == "http"))
                .build()
                .map_err(|e| fail(crate::error::one_line(&e)))?;
            Ok((Arc::new(s), Backend::Http, None))
        }
        _ => Err(fail(check_url(url).err().unwrap_or_default())),
    }
}

fn open_local(dir: &Path) -> Result<(Arc<dyn ObjectStore>, Backend), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create the directory: {e}"))?;
    let s = LocalFileSystem::new_with_prefix(dir).map_err(|e| crate::error::one_line(&e))?;
    Ok((Arc::new(s), Backend::Local))
}

/// An S3 client: settings from `AWS_*` variables, then the profile files
/// (`AWS_PROFILE`, default `default`, in `~/.aws/credentials` and
/// `~/.aws/config`), then the remote's endpoint and region. Without any
/// credentials it fails at once (unless the remote is anonymous, or
/// `RAGPROBE_AWS_IMDS=1` allows the instance metadata service) rather than
/// waiting on a metadata service that is not there.
/// Also says whether the endpoint is plain HTTP.
fn s3_builder(url: &str, config: &RemoteConfig) -> Result<(AmazonS3Builder, bool), String> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let mut b = AmazonS3Builder::from_env()
        .with_url(url)
        .with_retry(retry_config());
    // The server checks a SHA-256 of every request body, unless
    // `RAGPROBE_S3_CHECKSUM=none` (servers that predate S3's checksums).
    if env("RAGPROBE_S3_CHECKSUM").as_deref() != Some("none") {
        b = b.with_checksum_algorithm(Checksum::SHA256);
    }
    let profile = aws_profile();
    let endpoint = env("AWS_ENDPOINT_URL_S3")
        .or_else(|| env("AWS_ENDPOINT_URL"))
        .or_else(|| env("AWS_ENDPOINT"))
        .or_else(|| config.endpoint.clone())
        .or_else(|| profile.get("endpoint_url").cloned());
    if let Some(e) = &endpoint {
        b = b.with_endpoint(e);
    }
    let allow_http = endpoint
        .as_deref()
        .is_some_and(|e| e.starts_with("http://"));
    b = b.with_client_options(client_options(allow_http));
    if env("AWS_REGION").is_none() && env("AWS_DEFAULT_REGION").is_none() {
        let region = config
            .region
            .clone()
            .or_else(|| profile.get("region").cloned())
            .unwrap_or_else(|| "us-east-1".to_string());
        b = b.with_region(region);
    }
    if config.anonymous {
        return Ok((b.with_skip_signature(true), allow_http));
    }
    let from_env = env("AWS_ACCESS_KEY_ID").is_some() && env("AWS_SECRET_ACCESS_KEY").is_some();
    let provider = env("AWS_WEB_IDENTITY_TOKEN_FILE").is_some()
        || env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").is_some()
        || env("AWS_CONTAINER_CREDENTIALS_FULL_URI").is_some()
        || env("RAGPROBE_AWS_IMDS").as_deref() == Some("1");
    if from_env || provider {
        return Ok((b, allow_http));
    }
    match (
        profile.get("aws_access_key_id"),
        profile.get("aws_secret_access_key"),
    ) {
        (Some(id), Some(secret)) => {
            b = b.with_access_key_id(id).with_secret_access_key(secret);
            if let Some(t) = profile.get("aws_session_token") {
                b = b.with_token(t);
            }
            Ok((b, allow_http))
        }
        _ => Err("no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE with keys in ~/.aws/credentials (on EC2 set RAGPROBE_AWS_IMDS=1; for a public bucket add the remote with --anonymous)".into()),
    }
}

/// The settings of the selected AWS profile: credentials file first, then
/// config file (`[profile NAME]`, or `[default]`).
fn aws_profile() -> BTreeMap<String, String> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let file = |var: &str, rel: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(rel)))
    };
    let name = std::env::var("AWS_PROFILE")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "default".to_string());
    let mut out = BTreeMap::new();
    if let Some(p) = file("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials") {
        ini_section(&p, &name, &mut out);
    }
    if let Some(p) = file("AWS_CONFIG_FILE", ".aws/config") {
        let section = if name == "default" {
            name.clone()
        } else {
            format!("profile {name}")
        };
        ini_section(&p, &section, &mut out);
    }
    out
}

/// Add `key = value` lines of `[section]` in an INI file to `out` (keys
/// already there win).
fn ini_section(path: &Path, section: &str, out: &mut BTreeMap<String, String>) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    let mut inside = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.starts_with(';') || line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = name.trim() == section;
            continue;
        }
        if inside {
            if let Some((k, v)) = line.split_once('=') {
                out.entry(k.trim().to_ascii_lowercase())
                    .or_insert_with(|| v.trim().to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_section_is_read_and_the_credentials_file_wins() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("credentials");
        std::fs::write(&p, "[other]\naws_access_key_id = NO\n\n[lab]\n# comment\naws_access_key_id = AKIA1\naws_secret_access_key=s3cr3t\n").unwrap();
        let c = d.path().join("config");
        std::fs::write(
            &c,
            "[profile lab]\nregion = eu-west-1\naws_access_key_id = LATER\n",
        )
        .unwrap();
        let mut out = BTreeMap::new();
        ini_section(&p, "lab", &mut out);
        ini_section(&c, "profile lab", &mut out);
        assert_eq!(out["aws_access_key_id"], "AKIA1");
        assert_eq!(out["aws_secret_access_key"], "s3cr3t");
        assert_eq!(out["region"], "eu-west-1");
    }

    #[test]
    fn an_unknown_scheme_names_the_remote() {
        let c = RemoteConfig {
            url: "ftp://host/x".into(),
            endpoint: None,
            region: None,
            anonymous: false,
        };
        let e = open("team", &c).err().unwrap().to_string();
        assert!(e.starts_with("remote `team` (ftp://host/x)"), "{e}");
        assert!(e.contains("unsupported scheme"), "{e}");
    }
}
