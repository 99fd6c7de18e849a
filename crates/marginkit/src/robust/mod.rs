//! Robust (ramp-loss) SVC and SVR, the outlier path (OP) homotopy, and the CCCP baseline.
//!
//! **Problem** (no bias, as in the paper; `f(x) = sum_j beta_j K(x, x_j)`):
//!
//! ```text
//! min_f  1/2 |f|_H^2 + C sum_i loss(t_i; theta, s)
//! SVC: t_i = 1 - y_i f(x_i), T = 1 - s (s <= 0);   SVR: t_i = |y_i - f(x_i)|, T = s (s >= 0)
//! loss(t) = [t]_+ - (1 - theta) [t - T]_+          (theta in [0, 1])
//! ```
//! `theta = 1` (or `s = -inf` / `+inf`) is the hinge-loss SVC / LAD-SVR; `theta = 0` truncates the
//! loss at `T` (ramp loss for SVC with `s = 0`). Samples with `t > T` are outliers.
//!
//! | paper (Suzumura et al.) | code |
//! |---|---|
//! | `alpha_i` (SVC, `f = sum alpha_j y_j K`) | `beta_i = y_i alpha_i` |
//! | `alpha_i` (SVR) | `beta_i` |
//! | `m_i = y_i f(x_i)`, `r_i = y_i - f(x_i)` | slack `t_i = 1 - m_i`, `t_i = |r_i|` |
//! | `s` (threshold), `theta` (outlier weight) | `T` (threshold on the slack), `theta` |
//! | `R, E, L, O`, `I'`, `O'` | states `R, E, L, O, Bi, Bo` ([`homotopy`]) |
//! | `Q_EE alpha_E = 1 - C Q_EL 1 - C theta Q_EO 1` (Eq. 27) | `K_AA beta_A = y_A - K_{A,rest} beta_rest` |
//!
//! **Algorithm** (OP, Algorithm 1 with the digest's corrections): the standard SVM at the same `C`
//! is solved by [`crate::solver::smo`] (a box QP over `2n` variables `beta = beta+ - beta-`) and
//! polished to the exact optimum; the partition starts with the **inliers `{t <= T}`** (Algorithm 1
//! prints the two sets swapped). Then, alternately:
//! * **C-step** (continuous): inside one partition `{I, O}` the conditional optimum is piecewise
//!   linear in `theta` (OP-theta: outlier coefficients `C theta sigma`, the active set re-solved from
//!   the linear system above); each step goes to the nearest event (a free coefficient reaching
//!   its box end, a slack reaching 0, an inlier or outlier reaching `T`, or `theta = 0`). For
//!   OP-s (`theta = 0`) the solution is constant and `T` moves to the largest inlier slack.
//! * **D-step** (jump) when a sample reaches `T`: every boundary sample is flipped (Eq. 17) and the
//!   convex problem of the new partition is reached by a second homotopy in `mu: 1 -> 0` (App. C):
//!   the flipped coefficients move linearly to their targets (`C theta` or `C`) while the others
//!   re-solve, with inliers/outliers that reach `T` held on it (states `Bi`, `Bo`, whose
//!   coefficients may go beyond `C` or below `C theta`, even negative). Samples still held at
//!   `mu = 0` are flipped again. By Thm 3 each D-step strictly lowers the objective.
//!
//! **Stopping rule**: OP-theta ends at `theta = 0`; OP-s ends at `s = 0` (SVC) or
//! `s = s_end_fraction * s_R` (SVR, the paper's candidate range `[0.2 s_R, s_R]`). Every event
//! counts against `max_events`; hitting it ends the path with [`RunEnd::EventLimit`] (the
//! shared [`Status::MaxIterations`]).
//!
//! **Cost per event**: one solve with the incrementally updated Cholesky factor of `K_AA`
//! (`O(|A|^2)`, [`chol`]) and one combination of `|A|` (plus driven) kernel columns over the
//! training and validation rows (`O((n + n_valid) |A|)` from cached columns, or `O(nnz(X))` for the
//! linear kernel through the primal weights).
//!
//! **Optimality** ([`check_local_optimality`]): Theorem 4 (SVC) and Theorem 5 (SVR, with the
//! digest's sign corrections: `beta_i = C sign(r_i)` for `0 < |r_i| < s`, `C theta sign(r_i)` for
//! `|r_i| > s`) plus the condition that no sample sits on the threshold. Every recorded node
//! carries its verdict; pre-jump nodes fail it by construction. The threshold condition is strict,
//! so its only tolerance is the rounding of the slack: a sample within `check_tol` of the
//! threshold is judged again on `f_i` recomputed from `beta` (compensated sum, with its rounding
//! bound), and it is on the threshold when that value and the caller's `f_i` do not lie strictly
//! on one side (a fixed `check_tol = 1e-6` window would flag genuine local optima at n = 10,000
//! and 20,000 whose samples are 1e-8 to 1e-6 inside their side; see
//! bench/results/robust.md). With the linear kernel the path recomputes `f = K beta`
//! at the end of every jump and flips within the jump any sample then found on the wrong side of
//! the threshold: while the active set spans the data `f` is held exactly and `beta` moves by
//! ill-conditioned solves, so the two drift apart (up to 4e-7 at n = 20,000, enough to leave a
//! just-flipped outlier inside the threshold for the returned `beta`).
//!
//! **Corrections and deviations** (documented): Algorithm 1's initial sets are swapped in the
//! paper; the loss is used in its continuous form `1 - theta z - (1 - theta) s` (equal to the
//! printed Eq. 5 whenever `theta s = 0`, i.e. on both paths the paper runs); SVR outliers carry a
//! fixed residual sign (the printed polytope is not convex otherwise); the paper's `Delta f_i`
//! lacks the `y_j` factors (the code works in `beta`, where it does not arise); the jump step is the
//! `mu`-path with the event list of the digest (the paper gives none). Samples that reach the boundary
//! together are flipped one at a time: simultaneous flips can push one another the wrong way
//! (counted at the start of a jump in [`OutlierPath::wrong_direction`]) or turn back across the
//! threshold later in the jump, with no event to stop them. Singular `K_AA` (linear kernel with
//! `|A| > d`, duplicated points) is handled by a ridge `tau = ridge * max_i K_ii` in the factor (see [`chol`]); past the
//! linear Gram rank the solves are filtered so the ridge cannot amplify rounding into a null-space
//! move of the coefficients, and events snap the slack of the sample that reaches 0 or `T` (without
//! the snap, spurious zero-length events grow the active set far past `d`: n = 3,000 blobs,
//! `|A|` 11 -> 190 and the event limit). **The active set holds independent samples only**: a
//! sample whose slack reaches its target (0 or `T`) while its kernel column depends on the
//! members' (squared pivot of the factor at most `1e3 tau`) cannot move while the set keeps its
//! members (its slack is a fixed combination of theirs; exactly, it could not have moved either:
//! it got there by rounding), so it is *parked*: it stays in its bound state at the target (a
//! valid KKT point), the ratio test ignores it, and every removal from the active set releases it
//! (a degenerate pivot: the dependent sample waits while the basis is unchanged). Free samples of
//! the starting SVM that depend on earlier ones (duplicated points) enter through a degenerate
//! pivot that moves the coefficients along the null direction (`f` unchanged) until one reaches
//! an end of its box (least sample index on a tie). For the linear kernel the rank of the training
//! rows is computed once (`Kern::data_rank`, `d <= 128`); while the active-set factor has that
//! many independent members (`Chol::rank_above`), its rows span the data and the exact direction
//! moves no margin (`X_A dw = 0` with `dw` in the row space of `X`): `dw` is set to 0 exactly and
//! the pass over the data is skipped, in theta C-steps and in jumps alike. A jump whose active set
//! spans the data until `mu = 0` leaves `f` unchanged (the flip is absorbed by a null-space move of
//! the coefficients, [`OutlierPath::degenerate_jumps`]): `f` is then the conditional optimum of
//! both partitions, hence a local optimum although the flipped sample stays on the threshold.
//! Theorem 3's strict decrease and Theorem 4's condition 19e presume unique multipliers and do
//! not hold there; no pivot can move `f` (the solution of each `mu`-problem is unique in `f`).
//!
//! **Bias**: none, as in the paper. [`RobustParams::bias`] adds a regularized constant feature `b`:
//! the kernel becomes `K + b^2` (for the linear kernel, exactly the feature `b` appended to every
//! row) and the exported model carries `rho = -b^2 sum_j beta_j`.
//!
//! **Degenerate cases** (documented behaviour): OP-theta is constant when the standard SVM has no
//! sample beyond `T` (no outliers); OP-s returns only the standard SVM when it has no sample beyond
//! `T` (`s_C >= 0`, e.g. separable data); when every sample ends as an outlier the model is
//! `f = 0` at `theta = 0`. Duplicated points are handled by the ridge.
//!
//! Citation: S. Suzumura, K. Ogawa, M. Sugiyama, M. Karasuyama, I. Takeuchi, "Homotopy
//! Continuation Approaches for Robust SV Classification and Regression", arXiv 1507.03229 (2015),
//! Algorithm 1, Eqs. 2-27, Theorems 3-5, Appendix C; CCCP after Yuille & Rangarajan.

