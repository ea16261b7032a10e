//! The embedded generator: a GGUF llama-family model run with candle.
//!
//! * Weights: candle's quantized llama; Q4 weights are dequantized to f32 at
//!   load (`CANDLE_DEQUANTIZE_ALL`), which makes prefill ~10x faster than
//!   candle's scalar Q4_1 kernel on CPU at ~0.8 GB RSS for the 135M model.
//! * Tokenizer: assembled from the GGUF metadata (`tokenizer.ggml.*`):
//!   byte-level BPE with the file's vocabulary and merges, digits split
//!   individually before byte-level pre-tokenisation (the `smollm`
//!   pre-tokenizer of llama.cpp), control and user-defined tokens (types 3
//!   and 4) as special tokens.
//! * Chat template: the file's `tokenizer.chat_template` (Jinja), rendered
//!   with minijinja, so the model's own default system prompt is kept.
//! * Decoding: greedy (argmax), so the same request gives the same output.

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_llama::ModelWeights;
use std::path::{Path, PathBuf};
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::BPE;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::{AddedToken, DecoderWrapper, PreTokenizerWrapper, Tokenizer};

use super::{apply_stop, ChatMessage, GenSettings, Generation};
use crate::paths::file_sha256;
use crate::{ModelError, Result};

/// A loaded GGUF chat model.
pub struct LocalLlm {
    model: ModelWeights,
    tokenizer: Tokenizer,
    eos_ids: Vec<u32>,
    chat_template: String,
    bos_token: String,
    eos_token: String,
    sha256: String,
    name: String,
    path: PathBuf,
    context_length: usize,
}

impl std::fmt::Debug for LocalLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalLlm")
            .field("path", &self.path)
            .field("sha256", &self.sha256)
            .finish()
    }
}

fn meta<'a>(ct: &'a gguf_file::Content, key: &str, path: &Path) -> Result<&'a gguf_file::Value> {
    ct.metadata.get(key).ok_or_else(|| ModelError::Load {
        path: path.to_path_buf(),
        message: format!("GGUF metadata has no `{key}`"),
    })
}

fn strings(v: &gguf_file::Value, path: &Path, key: &str) -> Result<Vec<String>> {
    let err = |e: candle_core::Error| ModelError::Load {
        path: path.to_path_buf(),
        message: format!("{key}: {e}"),
    };
    v.to_vec()
        .map_err(err)?
        .iter()
        .map(|x| x.to_string().cloned().map_err(err))
        .collect()
}

/// Build a `tokenizers` tokenizer from GGUF `tokenizer.ggml.*` metadata
/// (gpt2-style byte-level BPE).
fn tokenizer_from_gguf(ct: &gguf_file::Content, path: &Path) -> Result<(Tokenizer, Vec<String>)> {
    let model = meta(ct, "tokenizer.ggml.model", path)?
        .to_string()
        .map_err(|e| ModelError::Load {
            path: path.into(),
            message: e.to_string(),
        })?;
    if model != "gpt2" {
        return Err(ModelError::Load {
            path: path.into(),
            message: format!("tokenizer model `{model}` is not supported (only gpt2-style BPE)"),
        });
    }
    let tokens = strings(meta(ct, "tokenizer.ggml.tokens", path)?, path, "tokens")?;
    let merges = strings(meta(ct, "tokenizer.ggml.merges", path)?, path, "merges")?;
    let types: Vec<i32> = match ct.metadata.get("tokenizer.ggml.token_type") {
        Some(v) => v
            .to_vec()
            .map(|v| v.iter().map(|x| x.to_i32().unwrap_or(1)).collect())
            .unwrap_or_default(),
        None => vec![],
    };
    let vocab: tokenizers::models::bpe::Vocab = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), i as u32))
        .collect();
    let merges: Vec<(String, String)> = merges
        .iter()
        .filter_map(|m| {
            m.split_once(' ')
                .map(|(a, b)| (a.to_string(), b.to_string()))
        })
        .collect();
    let bpe = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .build()
        .map_err(|e| ModelError::Tokenizer(e.to_string()))?;
    let mut tok = Tokenizer::new(bpe);
    let pre = Sequence::new(vec![
        PreTokenizerWrapper::Digits(Digits::new(true)),
        PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, true, true)),
    ]);
    tok.with_pre_tokenizer(Some(PreTokenizerWrapper::Sequence(pre)));
    tok.with_decoder(Some(DecoderWrapper::ByteLevel(ByteLevelDecoder::default())));
    let special: Vec<AddedToken> = tokens
        .iter()
        .zip(types.iter())
        .filter(|(_, t)| **t == 3 || **t == 4)
        .map(|(s, _)| AddedToken::from(s.clone(), true))
        .collect();
    tok.add_special_tokens(&special);
    Ok((tok, tokens))
}

