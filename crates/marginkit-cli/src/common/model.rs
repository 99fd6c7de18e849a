//! LIBSVM/LIBLINEAR model flags shared by `train`, `grid` and `path`, and their mapping to the library parameters.
use marginkit::svm::params::cache_bytes_from_mb;

use clap::{Args, ValueEnum};
use marginkit::odm::{OdmParams, OdmSolver, OdmValidParams};
use marginkit::solver::Shrinking;
use marginkit::svm::params::{PlattFit, Probability};
use marginkit::svm::{KernelParams, SvmParams, SvmSolver, SvmType, SvmValidParams};

use crate::common::run::seconds_flag;
use crate::common::{CliError, CliResult};

/// Model parameters of `train` and `grid` (LIBSVM's and LIBLINEAR's flags).
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Model (LIBSVM's flags; LIBLINEAR's with --linear)")]
pub struct ModelArgs {
    /// svm_type (LIBSVM): 0 C-SVC, 1 nu-SVC, 2 one-class, 3 epsilon-SVR, 4 nu-SVR; `odm` the
    /// optimal margin distribution machine (train only).
    /// With --linear (LIBLINEAR): 1 L2-loss dual SVC, 2 L2-loss primal SVC (Newton, uses all threads),
    /// 3 L1-loss dual SVC, 11 L2-loss primal SVR (Newton, all threads), 12 L2-loss dual SVR, 13 L1-loss dual SVR.
    #[arg(short = 's', value_parser = parse_svm_type)]
    pub svm_type: Option<SvmTypeArg>,
    /// kernel_type: 0 linear, 1 polynomial, 2 RBF, 3 sigmoid, 4 precomputed.
    #[arg(short = 't', default_value_t = 2)]
    pub kernel_type: u8,
    /// degree of the polynomial kernel.
    #[arg(short = 'd', default_value_t = 3)]
    pub degree: u32,
    /// gamma of the kernel (default 1/num_features).
    #[arg(short = 'g', allow_negative_numbers = true)]
    pub gamma: Option<f64>,
    /// coef0 of the polynomial and sigmoid kernels.
    #[arg(short = 'r', default_value_t = 0.0, allow_negative_numbers = true)]
    pub coef0: f64,
    /// C of C-SVC, epsilon-SVR, nu-SVR and the linear models (default 1).
    #[arg(short = 'c', allow_negative_numbers = true)]
    pub cost: Option<f64>,
    /// nu of nu-SVC, one-class and nu-SVR (default 0.5).
    #[arg(short = 'n', allow_negative_numbers = true)]
    pub nu: Option<f64>,
    /// epsilon of the epsilon-insensitive loss of the SVRs (default 0.1).
    #[arg(short = 'p', allow_negative_numbers = true)]
    pub epsilon: Option<f64>,
    /// Kernel cache size in MB, or `auto`: half of the available memory (MemAvailable in
    /// /proc/meminfo), at least 64 MB.
    #[arg(short = 'm', default_value = "200", allow_negative_numbers = true, value_parser = parse_cache_mb)]
    pub cache_mb: f64,
    /// Stopping tolerance (default 0.001; LIBLINEAR's with --linear: 0.1, -s 2 0.01, -s 11 0.0001).
    #[arg(short = 'e', allow_negative_numbers = true)]
    pub eps: Option<f64>,
    /// Shrinking heuristics: 1 on, 0 off.
    #[arg(short = 'h', default_value_t = 1, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub shrinking: u8,
    /// Probability estimates: 1 fit a probability model, 0 not.
    #[arg(short = 'b', default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub probability: u8,
    /// Multiply C of class LABEL by WEIGHT; repeatable. LIBSVM's `-wLABEL WEIGHT` (e.g. `-w-1 0.5`)
    /// is accepted too.
    #[arg(
        long = "class-weight",
        value_name = "LABEL:WEIGHT",
        allow_hyphen_values = true
    )]
    pub class_weights: Vec<String>,
    /// Linear model (LIBLINEAR's solvers and numbering for -s).
    #[arg(long)]
    pub linear: bool,
    /// Bias term of linear models: B > 0 appends a constant feature B; -1 none.
    #[arg(short = 'B', default_value_t = -1.0, allow_negative_numbers = true)]
    pub bias: f64,
    /// Iteration limit of the solver (passes with --linear; Newton iterations with --linear
    /// -s 2/11; --solver block tests it between outer iterations, so it may pass it by less
    /// than one); the run then ends with status max_iterations and a warning.
    #[arg(long, help_heading = "Solver and run")]
    pub max_iter: Option<u64>,
    /// Time limit of each solve, in seconds (finite, > 0, at most ~1.8e19; larger is an error).
    #[arg(long, help_heading = "Solver and run")]
    pub time_limit: Option<f64>,
    /// Seed of every random choice (folds, permutations).
    #[arg(long, default_value_t = 0, help_heading = "Solver and run")]
    pub seed: u64,
    /// Worker threads for kernel computations (default: all cores); results do not depend on it.
    #[arg(long, help_heading = "Solver and run")]
    pub threads: Option<usize>,
}

