//! Primal truncated Newton for the L2-loss linear SVMs (LIBLINEAR `-s 2` and `-s 11`), with its
//! `O(nnz)` kernels run in parallel and reduced in a fixed order.
//!
//! # Problems
//!
//! With `Xb = [X, B]` when a bias feature of value `B > 0` is appended (regularized like any
//! other weight, as LIBLINEAR's `-B`), `z_i = xb_i'w` and per-sample costs `C_i >= 0`:
//! ```text
//! SVC (-s 2):  P(w) = 1/2 |w|^2 + sum_i C_i max(0, 1 - y_i z_i)^2
//! SVR (-s 11): P(w) = 1/2 |w|^2 + sum_i C_i max(0, |z_i - t_i| - eps)^2
//! ```
//! Both are strongly convex and once continuously differentiable; with the active rows
//! `I = {i : the loss of i is in its quadratic piece}` and `D_ii = 2 C_i` on `I`:
//! ```text
//! grad P(w) = w + Xb' l'(z),          l'(z_i) = -2 C_i y_i (1 - y_i z_i) (SVC),
//!                                               2 C_i (z_i - t_i -+ eps) (SVR, outside the tube)
//! H(w)      = I + Xb_I' D_I Xb_I      (the generalized Hessian of Mangasarian 2002)
//! ```
//!
//! # Symbols
//!
//! | paper                           | code                           |
//! |---------------------------------|--------------------------------|
//! | w, z = Xb w                     | `w`, `Chunk::z`                |
//! | l'(z_i), D_ii                   | `Chunk::d1`, `2 * Chunk::cost` |
//! | I (active rows)                 | `Chunk::active`                |
//! | s (Newton direction), Xb s      | `s`, `Chunk::xs`               |
//! | M (PCG preconditioner)          | `precond`                      |
//! | dual variables (SVC) alpha_i = 2 C_i max(0, 1 - y_i z_i) | `-y_i d1_i` |
//! | dual variables (SVR) beta_i = -l'(z_i)                   | `-d1_i`     |
//!
//! # Algorithm
//!
//! Newton iterations with a line search (the truncated Newton method of LIBLINEAR 2.4x, Galli &
//! Lin 2021, which replaced the trust region of Lin, Weng & Keerthi 2008):
//! 1. the direction `s` solves `H s = -g` approximately by preconditioned conjugate gradients
//!    (diagonal preconditioner `M = (1 - a) I + a diag(H)`, `a = 0.01`, Hsia, Chiang & Lin
//!    2018), stopped when `|r| <= 0.1 |g|` or after [`MAX_CG`] steps; every CG step is one fused
//!    pass `Xb_I' (D_I (Xb_I v))` over the active rows only;
//! 2. `Xb s` is computed once, after which the slope and curvature of `phi(t) = P(w + t s)`
//!    cost `O(n)` for any step `t` (`z + t Xb s`): `phi` is convex and piecewise quadratic, so a
//!    safeguarded Newton iteration on `phi'` from `t = 1` inside a bracket finds `t` with
//!    `|phi'(t)| <= 0.01 |phi'(0)|` (usually `t = 1` at once: `phi'(1) = -s'r`, which CG makes 0
//!    while the active set stays). LIBLINEAR backtracks on `phi` itself instead (Armijo); slopes
//!    keep their relative precision near the optimum, where differences of objective values
//!    cancel, so very tight tolerances stay reachable;
//! 3. `w += t s`, `z += t Xb s`, and the loss, the gradient, `I` and `diag(H)` are recomputed in one
//!    pass at the new point.
//!
//! # Stopping rule
//!
//! LIBLINEAR's relative gradient rule `|grad P(w)| <= tol |grad P(0)|` (the caller scales `tol`
//! as LIBLINEAR does: for SVC by `max(min(#pos, #neg), 1) / n`), else the iteration limit
//! ([`SolverSettings::max_iter`], Newton iterations, default [`DEFAULT_MAX_NEWTON`]), the time
//! limit, or an [`Observer`] stop (consulted after every Newton iteration and every CG step). A
//! direction that is not one of descent (`g's >= 0`, only at the limit of floating-point
//! precision) also ends the solve, as converged when `|g| <= 10 tol |g0|`, else with
//! [`Status::MaxIterations`].
//!
//! # Parallelism and determinism
//!
//! The rows are cut once into at most [`MAX_CHUNKS`] chunks of about equal `nnz`; the cut depends
//! on the data's shape only, never on the number of threads. Every kernel runs per chunk (on rayon,
//! in any order and on any thread) into that chunk's own buffers: per-row arrays (`z`, `Xb s`,
//! `l'`) are written in place, vector results (`Xb'u`, `diag(H)`) into a per-chunk partial
//! vector, scalars into a per-chunk partial sum. The partials are then added in chunk order
//! (vectors: each coordinate sums the chunks in order, with the coordinates split among threads).
//! So every floating-point operation and its order are fixed by the data, and the result is bit
//! for bit the same at 1, 2 or 8 threads. Nothing is allocated inside the Newton or CG loops.
//!
//! # Rows split across processes
//!
//! The cut is a function of the rows' work alone ([`cut_chunks`] of [`row_work`]), so processes
//! that each hold whole chunks (in row order) can run the same iteration: every reduction goes
//! through a [`ChunkSums`] hook (one call per reduction; [`InProcess`] for one process) that must
//! return the in-order sum over all chunks, e.g. by a pipeline from the first process to the last.
//! Everything else (the `w`-space vectors, CG, the line-search scalars) is computed identically
//! by every process from the reduced values, so every process ends with the single-process `w`
//! bit for bit ([`solve_svc_primal_shard`], [`solve_svr_primal_shard`]). A reduction carries
//! one vector of length `d` (or two scalars in the line search); a CG step makes one, a Newton
//! iteration three plus one per line-search step.
//!
//! # Report (same fields as the dual solvers)
//!
//! At the end the dual point implied by the primal one (`alpha_i = 2 C_i max(0, 1 - y_i z_i)`,
//! `beta_i = -l'(z_i)`, both exact at the optimum), scaled by the factor `s >= 0` that minimises
//! the dual objective along its ray (a closed form; `s -> 1` at the optimum, and away from it the
//! scaling shrinks the gap by orders of magnitude), gives the dual objective, the duality gap
//! `P(w) + f(alpha)` (valid for any `w`, 0 only at the optimum) and the dual solvers' violation
//! measure (the projected-gradient span for SVC, the largest minimum-norm subgradient for SVR),
//! computed with `w(alpha) = s (w - grad P(w))` and one more pass `Xb w(alpha)`.
//!
//! # Cost
//!
//! A CG step costs `O(nnz(Xb_I) + K d)` (`K` chunks of partial vectors of length `d`), a Newton
//! iteration a few passes more (`Xb s`, the gradient and `diag(H)` fused); memory `O(n + K d)`.
//!
//! # Citation
//!
//! C.-J. Lin, R. C. Weng, S. S. Keerthi, "Trust region Newton method for large-scale logistic
//! regression", JMLR 9, 2008 (L2-loss SVC in Section 7); C.-H. Ho, C.-J. Lin, "Large-scale linear
//! support vector regression", JMLR 13, 2012 (Section 2.1, the L2-loss SVR primal); L. Galli,
//! C.-J. Lin, "A study on truncated Newton methods for linear classification", IEEE TNNLS 2021
//! (line search instead of a trust region); C.-Y. Hsia, W.-L. Chiang, C.-J. Lin, "Preconditioned
//! conjugate gradient methods in truncated Newton frameworks for large-scale linear
//! classification", ACML 2018. LIBLINEAR routines: `l2r_l2_svc_fun`, `l2r_l2_svr_fun`, `NEWTON`.

