//! AID for the C-SVM with an unregularized bias: linear (aggregated problems by [`smo`]/[`dcd`]) and
//! kernel (the paper's Appendix B: averaged Gram entries, aggregated problems by [`smo`]).
//!
//! # Problem (paper eq. 5/7; what `marginkit train -t 0 -c M` solves for the linear kernel)
//!
//! ```text
//! E* = min_{w,b} 1/2 |w|^2 + M sum_i max(0, 1 - y_i (w phi(x_i) + b))
//! ```
//!
//! # Aggregated problem (eq. 9 / 21)
//!
//! Clusters are label-pure. With centroids `x_k = mean_{C_k} x_i` and labels `y_k`,
//! `F^t = min 1/2 |w|^2 + M sum_k |C_k| max(0, 1 - y_k (w phi_k + b))`, whose dual is the box QP
//! `min 1/2 a'Qa - e'a, y'a = 0, 0 <= a_k <= M |C_k|` ([`BoxQp`] with per-sample bounds):
//! * linear: `Q = Y Xc Xc' Y` on the centroid matrix, solved by the method of multipliers
//!   over [`dcd::solve_svc`] without the equality (the *augmented-Lagrangian DCD*, below; the
//!   default at every size) or, with `AidLinearEngine::SmoUpTo(n)`, by
//!   [`smo::solve`] with a linear kernel on the centroids up to `n` clusters (its warm start's
//!   gradient `Q a = Y Xc w(a)` from `w`, `O(K d)`, instead of one kernel column per nonzero
//!   dual, which costs more than the solve itself at 10,000+ clusters). An equality-constrained
//!   DCD (maximal-violating-pair steps, no shrinking) is not offered: it crawls on these
//!   weighted problems (bounds `M|C_k|` spanning orders of magnitude: measured 35x slower than
//!   SMO at 50,000 x 10, and 1,178 s at 400,000 x 50, most of it in the last aggregated problems
//!   past 20,000 clusters). `linear_engine: AidLinearEngine::Dcd` / CLI `--engine dcd` always uses the
//!   augmented-Lagrangian DCD, `SmoUpTo(n)` moves the switch;
//! * kernel: `Q_kq = y_k y_q mean_{i in C_k, j in C_q} K(x_i, x_j)` (the inner product of the
//!   feature-space centroids), solved by [`smo::solve`] on a [`DenseQ`]. The cluster-pair sums
//!   `S_kq` are kept between iterations and updated through cluster kernel rows
//!   `V_k(j) = sum_{i in C_k} K(x_i, x_j)`: when `a` splits, only its smaller children's rows are
//!   computed and every other entry follows from `S_a. = sum over children` (see
//!   `update_gram`); rows `V_k` are stored (f32, up to 1 GiB, support clusters first) so that the larger child's row is
//!   `V_a - V_small` and the decision values are `f(x_j) = sum_k coef_k V_k(j) + b` without new
//!   kernel values.
//!
//! The lower bound is the aggregated *dual* value `e'a - 1/2 a'Qa` recomputed in f64: any
//! feasible `a` bounds `F^t` from below, and `F^t <= E*` (convexity of the hinge, Prop. 4), so the
//! reported gap is valid even when the aggregated solve stops early (digest P7).
//!
//! Every problem solved by SMO above (and the initial sample fit and the Nystrom steering's
//! exact finish) goes through [`crate::solver::engine`]: the pair SMO by default, the block
//! working-set SMO with `qp_engine: SvmSolver::Block` / CLI `--solver block`.
//!
//! # Sides and declustering
//!
//! `s_i = 1 - y_i f(x_i)`; side code 1 if `s_i > eps`, else 0 (`eps = 1e-9`), the same predicate
//! for the test and the split. If every cluster is uniform, `E^t` equals the aggregated primal
//! (Prop. 3: the hinge is linear on one side of the margin and zero on the other).
//!
//! # Initial clusters (§4.2)
//!
//! Per class, `ceil(r^0 n_c)` clusters with `r^0 = max(1.1 m / n_c, 1e-4)` (the paper's rule applied
//! per class, digest P8) by one iteration of k-means on the 1-D signed distances to a hyperplane
//! (linear) or on the decision values of a kernel SVM (kernel), both fitted on a seeded sample of
//! `min(n, 2000)` rows.
//!
//! # Cost per iteration
//!
//! Linear: one DCD solve on `K` centroids plus `O(nnz)`. Kernel: the first iteration computes
//! every `V_k` (`n^2` kernel values, vectorized); later ones `n * (rows in the smaller children of
//! split clusters)` kernel values plus `O(n K)` for the sums and decision values (more when the
//! row budget is exhausted: missing support rows are recomputed), and one SMO solve on `K`
//! variables with a dense `K x K` matrix (the paper never ran kernel AID, digest P18).
//!
//! Warm start: a split cluster's children start from `a_parent |C_child| / |C_parent|` (inside
//! their boxes, the equality unchanged).
//!
//! # Augmented-Lagrangian DCD (linear aggregated problems above the SMO switch)
//!
//! The equality `y'a = 0` of the aggregated dual is moved into the objective with a multiplier
//! `lambda` and a penalty `rho/2 (y'a)^2`. Since `Q + rho y y' = Y [Xc, sqrt(rho)] [Xc, sqrt(rho)]' Y`,
//! each subproblem `min 1/2 a'(Q + rho yy')a + (lambda y - e)'a, 0 <= a <= u` is exactly the
//! bias-feature dual that [`dcd::solve_svc`] solves (LIBLINEAR's `-B` with `B = sqrt(rho)` and a
//! shifted linear term; shrinking, no equality), warm-started from the previous round's duals
//! (and, in the first round, from the parent clusters' disaggregated duals). The subproblem's
//! effective bias `lambda + rho y'a` is the next multiplier (the method of multipliers =
//! proximal point on the bias: it converges for any `rho > 0`; `rho` starts at the mean
//! `|x_c|^2` and grows tenfold when `|y'a|` does not fall fourfold in a round whose subproblem
//! converged). The first multiplier is the previous AID iteration's bias. Certificate: after
//! each round the larger class gives up the excess `|y'a|` (its free duals scaled down first),
//! which makes the duals feasible for the equality-constrained dual; its dual value
//! `D(a) = e'a - 1/2 |w(a)|^2` is the iteration's lower bound, valid whatever the number of
//! rounds (at most 60) and however inexact they were. The solve stops after the first round
//! where either LIBSVM's maximal violation `m(a) - M(a)` at that feasible point is within the
//! solver tolerance (the subproblem tolerance is a quarter of it, and shrinks when the
//! subproblem is already solved), or the aggregated duality gap `P(w(a), b) - D(a)` is at most
//! `AL_GAP_FRACTION` (0.1) of the AID gap tolerance times `P`, where `b` minimizes the
//! aggregated primal `P` at `w(a)` (a weighted-median search over the hinge breakpoints,
//! `best_bias`). Round `r` runs at most `100 * 2^r` DCD passes (capped at
//! [`dcd::DEFAULT_MAX_PASSES`]), so the gap is tested often and a slowly converging subproblem
//! never spends 10,000 passes on digits the certificate does not need.
//!
//! Why the gap test keeps the AID certificate exact: the AID loop stops on
//! `(E^best - max_s D_s) / E^best <= gap_tol`, with `D_s` a feasible point's dual value
//! (a valid lower bound of `F^s <= E*`). When every cluster is uniform, `E^t = P(w, b)`
//! (Prop. 3), so the last iteration's gap is at most `AL_GAP_FRACTION * gap_tol` and the run
//! stops on the gap; the inexactness can only cost extra splits, never a wrong certificate.
//! `rho` grows only after rounds whose subproblem converged: growing it also after rounds that
//! hit the pass limit drives it to `1e19` within one aggregated problem at 800,000 x 50 (DCD on
//! a bias feature of `3e9`), and the run never finishes; as it is, 800,000 x 50 takes 11 CPU s
//! at gap 1e-6.
//!
//! # Deviation: Nystrom steering with an exact finish ([`KernelSteering::Nystrom`])
//!
//! Appendix B's pair sums cost `n^2` kernel values before the first aggregated solve. With
//! `KernelSteering::Nystrom { rank, steer_gap }`, `rank` seeded landmarks `L` give features
//! `z_i = R^{-1} k_L(x_i)` (`K_LL = R R'`, pivot-dropping Cholesky; `n rank` kernel values and
//! `n rank^2 / 2` flops), linear AID runs on `z` (cheap aggregation; it stops at the relative
//! gap `steer_gap` of the *approximate* problem), and its final clusters give the feasible duals
//! `a_i = a_k / |C_k|` (§3.6) of the full problem. SMO then solves the full kernel problem from
//! that start (its gradient from two vectorized kernel sums, `n * #nonzero` kernel values),
//! at `eps = 1e-3` and then tenfold tighter until its duality gap, computed by
//! [`kkt::check_gradient`] from the final (unshrunk) gradient, is within `gap_tol` of the primal.
//! The returned model uses the gap-minimizing bias, so `E^best` is the returned model's full
//! primal and the lower bound is the dual value `e'a - 1/2 a'Qa` of the exact problem: the
//! certificate is exact, the steering only chooses the start. The run's records are the
//! steering iterations (values of the Nystrom problem, not bounds of the exact one) followed
//! by one record for the exact finish (`r = 1`). Measured (bench/results/aid.md,
//! RBF, m = 10): 6x less CPU than the averaged Gram at 30,000 rows, where it is no faster than
//! our cold full SMO (the certificate needs every decision value once, `n * nSV` kernel values,
//! about what SMO itself spends there); 0.54x our SMO and 0.15-0.16x LIBSVM at 100,000-150,000.
//! That pass uses tiled panel sums ([`crate::kernel::qmatrix`]'s layout) and the steering's
//! initial sample is fitted by SMO (`SampleFit::Smo`): 0.19-0.21x LIBSVM's CPU at 30,000 x 10
//! (C = 0.1, gamma = 0.1; 0.21x at C = 1), 0.19x at 60,000.
//!
//! **Narrow kernels: the residual guard** ([`NystromRank::Auto`], the default; CLI
//! `--rank auto`). The features capture the fraction `|z_i|^2 / K(x_i, x_i)` of each row's
//! kernel; the rest, the relative residual, is what the steering cannot see. Before any
//! feature is built, the [`AUTO_RANK`] = 100 landmarks of the seeded draw are factored and the
//! mean relative residual is measured on a seeded sample of [`RESIDUAL_SAMPLE`] = 1,000 other
//! rows (`100^2 + 1000 * 100` kernel values, 0.03-0.07 s measured). At most
//! [`AUTO_MAX_RESIDUAL`] = 0.9: steer with those 100 landmarks as above. Above: **no
//! steering**, the exact SMO starts cold (alpha = 0, no start-gradient pass): our full SMO plus
//! the certificate loop, one record. Measured at 30,000 x 10, C = 0.1 (CPU s, rank
//! 100 steered vs cold full SMO): gamma 0.1, residual 0.27: 1.7 vs 2.7; gamma 0.2, 0.64: 2.1 vs
//! 2.7; gamma 0.3, 0.84: 2.7 vs 3.1; gamma 0.4, 0.92: 4.2 vs 4.1 (break-even); gamma 0.5, 0.96:
//! 7.9 vs 5.0 (the steered start puts thousands of duals at the bound that the exact problem
//! frees again: 15,656 finishing SMO iterations where a cold start takes 9,343). So the guard
//! runs gamma 0.5 cold: 5.2 CPU s, 0.24-0.30x LIBSVM's CPU (steered: 0.46x), about our full
//! SMO's time (same iterations; bench rounds +4% median, +8% at C = 1, standalone pairs equal
//! within noise: 4.65 vs 4.95 and 5.03 vs 5.01 CPU s); gamma 0.1 steers (0.19-0.21x).
//! Growing the rank does not pay at this size: the residual falls slowly on a
//! narrow kernel (gamma 0.5: 0.95 at rank 100, 0.87 at 400, 0.67 at 1,600), and the linear
//! steering on more features costs more than the finish saves (gamma 0.2: rank 200 2.3 s,
//! rank 400 3.5 s against 2.1 s at rank 100; gamma 0.5, rank 400: 6.2 s against 5.0 s cold).
//! A [`NystromRank::Fixed`] rank always steers, without the residual probe.
//! The guard only picks the start: the model is the exact optimum either way, certified by
//! the finish's duality gap as above.
//!
//! Citation: Park & Klabjan (2016), §3.2, Props 3-4, Appendix B.

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

use super::checkpoint::{self, AidCheckpoint, AidModel, LoopState, ProblemState};
use super::cluster::{det_sum, kmeans_one_iteration, Clusters};
use super::ksums::KernelSums;
pub use super::state::SvmSolution;
use super::{
    run_resumable, stop_requested_stage, Aggregated, AidProblem, AidRun, AidSettings, IterRecord,
    Outcome, Termination, CERT_GAP_RTOL,
};
use crate::data::{ops, Dataset, DenseMatrix, Features};
use crate::error::{DataError, FitError, ParamError, SolveError};
use crate::fit::{Control, Fit, Report};
use crate::kernel::qmatrix::{DenseQ, SvcQ};
use crate::kernel::KernelSpec;
use crate::solver::dcd::{self, LinearDesign, SvcDual};
use crate::solver::engine as qp_engine;
use crate::solver::smo::{self, Smo};
use crate::solver::{
    kkt, BoxQp, Equality, IterStats, Observer, Shrinking, SolverSettings, Status, SvmSolver,
};
use crate::svm::linear::{LinearModel, LinearSolver};
use crate::svm::model::SvmModel;
use crate::svm::params::{KernelKind, KernelParams, SvmType};
use crate::svm::train::class_order;

