//! BEIR: `corpus.jsonl` (`_id, title, text`), `queries.jsonl` (`_id, text,
//! metadata?`), `qrels/*.tsv` (`query-id corpus-id score`).
//!
//! Gives a `corpus` artifact, a `questions` artifact (answers from
//! `metadata.answers` when present, else empty; split = the qrels file the
//! query is judged in), and a `contexts` artifact of the judged passages per
//! query (rank by grade, then doc id; relevance relevant when grade > 0).
//! Only judged passages are held in memory.

use ragprobe_artifact::{
    ContextRow, Contexts, Corpus, CorpusRow, QuestionRow, Questions, Sink, Written,
};
use ragprobe_matching::has_answer;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::BufRead;
use std::path::{Path, PathBuf};

use crate::error::{FieldError, IngestError};
use crate::fields::{str_list, Obj};
use crate::source::{open, JsonRecords};
use crate::Run;

/// The files of a BEIR dataset directory.
pub struct BeirFiles {
    pub corpus: PathBuf,
    pub queries: PathBuf,
    pub qrels: Vec<PathBuf>,
}

impl BeirFiles {
    pub fn all(&self) -> Vec<PathBuf> {
        let mut v = vec![self.corpus.clone(), self.queries.clone()];
        v.extend(self.qrels.iter().cloned());
        v
    }
}

fn find(dir: &Path, stem: &str) -> Option<PathBuf> {
    [".jsonl", ".jsonl.gz"]
        .iter()
        .map(|ext| dir.join(format!("{stem}{ext}")))
        .find(|p| p.is_file())
}

/// Locate the files of a BEIR directory (or of the directory holding a
/// given `corpus.jsonl`).
pub fn files(path: &Path) -> Result<BeirFiles, IngestError> {
    let dir = if path.is_dir() {
        path.to_path_buf()
    } else {
        path.parent().map(Path::to_path_buf).unwrap_or_default()
    };
    let missing = |what: &str| IngestError::File {
        file: dir.display().to_string(),
        message: format!("not a BEIR directory: no {what}"),
    };
    let corpus = find(&dir, "corpus").ok_or_else(|| missing("corpus.jsonl"))?;
    let queries = find(&dir, "queries").ok_or_else(|| missing("queries.jsonl"))?;
    let mut qrels = Vec::new();
    let qdir = dir.join("qrels");
    if qdir.is_dir() {
        let entries = std::fs::read_dir(&qdir).map_err(|e| IngestError::File {
            file: qdir.display().to_string(),
            message: e.to_string(),
        })?;
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "tsv") || p.to_string_lossy().ends_with(".tsv.gz")
            {
                qrels.push(p);
            }
        }
    }
    qrels.sort();
    Ok(BeirFiles {
        corpus,
        queries,
        qrels,
    })
}

struct Judgement {
    doc_id: String,
    grade: i64,
    file: String,
    line: u64,
}

/// Query id -> (split, judgements in file order), as [`read_qrels`] gives them.
type Qrels = BTreeMap<String, (String, Vec<Judgement>)>;

/// Read every qrels file: query id -> (split, judgements in file order).
fn read_qrels(run: &mut Run, files: &[PathBuf]) -> Result<Qrels, IngestError> {
    let mut out = Qrels::new();
    for path in files {
        let split = crate::dataset_stem(path);
        let (reader, _) = open(path, false)?;
        let mut previous_bad = false;
        for (i, line) in reader.lines().enumerate() {
            let lineno = i as u64 + 1;
            let err = |message: String| IngestError::Record {
                file: path.display().to_string(),
                line: lineno,
                message,
            };
            let line = match line {
                Ok(l) => l,
                // A line that is not UTF-8 was read past and can be skipped;
                // any other read error (a truncated gzip stream) repeats
                // forever, so it ends the file, even under --on-error skip.
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData && !previous_bad => {
                    previous_bad = true;
                    run.skipper.handle(err(format!("unreadable line: {e}")))?;
                    continue;
                }
                Err(e) => {
                    return Err(IngestError::File {
                        file: path.display().to_string(),
                        message: format!("line {lineno}: read error: {e}"),
                    })
                }
            };
            previous_bad = false;
            if line.trim().is_empty() {
                continue;
            }
            let cols: Vec<&str> = line.split('\t').collect();
            if lineno == 1
                && cols
                    .get(2)
                    .is_some_and(|c| c.trim().parse::<i64>().is_err())
            {
                continue; // header
            }
            if cols.len() < 3 {
                run.skipper.handle(err(format!(
                    "expected 3 tab-separated columns (query-id, corpus-id, score), found {}",
                    cols.len()
                )))?;
                continue;
            }
            let grade = match cols[2].trim().parse::<i64>() {
                Ok(g) => g,
                Err(_) => {
                    run.skipper.handle(err(format!(
                        "column `score` must be an integer, found {:?}",
                        cols[2]
                    )))?;
                    continue;
                }
            };
            let entry = out
                .entry(cols[0].to_string())
                .or_insert_with(|| (split.clone(), Vec::new()));
            entry.1.push(Judgement {
                doc_id: cols[1].to_string(),
                grade,
                file: path.display().to_string(),
                line: lineno,
            });
        }
    }
    Ok(out)
}

