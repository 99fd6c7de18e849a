//! Linear programs: the least-absolute-deviations (l1 regression) LP, by a dedicated interior
//! point (the Frisch-Newton method) or by clarabel.
//!
//! # Problem
//!
//! For the `n` rows `a_i` of a design ([`DesignRows`], `p` columns: `A` is `n x p`) and
//! targets `y`:
//!
//! ```text
//! primal:  min_beta sum_i |y_i - a_i'beta|
//! dual:    max_u y'u   s.t.  A'u = 0,  -1 <= u <= 1
//! ```
//!
//! The interior point works on the dual in the bounded form of Portnoy and Koenker's
//! Frisch-Newton method (`u = 2x - 1`, slack `s = 1 - x`):
//!
//! ```text
//! min_x -y'x  s.t.  A'x = b := A'1/2,  0 <= x <= 1
//! its dual:  max_g b'g - 1'w  s.t.  A g + z - w = -y,  z, w >= 0;   beta = -g,  r = y - A beta = w - z
//! ```
//!
//! # Symbols
//!
//! | paper                                   | code                 |
//! |-----------------------------------------|----------------------|
//! | `A` (rows `a_i`)                        | `design`             |
//! | `x`, `s = 1 - x`                        | `x`, `s`             |
//! | `g = -beta`, `z`, `w`                   | `g`, `z`, `w`        |
//! | `theta_i = 1 / (z_i/x_i + w_i/s_i)`     | `theta`              |
//! | `mu`, centering `sigma = (mu_aff/mu)^3` | `mu`, `sigma`        |
//! | residuals `b - A'x`, `-y - A g - z + w` | `rb`, `rc`           |
//!
//! Each iteration is one Mehrotra predictor-corrector step: it forms and factors the `p x p`
//! normal matrix `A' diag(theta) A`; singular directions (constant or collinear columns) are
//! dropped by the Cholesky factorization (pivots below `1e-13` of the largest are skipped);
//! steps go to `0.9995` of the distance to the boundary.
//!
//! # Stopping rule
//!
//! `|pobj - dobj| <= 1e-11 (1 + |pobj|)` and `x'z + s'w <= 1e-11 (1 + |pobj|)` (relative
//! duality gap and complementarity), `|b - A'x|_inf <= 1e-9 max(1, |b|_inf)` and
//! `|-y - A g - z + w|_inf <= 1e-9 max(1, |y|_inf)` (feasibility); or the time limit (the
//! current point is returned). [`frisch_newton`] returns `None` after 100 iterations, on a
//! breakdown (a non-positive or NaN iterate, no step), and for `p = 0`: the caller then falls
//! back to [`clarabel`].
//!
//! # Cost
//!
//! `O(n p^2)` per iteration to form the normal matrix plus `O(p^3)` to factor it; the sums over
//! rows run in parallel over fixed chunks of rows added in order, so the result is the same
//! for any thread count.
//!
//! # Citation
//!
//! Portnoy & Koenker (1997), "The Gaussian hare and the Laplacian tortoise", Statistical
//! Science 12(4) (the Frisch-Newton method); Mehrotra (1992), SIAM J. Optim. 2(4) (the
//! predictor-corrector); Koenker (2005), Quantile Regression, §6.2 (the LAD LP dual); Goulart &
//! Chen (2024), "Clarabel: an interior-point solver for conic programs with quadratic
//! objectives" (clarabel).

use std::time::{Duration, Instant};

use clarabel::algebra::CscMatrix;
use clarabel::solver::{
    DefaultSettings, DefaultSolver, IPSolver, NonnegativeConeT, SolverStatus, SupportedConeT,
    ZeroConeT,
};
use rayon::prelude::*;

use crate::data::design::DesignRows;
use crate::data::ops::det_sum;
use crate::error::SolveError;

/// An interior point of the l1-regression LP.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct L1Point {
    /// The primal coefficients `beta` (`p` entries).
    pub beta: Vec<f64>,
    /// The dual value `y'u` (approximate: a lower bound on the optimum up to the tolerances).
    pub dual_value: f64,
    /// Interior-point iterations.
    pub iterations: u32,
    /// The dual point `u` (`n` entries in `[-1, 1]` up to the tolerances).
    pub u: Vec<f64>,
}

