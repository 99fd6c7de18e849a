//! Parameters of the kernel SVMs: an unchecked builder ([`SvmParams`]) and its checked form
//! ([`SvmValidParams`]), the only one that trains.

use std::time::Duration;

pub use crate::data::memory::mem_available_bytes;
use crate::error::{positive, ParamError};
use crate::kernel::KernelSpec;
use crate::solver::smo::{SmoSnapshot, SnapshotEngine};
use crate::solver::{Shrinking, SolverSettings};

/// The five LIBSVM formulations, with LIBSVM's numbering (`-s`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SvmType {
    /// C-SVC (`-s 0`).
    CSvc,
    /// nu-SVC (`-s 1`).
    NuSvc,
    /// One-class SVM (`-s 2`).
    OneClass,
    /// epsilon-SVR (`-s 3`).
    EpsSvr,
    /// nu-SVR (`-s 4`).
    NuSvr,
}

impl SvmType {
    /// From LIBSVM's `-s` number.
    pub fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0 => SvmType::CSvc,
            1 => SvmType::NuSvc,
            2 => SvmType::OneClass,
            3 => SvmType::EpsSvr,
            4 => SvmType::NuSvr,
            _ => return None,
        })
    }
    /// LIBSVM's `-s` number.
    pub fn code(self) -> u8 {
        match self {
            SvmType::CSvc => 0,
            SvmType::NuSvc => 1,
            SvmType::OneClass => 2,
            SvmType::EpsSvr => 3,
            SvmType::NuSvr => 4,
        }
    }
    /// LIBSVM's name in model files.
    pub fn name(&self) -> &'static str {
        match self {
            SvmType::CSvc => "c_svc",
            SvmType::NuSvc => "nu_svc",
            SvmType::OneClass => "one_class",
            SvmType::EpsSvr => "epsilon_svr",
            SvmType::NuSvr => "nu_svr",
        }
    }
    /// From LIBSVM's name in model files.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            SvmType::CSvc,
            SvmType::NuSvc,
            SvmType::OneClass,
            SvmType::EpsSvr,
            SvmType::NuSvr,
        ]
        .into_iter()
        .find(|t| t.name() == name)
    }
    /// True for C-SVC and nu-SVC.
    pub fn is_classifier(&self) -> bool {
        matches!(self, SvmType::CSvc | SvmType::NuSvc)
    }
    /// True for the two regressions.
    pub fn is_regression(&self) -> bool {
        matches!(self, SvmType::EpsSvr | SvmType::NuSvr)
    }
}

/// The kernel family, before data-dependent defaults are resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelKind {
    /// `u'v`.
    Linear,
    /// `(gamma u'v + coef0)^degree`.
    Poly,
    /// `exp(-gamma |u-v|^2)`.
    Rbf,
    /// `tanh(gamma u'v + coef0)`.
    Sigmoid,
    /// Kernel values in the data.
    Precomputed,
}

impl KernelKind {
    /// From a kernel name: scikit-learn's (`linear`, `poly`, `rbf`, `sigmoid`, `precomputed`)
    /// or LIBSVM's model-file name (`polynomial`).
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "linear" => KernelKind::Linear,
            "poly" | "polynomial" => KernelKind::Poly,
            "rbf" => KernelKind::Rbf,
            "sigmoid" => KernelKind::Sigmoid,
            "precomputed" => KernelKind::Precomputed,
            _ => return None,
        })
    }
    /// From LIBSVM's `-t` number.
    pub fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0 => KernelKind::Linear,
            1 => KernelKind::Poly,
            2 => KernelKind::Rbf,
            3 => KernelKind::Sigmoid,
            4 => KernelKind::Precomputed,
            _ => return None,
        })
    }
}

/// gamma: a value, or LIBSVM's default `1 / n_features`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Gamma {
    /// `1 / n_features` of the training data (1 when there are no features).
    Auto,
    /// A given value (> 0).
    Value(f64),
}

impl Gamma {
    /// LIBSVM's `-g`: absent or 0 mean `1 / num_features` (svm-train resolves 0 the same way);
    /// any other value is kept, and checked when the parameters are.
    pub fn from_libsvm(g: Option<f64>) -> Self {
        match g {
            None => Gamma::Auto,
            Some(0.0) => Gamma::Auto,
            Some(v) => Gamma::Value(v),
        }
    }

