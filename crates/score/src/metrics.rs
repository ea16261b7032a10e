//! Every metric of the studies, computed from scored rows.
//!
//! Failed requests are excluded from every denominator (and counted in
//! `failed`). Rates are percentages (0–100) as the studies report them.
//! Each sample mean carries n and a question-clustered 95% bootstrap
//! interval ([`crate::bootstrap`]). An empty subset gives n = 0 and no value.
//! Families whose study defines them under a particular prompt are computed
//! for the responses whose template *declared* that role,
//! never from template ids: conflict detection for `conflict`; RAD for
//! `normal` and `unans`; stubbornness and PAR for `normal`; the RAG-Stress
//! family for `soft`/`strict` paired with the study's `closed-book`
//! baseline. A template named `no-conflict-v2` runs what its role says.

use ragprobe_artifact::{condition, Expected, MetricRow};

use crate::scored::Scored;
use rayon::prelude::*;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

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
    /// Study the metric belongs to (`qa`, `imperfect`, `nomiracl`, `rgb`, `stress`).
    pub study: &'static str,
    /// Dataset of the rows.
    pub dataset: String,
    /// Model that answered.
    pub model: String,
    /// Prompt template id.
    pub prompt: String,
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
    fn main(self) -> Matcher {
        if self == KMatcher::Exact {
            Matcher::Exact
        } else {
            Matcher::Accuracy
        }
    }
    /// The matcher of the audit families (§C).
    fn audit(self) -> Matcher {
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
enum Matcher {
    Exact,
    Accuracy,
}

impl Matcher {
    fn name(self) -> &'static str {
        match self {
            Matcher::Exact => "exact",
            Matcher::Accuracy => "accuracy",
        }
    }
    fn correct(self, r: &Scored) -> bool {
        match self {
            Matcher::Exact => r.em == Some(true),
            Matcher::Accuracy => r.accuracy == Some(true),
        }
    }
    fn foil_only(self, r: &Scored) -> bool {
        match self {
            Matcher::Exact => r.foil_exact == Some(true) && r.em != Some(true),
            Matcher::Accuracy => r.foil_only == Some(true),
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
            study: k.study.into(),
            dataset: k.dataset.clone(),
            model: k.model.clone(),
            prompt: k.prompt.clone(),
            condition: condition.into(),
            metric: metric.into(),
            value: p.map(|v| v * scale),
            n: c.n(),
            ci_low: ci.map(|x| x.0 * scale),
            ci_high: ci.map(|x| x.1 * scale),
            details: Some(d.to_string()),
            breakdown: None,
            breakdown_group: None,
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
            study: k.study.into(),
            dataset: k.dataset.clone(),
            model: k.model.clone(),
            prompt: k.prompt.clone(),
            condition: condition.into(),
            metric: metric.into(),
            value: Some(value as f64),
            n: n as i64,
            ci_low: None,
            ci_high: None,
            details: Some(details.to_string()),
            breakdown: None,
            breakdown_group: None,
        });
    }
}

fn b(x: bool) -> f64 {
    if x {
        1.0
    } else {
        0.0
    }
}

/// Rows grouped by (dataset, model, prompt), failed rows removed (counted).
type Groups<'a> = BTreeMap<(&'a str, &'a str, &'a str), Vec<&'a Scored<'a>>>;

/// The template's declared role is one of `roles`.
fn role_in(r: &Scored, roles: &[&str]) -> bool {
    r.prompt_role.is_some_and(|x| roles.contains(&x))
}

fn groups<'a>(rows: &'a [Scored], pred: impl Fn(&Scored) -> bool) -> Groups<'a> {
    let mut g: Groups = BTreeMap::new();
    for r in rows.iter().filter(|r| !r.failed && pred(r)) {
        g.entry((r.dataset, r.model, r.prompt)).or_default().push(r);
    }
    g
}

fn key(study: &'static str, g: &(&str, &str, &str)) -> Key {
    Key {
        study,
        dataset: g.0.to_string(),
        model: g.1.to_string(),
        prompt: g.2.to_string(),
    }
}

/// Accuracy, EM and F1 per condition (seed 000 Appendix B Tables 11, 12),
/// plus the count of failed requests.
pub fn qa(rows: &[Scored], out: &mut Out) {
    for (g, rs) in groups(rows, |r| {
        !r.condition.starts_with("nomiracl") && r.accuracy.is_some()
    }) {
        let k = key("qa", &g);
        let mut by_cond: BTreeMap<&str, Vec<&Scored>> = BTreeMap::new();
        for r in rs {
            by_cond.entry(r.condition).or_default().push(r);
        }
        for (cond, rs) in by_cond {
            let def = json!({"definition": "accuracy: a normalised gold alias is a substring of the normalised response; em: equal after normalisation; f1: SQuAD token F1, max over aliases"});
            // One metric's clusters at a time: at a million rows each
            // holds 32 MB.
            let metrics: [(&str, fn(&Scored) -> f64); 3] = [
                ("acc", |r| b(r.accuracy == Some(true))),
                ("em", |r| b(r.em == Some(true))),
                ("f1", |r| r.f1.unwrap_or(0.0)),
            ];
            for (metric, value) in metrics {
                let mut c = Clusters::with_capacity(rs.len());
                for r in &rs {
                    c.add(r.qid, value(r));
                }
                out.mean(&k, cond, metric, &c, 100.0, def.clone());
            }
            let mcq: Vec<&&Scored> = rs.iter().filter(|r| r.mcq_choice.is_some()).collect();
            if !mcq.is_empty() {
                let several = mcq
                    .iter()
                    .filter(|r| r.mcq_choice == Some("several"))
                    .count();
                out.count(&k, cond, "mcq_several_options", several, mcq.len(), json!({"definition": "multiple-choice responses naming two or more options: neither reference nor foil"}));
            }
        }
    }
    let mut failed: BTreeMap<(&str, &str, &str, &str), (usize, usize)> = BTreeMap::new();
    for r in rows {
        let e = failed
            .entry((r.dataset, r.model, r.prompt, r.condition))
            .or_default();
        e.1 += 1;
        if r.failed {
            e.0 += 1;
        }
    }
    for ((d, m, p, c), (f, n)) in failed {
        if f > 0 {
            out.count(&Key { study: "qa", dataset: d.into(), model: m.into(), prompt: p.into() }, c, "failed_requests", f, n, json!({"definition": "requests that failed after retries; excluded from every denominator"}));
        }
    }
}

