//! Every metric of the studies, computed from scored rows.
//!
//! Failed requests are excluded from every denominator (and counted in
//! `failed`). Rates are percentages (0–100) as the studies report them.
//! Each sample mean carries n and a question-clustered 95% bootstrap
//! interval ([`crate::bootstrap`]). An empty subset gives n = 0 and no value.
//! Families whose study defines them under a particular prompt are computed
//! for the responses whose template *declared* that role,
//! never from template ids: conflict detection for `conflict`; RAD for
//! `normal` and `unans`; stubbornness and PAR for `normal`; the
//! source-priority family for `soft`/`strict` paired with the study's `closed-book`
//! baseline. A template named `no-conflict-v2` runs what its role says.
//!
//! The families themselves live with their studies (`ragprobe-studies`,
//! one folder per study) behind [`MetricFamilies`]; this module holds what
//! they share: the accumulators, grouping, the row collector [`Out`].

use ragprobe_artifact::{CaseRow, MetricRow, ScoreRow};
use ragprobe_matching::parse::ParseMode;

use crate::scored::Scored;
use rayon::prelude::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;

use crate::bootstrap::{interval, point, Cluster};

/// Per-question (sum, count) accumulator, keyed by the rows' own qids (no
/// copy per row). Values are appended and grouped by qid once, when the
/// clusters are first read (a stable sort, so each question's values are
/// summed in the order they were added): at a million rows a tree of qids
/// cost more than the bootstrap. Reading releases the values (32 bytes
/// each), so every value is added before the clusters are read.
#[derive(Default)]
pub struct Clusters<'q> {
    /// (qid, value, replaces the question's cluster) in the order given.
    entries: std::cell::Cell<Vec<(&'q str, f64, bool)>>,
    /// The clusters in qid order, once read.
    grouped: std::cell::OnceCell<Vec<Cluster>>,
}

impl<'q> Clusters<'q> {
    /// Empty, with room for `n` values (a million values grown by doubling
    /// held half as much again while they were copied).
    pub fn with_capacity(n: usize) -> Self {
        Clusters {
            entries: std::cell::Cell::new(Vec::with_capacity(n)),
            grouped: Default::default(),
        }
    }
    fn push(&mut self, entry: (&'q str, f64, bool)) {
        assert!(
            self.grouped.get().is_none(),
            "a value added to clusters already read"
        );
        self.entries.get_mut().push(entry);
    }
    /// Add one row's value to its question's cluster.
    pub fn add(&mut self, qid: &'q str, value: f64) {
        self.push((qid, value, false));
    }
    /// One value per question (already averaged within the question).
    pub fn set(&mut self, qid: &'q str, value: f64) {
        self.push((qid, value, true));
    }
    /// Values added, over all questions (for `set` clusters, the number of questions).
    pub fn n(&self) -> i64 {
        self.grouped().iter().map(|c| c.1).sum::<f64>() as i64
    }
    fn grouped(&self) -> &Vec<Cluster> {
        self.grouped.get_or_init(|| {
            let mut e = self.entries.take();
            // Rows come sorted by case, so usually by question already.
            if !e.is_sorted_by(|a, b| a.0 <= b.0) {
                e.par_sort_by(|a, b| a.0.cmp(b.0));
            }
            let mut out: Vec<Cluster> = Vec::new();
            let mut last: Option<&str> = None;
            for (q, v, replaces) in e {
                if last != Some(q) {
                    out.push((0.0, 0.0));
                    last = Some(q);
                }
                let c = out.last_mut().expect("pushed above");
                *c = if replaces {
                    (v, 1.0)
                } else {
                    (c.0 + v, c.1 + 1.0)
                };
            }
            out
        })
    }
}

/// Grouping of metrics: (study, dataset, model, prompt).
#[derive(Clone)]
pub struct Key {
    /// Study the metric belongs to (its `MetricFamilies::name`, or a table
    /// name of its own such as `qa`).
    pub study: &'static str,
    /// Dataset of the rows.
    pub dataset: String,
    /// Model that answered.
    pub model: String,
    /// Prompt template id.
    pub prompt: String,
}

impl Key {
    /// A metric row of this key for `condition` and `metric`, with no
    /// value, interval or details yet (the overall metrics: no breakdown).
    pub fn row(&self, condition: &str, metric: &str) -> MetricRow {
        MetricRow {
            study: self.study.into(),
            dataset: self.dataset.clone(),
            model: self.model.clone(),
            prompt: self.prompt.clone(),
            condition: condition.into(),
            metric: metric.into(),
            value: None,
            n: 0,
            ci_low: None,
            ci_high: None,
            details: None,
            breakdown: None,
            breakdown_group: None,
        }
    }
}

/// Collects metric rows.
pub struct Out {
    /// The metric rows collected so far.
    pub rows: Vec<MetricRow>,
    /// The options the metrics are computed with (bootstrap, seed,
    /// conflict share, K matcher, parsing rules).
    pub opts: crate::ScoreOptions,
}

/// Seed 002: the matcher that defines K (closed-book-correct) and decides
/// "gives the reference" / "foil-only" in the families that use K.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KMatcher {
    /// The paper's choice per table: the main MR tables (§3.2, §4.3:
    /// "closed-book-correct subset") use `accuracy`; the audit families
    /// (§C.1: "K denotes baseline-exact-correct items", §C.2 "normalized
    /// exact gold matches", §C.4 "exact foil-only rates": HOR, BCR, their
    /// Strict−Soft contrasts, transitions, the clean-arm control and the
    /// common stratum) use `exact`.
    #[default]
    Paper,
    /// Normalised exact match (SQuAD normalisation): `em`, and foil-only =
    /// `foil_exact` and not `em`.
    Exact,
    /// SQuAD-normalised substring (seed 000 §4.2 accuracy): `accuracy`,
    /// and foil-only = `foil_only`.
    Accuracy,
}

