//! RGB's scenarios: the noise mix of positive and negative passages at
//! each noise rate (information integration when the answer has parts) and
//! the counterfactual cases at each noise rate, composed and ordered as its
//! `processdata` (`evalue.py` l.12–69 at commit 65ec39e) composes them.
//!
//! RGB calls `random.seed(2333)` before each instance (`evalue.py` l.250),
//! so every instance's draws start from the same state of CPython's
//! generator. These scenarios do the same with [`PyRandom`] seeded by the
//! run's `--seed` for each question: `--seed 2333` gives RGB's passages in
//! RGB's order, case for case (checked against `processdata` itself in
//! `tests.rs`); any other seed, another order from the same rules.

use ragprobe_artifact::{CaseDoc, CaseRow, ContextRow, DocSource, Expected, QuestionRow};
use ragprobe_perturb::pyrandom::PyRandom;
use ragprobe_perturb::{doc, Builder, PerturbError, PerturbOptions, Result, Scenario, StudyOptions};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The seed RGB's `evalue.py` sets before each instance (l.250).
pub const RGB_SEED: u64 = 2333;

/// RGB's perturb options (`evalue.py`'s `--noise_rate`, `--passage_num`,
/// `--correct_rate`), recorded under `noise_rates`, `rgb_passages` and
/// `rgb_correct_rate` (the last only when not 0, which keeps the ids of
/// runs from before it existed).
#[derive(Debug, Clone, PartialEq)]
pub struct RgbOptions {
    /// The noise rates a case is built at (share of negative passages).
    pub noise_rates: Vec<f64>,
    /// Passages per case (`--passage_num`).
    pub passages: usize,
    /// rgb-counterfactual: share of the passages that are the true
    /// `positive` ones (`--correct_rate`).
    pub correct_rate: f64,
}

impl Default for RgbOptions {
    /// The noise rates of RGB's Table 1 plus rate 1 (its rejection
    /// testbed), RGB's 5 passages, no true passages among the
    /// counterfactual ones.
    fn default() -> Self {
        RgbOptions {
            noise_rates: vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0],
            passages: 5,
            correct_rate: 0.0,
        }
    }
}

impl RgbOptions {
    /// Record the options in `opts`, a repeated noise rate once (a repeat
    /// would write duplicate case ids).
    pub fn set(&self, opts: &mut StudyOptions) {
        opts.set("noise_rates", dedup(&self.noise_rates));
        opts.set("rgb_passages", self.passages);
        if self.correct_rate != 0.0 {
            opts.set("rgb_correct_rate", self.correct_rate);
        } else {
            opts.unset("rgb_correct_rate");
        }
    }

    /// `self` as the study options of a run (for callers building
    /// [`PerturbOptions`] by hand).
    pub fn study_options(&self) -> StudyOptions {
        let mut o = StudyOptions::default();
        self.set(&mut o);
        o
    }

    /// The options recorded in `opts`, each one's default where absent;
    /// an error for a rate outside [0, 1] or no passages.
    pub fn read(opts: &StudyOptions) -> Result<RgbOptions> {
        let d = RgbOptions::default();
        let o = RgbOptions {
            noise_rates: dedup(&opts.get("noise_rates")?.unwrap_or(d.noise_rates)),
            passages: opts.get("rgb_passages")?.unwrap_or(d.passages),
            correct_rate: opts.get("rgb_correct_rate")?.unwrap_or(d.correct_rate),
        };
        if let Some(r) = o.noise_rates.iter().find(|r| !(0.0..=1.0).contains(*r)) {
            return Err(PerturbError::Invalid(format!(
                "noise rate {r} is outside [0, 1]"
            )));
        }
        if !(0.0..=1.0).contains(&o.correct_rate) {
            return Err(PerturbError::Invalid(format!(
                "correct rate {} is outside [0, 1]",
                o.correct_rate
            )));
        }
        if o.passages == 0 {
            return Err(PerturbError::Invalid("--rgb-passages must be at least 1".into()));
        }
        Ok(o)
    }
}

