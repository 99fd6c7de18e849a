//! Semi-supervised SVM (S3VM): an exact branch-and-bound for the Bennett-Demiriz MIQP, and
//! AID-S3VM on top of it (a heuristic).
//!
//! # Problem (paper eq. 12-14)
//!
//! ```text
//! E* = min_{w,b,d} 1/2 |w|^2 + sum_{i labeled} c_i max(0, 1 - y_i f_i)
//!                            + sum_{i unlabeled} c_i max(0, 1 - d_i f_i),   f_i = w'x_i + b,
//! ```
//! `d_i in {-1, +1}`, `c_i = M_l` (labeled) or `M_u` (unlabeled), times the cluster size on
//! aggregated problems. Optionally the balance constraint (§4.3):
//! `mean_{unlabeled} f_i = mean_{labeled} y_i` (weighted by the cluster sizes: it aggregates
//! exactly), and optionally the balance cost (§4.3's second technique): the minority class's
//! labeled rows get `M_l * n_majority / n_minority` (digest P16: the paper prints the ratio on the
//! majority class, against its stated intent).
//!
//! # Branch and bound ([`solve_bnb`])
//!
//! A node fixes some `d_i`. Its relaxation drops the unfixed unlabeled rows: the convex QP
//! `min 1/2|w|^2 + sum c_i xi_i, y_i f_i >= 1 - xi_i (labeled and fixed rows), xi >= 0`, solved by
//! clarabel. This is exactly the continuous relaxation of the Bennett-Demiriz MIQP (14) at that
//! node when its big-M is large enough (a free `d_i = 1/2` makes both big-M rows slack at zero
//! cost), and a valid lower bound since every loss is `>= 0`. Best-first search on the bound;
//! every node's `(w, b)` is also evaluated with the optimal labels `d_i = sign f_i` (Lemma 1),
//! which gives the incumbent. Branch on the unfixed row with the largest loss `c_i max(0, 1-|f_i|)`
//! (ties: smallest index), the child with `d_i = sign f_i` first. Stop when the best open bound is
//! within `rel_gap` of the incumbent (then the incumbent is optimal to that gap), or at the node or
//! time limit (the reported gap says how far it may be).
//!
//! # AID-S3VM (§3.3)
//!
//! Labeled clusters are label-pure, unlabeled clusters separate; initial clusters by one k-means
//! iteration in the raw space per group (`ceil(r^0 n_g)` clusters, at least 10 in all). Each
//! iteration solves the aggregated MIQP by [`solve_bnb`] on the centroids, evaluates `E^t` on the
//! full data with the Lemma 1 labels, and splits labeled clusters by `s = 1 - y f > 0` vs `<= 0`
//! and unlabeled clusters by the four regions `f <= -1`, `-1 < f <= 0`, `0 < f < 1`, `f >= 1`
//! (per point, digest P4).
//!
//! **This is a heuristic.** The paper's Prop. 5 (the condition certifies optimality) is false:
//! the tent loss `max(0, 1 - |f|)` is concave inside the margin, so a centroid can be charged
//! more than its members and the aggregated problem is not a relaxation (digest §4.8; the test
//! `prop5_counterexample` reproduces the 1-D counterexample). There is no lower bound and no
//! gap; stop after `max_iter` iterations (the paper's AID1/AID5) or when no cluster splits.
//!
//! Corrections: the label map (15)->(13) uses Lemma 1 (`d_i = +1` iff `f_i >= 0`; the paper prints
//! it reversed, digest P2).
//!
//! Cost: a node is one QP with `m + 1 + (labeled + fixed)` variables (interior point); the tree
//! can have `2^u` leaves, so exact solves are for small or aggregated problems.
//!
//! Citation: Park & Klabjan (2016), §3.3; K. Bennett, A. Demiriz, "Semi-supervised support vector
//! machines", NIPS 1998; O. Chapelle, V. Sindhwani, S. Keerthi, "Branch and bound for
//! semi-supervised support vector machines", NIPS 2006.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use clarabel::algebra::CscMatrix;
use clarabel::solver::{
    DefaultSettings, DefaultSolver, IPSolver, NonnegativeConeT, SolverStatus, SupportedConeT,
    ZeroConeT,
};
use rayon::prelude::*;

use super::checkpoint::{self, AidCheckpoint, AidModel, LoopState, ProblemState};
use super::cluster::{det_sum, kmeans_one_iteration, Clusters};
pub use super::state::S3vmSolution;
use super::{run_resumable, Aggregated, AidProblem, AidRun, AidSettings, IterRecord, Outcome};
use crate::data::{ops, Dataset, Features};
use crate::error::{DataError, FitError, ParamError, SolveError};
use crate::fit::{Control, Fit, Report};
use crate::solver::{IterStats, NoObserver, Observer, Status};
use crate::svm::linear::{LinearModel, LinearSolver};