pub(crate) mod boxqp;
pub mod cccp;
pub mod checkpoint;
pub(crate) mod chol;
pub(crate) mod homotopy;
pub(crate) mod kern;
pub mod select;

use std::time::Instant;

use crate::data::Dataset;
use crate::error::{DataError, FitError, ParamError};
use crate::fit::{Control, Fit, Report};
use crate::kernel::KernelSpec;
use crate::solver::engine::{self as qp_engine, Plan};
use crate::solver::{Observer, Status, SvmSolver};
use crate::svm::{Gamma, KernelKind, KernelParams, SvmModel, SvmType};
pub use checkpoint::RobustCheckpoint;
use homotopy::Engine;
use kern::Kern;

/// Classification (ramp-loss SVC) or regression (truncated LAD-SVR).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Task {
    /// Robust SVC (labels: exactly two classes).
    Svc,
    /// Robust SVR (LAD loss, no epsilon tube).
    Svr,
}

/// Which homotopy parameter the path moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    /// OP-theta: theta from 1 to 0 at fixed `s`.
    Theta,
    /// OP-s: theta = 0, `s` from the standard SVM's extreme value toward 0 (SVC) or down to
    /// `s_end_fraction * s_R` (SVR).
    S,
}

impl PathKind {
    /// `"theta"` or `"s"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            PathKind::Theta => "theta",
            PathKind::S => "s",
        }
    }
}

/// Checked parameters of one outlier path (one `C`): built by [`RobustParams`], the only form
/// that [`fit`], [`select::select`], [`cccp::fit`] (through [`cccp::CccpParams`]) and
/// [`check_local_optimality`] accept.
#[derive(Debug, Clone, PartialEq)]
pub struct RobustValidParams {
    pub(crate) task: Task,
    pub(crate) kind: PathKind,
    pub(crate) kernel: KernelParams,
    pub(crate) c: f64,
    pub(crate) s_fixed: Option<f64>,
    pub(crate) s_end_fraction: f64,
    pub(crate) bias: Option<f64>,
    pub(crate) max_events: Option<usize>,
    pub(crate) cache_bytes: usize,
    pub(crate) qp_engine: SvmSolver,
    pub(crate) solver_tol: f64,
    pub(crate) ridge: f64,
    pub(crate) check_tol: f64,
    pub(crate) keep_solutions: bool,
}

impl RobustValidParams {
    /// SVC or SVR.
    pub fn task(&self) -> Task {
        self.task
    }
    /// The homotopy parameter the path moves (theta or s).
    pub fn kind(&self) -> PathKind {
        self.kind
    }
    /// The kernel, gamma not yet resolved against the data.
    pub fn kernel(&self) -> KernelParams {
        self.kernel
    }
    /// The kernel on data with `n_features` columns (gamma `Auto` is `1 / n_features`, resolved
    /// by [`KernelParams::resolve`]).
    pub fn kernel_for(&self, n_features: usize) -> KernelSpec {
        self.kernel.resolve(n_features)
    }
    /// Regularization constant `C`.
    pub fn c(&self) -> f64 {
        self.c
    }
    /// The fixed `s` as given (`None`: the task's default, see [`RobustValidParams::s_theta`]).
    pub fn s_fixed(&self) -> Option<f64> {
        self.s_fixed
    }
    /// The fixed `s` in effect for the theta path (SVC default 0, SVR default 1).
    pub fn s_theta(&self) -> f64 {
        self.s_fixed.unwrap_or(match self.task {
            Task::Svc => 0.0,
            Task::Svr => 1.0,
        })
    }
    /// The fraction of `s_R` where SVR OP-s ends.
    pub fn s_end_fraction(&self) -> f64 {
        self.s_end_fraction
    }
    /// The regularized constant feature `b`, if any.
    pub fn bias(&self) -> Option<f64> {
        self.bias
    }
    /// The event limit as given (`None`: `max(10_000, 50 n)`).
    pub fn max_events(&self) -> Option<usize> {
        self.max_events
    }
    /// Column cache budget in bytes.
    pub fn cache_bytes(&self) -> usize {
        self.cache_bytes
    }
    /// The QP engine of the standard SVM and the CCCP subproblems.
    pub fn qp_engine(&self) -> SvmSolver {
        self.qp_engine
    }
    /// SMO tolerance of the standard SVM and the CCCP subproblems.
    pub fn solver_tol(&self) -> f64 {
        self.solver_tol
    }
    /// Relative ridge of the active-set factor.
    pub fn ridge(&self) -> f64 {
        self.ridge
    }
    /// Tolerance of the local-optimality checker.
    pub fn check_tol(&self) -> f64 {
        self.check_tol
    }
    /// Whether every node keeps its coefficients and partition.
    pub fn keep_solutions(&self) -> bool {
        self.keep_solutions
    }
    /// The same parameters at another `C` (`c` checked by the caller).
    pub(crate) fn at_c(&self, c: f64) -> Self {
        Self { c, ..self.clone() }
    }
}

/// Parameters of one outlier path (one `C`), unchecked: a builder whose
/// [`check`](RobustParams::check) gives the [`RobustValidParams`] a fit accepts.
///
/// ```
/// use marginkit::robust::{PathKind, RobustParams, Task};
/// use marginkit::svm::{Gamma, KernelParams};
///
/// let p = RobustParams::new()
///     .task(Task::Svr)
///     .kind(PathKind::S)
///     .kernel(KernelParams { gamma: Gamma::Value(0.5), ..KernelParams::default() })
///     .c(10.0)
///     .check()?;
/// assert_eq!(p.s_theta(), 1.0);
/// assert!(RobustParams::new().c(f64::NAN).check().is_err());
/// # Ok::<(), marginkit::error::ParamError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RobustParams(RobustValidParams);

