//! `contexts`: one row per (question, passage) pair, ranked.

use crate::column::Column;
use crate::kind::Kind;

/// The `contexts` kind.
pub struct Contexts;

/// One `contexts` row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContextRow {
    /// The question (`questions.qid`).
    pub qid: String,
    /// 1-based rank of the passage for this question.
    pub rank: i32,
    /// Passage id: the source's, else `h` + 16 hex digits of SHA-256(title, text).
    pub doc_id: String,
    /// Passage title.
    pub title: Option<String>,
    /// Passage text.
    pub text: String,
    /// Retrieval score from the source or the retriever.
    pub score: Option<f64>,
    /// Whether the passage contains a gold answer.
    pub has_answer: Option<bool>,
    /// Where `has_answer` came from: `dataset`, `computed` or `relevance`; None when unknown.
    pub has_answer_source: Option<String>,
    /// Human relevance label where the dataset has one (`relevant`, `non_relevant`, `counterfactual`).
    pub relevance: Option<String>,
    /// Unmapped passage fields as canonical JSON.
    pub meta: Option<String>,
}

impl Kind for Contexts {
    const NAME: &'static str = "contexts";
    const VERSION: u32 = 1;
    type Row = ContextRow;
    fn columns() -> Vec<Column<ContextRow>> {
        type R = ContextRow;
        vec![
            Column::utf8("qid", |r: &R| &r.qid, |r, v| r.qid = v),
            Column::int32("rank", |r: &R| r.rank, |r, v| r.rank = v),
            Column::utf8("doc_id", |r: &R| &r.doc_id, |r, v| r.doc_id = v),
            Column::opt_utf8("title", |r: &R| r.title.as_deref(), |r, v| r.title = v),
            Column::utf8("text", |r: &R| &r.text, |r, v| r.text = v),
            Column::opt_float64("score", |r: &R| r.score, |r, v| r.score = v),
            Column::opt_bool("has_answer", |r: &R| r.has_answer, |r, v| r.has_answer = v),
            Column::opt_utf8(
                "has_answer_source",
                |r: &R| r.has_answer_source.as_deref(),
                |r, v| r.has_answer_source = v,
            ),
            Column::opt_utf8(
                "relevance",
                |r: &R| r.relevance.as_deref(),
                |r, v| r.relevance = v,
            ),
            Column::opt_utf8("meta", |r: &R| r.meta.as_deref(), |r, v| r.meta = v),
        ]
    }
}