/// An S3VM instance on dense rows.
#[derive(Debug, Clone, PartialEq)]
pub struct S3vmInstance {
    /// Rows, `n x m` row-major.
    pub x: Vec<f64>,
    /// Number of features `m`.
    pub m: usize,
    /// `+1`/`-1` for labeled rows, `0` for unlabeled rows.
    pub label: Vec<i8>,
    /// Per-row loss weight `c_i > 0`.
    pub cost: Vec<f64>,
    /// Balance constraint: `sum_u weight_i f_i = target * sum_u weight_i` over unlabeled rows,
    /// with `(weight per row, target)`; `None` for no constraint.
    pub balance: Option<(Vec<f64>, f64)>,
}

impl S3vmInstance {
    fn n(&self) -> usize {
        self.label.len()
    }
    fn f(&self, i: usize, w: &[f64], b: f64) -> f64 {
        ops::dense_dot(&self.x[i * self.m..(i + 1) * self.m], w) + b
    }
    /// The objective (12) at `(w, b)` with the Lemma 1 labels.
    pub fn objective(&self, w: &[f64], b: f64) -> f64 {
        let mut s = 0.5 * ops::dense_dot(w, w);
        for i in 0..self.n() {
            let f = self.f(i, w, b);
            let loss = if self.label[i] == 0 {
                (1.0 - f.abs()).max(0.0)
            } else {
                (1.0 - f64::from(self.label[i]) * f).max(0.0)
            };
            s += self.cost[i] * loss;
        }
        s
    }
}

/// Limits of [`solve_bnb`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BnbLimits {
    /// Most nodes (QP solves).
    pub max_nodes: usize,
    /// Wall-clock limit.
    pub time_limit: Option<Duration>,
    /// Stop when `(incumbent - best bound) / incumbent <= rel_gap`.
    pub rel_gap: f64,
}

impl Default for BnbLimits {
    fn default() -> Self {
        Self {
            max_nodes: 100_000,
            time_limit: None,
            rel_gap: 1e-9,
        }
    }
}

/// The result of [`solve_bnb`].
#[derive(Debug, Clone, PartialEq)]
pub struct BnbResult {
    /// Weights of the incumbent.
    pub w: Vec<f64>,
    /// Bias of the incumbent.
    pub b: f64,
    /// Its objective (12).
    pub objective: f64,
    /// The best lower bound over the open nodes (== objective when solved).
    pub lower_bound: f64,
    /// `(objective - lower_bound) / objective` (0 when solved to optimality).
    pub gap: f64,
    /// Nodes solved.
    pub nodes: usize,
    /// True when the tree was closed (no node or time limit hit).
    pub optimal: bool,
}

struct Node {
    bound: f64,
    fixed: Vec<i8>,
    seq: usize,
}

