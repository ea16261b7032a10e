//! A loopback OpenAI-compatible server for tests and benchmarks, with
//! fault injection: 429 with `Retry-After`, 500, responses slower than the
//! client's timeout, dropped connections and malformed JSON, each at a set
//! rate. It answers `/v1/chat/completions`, `/v1/completions`,
//! `/v1/embeddings` and `/v1/models`; the reply text (or vector) is a
//! deterministic function of the prompt (or input).
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

/// Hex SHA-256 of a string: what the replies are a function of.
fn sha256_str(s: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(s.as_bytes()))
}

/// Fault rates (0..1) and timings.
#[derive(Debug, Clone)]
pub struct MockConfig {
    /// Model id the server reports (in `/v1/models` and replies).
    pub model: String,
    /// Delay added to every completion request, faulty or not.
    pub latency: Duration,
    /// Share of completion requests answered 429 (rate limited).
    pub rate_429: f64,
    /// `Retry-After` seconds sent with each 429.
    pub retry_after_secs: u32,
    /// Share of completion requests answered 500.
    pub rate_500: f64,
    /// Respond only after `slow_delay` (past the client's timeout).
    pub rate_slow: f64,
    /// How long a slow response waits before it is sent.
    pub slow_delay: Duration,
    /// Share of completion requests whose connection is closed without an answer.
    pub rate_drop: f64,
    /// Share of completion requests answered 200 with truncated, malformed JSON.
    pub rate_malformed: f64,
    /// Seed of the per-request fault rolls, so fault patterns repeat.
    pub seed: u64,
    /// How replies are made ([`Replies`]).
    pub replies: Replies,
    /// A hostile server: every completion request is answered 500 with the
    /// request's `Authorization` header echoed in the error body.
    pub echo_auth: bool,
    /// Width of the vectors `/v1/embeddings` returns ([`mock_embedding`]).
    pub embed_dim: usize,
    /// A server that goes down: every request after the first `n` is
    /// answered 500.
    pub fail_after: Option<u64>,
}

/// How the mock makes a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Replies {
    /// `Mock answer <hash>.`: a deterministic nonsense answer.
    #[default]
    Hash,
    /// A deterministic stand-in for a model, so that a reproduction
    /// pipeline produces every table end to end: it writes GenADV and
    /// conflict passages that pass the filters, answers NoMIRACL prompts
    /// with each label, sometimes says `conflict` / `unanswerable` when the
    /// prompt offers it, picks a multiple-choice option, and otherwise
    /// answers with one of the passages in the prompt. See [`scripted_reply`].
    Scripted,
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
            replies: Replies::Hash,
            echo_auth: false,
            embed_dim: 384,
            fail_after: None,
        }
    }
}

/// What the server saw.
#[derive(Debug, Default)]
pub struct MockStats {
    /// Completion requests received (`/v1/models` not counted).
    pub requests: AtomicU64,
    /// Requests answered with an injected fault (429, 500, dropped, malformed).
    pub faults: AtomicU64,
    /// Successful (well-formed 200) answers per distinct request body.
    pub answered: Mutex<HashMap<String, u32>>,
}

impl MockStats {
    /// Request bodies that got more than one successful answer.
    pub fn answered_twice(&self) -> usize {
        self.answered
            .lock()
            .unwrap()
            .values()
            .filter(|&&n| n > 1)
            .count()
    }
    /// Distinct request bodies that got at least one successful answer.
    pub fn distinct_answered(&self) -> usize {
        self.answered.lock().unwrap().len()
    }
}

/// A running mock server; stops when dropped.
pub struct MockServer {
    /// The address the server listens on (loopback).
    pub addr: SocketAddr,
    /// What the server has seen so far.
    pub stats: Arc<MockStats>,
    task: tokio::task::JoinHandle<()>,
}

impl MockServer {
    /// The server's OpenAI-compatible base URL, `http://<addr>/v1`.
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
    let h = sha256_str(prompt);
    format!("Mock answer {}.", &h[..8])
}

