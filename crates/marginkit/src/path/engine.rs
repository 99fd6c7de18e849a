//! The path's one loop over C (screen, solve, re-check, report) and what its two engines
//! ([`super::kernel`]: SMO on a cached kernel matrix; [`super::linear`]: dual coordinate descent
//! on the data) provide to it through [`PathEngine`].

use std::time::Instant;

use super::checkpoint::PathCheckpoint;
use super::params::{Grid, PathValidParams};
use super::result::{kernel_model, PathPoint, PathResult};
use crate::data::Dataset;
use crate::error::FitError;
use crate::screening;
use crate::solver::{IterStats, Observer, SolverSettings, Status, VarFix};
use crate::svm::linear::{LinearModel, LinearSolver};

/// What both engines share.
pub(super) struct Ctx<'a> {
    pub params: &'a PathValidParams,
    pub train: &'a Dataset,
    pub valid: Option<&'a Dataset>,
    pub labels: [f64; 2],
    pub y: Vec<i8>,
    pub settings: SolverSettings,
}

/// The reference solution and what the rules read from it.
pub(super) struct Reference {
    pub c: f64,
    pub alpha: Vec<f64>,
    /// Margins `g = Qa` over all samples.
    pub g: Vec<f64>,
    /// Primal weights `w = Z'a` (linear engine; empty for the kernel engine, and for a linear
    /// reference resumed from a state without them).
    pub w: Vec<f64>,
}

/// One point's solve: the solution, its margins and the solver's account.
pub(super) struct Solved {
    pub alpha: Vec<f64>,
    /// Margins `g = Qa` over all samples.
    pub g: Vec<f64>,
    /// Primal weights (linear engine).
    pub w: Option<Vec<f64>>,
    pub account: Account,
}

/// The solver's account of one point.
pub(super) struct Account {
    /// Status of the last solver run.
    pub status: Status,
    /// The violation the solver reported for its last run.
    pub solver_violation: f64,
    /// Screened samples freed by the KKT re-check.
    pub freed: usize,
    /// Solver runs.
    pub solves: usize,
    /// Iterations summed over the solver runs.
    pub iterations: u64,
}

/// What the loop of [`walk`] asks of an engine.
pub(super) trait PathEngine {
    /// The engine state a point starts from, kept until the point is done: a checkpoint of an
    /// interrupted point restarts it from here.
    type Before;

    /// Lemma 9's reference `a = C_min 1` when the engine computes it (setting `c_min`), and
    /// the two-point grid that replaces the epsilon path when `Q1 <= 0`.
    fn initial_reference(
        &mut self,
        ctx: &Ctx<'_>,
        grid: &mut Option<Vec<f64>>,
        c_min: &mut Option<f64>,
    ) -> Option<Reference>;

