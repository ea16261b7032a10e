//! `ragprobe-query`: SQL over a store's artifacts, the binary `ragprobe
//! query` runs (see ragprobe-cli's `query_forward` for why it is apart).
//! It takes the same global flags as `ragprobe`.

mod query_cmd;

use clap::Parser;

/// SQL over artifacts (polars): slice scores, cases, questions, metrics by any column.
#[derive(Parser, Debug)]
#[command(name = "ragprobe query", bin_name = "ragprobe query", version)]
struct QueryCli {
    #[command(flatten)]
    global: ragprobe_cli::GlobalArgs,
    #[command(flatten)]
    query: query_cmd::QueryArgs,
}

fn main() -> std::process::ExitCode {
    ragprobe_cli::quiet_on_closed_pipe();
    let cli = QueryCli::parse();
    ragprobe_cli::init_logging(cli.global.verbose, cli.global.quiet);
    let run = || -> anyhow::Result<()> {
        let store = ragprobe_cli::open_store(&cli.global)?;
        query_cmd::run(&store, cli.query)?.print();
        Ok(())
    };
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
