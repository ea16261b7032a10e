//! `corpus`: one row per passage.

use crate::column::Column;
use crate::kind::Kind;

/// The `corpus` kind.
pub struct Corpus;

/// One `corpus` row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CorpusRow {
    /// Passage id from the source.
    pub doc_id: String,
    /// Passage title (the article title for Wikipedia passages).
    pub title: Option<String>,
    /// Passage text.
    pub text: String,
    /// Unmapped source fields as canonical JSON.
    pub meta: Option<String>,
}

impl Kind for Corpus {
    const NAME: &'static str = "corpus";
    const VERSION: u32 = 1;
    type Row = CorpusRow;
    fn columns() -> Vec<Column<CorpusRow>> {
        type R = CorpusRow;
        vec![
            Column::utf8("doc_id", |r: &R| &r.doc_id, |r, v| r.doc_id = v),
            Column::opt_utf8("title", |r: &R| r.title.as_deref(), |r, v| r.title = v),
            Column::utf8("text", |r: &R| &r.text, |r, v| r.text = v),
            Column::opt_utf8("meta", |r: &R| r.meta.as_deref(), |r, v| r.meta = v),
        ]
    }
}
