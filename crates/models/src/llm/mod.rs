//! Language-model backends and the request cache.
//!
//! * [`local`]: the embedded GGUF model (SmolLM2-135M-Instruct by default),
//!   run in-process by ragprobe-engine; greedy decoding, deterministic.
//! * [`openai`]: any OpenAI-compatible server (vLLM, llama.cpp server,
//!   Ollama, TGI, OpenAI), with bounded concurrency across replicas, retries
//!   and rate limits.
//! * [`journal`]: the crash-safe request journal that makes every call
//!   happen once.

pub mod backend;
pub mod journal;
pub mod local;
pub mod openai;
pub mod session;
pub mod spm;

use serde::{Deserialize, Serialize};

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The message text.
    pub content: String,
}

impl ChatMessage {
    /// A message with this role and content.
    pub fn new(role: &str, content: impl Into<String>) -> Self {
        ChatMessage {
            role: role.into(),
            content: content.into(),
        }
    }
}

/// Generation settings; all of them enter the request hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenSettings {
    /// The most tokens to generate (finish reason `length` when reached).
    pub max_tokens: u32,
    /// 0 = greedy (the default; the embedded backend is always greedy).
    pub temperature: f32,
    /// Stop strings: the text is cut at the first one found.
    pub stop: Vec<String>,
    /// Sampling seed, sent to OpenAI-compatible servers when set.
    pub seed: Option<u64>,
    /// Nucleus sampling (OpenAI-compatible servers); None = the server's
    /// default. Left out of the hash when unset, so older request ids hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f32>,
}

/// The most new tokens per response unless set: the one default (the CLI's
/// `--max-tokens` and [`GenSettings::default`] take it from here).
pub const DEFAULT_MAX_TOKENS: u32 = 32;

impl Default for GenSettings {
    fn default() -> Self {
        GenSettings {
            max_tokens: DEFAULT_MAX_TOKENS,
            temperature: 0.0,
            stop: vec![],
            seed: None,
            top_p: None,
        }
    }
}

/// A finished generation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Generation {
    /// The generated text, cut at the first stop string.
    pub text: String,
    /// `stop` (end of sequence or a stop string) or `length` (max_tokens).
    pub finish_reason: String,
    /// Prompt length in tokens, where the backend reports it.
    pub prompt_tokens: Option<u32>,
    /// Number of tokens generated, where the backend reports it.
    pub completion_tokens: Option<u32>,
    /// Generated token ids, where the backend gives them.
    pub token_ids: Option<Vec<u32>>,
    /// The model as the backend reports it (served model id, or file name).
    pub model: String,
}

/// Truncate `text` at the first stop string; true if one was found.
pub fn apply_stop(text: &mut String, stop: &[String]) -> bool {
    let cut = stop
        .iter()
        .filter(|s| !s.is_empty())
        .filter_map(|s| text.find(s.as_str()))
        .min();
    if let Some(i) = cut {
        text.truncate(i);
        true
    } else {
        false
    }
}
