//! The regularization path over C for the SVM without bias, with warm starts and safe sample
//! screening (Ogawa et al. 2014, Algorithm 1).
//!
//! # Problem
//!
//! For each `C` of an increasing grid, the dual of the bias-free hinge-loss SVM
//! ```text
//! min_a 1/2 a'Qa - 1'a   s.t. 0 <= a_i <= C,        Q_ij = y_i y_j K(x_i, x_j)
//! ```
//! solved by [`smo`](crate::solver::smo) (kernel, `Equality::None`, one [`SvcQ`] and its cache reused along the path;
//! the block working-set SMO, [`block`](crate::solver::block), with [`PathParams::qp_engine`] /
//! `--solver block`) or [`dcd`](crate::solver::dcd) (linear). A bias is available only as the paper's augmentation: a constant feature
//! `B` (`K + B^2`), see [`PathParams::bias`].
//!
//! # Algorithm, per C
//!
//! 1. **Screen** ([`crate::screening`]) from the previous point (`C_ref`): samples provably in R
//!    are fixed at 0, in L at `C` ([`VarFix`](crate::solver::VarFix)); the solver folds them into `p`.
//! 2. **Solve** the screened problem from the previous `alpha` (warm start; feasible since
//!    `C > C_ref`; the linear engine starts from the scaled point `(C / C_ref) alpha`, see
//!    `warm_start_scaled`, or the secant through the two previous solutions, whichever starts
//!    lower on the dual objective; [`LinearStart`] forces one, or a cold start from zero as a
//!    single-C solver such as LIBLINEAR trains, the paper's Table III setting), with the solver's
//!    own shrinking on top. The kernel matrix stays in the
//!    solver's order between solves (only the permutation is tracked): screened variables are
//!    then mostly in the solver's tail already, and the cached kernel columns are not permuted
//!    back after each solve (for millisecond solves that replay dominated the time).
//! 3. **Exactness**: recompute the full gradient `G = Qa - 1` for every sample and check each
//!    screened sample against the solver's own stopping rule on the full problem (SMO:
//!    `|PG_i| <= tol`; DCD: `PG_i` inside `[max PG - tol, min PG + tol]` of the free variables).
//!    Violators (possible because BT1/IT assume an exactly optimal reference) are freed and the
//!    problem re-solved until none remain. The result therefore meets the same stopping rule on
//!    the full problem as an unscreened solve at the same tolerance.
//! 4. The solution becomes the next reference (`g = Qa` over all samples, `|w|^2 = a'g`, hinge loss).
//!
//! # Grids
//!
//! [`Grid::Log`] (log-spaced), [`Grid::List`] (sorted ascending), or [`Grid::Epsilon`]: the
//! epsilon-path from `C_min = 1 / max_i (Q1)_i` (Lemma 9: `a = C 1` is optimal for `C <= C_min`).
//! The paper does not say how the next C is chosen; here (digest's implementation note) the
//! next `C = rho C_0` is the largest with `gap(rho) <= gap(1) + eps D(rho a)`, where `gap` is the
//! duality gap of the scaled point `rho a` at `C` (the offset `gap(1)` discounts the reference's own
//! solver tolerance), found by bisection; at least a factor `1 + 1e-4` per step. The path stops
//! when no variable is at its upper bound (L empty: the solution no longer changes) or at `c_max`.
//!
//! # Reported per C ([`PathPoint`])
//!
//! Screened into R and L, the screening rate (the paper's: screened / non-SVs, where non-SVs are the
//! variables at a bound at the solution, and screened counts only those that passed the KKT
//! re-check), rule time (sketch update + bounds), solve time (solver runs, full gradient and KKT
//! re-check), objective `1/2 a'Qa - 1'a`, support vectors, violators freed, and the validation
//! accuracy when a validation set is given.
//!
//! # Cost
//!
//! Per C: the solver's cost, plus `O(n nSV)` kernel entries for the full gradient (mostly cache
//! hits) and `O(n |Delta s|)` for BT2/IT; linear: `O(nnz(X))` per C for both.
//!
//! # Example
//!
//! ```
//! use marginkit::data::libsvm_fmt::{read_libsvm_bytes, ReadOptions};
//! use marginkit::fit::Control;
//! use marginkit::path::{fit, Grid, PathData, PathParams};
//! use marginkit::screening::Rule;
//! use marginkit::KernelSpec;
//!
//! let text = b"+1 1:0.9 2:0.1\n+1 1:0.8 2:0.3\n-1 1:-0.7 2:0.2\n-1 1:-0.9 2:-0.4\n+1 1:0.1 2:0.2\n";
//! let data = read_libsvm_bytes(text, &ReadOptions::default())?;
//! let params = PathParams::kernel(KernelSpec::Rbf { gamma: 0.5 })
//!     .grid(Grid::Log { c_min: 0.1, c_max: 100.0, points: 7 })
//!     .screening(Some(Rule::It))
//!     .tol(1e-6)
//!     .check()?;
//! let path = fit(&params, &PathData::new(&data), &mut Control::default())?.model;
//! assert_eq!(path.points.len(), 7);
//! let model = path.svm_model(6, &data)?; // an ordinary SvmModel (rho = 0 without a bias)
//! assert_eq!(model.predict(&data.x)?.len(), 5);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Citation: K. Ogawa, Y. Suzuki, S. Suzumura, I. Takeuchi, "Safe sample screening for support
//! vector machines", arXiv:1401.6740 (2014), Lemma 9, Algorithm 1, eq. 35.