impl PartialEq for Node {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Node {}
impl PartialOrd for Node {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Node {
    // BinaryHeap is a max-heap: smallest bound first, then the oldest node.
    fn cmp(&self, o: &Self) -> Ordering {
        o.bound
            .total_cmp(&self.bound)
            .then_with(|| o.seq.cmp(&self.seq))
    }
}

/// The node QP (see module docs): returns `(bound, w, b)`.
/// Returns `(bound, w, b, almost)`; `almost` is true when clarabel only reached an "Almost"
/// status, so the bound (or the pruning) is not certified.
fn node_qp(inst: &S3vmInstance, fixed: &[i8]) -> Result<(f64, Vec<f64>, f64, bool), FitError> {
    let m = inst.m;
    let rows: Vec<(usize, f64)> = (0..inst.n())
        .filter_map(|i| {
            let s = if inst.label[i] != 0 {
                inst.label[i]
            } else {
                fixed[i]
            };
            (s != 0).then_some((i, f64::from(s)))
        })
        .collect();
    let r = rows.len();
    let nv = m + 1 + r;
    // P = diag(1 on w).
    let p = CscMatrix::new(
        nv,
        nv,
        (0..=nv).map(|j| j.min(m)).collect(),
        (0..m).collect(),
        vec![1.0; m],
    );
    let mut q = vec![0.0; nv];
    for (t, &(i, _)) in rows.iter().enumerate() {
        q[m + 1 + t] = inst.cost[i];
    }
    // Constraint rows: [balance (zero cone)], margins (r rows), xi >= 0 (r rows).
    let nb = usize::from(inst.balance.is_some());
    let nrows = nb + 2 * r;
    let mut cols: Vec<Vec<(usize, f64)>> = vec![Vec::new(); nv];
    let mut bvec = vec![0.0; nrows];
    if let Some((wts, target)) = &inst.balance {
        let mut sw = 0.0;
        let mut sx = vec![0.0; m];
        for (i, &wi) in wts.iter().enumerate().take(inst.n()) {
            if inst.label[i] == 0 {
                sw += wi;
                for (sj, &xj) in sx.iter_mut().zip(&inst.x[i * m..(i + 1) * m]) {
                    *sj += wi * xj;
                }
            }
        }
        for (j, v) in sx.into_iter().enumerate() {
            if v != 0.0 {
                cols[j].push((0, v));
            }
        }
        cols[m].push((0, sw));
        bvec[0] = target * sw;
    }
    for (t, &(i, d)) in rows.iter().enumerate() {
        let row = nb + t;
        for (col, &v) in cols.iter_mut().zip(&inst.x[i * m..(i + 1) * m]) {
            if v != 0.0 {
                col.push((row, -d * v));
            }
        }
        cols[m].push((row, -d));
        cols[m + 1 + t].push((row, -1.0));
        cols[m + 1 + t].push((nb + r + t, -1.0));
        bvec[row] = -1.0;
    }
    let (mut cp, mut rv, mut nz) = (vec![0usize], Vec::new(), Vec::new());
    for c in cols {
        for (rr, v) in c {
            rv.push(rr);
            nz.push(v);
        }
        cp.push(rv.len());
    }
    let a = CscMatrix::new(nrows, nv, cp, rv, nz);
    let mut cones: Vec<SupportedConeT<f64>> = Vec::new();
    if nb > 0 {
        cones.push(ZeroConeT(nb));
    }
    if r > 0 {
        cones.push(NonnegativeConeT(2 * r));
    }
    if nrows == 0 {
        return Ok((0.0, vec![0.0; m], 0.0, false));
    }
    let settings = DefaultSettings {
        verbose: false,
        tol_gap_abs: 1e-10,
        tol_gap_rel: 1e-10,
        tol_feas: 1e-10,
        ..DefaultSettings::default()
    };
    let mut s = DefaultSolver::new(&p, &q, &a, &bvec, &cones, settings)
        .map_err(|_| SolveError::Dimensions("S3VM node QP rejected by clarabel"))?;
    s.solve();
    match s.solution.status {
        SolverStatus::Solved | SolverStatus::AlmostSolved => {}
        SolverStatus::PrimalInfeasible | SolverStatus::AlmostPrimalInfeasible => {
            let almost = s.solution.status == SolverStatus::AlmostPrimalInfeasible;
            return Ok((f64::INFINITY, vec![0.0; m], 0.0, almost));
        }
        _ => {
            return Err(SolveError::NonFinite {
                what: "S3VM node QP",
            }
            .into())
        }
    }
    let x = &s.solution.x;
    // The dual value is the safer bound; the primal value is within the solver's tolerance.
    let bound = s.solution.obj_val_dual.min(s.solution.obj_val);
    let almost = s.solution.status == SolverStatus::AlmostSolved;
    Ok((bound, x[..m].to_vec(), x[m], almost))
}

/// Solves an S3VM instance exactly by best-first branch and bound (see module docs).
///
/// # Errors
/// [`SolveError`] when a node QP breaks down; [`DataError::Shape`] for inconsistent arrays.
pub fn solve_bnb(inst: &S3vmInstance, limits: &BnbLimits) -> Result<BnbResult, FitError> {
    // NoObserver never stops, so the search always returns a result.
    bnb(inst, limits, &mut NoObserver)?.ok_or_else(|| {
        SolveError::NonFinite {
            what: "branch and bound stopped without an observer",
        }
        .into()
    })
}

/// [`solve_bnb`] polling `obs` before every node QP (`None`: it asked to stop).
fn bnb(
    inst: &S3vmInstance,
    limits: &BnbLimits,
    obs: &mut dyn Observer,
) -> Result<Option<BnbResult>, FitError> {
    let n = inst.n();
    if inst.x.len() != n * inst.m || inst.cost.len() != n {
        return Err(DataError::Shape {
            what: "S3VM instance",
            expected: n * inst.m,
            found: inst.x.len(),
        }
        .into());
    }
    let start = Instant::now();
    let mut heap = BinaryHeap::new();
    let mut seq = 0usize;
    let mut best_w = vec![0.0; inst.m];
    let mut best_b = 0.0;
    let mut best = inst.objective(&best_w, best_b);
    heap.push(Node {
        bound: f64::NEG_INFINITY,
        fixed: vec![0; n],
        seq,
    });
    let mut nodes = 0usize;
    let mut optimal = true;
    let mut inexact = false;
    let done = |lb: f64, best: f64| lb >= best - limits.rel_gap * best.abs() - 1e-12;
    while let Some(node) = heap.pop() {
        if done(node.bound, best) {
            continue;
        }
        if nodes >= limits.max_nodes || limits.time_limit.is_some_and(|t| start.elapsed() >= t) {
            heap.push(node);
            optimal = false;
            break;
        }
        let stats = IterStats {
            iterations: nodes as u64,
            max_violation: f64::NAN,
            active: heap.len(),
        };
        if obs.on_iter(&stats).is_break() {
            return Ok(None);
        }
        nodes += 1;
        let (bound, w, b, almost) = node_qp(inst, &node.fixed)?;
        // An inexact node solve cannot certify the search: never report it as optimal.
        inexact |= almost;
        let bound = bound.max(node.bound);
        if !bound.is_finite() {
            continue;
        }
        let e = inst.objective(&w, b);
        if e < best {
            best = e;
            best_w = w.clone();
            best_b = b;
        }
        if done(bound, best) {
            continue;
        }
        // Branch on the free unlabeled row with the largest loss.
        let mut pick: Option<(usize, f64, f64)> = None;
        for i in 0..n {
            if inst.label[i] == 0 && node.fixed[i] == 0 {
                let f = inst.f(i, &w, b);
                let loss = inst.cost[i] * (1.0 - f.abs()).max(0.0);
                if pick.is_none_or(|(_, l, _)| loss > l) {
                    pick = Some((i, loss, f));
                }
            }
        }
        let Some((i, _, f)) = pick else {
            continue;
        };
        let first: i8 = if f >= 0.0 { 1 } else { -1 };
        for d in [first, -first] {
            let mut fixed = node.fixed.clone();
            fixed[i] = d;
            seq += 1;
            heap.push(Node { bound, fixed, seq });
        }
    }
    let open = heap.iter().map(|nd| nd.bound).fold(f64::INFINITY, f64::min);
    // The bound of an exhausted search still holds to the solver's tolerance, but the result is
    // only reported as optimal when every node solve was exact.
    let optimal = optimal && !inexact;
    let lower_bound = if optimal { best } else { open.min(best) };
    let gap = if best > 0.0 {
        ((best - lower_bound) / best).max(0.0)
    } else {
        0.0
    };
    Ok(Some(BnbResult {
        w: best_w,
        b: best_b,
        objective: best,
        lower_bound,
        gap,
        nodes,
        optimal,
    }))
}

/// Checked AID-S3VM parameters, the only ones [`fit`] accepts (made by
/// [`AidS3vmParams::check`]).
#[derive(Debug, Clone, PartialEq)]
pub struct AidS3vmValidParams {
    pub(crate) c_labeled: f64,
    pub(crate) c_unlabeled: f64,
    pub(crate) r0: f64,
    pub(crate) seed: u64,
    pub(crate) balance: bool,
    pub(crate) balance_cost: bool,
    pub(crate) bnb: BnbLimits,
    pub(crate) settings: AidSettings,
}

impl AidS3vmValidParams {
    /// Penalty of labeled rows `M_l`.
    pub fn c_labeled(&self) -> f64 {
        self.c_labeled
    }
    /// Penalty of unlabeled rows `M_u`.
    pub fn c_unlabeled(&self) -> f64 {
        self.c_unlabeled
    }
    /// Initial aggregation rate per group.
    pub fn r0(&self) -> f64 {
        self.r0
    }
    /// Seed of the k-means centres.
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// Whether the balance constraint is used.
    pub fn balance(&self) -> bool {
        self.balance
    }
    /// Whether the balance cost is used (see [`AidS3vmParams::balance_cost`]).
    pub fn balance_cost(&self) -> bool {
        self.balance_cost
    }
    /// Limits of each aggregated branch and bound.
    pub fn bnb(&self) -> &BnbLimits {
        &self.bnb
    }
    /// Loop limits.
    pub fn settings(&self) -> &AidSettings {
        &self.settings
    }
}

/// AID-S3VM parameters (a consuming builder); [`AidS3vmParams::check`] validates them.
///
/// ```
/// use marginkit::aid::s3vm::AidS3vmParams;
///
/// let p = AidS3vmParams::new().c_labeled(2.0).balance(true).check()?;
/// // The loop runs to its own stopping rule (no cluster splits) under the AID iteration cap.
/// assert_eq!(p.settings().max_iter(), marginkit::aid::AidSettings::default().max_iter());
/// assert!(AidS3vmParams::new().c_unlabeled(f64::NAN).check().is_err());
/// # Ok::<(), marginkit::ParamError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct AidS3vmParams(AidS3vmValidParams);

impl Default for AidS3vmParams {
    /// `M_l = 5` (the paper's fixed setting), `M_u = 1`, `r0 = 0.01`, seed 0, no balance
    /// technique, branch and bound of at most 20,000 nodes and 60 s at relative gap 1e-6, and
    /// the loop of Algorithm 1 run until no cluster splits, under the iteration cap every AID
    /// method has ([`AidSettings::default`]; there is no bound, so the gap is not used). The
    /// paper's AID1 and AID5 are `max_iter(1)` and `max_iter(5)`.
    fn default() -> Self {
        Self(AidS3vmValidParams {
            c_labeled: Self::DEFAULT_C_LABELED,
            c_unlabeled: Self::DEFAULT_C_UNLABELED,
            r0: Self::DEFAULT_R0,
            seed: 0,
            balance: false,
            balance_cost: false,
            bnb: BnbLimits {
                max_nodes: Self::DEFAULT_BNB_NODES,
                time_limit: Some(Duration::from_secs(Self::DEFAULT_BNB_SECONDS)),
                rel_gap: Self::DEFAULT_BNB_REL_GAP,
            },
            settings: AidSettings {
                gap_tol: 0.0,
                ..AidSettings::default()
            },
        })
    }
}

impl From<AidS3vmValidParams> for AidS3vmParams {
    /// Checked parameters as a builder again, to change some and check them anew.
    fn from(p: AidS3vmValidParams) -> Self {
        Self(p)
    }
}

impl AidS3vmParams {
    /// Default penalty of labeled rows `M_l` (the paper's fixed setting).
    pub const DEFAULT_C_LABELED: f64 = 5.0;
    /// Default penalty of unlabeled rows `M_u`.
    pub const DEFAULT_C_UNLABELED: f64 = 1.0;
    /// Default initial aggregation rate `r0`.
    pub const DEFAULT_R0: f64 = 0.01;
    /// Default node limit of each branch and bound.
    pub const DEFAULT_BNB_NODES: usize = 20_000;
    /// Default time limit of each branch and bound, in seconds.
    pub const DEFAULT_BNB_SECONDS: u64 = 60;
    /// Default relative gap at which each branch and bound stops.
    pub const DEFAULT_BNB_REL_GAP: f64 = 1e-6;

