//! The embedded generator's engine: a GGUF decoder model (llama, qwen2)
//! run on the CPU, many sequences at once.
//!
//! * **Batched.** Sequences waiting at the same time share forward passes:
//!   the tokens of every active sequence (whole prompt chunks and single
//!   decode tokens alike) are stacked into one matrix, so each weight matrix
//!   is read once per step for all of them. Attention runs per sequence
//!   against its own KV cache, so no padding or masks are needed, and
//!   sequences join and leave the batch as they start and finish
//!   (continuous batching).
//! * **Prefix reuse.** Prompts of one template share a long prefix; the KV
//!   cache of recent prompts is kept and a new prompt starts from the
//!   longest prefix it shares with one of them.
//! * **Batch-invariant.** Every number a token's forward pass produces is
//!   computed by the same sequence of floating-point operations whatever
//!   else is in the batch, whichever thread runs it and whichever SIMD width
//!   the CPU has ([`kernels`]). Greedy outputs are therefore identical token
//!   for token across batch sizes, thread counts and prefix reuse, which the
//!   request cache and the determinism guarantees rely on.
//!
//! Weights stay in their GGUF tensor types ([`quant`]; [`gguf`] parses the
//! header): no f32 copy is held. [`Dots::F32`], the exact reference,
//! multiplies f32 activations with exactly decoded weights: steps of a
//! few tokens decode the blocks inside the dot product ([`packed`]),
//! longer ones tiles of rows ([`matrix`]), bit-identical to the f32
//! kernels on the reference's dequantized weights. [`Dots::Q8`]
//! quantizes the activations to 8 bits per 32-value block and multiplies
//! them with the weights' blocks as integers, as llama.cpp does
//! ([`packed::q8`]). By default ([`Dots::Q8Generated`]) generated tokens
//! take the integer dots and prompt tokens the f32 products.

pub mod batch;
pub mod encoder;
pub mod gguf;
pub mod kernels;
pub mod matrix;
pub mod model;
pub mod packed;
pub mod quant;
pub mod search;
pub mod weights;

pub use batch::{BatchOptions, Next, Request, Sink, DEFAULT_BATCH};
pub use matrix::Dots;
pub use model::{KvType, Model};
pub use weights::Config;

/// Bumped whenever the engine's arithmetic changes (and with it, possibly,
/// its outputs): it enters the model's id in request hashes.
pub const ENGINE_ID: &str = "ragprobe-engine-3";

/// What can go wrong loading a model.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The GGUF file could not be read or lacks what a llama model needs.
    #[error("{0}")]
    Load(String),
}

/// Engine result.
pub type Result<T> = std::result::Result<T, EngineError>;
