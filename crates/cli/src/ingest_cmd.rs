use anyhow::Result;
use clap::Args;
use ragprobe_artifact::Store;
use ragprobe_ingest::{ingest, Format, IngestOptions, OnError, TableKind, TableMapping};
use std::path::PathBuf;

/// Read dataset files (gzip read transparently) into canonical artifacts.
///
/// Writes `questions` and `contexts` (and `corpus` for BEIR, or for
/// `--format table --table-kind corpus`). A second run with the same inputs
/// and options is a cache hit and does no work.
#[derive(Args, Debug)]
pub struct IngestArgs {
    /// Input format: a built-in one or a study's.
    #[arg(long, short, value_parser = format_parser())]
    pub format: Format,
    /// Input files (a directory for BEIR).
    #[arg(required_unless_present = "fetch", value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Dataset name [default: the file name without extensions].
    #[arg(long)]
    pub dataset: Option<String>,
    /// Split name recorded on every question (e.g. dev, test).
    #[arg(long)]
    pub split: Option<String>,
    /// Language code [default: from a NoMIRACL file name, else zh/ja/ko by script, else en].
    #[arg(long)]
    pub lang: Option<String>,
    /// NoMIRACL subset [default: relevant when the query has a positive passage].
    #[arg(long, value_parser = ["relevant", "non_relevant"])]
    pub subset: Option<String>,
    /// What to do with a bad record.
    #[arg(long, value_enum, default_value_t = OnError::Fail)]
    pub on_error: OnError,
    /// TriviaQA: the evidence directory (wikipedia/ and web/ files).
    #[arg(long)]
    pub evidence_dir: Option<PathBuf>,
    /// TriviaQA: words per evidence passage.
    #[arg(long, default_value_t = 100)]
    pub passage_words: usize,
    /// Table format: what the rows are.
    #[arg(long, value_enum, default_value_t = TableKind::Questions, help_heading = "Table format")]
    pub table_kind: TableKind,
    /// Table format: question id column [default: a hash of dataset + question].
    #[arg(long, help_heading = "Table format")]
    pub col_id: Option<String>,
    /// Table format: question column.
    #[arg(long, default_value = "question", help_heading = "Table format")]
    pub col_question: String,
    /// Table format: answers column (a list, a JSON list in a string, or a string; see --answers-sep).
    #[arg(long, default_value = "answers", help_heading = "Table format")]
    pub col_answers: String,
    /// Table format: split a string answers column on this separator (e.g. "|").
    #[arg(long, help_heading = "Table format")]
    pub answers_sep: Option<String>,
    /// Table format: language column.
    #[arg(long, help_heading = "Table format")]
    pub col_lang: Option<String>,
    /// Table format: split column.
    #[arg(long, help_heading = "Table format")]
    pub col_split: Option<String>,
    /// Table format (corpus): passage id column.
    #[arg(long, default_value = "doc_id", help_heading = "Table format")]
    pub col_doc_id: String,
    /// Table format (corpus): title column ("" for none).
    #[arg(long, default_value = "title", help_heading = "Table format")]
    pub col_title: String,
    /// Table format (corpus): text column.
    #[arg(long, default_value = "text", help_heading = "Table format")]
    pub col_text: String,
    /// Fetch the registry dataset NAME (`ragprobe data ls`) and ingest its
    /// files when a PATH does not exist or none is given: local files win.
    #[arg(long, value_name = "NAME", help_heading = "Data by name")]
    pub fetch: Option<String>,
    /// With --fetch: only these parts (languages, testbed files) [default: all].
    #[arg(
        long,
        value_name = "PART",
        value_delimiter = ',',
        requires = "fetch",
        help_heading = "Data by name"
    )]
    pub part: Vec<String>,
}

