//! Ingest: dataset files -> canonical `questions`, `contexts` and `corpus`
//! artifacts.
//!
//! Readers stream their input (one record in memory at a time; gzip is read
//! transparently) and keep the source's record order, which is deterministic.
//! Every field a format does not map is kept, as canonical JSON, in `meta`.
//! Bad input is an error naming file, line and field; with
//! [`OnError::Skip`] bad records are skipped, counted, logged and recorded
//! in the manifest — never dropped silently.

mod error;
mod fields;
mod formats;
mod record_format;
pub mod source;

pub use error::{FieldError, IngestError};
pub use fields::{str_list, type_of, Obj};
pub use ragprobe_artifact::{ContextRow, CorpusRow, QuestionRow};
pub use record_format::{passage, ReadOptions, Record, RecordFormat};

use ragprobe_artifact::{Recipe, Store, Written};
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// Version of the ingest stage's logic; part of every ingest recipe.
pub const STAGE_VERSION: u32 = 1;

/// Supported input formats.
#[derive(Clone, Copy)]
pub enum Format {
    /// DPR/FiD retrieval results (JSON array or JSONL): question, answers, ctxs.
    Dpr,
    /// BEIR directory: corpus.jsonl, queries.jsonl, qrels/*.tsv.
    Beir,
    /// Self-RAG / PopQA JSONL: question, answers, ctxs with string scores.
    Selfrag,
    /// Any CSV/TSV, JSONL or Parquet table; columns set by the --col-* flags.
    Table,
    /// TriviaQA RC JSON ({"Data": [...]}); evidence files with --evidence-dir.
    Triviaqa,
    /// HotpotQA distractor JSON: question, answer, supporting_facts, context paragraphs.
    Hotpotqa,
    /// SearchQA JSON/JSONL: question, answer, search snippets.
    Searchqa,
    /// MedQA-style multiple choice JSONL: question, options, answer_idx, answer (any language).
    Mcq,
    /// DPR Wikipedia passages TSV (psgs_w100.tsv): id, text, title; plain or gzipped -> corpus.
    DprCorpus,
    /// A study's own format ([`RecordFormat`]): one record, one question
    /// with its passages; JSON Lines, a JSON array, CSV/TSV or Parquet.
    Records(&'static dyn RecordFormat),
}

impl PartialEq for Format {
    fn eq(&self, other: &Format) -> bool {
        self.name() == other.name()
    }
}
impl Eq for Format {}
impl std::hash::Hash for Format {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name().hash(state)
    }
}
impl std::fmt::Debug for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Format {
    /// Every format, in the order they are listed.
    pub const ALL: [Format; 9] = [
        Format::Dpr,
        Format::Beir,
        Format::Selfrag,
        Format::Table,
        Format::Triviaqa,
        Format::Hotpotqa,
        Format::Searchqa,
        Format::Mcq,
        Format::DprCorpus,
    ];

    /// The format's command-line name, as used in recipes (`dpr`, `beir`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Format::Dpr => "dpr",
            Format::Beir => "beir",
            Format::Selfrag => "selfrag",
            Format::Table => "table",
            Format::Triviaqa => "triviaqa",
            Format::Hotpotqa => "hotpotqa",
            Format::Searchqa => "searchqa",
            Format::Mcq => "mcq",
            Format::DprCorpus => "dpr-corpus",
            Format::Records(r) => r.name(),
        }
    }

    /// The built-in format with this command-line name, if any.
    pub fn parse(s: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == s)
    }

    /// The format with this command-line name among the built-in ones
    /// and `registered` (the studies' own), if any.
    pub fn find(s: &str, registered: &[&'static dyn RecordFormat]) -> Option<Format> {
        Format::parse(s).or_else(|| {
            registered
                .iter()
                .find(|r| r.name() == s)
                .map(|r| Format::Records(*r))
        })
    }

    /// What the format reads, in a line (for `--help` and errors).
    pub fn description(self) -> &'static str {
        match self {
            Format::Dpr => {
                "DPR/FiD retrieval results (JSON array or JSONL): question, answers, ctxs"
            }
            Format::Beir => "BEIR directory: corpus.jsonl, queries.jsonl, qrels/*.tsv",
            Format::Selfrag => "Self-RAG / PopQA JSONL: question, answers, ctxs with string scores",
            Format::Table => {
                "any CSV/TSV, JSONL or Parquet table; columns set by the --col-* flags"
            }
            Format::Triviaqa => "TriviaQA RC JSON; evidence files with --evidence-dir",
            Format::Hotpotqa => "HotpotQA distractor JSON",
            Format::Searchqa => "SearchQA JSON/JSONL: question, answer, search snippets",
            Format::Mcq => {
                "MedQA-style multiple choice JSONL: question, options, answer_idx, answer"
            }
            Format::DprCorpus => "DPR Wikipedia passages TSV (psgs_w100.tsv) -> corpus",
            Format::Records(r) => r.description(),
        }
    }
}

