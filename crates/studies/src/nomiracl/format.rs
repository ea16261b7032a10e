//! NoMIRACL's reader (`--format nomiracl`): the Hugging Face rows
//! (`{query_id, query, positive_passages, negative_passages}`) and the
//! distribution directory (corpus, topics, qrels) as the reference data
//! loader reads them; a source's name gives its language (`de.dev.jsonl`,
//! `english/`).

use ragprobe_ingest::{
    passage, type_of, ContextRow, FieldError, IngestError, Obj, QuestionRow, ReadOptions, Record,
    RecordFormat,
};
use serde_json::Value;
use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// NoMIRACL's reader.
pub struct NomiraclFormat;

impl RecordFormat for NomiraclFormat {
    fn name(&self) -> &'static str {
        "nomiracl"
    }

    fn description(&self) -> &'static str {
        "NoMIRACL JSONL or its distribution directory"
    }

    /// 0: the reader as it was in the ingest stage (same recipes, same ids).
    fn version(&self) -> u32 {
        0
    }

    fn parse(&self, record: Obj, options: &ReadOptions<'_>) -> Result<Record, FieldError> {
        parse_row(record, options.subset)
    }

    fn language_of(&self, path: &Path) -> Option<String> {
        language_from_name(path)
    }

    fn reads_directories(&self) -> bool {
        true
    }

    fn read_directory(
        &self,
        dir: &Path,
        options: &ReadOptions<'_>,
    ) -> Result<Vec<Result<Record, IngestError>>, IngestError> {
        distribution(dir, options.split)
    }
}

/// ISO 639-1 language codes: a file name's first word is taken as its
/// language only when it is one of these (so `dev.jsonl` is not "dev").
const ISO_639_1: &str = "aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu";