/// `rates` with each repeated rate once, the first kept.
fn dedup(rates: &[f64]) -> Vec<f64> {
    let mut out: Vec<f64> = Vec::with_capacity(rates.len());
    for &r in rates {
        if !out.contains(&r) {
            out.push(r);
        }
    }
    out
}

/// `rgb-noise`: RGB's mix of positive and negative passages at each noise rate
/// (information integration when the answer has parts).
pub struct RgbNoise;
/// `rgb-counterfactual`: RGB's counterfactual passages at each noise rate
/// (`processdata`'s `_fact` branch).
pub struct RgbCounterfactual;

impl Scenario for RgbNoise {
    fn name(&self) -> &'static str {
        "rgb-noise"
    }
    fn check(&self, opts: &PerturbOptions) -> Result<()> {
        RgbOptions::read(&opts.study).map(drop)
    }
    fn build(&self, b: &mut Builder<'_>, q: &QuestionRow) -> Result<Vec<CaseRow>> {
        let o = RgbOptions::read(&b.opts.study)?;
        Ok(o.noise_rates
            .iter()
            .filter_map(|&r| rgb_noise(b, q, r, o.passages))
            .collect())
    }
}

impl Scenario for RgbCounterfactual {
    fn name(&self) -> &'static str {
        "rgb-counterfactual"
    }

    /// A noise rate and `--correct-rate` that leave fewer than 0
    /// counterfactual passages are refused: there `processdata`'s
    /// `random.sample(indexs, pos_num)` raises for every instance and RGB
    /// silently drops them all (`evalue.py` l.271–273).
    fn check(&self, opts: &PerturbOptions) -> Result<()> {
        let o = RgbOptions::read(&opts.study)?;
        let n = o.passages;
        for &rate in &o.noise_rates {
            let (neg, cor) = (ceil_share(n, rate), ceil_share(n, o.correct_rate));
            if neg + cor > n {
                return Err(PerturbError::Invalid(format!(
                    "rgb-counterfactual: noise rate {rate} and correct rate {} ask for {neg} negative and {cor} true passages of {n} (--rgb-passages); RGB's processdata raises there and drops every case",
                    o.correct_rate
                )));
            }
        }
        Ok(())
    }

    fn build(&self, b: &mut Builder<'_>, q: &QuestionRow) -> Result<Vec<CaseRow>> {
        let o = RgbOptions::read(&b.opts.study)?;
        Ok(o.noise_rates
            .iter()
            .filter_map(|&r| rgb_counterfactual(b, q, r, &o))
            .collect())
    }
}

/// `math.ceil(passage_num * rate)`, as `processdata` counts (l.16, l.39).
fn ceil_share(n: usize, rate: f64) -> usize {
    (n as f64 * rate).ceil() as usize
}