/// Solver of the linear aggregated problems.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AidLinearEngine {
    /// SMO with a linear kernel on the centroids up to [`SMO_MAX_CLUSTERS`] clusters (0),
    /// the augmented-Lagrangian DCD beyond (default; `SmoUpTo(SMO_MAX_CLUSTERS)`).
    #[default]
    Auto,
    /// Always dual coordinate descent (the augmented-Lagrangian form, see the module docs).
    Dcd,
    /// SMO up to this many clusters, the augmented-Lagrangian DCD above (`SmoUpTo(0)` is
    /// [`AidLinearEngine::Dcd`], `SmoUpTo(usize::MAX)` always SMO).
    SmoUpTo(usize),
}

impl AidLinearEngine {
    /// Largest aggregated problem this engine gives to SMO.
    pub fn smo_max(self) -> usize {
        match self {
            AidLinearEngine::Auto => SMO_MAX_CLUSTERS,
            AidLinearEngine::Dcd => 0,
            AidLinearEngine::SmoUpTo(m) => m,
        }
    }
}

/// Checked AID-SVM parameters, the only ones [`fit`] accepts (made by [`AidSvmParams::check`]).
#[derive(Debug, Clone, PartialEq)]
pub struct AidSvmValidParams {
    pub(crate) c: f64,
    pub(crate) kernel: Option<KernelParams>,
    pub(crate) r0: Option<f64>,
    pub(crate) seed: u64,
    pub(crate) solver_tol: f64,
    pub(crate) settings: AidSettings,
    pub(crate) linear_engine: AidLinearEngine,
    pub(crate) qp_engine: SvmSolver,
    pub(crate) kernel_steering: KernelSteering,
}

impl AidSvmValidParams {
    /// The penalty `M` (LIBSVM's `C`).
    pub fn c(&self) -> f64 {
        self.c
    }
    /// `None`: linear SVM (aggregated problems by DCD/SMO on the centroids); `Some(k)`: kernel
    /// SVM (Appendix B), `k` resolved against the data by [`KernelParams::resolve`].
    pub fn kernel(&self) -> Option<KernelParams> {
        self.kernel
    }
    /// Initial aggregation rate per class (`None`: the paper's rule, [`svm_r0`]).
    pub fn r0(&self) -> Option<f64> {
        self.r0
    }
    /// Seed of the sample and of the k-means centres.
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// Stopping tolerance of the aggregated solves (DCD/SMO).
    pub fn solver_tol(&self) -> f64 {
        self.solver_tol
    }
    /// Loop limits.
    pub fn settings(&self) -> &AidSettings {
        &self.settings
    }
    /// Solver of the linear aggregated problems (ignored with a kernel).
    pub fn linear_engine(&self) -> AidLinearEngine {
        self.linear_engine
    }
    /// The QP engine of the problems SMO solves (the kernel aggregated problems, the linear
    /// ones up to the SMO switch, the initial sample fit and the exact finish).
    pub fn qp_engine(&self) -> SvmSolver {
        self.qp_engine
    }
    /// Kernel only: how the aggregated problems are formed.
    pub fn kernel_steering(&self) -> KernelSteering {
        self.kernel_steering
    }
}

/// AID-SVM parameters (a consuming builder); [`AidSvmParams::check`] validates them.
///
/// ```
/// use marginkit::aid::svm::AidSvmParams;
/// use marginkit::svm::params::{Gamma, KernelKind, KernelParams};
///
/// let linear = AidSvmParams::new().c(0.5).r0(0.01).gap_tol(1e-6).check()?;
/// assert_eq!(linear.c(), 0.5);
/// let rbf = KernelParams { kind: KernelKind::Rbf, gamma: Gamma::Auto, ..KernelParams::default() };
/// assert!(AidSvmParams::new().kernel(rbf).check()?.kernel().is_some());
/// assert!(AidSvmParams::new().c(f64::NAN).check().is_err());
/// # Ok::<(), marginkit::ParamError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct AidSvmParams(AidSvmValidParams);

impl Default for AidSvmParams {
    /// Linear AID, `C = 1`, the paper's `r^0`, seed 0, solver tolerance 1e-5, gap tolerance
    /// 1e-4 (the paper's), at most 1000 iterations, the automatic linear engine.
    fn default() -> Self {
        Self(AidSvmValidParams {
            c: Self::DEFAULT_C,
            kernel: None,
            r0: None,
            seed: 0,
            solver_tol: Self::DEFAULT_SOLVER_TOL,
            settings: AidSettings::default(),
            linear_engine: AidLinearEngine::Auto,
            qp_engine: SvmSolver::Auto,
            kernel_steering: KernelSteering::AveragedGram,
        })
    }
}

impl From<AidSvmValidParams> for AidSvmParams {
    /// Checked parameters as a builder again, to change some and check them anew.
    fn from(p: AidSvmValidParams) -> Self {
        Self(p)
    }
}

impl AidSvmParams {
    /// Default penalty `M` (LIBSVM's `C`).
    pub const DEFAULT_C: f64 = 1.0;
    /// Default stopping tolerance of the aggregated solves.
    pub const DEFAULT_SOLVER_TOL: f64 = 1e-5;

    /// The defaults (see [`Default`]).
    pub fn new() -> Self {
        Self::default()
    }
    /// The penalty `M` (LIBSVM's `C`; > 0).
    #[must_use]
    pub fn c(mut self, c: f64) -> Self {
        self.0.c = c;
        self
    }
    /// A kernel SVM (Appendix B) with this kernel (not precomputed); without it, linear AID.
    #[must_use]
    pub fn kernel(mut self, k: KernelParams) -> Self {
        self.0.kernel = Some(k);
        self
    }
    /// Initial aggregation rate per class, in `(0, 1]`.
    #[must_use]
    pub fn r0(mut self, r0: f64) -> Self {
        self.0.r0 = Some(r0);
        self
    }
    /// Seed of the sample and of the k-means centres.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.0.seed = seed;
        self
    }
    /// Stopping tolerance of the aggregated solves (> 0).
    #[must_use]
    pub fn solver_tol(mut self, tol: f64) -> Self {
        self.0.solver_tol = tol;
        self
    }
    /// Relative gap at which the loop stops (`>= 0`).
    #[must_use]
    pub fn gap_tol(mut self, g: f64) -> Self {
        self.0.settings.gap_tol = g;
        self
    }
    /// Most aggregated solves (`>= 1`).
    #[must_use]
    pub fn max_iter(mut self, n: usize) -> Self {
        self.0.settings.max_iter = n;
        self
    }
    /// Wall-clock limit of the loop.
    #[must_use]
    pub fn time_limit(mut self, d: Duration) -> Self {
        self.0.settings.time_limit = Some(d);
        self
    }
    /// Solver of the linear aggregated problems.
    #[must_use]
    pub fn linear_engine(mut self, e: AidLinearEngine) -> Self {
        self.0.linear_engine = e;
        self
    }
    /// The QP engine of the problems SMO solves (default [`SvmSolver::Auto`];
    /// `--solver`): with [`SvmSolver::Block`] the block working-set SMO solves the kernel
    /// aggregated problems, the linear ones up to the SMO switch, the initial sample fit and
    /// the exact finish; the problems above the switch stay with dual coordinate descent. Not
    /// with linear AID on [`AidLinearEngine::Dcd`], which gives SMO no problem at all.
    #[must_use]
    pub fn qp_engine(mut self, e: SvmSolver) -> Self {
        self.0.qp_engine = e;
        self
    }
    /// Kernel only: how the aggregated problems are formed.
    #[must_use]
    pub fn kernel_steering(mut self, s: KernelSteering) -> Self {
        self.0.kernel_steering = s;
        self
    }

    /// Validates every parameter (NaN-safe); what depends on the data (two classes, labels)
    /// is checked by the fit.
    ///
    /// # Errors
    /// [`ParamError`] naming the first invalid parameter: `C` or the solver tolerance not
    /// finite and positive, `r0` outside `(0, 1]`, a precomputed kernel or an invalid gamma or
    /// coef0, a bad gap tolerance or iteration limit, with a kernel and
    /// [`KernelSteering::Nystrom`] a fixed rank of 0 or a negative steering gap, and the block
    /// engine on linear AID with [`AidLinearEngine::Dcd`].
    pub fn check(self) -> Result<AidSvmValidParams, ParamError> {
        let p = &self.0;
        crate::error::positive("C", p.c)?;
        crate::error::positive("solver tolerance", p.solver_tol)?;
        if let Some(r) = p.r0 {
            super::check_rate(r)?;
        }
        if let Some(k) = p.kernel {
            if k.kind == KernelKind::Precomputed {
                return Err(ParamError::Incompatible(
                    "AID-SVM does not take a precomputed kernel",
                ));
            }
            // The gamma of `Gamma::Auto` is valid at every width, so the resolved kernel is
            // valid for all data if it is valid at one.
            k.resolve(1).check()?;
        }
        p.settings.check()?;
        if p.kernel.is_none()
            && p.linear_engine == AidLinearEngine::Dcd
            && p.qp_engine == SvmSolver::Block
        {
            return Err(ParamError::Incompatible(
                "aid svm: --solver block (the block working-set SMO) needs a problem solved by SMO; linear AID with --engine dcd solves every aggregated problem by dual coordinate descent",
            ));
        }
        if let (Some(_), KernelSteering::Nystrom { rank, steer_gap }) =
            (p.kernel, p.kernel_steering)
        {
            if rank == NystromRank::Fixed(0) {
                return Err(ParamError::OutOfRange {
                    name: "Nystrom rank",
                    value: 0.0,
                    range: ">= 1",
                });
            }
            crate::error::non_negative("steering gap", steer_gap)?;
        }
        Ok(self.0)
    }
}

/// How kernel AID forms its aggregated problems.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum KernelSteering {
    /// The paper's Appendix B: averaged Gram entries of the exact kernel. Every aggregated
    /// problem is exact, so `F^t` is a lower bound of the full problem, but the pair sums cost
    /// `n^2` kernel values in the first iteration.
    #[default]
    AveragedGram,
    /// Deviation from Appendix B: linear AID on Nystrom features of `rank` seeded landmarks
    /// (the kernel `K_nL K_LL^+ K_Ln`) steers the clusters, then an exact SMO on the full
    /// kernel problem starts from the disaggregated duals `a_i = a_k / |C_k|` and stops when
    /// its duality gap, computed from its final gradient by [`crate::solver::kkt`], is within
    /// the gap tolerance. Only the final record of the run refers to the exact problem. With
    /// [`NystromRank::Auto`] a kernel too narrow for the features (sampled residual above
    /// [`AUTO_MAX_RESIDUAL`]) is not steered: the exact SMO starts cold (one record).
    Nystrom {
        /// Number of landmarks: a fixed count, or chosen from the kernel's Nystrom residual
        /// ([`NystromRank::Auto`], which also skips a steering that cannot pay).
        rank: NystromRank,
        /// Relative gap at which the steering (Nystrom) AID stops.
        steer_gap: f64,
    },
}

/// The number of landmarks of [`KernelSteering::Nystrom`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NystromRank {
    /// [`AUTO_RANK`] landmarks when their mean relative Nystrom residual
    /// `1 - |z_i|^2 / K(x_i, x_i)` on a seeded sample of [`RESIDUAL_SAMPLE`] rows is at most
    /// [`AUTO_MAX_RESIDUAL`]; otherwise (a narrow kernel: the features miss nearly all of every
    /// row's kernel) no steering: the exact SMO starts cold (see the module docs). The default.
    #[default]
    Auto,
    /// Exactly this many seeded landmarks (at least 1; capped at `n`); always steers.
    Fixed(usize),
}

/// The rank of [`NystromRank::Auto`] (larger ranks were measured to cost more in the steering
/// than they save in the exact finish; module docs).
pub const AUTO_RANK: usize = 100;

/// Mean relative Nystrom residual above which [`NystromRank::Auto`] skips the steering.
pub const AUTO_MAX_RESIDUAL: f64 = 0.9;

/// Rows of the seeded sample on which [`NystromRank::Auto`] measures the residual.
pub const RESIDUAL_SAMPLE: usize = 1000;

/// The fitted model: an ordinary marginkit model.
#[derive(Debug, Clone, PartialEq)]
pub enum AidSvmModel {
    /// LIBLINEAR layout, bias feature 1 carrying `b` (predict, save and load as any linear model).
    Linear(LinearModel),
    /// LIBSVM layout (C-SVC): the support vectors are the members of the support clusters.
    Kernel(Box<SvmModel>),
}

/// What AID-SVM did besides its model.
#[derive(Debug, Clone)]
pub struct AidSvmReport {
    /// The loop's record; `None` when the fit was stopped before its first iteration finished
    /// (then [`Fit::model`] is `None` too, and the checkpoint, if any, holds the initial
    /// clusters).
    pub run: Option<AidRun<SvmSolution>>,
    /// Seconds spent on the initial clustering.
    pub init_seconds: f64,
    /// Class labels; `labels[0]` is the positive class.
    pub labels: Vec<f64>,
    /// [`KernelSteering::Nystrom`] only: the steering run and the exact finish.
    pub finish: Option<ExactFinish>,
}

impl Report for AidSvmReport {
    /// The run's status; [`Status::Interrupted`] when no iteration finished.
    fn status(&self) -> Status {
        self.run.as_ref().map_or(Status::Interrupted, |r| r.status)
    }
}

/// What [`fit`] returns: the model of the best iterate (`None` when no iteration finished),
/// the report and, when the fit was stopped, the state to continue from.
pub type AidSvmFit = Fit<Option<AidSvmModel>, AidSvmReport, AidCheckpoint>;