/// `-m`: a number of MB, or `auto` (resolved here, from /proc/meminfo).
fn parse_cache_mb(s: &str) -> Result<f64, String> {
    if s == "auto" {
        let b = marginkit::svm::params::auto_cache_bytes()
            .map_err(|e| format!("-m auto: cannot read the available memory: {e}"))?;
        return Ok(b as f64 / 1048576.0);
    }
    s.parse::<f64>()
        .map_err(|_| format!("expected a size in MB or 'auto', found '{s}'"))
}

/// Parses `LABEL:WEIGHT` class weights (the label may be negative: the last `:` splits).
pub fn parse_class_weights(list: &[String]) -> CliResult<Vec<(f64, f64)>> {
    list.iter()
        .map(|s| {
            let (l, w) = s
                .rsplit_once(':')
                .ok_or_else(|| CliError(format!("class weight '{s}': expected LABEL:WEIGHT")))?;
            let label: f64 = l
                .parse()
                .map_err(|_| CliError(format!("class weight '{s}': bad label '{l}'")))?;
            let weight: f64 = w
                .parse()
                .map_err(|_| CliError(format!("class weight '{s}': bad weight '{w}'")))?;
            Ok((label, weight))
        })
        .collect()
}

/// Kernel-SVM parameters from LIBSVM's flags, validated by the library.
pub fn svm_params(m: &ModelArgs) -> CliResult<SvmValidParams> {
    svm_params_with(m, SvmSolver::default(), PlattFit::default())
}

/// `--solver`: the QP engine of the kernel duals (`train`, `train -s odm`, `path`, `robust`,
/// `aid svm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SolverArg {
    /// Pair SMO (LIBSVM's method).
    Smo,
    /// Block working-set SMO (every kernel SVM, nu-SVC and nu-SVR in its nu mode; not the DCD
    /// engines).
    Block,
    /// The engine measured faster for the problem's size, rows and cache (block when the
    /// cache holds fewer than 1/64 of the kernel columns or the samples times the values per
    /// row reach 2,000,000, smo otherwise).
    Auto,
}

/// The `--solver` flag, flattened into every subcommand whose method solves a kernel dual.
#[derive(Debug, Args, Clone)]
pub struct SolverFlag {
    /// QP engine of the kernel duals: smo (pair SMO), block (block working-set SMO; every
    /// kernel SVM -s 0-4, not with a dual coordinate descent engine) or auto (block when the
    /// -m cache holds fewer than 1/64 of the kernel matrix's columns, from about 58,000 samples
    /// with -m 200, or when the samples times the values per row (the features, or the mean
    /// stored entries of sparse rows) reach 2,000,000, e.g. from about 2,550 samples of 784
    /// features; smo otherwise: the faster of the two in bench/results/block_smo.md,
    /// block_smo_100k.md and fashion_mnist.md). --resume continues on the engine that wrote the
    /// state file.
    #[arg(long, value_enum, default_value_t = SolverArg::Auto, help_heading = "Solver and run")]
    pub solver: SolverArg,
}

impl SolverFlag {
    /// The library's engine choice.
    pub fn engine(&self) -> SvmSolver {
        self.solver.into()
    }
}

impl From<SolverArg> for SvmSolver {
    fn from(s: SolverArg) -> Self {
        match s {
            SolverArg::Smo => SvmSolver::Smo,
            SolverArg::Block => SvmSolver::Block,
            SolverArg::Auto => SvmSolver::Auto,
        }
    }
}

/// `train --platt`: how the sigmoids of a `-b 1` classification model are fitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlattArg {
    /// Through the origin (B = 0): the most probable class is always the predicted one.
    Origin,
    /// With intercept B, exactly as LIBSVM fits it: LIBSVM's probA/probB from the same
    /// cross-validated decision values.
    Libsvm,
}

impl From<PlattArg> for PlattFit {
    fn from(p: PlattArg) -> Self {
        match p {
            PlattArg::Origin => PlattFit::ThroughOrigin,
            PlattArg::Libsvm => PlattFit::WithIntercept,
        }
    }
}

/// [`svm_params`] with the QP engine `engine` and the Platt fit `platt`.
pub fn svm_params_with(
    m: &ModelArgs,
    engine: SvmSolver,
    platt: PlattFit,
) -> CliResult<SvmValidParams> {
    let code = m.svm_code()?.unwrap_or(0);
    let svm_type = SvmType::from_code(code)
        .ok_or_else(|| CliError(format!("unknown svm type -s {code} (expected 0..4)")))?;
    let mut p = SvmParams::new()
        .svm_type(svm_type)
        .kernel(m.kernel()?)
        .tol(m.eps.unwrap_or(1e-3))
        .cache_bytes(cache_bytes_from_mb("-m (cache size, MB)", m.cache_mb)?)
        .shrinking(if m.shrinking == 1 {
            Shrinking::On
        } else {
            Shrinking::Off
        })
        .probability(if m.probability == 1 {
            Probability::On
        } else {
            Probability::Off
        })
        .seed(m.seed)
        .engine(engine)
        .platt(platt);
    if let Some(c) = m.cost {
        p = p.c(c);
    }
    if let Some(nu) = m.nu {
        p = p.nu(nu);
    }
    if let Some(e) = m.epsilon {
        p = p.epsilon(e);
    }
    for (l, w) in parse_class_weights(&m.class_weights)? {
        p = p.class_weight(l, w);
    }
    if let Some(n) = m.max_iter {
        p = p.max_iter(n);
    }
    if let Some(t) = m.time_limit {
        p = p.time_limit(crate::common::run::seconds_flag("time-limit", t)?);
    }
    Ok(p.check()?)
}

