//! `ragprobe run PIPELINE.toml`: the pipeline runner of `ragprobe-pipeline`
//! over this CLI's stages. The stages are run through the same argument
//! parser as the command line, so everything the CLI can do a pipeline can
//! do, and each stage declares here which files and models a step reads.

use anyhow::Result;
use clap::{Args, Parser};
use ragprobe_artifact::Store;
use ragprobe_models::llm::local::ENGINE_ID;
use ragprobe_pipeline::{
    Pipeline, PlanState, RunOptions, StepError, StepExecutor, StepInputs, StepOutcome,
};
use ragprobe_retrieve::Method;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::{dispatch, Cli, Command};

/// Run a pipeline file: a DAG of stage steps, every step cached through the
/// store (see `pipelines/*.toml`; `[vars]`, `[defaults.<stage>]`, `[steps.<name>]`).
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The pipeline file (TOML).
    pub pipeline: PathBuf,
    /// Set a variable: --set model=Qwen/Qwen2.5-7B-Instruct --set base_url=http://gpu1:8000/v1
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Print the plan, each step marked cached or to-run, and run nothing;
    /// for each generate step whose cases exist, the requests it would
    /// send, their prompt tokens, the most completion tokens and (with
    /// --price-in/--price-out) the cost.
    #[arg(long)]
    pub dry_run: bool,
    /// Run every step that sends no model request (all but generate, and
    /// perturb with its writer on a server, and what follows them), then
    /// print the --dry-run plan, so each generate step has its estimate.
    #[arg(long, conflicts_with_all = ["dry_run", "only", "from"])]
    pub estimate: bool,
    /// The served model's tokenizer (tokenizer.json or .gguf) for the
    /// estimate's token counts [default: the embedded model's when it is
    /// the backend, else 4 characters a token].
    #[arg(long, value_name = "FILE")]
    pub tokenizer: Option<PathBuf>,
    /// Price per million prompt tokens, for the estimate's cost.
    #[arg(long, value_name = "PRICE", requires = "price_out", value_parser = crate::bounds::f64_in(0.0, 1e9, false))]
    pub price_in: Option<f64>,
    /// Price per million completion tokens, for the estimate's cost.
    #[arg(long, value_name = "PRICE", requires = "price_in", value_parser = crate::bounds::f64_in(0.0, 1e9, false))]
    pub price_out: Option<f64>,
    /// Run only this step (its inputs must already be cached).
    #[arg(long, conflicts_with = "from")]
    pub only: Option<String>,
    /// Run this step and everything after it again, ignoring their step cache.
    #[arg(long)]
    pub from: Option<String>,
    /// Steps to run at once when they are independent (steps that load a local model run one at a time).
    #[arg(long, default_value_t = 2)]
    pub jobs: usize,
}

/// The stages a step may run.
const STAGES: &[&str] = &[
    "ingest", "retrieve", "recall", "perturb", "generate", "score", "report",
];

/// This CLI's stages as pipeline steps.
struct CliSteps<'a> {
    store: &'a Store,
}

fn parse(argv: &[String]) -> Result<Command, clap::Error> {
    let full = std::iter::once("ragprobe".to_string()).chain(argv.iter().cloned());
    Cli::try_parse_from(full).map(|c| c.command)
}

fn path_str(p: &Path) -> String {
    p.display().to_string()
}

fn minilm() -> PathBuf {
    ragprobe_models::paths::minilm_dir().join("model.safetensors")
}