/// What the Nystrom-steered kernel AID did besides its records.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExactFinish {
    /// Landmarks kept by the pivoted Cholesky factor (the Nystrom rank); 0 when
    /// [`NystromRank::Auto`] skipped the steering.
    pub rank: usize,
    /// Mean relative Nystrom residual `1 - |z_i|^2 / K(x_i, x_i)`: over every row of the
    /// features when steered, else [`NystromRank::Auto`]'s sample estimate (at [`AUTO_RANK`]).
    pub residual: f64,
    /// Steering (linear AID on Nystrom features) iterations.
    pub steer_iterations: usize,
    /// Seconds of the features and the steering run.
    pub steer_seconds: f64,
    /// SMO iterations of the exact finish (all rounds).
    pub smo_iterations: u64,
    /// Seconds of the exact finish.
    pub finish_seconds: f64,
    /// SMO tolerance of the last round.
    pub smo_tol: f64,
}

/// Labels as +-1 (`labels[0]` positive) after the checks of a supervised binary problem.
pub(crate) fn binary_signs(data: &Dataset) -> Result<(Vec<f64>, Vec<i8>), FitError> {
    if data.is_empty() {
        return Err(DataError::Empty.into());
    }
    let labels = class_order(&data.y);
    if labels.len() > 2 && labels.contains(&0.0) {
        return Err(ParamError::Incompatible(
            "label 0 marks unlabeled rows (S3VM); a supervised SVM needs exactly two classes",
        )
        .into());
    }
    if labels.len() == 1 {
        return Err(DataError::SingleClass { label: labels[0] }.into());
    }
    if labels.len() > 2 {
        return Err(
            ParamError::Incompatible("AID-SVM is binary: found more than two classes").into(),
        );
    }
    let y = data
        .y
        .iter()
        .map(|&v| if v == labels[0] { 1 } else { -1 })
        .collect();
    Ok((labels, y))
}

struct SvmProblem<'a> {
    data: &'a Dataset,
    y: Vec<i8>,
    c: f64,
    kernel: Option<KernelSpec>,
    tol: f64,
    /// Relative gap the aggregated linear solves above the SMO switch aim at (see
    /// [`solve_linear_al`]): [`AL_GAP_FRACTION`] of the AID gap tolerance.
    al_gap: f64,
    seed: u64,
    engine: AidLinearEngine,
    /// The QP engine of the problems SMO solves.
    qp_engine: SvmSolver,
    /// Kernel only: the kernel row-sum primitive.
    ks: Option<KernelSums<'a>>,
    /// Kernel only: cluster-pair sums `S_kq` of the previous iteration (row-major `K x K`).
    gram: Vec<f64>,
    /// Cluster sizes of the previous iteration.
    sizes: Vec<usize>,
    /// Kernel only: stored cluster kernel rows `V_k = sum_{i in C_k} K(x_i, .)` (length n), at
    /// most `max_vrows` of them, in f32 like the kernel cache (sums and subtractions in f64).
    vrows: Vec<Option<Vec<f32>>>,
    max_vrows: usize,
    /// Kernel only: `gram` and `vrows` already describe the clusters of the solve in progress
    /// (set by an interrupted solve, so that its continuation does not update them twice).
    prepared: bool,
}

/// Forwards a `dyn Observer` to the generic DCD entry point.
struct Fwd<'a>(&'a mut dyn Observer);

impl Observer for Fwd<'_> {
    fn on_iter(&mut self, s: &IterStats) -> ControlFlow<()> {
        self.0.on_iter(s)
    }
}

impl SvmProblem<'_> {
    fn settings(&self) -> SolverSettings {
        SolverSettings {
            tol: self.tol,
            shrinking: Shrinking::On,
            max_iter: None,
            time_limit: None,
        }
    }

    fn warm_alpha(
        &self,
        clusters: &Clusters,
        prev: Option<(&SvmSolution, &[usize])>,
        upper: &[f64],
    ) -> Vec<f64> {
        let k = clusters.len();
        match prev {
            Some((s, parent)) if parent.len() == k && !self.sizes.is_empty() => (0..k)
                .map(|c| {
                    let p = parent[c];
                    let a = s.alpha[p] * clusters.size(c) as f64 / self.sizes[p] as f64;
                    a.clamp(0.0, upper[c])
                })
                .collect(),
            _ => vec![0.0; k],
        }
    }

    fn cluster_signs(&self, clusters: &Clusters) -> Vec<i8> {
        (0..clusters.len())
            .map(|c| self.y[clusters.members(c)[0] as usize])
            .collect()
    }

    /// Updates `self.gram` (the cluster-pair kernel sums `S_kq`) and the stored cluster kernel
    /// rows for the new clusters; `false` (and `self` unchanged) when `obs` asked to stop.
    ///
    /// A split cluster `a` has children `ch(a)`; all but its largest child `L(a)` are *computed*:
    /// their row `V_c` costs `n |C_c|` kernel values and gives `S_cq = sum_{j in C_q} V_c(j)` for
    /// every new `q`. Every other new cluster (`L(a)`, or an unchanged cluster, `a` itself) is
    /// derived without kernel values: with old clusters `a = par(u)`, `b = par(v)`,
    /// `S_uv = S_ab - sum_{c in Comp(a)} sum_{y in ch(b)} S_cy - sum_{c' in Comp(b)} S_uc'`,
    /// since `S_ab` is the sum of `S_xy` over all child pairs. `V_L(a) = V_a - sum V_c` (the
    /// stored f32 rows of the computed children) when `V_a` is stored. Without a parent map
    /// every cluster is computed (`n^2` kernel values).
    ///
    /// The kernel sums (the only long part) run first and poll `obs` every few tens of
    /// milliseconds; they touch nothing of `self`, so a stop leaves the previous iteration's
    /// sums and rows for the continuation to redo this update from. The derived rows (`O(n)`
    /// each, moved out of the old rows) follow once every sum is done.
    fn update_gram(
        &mut self,
        clusters: &Clusters,
        parent: Option<&[usize]>,
        obs: &mut dyn Observer,
    ) -> bool {
        let Some(ks) = self.ks.as_ref() else {
            return true;
        };
        let k = clusters.len();
        let n = self.data.len();
        let old_k = self.sizes.len();
        let par = parent.filter(|p| p.len() == k && old_k > 0 && self.gram.len() == old_k * old_k);
        let mut cl = vec![0u32; n];
        for c in 0..k {
            for &i in clusters.members(c) {
                cl[i as usize] = c as u32;
            }
        }
        // Children of every old cluster, and whether a new cluster is computed.
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); old_k];
        let mut computed = vec![true; k];
        if let Some(par) = par {
            for (c, &a) in par.iter().enumerate() {
                children[a].push(c);
            }
            for ch in &children {
                let Some(&first) = ch.first() else {
                    continue;
                };
                let mut largest = first;
                for &c in &ch[1..] {
                    if clusters.size(c) > clusters.size(largest) {
                        largest = c;
                    }
                }
                computed[largest] = false;
            }
        }
        let mut vrows: Vec<Option<Vec<f32>>> = vec![None; k];
        let mut stored = 0usize;
        let mut g = vec![0.0; k * k];
        // tc[c][b] = sum_{y in ch(b)} S_cy for computed c (only needed with a parent map).
        let mut tc: Vec<Vec<f64>> = vec![Vec::new(); k];
        // Old clusters in order; without a parent map one pseudo-parent holds everything.
        let groups: Vec<Vec<usize>> = match par {
            Some(_) => children.clone(),
            None => vec![(0..k).collect()],
        };
        let mut polls = 0u64;
        let mut stop = || {
            polls += 1;
            stop_requested_stage(obs, polls, k)
        };
        // (new cluster u, old cluster a, derived row): u's row is `V_a` (moved) or the row given.
        let mut moves: Vec<(usize, usize, Option<Vec<f32>>)> = Vec::new();
        let mut v = vec![0.0; n];
        for (a, ch) in groups.iter().enumerate() {
            // V_a - sum of the computed children's rows so far (a new row: the old one stays
            // intact until every sum is done).
            let old_row = par.and_then(|_| self.vrows.get(a).and_then(Option::as_ref));
            let mut parent_row: Option<Vec<f32>> = None;
            for &c in ch.iter().filter(|&&c| computed[c]) {
                if !ks.weighted_polled(clusters.members(c), None, &mut v, &mut stop) {
                    return false;
                }
                let mut srow = vec![0.0; k];
                for (j, &vj) in v.iter().enumerate() {
                    srow[cl[j] as usize] += vj;
                }
                for (q, &sv) in srow.iter().enumerate() {
                    g[c * k + q] = sv;
                    g[q * k + c] = sv;
                }
                if let Some(par) = par {
                    let mut t = vec![0.0; old_k];
                    for (q, &sv) in srow.iter().enumerate() {
                        t[par[q]] += sv;
                    }
                    tc[c] = t;
                }
                match (parent_row.as_mut(), old_row) {
                    (Some(pr), _) => pr
                        .iter_mut()
                        .zip(&v)
                        .for_each(|(p, &x)| *p = (f64::from(*p) - x) as f32),
                    (None, Some(old)) => {
                        parent_row = Some(
                            old.iter()
                                .zip(&v)
                                .map(|(&p, &x)| (f64::from(p) - x) as f32)
                                .collect(),
                        );
                    }
                    (None, None) => {}
                }
                if stored < self.max_vrows {
                    vrows[c] = Some(v.iter().map(|&x| x as f32).collect());
                    stored += 1;
                }
            }
            if let Some(&u) = ch.iter().find(|&&c| !computed[c]).filter(|_| par.is_some()) {
                // An unsplit cluster keeps its row (moved below); a split one's largest child
                // gets the difference.
                if old_row.is_some() && stored < self.max_vrows {
                    moves.push((u, a, parent_row));
                    stored += 1;
                }
            }
        }
        // No more polls: from here on `self` changes.
        let mut old_rows = std::mem::take(&mut self.vrows);
        for (u, a, row) in moves {
            vrows[u] = row.or_else(|| old_rows[a].take());
        }
        drop(old_rows);
        if let Some(par) = par {
            let unc: Vec<usize> = (0..k).filter(|&c| !computed[c]).collect();
            for &u in &unc {
                let a = par[u];
                for &v in &unc {
                    let b = par[v];
                    let mut s = self.gram[a * old_k + b];
                    for &c in children[a].iter().filter(|&&c| computed[c]) {
                        s -= tc[c][b];
                    }
                    for &c in children[b].iter().filter(|&&c| computed[c]) {
                        s -= g[c * k + u];
                    }
                    g[u * k + v] = s;
                }
            }
        }
        self.gram = g;
        self.vrows = vrows;
        true
    }

    /// `sum_k coef_k V_k(j)` for every row `j`; rows of support clusters that are not stored
    /// are computed and stored, evicting rows of non-support clusters when the budget is full.
    /// `None` (and the stored rows unchanged) when `obs` asked to stop: the new rows are
    /// computed first and the evictions happen after, so a continuation finds the same rows.
    fn decision_values(
        &mut self,
        clusters: &Clusters,
        coef: &[(usize, f64)],
        obs: &mut dyn Observer,
    ) -> Option<Vec<f64>> {
        let n = self.data.len();
        let k = clusters.len();
        let mut polls = 0u64;
        let mut stop = || {
            polls += 1;
            stop_requested_stage(obs, polls, k)
        };
        let mut f = vec![0.0; n];
        if let Some(ks) = self.ks.as_ref() {
            let mut extra_rows: Vec<u32> = Vec::new();
            let mut extra_w: Vec<f64> = Vec::new();
            let mut stored = self.vrows.iter().filter(|v| v.is_some()).count();
            let mut support = vec![false; self.vrows.len()];
            coef.iter().for_each(|&(c, _)| support[c] = true);
            let mut evict = 0usize;
            let mut evicted: Vec<usize> = Vec::new();
            let mut fresh: Vec<(usize, Vec<f32>)> = Vec::new();
            let mut v = vec![0.0; n];
            for &(c, w) in coef {
                if self.vrows[c].is_none() {
                    while stored >= self.max_vrows && evict < self.vrows.len() {
                        if !support[evict] && self.vrows[evict].is_some() {
                            evicted.push(evict);
                            stored -= 1;
                        }
                        evict += 1;
                    }
                    if stored < self.max_vrows {
                        if !ks.weighted_polled(clusters.members(c), None, &mut v, &mut stop) {
                            return None;
                        }
                        fresh.push((c, v.iter().map(|&x| x as f32).collect()));
                        stored += 1;
                    } else {
                        extra_rows.extend_from_slice(clusters.members(c));
                        extra_w.extend(std::iter::repeat_n(w, clusters.size(c)));
                    }
                }
            }
            if !extra_rows.is_empty()
                && !ks.weighted_polled(&extra_rows, Some(&extra_w), &mut f, &mut stop)
            {
                return None;
            }
            // No more polls: commit the evictions and the new rows.
            for e in evicted {
                self.vrows[e] = None;
            }
            for (c, row) in fresh {
                self.vrows[c] = Some(row);
            }
        }
        let vrows = &self.vrows;
        f.par_chunks_mut(4096).enumerate().for_each(|(b, out)| {
            let lo = b * 4096;
            let hi = lo + out.len();
            for &(c, w) in coef {
                if let Some(v) = vrows[c].as_ref() {
                    for (o, &x) in out.iter_mut().zip(&v[lo..hi]) {
                        *o += w * f64::from(x);
                    }
                }
            }
        });
        Some(f)
    }
}

