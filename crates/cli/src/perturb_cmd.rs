use anyhow::{bail, Context, Result};
use clap::Args;
use ragprobe_artifact::Store;
use ragprobe_models::llm::backend::{BackendKind, BackendSpec};
use ragprobe_models::llm::openai::OpenAiConfig;
use ragprobe_models::llm::session::ModelSession;
use ragprobe_perturb::genadv::WriterSettings;
use ragprobe_perturb::{
    perturb, summary_table, ConflictWriter, EntityFinder, PerturbOptions, ScenarioRef,
};
use ragprobe_studies::nomiracl::sample::NomiraclSample;
use ragprobe_studies::rgb::scenarios::RgbOptions;
use std::path::PathBuf;

/// Turn questions + contexts into evaluation cases.
///
/// Scenarios (repeat --scenario or separate with commas; all go into one
/// cases artifact, paired by qid):
///   closed-book         no documents
///   base                the top-k passages in rank order (see --relabel-unanswerable)
///   add-random          top-k + a passage retrieved for another question, at a random slot
///   add-topk            top-k + the (k+1)-th passage (retrieve with --extra 1)
///   add-conflict        top-k + an answer-bearing passage with the answer replaced by a foil
///                       (--writer model: a passage written by the writer model to support the foil)
///   add-genadv          top-k + a GenADV adversarial passage written by the writer model
///   evidence-edit       clean/edited passage x beginning/middle/end answer position (seed 002)
///   nomiracl            the judged passages of a NoMIRACL query, in qrels order (first k)
///   rgb-noise           RGB's positive/negative mix at each --noise-rate
///   rgb-counterfactual  RGB's positive_wrong passages at each --noise-rate (--correct-rate)
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct PerturbArgs {
    /// Scenario(s) to build.
    #[arg(long, short, required = true, value_delimiter = ',')]
    pub scenario: Vec<String>,
    /// The questions artifact.
    #[arg(long)]
    pub questions: String,
    /// The contexts artifact (from retrieve, or from ingest for datasets that come with passages).
    #[arg(long)]
    pub contexts: Option<String>,
    /// Retrieved passages per question.
    #[arg(short, long, default_value_t = 5, value_parser = crate::bounds::usize_in(1, 100_000))]
    pub k: usize,
    /// Seed of every random choice (recorded in each case's derivation).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Label questions with no answer-bearing passage in the top k `unanswerable`.
    #[arg(long)]
    pub relabel_unanswerable: bool,
    /// evidence-edit: non-answer passages added after the target passage.
    #[arg(long, default_value_t = 0, value_parser = crate::bounds::usize_in(0, 1000))]
    pub distractors: usize,
    /// rgb-noise, rgb-counterfactual: noise rates, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = RgbOptions::default().noise_rates)]
    pub noise_rate: Vec<f64>,
    /// RGB: passages per case.
    #[arg(long, default_value_t = RgbOptions::default().passages, value_parser = crate::bounds::usize_in(1, 1000))]
    pub rgb_passages: usize,
    /// rgb-counterfactual: share of the passages that are the true ones (RGB's --correct_rate).
    #[arg(long, default_value_t = RgbOptions::default().correct_rate)]
    pub correct_rate: f64,
    /// Use only the first N questions (small-scale runs).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Use a seeded random sample of N questions (after --limit), kept in their order.
    #[arg(long)]
    pub sample: Option<usize>,
    /// Choose foils without MiniLM similarity (random among same-shape candidates).
    #[arg(long)]
    pub no_foil_similarity: bool,
    /// add-conflict: who writes the conflicting passage.
    #[arg(long, value_enum, default_value_t = ConflictWriter::Rule)]
    pub writer: ConflictWriter,
    /// Writer model backend for add-genadv / --writer model.
    #[arg(long, value_enum, default_value_t = BackendKind::Local)]
    pub writer_backend: BackendKind,
    /// Writer model: a .gguf path (local) or a served model name (openai) [default: the embedded model].
    #[arg(long)]
    pub writer_model: Option<String>,
    /// Writer OpenAI-compatible base URL (repeatable).
    #[arg(long = "writer-base-url", default_value = "http://127.0.0.1:8000/v1")]
    pub writer_base_urls: Vec<String>,
    /// Name of the environment variable holding the writer's API key.
    #[arg(long)]
    pub writer_api_key_env: Option<String>,
    /// GenADV: how the answer sentence's entities are found.
    #[arg(long, value_enum, default_value_t = EntityFinder::Rules)]
    pub ner: EntityFinder,
    /// GenADV: reject adversarial sentences whose MiniLM cosine with the answer sentence is at least this.
    #[arg(long, default_value_t = 0.8, value_parser = crate::bounds::f32_in(-1.0, 1.0, false))]
    pub max_cosine: f32,
    /// NoMIRACL: draw the queries as the reference's `load_data_sample`:
    /// RELEVANT_RATIO,NON_RELEVANT_RATIO[,MAX_POOL] (its reproduction script
    /// uses 0.5,0.5), with CPython's generator seeded by --nomiracl-seed;
    /// `all` (the default) keeps every query.
    #[arg(long, value_name = "R,N[,MAX]")]
    pub nomiracl_sample: Option<String>,
    /// Seed of --nomiracl-sample (the reference's `random_seed`).
    #[arg(long, default_value_t = NomiraclSample::SEED)]
    pub nomiracl_seed: u64,
    /// Maximum new tokens per writer call.
    #[arg(long, default_value_t = 160)]
    pub writer_max_tokens: u32,
}

