//! Score stage: responses -> per-row `scores` -> aggregate `metrics`.
//!
//! Per-row matching is plain Rust on the `matching` library ([`row`]);
//! aggregation and pairing of conditions by qid in [`metrics`], each family
//! documented with the study's definition; intervals from the
//! question-clustered bootstrap ([`bootstrap`]). Aggregation is plain Rust
//! over grouped rows rather than a dataframe engine: the pairings are small
//! maps keyed by qid, and the whole stage stays a fast, light build.

pub mod agreement;
pub mod bootstrap;
pub mod breakdown;
pub mod metrics;
pub mod predictions;
pub mod row;
pub mod scored;

use bumpalo::Bump;
use scored::{Scored, ScoredArena};

pub use ragprobe_matching::parse::ParseMode;

use ragprobe_artifact::{
    kinds, read, write_all, ArtifactError, CaseRow, Cases, Kind, MetricRow, Metrics, QuestionRow,
    Questions, Recipe, Responses, ScoreRow, Scores, Sink, Store, Written,
};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Version of the score stage's logic; part of every recipe.
pub const STAGE_VERSION: u32 = 2;

/// A score failure.
#[derive(Debug, thiserror::Error)]
pub enum ScoreError {
    /// A failure reading or writing artifacts in the store.
    #[error(transparent)]
    Artifact(#[from] ArtifactError),
    /// Invalid options or inputs: no responses, a bad `--conflict-share`, a response whose case is missing, an unknown metric.
    #[error("{0}")]
    Invalid(String),
}

/// The crate's result type; errors default to [`ScoreError`].
pub type Result<T, E = ScoreError> = std::result::Result<T, E>;

/// Options of the scoring and the aggregate metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreOptions {
    /// Bootstrap resamples (the study's audit used 20,000).
    pub bootstrap: usize,
    /// Seed of the bootstrap resampling and of the `conflict_share` draw.
    pub seed: u64,
    /// Response parsing: the reference code's rules (default) or the
    /// lenient variant ([`ragprobe_matching::parse::ParseMode`]).
    pub parse: ragprobe_matching::parse::ParseMode,
    /// Seed 000 Table 7: put only this share of the questions with a built
    /// conflict passage into C (seeded by question), the rest into NC.
    /// None: every such question is in C.
    pub conflict_share: Option<f64>,
    /// Seed 002: the matcher that defines K (closed-book-correct).
    pub k_matcher: metrics::KMatcher,
    /// `--by`: also compute every metric per group of these columns.
    pub breakdown: Option<breakdown::Breakdown>,
    /// The studies whose metric families are computed (none by default:
    /// the caller registers them; scoring with none is refused).
    pub studies: metrics::Studies,
    /// `--verdicts`: imported verdicts to set the string matcher against
    /// ([`agreement`]); None = none.
    pub verdicts: Option<std::sync::Arc<agreement::Verdicts>>,
    /// `--matcher`: the decision the headline metrics take (the string
    /// matchers, or the verdicts where a row has one).
    pub matcher: agreement::Matcher,
}

impl Default for ScoreOptions {
    fn default() -> Self {
        ScoreOptions {
            bootstrap: 2000,
            seed: 0,
            parse: Default::default(),
            conflict_share: None,
            k_matcher: metrics::KMatcher::default(),
            breakdown: None,
            studies: metrics::Studies::default(),
            verdicts: None,
            matcher: agreement::Matcher::default(),
        }
    }
}

impl ScoreOptions {
    /// Refuses options that cannot score: no study registered (the metrics
    /// artifact would hold no metric), a conflict share outside (0, 1].
    pub fn check(&self) -> Result<()> {
        if self.studies.0.is_empty() {
            return Err(ScoreError::Invalid(
                "no study is registered (ScoreOptions::studies): no metric would be computed; register ragprobe_studies::METRIC_FAMILIES".into(),
            ));
        }
        if self.matcher == agreement::Matcher::Verdicts && self.verdicts.is_none() {
            return Err(ScoreError::Invalid(
                "--matcher judge needs verdicts: give --judge SPEC or --verdicts FILE".into(),
            ));
        }
        if let Some(p) = self.conflict_share {
            if !(p > 0.0 && p <= 1.0) {
                return Err(ScoreError::Invalid(format!(
                    "--conflict-share {p} must be in (0, 1]"
                )));
            }
        }
        Ok(())
    }

