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

use super::cccp::cccp_from_standard;
use super::{
    model_from_beta, path_from_standard, setup, standard_solution, Node, PathKind, RobustParams,
    Task,
};
use crate::data::Dataset;
use crate::error::{DataError, FitError};
use crate::svm::SvmModel;

/// Outlier path or the CCCP baseline.
#[derive(Debug, Clone, PartialEq)]
pub enum Method {
    /// The outlier path (OP).
    Path,
    /// CCCP over this grid (theta values, or fractions of `s_C` / `s_R`).
    Cccp(Vec<f64>),
}

/// One `C`'s run.
#[derive(Debug, Clone)]
pub struct Run {
    /// `C`.
    pub c: f64,
    /// Recorded nodes (path breakpoints, or CCCP grid points).
    pub nodes: Vec<Node>,
    /// `"completed"`, `"event_limit"` (path) or `"completed"` / `"unconverged"` (CCCP).
    pub status: &'static str,
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

/// The selected model.
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
    if cs.is_empty() {
        return Err(crate::error::ParamError::Incompatible("the C grid is empty").into());
    }
    for &c in cs {
        crate::error::positive("C", c)?;
    }
    let start = Instant::now();
    let su = setup(params, train, valid)?;
    let (y, yv, mut kern, ridge) = (su.y, su.yv, su.kern, su.ridge);
    let mut runs = Vec::new();
    let mut chosen: Option<Chosen> = None;
    let mut warm: Option<Vec<f64>> = None;
    for (r, &c) in cs.iter().enumerate() {
        let t0 = Instant::now();
        let p = params.clone().c(c);
        let (beta, f) = standard_solution(
            &mut kern,
            p.task,
            &y,
            c,
            p.solver_tol,
            ridge,
            warm.as_deref(),
        )?;
        warm = Some(beta.clone());
        let (run, best, last) = match method {
            Method::Path => {
                let path = path_from_standard(
                    &p,
                    kind,
                    &mut kern,
                    y.clone(),
                    yv.clone(),
                    beta,
                    f,
                    ridge,
                    t0,
                )?;
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
                for &g in grid {
                    super::check_theta(g)?;
                }
                let cp =
                    cccp_from_standard(&p, kind, grid, &mut kern, &y, &yv, beta, f, ridge, t0)?;
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
    Ok(Selection {
        task: params.task,
        kind,
        runs,
        chosen,
        seconds: start.elapsed().as_secs_f64(),
    })
}