/// What to do with a bad record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum OnError {
    /// Stop at the first bad record.
    #[default]
    Fail,
    /// Skip bad records; count them, log the first few, record the count in the manifest.
    Skip,
}

/// What a table holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum TableKind {
    /// Rows are questions with answers; they become a `questions` artifact.
    #[default]
    Questions,
    /// Rows are passages; they become a `corpus` artifact.
    Corpus,
}

/// Column names for `--format table`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableMapping {
    /// Whether the table holds questions or corpus passages.
    pub kind: TableKind,
    /// Question id column (optional: a hash of dataset + question is used).
    pub id: Option<String>,
    /// Question text column.
    pub question: String,
    /// Answers: a list column, a JSON list in a string, or a string split on `answers_sep`.
    pub answers: String,
    /// Separator for splitting a string answers column into several answers.
    pub answers_sep: Option<String>,
    /// Language column (optional: taken from `--lang` or detected from the question's script).
    pub lang: Option<String>,
    /// Split column (optional: `--split` is used where absent).
    pub split: Option<String>,
    /// Passage id column (corpus tables).
    pub doc_id: String,
    /// Passage title column (corpus tables; optional).
    pub title: Option<String>,
    /// Passage text column (corpus tables).
    pub text: String,
}

impl Default for TableMapping {
    fn default() -> Self {
        TableMapping {
            kind: TableKind::Questions,
            id: None,
            question: "question".into(),
            answers: "answers".into(),
            answers_sep: None,
            lang: None,
            split: None,
            doc_id: "doc_id".into(),
            title: Some("title".into()),
            text: "text".into(),
        }
    }
}

/// Options of one ingest run.
#[derive(Debug, Clone, Default)]
pub struct IngestOptions {
    /// Input format; required.
    pub format: Option<Format>,
    /// Input files (or directories, for BEIR and for the study formats
    /// that read distribution directories).
    pub paths: Vec<PathBuf>,
    /// Dataset name; default: the input file's stem.
    pub dataset: Option<String>,
    /// Split name recorded on questions; a study's distribution directory
    /// may also read only that split's files ([`ReadOptions::split`]).
    pub split: Option<String>,
    /// Language code; default: from the file name where the format has
    /// such a convention ([`RecordFormat::language_of`]), else `zh`/`ja`/`ko`
    /// when the question is in that script, else `en`.
    pub lang: Option<String>,
    /// A study's subset label for every question ([`ReadOptions::subset`]);
    /// default: the format's own (from the record, or inferred by it).
    pub subset: Option<String>,
    /// What to do with a bad record: fail or skip.
    pub on_error: OnError,
    /// Column names for `--format table`.
    pub table: TableMapping,
    /// TriviaQA: the evidence directory (`wikipedia/`, `web/` files); its
    /// documents become contexts of at most `passage_words` words.
    pub evidence_dir: Option<PathBuf>,
    /// Words per evidence passage (TriviaQA evidence files).
    pub passage_words: usize,
    /// Draw a byte progress bar on stderr for large inputs.
    pub progress: bool,
}

/// The outcome of an ingest run.
#[derive(Debug, Clone)]
pub struct IngestReport {
    /// The artifacts written (or, when cached, recorded by the earlier run).
    pub outputs: Vec<Written>,
    /// True when an identical earlier run's result was reused and nothing was read.
    pub cached: bool,
    /// Records read (0 when cached).
    pub records: u64,
    /// Bad records skipped under `--on-error skip` (0 when cached).
    pub skipped: u64,
}

