//! Perturb stage: questions + contexts -> `cases`, one evaluation input
//! each, with its ordered documents, condition and expected label.
//!
//! Scenarios built by rule (seed 000 §5.2–5.4, seed 001, seed 002 §3.1, RGB):
//! `closed-book`, `base`, `add-random`, `add-topk`, `add-conflict`,
//! `evidence-edit`, `nomiracl`, `rgb-noise`, `rgb-counterfactual`.
//! Every random choice comes from an RNG seeded by (seed, qid, purpose), so
//! results do not depend on order or threads: same inputs and seed give
//! byte-identical artifacts.

pub mod foil;
pub mod genadv;
pub mod ner;
pub mod pyrandom;
pub mod text;

use ragprobe_artifact::{
    condition, kinds, read, sha256_hex, write_all, ActionRecord, ArtifactError, CaseDoc, CaseRow,
    Cases, ContextRow, Contexts, DocSource, Expected, GenAdv, GenAdvStatus, QuestionRow, Questions,
    Recipe, Store, Written,
};
use ragprobe_matching::has_answer;
use ragprobe_models::llm::session::ModelSession;
use ragprobe_models::Embedder;
use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};

use foil::{Foil, FoilPicker};
use text::{join_sentences, position_of, replace_aliases, span_centre, split_sentences};

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

/// A rule-built scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scenario {
    /// `closed-book`: the question with no documents.
    ClosedBook,
    /// `base`: the top-k retrieved passages in rank order.
    Base,
    /// `add-random`: the top-k plus a passage retrieved for another question, without the answer, at a random slot.
    AddRandom,
    /// `add-topk`: the top-k plus the (k+1)-th retrieved passage, at a random slot.
    AddTopk,
    /// `add-conflict`: the top-k plus a passage supporting a foil answer, at a random slot.
    AddConflict,
    /// `add-genadv`: the top-k plus an accepted model-written GenADV passage, at a random slot.
    AddGenadv,
    /// `evidence-edit`: the answer-bearing passage with its answer sentence moved to the
    /// first, middle or last slot; a clean arm and one with the answer replaced by a foil.
    EvidenceEdit,
    /// `nomiracl`: a query's judged passages in qrels order, labelled relevant or non_relevant.
    Nomiracl,
    /// `rgb-noise`: RGB's mix of positive and negative passages at each noise rate
    /// (information integration when the answer has parts).
    RgbNoise,
    /// `rgb-counterfactual`: RGB's counterfactual passages topped up with negatives, shuffled.
    RgbCounterfactual,
}

impl Scenario {
    /// Every scenario, in the order they are listed.
    pub const ALL: [Scenario; 10] = [
        Scenario::ClosedBook,
        Scenario::Base,
        Scenario::AddRandom,
        Scenario::AddTopk,
        Scenario::AddConflict,
        Scenario::AddGenadv,
        Scenario::EvidenceEdit,
        Scenario::Nomiracl,
        Scenario::RgbNoise,
        Scenario::RgbCounterfactual,
    ];

    /// The scenario's name, as used on the command line and as the case condition.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::ClosedBook => "closed-book",
            Scenario::Base => "base",
            Scenario::AddRandom => "add-random",
            Scenario::AddTopk => "add-topk",
            Scenario::AddConflict => "add-conflict",
            Scenario::AddGenadv => "add-genadv",
            Scenario::EvidenceEdit => "evidence-edit",
            Scenario::Nomiracl => "nomiracl",
            Scenario::RgbNoise => "rgb-noise",
            Scenario::RgbCounterfactual => "rgb-counterfactual",
        }
    }

    /// A scenario by name (`genadv` is accepted for `add-genadv`).
    pub fn parse(s: &str) -> Option<Scenario> {
        if s == "genadv" {
            return Some(Scenario::AddGenadv);
        }
        Scenario::ALL.into_iter().find(|x| x.name() == s)
    }

    fn needs_foil(self) -> bool {
        matches!(self, Scenario::AddConflict | Scenario::EvidenceEdit)
    }
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
    pub scenarios: Vec<Scenario>,
    /// Retrieved passages per question (top-k).
    pub k: usize,
    /// Seed of the run's random choices (each RNG is seeded by seed, qid and purpose).
    pub seed: u64,
    /// Label questions with no answer-bearing passage in the top k as
    /// `unanswerable` (the Unans-prompt experiments).
    pub relabel_unanswerable: bool,
    /// evidence-edit: non-answer passages added after the target passage.
    pub distractors: usize,
    /// rgb-noise: noise rates (share of negative passages).
    pub noise_rates: Vec<f64>,
    /// RGB: passages per case.
    pub rgb_passages: usize,
    /// Use only the first N questions (small-scale runs); None = all.
    pub limit: Option<usize>,
    /// Use a seeded random sample of N questions (kept in their order); None = all.
    pub sample: Option<usize>,
    /// add-conflict: the conflicting passage is written by the writer model
    /// (seed 000 §5.4.1) instead of the rule-based alias replacement.
    pub conflict_writer_model: bool,
    /// Settings of model-written passages (GenADV, conflict writer).
    pub writer: genadv::WriterSettings,
    /// NoMIRACL: draw the queries as the reference's `load_data_sample`
    /// does (see [`NomiraclSample`]); None = every query.
    pub nomiracl_sample: Option<NomiraclSample>,
}