impl AidProblem for SvmProblem<'_> {
    type Solution = SvmSolution;

    fn n_rows(&self) -> usize {
        self.data.len()
    }

    // One piece: the aggregated problem is built once and solved by the engine its size and
    // kernel choose, all from the same warm duals.
    fn solve_aggregated(
        &mut self,
        clusters: &Clusters,
        previous: Option<(&SvmSolution, &[usize])>,
        obs: &mut dyn Observer,
    ) -> Result<Option<Aggregated<SvmSolution>>, FitError> {
        let k = clusters.len();
        let yk = self.cluster_signs(clusters);
        let upper: Vec<f64> = (0..k).map(|c| self.c * clusters.size(c) as f64).collect();
        let p = vec![-1.0; k];
        let mut alpha = self.warm_alpha(clusters, previous, &upper);
        let qp = BoxQp {
            p: &p,
            y: &yk,
            upper: &upper,
            equality: Equality::Sum { delta: 0.0 },
            fixed: None,
        };
        let settings = self.settings();
        let sol = match self.kernel {
            None => {
                let d = self.data.n_features();
                let (mut sx, _) = clusters.sums(&self.data.x, None)?;
                for c in 0..k {
                    let s = clusters.size(c) as f64;
                    sx[c * d..(c + 1) * d].iter_mut().for_each(|v| *v /= s);
                }
                let xc = Features::Dense(DenseMatrix::new(k, d, sx)?);
                let (w, b) = if k > self.engine.smo_max() {
                    let b0 = previous.map_or(0.0, |(s, _)| s.b);
                    let dual = AggregatedDual {
                        xc: &xc,
                        yk: &yk,
                        upper: &upper,
                    };
                    match solve_linear_al(
                        &dual,
                        &mut alpha,
                        b0,
                        self.tol,
                        self.al_gap,
                        self.seed,
                        obs,
                    )? {
                        Some(wb) => wb,
                        None => return Ok(None),
                    }
                } else {
                    // SMO with a linear kernel on the centroids, its start's gradient from
                    // `w` (O(K d), not one column per nonzero warm dual).
                    let warm = linear_warm_gradient(&xc, &yk, &upper, &alpha);
                    let cost = qp_engine::row_cost(&xc, KernelSpec::Linear);
                    let plan = qp_engine::plan(self.qp_engine, AGGREGATED_CACHE_BYTES, k, cost);
                    let mut q = SvcQ::new(&xc, KernelSpec::Linear, &yk, plan.cache_bytes)?;
                    let (info, _) = qp_engine::solve_with_gradient(
                        &plan,
                        &mut q,
                        &qp,
                        &mut alpha,
                        &settings,
                        obs,
                        Some(smo::WarmGradient {
                            qa: &warm.0,
                            qa_upper: &warm.1,
                        }),
                    )?;
                    if info.status == Status::Interrupted {
                        return Ok(None);
                    }
                    (signed_combination(&xc, &yk, &alpha), -info.rho)
                };
                let w_sq = ops::dense_dot(&w, &w);
                let dual = alpha.iter().sum::<f64>() - 0.5 * w_sq;
                // Aggregated primal at (w, b).
                let hinge: f64 = (0..k)
                    .map(|c| {
                        let f = ops::dot_dense(xc.row(c), &w) + b;
                        upper[c] * (1.0 - f64::from(yk[c]) * f).max(0.0)
                    })
                    .sum();
                Aggregated {
                    lower_bound: Some(dual),
                    objective: 0.5 * w_sq + hinge,
                    solution: SvmSolution {
                        w,
                        b,
                        alpha,
                        expansion: Vec::new(),
                        w_sq,
                        decision: Vec::new(),
                    },
                }
            }
            Some(_) => {
                if !self.prepared {
                    let parent = previous.map(|(_, p)| p);
                    if !self.update_gram(clusters, parent, obs) {
                        return Ok(None);
                    }
                    self.prepared = true;
                }
                let sizes: Vec<f64> = (0..k).map(|c| clusters.size(c) as f64).collect();
                let mut q = vec![0.0; k * k];
                for a in 0..k {
                    for c in 0..k {
                        q[a * k + c] = f64::from(yk[a]) * f64::from(yk[c]) * self.gram[a * k + c]
                            / (sizes[a] * sizes[c]);
                    }
                }
                let mut dq = DenseQ::new(k, &q)?;
                // The dense matrix has no cache: the budget is the block engine's buffer.
                let plan = qp_engine::plan(self.qp_engine, AGGREGATED_CACHE_BYTES, k, 1);
                let smo = Smo::new(&settings);
                let info = qp_engine::solve(&plan, &smo, &mut dq, &qp, &mut alpha, obs)?.info;
                if info.status == Status::Interrupted {
                    return Ok(None);
                }
                let b = -info.rho;
                let qa: Vec<f64> = (0..k)
                    .map(|a| ops::dense_dot(&q[a * k..(a + 1) * k], &alpha))
                    .collect();
                let w_sq = ops::dense_dot(&qa, &alpha).max(0.0);
                let dual = alpha.iter().sum::<f64>() - 0.5 * w_sq;
                // y_k f(centroid_k) = (Q a)_k + y_k b.
                let hinge: f64 = (0..k)
                    .map(|c| upper[c] * (1.0 - qa[c] - f64::from(yk[c]) * b).max(0.0))
                    .sum();
                let mut expansion = Vec::new();
                let mut coefs = Vec::new();
                for c in 0..k {
                    if alpha[c] > 0.0 {
                        let coef = alpha[c] * f64::from(yk[c]) / sizes[c];
                        expansion.extend(clusters.members(c).iter().map(|&i| (i, coef)));
                        coefs.push((c, coef));
                    }
                }
                let Some(decision) = self.decision_values(clusters, &coefs, obs) else {
                    return Ok(None);
                };
                Aggregated {
                    lower_bound: Some(dual),
                    objective: 0.5 * w_sq + hinge,
                    solution: SvmSolution {
                        w: Vec::new(),
                        b,
                        alpha,
                        expansion,
                        w_sq,
                        decision,
                    },
                }
            }
        };
        self.sizes = (0..k).map(|c| clusters.size(c)).collect();
        self.prepared = false;
        if !sol.objective.is_finite() {
            return Err(SolveError::NonFinite {
                what: "aggregated SVM objective",
            }
            .into());
        }
        Ok(Some(sol))
    }

    fn evaluate(&self, sol: &SvmSolution, side: &mut [u8]) -> f64 {
        let x = &self.data.x;
        let y = &self.y;
        let n = self.data.len();
        let margins: Vec<f64> = match self.kernel {
            None => (0..n)
                .into_par_iter()
                .map(|i| 1.0 - f64::from(y[i]) * (ops::dot_dense(x.row(i), &sol.w) + sol.b))
                .collect(),
            Some(_) => sol
                .decision
                .par_iter()
                .zip(y.par_iter())
                .map(|(&f, &yj)| 1.0 - f64::from(yj) * (f + sol.b))
                .collect(),
        };
        side.par_iter_mut()
            .zip(margins.par_iter())
            .for_each(|(s, &m)| *s = u8::from(m > 1e-9));
        0.5 * sol.w_sq + self.c * det_sum(n, |i| margins[i].max(0.0))
    }
}

/// Memory for stored cluster kernel rows (`4 n` bytes each); beyond it rows are recomputed.
const VROW_BUDGET_BYTES: usize = 1 << 30;

/// Largest aggregated linear problem [`AidLinearEngine::Auto`] solves by SMO (above: the
/// augmented-Lagrangian DCD). 0: with gap-targeted, pass-capped rounds the
/// augmented-Lagrangian DCD takes less CPU than SMO at every size measured (200,000 x 10:
/// 0.62 vs 1.28 s; 200,000 x 50: 3.1 vs 8.6 s; 800,000 x 10: 2.5 vs 4.4 s; gap 1e-6).
pub const SMO_MAX_CLUSTERS: usize = 0;

/// Most rounds of the method of multipliers in [`solve_linear_al`].
const AL_MAX_ROUNDS: u64 = 60;

/// DCD passes of the first round of [`solve_linear_al`]; round `r` may take `2^r` times as many.
const AL_FIRST_PASSES: u64 = 100;

/// The aggregated linear solves above the SMO switch stop at this fraction of the AID gap
/// tolerance (relative aggregated duality gap; see [`solve_linear_al`]).
const AL_GAP_FRACTION: f64 = 0.1;

/// `w = sum_c a_c y_c x_c` over the rows of `xc`.
fn signed_combination(xc: &Features, yk: &[i8], alpha: &[f64]) -> Vec<f64> {
    let mut w = vec![0.0; xc.n_cols()];
    for (c, (&a, &y)) in alpha.iter().zip(yk).enumerate() {
        if a != 0.0 {
            ops::axpy(a * f64::from(y), xc.row(c), &mut w);
        }
    }
    w
}

/// SMO's warm-start gradient terms for the linear kernel: `(Q a)_c = y_c x_c'w(a)` and
/// `sum_{j at upper} u_j Q_cj = y_c x_c'w_up`, `O(K d)` instead of one column per nonzero.
fn linear_warm_gradient(
    xc: &Features,
    yk: &[i8],
    upper: &[f64],
    alpha: &[f64],
) -> (Vec<f64>, Vec<f64>) {
    let at_upper: Vec<f64> = alpha
        .iter()
        .zip(upper)
        .map(|(&a, &u)| if a >= u { u } else { 0.0 })
        .collect();
    let w = signed_combination(xc, yk, alpha);
    let w_up = signed_combination(xc, yk, &at_upper);
    let k = yk.len();
    let (mut qa, mut qa_up) = (vec![0.0; k], vec![0.0; k]);
    for c in 0..k {
        let y = f64::from(yk[c]);
        qa[c] = y * ops::dot_dense(xc.row(c), &w);
        qa_up[c] = y * ops::dot_dense(xc.row(c), &w_up);
    }
    (qa, qa_up)
}

/// Maximal violation `m - M` of the equality-constrained dual's KKT conditions at `alpha`
/// (LIBSVM's rule, `G_c = y_c x_c'w - 1`) and the bias it implies (SMO's: the mean of
/// `-y_c G_c` over free duals, else the middle of the interval the bounded ones allow).
fn equality_kkt(xc: &Features, yk: &[i8], upper: &[f64], alpha: &[f64], w: &[f64]) -> (f64, f64) {
    let (mut m_up, mut m_low) = (f64::NEG_INFINITY, f64::INFINITY);
    let (mut sum, mut nf) = (0.0, 0usize);
    for (c, &y) in yk.iter().enumerate() {
        let (a, u) = (alpha[c], upper[c]);
        // -y G = -y (y x'w - 1) = y - x'w.
        let f = f64::from(y) - ops::dot_dense(xc.row(c), w);
        let (inc, dec) = (a < u, a > 0.0);
        let (up, low) = if y > 0 { (inc, dec) } else { (dec, inc) };
        if up {
            m_up = m_up.max(f);
        }
        if low {
            m_low = m_low.min(f);
        }
        if inc && dec {
            sum += f;
            nf += 1;
        }
    }
    let b = if nf > 0 {
        sum / nf as f64
    } else if m_up.is_finite() && m_low.is_finite() {
        0.5 * (m_up + m_low)
    } else if m_up.is_finite() {
        m_up
    } else if m_low.is_finite() {
        m_low
    } else {
        0.0
    };
    ((m_up - m_low).max(0.0), b)
}

/// The bias minimizing the aggregated hinge sum `h(b) = sum_c u_c max(0, 1 - y_c (x_c'w + b))`
/// for a fixed `w`, and `h` there. `h` is convex and piecewise linear with breakpoints
/// `t_c = y_c - x_c'w`; its slope left of `b` is `-sum_{y_c = 1} u_c + sum_{t_c < b} u_c`, so a
/// minimizer is the first breakpoint (in sorted order) where the running sum of `u` reaches
/// the positive class's total. When the slope is zero on a whole interval, `hint` (clamped into
/// it) is returned. `O(K log K)`; the result does not depend on the thread count.
fn best_bias(xc: &Features, yk: &[i8], upper: &[f64], w: &[f64], hint: f64) -> (f64, f64) {
    let k = yk.len();
    let f: Vec<f64> = (0..k).map(|c| ops::dot_dense(xc.row(c), w)).collect();
    let hinge = |b: f64| -> f64 {
        (0..k)
            .map(|c| upper[c] * (1.0 - f64::from(yk[c]) * (f[c] + b)).max(0.0))
            .sum()
    };
    let mut t: Vec<(f64, f64)> = (0..k)
        .map(|c| (f64::from(yk[c]) - f[c], upper[c]))
        .filter(|&(_, u)| u > 0.0)
        .collect();
    let hint = if hint.is_finite() { hint } else { 0.0 };
    if t.iter().any(|(v, _)| !v.is_finite()) || t.is_empty() {
        return (hint, hinge(hint));
    }
    t.sort_by(|a, b| a.0.total_cmp(&b.0));
    let u_pos: f64 = (0..k).filter(|&c| yk[c] > 0).map(|c| upper[c]).sum();
    let mut cum = 0.0;
    let mut b = t[t.len() - 1].0;
    for (j, &(tj, u)) in t.iter().enumerate() {
        cum += u;
        if cum >= u_pos {
            b = if cum == u_pos {
                // Zero slope on [t_j, t_{j+1}] (or [t_j, inf)).
                let hi = t.get(j + 1).map_or(f64::INFINITY, |v| v.0);
                hint.clamp(tj, hi)
            } else {
                tj
            };
            break;
        }
    }
    // Keep the hint when it is as good (ties between equal breakpoints, rounding).
    let (hb, hh) = (hinge(b), hinge(hint));
    if hh <= hb {
        (hint, hh)
    } else {
        (b, hb)
    }
}

