//! Clusters of rows for AID: a partition of `0..n` kept as contiguous ranges of one permutation,
//! per-cluster sums, splitting by side codes, and the paper's one-iteration k-means.
//!
//! Every cluster is a range `members[start[k]..start[k + 1]]`. Clusters are only ever split
//! (never merged): a violating cluster's range is reordered in place (stable, by side code) and
//! cut into consecutive sub-ranges, so the list stays sorted by start. All per-cluster work runs in
//! parallel over clusters and sums each cluster's rows in their stored order, so results do not
//! depend on the thread count.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

pub use crate::data::ops::det_sum;

use crate::data::{Features, Row};
use crate::error::DataError;

/// A partition of the rows `0..n` into clusters.
#[derive(Debug, Clone, PartialEq)]
pub struct Clusters {
    members: Vec<u32>,
    start: Vec<usize>,
}

impl Clusters {
    /// From a cluster id per row (`assign[i] < k`); empty ids are dropped, clusters keep the order
    /// of their ids and rows keep their order inside a cluster.
    pub fn from_assignment(assign: &[u32], k: usize) -> Self {
        let mut count = vec![0usize; k];
        for &a in assign {
            count[a as usize] += 1;
        }
        let mut offset = vec![0usize; k + 1];
        for c in 0..k {
            offset[c + 1] = offset[c] + count[c];
        }
        let mut pos = offset.clone();
        let mut members = vec![0u32; assign.len()];
        for (i, &a) in assign.iter().enumerate() {
            members[pos[a as usize]] = i as u32;
            pos[a as usize] += 1;
        }
        let mut start = vec![0usize];
        for c in 0..k {
            if count[c] > 0 {
                start.push(offset[c + 1]);
            }
        }
        Self { members, start }
    }