impl Default for RobustParams {
    /// Robust SVC along OP-theta, RBF kernel with gamma `1 / n_features`, C = 1, `s` as the
    /// paper, no bias, 512 MB of column cache.
    fn default() -> Self {
        Self(RobustValidParams {
            task: Task::Svc,
            kind: PathKind::Theta,
            kernel: KernelParams::default(),
            c: 1.0,
            s_fixed: None,
            s_end_fraction: Self::DEFAULT_S_END_FRACTION,
            bias: None,
            max_events: None,
            cache_bytes: Self::DEFAULT_CACHE_MB << 20,
            qp_engine: SvmSolver::Auto,
            solver_tol: Self::DEFAULT_SOLVER_TOL,
            ridge: 1e-11,
            check_tol: 1e-6,
            keep_solutions: false,
        })
    }
}

impl From<RobustValidParams> for RobustParams {
    fn from(p: RobustValidParams) -> Self {
        Self(p)
    }
}

impl RobustParams {
    /// Default end of the SVR `s` path, as a fraction of `s_R` (the paper's range).
    pub const DEFAULT_S_END_FRACTION: f64 = 0.2;
    /// Default kernel column cache, in MB.
    pub const DEFAULT_CACHE_MB: usize = 512;
    /// Default tolerance of the SMO solves (polished exactly afterwards).
    pub const DEFAULT_SOLVER_TOL: f64 = 1e-6;

    /// The defaults (see [`Default`]).
    pub fn new() -> Self {
        Self::default()
    }
    /// SVC or SVR.
    #[must_use]
    pub fn task(mut self, task: Task) -> Self {
        self.0.task = task;
        self
    }
    /// The homotopy parameter the path moves (theta or s).
    #[must_use]
    pub fn kind(mut self, kind: PathKind) -> Self {
        self.0.kind = kind;
        self
    }
    /// The kernel (any; gamma `Auto` resolves to `1 / n_features` of the training data).
    #[must_use]
    pub fn kernel(mut self, k: KernelParams) -> Self {
        self.0.kernel = k;
        self
    }
    /// Regularization constant `C > 0`.
    #[must_use]
    pub fn c(mut self, c: f64) -> Self {
        self.0.c = c;
        self
    }
    /// The fixed `s` of OP-theta and CCCP-theta: SVC `s <= 0` (default 0), SVR `s > 0` (default
    /// 1, the paper's Fig. 3a on standardized outputs).
    #[must_use]
    pub fn s_fixed(mut self, s: f64) -> Self {
        self.0.s_fixed = Some(s);
        self
    }
    /// SVR OP-s ends at this fraction of `s_R`, in `(0, 1)` (default 0.2, the paper's range).
    #[must_use]
    pub fn s_end_fraction(mut self, f: f64) -> Self {
        self.0.s_end_fraction = f;
        self
    }
    /// Regularized constant feature `b` (kernel `K + b^2`); `None`: no bias (the paper).
    #[must_use]
    pub fn bias(mut self, b: Option<f64>) -> Self {
        self.0.bias = b;
        self
    }
    /// Event limit of one path (default `max(10_000, 50 n)`).
    #[must_use]
    pub fn max_events(mut self, m: usize) -> Self {
        self.0.max_events = Some(m);
        self
    }
    /// Column cache budget in bytes (default 512 MB).
    #[must_use]
    pub fn cache_bytes(mut self, b: usize) -> Self {
        self.0.cache_bytes = b;
        self
    }
    /// The QP engine of the standard SVM and the CCCP subproblems (default
    /// [`SvmSolver::Auto`]; `--solver`). With [`SvmSolver::Block`] the column
    /// cache budget is shared with the working set's columns.
    #[must_use]
    pub fn qp_engine(mut self, e: SvmSolver) -> Self {
        self.0.qp_engine = e;
        self
    }
    /// SMO tolerance of the standard SVM and the CCCP subproblems, polished afterwards
    /// (default 1e-6).
    #[must_use]
    pub fn solver_tol(mut self, t: f64) -> Self {
        self.0.solver_tol = t;
        self
    }
    /// Relative ridge of the active-set factor, times `max_i K_ii` (default 1e-11).
    #[must_use]
    pub fn ridge(mut self, r: f64) -> Self {
        self.0.ridge = r;
        self
    }
    /// Tolerance of the local-optimality checker (default 1e-6): coefficients are compared
    /// within `check_tol * C`, slacks at the margin within `check_tol * max(|T|, 1)`. A sample
    /// within that window of the threshold `T` is judged on its slack recomputed from `beta`: it
    /// is on the threshold (condition 19e / 26d fails) only within that recomputation's
    /// rounding bound, not within `check_tol` (Theorems 4/5 require `t != T` strictly; see
    /// `judge` in the source).
    #[must_use]
    pub fn check_tol(mut self, t: f64) -> Self {
        self.0.check_tol = t;
        self
    }
    /// Keep every node's coefficients and partition (tests, plots, small problems).
    #[must_use]
    pub fn keep_solutions(mut self, k: bool) -> Self {
        self.0.keep_solutions = k;
        self
    }

    /// Checks every parameter (NaN-safe).
    ///
    /// # Errors
    /// [`ParamError`] naming the first invalid parameter.
    pub fn check(self) -> Result<RobustValidParams, ParamError> {
        let p = &self.0;
        let uses_gamma = matches!(
            p.kernel.kind,
            KernelKind::Poly | KernelKind::Rbf | KernelKind::Sigmoid
        );
        if let (true, Gamma::Value(g)) = (uses_gamma, p.kernel.gamma) {
            crate::error::positive("gamma", g)?;
        }
        if matches!(p.kernel.kind, KernelKind::Poly | KernelKind::Sigmoid)
            && !p.kernel.coef0.is_finite()
        {
            return Err(ParamError::OutOfRange {
                name: "coef0",
                value: p.kernel.coef0,
                range: "finite values",
            });
        }
        crate::error::positive("C", p.c)?;
        let s = p.s_theta();
        match p.task {
            Task::Svc if !(s.is_finite() && s <= 0.0) => {
                return Err(ParamError::OutOfRange {
                    name: "s",
                    value: s,
                    range: "(-inf, 0] for robust SVC",
                })
            }
            Task::Svr if !(s.is_finite() && s > 0.0) => {
                return Err(ParamError::OutOfRange {
                    name: "s",
                    value: s,
                    range: "(0, inf) for robust SVR",
                })
            }
            _ => {}
        }
        if !(p.s_end_fraction > 0.0 && p.s_end_fraction < 1.0) {
            return Err(ParamError::OutOfRange {
                name: "s_end_fraction",
                value: p.s_end_fraction,
                range: "(0, 1)",
            });
        }
        if let Some(b) = p.bias {
            crate::svm::linear::check_bias_feature(b)?;
        }
        crate::error::positive("solver_tol", p.solver_tol)?;
        crate::error::positive("ridge", p.ridge)?;
        crate::error::positive("check_tol", p.check_tol)?;
        Ok(self.0)
    }
}

/// Checks a value of theta.
///
/// # Errors
/// [`ParamError::OutOfRange`] outside `[0, 1]` (or NaN).
pub fn check_theta(theta: f64) -> Result<f64, ParamError> {
    if (0.0..=1.0).contains(&theta) {
        Ok(theta)
    } else {
        Err(ParamError::OutOfRange {
            name: "theta",
            value: theta,
            range: "[0, 1]",
        })
    }
}

/// What a recorded path point is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// The standard SVM (start of the path).
    Start,
    /// A breakpoint of the continuous path (a set change).
    SetChange,
    /// A solution touching the threshold, before the jump (not locally optimal).
    PreJump,
    /// The solution after a jump (locally optimal).
    PostJump,
    /// The end of the path.
    End,
}

impl NodeKind {
    /// Lower-case name for reports.
    pub fn as_str(&self) -> &'static str {
        match self {
            NodeKind::Start => "start",
            NodeKind::SetChange => "breakpoint",
            NodeKind::PreJump => "pre_jump",
            NodeKind::PostJump => "post_jump",
            NodeKind::End => "end",
        }
    }
}

