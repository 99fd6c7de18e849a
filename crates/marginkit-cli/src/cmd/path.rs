//! `marginkit path`: the regularization path over C of the bias-free SVM with safe sample
//! screening (Ogawa et al. 2014), one table row (or JSON entry) per C.

use std::path::{Path, PathBuf};

use crate::common::progress::Progress;
use clap::{ArgAction, Args};
use marginkit::fit::Control;
use marginkit::path::{
    Engine, Grid, LinearStart, PathCheckpoint, PathData, PathParams, PathPoint, PathResult,
};
use marginkit::plot::{stack_svg, Axis, LineChart, Scale};
use marginkit::screening::Rule;
use marginkit::solver::Shrinking;
use marginkit::svm::model_io::save_model;
use marginkit::svm::KernelKind;
use marginkit::Dataset;
use serde_json::{json, Value};

use crate::common::input::read_data;
use crate::common::input::InputArgs;
use crate::common::model::svm_params;
use crate::common::model::{ModelArgs, SolverFlag};
use crate::common::report::choice;
use crate::common::resume::{beside_name, ResumeArgs};
use crate::common::run::init_threads;
use crate::common::run::process_cpu_seconds;
use crate::common::{CliError, CliResult, Exit, Outcome};

/// `marginkit path`.
#[derive(Debug, Args)]
#[command(
    disable_help_flag = true,
    // LIBSVM flags that a path of the bias-free C-SVC has no use for: refused in `params`,
    // so not listed.
    mut_arg("cost", |a| a.hide(true)),
    mut_arg("nu", |a| a.hide(true)),
    mut_arg("epsilon", |a| a.hide(true)),
    mut_arg("probability", |a| a.hide(true)),
    mut_arg("class_weights", |a| a.hide(true))
)]
pub struct PathArgs {
    #[command(flatten)]
    pub ckpt: ResumeArgs,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub qp: SolverFlag,
    /// Validation data: accuracy per C, and the best C for --best-model.
    #[arg(long)]
    pub valid: Option<PathBuf>,
    /// Smallest C of the log grid.
    #[arg(long, default_value_t = PathParams::DEFAULT_C_MIN)]
    pub c_min: f64,
    /// Largest C of the log grid (and of the epsilon path).
    #[arg(long, default_value_t = PathParams::DEFAULT_C_MAX)]
    pub c_max: f64,
    /// Number of log-spaced values of C.
    #[arg(long = "grid", default_value_t = PathParams::DEFAULT_POINTS)]
    pub grid: usize,
    /// Explicit values of C (comma separated), instead of the log grid.
    #[arg(long, value_delimiter = ',', conflicts_with_all = ["grid", "c_min", "eps_path"])]
    pub c_list: Vec<f64>,
    /// The paper's epsilon-path from C_min = 1/max(Q1) (eq. 35) with this epsilon (e.g. 0.001).
    #[arg(long, conflicts_with_all = ["grid", "c_min"])]
    pub eps_path: Option<f64>,
    /// Screening rule: none, bt1, bt2 or it.
    #[arg(long, value_enum, default_value_t = ScreeningArg::It)]
    pub screening: ScreeningArg,
    /// Linear paths: how each solve starts: auto (secant or scaled, whichever starts lower on
    /// the dual objective), scaled, secant, or cold (from zero at every C, as LIBLINEAR trains a
    /// single C; the rules still screen from the previous point).
    #[arg(long, value_enum, default_value_t = StartArg::Auto)]
    pub start: StartArg,
    /// Quiet: no progress and no table.
    #[arg(short = 'q')]
    pub quiet: bool,
    /// Print one JSON object with every point on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write an SVG plot of the screening rate and the time per C (and of the validation
    /// accuracy per C with --valid).
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Write every point's model to this directory (c_<index>.model).
    #[arg(long)]
    pub save_models: Option<PathBuf>,
    /// Write the model with the best validation accuracy here (needs --valid).
    #[arg(long, requires = "valid")]
    pub best_model: Option<PathBuf>,
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    pub help: Option<bool>,
    /// Training data (two classes).
    pub train_file: PathBuf,
}