const CHUNK: usize = 2048;
const BLOCK: usize = 32;

fn row_into(design: &dyn DesignRows, i: usize, buf: &mut [f64]) {
    buf.iter_mut().for_each(|v| *v = 0.0);
    design.for_each(i, &mut |j, v| buf[j] = v);
}

/// `sum_i f(i) xt_i` (length p), deterministic.
fn xt_weighted(design: &dyn DesignRows, f: &(dyn Fn(usize) -> f64 + Sync)) -> Vec<f64> {
    let (n, p) = (design.n(), design.dim());
    let chunks = n.div_ceil(CHUNK);
    let mut total = vec![0.0; p];
    for block in (0..chunks).step_by(BLOCK) {
        let parts: Vec<Vec<f64>> = (block..(block + BLOCK).min(chunks))
            .into_par_iter()
            .map(|c| {
                let mut acc = vec![0.0; p];
                for i in c * CHUNK..((c + 1) * CHUNK).min(n) {
                    let fi = f(i);
                    if fi != 0.0 {
                        design.for_each(i, &mut |j, v| acc[j] += fi * v);
                    }
                }
                acc
            })
            .collect();
        for part in parts {
            total.iter_mut().zip(part).for_each(|(t, v)| *t += v);
        }
    }
    total
}

/// `sum_i theta_i xt_i xt_i'` (upper triangle filled, row-major p x p), deterministic.
fn normal_matrix(design: &dyn DesignRows, theta: &[f64]) -> Vec<f64> {
    let (n, p) = (design.n(), design.dim());
    let chunks = n.div_ceil(CHUNK);
    let mut total = vec![0.0; p * p];
    for block in (0..chunks).step_by(BLOCK) {
        let parts: Vec<Vec<f64>> = (block..(block + BLOCK).min(chunks))
            .into_par_iter()
            .map(|c| {
                let mut acc = vec![0.0; p * p];
                let mut row = vec![0.0; p];
                let hi = ((c + 1) * CHUNK).min(n);
                for (i, &t) in theta.iter().enumerate().take(hi).skip(c * CHUNK) {
                    row_into(design, i, &mut row);
                    for a in 0..p {
                        let ra = t * row[a];
                        if ra != 0.0 {
                            let dst = &mut acc[a * p + a..a * p + p];
                            for (d, &rb) in dst.iter_mut().zip(&row[a..]) {
                                *d += ra * rb;
                            }
                        }
                    }
                }
                acc
            })
            .collect();
        for part in parts {
            total.iter_mut().zip(part).for_each(|(t, v)| *t += v);
        }
    }
    total
}

/// In-place Cholesky of the upper triangle (`U'U`); skipped pivots are marked in `skip`.
fn cholesky(m: &mut [f64], p: usize, skip: &mut [bool]) {
    let dmax = (0..p).map(|i| m[i * p + i].abs()).fold(0.0f64, f64::max);
    for k in 0..p {
        let mut d = m[k * p + k];
        for t in 0..k {
            d -= m[t * p + k] * m[t * p + k];
        }
        if d.is_nan() || d <= 1e-13 * dmax {
            skip[k] = true;
            for j in k..p {
                m[k * p + j] = 0.0;
            }
            continue;
        }
        let d = d.sqrt();
        m[k * p + k] = d;
        for j in k + 1..p {
            let mut s = m[k * p + j];
            for t in 0..k {
                s -= m[t * p + k] * m[t * p + j];
            }
            m[k * p + j] = s / d;
        }
    }
}

fn chol_solve(u: &[f64], p: usize, skip: &[bool], rhs: &[f64]) -> Vec<f64> {
    let mut z = rhs.to_vec();
    for k in 0..p {
        if skip[k] {
            z[k] = 0.0;
            continue;
        }
        let mut s = z[k];
        for t in 0..k {
            s -= u[t * p + k] * z[t];
        }
        z[k] = s / u[k * p + k];
    }
    for k in (0..p).rev() {
        if skip[k] {
            z[k] = 0.0;
            continue;
        }
        let mut s = z[k];
        for j in k + 1..p {
            s -= u[k * p + j] * z[j];
        }
        z[k] = s / u[k * p + k];
    }
    z
}

