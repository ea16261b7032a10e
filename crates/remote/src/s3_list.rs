//! Listing an S3 remote key by key.
//!
//! `object_store` parses a whole `ListObjectsV2` page at once and fails the
//! page, and with it the listing, when one key is not a valid
//! `object_store` path (a `..` or `.` segment, an empty segment): one such
//! key, put there by any other S3 client, would make every pull from the
//! remote fail. This lister sends the same signed `ListObjectsV2` requests
//! (SigV4 through `object_store`'s own [`AwsAuthorizer`], credentials from
//! the same provider) but parses the keys one by one, so an invalid key is
//! skipped with a warning and the rest of the listing stands. Written here
//! rather than taken from a crate: `object_store` keeps its XML types and
//! request builder private, and no other S3 crate shares its credentials.

use object_store::aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey, AwsAuthorizer};
use object_store::client::{HttpRequest, HttpRequestBody};
use object_store::path::Path as Key;
use object_store::ObjectMeta;
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;

/// Lists one S3 bucket under the remote's prefix.
pub(crate) struct S3Lister {
    s3: Arc<AmazonS3>,
    http: reqwest::Client,
    /// `https://s3.<region>.amazonaws.com/<bucket>`, or the endpoint's form.
    bucket_url: String,
    region: String,
    /// The remote's prefix with a trailing `/`, or empty.
    prefix: String,
    sign: bool,
    /// Attempts per page (the remote's retry setting, as `object_store`'s).
    tries: usize,
}

/// What a listing found: the valid keys (relative to the remote's root)
/// and the keys it skipped, each with the reason.
#[derive(Debug, Default)]
pub(crate) struct Listed {
    pub objects: Vec<ObjectMeta>,
    pub skipped: Vec<(String, String)>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ListBucketResult {
    #[serde(default)]
    contents: Vec<Contents>,
    #[serde(default)]
    next_continuation_token: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Contents {
    key: String,
    size: u64,
    last_modified: String,
    #[serde(rename = "ETag", default)]
    e_tag: Option<String>,
}

impl S3Lister {
    /// A lister for `bucket` (the host of the remote's `s3://` URL), with
    /// the settings of `builder` (built into `s3`), keys under `prefix`. `None` for endpoints it cannot form (S3 Express
    /// zonal buckets): those list through `object_store`.
    pub(crate) fn new(
        builder: &AmazonS3Builder,
        bucket: &str,
        s3: Arc<AmazonS3>,
        prefix: &str,
        allow_http: bool,
    ) -> Option<S3Lister> {
        let get = |k: AmazonS3ConfigKey| builder.get_config_value(&k).filter(|v| !v.is_empty());
        let region = get(AmazonS3ConfigKey::Region).unwrap_or_else(|| "us-east-1".into());
        if get(AmazonS3ConfigKey::S3Express).is_some_and(|v| v == "true") {
            return None;
        }
        let virtual_hosted =
            get(AmazonS3ConfigKey::VirtualHostedStyleRequest).is_some_and(|v| v == "true");
        let bucket_url = match (get(AmazonS3ConfigKey::Endpoint), virtual_hosted) {
            (Some(e), true) => e,
            (Some(e), false) => format!("{}/{bucket}", e.trim_end_matches('/')),
            (None, true) => format!("https://{bucket}.s3.{region}.amazonaws.com"),
            (None, false) => format!("https://s3.{region}.amazonaws.com/{bucket}"),
        };
        let sign = get(AmazonS3ConfigKey::SkipSignature).is_none_or(|v| v != "true");
        let http = reqwest::Client::builder()
            .https_only(!allow_http)
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(300))
            .build()
            .ok()?;
        let prefix = prefix.trim_matches('/');
        Some(S3Lister {
            s3,
            http,
            bucket_url,
            region,
            prefix: if prefix.is_empty() {
                String::new()
            } else {
                format!("{prefix}/")
            },
            sign,
            tries: crate::connect::retry_config().max_retries + 1,
        })
    }

    /// Every key under `<remote prefix>/<sub>/`, page by page; an error is
    /// one line (the caller names the remote and key).
    pub(crate) async fn list(&self, sub: &str) -> Result<Listed, String> {
        let mut out = Listed::default();
        let mut token: Option<String> = None;
        let full_prefix = format!("{}{sub}/", self.prefix);
        loop {
            let mut url = url::Url::parse(&self.bucket_url).map_err(|e| e.to_string())?;
            {
                let mut q = url.query_pairs_mut();
                q.append_pair("list-type", "2");
                q.append_pair("prefix", &full_prefix);
                if let Some(t) = &token {
                    q.append_pair("continuation-token", t);
                }
            }
            let page = self.page(&url).await?;
            for c in page.contents {
                let Some(rel) = c.key.strip_prefix(&self.prefix) else {
                    out.skipped
                        .push((c.key, "outside the remote's prefix".into()));
                    continue;
                };
                match Key::parse(rel) {
                    Ok(location) => {
                        let last_modified = chrono::DateTime::parse_from_rfc3339(&c.last_modified)
                            .map_err(|e| {
                                format!("LastModified `{}` of {rel}: {e}", c.last_modified)
                            })?
                            .with_timezone(&chrono::Utc);
                        out.objects.push(ObjectMeta {
                            location,
                            last_modified,
                            size: c.size,
                            e_tag: c.e_tag,
                            version: None,
                        })
                    }
                    Err(e) => out.skipped.push((rel.to_string(), e.to_string())),
                }
            }
            match page.next_continuation_token {
                Some(t) if !t.is_empty() => token = Some(t),
                _ => return Ok(out),
            }
        }
    }

    /// One signed GET of a listing page, retried on a connection error or
    /// a 5xx answer as the remote's other requests are.
    async fn page(&self, url: &url::Url) -> Result<ListBucketResult, String> {
        self.try_page(url)
            .await
            .map_err(|e| crate::error::with_hint(&e, false))
    }

    async fn try_page(&self, url: &url::Url) -> Result<ListBucketResult, String> {
        let mut wait = Duration::from_millis(100);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut req = HttpRequest::new(HttpRequestBody::empty());
            *req.uri_mut() = url.as_str().parse().map_err(|e| format!("{e}"))?;
            if self.sign {
                let cred = self
                    .s3
                    .credentials()
                    .get_credential()
                    .await
                    .map_err(|e| crate::error::one_line(&e))?;
                AwsAuthorizer::new(&cred, "s3", &self.region).authorize(&mut req, None);
            }
            let sent = self
                .http
                .get(url.as_str())
                .headers(req.headers().clone())
                .send()
                .await;
            let retry = match sent {
                Ok(r) if r.status().is_success() => {
                    let text = r.text().await.map_err(|e| e.to_string())?;
                    return quick_xml::de::from_str(&text)
                        .map_err(|e| format!("not a ListObjectsV2 answer: {e}"));
                }
                Ok(r) if r.status().is_server_error() => format!("HTTP {}", r.status()),
                Ok(r) => {
                    let status = r.status();
                    let body = r.text().await.unwrap_or_default();
                    let code = body
                        .split("<Code>")
                        .nth(1)
                        .and_then(|s| s.split("</Code>").next())
                        .unwrap_or("");
                    return Err(format!("listing: HTTP {status} {code}").trim().to_string());
                }
                Err(e) => e.to_string(),
            };
            if attempt >= self.tries {
                return Err(format!("listing: {retry} (after {attempt} tries)"));
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(Duration::from_secs(5));
        }
    }
}
