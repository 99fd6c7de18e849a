//! `marginkit grid`: (C, gamma) grid search by cross-validation, like LIBSVM's grid.py.
use crate::common::input::InputArgs;
use crate::common::model::{odm_params, ModelArgs, OdmArgs, SvmTypeArg};
use std::path::PathBuf;

use clap::{ArgAction, Args};

use marginkit::plot::HeatMap;
use marginkit::svm::grid::{grid_search, GridPoint};
use marginkit::svm::{KernelKind, KernelParams, SvmSolver};
use serde_json::json;

use crate::common::input::read_data;
use crate::common::model::svm_params;
use crate::common::progress::Progress;
use crate::common::report::fmt_g;
use crate::common::run::init_threads;
use crate::common::{CliError, CliResult, Exit, Outcome};

/// Parses grid.py's `begin,end,step` into the exponents it covers (inclusive).
pub fn parse_range(flag: &str, s: &str) -> CliResult<Vec<f64>> {
    let parts: Vec<f64> = s
        .split(',')
        .map(|t| t.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|_| CliError(format!("{flag} '{s}': expected begin,end,step")))?;
    let [begin, end, step] = parts[..] else {
        return Err(CliError(format!("{flag} '{s}': expected begin,end,step")));
    };
    if !(begin.is_finite() && end.is_finite() && step.is_finite())
        || step == 0.0
        || (end - begin) * step < 0.0
    {
        return Err(CliError(format!(
            "{flag} '{s}': step must be non-zero and go from begin towards end"
        )));
    }
    // Counted in f64 first: a huge or infinite ratio (e.g. -1e308,1e308,1e-300) is refused,
    // not saturated by the cast and wrapped by the `+ 1`.
    let steps = ((end - begin) / step + 1e-9).floor();
    if steps.is_nan() || steps >= 10_000.0 {
        return Err(CliError(format!("{flag} '{s}': more than 10000 values")));
    }
    let n = steps as usize + 1;
    Ok((0..n).map(|k| begin + k as f64 * step).collect())
}

