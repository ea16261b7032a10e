//! A loopback OpenAI-compatible server for tests and benchmarks, with
//! fault injection: 429 with `Retry-After`, 500, responses slower than the
//! client's timeout, dropped connections and malformed JSON, each at a set
//! rate. It answers `/v1/chat/completions`, `/v1/completions` and
//! `/v1/models`; the reply text is a deterministic function of the prompt.
//! It records how many successful answers each distinct request body got.

use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// Fault rates (0..1) and timings.
#[derive(Debug, Clone)]
pub struct MockConfig {
    pub model: String,
    pub latency: Duration,
    pub rate_429: f64,
    pub retry_after_secs: u32,
    pub rate_500: f64,
    /// Respond only after `slow_delay` (past the client's timeout).
    pub rate_slow: f64,
    pub slow_delay: Duration,
    pub rate_drop: f64,
    pub rate_malformed: f64,
    pub seed: u64,
}

impl Default for MockConfig {
    fn default() -> Self {
        MockConfig {
            model: "mock-model".into(),
            latency: Duration::ZERO,
            rate_429: 0.0,
            retry_after_secs: 1,
            rate_500: 0.0,
            rate_slow: 0.0,
            slow_delay: Duration::from_secs(5),
            rate_drop: 0.0,
            rate_malformed: 0.0,
            seed: 0,
        }
    }
}

/// What the server saw.
#[derive(Debug, Default)]
pub struct MockStats {
    pub requests: AtomicU64,
    pub faults: AtomicU64,
    /// Successful (well-formed 200) answers per distinct request body.
    pub answered: Mutex<HashMap<String, u32>>,
}

impl MockStats {
    /// Request bodies that got more than one successful answer.
    pub fn answered_twice(&self) -> usize {
        self.answered.lock().unwrap().values().filter(|&&n| n > 1).count()
    }
    pub fn distinct_answered(&self) -> usize {
        self.answered.lock().unwrap().len()
    }
}

/// A running mock server; stops when dropped.
pub struct MockServer {
    pub addr: SocketAddr,
    pub stats: Arc<MockStats>,
    task: tokio::task::JoinHandle<()>,
}

impl MockServer {
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The deterministic reply for a prompt: a short answer derived from it.
pub fn reply_for(prompt: &str) -> String {
    let h = crate::paths::sha256_str(prompt);
    format!("Mock answer {}.", &h[..8])
}

/// Bind to `127.0.0.1:port` (0 = any free port) and serve until dropped.
pub async fn start(cfg: MockConfig, port: u16) -> std::io::Result<MockServer> {
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    let stats = Arc::new(MockStats::default());
    let cfg = Arc::new(cfg);
    let counter = Arc::new(AtomicU64::new(0));
    let st = stats.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((sock, _)) = listener.accept().await else { continue };
            // Small responses must not wait for Nagle's algorithm.
            let _ = sock.set_nodelay(true);
            let (cfg, st, counter) = (cfg.clone(), st.clone(), counter.clone());
            tokio::spawn(async move {
                let _ = serve(sock, cfg, st, counter).await;
            });
        }
    });
    Ok(MockServer { addr, stats, task })
}

async fn serve(sock: TcpStream, cfg: Arc<MockConfig>, stats: Arc<MockStats>, counter: Arc<AtomicU64>) -> std::io::Result<()> {
    let mut reader = BufReader::new(sock);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let mut parts = line.split_whitespace();
        let (method, path) = (parts.next().unwrap_or("").to_string(), parts.next().unwrap_or("").to_string());
        let mut len = 0usize;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).await? == 0 {
                return Ok(());
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0u8; len];
        reader.read_exact(&mut body).await?;
        if method == "GET" && path.ends_with("/models") {
            let b = json!({"object": "list", "data": [{"id": cfg.model, "object": "model"}]}).to_string();
            write(&mut reader, 200, &b, None).await?;
            continue;
        }
        stats.requests.fetch_add(1, Ordering::Relaxed);
        let n = counter.fetch_add(1, Ordering::Relaxed);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(cfg.seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let roll: f64 = rng.random();
        let mut edge = 0.0;
        let mut hit = |rate: f64| {
            edge += rate;
            roll < edge
        };
        if !cfg.latency.is_zero() {
            tokio::time::sleep(cfg.latency).await;
        }
        if hit(cfg.rate_429) {
            stats.faults.fetch_add(1, Ordering::Relaxed);
            write(&mut reader, 429, r#"{"error":{"message":"rate limited"}}"#, Some(cfg.retry_after_secs)).await?;
            continue;
        }
        if hit(cfg.rate_500) {
            stats.faults.fetch_add(1, Ordering::Relaxed);
            write(&mut reader, 500, r#"{"error":{"message":"internal error"}}"#, None).await?;
            continue;
        }
        if hit(cfg.rate_drop) {
            stats.faults.fetch_add(1, Ordering::Relaxed);
            return Ok(()); // close without answering
        }
        if hit(cfg.rate_malformed) {
            stats.faults.fetch_add(1, Ordering::Relaxed);
            write(&mut reader, 200, r#"{"choices": [{"message": {"content": "trunc"#, None).await?;
            continue;
        }
        let slow = hit(cfg.rate_slow);
        let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let prompt = if path.ends_with("/chat/completions") {
            v["messages"].as_array().map(|ms| ms.iter().filter_map(|m| m["content"].as_str()).collect::<Vec<_>>().join("\n")).unwrap_or_default()
        } else {
            v["prompt"].as_str().unwrap_or("").to_string()
        };
        let text = reply_for(&prompt);
        let resp = if path.ends_with("/chat/completions") {
            json!({"id": "mock", "object": "chat.completion", "model": cfg.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": prompt.split_whitespace().count(), "completion_tokens": 3, "total_tokens": prompt.split_whitespace().count() + 3}})
        } else {
            json!({"id": "mock", "object": "text_completion", "model": cfg.model, "choices": [{"index": 0, "text": text, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": prompt.split_whitespace().count(), "completion_tokens": 3}})
        };
        if slow {
            stats.faults.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(cfg.slow_delay).await;
        }
        if write(&mut reader, 200, &resp.to_string(), None).await.is_ok() && !slow {
            *stats.answered.lock().unwrap().entry(crate::paths::sha256_str(&String::from_utf8_lossy(&body))).or_default() += 1;
        }
    }
}

async fn write(reader: &mut BufReader<TcpStream>, status: u16, body: &str, retry_after: Option<u32>) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        429 => "Too Many Requests",
        _ => "Internal Server Error",
    };
    let extra = retry_after.map(|s| format!("Retry-After: {s}\r\n")).unwrap_or_default();
    // One write for head and body.
    let msg = format!("HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}\r\n{body}", body.len());
    let sock = reader.get_mut();
    sock.write_all(msg.as_bytes()).await?;
    sock.flush().await
}