impl StepExecutor for CliSteps<'_> {
    fn stages(&self) -> &[&str] {
        STAGES
    }

    fn check(&self, argv: &[String]) -> Result<(), StepError> {
        parse(argv).map(|_| ()).map_err(|e| {
            let msg = e.to_string();
            StepError::Invalid(
                msg.lines()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("")
                    .trim_start_matches("error: ")
                    .to_string(),
            )
        })
    }

    /// Declared per stage: ingest's paths and evidence directory; generate's
    /// prompt file, prompts directory, passage tokenizer and local model;
    /// perturb's writer model and the embedder; score's predictions;
    /// dense retrieval's embedder.
    fn inputs(&self, argv: &[String]) -> StepInputs {
        let Ok(cmd) = parse(argv) else {
            return StepInputs::default();
        };
        let mut i = StepInputs::default();
        match cmd {
            Command::Ingest(a) => {
                // A step reading a dataset by name keys on the dataset's
                // pinned sources (the files are not there before it runs, and
                // are verified against pinned or recorded hashes when they
                // are); files placed by hand are whatever the user put
                // there, so they are hashed as well, like any local input.
                if let Ok(Some(d)) = crate::ingest_cmd::fetched_dataset(&a) {
                    i.sources = ragprobe_data::identity(d, &a.part).unwrap_or_default();
                    if let ragprobe_data::Access::Manual(_) = d.access {
                        let opts = crate::ingest_cmd::data_options(self.store, &a);
                        if let Ok(laid) = ragprobe_data::placed_by_hand(d, &opts) {
                            let a = crate::ingest_cmd::with_laid_out(a, laid);
                            let opts = crate::ingest_cmd::options(a);
                            if let Ok(files) = ragprobe_ingest::input_files(&opts) {
                                i.files = files.iter().map(|p| path_str(p)).collect();
                            }
                        }
                    }
                    return i;
                }
                // Exactly the files the stage reads (a BEIR directory's
                // corpus, queries and qrels; not everything under it). A
                // step whose inputs cannot be listed fails when it runs,
                // with the stage's own error, so nothing is hashed for it.
                let opts = crate::ingest_cmd::options(a);
                if let Ok(files) = ragprobe_ingest::input_files(&opts) {
                    i.files = files.iter().map(|p| path_str(p)).collect();
                }
            }
            Command::Retrieve(a) if a.method != Method::Bm25 => {
                i.models.push(minilm());
                i.exclusive = true;
            }
            Command::Perturb(a) => {
                i.models.push(minilm());
                let gguf = crate::perturb_cmd::local_writer(&a);
                i.files.extend(a.writer_model.clone());
                if let Some(g) = gguf {
                    i.models.push(g);
                    i.engines.push(ENGINE_ID.into());
                }
                i.exclusive = true;
            }
            Command::Generate(a) => {
                i.files.push(a.prompt.clone());
                i.files.extend(a.prompts_dir.as_deref().map(path_str));
                i.files.extend(a.passage_tokenizer.as_deref().map(path_str));
                // A model file named by --model is hashed (another file at the
                // same path is another model); every local model is fingerprinted.
                i.files.extend(a.model.clone());
                if let Some(gguf) = crate::generate_cmd::local_gguf(&a) {
                    i.models.push(gguf);
                    i.engines.push(ENGINE_ID.into());
                    i.exclusive = true;
                }
            }
            Command::Score(a) => i.files.extend(a.predictions.as_deref().map(path_str)),
            _ => {}
        }
        i
    }

    fn run(&self, argv: &[String]) -> Result<StepOutcome, StepError> {
        let cmd = parse(argv).map_err(|e| StepError::Invalid(e.to_string()))?;
        let out = dispatch(self.store, cmd).map_err(|e| StepError::Failed(e.into()))?;
        if let Some(e) = out.error {
            return Err(StepError::Failed(e.into()));
        }
        Ok(StepOutcome {
            outputs: out.outputs,
            requests: out.requests,
            tokens: out.tokens,
            cached: out.cached,
        })
    }
}

