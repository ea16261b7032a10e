//! The embedded generator: a GGUF model (llama, qwen2) run by
//! [`ragprobe_engine`] (continuous batching, prefix reuse, batch-invariant
//! kernels; weights kept in their GGUF blocks).
//!
//! * Tokenizer: assembled from the GGUF metadata (`tokenizer.ggml.*`):
//!   for `gpt2` files, byte-level BPE with the file's vocabulary and merges,
//!   pre-tokenised as llama.cpp does for the file's `tokenizer.ggml.pre`
//!   (smollm, qwen2, llama-bpe, gpt-2, default and their aliases; others
//!   are refused), control and user-defined tokens (types 3 and 4) as
//!   special tokens; for `llama` files, SentencePiece by scores
//!   ([`super::spm`]), as llama.cpp tokenizes them.
//! * Chat template: the file's `tokenizer.chat_template` (Jinja), rendered
//!   with minijinja, so the model's own default system prompt is kept.
//! * Decoding: greedy (argmax), so the same request gives the same output,
//!   whatever the batch size or thread count.

use ragprobe_engine::gguf::{Content, Value};
use ragprobe_engine::{BatchOptions, Model, Next, Request, Sink};

/// The engine's version: it enters the model's id in request hashes and
/// pipeline step keys, since the engine's arithmetic decides the outputs.
pub use ragprobe_engine::ENGINE_ID;
use std::path::{Path, PathBuf};
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::BPE;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::SplitDelimiterBehavior::Isolated;
use tokenizers::{AddedToken, DecoderWrapper, PreTokenizerWrapper, Tokenizer};

use super::spm::SpmTokenizer;
use super::{apply_stop, ChatMessage, GenSettings, Generation};
use crate::{ModelError, Result};

/// A loaded GGUF chat model.
pub struct LocalLlm {
    model: Model,
    prefix_entries: usize,
    tokenizer: TextTokenizer,
    eos_ids: Vec<u32>,
    chat_template: String,
    bos_token: String,
    eos_token: String,
    name: String,
    path: PathBuf,
}

impl std::fmt::Debug for LocalLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalLlm")
            .field("path", &self.path)
            .finish()
    }
}

fn meta<'a>(ct: &'a Content, key: &str, path: &Path) -> Result<&'a Value> {
    ct.metadata.get(key).ok_or_else(|| ModelError::Load {
        path: path.to_path_buf(),
        message: format!("GGUF metadata has no `{key}`"),
    })
}

fn strings(v: &Value, path: &Path, key: &str) -> Result<Vec<String>> {
    let err = |e: ragprobe_engine::EngineError| ModelError::Load {
        path: path.to_path_buf(),
        message: format!("{key}: {e}"),
    };
    v.as_array()
        .map_err(err)?
        .iter()
        .map(|x| x.as_str().map(str::to_string).map_err(err))
        .collect()
}

/// A tokenizer: byte-level BPE or a `tokenizer.json` through `tokenizers`,
/// or a GGUF file's SentencePiece vocabulary.
#[derive(Debug)]
pub enum TextTokenizer {
    /// A `tokenizers` tokenizer (a GGUF file's byte-level BPE, or a
    /// `tokenizer.json`).
    Hf(Box<Tokenizer>),
    /// A GGUF file's SentencePiece vocabulary.
    Spm(SpmTokenizer),
}

impl TextTokenizer {
    /// The ids of `text`, special tokens in it recognised, nothing added.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        match self {
            TextTokenizer::Hf(t) => Ok(t
                .encode(text, false)
                .map_err(|e| ModelError::Tokenizer(e.to_string()))?
                .get_ids()
                .to_vec()),
            TextTokenizer::Spm(t) => t.encode(text),
        }
    }

    /// The text of `ids`, special tokens left out.
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        match self {
            TextTokenizer::Hf(t) => t
                .decode(ids, true)
                .map_err(|e| ModelError::Tokenizer(e.to_string())),
            TextTokenizer::Spm(t) => Ok(t.decode(ids)),
        }
    }
}

