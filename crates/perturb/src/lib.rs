//! Perturb stage: questions + contexts -> `cases`, one evaluation input
//! each, with its ordered documents, condition and expected label.
//!
//! The stage builds the scenarios every study shares (`closed-book`,
//! `base`) and whatever the caller registers through [`Scenario`] (the
//! studies' own: `ragprobe_studies::SCENARIOS`); it provides them the
//! [`Builder`] (the run's questions, contexts, options, foil picker and
//! writer model) and counts what they skip.
//! Every random choice comes from an RNG seeded by (seed, qid, purpose), so
//! results do not depend on order or threads: same inputs and seed give
//! byte-identical artifacts.

pub mod foil;
pub mod genadv;
pub mod ner;
pub mod pyrandom;
mod study_options;
pub mod text;
pub use study_options::{QuestionSample, StudyOptions};

use ragprobe_artifact::{
    kinds, read, sha256_hex, write_all, ActionRecord, ArtifactError, CaseDoc, CaseRow, Cases,
    ContextRow, Contexts, DocSource, Expected, GenAdv, GenAdvStatus, QuestionRow, Questions,
    Recipe, Store, Written,
};
use ragprobe_matching::has_answer;
use ragprobe_models::llm::session::ModelSession;
use ragprobe_models::Embedder;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};

use foil::{Foil, FoilPicker};

/// Version of the perturb stage's logic; part of every recipe.
pub const STAGE_VERSION: u32 = 2;

