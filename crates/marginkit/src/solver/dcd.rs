//! Dual coordinate descent (DCD) for linear models: L1/L2-loss SVC and SVR (LIBLINEAR-class).
//!
//! # Problems
//!
//! **SVC dual** ([`solve_svc`]), with `Xb = [X, B]` when a bias feature of value `B > 0` is
//! appended (LIBLINEAR `-B`; the bias is then regularized like any other weight):
//! ```text
//! min_a  f(a) = 1/2 a'(Y Xb Xb' Y + D) a + p'a     s.t.  0 <= a_i <= u_i
//!                                                   [and y'a = delta with Equality::Sum]
//! ```
//! L1 loss (hinge): `D = 0`, `u_i = C_i`. L2 loss (squared hinge): `D_ii = 1/(2 C_i)`, `u_i = +inf`.
//! Any mix is allowed (`D_ii >= 0`, `u_i` finite or not). The primal it is the dual of is
//! ```text
//! P(w, b) = 1/2 |w|^2 + sum_i l_i(m_i - y_i (w'xb_i + b)) + delta * b,   m_i = -p_i,
//! l_i(z)  = max_{0 <= t <= u_i} (t z - D_ii t^2 / 2)   (hinge, squared hinge or Huber-like),
//! ```
//! where `b` (an unregularized bias) exists only with [`Equality::Sum`].
//!
//! **SVR dual** ([`solve_svr`]), LIBLINEAR's single-variable form (Ho & Lin 2012, eq. 11):
//! ```text
//! min_beta  1/2 beta'(Xb Xb' + D) beta - t'beta + eps |beta|_1     s.t.  -u_i <= beta_i <= u_i
//! P(w) = 1/2 |w|^2 + sum_i l_i(|t_i - w'xb_i| - eps)
//! ```
//! L1 loss (`-s 13`): `D = 0`, `u_i = C_i`; L2 loss (`-s 12`): `D_ii = 1/(2 C_i)`, `u_i = +inf`.
//!
//! # Symbols
//!
//! | paper            | code                 |
//! |------------------|----------------------|
//! | alpha, beta      | `alpha`, `beta`      |
//! | U (upper bound)  | `upper[i]`           |
//! | D_ii             | `diag_shift[i]`      |
//! | Q_ii = x_i'x_i + D_ii | `qd[i]`         |
//! | w = sum y_i a_i x_i | `w` (length `d + 1`; slot `d` is the bias weight) |
//! | G = y_i w'x_i - 1 + D_ii a_i | `g` (with `p_i` instead of `-1`) |
//! | PG (projected gradient) | `pg`          |
//! | M-bar, m-bar (shrinking thresholds) | `pg_max_old`, `pg_min_old` |
//!
//! # Stopping rule
//!
//! SVC without equality (Hsieh et al. 2008, Algorithm 3, LIBLINEAR's rule):
//! `max_i PG_i - min_i PG_i <= tol` over the active set; when some variables were shrunk they
//! are all restored and the pass is repeated before convergence is declared. SVR: the 1-norm of
//! the minimum-norm subgradient over a pass is at most `tol` times that of the first pass (LIBLINEAR's
//! rule for `-s 12/13`), again re-checked on the full set. With [`Equality::Sum`]: LIBSVM's maximal
//! violating pair gap `max_{I_up} -y_i G_i - min_{I_low} -y_i G_i <= tol`, computed exactly over
//! all variables at the start of every pass.
//!
//! Without the equality, the final check (after a pass over the full set met the rule) rebuilds
//! `w` from the dual variables and computes the margins `xb_i'w` of every row from it; the
//! projected gradients are re-measured from those margins, and on success the same margins give
//! the objectives, the gap and [`DcdResult::xw`] (no second pass over the data).
//!
//! Every pass visits the active variables in a fresh random order drawn from a seeded
//! `Xoshiro256PlusPlus`, so results are deterministic for a given seed.
//!
//! # Face steps (SVC without equality; an addition to Hsieh et al.)
//!
//! On data of low rank at large `C` the passes converge linearly at a rate set by the conditioning
//! of the free variables' block of `Q` (breast_cancer, 569 x 30, C = 512: over 10,000 passes).
//! Between passes, once the coordinate work since the last one is at least `FACE_WORK_RATIO` (8)
//! times the cost of one, the loop takes a Newton step on the face of the free variables
//! (`0 < a_i < u_i`, the others held at their bounds): `H delta = -g` on that face by conjugate
//! gradients (products with `H` through `w`-space, `2 nnz` per iteration), then the better of the
//! projected full step `clip(a + delta)` and the first local minimum along the projection arc
//! `clip(a + t delta)`, and only if the (exactly computed) objective decreases. Along the arc the
//! objective is a piecewise quadratic with a piece per bound the arc meets, so the search walks
//! the breakpoints in order and can drop thousands of variables onto their bounds in one step (a
//! Newton direction on a face that is not yet the final one clips many). The stopping rule is
//! untouched: it is still checked by the passes, so a face step can only shorten the solve, never
//! change what "converged" means. See `face_step`.
//!
//! # Parallel passes
//!
//! [`solve_svc_blocks`] runs the passes on disjoint blocks of variables in parallel and merges
//! them by an exact line search; its result does not depend on the thread count (see the
//! `blocks` submodule docs).
//!
//! # Cost
//!
//! One coordinate step costs two row operations (`w'x_i` and `w += s x_i`): `O(nnz(x_i))`. A pass
//! costs `O(nnz(X))`; memory is `O(n + d)`. The step is bound by memory latency (rows are visited
//! in random order), so the box loop keeps each variable's data in one struct of the shuffled
//! active array (read in sequence), stores a direct handle to its row (no row-pointer lookup)
//! and both loops read the rows of the coming steps in groups ([`TOUCH_GROUP`]) so that their
//! cache misses overlap. With [`Equality::Sum`] a step pairs `i` with a maximal
//! violator `j` and costs five row operations. Nothing is allocated inside a pass. At the end, `w` is
//! recomputed from the dual variables and one extra pass computes the primal objective, the
//! duality gap and the final violation.
//!
//! # Citation
//!
//! C.-J. Hsieh, K.-W. Chang, C.-J. Lin, S. S. Keerthi, S. Sundararajan, "A dual coordinate descent
//! method for large-scale linear SVM", ICML 2008 (Algorithm 1 and 3). C.-H. Ho, C.-J. Lin,
//! "Large-scale linear support vector regression", JMLR 13, 2012 (Algorithm 4). Corresponding
//! LIBLINEAR routines: `solve_l2r_l1l2_svc`, `solve_l2r_l1l2_svr`. The equality-constrained variant
//! uses the maximal-violating-pair rule of Keerthi et al. (2001) / LIBSVM's WSS1.

use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::{
    BoxQp, Equality, IterStats, Observer, Shrinking, SolveInfo, SolverSettings, Status, VarFix,
};
use crate::data::design::{DenseRows, KeyedRows, SparseRows};
use crate::data::{ops, Features};
use crate::error::SolveError;

#[cfg(test)]
mod arc_tests;
mod blocks;
pub use blocks::{solve_svc_blocks, DEFAULT_BLOCKS};

/// Default maximum number of outer passes when [`SolverSettings::max_iter`] is `None`.
///
/// Generous on purpose: with shrinking, most late passes only visit a small active set and cost
/// little (on 100k overlapping samples the L1-loss dual at `tol = 0.01` needs about 4,700 passes
/// but under a second), so LIBLINEAR's cap of 300 would stop far from the optimum.
pub const DEFAULT_MAX_PASSES: u64 = 10_000;

/// Steps whose projected gradient is below this are skipped (no progress possible).
const PG_SKIP: f64 = 1e-12;