/// One recorded point of a path (or one CCCP grid point).
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// theta (OP-theta) or s (OP-s).
    pub param: f64,
    /// What the point is.
    pub kind: NodeKind,
    /// Full robust objective (continuous loss) at this point.
    pub objective: f64,
    /// Outliers (samples beyond the threshold, or held on it as outliers).
    pub n_outliers: usize,
    /// Validation error (0-1 for SVC, mean absolute error for SVR), when validation data is given.
    pub valid_error: Option<f64>,
    /// The local-optimality checker's verdict (Theorems 4/5).
    pub locally_optimal: bool,
    /// Coefficients `beta` (with [`RobustParams::keep_solutions`]).
    pub beta: Option<Vec<f64>>,
    /// Per sample: 0 inlier, +-1 outlier with that slack sign (with `keep_solutions`).
    pub outlier_sign: Option<Vec<i8>>,
}

/// How a model selection ([`select::select`]) runs each `C`: the outlier path or the CCCP
/// baseline.
#[derive(Debug, Clone, PartialEq)]
pub enum Method {
    /// The outlier path (OP).
    Path,
    /// CCCP over this grid (theta values, or fractions of `s_C` / `s_R`).
    Cccp(Vec<f64>),
}

/// One `C`'s run of a model selection ([`select::select`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// `C`.
    pub c: f64,
    /// Recorded nodes (path breakpoints, or CCCP grid points).
    pub nodes: Vec<Node>,
    /// How it ended: completed, event limit (path), unconverged (CCCP) or interrupted.
    pub end: RunEnd,
    /// Path events (0 for CCCP).
    pub events: usize,
    /// Jump steps (path) or total outer rounds (CCCP).
    pub d_steps: usize,
    /// The final solution passed the independent local-optimality check (path), or every grid
    /// point did (CCCP).
    pub final_locally_optimal: bool,
    /// The checker's first violation at the end of the path (sample, condition), if any.
    pub final_violation: Option<(usize, &'static str)>,
    /// `s_C` / `s_R` of the standard SVM.
    pub s_standard: f64,
    /// Largest active set along the path (0 for CCCP).
    pub max_active: usize,
    /// Seconds for this `C`.
    pub seconds: f64,
}

/// The model a selection ([`select::select`]) chose.
#[derive(Debug, Clone, PartialEq)]
pub struct Chosen {
    /// Index of the run (`C`).
    pub run: usize,
    /// Index of the node in that run.
    pub node: usize,
    /// `C`.
    pub c: f64,
    /// theta or s.
    pub param: f64,
    /// Its validation error (`None` without validation data).
    pub valid_error: Option<f64>,
    /// Its coefficients.
    pub beta: Vec<f64>,
}

/// How one `C`'s run (an outlier path or a CCCP grid) ended, in the method's own terms; the
/// shared [`Status`] is [`RunEnd::status`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// Reached its end (path), or every grid point's outer loop converged (CCCP).
    Completed,
    /// The path stopped at its event limit ([`RobustParams::max_events`]).
    EventLimit,
    /// CCCP: some grid point's outer loop hit [`cccp::MAX_OUTER`] rounds.
    Unconverged,
    /// An observer asked to stop (e.g. Ctrl-C).
    Interrupted,
}

impl RunEnd {
    /// Lower-case name for reports: `"completed"`, `"event_limit"`, `"unconverged"`,
    /// `"interrupted"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            RunEnd::Completed => "completed",
            RunEnd::EventLimit => "event_limit",
            RunEnd::Unconverged => "unconverged",
            RunEnd::Interrupted => "interrupted",
        }
    }
    /// The shared status: a limit on events or rounds is [`Status::MaxIterations`].
    pub fn status(&self) -> Status {
        match self {
            RunEnd::Completed => Status::Converged,
            RunEnd::EventLimit | RunEnd::Unconverged => Status::MaxIterations,
            RunEnd::Interrupted => Status::Interrupted,
        }
    }
}

/// One outlier path.
#[derive(Debug, Clone)]
pub struct OutlierPath {
    /// SVC or SVR.
    pub task: Task,
    /// theta or s.
    pub kind: PathKind,
    /// `C`.
    pub c: f64,
    /// Recorded points in path order.
    pub nodes: Vec<Node>,
    /// How it ended (the shared status through [`Report::status`]).
    pub end: RunEnd,
    /// Events processed (continuous steps, jump sub-steps).
    pub events: usize,
    /// Jump steps.
    pub d_steps: usize,
    /// Jumps whose simultaneous flips would have pushed one another the wrong way at the start
    /// (every jump flips one sample at a time).
    pub wrong_direction: usize,
    /// Jumps that did not change the solution: when the active rows span the data (linear
    /// kernel, as many independent active samples as the data's rank) the active set can absorb
    /// the flip completely, by a null-space move of its coefficients; the
    /// multipliers are then not unique and the point is a local optimum although a sample stays on
    /// the threshold (Theorem 4's condition 19e presumes unique multipliers). The path goes on.
    pub degenerate_jumps: usize,
    /// Largest active set (`|E|` plus samples held on the threshold) along the path.
    pub max_active: usize,
    /// Index (into `nodes`) of the best locally optimal node by validation error, its error and
    /// its coefficients.
    pub best: Option<(usize, f64, Vec<f64>)>,
    /// Coefficients at the end of the path.
    pub final_beta: Vec<f64>,
    /// `s_C` (SVC) or `s_R` (SVR) of the standard SVM.
    pub s_standard: f64,
    /// The end-of-path solution passed the independent checker (fresh `K beta`).
    pub final_locally_optimal: bool,
    /// The checker's first violation at the end of the path, if any: sample and condition.
    pub final_violation: Option<(usize, &'static str)>,
    /// Wall-clock seconds.
    pub seconds: f64,
}

impl Report for OutlierPath {
    /// [`RunEnd::status`] of the path's end.
    fn status(&self) -> Status {
        self.end.status()
    }
}

/// The data of a robust fit: the training set (SVC: exactly two classes) and, optionally, a
/// validation set on which every node is evaluated.
pub type RobustData<'a> = crate::data::TrainValid<'a>;

/// Asks the observer between steps (iteration `i` of no solver) whether to stop.
pub(crate) fn stop_requested(obs: &mut dyn Observer, i: usize) -> bool {
    let s = crate::solver::IterStats {
        iterations: i as u64,
        max_violation: f64::NAN,
        active: 0,
    };
    obs.on_iter(&s).is_break()
}

/// Internal label coding: SVC `+1` for the first label in order of appearance, `-1` otherwise.
pub(crate) struct Coded {
    pub y: Vec<f64>,
    pub labels: [f64; 2],
}

pub(crate) fn code_labels(task: Task, data: &Dataset) -> Result<Coded, DataError> {
    match task {
        Task::Svr => Ok(Coded {
            y: data.y.clone(),
            labels: [1.0, -1.0],
        }),
        Task::Svc => {
            let labels = data.labels_in_order();
            if labels.len() < 2 {
                return Err(match labels.first() {
                    Some(&label) => DataError::SingleClass { label },
                    None => DataError::Empty,
                });
            }
            if labels.len() > 2 {
                return Err(DataError::TooManyClasses {
                    found: labels.len(),
                    limit: 2,
                });
            }
            let l = [labels[0], labels[1]];
            Ok(Coded {
                y: data
                    .y
                    .iter()
                    .map(|&v| if v == l[0] { 1.0 } else { -1.0 })
                    .collect(),
                labels: l,
            })
        }
    }
}

/// Validation targets in the internal coding (an SVC label outside the training pair is coded 0
/// and always counts as an error).
pub(crate) fn code_valid(task: Task, labels: [f64; 2], valid: &Dataset) -> Vec<f64> {
    match task {
        Task::Svr => valid.y.clone(),
        Task::Svc => valid
            .y
            .iter()
            .map(|&v| {
                if v == labels[0] {
                    1.0
                } else if v == labels[1] {
                    -1.0
                } else {
                    0.0
                }
            })
            .collect(),
    }
}

/// What a path, a CCCP run and a selection share before the standard SVM: checked parameters
/// and data, coded labels and validation targets, the kernel over both sets, the ridge.
pub(crate) struct Setup<'a> {
    /// The kernel resolved against the training data.
    pub kernel: KernelSpec,
    pub y: Vec<f64>,
    pub yv: Vec<f64>,
    pub kern: Kern<'a>,
    pub ridge: f64,
    /// The QP engine of the box problems ([`boxqp::solve_box`]) and its share of the cache.
    pub plan: Plan,
}