pub fn run(a: GridArgs) -> Exit {
    init_threads(a.model.threads)?;
    if a.model.linear {
        return Err(CliError(
            "grid searches kernel models; for linear models use train --linear -v".into(),
        ));
    }
    if a.model.cost.is_some() {
        return Err(CliError(
            "grid searches C: give its range with --log2c begin,end,step instead of -c".into(),
        ));
    }
    if a.model.bias != -1.0 {
        return Err(CliError(
            "-B is the bias of linear models, which grid does not search".into(),
        ));
    }
    if a.folds < 2 {
        return Err(CliError(format!("-v must be >= 2, got {}", a.folds)));
    }
    // `-s odm` searches (lambda, gamma) with the ODM's own cross-validation.
    let odm = a.model.svm_type == Some(SvmTypeArg::Odm);
    let params = if odm {
        None
    } else {
        Some(svm_params(&a.model)?)
    };
    if !odm && !a.odm.given().is_empty() {
        return Err(CliError(format!(
            "{} apply to -s odm only",
            a.odm.given().join(", ")
        )));
    }
    if let Some(p) = &a.plot {
        crate::common::output::check_outputs(&[(p, "--plot")])?;
    }
    let kernel = a.model.kernel()?;
    let log2c = parse_range("--log2c", &a.log2c)?;
    let uses_gamma = !matches!(kernel.kind, KernelKind::Linear | KernelKind::Precomputed);
    let log2g = if uses_gamma {
        parse_range("--log2g", &a.log2g)?
    } else {
        vec![0.0]
    };
    let data = read_data(
        &a.train_file,
        &a.input,
        kernel.kind == KernelKind::Precomputed,
    )?;
    let regression = params
        .as_ref()
        .is_some_and(|p| p.svm_type().is_regression());
    let cs: Vec<f64> = log2c.iter().map(|e| e.exp2()).collect();
    let gs: Vec<f64> = log2g.iter().map(|e| e.exp2()).collect();
    let mut best: Option<GridPoint> = None;
    let quiet = a.quiet || a.json;
    let metric = if regression { "mse" } else { "rate" };
    // grid.py's lines; without a gamma (linear, precomputed) only C is shown. C, gamma and their
    // exponents are printed exactly (shortest round-trip), so a printed point reproduces.
    let point = |p: &GridPoint, log2: bool| -> String {
        let (c, g) = if log2 {
            (format!("{}", p.c.log2()), format!("{}", p.gamma.log2()))
        } else {
            (format!("{}", p.c), format!("{}", p.gamma))
        };
        // With -s odm the first parameter is lambda.
        let (cn, gn) = match (log2, odm) {
            (true, false) => ("log2c", "log2g"),
            (true, true) => ("log2lambda", "log2g"),
            (false, false) => ("c", "g"),
            (false, true) => ("lambda", "g"),
        };
        if uses_gamma {
            format!("{cn}={c}, {gn}={g}")
        } else {
            format!("{cn}={c}")
        }
    };
    // With --json the table is off; the points go to the progress lines on stderr.
    let mut progress = Progress::with_len(a.quiet || !a.json, "grid", Some(cs.len() * gs.len()));
    let mut on_point = |p: &GridPoint| {
        if best.is_none_or(|b| p.better_than(&b, regression)) {
            best = Some(*p);
        }
        progress.inc(&format!(
            "{} {} gamma {} {metric}={}",
            if odm { "lambda" } else { "C" },
            p.c,
            p.gamma,
            fmt_g(p.score)
        ));
        if !quiet {
            let b = best.expect("invariant: set above");
            println!(
                "{} {metric}={} (best {}, {metric}={})",
                point(p, true),
                fmt_g(p.score),
                point(&b, false),
                fmt_g(b.score)
            );
        }
    };
    let cancel = crate::common::interrupt::install();
    let points = match &params {
        Some(p) => grid_search(p, &data, &cs, &gs, a.folds, &cancel, &mut on_point)?,
        None => odm_grid(&a, kernel, &data, &cs, &gs, &cancel, &mut on_point)?,
    };
    let interrupted = cancel.is_cancelled();
    if interrupted {
        eprintln!(
            "marginkit: interrupted after {} of {} grid points",
            points.len(),
            cs.len() * gs.len()
        );
    }
    let Some(b) = best else {
        return if interrupted {
            eprintln!("marginkit: no grid point finished: no best point to report");
            Ok(Outcome::Interrupted)
        } else {
            Err(CliError("no grid point was evaluated".into()))
        };
    };
    let stopped = points
        .iter()
        .filter(|p| p.status != marginkit::solver::Status::Converged)
        .count();
    if stopped > 0 {
        eprintln!(
            "marginkit: warning: {stopped} of {} grid points had a fold whose solver stopped before convergence (--max-iter / --time-limit)",
            points.len()
        );
    }
    if let Some(path) = &a.plot {
        let name = crate::common::report::data_name(&a.train_file, "grid");
        let what = if odm { "lambda" } else { "C" };
        let metric = if regression {
            "cross-validation MSE"
        } else {
            "cross-validation accuracy %"
        };
        let map = heat_map(&points, &log2c, &log2g, &b);
        let svg = HeatMap {
            title: format!("{name}: {}-fold {metric}", a.folds),
            x_label: format!("log2 {what}"),
            y_label: if uses_gamma { "log2 gamma" } else { "" }.into(),
            value_label: metric.into(),
            ..map
        }
        .to_svg();
        marginkit::data::write_output(path, |w| std::io::Write::write_all(w, svg.as_bytes()))
            .map_err(|e| CliError(format!("{}: {e}", path.display())))?;
    }
    let gamma = |p: &GridPoint| {
        if uses_gamma {
            json!(p.gamma)
        } else {
            json!(null)
        }
    };
    if a.json {
        let pts: Vec<_> = points
            .iter()
            .map(|p| {
                json!({ "c": p.c, "gamma": gamma(p), "score": p.score,
                        "status": p.status.as_str() })
            })
            .collect();
        println!(
            "{}",
            json!({ "metric": if regression { "mse" } else { "accuracy" }, "folds": a.folds,
                    "points": pts, "not_converged_points": stopped, "interrupted": interrupted,
                    "best": { "c": b.c, "gamma": gamma(&b), "score": b.score,
                              "status": b.status.as_str() } })
        );
    } else if uses_gamma {
        println!("{} {} {}", b.c, b.gamma, fmt_g(b.score));
    } else {
        println!("{} {}", b.c, fmt_g(b.score));
    }
    Ok(if interrupted {
        Outcome::Interrupted
    } else {
        Outcome::Done
    })
}

/// The grid's scores as a heat map over (log2 C, log2 gamma), the best point outlined; points
/// not evaluated (an interrupted search) are left blank.
fn heat_map(points: &[GridPoint], log2c: &[f64], log2g: &[f64], best: &GridPoint) -> HeatMap {
    let mut ys = log2g.to_vec();
    ys.sort_by(f64::total_cmp);
    let mut values = vec![vec![f64::NAN; log2c.len()]; ys.len()];
    let mut mark = None;
    for p in points {
        let col = log2c.iter().position(|&e| e.exp2() == p.c);
        let row = ys
            .iter()
            .position(|&e| e.exp2() == p.gamma || ys.len() == 1);
        if let (Some(c), Some(r)) = (col, row) {
            values[r][c] = p.score;
            if p.c == best.c && p.gamma == best.gamma {
                mark = Some((r, c));
            }
        }
    }
    HeatMap {
        title: String::new(),
        x_label: String::new(),
        y_label: String::new(),
        value_label: String::new(),
        xs: log2c.to_vec(),
        ys,
        values,
        mark,
    }
}

