//! CCCP baseline for the robust SVMs: the loss is split into a convex part and a concave part,
//! `loss(t) = [t]_+ - (1 - theta) [t - T]_+`, and the concave part is linearized at the current
//! solution. Each subproblem is the box problem of [`super::boxqp`] with shifted boxes:
//!
//! ```text
//! SVC: beta_i in y_i [0, C]                     (inlier, t_i <= T)
//!      beta_i in y_i [-C (1 - theta), C theta]  (outlier, t_i > T)
//! SVR: beta_i in [-C, C] - C (1 - theta) sigma_i, sigma_i = sign(r_i) 1[|r_i| > s]
//! ```
//!
//! solved by [`crate::solver::smo`] (warm-started from the previous solution) and polished
//! exactly. The outer loop stops when the partition no longer changes (at most
//! [`MAX_OUTER`] rounds). Along a grid of theta or s values each point starts from the previous
//! point's solution (the paper's warm start); the first point starts from the standard SVM.
//!
//! Cost per outer round: one warm-started SMO solve plus `O(n * n_sv)` kernel values for
//! `f = K beta`. Citation: A. L. Yuille, A. Rangarajan, "The concave-convex procedure", Neural
//! Computation 15 (2003); the no-bias formulation follows the digest of Suzumura et al. (2015).

use std::time::Instant;

use super::{
    boxqp, check_state, model_from_beta, objective_of, setup, standard_box, standard_solution,
    threshold, Conditions, Node, NodeKind, PathKind, RobustData, RobustParams, RobustValidParams,
    RunEnd, Setup, Task,
};
use crate::error::{FitError, ParamError};
use crate::fit::{Control, Fit, Report};
use crate::solver::{Observer, Status};
use crate::svm::SvmModel;

/// Outer CCCP rounds per grid point.
pub const MAX_OUTER: usize = 100;

/// The paper's 5-point theta grid.
pub const THETA_GRID: [f64; 5] = [1.0, 0.75, 0.5, 0.25, 0.0];
/// The paper's s grid for SVC, as fractions of `s_C`.
pub const S_GRID_SVC: [f64; 5] = [1.0, 0.75, 0.5, 0.25, 0.0];
/// The paper's s grid for SVR, as fractions of `s_R`.
pub const S_GRID_SVR: [f64; 5] = [1.0, 0.8, 0.6, 0.4, 0.2];

/// CCCP along a grid (one `C`).
#[derive(Debug, Clone)]
pub struct CccpPath {
    /// SVC or SVR.
    pub task: Task,
    /// theta or s grid.
    pub kind: PathKind,
    /// `C`.
    pub c: f64,
    /// One node per grid point (kind `Start` for the first, `SetChange` for the others).
    pub nodes: Vec<Node>,
    /// Outer rounds per grid point.
    pub rounds: Vec<usize>,
    /// Grid points whose outer loop hit [`MAX_OUTER`].
    pub unconverged: usize,
    /// How the run ended: [`RunEnd::Completed`], [`RunEnd::Unconverged`] (some grid point hit
    /// [`MAX_OUTER`]) or [`RunEnd::Interrupted`] (the grid points done are not kept).
    pub end: RunEnd,
    /// Coefficients at the end of the run (the last grid point's; the standard SVM's or the
    /// current round's when the run was interrupted).
    pub final_beta: Vec<f64>,
    /// Best node by validation error, its error and coefficients.
    pub best: Option<(usize, f64, Vec<f64>)>,
    /// `s_C` / `s_R` of the standard SVM.
    pub s_standard: f64,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// The paper's CCCP grid for `kind` and `task`: [`THETA_GRID`], [`S_GRID_SVC`], or
/// [`S_GRID_SVR`] ending at `s_end_fraction` (the end of OP-s for SVR).
pub fn default_grid(kind: PathKind, task: Task, s_end_fraction: f64) -> Vec<f64> {
    match (kind, task) {
        (PathKind::Theta, _) => THETA_GRID.to_vec(),
        (PathKind::S, Task::Svc) => S_GRID_SVC.to_vec(),
        (PathKind::S, Task::Svr) => {
            let mut g = S_GRID_SVR.to_vec();
            if let Some(last) = g.last_mut() {
                *last = s_end_fraction;
            }
            g
        }
    }
}

impl Report for CccpPath {
    /// [`RunEnd::status`] of the run's end.
    fn status(&self) -> Status {
        self.end.status()
    }
}

/// Checked parameters of a CCCP run (one `C`): built by [`CccpParams`], the only form [`fit`]
/// accepts.
#[derive(Debug, Clone, PartialEq)]
pub struct CccpValidParams {
    pub(crate) robust: RobustValidParams,
    pub(crate) grid: Vec<f64>,
}

impl CccpValidParams {
    /// The parameters of the run (task, path kind, kernel, `C`, ...).
    pub fn robust(&self) -> &RobustValidParams {
        &self.robust
    }
    /// The grid: theta values for [`PathKind::Theta`]; fractions of `s_C` / `s_R` for
    /// [`PathKind::S`].
    pub fn grid(&self) -> &[f64] {
        &self.grid
    }
}

/// Parameters of a CCCP run, unchecked: a builder whose [`check`](CccpParams::check) gives the
/// [`CccpValidParams`] that [`fit`] accepts.
///
/// ```
/// use marginkit::robust::cccp::{CccpParams, THETA_GRID};
/// use marginkit::robust::RobustParams;
///
/// let p = CccpParams::new().robust(RobustParams::new().c(10.0)).check()?;
/// assert_eq!(p.grid(), &THETA_GRID[..]);
/// assert!(CccpParams::new().grid(vec![0.5, f64::NAN]).check().is_err());
/// # Ok::<(), marginkit::error::ParamError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CccpParams {
    robust: RobustParams,
    grid: Option<Vec<f64>>,
}