use std::time::Instant;

pub mod checkpoint;
mod engine;
mod kernel;
mod linear;
mod params;
mod result;

pub use checkpoint::PathCheckpoint;
pub use params::{Engine, Grid, LinearStart, PathParams, PathValidParams, MAX_GRID_POINTS};
pub use result::{PathData, PathPoint, PathReport, PathResult};

use crate::data::Dataset;
use crate::error::{DataError, FitError, ParamError};
use crate::fit::{Control, Fit};
use crate::kernel::cache::CacheStats;
use crate::kernel::qmatrix::{QMatrix, SvcQ};
use crate::persist;
use crate::solver::engine as qp_engine;
use crate::solver::{Observer, SolverSettings, Status};
use engine::Ctx;
use kernel::{Augmented, KernelEngine};
use linear::LinearEngine;

/// Runs the path on `data.train`, evaluating each point on `data.valid` when given. The
/// callback of [`Control::on_part`] receives each point as it is finished (also the points
/// taken from the state resumed from); the observer receives the solvers' progress (and one call
/// with iteration 0 before each point) and may stop the path.
///
/// A stopped path returns at once with the finished points only (the unfinished point is not
/// reported: no margin pass over its partial solution), status [`Status::Interrupted`] and a
/// [`PathCheckpoint`]: the finished points and the state before the unfinished one. Given back
/// through [`Control::resume_from`] (same data, validation data and parameters; limits, cache
/// size and thread count may differ), the path continues at the interrupted point and every
/// point is the one an uninterrupted run computes, bit for bit.
///
/// # Errors
/// [`FitError::Data`] for empty data, one class or more than two, a validation set with other
/// features; [`FitError::Param`] for sample weights; [`FitError::Solve`] on numerical
/// breakdown; [`FitError::Checkpoint`] when the state to resume from was made with other data
/// or parameters, or does not fit the problem.
pub fn fit(
    params: &PathValidParams,
    data: &PathData<'_>,
    ctl: &mut Control<'_, PathCheckpoint, PathPoint>,
) -> Result<Fit<PathResult, PathReport, PathCheckpoint>, FitError> {
    let resume = ctl.resume();
    let (obs, mut parts) = ctl.observer_and_parts();
    let mut on_point = |p: &PathPoint| {
        if let Some(f) = parts.as_mut() {
            f(p);
        }
    };
    let start = Instant::now();
    let (model, cache, checkpoint) =
        run(params, data.train, data.valid, &mut on_point, obs, resume)?;
    let status = if checkpoint.is_some() {
        Status::Interrupted
    } else {
        model
            .points
            .iter()
            .fold(Status::Converged, |w, p| w.worst(p.status))
    };
    Ok(Fit {
        model,
        report: PathReport {
            status,
            total_seconds: start.elapsed().as_secs_f64(),
            cache,
        },
        checkpoint,
    })
}

