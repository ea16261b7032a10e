//! The remotes a store knows, kept in the store's `config.json`.
//!
//! Only where a remote is and how to reach it is stored (URL, endpoint,
//! region); credentials never are: they come from the environment or the
//! usual profile files each time (see [`crate::connect`]).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::RemoteError;

/// How to reach one remote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteConfig {
    /// Where the remote is: `s3://bucket/prefix`, `gs://…`, `az://…`,
    /// `https://…` (HTTP/WebDAV), `file:///dir` or a plain directory path.
    pub url: String,
    /// An S3-compatible endpoint (MinIO, R2, Ceph, a local server), when not AWS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The S3 region, when neither the environment nor the profile gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Send unsigned requests (a public bucket; pull only).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub anonymous: bool,
}

/// The store's configuration file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreConfig {
    /// The remote `push` and `pull` use when none is named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_remote: Option<String>,
    /// Remotes by name.
    #[serde(default)]
    pub remotes: BTreeMap<String, RemoteConfig>,
}

/// The configuration file of the store at `root`.
pub fn config_path(root: &Path) -> PathBuf {
    root.join("config.json")
}

impl StoreConfig {
    /// Read the store's configuration (empty when there is no file yet).
    pub fn load(root: &Path) -> Result<StoreConfig, RemoteError> {
        let path = config_path(root);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(StoreConfig::default()),
            Err(e) => {
                return Err(RemoteError::Config {
                    path,
                    message: e.to_string(),
                })
            }
        };
        serde_json::from_str(&text).map_err(|e| RemoteError::Config {
            path,
            message: e.to_string(),
        })
    }

    /// Write it back atomically (temp file, fsync, rename).
    pub fn save(&self, root: &Path) -> Result<(), RemoteError> {
        let path = config_path(root);
        let tmp = root.join(format!(".config.json.{}.tmp", std::process::id()));
        let text = serde_json::to_string_pretty(self).expect("config serialises") + "\n";
        let res = (|| {
            use std::io::Write;
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)
        })();
        res.map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            RemoteError::Config {
                path,
                message: e.to_string(),
            }
        })
    }

    /// Add remote `name` (the first one added becomes the default).
    pub fn add(&mut self, name: &str, remote: RemoteConfig) -> Result<(), RemoteError> {
        check_name(name)?;
        check_url(&remote.url)?;
        if self.remotes.contains_key(name) {
            return Err(RemoteError::Usage(format!(
                "remote `{name}` exists already (`ragprobe remote rm {name}` first)"
            )));
        }
        self.remotes.insert(name.to_string(), remote);
        if self.default_remote.is_none() {
            self.default_remote = Some(name.to_string());
        }
        Ok(())
    }

    /// Remove remote `name`.
    pub fn remove(&mut self, name: &str) -> Result<(), RemoteError> {
        if self.remotes.remove(name).is_none() {
            return Err(self.unknown(name));
        }
        if self.default_remote.as_deref() == Some(name) {
            self.default_remote = self.remotes.keys().next().cloned();
        }
        Ok(())
    }

    /// Make `name` the default remote.
    pub fn set_default(&mut self, name: &str) -> Result<(), RemoteError> {
        if !self.remotes.contains_key(name) {
            return Err(self.unknown(name));
        }
        self.default_remote = Some(name.to_string());
        Ok(())
    }

    /// The remote named `name`, or the default one.
    pub fn get(&self, name: Option<&str>) -> Result<(String, RemoteConfig), RemoteError> {
        let name = match name.or(self.default_remote.as_deref()) {
            Some(n) => n,
            None => {
                return Err(RemoteError::Usage(
                    "no remote configured: add one with `ragprobe remote add NAME URL`".into(),
                ))
            }
        };
        match self.remotes.get(name) {
            Some(r) => Ok((name.to_string(), r.clone())),
            None => Err(self.unknown(name)),
        }
    }

    fn unknown(&self, name: &str) -> RemoteError {
        let known: Vec<&str> = self.remotes.keys().map(String::as_str).collect();
        RemoteError::Usage(format!(
            "no remote named `{name}` (configured: {})",
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        ))
    }
}

/// Remote names are short words: they appear in messages and commands.
fn check_name(name: &str) -> Result<(), RemoteError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
    if ok {
        Ok(())
    } else {
        Err(RemoteError::Usage(format!(
            "remote name {name:?}: use letters, digits, `-`, `_` or `.`"
        )))
    }
}

/// A URL is stored in the config, so it must not carry a secret; and it
/// must be one this build opens.
fn check_url(url: &str) -> Result<(), RemoteError> {
    crate::connect::check_url(url).map_err(RemoteError::Usage)?;
    if let Ok(u) = url::Url::parse(url) {
        if !u.username().is_empty() || u.password().is_some() {
            return Err(RemoteError::Usage(
                "the remote URL holds credentials; they are never stored: give the URL without them and set them in the environment".into(),
            ));
        }
        if u.query().is_some() {
            return Err(RemoteError::Usage(
                "the remote URL has a query string (a signed URL?); give the plain location".into(),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(url: &str) -> RemoteConfig {
        RemoteConfig {
            url: url.into(),
            endpoint: None,
            region: None,
            anonymous: false,
        }
    }

    #[test]
    fn the_first_remote_is_the_default_and_removal_moves_it() {
        let d = tempfile::tempdir().unwrap();
        let mut c = StoreConfig::load(d.path()).unwrap();
        c.add("team", r("s3://lab/ragprobe")).unwrap();
        c.add("backup", r("file:///tmp/x")).unwrap();
        c.save(d.path()).unwrap();
        let mut c = StoreConfig::load(d.path()).unwrap();
        assert_eq!(c.get(None).unwrap().0, "team");
        assert!(c.add("team", r("s3://other")).is_err());
        c.remove("team").unwrap();
        assert_eq!(c.get(None).unwrap().0, "backup");
        let e = c.get(Some("nope")).unwrap_err().to_string();
        assert!(e.contains("`nope`") && e.contains("backup"), "{e}");
    }

    #[test]
    fn credentials_in_a_url_are_refused() {
        let mut c = StoreConfig::default();
        let e = c
            .add("x", r("https://user:secret@dav.example.org/r"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("never stored") && !e.contains("secret@"), "{e}");
        assert!(c.add("bad name", r("s3://b")).is_err());
        let e = c.add("x", r("ftp://host/x")).unwrap_err().to_string();
        assert!(e.contains("unsupported scheme `ftp://`"), "{e}");
    }
}
