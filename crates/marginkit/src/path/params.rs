//! The path's parameters: the grid of C values, the engine and the screening rule, in the
//! one parameter idiom ([`PathParams`] builder, [`PathParams::check`], [`PathValidParams`]).

use std::time::Duration;

use crate::error::ParamError;
use crate::kernel::KernelSpec;
use crate::screening::Rule;
use crate::solver::{Shrinking, SvmSolver};

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
    /// The QP engine of the kernel path's solves (`--solver`; the linear path runs DCD).
    pub(crate) qp_engine: SvmSolver,
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
    /// Default smallest `C` of the log grid (`2^-5`).
    pub const DEFAULT_C_MIN: f64 = 0.03125;
    /// Default largest `C` of the log grid (`2^10`).
    pub const DEFAULT_C_MAX: f64 = 1024.0;
    /// Default number of points of the log grid.
    pub const DEFAULT_POINTS: usize = 31;

    /// A kernel path with defaults: 31-point log grid on `[2^-5, 2^10]` (the `DEFAULT_*`
    /// constants), IT screening, tolerance 1e-3, shrinking on, 200 MB cache.
    pub fn kernel(kernel: KernelSpec) -> Self {
        Self(PathValidParams {
            engine: Engine::Kernel(kernel),
            qp_engine: SvmSolver::Auto,
            bias: None,
            grid: Grid::Log {
                c_min: Self::DEFAULT_C_MIN,
                c_max: Self::DEFAULT_C_MAX,
                points: Self::DEFAULT_POINTS,
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
    /// Sets the QP engine of the kernel path's solves (default [`SvmSolver::Auto`], the pair
    /// SMO); the block engine is for kernel paths only.
    pub fn qp_engine(mut self, e: SvmSolver) -> Self {
        self.0.qp_engine = e;
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
    /// `c_min > c_max`, an invalid kernel, or the block engine on a linear path.
    pub fn check(self) -> Result<PathValidParams, ParamError> {
        crate::error::positive("tol", self.0.tol)?;
        if let Some(b) = self.0.bias {
            crate::error::positive("bias", b)?;
        }
        if self.0.cache_bytes == 0 {
            return Err(ParamError::Incompatible("the cache size must be > 0"));
        }
        if self.0.engine == Engine::Linear && self.0.qp_engine == SvmSolver::Block {
            return Err(ParamError::Incompatible(
                "path: --solver block (the block working-set SMO) solves kernel paths; a linear path (--linear) is solved by dual coordinate descent",
            ));
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
    /// The QP engine of the kernel path's solves.
    pub fn qp_engine(&self) -> SvmSolver {
        self.qp_engine
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
