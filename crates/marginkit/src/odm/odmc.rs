//! ODMC: optimal margin distribution clustering by stochastic mirror descent (Zhang & Zhou,
//! AAAI 2018, Eq. 7 and Algorithm 1), over a finite candidate pool grown by label generation.
//!
//! # Problem
//! ```text
//! min_{mu in simplex(B)} max_{alpha in [0, tau]^{2n}}  phi(mu, alpha) = sum_k mu_k G(alpha, y_k)
//! ```
//! with `G` the ODM dual of [`super`] (labels `y_k`) and `B` a finite set of admissible
//! labelings `|e'y - t| <= beta` ([`super::pool`]). `phi` is linear in `mu`, concave in `alpha`;
//! the saddle point is the minimax relaxation of Eq. 2.
//!
//! | paper | code |
//! |---|---|
//! | m | `n` |
//! | B, y_k | [`super::pool::Pool`] |
//! | mu (simplex over B) | `logmu` (log-weights, normalized by log-sum-exp) |
//! | alpha = [alpha1; alpha2], tau | `alpha`, [`super::safe_tau`] |
//! | i_t ~ U(B), j_t ~ mu_t | `i`, `j` |
//! | eta, a, b, L1, L2 | see "Steps" |
//! | iota | [`OdmcParams::tol`] (relative gap) |
//!
//! # Algorithm (one round = Algorithm 1 for `T` iterations, then a best response and label generation)
//! Per iteration: draw `i ~ U(B)` and `j ~ mu` independently; evaluate `G(alpha, y_i)` and
//! `grad_alpha G(alpha, y_j)` at the same point (one product `K(y.d)` each, shared when
//! `i = j`); entropic step on coordinate `i` of `mu` (multiply by `exp(-step * G_i)`, then
//! normalize: the KL projection onto the simplex); Euclidean step on `alpha`, clipped to
//! `[0, tau]` (the Euclidean projection onto the box). Running averages `mu_bar`, `alpha_bar`
//! over the round are kept (Theorem 1 is about the averages).
//!
//! After the round (**deviations, documented**):
//! 1. **Best response**: `alpha_hat = argmax_alpha phi(mu_bar, alpha)`, the ODM dual with the
//!    mixed kernel `K . sum_k mu_bar_k y_k y_k'`, by exact coordinate ascent (the digest's
//!    suggestion for the gap's first term), warm-started. The next round's `alpha` iterate
//!    restarts there. Why: the dual is ill-conditioned for large lambda (curvature `2c` against
//!    `lambda_max(K)`), so `O(1/sqrt T)` Euclidean steps alone leave `alpha` far from its
//!    maximizer and the `G` values that steer `mu` meaningless (measured: with the plain SMD,
//!    the labeling of smallest `G` had accuracy 0.53 on two separated blobs at lambda = 100).
//! 2. **Label generation**: the most violated labeling for `alpha_hat`
//!    ([`super::pool::most_violated`], started from the sign readout and the three heaviest
//!    labelings) joins the pool, with the largest current log-weight, unless the run stops.
//!
//! # Steps (documented deviations from Theorem 1's constants)
//! - `mu`: the paper's effective update `log mu_i -= sqrt(2 log|B| / T) (G_i - G_ref) / L1`
//!   (the `|B|` of the estimator cancels against `a = |B| L1 / sqrt(log|B|)`). The theorem's
//!   `L1` (a bound on `|G|` over the whole box) makes `mu` barely move (digest pitfall 3); we use
//!   the measured spread `max_k G - min_k G` over the pool at the last best response (in the
//!   first round, the largest `|G_i|` seen so far) and `G_ref` = the last `min_k G`. A common
//!   shift of all `G` changes nothing in expectation.
//! - `alpha`: `eta / b` with `eta = sqrt(2/T)`, `b = sqrt2 L2 / (sqrt(2n) tau)` (the corrected
//!   reading of the printed `b`, with `2n` box coordinates), `L2` = the largest gradient norm seen,
//!   capped at `1 / L`, `L = lambda_max(K) + 2c max(1, 1/nu)` the curvature bound of `G` (a longer
//!   step overshoots the maximizer of the concave quadratic). In practice the cap binds.
//! - `tau` = [`super::safe_tau`], a bound the maximizer never reaches, so the box is the paper's
//!   "sufficiently large" `tau`.
//!
//! # Duality gap and stopping rule
//! `gap = phi(mu_bar, alpha_hat) - min(min_k G(alpha_hat, y_k), G(alpha_hat, y_new))` with `y_new`
//! the generated labeling: the first term is `max_alpha phi(mu_bar, .)` up to the coordinate
//! ascent's tolerance ([`BR_TOL`] on the projected gradient), the second is exact, so this is the
//! duality gap of the pair `(mu_bar, alpha_hat)` over the pool plus the generated labeling (a
//! label-generation gap; the gap over all of `B` would need the NP-hard most violated labeling,
//! digest pitfall 5). Stop when `gap <= tol * |phi(mu_bar, alpha_hat)|`, or after `max_rounds`
//! rounds ([`Status::MaxIterations`]).
//!
//! # Readout
//! [`Readout::Decision`] (default, the documented tie-breaking readout): the decision values of
//! the mixture classifier `F = sum_k mu_bar_k f_k = K (d_hat . m)`, `m = sum_k mu_bar_k y_k`, cut
//! at the widest gap of the sorted values among the admissible cut positions. Why: the paper's
//! `sign(m)` is decided by near-ties between labelings that differ in a few points (for points
//! in the theta-insensitive zone, `d_i = 0` and flipping them does not change `G` to first order,
//! so the relaxation does not separate those labelings); `F` labels such points like their
//! neighbours. [`Readout::Sign`]: the paper's `sign(m)`, made admissible by a balanced cut of `m`
//! with the heaviest labeling as tie key (when `sign(m)` is admissible and has no zeros it is
//! returned unchanged). [`Readout::Heaviest`]: `argmax_k mu_bar_k`. [`Readout::MinG`]:
//! `argmin_k G(alpha_hat, y_k)`.
//!
//! # Kernels and preprocessing
//! Features are standardized (centred, unit variance; constant features dropped; all constant
//! is an error). Linear: `K = X X'`, never formed (`O(n d)` per product). Gaussian:
//! `K_ij = exp(-|x_i - x_j|^2 / (2 sigma^2))`, `sigma = s * sqrt(gamma_bar)` with `gamma_bar` the
//! **mean squared Euclidean distance** over pairs `i != j` (`= 2n/(n-1) * sum_k var_k`, exact in
//! `O(n d)`), `s` the paper's multiplier in {0.25, 0.5, 1, 2, 4}; `K` is dense (`n <=`
//! [`OdmcParams::max_dense`]).
//!
//! # k > 2 (beyond the paper)
//! Recursive bisection: `k` clusters split into `ceil(k/2)` and `floor(k/2)` with the balance
//! centred at `t = n (ceil(k/2) - floor(k/2)) / k` (so every final cluster has about `n/k` points,
//! `beta` is the same fraction of each subset) and every side large enough to be split further;
//! each part is re-centred (linear) or uses its kernel sub-block (Gaussian).
//!
//! # Cost per iteration
//! Two products with `K`: `O(n d)` linear, `O(n^2)` Gaussian; plus `O(n)` for the steps and
//! averages and `O(|B|)` for `mu`. Per round: `O(|B|)` products for the gap's second term, the
//! best response (a pass costs `O(n d |supp mu_bar|)` linear, `O(n^2)` Gaussian after forming
//! the mixed kernel in `O(n^2 |supp|)`), a few products for label generation.
//!
//! Seeded (`Xoshiro256PlusPlus`); every parallel product sums in a fixed order, so the clusters
//! do not depend on the thread count.
// Index loops over paired arrays (labels, duals, rows) read like the formulas.
#![allow(clippy::needless_range_loop)]

