//! The finite candidate set `B` of ODMC: the kernel operator, balanced cuts, generators of
//! candidate labelings and label generation (the most violated labeling for given duals).
//!
//! # Balance
//! A labeling `y` in {-1,+1}^n is admissible when `|e'y - t| <= beta` (the paper's set with
//! `t = 0`; `t != 0` for the unequal halves of recursive bisection) and both clusters have at
//! least their minimum sizes ([`Balance`]). With `p` the number of `+1`s, `e'y = 2p - n`, so
//! the admissible `p` form an interval `[lo, hi]`.
//!
//! **Balanced sign-sort** ([`balanced_cut`]): `max_y sum_i c_i y_i` over admissible `y` is solved
//! exactly by sorting `c` in decreasing order and giving `+1` to the first `p` entries with
//! `p = clamp(#{c_i > 0}, lo, hi)`. Ties (`c_i = c_j`) are ordered by a secondary key (larger
//! first), then by index, so the cut is deterministic.
//!
//! # Generators (a design choice; the paper leaves `B` to "domain knowledge")
//! Every generator yields a score vector whose balanced cut is a candidate:
//! - k-means with k = 2 (k-means++ seeding, several seeds) on the points (linear kernel) or on
//!   the kernel-PCA embedding (Gaussian kernel); score `|x - c_b|^2 - |x - c_a|^2`;
//! - the leading principal directions (linear) or kernel principal components (Gaussian), by
//!   subspace iteration on the (centred) kernel operator;
//! - random projections: `X u` with `u ~ N(0, I_d)` (linear) or `K r` with `r ~ N(0, I_n)`
//!   (a random function of the RKHS, Gaussian).
//!
//! Candidates are **sign-canonical**: when both `y` and `-y` are admissible (always for
//! `t = 0`), only the one with `y_0 = +1` is kept, since `G(alpha, y) = G(alpha, -y)` and the pair
//! would cancel in the readout `sign(sum_k mu_k y_k)` (digest pitfall 2). Duplicates are dropped.
//!
//! # Label generation ([`most_violated`])
//! For duals `d = alpha1 - alpha2`, `argmin_y G(alpha, y) = argmax_y J(y)`, `J(y) = (y.d)'K(y.d)`.
//! `J` is convex in `y`, so the linearization step `y <- argmax_{y admissible} y'(d . K(d . y_old))`
//! (a balanced cut) never decreases `J`; it is iterated from several starts until it stops
//! changing. Points with `d_i = 0` do not enter `J`; they follow the sign of `K(d . y)` (the
//! labeling's own decision value) through the tie key.
// Index loops over paired arrays (labels, duals, rows) read like the formulas.
#![allow(clippy::needless_range_loop)]

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

use crate::cluster::kmeans::{self, KMeansParams};
use crate::cluster::{sq_dist, ClusterError, Points};
use crate::fit::Control;

/// Rows per chunk of the linear operator's parallel partial sums (fixed, so the summation order
/// does not depend on the thread count).
const CHUNK: usize = 2048;

/// The kernel matrix of the points being clustered, as an operator.
#[derive(Debug, Clone)]
pub enum Gram {
    /// `K = X X'` of (centred) points: products cost `O(n d)`.
    Linear(Points),
    /// A dense kernel matrix, row-major `n x n`.
    Dense {
        /// Points.
        n: usize,
        /// Values.
        k: Vec<f64>,
    },
}

/// Scratch space of [`Gram::matvec`] (allocated once per run).
#[derive(Debug, Clone, Default)]
pub struct MatvecScratch {
    w: Vec<f64>,
    partial: Vec<f64>,
}