fn run(
    params: &PathValidParams,
    train: &Dataset,
    valid: Option<&Dataset>,
    on_point: &mut dyn FnMut(&PathPoint),
    obs: &mut dyn Observer,
    resume: Option<&PathCheckpoint>,
) -> Result<(PathResult, Option<CacheStats>, Option<PathCheckpoint>), FitError> {
    if train.is_empty() {
        return Err(DataError::Empty.into());
    }
    let labels = train.labels_in_order();
    if labels.len() < 2 {
        return Err(DataError::SingleClass { label: labels[0] }.into());
    }
    if labels.len() > 2 {
        return Err(DataError::TooManyClasses {
            found: labels.len(),
            limit: 2,
        }
        .into());
    }
    if train.weights.is_some() {
        return Err(ParamError::Incompatible(
            "the regularization path does not support sample weights",
        )
        .into());
    }
    // The fingerprint hashes the whole data set (a pass as long as reading it): computed only
    // when a checkpoint is checked or written.
    let fp = || checkpoint::fingerprint(params, train, valid);
    if let Some(ck) = resume {
        persist::check_resume(
            checkpoint::FILE,
            (ck.fingerprint, ck.run.as_ref()),
            (fp(), &checkpoint::record(params, train, valid)),
        )?;
        let d = train.n_features() + usize::from(params.bias.is_some());
        ck.check_fits(params.engine == Engine::Linear, train.len(), d)?;
    }
    let labels = [labels[0], labels[1]];
    let y: Vec<i8> = train
        .y
        .iter()
        .map(|&v| if v == labels[0] { 1 } else { -1 })
        .collect();
    let ctx = Ctx {
        params,
        train,
        valid,
        labels,
        y,
        settings: SolverSettings {
            tol: params.tol,
            shrinking: params.shrinking,
            max_iter: params.max_iter,
            time_limit: params.time_limit,
        },
    };
    let mut ck: Option<PathCheckpoint> = None;
    let mut result = PathResult {
        points: Vec::new(),
        labels,
        c_min_trivial: None,
        engine: params.engine,
        bias: params.bias,
        n_features: train.n_features(),
    };
    let mut cache = None;
    let io = (resume, &mut ck);
    match params.engine {
        Engine::Kernel(kernel) => {
            let cost = qp_engine::row_cost(&train.x, kernel);
            let plan = qp_engine::plan(params.qp_engine, params.cache_bytes, train.len(), cost);
            let base = SvcQ::new(&train.x, kernel, &ctx.y, plan.cache_bytes)?;
            match params.bias {
                None => {
                    let mut e = KernelEngine::new(base, plan);
                    engine::walk(&mut e, &ctx, &mut result, on_point, obs, io)?;
                    cache = Some(e.q.cache_stats());
                }
                Some(b) => {
                    let mut e = KernelEngine::new(Augmented::new(base, &ctx.y, b * b), plan);
                    engine::walk(&mut e, &ctx, &mut result, on_point, obs, io)?;
                    cache = Some(e.q.cache_stats());
                }
            }
        }
        Engine::Linear => {
            let mut e = LinearEngine::new(&ctx)?;
            engine::walk(&mut e, &ctx, &mut result, on_point, obs, io)?;
        }
    }
    if let Some(c) = &mut ck {
        c.fingerprint = fp();
        c.run = Some(checkpoint::record(params, train, valid));
        c.c_min_trivial = result.c_min_trivial;
    }
    Ok((result, cache, ck))
}
