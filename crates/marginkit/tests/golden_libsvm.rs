//! Oracle tests against LIBSVM 3.37 and LIBLINEAR 2.50 (`tests/data/golden/`, see its README).
//!
//! For every stored LIBSVM configuration: the option string is parsed into [`SvmParams`], the
//! same training file is fitted by marginkit, and objective per subproblem (same pair order),
//! rho, nSV (total, per class, per subproblem), the support-vector indices, the label order,
//! predictions and decision values on the test file are compared under the tolerance policy
//! TP-1 (`tests/common/tol.rs`). LIBSVM's own `.model` file is loaded with
//! [`model_io::load_model`] and must reproduce the `*_from_model_file` predictions.
//!
//! For LIBLINEAR configurations with a solver marginkit has (`-s 1, 3, 12, 13`) the primal
//! objective of our `w` is compared with the stored reference optimum, and decision values with
//! LIBLINEAR's through the strong-convexity bound (see `tol::linear_decision_bound`).
//!
//! Each test collects every mismatch over all configurations and fails once, naming them all.

mod common;

use std::path::{Path, PathBuf};

use common::tol::{self, Failures};
use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::error::FitError;
use marginkit::fit::{Control, Fit};
use marginkit::solver::{Shrinking, Status};
use marginkit::svm::linear::{self, LinearFit, LinearModel, LinearParams, LinearSolver};
use marginkit::svm::model_io::load_model;
use marginkit::svm::params::Probability;
use marginkit::svm::{train, Gamma, KernelKind, KernelParams, SvmParams, SvmSolver, SvmType};
use marginkit::{Dataset, Features};
use serde_json::Value;

/// Checks `p`, then fits it without an observer.
fn fit_linear(p: LinearParams, data: &Dataset) -> Result<LinearFit, FitError> {
    linear::fit(&p.check()?, data, &mut Control::default())
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/golden")
}

/// Every `*.json` under `golden/<which>/`, sorted.
fn configs(which: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let root = golden_dir().join(which);
    for ds in std::fs::read_dir(&root).expect("golden directory exists") {
        let ds = ds.unwrap().path();
        for f in std::fs::read_dir(&ds).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "json") {
                out.push(f);
            }
        }
    }
    out.sort();
    assert!(
        !out.is_empty(),
        "no golden configs under {}",
        root.display()
    );
    out
}

