//! `marginkit robust svc|svr`: ramp-loss robust SVC / truncated-LAD SVR by the outlier path
//! (Suzumura et al.), or the CCCP baseline, with model selection over a C grid on validation data.
use marginkit::svm::params::cache_bytes_from_mb;
use marginkit::svm::KernelParams;

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use crate::common::progress::Progress;
use clap::{ArgAction, Args};
use marginkit::data::write_output;
use marginkit::fit::Control;
use marginkit::plot::{stack_svg, Axis, LineChart, Scale};
use marginkit::robust::cccp::default_grid;
use marginkit::robust::select::{select, Method, SelectParams, Selection};
use marginkit::robust::{PathKind, RobustCheckpoint, RobustData, RobustParams, RunEnd, Task};
use marginkit::solver::Status;
use marginkit::svm::model_io::save_model;
use serde_json::{json, Value};

use crate::common::input::read_data;
use crate::common::input::InputArgs;
use crate::common::model::SolverFlag;
use crate::common::report::choice;
use crate::common::resume::{beside_name, ResumeArgs};
use crate::common::run::init_threads;
use crate::common::{CliError, CliResult, Exit, Outcome};

/// `marginkit robust`.
#[derive(Debug, Args)]
#[command(
    disable_help_flag = true,
    override_usage = "marginkit robust svc|svr TRAIN_FILE --path theta|s [--valid FILE] [-c LIST] [-t K -g G ...] [--cccp] [--json] [--plot FILE] [--save-model FILE]",
    after_help = "Models have no bias (as in the paper); -B b adds a regularized constant feature b (kernel K + b^2).\n\
OP-theta runs theta from 1 to 0 at fixed s (--s; SVC default 0, SVR default 1); OP-s runs s from the\n\
standard SVM's extreme value to 0 (SVC) or down to --s-end times it (SVR) at theta = 0.\n\
Every locally optimal breakpoint of every C is a candidate; the lowest validation error wins\n\
(0-1 for svc, mean absolute error for svr). --cccp runs the CCCP baseline on the paper's 5-point grid."
)]
pub struct RobustArgs {
    #[command(flatten)]
    pub ckpt: ResumeArgs,
    /// svc (two classes) or svr (LAD regression).
    #[arg(value_enum)]
    pub task: TaskArg,
    /// Training data.
    pub train_file: PathBuf,
    /// Homotopy parameter: theta or s.
    #[arg(long, value_enum)]
    pub path: PathArg,
    /// Validation data (model selection).
    #[arg(long)]
    pub valid: Option<PathBuf>,
    /// Values of C (comma separated); default the paper's 0.01,0.1,1,10,100.
    #[arg(short = 'c', value_delimiter = ',', allow_negative_numbers = true)]
    pub cost: Vec<f64>,
    /// kernel_type: 0 linear, 1 polynomial, 2 RBF, 3 sigmoid, 4 precomputed.
    #[arg(short = 't', default_value_t = 2)]
    pub kernel_type: u8,
    /// degree of the polynomial kernel.
    #[arg(short = 'd', default_value_t = 3)]
    pub degree: u32,
    /// gamma of the kernel (default 1/num_features, the paper's 1/d).
    #[arg(short = 'g', allow_negative_numbers = true)]
    pub gamma: Option<f64>,
    /// coef0 of the polynomial and sigmoid kernels.
    #[arg(short = 'r', default_value_t = 0.0, allow_negative_numbers = true)]
    pub coef0: f64,
    /// Regularized constant feature b > 0 (kernel K + b^2); -1: no bias (the paper).
    #[arg(short = 'B', default_value_t = -1.0, allow_negative_numbers = true)]
    pub bias: f64,
    /// Kernel column cache in MB.
    #[arg(short = 'm', default_value_t = RobustParams::DEFAULT_CACHE_MB as f64, allow_negative_numbers = true)]
    pub cache_mb: f64,
    /// Tolerance of the SMO solves (standard SVM, CCCP subproblems), polished exactly afterwards.
    #[arg(short = 'e', default_value_t = RobustParams::DEFAULT_SOLVER_TOL, allow_negative_numbers = true)]
    pub eps: f64,
    /// Fixed s of the theta path and CCCP-theta (SVC: <= 0, default 0; SVR: > 0, default 1).
    #[arg(long = "s", allow_negative_numbers = true)]
    pub s_fixed: Option<f64>,
    /// SVR OP-s / CCCP-s end: this fraction of s_R (the default is the paper's range).
    #[arg(long, default_value_t = RobustParams::DEFAULT_S_END_FRACTION)]
    pub s_end: f64,
    /// Run the CCCP baseline instead of the outlier path.
    #[arg(long)]
    pub cccp: bool,
    /// CCCP grid: theta values, or fractions of s_C / s_R (default the paper's 5 points).
    #[arg(
        long,
        value_delimiter = ',',
        requires = "cccp",
        allow_negative_numbers = true
    )]
    pub grid: Vec<f64>,
    #[command(flatten)]
    pub qp: SolverFlag,
    /// Event limit per path (default max(10000, 50 n)); a path that hits it says so.
    #[arg(long)]
    pub max_events: Option<usize>,
    /// Worker threads (default: all cores); results do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
    #[command(flatten)]
    pub input: InputArgs,
    /// Quiet: no progress and no table.
    #[arg(short = 'q')]
    pub quiet: bool,
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write an SVG plot (coefficient paths like the paper's Fig. 5, objective, validation error).
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Write the selected model (LIBSVM format, readable by `marginkit predict`).
    #[arg(long)]
    pub save_model: Option<PathBuf>,
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    pub help: Option<bool>,
}

