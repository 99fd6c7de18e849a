//! Model selection on the outlier path (Sec. 5.2 of the paper): for each `C` of a grid, one path
//! (or one CCCP run over a parameter grid); every locally optimal node is a candidate, and the
//! `(C, theta)` or `(C, s)` with the lowest validation error wins (0-1 error for SVC, mean absolute
//! error for SVR; ties go to the earlier candidate: smaller `C`, then earlier on the path).
//! Pre-jump nodes are never candidates (they are not locally optimal); the post-jump solution is.
//! Without validation data the end of the first `C`'s path is chosen.
//!
//! One kernel column cache serves every `C`; each standard SVM starts from the previous `C`'s
//! solution (clipped into the new box).

use std::time::Instant;

use super::cccp::{cccp_from_standard, CccpStart};
use super::checkpoint::{self, Current, RobustCheckpoint};
use super::{
    model_from_beta, path_from_standard, setup, standard_solution, PathKind, RobustParams, Start,
    Task,
};
pub use super::{Chosen, Method, Run};
use crate::data::Dataset;
use crate::error::{CheckpointError, DataError, FitError};
use crate::solver::{NoObserver, Observer};
use crate::svm::SvmModel;

/// Result of [`select`].
#[derive(Debug, Clone)]
pub struct Selection {
    /// SVC or SVR.
    pub task: Task,
    /// theta or s.
    pub kind: PathKind,
    /// One run per `C`.
    pub runs: Vec<Run>,
    /// The selected candidate.
    pub chosen: Chosen,
    /// Total seconds.
    pub seconds: f64,
    /// An observer stopped the runs ([`select_resumable`]): `runs` holds the finished `C`s and
    /// the interrupted one (status `"interrupted"`), `chosen` the best candidate so far (or the
    /// interrupted run's current coefficients when there is none).
    pub interrupted: bool,
}

impl Selection {
    /// The chosen model as an ordinary [`SvmModel`] (`params` and `train` as given to
    /// [`select`]).
    ///
    /// # Errors
    /// [`DataError`] when `train` is not the training set.
    pub fn model(&self, params: &RobustParams, train: &Dataset) -> Result<SvmModel, DataError> {
        model_from_beta(
            params.task,
            params.kernel,
            params.bias,
            train,
            &self.chosen.beta,
        )
    }
}

/// Runs `method` for every `C` in `cs` and selects by validation error (see the module doc).
///
/// # Errors
/// [`FitError`] for bad parameters (`cs` empty or not positive), bad data, or a solver breakdown.
pub fn select(
    params: &RobustParams,
    kind: PathKind,
    method: &Method,
    cs: &[f64],
    train: &Dataset,
    valid: Option<&Dataset>,
) -> Result<Selection, FitError> {
    let (sel, _) = select_resumable(
        params,
        kind,
        method,
        cs,
        train,
        valid,
        &mut NoObserver,
        None,
    )?;
    Ok(sel)
}

