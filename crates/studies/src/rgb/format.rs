//! RGB's testbed files (`data/{en,zh}{,_int,_fact}.json`: JSON Lines of
//! `id`, `query`, `answer`, `positive`, `negative`, `fakeanswer`?,
//! `positive_wrong`?), read as `--format rgb`.

use ragprobe_ingest::{
    passage, str_list, type_of, ContextRow, FieldError, Obj, ReadOptions, Record, RecordFormat,
};
use ragprobe_artifact::QuestionRow;
use serde_json::Value;

/// `--format rgb`.
pub struct RgbFormat;

impl RecordFormat for RgbFormat {
    fn name(&self) -> &'static str {
        "rgb"
    }

    fn description(&self) -> &'static str {
        "RGB JSONL: id, query, answer, positive, negative, fakeanswer?, positive_wrong?"
    }

    fn version(&self) -> u32 {
        1
    }

    fn parse(&self, obj: Obj, _: &ReadOptions<'_>) -> Result<Record, FieldError> {
        parse_rgb(obj)
    }
}


/// RGB's `answer` as `checkanswer` (`evalue.py`) reads it: a plain string
/// is one part; a list holds one entry per required part, each a string
/// (that part's only form) or a list of aliases (any one matches). So a
/// flat list of strings means every string must appear (as in `zh_int`).
pub fn rgb_answer(v: Value) -> Result<(Vec<String>, Vec<Vec<String>>), FieldError> {
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
fn parse_rgb(mut obj: Obj) -> Result<Record, FieldError> {
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
                    contexts.push(ContextRow {
                        relevance: Some("relevant".into()),
                        meta: Some(format!("{{\"answer_part\":{i}}}")),
                        ..passage(rank, format!("positive-{i}-{j}"), None, text)
                    });
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
            let rank = contexts.len() + 1;
            contexts.push(ContextRow {
                relevance: Some(label.into()),
                ..passage(rank, format!("{key}-{i}"), None, text)
            });
        }
    }
    Ok(Record {
        source_id,
        row: QuestionRow {
            question,
            answers,
            answer_parts: Some(parts),
            fake_answers,
            meta: obj.rest(),
            ..QuestionRow::default()
        },
        contexts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rgb_answer_shapes() {
        let (flat, parts) = rgb_answer(json!("Paris")).unwrap();
        assert_eq!(
            (flat, parts),
            (vec!["Paris".to_string()], vec![vec!["Paris".to_string()]])
        );
        // A flat list: every string is a required part (RGB checkanswer).
        let (flat, parts) = rgb_answer(json!(["1月3日", "1月12日"])).unwrap();
        assert_eq!(flat.len(), 2);
        assert_eq!(
            parts,
            vec![vec!["1月3日".to_string()], vec!["1月12日".to_string()]]
        );
        let (flat, parts) =
            rgb_answer(json!([["Neil Armstrong", "Armstrong"], ["Buzz Aldrin"]])).unwrap();
        assert_eq!(flat, vec!["Neil Armstrong", "Armstrong", "Buzz Aldrin"]);
        assert_eq!(
            parts,
            vec![
                vec!["Neil Armstrong".to_string(), "Armstrong".into()],
                vec!["Buzz Aldrin".into()]
            ]
        );
        let err = rgb_answer(json!({"a": 1})).unwrap_err();
        assert_eq!(err.field, "answer");
        let err = rgb_answer(json!([["ok"], [3.5, {}]])).unwrap_err();
        assert_eq!(err.field, "answer[1][1]");
    }
}
