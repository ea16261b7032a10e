use anyhow::{bail, Result};
use clap::Args;
use ragprobe_artifact::Store;
use ragprobe_perturb::{perturb, summary_table, PerturbOptions, Scenario};

/// Turn questions + contexts into evaluation cases.
///
/// Scenarios (repeat --scenario or separate with commas; all go into one
/// cases artifact, paired by qid):
///   closed-book         no documents
///   base                the top-k passages in rank order (see --relabel-unanswerable)
///   add-random          top-k + a passage retrieved for another question, at a random slot
///   add-topk            top-k + the (k+1)-th passage (retrieve with --extra 1)
///   add-conflict        top-k + an answer-bearing passage with the answer replaced by a foil
///   evidence-edit       clean/edited passage x beginning/middle/end answer position (seed 002)
///   nomiracl            the judged passages of a NoMIRACL query, shuffled
///   rgb-noise           RGB's positive/negative mix at each --noise-rate
///   rgb-counterfactual  RGB's positive_wrong passages
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
    #[arg(short, long, default_value_t = 5)]
    pub k: usize,
    /// Seed of every random choice (recorded in each case's derivation).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Label questions with no answer-bearing passage in the top k `unanswerable`.
    #[arg(long)]
    pub relabel_unanswerable: bool,
    /// evidence-edit: non-answer passages added after the target passage.
    #[arg(long, default_value_t = 0)]
    pub distractors: usize,
    /// rgb-noise: noise rates, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "0,0.2,0.4,0.6,0.8,1")]
    pub noise_rate: Vec<f64>,
    /// RGB: passages per case.
    #[arg(long, default_value_t = 5)]
    pub rgb_passages: usize,
    /// Use only the first N questions (small-scale runs).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Choose foils without MiniLM similarity (random among same-shape candidates).
    #[arg(long)]
    pub no_foil_similarity: bool,
}

pub fn run(store: &Store, a: PerturbArgs) -> Result<crate::StageOut> {
    let mut scenarios = Vec::new();
    for s in &a.scenario {
        match Scenario::parse(s.trim()) {
            Some(x) => scenarios.push(x),
            None => bail!(
                "unknown scenario `{s}`; known: {}",
                Scenario::ALL.iter().map(|x| x.name()).collect::<Vec<_>>().join(", ")
            ),
        }
    }
    let needs_foil = scenarios.iter().any(|s| matches!(s, Scenario::AddConflict | Scenario::EvidenceEdit));
    let embedder = if needs_foil && !a.no_foil_similarity {
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
    let opts = PerturbOptions {
        scenarios,
        k: a.k,
        seed: a.seed,
        relabel_unanswerable: a.relabel_unanswerable,
        distractors: a.distractors,
        noise_rates: a.noise_rate,
        rgb_passages: a.rgb_passages,
        limit: a.limit,
    };
    let r = perturb(store, &a.questions, a.contexts.as_deref(), &opts, embedder.as_ref())?;
    eprint!("{}", summary_table(&r.summary));
    Ok(crate::StageOut::new([(r.cases.kind.as_str(), r.cases.id.as_str())], r.cached))
}
