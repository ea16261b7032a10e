//! DPR/FiD and Self-RAG records (`ctxs` streamed element by element).

use super::*;

/// DPR/Self-RAG `ctxs` kept raw by the reader ([`JsonRecords::lazy`]):
/// written element by element after [`check_dpr_ctxs`] passed, so a
/// record's memory stays a small multiple of its bytes whatever the number
/// of passages.
pub(super) fn stream_dpr_ctxs(
    run: &mut Run,
    contexts: &mut Sink<Contexts>,
    qid: &str,
    answers: &[String],
    raw: &serde_json::value::RawValue,
) -> Result<(), IngestError> {
    let mut failed: Option<IngestError> = None;
    let walked = crate::source::for_each_element(raw, |i, v| {
        let r = Obj::new(v, &format!("ctxs[{i}]"))
            .and_then(|o| dpr_ctx(i, o))
            .map_err(|e| IngestError::Usage(e.to_string()))
            .and_then(|c| emit_context(run, contexts, qid, answers, c));
        r.map_err(|e| {
            failed = Some(e);
            String::from("stopped")
        })
    });
    match (failed, walked) {
        (Some(e), _) => Err(e),
        (None, Err(m)) => Err(IngestError::Usage(m)),
        (None, Ok(())) => Ok(()),
    }
}

/// Check every element of raw `ctxs`, keeping none: a bad passage makes the
/// whole record bad before anything of it is written.
pub(super) fn check_dpr_ctxs(raw: &serde_json::value::RawValue) -> Result<(), FieldError> {
    let mut failed: Option<FieldError> = None;
    let walked = crate::source::for_each_element(raw, |i, v| {
        Obj::new(v, &format!("ctxs[{i}]"))
            .and_then(|o| dpr_ctx(i, o))
            .map(|_| ())
            .map_err(|e| {
                failed = Some(e);
                String::from("stopped")
            })
    });
    match (failed, walked) {
        (Some(e), _) => Err(e),
        (None, Err(m)) => Err(FieldError::new(
            "ctxs",
            format!("must be a list of objects ({m})"),
        )),
        (None, Ok(())) => Ok(()),
    }
}

/// DPR/FiD and Self-RAG: `{question, answers: [str], ctxs: [{id?, title,
/// text, score?, hasanswer | has_answer?}]}`. A `hasanswer` given by the
/// dataset is kept (`has_answer_source = dataset`); otherwise the DPR matcher
/// computes it.
pub(super) fn parse_dpr(mut obj: Obj) -> Result<Record, FieldError> {
    let source_id = obj.opt_id(&["id", "qid", "_id", "question_id"])?;
    let question = obj.req_str("question")?;
    let answers = obj.req_str_list("answers")?;
    let ctxs = obj.opt_obj_list("ctxs")?;
    let contexts = ctxs
        .into_iter()
        .enumerate()
        .map(|(i, c)| dpr_ctx(i, c))
        .collect::<Result<Vec<_>, _>>()?;
    let meta = obj.rest();
    Ok(Record::new(source_id, question, answers, meta, contexts))
}

/// One DPR/Self-RAG passage (`ctxs[i]`).
pub(super) fn dpr_ctx(i: usize, mut c: Obj) -> Result<ContextRow, FieldError> {
    {
        let title = c.opt_str("title")?;
        let text = match c.take("text") {
            Some(Value::String(s)) => s,
            Some(other) => {
                return Err(FieldError::new(
                    c.field_name("text"),
                    format!("must be a string, found {}", type_of(&other)),
                ))
            }
            None => return Err(FieldError::missing(c.field_name("text"))),
        };
        let doc_id = c
            .opt_id(&["id", "docid", "doc_id", "passage_id"])?
            .unwrap_or_else(|| passage_id(title.as_deref(), &text));
        let score = c.opt_f64("score")?;
        let has = c.opt_bool(&["hasanswer", "has_answer"])?;
        Ok(ContextRow {
            qid: String::new(),
            rank: i as i32 + 1,
            doc_id,
            title,
            text,
            score,
            has_answer: has,
            has_answer_source: has.map(|_| "dataset".to_string()),
            relevance: None,
            meta: c.rest(),
        })
    }
}
