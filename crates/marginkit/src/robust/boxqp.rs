//! The convex problems of the robust SVMs in the coefficient space `beta` (`f = K beta`):
//!
//! ```text
//! max_beta  y'beta - 1/2 beta' K beta   s.t.  lo_i <= beta_i <= hi_i   (lo_i <= 0 <= hi_i)
//! ```
//!
//! The no-bias C-SVC dual (`beta_i = y_i alpha_i`, box `y_i [0, C]`), the LAD-SVR dual (box
//! `[-C, C]`) and every CCCP subproblem (shifted boxes) are of this form. It is handed to
//! the planned QP engine ([`crate::solver::engine`]: the pair SMO, or the block working-set SMO
//! with `--solver block`) as a [`crate::solver::BoxQp`] over `2n` variables
//! (`beta = beta+ - beta-`, see [`super::kern::BetaQ`]); the engine's answer is then **polished**:
//! samples strictly inside their box form the free set `F`, `K_FF beta_F = y_F - K_{F,rest} beta_rest`
//! is solved exactly (Cholesky), and violators (a free coefficient outside its box, a bound one whose
//! gradient `y_i - f_i` points inside) change side until none is left. This removes the solver's
//! tolerance (and its f32 kernel cache) from the state the homotopy starts from.

use super::chol::Chol;
use super::kern::Kern;
use crate::error::SolveError;
use crate::solver::engine::{self as qp_engine, Plan};
use crate::solver::smo::Smo;
use crate::solver::{BoxQp, Equality, Observer, Shrinking, SolveInfo, SolverSettings, Status};

/// Rounds of the polishing active-set loop before giving up.
const POLISH_ROUNDS: usize = 200;

/// How the box problems are solved: the planned QP engine and its stopping tolerance.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BoxSolver {
    /// The engine (the kernel's cache was sized by it).
    pub plan: Plan,
    /// Stopping tolerance (the largest projected gradient).
    pub tol: f64,
}

/// Solves the box problem by the planned engine from the warm start `beta` (clipped into the
/// box first). The solver polls `obs` every 1000 pair updates (block engine: every outer
/// iteration); when it stops, `beta` is left as it was and the status is
/// [`crate::solver::Status::Interrupted`].
pub(crate) fn solve_box(
    kern: &mut Kern<'_>,
    solver: BoxSolver,
    y: &[f64],
    lo: &[f64],
    hi: &[f64],
    beta: &mut [f64],
    obs: &mut dyn Observer,
) -> Result<SolveInfo, SolveError> {
    let n = y.len();
    let mut p = Vec::with_capacity(2 * n);
    p.extend(y.iter().map(|v| -v));
    p.extend_from_slice(y);
    let mut sign = vec![1i8; n];
    sign.extend(std::iter::repeat_n(-1i8, n));
    let mut upper = Vec::with_capacity(2 * n);
    upper.extend(hi.iter().map(|v| v.max(0.0)));
    upper.extend(lo.iter().map(|v| (-v).max(0.0)));
    let mut a = Vec::with_capacity(2 * n);
    a.extend((0..n).map(|i| beta[i].clamp(lo[i], hi[i]).max(0.0)));
    a.extend((0..n).map(|i| (-beta[i].clamp(lo[i], hi[i])).max(0.0)));
    let qp = BoxQp {
        p: &p,
        y: &sign,
        upper: &upper,
        equality: Equality::None,
        fixed: None,
    };
    let settings = SolverSettings {
        tol: solver.tol,
        shrinking: Shrinking::On,
        max_iter: None,
        time_limit: None,
    };
    let mut q = kern.beta_q();
    let info = qp_engine::solve(&solver.plan, &Smo::new(&settings), &mut q, &qp, &mut a, obs)?.info;
    if info.status == Status::Interrupted {
        return Ok(info);
    }
    for i in 0..n {
        beta[i] = a[i] - a[n + i];
    }
    Ok(info)
}

/// `f = K beta` over all rows of `kern` from scratch.
pub(crate) fn fresh_f(kern: &Kern<'_>, beta: &[f64], f: &mut [f64]) {
    let idx: Vec<usize> = (0..beta.len()).filter(|&i| beta[i] != 0.0).collect();
    let coef: Vec<f64> = idx.iter().map(|&i| beta[i]).collect();
    kern.combine_direct(&idx, &coef, f);
}