/// The tokenizer of GGUF `tokenizer.ggml.*` metadata: `gpt2` (byte-level
/// BPE) or `llama` (SentencePiece); with the token texts by id.
fn tokenizer_from_gguf(ct: &Content, path: &Path) -> Result<(TextTokenizer, Vec<String>)> {
    let load_err = |message: String| ModelError::Load {
        path: path.into(),
        message,
    };
    let model = meta(ct, "tokenizer.ggml.model", path)?
        .as_str()
        .map_err(|e| load_err(format!("tokenizer.ggml.model: {e}")))?;
    if model != "gpt2" && model != "llama" {
        return Err(load_err(format!(
            "tokenizer model `{model}` (tokenizer.ggml.model) is not supported (supported: gpt2, llama)"
        )));
    }
    let tokens = strings(meta(ct, "tokenizer.ggml.tokens", path)?, path, "tokens")?;
    let types: Vec<i32> = match ct.metadata.get("tokenizer.ggml.token_type") {
        Some(v) => v
            .as_array()
            .map(|v| v.iter().map(|x| x.to_i32().unwrap_or(1)).collect())
            .unwrap_or_default(),
        None => vec![],
    };
    if model == "llama" {
        let scores: Vec<f32> = meta(ct, "tokenizer.ggml.scores", path)?
            .as_array()
            .map_err(|e| load_err(format!("tokenizer.ggml.scores: {e}")))?
            .iter()
            .map(|x| x.to_f32())
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| load_err(format!("tokenizer.ggml.scores: {e}")))?;
        let prefix = match ct.metadata.get("tokenizer.ggml.add_space_prefix") {
            Some(v) => v
                .to_bool()
                .map_err(|e| load_err(format!("tokenizer.ggml.add_space_prefix: {e}")))?,
            None => true,
        };
        let spm = SpmTokenizer::new(tokens.clone(), scores, types, prefix)
            .map_err(|e| load_err(e.to_string()))?;
        return Ok((TextTokenizer::Spm(spm), tokens));
    }
    let merges = strings(meta(ct, "tokenizer.ggml.merges", path)?, path, "merges")?;
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
    let pre_name = match ct.metadata.get("tokenizer.ggml.pre") {
        Some(v) => v
            .as_str()
            .map(str::to_string)
            .map_err(|e| ModelError::Load {
                path: path.into(),
                message: format!("tokenizer.ggml.pre: {e}"),
            })?,
        None => "default".to_string(),
    };
    let pre = PreTokenizer::from_gguf(&pre_name).ok_or_else(|| ModelError::Load {
        path: path.into(),
        message: format!(
            "pre-tokenizer `{pre_name}` (tokenizer.ggml.pre) is not supported (supported: {})",
            PreTokenizer::NAMES.join(", ")
        ),
    })?;
    let bpe = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .ignore_merges(pre.ignore_merges())
        .build()
        .map_err(|e| ModelError::Tokenizer(e.to_string()))?;
    let mut tok = Tokenizer::new(bpe);
    tok.with_pre_tokenizer(Some(pre.build()?));
    tok.with_decoder(Some(DecoderWrapper::ByteLevel(ByteLevelDecoder::default())));
    let special: Vec<AddedToken> = tokens
        .iter()
        .zip(types.iter())
        .filter(|(_, t)| **t == 3 || **t == 4)
        .map(|(s, _)| AddedToken::from(s.clone(), true))
        .collect();
    tok.add_special_tokens(special)
        .map_err(|e| ModelError::Tokenizer(format!("special tokens: {e}")))?;
    Ok((TextTokenizer::Hf(Box::new(tok)), tokens))
}