use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

use super::pool::{self, dot, Balance, Gram, LgScratch, Pool, PoolSpec};
use super::{safe_tau, OdmConsts};
use crate::cluster::{ClusterError, Points};
use crate::error::{positive, ParamError};
use crate::fit::{Control, Fit, Report};
use crate::solver::{IterStats, Status};

/// The kernel of ODMC.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OdmcKernel {
    /// `K = X X'` on the standardized points.
    Linear,
    /// `exp(-|u - v|^2 / (2 sigma^2))`, `sigma = sigma_scale * sqrt(mean squared distance)`.
    Gaussian {
        /// The paper's multiplier of `sqrt(gamma)` (0.25 .. 4).
        sigma_scale: f64,
    },
}

/// Which labeling is read out at the end (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readout {
    /// The paper's `sign(sum_k mu_k y_k)`, balanced and tie-broken by the heaviest labeling.
    Sign,
    /// The labeling with the largest average weight.
    Heaviest,
    /// The labeling with the smallest `G` at the averaged duals.
    MinG,
    /// The tie-breaking readout (default): the mixture's decision values
    /// `F(x_i) = sum_k mu_k f_k(x_i) = (K (d . m))_i` with `m = sum_k mu_k y_k`, cut at the widest
    /// gap of the sorted values among the admissible cut positions (ties: the position closest
    /// to the sign cut, then by `m`).
    Decision,
}

/// Checked ODMC parameters: built by [`OdmcParams`], the only form [`fit`] accepts.
#[derive(Debug, Clone, PartialEq)]
pub struct OdmcValidParams {
    pub(crate) k: usize,
    pub(crate) lambda: f64,
    pub(crate) nu: f64,
    pub(crate) theta: f64,
    pub(crate) kernel: OdmcKernel,
    pub(crate) beta: f64,
    pub(crate) iterations: usize,
    pub(crate) max_rounds: usize,
    pub(crate) tol: f64,
    pub(crate) pool: PoolSpec,
    pub(crate) readout: Readout,
    pub(crate) seed: u64,
    pub(crate) max_dense: usize,
}

impl OdmcValidParams {
    /// Clusters (>= 2, at most the number of points).
    pub fn k(&self) -> usize {
        self.k
    }
    /// ODM lambda (> 0).
    pub fn lambda(&self) -> f64 {
        self.lambda
    }
    /// ODM nu (> 0).
    pub fn nu(&self) -> f64 {
        self.nu
    }
    /// ODM theta, in `[0, 1)`.
    pub fn theta(&self) -> f64 {
        self.theta
    }
    /// The kernel.
    pub fn kernel(&self) -> OdmcKernel {
        self.kernel
    }
    /// Balance `|e'y - t| <= beta n` as a fraction of the points, in `[0, 1]` (paper: 0.03
    /// balanced, 0.3 imbalanced).
    pub fn beta(&self) -> f64 {
        self.beta
    }
    /// Stochastic mirror-descent iterations per round (`T`, > 0).
    pub fn iterations(&self) -> usize {
        self.iterations
    }
    /// Label-generation rounds at most (> 0).
    pub fn max_rounds(&self) -> usize {
        self.max_rounds
    }
    /// Relative duality-gap tolerance (`iota`, > 0).
    pub fn tol(&self) -> f64 {
        self.tol
    }
    /// Candidate generators.
    pub fn pool(&self) -> PoolSpec {
        self.pool
    }
    /// Readout.
    pub fn readout(&self) -> Readout {
        self.readout
    }
    /// Seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// Largest `n` for the dense Gaussian kernel matrix.
    pub fn max_dense(&self) -> usize {
        self.max_dense
    }
}

/// ODMC parameters, unchecked: a builder whose [`check`](OdmcParams::check) gives the
/// [`OdmcValidParams`] that [`fit`] accepts.
#[derive(Debug, Clone, PartialEq)]
pub struct OdmcParams(OdmcValidParams);

impl Default for OdmcParams {
    /// Two clusters, lambda 1, nu 0.5, theta 0.2, linear kernel, balance 0.03, 300 iterations
    /// per round, 8 rounds, gap tolerance 1e-2 (the `DEFAULT_*` constants), the default pool,
    /// the decision readout, seed 0, a dense Gaussian kernel up to 12,000 points.
    fn default() -> Self {
        Self(OdmcValidParams {
            k: 2,
            lambda: Self::DEFAULT_LAMBDA,
            nu: Self::DEFAULT_NU,
            theta: Self::DEFAULT_THETA,
            kernel: OdmcKernel::Linear,
            beta: Self::DEFAULT_BETA,
            iterations: Self::DEFAULT_ITERATIONS,
            max_rounds: Self::DEFAULT_MAX_ROUNDS,
            tol: Self::DEFAULT_TOL,
            pool: PoolSpec::DEFAULT,
            readout: Readout::Decision,
            seed: 0,
            max_dense: Self::DEFAULT_MAX_DENSE,
        })
    }
}

