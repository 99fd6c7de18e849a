//! `marginkit aid lad|svm|s3vm` (aggregate and iterative disaggregate, Park & Klabjan 2016) and
//! `marginkit lad` (the exact full LP, to compare).
use marginkit::svm::{KernelKind, KernelParams};

use std::io::Write;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::{ArgAction, Args, Subcommand};
use marginkit::aid::lad::{self, fit_lad, AidLadParams, LadModel};
use marginkit::aid::s3vm::{self, full_instance, solve_bnb, AidS3vmParams, BnbLimits, S3vmData};
use marginkit::aid::svm::{
    self, AidLinearEngine, AidSvmModel, AidSvmParams, KernelSteering, NystromRank,
};
use marginkit::aid::{AidCheckpoint, IterRecord, Termination};
use marginkit::data::write_output;
use marginkit::fit::{Control, Fit, Report};
use marginkit::plot::{stack_svg, Axis, LineChart, Scale};
use marginkit::solver::{Cancel, IterStats, Observer, Status};
use marginkit::svm::linear::LinearModel;
use marginkit::svm::model_io::save_model;
use marginkit::Dataset;
use serde_json::{json, Value};

use crate::common::input::read_data;
use crate::common::input::InputArgs;
use crate::common::model::SolverFlag;
use crate::common::output::default_model_path;
use crate::common::progress::Progress;
use crate::common::resume::{after_model, ResumeArgs};
use crate::common::run::init_threads;
use crate::common::{CliError, CliResult, Exit, Outcome};

/// `marginkit aid`.
#[derive(Debug, Args)]
pub struct AidArgs {
    #[command(subcommand)]
    pub cmd: AidCmd,
}

/// The AID models.
#[derive(Debug, Subcommand)]
pub enum AidCmd {
    /// Exact LAD regression (least absolute deviations) by AID; stops with the optimality
    /// certificate (the result is the full LP's optimum).
    Lad(AidLadArgs),
    /// C-SVM (hinge loss, unregularized bias; `train -t 0` semantics by default) by AID.
    Svm(AidSvmArgs),
    /// Semi-supervised linear SVM by AID over an exact branch and bound (a heuristic: the
    /// paper's optimality claim is false). Label 0 marks unlabeled rows.
    S3vm(AidS3vmArgs),
}

/// Options of every AID command.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "AID")]
pub struct AidCommon {
    /// Initial aggregation rate r^0 = |K^0|/n (default: the paper's rule).
    #[arg(long)]
    pub r0: Option<f64>,
    /// Stop when (E_best - lower bound) / E_best <= this (lad: 0 = only the certificate).
    #[arg(long)]
    pub gap_tol: Option<f64>,
    /// Most AID iterations (aggregated solves).
    #[arg(long)]
    pub max_iter: Option<usize>,
    /// Time limit of the AID loop in seconds.
    #[arg(long)]
    pub time_limit: Option<f64>,
    /// Seed of the sample and of the k-means centres.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Quiet: no per-iteration table.
    #[arg(short = 'q')]
    pub quiet: bool,
    /// Print one JSON object on stdout at the end.
    #[arg(long)]
    pub json: bool,
    /// Write an SVG plot of the bounds and of r^t per iteration.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    pub help: Option<bool>,
    #[command(flatten)]
    pub ckpt: ResumeArgs,
}

/// `marginkit aid lad`.
#[derive(Debug, Args)]
#[command(disable_help_flag = true, next_help_heading = "AID-LAD")]
pub struct AidLadArgs {
    /// No intercept column.
    #[arg(long)]
    pub no_intercept: bool,
    /// Training data (regression targets).
    #[arg(help_heading = "Arguments", display_order = 1)]
    pub train_file: PathBuf,
    /// Model file (JSON; default TRAIN.model).
    #[arg(help_heading = "Arguments", display_order = 2)]
    pub model_file: Option<PathBuf>,
    #[command(flatten)]
    pub common: AidCommon,
    #[command(flatten)]
    pub input: InputArgs,
}