    /// The defaults (see [`Default`]).
    pub fn new() -> Self {
        Self::default()
    }
    /// Penalty of labeled rows `M_l` (> 0).
    #[must_use]
    pub fn c_labeled(mut self, c: f64) -> Self {
        self.0.c_labeled = c;
        self
    }
    /// Penalty of unlabeled rows `M_u` (> 0).
    #[must_use]
    pub fn c_unlabeled(mut self, c: f64) -> Self {
        self.0.c_unlabeled = c;
        self
    }
    /// Initial aggregation rate per group, in `(0, 1]` (at least 10 clusters in all).
    #[must_use]
    pub fn r0(mut self, r0: f64) -> Self {
        self.0.r0 = r0;
        self
    }
    /// Seed of the k-means centres.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.0.seed = seed;
        self
    }
    /// Use the balance constraint.
    #[must_use]
    pub fn balance(mut self, on: bool) -> Self {
        self.0.balance = on;
        self
    }
    /// Use the balance cost (§4.3, the second technique): the labeled rows of the minority
    /// class get `M_l * n_majority / n_minority` (labeled counts), the majority keeps `M_l`.
    /// The paper prints the ratio on the majority class instead; the digest's P16 correction is
    /// used, which matches the paper's stated intent (up-weight the minority).
    #[must_use]
    pub fn balance_cost(mut self, on: bool) -> Self {
        self.0.balance_cost = on;
        self
    }
    /// Limits of each aggregated branch and bound.
    #[must_use]
    pub fn bnb(mut self, limits: BnbLimits) -> Self {
        self.0.bnb = limits;
        self
    }
    /// Relative gap at which the loop stops (`>= 0`; S3VM has no bound, so it never stops
    /// on it).
    #[must_use]
    pub fn gap_tol(mut self, g: f64) -> Self {
        self.0.settings.gap_tol = g;
        self
    }
    /// Most aggregated solves (`>= 1`).
    #[must_use]
    pub fn max_iter(mut self, n: usize) -> Self {
        self.0.settings.max_iter = n;
        self
    }
    /// Wall-clock limit of the loop.
    #[must_use]
    pub fn time_limit(mut self, d: Duration) -> Self {
        self.0.settings.time_limit = Some(d);
        self
    }

