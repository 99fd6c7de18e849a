//! Linear SVMs of the LIBLINEAR class: L1/L2-loss SVC (one-vs-rest for more than two classes)
//! and L1/L2-loss SVR, trained by dual coordinate descent ([`crate::solver::dcd`]) or, for the
//! L2 losses, by a primal truncated Newton method that uses every thread
//! ([`crate::solver::newton`], `-s 2` and `-s 11`), with LIBLINEAR-compatible model files.
//!
//! ```
//! use marginkit::fit::Control;
//! use marginkit::svm::linear::{fit, LinearParams, LinearSolver};
//! use marginkit::{Dataset, DenseMatrix, Features};
//! let x = DenseMatrix::new(4, 1, vec![-2.0, -1.0, 1.0, 2.0])?;
//! let data = Dataset::new(Features::Dense(x), vec![-1.0, -1.0, 1.0, 1.0], None)?;
//! let params = LinearParams::new(LinearSolver::L2LossSvcDual).c(1.0).bias(1.0).check()?;
//! let fit = fit(&params, &data, &mut Control::default())?;
//! assert_eq!(fit.model.predict(&data.x), vec![-1.0, -1.0, 1.0, 1.0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Conventions follow LIBLINEAR: labels are ordered by first appearance, except that a binary
//! problem with labels {-1, +1} where -1 comes first is reordered to (+1, -1); the first label of
//! a binary model is the positive class (decision value > 0). Multiclass models keep one weight
//! vector per class (one-vs-rest). In a subproblem the positive class gets `C * weight(label)`,
//! the other samples `C` (binary: each class its own weighted C); per-sample weights multiply.
//! When a bias value `B` is set, a constant feature `B` is appended and its weight (regularized
//! like the others) is stored as the last entry of each weight vector.

use std::io::{BufRead, Write};
use std::ops::Range;
use std::time::Duration;

use crate::data::{ops, Dataset, Features, Row};
use crate::error::{
    non_negative, positive, DataError, FitError, IoError, ParamError, ParseError, ParseErrorKind,
};
use crate::fit::{Control, CrossValidation, Fit, Report};
use crate::solver::dcd::{self, LinearDesign, SvcDual, SvrDual};
use crate::solver::newton::{self, ChunkSums, Shard, SvcPrimal, SvrPrimal};
use crate::solver::{BoxQp, Equality, Observer, Shrinking, SolverSettings, Status};

/// Most classes a model may have (fit and model files).
pub const MAX_CLASSES: usize = 65_536;
/// Most features a model file may declare.
pub const MAX_FEATURES: usize = i32::MAX as usize;
/// Longest line accepted in a model file, in bytes.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// The formulation, numbered as LIBLINEAR's `-s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinearSolver {
    /// `-s 1`: L2-regularized L2-loss (squared hinge) SVC, dual (`L2R_L2LOSS_SVC_DUAL`).
    L2LossSvcDual,
    /// `-s 2`: L2-regularized L2-loss SVC, primal (`L2R_L2LOSS_SVC`): truncated Newton whose
    /// passes over the data run on all threads (bit-identical results for any thread count).
    L2LossSvcPrimal,
    /// `-s 3`: L2-regularized L1-loss (hinge) SVC, dual (`L2R_L1LOSS_SVC_DUAL`).
    L1LossSvcDual,
    /// `-s 11`: L2-regularized L2-loss SVR, primal (`L2R_L2LOSS_SVR`), truncated Newton as `-s 2`.
    L2LossSvrPrimal,
    /// `-s 12`: L2-regularized L2-loss SVR, dual (`L2R_L2LOSS_SVR_DUAL`).
    L2LossSvrDual,
    /// `-s 13`: L2-regularized L1-loss SVR, dual (`L2R_L1LOSS_SVR_DUAL`).
    L1LossSvrDual,
}

impl LinearSolver {
    /// All supported solvers.
    pub const ALL: [LinearSolver; 6] = [
        LinearSolver::L2LossSvcDual,
        LinearSolver::L2LossSvcPrimal,
        LinearSolver::L1LossSvcDual,
        LinearSolver::L2LossSvrPrimal,
        LinearSolver::L2LossSvrDual,
        LinearSolver::L1LossSvrDual,
    ];

    /// LIBLINEAR's `-s` number.
    pub fn id(self) -> u32 {
        match self {
            LinearSolver::L2LossSvcDual => 1,
            LinearSolver::L2LossSvcPrimal => 2,
            LinearSolver::L1LossSvcDual => 3,
            LinearSolver::L2LossSvrPrimal => 11,
            LinearSolver::L2LossSvrDual => 12,
            LinearSolver::L1LossSvrDual => 13,
        }
    }

    /// The solver with LIBLINEAR's `-s` number `id`, if supported.
    pub fn from_id(id: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.id() == id)
    }

    /// LIBLINEAR's name in model files (`solver_type ...`).
    pub fn name(self) -> &'static str {
        match self {
            LinearSolver::L2LossSvcDual => "L2R_L2LOSS_SVC_DUAL",
            LinearSolver::L2LossSvcPrimal => "L2R_L2LOSS_SVC",
            LinearSolver::L1LossSvcDual => "L2R_L1LOSS_SVC_DUAL",
            LinearSolver::L2LossSvrPrimal => "L2R_L2LOSS_SVR",
            LinearSolver::L2LossSvrDual => "L2R_L2LOSS_SVR_DUAL",
            LinearSolver::L1LossSvrDual => "L2R_L1LOSS_SVR_DUAL",
        }
    }

    /// The solver named `name` in a model file, if supported.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// True for the regression (SVR) solvers.
    pub fn is_regression(self) -> bool {
        matches!(
            self,
            LinearSolver::L2LossSvrPrimal
                | LinearSolver::L2LossSvrDual
                | LinearSolver::L1LossSvrDual
        )
    }

    /// True for the primal (truncated Newton) solvers `-s 2` and `-s 11`.
    pub fn is_primal(self) -> bool {
        matches!(
            self,
            LinearSolver::L2LossSvcPrimal | LinearSolver::L2LossSvrPrimal
        )
    }

    /// LIBLINEAR's default stopping tolerance `-e` for this solver: 0.1 for the duals, 0.01 for
    /// `-s 2`, 0.0001 for `-s 11` (relative gradient norms, see [`crate::solver::newton`]).
    pub fn default_eps(self) -> f64 {
        match self {
            LinearSolver::L2LossSvcPrimal => 0.01,
            LinearSolver::L2LossSvrPrimal => 1e-4,
            _ => DEFAULT_EPS,
        }
    }

    /// True for the squared (L2) losses.
    pub fn is_l2_loss(self) -> bool {
        matches!(
            self,
            LinearSolver::L2LossSvcDual
                | LinearSolver::L2LossSvcPrimal
                | LinearSolver::L2LossSvrPrimal
                | LinearSolver::L2LossSvrDual
        )
    }
}