/// `marginkit aid svm`.
#[derive(Debug, Args)]
#[command(disable_help_flag = true, next_help_heading = "AID-SVM")]
pub struct AidSvmArgs {
    /// The penalty C (the paper's M).
    #[arg(short = 'c', default_value_t = AidSvmParams::DEFAULT_C)]
    pub c: f64,
    /// Kernel: 0 linear (default here; aggregated problems by DCD, LIBLINEAR model file),
    /// 1 polynomial, 2 RBF, 3 sigmoid (averaged Gram entries, SMO, LIBSVM model file).
    #[arg(short = 't', default_value_t = 0)]
    pub kernel_type: u8,
    /// gamma (default 1/num_features).
    #[arg(short = 'g')]
    pub gamma: Option<f64>,
    /// degree of the polynomial kernel.
    #[arg(short = 'd', default_value_t = 3)]
    pub degree: u32,
    /// coef0.
    #[arg(short = 'r', default_value_t = 0.0, allow_negative_numbers = true)]
    pub coef0: f64,
    /// Stopping tolerance of the aggregated solves.
    #[arg(short = 'e', default_value_t = AidSvmParams::DEFAULT_SOLVER_TOL)]
    pub eps: f64,
    /// Solver of the linear aggregated problems: auto or dcd (dual coordinate descent with an
    /// augmented Lagrangian for the bias, at every size) or smo (SMO at every size). Ignored
    /// with a kernel.
    #[arg(long, value_enum, default_value_t = EngineArg::Auto)]
    pub engine: EngineArg,
    #[command(flatten)]
    pub qp: SolverFlag,
    /// Kernel only: aggregated problems by the paper's averaged Gram entries (`averaged`,
    /// n^2 kernel pair sums) or by linear AID on Nystrom features of --rank landmarks followed
    /// by an exact warm-started SMO on the full problem, certified by its duality gap (`nystrom`,
    /// a deviation from the paper's Appendix B).
    #[arg(long, value_enum, default_value_t = SteerArg::Averaged)]
    pub steer: SteerArg,
    /// Landmarks of --steer nystrom: `auto` (100 landmarks when their mean relative Nystrom
    /// residual on a seeded 1,000-row sample is at most 0.9; otherwise, a kernel too narrow to
    /// steer, no steering: the exact SMO starts cold) or a fixed count (always steers).
    #[arg(long, default_value = "auto")]
    pub rank: String,
    /// Relative gap at which the Nystrom steering stops (the exact finish uses --gap-tol).
    #[arg(long, default_value_t = 1e-3)]
    pub steer_gap: f64,
    /// Training data (two classes).
    #[arg(help_heading = "Arguments", display_order = 1)]
    pub train_file: PathBuf,
    /// Model file (default TRAIN.model).
    #[arg(help_heading = "Arguments", display_order = 2)]
    pub model_file: Option<PathBuf>,
    #[command(flatten)]
    pub common: AidCommon,
    #[command(flatten)]
    pub input: InputArgs,
}

/// `marginkit aid s3vm`.
#[derive(Debug, Args)]
#[command(disable_help_flag = true, next_help_heading = "AID-S3VM")]
pub struct AidS3vmArgs {
    /// Penalty of labeled rows M_l.
    #[arg(short = 'c', long = "c-labeled", default_value_t = AidS3vmParams::DEFAULT_C_LABELED)]
    pub c_labeled: f64,
    /// Penalty of unlabeled rows M_u.
    #[arg(long = "c-unlabeled", default_value_t = AidS3vmParams::DEFAULT_C_UNLABELED)]
    pub c_unlabeled: f64,
    /// Balance constraint: mean decision value of the unlabeled rows = mean labeled label.
    #[arg(long)]
    pub balance: bool,
    /// Balance cost: the labeled rows of the minority class get M_l * n_majority / n_minority.
    #[arg(long)]
    pub balance_cost: bool,
    /// Unlabeled rows from a second file (its labels are ignored).
    #[arg(long)]
    pub unlabeled: Option<PathBuf>,
    /// Node limit of each branch and bound.
    #[arg(long, default_value_t = AidS3vmParams::DEFAULT_BNB_NODES)]
    pub nodes: usize,
    /// Time limit of each branch and bound in seconds.
    #[arg(long, default_value_t = AidS3vmParams::DEFAULT_BNB_SECONDS as f64)]
    pub bnb_time_limit: f64,
    /// Solve the full problem by branch and bound (no aggregation; small problems only).
    #[arg(long)]
    pub exact: bool,
    /// Write the predicted label of every unlabeled row here (one per line, in row order).
    #[arg(long)]
    pub predictions: Option<PathBuf>,
    /// Training data (label 0 = unlabeled).
    #[arg(help_heading = "Arguments", display_order = 1)]
    pub train_file: PathBuf,
    /// Model file (LIBLINEAR format; default TRAIN.model).
    #[arg(help_heading = "Arguments", display_order = 2)]
    pub model_file: Option<PathBuf>,
    #[command(flatten)]
    pub common: AidCommon,
    #[command(flatten)]
    pub input: InputArgs,
}

/// `marginkit lad`: exact LAD on the full data (the LP by clarabel).
#[derive(Debug, Args)]
#[command(disable_help_flag = true)]
pub struct LadArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// No intercept column.
    #[arg(long)]
    pub no_intercept: bool,
    /// Print one JSON object (objective, total_seconds, certified).
    #[arg(long)]
    pub json: bool,
    /// Quiet.
    #[arg(short = 'q')]
    pub quiet: bool,
    /// Worker threads.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Time limit in seconds.
    #[arg(long)]
    pub time_limit: Option<f64>,
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    pub help: Option<bool>,
    /// Training data.
    #[arg(help_heading = "Arguments", display_order = 1)]
    pub train_file: PathBuf,
    /// Model file (JSON; default TRAIN.model).
    #[arg(help_heading = "Arguments", display_order = 2)]
    pub model_file: Option<PathBuf>,
}