/// Whether a base-condition response is correct under its label: an
/// unanswerable question is answered correctly by saying "unanswerable",
/// an answerable one by the gold answer (accuracy).
fn correct_for(label: Expected, r: &Scored) -> bool {
    if label == Expected::Unanswerable {
        r.says_unanswerable == Some(true)
    } else {
        r.accuracy == Some(true)
    }
}

/// Seed 000 §5.2 (Figure 2, Table 4), on `base` cases labelled with
/// `--relabel-unanswerable`: Acc over all; Acc(ans) over answerable (gold
/// answer); Acc(unans) over unanswerable (said "unanswerable"). On the
/// unanswerable questions: Acc. = said unanswerable; Cor. = did not, and
/// gave the original gold answer; Hallu. = neither (the three add to 100).
/// And the share of answerable questions wrongly called unanswerable.
pub fn unanswerable(rows: &[Scored], out: &mut Out) {
    for (g, rs) in groups(rows, |r| r.condition == condition::BASE) {
        if !rs.iter().any(|r| r.expected == Expected::Unanswerable) {
            continue;
        }
        let k = key("imperfect", &g);
        let (mut all, mut ans, mut unans) = (
            Clusters::default(),
            Clusters::default(),
            Clusters::default(),
        );
        let (mut cor, mut hallu, mut false_unans) = (
            Clusters::default(),
            Clusters::default(),
            Clusters::default(),
        );
        for r in &rs {
            let ok = correct_for(r.expected, r);
            all.add(r.qid, b(ok));
            if r.expected == Expected::Unanswerable {
                let said = r.says_unanswerable == Some(true);
                let gold = !said && r.accuracy == Some(true);
                unans.add(r.qid, b(said));
                cor.add(r.qid, b(gold));
                hallu.add(r.qid, b(!said && !gold));
            } else {
                ans.add(r.qid, b(ok));
                false_unans.add(r.qid, b(r.says_unanswerable == Some(true)));
            }
        }
        let d = |s: &str| json!({"definition": s});
        out.mean(
            &k,
            "base",
            "acc",
            &all,
            100.0,
            d("answerable: gold answer; unanswerable: says 'unanswerable'"),
        );
        out.mean(
            &k,
            "base",
            "acc_ans",
            &ans,
            100.0,
            d("answerable questions answered with the gold answer"),
        );
        out.mean(
            &k,
            "base",
            "acc_unans",
            &unans,
            100.0,
            d("unanswerable questions: said 'unanswerable' (Table 4 Acc.)"),
        );
        out.mean(&k, "base", "unans_cor", &cor, 100.0, d("unanswerable questions: did not say unanswerable and gave the original gold answer (Table 4 Cor.)"));
        out.mean(
            &k,
            "base",
            "unans_hallu",
            &hallu,
            100.0,
            d("unanswerable questions: neither (Table 4 Hallu.)"),
        );
        out.mean(
            &k,
            "base",
            "ans_called_unans",
            &false_unans,
            100.0,
            d("answerable questions wrongly called unanswerable"),
        );
    }
}

fn by_qid<'a>(rs: &[&'a Scored<'a>], cond: &str) -> BTreeMap<&'a str, &'a Scored<'a>> {
    rs.iter()
        .filter(|r| r.condition == cond)
        .map(|r| (r.qid, *r))
        .collect()
}

/// Seed 000 §5.3.2 (Figure 3) and Table 6: ARA = questions correct with the
/// top-k documents (`base`); ARA-Add = those still correct with one added
/// document; RAD = 100 x |ARA-Add| / |ARA|, per added-document type
/// (`add-random`, `add-topk`, `add-genadv`, `add-conflict`). Correct means
/// the gold answer, or "unanswerable" for a question labelled unanswerable;
/// with such labels RAD is also split into answerable / unanswerable.
/// Computed for the `normal` and `unans` roles.
pub fn rad(rows: &[Scored], out: &mut Out) {
    for (g, rs) in groups(rows, |r| role_in(r, &["normal", "unans"])) {
        let base = by_qid(&rs, "base");
        if base.is_empty() {
            continue;
        }
        let k = key("imperfect", &g);
        let adds: BTreeSet<&str> = rs
            .iter()
            .filter(|r| r.condition.starts_with("add-"))
            .map(|r| r.condition)
            .collect();
        let labelled = base.values().any(|r| r.expected == Expected::Unanswerable);
        for add in adds {
            let added = by_qid(&rs, add);
            let (mut all, mut ans, mut unans) = (
                Clusters::default(),
                Clusters::default(),
                Clusters::default(),
            );
            for (qid, br) in &base {
                if !correct_for(br.expected, br) {
                    continue;
                }
                let Some(ar) = added.get(qid) else { continue };
                let still = b(correct_for(br.expected, ar));
                all.add(qid, still);
                if br.expected == Expected::Unanswerable {
                    unans.add(qid, still);
                } else {
                    ans.add(qid, still);
                }
            }
            let d = json!({"definition": "RAD = 100 x |ARA-Add| / |ARA|; ARA = questions correct in base, paired by qid", "ara": all.n()});
            out.mean(&k, add, "rad", &all, 100.0, d.clone());
            if labelled {
                out.mean(&k, add, "rad_ans", &ans, 100.0, d.clone());
                out.mean(&k, add, "rad_unans", &unans, 100.0, d);
            }
        }
    }
}

