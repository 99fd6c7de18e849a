//! `-b 1` training against LIBSVM's own (`libsvm-official`, through the interpreter named by
//! `MARGINKIT_PYTHON`; `.ci/run` sets it and runs these tests by name). The LIBSVM side is
//! `bench/libsvm_probability.py`: it replays LIBSVM's unseeded `rand()` from the C default seed so
//! that the probability folds, and the cross-validated decision values and residuals LIBSVM fits
//! on, are LIBSVM's own.
//!
//! Checked, per data set:
//! - the Platt sigmoid with intercept as published (`sigmoid_train_published`, what
//!   `PlattFit::WithIntercept` fits) of LIBSVM's cross-validated decision values is LIBSVM's
//!   `probA`/`probB` to 1e-6 relative, and pairwise coupling of LIBSVM's sigmoids gives LIBSVM's
//!   probabilities: the LIBSVM procedure is reproduced, so the differences below are measured
//!   against what LIBSVM computes;
//! - a `-b 1` model fitted with `PlattFit::WithIntercept` carries the published fit of LIBSVM's
//!   cross-validated decision values on marginkit's folds, LIBSVM reads its model file (`probA`,
//!   `probB`) and predicts with it the probabilities marginkit predicts, and its probabilities are
//!   much closer to LIBSVM's end-to-end than the through-origin default's;
//! - marginkit's fitted slope `A` is the through-origin fit (solved here by bisection on the
//!   likelihood's derivative) of LIBSVM's cross-validated decision values on marginkit's folds,
//!   and marginkit's SVR Laplace scale is LIBSVM's rule applied to LIBSVM's residuals on
//!   marginkit's folds; LIBSVM's own scale is that rule on its own residuals.
//!
//! Measured and printed (`-- --ignored --nocapture`; the table in docs/guide/from-libsvm.md): how
//! far the through-origin sigmoid moves the probabilities from LIBSVM's on the same folds and
//! decision values, how far marginkit's end-to-end `-b 1` models (its own seeded folds; through
//! the origin and with intercept) are from LIBSVM's, and the test-set log-loss of each.
//!
//! `#[ignore]`d so that `cargo test --workspace` runs without Python; run by name, a missing
//! variable, interpreter or package fails the test with a message saying which.

use std::path::{Path, PathBuf};
use std::process::Command;

use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::fit::{Control, Fit};
use marginkit::svm::model_io::save_model;
use marginkit::svm::params::{PlattFit, Probability};
use marginkit::svm::probability::{
    multiclass_probability, sigmoid_predict, sigmoid_train_published,
};
use marginkit::svm::train::{class_order, fit, fold_assignment};
use marginkit::svm::{SvmParams, SvmType};
use marginkit::Dataset;
use serde_json::{json, Value};

/// Solver tolerance of every fit on both sides: decision values agree to about this.
const TOL: f64 = 1e-8;

/// The Python interpreter named by `MARGINKIT_PYTHON`, after checking that it imports `libsvm`;
/// panics with the reason otherwise.
fn python() -> PathBuf {
    let p = match std::env::var_os("MARGINKIT_PYTHON") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => panic!(
            "MARGINKIT_PYTHON is not set: point it at a Python with libsvm-official \
             (pip install -r bench/requirements.txt)"
        ),
    };
    let o = Command::new(&p)
        .args(["-c", "import libsvm"])
        .output()
        .unwrap_or_else(|e| panic!("MARGINKIT_PYTHON={}: cannot run: {e}", p.display()));
    assert!(
        o.status.success(),
        "MARGINKIT_PYTHON={}: `import libsvm` failed (pip install -r bench/requirements.txt): {}",
        p.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    p
}

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

fn read(rel: &str) -> Dataset {
    let p = repo(rel);
    read_libsvm_path(&p, &ReadOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e} (see data/README.md)", p.display()))
}