/// LIBLINEAR's default stopping tolerance for the dual solvers (`-e 0.1`); see
/// [`LinearSolver::default_eps`] for the primal ones.
pub const DEFAULT_EPS: f64 = 0.1;

/// Checked parameters of a linear SVM, the only form [`fit`] accepts. Made by
/// [`LinearParams::check`]; read through the getters.
#[derive(Debug, Clone, PartialEq)]
pub struct LinearValidParams {
    solver: LinearSolver,
    c: f64,
    /// `None`: the solver's default ([`LinearSolver::default_eps`]).
    eps: Option<f64>,
    p: f64,
    bias: Option<f64>,
    class_weights: Vec<(f64, f64)>,
    seed: u64,
    shrinking: Shrinking,
    /// `None`: the solver's default.
    max_passes: Option<u64>,
    time_limit: Option<Duration>,
}

/// Unchecked parameters of a linear SVM (a consuming builder); [`LinearParams::check`]
/// validates them.
#[derive(Debug, Clone, PartialEq)]
pub struct LinearParams(LinearValidParams);

impl LinearParams {
    /// Defaults: `C = 1`, `eps` the solver's ([`LinearSolver::default_eps`]), `p = 0.1`, no
    /// bias, no class weights, seed 0, shrinking on, at most [`dcd::DEFAULT_MAX_PASSES`]
    /// (10,000) passes (primal solvers: [`newton::DEFAULT_MAX_NEWTON`] Newton iterations), no
    /// time limit.
    pub fn new(solver: LinearSolver) -> Self {
        Self(LinearValidParams {
            solver,
            c: 1.0,
            eps: None,
            p: 0.1,
            bias: None,
            class_weights: Vec::new(),
            seed: 0,
            shrinking: Shrinking::On,
            max_passes: None,
            time_limit: None,
        })
    }
    /// Sets the formulation.
    pub fn solver(mut self, solver: LinearSolver) -> Self {
        self.0.solver = solver;
        self
    }
    /// Cost `C > 0` (`-c`, default 1).
    pub fn c(mut self, c: f64) -> Self {
        self.0.c = c;
        self
    }
    /// Stopping tolerance `> 0` (`-e`, default [`LinearSolver::default_eps`]; see
    /// [`crate::solver::dcd`] and [`crate::solver::newton`] for the rules).
    pub fn eps(mut self, eps: f64) -> Self {
        self.0.eps = Some(eps);
        self
    }
    /// SVR insensitive-tube width `>= 0` (`-p`, default 0.1); ignored by SVC.
    pub fn p(mut self, p: f64) -> Self {
        self.0.p = p;
        self
    }
    /// Appends a constant feature of value `b > 0` (`-B b`).
    pub fn bias(mut self, b: f64) -> Self {
        self.0.bias = Some(b);
        self
    }
    /// No bias feature (LIBLINEAR's default `-B -1`).
    pub fn no_bias(mut self) -> Self {
        self.0.bias = None;
        self
    }
    /// Multiplies C of class `label` by `factor >= 0` (`-wi`); repeated labels multiply.
    pub fn class_weight(mut self, label: f64, factor: f64) -> Self {
        self.0.class_weights.push((label, factor));
        self
    }
    /// Seed of the per-pass permutations (default 0).
    pub fn seed(mut self, seed: u64) -> Self {
        self.0.seed = seed;
        self
    }
    /// Shrinking heuristic (default on).
    pub fn shrinking(mut self, s: Shrinking) -> Self {
        self.0.shrinking = s;
        self
    }
    /// Most outer passes per subproblem, `>= 1` (default [`dcd::DEFAULT_MAX_PASSES`]); for the
    /// primal solvers, most Newton iterations (default [`newton::DEFAULT_MAX_NEWTON`]).
    pub fn max_passes(mut self, m: u64) -> Self {
        self.0.max_passes = Some(m);
        self
    }
    /// Wall-clock limit per subproblem.
    pub fn time_limit(mut self, t: Duration) -> Self {
        self.0.time_limit = Some(t);
        self
    }

    /// Validates the parameters.
    ///
    /// # Errors
    /// [`ParamError`] when `C`, `eps` or a bias value is not finite and `> 0`, `p` or a class
    /// weight is negative or NaN, a class-weight label is not finite, or `max_passes` is 0.
    pub fn check(self) -> Result<LinearValidParams, ParamError> {
        positive("C", self.0.c)?;
        if let Some(e) = self.0.eps {
            positive("eps", e)?;
        }
        non_negative("p", self.0.p)?;
        if let Some(b) = self.0.bias {
            check_bias_feature(b)?;
        }
        for &(label, factor) in &self.0.class_weights {
            if !label.is_finite() {
                return Err(ParamError::OutOfRange {
                    name: "class weight label",
                    value: label,
                    range: "finite numbers",
                });
            }
            non_negative("class weight", factor)?;
        }
        if self.0.max_passes == Some(0) {
            return Err(ParamError::OutOfRange {
                name: "max_passes",
                value: 0.0,
                range: "[1, inf)",
            });
        }
        Ok(self.0)
    }
}

/// How one binary or regression subproblem ended.
#[derive(Debug, Clone, PartialEq)]
pub struct SubproblemReport {
    /// The positive class of this subproblem (`None` for regression).
    pub positive_label: Option<f64>,
    /// How the solve ended.
    pub status: Status,
    /// Outer passes.
    pub iterations: u64,
    /// Dual objective in minimisation form (`f`; the dual value is `-f`).
    pub dual_objective: f64,
    /// Primal objective.
    pub primal_objective: f64,
    /// Duality gap `primal - dual >= 0`.
    pub gap: f64,
    /// Final violation (projected-gradient range for SVC, max subgradient violation for SVR).
    pub max_violation: f64,
}

impl SubproblemReport {
    /// The duality gap relative to the primal objective ([`crate::solver::relative_gap`]).
    pub fn relative_gap(&self) -> f64 {
        crate::solver::relative_gap(self.gap, self.primal_objective)
    }
}

/// What a fit reports besides the model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LinearFitReport {
    /// One entry per weight vector, in model order.
    pub subproblems: Vec<SubproblemReport>,
    /// Non-fatal issues (a class weight for an absent label, an iteration limit reached).
    pub warnings: Vec<String>,
}