/// Rows the coordinate loops read ahead at a time. A pass visits rows in random order, so on
/// data larger than the cache every row is a cache miss, and a step is bound by that latency,
/// not by its arithmetic. About once per `TOUCH_GROUP` steps the loops read
/// the rows of the next `TOUCH_GROUP` steps together ([`KeyedRows::touch`]), so that their
/// misses are in flight at the same time and the steps then find their rows in the cache.
/// Groups of 8 to 24 rows ran alike on 200,000-row dense and TF-IDF-like sets.
const TOUCH_GROUP: usize = 16;

/// The read-ahead of a pass ([`TOUCH_GROUP`]): how far the rows of the shuffled active array
/// have been read, and the sum of what was read (kept only so the reads are not optimized away).
#[derive(Default)]
struct ReadAhead {
    /// Positions `..upto` of the pass have been read.
    upto: usize,
    sink: f64,
}

impl ReadAhead {
    /// Before the step at position `s` of `active` (the pass's active variables): once fewer than
    /// a group of the positions after `s` have been read, reads the rows up to `s + 2 TOUCH_GROUP`.
    #[inline(always)]
    fn rows<R: KeyedRows, T>(
        &mut self,
        rows: &R,
        active: &[T],
        s: usize,
        key: impl Fn(&T) -> R::Key,
    ) {
        if self.upto < active.len() && self.upto < s + TOUCH_GROUP {
            let hi = (s + 2 * TOUCH_GROUP).min(active.len());
            self.sink += active[self.upto.max(s)..hi]
                .iter()
                .map(|c| rows.touch(key(c)))
                .sum::<f64>();
            self.upto = hi;
        }
    }

    /// Ends the pass.
    fn finish(self) {
        std::hint::black_box(self.sink);
    }
}

pub use crate::data::design::LinearDesign;

/// A linear SVC dual (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct SvcDual<'a> {
    /// Features and bias feature.
    pub design: LinearDesign<'a>,
    /// Linear term, signs, upper bounds, equality and fixed variables.
    pub qp: BoxQp<'a>,
    /// Diagonal shift `D_ii >= 0` (0 for L1 loss, `1/(2 C_i)` for L2 loss).
    pub diag_shift: &'a [f64],
}

/// A linear SVR dual in LIBLINEAR's `beta` form (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct SvrDual<'a> {
    /// Features and bias feature.
    pub design: LinearDesign<'a>,
    /// Regression targets `t_i`.
    pub target: &'a [f64],
    /// Width of the insensitive tube (`-p`), `>= 0`.
    pub epsilon: f64,
    /// Bounds `u_i >= 0`: `beta_i` in `[-u_i, u_i]` (`+inf` allowed).
    pub upper: &'a [f64],
    /// Diagonal shift `D_ii >= 0` (0 for L1 loss, `1/(2 C_i)` for L2 loss).
    pub diag_shift: &'a [f64],
}

/// What a DCD solve returns besides the dual variables (updated in place).
#[derive(Debug, Clone, PartialEq)]
pub struct DcdResult {
    /// Status, passes, dual objective `f` (minimization form), `rho`, final violation.
    pub info: SolveInfo,
    /// Primal weights, length [`LinearDesign::dim`] (the last entry is the bias-feature weight
    /// when a bias feature is used), recomputed from the dual variables at the end.
    pub w: Vec<f64>,
    /// Primal objective `P` at `w` (and `b = -rho` with [`Equality::Sum`]).
    pub primal: f64,
    /// Duality gap `P + f >= 0` (primal minus the dual value `-f`). Fixed variables count as
    /// ordinary samples in `P`, so this is the gap of the problem without fixings: it is 0 at
    /// the solution only when the fixings are themselves optimal (as safe screening guarantees).
    pub gap: f64,
    /// Decision values `xb_i'w` (without a bias) at the returned `w`, one per sample: the last
    /// pass of the solve computes them anyway, and callers that need the margins
    /// `y_i xb_i'w` (the regularization path's KKT re-check and screening reference) take them
    /// from here instead of another pass over the data.
    pub xw: Vec<f64>,
}

fn check_bias(bias: Option<f64>) -> Result<f64, SolveError> {
    match bias {
        None => Ok(0.0),
        Some(b) if b.is_finite() && b > 0.0 => Ok(b),
        Some(_) => Err(SolveError::Dimensions(
            "bias feature must be finite and > 0",
        )),
    }
}

/// Solves a linear SVC dual by dual coordinate descent.
///
/// `alpha` is the starting point on entry (zeros for a cold start; it must lie in the box and,
/// with [`Equality::Sum`], satisfy `y'alpha = delta`) and the solution on exit. Fixed variables
/// are set to 0 or `u_i` and never move. `seed` drives the per-pass permutations.
/// [`SolverSettings::max_iter`] counts passes (default [`DEFAULT_MAX_PASSES`]).
/// With [`Equality::Sum`] shrinking is not used.
///
/// # Errors
/// [`SolveError::Dimensions`] for inconsistent lengths, labels outside {-1, +1}, negative or NaN
/// bounds/shifts or a starting point outside the feasible set; [`SolveError::Infeasible`] when a
/// variable with an infinite bound faces zero curvature (the primal is infeasible) or is fixed at
/// an infinite bound; [`SolveError::NonFinite`] on numerical breakdown.
pub fn solve_svc<O: Observer>(
    prob: &SvcDual<'_>,
    settings: &SolverSettings,
    seed: u64,
    alpha: &mut [f64],
    obs: &mut O,
) -> Result<DcdResult, SolveError> {
    let b = check_bias(prob.design.bias)?;
    match prob.design.x {
        Features::Dense(m) => svc_dispatch(
            &DenseRows::new(m, Some(b)),
            prob,
            settings,
            seed,
            alpha,
            None,
            obs,
        ),
        Features::Sparse(m) => svc_dispatch(
            &SparseRows::new(m, Some(b)),
            prob,
            settings,
            seed,
            alpha,
            None,
            obs,
        ),
    }
}

/// What a caller solving a sequence of related SVC duals (the regularization path) already
/// holds, so that [`solve_svc_warm`] need not recompute it with two passes over the data.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SvcWarm<'w> {
    /// `Q_ii = |xb_i|^2 + D_ii` for every variable.
    pub(crate) qd: &'w [f64],
    /// `w = sum_i y_i a_i xb_i` at the starting point *after* the fixed variables are set to
    /// their values (length [`LinearDesign::dim`]).
    pub(crate) w: &'w [f64],
}

/// [`solve_svc`] from a known `Q_ii` and starting `w` (see [`SvcWarm`]). The result is the same
/// optimum to the tolerance: the loop only uses `w` as the running sum it maintains anyway, and
/// the returned `w`, margins and objectives are recomputed from `alpha` at the end as always.
/// Debug builds check `warm.w` against a rebuild from `alpha`.
pub(crate) fn solve_svc_warm<O: Observer>(
    prob: &SvcDual<'_>,
    settings: &SolverSettings,
    seed: u64,
    alpha: &mut [f64],
    warm: SvcWarm<'_>,
    obs: &mut O,
) -> Result<DcdResult, SolveError> {
    let b = check_bias(prob.design.bias)?;
    match prob.design.x {
        Features::Dense(m) => svc_dispatch(
            &DenseRows::new(m, Some(b)),
            prob,
            settings,
            seed,
            alpha,
            Some(warm),
            obs,
        ),
        Features::Sparse(m) => svc_dispatch(
            &SparseRows::new(m, Some(b)),
            prob,
            settings,
            seed,
            alpha,
            Some(warm),
            obs,
        ),
    }
}