/// RGB's counterfactual cases (`processdata`'s `_fact` branch, `evalue.py`
/// l.38–48, then the shuffle of l.67): of `n` passages, `neg_num =
/// ceil(n * rate)` negatives, `correct_num = ceil(n * correct_rate)` true
/// passages and `pos_num = n - neg_num - correct_num` counterfactual ones.
/// `random.sample` draws `min(len(positive), pos_num)` indices of the
/// `positive` list and takes `positive_wrong` at those indices, in the
/// sample's order; when `correct_num > 0`, a second `random.sample` over
/// the unused indices (ascending) adds the true `positive` passages; then
/// the first `neg_num` negatives in file order; then `random.shuffle`.
/// Nothing is topped up: a case may hold fewer than `n` passages, as in
/// RGB. Condition `rgb-counterfactual-<rate>` (`-correct-<c>` appended
/// when the correct rate is not 0); expected `conflict` while a
/// counterfactual passage is among them, else `answer` (true passages
/// only) or `unanswerable` (negatives only, noise 1). Skipped, counted: a
/// question without `positive_wrong` passages, one whose sampled index has
/// no `positive_wrong` passage (RGB raises `IndexError` and drops it), and
/// an empty case.
fn rgb_counterfactual<'a>(
    b: &mut Builder<'a>,
    q: &QuestionRow,
    rate: f64,
    o: &RgbOptions,
) -> Option<CaseRow> {
    let s = RgbCounterfactual.name();
    let all = b.contexts(&q.qid);
    let wrong = with_relevance(all, "counterfactual");
    if wrong.is_empty() {
        b.skip(s, "no counterfactual passages (positive_wrong)");
        return None;
    }
    let pos = with_relevance(all, "relevant");
    let neg = with_relevance(all, "non_relevant");
    let (n, correct_rate) = (o.passages, o.correct_rate);
    let neg_num = ceil_share(n, rate);
    let correct_num = ceil_share(n, correct_rate);
    // `check` refused rates that leave fewer than none.
    let pos_num = n.saturating_sub(neg_num + correct_num);
    let mut rng = PyRandom::new(b.opts.seed);
    let selected = rng.sample_indices(pos.len(), pos.len().min(pos_num));
    if selected.iter().any(|&i| i >= wrong.len()) {
        b.skip(s, "fewer positive_wrong than positive passages (RGB's processdata raises IndexError)");
        return None;
    }
    let mut docs: Vec<CaseDoc> = selected
        .iter()
        .map(|&i| doc(wrong[i], DocSource::Counterfactual))
        .collect();
    let remain: Vec<usize> = (0..pos.len()).filter(|i| !selected.contains(i)).collect();
    if correct_num > 0 && !remain.is_empty() {
        let picked = rng.sample_indices(remain.len(), remain.len().min(correct_num));
        docs.extend(picked.iter().map(|&j| doc(pos[remain[j]], DocSource::Positive)));
    }
    docs.extend(neg.iter().take(neg_num).map(|c| doc(c, DocSource::Negative)));
    if docs.is_empty() {
        b.skip(s, "no passages at this rate");
        return None;
    }
    rng.shuffle(&mut docs);
    let has = |src: DocSource| docs.iter().any(|d| d.source == src);
    let expected = if has(DocSource::Counterfactual) {
        Expected::Conflict
    } else if has(DocSource::Positive) {
        Expected::Answer
    } else {
        Expected::Unanswerable
    };
    let mut condition = format!("{s}-{}", fmt_rate(rate));
    if correct_rate != 0.0 {
        condition.push_str(&format!("-correct-{}", fmt_rate(correct_rate)));
    }
    let count = |src: DocSource| docs.iter().filter(|d| d.source == src).count();
    let params = json!({"seed": b.opts.seed, "rng": "cpython", "noise_rate": rate, "correct_rate": correct_rate, "passages": n,
        "counterfactual": count(DocSource::Counterfactual), "positives": count(DocSource::Positive), "negatives": count(DocSource::Negative),
        "order": docs.iter().map(|d| d.doc_id.as_str()).collect::<Vec<_>>()});
    let mut case = b.base_case(q, &condition, docs, expected, params);
    case.foil = q.fake_answers.as_ref().and_then(|f| f.first().cloned());
    Some(case)
}