/// Seed 000 §5.4 Table 7 (Conflict prompt, role `conflict`): three
/// disjoint-or-pooled populations of *answerable* questions (some top-k
/// passage holds a gold answer), each question counted once:
/// * C = the questions whose conflict passage was built and passed every
///   filter (they have an `add-conflict` case); Acc(C) = share answered
///   "conflict";
/// * NC = the other answerable questions, under the top-k documents alone
///   (`base`); Acc(NC) = share answered with the gold answer and not
///   "conflict";
/// * Acc = over C ∪ NC (every answerable question once).
///
/// The paper's Table 7 shows C and NC are disjoint groups: within a
/// dataset (Acc(NC) − Acc) / (Acc(NC) − Acc(C)) is the same for every
/// model (it is |C| / (|C| + |NC|)). With `conflict_share` = P, only a
/// seeded share P of the questions with a conflict passage form C (chosen
/// per question from SHA-256(seed, qid)); the others join NC through their
/// `base` case — for runs where nearly every passage can be built.
pub fn conflict_detection(rows: &[Scored], out: &mut Out) {
    for (g, rs) in groups(rows, |r| role_in(r, &["conflict"])) {
        let conflict = by_qid(&rs, "add-conflict");
        if conflict.is_empty() {
            continue;
        }
        let base = by_qid(&rs, "base");
        let k = key("imperfect", &g);
        let (share_p, seed) = (out.opts.conflict_share, out.opts.seed);
        let in_c = |qid: &str| match share_p {
            None => true,
            Some(p) => share_draw(seed, qid) < p,
        };
        let (mut c, mut nc, mut all) = (
            Clusters::default(),
            Clusters::default(),
            Clusters::default(),
        );
        let mut c_qids = BTreeSet::new();
        for (qid, r) in &conflict {
            if r.answerable != Some(true) || !in_c(qid) {
                continue;
            }
            c_qids.insert(*qid);
            let ok = b(r.says_conflict == Some(true));
            c.add(qid, ok);
            all.add(qid, ok);
        }
        for (qid, r) in &base {
            if c_qids.contains(qid) || r.answerable != Some(true) {
                continue;
            }
            let ok = b(r.accuracy == Some(true) && r.says_conflict != Some(true));
            nc.add(qid, ok);
            all.add(qid, ok);
        }
        let (nc_n, c_n) = (nc.n() as f64, c.n() as f64);
        let share = (c_n + nc_n > 0.0).then(|| c_n / (c_n + nc_n));
        let cs = out.opts.conflict_share;
        let d = |s: &str| json!({"definition": s, "c": c_n, "nc": nc_n, "c_share": share, "conflict_share": cs});
        out.mean(&k, "add-conflict", "acc_c", &c, 100.0, d("C: answerable questions whose conflict passage was built (add-conflict case), answered 'conflict'"));
        out.mean(&k, "base", "acc_nc", &nc, 100.0, d("NC: the other answerable questions (top-k only), answered with the gold answer and not 'conflict'"));
        out.mean(
            &k,
            "add-conflict+base",
            "acc_answerable",
            &all,
            100.0,
            d("every answerable question once: C by its conflict case, NC by its base case"),
        );
    }
}

/// A uniform draw in [0, 1) fixed by (seed, qid): the seeded C/NC split.
pub fn share_draw(seed: u64, qid: &str) -> f64 {
    let h =
        ragprobe_artifact::sha256_hex(format!("{seed}\u{1f}{qid}\u{1f}conflict-share").as_bytes());
    u64::from_str_radix(&h[..16], 16).expect("hex") as f64 / 2f64.powi(64)
}

/// Seed 000 §5.4 Table 8 (Normal prompt): on ARA (questions correct in
/// `base`) with a conflict passage added: A->A = still the gold answer;
/// A->C = not the gold answer but the foil; A->U = neither. Role `normal`.
pub fn stubbornness(rows: &[Scored], out: &mut Out) {
    for (g, rs) in groups(rows, |r| role_in(r, &["normal"])) {
        let conflict = by_qid(&rs, "add-conflict");
        let base = by_qid(&rs, "base");
        if conflict.is_empty() || base.is_empty() {
            continue;
        }
        let k = key("imperfect", &g);
        let (mut aa, mut ac, mut au) = (
            Clusters::default(),
            Clusters::default(),
            Clusters::default(),
        );
        for (qid, br) in &base {
            if br.accuracy != Some(true) {
                continue;
            }
            let Some(cr) = conflict.get(qid) else {
                continue;
            };
            let keep = cr.accuracy == Some(true);
            let foil = !keep && cr.foil_any == Some(true);
            aa.add(qid, b(keep));
            ac.add(qid, b(foil));
            au.add(qid, b(!keep && !foil));
        }
        out.mean(
            &k,
            "add-conflict",
            "a_to_a",
            &aa,
            100.0,
            json!({"definition": "ARA questions still answered with the gold answer"}),
        );
        out.mean(
            &k,
            "add-conflict",
            "a_to_c",
            &ac,
            100.0,
            json!({"definition": "ARA questions now answered with the foil"}),
        );
        out.mean(
            &k,
            "add-conflict",
            "a_to_u",
            &au,
            100.0,
            json!({"definition": "ARA questions answered with neither"}),
        );
    }
}

/// Seed 000 Table 13 (Normal prompt): PAR = share of unanswerable questions
/// (no retrieved passage holds the answer) answered correctly anyway.
/// Role `normal`.
pub fn par(rows: &[Scored], out: &mut Out) {
    for (g, rs) in groups(rows, |r| {
        r.condition == condition::BASE && role_in(r, &["normal"])
    }) {
        let k = key("imperfect", &g);
        let mut c = Clusters::default();
        for r in rs.iter().filter(|r| r.answerable == Some(false)) {
            c.add(r.qid, b(r.accuracy == Some(true)));
        }
        out.mean(&k, "base", "par", &c, 100.0, json!({"definition": "unanswerable questions (no answer in the top-k) answered with the gold answer"}));
    }
}

/// Seed 001 (NoMIRACL), per language, model and prompt:
/// hallucination rate = #yes / N on the non-relevant subset; error rate =
/// #idk / N on the relevant subset; invalid rates; and the variants that
/// leave invalid outputs out of the denominator: FP/(FP+TN) = yes/(yes+idk)
/// on non-relevant, FN/(FN+TP) = idk/(idk+yes) on relevant.
pub fn nomiracl(rows: &[Scored], out: &mut Out) {
    let mut g: Groups = BTreeMap::new();
    for r in rows
        .iter()
        .filter(|r| !r.failed && r.condition == "nomiracl")
    {
        g.entry((r.lang, r.model, r.prompt)).or_default().push(r);
    }
    for (gk, rs) in g {
        let k = key("nomiracl", &gk);
        for (subset, main, main_label, other_label) in [
            (Expected::NonRelevant, "hallucination_rate", "yes", "idk"),
            (Expected::Relevant, "error_rate", "idk", "yes"),
        ] {
            let (mut rate, mut invalid, mut valid_rate) = (
                Clusters::default(),
                Clusters::default(),
                Clusters::default(),
            );
            let subset_name = subset.as_str();
            for r in rs.iter().filter(|r| r.expected == subset) {
                let l = r.nomiracl_label.unwrap_or("invalid");
                rate.add(r.qid, b(l == main_label));
                invalid.add(r.qid, b(l == "invalid"));
                if l == main_label || l == other_label {
                    valid_rate.add(r.qid, b(l == main_label));
                }
            }
            let datasets: BTreeSet<&str> = rs.iter().map(|r| r.dataset).collect();
            out.mean(&k, subset_name, main, &rate, 100.0, json!({"definition": format!("#{main_label} / N over the {subset_name} subset (invalid outputs in the denominator)"), "datasets": datasets}));
            out.mean(
                &k,
                subset_name,
                "invalid_rate",
                &invalid,
                100.0,
                json!({"definition": "#invalid / N"}),
            );
            let v = if subset == Expected::NonRelevant {
                "FP/(FP+TN) = yes/(yes+idk): invalid outputs left out"
            } else {
                "FN/(FN+TP) = idk/(idk+yes): invalid outputs left out"
            };
            out.mean(
                &k,
                subset_name,
                &format!("{main}_valid_only"),
                &valid_rate,
                100.0,
                json!({"definition": v}),
            );
        }
    }
}

