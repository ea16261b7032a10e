//! The `genadv` kind: the trail of each model-written perturbation.

use arrow::array::{ArrayRef, Float64Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use std::sync::Arc;

use crate::{ArtifactError, Recipe, Store, Written};

/// genadv: see schemas/genadv.md.
pub fn genadv_schema() -> Schema {
    let u = |n: &str, nullable| Field::new(n, DataType::Utf8, nullable);
    Schema::new(vec![
        u("qid", false),
        u("purpose", false),
        u("answer", false),
        u("answer_sentence", true),
        u("entities", true),
        u("rewritten_sentence", true),
        Field::new("cosine", DataType::Float64, true),
        u("foil", true),
        u("passage", true),
        u("status", false),
        u("reason", true),
    ])
}

/// One trail row (see the schema file for meanings).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GenAdvRow {
    pub qid: String,
    pub purpose: String,
    pub answer: String,
    pub answer_sentence: Option<String>,
    pub entities: Option<String>,
    pub rewritten_sentence: Option<String>,
    pub cosine: Option<f64>,
    pub foil: Option<String>,
    pub passage: Option<String>,
    pub status: String,
    pub reason: Option<String>,
}

/// Write a whole `genadv` artifact in the given order.
pub fn write_genadv(
    store: &Store,
    recipe: &Recipe,
    rows: &[GenAdvRow],
    details: serde_json::Value,
) -> Result<Written, ArtifactError> {
    let mut w = store.writer(crate::kinds::GENADV, recipe)?;
    for c in rows.chunks(4096) {
        let s = |f: fn(&GenAdvRow) -> &str| -> ArrayRef {
            Arc::new(StringArray::from_iter_values(c.iter().map(f)))
        };
        let o = |f: fn(&GenAdvRow) -> Option<&str>| -> ArrayRef {
            Arc::new(StringArray::from_iter(c.iter().map(f)))
        };
        let cols: Vec<ArrayRef> = vec![
            s(|r| &r.qid),
            s(|r| &r.purpose),
            s(|r| &r.answer),
            o(|r| r.answer_sentence.as_deref()),
            o(|r| r.entities.as_deref()),
            o(|r| r.rewritten_sentence.as_deref()),
            Arc::new(Float64Array::from_iter(c.iter().map(|r| r.cosine))),
            o(|r| r.foil.as_deref()),
            o(|r| r.passage.as_deref()),
            s(|r| &r.status),
            o(|r| r.reason.as_deref()),
        ];
        w.write(&RecordBatch::try_new(w.schema(), cols)?)?;
    }
    w.finish(details)
}
