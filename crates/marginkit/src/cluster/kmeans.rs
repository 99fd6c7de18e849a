//! k-means (Lloyd's iterations) with k-means++ seeding: the baseline of ODMC and one of the
//! generators of its candidate labelings.
//!
//! Problem: `min sum_i |x_i - c_{a(i)}|^2` over centres `c_1..c_k` and assignments `a`.
//! Seeding: k-means++ (Arthur & Vassilvitskii 2007): the first centre uniformly, each next one
//! with probability proportional to the squared distance to the nearest chosen centre.
//! Iteration: assign every point to its nearest centre (ties: the lowest index), recompute the
//! centres as means; an empty cluster takes the point farthest from its centre (with fewer than
//! `k` distinct points, e.g. duplicates, some clusters stay empty: their ids are then absent
//! from the labels; this is the documented outcome, not an error). Stops when no
//! assignment changes or after `max_iter` iterations. Cost per iteration `O(n k d)`; the
//! assignment runs in parallel over points (each point independently, so results do not depend
//! on the thread count); the centre sums run in point order. `n_init` seeded restarts keep the
//! lowest inertia.
// Index loops over paired arrays (labels, duals, rows) read like the formulas.
#![allow(clippy::needless_range_loop)]

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

use super::{sq_dist, ClusterError, Points};
use crate::error::ParamError;
use crate::fit::{Control, Fit, Report};
use crate::solver::{IterStats, Observer, Status};

/// k-means parameters, unchecked: set them, then [`KMeansParams::check`] gives the
/// [`KMeansValidParams`] that [`fit`] takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KMeansParams(KMeansValidParams);

/// Checked k-means parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KMeansValidParams {
    pub(crate) k: usize,
    pub(crate) max_iter: usize,
    pub(crate) n_init: usize,
    pub(crate) seed: u64,
}

impl KMeansValidParams {
    /// Number of clusters.
    pub fn k(&self) -> usize {
        self.k
    }
    /// Iteration limit per restart.
    pub fn max_iter(&self) -> usize {
        self.max_iter
    }
    /// Seeded restarts (the best inertia wins).
    pub fn n_init(&self) -> usize {
        self.n_init
    }
    /// Seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }
}

impl KMeansParams {
    /// Default iteration limit per restart.
    pub const DEFAULT_MAX_ITER: usize = 300;
    /// Default number of seeded restarts.
    pub const DEFAULT_N_INIT: usize = 10;

    /// `k` clusters, [`DEFAULT_MAX_ITER`](Self::DEFAULT_MAX_ITER) iterations,
    /// [`DEFAULT_N_INIT`](Self::DEFAULT_N_INIT) restarts, seed 0.
    pub fn new(k: usize) -> Self {
        Self(KMeansValidParams {
            k,
            max_iter: Self::DEFAULT_MAX_ITER,
            n_init: Self::DEFAULT_N_INIT,
            seed: 0,
        })
    }
    /// Iteration limit per restart (>= 1).
    pub fn max_iter(mut self, n: usize) -> Self {
        self.0.max_iter = n;
        self
    }
    /// Seeded restarts (>= 1).
    pub fn n_init(mut self, n: usize) -> Self {
        self.0.n_init = n;
        self
    }
    /// Seed.
    pub fn seed(mut self, s: u64) -> Self {
        self.0.seed = s;
        self
    }
    /// Checks what does not depend on the data (`k <= n` is checked by [`fit`]).
    ///
    /// # Errors
    /// [`ParamError::NotPositive`] for `k`, `max_iter` or `n_init` equal to 0.
    pub fn check(self) -> Result<KMeansValidParams, ParamError> {
        for (name, v) in [
            ("k", self.0.k),
            ("max iterations", self.0.max_iter),
            ("restarts", self.0.n_init),
        ] {
            if v == 0 {
                return Err(ParamError::NotPositive { name, value: 0.0 });
            }
        }
        Ok(self.0)
    }
}

/// A k-means clustering.
#[derive(Debug, Clone, PartialEq)]
pub struct KMeansModel {
    /// Cluster of every point, `0..k`. Every id is used unless the data has fewer than `k`
    /// distinct points (then some clusters are empty).
    pub labels: Vec<usize>,
    /// Centres, row-major `k x d`.
    pub centers: Vec<f64>,
    /// `sum_i |x_i - c_{a(i)}|^2`.
    pub inertia: f64,
}