/// The tokenizer of a GGUF file, from its metadata alone (no weights load).
pub fn gguf_tokenizer(path: &Path) -> Result<Tokenizer> {
    let err = |m: String| ModelError::Load {
        path: path.to_path_buf(),
        message: m,
    };
    let mut file = std::fs::File::open(path).map_err(|e| err(e.to_string()))?;
    let ct =
        gguf_file::Content::read(&mut file).map_err(|e| err(format!("not a GGUF file: {e}")))?;
    Ok(tokenizer_from_gguf(&ct, path)?.0)
}

impl LocalLlm {
    /// Load the default embedded model (SmolLM2-135M-Instruct).
    pub fn load_default() -> Result<LocalLlm> {
        LocalLlm::load(&crate::paths::smollm2_gguf())
    }

    /// Load any llama-family GGUF chat model with a gpt2-style tokenizer.
    pub fn load(path: &Path) -> Result<LocalLlm> {
        if !path.is_file() {
            return Err(ModelError::Missing {
                path: path.to_path_buf(),
            });
        }
        // Must be set before the first quantized matmul is built.
        if std::env::var_os("CANDLE_DEQUANTIZE_ALL").is_none() {
            // SAFETY: set once at load, before candle reads it; no other
            // thread of ours reads or writes the environment concurrently.
            unsafe { std::env::set_var("CANDLE_DEQUANTIZE_ALL", "1") };
        }
        let err = |m: String| ModelError::Load {
            path: path.to_path_buf(),
            message: m,
        };
        let mut file = std::fs::File::open(path).map_err(|e| err(e.to_string()))?;
        let ct = gguf_file::Content::read(&mut file)
            .map_err(|e| err(format!("not a GGUF file: {e}")))?;
        let (tokenizer, tokens) = tokenizer_from_gguf(&ct, path)?;
        let get_u32 = |k: &str| ct.metadata.get(k).and_then(|v| v.to_u32().ok());
        let eos = get_u32("tokenizer.ggml.eos_token_id");
        let bos = get_u32("tokenizer.ggml.bos_token_id");
        let chat_template = ct
            .metadata
            .get("tokenizer.chat_template")
            .and_then(|v| v.to_string().ok().cloned())
            .unwrap_or_default();
        let arch = ct
            .metadata
            .get("general.architecture")
            .and_then(|v| v.to_string().ok().cloned())
            .unwrap_or_else(|| "llama".into());
        let context_length = get_u32(&format!("{arch}.context_length")).unwrap_or(2048) as usize;
        let mut eos_ids: Vec<u32> = eos.into_iter().collect();
        for t in ["<|im_end|>", "<|endoftext|>", "<|eot_id|>"] {
            if let Some(i) = tokens.iter().position(|x| x == t) {
                eos_ids.push(i as u32);
            }
        }
        let tok_str = |id: Option<u32>| {
            id.and_then(|i| tokens.get(i as usize).cloned())
                .unwrap_or_default()
        };
        let (bos_token, eos_token) = (tok_str(bos), tok_str(eos));
        let model =
            ModelWeights::from_gguf(ct, &mut file, &Device::Cpu).map_err(|e| err(e.to_string()))?;
        let sha256 = file_sha256(path).map_err(|e| err(e.to_string()))?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(LocalLlm {
            model,
            tokenizer,
            eos_ids,
            chat_template,
            bos_token,
            eos_token,
            sha256,
            name,
            path: path.to_path_buf(),
            context_length,
        })
    }