pub(crate) fn setup<'a>(
    params: &RobustValidParams,
    train: &'a Dataset,
    valid: Option<&'a Dataset>,
) -> Result<Setup<'a>, FitError> {
    check_data(train, valid)?;
    let kernel = params.kernel_for(train.n_features());
    if kernel == KernelSpec::Precomputed {
        check_serials(train)?;
    }
    let coded = code_labels(params.task, train)?;
    let yv = valid.map_or_else(Vec::new, |v| code_valid(params.task, coded.labels, v));
    // The box problems have two variables per sample (`beta = beta+ - beta-`).
    let cost = qp_engine::row_cost(&train.x, kernel);
    let plan = qp_engine::plan(
        params.qp_engine,
        params.cache_bytes as u64,
        2 * train.len(),
        cost,
    );
    let kern = Kern::new(
        &train.x,
        valid.map(|v| &v.x),
        kernel,
        params.bias,
        plan.cache_bytes,
    );
    let ridge = ridge_of(&kern, params.ridge);
    Ok(Setup {
        kernel,
        y: coded.y,
        yv,
        kern,
        ridge,
        plan,
    })
}

/// [`setup`] followed by the standard SVM at `params.c` (cold start): `(setup, beta, f)`.
pub(crate) fn check_data(train: &Dataset, valid: Option<&Dataset>) -> Result<(), DataError> {
    if train.is_empty() || valid.is_some_and(|v| v.is_empty()) {
        return Err(DataError::Empty);
    }
    Ok(())
}

/// A precomputed kernel reads `K(i, j)` from row `i`'s column `serial(j)`, the serial being
/// column 0 of training row `j`: each must be an integer naming a column of the kernel rows
/// (as [`crate::kernel::qmatrix`] requires), else every entry would silently read 0.
fn check_serials(train: &Dataset) -> Result<(), DataError> {
    let width = train.x.n_cols() as f64;
    for r in 0..train.len() {
        let s = train.x.row(r).get(0);
        if !(s.fract() == 0.0 && s >= 1.0 && s < width) {
            return Err(DataError::Precomputed {
                row: r,
                reason: "the serial number (index 0) must be an integer naming a column of the kernel row",
            });
        }
    }
    Ok(())
}

/// The conditions [`check_state`] names (Theorems 4 and 5).
pub(crate) const VIOLATIONS: [&str; 5] = [
    "on the threshold (19e / 26d)",
    "margin > 1 needs alpha = 0 (19a)",
    "on the margin needs alpha in [0, C] (19b / 26a)",
    "inlier needs alpha = C sign (19c / 26b)",
    "outlier needs alpha = C theta sign (19d / 26c)",
];

/// The local-optimality conditions of Theorem 4 (SVC) / 5 (SVR) at one point of a path: the
/// task, `C`, `theta`, the threshold `T` and the checker's relative tolerance (`check_tol`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Conditions {
    pub task: Task,
    pub c: f64,
    pub theta: f64,
    pub tt: f64,
    pub tol: f64,
}

/// The absolute widths of the conditions' tests: the slack window `t` around 0 (and `T`) and
/// the coefficient window `a`.
#[derive(Debug, Clone, Copy)]
struct Windows {
    t: f64,
    a: f64,
}

impl Conditions {
    /// `check_tol` times the threshold scale for slacks, times `C` for coefficients.
    fn windows(&self) -> Windows {
        Windows {
            t: self.tol * self.tt.abs().max(1.0),
            a: self.tol * self.c,
        }
    }
}

/// The condition sample `i` violates, if any (Theorem 4 / 5 with the digest's corrections);
/// `tol_on` is the width of the threshold test.
#[inline]
fn violation_at(
    cond: &Conditions,
    yi: f64,
    fi: f64,
    bi: f64,
    tol_on: f64,
    w: Windows,
) -> Option<&'static str> {
    let Conditions {
        task, c, theta, tt, ..
    } = *cond;
    let (tol_t, tol_a) = (w.t, w.a);
    let (t, a) = match task {
        Task::Svc => (yi * (yi - fi), yi * bi),
        Task::Svr => {
            let r = yi - fi;
            (r.abs(), if r >= 0.0 { bi } else { -bi })
        }
    };
    if theta < 1.0 && (t - tt).abs() <= tol_on {
        return Some(VIOLATIONS[0]);
    }
    if t < -tol_t {
        // SVC margin > 1.
        if a.abs() > tol_a {
            return Some(VIOLATIONS[1]);
        }
    } else if t <= tol_t {
        let ok = match task {
            Task::Svc => a >= -tol_a && a <= c + tol_a,
            Task::Svr => bi.abs() <= c + tol_a,
        };
        if !ok {
            return Some(VIOLATIONS[2]);
        }
    } else if t < tt {
        if (a - c).abs() > tol_a {
            return Some(VIOLATIONS[3]);
        }
    } else if (a - c * theta).abs() > tol_a {
        return Some(VIOLATIONS[4]);
    }
    None
}

/// The verdict on sample `i`, given `f_i` as the caller holds it (the path's incrementally
/// updated value, or a plain recomputation).
///
/// **Threshold test (19e / 26d).** Theorem 4's condition `m_i != s` is strict, so the only
/// tolerance it admits is the rounding error of the computed slack. A violation found on the
/// caller's `f_i` for a sample within the window `|t - T| <= tol_t` (`check_tol` times the
/// threshold scale) is therefore decided again on `f_i` recomputed from `beta` by compensated
/// summation ([`Kern::exact_row_value`]): the sample is on the threshold when the two values of
/// its slack (the caller's and the recomputed one, widened by the latter's rounding bound, about
/// `(w + 4) eps` times the magnitude of the terms of `sum_j K_ij beta_j`; linear kernel: about
/// `eps sum_k |x_ik| |w_k|`, `w = X' beta`, see [`Kern::exact_row_value`]) do not lie strictly on
/// one side of `T`; otherwise it is judged, on the recomputed value, by the side it is on. So a
/// pre-jump node (the path's `f` puts the sample exactly on `T`) always fails, and a sample the
/// path's `f` and `K beta` put on opposite sides fails. The window must exceed the
/// caller's error in `f` (the path's `f` drifts from `K beta` by up to about 1e-7 at n = 20,000
/// linear, see bench/results/robust.md); the coefficient tolerance `tol_a` and the
/// margin window at `t = 0` keep their `check_tol`-based widths.
#[inline]
fn judge(
    kern: &Kern<'_>,
    cond: &Conditions,
    w: Windows,
    y: &[f64],
    fi: f64,
    beta: &[f64],
    i: usize,
) -> Option<&'static str> {
    let Conditions {
        task, theta, tt, ..
    } = *cond;
    let tol_t = w.t;
    let v = violation_at(cond, y[i], fi, beta[i], tol_t, w)?;
    let t = match task {
        Task::Svc => y[i] * (y[i] - fi),
        Task::Svr => (y[i] - fi).abs(),
    };
    if (t - tt).abs() > tol_t {
        return Some(v);
    }
    let (fx, err) = exact_slack(kern, i, beta);
    let tx = match task {
        Task::Svc => y[i] * (y[i] - fx),
        Task::Svr => (y[i] - fx).abs(),
    };
    // The two values of the same slack differ by the caller's error in `f` (for the path, the
    // drift of its `f` from `K beta`): the sample is off the threshold only when both lie on
    // the same side of `T`, beyond the rounding bound.
    if theta < 1.0 && t.min(tx) - err <= tt && tt <= t.max(tx) + err {
        return Some(VIOLATIONS[0]);
    }
    violation_at(cond, y[i], fx, beta[i], err, w)
}

