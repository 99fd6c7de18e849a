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
    model_from_beta, path_from_standard, setup, standard_solution, PathKind, RobustData,
    RobustParams, RobustValidParams, RunEnd, Start, Task,
};
pub use super::{Chosen, Method, Run};
use crate::data::Dataset;
use crate::error::{CheckpointError, FitError, ParamError};
use crate::fit::{Control, Fit, Report};
use crate::kernel::KernelSpec;
use crate::persist::{hash_dataset, Fnv, RunRecord};
use crate::solver::{Status, SvmSolver};
use crate::svm::SvmModel;

/// The values of `C` a selection runs by default: the paper's `0.01, 0.1, 1, 10, 100`.
pub const DEFAULT_C_GRID: [f64; 5] = [0.01, 0.1, 1.0, 10.0, 100.0];

/// Checked parameters of a model selection: built by [`SelectParams`], the only form
/// [`select`] accepts.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectValidParams {
    pub(crate) robust: RobustValidParams,
    pub(crate) method: Method,
    pub(crate) cs: Vec<f64>,
}

impl SelectValidParams {
    /// The parameters of each run (task, path kind, kernel, ...; its `C` is replaced by each
    /// value of the grid).
    pub fn robust(&self) -> &RobustValidParams {
        &self.robust
    }
    /// The outlier path, or CCCP over a grid.
    pub fn method(&self) -> &Method {
        &self.method
    }
    /// The values of `C`, in the order they run.
    pub fn c_grid(&self) -> &[f64] {
        &self.cs
    }
}

/// Parameters of a model selection over a grid of `C`, unchecked: a builder whose
/// [`check`](SelectParams::check) gives the [`SelectValidParams`] that [`select`] accepts.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectParams {
    robust: RobustParams,
    method: Method,
    cs: Vec<f64>,
}

impl Default for SelectParams {
    /// [`RobustParams`]'s defaults, the outlier path, [`DEFAULT_C_GRID`].
    fn default() -> Self {
        Self {
            robust: RobustParams::new(),
            method: Method::Path,
            cs: DEFAULT_C_GRID.to_vec(),
        }
    }
}

impl SelectParams {
    /// The defaults (see [`Default`]).
    pub fn new() -> Self {
        Self::default()
    }
    /// The parameters of each run (its `C` is replaced by each value of the grid).
    #[must_use]
    pub fn robust(mut self, p: RobustParams) -> Self {
        self.robust = p;
        self
    }
    /// The outlier path ([`Method::Path`], the default) or CCCP over a grid.
    #[must_use]
    pub fn method(mut self, m: Method) -> Self {
        self.method = m;
        self
    }
    /// The values of `C` (default [`DEFAULT_C_GRID`]).
    #[must_use]
    pub fn c_grid(mut self, cs: Vec<f64>) -> Self {
        self.cs = cs;
        self
    }

    /// Checks the run parameters, every `C` (> 0) and every CCCP grid value (in `[0, 1]`).
    ///
    /// # Errors
    /// [`ParamError`] naming the first invalid parameter, or an empty `C` grid.
    pub fn check(self) -> Result<SelectValidParams, ParamError> {
        let robust = self.robust.check()?;
        if self.cs.is_empty() {
            return Err(ParamError::Incompatible("the C grid is empty"));
        }
        for &c in &self.cs {
            crate::error::positive("C", c)?;
        }
        if let Method::Cccp(grid) = &self.method {
            for &g in grid {
                super::check_theta(g)?;
            }
        }
        Ok(SelectValidParams {
            robust,
            method: self.method,
            cs: self.cs,
        })
    }
}

/// The report of [`select`]: every run and the choice.
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
    /// [`Status::Interrupted`] when an observer stopped the runs: `runs` then holds the
    /// finished `C`s and the interrupted one (ending [`RunEnd::Interrupted`]), `chosen` the best
    /// candidate so far (or the interrupted run's current coefficients when there is none).
    /// Otherwise [`Status::MaxIterations`] when a run hit its event or round limit (its
    /// [`Run::end`] says which), else [`Status::Converged`].
    pub status: Status,
}

impl Report for Selection {
    fn status(&self) -> Status {
        self.status
    }
}