/// Counts and remembers skipped records.
pub(crate) struct Skipper {
    policy: OnError,
    pub skipped: u64,
    examples: Vec<String>,
}

impl Skipper {
    fn new(policy: OnError) -> Self {
        Skipper {
            policy,
            skipped: 0,
            examples: Vec::new(),
        }
    }

    /// Fail, or count and log a record-level error.
    pub(crate) fn handle(&mut self, err: IngestError) -> Result<(), IngestError> {
        if self.policy == OnError::Fail || !err.is_record_level() {
            return Err(err);
        }
        self.skipped += 1;
        if self.examples.len() < 5 {
            tracing::warn!("skipped: {err}");
            // Keep file names out of directories so the manifest does not
            // depend on where the input lives.
            self.examples.push(basename_in_message(&err));
        } else if self.skipped == 6 {
            tracing::warn!("more records skipped; the count is in the manifest");
        }
        Ok(())
    }

    /// A record's value, or None when its error is skipped (`--on-error
    /// skip`); a fatal error is returned.
    pub(crate) fn keep<T>(&mut self, r: Result<T, IngestError>) -> Result<Option<T>, IngestError> {
        match r {
            Ok(v) => Ok(Some(v)),
            Err(e) => self.handle(e).map(|()| None),
        }
    }
}

fn basename_in_message(err: &IngestError) -> String {
    match err {
        IngestError::Record {
            file,
            line,
            message,
        } => format!("{}:{line}: {message}", basename(Path::new(file))),
        other => other.to_string(),
    }
}

pub(crate) fn basename(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.display().to_string())
}

/// The file stem without compression and data extensions: `nq.jsonl.gz` -> `nq`.
pub fn dataset_stem(p: &Path) -> String {
    let mut name = basename(p);
    for ext in [".gz", ".jsonl", ".json", ".csv", ".tsv", ".parquet"] {
        if let Some(s) = name.strip_suffix(ext) {
            name = s.to_string();
        }
    }
    name
}

/// Assigns stable, unique qids: the source id when present, else
/// `q` + 16 hex digits of SHA-256(dataset, question). A repeated qid gets
/// `#2`, `#3`, ... and is counted.
#[derive(Default)]
pub(crate) struct QidAssigner {
    seen: HashMap<String, u32>,
    pub duplicates: u64,
}

impl QidAssigner {
    pub(crate) fn assign(
        &mut self,
        dataset: &str,
        source_id: Option<&str>,
        question: &str,
    ) -> String {
        let base = match source_id {
            Some(id) => id.to_string(),
            None => format!(
                "q{}",
                &ragprobe_artifact::sha256_hex(format!("{dataset}\u{1f}{question}").as_bytes())
                    [..16]
            ),
        };
        let n = self.seen.entry(base.clone()).or_insert(0);
        *n += 1;
        if *n == 1 {
            base
        } else {
            self.duplicates += 1;
            format!("{base}#{n}")
        }
    }
}

/// A content id for a passage without one: `h` + 16 hex digits of
/// SHA-256(title, text).
pub(crate) fn passage_id(title: Option<&str>, text: &str) -> String {
    format!(
        "h{}",
        &ragprobe_artifact::sha256_hex(format!("{}\u{1f}{text}", title.unwrap_or("")).as_bytes())
            [..16]
    )
}

/// Language from the script of `text`, for inputs that do not say.
pub(crate) fn detect_lang(text: &str) -> &'static str {
    let (mut han, mut kana, mut hangul) = (0, 0, 0);
    for c in text.chars() {
        match c as u32 {
            0x4E00..=0x9FFF | 0x3400..=0x4DBF => han += 1,
            0x3040..=0x30FF => kana += 1,
            0xAC00..=0xD7AF => hangul += 1,
            _ => {}
        }
    }
    if kana > 0 {
        "ja"
    } else if hangul > 0 {
        "ko"
    } else if han > 0 {
        "zh"
    } else {
        "en"
    }
}