/// What a k-means fit did.
#[derive(Debug, Clone, PartialEq)]
pub struct KMeansReport {
    /// Lloyd iterations of the winning restart.
    pub iterations: usize,
    /// The winning restart's inertia after each of its assignment steps (the last is the
    /// model's).
    pub inertia_trace: Vec<f64>,
    /// Iterations over all restarts.
    pub total_iterations: usize,
    /// True when the winning restart stopped because no assignment changed.
    pub converged: bool,
    /// True when the observer stopped the fit (the best restart so far is returned).
    pub interrupted: bool,
}

impl Report for KMeansReport {
    fn status(&self) -> Status {
        if self.interrupted {
            Status::Interrupted
        } else if self.converged {
            Status::Converged
        } else {
            Status::MaxIterations
        }
    }
}

/// Runs k-means on `x`; `ctl`'s observer is asked after every Lloyd iteration.
///
/// # Errors
/// [`ClusterError::BadK`] unless `k <= n`.
pub fn fit(
    p: &KMeansValidParams,
    x: &Points,
    ctl: &mut Control,
) -> Result<Fit<KMeansModel, KMeansReport>, ClusterError> {
    if p.k == 0 || p.k > x.n {
        return Err(ClusterError::BadK { k: p.k, n: x.n });
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(p.seed);
    let mut best: Option<Lloyd> = None;
    let mut total = 0;
    let mut interrupted = false;
    for _ in 0..p.n_init {
        let r = lloyd(x, p.k, p.max_iter, &mut rng, ctl.observer());
        total += r.iterations;
        interrupted = r.interrupted;
        if best
            .as_ref()
            .is_none_or(|b| r.model.inertia < b.model.inertia)
        {
            best = Some(r);
        }
        if interrupted {
            break;
        }
    }
    let b = best.ok_or(ClusterError::BadK { k: p.k, n: x.n })?;
    Ok(Fit {
        model: b.model,
        report: KMeansReport {
            iterations: b.iterations,
            inertia_trace: b.trace,
            total_iterations: total,
            converged: b.converged,
            interrupted,
        },
        checkpoint: None,
    })
}

/// One restart's result.
struct Lloyd {
    model: KMeansModel,
    iterations: usize,
    trace: Vec<f64>,
    converged: bool,
    interrupted: bool,
}

fn seed_pp(x: &Points, k: usize, rng: &mut Xoshiro256PlusPlus) -> Vec<f64> {
    let (n, d) = (x.n, x.d);
    let mut centers = Vec::with_capacity(k * d);
    let first = rng.gen_range(0..n);
    centers.extend_from_slice(x.row(first));
    let mut dist: Vec<f64> = (0..n).map(|i| sq_dist(x.row(i), x.row(first))).collect();
    for _ in 1..k {
        let total: f64 = dist.iter().sum();
        let pick = if total > 0.0 {
            let mut t = rng.gen::<f64>() * total;
            let mut chosen = n - 1;
            for (i, &w) in dist.iter().enumerate() {
                if t < w {
                    chosen = i;
                    break;
                }
                t -= w;
            }
            chosen
        } else {
            rng.gen_range(0..n)
        };
        let c = x.row(pick).to_vec();
        for (i, di) in dist.iter_mut().enumerate() {
            *di = di.min(sq_dist(x.row(i), &c));
        }
        centers.extend_from_slice(&c);
    }
    centers
}

fn nearest(row: &[f64], centers: &[f64], d: usize) -> (usize, f64) {
    let mut best = (0usize, f64::INFINITY);
    for (c, cen) in centers.chunks_exact(d.max(1)).enumerate() {
        let v = sq_dist(row, cen);
        if v < best.1 {
            best = (c, v);
        }
    }
    best
}

fn lloyd(
    x: &Points,
    k: usize,
    max_iter: usize,
    rng: &mut Xoshiro256PlusPlus,
    obs: &mut dyn Observer,
) -> Lloyd {
    let (n, d) = (x.n, x.d);
    let mut centers = seed_pp(x, k, rng);
    let mut labels = vec![usize::MAX; n];
    let mut iterations = 0;
    let mut converged = false;
    let mut inertia = f64::INFINITY;
    let mut trace = Vec::new();
    let mut interrupted = false;
    while iterations < max_iter {
        iterations += 1;
        let assign: Vec<(usize, f64)> = (0..n)
            .into_par_iter()
            .map(|i| nearest(x.row(i), &centers, d))
            .collect();
        let changed = assign
            .iter()
            .zip(&labels)
            .filter(|((c, _), &l)| *c != l)
            .count();
        for (l, a) in labels.iter_mut().zip(&assign) {
            *l = a.0;
        }
        inertia = assign.iter().map(|a| a.1).sum();
        trace.push(inertia);
        if changed == 0 {
            converged = true;
            break;
        }
        let stats = IterStats {
            iterations: iterations as u64,
            max_violation: changed as f64,
            active: k,
        };
        if obs.on_iter(&stats).is_break() {
            interrupted = true;
            break;
        }
        // New centres (sums in point order).
        let mut sums = vec![0.0; k * d];
        let mut counts = vec![0usize; k];
        for i in 0..n {
            let c = labels[i];
            counts[c] += 1;
            for (s, &v) in sums[c * d..(c + 1) * d].iter_mut().zip(x.row(i)) {
                *s += v;
            }
        }
        let mut taken = vec![false; n];
        for c in 0..k {
            if counts[c] > 0 {
                for j in 0..d {
                    centers[c * d + j] = sums[c * d + j] / counts[c] as f64;
                }
            } else {
                // Empty cluster: the point farthest from its centre (first on ties).
                let mut far = (0usize, -1.0);
                for i in 0..n {
                    if !taken[i] && assign[i].1 > far.1 {
                        far = (i, assign[i].1);
                    }
                }
                taken[far.0] = true;
                centers[c * d..(c + 1) * d].copy_from_slice(x.row(far.0));
            }
        }
    }
    Lloyd {
        model: KMeansModel {
            labels,
            centers,
            inertia,
        },
        iterations,
        trace,
        converged,
        interrupted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The trace has one inertia per Lloyd iteration of the winning restart, never increases
    /// (each assignment and centre step can only lower it), and ends at the model's inertia,
    /// which is the sum of squared distances to the returned centres.
    #[test]
    fn inertia_trace_is_monotone_and_ends_at_the_model() {
        let v: Vec<f64> = (0..200)
            .flat_map(|i| {
                let t = f64::from(i) * 0.7;
                [t.sin() * 3.0 + f64::from(i % 3), (1.3 * t).cos()]
            })
            .collect();
        let x = Points { n: 200, d: 2, v };
        let p = KMeansParams::new(4).n_init(3).check().unwrap();
        let fit = fit(&p, &x, &mut Control::default()).unwrap();
        let trace = &fit.report.inertia_trace;
        assert_eq!(trace.len(), fit.report.iterations);
        assert!(trace.windows(2).all(|w| w[1] <= w[0]), "{trace:?}");
        assert_eq!(*trace.last().unwrap(), fit.model.inertia);
        let direct: f64 = (0..x.n)
            .map(|i| {
                let c = fit.model.labels[i];
                sq_dist(x.row(i), &fit.model.centers[c * 2..c * 2 + 2])
            })
            .sum();
        assert!((direct - fit.model.inertia).abs() <= 1e-9 * direct);
    }

    #[test]
    fn separates_three_blobs_and_is_seeded() {
        let mut v = Vec::new();
        for c in 0..3 {
            for i in 0..20 {
                v.push(10.0 * c as f64 + (i % 5) as f64 * 0.1);
                v.push(-5.0 * c as f64 + (i / 5) as f64 * 0.1);
            }
        }
        let x = Points { n: 60, d: 2, v };
        let p = KMeansParams::new(3).check().unwrap();
        let r = fit(&p, &x, &mut Control::default()).unwrap().model;
        for c in 0..3 {
            let l = r.labels[c * 20];
            assert!(r.labels[c * 20..(c + 1) * 20].iter().all(|&v| v == l));
        }
        assert_eq!(r, fit(&p, &x, &mut Control::default()).unwrap().model);
        let p61 = KMeansParams::new(61).check().unwrap();
        assert!(fit(&p61, &x, &mut Control::default()).is_err());
    }

    /// Two distinct points (one repeated) and k = 3: a cluster stays empty (documented), the
    /// two distinct points are separated, inertia 0, and nothing panics.
    #[test]
    fn fewer_distinct_points_than_k_leave_a_cluster_empty() {
        let x = Points {
            n: 4,
            d: 1,
            v: vec![1.0, 1.0, 1.0, 2.0],
        };
        let p = KMeansParams::new(3).check().unwrap();
        let r = fit(&p, &x, &mut Control::default()).unwrap().model;
        let mut sizes = [0; 3];
        for &l in &r.labels {
            sizes[l] += 1;
        }
        sizes.sort_unstable();
        assert_eq!(sizes, [0, 1, 3]);
        assert_ne!(r.labels[0], r.labels[3]);
        assert_eq!(r.inertia, 0.0);
    }

    #[test]
    fn check_rejects_zero_counts() {
        assert!(KMeansParams::new(0).check().is_err());
        assert!(KMeansParams::new(2).max_iter(0).check().is_err());
        assert!(KMeansParams::new(2).n_init(0).check().is_err());
        assert!(KMeansParams::new(2).check().is_ok());
    }
}
