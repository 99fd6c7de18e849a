//! The box-constrained QP every method reduces to, and the engines that solve it.
//!
//! ```text
//! min_a  1/2 a'Qa + p'a   s.t.  y'a = delta   (only with Equality::Sum),   0 <= a_i <= u_i
//! ```
//! with per-sample upper bounds `u_i` (which may be `+inf`, e.g. for L2-loss duals) and
//! optionally variables fixed at 0 or at `u_i` (screening, homotopy). `Q` is supplied separately:
//! by a [`crate::kernel::qmatrix::QMatrix`] for [`smo`], implicitly as `Y X X' Y + D` for [`dcd`].

pub mod block;
pub mod dcd;
pub mod engine;
mod hot;
pub mod kkt;
pub(crate) mod lp;
pub mod newton;
pub mod smo;

pub use engine::SvmSolver;

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
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
    /// Iteration limit (`None`: the engine's default, LIBSVM's max(1e7, 100 n) for SMO). The
    /// block engine ([`block`]) tests it between outer iterations and may pass it by less than
    /// one outer iteration's steps.
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
    /// The status byte of the state files (0 converged, 1 iteration limit, 2 time limit,
    /// 3 interrupted).
    pub(crate) fn code(self) -> u8 {
        match self {
            Status::Converged => 0,
            Status::MaxIterations => 1,
            Status::TimeLimit => 2,
            Status::Interrupted => 3,
        }
    }

    /// The status of a [`Status::code`] byte.
    pub(crate) fn from_code(c: u8) -> Option<Status> {
        Some(match c {
            0 => Status::Converged,
            1 => Status::MaxIterations,
            2 => Status::TimeLimit,
            3 => Status::Interrupted,
            _ => return None,
        })
    }

    /// The worse of two statuses (converged < iteration limit < time limit < interrupted): the
    /// status of a fit made of several solves.
    pub fn worst(self, other: Status) -> Status {
        let rank = |s: Status| match s {
            Status::Converged => 0,
            Status::MaxIterations => 1,
            Status::TimeLimit => 2,
            Status::Interrupted => 3,
        };
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }
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
    /// Duality gap at the returned point (see [`kkt`]: minimized over the equality multipliers,
    /// from the solver's final, fully reconstructed gradient; DCD: primal minus dual).
    pub gap: f64,
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

/// Receives progress reports (every few thousand iterations) and may stop the solve.
pub trait Observer {
    /// Called periodically from the solver loop. `Break` stops the solve, which returns its
    /// current point with [`Status::Interrupted`].
    fn on_iter(&mut self, _stats: &IterStats) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
}

/// An observer that never stops anything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoObserver;

impl Observer for NoObserver {}

/// A cancellation flag shared between a solve and whoever wants to stop it (a signal handler,
/// another thread, a GUI button): an [`Observer`] that asks the solver to stop once the flag is
/// set.
///
/// The engines consult their observer every [`REPORT_EVERY_HINT`] iterations or so (SMO: every
/// 1000 pair updates; DCD: after every pass), so a stop takes effect within one such interval;
/// the solve then returns its current feasible point with [`Status::Interrupted`] (and, where the
/// caller asked for one, a snapshot to resume from). Cloning shares the flag. There is no global
/// state: each fit gets the flag it is given, so independent fits in one process are stopped
/// independently.
///
/// ```
/// use std::ops::ControlFlow;
/// use marginkit::solver::{Cancel, IterStats, Observer};
/// let cancel = Cancel::new();
/// let mut obs = cancel.clone();
/// let stats = IterStats { iterations: 1000, max_violation: 1.0, active: 10 };
/// assert_eq!(obs.on_iter(&stats), ControlFlow::Continue(()));
/// cancel.cancel(); // e.g. from a SIGINT handler: only an atomic store
/// assert_eq!(obs.on_iter(&stats), ControlFlow::Break(()));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Cancel {
    flag: Arc<AtomicBool>,
}

/// How often (in iterations) the SMO engine consults its observer.
pub const REPORT_EVERY_HINT: u64 = 1000;

impl Cancel {
    /// A fresh, unset flag.
    pub fn new() -> Self {
        Self::default()
    }
    /// Wraps an existing flag (e.g. one a signal handler sets).
    pub fn from_flag(flag: Arc<AtomicBool>) -> Self {
        Self { flag }
    }
    /// The shared flag.
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.flag)
    }
    /// Requests a stop (async-signal-safe: one atomic store).
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst);
    }
    /// Whether a stop was requested.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }
}

impl Observer for Cancel {
    fn on_iter(&mut self, _stats: &IterStats) -> ControlFlow<()> {
        if self.is_cancelled() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

/// Two observers in sequence: both see every report; the solve stops if either asks to.
#[derive(Debug)]
pub struct Both<A, B>(pub A, pub B);

impl<A: Observer, B: Observer> Observer for Both<A, B> {
    fn on_iter(&mut self, stats: &IterStats) -> ControlFlow<()> {
        let a = self.0.on_iter(stats);
        let b = self.1.on_iter(stats);
        if a.is_break() || b.is_break() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

impl<O: Observer + ?Sized> Observer for &mut O {
    fn on_iter(&mut self, stats: &IterStats) -> ControlFlow<()> {
        (**self).on_iter(stats)
    }
}

/// A duality gap relative to the objective, `gap / max(|objective|, 1)`: what "converged"
/// means does not depend on the scale of C or of the data. The floor of 1 keeps an objective
/// near 0 from inflating it.
///
/// ```
/// use marginkit::solver::relative_gap;
/// assert_eq!(relative_gap(1508.0, -38508.0), 1508.0 / 38508.0);
/// assert_eq!(relative_gap(1e-4, 1e-9), 1e-4);
/// ```
pub fn relative_gap(gap: f64, objective: f64) -> f64 {
    gap / objective.abs().max(1.0)
}
