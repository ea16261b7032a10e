use anyhow::{bail, Result};
use clap::Args;
use ragprobe_artifact::{kinds, read, MetricRow, Scores, Store};
use ragprobe_score::{compare_rows, ScoreOptions};
use std::collections::BTreeSet;
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
        let (ida, idb) = (
            store.resolve_kind(&a.compare[0], kinds::SCORES)?,
            store.resolve_kind(&a.compare[1], kinds::SCORES)?,
        );
        let (ra, rb) = (read::<Scores>(store, &ida)?, read::<Scores>(store, &idb)?);
        let opts = ScoreOptions {
            bootstrap: a.bootstrap,
            seed: a.seed,
            ..Default::default()
        };
        let groups = |rs: &[ragprobe_artifact::ScoreRow]| -> BTreeSet<(String, String, String)> {
            rs.iter()
                .map(|r| (r.dataset.clone(), r.prompt.clone(), r.condition.clone()))
                .collect()
        };
        let shared: Vec<(String, String, String)> =
            groups(&ra).intersection(&groups(&rb)).cloned().collect();
        if shared.is_empty() {
            bail!("the two runs share no (dataset, prompt, condition)");
        }
        let mut rows = Vec::new();
        for (d, p, c) in shared {
            let pick = |rs: &[ragprobe_artifact::ScoreRow]| {
                rs.iter()
                    .filter(|r| r.dataset == d && r.prompt == p && r.condition == c)
                    .cloned()
                    .collect::<Vec<_>>()
            };
            let (sa, sb) = (pick(&ra), pick(&rb));
            let metrics: Vec<&str> = if sa.iter().any(|r| r.foil_only.is_some()) {
                vec!["acc", "foil_only"]
            } else {
                vec!["acc"]
            };
            for m in metrics {
                let cmp = compare_rows(
                    &sa.iter().collect::<Vec<_>>(),
                    &sb.iter().collect::<Vec<_>>(),
                    m,
                    &opts,
                )?;
                let label = format!("{m} · {c}");
                let mk = |metric: &str, v: Option<f64>, ci: Option<(f64, f64)>| MetricRow {
                    study: "compare".into(),
                    dataset: d.clone(),
                    model: label.clone(),
                    prompt: p.clone(),
                    condition: c.clone(),
                    metric: metric.into(),
                    value: v,
                    n: cmp.questions as i64,
                    ci_low: ci.map(|x| x.0),
                    ci_high: ci.map(|x| x.1),
                    details: None,
                };
                rows.push(mk("a", cmp.a, None));
                rows.push(mk("b", cmp.b, None));
                rows.push(mk("diff", cmp.diff, cmp.ci));
            }
        }
        let title = format!("{}: A = {} vs B = {}", a.title, &ida[..12], &idb[..12]);
        ragprobe_report::render(store, &rows, &[ida, idb], None, &a.out, &title)?
    } else {
        if a.metrics.is_empty() {
            bail!("give --metrics <artifact> (or --compare RUN_A RUN_B)");
        }
        ragprobe_report::report(store, &a.metrics, a.scores.as_deref(), &a.out, &a.title)?
    };
    eprint!("{}", files.text);
    eprintln!(
        "report: {} ({} files)",
        files.index.display(),
        files.files.len()
    );
    Ok(crate::StageOut::default())
}
