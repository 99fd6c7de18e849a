//! The box-constrained QP every method reduces to, and the engines that solve it.
//!
//! ```text
//! min_a  1/2 a'Qa + p'a   s.t.  y'a = delta   (only with Equality::Sum),   0 <= a_i <= u_i
//! ```
//! with per-sample upper bounds `u_i` (which may be `+inf`, e.g. for L2-loss duals) and
//! optionally variables fixed at 0 or at `u_i` (screening, homotopy). `Q` is supplied separately:
//! by a [`crate::kernel::qmatrix::QMatrix`] for [`smo`], implicitly as `Y X X' Y + D` for [`dcd`].

pub mod dcd;
pub mod kkt;
pub mod smo;
pub mod smo_nu;

use std::time::Duration;

/// Whether the QP has the equality constraint `y'a = delta` (a model with a bias term).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Equality {
    /// No equality constraint (no bias, or a bias folded into the features).
    None,
    /// `sum_i y_i a_i = delta`.
    Sum {
        /// The right-hand side.
        delta: f64,
    },
}

/// A variable fixed before the solve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarFix {
    /// Free to move in `[0, u_i]`.
    Free,
    /// Fixed at 0.
    AtZero,
    /// Fixed at `u_i`.
    AtUpper,
}

/// The QP data other than `Q`.
#[derive(Debug, Clone, Copy)]
pub struct BoxQp<'a> {
    /// Linear term `p`.
    pub p: &'a [f64],
    /// Signs `y_i` in {-1, +1}, used by the equality constraint and the working-set rule.
    pub y: &'a [i8],
    /// Upper bounds `u_i >= 0` (`f64::INFINITY` allowed).
    pub upper: &'a [f64],
    /// The equality constraint, if any.
    pub equality: Equality,
    /// Variables fixed before the solve, if any (same length as `p`).
    pub fixed: Option<&'a [VarFix]>,
}

/// Whether the solver may shrink (temporarily drop variables at their bounds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shrinking {
    /// Shrink (LIBSVM `-h 1`, the default).
    On,
    /// Never shrink (`-h 0`).
    Off,
}

/// Stopping rule and limits shared by the engines.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SolverSettings {
    /// Stopping tolerance on the maximal KKT violation (LIBSVM `-e`, default 1e-3).
    pub tol: f64,
    /// Shrinking heuristic.
    pub shrinking: Shrinking,
    /// Iteration limit (`None`: the engine's default, LIBSVM's max(1e7, 100 n) for SMO).
    pub max_iter: Option<u64>,
    /// Wall-clock limit.
    pub time_limit: Option<Duration>,
}

impl Default for SolverSettings {
    fn default() -> Self {
        Self {
            tol: 1e-3,
            shrinking: Shrinking::On,
            max_iter: None,
            time_limit: None,
        }
    }
}

/// How a solve ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The stopping rule was met.
    Converged,
    /// The iteration limit was hit first.
    MaxIterations,
    /// The time limit was hit first.
    TimeLimit,
    /// An observer asked to stop.
    Interrupted,
}

impl Status {
    /// Lower-case name used in reports and model files.
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Converged => "converged",
            Status::MaxIterations => "max_iterations",
            Status::TimeLimit => "time_limit",
            Status::Interrupted => "interrupted",
        }
    }
}

/// What a solve returns besides the solution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SolveInfo {
    /// How it ended.
    pub status: Status,
    /// Iterations (SMO: pair updates; DCD: outer passes).
    pub iterations: u64,
    /// `1/2 a'Qa + p'a` at the solution.
    pub objective: f64,
    /// The threshold (LIBSVM's rho, `b = -rho`); 0 without the equality constraint.
    pub rho: f64,
    /// Maximal KKT violation at the end (the engine's own measure).
    pub max_violation: f64,
}

/// Progress reported to an [`Observer`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IterStats {
    /// Iterations so far.
    pub iterations: u64,
    /// Current maximal violation.
    pub max_violation: f64,
    /// Number of active (unshrunk) variables.
    pub active: usize,
}

/// What an observer wants after a progress report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// Go on.
    Continue,
    /// Stop now and return the current point with [`Status::Interrupted`].
    Stop,
}

/// Receives progress reports (every few thousand iterations) and may stop the solve.
pub trait Observer {
    /// Called periodically from the solver loop.
    fn on_iter(&mut self, _stats: &IterStats) -> Control {
        Control::Continue
    }
}

/// An observer that never stops anything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoObserver;

impl Observer for NoObserver {}
