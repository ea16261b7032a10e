//! `ragprobe`: the command line. A thin shell over the stage libraries:
//! parse arguments, open the store, call a library, print artifact ids.

mod artifacts_cmd;
mod generate_cmd;
mod ingest_cmd;
mod mock_cmd;
mod perturb_cmd;
mod retrieve_cmd;
mod score_cmd;

use anyhow::Result;
use clap::{Parser, Subcommand};
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
    /// Artifact store directory.
    #[arg(long, global = true, env = "RAGPROBE_STORE", default_value = ".ragprobe", value_name = "DIR")]
    pub store: PathBuf,

    /// More logging (-v debug, -vv trace). RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Less logging (-q warnings only, -qq errors only).
    #[arg(short, long, global = true, action = clap::ArgAction::Count, conflicts_with = "verbose")]
    pub quiet: u8,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Read a dataset file into questions / contexts / corpus artifacts.
    Ingest(ingest_cmd::IngestArgs),
    /// Retrieve top-k passages from a corpus (BM25, dense, hybrid) and report Recall@k.
    Retrieve(retrieve_cmd::RetrieveArgs),
    /// Recall@k / Unans of an existing contexts artifact (e.g. DPR results that came with a dataset).
    Recall(retrieve_cmd::RecallArgs),
    /// Build evaluation cases from questions + contexts (unanswerable, add-one, conflict, evidence edit, NoMIRACL, RGB).
    Perturb(perturb_cmd::PerturbArgs),
    /// Get model responses for cases with a prompt template (embedded model or OpenAI-compatible servers).
    Generate(generate_cmd::GenerateArgs),
    /// Score responses (or external predictions): per-row scores and the studies' metrics.
    Score(score_cmd::ScoreArgs),
    /// List prompt templates, or show one filled for a case.
    #[command(subcommand)]
    Prompts(generate_cmd::PromptsCmd),
    /// Serve a loopback OpenAI-compatible mock with fault injection (tests, benchmarks).
    #[command(hide = true)]
    MockServer(mock_cmd::MockArgs),
    /// Inspect and manage the artifact store.
    #[command(subcommand)]
    Artifacts(artifacts_cmd::ArtifactsCmd),
}

fn init_logging(verbose: u8, quiet: u8) {
    use tracing_subscriber::EnvFilter;
    let level = match (verbose, quiet) {
        (0, 0) => "info",
        (1, _) => "debug",
        (v, _) if v >= 2 => "trace",
        (_, 1) => "warn",
        _ => "error",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_target(false).without_time().with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).init();
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose, cli.quiet);
    match run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    let store = ragprobe_artifact::Store::open(&cli.store)?;
    match cli.command {
        Command::Ingest(args) => ingest_cmd::run(&store, args),
        Command::Retrieve(args) => retrieve_cmd::run(&store, args),
        Command::Recall(args) => retrieve_cmd::recall(&store, args),
        Command::Perturb(args) => perturb_cmd::run(&store, args),
        Command::Generate(args) => generate_cmd::run(&store, args),
        Command::Score(args) => score_cmd::run(&store, args),
        Command::Prompts(cmd) => generate_cmd::prompts(&store, cmd),
        Command::MockServer(args) => mock_cmd::run(args),
        Command::Artifacts(cmd) => artifacts_cmd::run(&store, cmd),
    }
}

/// Print written artifacts on stdout, one `<kind>\t<id>` per line.
pub fn print_outputs<'a>(outputs: impl IntoIterator<Item = (&'a str, &'a str)>) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    for (kind, id) in outputs {
        let _ = writeln!(out, "{kind}\t{id}");
    }
}
