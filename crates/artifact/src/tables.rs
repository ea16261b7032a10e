//! Typed rows of the canonical artifact kinds: sinks that batch rows into
//! the store (flushing every `BATCH_ROWS` rows, so memory stays bounded
//! whatever the input size) and readers that turn stored batches back into
//! rows. Every stage reads and writes the shared kinds through these.

use arrow::array::{
    Array, ArrayRef, BooleanArray, BooleanBuilder, Float64Array, Float64Builder, Int32Array,
    Int32Builder, ListArray, ListBuilder, StringArray, StringBuilder,
};
use arrow::record_batch::RecordBatch;
use std::sync::Arc;

use crate::{kinds, ArtifactError, ArtifactWriter, Recipe, Store, Written};

const BATCH_ROWS: usize = 4096;

/// One `questions` row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QuestionRow {
    pub qid: String,
    pub dataset: String,
    pub split: Option<String>,
    pub lang: String,
    pub question: String,
    pub answers: Vec<String>,
    pub answer_parts: Option<Vec<Vec<String>>>,
    pub fake_answers: Option<Vec<String>>,
    pub subset: Option<String>,
    /// Multiple choice: (label, text) of each option, in order.
    pub options: Option<Vec<(String, String)>>,
    pub meta: Option<String>,
}

/// One `contexts` row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContextRow {
    pub qid: String,
    pub rank: i32,
    pub doc_id: String,
    pub title: Option<String>,
    pub text: String,
    pub score: Option<f64>,
    pub has_answer: Option<bool>,
    pub has_answer_source: Option<String>,
    pub relevance: Option<String>,
    pub meta: Option<String>,
}

/// One `corpus` row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CorpusRow {
    pub doc_id: String,
    pub title: Option<String>,
    pub text: String,
    pub meta: Option<String>,
}

/// One `metrics` row. `value` is None when the subset is empty (n = 0):
/// never NaN.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricRow {
    pub study: String,
    pub dataset: String,
    pub model: String,
    /// Prompt template id ("" where no prompt is involved, e.g. retrieval).
    pub prompt: String,
    pub condition: String,
    pub metric: String,
    pub value: Option<f64>,
    pub n: i64,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub details: Option<String>,
}

/// Write a whole `metrics` artifact, rows sorted by (study, dataset, model,
/// prompt, condition, metric) so that the bytes do not depend on computation
/// order.
pub fn write_metrics(
    store: &Store,
    recipe: &Recipe,
    mut rows: Vec<MetricRow>,
    details: serde_json::Value,
) -> Result<Written, ArtifactError> {
    rows.sort_by(|a, b| {
        (
            &a.study,
            &a.dataset,
            &a.model,
            &a.prompt,
            &a.condition,
            &a.metric,
        )
            .cmp(&(
                &b.study,
                &b.dataset,
                &b.model,
                &b.prompt,
                &b.condition,
                &b.metric,
            ))
    });
    let mut w = store.writer(kinds::METRICS, recipe)?;
    for chunk in rows.chunks(BATCH_ROWS) {
        let s = |f: fn(&MetricRow) -> &str| -> ArrayRef {
            Arc::new(StringArray::from_iter_values(chunk.iter().map(f)))
        };
        let f = |f: fn(&MetricRow) -> Option<f64>| -> ArrayRef {
            Arc::new(Float64Array::from_iter(chunk.iter().map(f)))
        };
        let cols: Vec<ArrayRef> = vec![
            s(|r| &r.study),
            s(|r| &r.dataset),
            s(|r| &r.model),
            s(|r| &r.prompt),
            s(|r| &r.condition),
            s(|r| &r.metric),
            f(|r| r.value.filter(|v| v.is_finite())),
            Arc::new(arrow::array::Int64Array::from_iter_values(
                chunk.iter().map(|r| r.n),
            )),
            f(|r| r.ci_low),
            f(|r| r.ci_high),
            Arc::new(StringArray::from_iter(
                chunk.iter().map(|r| r.details.as_deref()),
            )),
        ];
        w.write(&RecordBatch::try_new(w.schema(), cols)?)?;
    }
    w.finish(details)
}