/// [`select`] that can stop and continue. `obs` is asked before every event of an outlier
/// path (a breakpoint step or a jump sub-step), before every CCCP outer round, and by the SMO
/// solves of the standard SVMs and the CCCP subproblems (every 1000 pair updates). When it asks
/// to stop, the result is marked [`Selection::interrupted`] and comes with a
/// [`RobustCheckpoint`]: the finished `C`s, and the interrupted one at its last safe point (a
/// path: before the event, or before the jump that was stopped; CCCP: before the outer round;
/// the standard SVM: from its warm start). `resume` continues such a checkpoint to the nodes,
/// objectives and breakpoints of an uninterrupted run, bit for bit (every step is
/// deterministic; tested: `tests/robust_resume.rs`).
///
/// ```
/// use marginkit::robust::select::{select, select_resumable, Method};
/// use marginkit::robust::{PathKind, RobustCheckpoint, RobustParams, Task};
/// use std::ops::ControlFlow;
/// use marginkit::solver::{IterStats, NoObserver, Observer};
/// use marginkit::{Dataset, DenseMatrix, Features, KernelSpec};
///
/// // Stops at the 20th report (a Ctrl-C handler would set a `Cancel` flag instead).
/// struct StopAt(usize);
/// impl Observer for StopAt {
///     fn on_iter(&mut self, _: &IterStats) -> ControlFlow<()> {
///         self.0 = self.0.saturating_sub(1);
///         if self.0 == 0 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
///     }
/// }
/// let n = 60;
/// let x: Vec<f64> = (0..n).flat_map(|i| {
///     let t = i as f64 * 0.71;
///     [t.sin() + if i % 2 == 0 { 0.4 } else { -0.4 }, (1.7 * t).cos()]
/// }).collect();
/// let y: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { 1.0 } else { -1.0 }).collect();
/// let data = Dataset::new(Features::Dense(DenseMatrix::new(n, 2, x)?), y, None)?;
/// let params = RobustParams::new(Task::Svc, KernelSpec::Rbf { gamma: 1.0 });
/// let cs = [1.0, 10.0];
/// let full = select(&params, PathKind::Theta, &Method::Path, &cs, &data, None)?;
/// let (part, state) =
///     select_resumable(&params, PathKind::Theta, &Method::Path, &cs, &data, None, &mut StopAt(20), None)?;
/// if let Some(state) = state {
///     assert!(part.interrupted);
///     let state = RobustCheckpoint::from_bytes(&state.to_bytes()).map_err(std::io::Error::other)?;
///     let (done, more) = select_resumable(
///         &params, PathKind::Theta, &Method::Path, &cs, &data, None, &mut NoObserver, Some(&state),
///     )?;
///     assert!(more.is_none() && !done.interrupted);
///     for (a, b) in done.runs.iter().zip(&full.runs) {
///         let obj = |r: &marginkit::robust::select::Run| r.nodes.iter().map(|n| n.objective).collect::<Vec<_>>();
///         assert_eq!(obj(a), obj(b));
///     }
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`select`]; [`FitError::Checkpoint`] when `resume` was made with other data or other
/// parameters, or does not fit the data.
#[allow(clippy::too_many_arguments)]
pub fn select_resumable(
    params: &RobustParams,
    kind: PathKind,
    method: &Method,
    cs: &[f64],
    train: &Dataset,
    valid: Option<&Dataset>,
    obs: &mut dyn Observer,
    resume: Option<&RobustCheckpoint>,
) -> Result<(Selection, Option<RobustCheckpoint>), FitError> {
    if cs.is_empty() {
        return Err(crate::error::ParamError::Incompatible("the C grid is empty").into());
    }
    for &c in cs {
        crate::error::positive("C", c)?;
    }
    if let Method::Cccp(grid) = method {
        for &g in grid {
            super::check_theta(g)?;
        }
    }
    let start = Instant::now();
    let su = setup(params, train, valid)?;
    let (y, yv, mut kern, ridge) = (su.y, su.yv, su.kern, su.ridge);
    let fp = super::checkpoint::fingerprint(params, kind, method, cs, train, valid);
    let mut runs = Vec::new();
    let mut chosen: Option<Chosen> = None;
    let mut warm: Option<Vec<f64>> = None;
    let mut current = Current::Standard;
    let mut seconds_before = 0.0;
    if let Some(ck) = resume {
        let grid = match method {
            Method::Cccp(g) => g.len(),
            Method::Path => 0,
        };
        ck.check(
            fp,
            y.len(),
            kern.rows(),
            kern.is_linear().then(|| kern.width()),
            cs.len(),
            grid,
        )?;
        runs = ck.runs.clone();
        chosen = ck.chosen.clone();
        warm = ck.warm.clone();
        current = ck.current.clone();
        seconds_before = ck.seconds;
    }
    let first = runs.len();
    for (r, &c) in cs.iter().enumerate().skip(first) {
        let t0 = Instant::now();
        let p = params.clone().c(c);
        let cur = std::mem::replace(&mut current, Current::Standard);
        let stopped = |runs: Vec<Run>,
                       chosen: Option<Chosen>,
                       warm: Option<Vec<f64>>,
                       cur,
                       beta: Vec<f64>| {
            let ck = RobustCheckpoint {
                fingerprint: fp,
                runs: runs.clone(),
                chosen: chosen.clone(),
                warm: warm.clone(),
                seconds: seconds_before + start.elapsed().as_secs_f64(),
                current: cur,
            };
            let mut runs = runs;
            runs.push(Run {
                c,
                nodes: Vec::new(),
                status: "interrupted",
                events: 0,
                d_steps: 0,
                final_locally_optimal: false,
                final_violation: None,
                s_standard: f64::NAN,
                max_active: 0,
                seconds: t0.elapsed().as_secs_f64(),
            });
            let chosen = chosen.unwrap_or(Chosen {
                run: r,
                node: 0,
                c,
                param: f64::NAN,
                valid_error: None,
                beta,
            });
            (
                Selection {
                    task: params.task,
                    kind,
                    runs,
                    chosen,
                    seconds: seconds_before + start.elapsed().as_secs_f64(),
                    interrupted: true,
                },
                Some(ck),
            )
        };
        // The standard SVM (unless the run is continued past it).
        let std_sol = match &cur {
            Current::Standard => {
                match standard_solution(
                    &mut kern,
                    p.task,
                    &y,
                    c,
                    p.solver_tol,
                    ridge,
                    warm.as_deref(),
                    obs,
                )? {
                    Some(s) => Some(s),
                    None => {
                        let beta = warm.clone().unwrap_or_else(|| vec![0.0; y.len()]);
                        return Ok(stopped(runs, chosen, warm, Current::Standard, beta));
                    }
                }
            }
            _ => None,
        };
        if let Some((beta, _)) = &std_sol {
            warm = Some(beta.clone());
        }
        let (run, best, last) = match method {
            Method::Path => {
                let from = match (&cur, std_sol) {
                    (Current::Path(res), _) => Start::Resume(res),
                    (_, Some((beta, f))) => Start::Standard(beta, f),
                    _ => {
                        return Err(CheckpointError::Mismatch {
                            file: checkpoint::FILE,
                            reason: "a state of another method",
                        }
                        .into())
                    }
                };
                let (path, stop) = path_from_standard(
                    &p,
                    kind,
                    &mut kern,
                    y.clone(),
                    yv.clone(),
                    from,
                    ridge,
                    t0,
                    obs,
                );
                if let Some(res) = stop {
                    let beta = path.final_beta.clone();
                    return Ok(stopped(
                        runs,
                        chosen,
                        warm,
                        Current::Path(Box::new(res)),
                        beta,
                    ));
                }
                let last = (path.nodes.len().saturating_sub(1), path.final_beta.clone());
                (
                    Run {
                        c,
                        status: path.status.as_str(),
                        events: path.events,
                        d_steps: path.d_steps,
                        final_locally_optimal: path.final_locally_optimal,
                        final_violation: path.final_violation,
                        s_standard: path.s_standard,
                        max_active: path.max_active,
                        seconds: path.seconds,
                        nodes: path.nodes,
                    },
                    path.best,
                    last,
                )
            }
            Method::Cccp(grid) => {
                let from = match (&cur, std_sol) {
                    (Current::Cccp(res), _) => CccpStart::Resume(res),
                    (_, Some((beta, f))) => CccpStart::Standard(beta, f),
                    _ => {
                        return Err(CheckpointError::Mismatch {
                            file: checkpoint::FILE,
                            reason: "a state of another method",
                        }
                        .into())
                    }
                };
                let (cp, stop) =
                    cccp_from_standard(&p, kind, grid, &mut kern, &y, &yv, from, ridge, t0, obs)?;
                if let Some(res) = stop {
                    let beta = res.beta.clone();
                    return Ok(stopped(runs, chosen, warm, Current::Cccp(res), beta));
                }
                let last_beta = cp.nodes.last().and_then(|n| n.beta.clone());
                let last = (
                    cp.nodes.len().saturating_sub(1),
                    last_beta.unwrap_or_default(),
                );
                (
                    Run {
                        c,
                        status: if cp.unconverged == 0 {
                            "completed"
                        } else {
                            "unconverged"
                        },
                        events: 0,
                        d_steps: cp.rounds.iter().sum(),
                        final_locally_optimal: cp.nodes.iter().all(|n| n.locally_optimal),
                        final_violation: None,
                        s_standard: cp.s_standard,
                        max_active: 0,
                        seconds: cp.seconds,
                        nodes: cp.nodes,
                    },
                    cp.best,
                    last,
                )
            }
        };
        if let Some((node, e, b)) = best {
            if chosen
                .as_ref()
                .is_none_or(|ch| ch.valid_error.is_none_or(|ce| e < ce))
            {
                chosen = Some(Chosen {
                    run: r,
                    node,
                    c,
                    param: run.nodes[node].param,
                    valid_error: Some(e),
                    beta: b,
                });
            }
        } else if chosen.is_none() && !last.1.is_empty() {
            chosen = Some(Chosen {
                run: r,
                node: last.0,
                c,
                param: run.nodes.get(last.0).map_or(0.0, |n| n.param),
                valid_error: None,
                beta: last.1,
            });
        }
        runs.push(run);
    }
    let chosen = match chosen {
        Some(ch) => ch,
        None => {
            // CCCP without kept solutions and without validation data: the standard SVM.
            let b = warm.unwrap_or_default();
            Chosen {
                run: 0,
                node: 0,
                c: cs[0],
                param: runs[0].nodes.first().map_or(0.0, |n| n.param),
                valid_error: None,
                beta: b,
            }
        }
    };
    Ok((
        Selection {
            task: params.task,
            kind,
            runs,
            chosen,
            seconds: seconds_before + start.elapsed().as_secs_f64(),
            interrupted: false,
        },
        None,
    ))
}