/// RGB's noise mix (`processdata`'s default branch, `evalue.py` l.49–67):
/// of `n` passages, `ceil(n * r)` negatives and the rest positives, the
/// first of each list in file order, capped by what the item has (the
/// shortfall filled from the other list, once); noise 1.0 means negatives
/// only and the expected behaviour is to reject; then `random.shuffle`.
fn rgb_noise<'a>(b: &mut Builder<'a>, q: &QuestionRow, rate: f64, n: usize) -> Option<CaseRow> {
    let all = b.contexts(&q.qid);
    if all.iter().any(|c| answer_part(c).is_some()) {
        return rgb_integration(b, q, rate, n);
    }
    let pos = with_relevance(all, "relevant");
    let neg = with_relevance(all, "non_relevant");
    let mut neg_num = ceil_share(n, rate);
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
        b.skip(RgbNoise.name(), "not enough positive or negative passages");
        return None;
    }
    let mut rng = PyRandom::new(b.opts.seed);
    let docs = shuffled(&mut rng, pos.iter().take(pos_num).copied(), &neg, neg_num);
    let expected = if docs.iter().any(|d| d.source == DocSource::Positive) {
        Expected::Answer
    } else {
        Expected::Unanswerable
    };
    let params = json!({"seed": b.opts.seed, "rng": "cpython", "noise_rate": rate, "passages": n, "positives": pos_num.min(pos.len()), "negatives": neg_num.min(neg.len()),
        "order": docs.iter().map(|d| d.doc_id.as_str()).collect::<Vec<_>>()});
    Some(b.base_case(q, &condition, docs, expected, params))
}

/// RGB's information-integration selection (`evalue.py` `processdata`
/// for `_int` files, l.19–37, the version with the `len(docs) < pos_num`
/// guard): of `n` passages, `pos_num = n - ceil(n * rate)`; each answer
/// part's positive passages are shuffled in place (`random.shuffle`, part
/// by part) and the first of every part taken; while fewer than
/// `pos_num`, the next passage of each part in turn is added (round
/// robin); then `n - len(docs)` negatives (when positive), in file order;
/// then `random.shuffle`. Every part is represented even at noise 1.0, as
/// in RGB. Condition `rgb-integration-<rate>`.
fn rgb_integration<'a>(
    b: &mut Builder<'a>,
    q: &QuestionRow,
    rate: f64,
    n: usize,
) -> Option<CaseRow> {
    let all = b.contexts(&q.qid);
    let condition = format!("rgb-integration-{}", fmt_rate(rate));
    let mut parts: BTreeMap<usize, Vec<&ContextRow>> = BTreeMap::new();
    for c in all.iter().copied() {
        if let Some(i) = answer_part(c) {
            parts.entry(i).or_default().push(c);
        }
    }
    let neg = with_relevance(all, "non_relevant");
    let pos_num = n - ceil_share(n, rate).min(n);
    let mut rng = PyRandom::new(b.opts.seed);
    let mut lists: Vec<Vec<&ContextRow>> = parts.into_values().collect();
    for l in &mut lists {
        rng.shuffle(l);
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
    let docs = shuffled(&mut rng, picked.into_iter(), &neg, neg_num);
    let params = json!({"seed": b.opts.seed, "rng": "cpython", "noise_rate": rate, "passages": n, "positives": positives, "negatives": neg_num.min(neg.len()), "parts": lists.len(),
        "order": docs.iter().map(|d| d.doc_id.as_str()).collect::<Vec<_>>()});
    Some(b.base_case(q, &condition, docs, Expected::Answer, params))
}

/// The case's passages: `positives`, then the first `neg_num` of `neg`,
/// shuffled by `rng` — RGB's `random.shuffle(docs)` after `positive +
/// negative` (l.65–67).
fn shuffled<'a>(
    rng: &mut PyRandom,
    positives: impl Iterator<Item = &'a ContextRow>,
    neg: &[&'a ContextRow],
    neg_num: usize,
) -> Vec<CaseDoc> {
    let mut docs: Vec<CaseDoc> = positives.map(|c| doc(c, DocSource::Positive)).collect();
    docs.extend(neg.iter().take(neg_num).map(|c| doc(c, DocSource::Negative)));
    rng.shuffle(&mut docs);
    docs
}

/// The passages of `all` with this relevance (`relevant`: RGB's positive
/// list; `non_relevant`: its negative list; `counterfactual`: its
/// `positive_wrong`), in their order.
fn with_relevance<'a>(all: &[&'a ContextRow], relevance: &str) -> Vec<&'a ContextRow> {
    all.iter()
        .copied()
        .filter(|c| c.relevance.as_deref() == Some(relevance))
        .collect()
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