    /// Validates every parameter (NaN-safe); what depends on the data (labeled rows of two
    /// classes) is checked by the fit.
    ///
    /// # Errors
    /// [`ParamError`] for penalties not finite and positive, an `r0` outside `(0, 1]`, a
    /// negative or NaN relative gap of the branch and bound, a bad gap tolerance or iteration
    /// limit.
    pub fn check(self) -> Result<AidS3vmValidParams, ParamError> {
        let p = &self.0;
        crate::error::positive("C of labeled rows", p.c_labeled)?;
        crate::error::positive("C of unlabeled rows", p.c_unlabeled)?;
        super::check_rate(p.r0)?;
        crate::error::non_negative("branch-and-bound relative gap", p.bnb.rel_gap)?;
        p.settings.check()?;
        Ok(self.0)
    }
}

/// What AID-S3VM did besides its model.
#[derive(Debug, Clone)]
pub struct AidS3vmReport {
    /// The loop's record (no lower bound: the gap is NaN); `None` when the fit was stopped
    /// before its first iteration finished (then [`Fit::model`] is `None` too).
    pub run: Option<AidRun<S3vmSolution>>,
    /// Predicted label of every unlabeled row, in row order (empty without a model).
    pub unlabeled_predictions: Vec<f64>,
    /// Seconds spent on the initial clustering (0 when started from given clusters).
    pub init_seconds: f64,
}

impl Report for AidS3vmReport {
    /// The run's status; [`Status::Interrupted`] when no iteration finished.
    fn status(&self) -> Status {
        self.run.as_ref().map_or(Status::Interrupted, |r| r.status)
    }
}

/// What [`fit`] returns: a linear model (labels of the labeled rows; `labels()[0]` positive;
/// `None` when no iteration finished), the report and, when the fit was stopped, the state to
/// continue from.
pub type AidS3vmFit = Fit<Option<LinearModel>, AidS3vmReport, AidCheckpoint>;

/// The data of AID-S3VM: the rows (label 0 = unlabeled) and, optionally, the clusters to start
/// from instead of the paper's initial clustering.
#[derive(Debug, Clone, Copy)]
pub struct S3vmData<'a> {
    /// The rows; label 0 marks unlabeled rows, the two other labels are the classes.
    pub set: &'a Dataset,
    /// Clusters to start from (each label-pure: all labeled of one class or all unlabeled,
    /// covering every row once); `None`: [`initial_s3vm_clusters`].
    pub start: Option<&'a Clusters>,
}

impl<'a> S3vmData<'a> {
    /// The rows, clustered by the paper's rule.
    pub fn new(set: &'a Dataset) -> Self {
        Self { set, start: None }
    }
    /// Starts from `clusters` instead of the paper's initial clustering.
    #[must_use]
    pub fn starting_from(mut self, clusters: &'a Clusters) -> Self {
        self.start = Some(clusters);
        self
    }
}

