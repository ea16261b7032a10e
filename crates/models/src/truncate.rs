//! Passage truncation by a model's tokenizer, as NoMIRACL's reproduction
//! script does before rendering its prompt (`max_passage_tokens`, 380 by
//! default; `truncate_response` keeps the first N tokens of
//! `title + ": " + text` and turns them back into text).
//!
//! The tokenizer is the served model's own: a `tokenizer.json` (Hugging
//! Face models ship one) or a GGUF file's. A passage of at most N tokens is
//! left byte for byte as it is (the reference's tiktoken path does the same).

use std::path::Path;
use tokenizers::Tokenizer;

use crate::llm::local::TextTokenizer;
use crate::{ModelError, Result};

/// Cuts passages to at most `max` tokens.
#[derive(Clone)]
pub struct PassageTruncator {
    tokenizer: Tokenizer,
    max: usize,
    /// SHA-256 of the tokenizer file: part of the generation recipe.
    sha256: String,
}

impl std::fmt::Debug for PassageTruncator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PassageTruncator")
            .field("max", &self.max)
            .field("tokenizer_sha256", &self.sha256)
            .finish()
    }
}

impl PassageTruncator {
    /// From a `tokenizer.json` or a `.gguf` file.
    pub fn from_file(path: &Path, max: usize) -> Result<PassageTruncator> {
        if !path.is_file() {
            return Err(ModelError::Missing {
                path: path.to_path_buf(),
            });
        }
        let sha256 = crate::paths::file_sha256(path).map_err(|_| ModelError::Missing {
            path: path.to_path_buf(),
        })?;
        let tokenizer = match crate::tokens::load_tokenizer(path)? {
            TextTokenizer::Hf(t) => *t,
            // Cutting needs each token's place in the text, which only
            // `tokenizers` reports.
            TextTokenizer::Spm(_) => {
                return Err(ModelError::Load {
                    path: path.to_path_buf(),
                    message: "a SentencePiece vocabulary (tokenizer.ggml.model = llama) cannot cut passages: give the model's tokenizer.json".into(),
                })
            }
        };
        Ok(PassageTruncator {
            tokenizer,
            max,
            sha256,
        })
    }

    /// The most tokens a passage keeps.
    pub fn max_tokens(&self) -> usize {
        self.max
    }

    /// SHA-256 of the tokenizer file, for the generation recipe.
    pub fn tokenizer_sha256(&self) -> &str {
        &self.sha256
    }

    /// The first `max` tokens of `text`, decoded; `text` itself when it is
    /// no longer than that.
    pub fn truncate(&self, text: &str) -> Result<String> {
        let enc = self
            .tokenizer
            .encode(text, false)
            .map_err(|e| ModelError::Tokenizer(e.to_string()))?;
        if enc.get_ids().len() <= self.max {
            return Ok(text.to_string());
        }
        // Cut at the character offset where token `max` starts: the kept
        // text is an exact prefix of the passage (no re-spacing by a decoder).
        let (start, _) = enc.get_offsets()[self.max];
        Ok(text[..start].trim_end().to_string())
    }
}

impl PassageTruncator {
    /// A passage's text cut so that `title + ": " + text` (the string the
    /// reference truncates; the title counts) holds at most `max` tokens.
    /// Without a title, the text alone.
    pub fn truncate_passage(&self, title: Option<&str>, text: &str) -> Result<String> {
        let Some(title) = title else {
            return self.truncate(text);
        };
        let prefix = format!("{title}: ");
        let cut = self.truncate(&format!("{prefix}{text}"))?;
        Ok(cut
            .strip_prefix(&prefix)
            .map(String::from)
            .unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_passages_are_cut_to_a_prefix_and_short_ones_kept() {
        let gguf = crate::paths::smollm2_gguf();
        if !gguf.is_file() {
            eprintln!("SKIPPED: models not fetched (run `bash scripts/fetch-models.sh`; `make test` does)");
            return;
        }
        let t = PassageTruncator::from_file(&gguf, 8).unwrap();
        let short = "Bern is a city.";
        assert_eq!(t.truncate(short).unwrap(), short);
        let long = "Albert Einstein lived in Bern while he developed his special theory of relativity in 1905.";
        let cut = t.truncate(long).unwrap();
        assert!(long.starts_with(&cut) && cut.len() < long.len(), "{cut}");
        let enc = t.tokenizer.encode(cut.as_str(), false).unwrap();
        assert!(enc.get_ids().len() <= 8, "{} tokens", enc.get_ids().len());
        assert!(PassageTruncator::from_file(Path::new("/no/such/tokenizer.json"), 8).is_err());
        // The title counts towards the limit, as in the reference.
        let with_title = t.truncate_passage(Some("Albert Einstein"), long).unwrap();
        assert!(
            long.starts_with(&with_title) && with_title.len() < cut.len(),
            "{with_title} vs {cut}"
        );
    }
}
