//! External clustering metrics: clustering accuracy (best one-to-one matching of clusters to
//! classes, Xu et al. 2005) and the Rand index (Rand 1971).
//!
//! Both work on the contingency table `N[c][l]` (points of cluster `c` with class `l`):
//! accuracy is `max over matchings sum_c N[c][pi(c)] / n`, found by the Hungarian algorithm
//! (`O(r^3)` for `r = max(#clusters, #classes)`); the Rand index counts agreeing pairs as
//! `(C(n,2) + 2 sum N_cl^2/2 - sum a_c^2/2 - sum b_l^2/2 ...)` in closed form, `O(n + r^2)`.
// Index loops over paired arrays (labels, duals, rows) read like the formulas.
#![allow(clippy::needless_range_loop)]

/// Contingency table of cluster ids (`0..`) against class labels (in first-appearance order).
fn contingency(pred: &[usize], truth: &[f64]) -> Vec<Vec<u64>> {
    let mut classes: Vec<f64> = Vec::new();
    for &t in truth {
        if !classes.contains(&t) {
            classes.push(t);
        }
    }
    let nc = pred.iter().copied().max().map_or(0, |m| m + 1);
    let mut n = vec![vec![0u64; classes.len()]; nc];
    for (&p, &t) in pred.iter().zip(truth) {
        let l = classes.iter().position(|&c| c == t).unwrap_or(0);
        n[p][l] += 1;
    }
    n
}

/// Clustering accuracy in [0, 1]: the fraction of points whose cluster maps to their class
/// under the best one-to-one cluster-to-class matching. 0 for empty input or unequal lengths.
pub fn clustering_accuracy(pred: &[usize], truth: &[f64]) -> f64 {
    if pred.is_empty() || pred.len() != truth.len() {
        return 0.0;
    }
    let table = contingency(pred, truth);
    let r = table.len().max(table.first().map_or(0, |t| t.len()));
    // Maximize matches = minimize (max - N) on an r x r padded cost matrix.
    let big = table.iter().flatten().copied().max().unwrap_or(0) as i64;
    let cost: Vec<Vec<i64>> = (0..r)
        .map(|i| {
            (0..r)
                .map(|j| {
                    big - table
                        .get(i)
                        .and_then(|row| row.get(j))
                        .copied()
                        .unwrap_or(0) as i64
                })
                .collect()
        })
        .collect();
    let assign = hungarian(&cost);
    let matched: u64 = assign
        .iter()
        .enumerate()
        .map(|(i, &j)| {
            table
                .get(i)
                .and_then(|row| row.get(j))
                .copied()
                .unwrap_or(0)
        })
        .sum();
    matched as f64 / pred.len() as f64
}

/// Minimum-cost perfect assignment of an `r x r` matrix (rows to columns), Hungarian algorithm
/// with potentials (Kuhn-Munkres, `O(r^3)`). Returns the column of each row.
pub fn hungarian(cost: &[Vec<i64>]) -> Vec<usize> {
    let r = cost.len();
    if r == 0 {
        return Vec::new();
    }
    const INF: i64 = i64::MAX / 4;
    // 1-based arrays; p[j] = row matched to column j.
    let mut u = vec![0i64; r + 1];
    let mut v = vec![0i64; r + 1];
    let mut p = vec![0usize; r + 1];
    let mut way = vec![0usize; r + 1];
    for i in 1..=r {
        p[0] = i;
        let mut j0 = 0usize;
        let mut minv = vec![INF; r + 1];
        let mut used = vec![false; r + 1];
        loop {
            used[j0] = true;
            let i0 = p[j0];
            let mut delta = INF;
            let mut j1 = 0usize;
            for j in 1..=r {
                if !used[j] {
                    let cur = cost[i0 - 1][j - 1] - u[i0] - v[j];
                    if cur < minv[j] {
                        minv[j] = cur;
                        way[j] = j0;
                    }
                    if minv[j] < delta {
                        delta = minv[j];
                        j1 = j;
                    }
                }
            }
            for j in 0..=r {
                if used[j] {
                    u[p[j]] += delta;
                    v[j] -= delta;
                } else {
                    minv[j] -= delta;
                }
            }
            j0 = j1;
            if p[j0] == 0 {
                break;
            }
        }
        loop {
            let j1 = way[j0];
            p[j0] = p[j1];
            j0 = j1;
            if j0 == 0 {
                break;
            }
        }
    }
    let mut out = vec![0usize; r];
    for j in 1..=r {
        if p[j] > 0 {
            out[p[j] - 1] = j - 1;
        }
    }
    out
}