impl<'a> From<&'a Dataset> for S3vmData<'a> {
    fn from(set: &'a Dataset) -> Self {
        Self::new(set)
    }
}

struct S3vmProblem<'a> {
    data: &'a Dataset,
    /// +1/-1 labeled, 0 unlabeled.
    label: Vec<i8>,
    params: AidS3vmValidParams,
    target: f64,
    /// Labeled penalty of the positive and of the negative class (both `M_l` without the
    /// balance cost).
    c_pos: f64,
    c_neg: f64,
}

/// `(M_l+, M_l-)`: `M_l` times `max(1, n_other / n_own)` over the labeled counts when `on`.
fn labeled_costs(c: f64, label: &[i8], on: bool) -> (f64, f64) {
    if !on {
        return (c, c);
    }
    let pos = label.iter().filter(|&&l| l > 0).count().max(1) as f64;
    let neg = label.iter().filter(|&&l| l < 0).count().max(1) as f64;
    (c * (neg / pos).max(1.0), c * (pos / neg).max(1.0))
}

impl AidProblem for S3vmProblem<'_> {
    type Solution = S3vmSolution;

    fn n_rows(&self) -> usize {
        self.data.len()
    }

    fn solve_aggregated(
        &mut self,
        clusters: &Clusters,
        _previous: Option<(&S3vmSolution, &[usize])>,
        obs: &mut dyn Observer,
    ) -> Result<Option<Aggregated<S3vmSolution>>, FitError> {
        let m = self.data.n_features();
        let k = clusters.len();
        let (mut sx, _) = clusters.sums(&self.data.x, None)?;
        let mut label = Vec::with_capacity(k);
        let mut cost = Vec::with_capacity(k);
        let mut wts = Vec::with_capacity(k);
        for c in 0..k {
            let s = clusters.size(c) as f64;
            sx[c * m..(c + 1) * m].iter_mut().for_each(|v| *v /= s);
            let l = self.label[clusters.members(c)[0] as usize];
            label.push(l);
            let pen = match l {
                0 => self.params.c_unlabeled,
                1 => self.c_pos,
                _ => self.c_neg,
            };
            cost.push(pen * s);
            wts.push(s);
        }
        let inst = S3vmInstance {
            x: sx,
            m,
            label,
            cost,
            balance: self.params.balance.then_some((wts, self.target)),
        };
        let Some(r) = bnb(&inst, &self.params.bnb, obs)? else {
            return Ok(None);
        };
        Ok(Some(Aggregated {
            lower_bound: None,
            objective: r.objective,
            solution: S3vmSolution {
                w: r.w,
                b: r.b,
                bnb_optimal: r.optimal,
                bnb_nodes: r.nodes,
            },
        }))
    }

    fn evaluate(&self, sol: &S3vmSolution, side: &mut [u8]) -> f64 {
        let x = &self.data.x;
        let n = self.data.len();
        let f: Vec<f64> = (0..n)
            .into_par_iter()
            .map(|i| ops::dot_dense(x.row(i), &sol.w) + sol.b)
            .collect();
        let label = &self.label;
        side.par_iter_mut().enumerate().for_each(|(i, s)| {
            *s = if label[i] != 0 {
                u8::from(1.0 - f64::from(label[i]) * f[i] > 1e-9)
            } else if f[i] <= -1.0 {
                0
            } else if f[i] <= 0.0 {
                1
            } else if f[i] < 1.0 {
                2
            } else {
                3
            };
        });
        let (cp, cn, cu) = (self.c_pos, self.c_neg, self.params.c_unlabeled);
        0.5 * ops::dense_dot(&sol.w, &sol.w)
            + det_sum(n, |i| match label[i] {
                0 => cu * (1.0 - f[i].abs()).max(0.0),
                1 => cp * (1.0 - f[i]).max(0.0),
                _ => cn * (1.0 + f[i]).max(0.0),
            })
    }
}

/// Labels for S3VM: `0` unlabeled, the two other labels labeled (`labels[0]` positive).
fn s3vm_labels(data: &Dataset) -> Result<(Vec<f64>, Vec<i8>), FitError> {
    if data.is_empty() {
        return Err(DataError::Empty.into());
    }
    let labels: Vec<f64> = crate::svm::train::class_order(
        &data
            .y
            .iter()
            .copied()
            .filter(|&v| v != 0.0)
            .collect::<Vec<_>>(),
    );
    if labels.is_empty() {
        return Err(ParamError::Incompatible(
            "every row is unlabeled (label 0): S3VM needs labeled rows of both classes",
        )
        .into());
    }
    if labels.len() != 2 {
        return Err(ParamError::Incompatible(
            "S3VM needs labeled rows of exactly two classes (label 0 marks unlabeled rows)",
        )
        .into());
    }
    let lab = data
        .y
        .iter()
        .map(|&v| {
            if v == 0.0 {
                0
            } else if v == labels[0] {
                1
            } else {
                -1
            }
        })
        .collect();
    Ok((labels, lab))
}

