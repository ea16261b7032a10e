//! Question-with-passages formats: DPR/FiD, Self-RAG (PopQA), TriviaQA-RC,
//! HotpotQA, SearchQA, MCQ — one file per family of readers — and the
//! studies' own [`RecordFormat`]s; this file drives them (records in,
//! `questions` and `contexts` out).
//! Each record gives one `questions` row and its `contexts` rows.

use ragprobe_artifact::{ContextRow, Contexts, QuestionRow, Questions, Sink, Written};
use ragprobe_matching::has_answer;
use serde_json::{json, Value};
use std::path::Path;

use crate::error::{FieldError, IngestError};
use crate::fields::{str_list, type_of, Obj};
use crate::source::{open, JsonRecords};
use crate::{passage_id, Format, IngestOptions, ReadOptions, Record, RecordFormat, Run};

mod dpr;
mod rc;
use dpr::*;
use rc::*;

pub fn run(run: &mut Run, format: Format) -> Result<Vec<Written>, IngestError> {
    let mut questions = Sink::<Questions>::new(run.store, &run.recipe)?;
    let mut contexts = Sink::<Contexts>::new(run.store, &run.recipe)?;
    for path in run.opts.paths.clone() {
        let dataset = run.dataset_for(&path);
        let file_lang = match format {
            Format::Records(r) => r.language_of(&path),
            _ => None,
        };
        let input = Input {
            path: &path,
            dataset: &dataset,
            file_lang: file_lang.as_deref(),
        };
        match format {
            Format::Records(r) => ingest_records(run, r, &mut questions, &mut contexts, input)?,
            _ => ingest_file(run, format, &mut questions, &mut contexts, input)?,
        }
    }
    if questions.rows() == 0 {
        return Err(run.nothing_read("valid records"));
    }
    let details = run.details();
    Ok(vec![
        questions.finish(details.clone())?,
        contexts.finish(details)?,
    ])
}

/// One input path with the dataset and language its rows get.
#[derive(Clone, Copy)]
struct Input<'a> {
    path: &'a Path,
    dataset: &'a str,
    /// The language its name gives ([`RecordFormat::language_of`]), if any.
    file_lang: Option<&'a str>,
}

/// Ingest one input file of a QA-with-passages format, record by record.
fn ingest_file(
    run: &mut Run,
    format: Format,
    questions: &mut Sink<Questions>,
    contexts: &mut Sink<Contexts>,
    input: Input<'_>,
) -> Result<(), IngestError> {
    let Input {
        path,
        dataset,
        file_lang,
    } = input;
    let (reader, bar) = open(path, run.opts.progress)?;
    let file = path.display().to_string();
    let records = match format {
        Format::Triviaqa => JsonRecords::in_object_array(path, reader, &["Data", "data"]),
        // Passage lists stay raw JSON and are walked one passage at a time.
        Format::Dpr | Format::Selfrag => JsonRecords::new(path, reader).lazy(&["ctxs"]),
        _ => JsonRecords::new(path, reader),
    };
    for rec in records {
        let Some(rec) = run.skipper.keep(rec)? else {
            continue;
        };
        run.records += 1;
        let lazy_ctxs = rec
            .lazy
            .iter()
            .find(|(k, _)| k == "ctxs")
            .map(|(_, v)| v.as_ref());
        let p = match parse_record(run.opts, format, rec.value, lazy_ctxs) {
            Ok(p) => p,
            Err(fe) => {
                run.skipper.handle(IngestError::Record {
                    file: file.clone(),
                    line: rec.line,
                    message: fe.to_string(),
                })?;
                continue;
            }
        };
        let answers = if lazy_ctxs.is_some() {
            p.row.answers.clone()
        } else {
            Vec::new()
        };
        let qid = emit(run, questions, contexts, dataset, file_lang, p)?;
        if let Some(raw) = lazy_ctxs {
            stream_dpr_ctxs(run, contexts, &qid, &answers, raw).map_err(|e| match e {
                IngestError::Usage(m) => IngestError::Record {
                    file: file.clone(),
                    line: rec.line,
                    message: m,
                },
                other => other,
            })?;
        }
    }
    bar.finish_and_clear();
    Ok(())
}

/// The run's options a study's reader may read.
fn read_options(opts: &IngestOptions) -> ReadOptions<'_> {
    ReadOptions {
        split: opts.split.as_deref(),
        subset: opts.subset.as_deref(),
    }
}

