//! Scoring predictions made elsewhere: a JSONL, CSV/TSV or Parquet file with
//! an id column, a prediction column and optionally a model column, joined
//! to a `questions` artifact (by qid) or a `cases` artifact (by case_id, or
//! qid when the ids are qids). Unmatched ids are reported, never dropped
//! silently.

use arrow::array::Array;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use ragprobe_artifact::{
    kinds, read, sha256_hex, CaseRow, Cases, Expected, Questions, Recipe, Store,
};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

use crate::{finish, Lookup, Result, ScoreError, ScoreOptions, ScoreReport};

/// Column names of a predictions file.
#[derive(Debug, Clone)]
pub struct PredictionColumns {
    /// Column holding the question id or case id.
    pub id: String,
    /// Column holding the predicted answer text.
    pub prediction: String,
    /// Column naming the model; None: every prediction is from model `external`.
    pub model: Option<String>,
    /// What to do with several predictions for one (id, model).
    pub on_duplicate: OnDuplicate,
    /// The role the predictions played (e.g. `normal`, `soft`), so that
    /// the metric families of that role run; None: accuracy/EM/F1 and the
    /// condition-defined families (NoMIRACL, RGB) only.
    pub role: Option<String>,
}

impl Default for PredictionColumns {
    fn default() -> Self {
        PredictionColumns {
            id: "id".into(),
            prediction: "prediction".into(),
            model: None,
            role: None,
            on_duplicate: OnDuplicate::Error,
        }
    }
}

/// Several predictions for one (id, model): an error naming both lines
/// (the default), or keep the first or the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnDuplicate {
    /// Stop with an error naming both lines (the default).
    Error,
    /// Keep the first prediction in file order.
    First,
    /// Keep the last prediction in file order.
    Last,
}

/// Apply the duplicate policy; rows keep their file order.
fn dedup(
    file: &Path,
    rows: Vec<(u64, String, String, String)>,
    policy: OnDuplicate,
) -> Result<Vec<(u64, String, String, String)>> {
    let mut seen: HashMap<(String, String), usize> = HashMap::new();
    let mut out: Vec<(u64, String, String, String)> = Vec::with_capacity(rows.len());
    for r in rows {
        match seen.get(&(r.1.clone(), r.3.clone())) {
            None => {
                seen.insert((r.1.clone(), r.3.clone()), out.len());
                out.push(r);
            }
            Some(&i) => match policy {
                OnDuplicate::Error => {
                    return Err(ScoreError::Invalid(format!(
                        "{}:{}: id `{}` (model `{}`) already has a prediction on line {}; use --on-duplicate first|last to keep one",
                        file.display(), r.0, r.1, r.3, out[i].0
                    )))
                }
                OnDuplicate::First => {}
                OnDuplicate::Last => out[i] = r,
            },
        }
    }
    Ok(out)
}

/// One record of a predictions file: its line (row number for Parquet)
/// and its fields.
type Record = (u64, serde_json::Map<String, Value>);

/// An error at one line of the predictions file.
type BadLine<'a> = dyn Fn(u64, String) -> ScoreError + 'a;

/// (line, id, prediction, model) rows of a predictions file.
fn read_file(path: &Path, cols: &PredictionColumns) -> Result<Vec<(u64, String, String, String)>> {
    let file = path.display().to_string();
    let bad = |line: u64, m: String| ScoreError::Invalid(format!("{file}:{line}: {m}"));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let records = if name.ends_with(".parquet") {
        parquet_records(path, &bad)?
    } else if name.ends_with(".csv") || name.ends_with(".tsv") {
        let delim = if name.ends_with(".tsv") { b'\t' } else { b',' };
        csv_records(path, delim, &bad)?
    } else {
        jsonl_records(path, &bad)?
    };
    if records.is_empty() {
        return Err(ScoreError::Invalid(format!("{file}: no predictions")));
    }
    records
        .into_iter()
        .map(|(line, m)| prediction_row(line, &m, cols, &bad))
        .collect()
}