/// The scripted stand-in's reply (deterministic in the prompt):
/// * GenADV answer sentence: a sentence holding the answer and two more
///   named entities; the adversarial rewrite: an unrelated sentence without
///   the answer; passage prompts: the claim plus two sentences of context
///   (so GenADV passages and conflict passages pass every filter);
/// * NoMIRACL: "Yes, answer is present", "I don't know", "[2]" or
///   "Maybe", by hash;
/// * a prompt that offers `conflict` or `unanswerable`: that word one time
///   in four;
/// * multiple choice (lines `A. …`): one option letter, by hash;
/// * the judge templates: `judge-qa` `{"verdict": "correct"}`, `…
///   "incorrect"}`, `… "abstained"}`, `judge-foil` `… "gold"}`, `… "foil"}`,
///   `… "both"}`, `… "neither"}`, or a reply in no such form, by hash;
/// * otherwise one of the prompt's passages (a line of 12 words or more
///   that is not an instruction), whole; without passages, a hash answer.
pub fn scripted_reply(prompt: &str) -> String {
    let h = sha256_str(prompt);
    let r = u64::from_str_radix(&h[..12], 16).unwrap_or(0);
    let field = |label: &str| {
        prompt
            .lines()
            .find_map(|l| l.trim().strip_prefix(label))
            .map(|x| x.trim().to_string())
            .unwrap_or_default()
    };
    if prompt.contains("write a single sentence using the following question and answer") {
        return format!("According to the Oxford Reference archive in London, the answer to the question \"{}\" is {}.", field("Question:"), field("Answer:"));
    }
    if prompt.contains("Rewrite the sentence by replacing the specified words") {
        return "Records kept by the Cambridge Digital Library in Edinburgh name Margaret Holloway of Dundee in this context.".into();
    }
    if prompt.contains("Given a claim that contradicts factual information")
        || prompt.contains("Given a claim, write a concise, factual passage")
    {
        let claim = field("Claim:");
        return format!("{claim} The account first appeared in a regional almanac in 1921 and has been repeated in several reference works since then. Archivists catalogued the surviving documents, which remain available to researchers who wish to consult the original sources.");
    }
    if let Some(v) = judge_reply(prompt, r) {
        return v;
    }
    if prompt.contains("\"Yes, answer is present\"") {
        return ["Yes, answer is present", "I don't know", "[2]", "Maybe."][(r % 4) as usize]
            .into();
    }
    let lower = prompt.to_lowercase();
    if lower.contains("conflict") && r.is_multiple_of(4) {
        return "conflict".into();
    }
    if lower.contains("unanswerable") && r % 4 == 1 {
        return "unanswerable".into();
    }
    let options: Vec<&str> = prompt
        .lines()
        .map(str::trim)
        .filter(|l| {
            l.len() > 2 && l.as_bytes()[0].is_ascii_uppercase() && &l.as_bytes()[1..3] == b". "
        })
        .collect();
    if options.len() >= 2 {
        return options[(r % options.len() as u64) as usize][..1].to_string();
    }
    let passages: Vec<&str> = prompt
        .lines()
        .map(|l| {
            let l = l.trim();
            let l = ["Documents:", "Document:", "文档："]
                .iter()
                .find_map(|p| l.strip_prefix(p))
                .unwrap_or(l)
                .trim();
            l.split_once("]: ")
                .filter(|x| x.0.starts_with("Document ["))
                .map(|x| x.1)
                .unwrap_or(l)
        })
        .filter(|l| l.split_whitespace().count() >= 12)
        .filter(|l| {
            let x = l.to_lowercase();
            !(x.contains("question")
                || x.contains("you are")
                || x.contains("respond")
                || x.contains("the documents"))
        })
        .collect();
    if passages.is_empty() {
        return reply_for(prompt);
    }
    passages[(r % passages.len() as u64) as usize].to_string()
}

/// The scripted judge's reply (`judge-foil` when the prompt has a foil,
/// else `judge-qa`): a verdict by hash, or one reply in five (four for
/// `judge-qa`) in no verdict form; None for a prompt of neither.
fn judge_reply(prompt: &str, r: u64) -> Option<String> {
    if !prompt.contains("You grade answers to questions") {
        return None;
    }
    let replies: &[&str] = if prompt.contains("\nFoil: ") {
        &[
            "{\"verdict\": \"gold\"}",
            "{\"verdict\": \"foil\"}",
            "{\"verdict\": \"both\"}",
            "{\"verdict\": \"neither\"}",
            "Probably the foil.",
        ]
    } else {
        &[
            "{\"verdict\": \"correct\"}",
            "{\"verdict\": \"incorrect\"}",
            "{\"verdict\": \"abstained\"}",
            "The response looks right to me.",
        ]
    };
    Some(replies[(r % replies.len() as u64) as usize].to_string())
}