use std::ops::Range;
use std::time::Instant;

use rayon::prelude::*;

use super::dcd::{DcdResult, LinearDesign};
use super::{IterStats, Observer, SolveInfo, SolverSettings, Status};
use crate::data::design::{DenseRows, DesignRows, SparseRows};
use crate::data::{ops, Features};
use crate::error::SolveError;

/// Default Newton iteration limit when [`SolverSettings::max_iter`] is `None` (LIBLINEAR: 1000).
pub const DEFAULT_MAX_NEWTON: u64 = 1000;
/// Most conjugate-gradient steps per Newton iteration.
pub const MAX_CG: usize = 1000;
/// Most row chunks (the unit of parallel work and of the fixed-order reduction).
pub const MAX_CHUNKS: usize = 32;
/// Least `nnz` per chunk: below it a chunk's work would not pay for its scheduling.
const MIN_CHUNK_NNZ: usize = 32_768;
/// Weight of `diag(H)` in the preconditioner `M = (1 - a) I + a diag(H)`.
const PCG_MIX: f64 = 0.01;
/// CG stops when `|r| <= CG_REL |g|`.
const CG_REL: f64 = 0.1;
/// The line search stops when `|phi'(t)| <= LINE_REL |phi'(0)|`.
const LINE_REL: f64 = 0.01;
/// Most slope evaluations in one line search.
const MAX_LINE_STEPS: u32 = 40;

/// A primal L2-loss SVC problem (`-s 2`).
#[derive(Debug, Clone, Copy)]
pub struct SvcPrimal<'a> {
    /// Features and bias feature.
    pub design: LinearDesign<'a>,
    /// Labels in {-1, +1}.
    pub y: &'a [i8],
    /// Per-sample costs `C_i >= 0` (0 drops the sample).
    pub cost: &'a [f64],
}

/// A primal L2-loss SVR problem (`-s 11`).
#[derive(Debug, Clone, Copy)]
pub struct SvrPrimal<'a> {
    /// Features and bias feature.
    pub design: LinearDesign<'a>,
    /// Regression targets `t_i`.
    pub target: &'a [f64],
    /// Width of the insensitive tube, `>= 0`.
    pub epsilon: f64,
    /// Per-sample costs `C_i >= 0` (0 drops the sample).
    pub cost: &'a [f64],
}

/// Solves the primal L2-loss SVC by truncated Newton (see the module docs). `settings.tol` is the
/// relative gradient tolerance, `settings.max_iter` counts Newton iterations, shrinking is
/// ignored. The result's `info.objective` is the dual objective (minimisation form) at the dual
/// point implied by `w`, `info.iterations` the Newton iterations.
///
/// # Errors
/// [`SolveError::Dimensions`] for inconsistent lengths, labels outside {-1, +1}, a negative or
/// NaN cost, a tolerance that is not finite and `> 0` or a bad bias feature;
/// [`SolveError::NonFinite`] on numerical breakdown.
pub fn solve_svc_primal<O: Observer>(
    prob: &SvcPrimal<'_>,
    settings: &SolverSettings,
    obs: &mut O,
) -> Result<DcdResult, SolveError> {
    svc(prob, None, settings, obs)
}