/// The paper's initial clusters: per group (labeled +1, labeled -1, unlabeled) one k-means
/// iteration in the raw space; at least 10 clusters in all (extra ones go to the unlabeled group).
pub fn initial_s3vm_clusters(data: &Dataset, label: &[i8], r0: f64, seed: u64) -> Clusters {
    let m = data.n_features();
    let groups: Vec<Vec<usize>> = [1i8, -1, 0]
        .iter()
        .map(|&g| (0..data.len()).filter(|&i| label[i] == g).collect())
        .collect();
    let mut ks: Vec<usize> = groups
        .iter()
        .map(|g| ((r0 * g.len() as f64).ceil() as usize).min(g.len()))
        .collect();
    let total: usize = ks.iter().sum();
    if total < 10 {
        ks[2] = (ks[2] + 10 - total).min(groups[2].len());
    }
    let mut parts = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        if g.is_empty() {
            continue;
        }
        let mut pts = vec![0.0; g.len() * m];
        for (t, &i) in g.iter().enumerate() {
            for (j, v) in data.x.row(i).iter() {
                pts[t * m + j] = v;
            }
        }
        let c = if m == 0 {
            Clusters::from_assignment(&vec![0u32; g.len()], 1)
        } else {
            kmeans_one_iteration(&pts, m, ks[gi].max(1), seed.wrapping_add(gi as u64))
        };
        parts.push(c.relabel(g));
    }
    Clusters::concat(parts)
}

fn s3vm_fingerprint(params: &AidS3vmValidParams, data: &Dataset) -> checkpoint::Stamp {
    let p = params;
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let mut settings = checkpoint::common_settings(Some(p.r0), p.settings.gap_tol, p.seed);
    settings
        .set("-c", p.c_labeled)
        .set("--c-unlabeled", p.c_unlabeled)
        .set("--balance", yes_no(p.balance))
        .set("--balance-cost", yes_no(p.balance_cost))
        .set("--nodes", p.bnb.max_nodes)
        .set(
            "--bnb-time-limit",
            p.bnb
                .time_limit
                .map_or_else(|| "none".to_owned(), |t| t.as_secs_f64().to_string()),
        )
        .set("rel_gap", p.bnb.rel_gap);
    checkpoint::fingerprint(
        &format!(
            "s3vm|{:?}|{:?}|{:?}|{}|{}|{}|{}|{:?}|{:?}|{:?}",
            p.c_labeled.to_bits(),
            p.c_unlabeled.to_bits(),
            p.r0.to_bits(),
            p.seed,
            p.balance,
            p.balance_cost,
            p.bnb.max_nodes,
            p.bnb.time_limit,
            p.bnb.rel_gap.to_bits(),
            p.settings.gap_tol.to_bits()
        ),
        settings,
        data,
    )
}

/// AID-S3VM (see module docs; a heuristic) from the paper's initial clusters or from
/// [`S3vmData::start`].
///
/// `ctl`'s observer is asked before every aggregated branch and bound and before every node QP
/// of it (a node is one small clarabel solve); its part callback receives every iteration's
/// record. When the observer asks to stop, the fit returns the best iterate so far with
/// [`Status::Interrupted`] (model and run `None` if no iteration finished) and an
/// [`AidCheckpoint`]; continuing it ([`Control::resume_from`]) gives the iterates an
/// uninterrupted run makes (bit for bit unless a branch and bound hits its wall-clock limit,
/// which depends on the machine).
///
/// # Errors
/// [`ParamError::Incompatible`] when every row is unlabeled, the labeled rows do not have
/// exactly two classes, the start clusters are not label-pure or do not cover every row exactly
/// once, or both start clusters and a state to resume are given; solver errors;
/// [`FitError::Checkpoint`] when the state to resume was made by another model, with other
/// data or parameters, or does not fit the data.
pub fn fit(
    params: &AidS3vmValidParams,
    data: S3vmData<'_>,
    ctl: &mut Control<'_, AidCheckpoint, IterRecord>,
) -> Result<AidS3vmFit, FitError> {
    let S3vmData { set: data, start } = data;
    let (labels, label) = s3vm_labels(data)?;
    if start.is_none() {
        // The initial clustering works on dense copies of the label groups (up to all n rows).
        data.x
            .check_dense_rows("the dense rows of the initial clustering", data.len())?;
    }
    let fp = s3vm_fingerprint(params, data);
    let (state, init) =
        match (ctl.resume(), start) {
            (Some(_), Some(_)) => return Err(ParamError::Incompatible(
                "a resumed AID-S3VM run continues from its state's clusters, not from given ones",
            )
            .into()),
            (Some(ck), None) => {
                ck.check(AidModel::S3vm, &fp, data.len(), data.n_features(), false)?;
                let st = ck.to_loop::<S3vmSolution>()?;
                (st, ck.init_seconds)
            }
            (None, Some(clusters)) => {
                check_start(clusters, &label)?;
                (LoopState::start(clusters.clone()), 0.0)
            }
            (None, None) => {
                let t0 = Instant::now();
                let clusters = initial_s3vm_clusters(data, &label, params.r0, params.seed);
                (LoopState::start(clusters), t0.elapsed().as_secs_f64())
            }
        };
    s3vm_core(data, params, (labels, label), state, init, fp, ctl)
}

