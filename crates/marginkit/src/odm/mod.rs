//! Optimal margin distribution machine (ODM) and ODM clustering (ODMC).
//!
//! # The ODM classifier (Zhang & Zhou, AAAI 2018, Eq. 1 and the dual inside Eq. 3)
//!
//! Binary labels `y_i` in {-1, +1}, feature map `phi` of a kernel `K`, **no bias term**:
//! ```text
//! min_{w, xi, eps}  1/2 |w|^2 + (lambda/m) sum_i s_i (xi_i^2 + nu eps_i^2) / (1 - theta)^2
//! s.t.  y_i w'phi(x_i) >= 1 - theta - xi_i,   y_i w'phi(x_i) <= 1 + theta + eps_i
//! ```
//! (`s_i` are optional sample weights, 1 in the paper). With `c = m (1 - theta)^2 / (4 lambda)`,
//! `d = alpha1 - alpha2`, `z = y (.) d` the dual is
//! ```text
//! max_{alpha1, alpha2 >= 0}  G = -1/2 z'Kz - sum_i (c/s_i)(alpha1_i^2 + alpha2_i^2 / nu)
//!                                + (1 - theta) e'alpha1 - (1 + theta) e'alpha2
//! ```
//! with `w = sum_i z_i phi(x_i)` (decision value `f(x) = sum_i z_i K(x_i, x)`),
//! `xi_i = 2 c alpha1_i / s_i`, `eps_i = 2 c alpha2_i / (s_i nu)`.
//!
//! | paper | code |
//! |---|---|
//! | lambda, nu, theta | [`OdmValidParams::lambda`], `nu`, `theta` |
//! | alpha = [alpha1; alpha2] (2m) | `alpha` (first `m` entries alpha1, last `m` alpha2) |
//! | m(1-theta)^2/(4 lambda) | [`OdmConsts::c`] |
//! | tau (box of A) | [`safe_tau`] (ODMC only; the classifier leaves alpha unbounded above) |
//!
//! # Algorithm
//!
//! The dual is the box QP of [`crate::solver::BoxQp`] in minimization form over the `2m`
//! variables `a = [alpha1; alpha2]` with signs `s_a = (y_i, -y_i)`:
//! ```text
//! min_a 1/2 a'(S K2 S + D) a + p'a,  0 <= a,   p = [-(1-theta) e; (1+theta) e],
//! D = diag(2c/s_i, 2c/(nu s_i)),  K2 = [[K, K], [K, K]]
//! ```
//! so it is solved exactly by the existing engines, not a fork: by default the SMO engine
//! ([`crate::solver::smo`], single-variable clipped-Newton coordinate steps since there is no
//! equality; or the block working-set SMO, [`crate::solver::block`], with
//! [`OdmParams::qp_engine`] / `--solver block`) through [`OdmQ`] (the SVR matrix over the
//! cached kernel columns, with label signs and the diagonal shift); on request ([`OdmSolver::Dcd`]) the linear kernel by the dual
//! coordinate-descent engine ([`crate::solver::dcd`]) on the stacked design `[X; X]`, whose L2-loss primal
//! `1/2|w|^2 + sum_a (m_a - s_a w'x_a)_+^2 / (2 D_aa)` is exactly Eq. 1.
//!
//! # Stopping rule
//! The engines' KKT rule (SMO: largest projected gradient `<= tol`; DCD: spread of projected
//! gradients `<= tol`); the report then recomputes, independently of the solver, the primal
//! `P` (Eq. 1 at `w = sum z_i phi(x_i)`), the dual `G`, and the duality gap `P - G >= 0`.
//!
//! # Cost per iteration
//! SMO: one or two kernel columns (cached, `O(m nnz)` on a miss) plus `O(m)`; DCD: `O(nnz(x_i))`
//! per coordinate step, `O(nnz(X))` per pass over `2m` variables.
//!
//! # Model files
//! A fitted ODM is stored as a LIBSVM **C-SVC** kernel expansion (`svm_type c_svc`, `rho 0`,
//! support vectors the samples with `d_i != 0`, `sv_coef = y_i d_i`), so `marginkit predict` and
//! LIBSVM itself load it. The ODM parameters (lambda, nu, theta) are not part of the LIBSVM format;
//! they are in the fit report (`--json` of `marginkit train -s odm`).
//!
//! # Deviations
//! None from Eq. 1. Sample weights `s_i` (0 allowed: the sample is dropped) are an addition.
//!
//! Citation: T. Zhang, Z.-H. Zhou, "Optimal margin distribution clustering", AAAI 2018;
//! T. Zhang, Z.-H. Zhou, "Optimal margin distribution machine", arXiv:1604.03348 (2016).
// Index loops over paired arrays (labels, duals, rows) read like the formulas.
#![allow(clippy::needless_range_loop)]

