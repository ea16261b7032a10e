//! Answer matching shared by every stage.
//!
//! Deciding whether a text "contains the answer" happens in ingest and
//! retrieve (`has_answer` of a passage), perturb (leak filters) and score
//! (accuracy of a response). It lives here, once, as pure functions.
//!
//! * [`squad`]: SQuAD v1.1 answer normalisation, exact match, token F1, and
//!   the studies' *accuracy* (normalised gold alias is a substring of the
//!   normalised prediction; seed 000 §4.2, following Mallen et al. 2023).
//! * [`dpr`]: the DPR `has_answer` token matcher (Karpukhin et al. 2020,
//!   `dpr/utils/tokenizers.py::SimpleTokenizer` + `has_answer`).
//! * [`mcq`]: multiple-choice answers (letter, text, both, several) and
//!   normalisation for scripts without spaces (Chinese).
//! * [`parse`]: the shared response labels (unanswerable, conflict) and the
//!   parsing mode; a study's own parsers are in its folder
//!   (`ragprobe_studies`).

pub mod dpr;
pub mod mcq;
pub mod parse;
pub mod squad;

pub use dpr::{has_answer, DprTokenizer};
pub use squad::{
    accuracy, exact_match, f1, normalize_answer, normalize_into, overlap_f1, squad_scores,
    squad_scores_normalized, token_f1,
};