fn seconds(name: &str, v: Option<f64>) -> CliResult<Option<Duration>> {
    match v {
        None => Ok(None),
        Some(t) => crate::common::run::seconds_flag(name, t).map(Some),
    }
}

/// The loop limits of every AID model, mapped onto its parameter builder (the library checks
/// them).
macro_rules! with_limits {
    ($params:expr, $c:expr) => {{
        let mut p = $params.seed($c.seed);
        if let Some(g) = $c.gap_tol {
            p = p.gap_tol(g);
        }
        if let Some(m) = $c.max_iter {
            p = p.max_iter(m);
        }
        if let Some(t) = seconds("time-limit", $c.time_limit)? {
            p = p.time_limit(t);
        }
        p
    }};
}

/// Per-iteration table on stdout; the header is printed with the first row, so input the fit
/// rejects (e.g. multi-class data in `aid svm`) prints nothing to stdout. With `--json` the
/// iterations go to the progress line instead. A model without a lower bound (S3VM) has no
/// bound and no gap columns. The progress line (unless `-q`) also shows the inner solve of the
/// current iteration (see [`AidObserver`]).
struct Table {
    on: bool,
    bound: bool,
    started: std::cell::Cell<bool>,
    /// The iteration being solved (the last finished one + 1).
    current: std::cell::Cell<usize>,
    progress: std::cell::RefCell<Progress>,
}

impl Table {
    fn new(common: &AidCommon, bound: bool) -> Self {
        Table {
            on: !common.quiet && !common.json,
            bound,
            started: std::cell::Cell::new(false),
            current: std::cell::Cell::new(0),
            progress: std::cell::RefCell::new(Progress::new(common.quiet, "aid")),
        }
    }
    fn header(&self) {
        if self.on && !self.started.replace(true) {
            if self.bound {
                println!(
                    "{:>4} {:>9} {:>9} {:>15} {:>15} {:>10} {:>9}",
                    "t", "clusters", "r", "F (lower)", "E_best", "gap", "seconds"
                );
            } else {
                println!(
                    "{:>4} {:>9} {:>9} {:>15} {:>15} {:>9}",
                    "t", "clusters", "r", "E_t", "E_best", "seconds"
                );
            }
        }
    }
    fn row(&self, r: &IterRecord) {
        self.current.set(r.t + 1);
        if self.on {
            self.progress.borrow().suspend(|| {
                self.header();
                if self.bound {
                    println!(
                        "{:>4} {:>9} {:>9.5} {:>15.9e} {:>15.9e} {:>10.3e} {:>9.4}",
                        r.t, r.clusters, r.r, r.lower_bound, r.best_objective, r.gap, r.seconds
                    );
                } else {
                    println!(
                        "{:>4} {:>9} {:>9.5} {:>15.9e} {:>15.9e} {:>9.4}",
                        r.t, r.clusters, r.r, r.objective, r.best_objective, r.seconds
                    );
                }
                let _ = std::io::stdout().flush();
            });
        }
        let msg = if self.bound {
            format!(
                "iteration {}: {} clusters, gap {:.3e}, best objective {:.9e}",
                r.t, r.clusters, r.gap, r.best_objective
            )
        } else {
            format!(
                "iteration {}: {} clusters, {} violating, best objective {:.9e}",
                r.t, r.clusters, r.violating, r.best_objective
            )
        };
        self.progress.borrow_mut().set(&msg);
    }
    /// A report of the current iteration's inner solve (SMO or DCD iterations, branch-and-bound
    /// nodes, kernel-sum stages) on the progress line.
    fn inner(&self, s: &IterStats) {
        let violation = if s.max_violation.is_finite() {
            format!(" violation {:.3e}", s.max_violation)
        } else {
            String::new()
        };
        self.progress.borrow_mut().set(&format!(
            "iteration {}: solve iter {}{violation} active {}",
            self.current.get(),
            s.iterations,
            s.active
        ));
    }
    /// Removes the live line before the final report.
    fn finish(&self) {
        self.progress.borrow().finish();
    }
}

/// The observer of an AID fit: the Ctrl-C flag, and every report of the inner solves on the
/// progress line (the AID loop passes its observer to each aggregated solve).
struct AidObserver<'a> {
    table: &'a Table,
    cancel: Cancel,
}

impl Observer for AidObserver<'_> {
    fn on_iter(&mut self, s: &IterStats) -> ControlFlow<()> {
        self.table.inner(s);
        self.cancel.on_iter(s)
    }
}