impl Report for LinearFitReport {
    /// The worst status over the subproblems (an interruption outranks a limit).
    fn status(&self) -> Status {
        self.subproblems
            .iter()
            .fold(Status::Converged, |w, s| w.worst(s.status))
    }
}

/// A fitted linear model with its report (a linear fit has no state to resume from: one
/// stopped early is simply run again).
pub type LinearFit = Fit<LinearModel, LinearFitReport>;

/// Fits a linear model. The observer in `ctl` sees every pass and may stop the fit (e.g. a
/// [`crate::solver::Cancel`]): the subproblem being solved then ends with
/// [`Status::Interrupted`] at its current (feasible) dual point, and the subproblems not
/// reached keep zero weights and status `Interrupted`.
///
/// # Errors
/// [`DataError::Empty`] without samples, [`DataError::SingleClass`] with one class (SVC),
/// [`DataError::TooManyClasses`] above [`MAX_CLASSES`], [`FitError::Solve`] on numerical
/// breakdown. Hitting the pass or time limit is not an error: see the report.
pub fn fit(
    params: &LinearValidParams,
    data: &Dataset,
    ctl: &mut Control<'_>,
) -> Result<LinearFit, FitError> {
    if data.is_empty() {
        return Err(DataError::Empty.into());
    }
    if let Some(w) = &data.weights {
        super::train::check_weights(w, data.len())?;
    }
    if let Some(b) = params.bias {
        check_bias_scale(b, &data.x)?;
    }
    if params.solver.is_regression() {
        params.fit_svr(data, ctl.observer(), None)
    } else {
        params.fit_svc(data, ctl.observer(), None)
    }
}

/// One process's view of a data set split by rows across processes (row blocks in process
/// order), for [`fit_shard`]. The caller learns the global facts once (an all-gather of the
/// blocks' labels and rows' work) and supplies the reductions.
pub struct LinearShard<'a> {
    /// Number of samples in all the shards.
    pub n_samples: usize,
    /// The labels of all the shards in order of first appearance: [`crate::data::first_appearances`]
    /// of the shards' own [`Dataset::labels_in_order`], concatenated in row order.
    pub labels: Vec<f64>,
    /// This shard's chunks of the global cut (see [`newton::Shard`]).
    pub chunks: Vec<Range<usize>>,
    /// The reductions across the shards.
    pub sums: &'a mut dyn ChunkSums,
}

/// Fits a linear model with a primal solver (`-s 2`, `-s 11`) on this process's shard of a data
/// set split by rows: every shard calls it with its own rows (`data.x` as wide as the whole data
/// set's, in the storage a single process would choose) and the same parameters; every shard
/// gets the model of [`fit`] on all the rows, bit for bit, and the same report. The observer
/// must not stop one shard alone and `params` must have no time limit (see
/// [`newton::ChunkSums`]).
///
/// # Errors
/// As [`fit`], on every shard when any shard's input is invalid;
/// [`ParamError::Incompatible`] for a dual solver or a time limit.
pub fn fit_shard(
    params: &LinearValidParams,
    data: &Dataset,
    shard: LinearShard<'_>,
    ctl: &mut Control<'_>,
) -> Result<LinearFit, FitError> {
    if !params.solver.is_primal() {
        return Err(ParamError::Incompatible(
            "a data set split across processes is trained by the primal solvers only (-s 2, -s 11)",
        )
        .into());
    }
    if params.time_limit.is_some() {
        return Err(ParamError::Incompatible(
            "a data set split across processes is trained without a time limit",
        )
        .into());
    }
    if shard.n_samples == 0 {
        return Err(DataError::Empty.into());
    }
    // Local checks first, then one reduction so that every shard learns of any failure; the
    // bias check needs the largest row norm of all the shards.
    let mut local: Result<(), FitError> = Ok(());
    if let Some(w) = &data.weights {
        local = super::train::check_weights(w, data.len()).map_err(FitError::from);
    }
    let width = data.n_features() as f64;
    let mut facts = [
        if local.is_err() { 1.0 } else { 0.0 },
        max_sq_norm(&data.x),
        width,
        -width,
    ];
    shard.sums.max(&mut facts);
    local?;
    if facts[0] > 0.0 {
        return Err(DataError::Shards {
            reason: "the data of another shard is invalid",
        }
        .into());
    }
    if facts[2] != width || -facts[3] != width {
        return Err(DataError::Shards {
            reason: "the shards have different feature counts",
        }
        .into());
    }
    if let Some(b) = params.bias {
        bias_against_norm(b, facts[1])?;
    }
    let mut dist = Dist {
        labels: shard.labels,
        chunks: shard.chunks,
        sums: shard.sums,
    };
    if params.solver.is_regression() {
        params.fit_svr(data, ctl.observer(), Some(&mut dist))
    } else {
        params.fit_svc(data, ctl.observer(), Some(&mut dist))
    }
}

/// The global facts and reductions of a fit on one shard.
struct Dist<'a> {
    labels: Vec<f64>,
    chunks: Vec<Range<usize>>,
    sums: &'a mut dyn ChunkSums,
}

impl Dist<'_> {
    fn shard(&mut self) -> Shard<'_> {
        Shard {
            chunks: self.chunks.clone(),
            sums: &mut *self.sums,
        }
    }
}