impl CccpParams {
    /// [`RobustParams`]'s defaults and the paper's grid ([`default_grid`]).
    pub fn new() -> Self {
        Self::default()
    }
    /// The parameters of the run (task, path kind, kernel, `C`, ...).
    #[must_use]
    pub fn robust(mut self, p: RobustParams) -> Self {
        self.robust = p;
        self
    }
    /// The grid (default: the paper's for the task and path kind, [`default_grid`]); values in
    /// `[0, 1]`.
    #[must_use]
    pub fn grid(mut self, grid: Vec<f64>) -> Self {
        self.grid = Some(grid);
        self
    }

    /// Checks the run's parameters and every grid value (in `[0, 1]`, NaN-safe).
    ///
    /// # Errors
    /// [`ParamError`] naming the first invalid parameter.
    pub fn check(self) -> Result<CccpValidParams, ParamError> {
        let robust = self.robust.check()?;
        let grid = self
            .grid
            .unwrap_or_else(|| default_grid(robust.kind, robust.task, robust.s_end_fraction));
        for &g in &grid {
            super::check_theta(g)?;
        }
        Ok(CccpValidParams { robust, grid })
    }
}

/// Runs CCCP over the grid of `params` on `data.train` for one `C`; see the module doc. The
/// baseline of the outlier path; [`super::select::select`] runs it over a grid of `C` with
/// [`super::Method::Cccp`].
///
/// The model is the SVM of the last grid point's coefficients. `ctl`'s observer may stop the
/// run (between outer rounds and inside the solves): the report then ends
/// [`RunEnd::Interrupted`] without its grid points, and the model is that of the coefficients
/// reached. A single run has no state to resume from (a selection over `C` has one).
///
/// # Errors
/// [`FitError`] for bad data (SVC needs exactly two classes), or a solver breakdown.
pub fn fit(
    params: &CccpValidParams,
    data: &RobustData<'_>,
    ctl: &mut Control,
) -> Result<Fit<SvmModel, CccpPath>, FitError> {
    let p = &params.robust;
    let start = Instant::now();
    let mut su = setup(p, data.train, data.valid)?;
    let obs = ctl.observer();
    let std_sol = standard_solution(&mut su, p, None, obs)?;
    let path = match std_sol {
        Some((beta, f)) => {
            let from = CccpStart::Standard(beta, f);
            cccp_from_standard(p, &params.grid, &mut su, from, start, obs)?.0
        }
        None => CccpPath {
            task: p.task,
            kind: p.kind,
            c: p.c,
            nodes: Vec::new(),
            rounds: Vec::new(),
            unconverged: 0,
            end: RunEnd::Interrupted,
            final_beta: vec![0.0; su.y.len()],
            best: None,
            s_standard: f64::NAN,
            seconds: start.elapsed().as_secs_f64(),
        },
    };
    let model = model_from_beta(p.task, su.kernel, p.bias, data.train, &path.final_beta)?;
    Ok(Fit {
        model,
        report: path,
        checkpoint: None,
    })
}

/// Where a CCCP run starts: the exact standard SVM `(beta, f)`, or a stopped run's state.
pub(crate) enum CccpStart<'s> {
    Standard(Vec<f64>, Vec<f64>),
    Resume(&'s CccpResume),
}

/// A stopped CCCP run, at the start of outer round `r + 1` of grid point `k`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CccpResume {
    pub tmax: f64,
    pub k: usize,
    pub r: usize,
    /// The partition of the round (`sigma_i`, see the module doc).
    pub sig: Vec<i8>,
    pub beta: Vec<f64>,
    pub f: Vec<f64>,
    pub nodes: Vec<Node>,
    pub rounds: Vec<usize>,
    pub unconverged: usize,
    pub best: Option<(usize, f64, Vec<f64>)>,
}