fn params(a: &RobustArgs) -> CliResult<RobustParams> {
    let task = match a.task {
        TaskArg::Svc => Task::Svc,
        TaskArg::Svr => Task::Svr,
    };
    let kind = match a.path {
        PathArg::Theta => PathKind::Theta,
        PathArg::S => PathKind::S,
    };
    let mut p = RobustParams::new()
        .task(task)
        .kind(kind)
        .kernel(KernelParams::from_libsvm(
            a.kernel_type,
            a.gamma,
            a.coef0,
            a.degree,
        )?)
        .bias((a.bias != -1.0).then_some(a.bias))
        .s_end_fraction(a.s_end)
        .solver_tol(a.eps)
        .qp_engine(a.qp.engine())
        .cache_bytes(
            usize::try_from(cache_bytes_from_mb("-m (cache size, MB)", a.cache_mb)?)
                .unwrap_or(usize::MAX),
        );
    if let Some(s) = a.s_fixed {
        p = p.s_fixed(s);
    }
    if let Some(m) = a.max_events {
        p = p.max_events(m);
    }
    Ok(p)
}

fn param_key(kind: PathKind) -> &'static str {
    kind.as_str()
}

fn report(a: &RobustArgs, sel: &Selection, total: f64, n: usize) -> Value {
    let key = param_key(sel.kind);
    let mut bps = Vec::new();
    let mut runs = Vec::new();
    for r in &sel.runs {
        for node in &r.nodes {
            let mut v = json!({
                "c": r.c,
                key: node.param,
                "kind": node.kind.as_str(),
                "objective": node.objective,
                "n_outliers": node.n_outliers,
                "locally_optimal": node.locally_optimal,
            });
            if let (Some(e), Value::Object(o)) = (node.valid_error, &mut v) {
                o.insert("valid_error".into(), json!(e));
            }
            bps.push(v);
        }
        runs.push(json!({
            "c": r.c,
            "status": r.end.status().as_str(),
            "end": r.end.as_str(),
            "breakpoints": r.nodes.len(),
            "events": r.events,
            "jumps": r.d_steps,
            "s_standard": r.s_standard,
            "max_active": r.max_active,
            "final_locally_optimal": r.final_locally_optimal,
            "seconds": r.seconds,
        }));
    }
    let mut chosen = json!({
        "c": sel.chosen.c,
        key: sel.chosen.param,
    });
    if let (Some(e), Value::Object(o)) = (sel.chosen.valid_error, &mut chosen) {
        o.insert("valid_error".into(), json!(e));
    }
    json!({
        "task": choice(&a.task),
        "path": key,
        "method": if a.cccp { "cccp" } else { "op" },
        "n_samples": n,
        "breakpoints": bps,
        "runs": runs,
        "chosen": chosen,
        "total_seconds": total,
    })
}

/// Twenty distinct colours (ten strong, then their light variants), so that the default and
/// most hand-written C lists get one colour per C.
const COLORS: [&str; 20] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94",
    "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5",
];

