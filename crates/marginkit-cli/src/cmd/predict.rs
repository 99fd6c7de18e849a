//! `marginkit predict`: LIBSVM's svm-predict (and LIBLINEAR's predict for linear models).
use crate::common::input::InputArgs;
use crate::common::output::{is_stdout, write_predictions};
use crate::common::report::{evaluate, fmt_g, report_metrics};
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use serde_json::{json, Value};

use marginkit::solver::Status;
use marginkit::svm::linear::LinearModel;
use marginkit::svm::model_io::{fmt_f64, fmt_label, load_model_with_status};
use marginkit::{Features, KernelSpec};

use marginkit::aid::lad::LadModel;
use marginkit::model_file::{identify, FileKind};

use crate::common::input::io_context;
use crate::common::input::read_data;
use crate::common::run::init_threads;
use crate::common::{CliError, CliResult, Exit, Outcome};

/// The kind of the model file, from its first 4 KB; anything but a model is an error that
/// names what the file is.
fn model_kind(path: &std::path::Path) -> CliResult<FileKind> {
    use std::io::Read;
    let mut head = Vec::with_capacity(4096);
    std::fs::File::open(path)
        .and_then(|f| f.take(4096).read_to_end(&mut head))
        .map_err(|e| CliError(format!("{}: {e}", path.display())))?;
    let kind = identify(&head);
    if kind.is_model() {
        Ok(kind)
    } else {
        Err(CliError(format!(
            "{}: this is {}, not a model file (predict reads LIBSVM, LIBLINEAR and LAD models)",
            path.display(),
            kind.describe()
        )))
    }
}

pub fn run(a: PredictArgs) -> Exit {
    init_threads(a.threads)?;
    if a.json && is_stdout(&a.output_file) {
        return Err(CliError(
            "--json prints its object on stdout: give an OUTPUT file other than `-`".into(),
        ));
    }
    if !is_stdout(&a.output_file) {
        crate::common::output::refuse_overwriting_input(
            &a.output_file,
            &[
                (a.test_file.as_path(), "test data file"),
                (a.model_file.as_path(), "model file"),
            ],
        )?;
    }
    crate::common::output::check_outputs(&[(&a.output_file, "OUTPUT_FILE")])?;
    match model_kind(&a.model_file)? {
        FileKind::LiblinearModel => return predict_linear(a),
        FileKind::LadModel => return predict_lad(a),
        _ => {}
    }
    let (model, status) =
        load_model_with_status(&a.model_file).map_err(|e| io_context(&a.model_file, e))?;
    if status != marginkit::solver::Status::Converged {
        eprintln!(
            "marginkit: warning: {}: the model did not converge (status {})",
            a.model_file.display(),
            status.as_str()
        );
    }
    if a.probability == 1 && !model.has_probability() {
        return Err(CliError(format!(
            "{}: the model has no probability information (train with -b 1)",
            a.model_file.display()
        )));
    }
    let data = read_data(
        &a.test_file,
        &a.input,
        model.kernel == KernelSpec::Precomputed,
    )?;
    if model.kernel == KernelSpec::Precomputed && !has_serial_column(&data.x) {
        return Err(CliError(format!(
            "{}: the model uses a precomputed kernel, but no row has a 0:ID entry; each test row must read `LABEL 0:ID 1:K(x,x1) ... L:K(x,xL)` with a non-zero ID",
            a.test_file.display()
        )));
    }
    if model.extra_features(&data.x) > 0 {
        warn_extra_features(
            &a,
            data.n_features(),
            model.n_features(),
            "zero in every support vector",
        );
    }
    let to_stdout = is_stdout(&a.output_file);
    let regression = model.svm_type.is_regression();
    if a.probability == 0 && model.has_probability() && model.svm_type.is_classifier() {
        crate::common::report::say(
            a.json || to_stdout,
            a.quiet,
            "Model supports probability estimates, but disabled in prediction.",
        );
    }
    let started = Instant::now();
    let (pred, probs) = if a.probability == 1 && model.svm_type.is_classifier() {
        let pp = model
            .predict_probability(&data.x)
            .map_err(|e| CliError(format!("{}: {e}", a.test_file.display())))?;
        let pred: Vec<f64> = pp.iter().map(|(l, _)| *l).collect();
        (pred, Some(pp))
    } else {
        let pred = model
            .predict(&data.x)
            .map_err(|e| CliError(format!("{}: {e}", a.test_file.display())))?;
        (pred, None)
    };
    let seconds = started.elapsed().as_secs_f64();
    write_predictions(&a.output_file, |w| {
        if let Some(pp) = &probs {
            let labels: Vec<String> = model.labels.iter().map(|&l| fmt_label(l)).collect();
            writeln!(w, "labels {}", labels.join(" "))?;
            for (l, p) in pp {
                let ps: Vec<String> = p.iter().map(|&v| fmt_g(v)).collect();
                writeln!(w, "{} {}", fmt_label(*l), ps.join(" "))?;
            }
        } else {
            for &v in &pred {
                let s = if regression { fmt_f64(v) } else { fmt_label(v) };
                writeln!(w, "{s}")?;
            }
        }
        Ok(())
    })?;

    if regression && a.probability == 1 {
        if let Some(sigma) = model.svr_sigma() {
            crate::common::report::say(a.json || to_stdout, a.quiet, &format!("Prob. model for test data: target value = predicted value + z,\nz: Laplace distribution e^(-|z|/sigma)/(2sigma),sigma={}", fmt_g(sigma)));
        }
    }
    report(&a, &pred, &data.y, regression, seconds);
    Ok(Outcome::Done)
}

