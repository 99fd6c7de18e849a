//! Minimum enclosing balls by core-sets, and the distributed core-set consensus (Algorithm 1).
//!
//! # Problem
//! The minimum enclosing ball (MEB) of points `s_1..s_N` in a feature space,
//! `min_{z, r} r^2  s.t.  |z - s_i|^2 <= r^2` (paper eq. 1), through its dual (eq. 2/3):
//!
//! ```text
//! max_x  g'x - x'Gx   s.t.  1'x = 1, x >= 0      G_ij = K~(s_i, s_j),  g = diag(G)
//! ```
//!
//! with centre `c = sum_i x_i phi~(s_i)`, optimal value `r*^2`, and `|c|^2 = x'Gx`. The kernel
//! `K~` is the problem mapping ([`Problem`]):
//!
//! | problem | `K~(a, b)` | diagonal |
//! |---|---|---|
//! | MEB (eq. 1) | `a'b` (+ ridge `delta` when `id_a = id_b`) | not needed constant |
//! | SVDD (eq. 8) | `K(a, b)` (+ ridge) | `K(a, a) = c` required (model form) |
//! | 2-norm soft-margin SVM (eq. 6/7) | `l_a l_b (K(a, b) + 1) + [id_a = id_b]/C` | `c + 1 + 1/C` |
//! | one-class L2-SVM (eq. 6, `b = 0`, `l = 1`) | `K(a, b) + [id_a = id_b]/C` | `c + 1/C` |
//!
//! The `delta_ij / C` term depends on sample identity (global ids), never on vector equality;
//! the augmented features `[l phi; l; e_i/sqrt(C)]` are never built.
//!
//! # Symbols (paper -> code)
//! | paper | code |
//! |---|---|
//! | `eps`, `ceil(1/eps)` | [`CoresetValidParams::eps`], [`CoresetValidParams::k`] |
//! | `C` (core-set), `C_a`, `a`, `b` | `cur`, `ca`, `a`, the removed position in [`bc::coreset`] |
//! | `r^2(C)`, `c(C)` | [`meb::SimplexMeb::r2`], [`meb::SimplexMeb::c2`] (`|c|^2`) |
//! | `S_i`, `C_i`, `S_tmp`, `C_i0` | a node's shard, its [`consensus::CoreSetMsg`], the pool, the warm start |
//! | `G_c(t)`, `N_i^O(t)` | [`consensus::Graph`], [`consensus::Schedule::out_edges`] |
//!
//! # Algorithms
//! - [`meb`]: exact MEB of a small set: a primal active-set method on the simplex QP (the KKT system
//!   of the working set solved by Gaussian elimination with partial pivoting), kernel columns
//!   computed on demand so it also gives the exact MEB of a few thousand points.
//! - [`bc`]: the Badoiu-Clarkson swap routine `coreset(P, C)` with `|C| = k = ceil(1/eps)`
//!   (Badoiu & Clarkson, "Optimal core-sets for balls", 2008, as restated in the paper's
//!   Section IV-A): farthest point `a`; `C_a = C + a`; drop the point whose removal leaves the
//!   largest ball; accept only on a strict increase of `r^2`; otherwise return.
//! - [`fit`]: the centralized core-set of all points.
//! - [`consensus`]: Algorithm 1 ([`consensus::fit`]) over a [`consensus::Transport`], with an
//!   in-process network.
//! - [`model`]: the SVDD / L2-SVM / one-class L2-SVM results as ordinary [`crate::svm::SvmModel`]s.
//! - [`quality`]: the exact MEB of all points and the coverage ratio of a core-set.
//! - [`summary`]: the report both command lines print, and the paper's Figures 1-2.
//!
//! # Stopping rules
//! - Active set: all points within the ball up to `1e-12` relative in the multiplier; at most
//!   `50 m + 100` iterations (a returned flag, never a panic).
//! - Swap routine: the paper's rule (no strict increase), with a relative guard
//!   `r_new^2 > r_old^2 (1 + tol)` against floating-point cycles (`tol` = 1e-10 by default).
//! - Consensus (the paper gives none): the **local rule** ([`consensus::StopRule::Local`], the
//!   default). A node stops (freezes its set, ignores what it receives, keeps sending its set)
//!   once its core-set has not changed for `W = 2 D + 1` consecutive rounds, where `D` is the
//!   flooding time of the communication schedule ([`consensus::Schedule::flooding_time`]: the
//!   directed diameter for a static graph); the run ends when every node has stopped (the MPI
//!   transport learns that from the per-round diagnostic reduction; a peer-to-peer deployment
//!   would flood a "stopped" flag, which is safe because of the claim below).
//!   *Claim, for a static strongly connected graph (ring, grid, complete, edge list) with
//!   synchronous activation, no loss and no delay:* when node `i` stops after round `t`, all
//!   nodes hold its set and are at a fixed point. Proof: keys `(r^2, ids)` never decrease and
//!   a node's key after round `s + dist(j, i)` is at least node `j`'s key after round `s`
//!   (every round every node sends, and the warm start is the largest received key). With `K`
//!   node `i`'s key over rounds `t-W..t`: every key after a round `s <= t - D` is `<= K`, and
//!   every key after a round `s >= t - W + D` is `>= K`; with `W = 2 D + 1` all nodes hold key
//!   `K` (the same set: the key contains the ids) after rounds `t-D-1` and `t-D`, so in round
//!   `t-D` every node ran the routine on its own data with only that set received and kept
//!   it: the inputs repeat forever. (The digest's `2 diam + 1` bound from constraints consensus,
//!   re-derived here.) *Time-varying Erdos-Renyi graphs, asynchronous activation, loss, delay:*
//!   `D` is the flooding time from round 0 of the seeded schedule (every node can compute it:
//!   the schedule is a hash of the seed), a heuristic without guarantee (later rounds may
//!   flood more slowly, and a delayed stale message may still improve a set); `agreed` and the
//!   global check tell whether it worked, and the window can be set by hand.
//! - The **global check** ([`consensus::StopRule::Global`], and a diagnostic under the local
//!   rule: `quiescent`, `quiescent_round`): all nodes hold the same core-set, every node has run
//!   its routine since the last change anywhere with only that set in its inbox, and no older
//!   message is still in flight; from then on every node's inputs repeat exactly, so the state
//!   is a fixed point. No node can check it alone. A round budget bounds every run; `agreed` is
//!   reported.
//!
//! # Cost
//! One swap: a farthest-point scan of the pool (`|P| k` kernel values), one `(k+1)`-point MEB,
//! and `k+1` further `k`-point MEBs only when every point of `C_a` is a support point. One MEB
//! of `m` points: `O(m^3)` per active-set step. A consensus message: `k` ids and the distinct
//! points (`d` floats, an id and a label each) plus two floats.
//!
//! # Corrections and deviations (see the digest)
//! - Remark IV.6's test "no constraint violated at `r(C)(1 - eps)`" is a misprint: the test is
//!   `|s - c(C)| <= (1 + eps) r(C)` for all `s`, which implies the paper's `(1+eps)^2 r*^2` bound.
//! - Ties (Assumption IV.4 rarely holds: multisets, padded sets) are broken by a total order
//!   `key(C) = (r^2(C), sorted id list)` in the warm start and in the choice of `b`; every set is
//!   canonicalised (sorted by id) before its Gram matrix is formed, so every node computes the same
//!   `r^2` bits for the same set.
//! - MEB and SVDD add a ridge `delta` (default `1e-12`) to `K~(a, a)`: the MEB of the points lifted
//!   by `sqrt(delta) e_id`, so that two samples with identical vectors (or affinely dependent sets)
//!   keep the KKT system non-singular. The radius moves by at most `delta`.
//! - Nodes with `1 < |S_i| < k` points start from their points padded cyclically (the paper does not
//!   say); nodes with more start from a seeded random subset (Remark IV.2).