/// GPT-2's split (`ByteLevel`'s own regex); llama.cpp omits the last `\s+`
/// but keeps unmatched text as its own piece, which is the same split.
const GPT2_SPLIT: &str =
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";
/// Qwen2's split (llama.cpp's rewrite of the tokenizer.json regex without
/// the `(?i:)` group, which matches the same contractions).
const QWEN2_SPLIT: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Llama 3's split: as Qwen2's, with numbers in runs of up to three digits.
const LLAMA3_SPLIT: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// The byte-level BPE pre-tokenizers of llama.cpp (`llm_tokenizer_bpe` in
/// `src/llama-vocab.cpp`), chosen by `tokenizer.ggml.pre`: a sequence of
/// regex splits, each splitting the pieces of the one before with matches
/// and the text between them kept as pieces (`Isolated`), then the bytes
/// mapped to GPT-2's alphabet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PreTokenizer {
    /// `default` (and a file without the key): llama.cpp's default list.
    Default,
    /// `gpt-2` and the models llama.cpp splits like it (phi-2, mpt, olmo,
    /// jais).
    Gpt2,
    /// `smollm` (and starcoder, refact, command-r, codeshell): each digit
    /// alone, then GPT-2's split.
    Smollm,
    /// `qwen2` (and deepseek-r1-qwen, stablelm2).
    Qwen2,
    /// `llama-bpe` / `llama3` / `llama-v3`: Llama 3's split, and a word
    /// that is itself in the vocabulary is one token (`ignore_merges`).
    Llama3,
}

impl PreTokenizer {
    /// Every `tokenizer.ggml.pre` value read.
    const NAMES: &'static [&'static str] = &[
        "default",
        "gpt-2",
        "phi-2",
        "mpt",
        "olmo",
        "jais",
        "smollm",
        "starcoder",
        "refact",
        "command-r",
        "codeshell",
        "qwen2",
        "deepseek-r1-qwen",
        "stablelm2",
        "llama-bpe",
        "llama3",
        "llama-v3",
    ];

    fn from_gguf(name: &str) -> Option<PreTokenizer> {
        Some(match name {
            "default" => PreTokenizer::Default,
            "gpt-2" | "phi-2" | "mpt" | "olmo" | "jais" => PreTokenizer::Gpt2,
            "smollm" | "starcoder" | "refact" | "command-r" | "codeshell" => PreTokenizer::Smollm,
            "qwen2" | "deepseek-r1-qwen" | "stablelm2" => PreTokenizer::Qwen2,
            "llama-bpe" | "llama3" | "llama-v3" => PreTokenizer::Llama3,
            _ => return None,
        })
    }

    /// llama.cpp's `regex_exprs` for this pre-tokenizer, in order.
    fn splits(self) -> &'static [&'static str] {
        match self {
            PreTokenizer::Default => &[
                r"[\p{P}\$\+<=>\^~\|]+",
                GPT2_SPLIT,
                r"\p{N}+",
                r"[0-9][0-9][0-9]",
            ],
            PreTokenizer::Gpt2 => &[GPT2_SPLIT],
            PreTokenizer::Smollm => &[r"\p{N}", GPT2_SPLIT],
            PreTokenizer::Qwen2 => &[QWEN2_SPLIT],
            PreTokenizer::Llama3 => &[LLAMA3_SPLIT],
        }
    }

    fn ignore_merges(self) -> bool {
        self == PreTokenizer::Llama3
    }

    fn build(self) -> Result<PreTokenizerWrapper> {
        let mut steps = Vec::new();
        for re in self.splits() {
            let split = Split::new(SplitPattern::Regex(re.to_string()), Isolated, false)
                .map_err(|e| ModelError::Tokenizer(format!("pre-tokenizer regex: {e}")))?;
            steps.push(PreTokenizerWrapper::Split(split));
        }
        steps.push(PreTokenizerWrapper::ByteLevel(ByteLevel::new(
            false, true, false,
        )));
        Ok(PreTokenizerWrapper::Sequence(Sequence::new(steps)))
    }
}