/// Solves a linear SVR dual (LIBLINEAR's `beta` form) by dual coordinate descent.
///
/// `beta` is the starting point on entry (zeros for a cold start, inside `[-u_i, u_i]`) and the
/// solution on exit. [`SolverSettings::max_iter`] counts passes (default [`DEFAULT_MAX_PASSES`]).
///
/// # Errors
/// As [`solve_svc`]; also for a negative or NaN `epsilon`.
pub fn solve_svr<O: Observer>(
    prob: &SvrDual<'_>,
    settings: &SolverSettings,
    seed: u64,
    beta: &mut [f64],
    obs: &mut O,
) -> Result<DcdResult, SolveError> {
    let b = check_bias(prob.design.bias)?;
    match prob.design.x {
        Features::Dense(m) => {
            svr_impl(&DenseRows::new(m, Some(b)), prob, settings, seed, beta, obs)
        }
        Features::Sparse(m) => svr_impl(
            &SparseRows::new(m, Some(b)),
            prob,
            settings,
            seed,
            beta,
            obs,
        ),
    }
}

/// Shared loop control: pass limit, clock, observer.
struct Budget {
    max_passes: u64,
    start: Instant,
    settings: SolverSettings,
}

impl Budget {
    fn new(settings: &SolverSettings) -> Self {
        Self {
            max_passes: settings.max_iter.unwrap_or(DEFAULT_MAX_PASSES),
            start: Instant::now(),
            settings: *settings,
        }
    }
    /// Called after each pass; `Some(status)` stops the solve.
    fn after_pass<O: Observer>(&self, obs: &mut O, stats: IterStats) -> Option<Status> {
        if obs.on_iter(&stats).is_break() {
            return Some(Status::Interrupted);
        }
        if let Some(limit) = self.settings.time_limit {
            if self.start.elapsed() >= limit {
                return Some(Status::TimeLimit);
            }
        }
        if stats.iterations >= self.max_passes {
            return Some(Status::MaxIterations);
        }
        None
    }
}

fn check_len(what: &'static str, len: usize, n: usize) -> Result<(), SolveError> {
    if len == n {
        Ok(())
    } else {
        Err(SolveError::Dimensions(what))
    }
}

fn check_bounds_and_shift(upper: &[f64], shift: &[f64]) -> Result<(), SolveError> {
    if upper.iter().any(|&u| u.is_nan() || u < 0.0) {
        return Err(SolveError::Dimensions("upper bounds must be >= 0"));
    }
    if shift.iter().any(|&d| !(d.is_finite() && d >= 0.0)) {
        return Err(SolveError::Dimensions(
            "diagonal shifts must be finite and >= 0",
        ));
    }
    Ok(())
}

/// Validates an SVC dual and its starting point; sets fixed variables to their values.
fn check_svc<R: KeyedRows>(
    rows: &R,
    prob: &SvcDual<'_>,
    alpha: &mut [f64],
) -> Result<(), SolveError> {
    let n = rows.n();
    let qp = &prob.qp;
    check_len("p", qp.p.len(), n)?;
    check_len("y", qp.y.len(), n)?;
    check_len("upper", qp.upper.len(), n)?;
    check_len("diag_shift", prob.diag_shift.len(), n)?;
    check_len("alpha", alpha.len(), n)?;
    if let Some(f) = qp.fixed {
        check_len("fixed", f.len(), n)?;
    }
    if qp.y.iter().any(|&v| v != 1 && v != -1) {
        return Err(SolveError::Dimensions("y must be -1 or +1"));
    }
    if qp.p.iter().any(|v| !v.is_finite()) {
        return Err(SolveError::NonFinite {
            what: "linear term",
        });
    }
    check_bounds_and_shift(qp.upper, prob.diag_shift)?;
    for i in 0..n {
        match qp.fixed.map_or(VarFix::Free, |f| f[i]) {
            VarFix::Free => {
                if !(alpha[i] >= 0.0 && alpha[i] <= qp.upper[i] && alpha[i].is_finite()) {
                    return Err(SolveError::Dimensions("starting point outside [0, u]"));
                }
            }
            VarFix::AtZero => alpha[i] = 0.0,
            VarFix::AtUpper => {
                if !qp.upper[i].is_finite() {
                    return Err(SolveError::Infeasible(
                        "variable fixed at an infinite bound",
                    ));
                }
                alpha[i] = qp.upper[i];
            }
        }
    }
    if let Equality::Sum { delta } = qp.equality {
        let ya: f64 = alpha
            .iter()
            .zip(qp.y)
            .map(|(&a, &y)| a * f64::from(y))
            .sum();
        let scale = 1.0 + delta.abs() + alpha.iter().map(|a| a.abs()).sum::<f64>();
        if !delta.is_finite() || (ya - delta).abs() > 1e-10 * scale {
            return Err(SolveError::Dimensions(
                "starting point violates y'alpha = delta",
            ));
        }
    }
    Ok(())
}

fn svc_dispatch<R: KeyedRows, O: Observer>(
    rows: &R,
    prob: &SvcDual<'_>,
    settings: &SolverSettings,
    seed: u64,
    alpha: &mut [f64],
    warm: Option<SvcWarm<'_>>,
    obs: &mut O,
) -> Result<DcdResult, SolveError> {
    check_svc(rows, prob, alpha)?;
    let n = rows.n();
    let qp = &prob.qp;
    let dim = prob.design.x.n_cols() + 1;
    let mut w = vec![0.0; dim];
    let computed_qd: Vec<f64>;
    let qd: &[f64] = match warm {
        Some(h) => {
            check_len("warm qd", h.qd.len(), n)?;
            check_len("warm w", h.w.len(), prob.design.dim())?;
            w[..h.w.len()].copy_from_slice(h.w);
            #[cfg(debug_assertions)]
            {
                let mut r = vec![0.0; dim];
                rebuild_w(rows, qp.y, alpha, &mut r);
                let scale = 1.0 + r.iter().map(|v| v.abs()).sum::<f64>();
                let diff: f64 = r.iter().zip(&w).map(|(a, b)| (a - b).abs()).sum();
                // An error, not an assertion: a crafted path state file can reach here (its
                // gross inconsistencies are refused when it is read; a secant through two
                // nearly equal C values can still amplify a small one).
                if diff.is_nan() || diff > 1e-8 * scale {
                    return Err(SolveError::Infeasible(
                        "the warm start's weights do not match its coefficients",
                    ));
                }
            }
            h.qd
        }
        None => {
            rebuild_w(rows, qp.y, alpha, &mut w);
            computed_qd = (0..n)
                .map(|i| rows.sq_norm(i) + prob.diag_shift[i])
                .collect();
            &computed_qd
        }
    };
    // Only variables that can move enter the index set (u_i = 0 pins a variable at 0).
    let free: Vec<usize> = (0..n)
        .filter(|&i| qp.fixed.is_none_or(|f| f[i] == VarFix::Free) && qp.upper[i] > 0.0)
        .collect();
    let ctx = SvcCtx {
        rows,
        prob,
        qd,
        free: &free,
        settings,
        seed,
    };
    match qp.equality {
        Equality::None => {
            let mut xw = Vec::new();
            let (status, passes) = svc_box(&ctx, alpha, &mut w, &mut xw, obs)?;
            if xw.len() == n {
                // Converged: `w` was rebuilt from `alpha` and `xw` computed from it by the final
                // check, exactly as `finish_svc` would.
                finish_svc_from(prob, alpha, w, xw, status, passes)
            } else {
                finish_svc(rows, prob, alpha, w, status, passes)
            }
        }
        Equality::Sum { .. } => {
            let (status, passes) = svc_sum(&ctx, alpha, &mut w, obs)?;
            finish_svc(rows, prob, alpha, w, status, passes)
        }
    }
}

/// What the SVC loops share (read-only).
struct SvcCtx<'c, 'a, R> {
    rows: &'c R,
    prob: &'c SvcDual<'a>,
    qd: &'c [f64],
    free: &'c [usize],
    settings: &'c SolverSettings,
    seed: u64,
}

fn rebuild_w<R: KeyedRows>(rows: &R, y: &[i8], alpha: &[f64], w: &mut [f64]) {
    w.iter_mut().for_each(|v| *v = 0.0);
    for (i, (&a, &yi)) in alpha.iter().zip(y).enumerate() {
        if a != 0.0 {
            rows.axpy(i, a * f64::from(yi), w);
        }
    }
}