impl Gram {
    /// Number of points.
    pub fn n(&self) -> usize {
        match self {
            Gram::Linear(p) => p.n,
            Gram::Dense { n, .. } => *n,
        }
    }
    /// `K_ii`.
    pub fn diag(&self, i: usize) -> f64 {
        match self {
            Gram::Linear(p) => p.row(i).iter().map(|v| v * v).sum(),
            Gram::Dense { n, k } => k[i * n + i],
        }
    }
    /// Scratch sized for this operator.
    pub fn scratch(&self) -> MatvecScratch {
        match self {
            Gram::Linear(p) => MatvecScratch {
                w: vec![0.0; p.d],
                partial: vec![0.0; p.n.div_ceil(CHUNK) * p.d],
            },
            Gram::Dense { .. } => MatvecScratch::default(),
        }
    }
    /// `out = K z`. Linear: `w = X'z` by fixed chunks summed in order, then `out = X w`
    /// (`4 n d` flops); dense: one row dot product per entry (`2 n^2`). Allocates nothing.
    pub fn matvec(&self, z: &[f64], out: &mut [f64], s: &mut MatvecScratch) {
        match self {
            Gram::Linear(p) => {
                let d = p.d;
                s.partial
                    .par_chunks_mut(d)
                    .enumerate()
                    .for_each(|(c, part)| {
                        part.fill(0.0);
                        let end = ((c + 1) * CHUNK).min(p.n);
                        for i in c * CHUNK..end {
                            let zi = z[i];
                            if zi != 0.0 {
                                for (a, &x) in part.iter_mut().zip(p.row(i)) {
                                    *a += zi * x;
                                }
                            }
                        }
                    });
                s.w.fill(0.0);
                for part in s.partial.chunks_exact(d) {
                    for (a, &b) in s.w.iter_mut().zip(part) {
                        *a += b;
                    }
                }
                let w = &s.w;
                out.par_chunks_mut(CHUNK).enumerate().for_each(|(c, o)| {
                    for (r, v) in o.iter_mut().enumerate() {
                        let row = p.row(c * CHUNK + r);
                        *v = row.iter().zip(w).map(|(a, b)| a * b).sum();
                    }
                });
            }
            Gram::Dense { n, k } => {
                out.par_iter_mut().enumerate().for_each(|(i, o)| {
                    *o = k[i * n..(i + 1) * n]
                        .iter()
                        .zip(z)
                        .map(|(a, b)| a * b)
                        .sum();
                });
            }
        }
    }

    /// The operator restricted to the points `idx` (linear: re-centred, since the ODM has no
    /// bias and each bisection's hyperplane should pass through its own points' mean).
    pub fn subset(&self, idx: &[usize]) -> Gram {
        match self {
            Gram::Linear(p) => Gram::Linear(p.select(idx).centered()),
            Gram::Dense { n, k } => {
                let m = idx.len();
                let mut s = Vec::with_capacity(m * m);
                for &i in idx {
                    for &j in idx {
                        s.push(k[i * n + j]);
                    }
                }
                Gram::Dense { n: m, k: s }
            }
        }
    }

    /// Largest eigenvalue of `K` by 60 power iterations from a seeded start, times 1.01 (an
    /// upper estimate used for step sizes).
    pub fn lambda_max(&self, seed: u64) -> f64 {
        let n = self.n();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x5eed);
        let mut v: Vec<f64> = (0..n).map(|_| rng.gen::<f64>() + 0.5).collect();
        let mut out = vec![0.0; n];
        let mut s = self.scratch();
        let mut lam = 0.0;
        for _ in 0..60 {
            let nv = norm(&v);
            if nv == 0.0 {
                break;
            }
            v.iter_mut().for_each(|x| *x /= nv);
            self.matvec(&v, &mut out, &mut s);
            lam = dot(&v, &out);
            std::mem::swap(&mut v, &mut out);
        }
        let trace_bound: f64 = (0..n).map(|i| self.diag(i)).sum();
        (lam * 1.01).min(trace_bound).max(1e-300)
    }
}

pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

/// Admissible numbers of `+1` labels: `[lo, hi]` (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Balance {
    /// Fewest `+1`s.
    pub lo: usize,
    /// Most `+1`s.
    pub hi: usize,
}

impl Balance {
    /// The balance `|e'y - t| <= beta` on `n` points with at least `min_pos` points labelled
    /// `+1` and `min_neg` labelled `-1`.
    ///
    /// # Errors
    /// [`ClusterError::InfeasibleBalance`] when no count satisfies everything.
    pub fn new(
        n: usize,
        t: f64,
        beta: f64,
        min_pos: usize,
        min_neg: usize,
    ) -> Result<Self, ClusterError> {
        let nf = n as f64;
        let lo = ((nf + t - beta) / 2.0 - 1e-9).ceil().max(0.0) as usize;
        let hi = ((nf + t + beta) / 2.0 + 1e-9).floor().max(-1.0);
        let lo = lo.max(min_pos);
        let hi_c = n.saturating_sub(min_neg) as f64;
        let hi = hi.min(hi_c);
        if hi < 0.0 || (lo as f64) > hi {
            let reason = if t == 0.0 && beta < 1.0 && n % 2 == 1 {
                format!(
                    "beta * n = {beta} < 1 with an odd number of points ({n}): |e'y| <= beta has no solution; use beta >= {:.6}",
                    1.0 / nf
                )
            } else {
                format!(
                    "no split of {n} points into two non-empty clusters satisfies |e'y - {t}| <= {beta}"
                )
            };
            return Err(ClusterError::InfeasibleBalance { reason });
        }
        Ok(Self {
            lo,
            hi: hi as usize,
        })
    }
    /// True when a labeling with `p` positive entries is admissible.
    pub fn admits(&self, p: usize) -> bool {
        (self.lo..=self.hi).contains(&p)
    }
}

