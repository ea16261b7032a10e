//! Question-with-passages formats: DPR/FiD, Self-RAG (PopQA), NoMIRACL, RGB.
//! Each record gives one `questions` row and its `contexts` rows.

use ragprobe_artifact::Written;
use ragprobe_matching::has_answer;
use serde_json::Value;
use std::path::Path;

use crate::error::{FieldError, IngestError};
use crate::fields::{str_list, type_of, Obj};
use ragprobe_artifact::tables::{ContextRow, ContextSink, QuestionRow, QuestionSink};
use crate::source::{open, JsonRecords};
use crate::{passage_id, Format, Run};

/// A record taken apart, before the qid is assigned.
struct Parsed {
    source_id: Option<String>,
    question: String,
    answers: Vec<String>,
    answer_parts: Option<Vec<Vec<String>>>,
    fake_answers: Option<Vec<String>>,
    subset: Option<String>,
    meta: Option<String>,
    /// Contexts with `qid` left empty; `rank` is their order.
    contexts: Vec<ContextRow>,
}

/// Language code from a NoMIRACL-style file name (`de.dev.jsonl`, `sw-test.jsonl`).
fn lang_from_file_name(path: &Path) -> Option<String> {
    let stem = crate::dataset_stem(path);
    let first = stem.split(['.', '-', '_']).next()?;
    (first.len() == 2 || first.len() == 3).then(|| first.to_string()).filter(|s| s.chars().all(|c| c.is_ascii_lowercase()))
}

pub fn run(run: &mut Run, format: Format) -> Result<Vec<Written>, IngestError> {
    let mut questions = QuestionSink::new(run.store, &run.recipe)?;
    let mut contexts = ContextSink::new(run.store, &run.recipe)?;
    for path in run.opts.paths.clone() {
        let dataset = run.dataset_for(&path);
        let file_lang = if format == Format::Nomiracl { lang_from_file_name(&path) } else { None };
        let (reader, bar) = open(&path, run.opts.progress)?;
        let file = path.display().to_string();
        for rec in JsonRecords::new(&path, reader) {
            let rec = match rec {
                Ok(r) => r,
                Err(e) => {
                    run.skipper.handle(e)?;
                    continue;
                }
            };
            run.records += 1;
            let parsed = Obj::new(rec.value, "").and_then(|obj| match format {
                Format::Dpr | Format::Selfrag => parse_dpr(obj),
                Format::Nomiracl => parse_nomiracl(obj, run.opts.subset.as_deref()),
                Format::Rgb => parse_rgb(obj),
                Format::Beir | Format::Table => unreachable!("not a QA-with-passages format"),
            });
            let mut p = match parsed {
                Ok(p) => p,
                Err(fe) => {
                    run.skipper.handle(IngestError::Record { file: file.clone(), line: rec.line, message: fe.to_string() })?;
                    continue;
                }
            };
            let qid = run.qids.assign(&dataset, p.source_id.as_deref(), &p.question);
            let lang = run.lang_for(file_lang.as_deref(), &p.question);
            for c in &mut p.contexts {
                c.qid = qid.clone();
                if c.has_answer.is_none() && !p.answers.is_empty() {
                    c.has_answer = Some(has_answer(&p.answers, &c.text));
                    c.has_answer_source = Some("computed".into());
                }
                match c.has_answer_source.as_deref() {
                    Some("dataset") => run.has_answer_dataset += 1,
                    Some("computed") => run.has_answer_computed += 1,
                    _ => {}
                }
                contexts.push(c)?;
            }
            questions.push(&QuestionRow {
                qid,
                dataset: dataset.clone(),
                split: run.opts.split.clone(),
                lang,
                question: p.question,
                answers: p.answers,
                answer_parts: p.answer_parts,
                fake_answers: p.fake_answers,
                subset: p.subset,
                meta: p.meta,
            })?;
        }
        bar.finish_and_clear();
    }
    if questions.rows() == 0 {
        return Err(IngestError::Usage(format!(
            "no valid records in {} ({} skipped)",
            run.opts.paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
            run.skipper.skipped
        )));
    }
    let details = run.details();
    Ok(vec![questions.finish(details.clone())?, contexts.finish(details)?])
}

