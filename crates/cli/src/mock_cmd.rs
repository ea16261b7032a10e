use anyhow::Result;
use clap::Args;
use ragprobe_mock::{start, MockConfig};
use std::time::Duration;

/// A loopback OpenAI-compatible server for tests and benchmarks. Prints its
/// base URL on stdout and serves until killed.
#[derive(Args, Debug)]
pub struct MockArgs {
    /// Port on 127.0.0.1 (0 = any free port).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Latency added to every request, in milliseconds.
    #[arg(long, default_value_t = 0)]
    pub latency_ms: u64,
    #[arg(long, default_value = "mock-model")]
    pub model: String,
    /// Share of requests answered 429 with Retry-After.
    #[arg(long, default_value_t = 0.0)]
    pub rate_429: f64,
    /// Share of requests answered 500.
    #[arg(long, default_value_t = 0.0)]
    pub rate_500: f64,
    /// Share of connections dropped without an answer.
    #[arg(long, default_value_t = 0.0)]
    pub rate_drop: f64,
    /// Share of answers with malformed JSON.
    #[arg(long, default_value_t = 0.0)]
    pub rate_malformed: f64,
    /// Replies: `hash` (a deterministic nonsense answer) or `scripted` (a
    /// stand-in model that writes GenADV and conflict passages, NoMIRACL
    /// labels, options and passage-based answers, so that a reproduction
    /// pipeline fills every table).
    #[arg(long, default_value = "hash", value_parser = ["hash", "scripted"])]
    pub replies: String,
    /// Share of requests answered only after --slow-ms (past a client's timeout).
    #[arg(long, default_value_t = 0.0)]
    pub rate_slow: f64,
    /// Delay of a slow response, in milliseconds.
    #[arg(long, default_value_t = 5000)]
    pub slow_ms: u64,
    /// Width of the deterministic vectors `/v1/embeddings` returns.
    #[arg(long, default_value_t = 384, value_parser = crate::bounds::usize_in(1, 65_536))]
    pub embed_dim: usize,
    /// Stop after this many seconds (a safety bound).
    #[arg(long, default_value_t = 3600)]
    pub max_seconds: u64,
}

pub fn run(a: MockArgs) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let cfg = MockConfig {
            model: a.model,
            latency: Duration::from_millis(a.latency_ms),
            rate_429: a.rate_429,
            rate_500: a.rate_500,
            rate_drop: a.rate_drop,
            rate_malformed: a.rate_malformed,
            rate_slow: a.rate_slow,
            slow_delay: Duration::from_millis(a.slow_ms),
            replies: if a.replies == "scripted" {
                ragprobe_mock::Replies::Scripted
            } else {
                ragprobe_mock::Replies::Hash
            },
            embed_dim: a.embed_dim,
            ..Default::default()
        };
        let server = start(cfg, a.port).await?;
        println!("{}", server.base_url());
        use std::io::Write;
        std::io::stdout().flush()?;
        tokio::time::sleep(Duration::from_secs(a.max_seconds)).await;
        Ok(())
    })
}
