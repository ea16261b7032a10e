//! The extension point for a study's own input format: records in, one
//! question with its passages out; the stage does the rest (files,
//! gzip, Parquet, qids, languages, `has_answer`, `--on-error`, the
//! manifest).

use ragprobe_artifact::{ContextRow, QuestionRow};
use std::path::Path;

use crate::error::{FieldError, IngestError};
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
/// An implementation must: depend only on the record and the
/// [`ReadOptions`] (the same record gives the same [`Record`]); name the
/// field in every error ([`FieldError`], through [`Obj`]'s accessors); keep
/// every field it does not map in the row's `meta` ([`Obj::rest`]), so
/// nothing of the source is lost; never panic on a malformed record.
///
/// A format whose source is a directory (a distribution of several files)
/// says so with [`RecordFormat::reads_directories`] and reads it with
/// [`RecordFormat::read_directory`]; every other format reads files only.
pub trait RecordFormat: Sync {
    /// The name `--format` takes and the ingest recipe records; never one
    /// of the built-in formats' names.
    fn name(&self) -> &'static str;
    /// What the format reads, in a line (`--help`, errors).
    fn description(&self) -> &'static str;
    /// The version of the reader's logic: bump it when the same record
    /// would give a different [`Record`] (it enters the ingest recipe, so
    /// cached results of the old logic are not reused). Version 0 adds
    /// nothing to the recipe: a reader that moved out of the stage into
    /// its study keeps the recipes, and so the artifact ids, it had there;
    /// its first change makes it 1.
    fn version(&self) -> u32;
    /// One record taken apart. `options` are the run's `--split` and
    /// `--subset`, for formats whose records do not say them.
    fn parse(&self, record: Obj, options: &ReadOptions<'_>) -> Result<Record, FieldError>;
    /// The language a source's name gives its questions (`de.dev.jsonl`),
    /// if the format has such a convention; `--lang` overrides it, and
    /// without either the stage guesses from the question's script.
    /// Must depend on the path's name only, never on its contents.
    fn language_of(&self, _path: &Path) -> Option<String> {
        None
    }
    /// True when a directory is a source of this format (then the stage
    /// hashes every regular file under it, sorted, as the run's sources,
    /// and calls [`RecordFormat::read_directory`]).
    fn reads_directories(&self) -> bool {
        false
    }
    /// Every record of the directory `dir`, in a deterministic order (the
    /// same files give the same list). A record that is bad on its own is
    /// an `Err` item naming its file and line ([`IngestError::Record`]):
    /// the stage fails on it or, under `--on-error skip`, counts and skips
    /// it. A directory that cannot be read as a whole (a missing or
    /// unreadable file, a malformed file every record depends on) is the
    /// outer error, naming the file.
    ///
    /// Called only when [`RecordFormat::reads_directories`] is true; the
    /// default refuses the directory.
    fn read_directory(
        &self,
        dir: &Path,
        _options: &ReadOptions<'_>,
    ) -> Result<Vec<Result<Record, IngestError>>, IngestError> {
        Err(IngestError::File {
            file: dir.display().to_string(),
            message: format!("is a directory; the `{}` format reads files", self.name()),
        })
    }
}

/// The run's options a [`RecordFormat`] may read.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadOptions<'a> {
    /// `--split`: recorded on every question by the stage; a distribution
    /// directory may also use it to choose which split's files to read.
    pub split: Option<&'a str>,
    /// `--subset`: a study's label for every question, where its records
    /// do not carry one.
    pub subset: Option<&'a str>,
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