/// Solves this process's shard of a primal L2-loss SVC split by rows across processes (see
/// [`Shard`]): every shard calls it with its own rows and the same settings, and every shard
/// returns the same `w`, bit for bit the `w` of [`solve_svc_primal`] on all the rows. The
/// result's `xw` holds this shard's rows only.
///
/// # Errors
/// As [`solve_svc_primal`], on every shard when any shard's input is invalid; also
/// [`SolveError::Dimensions`] when `shard.chunks` do not cover the rows in order.
pub fn solve_svc_primal_shard<O: Observer>(
    prob: &SvcPrimal<'_>,
    shard: Shard<'_>,
    settings: &SolverSettings,
    obs: &mut O,
) -> Result<DcdResult, SolveError> {
    svc(prob, Some(shard), settings, obs)
}

fn svc<O: Observer>(
    prob: &SvcPrimal<'_>,
    mut shard: Option<Shard<'_>>,
    settings: &SolverSettings,
    obs: &mut O,
) -> Result<DcdResult, SolveError> {
    let n = prob.design.x.n_rows();
    let valid =
        check_common(n, prob.cost, settings, prob.design.bias, shard.as_ref()).and_then(|()| {
            if prob.y.len() != n {
                return Err(SolveError::Dimensions("y"));
            }
            if prob.y.par_iter().any(|&v| v != 1 && v != -1) {
                return Err(SolveError::Dimensions("y must be -1 or +1"));
            }
            Ok(())
        });
    agree(&mut shard, valid)?;
    let lab: Vec<f64> = prob.y.par_iter().map(|&v| f64::from(v)).collect();
    dispatch(&prob.design, &lab, prob.cost, SvcLoss, settings, obs, shard)
}

/// Solves the primal L2-loss SVR by truncated Newton; as [`solve_svc_primal`].
///
/// # Errors
/// As [`solve_svc_primal`]; also for a negative or NaN `epsilon` or a non-finite target.
pub fn solve_svr_primal<O: Observer>(
    prob: &SvrPrimal<'_>,
    settings: &SolverSettings,
    obs: &mut O,
) -> Result<DcdResult, SolveError> {
    svr(prob, None, settings, obs)
}

/// This process's shard of a primal L2-loss SVR split by rows; as [`solve_svc_primal_shard`].
///
/// # Errors
/// As [`solve_svr_primal`] and [`solve_svc_primal_shard`].
pub fn solve_svr_primal_shard<O: Observer>(
    prob: &SvrPrimal<'_>,
    shard: Shard<'_>,
    settings: &SolverSettings,
    obs: &mut O,
) -> Result<DcdResult, SolveError> {
    svr(prob, Some(shard), settings, obs)
}

fn svr<O: Observer>(
    prob: &SvrPrimal<'_>,
    mut shard: Option<Shard<'_>>,
    settings: &SolverSettings,
    obs: &mut O,
) -> Result<DcdResult, SolveError> {
    let n = prob.design.x.n_rows();
    let valid =
        check_common(n, prob.cost, settings, prob.design.bias, shard.as_ref()).and_then(|()| {
            if prob.target.len() != n {
                return Err(SolveError::Dimensions("target"));
            }
            if prob.target.par_iter().any(|v| !v.is_finite()) {
                return Err(SolveError::NonFinite { what: "target" });
            }
            if !(prob.epsilon.is_finite() && prob.epsilon >= 0.0) {
                return Err(SolveError::Dimensions("epsilon must be finite and >= 0"));
            }
            Ok(())
        });
    agree(&mut shard, valid)?;
    let loss = SvrLoss { eps: prob.epsilon };
    dispatch(
        &prob.design,
        prob.target,
        prob.cost,
        loss,
        settings,
        obs,
        shard,
    )
}

/// The reductions of a solve whose rows are split across processes (shards), each shard holding
/// whole chunks of the global cut ([`cut_chunks`]), the shards in row order.
///
/// Every reduction of the solver is a sum of per-chunk partials in chunk order starting from
/// zero; [`ChunkSums::sum`] must give exactly that sum on every shard, e.g. by a pipeline: the
/// first shard adds its chunks to zeros and passes the running sum to the next, which adds its
/// own, and so on, the last shard sending the total to all. Every floating-point addition then
/// happens in the order of one process holding all the rows, so the solution is the same bit
/// for bit. The implementation for one process is [`InProcess`].
///
/// The shards must also agree on when to stop: the observer and the time limit are consulted
/// on each shard alone, so a distributed caller gives every shard no time limit and an observer
/// that never stops (or one whose decisions agree by construction).
pub trait ChunkSums {
    /// Leaves in `buf`, on every shard, the sum over all chunks in chunk order.
    /// `add_local(buf, from_zero)` adds this shard's chunks in order onto `buf`, first setting
    /// `buf` to zero when `from_zero` (which the first shard must ask for: the sums start from
    /// `0.0`, and `0.0 + x` is not always `x`'s bits, e.g. for `-0.0`).
    fn sum(&mut self, buf: &mut [f64], add_local: &mut dyn FnMut(&mut [f64], bool));
    /// Replaces `buf` by its element-wise maximum over the shards (for checks and reports).
    fn max(&mut self, buf: &mut [f64]);
}

/// [`ChunkSums`] of a solve that holds all the rows (one shard).
#[derive(Debug, Clone, Copy, Default)]
pub struct InProcess;

