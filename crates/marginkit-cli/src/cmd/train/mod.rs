//! `marginkit train`: LIBSVM's svm-train (and LIBLINEAR's train with `--linear`).

mod linear;
mod odm;
use crate::common::input::{with_weight_file, InputArgs};
use crate::common::model::{svm_params_with, OdmArgs, PlattArg, SolverArg, SvmTypeArg};
use crate::common::output::{
    check_outputs, default_model_path, refuse_overwriting_input, refuse_same_file,
};
use crate::common::report::{report_cv, say};
use crate::common::resume::{after_model, ResumeArgs};
use crate::common::run::init_threads;

use clap::{ArgAction, Args};

use std::cell::Cell;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Instant;

use std::io::Write;

use marginkit::data::write_output;
use marginkit::error::FitError;
use marginkit::fit::{Control, CrossValidation, Fit};
use marginkit::solver::{Both, IterStats, Observer, Status};
use marginkit::svm::model_io::{fmt_label, save_model};
use marginkit::svm::train::{cross_validation, fit, FitReport};
use marginkit::svm::FitCheckpoint;
use marginkit::svm::{KernelKind, SvmValidParams};
use marginkit::Dataset;
use serde_json::{json, Value};

use crate::common::input::read_data;
use crate::common::model::ModelArgs;
use crate::common::progress::Progress;
use crate::common::{CliError, CliResult, Exit, Outcome};

/// Human summary of a fit, in LIBSVM's words.
pub fn describe(report: &FitReport) -> String {
    let mut s = String::new();
    let multiclass = report.subproblems.len() > 1;
    for sp in &report.subproblems {
        if let (true, Some((a, b))) = (multiclass, sp.classes) {
            s.push_str(&format!("classes {} vs {}: ", fmt_label(a), fmt_label(b)));
        }
        s.push_str(&format!(
            "optimization finished, #iter = {} ({})\nobj = {}, rho = {}\nnSV = {}, nBSV = {}\nmax KKT violation = {:.3e}, relative duality gap = {:.3e}\n",
            sp.iterations,
            sp.status.as_str(),
            sp.objective,
            sp.rho,
            sp.n_sv,
            sp.n_bsv,
            sp.max_violation,
            marginkit::solver::relative_gap(sp.gap, sp.objective)
        ));
    }
    s
}

/// One JSON value per binary subproblem, or a single value for one subproblem.
fn per_subproblem(
    report: &FitReport,
    f: impl Fn(&marginkit::svm::SubproblemReport) -> Value,
) -> Value {
    match report.subproblems.as_slice() {
        [one] => f(one),
        many => Value::Array(many.iter().map(f).collect()),
    }
}