/// A query that has judgements: (assigned qid, source id, answers).
type JudgedQuery = (String, String, Vec<String>);

/// Judged passages: doc id -> (title, text).
type Passages = HashMap<String, (Option<String>, String)>;

pub fn run(run: &mut Run) -> Result<Vec<Written>, IngestError> {
    let mut all = Vec::new();
    for p in run.opts.paths.clone() {
        all.push(files(&p)?);
    }
    let mut questions = Sink::<Questions>::new(run.store, &run.recipe)?;
    let mut contexts = Sink::<Contexts>::new(run.store, &run.recipe)?;
    let mut corpus = Sink::<Corpus>::new(run.store, &run.recipe)?;
    for f in all {
        ingest_dir(run, &f, &mut questions, &mut contexts, &mut corpus)?;
    }
    if questions.rows() == 0 && corpus.rows() == 0 {
        return Err(IngestError::Usage(format!(
            "no valid records in {}",
            run.opts
                .paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let details = run.details();
    Ok(vec![
        questions.finish(details.clone())?,
        contexts.finish(details.clone())?,
        corpus.finish(details)?,
    ])
}

/// Ingest one BEIR directory: its qrels, then its queries, then its corpus,
/// then the contexts of the judged queries.
fn ingest_dir(
    run: &mut Run,
    f: &BeirFiles,
    questions: &mut Sink<Questions>,
    contexts: &mut Sink<Contexts>,
    corpus: &mut Sink<Corpus>,
) -> Result<(), IngestError> {
    let dir = f.corpus.parent().map(Path::to_path_buf).unwrap_or_default();
    let dataset = run
        .opts
        .dataset
        .clone()
        .unwrap_or_else(|| crate::basename(&dir));
    let qrels = read_qrels(run, &f.qrels)?;
    let judged: HashSet<&str> = qrels
        .values()
        .flat_map(|(_, js)| js.iter().map(|j| j.doc_id.as_str()))
        .collect();
    let order = read_queries(run, &f.queries, &dataset, &qrels, questions)?;
    let passages = read_corpus(run, &f.corpus, &judged, corpus)?;
    write_contexts(run, contexts, &qrels, order, &passages, &f.corpus)
}

/// Take one query record apart: (`_id`, text, `metadata.answers`, the rest
/// as meta).
fn parse_query(value: Value) -> Result<(String, String, Vec<String>, Option<String>), FieldError> {
    let mut o = Obj::new(value, "")?;
    let id = o
        .opt_id(&["_id", "id"])?
        .ok_or_else(|| FieldError::missing("_id"))?;
    let text = o.req_str("text")?;
    let mut answers = Vec::new();
    if let Some(Value::Object(mut m)) = o.take("metadata") {
        if let Some(a) = m.remove("answers") {
            answers = str_list(a, "metadata.answers")?;
        }
        if !m.is_empty() {
            o.map.insert("metadata".into(), Value::Object(m));
        }
    }
    Ok((id, text, answers, o.rest()))
}

/// Write the queries, in file order, as `questions` rows; return the
/// queries with judgements (with their answers, for `has_answer`).
fn read_queries(
    run: &mut Run,
    path: &Path,
    dataset: &str,
    qrels: &Qrels,
    questions: &mut Sink<Questions>,
) -> Result<Vec<JudgedQuery>, IngestError> {
    let mut order: Vec<JudgedQuery> = Vec::new();
    let mut seen: HashMap<String, u64> = HashMap::new();
    let (reader, _) = open(path, false)?;
    let qfile = path.display().to_string();
    for rec in JsonRecords::new(path, reader) {
        let Some(rec) = run.skipper.keep(rec)? else {
            continue;
        };
        run.records += 1;
        let (id, text, answers, meta) = match parse_query(rec.value) {
            Ok(p) => p,
            Err(fe) => {
                run.skipper.handle(IngestError::Record {
                    file: qfile.clone(),
                    line: rec.line,
                    message: fe.to_string(),
                })?;
                continue;
            }
        };
        // qrels name queries by `_id`: a repeated `_id` cannot be told
        // apart there, so it is a record error (skipped under --on-error skip).
        if let Some(first) = seen.get(&id) {
            run.skipper.handle(IngestError::Record { file: qfile.clone(), line: rec.line, message: format!("field `_id`: `{id}` already appeared on line {first}; the qrels could not tell the two queries apart") })?;
            continue;
        }
        seen.insert(id.clone(), rec.line);
        let qid = run.qids.assign(dataset, Some(&id), &text);
        let split = run
            .opts
            .split
            .clone()
            .or_else(|| qrels.get(&id).map(|(s, _)| s.clone()));
        let lang = run.lang_for(None, &text);
        if qrels.contains_key(&id) {
            order.push((qid.clone(), id.clone(), answers.clone()));
        }
        questions.push(QuestionRow {
            qid,
            dataset: dataset.to_string(),
            split,
            lang,
            question: text,
            answers,
            meta,
            ..Default::default()
        })?;
    }
    Ok(order)
}

/// Take one corpus record apart into a `corpus` row.
fn parse_passage(value: Value) -> Result<CorpusRow, FieldError> {
    let mut o = Obj::new(value, "")?;
    let id = o
        .opt_id(&["_id", "id", "doc_id"])?
        .ok_or_else(|| FieldError::missing("_id"))?;
    let title = o.opt_str("title")?.filter(|t| !t.is_empty());
    let text = o.req_text("text")?;
    Ok(CorpusRow {
        doc_id: id,
        title,
        text,
        meta: o.rest(),
    })
}

/// Stream the corpus into `corpus` rows; return the judged passages
/// (doc id -> title, text), kept for the contexts.
fn read_corpus(
    run: &mut Run,
    path: &Path,
    judged: &HashSet<&str>,
    corpus: &mut Sink<Corpus>,
) -> Result<Passages, IngestError> {
    let mut passages = Passages::new();
    let (reader, bar) = open(path, run.opts.progress)?;
    let cfile = path.display().to_string();
    for rec in JsonRecords::new(path, reader) {
        let Some(rec) = run.skipper.keep(rec)? else {
            continue;
        };
        match parse_passage(rec.value) {
            Ok(row) => {
                run.note_passage(row.title.as_deref(), &row.text);
                if judged.contains(row.doc_id.as_str()) {
                    passages.insert(row.doc_id.clone(), (row.title.clone(), row.text.clone()));
                }
                corpus.push(row)?;
            }
            Err(fe) => run.skipper.handle(IngestError::Record {
                file: cfile.clone(),
                line: rec.line,
                message: fe.to_string(),
            })?,
        }
    }
    bar.finish_and_clear();
    Ok(passages)
}

/// Write the judged passages of each judged query, in query order, ranked
/// by grade (highest first), then doc id.
fn write_contexts(
    run: &mut Run,
    contexts: &mut Sink<Contexts>,
    qrels: &Qrels,
    order: Vec<JudgedQuery>,
    passages: &Passages,
    corpus_path: &Path,
) -> Result<(), IngestError> {
    for (qid, source_id, answers) in order {
        let (_, js) = &qrels[&source_id];
        let mut js: Vec<&Judgement> = js.iter().collect();
        js.sort_by(|a, b| b.grade.cmp(&a.grade).then_with(|| a.doc_id.cmp(&b.doc_id)));
        for (rank, j) in js.into_iter().enumerate() {
            let Some((title, text)) = passages.get(&j.doc_id) else {
                run.skipper.handle(IngestError::Record {
                    file: j.file.clone(),
                    line: j.line,
                    message: format!(
                        "query `{qid}` judges corpus-id `{}`, which is not in {}",
                        j.doc_id,
                        crate::basename(corpus_path)
                    ),
                })?;
                continue;
            };
            let has = (!answers.is_empty()).then(|| has_answer(&answers, text));
            if has.is_some() {
                run.has_answer_computed += 1;
            }
            contexts.push(ContextRow {
                qid: qid.clone(),
                rank: rank as i32 + 1,
                doc_id: j.doc_id.clone(),
                title: title.clone(),
                text: text.clone(),
                score: None,
                has_answer: has,
                has_answer_source: has.map(|_| "computed".into()),
                relevance: Some(
                    if j.grade > 0 {
                        "relevant"
                    } else {
                        "non_relevant"
                    }
                    .into(),
                ),
                meta: Some(json!({ "qrel": j.grade }).to_string()),
            })?;
        }
    }
    Ok(())
}