impl ChunkSums for InProcess {
    fn sum(&mut self, buf: &mut [f64], add_local: &mut dyn FnMut(&mut [f64], bool)) {
        add_local(buf, true);
    }
    fn max(&mut self, _buf: &mut [f64]) {}
}

/// This process's part of a problem split by rows across processes: its chunks of the global
/// cut ([`cut_chunks`] of all the rows' [`row_work`], the chunks this process holds, as ranges
/// of its own rows: contiguous, in order, covering them all; none when it holds no rows) and
/// the reductions across processes.
pub struct Shard<'a> {
    /// This shard's chunks, in its own row numbering.
    pub chunks: Vec<Range<usize>>,
    /// The reductions across the shards.
    pub sums: &'a mut dyn ChunkSums,
}

/// Makes a validation result collective: an error on any shard is an error on all (so no
/// shard waits in a reduction that another has left).
fn agree(shard: &mut Option<Shard<'_>>, valid: Result<(), SolveError>) -> Result<(), SolveError> {
    let Some(sh) = shard else {
        return valid;
    };
    let mut bad = [if valid.is_err() { 1.0 } else { 0.0 }];
    sh.sums.max(&mut bad);
    match valid {
        Err(e) => Err(e),
        Ok(()) if bad[0] > 0.0 => Err(SolveError::Dimensions(
            "the input of another shard is invalid",
        )),
        Ok(()) => Ok(()),
    }
}

fn check_common(
    n: usize,
    cost: &[f64],
    settings: &SolverSettings,
    bias: Option<f64>,
    shard: Option<&Shard<'_>>,
) -> Result<(), SolveError> {
    if let Some(sh) = shard {
        let mut next = 0;
        for r in &sh.chunks {
            if r.start != next || r.end < r.start {
                return Err(SolveError::Dimensions(
                    "shard chunks must cover the rows in order",
                ));
            }
            next = r.end;
        }
        if next != n {
            return Err(SolveError::Dimensions(
                "shard chunks must cover the rows in order",
            ));
        }
    }
    if cost.len() != n {
        return Err(SolveError::Dimensions("cost"));
    }
    if cost.par_iter().any(|&c| !(c.is_finite() && c >= 0.0)) {
        return Err(SolveError::Dimensions("costs must be finite and >= 0"));
    }
    if !(settings.tol.is_finite() && settings.tol > 0.0) {
        return Err(SolveError::Dimensions("tolerance must be finite and > 0"));
    }
    if bias.is_some_and(|b| !(b.is_finite() && b > 0.0)) {
        return Err(SolveError::Dimensions(
            "bias feature must be finite and > 0",
        ));
    }
    Ok(())
}

fn dispatch<L: Loss, O: Observer>(
    design: &LinearDesign<'_>,
    lab: &[f64],
    cost: &[f64],
    loss: L,
    settings: &SolverSettings,
    obs: &mut O,
    shard: Option<Shard<'_>>,
) -> Result<DcdResult, SolveError> {
    let mut one = InProcess;
    let (cut, sums): (Option<Vec<Range<usize>>>, &mut dyn ChunkSums) = match shard {
        Some(sh) => (Some(sh.chunks), sh.sums),
        None => (None, &mut one),
    };
    match design.x {
        Features::Dense(m) => {
            let rows = DenseRows::new(m, design.bias);
            let cut = cut.unwrap_or_else(|| cut_rows(&rows));
            newton(
                &rows,
                lab,
                cost,
                loss,
                settings,
                obs,
                Reduction { cut, sums },
            )
        }
        Features::Sparse(m) => {
            let rows = SparseRows::new(m, design.bias);
            let cut = cut.unwrap_or_else(|| cut_rows(&rows));
            newton(
                &rows,
                lab,
                cost,
                loss,
                settings,
                obs,
                Reduction { cut, sums },
            )
        }
    }
}

/// One L2 loss: per row, its value, first derivative and whether it is in its quadratic piece.
trait Loss: Copy + Sync {
    /// `(l(z), l'(z), active)` for label/target `lab` and cost `c > 0`.
    fn eval(self, lab: f64, c: f64, z: f64) -> (f64, f64, bool);
    /// The sample's part of the dual objective (minimisation form) at its dual variable, given
    /// `coef = -l'(z)` (so that `w(dual) = sum_i coef_i xb_i`), split into its quadratic and
    /// its positively homogeneous part: at `s * coef` (`s >= 0`) it is `s^2 quad + s lin`.
    fn dual_term(self, lab: f64, c: f64, coef: f64) -> (f64, f64);
    /// The dual violation contribution `(for the max, for the min)` of a sample whose dual
    /// variable is given by `coef`, at `v = xb_i'w(dual)`.
    fn violation(self, lab: f64, c: f64, coef: f64, v: f64) -> (f64, f64);
}

#[derive(Clone, Copy)]
struct SvcLoss;

impl Loss for SvcLoss {
    #[inline(always)]
    fn eval(self, y: f64, c: f64, z: f64) -> (f64, f64, bool) {
        let r = 1.0 - y * z;
        if r > 0.0 {
            (c * r * r, -2.0 * c * y * r, true)
        } else {
            (0.0, 0.0, false)
        }
    }
    fn dual_term(self, y: f64, c: f64, coef: f64) -> (f64, f64) {
        let a = y * coef;
        (a * a / (4.0 * c), -a)
    }
    fn violation(self, y: f64, c: f64, coef: f64, v: f64) -> (f64, f64) {
        // Dual gradient y_i xb_i'w(alpha) - 1 + alpha_i / (2 C_i), projected at alpha_i = 0.
        let a = y * coef;
        let g = y * v - 1.0 + a / (2.0 * c);
        let pg = if a > 0.0 { g } else { g.min(0.0) };
        (pg, pg)
    }
}