impl LinearValidParams {
    /// The formulation (`-s`).
    pub fn solver(&self) -> LinearSolver {
        self.solver
    }
    /// Cost `C` (`-c`).
    pub fn c(&self) -> f64 {
        self.c
    }
    /// Stopping tolerance (`-e`; the solver's default when none was given).
    pub fn eps(&self) -> f64 {
        self.eps.unwrap_or(self.solver.default_eps())
    }
    /// SVR insensitive-tube width (`-p`).
    pub fn p(&self) -> f64 {
        self.p
    }
    /// The bias feature value `B` (`-B`), if any.
    pub fn bias(&self) -> Option<f64> {
        self.bias
    }
    /// Class weights (`-wi`) as (label, factor) pairs, in the order given.
    pub fn class_weights(&self) -> &[(f64, f64)] {
        &self.class_weights
    }
    /// Seed of the per-pass permutations.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    fn settings(&self) -> SolverSettings {
        SolverSettings {
            tol: self.eps.unwrap_or(self.solver.default_eps()),
            shrinking: self.shrinking,
            max_iter: Some(self.max_passes.unwrap_or(if self.solver.is_primal() {
                newton::DEFAULT_MAX_NEWTON
            } else {
                dcd::DEFAULT_MAX_PASSES
            })),
            time_limit: self.time_limit,
        }
    }

    /// Per-sample (upper bound, diagonal shift) for cost `c_i`.
    fn bound_and_shift(&self, c_i: f64) -> (f64, f64) {
        if c_i <= 0.0 {
            // A zero-weight sample cannot move: pin it at 0 in either loss.
            (0.0, 0.0)
        } else if self.solver.is_l2_loss() {
            (f64::INFINITY, 0.5 / c_i)
        } else {
            (c_i, 0.0)
        }
    }

    // One piece: the one-vs-rest loop reuses its label, cost and dual buffers across classes
    // and skips the classes after a stop.
    fn fit_svc(
        &self,
        data: &Dataset,
        mut obs: &mut dyn Observer,
        mut dist: Option<&mut Dist<'_>>,
    ) -> Result<LinearFit, FitError> {
        let prm = self;
        let mut labels = match &dist {
            Some(d) => d.labels.clone(),
            None => data.labels_in_order(),
        };
        if labels.len() == 1 {
            return Err(DataError::SingleClass { label: labels[0] }.into());
        }
        if labels.len() > MAX_CLASSES {
            return Err(DataError::TooManyClasses {
                found: labels.len(),
                limit: MAX_CLASSES,
            }
            .into());
        }
        if labels == [-1.0, 1.0] {
            labels.swap(0, 1);
        }
        let mut warnings = Vec::new();
        let mut weighted_c = vec![prm.c; labels.len()];
        for &(label, factor) in &prm.class_weights {
            match labels.iter().position(|&l| l == label) {
                Some(k) => weighted_c[k] *= factor,
                None => warnings.push(format!(
                    "class weight given for label {label}, which is not in the data"
                )),
            }
        }
        let n = data.len();
        let class_of: Vec<usize> = data
            .y
            .iter()
            .map(|v| labels.iter().position(|l| l == v).unwrap_or(0))
            .collect();
        let nr_w = if labels.len() == 2 { 1 } else { labels.len() };
        data.x.check_linear_model_width(nr_w)?;
        let settings = self.settings();
        let design = LinearDesign {
            x: &data.x,
            bias: prm.bias,
        };
        // The dual solvers' arrays (the primal ones need only y and the costs).
        let dual_len = if prm.solver.is_primal() { 0 } else { n };
        let p = vec![-1.0; dual_len];
        let (mut upper, mut shift) = (vec![0.0; dual_len], vec![0.0; dual_len]);
        let mut alpha = vec![0.0; dual_len];
        let mut y = vec![0i8; n];
        let mut cost = vec![0.0; n];
        let mut w_all = Vec::with_capacity(nr_w);
        let mut reports = Vec::with_capacity(nr_w);
        for k in 0..nr_w {
            if reports
                .iter()
                .any(|r: &SubproblemReport| r.status == Status::Interrupted)
            {
                reports.push(SubproblemReport {
                    positive_label: Some(labels[k]),
                    status: Status::Interrupted,
                    iterations: 0,
                    dual_objective: 0.0,
                    primal_objective: f64::INFINITY,
                    gap: f64::INFINITY,
                    max_violation: f64::INFINITY,
                });
                w_all.push(vec![
                    0.0;
                    data.n_features() + usize::from(prm.bias.is_some())
                ]);
                continue;
            }
            for i in 0..n {
                let pos = class_of[i] == k;
                y[i] = if pos { 1 } else { -1 };
                let c_class = if nr_w == 1 {
                    weighted_c[class_of[i]]
                } else if pos {
                    weighted_c[k]
                } else {
                    prm.c
                };
                cost[i] = c_class * data.weight(i);
            }
            let r = if prm.solver.is_primal() {
                // LIBLINEAR scales the relative gradient tolerance of -s 2 by min(#pos, #neg)/n
                // (counting the samples that take part).
                let (mut pos, mut neg) = (0usize, 0usize);
                for i in (0..n).filter(|&i| cost[i] > 0.0) {
                    if y[i] > 0 {
                        pos += 1;
                    } else {
                        neg += 1;
                    }
                }
                if let Some(d) = dist.as_mut() {
                    // Counts below 2^53 add exactly in f64.
                    let mut counts = [0.0; 2];
                    d.sums.sum(&mut counts, &mut |b, zero| {
                        if zero {
                            b.iter_mut().for_each(|v| *v = 0.0);
                        }
                        b[0] += pos as f64;
                        b[1] += neg as f64;
                    });
                    (pos, neg) = (counts[0] as usize, counts[1] as usize);
                }
                let mut st = settings;
                st.tol *= pos.min(neg).max(1) as f64 / (pos + neg).max(1) as f64;
                let prob = SvcPrimal {
                    design,
                    y: &y,
                    cost: &cost,
                };
                match dist.as_mut() {
                    Some(d) => newton::solve_svc_primal_shard(&prob, d.shard(), &st, &mut obs)?,
                    None => newton::solve_svc_primal(&prob, &st, &mut obs)?,
                }
            } else {
                for i in 0..n {
                    (upper[i], shift[i]) = self.bound_and_shift(cost[i]);
                }
                alpha.iter_mut().for_each(|a| *a = 0.0);
                let prob = SvcDual {
                    design,
                    qp: BoxQp {
                        p: &p,
                        y: &y,
                        upper: &upper,
                        equality: Equality::None,
                        fixed: None,
                    },
                    diag_shift: &shift,
                };
                dcd::solve_svc(&prob, &settings, prm.seed, &mut alpha, &mut obs)?
            };
            if r.info.status != Status::Converged {
                warnings.push(format!(
                    "subproblem for label {} stopped early ({}) after {} passes",
                    labels[k],
                    r.info.status.as_str(),
                    r.info.iterations
                ));
            }
            reports.push(SubproblemReport {
                positive_label: Some(labels[k]),
                status: r.info.status,
                iterations: r.info.iterations,
                dual_objective: r.info.objective,
                primal_objective: r.primal,
                gap: r.gap,
                max_violation: r.info.max_violation,
            });
            w_all.push(r.w);
        }
        for msg in &warnings {
            log::warn!("{msg}");
        }
        Ok(Fit {
            checkpoint: None,
            model: LinearModel {
                solver: prm.solver,
                labels,
                n_features: data.n_features(),
                bias: prm.bias,
                w: w_all,
            },
            report: LinearFitReport {
                subproblems: reports,
                warnings,
            },
        })
    }

    fn fit_svr(
        &self,
        data: &Dataset,
        mut obs: &mut dyn Observer,
        dist: Option<&mut Dist<'_>>,
    ) -> Result<LinearFit, FitError> {
        let prm = self;
        let n = data.len();
        data.x.check_linear_model_width(1)?;
        let mut warnings = Vec::new();
        if !prm.class_weights.is_empty() {
            warnings.push("class weights are ignored by regression".to_string());
        }
        let (mut upper, mut shift) = (vec![0.0; n], vec![0.0; n]);
        for i in 0..n {
            (upper[i], shift[i]) = self.bound_and_shift(prm.c * data.weight(i));
        }
        let design = LinearDesign {
            x: &data.x,
            bias: prm.bias,
        };
        let r = if prm.solver.is_primal() {
            let cost: Vec<f64> = (0..n).map(|i| prm.c * data.weight(i)).collect();
            let prob = SvrPrimal {
                design,
                target: &data.y,
                epsilon: prm.p,
                cost: &cost,
            };
            match dist {
                Some(d) => {
                    newton::solve_svr_primal_shard(&prob, d.shard(), &self.settings(), &mut obs)?
                }
                None => newton::solve_svr_primal(&prob, &self.settings(), &mut obs)?,
            }
        } else {
            let prob = SvrDual {
                design,
                target: &data.y,
                epsilon: prm.p,
                upper: &upper,
                diag_shift: &shift,
            };
            let mut beta = vec![0.0; n];
            dcd::solve_svr(&prob, &self.settings(), prm.seed, &mut beta, &mut obs)?
        };
        if r.info.status != Status::Converged {
            warnings.push(format!(
                "regression stopped early ({}) after {} passes",
                r.info.status.as_str(),
                r.info.iterations
            ));
        }
        for msg in &warnings {
            log::warn!("{msg}");
        }
        Ok(Fit {
            checkpoint: None,
            model: LinearModel {
                solver: prm.solver,
                labels: Vec::new(),
                n_features: data.n_features(),
                bias: prm.bias,
                w: vec![r.w],
            },
            report: LinearFitReport {
                subproblems: vec![SubproblemReport {
                    positive_label: None,
                    status: r.info.status,
                    iterations: r.info.iterations,
                    dual_objective: r.info.objective,
                    primal_objective: r.primal,
                    gap: r.gap,
                    max_violation: r.info.max_violation,
                }],
                warnings,
            },
        })
    }
}

