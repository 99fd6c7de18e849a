//! Interoperability with the reference implementations through their own Python packages
//! (`libsvm-official`, `liblinear-official`), found through the interpreter in the environment
//! variable `MARGINKIT_PYTHON` (`.ci/run` sets it).
//!
//! Both directions: models trained by the `marginkit` binary are loaded and evaluated by
//! LIBSVM / LIBLINEAR, and models trained and saved by them are loaded by `marginkit predict`.
//! Labels must be equal; decision values, regression values and probabilities agree within
//! 1e-9 relative (TP-1 "same model, two implementations": our model files are written exactly).
//!
//! The tests are `#[ignore]`d so that `cargo test --workspace` runs on a machine without those
//! packages; `.ci/run` runs them by name with `MARGINKIT_PYTHON` set
//! (`cargo test -p marginkit-cli --test interop -- --ignored`). Run that way, a missing variable,
//! interpreter or package fails the test with a message saying which.

use std::path::{Path, PathBuf};
use std::process::Command;

use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::svm::linear::LinearModel;
use marginkit::svm::model_io::load_model;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_marginkit");
const REL: f64 = 1e-9;

/// The Python interpreter named by `MARGINKIT_PYTHON`, after checking that it runs and imports
/// `module`; panics with the reason otherwise.
fn python(module: &str) -> PathBuf {
    let p = match std::env::var_os("MARGINKIT_PYTHON") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => panic!(
            "MARGINKIT_PYTHON is not set: point it at a Python with libsvm-official and \
             liblinear-official (pip install -r bench/requirements.txt)"
        ),
    };
    let o = Command::new(&p)
        .args(["-c", &format!("import {module}")])
        .output()
        .unwrap_or_else(|e| panic!("MARGINKIT_PYTHON={}: cannot run: {e}", p.display()));
    assert!(
        o.status.success(),
        "MARGINKIT_PYTHON={}: `import {module}` failed (pip install -r bench/requirements.txt): {}",
        p.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    p
}

fn cli_data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(name)
}

fn golden_data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/golden/data")
        .join(name)
}

fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