/// Read a whole `metrics` artifact.
pub fn read_metrics(store: &Store, id: &str) -> Result<Vec<MetricRow>, ArtifactError> {
    let (_, batches) = store.read_all(id)?;
    let mut out = Vec::new();
    for b in &batches {
        let s = |n: &str| column::<StringArray>(b, n);
        let (study, dataset, model, prompt, condition, metric, details) = (
            s("study")?,
            s("dataset")?,
            s("model")?,
            s("prompt")?,
            s("condition")?,
            s("metric")?,
            s("details")?,
        );
        let (value, lo, hi) = (
            column::<Float64Array>(b, "value")?,
            column::<Float64Array>(b, "ci_low")?,
            column::<Float64Array>(b, "ci_high")?,
        );
        let n = column::<arrow::array::Int64Array>(b, "n")?;
        let of = |a: &Float64Array, i: usize| (!a.is_null(i)).then(|| a.value(i));
        for i in 0..b.num_rows() {
            out.push(MetricRow {
                study: study.value(i).into(),
                dataset: dataset.value(i).into(),
                model: model.value(i).into(),
                prompt: prompt.value(i).into(),
                condition: condition.value(i).into(),
                metric: metric.value(i).into(),
                value: of(value, i),
                n: n.value(i),
                ci_low: of(lo, i),
                ci_high: of(hi, i),
                details: opt_str(details, i),
            });
        }
    }
    Ok(out)
}

fn str_list_builder() -> ListBuilder<StringBuilder> {
    ListBuilder::new(StringBuilder::new())
}

/// Batches `questions` rows into an artifact.
pub struct QuestionSink {
    w: ArtifactWriter,
    qid: StringBuilder,
    dataset: StringBuilder,
    split: StringBuilder,
    lang: StringBuilder,
    question: StringBuilder,
    answers: ListBuilder<StringBuilder>,
    parts: ListBuilder<ListBuilder<StringBuilder>>,
    fakes: ListBuilder<StringBuilder>,
    subset: StringBuilder,
    opt_labels: ListBuilder<StringBuilder>,
    opt_texts: ListBuilder<StringBuilder>,
    meta: StringBuilder,
    pending: usize,
}

impl QuestionSink {
    pub fn new(store: &Store, recipe: &Recipe) -> Result<Self, ArtifactError> {
        Ok(QuestionSink {
            w: store.writer(kinds::QUESTIONS, recipe)?,
            qid: StringBuilder::new(),
            dataset: StringBuilder::new(),
            split: StringBuilder::new(),
            lang: StringBuilder::new(),
            question: StringBuilder::new(),
            answers: str_list_builder(),
            parts: ListBuilder::new(str_list_builder()),
            fakes: str_list_builder(),
            subset: StringBuilder::new(),
            opt_labels: str_list_builder(),
            opt_texts: str_list_builder(),
            meta: StringBuilder::new(),
            pending: 0,
        })
    }