/// `f_i` recomputed from `beta` with compensated summation, and its rounding bound (the slack
/// `t_i` has the same bound: `y_i` is exact).
fn exact_slack(kern: &Kern<'_>, i: usize, beta: &[f64]) -> (f64, f64) {
    kern.exact_row_value(i, beta)
}

/// The first violation of the local-optimality conditions, if any: `(sample, condition)`.
pub(crate) fn check_state(
    kern: &Kern<'_>,
    cond: &Conditions,
    y: &[f64],
    f: &[f64],
    beta: &[f64],
) -> Option<(usize, &'static str)> {
    let w = cond.windows();
    (0..y.len()).find_map(|i| judge(kern, cond, w, y, f[i], beta, i).map(|v| (i, v)))
}

/// [`check_state`] and [`objective_of`] in one pass over the samples (the path records both at
/// every node): `(first violation, objective)`, each equal to the separate function's result.
pub(crate) fn check_and_objective(
    kern: &Kern<'_>,
    cond: &Conditions,
    y: &[f64],
    f: &[f64],
    beta: &[f64],
) -> (Option<(usize, &'static str)>, f64) {
    let Conditions {
        task, c, theta, tt, ..
    } = *cond;
    let w = cond.windows();
    let (tol_t, tol_a) = (w.t, w.a);
    let ct = c * theta;
    let on_threshold_matters = theta < 1.0;
    let mut first = None;
    let mut quad = 0.0;
    let mut loss = 0.0;
    for i in 0..y.len() {
        let (yi, fi, bi) = (y[i], f[i], beta[i]);
        quad += bi * fi;
        let (t, a) = match task {
            Task::Svc => (yi * (yi - fi), yi * bi),
            Task::Svr => {
                let r = yi - fi;
                (r.abs(), if r >= 0.0 { bi } else { -bi })
            }
        };
        loss += t.max(0.0) - (1.0 - theta) * (t - tt).max(0.0);
        if first.is_none() {
            // Branch-light acceptance of the common case (the slack strictly inside a region,
            // away from 0 and T, and the coefficient at that region's value: 0, C or C theta);
            // everything else is decided by `judge`, so the verdict is the same.
            let expect = if t < tt { c } else { ct };
            let expect = if t < 0.0 { 0.0 } else { expect };
            let clear = t.abs() > tol_t && (!on_threshold_matters || (t - tt).abs() > tol_t);
            if !(clear && (a - expect).abs() <= tol_a) {
                if let Some(v) = judge(kern, cond, w, y, fi, beta, i) {
                    first = Some((i, v));
                }
            }
        }
    }
    (first, 0.5 * quad + c * loss)
}

/// The verdict of [`check_local_optimality`].
#[derive(Debug, Clone, PartialEq)]
pub struct LocalOptimality {
    /// True when Theorem 4 (SVC) / 5 (SVR) holds within the tolerance.
    pub ok: bool,
    /// The first violation: sample and condition.
    pub violation: Option<(usize, &'static str)>,
    /// Full robust objective at the solution.
    pub objective: f64,
}

/// Checks Theorem 4 (SVC) or the sign-corrected Theorem 5 (SVR) for coefficients `beta` on
/// `train`, recomputing `f = K beta` from scratch. `s` is the threshold (SVC `s <= 0`, SVR
/// `s >= 0`). For `theta = 1` the threshold condition is not required (the loss is convex).
///
/// # Errors
/// [`FitError`] for bad data (shape of `beta`, labels) or a theta outside `[0, 1]`.
pub fn check_local_optimality(
    params: &RobustValidParams,
    train: &Dataset,
    beta: &[f64],
    theta: f64,
    s: f64,
) -> Result<LocalOptimality, FitError> {
    check_theta(theta)?;
    if beta.len() != train.len() {
        return Err(DataError::Shape {
            what: "coefficients",
            expected: train.len(),
            found: beta.len(),
        }
        .into());
    }
    let coded = code_labels(params.task, train)?;
    let kernel = params.kernel_for(train.n_features());
    let kern = Kern::new(&train.x, None, kernel, params.bias, 0);
    let mut f = vec![0.0; train.len()];
    boxqp::fresh_f(&kern, beta, &mut f);
    let tt = threshold(params.task, s);
    let cond = Conditions {
        task: params.task,
        c: params.c,
        theta,
        tt,
        tol: params.check_tol,
    };
    let violation = check_state(&kern, &cond, &coded.y, &f, beta);
    let objective = objective_of(params.task, &coded.y, &f, beta, params.c, theta, tt);
    Ok(LocalOptimality {
        ok: violation.is_none(),
        violation,
        objective,
    })
}

/// Validation error from validation decision values (`None` without validation data).
pub(crate) fn valid_error_of(task: Task, yv: &[f64], fv: &[f64]) -> Option<f64> {
    if yv.is_empty() {
        return None;
    }
    let s: f64 = match task {
        Task::Svc => fv
            .iter()
            .zip(yv)
            .filter(|(f, y)| (if **f > 0.0 { 1.0 } else { -1.0 }) != **y)
            .count() as f64,
        Task::Svr => fv.iter().zip(yv).map(|(f, y)| (y - f).abs()).sum(),
    };
    Some(s / yv.len() as f64)
}

/// `T` from `s`.
pub(crate) fn threshold(task: Task, s: f64) -> f64 {
    match task {
        Task::Svc => 1.0 - s,
        Task::Svr => s,
    }
}

/// `s` from `T`.
pub(crate) fn s_of(task: Task, tt: f64) -> f64 {
    match task {
        Task::Svc => 1.0 - tt,
        Task::Svr => tt,
    }
}

pub(crate) fn objective_of(
    task: Task,
    y: &[f64],
    f: &[f64],
    beta: &[f64],
    c: f64,
    theta: f64,
    tt: f64,
) -> f64 {
    let mut quad = 0.0;
    let mut loss = 0.0;
    for i in 0..y.len() {
        quad += beta[i] * f[i];
        let t = match task {
            Task::Svc => y[i] * (y[i] - f[i]),
            Task::Svr => (y[i] - f[i]).abs(),
        };
        loss += t.max(0.0) - (1.0 - theta) * (t - tt).max(0.0);
    }
    0.5 * quad + c * loss
}

/// Boxes of the standard (non-robust) problem in `beta`.
pub(crate) fn standard_box(task: Task, y: &[f64], c: f64) -> (Vec<f64>, Vec<f64>) {
    match task {
        Task::Svc => y
            .iter()
            .map(|&v| if v > 0.0 { (0.0, c) } else { (-c, 0.0) })
            .unzip(),
        Task::Svr => (vec![-c; y.len()], vec![c; y.len()]),
    }
}

/// The relative ridge times the largest kernel diagonal.
pub(crate) fn ridge_of(kern: &Kern<'_>, rel: f64) -> f64 {
    let n = kern.n();
    let m = (0..n).map(|i| kern.entry(i, i).abs()).fold(0.0, f64::max);
    rel * m.max(1e-300)
}

/// Coefficients `beta` and `f = K beta` over all rows.
pub(crate) type BetaF = (Vec<f64>, Vec<f64>);

/// The exact standard SVM (`theta = 1`) at `params.c` on the problem `su`: SMO then polishing.
/// Returns `beta` and `f` (all rows), or `None` when `obs` stopped the SMO solve.
pub(crate) fn standard_solution(
    su: &mut Setup<'_>,
    params: &RobustValidParams,
    warm: Option<&[f64]>,
    obs: &mut dyn Observer,
) -> Result<Option<BetaF>, FitError> {
    let (kern, y, ridge) = (&mut su.kern, &su.y[..], su.ridge);
    let (lo, hi) = standard_box(params.task, y, params.c);
    let solver_tol = params.solver_tol;
    let mut beta = warm.map_or_else(|| vec![0.0; y.len()], |w| w.to_vec());
    let solver = boxqp::BoxSolver {
        plan: su.plan,
        tol: solver_tol,
    };
    let info = boxqp::solve_box(kern, solver, y, &lo, &hi, &mut beta, obs)?;
    if info.status == crate::solver::Status::Interrupted {
        return Ok(None);
    }
    let mut f = vec![0.0; kern.rows()];
    boxqp::fresh_f(kern, &beta, &mut f);
    boxqp::polish(kern, y, &lo, &hi, &mut beta, &mut f, ridge);
    Ok(Some((beta, f)))
}

/// Runs the outlier path [`RobustValidParams::kind`] for one `C` on `data.train`, recording the
/// validation error of every node when `data.valid` is given. The model is the end of the path
/// as an ordinary [`SvmModel`] ([`model_from_beta`]); the report is the path itself. The
/// observer is asked before every event and by the SMO solve of the standard SVM; when it stops
/// the fit, the path holds the nodes so far and ends [`RunEnd::Interrupted`] (a single path has
/// no state to continue from: [`select::select`] has).
///
/// ```
/// use marginkit::fit::Control;
/// use marginkit::robust::{fit, PathKind, RobustData, RobustParams, RunEnd, Task};
/// use marginkit::{Dataset, DenseMatrix, Features};
///
/// let n = 40;
/// let x: Vec<f64> = (0..n).flat_map(|i| {
///     let t = i as f64 * 0.71;
///     [t.sin() + if i % 2 == 0 { 0.4 } else { -0.4 }, (1.7 * t).cos()]
/// }).collect();
/// let y: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { 1.0 } else { -1.0 }).collect();
/// let data = Dataset::new(Features::Dense(DenseMatrix::new(n, 2, x)?), y, None)?;
/// let params = RobustParams::new().task(Task::Svc).kind(PathKind::Theta).c(10.0).check()?;
/// let fit = fit(&params, &RobustData::new(&data), &mut Control::default())?;
/// assert_eq!(fit.report.end, RunEnd::Completed);
/// assert_eq!(fit.report.nodes.last().map(|n| n.param), Some(0.0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`FitError`] for bad data (SVC needs exactly two classes), or a solver breakdown in the
/// standard SVM.
pub fn fit(
    params: &RobustValidParams,
    data: &RobustData<'_>,
    ctl: &mut Control,
) -> Result<Fit<SvmModel, OutlierPath>, FitError> {
    let start = Instant::now();
    let mut su = setup(params, data.train, data.valid)?;
    let obs = ctl.observer();
    let std_sol = standard_solution(&mut su, params, None, obs)?;
    let path = match std_sol {
        Some((beta, f)) => {
            path_from_standard(params, &mut su, Start::Standard(beta, f), start, obs).0
        }
        None => OutlierPath {
            task: params.task,
            kind: params.kind,
            c: params.c,
            nodes: Vec::new(),
            end: RunEnd::Interrupted,
            events: 0,
            d_steps: 0,
            wrong_direction: 0,
            degenerate_jumps: 0,
            max_active: 0,
            best: None,
            final_beta: vec![0.0; su.y.len()],
            s_standard: f64::NAN,
            final_locally_optimal: false,
            final_violation: None,
            seconds: start.elapsed().as_secs_f64(),
        },
    };
    let model = model_from_beta(
        params.task,
        su.kernel,
        params.bias,
        data.train,
        &path.final_beta,
    )?;
    Ok(Fit {
        model,
        report: path,
        checkpoint: None,
    })
}

/// Where a path starts: the exact standard SVM `(beta, f)`, or a stopped path's state.
pub(crate) enum Start<'s> {
    Standard(Vec<f64>, Vec<f64>),
    Resume(&'s PathResume),
}

/// A stopped path: the largest slack of its standard SVM, the engine's state, the recorded
/// nodes and the best node so far.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PathResume {
    pub tmax: f64,
    pub snap: homotopy::EngineSnap,
    pub nodes: Vec<Node>,
    pub best: Option<(usize, f64, Vec<f64>)>,
}

/// The outlier path on the problem `su` from its start; with a stop, the state to continue from.
pub(crate) fn path_from_standard(
    params: &RobustValidParams,
    su: &mut Setup<'_>,
    from: Start<'_>,
    start: Instant,
    obs: &mut dyn Observer,
) -> (OutlierPath, Option<PathResume>) {
    let y = &su.y;
    let n = y.len();
    let task = params.task;
    let kind = params.kind;
    let (tmax, beta, f) = match &from {
        Start::Standard(beta, f) => {
            // Largest slack of the standard SVM: s_C = 1 - max t (SVC), s_R = max |r| (SVR).
            let tmax = (0..n)
                .map(|i| match task {
                    Task::Svc => y[i] * (y[i] - f[i]),
                    Task::Svr => (y[i] - f[i]).abs(),
                })
                .fold(f64::NEG_INFINITY, f64::max);
            (tmax, beta.clone(), f.clone())
        }
        Start::Resume(r) => (r.tmax, r.snap.beta.clone(), r.snap.f.clone()),
    };
    let s_standard = s_of(task, tmax);
    let mut eng = Engine::new(
        &mut su.kern,
        params,
        su.y.clone(),
        su.yv.clone(),
        (beta, f),
        su.ridge,
    );
    let resume = match from {
        Start::Resume(r) => {
            eng.nodes = r.nodes.clone();
            eng.best = r.best.clone();
            eng.restore(&r.snap);
            Some(r.snap.phase.clone())
        }
        Start::Standard(..) => None,
    };
    let end = match kind {
        PathKind::Theta => {
            if resume.is_none() {
                let tt = threshold(task, params.s_theta());
                eng.init_states(tt, 1.0, false, true);
            }
            eng.run_theta(obs, resume)
        }
        PathKind::S => {
            let t_end = match task {
                Task::Svc => 1.0,
                Task::Svr => params.s_end_fraction * tmax,
            };
            if resume.is_some() {
                eng.run_s(t_end, obs, true)
            } else {
                eng.init_states(tmax.max(t_end), 0.0, true, false);
                if tmax <= t_end {
                    eng.record_standard();
                    RunEnd::Completed
                } else {
                    eng.run_s(t_end, obs, false)
                }
            }
        }
    };
    let stopped = eng.stopped.take().map(|snap| PathResume {
        tmax,
        snap,
        nodes: eng.nodes.clone(),
        best: eng.best.clone(),
    });
    let final_beta = eng.beta.clone();
    let mut fresh = vec![0.0; eng.n];
    {
        let idx: Vec<usize> = (0..eng.n).filter(|&i| final_beta[i] != 0.0).collect();
        let coef: Vec<f64> = idx.iter().map(|&i| final_beta[i]).collect();
        let mut all = vec![0.0; eng.kern.rows()];
        eng.kern.combine_direct(&idx, &coef, &mut all);
        fresh.copy_from_slice(&all[..eng.n]);
    }
    let cond = Conditions {
        task,
        c: params.c,
        theta: eng.theta,
        tt: eng.tt,
        tol: params.check_tol,
    };
    let final_violation = check_state(eng.kern, &cond, &eng.y, &fresh, &final_beta);
    let final_ok = end == RunEnd::Completed && final_violation.is_none();
    let path = OutlierPath {
        task,
        kind,
        c: params.c,
        nodes: std::mem::take(&mut eng.nodes),
        end,
        events: eng.events,
        d_steps: eng.d_steps,
        wrong_direction: eng.wrong_direction,
        degenerate_jumps: eng.degenerate_jumps,
        max_active: eng.max_active,
        best: eng.best.take(),
        final_beta,
        s_standard,
        final_locally_optimal: final_ok,
        final_violation,
        seconds: start.elapsed().as_secs_f64(),
    };
    (path, stopped)
}

/// An ordinary marginkit model from coefficients `beta` on `train` (C-SVC with the training
/// labels, or epsilon-SVR with `p = 0`); `rho = -b^2 sum beta` with the bias feature, else 0.
///
/// # Errors
/// [`DataError`] for a shape mismatch or bad labels.
pub fn model_from_beta(
    task: Task,
    kernel: KernelSpec,
    bias: Option<f64>,
    train: &Dataset,
    beta: &[f64],
) -> Result<SvmModel, DataError> {
    if beta.len() != train.len() {
        return Err(DataError::Shape {
            what: "coefficients",
            expected: train.len(),
            found: beta.len(),
        });
    }
    let b2 = bias.map_or(0.0, |b| b * b);
    let rho = -b2 * beta.iter().sum::<f64>();
    // SVC: support vectors grouped by class in the model's label order; SVR: in sample order.
    let (svm_type, labels, n_sv, sv) = match task {
        Task::Svr => (
            SvmType::EpsSvr,
            Vec::new(),
            Vec::new(),
            (0..beta.len()).filter(|&i| beta[i] != 0.0).collect(),
        ),
        Task::Svc => {
            let coded = code_labels(task, train)?;
            let mut sv = Vec::new();
            let mut n_sv = vec![0usize; 2];
            for (c, &label) in coded.labels.iter().enumerate() {
                for (i, (&yi, &bi)) in train.y.iter().zip(beta).enumerate() {
                    if yi == label && bi != 0.0 {
                        sv.push(i);
                        n_sv[c] += 1;
                    }
                }
            }
            (SvmType::CSvc, coded.labels.to_vec(), n_sv, sv)
        }
    };
    Ok(SvmModel {
        svm_type,
        kernel,
        labels,
        n_sv,
        sv: train.x.select_rows(&sv),
        sv_coef: vec![sv.iter().map(|&i| beta[i]).collect::<Vec<f64>>()],
        sv_indices: Some(sv),
        rho: vec![rho],
        prob_a: Vec::new(),
        prob_b: Vec::new(),
        sv_norms: Vec::new(),
    }
    .with_norms())
}

#[cfg(test)]
mod tests {
    use super::{judge, kern::Kern, violation_at, Conditions, Task, Windows, VIOLATIONS};
    use crate::data::{DenseMatrix, Features};
    use crate::kernel::KernelSpec;

    /// The threshold test (19e) of the checker: a sample off `T` by far less than `check_tol` but
    /// far more than the rounding of its slack is judged by its side (the n = 10,000 / 20,000
    /// false failures of a fixed window, at |t - T| = 1e-8 .. 1e-6, are such samples); a sample
    /// the caller's `f` puts on `T` (a pre-jump node) or on the other side than `K beta` fails.
    #[test]
    fn threshold_test_uses_the_rounding_of_the_slack_not_check_tol() {
        // x0 = (1, 0), x1 = (-1, 0): f_0 = beta_0 - beta_1; SVC, y = (1, 1), T = 1 (s = 0).
        let x = Features::Dense(DenseMatrix::new(2, 2, vec![1.0, 0.0, -1.0, 0.0]).unwrap());
        let kern = Kern::new(&x, None, KernelSpec::Linear, None, 1 << 20);
        let y = [1.0, 1.0];
        let (c, theta, tt, tol) = (1.0, 0.5, 1.0, 1e-6);
        let cond = Conditions {
            task: Task::Svc,
            c,
            theta,
            tt,
            tol,
        };
        let w = Windows { t: tol, a: tol };
        let judge0 = |beta: &[f64], fi: f64| judge(&kern, &cond, w, &y, fi, beta, 0);
        for delta in [1e-8, 1e-10, 1e-12] {
            // An inlier (beta_0 = C) at t_0 = T - delta: locally optimal at that sample.
            let beta = [1.0, 1.0 - delta];
            let f0 = 1.0 - (1.0 - delta);
            assert_eq!(judge0(&beta, f0), None, "delta {delta}");
            // A fixed window of width check_tol would call it "on the threshold".
            assert_eq!(
                violation_at(&cond, 1.0, f0, 1.0, tol, w),
                Some(VIOLATIONS[0])
            );
            // The caller's f on T (pre-jump) or beyond it (drift): on the threshold.
            assert_eq!(judge0(&beta, 0.0), Some(VIOLATIONS[0]));
            assert_eq!(judge0(&beta, -delta), Some(VIOLATIONS[0]));
            // An outlier coefficient (C theta) at t_0 = T - delta: inside, so 19c fails.
            let beta = [0.5, 0.5 - delta];
            let f0 = 0.5 - (0.5 - delta);
            assert_eq!(judge0(&beta, f0), Some(VIOLATIONS[3]), "delta {delta}");
        }
        // Within the rounding of the slack: on the threshold.
        let beta = [1.0, 1.0];
        assert_eq!(judge0(&beta, 1e-18), Some(VIOLATIONS[0]));
    }

    /// A precomputed kernel whose rows carry no serial (plain features, e.g. `-t 4` on a
    /// feature file) is an error naming the row, not a kernel whose entries all read column 0.
    #[test]
    fn precomputed_rows_without_a_serial_are_refused() {
        use super::{fit, PathKind, RobustData, RobustParams};
        use crate::data::Dataset;
        use crate::error::{DataError, FitError};
        use crate::fit::Control;
        use crate::svm::{KernelKind, KernelParams};
        let kernel_rows = |serial: [f64; 3]| {
            let v = vec![
                serial[0], 2.0, 1.0, 0.5, //
                serial[1], 1.0, 2.0, 0.5, //
                serial[2], 0.5, 0.5, 2.0,
            ];
            let x = Features::Dense(DenseMatrix::new(3, 4, v).unwrap());
            Dataset::new(x, vec![1.0, -1.0, 1.0], None).unwrap()
        };
        let params = RobustParams::new()
            .task(Task::Svc)
            .kind(PathKind::Theta)
            .kernel(KernelParams {
                kind: KernelKind::Precomputed,
                ..KernelParams::default()
            })
            .check()
            .unwrap();
        let run = |d: &Dataset| fit(&params, &RobustData::new(d), &mut Control::default());
        let good = kernel_rows([1.0, 2.0, 3.0]);
        assert!(run(&good).is_ok());
        for (bad, row) in [
            ([0.0, 2.0, 3.0], 0),
            ([1.0, 2.5, 3.0], 1),
            ([1.0, 2.0, 4.0], 2),
        ] {
            let e = run(&kernel_rows(bad)).unwrap_err();
            assert!(
                matches!(e, FitError::Data(DataError::Precomputed { row: r, .. }) if r == row),
                "{bad:?}: {e}"
            );
        }
    }
}