/// The plot: coefficient paths (up to 10 samples that move the most; the paper's Fig. 5) of the
/// chosen C when the path's solutions are available, then objective and validation error.
fn plot_svg(
    sel: &Selection,
    coef_nodes: Option<&[marginkit::robust::Node]>,
    title: &str,
) -> String {
    let key = param_key(sel.kind);
    let x = || Axis {
        label: key.into(),
        scale: Scale::Linear,
    };
    let mut charts = Vec::new();
    if let Some(nodes) = coef_nodes {
        let sols: Vec<(f64, &Vec<f64>)> = nodes
            .iter()
            .filter_map(|n| n.beta.as_ref().map(|b| (n.param, b)))
            .collect();
        if let Some((_, first)) = sols.first() {
            let n = first.len();
            let mut moves: Vec<(f64, usize)> = (0..n)
                .map(|i| {
                    let (lo, hi) = sols
                        .iter()
                        .fold((f64::INFINITY, f64::NEG_INFINITY), |m, s| {
                            (m.0.min(s.1[i]), m.1.max(s.1[i]))
                        });
                    (hi - lo, i)
                })
                .collect();
            moves.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let mut ch = LineChart::new(
                &format!(
                    "{title}: coefficients along the path (C = {})",
                    sel.chosen.c
                ),
                x(),
                Axis {
                    label: "alpha (y_i beta_i for svc)".into(),
                    scale: Scale::Linear,
                },
            );
            for (k, &(_, i)) in moves.iter().take(10).enumerate() {
                ch = ch.add(
                    &format!("sample {}", i + 1),
                    COLORS[k % COLORS.len()],
                    sols.iter().map(|s| (s.0, s.1[i])).collect(),
                );
            }
            charts.push(ch);
        }
    }
    // The objectives of the C values differ by orders of magnitude: a log axis keeps the small
    // ones from lying flat on the bottom, under the others (it needs them all positive).
    let positive = sel
        .runs
        .iter()
        .flat_map(|r| &r.nodes)
        .all(|n| n.objective > 0.0);
    let mut obj = LineChart::new(
        &format!("{title}: objective"),
        x(),
        Axis {
            label: "robust objective".into(),
            scale: if positive && sel.runs.len() > 1 {
                Scale::Log10
            } else {
                Scale::Linear
            },
        },
    );
    let mut val = LineChart::new(
        &format!("{title}: validation error"),
        x(),
        Axis {
            label: "validation error".into(),
            scale: Scale::Linear,
        },
    );
    let mut has_val = false;
    for (k, r) in sel.runs.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        obj = obj.add(
            &format!("C = {}", r.c),
            color,
            r.nodes.iter().map(|n| (n.param, n.objective)).collect(),
        );
        let pts: Vec<(f64, f64)> = r
            .nodes
            .iter()
            .filter_map(|n| n.valid_error.map(|e| (n.param, e)))
            .collect();
        if !pts.is_empty() {
            has_val = true;
            val = val.add(&format!("C = {}", r.c), color, pts);
        }
    }
    charts.push(obj);
    if has_val {
        charts.push(val);
    }
    stack_svg(&charts)
}

/// Largest training set whose chosen path is re-run with every solution kept for the plot.
const PLOT_COEF_MAX_N: usize = 5000;