/// The files whose bytes determine the result, for the action key.
fn source_files(opts: &IngestOptions, format: Format) -> Result<Vec<PathBuf>, IngestError> {
    if opts.paths.is_empty() {
        return Err(IngestError::Usage("no input files given".into()));
    }
    let mut files = Vec::new();
    for p in &opts.paths {
        if !p.exists() {
            return Err(IngestError::File {
                file: p.display().to_string(),
                message: "no such file or directory".into(),
            });
        }
        if format == Format::Beir {
            files.extend(formats::beir::files(p)?.all());
        } else if matches!(format, Format::Records(r) if r.reads_directories()) && p.is_dir() {
            // A study's distribution directory: every file under it.
            let mut v = ragprobe_artifact::regular_files(p);
            v.sort();
            files.extend(v);
        } else if p.is_dir() {
            return Err(IngestError::File {
                file: p.display().to_string(),
                message: format!("is a directory; the `{}` format reads files", format.name()),
            });
        } else {
            files.push(p.clone());
        }
    }
    if let Some(dir) = &opts.evidence_dir {
        let mut ev = ragprobe_artifact::regular_files(dir);
        ev.sort();
        files.extend(ev);
    }
    Ok(files)
}

/// The recipe of an ingest run: options and source file names in the
/// params, source file hashes in `sources` (action key only).
fn recipe(opts: &IngestOptions, format: Format, files: &[PathBuf]) -> Result<Recipe, IngestError> {
    let t = &opts.table;
    let params = json!({
        "format": format.name(),
        "files": files.iter().map(|p| basename(p)).collect::<Vec<_>>(),
        "dataset": opts.dataset,
        "split": opts.split,
        "lang": opts.lang,
        "subset": opts.subset,
        "on_error": match opts.on_error { OnError::Fail => "fail", OnError::Skip => "skip" },
        "evidence": opts.evidence_dir.as_ref().map(|_| json!({"passage_words": opts.passage_words})),
        "table": if format == Format::Table { json!({
            "kind": match t.kind { TableKind::Questions => "questions", TableKind::Corpus => "corpus" },
            "id": t.id, "question": t.question, "answers": t.answers, "answers_sep": t.answers_sep,
            "lang": t.lang, "split": t.split, "doc_id": t.doc_id, "title": t.title, "text": t.text,
        }) } else { serde_json::Value::Null },
    });
    // A directory input's name can set the questions' language and dataset
    // (a distribution's `de/`), and its files' names are the same in every
    // language: the names are keyed, or two languages with the same bytes
    // would share one cached result. (Only when there is a directory, so
    // the recipes of file inputs are unchanged.)
    let mut params = params;
    match format {
        // A study's reader versions its own logic (the stage's version
        // covers the built-in readers); 0 adds nothing (see
        // [`RecordFormat::version`]).
        Format::Records(r) if r.version() > 0 => params["reader_version"] = json!(r.version()),
        _ => {}
    }
    let dirs: Vec<String> = opts
        .paths
        .iter()
        .filter(|p| p.is_dir())
        .map(|p| basename(p))
        .collect();
    if !dirs.is_empty() {
        params["dirs"] = json!(dirs);
    }
    let mut r = Recipe::new("ingest", STAGE_VERSION, params);
    let mut sources = BTreeMap::new();
    for (i, f) in files.iter().enumerate() {
        let file = std::fs::File::open(f).map_err(|e| IngestError::File {
            file: f.display().to_string(),
            message: e.to_string(),
        })?;
        let digest =
            ragprobe_artifact::sha256_reader(std::io::BufReader::new(file)).map_err(|e| {
                IngestError::File {
                    file: f.display().to_string(),
                    message: e.to_string(),
                }
            })?;
        sources.insert(format!("{i:03}:{}", basename(f)), digest);
    }
    r.sources = sources;
    Ok(r)
}

/// Shared state of one run, handed to the format readers.
pub(crate) struct Run<'a> {
    pub store: &'a Store,
    pub opts: &'a IngestOptions,
    pub recipe: Recipe,
    pub skipper: Skipper,
    pub qids: QidAssigner,
    pub records: u64,
    pub has_answer_dataset: u64,
    pub has_answer_computed: u64,
    /// Passages with neither title nor text (kept: they are real data).
    pub empty_passages: u64,
}