pub fn run(a: TrainArgs) -> Exit {
    init_threads(a.model.threads)?;
    refuse_cv_state(&a)?;
    let odm = a.model.svm_type == Some(SvmTypeArg::Odm);
    let odm_flags = a.odm.given();
    if !odm && !odm_flags.is_empty() {
        return Err(CliError(format!(
            "{} apply to -s odm only",
            odm_flags.join(", ")
        )));
    }
    if a.folds.is_none() {
        let model = a
            .model_file
            .clone()
            .unwrap_or_else(|| default_model_path(&a.train_file));
        let mut inputs = vec![(a.train_file.as_path(), "training data file")];
        if let Some(w) = &a.weights {
            inputs.push((w.as_path(), "weight file"));
        }
        if let Some(r) = &a.ckpt.resume {
            inputs.push((r.as_path(), "--resume state file"));
        }
        refuse_overwriting_input(&model, &inputs)?;
        let state = state_path(&a, &model);
        check_outputs(&[(&model, "MODEL_FILE"), (&state, "state file")])?;
    }
    if let Some(plot) = &a.plot {
        if !odm || a.folds.is_some() {
            return Err(CliError(
                "--plot draws the margin distribution of a trained -s odm model (without -v)"
                    .into(),
            ));
        }
        check_outputs(&[(plot, "--plot")])?;
    }
    if a.platt != PlattArg::Origin && (odm || a.model.linear) {
        return Err(CliError(
            "--platt libsvm applies to the probability model (-b 1) of the kernel C-SVC and nu-SVC"
                .into(),
        ));
    }
    if odm {
        return odm::run(&a);
    }
    if a.model.linear {
        return linear::run(a);
    }
    let params = svm_params_with(&a.model, a.solver.into(), a.platt.into())?;
    let precomputed = params.kernel().kind == KernelKind::Precomputed;
    let mut data = read_data(&a.train_file, &a.input, precomputed)?;
    if let Some(w) = &a.weights {
        data = with_weight_file(data, w)?;
    }
    if let Some(k) = a.folds {
        return run_cv(&params, &data, k, &a);
    }
    let path = a
        .model_file
        .clone()
        .unwrap_or_else(|| default_model_path(&a.train_file));
    let state_path = state_path(&a, &path);
    refuse_same_file(&state_path, &path)?;
    let resume = a.ckpt.read(FitCheckpoint::from_bytes)?;
    let cancel = crate::common::interrupt::install();
    let mut obs = Both(Progress::new(a.quiet, "train"), cancel.clone());
    let t0 = Instant::now();
    let Fit {
        model,
        report,
        checkpoint,
    } = fit(
        &params,
        &data,
        &mut Control::new(&mut obs).resume_opt(resume.as_ref()),
    )
    .map_err(|e| a.ckpt.err(e))?;
    let seconds = t0.elapsed().as_secs_f64();
    obs.0.finish();
    say(a.json, a.quiet, describe(&report).trim_end());
    say(
        a.json,
        a.quiet,
        &format!("Total nSV = {}", model.total_sv()),
    );
    for w in &report.warnings {
        eprintln!("marginkit: warning: {w}");
    }
    let status = report.status();
    say(
        a.json,
        a.quiet,
        &format!(
            "status = {}, max KKT violation = {:.3e}, relative duality gap = {:.3e}\nkernel cache {:.0} MB, hit rate {:.1}% ({} hits, {} misses)",
            status.as_str(),
            report.max_violation(),
            report.relative_gap(),
            params.cache_bytes() as f64 / 1048576.0,
            100.0 * report.cache.hit_rate(),
            report.cache.hits,
            report.cache.misses
        ),
    );
    save_model(&path, &model).map_err(|e| CliError(format!("{}: {e}", path.display())))?;
    let state_written = match &checkpoint {
        Some(c) => {
            write_output(&state_path, |w| w.write_all(&c.to_bytes()))
                .map_err(|e| CliError(format!("{}: {e}", state_path.display())))?;
            eprintln!(
                "marginkit: warning: the solver stopped before convergence ({}); the model file holds the current iterate; continue with --resume {}",
                status.as_str(),
                state_path.display()
            );
            Some(state_path.display().to_string())
        }
        None => None,
    };
    if a.json {
        let out = json!({
            "train_seconds": seconds,
            "svm_type": params.svm_type().name(),
            "kernel": model.kernel.libsvm_name(),
            "n_samples": data.len(),
            "n_features": data.n_features(),
            "n_class": model.n_class(),
            "objective": per_subproblem(&report, |s| json!(s.objective)),
            "rho": per_subproblem(&report, |s| json!(s.rho)),
            "n_sv": model.total_sv(),
            "n_bsv": per_subproblem(&report, |s| json!(s.n_bsv)),
            "iterations": report.iterations(),
            "status": status.as_str(),
            "converged": status == Status::Converged,
            "max_violation": per_subproblem(&report, |s| json!(s.max_violation)),
            "duality_gap": per_subproblem(&report, |s| json!(s.gap)),
            "relative_duality_gap": per_subproblem(&report, |s| json!(marginkit::solver::relative_gap(s.gap, s.objective))),
            "model_file": path.display().to_string(),
            "state_file": state_written,
            "cache_mb": params.cache_bytes() as f64 / 1048576.0,
            "cache_hits": report.cache.hits,
            "cache_misses": report.cache.misses,
            "cache_hit_rate": report.cache.hit_rate(),
            "resumed": a.ckpt.resume.is_some(),
        });
        println!("{out}");
    }
    if status == Status::Interrupted {
        return Ok(Outcome::Interrupted);
    }
    Ok(Outcome::Done)
}

