//! `marginkit train -s odm`: the optimal margin distribution machine (binary, no bias).
//!
//! Reached from `main` when the `train` arguments contain `-s odm`; parsed by its own clap
//! struct so that the LIBSVM numbering of `-s` stays untouched. The model file is a LIBSVM
//! C-SVC kernel expansion (rho 0) that `marginkit predict` and LIBSVM load; lambda, nu and theta
//! are printed in the summary and in `--json`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Instant;

use clap::{ArgAction, Parser};
use marginkit::odm::{self, OdmParams, OdmSolver};
use marginkit::solver::{Shrinking, Status};
use marginkit::svm::model_io::save_model;
use marginkit::svm::{Gamma, KernelKind, KernelParams};
use serde_json::json;

use crate::args::InputArgs;
use crate::input::read_data;
use crate::progress::Progress;
use crate::train::{default_model_path, init_threads, report_cv, say};
use crate::{CliError, CliResult};

/// True when `argv` (after the program name) is `train ... -s odm ...`.
pub fn is_odm_train(argv: &[OsString]) -> bool {
    if argv.get(1).and_then(|s| s.to_str()) != Some("train") {
        return false;
    }
    argv.windows(2).any(|w| w[0] == "-s" && w[1] == "odm") || argv.iter().any(|a| a == "-sodm")
}

/// `marginkit train -s odm`.
#[derive(Debug, Parser)]
#[command(
    name = "marginkit train -s odm",
    disable_help_flag = true,
    override_usage = "marginkit train -s odm [OPTIONS] TRAIN_FILE [MODEL_FILE]",
    about = "Train an optimal margin distribution machine (Zhang & Zhou, AAAI 2018, Eq. 1): margin mean fixed at 1, \
             squared deviations below (weight 1) and above (weight nu) outside a theta-insensitive zone, no bias term.",
    after_help = "The model file is a LIBSVM C-SVC kernel expansion (rho 0): `marginkit predict` and LIBSVM load it.\n\
                  -h is LIBSVM's shrinking flag here; use --help for this text.\n\
                  Example: marginkit train -s odm -t 2 -g 0.05 --lambda 10 -n 0.5 --theta 0.2 heart_scale"
)]
pub struct OdmTrainArgs {
    /// `-s odm` (consumed by the dispatch).
    #[arg(short = 's', value_parser = ["odm"])]
    pub svm_type: String,
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
    /// lambda: weight of the margin-variance loss (plays C's role; -c is accepted as an alias).
    #[arg(
        long = "lambda",
        short = 'c',
        default_value_t = 1.0,
        allow_negative_numbers = true
    )]
    pub lambda: f64,
    /// nu: weight of deviations above the margin mean.
    #[arg(
        short = 'n',
        long = "nu",
        default_value_t = 0.5,
        allow_negative_numbers = true
    )]
    pub nu: f64,
    /// theta in [0, 1): half-width of the insensitive zone around the margin mean.
    #[arg(long, default_value_t = 0.2, allow_negative_numbers = true)]
    pub theta: f64,
    /// Cache size in MB.
    #[arg(short = 'm', default_value_t = 200.0, allow_negative_numbers = true)]
    pub cache_mb: f64,
    /// Stopping tolerance on the KKT violation.
    #[arg(short = 'e', default_value_t = 1e-3, allow_negative_numbers = true)]
    pub eps: f64,
    /// Shrinking heuristics: 1 on, 0 off.
    #[arg(short = 'h', default_value_t = 1, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub shrinking: u8,
    /// Engine: smo (any kernel, default) or dcd (linear kernel, large data, moderate lambda).
    #[arg(long, default_value = "smo", value_parser = ["smo", "dcd"])]
    pub engine: String,
    /// n-fold cross-validation instead of training a model (n >= 2).
    #[arg(short = 'v')]
    pub folds: Option<usize>,
    /// Iteration limit of the solver.
    #[arg(long)]
    pub max_iter: Option<u64>,
    /// Time limit of the solve, in seconds.
    #[arg(long)]
    pub time_limit: Option<f64>,
    /// Seed of folds and permutations.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Worker threads for kernel computations (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Quiet.
    #[arg(short = 'q')]
    pub quiet: bool,
    /// Print one JSON object with the results on stdout.
    #[arg(long)]
    pub json: bool,
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    pub help: Option<bool>,
    #[command(flatten)]
    pub input: InputArgs,
    /// Training data (LIBSVM format, `.gz` or `-` for stdin), two classes.
    pub train_file: PathBuf,
    /// Model file to write (default: TRAIN's file name + ".model").
    pub model_file: Option<PathBuf>,
}