fn dsum(n: usize, f: impl Fn(usize) -> f64 + Sync) -> f64 {
    det_sum(n, f)
}

fn max_step(v: &[f64], dv: &[f64]) -> f64 {
    v.par_iter()
        .zip(dv.par_iter())
        .map(|(&a, &d)| if d < 0.0 { -a / d } else { f64::INFINITY })
        .reduce(|| f64::INFINITY, f64::min)
}

struct Dir {
    dx: Vec<f64>,
    dg: Vec<f64>,
    dz: Vec<f64>,
    dw: Vec<f64>,
}

/// The Newton system of one interior-point iteration: the design, the Cholesky factor of
/// `A Theta A'` with its skipped pivots, `theta`, the point `(x, s, z, w)` and the residuals
/// `rb`, `rc`. The predictor and the corrector solve it for different complementarity
/// right-hand sides.
struct NewtonSystem<'a> {
    design: &'a dyn DesignRows,
    chol: (&'a [f64], &'a [bool]),
    theta: &'a [f64],
    st: (&'a [f64], &'a [f64], &'a [f64], &'a [f64]),
    rb: &'a [f64],
    rc: &'a [f64],
}

/// The step of `sys` for the complementarity right-hand sides `rxz` (of `x z`) and `rsw` (of
/// `s w`).
fn direction(sys: &NewtonSystem<'_>, rxz: &[f64], rsw: &[f64]) -> Dir {
    let NewtonSystem {
        design,
        chol,
        theta,
        st,
        rb,
        rc,
    } = *sys;
    let (x, s, z, w) = st;
    let n = design.n();
    let p = design.dim();
    let rhat: Vec<f64> = (0..n)
        .into_par_iter()
        .map(|i| rc[i] - rxz[i] / x[i] + rsw[i] / s[i])
        .collect();
    let atr = xt_weighted(design, &|i| theta[i] * rhat[i]);
    let rhs: Vec<f64> = rb.iter().zip(&atr).map(|(a, b)| a + b).collect();
    let dg = chol_solve(chol.0, p, chol.1, &rhs);
    let dx: Vec<f64> = (0..n)
        .into_par_iter()
        .map(|i| theta[i] * (design.dot(i, &dg) - rhat[i]))
        .collect();
    let dz: Vec<f64> = (0..n)
        .into_par_iter()
        .map(|i| (rxz[i] - z[i] * dx[i]) / x[i])
        .collect();
    let dw: Vec<f64> = (0..n)
        .into_par_iter()
        .map(|i| (rsw[i] + w[i] * dx[i]) / s[i])
        .collect();
    Dir { dx, dg, dz, dw }
}

