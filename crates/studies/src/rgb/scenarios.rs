//! RGB's scenarios: the noise mix of positive and negative passages at
//! each noise rate (information integration when the answer has parts) and
//! the counterfactual cases, as its `processdata` composes them.

use ragprobe_artifact::{CaseDoc, CaseRow, ContextRow, DocSource, Expected, QuestionRow};
use ragprobe_perturb::{doc, rng_for, Builder, Result, Scenario};
use rand::seq::SliceRandom;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// `rgb-noise`: RGB's mix of positive and negative passages at each noise rate
/// (information integration when the answer has parts).
pub struct RgbNoise;
/// `rgb-counterfactual`: RGB's counterfactual passages topped up with negatives, shuffled.
pub struct RgbCounterfactual;

impl Scenario for RgbNoise {
    fn name(&self) -> &'static str {
        "rgb-noise"
    }
    fn build(&self, b: &mut Builder<'_>, q: &QuestionRow) -> Result<Vec<CaseRow>> {
        Ok(b.opts
            .noise_rates
            .clone()
            .into_iter()
            .filter_map(|r| rgb_noise(b, q, r))
            .collect())
    }
}

impl Scenario for RgbCounterfactual {
    fn name(&self) -> &'static str {
        "rgb-counterfactual"
    }
    fn build(&self, b: &mut Builder<'_>, q: &QuestionRow) -> Result<Vec<CaseRow>> {
        rgb_counterfactual(b, q, self.name())
    }
}

/// rgb-counterfactual: the counterfactual passages, topped up with
/// negatives, shuffled.
fn rgb_counterfactual<'a>(
    b: &mut Builder<'a>,
    q: &QuestionRow,
    s: &'static str,
) -> Result<Vec<CaseRow>> {
    let opts = b.opts;
    let all = b.contexts(&q.qid);
    let wrong = with_relevance(all, "counterfactual");
    if wrong.is_empty() {
        b.skip(s, "no counterfactual passages (positive_wrong)");
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
    let mut case = b.base_case(q, s, picked, Expected::Conflict, params);
    case.foil = q.fake_answers.as_ref().and_then(|f| f.first().cloned());
    Ok(vec![case])
}

/// RGB's noise mix (Chen et al. 2024, `evalue.py`): of `n` passages,
/// `ceil(n * r)` negatives and the rest positives, capped by what the
/// item has (the shortfall filled from the other list); noise 1.0 means
/// negatives only and the expected behaviour is to reject. Shuffled.
fn rgb_noise<'a>(b: &mut Builder<'a>, q: &QuestionRow, rate: f64) -> Option<CaseRow> {
    let all = b.contexts(&q.qid);
    if all.iter().any(|c| answer_part(c).is_some()) {
        return rgb_integration(b, q, rate);
    }
    let pos = with_relevance(all, "relevant");
    let neg = with_relevance(all, "non_relevant");
    let n = b.opts.rgb_passages;
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
        b.skip(RgbNoise.name(), "not enough positive or negative passages");
        return None;
    }
    let docs = shuffled(b, q, &condition, pos.iter().take(pos_num).copied(), &neg, neg_num);
    let expected = if docs.iter().any(|d| d.source == DocSource::Positive) {
        Expected::Answer
    } else {
        Expected::Unanswerable
    };
    let params = json!({"seed": b.opts.seed, "noise_rate": rate, "passages": n, "positives": pos_num.min(pos.len()), "negatives": neg_num.min(neg.len()),
        "order": docs.iter().map(|d| d.doc_id.as_str()).collect::<Vec<_>>()});
    Some(b.base_case(q, &condition, docs, expected, params))
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
fn rgb_integration<'a>(b: &mut Builder<'a>, q: &QuestionRow, rate: f64) -> Option<CaseRow> {
    let all = b.contexts(&q.qid);
    let condition = format!("rgb-integration-{}", fmt_rate(rate));
    let mut parts: BTreeMap<usize, Vec<&ContextRow>> = BTreeMap::new();
    for c in all.iter().copied() {
        if let Some(i) = answer_part(c) {
            parts.entry(i).or_default().push(c);
        }
    }
    let neg = with_relevance(all, "non_relevant");
    let n = b.opts.rgb_passages;
    let pos_num = n - ((n as f64 * rate).ceil() as usize).min(n);
    let mut rng = rng_for(b.opts.seed, &q.qid, &format!("{condition}:parts"));
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
    let docs = shuffled(b, q, &condition, picked.into_iter(), &neg, neg_num);
    let params = json!({"seed": b.opts.seed, "noise_rate": rate, "passages": n, "positives": positives, "negatives": neg_num.min(neg.len()), "parts": lists.len(),
        "order": docs.iter().map(|d| d.doc_id.as_str()).collect::<Vec<_>>()});
    Some(b.base_case(q, &condition, docs, Expected::Answer, params))
}

/// The case's passages: `positives`, then the first `neg_num` of `neg`,
/// shuffled by the generator of (seed, qid, `<condition>:order`) — RGB's
/// `random.shuffle(docs)` after `positive + negative`.
fn shuffled<'a>(
    b: &Builder<'a>,
    q: &QuestionRow,
    condition: &str,
    positives: impl Iterator<Item = &'a ContextRow>,
    neg: &[&'a ContextRow],
    neg_num: usize,
) -> Vec<CaseDoc> {
    let mut docs: Vec<CaseDoc> = positives.map(|c| doc(c, DocSource::Positive)).collect();
    docs.extend(neg.iter().take(neg_num).map(|c| doc(c, DocSource::Negative)));
    docs.shuffle(&mut rng_for(b.opts.seed, &q.qid, &format!("{condition}:order")));
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
