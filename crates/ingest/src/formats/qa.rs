//! Question-with-passages formats: DPR/FiD, Self-RAG (PopQA), NoMIRACL, RGB.
//! Each record gives one `questions` row and its `contexts` rows.

use ragprobe_artifact::{ContextRow, Contexts, QuestionRow, Questions, Sink, Written};
use ragprobe_matching::has_answer;
use serde_json::{json, Value};
use std::path::Path;

use crate::error::{FieldError, IngestError};
use crate::fields::{str_list, type_of, Obj};
use crate::source::{open, JsonRecords};
use crate::{passage_id, Format, IngestOptions, Run};

/// A record taken apart, before the qid is assigned.
struct Parsed {
    source_id: Option<String>,
    question: String,
    answers: Vec<String>,
    answer_parts: Option<Vec<Vec<String>>>,
    fake_answers: Option<Vec<String>>,
    subset: Option<String>,
    options: Option<Vec<(String, String)>>,
    meta: Option<String>,
    /// Contexts with `qid` left empty; `rank` is their order.
    contexts: Vec<ContextRow>,
}

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
        if format == Format::Nomiracl && path.is_dir() {
            ingest_nomiracl_dir(
                run,
                &mut questions,
                &mut contexts,
                &path,
                &dataset,
                file_lang.as_deref(),
            )?;
            continue;
        }
        ingest_file(
            run,
            format,
            &mut questions,
            &mut contexts,
            &path,
            &dataset,
            file_lang.as_deref(),
        )?;
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

/// Ingest a NoMIRACL distribution directory ([`nomiracl_distribution`]):
/// write its good queries, skip or fail on its bad ones.
fn ingest_nomiracl_dir(
    run: &mut Run,
    questions: &mut Sink<Questions>,
    contexts: &mut Sink<Contexts>,
    path: &Path,
    dataset: &str,
    file_lang: Option<&str>,
) -> Result<(), IngestError> {
    for (p, file, line) in nomiracl_distribution(path, run.opts.split.as_deref())? {
        run.records += 1;
        match p {
            Ok(p) => {
                emit(run, questions, contexts, dataset, file_lang, p)?;
            }
            Err(message) => run.skipper.handle(IngestError::Record {
                file,
                line,
                message,
            })?,
        }
    }
    Ok(())
}