/// The Frisch-Newton interior point (see the module documentation): `None` when it does not
/// converge in 100 iterations, breaks down, or the design has no columns.
pub(crate) fn frisch_newton(
    design: &dyn DesignRows,
    y: &[f64],
    time_limit: Option<Duration>,
) -> Option<L1Point> {
    let start = Instant::now();
    let (n, p) = (design.n(), design.dim());
    if p == 0 {
        return None;
    }
    let ymax = y.iter().fold(0.0f64, |a, v| a.max(v.abs())).max(1.0);
    let b = xt_weighted(design, &|_| 0.5);
    // Start: a = s = 1/2 (primal feasible), g from least squares of -y, z, w split the
    // residual with a shift.
    let mut x = vec![0.5; n];
    let mut s = vec![0.5; n];
    let ones = vec![1.0; n];
    let mut m0 = normal_matrix(design, &ones);
    let mut skip = vec![false; p];
    cholesky(&mut m0, p, &mut skip);
    let xty = xt_weighted(design, &|i| -y[i]);
    let mut g = chol_solve(&m0, p, &skip, &xty);
    let rr: Vec<f64> = (0..n)
        .into_par_iter()
        .map(|i| -y[i] - design.dot(i, &g))
        .collect();
    let delta = (dsum(n, |i| rr[i].abs()) / n as f64).max(1e-6 * ymax);
    let mut z: Vec<f64> = rr.iter().map(|&r| r.max(0.0) + delta).collect();
    let mut w: Vec<f64> = rr.iter().map(|&r| (-r).max(0.0) + delta).collect();
    let bnorm = b.iter().fold(0.0f64, |a, v| a.max(v.abs())).max(1.0);
    for iter in 0..100u32 {
        let ax = xt_weighted(design, &|i| x[i]);
        let rb: Vec<f64> = b.iter().zip(&ax).map(|(a, c)| a - c).collect();
        let rc: Vec<f64> = (0..n)
            .into_par_iter()
            .map(|i| -y[i] - design.dot(i, &g) - z[i] + w[i])
            .collect();
        let gapv = dsum(n, |i| x[i] * z[i] + s[i] * w[i]);
        let mu = gapv / (2 * n) as f64;
        let pobj = -dsum(n, |i| y[i] * x[i]);
        let dobj = b.iter().zip(&g).map(|(a, c)| a * c).sum::<f64>() - dsum(n, |i| w[i]);
        let rb_max = rb.iter().fold(0.0f64, |a, v| a.max(v.abs()));
        let rc_max = rc.iter().fold(0.0f64, |a, v| a.max(v.abs()));
        let converged = (pobj - dobj).abs() <= 1e-11 * (1.0 + pobj.abs())
            && gapv <= 1e-11 * (1.0 + pobj.abs())
            && rb_max <= 1e-9 * bnorm
            && rc_max <= 1e-9 * ymax;
        if converged || time_limit.is_some_and(|t| start.elapsed() >= t) {
            let beta: Vec<f64> = g.iter().map(|v| -v).collect();
            let value = dsum(n, |i| y[i] * (2.0 * x[i] - 1.0));
            let u: Vec<f64> = x.iter().map(|a| 2.0 * a - 1.0).collect();
            return beta.iter().all(|v| v.is_finite()).then_some(L1Point {
                beta,
                dual_value: value,
                iterations: iter,
                u,
            });
        }
        let theta: Vec<f64> = (0..n)
            .into_par_iter()
            .map(|i| 1.0 / (z[i] / x[i] + w[i] / s[i]))
            .collect();
        let mut m = normal_matrix(design, &theta);
        let mut skip = vec![false; p];
        cholesky(&mut m, p, &mut skip);
        let sys = NewtonSystem {
            design,
            chol: (&m, &skip),
            theta: &theta,
            st: (x.as_slice(), s.as_slice(), z.as_slice(), w.as_slice()),
            rb: &rb,
            rc: &rc,
        };
        // Predictor (affine scaling).
        let rxz: Vec<f64> = (0..n).map(|i| -x[i] * z[i]).collect();
        let rsw: Vec<f64> = (0..n).map(|i| -s[i] * w[i]).collect();
        let aff = direction(&sys, &rxz, &rsw);
        let ds_aff: Vec<f64> = aff.dx.iter().map(|v| -v).collect();
        let ap = max_step(&x, &aff.dx).min(max_step(&s, &ds_aff)).min(1.0);
        let ad = max_step(&z, &aff.dz).min(max_step(&w, &aff.dw)).min(1.0);
        let mu_aff = dsum(n, |i| {
            (x[i] + ap * aff.dx[i]) * (z[i] + ad * aff.dz[i])
                + (s[i] + ap * ds_aff[i]) * (w[i] + ad * aff.dw[i])
        }) / (2 * n) as f64;
        let sigma = (mu_aff / mu).clamp(0.0, 1.0).powi(3);
        // Corrector.
        let rxz: Vec<f64> = (0..n)
            .map(|i| sigma * mu - x[i] * z[i] - aff.dx[i] * aff.dz[i])
            .collect();
        let rsw: Vec<f64> = (0..n)
            .map(|i| sigma * mu - s[i] * w[i] - ds_aff[i] * aff.dw[i])
            .collect();
        let d = direction(&sys, &rxz, &rsw);
        let ds: Vec<f64> = d.dx.iter().map(|v| -v).collect();
        let ap = (0.9995 * max_step(&x, &d.dx).min(max_step(&s, &ds))).min(1.0);
        let ad = (0.9995 * max_step(&z, &d.dz).min(max_step(&w, &d.dw))).min(1.0);
        if !(ap.is_finite() && ad.is_finite()) || ap <= 0.0 && ad <= 0.0 {
            return None;
        }
        x.par_iter_mut()
            .zip(d.dx.par_iter())
            .for_each(|(a, v)| *a += ap * v);
        // s is updated by its own step (not as 1 - x) so that small slacks keep their
        // relative precision; x + s = 1 then holds to rounding.
        s.par_iter_mut()
            .zip(ds.par_iter())
            .for_each(|(a, v)| *a += ap * v);
        for (gi, v) in g.iter_mut().zip(&d.dg) {
            *gi += ad * v;
        }
        z.par_iter_mut()
            .zip(d.dz.par_iter())
            .for_each(|(a, v)| *a += ad * v);
        w.par_iter_mut()
            .zip(d.dw.par_iter())
            .for_each(|(a, v)| *a += ad * v);
        if x.iter()
            .chain(&s)
            .chain(&z)
            .chain(&w)
            .any(|v| v.is_nan() || *v <= 0.0)
        {
            return None;
        }
    }
    None
}