fn params(a: &PathArgs, data: &Dataset) -> CliResult<PathParams> {
    let m = &a.model;
    if m.svm_code()?
        .is_some_and(|s| s != 0 && !(m.linear && s == 3))
    {
        return Err(CliError(
            "path: only the hinge-loss C-SVC without bias (-s 0, or -s 3 with --linear) has a path"
                .into(),
        ));
    }
    if !m.class_weights.is_empty() || m.probability == 1 {
        return Err(CliError(
            "path: class weights and probability models are not supported".into(),
        ));
    }
    if m.cost.is_some() {
        return Err(CliError(
            "path: -c is not taken; the path runs over C (set it with --c-min, --c-max, --grid or --c-list)"
                .into(),
        ));
    }
    if m.nu.is_some() || m.epsilon.is_some() {
        return Err(CliError(
            "path: -n and -p belong to nu-SVC and the SVRs, which have no path".into(),
        ));
    }
    let mut p = if m.linear {
        PathParams::linear()
    } else {
        let sp = svm_params(m)?;
        PathParams::kernel(sp.kernel().resolve(data.n_features()))
            .cache_bytes(sp.cache_bytes())
            .tol(sp.solver().tol)
    };
    if let Some(e) = m.eps {
        p = p.tol(e);
    }
    p = p
        .shrinking(if m.shrinking == 1 {
            Shrinking::On
        } else {
            Shrinking::Off
        })
        .bias((m.bias > 0.0).then_some(m.bias))
        .max_iter(m.max_iter)
        .qp_engine(a.qp.engine())
        .seed(m.seed)
        .keep_solutions(a.save_models.is_some() || a.best_model.is_some());
    if let Some(t) = m.time_limit {
        p = p.time_limit(Some(crate::common::run::seconds_flag("time-limit", t)?));
    }
    p = p.screening(match a.screening {
        ScreeningArg::None => None,
        ScreeningArg::Bt1 => Some(Rule::Bt1),
        ScreeningArg::Bt2 => Some(Rule::Bt2),
        ScreeningArg::It => Some(Rule::It),
    });
    p = p.linear_start(match a.start {
        StartArg::Auto => LinearStart::Auto,
        StartArg::Scaled => LinearStart::Scaled,
        StartArg::Secant => LinearStart::Secant,
        StartArg::Cold => LinearStart::Cold,
    });
    p = p.grid(if !a.c_list.is_empty() {
        Grid::List(a.c_list.clone())
    } else if let Some(eps) = a.eps_path {
        Grid::Epsilon {
            eps,
            c_max: a.c_max,
            max_points: 100_000,
        }
    } else {
        Grid::Log {
            c_min: a.c_min,
            c_max: a.c_max,
            points: a.grid,
        }
    });
    Ok(p)
}

fn point_json(p: &PathPoint, cpu: Option<f64>) -> Value {
    let mut v = json!({
        "c": p.c,
        "objective": p.objective,
        "n_sv": p.n_sv,
        "n_bsv": p.n_bsv,
        "screened_r": p.screened_r,
        "screened_l": p.screened_l,
        "screening_rate": p.screening_rate,
        "rule_seconds": p.rule_seconds,
        "solve_seconds": p.solve_seconds,
        "kkt_violators_freed": p.kkt_violators_freed,
        "solves": p.solves,
        "iterations": p.iterations,
        "status": p.status.as_str(),
        "max_violation": p.max_violation,
    });
    if let (Some(acc), Value::Object(o)) = (p.valid_accuracy, &mut v) {
        o.insert("valid_accuracy".into(), json!(acc));
    }
    if let (Some(t), Value::Object(o)) = (cpu, &mut v) {
        o.insert("cpu_seconds".into(), json!(t));
    }
    v
}

fn save_point(r: &PathResult, k: usize, data: &Dataset, path: &Path) -> CliResult {
    let err = |e: std::io::Error| CliError(format!("{}: {e}", path.display()));
    match r.engine {
        Engine::Linear => {
            let m = r.linear_model(k)?;
            marginkit::data::write_output(path, |w| m.write(&mut *w)).map_err(err)
        }
        Engine::Kernel(_) => save_model(path, &r.svm_model(k, data)?).map_err(err),
    }
}