/// Runs bench/libsvm_probability.py on one job.
fn libsvm(job: &Value) -> Value {
    let script = repo("bench/libsvm_probability.py");
    let o = Command::new(python())
        .arg(&script)
        .arg(job.to_string())
        .output()
        .expect("python runs");
    assert!(
        o.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("one JSON object")
}

fn f64s(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("a JSON list")
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect()
}

fn rows(v: &Value) -> Vec<Vec<f64>> {
    v.as_array()
        .expect("a JSON list")
        .iter()
        .map(f64s)
        .collect()
}

fn usizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .expect("a JSON list")
        .iter()
        .map(|x| x.as_u64().expect("an index") as usize)
        .collect()
}

/// Platt's regularized targets (Platt 1999; Lin, Lin and Weng 2007).
fn targets(positive: &[bool]) -> Vec<f64> {
    let n_pos = positive.iter().filter(|&&p| p).count() as f64;
    let n_neg = positive.len() as f64 - n_pos;
    positive
        .iter()
        .map(|&p| {
            if p {
                (n_pos + 1.0) / (n_pos + 2.0)
            } else {
                1.0 / (n_neg + 2.0)
            }
        })
        .collect()
}

/// The through-origin sigmoid `P(+1 | f) = 1 / (1 + exp(a f))` of maximum likelihood, `min(a, 0)`:
/// the root of the likelihood's derivative `g(a) = sum_i f_i (t_i - 1 / (1 + exp(a f_i)))`, which
/// is nondecreasing in `a` (its derivative is `sum_i f_i^2 p_i (1 - p_i)`), found by bisection.
fn origin_slope(dec: &[f64], positive: &[bool]) -> f64 {
    let t = targets(positive);
    let g = |a: f64| -> f64 {
        dec.iter()
            .zip(&t)
            .map(|(&f, &ti)| f * (ti - 1.0 / (1.0 + (a * f).exp())))
            .sum()
    };
    if g(0.0) <= 0.0 {
        return 0.0;
    }
    let (mut lo, mut hi) = (-1.0, 0.0);
    while g(lo) > 0.0 {
        hi = lo;
        lo *= 2.0;
        assert!(
            lo > -1e12,
            "no root: the decision values separate the classes"
        );
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid == lo || mid == hi {
            break;
        }
        if g(mid) > 0.0 {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    0.5 * (lo + hi)
}

/// LIBSVM's rule for the Laplace scale (svm.cpp, `svm_svr_probability`): the mean absolute
/// residual, then the mean again over the residuals within 5 standard deviations of a Laplace
/// law with that mean (std = sqrt(2) mae). Also returns how many residuals were dropped.
fn laplace_rule(res: &[f64]) -> (f64, usize) {
    let mae = res.iter().map(|r| r.abs()).sum::<f64>() / res.len() as f64;
    let std = (2.0 * mae * mae).sqrt();
    let (mut sum, mut dropped) = (0.0, 0);
    for r in res {
        if r.abs() > 5.0 * std {
            dropped += 1;
        } else {
            sum += r.abs();
        }
    }
    (sum / (res.len() - dropped) as f64, dropped)
}

fn log_loss(probs: &[Vec<f64>], truth: &[usize]) -> f64 {
    probs
        .iter()
        .zip(truth)
        .map(|(p, &c)| -p[c].max(1e-15).ln())
        .sum::<f64>()
        / probs.len() as f64
}

/// max and mean of |p - q| over every row and class.
fn diff(p: &[Vec<f64>], q: &[Vec<f64>]) -> (f64, f64) {
    let d: Vec<f64> = p
        .iter()
        .zip(q)
        .flat_map(|(a, b)| a.iter().zip(b).map(|(x, y)| (x - y).abs()))
        .collect();
    (
        d.iter().copied().fold(0.0, f64::max),
        d.iter().sum::<f64>() / d.len() as f64,
    )
}

struct SvcCase {
    name: &'static str,
    train: &'static str,
    /// Empty: every fifth row of `train` (from the first) is the test set, the rest trains.
    test: &'static str,
    c: f64,
    gamma: f64,
}

/// The training and test files of `case`, split into `dir` when the case has no test file.
fn case_files(case: &SvcCase, dir: &Path) -> (PathBuf, PathBuf) {
    if !case.test.is_empty() {
        return (repo(case.train), repo(case.test));
    }
    let text = std::fs::read_to_string(repo(case.train))
        .unwrap_or_else(|e| panic!("{}: {e} (see data/README.md)", case.train));
    let (mut train, mut test) = (String::new(), String::new());
    for (i, line) in text.lines().enumerate() {
        let to = if i % 5 == 0 { &mut test } else { &mut train };
        to.push_str(line);
        to.push('\n');
    }
    let stem = case.train.replace('/', "_");
    let (a, b) = (
        dir.join(format!("{stem}.train")),
        dir.join(format!("{stem}.test")),
    );
    std::fs::write(&a, train).unwrap();
    std::fs::write(&b, test).unwrap();
    (a, b)
}

fn read_path(p: &Path) -> Dataset {
    read_libsvm_path(p, &ReadOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e} (see data/README.md)", p.display()))
}

const SVC_CASES: &[SvcCase] = &[
    SvcCase {
        name: "heart_scale",
        train: "data/clf/heart_scale.train.svm",
        test: "data/clf/heart_scale.test.svm",
        c: 4.0,
        gamma: 0.05,
    },
    SvcCase {
        name: "breast_cancer",
        train: "data/clf/breast_cancer.train.svm",
        test: "data/clf/breast_cancer.test.svm",
        c: 1.0,
        gamma: 0.1,
    },
    SvcCase {
        name: "pima",
        train: "data/clf/pima.train.svm",
        test: "data/clf/pima.test.svm",
        c: 1.0,
        gamma: 0.125,
    },
    SvcCase {
        name: "iris (versicolor vs rest)",
        train: "data/clf/iris.train.svm",
        test: "data/clf/iris.test.svm",
        c: 1.0,
        gamma: 0.25,
    },
    SvcCase {
        name: "wine (class_1 vs rest)",
        train: "data/clf/wine.train.svm",
        test: "data/clf/wine.test.svm",
        c: 1.0,
        gamma: 0.1,
    },
    SvcCase {
        name: "iris (3 classes)",
        train: "data/multiclass/iris.scale.svm",
        test: "",
        c: 1.0,
        gamma: 0.25,
    },
    SvcCase {
        name: "wine (3 classes)",
        train: "data/multiclass/wine.scale.svm",
        test: "",
        c: 1.0,
        gamma: 0.1,
    },
];

#[test]
#[ignore = "needs MARGINKIT_PYTHON with libsvm-official; .ci/run runs it"]
fn platt_against_libsvm_b1_training() {
    let mut table = vec![
        "| data (train / test rows) | LIBSVM's largest \\|B\\| | through the origin, LIBSVM's folds: max / mean \\|dP\\| | marginkit -b 1 vs LIBSVM -b 1: max / mean \\|dP\\| | marginkit -b 1 --platt libsvm vs LIBSVM -b 1: max / mean \\|dP\\| | test log-loss: LIBSVM / through the origin / marginkit / marginkit --platt libsvm | test rows where LIBSVM's most probable class is not its prediction |".to_string(),
        "|---|---|---|---|---|---|---|".to_string(),
    ];
    // The largest over the data sets of max |dP| against LIBSVM end to end: default, with intercept.
    let (mut worst_origin, mut worst_intercept) = (0.0f64, 0.0f64);
    let tmp = tempfile::tempdir().unwrap();
    let mut fails = Vec::new();
    for case in SVC_CASES {
        let (train_path, test_path) = case_files(case, tmp.path());
        let train = read_path(&train_path);
        let test = read_path(&test_path);
        let params = SvmParams::new()
            .c(case.c)
            .gamma(case.gamma)
            .tol(TOL)
            .probability(Probability::On)
            .check()
            .unwrap();
        let Fit { model, .. } = fit(&params, &train, &mut Control::default()).unwrap();
        let with_b = fit(
            &SvmParams::from(params.clone())
                .platt(PlattFit::WithIntercept)
                .check()
                .unwrap(),
            &train,
            &mut Control::default(),
        )
        .unwrap()
        .model;
        let labels = class_order(&train.y);
        assert_eq!(model.labels, labels, "{}", case.name);
        let nc = labels.len();
        // marginkit's probability folds: per class pair, over the pair's rows (class i's rows then
        // class j's, in file order), seeded by the fit's seed.
        let mut pair_y = Vec::new();
        for i in 0..nc {
            for j in i + 1..nc {
                let y: Vec<f64> = (train.y.iter().filter(|&&v| v == labels[i]).map(|_| 1.0))
                    .chain(train.y.iter().filter(|&&v| v == labels[j]).map(|_| -1.0))
                    .collect();
                pair_y.push(y);
            }
        }
        let folds: Vec<Vec<usize>> = pair_y
            .iter()
            .map(|y| fold_assignment(y, 5, false, params.seed()))
            .collect();
        let theirs = libsvm(&json!({
            "kind": "svc",
            "train": train_path,
            "test": test_path,
            "opts": format!("-t 2 -g {:?} -e {TOL:e}", case.gamma),
            "c": case.c,
            "folds": folds,
        }));
        let their_labels = f64s(&theirs["labels"]);
        assert_eq!(their_labels, labels, "{}: LIBSVM's class order", case.name);
        let (pa, pb) = (f64s(&theirs["prob_a"]), f64s(&theirs["prob_b"]));
        let pairs = theirs["pairs"].as_array().unwrap();
        let mut origin_a = Vec::new();
        for (p, pair) in pairs.iter().enumerate() {
            let positive: Vec<bool> = pair_y[p].iter().map(|&v| v > 0.0).collect();
            // Their folds, their decision values: the published Platt fit is LIBSVM's (A, B).
            let dec = f64s(&pair["dec"]);
            assert_eq!(usizes(&pair["folds"]).len(), dec.len());
            let (a, b) = sigmoid_train_published(&dec, &positive, None);
            let scale = pa[p].abs().max(pb[p].abs());
            eprintln!(
                "{} pair {p}: published Platt vs LIBSVM: dA = {:e}, dB = {:e} (|A| = {})",
                case.name,
                a - pa[p],
                b - pb[p],
                pa[p].abs()
            );
            if (a - pa[p]).abs() > 1e-6 * scale || (b - pb[p]).abs() > 1e-6 * scale {
                fails.push(format!(
                    "{} pair {p}: published Platt of LIBSVM's CV values ({a}, {b}), LIBSVM ({}, {})",
                    case.name, pa[p], pb[p]
                ));
            }
            origin_a.push(origin_slope(&dec, &positive));
            // marginkit's folds, LIBSVM's solver: the through-origin fit is marginkit's A.
            let given = f64s(&pair["given_dec"]);
            // ... and the published fit with intercept is the PlattFit::WithIntercept model's.
            let (ga, gb) = sigmoid_train_published(&given, &positive, None);
            let gscale = ga.abs().max(gb.abs());
            if (with_b.prob_a[p] - ga).abs() > 1e-6 * gscale
                || (with_b.prob_b[p] - gb).abs() > 1e-6 * gscale
            {
                fails.push(format!(
                    "{} pair {p}: --platt libsvm model (A, B) = ({}, {}), the published fit of LIBSVM's CV values on marginkit's folds ({ga}, {gb})",
                    case.name, with_b.prob_a[p], with_b.prob_b[p]
                ));
            }
            let want = origin_slope(&given, &positive);
            if (model.prob_a[p] - want).abs() > 1e-6 * (1.0 + want.abs()) || model.prob_b[p] != 0.0
            {
                fails.push(format!(
                    "{} pair {p}: marginkit (A, B) = ({}, {}), the through-origin fit of LIBSVM's CV values on marginkit's folds A = {want}",
                    case.name, model.prob_a[p], model.prob_b[p]
                ));
            }
        }
        // Test rows: the two models' decision values, LIBSVM's probabilities by coupling its own
        // sigmoids, the through-origin sigmoids on the same decision values, and marginkit's.
        let tdec = rows(&theirs["test_dec"]);
        let tprob = rows(&theirs["test_prob"]);
        let tpred = f64s(&theirs["test_pred"]);
        let ours_dec = model.decision_values(&test.x);
        let ours = model.predict_probability(&test.x).unwrap();
        let pred = model.predict(&test.x).unwrap();
        let zeros = vec![0.0; pa.len()];
        let mut origin = Vec::new();
        for (r, d) in tdec.iter().enumerate() {
            for (k, (&u, &v)) in ours_dec[r].iter().zip(d).enumerate() {
                if (u - v).abs() > 1e-6 * (1.0 + v.abs()) {
                    fails.push(format!(
                        "{} test row {r} pair {k}: decision value {u}, LIBSVM {v}",
                        case.name
                    ));
                }
            }
            let coupled = multiclass_probability(nc, d, &pa, &pb);
            for (k, (&u, &v)) in coupled.iter().zip(&tprob[r]).enumerate() {
                if (u - v).abs() > 1e-9 {
                    fails.push(format!(
                        "{} test row {r} class {k}: LIBSVM's sigmoids coupled here {u}, LIBSVM {v}",
                        case.name
                    ));
                }
            }
            origin.push(multiclass_probability(nc, d, &origin_a, &zeros));
        }
        let ours_p: Vec<Vec<f64>> = ours.iter().map(|(_, p)| p.clone()).collect();
        let with_b_pred = with_b.predict_probability(&test.x).unwrap();
        let with_b_p: Vec<Vec<f64>> = with_b_pred.iter().map(|(_, p)| p.clone()).collect();
        // LIBSVM reads the with-intercept model file and predicts marginkit's probabilities.
        let path = tmp
            .path()
            .join(format!("{}.model", case.train.replace('/', "_")));
        save_model(&path, &with_b).unwrap();
        let read_back = libsvm(&json!({
            "kind": "predict",
            "model": path,
            "test": test_path,
        }));
        let (ra, rb) = (f64s(&read_back["prob_a"]), f64s(&read_back["prob_b"]));
        if ra != with_b.prob_a || rb != with_b.prob_b {
            fails.push(format!(
                "{}: LIBSVM read probA {ra:?} probB {rb:?}, marginkit wrote {:?} {:?}",
                case.name, with_b.prob_a, with_b.prob_b
            ));
        }
        let (lm, _) = diff(&rows(&read_back["test_prob"]), &with_b_p);
        let label_diff = f64s(&read_back["test_pred"])
            .iter()
            .zip(&with_b_pred)
            .filter(|(a, (b, _))| *a != b)
            .count();
        if lm > 1e-9 || label_diff > 0 {
            fails.push(format!(
                "{}: LIBSVM on marginkit's --platt libsvm model: max |dP| {lm:e}, {label_diff} labels differ",
                case.name
            ));
        }
        let truth: Vec<usize> = test
            .y
            .iter()
            .map(|v| {
                labels
                    .iter()
                    .position(|l| l == v)
                    .expect("a training class")
            })
            .collect();
        let (om, oa) = diff(&origin, &tprob);
        let (em, ea) = diff(&ours_p, &tprob);
        let (im, ia) = diff(&with_b_p, &tprob);
        worst_origin = worst_origin.max(em);
        worst_intercept = worst_intercept.max(im);
        let disagree = tpred.iter().zip(&pred).filter(|(a, b)| a != b).count();
        let max_b = pb.iter().map(|b| b.abs()).fold(0.0, f64::max);
        // End to end both models differ from LIBSVM's by the folds (marginkit's seeded folds, not
        // LIBSVM's rand()); the default differs by the intercept too. Where LIBSVM's |B| is large
        // (breast_cancer, iris and wine one against the rest, wine's 3 classes) the intercept
        // dominates: measured im / em = 0.14, 0.13, 0.27, 0.16. Where it is small (heart_scale
        // 0.04, pima 0.11, iris's 3 classes 0.18) the folds weigh as much (0.019 vs 0.014, 0.048
        // vs 0.040, 0.010 vs 0.033), so no ratio is asserted there.
        if max_b > 0.3 && im > em / 2.5 {
            fails.push(format!(
                "{}: --platt libsvm max |dP| {im} against LIBSVM, the default's {em}",
                case.name
            ));
        }
        // Binary: the intercept's shift of the 0.5 crossing, and an upper bound of the effect.
        if nc == 2 {
            let worst = tdec
                .iter()
                .map(|d| {
                    (sigmoid_predict(d[0], pa[0], pb[0]) - sigmoid_predict(d[0], origin_a[0], 0.0))
                        .abs()
                })
                .fold(0.0, f64::max);
            assert!((worst - om).abs() < 1e-7, "{}: {worst} vs {om}", case.name);
        }
        table.push(format!(
            "| {} ({} / {}) | {max_b:.3} | {om:.3} / {oa:.4} | {em:.3} / {ea:.4} | {im:.3} / {ia:.4} | {:.4} / {:.4} / {:.4} / {:.4} | {disagree} of {} |",
            case.name,
            train.len(),
            test.len(),
            log_loss(&tprob, &truth),
            log_loss(&origin, &truth),
            log_loss(&ours_p, &truth),
            log_loss(&with_b_p, &truth),
            test.len(),
        ));
    }
    println!("{}", table.join("\n"));
    eprintln!("end to end, largest max |dP|: through the origin {worst_origin}, with intercept {worst_intercept}");
    assert!(fails.is_empty(), "{}", fails.join("\n"));
    // Measured 0.048 (pima, the folds' share) against the default's 0.214 (iris).
    assert!(
        worst_intercept <= 0.06 && worst_intercept <= worst_origin / 3.0,
        "--platt libsvm: largest max |dP| {worst_intercept}, the default's {worst_origin}"
    );
}

struct SvrCase {
    name: &'static str,
    train: &'static str,
    c: f64,
    gamma: f64,
    p: f64,
}

const SVR_CASES: &[SvrCase] = &[
    SvrCase {
        name: "auto",
        train: "data/reg/auto.train.svm",
        c: 1.0,
        gamma: 0.2,
        p: 0.1,
    },
    SvrCase {
        name: "boston",
        train: "data/reg/boston.train.svm",
        c: 10.0,
        gamma: 0.1,
        p: 0.1,
    },
];

#[test]
#[ignore = "needs MARGINKIT_PYTHON with libsvm-official; .ci/run runs it"]
fn svr_laplace_scale_against_libsvm() {
    let mut table = vec![
        "| data (rows) | LIBSVM sigma | marginkit sigma | relative difference | residuals dropped (LIBSVM's folds / marginkit's) |".to_string(),
        "|---|---|---|---|---|".to_string(),
    ];
    let mut fails = Vec::new();
    for case in SVR_CASES {
        let data = read(case.train);
        let params = SvmParams::new()
            .svm_type(SvmType::EpsSvr)
            .c(case.c)
            .gamma(case.gamma)
            .epsilon(case.p)
            .tol(TOL)
            .probability(Probability::On)
            .check()
            .unwrap();
        let Fit { model, .. } = fit(&params, &data, &mut Control::default()).unwrap();
        let ours = model.svr_sigma().expect("-b 1 gives a Laplace scale");
        let folds = fold_assignment(&data.y, 5, false, params.seed());
        let theirs = libsvm(&json!({
            "kind": "svr",
            "train": repo(case.train),
            "opts": format!("-s 3 -t 2 -g {:?} -c {:?} -p {:?} -e {TOL:e}", case.gamma, case.c, case.p),
            "folds": folds,
        }));
        let sigma = theirs["sigma"].as_f64().unwrap();
        let (own, own_drop) = laplace_rule(&f64s(&theirs["residuals"]));
        if (own - sigma).abs() > 1e-12 * sigma {
            fails.push(format!(
                "{}: the rule on LIBSVM's residuals gives {own}, LIBSVM {sigma}",
                case.name
            ));
        }
        let (given, given_drop) = laplace_rule(&f64s(&theirs["given_residuals"]));
        if (ours - given).abs() > 1e-6 * given {
            fails.push(format!(
                "{}: marginkit sigma {ours}, the rule on LIBSVM's residuals on marginkit's folds {given}",
                case.name
            ));
        }
        table.push(format!(
            "| {} ({}) | {sigma:.4} | {ours:.4} | {:.3} | {own_drop} / {given_drop} |",
            case.name,
            data.len(),
            (ours - sigma).abs() / sigma,
        ));
    }
    println!("{}", table.join("\n"));
    assert!(fails.is_empty(), "{}", fails.join("\n"));
}