/// Rand index in [0, 1]: the fraction of the `n(n-1)/2` pairs on which the clustering and the
/// classes agree (same/same or different/different). 1 for fewer than two points.
pub fn rand_index(pred: &[usize], truth: &[f64]) -> f64 {
    let n = pred.len().min(truth.len()) as u64;
    if n < 2 {
        return 1.0;
    }
    let table = contingency(&pred[..n as usize], &truth[..n as usize]);
    let pairs = |k: u64| k * k.saturating_sub(1) / 2;
    let mut same_both = 0u64;
    let mut rows = 0u64;
    let mut cols = vec![0u64; table.first().map_or(0, |t| t.len())];
    for row in &table {
        let mut a = 0u64;
        for (j, &v) in row.iter().enumerate() {
            same_both += pairs(v);
            a += v;
            cols[j] += v;
        }
        rows += pairs(a);
    }
    let colp: u64 = cols.iter().map(|&b| pairs(b)).sum();
    let total = pairs(n);
    // Agreements = pairs together in both + pairs apart in both.
    let apart_both = total + same_both - rows - colp;
    (same_both + apart_both) as f64 / total as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute_accuracy(pred: &[usize], truth: &[f64]) -> f64 {
        let t = contingency(pred, truth);
        let r = t.len().max(t[0].len());
        let mut perm: Vec<usize> = (0..r).collect();
        let mut best = 0u64;
        permute(&mut perm, 0, &mut |p| {
            let s: u64 = (0..t.len())
                .map(|i| t[i].get(p[i]).copied().unwrap_or(0))
                .sum();
            best = best.max(s);
        });
        best as f64 / pred.len() as f64
    }

    fn permute(v: &mut Vec<usize>, k: usize, f: &mut dyn FnMut(&[usize])) {
        if k == v.len() {
            f(v);
            return;
        }
        for i in k..v.len() {
            v.swap(k, i);
            permute(v, k + 1, f);
            v.swap(k, i);
        }
    }

    fn brute_rand(pred: &[usize], truth: &[f64]) -> f64 {
        let n = pred.len();
        let mut agree = 0;
        let mut total = 0;
        for i in 0..n {
            for j in i + 1..n {
                total += 1;
                if (pred[i] == pred[j]) == (truth[i] == truth[j]) {
                    agree += 1;
                }
            }
        }
        agree as f64 / total as f64
    }

    #[test]
    fn hungarian_and_closed_form_match_brute_force() {
        let mut s = 12345u64;
        let mut next = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 33) as usize
        };
        for trial in 0..200 {
            let n = 5 + trial % 40;
            let k = 1 + trial % 5;
            let c = 1 + (trial / 5) % 4;
            let pred: Vec<usize> = (0..n).map(|_| next() % k).collect();
            let truth: Vec<f64> = (0..n).map(|_| (next() % c) as f64).collect();
            let a = clustering_accuracy(&pred, &truth);
            assert!((a - brute_accuracy(&pred, &truth)).abs() < 1e-12);
            assert!((rand_index(&pred, &truth) - brute_rand(&pred, &truth)).abs() < 1e-12);
        }
    }

    #[test]
    fn perfect_and_swapped_labels() {
        let truth = [1.0, 1.0, -1.0, -1.0, -1.0];
        assert_eq!(clustering_accuracy(&[1, 1, 0, 0, 0], &truth), 1.0);
        assert_eq!(clustering_accuracy(&[0, 0, 1, 1, 1], &truth), 1.0);
        assert_eq!(rand_index(&[0, 0, 1, 1, 1], &truth), 1.0);
        assert!((clustering_accuracy(&[0, 0, 0, 0, 0], &truth) - 0.6).abs() < 1e-12);
    }
}