pub mod odmc;
pub mod pool;

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use crate::data::{Dataset, Features};
use crate::error::{positive, DataError, FitError, ParamError};
use crate::fit::{Control, CrossValidation, Fit, Report};
use crate::kernel::cache::CacheStats;
use crate::kernel::qmatrix::{QMatrix, SvrQ};
use crate::kernel::KernelSpec;
use crate::solver::dcd::{self, LinearDesign, SvcDual};
use crate::solver::engine as qp_engine;
use crate::solver::smo::Smo;
use crate::solver::{
    BoxQp, Equality, Observer, Shrinking, SolveInfo, SolverSettings, Status, SvmSolver, VarFix,
};
use crate::svm::model::SvmModel;
use crate::svm::params::{KernelKind, KernelParams, SvmType};
use crate::svm::train::{class_order, cross_validate, fold_assignment};

/// Which engine solves the dual.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OdmSolver {
    /// SMO (every kernel). DCD is not the default even for the linear kernel: `alpha1_i` and
    /// `alpha2_i` share one row with opposite signs, so with a large lambda (small `c`) their
    /// 2 x 2 block is nearly singular and cyclic coordinate descent crawls (measured: 10,000
    /// passes without convergence at lambda = 1000 on 16 points), where SMO's greedy choice
    /// converges.
    Auto,
    /// SMO over the cached kernel matrix (any kernel).
    Smo,
    /// DCD over the stacked features `[X; X]` (linear kernel only): `O(nnz(x_i))` per step and
    /// no kernel cache, for large linear problems with a moderate lambda (see [`OdmSolver::Auto`]).
    Dcd,
}

/// Unchecked ODM parameters (builder). [`OdmParams::check`] gives the only form that fits.
#[derive(Debug, Clone, PartialEq)]
pub struct OdmParams(OdmValidParams);

/// Checked ODM parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct OdmValidParams {
    /// lambda > 0: weight of the loss (the paper's grid {1, 10, 100, 1000}).
    pub(crate) lambda: f64,
    /// nu > 0: relative weight of deviations above the margin mean.
    pub(crate) nu: f64,
    /// theta in [0, 1): width of the insensitive zone.
    pub(crate) theta: f64,
    /// Kernel (gamma defaults to 1/n_features as in LIBSVM).
    pub(crate) kernel: KernelParams,
    /// Solver limits and tolerance (default tol 1e-3).
    pub(crate) solver: SolverSettings,
    /// Engine choice.
    pub(crate) engine: OdmSolver,
    /// The QP engine of the SMO route (`--solver`): pair or block SMO.
    pub(crate) qp_engine: SvmSolver,
    /// Kernel cache in bytes (SMO).
    pub(crate) cache_bytes: u64,
    /// Seed of DCD's permutations and of cross-validation folds.
    pub(crate) seed: u64,
}

impl OdmValidParams {
    /// lambda > 0: weight of the loss.
    pub fn lambda(&self) -> f64 {
        self.lambda
    }
    /// nu > 0: relative weight of deviations above the margin mean.
    pub fn nu(&self) -> f64 {
        self.nu
    }
    /// theta in [0, 1): width of the insensitive zone.
    pub fn theta(&self) -> f64 {
        self.theta
    }
    /// Kernel, before gamma is resolved against the data.
    pub fn kernel(&self) -> &KernelParams {
        &self.kernel
    }
    /// Solver limits and tolerance.
    pub fn solver(&self) -> &SolverSettings {
        &self.solver
    }
    /// Engine choice.
    pub fn engine(&self) -> OdmSolver {
        self.engine
    }
    /// The QP engine of the SMO route (pair or block SMO).
    pub fn qp_engine(&self) -> SvmSolver {
        self.qp_engine
    }
    /// Kernel cache in bytes (SMO).
    pub fn cache_bytes(&self) -> u64 {
        self.cache_bytes
    }
    /// Seed of DCD's permutations and of cross-validation folds.
    pub fn seed(&self) -> u64 {
        self.seed
    }
}