    /// The options as recipe parameters.
    pub fn params(&self) -> serde_json::Value {
        let mut p = json!({"bootstrap": self.bootstrap, "seed": self.seed, "parse": self.parse.name(), "conflict_share": self.conflict_share, "k_matcher": self.k_matcher.name()});
        // Only when asked for, so runs without it keep their cache keys.
        if let Some(b) = &self.breakdown {
            p["by"] = json!(b.columns);
            p["bins"] = b.bins.param();
        }
        if let Some(v) = &self.verdicts {
            p["verdicts"] = json!({"sha256": v.sha256, "count": v.len()});
        }
        if self.matcher != agreement::Matcher::default() {
            p["matcher"] = json!(self.matcher.name());
        }
        p
    }
}

/// What a prompt template declared about itself (recorded by generate in
/// the responses manifest): the score stage pairs runs and picks metric
/// families from the role, never from the template id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PromptInfo {
    /// The template id.
    pub id: String,
    /// The study the template declares (`000`, `001`, ...), if any.
    pub study: Option<String>,
    /// The template's declared role (`normal`, `soft`, ...), which picks the metric families.
    pub role: Option<String>,
    /// Wording variant within the role; Strict and Soft of one variant are paired.
    pub variant: Option<String>,
}

impl PromptInfo {
    /// A prompt known only by its id (external predictions): no role.
    pub fn bare(id: &str) -> PromptInfo {
        PromptInfo {
            id: id.into(),
            ..Default::default()
        }
    }

    /// The declarations in a responses manifest's `details.template`.
    pub fn from_details(template_id: &str, details: &serde_json::Value) -> PromptInfo {
        let t = &details["template"];
        let get = |k: &str| t[k].as_str().filter(|s| !s.is_empty()).map(String::from);
        PromptInfo {
            id: template_id.into(),
            study: get("study"),
            role: get("role"),
            variant: get("variant"),
        }
    }
}

/// The outcome of a score run.
#[derive(Debug, Clone)]
pub struct ScoreReport {
    /// The per-row `scores` artifact.
    pub scores: Written,
    /// The aggregate `metrics` artifact.
    pub metrics: Written,
    /// The aggregate metric rows.
    pub rows: Vec<MetricRow>,
    /// Rows of failed requests, excluded from every metric (0 when cached).
    pub failed: usize,
    /// True when an identical earlier run's result was reused.
    pub cached: bool,
}