impl From<OdmcValidParams> for OdmcParams {
    fn from(p: OdmcValidParams) -> Self {
        Self(p)
    }
}

impl OdmcParams {
    /// Default ODM `lambda`.
    pub const DEFAULT_LAMBDA: f64 = 1.0;
    /// Default ODM `nu`.
    pub const DEFAULT_NU: f64 = 0.5;
    /// Default ODM `theta`.
    pub const DEFAULT_THETA: f64 = 0.2;
    /// Default balance `beta` (the paper's balanced setting).
    pub const DEFAULT_BETA: f64 = 0.03;
    /// Default stochastic mirror-descent iterations per round.
    pub const DEFAULT_ITERATIONS: usize = 300;
    /// Default most label-generation rounds.
    pub const DEFAULT_MAX_ROUNDS: usize = 8;
    /// Default relative duality-gap tolerance.
    pub const DEFAULT_TOL: f64 = 1e-2;
    /// Default most points of a dense Gaussian kernel matrix.
    pub const DEFAULT_MAX_DENSE: usize = 12_000;

    /// The defaults (see [`Default`]).
    pub fn new() -> Self {
        Self::default()
    }
    /// Clusters (>= 2, at most the number of points).
    #[must_use]
    pub fn k(mut self, v: usize) -> Self {
        self.0.k = v;
        self
    }
    /// ODM lambda (> 0).
    #[must_use]
    pub fn lambda(mut self, v: f64) -> Self {
        self.0.lambda = v;
        self
    }
    /// ODM nu (> 0).
    #[must_use]
    pub fn nu(mut self, v: f64) -> Self {
        self.0.nu = v;
        self
    }
    /// ODM theta, in `[0, 1)`.
    #[must_use]
    pub fn theta(mut self, v: f64) -> Self {
        self.0.theta = v;
        self
    }
    /// The kernel.
    #[must_use]
    pub fn kernel(mut self, v: OdmcKernel) -> Self {
        self.0.kernel = v;
        self
    }
    /// Balance `|e'y - t| <= beta n` as a fraction of the points, in `[0, 1]` (paper: 0.03
    /// balanced, 0.3 imbalanced).
    #[must_use]
    pub fn beta(mut self, v: f64) -> Self {
        self.0.beta = v;
        self
    }
    /// Stochastic mirror-descent iterations per round (`T`, > 0).
    #[must_use]
    pub fn iterations(mut self, v: usize) -> Self {
        self.0.iterations = v;
        self
    }
    /// Label-generation rounds at most (> 0).
    #[must_use]
    pub fn max_rounds(mut self, v: usize) -> Self {
        self.0.max_rounds = v;
        self
    }
    /// Relative duality-gap tolerance (`iota`, > 0).
    #[must_use]
    pub fn tol(mut self, v: f64) -> Self {
        self.0.tol = v;
        self
    }
    /// Candidate generators.
    #[must_use]
    pub fn pool(mut self, v: PoolSpec) -> Self {
        self.0.pool = v;
        self
    }
    /// Readout.
    #[must_use]
    pub fn readout(mut self, v: Readout) -> Self {
        self.0.readout = v;
        self
    }
    /// Seed.
    #[must_use]
    pub fn seed(mut self, v: u64) -> Self {
        self.0.seed = v;
        self
    }
    /// Largest `n` for the dense Gaussian kernel matrix.
    #[must_use]
    pub fn max_dense(mut self, v: usize) -> Self {
        self.0.max_dense = v;
        self
    }

    /// Validates the parameters that do not depend on the data (NaN-safe).
    ///
    /// # Errors
    /// [`ParamError`] naming the parameter.
    pub fn check(self) -> Result<OdmcValidParams, ParamError> {
        let p = &self.0;
        positive("lambda", p.lambda)?;
        positive("nu", p.nu)?;
        if !(p.theta.is_finite() && (0.0..1.0).contains(&p.theta)) {
            return Err(ParamError::OutOfRange {
                name: "theta",
                value: p.theta,
                range: "[0, 1)",
            });
        }
        if !(p.beta.is_finite() && (0.0..=1.0).contains(&p.beta)) {
            return Err(ParamError::OutOfRange {
                name: "beta",
                value: p.beta,
                range: "[0, 1] (a fraction of the points)",
            });
        }
        if let OdmcKernel::Gaussian { sigma_scale } = p.kernel {
            positive("sigma scale", sigma_scale)?;
        }
        positive("tol", p.tol)?;
        if p.iterations == 0 {
            return Err(ParamError::NotPositive {
                name: "iterations",
                value: 0.0,
            });
        }
        if p.max_rounds == 0 {
            return Err(ParamError::NotPositive {
                name: "max rounds",
                value: 0.0,
            });
        }
        Ok(self.0)
    }
}

/// Progress after one round.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundStats {
    /// Which bisection (0 for k = 2).
    pub split: usize,
    /// Round within the bisection.
    pub round: usize,
    /// SMD iterations so far (all bisections).
    pub iterations: u64,
    /// Duality-gap estimate at the round's averages.
    pub gap: f64,
    /// `gap / |max term|`.
    pub relative_gap: f64,
    /// Pool size after label generation.
    pub pool: usize,
    /// True when label generation added a labeling.
    pub new_label: bool,
    /// Seconds spent in this round's SMD iterations (not in the gap or label generation).
    pub smd_seconds: f64,
}

/// The clustering ODMC found.
#[derive(Debug, Clone, PartialEq)]
pub struct OdmcModel {
    /// Cluster of every point, `0..k` (numbered by first appearance).
    pub labels: Vec<usize>,
    /// Points per cluster.
    pub cluster_sizes: Vec<usize>,
    /// For k = 2: the paper's readout ([`Readout::Sign`]) of the same run, whatever
    /// [`OdmcValidParams::readout`] is (for comparisons; 0 for `+1`, 1 for `-1`).
    pub paper_labels: Option<Vec<usize>>,
}