impl Default for OdmParams {
    fn default() -> Self {
        Self::new()
    }
}

impl OdmParams {
    /// Default `lambda` (weight of the loss).
    pub const DEFAULT_LAMBDA: f64 = 1.0;
    /// Default `nu` (relative weight of deviations above the margin mean).
    pub const DEFAULT_NU: f64 = 0.5;
    /// Default `theta` (width of the insensitive zone).
    pub const DEFAULT_THETA: f64 = 0.2;

    /// Defaults: lambda 1, nu 0.5, theta 0.2, RBF with gamma 1/n_features, tol 1e-3,
    /// 200 MB cache.
    pub fn new() -> Self {
        Self(OdmValidParams {
            lambda: Self::DEFAULT_LAMBDA,
            nu: Self::DEFAULT_NU,
            theta: Self::DEFAULT_THETA,
            kernel: KernelParams::default(),
            solver: SolverSettings::default(),
            engine: OdmSolver::Auto,
            qp_engine: SvmSolver::Auto,
            cache_bytes: 200 << 20,
            seed: 0,
        })
    }
    /// lambda.
    pub fn lambda(mut self, v: f64) -> Self {
        self.0.lambda = v;
        self
    }
    /// nu.
    pub fn nu(mut self, v: f64) -> Self {
        self.0.nu = v;
        self
    }
    /// theta.
    pub fn theta(mut self, v: f64) -> Self {
        self.0.theta = v;
        self
    }
    /// Kernel.
    pub fn kernel(mut self, k: KernelParams) -> Self {
        self.0.kernel = k;
        self
    }
    /// Stopping tolerance.
    pub fn tol(mut self, v: f64) -> Self {
        self.0.solver.tol = v;
        self
    }
    /// Shrinking (SMO and DCD).
    pub fn shrinking(mut self, s: Shrinking) -> Self {
        self.0.solver.shrinking = s;
        self
    }
    /// Iteration limit.
    pub fn max_iter(mut self, n: u64) -> Self {
        self.0.solver.max_iter = Some(n);
        self
    }
    /// Time limit.
    pub fn time_limit(mut self, d: Duration) -> Self {
        self.0.solver.time_limit = Some(d);
        self
    }
    /// Engine.
    pub fn engine(mut self, e: OdmSolver) -> Self {
        self.0.engine = e;
        self
    }
    /// The QP engine of the SMO route (default [`SvmSolver::Auto`]; `--solver`):
    /// [`SvmSolver::Block`] runs the block working-set SMO on the same dual, with half of the
    /// cache budget for its working set's columns. Not with [`OdmSolver::Dcd`].
    pub fn qp_engine(mut self, e: SvmSolver) -> Self {
        self.0.qp_engine = e;
        self
    }
    /// Cache size in bytes.
    pub fn cache_bytes(mut self, b: u64) -> Self {
        self.0.cache_bytes = b;
        self
    }
    /// Seed.
    pub fn seed(mut self, s: u64) -> Self {
        self.0.seed = s;
        self
    }
    /// Validates every parameter (NaN rejected).
    ///
    /// # Errors
    /// [`ParamError`] naming the parameter.
    pub fn check(self) -> Result<OdmValidParams, ParamError> {
        let p = &self.0;
        positive("lambda", p.lambda)?;
        positive("nu", p.nu)?;
        if !(p.theta.is_finite() && (0.0..1.0).contains(&p.theta)) {
            return Err(ParamError::OutOfRange {
                name: "theta",
                value: p.theta,
                range: "[0, 1)",
            });
        }
        positive("tolerance", p.solver.tol)?;
        if let crate::svm::params::Gamma::Value(g) = p.kernel.gamma {
            positive("gamma", g)?;
        }
        if !p.kernel.coef0.is_finite() {
            return Err(ParamError::OutOfRange {
                name: "coef0",
                value: p.kernel.coef0,
                range: "finite values",
            });
        }
        if p.cache_bytes == 0 {
            return Err(ParamError::NotPositive {
                name: "cache size",
                value: 0.0,
            });
        }
        if p.engine == OdmSolver::Dcd && p.kernel.kind != KernelKind::Linear {
            return Err(ParamError::Incompatible(
                "the DCD engine needs the linear kernel",
            ));
        }
        if p.engine == OdmSolver::Dcd && p.qp_engine == SvmSolver::Block {
            return Err(ParamError::Incompatible(
                "-s odm: --solver block (the block working-set SMO) runs the SMO route; --engine dcd solves the dual by coordinate descent instead: give one of them",
            ));
        }
        Ok(self.0)
    }
}