#[derive(Clone, Copy)]
struct SvrLoss {
    eps: f64,
}

impl Loss for SvrLoss {
    #[inline(always)]
    fn eval(self, t: f64, c: f64, z: f64) -> (f64, f64, bool) {
        let e = z - t;
        if e > self.eps {
            let r = e - self.eps;
            (c * r * r, 2.0 * c * r, true)
        } else if e < -self.eps {
            let r = e + self.eps;
            (c * r * r, 2.0 * c * r, true)
        } else {
            (0.0, 0.0, false)
        }
    }
    fn dual_term(self, t: f64, c: f64, beta: f64) -> (f64, f64) {
        (beta * beta / (4.0 * c), -t * beta + self.eps * beta.abs())
    }
    fn violation(self, t: f64, c: f64, beta: f64, v: f64) -> (f64, f64) {
        // Smooth part of the dual gradient, then the minimum-norm subgradient of eps |beta|.
        let g = v - t + beta / (2.0 * c);
        let (gp, gn) = (g + self.eps, g - self.eps);
        let viol = if beta > 0.0 {
            gp.abs()
        } else if beta < 0.0 {
            gn.abs()
        } else {
            (-gp).max(gn).max(0.0)
        };
        (viol, 0.0)
    }
}

/// One chunk of rows and every buffer its kernels write.
struct Chunk {
    rows: Range<usize>,
    lab: Vec<f64>,
    cost: Vec<f64>,
    z: Vec<f64>,
    xs: Vec<f64>,
    d1: Vec<f64>,
    /// Local indices of the active rows (`C_i > 0` and in the quadratic piece).
    active: Vec<u32>,
    /// Partial vector (`Xb'u` or `Xb_I' D_I Xb_I v`).
    acc: Vec<f64>,
    /// Partial `diag(Xb_I' D_I Xb_I)`.
    acc2: Vec<f64>,
    sum: f64,
    sum2: f64,
    /// Extremes of the dual violation terms (final report only).
    hi: f64,
    lo: f64,
}

/// Cuts `0..n` into chunks of about equal `nnz`; their number depends on the data only.
fn cut_rows<R: DesignRows>(rows: &R) -> Vec<Range<usize>> {
    cut_with(rows.n(), rows.dim(), |r| rows.nnz(r))
}

/// The chunk cut of a data set from the work of each of its rows: `work[i]` is what a pass
/// spends on row `i` (see [`row_work`]), `dim` the length of the weight vector (features plus
/// the bias feature). Gives exactly the cut the solver makes of the whole data set, so a
/// process holding only some rows can still learn the global cut from the rows' work alone.
pub fn cut_chunks(work: &[usize], dim: usize) -> Vec<Range<usize>> {
    let mut prefix = Vec::with_capacity(work.len() + 1);
    prefix.push(0usize);
    for &w in work {
        prefix.push(prefix[prefix.len() - 1] + w);
    }
    cut_with(work.len(), dim, |r| prefix[r.end] - prefix[r.start])
}

/// The work of a pass over each row of `x` (the `nnz` that [`cut_chunks`] balances): for
/// dense storage the row length, for sparse storage the stored entries plus one.
pub fn row_work(x: &Features) -> Vec<usize> {
    match x {
        Features::Dense(m) => {
            let rows = DenseRows::new(m, None);
            (0..m.n_rows()).map(|i| rows.nnz(i..i + 1)).collect()
        }
        Features::Sparse(m) => {
            let rows = SparseRows::new(m, None);
            (0..m.n_rows()).map(|i| rows.nnz(i..i + 1)).collect()
        }
    }
}

fn cut_with(n: usize, dim: usize, nnz: impl Fn(Range<usize>) -> usize) -> Vec<Range<usize>> {
    let total = nnz(0..n).max(1);
    // Enough chunks to keep both cores (and more) busy, few enough that the K partial vectors of
    // length d cost little next to one pass over the data.
    let by_work = total / MIN_CHUNK_NNZ;
    let by_dim = total / (8 * dim.max(1));
    let k = by_work.min(by_dim).clamp(1, MAX_CHUNKS).min(n.max(1));
    let target = total.div_ceil(k);
    let mut out = Vec::with_capacity(k);
    let mut start = 0;
    let mut i = 0;
    while i < n {
        i += 1;
        if nnz(start..i) >= target || i == n {
            out.push(start..i);
            start = i;
        }
    }
    if out.is_empty() {
        out.push(0..0);
    }
    out
}

/// Adds the chunks' partial vectors (`acc`, or `acc2` when `second`) onto `out` (set to zero
/// first when `zero`), each coordinate summing the chunks in chunk order.
fn reduce(chunks: &[Chunk], second: Which, out: &mut [f64], zero: bool) {
    const BLOCK: usize = 4096;
    let block = |b: usize, o: &mut [f64]| {
        let lo = b * BLOCK;
        if zero {
            o.iter_mut().for_each(|v| *v = 0.0);
        }
        for ch in chunks {
            let src = match second {
                Which::Acc => &ch.acc[lo..lo + o.len()],
                Which::Acc2 => &ch.acc2[lo..lo + o.len()],
            };
            for (v, &s) in o.iter_mut().zip(src) {
                *v += s;
            }
        }
    };
    if out.len() <= BLOCK {
        // One block: on the calling thread (a parallel dispatch of one task costs a wake-up
        // of a worker per CG step, more than the sum itself at small dimensions).
        block(0, out);
    } else {
        out.par_chunks_mut(BLOCK)
            .enumerate()
            .for_each(|(b, o)| block(b, o));
    }
}

