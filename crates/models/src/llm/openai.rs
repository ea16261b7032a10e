//! Client for OpenAI-compatible servers (`/v1/chat/completions`,
//! `/v1/completions`, `/v1/embeddings`): vLLM, llama.cpp server, Ollama, TGI, OpenAI.
//!
//! * Bounded concurrency (a semaphore of `concurrency` permits) shared by
//!   every replica; each request goes to the base URL with the fewest
//!   requests in flight, which is how a run scales out over a fleet.
//! * Retries with exponential backoff and full jitter on 429, 408, 5xx,
//!   timeouts, connection errors and unparseable responses; a `Retry-After`
//!   header (in seconds) is honoured. Other 4xx fail at once.
//! * Optional requests-per-minute pacing.
//! * The API key is read from an environment variable whose name is
//!   configurable; it is sent as a bearer token and never printed: not in
//!   `Debug`, logs, errors or artifacts.

use rand::Rng;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{Mutex, Semaphore};

use super::{apply_stop, ChatMessage, GenSettings, Generation};

/// Which endpoint to call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Endpoint {
    /// `/v1/chat/completions` with the rendered messages.
    Chat,
    /// Plain completions: the messages' contents joined by blank lines form the prompt.
    Completions,
}

/// Settings of an [`OpenAiClient`]: replicas, model, endpoint, concurrency, retries and pacing.
#[derive(Clone)]
pub struct OpenAiConfig {
    /// Base URLs of the replicas (`http://host:8000` or `http://host:8000/v1`).
    pub base_urls: Vec<String>,
    /// The served model's name, sent with every request; required.
    pub model: String,
    /// Name of the environment variable holding the API key (optional).
    pub api_key_env: Option<String>,
    /// Which endpoint to call: chat or plain completions.
    pub endpoint: Endpoint,
    /// Most requests in flight at once, over all replicas together.
    pub concurrency: usize,
    /// Per-request HTTP timeout.
    pub timeout: Duration,
    /// Attempts per request, the first included, before giving up.
    pub max_attempts: u32,
    /// Backoff cap after the first failed attempt (the wait is random below it); doubles per retry.
    pub retry_base: Duration,
    /// Upper bound on the backoff cap, however many retries.
    pub retry_max: Duration,
    /// Pace requests to at most this many a minute; None = no pacing.
    pub requests_per_minute: Option<u32>,
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        OpenAiConfig {
            base_urls: vec!["http://127.0.0.1:8000/v1".into()],
            model: String::new(),
            api_key_env: None,
            endpoint: Endpoint::Chat,
            concurrency: 16,
            timeout: Duration::from_secs(120),
            max_attempts: 6,
            retry_base: Duration::from_millis(500),
            retry_max: Duration::from_secs(30),
            requests_per_minute: None,
        }
    }
}

impl std::fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_urls", &self.base_urls)
            .field("model", &self.model)
            .field("api_key_env", &self.api_key_env)
            .field("endpoint", &self.endpoint)
            .field("concurrency", &self.concurrency)
            .finish_non_exhaustive()
    }
}

/// The result of one request after retries.
#[derive(Debug, Clone)]
pub struct CallOutcome {
    /// The generation, or the final error message.
    pub result: Result<Generation, String>,
    /// Attempts made, retries included.
    pub attempts: u32,
    /// Wall time of the request, over all attempts.
    pub latency: Duration,
}

/// An OpenAI-compatible client over one or more replicas.
pub struct OpenAiClient {
    http: reqwest::Client,
    cfg: OpenAiConfig,
    bases: Vec<String>,
    key: Option<String>,
    inflight: Vec<AtomicUsize>,
    permits: Arc<Semaphore>,
    pacer: Mutex<Instant>,
}

