//! Reporting: human lines (stdout, or stderr beside --json), LIBSVM's number format, metrics lines.

use std::path::Path;

use serde_json::{json, Value};

/// The data set's name in plot titles: the input file's stem (`heart_scale` for
/// `data/heart_scale.svm`), or `fallback` when the path has none (standard input).
pub fn data_name(path: &Path, fallback: &str) -> String {
    path.file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| n != "-")
        .unwrap_or_else(|| fallback.to_string())
}

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
            fmt_g(m["squared_correlation"].as_f64().unwrap_or(f64::NAN))
        )
    } else {
        format!(
            "Accuracy = {}% ({}/{}) (classification)",
            fmt_g(m["accuracy"].as_f64().unwrap_or(f64::NAN)),
            m["correct"],
            m["total"]
        )
    };
    crate::common::report::say(as_json || to_stdout, quiet, &text);
    if as_json {
        let mut out = json!({ "n_samples": truth.len() });
        if let (serde_json::Value::Object(o), serde_json::Value::Object(mm)) = (&mut out, m) {
            o.extend(mm);
        }
        println!("{out}");
    }
}

/// Prints a human line: stdout, or stderr when stdout carries the JSON object; nothing if quiet.
pub fn say(json: bool, quiet: bool, text: &str) {
    if quiet {
        return;
    }
    if json {
        eprintln!("{text}");
    } else {
        println!("{text}");
    }
}

/// Prints LIBSVM's cross-validation lines (stderr with `--json`, never silenced: they are the
/// result) and, with `--json`, one object made of `head` and the metrics.
pub fn report_cv(pred: &[f64], truth: &[f64], regression: bool, head: Value, as_json: bool) {
    let m = evaluate(pred, truth, regression);
    let num = |k: &str| fmt_g(m[k].as_f64().unwrap_or(f64::NAN));
    if regression {
        say(
            as_json,
            false,
            &format!(
                "Cross Validation Mean squared error = {}\nCross Validation Squared correlation coefficient = {}",
                num("mse"),
                num("squared_correlation")
            ),
        );
    } else {
        say(
            as_json,
            false,
            &format!("Cross Validation Accuracy = {}%", num("accuracy")),
        );
    }
    if as_json {
        let mut out = head;
        if let (Value::Object(o), Value::Object(mm)) = (&mut out, m) {
            o.extend(mm);
        }
        println!("{out}");
    }
}

/// The metrics of predictions as one JSON object: `accuracy`, `correct`, `total` for
/// classification; `mse`, `squared_correlation` (LIBSVM's "squared correlation coefficient") and
/// `r2` (the coefficient of determination) for regression. Computed by [`marginkit::metrics`].
pub fn evaluate(pred: &[f64], truth: &[f64], regression: bool) -> Value {
    if regression {
        let m = marginkit::metrics::regression(pred, truth);
        json!({ "mse": m.mse, "squared_correlation": m.squared_correlation, "r2": m.r2 })
    } else {
        let m = marginkit::metrics::classification(pred, truth);
        json!({ "accuracy": m.accuracy, "correct": m.correct, "total": m.total })
    }
}

/// The command-line spelling of a `ValueEnum` choice, for reports.
pub fn choice<T: clap::ValueEnum>(v: &T) -> String {
    v.to_possible_value()
        .map_or_else(String::new, |p| p.get_name().to_string())
}
