//! `--format table`: any CSV/TSV, JSON Lines/JSON array or Parquet file, with
//! columns mapped by flags, to `questions` (or `corpus` with
//! `--table-kind corpus`).

use arrow::record_batch::RecordBatchReader;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use ragprobe_artifact::{Corpus, CorpusRow, QuestionRow, Questions, Sink, Written};
use serde_json::{Map, Value};
use std::path::Path;

use crate::error::{FieldError, IngestError};
use crate::fields::{str_list, type_of, Obj};
use crate::source::{open, JsonRecords};
use crate::{Run, TableKind, TableMapping};

/// One table row as a JSON object, and its 1-based line (CSV, JSON) or row (Parquet).
type Row = Result<(u64, Value), IngestError>;

/// Binary columns become text when they hold UTF-8 (the JSON conversion
/// would otherwise write them as hex); bytes that are not UTF-8 are an
/// error naming the column and the row, never silently hex.
fn binary_as_text(
    batch: arrow::record_batch::RecordBatch,
    rows_before: u64,
) -> Result<arrow::record_batch::RecordBatch, String> {
    use arrow::array::{Array, BinaryArray, LargeBinaryArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;
    let schema = batch.schema();
    if !schema
        .fields()
        .iter()
        .any(|f| matches!(f.data_type(), DataType::Binary | DataType::LargeBinary))
    {
        return Ok(batch);
    }
    let mut fields = Vec::new();
    let mut cols: Vec<arrow::array::ArrayRef> = Vec::new();
    for (f, c) in schema.fields().iter().zip(batch.columns()) {
        let bytes: Option<Vec<Option<&[u8]>>> = match f.data_type() {
            DataType::Binary => c
                .as_any()
                .downcast_ref::<BinaryArray>()
                .map(|a| a.iter().collect()),
            DataType::LargeBinary => c
                .as_any()
                .downcast_ref::<LargeBinaryArray>()
                .map(|a| a.iter().collect()),
            _ => None,
        };
        match bytes {
            None => {
                fields.push(f.as_ref().clone());
                cols.push(c.clone());
            }
            Some(values) => {
                let mut text = Vec::with_capacity(values.len());
                for (i, v) in values.into_iter().enumerate() {
                    text.push(match v {
                        None => None,
                        Some(b) => Some(std::str::from_utf8(b).map_err(|_| format!("row {}: column `{}` holds binary data that is not UTF-8 text", rows_before + i as u64 + 1, f.name()))?.to_string()),
                    });
                }
                fields.push(Field::new(f.name(), DataType::Utf8, f.is_nullable()));
                cols.push(Arc::new(arrow::array::StringArray::from(text)));
            }
        }
    }
    arrow::record_batch::RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)
        .map_err(|e| e.to_string())
}

/// The rows of a table file, by its extension: Parquet, CSV/TSV (possibly
/// gzipped), else JSON Lines or a JSON array.
pub(crate) fn rows(
    path: &Path,
    progress: bool,
) -> Result<Box<dyn Iterator<Item = Row>>, IngestError> {
    let name = crate::basename(path).to_lowercase();
    let file = path.display().to_string();
    if name.ends_with(".parquet") {
        return parquet_rows(path, file);
    }
    if name.ends_with(".csv")
        || name.ends_with(".tsv")
        || name.ends_with(".csv.gz")
        || name.ends_with(".tsv.gz")
    {
        return csv_rows(path, &name, file, progress);
    }
    let (reader, _) = open(path, progress)?;
    Ok(Box::new(
        JsonRecords::new(path, reader).map(|r| r.map(|rec| (rec.line, rec.value))),
    ))
}

/// The rows of a Parquet file, read 1024 at a time and numbered from 1.
fn parquet_rows(path: &Path, file: String) -> Result<Box<dyn Iterator<Item = Row>>, IngestError> {
    let f = std::fs::File::open(path).map_err(|e| IngestError::File {
        file: file.clone(),
        message: e.to_string(),
    })?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(f)
        .and_then(|b| b.with_batch_size(1024).build())
        .map_err(|e| IngestError::File {
            file: file.clone(),
            message: format!("not a readable Parquet file: {e}"),
        })?;
    let _ = reader.schema();
    let mut row = 0u64;
    let iter = reader.flat_map(move |batch| batch_rows(batch, &mut row, &file));
    Ok(Box::new(iter))
}

