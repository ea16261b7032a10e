//! `ragprobe`: the command line. A thin shell over the stage libraries:
//! parse arguments, open the store, call a library, print artifact ids.
//!
//! A library so that the `ragprobe-query` binary (crates/query-cli: SQL on
//! polars, about 290 crates, built separately) shares the global flags, the
//! store opening and the pipeline lookup; `ragprobe query` runs it.

mod artifacts_cmd;
mod bounds;
mod data_cmd;
mod generate_cmd;
mod ingest_cmd;
mod mock_cmd;
mod perturb_cmd;
mod query_forward;
mod remote_cmd;
mod report_cmd;
mod retrieve_cmd;
mod run_cmd;
mod score_cmd;

use anyhow::Result;

use clap::{Parser, Subcommand};
pub use run_cmd::pipeline_outputs;

/// mimalloc instead of the system allocator: the stages allocate many small
/// strings per row, which glibc's malloc serves slowly.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::path::PathBuf;

/// Measure how retrieval-augmented language models behave when the
/// retrieved evidence is imperfect.
///
/// Every stage reads and writes content-addressed Parquet artifacts in a
/// store; stdout carries one `<kind>\t<id>` line per artifact written, so
/// stages chain in shell scripts. Logs and progress go to stderr.
#[derive(Parser, Debug)]
#[command(name = "ragprobe", version, propagate_version = true)]
pub struct Cli {
    /// Flags every command takes.
    #[command(flatten)]
    pub global: GlobalArgs,

    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The flags every command takes (also `ragprobe-query`'s).
#[derive(clap::Args, Debug, Clone)]
pub struct GlobalArgs {
    /// Artifact store directory.
    #[arg(
        long,
        global = true,
        env = "RAGPROBE_STORE",
        default_value = ".ragprobe",
        value_name = "DIR"
    )]
    pub store: PathBuf,

    /// Read through to this remote: an action record or artifact the store
    /// lacks is fetched from it (with its lineage) when a stage asks.
    #[arg(
        long,
        global = true,
        env = "RAGPROBE_STORE_REMOTE",
        value_name = "REMOTE"
    )]
    pub store_remote: Option<String>,

    /// More logging (-v debug, -vv trace). RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Less logging (-q warnings only, -qq errors only).
    #[arg(short, long, global = true, action = clap::ArgAction::Count, conflicts_with = "verbose")]
    pub quiet: u8,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Read a dataset file into questions / contexts / corpus artifacts.
    Ingest(ingest_cmd::IngestArgs),
    /// Datasets by name: list them, or download, verify and ingest one.
    #[command(subcommand)]
    Data(data_cmd::DataCmd),
    /// Retrieve top-k passages from a corpus (BM25, dense, hybrid) and report Recall@k.
    Retrieve(retrieve_cmd::RetrieveArgs),
    /// Recall@k / Unans of an existing contexts artifact (e.g. DPR results that came with a dataset).
    Recall(retrieve_cmd::RecallArgs),
    /// Build evaluation cases from questions + contexts (unanswerable, add-one, conflict, evidence edit, NoMIRACL, RGB).
    Perturb(perturb_cmd::PerturbArgs),
    /// Run a pipeline file: a DAG of stage steps, every step cached through the store.
    Run(run_cmd::RunArgs),
    /// Get model responses for cases with a prompt template (embedded model or OpenAI-compatible servers).
    Generate(generate_cmd::GenerateArgs),
    /// Score responses (or external predictions): per-row scores and the studies' metrics.
    Score(score_cmd::ScoreArgs),
    /// Write tables (Markdown/CSV/LaTeX), SVG charts and an HTML report; or compare two runs.
    Report(report_cmd::ReportArgs),
    /// List prompt templates, or show one filled for a case.
    #[command(subcommand)]
    Prompts(generate_cmd::PromptsCmd),
    /// Serve a loopback OpenAI-compatible mock with fault injection (tests, benchmarks).
    #[command(hide = true)]
    MockServer(mock_cmd::MockArgs),
    /// Inspect and manage the artifact store; push and pull to remotes.
    #[command(subcommand)]
    Artifacts(artifacts_cmd::ArtifactsCmd),
    /// Configure the object stores a team shares runs through (S3, GCS, Azure, HTTP, directories).
    #[command(subcommand)]
    Remote(remote_cmd::RemoteCmd),
    /// SQL over artifacts (polars): slice scores, cases, questions, metrics by any column.
    ///
    /// Runs the separate `ragprobe-query` binary (next to this one, else on
    /// PATH) with these arguments: `make build` or `cargo build --release
    /// -p ragprobe-query-cli` builds it. `ragprobe query --help` shows its options.
    #[command(disable_help_flag = true)]
    Query(query_forward::QueryForward),
}

