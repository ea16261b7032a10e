//! Rows of the canonical artifacts and the sinks that batch them into the
//! store. Sinks flush every `BATCH_ROWS` rows, so memory stays bounded
//! whatever the input size.

use arrow::array::{ArrayRef, BooleanBuilder, Float64Builder, Int32Builder, ListBuilder, StringBuilder};
use arrow::record_batch::RecordBatch;
use ragprobe_artifact::{kinds, ArtifactWriter, Recipe, Store, Written};
use std::sync::Arc;

use crate::error::IngestError;

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
    meta: StringBuilder,
    pending: usize,
}

impl QuestionSink {
    pub fn new(store: &Store, recipe: &Recipe) -> Result<Self, IngestError> {
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
            meta: StringBuilder::new(),
            pending: 0,
        })
    }

    pub fn push(&mut self, r: &QuestionRow) -> Result<(), IngestError> {
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
        self.meta.append_option(r.meta.as_deref());
        self.pending += 1;
        if self.pending >= BATCH_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), IngestError> {
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
            Arc::new(self.meta.finish()),
        ];
        let batch = RecordBatch::try_new(self.w.schema(), cols).map_err(ragprobe_artifact::ArtifactError::from)?;
        self.w.write(&batch)?;
        self.pending = 0;
        Ok(())
    }

    pub fn rows(&self) -> u64 {
        self.w.rows() + self.pending as u64
    }

    pub fn finish(mut self, details: serde_json::Value) -> Result<Written, IngestError> {
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
    pub fn new(store: &Store, recipe: &Recipe) -> Result<Self, IngestError> {
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

    pub fn push(&mut self, r: &ContextRow) -> Result<(), IngestError> {
        self.qid.append_value(&r.qid);
        self.rank.append_value(r.rank);
        self.doc_id.append_value(&r.doc_id);
        self.title.append_option(r.title.as_deref());
        self.text.append_value(&r.text);
        self.score.append_option(r.score);
        self.has_answer.append_option(r.has_answer);
        self.has_answer_source.append_option(r.has_answer_source.as_deref());
        self.relevance.append_option(r.relevance.as_deref());
        self.meta.append_option(r.meta.as_deref());
        self.pending += 1;
        if self.pending >= BATCH_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), IngestError> {
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
        let batch = RecordBatch::try_new(self.w.schema(), cols).map_err(ragprobe_artifact::ArtifactError::from)?;
        self.w.write(&batch)?;
        self.pending = 0;
        Ok(())
    }

    pub fn finish(mut self, details: serde_json::Value) -> Result<Written, IngestError> {
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
    pub fn new(store: &Store, recipe: &Recipe) -> Result<Self, IngestError> {
        Ok(CorpusSink {
            w: store.writer(kinds::CORPUS, recipe)?,
            doc_id: StringBuilder::new(),
            title: StringBuilder::new(),
            text: StringBuilder::new(),
            meta: StringBuilder::new(),
            pending: 0,
        })
    }

    pub fn push(&mut self, r: &CorpusRow) -> Result<(), IngestError> {
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

    fn flush(&mut self) -> Result<(), IngestError> {
        if self.pending == 0 {
            return Ok(());
        }
        let cols: Vec<ArrayRef> =
            vec![Arc::new(self.doc_id.finish()), Arc::new(self.title.finish()), Arc::new(self.text.finish()), Arc::new(self.meta.finish())];
        let batch = RecordBatch::try_new(self.w.schema(), cols).map_err(ragprobe_artifact::ArtifactError::from)?;
        self.w.write(&batch)?;
        self.pending = 0;
        Ok(())
    }

    pub fn rows(&self) -> u64 {
        self.w.rows() + self.pending as u64
    }

    pub fn finish(mut self, details: serde_json::Value) -> Result<Written, IngestError> {
        self.flush()?;
        Ok(self.w.finish(details)?)
    }
}
