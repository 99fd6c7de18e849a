//! `marginkit train -s odm`: the optimal margin distribution machine (binary, no bias).
//!
//! The model file is a LIBSVM C-SVC kernel expansion (rho 0) that `marginkit predict` and LIBSVM
//! load; lambda, nu and theta are printed in the summary and in `--json`. `-c` gives lambda when
//! `--lambda` is not given, as C plays lambda's role.

use std::io::Write as _;
use std::time::Instant;

use marginkit::fit::{Control, Report};
use marginkit::odm::{self};
use marginkit::plot::{Axis, LineChart, Scale};
use marginkit::solver::Status;
use marginkit::svm::model_io::save_model;
use marginkit::svm::{KernelKind, SvmModel};
use marginkit::Dataset;
use serde_json::json;

use super::TrainArgs;
use crate::common::input::read_data;
use crate::common::model::odm_params;
use crate::common::output::default_model_path;
use crate::common::progress::Progress;
use crate::common::report::say;
use crate::common::{CliError, Exit, Outcome};

/// Refuses the `train` flags that `-s odm` has no use for, instead of ignoring them.
fn refuse_other_flags(a: &TrainArgs) -> Result<(), CliError> {
    let m = &a.model;
    let mut bad = Vec::new();
    if m.linear {
        bad.push("--linear");
    }
    if m.probability == 1 {
        bad.push("-b 1");
    }
    if !m.class_weights.is_empty() {
        bad.push("-w");
    }
    if a.weights.is_some() {
        bad.push("-W");
    }
    if a.ckpt.resume.is_some() {
        bad.push("--resume");
    }
    if a.ckpt.state_file.is_some() {
        bad.push("--state-file");
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(CliError(format!("-s odm does not take {}", bad.join(", "))))
    }
}

/// `marginkit train -s odm`.
pub fn run(a: &TrainArgs) -> Exit {
    refuse_other_flags(a)?;
    let m = &a.model;
    let kernel = m.kernel()?;
    let params = odm_params(m, &a.odm, a.odm.lambda.or(m.cost), kernel, a.qp.engine())?;
    let (lambda, nu, theta) = (params.lambda(), params.nu(), params.theta());
    let data = read_data(
        &a.train_file,
        &a.input,
        kernel.kind == KernelKind::Precomputed,
    )?;
    if let Some(k) = a.folds {
        let head = json!({ "svm_type": "odm", "lambda": lambda, "nu": nu, "theta": theta });
        return super::cross_validate(a, k, &data, false, head, |ctl| {
            odm::cross_validation(&params, &data, k, ctl)
        });
    }
    let mut progress = Progress::new(a.quiet, "train -s odm");
    let t0 = Instant::now();
    let fit = odm::fit(&params, &data, &mut Control::new(&mut progress))?;
    let (model, report) = (fit.model, fit.report);
    let seconds = t0.elapsed().as_secs_f64();
    progress.finish();
    say(
        a.json,
        a.quiet,
        &format!(
            "ODM (lambda = {}, nu = {}, theta = {}): optimization finished, #iter = {} ({})\n\
             primal = {}, dual = {}, gap = {:.3e}\nTotal nSV = {}",
            lambda,
            nu,
            theta,
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
    if let Some(plot) = &a.plot {
        let title = crate::common::report::data_name(&a.train_file, "train -s odm");
        let svg = margin_plot(&model, &data, theta, &title).to_svg();
        marginkit::data::write_output(plot, |w| w.write_all(svg.as_bytes()))
            .map_err(|e| CliError(format!("{}: {e}", plot.display())))?;
    }
    if a.json {
        let out = json!({
            "train_seconds": seconds,
            "svm_type": "odm",
            "model_format": "c_svc",
            "lambda": lambda,
            "nu": nu,
            "theta": theta,
            "kernel": model.kernel.libsvm_name(),
            "engine": format!("{:?}", report.engine).to_lowercase(),
            "solver": params.qp_engine().as_str(),
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
    Ok(Outcome::Done)
}

/// The cumulative distribution of the training margins `y_i f(x_i)` (labels[0] is the positive
/// class, as in the model's decision values), with the edges of the zone [1 - theta, 1 + theta]
/// in which the ODM's loss is zero.
fn margin_plot(model: &SvmModel, data: &Dataset, theta: f64, title: &str) -> LineChart {
    let dec = model.decision_values(&data.x);
    let mut margins: Vec<f64> = dec
        .iter()
        .zip(&data.y)
        .map(|(d, &y)| if y == model.labels[0] { d[0] } else { -d[0] })
        .collect();
    margins.sort_by(f64::total_cmp);
    let n = margins.len() as f64;
    let cdf = margins
        .iter()
        .enumerate()
        .map(|(i, &m)| (m, (i + 1) as f64 / n))
        .collect();
    let edge = |x: f64| vec![(x, 0.0), (x, 1.0)];
    LineChart::new(
        &format!("{title}: ODM training margins"),
        Axis {
            label: "margin y f(x)".into(),
            scale: Scale::Linear,
        },
        Axis {
            label: "fraction of rows at or below".into(),
            scale: Scale::Linear,
        },
    )
    .add("margins", "#1f77b4", cdf)
    .add("1 - theta", "#d62728", edge(1.0 - theta))
    .add("1 + theta", "#2ca02c", edge(1.0 + theta))
}