    /// From the stored form (the permutation of the rows and the cluster starts), checked: the
    /// members are a permutation of `0..n`, the starts rise strictly from 0 to `n`.
    pub(crate) fn from_parts(members: Vec<u32>, start: Vec<usize>) -> Result<Self, &'static str> {
        let n = members.len();
        if start.first() != Some(&0) || start.last() != Some(&n) {
            return Err("the cluster starts do not span the rows");
        }
        if start.windows(2).any(|w| w[0] >= w[1]) && n > 0 {
            return Err("an empty cluster");
        }
        if n == 0 && start.len() != 1 {
            return Err("an empty cluster");
        }
        let mut seen = vec![false; n];
        for &m in &members {
            let m = m as usize;
            if m >= n || seen[m] {
                return Err("the members are not a permutation of the rows");
            }
            seen[m] = true;
        }
        Ok(Self { members, start })
    }

    /// The permutation of the rows (clusters are consecutive ranges of it).
    pub(crate) fn members_all(&self) -> &[u32] {
        &self.members
    }

    /// The cluster starts into [`Clusters::members_all`] (length `len() + 1`).
    pub(crate) fn starts(&self) -> &[usize] {
        &self.start
    }

    /// Every row in its own cluster.
    pub fn singletons(n: usize) -> Self {
        Self {
            members: (0..n as u32).collect(),
            start: (0..=n).collect(),
        }
    }

    /// Concatenates partitions of disjoint row sets (e.g. one per class).
    pub fn concat(parts: Vec<Clusters>) -> Self {
        let mut members = Vec::new();
        let mut start = vec![0usize];
        for p in parts {
            let base = members.len();
            members.extend_from_slice(&p.members);
            start.extend(p.start[1..].iter().map(|s| s + base));
        }
        Self { members, start }
    }

    /// Maps the row ids through `ids` (for partitions built on a subset of the rows).
    pub fn relabel(mut self, ids: &[usize]) -> Self {
        for m in &mut self.members {
            *m = ids[*m as usize] as u32;
        }
        self
    }

    /// Number of clusters.
    pub fn len(&self) -> usize {
        self.start.len() - 1
    }

    /// True when there are no clusters.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of rows covered.
    pub fn n_rows(&self) -> usize {
        self.members.len()
    }

    /// The rows of cluster `k`.
    pub fn members(&self, k: usize) -> &[u32] {
        &self.members[self.start[k]..self.start[k + 1]]
    }

    /// `|C_k|`.
    pub fn size(&self, k: usize) -> usize {
        self.start[k + 1] - self.start[k]
    }

    /// Number of clusters whose rows do not all share one side code.
    pub fn count_violating(&self, side: &[u8]) -> usize {
        (0..self.len())
            .into_par_iter()
            .filter(|&k| !uniform(self.members(k), side))
            .count()
    }

    /// Splits every cluster whose rows have more than one side code into one cluster per code
    /// present (codes `< 8`); returns the number of clusters split. For each old cluster,
    /// `parent` (if given) receives the old index of every new cluster.
    pub fn split(&mut self, side: &[u8], parent: Option<&mut Vec<usize>>) -> usize {
        let k = self.len();
        let mut slices: Vec<&mut [u32]> = Vec::with_capacity(k);
        let mut rest: &mut [u32] = &mut self.members;
        for c in 0..k {
            let (a, b) = rest.split_at_mut(self.start[c + 1] - self.start[c]);
            slices.push(a);
            rest = b;
        }
        // Per cluster: the sizes of its pieces in code order (one piece if uniform).
        let pieces: Vec<Vec<usize>> = slices
            .par_iter_mut()
            .map(|s| {
                if uniform(s, side) {
                    return vec![s.len()];
                }
                let mut count = [0usize; 8];
                for &r in s.iter() {
                    count[side[r as usize] as usize & 7] += 1;
                }
                let mut at = [0usize; 8];
                for c in 1..8 {
                    at[c] = at[c - 1] + count[c - 1];
                }
                let copy: Vec<u32> = s.to_vec();
                for r in copy {
                    let c = side[r as usize] as usize & 7;
                    s[at[c]] = r;
                    at[c] += 1;
                }
                count.iter().copied().filter(|&c| c > 0).collect()
            })
            .collect();
        let mut start = vec![0usize];
        let mut split = 0;
        let mut par = Vec::new();
        for (c, p) in pieces.iter().enumerate() {
            if p.len() > 1 {
                split += 1;
            }
            for &len in p {
                start.push(start.last().copied().unwrap_or(0) + len);
                par.push(c);
            }
        }
        self.start = start;
        if let Some(out) = parent {
            *out = par;
        }
        split
    }

    /// Per-cluster sums of the rows of `x` (dense, `len() x n_cols`, row-major) and of `y`.
    ///
    /// # Errors
    /// [`DataError::DenseTooLarge`] when `len() x n_cols` values do not fit in memory.
    pub fn sums(&self, x: &Features, y: Option<&[f64]>) -> Result<(Vec<f64>, Vec<f64>), DataError> {
        x.check_dense_rows("the aggregated (per-cluster) rows", self.len())?;
        let d = x.n_cols();
        let mut sx = vec![0.0; self.len() * d];
        let mut sy = vec![0.0; self.len()];
        if d > 0 {
            sx.par_chunks_mut(d)
                .zip(sy.par_iter_mut())
                .enumerate()
                .for_each(|(k, (out, oy))| {
                    for &r in self.members(k) {
                        add_row(x.row(r as usize), out);
                        if let Some(y) = y {
                            *oy += y[r as usize];
                        }
                    }
                });
        } else if let Some(y) = y {
            sy.par_iter_mut().enumerate().for_each(|(k, oy)| {
                *oy = self.members(k).iter().map(|&r| y[r as usize]).sum();
            });
        }
        Ok((sx, sy))
    }
}

fn uniform(rows: &[u32], side: &[u8]) -> bool {
    match rows.first() {
        None => true,
        Some(&f) => {
            let s = side[f as usize];
            rows.iter().all(|&r| side[r as usize] == s)
        }
    }
}

pub(crate) fn add_row(row: Row<'_>, out: &mut [f64]) {
    match row {
        Row::Dense(v) => {
            for (o, a) in out.iter_mut().zip(v) {
                *o += a;
            }
        }
        Row::Sparse { indices, values } => {
            for (&j, &v) in indices.iter().zip(values) {
                out[j as usize] += v;
            }
        }
    }
}

