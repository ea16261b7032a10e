//! Training the coarse quantizer: seeded k-means over a sample, with the
//! batch-invariant kernels; assignment of vectors and queries to cells.

use super::*;

/// Training vectors for `nlist` cells out of `total`.
pub(super) fn train_rows(total: u64, nlist: usize) -> usize {
    let want = (TRAIN_PER_CELL * nlist).min(TRAIN_MAX).max(nlist);
    want.min(total as usize)
}

/// Scales `v` to unit length (a zero vector stays zero).
pub(super) fn normalize(v: &mut [f32]) {
    let norm = v
        .iter()
        .map(|x| (*x as f64) * (*x as f64))
        .sum::<f64>()
        .sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x = (*x as f64 / norm) as f32);
    }
}

/// For every vector of `vectors` (row-major, `dim` wide), in parallel
/// chunks: its inner products with every centroid, handed to `pick` (with
/// a per-thread scratch from `scratch`), which appends that vector's
/// cells to the output; outputs in vector order.
pub(super) fn by_centroid_scores<S>(
    isa: Isa,
    vectors: &[f32],
    dim: usize,
    centroids: PanelsRef<'_>,
    scratch: impl Fn() -> S + Sync + Send,
    pick: impl Fn(&mut S, &[f32], &mut Vec<u32>) + Sync + Send,
) -> Vec<u32> {
    let nlist = centroids.len();
    vectors
        .par_chunks(ASSIGN_CHUNK * dim)
        .map_init(
            || (Vec::new(), scratch()),
            |(scores, s): &mut (Vec<f32>, S), chunk| {
                let t = chunk.len() / dim;
                scores.resize(t * nlist, 0.0);
                inner_products_serial(isa, chunk, t, centroids, scores);
                let mut out = Vec::with_capacity(t);
                for row in scores.chunks_exact(nlist) {
                    pick(s, row, &mut out);
                }
                out
            },
        )
        .collect::<Vec<_>>()
        .concat()
}

/// The nearest centroid (largest inner product; ties to the lower cell)
/// of every vector of `vectors` (row-major, `dim` wide), in parallel.
pub(super) fn nearest(isa: Isa, vectors: &[f32], dim: usize, centroids: PanelsRef<'_>) -> Vec<u32> {
    by_centroid_scores(
        isa,
        vectors,
        dim,
        centroids,
        || (),
        |_, s, out| out.push(argmax(s)),
    )
}

/// The `nprobe` nearest cells of each query (unordered), `nprobe` apiece.
pub(super) fn probes(
    isa: Isa,
    queries: &[f32],
    dim: usize,
    centroids: PanelsRef<'_>,
    nprobe: usize,
) -> Vec<u32> {
    let nlist = centroids.len();
    by_centroid_scores(isa, queries, dim, centroids, Vec::new, |order, s, out| {
        order.clear();
        order.extend(0..nlist as u32);
        if nprobe < nlist {
            order.select_nth_unstable_by(nprobe - 1, |&a, &b| {
                s[b as usize].total_cmp(&s[a as usize]).then(a.cmp(&b))
            });
        }
        out.extend_from_slice(&order[..nprobe]);
    })
}

/// Spherical k-means on the rows of `sample`: `nlist` unit centroids
/// (row-major) and the rounds run.
pub(super) fn train(
    isa: Isa,
    sample: &[f32],
    dim: usize,
    nlist: usize,
    progress: bool,
) -> (Vec<f32>, usize) {
    use rand::seq::index::sample as pick;
    let s = sample.len() / dim;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(SEED);
    let mut first = pick(&mut rng, s, nlist).into_vec();
    first.sort_unstable();
    let mut centroids: Vec<f32> = first
        .iter()
        .flat_map(|&i| sample[i * dim..(i + 1) * dim].iter().copied())
        .collect();
    centroids.chunks_exact_mut(dim).for_each(normalize);
    let bar = progress_bar(progress, TRAIN_ROUNDS as u64, "ivf k-means", "rounds");
    let mut assign: Vec<u32> = Vec::new();
    let mut panels = Panels::default();
    let mut rounds = 0;
    while rounds < TRAIN_ROUNDS {
        panels.pack(&centroids, nlist, dim);
        let next = nearest(isa, sample, dim, panels.view());
        rounds += 1;
        bar.inc(1);
        if next == assign {
            break;
        }
        assign = next;
        centroids = means(sample, dim, &assign, nlist, &centroids);
    }
    bar.finish_and_clear();
    (centroids, rounds)
}

/// The indices of `cells` (each below `nlist`) grouped by cell, in order
/// within a cell (a counting sort): cell `c`'s are
/// `members[start[c]..start[c + 1]]`.
pub(super) fn group(cells: &[u32], nlist: usize) -> (Vec<usize>, Vec<u32>) {
    let mut start = vec![0usize; nlist + 1];
    for &c in cells {
        start[c as usize + 1] += 1;
    }
    for j in 0..nlist {
        start[j + 1] += start[j];
    }
    let mut next = start.clone();
    let mut members = vec![0u32; cells.len()];
    for (i, &c) in cells.iter().enumerate() {
        members[next[c as usize]] = i as u32;
        next[c as usize] += 1;
    }
    (start, members)
}

/// The k-means update: each cell's centroid becomes the normalised sum of
/// its members (summed in f64, in sample order); an empty cell then takes
/// half of the largest cell: both get its centroid, nudged apart by
/// ±[`SPLIT_EPS`] on alternate elements (FAISS's rule).
pub(super) fn means(
    sample: &[f32],
    dim: usize,
    assign: &[u32],
    nlist: usize,
    old: &[f32],
) -> Vec<f32> {
    let (start, members) = group(assign, nlist);
    let mut centroids = old.to_vec();
    centroids
        .par_chunks_mut(dim)
        .enumerate()
        .for_each(|(j, c)| {
            let m = &members[start[j]..start[j + 1]];
            if m.is_empty() {
                return;
            }
            let mut acc = vec![0f64; dim];
            for &i in m {
                let v = &sample[i as usize * dim..(i as usize + 1) * dim];
                acc.iter_mut().zip(v).for_each(|(a, x)| *a += *x as f64);
            }
            let norm = acc.iter().map(|a| a * a).sum::<f64>().sqrt();
            if norm > 0.0 {
                c.iter_mut()
                    .zip(&acc)
                    .for_each(|(c, a)| *c = (a / norm) as f32);
            }
        });
    let mut size: Vec<usize> = (0..nlist).map(|j| start[j + 1] - start[j]).collect();
    for j in 0..nlist {
        if size[j] > 0 {
            continue;
        }
        let big = (0..nlist).fold(0, |b, i| if size[i] > size[b] { i } else { b });
        let (lo, hi) = (j.min(big), j.max(big));
        let (head, tail) = centroids.split_at_mut(hi * dim);
        let (a, b) = (&mut head[lo * dim..(lo + 1) * dim], &mut tail[..dim]);
        let (empty, large) = if j < big { (a, b) } else { (b, a) };
        empty.copy_from_slice(large);
        for d in 0..dim {
            let up = if d % 2 == 0 {
                1.0 + SPLIT_EPS
            } else {
                1.0 - SPLIT_EPS
            };
            empty[d] *= up;
            large[d] *= 2.0 - up;
        }
        normalize(empty);
        normalize(large);
        size[j] = size[big] / 2;
        size[big] -= size[j];
    }
    centroids
}