/// The constants of the ODM dual for `m` samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OdmConsts {
    /// `c = m (1 - theta)^2 / (4 lambda)`.
    pub c: f64,
    /// nu.
    pub nu: f64,
    /// theta.
    pub theta: f64,
    /// lambda.
    pub lambda: f64,
    /// m.
    pub m: usize,
}

impl OdmConsts {
    /// Constants for `m` samples.
    pub fn new(lambda: f64, nu: f64, theta: f64, m: usize) -> Self {
        Self {
            c: m as f64 * (1.0 - theta) * (1.0 - theta) / (4.0 * lambda),
            nu,
            theta,
            lambda,
            m,
        }
    }

    /// The dual value `G(alpha, y)` (unit weights) from `alpha = [alpha1; alpha2]` and
    /// `z'Kz` (with `z = y (.) (alpha1 - alpha2)`).
    pub fn dual_value(&self, alpha: &[f64], zkz: f64) -> f64 {
        let m = self.m;
        let (a1, a2) = alpha.split_at(m);
        let (mut s1, mut q1, mut s2, mut q2) = (0.0, 0.0, 0.0, 0.0);
        for i in 0..m {
            s1 += a1[i];
            q1 += a1[i] * a1[i];
            s2 += a2[i];
            q2 += a2[i] * a2[i];
        }
        -0.5 * zkz - self.c * (q1 + q2 / self.nu) + (1.0 - self.theta) * s1
            - (1.0 + self.theta) * s2
    }

    /// The gradient of `G` w.r.t. `alpha` into `grad` (length `2m`), from the signed margins
    /// `yf_i = y_i (Kz)_i`: `dG/dalpha1 = (1-theta) - yf - 2c alpha1`,
    /// `dG/dalpha2 = yf - (1+theta) - (2c/nu) alpha2`.
    pub fn dual_gradient(&self, alpha: &[f64], yf: &[f64], grad: &mut [f64]) {
        let m = self.m;
        let (a1, a2) = alpha.split_at(m);
        let (g1, g2) = grad.split_at_mut(m);
        let two_c = 2.0 * self.c;
        let two_c_nu = two_c / self.nu;
        for i in 0..m {
            g1[i] = (1.0 - self.theta) - yf[i] - two_c * a1[i];
            g2[i] = yf[i] - (1.0 + self.theta) - two_c_nu * a2[i];
        }
    }

    /// The primal objective of Eq. 1 (unit weights) at the classifier with `|w|^2 = wnorm2`
    /// and signed margins `yf_i = y_i f(x_i)`.
    pub fn primal_value(&self, wnorm2: f64, yf: &[f64]) -> f64 {
        let mut loss = 0.0;
        for &v in yf {
            let xi = (1.0 - self.theta - v).max(0.0);
            let ep = (v - 1.0 - self.theta).max(0.0);
            loss += xi * xi + self.nu * ep * ep;
        }
        0.5 * wnorm2
            + self.lambda / self.m as f64 * loss / ((1.0 - self.theta) * (1.0 - self.theta))
    }
}

