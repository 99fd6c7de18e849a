//! Aggregate and iterative disaggregate (AID): exact LAD regression and SVM by solving small
//! clustered problems, and an S3VM heuristic.
//!
//! # Problem and algorithm (Park & Klabjan 2016, Algorithm 1)
//!
//! Partition the rows `I = {1..n}` into clusters `C^t = {C_k^t}`, replace each cluster by its
//! centroid, solve the problem weighted by `|C_k|` on the centroids (the *aggregated problem*,
//! objective `F^t`), then make one pass over all rows: evaluate the aggregated solution on the
//! full data (`E^t`) and test the model's optimality condition cluster by cluster. Clusters whose
//! rows do not all lie on one "side" of the solution are split by side; the others are kept.
//! Repeat until no cluster is split (then the aggregated solution is optimal for the full
//! problem) or the gap is small.
//!
//! | paper                 | code                                  |
//! |-----------------------|---------------------------------------|
//! | `C_k^t`, `K^t`        | [`cluster::Clusters`]                 |
//! | `r^t = |K^t|/n`       | [`IterRecord::r`]                     |
//! | `F^t`                 | [`IterRecord::lower_bound`] (a certified lower bound, see below) |
//! | `E^t`, `E^best`       | [`IterRecord::objective`], [`IterRecord::best_objective`] |
//! | gap                   | [`IterRecord::gap`] `= (E^best - max_s F^s) / E^best` (§3.1's denominator) |
//!
//! The per-model parts (aggregated problem, side codes, full-data objective) implement
//! [`AidProblem`]: [`svm`] (linear and kernel, Props 3-4, Appendix B) and [`s3vm`] (heuristic:
//! Prop. 5 is false, see that module); their loop is [`run`]. [`lad`] (Props 1-2) runs its own
//! form of the loop, [`lad::shard`], whose partition is a cluster id per row and whose sums go
//! through a reduction hook, so that the same code fits rows held by one process or spread
//! over many; it uses this module's stopping rule, gap and iteration records, and the same
//! checkpoint format.
//!
//! # Stopping rule
//!
//! Stop when every cluster is uniform (the certificate of Props 1 and 3: then `E^t = F^t`), or
//! when the relative gap is at most `gap_tol`, or at the iteration or time limit. The lower bound
//! is the largest `F^s` seen; with exact aggregated solves it is non-decreasing by itself
//! (Props 2 and 4); taking the maximum keeps the reported gap valid when a solve is inexact.
//!
//! **Certificate tolerance.** When every cluster is uniform, Props 1/3 give `E^t = F^t` in exact
//! arithmetic; in floating point `E^t` (a sum over `n` rows) and the lower bound (an aggregated
//! dual value, exact vertex certificate or the interior point's dual value, which stops at a
//! relative duality gap of `1e-11`) differ by rounding. The run ends with [`Termination::Optimal`]
//! when the relative gap is at most `max(gap_tol, CERT_GAP_RTOL)`, `CERT_GAP_RTOL = 1e-10`: the
//! returned objective is then within `1e-10` (relative) of a valid lower bound, i.e. of the full
//! optimum. A uniform partition with a larger gap (or no lower bound, as for S3VM) stops with
//! [`Termination::NoSplit`]: nothing is left to split but the bound does not certify optimality
//! (the gap is in the last [`IterRecord`]).
//!
//! # Cost per iteration
//!
//! One aggregated solve on `|K^t|` rows, one pass over the `n` rows (prediction, side code,
//! loss; parallel in fixed chunks) and one pass to recompute the cluster sums (parallel over
//! clusters). Memory: the data, a permutation of the rows, one byte per row and the dense
//! `|K^t| x m` aggregated matrix.
//!
//! # Deviations and corrections
//!
//! * The gap's denominator is `E^best` as in §3.1 (Table 10 of the paper divides by `F^t`).
//! * The side tests use one small tolerance for both the test and the split (digest P5), so a
//!   violating cluster always splits into non-empty children.
//! * Results do not depend on the thread count: every parallel sum runs in fixed chunks added in
//!   order, and every per-cluster sum runs over the cluster's rows in their stored order.
//!
//! Citation: Y. W. Park, D. Klabjan, "An Aggregate and Iterative Disaggregate Algorithm with
//! Proven Optimality in Machine Learning" (arXiv preprint, February 2016).

pub mod checkpoint;
pub mod cluster;
mod ksums;
pub mod lad;
pub mod s3vm;
mod state;
pub mod svm;

