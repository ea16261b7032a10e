//! `genadv`: the trail of each model-written perturbation.

use crate::column::Column;
use crate::domain::GenAdvStatus;
use crate::kind::Kind;

/// The `genadv` kind.
pub struct GenAdv;

/// One trail row (see `schemas/genadv.md` for meanings).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GenAdvRow {
    /// The question.
    pub qid: String,
    /// Why the passage was written: `genadv` or `conflict`.
    pub purpose: String,
    /// The gold answer used (the first alias).
    pub answer: String,
    /// Step 1: the model's sentence stating the answer.
    pub answer_sentence: Option<String>,
    /// Step 2: the entities found in it, as a JSON list.
    pub entities: Option<String>,
    /// Step 3: the adversarial sentence, or the sentence with the answer replaced by the foil.
    pub rewritten_sentence: Option<String>,
    /// MiniLM cosine of the adversarial sentence with the answer sentence.
    pub cosine: Option<f64>,
    /// The foil (conflict passages).
    pub foil: Option<String>,
    /// Step 5: the written passage.
    pub passage: Option<String>,
    /// How it ended: accepted, dropped, rejected or failed.
    pub status: GenAdvStatus,
    /// Why it was not accepted.
    pub reason: Option<String>,
}

impl Kind for GenAdv {
    const NAME: &'static str = "genadv";
    const VERSION: u32 = 1;
    type Row = GenAdvRow;
    fn columns() -> Vec<Column<GenAdvRow>> {
        type R = GenAdvRow;
        vec![
            Column::utf8("qid", |r: &R| &r.qid, |r, v| r.qid = v),
            Column::utf8("purpose", |r: &R| &r.purpose, |r, v| r.purpose = v),
            Column::utf8("answer", |r: &R| &r.answer, |r, v| r.answer = v),
            Column::opt_utf8(
                "answer_sentence",
                |r: &R| r.answer_sentence.as_deref(),
                |r, v| r.answer_sentence = v,
            ),
            Column::opt_utf8(
                "entities",
                |r: &R| r.entities.as_deref(),
                |r, v| r.entities = v,
            ),
            Column::opt_utf8(
                "rewritten_sentence",
                |r: &R| r.rewritten_sentence.as_deref(),
                |r, v| r.rewritten_sentence = v,
            ),
            Column::opt_float64("cosine", |r: &R| r.cosine, |r, v| r.cosine = v),
            Column::opt_utf8("foil", |r: &R| r.foil.as_deref(), |r, v| r.foil = v),
            Column::opt_utf8(
                "passage",
                |r: &R| r.passage.as_deref(),
                |r, v| r.passage = v,
            ),
            Column::vocab("status", |r: &R| r.status, |r, v| r.status = v),
            Column::opt_utf8("reason", |r: &R| r.reason.as_deref(), |r, v| r.reason = v),
        ]
    }
}