/// One iteration of k-means (the paper's initial clustering): `k` distinct rows drawn with the
/// seeded generator are the first centres, every point goes to its nearest centre, the centres
/// move to their means, and every point is assigned once more. `points` is `n x dim`, row-major.
/// Returns `k' <= k` non-empty clusters as a [`Clusters`] over `0..n`.
///
/// Not [`crate::cluster::kmeans`] (Lloyd to convergence, `n_init` restarts, k-means++ seeding at
/// `O(n k d)` per restart): the paper prescribes one iteration from plain random seeds, and AID
/// calls this with `k` up to `0.05% n` on millions of rows (2,000 centres at 4e6 x 50), where the
/// 1-D path's sorted centres and binary search (`O(n log k)` per assignment) matter; the shared
/// part would be the nearest-centre scan only, whose 1-D fast path breaks ties differently.
pub fn kmeans_one_iteration(points: &[f64], dim: usize, k: usize, seed: u64) -> Clusters {
    let n = points.len().checked_div(dim).unwrap_or(0);
    let k = k.clamp(1, n.max(1));
    if n == 0 {
        return Clusters::from_assignment(&[], 0);
    }
    if k >= n {
        return Clusters::singletons(n);
    }
    // Partial Fisher-Yates over the row ids: k distinct seeds.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut ids: Vec<usize> = (0..n).collect();
    for i in 0..k {
        let j = rng.gen_range(i..n);
        ids.swap(i, j);
    }
    let mut centres: Vec<f64> = ids[..k]
        .iter()
        .flat_map(|&i| points[i * dim..(i + 1) * dim].iter().copied())
        .collect();
    let mut assign = vec![0u32; n];
    assign_nearest(points, dim, &centres, &mut assign);
    // Update step (sequential sums: deterministic).
    let mut sum = vec![0.0; k * dim];
    let mut cnt = vec![0usize; k];
    for (i, &a) in assign.iter().enumerate() {
        let a = a as usize;
        cnt[a] += 1;
        for t in 0..dim {
            sum[a * dim + t] += points[i * dim + t];
        }
    }
    for c in 0..k {
        if cnt[c] > 0 {
            for t in 0..dim {
                centres[c * dim + t] = sum[c * dim + t] / cnt[c] as f64;
            }
        }
    }
    assign_nearest(points, dim, &centres, &mut assign);
    Clusters::from_assignment(&assign, k)
}

pub(crate) fn assign_nearest(points: &[f64], dim: usize, centres: &[f64], assign: &mut [u32]) {
    let k = centres.len() / dim;
    if dim == 1 {
        // Sorted centres and a binary search: O(n log k).
        let mut order: Vec<usize> = (0..k).collect();
        order.sort_by(|&a, &b| centres[a].total_cmp(&centres[b]).then(a.cmp(&b)));
        let sorted: Vec<f64> = order.iter().map(|&c| centres[c]).collect();
        assign.par_iter_mut().enumerate().for_each(|(i, a)| {
            let v = points[i];
            let p = sorted.partition_point(|&c| c < v);
            let mut best = p.min(k - 1);
            if p > 0 && (p == k || (v - sorted[p - 1]).abs() <= (sorted[p] - v).abs()) {
                best = p - 1;
            }
            *a = order[best] as u32;
        });
        return;
    }
    assign
        .par_chunks_mut(1024)
        .enumerate()
        .for_each(|(chunk, out)| {
            for (o, a) in out.iter_mut().enumerate() {
                let i = chunk * 1024 + o;
                let p = &points[i * dim..(i + 1) * dim];
                let mut best = 0usize;
                let mut best_d = f64::INFINITY;
                for c in 0..k {
                    let q = &centres[c * dim..(c + 1) * dim];
                    let mut d = 0.0;
                    for t in 0..dim {
                        let e = p[t] - q[t];
                        d += e * e;
                    }
                    if d < best_d {
                        best_d = d;
                        best = c;
                    }
                }
                *a = best as u32;
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_by_codes_and_sums() {
        let mut c = Clusters::from_assignment(&[0, 1, 0, 1, 0], 2);
        assert_eq!(c.len(), 2);
        assert_eq!(c.members(0), &[0, 2, 4]);
        let side = [1u8, 0, 0, 0, 1];
        assert_eq!(c.count_violating(&side), 1);
        let mut parent = Vec::new();
        assert_eq!(c.split(&side, Some(&mut parent)), 1);
        assert_eq!(c.len(), 3);
        assert_eq!(parent, vec![0, 0, 1]);
        assert_eq!(c.members(0), &[2]);
        assert_eq!(c.members(1), &[0, 4]);
        assert_eq!(c.count_violating(&side), 0);
        let x = Features::Dense(
            crate::data::DenseMatrix::new(5, 1, vec![1.0, 2.0, 3.0, 4.0, 5.0]).unwrap(),
        );
        let (sx, sy) = c.sums(&x, Some(&[1.0, 1.0, 1.0, 1.0, 2.0])).unwrap();
        assert_eq!(sx, vec![3.0, 6.0, 6.0]);
        assert_eq!(sy, vec![1.0, 3.0, 2.0]);
    }

    #[test]
    fn kmeans_partitions_all_rows() {
        let pts: Vec<f64> = (0..200).map(|i| (i % 17) as f64 + 0.1 * i as f64).collect();
        for dim in [1usize, 2] {
            let c = kmeans_one_iteration(&pts, dim, 7, 3);
            assert!(c.len() <= 7 && !c.is_empty());
            let mut seen: Vec<u32> = (0..c.len()).flat_map(|k| c.members(k).to_vec()).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..(200 / dim) as u32).collect::<Vec<_>>());
        }
    }
}