/// NoMIRACL's query sample (reference `load_data_sample`): the two ratios,
/// an optional cap per subset (`max_sample_pool`) and the seed (42 there);
/// drawn with CPython's generator ([`pyrandom`]) from each subset's queries
/// in their input (qrels) order.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct NomiraclSample {
    /// Relevant side of the relevant : non_relevant ratio of the queries drawn; 0 = no relevant queries.
    pub relevant_ratio: f64,
    /// Non-relevant side of that ratio; 0 = no non_relevant queries.
    pub non_relevant_ratio: f64,
    /// Most queries drawn from each subset (`max_sample_pool`); None = no cap.
    pub max_pool: Option<usize>,
    /// Seed of the CPython-compatible generator (42 in the reference).
    pub seed: u64,
}

/// Whether `scenarios` need a writer model: add-genadv, or add-conflict
/// when the model writes the conflicting passage.
pub fn needs_writer(scenarios: &[Scenario], conflict_writer_model: bool) -> bool {
    scenarios.contains(&Scenario::AddGenadv)
        || (conflict_writer_model && scenarios.contains(&Scenario::AddConflict))
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
            scenarios: vec![Scenario::Base],
            k: 5,
            seed: 0,
            relabel_unanswerable: false,
            distractors: 0,
            noise_rates: vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0],
            rgb_passages: 5,
            limit: None,
            sample: None,
            conflict_writer_model: false,
            writer: genadv::WriterSettings::default(),
            nomiracl_sample: None,
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

fn doc(c: &ContextRow, source: DocSource) -> CaseDoc {
    CaseDoc {
        doc_id: c.doc_id.clone(),
        title: c.title.clone(),
        text: c.text.clone(),
        source,
        has_answer: c.has_answer,
    }
}