impl std::fmt::Debug for OpenAiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiClient")
            .field("cfg", &self.cfg)
            .field("api_key", &self.key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

fn normalise_base(url: &str) -> String {
    let u = url.trim_end_matches('/');
    if u.ends_with("/v1") {
        u.to_string()
    } else {
        format!("{u}/v1")
    }
}

enum Attempt<T> {
    Done(T),
    Retry {
        error: String,
        after: Option<Duration>,
    },
    Fatal(String),
}

impl OpenAiClient {
    /// A client for `cfg`; fails without a base URL or model, or when the API key variable is unset.
    pub fn new(cfg: OpenAiConfig) -> Result<OpenAiClient, String> {
        if cfg.base_urls.is_empty() {
            return Err("no --base-url given".into());
        }
        if cfg.model.is_empty() {
            return Err("no --model given for the openai backend".into());
        }
        let key = match &cfg.api_key_env {
            Some(var) => match std::env::var(var) {
                Ok(k) if !k.is_empty() => Some(k),
                _ => {
                    return Err(format!(
                        "environment variable {var} (named by --api-key-env) is not set"
                    ))
                }
            },
            None => None,
        };
        let http = reqwest::Client::builder()
            .timeout(cfg.timeout)
            .pool_max_idle_per_host(cfg.concurrency.max(1))
            .build()
            .map_err(|e| format!("HTTP client: {e}"))?;
        let bases: Vec<String> = cfg.base_urls.iter().map(|u| normalise_base(u)).collect();
        let inflight = bases.iter().map(|_| AtomicUsize::new(0)).collect();
        let permits = Arc::new(Semaphore::new(cfg.concurrency.max(1)));
        Ok(OpenAiClient {
            http,
            bases,
            key,
            inflight,
            permits,
            pacer: Mutex::new(Instant::now()),
            cfg,
        })
    }

    /// The configuration the client was built with.
    pub fn config(&self) -> &OpenAiConfig {
        &self.cfg
    }

    fn request(&self, method: reqwest::Method, url: String) -> reqwest::RequestBuilder {
        let r = self.http.request(method, url);
        match &self.key {
            Some(k) => r.bearer_auth(k),
            None => r,
        }
    }

    /// The served model's id as the first replica reports it
    /// (`GET /v1/models`): the configured name if listed, else the first id.
    pub async fn served_model(&self) -> Result<String, String> {
        let url = format!("{}/models", self.bases[0]);
        let resp = self
            .request(reqwest::Method::GET, url.clone())
            .send()
            .await
            .map_err(|e| self.redact(format!("GET {url}: {}", short(&e))))?;
        let status = resp.status();
        let body: Value = resp
            .json()
            .await
            .map_err(|e| format!("GET {url}: {status}: {}", short(&e)))?;
        let ids: Vec<String> = body["data"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|m| m["id"].as_str().map(|x| self.redact(x.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        if ids.contains(&self.cfg.model) {
            Ok(self.cfg.model.clone())
        } else if let Some(first) = ids.first() {
            tracing::warn!(
                "server lists no model `{}`; it serves {}",
                self.cfg.model,
                ids.join(", ")
            );
            Ok(first.clone())
        } else {
            Err(format!("GET {url}: no models listed"))
        }
    }

    async fn pace(&self) {
        if let Some(rpm) = self.cfg.requests_per_minute.filter(|r| *r > 0) {
            let interval = Duration::from_secs_f64(60.0 / rpm as f64);
            let wait_until = {
                let mut next = self.pacer.lock().await;
                let now = Instant::now();
                let at = (*next).max(now);
                *next = at + interval;
                at
            };
            tokio::time::sleep_until(wait_until.into()).await;
        }
    }

    fn pick_replica(&self) -> usize {
        (0..self.bases.len())
            .min_by_key(|&i| (self.inflight[i].load(Ordering::Relaxed), i))
            .unwrap_or(0)
    }

    fn body(&self, messages: &[ChatMessage], s: &GenSettings) -> Value {
        let mut b = match self.cfg.endpoint {
            Endpoint::Chat => json!({"model": self.cfg.model, "messages": messages}),
            Endpoint::Completions => {
                json!({"model": self.cfg.model, "prompt": messages.iter().map(|m| m.content.as_str()).collect::<Vec<_>>().join("\n\n")})
            }
        };
        b["max_tokens"] = json!(s.max_tokens);
        b["temperature"] = json!(s.temperature);
        if let Some(p) = s.top_p {
            b["top_p"] = json!(p);
        }
        if !s.stop.is_empty() {
            b["stop"] = json!(s.stop);
        }
        if let Some(seed) = s.seed {
            b["seed"] = json!(seed);
        }
        b
    }

    /// One POST of `body` to `path` on `replica`: the HTTP status sorted
    /// into done / retry / fatal, the 200 body parsed as JSON and handed to
    /// `parse` (whose `Err` is retried: a server may answer garbage once).
    async fn attempt<T>(
        &self,
        replica: usize,
        path: &str,
        body: &Value,
        parse: &(dyn Fn(&Value) -> Result<T, String> + Sync),
    ) -> Attempt<T> {
        let url = format!("{}/{path}", self.bases[replica]);
        let resp = match self
            .request(reqwest::Method::POST, url)
            .json(body)
            .send()
            .await
        {
            Ok(r) => r,
            Err(e) => {
                return Attempt::Retry {
                    error: format!("request failed: {}", short(&e)),
                    after: None,
                }
            }
        };
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let text = match resp.bytes().await {
            Ok(t) => t,
            Err(e) => {
                return Attempt::Retry {
                    error: format!("{status}: reading the body failed: {}", short(&e)),
                    after: None,
                }
            }
        };
        if status.as_u16() == 429 || status.as_u16() == 408 || status.is_server_error() {
            return Attempt::Retry {
                error: format!("HTTP {status}: {}", self.error_snippet(&text)),
                after: retry_after,
            };
        }
        if !status.is_success() {
            return Attempt::Fatal(format!("HTTP {status}: {}", self.error_snippet(&text)));
        }
        let v: Value = match serde_json::from_slice(&text) {
            Ok(v) => v,
            Err(e) => {
                return Attempt::Retry {
                    error: format!("unparseable response ({e}): {}", self.error_snippet(&text)),
                    after: None,
                }
            }
        };
        match parse(&v) {
            Ok(t) => Attempt::Done(t),
            Err(error) => Attempt::Retry { error, after: None },
        }
    }

    /// The generation in a chat or completions response.
    fn parse_generation(&self, v: &Value, stop: &[String]) -> Result<Generation, String> {
        let choice = &v["choices"][0];
        let content = match self.cfg.endpoint {
            Endpoint::Chat => choice["message"]["content"].as_str(),
            Endpoint::Completions => choice["text"].as_str(),
        };
        let Some(content) = content else {
            return Err(format!(
                "response has no choices[0] text: {}",
                self.error_snippet(v.to_string().as_bytes())
            ));
        };
        let mut out = content.to_string();
        let stopped = apply_stop(&mut out, stop);
        let finish = if stopped {
            "stop".to_string()
        } else {
            choice["finish_reason"]
                .as_str()
                .unwrap_or("stop")
                .to_string()
        };
        let u = &v["usage"];
        Ok(Generation {
            text: self.redact(out),
            finish_reason: finish,
            prompt_tokens: u["prompt_tokens"].as_u64().map(|x| x as u32),
            completion_tokens: u["completion_tokens"].as_u64().map(|x| x as u32),
            token_ids: None,
            model: self.redact(v["model"].as_str().unwrap_or(&self.cfg.model).to_string()),
        })
    }

    /// The start of a response body for an error message, with the API key
    /// removed before the text is cut (a key straddling the cut would
    /// otherwise leave its first characters in the message).
    pub fn error_snippet(&self, body: &[u8]) -> String {
        let head = String::from_utf8_lossy(&body[..body.len().min(8192)]).into_owned();
        snippet(&self.redact(head))
    }

    /// Every occurrence of the API key's value replaced by `[redacted]`: a
    /// server that echoes the `Authorization` header (in an error body or
    /// even in a completion) must not put the key into an artifact, the
    /// request journal or a log.
    pub fn redact(&self, s: String) -> String {
        match &self.key {
            Some(k) if !k.is_empty() && s.contains(k.as_str()) => {
                s.replace(k.as_str(), "[redacted]")
            }
            _ => s,
        }
    }

    /// One chat or completions request with retries; never panics,
    /// always returns an outcome.
    pub async fn call(&self, messages: &[ChatMessage], settings: &GenSettings) -> CallOutcome {
        let path = match self.cfg.endpoint {
            Endpoint::Chat => "chat/completions",
            Endpoint::Completions => "completions",
        };
        let body = self.body(messages, settings);
        let stop = settings.stop.as_slice();
        let (result, attempts, latency) = self
            .with_retries(path, &body, &|v| self.parse_generation(v, stop))
            .await;
        CallOutcome {
            result,
            attempts,
            latency,
        }
    }

    /// One `/v1/embeddings` request for `inputs` (one vector each, in input
    /// order), with retries. `base64` asks for `encoding_format: base64`
    /// (little-endian f32, a quarter of the JSON to parse; vLLM, TEI,
    /// Infinity and OpenAI serve it).
    pub async fn embed(&self, inputs: &[&str], base64: bool) -> EmbedOutcome {
        let mut body = json!({"model": self.cfg.model, "input": inputs});
        body["encoding_format"] = json!(if base64 { "base64" } else { "float" });
        let n = inputs.len();
        let (result, attempts, latency) = self
            .with_retries("embeddings", &body, &|v| parse_embeddings(v, n))
            .await;
        EmbedOutcome {
            result,
            attempts,
            latency,
        }
    }

    /// POSTs `body` to `path` until it succeeds, fails for good or the
    /// attempts run out: (result, attempts, wall time). Errors are redacted.
    async fn with_retries<T>(
        &self,
        path: &str,
        body: &Value,
        parse: &(dyn Fn(&Value) -> Result<T, String> + Sync),
    ) -> (Result<T, String>, u32, Duration) {
        let _permit = self
            .permits
            .acquire()
            .await
            .expect("semaphore never closed");
        let started = Instant::now();
        let mut last = String::new();
        for attempt in 1..=self.cfg.max_attempts.max(1) {
            self.pace().await;
            let replica = self.pick_replica();
            self.inflight[replica].fetch_add(1, Ordering::Relaxed);
            let r = self.attempt(replica, path, body, parse).await;
            self.inflight[replica].fetch_sub(1, Ordering::Relaxed);
            match r {
                Attempt::Done(g) => return (Ok(g), attempt, started.elapsed()),
                Attempt::Fatal(e) => return (Err(self.redact(e)), attempt, started.elapsed()),
                Attempt::Retry { error, after } => {
                    let error = self.redact(error);
                    tracing::debug!("attempt {attempt} failed: {error}");
                    last = error;
                    if attempt < self.cfg.max_attempts {
                        let cap = self
                            .cfg
                            .retry_base
                            .saturating_mul(1u32 << (attempt - 1).min(16))
                            .min(self.cfg.retry_max);
                        let jitter = Duration::from_secs_f64(
                            rand::rng().random_range(0.0..=cap.as_secs_f64().max(1e-6)),
                        );
                        tokio::time::sleep(after.map(|a| a.max(jitter)).unwrap_or(jitter)).await;
                    }
                }
            }
        }
        (
            Err(format!(
                "gave up after {} attempts: {last}",
                self.cfg.max_attempts
            )),
            self.cfg.max_attempts,
            started.elapsed(),
        )
    }
}

/// The result of one embeddings request after retries.
#[derive(Debug, Clone)]
pub struct EmbedOutcome {
    /// One vector per input, in input order, or the final error message.
    pub result: Result<Vec<Vec<f32>>, String>,
    /// Attempts made, retries included.
    pub attempts: u32,
    /// Wall time of the request, over all attempts.
    pub latency: Duration,
}

/// The vectors of an embeddings response (`data[i].embedding`, a list of
/// floats or base64 of little-endian f32), put in input order by
/// `data[i].index`. The response must hold exactly `n` vectors of one
/// width, every value finite.
pub fn parse_embeddings(v: &Value, n: usize) -> Result<Vec<Vec<f32>>, String> {
    use base64::Engine as _;
    let data = v["data"].as_array().ok_or_else(|| {
        format!(
            "embeddings response has no `data` list: {}",
            snippet(&v.to_string())
        )
    })?;
    if data.len() != n {
        return Err(format!(
            "embeddings response has {} vectors for {n} inputs",
            data.len()
        ));
    }
    let mut out: Vec<Option<Vec<f32>>> = vec![None; n];
    for (pos, item) in data.iter().enumerate() {
        let index = item["index"].as_u64().map(|i| i as usize).unwrap_or(pos);
        let vector: Vec<f32> = match &item["embedding"] {
            Value::Array(xs) => xs
                .iter()
                .map(|x| x.as_f64().map(|f| f as f32))
                .collect::<Option<Vec<f32>>>()
                .ok_or_else(|| {
                    format!("data[{pos}].embedding holds a value that is not a number")
                })?,
            Value::String(b) => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(b)
                    .map_err(|e| format!("data[{pos}].embedding is not base64: {e}"))?;
                if bytes.len() % 4 != 0 {
                    return Err(format!(
                        "data[{pos}].embedding: {} bytes is not a whole number of f32 values",
                        bytes.len()
                    ));
                }
                bytes
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect()
            }
            _ => return Err(format!("data[{pos}] has no `embedding`")),
        };
        if let Some(bad) = vector.iter().position(|x| !x.is_finite()) {
            return Err(format!(
                "data[{pos}].embedding[{bad}] is not a finite number"
            ));
        }
        let slot = out
            .get_mut(index)
            .ok_or_else(|| format!("data[{pos}].index {index} is out of range for {n} inputs"))?;
        if slot.replace(vector).is_some() {
            return Err(format!("data[{pos}].index {index} appears twice"));
        }
    }
    let out: Vec<Vec<f32>> = out
        .into_iter()
        .map(|v| v.expect("n distinct indices"))
        .collect();
    if let Some(first) = out.first() {
        if first.is_empty() {
            return Err("embeddings response has empty vectors".into());
        }
        if let Some(i) = out.iter().position(|x| x.len() != first.len()) {
            return Err(format!(
                "embeddings response mixes widths: {} and {} (data index {i})",
                first.len(),
                out[i].len()
            ));
        }
    }
    Ok(out)
}

/// A short error text. Headers (and so the API key) never appear in it.
fn short(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timeout"
    } else if e.is_connect() {
        "connection error"
    } else if e.is_body() || e.is_decode() {
        "body error"
    } else {
        "error"
    };
    let mut s = e.to_string();
    if s.len() > 200 {
        s.truncate(200);
    }
    format!("{kind}: {s}")
}

fn snippet(t: &str) -> String {
    let t: String = t.chars().take(200).collect();
    t.replace('\n', " ")
}

/// A `Retry-After` header in seconds, capped at 300; a value that is not
/// a finite non-negative number (`NaN`, `inf`, `-3`, an HTTP date) is
/// ignored, and the default backoff applies.
pub fn parse_retry_after(v: &str) -> Option<Duration> {
    let s = v
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)?;
    Some(Duration::from_secs_f64(s.min(300.0)))
}

#[cfg(test)]
mod retry_after_tests {
    use super::*;

    /// Regression: `Retry-After: NaN` panicked in `Duration::from_secs_f64`.
    #[test]
    fn bad_retry_after_values_are_ignored() {
        for bad in [
            "NaN",
            "nan",
            "inf",
            "-inf",
            "-3",
            "1e400",
            "Wed, 21 Oct 2015 07:28:00 GMT",
            "",
        ] {
            assert_eq!(parse_retry_after(bad), None, "{bad}");
        }
        assert_eq!(parse_retry_after(" 2 "), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("100000"), Some(Duration::from_secs(300)));
    }
}

#[cfg(test)]
mod embeddings_tests {
    use super::*;

    /// Regression: the body was cut to 200 characters before the key was
    /// removed, so a key straddling the cut left its first part behind.
    #[test]
    fn a_key_straddling_the_snippet_cut_is_removed_whole() {
        let key = "sk-straddle-0123456789abcdef";
        // SAFETY: a variable only this test reads.
        unsafe { std::env::set_var("RAGPROBE_TEST_STRADDLE_KEY", key) };
        let client = OpenAiClient::new(OpenAiConfig {
            model: "m".into(),
            api_key_env: Some("RAGPROBE_TEST_STRADDLE_KEY".into()),
            ..Default::default()
        })
        .unwrap();
        let body = format!("{}{key} and more", "x".repeat(190));
        let s = client.error_snippet(body.as_bytes());
        assert!(!s.contains("sk-strad"), "{s}");
        assert!(s.contains("[redacted]") || s.len() <= 200, "{s}");
    }

    #[test]
    fn vectors_come_back_in_input_order_from_floats_or_base64() {
        use base64::Engine as _;
        let b64 = |v: &[f32]| {
            base64::engine::general_purpose::STANDARD
                .encode(v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>())
        };
        let v = json!({"data": [
            {"index": 1, "embedding": [0.5, -1.0]},
            {"index": 0, "embedding": b64(&[0.25, 2.0])},
        ]});
        assert_eq!(
            parse_embeddings(&v, 2).unwrap(),
            vec![vec![0.25, 2.0], vec![0.5, -1.0]]
        );
    }

    #[test]
    fn malformed_embeddings_responses_are_named() {
        for (v, n, needle) in [
            (json!({"nope": 1}), 1, "no `data`"),
            (
                json!({"data": [{"embedding": [1.0]}]}),
                2,
                "1 vectors for 2 inputs",
            ),
            (
                json!({"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [2.0]}]}),
                2,
                "appears twice",
            ),
            (
                json!({"data": [{"index": 5, "embedding": [1.0]}]}),
                1,
                "out of range",
            ),
            (
                json!({"data": [{"embedding": [1.0, "x"]}]}),
                1,
                "not a number",
            ),
            (json!({"data": [{"embedding": "AAA"}]}), 1, "base64"),
            (
                json!({"data": [{"embedding": [1.0]}, {"embedding": [1.0, 2.0]}]}),
                2,
                "mixes widths",
            ),
            (json!({"data": [{"embedding": []}]}), 1, "empty vectors"),
        ] {
            let e = parse_embeddings(&v, n).unwrap_err();
            assert!(e.contains(needle), "{e} (wanted {needle})");
        }
    }
}
