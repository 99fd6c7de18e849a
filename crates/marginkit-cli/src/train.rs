//! `marginkit train`: LIBSVM's svm-train (and LIBLINEAR's train with `--linear`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use std::io::Write;

use marginkit::data::write_output;
use marginkit::solver::{Both, Shrinking, Status};
use marginkit::svm::model_io::{fmt_label, save_model_with_status};
use marginkit::svm::params::Probability;
use marginkit::svm::train::{cross_validation_status, fit_resumable, FitReport};
use marginkit::svm::FitCheckpoint;
use marginkit::svm::{Gamma, KernelKind, KernelParams, SvmParams, SvmType, SvmValidParams};
use marginkit::Dataset;
use serde_json::{json, Value};

use crate::args::{ModelArgs, TrainArgs};
use crate::input::read_data;
use crate::predict::fmt_g;
use crate::progress::Progress;
use crate::{CliError, CliResult};

/// The most worker threads `--threads` may ask for.
pub const MAX_THREADS: usize = 1024;

/// Sets the size of rayon's global pool (default: all cores), with the calling (main) thread
/// as worker 0: the solvers then run on a worker, so their parallel sections are pushed to its
/// own deque and stolen by the other workers, instead of being injected from outside the pool
/// with the main thread blocked on a lock each time.
pub fn init_threads(n: Option<usize>) -> CliResult {
    if n == Some(0) {
        return Err(CliError("--threads must be at least 1".into()));
    }
    // Each thread is an OS thread with its own stack: 100,000 of them take minutes to start
    // and spin, so a count far beyond any machine is refused.
    if let Some(n) = n.filter(|&n| n > MAX_THREADS) {
        return Err(CliError(format!(
            "--threads {n} exceeds the limit of {MAX_THREADS}"
        )));
    }
    // 0: rayon's default (RAYON_NUM_THREADS, else all cores).
    let built = rayon::ThreadPoolBuilder::new()
        .num_threads(n.unwrap_or(0))
        .use_current_thread()
        .build_global();
    match (built, n) {
        (Err(e), Some(n)) => Err(CliError(format!("cannot start {n} threads: {e}"))),
        // Without --threads, a pool that already exists (an earlier call) is just as good.
        _ => Ok(()),
    }
}

/// Parses `LABEL:WEIGHT` class weights (the label may be negative: the last `:` splits).
pub fn parse_class_weights(list: &[String]) -> CliResult<Vec<(f64, f64)>> {
    list.iter()
        .map(|s| {
            let (l, w) = s
                .rsplit_once(':')
                .ok_or_else(|| CliError(format!("class weight '{s}': expected LABEL:WEIGHT")))?;
            let label: f64 = l
                .parse()
                .map_err(|_| CliError(format!("class weight '{s}': bad label '{l}'")))?;
            let weight: f64 = w
                .parse()
                .map_err(|_| CliError(format!("class weight '{s}': bad weight '{w}'")))?;
            Ok((label, weight))
        })
        .collect()
}

/// Kernel-SVM parameters from LIBSVM's flags, validated by the library.
pub fn svm_params(m: &ModelArgs) -> CliResult<SvmValidParams> {
    let code = m.svm_type.unwrap_or(0);
    let svm_type = SvmType::from_code(code)
        .ok_or_else(|| CliError(format!("unknown svm type -s {code} (expected 0..4)")))?;
    let kind = KernelKind::from_code(m.kernel_type).ok_or_else(|| {
        CliError(format!(
            "unknown kernel type -t {} (expected 0..4)",
            m.kernel_type
        ))
    })?;
    if !(m.cache_mb.is_finite() && m.cache_mb > 0.0) {
        return Err(CliError(format!(
            "cache size -m must be > 0 MB, got {}",
            m.cache_mb
        )));
    }
    let mut p = SvmParams::new()
        .svm_type(svm_type)
        .kernel(KernelParams {
            kind,
            gamma: m.gamma.map_or(Gamma::Auto, Gamma::Value),
            coef0: m.coef0,
            degree: m.degree,
        })
        .c(m.cost)
        .nu(m.nu)
        .epsilon(m.epsilon)
        .tol(m.eps.unwrap_or(1e-3))
        .cache_bytes((m.cache_mb * 1048576.0) as u64)
        .shrinking(if m.shrinking == 1 {
            Shrinking::On
        } else {
            Shrinking::Off
        })
        .probability(if m.probability == 1 {
            Probability::On
        } else {
            Probability::Off
        })
        .seed(m.seed);
    for (l, w) in parse_class_weights(&m.class_weights)? {
        p = p.class_weight(l, w);
    }
    if let Some(n) = m.max_iter {
        p = p.max_iter(n);
    }
    if let Some(t) = m.time_limit {
        p = p.time_limit(crate::args::seconds_flag("time-limit", t)?);
    }
    Ok(p.check()?)
}