/// NoMIRACL's directory names on Hugging Face (`data/english/...`).
const LANGUAGE_NAMES: &[(&str, &str)] = &[
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
pub fn language_from_name(path: &Path) -> Option<String> {
    let stem = ragprobe_ingest::dataset_stem(path).to_lowercase();
    let first = stem.split(['.', '-', '_']).next()?;
    if let Some((_, code)) = LANGUAGE_NAMES.iter().find(|(n, _)| *n == first) {
        return Some(code.to_string());
    }
    (first.len() == 2 && ISO_639_1.split(' ').any(|c| c == first)).then(|| first.to_string())
}

/// A NoMIRACL row: `{query_id, query, positive_passages: [{docid, title,
/// text}], negative_passages: [...]}`. The human judgement goes to
/// `relevance` (relevant / non_relevant) and to `has_answer`
/// (`has_answer_source = relevance`); the query's subset is `subset` or,
/// if not given, relevant when it has a positive passage.
pub fn parse_row(mut obj: Obj, subset: Option<&str>) -> Result<Record, FieldError> {
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
            let meta = p.rest();
            contexts.push(judged(contexts.len() + 1, doc_id, title, text, label, meta));
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

/// A passage with its human judgement (`relevant` | `non_relevant`), which
/// is also its `has_answer` (`has_answer_source = relevance`).
fn judged(
    rank: usize,
    doc_id: String,
    title: Option<String>,
    text: String,
    label: &str,
    meta: Option<String>,
) -> ContextRow {
    ContextRow {
        has_answer: Some(label == "relevant"),
        has_answer_source: Some("relevance".into()),
        relevance: Some(label.into()),
        meta,
        ..passage(rank, doc_id, title, text)
    }
}

/// NoMIRACL's own distribution format, one directory per language, as the
/// reference data loader (project-miracl/nomiracl `dataset/data_loader.py`,
/// `dataset/util.py`) reads it:
/// * `corpus.jsonl` (or the Hugging Face repository's `corpus.jsonl.gz`):
///   `{docid, title, text}`; title and text are stripped and their newlines
///   made spaces (`load_corpus`);
/// * `topics/<split>.<subset>.tsv`: `qid<TAB>query`, no header, no quoting;
/// * `qrels/<split>.<subset>.tsv`: `qid<TAB>Q0<TAB>docid<TAB>score` (TREC);
///   a query's passages are its qrels lines in file order (the order the
///   reference's prompts use); score > 0 marks a relevant passage.
///
/// `<subset>` is `relevant` or `non_relevant` and becomes the question's
/// subset; only queries with qrels are kept, as in `load_data`, in the
/// order of their first judgement. `split` (dev / test) selects the files;
/// without it, every split present. A bad topics line, an empty query or a
/// judged docid missing from the corpus is a bad record; a bad corpus or
/// qrels line fails the directory.
pub fn distribution(
    dir: &Path,
    split: Option<&str>,
) -> Result<Vec<Result<Record, IngestError>>, IngestError> {
    let plain = dir.join("corpus.jsonl");
    let gz = dir.join("corpus.jsonl.gz");
    let corpus_path = if !plain.exists() && gz.exists() {
        gz
    } else {
        plain
    };
    let corpus = read_corpus(&corpus_path)?;
    let mut out = Vec::new();
    for (sp, subset, tpath) in topic_files(dir, split)? {
        let qpath = dir.join("qrels").join(format!("{sp}.{subset}.tsv"));
        let (qrels, qrels_order) = read_qrels(&qpath)?;
        let topics = read_topics(&tpath, &mut out)?;
        for qid in &qrels_order {
            let (Some((query, line)), Some(judgements)) = (topics.get(qid), qrels.get(qid)) else {
                continue;
            };
            let contexts = match contexts_of(judgements, &corpus, &subset) {
                Ok(contexts) => contexts,
                Err((docid, qline)) => {
                    let message = format!(
                        "docid `{docid}` (judged for query `{qid}`) is not in {}",
                        corpus_path.display()
                    );
                    out.push(Err(bad_line(&qpath, qline, message)));
                    continue;
                }
            };
            if query.trim().is_empty() {
                out.push(Err(bad_line(&tpath, *line, "field `query` is empty".into())));
                continue;
            }
            out.push(Ok(Record {
                source_id: Some(qid.clone()),
                row: QuestionRow {
                    question: query.clone(),
                    subset: Some(subset.clone()),
                    ..QuestionRow::default()
                },
                contexts,
            }));
        }
    }
    Ok(out)
}

/// A distribution's corpus: docid -> (title, text).
type Corpus = HashMap<String, (String, String)>;

/// A qrels file: qid -> [(docid, score, line)] in file order.
type Qrels = HashMap<String, Vec<(String, i64, u64)>>;

/// A bad line of a distribution file.
fn bad_line(path: &Path, line: u64, message: String) -> IngestError {
    IngestError::Record {
        file: path.display().to_string(),
        line,
        message,
    }
}

/// An I/O error on a distribution file, naming the path.
fn io_error(path: &Path, e: std::io::Error) -> IngestError {
    IngestError::Usage(format!("{}: {e}", path.display()))
}

/// Call `each` on every non-blank line of a distribution file (gzip read
/// transparently) with its 1-based number, streaming.
fn for_each_line(
    path: &Path,
    mut each: impl FnMut(u64, String) -> Result<(), IngestError>,
) -> Result<(), IngestError> {
    let (reader, _) = ragprobe_ingest::source::open(path, false)?;
    for (i, line) in reader.lines().enumerate() {
        let line = line.map_err(|e| io_error(path, e))?;
        if !line.trim().is_empty() {
            each(i as u64 + 1, line)?;
        }
    }
    Ok(())
}

/// Read a `corpus.jsonl`; any bad line is an error.
fn read_corpus(path: &Path) -> Result<Corpus, IngestError> {
    let mut corpus = Corpus::new();
    for_each_line(path, |lineno, line| {
        let (docid, passage) = corpus_line(&line, path, lineno)?;
        corpus.insert(docid, passage);
        Ok(())
    })?;
    Ok(corpus)
}

/// One `corpus.jsonl` line: (docid, (title, text)), title and text stripped
/// and their newlines made spaces; a null title is empty.
fn corpus_line(
    line: &str,
    path: &Path,
    lineno: u64,
) -> Result<(String, (String, String)), IngestError> {
    let bad = |m: String| bad_line(path, lineno, m);
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
fn topic_files(
    dir: &Path,
    split: Option<&str>,
) -> Result<Vec<(String, String, PathBuf)>, IngestError> {
    let mut files: Vec<(String, String, PathBuf)> = Vec::new();
    let topics_dir = dir.join("topics");
    for e in std::fs::read_dir(&topics_dir).map_err(|e| io_error(&topics_dir, e))? {
        let path = e.map_err(|e| io_error(&topics_dir, e))?.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some((sp, subset)) = name.strip_suffix(".tsv").and_then(|s| s.split_once('.')) else {
            continue;
        };
        if !matches!(subset, "relevant" | "non_relevant") || split.is_some_and(|s| s != sp) {
            continue;
        }
        files.push((sp.to_string(), subset.to_string(), path.clone()));
    }
    files.sort();
    if files.is_empty() {
        return Err(IngestError::Usage(format!(
            "{}: no topics/<split>.<relevant|non_relevant>.tsv{}",
            dir.display(),
            split
                .map(|s| format!(" for split `{s}`"))
                .unwrap_or_default()
        )));
    }
    Ok(files)
}

/// Read a qrels file (TREC format): the judgements per query, and the
/// queries in the order of their first judgement (the reference's qrels
/// dict order, which its query sample draws from). A bad line is an error.
fn read_qrels(path: &Path) -> Result<(Qrels, Vec<String>), IngestError> {
    let mut qrels = Qrels::new();
    let mut order: Vec<String> = Vec::new();
    for_each_line(path, |lineno, line| {
        let cols: Vec<&str> = line.split('\t').collect();
        let score = cols.get(3).and_then(|s| s.trim().parse::<i64>().ok());
        let (true, Some(score)) = (cols.len() >= 4, score) else {
            return Err(bad_line(
                path,
                lineno,
                "a qrels line must be `qid<TAB>Q0<TAB>docid<TAB>score` with an integer score"
                    .into(),
            ));
        };
        if !qrels.contains_key(cols[0]) {
            order.push(cols[0].to_string());
        }
        let list = qrels.entry(cols[0].to_string()).or_default();
        // A later duplicate judgement overwrites the score in place (a Python dict).
        match list.iter_mut().find(|x| x.0 == cols[2]) {
            Some(x) => x.1 = score,
            None => list.push((cols[2].to_string(), score, lineno)),
        }
        Ok(())
    })?;
    Ok((qrels, order))
}

/// Read a topics file: qid -> (query, line). A line without a tab becomes
/// a bad record in `out`.
fn read_topics(
    path: &Path,
    out: &mut Vec<Result<Record, IngestError>>,
) -> Result<HashMap<String, (String, u64)>, IngestError> {
    let mut topics = HashMap::new();
    for_each_line(path, |lineno, line| {
        match line.split_once('\t') {
            Some((qid, query)) => {
                let query = query.split('\t').next().unwrap_or("").to_string();
                topics.insert(qid.to_string(), (query, lineno));
            }
            None => out.push(Err(bad_line(
                path,
                lineno,
                "a topics line must be `qid<TAB>query`".into(),
            ))),
        }
        Ok(())
    })?;
    Ok(topics)
}

/// A query's contexts from its judgements, in qrels order; `relevant` only
/// in the `relevant` subset with a positive score. A docid not in the
/// corpus gives that docid and its qrels line.
fn contexts_of(
    judgements: &[(String, i64, u64)],
    corpus: &Corpus,
    subset: &str,
) -> Result<Vec<ContextRow>, (String, u64)> {
    let mut contexts = Vec::with_capacity(judgements.len());
    for (docid, score, qline) in judgements {
        let Some((title, text)) = corpus.get(docid) else {
            return Err((docid.clone(), *qline));
        };
        let label = if subset == "relevant" && *score > 0 {
            "relevant"
        } else {
            "non_relevant"
        };
        let title = Some(title.clone()).filter(|t| !t.is_empty());
        contexts.push(judged(contexts.len() + 1, docid.clone(), title, text.clone(), label, None));
    }
    Ok(contexts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_from_nomiracl_names() {
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
            assert_eq!(language_from_name(Path::new(path)).as_deref(), want, "{path}");
        }
    }
}
