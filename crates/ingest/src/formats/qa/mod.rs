//! Question-with-passages formats: DPR/FiD, Self-RAG (PopQA), NoMIRACL,
//! TriviaQA-RC, HotpotQA, SearchQA, MCQ — one file per family of readers;
//! this file drives them (records in, `questions` and `contexts` out).
//! Each record gives one `questions` row and its `contexts` rows.

use ragprobe_artifact::{ContextRow, Contexts, QuestionRow, Questions, Sink, Written};
use ragprobe_matching::has_answer;
use serde_json::{json, Value};
use std::path::Path;

use crate::error::{FieldError, IngestError};
use crate::fields::{str_list, type_of, Obj};
use crate::source::{open, JsonRecords};
use crate::{passage_id, Format, IngestOptions, Record, Run};

mod dpr;
mod nomiracl;
mod rc;
use dpr::*;
use nomiracl::*;
use rc::*;

/// ISO 639-1 language codes: a file name's first word is taken as its
/// language only when it is one of these (so `dev.jsonl` is not "dev").
const ISO_639_1: &str = "aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu";

/// NoMIRACL's directory names on Hugging Face (`data/english/...`).
const NOMIRACL_NAMES: &[(&str, &str)] = &[
    ("arabic", "ar"),
    ("bengali", "bn"),
    ("german", "de"),
    ("english", "en"),
    ("spanish", "es"),
    ("persian", "fa"),
    ("finnish", "fi"),
    ("french", "fr"),
    ("hindi", "hi"),
    ("indonesian", "id"),
    ("japanese", "ja"),
    ("korean", "ko"),
    ("russian", "ru"),
    ("swahili", "sw"),
    ("telugu", "te"),
    ("thai", "th"),
    ("yoruba", "yo"),
    ("chinese", "zh"),
];

/// Language code from a NoMIRACL-style file or directory name
/// (`de.dev.jsonl`, `sw-test.jsonl`, `en/`, `english/`): an ISO 639-1 code
/// or a NoMIRACL language name; anything else (`dev.jsonl`) gives none.
fn lang_from_file_name(path: &Path) -> Option<String> {
    let stem = crate::dataset_stem(path).to_lowercase();
    let first = stem.split(['.', '-', '_']).next()?;
    if let Some((_, code)) = NOMIRACL_NAMES.iter().find(|(n, _)| *n == first) {
        return Some(code.to_string());
    }
    (first.len() == 2 && ISO_639_1.split(' ').any(|c| c == first)).then(|| first.to_string())
}

pub fn run(run: &mut Run, format: Format) -> Result<Vec<Written>, IngestError> {
    let mut questions = Sink::<Questions>::new(run.store, &run.recipe)?;
    let mut contexts = Sink::<Contexts>::new(run.store, &run.recipe)?;
    for path in run.opts.paths.clone() {
        let dataset = run.dataset_for(&path);
        let file_lang = if format == Format::Nomiracl {
            lang_from_file_name(&path)
        } else {
            None
        };
        let input = Input {
            path: &path,
            dataset: &dataset,
            file_lang: file_lang.as_deref(),
        };
        if format == Format::Nomiracl && path.is_dir() {
            ingest_nomiracl_dir(run, &mut questions, &mut contexts, input)?;
            continue;
        }
        ingest_file(run, format, &mut questions, &mut contexts, input)?;
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
    /// The language its name gives (NoMIRACL's `de.dev.jsonl`), if any.
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
    if let Format::Records(reader) = format {
        return ingest_records(run, reader, questions, contexts, path, dataset);
    }
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

/// Ingest one file of a study's own format ([`crate::RecordFormat`]):
/// any table file, row by row, each row one record.
fn ingest_records(
    run: &mut Run,
    reader: &'static dyn crate::RecordFormat,
    questions: &mut Sink<Questions>,
    contexts: &mut Sink<Contexts>,
    path: &Path,
    dataset: &str,
) -> Result<(), IngestError> {
    let file = path.display().to_string();
    for r in crate::formats::table::rows(path, run.opts.progress)? {
        let Some((line, value)) = run.skipper.keep(r)? else {
            continue;
        };
        run.records += 1;
        match Obj::new(value, "").and_then(|obj| reader.parse(obj)) {
            Ok(p) => {
                emit(run, questions, contexts, dataset, None, p)?;
            }
            Err(fe) => run.skipper.handle(IngestError::Record {
                file: file.clone(),
                line,
                message: fe.to_string(),
            })?,
        }
    }
    Ok(())
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
        Format::Nomiracl => parse_nomiracl(obj, opts.subset.as_deref()),
        Format::Triviaqa => parse_triviaqa(
            obj,
            opts.evidence_dir.as_deref(),
            opts.passage_words.max(10),
        ),
        Format::Hotpotqa => parse_hotpotqa(obj),
        Format::Searchqa => parse_searchqa(obj),
        Format::Mcq => parse_mcq(obj),
        Format::Records(r) => r.parse(obj),
        Format::Beir | Format::Table | Format::DprCorpus => {
            unreachable!("not a QA-with-passages format")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lang_from_nomiracl_names() {
        // Regression (reliability #13): `dev.jsonl` was language "dev".
        for (path, want) in [
            ("x/de.dev.jsonl", Some("de")),
            ("sw-test.jsonl.gz", Some("sw")),
            ("nomiracl.jsonl", None),
            ("x/dev.jsonl", None),
            ("x/test.jsonl", None),
            ("data/english", Some("en")),
            ("data/yo", Some("yo")),
        ] {
            assert_eq!(
                lang_from_file_name(Path::new(path)).as_deref(),
                want,
                "{path}"
            );
        }
    }
}