/// The ODM's (lambda, gamma) grid: `cs` are the lambdas; each point is the accuracy of
/// [`marginkit::odm::cross_validation`] with the command's folds and seed. Ctrl-C stops it,
/// also within a point's folds (that point is dropped).
fn odm_grid(
    a: &GridArgs,
    kernel: KernelParams,
    data: &marginkit::Dataset,
    cs: &[f64],
    gs: &[f64],
    cancel: &marginkit::solver::Cancel,
    on_point: &mut dyn FnMut(&GridPoint),
) -> CliResult<Vec<GridPoint>> {
    let mut out = Vec::with_capacity(cs.len() * gs.len());
    for &gamma in gs {
        for &lambda in cs {
            if cancel.is_cancelled() {
                return Ok(out);
            }
            let k = KernelParams {
                gamma: marginkit::svm::Gamma::Value(gamma),
                ..kernel
            };
            let params = odm_params(&a.model, &a.odm, Some(lambda), k, SvmSolver::Auto)?;
            let cv = marginkit::odm::cross_validation(
                &params,
                data,
                a.folds,
                &mut marginkit::fit::Control::new(cancel.clone()),
            )?;
            if cv.status == marginkit::solver::Status::Interrupted {
                return Ok(out);
            }
            let pt = GridPoint {
                c: lambda,
                gamma,
                score: marginkit::metrics::classification(&cv.predictions, &data.y).accuracy,
                status: cv.status,
            };
            on_point(&pt);
            out.push(pt);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::parse_range;

    #[test]
    fn ranges_are_inclusive_and_checked() {
        assert_eq!(parse_range("x", "-5,15,2").unwrap().len(), 11);
        assert_eq!(parse_range("x", "3,-15,-2").unwrap().first(), Some(&3.0));
        assert!(parse_range("x", "1,5,-1").is_err());
        assert!(parse_range("x", "1,5").is_err());
        assert!(parse_range("x", "1,5,0").is_err());
        // Ratios whose count overflowed the cast (an empty grid in release, a panic in debug).
        for r in [
            "-1e308,1e308,1e-300",
            "0,1e308,1",
            "0,1,1e-320",
            "0,20000,1",
        ] {
            let e = parse_range("x", r).unwrap_err().0;
            assert!(e.contains("more than 10000"), "{r}: {e}");
        }
        assert_eq!(parse_range("x", "0,9999,1").unwrap().len(), 10_000);
    }
}

/// `marginkit grid`.
#[derive(Debug, Args)]
#[command(
    disable_help_flag = true,
    // Flags that grid refuses (C is searched by --log2c; linear models have no grid here).
    mut_arg("cost", |a| a.hide(true)),
    mut_arg("linear", |a| a.hide(true)),
    mut_arg("bias", |a| a.hide(true)),
    after_help = "-h is LIBSVM's shrinking flag here; use --help for this text.\nWith -t 0 (linear) or -t 4 (precomputed) only C is searched. With -s odm the grid is over (lambda, gamma).\nPrints `C gamma score` of the best point last (score: accuracy in %, or MSE for -s 3/4), C and gamma exactly.\nCtrl-C stops the search and prints the best point so far (exit code 130)."
)]
pub struct GridArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub odm: OdmArgs,
    #[command(flatten)]
    pub input: InputArgs,
    /// log2(C) range: begin,end,step (with -s odm: log2(lambda)).
    #[arg(
        long = "log2c",
        default_value = "-5,15,2",
        allow_hyphen_values = true,
        help_heading = "Grid"
    )]
    pub log2c: String,
    /// log2(gamma) range: begin,end,step (ignored for -t 0 and -t 4).
    #[arg(
        long = "log2g",
        default_value = "3,-15,-2",
        allow_hyphen_values = true,
        help_heading = "Grid"
    )]
    pub log2g: String,
    /// Folds of the cross-validation.
    #[arg(short = 'v', default_value_t = 5, help_heading = "Grid")]
    pub folds: usize,
    /// Quiet: only the final line.
    #[arg(short = 'q', help_heading = "Output")]
    pub quiet: bool,
    /// Print one JSON object with every grid point on stdout.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// Write an SVG heat map of the cross-validation score over (log2 C, log2 gamma), best point
    /// outlined.
    #[arg(long, help_heading = "Output")]
    pub plot: Option<PathBuf>,
    /// Print help.
    #[arg(long, action = ArgAction::Help, help_heading = "Output")]
    pub help: Option<bool>,
    /// Training data.
    #[arg(help_heading = "Arguments", display_order = 1)]
    pub train_file: PathBuf,
}