/// Parses `argv` (`marginkit train ... -s odm ...`) and runs.
pub fn run_argv(argv: Vec<OsString>) -> CliResult {
    // Drop the subcommand word; clap then sees `marginkit -s odm ...`.
    let mut v = argv;
    v.remove(1);
    let v: Vec<OsString> = v
        .into_iter()
        .flat_map(|a| {
            if a == "-sodm" {
                vec![OsString::from("-s"), OsString::from("odm")]
            } else {
                vec![a]
            }
        })
        .collect();
    run(OdmTrainArgs::parse_from(v))
}

fn run(a: OdmTrainArgs) -> CliResult {
    init_threads(a.threads)?;
    let kind = KernelKind::from_code(a.kernel_type).ok_or_else(|| {
        CliError(format!(
            "unknown kernel type -t {} (expected 0..4)",
            a.kernel_type
        ))
    })?;
    if !(a.cache_mb.is_finite() && a.cache_mb > 0.0) {
        return Err(CliError(format!(
            "cache size -m must be > 0 MB, got {}",
            a.cache_mb
        )));
    }
    let mut p = OdmParams::new()
        .lambda(a.lambda)
        .nu(a.nu)
        .theta(a.theta)
        .kernel(KernelParams {
            kind,
            gamma: a.gamma.map_or(Gamma::Auto, Gamma::Value),
            coef0: a.coef0,
            degree: a.degree,
        })
        .tol(a.eps)
        .cache_bytes((a.cache_mb * 1048576.0) as u64)
        .shrinking(if a.shrinking == 1 {
            Shrinking::On
        } else {
            Shrinking::Off
        })
        .engine(if a.engine == "dcd" {
            OdmSolver::Dcd
        } else {
            OdmSolver::Smo
        })
        .seed(a.seed);
    if let Some(n) = a.max_iter {
        p = p.max_iter(n);
    }
    if let Some(t) = a.time_limit {
        p = p.time_limit(crate::args::seconds_flag("time-limit", t)?);
    }
    let params = p.check()?;
    let data = read_data(&a.train_file, &a.input, kind == KernelKind::Precomputed)?;
    if let Some(k) = a.folds {
        if k < 2 {
            return Err(CliError(format!(
                "n-fold cross validation: n must be >= 2, got {k}"
            )));
        }
        let t0 = Instant::now();
        let pred = odm::cross_validation(&params, &data, k, a.seed)?;
        report_cv(
            &pred,
            &data.y,
            false,
            json!({ "svm_type": "odm", "cv_folds": k, "cv_seconds": t0.elapsed().as_secs_f64(),
                    "seed": a.seed, "lambda": a.lambda, "nu": a.nu, "theta": a.theta }),
            a.json,
        );
        return Ok(());
    }
    let mut progress = Progress::new(!a.quiet && !a.json);
    let t0 = Instant::now();
    let (model, report) = odm::fit(&params, &data, &mut progress)?;
    let seconds = t0.elapsed().as_secs_f64();
    progress.finish();
    say(
        a.json,
        a.quiet,
        &format!(
            "ODM (lambda = {}, nu = {}, theta = {}): optimization finished, #iter = {} ({})\n\
             primal = {}, dual = {}, gap = {:.3e}\nTotal nSV = {}",
            a.lambda,
            a.nu,
            a.theta,
            report.info.iterations,
            report.status().as_str(),
            report.primal,
            report.dual,
            report.gap,
            model.total_sv()
        ),
    );
    if report.status() != Status::Converged {
        eprintln!(
            "marginkit: warning: the solver stopped before convergence ({})",
            report.status().as_str()
        );
    }
    let path = a
        .model_file
        .clone()
        .unwrap_or_else(|| default_model_path(&a.train_file));
    save_model(&path, &model).map_err(|e| CliError(format!("{}: {e}", path.display())))?;
    if a.json {
        let out = json!({
            "train_seconds": seconds,
            "svm_type": "odm",
            "model_format": "c_svc",
            "lambda": a.lambda,
            "nu": a.nu,
            "theta": a.theta,
            "kernel": model.kernel.libsvm_name(),
            "engine": format!("{:?}", report.engine).to_lowercase(),
            "n_samples": data.len(),
            "n_features": data.n_features(),
            "primal": report.primal,
            "dual": report.dual,
            "gap": report.gap,
            "n_sv": model.total_sv(),
            "iterations": report.info.iterations,
            "status": report.status().as_str(),
            "max_violation": report.info.max_violation,
            "model_file": path.display().to_string(),
        });
        println!("{out}");
    }
    Ok(())
}