/// A box bound `tau` that never binds at the maximizer of `G(., y)` for any labeling (and any
/// mixture over labelings): `max(4 lambda, 2 lambda sqrt(nu)) / (sqrt(m) (1 - theta))`.
///
/// From `G(0) = 0 <= G(alpha*)`: `c|alpha1|^2 + (c/nu)|alpha2|^2 <= (1-theta) sqrt(m) |alpha1|`,
/// hence `|alpha1|_2 <= 4 lambda/(sqrt(m)(1-theta))` and `|alpha2|_2 <= 2 lambda sqrt(nu)/(sqrt(m)(1-theta))`.
pub fn safe_tau(lambda: f64, nu: f64, theta: f64, m: usize) -> f64 {
    (4.0 * lambda).max(2.0 * lambda * nu.sqrt()) / ((m.max(1) as f64).sqrt() * (1.0 - theta))
}

/// The ODM dual matrix over the cached kernel: `2m` variables, `Q_ab = s_a s_b K_ab + D_a [a = b]`
/// with `s_a = y_i` for `alpha1_i` and `-y_i` for `alpha2_i`. Wraps the SVR matrix (which caches
/// one kernel column per sample and expands it with the `+/-` signs) and applies the labels and
/// the diagonal shift while copying the column.
#[derive(Debug)]
pub struct OdmQ<'a> {
    inner: SvrQ<'a>,
    label: Vec<i8>,
    shift: Vec<f64>,
    diag: Vec<f64>,
    buf: [Vec<f32>; 2],
}

impl<'a> OdmQ<'a> {
    /// The matrix for features `x`, labels `y` in {-1, +1} (length `m`) and diagonal shifts
    /// `shift` (length `2m`: `2c/s_i` then `2c/(nu s_i)`).
    ///
    /// # Errors
    /// [`DataError::Shape`] for wrong lengths; [`DataError::Precomputed`] from the kernel rows.
    pub fn new(
        x: &'a Features,
        kernel: KernelSpec,
        y: &[i8],
        shift: &[f64],
        cache_bytes: usize,
    ) -> Result<Self, DataError> {
        let m = x.n_rows();
        if y.len() != m {
            return Err(DataError::Shape {
                what: "labels",
                expected: m,
                found: y.len(),
            });
        }
        if shift.len() != 2 * m {
            return Err(DataError::Shape {
                what: "diagonal shifts",
                expected: 2 * m,
                found: shift.len(),
            });
        }
        let inner = SvrQ::new(x, kernel, cache_bytes.saturating_sub(16 * m))?;
        let label: Vec<i8> = y.iter().chain(y.iter()).copied().collect();
        let diag = inner.diag().iter().zip(shift).map(|(k, s)| k + s).collect();
        Ok(Self {
            inner,
            label,
            shift: shift.to_vec(),
            diag,
            buf: [vec![0.0; 2 * m], vec![0.0; 2 * m]],
        })
    }
}

fn odm_expand(col: &[f32], label: &[i8], i: usize, shift: f64, out: &mut [f32]) {
    let li = label[i];
    for ((o, &v), &lj) in out.iter_mut().zip(col).zip(label) {
        *o = if lj == li { v } else { -v };
    }
    if i < out.len() {
        out[i] = (out[i] as f64 + shift) as f32;
    }
}

impl QMatrix for OdmQ<'_> {
    fn n(&self) -> usize {
        self.diag.len()
    }
    fn diag(&self) -> &[f64] {
        &self.diag
    }
    fn column(&mut self, i: usize, len: usize) -> &[f32] {
        let col = self.inner.column(i, len);
        odm_expand(col, &self.label, i, self.shift[i], &mut self.buf[0][..len]);
        &self.buf[0][..len]
    }
    fn pair(&mut self, i: usize, j: usize, len: usize) -> (&[f32], &[f32]) {
        let (ci, cj) = self.inner.pair(i, j, len);
        let [b0, b1] = &mut self.buf;
        odm_expand(ci, &self.label, i, self.shift[i], &mut b0[..len]);
        odm_expand(cj, &self.label, j, self.shift[j], &mut b1[..len]);
        (&self.buf[0][..len], &self.buf[1][..len])
    }
    fn swap_index(&mut self, i: usize, j: usize) {
        self.inner.swap_index(i, j);
        self.label.swap(i, j);
        self.shift.swap(i, j);
        self.diag.swap(i, j);
    }
    fn cache_stats(&self) -> CacheStats {
        self.inner.cache_stats()
    }
}