/// The data of the linear aggregated dual: the cluster centroids `xc`, their labels `yk` and the
/// upper bounds `upper` of their duals.
#[derive(Clone, Copy)]
struct AggregatedDual<'a> {
    xc: &'a Features,
    yk: &'a [i8],
    upper: &'a [f64],
}

/// The linear aggregated dual `min 1/2 a'Qa - e'a, y'a = 0, 0 <= a <= u` by the method of
/// multipliers over [`dcd::solve_svc`] (see the module docs). On success `alpha` satisfies
/// `y'a = 0` exactly (up to rounding) and the result is `(w(a), b)` with the bias that
/// minimizes the aggregated primal at `w(a)`; `None` when `obs` stopped.
///
/// A round ends after at most `AL_FIRST_PASSES * 2^round` DCD passes (capped at
/// [`dcd::DEFAULT_MAX_PASSES`]); the solve stops after the first round whose feasible point
/// `a` satisfies LIBSVM's KKT test within `tol` *or* whose aggregated duality gap
/// `P(w(a), b) - D(a)` is at most `gap_target` times `P` (the dual value `D(a)` is the
/// iteration's lower bound, so the AID gap this iteration can certify is then within
/// `gap_target` of the aggregated primal).
fn solve_linear_al(
    dual: &AggregatedDual<'_>,
    alpha: &mut [f64],
    b0: f64,
    tol: f64,
    gap_target: f64,
    seed: u64,
    obs: &mut dyn Observer,
) -> Result<Option<(Vec<f64>, f64)>, FitError> {
    let AggregatedDual { xc, yk, upper } = *dual;
    let k = yk.len();
    // Penalty rho = B^2 on the scale of the rows (the bias feature then weighs like a
    // typical row); raised tenfold when y'a does not shrink fourfold in a converged round.
    let mean_sq = (0..k).map(|c| ops::sq_norm(xc.row(c))).sum::<f64>() / k.max(1) as f64;
    let mut rho = if mean_sq.is_finite() && mean_sq > 0.0 {
        mean_sq
    } else {
        1.0
    };
    let mut lambda = if b0.is_finite() { b0 } else { 0.0 };
    let zero = vec![0.0; k];
    let mut p = vec![0.0; k];
    let mut inner_tol = 0.25 * tol;
    let mut prev_s = f64::INFINITY;
    let mut projected = alpha.to_vec();
    let mut round = 0u64;
    loop {
        for (pc, &y) in p.iter_mut().zip(yk) {
            *pc = -1.0 + lambda * f64::from(y);
        }
        let prob = SvcDual {
            design: LinearDesign {
                x: xc,
                bias: Some(rho.sqrt()),
            },
            qp: BoxQp {
                p: &p,
                y: yk,
                upper,
                equality: Equality::None,
                fixed: None,
            },
            diag_shift: &zero,
        };
        let cap = AL_FIRST_PASSES
            .saturating_mul(1u64 << round.min(30))
            .min(dcd::DEFAULT_MAX_PASSES);
        let settings = SolverSettings {
            tol: inner_tol,
            shrinking: Shrinking::On,
            max_iter: Some(cap),
            time_limit: None,
        };
        let res = dcd::solve_svc(
            &prob,
            &settings,
            seed.wrapping_add(round),
            alpha,
            &mut Fwd(obs),
        )?;
        if res.info.status == Status::Interrupted {
            return Ok(None);
        }
        // The subproblem's bias is lambda + B w_B = lambda + rho y'a: the next multiplier.
        let s: f64 = alpha.iter().zip(yk).map(|(&a, &y)| a * f64::from(y)).sum();
        lambda += rho * s;
        // A feasible point of the equality-constrained dual: the larger class gives up the
        // excess |y'a|, from its free duals first (scaled down, so that the bounded duals stay
        // on their bounds and the KKT test below sees them there), then from the others.
        projected.copy_from_slice(alpha);
        let cls = if s > 0.0 { 1 } else { -1 };
        let mut excess = s.abs();
        for pass in [true, false] {
            let pick = |a: f64, u: f64| (a > 0.0 && a < u) == pass && a > 0.0;
            let total: f64 = projected
                .iter()
                .zip(yk)
                .zip(upper)
                .filter(|((&a, &y), &u)| y == cls && pick(a, u))
                .map(|((&a, _), _)| a)
                .sum();
            if excess <= 0.0 || total <= 0.0 {
                continue;
            }
            let f = ((total - excess) / total).clamp(0.0, 1.0);
            for ((a, &y), &u) in projected.iter_mut().zip(yk).zip(upper) {
                if y == cls && pick(*a, u) {
                    *a *= f;
                }
            }
            excess = (excess - total).max(0.0);
        }
        let w = signed_combination(xc, yk, &projected);
        let (viol, b_kkt) = equality_kkt(xc, yk, upper, &projected, &w);
        let w_sq = ops::dense_dot(&w, &w);
        let (b, hinge) = best_bias(xc, yk, upper, &w, b_kkt);
        let primal = 0.5 * w_sq + hinge;
        let dual = projected.iter().sum::<f64>() - 0.5 * w_sq;
        let rel_gap = (primal - dual) / primal.abs().max(f64::MIN_POSITIVE);
        if viol <= tol || rel_gap <= gap_target || round + 1 == AL_MAX_ROUNDS {
            alpha.copy_from_slice(&projected);
            return Ok(Some((w, b)));
        }
        let converged = res.info.status == Status::Converged;
        if converged && res.info.iterations <= 1 && s.abs() <= 0.25 * prev_s.abs() {
            // The subproblem was already solved to its tolerance and y'a is small: what is
            // left is the subproblem's own tolerance.
            inner_tol = (0.25 * inner_tol).max(1e-3 * tol);
        }
        if converged && s.abs() > 0.25 * prev_s.abs() {
            rho *= 10.0;
        }
        prev_s = s;
        round += 1;
    }
}

/// The paper's SVM rule per class: `r^0 = max(1.1 m / n_c, 1e-4)`.
pub fn svm_r0(n_class: usize, m: usize) -> f64 {
    (1.1 * m as f64 / n_class.max(1) as f64).max(1e-4)
}

/// Solver of the linear sample fit behind the initial clusters.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum SampleFit {
    /// The equality-constrained DCD (linear AID).
    Dcd,
    /// SMO on the sample's linear kernel (the Nystrom steering: on its `rank` features the
    /// equality-constrained DCD took 582 passes, 10% of a 30,000-row run; SMO 420 iterations).
    Smo,
}

/// Initial clusters: per class, one k-means iteration on 1-D scores (see module docs); `None`
/// when `obs` stopped the sample fit.
fn initial_clusters(
    data: &Dataset,
    y: &[i8],
    params: &AidSvmValidParams,
    kernel: Option<KernelSpec>,
    ks: Option<&KernelSums<'_>>,
    sample_fit: SampleFit,
    obs: &mut dyn Observer,
) -> Result<Option<Clusters>, FitError> {
    let n = data.len();
    let m = data.n_features();
    // The sample fit's weight vector, then the first aggregated problem's two cluster means.
    data.x
        .check_dense_rows("the first fits' weight vector and cluster means", 3)?;
    let s = n.min(2000);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(params.seed);
    let mut ids: Vec<usize> = (0..n).collect();
    for i in 0..s {
        let j = rng.gen_range(i..n);
        ids.swap(i, j);
    }
    let mut sample = ids[..s].to_vec();
    sample.sort_unstable();
    let sub = data.subset(&sample);
    let ys: Vec<i8> = sample.iter().map(|&i| y[i]).collect();
    let settings = SolverSettings {
        tol: 1e-3,
        ..SolverSettings::default()
    };
    let upper = vec![params.c; s];
    let p = vec![-1.0; s];
    let qp = BoxQp {
        p: &p,
        y: &ys,
        upper: &upper,
        equality: Equality::Sum { delta: 0.0 },
        fixed: None,
    };
    let mut alpha = vec![0.0; s];
    let cost = qp_engine::row_cost(&sub.x, kernel.unwrap_or(KernelSpec::Linear));
    let sample_plan = qp_engine::plan(params.qp_engine, SAMPLE_CACHE_BYTES, s, cost);
    let smo = Smo::new(&settings);
    let two_classes = ys.contains(&1) && ys.contains(&-1);
    let score: Vec<f64> = match kernel {
        None => {
            let (w, b) = if two_classes {
                let zero = vec![0.0; s];
                let prob = SvcDual {
                    design: LinearDesign {
                        x: &sub.x,
                        bias: None,
                    },
                    qp,
                    diag_shift: &zero,
                };
                if sample_fit == SampleFit::Smo {
                    let mut q =
                        SvcQ::new(&sub.x, KernelSpec::Linear, &ys, sample_plan.cache_bytes)?;
                    let info =
                        qp_engine::solve(&sample_plan, &smo, &mut q, &qp, &mut alpha, obs)?.info;
                    if info.status == Status::Interrupted {
                        return Ok(None);
                    }
                    (signed_combination(&sub.x, &ys, &alpha), -info.rho)
                } else {
                    let r =
                        dcd::solve_svc(&prob, &settings, params.seed, &mut alpha, &mut Fwd(obs))?;
                    if r.info.status == Status::Interrupted {
                        return Ok(None);
                    }
                    (r.w, -r.info.rho)
                }
            } else {
                (vec![0.0; m], 0.0)
            };
            let nw = ops::dense_dot(&w, &w).sqrt().max(f64::MIN_POSITIVE);
            (0..n)
                .into_par_iter()
                .map(|i| (ops::dot_dense(data.x.row(i), &w) + b) / nw)
                .collect()
        }
        Some(kern) => {
            let (coef, b) = if two_classes {
                let mut q = SvcQ::new(&sub.x, kern, &ys, sample_plan.cache_bytes)?;
                let info = qp_engine::solve(&sample_plan, &smo, &mut q, &qp, &mut alpha, obs)?.info;
                if info.status == Status::Interrupted {
                    return Ok(None);
                }
                (
                    alpha
                        .iter()
                        .zip(&ys)
                        .map(|(a, &v)| a * f64::from(v))
                        .collect::<Vec<_>>(),
                    -info.rho,
                )
            } else {
                (vec![0.0; s], 0.0)
            };
            let sv: Vec<usize> = (0..s).filter(|&i| coef[i] != 0.0).collect();
            let rows: Vec<u32> = sv.iter().map(|&t| sample[t] as u32).collect();
            let w: Vec<f64> = sv.iter().map(|&t| coef[t]).collect();
            let mut f = vec![0.0; n];
            let mut polls = 0u64;
            let mut stop = || {
                polls += 1;
                stop_requested_stage(obs, polls, 0)
            };
            let done = match ks {
                Some(ks) => ks.weighted_polled(&rows, Some(&w), &mut f, &mut stop),
                None => KernelSums::new(&data.x, kern).weighted_polled(
                    &rows,
                    Some(&w),
                    &mut f,
                    &mut stop,
                ),
            };
            if !done {
                return Ok(None);
            }
            f.iter_mut().for_each(|v| *v += b);
            f
        }
    };
    let mut parts = Vec::new();
    for (ci, class) in [1i8, -1].into_iter().enumerate() {
        let rows: Vec<usize> = (0..n).filter(|&i| y[i] == class).collect();
        if rows.is_empty() {
            continue;
        }
        let r0 = params.r0.unwrap_or_else(|| svm_r0(rows.len(), m));
        let k = ((r0 * rows.len() as f64).ceil() as usize).clamp(1, rows.len());
        let pts: Vec<f64> = rows.iter().map(|&i| score[i]).collect();
        let c = kmeans_one_iteration(&pts, 1, k, params.seed.wrapping_add(ci as u64 + 1));
        parts.push(c.relabel(&rows));
    }
    Ok(Some(Clusters::concat(parts)))
}

/// The fingerprint of a run: every parameter that changes the iterates, the kernel resolved
/// against the data (the text must stay as it is: state files carry its hash).
fn svm_fingerprint(
    params: &AidSvmValidParams,
    kernel: Option<KernelSpec>,
    data: &Dataset,
) -> checkpoint::Stamp {
    let p = params;
    let mut settings = checkpoint::common_settings(p.r0, p.settings.gap_tol, p.seed);
    settings
        .set("-c", p.c)
        .kernel(&kernel.unwrap_or(KernelSpec::Linear))
        .set("-e", p.solver_tol)
        .set(
            "--engine",
            match p.linear_engine {
                AidLinearEngine::Auto => "auto".to_owned(),
                AidLinearEngine::Dcd => "dcd".to_owned(),
                AidLinearEngine::SmoUpTo(usize::MAX) => "smo".to_owned(),
                AidLinearEngine::SmoUpTo(k) => format!("smo up to {k} clusters"),
            },
        );
    let mut desc = format!(
        "svm|{:?}|{:?}|{:?}|{}|{:?}|{:?}|{:?}",
        p.c.to_bits(),
        kernel,
        p.r0.map(f64::to_bits),
        p.seed,
        p.solver_tol.to_bits(),
        p.settings.gap_tol.to_bits(),
        p.linear_engine
    );
    // The block engine reaches the SMO problems to the tolerance, not the pair engine's bits;
    // recorded for it only (`smo` and `auto` run the pair engine), so the text above stays.
    if p.qp_engine == SvmSolver::Block {
        settings.set("--solver", SvmSolver::Block.as_str());
        desc.push_str("|block");
    }
    checkpoint::fingerprint(&desc, settings, data)
}