/// Shared state of one run.
struct Builder<'a> {
    opts: &'a PerturbOptions,
    questions: &'a [QuestionRow],
    by_qid: HashMap<&'a str, Vec<&'a ContextRow>>,
    foils: FoilPicker<'a>,
    summary: BTreeMap<&'static str, ScenarioSummary>,
    writer: Option<genadv::Writer<'a>>,
    trails: Vec<genadv::Trail>,
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
                self.made(*s, cases.len() as u64);
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

    fn skip(&mut self, s: Scenario, reason: &str) {
        *self
            .summary
            .entry(s.name())
            .or_insert_with(|| ScenarioSummary {
                scenario: s.name().into(),
                ..Default::default()
            })
            .skipped
            .entry(reason.into())
            .or_default() += 1;
    }

    /// Count a fact about built cases (not a skip) in the summary.
    fn note(&mut self, s: Scenario, what: &str) {
        *self
            .summary
            .entry(s.name())
            .or_insert_with(|| ScenarioSummary {
                scenario: s.name().into(),
                ..Default::default()
            })
            .notes
            .entry(what.into())
            .or_default() += 1;
    }

    fn made(&mut self, s: Scenario, n: u64) {
        self.summary
            .entry(s.name())
            .or_insert_with(|| ScenarioSummary {
                scenario: s.name().into(),
                ..Default::default()
            })
            .cases += n;
    }

    fn contexts(&self, qid: &str) -> &[&'a ContextRow] {
        self.by_qid.get(qid).map(Vec::as_slice).unwrap_or(&[])
    }

    fn topk(&self, qid: &str) -> Vec<&'a ContextRow> {
        self.contexts(qid)
            .iter()
            .copied()
            .filter(|c| c.rank as usize <= self.opts.k)
            .collect()
    }

    fn base_case(
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

    fn unanswerable(&self, top: &[&ContextRow]) -> bool {
        !top.iter().any(|c| c.has_answer == Some(true))
    }

    fn expected_for(&self, top: &[&ContextRow]) -> Expected {
        if self.opts.relabel_unanswerable && self.unanswerable(top) {
            Expected::Unanswerable
        } else {
            Expected::Answer
        }
    }

    /// Top-k plus one document at a seeded uniform slot among the k+1.
    fn add_one(
        &self,
        q: &QuestionRow,
        s: Scenario,
        top: &[&ContextRow],
        extra: CaseDoc,
        extra_params: Value,
    ) -> CaseRow {
        let mut rng = rng_for(self.opts.seed, &q.qid, &format!("{}:slot", s.name()));
        let mut docs: Vec<CaseDoc> = top.iter().map(|c| doc(c, DocSource::Retrieved)).collect();
        let inserted_id = extra.doc_id.clone();
        let slot = insert_at_random_slot(&mut docs, extra, &mut rng);
        let mut params = json!({"k": self.opts.k, "seed": self.opts.seed, "relabel_unanswerable": self.opts.relabel_unanswerable,
            "inserted_doc": inserted_id, "retrieved": top.iter().map(|c| c.doc_id.as_str()).collect::<Vec<_>>()});
        if let (Some(p), Some(e)) = (params.as_object_mut(), extra_params.as_object()) {
            p.extend(e.clone());
        }
        let mut case = self.base_case(q, s.name(), docs, self.expected_for(top), params);
        case.inserted_at = Some(slot as i32);
        case
    }

    /// The cases of scenario `s` for question `q` (none, with the reason
    /// counted, when the question does not allow it).
    fn build(&mut self, q: &QuestionRow, s: Scenario) -> Result<Vec<CaseRow>> {
        let top = self.topk(&q.qid);
        let has_contexts = !self.contexts(&q.qid).is_empty();
        if !matches!(s, Scenario::ClosedBook) && !has_contexts {
            self.skip(s, "no contexts for the question");
            return Ok(vec![]);
        }
        match s {
            Scenario::ClosedBook => Ok(vec![self.base_case(
                q,
                s.name(),
                vec![],
                Expected::Answer,
                json!({}),
            )]),
            Scenario::Base => Ok(vec![self.base(q, s, &top)]),
            Scenario::AddRandom => self.add_random(q, s, &top),
            Scenario::AddTopk => self.add_topk(q, s, &top),
            Scenario::AddConflict => self.add_conflict(q, s, &top),
            Scenario::AddGenadv => self.add_genadv(q, s, &top),
            Scenario::EvidenceEdit => self.evidence_edit(q, &top),
            Scenario::Nomiracl => self.nomiracl(q, s),
            Scenario::RgbNoise => Ok(self
                .opts
                .noise_rates
                .clone()
                .into_iter()
                .filter_map(|r| self.rgb_noise(q, r))
                .collect()),
            Scenario::RgbCounterfactual => self.rgb_counterfactual(q, s),
        }
    }

    /// base: the top-k in rank order, labelled by `--relabel-unanswerable`.
    fn base(&self, q: &QuestionRow, s: Scenario, top: &[&ContextRow]) -> CaseRow {
        let opts = self.opts;
        let docs = top.iter().map(|c| doc(c, DocSource::Retrieved)).collect();
        let params = json!({"k": opts.k, "relabel_unanswerable": opts.relabel_unanswerable, "retrieved": top.iter().map(|c| c.doc_id.as_str()).collect::<Vec<_>>()});
        self.base_case(q, s.name(), docs, self.expected_for(top), params)
    }

    /// add-random: the top-k plus a passage retrieved for another question
    /// that does not hold the answer, at a random slot.
    fn add_random(
        &mut self,
        q: &QuestionRow,
        s: Scenario,
        top: &[&'a ContextRow],
    ) -> Result<Vec<CaseRow>> {
        let opts = self.opts;
        let mut rng = rng_for(opts.seed, &q.qid, "add-random:source");
        let others: Vec<&QuestionRow> = self
            .questions
            .iter()
            .filter(|o| o.qid != q.qid && self.by_qid.contains_key(o.qid.as_str()))
            .collect();
        for _ in 0..20 {
            let Some(other) = others.choose(&mut rng) else {
                break;
            };
            let pool = self.topk(&other.qid);
            let Some(c) = pool.choose(&mut rng) else {
                continue;
            };
            if !q.answers.is_empty() && has_answer(&q.answers, &c.text) {
                continue;
            }
            let mut d = doc(c, DocSource::Random);
            d.has_answer = (!q.answers.is_empty()).then_some(false);
            return Ok(vec![self.add_one(
                q,
                s,
                top,
                d,
                json!({"from_qid": other.qid}),
            )]);
        }
        self.skip(s, "no passage of another question without the answer");
        Ok(vec![])
    }

    /// add-topk: the top-k plus the (k+1)-th retrieved passage.
    fn add_topk(
        &mut self,
        q: &QuestionRow,
        s: Scenario,
        top: &[&'a ContextRow],
    ) -> Result<Vec<CaseRow>> {
        let opts = self.opts;
        let Some(next) = self
            .contexts(&q.qid)
            .iter()
            .find(|c| c.rank as usize == opts.k + 1)
        else {
            self.skip(s, "no (k+1)-th passage (retrieve with --extra 1)");
            return Ok(vec![]);
        };
        Ok(vec![self.add_one(
            q,
            s,
            top,
            doc(next, DocSource::Topk),
            json!({}),
        )])
    }

    /// add-conflict: the top-k plus a passage supporting a foil, written by
    /// rule (aliases replaced) or by the writer model.
    fn add_conflict(
        &mut self,
        q: &QuestionRow,
        s: Scenario,
        top: &[&'a ContextRow],
    ) -> Result<Vec<CaseRow>> {
        let opts = self.opts;
        let Some(src) = top.iter().find(|c| c.has_answer == Some(true)) else {
            self.skip(s, "no answer-bearing passage in the top k");
            return Ok(vec![]);
        };
        let mut rng = rng_for(opts.seed, &q.qid, "foil");
        let Some(foil) = self.foils.pick(q, &mut rng)? else {
            self.skip(s, "no foil of the right shape");
            return Ok(vec![]);
        };
        let (d, extra) = if let Some(w) = self
            .writer
            .as_mut()
            .filter(|_| self.opts.conflict_writer_model)
        {
            let trail = w.conflict(&q.qid, &q.question, &q.answers, &foil.text);
            let ok = trail.status == GenAdvStatus::Accepted;
            let reason = trail.reason.clone().unwrap_or_default();
            let text = trail.passage.clone().unwrap_or_default();
            self.trails.push(trail);
            if !ok {
                self.skip(s, &format!("model-written conflict passage {reason}"));
                return Ok(vec![]);
            }
            (
                CaseDoc {
                    doc_id: format!("{}#conflict-model", q.qid),
                    title: None,
                    text,
                    source: DocSource::Conflict,
                    has_answer: Some(false),
                },
                json!({"writer": "model", "foil": foil_json(&foil)}),
            )
        } else {
            let (text, n) = replace_aliases(&src.text, &q.answers, &foil.text);
            if let Some(reason) = conflict_passage_problem(&text, n, &q.answers, &foil.text) {
                self.skip(s, reason);
                return Ok(vec![]);
            }
            (
                CaseDoc {
                    doc_id: format!("{}#conflict", src.doc_id),
                    title: src.title.clone(),
                    text,
                    source: DocSource::Conflict,
                    has_answer: Some(false),
                },
                json!({"writer": "rule", "conflict_source": src.doc_id, "foil": foil_json(&foil), "replacements": n}),
            )
        };
        let mut case = self.add_one(q, s, top, d, extra);
        case.expected = Expected::Conflict;
        case.foil = Some(foil.text);
        Ok(vec![case])
    }

    /// add-genadv: the top-k plus an accepted GenADV passage.
    fn add_genadv(
        &mut self,
        q: &QuestionRow,
        s: Scenario,
        top: &[&'a ContextRow],
    ) -> Result<Vec<CaseRow>> {
        if q.answers.is_empty() {
            self.skip(s, "no gold answer");
            return Ok(vec![]);
        }
        let w = self.writer.as_mut().expect("checked before the run");
        let trail = w.genadv(&q.qid, &q.question, &q.answers);
        let ok = trail.status == GenAdvStatus::Accepted;
        let reason = format!(
            "{}: {}",
            trail.status,
            trail.reason.clone().unwrap_or_default()
        );
        let text = trail.passage.clone().unwrap_or_default();
        self.trails.push(trail);
        if !ok {
            self.skip(s, &reason);
            return Ok(vec![]);
        }
        let d = CaseDoc {
            doc_id: format!("{}#genadv", q.qid),
            title: None,
            text,
            source: DocSource::Adversarial,
            has_answer: Some(false),
        };
        Ok(vec![self.add_one(q, s, top, d, json!({"writer": "model"}))])
    }

    /// nomiracl: the judged passages of a query in qrels order (first k).
    fn nomiracl(&mut self, q: &QuestionRow, s: Scenario) -> Result<Vec<CaseRow>> {
        let opts = self.opts;
        // The reference reproduction script (project-miracl/nomiracl
        // examples/repro_nomiracl_generation.py) uses a query's judged
        // passages in qrels order (positives, then negatives, as the
        // data loader inserts them), 10 of them: no sampling or
        // shuffling of passages. Ingest keeps that order as `rank`.
        let Some(subset) = q.subset.as_deref() else {
            self.skip(s, "question has no NoMIRACL subset");
            return Ok(vec![]);
        };
        let Some(expected) = Expected::parse(subset)
            .filter(|e| matches!(e, Expected::Relevant | Expected::NonRelevant))
        else {
            self.skip(
                s,
                &format!("NoMIRACL subset {subset:?} is neither relevant nor non_relevant"),
            );
            return Ok(vec![]);
        };
        let judged = self.contexts(&q.qid).len();
        let docs: Vec<CaseDoc> = self
            .contexts(&q.qid)
            .iter()
            .take(opts.k)
            .map(|c| doc(c, DocSource::Judged))
            .collect();
        if judged != opts.k {
            self.note(s, &format!("{} judged passages than k = {} (the reference script uses only queries with exactly 10)", if judged < opts.k { "fewer" } else { "more" }, opts.k));
        }
        let params = json!({"k": opts.k, "order": "qrels", "passages": docs.iter().map(|d| d.doc_id.as_str()).collect::<Vec<_>>()});
        Ok(vec![self.base_case(q, s.name(), docs, expected, params)])
    }

    /// rgb-counterfactual: the counterfactual passages, topped up with
    /// negatives, shuffled.
    fn rgb_counterfactual(&mut self, q: &QuestionRow, s: Scenario) -> Result<Vec<CaseRow>> {
        let opts = self.opts;
        let all = self.contexts(&q.qid);
        let wrong: Vec<&ContextRow> = all
            .iter()
            .copied()
            .filter(|c| c.relevance.as_deref() == Some("counterfactual"))
            .collect();
        if wrong.is_empty() {
            self.skip(s, "no counterfactual passages (positive_wrong)");
            return Ok(vec![]);
        }
        let n = opts.rgb_passages;
        let mut picked: Vec<CaseDoc> = wrong
            .iter()
            .take(n)
            .map(|c| doc(c, DocSource::Counterfactual))
            .collect();
        for c in all
            .iter()
            .filter(|c| c.relevance.as_deref() == Some("non_relevant"))
            .take(n.saturating_sub(picked.len()))
        {
            picked.push(doc(c, DocSource::Negative));
        }
        picked.shuffle(&mut rng_for(opts.seed, &q.qid, "rgb-counterfactual:order"));
        let params = json!({"seed": opts.seed, "passages": n, "order": picked.iter().map(|d| d.doc_id.as_str()).collect::<Vec<_>>()});
        let mut case = self.base_case(q, s.name(), picked, Expected::Conflict, params);
        case.foil = q.fake_answers.as_ref().and_then(|f| f.first().cloned());
        Ok(vec![case])
    }

    /// RGB's noise mix (Chen et al. 2024, `evalue.py`): of `n` passages,
    /// `ceil(n * r)` negatives and the rest positives, capped by what the
    /// item has (the shortfall filled from the other list); noise 1.0 means
    /// negatives only and the expected behaviour is to reject. Shuffled.
    fn rgb_noise(&mut self, q: &QuestionRow, rate: f64) -> Option<CaseRow> {
        let all = self.contexts(&q.qid);
        if all.iter().any(|c| answer_part(c).is_some()) {
            return self.rgb_integration(q, rate);
        }
        let pos: Vec<&ContextRow> = all
            .iter()
            .copied()
            .filter(|c| c.relevance.as_deref() == Some("relevant"))
            .collect();
        let neg: Vec<&ContextRow> = all
            .iter()
            .copied()
            .filter(|c| c.relevance.as_deref() == Some("non_relevant"))
            .collect();
        let n = self.opts.rgb_passages;
        let mut neg_num = (n as f64 * rate).ceil() as usize;
        let mut pos_num = n - neg_num.min(n);
        if rate >= 1.0 {
            neg_num = n;
            pos_num = 0;
        } else if neg_num > neg.len() {
            neg_num = neg.len();
            pos_num = n - neg_num;
        } else if pos_num > pos.len() {
            pos_num = pos.len();
            neg_num = n - pos_num;
        }
        let condition = format!("rgb-noise-{}", fmt_rate(rate));
        if (rate < 1.0 && pos.is_empty()) || (rate >= 1.0 && neg.is_empty()) {
            self.skip(
                Scenario::RgbNoise,
                "not enough positive or negative passages",
            );
            return None;
        }
        let mut docs: Vec<CaseDoc> = pos
            .iter()
            .take(pos_num)
            .map(|c| doc(c, DocSource::Positive))
            .collect();
        docs.extend(
            neg.iter()
                .take(neg_num)
                .map(|c| doc(c, DocSource::Negative)),
        );
        docs.shuffle(&mut rng_for(
            self.opts.seed,
            &q.qid,
            &format!("{condition}:order"),
        ));
        let expected = if docs.iter().any(|d| d.source == DocSource::Positive) {
            Expected::Answer
        } else {
            Expected::Unanswerable
        };
        let params = json!({"seed": self.opts.seed, "noise_rate": rate, "passages": n, "positives": pos_num.min(pos.len()), "negatives": neg_num.min(neg.len()),
            "order": docs.iter().map(|d| d.doc_id.as_str()).collect::<Vec<_>>()});
        Some(self.base_case(q, &condition, docs, expected, params))
    }

    /// RGB's information-integration selection (`evalue.py` `processdata`
    /// for `_int` files, the version with the `len(docs) < pos_num` guard):
    /// of `n` passages, `pos_num = n - ceil(n * rate)`; each answer part's
    /// positive passages are shuffled and the first of every part taken;
    /// while fewer than `pos_num`, the next passage of each part in turn is
    /// added (round robin); then `n - len(docs)` negatives (when positive),
    /// in file order; all shuffled. Every part is represented even at noise
    /// 1.0, as in RGB. The shuffles use ragprobe's seeded RNG, not Python's
    /// `random.seed(2333)` stream. Condition `rgb-integration-<rate>`.
    fn rgb_integration(&mut self, q: &QuestionRow, rate: f64) -> Option<CaseRow> {
        let all = self.contexts(&q.qid);
        let condition = format!("rgb-integration-{}", fmt_rate(rate));
        let mut parts: BTreeMap<usize, Vec<&ContextRow>> = BTreeMap::new();
        for c in all.iter().copied() {
            if let Some(i) = answer_part(c) {
                parts.entry(i).or_default().push(c);
            }
        }
        let neg: Vec<&ContextRow> = all
            .iter()
            .copied()
            .filter(|c| c.relevance.as_deref() == Some("non_relevant"))
            .collect();
        let n = self.opts.rgb_passages;
        let pos_num = n - ((n as f64 * rate).ceil() as usize).min(n);
        let mut rng = rng_for(self.opts.seed, &q.qid, &format!("{condition}:parts"));
        let mut lists: Vec<Vec<&ContextRow>> = parts.into_values().collect();
        for l in &mut lists {
            l.shuffle(&mut rng);
        }
        let mut picked: Vec<&ContextRow> = lists.iter().map(|l| l[0]).collect();
        let maxlen = lists.iter().map(Vec::len).max().unwrap_or(0);
        'fill: for i in 1..maxlen {
            if picked.len() >= pos_num {
                break;
            }
            for l in &lists {
                if let Some(c) = l.get(i) {
                    picked.push(c);
                    if picked.len() == pos_num {
                        break 'fill;
                    }
                }
            }
        }
        let positives = picked.len();
        let neg_num = n.saturating_sub(positives);
        let mut docs: Vec<CaseDoc> = picked
            .into_iter()
            .map(|c| doc(c, DocSource::Positive))
            .collect();
        docs.extend(
            neg.iter()
                .take(neg_num)
                .map(|c| doc(c, DocSource::Negative)),
        );
        docs.shuffle(&mut rng_for(
            self.opts.seed,
            &q.qid,
            &format!("{condition}:order"),
        ));
        let params = json!({"seed": self.opts.seed, "noise_rate": rate, "passages": n, "positives": positives, "negatives": neg_num.min(neg.len()), "parts": lists.len(),
            "order": docs.iter().map(|d| d.doc_id.as_str()).collect::<Vec<_>>()});
        Some(self.base_case(q, &condition, docs, Expected::Answer, params))
    }

    /// Seed 002's evidence edit: the answer-bearing passage, its answer
    /// sentence moved to the first, middle or last sentence slot; a clean arm
    /// (supports the reference) and an edited arm (the same text with the
    /// answer in that one sentence replaced by the foil). The realised
    /// position of the span (centre offset / length) is verified: beginning
    /// < 1/3 <= middle <= 2/3 < end.
    fn evidence_edit(&mut self, q: &QuestionRow, top: &[&ContextRow]) -> Result<Vec<CaseRow>> {
        let s = Scenario::EvidenceEdit;
        let Some(src) = top.iter().find(|c| c.has_answer == Some(true)).copied() else {
            self.skip(s, "no answer-bearing passage in the top k");
            return Ok(vec![]);
        };
        let (sentences, supporting) = passage_sentences(src);
        let ai = match answer_sentence(&q.answers, &sentences, &supporting) {
            Ok(ai) => ai,
            Err(reason) => {
                self.skip(s, reason);
                return Ok(vec![]);
            }
        };
        let mut rng = rng_for(self.opts.seed, &q.qid, "foil");
        let Some(foil) = self.foils.pick(q, &mut rng)? else {
            self.skip(s, "no foil of the right shape");
            return Ok(vec![]);
        };
        let (edited, n) = replace_aliases(&sentences[ai], &q.answers, &foil.text);
        if n == 0 || has_answer(&q.answers, &edited) {
            self.skip(s, "answer still present after replacement");
            return Ok(vec![]);
        }
        let plan = EditPlan {
            src,
            others: sentences
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != ai)
                .map(|(_, t)| t.clone())
                .collect(),
            clean: &sentences[ai],
            edited,
            foil,
            distractors: top
                .iter()
                .filter(|c| c.has_answer != Some(true))
                .take(self.opts.distractors)
                .map(|c| doc(c, DocSource::Retrieved))
                .collect(),
        };
        let mut out = Vec::new();
        for position in ["beginning", "middle", "end"] {
            out.extend(self.evidence_at(q, &plan, position));
        }
        Ok(out)
    }

    /// evidence-edit's clean and edited cases with the answer sentence at
    /// `position`; none (a skip) when the realised position differs.
    fn evidence_at(&mut self, q: &QuestionRow, plan: &EditPlan, position: &str) -> Vec<CaseRow> {
        let slot = match position {
            "beginning" => 0,
            "middle" => plan.others.len() / 2,
            _ => plan.others.len(),
        };
        let clean = plan.arrange(slot, plan.clean);
        let edited = plan.arrange(slot, &plan.edited);
        let c_at = span_centre(&clean, &q.answers);
        let e_at = span_centre(&edited, std::slice::from_ref(&plan.foil.text));
        let ok = |x: Option<f64>| x.is_some_and(|f| position_of(f) == position);
        if !(ok(c_at) && ok(e_at)) {
            self.skip(
                Scenario::EvidenceEdit,
                &format!("position not realisable: {position}"),
            );
            return vec![];
        }
        [
            (DocSource::Clean, clean, c_at),
            (DocSource::Edited, edited, e_at),
        ]
        .into_iter()
        .map(|(arm, text, at)| self.evidence_case(q, plan, position, arm, text, at))
        .collect()
    }

    /// One evidence-edit arm's case: the arranged passage `text` (answer
    /// span centred at `at`), then the distractors.
    fn evidence_case(
        &self,
        q: &QuestionRow,
        plan: &EditPlan,
        position: &str,
        arm: DocSource,
        text: String,
        at: Option<f64>,
    ) -> CaseRow {
        let condition = format!("{}{arm}", condition::EVIDENCE_PREFIX);
        let target = CaseDoc {
            doc_id: format!("{}#{arm}-{position}", plan.src.doc_id),
            title: plan.src.title.clone(),
            text,
            source: arm,
            has_answer: Some(arm == DocSource::Clean),
        };
        let mut docs = vec![target];
        docs.extend(plan.distractors.iter().cloned());
        let params = json!({"position": position, "arm": arm, "source_doc": plan.src.doc_id, "span_offset": at, "foil": foil_json(&plan.foil),
            "distractors": plan.distractors.iter().map(|d| d.doc_id.as_str()).collect::<Vec<_>>(), "seed": self.opts.seed});
        let mut case = self.base_case(q, &condition, docs, Expected::Answer, params);
        case.foil = Some(plan.foil.text.clone());
        case.answer_position = Some(position.into());
        case
    }
}

/// One evidence-edit question's material: the source passage, its other
/// sentences, the answer sentence clean and edited, the foil and the
/// distractors that follow the target passage.
struct EditPlan<'p> {
    src: &'p ContextRow,
    others: Vec<String>,
    clean: &'p str,
    edited: String,
    foil: Foil,
    distractors: Vec<CaseDoc>,
}

impl EditPlan<'_> {
    /// The passage with `answer_sentence` at sentence slot `slot` among the others.
    fn arrange(&self, slot: usize, answer_sentence: &str) -> String {
        let mut v = self.others.clone();
        v.insert(slot, answer_sentence.to_string());
        join_sentences(&v)
    }
}