/// Renders a model's Jinja chat template (`tokenizer.chat_template`) as
/// Hugging Face's `apply_chat_template` does (`transformers`
/// `_compile_jinja_template`): blocks trimmed (`trim_blocks`,
/// `lstrip_blocks`), `raise_exception` available, `messages`,
/// `add_generation_prompt = true`, `bos_token` and `eos_token` in the
/// context. `strftime_now` is left undefined on purpose, so templates that
/// date their system prompt (Llama 3.x) take their fixed fallback date and
/// the prompt, and with it the request's hash, does not change by the day.
/// Tested against jinja2 with those settings (`tests/chat_template.rs`).
pub fn render_chat_template(
    template: &str,
    messages: &[ChatMessage],
    bos_token: &str,
    eos_token: &str,
) -> Result<String> {
    let mut env = minijinja::Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.add_function(
        "raise_exception",
        |msg: String| -> std::result::Result<String, minijinja::Error> {
            Err(minijinja::Error::new(
                minijinja::ErrorKind::InvalidOperation,
                msg,
            ))
        },
    );
    env.add_template("chat", template)
        .map_err(|e| ModelError::Tokenizer(format!("chat template: {e}")))?;
    let tmpl = env
        .get_template("chat")
        .map_err(|e| ModelError::Tokenizer(e.to_string()))?;
    tmpl.render(minijinja::context! {
        messages => messages,
        add_generation_prompt => true,
        bos_token => bos_token,
        eos_token => eos_token,
    })
    .map_err(|e| ModelError::Tokenizer(format!("chat template: {e}")))
}

/// The tokenizer of a GGUF file, from its metadata alone (no weights load).
pub fn gguf_tokenizer(path: &Path) -> Result<TextTokenizer> {
    let err = |m: String| ModelError::Load {
        path: path.to_path_buf(),
        message: m,
    };
    let (_, ct) = ragprobe_engine::gguf::read_content(path).map_err(|e| err(e.to_string()))?;
    Ok(tokenizer_from_gguf(&ct, path)?.0)
}

impl LocalLlm {
    /// Load the default embedded model (SmolLM2-135M-Instruct).
    pub fn load_default() -> Result<LocalLlm> {
        LocalLlm::load(&crate::paths::smollm2_gguf())
    }

    /// Load a GGUF chat model the engine runs, with a gpt2-style tokenizer,
    /// on every core.
    pub fn load(path: &Path) -> Result<LocalLlm> {
        LocalLlm::load_with_threads(path, 0)
    }

    /// [`load`](Self::load) on `threads` threads (0 = every core).
    pub fn load_with_threads(path: &Path, threads: usize) -> Result<LocalLlm> {
        if !path.is_file() {
            return Err(ModelError::Missing {
                path: path.to_path_buf(),
            });
        }
        let err = |m: String| ModelError::Load {
            path: path.to_path_buf(),
            message: m,
        };
        let (file, ct) =
            ragprobe_engine::gguf::read_content(path).map_err(|e| err(e.to_string()))?;
        let (tokenizer, tokens) = tokenizer_from_gguf(&ct, path)?;
        let get_u32 = |k: &str| ct.metadata.get(k).and_then(|v| v.to_u32().ok());
        let eos = get_u32("tokenizer.ggml.eos_token_id");
        let bos = get_u32("tokenizer.ggml.bos_token_id");
        let chat_template = ct
            .metadata
            .get("tokenizer.chat_template")
            .and_then(|v| v.as_str().ok().map(str::to_string))
            .unwrap_or_default();
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
        let weights = ragprobe_engine::weights::Weights::from_gguf(&ct, &file)
            .map_err(|e| err(e.to_string()))?;
        let model = Model::new(weights, threads).map_err(|e| err(e.to_string()))?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(LocalLlm {
            model,
            prefix_entries: BatchOptions::default().prefix_entries,
            tokenizer,
            eos_ids,
            chat_template,
            bos_token,
            eos_token,
            name,
            path: path.to_path_buf(),
        })
    }

    /// How many recent prompts keep their KV cache for prefix reuse (0
    /// turns reuse off; outputs are the same either way).
    pub fn set_prefix_reuse(&mut self, entries: usize) {
        self.prefix_entries = entries;
    }