/// Per-variable state of the box loop. The active set is an array of these (not of indices), so
/// that a step reads its variable's data from one cache line visited in sequence; only the
/// feature row is fetched at random. Shrinking and shuffling swap whole entries, so this struct
/// is the single owner of every per-variable quantity in the loop.
#[derive(Debug, Clone, Copy)]
struct Coord<K> {
    /// Original index of the variable.
    i: usize,
    /// Handle to its feature row.
    key: K,
    /// `y_i` as a float.
    y: f64,
    /// `alpha_i`.
    a: f64,
    /// `Q_ii = |xb_i|^2 + D_ii`.
    qd: f64,
    /// `p_i`.
    p: f64,
    /// `u_i`.
    u: f64,
    /// `D_ii`.
    d: f64,
}

impl<K> Coord<K> {
    /// The exact minimizer of the dual along this coordinate, clipped to `[0, u]`, for the
    /// partial derivative `g` at the current value.
    ///
    /// # Errors
    /// [`SolveError::Infeasible`] for zero curvature and an infinite bound that the objective
    /// decreases towards (the primal is infeasible).
    #[inline(always)]
    fn minimizer(&self, g: f64) -> Result<f64, SolveError> {
        if self.qd > 0.0 {
            Ok((self.a - g / self.qd).clamp(0.0, self.u))
        } else if g < 0.0 {
            // Zero curvature: the objective is linear along this coordinate.
            if !self.u.is_finite() {
                return Err(SolveError::Infeasible(
                    "zero row with an infinite upper bound (primal infeasible)",
                ));
            }
            Ok(self.u)
        } else {
            Ok(0.0)
        }
    }
}

/// Most conjugate-gradient iterations of one face step (the face system has rank at most
/// `d + 1`, so on low-dimensional data CG ends well before this in exact arithmetic).
const FACE_CG_MAX: usize = 50;

/// Face steps are taken once the coordinate work since the last ones (in row operations, two per
/// visited coordinate) reaches this multiple of the cost of one: the mean actual cost of the last
/// group's steps, or [`face_cost`]'s estimate before the first. They then cost at most about 1/8
/// of the solve, whatever they achieve. A smaller ratio takes them sooner but does not save
/// passes, because the passes must first find the face: on the 200,000 x 20 dense set of
/// `bench/par_linear_bench.py` (`-s 1`, C = 1) a ratio of 2 took 187 passes, 8 took 199 and 16
/// took 308.
const FACE_WORK_RATIO: usize = 8;

/// Row operations per face variable of a face step besides its conjugate-gradient iterations:
/// the gradient, the two trial moves' products with `H` and the update of `w` (the arc search
/// counts its own).
const FACE_FIXED_OPS: usize = 6;

/// The estimated cost of a face step on `n_face` variables with a `dim`-vector `w`, in row
/// operations: two per variable and conjugate-gradient iteration, the fixed ones, and one for
/// the arc search's `Wq`. The iterations are taken as at most `dim + 1`: the face matrix is
/// `Y Xb Xb' Y + D`, whose distinct eigenvalues number at most `dim + 1` when `D` is a multiple
/// of the identity (one `C` for all samples), and CG ends within that many in exact arithmetic.
fn face_cost(n_face: usize, dim: usize) -> usize {
    (2 * FACE_CG_MAX.min(n_face).min(dim + 1) + FACE_FIXED_OPS + 1) * n_face
}

/// Most face steps in a row (while the budget of [`FACE_WORK_RATIO`] lasts).
const FACE_REPEAT: usize = 20;

/// Scratch of [`face_step`], allocated once per solve on first use (never inside a pass).
#[derive(Debug, Default)]
struct FaceScratch {
    /// Positions (in the coordinate array) of the free variables.
    pos: Vec<usize>,
    g: Vec<f64>,
    delta: Vec<f64>,
    r: Vec<f64>,
    p: Vec<f64>,
    hp: Vec<f64>,
    trial: Vec<f64>,
    /// A `d + 1` vector that is all zeros between uses (cleared row by row).
    u: Vec<f64>,
    /// `Wq` and `Wp` of [`arc_search`] (`d + 1` each).
    wq: Vec<f64>,
    wp: Vec<f64>,
    /// The arc's breakpoints `(t_k, k)`.
    breaks: Vec<(f64, usize)>,
    /// Row operations of the last [`arc_search`].
    arc_ops: usize,
}

/// `hv = H v` on the face, `H_kl = y_k y_l xb_k'xb_l + D_kk [k = l]`, through the `d + 1`
/// vector `u = sum_k v_k y_k xb_k` (cleared again afterwards); returns `v'Hv`.
fn face_matvec<R: KeyedRows>(
    rows: &R,
    coords: &[Coord<R::Key>],
    pos: &[usize],
    v: &[f64],
    hv: &mut [f64],
    u: &mut [f64],
) -> f64 {
    for (&s, &vk) in pos.iter().zip(v) {
        if vk != 0.0 {
            let c = &coords[s];
            rows.axpy_key(c.key, vk * c.y, u);
        }
    }
    let mut vhv = 0.0;
    for ((&s, &vk), h) in pos.iter().zip(v).zip(hv.iter_mut()) {
        let c = &coords[s];
        *h = c.y * rows.dot_key(c.key, u) + c.d * vk;
        vhv += vk * *h;
    }
    for &s in pos {
        rows.clear_key(coords[s].key, u);
    }
    vhv
}

/// One Newton step on the face of the free variables (`0 < a_i < u_i` among the active ones),
/// the others held at their bounds: the face system `H delta = -g` is solved approximately by
/// conjugate gradients (at most [`FACE_CG_MAX`] iterations, every iterate a descent direction
/// of the quadratic), then the better of two feasible moves is taken: the projected full step
/// `clip(a + delta)` and the first local minimum along the projection arc `clip(a + t delta)`
/// ([`arc_search`]). Both objective changes are computed exactly (`g'x + 1/2 x'Hx`, `f` is
/// quadratic); nothing moves unless the objective decreases. Returns the work done in row
/// operations and whether `alpha` changed.
///
/// Why: on data of low rank and large `C`, coordinate descent converges linearly with a rate set
/// by the conditioning of the free variables' block of `Q` and needed up to 10,000 passes per
/// point on breast_cancer (C = 512); the face's exact minimum is what those passes approach.
/// This is an accelerator only: the stopping rule (checked by the passes) is unchanged.
fn face_step<R: KeyedRows>(
    rows: &R,
    coords: &mut [Coord<R::Key>],
    active: usize,
    w: &mut [f64],
    sc: &mut FaceScratch,
    tol: f64,
) -> Result<(usize, bool), SolveError> {
    sc.pos.clear();
    for (s, c) in coords[..active].iter().enumerate() {
        if c.a > 0.0 && c.a < c.u {
            sc.pos.push(s);
        }
    }
    let m = sc.pos.len();
    if m < 2 {
        return Ok((0, false));
    }
    if sc.u.len() != w.len() {
        sc.u = vec![0.0; w.len()];
    }
    for v in [
        &mut sc.g,
        &mut sc.delta,
        &mut sc.r,
        &mut sc.p,
        &mut sc.hp,
        &mut sc.trial,
    ] {
        v.clear();
        v.resize(m, 0.0);
    }
    for (k, &s) in sc.pos.iter().enumerate() {
        let c = &coords[s];
        let g = c.y * rows.dot_key(c.key, w) + c.p + c.d * c.a;
        if !g.is_finite() {
            return Err(SolveError::NonFinite { what: "gradient" });
        }
        sc.g[k] = g;
        sc.r[k] = -g;
        sc.p[k] = -g;
    }
    // Conjugate gradients on H delta = -g from delta = 0 (H is PSD, possibly singular).
    let cg_stop = 0.01 * tol;
    let mut cg_iters = 0usize;
    let mut rr = ops::dense_dot(&sc.r, &sc.r);
    for _ in 0..FACE_CG_MAX.min(m) {
        cg_iters += 1;
        let php = face_matvec(rows, coords, &sc.pos, &sc.p, &mut sc.hp, &mut sc.u);
        if php.is_nan() || php <= 1e-300 || php.is_infinite() {
            break;
        }
        let step = rr / php;
        let mut rmax = 0.0f64;
        for k in 0..m {
            sc.delta[k] += step * sc.p[k];
            sc.r[k] -= step * sc.hp[k];
            rmax = rmax.max(sc.r[k].abs());
        }
        if rmax <= cg_stop {
            break;
        }
        let rr_new = ops::dense_dot(&sc.r, &sc.r);
        let beta = rr_new / rr;
        rr = rr_new;
        for k in 0..m {
            sc.p[k] = sc.r[k] + beta * sc.p[k];
        }
    }
    let cg_ops = (2 * cg_iters + 1) * m;
    let gd = ops::dense_dot(&sc.g, &sc.delta);
    if gd.is_nan() || gd >= 0.0 {
        return Ok((cg_ops, false));
    }
    // Move B: the first local minimum along the projection arc.
    let t_arc = arc_search(rows, coords, sc);
    let m_b = trial_change(rows, coords, sc, t_arc);
    // Move A: the projected full step.
    let m_a = trial_change(rows, coords, sc, 1.0);
    let ops_done = (2 * cg_iters + FACE_FIXED_OPS) * m + sc.arc_ops;
    if !(m_a < 0.0 || m_b < 0.0) || !m_a.is_finite() || !m_b.is_finite() {
        return Ok((ops_done, false));
    }
    let t = if m_a <= m_b { 1.0 } else { t_arc };
    for (k, &s) in sc.pos.iter().enumerate() {
        let c = &mut coords[s];
        let new = (c.a + t * sc.delta[k]).clamp(0.0, c.u);
        let step = new - c.a;
        if step != 0.0 {
            c.a = new;
            rows.axpy_key(c.key, step * c.y, w);
        }
    }
    Ok((ops_done, true))
}

