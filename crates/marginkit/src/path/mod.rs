//! The regularization path over C for the SVM without bias, with warm starts and safe sample
//! screening (Ogawa et al. 2014, Algorithm 1).
//!
//! # Problem
//!
//! For each `C` of an increasing grid, the dual of the bias-free hinge-loss SVM
//! ```text
//! min_a 1/2 a'Qa - 1'a   s.t. 0 <= a_i <= C,        Q_ij = y_i y_j K(x_i, x_j)
//! ```
//! solved by [`smo`] (kernel, `Equality::None`, one [`SvcQ`] and its cache reused along the path)
//! or [`dcd`] (linear). A bias is available only as the paper's augmentation: a constant feature
//! `B` (`K + B^2`), see [`PathParams::bias`].
//!
//! # Algorithm, per C
//!
//! 1. **Screen** ([`crate::screening`]) from the previous point (`C_ref`): samples provably in R
//!    are fixed at 0, in L at `C` ([`VarFix`]); the solver folds them into `p`.
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

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

pub mod checkpoint;
pub use checkpoint::PathCheckpoint;
use checkpoint::RefState;

use crate::data::Dataset;
use crate::error::{CheckpointError, DataError, FitError, ParamError};
use crate::fit::{Control, Fit, Report};
use crate::kernel::cache::CacheStats;
use crate::kernel::qmatrix::{QMatrix, SvcQ};
use crate::kernel::KernelSpec;
use crate::screening::{self, KernelSketch, LinearDesignRef, LinearSketch, Rule, RuleInputs};
use crate::solver::dcd::{self, LinearDesign, SvcDual};
use crate::solver::{
    smo, BoxQp, Equality, IterStats, Observer, Shrinking, SolverSettings, Status, VarFix,
};
use crate::svm::linear::{LinearModel, LinearSolver};
use crate::svm::model::SvmModel;
use crate::svm::SvmType;

/// The most values a [`Grid::Log`] may ask for (each is a solve; more is an error, not an
/// allocation that fails).
pub const MAX_GRID_POINTS: usize = 100_000;

/// The C values of a path.
#[derive(Debug, Clone, PartialEq)]
pub enum Grid {
    /// `points` values log-spaced from `c_min` to `c_max` (both included).
    Log {
        /// Smallest C.
        c_min: f64,
        /// Largest C.
        c_max: f64,
        /// Number of values (`1..=`[`MAX_GRID_POINTS`]).
        points: usize,
    },
    /// Explicit values (sorted ascending, duplicates dropped).
    List(Vec<f64>),
    /// The epsilon-path from Lemma 9's `C_min` up to `c_max` (see the module docs).
    Epsilon {
        /// Relative dual-objective tolerance (the paper's 1e-3).
        eps: f64,
        /// Largest C (the paper's 1e4).
        c_max: f64,
        /// Safety cap on the number of points.
        max_points: usize,
    },
}

/// Kernel model (SMO) or linear model (DCD).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Engine {
    /// A kernel (resolved parameters) solved by SMO without the equality constraint.
    Kernel(KernelSpec),
    /// The linear kernel solved by dual coordinate descent.
    Linear,
}

/// How the linear engine starts each point's solve (the kernel engine always starts from the
/// previous solution, see `warm_start`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LinearStart {
    /// The default: the secant through the two previous solutions where it starts lower on the
    /// dual objective than the scaled point, else the scaled point (see [`LinearStart::Secant`]).
    #[default]
    Auto,
    /// The previous solution scaled by `C / C_ref` (bounded variables stay at the bound).
    Scaled,
    /// The secant `a1 + t (a1 - a0)` through the two previous solutions (exact on a stretch of
    /// the path where the free, zero and bounded sets do not change); the scaled point where
    /// fewer than two previous solutions exist.
    Secant,
    /// From zero at every point, as a solver training a single C does (LIBLINEAR; the paper's
    /// Table III): screened variables start at their fixed values, the others at 0. The rules
    /// still take the previous point as their reference. For benchmarks of one screened solve
    /// against one unscreened solve; a path is faster warm.
    Cold,
}

/// Checked parameters of a path, the only form [`fit`] accepts. Made by
/// [`PathParams::check`]; read through the getters.
#[derive(Debug, Clone, PartialEq)]
pub struct PathValidParams {
    /// Kernel or linear engine.
    pub(crate) engine: Engine,
    /// Constant feature `B > 0` appended to every sample (kernel `K + B^2`; a regularized bias).
    pub(crate) bias: Option<f64>,
    /// The C values.
    pub(crate) grid: Grid,
    /// The screening rule, or none.
    pub(crate) screening: Option<Rule>,
    /// Solver tolerance (SMO: max |projected gradient|; DCD: projected-gradient span).
    pub(crate) tol: f64,
    /// The solver's own shrinking.
    pub(crate) shrinking: Shrinking,
    /// Kernel cache size in bytes.
    pub(crate) cache_bytes: u64,
    /// Iteration limit per solve (`None`: the engine's default).
    pub(crate) max_iter: Option<u64>,
    /// Time limit per solve.
    pub(crate) time_limit: Option<Duration>,
    /// Seed of the DCD permutations.
    pub(crate) seed: u64,
    /// How the linear engine starts each solve (kernel paths accept only the default).
    pub(crate) linear_start: LinearStart,
    /// Keep every point's solution (`alpha`, and `w` for linear paths) in the result, as
    /// [`PathResult::svm_model`] and [`PathResult::linear_model`] need. Without it the points
    /// carry empty vectors (memory `O(n)` instead of `O(n x points)`).
    pub(crate) keep_solutions: bool,
}

/// Unchecked parameters of a path (a consuming builder); [`PathParams::check`] validates
/// them.
#[derive(Debug, Clone, PartialEq)]
pub struct PathParams(PathValidParams);