/// `R,N[,MAX]` for --nomiracl-sample.
fn parse_nomiracl_sample(v: &str, seed: u64) -> Result<NomiraclSample> {
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    let ratio = |s: &str| -> Result<f64> {
        let r: f64 = s
            .parse()
            .with_context(|| format!("--nomiracl-sample: `{s}` is not a number"))?;
        if !(0.0..=1.0).contains(&r) {
            bail!("--nomiracl-sample: ratio {r} is outside [0, 1]");
        }
        Ok(r)
    };
    if !(2..=3).contains(&parts.len()) {
        bail!("--nomiracl-sample takes RELEVANT_RATIO,NON_RELEVANT_RATIO[,MAX_POOL], got `{v}`");
    }
    let max_pool = parts
        .get(2)
        .map(|m| {
            m.parse::<usize>()
                .with_context(|| format!("--nomiracl-sample: MAX_POOL `{m}` is not a whole number"))
        })
        .transpose()?;
    Ok(NomiraclSample {
        relevant_ratio: ratio(parts[0])?,
        non_relevant_ratio: ratio(parts[1])?,
        max_pool,
        seed,
    })
}

/// The scenarios `--scenario` names: the stage's shared ones and the
/// studies' ([`ragprobe_studies::SCENARIOS`]).
fn scenarios(a: &PerturbArgs) -> Result<Vec<ScenarioRef>> {
    a.scenario
        .iter()
        .map(|s| {
            ragprobe_studies::scenario(s.trim()).with_context(|| {
                format!(
                    "unknown scenario `{s}`; known: {}",
                    ragprobe_perturb::scenario_names(&ragprobe_studies::SCENARIOS).join(", ")
                )
            })
        })
        .collect()
}

/// The GGUF file a local writer loads: `--writer-model`, else the embedded model.
fn writer_gguf(a: &PerturbArgs) -> PathBuf {
    a.writer_model
        .clone()
        .map(PathBuf::from)
        .unwrap_or_else(ragprobe_models::paths::smollm2_gguf)
}

/// The GGUF file the run's local writer loads, when its scenarios need a
/// writer ([`ragprobe_perturb::needs_writer`]); None otherwise.
pub fn local_writer(a: &PerturbArgs) -> Option<PathBuf> {
    let scenarios = scenarios(a).ok()?;
    let needs = ragprobe_perturb::needs_writer(&scenarios, a.writer == ConflictWriter::Model);
    (needs && a.writer_backend == BackendKind::Local).then(|| writer_gguf(a))
}

/// The perturb options `a` asks for: the stage's, then the studies' own
/// (RGB's, NoMIRACL's sample), each study's defaults where not given.
fn options(a: &PerturbArgs) -> Result<PerturbOptions> {
    let scenarios = scenarios(a)?;
    let mut opts = PerturbOptions {
        scenarios,
        k: a.k,
        seed: a.seed,
        relabel_unanswerable: a.relabel_unanswerable,
        distractors: a.distractors,
        limit: a.limit,
        sample: a.sample,
        conflict_writer_model: a.writer == ConflictWriter::Model,
        writer: WriterSettings {
            max_cosine: a.max_cosine,
            ner_model: a.ner == EntityFinder::Model,
            max_tokens: a.writer_max_tokens,
        },
        ..ragprobe_studies::perturb_options()
    };
    RgbOptions {
        noise_rates: a.noise_rate.clone(),
        passages: a.rgb_passages,
        correct_rate: a.correct_rate,
    }
    .set(&mut opts.study);
    let sample = a
        .nomiracl_sample
        .as_deref()
        .filter(|v| *v != "all")
        .map(|v| parse_nomiracl_sample(v, a.nomiracl_seed))
        .transpose()?;
    NomiraclSample::set(sample, &mut opts.study);
    Ok(opts)
}

pub fn run(store: &Store, a: PerturbArgs) -> Result<crate::StageOut> {
    let opts = options(&a)?;
    let embedder = if opts.needs_embedder(!a.no_foil_similarity) {
        match ragprobe_models::Embedder::load_default() {
            Ok(e) => Some(e),
            Err(e) => {
                tracing::warn!("foil similarity off: {e}");
                None
            }
        }
    } else {
        None
    };
    let journal_dir = store.root().join("requests");
    let mut session = if opts.needs_writer() {
        let spec = match a.writer_backend {
            BackendKind::Openai => BackendSpec::OpenAi(OpenAiConfig {
                base_urls: a.writer_base_urls.clone(),
                model: a
                    .writer_model
                    .clone()
                    .context("--writer-backend openai needs --writer-model")?,
                api_key_env: a.writer_api_key_env.clone(),
                ..Default::default()
            }),
            BackendKind::Local => BackendSpec::Local {
                gguf: writer_gguf(&a),
                batch: ragprobe_models::llm::backend::DEFAULT_BATCH,
            },
        };
        Some(ModelSession::open(&spec, &journal_dir)?)
    } else {
        None
    };
    let r = perturb(
        store,
        &a.questions,
        a.contexts.as_deref(),
        &opts,
        embedder.as_ref(),
        session.as_mut(),
    )?;
    eprint!("{}", summary_table(&r.summary));
    if let Some(q) = &r.quality {
        eprintln!(
            "model-written passages: {}",
            serde_json::to_string_pretty(q)?
        );
    }
    let mut outs = vec![(r.cases.kind.as_str(), r.cases.id.as_str())];
    if let Some(g) = &r.genadv {
        outs.push((g.kind.as_str(), g.id.as_str()));
    }
    Ok(crate::StageOut::new(outs, r.cached))
}