    pub fn push(&mut self, r: &QuestionRow) -> Result<(), ArtifactError> {
        self.qid.append_value(&r.qid);
        self.dataset.append_value(&r.dataset);
        self.split.append_option(r.split.as_deref());
        self.lang.append_value(&r.lang);
        self.question.append_value(&r.question);
        for a in &r.answers {
            self.answers.values().append_value(a);
        }
        self.answers.append(true);
        match &r.answer_parts {
            Some(parts) => {
                for part in parts {
                    for alias in part {
                        self.parts.values().values().append_value(alias);
                    }
                    self.parts.values().append(true);
                }
                self.parts.append(true);
            }
            None => self.parts.append(false),
        }
        match &r.fake_answers {
            Some(f) => {
                for a in f {
                    self.fakes.values().append_value(a);
                }
                self.fakes.append(true);
            }
            None => self.fakes.append(false),
        }
        self.subset.append_option(r.subset.as_deref());
        match &r.options {
            Some(opts) => {
                for (l, t) in opts {
                    self.opt_labels.values().append_value(l);
                    self.opt_texts.values().append_value(t);
                }
                self.opt_labels.append(true);
                self.opt_texts.append(true);
            }
            None => {
                self.opt_labels.append(false);
                self.opt_texts.append(false);
            }
        }
        self.meta.append_option(r.meta.as_deref());
        self.pending += 1;
        if self.pending >= BATCH_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ArtifactError> {
        if self.pending == 0 {
            return Ok(());
        }
        let cols: Vec<ArrayRef> = vec![
            Arc::new(self.qid.finish()),
            Arc::new(self.dataset.finish()),
            Arc::new(self.split.finish()),
            Arc::new(self.lang.finish()),
            Arc::new(self.question.finish()),
            Arc::new(self.answers.finish()),
            Arc::new(self.parts.finish()),
            Arc::new(self.fakes.finish()),
            Arc::new(self.subset.finish()),
            Arc::new(self.opt_labels.finish()),
            Arc::new(self.opt_texts.finish()),
            Arc::new(self.meta.finish()),
        ];
        let batch = RecordBatch::try_new(self.w.schema(), cols)?;
        self.w.write(&batch)?;
        self.pending = 0;
        Ok(())
    }

    pub fn rows(&self) -> u64 {
        self.w.rows() + self.pending as u64
    }

    pub fn finish(mut self, details: serde_json::Value) -> Result<Written, ArtifactError> {
        self.flush()?;
        Ok(self.w.finish(details)?)
    }
}

/// Batches `contexts` rows into an artifact.
pub struct ContextSink {
    w: ArtifactWriter,
    qid: StringBuilder,
    rank: Int32Builder,
    doc_id: StringBuilder,
    title: StringBuilder,
    text: StringBuilder,
    score: Float64Builder,
    has_answer: BooleanBuilder,
    has_answer_source: StringBuilder,
    relevance: StringBuilder,
    meta: StringBuilder,
    pending: usize,
}

impl ContextSink {
    pub fn new(store: &Store, recipe: &Recipe) -> Result<Self, ArtifactError> {
        Ok(ContextSink {
            w: store.writer(kinds::CONTEXTS, recipe)?,
            qid: StringBuilder::new(),
            rank: Int32Builder::new(),
            doc_id: StringBuilder::new(),
            title: StringBuilder::new(),
            text: StringBuilder::new(),
            score: Float64Builder::new(),
            has_answer: BooleanBuilder::new(),
            has_answer_source: StringBuilder::new(),
            relevance: StringBuilder::new(),
            meta: StringBuilder::new(),
            pending: 0,
        })
    }

    pub fn push(&mut self, r: &ContextRow) -> Result<(), ArtifactError> {
        self.qid.append_value(&r.qid);
        self.rank.append_value(r.rank);
        self.doc_id.append_value(&r.doc_id);
        self.title.append_option(r.title.as_deref());
        self.text.append_value(&r.text);
        self.score.append_option(r.score);
        self.has_answer.append_option(r.has_answer);
        self.has_answer_source
            .append_option(r.has_answer_source.as_deref());
        self.relevance.append_option(r.relevance.as_deref());
        self.meta.append_option(r.meta.as_deref());
        self.pending += 1;
        if self.pending >= BATCH_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ArtifactError> {
        if self.pending == 0 {
            return Ok(());
        }
        let cols: Vec<ArrayRef> = vec![
            Arc::new(self.qid.finish()),
            Arc::new(self.rank.finish()),
            Arc::new(self.doc_id.finish()),
            Arc::new(self.title.finish()),
            Arc::new(self.text.finish()),
            Arc::new(self.score.finish()),
            Arc::new(self.has_answer.finish()),
            Arc::new(self.has_answer_source.finish()),
            Arc::new(self.relevance.finish()),
            Arc::new(self.meta.finish()),
        ];
        let batch = RecordBatch::try_new(self.w.schema(), cols)?;
        self.w.write(&batch)?;
        self.pending = 0;
        Ok(())
    }

    pub fn finish(mut self, details: serde_json::Value) -> Result<Written, ArtifactError> {
        self.flush()?;
        Ok(self.w.finish(details)?)
    }
}

/// Batches `corpus` rows into an artifact.
pub struct CorpusSink {
    w: ArtifactWriter,
    doc_id: StringBuilder,
    title: StringBuilder,
    text: StringBuilder,
    meta: StringBuilder,
    pending: usize,
}

impl CorpusSink {
    pub fn new(store: &Store, recipe: &Recipe) -> Result<Self, ArtifactError> {
        Ok(CorpusSink {
            w: store.writer(kinds::CORPUS, recipe)?,
            doc_id: StringBuilder::new(),
            title: StringBuilder::new(),
            text: StringBuilder::new(),
            meta: StringBuilder::new(),
            pending: 0,
        })
    }