    /// Whether bandwidth-bound steps read the weights in their GGUF blocks
    /// (the default; outputs are identical either way, only speed differs).
    pub fn set_packed(&mut self, on: bool) {
        self.model.set_packed(on);
    }

    /// How products with quantized weights are computed
    /// ([`ragprobe_engine::Dots::Q8Generated`] by default; outputs differ
    /// between them, each is deterministic).
    pub fn set_dots(&mut self, dots: ragprobe_engine::Dots) {
        self.model.set_dots(dots);
    }

    /// The engine that runs the model (for benchmarks that drive it
    /// directly, token ids in and out).
    pub fn engine(&self) -> &Model {
        &self.model
    }

    /// The file name, e.g. `SmolLM2-135M-Instruct.Q4_1.gguf`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Render messages with the model's chat template (falls back to ChatML
    /// when the file has none), ending with the assistant turn's opening;
    /// see [`render_chat_template`].
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
        render_chat_template(
            &self.chat_template,
            messages,
            &self.bos_token,
            &self.eos_token,
        )
    }

    /// Token ids of `text` (special tokens in the text are recognised).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        self.tokenizer.encode(text)
    }

    /// Measure prompt processing and generation separately: prefill the
    /// prompt, then decode exactly `n` tokens greedily (ignoring end of
    /// sequence). Returns (prompt tokens, prefill seconds, decode seconds).
    pub fn speed(&self, prompt: &str, n: usize) -> Result<(usize, f64, f64)> {
        /// Notes when the first token came.
        struct Clock(std::time::Instant, Option<f64>);
        impl Sink for Clock {
            type Error = ();
            fn token(&mut self, _: usize, _: u32) -> Next {
                self.1.get_or_insert(self.0.elapsed().as_secs_f64());
                Next::Continue
            }
            fn done(&mut self, _: usize) -> std::result::Result<(), ()> {
                Ok(())
            }
        }
        let ids = self.encode(prompt)?;
        let mut clock = Clock(std::time::Instant::now(), None);
        let request = Request {
            prompt: &ids,
            max_tokens: n + 1,
        };
        let _ = self
            .model
            .generate(&[request], &BatchOptions::default(), &mut clock);
        let prefill = clock.1.unwrap_or_default();
        Ok((
            ids.len(),
            prefill,
            clock.0.elapsed().as_secs_f64() - prefill,
        ))
    }

    /// Greedy generation for a chat.
    pub fn chat(&self, messages: &[ChatMessage], settings: &GenSettings) -> Result<Generation> {
        let mut out = None;
        self.chat_all(&[messages], settings, 1, &mut |_, g| {
            out = Some(g);
            Ok(())
        })?;
        out.expect("one request, one answer")
    }

    /// Greedy generation from a raw prompt.
    pub fn complete(&self, prompt: &str, settings: &GenSettings) -> Result<Generation> {
        let mut out = None;
        self.complete_all(&[prompt.to_string()], settings, 1, &mut |_, g| {
            out = Some(g);
            Ok(())
        })?;
        out.expect("one request, one answer")
    }

    /// Greedy generation for every chat, `batch` sequences decoded
    /// together; `on_done(i, generation)` is called as each finishes (in
    /// any order). A request that cannot run (its prompt does not fit the
    /// context) gets its error there; an error from `on_done` ends the run.
    pub fn chat_all(
        &self,
        chats: &[&[ChatMessage]],
        settings: &GenSettings,
        batch: usize,
        on_done: &mut dyn FnMut(usize, Result<Generation>) -> Result<()>,
    ) -> Result<()> {
        let mut prompts = Vec::with_capacity(chats.len());
        let mut failed = Vec::new();
        for (i, m) in chats.iter().enumerate() {
            match self.render_chat(m) {
                Ok(p) => prompts.push(p),
                Err(e) => {
                    prompts.push(String::new());
                    failed.push((i, e));
                }
            }
        }
        for (i, e) in failed.iter().rev() {
            on_done(*i, Err(ModelError::Tokenizer(e.to_string())))?;
        }
        let skip: Vec<usize> = failed.iter().map(|(i, _)| *i).collect();
        self.run(&prompts, &skip, settings, batch, on_done)
    }

    /// [`chat_all`](Self::chat_all) for raw prompts.
    pub fn complete_all(
        &self,
        prompts: &[String],
        settings: &GenSettings,
        batch: usize,
        on_done: &mut dyn FnMut(usize, Result<Generation>) -> Result<()>,
    ) -> Result<()> {
        self.run(prompts, &[], settings, batch, on_done)
    }

    fn run(
        &self,
        prompts: &[String],
        skip: &[usize],
        settings: &GenSettings,
        batch: usize,
        on_done: &mut dyn FnMut(usize, Result<Generation>) -> Result<()>,
    ) -> Result<()> {
        let budget = settings.max_tokens as usize;
        let context = self.model.config().context_length;
        // Requests the engine runs, by index into `prompts`.
        let mut ids: Vec<Vec<u32>> = Vec::new();
        let mut index: Vec<usize> = Vec::new();
        for (i, p) in prompts.iter().enumerate() {
            if skip.contains(&i) {
                continue;
            }
            let t = match self.encode(p) {
                Ok(t) => t,
                Err(e) => {
                    on_done(i, Err(e))?;
                    continue;
                }
            };
            if t.len() + budget > context {
                on_done(
                    i,
                    Err(ModelError::Tokenizer(format!(
                        "prompt of {} tokens + max_tokens {budget} exceeds the model's context of {context}",
                        t.len()
                    ))),
                )?;
                continue;
            }
            ids.push(t);
            index.push(i);
        }
        let requests: Vec<Request> = ids
            .iter()
            .map(|t| Request {
                prompt: t,
                max_tokens: budget,
            })
            .collect();
        let mut sink = Decoder {
            llm: self,
            settings,
            index: &index,
            prompt_tokens: ids.iter().map(|t| t.len()).collect(),
            state: vec![Decoding::default(); ids.len()],
            on_done,
        };
        let opts = BatchOptions {
            batch,
            prefix_entries: self.prefix_entries,
            ..Default::default()
        };
        self.model.generate(&requests, &opts, &mut sink)
    }
}