pub fn run(store: &Store, a: RunArgs) -> Result<()> {
    let started = Instant::now();
    let steps = CliSteps { store };
    let p = Pipeline::load(&a.pipeline, &a.set, &steps)?;
    let opts = RunOptions {
        only: a.only.clone(),
        from: a.from.clone(),
        jobs: a.jobs,
        progress: true,
        leave_out: Default::default(),
    };
    if a.estimate {
        let before = RunOptions {
            leave_out: sends_requests(&p),
            ..opts.clone()
        };
        let s = p.run(store, &steps, &before, &mut |_, _| {})?;
        eprintln!(
            "estimate: {} step(s) that send no model request run, {} cached; not run: {}",
            s.ran,
            s.cached,
            before.leave_out.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    if a.dry_run || a.estimate {
        return print_plan(store, &p, &steps, &opts, &a);
    }
    let summary = p.run(store, &steps, &opts, &mut |n, outs| {
        for (k, id) in outs {
            println!("{n}\t{k}\t{id}");
        }
    })?;
    let report = p
        .steps
        .values()
        .filter(|s| s.stage == "report")
        .find_map(|s| {
            s.params
                .iter()
                .find(|(k, _)| k == "out")
                .and_then(|(_, v)| v.first().cloned())
        });
    let (new, cached, failed) = summary.requests;
    let (prompt, completion) = summary.tokens;
    let cost = a
        .price_in
        .zip(a.price_out)
        .map(|(pin, pout)| {
            format!(
                ", cost {:.4}",
                (prompt as f64 * pin + completion as f64 * pout) / 1e6
            )
        })
        .unwrap_or_default();
    eprintln!(
        "pipeline {}: {} step(s) run, {} cached; requests: {new} new, {cached} cached, {failed} failed; tokens (new requests, as reported): {prompt} prompt, {completion} completion{cost}; {:.1}s{}",
        a.pipeline.display(),
        summary.ran,
        summary.cached,
        started.elapsed().as_secs_f64(),
        report
            .map(|r| format!("; report: {}", Path::new(&r).join("index.html").display()))
            .unwrap_or_default()
    );
    store.log_run(json!({"stage": "run", "pipeline": a.pipeline.display().to_string(), "ran": summary.ran, "cached": summary.cached, "seconds": started.elapsed().as_secs_f64()}));
    Ok(())
}

/// The plan (`--dry-run`, `--estimate`): each step's state, each generate
/// step's estimate and their total, and the downloads.
fn print_plan(
    store: &Store,
    p: &Pipeline,
    steps: &CliSteps<'_>,
    opts: &RunOptions,
    a: &RunArgs,
) -> Result<()> {
    if let Err(e) = p.check_inputs() {
        eprintln!("warning: {e}");
    }
    let plan = p.dry_run(store, steps, opts)?;
    println!("plan for {} ({} steps):", a.pipeline.display(), plan.len());
    let mut total = ragprobe_generate::Estimate {
        exact: true,
        ..Default::default()
    };
    let mut unknown = Vec::new();
    for step in &plan {
        let state = match step.state {
            PlanState::Cached => "cached",
            PlanState::ToRun => "to-run",
            PlanState::AfterInputs => "to-run (after its inputs)",
        };
        println!("  {:<28} {:<9} {state}", step.name, step.stage);
        if step.stage != "generate" {
            continue;
        }
        let est = match (&step.argv, step.state == PlanState::Cached) {
            (_, true) => continue,
            (Some(argv), false) => match parse(argv) {
                Ok(Command::Generate(g)) => {
                    crate::generate_cmd::estimate(store, &g, a.tokenizer.as_deref())?
                }
                _ => continue,
            },
            (None, false) => {
                unknown.push(step.name.clone());
                continue;
            }
        };
        println!("      {}", estimate_line(&est, a.price_in.zip(a.price_out)));
        total.add(&est);
    }
    print_estimate_total(&total, &unknown, a.price_in.zip(a.price_out));
    print_downloads(store, p);
    Ok(())
}

/// The steps that send model requests: generate, and perturb with its
/// writer on a server (`writer-backend = "openai"`); `run --estimate`
/// leaves them, and what follows them, out.
fn sends_requests(p: &Pipeline) -> std::collections::BTreeSet<String> {
    p.steps
        .values()
        .filter(|s| {
            s.stage == "generate"
                || (s.stage == "perturb"
                    && s.params
                        .iter()
                        .any(|(k, v)| k == "writer-backend" && v.iter().any(|x| x == "openai")))
        })
        .map(|s| s.name.clone())
        .collect()
}

/// One generate step's estimate, in a line: requests to send (of all),
/// prompt tokens, the most completion tokens, and the cost at `prices`
/// (per million prompt and completion tokens).
fn estimate_line(e: &ragprobe_generate::Estimate, prices: Option<(f64, f64)>) -> String {
    let approx = if e.exact { "" } else { "~" };
    let mut line = format!(
        "requests: {} to send ({} of {} already answered); prompt tokens: {approx}{}; completion tokens: at most {}",
        e.to_send, e.answered, e.requests, e.prompt_tokens, e.max_completion_tokens
    );
    if let Some((pin, pout)) = prices {
        let (cin, cout) = e.cost(pin, pout);
        line.push_str(&format!(
            "; cost: {approx}{cin:.4} prompt + at most {cout:.4} completion = at most {approx}{:.4}",
            cin + cout
        ));
    }
    if let Some(why) = &e.unchecked {
        line.push_str(&format!(
            " (the journal not checked, every request counted: {why})"
        ));
    }
    line
}

/// The estimate's total over the generate steps, how the tokens were
/// counted, and the steps that could not be estimated.
fn print_estimate_total(
    total: &ragprobe_generate::Estimate,
    unknown: &[String],
    prices: Option<(f64, f64)>,
) {
    if total.requests == 0 && unknown.is_empty() {
        return;
    }
    if total.requests > 0 {
        println!(
            "estimate (generate steps): {}",
            estimate_line(total, prices)
        );
    }
    if total.requests > 0 {
        println!("  prompt tokens counted with {}", total.counted_with);
    }
    if !unknown.is_empty() {
        println!(
            "  not estimated, their cases not built yet (`run --estimate` builds them, unless a perturb writer on a server makes them): {}",
            unknown.join(", ")
        );
    }
}

/// What the ingest steps that read datasets by name would download: each
/// file with its size, and the total (`run --dry-run`).
fn print_downloads(store: &Store, p: &Pipeline) {
    let mut lines = Vec::new();
    let (mut total, mut unknown, mut manual) = (0u64, 0usize, Vec::new());
    for s in p.steps.values().filter(|s| s.stage == "ingest") {
        let Ok(argv) = p.argv(s, &|r| {
            Err(ragprobe_pipeline::PipelineError::Invalid(r.into()))
        }) else {
            continue;
        };
        let Ok(Command::Ingest(a)) = parse(&argv) else {
            continue;
        };
        let Ok(Some(d)) = crate::ingest_cmd::fetched_dataset(&a) else {
            continue;
        };
        let opts = crate::ingest_cmd::data_options(store, &a);
        for f in ragprobe_data::pending(d, &opts).unwrap_or_default() {
            if f.manual {
                manual.push(format!("{}/{}", d.name, f.file));
                continue;
            }
            match f.bytes {
                Some(b) => total += b,
                None => unknown += 1,
            }
            let size = f
                .bytes
                .map_or("size unknown".to_string(), crate::data_cmd::megabytes);
            let line = format!("  {:<40} {size}", format!("{} {}", d.name, f.file));
            if !lines.contains(&line) {
                lines.push(line);
            }
        }
    }
    if lines.is_empty() && manual.is_empty() {
        return;
    }
    println!(
        "downloads into {} ({} file(s), {}{}):",
        ragprobe_data::DataOptions::from_env(store.root())
            .data_dir
            .display(),
        lines.len(),
        crate::data_cmd::megabytes(total),
        if unknown > 0 {
            format!(" + {unknown} of unknown size")
        } else {
            String::new()
        }
    );
    for l in lines {
        println!("{l}");
    }
    for m in manual {
        println!(
            "  {m:<40} must be placed by hand (ragprobe data get {})",
            m.split('/').next().unwrap_or("")
        );
    }
}

/// Ids of the artifacts the already-run steps of a pipeline produced (with
/// these `--set` variables), for `query --pipeline`; steps not run yet are
/// reported as a warning.
pub fn pipeline_outputs(
    store: &Store,
    pipeline: &Path,
    sets: &[String],
) -> Result<std::collections::BTreeSet<String>> {
    let steps = CliSteps { store };
    let p = Pipeline::load(pipeline, sets, &steps)?;
    let (outputs, missing) = p.cached_outputs(store, &steps)?;
    if !missing.is_empty() {
        tracing::warn!(
            "{}: {} step(s) have not run with these inputs, their outputs are not queried: {}",
            pipeline.display(),
            missing.len(),
            missing.join(", ")
        );
    }
    Ok(outputs.into_iter().map(|(_, id)| id).collect())
}