/// What an ODM fit reports.
#[derive(Debug, Clone, PartialEq)]
pub struct OdmReport {
    /// The engine's result (status, iterations, its objective in minimization form, violation).
    pub info: SolveInfo,
    /// Primal objective of Eq. 1 at the returned classifier (recomputed).
    pub primal: f64,
    /// Dual objective `G` (recomputed).
    pub dual: f64,
    /// `primal - dual` (>= 0 up to rounding; 0 at the optimum).
    pub gap: f64,
    /// Number of samples with `d_i != 0`.
    pub n_sv: usize,
    /// Engine used.
    pub engine: OdmSolver,
    /// Kernel with resolved parameters.
    pub kernel: KernelSpec,
    /// Seconds spent in the solver.
    pub solve_seconds: f64,
}

impl Report for OdmReport {
    /// How the solve ended.
    fn status(&self) -> Status {
        self.info.status
    }
}

/// The raw solution of an ODM dual.
#[derive(Debug, Clone, PartialEq)]
pub struct OdmSolution {
    /// `[alpha1; alpha2]`, length `2m`.
    pub alpha: Vec<f64>,
    /// Decision values `f(x_i)` at the training points.
    pub f: Vec<f64>,
    /// `|w|^2 = z'Kz`.
    pub wnorm2: f64,
    /// The report.
    pub report: OdmReport,
}

/// Solves the ODM dual for features `x`, labels `y` in {-1, +1} and optional sample weights.
///
/// # Errors
/// [`FitError`] for inconsistent data, a bad kernel or a solver breakdown.
pub fn solve(
    params: &OdmValidParams,
    x: &Features,
    y: &[i8],
    weights: Option<&[f64]>,
    obs: &mut dyn Observer,
) -> Result<OdmSolution, FitError> {
    let m = x.n_rows();
    if m == 0 {
        return Err(DataError::Empty.into());
    }
    if y.len() != m || weights.is_some_and(|w| w.len() != m) {
        return Err(DataError::Shape {
            what: "labels or weights",
            expected: m,
            found: y.len(),
        }
        .into());
    }
    let kernel = params.kernel.resolve(x.n_cols());
    kernel.check()?;
    let k = OdmConsts::new(params.lambda, params.nu, params.theta, m);
    let wt = |i: usize| weights.map_or(1.0, |w| w[i]);
    let mut p = vec![-(1.0 - params.theta); 2 * m];
    p[m..].fill(1.0 + params.theta);
    let mut sign = Vec::with_capacity(2 * m);
    sign.extend(y.iter().map(|&v| if v > 0 { 1i8 } else { -1 }));
    sign.extend(y.iter().map(|&v| if v > 0 { -1i8 } else { 1 }));
    let mut upper = vec![f64::INFINITY; 2 * m];
    let mut shift = vec![0.0; 2 * m];
    let mut fixed = vec![VarFix::Free; 2 * m];
    let mut any_fixed = false;
    for i in 0..m {
        let s = wt(i);
        if s > 0.0 {
            shift[i] = 2.0 * k.c / s;
            shift[m + i] = 2.0 * k.c / (s * params.nu);
        } else {
            // A zero-weight sample has no loss: its multipliers are 0.
            upper[i] = 0.0;
            upper[m + i] = 0.0;
            fixed[i] = VarFix::AtZero;
            fixed[m + i] = VarFix::AtZero;
            any_fixed = true;
        }
    }
    let qp = BoxQp {
        p: &p,
        y: &sign,
        upper: &upper,
        equality: Equality::None,
        fixed: any_fixed.then_some(&fixed[..]),
    };
    let engine = match params.engine {
        OdmSolver::Auto => OdmSolver::Smo,
        e => e,
    };
    let mut alpha = vec![0.0; 2 * m];
    let start = Instant::now();
    let info = match engine {
        OdmSolver::Dcd => {
            let idx: Vec<usize> = (0..m).chain(0..m).collect();
            let stacked = x.select_rows(&idx);
            let prob = SvcDual {
                design: LinearDesign {
                    x: &stacked,
                    bias: None,
                },
                qp,
                diag_shift: &shift,
            };
            let mut o = DynObs(obs);
            dcd::solve_svc(&prob, &params.solver, params.seed, &mut alpha, &mut o)?.info
        }
        _ => {
            let cost = qp_engine::row_cost(x, kernel);
            let plan = qp_engine::plan(params.qp_engine, params.cache_bytes, 2 * m, cost);
            let mut q = OdmQ::new(x, kernel, y, &shift, plan.cache_bytes)?;
            let smo = Smo::new(&params.solver);
            qp_engine::solve(&plan, &smo, &mut q, &qp, &mut alpha, obs)?.info
        }
    };
    let solve_seconds = start.elapsed().as_secs_f64();
    // Independent recomputation of f, |w|^2, P and G.
    let z: Vec<f64> = (0..m)
        .map(|i| f64::from(sign[i]) * (alpha[i] - alpha[m + i]))
        .collect();
    let f = kernel_times(x, kernel, &z);
    let wnorm2: f64 = z.iter().zip(&f).map(|(a, b)| a * b).sum();
    let (mut loss, mut quad) = (0.0, 0.0);
    let (mut s1, mut s2) = (0.0, 0.0);
    for i in 0..m {
        let s = wt(i);
        let yf = f64::from(sign[i]) * f[i];
        let xi = (1.0 - params.theta - yf).max(0.0);
        let ep = (yf - 1.0 - params.theta).max(0.0);
        loss += s * (xi * xi + params.nu * ep * ep);
        if s > 0.0 {
            quad += (alpha[i] * alpha[i] + alpha[m + i] * alpha[m + i] / params.nu) / s;
        }
        s1 += alpha[i];
        s2 += alpha[m + i];
    }
    let primal = 0.5 * wnorm2
        + params.lambda / m as f64 * loss / ((1.0 - params.theta) * (1.0 - params.theta));
    let dual = -0.5 * wnorm2 - k.c * quad + (1.0 - params.theta) * s1 - (1.0 + params.theta) * s2;
    let n_sv = z.iter().filter(|v| **v != 0.0).count();
    Ok(OdmSolution {
        alpha,
        f,
        wnorm2,
        report: OdmReport {
            info,
            primal,
            dual,
            gap: primal - dual,
            n_sv,
            engine,
            kernel,
            solve_seconds,
        },
    })
}

