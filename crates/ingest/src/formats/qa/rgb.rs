//! RGB's testbed files (`positive`, `negative`, answer parts, fake answers).

use super::*;

/// RGB's `answer` as `checkanswer` (`evalue.py`) reads it: a plain string
/// is one part; a list holds one entry per required part, each a string
/// (that part's only form) or a list of aliases (any one matches). So a
/// flat list of strings means every string must appear (as in `zh_int`).
pub(super) fn rgb_answer(v: Value) -> Result<(Vec<String>, Vec<Vec<String>>), FieldError> {
    let parts: Vec<Vec<String>> = match v {
        Value::String(s) => vec![vec![s]],
        Value::Number(n) => vec![vec![n.to_string()]],
        Value::Array(items) => items
            .into_iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) => Ok(vec![s]),
                Value::Number(n) => Ok(vec![n.to_string()]),
                other => str_list(other, &format!("answer[{i}]")),
            })
            .collect::<Result<_, _>>()?,
        other => {
            return Err(FieldError::new(
                "answer",
                format!(
                    "must be a string, a list of strings or a list of lists, found {}",
                    type_of(&other)
                ),
            ))
        }
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
/// `answer_parts`, `fakeanswer` in `fake_answers`. The information
/// integration testbed (`en_int.json`, `zh_int.json`) gives `positive` as
/// one list of passages per answer part: each such passage records its part
/// in `meta` (`{"answer_part": i}`) and gets doc id `positive-<i>-<j>`, so
/// that perturb can select passages as RGB's `processdata` does.
pub(super) fn parse_rgb(mut obj: Obj) -> Result<Record, FieldError> {
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
    if let Some(Value::Array(items)) = obj.peek("positive") {
        if items.iter().any(Value::is_array) {
            let Some(Value::Array(items)) = obj.take("positive") else {
                unreachable!("peeked")
            };
            for (i, part) in items.into_iter().enumerate() {
                let list = match part {
                    v @ Value::Array(_) => str_list(v, &format!("positive[{i}]"))?,
                    other => {
                        return Err(FieldError::new(
                            format!("positive[{i}]"),
                            format!(
                                "must be a list of passages (one list per answer part), found {}",
                                type_of(&other)
                            ),
                        ))
                    }
                };
                for (j, text) in list.into_iter().enumerate() {
                    let rank = contexts.len() + 1;
                    contexts.push(ctx(
                        rank,
                        format!("positive-{i}-{j}"),
                        None,
                        text,
                        Some("relevant"),
                        Some(format!("{{\"answer_part\":{i}}}")),
                    ));
                }
            }
        }
    }
    for (key, label) in [
        ("positive", "relevant"),
        ("negative", "non_relevant"),
        ("positive_wrong", "counterfactual"),
    ] {
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
    Ok(Record {
        source_id,
        question,
        answers,
        answer_parts: Some(parts),
        fake_answers,
        meta: obj.rest(),
        contexts,
        ..Record::default()
    })
}