const POSITIONS: [&str; 3] = ["beginning", "middle", "end"];

/// One evidence prompt's responses of one dataset and model, by (arm,
/// position, qid); failed requests are already left out.
struct EvidencePrompt<'a> {
    id: &'a str,
    role: &'a str,
    variant: &'a str,
    cells: BTreeMap<(&'a str, &'a str, &'a str), &'a Scored<'a>>,
    qids: BTreeSet<&'a str>,
}

impl<'a> EvidencePrompt<'a> {
    fn cell(&self, arm: &str, pos: &str, qid: &str) -> Option<&'a Scored<'a>> {
        self.cells.get(&(arm, pos, qid)).copied()
    }
    /// Both arms at all three positions are there.
    fn complete(&self, qid: &str) -> bool {
        POSITIONS
            .iter()
            .all(|p| self.cell("clean", p, qid).is_some() && self.cell("edited", p, qid).is_some())
    }
    /// Mean over the three positions of `f` on one arm (complete questions).
    fn avg(&self, arm: &str, qid: &str, f: impl Fn(&Scored) -> bool) -> f64 {
        POSITIONS
            .iter()
            .map(|p| self.cell(arm, p, qid).map_or(0.0, |r| b(f(r))))
            .sum::<f64>()
            / POSITIONS.len() as f64
    }
}

/// The closed-book baseline of one dataset and model: per question,
/// correct under the main and the audit matcher.
struct Baseline<'a> {
    prompt: Option<&'a str>,
    main: BTreeMap<&'a str, bool>,
    audit: BTreeMap<&'a str, bool>,
}

/// Per-question values into clusters (one value per question).
fn clusters_of<'q>(values: impl IntoIterator<Item = (&'q str, f64)>) -> Clusters<'q> {
    let mut c = Clusters::default();
    for (q, v) in values {
        c.set(q, v);
    }
    c
}

/// One model's (K, U) under the audit matcher on the complete questions of
/// a variant, for the common stratum across models (§C.5).
type Strata<'a> = (BTreeSet<&'a str>, BTreeSet<&'a str>);

/// Seed 002 (RAG-Stress), per dataset and model. Roles, not names: the
/// evidence prompts are the responses whose template declared `soft` or
/// `strict`; the baseline is the study's `closed-book` template (the one of
/// the same variant when there are several, e.g. `mcq`).
///
/// Strata (§3.2, §C.1): K = questions whose closed-book response is
/// correct, U = the others, under the matcher of each table
/// ([`KMatcher`]; recorded in every row's details as `k_matcher`).
///
/// Fixed population (§F.1: "paired analysis requires a fixed question
/// population and complete clean/edited instruction–position records"):
/// per prompt variant, the questions with a response in both arms at all
/// three positions under every policy of that variant. Position-averaged
/// rates, every paired contrast and every Strict−Soft comparison use only
/// those questions; `excluded` in the details counts the others.
///
/// Each metric is defined where it is computed: per policy prompt in
/// `stress_positions`, `stress_position_averaged` and
/// `stress_position_diffs`; per variant with both policies in
/// `strict_minus_soft`; per prompt version in
/// `StressGroup::gap_change_from_v0`; across models in `common_stratum`.
pub fn stress(rows: &[Scored], out: &mut Out) {
    let (main_m, audit_m) = (out.opts.k_matcher.main(), out.opts.k_matcher.audit());
    let by_dm = by_dataset_model(rows);
    // Per dataset: model -> (K, U) under the audit matcher on complete
    // questions, and each model's per-variant pairs, for §C.5.
    let mut common: BTreeMap<&str, BTreeMap<&str, Strata>> = BTreeMap::new();
    for ((dataset, model), rs) in &by_dm {
        let prompts = evidence_prompts(rs);
        if prompts.is_empty() {
            continue;
        }
        let g = StressGroup::new(dataset, model, rs, &prompts, main_m, audit_m);
        for v in g.variants.keys() {
            if let Some(strata) = g.variant(out, v) {
                common.entry(dataset).or_default().insert(model, strata);
            }
        }
        g.gap_change_from_v0(out);
    }
    // §C.5: the common stratum across models, per dataset.
    for (dataset, models) in common {
        common_stratum(out, &by_dm, dataset, &models, audit_m);
    }
}

/// The rows that did not fail, by (dataset, model).
fn by_dataset_model<'a>(
    rows: &'a [Scored<'a>],
) -> BTreeMap<(&'a str, &'a str), Vec<&'a Scored<'a>>> {
    let mut by_dm: BTreeMap<(&str, &str), Vec<&Scored>> = BTreeMap::new();
    for r in rows.iter().filter(|r| !r.failed) {
        by_dm.entry((r.dataset, r.model)).or_default().push(r);
    }
    by_dm
}

/// The metric key of a RAG-Stress row of one dataset, model and prompt.
fn stress_key(dataset: &str, model: &str, prompt: &str) -> Key {
    Key {
        study: "stress",
        dataset: dataset.to_string(),
        model: model.to_string(),
        prompt: prompt.to_string(),
    }
}

