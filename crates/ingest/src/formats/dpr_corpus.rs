//! `--format dpr-corpus`: the DPR Wikipedia passages (`psgs_w100.tsv`, 21M
//! passages of 100 words; seed 000 retrieves from it) into a `corpus`.
//!
//! The file is tab-separated with a header row `id  text  title`; a text
//! holding quotes is quoted with the quotes doubled (`"a ""b"" c"`), which
//! the csv reader undoes. Plain or gzipped (`.tsv.gz`); read as a stream
//! (one record at a time into the artifact writer's batches), so memory
//! does not grow with the corpus, with a byte progress bar.

use ragprobe_artifact::{Corpus, CorpusRow, Sink, Written};

use crate::error::IngestError;
use crate::formats::table::csv_reader;
use crate::Run;

/// The columns, in the order DPR writes them.
const COLUMNS: [&str; 3] = ["id", "text", "title"];

pub fn run(run: &mut Run) -> Result<Vec<Written>, IngestError> {
    let mut sink = Sink::<Corpus>::new(run.store, &run.recipe)?;
    for path in run.opts.paths.clone() {
        let file = path.display().to_string();
        let (mut csv, headers, bar) = csv_reader(&path, &file, b'\t', run.opts.progress)?;
        // Columns by name (DPR's order is id, text, title; any order is read).
        let mut at = [0usize; 3];
        for (i, name) in COLUMNS.iter().enumerate() {
            at[i] = headers.iter().position(|h| h.trim() == *name).ok_or_else(|| IngestError::File {
                file: file.clone(),
                message: format!(
                    "the header row has no `{name}` column (a DPR passages file starts with `id<TAB>text<TAB>title`; found: {})",
                    headers.iter().collect::<Vec<_>>().join(", ")
                ),
            })?;
        }
        let mut record = csv::StringRecord::new();
        loop {
            let read = csv.read_record(&mut record);
            let line = record.position().map(|p| p.line()).unwrap_or(0);
            let r = match read {
                Ok(false) => break,
                Ok(true) => passage(&record, at, &file, line),
                Err(e) => Err(csv_error(&file, &e)),
            };
            let Some(row) = run.skipper.keep(r)? else {
                continue;
            };
            run.records += 1;
            if row.text.is_empty() && row.title.is_none() {
                run.empty_passages += 1;
            }
            sink.push(row)?;
        }
        bar.finish_and_clear();
    }
    if sink.rows() == 0 {
        return Err(run.nothing_read("passages"));
    }
    let details = run.details();
    Ok(vec![sink.finish(details)?])
}

/// One record as a passage; an empty id is an error naming the line.
fn passage(
    r: &csv::StringRecord,
    at: [usize; 3],
    file: &str,
    line: u64,
) -> Result<CorpusRow, IngestError> {
    let get = |i: usize| r.get(at[i]).unwrap_or("");
    let id = get(0).trim();
    if id.is_empty() {
        return Err(IngestError::Record {
            file: file.to_string(),
            line,
            message: "field `id`: empty".into(),
        });
    }
    let title = get(2);
    Ok(CorpusRow {
        doc_id: id.to_string(),
        title: (!title.is_empty()).then(|| title.to_string()),
        text: get(1).to_string(),
        meta: None,
    })
}

/// A malformed record (wrong number of fields, bad UTF-8) names its line.
fn csv_error(file: &str, e: &csv::Error) -> IngestError {
    let line = e.position().map(|p| p.line()).unwrap_or(0);
    let message = match e.kind() {
        csv::ErrorKind::Utf8 { err, .. } => {
            format!("invalid UTF-8 in field `{}`", COLUMNS.get(err.field()).copied().unwrap_or("?"))
        }
        csv::ErrorKind::UnequalLengths { expected_len, len, .. } => format!(
            "{len} tab-separated field(s), the header has {expected_len} (a tab inside a passage must be quoted)"
        ),
        _ => format!("malformed TSV: {e}"),
    };
    IngestError::Record {
        file: file.to_string(),
        line,
        message,
    }
}