/// How one bisection of ODMC ended (one per split: `k - 1` in all).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BisectionStats {
    /// Which bisection, in the order they run (depth first, left part first; the
    /// [`RoundStats::split`] of its rounds).
    pub split: usize,
    /// Points it split.
    pub points: usize,
    /// Clusters these points end in (`ceil(k/2)` go left, `floor(k/2)` right).
    pub clusters: usize,
    /// Rounds it ran.
    pub rounds: usize,
    /// [`Status::Converged`] when its relative gap reached the tolerance, else the round limit
    /// ([`Status::MaxIterations`]) or [`Status::Interrupted`].
    pub status: Status,
    /// Duality-gap estimate of its last round.
    pub gap: f64,
    /// Relative gap of its last round (the one compared with the tolerance).
    pub relative_gap: f64,
}

/// What an ODMC fit did.
#[derive(Debug, Clone, PartialEq)]
pub struct OdmcReport {
    /// SMD iterations in total.
    pub iterations: u64,
    /// Rounds in total.
    pub rounds: usize,
    /// Converged (gap and no new label) in every bisection, or why not (the first bisection
    /// that did not converge).
    pub status: Status,
    /// Every bisection's end, in the order they ran.
    pub bisections: Vec<BisectionStats>,
    /// Every round's statistics, in order.
    pub history: Vec<RoundStats>,
    /// Wall-clock seconds (preprocessing included).
    pub seconds: f64,
}

impl Report for OdmcReport {
    /// Converged in every bisection, the round limit ([`Status::MaxIterations`]), or stopped by
    /// the observer.
    fn status(&self) -> Status {
        self.status
    }
}

/// The input of ODMC: points, standardized and turned into a kernel by the fit, or a
/// [`Prepared`] input (its kernel is used and [`OdmcValidParams::kernel`] is ignored), which
/// saves that work across fits of other ODM parameters or seeds on the same points.
#[derive(Debug, Clone, Copy)]
pub enum OdmcData<'a> {
    /// Raw points.
    Points(&'a Points),
    /// Points already prepared by [`prepare`].
    Prepared(&'a Prepared),
}

/// The prepared input of ODMC: standardized points and the kernel operator (reusable across
/// ODM parameters and seeds).
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The kernel operator on all points.
    pub gram: Gram,
    /// `lambda_max(K)` (upper estimate).
    pub lambda_max: f64,
    /// Mean squared pairwise distance of the standardized points.
    pub mean_sq_dist: f64,
}

/// Standardizes `x` and builds the kernel operator.
///
/// # Errors
/// [`ClusterError::ConstantData`], [`ClusterError::TooLarge`] (Gaussian, `n > max_dense`),
/// parameter errors.
pub fn prepare(x: &Points, kernel: OdmcKernel, max_dense: usize) -> Result<Prepared, ClusterError> {
    if let OdmcKernel::Gaussian { sigma_scale } = kernel {
        positive("sigma scale", sigma_scale)?;
    }
    let s = x.standardized()?;
    let n = s.n;
    let var_sum = s.d as f64; // unit variance per kept feature
    let mean_sq_dist = if n > 1 {
        2.0 * n as f64 / (n as f64 - 1.0) * var_sum
    } else {
        0.0
    };
    let gram = match kernel {
        OdmcKernel::Linear => Gram::Linear(s),
        OdmcKernel::Gaussian { sigma_scale } => {
            if n > max_dense {
                return Err(ClusterError::TooLarge {
                    n,
                    limit: max_dense,
                });
            }
            let sigma2 = sigma_scale * sigma_scale * mean_sq_dist;
            let g = 1.0 / (2.0 * sigma2);
            let mut k = vec![0.0; n * n];
            k.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
                let xi = s.row(i);
                for (j, v) in row.iter_mut().enumerate() {
                    *v = (-g * crate::cluster::sq_dist(xi, s.row(j))).exp();
                }
            });
            Gram::Dense { n, k }
        }
    };
    let lambda_max = gram.lambda_max(0);
    Ok(Prepared {
        gram,
        lambda_max,
        mean_sq_dist,
    })
}

/// Clusters the points of `data` (see the module docs). After every round the round's
/// [`RoundStats`] go to `ctl`'s part callback, then its observer is asked whether to stop (with
/// the SMD iterations so far, the relative gap as the violation and the pool size as the active
/// count); a stopped fit reports [`Status::Interrupted`] and the labels read out at that round.
///
/// ```
/// use marginkit::cluster::Points;
/// use marginkit::fit::Control;
/// use marginkit::odm::odmc::{fit, OdmcData, OdmcParams};
///
/// // Two well separated groups on a line.
/// let rows: Vec<f64> = (0..40).map(|i| if i < 20 { i as f64 * 0.01 } else { 5.0 + i as f64 * 0.01 }).collect();
/// let x = Points { n: 40, d: 1, v: rows };
/// let params = OdmcParams::new().k(2).beta(0.1).check()?;
/// let fit = fit(&params, &OdmcData::Points(&x), &mut Control::default())?;
/// assert_eq!(fit.model.cluster_sizes, vec![20, 20]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// `k` outside `2..=n`, constant data, an infeasible balance, a too large dense kernel.
pub fn fit(
    params: &OdmcValidParams,
    data: &OdmcData<'_>,
    ctl: &mut Control<'_, (), RoundStats>,
) -> Result<Fit<OdmcModel, OdmcReport>, ClusterError> {
    match *data {
        OdmcData::Points(x) => {
            if params.k < 2 || params.k > x.n {
                return Err(ClusterError::BadK {
                    k: params.k,
                    n: x.n,
                });
            }
            let prep = prepare(x, params.kernel, params.max_dense)?;
            fit_prepared(&prep, params, ctl)
        }
        OdmcData::Prepared(prep) => fit_prepared(prep, params, ctl),
    }
}