/// DPR/FiD and Self-RAG: `{question, answers: [str], ctxs: [{id?, title,
/// text, score?, hasanswer | has_answer?}]}`. A `hasanswer` given by the
/// dataset is kept (`has_answer_source = dataset`); otherwise the DPR matcher
/// computes it.
fn parse_dpr(mut obj: Obj) -> Result<Parsed, FieldError> {
    let source_id = obj.opt_id(&["id", "qid", "_id", "question_id"])?;
    let question = obj.req_str("question")?;
    let answers = obj.req_str_list("answers")?;
    let ctxs = obj.opt_obj_list("ctxs")?;
    let mut contexts = Vec::with_capacity(ctxs.len());
    for (i, mut c) in ctxs.into_iter().enumerate() {
        let title = c.opt_str("title")?;
        let text = match c.take("text") {
            Some(Value::String(s)) => s,
            Some(other) => return Err(FieldError::new(c.field_name("text"), format!("must be a string, found {}", type_of(&other)))),
            None => return Err(FieldError::missing(c.field_name("text"))),
        };
        let doc_id = c.opt_id(&["id", "docid", "doc_id", "passage_id"])?.unwrap_or_else(|| passage_id(title.as_deref(), &text));
        let score = c.opt_f64("score")?;
        let has = c.opt_bool(&["hasanswer", "has_answer"])?;
        contexts.push(ContextRow {
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
        });
    }
    Ok(Parsed { source_id, question, answers, answer_parts: None, fake_answers: None, subset: None, meta: obj.rest(), contexts })
}

/// NoMIRACL: `{query_id, query, positive_passages: [{docid, title, text}],
/// negative_passages: [...]}`. The human judgement goes to `relevance`
/// (relevant / non_relevant) and to `has_answer` (`has_answer_source =
/// relevance`); the query's subset is the option or, if not given, relevant
/// when it has a positive passage.
fn parse_nomiracl(mut obj: Obj, subset: Option<&str>) -> Result<Parsed, FieldError> {
    let source_id = obj.opt_id(&["query_id", "id", "qid"])?.ok_or_else(|| FieldError::missing("query_id"))?;
    let question = obj.req_str("query")?;
    let positives = obj.opt_obj_list("positive_passages")?;
    let negatives = obj.opt_obj_list("negative_passages")?;
    let subset = subset.map(str::to_string).unwrap_or_else(|| if positives.is_empty() { "non_relevant".into() } else { "relevant".into() });
    let mut contexts = Vec::new();
    for (label, list) in [("relevant", positives), ("non_relevant", negatives)] {
        for mut p in list {
            let doc_id = p.opt_id(&["docid", "doc_id", "id"])?.ok_or_else(|| FieldError::missing(p.field_name("docid")))?;
            let title = p.opt_str("title")?;
            let text = p.req_str("text")?;
            contexts.push(ContextRow {
                qid: String::new(),
                rank: contexts.len() as i32 + 1,
                doc_id,
                title,
                text,
                score: None,
                has_answer: Some(label == "relevant"),
                has_answer_source: Some("relevance".into()),
                relevance: Some(label.into()),
                meta: p.rest(),
            });
        }
    }
    Ok(Parsed { source_id: Some(source_id), question, answers: Vec::new(), answer_parts: None, fake_answers: None, subset: Some(subset), meta: obj.rest(), contexts })
}