/// Runs [`SelectValidParams::method`] for every `C` of the grid and selects by validation
/// error (see the module doc). The model is the chosen candidate as an ordinary [`SvmModel`]
/// ([`model_from_beta`]).
///
/// The observer of `ctl` is asked before every event of an outlier path (a breakpoint step or
/// a jump sub-step), before every CCCP outer round, and by the SMO solves of the standard SVMs
/// and the CCCP subproblems (every 1000 pair updates). When it asks to stop, the report's
/// status is [`Status::Interrupted`] and the fit carries a [`RobustCheckpoint`]: the finished
/// `C`s, and the interrupted one at its last safe point (a path: before the event, or before
/// the jump that was stopped; CCCP: before the outer round; the standard SVM: from its warm
/// start). Resuming from it (`ctl`'s [`Control::resume_from`]) continues to the nodes,
/// objectives and breakpoints of an uninterrupted run, bit for bit (every step is
/// deterministic; tested: `tests/robust_resume.rs`).
///
/// ```
/// use marginkit::fit::Control;
/// use marginkit::robust::select::{select, SelectParams};
/// use marginkit::robust::{PathKind, RobustCheckpoint, RobustData, RobustParams, Task};
/// use marginkit::solver::{IterStats, Observer, Status};
/// use marginkit::svm::{Gamma, KernelParams};
/// use marginkit::{Dataset, DenseMatrix, Features};
/// use std::ops::ControlFlow;
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
/// let kernel = KernelParams { gamma: Gamma::Value(1.0), ..KernelParams::default() };
/// let params = SelectParams::new()
///     .robust(RobustParams::new().task(Task::Svc).kind(PathKind::Theta).kernel(kernel))
///     .c_grid(vec![1.0, 10.0])
///     .check()?;
/// let data = RobustData::new(&data);
/// let full = select(&params, &data, &mut Control::default())?;
/// let part = select(&params, &data, &mut Control::new(StopAt(20)))?;
/// if let Some(state) = part.checkpoint {
///     assert_eq!(part.report.status, Status::Interrupted);
///     let state = RobustCheckpoint::from_bytes(&state.to_bytes()).map_err(std::io::Error::other)?;
///     let done = select(&params, &data, &mut Control::default().resume_from(&state))?;
///     assert!(done.checkpoint.is_none() && done.report.status == Status::Converged);
///     for (a, b) in done.report.runs.iter().zip(&full.report.runs) {
///         let obj = |r: &marginkit::robust::select::Run| r.nodes.iter().map(|n| n.objective).collect::<Vec<_>>();
///         assert_eq!(obj(a), obj(b));
///     }
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`FitError`] for bad data or a solver breakdown; [`FitError::Checkpoint`] when the state
/// resumed from was made with other data or other parameters, or does not fit the data.
// One piece: the loop over C builds the checkpoint (runs, choice, warm start, current run) that
// each of its early returns writes.
pub fn select(
    params: &SelectValidParams,
    data: &RobustData<'_>,
    ctl: &mut Control<'_, RobustCheckpoint>,
) -> Result<Fit<SvmModel, Selection, RobustCheckpoint>, FitError> {
    let (train, valid) = (data.train, data.valid);
    let resume = ctl.resume();
    let obs = ctl.observer();
    let (base, method, cs) = (&params.robust, &params.method, &params.cs[..]);
    let kind = base.kind;
    let start = Instant::now();
    let mut su = setup(base, train, valid)?;
    let kernel = su.kernel;
    let fp = fingerprint(params, kernel, train, valid);
    let run = record(params, kernel, train, valid);
    let model_of =
        |chosen: &Chosen| model_from_beta(base.task, kernel, base.bias, train, &chosen.beta);
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
            (fp, &run),
            su.y.len(),
            su.kern.rows(),
            su.kern.is_linear().then(|| su.kern.width()),
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
        let p = base.at_c(c);
        let cur = std::mem::replace(&mut current, Current::Standard);
        let stopped = |runs: Vec<Run>,
                       chosen: Option<Chosen>,
                       warm: Option<Vec<f64>>,
                       cur,
                       beta: Vec<f64>| {
            let ck = RobustCheckpoint {
                fingerprint: fp,
                run: Some(run.clone()),
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
                end: RunEnd::Interrupted,
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
            let model = model_of(&chosen)?;
            Ok(Fit {
                model,
                report: Selection {
                    task: base.task,
                    kind,
                    runs,
                    chosen,
                    seconds: seconds_before + start.elapsed().as_secs_f64(),
                    status: Status::Interrupted,
                },
                checkpoint: Some(ck),
            })
        };
        // The standard SVM (unless the run is continued past it).
        let std_sol = match &cur {
            Current::Standard => match standard_solution(&mut su, &p, warm.as_deref(), obs)? {
                Some(s) => Some(s),
                None => {
                    let beta = warm.clone().unwrap_or_else(|| vec![0.0; su.y.len()]);
                    return stopped(runs, chosen, warm, Current::Standard, beta);
                }
            },
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
                let (path, stop) = path_from_standard(&p, &mut su, from, t0, obs);
                if let Some(res) = stop {
                    let beta = path.final_beta.clone();
                    return stopped(runs, chosen, warm, Current::Path(Box::new(res)), beta);
                }
                let last = (path.nodes.len().saturating_sub(1), path.final_beta.clone());
                (
                    Run {
                        c,
                        end: path.end,
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
                let (cp, stop) = cccp_from_standard(&p, grid, &mut su, from, t0, obs)?;
                if let Some(res) = stop {
                    let beta = res.beta.clone();
                    return stopped(runs, chosen, warm, Current::Cccp(res), beta);
                }
                let last_beta = cp.nodes.last().and_then(|n| n.beta.clone());
                let last = (
                    cp.nodes.len().saturating_sub(1),
                    last_beta.unwrap_or_default(),
                );
                (
                    Run {
                        c,
                        end: if cp.unconverged == 0 {
                            RunEnd::Completed
                        } else {
                            RunEnd::Unconverged
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
    let status = runs
        .iter()
        .map(|r| r.end.status())
        .find(|s| *s != Status::Converged)
        .unwrap_or(Status::Converged);
    Ok(Fit {
        model: model_of(&chosen)?,
        report: Selection {
            task: base.task,
            kind,
            runs,
            chosen,
            seconds: seconds_before + start.elapsed().as_secs_f64(),
            status,
        },
        checkpoint: None,
    })
}

/// The settings (`marginkit robust`'s flags; the library's names where there is no flag) and
/// the data of a selection, for [`RobustCheckpoint`]'s run record: every parameter
/// [`fingerprint`] covers. `kernel` is the selection's kernel resolved against `train`.
pub(crate) fn record(
    params: &SelectValidParams,
    kernel: KernelSpec,
    train: &Dataset,
    valid: Option<&Dataset>,
) -> RunRecord {
    let p = &params.robust;
    let list = |v: &[f64]| {
        v.iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let opt = |v: Option<f64>, none: &str| v.map_or_else(|| none.to_owned(), |x| x.to_string());
    let mut r = RunRecord::new();
    r.set(
        "task",
        match p.task {
            Task::Svc => "svc",
            Task::Svr => "svr",
        },
    )
    .set(
        "--path",
        match p.kind {
            PathKind::Theta => "theta",
            PathKind::S => "s",
        },
    )
    .set("-c", list(&params.cs))
    .kernel(&kernel)
    .set("-B", opt(p.bias, "-1"))
    .set("-e", p.solver_tol)
    .set("--s", opt(p.s_fixed, "default"))
    .set("--s-end", p.s_end_fraction)
    .set(
        "--max-events",
        p.max_events
            .map_or_else(|| "default".to_owned(), |m| m.to_string()),
    );
    match &params.method {
        Method::Path => r.set("--cccp", "no"),
        Method::Cccp(g) => r.set("--cccp", "yes").set("--grid", list(g)),
    };
    r.set("ridge", p.ridge)
        .set("check_tol", p.check_tol)
        .set("keep_solutions", p.keep_solutions)
        .set("c", p.c)
        .data("training data", train);
    // Recorded for the block engine only, as in the fingerprint.
    if p.qp_engine == SvmSolver::Block {
        r.set("--solver", SvmSolver::Block.as_str());
    }
    if let Some(v) = valid {
        r.data("validation data", v);
    }
    r
}

/// Fingerprint of a selection's data and result-changing parameters.
/// `kernel` is the selection's kernel resolved against `train`.
pub(crate) fn fingerprint(
    params: &SelectValidParams,
    kernel: KernelSpec,
    train: &Dataset,
    valid: Option<&Dataset>,
) -> u64 {
    let p = &params.robust;
    let (method, cs) = (&params.method, &params.cs);
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<u64>>();
    let mut h = Fnv::new();
    let desc = format!(
        "robust|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{}|{:?}|{:?}|{:?}",
        p.task,
        kernel,
        p.s_fixed.map(f64::to_bits),
        p.s_end_fraction.to_bits(),
        p.bias.map(f64::to_bits),
        p.max_events,
        p.solver_tol.to_bits(),
        p.ridge.to_bits(),
        p.check_tol.to_bits(),
        p.kind,
        p.keep_solutions,
        match method {
            Method::Path => None,
            Method::Cccp(g) => Some(bits(g)),
        },
        bits(cs),
        p.c.to_bits(),
    );
    h.bytes(desc.as_bytes());
    // The block engine reaches the standard SVMs and CCCP subproblems to the tolerance, not the
    // pair engine's bits (`smo` and `auto` run the pair engine, so they share the fingerprint).
    if p.qp_engine == SvmSolver::Block {
        h.bytes(b"|block");
    }
    hash_dataset(&mut h, train);
    match valid {
        Some(v) => {
            h.u64(1);
            hash_dataset(&mut h, v);
        }
        None => h.u64(0),
    }
    h.0
}