#[derive(Clone, Copy)]
enum Which {
    Acc,
    Acc2,
}

/// The chunks' partial vectors summed over all shards in chunk order, into `out`.
fn sum_vec(sums: &mut dyn ChunkSums, chunks: &[Chunk], which: Which, out: &mut [f64]) {
    sums.sum(out, &mut |o, zero| reduce(chunks, which, o, zero));
}

/// The chunks' scalar partials (`sum`, `sum2`) summed over all shards in chunk order.
fn sum_chunks(sums: &mut dyn ChunkSums, chunks: &[Chunk]) -> (f64, f64) {
    let mut b = [0.0; 2];
    sums.sum(&mut b, &mut |o, zero| {
        if zero {
            o.iter_mut().for_each(|v| *v = 0.0);
        }
        for ch in chunks {
            o[0] += ch.sum;
            o[1] += ch.sum2;
        }
    });
    (b[0], b[1])
}

/// Loss, `l'`, the active set, `Xb' l'` (into `acc`) and `diag(Xb_I' D_I Xb_I)` (into `acc2`)
/// at `z` (after `z += t Xb s` when `step` is `Some(t)`, fused into the same pass); `sum`
/// gets the loss.
fn eval_at_z<R: DesignRows, L: Loss>(rows: &R, loss: L, chunks: &mut [Chunk], step: Option<f64>) {
    chunks.par_iter_mut().for_each(|ch| {
        if let Some(t) = step {
            for (z, &x) in ch.z.iter_mut().zip(&ch.xs) {
                *z += t * x;
            }
        }
        ch.acc.iter_mut().for_each(|v| *v = 0.0);
        ch.acc2.iter_mut().for_each(|v| *v = 0.0);
        ch.active.clear();
        let mut s = 0.0;
        for k in 0..ch.rows.len() {
            let c = ch.cost[k];
            if c <= 0.0 {
                ch.d1[k] = 0.0;
                continue;
            }
            let (l, d1, act) = loss.eval(ch.lab[k], c, ch.z[k]);
            s += l;
            ch.d1[k] = d1;
            if act {
                let i = ch.rows.start + k;
                ch.active.push(k as u32);
                rows.axpy(i, d1, &mut ch.acc);
                rows.axpy_sq(i, 2.0 * c, &mut ch.acc2);
            }
        }
        ch.sum = s;
    });
}

/// `xs = Xb v` per chunk.
fn x_times<R: DesignRows>(rows: &R, v: &[f64], chunks: &mut [Chunk]) {
    chunks.par_iter_mut().for_each(|ch| {
        let start = ch.rows.start;
        for (k, o) in ch.xs.iter_mut().enumerate() {
            *o = rows.dot(start + k, v);
        }
    });
}

/// `acc = Xb_I' D_I Xb_I v` per chunk (active rows only).
fn hess_part<R: DesignRows>(rows: &R, v: &[f64], chunks: &mut [Chunk]) {
    chunks.par_iter_mut().for_each(|ch| {
        ch.acc.iter_mut().for_each(|x| *x = 0.0);
        let start = ch.rows.start;
        for &k in &ch.active {
            let k = k as usize;
            let i = start + k;
            let t = 2.0 * ch.cost[k] * rows.dot(i, v);
            rows.axpy(i, t, &mut ch.acc);
        }
    });
}

/// Slope and curvature of the loss part of `t -> P(w + t s)`: `sum_i l'(z_i + t xs_i) xs_i`
/// into each chunk's `sum`, `sum_{i active} 2 C_i xs_i^2` into `sum2`.
fn slope_along<L: Loss>(loss: L, t: f64, chunks: &mut [Chunk]) {
    chunks.par_iter_mut().for_each(|ch| {
        let (mut s, mut h) = (0.0, 0.0);
        for k in 0..ch.z.len() {
            let c = ch.cost[k];
            if c > 0.0 {
                let x = ch.xs[k];
                let (_, d1, act) = loss.eval(ch.lab[k], c, ch.z[k] + t * x);
                s += d1 * x;
                if act {
                    h += 2.0 * c * x * x;
                }
            }
        }
        ch.sum = s;
        ch.sum2 = h;
    });
}

struct Clock<'s> {
    start: Instant,
    settings: &'s SolverSettings,
}

impl Clock<'_> {
    fn check<O: Observer>(&self, obs: &mut O, stats: IterStats) -> Option<Status> {
        if obs.on_iter(&stats).is_break() {
            return Some(Status::Interrupted);
        }
        match self.settings.time_limit {
            Some(limit) if self.start.elapsed() >= limit => Some(Status::TimeLimit),
            _ => None,
        }
    }
}

fn active_count(chunks: &[Chunk]) -> usize {
    chunks.iter().map(|c| c.active.len()).sum()
}

/// The row chunks of a solve and how their partial sums are reduced.
struct Reduction<'s> {
    cut: Vec<Range<usize>>,
    sums: &'s mut dyn ChunkSums,
}

