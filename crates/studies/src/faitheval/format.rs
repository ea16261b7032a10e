//! FaithEval's records (`Salesforce/FaithEval-<task>-v1.0`, split `test`):
//! `qid`/`id`, `context`, `question`, and `answers` (unanswerable: the
//! original question's answers; inconsistent: the answers the documents
//! support) or, for the counterfactual task, `choices` {`label`, `text`},
//! `answerKey` and `answer` (the text of the option the context supports).

use ragprobe_ingest::{passage, FieldError, Obj, ReadOptions, Record, RecordFormat};
use ragprobe_artifact::QuestionRow;
use serde_json::Value;

use super::task::Task;

/// `--format faitheval-<task>`: one record, one question whose one passage
/// is the record's context. The task is the format's (the three datasets
/// are not told apart by their fields); it becomes the question's subset.
pub struct FaithEvalFormat(pub Task);

impl RecordFormat for FaithEvalFormat {
    /// `faitheval-<task>`, as the task's cases are named.
    fn name(&self) -> &'static str {
        self.0.condition()
    }

    fn description(&self) -> &'static str {
        match self.0 {
            Task::Unanswerable => "FaithEval unanswerable (JSONL/Parquet): qid, context, question, answers",
            Task::Inconsistent => "FaithEval inconsistent (JSONL/Parquet): qid, context, question, answers",
            Task::Counterfactual => "FaithEval counterfactual (JSONL/Parquet): id, context, question, choices {label, text}, answerKey, answer",
        }
    }

    fn version(&self) -> u32 {
        1
    }

    fn parse(&self, mut obj: Obj, _: &ReadOptions<'_>) -> Result<Record, FieldError> {
        let source_id = obj.opt_id(&["qid", "id"])?;
        let question = obj.req_str("question")?;
        let context = obj.req_str("context")?;
        let (answers, options) = match self.0 {
            Task::Counterfactual => {
                let (options, gold) = choices(&mut obj)?;
                (vec![gold], Some(options))
            }
            _ => (obj.opt_str_list("answers")?.unwrap_or_default(), None),
        };
        Ok(Record {
            source_id,
            row: QuestionRow {
                question,
                answers,
                subset: Some(self.0.name().to_string()),
                options,
                meta: obj.rest(),
                ..QuestionRow::default()
            },
            contexts: vec![passage(1, "context".into(), None, context)],
        })
    }
}

/// The options of a counterfactual record, labelled A, B, C, … in the
/// record's order (some records label them 1–4, and `answerKey` may use
/// either spelling), and the text of the option the context supports: the
/// record's `answer` when it is one of the options, else the option
/// `answerKey` names (a label of the record's, or a letter or number by
/// position). The record's own labels stay in `meta` (`choices_label`).
fn choices(obj: &mut Obj) -> Result<(Vec<(String, String)>, String), FieldError> {
    let Some(c) = obj.take("choices") else {
        return Err(FieldError::missing("choices"));
    };
    let mut c = Obj::new(c, "choices")?;
    let texts = c.req_str_list("text")?;
    let labels = c.req_str_list("label")?;
    if texts.len() < 2 || texts.len() > 10 || labels.len() != texts.len() {
        return Err(FieldError::new(
            "choices",
            format!(
                "needs 2 to 10 texts and as many labels, found {} texts and {} labels",
                texts.len(),
                labels.len()
            ),
        ));
    }
    let options: Vec<(String, String)> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| (((b'A' + i as u8) as char).to_string(), t.clone()))
        .collect();
    // `answerKey` stays in `meta`: it is read, not mapped.
    let key = match obj.peek("answerKey") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(_) => return Err(FieldError::new("answerKey", "must be a string or a number")),
    };
    let answer = obj.opt_str("answer")?;
    let by_key = key.as_deref().and_then(|k| {
        labels.iter().position(|l| l == k).or_else(|| {
            let k = k.trim();
            match k.as_bytes() {
                [b @ b'A'..=b'J'] => Some((b - b'A') as usize),
                _ => k.parse::<usize>().ok().and_then(|n| n.checked_sub(1)),
            }
        })
    });
    let gold = match answer.filter(|a| texts.contains(a)) {
        Some(a) => a,
        None => match by_key.and_then(|i| texts.get(i)) {
            Some(t) => t.clone(),
            None => {
                return Err(FieldError::new(
                    "answerKey",
                    format!(
                        "{:?} names none of the options ({}) and `answer` is none of their texts",
                        key.unwrap_or_default(),
                        labels.join(", ")
                    ),
                ))
            }
        },
    };
    if labels.iter().zip(&options).any(|(l, (o, _))| l != o) {
        obj.map.insert("choices_label".into(), Value::from(labels));
    }
    Ok((options, gold))
}