/// AID-SVM (see module docs).
///
/// `ctl`'s observer is asked before every aggregated solve and by its solver (SMO every 1000
/// pair updates, DCD every pass); its part callback receives every iteration's record. When
/// the observer asks to stop, the fit returns the best iterate so far with
/// [`Status::Interrupted`] (model and run `None` if no iteration finished) and an
/// [`AidCheckpoint`] (`None` too when the stop came during the initial clustering's sample
/// fit: a rerun starts over). Continuing such a checkpoint ([`Control::resume_from`]) gives the
/// iterates an uninterrupted run makes, bit for bit. With a kernel, the checkpoint holds the
/// cluster-pair kernel sums and the stored cluster kernel rows (`4 n` bytes each, at most 1 GiB
/// in all), so its size can reach that of the run's row store.
///
/// ```
/// use marginkit::aid::svm::{fit, AidSvmParams, AidSvmReport};
/// use marginkit::aid::AidCheckpoint;
/// use marginkit::fit::Control;
/// use std::ops::ControlFlow;
/// use marginkit::solver::{IterStats, Observer, Status};
/// use marginkit::{Dataset, DenseMatrix, Features};
///
/// // Stops at the second report it gets (a Ctrl-C handler would set a `Cancel` flag).
/// struct StopAt(usize);
/// impl Observer for StopAt {
///     fn on_iter(&mut self, _: &IterStats) -> ControlFlow<()> {
///         self.0 = self.0.saturating_sub(1);
///         if self.0 == 0 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
///     }
/// }
/// let n = 400;
/// let x: Vec<f64> = (0..n).flat_map(|i| {
///     let t = i as f64 * 0.37;
///     [t.sin() + if i % 2 == 0 { 0.6 } else { -0.6 }, (1.3 * t).cos()]
/// }).collect();
/// let y: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { 1.0 } else { -1.0 }).collect();
/// let data = Dataset::new(Features::Dense(DenseMatrix::new(n, 2, x)?), y, None)?;
/// let params = AidSvmParams::new().r0(0.01).check()?;
/// let full = fit(&params, &data, &mut Control::default())?;
///
/// let partial = fit(&params, &data, &mut Control::new(StopAt(2)))?;
/// if let Some(state) = &partial.checkpoint {
///     // The state file's bytes (FNV-1a checksummed) read back, then the run continues.
///     let state = AidCheckpoint::from_bytes(&state.to_bytes()).map_err(std::io::Error::other)?;
///     assert_eq!(partial.status(), Status::Interrupted);
///     let done = fit(&params, &data, &mut Control::default().resume_from(&state))?;
///     assert!(done.checkpoint.is_none());
///     let best = |r: &AidSvmReport| r.run.as_ref().map(|run| run.best_objective);
///     assert_eq!(best(&done.report), best(&full.report));
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`DataError::Empty`], [`DataError::SingleClass`], [`ParamError`] for more than two classes
/// or rows labelled 0 next to two classes (unlabeled rows belong to S3VM) or a Nystrom-steered
/// run asked to resume, solver errors; [`FitError::Checkpoint`] when the state to resume was
/// made by another model, with other data or parameters, or does not fit the data.
pub fn fit(
    params: &AidSvmValidParams,
    data: &Dataset,
    ctl: &mut Control<'_, AidCheckpoint, IterRecord>,
) -> Result<AidSvmFit, FitError> {
    let kernel = params.kernel.map(|k| k.resolve(data.n_features()));
    fit_with(data, params, kernel, ctl, SampleFit::Dcd)
}

/// [`fit`] with the kernel resolved and the sample fit's solver chosen.
fn fit_with(
    data: &Dataset,
    params: &AidSvmValidParams,
    kernel: Option<KernelSpec>,
    ctl: &mut Control<'_, AidCheckpoint, IterRecord>,
    sample_fit: SampleFit,
) -> Result<AidSvmFit, FitError> {
    let (labels, y) = binary_signs(data)?;
    let resume = ctl.resume();
    if let (Some(kern), KernelSteering::Nystrom { rank, steer_gap }) =
        (kernel, params.kernel_steering)
    {
        if resume.is_some() {
            return Err(ParamError::Incompatible(
                "a Nystrom-steered AID run has no resumable state (interrupt it and rerun it)",
            )
            .into());
        }
        return fit_nystrom(data, labels, y, params, kern, (rank, steer_gap), ctl);
    }
    let t0 = Instant::now();
    let ks = kernel.map(|k| KernelSums::new(&data.x, k));
    let mut problem = SvmProblem {
        data,
        y,
        c: params.c,
        kernel,
        tol: params.solver_tol,
        al_gap: AL_GAP_FRACTION * params.settings.gap_tol.max(CERT_GAP_RTOL),
        seed: params.seed,
        engine: params.linear_engine,
        qp_engine: params.qp_engine,
        ks,
        gram: Vec::new(),
        sizes: Vec::new(),
        vrows: Vec::new(),
        max_vrows: (VROW_BUDGET_BYTES / (4 * data.len().max(1))).max(1),
        prepared: false,
    };
    let (state, init_seconds) = match resume {
        Some(ck) => {
            let width = if kernel.is_some() {
                0
            } else {
                data.n_features()
            };
            ck.check(
                AidModel::Svm,
                &svm_fingerprint(params, kernel, data),
                data.len(),
                width,
                kernel.is_some(),
            )?;
            let p = ck.problem.clone();
            problem.sizes = p.sizes;
            problem.gram = p.gram;
            problem.vrows = p.vrows;
            problem.prepared = p.prepared;
            let st = ck.to_loop::<SvmSolution>()?;
            (st, ck.init_seconds)
        }
        None => {
            let Some(clusters) = initial_clusters(
                data,
                &problem.y,
                params,
                kernel,
                problem.ks.as_ref(),
                sample_fit,
                ctl.observer(),
            )?
            else {
                // Stopped in the sample fit: nothing worth keeping (a rerun redoes it).
                return Ok(Fit {
                    model: None,
                    report: AidSvmReport {
                        run: None,
                        init_seconds: t0.elapsed().as_secs_f64(),
                        labels,
                        finish: None,
                    },
                    checkpoint: None,
                });
            };
            (LoopState::start(clusters), t0.elapsed().as_secs_f64())
        }
    };
    let (run, checkpoint) = match run_resumable(&mut problem, state, &params.settings, ctl)? {
        Outcome::Done(run) => (Some(run), None),
        Outcome::Stopped { partial, state } => {
            let ps = ProblemState {
                sizes: std::mem::take(&mut problem.sizes),
                gram: std::mem::take(&mut problem.gram),
                vrows: std::mem::take(&mut problem.vrows),
                prepared: problem.prepared,
                last_certified: false,
            };
            (
                partial,
                Some(AidCheckpoint::from_loop(
                    svm_fingerprint(params, kernel, data),
                    init_seconds,
                    state,
                    ps,
                )),
            )
        }
    };
    let model = match &run {
        Some(run) => Some(build_model(data, &labels, kernel, &run.best)?),
        None => None,
    };
    Ok(Fit {
        model,
        report: AidSvmReport {
            run,
            init_seconds,
            labels,
            finish: None,
        },
        checkpoint,
    })
}

/// Pivots below this fraction of the largest landmark self-kernel value are dropped from the
/// Nystrom factor (rank-deficient or duplicated landmarks).
const NYSTROM_PIVOT_RTOL: f64 = 1e-10;

/// Rows solved together by the Nystrom features' forward substitution (divides 1024).
const SUBST_LANES: usize = 32;

/// Kernel cache of the exact finish (LIBSVM's default `-m 200`).
const FINISH_CACHE_BYTES: u64 = 200 << 20;

/// Kernel cache of the linear aggregated problems solved by SMO, and the block engine's
/// buffer for the kernel ones (their dense matrix has no cache).
const AGGREGATED_CACHE_BYTES: u64 = 256 << 20;

/// Kernel cache of the initial clustering's sample fit (at most 2,000 rows).
const SAMPLE_CACHE_BYTES: u64 = 64 << 20;

/// Nystrom features `z_i = R^{-1} k_L(x_i)` (row-major `n x rank'`) with `K_LL = R R'` the
/// pivot-dropping Cholesky factor: `z_i'z_j = k_L(x_i)' K_LL^+ k_L(x_j)` on the kept landmarks.
fn nystrom_features(
    ks: &KernelSums<'_>,
    n: usize,
    rank: usize,
    seed: u64,
    stop: &mut dyn FnMut() -> bool,
) -> Result<Option<(DenseMatrix, usize, f64)>, FitError> {
    let r = rank.min(n);
    let mut land = landmark_draw(n, r, seed);
    land.truncate(r);
    land.sort_unstable();
    // Landmark kernel columns, landmark-major: kc[a * n + j] = K(x_{l_a}, x_j).
    let mut kc = vec![0.0; r * n];
    for (a, &l) in land.iter().enumerate() {
        if !ks.weighted_polled(&[l as u32], None, &mut kc[a * n..(a + 1) * n], stop) {
            return Ok(None);
        }
    }
    let mut kll = vec![0.0; r * r];
    for (a, row) in kll.chunks_mut(r).enumerate() {
        for (v, &l) in row.iter_mut().zip(&land) {
            *v = kc[a * n + l];
        }
    }
    let (lf, kept) = landmark_factor(&kll, r);
    let rk = kept.len();
    if rk == 0 {
        return Err(SolveError::NonFinite {
            what: "Nystrom factor (every landmark pivot vanished)",
        }
        .into());
    }
    // Forward substitution per row, in parallel over fixed row blocks (no cross-row sums),
    // polling between spans of blocks of about `POLL_WORK` flops.
    let mut z = vec![0.0; n * rk];
    let per_block = 1024 * (rk * rk / 2 + 1);
    let span = (super::ksums::POLL_WORK / per_block).max(1) * 1024;
    for (s, zs) in z.chunks_mut(span * rk).enumerate() {
        if stop() {
            return Ok(None);
        }
        zs.par_chunks_mut(1024 * rk)
            .enumerate()
            .for_each(|(b, out)| {
                // `SUBST_LANES` rows at a time, solved together: the scratch holds their `z`
                // factor-major (`zt[pk * SUBST_LANES + lane]`), so every update is a
                // contiguous multiply-subtract over the rows (vectorized), in the same order
                // per row as the row-by-row substitution (the same bits).
                let mut zt = vec![0.0; rk * SUBST_LANES];
                let lo = s * span + b * 1024;
                for (q, zq) in out.chunks_mut(SUBST_LANES * rk).enumerate() {
                    let i0 = lo + q * SUBST_LANES;
                    let lanes = zq.len() / rk;
                    for (pj, &j) in kept.iter().enumerate() {
                        let mut v = [0.0f64; SUBST_LANES];
                        v[..lanes].copy_from_slice(&kc[j * n + i0..j * n + i0 + lanes]);
                        for (pk, &k) in kept[..pj].iter().enumerate() {
                            let c = lf[j * r + k];
                            let zk = &zt[pk * SUBST_LANES..(pk + 1) * SUBST_LANES];
                            for (vl, &zl) in v.iter_mut().zip(zk) {
                                *vl -= c * zl;
                            }
                        }
                        let djj = lf[j * r + j];
                        for (zl, &vl) in zt[pj * SUBST_LANES..(pj + 1) * SUBST_LANES]
                            .iter_mut()
                            .zip(&v)
                        {
                            *zl = vl / djj;
                        }
                    }
                    for (t, zi) in zq.chunks_mut(rk).enumerate() {
                        for (pj, zv) in zi.iter_mut().enumerate() {
                            *zv = zt[pj * SUBST_LANES + t];
                        }
                    }
                }
            });
    }
    // Mean relative residual `1 - |z_i|^2 / K_ii` over every row (`n rank` flops).
    let residual = z
        .chunks(rk)
        .enumerate()
        .map(|(i, zi)| {
            let kii = ks.pair(i, i);
            if kii > 0.0 {
                (1.0 - zi.iter().map(|v| v * v).sum::<f64>() / kii).max(0.0)
            } else {
                0.0
            }
        })
        .sum::<f64>()
        / n.max(1) as f64;
    Ok(Some((DenseMatrix::new(n, rk, z)?, rk, residual)))
}

/// Every row index in a seeded order whose first `min(r, n)` are the landmarks (a partial
/// Fisher-Yates shuffle).
fn landmark_draw(n: usize, r: usize, seed: u64) -> Vec<usize> {
    let r = r.min(n);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x6e79_7374_726f_6d00);
    let mut ids: Vec<usize> = (0..n).collect();
    for i in 0..r {
        let j = rng.gen_range(i..n);
        ids.swap(i, j);
    }
    ids
}

/// Pivot-dropping Cholesky `K_LL = R R'` of a landmark Gram matrix (`r x r`, row-major) in its
/// given order: the row-major lower factor and the kept pivots. Its leading block is the
/// factor of the leading landmarks.
fn landmark_factor(kll: &[f64], r: usize) -> (Vec<f64>, Vec<usize>) {
    let maxd = (0..r).map(|a| kll[a * r + a]).fold(0.0f64, f64::max);
    let mut lf = vec![0.0; r * r];
    let mut kept: Vec<usize> = Vec::with_capacity(r);
    for j in 0..r {
        let mut d = kll[j * r + j];
        for &k in &kept {
            d -= lf[j * r + k] * lf[j * r + k];
        }
        // NaN or a vanishing (or negative: indefinite kernel) pivot: drop the landmark.
        if d.is_nan() || d <= NYSTROM_PIVOT_RTOL * maxd {
            continue;
        }
        let dj = d.sqrt();
        lf[j * r + j] = dj;
        for i in j + 1..r {
            let mut v = kll[j * r + i];
            for &k in &kept {
                v -= lf[i * r + k] * lf[j * r + k];
            }
            lf[i * r + j] = v / dj;
        }
        kept.push(j);
    }
    (lf, kept)
}

