//! SentencePiece tokenization of a GGUF vocabulary (`tokenizer.ggml.model =
//! "llama"`: Llama 1/2, Mistral, and the models converted from a
//! SentencePiece `tokenizer.model`), exactly as llama.cpp does it
//! (`src/llama-vocab.cpp`: `llm_tokenizer_spm_session`,
//! `tokenizer_st_partition` and the `LLAMA_VOCAB_TYPE_SPM` branch of
//! `llama_vocab::impl::tokenize`), so the ids equal llama.cpp's:
//!
//! 1. The text is cut at special tokens (unknown, control and user-defined
//!    types), longest first, each splitting every text fragment left to
//!    right.
//! 2. Each text fragment gets a leading space when it opens the text or
//!    follows a special token (if `tokenizer.ggml.add_space_prefix`, true
//!    by default), then spaces become `▁` (U+2581).
//! 3. The fragment starts as one symbol per UTF-8 character; adjacent pairs
//!    whose concatenation is a token are merged, the highest-scoring
//!    (`tokenizer.ggml.scores`) first, ties to the leftmost, until no pair
//!    forms a token.
//! 4. A symbol that is not a token is written as its bytes' `<0xXX>` tokens
//!    (byte fallback).
//!
//! Not done here (as in llama.cpp for GGUF files, which do not carry them):
//! SentencePiece's normaliser (NFKC) and per-token lstrip/rstrip flags.
//!
//! `tokenizers` has no model for this (its SentencePiece conversions build a
//! BPE from merges the GGUF file does not hold, and break ties otherwise),
//! hence this module.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

use crate::{ModelError, Result};

/// GGUF token types (`tokenizer.ggml.token_type`, llama.cpp's
/// `llama_token_type`).
const UNKNOWN: i32 = 2;
const CONTROL: i32 = 3;
const USER_DEFINED: i32 = 4;
const BYTE: i32 = 6;

/// A SentencePiece vocabulary read from a GGUF file.
#[derive(Debug, Clone)]
pub struct SpmTokenizer {
    pieces: Vec<String>,
    scores: Vec<f32>,
    types: Vec<i32>,
    /// Text to id over every token (a repeated text keeps its last id, as
    /// llama.cpp's map assignment does).
    ids: HashMap<String, u32>,
    /// Unknown, control and user-defined tokens, longest text first (equal
    /// lengths by id).
    special: Vec<u32>,
    /// The `<0xXX>` token of each byte.
    bytes: Vec<Option<u32>>,
    add_space_prefix: bool,
}

impl SpmTokenizer {
    /// A tokenizer over `pieces` with their `scores` and `types` (the
    /// `tokenizer.ggml.*` arrays, by id). `types` may be empty (every token
    /// normal) but otherwise, as `scores`, has one entry per piece.
    pub fn new(
        pieces: Vec<String>,
        scores: Vec<f32>,
        types: Vec<i32>,
        add_space_prefix: bool,
    ) -> Result<SpmTokenizer> {
        let n = pieces.len();
        if scores.len() != n {
            return Err(ModelError::Tokenizer(format!(
                "tokenizer.ggml.scores has {} entries for {n} tokens",
                scores.len()
            )));
        }
        let types = if types.is_empty() { vec![1; n] } else { types };
        if types.len() != n {
            return Err(ModelError::Tokenizer(format!(
                "tokenizer.ggml.token_type has {} entries for {n} tokens",
                types.len()
            )));
        }
        let ids: HashMap<String, u32> = pieces
            .iter()
            .enumerate()
            .map(|(i, p)| (p.clone(), i as u32))
            .collect();
        let mut special: Vec<u32> = (0..n as u32)
            .filter(|&i| matches!(types[i as usize], UNKNOWN | CONTROL | USER_DEFINED))
            .filter(|&i| !pieces[i as usize].is_empty())
            .collect();
        special.sort_by(|&a, &b| pieces[b as usize].len().cmp(&pieces[a as usize].len()));
        let bytes = (0..=255u8)
            .map(|b| {
                ids.get(&format!("<0x{b:02X}>"))
                    .copied()
                    .or_else(|| ids.get(&char::from(b).to_string()).copied())
            })
            .collect();
        Ok(SpmTokenizer {
            pieces,
            scores,
            types,
            ids,
            special,
            bytes,
            add_space_prefix,
        })
    }