/// One Parquet record batch as JSON rows; `row` counts the rows read so far.
/// A batch that cannot be read or converted gives a single file error.
fn batch_rows(
    batch: Result<arrow::record_batch::RecordBatch, arrow::error::ArrowError>,
    row: &mut u64,
    file: &str,
) -> Vec<Row> {
    let batch = match batch
        .map_err(|e| e.to_string())
        .and_then(|b| binary_as_text(b, *row))
    {
        Ok(b) => b,
        Err(message) => {
            return vec![Err(IngestError::File {
                file: file.to_string(),
                message,
            })]
        }
    };
    let mut buf = Vec::new();
    let mut w = arrow::json::LineDelimitedWriter::new(&mut buf);
    if let Err(e) = w.write(&batch).and_then(|_| w.finish()) {
        return vec![Err(IngestError::File {
            file: file.to_string(),
            message: e.to_string(),
        })];
    }
    buf.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            *row += 1;
            serde_json::from_slice(l)
                .map(|v| (*row, v))
                .map_err(|e| IngestError::File {
                    file: file.to_string(),
                    message: e.to_string(),
                })
        })
        .collect()
}

/// The rows of a CSV or TSV file (by `name`), keyed by its header row.
fn csv_rows(
    path: &Path,
    name: &str,
    file: String,
    progress: bool,
) -> Result<Box<dyn Iterator<Item = Row>>, IngestError> {
    let delim = if name.contains(".tsv") { b'\t' } else { b',' };
    let (csv, headers, _) = csv_reader(path, &file, delim, progress)?;
    let iter = csv.into_records().map(move |r| csv_row(&headers, r, &file));
    Ok(Box::new(iter))
}

/// A CSV reader over `path` (gzip read transparently, with a progress bar
/// when asked) and its header row.
pub(crate) fn csv_reader(
    path: &Path,
    file: &str,
    delimiter: u8,
    progress: bool,
) -> Result<
    (
        csv::Reader<Box<dyn std::io::BufRead>>,
        csv::StringRecord,
        indicatif::ProgressBar,
    ),
    IngestError,
> {
    let (reader, bar) = open(path, progress)?;
    let mut csv = csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .flexible(false)
        .from_reader(reader);
    let headers = csv
        .headers()
        .map_err(|e| IngestError::File {
            file: file.to_string(),
            message: format!("cannot read the header row: {e}"),
        })?
        .clone();
    Ok((csv, headers, bar))
}

/// One CSV record as a JSON object of strings, with its line; a malformed
/// record is a record error naming the line (and the column, for bad UTF-8).
fn csv_row(
    headers: &csv::StringRecord,
    r: Result<csv::StringRecord, csv::Error>,
    file: &str,
) -> Row {
    match r {
        Ok(rec) => {
            let line = rec.position().map(|p| p.line()).unwrap_or(0);
            let obj: Map<String, Value> = headers
                .iter()
                .zip(rec.iter())
                .map(|(h, v)| (h.to_string(), Value::String(v.to_string())))
                .collect();
            Ok((line, Value::Object(obj)))
        }
        Err(e) => {
            let line = e.position().map(|p| p.line()).unwrap_or(0);
            let message = match e.kind() {
                csv::ErrorKind::Utf8 { err, .. } => {
                    format!("invalid UTF-8 in column {}", err.field() + 1)
                }
                _ => format!("malformed CSV: {e}"),
            };
            Err(IngestError::Record {
                file: file.to_string(),
                line,
                message,
            })
        }
    }
}

/// Answers from a list column, a JSON list inside a string, or a string
/// split on the separator (or taken whole).
fn answers_of(v: Value, name: &str, sep: Option<&str>) -> Result<Vec<String>, FieldError> {
    match v {
        Value::Array(_) => str_list(v, name),
        Value::String(s) => {
            let t = s.trim();
            if t.starts_with('[') {
                let parsed: Value = serde_json::from_str(t).map_err(|e| {
                    FieldError::new(
                        name,
                        format!("looks like a JSON list but does not parse: {e}"),
                    )
                })?;
                return str_list(parsed, name);
            }
            let parts: Vec<String> = match sep {
                Some(sep) => t
                    .split(sep)
                    .map(|a| a.trim().to_string())
                    .filter(|a| !a.is_empty())
                    .collect(),
                None => vec![t.to_string()],
            };
            if parts.iter().all(|p| p.is_empty()) {
                return Err(FieldError::new(name, "is empty"));
            }
            Ok(parts)
        }
        Value::Number(n) => Ok(vec![n.to_string()]),
        other => Err(FieldError::new(
            name,
            format!(
                "must be a list of strings or a string, found {}",
                type_of(&other)
            ),
        )),
    }
}

