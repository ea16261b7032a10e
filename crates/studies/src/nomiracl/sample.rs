//! NoMIRACL's query sample (`NoMIRACLDataLoader.load_data_sample`): which
//! relevant and non-relevant queries the reference evaluates, drawn with
//! CPython's generator ([`PyRandom`]) exactly as it draws them. Asked for
//! with the perturb option `nomiracl_sample` (`--nomiracl-sample`).

use ragprobe_artifact::QuestionRow;
use ragprobe_perturb::pyrandom::PyRandom;
use ragprobe_perturb::{PerturbError, QuestionSample, Result, StudyOptions};

/// The perturb option that asks for the sample (null: every query); the
/// recipe always records it, so ids are those of the runs before it moved
/// here.
pub const OPTION: &str = "nomiracl_sample";

/// NoMIRACL's query sample (reference `load_data_sample`): the two ratios,
/// an optional cap per subset (`max_sample_pool`) and the seed (42 there);
/// drawn from each subset's queries in their input (qrels) order.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
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

impl NomiraclSample {
    /// The reference's `random_seed`.
    pub const SEED: u64 = 42;

    /// Record `sample` (None: every query) in `opts`.
    pub fn set(sample: Option<NomiraclSample>, opts: &mut StudyOptions) {
        opts.set(OPTION, sample);
    }
}

/// The registered sample: applied when [`OPTION`] is set.
pub struct Sample;

impl QuestionSample for Sample {
    /// The relevant and non_relevant questions of `selected` that the
    /// reference's draw keeps, in their order.
    fn draw<'q>(
        &self,
        opts: &StudyOptions,
        selected: Vec<&'q QuestionRow>,
    ) -> Result<Vec<&'q QuestionRow>> {
        let Some(ns) = opts.get::<NomiraclSample>(OPTION)? else {
            return Ok(selected);
        };
        for r in [ns.relevant_ratio, ns.non_relevant_ratio] {
            if !(0.0..=1.0).contains(&r) {
                return Err(PerturbError::Invalid(format!(
                    "option `{OPTION}`: ratio {r} is outside [0, 1]"
                )));
            }
        }
        let subset = |name: &str| -> Vec<&'q QuestionRow> {
            selected
                .iter()
                .copied()
                .filter(|q| q.subset.as_deref() == Some(name))
                .collect()
        };
        let (rel, non) = (subset("relevant"), subset("non_relevant"));
        let (ri, ni) = nomiracl_sample(
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
        Ok(selected
            .into_iter()
            .filter(|q| keep.contains(q.qid.as_str()))
            .collect())
    }
}

/// NoMIRACL's query sample (`NoMIRACLDataLoader.load_data_sample`): how
/// many relevant and non-relevant queries to draw from pools of `n_rel`
/// and `n_non`, for the two ratios and an optional cap, exactly as the
/// reference computes them (Python `int()` truncation included).
pub fn nomiracl_sample_counts(
    n_rel: usize,
    n_non: usize,
    rel_ratio: f64,
    non_ratio: f64,
    max_pool: Option<usize>,
) -> (usize, usize) {
    let (mut rel, mut non) = (n_rel, n_non);
    if rel_ratio == 0.0 || non_ratio == 0.0 {
        if rel_ratio == 0.0 {
            rel = 0;
        }
        if non_ratio == 0.0 {
            non = 0;
        }
    } else {
        let mut hyp_non = (rel as f64 * (non_ratio / rel_ratio)) as usize;
        let mut hyp_rel = (non as f64 * (rel_ratio / non_ratio)) as usize;
        if hyp_rel > n_rel {
            hyp_rel = n_rel;
            non = (hyp_rel as f64 * (non_ratio / rel_ratio)) as usize;
        }
        if hyp_non > n_non {
            hyp_non = n_non;
            rel = (hyp_non as f64 * (rel_ratio / non_ratio)) as usize;
        }
        if rel + hyp_non > hyp_rel + non {
            non = hyp_non;
        } else {
            rel = hyp_rel;
        }
    }
    if let Some(m) = max_pool {
        rel = rel.min(m);
        non = non.min(m);
    }
    (rel, non)
}