impl PathParams {
    /// A kernel path with defaults: 31-point log grid on `[2^-5, 2^10]`, IT screening,
    /// tolerance 1e-3, shrinking on, 200 MB cache.
    pub fn kernel(kernel: KernelSpec) -> Self {
        Self(PathValidParams {
            engine: Engine::Kernel(kernel),
            bias: None,
            grid: Grid::Log {
                c_min: 2f64.powi(-5),
                c_max: 2f64.powi(10),
                points: 31,
            },
            screening: Some(Rule::It),
            tol: 1e-3,
            shrinking: Shrinking::On,
            cache_bytes: 200 << 20,
            max_iter: None,
            time_limit: None,
            seed: 0,
            linear_start: LinearStart::Auto,
            keep_solutions: true,
        })
    }
    /// A linear path with the same defaults (tolerance 0.1, LIBLINEAR's).
    pub fn linear() -> Self {
        Self(PathValidParams {
            engine: Engine::Linear,
            tol: 0.1,
            ..Self::kernel(KernelSpec::Linear).0
        })
    }
    /// Sets the grid.
    pub fn grid(mut self, g: Grid) -> Self {
        self.0.grid = g;
        self
    }
    /// Sets the screening rule.
    pub fn screening(mut self, r: Option<Rule>) -> Self {
        self.0.screening = r;
        self
    }
    /// Sets the bias feature.
    pub fn bias(mut self, b: Option<f64>) -> Self {
        self.0.bias = b;
        self
    }
    /// Sets the tolerance.
    pub fn tol(mut self, t: f64) -> Self {
        self.0.tol = t;
        self
    }
    /// Sets shrinking.
    pub fn shrinking(mut self, s: Shrinking) -> Self {
        self.0.shrinking = s;
        self
    }
    /// Sets the cache size.
    pub fn cache_bytes(mut self, b: u64) -> Self {
        self.0.cache_bytes = b;
        self
    }
    /// Sets the iteration limit per solve.
    pub fn max_iter(mut self, m: Option<u64>) -> Self {
        self.0.max_iter = m;
        self
    }
    /// Sets the time limit per solve.
    pub fn time_limit(mut self, t: Option<Duration>) -> Self {
        self.0.time_limit = t;
        self
    }
    /// Sets the seed.
    pub fn seed(mut self, s: u64) -> Self {
        self.0.seed = s;
        self
    }
    /// Sets the linear engine's start of each solve.
    pub fn linear_start(mut self, s: LinearStart) -> Self {
        self.0.linear_start = s;
        self
    }
    /// Keeps (or drops) every point's solution.
    pub fn keep_solutions(mut self, k: bool) -> Self {
        self.0.keep_solutions = k;
        self
    }

    /// Validates the parameters.
    ///
    /// # Errors
    /// [`ParamError`] for a non-positive or non-finite tolerance, bias, C or eps, an empty grid,
    /// `c_min > c_max`, or an invalid kernel.
    pub fn check(self) -> Result<PathValidParams, ParamError> {
        crate::error::positive("tol", self.0.tol)?;
        if let Some(b) = self.0.bias {
            crate::error::positive("bias", b)?;
        }
        if self.0.cache_bytes == 0 {
            return Err(ParamError::Incompatible("the cache size must be > 0"));
        }
        if let Engine::Kernel(k) = self.0.engine {
            k.check()?;
            if self.0.linear_start != LinearStart::Auto {
                return Err(ParamError::Incompatible(
                    "the start choice (scaled, secant, cold) is for the linear engine only",
                ));
            }
        }
        match &self.0.grid {
            Grid::Log {
                c_min,
                c_max,
                points,
            } => {
                crate::error::positive("c_min", *c_min)?;
                crate::error::positive("c_max", *c_max)?;
                if c_min > c_max {
                    return Err(ParamError::Incompatible("c_min must be <= c_max"));
                }
                if *points == 0 {
                    return Err(ParamError::Incompatible(
                        "the grid needs at least one point",
                    ));
                }
                if *points > MAX_GRID_POINTS {
                    return Err(ParamError::OutOfRange {
                        name: "grid points",
                        value: *points as f64,
                        range: "1..=100000",
                    });
                }
            }
            Grid::List(v) => {
                if v.is_empty() {
                    return Err(ParamError::Incompatible("the C list is empty"));
                }
                for &c in v {
                    crate::error::positive("C", c)?;
                }
            }
            Grid::Epsilon {
                eps,
                c_max,
                max_points,
            } => {
                crate::error::positive("eps", *eps)?;
                crate::error::positive("c_max", *c_max)?;
                if *max_points == 0 {
                    return Err(ParamError::Incompatible("max_points must be >= 1"));
                }
            }
        }
        Ok(self.0)
    }
}

impl PathValidParams {
    /// Kernel or linear engine.
    pub fn engine(&self) -> Engine {
        self.engine
    }
    /// The constant feature `B` appended to every sample, if any.
    pub fn bias(&self) -> Option<f64> {
        self.bias
    }
    /// The C values.
    pub fn grid(&self) -> &Grid {
        &self.grid
    }
    /// The screening rule, or none.
    pub fn screening(&self) -> Option<Rule> {
        self.screening
    }
    /// Solver tolerance.
    pub fn tol(&self) -> f64 {
        self.tol
    }
    /// The solver's own shrinking.
    pub fn shrinking(&self) -> Shrinking {
        self.shrinking
    }
    /// Kernel cache size in bytes.
    pub fn cache_bytes(&self) -> u64 {
        self.cache_bytes
    }
    /// Iteration limit per solve (`None`: the engine's default).
    pub fn max_iter(&self) -> Option<u64> {
        self.max_iter
    }
    /// Time limit per solve.
    pub fn time_limit(&self) -> Option<Duration> {
        self.time_limit
    }
    /// Seed of the DCD permutations.
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// How the linear engine starts each solve.
    pub fn linear_start(&self) -> LinearStart {
        self.linear_start
    }
    /// Whether every point's solution is kept in the result.
    pub fn keep_solutions(&self) -> bool {
        self.keep_solutions
    }
}

/// One point of the path.
#[derive(Debug, Clone, PartialEq)]
pub struct PathPoint {
    /// C.
    pub c: f64,
    /// Dual objective `1/2 a'Qa - 1'a` (LIBSVM's sign convention) over all samples.
    pub objective: f64,
    /// Support vectors (`a_i > 0`).
    pub n_sv: usize,
    /// Bounded support vectors (`a_i = C`).
    pub n_bsv: usize,
    /// Samples the rule screened into R (`a_i = 0`).
    pub screened_r: usize,
    /// Samples the rule screened into L (`a_i = C`).
    pub screened_l: usize,
    /// (Screened samples that passed the KKT re-check) / (variables at a bound at the solution);
    /// 0 without screening or without bounded variables.
    pub screening_rate: f64,
    /// Time of the rule (sketch update and bounds).
    pub rule_seconds: f64,
    /// Time of the solves, the full gradient and the KKT re-check.
    pub solve_seconds: f64,
    /// Screened samples freed by the KKT re-check.
    pub kkt_violators_freed: usize,
    /// Solver runs (1 + re-solves after freeing violators).
    pub solves: usize,
    /// Iterations summed over the solver runs.
    pub iterations: u64,
    /// Status of the last solver run.
    pub status: Status,
    /// Largest KKT violation of the returned point on the full problem (the solver's measure:
    /// SMO max |PG|, DCD the span of PG).
    pub max_violation: f64,
    /// The violation the solver itself reported for its last run (over the unscreened variables).
    /// DCD measures during a pass, so its end value may exceed `tol`; the re-check guarantees
    /// `max_violation <= max(tol, solver_violation)`.
    pub solver_violation: f64,
    /// Accuracy on the validation set, if one was given.
    pub valid_accuracy: Option<f64>,
    /// The dual solution (original sample order); empty without
    /// [`PathParams::keep_solutions`].
    pub alpha: Vec<f64>,
    /// Primal weights (linear engine, the bias-feature weight last; `None` without
    /// [`PathParams::keep_solutions`]).
    pub w: Option<Vec<f64>>,
}