fn question_row(
    mut o: Obj,
    m: &TableMapping,
) -> Result<
    (
        Option<String>,
        Option<String>,
        Option<String>,
        String,
        Vec<String>,
        Option<String>,
    ),
    FieldError,
> {
    let id = match &m.id {
        Some(c) => Some(
            o.opt_id(&[c.as_str()])?
                .ok_or_else(|| FieldError::missing(c.clone()))?,
        ),
        None => None,
    };
    let question = o.req_str(&m.question)?;
    let answers = match o.take(&m.answers) {
        None => return Err(FieldError::missing(m.answers.clone())),
        Some(v) => answers_of(v, &m.answers, m.answers_sep.as_deref())?,
    };
    let lang = match &m.lang {
        Some(c) => o.opt_str(c)?,
        None => None,
    };
    let split = match &m.split {
        Some(c) => o.opt_str(c)?,
        None => None,
    };
    Ok((id, lang, split, question, answers, o.rest()))
}

fn corpus_row(mut o: Obj, m: &TableMapping) -> Result<CorpusRow, FieldError> {
    let doc_id = o
        .opt_id(&[m.doc_id.as_str()])?
        .ok_or_else(|| FieldError::missing(m.doc_id.clone()))?;
    let title = match &m.title {
        Some(c) => o.opt_str(c)?,
        None => None,
    };
    let text = o.req_str(&m.text)?;
    Ok(CorpusRow {
        doc_id,
        title,
        text,
        meta: o.rest(),
    })
}

pub fn run(run: &mut Run) -> Result<Vec<Written>, IngestError> {
    let m = run.opts.table.clone();
    let mut questions = match m.kind {
        TableKind::Questions => Some(Sink::<Questions>::new(run.store, &run.recipe)?),
        TableKind::Corpus => None,
    };
    let mut corpus = match m.kind {
        TableKind::Corpus => Some(Sink::<Corpus>::new(run.store, &run.recipe)?),
        TableKind::Questions => None,
    };
    for path in run.opts.paths.clone() {
        let dataset = run.dataset_for(&path);
        let file = path.display().to_string();
        for r in rows(&path, run.opts.progress)? {
            let Some((line, value)) = run.skipper.keep(r)? else {
                continue;
            };
            run.records += 1;
            let rec_err = |fe: FieldError| IngestError::Record {
                file: file.clone(),
                line,
                message: fe.to_string(),
            };
            let obj = match Obj::new(value, "") {
                Ok(o) => o,
                Err(fe) => {
                    run.skipper.handle(rec_err(fe))?;
                    continue;
                }
            };
            if let Some(sink) = questions.as_mut() {
                match question_row(obj, &m) {
                    Ok((id, lang, split, question, answers, meta)) => {
                        let qid = run.qids.assign(&dataset, id.as_deref(), &question);
                        let lang = lang.unwrap_or_else(|| run.lang_for(None, &question));
                        let split = split.or_else(|| run.opts.split.clone());
                        sink.push(QuestionRow {
                            qid,
                            dataset: dataset.clone(),
                            split,
                            lang,
                            question,
                            answers,
                            meta,
                            ..Default::default()
                        })?;
                    }
                    Err(fe) => run.skipper.handle(rec_err(fe))?,
                }
            } else if let Some(sink) = corpus.as_mut() {
                match corpus_row(obj, &m) {
                    Ok(row) => sink.push(row)?,
                    Err(fe) => run.skipper.handle(rec_err(fe))?,
                }
            }
        }
    }
    let details = run.details();
    let rows = questions
        .as_ref()
        .map(|q| q.rows())
        .or(corpus.as_ref().map(|c| c.rows()))
        .unwrap_or(0);
    if rows == 0 {
        return Err(run.nothing_read("valid rows"));
    }
    let mut out = Vec::new();
    if let Some(q) = questions {
        out.push(q.finish(details.clone())?);
    }
    if let Some(c) = corpus {
        out.push(c.finish(details)?);
    }
    Ok(out)
}