/// Default model path: the training file's name + ".model" in the current directory.
pub fn default_model_path(train: &Path) -> PathBuf {
    let name = train
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "stdin".into());
    let name = if name == "-" {
        "stdin".to_string()
    } else {
        name
    };
    PathBuf::from(format!("{name}.model"))
}

/// Accuracy (classification) or MSE and squared correlation (regression) of predictions.
pub fn evaluate(pred: &[f64], truth: &[f64], regression: bool) -> Value {
    let n = truth.len().max(1) as f64;
    if regression {
        let mse = pred
            .iter()
            .zip(truth)
            .map(|(p, y)| (p - y).powi(2))
            .sum::<f64>()
            / n;
        json!({ "mse": mse, "r2": squared_correlation(pred, truth) })
    } else {
        let correct = pred.iter().zip(truth).filter(|(p, y)| p == y).count();
        json!({ "accuracy": 100.0 * correct as f64 / n, "correct": correct, "total": truth.len() })
    }
}

/// Squared correlation coefficient, as LIBSVM reports it for regression.
pub fn squared_correlation(p: &[f64], y: &[f64]) -> f64 {
    let n = y.len() as f64;
    let (sp, sy) = (p.iter().sum::<f64>(), y.iter().sum::<f64>());
    let spp = p.iter().map(|v| v * v).sum::<f64>();
    let syy = y.iter().map(|v| v * v).sum::<f64>();
    let spy = p.iter().zip(y).map(|(a, b)| a * b).sum::<f64>();
    let num = n * spy - sp * sy;
    let den = (n * spp - sp * sp) * (n * syy - sy * sy);
    if den > 0.0 {
        num * num / den
    } else {
        f64::NAN
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

/// Human summary of a fit, in LIBSVM's words.
pub fn describe(report: &FitReport) -> String {
    let mut s = String::new();
    let multiclass = report.subproblems.len() > 1;
    for sp in &report.subproblems {
        if let (true, Some((a, b))) = (multiclass, sp.classes) {
            s.push_str(&format!("classes {} vs {}: ", fmt_label(a), fmt_label(b)));
        }
        s.push_str(&format!(
            "optimization finished, #iter = {} ({})\nobj = {}, rho = {}\nnSV = {}, nBSV = {}\nmax KKT violation = {:.3e}, duality gap = {:.3e}\n",
            sp.iterations,
            sp.status.as_str(),
            sp.objective,
            sp.rho,
            sp.n_sv,
            sp.n_bsv,
            sp.max_violation,
            sp.gap
        ));
    }
    s
}

/// One JSON value per binary subproblem, or a single value for one subproblem.
fn per_subproblem(
    report: &FitReport,
    f: impl Fn(&marginkit::svm::SubproblemReport) -> Value,
) -> Value {
    match report.subproblems.as_slice() {
        [one] => f(one),
        many => Value::Array(many.iter().map(f).collect()),
    }
}

pub fn run(a: TrainArgs) -> CliResult {
    init_threads(a.model.threads)?;
    refuse_cv_state(&a)?;
    if a.folds.is_none() {
        let model = a
            .model_file
            .clone()
            .unwrap_or_else(|| default_model_path(&a.train_file));
        let mut inputs = vec![(a.train_file.as_path(), "training data file")];
        if let Some(w) = &a.weights {
            inputs.push((w.as_path(), "weight file"));
        }
        if let Some(r) = &a.resume {
            inputs.push((r.as_path(), "--resume state file"));
        }
        refuse_overwriting_input(&model, &inputs)?;
    }
    if a.model.linear {
        return crate::train_linear::run(a);
    }
    let params = svm_params(&a.model)?;
    let precomputed = params.kernel.kind == KernelKind::Precomputed;
    let mut data = read_data(&a.train_file, &a.input, precomputed)?;
    if let Some(w) = &a.weights {
        data = with_weight_file(data, w)?;
    }
    if let Some(k) = a.folds {
        return run_cv(&params, &data, k, &a);
    }
    let path = a
        .model_file
        .clone()
        .unwrap_or_else(|| default_model_path(&a.train_file));
    let state_path = state_path(&a, &path);
    refuse_same_file(&state_path, &path)?;
    let resume = match &a.resume {
        Some(p) => Some(read_state(p)?),
        None => None,
    };
    let cancel = crate::interrupt::install();
    let mut obs = Both(Progress::new(!a.quiet && !a.json), cancel.clone());
    let t0 = Instant::now();
    let (model, report, checkpoint) = fit_resumable(&params, &data, &mut obs, resume.as_ref())
        .map_err(|e| match &a.resume {
            Some(p) => CliError(format!("{}: {e}", p.display())),
            None => CliError(e.to_string()),
        })?;
    let seconds = t0.elapsed().as_secs_f64();
    obs.0.finish();
    say(a.json, a.quiet, describe(&report).trim_end());
    say(
        a.json,
        a.quiet,
        &format!("Total nSV = {}", model.total_sv()),
    );
    for w in &report.warnings {
        eprintln!("marginkit: warning: {w}");
    }
    let status = report.status();
    say(
        a.json,
        a.quiet,
        &format!(
            "status = {}, max KKT violation = {:.3e}, duality gap = {:.3e}\nkernel cache {:.0} MB, hit rate {:.1}% ({} hits, {} misses)",
            status.as_str(),
            report.max_violation(),
            report.gap(),
            params.cache_bytes as f64 / 1048576.0,
            100.0 * report.cache.hit_rate(),
            report.cache.hits,
            report.cache.misses
        ),
    );
    save_model_with_status(&path, &model, status)
        .map_err(|e| CliError(format!("{}: {e}", path.display())))?;
    let state_written = match &checkpoint {
        Some(c) => {
            write_output(&state_path, |w| w.write_all(&c.to_bytes()))
                .map_err(|e| CliError(format!("{}: {e}", state_path.display())))?;
            eprintln!(
                "marginkit: warning: the solver stopped before convergence ({}); the model file is flagged 'status {}'; continue with --resume {}",
                status.as_str(),
                status.as_str(),
                state_path.display()
            );
            Some(state_path.display().to_string())
        }
        None => None,
    };
    if a.json {
        let out = json!({
            "train_seconds": seconds,
            "svm_type": params.svm_type.name(),
            "kernel": model.kernel.libsvm_name(),
            "n_samples": data.len(),
            "n_features": data.n_features(),
            "n_class": model.n_class(),
            "objective": per_subproblem(&report, |s| json!(s.objective)),
            "rho": per_subproblem(&report, |s| json!(s.rho)),
            "n_sv": model.total_sv(),
            "n_bsv": per_subproblem(&report, |s| json!(s.n_bsv)),
            "iterations": report.iterations(),
            "status": status.as_str(),
            "converged": status == Status::Converged,
            "max_violation": per_subproblem(&report, |s| json!(s.max_violation)),
            "duality_gap": per_subproblem(&report, |s| json!(s.gap)),
            "model_file": path.display().to_string(),
            "state_file": state_written,
            "cache_mb": params.cache_bytes as f64 / 1048576.0,
            "cache_hits": report.cache.hits,
            "cache_misses": report.cache.misses,
            "cache_hit_rate": report.cache.hit_rate(),
            "resumed": a.resume.is_some(),
        });
        println!("{out}");
    }
    if status == Status::Interrupted {
        std::process::exit(crate::interrupt::EXIT_INTERRUPTED);
    }
    Ok(())
}

/// The state file of a stopped fit: `--state-file`, else the model file's name + ".state".
pub fn state_path(a: &TrainArgs, model: &Path) -> PathBuf {
    a.state_file.clone().unwrap_or_else(|| {
        let mut s = model.as_os_str().to_owned();
        s.push(".state");
        PathBuf::from(s)
    })
}

/// Refuses a state file that is the model file (the state would overwrite the model, or the
/// model the state). Paths that do not exist yet are compared as given, after making them
/// absolute; existing ones after resolving links.
pub fn refuse_same_file(state: &Path, model: &Path) -> CliResult {
    let norm = |p: &Path| {
        std::fs::canonicalize(p)
            .unwrap_or_else(|_| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()))
    };
    if norm(state) == norm(model) {
        return Err(CliError(format!(
            "--state-file {} is the model file: the state would overwrite the model; give another path",
            state.display()
        )));
    }
    Ok(())
}

/// Refuses an output file that is one of the command's input files (`train data data`,
/// `predict t m t`, `scale -o data data`): writing it would replace the input the user still
/// has. Compared as [`refuse_same_file`] does.
pub fn refuse_overwriting_input(output: &Path, inputs: &[(&Path, &str)]) -> CliResult {
    let norm = |p: &Path| {
        std::fs::canonicalize(p)
            .unwrap_or_else(|_| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()))
    };
    let out = norm(output);
    for (input, what) in inputs {
        if norm(input) == out {
            return Err(CliError(format!(
                "{} is the {what}: writing it would overwrite that input; give another output path",
                output.display()
            )));
        }
    }
    Ok(())
}