/// LIBSVM's accuracy or MSE lines and, with `--json`, one object with the metrics and
/// `predict_seconds`: the time spent predicting (decision values and what follows from them:
/// votes, probabilities), reading the model and the data and writing the output excluded.
fn report(a: &PredictArgs, pred: &[f64], truth: &[f64], regression: bool, seconds: f64) {
    let to_stdout = is_stdout(&a.output_file);
    if !a.json {
        report_metrics(pred, truth, regression, a.quiet, false, to_stdout);
        return;
    }
    // Beside the JSON object on stdout, the human lines go to stderr.
    report_metrics(pred, truth, regression, a.quiet, false, true);
    println!("{}", json_report(pred, truth, regression, seconds));
}

/// The `--json` object of `predict`.
fn json_report(pred: &[f64], truth: &[f64], regression: bool, seconds: f64) -> Value {
    let mut out = json!({ "n_samples": truth.len(), "predict_seconds": seconds });
    if let (Value::Object(o), Value::Object(m)) = (&mut out, evaluate(pred, truth, regression)) {
        o.extend(m);
    }
    out
}

/// The one warning for test data wider than the model (LIBSVM and LIBLINEAR accept it too).
fn warn_extra_features(a: &PredictArgs, found: usize, expected: usize, treated: &str) {
    eprintln!(
        "marginkit: warning: {}: the data has {found} features, the model {expected}; features beyond {expected} are {treated}",
        a.test_file.display()
    );
}

/// True when some row has a non-zero column 0: the `0:ID` entry of precomputed-kernel rows
/// (LIBSVM files without it have no column 0 at all).
fn has_serial_column(x: &Features) -> bool {
    (0..x.n_rows()).any(|i| x.row(i).get(0) != 0.0)
}

#[cfg(test)]
mod tests {
    use super::{fmt_g, json_report};

    #[test]
    fn json_report_has_the_metrics_and_the_seconds() {
        let o = json_report(&[1.0, -1.0, 1.0], &[1.0, 1.0, 1.0], false, 0.25);
        assert_eq!(o["n_samples"], 3);
        assert_eq!(o["predict_seconds"], 0.25);
        assert_eq!(o["correct"], 2);
        let r = json_report(&[1.0, 2.0], &[1.0, 3.0], true, 0.5);
        assert_eq!(r["mse"], 0.5);
        assert_eq!(r["predict_seconds"], 0.5);
    }