/// The records of a Parquet file, numbered from 1 across its batches.
fn parquet_records(path: &Path, bad: &BadLine) -> Result<Vec<Record>> {
    let mut records: Vec<Record> = Vec::new();
    let f = std::fs::File::open(path).map_err(|e| bad(0, e.to_string()))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(f)
        .and_then(|b| b.build())
        .map_err(|e| bad(0, e.to_string()))?;
    let mut n = 0;
    for batch in reader {
        let batch = batch.map_err(|e| bad(n, e.to_string()))?;
        let mut buf = Vec::new();
        let mut w = arrow::json::LineDelimitedWriter::new(&mut buf);
        w.write(&batch)
            .and_then(|_| w.finish())
            .map_err(|e| bad(n, e.to_string()))?;
        let _ = batch.column(0).len();
        for l in buf.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            n += 1;
            match serde_json::from_slice(l) {
                Ok(Value::Object(m)) => records.push((n, m)),
                _ => return Err(bad(n, "row is not a record".into())),
            }
        }
    }
    Ok(records)
}

/// The records of a CSV or TSV file (cells as strings, by header), at
/// their file lines.
fn csv_records(path: &Path, delim: u8, bad: &BadLine) -> Result<Vec<Record>> {
    let mut records: Vec<Record> = Vec::new();
    let mut rdr = csv::ReaderBuilder::new()
        .delimiter(delim)
        .from_path(path)
        .map_err(|e| bad(0, e.to_string()))?;
    let headers = rdr.headers().map_err(|e| bad(1, e.to_string()))?.clone();
    for r in rdr.records() {
        let r = r.map_err(|e| bad(e.position().map(|p| p.line()).unwrap_or(0), e.to_string()))?;
        let line = r.position().map(|p| p.line()).unwrap_or(0);
        records.push((
            line,
            headers
                .iter()
                .zip(r.iter())
                .map(|(h, v)| (h.to_string(), Value::String(v.to_string())))
                .collect(),
        ));
    }
    Ok(records)
}

/// The records of a JSONL file (one JSON object a line; blank lines
/// skipped), at their file lines.
fn jsonl_records(path: &Path, bad: &BadLine) -> Result<Vec<Record>> {
    let mut records: Vec<Record> = Vec::new();
    let f = std::fs::File::open(path).map_err(|e| bad(0, e.to_string()))?;
    for (i, line) in std::io::BufReader::new(f).lines().enumerate() {
        let line = line.map_err(|e| bad(i as u64 + 1, e.to_string()))?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(&line) {
            Ok(Value::Object(m)) => records.push((i as u64 + 1, m)),
            Ok(_) => return Err(bad(i as u64 + 1, "not a JSON object".into())),
            Err(e) => return Err(bad(i as u64 + 1, format!("malformed JSON: {e}"))),
        }
    }
    Ok(records)
}

/// A field's value as text: strings as they are, other values as JSON;
/// None for null.
fn field_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// The (line, id, prediction, model) of one record; the model is
/// `external` when there is no model column.
fn prediction_row(
    line: u64,
    m: &serde_json::Map<String, Value>,
    cols: &PredictionColumns,
    bad: &BadLine,
) -> Result<(u64, String, String, String)> {
    let id = m.get(&cols.id).and_then(field_text).ok_or_else(|| {
        bad(
            line,
            format!("field `{}` (the id column) is missing", cols.id),
        )
    })?;
    let pred = m
        .get(&cols.prediction)
        .and_then(field_text)
        .ok_or_else(|| {
            bad(
                line,
                format!(
                    "field `{}` (the prediction column) is missing",
                    cols.prediction
                ),
            )
        })?;
    let model = match &cols.model {
        Some(c) => m
            .get(c)
            .and_then(field_text)
            .ok_or_else(|| bad(line, format!("field `{c}` (the model column) is missing")))?,
        None => "external".to_string(),
    };
    Ok((line, id, pred, model))
}