fn iterations_json(its: &[IterRecord]) -> Vec<Value> {
    its.iter()
        .map(|r| {
            json!({
                "t": r.t,
                "clusters": r.clusters,
                "r": r.r,
                "lower_bound": finite(r.lower_bound),
                "lower_bound_t": finite(r.bound_t),
                "objective_t": r.objective,
                "best_objective": r.best_objective,
                "gap": finite(r.gap),
                "violating": r.violating,
                "seconds": r.seconds,
            })
        })
        .collect()
}

fn finite(v: f64) -> Value {
    if v.is_finite() {
        json!(v)
    } else {
        Value::Null
    }
}

/// The SVG: lower bound and best objective per iteration, and r^t per iteration.
pub fn plot_svg(its: &[IterRecord], title: &str) -> String {
    let t_axis = || Axis {
        label: "iteration t".into(),
        scale: Scale::Linear,
    };
    // A model without a lower bound (S3VM) draws no bound curve and has no legend entry for it.
    let lower: Vec<(f64, f64)> = its
        .iter()
        .filter(|r| r.lower_bound.is_finite())
        .map(|r| (r.t as f64, r.lower_bound))
        .collect();
    let bounds = LineChart::new(
        &format!(
            "{title}: {}",
            if lower.is_empty() {
                "objective"
            } else {
                "bounds"
            }
        ),
        t_axis(),
        Axis {
            label: "objective".into(),
            scale: Scale::Log10,
        },
    )
    .add(
        if lower.is_empty() {
            "E_best"
        } else {
            "E_best (upper)"
        },
        "#d62728",
        its.iter().map(|r| (r.t as f64, r.best_objective)).collect(),
    );
    let bounds = if lower.is_empty() {
        bounds
    } else {
        bounds.add("F (lower)", "#1f77b4", lower)
    };
    let rate = LineChart::new(
        &format!("{title}: aggregation rate"),
        t_axis(),
        Axis {
            label: "r^t = |K^t| / n".into(),
            scale: Scale::Log10,
        },
    )
    .add(
        "r^t",
        "#2ca02c",
        its.iter().map(|r| (r.t as f64, r.r)).collect(),
    );
    stack_svg(&[bounds, rate])
}

fn write_plot(path: &Path, its: &[IterRecord], train: &Path) -> CliResult {
    let title = crate::common::report::data_name(train, "aid");
    let svg = plot_svg(its, &title);
    write_output(path, |w| w.write_all(svg.as_bytes()))
        .map_err(|e| CliError(format!("{}: {e}", path.display())))
}

fn write_text(path: &Path, text: &str) -> CliResult {
    write_output(path, |w| w.write_all(text.as_bytes()))
        .map_err(|e| CliError(format!("{}: {e}", path.display())))
}

fn write_linear(path: &Path, m: &LinearModel) -> CliResult {
    write_output(path, |w| m.write(w)).map_err(|e| CliError(format!("{}: {e}", path.display())))
}

/// Regression data must not use label 0 as "unlabeled": nothing to check. Classification data
/// for `aid svm` is checked by the library (label 0 next to two classes is an error).
fn model_path(train: &Path, model: &Option<PathBuf>) -> PathBuf {
    model.clone().unwrap_or_else(|| default_model_path(train))
}

/// Ctrl-C handling and the state file of one run.
struct Interrupt {
    state_path: PathBuf,
    ckpt: ResumeArgs,
    resume: Option<AidCheckpoint>,
    cancel: Cancel,
}

impl Interrupt {
    /// Reads `--resume`, picks the state path (refusing one that is an output file) and
    /// installs the Ctrl-C handler.
    fn new(common: &AidCommon, outputs: &[&Path]) -> CliResult<Self> {
        let state_path = state_path(common, outputs[0]);
        for out in outputs.iter().copied().chain(common.plot.as_deref()) {
            crate::common::output::refuse_same_file(&state_path, out)?;
        }
        let resume = common.ckpt.read(AidCheckpoint::from_bytes)?;
        Ok(Self {
            state_path,
            ckpt: common.ckpt.clone(),
            resume,
            cancel: crate::common::interrupt::install(),
        })
    }

    /// A library error; names the state file when continuing one (a refused state).
    fn err(&self, e: marginkit::FitError) -> CliError {
        self.ckpt.err(e)
    }

    /// Writes the state of a stopped run (atomically); returns its path.
    fn write(&self, ck: Option<&AidCheckpoint>) -> CliResult<Option<String>> {
        let Some(ck) = ck else {
            return Ok(None);
        };
        write_output(&self.state_path, |w| w.write_all(&ck.to_bytes()))
            .map_err(|e| CliError(format!("{}: {e}", self.state_path.display())))?;
        Ok(Some(self.state_path.display().to_string()))
    }