// One piece: the truncated Newton main loop; gradient, CG, line search and stopping test share
// its chunked row buffers.
fn newton<R: DesignRows, L: Loss, O: Observer>(
    rows: &R,
    lab: &[f64],
    cost: &[f64],
    loss: L,
    settings: &SolverSettings,
    obs: &mut O,
    red: Reduction<'_>,
) -> Result<DcdResult, SolveError> {
    let Reduction { cut, sums } = red;
    let clock = Clock {
        start: Instant::now(),
        settings,
    };
    let max_iter = settings.max_iter.unwrap_or(DEFAULT_MAX_NEWTON);
    let dim = rows.dim();
    // Built in parallel: the per-row buffers' copies and first touches are O(n).
    let mut chunks: Vec<Chunk> = cut
        .into_par_iter()
        .map(|r| Chunk {
            lab: lab[r.clone()].to_vec(),
            cost: cost[r.clone()].to_vec(),
            z: vec![0.0; r.len()],
            xs: vec![0.0; r.len()],
            d1: vec![0.0; r.len()],
            active: Vec::with_capacity(r.len()),
            acc: vec![0.0; dim],
            acc2: vec![0.0; dim],
            sum: 0.0,
            sum2: 0.0,
            hi: f64::NEG_INFINITY,
            lo: f64::INFINITY,
            rows: r,
        })
        .collect();
    let mut w = vec![0.0; dim];
    let (mut g, mut hd, mut s, mut r, mut pz, mut p, mut hp, mut precond) = (
        vec![0.0; dim],
        vec![0.0; dim],
        vec![0.0; dim],
        vec![0.0; dim],
        vec![0.0; dim],
        vec![0.0; dim],
        vec![0.0; dim],
        vec![0.0; dim],
    );
    // w = 0, so z = 0.
    eval_at_z(rows, loss, &mut chunks, None);
    let mut f = sum_chunks(sums, &chunks).0;
    sum_vec(sums, &chunks, Which::Acc, &mut g);
    let g0 = ops::dense_dot(&g, &g).sqrt();
    let target = settings.tol * g0;
    let mut iter = 0u64;
    let status = 'outer: loop {
        let gnorm = ops::dense_dot(&g, &g).sqrt();
        if !(gnorm.is_finite() && f.is_finite()) {
            return Err(SolveError::NonFinite { what: "gradient" });
        }
        if gnorm <= target {
            break Status::Converged;
        }
        if iter >= max_iter {
            break Status::MaxIterations;
        }
        // Preconditioned CG on H s = -g.
        sum_vec(sums, &chunks, Which::Acc2, &mut hd);
        for j in 0..dim {
            precond[j] = (1.0 - PCG_MIX) + PCG_MIX * (1.0 + hd[j]);
        }
        s.iter_mut().for_each(|v| *v = 0.0);
        for j in 0..dim {
            r[j] = -g[j];
            pz[j] = r[j] / precond[j];
            p[j] = pz[j];
        }
        let mut rz = ops::dense_dot(&r, &pz);
        let cg_stop = CG_REL * gnorm;
        for _ in 0..MAX_CG {
            if ops::dense_dot(&r, &r).sqrt() <= cg_stop {
                break;
            }
            hess_part(rows, &p, &mut chunks);
            sum_vec(sums, &chunks, Which::Acc, &mut hp);
            for j in 0..dim {
                hp[j] += p[j];
            }
            let php = ops::dense_dot(&p, &hp);
            if !(php.is_finite() && php > 0.0) {
                break;
            }
            let a = rz / php;
            for j in 0..dim {
                s[j] += a * p[j];
                r[j] -= a * hp[j];
                pz[j] = r[j] / precond[j];
            }
            let rz_new = ops::dense_dot(&r, &pz);
            let beta = rz_new / rz;
            rz = rz_new;
            for j in 0..dim {
                p[j] = pz[j] + beta * p[j];
            }
            let stats = IterStats {
                iterations: iter,
                max_violation: gnorm / g0.max(f64::MIN_POSITIVE),
                active: active_count(&chunks),
            };
            if let Some(st) = clock.check(obs, stats) {
                break 'outer st;
            }
        }
        // Line search along s on the slope of phi(t) = P(w + t s), which costs O(n) per t once
        // xs = Xb s is known. phi is convex and piecewise quadratic, so its slope is monotone
        // and piecewise linear: safeguarded Newton steps on phi' inside a bracket [lo, hi].
        // Slopes, unlike differences of objective values, keep their relative precision near
        // the optimum. At t = 1, phi'(1) = -s'r with r the CG residual, which CG makes 0 while
        // the active set does not change: the full Newton step is then accepted at once.
        x_times(rows, &s, &mut chunks);
        let (gs, ws, ss) = (
            ops::dense_dot(&g, &s),
            ops::dense_dot(&w, &s),
            ops::dense_dot(&s, &s),
        );
        if gs >= 0.0 || gs.is_nan() {
            // Not a descent direction: only possible at the limit of floating-point precision.
            break if gnorm <= 10.0 * target {
                Status::Converged
            } else {
                Status::MaxIterations
            };
        }
        let (mut lo, mut hi, mut t) = (0.0f64, f64::INFINITY, 1.0f64);
        for _ in 0..MAX_LINE_STEPS {
            slope_along(loss, t, &mut chunks);
            let (slope_loss, curv_loss) = sum_chunks(sums, &chunks);
            let slope = ws + t * ss + slope_loss;
            if slope.abs() <= LINE_REL * -gs {
                lo = t;
                break;
            }
            if slope > 0.0 {
                hi = t;
            } else {
                lo = t;
            }
            let curv = ss + curv_loss;
            let mut next = t - slope / curv;
            if !(next > lo && next < hi) {
                next = if hi.is_finite() {
                    0.5 * (lo + hi)
                } else {
                    2.0 * t
                };
            }
            if hi - lo <= 1e-12 * hi {
                break;
            }
            t = next;
        }
        // phi' <= 0 on [0, lo] (or |phi'(lo)| is negligible), so phi(lo) < phi(0).
        let t = if lo > 0.0 { lo } else { t };
        for j in 0..dim {
            w[j] += t * s[j];
        }
        eval_at_z(rows, loss, &mut chunks, Some(t));
        f = 0.5 * ops::dense_dot(&w, &w) + sum_chunks(sums, &chunks).0;
        sum_vec(sums, &chunks, Which::Acc, &mut g);
        for j in 0..dim {
            g[j] += w[j];
        }
        iter += 1;
        let gn = ops::dense_dot(&g, &g).sqrt();
        let stats = IterStats {
            iterations: iter,
            max_violation: gn / g0.max(f64::MIN_POSITIVE),
            active: active_count(&chunks),
        };
        if let Some(st) = clock.check(obs, stats) {
            break st;
        }
    };
    finish(rows, loss, &mut chunks, sums, w, status, iter)
}