pub fn run(a: RobustArgs) -> Exit {
    let t0 = Instant::now();
    init_threads(a.threads)?;
    let state_path = a
        .ckpt
        .state_path(beside_name(&a.train_file, ".robust.state"));
    for out in [&a.save_model, &a.plot].into_iter().flatten() {
        crate::common::output::refuse_same_file(&state_path, out)?;
    }
    let mut outputs: Vec<(&std::path::Path, &str)> = vec![(&state_path, "state file")];
    outputs.extend(a.plot.as_deref().map(|p| (p, "--plot")));
    outputs.extend(a.save_model.as_deref().map(|p| (p, "--save-model")));
    crate::common::output::check_outputs(&outputs)?;
    let precomputed = a.kernel_type == 4;
    let data = read_data(&a.train_file, &a.input, precomputed)?;
    let valid = match &a.valid {
        Some(p) => Some(read_data(p, &a.input, precomputed)?),
        None => None,
    };
    let robust = params(&a)?;
    let mut sp = SelectParams::new().robust(robust.clone());
    if !a.cost.is_empty() {
        sp = sp.c_grid(a.cost.clone());
    }
    if a.cccp {
        let rp = robust.clone().check()?;
        let grid = if a.grid.is_empty() {
            default_grid(rp.kind(), rp.task(), rp.s_end_fraction())
        } else {
            a.grid.clone()
        };
        sp = sp.method(Method::Cccp(grid));
    }
    let sp = sp.check()?;
    let p = sp.robust();
    let kind = p.kind();
    let mut progress = Progress::new(a.quiet, "robust");
    let label = format!(
        "{} path over {} values of C",
        choice(&a.path),
        sp.c_grid().len()
    );
    progress.set(&label);
    let resume = a.ckpt.read(RobustCheckpoint::from_bytes)?;
    // Ctrl-C stops the running event or solve; the runs so far are reported and the chosen
    // model written, with a state file to continue from.
    let mut cancel = crate::common::interrupt::install();
    let rdata = RobustData::new(&data).validate_on(valid.as_ref());
    let fit = select(
        &sp,
        &rdata,
        &mut Control::new(marginkit::solver::Both(&mut progress, &mut cancel))
            .resume_opt(resume.as_ref()),
    );
    progress.finish();
    let fit = fit.map_err(|e| a.ckpt.err(e))?;
    let (sel, checkpoint) = (&fit.report, &fit.checkpoint);
    let interrupted = fit.status() == Status::Interrupted;
    let state_written = match &checkpoint {
        Some(c) => {
            write_output(&state_path, |w| w.write_all(&c.to_bytes()))
                .map_err(|e| CliError(format!("{}: {e}", state_path.display())))?;
            Some(state_path.display().to_string())
        }
        None => None,
    };
    let status = fit.status();
    for r in &sel.runs {
        if !matches!(r.end, RunEnd::Completed | RunEnd::Interrupted) {
            eprintln!(
                "marginkit: warning: C = {} stopped early ({}); raise --max-events",
                r.c,
                r.end.as_str()
            );
        }
    }
    if let Some(path) = &a.save_model {
        save_model(path, &fit.model).map_err(|e| CliError(format!("{}: {e}", path.display())))?;
    }
    if let (Some(path), true) = (&a.plot, interrupted) {
        eprintln!(
            "marginkit: interrupted: no plot written to {}",
            path.display()
        );
    } else if let Some(path) = &a.plot {
        let title = crate::common::report::data_name(&a.train_file, "robust");
        let kept = if !a.cccp && data.len() <= PLOT_COEF_MAX_N {
            let pc = RobustParams::from(p.clone())
                .c(sel.chosen.c)
                .keep_solutions(true)
                .check()?;
            let mut path =
                marginkit::robust::fit(&pc, &RobustData::new(&data), &mut Control::default())?
                    .report;
            // Show alpha = y_i beta_i for SVC (the paper's multipliers).
            if p.task() == Task::Svc {
                let first = data.y[0];
                for node in &mut path.nodes {
                    if let Some(b) = &mut node.beta {
                        for (bi, &yi) in b.iter_mut().zip(&data.y) {
                            if yi != first {
                                *bi = -*bi;
                            }
                        }
                    }
                }
            }
            Some(path.nodes)
        } else {
            None
        };
        let svg = plot_svg(sel, kept.as_deref(), &title);
        write_output(path, |w| w.write_all(svg.as_bytes()))
            .map_err(|e| CliError(format!("{}: {e}", path.display())))?;
    }
    let total = t0.elapsed().as_secs_f64();
    if a.json {
        let mut out = report(&a, sel, total, data.len());
        if let Value::Object(o) = &mut out {
            o.insert("interrupted".into(), json!(interrupted));
            o.insert("status".into(), json!(status.as_str()));
            o.insert("converged".into(), json!(status == Status::Converged));
            o.insert("state_file".into(), json!(state_written));
            o.insert("resumed".into(), json!(a.ckpt.resume.is_some()));
        }
        println!("{out}");
    } else if !a.quiet {
        let key = param_key(kind);
        println!(
            "{:>10} {:>12} {:>8} {:>8} {:>7} {:>10} {:>9}",
            "C", "status", "points", "jumps", "events", "best_err", "seconds"
        );
        for r in &sel.runs {
            let best = r
                .nodes
                .iter()
                .filter(|n| n.locally_optimal)
                .filter_map(|n| n.valid_error)
                .fold(f64::INFINITY, f64::min);
            println!(
                "{:>10} {:>12} {:>8} {:>8} {:>7} {:>10} {:>9.4}",
                r.c,
                r.end.as_str(),
                r.nodes.len(),
                r.d_steps,
                r.events,
                if best.is_finite() {
                    format!("{best:.4}")
                } else {
                    "-".into()
                },
                r.seconds
            );
        }
        match sel.chosen.valid_error {
            Some(e) => println!(
                "chosen C = {} {key} = {:.6} (validation error {e:.4})",
                sel.chosen.c, sel.chosen.param
            ),
            None => println!(
                "chosen C = {} {key} = {:.6} (no validation data: end of the first path)",
                sel.chosen.c, sel.chosen.param
            ),
        }
        println!("total {total:.4} s");
    }
    if let Some(s) = &state_written {
        eprintln!(
            "marginkit: interrupted after {} finished values of C; continue with --resume {s}",
            sel.runs.len().saturating_sub(1)
        );
        return Ok(Outcome::Interrupted);
    }
    Ok(Outcome::Done)
}

/// The task of `robust`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TaskArg {
    /// Ramp-loss SVC (two classes).
    Svc,
    /// Truncated-LAD SVR.
    Svr,
}

/// `--path` of `robust`: the homotopy parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PathArg {
    /// OP-theta.
    Theta,
    /// OP-s.
    S,
}