fn fit_prepared(
    prep: &Prepared,
    params: &OdmcValidParams,
    ctl: &mut Control<'_, (), RoundStats>,
) -> Result<Fit<OdmcModel, OdmcReport>, ClusterError> {
    let start = Instant::now();
    let n = prep.gram.n();
    if params.k < 2 || params.k > n {
        return Err(ClusterError::BadK { k: params.k, n });
    }
    // Check the top-level balance before any work (the common infeasible case).
    top_balance(n, params.k, params.beta)?;
    let mut part = Partition {
        prep,
        params,
        assign: vec![0usize; n],
        next_id: 0,
        total: Totals::default(),
        ctl,
    };
    let all: Vec<usize> = (0..n).collect();
    part.split(&all, params.k)?;
    let Partition {
        mut assign, total, ..
    } = part;
    // Renumber by first appearance.
    let mut map = vec![usize::MAX; params.k];
    let mut c = 0;
    for a in assign.iter_mut() {
        if map[*a] == usize::MAX {
            map[*a] = c;
            c += 1;
        }
        *a = map[*a];
    }
    let mut sizes = vec![0usize; c];
    for &a in &assign {
        sizes[a] += 1;
    }
    let paper_labels = if params.k == 2 {
        total
            .sign_readout
            .as_ref()
            .map(|y| y.iter().map(|&v| usize::from(v < 0)).collect())
    } else {
        None
    };
    Ok(Fit {
        model: OdmcModel {
            labels: assign,
            cluster_sizes: sizes,
            paper_labels,
        },
        report: OdmcReport {
            iterations: total.iterations,
            rounds: total.history.len(),
            status: total.status,
            bisections: total.bisections,
            history: total.history,
            seconds: start.elapsed().as_secs_f64(),
        },
        checkpoint: None,
    })
}

fn top_balance(n: usize, k: usize, beta: f64) -> Result<Balance, ClusterError> {
    let (kl, kr) = (k.div_ceil(2), k / 2);
    let t = n as f64 * (kl as f64 - kr as f64) / k as f64;
    Balance::new(n, t, beta * n as f64, kl, kr)
}

#[derive(Debug)]
struct Totals {
    iterations: u64,
    history: Vec<RoundStats>,
    bisections: Vec<BisectionStats>,
    status: Status,
    splits: usize,
    sign_readout: Option<Vec<i8>>,
}

impl Default for Totals {
    fn default() -> Self {
        Self {
            iterations: 0,
            history: Vec::new(),
            bisections: Vec::new(),
            status: Status::Converged,
            splits: 0,
            sign_readout: None,
        }
    }
}

/// The recursive partition into `k` clusters: the prepared data and parameters, the cluster of
/// every point so far, the next cluster id, the totals over all bisections and the caller's
/// control.
struct Partition<'a, 'c, 'o> {
    prep: &'a Prepared,
    params: &'a OdmcValidParams,
    assign: Vec<usize>,
    next_id: usize,
    total: Totals,
    ctl: &'c mut Control<'o, (), RoundStats>,
}

impl Partition<'_, '_, '_> {
    /// Splits the points `idx` into `k` clusters: a bisection into `ceil(k/2)` and `floor(k/2)`
    /// clusters, then each side in turn.
    fn split(&mut self, idx: &[usize], k: usize) -> Result<(), ClusterError> {
        if k == 1 {
            for &i in idx {
                self.assign[i] = self.next_id;
            }
            self.next_id += 1;
            return Ok(());
        }
        let (prep, params) = (self.prep, self.params);
        let m = idx.len();
        let bal = top_balance(m, k, params.beta)?;
        let sub;
        let (gram, lambda_max) = if m == prep.gram.n() {
            (&prep.gram, prep.lambda_max)
        } else {
            sub = prep.gram.subset(idx);
            let l = sub.lambda_max(params.seed);
            (&sub, l)
        };
        let seed = params
            .seed
            .wrapping_add(0x9e37_79b9_7f4a_7c15u64.wrapping_mul(self.total.splits as u64));
        let split_id = self.total.splits;
        self.total.splits += 1;
        let one = Bisection {
            gram,
            lambda_max,
            bal,
            seed,
            split_id,
            clusters: k,
        };
        let y = bisect(one, params, &mut self.total, self.ctl)?;
        let left: Vec<usize> = (0..m).filter(|&r| y[r] > 0).map(|r| idx[r]).collect();
        let right: Vec<usize> = (0..m).filter(|&r| y[r] < 0).map(|r| idx[r]).collect();
        self.split(&left, k.div_ceil(2))?;
        self.split(&right, k / 2)
    }
}

/// One bisection: the Gram matrix of its points and its largest eigenvalue, the balance
/// constraint, the seed, its number among the splits and the clusters its points will form.
#[derive(Clone, Copy)]
struct Bisection<'g> {
    gram: &'g Gram,
    lambda_max: f64,
    bal: Balance,
    seed: u64,
    split_id: usize,
    clusters: usize,
}

/// Buffers of one bisection (allocated once).
struct Work {
    z: Vec<f64>,
    kz: Vec<f64>,
    yf: Vec<f64>,
    grad: Vec<f64>,
    mv: pool::MatvecScratch,
}

/// `G(alpha, y)`, leaving `K(y.d)` in `w.kz`.
fn g_value(g: &Gram, c: &OdmConsts, alpha: &[f64], y: &[i8], w: &mut Work) -> f64 {
    let n = y.len();
    for i in 0..n {
        w.z[i] = f64::from(y[i]) * (alpha[i] - alpha[n + i]);
    }
    g.matvec(&w.z, &mut w.kz, &mut w.mv);
    c.dual_value(alpha, dot(&w.z, &w.kz))
}

fn normalize(logmu: &[f64], mu: &mut [f64]) {
    let mx = logmu.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut s = 0.0;
    for (m, &l) in mu.iter_mut().zip(logmu) {
        *m = (l - mx).exp();
        s += *m;
    }
    mu.iter_mut().for_each(|m| *m /= s);
}