/// A perturb failure.
#[derive(Debug, thiserror::Error)]
pub enum PerturbError {
    /// A failure reading or writing artifacts in the store.
    #[error(transparent)]
    Artifact(#[from] ArtifactError),
    /// A failure loading or running a model (writer model or embedder).
    #[error(transparent)]
    Model(#[from] ragprobe_models::ModelError),
    /// Invalid options or input: no scenario, `-k` 0, a noise rate outside [0, 1], a missing writer model.
    #[error("{0}")]
    Invalid(String),
}

/// The crate's result type; errors default to [`PerturbError`].
pub type Result<T, E = PerturbError> = std::result::Result<T, E>;

/// A scenario: one way of composing the passages a model sees for a
/// question. The perturb stage's extension point: the stage builds the two
/// scenarios every study shares ([`ClosedBook`], [`Base`]) and whatever
/// else the caller registers (`ragprobe_studies::SCENARIOS`); it names no
/// study.
///
/// The caller guarantees: [`Scenario::build`] is called once per selected
/// question, questions in their order and each question's scenarios in the
/// order given, only for a question with contexts when
/// [`Scenario::needs_contexts`]; the [`Builder`] holds every question (the
/// pools), each question's contexts sorted by rank, the run's options, and
/// the foil picker and the writer model when the run has them.
///
/// An implementation must: be deterministic and order-free — every random
/// choice from [`rng_for`] seeded by (seed, qid, purpose), or from a
/// generator seeded afresh for each question (CPython's, [`pyrandom`],
/// where a reference script's draws must be reproduced), so a question's
/// cases do not depend on which other questions or scenarios are in the
/// run; name each case's condition (its name, or `<name>-<parameter>`);
/// make each case with [`Builder::base_case`] from parameters holding all
/// that shapes the case (they make its id); count a question it cannot
/// build with [`Builder::skip`] and the reason, never drop it silently;
/// return an error only for a failure of the run (a model call), never for
/// a question that does not allow the scenario.
pub trait Scenario: Sync {
    /// The name `--scenario` takes; also the cases' condition (or its prefix).
    fn name(&self) -> &'static str;
    /// Other names `--scenario` accepts for it.
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    /// It reads the question's contexts: a question without any is skipped
    /// (counted) before [`Scenario::build`], and a run without `--contexts`
    /// is refused.
    fn needs_contexts(&self) -> bool {
        true
    }
    /// It picks foil answers (the embedder, when given, refines the choice).
    fn needs_foil(&self) -> bool {
        false
    }
    /// It needs the writer model (`conflict_writer_model`: add-conflict's
    /// passage is model-written).
    fn needs_writer(&self, conflict_writer_model: bool) -> bool {
        let _ = conflict_writer_model;
        false
    }
    /// Refuse options this scenario cannot build cases from (a
    /// [`PerturbError::Invalid`] naming the option and value), before any
    /// case is built; called once per run with the run's options. The
    /// default accepts every option.
    fn check(&self, opts: &PerturbOptions) -> Result<()> {
        let _ = opts;
        Ok(())
    }
    /// The cases of question `q` (none, with the reason counted, when the
    /// question does not allow the scenario).
    fn build(&self, b: &mut Builder<'_>, q: &QuestionRow) -> Result<Vec<CaseRow>>;
}

impl std::fmt::Debug for dyn Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A registered scenario.
pub type ScenarioRef = &'static dyn Scenario;

/// `closed-book`: the question with no documents.
pub struct ClosedBook;

impl Scenario for ClosedBook {
    fn name(&self) -> &'static str {
        "closed-book"
    }
    fn needs_contexts(&self) -> bool {
        false
    }
    fn build(&self, b: &mut Builder<'_>, q: &QuestionRow) -> Result<Vec<CaseRow>> {
        Ok(vec![b.base_case(
            q,
            self.name(),
            vec![],
            Expected::Answer,
            json!({}),
        )])
    }
}

/// `base`: the top-k retrieved passages in rank order, labelled by
/// `--relabel-unanswerable`.
pub struct Base;

impl Scenario for Base {
    fn name(&self) -> &'static str {
        "base"
    }
    fn build(&self, b: &mut Builder<'_>, q: &QuestionRow) -> Result<Vec<CaseRow>> {
        let opts = b.opts;
        let top = b.topk(&q.qid);
        let docs = top.iter().map(|c| doc(c, DocSource::Retrieved)).collect();
        let params = json!({"k": opts.k, "relabel_unanswerable": opts.relabel_unanswerable, "retrieved": top.iter().map(|c| c.doc_id.as_str()).collect::<Vec<_>>()});
        Ok(vec![b.base_case(
            q,
            self.name(),
            docs,
            b.expected_for(&top),
            params,
        )])
    }
}

/// The scenarios the stage itself builds.
pub static SHARED_SCENARIOS: &[ScenarioRef] = &[&ClosedBook, &Base];

/// The scenario called `name` (or one of its aliases) among the shared
/// ones and `registered`.
pub fn find_scenario(registered: &[ScenarioRef], name: &str) -> Option<ScenarioRef> {
    SHARED_SCENARIOS
        .iter()
        .chain(registered)
        .find(|s| s.name() == name || s.aliases().contains(&name))
        .copied()
}

/// Every scenario's name, the shared ones first.
pub fn scenario_names(registered: &[ScenarioRef]) -> Vec<&'static str> {
    SHARED_SCENARIOS
        .iter()
        .chain(registered)
        .map(|s| s.name())
        .collect()
}

/// Who writes add-conflict's conflicting passage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ConflictWriter {
    /// Replace the answer in a retrieved passage with the foil.
    #[default]
    Rule,
    /// The writer model writes a passage supporting the foil (seed 000 §5.4.1).
    Model,
}

/// How GenADV finds the entities of the answer sentence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum EntityFinder {
    /// The built-in rule-based NER.
    #[default]
    Rules,
    /// Ask the writer model for a JSON list.
    Model,
}