/// CCCP over `grid` on the problem `su` from its start; with a stop, the state to continue from.
// One piece: the CCCP rounds over the grid; the stop at any round captures the whole run state.
pub(crate) fn cccp_from_standard(
    params: &RobustValidParams,
    grid: &[f64],
    su: &mut Setup<'_>,
    from: CccpStart<'_>,
    start: Instant,
    obs: &mut dyn Observer,
) -> Result<(CccpPath, Option<CccpResume>), FitError> {
    let (kern, y, yv, ridge) = (&mut su.kern, &su.y[..], &su.yv[..], su.ridge);
    let solver = boxqp::BoxSolver {
        plan: su.plan,
        tol: params.solver_tol,
    };
    let task = params.task;
    let kind = params.kind;
    let n = y.len();
    let c = params.c;
    let slack = |f: &[f64], i: usize| match task {
        Task::Svc => y[i] * (y[i] - f[i]),
        Task::Svr => (y[i] - f[i]).abs(),
    };
    let (tmax, mut beta, mut f, k0, mut at, mut nodes, mut rounds, mut unconverged, mut best) =
        match from {
            CccpStart::Standard(beta, f) => {
                let tmax = (0..n)
                    .map(|i| slack(&f, i))
                    .fold(f64::NEG_INFINITY, f64::max);
                (tmax, beta, f, 0, None, Vec::new(), Vec::new(), 0, None)
            }
            CccpStart::Resume(r) => (
                r.tmax,
                r.beta.clone(),
                r.f.clone(),
                r.k,
                Some((r.sig.clone(), r.r)),
                r.nodes.clone(),
                r.rounds.clone(),
                r.unconverged,
                r.best.clone(),
            ),
        };
    let s_standard = super::s_of(task, tmax);
    let (lo0, hi0) = standard_box(task, y, c);
    for (k, &g) in grid.iter().enumerate().skip(k0) {
        let (theta, s) = match kind {
            PathKind::Theta => (g, params.s_theta()),
            PathKind::S => (0.0, g * s_standard),
        };
        let tt = threshold(task, s);
        // sigma_i: +-1 for outliers (slack side), 0 for inliers.
        let part = |f: &[f64]| -> Vec<i8> {
            (0..n)
                .map(|i| {
                    if slack(f, i) > tt {
                        match task {
                            Task::Svc => y[i] as i8,
                            Task::Svr => (y[i] - f[i]).signum() as i8,
                        }
                    } else {
                        0
                    }
                })
                .collect()
        };
        let (mut sig, mut r) = at.take().unwrap_or_else(|| (part(&f), 0));
        let mut settled = false;
        while r < MAX_OUTER {
            let stop = |sig: Vec<i8>, beta: Vec<f64>, f: Vec<f64>, nodes, rounds, best| {
                let path = CccpPath {
                    task,
                    kind,
                    c,
                    nodes: Vec::new(),
                    rounds: Vec::new(),
                    unconverged,
                    end: RunEnd::Interrupted,
                    final_beta: beta.clone(),
                    best: None,
                    s_standard,
                    seconds: start.elapsed().as_secs_f64(),
                };
                let res = CccpResume {
                    tmax,
                    k,
                    r,
                    sig,
                    beta,
                    f,
                    nodes,
                    rounds,
                    unconverged,
                    best,
                };
                Ok((path, Some(res)))
            };
            if super::stop_requested(obs, r) {
                return stop(sig, beta, f, nodes, rounds, best);
            }
            let shift = c * (1.0 - theta);
            let lo: Vec<f64> = (0..n).map(|i| lo0[i] - shift * sig[i] as f64).collect();
            let hi: Vec<f64> = (0..n).map(|i| hi0[i] - shift * sig[i] as f64).collect();
            let info = boxqp::solve_box(kern, solver, y, &lo, &hi, &mut beta, obs)?;
            if info.status == crate::solver::Status::Interrupted {
                return stop(sig, beta, f, nodes, rounds, best);
            }
            r += 1;
            boxqp::fresh_f(kern, &beta, &mut f);
            boxqp::polish(kern, y, &lo, &hi, &mut beta, &mut f, ridge);
            let new = part(&f);
            if new == sig {
                settled = true;
                break;
            }
            sig = new;
        }
        if !settled {
            unconverged += 1;
        }
        rounds.push(r);
        let cond = Conditions {
            task,
            c,
            theta,
            tt,
            tol: params.check_tol,
        };
        let ok = check_state(kern, &cond, y, &f[..n], &beta).is_none();
        let valid_error = super::valid_error_of(task, yv, &f[n..]);
        if let Some(e) = valid_error {
            if best.as_ref().is_none_or(|b| e < b.1) {
                best = Some((k, e, beta.clone()));
            }
        }
        let outlier_sign = part(&f);
        nodes.push(Node {
            param: match kind {
                PathKind::Theta => theta,
                PathKind::S => s,
            },
            kind: if k == 0 {
                NodeKind::Start
            } else {
                NodeKind::SetChange
            },
            objective: objective_of(task, y, &f[..n], &beta, c, theta, tt),
            n_outliers: outlier_sign.iter().filter(|&&v| v != 0).count(),
            valid_error,
            locally_optimal: ok,
            beta: params.keep_solutions.then(|| beta.clone()),
            outlier_sign: params.keep_solutions.then_some(outlier_sign),
        });
    }
    Ok((
        CccpPath {
            task,
            kind,
            c,
            nodes,
            rounds,
            unconverged,
            end: if unconverged == 0 {
                RunEnd::Completed
            } else {
                RunEnd::Unconverged
            },
            final_beta: beta,
            best,
            s_standard,
            seconds: start.elapsed().as_secs_f64(),
        },
        None,
    ))
}