    /// The value for data with `n_features` columns. This is the one place where the default
    /// gamma is resolved.
    pub fn resolve(self, n_features: usize) -> f64 {
        match self {
            Gamma::Value(g) => g,
            Gamma::Auto => 1.0 / n_features.max(1) as f64,
        }
    }
}

/// Kernel parameters before resolution against the data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KernelParams {
    /// Family (`-t`, default RBF).
    pub kind: KernelKind,
    /// gamma (`-g`, default 1/n_features).
    pub gamma: Gamma,
    /// coef0 (`-r`, default 0).
    pub coef0: f64,
    /// degree (`-d`, default 3).
    pub degree: u32,
}

impl Default for KernelParams {
    fn default() -> Self {
        Self {
            kind: KernelKind::Rbf,
            gamma: Gamma::Auto,
            coef0: 0.0,
            degree: 3,
        }
    }
}

impl KernelParams {
    /// From LIBSVM's flags `-t KIND -g GAMMA -r COEF0 -d DEGREE` (gamma as
    /// [`Gamma::from_libsvm`]). Every front end maps these flags through this one function.
    ///
    /// # Errors
    /// [`ParamError::OutOfRange`] for a kernel code other than 0-4.
    pub fn from_libsvm(
        code: u8,
        gamma: Option<f64>,
        coef0: f64,
        degree: u32,
    ) -> Result<Self, ParamError> {
        let kind = KernelKind::from_code(code).ok_or(ParamError::OutOfRange {
            name: "kernel type -t",
            value: f64::from(code),
            range: "0 (linear), 1 (polynomial), 2 (RBF), 3 (sigmoid), 4 (precomputed)",
        })?;
        Ok(Self {
            kind,
            gamma: Gamma::from_libsvm(gamma),
            coef0,
            degree,
        })
    }

    /// The concrete kernel for data with `n_features` columns.
    pub fn resolve(&self, n_features: usize) -> KernelSpec {
        let gamma = self.gamma.resolve(n_features);
        match self.kind {
            KernelKind::Linear => KernelSpec::Linear,
            KernelKind::Poly => KernelSpec::Poly {
                gamma,
                coef0: self.coef0,
                degree: self.degree,
            },
            KernelKind::Rbf => KernelSpec::Rbf { gamma },
            KernelKind::Sigmoid => KernelSpec::Sigmoid {
                gamma,
                coef0: self.coef0,
            },
            KernelKind::Precomputed => KernelSpec::Precomputed,
        }
    }
}

/// Whether to fit Platt/Laplace probability models (`-b`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probability {
    /// No probability model (`-b 0`).
    Off,
    /// Fit one by internal 5-fold cross-validation (`-b 1`).
    On,
}

/// How the binary sigmoids of a classification probability model (`-b 1`) are fitted to the
/// cross-validated decision values (Platt scaling, one sigmoid per class pair).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PlattFit {
    /// `P(+1 | f) = 1 / (1 + exp(A f))` (`B = 0`): the most probable class is always the predicted
    /// one. marginkit's default, a deliberate deviation from LIBSVM.
    #[default]
    ThroughOrigin,
    /// `P(+1 | f) = 1 / (1 + exp(A f + B))` fitted as LIBSVM does (Lin, Lin and Weng's Newton
    /// method with its published stop, [`super::probability::sigmoid_train_published`]): the
    /// model's `probA`/`probB` are LIBSVM's from the same decision values, and the most probable
    /// class can differ from the predicted one near the boundary. Needs `-b 1` and C-SVC or
    /// nu-SVC.
    WithIntercept,
}

pub use crate::solver::engine::SvmSolver;

/// Checked parameters of a kernel SVM, the only form [`super::fit`] accepts. Made by
/// [`SvmParams::check`]; read through the getters. Inside the crate a copy may change a field
/// only to a value that keeps the whole valid (each such place says why it does).
#[derive(Debug, Clone, PartialEq)]
pub struct SvmValidParams {
    /// Formulation (`-s`).
    pub(crate) svm_type: SvmType,
    /// Kernel (`-t -g -r -d`).
    pub(crate) kernel: KernelParams,
    /// C (`-c`, default 1) for C-SVC, epsilon-SVR and nu-SVR.
    pub(crate) c: f64,
    /// nu (`-n`, default 0.5) for nu-SVC, one-class and nu-SVR.
    pub(crate) nu: f64,
    /// epsilon of the epsilon-insensitive loss (`-p`, default 0.1).
    pub(crate) epsilon: f64,
    /// Cache budget in bytes (`-m` MB, default 200 MB); 64-bit.
    pub(crate) cache_bytes: u64,
    /// Stopping tolerance, shrinking and limits (`-e`, `-h`).
    pub(crate) solver: SolverSettings,
    /// Probability model (`-b`).
    pub(crate) probability: Probability,
    /// How a classification probability model fits its sigmoids (`--platt`).
    pub(crate) platt: PlattFit,
    /// Class weights (`-wLABEL W`): C of class LABEL is multiplied by W.
    pub(crate) class_weights: Vec<(f64, f64)>,
    /// Seed for every random choice (probability CV folds).
    pub(crate) seed: u64,
    /// QP engine (`--solver`).
    pub(crate) engine: SvmSolver,
}