/// Options of one perturb run.
#[derive(Debug, Clone)]
pub struct PerturbOptions {
    /// The scenarios to build cases for.
    pub scenarios: Vec<ScenarioRef>,
    /// Retrieved passages per question (top-k).
    pub k: usize,
    /// Seed of the run's random choices (each RNG is seeded by seed, qid and purpose).
    pub seed: u64,
    /// Label questions with no answer-bearing passage in the top k as
    /// `unanswerable` (the Unans-prompt experiments).
    pub relabel_unanswerable: bool,
    /// evidence-edit: non-answer passages added after the target passage.
    pub distractors: usize,
    /// The studies' own options (their scenarios' and question samples'),
    /// by name; recorded in the recipe.
    pub study: StudyOptions,
    /// The question samples the studies register
    /// (`ragprobe_studies::perturb_options` gives them), applied in order after
    /// `limit` and `sample`.
    pub samples: &'static [&'static dyn QuestionSample],
    /// Use only the first N questions (small-scale runs); None = all.
    pub limit: Option<usize>,
    /// Use a seeded random sample of N questions (kept in their order); None = all.
    pub sample: Option<usize>,
    /// add-conflict: the conflicting passage is written by the writer model
    /// (seed 000 §5.4.1) instead of the rule-based alias replacement.
    pub conflict_writer_model: bool,
    /// Settings of model-written passages (GenADV, conflict writer).
    pub writer: genadv::WriterSettings,
    /// The templates the writer loads by id (the studies' catalog:
    /// `genadv-*`, `conflict-passage`); their ids and versions enter every
    /// request the writer makes.
    pub prompts: ragprobe_models::prompts::Catalog,
}

/// Whether `scenarios` need a writer model ([`Scenario::needs_writer`]).
pub fn needs_writer(scenarios: &[ScenarioRef], conflict_writer_model: bool) -> bool {
    scenarios
        .iter()
        .any(|s| s.needs_writer(conflict_writer_model))
}

impl PerturbOptions {
    /// The run needs a writer model (add-genadv, or add-conflict written by
    /// the model).
    pub fn needs_writer(&self) -> bool {
        needs_writer(&self.scenarios, self.conflict_writer_model)
    }

    /// The run uses the MiniLM embedder: foil similarity (when
    /// `foil_similarity`) or model-written passages.
    pub fn needs_embedder(&self, foil_similarity: bool) -> bool {
        (foil_similarity && self.scenarios.iter().any(|s| s.needs_foil())) || self.needs_writer()
    }
}

impl Default for PerturbOptions {
    fn default() -> Self {
        PerturbOptions {
            scenarios: vec![&Base],
            k: 5,
            seed: 0,
            relabel_unanswerable: false,
            distractors: 0,
            study: StudyOptions::default(),
            samples: &[],
            limit: None,
            sample: None,
            conflict_writer_model: false,
            writer: genadv::WriterSettings::default(),
            prompts: Default::default(),
        }
    }
}

/// Per-scenario counts of cases made and questions skipped, by reason.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ScenarioSummary {
    /// The scenario's name.
    pub scenario: String,
    /// Cases made.
    pub cases: u64,
    /// Questions skipped, counted by reason.
    pub skipped: BTreeMap<String, u64>,
    /// Facts about cases that were built (e.g. fewer passages than k).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub notes: BTreeMap<String, u64>,
}

/// The outcome of a perturb run.
#[derive(Debug, Clone)]
pub struct PerturbReport {
    /// The `cases` artifact written (or, when cached, recorded by the earlier run).
    pub cases: Written,
    /// The trail of model-written passages, when any were written.
    pub genadv: Option<Written>,
    /// Quality figures of model-written passages (acceptance, leakage, topicality).
    pub quality: Option<Value>,
    /// Per-scenario counts of cases made and questions skipped.
    pub summary: Vec<ScenarioSummary>,
    /// True when an identical earlier run's result was reused.
    pub cached: bool,
}

/// An RNG for one (question, purpose), independent of iteration order.
pub fn rng_for(seed: u64, qid: &str, purpose: &str) -> ChaCha8Rng {
    let h = sha256_hex(format!("{seed}\u{1f}{qid}\u{1f}{purpose}").as_bytes());
    ChaCha8Rng::seed_from_u64(u64::from_str_radix(&h[..16], 16).expect("hex"))
}

fn case_id(qid: &str, condition: &str, params: &Value) -> String {
    sha256_hex(
        format!(
            "{qid}\u{1f}{condition}\u{1f}{}",
            ragprobe_artifact::canonical_json(params)
        )
        .as_bytes(),
    )[..24]
        .to_string()
}