// One piece: Algorithm 1's rounds (mirror descent, then label generation) share the pool, the
// iterates and their running averages.
fn bisect(
    one: Bisection<'_>,
    params: &OdmcValidParams,
    total: &mut Totals,
    ctl: &mut Control<'_, (), RoundStats>,
) -> Result<Vec<i8>, ClusterError> {
    let Bisection {
        gram: g,
        lambda_max,
        bal,
        seed,
        split_id,
        clusters,
    } = one;
    let n = g.n();
    let mut pool: Pool = pool::generate(g, bal, params.pool, seed)?;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0xD1B5_4A32_D192_ED03);
    let consts = OdmConsts::new(params.lambda, params.nu, params.theta, n);
    let tau = safe_tau(params.lambda, params.nu, params.theta, n);
    let curv = lambda_max + 2.0 * consts.c * (1.0f64).max(1.0 / params.nu);
    let mut w = Work {
        z: vec![0.0; n],
        kz: vec![0.0; n],
        yf: vec![0.0; n],
        grad: vec![0.0; 2 * n],
        mv: g.scratch(),
    };
    let mut lg = LgScratch::new(g);
    let mut alpha = vec![0.0; 2 * n];
    let mut alpha_sum = vec![0.0; 2 * n];
    let mut logmu = vec![0.0; pool.len()];
    let mut mu = vec![0.0; pool.len()];
    let mut mu_sum = vec![0.0; pool.len()];
    let mut alpha_bar = vec![0.0; 2 * n];
    let mut alpha_hat = vec![0.0; 2 * n];
    let mut kmu: Vec<f64> = Vec::new();
    let mut mu_bar = vec![0.0; pool.len()];
    let mut l1: f64 = 0.0;
    let mut g_ref = 0.0;
    let mut l2: f64 = 0.0;
    let t_round = params.iterations;
    let eta = (2.0 / t_round as f64).sqrt();
    let mut status = Status::MaxIterations;
    for round in 0..params.max_rounds {
        let b = pool.len();
        normalize(&logmu, &mut mu);
        let mu_step = (2.0 * (b.max(2) as f64).ln() / t_round as f64).sqrt();
        alpha_sum.iter_mut().for_each(|v| *v = 0.0);
        mu_sum.clear();
        mu_sum.resize(b, 0.0);
        let measured_l1 = l1 > 0.0;
        let mut seen_l1: f64 = 0.0;
        // Cumulative weights for sampling j ~ mu.
        let mut cum = vec![0.0; b];
        let smd_start = Instant::now();
        for _ in 0..t_round {
            let i = rng.gen_range(0..b);
            let mut acc = 0.0;
            for (c, &m) in cum.iter_mut().zip(&mu) {
                acc += m;
                *c = acc;
            }
            let u: f64 = rng.gen::<f64>() * acc;
            let j = cum.partition_point(|&c| c <= u).min(b - 1);
            let gi = g_value(g, &consts, &alpha, &pool.labels[i], &mut w);
            if j != i {
                let yj = &pool.labels[j];
                for r in 0..n {
                    w.z[r] = f64::from(yj[r]) * (alpha[r] - alpha[n + r]);
                }
                g.matvec(&w.z, &mut w.kz, &mut w.mv);
            }
            let yj = &pool.labels[j];
            for r in 0..n {
                w.yf[r] = f64::from(yj[r]) * w.kz[r];
            }
            consts.dual_gradient(&alpha, &w.yf, &mut w.grad);
            // mu: entropic step on coordinate i, then KL projection (normalization).
            seen_l1 = seen_l1.max((gi - g_ref).abs());
            let scale = if measured_l1 { l1 } else { seen_l1 };
            if scale > 0.0 {
                logmu[i] -= mu_step * (gi - g_ref) / scale;
            }
            normalize(&logmu, &mut mu);
            // alpha: Euclidean step, projection onto the box.
            let gn = dot(&w.grad, &w.grad).sqrt();
            l2 = l2.max(gn);
            let theorem = if l2 > 0.0 {
                eta * tau * ((2 * n) as f64).sqrt() / (std::f64::consts::SQRT_2 * l2)
            } else {
                0.0
            };
            let step = theorem.min(1.0 / curv);
            for (a, &gr) in alpha.iter_mut().zip(&w.grad) {
                *a = (*a + step * gr).clamp(0.0, tau);
            }
            for (s, &a) in alpha_sum.iter_mut().zip(&alpha) {
                *s += a;
            }
            for (s, &m) in mu_sum.iter_mut().zip(&mu) {
                *s += m;
            }
        }
        total.iterations += t_round as u64;
        let smd_seconds = smd_start.elapsed().as_secs_f64();
        let inv = 1.0 / t_round as f64;
        for (ab, &s) in alpha_bar.iter_mut().zip(&alpha_sum) {
            *ab = s * inv;
        }
        mu_bar.clear();
        mu_bar.extend(mu_sum.iter().map(|s| s * inv));
        // The best response to mu_bar (coordinate ascent, warm-started): the gap's first term
        // and the restart point of the next round's alpha iterate.
        let start_alpha = if round == 0 {
            alpha_bar.clone()
        } else {
            alpha_hat.clone()
        };
        let (ah, upper) = best_response(
            g,
            &pool.labels,
            &mu_bar,
            &start_alpha,
            &consts,
            tau,
            &mut kmu,
        );
        alpha_hat = ah;
        // Exact second term at alpha_hat: min_k G(alpha_hat, y_k).
        let gk: Vec<f64> = (0..b)
            .map(|k| g_value(g, &consts, &alpha_hat, &pool.labels[k], &mut w))
            .collect();
        let gmin = gk.iter().copied().fold(f64::INFINITY, f64::min);
        let gmax = gk.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if gmax > gmin {
            l1 = gmax - gmin;
        }
        g_ref = gmin;
        let gap = (upper - gmin).max(0.0);
        alpha.copy_from_slice(&alpha_hat);
        // Label generation from the readout and the heaviest labelings.
        let d: Vec<f64> = (0..n).map(|r| alpha_hat[r] - alpha_hat[n + r]).collect();
        let best_j = pool
            .labels
            .iter()
            .map(|y| pool::violation(g, &d, y, &mut lg))
            .fold(f64::NEG_INFINITY, f64::max);
        let mut starts = vec![readout_sign(&pool.labels, &mu_bar, bal)];
        let mut by_weight: Vec<usize> = (0..b).collect();
        by_weight.sort_by(|&a, &c| mu_bar[c].total_cmp(&mu_bar[a]).then(a.cmp(&c)));
        starts.extend(by_weight.iter().take(3).map(|&k| pool.labels[k].clone()));
        let mut new_label = false;
        let mut best_new: Option<(Vec<i8>, f64)> = None;
        for s in &starts {
            let (y, j) = pool::most_violated(g, &d, s, bal, 30, &mut lg);
            if j > best_j * (1.0 + 1e-12) && best_new.as_ref().is_none_or(|b| j > b.1) {
                best_new = Some((y, j));
            }
        }
        // The generated labeling lowers the second term of the gap: G(alpha_hat, y) is
        // G(alpha_hat, .) at z'Kz = J(y).
        let mut gap = gap;
        if let Some((_, j)) = &best_new {
            let g_new = consts.dual_value(&alpha_hat, *j);
            gap = gap.max(upper - g_new);
        }
        let rel = gap / upper.abs().max(1e-300);
        let converged = rel <= params.tol;
        if let (Some((y, _)), false) = (best_new, converged) {
            if pool.insert(y, bal).is_some() {
                new_label = true;
                let top = logmu.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                logmu.push(top);
                mu.push(0.0);
            }
        }
        let stats = RoundStats {
            split: split_id,
            round,
            iterations: total.iterations,
            gap,
            relative_gap: rel,
            pool: pool.len(),
            new_label,
            smd_seconds,
        };
        total.history.push(stats);
        ctl.part_done(&stats);
        let seen = IterStats {
            iterations: stats.iterations,
            max_violation: stats.relative_gap,
            active: stats.pool,
        };
        if ctl.observer().on_iter(&seen).is_break() {
            status = Status::Interrupted;
            break;
        }
        if converged {
            status = Status::Converged;
            break;
        }
    }
    if status != Status::Converged && total.status == Status::Converged {
        total.status = status;
    }
    let (rounds, last) = total
        .history
        .iter()
        .filter(|h| h.split == split_id)
        .fold((0, None), |(c, _), h| (c + 1, Some(h)));
    total.bisections.push(BisectionStats {
        split: split_id,
        points: n,
        clusters,
        rounds,
        status,
        gap: last.map_or(f64::NAN, |h| h.gap),
        relative_gap: last.map_or(f64::NAN, |h| h.relative_gap),
    });
    // mu_bar covers the pool as it was before the last label generation.
    let readout_pool = &pool.labels[..mu_bar.len()];
    if split_id == 0 {
        total.sign_readout = Some(readout_sign(readout_pool, &mu_bar, bal));
    }
    Ok(match params.readout {
        Readout::Sign => readout_sign(readout_pool, &mu_bar, bal),
        Readout::Heaviest => {
            let k = argmax(&mu_bar);
            readout_pool[k].clone()
        }
        Readout::Decision => readout_decision(g, readout_pool, &mu_bar, &alpha_hat, bal, &mut w),
        Readout::MinG => {
            let gk: Vec<f64> = readout_pool
                .iter()
                .map(|y| g_value(g, &consts, &alpha_hat, y, &mut w))
                .collect();
            let neg: Vec<f64> = gk.iter().map(|v| -v).collect();
            readout_pool[argmax(&neg)].clone()
        }
    })
}