/// A computed path.
#[derive(Debug, Clone, PartialEq)]
pub struct PathResult {
    /// One entry per C, ascending.
    pub points: Vec<PathPoint>,
    /// The two class labels; samples of `labels[0]` have `y = +1`.
    pub labels: [f64; 2],
    /// Lemma 9's `C_min = 1 / max(Q1)` when it was computed (linear engine, epsilon grid).
    pub c_min_trivial: Option<f64>,
    /// The engine used.
    pub engine: Engine,
    /// The bias feature used.
    pub bias: Option<f64>,
    /// Number of features of the training data.
    pub n_features: usize,
}

/// How a path run went.
#[derive(Debug, Clone, PartialEq)]
pub struct PathReport {
    /// [`Status::Interrupted`] when the observer stopped the path (the result then holds the
    /// points finished before); otherwise the worst status of the points' last solves.
    pub status: Status,
    /// Wall time of the whole run.
    pub total_seconds: f64,
    /// Kernel cache statistics at the end (kernel engine).
    pub cache: Option<CacheStats>,
}

impl Report for PathReport {
    fn status(&self) -> Status {
        self.status
    }
}

/// The data of a path: the training set (exactly two classes, no sample weights) and,
/// optionally, a validation set on which each point is evaluated.
pub type PathData<'a> = crate::data::TrainValid<'a>;

impl PathResult {
    /// Index of the point with the best validation accuracy (smallest C among ties).
    pub fn best_by_validation(&self) -> Option<usize> {
        let mut best: Option<(usize, f64)> = None;
        for (k, p) in self.points.iter().enumerate() {
            if let Some(a) = p.valid_accuracy {
                if best.is_none_or(|(_, b)| a > b) {
                    best = Some((k, a));
                }
            }
        }
        best.map(|(k, _)| k)
    }

    /// The kernel model of point `k` as an ordinary C-SVC [`SvmModel`] (`rho = 0` without a bias;
    /// with the bias feature `B`, `rho = -B^2 sum_i y_i a_i`). `data` is the training set.
    ///
    /// # Errors
    /// [`DataError::Shape`] when `k` is out of range, `data` is not the training set or the path
    /// is linear.
    pub fn svm_model(&self, k: usize, data: &Dataset) -> Result<SvmModel, DataError> {
        let p = self.point(k)?;
        if p.alpha.is_empty() {
            return Err(DataError::Shape {
                what: "kept solution (PathParams::keep_solutions was off)",
                expected: data.len(),
                found: 0,
            });
        }
        kernel_model(self.engine, self.bias, self.labels, &p.alpha, data)
    }

    /// The linear model of point `k` (linear engine) as a LIBLINEAR-style [`LinearModel`]
    /// (`-s 3`, L1-loss dual SVC), with the bias feature if one was used.
    ///
    /// # Errors
    /// [`DataError::Shape`] when `k` is out of range or the path is a kernel path.
    pub fn linear_model(&self, k: usize) -> Result<LinearModel, DataError> {
        let p = self.point(k)?;
        let w = p.w.clone().ok_or(DataError::Shape {
            what: "weights of a kernel path (use svm_model)",
            expected: 1,
            found: 0,
        })?;
        LinearModel::from_parts(
            LinearSolver::L1LossSvcDual,
            self.labels.to_vec(),
            self.n_features,
            self.bias,
            vec![w],
        )
    }

    fn point(&self, k: usize) -> Result<&PathPoint, DataError> {
        self.points.get(k).ok_or(DataError::Shape {
            what: "path point index",
            expected: self.points.len(),
            found: k,
        })
    }
}

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
        let expected = fp();
        if ck.fingerprint != expected {
            return Err(CheckpointError::Fingerprint {
                file: checkpoint::FILE,
                expected,
                found: ck.fingerprint,
            }
            .into());
        }
        let d = train.n_features() + usize::from(params.bias.is_some());
        ck.check_fits(params.engine == Engine::Linear, train.len(), d)?;
    }
    let labels = [labels[0], labels[1]];
    let y: Vec<i8> = train
        .y
        .iter()
        .map(|&v| if v == labels[0] { 1 } else { -1 })
        .collect();
    let mut ctx = Ctx {
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
    match params.engine {
        Engine::Kernel(kernel) => {
            let base = SvcQ::new(&train.x, kernel, &ctx.y, params.cache_bytes as usize)?;
            match params.bias {
                None => {
                    let mut q = base;
                    kernel_path(
                        &mut ctx,
                        &mut q,
                        &mut result,
                        on_point,
                        obs,
                        (resume, &mut ck),
                    )?;
                    cache = Some(q.cache_stats());
                }
                Some(b) => {
                    let mut q = Augmented::new(base, &ctx.y, b * b);
                    kernel_path(
                        &mut ctx,
                        &mut q,
                        &mut result,
                        on_point,
                        obs,
                        (resume, &mut ck),
                    )?;
                    cache = Some(q.cache_stats());
                }
            }
        }
        Engine::Linear => linear_path(&mut ctx, &mut result, on_point, obs, (resume, &mut ck))?,
    }
    if let Some(c) = &mut ck {
        c.fingerprint = fp();
        c.c_min_trivial = result.c_min_trivial;
    }
    Ok((result, cache, ck))
}

/// The resume input and the checkpoint output of one engine run.
type Resumption<'a, 'b> = (Option<&'a PathCheckpoint>, &'b mut Option<PathCheckpoint>);

/// Asks the observer between points whether to stop (iteration 0 of no solve).
fn stopped(obs: &mut dyn Observer, n: usize) -> bool {
    let s = IterStats {
        iterations: 0,
        max_violation: f64::INFINITY,
        active: n,
    };
    obs.on_iter(&s).is_break()
}