    #[test]
    fn fmt_g_matches_c() {
        assert_eq!(fmt_g(85.18518518), "85.1852");
        assert_eq!(fmt_g(100.0), "100");
        assert_eq!(fmt_g(0.0001234567), "0.000123457");
        assert_eq!(fmt_g(1234567.0), "1.23457e+06");
        assert_eq!(fmt_g(1e-5), "1e-05");
        assert_eq!(fmt_g(999999.7), "1e+06");
    }
}

/// `marginkit predict`.
#[derive(Debug, Args)]
pub struct PredictArgs {
    /// Output probability estimates: 1 yes, 0 no (the model must be trained with -b 1).
    #[arg(short = 'b', default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub probability: u8,
    /// Quiet.
    #[arg(short = 'q')]
    pub quiet: bool,
    /// Print one JSON object with the results on stdout (the metrics, and `predict_seconds`:
    /// the time spent predicting, reading and writing excluded).
    #[arg(long)]
    pub json: bool,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    #[command(flatten)]
    pub input: InputArgs,
    /// Test data (LIBSVM format, `.gz` or `-` for stdin).
    #[arg(help_heading = "Arguments", display_order = 1)]
    pub test_file: PathBuf,
    /// Model file (LIBSVM or LIBLINEAR format).
    #[arg(help_heading = "Arguments", display_order = 2)]
    pub model_file: PathBuf,
    /// Where to write one prediction per line (`-`: standard output; the summary then goes to
    /// stderr).
    #[arg(help_heading = "Arguments", display_order = 3)]
    pub output_file: PathBuf,
}

/// `predict` with a LIBLINEAR model.
fn predict_linear(a: PredictArgs) -> Exit {
    let f = std::fs::File::open(&a.model_file)
        .map_err(|e| CliError(format!("{}: {e}", a.model_file.display())))?;
    let (model, status) = LinearModel::read_with_status(std::io::BufReader::new(f))
        .map_err(|e| io_context(&a.model_file, e))?;
    if status != Status::Converged {
        eprintln!(
            "marginkit: warning: {}: the model did not converge (status {})",
            a.model_file.display(),
            status.as_str()
        );
    }
    if a.probability == 1 {
        return Err(CliError(
            "probability outputs are only available for logistic regression models; marginkit's linear models are SVMs".into(),
        ));
    }
    let data = read_data(&a.test_file, &a.input, false)?;
    if model.extra_features(&data.x) > 0 {
        warn_extra_features(&a, data.n_features(), model.n_features(), "ignored");
    }
    let started = Instant::now();
    let pred = model.predict(&data.x);
    let seconds = started.elapsed().as_secs_f64();
    let regression = model.solver().is_regression();
    write_predictions(&a.output_file, |w| {
        for &v in &pred {
            writeln!(w, "{}", if regression { fmt_f64(v) } else { fmt_label(v) })?;
        }
        Ok(())
    })?;
    report(&a, &pred, &data.y, regression, seconds);
    Ok(Outcome::Done)
}

/// `predict` with a LAD regression model (`lad`, `aid lad`): one predicted value per line, and
/// the regression metrics.
fn predict_lad(a: PredictArgs) -> Exit {
    if a.probability == 1 {
        return Err(CliError(
            "a LAD model has no probability outputs (-b 1)".into(),
        ));
    }
    let text = std::fs::read_to_string(&a.model_file)
        .map_err(|e| CliError(format!("{}: {e}", a.model_file.display())))?;
    let model = LadModel::from_json(&text).map_err(|e| {
        CliError(format!(
            "{}:{}:{}: {}",
            a.model_file.display(),
            e.line,
            e.column,
            e.kind
        ))
    })?;
    let data = read_data(&a.test_file, &a.input, false)?;
    let started = Instant::now();
    let pred = model.predict(&data.x);
    let seconds = started.elapsed().as_secs_f64();
    write_predictions(&a.output_file, |w| {
        for &v in &pred {
            writeln!(w, "{}", fmt_f64(v))?;
        }
        Ok(())
    })?;
    report(&a, &pred, &data.y, true, seconds);
    Ok(Outcome::Done)
}