/// A context as a case document from `source`.
pub fn doc(c: &ContextRow, source: DocSource) -> CaseDoc {
    CaseDoc {
        doc_id: c.doc_id.clone(),
        title: c.title.clone(),
        text: c.text.clone(),
        source,
        has_answer: c.has_answer,
    }
}

/// What a [`Scenario`] builds with: the run's options and inputs, the
/// shared services (foil picker, writer model) and the summary it counts
/// skips and notes in.
pub struct Builder<'a> {
    /// The run's options.
    pub opts: &'a PerturbOptions,
    /// Every question of the input (the pools draw from all of them, not
    /// only the selected ones).
    pub questions: &'a [QuestionRow],
    by_qid: HashMap<&'a str, Vec<&'a ContextRow>>,
    /// Foil answers of the right shape ([`foil`]).
    pub foils: FoilPicker<'a>,
    summary: BTreeMap<&'static str, ScenarioSummary>,
    /// The writer model, when the run has one ([`genadv`]).
    pub writer: Option<genadv::Writer<'a>>,
    /// The trail of model-written passages, written as the `genadv`
    /// artifact after the run.
    pub trails: Vec<genadv::Trail>,
}

impl<'a> Builder<'a> {
    /// A builder with an empty summary entry for each scenario, in order.
    fn new(
        opts: &'a PerturbOptions,
        questions: &'a [QuestionRow],
        by_qid: HashMap<&'a str, Vec<&'a ContextRow>>,
        foils: FoilPicker<'a>,
        writer: Option<genadv::Writer<'a>>,
    ) -> Self {
        let mut b = Builder {
            opts,
            questions,
            by_qid,
            foils,
            summary: BTreeMap::new(),
            writer,
            trails: Vec::new(),
        };
        for s in &opts.scenarios {
            b.summary.insert(
                s.name(),
                ScenarioSummary {
                    scenario: s.name().into(),
                    ..Default::default()
                },
            );
        }
        b
    }

    /// Every selected question's cases: question by question, each
    /// question's scenarios in the order given.
    fn build_all(&mut self, selected: Vec<&QuestionRow>) -> Result<Vec<CaseRow>> {
        let opts = self.opts;
        let mut rows = Vec::new();
        for q in selected {
            for s in &opts.scenarios {
                let cases = self.build(q, *s)?;
                self.made(s.name(), cases.len() as u64);
                rows.extend(cases);
            }
        }
        Ok(rows)
    }

    /// The per-scenario summary, in the order the scenarios were given.
    fn summaries(&self) -> Vec<ScenarioSummary> {
        self.opts
            .scenarios
            .iter()
            .map(|s| self.summary[s.name()].clone())
            .collect()
    }

    /// Counts a question scenario `s` could not build, by reason.
    pub fn skip(&mut self, s: &'static str, reason: &str) {
        *self
            .summary
            .entry(s)
            .or_insert_with(|| ScenarioSummary {
                scenario: s.into(),
                ..Default::default()
            })
            .skipped
            .entry(reason.into())
            .or_default() += 1;
    }

    /// Count a fact about built cases (not a skip) in the summary.
    pub fn note(&mut self, s: &'static str, what: &str) {
        *self
            .summary
            .entry(s)
            .or_insert_with(|| ScenarioSummary {
                scenario: s.into(),
                ..Default::default()
            })
            .notes
            .entry(what.into())
            .or_default() += 1;
    }

    fn made(&mut self, s: &'static str, n: u64) {
        self.summary
            .entry(s)
            .or_insert_with(|| ScenarioSummary {
                scenario: s.into(),
                ..Default::default()
            })
            .cases += n;
    }

    /// The contexts of question `qid`, by rank.
    pub fn contexts(&self, qid: &str) -> &[&'a ContextRow] {
        self.by_qid.get(qid).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The question has contexts (any retrieved passage at all).
    pub fn has_contexts(&self, qid: &str) -> bool {
        self.by_qid.contains_key(qid)
    }

    /// The contexts of question `qid` ranked within `--k`.
    pub fn topk(&self, qid: &str) -> Vec<&'a ContextRow> {
        self.contexts(qid)
            .iter()
            .copied()
            .filter(|c| c.rank as usize <= self.opts.k)
            .collect()
    }