/// The exact change of the objective, `g'x + x'Hx / 2`, for the move `x = clip(a + t delta) - a`
/// on the face (left in `sc.trial`).
fn trial_change<R: KeyedRows>(
    rows: &R,
    coords: &[Coord<R::Key>],
    sc: &mut FaceScratch,
    t: f64,
) -> f64 {
    for (k, &s) in sc.pos.iter().enumerate() {
        let c = &coords[s];
        sc.trial[k] = (c.a + t * sc.delta[k]).clamp(0.0, c.u) - c.a;
    }
    let xhx = face_matvec(rows, coords, &sc.pos, &sc.trial, &mut sc.hp, &mut sc.u);
    ops::dense_dot(&sc.g, &sc.trial) + 0.5 * xhx
}

/// The first local minimizer over `t >= 0` of `phi(t) = f(clip(a + t delta)) - f(a)` on the face
/// `sc.pos` (the other variables held). Variable `k` moves until `t_k`, where it meets its
/// bound, and then stays there, so `phi` is a quadratic on each interval between consecutive
/// `t_k`: with `q` the direction of the variables still moving and `p` the moves of those
/// already stopped,
/// ```text
/// phi(t) = g'p + t g'q + |Wp + t Wq|^2 / 2 + sum D_kk (p_k^2 + t^2 q_k^2) / 2,
/// W v = sum_k v_k y_k xb_k  (a d + 1 vector).
/// ```
/// The walk visits the breakpoints in increasing order and stops on the first piece whose
/// minimum lies inside it (or where `phi` starts to rise); at each breakpoint it moves one
/// variable from `q` to `p`, updating `Wq`, `Wp` and the scalars with two dot products and
/// two row updates. Sets `sc.arc_ops` to the row operations spent.
fn arc_search<R: KeyedRows>(rows: &R, coords: &[Coord<R::Key>], sc: &mut FaceScratch) -> f64 {
    for v in [&mut sc.wq, &mut sc.wp] {
        v.clear();
        v.resize(sc.u.len(), 0.0);
    }
    sc.breaks.clear();
    // g'q and sum D_kk q_k^2 over the moving variables.
    let (mut gq, mut dqq) = (0.0, 0.0);
    for (k, &s) in sc.pos.iter().enumerate() {
        let (c, dk) = (&coords[s], sc.delta[k]);
        if dk == 0.0 {
            continue;
        }
        rows.axpy_key(c.key, dk * c.y, &mut sc.wq);
        gq += sc.g[k] * dk;
        dqq += c.d * dk * dk;
        let room = if dk > 0.0 {
            (c.u - c.a) / dk
        } else {
            -c.a / dk
        };
        if room.is_finite() {
            sc.breaks.push((room.max(0.0), k));
        }
    }
    sc.arc_ops = sc.pos.len();
    sc.breaks.sort_unstable_by(|x, y| x.0.total_cmp(&y.0));
    // |Wq|^2 and Wp'Wq.
    let mut qq = ops::dense_dot(&sc.wq, &sc.wq);
    let mut pq = 0.0;
    let mut t_lo = 0.0;
    for &(t_k, k) in &sc.breaks {
        // On [t_lo, t_k]: phi'(t) = gq + pq + t (qq + dqq).
        let curv = qq + dqq;
        if gq + pq + t_lo * curv >= 0.0 {
            return t_lo;
        }
        if curv > 0.0 {
            let t = -(gq + pq) / curv;
            if t <= t_k {
                return t;
            }
        }
        // Variable k stops at t_k: Wq -= dk r, Wp += t_k dk r with r = y_k xb_k.
        let (c, dk) = (&coords[sc.pos[k]], sc.delta[k]);
        let rq = c.y * rows.dot_key(c.key, &sc.wq);
        let rp = c.y * rows.dot_key(c.key, &sc.wp);
        let rr = c.qd - c.d;
        pq += -dk * rp + t_k * dk * rq - t_k * dk * dk * rr;
        qq += -2.0 * dk * rq + dk * dk * rr;
        rows.axpy_key(c.key, -dk * c.y, &mut sc.wq);
        rows.axpy_key(c.key, t_k * dk * c.y, &mut sc.wp);
        gq -= sc.g[k] * dk;
        dqq -= c.d * dk * dk;
        t_lo = t_k;
        sc.arc_ops += 4;
    }
    let curv = qq + dqq;
    if curv > 0.0 {
        (-(gq + pq) / curv).max(t_lo)
    } else {
        t_lo
    }
}

/// The no-equality SVC loop (Hsieh et al. 2008, Algorithm 3 with shrinking).
fn svc_box<R: KeyedRows, O: Observer>(
    ctx: &SvcCtx<'_, '_, R>,
    alpha: &mut [f64],
    w: &mut [f64],
    xw: &mut Vec<f64>,
    obs: &mut O,
) -> Result<(Status, u64), SolveError> {
    let (rows, prob, qd, free, settings) = (ctx.rows, ctx.prob, ctx.qd, ctx.free, ctx.settings);
    let (p, y, upper, shift) = (prob.qp.p, prob.qp.y, prob.qp.upper, prob.diag_shift);
    let mut coords: Vec<Coord<R::Key>> = free
        .iter()
        .map(|&i| Coord {
            i,
            key: rows.key(i),
            y: f64::from(y[i]),
            a: alpha[i],
            qd: qd[i],
            p: p[i],
            u: upper[i],
            d: shift[i],
        })
        .collect();
    let out = svc_box_loop(
        rows,
        &mut coords,
        settings,
        ctx.seed,
        w,
        Final {
            alpha: &mut *alpha,
            y,
            xw: &mut *xw,
        },
        obs,
    );
    for c in &coords {
        alpha[c.i] = c.a;
    }
    out
}