/// Largest bias feature value `B` (`-B`) any data accepts: the solvers square it (`B^2` joins
/// every inner product `x_i'x_j`, and sums of `C B^2` enter the primal Hessian), and beyond
/// `1e150` that overflows `f64` or leaves no room for the sums.
pub const MAX_BIAS_FEATURE: f64 = 1e150;

/// Checks a bias feature value `B` (`-B`; train --linear and the robust SVMs): finite, `> 0`
/// and at most [`MAX_BIAS_FEATURE`]. NaN is refused, never read as "no bias".
///
/// # Errors
/// [`ParamError::NotPositive`] or [`ParamError::BiasTooLarge`].
pub fn check_bias_feature(b: f64) -> Result<(), ParamError> {
    positive("bias feature B", b)?;
    if b > MAX_BIAS_FEATURE {
        return Err(ParamError::BiasTooLarge {
            value: b,
            limit: MAX_BIAS_FEATURE,
        });
    }
    Ok(())
}

/// Checks that a bias feature value `B` keeps the features visible to the solver:
/// `B <= 2^26 max_i ||x_i||`. Beyond that `B^2 > 2^52 ||x_i||^2`, so `x_i'x_j + B^2` rounds to
/// `B^2` in double precision: every sample looks the same, the dual moves only the bias and `w`
/// comes out 0. Data whose rows are all zero accept any valid `B`.
///
/// # Errors
/// [`DataError::BiasSwampsFeatures`].
pub fn check_bias_scale(b: f64, x: &Features) -> Result<(), DataError> {
    bias_against_norm(b, max_sq_norm(x))
}

/// The largest squared row norm of `x` (0 without rows).
fn max_sq_norm(x: &Features) -> f64 {
    (0..x.n_rows())
        .map(|i| ops::sq_norm(x.row(i)))
        .fold(0.0f64, f64::max)
}

/// [`check_bias_scale`] given the largest squared row norm.
fn bias_against_norm(b: f64, max_sq: f64) -> Result<(), DataError> {
    let max_norm = max_sq.sqrt();
    let limit = max_norm * (1u64 << 26) as f64;
    if max_norm > 0.0 && b > limit {
        return Err(DataError::BiasSwampsFeatures {
            bias: b,
            max_norm,
            limit,
        });
    }
    Ok(())
}

/// A fitted linear model (LIBLINEAR layout: one weight vector for binary and regression models,
/// one per class for one-vs-rest).
#[derive(Debug, Clone, PartialEq)]
pub struct LinearModel {
    solver: LinearSolver,
    labels: Vec<f64>,
    n_features: usize,
    bias: Option<f64>,
    w: Vec<Vec<f64>>,
}

impl LinearModel {
    /// Builds a model from its parts (e.g. weights computed by another method).
    ///
    /// `w` holds one vector per decision function: 1 for regression and binary models (the first
    /// label positive), else one per label; each has `n_features` entries plus the bias-feature
    /// weight last when `bias` is set.
    ///
    /// # Errors
    /// [`DataError::Shape`] when the counts disagree, [`DataError::NonFinite`] for a non-finite
    /// weight, label or bias, [`DataError::TooManyClasses`] above [`MAX_CLASSES`].
    pub fn from_parts(
        solver: LinearSolver,
        labels: Vec<f64>,
        n_features: usize,
        bias: Option<f64>,
        w: Vec<Vec<f64>>,
    ) -> Result<Self, DataError> {
        let expected_w = if solver.is_regression() {
            if !labels.is_empty() {
                return Err(DataError::Shape {
                    what: "labels of a regression model",
                    expected: 0,
                    found: labels.len(),
                });
            }
            1
        } else {
            if labels.len() < 2 {
                return Err(DataError::Shape {
                    what: "labels",
                    expected: 2,
                    found: labels.len(),
                });
            }
            if labels.len() > MAX_CLASSES {
                return Err(DataError::TooManyClasses {
                    found: labels.len(),
                    limit: MAX_CLASSES,
                });
            }
            if labels.len() == 2 {
                1
            } else {
                labels.len()
            }
        };
        if w.len() != expected_w {
            return Err(DataError::Shape {
                what: "weight vectors",
                expected: expected_w,
                found: w.len(),
            });
        }
        let len = n_features + usize::from(bias.is_some());
        for (k, wk) in w.iter().enumerate() {
            if wk.len() != len {
                return Err(DataError::Shape {
                    what: "weight vector",
                    expected: len,
                    found: wk.len(),
                });
            }
            if wk.iter().any(|v| !v.is_finite()) {
                return Err(DataError::NonFinite {
                    what: "weight",
                    row: k,
                });
            }
        }
        if let Some(k) = labels.iter().position(|v| !v.is_finite()) {
            return Err(DataError::NonFinite {
                what: "label",
                row: k,
            });
        }
        if bias.is_some_and(|b| !(b.is_finite() && b >= 0.0)) {
            return Err(DataError::NonFinite {
                what: "bias",
                row: 0,
            });
        }
        Ok(Self {
            solver,
            labels,
            n_features,
            bias,
            w,
        })
    }

