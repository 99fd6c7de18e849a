//! `marginkit predict`: LIBSVM's svm-predict (and LIBLINEAR's predict for linear models).

use std::io::Write;
use std::path::Path;

use marginkit::data::write_output;
use marginkit::svm::model_io::{fmt_f64, fmt_label, load_model_with_status};
use marginkit::{Features, KernelSpec};
use serde_json::json;

use crate::args::PredictArgs;
use crate::input::{io_context, read_data};
use crate::train::{evaluate, init_threads};
use crate::{CliError, CliResult};

/// C's `%g` (6 significant digits, trailing zeros removed), as LIBSVM prints figures.
pub fn fmt_g(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let sci = format!("{v:.5e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mant), exp.abs())
    } else {
        trim(&format!("{:.*}", (5 - exp).max(0) as usize, v))
    }
}

/// True when the file starts like a LIBLINEAR model.
pub fn is_linear_model(path: &std::path::Path) -> CliResult<bool> {
    use std::io::Read;
    let mut head = [0u8; 11];
    let mut f =
        std::fs::File::open(path).map_err(|e| CliError(format!("{}: {e}", path.display())))?;
    let n = f
        .read(&mut head)
        .map_err(|e| CliError(format!("{}: {e}", path.display())))?;
    Ok(&head[..n] == b"solver_type")
}

pub fn run(a: PredictArgs) -> CliResult {
    init_threads(a.threads)?;
    if a.json && is_stdout(&a.output_file) {
        return Err(CliError(
            "--json prints its object on stdout: give an OUTPUT file other than `-`".into(),
        ));
    }
    if !is_stdout(&a.output_file) {
        crate::train::refuse_overwriting_input(
            &a.output_file,
            &[
                (a.test_file.as_path(), "test data file"),
                (a.model_file.as_path(), "model file"),
            ],
        )?;
    }
    if is_linear_model(&a.model_file)? {
        return crate::train_linear::predict(a);
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
    let to_stdout = is_stdout(&a.output_file);
    let regression = model.svm_type.is_regression();
    if a.probability == 0 && model.has_probability() && model.svm_type.is_classifier() {
        crate::train::say(
            a.json || to_stdout,
            a.quiet,
            "Model supports probability estimates, but disabled in prediction.",
        );
    }
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
            crate::train::say(a.json || to_stdout, a.quiet, &format!("Prob. model for test data: target value = predicted value + z,\nz: Laplace distribution e^(-|z|/sigma)/(2sigma),sigma={}", fmt_g(sigma)));
        }
    }
    report_metrics(&pred, &data.y, regression, a.quiet, a.json, to_stdout);
    Ok(())
}

/// True for the output name `-` (standard output).
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Writes the predictions to `path` atomically, or to standard output for `-`; errors name the
/// file.
pub fn write_predictions<F>(path: &Path, write: F) -> CliResult
where
    F: FnOnce(&mut dyn Write) -> std::io::Result<()>,
{
    let result = if is_stdout(path) {
        let stdout = std::io::stdout();
        let mut w = std::io::BufWriter::new(stdout.lock());
        write(&mut w).and_then(|()| w.flush())
    } else {
        write_output(path, |w| write(w))
    };
    result.map_err(|e| CliError(format!("{}: {e}", path.display())))
}

/// True when some row has a non-zero column 0: the `0:ID` entry of precomputed-kernel rows
/// (LIBSVM files without it have no column 0 at all).
fn has_serial_column(x: &Features) -> bool {
    (0..x.n_rows()).any(|i| x.row(i).get(0) != 0.0)
}

/// Prints LIBSVM's accuracy or MSE lines (stderr with --json or when the predictions go to
/// stdout) and the JSON object.
pub fn report_metrics(
    pred: &[f64],
    truth: &[f64],
    regression: bool,
    quiet: bool,
    as_json: bool,
    to_stdout: bool,
) {
    let m = evaluate(pred, truth, regression);
    let text = if regression {
        format!(
            "Mean squared error = {} (regression)\nSquared correlation coefficient = {} (regression)",
            fmt_g(m["mse"].as_f64().unwrap_or(f64::NAN)),
            fmt_g(m["r2"].as_f64().unwrap_or(f64::NAN))
        )
    } else {
        format!(
            "Accuracy = {}% ({}/{}) (classification)",
            fmt_g(m["accuracy"].as_f64().unwrap_or(f64::NAN)),
            m["correct"],
            m["total"]
        )
    };
    crate::train::say(as_json || to_stdout, quiet, &text);
    if as_json {
        let mut out = json!({ "n_samples": truth.len() });
        if let (serde_json::Value::Object(o), serde_json::Value::Object(mm)) = (&mut out, m) {
            o.extend(mm);
        }
        println!("{out}");
    }
}

#[cfg(test)]
mod tests {
    use super::fmt_g;

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