impl SvmValidParams {
    /// Formulation (`-s`).
    pub fn svm_type(&self) -> SvmType {
        self.svm_type
    }
    /// Kernel (`-t -g -r -d`), gamma not yet resolved against the data.
    pub fn kernel(&self) -> KernelParams {
        self.kernel
    }
    /// C (`-c`) for C-SVC, epsilon-SVR and nu-SVR.
    pub fn c(&self) -> f64 {
        self.c
    }
    /// nu (`-n`) for nu-SVC, one-class and nu-SVR.
    pub fn nu(&self) -> f64 {
        self.nu
    }
    /// epsilon of the epsilon-insensitive loss (`-p`).
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }
    /// Cache budget in bytes (`-m`).
    pub fn cache_bytes(&self) -> u64 {
        self.cache_bytes
    }
    /// Stopping tolerance, shrinking and limits (`-e`, `-h`).
    pub fn solver(&self) -> &SolverSettings {
        &self.solver
    }
    /// Probability model (`-b`).
    pub fn probability(&self) -> Probability {
        self.probability
    }
    /// How a classification probability model fits its sigmoids (`--platt`).
    pub fn platt(&self) -> PlattFit {
        self.platt
    }
    /// Class weights (`-wLABEL W`) as (label, factor) pairs, in the order given.
    pub fn class_weights(&self) -> &[(f64, f64)] {
        &self.class_weights
    }
    /// Seed for every random choice (probability CV folds).
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// QP engine (`--solver`).
    pub fn engine(&self) -> SvmSolver {
        self.engine
    }
    /// The engine a solve of these parameters runs: the engine of the snapshot it continues
    /// from (`resume`), so that the continuation replays the uninterrupted solve whatever
    /// `--solver` says; else [`SvmValidParams::engine`] (every formulation alike: with
    /// [`SvmSolver::Auto`] the plan chooses by size and cache).
    pub(crate) fn planned_engine(&self, resume: Option<&SmoSnapshot>) -> SvmSolver {
        match resume.map(SmoSnapshot::engine) {
            Some(SnapshotEngine::Pair) => SvmSolver::Smo,
            Some(SnapshotEngine::Block) => SvmSolver::Block,
            None => self.engine,
        }
    }
    /// The same parameters without a probability model: valid, since only `-b 1` has a
    /// condition of its own (not with one-class), and the Platt fit, which needs `-b 1`, goes
    /// back to its default with it.
    pub(crate) fn without_probability(&self) -> Self {
        Self {
            probability: Probability::Off,
            platt: PlattFit::default(),
            ..self.clone()
        }
    }
    /// The same parameters with another C and gamma (a grid point), checked again.
    pub(crate) fn with_c_gamma(&self, c: f64, gamma: f64) -> Result<Self, ParamError> {
        SvmParams(self.clone()).c(c).gamma(gamma).check()
    }
}

/// Unchecked parameters (a consuming builder); [`SvmParams::check`] validates them.
#[derive(Debug, Clone, PartialEq)]
pub struct SvmParams(SvmValidParams);

impl Default for SvmParams {
    fn default() -> Self {
        Self(SvmValidParams {
            svm_type: SvmType::CSvc,
            kernel: KernelParams::default(),
            c: 1.0,
            nu: 0.5,
            epsilon: 0.1,
            cache_bytes: 200 << 20,
            solver: SolverSettings::default(),
            probability: Probability::Off,
            platt: PlattFit::default(),
            class_weights: Vec::new(),
            seed: 0,
            engine: SvmSolver::default(),
        })
    }
}

impl From<SvmValidParams> for SvmParams {
    /// Checked parameters as a builder again, to change some and check them anew.
    fn from(p: SvmValidParams) -> Self {
        Self(p)
    }
}

