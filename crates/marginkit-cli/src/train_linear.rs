//! `marginkit train --linear` and prediction with linear models: LIBLINEAR's train/predict.

use std::time::{Duration, Instant};

use marginkit::data::write_atomically;
use marginkit::solver::{Shrinking, Status};
use marginkit::svm::linear::{
    cross_validation, LinearModel, LinearParams, LinearSolver, LinearValidParams,
};
use marginkit::svm::model_io::{fmt_f64, fmt_label};
use serde_json::{json, Value};

use crate::args::{PredictArgs, TrainArgs};
use crate::input::{io_context, read_data};
use crate::predict::report_metrics;
use crate::train::{default_model_path, evaluate};
use crate::{CliError, CliResult};

fn linear_params(a: &TrainArgs) -> CliResult<(LinearValidParams, LinearSolver)> {
    let m = &a.model;
    let id = m.svm_type.unwrap_or(1);
    let solver = LinearSolver::from_id(u32::from(id)).ok_or_else(|| {
        CliError(format!(
            "unknown linear solver -s {id} (supported: 1 L2-loss dual SVC, 3 L1-loss dual SVC, 12 L2-loss dual SVR, 13 L1-loss dual SVR)"
        ))
    })?;
    let mut p = LinearParams::new(solver)
        .c(m.cost)
        .p(m.epsilon)
        .seed(m.seed)
        .shrinking(if m.shrinking == 1 {
            Shrinking::On
        } else {
            Shrinking::Off
        });
    if let Some(e) = m.eps {
        p = p.eps(e);
    }
    if m.bias >= 0.0 {
        p = p.bias(m.bias);
    }
    for w in &m.class_weights {
        let (l, v) = w
            .rsplit_once(':')
            .ok_or_else(|| CliError(format!("class weight '{w}': expected LABEL:WEIGHT")))?;
        let l: f64 = l
            .parse()
            .map_err(|_| CliError(format!("class weight '{w}': bad label")))?;
        let v: f64 = v
            .parse()
            .map_err(|_| CliError(format!("class weight '{w}': bad weight")))?;
        p = p.class_weight(l, v);
    }
    if let Some(n) = m.max_iter {
        p = p.max_passes(n);
    }
    if let Some(t) = m.time_limit {
        if !(t.is_finite() && t > 0.0) {
            return Err(CliError(format!(
                "--time-limit must be > 0 seconds, got {t}"
            )));
        }
        p = p.time_limit(Duration::from_secs_f64(t));
    }
    Ok((p.check()?, solver))
}

pub fn run(a: TrainArgs) -> CliResult {
    let (params, solver) = linear_params(&a)?;
    let data = read_data(&a.train_file, &a.input, false)?;
    let regression = solver.is_regression();
    let say = |text: &str| {
        if a.quiet {
        } else if a.json {
            eprintln!("{text}");
        } else {
            println!("{text}");
        }
    };
    if let Some(k) = a.folds {
        if k < 2 {
            return Err(CliError(format!(
                "n-fold cross validation: n must be >= 2, got {k}"
            )));
        }
        let t0 = Instant::now();
        let pred = cross_validation(&params, &data, k, a.model.seed)?;
        let secs = t0.elapsed().as_secs_f64();
        let m = evaluate(&pred, &data.y, regression);
        if regression {
            say(&format!(
                "Cross Validation Mean squared error = {}\nCross Validation Squared correlation coefficient = {}",
                m["mse"], m["r2"]
            ));
        } else {
            say(&format!("Cross Validation Accuracy = {}%", m["accuracy"]));
        }
        if a.json {
            let mut out = json!({ "cv_folds": k, "cv_seconds": secs });
            if let (Value::Object(o), Value::Object(mm)) = (&mut out, m) {
                o.extend(mm);
            }
            println!("{out}");
        }
        return Ok(());
    }
    let t0 = Instant::now();
    let fit = params.fit(&data)?;
    let secs = t0.elapsed().as_secs_f64();
    for s in &fit.report.subproblems {
        let who = s
            .positive_label
            .map(|l| format!("class {} vs rest: ", fmt_label(l)))
            .unwrap_or_default();
        say(&format!(
            "{who}optimization finished, #iter = {} ({})\nObjective value = {}, primal = {}, duality gap = {:.3e}",
            s.iterations,
            s.status.as_str(),
            -s.dual_objective,
            s.primal_objective,
            s.gap
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
    write_atomically(&path, |w| fit.model.write(&mut *w))
        .map_err(|e| CliError(format!("{}: {e}", path.display())))?;
    if a.json {
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
                "max_violation": one(&|s| json!(s.max_violation)),
                "iterations": fit.report.subproblems.iter().map(|s| s.iterations).sum::<u64>(),
                "status": status.as_str(),
                "rho": 0.0,
                "n_sv": Value::Null,
                "model_file": path.display().to_string(),
            })
        );
    }
    Ok(())
}

pub fn predict(a: PredictArgs) -> CliResult {
    let f = std::fs::File::open(&a.model_file)
        .map_err(|e| CliError(format!("{}: {e}", a.model_file.display())))?;
    let model =
        LinearModel::read(std::io::BufReader::new(f)).map_err(|e| io_context(&a.model_file, e))?;
    if a.probability == 1 {
        return Err(CliError(
            "probability outputs are only available for logistic regression models; marginkit's linear models are SVMs".into(),
        ));
    }
    let data = read_data(&a.test_file, &a.input, false)?;
    if data.n_features() > model.n_features() {
        let beyond = (0..data.len()).any(|i| {
            data.x
                .row(i)
                .iter()
                .any(|(k, v)| k >= model.n_features() && v != 0.0)
        });
        if beyond {
            return Err(CliError(format!(
                "{}: the data has {} features but the model was trained on {}",
                a.test_file.display(),
                data.n_features(),
                model.n_features()
            )));
        }
    }
    let pred = model.predict(&data.x);
    let regression = model.solver().is_regression();
    write_atomically(&a.output_file, |w| {
        use std::io::Write;
        for &v in &pred {
            writeln!(w, "{}", if regression { fmt_f64(v) } else { fmt_label(v) })?;
        }
        Ok(())
    })
    .map_err(|e| CliError(format!("{}: {e}", a.output_file.display())))?;
    report_metrics(&pred, &data.y, regression, a.quiet, a.json);
    Ok(())
}