/// Polishes `beta` to the exact optimum of the box problem (see the module doc); `f = K beta`
/// must hold on entry (all rows) and holds on exit. Returns `false` if the active-set loop did
/// not settle within its round limit.
pub(crate) fn polish(
    kern: &mut Kern<'_>,
    y: &[f64],
    lo: &[f64],
    hi: &[f64],
    beta: &mut [f64],
    f: &mut [f64],
    ridge: f64,
) -> bool {
    let n = y.len();
    let width = (0..n)
        .map(|i| hi[i] - lo[i])
        .fold(0.0, f64::max)
        .max(1e-300);
    let eps_b = 1e-9 * width;
    let yscale = y.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    let eps_g = 1e-9 * yscale;
    let mut free: Vec<bool> = (0..n)
        .map(|i| beta[i] > lo[i] + eps_b && beta[i] < hi[i] - eps_b)
        .collect();
    // Snap the bound ones.
    let mut idx = Vec::new();
    let mut coef = Vec::new();
    for i in 0..n {
        if !free[i] {
            let b = if beta[i] - lo[i] <= hi[i] - beta[i] {
                lo[i]
            } else {
                hi[i]
            };
            if b != beta[i] {
                idx.push(i);
                coef.push(b - beta[i]);
                beta[i] = b;
            }
        }
    }
    let mut df = vec![0.0; f.len()];
    let mut apply = |kern: &mut Kern<'_>, idx: &[usize], coef: &[f64], f: &mut [f64]| {
        if !idx.is_empty() {
            kern.combine(idx, coef, &mut df);
            for (a, b) in f.iter_mut().zip(&df) {
                *a += b;
            }
        }
    };
    apply(kern, &idx, &coef, f);
    let mut gram = Vec::new();
    for _ in 0..POLISH_ROUNDS {
        // Exact solve on the free set.
        let fs: Vec<usize> = (0..n).filter(|&i| free[i]).collect();
        if !fs.is_empty() {
            let mut ch = Chol::new(ridge);
            let mut col = Vec::with_capacity(fs.len());
            for (r, &j) in fs.iter().enumerate() {
                col.clear();
                col.extend(fs[..r].iter().map(|&a| kern.entry(a, j)));
                ch.push(&col, kern.entry(j, j));
            }
            let mut x: Vec<f64> = fs.iter().map(|&i| y[i] - f[i]).collect();
            // More free samples than the linear Gram rank: the residual of the SMO answer is not
            // in the range of K_FF; a plain ridge solve blew the coefficients up (boston, linear,
            // C = 100: test error 900 on one split).
            super::chol::solve_in_range(&ch, kern, &fs, &mut x, &mut gram);
            for (&i, &v) in fs.iter().zip(&x) {
                beta[i] += v;
            }
            apply(kern, &fs, &x, f);
        }
        // Violators change side: the worst few per round.
        let mut changed = Vec::new();
        let mut dcoef = Vec::new();
        for i in 0..n {
            if free[i] {
                if beta[i] < lo[i] || beta[i] > hi[i] {
                    let b = if beta[i] < lo[i] { lo[i] } else { hi[i] };
                    changed.push(i);
                    dcoef.push(b - beta[i]);
                    beta[i] = b;
                    free[i] = false;
                }
            } else {
                let g = y[i] - f[i];
                let at_lo = beta[i] == lo[i];
                let at_hi = beta[i] == hi[i];
                if lo[i] < hi[i] && ((at_lo && g > eps_g) || (at_hi && g < -eps_g)) {
                    free[i] = true;
                    changed.push(usize::MAX);
                    dcoef.push(0.0);
                }
            }
        }
        if changed.is_empty() {
            return true;
        }
        let (ci, cc): (Vec<usize>, Vec<f64>) = changed
            .into_iter()
            .zip(dcoef)
            .filter(|(i, _)| *i != usize::MAX)
            .unzip();
        apply(kern, &ci, &cc, f);
    }
    false
}