pub mod bc;
pub mod consensus;
pub mod meb;
pub mod model;
pub mod quality;
pub mod space;
pub mod summary;

use thiserror::Error;

use crate::error::{DataError, ParamError};
use crate::fit::{Control, Fit, Report};
use crate::solver::Status;
use crate::svm::{KernelKind, KernelParams};

pub use consensus::{
    Activation, ConsensusData, ConsensusParams, ConsensusReport, ConsensusValidParams, CoreSetMsg,
    Graph, InProcess, Round, Schedule, StopRule, Transport,
};
pub use model::CoresetModel;
pub use space::{points_for, FeatureKernel, PointSet, Problem};

/// Errors of the core-set module.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum CoresetError {
    /// An invalid parameter.
    #[error(transparent)]
    Param(#[from] ParamError),
    /// Invalid data.
    #[error(transparent)]
    Data(#[from] DataError),
    /// The kernel's diagonal `K(p, p)` is not constant, which the mapping needs.
    #[error("the kernel diagonal is not constant (row {row}, 0-based: K(p,p) = {value}, expected {expected}); use RBF or normalized rows")]
    NonConstantDiagonal {
        /// 0-based row.
        row: usize,
        /// `K(p, p)` there.
        value: f64,
        /// `K(p, p)` of the first row.
        expected: f64,
    },
    /// A node has no data.
    #[error("node {node} has no data (the data has {n} rows for {nodes} nodes)")]
    EmptyNode {
        /// 0-based node.
        node: usize,
        /// Rows.
        n: usize,
        /// Nodes.
        nodes: usize,
    },
    /// The communication graph can never connect all nodes: consensus is impossible.
    #[error(
        "the communication graph is not strongly connected ({reason}): consensus is impossible"
    )]
    Disconnected {
        /// Why.
        reason: String,
    },
    /// A bad edge list.
    #[error("edge list: {0}")]
    Edges(String),
    /// The transport failed (MPI).
    #[error("transport: {0}")]
    Transport(String),
}