    /// After the outputs are written: the keys of `--json`, and the exit of a stopped run.
    fn report(&self, out: &mut Value, written: &Option<String>) {
        if let Value::Object(o) = out {
            o.insert(
                "interrupted".into(),
                json!(written.is_some() || self.cancel.is_cancelled()),
            );
            o.insert("state_file".into(), json!(written));
            o.insert("resumed".into(), json!(self.ckpt.resume.is_some()));
        }
    }

    /// How the run ended, once its outputs are written: a stopped run says how to continue.
    fn outcome(&self, written: &Option<String>, finished: usize) -> Outcome {
        if let Some(s) = written {
            eprintln!(
                "marginkit: interrupted after {finished} finished iterations; the model (if any) is \
                 the last iterate's; continue with --resume {s}"
            );
            return Outcome::Interrupted;
        }
        if self.cancel.is_cancelled() && finished == 0 {
            eprintln!(
                "marginkit: interrupted during the initial clustering: no model and nothing to continue"
            );
            return Outcome::Interrupted;
        }
        Outcome::Done
    }
}

/// The state file of a stopped run: `--state-file`, else the model file's name + ".state".
fn state_path(common: &AidCommon, model: &Path) -> PathBuf {
    common.ckpt.state_path(after_model(model))
}

/// Checks every output of an `aid` run before the data are read: the model (first), the
/// other outputs, the plot and the state file.
fn check_aid_outputs(common: &AidCommon, outputs: &[&Path]) -> CliResult {
    let state = state_path(common, outputs[0]);
    let mut checks: Vec<(&Path, &str)> = outputs.iter().map(|p| (*p, "output")).collect();
    checks.extend(common.plot.as_deref().map(|p| (p, "--plot")));
    checks.push((&state, "state file"));
    crate::common::output::check_outputs(&checks)
}

/// Output of a run stopped before its first iteration finished: no model, only the state.
fn no_model(common: &AidCommon, model: &str, ir: &Interrupt, written: &Option<String>) -> Outcome {
    if common.json {
        let mut out = json!({"model": model, "stop": "interrupted",
                             "status": Status::Interrupted.as_str(), "converged": false,
                             "objective": Value::Null, "iterations": []});
        ir.report(&mut out, written);
        println!("{out}");
    }
    ir.outcome(written, 0)
}

/// A fit with a model: the model, its report, the interrupt state and the state file written,
/// if any.
type Running<M, R> = (M, R, Interrupt, Option<String>);

/// The interruptible part every `aid` model shares: reads `--resume` and installs the Ctrl-C
/// handler ([`Interrupt::new`]), runs `fit` with the cancel flag and the state to continue,
/// and writes the state of a stopped run. When the run stopped before a model existed, the
/// `--json` report of model `name` is printed, and the run's outcome is the `Err`.
fn fit_interruptible<M, R>(
    common: &AidCommon,
    outputs: &[&Path],
    name: &str,
    fit: impl FnOnce(
        &mut Control<'_, AidCheckpoint, IterRecord>,
    ) -> Result<Fit<Option<M>, R, AidCheckpoint>, marginkit::FitError>,
    table: &Table,
) -> CliResult<Result<Running<M, R>, Outcome>> {
    let ir = Interrupt::new(common, outputs)?;
    let mut ctl = Control::new(AidObserver {
        table,
        cancel: ir.cancel.clone(),
    })
    .resume_opt(ir.resume.as_ref())
    .on_part(|r: &IterRecord| table.row(r));
    let done = fit(&mut ctl);
    drop(ctl);
    table.finish();
    let done = done.map_err(|e| ir.err(e))?;
    let written = ir.write(done.checkpoint.as_ref())?;
    match done.model {
        Some(m) => Ok(Ok((m, done.report, ir, written))),
        None => Ok(Err(no_model(common, name, &ir, &written))),
    }
}

fn write_linear_status(path: &Path, m: &LinearModel, status: Status) -> CliResult {
    if status == Status::Interrupted {
        write_output(path, |w| m.write(w)).map_err(|e| CliError(format!("{}: {e}", path.display())))
    } else {
        write_linear(path, m)
    }
}

fn finish(
    common: &AidCommon,
    train: &Path,
    its: &[IterRecord],
    mut out: Value,
    objective: f64,
    total: f64,
) -> CliResult {
    if let Some(p) = &common.plot {
        write_plot(p, its, train)?;
    }
    if common.json {
        if let Value::Object(o) = &mut out {
            o.insert("objective".into(), json!(objective));
            o.insert("total_seconds".into(), json!(total));
            o.insert("iterations".into(), Value::Array(iterations_json(its)));
        }
        println!("{out}");
    } else if !common.quiet {
        println!("objective {objective:.12e}  total {total:.4} s");
    }
    Ok(())
}