/// An evidence-edit source passage's sentences and supporting-fact sentence
/// ids: HotpotQA passages carry both (ingest `meta`); others are split.
fn passage_sentences(src: &ContextRow) -> (Vec<String>, Vec<usize>) {
    // HotpotQA passages carry their sentences and the supporting-fact
    // sentence ids (ingest `meta`): edit and move those sentences, and
    // prefer a supporting sentence as the answer-bearing assertion.
    let meta: Option<Value> = src
        .meta
        .as_deref()
        .and_then(|m| serde_json::from_str(m).ok());
    let given: Option<Vec<String>> =
        meta.as_ref()
            .and_then(|m| m["sentences"].as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            });
    let supporting: Vec<usize> = meta
        .as_ref()
        .and_then(|m| m["supporting_sentences"].as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_u64().map(|n| n as usize))
                .collect()
        })
        .unwrap_or_default();
    let sentences = given
        .filter(|g| !g.is_empty())
        .unwrap_or_else(|| split_sentences(&src.text));
    (sentences, supporting)
}

/// The index of the one sentence holding the answer (the supporting one when
/// several hold it and exactly one of those supports), or the skip reason.
fn answer_sentence(
    answers: &[String],
    sentences: &[String],
    supporting: &[usize],
) -> Result<usize, &'static str> {
    let mut with_answer: Vec<usize> = (0..sentences.len())
        .filter(|&i| has_answer(answers, &sentences[i]))
        .collect();
    if with_answer.len() > 1
        && with_answer
            .iter()
            .filter(|i| supporting.contains(i))
            .count()
            == 1
    {
        with_answer.retain(|i| supporting.contains(i));
    }
    match with_answer.as_slice() {
        [ai] => Ok(*ai),
        [] => Err("answer spans a sentence boundary"),
        _ => Err("answer in more than one sentence"),
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

/// The answer part of an RGB integration passage (ingest `meta`).
fn answer_part(c: &ContextRow) -> Option<usize> {
    let m: Value = serde_json::from_str(c.meta.as_deref()?).ok()?;
    m["answer_part"].as_u64().map(|i| i as usize)
}

fn fmt_rate(r: f64) -> String {
    let s = format!("{r:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() {
        "0".into()
    } else {
        s.into()
    }
}

fn foil_json(f: &Foil) -> Value {
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
    let selected = select_questions(&qs, opts);
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

/// `opts` without repeated scenarios or noise rates: a repeat would write
/// duplicate case ids, so the first of each is kept (`-s base,base` is `-s base`).
fn dedup_options(opts: &PerturbOptions) -> PerturbOptions {
    let mut deduped = opts.clone();
    let mut seen = std::collections::HashSet::new();
    deduped.scenarios.retain(|s| seen.insert(*s));
    let mut rates: Vec<f64> = Vec::new();
    for r in &opts.noise_rates {
        if !rates.iter().any(|x| x == r) {
            rates.push(*r);
        }
    }
    deduped.noise_rates = rates;
    deduped
}

/// Refuse options that cannot run: `-k` 0, no scenario, missing contexts,
/// a noise rate outside [0, 1], or a missing writer model.
fn validate_options(opts: &PerturbOptions, has_contexts: bool, has_writer: bool) -> Result<()> {
    if opts.k == 0 {
        return Err(PerturbError::Invalid("-k must be at least 1".into()));
    }
    if opts.scenarios.is_empty() {
        return Err(PerturbError::Invalid("no --scenario given".into()));
    }
    if opts.scenarios.iter().any(|s| *s != Scenario::ClosedBook) && !has_contexts {
        return Err(PerturbError::Invalid(
            "these scenarios need --contexts (only closed-book does not)".into(),
        ));
    }
    if let Some(r) = opts.noise_rates.iter().find(|r| !(0.0..=1.0).contains(*r)) {
        return Err(PerturbError::Invalid(format!(
            "noise rate {r} is outside [0, 1]"
        )));
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
            "distractors": opts.distractors, "noise_rates": opts.noise_rates, "rgb_passages": opts.rgb_passages, "limit": opts.limit, "sample": opts.sample,
            "nomiracl_sample": opts.nomiracl_sample,
            "foil": {"reject_above": 0.8, "prefer_above": 0.6, "max_candidates": foil::MAX_CANDIDATES, "similarity": embedder.is_some(),
                "similarity_model": embedder.map(|_| "all-MiniLM-L6-v2 cosine (seed 000 used spaCy token vectors)")},
        }),
    );
    recipe.inputs = std::iter::once(qid.to_string())
        .chain(cid.map(String::from))
        .collect();
    if let Some(e) = embedder {
        recipe.resources.insert(
            "embedder".into(),
            format!("{}:sha256:{}", e.model_name(), e.model_sha256()),
        );
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
/// them kept in input order, then NoMIRACL's query sample when asked for.
fn select_questions<'q>(qs: &'q [QuestionRow], opts: &PerturbOptions) -> Vec<&'q QuestionRow> {
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
    match opts.nomiracl_sample {
        None => selected,
        Some(ns) => nomiracl_subsample(selected, ns),
    }
}