/// Score one or more responses artifacts (e.g. a closed-book run and the
/// Soft and Strict runs of the same cases). The cases come from each
/// responses artifact's recipe.
pub fn score(store: &Store, responses: &[String], opts: &ScoreOptions) -> Result<ScoreReport> {
    if responses.is_empty() {
        return Err(ScoreError::Invalid("no --responses given".into()));
    }
    opts.check()?;
    let mut ids: Vec<String> = responses
        .iter()
        .map(|r| store.resolve_kind(r, kinds::RESPONSES))
        .collect::<Result<_, _>>()?;
    ids.sort();
    ids.dedup();
    let mut recipe = Recipe::new("score", STAGE_VERSION, opts.params());
    recipe.inputs = ids.clone();
    if let Some(rec) = store.cached(&recipe, &[kinds::SCORES, kinds::METRICS])? {
        tracing::info!("score: cached, not run (action {})", &rec.key[..12]);
        let metrics = rec.output(kinds::METRICS)?;
        let rows = ragprobe_artifact::read::<ragprobe_artifact::Metrics>(store, &metrics.id)?;
        return Ok(ScoreReport {
            scores: rec.output(kinds::SCORES)?,
            metrics,
            rows,
            failed: 0,
            cached: true,
        });
    }
    let mut case_cache: HashMap<String, HashMap<String, CaseRow>> = HashMap::new();
    let mut questions = Lookup::default();
    let mut scored = Vec::new();
    for id in &ids {
        let m = store.manifest(id)?;
        let cases_id =
            m.recipe.inputs.first().cloned().ok_or_else(|| {
                ScoreError::Invalid(format!("responses {id} records no cases input"))
            })?;
        if !case_cache.contains_key(&cases_id) {
            if opts.breakdown.is_some() {
                questions.add_for(store, &cases_id)?;
            }
            let cases = read::<Cases>(store, &cases_id)?;
            case_cache.insert(
                cases_id.clone(),
                cases.into_iter().map(|c| (c.case_id.clone(), c)).collect(),
            );
        }
        let cases = &case_cache[&cases_id];
        let mut warned = false;
        for r in read::<Responses>(store, id)? {
            let case = cases.get(&r.case_id).ok_or_else(|| {
                ScoreError::Invalid(format!(
                    "responses {id}: case {} is not in cases {cases_id}",
                    r.case_id
                ))
            })?;
            let prompt = PromptInfo::from_details(&r.template, &m.details);
            if prompt.role.is_none() && !warned {
                warned = true;
                tracing::warn!("responses {}: template `{}` declares no role (or the artifact was written by an older ragprobe): only accuracy/EM/F1 are computed for it; rerun generate (finished calls are cached) to record the role", &id[..12.min(id.len())], r.template);
            }
            scored.push(row::score(
                case,
                &prompt,
                &r.model,
                &r.request_id,
                r.text.as_deref(),
                opts.parse,
                opts.studies,
            ));
        }
    }
    for cases in case_cache.into_values() {
        questions.cases.extend(cases);
    }
    finish(store, &recipe, scored, opts, &questions)
}

/// The cases and questions scored rows came from, for `--by`.
#[derive(Default)]
pub(crate) struct Lookup {
    /// By case id.
    pub cases: HashMap<String, CaseRow>,
    /// By question id.
    pub questions: HashMap<String, QuestionRow>,
}

impl Lookup {
    /// The questions of a cases artifact (its recipe's `questions` input).
    pub(crate) fn add_for(&mut self, store: &Store, cases_id: &str) -> Result<()> {
        for input in store.manifest(cases_id)?.recipe.inputs {
            if store.manifest(&input)?.kind == kinds::QUESTIONS {
                self.add_questions(store, &input)?;
            }
        }
        Ok(())
    }

    /// Every question of a questions artifact.
    pub(crate) fn add_questions(&mut self, store: &Store, questions_id: &str) -> Result<()> {
        for q in read::<Questions>(store, questions_id)? {
            self.questions.insert(q.qid.clone(), q);
        }
        Ok(())
    }
}

/// Every metric again for each group of `opts.breakdown` (see [`breakdown`]),
/// tagged with the breakdown and the group; the groups' order and bins go
/// into the details.
fn breakdown_rows(scored: &[Scored], opts: &ScoreOptions, look: &Lookup) -> Result<Vec<MetricRow>> {
    let Some(b) = &opts.breakdown else {
        return Ok(Vec::new());
    };
    let (groups, ordered) = breakdown::groups(b, scored, &|r| look.cases.get(r.case_id), &|r| {
        look.questions.get(r.qid)
    })?;
    let by = b.columns.join(",");
    let mut rows = Vec::new();
    for g in groups {
        let subset: Vec<Scored> = g.rows.iter().map(|&i| scored[i]).collect();
        let mut out = metrics::Out::new(opts);
        metrics::all(&subset, &mut out);
        for mut r in out.rows {
            add_details(
                &mut r,
                [("group_index", json!(g.index)), ("ordered", json!(ordered))],
            );
            r.breakdown = Some(by.clone());
            r.breakdown_group = Some(g.label.clone());
            rows.push(r);
        }
    }
    Ok(rows)
}