    /// A case of question `q` with condition `condition`, these documents
    /// and label; `params` (everything that shaped the case) make its id
    /// and its recorded derivation.
    pub fn base_case(
        &self,
        q: &QuestionRow,
        condition: &str,
        docs: Vec<CaseDoc>,
        expected: Expected,
        params: Value,
    ) -> CaseRow {
        CaseRow {
            case_id: case_id(&q.qid, condition, &params),
            qid: q.qid.clone(),
            dataset: q.dataset.clone(),
            lang: q.lang.clone(),
            condition: condition.into(),
            question: q.question.clone(),
            docs,
            answers: q.answers.clone(),
            answer_parts: q.answer_parts.clone(),
            expected,
            inserted_at: None,
            foil: None,
            answer_position: None,
            derivation: params.to_string(),
            options: q.options.clone(),
        }
    }

    /// No passage of `top` holds the answer.
    pub fn unanswerable(&self, top: &[&ContextRow]) -> bool {
        !top.iter().any(|c| c.has_answer == Some(true))
    }

    /// The label of a case with passages `top`: unanswerable when
    /// `--relabel-unanswerable` and none holds the answer.
    pub fn expected_for(&self, top: &[&ContextRow]) -> Expected {
        if self.opts.relabel_unanswerable && self.unanswerable(top) {
            Expected::Unanswerable
        } else {
            Expected::Answer
        }
    }

    /// Top-k plus one document at a seeded uniform slot among the k+1.
    pub fn add_one(
        &self,
        q: &QuestionRow,
        s: &'static str,
        top: &[&ContextRow],
        extra: CaseDoc,
        extra_params: Value,
    ) -> CaseRow {
        let mut rng = rng_for(self.opts.seed, &q.qid, &format!("{s}:slot"));
        let mut docs: Vec<CaseDoc> = top.iter().map(|c| doc(c, DocSource::Retrieved)).collect();
        let inserted_id = extra.doc_id.clone();
        let slot = insert_at_random_slot(&mut docs, extra, &mut rng);
        let mut params = json!({"k": self.opts.k, "seed": self.opts.seed, "relabel_unanswerable": self.opts.relabel_unanswerable,
            "inserted_doc": inserted_id, "retrieved": top.iter().map(|c| c.doc_id.as_str()).collect::<Vec<_>>()});
        if let (Some(p), Some(e)) = (params.as_object_mut(), extra_params.as_object()) {
            p.extend(e.clone());
        }
        let mut case = self.base_case(q, s, docs, self.expected_for(top), params);
        case.inserted_at = Some(slot as i32);
        case
    }

    /// The cases of scenario `s` for question `q` (none, with the reason
    /// counted, when the question does not allow it).
    fn build(&mut self, q: &QuestionRow, s: ScenarioRef) -> Result<Vec<CaseRow>> {
        if s.needs_contexts() && self.contexts(&q.qid).is_empty() {
            self.skip(s.name(), "no contexts for the question");
            return Ok(vec![]);
        }
        s.build(self, q)
    }
}

/// Why a rule-built conflict passage cannot be kept, if it cannot: every
/// kept conflict passage must contain the foil and no gold alias, both by
/// the DPR matcher (seed 000 §5.4.1: the passage supports the conflicting
/// answer and not the original one). `n` is the number of replacements.
pub fn conflict_passage_problem(
    text: &str,
    n: usize,
    answers: &[String],
    foil: &str,
) -> Option<&'static str> {
    if n == 0 {
        Some("no gold alias to replace in the passage")
    } else if has_answer(answers, text) {
        Some("answer still present after replacement")
    } else if !has_answer(&[foil], text) {
        Some("foil not found by the DPR matcher after replacement")
    } else {
        None
    }
}