/// `marginkit aid ...`.
pub fn run(a: AidArgs) -> Exit {
    match a.cmd {
        AidCmd::Lad(a) => run_lad(a),
        AidCmd::Svm(a) => run_svm(a),
        AidCmd::S3vm(a) => run_s3vm(a),
    }
}

fn run_lad(a: AidLadArgs) -> Exit {
    init_threads(a.common.threads)?;
    check_aid_outputs(&a.common, &[&model_path(&a.train_file, &a.model_file)])?;
    let data = read_data(&a.train_file, &a.input, false)?;
    let t0 = Instant::now();
    let mut params = AidLadParams::new().intercept(!a.no_intercept);
    if let Some(r) = a.common.r0 {
        params = params.r0(r);
    }
    let params = with_limits!(params, a.common).check()?;
    let table = Table::new(&a.common, true);
    let mpath = model_path(&a.train_file, &a.model_file);
    let (model, report, ir, written) = match fit_interruptible(
        &a.common,
        &[&mpath],
        "lad",
        |ctl| lad::fit(&params, &data, ctl),
        &table,
    )? {
        Ok(t) => t,
        Err(outcome) => return Ok(outcome),
    };
    let Some(run) = &report.run else {
        return Err(CliError(
            "internal: AID-LAD returned a model without a run".into(),
        ));
    };
    let total = t0.elapsed().as_secs_f64();
    let text = if run.status == Status::Interrupted {
        // The JSON model gets the status key the other model formats carry as a line.
        let mut v: Value = serde_json::from_str(&model.to_json())
            .map_err(|e| CliError(format!("internal: LAD model JSON: {e}")))?;
        if let Value::Object(o) = &mut v {
            o.insert("status".into(), json!(Status::Interrupted.as_str()));
        }
        v.to_string()
    } else {
        model.to_json()
    };
    write_text(&mpath, &text)?;
    let mut out = json!({
        "model": "lad",
        "stop": run.stop_name(),
        "n": data.len(),
        "init_seconds": report.init_seconds,
        "lower_bound": finite(run.lower_bound),
        "certified": run.termination == Some(Termination::Optimal) && report.last_certified,
        "status": report.status().as_str(),
        "converged": report.status() == Status::Converged,
    });
    ir.report(&mut out, &written);
    if !a.common.quiet && !a.common.json {
        println!("stop: {}", run.stop_name());
    }
    finish(
        &a.common,
        &a.train_file,
        &run.iterations,
        out,
        run.best_objective,
        total,
    )?;
    Ok(ir.outcome(&written, run.iterations.len()))
}

fn run_svm(a: AidSvmArgs) -> Exit {
    init_threads(a.common.threads)?;
    check_aid_outputs(&a.common, &[&model_path(&a.train_file, &a.model_file)])?;
    let data = read_data(&a.train_file, &a.input, false)?;
    let t0 = Instant::now();
    let mut params = AidSvmParams::new()
        .c(a.c)
        .solver_tol(a.eps)
        .linear_engine(match a.engine {
            EngineArg::Auto => AidLinearEngine::Auto,
            EngineArg::Dcd => AidLinearEngine::Dcd,
            EngineArg::Smo => AidLinearEngine::SmoUpTo(usize::MAX),
        })
        .qp_engine(a.qp.engine())
        .kernel_steering(match a.steer {
            SteerArg::Averaged => KernelSteering::AveragedGram,
            SteerArg::Nystrom => KernelSteering::Nystrom {
                rank: match a.rank.as_str() {
                    "auto" => NystromRank::Auto,
                    r => NystromRank::Fixed(r.parse().map_err(|_| {
                        CliError(format!(
                            "--rank {r}: expected auto or a positive number of landmarks"
                        ))
                    })?),
                },
                steer_gap: a.steer_gap,
            },
        });
    // `-t 0` is linear AID (LIBLINEAR model file); any other kernel runs Appendix B.
    let kernel = KernelParams::from_libsvm(a.kernel_type, a.gamma, a.coef0, a.degree)?;
    if kernel.kind != KernelKind::Linear {
        params = params.kernel(kernel);
    }
    if let Some(r) = a.common.r0 {
        params = params.r0(r);
    }
    let params = with_limits!(params, a.common).check()?;
    let table = Table::new(&a.common, true);
    let path = model_path(&a.train_file, &a.model_file);
    let name = if params.kernel().is_some() {
        "aid_svm_kernel"
    } else {
        "aid_svm_linear"
    };
    let (model, report, ir, written) = match fit_interruptible(
        &a.common,
        &[&path],
        name,
        |ctl| svm::fit(&params, &data, ctl),
        &table,
    )? {
        Ok(t) => t,
        Err(outcome) => return Ok(outcome),
    };
    let Some(run) = &report.run else {
        return Err(CliError(
            "internal: AID-SVM returned a model without a run".into(),
        ));
    };
    let total = t0.elapsed().as_secs_f64();
    match &model {
        AidSvmModel::Linear(m) => write_linear_status(&path, m, run.status)?,
        AidSvmModel::Kernel(m) => {
            save_model(&path, m).map_err(|e| CliError(format!("{}: {e}", path.display())))?
        }
    }
    let mut out = json!({
        "model": name,
        "stop": run.stop_name(),
        "n": data.len(),
        "init_seconds": report.init_seconds,
        "lower_bound": finite(run.lower_bound),
        "status": report.status().as_str(),
        "converged": report.status() == Status::Converged,
    });
    if let (Some(f), Value::Object(o)) = (&report.finish, &mut out) {
        o.insert(
            "nystrom".into(),
            json!({
                "rank": f.rank,
                "residual": finite(f.residual),
                "steer_iterations": f.steer_iterations,
                "steer_seconds": f.steer_seconds,
                "smo_iterations": f.smo_iterations,
                "finish_seconds": f.finish_seconds,
            }),
        );
    }
    ir.report(&mut out, &written);
    if !a.common.quiet && !a.common.json {
        if let Some(f) = &report.finish {
            if f.rank == 0 {
                println!(
                    "nystrom: no steering (sampled residual {:.3} at rank 100): cold exact SMO, {} iterations",
                    f.residual, f.smo_iterations
                );
            } else {
                println!(
                    "nystrom: rank {} (residual {:.3}), {} steering iterations, exact SMO {} iterations",
                    f.rank, f.residual, f.steer_iterations, f.smo_iterations
                );
            }
        }
        println!("stop: {}", run.stop_name());
    }
    finish(
        &a.common,
        &a.train_file,
        &run.iterations,
        out,
        run.best_objective,
        total,
    )?;
    if run.status == Status::Interrupted && written.is_none() {
        // Stopped in the Nystrom mode's exact finish: a model, but no state to continue from.
        eprintln!(
            "marginkit: interrupted; the model is the last iterate's and a Nystrom-steered \
             run has no state to continue from (rerun it)"
        );
        return Ok(Outcome::Interrupted);
    }
    Ok(ir.outcome(&written, run.iterations.len()))
}