/// NoMIRACL's query sample ([`pyrandom::nomiracl_sample`]) drawn from the
/// relevant and non_relevant questions of `selected`, kept in their order.
fn nomiracl_subsample(selected: Vec<&QuestionRow>, ns: NomiraclSample) -> Vec<&QuestionRow> {
    let rel: Vec<&QuestionRow> = selected
        .iter()
        .copied()
        .filter(|q| q.subset.as_deref() == Some("relevant"))
        .collect();
    let non: Vec<&QuestionRow> = selected
        .iter()
        .copied()
        .filter(|q| q.subset.as_deref() == Some("non_relevant"))
        .collect();
    let (ri, ni) = pyrandom::nomiracl_sample(
        rel.len(),
        non.len(),
        ns.relevant_ratio,
        ns.non_relevant_ratio,
        ns.max_pool,
        ns.seed,
    );
    let keep: std::collections::HashSet<&str> = ri
        .iter()
        .map(|&i| rel[i].qid.as_str())
        .chain(ni.iter().map(|&i| non[i].qid.as_str()))
        .collect();
    tracing::info!(
        "NoMIRACL sample: {} of {} relevant and {} of {} non-relevant queries",
        ri.len(),
        rel.len(),
        ni.len(),
        non.len()
    );
    selected
        .into_iter()
        .filter(|q| keep.contains(q.qid.as_str()))
        .collect()
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