/// The kernel engine's checkpoint before a point (fingerprint and `C_min` are set by the
/// caller).
fn kernel_checkpoint(
    points: &[PathPoint],
    reference: Option<Reference>,
    sketch: &KernelSketch,
    perm: Vec<usize>,
) -> PathCheckpoint {
    let (s, h, flips) = sketch.parts();
    PathCheckpoint {
        fingerprint: 0,
        linear: false,
        c_min_trivial: None,
        points: points.to_vec(),
        reference: reference.map(|r| RefState {
            c: r.c,
            alpha: r.alpha,
            g: r.g,
            w: None,
        }),
        previous: None,
        sketch_s: s.to_vec(),
        sketch_a: h.to_vec(),
        sketch_b: Vec::new(),
        flips: flips as u64,
        perm,
    }
}

/// The linear engine's checkpoint before a point.
fn linear_checkpoint(
    points: &[PathPoint],
    reference: Option<(Reference, Vec<f64>)>,
    previous: Option<(f64, Vec<f64>, Vec<f64>)>,
    sketch: &LinearSketch,
) -> PathCheckpoint {
    let (s, zs, h) = sketch.parts();
    PathCheckpoint {
        fingerprint: 0,
        linear: true,
        c_min_trivial: None,
        points: points.to_vec(),
        reference: reference.map(|(r, w)| RefState {
            c: r.c,
            alpha: r.alpha,
            g: r.g,
            w: Some(w),
        }),
        previous: previous.map(|(c, alpha, w)| RefState {
            c,
            alpha,
            g: Vec::new(),
            w: Some(w),
        }),
        sketch_s: s.to_vec(),
        sketch_a: zs.to_vec(),
        sketch_b: h.to_vec(),
        flips: 0,
        perm: Vec::new(),
    }
}

/// Brings a fresh (identity-order) `q` into the order `perm` (position `k` holds sample
/// `perm[k]`; `perm` is a checked permutation).
fn permute_to<Q: QMatrix>(q: &mut Q, perm: &[usize]) {
    let n = perm.len();
    let mut cur: Vec<usize> = (0..n).collect();
    let mut pos: Vec<usize> = (0..n).collect();
    for k in 0..n {
        let j = pos[perm[k]];
        if j != k {
            q.swap_index(k, j);
            let (a, b) = (cur[k], cur[j]);
            cur.swap(k, j);
            pos[a] = j;
            pos[b] = k;
        }
    }
}

/// What both engines share.
struct Ctx<'a> {
    params: &'a PathValidParams,
    train: &'a Dataset,
    valid: Option<&'a Dataset>,
    labels: [f64; 2],
    y: Vec<i8>,
    settings: SolverSettings,
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

/// The reference solution and what the rules read from it.
struct Reference {
    c: f64,
    alpha: Vec<f64>,
    /// Margins `g = Qa` over all samples.
    g: Vec<f64>,
}

/// The warm start at `c` from the solution at `c_ref`: the solution itself (clipped to `[0, c]`,
/// a no-op on an increasing path). The scaled point `(c / c_ref) a` (which keeps bounded
/// variables at the bound) was measured slower: 30% more SMO iterations on digits and
/// breast_cancer, on both the log grid and the epsilon-path.
fn warm_start(alpha: &[f64], _c_ref: f64, c: f64) -> Vec<f64> {
    alpha.iter().map(|&a| a.clamp(0.0, c)).collect()
}

/// The linear engine's warm start at `c` from the solution at `c_ref`: the scaled point
/// `(c / c_ref) a`, clipped to `[0, c]` (a no-op on an increasing path). It scales `w` by the
/// same factor; on the hinge-loss dual `w` grows about in proportion to `C` once the data
/// cannot be separated, and DCD, which moves one variable at a time, reaches the new optimum
/// far sooner from there. Measured on the 31-point log grid (2^-5..2^10, tol 0.1): digits_oe
/// takes 47,436 passes in total against 110,265 from the unscaled start, and the eight points
/// with C >= 90 that run into the 10,000-pass limit from the unscaled start all converge
/// (3,185-5,296 passes). (The kernel path keeps [`warm_start`]: there the scaled point was
/// measured slower.)
fn warm_start_scaled(alpha: &[f64], c_ref: f64, c: f64) -> Vec<f64> {
    let s = c / c_ref;
    alpha.iter().map(|&a| (a * s).clamp(0.0, c)).collect()
}

/// The linear engine's warm start at `c` from the two previous solutions `(c0, a0, w0)` and
/// `(c1, a1, w1)`, `c0 < c1 < c`: the secant `a1 + t (a1 - a0)`, `t = (c - c1) / (c1 - c0)`,
/// clipped to `[0, c]`, with `w = w1 + t (w1 - w0)` corrected by the clipped rows.
///
/// Why: on a stretch of the path where the sets of free, zero and bounded variables do not
/// change, the bias-free dual solution is affine in `C` (the free block solves
/// `Q_FF a_F = 1 - C Q_FL 1`), so the secant is exact there, while the scaled start `(c / c1) a1`
/// is off by the constant part of `a_F`. Bounded variables (`a = C` at both points) land on the
/// new bound, zeros stay at zero. It is only a starting point: the solve runs to the same
/// tolerance from wherever it starts.
fn warm_start_secant(
    design: &LinearDesignRef<'_>,
    (c0, a0, w0): (f64, &[f64], &[f64]),
    (c1, a1, w1): (f64, &[f64], &[f64]),
    c: f64,
) -> (Vec<f64>, Vec<f64>) {
    let t = (c - c1) / (c1 - c0);
    let mut w: Vec<f64> = w1
        .iter()
        .zip(w0)
        .map(|(v1, v0)| v1 + t * (v1 - v0))
        .collect();
    let alpha = a1
        .iter()
        .zip(a0)
        .enumerate()
        .map(|(i, (&x1, &x0))| {
            let e = x1 + t * (x1 - x0);
            let a = e.clamp(0.0, c);
            // Rounding-level clips (a bounded variable at c1 and c0 lands on c up to an ulp)
            // need no row operation: the solver rebuilds `w` from `alpha` at its end.
            if (a - e).abs() > 1e-12 * c {
                design.z_axpy(i, a - e, &mut w);
            }
            a
        })
        .collect();
    (alpha, w)
}