/// The SVG: screening rate per C, rule / solve time per C and, with validation data, the
/// validation accuracy per C.
pub fn plot_svg(r: &PathResult, title: &str) -> String {
    let c_axis = || Axis {
        label: "C".into(),
        scale: Scale::Log10,
    };
    let rate = LineChart::new(
        &format!("{title}: screening rate"),
        c_axis(),
        Axis {
            label: "screened / non-SVs".into(),
            scale: Scale::Linear,
        },
    )
    .add(
        "screening rate",
        "#1f77b4",
        r.points.iter().map(|p| (p.c, p.screening_rate)).collect(),
    );
    let time = LineChart::new(
        &format!("{title}: time per C"),
        c_axis(),
        Axis {
            label: "seconds".into(),
            scale: Scale::Linear,
        },
    )
    .add(
        "solve",
        "#d62728",
        r.points.iter().map(|p| (p.c, p.solve_seconds)).collect(),
    )
    .add(
        "rule",
        "#2ca02c",
        r.points.iter().map(|p| (p.c, p.rule_seconds)).collect(),
    );
    let accuracy: Vec<(f64, f64)> = r
        .points
        .iter()
        .filter_map(|p| p.valid_accuracy.map(|a| (p.c, 100.0 * a)))
        .collect();
    if accuracy.is_empty() {
        return stack_svg(&[rate, time]);
    }
    let valid = LineChart::new(
        &format!("{title}: validation accuracy"),
        c_axis(),
        Axis {
            label: "accuracy (%)".into(),
            scale: Scale::Linear,
        },
    )
    .add("validation accuracy", "#9467bd", accuracy);
    stack_svg(&[valid, rate, time])
}