/// RGB's `answer`: a string (one alias), a list of strings (aliases of one
/// answer), or a list of lists (each inner list = the aliases of one required
/// part). Returns (flattened aliases, parts).
fn rgb_answer(v: Value) -> Result<(Vec<String>, Vec<Vec<String>>), FieldError> {
    let parts: Vec<Vec<String>> = match v {
        Value::String(s) => vec![vec![s]],
        Value::Number(n) => vec![vec![n.to_string()]],
        Value::Array(items) if items.iter().any(Value::is_array) => items
            .into_iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) => Ok(vec![s]),
                other => str_list(other, &format!("answer[{i}]")),
            })
            .collect::<Result<_, _>>()?,
        v @ Value::Array(_) => vec![str_list(v, "answer")?],
        other => return Err(FieldError::new("answer", format!("must be a string, a list of strings or a list of lists, found {}", type_of(&other)))),
    };
    if parts.iter().all(|p| p.iter().all(|a| a.trim().is_empty())) {
        return Err(FieldError::new("answer", "is empty"));
    }
    let mut flat: Vec<String> = Vec::new();
    for a in parts.iter().flatten() {
        if !flat.contains(a) {
            flat.push(a.clone());
        }
    }
    Ok((flat, parts))
}

/// RGB: `{id, query, answer, positive: [str], negative: [str], fakeanswer?,
/// positive_wrong?: [str]}`. Passages become contexts with relevance
/// relevant (positive), non_relevant (negative) or counterfactual
/// (positive_wrong), ranked in that order; `answer`'s structure is kept in
/// `answer_parts`, `fakeanswer` in `fake_answers`.
fn parse_rgb(mut obj: Obj) -> Result<Parsed, FieldError> {
    let source_id = obj.opt_id(&["id"])?;
    let question = obj.req_str("query")?;
    let (answers, parts) = match obj.take("answer") {
        None => return Err(FieldError::missing("answer")),
        Some(v) => rgb_answer(v)?,
    };
    let fake_answers = match obj.take("fakeanswer") {
        None => None,
        Some(Value::String(s)) => Some(vec![s]),
        Some(v) => Some(str_list(v, "fakeanswer")?),
    };
    let mut contexts = Vec::new();
    for (key, label) in [("positive", "relevant"), ("negative", "non_relevant"), ("positive_wrong", "counterfactual")] {
        let list = obj.opt_str_list(key)?.unwrap_or_default();
        for (i, text) in list.into_iter().enumerate() {
            contexts.push(ContextRow {
                qid: String::new(),
                rank: contexts.len() as i32 + 1,
                doc_id: format!("{key}-{i}"),
                title: None,
                text,
                score: None,
                has_answer: None,
                has_answer_source: None,
                relevance: Some(label.into()),
                meta: None,
            });
        }
    }
    Ok(Parsed { source_id, question, answers, answer_parts: Some(parts), fake_answers, subset: None, meta: obj.rest(), contexts })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rgb_answer_shapes() {
        let (flat, parts) = rgb_answer(json!("Paris")).unwrap();
        assert_eq!((flat, parts), (vec!["Paris".to_string()], vec![vec!["Paris".to_string()]]));
        let (flat, parts) = rgb_answer(json!(["1889", "eighteen eighty-nine"])).unwrap();
        assert_eq!(flat.len(), 2);
        assert_eq!(parts.len(), 1);
        let (flat, parts) = rgb_answer(json!([["Neil Armstrong", "Armstrong"], ["Buzz Aldrin"]])).unwrap();
        assert_eq!(flat, vec!["Neil Armstrong", "Armstrong", "Buzz Aldrin"]);
        assert_eq!(parts, vec![vec!["Neil Armstrong".to_string(), "Armstrong".into()], vec!["Buzz Aldrin".into()]]);
        let err = rgb_answer(json!({"a": 1})).unwrap_err();
        assert_eq!(err.field, "answer");
        let err = rgb_answer(json!([["ok"], [3.5, {}]])).unwrap_err();
        assert_eq!(err.field, "answer[1][1]");
    }

    #[test]
    fn lang_from_nomiracl_names() {
        assert_eq!(lang_from_file_name(Path::new("x/de.dev.jsonl")).as_deref(), Some("de"));
        assert_eq!(lang_from_file_name(Path::new("sw-test.jsonl.gz")).as_deref(), Some("sw"));
        assert_eq!(lang_from_file_name(Path::new("nomiracl.jsonl")), None);
    }
}