/// Insert `extra` at a uniformly random slot among the `docs.len() + 1`
/// slots; returns the slot. The other documents keep their order.
pub fn insert_at_random_slot<T>(docs: &mut Vec<T>, extra: T, rng: &mut impl Rng) -> usize {
    let slot = rng.random_range(0..=docs.len());
    docs.insert(slot, extra);
    slot
}

/// A foil as the cases record it in their derivation.
pub fn foil_json(f: &Foil) -> Value {
    json!({"text": f.text, "shape": f.shape.name(), "how": f.how, "cosine": f.cosine})
}

/// Build the cases of every requested scenario. `contexts` may be None for
/// closed-book only; `embedder` refines foil choice (see [`foil`]).
pub fn perturb(
    store: &Store,
    questions: &str,
    contexts: Option<&str>,
    opts: &PerturbOptions,
    embedder: Option<&Embedder>,
    writer: Option<&mut ModelSession>,
) -> Result<PerturbReport> {
    let opts = &dedup_options(opts);
    validate_options(opts, contexts.is_some(), writer.is_some())?;
    let writer = if opts.needs_writer() { writer } else { None };
    let qid = store.resolve_kind(questions, kinds::QUESTIONS)?;
    let cid = contexts
        .map(|c| store.resolve_kind(c, kinds::CONTEXTS))
        .transpose()?;
    let embedder = if opts.needs_embedder(true) {
        embedder
    } else {
        None
    };
    let recipe = perturb_recipe(opts, &qid, cid.as_deref(), embedder, writer.as_deref());
    let _running = store.lock_action(&recipe)?;
    if let Some(rec) = store.cached(&recipe, &[kinds::CASES])? {
        return cached_report(store, &rec);
    }
    // All questions feed the foil and add-random pools; --limit only
    // chooses which questions get cases.
    let qs = read::<Questions>(store, &qid)?;
    let selected = select_questions(&qs, opts)?;
    let ctx = match &cid {
        Some(c) => read::<Contexts>(store, c)?,
        None => vec![],
    };
    let by_qid = contexts_by_qid(&ctx);
    let writer = genadv_writer(writer, opts, embedder, &ctx)?;
    let mut b = Builder::new(opts, &qs, by_qid, FoilPicker::new(&qs, embedder), writer);
    let rows = b.build_all(selected)?;
    let summary = b.summaries();
    let written = write_all::<Cases>(store, &recipe, rows, json!({"summary": summary}))?;
    let mut outputs = vec![written.clone()];
    let genadv = write_genadv(store, &recipe, &qs, &mut b)?;
    if let Some((g, _)) = &genadv {
        outputs.push(g.clone());
    }
    store.record_action(&recipe, &outputs)?;
    let (genadv, quality) = genadv.unzip();
    Ok(PerturbReport {
        cases: written,
        genadv,
        quality,
        summary,
        cached: false,
    })
}

/// `opts` without repeated scenarios: a repeat would write duplicate case
/// ids, so the first of each is kept (`-s base,base` is `-s base`).
fn dedup_options(opts: &PerturbOptions) -> PerturbOptions {
    let mut deduped = opts.clone();
    let mut seen = std::collections::HashSet::new();
    deduped.scenarios.retain(|s| seen.insert(s.name()));
    deduped
}

/// Refuse options that cannot run: `-k` 0, no scenario, missing contexts,
/// a study option with a stage option's name, options a scenario refuses
/// ([`Scenario::check`]), or a missing writer model.
fn validate_options(opts: &PerturbOptions, has_contexts: bool, has_writer: bool) -> Result<()> {
    if opts.k == 0 {
        return Err(PerturbError::Invalid("-k must be at least 1".into()));
    }
    if opts.scenarios.is_empty() {
        return Err(PerturbError::Invalid("no --scenario given".into()));
    }
    if opts.scenarios.iter().any(|s| s.needs_contexts()) && !has_contexts {
        return Err(PerturbError::Invalid(
            "these scenarios need --contexts (only closed-book does not)".into(),
        ));
    }
    opts.study.check()?;
    for s in &opts.scenarios {
        s.check(opts)?;
    }
    if opts.needs_writer() && !has_writer {
        return Err(PerturbError::Invalid(
            "add-genadv and add-conflict --writer model need a writer model".into(),
        ));
    }
    Ok(())
}