    /// The ids of `text`, special tokens in it recognised, no BOS added
    /// (chat templates write their own).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let mut out = Vec::new();
        let mut prev_special = true;
        for frag in self.partition(text) {
            match frag {
                Fragment::Token(id) => {
                    out.push(id);
                    prev_special = true;
                }
                Fragment::Text(a, b) => {
                    let mut s = String::with_capacity(b - a + 4);
                    if self.add_space_prefix && prev_special {
                        s.push(' ');
                    }
                    s.push_str(&text[a..b]);
                    self.tokenize_fragment(&s.replace(' ', "\u{2581}"), &mut out)?;
                    prev_special = false;
                }
            }
        }
        Ok(out)
    }

    /// The text of `ids`, as llama.cpp detokenizes without special tokens:
    /// normal tokens with `▁` as spaces, byte tokens as their byte,
    /// user-defined tokens as written, unknown and control tokens dropped,
    /// and (with the space prefix) the first piece's leading space removed.
    /// Bytes that are not UTF-8 (a character cut by the end) show as U+FFFD.
    pub fn decode(&self, ids: &[u32]) -> String {
        let mut out: Vec<u8> = Vec::new();
        let mut strip = self.add_space_prefix;
        for &id in ids {
            let Some(piece) = self.pieces.get(id as usize) else {
                continue;
            };
            let start = out.len();
            match self.types[id as usize] {
                UNKNOWN | CONTROL => {}
                USER_DEFINED => out.extend_from_slice(piece.as_bytes()),
                BYTE => match byte_of(piece) {
                    Some(b) => out.push(b),
                    None => out.extend_from_slice(piece.as_bytes()),
                },
                _ => out.extend_from_slice(piece.replace('\u{2581}', " ").as_bytes()),
            }
            if strip {
                if out.get(start) == Some(&b' ') {
                    out.remove(start);
                }
                strip = false;
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    /// The text cut at special tokens: each special token, longest first,
    /// splits every text fragment at its occurrences, left to right.
    fn partition(&self, text: &str) -> Vec<Fragment> {
        if text.is_empty() {
            return Vec::new();
        }
        let mut frags = vec![Fragment::Text(0, text.len())];
        for &id in &self.special {
            let needle = self.pieces[id as usize].as_str();
            let mut next = Vec::with_capacity(frags.len());
            for f in frags {
                let Fragment::Text(mut a, b) = f else {
                    next.push(f);
                    continue;
                };
                while let Some(at) = text[a..b].find(needle) {
                    let at = a + at;
                    if at > a {
                        next.push(Fragment::Text(a, at));
                    }
                    next.push(Fragment::Token(id));
                    a = at + needle.len();
                }
                if a < b {
                    next.push(Fragment::Text(a, b));
                }
            }
            frags = next;
        }
        frags
    }

    /// One fragment (spaces already `▁`) by score-ordered pair merges.
    fn tokenize_fragment(&self, text: &str, out: &mut Vec<u32>) -> Result<()> {
        let mut syms: Vec<Symbol> = Vec::new();
        for (i, (at, c)) in text.char_indices().enumerate() {
            syms.push(Symbol {
                prev: i as isize - 1,
                next: if at + c.len_utf8() == text.len() {
                    -1
                } else {
                    i as isize + 1
                },
                start: at,
                len: c.len_utf8(),
            });
        }
        let mut queue = BinaryHeap::new();
        let mut rev_merge: HashMap<&str, (usize, usize)> = HashMap::new();
        for i in 1..syms.len() {
            self.try_add(
                text,
                &syms,
                &mut queue,
                &mut rev_merge,
                i as isize - 1,
                i as isize,
            );
        }
        while let Some(bg) = queue.pop() {
            let (l, r) = (syms[bg.left], syms[bg.right]);
            if l.len == 0 || r.len == 0 || l.len + r.len != bg.size {
                continue;
            }
            syms[bg.left].len += r.len;
            syms[bg.right].len = 0;
            syms[bg.left].next = r.next;
            if r.next >= 0 {
                syms[r.next as usize].prev = bg.left as isize;
            }
            let prev = syms[bg.left].prev;
            let next = syms[bg.left].next;
            self.try_add(
                text,
                &syms,
                &mut queue,
                &mut rev_merge,
                prev,
                bg.left as isize,
            );
            self.try_add(
                text,
                &syms,
                &mut queue,
                &mut rev_merge,
                bg.left as isize,
                next,
            );
        }
        let mut i: isize = if syms.is_empty() { -1 } else { 0 };
        while i >= 0 {
            self.resegment(text, &syms, &rev_merge, i as usize, out)?;
            i = syms[i as usize].next;
        }
        Ok(())
    }

    /// Proposes merging symbols `left` and `right` when their text is a
    /// token (llama.cpp's `try_add_bigram`).
    fn try_add<'t>(
        &self,
        text: &'t str,
        syms: &[Symbol],
        queue: &mut BinaryHeap<Bigram>,
        rev_merge: &mut HashMap<&'t str, (usize, usize)>,
        left: isize,
        right: isize,
    ) {
        if left < 0 || right < 0 {
            return;
        }
        let (l, r) = (&syms[left as usize], &syms[right as usize]);
        let piece = &text[l.start..l.start + l.len + r.len];
        let Some(&id) = self.ids.get(piece) else {
            return;
        };
        queue.push(Bigram {
            left: left as usize,
            right: right as usize,
            score: self.scores[id as usize],
            size: piece.len(),
        });
        rev_merge.insert(piece, (left as usize, right as usize));
    }

    /// A final symbol's ids: its token, else the pair it was merged from,
    /// else its bytes.
    fn resegment(
        &self,
        text: &str,
        syms: &[Symbol],
        rev_merge: &HashMap<&str, (usize, usize)>,
        i: usize,
        out: &mut Vec<u32>,
    ) -> Result<()> {
        let s = syms[i];
        let piece = &text[s.start..s.start + s.len];
        if let Some(&id) = self.ids.get(piece) {
            out.push(id);
            return Ok(());
        }
        if let Some(&(l, r)) = rev_merge.get(piece) {
            self.resegment(text, syms, rev_merge, l, out)?;
            return self.resegment(text, syms, rev_merge, r, out);
        }
        for &b in piece.as_bytes() {
            let id = self.bytes[b as usize].ok_or_else(|| {
                ModelError::Tokenizer(format!(
                    "the vocabulary has no token for byte 0x{b:02X} (no <0x{b:02X}> byte token)"
                ))
            })?;
            out.push(id);
        }
        Ok(())
    }
}

/// The byte of a `<0xXX>` token.
fn byte_of(piece: &str) -> Option<u8> {
    let hex = piece.strip_prefix("<0x")?.strip_suffix('>')?;
    u8::from_str_radix(hex, 16).ok()
}

/// A piece of the text between special tokens, or a special token.
#[derive(Debug, Clone, Copy)]
enum Fragment {
    /// Byte range of the text.
    Text(usize, usize),
    Token(u32),
}

/// A run of the fragment: `len` 0 once merged into its left neighbour.
#[derive(Debug, Clone, Copy)]
struct Symbol {
    prev: isize,
    next: isize,
    start: usize,
    len: usize,
}

/// A candidate merge of two adjacent symbols.
#[derive(Debug, Clone, Copy)]
struct Bigram {
    left: usize,
    right: usize,
    score: f32,
    /// The merged text's length when proposed (stale once either side grew).
    size: usize,
}

impl PartialEq for Bigram {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Bigram {}
impl PartialOrd for Bigram {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Bigram {
    /// The heap pops the greatest: the higher score, then the leftmost
    /// (llama.cpp's `llm_bigram_spm::comparator`).
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .partial_cmp(&other.score)
            .unwrap_or(Ordering::Equal)
            .then_with(|| other.left.cmp(&self.left))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab(pieces: &[(&str, f32, i32)], prefix: bool) -> SpmTokenizer {
        SpmTokenizer::new(
            pieces.iter().map(|p| p.0.to_string()).collect(),
            pieces.iter().map(|p| p.1).collect(),
            pieces.iter().map(|p| p.2).collect(),
            prefix,
        )
        .unwrap()
    }

    /// Worked example: "▁ab" merges `ab` (score -1) before `▁a` (-2), so
    /// the result is ▁ + ab; a tie goes to the left pair.
    #[test]
    fn the_highest_score_merges_first_and_ties_go_left() {
        let mut p: Vec<(String, f32, i32)> =
            vec![("<unk>".into(), 0.0, UNKNOWN), ("<s>".into(), 0.0, CONTROL)];
        for b in 0..=255u8 {
            p.push((format!("<0x{b:02X}>"), 0.0, BYTE));
        }
        for (t, s) in [
            ("▁", -5.0),
            ("a", -5.0),
            ("b", -5.0),
            ("ab", -1.0),
            ("▁a", -2.0),
            ("x", -5.0),
            ("y", -5.0),
            ("xy", -3.0),
            ("yx", -3.0),
        ] {
            p.push((t.into(), s, 1));
        }
        let refs: Vec<(&str, f32, i32)> = p.iter().map(|(a, b, c)| (a.as_str(), *b, *c)).collect();
        let t = vocab(&refs, true);
        let id = |s: &str| t.ids[s];
        assert_eq!(t.encode("ab").unwrap(), vec![id("▁"), id("ab")]);
        // "aa": no "aa" token; "▁a" then "a".
        assert_eq!(t.encode("aa").unwrap(), vec![id("▁a"), id("a")]);
        // A character outside the vocabulary falls back to its bytes.
        assert_eq!(
            t.encode("é").unwrap(),
            vec![id("▁"), id("<0xC3>"), id("<0xA9>")]
        );
        // A special token cuts the text; the text after it gets the prefix.
        assert_eq!(
            t.encode("<s>ab").unwrap(),
            vec![id("<s>"), id("▁"), id("ab")]
        );
        assert_eq!(t.decode(&t.encode("ab é").unwrap()), "ab é");
        let t = vocab(&refs, false);
        let id = |s: &str| t.ids[s];
        assert_eq!(t.encode("ab").unwrap(), vec![id("ab")]);
        // Equal scores: the left pair merges first.
        assert_eq!(t.encode("xyx").unwrap(), vec![id("xy"), id("x")]);
        assert_eq!(t.encode("yxy").unwrap(), vec![id("yx"), id("y")]);
    }

    #[test]
    fn a_missing_byte_token_is_an_error_naming_the_byte() {
        let t = vocab(&[("<unk>", 0.0, UNKNOWN), ("a", 0.0, 1)], false);
        let e = t.encode("aé").unwrap_err().to_string();
        assert!(e.contains("0xC3"), "{e}");
    }
}