impl SvmParams {
    /// LIBSVM's defaults: C-SVC, RBF, gamma 1/n_features, C 1, eps 1e-3, 200 MB cache, shrinking.
    pub fn new() -> Self {
        Self::default()
    }
    /// Formulation.
    pub fn svm_type(mut self, t: SvmType) -> Self {
        self.0.svm_type = t;
        self
    }
    /// Kernel parameters.
    pub fn kernel(mut self, k: KernelParams) -> Self {
        self.0.kernel = k;
        self
    }
    /// gamma of the RBF, polynomial and sigmoid kernels (a fixed value instead of
    /// 1/n_features).
    pub fn gamma(mut self, g: f64) -> Self {
        self.0.kernel.gamma = Gamma::Value(g);
        self
    }
    /// C.
    pub fn c(mut self, c: f64) -> Self {
        self.0.c = c;
        self
    }
    /// nu.
    pub fn nu(mut self, nu: f64) -> Self {
        self.0.nu = nu;
        self
    }
    /// epsilon of the SVR loss.
    pub fn epsilon(mut self, p: f64) -> Self {
        self.0.epsilon = p;
        self
    }
    /// Stopping tolerance.
    pub fn tol(mut self, tol: f64) -> Self {
        self.0.solver.tol = tol;
        self
    }
    /// Shrinking on or off.
    pub fn shrinking(mut self, s: Shrinking) -> Self {
        self.0.solver.shrinking = s;
        self
    }
    /// Iteration limit.
    pub fn max_iter(mut self, n: u64) -> Self {
        self.0.solver.max_iter = Some(n);
        self
    }
    /// Wall-clock limit per solve.
    pub fn time_limit(mut self, d: Duration) -> Self {
        self.0.solver.time_limit = Some(d);
        self
    }
    /// Cache budget in bytes.
    pub fn cache_bytes(mut self, b: u64) -> Self {
        self.0.cache_bytes = b;
        self
    }
    /// Probability model.
    pub fn probability(mut self, p: Probability) -> Self {
        self.0.probability = p;
        self
    }
    /// How a classification probability model fits its sigmoids (default through the origin).
    pub fn platt(mut self, f: PlattFit) -> Self {
        self.0.platt = f;
        self
    }
    /// Adds a class weight.
    pub fn class_weight(mut self, label: f64, weight: f64) -> Self {
        self.0.class_weights.push((label, weight));
        self
    }
    /// Seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.0.seed = seed;
        self
    }
    /// QP engine.
    pub fn engine(mut self, e: SvmSolver) -> Self {
        self.0.engine = e;
        self
    }
    /// Validates every parameter (NaN-safe).
    ///
    /// # Errors
    /// [`ParamError`] naming the first invalid parameter.
    pub fn check(self) -> Result<SvmValidParams, ParamError> {
        let p = &self.0;
        match p.svm_type {
            SvmType::CSvc | SvmType::EpsSvr | SvmType::NuSvr => {
                positive("C", p.c)?;
            }
            _ => {}
        }
        if matches!(
            p.svm_type,
            SvmType::NuSvc | SvmType::OneClass | SvmType::NuSvr
        ) && !(p.nu > 0.0 && p.nu <= 1.0)
        {
            return Err(ParamError::OutOfRange {
                name: "nu",
                value: p.nu,
                range: "(0, 1]",
            });
        }
        if p.svm_type == SvmType::EpsSvr && !(p.epsilon.is_finite() && p.epsilon >= 0.0) {
            return Err(ParamError::Negative {
                name: "epsilon (-p)",
                value: p.epsilon,
            });
        }
        positive("eps (-e)", p.solver.tol)?;
        if let Gamma::Value(g) = p.kernel.gamma {
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
                name: "cache size (-m)",
                value: 0.0,
            });
        }
        for &(label, w) in &p.class_weights {
            if !label.is_finite() {
                return Err(ParamError::OutOfRange {
                    name: "class weight label",
                    value: label,
                    range: "finite values",
                });
            }
            if !(w.is_finite() && w >= 0.0) {
                return Err(ParamError::Negative {
                    name: "class weight",
                    value: w,
                });
            }
        }
        if p.probability == Probability::On && p.svm_type == SvmType::OneClass {
            // LIBSVM >= 3.3 estimates density marks; not offered here.
            return Err(ParamError::Incompatible(
                "probability estimates (-b 1) are not available for one-class SVM",
            ));
        }
        if p.platt == PlattFit::WithIntercept
            && !(p.probability == Probability::On
                && matches!(p.svm_type, SvmType::CSvc | SvmType::NuSvc))
        {
            return Err(ParamError::Incompatible(
                "the Platt fit with intercept (--platt libsvm) applies to the probability model (-b 1) of C-SVC and nu-SVC",
            ));
        }
        Ok(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platt_with_intercept_needs_a_classification_probability_model() {
        let with = |p: SvmParams| p.platt(PlattFit::WithIntercept).check();
        assert!(with(SvmParams::new()).is_err());
        assert!(with(SvmParams::new().probability(Probability::On)).is_ok());
        assert!(with(
            SvmParams::new()
                .svm_type(SvmType::NuSvc)
                .probability(Probability::On)
        )
        .is_ok());
        assert!(with(
            SvmParams::new()
                .svm_type(SvmType::EpsSvr)
                .probability(Probability::On)
        )
        .is_err());
        let p = with(SvmParams::new().probability(Probability::On)).unwrap();
        assert_eq!(p.without_probability().platt(), PlattFit::ThroughOrigin);
    }

    #[test]
    fn rejects_bad_values_including_nan() {
        assert!(SvmParams::new().c(0.0).check().is_err());
        assert!(SvmParams::new().c(f64::NAN).check().is_err());
        assert!(SvmParams::new()
            .svm_type(SvmType::NuSvc)
            .nu(1.5)
            .check()
            .is_err());
        assert!(SvmParams::new()
            .svm_type(SvmType::NuSvc)
            .nu(f64::NAN)
            .check()
            .is_err());
        let k = KernelParams {
            gamma: Gamma::Value(-1.0),
            ..KernelParams::default()
        };
        assert!(SvmParams::new().kernel(k).check().is_err());
        assert!(SvmParams::new().tol(0.0).check().is_err());
        assert!(SvmParams::new().check().is_ok());
    }

    #[test]
    fn gamma_auto_is_one_over_features() {
        let spec = KernelParams::default().resolve(13);
        assert_eq!(spec, KernelSpec::Rbf { gamma: 1.0 / 13.0 });
    }
}