/// `(K z)_i = sum_j K(x_i, x_j) z_j` over the nonzero `z_j`, in parallel over `i` (each sum in a
/// fixed order, so the result does not depend on the thread count).
pub fn kernel_times(x: &Features, kernel: KernelSpec, z: &[f64]) -> Vec<f64> {
    use rayon::prelude::*;
    let nz: Vec<usize> = (0..z.len()).filter(|&j| z[j] != 0.0).collect();
    if kernel == KernelSpec::Linear {
        let mut w = vec![0.0; x.n_cols()];
        for &j in &nz {
            crate::data::ops::axpy(z[j], x.row(j), &mut w);
        }
        return (0..x.n_rows())
            .into_par_iter()
            .map(|i| crate::data::ops::dot_dense(x.row(i), &w))
            .collect();
    }
    let norms: Vec<f64> = if kernel.needs_norms() {
        (0..x.n_rows())
            .map(|i| crate::data::ops::sq_norm(x.row(i)))
            .collect()
    } else {
        Vec::new()
    };
    (0..x.n_rows())
        .into_par_iter()
        .map(|i| {
            let mut s = 0.0;
            for &j in &nz {
                let kv = if kernel == KernelSpec::Precomputed {
                    kernel.eval(x.row(i), x.row(j))
                } else {
                    let (ni, nj) = if norms.is_empty() {
                        (0.0, 0.0)
                    } else {
                        (norms[i], norms[j])
                    };
                    kernel.from_dot(crate::data::ops::dot(x.row(i), x.row(j)), ni, nj)
                };
                s += kv * z[j];
            }
            s
        })
        .collect()
}

struct DynObs<'o>(&'o mut dyn Observer);