use std::time::{Duration, Instant};

use checkpoint::LoopState;
use cluster::Clusters;

pub use checkpoint::{AidCheckpoint, AidModel};
pub use state::IterRecord;

/// Relative gap accepted as rounding when every cluster is uniform (see the module docs).
pub const CERT_GAP_RTOL: f64 = 1e-10;

use crate::error::{FitError, ParamError};
use crate::fit::Control;
use crate::solver::{IterStats, Observer, Status};

/// What a model contributes to the AID loop.
pub trait AidProblem {
    /// The aggregated (and full-data) solution, e.g. `(beta)` or `(w, b)`.
    type Solution: Clone;

    /// Solves the aggregated problem on the current clusters. The inner solver polls `obs`
    /// (SMO every 1000 pair updates, DCD every pass, branch and bound every node); `Ok(None)`
    /// when it asked to stop (the partial solve is discarded).
    ///
    /// # Errors
    /// Whatever the underlying solver reports.
    fn solve_aggregated(
        &mut self,
        clusters: &Clusters,
        previous: Option<(&Self::Solution, &[usize])>,
        obs: &mut dyn Observer,
    ) -> Result<Option<Aggregated<Self::Solution>>, FitError>;

    /// One pass over all rows: writes each row's side code (`< 8`) into `side` and returns the
    /// objective of `sol` on the full data (`E^t`).
    fn evaluate(&self, sol: &Self::Solution, side: &mut [u8]) -> f64;

    /// Number of rows.
    fn n_rows(&self) -> usize;
}

/// An aggregated solve's result.
#[derive(Debug, Clone)]
pub struct Aggregated<S> {
    /// A lower bound on the full problem's optimum (`F^t`; `None` when the model has none, S3VM).
    pub lower_bound: Option<f64>,
    /// The aggregated problem's objective at `solution`.
    pub objective: f64,
    /// The solution.
    pub solution: S,
}

/// Limits of the AID loop, part of every AID method's parameters (set through their builders,
/// checked by their `check`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AidSettings {
    pub(crate) gap_tol: f64,
    pub(crate) max_iter: usize,
    pub(crate) time_limit: Option<Duration>,
}

impl Default for AidSettings {
    fn default() -> Self {
        Self {
            gap_tol: Self::DEFAULT_GAP_TOL,
            max_iter: Self::DEFAULT_MAX_ITER,
            time_limit: None,
        }
    }
}

impl AidSettings {
    /// Default relative gap tolerance (the paper's).
    pub const DEFAULT_GAP_TOL: f64 = 1e-4;
    /// Default most aggregated solves.
    pub const DEFAULT_MAX_ITER: usize = 1000;

    /// Stop when `(E^best - F) / E^best <= gap_tol` (0: only the optimality certificate stops).
    pub fn gap_tol(&self) -> f64 {
        self.gap_tol
    }
    /// Most aggregated solves.
    pub fn max_iter(&self) -> usize {
        self.max_iter
    }
    /// Wall-clock limit for the loop.
    pub fn time_limit(&self) -> Option<Duration> {
        self.time_limit
    }
    /// A finite gap tolerance `>= 0` and at least one iteration.
    pub(crate) fn check(&self) -> Result<(), ParamError> {
        crate::error::non_negative("gap tolerance", self.gap_tol)?;
        if self.max_iter == 0 {
            return Err(ParamError::OutOfRange {
                name: "maximum AID iterations",
                value: 0.0,
                range: ">= 1",
            });
        }
        Ok(())
    }
}

/// An aggregation rate: finite, in `(0, 1]`.
pub(crate) fn check_rate(r: f64) -> Result<f64, ParamError> {
    if r.is_finite() && r > 0.0 && r <= 1.0 {
        Ok(r)
    } else {
        Err(ParamError::OutOfRange {
            name: "r0",
            value: r,
            range: "(0, 1]",
        })
    }
}

/// How an AID loop that converged stopped: what AID adds to [`Status::Converged`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    /// Every cluster was uniform and the relative gap is within `max(gap_tol, CERT_GAP_RTOL)`
    /// (`1e-10`, rounding; see the module docs): optimal.
    Optimal,
    /// Every cluster was uniform (nothing left to split) but the gap is above `gap_tol` or no
    /// lower bound exists (heuristic subproblems such as S3VM): NOT a certificate of optimality.
    NoSplit,
    /// The relative gap reached the tolerance.
    Gap,
}