    /// Takes the engine's state from a checkpoint (checked by `check_fits` for its lengths)
    /// and returns the reference it holds.
    ///
    /// # Errors
    /// [`FitError::Checkpoint`] for a state that does not fit the problem.
    fn resume(&mut self, ctx: &Ctx<'_>, ck: &PathCheckpoint)
        -> Result<Option<Reference>, FitError>;

    /// The state the next point starts from.
    fn before(&self) -> Self::Before;

    /// The checkpoint before a point (fingerprint, run record and `C_min` are set by the caller).
    fn checkpoint(
        &mut self,
        points: &[PathPoint],
        reference: Option<Reference>,
        before: Self::Before,
    ) -> PathCheckpoint;

    /// Screens for the point `c` from `reference` into `fix` (all `Free` on entry); returns the
    /// counts screened into R and L.
    fn screen(
        &mut self,
        ctx: &Ctx<'_>,
        reference: Option<&Reference>,
        c: f64,
        fix: &mut Vec<VarFix>,
    ) -> (usize, usize);

    /// Solves the point `c` from `reference` with the screened `fix`, freeing the screened
    /// samples that violate the stopping rule on the full problem and solving again until
    /// none do. `None` when the observer stopped the solve.
    ///
    /// # Errors
    /// [`FitError::Solve`] on numerical breakdown.
    fn solve(
        &mut self,
        ctx: &Ctx<'_>,
        reference: Option<&Reference>,
        c: f64,
        fix: &mut [VarFix],
        obs: &mut dyn Observer,
    ) -> Result<Option<Solved>, FitError>;

    /// Hands over the reference the new point replaces.
    fn retire(&mut self, old: Option<Reference>);
}

/// Runs the path with `engine`: each C of the grid (or the epsilon path) in turn, from the
/// checkpoint `resume` when given; `ck_out` receives the checkpoint of a stopped path.
pub(super) fn walk<E: PathEngine>(
    engine: &mut E,
    ctx: &Ctx<'_>,
    result: &mut PathResult,
    on_point: &mut dyn FnMut(&PathPoint),
    obs: &mut dyn Observer,
    (resume, ck_out): (Option<&PathCheckpoint>, &mut Option<PathCheckpoint>),
) -> Result<(), FitError> {
    let n = ctx.train.len();
    let params = ctx.params;
    let mut grid = fixed_grid(&params.grid);
    let mut reference = engine.initial_reference(ctx, &mut grid, &mut result.c_min_trivial);
    let mut k = 0usize;
    if let Some(ck) = resume {
        reference = engine.resume(ctx, ck)?;
        for p in &ck.points {
            on_point(p);
        }
        result.points = ck.points.clone();
        k = ck.points.len();
    }
    let mut fix = vec![VarFix::Free; n];
    while let Some(c) = next_c(grid.as_deref(), k, &params.grid, reference.as_ref()) {
        k += 1;
        let before = engine.before();
        // A stop requested between points (a solve shorter than the solver's reporting period
        // never asks the observer) ends the path here, before this point.
        if stopped(obs, n) {
            *ck_out = Some(engine.checkpoint(&result.points, reference.take(), before));
            break;
        }
        // 1. Screening.
        let t_rule = Instant::now();
        fix.fill(VarFix::Free);
        let (n_r, n_l) = engine.screen(ctx, reference.as_ref(), c, &mut fix);
        let rule_seconds = t_rule.elapsed().as_secs_f64();
        // 2-3. Solve, re-check, re-solve.
        let t_solve = Instant::now();
        let Some(solved) = engine.solve(ctx, reference.as_ref(), c, &mut fix, obs)? else {
            // Out at once: the unfinished point is not reported (it is solved again from its
            // start on resume).
            *ck_out = Some(engine.checkpoint(&result.points, reference.take(), before));
            break;
        };
        let solve_seconds = t_solve.elapsed().as_secs_f64();
        let Solved {
            alpha,
            g,
            w,
            account,
        } = solved;
        let wn2 = w.as_ref().map(|w| w.iter().map(|v| v * v).sum::<f64>());
        let mut point = finish_point(
            ctx,
            c,
            (alpha, w.clone(), &g),
            &account,
            (n_r, n_l),
            (rule_seconds, solve_seconds),
        )?;
        if let Some(wn2) = wn2 {
            // 1/2 |w|^2 from the primal weights (the same value as a'g / 2 up to rounding).
            point.objective = 0.5 * wn2 - point.alpha.iter().sum::<f64>();
        }
        on_point(&point);
        let alpha = if params.keep_solutions {
            point.alpha.clone()
        } else {
            point.w = None;
            std::mem::take(&mut point.alpha)
        };
        let new = Reference {
            c,
            alpha,
            g,
            w: w.unwrap_or_default(),
        };
        engine.retire(reference.replace(new));
        result.points.push(point);
    }
    Ok(())
}

/// Asks the observer between points whether to stop (iteration 0 of no solve).
pub(super) fn stopped(obs: &mut dyn Observer, n: usize) -> bool {
    let s = IterStats {
        iterations: 0,
        max_violation: f64::INFINITY,
        active: n,
    };
    obs.on_iter(&s).is_break()
}

/// The fixed C values of a grid (ascending), or `None` for the epsilon path.
fn fixed_grid(g: &Grid) -> Option<Vec<f64>> {
    match g {
        Grid::Log {
            c_min,
            c_max,
            points,
        } => {
            if *points == 1 {
                return Some(vec![*c_min]);
            }
            let (a, b) = (c_min.ln(), c_max.ln());
            let m = (*points - 1) as f64;
            Some(
                (0..*points)
                    .map(|k| {
                        if k == *points - 1 {
                            *c_max
                        } else {
                            (a + (b - a) * k as f64 / m).exp()
                        }
                    })
                    .collect(),
            )
        }
        Grid::List(v) => {
            let mut v = v.clone();
            v.sort_by(f64::total_cmp);
            v.dedup();
            Some(v)
        }
        Grid::Epsilon { .. } => None,
    }
}

/// The C of point `k`: the fixed grid's `k`-th value, or the epsilon path's next C from the
/// reference solution (Lemma 9's C_min first); `None` when the path is done.
fn next_c(fixed: Option<&[f64]>, k: usize, g: &Grid, reference: Option<&Reference>) -> Option<f64> {
    if let Some(v) = fixed {
        return v.get(k).copied();
    }
    let Grid::Epsilon {
        eps,
        c_max,
        max_points,
    } = *g
    else {
        return None;
    };
    // The epsilon path always starts from Lemma 9's C_min, so a reference exists here.
    let r = reference?;
    if k >= max_points || (k > 0 && !r.alpha.iter().any(|&a| a >= r.c)) {
        return None;
    }
    next_epsilon_c(r.c, &r.alpha, &r.g, eps, c_max)
}

/// Next C of the epsilon path from `(c0, alpha, g)`, or `None` at `c_max`.
fn next_epsilon_c(c0: f64, alpha: &[f64], g: &[f64], eps: f64, c_max: f64) -> Option<f64> {
    if c0 >= c_max {
        return None;
    }
    let (a, _) = screening::reference_scalars(alpha, g);
    let sum_a: f64 = alpha.iter().sum();
    let gap = |rho: f64| {
        let hinge: f64 = g.iter().map(|&v| (1.0 - rho * v).max(0.0)).sum();
        rho * rho * a - rho * sum_a + rho * c0 * hinge
    };
    let dual = |rho: f64| -0.5 * rho * rho * a + rho * sum_a;
    let base = gap(1.0).max(0.0);
    let ok = |rho: f64| {
        let d = dual(rho);
        d > 0.0 && gap(rho) <= base + eps * d
    };
    let rho_max = c_max / c0;
    const MIN_STEP: f64 = 1.0 + 1e-4;
    let rho = if ok(rho_max) {
        rho_max
    } else {
        let (mut lo, mut hi) = (1.0, rho_max);
        // Geometric bisection to a relative width of 1e-7 (each step costs O(n)).
        for _ in 0..60 {
            if hi <= lo * (1.0 + 1e-7) {
                break;
            }
            let mid = (lo * hi).sqrt();
            if ok(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo.max(MIN_STEP).min(rho_max)
    };
    Some(c0 * rho)
}

/// Counts of a solution.
fn counts(alpha: &[f64], c: f64) -> (usize, usize, usize) {
    let n_sv = alpha.iter().filter(|&&a| a > 0.0).count();
    let n_bsv = alpha.iter().filter(|&&a| a >= c).count();
    let at_bound = alpha.iter().filter(|&&a| a <= 0.0 || a >= c).count();
    (n_sv, n_bsv, at_bound)
}

/// Screened samples that violate the solver's stopping rule on the full problem, freed in `fix`.
/// `span` selects DCD's rule (projected-gradient span) instead of SMO's (`|PG| <= tol`).
#[allow(clippy::needless_range_loop)]
pub(super) fn free_violators(
    fix: &mut [VarFix],
    g: &[f64],
    alpha: &[f64],
    c: f64,
    tol: f64,
    span: bool,
) -> usize {
    let pg = |i: usize| {
        let gi = g[i] - 1.0;
        if alpha[i] <= 0.0 {
            gi.min(0.0)
        } else if alpha[i] >= c {
            gi.max(0.0)
        } else {
            gi
        }
    };
    // SMO: |PG_i| <= tol. DCD: the full span of PG must not exceed max(tol, the free variables'
    // own span), i.e. a screened sample may not widen the solver's end measure beyond tol.
    let (lo, hi) = if span {
        let (mut lo, mut hi) = (0.0f64, 0.0f64);
        for (i, f) in fix.iter().enumerate() {
            if *f == VarFix::Free {
                let v = pg(i);
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
        (lo.min(hi - tol), hi.max(lo + tol))
    } else {
        (-tol, tol)
    };
    let mut freed = 0;
    for i in 0..fix.len() {
        if fix[i] != VarFix::Free {
            let v = pg(i);
            if !(v >= lo && v <= hi) {
                fix[i] = VarFix::Free;
                freed += 1;
            }
        }
    }
    freed
}

/// Largest violation of the solver's measure over all samples.
fn full_violation(g: &[f64], alpha: &[f64], c: f64, span: bool) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 0.0f64);
    for i in 0..g.len() {
        let gi = g[i] - 1.0;
        let v = if alpha[i] <= 0.0 {
            gi.min(0.0)
        } else if alpha[i] >= c {
            gi.max(0.0)
        } else {
            gi
        };
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if span {
        hi - lo
    } else {
        hi.max(-lo)
    }
}

/// Accuracy of predictions against labels.
pub(super) fn accuracy(pred: &[f64], truth: &[f64]) -> f64 {
    if truth.is_empty() {
        return 0.0;
    }
    let ok = pred.iter().zip(truth).filter(|(a, b)| a == b).count();
    ok as f64 / truth.len() as f64
}

pub(super) fn params_c_max(g: &Grid) -> f64 {
    match g {
        Grid::Epsilon { c_max, .. } => *c_max,
        Grid::Log { c_max, .. } => *c_max,
        Grid::List(v) => v.iter().cloned().fold(0.0, f64::max),
    }
}

/// Builds the point: objective, counts, rate, validation accuracy.
fn finish_point(
    ctx: &Ctx<'_>,
    c: f64,
    (alpha, w, g): (Vec<f64>, Option<Vec<f64>>, &[f64]),
    account: &Account,
    (n_r, n_l): (usize, usize),
    (rule_seconds, solve_seconds): (f64, f64),
) -> Result<PathPoint, FitError> {
    let &Account {
        status,
        solver_violation,
        freed,
        solves,
        iterations,
    } = account;
    // The linear engine's measure is DCD's span of the projected gradient.
    let span = w.is_some();
    let objective =
        0.5 * alpha.iter().zip(g).map(|(a, g)| a * g).sum::<f64>() - alpha.iter().sum::<f64>();
    let (n_sv, n_bsv, at_bound) = counts(&alpha, c);
    let kept = (n_r + n_l).saturating_sub(freed);
    let screening_rate = if at_bound > 0 {
        kept as f64 / at_bound as f64
    } else {
        0.0
    };
    let valid_accuracy = match ctx.valid {
        None => None,
        Some(v) => {
            let pred = match &w {
                Some(w) => LinearModel::from_parts(
                    LinearSolver::L1LossSvcDual,
                    ctx.labels.to_vec(),
                    ctx.train.n_features(),
                    ctx.params.bias,
                    vec![w.clone()],
                )?
                .predict(&v.x),
                None => kernel_model(
                    ctx.params.engine,
                    ctx.params.bias,
                    ctx.labels,
                    &alpha,
                    ctx.train,
                )?
                .predict(&v.x)?,
            };
            Some(accuracy(&pred, &v.y))
        }
    };
    Ok(PathPoint {
        c,
        objective,
        n_sv,
        n_bsv,
        screened_r: n_r,
        screened_l: n_l,
        screening_rate,
        rule_seconds,
        solve_seconds,
        kkt_violators_freed: freed,
        solves,
        iterations,
        status,
        max_violation: full_violation(g, &alpha, c, span),
        solver_violation,
        valid_accuracy,
        alpha,
        w,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ParamError;
    use crate::path::{PathParams, MAX_GRID_POINTS};

    #[test]
    fn log_grid_hits_both_ends() {
        let g = fixed_grid(&Grid::Log {
            c_min: 0.5,
            c_max: 8.0,
            points: 5,
        })
        .unwrap();
        assert_eq!(g.len(), 5);
        assert_eq!(g[0], 0.5);
        assert_eq!(g[4], 8.0);
        assert!((g[2] - 2.0).abs() < 1e-12);
    }

    /// A huge `points` is a parameter error, not an allocation of `points` values that fails.
    #[test]
    fn a_log_grid_beyond_the_cap_is_refused() {
        let with = |points| {
            PathParams::linear().grid(Grid::Log {
                c_min: 1.0,
                c_max: 2.0,
                points,
            })
        };
        assert!(with(MAX_GRID_POINTS).check().is_ok());
        for points in [MAX_GRID_POINTS + 1, 1 << 40, usize::MAX] {
            let e = with(points).check().unwrap_err();
            assert!(matches!(e, ParamError::OutOfRange { .. }), "{e}");
        }
    }

    #[test]
    fn violators_are_freed_by_either_rule() {
        // Sample 0 fixed at 0 with margin 0.5 (G = -0.5): a violator; sample 1 fixed at C with
        // margin 0.9999 (G ~ 0): fine.
        let mut fix = vec![VarFix::AtZero, VarFix::AtUpper, VarFix::Free];
        let g = [0.5, 0.9999, 1.0];
        let alpha = [0.0, 1.0, 0.5];
        assert_eq!(free_violators(&mut fix, &g, &alpha, 1.0, 1e-3, false), 1);
        assert_eq!(fix[0], VarFix::Free);
        let mut fix = vec![VarFix::AtZero, VarFix::AtUpper, VarFix::Free];
        assert_eq!(free_violators(&mut fix, &g, &alpha, 1.0, 1e-3, true), 1);
    }
}
