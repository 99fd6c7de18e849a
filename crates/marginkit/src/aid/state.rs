//! The small types an AID run and its checkpoint share: the record of an iteration and the
//! solutions of the SVM and S3VM models (LAD's is its coefficient vector). They live apart from
//! the fits ([`super::svm`], [`super::s3vm`], the loop in [`super`]) so that the checkpoint
//! ([`super::checkpoint`]), which the fits use, does not depend on them.

/// One AID iteration (one aggregated solve and one pass).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IterRecord {
    /// Iteration index `t` (0-based, as in the paper's Table 10).
    pub t: usize,
    /// `|K^t|`.
    pub clusters: usize,
    /// Aggregation rate `r^t = |K^t| / n`.
    pub r: f64,
    /// Best lower bound so far (`max_s F^s`; NaN without one).
    pub lower_bound: f64,
    /// This iteration's own lower bound `F^t` (NaN without one).
    pub bound_t: f64,
    /// The aggregated problem's objective at its solution (the primal `F^t`).
    pub aggregated_objective: f64,
    /// `E^t`: the aggregated solution's objective on the full data.
    pub objective: f64,
    /// `E^best = min_s E^s`.
    pub best_objective: f64,
    /// `(E^best - lower_bound) / E^best` (NaN without a bound).
    pub gap: f64,
    /// Clusters that violated the condition (and were split).
    pub violating: usize,
    /// Seconds spent in this iteration.
    pub seconds: f64,
}

/// An AID-SVM solution: `f(x) = w'x + b` (linear) or `sum_i coef_i K(x_i, x) + b` (kernel).
#[derive(Debug, Clone, PartialEq)]
pub struct SvmSolution {
    /// Linear weights (empty for a kernel model).
    pub w: Vec<f64>,
    /// The bias.
    pub b: f64,
    /// Aggregated dual variables, one per cluster.
    pub alpha: Vec<f64>,
    /// Kernel expansion `(row, coef)` over the members of support clusters (empty if linear).
    pub expansion: Vec<(u32, f64)>,
    /// `|w|^2` (for kernels `a'Qa`).
    pub w_sq: f64,
    /// Kernel only: `sum_i coef_i K(x_i, x_j)` (without `b`) for every training row `j`, from
    /// the cluster kernel rows (empty for a linear model).
    pub decision: Vec<f64>,
}

/// AID-S3VM's solution per iteration: `(w, b)` and the branch-and-bound report.
#[derive(Debug, Clone, PartialEq)]
pub struct S3vmSolution {
    /// Weights.
    pub w: Vec<f64>,
    /// Bias.
    pub b: f64,
    /// Whether the aggregated MIQP was solved to optimality.
    pub bnb_optimal: bool,
    /// Nodes of the aggregated branch and bound.
    pub bnb_nodes: usize,
}