/// The perturb recipe: options, foil settings, inputs and the embedder and
/// writer model resources (the writer settings only when a writer is used).
fn perturb_recipe(
    opts: &PerturbOptions,
    qid: &str,
    cid: Option<&str>,
    embedder: Option<&Embedder>,
    writer: Option<&ModelSession>,
) -> Recipe {
    let mut recipe = Recipe::new(
        "perturb",
        STAGE_VERSION,
        json!({
            "scenarios": opts.scenarios.iter().map(|s| s.name()).collect::<Vec<_>>(),
            "k": opts.k, "seed": opts.seed, "relabel_unanswerable": opts.relabel_unanswerable,
            "distractors": opts.distractors, "limit": opts.limit, "sample": opts.sample,
            "foil": {"reject_above": 0.8, "prefer_above": 0.6, "max_candidates": foil::MAX_CANDIDATES, "similarity": embedder.is_some(),
                "similarity_model": embedder.map(|_| "all-MiniLM-L6-v2 cosine (seed 000 used spaCy token vectors)")},
        }),
    );
    if let Some(p) = recipe.params.as_object_mut() {
        p.extend(opts.study.values().clone());
    }
    recipe.inputs = std::iter::once(qid.to_string())
        .chain(cid.map(String::from))
        .collect();
    if let Some(e) = embedder {
        recipe.resources.insert("embedder".into(), e.model_id());
    }
    if let Some(w) = writer {
        recipe.resources.insert("writer".into(), w.resource_id());
        if let Some(p) = recipe.params.as_object_mut() {
            p.insert("writer".into(), json!({"settings": opts.writer, "conflict_writer_model": opts.conflict_writer_model}));
        }
    }
    recipe
}

/// The report of an identical earlier run, read back from its action record
/// and the manifests of its outputs.
fn cached_report(store: &Store, rec: &ActionRecord) -> Result<PerturbReport> {
    tracing::info!("perturb: cached, not run (action {})", &rec.key[..12]);
    let cases = rec.output(kinds::CASES)?;
    let m = store.manifest(&cases.id)?;
    let summary: Vec<ScenarioSummary> =
        serde_json::from_value::<Vec<Value>>(m.details["summary"].clone())
            .unwrap_or_default()
            .into_iter()
            .map(|v| ScenarioSummary {
                scenario: v["scenario"].as_str().unwrap_or("").into(),
                cases: v["cases"].as_u64().unwrap_or(0),
                skipped: serde_json::from_value(v["skipped"].clone()).unwrap_or_default(),
                notes: serde_json::from_value(v["notes"].clone()).unwrap_or_default(),
            })
            .collect();
    let genadv = rec
        .outputs
        .iter()
        .find(|o| o.kind == kinds::GENADV)
        .map(Written::from);
    let quality = genadv
        .as_ref()
        .and_then(|g| store.manifest(&g.id).ok())
        .map(|m| m.details["quality"].clone());
    Ok(PerturbReport {
        cases,
        genadv,
        quality,
        summary,
        cached: true,
    })
}