/// Aggregate scored rows into metrics and write both artifacts.
pub(crate) fn finish(
    store: &Store,
    recipe: &Recipe,
    scored: Vec<ScoreRow>,
    opts: &ScoreOptions,
    look: &Lookup,
) -> Result<ScoreReport> {
    let failed = scored.iter().filter(|r| r.failed).count();
    let bump = Bump::new();
    let compact = ScoredArena::new(&bump).add_all(&scored);
    let metric_rows = metric_rows(&compact, opts, look)?;
    drop(compact);
    let details = score_details(opts, scored.len(), failed);
    let scores = write_all::<Scores>(store, recipe, scored, details.clone())?;
    publish(store, recipe, scores, metric_rows, failed, details)
}

/// Like [`finish`] for `rows` scored rows (`failed` of them failed)
/// already streamed into `sink`. The metrics read the rows back from the
/// written artifact, a batch at a time into compact rows ([`Scored`]),
/// without the columns they never use (the responses, request ids and
/// foils), after the inputs of the scoring are gone: at a million rows,
/// keeping a copy of every row while scoring doubled the peak memory.
pub(crate) fn finish_streamed(
    store: &Store,
    recipe: &Recipe,
    sink: Sink<Scores>,
    (rows, failed): (usize, usize),
    opts: &ScoreOptions,
    look: &Lookup,
) -> Result<ScoreReport> {
    let details = score_details(opts, rows, failed);
    let scores = sink.finish(details.clone())?;
    let mut unused = vec!["response", "request_id", "foil"];
    if opts.breakdown.is_none() && opts.verdicts.is_none() {
        unused.push("case_id");
    }
    let columns: Vec<&str> = Scores::columns()
        .iter()
        .map(|c| c.name())
        .filter(|n| !unused.contains(n))
        .collect();
    let bump = Bump::new();
    let mut arena = ScoredArena::new(&bump);
    let mut for_metrics = Vec::with_capacity(rows);
    for batch in ragprobe_artifact::read_columns_batched::<Scores>(store, &scores.id, &columns)? {
        for_metrics.extend(batch?.iter().map(|r| arena.add(r)));
    }
    let metric_rows = metric_rows(&for_metrics, opts, look)?;
    drop(for_metrics);
    publish(store, recipe, scores, metric_rows, failed, details)
}

/// The details both artifacts' manifests record.
fn score_details(opts: &ScoreOptions, rows: usize, failed: usize) -> serde_json::Value {
    let mut details = opts.params();
    details["rows"] = json!(rows);
    details["failed_excluded"] = json!(failed);
    details["interval"] = json!("question-clustered percentile bootstrap, 95%");
    details
}

/// Add `fields` to a metric row's details (a JSON object; absent or
/// unreadable details start as an empty one).
pub(crate) fn add_details<const N: usize>(
    r: &mut MetricRow,
    fields: [(&str, serde_json::Value); N],
) {
    let mut d: serde_json::Value = r
        .details
        .as_deref()
        .and_then(|d| serde_json::from_str(d).ok())
        .unwrap_or_else(|| json!({}));
    if let Some(o) = d.as_object_mut() {
        for (k, v) in fields {
            o.insert(k.into(), v);
        }
    }
    r.details = Some(d.to_string());
}

/// Every metric over the scored rows, then per `--by` group.
/// With `--matcher judge` the headline rows and the breakdowns are
/// computed on the rows with the verdicts in place of the string decision
/// ([`agreement::with_verdicts`]), each saying so in its details; the
/// agreement metrics and the `matcher` breakdown always set the two side
/// by side.
fn metric_rows(scored: &[Scored], opts: &ScoreOptions, look: &Lookup) -> Result<Vec<MetricRow>> {
    let judged = match (&opts.verdicts, opts.matcher) {
        (Some(v), agreement::Matcher::Verdicts) => Some((agreement::with_verdicts(scored, v), v)),
        _ => None,
    };
    let headline = judged.as_ref().map_or(scored, |(rows, _)| &rows[..]);
    let mut out = metrics::Out::new(opts);
    metrics::all(headline, &mut out);
    let mut rest = breakdown_rows(headline, opts, look)?;
    if let Some((_, v)) = &judged {
        let said = json!(format!("verdicts ({})", v.file));
        for r in out.rows.iter_mut().chain(rest.iter_mut()) {
            add_details(r, [("matcher", said.clone())]);
        }
    }
    if let Some(v) = &opts.verdicts {
        agreement::agreement(scored, v, &mut out);
        out.rows
            .extend(agreement::under_both_matchers(scored, v, opts));
    }
    out.rows.extend(rest);
    Ok(out.rows)
}