impl Observer for DynObs<'_> {
    fn on_iter(&mut self, s: &crate::solver::IterStats) -> ControlFlow<()> {
        self.0.on_iter(s)
    }
}

/// Fits an ODM classifier on a two-class data set. The first label in LIBSVM's order
/// ([`class_order`]) is the positive class. The model is a C-SVC-format model (see the module
/// docs); `ctl`'s observer sees the solver's progress and may stop it.
///
/// # Errors
/// [`DataError::SingleClass`] / [`DataError::TooManyClasses`] unless there are exactly two
/// classes; as [`solve`] otherwise.
pub fn fit(
    params: &OdmValidParams,
    data: &Dataset,
    ctl: &mut Control,
) -> Result<Fit<SvmModel, OdmReport>, FitError> {
    if data.is_empty() {
        return Err(DataError::Empty.into());
    }
    let labels = class_order(&data.y);
    if labels.len() == 1 {
        return Err(DataError::SingleClass { label: labels[0] }.into());
    }
    if labels.len() > 2 {
        return Err(DataError::TooManyClasses {
            found: labels.len(),
            limit: 2,
        }
        .into());
    }
    let y: Vec<i8> = data
        .y
        .iter()
        .map(|&v| if v == labels[0] { 1 } else { -1 })
        .collect();
    let sol = solve(params, &data.x, &y, data.weights.as_deref(), ctl.observer())?;
    let m = data.len();
    let coef: Vec<f64> = (0..m)
        .map(|i| f64::from(y[i]) * (sol.alpha[i] - sol.alpha[m + i]))
        .collect();
    let mut sv_idx = Vec::new();
    let mut n_sv = vec![0usize; 2];
    for (c, want) in [1i8, -1].into_iter().enumerate() {
        for i in 0..m {
            if y[i] == want && coef[i] != 0.0 {
                sv_idx.push(i);
                n_sv[c] += 1;
            }
        }
    }
    let model = SvmModel {
        svm_type: SvmType::CSvc,
        kernel: sol.report.kernel,
        labels,
        n_sv,
        sv: data.x.select_rows(&sv_idx),
        sv_coef: vec![sv_idx.iter().map(|&i| coef[i]).collect()],
        sv_indices: Some(sv_idx),
        rho: vec![0.0],
        prob_a: Vec::new(),
        prob_b: Vec::new(),
        sv_norms: Vec::new(),
    }
    .with_norms();
    Ok(Fit {
        model,
        report: sol.report,
        checkpoint: None,
    })
}

/// Seeded (by the parameters' seed), stratified k-fold cross-validation of the ODM
/// classifier: the predicted label of every sample from the model trained without its fold,
/// and the worst status of the folds' fits. `ctl`'s observer watches every fold's fit; its
/// part callback gets the index of each finished fold.
///
/// # Errors
/// As [`fit`] for any fold; [`DataError::TooFewRowsForFolds`] for fewer than two rows.
pub fn cross_validation(
    params: &OdmValidParams,
    data: &Dataset,
    k: usize,
    ctl: &mut Control<'_, (), usize>,
) -> Result<CrossValidation, FitError> {
    let n = data.len();
    if n == 0 {
        return Err(DataError::Empty.into());
    }
    let folds = fold_assignment(&data.y, k.clamp(1, n), true, params.seed);
    cross_validate(data, &folds, ctl, |train, test_x, obs| {
        let fit = fit(params, train, &mut Control::new(obs))?;
        Ok((fit.model.predict(test_x)?, fit.report.status()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_reject_bad_values() {
        assert!(OdmParams::new().lambda(0.0).check().is_err());
        assert!(OdmParams::new().nu(f64::NAN).check().is_err());
        assert!(OdmParams::new().theta(1.0).check().is_err());
        assert!(OdmParams::new().theta(-0.1).check().is_err());
        assert!(OdmParams::new().engine(OdmSolver::Dcd).check().is_err());
        assert!(OdmParams::new().check().is_ok());
    }

    #[test]
    fn safe_tau_matches_the_bound() {
        let t = safe_tau(1.0, 0.5, 0.4, 16);
        assert!((t - 4.0 / (4.0 * 0.6)).abs() < 1e-12);
    }
}