/// The state file of a stopped fit: `--state-file`, else the model file's name + ".state".
pub fn state_path(a: &TrainArgs, model: &Path) -> PathBuf {
    a.ckpt.state_path(after_model(model))
}

/// Refuses `--resume` and `--state-file` together with `-v` (cross-validation has no state to
/// continue: each fold is a fresh fit, and nothing of a stopped run is kept).
pub fn refuse_cv_state(a: &TrainArgs) -> CliResult {
    if a.folds.is_some() && a.ckpt.any() {
        return Err(CliError(
            "-v (cross-validation) cannot be combined with --resume or --state-file: cross-validation writes no state to continue from".into(),
        ));
    }
    Ok(())
}

fn run_cv(params: &SvmValidParams, data: &Dataset, k: usize, a: &TrainArgs) -> Exit {
    let regression = params.svm_type().is_regression();
    cross_validate(a, k, data, regression, json!({}), |ctl| {
        cross_validation(params, data, k, ctl)
    })
}

/// `train -v K` for every kind of model: runs `cv` with Ctrl-C and a progress line that names
/// the fold being fitted, warns when a fold's fit stopped early, and reports the accuracy (or
/// the regression errors) with `head`'s keys in `--json`. Ctrl-C ends it with exit code 130
/// and no report.
pub(crate) fn cross_validate(
    a: &TrainArgs,
    k: usize,
    data: &Dataset,
    regression: bool,
    head: serde_json::Value,
    cv: impl FnOnce(&mut Control<'_, (), usize>) -> Result<CrossValidation, FitError>,
) -> Exit {
    if k < 2 {
        return Err(CliError(format!(
            "n-fold cross validation: n must be >= 2, got {k}"
        )));
    }
    let folds = k.min(data.len()).max(1);
    let done = Cell::new(0usize);
    let cancel = crate::common::interrupt::install();
    let progress = FoldProgress {
        progress: Progress::new(a.quiet, "train -v"),
        done: &done,
        folds,
    };
    let mut obs = Both(progress, cancel);
    let t0 = Instant::now();
    let result = cv(&mut Control::new(&mut obs).on_part(|_| done.set(done.get() + 1)))?;
    let seconds = t0.elapsed().as_secs_f64();
    obs.0.progress.finish();
    match result.status {
        Status::Converged => {}
        Status::Interrupted => {
            eprintln!(
                "marginkit: interrupted during fold {} of {folds}; no cross-validation result",
                done.get() + 1
            );
            return Ok(Outcome::Interrupted);
        }
        s => eprintln!(
            "marginkit: warning: a fold's solver stopped before convergence ({})",
            s.as_str()
        ),
    }
    let mut head = head;
    if let serde_json::Value::Object(o) = &mut head {
        o.insert("cv_folds".into(), json!(k));
        o.insert("cv_seconds".into(), json!(seconds));
        o.insert("seed".into(), json!(a.model.seed));
        o.insert("status".into(), json!(result.status.as_str()));
    }
    report_cv(&result.predictions, &data.y, regression, head, a.json);
    Ok(Outcome::Done)
}

/// The progress line of a cross-validation: the fold being fitted and its solver's report.
struct FoldProgress<'a> {
    progress: Progress,
    done: &'a Cell<usize>,
    folds: usize,
}