/// What the box loop's final check needs to rebuild `w` from the dual variables (fixed ones
/// included) and to leave the margins of every row for [`finish_svc_from`].
struct Final<'f> {
    alpha: &'f mut [f64],
    y: &'f [i8],
    /// Filled with `xb_i'w` for every row when the loop returns `Converged`.
    xw: &'f mut Vec<f64>,
}

// One piece: the dual coordinate-descent main loop; pass, shrinking and stopping test share its
// loop state.
fn svc_box_loop<R: KeyedRows, O: Observer>(
    rows: &R,
    coords: &mut [Coord<R::Key>],
    settings: &SolverSettings,
    seed: u64,
    w: &mut [f64],
    fin: Final<'_>,
    obs: &mut O,
) -> Result<(Status, u64), SolveError> {
    let shrink = settings.shrinking == Shrinking::On;
    let budget = Budget::new(settings);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let n_free = coords.len();
    let mut active = n_free;
    let (mut pg_max_old, mut pg_min_old) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut passes = 0u64;
    if n_free == 0 {
        return Ok((Status::Converged, 0));
    }
    let mut face = FaceScratch::default();

    // Row operations since the last face steps, and what those cost.
    let mut work = 0usize;
    let mut face_spent = None;
    loop {
        for k in 0..active {
            let j = rng.gen_range(k..active);
            coords.swap(k, j);
        }
        let (mut pg_max, mut pg_min) = (f64::NEG_INFINITY, f64::INFINITY);
        let mut s = 0;
        let mut ahead = ReadAhead::default();
        while s < active {
            ahead.rows(rows, &coords[..active], s, |c| c.key);
            let c = &mut coords[s];
            let g = c.y * rows.dot_key(c.key, w) + c.p + c.d * c.a;
            if !g.is_finite() {
                return Err(SolveError::NonFinite { what: "gradient" });
            }
            let pg = if c.a == 0.0 {
                if g > pg_max_old {
                    // Strictly satisfied at the lower bound: likely to stay there.
                    active -= 1;
                    coords.swap(s, active);
                    continue;
                }
                g.min(0.0)
            } else if c.a == c.u {
                if g < pg_min_old {
                    active -= 1;
                    coords.swap(s, active);
                    continue;
                }
                g.max(0.0)
            } else {
                g
            };
            pg_max = pg_max.max(pg);
            pg_min = pg_min.min(pg);
            if pg.abs() > PG_SKIP {
                let new = c.minimizer(g)?;
                let step = new - c.a;
                if step != 0.0 {
                    c.a = new;
                    rows.axpy_key(c.key, step * c.y, w);
                }
            }
            s += 1;
        }
        ahead.finish();
        passes += 1;
        work += 2 * active;
        let gap = pg_max - pg_min;
        let converged_here = active == 0 || gap <= settings.tol;
        if converged_here {
            if active == n_free {
                // The pass measured each projected gradient before its own update, so later
                // updates in the same pass can have moved it again. Re-measure at the final
                // point so that "converged" always means the true violation is within tol:
                // `w` rebuilt from the dual variables (as `finish_svc` does) and the margins
                // of every row from it, which the finish then reuses (one pass of dot
                // products serves both).
                for c in &coords[..n_free] {
                    fin.alpha[c.i] = c.a;
                }
                rebuild_w(rows, fin.y, fin.alpha, w);
                fin.xw.clear();
                fin.xw.extend((0..fin.alpha.len()).map(|i| rows.dot(i, w)));
                let (mut hi, mut lo) = (f64::NEG_INFINITY, f64::INFINITY);
                for c in &coords[..n_free] {
                    let g = c.y * fin.xw[c.i] + c.p + c.d * c.a;
                    let pg = if c.a == 0.0 {
                        g.min(0.0)
                    } else if c.a == c.u {
                        g.max(0.0)
                    } else {
                        g
                    };
                    hi = hi.max(pg);
                    lo = lo.min(pg);
                }
                if hi - lo <= settings.tol {
                    return Ok((Status::Converged, passes));
                }
                fin.xw.clear();
            }
            // Re-check on the full set before declaring convergence.
            active = n_free;
            pg_max_old = f64::INFINITY;
            pg_min_old = f64::NEG_INFINITY;
        } else {
            if shrink {
                pg_max_old = if pg_max <= 0.0 { f64::INFINITY } else { pg_max };
                pg_min_old = if pg_min >= 0.0 {
                    f64::NEG_INFINITY
                } else {
                    pg_min
                };
            }
            // Face steps when the passes since the last ones did FACE_WORK_RATIO times their
            // cost: the last group's actual cost, or `face_cost`'s estimate before the first.
            let n_face = coords[..active]
                .iter()
                .filter(|c| c.a > 0.0 && c.a < c.u)
                .count();
            // Further face steps follow while the work budget lasts (each one's actual cost
            // is charged), up to FACE_REPEAT: on a well-posed face they converge in a few.
            let cost = face_spent.unwrap_or_else(|| face_cost(n_face, w.len()));
            if passes >= 2 && n_face >= 2 && work >= FACE_WORK_RATIO * cost {
                let budget = work / FACE_WORK_RATIO;
                let (mut spent, mut steps) = (0, 0);
                for _ in 0..FACE_REPEAT {
                    let (used, moved) =
                        face_step(rows, coords, active, w, &mut face, settings.tol)?;
                    spent += used;
                    steps += 1;
                    if !moved || spent >= budget {
                        break;
                    }
                }
                face_spent = Some(spent / steps);
                work = 0;
            }
        }
        let stats = IterStats {
            iterations: passes,
            max_violation: if gap.is_finite() { gap } else { 0.0 },
            active,
        };
        if let Some(st) = budget.after_pass(obs, stats) {
            return Ok((st, passes));
        }
    }
}

/// Membership of variable `i` in LIBSVM's `I_up` / `I_low` sets.
#[inline(always)]
fn in_up(a: f64, u: f64, y: i8) -> bool {
    if y > 0 {
        a < u
    } else {
        a > 0.0
    }
}

#[inline(always)]
fn in_low(a: f64, u: f64, y: i8) -> bool {
    if y > 0 {
        a > 0.0
    } else {
        a < u
    }
}