/// `--format`: the built-in formats and the studies' own
/// (`ragprobe_studies::record_formats`), each with its description in `--help`.
fn format_parser() -> impl clap::builder::TypedValueParser<Value = Format> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let all = Format::ALL.into_iter().chain(
        ragprobe_studies::record_formats()
            .into_iter()
            .map(Format::Records),
    );
    PossibleValuesParser::new(all.map(|f| PossibleValue::new(f.name()).help(f.description())))
        .map(|s| ragprobe_studies::format(&s).expect("a listed format"))
}

/// The registry dataset this ingest reads instead of its paths: the one
/// `--fetch` names, when a path is missing or none is given. Its format
/// must be the one asked for.
pub fn fetched_dataset(a: &IngestArgs) -> Result<Option<&'static ragprobe_data::Dataset>> {
    let Some(name) = &a.fetch else {
        return Ok(None);
    };
    if !a.paths.is_empty() && a.paths.iter().all(|p| p.exists()) {
        return Ok(None);
    }
    let d = ragprobe_data::find(name).map_err(anyhow::Error::msg)?;
    if d.format != a.format {
        anyhow::bail!(
            "--fetch {name}: the dataset is in format `{}`, the step reads `{}`",
            d.format.name(),
            a.format.name()
        );
    }
    d.select(&a.part).map_err(anyhow::Error::msg)?;
    Ok(Some(d))
}

/// The options to fetch `--part` of a dataset into this store's data directory.
pub fn data_options(store: &Store, a: &IngestArgs) -> ragprobe_data::DataOptions {
    let mut opts = ragprobe_data::DataOptions::from_env(store.root());
    opts.only = a.part.clone();
    opts
}

/// The step's arguments reading a fetched dataset's files: its laid-out
/// paths, and a directory option that does not exist where the dataset's
/// layout has one of the same name (TriviaQA's evidence).
pub fn with_laid_out(mut a: IngestArgs, laid: ragprobe_data::LaidOut) -> IngestArgs {
    a.paths = laid.paths;
    if let Some(e) = a.evidence_dir.as_ref().filter(|e| !e.exists()) {
        if let Some(here) = e
            .file_name()
            .map(|n| laid.dir.join(n))
            .filter(|p| p.exists())
        {
            a.evidence_dir = Some(here);
        }
    }
    a
}

/// The stage's options from its arguments.
pub fn options(a: IngestArgs) -> IngestOptions {
    IngestOptions {
        format: Some(a.format),
        paths: a.paths,
        dataset: a.dataset,
        split: a.split,
        lang: a.lang,
        subset: a.subset,
        on_error: a.on_error,
        table: TableMapping {
            kind: a.table_kind,
            id: a.col_id,
            question: a.col_question,
            answers: a.col_answers,
            answers_sep: a.answers_sep,
            lang: a.col_lang,
            split: a.col_split,
            doc_id: a.col_doc_id,
            title: Some(a.col_title).filter(|t| !t.is_empty()),
            text: a.col_text,
        },
        evidence_dir: a.evidence_dir,
        passage_words: a.passage_words,
        progress: true,
    }
}

pub fn run(store: &Store, mut a: IngestArgs) -> Result<crate::StageOut> {
    if let Some(d) = fetched_dataset(&a)? {
        if let Some(p) = a.paths.iter().find(|p| !p.exists()) {
            tracing::info!(
                "{} does not exist: reading dataset `{}` instead",
                p.display(),
                d.name
            );
        }
        let laid = ragprobe_data::lay_out(d, &data_options(store, &a))?;
        tracing::info!(
            "dataset `{}`: {} file(s) downloaded, reading {}",
            d.name,
            laid.fetched,
            laid.dir.display()
        );
        a = with_laid_out(a, laid);
    }
    let opts = options(a);
    let report = ingest(store, &opts)?;
    if !report.cached {
        tracing::info!(
            "ingest: {} records read, {} skipped -> {}",
            report.records,
            report.skipped,
            report
                .outputs
                .iter()
                .map(|o| format!("{} ({} rows)", o.kind, o.rows))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(crate::StageOut::new(
        report
            .outputs
            .iter()
            .map(|o| (o.kind.as_str(), o.id.as_str())),
        report.cached,
    ))
}