    pub fn push(&mut self, r: &CorpusRow) -> Result<(), ArtifactError> {
        self.doc_id.append_value(&r.doc_id);
        self.title.append_option(r.title.as_deref());
        self.text.append_value(&r.text);
        self.meta.append_option(r.meta.as_deref());
        self.pending += 1;
        if self.pending >= BATCH_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ArtifactError> {
        if self.pending == 0 {
            return Ok(());
        }
        let cols: Vec<ArrayRef> = vec![
            Arc::new(self.doc_id.finish()),
            Arc::new(self.title.finish()),
            Arc::new(self.text.finish()),
            Arc::new(self.meta.finish()),
        ];
        let batch = RecordBatch::try_new(self.w.schema(), cols)?;
        self.w.write(&batch)?;
        self.pending = 0;
        Ok(())
    }

    pub fn rows(&self) -> u64 {
        self.w.rows() + self.pending as u64
    }

    pub fn finish(mut self, details: serde_json::Value) -> Result<Written, ArtifactError> {
        self.flush()?;
        Ok(self.w.finish(details)?)
    }
}

/// A column of `batch` by name, downcast; a clear error if it is missing or
/// of another type.
pub fn column<'a, T: Array + 'static>(
    batch: &'a RecordBatch,
    name: &str,
) -> Result<&'a T, ArtifactError> {
    batch
        .column_by_name(name)
        .ok_or_else(|| ArtifactError::Other(format!("artifact has no column `{name}`")))?
        .as_any()
        .downcast_ref::<T>()
        .ok_or_else(|| ArtifactError::Other(format!("column `{name}` has an unexpected type")))
}

fn opt_str(a: &StringArray, i: usize) -> Option<String> {
    (!a.is_null(i)).then(|| a.value(i).to_string())
}

/// The strings of a `list<utf8>` cell (empty for null).
pub fn list_strings(a: &ListArray, i: usize) -> Vec<String> {
    if a.is_null(i) {
        return Vec::new();
    }
    let v = a.value(i);
    let s = v
        .as_any()
        .downcast_ref::<StringArray>()
        .expect("list<utf8>");
    (0..s.len())
        .filter(|&j| !s.is_null(j))
        .map(|j| s.value(j).to_string())
        .collect()
}

fn opt_list_strings(a: &ListArray, i: usize) -> Option<Vec<String>> {
    (!a.is_null(i)).then(|| list_strings(a, i))
}

fn opt_list_list_strings(a: &ListArray, i: usize) -> Option<Vec<Vec<String>>> {
    if a.is_null(i) {
        return None;
    }
    let inner = a.value(i);
    let inner = inner
        .as_any()
        .downcast_ref::<ListArray>()
        .expect("list<list<utf8>>");
    Some((0..inner.len()).map(|j| list_strings(inner, j)).collect())
}

/// Read a whole `questions` artifact.
pub fn read_questions(store: &Store, id: &str) -> Result<Vec<QuestionRow>, ArtifactError> {
    let (_, batches) = store.read_all(id)?;
    let mut out = Vec::new();
    for b in &batches {
        let (qid, dataset, split, lang, question) = (
            column::<StringArray>(b, "qid")?,
            column::<StringArray>(b, "dataset")?,
            column::<StringArray>(b, "split")?,
            column::<StringArray>(b, "lang")?,
            column::<StringArray>(b, "question")?,
        );
        let (answers, parts, fakes) = (
            column::<ListArray>(b, "answers")?,
            column::<ListArray>(b, "answer_parts")?,
            column::<ListArray>(b, "fake_answers")?,
        );
        let (subset, meta) = (
            column::<StringArray>(b, "subset")?,
            column::<StringArray>(b, "meta")?,
        );
        // Schema v1 questions (before options) have no option columns.
        let (ol, ot) = (
            column::<ListArray>(b, "option_labels").ok(),
            column::<ListArray>(b, "option_texts").ok(),
        );
        for i in 0..b.num_rows() {
            out.push(QuestionRow {
                qid: qid.value(i).to_string(),
                dataset: dataset.value(i).to_string(),
                split: opt_str(split, i),
                lang: lang.value(i).to_string(),
                question: question.value(i).to_string(),
                answers: list_strings(answers, i),
                answer_parts: opt_list_list_strings(parts, i),
                fake_answers: opt_list_strings(fakes, i),
                subset: opt_str(subset, i),
                options: ol.zip(ot).and_then(|(ol, ot)| {
                    opt_list_strings(ol, i)
                        .map(|l| l.into_iter().zip(list_strings(ot, i)).collect())
                }),
                meta: opt_str(meta, i),
            });
        }
    }
    Ok(out)
}

/// Rows of one `contexts` batch.
pub fn context_rows(b: &RecordBatch) -> Result<Vec<ContextRow>, ArtifactError> {
    let (qid, rank, doc_id, title, text) = (
        column::<StringArray>(b, "qid")?,
        column::<Int32Array>(b, "rank")?,
        column::<StringArray>(b, "doc_id")?,
        column::<StringArray>(b, "title")?,
        column::<StringArray>(b, "text")?,
    );
    let (score, has, has_src, rel, meta) = (
        column::<Float64Array>(b, "score")?,
        column::<BooleanArray>(b, "has_answer")?,
        column::<StringArray>(b, "has_answer_source")?,
        column::<StringArray>(b, "relevance")?,
        column::<StringArray>(b, "meta")?,
    );
    Ok((0..b.num_rows())
        .map(|i| ContextRow {
            qid: qid.value(i).to_string(),
            rank: rank.value(i),
            doc_id: doc_id.value(i).to_string(),
            title: opt_str(title, i),
            text: text.value(i).to_string(),
            score: (!score.is_null(i)).then(|| score.value(i)),
            has_answer: (!has.is_null(i)).then(|| has.value(i)),
            has_answer_source: opt_str(has_src, i),
            relevance: opt_str(rel, i),
            meta: opt_str(meta, i),
        })
        .collect())
}

/// Read a whole `contexts` artifact.
pub fn read_contexts(store: &Store, id: &str) -> Result<Vec<ContextRow>, ArtifactError> {
    let (_, batches) = store.read_all(id)?;
    let mut out = Vec::new();
    for b in &batches {
        out.extend(context_rows(b)?);
    }
    Ok(out)
}

/// Rows of one `corpus` batch.
pub fn corpus_rows(b: &RecordBatch) -> Result<Vec<CorpusRow>, ArtifactError> {
    let (doc_id, title, text, meta) = (
        column::<StringArray>(b, "doc_id")?,
        column::<StringArray>(b, "title")?,
        column::<StringArray>(b, "text")?,
        column::<StringArray>(b, "meta")?,
    );
    Ok((0..b.num_rows())
        .map(|i| CorpusRow {
            doc_id: doc_id.value(i).to_string(),
            title: opt_str(title, i),
            text: text.value(i).to_string(),
            meta: opt_str(meta, i),
        })
        .collect())
}