impl Observer for FoldProgress<'_> {
    fn on_iter(&mut self, s: &IterStats) -> ControlFlow<()> {
        self.progress.set(&format!(
            "fold {}/{}: iter {} violation {:.3e}",
            (self.done.get() + 1).min(self.folds),
            self.folds,
            s.iterations,
            s.max_violation
        ));
        ControlFlow::Continue(())
    }
}

/// `marginkit train`.
#[derive(Debug, Args)]
#[command(
    disable_help_flag = true,
    override_usage = "marginkit train [OPTIONS] TRAIN_FILE [MODEL_FILE]\n       marginkit train --linear [OPTIONS] TRAIN_FILE [MODEL_FILE]\n       marginkit train -s odm [OPTIONS] TRAIN_FILE [MODEL_FILE]",
    after_help = "-h is LIBSVM's shrinking flag here; use --help for this text.\nTRAIN_FILE may be `-` (standard input) or gzip-compressed.\n`-s odm` trains an optimal margin distribution machine (its flags: ODM below; -c gives lambda, -n nu).\nExample: marginkit train -s odm -t 2 -g 0.05 --lambda 10 -n 0.5 --theta 0.2 heart_scale"
)]
pub struct TrainArgs {
    #[command(flatten)]
    pub ckpt: ResumeArgs,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub odm: OdmArgs,
    #[command(flatten)]
    pub input: InputArgs,
    /// n-fold cross-validation instead of training a model (n >= 2).
    #[arg(short = 'v', help_heading = "Output")]
    pub folds: Option<usize>,
    /// Quiet: no progress and no solver summary.
    #[arg(short = 'q', help_heading = "Output")]
    pub quiet: bool,
    /// Print one JSON object with the results on stdout at the end (human lines go to stderr).
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// Per-sample weights: a text file with one non-negative weight per line, in the order of
    /// the training samples (LIBSVM's weights extension); C_i = C * w_i.
    #[arg(
        short = 'W',
        long = "weights",
        value_name = "FILE",
        help_heading = "Solver and run"
    )]
    pub weights: Option<PathBuf>,
    /// With -s odm: write an SVG plot of the training margins' distribution (their cumulative
    /// fraction, with the zone [1 - theta, 1 + theta] in which the ODM's loss is zero).
    #[arg(long, value_name = "FILE.svg", help_heading = "Output")]
    pub plot: Option<PathBuf>,
    /// QP engine of the kernel SVMs: smo (pair SMO), block (block working-set SMO; C-SVC,
    /// one-class, epsilon-SVR) or auto (smo; block, which shrinks
    /// with -h 1, was the faster at 100,000 rows: bench/results/block_smo_100k.md). --resume
    /// continues on the engine that wrote the state file.
    #[arg(long, value_enum, default_value_t = SolverArg::Smo, help_heading = "Solver and run")]
    pub solver: SolverArg,
    /// How the sigmoids of a -b 1 classification model (C-SVC, nu-SVC) are fitted: origin
    /// (through the origin, B = 0, so the most probable class is always the predicted one) or
    /// libsvm (with intercept B, LIBSVM's exact Platt fit: its probA/probB from the same
    /// cross-validated decision values). Needs -b 1.
    #[arg(long, value_enum, default_value_t = PlattArg::Origin, help_heading = "Model (LIBSVM's flags; LIBLINEAR's with --linear)")]
    pub platt: PlattArg,
    /// Print help.
    #[arg(long, action = ArgAction::Help, help_heading = "Output")]
    pub help: Option<bool>,
    /// Training data (LIBSVM format, `.gz` or `-` for stdin).
    #[arg(help_heading = "Arguments", display_order = 1)]
    pub train_file: PathBuf,
    /// Model file to write (default: TRAIN's file name + ".model").
    #[arg(help_heading = "Arguments", display_order = 2)]
    pub model_file: Option<PathBuf>,
}