/// The RAG-Stress rows of one dataset and model: its evidence prompts
/// grouped by variant, and each variant's fixed population.
struct StressGroup<'a, 'p> {
    dataset: &'a str,
    model: &'a str,
    /// The dataset and model's rows (failed requests left out).
    rs: &'p [&'a Scored<'a>],
    /// Evidence prompts by variant.
    variants: BTreeMap<&'a str, Vec<&'p EvidencePrompt<'a>>>,
    /// Per variant: (fixed population, number of questions excluded).
    population: BTreeMap<&'a str, (BTreeSet<&'a str>, usize)>,
    main_m: Matcher,
    audit_m: Matcher,
}

impl<'a, 'p> StressGroup<'a, 'p> {
    /// Groups the evidence prompts by variant and finds each variant's
    /// fixed population (questions complete under every policy).
    fn new(
        dataset: &'a str,
        model: &'a str,
        rs: &'p [&'a Scored<'a>],
        prompts: &'p BTreeMap<&'a str, EvidencePrompt<'a>>,
        main_m: Matcher,
        audit_m: Matcher,
    ) -> Self {
        // Variant groups and their fixed populations.
        let mut variants: BTreeMap<&str, Vec<&EvidencePrompt>> = BTreeMap::new();
        for p in prompts.values() {
            variants.entry(p.variant).or_default().push(p);
        }
        let mut population: BTreeMap<&str, (BTreeSet<&str>, usize)> = BTreeMap::new();
        for (v, ps) in &variants {
            let any: BTreeSet<&str> = ps.iter().flat_map(|p| p.qids.iter().copied()).collect();
            let complete: BTreeSet<&str> = any
                .iter()
                .copied()
                .filter(|q| ps.iter().all(|p| p.complete(q)))
                .collect();
            population.insert(v, (complete.clone(), any.len() - complete.len()));
        }
        StressGroup {
            dataset,
            model,
            rs,
            variants,
            population,
            main_m,
            audit_m,
        }
    }

    /// The metric key of one of this group's prompts (or prompt pairs).
    fn key(&self, prompt: &str) -> Key {
        stress_key(self.dataset, self.model, prompt)
    }

    /// Emits the metrics of each policy prompt of variant `v` and, when it
    /// has both policies, its Strict−Soft contrasts; then returns the
    /// variant's audit-matcher (K, U) for the common stratum.
    fn variant(&self, out: &mut Out, v: &str) -> Option<Strata<'a>> {
        let (main_m, audit_m) = (self.main_m, self.audit_m);
        let base = baseline(self.rs, v, main_m, audit_m);
        let (fixed, excluded) = &self.population[v];
        let k_main: BTreeSet<&str> = fixed
            .iter()
            .copied()
            .filter(|q| base.main.get(q) == Some(&true))
            .collect();
        let k_audit: BTreeSet<&str> = fixed
            .iter()
            .copied()
            .filter(|q| base.audit.get(q) == Some(&true))
            .collect();
        let u_audit: BTreeSet<&str> = fixed
            .iter()
            .copied()
            .filter(|q| base.audit.get(q) == Some(&false))
            .collect();
        let d = |s: &str, m: Matcher, pop: &str| {
            json!({"definition": s, "baseline_prompt": base.prompt, "k_matcher": m.name(), "population": pop,
                "k": base.main.values().filter(|x| **x).count(), "k_audit": base.audit.values().filter(|x| **x).count(),
                "fixed_population": fixed.len(), "excluded": excluded})
        };
        let scope = VariantScope {
            main_m,
            audit_m,
            k_main,
            k_audit,
            u_audit,
            details: &d,
        };
        for p in &self.variants[v] {
            stress_prompt(out, &self.key(p.id), p, &base, &scope);
        }
        // Strict - Soft of this variant.
        let (Some(strict), Some(soft)) = (
            self.variants[v].iter().find(|p| p.role == "strict"),
            self.variants[v].iter().find(|p| p.role == "soft"),
        ) else {
            return None;
        };
        let pk = self.key(&format!("{} - {}", strict.id, soft.id));
        strict_minus_soft(out, &pk, strict, soft, &scope);
        Some((scope.k_audit, scope.u_audit))
    }

    /// Per variant other than `v0` (§F.2): `mr_gap_change_from_v0` =
    /// (Strict−Soft MR of the variant) − (Strict−Soft MR of v0) on the K
    /// questions complete under both.
    fn gap_change_from_v0(&self, out: &mut Out) {
        let (main_m, audit_m) = (self.main_m, self.audit_m);
        let (variants, population) = (&self.variants, &self.population);
        // §F.2: changes of each prompt version from v0, on K.
        let gap = |v: &str, q: &str| -> Option<f64> {
            let ps = variants.get(v)?;
            let (s, t) = (
                ps.iter().find(|p| p.role == "strict")?,
                ps.iter().find(|p| p.role == "soft")?,
            );
            Some(
                s.avg("edited", q, |r| main_m.foil_only(r))
                    - t.avg("edited", q, |r| main_m.foil_only(r)),
            )
        };
        if !variants.contains_key("v0") {
            return;
        }
        let base = baseline(self.rs, "v0", main_m, audit_m);
        for v in variants
            .keys()
            .filter(|v| v.starts_with('v') && **v != "v0")
        {
            let both: BTreeSet<&str> = population[v]
                .0
                .intersection(&population["v0"].0)
                .copied()
                .filter(|q| base.main.get(q) == Some(&true))
                .collect();
            let c = clusters_of(
                both.iter()
                    .filter_map(|q| Some((*q, gap(v, q)? - gap("v0", q)?))),
            );
            if !(variants[v].iter().any(|p| p.role == "strict")
                && variants[v].iter().any(|p| p.role == "soft"))
            {
                continue;
            }
            out.mean(&self.key(&format!("{v} - v0")), "edited/all", "mr_gap_change_from_v0", &c, 100.0,
                json!({"definition": "(Strict-Soft MR of this prompt version) - (Strict-Soft MR of v0) on K, paired within question (seed 002 §F.2)", "k_matcher": main_m.name(), "baseline_prompt": base.prompt, "questions_complete_in_both": both.len()}));
        }
    }
}

/// One prompt variant of one dataset and model: the matchers, its strata
/// on the fixed population, and the `details` of its metric rows.
struct VariantScope<'a, 'd> {
    main_m: Matcher,
    audit_m: Matcher,
    /// K under the main matcher.
    k_main: BTreeSet<&'a str>,
    /// K under the audit matcher.
    k_audit: BTreeSet<&'a str>,
    /// U under the audit matcher.
    u_audit: BTreeSet<&'a str>,
    /// A row's details from its definition, matcher and population.
    details: &'d dyn Fn(&str, Matcher, &str) -> Value,
}