/// Exact primal value at `w` (z recomputed from scratch), the implied dual point, its objective,
/// the gap and the dual violation.
fn finish<R: DesignRows, L: Loss>(
    rows: &R,
    loss: L,
    chunks: &mut [Chunk],
    sums: &mut dyn ChunkSums,
    w: Vec<f64>,
    status: Status,
    iter: u64,
) -> Result<DcdResult, SolveError> {
    let dim = w.len();
    // z accumulated z += t Xb s over the iterations: recompute it exactly, then the loss,
    // l' and the gradient at the returned w.
    chunks.par_iter_mut().for_each(|ch| {
        let start = ch.rows.start;
        for (k, o) in ch.z.iter_mut().enumerate() {
            *o = rows.dot(start + k, &w);
        }
    });
    eval_at_z(rows, loss, chunks, None);
    let primal = 0.5 * ops::dense_dot(&w, &w) + sum_chunks(sums, chunks).0;
    let mut wd = vec![0.0; dim];
    sum_vec(sums, chunks, Which::Acc, &mut wd);
    // w(dual) = sum_i coef_i xb_i = -Xb' l' (= w - grad P(w)).
    wd.iter_mut().for_each(|v| *v = -*v);
    // The dual objective along the ray {s * coef : s >= 0} is s^2 A + s B; its minimiser s*
    // tends to 1 at the optimum, and away from it (a loose tolerance) scaling the implied dual
    // point by s* gives a much smaller, still valid, duality gap.
    chunks.par_iter_mut().for_each(|ch| {
        let (mut quad, mut lin) = (0.0, 0.0);
        for k in 0..ch.z.len() {
            let c = ch.cost[k];
            if c > 0.0 {
                let (q, l) = loss.dual_term(ch.lab[k], c, -ch.d1[k]);
                quad += q;
                lin += l;
            }
        }
        ch.sum = quad;
        ch.sum2 = lin;
    });
    let (quad, b_coef) = sum_chunks(sums, chunks);
    let a_coef = 0.5 * ops::dense_dot(&wd, &wd) + quad;
    let scale = if a_coef > 0.0 {
        (-b_coef / (2.0 * a_coef)).max(0.0)
    } else {
        0.0
    };
    let dual = scale * (scale * a_coef + b_coef);
    chunks.par_iter_mut().for_each(|ch| {
        let (mut hi, mut lo) = (f64::NEG_INFINITY, f64::INFINITY);
        for k in 0..ch.z.len() {
            let c = ch.cost[k];
            if c <= 0.0 {
                continue;
            }
            // xb_i'w(dual), one row at a time (fused: no separate pass).
            let v = rows.dot(ch.rows.start + k, &wd);
            let (h, l) = loss.violation(ch.lab[k], c, -scale * ch.d1[k], scale * v);
            hi = hi.max(h);
            lo = lo.min(l);
        }
        (ch.hi, ch.lo) = (hi, lo);
    });
    let (mut hi, mut lo) = (f64::NEG_INFINITY, f64::INFINITY);
    for ch in chunks.iter() {
        hi = hi.max(ch.hi);
        lo = lo.min(ch.lo);
    }
    // -lo is exact, so the maximum of -lo is minus the minimum of lo.
    let mut ext = [hi, -lo];
    sums.max(&mut ext);
    let (hi, lo) = (ext[0], -ext[1]);
    let viol = if hi >= lo { hi - lo } else { 0.0 };
    if !(primal.is_finite() && dual.is_finite()) {
        return Err(SolveError::NonFinite { what: "objective" });
    }
    let xw: Vec<f64> = chunks.iter().flat_map(|ch| ch.z.iter().copied()).collect();
    Ok(DcdResult {
        info: SolveInfo {
            status,
            iterations: iter,
            objective: dual,
            rho: 0.0,
            max_violation: viol,
            gap: primal + dual,
        },
        w,
        primal,
        gap: primal + dual,
        xw,
    })
}
