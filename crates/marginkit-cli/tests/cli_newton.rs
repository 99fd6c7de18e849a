//! `marginkit train --linear -s 2 / -s 11` (the primal truncated Newton solvers): the JSON report
//! carries the status, primal objective, gap and violation; the optimum equals `-s 1`'s; model
//! files name LIBLINEAR's solver types and are bit-identical at `--threads 1` and `2`;
//! an iteration limit is reported (the model file stays a plain LIBLINEAR file); `predict` reads the models.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_marginkit");

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(name)
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("binary runs")
}

fn json(o: &Output) -> Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("one JSON object")
}

fn train(args: &[&str], model: &Path) -> Value {
    let train = data("heart_scale.train");
    let mut all = vec!["train", "--linear", "--json"];
    all.extend_from_slice(args);
    all.push(train.to_str().unwrap());
    all.push(model.to_str().unwrap());
    json(&run(&all))
}

#[test]
fn primal_newton_svc_matches_dual_and_is_thread_independent() {
    let dir = tempfile::tempdir().unwrap();
    let (m1, m2, md) = (
        dir.path().join("t1"),
        dir.path().join("t2"),
        dir.path().join("dual"),
    );
    let a = train(
        &[
            "-s",
            "2",
            "-c",
            "2",
            "-B",
            "1",
            "-e",
            "1e-8",
            "--threads",
            "1",
        ],
        &m1,
    );
    let b = train(
        &[
            "-s",
            "2",
            "-c",
            "2",
            "-B",
            "1",
            "-e",
            "1e-8",
            "--threads",
            "2",
        ],
        &m2,
    );
    let d = train(&["-s", "1", "-c", "2", "-B", "1", "-e", "1e-8"], &md);
    for key in [
        "status",
        "primal_objective",
        "duality_gap",
        "max_violation",
        "objective",
    ] {
        assert!(a.get(key).is_some(), "{key} missing: {a}");
    }
    assert_eq!(a["solver"], "L2R_L2LOSS_SVC");
    assert_eq!(a["status"], "converged");
    let (pa, pd) = (
        a["primal_objective"].as_f64().unwrap(),
        d["primal_objective"].as_f64().unwrap(),
    );
    assert!((pa - pd).abs() <= 1e-6 * pd, "{pa} vs {pd}");
    assert!(a["duality_gap"].as_f64().unwrap().abs() <= 1e-6 * pa);
    let (f1, f2) = (std::fs::read(&m1).unwrap(), std::fs::read(&m2).unwrap());
    assert_eq!(f1, f2, "model files differ between 1 and 2 threads");
    assert_eq!(a["primal_objective"], b["primal_objective"]);
    assert!(f1.starts_with(b"solver_type L2R_L2LOSS_SVC\n"));
    let test = data("heart_scale.test");
    let out = dir.path().join("pred");
    let p = run(&[
        "predict",
        test.to_str().unwrap(),
        m1.to_str().unwrap(),
        out.to_str().unwrap(),
    ]);
    assert!(p.status.success(), "{}", String::from_utf8_lossy(&p.stderr));
    let preds = std::fs::read_to_string(&out).unwrap();
    assert!(preds.lines().count() > 10);
}

#[test]
fn primal_newton_svr_and_iteration_limit() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("svr");
    let r = train(&["-s", "11", "-c", "1", "-p", "0.1"], &m);
    assert_eq!(r["solver"], "L2R_L2LOSS_SVR");
    assert_eq!(r["status"], "converged");
    assert!(std::fs::read(&m)
        .unwrap()
        .starts_with(b"solver_type L2R_L2LOSS_SVR\n"));
    let lim = dir.path().join("lim");
    let l = train(
        &["-s", "2", "-c", "100", "-e", "1e-12", "--max-iter", "1"],
        &lim,
    );
    assert_eq!(l["status"], "max_iterations");
    assert_eq!(l["converged"], false);
    let text = std::fs::read_to_string(&lim).unwrap();
    assert!(!text.contains("status"), "{text}");
}