/// Per variant with both policies (prompt `strict - soft`), paired within
/// question after averaging positions (§3.3, §C.2): `mr_strict_minus_soft`,
/// `hor_strict_minus_soft` (on K), `bcr_strict_minus_soft` (on U), and
/// `interaction_end_minus_middle`: Strict(End−Middle) − Soft(End−Middle)
/// on K.
fn strict_minus_soft<'a>(
    out: &mut Out,
    pk: &Key,
    strict: &EvidencePrompt,
    soft: &EvidencePrompt,
    s: &VariantScope<'a, '_>,
) {
    let (main_m, audit_m, d) = (s.main_m, s.audit_m, s.details);
    let (k_main, k_audit, u_audit) = (&s.k_main, &s.k_audit, &s.u_audit);
    let diff = |qs: &BTreeSet<&'a str>, arm: &str, f: &dyn Fn(&Scored) -> bool| {
        clusters_of(
            qs.iter()
                .map(|q| (*q, strict.avg(arm, q, f) - soft.avg(arm, q, f))),
        )
    };
    out.mean(pk, "edited/all", "mr_strict_minus_soft", &diff(k_main, "edited", &|r| main_m.foil_only(r)), 100.0,
        d("Strict MR - Soft MR on K, positions averaged within question before resampling (percentage points)", main_m, "K, fixed population"));
    out.mean(pk, "edited/all", "hor_strict_minus_soft", &diff(k_audit, "edited", &|r| !audit_m.correct(r)), 100.0,
        d("Strict HOR - Soft HOR on K (edited response no longer gives the reference), paired within question", audit_m, "K, fixed population"));
    out.mean(pk, "clean/all", "bcr_strict_minus_soft", &diff(u_audit, "clean", &|r| audit_m.correct(r)), 100.0,
        d("Strict BCR - Soft BCR on U (clean response gives the reference), paired within question", audit_m, "U, fixed population"));
    let em = |p: &EvidencePrompt, q: &str| {
        let f = |pos: &str| {
            p.cell("edited", pos, q)
                .map_or(0.0, |r| b(main_m.foil_only(r)))
        };
        f("end") - f("middle")
    };
    out.mean(pk, "edited/end-middle", "interaction_end_minus_middle", &clusters_of(k_main.iter().map(|q| (*q, em(strict, q) - em(soft, q)))), 100.0,
        d("instruction x position interaction: Strict(End - Middle) - Soft(End - Middle) MR on K, paired within question", main_m, "K, fixed population"));
}

/// Across models (§C.5): on the questions in every model's K (U),
/// `hor_strict_minus_soft_common` (`bcr_strict_minus_soft_common`), for
/// each model of `dataset` and each of its variants with both policies;
/// nothing when the dataset has fewer than two models.
fn common_stratum(
    out: &mut Out,
    by_dm: &BTreeMap<(&str, &str), Vec<&Scored>>,
    dataset: &str,
    models: &BTreeMap<&str, Strata>,
    audit_m: Matcher,
) {
    if models.len() < 2 {
        return;
    }
    let mut it = models.values();
    let first = it.next().expect("two models");
    let (mut kc, mut uc) = first.clone();
    for (kk, uu) in it {
        kc = kc.intersection(kk).copied().collect();
        uc = uc.intersection(uu).copied().collect();
    }
    let common = (kc, uc);
    for model in models.keys() {
        let rs = &by_dm[&(dataset, *model)];
        let prompts = evidence_prompts(rs);
        let vs: BTreeSet<&str> = prompts.values().map(|p| p.variant).collect();
        for v in vs {
            let pick = |role: &str| prompts.values().find(|p| p.variant == v && p.role == role);
            let (Some(s), Some(t)) = (pick("strict"), pick("soft")) else {
                continue;
            };
            let key = stress_key(dataset, model, &format!("{} - {}", s.id, t.id));
            common_stratum_pair(out, &key, s, t, &common, models, audit_m);
        }
    }
}

/// The two common-stratum contrasts (see `common_stratum`) of one model's
/// Strict (`s`) and Soft (`t`) prompts of one variant.
fn common_stratum_pair(
    out: &mut Out,
    key: &Key,
    s: &EvidencePrompt,
    t: &EvidencePrompt,
    (kc, uc): &Strata,
    models: &BTreeMap<&str, Strata>,
    audit_m: Matcher,
) {
    let d = |x: &str, n: usize| json!({"definition": x, "k_matcher": audit_m.name(), "models": models.keys().collect::<Vec<_>>(), "common_stratum": n});
    let hor = clusters_of(
        kc.iter()
            .filter(|q| s.complete(q) && t.complete(q))
            .map(|q| {
                (
                    *q,
                    s.avg("edited", q, |r| !audit_m.correct(r))
                        - t.avg("edited", q, |r| !audit_m.correct(r)),
                )
            }),
    );
    out.mean(
        key,
        "edited/all",
        "hor_strict_minus_soft_common",
        &hor,
        100.0,
        d(
            "Strict-Soft HOR on the questions in every model's K (seed 002 §C.5)",
            kc.len(),
        ),
    );
    let bcr = clusters_of(
        uc.iter()
            .filter(|q| s.complete(q) && t.complete(q))
            .map(|q| {
                (
                    *q,
                    s.avg("clean", q, |r| audit_m.correct(r))
                        - t.avg("clean", q, |r| audit_m.correct(r)),
                )
            }),
    );
    out.mean(
        key,
        "clean/all",
        "bcr_strict_minus_soft_common",
        &bcr,
        100.0,
        d(
            "Strict-Soft BCR on the questions in every model's U (seed 002 §C.5)",
            uc.len(),
        ),
    );
}

/// The Soft/Strict responses of one dataset and model, per prompt id, by
/// (arm, position, qid); rows of other roles or without an arm and a
/// position are left out.
fn evidence_prompts<'a>(rs: &[&'a Scored<'a>]) -> BTreeMap<&'a str, EvidencePrompt<'a>> {
    let mut prompts: BTreeMap<&str, EvidencePrompt> = BTreeMap::new();
    for r in rs.iter().filter(|r| role_in(r, &["soft", "strict"])) {
        let (Some(arm), Some(pos)) = (r.condition.strip_prefix("evidence-"), r.answer_position)
        else {
            continue;
        };
        let e = prompts.entry(r.prompt).or_insert_with(|| EvidencePrompt {
            id: r.prompt,
            role: r.prompt_role.unwrap_or(""),
            variant: r.prompt_variant.unwrap_or(""),
            cells: BTreeMap::new(),
            qids: BTreeSet::new(),
        });
        e.cells.insert((arm, pos, r.qid), *r);
        e.qids.insert(r.qid);
    }
    prompts
}