fn run_s3vm(a: AidS3vmArgs) -> Exit {
    init_threads(a.common.threads)?;
    let path = model_path(&a.train_file, &a.model_file);
    let mut outputs: Vec<&Path> = vec![&path];
    outputs.extend(a.predictions.as_deref());
    check_aid_outputs(&a.common, &outputs)?;
    let mut data = read_data(&a.train_file, &a.input, false)?;
    if let Some(u) = &a.unlabeled {
        let extra = read_data(u, &a.input, false)?;
        data = merge_unlabeled(&data, &extra)?;
    }
    let t0 = Instant::now();
    let bnb = BnbLimits {
        max_nodes: a.nodes,
        time_limit: seconds("bnb-time-limit", Some(a.bnb_time_limit))?,
        rel_gap: AidS3vmParams::DEFAULT_BNB_REL_GAP,
    };
    if a.exact && a.common.ckpt.any() {
        return Err(CliError(
            "--exact cannot be combined with --resume or --state-file: the exact branch and bound writes no state to continue from".into(),
        ));
    }
    if a.exact {
        let mut inst = full_instance(&data, a.c_labeled, a.c_unlabeled, a.balance)?;
        if a.balance_cost {
            inst = inst.with_balance_cost();
        }
        let r = solve_bnb(&inst, &bnb)?;
        let total = t0.elapsed().as_secs_f64();
        let labels = marginkit::svm::train::class_order(
            &data
                .y
                .iter()
                .copied()
                .filter(|&v| v != 0.0)
                .collect::<Vec<_>>(),
        );
        let mut w = r.w.clone();
        w.push(r.b);
        let model = LinearModel::from_parts(
            marginkit::svm::linear::LinearSolver::L1LossSvcDual,
            labels,
            data.n_features(),
            Some(1.0),
            vec![w],
        )?;
        write_linear(&path, &model)?;
        write_predictions(&a, &data, &model)?;
        if a.common.json {
            println!(
                "{}",
                json!({"model": "s3vm_exact", "objective": r.objective, "lower_bound": r.lower_bound,
                       "gap": r.gap, "nodes": r.nodes, "optimal": r.optimal, "total_seconds": total,
                       "iterations": []})
            );
        } else if !a.common.quiet {
            println!(
                "objective {:.12e}  bound {:.12e}  gap {:.3e}  nodes {}  {}  total {total:.4} s",
                r.objective,
                r.lower_bound,
                r.gap,
                r.nodes,
                if r.optimal {
                    "optimal"
                } else {
                    "stopped at a limit"
                }
            );
        }
        return Ok(Outcome::Done);
    }
    let mut params = AidS3vmParams::new()
        .c_labeled(a.c_labeled)
        .c_unlabeled(a.c_unlabeled)
        .balance(a.balance)
        .balance_cost(a.balance_cost)
        .bnb(bnb);
    if let Some(r) = a.common.r0 {
        params = params.r0(r);
    }
    let params = with_limits!(params, a.common).check()?;
    let table = Table::new(&a.common, false);
    let mut outputs: Vec<&Path> = vec![&path];
    outputs.extend(a.predictions.as_deref());
    let (model, report, ir, written) = match fit_interruptible(
        &a.common,
        &outputs,
        "aid_s3vm",
        |ctl| s3vm::fit(&params, S3vmData::new(&data), ctl),
        &table,
    )? {
        Ok(t) => t,
        Err(outcome) => return Ok(outcome),
    };
    let Some(run) = &report.run else {
        return Err(CliError(
            "internal: AID-S3VM returned a model without a run".into(),
        ));
    };
    let total = t0.elapsed().as_secs_f64();
    write_linear_status(&path, &model, run.status)?;
    write_predictions(&a, &data, &model)?;
    let mut out = json!({
        "model": "aid_s3vm",
        "heuristic": true,
        "stop": run.stop_name(),
        "n": data.len(),
        "unlabeled": report.unlabeled_predictions.len(),
        "init_seconds": report.init_seconds,
        "status": report.status().as_str(),
        "converged": report.status() == Status::Converged,
    });
    ir.report(&mut out, &written);
    if !a.common.quiet && !a.common.json {
        println!(
            "stop: {} (AID-S3VM is a heuristic: no bound)",
            run.stop_name()
        );
    }
    finish(
        &a.common,
        &a.train_file,
        &run.iterations,
        out,
        run.best_objective,
        total,
    )?;
    Ok(ir.outcome(&written, run.iterations.len()))
}