fn argmax(v: &[f64]) -> usize {
    let mut b = 0;
    for (k, &x) in v.iter().enumerate() {
        if x > v[b] {
            b = k;
        }
    }
    b
}

/// The paper's readout with a balanced cut and the heaviest labeling as tie key.
fn readout_sign(labels: &[Vec<i8>], mu: &[f64], bal: Balance) -> Vec<i8> {
    let n = labels[0].len();
    let mut m = vec![0.0; n];
    for (y, &w) in labels.iter().zip(mu) {
        for (s, &v) in m.iter_mut().zip(y) {
            *s += w * f64::from(v);
        }
    }
    let heavy: Vec<f64> = labels[argmax(mu)].iter().map(|&v| f64::from(v)).collect();
    let mut order = Vec::with_capacity(n);
    let mut out = vec![0i8; n];
    pool::balanced_cut(&m, &heavy, bal, &mut order, &mut out);
    out
}

/// The sign of the mixture classifier's decision values, balanced, ties by the vote `m`.
fn readout_decision(
    g: &Gram,
    labels: &[Vec<i8>],
    mu: &[f64],
    alpha_bar: &[f64],
    bal: Balance,
    w: &mut Work,
) -> Vec<i8> {
    let n = g.n();
    let mut m = vec![0.0; n];
    for (y, &wt) in labels.iter().zip(mu) {
        for (s, &v) in m.iter_mut().zip(y) {
            *s += wt * f64::from(v);
        }
    }
    for r in 0..n {
        w.z[r] = m[r] * (alpha_bar[r] - alpha_bar[n + r]);
    }
    g.matvec(&w.z, &mut w.kz, &mut w.mv);
    let f = &w.kz;
    // Sort by decision value (ties by the vote, then index) and cut at the widest gap among
    // the admissible positions: without a bias term the threshold 0 is arbitrary, the widest
    // gap is the low-density separation of the mixture's decision values.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| {
        f[b].total_cmp(&f[a])
            .then(m[b].total_cmp(&m[a]))
            .then(a.cmp(&b))
    });
    let zero_cut = (0..n).filter(|&i| f[i] > 0.0).count().clamp(bal.lo, bal.hi);
    let mut best = (zero_cut, f64::NEG_INFINITY);
    for p in bal.lo.max(1)..=bal.hi.min(n - 1) {
        let gap = f[order[p - 1]] - f[order[p]];
        let closer = p.abs_diff(zero_cut) < best.0.abs_diff(zero_cut);
        if gap > best.1 || (gap == best.1 && closer) {
            best = (p, gap);
        }
    }
    let mut out = vec![0i8; n];
    for (r, &i) in order.iter().enumerate() {
        out[i] = if r < best.0 { 1 } else { -1 };
    }
    out
}