/// Checked parameters of the core-set routine, the only form its fits accept: made by
/// [`CoresetParams::check`], read through the getters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CoresetValidParams {
    pub(crate) problem: Problem,
    pub(crate) kernel: KernelParams,
    pub(crate) eps: f64,
    pub(crate) tol: f64,
    pub(crate) seed: u64,
}

impl CoresetValidParams {
    /// The problem mapped onto the MEB (with its `C` for the 2-norm SVMs).
    pub fn problem(&self) -> Problem {
        self.problem
    }
    /// The base kernel before resolution against the data (ignored by [`Problem::Meb`]).
    pub fn kernel(&self) -> KernelParams {
        self.kernel
    }
    /// Tolerance `eps` in (0, 1).
    pub fn eps(&self) -> f64 {
        self.eps
    }
    /// Relative guard of the strict-increase test.
    pub fn tol(&self) -> f64 {
        self.tol
    }
    /// Seed of the random initial subsets (and of a consensus run's network).
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// Core-set size used on `n` points: `min(k, n)` (at least 1). A core-set holding all `n`
    /// points is exact, so the cap loses nothing and bounds every buffer by the data size.
    pub fn k_for(&self, n: usize) -> usize {
        self.k().min(n.max(1))
    }
    /// Core-set size `k = ceil(1/eps)` (before the cap of [`Self::k_for`]).
    pub fn k(&self) -> usize {
        // 1/eps rounds; a value within 1e-9 of an integer counts as that integer (eps = 0.1 -> 10).
        let inv = 1.0 / self.eps;
        let r = inv.round();
        if (inv - r).abs() <= 1e-9 * r.max(1.0) {
            r as usize
        } else {
            inv.ceil() as usize
        }
    }
    /// The problem kernel `K~` on points of width `n_features`: the base kernel resolved by
    /// [`KernelParams::resolve`] (gamma `Auto` is `1 / n_features`).
    pub fn feature_kernel(&self, n_features: usize) -> FeatureKernel {
        FeatureKernel::checked(self.problem, self.kernel.resolve(n_features))
    }
}

/// Parameters of the core-set routine, unchecked: a builder whose
/// [`check`](CoresetParams::check) gives the [`CoresetValidParams`] a fit accepts.
///
/// ```
/// use marginkit::coreset::{CoresetParams, Problem};
/// use marginkit::svm::{Gamma, KernelKind, KernelParams};
///
/// let rbf = KernelParams { kind: KernelKind::Rbf, gamma: Gamma::Value(0.5), ..KernelParams::default() };
/// let p = CoresetParams::new().problem(Problem::Svdd).kernel(rbf).eps(0.05).check()?;
/// assert_eq!(p.k(), 20);
/// assert!(CoresetParams::new().eps(f64::NAN).check().is_err());
/// # Ok::<(), marginkit::error::ParamError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CoresetParams(CoresetValidParams);

impl Default for CoresetParams {
    /// The minimum enclosing ball, RBF base kernel with gamma `1 / n_features` (for the kernel
    /// problems), `eps` 0.1, `tol` 1e-10, seed 1.
    fn default() -> Self {
        Self(CoresetValidParams {
            problem: Problem::Meb,
            kernel: KernelParams::default(),
            eps: Self::DEFAULT_EPS,
            tol: 1e-10,
            seed: Self::DEFAULT_SEED,
        })
    }
}

impl CoresetParams {
    /// Default tolerance `eps` (core-sets of `ceil(1/eps)` points).
    pub const DEFAULT_EPS: f64 = 0.1;
    /// Default seed.
    pub const DEFAULT_SEED: u64 = 1;

