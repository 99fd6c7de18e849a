//! End-to-end tests of the `marginkit` binary: LIBSVM-compatible output, JSON reports, exit codes
//! and error messages on bad input, no half-written files.

use std::path::{Path, PathBuf};
use std::process::Output;

mod common;
use common::*;

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn train_predict_round_trip_prints_libsvm_lines_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let train = data("heart_scale.train");
    let test = data("heart_scale.test");
    let o = run(
        &["train", "-c", "1", train.to_str().unwrap(), "m.model"],
        dir.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("optimization finished"), "{out}");
    assert!(out.contains("Total nSV = "), "{out}");
    let model = std::fs::read_to_string(dir.path().join("m.model")).unwrap();
    assert!(
        model.starts_with("svm_type c_svc\nkernel_type rbf\n"),
        "{model}"
    );

    let o = run(
        &["predict", test.to_str().unwrap(), "m.model", "out.txt"],
        dir.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let line = stdout(&o);
    assert!(
        line.starts_with("Accuracy = ")
            && line.contains("% (")
            && line.contains("/54) (classification)"),
        "{line}"
    );
    let preds = std::fs::read_to_string(dir.path().join("out.txt")).unwrap();
    assert_eq!(preds.lines().count(), 54);
    assert!(preds.lines().all(|l| l == "1" || l == "-1"));

    let o = run(
        &["train", "--json", "-q", train.to_str().unwrap(), "m2.model"],
        dir.path(),
    );
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("one JSON object");
    for key in [
        "train_seconds",
        "objective",
        "rho",
        "n_sv",
        "iterations",
        "status",
    ] {
        assert!(v.get(key).is_some(), "missing {key} in {v}");
    }
    assert_eq!(v["status"], "converged");
    assert!(v["objective"].as_f64().unwrap() < 0.0);

    let o = run(
        &[
            "predict",
            "--json",
            test.to_str().unwrap(),
            "m2.model",
            "o2.txt",
        ],
        dir.path(),
    );
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert!(v["accuracy"].as_f64().unwrap() > 70.0);
}

#[test]
fn cross_validation_is_seeded() {
    let dir = tempfile::tempdir().unwrap();
    let train = data("heart_scale.train");
    let a = run(
        &["train", "-v", "5", "--seed", "3", train.to_str().unwrap()],
        dir.path(),
    );
    let b = run(
        &["train", "-v", "5", "--seed", "3", train.to_str().unwrap()],
        dir.path(),
    );
    assert!(a.status.success(), "{}", stderr(&a));
    assert!(stdout(&a).starts_with("Cross Validation Accuracy = "));
    assert_eq!(stdout(&a), stdout(&b));
}

#[test]
fn libsvm_weight_flags_and_flag_order_do_not_matter() {
    let dir = tempfile::tempdir().unwrap();
    let train = data("heart_scale.train");
    let t = train.to_str().unwrap();
    let a = run(
        &[
            "train", "-q", "-w1", "2", "-w-1", "0.5", "-c", "2", t, "a.model",
        ],
        dir.path(),
    );
    let b = run(
        &[
            "train", "-c", "2", "-w-1", "0.5", "-q", "-w1", "2", t, "b.model",
        ],
        dir.path(),
    );
    assert!(a.status.success(), "{}", stderr(&a));
    assert!(b.status.success(), "{}", stderr(&b));
    let ma = std::fs::read(dir.path().join("a.model")).unwrap();
    let mb = std::fs::read(dir.path().join("b.model")).unwrap();
    assert_eq!(ma, mb);
    let unweighted = run(&["train", "-q", "-c", "2", t, "c.model"], dir.path());
    assert!(unweighted.status.success());
    assert_ne!(ma, std::fs::read(dir.path().join("c.model")).unwrap());
}

#[test]
fn bad_data_files_name_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str, &str)] = &[
        ("malformed.txt", "1 1:0.5 2:0.1\n-1 1:abc\n", ":2:"),
        ("index0.txt", "1 1:0.5\n-1 0:1\n", ":2:"),
        ("order.txt", "1 2:0.5 1:0.3\n", ":1:"),
        ("nan.txt", "1 1:0.5\n-1 1:nan\n", ":2:"),
        ("empty.txt", "", "empty.txt"),
    ];
    for (name, text, expect) in cases {
        let p = write(dir.path(), name, text);
        let o = run(&["train", "-q", p.to_str().unwrap(), "x.model"], dir.path());
        assert_eq!(o.status.code(), Some(1), "{name}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains(name) && e.contains(expect), "{name}: {e}");
        assert!(!e.contains("panicked"), "{e}");
        assert!(!dir.path().join("x.model").exists(), "{name} left a model");
    }
}

#[test]
fn single_class_and_bad_parameters_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "one.txt", "1 1:0.5\n1 1:0.2\n");
    let o = run(&["train", "-q", p.to_str().unwrap()], dir.path());
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("single class"), "{}", stderr(&o));
    let train = data("heart_scale.train");
    let t = train.to_str().unwrap();
    for args in [
        vec!["train", "-c", "0", t],
        vec!["train", "-c", "nan", t],
        vec!["train", "-s", "1", "-n", "1.5", t],
        vec!["train", "-g", "-1", t],
        vec!["train", "-m", "0", t],
        vec!["train", "-s", "9", t],
    ] {
        let o = run(&args, dir.path());
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with("marginkit: error:"),
            "{}",
            stderr(&o)
        );
    }
}