/// The equality-constrained SVC loop: every pass computes all gradients, stops on the maximal
/// violating pair, then takes two-coordinate steps along `y_u e_u - y_l e_l` pairing each
/// variable with the pass's maximal violator on the opposite side.
fn svc_sum<R: KeyedRows, O: Observer>(
    ctx: &SvcCtx<'_, '_, R>,
    alpha: &mut [f64],
    w: &mut [f64],
    obs: &mut O,
) -> Result<(Status, u64), SolveError> {
    let (rows, prob, qd, free, settings) = (ctx.rows, ctx.prob, ctx.qd, ctx.free, ctx.settings);
    let seed = ctx.seed;
    let (p, y, upper, shift) = (prob.qp.p, prob.qp.y, prob.qp.upper, prob.diag_shift);
    let budget = Budget::new(settings);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut index = free.to_vec();
    let nf = index.len();
    let mut passes = 0u64;
    let grad = |i: usize, alpha: &[f64], w: &[f64]| {
        f64::from(y[i]) * rows.dot(i, w) + p[i] + shift[i] * alpha[i]
    };
    loop {
        // Maximal violating pair over all movable variables.
        let (mut m_up, mut i_up) = (f64::NEG_INFINITY, usize::MAX);
        let (mut m_low, mut i_low) = (f64::INFINITY, usize::MAX);
        for &i in &index {
            let g = grad(i, alpha, w);
            if !g.is_finite() {
                return Err(SolveError::NonFinite { what: "gradient" });
            }
            let v = -f64::from(y[i]) * g;
            if in_up(alpha[i], upper[i], y[i]) && v > m_up {
                m_up = v;
                i_up = i;
            }
            if in_low(alpha[i], upper[i], y[i]) && v < m_low {
                m_low = v;
                i_low = i;
            }
        }
        let viol = if i_up == usize::MAX || i_low == usize::MAX {
            0.0
        } else {
            m_up - m_low
        };
        if viol <= settings.tol {
            return Ok((Status::Converged, passes));
        }
        for k in 0..nf {
            let j = rng.gen_range(k..nf);
            index.swap(k, j);
        }
        for &i in &index {
            let gi = grad(i, alpha, w);
            let vi = -f64::from(y[i]) * gi;
            let mut best = (0.0, usize::MAX, usize::MAX);
            if in_low(alpha[i], upper[i], y[i]) && i_up != i {
                let vu = -f64::from(y[i_up]) * grad(i_up, alpha, w);
                if in_up(alpha[i_up], upper[i_up], y[i_up]) && vu - vi > best.0 {
                    best = (vu - vi, i_up, i);
                }
            }
            if in_up(alpha[i], upper[i], y[i]) && i_low != i {
                let vl = -f64::from(y[i_low]) * grad(i_low, alpha, w);
                if in_low(alpha[i_low], upper[i_low], y[i_low]) && vi - vl > best.0 {
                    best = (vi - vl, i, i_low);
                }
            }
            let (gain, u, l) = best;
            if gain.is_nan() || gain <= PG_SKIP {
                continue;
            }
            let curv = qd[u] + qd[l] - 2.0 * rows.dot_rows(u, l);
            let mut t = gain / curv.max(1e-12);
            let (yu, yl) = (f64::from(y[u]), f64::from(y[l]));
            // Room to move: a_u + y_u t in [0, U_u], a_l - y_l t in [0, U_l].
            let room_u = if y[u] > 0 {
                upper[u] - alpha[u]
            } else {
                alpha[u]
            };
            let room_l = if y[l] > 0 {
                alpha[l]
            } else {
                upper[l] - alpha[l]
            };
            let room = room_u.min(room_l);
            let (mut hit_u, mut hit_l) = (false, false);
            if t >= room {
                t = room;
                hit_u = room_u <= room_l;
                hit_l = room_l <= room_u;
            }
            if !t.is_finite() {
                return Err(SolveError::Infeasible(
                    "zero curvature with infinite bounds (primal infeasible)",
                ));
            }
            let old_u = alpha[u];
            let old_l = alpha[l];
            alpha[u] = if hit_u {
                if y[u] > 0 {
                    upper[u]
                } else {
                    0.0
                }
            } else {
                (old_u + yu * t).clamp(0.0, upper[u])
            };
            alpha[l] = if hit_l {
                if y[l] > 0 {
                    0.0
                } else {
                    upper[l]
                }
            } else {
                (old_l - yl * t).clamp(0.0, upper[l])
            };
            rows.axpy(u, (alpha[u] - old_u) * yu, w);
            rows.axpy(l, (alpha[l] - old_l) * yl, w);
        }
        passes += 1;
        let stats = IterStats {
            iterations: passes,
            max_violation: viol,
            active: nf,
        };
        if let Some(st) = budget.after_pass(obs, stats) {
            return Ok((st, passes));
        }
    }
}

/// Primal loss `l(z) = max_{0 <= t <= u} (t z - d t^2 / 2)` for `z > 0` (0 otherwise).
#[inline]
fn conj_loss(z: f64, u: f64, d: f64) -> f64 {
    if z <= 0.0 || u <= 0.0 {
        return 0.0;
    }
    let t = if d > 0.0 { (z / d).min(u) } else { u };
    t * z - 0.5 * d * t * t
}

fn half_sq(w: &[f64]) -> f64 {
    0.5 * ops::dense_dot(w, w)
}

/// Recomputes `w`, the dual objective, the primal, the gap, the violation and `rho`.
fn finish_svc<R: KeyedRows>(
    rows: &R,
    prob: &SvcDual<'_>,
    alpha: &[f64],
    mut w: Vec<f64>,
    status: Status,
    passes: u64,
) -> Result<DcdResult, SolveError> {
    rebuild_w(rows, prob.qp.y, alpha, &mut w);
    let xw: Vec<f64> = (0..rows.n()).map(|i| rows.dot(i, &w)).collect();
    finish_svc_from(prob, alpha, w, xw, status, passes)
}

/// The rest of [`finish_svc`] once `w` (rebuilt from `alpha`) and `xw_i = xb_i'w` exist.
fn finish_svc_from(
    prob: &SvcDual<'_>,
    alpha: &[f64],
    mut w: Vec<f64>,
    xw: Vec<f64>,
    status: Status,
    passes: u64,
) -> Result<DcdResult, SolveError> {
    let qp = &prob.qp;
    let (p, y, upper, shift) = (qp.p, qp.y, qp.upper, prob.diag_shift);
    let n = xw.len();
    let ww = half_sq(&w);
    let mut dual = ww;
    let movable = |i: usize| qp.fixed.is_none_or(|f| f[i] == VarFix::Free) && upper[i] > 0.0;
    for i in 0..n {
        dual += 0.5 * shift[i] * alpha[i] * alpha[i] + p[i] * alpha[i];
    }
    // Threshold and violation.
    let (rho, viol) = match qp.equality {
        Equality::None => {
            let (mut hi, mut lo) = (f64::NEG_INFINITY, f64::INFINITY);
            for i in (0..n).filter(|&i| movable(i)) {
                let g = f64::from(y[i]) * xw[i] + p[i] + shift[i] * alpha[i];
                let pg = if alpha[i] <= 0.0 {
                    g.min(0.0)
                } else if alpha[i] >= upper[i] {
                    g.max(0.0)
                } else {
                    g
                };
                hi = hi.max(pg);
                lo = lo.min(pg);
            }
            (0.0, if hi >= lo { hi - lo } else { 0.0 })
        }
        Equality::Sum { .. } => {
            let (mut ub, mut lb) = (f64::INFINITY, f64::NEG_INFINITY);
            let (mut sum_free, mut n_free) = (0.0, 0usize);
            let (mut m_up, mut m_low) = (f64::NEG_INFINITY, f64::INFINITY);
            for i in (0..n).filter(|&i| movable(i)) {
                let g = f64::from(y[i]) * xw[i] + p[i] + shift[i] * alpha[i];
                let yg = f64::from(y[i]) * g;
                let at_low = alpha[i] <= 0.0;
                let at_up = alpha[i] >= upper[i];
                if in_up(alpha[i], upper[i], y[i]) {
                    m_up = m_up.max(-yg);
                }
                if in_low(alpha[i], upper[i], y[i]) {
                    m_low = m_low.min(-yg);
                }
                // KKT: G_i - y_i rho >= 0 at 0, <= 0 at u_i, = 0 when free.
                if !at_low && !at_up {
                    sum_free += yg;
                    n_free += 1;
                } else if (at_low && y[i] > 0) || (at_up && y[i] < 0) {
                    ub = ub.min(yg);
                } else {
                    lb = lb.max(yg);
                }
            }
            let rho = if n_free > 0 {
                sum_free / n_free as f64
            } else if ub.is_finite() && lb.is_finite() {
                0.5 * (ub + lb)
            } else if ub.is_finite() {
                ub
            } else if lb.is_finite() {
                lb
            } else {
                0.0
            };
            let v = if m_up.is_finite() && m_low.is_finite() {
                (m_up - m_low).max(0.0)
            } else {
                0.0
            };
            (rho, v)
        }
    };
    let b = -rho;
    let mut primal = ww;
    if let Equality::Sum { delta } = qp.equality {
        primal += delta * b;
    }
    for i in 0..n {
        let z = -p[i] - f64::from(y[i]) * (xw[i] + b);
        primal += conj_loss(z, upper[i], shift[i]);
    }
    if !(primal.is_finite() && dual.is_finite()) {
        return Err(SolveError::NonFinite { what: "objective" });
    }
    let d = prob.design.x.n_cols();
    w.truncate(d + usize::from(prob.design.bias.is_some()));
    Ok(DcdResult {
        info: SolveInfo {
            status,
            iterations: passes,
            objective: dual,
            rho,
            max_violation: viol,
            gap: primal + dual,
        },
        w,
        primal,
        gap: primal + dual,
        xw,
    })
}