/// The reference's draw: `random.seed(seed)`, then `random.sample` of the
/// relevant pool, then of the non-relevant pool, from one stream. Pools are
/// in qrels order. Returns the chosen indices of each pool.
pub fn nomiracl_sample(
    n_rel: usize,
    n_non: usize,
    rel_ratio: f64,
    non_ratio: f64,
    max_pool: Option<usize>,
    seed: u64,
) -> (Vec<usize>, Vec<usize>) {
    let (k_rel, k_non) = nomiracl_sample_counts(n_rel, n_non, rel_ratio, non_ratio, max_pool);
    let mut r = PyRandom::new(seed);
    let rel = r.sample_indices(n_rel, k_rel.min(n_rel));
    let non = r.sample_indices(n_non, k_non.min(n_non));
    (rel, non)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `load_data_sample`'s counts, worked by hand from its code.
    #[test]
    fn sample_counts_as_the_reference() {
        // 0.5/0.5 with 10 relevant, 5 non-relevant: hyp_non = 10 > 5 -> 5,
        // rel = 5; hyp_rel = 5; 5 + 5 = 5 + 5 -> (hyp_rel, non) = (5, 5).
        assert_eq!(nomiracl_sample_counts(10, 5, 0.5, 0.5, None), (5, 5));
        // 0.01/0.99 with 300 and 400: hyp_non = int(300 * 99) > 400 -> 400,
        // rel = int(400 / 99) = 4; hyp_rel = int(400 / 99) = 4; 4 + 400 = 4 + 400
        // -> (4, 400).
        assert_eq!(nomiracl_sample_counts(300, 400, 0.01, 0.99, None), (4, 400));
        assert_eq!(
            nomiracl_sample_counts(300, 400, 0.5, 0.5, Some(250)),
            (250, 250)
        );
        assert_eq!(nomiracl_sample_counts(300, 400, 0.0, 0.5, None), (0, 400));
        // The draw continues one stream: the non-relevant sample is the
        // second `random.sample` after `random.seed(42)` (see matches_cpython).
        // Counts (1000, 571) capped at 30 each; CPython: seed(42);
        // sample(range(1000), 30)[:3] = [654, 114, 25], then
        // sample(range(700), 30)[:3] = [558, 429, 225].
        assert_eq!(
            nomiracl_sample_counts(1000, 700, 0.03, 12.0 / 700.0, None),
            (1000, 571)
        );
        let (rel, non) = nomiracl_sample(1000, 700, 0.03, 12.0 / 700.0, Some(30), 42);
        assert_eq!((rel.len(), non.len()), (30, 30));
        assert_eq!(&rel[..3], &[654, 114, 25]);
        assert_eq!(&non[..3], &[558, 429, 225]);
    }

    /// Unset (or null) keeps every question; a ratio outside [0, 1] is
    /// refused naming the option; a set sample keeps a sub-sequence.
    #[test]
    fn the_sample_applies_only_when_asked_for() {
        let qs: Vec<QuestionRow> = (0..6)
            .map(|i| QuestionRow {
                qid: format!("q{i}"),
                subset: Some(if i % 2 == 0 { "relevant" } else { "non_relevant" }.into()),
                ..Default::default()
            })
            .collect();
        let all: Vec<&QuestionRow> = qs.iter().collect();
        let mut o = StudyOptions::default();
        assert_eq!(Sample.draw(&o, all.clone()).unwrap().len(), 6);
        NomiraclSample::set(None, &mut o);
        assert_eq!(Sample.draw(&o, all.clone()).unwrap().len(), 6);
        let ns = |r: f64| NomiraclSample {
            relevant_ratio: r,
            non_relevant_ratio: 0.5,
            max_pool: Some(2),
            seed: NomiraclSample::SEED,
        };
        NomiraclSample::set(Some(ns(1.5)), &mut o);
        let e = Sample.draw(&o, all.clone()).unwrap_err().to_string();
        assert!(e.contains("nomiracl_sample") && e.contains("1.5"), "{e}");
        NomiraclSample::set(Some(ns(0.5)), &mut o);
        let kept = Sample.draw(&o, all.clone()).unwrap();
        assert_eq!(kept.len(), 4, "two of each subset (max_pool 2)");
        let pos: Vec<usize> = kept
            .iter()
            .map(|k| all.iter().position(|q| q.qid == k.qid).unwrap())
            .collect();
        assert!(pos.windows(2).all(|w| w[0] < w[1]), "input order kept: {pos:?}");
    }
}