impl Run<'_> {
    pub(crate) fn dataset_for(&self, path: &Path) -> String {
        self.opts
            .dataset
            .clone()
            .unwrap_or_else(|| dataset_stem(path))
    }

    pub(crate) fn lang_for(&self, file_lang: Option<&str>, question: &str) -> String {
        self.opts
            .lang
            .clone()
            .or_else(|| file_lang.map(str::to_string))
            .unwrap_or_else(|| detect_lang(question).to_string())
    }

    /// The error for inputs that held nothing usable: "no <what> in
    /// <files> (N skipped)".
    pub(crate) fn nothing_read(&self, what: &str) -> IngestError {
        IngestError::Usage(format!(
            "no {what} in {} ({} skipped)",
            self.opts
                .paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            self.skipper.skipped
        ))
    }

    /// Deterministic facts for the manifest.
    pub(crate) fn details(&self) -> serde_json::Value {
        let mut d = json!({
            "records_read": self.records,
            "records_skipped": self.skipper.skipped,
            "skipped_examples": self.skipper.examples,
            "duplicate_qids_renamed": self.qids.duplicates,
            "has_answer": { "from_dataset": self.has_answer_dataset, "computed": self.has_answer_computed },
        });
        if self.empty_passages > 0 {
            d["empty_passages"] = json!(self.empty_passages);
        }
        d
    }

    /// Count a passage with neither title nor text; the first is logged.
    pub(crate) fn note_passage(&mut self, title: Option<&str>, text: &str) {
        if text.trim().is_empty() && title.is_none_or(|t| t.trim().is_empty()) {
            self.empty_passages += 1;
            if self.empty_passages == 1 {
                tracing::warn!(
                    "a passage with neither title nor text was kept (the count is in the manifest)"
                );
            }
        }
    }
}

/// The files an ingest run with `opts` reads, in the order it reads them:
/// what a pipeline step's cache key must hash (and nothing else under a
/// directory it names).
pub fn input_files(opts: &IngestOptions) -> Result<Vec<PathBuf>, IngestError> {
    let format = opts
        .format
        .ok_or_else(|| IngestError::Usage("no --format given".into()))?;
    source_files(opts, format)
}

/// Run ingest (or return the cached result of an identical earlier run).
pub fn ingest(store: &Store, opts: &IngestOptions) -> Result<IngestReport, IngestError> {
    let format = opts
        .format
        .ok_or_else(|| IngestError::Usage("no --format given".into()))?;
    let files = source_files(opts, format)?;
    let recipe = recipe(opts, format, &files)?;
    if let Some(record) = store.cached(&recipe, &[])? {
        tracing::info!(
            "ingest: cached, not run (action {}); same recipe as an earlier run",
            &record.key[..12]
        );
        let outputs = record.outputs.iter().map(Written::from).collect();
        return Ok(IngestReport {
            outputs,
            cached: true,
            records: 0,
            skipped: 0,
        });
    }
    let started = std::time::Instant::now();
    let mut run = Run {
        store,
        opts,
        recipe,
        skipper: Skipper::new(opts.on_error),
        qids: QidAssigner::default(),
        records: 0,
        has_answer_dataset: 0,
        has_answer_computed: 0,
        empty_passages: 0,
    };
    let outputs = match format {
        Format::Dpr
        | Format::Selfrag
        | Format::Triviaqa
        | Format::Hotpotqa
        | Format::Searchqa
        | Format::Mcq
        | Format::Records(_) => formats::qa::run(&mut run, format)?,
        Format::Beir => formats::beir::run(&mut run)?,
        Format::DprCorpus => formats::dpr_corpus::run(&mut run)?,
        Format::Table => formats::table::run(&mut run)?,
    };
    if run.skipper.skipped > 0 {
        tracing::warn!(
            "{} bad record(s) skipped (recorded in the manifest)",
            run.skipper.skipped
        );
    }
    let record = store.record_action(&run.recipe, &outputs)?;
    store.log_run(json!({
        "stage": "ingest", "action": record.key, "format": format.name(),
        "files": files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "outputs": outputs.iter().map(|o| json!({"kind": o.kind, "id": o.id, "rows": o.rows})).collect::<Vec<_>>(),
        "records": run.records, "skipped": run.skipper.skipped, "seconds": started.elapsed().as_secs_f64(),
    }));
    Ok(IngestReport {
        outputs,
        cached: false,
        records: run.records,
        skipped: run.skipper.skipped,
    })
}