/// The LP dual by clarabel (a general conic interior point; the fallback when
/// [`frisch_newton`] does not converge), in the form
/// `min_u -y'u  s.t.  A'u = 0 (zero cone),  1 - u >= 0,  1 + u >= 0 (nonnegative cone)`;
/// `beta` is the multiplier of the equality rows. clarabel's own stopping rule: gaps and
/// feasibility `1e-10`, at most 200 iterations or the time limit; its "almost" and limit
/// statuses are accepted (the caller's vertex polish certifies or rejects the point).
///
/// # Errors
/// [`SolveError::Dimensions`] when clarabel rejects the problem, [`SolveError::NonFinite`]
/// when it fails or returns non-finite coefficients.
pub(crate) fn clarabel(
    design: &dyn DesignRows,
    y: &[f64],
    time_limit: Option<Duration>,
) -> Result<L1Point, SolveError> {
    let (n, p) = (design.n(), design.dim());
    // A = [Xt'; I; -I] (p + 2n rows, n columns), b = [0; 1; 1].
    let mut colptr = Vec::with_capacity(n + 1);
    let mut rowval = Vec::new();
    let mut nzval = Vec::new();
    colptr.push(0);
    for i in 0..n {
        design.for_each(i, &mut |j, v| {
            rowval.push(j);
            nzval.push(v);
        });
        rowval.push(p + i);
        nzval.push(1.0);
        rowval.push(p + n + i);
        nzval.push(-1.0);
        colptr.push(rowval.len());
    }
    let a = CscMatrix::new(p + 2 * n, n, colptr, rowval, nzval);
    let pm = CscMatrix::zeros((n, n));
    let q: Vec<f64> = y.iter().map(|v| -v).collect();
    let mut b = vec![0.0; p + 2 * n];
    b[p..].iter_mut().for_each(|v| *v = 1.0);
    let mut cones: Vec<SupportedConeT<f64>> = Vec::new();
    if p > 0 {
        cones.push(ZeroConeT(p));
    }
    cones.push(NonnegativeConeT(2 * n));
    let settings = DefaultSettings {
        verbose: false,
        tol_gap_abs: 1e-10,
        tol_gap_rel: 1e-10,
        tol_feas: 1e-10,
        max_iter: 200,
        time_limit: time_limit.map_or(f64::INFINITY, |t| t.as_secs_f64()),
        ..DefaultSettings::default()
    };
    let mut solver = DefaultSolver::new(&pm, &q, &a, &b, &cones, settings)
        .map_err(|_| SolveError::Dimensions("LAD LP setup rejected by clarabel"))?;
    solver.solve();
    let sol = &solver.solution;
    match sol.status {
        SolverStatus::Solved
        | SolverStatus::AlmostSolved
        | SolverStatus::MaxIterations
        | SolverStatus::MaxTime
        | SolverStatus::InsufficientProgress
        | SolverStatus::AlmostDualInfeasible
        | SolverStatus::AlmostPrimalInfeasible => {}
        _ => {
            return Err(SolveError::NonFinite {
                what: "LAD LP solution",
            })
        }
    }
    let beta_ip: Vec<f64> = sol.z[..p].to_vec();
    if beta_ip.iter().any(|v| !v.is_finite()) {
        return Err(SolveError::NonFinite {
            what: "LAD coefficients",
        });
    }
    Ok(L1Point {
        beta: beta_ip,
        dual_value: -sol.obj_val,
        iterations: sol.iterations,
        u: sol.x.clone(),
    })
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    use super::{clarabel, frisch_newton};
    use crate::data::design::{DesignRows, FeatureRows};
    use crate::data::{CsrMatrix, DenseMatrix, Features};

    fn objective(d: &dyn DesignRows, y: &[f64], beta: &[f64]) -> f64 {
        (0..d.n()).map(|i| (y[i] - d.dot(i, beta)).abs()).sum()
    }

    /// Small random l1-regression LPs (dense and sparse rows, with and without a folded
    /// constant feature): the Frisch-Newton optimum equals clarabel's, its dual point is
    /// feasible (`|u_i| <= 1`, `A'u = 0` up to the tolerances) and its dual value closes the
    /// gap to the primal objective.
    #[test]
    fn frisch_newton_matches_clarabel_on_random_lps() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        for (n, d, sparse, bias) in [
            (30usize, 2usize, false, Some(1.0)),
            (120, 4, true, Some(1.0)),
            (200, 6, true, None),
            (80, 3, false, None),
        ] {
            let mut v = vec![0.0; n * d];
            for x in v.iter_mut() {
                if !sparse || rng.gen_bool(0.4) {
                    *x = rng.gen_range(-2.0..2.0);
                }
            }
            let y: Vec<f64> = (0..n)
                .map(|i| v[i * d] - 0.5 * v[i * d + 1] + rng.gen_range(-1.0f64..1.0).powi(3) * 4.0)
                .collect();
            let x = if sparse {
                let (mut ptr, mut idx, mut val) = (vec![0], Vec::new(), Vec::new());
                for i in 0..n {
                    for k in 0..d {
                        if v[i * d + k] != 0.0 {
                            idx.push(k as u32);
                            val.push(v[i * d + k]);
                        }
                    }
                    ptr.push(idx.len());
                }
                Features::Sparse(CsrMatrix::new(d, ptr, idx, val).unwrap())
            } else {
                Features::Dense(DenseMatrix::new(n, d, v).unwrap())
            };
            let rows = FeatureRows::new(&x, bias);
            let p = rows.dim();
            let fnm = frisch_newton(&rows, &y, None).expect("converges");
            let cl = clarabel(&rows, &y, None).unwrap();
            assert_eq!((fnm.beta.len(), fnm.u.len()), (p, n));
            let (o1, o2) = (
                objective(&rows, &y, &fnm.beta),
                objective(&rows, &y, &cl.beta),
            );
            assert!((o1 - o2).abs() <= 1e-7 * (1.0 + o2), "{o1} vs {o2}");
            assert!((fnm.dual_value - o1).abs() <= 1e-7 * (1.0 + o1));
            assert!(fnm.u.iter().all(|u| u.abs() <= 1.0 + 1e-9));
            let mut atu = vec![0.0; p];
            for (i, &u) in fnm.u.iter().enumerate() {
                rows.axpy(i, u, &mut atu);
            }
            assert!(atu.iter().all(|v| v.abs() <= 1e-7), "A'u = {atu:?}");
            let yu: f64 = y.iter().zip(&fnm.u).map(|(a, b)| a * b).sum();
            assert!((yu - fnm.dual_value).abs() <= 1e-9 * (1.0 + yu.abs()));
        }
    }

    #[test]
    fn no_columns_falls_back() {
        let x = Features::Dense(DenseMatrix::new(3, 0, Vec::new()).unwrap());
        assert!(frisch_newton(&FeatureRows::new(&x, None), &[1.0, 2.0, 3.0], None).is_none());
    }
}