impl Termination {
    /// Lower-case name for reports.
    pub fn as_str(&self) -> &'static str {
        match self {
            Termination::Optimal => "optimal",
            Termination::NoSplit => "no_split",
            Termination::Gap => "gap",
        }
    }
}

/// The result of an AID run.
#[derive(Debug, Clone)]
pub struct AidRun<S> {
    /// The solution with the smallest full-data objective.
    pub best: S,
    /// Its full-data objective `E^best`.
    pub best_objective: f64,
    /// The best lower bound (NaN without one).
    pub lower_bound: f64,
    /// How it ended: [`Status::Converged`] by a stopping rule, or at the iteration or time
    /// limit, or [`Status::Interrupted`] by an observer (the best iterate so far).
    pub status: Status,
    /// Which stopping rule ended a converged run (`None` unless `status` is
    /// [`Status::Converged`]).
    pub termination: Option<Termination>,
    /// One record per iteration.
    pub iterations: Vec<IterRecord>,
    /// The final clusters.
    pub clusters: Clusters,
}

impl<S> AidRun<S> {
    /// The name of how the run ended, for reports: the [`Termination`] of a converged run,
    /// else the [`Status`] (`optimal`, `no_split`, `gap`, `max_iterations`, `time_limit`,
    /// `interrupted`).
    pub fn stop_name(&self) -> &'static str {
        self.termination
            .map_or_else(|| self.status.as_str(), |t| t.as_str())
    }
}

/// Runs the AID loop of a custom [`AidProblem`] from `clusters`, without an observer;
/// `progress` sees every iteration's record. The AID methods' fits ([`lad::fit`],
/// [`svm::fit`], [`s3vm::fit`]) run the same loop under a [`Control`].
///
/// # Errors
/// Whatever the aggregated solves report.
pub fn run<P: AidProblem>(
    problem: &mut P,
    clusters: Clusters,
    settings: &AidSettings,
    progress: &mut dyn FnMut(&IterRecord),
) -> Result<AidRun<P::Solution>, FitError> {
    let st = LoopState::start(clusters);
    let mut ctl: Control<'_, (), IterRecord> =
        Control::default().on_part(|r: &IterRecord| progress(r));
    match run_resumable(problem, st, settings, &mut ctl)? {
        Outcome::Done(r) => Ok(r),
        // Without an observer nothing stops the loop.
        Outcome::Stopped { .. } => Err(crate::error::SolveError::NonFinite {
            what: "AID loop stopped without an observer",
        }
        .into()),
    }
}

impl<S> LoopState<S> {
    /// The state before the first iteration.
    pub(crate) fn start(clusters: Clusters) -> Self {
        Self {
            t: 0,
            clusters,
            parent: Vec::new(),
            prev: None,
            best: None,
            lower: f64::NEG_INFINITY,
            has_bound: false,
            records: Vec::new(),
        }
    }
}

/// How [`run_resumable`] ended.
pub(crate) enum Outcome<S> {
    /// A stopping rule (not an interrupt).
    Done(AidRun<S>),
    /// The observer stopped it at the start of (or during) iteration `state.t`: the run so far
    /// (`None` before the first finished iteration) and the state to continue from.
    Stopped {
        partial: Option<AidRun<S>>,
        state: LoopState<S>,
    },
}

/// Asks the observer between iterations whether to stop.
pub(crate) fn stop_requested(obs: &mut dyn Observer, t: usize) -> bool {
    let s = IterStats {
        iterations: t as u64,
        max_violation: f64::NAN,
        active: 0,
    };
    obs.on_iter(&s).is_break()
}

/// Asks the observer inside a long stage of an aggregated problem (kernel sums): `polls` so
/// far and the stage's cluster count as the report.
pub(crate) fn stop_requested_stage(obs: &mut dyn Observer, polls: u64, clusters: usize) -> bool {
    let s = IterStats {
        iterations: polls,
        max_violation: f64::NAN,
        active: clusters,
    };
    obs.on_iter(&s).is_break()
}

/// The relative gap `(E^best - F) / E^best`, clamped at 0.
pub(crate) fn rel_gap(e_best: f64, lower: f64) -> f64 {
    ((e_best - lower) / e_best.abs().max(f64::MIN_POSITIVE)).max(0.0)
}