    /// The formulation it was trained with.
    pub fn solver(&self) -> LinearSolver {
        self.solver
    }
    /// Class labels in model order (empty for regression). For binary models the first label is
    /// the positive class.
    pub fn labels(&self) -> &[f64] {
        &self.labels
    }
    /// Number of features (without the bias feature).
    pub fn n_features(&self) -> usize {
        self.n_features
    }
    /// Number of features of `x` beyond the model's that hold a value in some row (0 when none
    /// does). Prediction ignores them, as LIBLINEAR does; front ends warn.
    pub fn extra_features(&self, x: &Features) -> usize {
        if x.n_cols() > self.n_features && x.has_values_beyond(self.n_features) {
            x.n_cols() - self.n_features
        } else {
            0
        }
    }
    /// The bias feature value `B`, if any.
    pub fn bias(&self) -> Option<f64> {
        self.bias
    }
    /// Number of weight vectors (1 for binary and regression, else the number of classes).
    pub fn n_weight_vectors(&self) -> usize {
        self.w.len()
    }
    /// Weight vector `k`: `n_features` entries, plus the bias-feature weight last if any.
    ///
    /// # Panics
    /// If `k >= n_weight_vectors()`.
    pub fn weights(&self, k: usize) -> &[f64] {
        &self.w[k]
    }
    /// Intercept of decision function `k` (`B` times the bias-feature weight; 0 without bias).
    ///
    /// # Panics
    /// If `k >= n_weight_vectors()`.
    pub fn intercept(&self, k: usize) -> f64 {
        self.bias.map_or(0.0, |b| b * self.w[k][self.n_features])
    }

    /// Decision values of one row into `out` (length [`Self::n_weight_vectors`]). Features
    /// beyond the model's `n_features` are ignored, as LIBLINEAR does.
    pub fn decision_row_into(&self, row: Row<'_>, out: &mut [f64]) {
        for (k, o) in out.iter_mut().enumerate().take(self.w.len()) {
            *o = ops::dot_dense(row, &self.w[k][..self.n_features]) + self.intercept(k);
        }
    }

    /// Decision values, row-major: `n_rows * n_weight_vectors()` entries.
    pub fn decision_values(&self, x: &Features) -> Vec<f64> {
        let m = self.w.len();
        let mut out = vec![0.0; x.n_rows() * m];
        for (i, chunk) in out.chunks_mut(m.max(1)).enumerate().take(x.n_rows()) {
            self.decision_row_into(x.row(i), chunk);
        }
        out
    }

    /// Prediction for one row: the label (classification) or the value (regression).
    pub fn predict_row(&self, row: Row<'_>) -> f64 {
        let mut best = (f64::NEG_INFINITY, 0usize);
        for k in 0..self.w.len() {
            let v = ops::dot_dense(row, &self.w[k][..self.n_features]) + self.intercept(k);
            if self.solver.is_regression() {
                return v;
            }
            if self.w.len() == 1 {
                return if v > 0.0 {
                    self.labels[0]
                } else {
                    self.labels[1]
                };
            }
            if v > best.0 || k == 0 {
                best = (v, k);
            }
        }
        self.labels.get(best.1).copied().unwrap_or(f64::NAN)
    }

    /// Predictions for every row.
    pub fn predict(&self, x: &Features) -> Vec<f64> {
        (0..x.n_rows())
            .map(|i| self.predict_row(x.row(i)))
            .collect()
    }

    /// Writes the model in LIBLINEAR's text format. Floats are written in shortest round-trip
    /// form (plain decimal, or `1.5e-7` style for very small or large magnitudes), which
    /// LIBLINEAR's reader accepts and which reads back bit-exactly.
    ///
    /// # Errors
    /// I/O errors, and `InvalidData` if a weight or label is not finite.
    pub fn write<W: Write>(&self, mut out: W) -> std::io::Result<()> {
        let bad = |what: &str| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("non-finite {what} cannot be written"),
            )
        };
        if self.labels.iter().any(|v| !v.is_finite()) {
            return Err(bad("label"));
        }
        if self.w.iter().flatten().any(|v| !v.is_finite()) {
            return Err(bad("weight"));
        }
        writeln!(out, "solver_type {}", self.solver.name())?;
        let nr_class = if self.solver.is_regression() {
            2
        } else {
            self.labels.len()
        };
        writeln!(out, "nr_class {nr_class}")?;
        if !self.solver.is_regression() {
            write!(out, "label")?;
            for &l in &self.labels {
                write!(out, " {}", fmt_f64(l))?;
            }
            writeln!(out)?;
        }
        writeln!(out, "nr_feature {}", self.n_features)?;
        match self.bias {
            Some(b) => {
                if !b.is_finite() {
                    return Err(bad("bias"));
                }
                writeln!(out, "bias {}", fmt_f64(b))?
            }
            None => writeln!(out, "bias -1")?,
        }
        writeln!(out, "w")?;
        let rows = self.n_features + usize::from(self.bias.is_some());
        for j in 0..rows {
            for wk in &self.w {
                write!(out, "{} ", fmt_f64(wk[j]))?;
            }
            writeln!(out)?;
        }
        Ok(())
    }

    /// Reads a LIBLINEAR model file (for the four supported solver types).
    ///
    /// # Errors
    /// [`IoError::Io`] from the reader; [`IoError::Parse`] with the 1-based line and column on
    /// malformed input or exceeded limits ([`MAX_CLASSES`], [`MAX_FEATURES`], [`MAX_LINE_BYTES`]).
    pub fn read<R: BufRead>(input: R) -> Result<Self, IoError> {
        Self::read_with_status(input).map(|(m, _)| m)
    }

    /// [`LinearModel::read`] plus the solver status the file records: [`Status::Converged`]
    /// unless it has a `status NAME` line, which this reader accepts as the flag of a fit that
    /// stopped early; [`LinearModel::write`] never writes it, so that LIBLINEAR's reader loads
    /// every file marginkit writes.
    ///
    /// # Errors
    /// As [`LinearModel::read`].
    pub fn read_with_status<R: BufRead>(mut input: R) -> Result<(Self, Status), IoError> {
        let mut parser = ModelParser::default();
        let mut buf = Vec::new();
        let mut line_no = 0usize;
        loop {
            buf.clear();
            let got = std::io::Read::take(&mut input, MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut buf)?;
            if got == 0 {
                break;
            }
            line_no += 1;
            if buf.len() > MAX_LINE_BYTES {
                return Err(ParseError {
                    line: line_no,
                    column: MAX_LINE_BYTES + 1,
                    kind: ParseErrorKind::Limit {
                        what: "line length in bytes",
                        limit: MAX_LINE_BYTES as u64,
                    },
                }
                .into());
            }
            let text = std::str::from_utf8(&buf).map_err(|e| ParseError {
                line: line_no,
                column: e.valid_up_to() + 1,
                kind: ParseErrorKind::Utf8,
            })?;
            parser.line(line_no, text)?;
        }
        let status = parser.status.unwrap_or(Status::Converged);
        Ok((parser.finish(line_no)?, status))
    }

    /// Reads a LIBLINEAR model file from memory.
    ///
    /// # Errors
    /// As [`LinearModel::read`] (only parse errors can occur).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ParseError> {
        match Self::read(bytes) {
            Ok(m) => Ok(m),
            Err(IoError::Parse(e)) => Err(e),
            Err(other) => Err(ParseError {
                line: 0,
                column: 0,
                kind: ParseErrorKind::Model(other.to_string()),
            }),
        }
    }
}