/// Ingest one input file of a QA-with-passages format, record by record.
fn ingest_file(
    run: &mut Run,
    format: Format,
    questions: &mut Sink<Questions>,
    contexts: &mut Sink<Contexts>,
    path: &Path,
    dataset: &str,
    file_lang: Option<&str>,
) -> Result<(), IngestError> {
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
            p.answers.clone()
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

/// Take one record apart with its format's parser. Raw `ctxs` kept lazy are
/// checked first ([`check_dpr_ctxs`]): a bad passage makes the record bad.
fn parse_record(
    opts: &IngestOptions,
    format: Format,
    value: Value,
    lazy_ctxs: Option<&serde_json::value::RawValue>,
) -> Result<Parsed, FieldError> {
    if let Some(raw) = lazy_ctxs {
        check_dpr_ctxs(raw)?;
    }
    Obj::new(value, "").and_then(|obj| match format {
        Format::Dpr | Format::Selfrag => parse_dpr(obj),
        Format::Nomiracl => parse_nomiracl(obj, opts.subset.as_deref()),
        Format::Rgb => parse_rgb(obj),
        Format::Triviaqa => parse_triviaqa(
            obj,
            opts.evidence_dir.as_deref(),
            opts.passage_words.max(10),
        ),
        Format::Hotpotqa => parse_hotpotqa(obj),
        Format::Searchqa => parse_searchqa(obj),
        Format::Mcq => parse_mcq(obj),
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
    mut p: Parsed,
) -> Result<String, IngestError> {
    let qid = run
        .qids
        .assign(dataset, p.source_id.as_deref(), &p.question);
    let lang = run.lang_for(file_lang, &p.question);
    for c in std::mem::take(&mut p.contexts) {
        emit_context(run, contexts, &qid, &p.answers, c)?;
    }
    questions.push(QuestionRow {
        qid: qid.clone(),
        dataset: dataset.to_string(),
        split: run.opts.split.clone(),
        lang,
        question: p.question,
        answers: p.answers,
        answer_parts: p.answer_parts,
        fake_answers: p.fake_answers,
        subset: p.subset,
        options: p.options,
        meta: p.meta,
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

/// DPR/Self-RAG `ctxs` kept raw by the reader ([`JsonRecords::lazy`]):
/// written element by element after [`check_dpr_ctxs`] passed, so a
/// record's memory stays a small multiple of its bytes whatever the number
/// of passages.
fn stream_dpr_ctxs(
    run: &mut Run,
    contexts: &mut Sink<Contexts>,
    qid: &str,
    answers: &[String],
    raw: &serde_json::value::RawValue,
) -> Result<(), IngestError> {
    let mut failed: Option<IngestError> = None;
    let walked = crate::source::for_each_element(raw, |i, v| {
        let r = Obj::new(v, &format!("ctxs[{i}]"))
            .and_then(|o| dpr_ctx(i, o))
            .map_err(|e| IngestError::Usage(e.to_string()))
            .and_then(|c| emit_context(run, contexts, qid, answers, c));
        r.map_err(|e| {
            failed = Some(e);
            String::from("stopped")
        })
    });
    match (failed, walked) {
        (Some(e), _) => Err(e),
        (None, Err(m)) => Err(IngestError::Usage(m)),
        (None, Ok(())) => Ok(()),
    }
}

/// Check every element of raw `ctxs`, keeping none: a bad passage makes the
/// whole record bad before anything of it is written.
fn check_dpr_ctxs(raw: &serde_json::value::RawValue) -> Result<(), FieldError> {
    let mut failed: Option<FieldError> = None;
    let walked = crate::source::for_each_element(raw, |i, v| {
        Obj::new(v, &format!("ctxs[{i}]"))
            .and_then(|o| dpr_ctx(i, o))
            .map(|_| ())
            .map_err(|e| {
                failed = Some(e);
                String::from("stopped")
            })
    });
    match (failed, walked) {
        (Some(e), _) => Err(e),
        (None, Err(m)) => Err(FieldError::new(
            "ctxs",
            format!("must be a list of objects ({m})"),
        )),
        (None, Ok(())) => Ok(()),
    }
}

/// One record of a NoMIRACL distribution directory: the parsed query (or
/// why it is bad), the file and the line that name it in errors.
type DistRecord = (Result<Parsed, String>, String, u64);

/// NoMIRACL's own distribution format, one directory per language, as the
/// reference data loader (project-miracl/nomiracl `dataset/data_loader.py`,
/// `dataset/util.py`) reads it:
/// * `corpus.jsonl`: `{docid, title, text}`; title and text are stripped and
///   their newlines made spaces (`load_corpus`);
/// * `topics/<split>.<subset>.tsv`: `qid<TAB>query`, no header, no quoting;
/// * `qrels/<split>.<subset>.tsv`: `qid<TAB>Q0<TAB>docid<TAB>score` (TREC);
///   a query's passages are its qrels lines in file order (the order the
///   reference's prompts use); score > 0 marks a relevant passage.
///
/// `<subset>` is `relevant` or `non_relevant` and becomes the question's
/// subset; only queries with qrels are kept, as in `load_data`. `split`
/// (dev / test) selects the files; without it, every split present.
fn nomiracl_distribution(dir: &Path, split: Option<&str>) -> Result<Vec<DistRecord>, IngestError> {
    // The Hugging Face repository ships it gzipped (`corpus.jsonl.gz`).
    let plain = dir.join("corpus.jsonl");
    let gz = dir.join("corpus.jsonl.gz");
    let corpus_path = if !plain.exists() && gz.exists() {
        gz
    } else {
        plain
    };
    let corpus = read_nomiracl_corpus(&corpus_path)?;
    let topic_files = nomiracl_topic_files(dir, split)?;
    let mut out = Vec::new();
    for (sp, subset, tpath) in topic_files {
        let qpath = dir.join("qrels").join(format!("{sp}.{subset}.tsv"));
        let qfile = qpath.display().to_string();
        let (qrels, qrels_order) = read_nomiracl_qrels(&qpath)?;
        let tfile = tpath.display().to_string();
        let topics = read_nomiracl_topics(&tpath, &mut out)?;
        for qid in &qrels_order {
            let Some((query, line)) = topics.get(qid) else {
                continue;
            };
            let (qid, query, line) = (qid.as_str(), query.clone(), *line);
            let Some(judged) = qrels.get(qid) else {
                continue;
            };
            let contexts = match nomiracl_contexts(judged, &corpus, &subset) {
                Ok(contexts) => contexts,
                Err((docid, qline)) => {
                    out.push((
                        Err(format!(
                            "docid `{docid}` (judged for query `{qid}`) is not in {}",
                            corpus_path.display()
                        )),
                        qfile.clone(),
                        qline,
                    ));
                    continue;
                }
            };
            if query.trim().is_empty() {
                out.push((Err("field `query` is empty".into()), tfile.clone(), line));
                continue;
            }
            let parsed = Parsed {
                source_id: Some(qid.to_string()),
                question: query,
                answers: Vec::new(),
                answer_parts: None,
                fake_answers: None,
                subset: Some(subset.clone()),
                options: None,
                meta: None,
                contexts,
            };
            out.push((Ok(parsed), tfile.clone(), line));
        }
    }
    Ok(out)
}

/// A NoMIRACL distribution's corpus: docid -> (title, text).
type NomiraclCorpus = std::collections::HashMap<String, (String, String)>;

/// A NoMIRACL qrels file: qid -> [(docid, score, line)] in file order.
type NomiraclQrels = std::collections::HashMap<String, Vec<(String, i64, u64)>>;

/// An I/O error on a NoMIRACL distribution file, naming the path.
fn nomiracl_io(p: &Path, e: std::io::Error) -> IngestError {
    IngestError::Usage(format!("{}: {e}", p.display()))
}

/// Read a NoMIRACL `corpus.jsonl`; any bad line is an error.
fn read_nomiracl_corpus(corpus_path: &Path) -> Result<NomiraclCorpus, IngestError> {
    use std::io::BufRead;
    let mut corpus = NomiraclCorpus::new();
    let f = std::fs::File::open(corpus_path).map_err(|e| nomiracl_io(corpus_path, e))?;
    let f: Box<dyn std::io::Read> = if corpus_path.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::MultiGzDecoder::new(f))
    } else {
        Box::new(f)
    };
    for (i, line) in std::io::BufReader::new(f).lines().enumerate() {
        let line = line.map_err(|e| nomiracl_io(corpus_path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let (docid, passage) = nomiracl_corpus_line(&line, corpus_path, i as u64 + 1)?;
        corpus.insert(docid, passage);
    }
    Ok(corpus)
}

/// One `corpus.jsonl` line: (docid, (title, text)), title and text stripped
/// and their newlines made spaces; a null title is empty.
fn nomiracl_corpus_line(
    line: &str,
    corpus_path: &Path,
    lineno: u64,
) -> Result<(String, (String, String)), IngestError> {
    let bad = |m: String| IngestError::Record {
        file: corpus_path.display().to_string(),
        line: lineno,
        message: m,
    };
    let v: Value = serde_json::from_str(line).map_err(|e| bad(format!("malformed JSON: {e}")))?;
    let field = |k: &str| match &v[k] {
        Value::String(s) => Ok(s.trim().replace('\n', " ")),
        Value::Null if k == "title" => Ok(String::new()),
        other => Err(bad(format!(
            "field `{k}` must be a string, found {}",
            type_of(other)
        ))),
    };
    let docid = match &v["docid"] {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => {
            return Err(bad(format!(
                "field `docid` must be a string, found {}",
                type_of(other)
            )))
        }
    };
    Ok((docid, (field("title")?, field("text")?)))
}

/// The `topics/<split>.<relevant|non_relevant>.tsv` files to read, as
/// sorted (split, subset, path); none is an error.
fn nomiracl_topic_files(
    dir: &Path,
    split: Option<&str>,
) -> Result<Vec<(String, String, std::path::PathBuf)>, IngestError> {
    let mut topic_files: Vec<(String, String, std::path::PathBuf)> = Vec::new();
    let topics_dir = dir.join("topics");
    for e in std::fs::read_dir(&topics_dir).map_err(|e| nomiracl_io(&topics_dir, e))? {
        let path = e.map_err(|e| nomiracl_io(&topics_dir, e))?.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some(stem) = name.strip_suffix(".tsv") else {
            continue;
        };
        let Some((sp, subset)) = stem.split_once('.') else {
            continue;
        };
        if !matches!(subset, "relevant" | "non_relevant") || split.is_some_and(|s| s != sp) {
            continue;
        }
        topic_files.push((sp.to_string(), subset.to_string(), path));
    }
    topic_files.sort();
    if topic_files.is_empty() {
        return Err(IngestError::Usage(format!(
            "{}: no topics/<split>.<relevant|non_relevant>.tsv{}",
            dir.display(),
            split
                .map(|s| format!(" for split `{s}`"))
                .unwrap_or_default()
        )));
    }
    Ok(topic_files)
}

/// Read a NoMIRACL qrels file (TREC format): the judgements per query, and
/// the queries in the order of their first judgement (the reference's
/// qrels dict order, which its query sample draws from). A bad line is an
/// error.
fn read_nomiracl_qrels(qpath: &Path) -> Result<(NomiraclQrels, Vec<String>), IngestError> {
    use std::io::BufRead;
    let qfile = qpath.display().to_string();
    let mut qrels = NomiraclQrels::new();
    let mut qrels_order: Vec<String> = Vec::new();
    let f = std::fs::File::open(qpath).map_err(|e| nomiracl_io(qpath, e))?;
    for (i, line) in std::io::BufReader::new(f).lines().enumerate() {
        let line = line.map_err(|e| nomiracl_io(qpath, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        let score = cols.get(3).and_then(|s| s.trim().parse::<i64>().ok());
        match (cols.len() >= 4, score) {
            (true, Some(score)) => {
                if !qrels.contains_key(cols[0]) {
                    qrels_order.push(cols[0].to_string());
                }
                let list = qrels.entry(cols[0].to_string()).or_default();
                // A later duplicate judgement overwrites the score in place (a Python dict).
                match list.iter_mut().find(|x| x.0 == cols[2]) {
                    Some(x) => x.1 = score,
                    None => list.push((cols[2].to_string(), score, i as u64 + 1)),
                }
            }
            _ => return Err(IngestError::Record {
                file: qfile.clone(),
                line: i as u64 + 1,
                message:
                    "a qrels line must be `qid<TAB>Q0<TAB>docid<TAB>score` with an integer score"
                        .into(),
            }),
        }
    }
    Ok((qrels, qrels_order))
}

/// Read a NoMIRACL topics file: qid -> (query, line). A line without a tab
/// becomes a bad record in `out`.
fn read_nomiracl_topics(
    tpath: &Path,
    out: &mut Vec<DistRecord>,
) -> Result<std::collections::HashMap<String, (String, u64)>, IngestError> {
    use std::io::BufRead;
    let tfile = tpath.display().to_string();
    let f = std::fs::File::open(tpath).map_err(|e| nomiracl_io(tpath, e))?;
    let mut topics: std::collections::HashMap<String, (String, u64)> =
        std::collections::HashMap::new();
    for (i, line) in std::io::BufReader::new(f).lines().enumerate() {
        let line = line.map_err(|e| nomiracl_io(tpath, e))?;
        if line.trim().is_empty() {
            continue;
        }
        match line.split_once('\t') {
            Some((qid, query)) => {
                topics.insert(
                    qid.to_string(),
                    (
                        query.split('\t').next().unwrap_or("").to_string(),
                        i as u64 + 1,
                    ),
                );
            }
            None => out.push((
                Err("a topics line must be `qid<TAB>query`".into()),
                tfile.clone(),
                i as u64 + 1,
            )),
        }
    }
    Ok(topics)
}

/// A query's contexts from its judgements, in qrels order; `relevant` only
/// in the `relevant` subset with a positive score. A docid not in the
/// corpus gives that docid and its qrels line.
fn nomiracl_contexts(
    judged: &[(String, i64, u64)],
    corpus: &NomiraclCorpus,
    subset: &str,
) -> Result<Vec<ContextRow>, (String, u64)> {
    let mut contexts = Vec::with_capacity(judged.len());
    for (docid, score, qline) in judged {
        let Some((title, text)) = corpus.get(docid) else {
            return Err((docid.clone(), *qline));
        };
        let label = if subset == "relevant" && *score > 0 {
            "relevant"
        } else {
            "non_relevant"
        };
        let rank = contexts.len() + 1;
        let mut c = ctx(
            rank,
            docid.clone(),
            Some(title.clone()).filter(|t| !t.is_empty()),
            text.clone(),
            Some(label),
            None,
        );
        c.has_answer = Some(label == "relevant");
        c.has_answer_source = Some("relevance".into());
        contexts.push(c);
    }
    Ok(contexts)
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
    let contexts = ctxs
        .into_iter()
        .enumerate()
        .map(|(i, c)| dpr_ctx(i, c))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Parsed {
        source_id,
        question,
        answers,
        answer_parts: None,
        fake_answers: None,
        subset: None,
        options: None,
        meta: obj.rest(),
        contexts,
    })
}

/// One DPR/Self-RAG passage (`ctxs[i]`).
fn dpr_ctx(i: usize, mut c: Obj) -> Result<ContextRow, FieldError> {
    {
        let title = c.opt_str("title")?;
        let text = match c.take("text") {
            Some(Value::String(s)) => s,
            Some(other) => {
                return Err(FieldError::new(
                    c.field_name("text"),
                    format!("must be a string, found {}", type_of(&other)),
                ))
            }
            None => return Err(FieldError::missing(c.field_name("text"))),
        };
        let doc_id = c
            .opt_id(&["id", "docid", "doc_id", "passage_id"])?
            .unwrap_or_else(|| passage_id(title.as_deref(), &text));
        let score = c.opt_f64("score")?;
        let has = c.opt_bool(&["hasanswer", "has_answer"])?;
        Ok(ContextRow {
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
        })
    }
}

/// NoMIRACL: `{query_id, query, positive_passages: [{docid, title, text}],
/// negative_passages: [...]}`. The human judgement goes to `relevance`
/// (relevant / non_relevant) and to `has_answer` (`has_answer_source =
/// relevance`); the query's subset is the option or, if not given, relevant
/// when it has a positive passage.
fn parse_nomiracl(mut obj: Obj, subset: Option<&str>) -> Result<Parsed, FieldError> {
    let source_id = obj
        .opt_id(&["query_id", "id", "qid"])?
        .ok_or_else(|| FieldError::missing("query_id"))?;
    let question = obj.req_str("query")?;
    let positives = obj.opt_obj_list("positive_passages")?;
    let negatives = obj.opt_obj_list("negative_passages")?;
    let subset = subset.map(str::to_string).unwrap_or_else(|| {
        if positives.is_empty() {
            "non_relevant".into()
        } else {
            "relevant".into()
        }
    });
    let mut contexts = Vec::new();
    for (label, list) in [("relevant", positives), ("non_relevant", negatives)] {
        for mut p in list {
            let doc_id = p
                .opt_id(&["docid", "doc_id", "id"])?
                .ok_or_else(|| FieldError::missing(p.field_name("docid")))?;
            let title = p.opt_str("title")?;
            let text = p.req_text("text")?;
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
    Ok(Parsed {
        source_id: Some(source_id),
        question,
        answers: Vec::new(),
        answer_parts: None,
        fake_answers: None,
        subset: Some(subset),
        options: None,
        meta: obj.rest(),
        contexts,
    })
}

/// RGB's `answer` as `checkanswer` (`evalue.py`) reads it: a plain string
/// is one part; a list holds one entry per required part, each a string
/// (that part's only form) or a list of aliases (any one matches). So a
/// flat list of strings means every string must appear (as in `zh_int`).
fn rgb_answer(v: Value) -> Result<(Vec<String>, Vec<Vec<String>>), FieldError> {
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
    Ok(Parsed {
        source_id,
        question,
        answers,
        answer_parts: Some(parts),
        fake_answers,
        subset: None,
        options: None,
        meta: obj.rest(),
        contexts,
    })
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
        qid: String::new(),
        rank: rank as i32,
        doc_id,
        title,
        text,
        score: None,
        has_answer: None,
        has_answer_source: None,
        relevance: relevance.map(String::from),
        meta,
    }
}

fn dedup_push(list: &mut Vec<String>, s: String) {
    if !s.trim().is_empty() && !list.contains(&s) {
        list.push(s);
    }
}

/// `path` resolves (after `..` and symlinks) to a file inside `dir`: an
/// evidence `Filename` such as `../../x.txt` or `/etc/hostname` must never
/// turn a file outside the evidence directory into passages.
fn inside(dir: &Path, path: &Path) -> bool {
    match (std::fs::canonicalize(dir), std::fs::canonicalize(path)) {
        (Ok(d), Ok(p)) => p.starts_with(&d),
        _ => false,
    }
}

/// Split a document into passages of at most `words` words.
fn chunks(text: &str, words: usize) -> Vec<String> {
    let w: Vec<&str> = text.split_whitespace().collect();
    w.chunks(words).map(|c| c.join(" ")).collect()
}

/// TriviaQA RC: `Answer.Value` then `Answer.Aliases` are the gold aliases;
/// with an evidence directory, each evidence file (`wikipedia/<Filename>`
/// for EntityPages, `web/<Filename>` for SearchResults) becomes passages of
/// at most `words` words; without one, the SearchResults descriptions are
/// the contexts.
fn parse_triviaqa(
    mut obj: Obj,
    evidence: Option<&Path>,
    words: usize,
) -> Result<Parsed, FieldError> {
    let source_id = obj.opt_id(&["QuestionId"])?;
    let question = obj.req_str("Question")?;
    let mut answer = match obj.take("Answer") {
        Some(v) => Obj::new(v, "Answer")?,
        None => return Err(FieldError::missing("Answer")),
    };
    let mut answers = vec![answer.req_str("Value")?];
    for a in answer.opt_str_list("Aliases")?.unwrap_or_default() {
        dedup_push(&mut answers, a);
    }
    let mut contexts = Vec::new();
    for (key, sub) in [("EntityPages", "wikipedia"), ("SearchResults", "web")] {
        for mut page in obj.opt_obj_list(key)? {
            let title = page.opt_str("Title")?;
            match evidence {
                Some(dir) => {
                    let Some(fname) = page.opt_str("Filename")? else {
                        continue;
                    };
                    let path = [dir.join(sub).join(&fname), dir.join(&fname)]
                        .into_iter()
                        .find(|p| p.is_file());
                    let Some(path) = path else {
                        return Err(FieldError::new(
                            page.field_name("Filename"),
                            format!("evidence file `{fname}` is not under {}", dir.display()),
                        ));
                    };
                    if !inside(dir, &path) {
                        return Err(FieldError::new(page.field_name("Filename"), format!("evidence file `{fname}` resolves outside the evidence directory {}; refused", dir.display())));
                    }
                    let text = std::fs::read_to_string(&path).map_err(|e| {
                        FieldError::new(
                            page.field_name("Filename"),
                            format!("{}: {e}", path.display()),
                        )
                    })?;
                    for (i, c) in chunks(&text, words).into_iter().enumerate() {
                        contexts.push(ctx(
                            contexts.len() + 1,
                            format!("{fname}#{i}"),
                            title.clone(),
                            c,
                            None,
                            None,
                        ));
                    }
                }
                None => {
                    if let Some(d) = page.opt_str("Description")? {
                        let id = page
                            .opt_str("Url")?
                            .unwrap_or_else(|| passage_id(title.as_deref(), &d));
                        contexts.push(ctx(contexts.len() + 1, id, title.clone(), d, None, None));
                    }
                }
            }
        }
    }
    if let Some(rest) = answer.rest() {
        obj.map.insert(
            "Answer".into(),
            serde_json::from_str(&rest).unwrap_or(Value::Null),
        );
    }
    Ok(Parsed {
        source_id,
        question,
        answers,
        answer_parts: None,
        fake_answers: None,
        subset: None,
        options: None,
        meta: obj.rest(),
        contexts,
    })
}

/// HotpotQA (distractor setting): each `context` paragraph is a passage
/// (its sentences joined by spaces); paragraphs named in `supporting_facts`
/// are `relevant`, the distractors `non_relevant`. The sentences and the
/// supporting sentence ids are kept in the passage's `meta`, so the
/// answer-bearing assertion is known.
fn parse_hotpotqa(mut obj: Obj) -> Result<Parsed, FieldError> {
    let source_id = obj.opt_id(&["_id", "id"])?;
    let question = obj.req_str("question")?;
    let answer = obj.req_str("answer")?;
    let mut supporting: Vec<(String, i64)> = Vec::new();
    if let Some(v) = obj.map.get("supporting_facts") {
        let arr = v.as_array().ok_or_else(|| {
            FieldError::new(
                "supporting_facts",
                "must be a list of [title, sentence id] pairs",
            )
        })?;
        for (i, f) in arr.iter().enumerate() {
            match f.as_array().map(|p| {
                (
                    p.first().and_then(Value::as_str),
                    p.get(1).and_then(Value::as_i64),
                )
            }) {
                Some((Some(t), Some(n))) => supporting.push((t.to_string(), n)),
                _ => {
                    return Err(FieldError::new(
                        format!("supporting_facts[{i}]"),
                        "must be a [title, sentence id] pair",
                    ))
                }
            }
        }
    }
    let paragraphs = obj
        .take("context")
        .ok_or_else(|| FieldError::missing("context"))?;
    let paragraphs = paragraphs.as_array().ok_or_else(|| {
        FieldError::new("context", "must be a list of [title, [sentences]] pairs")
    })?;
    let mut contexts = Vec::new();
    for (i, p) in paragraphs.iter().enumerate() {
        let pair = p.as_array().filter(|a| a.len() == 2).ok_or_else(|| {
            FieldError::new(
                format!("context[{i}]"),
                "must be a [title, [sentences]] pair",
            )
        })?;
        let title = pair[0]
            .as_str()
            .ok_or_else(|| FieldError::new(format!("context[{i}][0]"), "must be a string"))?
            .to_string();
        let sentences = str_list(pair[1].clone(), &format!("context[{i}][1]"))?;
        let sup: Vec<i64> = supporting
            .iter()
            .filter(|(t, _)| *t == title)
            .map(|(_, n)| *n)
            .collect();
        let meta = json!({"sentences": sentences, "supporting_sentences": sup}).to_string();
        let rel = if sup.is_empty() {
            "non_relevant"
        } else {
            "relevant"
        };
        contexts.push(ctx(
            i + 1,
            title.clone(),
            Some(title),
            sentences.join(" "),
            Some(rel),
            Some(meta),
        ));
    }
    Ok(Parsed {
        source_id,
        question,
        answers: vec![answer],
        answer_parts: None,
        fake_answers: None,
        subset: None,
        options: None,
        meta: obj.rest(),
        contexts,
    })
}

/// SearchQA: `question`, `answer`, and search snippets as contexts, from
/// `search_results` (`snippet`, `title`, `url`) or a plain `snippets` list.
fn parse_searchqa(mut obj: Obj) -> Result<Parsed, FieldError> {
    let source_id = obj.opt_id(&["id", "qid"])?;
    let question = match obj.take_any(&["question", "Question"]) {
        Some((k, Value::String(s))) if !s.trim().is_empty() => {
            let _ = k;
            s
        }
        Some((k, _)) => return Err(FieldError::new(k, "must be a non-empty string")),
        None => return Err(FieldError::missing("question")),
    };
    let answer = match obj.take_any(&["answer", "Answer"]) {
        Some((_, Value::String(s))) if !s.trim().is_empty() => s,
        Some((k, _)) => return Err(FieldError::new(k, "must be a non-empty string")),
        None => return Err(FieldError::missing("answer")),
    };
    let mut contexts = Vec::new();
    for mut r in obj.opt_obj_list("search_results")? {
        let title = r.opt_str("title")?;
        let Some(snippet) = r.opt_str("snippet")?.filter(|s| !s.trim().is_empty()) else {
            continue;
        };
        let id = r
            .opt_str("url")?
            .unwrap_or_else(|| passage_id(title.as_deref(), &snippet));
        contexts.push(ctx(contexts.len() + 1, id, title, snippet, None, r.rest()));
    }
    for s in obj.opt_str_list("snippets")?.unwrap_or_default() {
        let id = passage_id(None, &s);
        contexts.push(ctx(contexts.len() + 1, id, None, s, None, None));
    }
    Ok(Parsed {
        source_id,
        question,
        answers: vec![answer],
        answer_parts: None,
        fake_answers: None,
        subset: None,
        options: None,
        meta: obj.rest(),
        contexts,
    })
}

/// MedQA-style multiple choice (any language): `options` (label -> text,
/// kept in label order), `answer_idx` (the correct label) and `answer` (its
/// text; taken from the options when missing). The gold alias is the
/// option text. An optional `evidence` (string or list) gives passages.
fn parse_mcq(mut obj: Obj) -> Result<Parsed, FieldError> {
    let source_id = obj.opt_id(&["id", "qid"])?;
    let question = obj.req_str("question")?;
    let options: Vec<(String, String)> = match obj.take("options") {
        Some(Value::Object(m)) => m
            .into_iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k, s)),
                other => Err(FieldError::new(
                    format!("options.{k}"),
                    format!("must be a string, found {}", type_of(&other)),
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(FieldError::new(
                "options",
                format!(
                    "must be an object of label -> text, found {}",
                    type_of(&other)
                ),
            ))
        }
        None => return Err(FieldError::missing("options")),
    };
    if options.len() < 2 {
        return Err(FieldError::new("options", "needs at least two options"));
    }
    let idx = obj.req_str("answer_idx")?;
    let Some((_, text)) = options.iter().find(|(l, _)| *l == idx) else {
        return Err(FieldError::new(
            "answer_idx",
            format!(
                "`{idx}` is not one of the options ({})",
                options
                    .iter()
                    .map(|o| o.0.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    };
    // The correct option's text first; the record's `answer` too when it differs.
    let mut answers = vec![text.clone()];
    if let Some(a) = obj.opt_str("answer")? {
        dedup_push(&mut answers, a);
    }
    // Optional evidence passages (a string or a list of strings), e.g. for
    // the evidence-edit protocol on multiple-choice questions.
    let evidence: Vec<String> = match obj.take("evidence") {
        None => vec![],
        Some(Value::String(s)) => vec![s],
        Some(v) => str_list(v, "evidence")?,
    };
    let contexts = evidence
        .into_iter()
        .enumerate()
        .map(|(i, t)| ctx(i + 1, format!("evidence-{i}"), None, t, None, None))
        .collect();
    Ok(Parsed {
        source_id,
        question,
        answers,
        answer_parts: None,
        fake_answers: None,
        subset: None,
        options: Some(options),
        meta: obj.rest(),
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

    #[test]
    fn lang_from_nomiracl_names() {
        assert_eq!(
            lang_from_file_name(Path::new("x/de.dev.jsonl")).as_deref(),
            Some("de")
        );
        assert_eq!(
            lang_from_file_name(Path::new("sw-test.jsonl.gz")).as_deref(),
            Some("sw")
        );
        assert_eq!(lang_from_file_name(Path::new("nomiracl.jsonl")), None);
        // Regression (reliability #13): `dev.jsonl` was language "dev".
        assert_eq!(lang_from_file_name(Path::new("x/dev.jsonl")), None);
        assert_eq!(lang_from_file_name(Path::new("x/test.jsonl")), None);
        assert_eq!(
            lang_from_file_name(Path::new("data/english")).as_deref(),
            Some("en")
        );
        assert_eq!(
            lang_from_file_name(Path::new("data/yo")).as_deref(),
            Some("yo")
        );
    }
}