/// The questions that get cases: the first `--limit`, or a seeded sample of
/// them kept in input order, then each registered [`QuestionSample`].
fn select_questions<'q>(
    qs: &'q [QuestionRow],
    opts: &PerturbOptions,
) -> Result<Vec<&'q QuestionRow>> {
    let take = opts.limit.unwrap_or(qs.len()).min(qs.len());
    let selected: Vec<&QuestionRow> = match opts.sample {
        Some(n) if n < take => {
            let mut idx: Vec<usize> = (0..take).collect();
            idx.shuffle(&mut rng_for(opts.seed, "", "sample"));
            let mut keep: Vec<usize> = idx.into_iter().take(n).collect();
            keep.sort_unstable();
            keep.into_iter().map(|i| &qs[i]).collect()
        }
        _ => qs[..take].iter().collect(),
    };
    opts.samples
        .iter()
        .try_fold(selected, |kept, s| s.draw(&opts.study, kept))
}
/// Each question's contexts, sorted by rank.
fn contexts_by_qid(ctx: &[ContextRow]) -> HashMap<&str, Vec<&ContextRow>> {
    let mut by_qid: HashMap<&str, Vec<&ContextRow>> = HashMap::new();
    for c in ctx {
        by_qid.entry(c.qid.as_str()).or_default().push(c);
    }
    for v in by_qid.values_mut() {
        v.sort_by_key(|c| c.rank);
    }
    by_qid
}

/// The writer of model-written passages over `session`, its NER knowing the
/// contexts' titles; None without a session.
fn genadv_writer<'a>(
    session: Option<&'a mut ModelSession>,
    opts: &PerturbOptions,
    embedder: Option<&'a Embedder>,
    ctx: &[ContextRow],
) -> Result<Option<genadv::Writer<'a>>> {
    let titles: Vec<String> = ctx.iter().filter_map(|c| c.title.clone()).collect();
    Ok(match session {
        Some(session) => Some(genadv::Writer::new(
            session,
            opts.writer.clone(),
            embedder,
            ner::Ner::new(&titles),
            &opts.prompts,
        )?),
        None => None,
    })
}

/// Write the GenADV trail artifact when a writer was used; returns it with
/// its quality figures.
fn write_genadv(
    store: &Store,
    recipe: &Recipe,
    qs: &[QuestionRow],
    b: &mut Builder,
) -> Result<Option<(Written, Value)>> {
    let Some(w) = &b.writer else {
        return Ok(None);
    };
    let q = genadv_quality(qs, &b.trails, w);
    let g = write_all::<GenAdv>(
        store,
        recipe,
        std::mem::take(&mut b.trails),
        json!({"quality": q, "writer": w.session.name()}),
    )?;
    Ok(Some((g, q)))
}

/// Quality figures of the trails: acceptance, answer leakage into accepted
/// passages and their topicality.
fn genadv_quality(qs: &[QuestionRow], trails: &[genadv::Trail], w: &genadv::Writer) -> Value {
    let qtext: HashMap<&str, &str> = qs
        .iter()
        .map(|q| (q.qid.as_str(), q.question.as_str()))
        .collect();
    let answers: HashMap<&str, &[String]> = qs
        .iter()
        .map(|q| (q.qid.as_str(), q.answers.as_slice()))
        .collect();
    let kept: Vec<(String, String)> = trails
        .iter()
        .filter(|t| t.status == GenAdvStatus::Accepted)
        .filter_map(|t| Some((qtext.get(t.qid.as_str())?.to_string(), t.passage.clone()?)))
        .collect();
    let leaks = trails
        .iter()
        .filter(|t| t.status == GenAdvStatus::Accepted)
        .filter(|t| {
            answers
                .get(t.qid.as_str())
                .is_some_and(|a| t.passage.as_deref().is_some_and(|p| has_answer(a, p)))
        })
        .count();
    genadv::quality(trails, w.topicality(&kept), leaks)
}

/// The summary as text: per scenario, cases made and skips by reason.
pub fn summary_table(summary: &[ScenarioSummary]) -> String {
    let mut s = format!("{:<20} {:>7}  skipped\n", "scenario", "cases");
    for x in summary {
        let skipped = if x.skipped.is_empty() {
            "-".to_string()
        } else {
            x.skipped
                .iter()
                .map(|(r, n)| format!("{n} {r}"))
                .collect::<Vec<_>>()
                .join("; ")
        };
        s.push_str(&format!("{:<20} {:>7}  {}\n", x.scenario, x.cases, skipped));
        for (what, n) in &x.notes {
            s.push_str(&format!("{:<20} {:>7}  note: {n} with {what}\n", "", ""));
        }
    }
    s
}
