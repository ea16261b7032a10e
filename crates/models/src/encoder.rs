//! Text encoders for dense retrieval: the in-process MiniLM model, or any
//! server that answers `/v1/embeddings` (vLLM, Text Embeddings Inference,
//! Infinity, Ollama, OpenAI) through the same OpenAI-compatible client as
//! generation: replicas, bounded concurrency, retries with backoff, pacing,
//! and several inputs per request.

use std::sync::Arc;

use crate::llm::openai::{OpenAiClient, OpenAiConfig};
use crate::{Embedder, ModelError, Result};

/// Which encoder embeds passages and questions (the CLI's `--embed-backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum EncoderKind {
    /// all-MiniLM-L6-v2, in-process (the studies' similarity model).
    #[default]
    Local,
    /// An OpenAI-compatible `/v1/embeddings` server.
    Openai,
}

/// Settings of a [`RemoteEncoder`].
#[derive(Debug, Clone)]
pub struct RemoteEncoderConfig {
    /// Replicas, model, key variable, concurrency, retries and pacing
    /// (the `endpoint` field is not used).
    pub client: OpenAiConfig,
    /// Inputs sent in one request.
    pub inputs_per_request: usize,
    /// Ask for base64-encoded vectors instead of JSON number lists.
    pub base64: bool,
}

/// A `/v1/embeddings` server.
pub struct RemoteEncoder {
    client: Arc<OpenAiClient>,
    runtime: tokio::runtime::Runtime,
    model: String,
    inputs_per_request: usize,
    base64: bool,
    in_flight: usize,
}

impl std::fmt::Debug for RemoteEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteEncoder")
            .field("model", &self.model)
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

impl RemoteEncoder {
    /// Connects and checks that the first replica answers `GET /v1/models`.
    pub fn new(cfg: RemoteEncoderConfig) -> Result<RemoteEncoder> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| ModelError::Backend(e.to_string()))?;
        let in_flight = cfg.client.concurrency.max(1);
        let model = cfg.client.model.clone();
        let client = OpenAiClient::new(cfg.client).map_err(ModelError::Backend)?;
        // Reach the server now (a clear error before any work); requests and
        // cache keys use the configured name, which the server may accept
        // as an alias even when it lists another.
        runtime
            .block_on(client.served_model())
            .map_err(ModelError::Backend)?;
        Ok(RemoteEncoder {
            client: Arc::new(client),
            runtime,
            model,
            inputs_per_request: cfg.inputs_per_request.max(1),
            base64: cfg.base64,
            in_flight,
        })
    }

    /// The model's name as configured (and sent with every request).
    pub fn model_name(&self) -> &str {
        &self.model
    }

    /// One vector per text, in order: requests of `inputs_per_request`
    /// texts, as many in flight as the client's concurrency allows. The
    /// first request that fails for good fails the call, naming the inputs.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let chunks: Vec<Vec<String>> = texts
            .chunks(self.inputs_per_request)
            .map(|c| c.iter().map(|s| s.to_string()).collect())
            .collect();
        let (client, cap, base64, per) = (
            self.client.clone(),
            self.in_flight,
            self.base64,
            self.inputs_per_request,
        );
        let mut out: Vec<Option<Vec<Vec<f32>>>> = vec![None; chunks.len()];
        self.runtime.block_on(async {
            let mut set = tokio::task::JoinSet::new();
            let mut chunks = chunks.into_iter().enumerate();
            let mut running = 0usize;
            loop {
                while running < cap {
                    let Some((i, chunk)) = chunks.next() else {
                        break;
                    };
                    let c = client.clone();
                    set.spawn(async move {
                        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
                        (i, c.embed(&refs, base64).await)
                    });
                    running += 1;
                }
                let Some(joined) = set.join_next().await else {
                    break;
                };
                running -= 1;
                let (i, outcome) = joined
                    .map_err(|e| ModelError::Backend(format!("embedding task failed: {e}")))?;
                match outcome.result {
                    Ok(v) => out[i] = Some(v),
                    Err(e) => {
                        set.abort_all();
                        return Err(ModelError::Backend(format!(
                            "embedding inputs {}..{} of {}: {e}",
                            i * per,
                            (i * per + per).min(texts.len()),
                            texts.len()
                        )));
                    }
                }
            }
            Ok(())
        })?;
        Ok(out.into_iter().flatten().flatten().collect())
    }
}

/// The encoder dense retrieval uses: in-process MiniLM or a server.
#[derive(Debug)]
pub enum TextEncoder {
    /// all-MiniLM-L6-v2 in-process.
    Local(Box<Embedder>),
    /// An OpenAI-compatible `/v1/embeddings` server.
    Remote(RemoteEncoder),
}

impl TextEncoder {
    /// The model's name, recorded in artifacts.
    pub fn model_name(&self) -> &str {
        match self {
            TextEncoder::Local(e) => e.model_name(),
            TextEncoder::Remote(r) => r.model_name(),
        }
    }

    /// What identifies the model in recipes: the weights' hash for the
    /// in-process model, the model name sent to the server (not its
    /// address: any replica of the same model gives the same vectors).
    pub fn resource_id(&self) -> String {
        match self {
            TextEncoder::Local(e) => e.model_id(),
            TextEncoder::Remote(r) => format!("openai-embeddings:{}", r.model_name()),
        }
    }

    /// One vector per text, in order; `batch` texts per forward pass for
    /// the in-process model (a server batches by its own settings).
    pub fn embed(&self, texts: &[&str], batch: usize) -> Result<Vec<Vec<f32>>> {
        match self {
            TextEncoder::Local(e) => Ok(e
                .embed(texts, batch)?
                .into_iter()
                .map(|v| v.to_vec())
                .collect()),
            TextEncoder::Remote(r) => r.embed(texts),
        }
    }
}
