//! Client for OpenAI-compatible servers (`/v1/chat/completions`,
//! `/v1/completions`): vLLM, llama.cpp server, Ollama, TGI, OpenAI.
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

enum Attempt {
    Done(Generation),
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

    async fn attempt(&self, replica: usize, body: &Value, stop: &[String]) -> Attempt {
        let path = match self.cfg.endpoint {
            Endpoint::Chat => "chat/completions",
            Endpoint::Completions => "completions",
        };
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
        let text = match resp.text().await {
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
                error: format!("HTTP {status}: {}", snippet(&text)),
                after: retry_after,
            };
        }
        if !status.is_success() {
            return Attempt::Fatal(format!("HTTP {status}: {}", snippet(&text)));
        }
        let v: Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(e) => {
                return Attempt::Retry {
                    error: format!("unparseable response ({e}): {}", snippet(&text)),
                    after: None,
                }
            }
        };
        let choice = &v["choices"][0];
        let content = match self.cfg.endpoint {
            Endpoint::Chat => choice["message"]["content"].as_str(),
            Endpoint::Completions => choice["text"].as_str(),
        };
        let Some(content) = content else {
            return Attempt::Retry {
                error: format!("response has no choices[0] text: {}", snippet(&text)),
                after: None,
            };
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
        Attempt::Done(Generation {
            text: out,
            finish_reason: finish,
            prompt_tokens: u["prompt_tokens"].as_u64().map(|x| x as u32),
            completion_tokens: u["completion_tokens"].as_u64().map(|x| x as u32),
            token_ids: None,
            model: v["model"].as_str().unwrap_or(&self.cfg.model).to_string(),
        })
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

    fn redact_attempt(&self, a: Attempt) -> Attempt {
        match a {
            Attempt::Done(mut g) => {
                g.text = self.redact(g.text);
                g.model = self.redact(g.model);
                Attempt::Done(g)
            }
            Attempt::Fatal(e) => Attempt::Fatal(self.redact(e)),
            Attempt::Retry { error, after } => Attempt::Retry {
                error: self.redact(error),
                after,
            },
        }
    }

    /// One request with retries; never panics, always returns an outcome.
    pub async fn call(&self, messages: &[ChatMessage], settings: &GenSettings) -> CallOutcome {
        let _permit = self
            .permits
            .acquire()
            .await
            .expect("semaphore never closed");
        let started = Instant::now();
        let body = self.body(messages, settings);
        let mut last = String::new();
        for attempt in 1..=self.cfg.max_attempts.max(1) {
            self.pace().await;
            let replica = self.pick_replica();
            self.inflight[replica].fetch_add(1, Ordering::Relaxed);
            let r = self.redact_attempt(self.attempt(replica, &body, &settings.stop).await);
            self.inflight[replica].fetch_sub(1, Ordering::Relaxed);
            match r {
                Attempt::Done(g) => {
                    return CallOutcome {
                        result: Ok(g),
                        attempts: attempt,
                        latency: started.elapsed(),
                    }
                }
                Attempt::Fatal(e) => {
                    return CallOutcome {
                        result: Err(e),
                        attempts: attempt,
                        latency: started.elapsed(),
                    }
                }
                Attempt::Retry { error, after } => {
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
        CallOutcome {
            result: Err(format!(
                "gave up after {} attempts: {last}",
                self.cfg.max_attempts
            )),
            attempts: self.cfg.max_attempts,
            latency: started.elapsed(),
        }
    }
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