/// The closed-book baseline for one prompt variant: a `closed-book` role
/// response of study 002 (or of a template that declares no study); the
/// template of the same variant when there is one, else one without a
/// variant, else the first by id.
fn baseline<'a>(
    rs: &[&'a Scored<'a>],
    variant: &str,
    main_m: Matcher,
    audit_m: Matcher,
) -> Baseline<'a> {
    let cb: Vec<&&Scored> = rs
        .iter()
        .filter(|r| {
            r.condition == condition::CLOSED_BOOK
                && role_in(r, &["closed-book"])
                && r.prompt_study.is_none_or(|s| s == "002")
        })
        .collect();
    let ids: BTreeSet<(&str, &str)> = cb
        .iter()
        .map(|r| (r.prompt_variant.unwrap_or(""), r.prompt))
        .collect();
    let pick = ids
        .iter()
        .find(|(v, _)| *v == variant)
        .or_else(|| ids.iter().find(|(v, _)| v.is_empty()))
        .or(ids.iter().next())
        .map(|x| x.1);
    let (mut main, mut audit) = (BTreeMap::new(), BTreeMap::new());
    for r in cb.iter().filter(|r| Some(r.prompt) == pick) {
        main.insert(r.qid, main_m.correct(r));
        audit.insert(r.qid, audit_m.correct(r));
    }
    Baseline {
        prompt: pick,
        main,
        audit,
    }
}

/// The metrics of one policy prompt (Soft or Strict) of a variant, in this
/// order: position by position (`stress_positions`), then averaged over
/// positions within question (`stress_position_averaged`), then the paired
/// position differences (`stress_position_diffs`).
fn stress_prompt(out: &mut Out, k: &Key, p: &EvidencePrompt, base: &Baseline, s: &VariantScope) {
    stress_positions(out, k, p, base, s);
    stress_position_averaged(out, k, p, s);
    stress_position_diffs(out, k, p, s);
}

/// One position's tallies of a policy prompt.
struct PositionTally<'a> {
    /// Clean-evidence correct, all questions with this position.
    clean: Clusters<'a>,
    /// Edited-evidence foil-only, on K.
    mr: Clusters<'a>,
    /// Clean-gold pairs whose edited response is foil-only.
    transitions: usize,
    /// Clean/edited pairs whose clean response gives the reference.
    pairs: usize,
}

/// Tallies one position of a policy prompt (see `stress_positions`); each
/// clean-evidence value is also added to `clean_all`.
fn tally_position<'a>(
    p: &EvidencePrompt<'a>,
    pos: &str,
    base: &Baseline,
    s: &VariantScope,
    clean_all: &mut Clusters<'a>,
) -> PositionTally<'a> {
    let (main_m, audit_m) = (s.main_m, s.audit_m);
    let (mut clean, mut mr) = (Clusters::default(), Clusters::default());
    let (mut transitions, mut pairs) = (0, 0);
    for q in &p.qids {
        let (c, e) = (p.cell("clean", pos, q), p.cell("edited", pos, q));
        if let Some(c) = c {
            clean.add(q, b(main_m.correct(c)));
            clean_all.add(q, b(main_m.correct(c)));
        }
        if let (Some(e), Some(true)) = (e, base.main.get(q)) {
            mr.add(q, b(main_m.foil_only(e)));
        }
        if let (Some(c), Some(e)) = (c, e) {
            if audit_m.correct(c) {
                pairs += 1;
                if audit_m.foil_only(e) {
                    transitions += 1;
                }
            }
        }
    }
    PositionTally {
        clean,
        mr,
        transitions,
        pairs,
    }
}

/// Per policy prompt, position by position:
/// * `clean_acc`: clean-evidence accuracy on all questions (per position
///   and over all positions, §3.1: "clean accuracy uses all prepared
///   questions");
/// * `mr` per position: share of K (with that position realised) whose
///   edited response is foil-only (§A.4);
/// * `clean_gold_to_edited_foil` (§C.3): per position, of the pairs whose
///   clean response gives the reference, those whose edited response is
///   foil-only; `all` sums positions (count and denominator).
fn stress_positions(out: &mut Out, k: &Key, p: &EvidencePrompt, base: &Baseline, s: &VariantScope) {
    let (main_m, audit_m, d) = (s.main_m, s.audit_m, s.details);
    let mut clean_all = Clusters::default();
    let (mut t_total, mut pairs_total) = (0usize, 0usize);
    for pos in POSITIONS {
        let t = tally_position(p, pos, base, s, &mut clean_all);
        t_total += t.transitions;
        pairs_total += t.pairs;
        out.mean(
            k,
            &format!("clean/{pos}"),
            "clean_acc",
            &t.clean,
            100.0,
            d(
                "clean-evidence responses with the reference, all questions with this position",
                main_m,
                "all questions",
            ),
        );
        out.mean(
            k,
            &format!("edited/{pos}"),
            "mr",
            &t.mr,
            100.0,
            d(
                "misleading rate: share of K whose edited-evidence response is foil-only",
                main_m,
                "K with this position realised",
            ),
        );
        out.count(k, pos, "clean_gold_to_edited_foil", t.transitions, t.pairs, d("of the clean/edited pairs whose clean response gives the reference (n), those whose edited response is foil-only", audit_m, "pairs with a correct clean response"));
    }
    out.mean(
        k,
        "clean/all",
        "clean_acc",
        &clean_all,
        100.0,
        d(
            "clean-evidence accuracy over all questions and positions",
            main_m,
            "all questions",
        ),
    );
    out.count(
        k,
        "all",
        "clean_gold_to_edited_foil",
        t_total,
        pairs_total,
        d(
            "sum over positions: transitions / pairs with a correct clean response",
            audit_m,
            "pairs with a correct clean response",
        ),
    );
}

