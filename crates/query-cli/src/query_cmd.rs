//! `ragprobe query`: SQL over the store's artifacts (ragprobe-query).

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use ragprobe_artifact::Store;
use ragprobe_query::{Binding, Format, Scope};

use ragprobe_cli::StageOut;

#[derive(Args, Debug)]
#[command(after_help = "\
Table names: a kind (scores, cases, questions, contexts, responses, metrics, corpus, genadv, \
embeddings, table) means that kind's latest artifact in the store (the one written last), \
or every one with --all, or those a pipeline's steps made with --pipeline; several artifacts \
are one table. A quoted id or prefix ('3f2a…') means that artifact. --table NAME=ID|FILE binds any name.

Examples:
  ragprobe query \"SELECT model, condition, avg(accuracy) AS acc, count(*) AS n FROM scores GROUP BY ALL ORDER BY acc\"
  ragprobe query \"SELECT s.model, c.dataset, avg(s.foil_only) AS foil FROM scores s JOIN cases c USING (case_id) GROUP BY ALL\" --csv out.csv
  ragprobe query \"SELECT * FROM '3f2a' WHERE NOT accuracy LIMIT 20\"
  ragprobe query --pipeline pipelines/quickstart.toml \"SELECT prompt, count(*) AS n FROM scores GROUP BY ALL\" --save")]
pub struct QueryArgs {
    /// The SQL: one SELECT (polars SQL dialect).
    pub sql: String,
    /// Bind a table name to an artifact id, a unique id prefix or a Parquet file.
    #[arg(long = "table", value_name = "NAME=ID|FILE")]
    pub tables: Vec<Binding>,
    /// Kind names mean every artifact of that kind this pipeline's steps made (steps already run).
    #[arg(long, value_name = "PIPELINE.toml", conflicts_with = "all")]
    pub pipeline: Option<PathBuf>,
    /// Variables of --pipeline, as for `run`: --set model=…
    #[arg(long = "set", value_name = "NAME=VALUE", requires = "pipeline")]
    pub set: Vec<String>,
    /// Kind names mean every artifact of that kind in the store.
    #[arg(long)]
    pub all: bool,
    /// Write the result as CSV to FILE (`-` = standard output).
    #[arg(long, value_name = "FILE", group = "format")]
    pub csv: Option<PathBuf>,
    /// Write the result as a JSON array of rows to FILE (`-` = standard output).
    #[arg(long, value_name = "FILE", group = "format")]
    pub json: Option<PathBuf>,
    /// Write the result as Parquet to FILE.
    #[arg(long, value_name = "FILE", group = "format")]
    pub parquet: Option<PathBuf>,
    /// Save the result as a `table` artifact (its manifest records the SQL and the input ids).
    #[arg(long)]
    pub save: bool,
    /// Rows shown on the terminal (the first and last halves of longer results).
    #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub max_rows: u64,
}

/// Runs the query; prints the table unless it goes to a file; `--save`
/// reports the `table` artifact like any stage output.
pub fn run(store: &Store, a: QueryArgs) -> Result<StageOut> {
    let scope = match (&a.pipeline, a.all) {
        (Some(p), _) => Scope::Only(ragprobe_cli::pipeline_outputs(store, p, &a.set)?),
        (None, true) => Scope::All,
        (None, false) => Scope::Latest,
    };
    let plan = ragprobe_query::plan(store, &a.sql, &a.tables, &scope)?;
    for (name, source) in &plan.tables {
        tracing::debug!("table {name}: {source:?}");
    }
    let mut df = ragprobe_query::run(store, &plan)?;
    if a.save {
        df = ragprobe_query::ordered(&plan, df)?;
    }
    let file = [
        (Format::Csv, &a.csv),
        (Format::Json, &a.json),
        (Format::Parquet, &a.parquet),
    ]
    .into_iter()
    .find_map(|(f, p)| p.as_ref().map(|p| (f, p)));
    match file {
        Some((format, path)) => ragprobe_query::write(&mut df, format, path)?,
        None if !a.save => println!("{}", ragprobe_query::render(&df, a.max_rows as usize)),
        None => {}
    }
    let mut out = StageOut::default();
    if a.save {
        if df.width() == 0 {
            bail!("--save: the result has no columns");
        }
        let w = ragprobe_query::save(store, &plan, &mut df)?;
        out.outputs.push((w.kind, w.id));
    }
    Ok(out)
}