/// Minimum-norm subgradient violation of `beta_i` and whether it may be shrunk (threshold `m`).
#[inline(always)]
fn svr_violation(beta: f64, u: f64, gp: f64, gn: f64, m: f64) -> (f64, bool) {
    if beta == 0.0 {
        if gp < 0.0 {
            (-gp, false)
        } else if gn > 0.0 {
            (gn, false)
        } else {
            (0.0, gp > m && gn < -m)
        }
    } else if beta >= u {
        (gp.max(0.0), gp < -m)
    } else if beta <= -u {
        ((-gn).max(0.0), gn > m)
    } else if beta > 0.0 {
        (gp.abs(), false)
    } else {
        (gn.abs(), false)
    }
}

/// Per-variable state of the SVR loop, kept like [`Coord`] in one struct of the shuffled active
/// array so that a step reads its variable's data in sequence and fetches only its row at random.
#[derive(Debug, Clone, Copy)]
struct SvrCoord<K> {
    /// Original index of the variable.
    i: usize,
    /// Handle to its feature row.
    key: K,
    /// `beta_i`.
    b: f64,
    /// `u_i`.
    u: f64,
    /// `Q_ii = |xb_i|^2 + D_ii`.
    h: f64,
    /// The target `t_i`.
    t: f64,
    /// `D_ii`.
    d: f64,
}

// One piece: the dual coordinate-descent main loop; pass, shrinking and stopping test share its
// loop state.
fn svr_impl<R: KeyedRows, O: Observer>(
    rows: &R,
    prob: &SvrDual<'_>,
    settings: &SolverSettings,
    seed: u64,
    beta: &mut [f64],
    obs: &mut O,
) -> Result<DcdResult, SolveError> {
    let n = rows.n();
    check_len("target", prob.target.len(), n)?;
    check_len("upper", prob.upper.len(), n)?;
    check_len("diag_shift", prob.diag_shift.len(), n)?;
    check_len("beta", beta.len(), n)?;
    let eps = prob.epsilon;
    if !(eps.is_finite() && eps >= 0.0) {
        return Err(SolveError::Dimensions("epsilon must be finite and >= 0"));
    }
    if prob.target.iter().any(|v| !v.is_finite()) {
        return Err(SolveError::NonFinite { what: "target" });
    }
    let (t, upper, shift) = (prob.target, prob.upper, prob.diag_shift);
    check_bounds_and_shift(upper, shift)?;
    if beta
        .iter()
        .zip(upper)
        .any(|(&b, &u)| !(b.is_finite() && b.abs() <= u))
    {
        return Err(SolveError::Dimensions("starting point outside [-u, u]"));
    }
    let dim = prob.design.x.n_cols() + 1;
    let mut w = vec![0.0; dim];
    let rebuild = |beta: &[f64], w: &mut [f64]| {
        w.iter_mut().for_each(|v| *v = 0.0);
        for (i, &bi) in beta.iter().enumerate() {
            if bi != 0.0 {
                rows.axpy(i, bi, w);
            }
        }
    };
    rebuild(beta, &mut w);
    let mut coords: Vec<SvrCoord<R::Key>> = (0..n)
        .filter(|&i| upper[i] > 0.0)
        .map(|i| SvrCoord {
            i,
            key: rows.key(i),
            b: beta[i],
            u: upper[i],
            h: rows.sq_norm(i) + shift[i],
            t: t[i],
            d: shift[i],
        })
        .collect();
    let n_free = coords.len();
    let mut active = n_free;
    let shrink = settings.shrinking == Shrinking::On;
    let budget = Budget::new(settings);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut m_old = f64::INFINITY;
    let mut norm1_init = f64::NAN;
    let mut passes = 0u64;
    let status = 'pass: loop {
        if active == 0 {
            break Ok(Status::Converged);
        }
        for k in 0..active {
            let j = rng.gen_range(k..active);
            coords.swap(k, j);
        }
        let (mut vmax, mut norm1) = (0.0f64, 0.0f64);
        let mut s = 0;
        let mut ahead = ReadAhead::default();
        while s < active {
            ahead.rows(rows, &coords[..active], s, |c| c.key);
            let c = &mut coords[s];
            let (bi, ui, h) = (c.b, c.u, c.h);
            let g = rows.dot_key(c.key, &w) - c.t + c.d * bi;
            if !g.is_finite() {
                break 'pass Err(SolveError::NonFinite { what: "gradient" });
            }
            let (gp, gn) = (g + eps, g - eps);
            let (v, can_shrink) = svr_violation(bi, ui, gp, gn, m_old);
            if shrink && can_shrink {
                active -= 1;
                coords.swap(s, active);
                continue;
            }
            vmax = vmax.max(v);
            norm1 += v;
            s += 1;
            if v <= PG_SKIP {
                continue;
            }
            // Exact minimiser of 1/2 h d^2 + g d + eps |b + d|, then clipped to the box.
            let new = if h > 0.0 {
                let target = if gp < h * bi {
                    bi - gp / h
                } else if gn > h * bi {
                    bi - gn / h
                } else {
                    0.0
                };
                target.clamp(-ui, ui)
            } else {
                let dir = if gp < 0.0 {
                    ui
                } else if gn > 0.0 {
                    -ui
                } else {
                    0.0
                };
                if !dir.is_finite() {
                    break 'pass Err(SolveError::Infeasible(
                        "zero row with an infinite bound (primal infeasible)",
                    ));
                }
                dir
            };
            let step = new - bi;
            if step != 0.0 {
                c.b = new;
                rows.axpy_key(c.key, step, &mut w);
            }
        }
        ahead.finish();
        passes += 1;
        if passes == 1 {
            norm1_init = norm1;
        }
        if norm1 <= settings.tol * norm1_init {
            if active == n_free {
                break Ok(Status::Converged);
            }
            active = n_free;
            m_old = f64::INFINITY;
        } else if shrink {
            m_old = vmax;
        }
        let stats = IterStats {
            iterations: passes,
            max_violation: vmax,
            active,
        };
        if let Some(st) = budget.after_pass(obs, stats) {
            break Ok(st);
        }
    };
    for c in &coords {
        beta[c.i] = c.b;
    }
    let status = status?;
    rebuild(beta, &mut w);
    let ww = half_sq(&w);
    let (mut dual, mut primal, mut viol) = (ww, ww, 0.0f64);
    let mut xws = vec![0.0; n];
    for i in 0..n {
        let xw = rows.dot(i, &w);
        xws[i] = xw;
        let bi = beta[i];
        dual += 0.5 * shift[i] * bi * bi - t[i] * bi + eps * bi.abs();
        primal += conj_loss((t[i] - xw).abs() - eps, upper[i], shift[i]);
        if upper[i] > 0.0 {
            let g = xw - t[i] + shift[i] * bi;
            viol = viol.max(svr_violation(bi, upper[i], g + eps, g - eps, f64::INFINITY).0);
        }
    }
    if !(primal.is_finite() && dual.is_finite()) {
        return Err(SolveError::NonFinite { what: "objective" });
    }
    w.truncate(prob.design.x.n_cols() + usize::from(prob.design.bias.is_some()));
    Ok(DcdResult {
        info: SolveInfo {
            status,
            iterations: passes,
            objective: dual,
            rho: 0.0,
            max_violation: viol,
            gap: primal + dual,
        },
        w,
        primal,
        gap: primal + dual,
        xw: xws,
    })
}