/// Write the metrics artifact, record the action and sort the metric rows
/// for display.
fn publish(
    store: &Store,
    recipe: &Recipe,
    scores: Written,
    mut rows: Vec<MetricRow>,
    failed: usize,
    details: serde_json::Value,
) -> Result<ScoreReport> {
    let metrics = write_all::<Metrics>(store, recipe, rows.clone(), details)?;
    store.record_action(recipe, &[scores.clone(), metrics.clone()])?;
    rows.sort_by(|a, b| {
        (
            &a.breakdown,
            &a.study,
            &a.dataset,
            &a.model,
            &a.prompt,
            &a.condition,
            &a.metric,
        )
            .cmp(&(
                &b.breakdown,
                &b.study,
                &b.dataset,
                &b.model,
                &b.prompt,
                &b.condition,
                &b.metric,
            ))
    });
    Ok(ScoreReport {
        scores,
        metrics,
        rows,
        failed,
        cached: false,
    })
}

/// One metric's value for A and B and their paired difference on shared questions.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The per-row metric compared (`acc`, `em`, `f1`, ...).
    pub metric: String,
    /// Side A's value: the mean over shared questions of each question's mean, x100.
    pub a: Option<f64>,
    /// Side B's value, likewise.
    pub b: Option<f64>,
    /// Mean paired difference B - A over shared questions, x100.
    pub diff: Option<f64>,
    /// 95% question-level bootstrap interval of `diff`, x100.
    pub ci: Option<(f64, f64)>,
    /// Questions both sides have.
    pub questions: usize,
}

/// The paired difference B - A of a per-row metric between two sets of
/// scored rows (two models, prompts or conditions), on the questions both
/// have: per question, the mean over its rows in A and in B; the statistic
/// is the mean over shared questions of (B - A), x100; the interval is the
/// question-level bootstrap of that mean.
pub fn compare_rows(
    a: &[&ScoreRow],
    b: &[&ScoreRow],
    metric: &str,
    opts: &ScoreOptions,
) -> Result<Comparison> {
    let per_q = |rows: &[&ScoreRow]| -> Result<BTreeMap<String, (f64, f64)>> {
        let mut m: BTreeMap<String, (f64, f64)> = BTreeMap::new();
        for r in rows.iter().filter(|r| !r.failed) {
            let v = r.value(metric).ok_or_else(|| {
                ScoreError::Invalid(format!(
                    "metric `{metric}` is not defined per row (use {})",
                    ScoreRow::PER_ROW_VALUES.join(", ")
                ))
            })?;
            let e = m.entry(r.qid.clone()).or_default();
            e.0 += v;
            e.1 += 1.0;
        }
        Ok(m)
    };
    let (ma, mb) = (per_q(a)?, per_q(b)?);
    let shared: BTreeSet<&String> = ma.keys().filter(|q| mb.contains_key(*q)).collect();
    let mean = |m: &BTreeMap<String, (f64, f64)>| {
        let v: Vec<f64> = shared.iter().map(|q| m[*q].0 / m[*q].1).collect();
        (!v.is_empty()).then(|| 100.0 * v.iter().sum::<f64>() / v.len() as f64)
    };
    let diffs: Vec<bootstrap::Cluster> = shared
        .iter()
        .map(|q| (mb[*q].0 / mb[*q].1 - ma[*q].0 / ma[*q].1, 1.0))
        .collect();
    Ok(Comparison {
        metric: metric.into(),
        a: mean(&ma),
        b: mean(&mb),
        diff: bootstrap::point(&diffs).map(|d| 100.0 * d),
        ci: bootstrap::interval(&diffs, opts.bootstrap, opts.seed)
            .map(|(l, h)| (100.0 * l, 100.0 * h)),
        questions: shared.len(),
    })
}