/// Score a predictions file against a questions or cases artifact.
/// Returns the report and the ids that matched nothing.
pub fn score_predictions(
    store: &Store,
    file: &Path,
    against: &str,
    cols: &PredictionColumns,
    opts: &ScoreOptions,
) -> Result<(ScoreReport, Vec<String>)> {
    let id = store.resolve(against)?;
    let kind = store.manifest(&id)?.kind;
    let mut look = Lookup::default();
    if opts.breakdown.is_some() {
        if kind == kinds::QUESTIONS {
            look.add_questions(store, &id)?;
        } else if kind == kinds::CASES {
            look.add_for(store, &id)?;
        }
    }
    let cases: Vec<CaseRow> = match kind.as_str() {
        k if k == kinds::CASES => read::<Cases>(store, &id)?,
        k if k == kinds::QUESTIONS => read::<Questions>(store, &id)?
            .into_iter()
            .map(|q| CaseRow {
                case_id: q.qid.clone(),
                qid: q.qid,
                dataset: q.dataset,
                lang: q.lang,
                condition: "external".into(),
                question: q.question,
                answers: q.answers,
                answer_parts: q.answer_parts,
                expected: Expected::Answer,
                derivation: "{}".into(),
                ..Default::default()
            })
            .collect(),
        other => {
            return Err(ScoreError::Invalid(format!(
                "{id} is a `{other}` artifact; predictions join to questions or cases"
            )))
        }
    };
    let by_case: HashMap<&str, &CaseRow> = cases.iter().map(|c| (c.case_id.as_str(), c)).collect();
    let by_qid: HashMap<&str, &CaseRow> = cases.iter().map(|c| (c.qid.as_str(), c)).collect();
    let bytes =
        std::fs::read(file).map_err(|e| ScoreError::Invalid(format!("{}: {e}", file.display())))?;
    let preds = dedup(file, read_file(file, cols)?, cols.on_duplicate)?;
    let prompt = crate::PromptInfo {
        role: cols.role.clone(),
        ..crate::PromptInfo::bare("external")
    };
    let mut scored = Vec::new();
    let mut unmatched = Vec::new();
    for (_, pid, pred, model) in &preds {
        match by_case
            .get(pid.as_str())
            .or_else(|| by_qid.get(pid.as_str()))
        {
            Some(c) => scored.push(crate::row::score(
                c,
                &prompt,
                model,
                &sha256_hex(format!("{pid}\u{1f}{model}").as_bytes()),
                Some(pred),
                opts.parse,
            )),
            None => unmatched.push(pid.clone()),
        }
    }
    if !unmatched.is_empty() {
        tracing::warn!(
            "{} prediction id(s) match no {kind} row, e.g. {}",
            unmatched.len(),
            unmatched
                .iter()
                .take(5)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if scored.is_empty() {
        return Err(ScoreError::Invalid(format!(
            "{}: none of the {} prediction ids matches the {kind} artifact",
            file.display(),
            preds.len()
        )));
    }
    let mut recipe = Recipe::new(
        "score-predictions",
        crate::STAGE_VERSION,
        json!({"options": opts.params(), "columns": {"id": cols.id, "prediction": cols.prediction, "model": cols.model, "role": cols.role}, "on_duplicate": format!("{:?}", cols.on_duplicate).to_lowercase(), "unmatched": unmatched.len()}),
    );
    recipe.inputs = vec![id];
    recipe
        .sources
        .insert("predictions".into(), sha256_hex(&bytes));
    look.cases = cases.into_iter().map(|c| (c.case_id.clone(), c)).collect();
    Ok((finish(store, &recipe, scored, opts, &look)?, unmatched))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<(u64, String, String, String)> {
        let r =
            |line: u64, id: &str, p: &str| (line, id.to_string(), p.to_string(), "m".to_string());
        vec![r(1, "q1", "a"), r(2, "q2", "b"), r(3, "q1", "c")]
    }

    /// Regression: 20 rows for one id were all counted (n = 21 for 2 questions).
    #[test]
    fn duplicate_ids_are_an_error_or_one_is_kept() {
        let e = dedup(Path::new("p.jsonl"), rows(), OnDuplicate::Error)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("p.jsonl:3") && e.contains("`q1`") && e.contains("line 1"),
            "{e}"
        );
        let first = dedup(Path::new("p.jsonl"), rows(), OnDuplicate::First).unwrap();
        assert_eq!(
            first.iter().map(|r| r.2.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        let last = dedup(Path::new("p.jsonl"), rows(), OnDuplicate::Last).unwrap();
        assert_eq!(
            last.iter().map(|r| r.2.as_str()).collect::<Vec<_>>(),
            ["c", "b"]
        );
    }
}
