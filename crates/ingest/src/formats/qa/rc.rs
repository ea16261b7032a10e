//! Reading comprehension and multiple choice: TriviaQA-RC (with its
//! evidence files), HotpotQA, SearchQA, MedQA-style MCQ.

use super::*;

/// `path` resolves (after `..` and symlinks) to a file inside `dir`: an
/// evidence `Filename` such as `../../x.txt` or `/etc/hostname` must never
/// turn a file outside the evidence directory into passages.
pub(super) fn inside(dir: &Path, path: &Path) -> bool {
    match (std::fs::canonicalize(dir), std::fs::canonicalize(path)) {
        (Ok(d), Ok(p)) => p.starts_with(&d),
        _ => false,
    }
}

/// Split a document into passages of at most `words` words.
pub(super) fn chunks(text: &str, words: usize) -> Vec<String> {
    let w: Vec<&str> = text.split_whitespace().collect();
    w.chunks(words).map(|c| c.join(" ")).collect()
}

/// TriviaQA RC: `Answer.Value` then `Answer.Aliases` are the gold aliases;
/// with an evidence directory, each evidence file (`wikipedia/<Filename>`
/// for EntityPages, `web/<Filename>` for SearchResults) becomes passages of
/// at most `words` words; without one, the SearchResults descriptions are
/// the contexts.
pub(super) fn parse_triviaqa(
    mut obj: Obj,
    evidence: Option<&Path>,
    words: usize,
) -> Result<Record, FieldError> {
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
    let meta = obj.rest();
    Ok(Record::new(source_id, question, answers, meta, contexts))
}

/// HotpotQA (distractor setting): each `context` paragraph is a passage
/// (its sentences joined by spaces); paragraphs named in `supporting_facts`
/// are `relevant`, the distractors `non_relevant`. The sentences and the
/// supporting sentence ids are kept in the passage's `meta`, so the
/// answer-bearing assertion is known.
pub(super) fn parse_hotpotqa(mut obj: Obj) -> Result<Record, FieldError> {
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
    let (answers, meta) = (vec![answer], obj.rest());
    Ok(Record::new(source_id, question, answers, meta, contexts))
}

/// SearchQA: `question`, `answer`, and search snippets as contexts, from
/// `search_results` (`snippet`, `title`, `url`) or a plain `snippets` list.
pub(super) fn parse_searchqa(mut obj: Obj) -> Result<Record, FieldError> {
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
    let (answers, meta) = (vec![answer], obj.rest());
    Ok(Record::new(source_id, question, answers, meta, contexts))
}

/// MedQA-style multiple choice (any language): `options` (label -> text,
/// kept in label order), `answer_idx` (the correct label) and `answer` (its
/// text; taken from the options when missing). The gold alias is the
/// option text. An optional `evidence` (string or list) gives passages.
pub(super) fn parse_mcq(mut obj: Obj) -> Result<Record, FieldError> {
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
    let mut record = Record::new(source_id, question, answers, obj.rest(), contexts);
    record.row.options = Some(options);
    Ok(record)
}