/// `1/2 |w|^2 - 1'a`, the bias-free hinge-loss dual at `a` with `w = Z'a`.
fn dual_objective(alpha: &[f64], w: &[f64]) -> f64 {
    0.5 * w.iter().map(|v| v * v).sum::<f64>() - alpha.iter().sum::<f64>()
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
fn free_violators(
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
fn accuracy(pred: &[f64], truth: &[f64]) -> f64 {
    if truth.is_empty() {
        return 0.0;
    }
    let ok = pred.iter().zip(truth).filter(|(a, b)| a == b).count();
    ok as f64 / truth.len() as f64
}

fn kernel_path<Q: QMatrix>(
    ctx: &mut Ctx<'_>,
    q: &mut Q,
    result: &mut PathResult,
    on_point: &mut dyn FnMut(&PathPoint),
    obs: &mut dyn Observer,
    (resume, ck_out): Resumption<'_, '_>,
) -> Result<(), FitError> {
    let n = ctx.train.len();
    let params = ctx.params;
    let p = vec![-1.0; n];
    let mut reference: Option<Reference> = None;
    let mut grid = fixed_grid(&params.grid);
    let mut sketch = KernelSketch::new(n);
    // `q` stays in the solver's order between solves: position k holds sample perm[k], and
    // pos is the inverse (sample -> position).
    let mut perm: Vec<usize> = (0..n).collect();
    let mut pos: Vec<usize> = (0..n).collect();
    // Lemma 9: for the epsilon path (the only grid that needs C_min; it costs n columns).
    if grid.is_none() {
        let mut q1 = vec![0.0; n];
        for j in 0..n {
            let col = q.column(j, n);
            for (s, &v) in q1.iter_mut().zip(col) {
                *s += f64::from(v);
            }
        }
        let m = q1.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        if m > 0.0 && (1.0 / m).is_finite() {
            let c0 = 1.0 / m;
            result.c_min_trivial = Some(c0);
            reference = Some(Reference {
                c: c0,
                alpha: vec![c0; n],
                g: q1.iter().map(|v| c0 * v).collect(),
            });
        } else {
            // Q1 <= 0: a = C 1 is optimal for every C (digest sec. 3.1); a two-point path.
            reference = Some(Reference {
                c: 1.0,
                alpha: vec![1.0; n],
                g: q1,
            });
            grid = Some(vec![1.0, params_c_max(&params.grid)]);
        }
    }
    let mut k = 0usize;
    if let Some(ck) = resume {
        // Checked by `check_fits`: lengths and the permutation.
        reference = ck.reference.as_ref().map(|r| Reference {
            c: r.c,
            alpha: r.alpha.clone(),
            g: r.g.clone(),
        });
        sketch =
            KernelSketch::from_parts(ck.sketch_s.clone(), ck.sketch_a.clone(), ck.flips as usize);
        permute_to(q, &ck.perm);
        perm.clone_from(&ck.perm);
        for (k, &o) in perm.iter().enumerate() {
            pos[o] = k;
        }
        for p in &ck.points {
            on_point(p);
        }
        result.points = ck.points.clone();
        k = ck.points.len();
    }
    'points: while let Some(c) = next_c(grid.as_deref(), k, &params.grid, reference.as_ref()) {
        k += 1;
        // The state this point starts from, kept until the point is done (a checkpoint of an
        // interrupted point restarts it from here).
        let before = (sketch.clone(), perm.clone());
        // A stop requested between points (a solve shorter than the solver's reporting period
        // never asks the observer) ends the path here, before this point.
        if stopped(obs, n) {
            *ck_out = Some(kernel_checkpoint(
                &result.points,
                reference.take(),
                &before.0,
                before.1,
            ));
            break;
        }
        // 1. Screening.
        let t_rule = Instant::now();
        let mut fix = vec![VarFix::Free; n];
        let (mut n_r, mut n_l) = (0, 0);
        if let (Some(rule), Some(r)) = (params.screening, reference.as_ref()) {
            if c > r.c {
                if rule.needs_s() {
                    let mut view = InOrder::new(&mut *q, &perm, &pos);
                    sketch.update(&mut view, &r.g, r.c, c);
                }
                let (a2, hinge) = screening::reference_scalars(&r.alpha, &r.g);
                let (ah, sh, cnt) = sketch.scalars(&r.alpha);
                let mut qd = vec![0.0; n];
                for (&o, &d) in perm.iter().zip(q.diag()) {
                    qd[o] = d;
                }
                let s = screening::screen(
                    rule,
                    &RuleInputs {
                        c_ref: r.c,
                        c,
                        g: &r.g,
                        qd: &qd,
                        h: rule.needs_s().then(|| sketch.h()),
                        ref_norm2: a2,
                        ref_dot_s: ah,
                        s_norm2: sh,
                        s_count: cnt,
                        hinge_ref: hinge,
                    },
                );
                n_r = s.n_r;
                n_l = s.n_l;
                fix = s.fixes();
            }
        }
        let rule_seconds = t_rule.elapsed().as_secs_f64();
        // 2-3. Solve, re-check, re-solve.
        let t_solve = Instant::now();
        let mut alpha: Vec<f64> = match reference.as_ref() {
            Some(r) => warm_start(&r.alpha, r.c, c),
            None => vec![0.0; n],
        };
        let upper = vec![c; n];
        let (mut freed, mut solves, mut iterations) = (0usize, 0usize, 0u64);
        let (status, g, sv) = loop {
            let qp = BoxQp {
                p: &p,
                y: &ctx.y,
                upper: &upper,
                equality: Equality::None,
                fixed: Some(&fix),
            };
            // `q` is left in the solver's order (perm updated, also on error).
            let info = smo::solve_permuted(q, &qp, &mut alpha, &ctx.settings, obs, &mut perm);
            for (k, &o) in perm.iter().enumerate() {
                pos[o] = k;
            }
            let info = info?;
            if info.status == Status::Interrupted {
                // Out at once: no O(n x nSV) margin pass for a point that is not finished (it is
                // solved again from its start on resume, so it is not reported).
                *ck_out = Some(kernel_checkpoint(
                    &result.points,
                    reference.take(),
                    &before.0,
                    before.1,
                ));
                break 'points;
            }
            solves += 1;
            iterations += info.iterations;
            let g = full_margins(q, &alpha, &perm, &pos);
            let f = free_violators(&mut fix, &g, &alpha, c, params.tol, false);
            freed += f;
            if f == 0 || info.status != Status::Converged {
                break (info.status, g, info.max_violation);
            }
        };
        let solve_seconds = t_solve.elapsed().as_secs_f64();
        let point = finish_point(
            ctx,
            c,
            alpha,
            None,
            &g,
            (n_r, n_l, freed, solves, iterations, status, sv),
            (rule_seconds, solve_seconds),
            false,
            |alpha| kernel_model(params.engine, params.bias, ctx.labels, alpha, ctx.train),
        )?;
        on_point(&point);
        let mut point = point;
        let alpha = if params.keep_solutions {
            point.alpha.clone()
        } else {
            std::mem::take(&mut point.alpha)
        };
        reference = Some(Reference { c, alpha, g });
        result.points.push(point);
    }
    Ok(())
}

fn params_c_max(g: &Grid) -> f64 {
    match g {
        Grid::Epsilon { c_max, .. } => *c_max,
        Grid::Log { c_max, .. } => *c_max,
        Grid::List(v) => v.iter().cloned().fold(0.0, f64::max),
    }
}

/// The kernel C-SVC model of the dual solution `alpha` (see [`PathResult::svm_model`]).
#[allow(clippy::needless_range_loop)]
fn kernel_model(
    engine: Engine,
    bias: Option<f64>,
    labels: [f64; 2],
    alpha: &[f64],
    data: &Dataset,
) -> Result<SvmModel, DataError> {
    let kernel = match engine {
        Engine::Kernel(k) => k,
        Engine::Linear => KernelSpec::Linear,
    };
    if engine == Engine::Linear && bias.is_some() {
        return Err(DataError::Shape {
            what: "bias feature of a linear path (use linear_model)",
            expected: 0,
            found: 1,
        });
    }
    if data.len() != alpha.len() {
        return Err(DataError::Shape {
            what: "training samples",
            expected: alpha.len(),
            found: data.len(),
        });
    }
    let mut sv_idx = Vec::new();
    let mut n_sv = vec![0usize; 2];
    for (c, &label) in labels.iter().enumerate() {
        for i in 0..data.len() {
            if data.y[i] == label && alpha[i] > 0.0 {
                sv_idx.push(i);
                n_sv[c] += 1;
            }
        }
    }
    let sign = |i: usize| if data.y[i] == labels[0] { 1.0 } else { -1.0 };
    let coef: Vec<f64> = sv_idx.iter().map(|&i| sign(i) * alpha[i]).collect();
    let b2 = bias.map_or(0.0, |b| b * b);
    let rho = -b2 * coef.iter().sum::<f64>();
    Ok(SvmModel {
        svm_type: SvmType::CSvc,
        kernel,
        labels: labels.to_vec(),
        n_sv,
        sv: data.x.select_rows(&sv_idx),
        sv_indices: Some(sv_idx),
        sv_coef: vec![coef],
        rho: vec![rho],
        prob_a: Vec::new(),
        prob_b: Vec::new(),
        sv_norms: Vec::new(),
    }
    .with_norms())
}

/// Builds the point: objective, counts, rate, validation accuracy.
#[allow(clippy::too_many_arguments)]
fn finish_point(
    ctx: &Ctx<'_>,
    c: f64,
    alpha: Vec<f64>,
    w: Option<Vec<f64>>,
    g: &[f64],
    (n_r, n_l, freed, solves, iterations, status, solver_violation): (
        usize,
        usize,
        usize,
        usize,
        u64,
        Status,
        f64,
    ),
    (rule_seconds, solve_seconds): (f64, f64),
    span: bool,
    kernel_model: impl FnOnce(&[f64]) -> Result<SvmModel, DataError>,
) -> Result<PathPoint, FitError> {
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
                None => kernel_model(&alpha)?.predict(&v.x)?,
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

/// `g = Qa` over all samples (original order) from the columns of the nonzero entries; position
/// `k` of `q` holds sample `perm[k]`, `pos` is the inverse. Each `g_i` sums over `j` ascending
/// whatever the order of `q`.
fn full_margins<Q: QMatrix>(q: &mut Q, alpha: &[f64], perm: &[usize], pos: &[usize]) -> Vec<f64> {
    let n = alpha.len();
    // Accumulated in q's order (sequential), scattered once.
    let mut gq = vec![0.0; n];
    for (j, &a) in alpha.iter().enumerate() {
        if a != 0.0 {
            let col = q.column(pos[j], n);
            for (gi, &v) in gq.iter_mut().zip(col) {
                *gi += a * f64::from(v);
            }
        }
    }
    let mut g = vec![0.0; n];
    for (&o, &v) in perm.iter().zip(&gq) {
        g[o] = v;
    }
    g
}

/// A permuted [`QMatrix`] seen in the original sample order (for the sketch update, which reads
/// whole columns by sample index). Position `k` of `q` holds sample `perm[k]`; `pos` is the
/// inverse. Each column costs one gather of `n` entries.
struct InOrder<'a, Q> {
    q: &'a mut Q,
    perm: &'a [usize],
    pos: &'a [usize],
    /// The diagonal in the original order.
    diag: Vec<f64>,
    buf: Vec<f32>,
    buf2: Vec<f32>,
}

impl<'a, Q: QMatrix> InOrder<'a, Q> {
    fn new(q: &'a mut Q, perm: &'a [usize], pos: &'a [usize]) -> Self {
        let n = q.n();
        let mut diag = vec![0.0; n];
        for (&o, &d) in perm.iter().zip(q.diag()) {
            diag[o] = d;
        }
        Self {
            q,
            perm,
            pos,
            diag,
            buf: vec![0.0; n],
            buf2: vec![0.0; n],
        }
    }
    fn gather(q: &mut Q, perm: &[usize], at: usize, out: &mut [f32]) {
        let col = q.column(at, perm.len());
        for (&o, &v) in perm.iter().zip(col) {
            out[o] = v;
        }
    }
}

impl<Q: QMatrix> QMatrix for InOrder<'_, Q> {
    fn n(&self) -> usize {
        self.q.n()
    }
    fn diag(&self) -> &[f64] {
        &self.diag
    }
    fn column(&mut self, i: usize, len: usize) -> &[f32] {
        Self::gather(self.q, self.perm, self.pos[i], &mut self.buf);
        &self.buf[..len]
    }
    fn pair(&mut self, i: usize, j: usize, len: usize) -> (&[f32], &[f32]) {
        Self::gather(self.q, self.perm, self.pos[i], &mut self.buf);
        Self::gather(self.q, self.perm, self.pos[j], &mut self.buf2);
        (&self.buf[..len], &self.buf2[..len])
    }
    fn swap_index(&mut self, i: usize, j: usize) {
        // A view in the original order has no order of its own to change: swap the samples'
        // positions in `q` would break `perm`, and nothing that reads the view swaps.
        debug_assert!(false, "InOrder is a read-only view (swap_index({i}, {j}))");
    }
    fn cache_stats(&self) -> CacheStats {
        self.q.cache_stats()
    }
}