    /// The defaults (see [`Default`]).
    pub fn new() -> Self {
        Self::default()
    }
    /// The problem (default [`Problem::Meb`]).
    #[must_use]
    pub fn problem(mut self, problem: Problem) -> Self {
        self.0.problem = problem;
        self
    }
    /// The base kernel of SVDD and the 2-norm SVMs (gamma `Auto` resolves to `1 / n_features`
    /// of the points; [`Problem::Meb`] always uses the rows themselves).
    #[must_use]
    pub fn kernel(mut self, kernel: KernelParams) -> Self {
        self.0.kernel = kernel;
        self
    }
    /// Tolerance `eps` in (0, 1): the core-set has `k = ceil(1/eps)` points, capped at the
    /// total number of points `n` (a core-set of all points is exact): `min(k, n)` in the
    /// centralized solve and on every distributed node alike (the total is known to all nodes:
    /// summed over the processes at the start, see [`consensus::Transport::sum`]).
    #[must_use]
    pub fn eps(mut self, eps: f64) -> Self {
        self.0.eps = eps;
        self
    }
    /// Relative guard of the strict-increase test, in `[0, 1e-3]` (default 1e-10).
    #[must_use]
    pub fn tol(mut self, tol: f64) -> Self {
        self.0.tol = tol;
        self
    }
    /// Seed of the random initial subsets (default 1).
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.0.seed = seed;
        self
    }

    /// Checks every parameter (NaN-safe): a precomputed kernel (core-sets need kernel values
    /// between any two points), the kernel's gamma and coef0 for the kernel problems, `C > 0`
    /// for the 2-norm SVMs, `eps` in (0, 1) and `tol` in [0, 1e-3].
    ///
    /// # Errors
    /// [`ParamError`] naming the first invalid parameter.
    pub fn check(self) -> Result<CoresetValidParams, ParamError> {
        let p = &self.0;
        if p.kernel.kind == KernelKind::Precomputed {
            return Err(ParamError::Incompatible(
                "a precomputed kernel cannot be used by core-sets (they need K between any two points)",
            ));
        }
        if p.problem != Problem::Meb {
            // The gamma of `Gamma::Auto` is valid at every width, so the resolved kernel is
            // valid for all data if it is valid at one.
            p.kernel.resolve(1).check()?;
        }
        if let Problem::L2Svm { c } | Problem::OneClassL2 { c } = p.problem {
            crate::error::positive("C", c)?;
        }
        if !(p.eps.is_finite() && p.eps > 0.0 && p.eps < 1.0) {
            return Err(ParamError::OutOfRange {
                name: "eps",
                value: p.eps,
                range: "(0, 1)",
            });
        }
        if !(p.tol.is_finite() && (0.0..=1e-3).contains(&p.tol)) {
            return Err(ParamError::OutOfRange {
                name: "tol",
                value: p.tol,
                range: "[0, 1e-3]",
            });
        }
        Ok(self.0)
    }
}

/// What the centralized core-set routine did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoresetReport {
    /// Core-set size used: `min(ceil(1/eps), n)`.
    pub k: usize,
    /// Swaps accepted by the routine.
    pub swaps: usize,
}

impl Report for CoresetReport {
    /// Always [`Status::Converged`]: the swap routine ends by its rule (no strict increase of
    /// `r^2`, which cannot increase forever over a finite set).
    fn status(&self) -> Status {
        Status::Converged
    }
}

/// The centralized core-set: the routine `coreset(S, C0)` of [`bc::coreset`] on all of
/// `points`, from `k` of them chosen by the seed.
///
/// The kernel's gamma `Auto` is resolved against the width of the points. The routine runs to
/// its stopping rule: the observer of `ctl` is not consulted, and there is no state to resume.
///
/// # Errors
/// [`DataError::Empty`] for no points; [`CoresetError::NonConstantDiagonal`] for the SVM
/// mappings on points whose kernel diagonal varies.
pub fn fit(
    params: &CoresetValidParams,
    points: &PointSet,
    _ctl: &mut Control,
) -> Result<Fit<CoresetModel, CoresetReport>, CoresetError> {
    let kern = params.feature_kernel(points.dim());
    kern.check_points(points)?;
    let pool = bc::Pool::new(points, None);
    let k = params.k_for(points.len());
    let init = bc::initial_members(points.len(), k, params.seed, u64::MAX);
    let res = bc::coreset(&pool, &kern, init, params.tol);
    Ok(Fit {
        model: CoresetModel {
            set: CoreSetMsg::from_result(&pool, &res, 0, points.dim()),
            kernel: kern,
        },
        report: CoresetReport {
            k,
            swaps: res.swaps,
        },
        checkpoint: None,
    })
}

/// A counter-based pseudo-random number (splitmix64 of the mixed key): the same `(seed, a, b, c)`
/// gives the same value on every node and rank, with no generator state.
pub fn hash4(seed: u64, a: u64, b: u64, c: u64) -> u64 {
    let mut z = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(a.wrapping_mul(0xBF58_476D_1CE4_E5B9))
        .wrapping_add(b.wrapping_mul(0x94D0_49BB_1331_11EB))
        .wrapping_add(c.wrapping_mul(0xD6E8_FEB8_6659_FD93));
    for _ in 0..2 {
        z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut x = z;
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z = x ^ (x >> 31);
    }
    z
}

/// `hash4` as a uniform number in [0, 1).
pub fn unif4(seed: u64, a: u64, b: u64, c: u64) -> f64 {
    (hash4(seed, a, b, c) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}