impl KMatcher {
    /// The option's name: `paper`, `exact` or `accuracy`.
    pub fn name(self) -> &'static str {
        match self {
            KMatcher::Paper => "paper",
            KMatcher::Exact => "exact",
            KMatcher::Accuracy => "accuracy",
        }
    }
    /// Every matcher, in the order `--k-matcher` lists them.
    pub const ALL: [KMatcher; 3] = [KMatcher::Paper, KMatcher::Exact, KMatcher::Accuracy];
    /// The matcher with this option name, or an error listing the names.
    pub fn parse(s: &str) -> Result<KMatcher, String> {
        KMatcher::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = KMatcher::ALL.iter().map(|m| m.name()).collect();
                format!("`{s}` is not a K matcher (one of: {})", names.join(", "))
            })
    }
    /// The matcher of the main MR tables.
    pub fn main(self) -> Matcher {
        if self == KMatcher::Exact {
            Matcher::Exact
        } else {
            Matcher::Accuracy
        }
    }
    /// The matcher of the audit families (§C).
    pub fn audit(self) -> Matcher {
        if self == KMatcher::Accuracy {
            Matcher::Accuracy
        } else {
            Matcher::Exact
        }
    }
}

impl std::fmt::Display for KMatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A concrete matcher: whether a row gives the reference, and whether it
/// gives the foil only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Matcher {
    /// Normalised exact match (`em`; foil-only: `foil_exact` and not `em`).
    Exact,
    /// Normalised substring (`accuracy`; foil-only: `foil_only`).
    Accuracy,
}

impl Matcher {
    /// The matcher's name in metric details.
    pub fn name(self) -> &'static str {
        match self {
            Matcher::Exact => "exact",
            Matcher::Accuracy => "accuracy",
        }
    }
    /// The row gives the reference.
    pub fn correct(self, r: &Scored) -> bool {
        match self {
            Matcher::Exact => r.flags.em == Some(true),
            Matcher::Accuracy => r.flags.accuracy == Some(true),
        }
    }
    /// The row gives the foil and not the reference.
    pub fn foil_only(self, r: &Scored) -> bool {
        match self {
            Matcher::Exact => r.flags.foil_exact == Some(true) && r.flags.em != Some(true),
            Matcher::Accuracy => r.flags.foil_only == Some(true),
        }
    }
}

impl Out {
    /// An empty collector for these options.
    pub fn new(opts: &crate::ScoreOptions) -> Out {
        Out {
            rows: Vec::new(),
            opts: opts.clone(),
        }
    }

    /// A sample-mean metric (x `scale`) with its interval.
    pub fn mean(
        &mut self,
        k: &Key,
        condition: &str,
        metric: &str,
        c: &Clusters,
        scale: f64,
        details: Value,
    ) {
        let vals = c.grouped();
        let p = point(vals);
        let ci = interval(vals, self.opts.bootstrap, self.opts.seed);
        let mut d = details;
        if let Some(o) = d.as_object_mut() {
            o.insert("questions".into(), json!(vals.len()));
        }
        self.rows.push(MetricRow {
            value: p.map(|v| v * scale),
            n: c.n(),
            ci_low: ci.map(|x| x.0 * scale),
            ci_high: ci.map(|x| x.1 * scale),
            details: Some(d.to_string()),
            ..k.row(condition, metric)
        });
    }