/// Mean relative Nystrom residual `1 - |z_i|^2 / K_ii` of the first `rank` landmarks of
/// [`landmark_draw`] on a seeded sample of [`RESIDUAL_SAMPLE`] rows outside the landmarks (0
/// when there are none): `rank^2 + sample * rank` kernel values, `sample * rank^2 / 2` flops.
fn nystrom_residual(ks: &KernelSums<'_>, n: usize, rank: usize, seed: u64) -> f64 {
    let mut ids = landmark_draw(n, rank, seed);
    let r = rank.min(n);
    let (land, rest) = ids.split_at_mut(r);
    let mut kll = vec![0.0; r * r];
    for a in 0..r {
        for b in 0..=a {
            let v = ks.pair(land[a], land[b]);
            kll[a * r + b] = v;
            kll[b * r + a] = v;
        }
    }
    let (lf, kept) = landmark_factor(&kll, r);
    // The sample: seeded rows outside the landmarks (whose residual is zero by construction).
    let s = RESIDUAL_SAMPLE.min(rest.len());
    if s == 0 {
        return 0.0;
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x7265_7369_6475_616c);
    for i in 0..s {
        let j = rng.gen_range(i..rest.len());
        rest.swap(i, j);
    }
    let land: &[usize] = land;
    // Collected, then summed in order: the result does not depend on the thread count.
    let per_row: Vec<f64> = rest[..s]
        .par_iter()
        .map(|&i| {
            let kii = ks.pair(i, i);
            let mut z = vec![0.0; r];
            let mut zz = 0.0;
            for &j in &kept {
                let mut v = ks.pair(land[j], i);
                for &k in kept.iter().take_while(|&&k| k < j) {
                    v -= lf[j * r + k] * z[k];
                }
                z[j] = v / lf[j * r + j];
                zz += z[j] * z[j];
            }
            if kii > 0.0 {
                (1.0 - zz / kii).max(0.0)
            } else {
                0.0
            }
        })
        .collect();
    per_row.iter().sum::<f64>() / s as f64
}

/// The warm start's gradient terms `(Q a, Q a_upper)` of the duals `alpha` (box `[0, c]`) for
/// [`smo::WarmGradient`], by two vectorized kernel sums (free and at-bound duals), not one
/// kernel column per nonzero dual: `(Q a)_i = y_i sum_j a_j y_j K_ij`. `None` when `stop`
/// stopped a sum.
fn warm_gradient_terms(
    ks: &KernelSums<'_>,
    y: &[i8],
    alpha: &[f64],
    c: f64,
    stop: &mut dyn FnMut() -> bool,
) -> Option<(Vec<f64>, Vec<f64>)> {
    let n = alpha.len();
    let (mut free_rows, mut free_w, mut up_rows, mut up_w) = (vec![], vec![], vec![], vec![]);
    for i in 0..n {
        let yi = f64::from(y[i]);
        if alpha[i] >= c {
            up_rows.push(i as u32);
            up_w.push(c * yi);
        } else if alpha[i] > 0.0 {
            free_rows.push(i as u32);
            free_w.push(alpha[i] * yi);
        }
    }
    let mut qa_upper = vec![0.0; n];
    let mut qa = vec![0.0; n];
    if !up_rows.is_empty() && !ks.weighted_polled(&up_rows, Some(&up_w), &mut qa_upper, stop) {
        return None;
    }
    if !free_rows.is_empty() && !ks.weighted_polled(&free_rows, Some(&free_w), &mut qa, stop) {
        return None;
    }
    for i in 0..n {
        let yi = f64::from(y[i]);
        qa_upper[i] *= yi;
        qa[i] = yi * qa[i] + qa_upper[i];
    }
    Some((qa, qa_upper))
}

/// [`KernelSteering::Nystrom`]: steering AID on Nystrom features, then the exact SMO finish.
///
/// `steering` is the `(rank, steer_gap)` of [`KernelSteering::Nystrom`].
// One piece: the steering run hands the exact finish its duals, and a stop in either ends both.
fn fit_nystrom(
    data: &Dataset,
    labels: Vec<f64>,
    y: Vec<i8>,
    params: &AidSvmValidParams,
    kern: KernelSpec,
    (rank, steer_gap): (NystromRank, f64),
    ctl: &mut Control<'_, AidCheckpoint, IterRecord>,
) -> Result<AidSvmFit, FitError> {
    let start = Instant::now();
    let n = data.len();
    let ks = KernelSums::new(&data.x, kern);
    // A stop before the exact finish has started leaves nothing worth a model (and a
    // Nystrom run has no resumable state).
    let stopped = |labels: Vec<f64>| Fit {
        model: None,
        report: AidSvmReport {
            run: None,
            init_seconds: start.elapsed().as_secs_f64(),
            labels,
            finish: None,
        },
        checkpoint: None,
    };
    let mut polls = 0u64;
    let mut stop = |obs: &mut dyn Observer| {
        polls += 1;
        stop_requested_stage(obs, polls, n)
    };
    // The rank: fixed, or `AUTO_RANK` when its sampled residual is small enough (`None`: it is
    // not, no steering).
    let (rank, probe_residual) = match rank {
        NystromRank::Fixed(r) => (Some(r), f64::NAN),
        NystromRank::Auto => {
            let q = nystrom_residual(&ks, n, AUTO_RANK.min(n), params.seed);
            ((q <= AUTO_MAX_RESIDUAL).then_some(AUTO_RANK), q)
        }
    };
    let mut alpha = vec![0.0; n];
    let (steer_records, init_seconds, rk, residual) = match rank {
        None => (Vec::new(), start.elapsed().as_secs_f64(), 0, probe_residual),
        Some(rank) => {
            let Some((z, rk, residual)) =
                nystrom_features(&ks, n, rank, params.seed, &mut || stop(ctl.observer()))?
            else {
                return Ok(stopped(labels));
            };
            let zdata = Dataset::new(Features::Dense(z), data.y.clone(), None)?;
            let steer_params = AidSvmValidParams {
                kernel: None,
                kernel_steering: KernelSteering::AveragedGram,
                settings: AidSettings {
                    gap_tol: steer_gap,
                    ..params.settings
                },
                ..params.clone()
            };
            // A stop while steering leaves nothing worth a model: the finish has not started.
            let steer = fit_with(&zdata, &steer_params, None, ctl, SampleFit::Smo)?;
            let (Some(steer_run), None) = (steer.report.run, steer.checkpoint) else {
                return Ok(stopped(labels));
            };
            drop(zdata);
            // Disaggregated duals a_i = a_k / |C_k| (feasible: y'a and the box carry over,
            // §3.6); the best iterate is the last one when its alpha has one entry per final
            // cluster (clusters only split, so the count grows every iteration); otherwise
            // start from zero.
            let cl = &steer_run.clusters;
            if steer_run.best.alpha.len() == cl.len() {
                for k in 0..cl.len() {
                    let a = (steer_run.best.alpha[k] / cl.size(k) as f64).clamp(0.0, params.c);
                    for &i in cl.members(k) {
                        alpha[i as usize] = a;
                    }
                }
            }
            (
                steer_run.iterations,
                steer.report.init_seconds,
                rk,
                residual,
            )
        }
    };
    let steer_seconds = start.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let upper = vec![params.c; n];
    let p = vec![-1.0; n];
    let qp = BoxQp {
        p: &p,
        y: &y,
        upper: &upper,
        equality: Equality::Sum { delta: 0.0 },
        fixed: None,
    };
    let Some((qa, qa_upper)) =
        warm_gradient_terms(&ks, &y, &alpha, params.c, &mut || stop(ctl.observer()))
    else {
        return Ok(stopped(labels));
    };
    drop(ks);
    let mut warm = Some(smo::WarmGradient {
        qa: &qa,
        qa_upper: &qa_upper,
    });
    let cost = qp_engine::row_cost(&data.x, kern);
    let plan = qp_engine::plan(params.qp_engine, FINISH_CACHE_BYTES, n, cost);
    let mut q = SvcQ::new(&data.x, kern, &y, plan.cache_bytes)?;
    let target = params.settings.gap_tol.max(CERT_GAP_RTOL);
    let mut tol = 1e-3;
    let mut smo_iterations = 0;
    let mut interrupted;
    let (report, g) = loop {
        let settings = SolverSettings {
            tol,
            shrinking: Shrinking::On,
            max_iter: None,
            time_limit: params
                .settings
                .time_limit
                .map(|l| l.saturating_sub(start.elapsed())),
        };
        let (info, g) = qp_engine::solve_with_gradient(
            &plan,
            &mut q,
            &qp,
            &mut alpha,
            &settings,
            ctl.observer(),
            warm.take(),
        )?;
        smo_iterations += info.iterations;
        interrupted = info.status == Status::Interrupted;
        let rep = kkt::check_gradient(&g, &qp, &alpha);
        let dual = -rep.objective;
        let primal = dual + rep.gap;
        if rep.gap <= target * primal.abs() || tol <= 1e-9 || info.status != Status::Converged {
            break (rep, g);
        }
        tol *= 0.1;
    };
    // Dual value D = e'a - 1/2 a'Qa (a lower bound on E*, weak duality) and the primal value of
    // (w(a), b) at the gap-minimizing bias b: E = D + gap.
    let dual = -report.objective;
    let primal = dual + report.gap;
    let gap = report.gap / primal.abs().max(f64::MIN_POSITIVE);
    let w_sq: f64 = alpha.iter().zip(&g).map(|(&a, &gi)| a * (gi + 1.0)).sum();
    // (Q a)_i = y_i sum_j a_j y_j K_ij, so sum_j coef_j K_ij = y_i (g_i + 1).
    let decision: Vec<f64> = g
        .iter()
        .zip(&y)
        .map(|(&gi, &yi)| f64::from(yi) * (gi + 1.0))
        .collect();
    let expansion: Vec<(u32, f64)> = (0..n)
        .filter(|&i| alpha[i] > 0.0)
        .map(|i| (i as u32, alpha[i] * f64::from(y[i])))
        .collect();
    let sol = SvmSolution {
        w: Vec::new(),
        b: report.b,
        alpha,
        expansion,
        w_sq,
        decision,
    };
    let finish_seconds = t1.elapsed().as_secs_f64();
    let rec = IterRecord {
        t: steer_records.len(),
        clusters: n,
        r: 1.0,
        lower_bound: dual,
        bound_t: dual,
        aggregated_objective: primal,
        objective: primal,
        best_objective: primal,
        gap,
        violating: 0,
        seconds: finish_seconds,
    };
    ctl.part_done(&rec);
    let steer_iterations = steer_records.len();
    let mut iterations = steer_records;
    iterations.push(rec);
    let (status, termination) = if interrupted {
        (Status::Interrupted, None)
    } else if gap <= CERT_GAP_RTOL {
        (Status::Converged, Some(Termination::Optimal))
    } else if gap <= params.settings.gap_tol {
        (Status::Converged, Some(Termination::Gap))
    } else if params
        .settings
        .time_limit
        .is_some_and(|l| start.elapsed() >= l)
    {
        (Status::TimeLimit, None)
    } else {
        (Status::MaxIterations, None)
    };
    let run = AidRun {
        best: sol,
        best_objective: primal,
        lower_bound: dual,
        status,
        termination,
        iterations,
        clusters: Clusters::singletons(n),
    };
    let model = build_model(data, &labels, Some(kern), &run.best)?;
    Ok(Fit {
        model: Some(model),
        report: AidSvmReport {
            run: Some(run),
            init_seconds,
            labels,
            finish: Some(ExactFinish {
                rank: rk,
                residual,
                steer_iterations,
                steer_seconds,
                smo_iterations,
                finish_seconds,
                smo_tol: tol,
            }),
        },
        checkpoint: None,
    })
}

