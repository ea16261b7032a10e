//! Question-clustered percentile bootstrap.
//!
//! The unit of resampling is the question (the cluster): a statistic over
//! several cases of one question (positions, policies) must not treat them
//! as independent. Each cluster contributes (sum, count); a resample draws
//! as many clusters as there are, with replacement, and the statistic is
//! sum of sums / sum of counts. The interval is the 2.5th and 97.5th
//! percentile of `b` resamples (linear interpolation between order
//! statistics, numpy's default). Seeded: the same input, `b` and seed give
//! the same interval. A sample whose values are all equal gives an interval
//! collapsed to that value.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Binomial, Distribution};
use rayon::prelude::*;

/// (sum, count) of one question's values.
pub type Cluster = (f64, f64);

/// Point estimate: sum of sums / sum of counts; None when there is no count.
pub fn point(clusters: &[Cluster]) -> Option<f64> {
    let (s, n) = clusters
        .iter()
        .fold((0.0, 0.0), |a, c| (a.0 + c.0, a.1 + c.1));
    (n > 0.0).then(|| s / n)
}

/// The distinct clusters and how many times each occurs, in a fixed order.
/// `clusters` is sorted and deduplicated in place, the counts beside it:
/// at a million questions with as many distinct F1 sums, (cluster, count)
/// pairs cost 24 MB more.
fn distinct_clusters(mut clusters: Vec<Cluster>) -> (Vec<Cluster>, Vec<u64>) {
    clusters.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let same =
        |a: &Cluster, b: &Cluster| a.0.to_bits() == b.0.to_bits() && a.1.to_bits() == b.1.to_bits();
    let mut counts: Vec<u64> = Vec::new();
    for (i, c) in clusters.iter().enumerate() {
        match counts.last_mut() {
            Some(f) if same(&clusters[i - 1], c) => *f += 1,
            _ => counts.push(1),
        }
    }
    clusters.dedup_by(|a, b| same(a, b));
    (clusters, counts)
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// 95% percentile interval of the clustered ratio statistic; None for an
/// empty sample or `b` = 0.
pub fn interval(clusters: &[Cluster], b: usize, seed: u64) -> Option<(f64, f64)> {
    // Clusters without a count are left out (a copy only when there are any).
    let clusters: std::borrow::Cow<[Cluster]> = if clusters.iter().all(|c| c.1 > 0.0) {
        clusters.into()
    } else {
        clusters
            .iter()
            .copied()
            .filter(|c| c.1 > 0.0)
            .collect::<Vec<_>>()
            .into()
    };
    if clusters.is_empty() || b == 0 {
        return None;
    }
    let k = clusters.len();
    // A resample's statistic depends only on how often each distinct
    // (sum, count) is drawn: multinomial(k, share of each). With few distinct
    // clusters (accuracy, EM: 0/1 per question) drawing those counts, one
    // binomial per distinct cluster, is exact and costs O(distinct) instead
    // of O(k) per resample.
    let (mut distinct, mut counts) = distinct_clusters(clusters.to_vec());
    let by_counts = distinct.len() * 8 <= k;
    if !by_counts {
        (distinct, counts) = Default::default();
    }
    // Resample j draws from its own ChaCha stream (seed, j): the resamples
    // run in parallel and the interval does not depend on the thread count.
    let mut stats: Vec<f64> = (0..b)
        .into_par_iter()
        .map(|j| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(j as u64);
            let (mut s, mut n) = (0.0, 0.0);
            if by_counts {
                let (mut left, mut rest) = (k as u64, k as u64);
                for (&(cs, cn), &f) in distinct.iter().zip(&counts) {
                    if left == 0 {
                        break;
                    }
                    let x = if f == rest {
                        left
                    } else {
                        Binomial::new(left, f as f64 / rest as f64)
                            .expect("a probability in [0, 1]")
                            .sample(&mut rng)
                    };
                    s += x as f64 * cs;
                    n += x as f64 * cn;
                    left -= x;
                    rest -= f;
                }
            } else {
                for _ in 0..k {
                    let c = clusters[rng.random_range(0..k)];
                    s += c.0;
                    n += c.1;
                }
            }
            s / n
        })
        .collect();
    stats.sort_by(f64::total_cmp);
    Some((percentile(&stats, 0.025), percentile(&stats, 0.975)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn degenerate_sample_collapses_to_the_point() {
        let c = vec![(1.0, 1.0); 25];
        assert_eq!(point(&c), Some(1.0));
        assert_eq!(interval(&c, 500, 3), Some((1.0, 1.0)));
    }

    #[test]
    fn fixed_seed_fixed_interval_and_it_covers_the_point() {
        let c: Vec<Cluster> = (0..40)
            .map(|i| (if i % 4 == 0 { 0.0 } else { 1.0 }, 1.0))
            .collect();
        let a = interval(&c, 2000, 7).unwrap();
        let b = interval(&c, 2000, 7).unwrap();
        assert_eq!(a, b);
        let p = point(&c).unwrap();
        assert_eq!(p, 0.75);
        assert!(a.0 < p && p < a.1, "{a:?}");
        assert!(a.0 > 0.5 && a.1 < 0.95, "{a:?}");
        // Another seed, other resamples (on values whose percentiles are
        // not confined to multiples of 1/40).
        let v: Vec<Cluster> = (0..40)
            .map(|i| ((i * 7 % 11) as f64, 1.0 + (i % 3) as f64))
            .collect();
        assert_ne!(interval(&v, 2000, 7), interval(&v, 2000, 8));
    }

    #[test]
    fn the_interval_does_not_depend_on_the_thread_count() {
        let c: Vec<Cluster> = (0..300).map(|i| ((i % 3) as f64, 2.0)).collect();
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let four = rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .unwrap();
        let a = one.install(|| interval(&c, 999, 11));
        let b = four.install(|| interval(&c, 999, 11));
        assert_eq!(a, b);
    }

    /// The multinomial path (few distinct clusters) and the draw path
    /// (many) sample the same distribution: on one 0/1 sample, forced down
    /// each path, the intervals agree to within Monte Carlo error.
    #[test]
    fn counting_distinct_clusters_gives_the_interval_drawing_does() {
        // 400 questions, 30% correct: 2 distinct clusters -> counts.
        let c: Vec<Cluster> = (0..400)
            .map(|i| (if i % 10 < 3 { 1.0 } else { 0.0 }, 1.0))
            .collect();
        let by_counts = interval(&c, 4000, 5).unwrap();
        // The same values made distinct by a vanishing offset -> draws.
        let d: Vec<Cluster> = c
            .iter()
            .enumerate()
            .map(|(i, x)| (x.0 + i as f64 * 1e-12, x.1))
            .collect();
        let by_draws = interval(&d, 4000, 5).unwrap();
        assert!(
            (by_counts.0 - by_draws.0).abs() < 0.006,
            "{by_counts:?} {by_draws:?}"
        );
        assert!(
            (by_counts.1 - by_draws.1).abs() < 0.006,
            "{by_counts:?} {by_draws:?}"
        );
        // Normal approximation of the binomial proportion: 0.3 ± 1.96·sqrt(0.3·0.7/400).
        let half = 1.96 * (0.3f64 * 0.7 / 400.0).sqrt();
        assert!((by_counts.0 - (0.3 - half)).abs() < 0.01, "{by_counts:?}");
        assert!((by_counts.1 - (0.3 + half)).abs() < 0.01, "{by_counts:?}");
    }

    #[test]
    fn empty_sample_has_no_value() {
        assert_eq!(point(&[]), None);
        assert_eq!(interval(&[], 100, 1), None);
        assert_eq!(point(&[(0.0, 0.0)]), None);
    }

    #[test]
    fn percentile_interpolates() {
        assert_eq!(percentile(&[0.0, 10.0], 0.5), 5.0);
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.25), 2.0);
    }
}
