use anyhow::{bail, Result};
use clap::Args;
use ragprobe_artifact::Store;
use ragprobe_score::ScoreOptions;
use std::path::PathBuf;

/// Write the studies' tables (Markdown, CSV, LaTeX), SVG charts and a
/// self-contained HTML report (`<out>/index.html`) with provenance and a case
/// browser; or, with --compare, two runs side by side.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Metrics artifact(s).
    #[arg(long, value_delimiter = ',')]
    pub metrics: Vec<String>,
    /// Scores artifact: enables the case browser.
    #[arg(long)]
    pub scores: Option<String>,
    /// Compare two scores artifacts (two models or settings): paired differences on shared questions.
    #[arg(long, num_args = 2, value_names = ["RUN_A", "RUN_B"], conflicts_with = "metrics")]
    pub compare: Vec<String>,
    /// Output directory.
    #[arg(long, default_value = "report")]
    pub out: PathBuf,
    /// Report title.
    #[arg(long, default_value = "ragprobe report")]
    pub title: String,
    /// Bootstrap resamples for --compare intervals.
    #[arg(long, default_value_t = 2000, value_parser = crate::bounds::usize_in(0, 1_000_000))]
    pub bootstrap: usize,
    /// Bootstrap seed for --compare.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

pub fn run(store: &Store, a: ReportArgs) -> Result<crate::StageOut> {
    let files = if a.compare.len() == 2 {
        let opts = ScoreOptions {
            bootstrap: a.bootstrap,
            seed: a.seed,
            ..Default::default()
        };
        ragprobe_report::compare(store, &a.compare[0], &a.compare[1], &opts, &a.out, &a.title)?
    } else {
        if a.metrics.is_empty() {
            bail!("give --metrics <artifact> (or --compare RUN_A RUN_B)");
        }
        ragprobe_report::report(
            store,
            &a.metrics,
            a.scores.as_deref(),
            &a.out,
            &a.title,
            &ragprobe_studies::reports(),
        )?
    };
    eprint!("{}", files.text);
    eprintln!(
        "report: {} ({} files)",
        files.index.display(),
        files.files.len()
    );
    Ok(crate::StageOut::default())
}