/// Per policy prompt, positions averaged within question, on the fixed
/// population:
/// * `mr` edited/all: MR on K;
/// * `harmful_override` (HOR, on K): edited response no longer gives the
///   reference; `beneficial_correction` (BCR, on U): clean response gives
///   the reference (§C.1; different strata, never subtracted);
/// * `foil_only_control` (§C.4): foil-only rate on K in the clean arm and
///   in the edited arm.
fn stress_position_averaged(out: &mut Out, k: &Key, p: &EvidencePrompt, s: &VariantScope) {
    let (main_m, audit_m, d) = (s.main_m, s.audit_m, s.details);
    let (k_main, k_audit, u_audit) = (&s.k_main, &s.k_audit, &s.u_audit);
    out.mean(
        k,
        "edited/all",
        "mr",
        &clusters_of(
            k_main
                .iter()
                .map(|q| (*q, p.avg("edited", q, |r| main_m.foil_only(r)))),
        ),
        100.0,
        d(
            "MR with positions averaged within question",
            main_m,
            "K, fixed population",
        ),
    );
    out.mean(k, "edited/all", "harmful_override", &clusters_of(k_audit.iter().map(|q| (*q, p.avg("edited", q, |r| !audit_m.correct(r))))), 100.0, d("HOR on K: edited-evidence response no longer gives the reference (positions averaged within question)", audit_m, "K, fixed population"));
    out.mean(k, "clean/all", "beneficial_correction", &clusters_of(u_audit.iter().map(|q| (*q, p.avg("clean", q, |r| audit_m.correct(r))))), 100.0, d("BCR on U (closed-book wrong): clean-evidence response gives the reference (positions averaged within question)", audit_m, "U, fixed population"));
    for arm in ["clean", "edited"] {
        out.mean(k, &format!("{arm}/all"), "foil_only_control", &clusters_of(k_audit.iter().map(|q| (*q, p.avg(arm, q, |r| audit_m.foil_only(r))))), 100.0, d("foil-only rate on K in this arm, positions averaged within question (seed 002 §C.4 clean-evidence control)", audit_m, "K, fixed population"));
    }
}

/// Per policy prompt: `mr_diff`: End−Middle, Beginning−Middle,
/// Beginning−End on K, paired within question, fixed population.
fn stress_position_diffs(out: &mut Out, k: &Key, p: &EvidencePrompt, s: &VariantScope) {
    let (main_m, d) = (s.main_m, s.details);
    for (a, bb) in [
        ("end", "middle"),
        ("beginning", "middle"),
        ("beginning", "end"),
    ] {
        let c = clusters_of(s.k_main.iter().map(|q| {
            let f = |pos: &str| {
                p.cell("edited", pos, q)
                    .map_or(0.0, |r| b(main_m.foil_only(r)))
            };
            (*q, f(a) - f(bb))
        }));
        out.mean(
            k,
            &format!("edited/{a}-{bb}"),
            "mr_diff",
            &c,
            100.0,
            d(
                "paired within question on K, percentage points",
                main_m,
                "K, fixed population",
            ),
        );
    }
}

/// RGB (Chen et al. 2024), as its `evalue.py` computes it:
/// * `acc` per noise rate (`rgb-noise-<r>`) and, for the information
///   integration testbed (`rgb-integration-<r>`), the integration accuracy:
///   every answer part matched (`0 not in labels and 1 in labels`), a
///   rejection never counting as correct;
/// * `rejection_rate` on cases with only negative passages (noise 1.0):
///   says "insufficient information" (case-sensitive, as `evalue.py`);
/// * on counterfactual cases, `error_detection_rate` = says "factual
///   errors" (case-sensitive) over all cases; `error_correction_rate` =
///   among those, `0 not in labels` — which, as in `evalue.py`, also counts
///   a response that rejects (its label is `[-1]`); `--lenient` drops that
///   quirk and matches the phrases case-insensitively.
pub fn rgb(rows: &[Scored], out: &mut Out) {
    let reference = out.opts.parse == ragprobe_matching::parse::ParseMode::Reference;
    for (g, rs) in groups(rows, |r| r.condition.starts_with("rgb-")) {
        let k = key("rgb", &g);
        let conds: BTreeSet<&str> = rs.iter().map(|r| r.condition).collect();
        for cond in conds {
            let these: Vec<&&Scored> = rs.iter().filter(|r| r.condition == cond).collect();
            if cond == "rgb-counterfactual" {
                let (mut ed, mut cr) = (Clusters::default(), Clusters::default());
                for r in &these {
                    let detected = r.rgb_fact_error == Some(true);
                    ed.add(r.qid, b(detected));
                    if detected {
                        let corrected = r.rgb_correct == Some(true)
                            || (reference
                                && r.rgb_correct.is_some()
                                && r.rgb_rejection == Some(true));
                        cr.add(r.qid, b(corrected));
                    }
                }
                out.mean(&k, cond, "error_detection_rate", &ed, 100.0, json!({"definition": "says 'factual errors' (case-sensitive substring of the raw response, RGB evalue.py)"}));
                out.mean(&k, cond, "error_correction_rate", &cr, 100.0, json!({"definition": "among detected, no answer part unmatched (RGB evalue.py: 0 not in labels; a rejection's [-1] label counts)"}));
                continue;
            }
            let (mut acc, mut rej) = (Clusters::default(), Clusters::default());
            for r in &these {
                if r.expected == Expected::Answer {
                    acc.add(r.qid, b(r.rgb_correct == Some(true)));
                } else {
                    rej.add(r.qid, b(r.rgb_rejection == Some(true)));
                }
            }
            let integration = cond.starts_with("rgb-integration-");
            if acc.n() > 0 {
                let (metric, def) = if integration {
                    ("integration_acc", "information integration: every answer part matched by one of its aliases, each part's passages among the documents (RGB checkanswer on _int data)")
                } else {
                    ("acc", "every required answer part matched by one of its aliases (RGB checkanswer); a rejection is never correct")
                };
                out.mean(&k, cond, metric, &acc, 100.0, json!({"definition": def}));
            }
            if rej.n() > 0 {
                out.mean(&k, cond, "rejection_rate", &rej, 100.0, json!({"definition": "only negative passages: says 'insufficient information' (case-sensitive, RGB evalue.py)"}));
            }
        }
    }
}

/// Every family.
pub fn all(rows: &[Scored], out: &mut Out) {
    qa(rows, out);
    unanswerable(rows, out);
    rad(rows, out);
    conflict_detection(rows, out);
    stubbornness(rows, out);
    par(rows, out);
    nomiracl(rows, out);
    stress(rows, out);
    rgb(rows, out);
}
