//! The report of one kernel-SVM subproblem: shared by the fit ([`super::train`]) and its
//! checkpoint ([`super::checkpoint`]), which stores the reports of finished subproblems.

use crate::solver::{SolveInfo, Status};

/// What one binary (or regression / one-class) solve reported.
#[derive(Debug, Clone, PartialEq)]
pub struct SubproblemReport {
    /// The pair of class labels (classification), positive first.
    pub classes: Option<(f64, f64)>,
    /// Dual objective in LIBSVM's (minimization) sign convention.
    pub objective: f64,
    /// rho of the decision function.
    pub rho: f64,
    /// Solver iterations.
    pub iterations: u64,
    /// How the solve ended.
    pub status: Status,
    /// Final maximal KKT violation reported by the engine.
    pub max_violation: f64,
    /// Duality gap at the returned point (from the engine's final gradient; see
    /// [`crate::solver::kkt`]).
    pub gap: f64,
    /// Support vectors of this subproblem.
    pub n_sv: usize,
    /// Bounded support vectors (at their upper bound).
    pub n_bsv: usize,
}

impl SubproblemReport {
    /// The report of a solve that ended as `info` says, with `n_sv` support vectors of which
    /// `n_bsv` are at their upper bound (no class pair yet).
    pub(crate) fn of(info: &SolveInfo, n_sv: usize, n_bsv: usize) -> Self {
        Self {
            classes: None,
            objective: info.objective,
            rho: info.rho,
            iterations: info.iterations,
            status: info.status,
            max_violation: info.max_violation,
            gap: info.gap,
            n_sv,
            n_bsv,
        }
    }

    /// The report of a subproblem a stopped fit did not reach (zero coefficients).
    pub(crate) fn not_reached(classes: Option<(f64, f64)>) -> Self {
        Self {
            classes,
            objective: 0.0,
            rho: 0.0,
            iterations: 0,
            status: Status::Interrupted,
            max_violation: f64::INFINITY,
            gap: f64::INFINITY,
            n_sv: 0,
            n_bsv: 0,
        }
    }
}