fn marginkit(args: &[&str]) {
    let o = Command::new(BIN)
        .args(args)
        .output()
        .expect("marginkit runs");
    assert!(
        o.status.success(),
        "marginkit {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Runs an inline Python snippet; its last stdout line is parsed as JSON.
fn py(python: &Path, code: &str, args: &[&str]) -> Value {
    let o = Command::new(python)
        .arg("-c")
        .arg(code)
        .args(args)
        .output()
        .expect("python runs");
    assert!(
        o.status.success(),
        "python failed: {}\n{code}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let last = out.lines().last().unwrap_or("");
    serde_json::from_str(last).unwrap_or_else(|e| panic!("python output {last:?}: {e}"))
}

/// One Python process per library (interpreter start-up and imports dominate): it runs a JSON
/// list of jobs given as the first argument, `train` (options, data, model path: trains and
/// saves) and `predict` (model, data, probability flag), in order, and prints a JSON list with
/// one result per job.
///
/// Decision values come from the C function `svm_predict_values` with a buffer of one value per
/// class pair: libsvm-official 3.37's `svm_predict` sizes that buffer by a wrong type test
/// (`NU_SVC` where `NU_SVR` is meant) and overruns it for multiclass nu-SVC, crashing Python.
/// Probabilities use `svm_predict(..., '-b 1')`.
const LIBSVM_JOBS: &str = r#"
import json, sys
from ctypes import c_double
from libsvm.svm import libsvm, gen_svm_nodearray
from libsvm.svmutil import svm_load_model, svm_predict, svm_read_problem, svm_train, svm_save_model
out = []
for job in json.loads(sys.argv[1]):
    y, x = svm_read_problem(job["data"])
    if job["kind"] == "train":
        svm_save_model(job["model"], svm_train(y, x, job["opts"] + " -q"))
        out.append(None)
        continue
    m = svm_load_model(job["model"])
    if job["prob"]:
        labels, _, vals = svm_predict(y, x, m, "-q -b 1")
    else:
        nc = m.get_nr_class()
        k = 1 if m.get_svm_type() in (2, 3, 4) else nc * (nc - 1) // 2
        buf = (c_double * k)()
        labels, vals = [], []
        for xi in x:
            node, _ = gen_svm_nodearray(xi)
            labels.append(libsvm.svm_predict_values(m, node, buf))
            vals.append(buf[:k])
    out.append({"labels": labels, "vals": vals})
print(json.dumps(out))
"#;

const LIBLINEAR_JOBS: &str = r#"
import json, sys
from liblinear.liblinearutil import load_model, predict, svm_read_problem, train, save_model
out = []
for job in json.loads(sys.argv[1]):
    y, x = svm_read_problem(job["data"])
    if job["kind"] == "train":
        save_model(job["model"], train(y, x, job["opts"] + " -q"))
        out.append(None)
    else:
        labels, _, vals = predict(y, x, load_model(job["model"]), "-q")
        out.append({"labels": labels, "vals": vals})
print(json.dumps(out))
"#;

fn train_job(opts: &[&str], data: &Path, model: &Path) -> Value {
    serde_json::json!({"kind": "train", "opts": opts.join(" "), "data": s(data), "model": s(model)})
}

fn predict_job(model: &Path, data: &Path, prob: bool) -> Value {
    serde_json::json!({"kind": "predict", "model": s(model), "data": s(data), "prob": u8::from(prob)})
}

/// Runs the jobs in one Python process; one result per job.
fn run_jobs(python: &Path, code: &str, jobs: &[Value]) -> Vec<Value> {
    let arg = Value::Array(jobs.to_vec()).to_string();
    let v = py(python, code, &[&arg]);
    let out = v.as_array().expect("a JSON list").clone();
    assert_eq!(out.len(), jobs.len());
    out
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= REL * (1.0 + b.abs())
}

fn f64s(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

/// `marginkit predict` output file: one label / value per line (`-b 1`: a header, then the label
/// first on each line).
fn read_predictions(path: &Path) -> Vec<f64> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("labels"))
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect()
}

/// Compares one LIBSVM-format model as evaluated by marginkit (CLI + library) and by LIBSVM.
fn compare_libsvm(
    theirs: &Value,
    dir: &Path,
    name: &str,
    model: &Path,
    test: &Path,
    prob: bool,
    fails: &mut Vec<String>,
) {
    let out = dir.join(format!("{name}.pred"));
    let mut args = vec!["predict", "-q"];
    if prob {
        args.extend(["-b", "1"]);
    }
    args.extend([s(test), s(model), s(&out)]);
    marginkit(&args);
    let ours = read_predictions(&out);
    let labels = f64s(&theirs["labels"]);
    let m = load_model(model).unwrap();
    let regression = m.svm_type.is_regression();
    if ours.len() != labels.len() {
        fails.push(format!(
            "{name}: {} vs {} predictions",
            ours.len(),
            labels.len()
        ));
        return;
    }
    for (i, (&a, &b)) in ours.iter().zip(&labels).enumerate() {
        let ok = if regression { close(a, b) } else { a == b };
        if !ok {
            fails.push(format!(
                "{name}: row {i}: marginkit predict {a} vs LIBSVM {b}"
            ));
            break;
        }
    }
    let data = read_libsvm_path(test, &ReadOptions::default()).unwrap();
    let vals: Vec<Vec<f64>> = theirs["vals"]
        .as_array()
        .unwrap()
        .iter()
        .map(f64s)
        .collect();
    let ours_vals: Vec<Vec<f64>> = if prob {
        m.predict_probability(&data.x)
            .unwrap()
            .into_iter()
            .map(|(_, p)| p)
            .collect()
    } else {
        m.decision_values(&data.x)
    };
    for (i, (a, b)) in ours_vals.iter().zip(&vals).enumerate() {
        if a.len() != b.len() || !a.iter().zip(b).all(|(x, y)| close(*x, *y)) {
            fails.push(format!(
                "{name}: row {i}: marginkit {} {a:?} vs LIBSVM {b:?}",
                if prob {
                    "probabilities"
                } else {
                    "decision values"
                }
            ));
            break;
        }
    }
}

#[test]
#[ignore = "needs MARGINKIT_PYTHON with libsvm-official and liblinear-official; .ci/run runs it"]
fn libsvm_reads_our_models_and_we_read_libsvm_models() {
    let python = python("libsvm.svmutil");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let heart_tr = cli_data("heart_scale.train");
    let heart_te = cli_data("heart_scale.test");
    let iris = golden_data("iris.scale.svm");
    let boston_tr = golden_data("boston.train.svm");
    let boston_te = golden_data("boston.test.svm");
    let cases: Vec<(&str, Vec<&str>, &Path, &Path, bool)> = vec![
        ("csvc_rbf", vec!["-c", "2"], &heart_tr, &heart_te, false),
        (
            "iris_ovo",
            vec!["-c", "10", "-w0", "2"],
            &iris,
            &iris,
            false,
        ),
        (
            "epssvr",
            vec!["-s", "3", "-c", "5", "-p", "0.5"],
            &boston_tr,
            &boston_te,
            false,
        ),
        (
            "nusvc",
            vec!["-s", "1", "-n", "0.4"],
            &heart_tr,
            &heart_te,
            false,
        ),
        // Multiclass nu-SVC (see LIBSVM_JOBS for why not through `svm_predict`).
        (
            "iris_nusvc",
            vec!["-s", "1", "-n", "0.2"],
            &iris,
            &iris,
            false,
        ),
        (
            "oneclass",
            vec!["-s", "2", "-n", "0.2"],
            &heart_tr,
            &heart_te,
            false,
        ),
        ("csvc_prob", vec!["-b", "1"], &heart_tr, &heart_te, true),
        ("iris_prob", vec!["-b", "1"], &iris, &iris, true),
        (
            "poly",
            vec!["-t", "1", "-d", "2", "-g", "0.1", "-r", "1"],
            &heart_tr,
            &heart_te,
            false,
        ),
        (
            "nusvr",
            vec!["-s", "4", "-n", "0.3", "-t", "3", "-g", "0.01"],
            &boston_tr,
            &boston_te,
            false,
        ),
    ];
    // marginkit trains every model; then LIBSVM predicts with ours, trains and saves its own,
    // and predicts with its own; marginkit predicts with both.
    let mut jobs = Vec::new();
    for (name, opts, train, test, prob) in &cases {
        let model = d.join(format!("{name}.model"));
        let mut args = vec!["train", "-q"];
        args.extend(opts.iter().copied());
        args.extend([s(train), s(&model)]);
        marginkit(&args);
        jobs.push(predict_job(&model, test, *prob));
        let theirs = d.join(format!("libsvm_{name}.model"));
        jobs.push(train_job(opts, train, &theirs));
        jobs.push(predict_job(&theirs, test, *prob));
    }
    let res = run_jobs(&python, LIBSVM_JOBS, &jobs);
    let mut fails = Vec::new();
    for (k, (name, _, _, test, prob)) in cases.iter().enumerate() {
        let ours = d.join(format!("{name}.model"));
        compare_libsvm(&res[3 * k], d, name, &ours, test, *prob, &mut fails);
        let theirs = d.join(format!("libsvm_{name}.model"));
        let tn = format!("libsvm_{name}");
        compare_libsvm(&res[3 * k + 2], d, &tn, &theirs, test, *prob, &mut fails);
    }
    assert!(
        fails.is_empty(),
        "{} mismatches:\n{}",
        fails.len(),
        fails.join("\n")
    );
}

fn compare_liblinear(
    theirs: &Value,
    dir: &Path,
    name: &str,
    model: &Path,
    test: &Path,
    fails: &mut Vec<String>,
) {
    let out = dir.join(format!("{name}.pred"));
    marginkit(&["predict", "-q", s(test), s(model), s(&out)]);
    let ours = read_predictions(&out);
    let labels = f64s(&theirs["labels"]);
    let m =
        LinearModel::read(std::io::BufReader::new(std::fs::File::open(model).unwrap())).unwrap();
    let regression = m.solver().is_regression();
    if ours.len() != labels.len() {
        fails.push(format!(
            "{name}: {} vs {} predictions",
            ours.len(),
            labels.len()
        ));
        return;
    }
    for (i, (&a, &b)) in ours.iter().zip(&labels).enumerate() {
        let ok = if regression { close(a, b) } else { a == b };
        if !ok {
            fails.push(format!(
                "{name}: row {i}: marginkit predict {a} vs LIBLINEAR {b}"
            ));
            break;
        }
    }
    let data = read_libsvm_path(test, &ReadOptions::default()).unwrap();
    let dec = m.decision_values(&data.x);
    let k = m.n_weight_vectors();
    let vals: Vec<Vec<f64>> = theirs["vals"]
        .as_array()
        .unwrap()
        .iter()
        .map(f64s)
        .collect();
    for (i, b) in vals.iter().enumerate() {
        let a = &dec[i * k..(i + 1) * k];
        if a.len() != b.len() || !a.iter().zip(b).all(|(x, y)| close(*x, *y)) {
            fails.push(format!(
                "{name}: row {i}: decision values {a:?} vs LIBLINEAR {b:?}"
            ));
            break;
        }
    }
}

#[test]
#[ignore = "needs MARGINKIT_PYTHON with libsvm-official and liblinear-official; .ci/run runs it"]
fn liblinear_reads_our_models_and_we_read_liblinear_models() {
    let python = python("liblinear.liblinearutil");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let heart_tr = cli_data("heart_scale.train");
    let heart_te = cli_data("heart_scale.test");
    let iris = golden_data("iris.scale.svm");
    let boston_tr = golden_data("boston.train.svm");
    let boston_te = golden_data("boston.test.svm");
    let cases: Vec<(&str, Vec<&str>, &Path, &Path)> = vec![
        ("s1", vec!["-s", "1", "-c", "1"], &heart_tr, &heart_te),
        (
            "s3_bias_w",
            vec!["-s", "3", "-c", "0.5", "-B", "1", "-w1", "2"],
            &heart_tr,
            &heart_te,
        ),
        ("iris_s1_bias", vec!["-s", "1", "-B", "1"], &iris, &iris),
        (
            "s12",
            vec!["-s", "12", "-p", "0.1", "-B", "1"],
            &boston_tr,
            &boston_te,
        ),
        ("s13", vec!["-s", "13", "-c", "0.1"], &boston_tr, &boston_te),
    ];
    let mut jobs = Vec::new();
    for (name, opts, train, test) in &cases {
        let model = d.join(format!("{name}.model"));
        let mut args = vec!["train", "-q", "--linear"];
        args.extend(opts.iter().copied());
        args.extend([s(train), s(&model)]);
        marginkit(&args);
        jobs.push(predict_job(&model, test, false));
        let theirs = d.join(format!("liblinear_{name}.model"));
        jobs.push(train_job(opts, train, &theirs));
        jobs.push(predict_job(&theirs, test, false));
    }
    let res = run_jobs(&python, LIBLINEAR_JOBS, &jobs);
    let mut fails = Vec::new();
    for (k, (name, _, _, test)) in cases.iter().enumerate() {
        let ours = d.join(format!("{name}.model"));
        compare_liblinear(&res[3 * k], d, name, &ours, test, &mut fails);
        let theirs = d.join(format!("liblinear_{name}.model"));
        let tn = format!("liblinear_{name}");
        compare_liblinear(&res[3 * k + 2], d, &tn, &theirs, test, &mut fails);
    }
    assert!(
        fails.is_empty(),
        "{} mismatches:\n{}",
        fails.len(),
        fails.join("\n")
    );
}