fn build_model(
    data: &Dataset,
    labels: &[f64],
    kernel: Option<KernelSpec>,
    sol: &SvmSolution,
) -> Result<AidSvmModel, FitError> {
    match kernel {
        None => {
            let mut w = sol.w.clone();
            w.push(sol.b);
            Ok(AidSvmModel::Linear(LinearModel::from_parts(
                LinearSolver::L1LossSvcDual,
                labels.to_vec(),
                data.n_features(),
                Some(1.0),
                vec![w],
            )?))
        }
        Some(kern) => {
            // LIBSVM layout: positive-class SVs first.
            let mut pos: Vec<(usize, f64)> = Vec::new();
            let mut neg: Vec<(usize, f64)> = Vec::new();
            let mut exp = sol.expansion.clone();
            exp.sort_by_key(|e| e.0);
            for (i, c) in exp {
                if c > 0.0 {
                    pos.push((i as usize, c));
                } else if c < 0.0 {
                    neg.push((i as usize, c));
                }
            }
            let idx: Vec<usize> = pos.iter().chain(&neg).map(|e| e.0).collect();
            let coef: Vec<f64> = pos.iter().chain(&neg).map(|e| e.1).collect();
            Ok(AidSvmModel::Kernel(Box::new(
                SvmModel {
                    svm_type: SvmType::CSvc,
                    kernel: kern,
                    labels: labels.to_vec(),
                    n_sv: vec![pos.len(), neg.len()],
                    sv: data.x.select_rows(&idx),
                    sv_indices: Some(idx),
                    sv_coef: vec![coef],
                    rho: vec![-sol.b],
                    prob_a: Vec::new(),
                    prob_b: Vec::new(),
                    sv_norms: Vec::new(),
                }
                .with_norms(),
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A weighted aggregated problem: `k` centroids in `d` dimensions (overlapping classes),
    /// bounds `C |C_k|` with cluster sizes from 1 to 1,000.
    fn weighted(k: usize, d: usize, seed: u64) -> (Features, Vec<i8>, Vec<f64>) {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut x = Vec::with_capacity(k * d);
        let mut y = Vec::with_capacity(k);
        let mut u = Vec::with_capacity(k);
        for c in 0..k {
            let s: i8 = if c % 3 == 0 { -1 } else { 1 };
            for j in 0..d {
                let shift = if j < 2 { 0.8 * f64::from(s) } else { 0.0 };
                x.push(shift + rng.gen_range(-1.5..1.5));
            }
            y.push(s);
            let size = (10f64.powf(rng.gen_range(0.0..3.0))).round();
            u.push(0.1 * size);
        }
        (Features::Dense(DenseMatrix::new(k, d, x).unwrap()), y, u)
    }

    /// The Nystrom features reproduce the kernel against every kept landmark:
    /// `z_i'z_l = K(x_i, x_l)` (`K_LL = R R'`, `z_i = R^{-1} k_L(x_i)`), here checked on a row count
    /// that is not a multiple of the substitution's lane group or block (2,083 rows), with full
    /// rank (all 40 landmarks kept) and with a duplicated row among the data.
    #[test]
    fn nystrom_features_reproduce_landmark_kernel_columns() {
        let (x, _, _) = weighted(2083, 3, 11);
        let Features::Dense(d) = &x else {
            unreachable!()
        };
        let mut v = d.values().to_vec();
        v.copy_within(0..3, 3 * 2082);
        let x = Features::Dense(DenseMatrix::new(2083, 3, v).unwrap());
        let spec = KernelSpec::Rbf { gamma: 0.7 };
        let ks = KernelSums::new(&x, spec);
        let (z, rk, _) = nystrom_features(&ks, 2083, 40, 5, &mut || false)
            .unwrap()
            .unwrap();
        assert_eq!(rk, 40);
        // The landmarks: the rows whose own kernel row is reproduced exactly by z z'.
        let zr = |i: usize| &z.values()[i * rk..(i + 1) * rk];
        let mut landmarks = 0;
        for l in 0..2083 {
            let zl = zr(l);
            let nl: f64 = zl.iter().map(|a| a * a).sum();
            if (nl - 1.0).abs() > 1e-9 {
                continue;
            }
            let mut exact = true;
            for i in (0..2083).step_by(7).chain([2082, 2081]) {
                let k = ks.pair(i, l);
                let zz: f64 = zr(i).iter().zip(zl).map(|(a, b)| a * b).sum();
                exact &= (zz - k).abs() <= 1e-9;
            }
            landmarks += usize::from(exact);
        }
        assert!(landmarks >= 40, "{landmarks}");
    }

    /// The sampled residual of `NystromRank::Auto`: when the sample is every non-landmark row
    /// (`n - r <= RESIDUAL_SAMPLE`) it equals `n / (n - r)` times the all-row residual of the
    /// features built with those `r` landmarks (the same landmark set, factored in another
    /// order; landmarks have residual 0), and the definition `1 - k_L' K_LL^{-1} k_L` by a
    /// direct solve; the curve falls with the rank and rises with gamma.
    #[test]
    fn sampled_residuals_match_the_features_and_the_definition() {
        let n = 700;
        let (x, _, _) = weighted(n, 4, 3);
        let mut last = Vec::new();
        for gamma in [0.3, 3.0] {
            let ks = KernelSums::new(&x, KernelSpec::Rbf { gamma });
            let ranks = [10, 20, 40];
            let res: Vec<f64> = ranks
                .iter()
                .map(|&r| nystrom_residual(&ks, n, r, 9))
                .collect();
            for (&r, &q) in ranks.iter().zip(&res) {
                let (_, rk, all) = nystrom_features(&ks, n, r, 9, &mut || false)
                    .unwrap()
                    .unwrap();
                assert_eq!(rk, r);
                let all = all * n as f64 / (n - r) as f64;
                assert!((q - all).abs() <= 1e-9, "rank {r}: {q} vs {all}");
            }
            assert!(res[0] > res[1] && res[1] > res[2], "{res:?}");
            // Definition at rank 10: dense solve K_LL c = k_L by Gaussian elimination.
            let land = landmark_draw(n, 10, 9)[..10].to_vec();
            let mut direct = 0.0;
            for i in (0..n).filter(|i| !land.contains(i)) {
                let mut a: Vec<Vec<f64>> = land
                    .iter()
                    .map(|&p| {
                        let mut row: Vec<f64> = land.iter().map(|&q| ks.pair(p, q)).collect();
                        row.push(ks.pair(p, i));
                        row
                    })
                    .collect();
                for c in 0..10 {
                    let piv = (c..10)
                        .max_by(|&u, &v| a[u][c].abs().total_cmp(&a[v][c].abs()))
                        .unwrap();
                    a.swap(c, piv);
                    let prow = a[c].clone();
                    for (r2, row) in a.iter_mut().enumerate() {
                        if r2 != c {
                            let f = row[c] / prow[c];
                            for (v, &pv) in row[c..].iter_mut().zip(&prow[c..]) {
                                *v -= f * pv;
                            }
                        }
                    }
                }
                let quad: f64 = (0..10)
                    .map(|c| ks.pair(land[c], i) * a[c][10] / a[c][c])
                    .sum();
                direct += (1.0 - quad).max(0.0);
            }
            direct /= (n - 10) as f64;
            assert!((direct - res[0]).abs() <= 1e-8, "{direct} vs {}", res[0]);
            last.push(res[2]);
        }
        assert!(last[1] > last[0], "{last:?}");
    }

    /// The Nystrom steering's sample fit by SMO gives the same certified optimum as the
    /// exact problem: the steered run on a small RBF problem ends with a gap within the
    /// tolerance and its model's primal, recomputed from scratch, matches `E_best`.
    #[test]
    fn nystrom_steering_with_smo_sample_fit_is_certified() {
        let (x, y, _) = weighted(700, 2, 3);
        let labels: Vec<f64> = y.iter().map(|&v| f64::from(v)).collect();
        let data = Dataset::new(x, labels, None).unwrap();
        let kern = KernelSpec::Rbf { gamma: 0.5 };
        let params = AidSvmParams::new()
            .c(1.0)
            .kernel(KernelParams {
                kind: KernelKind::Rbf,
                gamma: crate::svm::params::Gamma::Value(0.5),
                ..KernelParams::default()
            })
            .kernel_steering(KernelSteering::Nystrom {
                rank: NystromRank::Fixed(30),
                steer_gap: 1e-3,
            })
            .check()
            .unwrap();
        let fit = super::fit(&params, &data, &mut Control::default()).unwrap();
        let run = fit.report.run.unwrap();
        let gap = (run.best_objective - run.lower_bound) / run.best_objective;
        assert!(gap <= params.settings.gap_tol, "{gap}");
        // Primal of (coef, b) from scratch: 1/2 |w|^2 + C sum hinge.
        let ks = KernelSums::new(&data.x, kern);
        let (rows, w): (Vec<u32>, Vec<f64>) = run.best.expansion.iter().copied().unzip();
        let mut f = vec![0.0; 700];
        ks.weighted(&rows, Some(&w), &mut f);
        let w_sq: f64 = rows.iter().zip(&w).map(|(&i, &c)| c * f[i as usize]).sum();
        let hinge: f64 = (0..700)
            .map(|i| (1.0 - f64::from(y[i]) * (f[i] + run.best.b)).max(0.0))
            .sum();
        let primal = 0.5 * w_sq + params.c * hinge;
        assert!(
            (primal - run.best_objective).abs() <= 1e-6 * primal,
            "{primal} vs {}",
            run.best_objective
        );
    }

    /// `best_bias` against brute force: a convex piecewise-linear function attains its minimum
    /// at a breakpoint, so the smallest value over all breakpoints is the optimum.
    #[test]
    fn best_bias_is_the_minimum_over_breakpoints() {
        for seed in 0..20 {
            let (xc, yk, upper) = weighted(60, 3, seed);
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(100 + seed);
            let w: Vec<f64> = (0..3).map(|_| rng.gen_range(-2.0..2.0)).collect();
            let h = |b: f64| -> f64 {
                (0..yk.len())
                    .map(|c| {
                        let f = ops::dot_dense(xc.row(c), &w) + b;
                        upper[c] * (1.0 - f64::from(yk[c]) * f).max(0.0)
                    })
                    .sum()
            };
            let brute = (0..yk.len())
                .map(|c| h(f64::from(yk[c]) - ops::dot_dense(xc.row(c), &w)))
                .fold(f64::INFINITY, f64::min);
            let hint = rng.gen_range(-3.0..3.0);
            let (b, hb) = best_bias(&xc, &yk, &upper, &w, hint);
            assert!((hb - h(b)).abs() <= 1e-9 * hb.max(1.0), "seed {seed}");
            assert!(
                hb <= brute * (1.0 + 1e-12) + 1e-12,
                "seed {seed}: {hb} vs {brute}"
            );
            assert!(
                hb >= brute * (1.0 - 1e-12) - 1e-12,
                "seed {seed}: {hb} vs {brute}"
            );
        }
    }

    /// Counts DCD passes and the rounds that stopped at their pass cap (a pass count that
    /// falls back means that round `round` ended and a new one started).
    #[derive(Default)]
    struct Passes {
        last: u64,
        round: u32,
        capped: usize,
        total: u64,
    }

    impl Observer for Passes {
        fn on_iter(&mut self, s: &IterStats) -> ControlFlow<()> {
            if s.iterations < self.last {
                let cap = (AL_FIRST_PASSES << self.round).min(dcd::DEFAULT_MAX_PASSES);
                self.capped += usize::from(self.last == cap);
                self.round += 1;
            }
            self.last = s.iterations;
            self.total += 1;
            ControlFlow::Continue(())
        }
    }

    /// The augmented-Lagrangian DCD with pass-capped rounds (at least one round stops at its
    /// cap) stops at a feasible point whose aggregated duality gap meets the target, whose dual
    /// value lies below an independent primal value and whose primal lies above an independent
    /// dual value (weak duality against SMO's point, the oracle), and whose bound is at least
    /// as good as the oracle's.
    #[test]
    fn capped_al_rounds_give_a_certified_aggregated_solution() {
        for (k, d, target) in [(400, 5, 1e-7), (1500, 10, 1e-8)] {
            let (xc, yk, upper) = weighted(k, d, 7 + k as u64);
            // Oracle: SMO on the same dual with the equality (exact f64 Q), to 1e-10; its
            // point brackets the optimum by weak duality: D(a*) <= F* <= P(w(a*), b*).
            let Features::Dense(m) = &xc else {
                panic!("dense centroids expected")
            };
            let mut qm = vec![0.0; k * k];
            for r in 0..k {
                for c in 0..k {
                    qm[r * k + c] =
                        f64::from(yk[r]) * f64::from(yk[c]) * ops::dense_dot(m.row(r), m.row(c));
                }
            }
            let mut q = DenseQ::new(k, &qm).unwrap();
            let p = vec![-1.0; k];
            let qp = BoxQp {
                p: &p,
                y: &yk,
                upper: &upper,
                equality: Equality::Sum { delta: 0.0 },
                fixed: None,
            };
            let mut a_star = vec![0.0; k];
            let settings = SolverSettings {
                tol: 1e-10,
                ..SolverSettings::default()
            };
            let info = smo::solve(
                &mut q,
                &qp,
                &mut a_star,
                &settings,
                &mut crate::solver::NoObserver,
            )
            .unwrap();
            assert_eq!(info.status, Status::Converged);
            let w_star = signed_combination(&xc, &yk, &a_star);
            let d_star = a_star.iter().sum::<f64>() - 0.5 * ops::dense_dot(&w_star, &w_star);
            let (_, h_star) = best_bias(&xc, &yk, &upper, &w_star, -info.rho);
            let p_star = 0.5 * ops::dense_dot(&w_star, &w_star) + h_star;
            // (SMO keeps Q in f32, so its point is only near-optimal for the f64 problem.)
            assert!(p_star - d_star <= 1e-5 * p_star, "oracle {d_star} {p_star}");

            let mut alpha = vec![0.0; k];
            let mut obs = Passes::default();
            let dual = AggregatedDual {
                xc: &xc,
                yk: &yk,
                upper: &upper,
            };
            let (w, b) = solve_linear_al(&dual, &mut alpha, 0.0, 1e-12, target, 3, &mut obs)
                .unwrap()
                .unwrap();
            // Feasible: box and y'a = 0.
            let scale: f64 = upper.iter().sum();
            let ya: f64 = alpha.iter().zip(&yk).map(|(a, &y)| a * f64::from(y)).sum();
            assert!(ya.abs() <= 1e-12 * scale, "y'a = {ya}");
            assert!(alpha
                .iter()
                .zip(&upper)
                .all(|(&a, &u)| (0.0..=u).contains(&a)));
            let w_sq = ops::dense_dot(&w, &w);
            let dual = alpha.iter().sum::<f64>() - 0.5 * w_sq;
            let hinge: f64 = (0..k)
                .map(|c| {
                    let f = ops::dot_dense(xc.row(c), &w) + b;
                    upper[c] * (1.0 - f64::from(yk[c]) * f).max(0.0)
                })
                .sum();
            let primal = 0.5 * w_sq + hinge;
            let tiny = 1e-12 * p_star.abs();
            assert!(
                dual <= p_star + tiny,
                "k {k}: bound {dual} above a primal value {p_star}"
            );
            assert!(
                primal >= d_star - tiny,
                "k {k}: primal {primal} below a bound {d_star}"
            );
            assert!(
                dual >= d_star - target * p_star,
                "k {k}: bound {dual} vs {d_star}"
            );
            assert!(
                primal - dual <= target * primal,
                "k {k}: gap {} above the target {target}",
                (primal - dual) / primal
            );
            assert!(
                obs.capped >= 1,
                "k {k}: no round hit its pass cap ({} passes)",
                obs.total
            );
        }
    }
}
