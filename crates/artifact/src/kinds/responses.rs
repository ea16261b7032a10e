//! `responses`: one model call and its result per row.

use crate::column::Column;
use crate::kind::Kind;

/// The `responses` kind.
pub struct Responses;

/// One `responses` row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResponseRow {
    /// SHA-256 of the canonical request (backend, model, template, messages, settings).
    pub request_id: String,
    /// The case (`cases.case_id`).
    pub case_id: String,
    /// The question.
    pub qid: String,
    /// The case's condition (copied for convenience).
    pub condition: String,
    /// Prompt template id.
    pub template: String,
    /// Prompt template version.
    pub template_version: u32,
    /// `local` (embedded GGUF) or `openai` (OpenAI-compatible server).
    pub backend: String,
    /// The model: GGUF file name + `@sha256:` hash, or the served model id.
    pub model: String,
    /// The full messages sent, as JSON.
    pub messages: String,
    /// Generation settings, as JSON.
    pub settings: String,
    /// The raw response text; None when the request failed.
    pub text: Option<String>,
    /// `stop` or `length`.
    pub finish_reason: Option<String>,
    /// Prompt tokens, where the backend reports them.
    pub prompt_tokens: Option<u32>,
    /// Completion tokens, where the backend reports them.
    pub completion_tokens: Option<u32>,
    /// Generated token ids (embedded backend).
    pub token_ids: Option<Vec<u32>>,
    /// HTTP attempts made (1 for the embedded backend).
    pub attempts: u32,
    /// The final error after all retries; such rows are left out of every score denominator.
    pub error: Option<String>,
}

impl Kind for Responses {
    const NAME: &'static str = "responses";
    const VERSION: u32 = 1;
    type Row = ResponseRow;
    // Counts are stored as int32 (the schema predates unsigned columns).
    fn columns() -> Vec<Column<ResponseRow>> {
        type R = ResponseRow;
        vec![
            Column::utf8("request_id", |r: &R| &r.request_id, |r, v| r.request_id = v),
            Column::utf8("case_id", |r: &R| &r.case_id, |r, v| r.case_id = v),
            Column::utf8("qid", |r: &R| &r.qid, |r, v| r.qid = v),
            Column::utf8("condition", |r: &R| &r.condition, |r, v| r.condition = v),
            Column::utf8("template", |r: &R| &r.template, |r, v| r.template = v),
            Column::int32(
                "template_version",
                |r: &R| r.template_version as i32,
                |r, v| r.template_version = v as u32,
            ),
            Column::utf8("backend", |r: &R| &r.backend, |r, v| r.backend = v),
            Column::utf8("model", |r: &R| &r.model, |r, v| r.model = v),
            Column::utf8("messages", |r: &R| &r.messages, |r, v| r.messages = v),
            Column::utf8("settings", |r: &R| &r.settings, |r, v| r.settings = v),
            Column::opt_utf8("text", |r: &R| r.text.as_deref(), |r, v| r.text = v),
            Column::opt_utf8(
                "finish_reason",
                |r: &R| r.finish_reason.as_deref(),
                |r, v| r.finish_reason = v,
            ),
            Column::opt_int32(
                "prompt_tokens",
                |r: &R| r.prompt_tokens.map(|x| x as i32),
                |r, v| r.prompt_tokens = v.map(|x| x as u32),
            ),
            Column::opt_int32(
                "completion_tokens",
                |r: &R| r.completion_tokens.map(|x| x as i32),
                |r, v| r.completion_tokens = v.map(|x| x as u32),
            ),
            Column::u32_list(
                "token_ids",
                |r: &R| r.token_ids.as_deref(),
                |r, v| r.token_ids = v,
            ),
            Column::int32(
                "attempts",
                |r: &R| r.attempts as i32,
                |r, v| r.attempts = v as u32,
            ),
            Column::opt_utf8("error", |r: &R| r.error.as_deref(), |r, v| r.error = v),
        ]
    }
    /// (case_id, request_id).
    fn sort(rows: &mut [ResponseRow]) {
        rows.sort_by(|a, b| (&a.case_id, &a.request_id).cmp(&(&b.case_id, &b.request_id)));
    }
}
