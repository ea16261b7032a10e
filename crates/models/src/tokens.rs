//! Prompt tokens counted before a run, for `run --dry-run`'s estimate of
//! what a generate step will send. Three ways, best first: the embedded
//! model's own chat template and tokenizer (exactly the prompt tokens the
//! engine reports); a given tokenizer (`tokenizer.json` or a GGUF file's)
//! over the messages' text, the server's chat template not counted; or
//! OpenAI's rule of thumb, a token per 4 characters.

use std::path::Path;
use tokenizers::Tokenizer;

use crate::llm::local::{gguf_tokenizer, LocalLlm, TextTokenizer};
use crate::llm::ChatMessage;
use crate::{ModelError, Result};

/// The tokenizer of a `tokenizer.json` (Hugging Face models ship one) or of
/// a `.gguf` file (from its metadata alone, no weights loaded).
pub fn load_tokenizer(path: &Path) -> Result<TextTokenizer> {
    if !path.is_file() {
        return Err(ModelError::Missing {
            path: path.to_path_buf(),
        });
    }
    if path.extension().is_some_and(|e| e == "gguf") {
        return gguf_tokenizer(path);
    }
    let t = Tokenizer::from_file(path).map_err(|e| ModelError::Load {
        path: path.to_path_buf(),
        message: format!("not a tokenizer.json: {e}"),
    })?;
    Ok(TextTokenizer::Hf(Box::new(t)))
}

/// Counts the prompt tokens of a request's messages.
pub enum TokenCounter {
    /// The embedded model: its chat template rendered, then tokenized.
    Embedded(Box<LocalLlm>),
    /// A tokenizer over the messages' text (no chat template).
    Tokenizer(Box<TextTokenizer>),
    /// A token per 4 characters of the messages' text, rounded up.
    Approx,
}

impl TokenCounter {
    /// The embedded model at `gguf` (loaded: its template and tokenizer).
    pub fn embedded(gguf: &Path) -> Result<TokenCounter> {
        Ok(TokenCounter::Embedded(Box::new(
            LocalLlm::load_with_threads(gguf, 1)?,
        )))
    }

    /// A `tokenizer.json` or a `.gguf` file's tokenizer ([`load_tokenizer`]).
    pub fn from_file(path: &Path) -> Result<TokenCounter> {
        Ok(TokenCounter::Tokenizer(Box::new(load_tokenizer(path)?)))
    }

    /// Whether the count is the prompt tokens the model will see (only the
    /// embedded model's is; a tokenizer's misses the chat template's few
    /// tokens a message).
    pub fn is_exact(&self) -> bool {
        matches!(self, TokenCounter::Embedded(_))
    }

    /// How the count is made, in a few words (for the estimate's header).
    pub fn describe(&self) -> &'static str {
        match self {
            TokenCounter::Embedded(_) => {
                "the embedded model's chat template and tokenizer (exact)"
            }
            TokenCounter::Tokenizer(_) => {
                "the given tokenizer over the messages' text (the chat template's tokens not counted)"
            }
            TokenCounter::Approx => {
                "~ = 4 characters a token (pass --tokenizer for the served model's count)"
            }
        }
    }

    /// The prompt tokens of one request's `messages`.
    pub fn count(&self, messages: &[ChatMessage]) -> Result<u64> {
        match self {
            TokenCounter::Embedded(m) => Ok(m.encode(&m.render_chat(messages)?)?.len() as u64),
            TokenCounter::Tokenizer(t) => messages
                .iter()
                .try_fold(0u64, |n, m| Ok(n + t.encode(&m.content)?.len() as u64)),
            TokenCounter::Approx => Ok(messages
                .iter()
                .map(|m| m.content.chars().count().div_ceil(4) as u64)
                .sum()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_of_thumb_rounds_each_message_up() {
        let msgs = [
            ChatMessage::new("system", "abcde"),
            ChatMessage::new("user", "ab"),
        ];
        // ceil(5 / 4) + ceil(2 / 4)
        assert_eq!(TokenCounter::Approx.count(&msgs).unwrap(), 3);
        assert!(!TokenCounter::Approx.is_exact());
    }

    /// The embedded count is the engine's own prompt length: the rendered
    /// template's tokens, which a tokenizer over the text alone undercounts.
    #[test]
    fn the_embedded_count_includes_the_chat_template() {
        let gguf = crate::paths::smollm2_gguf();
        if !gguf.is_file() {
            eprintln!("SKIPPED: models not fetched (run `bash scripts/fetch-models.sh`; `make test` does)");
            return;
        }
        let msgs = [ChatMessage::new("user", "Where is Bern?")];
        let e = TokenCounter::embedded(&gguf).unwrap();
        let t = TokenCounter::from_file(&gguf).unwrap();
        let m = LocalLlm::load_with_threads(&gguf, 1).unwrap();
        let want = m.encode(&m.render_chat(&msgs).unwrap()).unwrap().len() as u64;
        assert_eq!(e.count(&msgs).unwrap(), want);
        let text_only = t.count(&msgs).unwrap();
        assert!(text_only > 0 && text_only < want, "{text_only} < {want}");
    }
}