/// Clusters the mock's vectors fall into.
const MOCK_CLUSTERS: u64 = 64;

/// The mock's embedding of `text`: a unit vector of `dim` values, the sum
/// of one of 64 cluster centres (picked by the text's hash) and a smaller
/// text-specific offset, so that vectors have the clustered structure of
/// real embeddings (approximate search behaves as on real data).
pub fn mock_embedding(text: &str, dim: usize) -> Vec<f32> {
    let h = sha256_str(text);
    let seed = u64::from_str_radix(&h[..16], 16).unwrap_or(0);
    let mut centre = rand_chacha::ChaCha8Rng::seed_from_u64(seed % MOCK_CLUSTERS);
    let mut own = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut v: Vec<f32> = (0..dim)
        .map(|_| centre.random_range(-1.0f32..1.0) + 0.6 * own.random_range(-1.0f32..1.0))
        .collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

/// The `/v1/embeddings` response for a request body: `input` as one string
/// or a list, `encoding_format` `float` (default) or `base64`.
fn embeddings(cfg: &MockConfig, body: &[u8]) -> Value {
    use base64::Engine as _;
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let inputs: Vec<String> = match &v["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .map(|x| x.as_str().unwrap_or("").to_string())
            .collect(),
        _ => Vec::new(),
    };
    let b64 = v["encoding_format"].as_str() == Some("base64");
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let e = mock_embedding(t, cfg.embed_dim);
            let embedding = if b64 {
                let bytes: Vec<u8> = e.iter().flat_map(|x| x.to_le_bytes()).collect();
                json!(base64::engine::general_purpose::STANDARD.encode(bytes))
            } else {
                json!(e)
            };
            json!({"object": "embedding", "index": i, "embedding": embedding})
        })
        .collect();
    let tokens: usize = inputs.iter().map(|t| t.split_whitespace().count()).sum();
    json!({"object": "list", "model": cfg.model, "data": data,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})
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
            let Ok((sock, _)) = listener.accept().await else {
                continue;
            };
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

/// One HTTP request as the mock reads it.
struct HttpRequest {
    method: String,
    path: String,
    /// The `Authorization` header's value.
    auth: String,
    body: Vec<u8>,
}

/// Reads one request (request line, headers, `Content-Length` body); None
/// when the client closed the connection.
async fn read_request(reader: &mut BufReader<TcpStream>) -> std::io::Result<Option<HttpRequest>> {
    let mut line = String::new();
    if reader.read_line(&mut line).await? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let (method, path) = (
        parts.next().unwrap_or("").to_string(),
        parts.next().unwrap_or("").to_string(),
    );
    let mut len = 0usize;
    let mut auth = String::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).await? == 0 {
            return Ok(None);
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().unwrap_or(0);
            } else if k.eq_ignore_ascii_case("authorization") {
                auth = v.trim().to_string();
            }
        }
    }
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).await?;
    Ok(Some(HttpRequest {
        method,
        path,
        auth,
        body,
    }))
}

/// The fault injected into the `n`-th completion request, drawn from the
/// configured rates (in this order, from one seeded roll).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    RateLimited,
    ServerError,
    Drop,
    Malformed,
    Slow,
    None,
}