/// Forwards a `dyn Observer` to the generic DCD entry point.
struct Fwd<'a>(&'a mut dyn Observer);

impl Observer for Fwd<'_> {
    fn on_iter(&mut self, s: &IterStats) -> ControlFlow<()> {
        self.0.on_iter(s)
    }
}

fn linear_path(
    ctx: &mut Ctx<'_>,
    result: &mut PathResult,
    on_point: &mut dyn FnMut(&PathPoint),
    obs: &mut dyn Observer,
    (resume, ck_out): Resumption<'_, '_>,
) -> Result<(), FitError> {
    let n = ctx.train.len();
    let params = ctx.params;
    let design = LinearDesignRef {
        x: &ctx.train.x,
        y: &ctx.y,
        bias: params.bias,
    };
    let qd = design.sq_norms();
    // The weight vector, the screening sketch's z_s and the reference point's weights.
    ctx.train
        .x
        .check_dense_rows("the linear path's weight and screening vectors", 3)?;
    let p = vec![-1.0; n];
    let zero = vec![0.0; n];
    let mut sketch = LinearSketch::new(&design);
    let dim = LinearDesign {
        x: &ctx.train.x,
        bias: params.bias,
    }
    .dim();
    let mut fix = vec![VarFix::Free; n];
    // Lemma 9 (cheap for linear models): Q1 = Z (Z'1).
    let ones = vec![1.0; n];
    let sum_z = design.weights(&ones);
    let q1 = design.margins(&sum_z);
    let m = q1.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let mut grid = fixed_grid(&params.grid);
    let mut reference: Option<(Reference, Vec<f64>)> = None;
    // The point before the reference, `(C, alpha, w)`, for the secant warm start.
    let mut previous: Option<(f64, Vec<f64>, Vec<f64>)> = None;
    if m > 0.0 && (1.0 / m).is_finite() {
        let c0 = 1.0 / m;
        result.c_min_trivial = Some(c0);
        let w: Vec<f64> = sum_z.iter().map(|v| c0 * v).collect();
        reference = Some((
            Reference {
                c: c0,
                alpha: vec![c0; n],
                g: q1.iter().map(|v| c0 * v).collect(),
            },
            w,
        ));
    } else if grid.is_none() {
        grid = Some(vec![1.0, params_c_max(&params.grid)]);
    }
    let mut k = 0usize;
    if let Some(ck) = resume {
        // Checked by `check_fits`: the lengths.
        reference = ck.reference.as_ref().map(|r| {
            (
                Reference {
                    c: r.c,
                    alpha: r.alpha.clone(),
                    g: r.g.clone(),
                },
                r.w.clone().unwrap_or_default(),
            )
        });
        previous = ck
            .previous
            .as_ref()
            .map(|r| (r.c, r.alpha.clone(), r.w.clone().unwrap_or_default()));
        // `w = Z' alpha` must hold (the warm-started DCD trusts it): a crafted, resealed file
        // whose weights disagree with its coefficients is an error, not a wrong path.
        // So must `0 <= alpha <= C` (the scaled start clips alpha without correcting w).
        let consistent = |c: f64, alpha: &[f64], w: &[f64]| {
            if !(c.is_finite() && c > 0.0 && alpha.iter().all(|&a| (0.0..=c).contains(&a))) {
                return false;
            }
            let r = design.weights(alpha);
            let scale = 1.0 + r.iter().map(|v| v.abs()).sum::<f64>();
            let diff: f64 = r.iter().zip(w).map(|(a, b)| (a - b).abs()).sum();
            diff <= 1e-8 * scale
        };
        let refs = reference.iter().map(|(r, w)| (r.c, &r.alpha, w));
        if !refs
            .chain(previous.iter().map(|(c, a, w)| (*c, a, w)))
            .all(|(c, a, w)| consistent(c, a, w))
        {
            return Err(CheckpointError::Mismatch {
                file: checkpoint::FILE,
                reason: "coefficients out of bounds or not matching their weights",
            }
            .into());
        }
        sketch = LinearSketch::from_parts(
            ck.sketch_s.clone(),
            ck.sketch_a.clone(),
            ck.sketch_b.clone(),
        );
        for p in &ck.points {
            on_point(p);
        }
        result.points = ck.points.clone();
        k = ck.points.len();
    }
    'points: while let Some(c) = next_c(
        grid.as_deref(),
        k,
        &params.grid,
        reference.as_ref().map(|(r, _)| r),
    ) {
        k += 1;
        // The sketch this point starts from (see the kernel engine).
        let before = sketch.clone();
        if stopped(obs, n) {
            *ck_out = Some(linear_checkpoint(
                &result.points,
                reference.take(),
                previous.take(),
                &before,
            ));
            break;
        }
        let t_rule = Instant::now();
        fix.iter_mut().for_each(|f| *f = VarFix::Free);
        let (mut n_r, mut n_l) = (0, 0);
        if let (Some(rule), Some((r, w_ref))) = (params.screening, reference.as_ref()) {
            if c > r.c && w_ref.len() == dim {
                // Only z_s is updated here; `h_i = z_i'z_s` is computed inside the rule for the
                // samples BT1 leaves undecided (IT's verdicts are unchanged, see `screen_fixes`).
                if rule.needs_s() {
                    sketch.update_zs(&design, &r.g, r.c, c);
                }
                let (a2, hinge) = screening::reference_scalars(&r.alpha, &r.g);
                let (wz, zz, cnt) = sketch.scalars(w_ref);
                (n_r, n_l) = screening::screen_fixes(
                    rule,
                    &RuleInputs {
                        c_ref: r.c,
                        c,
                        g: &r.g,
                        qd: &qd,
                        h: None,
                        ref_norm2: a2,
                        ref_dot_s: wz,
                        s_norm2: zz,
                        s_count: cnt,
                        hinge_ref: hinge,
                    },
                    |i| sketch.h_at(&design, i),
                    &mut fix,
                );
            }
        }
        let rule_seconds = t_rule.elapsed().as_secs_f64();
        let t_solve = Instant::now();
        // The warm start, its screened variables already at their values, and its `w` without a
        // pass over the data: the reference's `w` scaled like `alpha`, plus the rows whose value
        // the screening changed (the solver rebuilds `w` from `alpha` at its end as always).
        let (mut alpha, mut w_start): (Vec<f64>, Vec<f64>) = match reference.as_ref() {
            Some((r, w_ref)) if params.linear_start != LinearStart::Cold => {
                let s = c / r.c;
                let w0 = if w_ref.len() == dim {
                    w_ref.iter().map(|v| v * s).collect()
                } else {
                    Vec::new()
                };
                let scaled = (warm_start_scaled(&r.alpha, r.c, c), w0);
                match previous.as_ref() {
                    Some((c0, a0, w0))
                        if params.linear_start != LinearStart::Scaled
                            && w_ref.len() == dim
                            && w0.len() == dim
                            && *c0 < r.c
                            && r.c < c =>
                    {
                        let sec =
                            warm_start_secant(&design, (*c0, a0, w0), (r.c, &r.alpha, w_ref), c);
                        // Auto: the secant where it starts lower on the dual objective (an
                        // O(n + d) comparison: both candidates carry their w). It loses where
                        // the two previous solutions differ along directions the tolerance
                        // leaves loose (degenerate faces), which the secant amplifies.
                        let better =
                            dual_objective(&sec.0, &sec.1) < dual_objective(&scaled.0, &scaled.1);
                        if params.linear_start == LinearStart::Secant || better {
                            sec
                        } else {
                            scaled
                        }
                    }
                    _ => scaled,
                }
            }
            _ => (vec![0.0; n], vec![0.0; dim]),
        };
        if w_start.len() == dim {
            for (i, f) in fix.iter().enumerate() {
                let target = match f {
                    VarFix::Free => continue,
                    VarFix::AtZero => 0.0,
                    VarFix::AtUpper => c,
                };
                let delta = target - alpha[i];
                if delta != 0.0 {
                    design.z_axpy(i, delta, &mut w_start);
                    alpha[i] = target;
                }
            }
        } else {
            // A resumed reference without weights: one rebuild.
            for (i, f) in fix.iter().enumerate() {
                match f {
                    VarFix::Free => {}
                    VarFix::AtZero => alpha[i] = 0.0,
                    VarFix::AtUpper => alpha[i] = c,
                }
            }
            w_start = design.weights(&alpha);
        }
        let upper = vec![c; n];
        let (mut freed, mut solves, mut iterations) = (0usize, 0usize, 0u64);
        let (status, g, w, sv) = loop {
            let prob = SvcDual {
                design: LinearDesign {
                    x: &ctx.train.x,
                    bias: params.bias,
                },
                qp: BoxQp {
                    p: &p,
                    y: &ctx.y,
                    upper: &upper,
                    equality: Equality::None,
                    fixed: Some(&fix),
                },
                diag_shift: &zero,
            };
            let res = dcd::solve_svc_warm(
                &prob,
                &ctx.settings,
                params.seed,
                &mut alpha,
                dcd::SvcWarm {
                    qd: &qd,
                    w: &w_start,
                },
                &mut Fwd(obs),
            )?;
            if res.info.status == Status::Interrupted {
                // As the kernel engine: the unfinished point is not reported.
                *ck_out = Some(linear_checkpoint(
                    &result.points,
                    reference.take(),
                    previous.take(),
                    &before,
                ));
                break 'points;
            }
            solves += 1;
            iterations += res.info.iterations;
            // Margins z_i'w from the solver's last pass (the same arithmetic as
            // `design.margins(&res.w)`, without another pass over the data).
            let g: Vec<f64> = res
                .xw
                .iter()
                .zip(&ctx.y)
                .map(|(&v, &yi)| f64::from(yi) * v)
                .collect();
            let f = free_violators(&mut fix, &g, &alpha, c, params.tol, true);
            freed += f;
            if f == 0 || res.info.status != Status::Converged {
                break (res.info.status, g, res.w, res.info.max_violation);
            }
            // The freed variables keep their values: `w` is the solver's (rebuilt) one.
            w_start = res.w;
        };
        let solve_seconds = t_solve.elapsed().as_secs_f64();
        let wn2: f64 = w.iter().map(|v| v * v).sum();
        let mut point = finish_point(
            ctx,
            c,
            alpha,
            Some(w.clone()),
            &g,
            (n_r, n_l, freed, solves, iterations, status, sv),
            (rule_seconds, solve_seconds),
            true,
            |_| unreachable!("linear points carry weights"),
        )?;
        // 1/2 |w|^2 from the primal weights (the same value as a'g / 2 up to rounding).
        point.objective = 0.5 * wn2 - point.alpha.iter().sum::<f64>();
        on_point(&point);
        let alpha = if params.keep_solutions {
            point.alpha.clone()
        } else {
            point.w = None;
            std::mem::take(&mut point.alpha)
        };
        previous = reference.take().map(|(r, w)| (r.c, r.alpha, w));
        reference = Some((Reference { c, alpha, g }, w));
        result.points.push(point);
    }
    Ok(())
}