/// Shortest round-trip text of a finite float, never in a form C's `strtod` rejects.
fn fmt_f64(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 || (1e-5..1e16).contains(&a) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// Whitespace-separated tokens with their 1-based character columns (lazy: no allocation).
fn tokens(text: &str) -> Tokens<'_> {
    Tokens {
        text,
        chars: text.char_indices(),
        col: 0,
    }
}

struct Tokens<'a> {
    text: &'a str,
    chars: std::str::CharIndices<'a>,
    col: usize,
}

impl<'a> Iterator for Tokens<'a> {
    type Item = (usize, &'a str);
    fn next(&mut self) -> Option<Self::Item> {
        let (start_col, start_byte) = loop {
            let (b, ch) = self.chars.next()?;
            self.col += 1;
            if !ch.is_whitespace() {
                break (self.col, b);
            }
        };
        for (b, ch) in self.chars.by_ref() {
            self.col += 1;
            if ch.is_whitespace() {
                return Some((start_col, &self.text[start_byte..b]));
            }
        }
        Some((start_col, &self.text[start_byte..]))
    }
}

fn perr(line: usize, column: usize, kind: ParseErrorKind) -> ParseError {
    ParseError { line, column, kind }
}

fn model_err(line: usize, column: usize, msg: impl Into<String>) -> ParseError {
    perr(line, column, ParseErrorKind::Model(msg.into()))
}

fn truncate(s: &str) -> String {
    s.chars().take(32).collect()
}

fn parse_f64(line: usize, col: usize, tok: &str, what: &'static str) -> Result<f64, ParseError> {
    let v: f64 = tok.parse().map_err(|_| {
        perr(
            line,
            col,
            ParseErrorKind::Expected {
                expected: "a number",
                found: truncate(tok),
            },
        )
    })?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(perr(line, col, ParseErrorKind::NonFinite { what }))
    }
}

fn parse_count(
    line: usize,
    col: usize,
    tok: &str,
    what: &'static str,
    limit: usize,
) -> Result<usize, ParseError> {
    let v: u64 = tok.parse().map_err(|_| {
        perr(
            line,
            col,
            ParseErrorKind::Expected {
                expected: "a non-negative integer",
                found: truncate(tok),
            },
        )
    })?;
    if v > limit as u64 {
        return Err(perr(
            line,
            col,
            ParseErrorKind::Limit {
                what,
                limit: limit as u64,
            },
        ));
    }
    Ok(v as usize)
}

#[derive(Default)]
struct ModelParser {
    solver: Option<LinearSolver>,
    nr_class: Option<usize>,
    labels: Option<Vec<f64>>,
    nr_feature: Option<usize>,
    bias: Option<Option<f64>>,
    /// `Some` once the `w` line was seen: (rows expected, nr_w, values row-major).
    body: Option<(usize, usize, Vec<f64>)>,
    status: Option<Status>,
}

impl ModelParser {
    fn line(&mut self, ln: usize, text: &str) -> Result<(), ParseError> {
        let mut toks = tokens(text);
        let Some((c0, key)) = toks.next() else {
            return Ok(()); // blank lines are allowed anywhere
        };
        if let Some((rows, nr_w, values)) = &mut self.body {
            let done = values.len() / *nr_w;
            if done >= *rows {
                return Err(model_err(ln, c0, "unexpected content after the weights"));
            }
            let mut count = 0;
            for (col, tok) in std::iter::once((c0, key)).chain(toks) {
                if count == *nr_w {
                    return Err(model_err(
                        ln,
                        col,
                        format!("more than {nr_w} weights on a row"),
                    ));
                }
                values.push(parse_f64(ln, col, tok, "weight")?);
                count += 1;
            }
            if count != *nr_w {
                return Err(model_err(
                    ln,
                    text.chars().count() + 1,
                    format!("expected {nr_w} weights on the row, found {count}"),
                ));
            }
            return Ok(());
        }
        let dup = |present: bool| -> Result<(), ParseError> {
            if present {
                Err(model_err(ln, c0, format!("duplicate keyword {key:?}")))
            } else {
                Ok(())
            }
        };
        let one = |toks: &mut dyn Iterator<Item = (usize, &str)>| {
            let v = toks.next().ok_or_else(|| {
                model_err(ln, text.chars().count() + 1, format!("{key} needs a value"))
            })?;
            if let Some((c, _)) = toks.next() {
                return Err(model_err(ln, c, format!("{key} takes one value")));
            }
            Ok::<(usize, String), ParseError>((v.0, v.1.to_string()))
        };
        match key {
            "solver_type" => {
                dup(self.solver.is_some())?;
                let (c, name) = one(&mut toks)?;
                self.solver = Some(LinearSolver::from_name(&name).ok_or_else(|| {
                    model_err(
                        ln,
                        c,
                        format!("unsupported solver type {:?}", truncate(&name)),
                    )
                })?);
            }
            "nr_class" => {
                dup(self.nr_class.is_some())?;
                let (c, v) = one(&mut toks)?;
                let k = parse_count(ln, c, &v, "nr_class", MAX_CLASSES)?;
                if k < 2 {
                    return Err(model_err(ln, c, "nr_class must be at least 2"));
                }
                self.nr_class = Some(k);
            }
            "label" => {
                dup(self.labels.is_some())?;
                let mut labels = Vec::new();
                let mut seen = std::collections::HashSet::new();
                for (c, tok) in toks {
                    if labels.len() >= MAX_CLASSES {
                        return Err(perr(
                            ln,
                            c,
                            ParseErrorKind::Limit {
                                what: "number of labels",
                                limit: MAX_CLASSES as u64,
                            },
                        ));
                    }
                    let v = parse_f64(ln, c, tok, "label")?;
                    // -0 and 0 are the same label.
                    if !seen.insert((v + 0.0).to_bits()) {
                        return Err(model_err(ln, c, format!("duplicate label {v}")));
                    }
                    labels.push(v);
                }
                self.labels = Some(labels);
            }
            "nr_feature" => {
                dup(self.nr_feature.is_some())?;
                let (c, v) = one(&mut toks)?;
                self.nr_feature = Some(parse_count(ln, c, &v, "nr_feature", MAX_FEATURES)?);
            }
            "bias" => {
                dup(self.bias.is_some())?;
                let (c, v) = one(&mut toks)?;
                let b = parse_f64(ln, c, &v, "bias")?;
                self.bias = Some(if b < 0.0 { None } else { Some(b) });
            }
            "status" => {
                dup(self.status.is_some())?;
                let (c, v) = one(&mut toks)?;
                self.status = Some(super::model_io::status_from_name(&v).ok_or_else(|| {
                    model_err(ln, c, format!("unknown status {:?}", truncate(&v)))
                })?);
            }
            "w" => {
                if let Some((c, _)) = toks.next() {
                    return Err(model_err(ln, c, "the w line takes no value"));
                }
                self.start_body(ln, c0)?;
            }
            other => {
                return Err(model_err(
                    ln,
                    c0,
                    format!("unknown keyword {:?}", truncate(other)),
                ))
            }
        }
        Ok(())
    }

