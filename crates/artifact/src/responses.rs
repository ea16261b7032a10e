//! The `responses` kind: one model call and its result per row.

use arrow::array::{
    Array, ArrayRef, Int32Array, ListArray, ListBuilder, StringArray, UInt32Builder,
};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use std::sync::Arc;

use crate::kinds::list_of;
use crate::tables::column;
use crate::{ArtifactError, Recipe, Store, Written};

/// One `responses` row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResponseRow {
    pub request_id: String,
    pub case_id: String,
    pub qid: String,
    pub condition: String,
    pub template: String,
    pub template_version: u32,
    pub backend: String,
    pub model: String,
    /// The full messages sent, as JSON.
    pub messages: String,
    /// Generation settings, as JSON.
    pub settings: String,
    pub text: Option<String>,
    pub finish_reason: Option<String>,
    pub prompt_tokens: Option<u32>,
    pub completion_tokens: Option<u32>,
    pub token_ids: Option<Vec<u32>>,
    pub attempts: u32,
    pub error: Option<String>,
}

/// responses: see schemas/responses.md.
pub fn responses_schema() -> Schema {
    let u = |n: &str, nullable| Field::new(n, DataType::Utf8, nullable);
    Schema::new(vec![
        u("request_id", false),
        u("case_id", false),
        u("qid", false),
        u("condition", false),
        u("template", false),
        Field::new("template_version", DataType::Int32, false),
        u("backend", false),
        u("model", false),
        u("messages", false),
        u("settings", false),
        u("text", true),
        u("finish_reason", true),
        Field::new("prompt_tokens", DataType::Int32, true),
        Field::new("completion_tokens", DataType::Int32, true),
        Field::new("token_ids", list_of(DataType::UInt32), true),
        Field::new("attempts", DataType::Int32, false),
        u("error", true),
    ])
}

/// Write a whole `responses` artifact, rows sorted by (case_id, request_id).
pub fn write_responses(
    store: &Store,
    recipe: &Recipe,
    mut rows: Vec<ResponseRow>,
    details: serde_json::Value,
) -> Result<Written, ArtifactError> {
    rows.sort_by(|a, b| (&a.case_id, &a.request_id).cmp(&(&b.case_id, &b.request_id)));
    let mut w = store.writer(crate::kinds::RESPONSES, recipe)?;
    for chunk in rows.chunks(2048) {
        let s = |f: fn(&ResponseRow) -> &str| -> ArrayRef {
            Arc::new(StringArray::from_iter_values(chunk.iter().map(f)))
        };
        let o = |f: fn(&ResponseRow) -> Option<&str>| -> ArrayRef {
            Arc::new(StringArray::from_iter(chunk.iter().map(f)))
        };
        let i = |f: fn(&ResponseRow) -> Option<u32>| -> ArrayRef {
            Arc::new(Int32Array::from_iter(
                chunk.iter().map(|r| f(r).map(|x| x as i32)),
            ))
        };
        let mut ids = ListBuilder::new(UInt32Builder::new());
        for r in chunk {
            match &r.token_ids {
                Some(t) => {
                    ids.values().append_slice(t);
                    ids.append(true);
                }
                None => ids.append(false),
            }
        }
        let cols: Vec<ArrayRef> = vec![
            s(|r| &r.request_id),
            s(|r| &r.case_id),
            s(|r| &r.qid),
            s(|r| &r.condition),
            s(|r| &r.template),
            Arc::new(Int32Array::from_iter_values(
                chunk.iter().map(|r| r.template_version as i32),
            )),
            s(|r| &r.backend),
            s(|r| &r.model),
            s(|r| &r.messages),
            s(|r| &r.settings),
            o(|r| r.text.as_deref()),
            o(|r| r.finish_reason.as_deref()),
            i(|r| r.prompt_tokens),
            i(|r| r.completion_tokens),
            Arc::new(ids.finish()),
            Arc::new(Int32Array::from_iter_values(
                chunk.iter().map(|r| r.attempts as i32),
            )),
            o(|r| r.error.as_deref()),
        ];
        w.write(&RecordBatch::try_new(w.schema(), cols)?)?;
    }
    w.finish(details)
}

/// Read a whole `responses` artifact.
pub fn read_responses(store: &Store, id: &str) -> Result<Vec<ResponseRow>, ArtifactError> {
    let (_, batches) = store.read_all(id)?;
    let mut out = Vec::new();
    for b in &batches {
        let s = |n: &str| column::<StringArray>(b, n);
        let i = |n: &str| column::<Int32Array>(b, n);
        let (rid, cid, qid, cond, tmpl, backend, model, msgs, settings, text, finish, error) = (
            s("request_id")?,
            s("case_id")?,
            s("qid")?,
            s("condition")?,
            s("template")?,
            s("backend")?,
            s("model")?,
            s("messages")?,
            s("settings")?,
            s("text")?,
            s("finish_reason")?,
            s("error")?,
        );
        let (tv, pt, ct, att) = (
            i("template_version")?,
            i("prompt_tokens")?,
            i("completion_tokens")?,
            i("attempts")?,
        );
        let ids = column::<ListArray>(b, "token_ids")?;
        let opt = |a: &StringArray, j: usize| (!a.is_null(j)).then(|| a.value(j).to_string());
        let opti = |a: &Int32Array, j: usize| (!a.is_null(j)).then(|| a.value(j) as u32);
        for j in 0..b.num_rows() {
            let token_ids = (!ids.is_null(j)).then(|| {
                let v = ids.value(j);
                v.as_any()
                    .downcast_ref::<arrow::array::UInt32Array>()
                    .map(|a| a.values().to_vec())
                    .unwrap_or_default()
            });
            out.push(ResponseRow {
                request_id: rid.value(j).into(),
                case_id: cid.value(j).into(),
                qid: qid.value(j).into(),
                condition: cond.value(j).into(),
                template: tmpl.value(j).into(),
                template_version: tv.value(j) as u32,
                backend: backend.value(j).into(),
                model: model.value(j).into(),
                messages: msgs.value(j).into(),
                settings: settings.value(j).into(),
                text: opt(text, j),
                finish_reason: opt(finish, j),
                prompt_tokens: opti(pt, j),
                completion_tokens: opti(ct, j),
                token_ids,
                attempts: att.value(j) as u32,
                error: opt(error, j),
            });
        }
    }
    Ok(out)
}
