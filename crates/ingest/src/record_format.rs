//! The extension point for a study's own input format: records in, one
//! question with its passages out; the stage does the rest (files,
//! gzip, Parquet, qids, languages, `has_answer`, `--on-error`, the
//! manifest).

use ragprobe_artifact::{ContextRow, QuestionRow};

use crate::error::FieldError;
use crate::fields::Obj;

/// A study's input format, registered by the caller
/// (`ragprobe_studies`) and chosen with `--format <name>`.
///
/// The caller guarantees: [`RecordFormat::parse`] is called once per
/// record, records in file order (a JSON Lines line, an element of a JSON
/// array, a CSV/TSV or Parquet row, each as a JSON object); a record it
/// refuses is reported with its file and line (or skipped and counted under
/// `--on-error skip`), never dropped silently; the question id is the
/// record's own ([`Record::source_id`]) or a hash of dataset and question;
/// passages without `has_answer` get it from the DPR matcher on the
/// record's answers.
///
/// An implementation must: depend only on the record (the same record
/// gives the same [`Record`]); name the field in every error
/// ([`FieldError`], through [`Obj`]'s accessors); keep every field it does
/// not map in [`Record::meta`] ([`Obj::rest`]), so nothing of the source is
/// lost; never panic on a malformed record.
pub trait RecordFormat: Sync {
    /// The name `--format` takes and the ingest recipe records; never one
    /// of the built-in formats' names.
    fn name(&self) -> &'static str;
    /// What the format reads, in a line (`--help`, errors).
    fn description(&self) -> &'static str;
    /// The version of the reader's logic: bump it when the same record
    /// would give a different [`Record`] (it enters the ingest recipe, so
    /// cached results of the old logic are not reused).
    fn version(&self) -> u32;
    /// One record taken apart.
    fn parse(&self, record: Obj) -> Result<Record, FieldError>;
}

/// One record taken apart, before the stage assigns its qid and language.
#[derive(Debug, Clone, Default)]
pub struct Record {
    /// The source's question id, if it has one.
    pub source_id: Option<String>,
    /// The question as it will be stored: its text, gold answer aliases,
    /// answer parts, the dataset's own wrong answers (a foil pool), its
    /// subset (a study's label of the question), options and unmapped
    /// fields as canonical JSON ([`Obj::rest`]). The stage fills `qid`,
    /// `dataset`, `split` and `lang`; what a format leaves there is
    /// overwritten.
    pub row: QuestionRow,
    /// The question's passages ([`passage`]); `rank` is their order.
    pub contexts: Vec<ContextRow>,
}

impl Record {
    /// A record of a question with its answers, unmapped fields and
    /// passages (no answer parts, foils, subset or options).
    pub fn new(
        source_id: Option<String>,
        question: String,
        answers: Vec<String>,
        meta: Option<String>,
        contexts: Vec<ContextRow>,
    ) -> Record {
        Record {
            source_id,
            row: QuestionRow {
                question,
                answers,
                meta,
                ..QuestionRow::default()
            },
            contexts,
        }
    }
}

/// A passage of a [`Record`]: its 1-based `rank`, id, title and text
/// (qid, score and `has_answer` are the stage's to fill).
pub fn passage(rank: usize, doc_id: String, title: Option<String>, text: String) -> ContextRow {
    ContextRow {
        qid: String::new(),
        rank: rank as i32,
        doc_id,
        title,
        text,
        score: None,
        has_answer: None,
        has_answer_source: None,
        relevance: None,
        meta: None,
    }
}

impl std::fmt::Debug for dyn RecordFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