/// Start clusters must be label-pure and cover every row exactly once.
fn check_start(clusters: &Clusters, label: &[i8]) -> Result<(), FitError> {
    let mut seen = vec![false; label.len()];
    for c in 0..clusters.len() {
        let mem = clusters.members(c);
        let l0 = label[mem[0] as usize];
        for &r in mem {
            let r = r as usize;
            if r >= label.len() || seen[r] || label[r] != l0 {
                return Err(ParamError::Incompatible(
                    "S3VM clusters must be label-pure and cover every row once",
                )
                .into());
            }
            seen[r] = true;
        }
    }
    if seen.iter().any(|s| !s) {
        return Err(ParamError::Incompatible("S3VM clusters must cover every row").into());
    }
    Ok(())
}

/// The AID-S3VM loop from a state; `labels` are [`s3vm_labels`] of `data`.
fn s3vm_core(
    data: &Dataset,
    params: &AidS3vmValidParams,
    (labels, label): (Vec<f64>, Vec<i8>),
    state: LoopState<S3vmSolution>,
    init_seconds: f64,
    fp: checkpoint::Stamp,
    ctl: &mut Control<'_, AidCheckpoint, IterRecord>,
) -> Result<AidS3vmFit, FitError> {
    let nl = label.iter().filter(|&&l| l != 0).count();
    let target = label.iter().map(|&l| f64::from(l)).sum::<f64>() / nl as f64;
    let (c_pos, c_neg) = labeled_costs(params.c_labeled, &label, params.balance_cost);
    let mut problem = S3vmProblem {
        data,
        label: label.clone(),
        params: params.clone(),
        target,
        c_pos,
        c_neg,
    };
    let (run, checkpoint) = match run_resumable(&mut problem, state, &params.settings, ctl)? {
        Outcome::Done(run) => (Some(run), None),
        Outcome::Stopped { partial, state } => (
            partial,
            Some(AidCheckpoint::from_loop(
                fp,
                init_seconds,
                state,
                ProblemState::default(),
            )),
        ),
    };
    let Some(run) = run else {
        return Ok(Fit {
            model: None,
            report: AidS3vmReport {
                run: None,
                unlabeled_predictions: Vec::new(),
                init_seconds,
            },
            checkpoint,
        });
    };
    let mut w = run.best.w.clone();
    w.push(run.best.b);
    let model = LinearModel::from_parts(
        LinearSolver::L1LossSvcDual,
        labels.clone(),
        data.n_features(),
        Some(1.0),
        vec![w],
    )?;
    let unlabeled_predictions = (0..data.len())
        .filter(|&i| label[i] == 0)
        .map(|i| {
            let f = ops::dot_dense(data.x.row(i), &run.best.w) + run.best.b;
            if f >= 0.0 {
                labels[0]
            } else {
                labels[1]
            }
        })
        .collect();
    Ok(Fit {
        model: Some(model),
        report: AidS3vmReport {
            run: Some(run),
            unlabeled_predictions,
            init_seconds,
        },
        checkpoint,
    })
}

/// Builds the full (non-aggregated) S3VM instance of a data set (label 0 = unlabeled), e.g. to
/// solve a small problem exactly with [`solve_bnb`].
///
/// # Errors
/// As [`fit`].
pub fn full_instance(
    data: &Dataset,
    c_labeled: f64,
    c_unlabeled: f64,
    balance: bool,
) -> Result<S3vmInstance, FitError> {
    let (_, label) = s3vm_labels(data)?;
    let m = data.n_features();
    let n = data.len();
    data.x
        .check_dense_rows("the S3VM instance's dense rows", n)?;
    let mut x = vec![0.0; n * m];
    for i in 0..n {
        for (j, v) in data.x.row(i).iter() {
            x[i * m + j] = v;
        }
    }
    let cost = label
        .iter()
        .map(|&l| if l == 0 { c_unlabeled } else { c_labeled })
        .collect();
    let nl = label.iter().filter(|&&l| l != 0).count();
    let target = label.iter().map(|&l| f64::from(l)).sum::<f64>() / nl as f64;
    Ok(S3vmInstance {
        x,
        m,
        label,
        cost,
        balance: balance.then(|| (vec![1.0; n], target)),
    })
}

impl S3vmInstance {
    /// Applies the balance cost (see [`AidS3vmParams::balance_cost`]) to the labeled rows' costs.
    pub fn with_balance_cost(mut self) -> Self {
        let (fp, fn_) = labeled_costs(1.0, &self.label, true);
        for (c, &l) in self.cost.iter_mut().zip(&self.label) {
            match l {
                1 => *c *= fp,
                -1 => *c *= fn_,
                _ => {}
            }
        }
        self
    }
}

/// Convenience for tests and tools: dense features of a data set.
pub fn dense_rows(x: &Features) -> Vec<f64> {
    let (n, m) = (x.n_rows(), x.n_cols());
    let mut out = vec![0.0; n * m];
    for i in 0..n {
        for (j, v) in x.row(i).iter() {
            out[i * m + j] = v;
        }
    }
    out
}