/// One request's output so far.
#[derive(Debug, Clone, Default)]
struct Decoding {
    tokens: Vec<u32>,
    text: String,
    stopped: bool,
}

/// Turns the engine's tokens into [`Generation`]s: end-of-sequence tokens
/// and stop strings end a request.
struct Decoder<'a, 'b> {
    llm: &'a LocalLlm,
    settings: &'a GenSettings,
    index: &'a [usize],
    prompt_tokens: Vec<usize>,
    state: Vec<Decoding>,
    on_done: &'a mut (dyn FnMut(usize, Result<Generation>) -> Result<()> + 'b),
}

impl Sink for Decoder<'_, '_> {
    type Error = ModelError;

    fn token(&mut self, request: usize, token: u32) -> Next {
        let st = &mut self.state[request];
        if self.llm.eos_ids.contains(&token) {
            st.stopped = true;
            return Next::Stop;
        }
        st.tokens.push(token);
        match self.llm.tokenizer.decode(&st.tokens) {
            Ok(t) => st.text = t,
            Err(_) => return Next::Continue,
        }
        if apply_stop(&mut st.text, &self.settings.stop) {
            st.stopped = true;
            return Next::Stop;
        }
        Next::Continue
    }

    fn done(&mut self, request: usize) -> Result<()> {
        let st = std::mem::take(&mut self.state[request]);
        let g = Generation {
            text: st.text,
            finish_reason: if st.stopped { "stop" } else { "length" }.into(),
            prompt_tokens: Some(self.prompt_tokens[request] as u32),
            completion_tokens: Some(st.tokens.len() as u32),
            token_ids: Some(st.tokens),
            model: self.llm.name.clone(),
        };
        (self.on_done)(self.index[request], Ok(g))
    }
}