pub fn run(a: PathArgs) -> Exit {
    init_threads(a.model.threads)?;
    let state_path = a.ckpt.state_path(beside_name(&a.train_file, ".path.state"));
    for out in [&a.best_model, &a.plot].into_iter().flatten() {
        crate::common::output::refuse_same_file(&state_path, out)?;
    }
    let mut outputs: Vec<(&Path, &str)> = vec![(&state_path, "state file")];
    outputs.extend(a.plot.as_deref().map(|p| (p, "--plot")));
    outputs.extend(a.best_model.as_deref().map(|p| (p, "--best-model")));
    let first_saved = a.save_models.as_ref().map(|dir| dir.join("c_000.model"));
    if let Some(dir) = &a.save_models {
        std::fs::create_dir_all(dir).map_err(|e| CliError(format!("{}: {e}", dir.display())))?;
    }
    outputs.extend(first_saved.as_deref().map(|p| (p, "--save-models")));
    crate::common::output::check_outputs(&outputs)?;
    let precomputed = !a.model.linear
        && KernelKind::from_code(a.model.kernel_type) == Some(KernelKind::Precomputed);
    let data = read_data(&a.train_file, &a.input, precomputed)?;
    let valid = match &a.valid {
        Some(p) => Some(read_data(p, &a.input, precomputed)?),
        None => None,
    };
    let params = params(&a, &data)?.check()?;
    let len = match &params.grid() {
        Grid::Log { points, .. } => Some(*points),
        Grid::List(v) => Some(v.len()),
        Grid::Epsilon { .. } => None,
    };
    let resume = a.ckpt.read(PathCheckpoint::from_bytes)?;
    let mut progress = Progress::with_len(a.quiet, "path", len);
    // Ctrl-C stops the running solve; the points done so far are reported and written, with a
    // state file to continue from.
    let mut cancel = crate::common::interrupt::install();
    // The process's CPU time when each point is reported: a point's CPU is the difference to
    // the previous mark (one thread of work at a time, so it is not blurred by the other
    // processes on a loaded machine as wall time is).
    let mut cpu_marks = vec![process_cpu_seconds()];
    let result = marginkit::path::fit(
        &params,
        &PathData::new(&data).validate_on(valid.as_ref()),
        &mut Control::new(&mut cancel)
            .resume_opt(resume.as_ref())
            .on_part(|p: &PathPoint| {
                progress.inc(&format!(
                    "C {:.4e} nSV {} screened {}",
                    p.c,
                    p.n_sv,
                    p.screened_r + p.screened_l
                ));
                cpu_marks.push(process_cpu_seconds());
            }),
    );
    progress.finish();
    let fit = result.map_err(|e| a.ckpt.err(e))?;
    let (result, report, checkpoint) = (fit.model, fit.report, fit.checkpoint);
    let state_written = match &checkpoint {
        Some(c) => {
            marginkit::data::write_output(&state_path, |w| {
                std::io::Write::write_all(w, &c.to_bytes())
            })
            .map_err(|e| CliError(format!("{}: {e}", state_path.display())))?;
            Some(state_path.display().to_string())
        }
        None => None,
    };
    if !a.quiet && !a.json {
        println!(
            "{:>12} {:>14} {:>6} {:>6} {:>6} {:>6} {:>9} {:>9} {:>5}{}",
            "C",
            "objective",
            "nSV",
            "R",
            "L",
            "rate",
            "rule_s",
            "solve_s",
            "freed",
            if valid.is_some() { "  valid_acc" } else { "" }
        );
        for p in &result.points {
            let acc = p
                .valid_accuracy
                .map_or(String::new(), |v| format!("  {:>9.4}", v));
            println!(
                "{:>12.6e} {:>14.8e} {:>6} {:>6} {:>6} {:>6.3} {:>9.5} {:>9.5} {:>5}{acc}",
                p.c,
                p.objective,
                p.n_sv,
                p.screened_r,
                p.screened_l,
                p.screening_rate,
                p.rule_seconds,
                p.solve_seconds,
                p.kkt_violators_freed
            );
        }
        println!("total {:.4} s", report.total_seconds);
    }
    for p in &result.points {
        if p.status != marginkit::solver::Status::Converged {
            eprintln!(
                "marginkit: warning: C = {} stopped before convergence ({})",
                p.c,
                p.status.as_str()
            );
        }
    }
    if let Some(path) = &a.plot {
        let title = crate::common::report::data_name(&a.train_file, "path");
        let svg = plot_svg(&result, &title);
        marginkit::data::write_output(path, |w| std::io::Write::write_all(w, svg.as_bytes()))
            .map_err(|e| CliError(format!("{}: {e}", path.display())))?;
    }
    if let Some(dir) = &a.save_models {
        std::fs::create_dir_all(dir).map_err(|e| CliError(format!("{}: {e}", dir.display())))?;
        for k in 0..result.points.len() {
            save_point(&result, k, &data, &dir.join(format!("c_{k:03}.model")))?;
        }
    }
    let best = result.best_by_validation();
    if let Some(path) = &a.best_model {
        let k = best.ok_or_else(|| CliError("no validation accuracy to pick a model".into()))?;
        save_point(&result, k, &data, path)?;
        if !a.quiet && !a.json {
            println!(
                "best C = {} (validation accuracy {:.4}) written to {}",
                result.points[k].c,
                result.points[k].valid_accuracy.unwrap_or(0.0),
                path.display()
            );
        }
    }
    if a.json {
        let mut out = json!({
            "points": result
                .points
                .iter()
                .enumerate()
                .map(|(k, p)| {
                    let cpu = match (cpu_marks.get(k), cpu_marks.get(k + 1)) {
                        (Some(Some(a)), Some(Some(b))) => Some((b - a).max(0.0)),
                        _ => None,
                    };
                    point_json(p, cpu)
                })
                .collect::<Vec<_>>(),
            "total_seconds": report.total_seconds,
            "screening": choice(&a.screening),
            "n_samples": data.len(),
            "c_min_trivial": result.c_min_trivial,
        });
        if let (Some(k), Value::Object(o)) = (best, &mut out) {
            o.insert("best_c".into(), json!(result.points[k].c));
        }
        if let Value::Object(o) = &mut out {
            o.insert("interrupted".into(), json!(cancel.is_cancelled()));
            o.insert("state_file".into(), json!(state_written));
            o.insert("resumed".into(), json!(a.ckpt.resume.is_some()));
        }
        println!("{out}");
    }
    if cancel.is_cancelled() {
        eprintln!(
            "marginkit: interrupted after {} finished points{}",
            result.points.len(),
            state_written
                .as_ref()
                .map_or(String::new(), |s| format!("; continue with --resume {s}"))
        );
        return Ok(Outcome::Interrupted);
    }
    Ok(Outcome::Done)
}

/// `--screening` of `path`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ScreeningArg {
    /// No screening.
    None,
    /// Ball Test 1.
    Bt1,
    /// Ball Test 2.
    Bt2,
    /// The Intersection Test.
    It,
}

/// `--start` of `path` (linear paths).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StartArg {
    /// Secant or scaled, whichever starts lower on the dual objective.
    Auto,
    /// The previous solution scaled to the new C.
    Scaled,
    /// The secant through the last two solutions.
    Secant,
    /// From zero at every C.
    Cold,
}