/// `Q + B^2 y y'`: the kernel `K + B^2` of a constant feature `B` appended to every sample.
struct Augmented<Q> {
    inner: Q,
    y: Vec<f64>,
    b2: f64,
    diag: Vec<f64>,
    buf_a: Vec<f32>,
    buf_b: Vec<f32>,
}

impl<Q: QMatrix> Augmented<Q> {
    fn new(inner: Q, y: &[i8], b2: f64) -> Self {
        let diag = inner.diag().iter().map(|d| d + b2).collect();
        let n = inner.n();
        Self {
            inner,
            y: y.iter().map(|&v| f64::from(v)).collect(),
            b2,
            diag,
            buf_a: vec![0.0; n],
            buf_b: vec![0.0; n],
        }
    }
}

fn add_outer(out: &mut [f32], col: &[f32], yi: f64, y: &[f64], b2: f64) {
    for ((o, &v), &yk) in out.iter_mut().zip(col).zip(y) {
        *o = (f64::from(v) + yi * yk * b2) as f32;
    }
}

impl<Q: QMatrix> QMatrix for Augmented<Q> {
    fn n(&self) -> usize {
        self.inner.n()
    }
    fn diag(&self) -> &[f64] {
        &self.diag
    }
    fn column(&mut self, i: usize, len: usize) -> &[f32] {
        let col = self.inner.column(i, len);
        add_outer(&mut self.buf_a[..len], col, self.y[i], &self.y, self.b2);
        &self.buf_a[..len]
    }
    fn pair(&mut self, i: usize, j: usize, len: usize) -> (&[f32], &[f32]) {
        let (ci, cj) = self.inner.pair(i, j, len);
        add_outer(&mut self.buf_a[..len], ci, self.y[i], &self.y, self.b2);
        add_outer(&mut self.buf_b[..len], cj, self.y[j], &self.y, self.b2);
        (&self.buf_a[..len], &self.buf_b[..len])
    }
    fn swap_index(&mut self, i: usize, j: usize) {
        self.inner.swap_index(i, j);
        self.y.swap(i, j);
        self.diag.swap(i, j);
    }
    fn cache_stats(&self) -> CacheStats {
        self.inner.cache_stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