/// Fraction of the available memory that an automatic cache budget takes (`-m auto`).
pub const AUTO_CACHE_FRACTION: f64 = 0.5;

/// Smallest automatic cache budget (bytes): 64 MiB.
pub const AUTO_CACHE_MIN_BYTES: u64 = 64 << 20;

/// The kernel-cache budget of `-m auto`: [`AUTO_CACHE_FRACTION`] (one half) of the memory the
/// kernel reports as available (`MemAvailable` in `/proc/meminfo`, which counts free memory plus
/// reclaimable page cache), at least [`AUTO_CACHE_MIN_BYTES`]. The other half is left for the data
/// (the solver needs about 3 times the data's size: the data, a permuted copy inside the kernel
/// matrix, per-sample solver arrays) and for everything else on the machine.
///
/// # Errors
/// When `/proc/meminfo` cannot be read or has no `MemAvailable` line (not Linux, or a kernel
/// older than 3.14): pass an explicit budget then.
pub fn auto_cache_bytes() -> std::io::Result<u64> {
    let text = std::fs::read_to_string("/proc/meminfo")?;
    let avail = mem_available_bytes(&text).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "/proc/meminfo has no MemAvailable line",
        )
    })?;
    Ok(((avail as f64 * AUTO_CACHE_FRACTION) as u64).max(AUTO_CACHE_MIN_BYTES))
}

/// A cache size given in MB (LIBSVM's `-m`, fractions allowed) in bytes, at least 1; `name` is
/// the front end's name of the setting, for the error.
///
/// # Errors
/// [`ParamError::NotPositive`] unless `mb` is finite and > 0.
pub fn cache_bytes_from_mb(name: &'static str, mb: f64) -> Result<u64, ParamError> {
    positive(name, mb)?;
    Ok(((mb * 1048576.0) as u64).max(1))
}

#[cfg(test)]
mod auto_cache_tests {
    use super::*;

    #[test]
    fn meminfo_is_parsed() {
        let t = "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   2048 kB\n";
        assert_eq!(mem_available_bytes(t), Some(2048 * 1024));
        assert_eq!(mem_available_bytes("MemFree: 1 kB\n"), None);
        assert_eq!(mem_available_bytes("MemAvailable: x kB\n"), None);
        if std::path::Path::new("/proc/meminfo").exists() {
            assert!(auto_cache_bytes().unwrap() >= AUTO_CACHE_MIN_BYTES);
        }
    }
}