/// The value of `-s`: a LIBSVM or LIBLINEAR number, or `odm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SvmTypeArg {
    /// LIBSVM's `svm_type` (LIBLINEAR's `solver_type` with `--linear`).
    Code(u8),
    /// The optimal margin distribution machine (`train -s odm`).
    Odm,
}

fn parse_svm_type(s: &str) -> Result<SvmTypeArg, String> {
    if s == "odm" {
        return Ok(SvmTypeArg::Odm);
    }
    s.parse::<u8>().map(SvmTypeArg::Code).map_err(|_| {
        format!(
            "expected a number (LIBSVM's 0..4, LIBLINEAR's with --linear) or 'odm', found '{s}'"
        )
    })
}

impl ModelArgs {
    /// The kernel of `-t -g -r -d`.
    pub fn kernel(&self) -> CliResult<KernelParams> {
        Ok(KernelParams::from_libsvm(
            self.kernel_type,
            self.gamma,
            self.coef0,
            self.degree,
        )?)
    }

    /// The numeric `-s`, if given; `-s odm` is an error here (only `train` takes it).
    pub fn svm_code(&self) -> CliResult<Option<u8>> {
        match self.svm_type {
            None => Ok(None),
            Some(SvmTypeArg::Code(c)) => Ok(Some(c)),
            Some(SvmTypeArg::Odm) => Err(CliError(
                "-s odm is a model of `train` only (without --linear)".into(),
            )),
        }
    }
}

/// The flags of `-s odm` (Zhang & Zhou, AAAI 2018, Eq. 1): margin mean fixed at 1, squared
/// deviations below (weight 1) and above (weight nu, `-n`) outside a theta-insensitive zone.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "ODM (-s odm)")]
pub struct OdmArgs {
    /// lambda: weight of the margin-variance loss (default: -c, which defaults to 1).
    #[arg(long, allow_negative_numbers = true)]
    pub lambda: Option<f64>,
    /// theta in [0, 1): half-width of the insensitive zone around the margin mean [default: 0.2].
    #[arg(long, allow_negative_numbers = true)]
    pub theta: Option<f64>,
    /// Engine: smo (any kernel) or dcd (linear kernel, large data, moderate lambda) [default: smo].
    #[arg(long, value_enum)]
    pub engine: Option<OdmEngine>,
}

/// `--engine` of `-s odm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OdmEngine {
    /// The SMO engine on the dual box QP.
    Smo,
    /// Dual coordinate descent on the linear kernel.
    Dcd,
}

impl OdmArgs {
    /// The ODM flags given, by name, for the error when `-s odm` is not.
    pub fn given(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.lambda.is_some() {
            v.push("--lambda");
        }
        if self.theta.is_some() {
            v.push("--theta");
        }
        if self.engine.is_some() {
            v.push("--engine");
        }
        v
    }
}

/// The ODM parameters of `-s odm` with the given lambda, kernel and QP engine (`train` takes
/// lambda from `--lambda` or `-c` and the engine from `--solver`; `grid` lambda from its C
/// range and the pair engine).
pub fn odm_params(
    m: &ModelArgs,
    o: &OdmArgs,
    lambda: Option<f64>,
    kernel: KernelParams,
    qp_engine: SvmSolver,
) -> CliResult<OdmValidParams> {
    let mut p = OdmParams::new()
        .kernel(kernel)
        .cache_bytes(cache_bytes_from_mb("-m (cache size, MB)", m.cache_mb)?)
        .shrinking(if m.shrinking == 1 {
            Shrinking::On
        } else {
            Shrinking::Off
        })
        .engine(match o.engine {
            Some(OdmEngine::Dcd) => OdmSolver::Dcd,
            Some(OdmEngine::Smo) | None => OdmSolver::Smo,
        })
        .qp_engine(qp_engine)
        .seed(m.seed);
    if let Some(lambda) = lambda {
        p = p.lambda(lambda);
    }
    if let Some(nu) = m.nu {
        p = p.nu(nu);
    }
    if let Some(theta) = o.theta {
        p = p.theta(theta);
    }
    if let Some(tol) = m.eps {
        p = p.tol(tol);
    }
    if let Some(n) = m.max_iter {
        p = p.max_iter(n);
    }
    if let Some(t) = m.time_limit {
        p = p.time_limit(seconds_flag("time-limit", t)?);
    }
    Ok(p.check()?)
}