/// A side of a comparison: a scores artifact, optionally filtered.
#[derive(Debug, Clone, Default)]
pub struct Side {
    /// The scores artifact: an id, a unique id prefix or a `.parquet` path.
    pub scores: String,
    /// Keep only rows of this model.
    pub model: Option<String>,
    /// Keep only rows of this prompt (template id).
    pub prompt: Option<String>,
    /// Keep only rows of this condition.
    pub condition: Option<String>,
}

/// `score compare`: paired difference B - A on shared questions.
pub fn compare(
    store: &Store,
    a: &Side,
    b: &Side,
    metric: &str,
    opts: &ScoreOptions,
) -> Result<Comparison> {
    let load = |s: &Side| -> Result<Vec<ScoreRow>> {
        let id = store.resolve_kind(&s.scores, kinds::SCORES)?;
        Ok(read::<Scores>(store, &id)?
            .into_iter()
            .filter(|r| s.model.as_ref().is_none_or(|m| &r.model == m))
            .filter(|r| s.prompt.as_ref().is_none_or(|p| &r.prompt == p))
            .filter(|r| s.condition.as_ref().is_none_or(|c| &r.condition == c))
            .collect())
    };
    let (ra, rb) = (load(a)?, load(b)?);
    if ra.is_empty() || rb.is_empty() {
        return Err(ScoreError::Invalid(format!(
            "no rows match side {} ({} rows in A, {} in B)",
            if ra.is_empty() { "A" } else { "B" },
            ra.len(),
            rb.len()
        )));
    }
    let (va, vb): (Vec<&ScoreRow>, Vec<&ScoreRow>) = (ra.iter().collect(), rb.iter().collect());
    compare_rows(&va, &vb, metric, opts)
}

/// Metrics as text, one block per study.
pub fn metrics_table(rows: &[MetricRow]) -> String {
    let mut s = String::new();
    let mut section = ("", None);
    for r in rows {
        if (r.study.as_str(), r.breakdown.as_deref()) != section {
            section = (&r.study, r.breakdown.as_deref());
            let by = r
                .breakdown
                .as_deref()
                .map(|b| format!(" by {b}"))
                .unwrap_or_default();
            let cond = if r.breakdown.is_some() {
                "group | condition"
            } else {
                "condition"
            };
            s.push_str(&format!(
                "\n== {}{by} ==\n{:<16} {:<24} {:<22} {:<22} {:<24} {:>8} {:>6}  95% CI\n",
                r.study, "dataset", "model", "prompt", cond, "metric", "value", "n"
            ));
        }
        let condition = match &r.breakdown_group {
            Some(g) => format!("{g} | {}", r.condition),
            None => r.condition.clone(),
        };
        let v = r
            .value
            .map(|v| format!("{v:.1}"))
            .unwrap_or_else(|| "-".into());
        let ci = match (r.ci_low, r.ci_high) {
            (Some(l), Some(h)) => format!("[{l:.1}, {h:.1}]"),
            _ => String::new(),
        };
        let cut = |x: &str, w: usize| {
            if x.chars().count() > w {
                format!("{}…", x.chars().take(w - 1).collect::<String>())
            } else {
                x.to_string()
            }
        };
        s.push_str(&format!(
            "{:<16} {:<24} {:<22} {:<22} {:<24} {:>8} {:>6}  {ci}\n",
            cut(&r.dataset, 16),
            cut(&r.model, 24),
            cut(&r.prompt, 22),
            cut(&condition, 22),
            cut(&r.metric, 24),
            v,
            r.n
        ));
    }
    s
}
