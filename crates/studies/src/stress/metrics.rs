//! Seed 002 (RAG-Stress): misleading and override rates on the
//! closed-book strata, paired contrasts, Strict−Soft, the common stratum.

use ragprobe_artifact::condition;
use ragprobe_score::metrics::Matcher;
use ragprobe_score::metrics::{b, role_in, Clusters, Key, Out};
use ragprobe_score::scored::Scored;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

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
/// ([`KMatcher`](ragprobe_score::metrics::KMatcher); recorded in every row's details as `k_matcher`).
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