/// Refuses `--resume` and `--state-file` together with `-v` (cross-validation has no state to
/// continue: each fold is a fresh fit, and nothing of a stopped run is kept).
pub fn refuse_cv_state(a: &TrainArgs) -> CliResult {
    if a.folds.is_some() && (a.resume.is_some() || a.state_file.is_some()) {
        return Err(CliError(
            "-v (cross-validation) cannot be combined with --resume or --state-file: cross-validation writes no state to continue from".into(),
        ));
    }
    Ok(())
}

fn read_state(p: &Path) -> CliResult<FitCheckpoint> {
    let bytes = std::fs::read(p).map_err(|e| CliError(format!("{}: {e}", p.display())))?;
    FitCheckpoint::from_bytes(&bytes).map_err(|e| CliError(format!("{}: {e}", p.display())))
}

/// Attaches per-sample weights read from `path` (see
/// [`marginkit::svm::train::parse_sample_weights`]) to `data`.
pub fn with_weight_file(data: Dataset, path: &Path) -> CliResult<Dataset> {
    let text =
        std::fs::read_to_string(path).map_err(|e| CliError(format!("{}: {e}", path.display())))?;
    let w = marginkit::svm::train::parse_sample_weights(&text).map_err(|e| {
        CliError(format!(
            "{}:{}:{}: {}",
            path.display(),
            e.line,
            e.column,
            e.kind
        ))
    })?;
    if w.len() != data.len() {
        return Err(CliError(format!(
            "{}: {} weights for {} training samples",
            path.display(),
            w.len(),
            data.len()
        )));
    }
    let Dataset { x, y, .. } = data;
    Ok(Dataset::new(x, y, Some(w))?)
}

fn run_cv(params: &SvmValidParams, data: &Dataset, k: usize, a: &TrainArgs) -> CliResult {
    if k < 2 {
        return Err(CliError(format!(
            "n-fold cross validation: n must be >= 2, got {k}"
        )));
    }
    let t0 = Instant::now();
    let (pred, status) = cross_validation_status(params, data, k, params.seed)?;
    let seconds = t0.elapsed().as_secs_f64();
    if status != Status::Converged {
        eprintln!(
            "marginkit: warning: a fold's solver stopped before convergence ({})",
            status.as_str()
        );
    }
    report_cv(
        &pred,
        &data.y,
        params.svm_type.is_regression(),
        json!({ "cv_folds": k, "cv_seconds": seconds, "seed": params.seed,
                "status": status.as_str() }),
        a.json,
    );
    Ok(())
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
                num("r2")
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
