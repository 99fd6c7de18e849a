//! `marginkit train --linear` and prediction with linear models: LIBLINEAR's train/predict.

use std::time::Instant;

use marginkit::data::write_output;
use marginkit::fit::Control;
use marginkit::solver::{Shrinking, Status};
use marginkit::svm::linear::{cross_validation, LinearParams, LinearSolver, LinearValidParams};
use marginkit::svm::model_io::fmt_label;
use serde_json::{json, Value};

use super::TrainArgs;
use crate::common::input::read_data;
use crate::common::model::parse_class_weights;
use crate::common::output::default_model_path;
use crate::common::{CliError, CliResult, Exit, Outcome};

fn linear_params(a: &TrainArgs) -> CliResult<(LinearValidParams, LinearSolver)> {
    let m = &a.model;
    let id = m.svm_code()?.unwrap_or(1);
    let solver = LinearSolver::from_id(u32::from(id)).ok_or_else(|| {
        CliError(format!(
            "unknown linear solver -s {id} (supported: 1 L2-loss dual SVC, 2 L2-loss primal SVC (Newton, all threads), 3 L1-loss dual SVC, 11 L2-loss primal SVR (Newton, all threads), 12 L2-loss dual SVR, 13 L1-loss dual SVR)"
        ))
    })?;
    let mut p = LinearParams::new(solver)
        .seed(m.seed)
        .shrinking(if m.shrinking == 1 {
            Shrinking::On
        } else {
            Shrinking::Off
        });
    if let Some(c) = m.cost {
        p = p.c(c);
    }
    if let Some(e) = m.epsilon {
        p = p.p(e);
    }
    if let Some(e) = m.eps {
        p = p.eps(e);
    }
    // LIBLINEAR's -B: a negative value means no bias; anything else (NaN too) is a bias
    // feature for the library to check.
    if m.bias >= 0.0 || m.bias.is_nan() {
        p = p.bias(m.bias);
    }
    for (l, v) in parse_class_weights(&m.class_weights)? {
        p = p.class_weight(l, v);
    }
    if let Some(n) = m.max_iter {
        p = p.max_passes(n);
    }
    if let Some(t) = m.time_limit {
        p = p.time_limit(crate::common::run::seconds_flag("time-limit", t)?);
    }
    Ok((p.check()?, solver))
}

pub fn run(a: TrainArgs) -> Exit {
    let (params, solver) = linear_params(&a)?;
    if a.ckpt.resume.is_some() {
        return Err(CliError(
            "--resume continues kernel fits; a linear fit stopped early is simply re-run (it has no state file)".into(),
        ));
    }
    let mut data = read_data(&a.train_file, &a.input, false)?;
    if let Some(w) = &a.weights {
        data = crate::common::input::with_weight_file(data, w)?;
    }
    let regression = solver.is_regression();
    let say = |text: &str| crate::common::report::say(a.json, a.quiet, text);
    if let Some(k) = a.folds {
        return super::cross_validate(&a, k, &data, regression, json!({}), |ctl| {
            cross_validation(&params, &data, k, ctl)
        });
    }
    let t0 = Instant::now();
    let mut cancel = crate::common::interrupt::install();
    let fit = marginkit::svm::linear::fit(&params, &data, &mut Control::new(&mut cancel))?;
    let secs = t0.elapsed().as_secs_f64();
    let one_vs_rest = fit.report.subproblems.len() > 1;
    for s in &fit.report.subproblems {
        let who = match (one_vs_rest, s.positive_label) {
            (true, Some(l)) => format!("class {} vs rest: ", fmt_label(l)),
            _ => String::new(),
        };
        // LIBLINEAR prints the dual objective in minimisation form (negative).
        say(&format!(
            "{who}optimization finished, #iter = {} ({})\nObjective value = {}, primal = {}, relative duality gap = {:.3e}",
            s.iterations,
            s.status.as_str(),
            s.dual_objective,
            s.primal_objective,
            s.relative_gap()
        ));
    }
    for w in &fit.report.warnings {
        eprintln!("marginkit: warning: {w}");
    }
    let status = fit
        .report
        .subproblems
        .iter()
        .map(|s| s.status)
        .find(|s| *s != Status::Converged)
        .unwrap_or(Status::Converged);
    let path = a
        .model_file
        .clone()
        .unwrap_or_else(|| default_model_path(&a.train_file));
    say(&format!(
        "status = {}, max violation = {:.3e}, relative duality gap = {:.3e}",
        status.as_str(),
        fit.report
            .subproblems
            .iter()
            .map(|s| s.max_violation)
            .fold(0.0, f64::max),
        fit.report
            .subproblems
            .iter()
            .map(|s| s.relative_gap())
            .fold(0.0, f64::max)
    ));
    if status == Status::MaxIterations {
        // LIBLINEAR's words, so that scripts watching for them keep working.
        eprintln!("WARNING: reaching max number of iterations");
    }
    if status != Status::Converged {
        eprintln!(
            "marginkit: warning: the solver stopped before convergence ({}); the model is written as usual",
            status.as_str()
        );
    }
    write_output(&path, |w| fit.model.write(&mut *w))
        .map_err(|e| CliError(format!("{}: {e}", path.display())))?;
    if a.json {
        // Decision function k is w_k'x - rho_k, as in LIBSVM's files.
        let rhos: Vec<f64> = (0..fit.model.n_weight_vectors())
            .map(|k| -fit.model.intercept(k))
            .collect();
        let rho = match rhos.as_slice() {
            [r] => json!(r),
            many => json!(many),
        };
        let one = |f: &dyn Fn(&marginkit::svm::linear::SubproblemReport) -> Value| -> Value {
            match fit.report.subproblems.as_slice() {
                [s] => f(s),
                many => Value::Array(many.iter().map(f).collect()),
            }
        };
        println!(
            "{}",
            json!({
                "train_seconds": secs,
                "solver": solver.name(),
                "n_samples": data.len(),
                "n_features": data.n_features(),
                "objective": one(&|s| json!(s.dual_objective)),
                "primal_objective": one(&|s| json!(s.primal_objective)),
                "duality_gap": one(&|s| json!(s.gap)),
                "relative_duality_gap": one(&|s| json!(s.relative_gap())),
                "max_violation": one(&|s| json!(s.max_violation)),
                "iterations": fit.report.subproblems.iter().map(|s| s.iterations).sum::<u64>(),
                "status": status.as_str(),
                "converged": status == Status::Converged,
                "rho": rho,
                "n_sv": Value::Null,
                "model_file": path.display().to_string(),
            })
        );
    }
    if status == Status::Interrupted {
        return Ok(Outcome::Interrupted);
    }
    Ok(Outcome::Done)
}