/// The stopping rule after iteration `t` (see "Stopping rule" above): `None` to go on.
/// `timed_out` is asked last, only when no other rule stops the loop.
pub(crate) fn stop_rule(
    violating: usize,
    has_bound: bool,
    gap: f64,
    settings: &AidSettings,
    t: usize,
    timed_out: impl FnOnce() -> bool,
) -> Option<(Status, Option<Termination>)> {
    if violating == 0 {
        // Rounding in `E - F` (see "Certificate tolerance" above).
        if has_bound && gap <= settings.gap_tol.max(CERT_GAP_RTOL) {
            Some((Status::Converged, Some(Termination::Optimal)))
        } else {
            Some((Status::Converged, Some(Termination::NoSplit)))
        }
    } else if has_bound && gap <= settings.gap_tol {
        Some((Status::Converged, Some(Termination::Gap)))
    } else if t + 1 >= settings.max_iter {
        Some((Status::MaxIterations, None))
    } else if timed_out() {
        Some((Status::TimeLimit, None))
    } else {
        None
    }
}

/// The AID loop from a state (the start, or a checkpoint's); see [`run`].
/// `ctl`'s observer is asked before every aggregated solve and by its solver; its part callback
/// receives every iteration's record.
pub(crate) fn run_resumable<P: AidProblem, C>(
    problem: &mut P,
    st: LoopState<P::Solution>,
    settings: &AidSettings,
    ctl: &mut Control<'_, C, IterRecord>,
) -> Result<Outcome<P::Solution>, FitError> {
    let start = Instant::now();
    let n = problem.n_rows();
    let mut side = vec![0u8; n];
    let LoopState {
        mut t,
        mut clusters,
        mut parent,
        mut prev,
        mut best,
        mut lower,
        mut has_bound,
        mut records,
    } = st;
    loop {
        let it_start = Instant::now();
        let agg = if stop_requested(ctl.observer(), t) {
            None
        } else {
            let warm = prev.as_ref().map(|s| (s, parent.as_slice()));
            problem.solve_aggregated(&clusters, warm, ctl.observer())?
        };
        let Some(agg) = agg else {
            let partial = best.as_ref().map(|(b, e)| AidRun {
                best: b.clone(),
                best_objective: *e,
                lower_bound: if has_bound { lower } else { f64::NAN },
                status: Status::Interrupted,
                termination: None,
                iterations: records.clone(),
                clusters: clusters.clone(),
            });
            return Ok(Outcome::Stopped {
                partial,
                state: LoopState {
                    t,
                    clusters,
                    parent,
                    prev,
                    best,
                    lower,
                    has_bound,
                    records,
                },
            });
        };
        if let Some(f) = agg.lower_bound {
            has_bound = true;
            lower = lower.max(f);
        }
        let e = problem.evaluate(&agg.solution, &mut side);
        if best.as_ref().is_none_or(|(_, b)| e < *b) {
            best = Some((agg.solution.clone(), e));
        }
        let e_best = best.as_ref().map_or(f64::INFINITY, |b| b.1);
        let gap = if has_bound {
            rel_gap(e_best, lower)
        } else {
            f64::NAN
        };
        let violating = clusters.count_violating(&side);
        let mut rec = IterRecord {
            t,
            clusters: clusters.len(),
            r: clusters.len() as f64 / n.max(1) as f64,
            lower_bound: if has_bound { lower } else { f64::NAN },
            bound_t: agg.lower_bound.unwrap_or(f64::NAN),
            aggregated_objective: agg.objective,
            objective: e,
            best_objective: e_best,
            gap,
            violating,
            seconds: 0.0,
        };
        let stop = stop_rule(violating, has_bound, gap, settings, t, || {
            settings.time_limit.is_some_and(|l| start.elapsed() >= l)
        });
        if stop.is_none() {
            clusters.split(&side, Some(&mut parent));
        }
        prev = Some(agg.solution);
        rec.seconds = it_start.elapsed().as_secs_f64();
        ctl.part_done(&rec);
        records.push(rec);
        if let Some((status, termination)) = stop {
            let Some((best, best_objective)) = best else {
                return Err(crate::error::SolveError::NonFinite {
                    what: "AID objective",
                }
                .into());
            };
            return Ok(Outcome::Done(AidRun {
                best,
                best_objective,
                lower_bound: if has_bound { lower } else { f64::NAN },
                status,
                termination,
                iterations: records,
                clusters,
            }));
        }
        t += 1;
    }
}