    fn start_body(&mut self, ln: usize, col: usize) -> Result<(), ParseError> {
        let missing = |what: &str| model_err(ln, col, format!("{what} missing before w"));
        let solver = self.solver.ok_or_else(|| missing("solver_type"))?;
        let nr_class = self.nr_class.ok_or_else(|| missing("nr_class"))?;
        let nr_feature = self.nr_feature.ok_or_else(|| missing("nr_feature"))?;
        let bias = self.bias.ok_or_else(|| missing("bias"))?;
        let nr_w = if solver.is_regression() {
            if nr_class != 2 {
                return Err(model_err(ln, col, "a regression model has nr_class 2"));
            }
            if self.labels.is_some() {
                return Err(model_err(ln, col, "a regression model has no labels"));
            }
            1
        } else {
            let labels = self.labels.as_ref().ok_or_else(|| missing("label"))?;
            if labels.len() != nr_class {
                return Err(model_err(
                    ln,
                    col,
                    format!("nr_class {nr_class} but {} labels", labels.len()),
                ));
            }
            if nr_class == 2 {
                1
            } else {
                nr_class
            }
        };
        let rows = nr_feature + usize::from(bias.is_some());
        // Grow with the input rather than trusting the header's size.
        self.body = Some((
            rows,
            nr_w,
            Vec::with_capacity(rows.saturating_mul(nr_w).min(1 << 16)),
        ));
        Ok(())
    }

    fn finish(self, last_line: usize) -> Result<LinearModel, ParseError> {
        let eof = last_line + 1;
        let Some((rows, nr_w, values)) = self.body else {
            return Err(model_err(eof, 1, "no w section"));
        };
        if values.len() != rows * nr_w {
            return Err(model_err(
                eof,
                1,
                format!(
                    "expected {rows} weight rows, found {}",
                    values.len() / nr_w.max(1)
                ),
            ));
        }
        let mut w = vec![Vec::with_capacity(rows); nr_w];
        for row in values.chunks(nr_w) {
            for (k, &v) in row.iter().enumerate() {
                w[k].push(v);
            }
        }
        let solver = self.solver.ok_or_else(|| model_err(eof, 1, "no solver"))?;
        Ok(LinearModel {
            solver,
            labels: self.labels.unwrap_or_default(),
            n_features: self.nr_feature.unwrap_or(0),
            bias: self.bias.flatten(),
            w,
        })
    }
}

/// k-fold cross-validation (stratified for classification, seeded by the parameters' seed): the
/// prediction for every sample from the model trained without its fold, and the worst status
/// of the folds' fits. `ctl`'s observer watches every fold's fit; its part callback gets the
/// index of each finished fold.
///
/// # Errors
/// As [`fit`] for any fold; [`DataError::TooFewRowsForFolds`] for fewer than two rows.
pub fn cross_validation(
    params: &LinearValidParams,
    data: &Dataset,
    k: usize,
    ctl: &mut Control<'_, (), usize>,
) -> Result<CrossValidation, FitError> {
    let n = data.len();
    if n == 0 {
        return Err(DataError::Empty.into());
    }
    // On the whole set first (a fold's fit would name the fold's size).
    if let Some(w) = &data.weights {
        super::train::check_weights(w, n)?;
    }
    let regression = params.solver.is_regression();
    let folds = super::train::fold_assignment(&data.y, k.clamp(1, n), !regression, params.seed);
    super::train::cross_validate(data, &folds, ctl, |train, test_x, obs| {
        let fit = fit(params, train, &mut Control::new(obs))?;
        let status = fit
            .report
            .subproblems
            .iter()
            .fold(Status::Converged, |w, s| w.worst(s.status));
        Ok((fit.model.predict(test_x), status))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_format_round_trips_and_avoids_inf() {
        for v in [
            0.0,
            -0.0,
            1.0,
            -2.5,
            0.1,
            1e-300,
            -4.9e-324,
            1.7976931348623157e308,
            123456789.12345679,
            1e15,
            1e16,
            3.0e-5,
            9.99e-6,
        ] {
            let s = fmt_f64(v);
            assert!(!s.contains("inf") && !s.contains("NaN"));
            assert!(s.len() < 30, "{s}");
            let back: f64 = s.parse().unwrap();
            assert_eq!(back.to_bits(), v.to_bits(), "{s}");
        }
    }

    #[test]
    fn tokens_report_columns() {
        let t: Vec<_> = tokens("  ab\tc  d").collect();
        assert_eq!(t, vec![(3, "ab"), (6, "c"), (9, "d")]);
    }

    #[test]
    fn solver_ids_and_names_round_trip() {
        for s in LinearSolver::ALL {
            assert_eq!(LinearSolver::from_id(s.id()), Some(s));
            assert_eq!(LinearSolver::from_name(s.name()), Some(s));
        }
        assert_eq!(LinearSolver::from_id(4), None);
    }
}