fn load_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn f64s(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap_or_else(|| panic!("array expected, got {v}"))
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

fn rows(v: &Value) -> Vec<Vec<f64>> {
    v.as_array().unwrap().iter().map(f64s).collect()
}

/// LIBSVM's `svm-train` options as [`SvmParams`]; also returns the stopping tolerance.
fn parse_libsvm_options(opts: &str) -> Result<(SvmParams, f64), String> {
    let tok: Vec<&str> = opts.split_whitespace().collect();
    let mut p = SvmParams::new();
    let mut k = KernelParams::default();
    let mut eps = 1e-3;
    let mut i = 0;
    while i < tok.len() {
        let flag = tok[i];
        let val = *tok.get(i + 1).ok_or(format!("{flag} needs a value"))?;
        let num = || val.parse::<f64>().map_err(|e| format!("{flag} {val}: {e}"));
        let int = || val.parse::<u8>().map_err(|e| format!("{flag} {val}: {e}"));
        match flag {
            "-s" => p = p.svm_type(SvmType::from_code(int()?).ok_or("bad -s")?),
            "-t" => k.kind = KernelKind::from_code(int()?).ok_or("bad -t")?,
            "-d" => k.degree = u32::from(int()?),
            "-g" => k.gamma = Gamma::Value(num()?),
            "-r" => k.coef0 = num()?,
            "-c" => p = p.c(num()?),
            "-n" => p = p.nu(num()?),
            "-p" => p = p.epsilon(num()?),
            "-m" => p = p.cache_bytes((num()? * 1048576.0) as u64),
            "-e" => {
                eps = num()?;
                p = p.tol(eps);
            }
            "-h" => {
                p = p.shrinking(if int()? == 0 {
                    Shrinking::Off
                } else {
                    Shrinking::On
                })
            }
            "-b" => {
                p = p.probability(if int()? == 1 {
                    Probability::On
                } else {
                    Probability::Off
                })
            }
            w if w.starts_with("-w") => {
                let label: f64 = w[2..].parse().map_err(|e| format!("{w}: {e}"))?;
                p = p.class_weight(label, num()?);
            }
            other => return Err(format!("unknown option {other}")),
        }
        i += 2;
    }
    Ok((p.kernel(k), eps))
}

fn read(path: &Path, precomputed: bool, min_features: usize) -> Dataset {
    let mut o = if precomputed {
        ReadOptions::precomputed()
    } else {
        ReadOptions::default()
    };
    o.min_features = min_features;
    read_libsvm_path(path, &o).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn option_parser_reads_libsvm_flags() {
    let (p, eps) =
        parse_libsvm_options("-s 0 -t 1 -d 2 -g 0.05 -r 1 -c 4 -w1 3 -w-1 0.5 -e 1e-5").unwrap();
    let v = p.check().unwrap();
    assert_eq!(eps, 1e-5);
    assert_eq!(v.kernel().kind, KernelKind::Poly);
    assert_eq!(v.kernel().degree, 2);
    assert_eq!(v.kernel().gamma, Gamma::Value(0.05));
    assert_eq!(v.kernel().coef0, 1.0);
    assert_eq!(v.c(), 4.0);
    assert_eq!(v.class_weights(), vec![(1.0, 3.0), (-1.0, 0.5)]);
    assert!(parse_libsvm_options("-x 1").is_err());
    assert!(parse_libsvm_options("-c").is_err());
}

/// One stored LIBSVM configuration, fitted with the QP engine `engine`; mismatches go to
/// `fails` under the config's name.
fn check_libsvm_config(path: &Path, engine: SvmSolver, fails: &mut Failures) {
    let j = load_json(path);
    let name = format!(
        "libsvm/{}/{}",
        j["dataset"].as_str().unwrap(),
        j["config"].as_str().unwrap()
    );
    let ctx = name.as_str();
    let (params, eps) = match parse_libsvm_options(j["options"].as_str().unwrap()) {
        Ok(p) => p,
        Err(e) => return fails.fail(ctx, e),
    };
    let params = params.engine(engine);
    let params = match params.check() {
        Ok(p) => p,
        Err(e) => return fails.fail(ctx, format!("params rejected: {e}")),
    };
    let tight = tol::is_tight(eps, j["params"]["eps"].as_f64().unwrap());
    let precomputed = params.kernel().kind == KernelKind::Precomputed;
    let gd = golden_dir();
    let train_data = read(&gd.join(j["train_file"].as_str().unwrap()), precomputed, 0);
    if train_data.len() as u64 != j["n_train"].as_u64().unwrap() {
        return fails.fail(ctx, "training file has a different row count");
    }
    if train_data.n_features() as u64 != j["params"]["n_features"].as_u64().unwrap() {
        fails.fail(ctx, "n_features differs (default gamma would differ)");
    }
    let Fit { model, report, .. } = match train::fit(&params, &train_data, &mut Control::default())
    {
        Ok(r) => r,
        Err(e) => return fails.fail(ctx, format!("fit failed: {e}")),
    };
    if report.status() != Status::Converged {
        fails.fail(ctx, format!("status {:?}", report.status()));
    }
    let svm_type = params.svm_type();

    // Labels and pair order.
    if svm_type.is_classifier() {
        let labels = f64s(&j["labels"]);
        if model.labels != labels {
            fails.fail(ctx, format!("labels {:?} vs {labels:?}", model.labels));
        }
        let pairs = rows(&j["pair_order"]);
        let ours: Vec<Vec<f64>> = report
            .subproblems
            .iter()
            .map(|s| s.classes.map_or(vec![], |(a, b)| vec![a, b]))
            .collect();
        if ours != pairs {
            fails.fail(ctx, format!("pair order {ours:?} vs {pairs:?}"));
        }
    }

    // Objective, rho and nSV per subproblem.
    let obj = f64s(&j["objective"]);
    let rho = f64s(&j["rho"]);
    let nsv_sub: Vec<u64> = j["n_sv_sub"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    if report.subproblems.len() != obj.len() || model.rho.len() != rho.len() {
        return fails.fail(
            ctx,
            format!(
                "{} subproblems / {} rho vs {} / {}",
                report.subproblems.len(),
                model.rho.len(),
                obj.len(),
                rho.len()
            ),
        );
    }
    // The block engine follows another path of iterates than LIBSVM's pair SMO: at the default
    // tolerance a support vector with a near-zero coefficient may be in one solution and not in
    // the other, so one support vector more or less is accepted there (TP-1's 2% is below one
    // vector on the small sets); at tight tolerance the counts must be equal.
    let check_nsv = |what: &str, a: usize, b: usize, tight: bool| {
        if engine == SvmSolver::Block && !tight && a.abs_diff(b) <= 1 {
            Ok(())
        } else {
            tol::check_nsv(what, a, b, tight)
        }
    };
    for (k, sub) in report.subproblems.iter().enumerate() {
        let what = format!("subproblem {k}");
        fails.push(
            ctx,
            tol::check_objective(&what, sub.objective, obj[k], tight),
        );
        fails.push(ctx, tol::check_rho(&what, model.rho[k], rho[k], eps));
        fails.push(ctx, check_nsv(&what, sub.n_sv, nsv_sub[k] as usize, tight));
    }
    fails.push(
        ctx,
        check_nsv(
            "total",
            model.total_sv(),
            j["n_sv"].as_u64().unwrap() as usize,
            tight,
        ),
    );
    if svm_type.is_classifier() {
        let per_class: Vec<usize> = j["n_sv_per_class"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as usize)
            .collect();
        for (c, (&a, &b)) in model.n_sv.iter().zip(&per_class).enumerate() {
            fails.push(ctx, check_nsv(&format!("class {c}"), a, b, tight));
        }
    }
    // Support-vector indices (same grouping by class, data order inside a class). Only
    // meaningful at tight tolerance, where the support set is determined.
    if tight {
        let theirs: Vec<usize> = j["sv_indices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as usize)
            .collect();
        let ours: Vec<usize> = model
            .sv_indices
            .as_ref()
            .map(|v| v.iter().map(|i| i + 1).collect())
            .unwrap_or_default();
        if ours != theirs {
            let extra: Vec<_> = ours.iter().filter(|i| !theirs.contains(i)).collect();
            let missing: Vec<_> = theirs.iter().filter(|i| !ours.contains(i)).collect();
            fails.fail(
                ctx,
                format!("sv_indices differ: ours only {extra:?}, LIBSVM only {missing:?}"),
            );
        }
    }

    // Test predictions and decision values.
    let test = read(
        &gd.join(j["test_file"].as_str().unwrap()),
        precomputed,
        train_data.n_features(),
    );
    let dec = model.decision_values(&test.x);
    let pred = match model.predict(&test.x) {
        Ok(p) => p,
        Err(e) => return fails.fail(ctx, format!("predict failed: {e}")),
    };
    let ref_dec = rows(&j["decision_values"]);
    let ref_pred = f64s(&j["predicted"]);
    fails.push(ctx, tol::check_decisions("test", &dec, &ref_dec, eps));
    if svm_type.is_regression() {
        let flat: Vec<Vec<f64>> = pred.iter().map(|&v| vec![v]).collect();
        let rp: Vec<Vec<f64>> = ref_pred.iter().map(|&v| vec![v]).collect();
        fails.push(
            ctx,
            tol::check_decisions("test predictions", &flat, &rp, eps),
        );
    } else {
        fails.push(
            ctx,
            tol::check_labels("test", &pred, &ref_pred, &ref_dec, eps),
        );
    }

    // LIBSVM's own model file, read by our reader, must predict as LIBSVM did from it.
    let model_path = path.with_file_name(j["model_file"].as_str().unwrap());
    match load_model(&model_path) {
        Err(e) => fails.fail(ctx, format!("load_model: {e}")),
        Ok(theirs) => {
            if theirs.svm_type != svm_type {
                fails.fail(ctx, "model file svm_type");
            }
            let d = theirs.decision_values(&test.x);
            let p = theirs.predict(&test.x).unwrap_or_default();
            let rd = rows(&j["decision_values_from_model_file"]);
            let rp = f64s(&j["predicted_from_model_file"]);
            fails.push(ctx, tol::check_same_model("model file", &d, &rd));
            if svm_type.is_regression() {
                let a: Vec<Vec<f64>> = p.iter().map(|&v| vec![v]).collect();
                let b: Vec<Vec<f64>> = rp.iter().map(|&v| vec![v]).collect();
                fails.push(ctx, tol::check_same_model("model file predictions", &a, &b));
            } else {
                fails.push(ctx, tol::check_labels("model file", &p, &rp, &rd, 0.0));
            }
        }
    }
}

#[test]
fn libsvm_golden_configs() {
    let mut fails = Failures::default();
    let all = configs("libsvm");
    for path in &all {
        check_libsvm_config(path, SvmSolver::Smo, &mut fails);
    }
    assert!(
        all.len() >= 20,
        "expected every stored config, found {}",
        all.len()
    );
    fails.assert_none();
}

/// The same configurations with the block working-set engine (nu-SVC and nu-SVR in its nu mode).
#[test]
fn libsvm_golden_configs_block_engine() {
    let mut fails = Failures::default();
    for path in &configs("libsvm") {
        check_libsvm_config(path, SvmSolver::Block, &mut fails);
    }
    fails.assert_none();
}

/// LIBLINEAR's `train` options: solver id, C, p, bias, eps, class weights.
struct LinearOpts {
    solver: u32,
    c: f64,
    p: f64,
    bias: Option<f64>,
    weights: Vec<(f64, f64)>,
}

fn parse_liblinear_options(opts: &str) -> Result<LinearOpts, String> {
    let tok: Vec<&str> = opts.split_whitespace().collect();
    let mut o = LinearOpts {
        solver: 1,
        c: 1.0,
        p: 0.1,
        bias: None,
        weights: Vec::new(),
    };
    let mut i = 0;
    while i < tok.len() {
        let flag = tok[i];
        let val = *tok.get(i + 1).ok_or(format!("{flag} needs a value"))?;
        let num = || val.parse::<f64>().map_err(|e| format!("{flag} {val}: {e}"));
        match flag {
            "-s" => o.solver = val.parse().map_err(|e| format!("-s {val}: {e}"))?,
            "-c" => o.c = num()?,
            "-p" => o.p = num()?,
            "-e" => {
                num()?;
            }
            "-B" => {
                let b = num()?;
                o.bias = (b > 0.0).then_some(b);
            }
            w if w.starts_with("-w") => {
                let label: f64 = w[2..].parse().map_err(|e| format!("{w}: {e}"))?;
                o.weights.push((label, num()?));
            }
            other => return Err(format!("unknown option {other}")),
        }
        i += 2;
    }
    Ok(o)
}

/// The row with the bias feature appended (`B`), as LIBLINEAR sees it.
fn augmented(x: &Features, i: usize, n_features: usize, bias: Option<f64>) -> Vec<f64> {
    let mut v = vec![0.0; n_features + usize::from(bias.is_some())];
    for (k, val) in x.row(i).iter() {
        if k < n_features {
            v[k] = val;
        }
    }
    if let Some(b) = bias {
        v[n_features] = b;
    }
    v
}

/// Primal objective `1/2 |w|^2 + sum_i C_i loss_i(w)` of decision function `k`, recomputed from
/// the weights alone (bias feature included and regularized, as LIBLINEAR does).
fn linear_primal(
    o: &LinearOpts,
    labels: &[f64],
    w: &[f64],
    k: usize,
    data: &Dataset,
    n_features: usize,
) -> f64 {
    let solver = LinearSolver::from_id(o.solver).unwrap();
    let mut obj = 0.5 * w.iter().map(|v| v * v).sum::<f64>();
    let cw = |l: f64| -> f64 {
        o.weights
            .iter()
            .filter(|(lab, _)| *lab == l)
            .map(|(_, f)| f)
            .product()
    };
    for i in 0..data.len() {
        let x = augmented(&data.x, i, n_features, o.bias);
        let f: f64 = x.iter().zip(w).map(|(a, b)| a * b).sum();
        let y = data.y[i];
        let (loss, ci) = if solver.is_regression() {
            ((f - y).abs() - o.p, o.c)
        } else {
            // Binary: labels[0] is +1 and each class has its own weighted C; one-vs-rest: the
            // positive class gets its weighted C, the rest plain C.
            let pos = if labels.len() == 2 {
                y == labels[0]
            } else {
                y == labels[k]
            };
            let s = if pos { 1.0 } else { -1.0 };
            let ci = if labels.len() == 2 || pos {
                o.c * cw(y)
            } else {
                o.c
            };
            (1.0 - s * f, ci)
        };
        let l = loss.max(0.0);
        obj += ci * if solver.is_l2_loss() { l * l } else { l };
    }
    obj
}

#[test]
fn liblinear_golden_configs() {
    let mut fails = Failures::default();
    let mut compared = 0;
    for path in configs("liblinear") {
        let j = load_json(&path);
        let name = format!(
            "liblinear/{}/{}",
            j["dataset"].as_str().unwrap(),
            j["config"].as_str().unwrap()
        );
        let ctx = name.as_str();
        let o = match parse_liblinear_options(j["options"].as_str().unwrap()) {
            Ok(o) => o,
            Err(e) => {
                fails.fail(ctx, e);
                continue;
            }
        };
        let Some(solver) = LinearSolver::from_id(o.solver) else {
            // -s 2 (primal L2-loss SVC) and -s 11 (primal L2-loss SVR) are not in marginkit.
            assert!(
                matches!(o.solver, 2 | 11),
                "{ctx}: unexpected unsupported solver -s {}",
                o.solver
            );
            eprintln!(
                "{ctx}: skipped (LIBLINEAR solver -s {} not supported)",
                o.solver
            );
            continue;
        };
        compared += 1;
        let gd = golden_dir();
        let data = read(&gd.join(j["train_file"].as_str().unwrap()), false, 0);
        let nf = data.n_features();
        let mut lp = LinearParams::new(solver).c(o.c).p(o.p).eps(1e-7);
        if let Some(b) = o.bias {
            lp = lp.bias(b);
        }
        for &(l, f) in &o.weights {
            lp = lp.class_weight(l, f);
        }
        let fit = match fit_linear(lp, &data) {
            Ok(f) => f,
            Err(e) => {
                fails.fail(ctx, format!("fit failed: {e}"));
                continue;
            }
        };
        let m = &fit.model;
        let labels: Vec<f64> = if solver.is_regression() {
            vec![]
        } else {
            f64s(&j["labels"])
        };
        if m.labels() != labels.as_slice() {
            fails.fail(ctx, format!("labels {:?} vs {labels:?}", m.labels()));
            continue;
        }
        let refs = j["reference_optimum"].as_array().unwrap();
        let lib_primal = f64s(&j["primal_objective"]);
        if refs.len() != m.n_weight_vectors() {
            fails.fail(ctx, "number of weight vectors");
            continue;
        }
        // Primal suboptimality of each side against the reference optimum (>= 0 up to the
        // reference's own accuracy).
        let mut subopt = Vec::new();
        for (k, r) in refs.iter().enumerate() {
            let p_ref = r["primal"].as_f64().unwrap();
            let ours = linear_primal(&o, &labels, m.weights(k), k, &data, nf);
            fails.push(
                ctx,
                tol::check_objective(
                    &format!("primal {k} vs reference optimum"),
                    ours,
                    p_ref,
                    true,
                ),
            );
            if ours > lib_primal[k] * (1.0 + 1e-9) && lib_primal[k] > p_ref * (1.0 + 1e-5) {
                fails.fail(
                    ctx,
                    format!(
                        "primal {k}: ours {ours} worse than LIBLINEAR's early stop {}",
                        lib_primal[k]
                    ),
                );
            }
            let slack = 1e-9 * p_ref.abs();
            subopt.push((
                (ours - p_ref).max(0.0) + slack,
                (lib_primal[k] - p_ref).max(0.0) + slack,
            ));
        }
        // Decision values: |w'x - w*'x| <= |x| sqrt(2 (P(w) - P*)) (the primal is 1-strongly
        // convex), so ours and LIBLINEAR's can differ by the sum of the two bounds.
        let test = read(&gd.join(j["test_file"].as_str().unwrap()), false, nf);
        let ref_dec = rows(&j["decision_values"]);
        let ref_pred = f64s(&j["predicted"]);
        let dec = m.decision_values(&test.x);
        let nw = m.n_weight_vectors();
        let pred = m.predict(&test.x);
        let mut bad = 0usize;
        let mut first = String::new();
        for i in 0..test.len() {
            let x = augmented(&test.x, i, nf, o.bias);
            let xn = x.iter().map(|v| v * v).sum::<f64>().sqrt();
            let bound: Vec<f64> = subopt
                .iter()
                .map(|(a, b)| tol::linear_decision_bound(xn, *a, *b))
                .collect();
            for k in 0..nw {
                if (dec[i * nw + k] - ref_dec[i][k]).abs() > bound[k] {
                    bad += 1;
                    if first.is_empty() {
                        first = format!(
                            "row {i}[{k}]: {} vs {} (bound {:.3e})",
                            dec[i * nw + k],
                            ref_dec[i][k],
                            bound[k]
                        );
                    }
                }
            }
            // A label may differ only if the reference's winner is not clear by the bounds.
            if !solver.is_regression() && pred[i] != ref_pred[i] {
                let d = &ref_dec[i];
                let clear = if nw == 1 {
                    d[0].abs() > bound[0]
                } else {
                    let best = (0..nw).fold(0, |b, k| if d[k] > d[b] { k } else { b });
                    (0..nw).all(|k| k == best || d[best] - d[k] > bound[best] + bound[k])
                };
                if clear {
                    fails.fail(
                        ctx,
                        format!("row {i}: label {} vs {}", pred[i], ref_pred[i]),
                    );
                }
            }
        }
        if bad > 0 {
            fails.fail(
                ctx,
                format!("{bad} decision values beyond the bound (first {first})"),
            );
        }
        // LIBLINEAR's model file read by our reader predicts as LIBLINEAR did from it.
        let mp = path.with_file_name(j["model_file"].as_str().unwrap());
        match std::fs::File::open(&mp)
            .map_err(|e| e.to_string())
            .and_then(|f| LinearModel::read(std::io::BufReader::new(f)).map_err(|e| e.to_string()))
        {
            Err(e) => fails.fail(ctx, format!("model file: {e}")),
            Ok(theirs) => {
                let d = theirs.decision_values(&test.x);
                let rd = rows(&j["decision_values_from_model_file"]);
                let ours: Vec<Vec<f64>> = d.chunks(nw).map(|c| c.to_vec()).collect();
                fails.push(ctx, tol::check_same_model("model file", &ours, &rd));
                let p = theirs.predict(&test.x);
                let rp = f64s(&j["predicted_from_model_file"]);
                if solver.is_regression() {
                    let a: Vec<Vec<f64>> = p.iter().map(|&v| vec![v]).collect();
                    let b: Vec<Vec<f64>> = rp.iter().map(|&v| vec![v]).collect();
                    fails.push(ctx, tol::check_same_model("model file predictions", &a, &b));
                } else if p != rp {
                    fails.fail(ctx, "model file: predicted labels differ");
                }
            }
        }
    }
    assert!(compared >= 10, "only {compared} LIBLINEAR configs compared");
    fails.assert_none();
}