/// Logs to stderr at the level `-v`/`-q` ask for (RUST_LOG overrides).
pub fn init_logging(verbose: u8, quiet: u8) {
    use tracing_subscriber::EnvFilter;
    let level = match (verbose, quiet) {
        (0, 0) => "info",
        (1, _) => "debug",
        (v, _) if v >= 2 => "trace",
        (_, 1) => "warn",
        _ => "error",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .without_time()
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}

/// A closed stdout (`ragprobe … | head`, `| grep -q`) ends the process
/// quietly, as for any Unix tool, instead of a panic in `println!`.
pub fn quiet_on_closed_pipe() {
    #[cfg(target_os = "linux")]
    // SAFETY: restores the default disposition of SIGPIPE for this process,
    // before any thread starts; no handler runs Rust code.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// The `ragprobe` binary's main.
pub fn main() -> std::process::ExitCode {
    quiet_on_closed_pipe();
    let cli = Cli::parse();
    init_logging(cli.global.verbose, cli.global.quiet);
    match run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The store `--store` names, reading through to `--store-remote` when set.
pub fn open_store(global: &GlobalArgs) -> Result<ragprobe_artifact::Store> {
    let mut store = ragprobe_artifact::Store::open(&global.store)?;
    if let Some(name) = &global.store_remote {
        store = remote_cmd::read_through(store, name)?;
    }
    Ok(store)
}

fn run(cli: Cli) -> Result<()> {
    if let Command::Query(args) = &cli.command {
        // Before the store is opened: `ragprobe-query` opens it itself.
        return query_forward::run(&cli.global, args);
    }
    let store = open_store(&cli.global)?;
    let out = dispatch(&store, cli.command)?;
    out.print();
    match out.error {
        Some(e) => Err(anyhow::anyhow!(e)),
        None => Ok(()),
    }
}

/// Run one command; stage commands return what they wrote.
pub fn dispatch(store: &ragprobe_artifact::Store, command: Command) -> Result<StageOut> {
    let none = |r: Result<()>| r.map(|_| StageOut::default());
    match command {
        Command::Ingest(args) => ingest_cmd::run(store, args),
        Command::Data(cmd) => data_cmd::run(store, cmd),
        Command::Retrieve(args) => retrieve_cmd::run(store, args),
        Command::Recall(args) => retrieve_cmd::recall(store, args),
        Command::Perturb(args) => perturb_cmd::run(store, args),
        Command::Generate(args) => generate_cmd::run(store, args),
        Command::Score(args) => score_cmd::run(store, args),
        Command::Report(args) => report_cmd::run(store, args),
        Command::Run(args) => none(run_cmd::run(store, args)),
        Command::Prompts(cmd) => none(generate_cmd::prompts(store, cmd)),
        Command::MockServer(args) => none(mock_cmd::run(args)),
        Command::Artifacts(cmd) => artifacts_cmd::run(store, cmd),
        Command::Remote(cmd) => none(remote_cmd::remote(store, cmd)),
        // `run` forwards it before a store is opened; pipelines have no query step.
        Command::Query(_) => anyhow::bail!("`query` runs only from the command line"),
    }
}

/// What a stage command produced: the artifacts it wrote (printed on
/// stdout as `<kind>\t<id>`), whether it was a cache hit, request counts
/// for generation, and an error to report after printing the outputs.
#[derive(Debug, Clone, Default)]
pub struct StageOut {
    pub outputs: Vec<(String, String)>,
    pub cached: bool,
    /// (new, cached, failed) requests.
    pub requests: Option<(u64, u64, u64)>,
    /// (prompt, completion) tokens of the new requests, as reported.
    pub tokens: Option<(u64, u64)>,
    pub error: Option<String>,
}

impl StageOut {
    pub fn new<'a>(outputs: impl IntoIterator<Item = (&'a str, &'a str)>, cached: bool) -> Self {
        StageOut {
            outputs: outputs
                .into_iter()
                .map(|(k, i)| (k.to_string(), i.to_string()))
                .collect(),
            cached,
            ..Default::default()
        }
    }

    /// Print the outputs on stdout, one `<kind>\t<id>` per line.
    pub fn print(&self) {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        for (kind, id) in &self.outputs {
            let _ = writeln!(out, "{kind}\t{id}");
        }
    }
}