fn fault_for(cfg: &MockConfig, n: u64) -> Fault {
    let mut rng =
        rand_chacha::ChaCha8Rng::seed_from_u64(cfg.seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let roll: f64 = rng.random();
    let mut edge = 0.0;
    for (rate, fault) in [
        (cfg.rate_429, Fault::RateLimited),
        (cfg.rate_500, Fault::ServerError),
        (cfg.rate_drop, Fault::Drop),
        (cfg.rate_malformed, Fault::Malformed),
        (cfg.rate_slow, Fault::Slow),
    ] {
        edge += rate;
        if roll < edge {
            return fault;
        }
    }
    Fault::None
}

/// The completion for a request body: chat or plain, with the configured replies.
fn completion(cfg: &MockConfig, path: &str, body: &[u8]) -> Value {
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let chat = path.ends_with("/chat/completions");
    let prompt = if chat {
        v["messages"]
            .as_array()
            .map(|ms| {
                ms.iter()
                    .filter_map(|m| m["content"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    } else {
        v["prompt"].as_str().unwrap_or("").to_string()
    };
    let text = match cfg.replies {
        Replies::Hash => reply_for(&prompt),
        Replies::Scripted => scripted_reply(&prompt),
    };
    let words = prompt.split_whitespace().count();
    if chat {
        json!({"id": "mock", "object": "chat.completion", "model": cfg.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": words, "completion_tokens": 3, "total_tokens": words + 3}})
    } else {
        json!({"id": "mock", "object": "text_completion", "model": cfg.model, "choices": [{"index": 0, "text": text, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": words, "completion_tokens": 3}})
    }
}

async fn serve(
    sock: TcpStream,
    cfg: Arc<MockConfig>,
    stats: Arc<MockStats>,
    counter: Arc<AtomicU64>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(sock);
    while let Some(req) = read_request(&mut reader).await? {
        if req.method == "GET" && req.path.ends_with("/models") {
            let b = json!({"object": "list", "data": [{"id": cfg.model, "object": "model"}]})
                .to_string();
            write(&mut reader, 200, &b, None).await?;
            continue;
        }
        stats.requests.fetch_add(1, Ordering::Relaxed);
        if cfg.echo_auth {
            let b = json!({"error": {"message": format!("invalid credentials: {}", req.auth)}})
                .to_string();
            write(&mut reader, 500, &b, None).await?;
            continue;
        }
        let n = counter.fetch_add(1, Ordering::Relaxed);
        let fault = if cfg.fail_after.is_some_and(|k| n >= k) {
            Fault::ServerError
        } else {
            fault_for(&cfg, n)
        };
        if !cfg.latency.is_zero() {
            tokio::time::sleep(cfg.latency).await;
        }
        if fault != Fault::None {
            stats.faults.fetch_add(1, Ordering::Relaxed);
        }
        let (status, body, retry) = match fault {
            Fault::RateLimited => (
                429,
                r#"{"error":{"message":"rate limited"}}"#,
                Some(cfg.retry_after_secs),
            ),
            Fault::ServerError => (500, r#"{"error":{"message":"internal error"}}"#, None),
            Fault::Malformed => (200, r#"{"choices": [{"message": {"content": "trunc"#, None),
            Fault::Drop => return Ok(()), // close without answering
            Fault::Slow | Fault::None => (0, "", None),
        };
        if status != 0 {
            write(&mut reader, status, body, retry).await?;
            continue;
        }
        let resp = if req.path.ends_with("/embeddings") {
            embeddings(&cfg, &req.body)
        } else {
            completion(&cfg, &req.path, &req.body)
        };
        let slow = fault == Fault::Slow;
        if slow {
            tokio::time::sleep(cfg.slow_delay).await;
        }
        if write(&mut reader, 200, &resp.to_string(), None)
            .await
            .is_ok()
            && !slow
        {
            *stats
                .answered
                .lock()
                .unwrap()
                .entry(sha256_str(&String::from_utf8_lossy(&req.body)))
                .or_default() += 1;
        }
    }
    Ok(())
}

async fn write(
    reader: &mut BufReader<TcpStream>,
    status: u16,
    body: &str,
    retry_after: Option<u32>,
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        429 => "Too Many Requests",
        _ => "Internal Server Error",
    };
    let extra = retry_after
        .map(|s| format!("Retry-After: {s}\r\n"))
        .unwrap_or_default();
    // One write for head and body.
    let msg = format!("HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}\r\n{body}", body.len());
    let sock = reader.get_mut();
    sock.write_all(msg.as_bytes()).await?;
    sock.flush().await
}

#[cfg(test)]
mod scripted_tests {
    use super::*;

    #[test]
    fn scripted_replies_play_each_role() {
        let s = scripted_reply("Please write a single sentence using the following question and answer. The sentence should include the answer and be as realistic as possible.:\nQuestion: who wrote Hamlet\nAnswer: Shakespeare\nSentence:");
        assert!(s.contains("Shakespeare") && s.contains("London"), "{s}");
        let c = scripted_reply("Given a claim that contradicts factual information, write a passage within 100 words supporting this claim.\nClaim: Marlowe wrote Hamlet.\nPassage:");
        assert!(c.starts_with("Marlowe wrote Hamlet.") && !c.contains("Shakespeare"));
        let o = scripted_reply("Question: 维生素?\nA. 维生素A\nB. 维生素C\nAnswer:");
        assert!(o == "A" || o == "B", "{o}");
        let n = scripted_reply("respond as either \"Yes, answer is present\" or \"I don't know\".");
        assert!(["Yes, answer is present", "I don't know", "[2]", "Maybe."].contains(&n.as_str()));
    }
}