#[test]
fn corrupt_model_is_an_error_without_output_and_wider_data_predicts() {
    let dir = tempfile::tempdir().unwrap();
    let test = data("heart_scale.test");
    let m = write(
        dir.path(),
        "bad.model",
        "svm_type c_svc\nkernel_type rbf\ngamma 0.5\nnr_class 2\ntotal_sv 2\nrho 0.1\nlabel 1 -1\nnr_sv 1 1\nSV\n1 1:0.5\n",
    );
    let o = run(
        &[
            "predict",
            test.to_str().unwrap(),
            m.to_str().unwrap(),
            "out.txt",
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("bad.model:"), "{}", stderr(&o));
    assert!(!dir.path().join("out.txt").exists());

    let train = write(
        dir.path(),
        "small.txt",
        "1 1:1 2:0.5\n-1 1:-1 2:0.2\n1 1:0.8\n-1 1:-0.7 2:0.1\n",
    );
    let o = run(
        &["train", "-q", train.to_str().unwrap(), "s.model"],
        dir.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let wide = write(dir.path(), "wide.txt", "1 1:1 2:0.5 7:3\n");
    let o = run(
        &["predict", wide.to_str().unwrap(), "s.model", "out.txt"],
        dir.path(),
    );
    // Wider test data is accepted as LIBSVM does, with one warning.
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the data has 7 features, the model 2"),
        "{}",
        stderr(&o)
    );
    assert!(dir.path().join("out.txt").exists());
}

#[test]
fn demo_runs_on_built_in_data() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(&["demo"], dir.path());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("Test accuracy = "), "{}", stdout(&o));
}

#[test]
fn grid_reports_best_point() {
    let dir = tempfile::tempdir().unwrap();
    let train = data("heart_scale.train");
    let o = run(
        &[
            "grid",
            "--log2c",
            "-1,3,2",
            "--log2g",
            "-5,-3,2",
            "-v",
            "3",
            "--json",
            train.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["points"].as_array().unwrap().len(), 6);
    let best = v["best"]["score"].as_f64().unwrap();
    assert!(v["points"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["score"].as_f64().unwrap() <= best));
}

/// The model lines of a LIBSVM model file: the header (without `rho`), `rho`'s values, and the
/// support vectors as (coefficients, features).
#[allow(clippy::type_complexity)] // the three parts of a model file
fn model_parts(text: &str) -> (Vec<String>, Vec<f64>, Vec<(Vec<f64>, String)>) {
    let mut lines = text.lines();
    let (mut header, mut rho) = (Vec::new(), Vec::new());
    for l in lines.by_ref() {
        if l == "SV" {
            break;
        }
        match l.strip_prefix("rho ") {
            Some(v) => rho = v.split(' ').map(|t| t.parse().unwrap()).collect(),
            None => header.push(l.to_owned()),
        }
    }
    let svs = lines
        .map(|l| {
            let (coef, feats): (Vec<&str>, Vec<&str>) =
                l.split_whitespace().partition(|t| !t.contains(':'));
            (
                coef.iter().map(|t| t.parse().unwrap()).collect(),
                feats.join(" "),
            )
        })
        .collect();
    (header, rho, svs)
}

#[test]
fn nu_svc_with_the_block_engine_is_the_pair_engines_model() {
    let dir = tempfile::tempdir().unwrap();
    let train = data("heart_scale.train");
    let fit = |solver: &str, model: &str| {
        let o = run(
            &[
                "train",
                "-s",
                "1",
                "-n",
                "0.4",
                "-e",
                "1e-8",
                "--solver",
                solver,
                "--json",
                "-q",
                train.to_str().unwrap(),
                model,
            ],
            dir.path(),
        );
        let v = json(&o);
        assert_eq!(v["status"], "converged", "{solver}: {v}");
        let text = std::fs::read_to_string(dir.path().join(model)).unwrap();
        (v, text)
    };
    let (pair, pair_model) = fit("smo", "pair.model");
    let (block, block_model) = fit("block", "block.model");
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1e-3);
    for key in ["objective", "rho"] {
        let (a, b) = (pair[key].as_f64().unwrap(), block[key].as_f64().unwrap());
        assert!(close(a, b), "{key}: smo {a} vs block {b}");
    }
    // The same model to the tolerance: header, support vectors, coefficients (y a / r) and rho.
    let (h1, rho1, sv1) = model_parts(&pair_model);
    let (h2, rho2, sv2) = model_parts(&block_model);
    assert!(pair_model.starts_with("svm_type nu_svc\n"), "{pair_model}");
    assert_eq!(h1, h2);
    assert_eq!(rho1.len(), 1);
    assert!(close(rho1[0], rho2[0]), "rho {rho1:?} vs {rho2:?}");
    assert_eq!(sv1.len(), sv2.len());
    for ((c1, x1), (c2, x2)) in sv1.iter().zip(&sv2) {
        assert_eq!(x1, x2);
        assert!(
            c1.iter().zip(c2).all(|(&a, &b)| close(a, b)),
            "{x1}: {c1:?} vs {c2:?}"
        );
    }
}