/// Ingest one source of a study's own format ([`RecordFormat`]): a
/// directory through [`RecordFormat::read_directory`], any other file as
/// a table, row by row, each row one record.
fn ingest_records(
    run: &mut Run,
    reader: &'static dyn RecordFormat,
    questions: &mut Sink<Questions>,
    contexts: &mut Sink<Contexts>,
    input: Input<'_>,
) -> Result<(), IngestError> {
    let path = input.path;
    if path.is_dir() {
        for record in reader.read_directory(path, &read_options(run.opts))? {
            emit_or_skip(run, questions, contexts, input, record)?;
        }
        return Ok(());
    }
    let file = path.display().to_string();
    for r in crate::formats::table::rows(path, run.opts.progress)? {
        let Some((line, value)) = run.skipper.keep(r)? else {
            continue;
        };
        let parsed = Obj::new(value, "")
            .and_then(|obj| reader.parse(obj, &read_options(run.opts)))
            .map_err(|fe| IngestError::Record {
                file: file.clone(),
                line,
                message: fe.to_string(),
            });
        emit_or_skip(run, questions, contexts, input, parsed)?;
    }
    Ok(())
}

/// Count one record of a study's format and write it, or fail on or skip
/// its error (`--on-error`).
fn emit_or_skip(
    run: &mut Run,
    questions: &mut Sink<Questions>,
    contexts: &mut Sink<Contexts>,
    input: Input<'_>,
    record: Result<Record, IngestError>,
) -> Result<(), IngestError> {
    run.records += 1;
    match record {
        Ok(p) => emit(run, questions, contexts, input.dataset, input.file_lang, p).map(drop),
        Err(e) => run.skipper.handle(e),
    }
}

/// Take one record apart with its format's parser. Raw `ctxs` kept lazy are
/// checked first ([`check_dpr_ctxs`]): a bad passage makes the record bad.
fn parse_record(
    opts: &IngestOptions,
    format: Format,
    value: Value,
    lazy_ctxs: Option<&serde_json::value::RawValue>,
) -> Result<Record, FieldError> {
    if let Some(raw) = lazy_ctxs {
        check_dpr_ctxs(raw)?;
    }
    Obj::new(value, "").and_then(|obj| match format {
        Format::Dpr | Format::Selfrag => parse_dpr(obj),
        Format::Triviaqa => parse_triviaqa(
            obj,
            opts.evidence_dir.as_deref(),
            opts.passage_words.max(10),
        ),
        Format::Hotpotqa => parse_hotpotqa(obj),
        Format::Searchqa => parse_searchqa(obj),
        Format::Mcq => parse_mcq(obj),
        Format::Beir | Format::Table | Format::DprCorpus | Format::Records(_) => {
            unreachable!("not read record by record here")
        }
    })
}

/// Write one parsed record: assign its qid and language, compute missing
/// `has_answer` flags with the DPR matcher, and push question and contexts.
fn emit(
    run: &mut Run,
    questions: &mut Sink<Questions>,
    contexts: &mut Sink<Contexts>,
    dataset: &str,
    file_lang: Option<&str>,
    mut p: Record,
) -> Result<String, IngestError> {
    let qid = run
        .qids
        .assign(dataset, p.source_id.as_deref(), &p.row.question);
    let lang = run.lang_for(file_lang, &p.row.question);
    for c in std::mem::take(&mut p.contexts) {
        emit_context(run, contexts, &qid, &p.row.answers, c)?;
    }
    questions.push(QuestionRow {
        qid: qid.clone(),
        dataset: dataset.to_string(),
        split: run.opts.split.clone(),
        lang,
        ..p.row
    })?;
    Ok(qid)
}

/// Write one passage of question `qid`: count it, compute a missing
/// `has_answer` with the DPR matcher.
fn emit_context(
    run: &mut Run,
    contexts: &mut Sink<Contexts>,
    qid: &str,
    answers: &[String],
    mut c: ContextRow,
) -> Result<(), IngestError> {
    run.note_passage(c.title.as_deref(), &c.text);
    c.qid = qid.to_string();
    if c.has_answer.is_none() && !answers.is_empty() {
        c.has_answer = Some(has_answer(answers, &c.text));
        c.has_answer_source = Some("computed".into());
    }
    match c.has_answer_source.as_deref() {
        Some("dataset") => run.has_answer_dataset += 1,
        Some("computed") => run.has_answer_computed += 1,
        _ => {}
    }
    contexts.push(c)?;
    Ok(())
}

fn ctx(
    rank: usize,
    doc_id: String,
    title: Option<String>,
    text: String,
    relevance: Option<&str>,
    meta: Option<String>,
) -> ContextRow {
    ContextRow {
        relevance: relevance.map(String::from),
        meta,
        ..crate::passage(rank, doc_id, title, text)
    }
}

fn dedup_push(list: &mut Vec<String>, s: String) {
    if !s.trim().is_empty() && !list.contains(&s) {
        list.push(s);
    }
}