fn write_predictions(a: &AidS3vmArgs, data: &Dataset, model: &LinearModel) -> CliResult {
    if let Some(p) = &a.predictions {
        let mut text = String::new();
        for i in 0..data.len() {
            if data.y[i] == 0.0 {
                text.push_str(&marginkit::svm::model_io::fmt_label(
                    model.predict_row(data.x.row(i)),
                ));
                text.push('\n');
            }
        }
        write_text(p, &text)?;
    }
    Ok(())
}

/// Appends the rows of `extra` as unlabeled rows (label 0).
fn merge_unlabeled(data: &Dataset, extra: &Dataset) -> CliResult<Dataset> {
    let d = data.n_features().max(extra.n_features());
    let n = data.len() + extra.len();
    let mut vals = vec![0.0; n * d];
    for (off, set) in [(0, data), (data.len(), extra)] {
        for i in 0..set.len() {
            for (j, v) in set.x.row(i).iter() {
                vals[(off + i) * d + j] = v;
            }
        }
    }
    let mut y = data.y.clone();
    y.extend(std::iter::repeat_n(0.0, extra.len()));
    let x = marginkit::Features::Dense(marginkit::DenseMatrix::new(n, d, vals)?);
    Ok(Dataset::new(x, y, None)?)
}

/// `marginkit lad`.
pub fn run_full_lad(a: LadArgs) -> Exit {
    init_threads(a.threads)?;
    let path = model_path(&a.train_file, &a.model_file);
    crate::common::output::check_outputs(&[(&path, "MODEL_FILE")])?;
    let data = read_data(&a.train_file, &a.input, false)?;
    let t0 = Instant::now();
    let (model, sol) = fit_lad(&data, !a.no_intercept, seconds("time-limit", a.time_limit)?)?;
    let total = t0.elapsed().as_secs_f64();
    write_text(&path, &model.to_json())?;
    print_lad(&a, &model, sol.objective, sol.certified, total);
    Ok(Outcome::Done)
}

fn print_lad(a: &LadArgs, model: &LadModel, objective: f64, certified: bool, total: f64) {
    if a.json {
        println!(
            "{}",
            json!({"objective": objective, "total_seconds": total, "certified": certified,
                   "intercept": model.intercept, "coef": model.coef})
        );
    } else if !a.quiet {
        println!(
            "objective {objective:.12e}  {}  total {total:.4} s",
            if certified {
                "certified optimal vertex"
            } else {
                "interior-point solution (not certified)"
            }
        );
    }
}

/// `--engine` of `aid svm` (linear aggregated problems).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineArg {
    /// DCD or SMO by problem size.
    Auto,
    /// Dual coordinate descent with an augmented Lagrangian for the bias.
    Dcd,
    /// SMO at every size.
    Smo,
}

/// `--steer` of `aid svm` with a kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SteerArg {
    /// The paper's averaged Gram entries.
    Averaged,
    /// Linear AID on Nystrom features, then an exact warm-started SMO.
    Nystrom,
}