/// Exact `argmax_y sum_i c_i y_i` over admissible `y` (ties by `key` descending, then index).
/// `order` is scratch of length `n`.
pub fn balanced_cut(c: &[f64], key: &[f64], bal: Balance, order: &mut Vec<usize>, out: &mut [i8]) {
    let n = c.len();
    order.clear();
    order.extend(0..n);
    order.sort_by(|&a, &b| {
        c[b].total_cmp(&c[a])
            .then(key[b].total_cmp(&key[a]))
            .then(a.cmp(&b))
    });
    let positive = (0..n)
        .filter(|&i| c[i] > 0.0 || (c[i] == 0.0 && key[i] > 0.0))
        .count();
    let p = positive.clamp(bal.lo, bal.hi);
    for (r, &i) in order.iter().enumerate() {
        out[i] = if r < p { 1 } else { -1 };
    }
}

/// A finite, sign-canonical, duplicate-free set of admissible labelings.
#[derive(Debug, Clone, Default)]
pub struct Pool {
    /// The labelings.
    pub labels: Vec<Vec<i8>>,
    hashes: Vec<u64>,
}

fn hash(y: &[i8]) -> u64 {
    let mut h = 0xcbf29ce484222325u64;
    for &v in y {
        h ^= v as u8 as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

impl Pool {
    /// Number of labelings.
    pub fn len(&self) -> usize {
        self.labels.len()
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }
    /// Adds `y` (made canonical when `-y` is admissible too) unless already present; returns
    /// its index when added.
    pub fn insert(&mut self, mut y: Vec<i8>, bal: Balance) -> Option<usize> {
        let n = y.len();
        let p = y.iter().filter(|&&v| v > 0).count();
        debug_assert!(bal.admits(p));
        if y.first() == Some(&-1) && bal.admits(n - p) {
            y.iter_mut().for_each(|v| *v = -*v);
        }
        let h = hash(&y);
        for (k, &hk) in self.hashes.iter().enumerate() {
            if hk == h && self.labels[k] == y {
                return None;
            }
        }
        self.labels.push(y);
        self.hashes.push(h);
        Some(self.labels.len() - 1)
    }
}

/// How many candidates each generator contributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolSpec {
    /// k-means (k = 2) runs with different seeds.
    pub kmeans: usize,
    /// Leading principal directions (linear) / kernel principal components (Gaussian).
    pub components: usize,
    /// Random projections.
    pub random: usize,
}

impl PoolSpec {
    /// The default pool: 4 k-means runs, 4 principal directions, 8 random projections.
    pub const DEFAULT: Self = Self {
        kmeans: 4,
        components: 4,
        random: 8,
    };
}

impl Default for PoolSpec {
    /// [`PoolSpec::DEFAULT`].
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Top `r` eigenvectors of the centred operator `H K H` by subspace iteration (40 steps,
/// Gram-Schmidt), with their eigenvalues.
fn top_components(g: &Gram, r: usize, rng: &mut Xoshiro256PlusPlus) -> (Vec<Vec<f64>>, Vec<f64>) {
    let n = g.n();
    let r = r.min(n);
    let mut v: Vec<Vec<f64>> = (0..r)
        .map(|_| (0..n).map(|_| gauss(rng)).collect())
        .collect();
    let mut s = g.scratch();
    let mut out = vec![0.0; n];
    let mut eig = vec![0.0; r];
    let center = |x: &mut [f64]| {
        let m = x.iter().sum::<f64>() / n as f64;
        x.iter_mut().for_each(|v| *v -= m);
    };
    for _ in 0..40 {
        for (j, vj) in v.iter_mut().enumerate() {
            center(vj);
            g.matvec(vj, &mut out, &mut s);
            center(&mut out);
            eig[j] = out.iter().zip(vj.iter()).map(|(a, b)| a * b).sum::<f64>()
                / vj.iter().map(|a| a * a).sum::<f64>().max(1e-300);
            vj.copy_from_slice(&out);
        }
        for j in 0..r {
            for l in 0..j {
                let pr = dot(&v[j], &v[l]);
                let (a, b) = v.split_at_mut(j);
                for (x, y) in b[0].iter_mut().zip(&a[l]) {
                    *x -= pr * y;
                }
            }
            let nv = norm(&v[j]);
            if nv > 0.0 {
                v[j].iter_mut().for_each(|x| *x /= nv);
            }
        }
    }
    (v, eig)
}

pub(crate) fn gauss(rng: &mut Xoshiro256PlusPlus) -> f64 {
    let u1: f64 = rng.gen_range(1e-300..1.0);
    let u2: f64 = rng.gen();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Builds the initial pool from the generators (see the module docs).
///
/// # Errors
/// [`ClusterError::InfeasibleBalance`] when no candidate could be formed.
pub fn generate(g: &Gram, bal: Balance, spec: PoolSpec, seed: u64) -> Result<Pool, ClusterError> {
    let n = g.n();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut pool = Pool::default();
    let mut order = Vec::with_capacity(n);
    let mut y = vec![0i8; n];
    let zero = vec![0.0; n];
    let mut add = |score: &[f64], pool: &mut Pool, order: &mut Vec<usize>| {
        for sgn in [1.0, -1.0] {
            let s: Vec<f64> = score.iter().map(|v| sgn * v).collect();
            balanced_cut(&s, &zero, bal, order, &mut y);
            pool.insert(y.clone(), bal);
        }
    };
    // Components (and the embedding for k-means in the kernel case).
    let ncomp = spec.components.max(if spec.kmeans > 0 { 2 } else { 0 });
    let (comps, eig) = top_components(g, ncomp, &mut rng);
    for c in comps.iter().take(spec.components) {
        add(c, &mut pool, &mut order);
    }
    if spec.kmeans > 0 {
        let emb = match g {
            Gram::Linear(p) => p.clone(),
            Gram::Dense { .. } => {
                let r = comps.len();
                let mut v = vec![0.0; n * r];
                for (j, c) in comps.iter().enumerate() {
                    let sc = eig[j].max(0.0).sqrt();
                    for i in 0..n {
                        v[i * r + j] = c[i] * sc;
                    }
                }
                Points { n, d: r, v }
            }
        };
        if n >= 2 {
            for _ in 0..spec.kmeans {
                let kp = KMeansParams::new(2)
                    .max_iter(100)
                    .n_init(1)
                    .seed(rng.gen())
                    .check()?;
                let r = kmeans::fit(&kp, &emb, &mut Control::default())?.model;
                let d = emb.d;
                let (ca, cb) = (&r.centers[..d], &r.centers[d..2 * d]);
                let score: Vec<f64> = (0..n)
                    .map(|i| sq_dist(emb.row(i), cb) - sq_dist(emb.row(i), ca))
                    .collect();
                add(&score, &mut pool, &mut order);
            }
        }
    }
    let mut s = g.scratch();
    let mut out = vec![0.0; n];
    for _ in 0..spec.random {
        match g {
            Gram::Linear(p) => {
                let u: Vec<f64> = (0..p.d).map(|_| gauss(&mut rng)).collect();
                for (i, o) in out.iter_mut().enumerate() {
                    *o = dot(p.row(i), &u);
                }
            }
            Gram::Dense { .. } => {
                let r: Vec<f64> = (0..n).map(|_| gauss(&mut rng)).collect();
                g.matvec(&r, &mut out, &mut s);
            }
        }
        let score = out.clone();
        add(&score, &mut pool, &mut order);
    }
    if pool.is_empty() {
        // Only possible with no generators at all: one arbitrary admissible cut.
        let idx: Vec<f64> = (0..n).map(|i| -(i as f64)).collect();
        balanced_cut(&idx, &zero, bal, &mut order, &mut y);
        pool.insert(y.clone(), bal);
    }
    Ok(pool)
}

/// Buffers of [`most_violated`].
#[derive(Debug, Clone)]
pub struct LgScratch {
    z: Vec<f64>,
    kz: Vec<f64>,
    c: Vec<f64>,
    order: Vec<usize>,
    next: Vec<i8>,
    mv: MatvecScratch,
}

impl LgScratch {
    /// Buffers for `g`.
    pub fn new(g: &Gram) -> Self {
        let n = g.n();
        Self {
            z: vec![0.0; n],
            kz: vec![0.0; n],
            c: vec![0.0; n],
            order: Vec::with_capacity(n),
            next: vec![0; n],
            mv: g.scratch(),
        }
    }
}

/// `J(y) = (y.d)'K(y.d)`.
pub fn violation(g: &Gram, d: &[f64], y: &[i8], s: &mut LgScratch) -> f64 {
    for ((z, &di), &yi) in s.z.iter_mut().zip(d).zip(y) {
        *z = di * f64::from(yi);
    }
    g.matvec(&s.z, &mut s.kz, &mut s.mv);
    dot(&s.z, &s.kz)
}

/// Ascent on `J` from `start` by balanced linearization cuts (at most `max_steps`); returns the
/// final labeling and its `J`.
pub fn most_violated(
    g: &Gram,
    d: &[f64],
    start: &[i8],
    bal: Balance,
    max_steps: usize,
    s: &mut LgScratch,
) -> (Vec<i8>, f64) {
    let mut y = start.to_vec();
    let mut j = violation(g, d, &y, s);
    for _ in 0..max_steps {
        // s.kz = K(d . y) from the last evaluation.
        for ((c, &di), &k) in s.c.iter_mut().zip(d).zip(&s.kz) {
            *c = di * k;
        }
        let key = std::mem::take(&mut s.kz);
        balanced_cut(&s.c, &key, bal, &mut s.order, &mut s.next);
        s.kz = key;
        if s.next == y {
            break;
        }
        let next = std::mem::take(&mut s.next);
        let jn = violation(g, d, &next, s);
        s.next = next;
        if jn <= j {
            // Convexity guarantees jn >= j; equality (or rounding) ends the ascent.
            break;
        }
        y.copy_from_slice(&s.next);
        j = jn;
    }
    (y, j)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_labelings(n: usize) -> Vec<Vec<i8>> {
        (0..1u32 << n)
            .map(|b| {
                (0..n)
                    .map(|i| if b >> i & 1 == 1 { 1 } else { -1 })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn balanced_cut_is_exact_against_brute_force() {
        let mut s = 7u64;
        let mut next = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) - 0.5
        };
        for trial in 0..60 {
            let n = 3 + trial % 8;
            let c: Vec<f64> = (0..n).map(|_| next()).collect();
            let t = [0.0, 1.0, -2.0][trial % 3];
            let beta = [0.0, 1.0, 2.5][(trial / 3) % 3];
            let Ok(bal) = Balance::new(n, t, beta, 1, 1) else {
                continue;
            };
            let mut order = Vec::new();
            let mut y = vec![0i8; n];
            balanced_cut(&c, &vec![0.0; n], bal, &mut order, &mut y);
            let val = |y: &[i8]| c.iter().zip(y).map(|(a, &b)| a * f64::from(b)).sum::<f64>();
            let best = all_labelings(n)
                .into_iter()
                .filter(|y| bal.admits(y.iter().filter(|&&v| v > 0).count()))
                .map(|y| val(&y))
                .fold(f64::NEG_INFINITY, f64::max);
            assert!(bal.admits(y.iter().filter(|&&v| v > 0).count()));
            assert!((val(&y) - best).abs() < 1e-12, "trial {trial}");
        }
    }

    #[test]
    fn label_generation_never_decreases_the_violation_and_pool_is_canonical() {
        let n = 10;
        let v: Vec<f64> = (0..n * 2)
            .map(|i| ((i * 37 % 11) as f64 - 5.0) / 3.0)
            .collect();
        let g = Gram::Linear(Points { n, d: 2, v }.centered());
        let bal = Balance::new(n, 0.0, 2.0, 1, 1).unwrap();
        let d: Vec<f64> = (0..n).map(|i| 0.1 + (i % 3) as f64 * 0.05).collect();
        let mut s = LgScratch::new(&g);
        for start in all_labelings(n)
            .into_iter()
            .filter(|y| bal.admits(y.iter().filter(|&&v| v > 0).count()))
            .step_by(17)
        {
            let j0 = violation(&g, &d, &start, &mut s);
            let (y, j) = most_violated(&g, &d, &start, bal, 30, &mut s);
            assert!(j >= j0 - 1e-12);
            assert!((violation(&g, &d, &y, &mut s) - j).abs() < 1e-9);
        }
        let mut pool = Pool::default();
        let y: Vec<i8> = (0..n).map(|i| if i < 5 { -1 } else { 1 }).collect();
        let neg: Vec<i8> = y.iter().map(|v| -v).collect();
        assert!(pool.insert(y, bal).is_some());
        assert!(pool.insert(neg, bal).is_none(), "-y is the same candidate");
        assert_eq!(pool.labels[0][0], 1);
    }
}