    /// A plain count (no interval).
    pub fn count(
        &mut self,
        k: &Key,
        condition: &str,
        metric: &str,
        value: usize,
        n: usize,
        details: Value,
    ) {
        self.rows.push(MetricRow {
            value: Some(value as f64),
            n: n as i64,
            details: Some(details.to_string()),
            ..k.row(condition, metric)
        });
    }
}

/// A judgement as a value to average: 1 or 0.
pub fn b(x: bool) -> f64 {
    if x {
        1.0
    } else {
        0.0
    }
}

/// Rows grouped by (dataset, model, prompt), failed rows removed (counted).
pub type Groups<'a> = BTreeMap<(&'a str, &'a str, &'a str), Vec<&'a Scored<'a>>>;

/// The template's declared role is one of `roles`.
pub fn role_in(r: &Scored, roles: &[&str]) -> bool {
    r.prompt_role.is_some_and(|x| roles.contains(&x))
}

/// The rows `pred` keeps, failed requests left out, by (dataset, model, prompt).
pub fn groups<'a>(rows: &'a [Scored], pred: impl Fn(&Scored) -> bool) -> Groups<'a> {
    let mut g: Groups = BTreeMap::new();
    for r in rows.iter().filter(|r| !r.failed && pred(r)) {
        g.entry((r.dataset, r.model, r.prompt)).or_default().push(r);
    }
    g
}

/// The key of a (dataset, model, prompt) group in `study`.
pub fn key(study: &'static str, g: &(&str, &str, &str)) -> Key {
    Key {
        study,
        dataset: g.0.to_string(),
        model: g.1.to_string(),
        prompt: g.2.to_string(),
    }
}

/// A study's metric families: the score stage's extension point. The
/// stage knows no study; it runs the families it is given, in the order
/// given, over every scored row of the run (`ragprobe-studies` registers
/// the studies).
///
/// The caller guarantees: `rows` are all the scored rows of the run (or of
/// one `--by` group), every study's mixed, failed requests included and
/// marked (`Scored::failed`); `out.opts` are the run's options.
///
/// An implementation must: pick its own population from the rows (by
/// condition, declared prompt role, study) and leave other rows alone;
/// leave failed requests out of every denominator; append rows to `out`
/// only, deterministically (the same rows and options give the same metric
/// rows in the same order: iterate ordered maps, draw only from seeded
/// generators); never panic on rows it does not expect (a study absent
/// from a run gives no rows); name in each row's `details.definition` what
/// the numerator and denominator are.
pub trait MetricFamilies: Sync {
    /// The study's name: how runs and errors name it.
    fn name(&self) -> &'static str;
    /// The study's own judgements of one response (its parsers' labels,
    /// e.g. a yes/idk/invalid label, a rejection check), written into
    /// `row` after the shared scores (accuracy, EM, F1, the unanswerable,
    /// conflict and foil flags). Not called for a failed request nor a
    /// multiple-choice case. Rows are scored in parallel and in any order:
    /// the judgement must depend only on `case`, `text` and `mode`, and set
    /// only the study's own fields. The default judges nothing.
    fn judge(&self, case: &CaseRow, text: &str, mode: ParseMode, row: &mut ScoreRow) {
        let _ = (case, text, mode, row);
    }
    /// Appends the study's metric rows for `rows` to `out`.
    fn compute(&self, rows: &[Scored], out: &mut Out);
}

/// The studies whose families a run computes, in order: registered by the
/// caller (`ragprobe_studies::METRIC_FAMILIES`), since the stage names no
/// study. Not a recipe parameter: the families' code is the stage's
/// version, as any of its code.
#[derive(Clone, Copy, Default)]
pub struct Studies(pub &'static [&'static dyn MetricFamilies]);

impl Studies {
    /// The registered studies' names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.0.iter().map(|s| s.name()).collect()
    }
}

impl std::fmt::Debug for Studies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl PartialEq for Studies {
    fn eq(&self, other: &Studies) -> bool {
        self.names() == other.names()
    }
}

/// Every family of the options' studies, in order.
pub fn all(rows: &[Scored], out: &mut Out) {
    let studies = out.opts.studies;
    for s in studies.0 {
        s.compute(rows, out);
    }
}