/// Coordinate ascent for `max_{alpha in [0, tau]^{2n}} phi(mu, alpha)`, the ODM dual with the
/// mixed kernel `K_mu = K . sum_k mu_k y_k y_k'` (exact 1-D steps `grad / (K_ii + 2c)` and
/// `grad / (K_ii + 2c/nu)`, clipped), from `start`, until the largest projected gradient is
/// below [`BR_TOL`] or after [`BR_PASSES`] passes. Dense kernel: `K_mu` is formed in `kmu`
/// (`O(n^2 |supp mu|)`) and a pass costs `O(n^2)`; linear: one weight vector per labeling in
/// the support, a pass costs `O(n d |supp mu|)`. Returns the point and `phi` there (recomputed).
// One piece: one coordinate-ascent loop, with its dense and linear forms of the same pass side
// by side.
fn best_response(
    g: &Gram,
    labels: &[Vec<i8>],
    mu: &[f64],
    start: &[f64],
    c: &OdmConsts,
    tau: f64,
    kmu: &mut Vec<f64>,
) -> (Vec<f64>, f64) {
    let n = g.n();
    let supp: Vec<usize> = (0..mu.len()).filter(|&k| mu[k] > 1e-6).collect();
    let ws: f64 = supp.iter().map(|&k| mu[k]).sum();
    let wk: Vec<f64> = supp.iter().map(|&k| mu[k] / ws).collect();
    let mut alpha = start.to_vec();
    let mut d: Vec<f64> = (0..n).map(|i| alpha[i] - alpha[n + i]).collect();
    let two_c = 2.0 * c.c;
    let two_c_nu = two_c / c.nu;
    let diag: Vec<f64> = (0..n).map(|i| g.diag(i)).collect();
    // One coordinate step on alpha_a; returns (|projected gradient|, delta on d_i).
    let step = |alpha: &mut [f64], a: usize, v_i: f64| -> (f64, f64) {
        let i = a % n;
        let (grad, curv, sign) = if a < n {
            (
                (1.0 - c.theta) - v_i - two_c * alpha[a],
                diag[i] + two_c,
                1.0,
            )
        } else {
            (
                v_i - (1.0 + c.theta) - two_c_nu * alpha[a],
                diag[i] + two_c_nu,
                -1.0,
            )
        };
        let pg = if alpha[a] <= 0.0 {
            grad.max(0.0)
        } else if alpha[a] >= tau {
            grad.min(0.0)
        } else {
            grad
        };
        if pg == 0.0 {
            return (0.0, 0.0);
        }
        let new = (alpha[a] + grad / curv).clamp(0.0, tau);
        let delta = new - alpha[a];
        alpha[a] = new;
        (pg.abs(), sign * delta)
    };
    match g {
        Gram::Dense { k, .. } => {
            kmu.clear();
            kmu.resize(n * n, 0.0);
            kmu.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
                let kr = &k[i * n..(i + 1) * n];
                for (j, o) in row.iter_mut().enumerate() {
                    let mut m = 0.0;
                    for (&s, &w8) in supp.iter().zip(&wk) {
                        let y = &labels[s];
                        m += w8 * f64::from(y[i] * y[j]);
                    }
                    *o = kr[j] * m;
                }
            });
            let mut v = vec![0.0; n];
            let kmu_ref: &[f64] = kmu;
            let matvec = |d: &[f64], v: &mut [f64]| {
                v.par_iter_mut().enumerate().for_each(|(i, o)| {
                    *o = dot(&kmu_ref[i * n..(i + 1) * n], d);
                });
            };
            matvec(&d, &mut v);
            for _ in 0..BR_PASSES {
                let mut viol: f64 = 0.0;
                for i in 0..n {
                    for a in [i, n + i] {
                        let (pg, dd) = step(&mut alpha, a, v[i]);
                        viol = viol.max(pg);
                        if dd != 0.0 {
                            d[i] += dd;
                            for (vj, &kj) in v.iter_mut().zip(&kmu_ref[i * n..(i + 1) * n]) {
                                *vj += dd * kj;
                            }
                        }
                    }
                }
                if viol <= BR_TOL {
                    break;
                }
            }
            matvec(&d, &mut v);
            (alpha.clone(), c.dual_value(&alpha, dot(&d, &v)))
        }
        Gram::Linear(p) => {
            let dim = p.d;
            let ns = supp.len();
            let mut wmat = vec![0.0; ns * dim];
            let rebuild = |d: &[f64], wmat: &mut [f64]| {
                wmat.iter_mut().for_each(|x| *x = 0.0);
                for (s, &k) in supp.iter().enumerate() {
                    let y = &labels[k];
                    let wrow = &mut wmat[s * dim..(s + 1) * dim];
                    for j in 0..n {
                        let f = f64::from(y[j]) * d[j];
                        if f != 0.0 {
                            for (a, &x) in wrow.iter_mut().zip(p.row(j)) {
                                *a += f * x;
                            }
                        }
                    }
                }
            };
            rebuild(&d, &mut wmat);
            for _ in 0..BR_PASSES {
                let mut viol: f64 = 0.0;
                for i in 0..n {
                    let xi = p.row(i);
                    for a in [i, n + i] {
                        let mut v_i = 0.0;
                        for (s, &k) in supp.iter().enumerate() {
                            v_i += wk[s]
                                * f64::from(labels[k][i])
                                * dot(xi, &wmat[s * dim..(s + 1) * dim]);
                        }
                        let (pg, dd) = step(&mut alpha, a, v_i);
                        viol = viol.max(pg);
                        if dd != 0.0 {
                            d[i] += dd;
                            for (s, &k) in supp.iter().enumerate() {
                                let f = dd * f64::from(labels[k][i]);
                                for (wv, &x) in wmat[s * dim..(s + 1) * dim].iter_mut().zip(xi) {
                                    *wv += f * x;
                                }
                            }
                        }
                    }
                }
                if viol <= BR_TOL {
                    break;
                }
            }
            rebuild(&d, &mut wmat);
            let quad: f64 = (0..ns)
                .map(|s| {
                    let r = &wmat[s * dim..(s + 1) * dim];
                    wk[s] * dot(r, r)
                })
                .sum();
            (alpha.clone(), c.dual_value(&alpha, quad))
        }
    }
}

/// Projected-gradient tolerance of [`best_response`].
pub const BR_TOL: f64 = 1e-5;
/// Pass limit of [`best_response`].
pub const BR_PASSES: usize = 300;
