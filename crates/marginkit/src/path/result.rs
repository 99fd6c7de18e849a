//! What a path returns: its points, the result with the models of each point, and the report.

use crate::data::Dataset;
use crate::error::DataError;
use crate::fit::Report;
use crate::kernel::cache::CacheStats;
use crate::kernel::KernelSpec;
use crate::solver::Status;
use crate::svm::linear::{LinearModel, LinearSolver};
use crate::svm::model::SvmModel;
use crate::svm::SvmType;

use super::params::Engine;

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

/// The kernel C-SVC model of the dual solution `alpha` (see [`PathResult::svm_model`]).
#[allow(clippy::needless_range_loop)]
pub(super) fn kernel_model(
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
