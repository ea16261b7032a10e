//! NoMIRACL: the Hugging Face rows and the distribution directory
//! (corpus, topics, qrels) as the reference data loader reads them.

use super::*;

/// Ingest a NoMIRACL distribution directory ([`nomiracl_distribution`]):
/// write its good queries, skip or fail on its bad ones.
pub(super) fn ingest_nomiracl_dir(
    run: &mut Run,
    questions: &mut Sink<Questions>,
    contexts: &mut Sink<Contexts>,
    input: Input<'_>,
) -> Result<(), IngestError> {
    for (p, file, line) in nomiracl_distribution(input.path, run.opts.split.as_deref())? {
        run.records += 1;
        match p {
            Ok(p) => {
                emit(run, questions, contexts, input.dataset, input.file_lang, p)?;
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

/// One record of a NoMIRACL distribution directory: the parsed query (or
/// why it is bad), the file and the line that name it in errors.
pub(super) type DistRecord = (Result<Record, String>, String, u64);

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
pub(super) fn nomiracl_distribution(
    dir: &Path,
    split: Option<&str>,
) -> Result<Vec<DistRecord>, IngestError> {
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
            let parsed = Record {
                source_id: Some(qid.to_string()),
                row: QuestionRow {
                    question: query,
                    subset: Some(subset.clone()),
                    ..QuestionRow::default()
                },
                contexts,
            };
            out.push((Ok(parsed), tfile.clone(), line));
        }
    }
    Ok(out)
}

/// A NoMIRACL distribution's corpus: docid -> (title, text).
pub(super) type NomiraclCorpus = std::collections::HashMap<String, (String, String)>;

/// A NoMIRACL qrels file: qid -> [(docid, score, line)] in file order.
pub(super) type NomiraclQrels = std::collections::HashMap<String, Vec<(String, i64, u64)>>;

/// An I/O error on a NoMIRACL distribution file, naming the path.
pub(super) fn nomiracl_io(p: &Path, e: std::io::Error) -> IngestError {
    IngestError::Usage(format!("{}: {e}", p.display()))
}

/// Read a NoMIRACL `corpus.jsonl`; any bad line is an error.
pub(super) fn read_nomiracl_corpus(corpus_path: &Path) -> Result<NomiraclCorpus, IngestError> {
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
pub(super) fn nomiracl_corpus_line(
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
pub(super) fn nomiracl_topic_files(
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
pub(super) fn read_nomiracl_qrels(
    qpath: &Path,
) -> Result<(NomiraclQrels, Vec<String>), IngestError> {
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
pub(super) fn read_nomiracl_topics(
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
pub(super) fn nomiracl_contexts(
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

/// NoMIRACL: `{query_id, query, positive_passages: [{docid, title, text}],
/// negative_passages: [...]}`. The human judgement goes to `relevance`
/// (relevant / non_relevant) and to `has_answer` (`has_answer_source =
/// relevance`); the query's subset is the option or, if not given, relevant
/// when it has a positive passage.
pub(super) fn parse_nomiracl(mut obj: Obj, subset: Option<&str>) -> Result<Record, FieldError> {
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
    Ok(Record {
        source_id: Some(source_id),
        row: QuestionRow {
            question,
            subset: Some(subset),
            meta: obj.rest(),
            ..QuestionRow::default()
        },
        contexts,
    })
}