    /// SHA-256 of the GGUF file: the model's id in request hashes.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// The file name, e.g. `SmolLM2-135M-Instruct.Q4_1.gguf`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Render messages with the model's chat template (falls back to ChatML
    /// when the file has none), ending with the assistant turn's opening.
    pub fn render_chat(&self, messages: &[ChatMessage]) -> Result<String> {
        if self.chat_template.is_empty() {
            let mut s = String::new();
            for m in messages {
                s.push_str(&format!(
                    "<|im_start|>{}\n{}<|im_end|>\n",
                    m.role, m.content
                ));
            }
            s.push_str("<|im_start|>assistant\n");
            return Ok(s);
        }
        let mut env = minijinja::Environment::new();
        env.add_function(
            "raise_exception",
            |msg: String| -> std::result::Result<String, minijinja::Error> {
                Err(minijinja::Error::new(
                    minijinja::ErrorKind::InvalidOperation,
                    msg,
                ))
            },
        );
        env.add_template("chat", &self.chat_template)
            .map_err(|e| ModelError::Tokenizer(format!("chat template: {e}")))?;
        let tmpl = env
            .get_template("chat")
            .map_err(|e| ModelError::Tokenizer(e.to_string()))?;
        tmpl.render(minijinja::context! {
            messages => messages,
            add_generation_prompt => true,
            bos_token => self.bos_token,
            eos_token => self.eos_token,
        })
        .map_err(|e| ModelError::Tokenizer(format!("chat template: {e}")))
    }

    /// Token ids of `text` (special tokens in the text are recognised).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        Ok(self
            .tokenizer
            .encode(text, false)
            .map_err(|e| ModelError::Tokenizer(e.to_string()))?
            .get_ids()
            .to_vec())
    }

    /// Measure prompt processing and generation separately: prefill the
    /// prompt, then decode exactly `n` tokens greedily (ignoring end of
    /// sequence). Returns (prompt tokens, prefill seconds, decode seconds).
    pub fn speed(&mut self, prompt: &str, n: usize) -> Result<(usize, f64, f64)> {
        let ids = self.encode(prompt)?;
        let dev = Device::Cpu;
        self.model.clear_kv_cache();
        let t0 = std::time::Instant::now();
        let mut logits = self
            .model
            .forward(&Tensor::new(ids.as_slice(), &dev)?.unsqueeze(0)?, 0)?;
        let prefill = t0.elapsed().as_secs_f64();
        let t1 = std::time::Instant::now();
        for i in 0..n {
            let next = logits.squeeze(0)?.argmax(0)?.to_scalar::<u32>()?;
            logits = self
                .model
                .forward(&Tensor::new(&[next], &dev)?.unsqueeze(0)?, ids.len() + i)?;
        }
        Ok((ids.len(), prefill, t1.elapsed().as_secs_f64()))
    }

    /// Greedy generation for a chat.
    pub fn chat(&mut self, messages: &[ChatMessage], settings: &GenSettings) -> Result<Generation> {
        let prompt = self.render_chat(messages)?;
        self.complete(&prompt, settings)
    }

    /// Greedy generation from a raw prompt.
    pub fn complete(&mut self, prompt: &str, settings: &GenSettings) -> Result<Generation> {
        let ids = self.encode(prompt)?;
        let budget = settings.max_tokens as usize;
        if ids.len() + budget > self.context_length {
            return Err(ModelError::Tokenizer(format!(
                "prompt of {} tokens + max_tokens {budget} exceeds the model's context of {}",
                ids.len(),
                self.context_length
            )));
        }
        let dev = Device::Cpu;
        self.model.clear_kv_cache();
        let input = Tensor::new(ids.as_slice(), &dev)?.unsqueeze(0)?;
        let mut logits = self.model.forward(&input, 0)?;
        let mut out: Vec<u32> = Vec::new();
        let mut finish = "length";
        let mut text = String::new();
        while out.len() < budget {
            let next = logits.squeeze(0)?.argmax(0)?.to_scalar::<u32>()?;
            if self.eos_ids.contains(&next) {
                finish = "stop";
                break;
            }
            out.push(next);
            text = self
                .tokenizer
                .decode(&out, true)
                .map_err(|e| ModelError::Tokenizer(e.to_string()))?;
            if apply_stop(&mut text, &settings.stop) {
                finish = "stop";
                break;
            }
            if out.len() >= budget {
                break;
            }
            let input = Tensor::new(&[next], &dev)?.unsqueeze(0)?;
            logits = self.model.forward(&input, ids.len() + out.len() - 1)?;
        }
        Ok(Generation {
            text,
            finish_reason: finish.into(),
            prompt_tokens: Some(ids.len() as u32),
            completion_tokens: Some(out.len() as u32),
            token_ids: Some(out),
            model: self.name.clone(),
        })
    }
}
